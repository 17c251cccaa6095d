/*
 * main.c — the `tuner` command: dispatch, and the commands that run or drive a study
 * (run, resume, create, validate, ask, tell). The read-only commands are in query.c.
 *
 * `--db=PATH` (or $TUNER_DB; default tuner.db) may appear anywhere on the line. Exit
 * codes are in commands.h and docs/cli.md. `run` and `resume` serve the dashboard while
 * the study runs (tuner/dashboard.h), and `serve` serves it alone. A spec file is JSON
 * or YAML (gcloud's training config file, tuner/spec_yaml.h); `--job-id` names the
 * study either way.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/flags.h"
#include "common/rng.h"
#include "common/status.h"
#include "common/text.h"
#include "executor/executor.h"
#include "tuner/cli.h"
#include "tuner/commands.h"
#include "tuner/dashboard.h"
#include "tuner/jobdir.h"
#include "tuner/package.h"
#include "tuner/spec.h"
#include "tuner/store.h"
#include "tuner/study.h"

/* Each problem as FILE[:LINE:COLUMN]: [PATH: ]MESSAGE (a YAML file's have the line and
 * column), then how many. */
static void print_spec_errors(const char *path, const spec_errors *e) {
    for (size_t i = 0; i < e->n; i++) {
        const spec_error *it = &e->items[i];
        /* the message quotes the spec's strings: nothing in them may drive the terminal */
        char *line = it->line > 0 ? tn_xasprintf("%s:%d:%d: ", path, it->line, it->column)
                                  : tn_xasprintf("%s: ", path);
        char *text = tn_xasprintf("%s%s%s%s\n", line, it->path, it->path[0] ? ": " : "",
                                  it->message);
        tn_fputs_term(text, stderr);
        free(text);
        free(line);
    }
    fprintf(stderr, "tuner: error: %s has %zu problem%s; nothing was run\n", path, e->n,
            e->n == 1 ? "" : "s");
}

/* The spec's notes (the AI Platform fields it ignores, how the study was named), one
 * "FILE: note: ..." line each. */
static void print_spec_notes(const char *path, const tn_spec *spec) {
    for (const char *p = spec->notes; p && *p;) {
        const char *end = strchr(p, '\n');
        int n = end ? (int)(end - p) : (int)strlen(p);
        fprintf(stderr, "%s: note: %.*s\n", path, n, p);
        p += n + (end != NULL);
    }
}

/* Reads --job-id's spec file: spec_read_named with the errors printed. Returns -1 on
 * success, else the exit code. */
static int read_spec(const char *cmd, const char *path, const char *job_id, int for_ask_tell,
                     tn_spec *spec, char **text) {
    if (job_id && !spec_job_id_valid(job_id))
        return cli_usage(cmd, "--job-id must start with a letter and hold only letters, "
                                "digits and underscores (at most 128 characters)");
    spec_errors errs = {0};
    if (spec_read_named(path, job_id, for_ask_tell, spec, &errs, text) != 0) {
        print_spec_errors(path, &errs);
        spec_errors_clear(&errs);
        return TUNER_EXIT_USAGE;
    }
    return -1;
}

#define JOB_ID_FLAG(var)                                                                    \
    {"job_id", TN_FLAG_STRING, &(var), "ID",                                                \
     "the study's name, over the spec's jobId (a YAML spec without one: its file's name)"}

/* The spec text to store: the file's JSON with trainingInput.jobDir made absolute
 * (relative to the current folder), so that the trials' folders are found whatever
 * folder later commands run in; spec->job_dir is updated to match; a pythonModule's
 * packageUris are made absolute too, for `tuner resume` to install them from anywhere.
 * Yours to free. */
static char *stored_spec_text(const char *text, tn_spec *spec) {
    json_t *doc = json_loads(text, 0, NULL);
    if (spec->executor.type == SPEC_EXECUTOR_SLURM) { /* --executor=slurm: kept for resume */
        json_t *ex = json_object_get(doc, "executor");
        if (!json_is_object(ex)) {
            ex = json_object();
            json_object_set_new(doc, "executor", ex);
        }
        json_object_set_new(ex, "type", json_string("slurm"));
    }
    json_t *ti = json_object_get(doc, "trainingInput");
    if (!json_is_object(ti)) { /* spec_load accepted it, so this cannot happen */
        json_decref(doc);
        return tn_xstrdup(text);
    }
    if (spec->job_dir[0] != '/') {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof cwd)) {
            const char *rel = spec->job_dir;
            while (rel[0] == '.' && rel[1] == '/') rel += 2;
            size_t len = strlen(cwd) + strlen(rel) + 2;
            char *abs = tn_xmalloc(len);
            snprintf(abs, len, "%s/%s", cwd, rel);
            free(spec->job_dir);
            spec->job_dir = abs;
        }
    }
    json_object_set_new(ti, "jobDir", json_string(spec->job_dir));
    json_t *uris = json_object_get(ti, "packageUris"), *u;
    size_t i;
    char abs[PATH_MAX];
    if (spec->python_module && json_is_array(uris))
        json_array_foreach(uris, i, u)
            if (json_is_string(u) && realpath(json_string_value(u), abs))
                json_array_set_new(uris, i, json_string(abs));
    char *out = json_dumps(doc, JSON_PRESERVE_ORDER | JSON_INDENT(2));
    json_decref(doc);
    if (!out) tn_out_of_memory("the spec's text to store");
    char *copy = tn_xstrdup(out);
    free(out);
    return copy;
}

/* A seed nobody gave: the kernel's, or, should that fail, one of clock and pid (any
 * seed will do; it is stored with the study). */
static uint64_t random_seed(void) {
    uint64_t s = 0;
    if (tn_random_bytes(&s, sizeof s, NULL, 0) != 0)
        s = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    return s & INT64_MAX;
}

/* Takes the study's lock exclusively (JOB_DIR/.tuner.lock, tuner/jobdir.h) for `tuner
 * CMD`. Returns the fd, or -1 with the error printed. */
static int lock_study(const tn_spec *spec, const char *cmd) {
    char err[1024];
    int fd, rc = jd_lock(spec->job_dir, 1, cmd, &fd, err, sizeof err);
    if (rc == JD_BUSY)
        fprintf(stderr, "tuner: error: study %s cannot run: its job folder is in use by another "
                        "tuner process (%s)\n"
                        "hint: wait for that process to end or stop it (Ctrl-C there, or `tuner "
                        "cancel`); a study of its own needs a job folder of its own "
                        "(trainingInput.jobDir)\n",
                spec->job_id, err);
    else if (rc == JD_SHARED)
        fprintf(stderr, "tuner: error: study %s is in use by another tuner process (%s)\n"
                        "hint: an ask or tell takes a moment; try again\n", spec->job_id, err);
    else if (rc)
        fprintf(stderr, "tuner: error: %s\nhint: check trainingInput.jobDir\n", err);
    return rc ? -1 : fd;
}

/* The study `name` (id; 0 before it is stored) of the store as a job folder's owner;
 * its strings live in *id_text and path (yours). Returns 0, or -1 with the error
 * printed. */
static int study_owner(st_store *st, const cli_env *env, const char *name, int64_t id,
                       jd_owner *me, char **id_text, char *path, size_t len) {
    char err[1024];
    if (st_store_id(st, id_text, err, sizeof err) != 0) {
        fprintf(stderr, "tuner: error: %s\n", err);
        return -1;
    }
    char abs[PATH_MAX];
    snprintf(path, len, "%s", realpath(env->db, abs) ? abs : env->db);
    *me = (jd_owner){.store_id = *id_text, .store = path, .study = name, .study_id = id};
    return 0;
}

/* Marks, under the study's lock, the job folder of the study just stored (id) its own,
 * the folder having been checked (own_job_dir) before the study was stored. Returns -1
 * to go on, else the exit code (the error printed, with how to finish the claim). */
static int claim_job_dir(st_store *st, const cli_env *env, const tn_spec *spec, int64_t id) {
    char err[2048], path[PATH_MAX], *store_id = NULL;
    jd_owner me;
    if (study_owner(st, env, spec->job_id, id, &me, &store_id, path, sizeof path) != 0)
        return TUNER_EXIT_ERROR;
    int rc = jd_claim(spec->job_dir, &me, err, sizeof err);
    if (rc)
        fprintf(stderr, "tuner: error: %s\nhint: study %s is stored; `tuner resume %s` marks "
                        "%s its own once it can be written\n",
                err, spec->job_id, spec->job_id, spec->job_dir);
    free(store_id);
    return rc ? TUNER_EXIT_ERROR : -1;
}

/* The hint for jd_check's refusal (rc) of the job folder of the study `id` (0: a new
 * one, of run or create; else resume's): whose the folder is (TN_EINVAL), a damaged
 * mark (TN_EFORMAT), or a mark that cannot be read (TN_EIO). */
static void job_dir_hint(const tn_spec *spec, int64_t id, int rc) {
    const char *name = spec->job_id, *dir = spec->job_dir;
    if (rc == TN_EIO)
        fprintf(stderr, "hint: the tuner reads %s/%s to tell whose folder %s is; check that "
                        "file's permissions\n", dir, JD_MARK, dir);
    else if (id == 0) /* another study's folder, or nobody can tell whose */
        fprintf(stderr,
                "hint: give study %s a folder of its own: trainingInput.jobDir (without "
                "one, runs/JOBID, which --job-id changes too), or delete %s if the trials "
                "there are no longer wanted\n",
                name, dir);
    else if (rc == TN_EFORMAT)
        fprintf(stderr,
                "hint: if %s is study %s's, delete the damaged mark %s/%s and resume "
                "again (a folder without a mark is taken when it holds no trial folder "
                "beyond the study's own); if it is another study's, restore that study's "
                "mark, or move the folder away\n",
                dir, name, dir, JD_MARK);
    else
        fprintf(stderr,
                "hint: the trials there are not study %s's; move %s away, or delete it if "
                "they are no longer wanted, and resume again\n",
                name, dir);
}

/* Checks, under the study's lock, that its job folder is free for it (jd_check; trials:
 * the study's, 0 for a new one) and, with mark, marks it the study's (id: its id in
 * the store). Returns -1 to go on, else the exit code (the error and a hint printed). */
static int own_job_dir(st_store *st, const cli_env *env, const tn_spec *spec, int64_t id,
                       int64_t trials, int mark) {
    char err[2048], path[PATH_MAX], *store_id = NULL;
    jd_owner me;
    if (study_owner(st, env, spec->job_id, id, &me, &store_id, path, sizeof path) != 0)
        return TUNER_EXIT_ERROR;
    int exit_code = -1;
    int rc = jd_check(spec->job_dir, &me, trials, err, sizeof err);
    if (rc) {
        fprintf(stderr, "tuner: error: %s\n", err);
        job_dir_hint(spec, id, rc);
        exit_code = rc == TN_EIO ? TUNER_EXIT_ERROR : TUNER_EXIT_USAGE;
    } else if (mark && (rc = jd_claim(spec->job_dir, &me, err, sizeof err)) != 0) {
        fprintf(stderr, "tuner: error: %s\n", err);
        exit_code = TUNER_EXIT_ERROR;
    }
    free(store_id);
    return exit_code;
}

typedef struct run_flags {
    int64_t seed;
    int cores, gpus, oversubscribe, quiet;
    const char *executor;    /* --executor: "local", "slurm", or NULL for the spec's */
    double poll, grace;
    const char *dashboard;   /* --dashboard: ADDR:PORT, "off", or NULL for the default */
    int dashboard_public;    /* --dashboard-public */
} run_flags;

/* The bounds of run's and resume's numeric flags: -1 to go on, else the usage error's
 * exit code. */
static int check_run_flags(const run_flags *rf, const char *cmd) {
    if (rf->poll <= 0 || rf->grace <= 0 || rf->cores < 0 || rf->gpus < -1)
        return cli_usage(cmd, "--poll and --grace must be > 0, --cores and --gpus >= 0");
    if (rf->poll > 3600 || rf->grace > 86400)
        return cli_usage(cmd, "--poll must be at most 3600 seconds and --grace at most 86400");
    return -1;
}

/* Checks --dashboard and --dashboard-public. Returns -1 to go on, else the exit code
 * (the error printed). */
static int check_dashboard_flags(const run_flags *rf) {
    char err[1024];
    if (!rf->dashboard || !strcmp(rf->dashboard, "off")) return -1;
    if (dash_check_address(rf->dashboard, rf->dashboard_public, 0, err, sizeof err) != 0) {
        fprintf(stderr, "tuner: error: --dashboard: %s\n", err);
        return TUNER_EXIT_USAGE;
    }
    return -1;
}

/* Binds the dashboard of a run (before anything is stored, so a port in use is known
 * at once). Returns -1 with *out the server or NULL (--dashboard=off, or the default
 * ports all taken: a warning), else the exit code (the error printed). */
static int open_dashboard(const run_flags *rf, const cli_env *env, dash_server **out) {
    *out = NULL;
    if (rf->dashboard && !strcmp(rf->dashboard, "off")) return -1;
    dash_config c = {.listen = rf->dashboard, .public_access = rf->dashboard_public,
                     .db = env->db, .log = rf->quiet ? NULL : stderr};
    char err[1024];
    int rc = dash_new(&c, out, err, sizeof err);
    if (rc == DASH_NO_PORT) {
        if (!rf->quiet) fprintf(stderr, "tuner: warning: %s\n", err);
        return -1;
    }
    if (rc) {
        fprintf(stderr, "tuner: error: %s\n", err);
        return rc == TN_EINVAL ? TUNER_EXIT_USAGE : TUNER_EXIT_ERROR;
    }
    return -1;
}

/* Writes the dashboard's token to JOB_DIR/.dashboard-token, says where the page is and
 * starts serving it on its own thread. A failure here costs the dashboard, not the run. */
static void start_dashboard(dash_server *dash, const tn_spec *spec, int quiet) {
    char err[1024], path[PATH_MAX];
    snprintf(path, sizeof path, "%s/.dashboard-token", spec->job_dir);
    if (dash_write_token(dash, path, err, sizeof err) != 0)
        fprintf(stderr, "tuner: warning: %s\n", err);
    if (dash_start(dash, err, sizeof err) != 0) {
        fprintf(stderr, "tuner: warning: %s; running without the dashboard\n", err);
        return;
    }
    if (!quiet) fprintf(stderr, "dashboard: %s\n", dash_url(dash));
}

/* The GPUs to schedule on: --gpus, else those NVML finds (the local executor only). */
static int machine_gpus(const run_flags *rf, const tn_spec *spec) {
    if (rf->gpus >= 0 || spec->executor.type != SPEC_EXECUTOR_LOCAL) return rf->gpus > 0 ? rf->gpus : 0;
    char why[256];
    return ex_host_gpus(why, sizeof why);
}

/* Installs a pythonModule's packageUris for the study's trials (tuner/package.h).
 * Returns 0, or the exit status with the error printed: 128 + the signal when a stop
 * signal ended the install, else TUNER_EXIT_ERROR. */
static int prepare_packages(tn_spec *spec, int quiet) {
    char err[8192];
    int rc = pkg_prepare(spec, quiet ? NULL : stderr, err, sizeof err);
    if (rc == 0) return 0;
    fputs("tuner: error: ", stderr);
    tn_fputs_term(err, stderr);
    fputc('\n', stderr);
    return rc == PKG_STOPPED ? 128 + pkg_stop_signal() : TUNER_EXIT_ERROR;
}

/* Whether SIGHUP should stop the command: not when the user ran it under nohup, which
 * leaves SIGHUP ignored for exactly that. */
static int hangup_stops(void) {
    struct sigaction old;
    return !(sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler == SIG_IGN);
}

/* Runs a study under its run lock (`lock`, from lock_study; closed here). */
static int run_study(st_store *st, const tn_spec *spec, const st_study *study,
                     const run_flags *rf, const cli_env *env, dash_server *dash, int lock) {
    study_opts o = {.cores = rf->cores, .gpus = machine_gpus(rf, spec),
                    .oversubscribe = rf->oversubscribe,
                    .poll_seconds = rf->poll, .grace_seconds = rf->grace, .progress = !rf->quiet,
                    .self_dir = env->self_dir, .log = rf->quiet ? NULL : stderr,
                    .stop_on_hangup = hangup_stops()};
    char err[5120];
    if (dash) start_dashboard(dash, spec, rf->quiet);
    int outcome;
    int rc = study_run(st, spec, study, &o, &outcome, err, sizeof err);
    dash_stop(dash); /* the event streams get the study's last state first */
    close(lock);
    if (rc < 0) {
        fprintf(stderr, "tuner: error: %s\n", err);
        return rc == TN_EINVAL ? TUNER_EXIT_USAGE : TUNER_EXIT_ERROR;
    }
    if (outcome == STUDY_FAILED) {
        fprintf(stderr, "tuner: error: study %s failed: %s\nhint: see `tuner trials %s` and "
                        "`tuner logs %s TRIAL`\n",
                study->name, err, study->name, study->name);
        return TUNER_EXIT_FAILED;
    }
    if (outcome == STUDY_INTERRUPTED) return TUNER_EXIT_INTERRUPTED;
    /* Done: name the best trial. */
    st_trial *trials = NULL;
    size_t n = 0;
    if (st_trial_list(st, study->id, &trials, &n, err, sizeof err) == 0) {
        long b = study_best_index(trials, n, spec->goal);
        const st_trial *best = b >= 0 ? &trials[b] : NULL;
        unsigned char *front = spec->nmetrics > 1 ? tn_xcalloc(n + 1, 1) : NULL;
        size_t nfront = front ? study_pareto(spec, trials, n, front) : 0;
        free(front);
        if (spec->nmetrics > 1 && nfront)
            printf("Pareto front: %zu trial%s of %zu metrics (tuner best %s)\n", nfront,
                   nfront == 1 ? "" : "s", spec->nmetrics, study->name);
        else if (spec->nmetrics > 1)
            printf("no trial succeeded with a value of every metric\n");
        else if (best)
            printf("best: trial %lld, %s = %.6g, %s\n", (long long)best->number, spec->metric_tag,
                   best->objective, best->params);
        else
            printf("no trial succeeded\n");
        st_trials_free(trials, n);
    }
    return TUNER_EXIT_OK;
}

static const char run_about[] =
    "Validates the spec (JSON, or gcloud's YAML training config file), stores it as a new\n"
    "study named by its jobId (or --job-id), and runs it: every trial a distributed job\n"
    "(chief, workers, parameter servers, evaluators) of local processes, or a Slurm job\n"
    "with --executor=slurm (docs/slurm.md), each replica given TF_CONFIG and --NAME=VALUE\n"
    "flags, metrics read by the cloudml-hypertune protocol, failed replicas restarted. A\n"
    "pythonModule's local packageUris are installed with pip first (JOB_DIR/venv).\n"
    "The job folder (jobDir, default runs/JOBID) becomes the study's: one that another\n"
    "study owns (its mark, or its trial folders) is refused (docs/tuner.md).\n"
    "Ctrl-C stops the running trials; `tuner resume` carries on.";

#define SEED_FLAG(rf) {"seed", TN_FLAG_INT64, &(rf).seed, "N", "sampler seed (default: random, stored)"}

/* run's and resume's (resume has no --seed: a study's is fixed when it is created) */
#define RUN_FLAGS(rf)                                                                       \
    {"cores", TN_FLAG_INT, &(rf).cores, "N", "cores to schedule on (0: all online)"},      \
    {"gpus", TN_FLAG_INT, &(rf).gpus, "N",                                                  \
     "GPUs to schedule on (default: those NVML finds, within $CUDA_VISIBLE_DEVICES)"},    \
    {"executor", TN_FLAG_STRING, &(rf).executor, "local|slurm",                            \
     "where trials run (default: the spec's \"executor\", else local)"},                   \
    {"oversubscribe", TN_FLAG_BOOL, &(rf).oversubscribe, NULL,                              \
     "start trials even when their replicas' resources do not fit"},                       \
    {"poll", TN_FLAG_DOUBLE, &(rf).poll, "SECONDS", "how often metric files are read"},    \
    {"grace", TN_FLAG_DOUBLE, &(rf).grace, "SECONDS", "SIGTERM to SIGKILL when stopping"},  \
    {"quiet", TN_FLAG_BOOL, &(rf).quiet, NULL, "no progress output"},                     \
    {"dashboard", TN_FLAG_STRING, &(rf).dashboard, "ADDR:PORT",                              \
     "serve the dashboard there (default 127.0.0.1:8470, or the next free port; off: none)"}, \
    {"dashboard_public", TN_FLAG_BOOL, &(rf).dashboard_public, NULL,                        \
     "allow a --dashboard address other than loopback (every API request needs the token)"}

/* Applies --executor to a spec. Returns -1 to go on, else the exit code (error printed). */
static int apply_executor_flag(const run_flags *rf, tn_spec *spec, const char *cmd) {
    if (!rf->executor) return -1;
    int type;
    if (!strcmp(rf->executor, "local")) type = SPEC_EXECUTOR_LOCAL;
    else if (!strcmp(rf->executor, "slurm")) type = SPEC_EXECUTOR_SLURM;
    else return cli_usage(cmd, "--executor must be local or slurm");
    if (type == SPEC_EXECUTOR_LOCAL && spec->executor.type == SPEC_EXECUTOR_SLURM &&
        (spec->executor.partition || spec->executor.account || spec->executor.qos ||
         spec->executor.time_limit || spec->executor.nextra))
        return cli_usage(cmd, "--executor=local, but the spec's executor has Slurm fields; "
                                "remove them or run with --executor=slurm");
    spec->executor.type = type;
    return -1;
}

int cmd_run(int argc, char **argv, const cli_env *env) {
    run_flags rf = {.seed = -1, .gpus = -1, .poll = 0.5, .grace = 10};
    const char *job_id = NULL;
    const tn_flag flags[] = {JOB_ID_FLAG(job_id), SEED_FLAG(rf), RUN_FLAGS(rf)};
    int pos[CLI_MAX_POSITIONAL];
    static const cli_command def = {
        "run", "run SPEC.json|CONFIG.yaml [flags]", run_about, {"SPEC"}, 1, 0};
    int rc = cli_parse(&def, flags, CLI_NFLAGS(flags), argc, argv, pos, NULL);
    if (rc != CLI_CONTINUE) return rc;
    if (rf.seed < 0 && tn_flags_given(flags, CLI_NFLAGS(flags), "seed"))
        return cli_usage("run", "--seed must be 0 or more, got %lld", (long long)rf.seed);
    if ((rc = check_run_flags(&rf, "run")) >= 0) return rc;
    if ((rc = check_dashboard_flags(&rf)) >= 0) return rc;
    const char *path = argv[pos[0]];
    tn_spec spec;
    char *raw = NULL; /* the text validated is the text stored */
    if ((rc = read_spec("run", path, job_id, 0, &spec, &raw)) >= 0) return rc;
    if (!rf.quiet) print_spec_notes(path, &spec);
    if ((rc = apply_executor_flag(&rf, &spec, "run")) >= 0) {
        spec_clear(&spec);
        free(raw);
        return rc;
    }
    char err[1024];
    study_opts pre = {.cores = rf.cores, .gpus = machine_gpus(&rf, &spec),
                      .oversubscribe = rf.oversubscribe, .self_dir = env->self_dir};
    if (study_preflight(&spec, &pre, err, sizeof err) != 0) {
        fprintf(stderr, "tuner: error: %s\n", err);
        spec_clear(&spec);
        free(raw);
        return TUNER_EXIT_USAGE;
    }
    st_store *st = NULL;
    st_study study = {0};
    dash_server *dash = NULL;
    char *text = stored_spec_text(raw, &spec);
    free(raw);
    int exit_code = TUNER_EXIT_ERROR;
    if ((rc = open_dashboard(&rf, env, &dash)) >= 0) {
        exit_code = rc;
        goto done;
    }
    if (st_open(env->db, &st, err, sizeof err) != 0) {
        fprintf(stderr, "tuner: error: %s\n", err);
        goto done;
    }
    int found;
    rc = st_study_get(st, spec.job_id, &study, &found, err, sizeof err);
    if (rc == 0 && found) {
        fprintf(stderr,
                "tuner: error: a study named %s already exists in %s (%s)\nhint: `tuner resume "
                "%s` carries it on; for a new study change jobId\n",
                spec.job_id, env->db, st_study_state_name(study.state), spec.job_id);
        exit_code = TUNER_EXIT_USAGE;
        goto done;
    }
    if (rc < 0) {
        fprintf(stderr, "tuner: error: %s\n", err);
        goto done;
    }
    if (spec.resume_previous_job_id) {
        st_study prev;
        rc = st_study_get(st, spec.resume_previous_job_id, &prev, &found, err, sizeof err);
        if (rc != 0 || !found) {
            fprintf(stderr, "tuner: error: resumePreviousJobId: %s\n",
                    rc == 0 ? "no such study in the store" : err);
            exit_code = rc == 0 ? TUNER_EXIT_NOT_FOUND : TUNER_EXIT_ERROR;
            goto done;
        }
        st_study_clear(&prev);
    }
    /* The run lock before anything is stored: a job dir another tuner runs (of this
     * store or another) refuses the run, and leaves no study behind. */
    int lock = lock_study(&spec, "run");
    if (lock < 0) goto done;
    /* Under the lock: a folder with another study's mark or trials is refused, and the
     * new study's mark goes in once it has an id. */
    int installed = 0;
    if ((rc = own_job_dir(st, env, &spec, 0, 0, 0)) >= 0 ||
        (installed = prepare_packages(&spec, rf.quiet)) != 0) {
        exit_code = rc >= 0 ? rc : installed;
        close(lock);
        goto done;
    }
    int64_t seed = rf.seed >= 0 ? rf.seed : (int64_t)random_seed();
    int64_t id;
    if (st_study_create(st, spec.job_id, text, seed, ST_STUDY_RUNNING, &id, err, sizeof err) != 0 ||
        st_study_get(st, spec.job_id, &study, &found, err, sizeof err) != 0 || !found) {
        fprintf(stderr, "tuner: error: %s\n", err);
        close(lock);
        goto done;
    }
    if ((rc = claim_job_dir(st, env, &spec, id)) >= 0) { /* stored: left resumable */
        exit_code = rc;
        if (st_study_set_state(st, id, ST_STUDY_STOPPED, "its job folder could not be marked",
                               err, sizeof err) != 0)
            fprintf(stderr, "tuner: error: %s\n", err);
        close(lock);
        goto done;
    }
    if (!rf.quiet)
        fprintf(stderr, "%s: study created in %s (seed %lld); trials in %s/\n", spec.job_id,
                env->db, (long long)seed, spec.job_dir);
    exit_code = run_study(st, &spec, &study, &rf, env, dash, lock);
done:
    dash_free(dash);
    st_study_clear(&study);
    st_close(st);
    spec_clear(&spec);
    free(text);
    return exit_code;
}

/* Opens the store and loads a study and its spec. Returns -1 on success, else the exit
 * code (error printed). */
static int load_study(const cli_env *env, const char *name, st_store **st, st_study *study,
                      tn_spec *spec) {
    char err[1024];
    if (st_open(env->db, st, err, sizeof err) != 0) {
        fprintf(stderr, "tuner: error: %s\n", err);
        return TUNER_EXIT_ERROR;
    }
    int found;
    int rc = st_study_get(*st, name, study, &found, err, sizeof err);
    if (rc == 0 && !found) {
        fprintf(stderr, "tuner: error: no study named %s in %s\nhint: run 'tuner list'\n", name,
                env->db);
        return TUNER_EXIT_NOT_FOUND;
    }
    if (rc) {
        fprintf(stderr, "tuner: error: %s\n", err);
        return TUNER_EXIT_ERROR;
    }
    spec_errors errs = {0};
    if (spec_parse(study->spec, name, 1, spec, &errs) != 0) {
        print_spec_errors(name, &errs);
        spec_errors_clear(&errs);
        return TUNER_EXIT_ERROR;
    }
    return -1;
}

/* Releases what load_study loaded (all of it may be empty) and returns exit_code. */
static int unload_study(st_store *st, st_study *study, tn_spec *spec, int exit_code) {
    spec_clear(spec);
    st_study_clear(study);
    st_close(st);
    return exit_code;
}

/* resume's claim of the job folder, under the lock: the folder is the study's (its
 * mark, or, unmarked, no trial folders beyond the study's trials: a study of an older
 * tuner) and is marked so. Returns -1 to go on, else the exit code (error printed). */
static int claim_on_resume(st_store *st, const cli_env *env, const tn_spec *spec,
                           const st_study *study) {
    char err[1024];
    int64_t counts[ST_TRIAL_NSTATES], trials = 0;
    if (st_trial_counts(st, study->id, counts, err, sizeof err) != 0) {
        fprintf(stderr, "tuner: error: %s\n", err);
        return TUNER_EXIT_ERROR;
    }
    for (int i = 0; i < ST_TRIAL_NSTATES; i++) trials += counts[i];
    return own_job_dir(st, env, spec, study->id, trials, 1);
}

int cmd_resume(int argc, char **argv, const cli_env *env) {
    run_flags rf = {.seed = -1, .gpus = -1, .poll = 0.5, .grace = 10};
    const tn_flag flags[] = {RUN_FLAGS(rf)};
    int pos[CLI_MAX_POSITIONAL];
    static const cli_command def = {
        "resume", "resume STUDY [flags]",
        "Carries on a study that was interrupted, killed or cancelled: trials that\n"
        "were running run again (their replicas resume from their checkpoints),\n"
        "finished trials are kept, and new trials are sampled up to maxTrials.",
        {"STUDY"}, 1, 0};
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) /* said so, not "unknown" */
        if (!strcmp(argv[i], "--seed") || !strncmp(argv[i], "--seed=", 7))
            return cli_usage("resume", "--seed is fixed when a study is created");
    int rc = cli_parse(&def, flags, CLI_NFLAGS(flags), argc, argv, pos, NULL);
    if (rc != CLI_CONTINUE) return rc;
    if ((rc = check_run_flags(&rf, "resume")) >= 0) return rc;
    if ((rc = check_dashboard_flags(&rf)) >= 0) return rc;
    st_store *st = NULL;
    st_study study = {0};
    tn_spec spec = {0};
    dash_server *dash = NULL;
    int exit_code = load_study(env, argv[pos[0]], &st, &study, &spec);
    if (exit_code < 0 && rf.executor &&
        strcmp(rf.executor, spec_executor_name(spec.executor.type)) != 0) {
        fprintf(stderr,
                "tuner: error: study %s runs on the %s executor; --executor=%s cannot change "
                "that on resume (its running jobs would be lost)\nhint: resume without "
                "--executor\n",
                study.name, spec_executor_name(spec.executor.type), rf.executor);
        exit_code = TUNER_EXIT_USAGE;
    }
    if (exit_code < 0) {
        if (study.state == ST_STUDY_SUCCEEDED) {
            printf("study %s is already complete\n", study.name);
            exit_code = TUNER_EXIT_OK;
        } else if ((exit_code = open_dashboard(&rf, env, &dash)) < 0) {
            int lock = lock_study(&spec, "resume");
            exit_code = lock < 0 ? TUNER_EXIT_ERROR : claim_on_resume(st, env, &spec, &study);
            int installed = exit_code < 0 ? prepare_packages(&spec, rf.quiet) : 0;
            if (installed) exit_code = installed;
            if (exit_code < 0) exit_code = run_study(st, &spec, &study, &rf, env, dash, lock);
            else if (lock >= 0) close(lock);
        }
    }
    dash_free(dash);
    return unload_study(st, &study, &spec, exit_code);
}

int cmd_create(int argc, char **argv, const cli_env *env) {
    int64_t seed = -1;
    const char *job_id = NULL;
    const tn_flag flags[] = {
        {"seed", TN_FLAG_INT64, &seed, "N", "sampler seed (default: random, stored)"},
        JOB_ID_FLAG(job_id)};
    int pos[CLI_MAX_POSITIONAL];
    static const cli_command def = {
        "create", "create SPEC.json|CONFIG.yaml [--seed=N] [--job-id=ID]",
        "Stores a study without running anything, for `tuner ask` and `tuner tell`\n"
        "(the spec then needs no command), or to run later with `tuner resume`.\n"
        "Claims the study's job folder as `run` does: makes it and marks it the\n"
        "study's; a folder another study owns is refused (docs/tuner.md).",
        {"SPEC"}, 1, 0};
    int rc = cli_parse(&def, flags, CLI_NFLAGS(flags), argc, argv, pos, NULL);
    if (rc != CLI_CONTINUE) return rc;
    if (seed < 0 && tn_flags_given(flags, CLI_NFLAGS(flags), "seed"))
        return cli_usage("create", "--seed must be 0 or more, got %lld", (long long)seed);
    const char *path = argv[pos[0]];
    tn_spec spec;
    char err[1024], *raw = NULL;
    if ((rc = read_spec("create", path, job_id, 1, &spec, &raw)) >= 0) return rc;
    print_spec_notes(path, &spec);
    char *text = stored_spec_text(raw, &spec);
    free(raw);
    st_store *st = NULL;
    int64_t id;
    int exit_code = -1, lock = -1;
    if (st_open(env->db, &st, err, sizeof err) != 0) {
        fprintf(stderr, "tuner: error: %s\n", err);
        exit_code = TUNER_EXIT_ERROR;
    }
    st_study had = {0};
    int found = 0;
    if (exit_code < 0 && st_study_get(st, spec.job_id, &had, &found, err, sizeof err) != 0) {
        fprintf(stderr, "tuner: error: %s\n", err);
        exit_code = TUNER_EXIT_ERROR;
    } else if (exit_code < 0 && found) { /* said before its folder is looked at */
        fprintf(stderr, "tuner: error: a study named %s already exists in %s\n", spec.job_id,
                env->db);
        exit_code = TUNER_EXIT_USAGE;
    }
    st_study_clear(&had);
    /* The study's folder is claimed as `run` claims it, under the lock: refused when
     * another study's mark or trials are there, marked once the study is stored. */
    if (exit_code < 0 && (lock = lock_study(&spec, "create")) < 0) exit_code = TUNER_EXIT_ERROR;
    if (exit_code < 0) exit_code = own_job_dir(st, env, &spec, 0, 0, 0);
    if (exit_code < 0 &&
        st_study_create(st, spec.job_id, text, seed >= 0 ? seed : (int64_t)random_seed(),
                        ST_STUDY_CREATED, &id, err, sizeof err) != 0) {
        fprintf(stderr, "tuner: error: %s\n", err);
        exit_code = strstr(err, "already exists") ? TUNER_EXIT_USAGE : TUNER_EXIT_ERROR;
    }
    if (exit_code < 0) exit_code = claim_job_dir(st, env, &spec, id);
    if (exit_code < 0) {
        printf("created study %s in %s (%zu parameter%s); next: `tuner ask %s`\n", spec.job_id,
               env->db, spec.space.n, spec.space.n == 1 ? "" : "s", spec.job_id);
        exit_code = TUNER_EXIT_OK;
    }
    if (lock >= 0) close(lock);
    st_close(st);
    spec_clear(&spec);
    free(text);
    return exit_code;
}

int cmd_validate(int argc, char **argv, const cli_env *env) {
    int ask_tell = 0;
    run_flags rf = {.gpus = -1};
    const char *job_id = NULL;
    const tn_flag flags[] = {{"ask_tell", TN_FLAG_BOOL, &ask_tell, NULL,
                              "the spec is for ask/tell: it needs no command"},
                             {"executor", TN_FLAG_STRING, &rf.executor, "local|slurm",
                              "check against this executor (default: the spec's)"},
                             JOB_ID_FLAG(job_id)};
    int pos[CLI_MAX_POSITIONAL];
    static const cli_command def = {
        "validate",
        "validate SPEC.json|CONFIG.yaml [--ask-tell] [--executor=local|slurm] "
        "[--job-id=ID]",
        "Checks a spec (JSON, or gcloud's YAML training config file) and reports\n"
        "every problem at once, each with the path of the field (and its line and\n"
        "column in a YAML file) and what was expected, and notes the AI Platform\n"
        "fields that have no effect here. Runs nothing; exit 0 when valid.\n"
        "For the Slurm executor it also asks the cluster (sinfo) whether the\n"
        "partition exists and some node has what one replica asks for.",
        {"SPEC"}, 1, 0};
    int rc = cli_parse(&def, flags, CLI_NFLAGS(flags), argc, argv, pos, NULL);
    if (rc != CLI_CONTINUE) return rc;
    const char *path = argv[pos[0]];
    tn_spec spec;
    if ((rc = read_spec("validate", path, job_id, ask_tell, &spec, NULL)) >= 0) return rc;
    print_spec_notes(path, &spec);
    if ((rc = apply_executor_flag(&rf, &spec, "validate")) >= 0) {
        spec_clear(&spec);
        return rc;
    }
    int gpus = 0;
    for (int t = 0; t < TF_NTYPES; t++)
        gpus += spec_replica_count(&spec, t) * spec.resources[t].gpus;
    if (spec.executor.type == SPEC_EXECUTOR_LOCAL && gpus > 0) { /* this host's GPUs */
        char why[256] = "";
        int have = ex_host_gpus(why, sizeof why);
        if (gpus > have) {
            fprintf(stderr,
                    "%s: a trial needs %d GPU%s but this machine has %d%s%s%s\n"
                    "hint: validate on the machine that will run the study, or run it with "
                    "--executor=slurm on a cluster with GPUs\ntuner: error: %s cannot run here\n",
                    path, gpus, gpus == 1 ? "" : "s", have, have ? "" : " (", have ? "" : why,
                    have ? "" : ")", path);
            spec_clear(&spec);
            return TUNER_EXIT_USAGE;
        }
    }
    if (spec.executor.type == SPEC_EXECUTOR_SLURM && !ask_tell) {
        char err[1024];
        study_opts pre = {.self_dir = env->self_dir};
        if (study_preflight(&spec, &pre, err, sizeof err) != 0) {
            fprintf(stderr, "%s: %s\ntuner: error: %s cannot run on this Slurm cluster\n", path,
                    err, path);
            spec_clear(&spec);
            return TUNER_EXIT_USAGE;
        }
    }
    static const char *algos[] = {"", "ALGORITHM_UNSPECIFIED", "GRID_SEARCH", "RANDOM_SEARCH"};
    printf("%s: valid: study %s, %zu parameter%s, %s, %s %s, maxTrials %d (%d in parallel), "
           "replicas: 1 %s",
           path, spec.job_id, spec.space.n, spec.space.n == 1 ? "" : "s", algos[spec.algorithm],
           spec.goal == SPEC_MAXIMIZE ? "maximize" : "minimize", spec.metric_tag, spec.max_trials,
           spec.max_parallel_trials, spec_replica_name(&spec, TF_CHIEF));
    for (int t = TF_WORKER; t < TF_NTYPES; t++)
        if (spec_replica_count(&spec, t))
            printf(" + %d %s", spec_replica_count(&spec, t), spec_replica_name(&spec, t));
    printf(", executor %s\n", spec_executor_name(spec.executor.type));
    spec_clear(&spec);
    return TUNER_EXIT_OK;
}

/* For `tuner CMD` (ask, tell): takes the study's lock shared (tuner/jobdir.h), so that
 * asks and tells go on together but never change a study that another tuner runs, and
 * reads the study again under it. Returns -1 to go on, with *lock to close (or -1),
 * else the exit code (the error printed). */
static int share_study(st_store *st, const tn_spec *spec, st_study *study, const char *cmd,
                       int *lock) {
    char err[1024];
    int rc = jd_lock(spec->job_dir, 0, cmd, lock, err, sizeof err);
    if (rc > 0) { /* JD_BUSY (JD_SHARED only if the holder just left) */
        fprintf(stderr,
                "tuner: error: study %s is being run by another tuner process (%s): `tuner %s` "
                "would change it under that run\nhint: ask and tell are for studies whose "
                "trials run outside the tuner (`tuner create`); wait for the run to end, or "
                "stop it (Ctrl-C, `tuner cancel %s`)\n",
                study->name, err, cmd, study->name);
        return TUNER_EXIT_USAGE;
    }
    if (rc) {
        fprintf(stderr, "tuner: error: %s\n", err);
        return TUNER_EXIT_ERROR;
    }
    char *name = tn_xstrdup(study->name);
    int found;
    st_study_clear(study);
    rc = st_study_get(st, name, study, &found, err, sizeof err);
    free(name);
    if (rc == 0 && found) return -1;
    if (rc == 0) snprintf(err, sizeof err, "study %s is gone from the store", spec->job_id);
    fprintf(stderr, "tuner: error: %s\n", err);
    return TUNER_EXIT_ERROR;
}

int cmd_ask(int argc, char **argv, const cli_env *env) {
    int pos[CLI_MAX_POSITIONAL];
    static const cli_command def = {
        "ask", "ask STUDY",
        "Creates the study's next trial and prints it as JSON:\n"
        "  {\"trial\": N, \"parameters\": {\"NAME\": VALUE, ...}}\n"
        "Record its outcome with `tuner tell STUDY N VALUE` (or --failed).\n"
        "Concurrent asks never hand out the same trial. Exit 5 when the study has\n"
        "no trials left (maxTrials reached, or the grid exhausted, or the study\n"
        "finished); exit 2 while another tuner runs the study (its lock is held).\n"
        "The ask that finds the grid exhausted with no trial out ends the study\n"
        "(SUCCEEDED).",
        {"STUDY"}, 1, 0};
    int rc = cli_parse(&def, NULL, 0, argc, argv, pos, NULL);
    if (rc != CLI_CONTINUE) return rc;
    st_store *st = NULL;
    st_study study = {0};
    tn_spec spec = {0};
    int lock = -1;
    int exit_code = load_study(env, argv[pos[0]], &st, &study, &spec);
    if (exit_code < 0) exit_code = share_study(st, &spec, &study, "ask", &lock);
    if (exit_code < 0 && st_study_state_final(study.state)) {
        fprintf(stderr, "tuner: error: study %s is %s: it hands out no more trials\n", study.name,
                st_study_state_name(study.state));
        exit_code = TUNER_EXIT_EXHAUSTED;
    }
    if (exit_code < 0) {
        char err[1024], *params = NULL;
        int64_t number;
        int exhausted;
        rc = study_ask(st, &spec, &study, &number, &params, &exhausted, err, sizeof err);
        if (rc == 0 && !exhausted) {
            if (err[0]) fprintf(stderr, "tuner: note: trial %lld: %s\n", (long long)number, err);
            printf("{\"trial\": %lld, \"parameters\": %s}\n", (long long)number, params);
            exit_code = TUNER_EXIT_OK;
        } else if (rc == 0 && err[0]) { /* over since load_study read it */
            fprintf(stderr, "tuner: error: %s\n", err);
            exit_code = TUNER_EXIT_EXHAUSTED;
        } else if (rc == 0) {
            fprintf(stderr, "tuner: error: study %s has no trials left to give (maxTrials %d%s)\n",
                    study.name, spec.max_trials,
                    spec.algorithm == SP_ALGO_GRID ? ", or the grid is exhausted" : "");
            exit_code = TUNER_EXIT_EXHAUSTED;
        } else {
            fprintf(stderr, "tuner: error: %s\n", err);
            exit_code = TUNER_EXIT_ERROR;
        }
        free(params);
    }
    if (lock >= 0) close(lock);
    return unload_study(st, &study, &spec, exit_code);
}

/* A VALUE of tell: a decimal number, [+-]DIGITS[.DIGITS][e[+-]DIGITS] (digits on at
 * least one side of the point), whose value is finite. strtod alone would also take
 * hexadecimal (0x10 is 16), inf, nan and leading spaces. Returns 0, or -1. */
static int parse_value(const char *s, double *out) {
    const char *p = s + (*s == '+' || *s == '-');
    size_t whole = strspn(p, "0123456789"), frac = 0;
    p += whole;
    if (*p == '.') frac = strspn(++p, "0123456789");
    p += frac;
    if (whole + frac == 0) return -1;
    if (*p == 'e' || *p == 'E') {
        p += 1 + (p[1] == '+' || p[1] == '-');
        size_t exp = strspn(p, "0123456789");
        if (exp == 0) return -1;
        p += exp;
    }
    if (*p) return -1;
    *out = strtod(s, NULL);
    return isfinite(*out) ? 0 : -1;
}

int cmd_tell(int argc, char **argv, const cli_env *env) {
    int failed = 0;
    const tn_flag flags[] = {
        {"failed", TN_FLAG_BOOL, &failed, NULL, "the trial failed (give no VALUE)"}};
    int pos[2 + SPEC_MAX_METRICS], npos = 0;
    static const cli_command def = {
        "tell", "tell STUDY TRIAL VALUE... | tell STUDY TRIAL --failed",
        "Records the outcome of a trial handed out by `tuner ask`: its objective\n"
        "value, a finite decimal number (a study of several metrics: one VALUE per\n"
        "metric, in the spec's order), or that it failed. Refused (exit 2) for a\n"
        "finished study, and while another tuner runs the study (its lock is held).\n"
        "The tell of the last trial ends the study (SUCCEEDED), and so does the\n"
        "failure that reaches maxFailedTrials (FAILED; the trials still out are\n"
        "CANCELLED).",
        {"STUDY", "TRIAL", "VALUE"}, 2, SPEC_MAX_METRICS};
    int rc = cli_parse(&def, flags, CLI_NFLAGS(flags), argc, argv, pos, &npos);
    if (rc != CLI_CONTINUE) return rc;
    if (failed ? npos != 2 : npos < 3)
        return cli_usage("tell", "%s", failed ? "tell --failed takes STUDY and TRIAL"
                                          : "tell takes STUDY, TRIAL and VALUE (or --failed)");
    char *end;
    errno = 0;
    long long number = strtoll(argv[pos[1]], &end, 10);
    if (*end || end == argv[pos[1]] || number < 1 || errno)
        return cli_usage("tell", "TRIAL must be a trial number (1, 2, ...)");
    double values[SPEC_MAX_METRICS] = {0};
    size_t nvalues = failed ? 0 : (size_t)npos - 2;
    for (size_t k = 0; k < nvalues; k++)
        if (parse_value(argv[pos[2 + k]], &values[k]) != 0)
            return cli_usage("tell", "VALUE must be a finite decimal number (as 0.873, -2, "
                                     "1.5e-3), not '%s'", argv[pos[2 + k]]);
    st_store *st = NULL;
    st_study study = {0};
    tn_spec spec = {0};
    int lock = -1;
    int exit_code = load_study(env, argv[pos[0]], &st, &study, &spec);
    if (exit_code < 0) exit_code = share_study(st, &spec, &study, "tell", &lock);
    if (exit_code < 0 && st_study_state_final(study.state)) { /* its results are final */
        fprintf(stderr, "tuner: error: study %s is %s: it takes no more results\n", study.name,
                st_study_state_name(study.state));
        exit_code = TUNER_EXIT_USAGE;
    }
    if (exit_code < 0 && !failed && nvalues != spec.nmetrics) {
        exit_code = cli_usage("tell", "study %s has %zu metric%s: tell takes %zu VALUE%s, got %zu",
                              study.name, spec.nmetrics, spec.nmetrics == 1 ? "" : "s",
                              spec.nmetrics, spec.nmetrics == 1 ? "" : "s", nvalues);
    }
    if (exit_code < 0) {
        char err[1024];
        rc = study_tell_values(st, &spec, &study, number, failed, values, nvalues, err,
                               sizeof err);
        if (rc) {
            fprintf(stderr, "tuner: error: %s\n", err);
            exit_code = rc != TN_EINVAL            ? TUNER_EXIT_ERROR /* the store */
                        : strstr(err, "has no trial") ? TUNER_EXIT_NOT_FOUND
                                                       : TUNER_EXIT_USAGE;
        } else {
            printf("trial %lld of %s: %s\n", number, study.name, failed ? "FAILED" : "SUCCEEDED");
            exit_code = TUNER_EXIT_OK;
        }
    }
    if (lock >= 0) close(lock);
    return unload_study(st, &study, &spec, exit_code);
}

static int cmd_serve(int argc, char **argv, const cli_env *env) {
    const char *listen = NULL;
    int public_access = 0;
    const tn_flag flags[] = {
        {"listen", TN_FLAG_STRING, &listen, "ADDR:PORT",
         "where to serve (default 127.0.0.1:8470, or the next free port)"},
        {"public", TN_FLAG_BOOL, &public_access, NULL,
         "allow an address other than loopback (every API request then needs the token)"}};
    int pos[CLI_MAX_POSITIONAL];
    static const cli_command def = {
        "serve", "serve [--listen=ADDR:PORT] [--public]",
        "Serves the dashboard of every study in the store, without running\n"
        "anything: studies another `tuner run` is running update live. Prints the\n"
        "page's address with its token, writes the token to DB.dashboard-token\n"
        "(mode 0600; $XDG_RUNTIME_DIR/tuner-dashboard-PORT.token when the store's\n"
        "folder is not writable) and serves until Ctrl-C. Docs: docs/dashboard.md",
        {NULL}, 0, 0};
    int rc = cli_parse(&def, flags, CLI_NFLAGS(flags), argc, argv, pos, NULL);
    if (rc != CLI_CONTINUE) return rc;
    char err[1024];
    if (listen && dash_check_address(listen, public_access, 1, err, sizeof err) != 0) {
        fprintf(stderr, "tuner: error: --listen: %s\n", err);
        return TUNER_EXIT_USAGE;
    }
    struct stat sb;
    if (stat(env->db, &sb) != 0) {
        fprintf(stderr,
                "tuner: error: no store at %s\nhint: pass --db=PATH or set TUNER_DB to the "
                "store `tuner run` used\n",
                env->db);
        return TUNER_EXIT_NOT_FOUND;
    }
    dash_config c = {.listen = listen, .public_access = public_access, .db = env->db,
                     .log = stderr, .serve = 1, .stop_on_hangup = hangup_stops()};
    dash_server *dash = NULL;
    rc = dash_new(&c, &dash, err, sizeof err);
    if (rc) {
        fprintf(stderr, "tuner: error: %s\n", err);
        return rc == TN_EINVAL || rc == DASH_NO_PORT ? TUNER_EXIT_USAGE : TUNER_EXIT_ERROR;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s.dashboard-token", env->db);
    if (dash_write_token(dash, path, err, sizeof err) != 0) {
        const char *run = getenv("XDG_RUNTIME_DIR");
        char err2[1024] = "no $XDG_RUNTIME_DIR";
        if (run && *run)
            snprintf(path, sizeof path, "%s/tuner-dashboard-%d.token", run, dash_port(dash));
        if (!run || !*run || dash_write_token(dash, path, err2, sizeof err2) != 0) {
            fprintf(stderr, "tuner: warning: %s (and %s); the token is only in the address "
                            "below\n", err, err2);
            path[0] = '\0';
        }
    }
    dash_catch_signals(dash);
    printf("dashboard: %s\n", dash_url(dash));
    if (path[0]) printf("token: %s\n", dash_token_path(dash));
    printf("serving %s; Ctrl-C stops\n", env->db);
    fflush(stdout);
    dash_run(dash);
    dash_free(dash);
    return TUNER_EXIT_OK;
}

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv, const cli_env *env);
    const char *about;
} command;

static const command commands[] = {
    {"run", cmd_run, "validate a spec, store it as a study and run it"},
    {"resume", cmd_resume, "carry on an interrupted study"},
    {"create", cmd_create, "store a study without running it (for ask/tell)"},
    {"validate", cmd_validate, "check a spec and report every problem"},
    {"list", cmd_list, "list the studies in the store"},
    {"show", cmd_show, "one study: state, counts, best trial"},
    {"trials", cmd_trials, "a study's trials, or one trial's measurements"},
    {"best", cmd_best, "a study's best trial"},
    {"logs", cmd_logs, "a trial replica's log (-f to follow)"},
    {"cancel", cmd_cancel, "cancel a study (a running tuner stops its trials)"},
    {"ask", cmd_ask, "create the next trial and print its parameters"},
    {"tell", cmd_tell, "record a trial's outcome"},
    {"serve", cmd_serve, "serve the dashboard of the store (no study is run)"},
};

static void main_usage(FILE *out) {
    fprintf(out, "usage: tuner COMMAND [flags] [--db=PATH]\n\n"
                 "Hyperparameter tuning on your own machines: studies are AI Platform job specs\n"
                 "(JSON, or gcloud's YAML training config file), trials are distributed training\n"
                 "jobs of local processes, everything is kept in an SQLite store (--db,\n"
                 "$TUNER_DB, default tuner.db).\n\ncommands:\n");
    for (size_t i = 0; i < CLI_NFLAGS(commands); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].about);
    fprintf(out, "\n'tuner COMMAND --help' tells more. Docs: docs/cli.md\n");
}

/* The folder holding this binary. */
static char *self_dir(void) {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return NULL;
    buf[n] = '\0';
    return tn_xstrdup(dirname(buf));
}

int main(int argc, char **argv) {
    /* A file-size limit (ulimit -f) would kill the tuner at the store's write that
     * crosses it, the study left RUNNING: ignored, the write fails with EFBIG and the
     * store stops the study with its error (the executor restores the default in the
     * trials it starts). */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGXFSZ, &ign, NULL);
    cli_env env = {.db = getenv("TUNER_DB")};
    if (!env.db || !*env.db) env.db = "tuner.db";
    /* Take --db out of the line, wherever it is. */
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "--db=", 5)) {
            env.db = argv[i] + 5;
            if (!*env.db) return cli_usage("", "--db needs a value (--db=PATH)");
        } else if (!strcmp(argv[i], "--db")) {
            /* not the next flag: "--db --quiet" would store into a file named --quiet */
            if (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2))
                return cli_usage("", "--db needs a value (--db=PATH)");
            env.db = argv[++i];
        } else if (!strcmp(argv[i], "--")) {
            while (i < argc) argv[n++] = argv[i++];
            break;
        } else {
            argv[n++] = argv[i];
        }
    }
    argc = n;
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        main_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? TUNER_EXIT_USAGE : TUNER_EXIT_OK;
    }
    char *dir = self_dir();
    env.self_dir = dir;
    for (size_t i = 0; i < CLI_NFLAGS(commands); i++) {
        if (!strcmp(argv[1], commands[i].name)) {
            int rc = commands[i].fn(argc - 1, argv + 1, &env);
            free(dir);
            return rc;
        }
    }
    const char *names[CLI_NFLAGS(commands)];
    for (size_t i = 0; i < CLI_NFLAGS(commands); i++) names[i] = commands[i].name;
    const char *near = tn_closest(argv[1], names, CLI_NFLAGS(commands));
    fprintf(stderr, "tuner: error: unknown command '%s'\n", argv[1]);
    if (near) fprintf(stderr, "hint: did you mean 'tuner %s'?\n", near);
    else fprintf(stderr, "hint: run 'tuner --help'\n");
    free(dir);
    return TUNER_EXIT_USAGE;
}
