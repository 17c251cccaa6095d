/*
 * query.c — the commands that read the store (list, show, trials, best, logs) and
 * cancel, which flips a study's state for the `tuner run` that polls it.
 *
 * Each command parses its flags from a table (common/flags.h), looks the study up,
 * builds its rows with tuner/output.h and prints them once, so --format=table|json|csv
 * share one code path. The read commands never create a store: a --db that does not
 * exist reads as an empty one. The stored spec is parsed again (spec_parse, ask/tell
 * rules) for the goal, maxTrials, the parameter order and jobDir. Errors are printed
 * as `tuner: error: ...` with a `hint:` line where a fix is known; exit codes are
 * commands.h's. Columns, JSON fields and behaviour: docs/cli.md.
 */
#include "tuner/commands.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/flags.h"
#include "common/status.h"
#include "common/text.h"
#include "executor/contract.h"
#include "tuner/cli.h"
#include "tuner/output.h"
#include "tuner/spec.h"
#include "tuner/store.h"
#include "tuner/study.h"

#define FOLLOW_POLL_NS 200000000L

/* Parses the --format value into *format. Returns CLI_CONTINUE or the usage exit code. */
static int parse_format(const char *value, int *format) {
    char err[256];
    if (out_parse_format(value, format, err, sizeof err) == 0) return CLI_CONTINUE;
    return cli_fail(TUNER_EXIT_USAGE, "use --format=table, --format=json or --format=csv",
                "--format: %s", err);
}

/* Parses the command line of a command whose one flag is --format (list, show, best):
 * CLI_CONTINUE with pos and *format, or an exit code. */
static int parse_format_only(const cli_command *def, int argc, char **argv, int *pos,
                             int *format) {
    const char *format_s = "table";
    const tn_flag flags[] = {
        {"format", TN_FLAG_STRING, &format_s, "FORMAT", "table, json or csv"},
    };
    *format = CLI_TABLE;
    int rc = cli_parse(def, flags, CLI_NFLAGS(flags), argc, argv, pos, NULL);
    return rc != CLI_CONTINUE ? rc : parse_format(format_s, format);
}

/* ---- the store and the study ---- */

static const char *db_path(const cli_env *env) {
    return env && env->db && env->db[0] ? env->db : "tuner.db";
}

static int store_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Opens the store to read it (read-only when it cannot be written; a warning on
 * stderr if that loses anything). Returns CLI_CONTINUE with *st open, or an exit code. */
static int open_store(const char *path, st_store **st) {
    char err[1024];
    if (st_open_read(path, st, err, sizeof err) != 0)
        return cli_fail(TUNER_EXIT_ERROR, NULL, "%s", err);
    if (st_note(*st)) fprintf(stderr, "tuner: warning: %s\n", st_note(*st));
    return CLI_CONTINUE;
}

/* The not-found error of a study. */
static int no_study(const char *path, const char *name, int store_missing) {
    char hint[600];
    if (store_missing)
        snprintf(hint, sizeof hint,
                 "%s does not exist; pass --db=PATH or set TUNER_DB to the store 'tuner run' "
                 "used",
                 path);
    else
        snprintf(hint, sizeof hint, "run 'tuner list'");
    return cli_fail(TUNER_EXIT_NOT_FOUND, hint, "no study named %s in %s", name, path);
}

/* Opens the store and reads the study named name. Returns CLI_CONTINUE with *st open and
 * *study filled (the caller closes and clears them), or an exit code with nothing
 * left open. */
static int open_study(const cli_env *env, const char *name, st_store **st, st_study *study) {
    const char *path = db_path(env);
    char err[512];
    memset(study, 0, sizeof *study);
    *st = NULL;
    if (!store_exists(path)) return no_study(path, name, 1);
    int rc = open_store(path, st);
    if (rc != CLI_CONTINUE) return rc;
    int found;
    rc = st_study_get(*st, name, study, &found, err, sizeof err);
    if (rc == 0 && found) return CLI_CONTINUE;
    st_close(*st);
    *st = NULL;
    if (rc == 0) return no_study(path, name, 0);
    return cli_fail(TUNER_EXIT_ERROR, NULL, "%s", err);
}

/* Parses the spec stored with a study into *spec. Returns 0, or TN_EINVAL with the
 * first problem in msg. */
static int parse_spec(const st_study *study, tn_spec *spec, char *msg, size_t len) {
    spec_errors errs = {0};
    int rc = spec_parse(study->spec, study->name, 1, spec, &errs);
    if (rc) {
        if (errs.n)
            snprintf(msg, len, "the spec stored for study %s does not parse: %s%s%s%s",
                     study->name, errs.items[0].path, errs.items[0].path[0] ? ": " : "",
                     errs.items[0].message, errs.n > 1 ? " (and more)" : "");
        else
            snprintf(msg, len, "the spec stored for study %s does not parse", study->name);
    }
    spec_errors_clear(&errs);
    return rc;
}

/* parse_spec for the commands that cannot do without the spec. */
static int need_spec(const st_study *study, tn_spec *spec) {
    char msg[1024];
    if (parse_spec(study, spec, msg, sizeof msg) == 0) return CLI_CONTINUE;
    return cli_fail(TUNER_EXIT_ERROR,
                "the store may have been written by another version of tuner", "%s", msg);
}

/* A study read for a report: the store (open), its row, its parsed spec and its
 * trials in number order. */
typedef struct report {
    st_store *st;
    st_study study;
    tn_spec spec;
    st_trial *trials; /* (n) */
    size_t n;
} report;

static void report_clear(report *r) {
    st_trials_free(r->trials, r->n);
    spec_clear(&r->spec);
    st_study_clear(&r->study);
    st_close(r->st);
    memset(r, 0, sizeof *r);
}

/* Opens the study named name with its spec and trials. Returns CLI_CONTINUE with *r
 * filled (release it with report_clear), or an exit code with nothing left open. */
static int report_open(const cli_env *env, const char *name, report *r) {
    char err[1024];
    memset(r, 0, sizeof *r);
    int rc = open_study(env, name, &r->st, &r->study);
    if (rc != CLI_CONTINUE) return rc;
    if ((rc = need_spec(&r->study, &r->spec)) == CLI_CONTINUE &&
        st_trial_list(r->st, r->study.id, &r->trials, &r->n, err, sizeof err) != 0)
        rc = cli_fail(TUNER_EXIT_ERROR, NULL, "%s", err);
    if (rc != CLI_CONTINUE) report_clear(r);
    return rc;
}

/* ---- trials ---- */

/* The data-only columns "pending", "running", ... of the counts, in state order. */
static void count_columns(out_table *t) {
    for (int i = 0; i < ST_TRIAL_NSTATES; i++) {
        char key[16];
        snprintf(key, sizeof key, "%s", st_trial_state_names[i]);
        for (char *k = key; *k; k++) *k = (char)(*k - 'A' + 'a');
        out_column(t, key, NULL, OUT_DATA_ONLY);
    }
}


/* A trial's params as a JSON object (new reference; an empty object when the stored
 * text does not parse). */
static json_t *params_object(const st_trial *t) {
    json_t *v = t->params ? json_loads(t->params, 0, NULL) : NULL;
    if (!json_is_object(v)) {
        json_decref(v);
        v = json_object();
    }
    return v;
}

/* One column per parameter of the spec, in the spec's order, left out of JSON
 * (which nests them under "params"); numbers right-aligned. */
static void param_columns(out_table *t, const tn_spec *spec) {
    for (size_t i = 0; i < spec->space.n; i++) {
        const sp_param *p = &spec->space.params[i];
        out_column_in(t, "params", p->name, p->name,
                      OUT_NO_JSON | (p->type == SP_CATEGORICAL ? 0 : OUT_RIGHT));
    }
}

/* The cells of param_columns for the params object obj. */
static void param_cells(out_table *t, const tn_spec *spec, const json_t *obj) {
    for (size_t i = 0; i < spec->space.n; i++) {
        json_t *v = json_object_get(obj, spec->space.params[i].name);
        if (json_is_integer(v))
            out_int(t, json_integer_value(v));
        else if (json_is_real(v))
            out_num(t, json_real_value(v));
        else if (json_is_string(v))
            out_str(t, json_string_value(v));
        else if (v && !json_is_null(v))
            out_json(t, json_incref(v));
        else
            out_null(t);
    }
}

static double wall_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "1h02m03s", "4m05s", "12.3s". */
static void format_elapsed(double s, char *buf, size_t len) {
    if (!(s > 0)) s = 0;
    long long whole = (long long)s;
    if (whole >= 3600)
        snprintf(buf, len, "%lldh%02lldm%02llds", whole / 3600, whole / 60 % 60, whole % 60);
    else if (whole >= 60)
        snprintf(buf, len, "%lldm%02llds", whole / 60, whole % 60);
    else
        snprintf(buf, len, "%.1fs", s);
}

static double round_ms(double s) { return round(s * 1000.0) / 1000.0; }

static const char *goal_name(int goal) { return goal == SPEC_MINIMIZE ? "MINIMIZE" : "MAXIMIZE"; }

static const char *algorithm_name(int algorithm) {
    switch (algorithm) {
    case SP_ALGO_GRID: return "GRID_SEARCH";
    case SP_ALGO_RANDOM: return "RANDOM_SEARCH";
    default: return "ALGORITHM_UNSPECIFIED";
    }
}

/* Prints the rows (or the record), reporting a failed write. */
static int print_rows(const out_table *t, int format, const char *empty, int record) {
    char err[256];
    int rc = record ? out_print_record(t, format, stdout, err, sizeof err)
                    : out_print(t, format, stdout, empty, err, sizeof err);
    return rc ? cli_fail(TUNER_EXIT_ERROR, NULL, "%s", err) : TUNER_EXIT_OK;
}

/* ---- list ---- */

static const cli_command list_def = {
    "list", "list [--format=table|json|csv]",
    "Lists every study in the store, oldest first: its state, how many trials it has (of\n"
    "maxTrials) and how many succeeded, failed or are running, the best objective so far\n"
    "by the spec's goal and the trial that reached it, and when it was created and last\n"
    "updated.\n",
    {NULL},
    0,
    0};

/* One row of `tuner list` for a study. */
static void list_row(out_table *t, st_store *st, const st_study *s, int *rc) {
    char err[1024], text[160];
    st_trial *trials = NULL;
    size_t n = 0;
    if (st_trial_list(st, s->id, &trials, &n, err, sizeof err) != 0) {
        *rc = cli_fail(TUNER_EXIT_ERROR, NULL, "%s", err);
        return;
    }
    tn_spec spec;
    int have_spec = parse_spec(s, &spec, err, sizeof err) == 0;
    if (!have_spec) fprintf(stderr, "tuner: warning: %s\n", err);
    int64_t c[ST_TRIAL_NSTATES];
    if (st_trial_counts(st, s->id, c, err, sizeof err) != 0) {
        st_trials_free(trials, n);
        *rc = cli_fail(TUNER_EXIT_ERROR, NULL, "%s", err);
        return;
    }
    long b = have_spec ? study_best_index(trials, n, spec.goal) : -1;

    out_row(t);
    out_str(t, s->name);
    out_str(t, st_study_state_name(s->state));
    char max[24] = "?";
    if (have_spec) snprintf(max, sizeof max, "%d", spec.max_trials);
    snprintf(text, sizeof text, "%zu/%s (%lld ok, %lld failed, %lld running)", n, max,
             (long long)c[ST_TRIAL_SUCCEEDED], (long long)c[ST_TRIAL_FAILED],
             (long long)(c[ST_TRIAL_RUNNING] + c[ST_TRIAL_PENDING]));
    out_str(t, text);
    for (int i = 0; i < ST_TRIAL_NSTATES; i++) out_int(t, c[i]);
    out_int(t, (int64_t)n);
    if (have_spec)
        out_int(t, spec.max_trials);
    else
        out_null(t);
    if (b >= 0) {
        snprintf(text, sizeof text, "%.6g (trial %lld)", trials[b].objective,
                 (long long)trials[b].number);
        out_str(t, text);
        out_int(t, trials[b].number);
        out_num(t, trials[b].objective);
    } else {
        out_str(t, "-");
        out_null(t);
        out_null(t);
    }
    out_time(t, s->created);
    out_time(t, s->updated);
    if (have_spec) spec_clear(&spec);
    st_trials_free(trials, n);
}

int cmd_list(int argc, char **argv, const cli_env *env) {
    int pos[CLI_MAX_POSITIONAL], format;
    int rc = parse_format_only(&list_def, argc, argv, pos, &format);
    if (rc != CLI_CONTINUE) return rc;

    const char *path = db_path(env);
    char err[512], empty[600];
    snprintf(empty, sizeof empty, "no studies in %s", path);
    out_table *t = out_new();
    out_column(t, "name", "NAME", 0);
    out_column(t, "state", "STATE", 0);
    out_column(t, "trials", "TRIALS", OUT_TABLE_ONLY);
    count_columns(t);
    out_column(t, "total", NULL, OUT_DATA_ONLY);
    out_column(t, "max_trials", NULL, OUT_DATA_ONLY);
    out_column(t, "best", "BEST", OUT_TABLE_ONLY);
    out_column(t, "best_trial", NULL, OUT_DATA_ONLY);
    out_column(t, "best_objective", NULL, OUT_DATA_ONLY);
    out_column(t, "created", "CREATED", 0);
    out_column(t, "updated", "UPDATED", 0);

    rc = CLI_CONTINUE;
    st_store *st = NULL;
    st_study *studies = NULL;
    size_t n = 0;
    if (store_exists(path)) { /* else: empty, and not created by a read */
        rc = open_store(path, &st);
        if (rc == CLI_CONTINUE && st_study_list(st, &studies, &n, err, sizeof err) != 0)
            rc = cli_fail(TUNER_EXIT_ERROR, NULL, "%s", err);
        for (size_t i = 0; i < n && rc == CLI_CONTINUE; i++) list_row(t, st, &studies[i], &rc);
    }
    if (rc == CLI_CONTINUE) rc = print_rows(t, format, empty, 0);
    st_studies_free(studies, n);
    st_close(st);
    out_free(t);
    return rc;
}

/* ---- show ---- */

static const cli_command show_def = {
    "show", "show STUDY [--format=table|json|csv]",
    "Shows one study: its state (and error), goal and metric, algorithm, trial limits,\n"
    "trials by state, the best trial with its parameters, when it was created and last\n"
    "updated, and where its jobs write (jobDir) and the store it lives in. A study of\n"
    "several metrics also shows each metric with its goal and the trials of its Pareto\n"
    "front ('tuner best' lists them with their values); its best trial is the best by\n"
    "the first metric.\n",
    {"STUDY"},
    1,
    0};

/* "6 of 20: 3 succeeded, 1 failed, 2 running" (states with no trials left out). */
static void trials_summary(const int64_t c[ST_TRIAL_NSTATES], int max_trials, char *buf,
                           size_t len) {
    int64_t total = 0;
    for (int i = 0; i < ST_TRIAL_NSTATES; i++) total += c[i];
    static const st_trial_state order[ST_TRIAL_NSTATES] = {
        ST_TRIAL_SUCCEEDED, ST_TRIAL_FAILED,  ST_TRIAL_RUNNING,
        ST_TRIAL_PENDING,   ST_TRIAL_STOPPED, ST_TRIAL_CANCELLED};
    static const char *const words[ST_TRIAL_NSTATES] = {
        [ST_TRIAL_PENDING] = "pending", [ST_TRIAL_RUNNING] = "running",
        [ST_TRIAL_SUCCEEDED] = "succeeded", [ST_TRIAL_FAILED] = "failed",
        [ST_TRIAL_STOPPED] = "stopped early", [ST_TRIAL_CANCELLED] = "cancelled"};
    size_t used = (size_t)snprintf(buf, len, "%lld of %d", (long long)total, max_trials);
    int first = 1;
    for (int k = 0; k < ST_TRIAL_NSTATES && used < len; k++) {
        int i = order[k];
        if (!c[i]) continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%lld %s", first ? ": " : ", ",
                                 (long long)c[i], words[i]);
        first = 0;
    }
}

/* The study's metrics, [{"metricId": ..., "goal": ...}] ("loss (MINIMIZE), ..." in
 * the table), and the trial numbers of its Pareto front ("2, 5, 9"; with one metric,
 * the best trial's), for show. */
static void metrics_cell(out_table *t, const tn_spec *spec) {
    json_t *list = json_array();
    tn_buf text = {0};
    for (size_t k = 0; k < spec->nmetrics; k++) {
        const char *goal = goal_name(spec->metrics[k].goal);
        json_array_append_new(list, json_pack("{ssss}", "metricId", spec->metrics[k].id,
                                              "goal", goal));
        tn_buf_printf(&text, "%s%s (%s)", k ? ", " : "", spec->metrics[k].id, goal);
    }
    out_cell(t, text.len ? text.data : "", list);
    tn_buf_clear(&text);
}

static void front_cell(out_table *t, report *r, long best) {
    unsigned char *front = tn_xcalloc(r->n + 1, 1);
    if (r->spec.nmetrics > 1)
        study_pareto(&r->spec, r->trials, r->n, front);
    else if (best >= 0)
        front[best] = 1;
    json_t *list = json_array();
    tn_buf text = {0};
    for (size_t i = 0; i < r->n; i++) {
        if (!front[i]) continue;
        json_array_append_new(list, json_integer(r->trials[i].number));
        tn_buf_printf(&text, "%s%lld", text.len ? ", " : "", (long long)r->trials[i].number);
    }
    out_cell(t, text.len ? text.data : "none yet", list);
    tn_buf_clear(&text);
    free(front);
}

int cmd_show(int argc, char **argv, const cli_env *env) {
    int pos[CLI_MAX_POSITIONAL], format;
    int rc = parse_format_only(&show_def, argc, argv, pos, &format);
    if (rc != CLI_CONTINUE) return rc;

    report r;
    if ((rc = report_open(env, argv[pos[0]], &r)) != CLI_CONTINUE) return rc;
    out_table *t = NULL;
    char err[1024], text[256];
    int64_t c[ST_TRIAL_NSTATES];
    if (st_trial_counts(r.st, r.study.id, c, err, sizeof err) != 0) {
        rc = cli_fail(TUNER_EXIT_ERROR, NULL, "%s", err);
        goto done;
    }
    long b = study_best_index(r.trials, r.n, r.spec.goal);

    t = out_new();
    out_column(t, "name", "study", 0);
    out_column(t, "state", "state", 0);
    out_column(t, "error", "error", 0);
    out_column(t, "goal", "goal", 0);
    out_column(t, "metric", "metric", 0);
    int several = r.spec.nmetrics > 1; /* (the table lists metrics and front only then) */
    out_column(t, "metrics", "metrics", several ? 0 : OUT_DATA_ONLY);
    out_column(t, "algorithm", "algorithm", 0);
    out_column(t, "max_trials", "max trials", 0);
    out_column(t, "max_parallel_trials", "max parallel trials", 0);
    out_column(t, "max_failed_trials", "max failed trials", 0);
    out_column(t, "trials", "trials", OUT_TABLE_ONLY);
    count_columns(t);
    out_column(t, "pareto_front", "Pareto front", several ? 0 : OUT_DATA_ONLY);
    out_column(t, "best_trial", several ? "best by first metric" : "best trial", 0);
    out_column(t, "best_objective", "best objective", 0);
    out_column(t, "best_params", "best params", 0);
    out_column(t, "seed", "seed", 0);
    out_column(t, "created", "created", 0);
    out_column(t, "updated", "updated", 0);
    out_column(t, "elapsed", "elapsed", 0);
    out_column(t, "job_dir", "job dir", 0);
    out_column(t, "executor", "executor", 0);
    out_column(t, "store", "store", 0);

    out_row(t);
    out_str(t, r.study.name);
    out_str(t, st_study_state_name(r.study.state));
    out_str(t, r.study.error && r.study.error[0] ? r.study.error : NULL);
    out_str(t, goal_name(r.spec.goal));
    out_str(t, r.spec.metric_tag);
    metrics_cell(t, &r.spec);
    out_str(t, algorithm_name(r.spec.algorithm));
    out_int(t, r.spec.max_trials);
    out_int(t, r.spec.max_parallel_trials);
    out_int(t, r.spec.max_failed_trials);
    trials_summary(c, r.spec.max_trials, text, sizeof text);
    out_str(t, text);
    for (int i = 0; i < ST_TRIAL_NSTATES; i++) out_int(t, c[i]);
    front_cell(t, &r, b);
    if (b >= 0) {
        out_int(t, r.trials[b].number);
        out_num(t, r.trials[b].objective);
        out_json(t, params_object(&r.trials[b]));
    } else {
        out_cell(t, "none yet", NULL);
        out_null(t);
        out_null(t);
    }
    out_int(t, r.study.seed);
    out_time(t, r.study.created);
    out_time(t, r.study.updated);
    double elapsed = r.study.updated > r.study.created ? r.study.updated - r.study.created : 0;
    format_elapsed(elapsed, text, sizeof text);
    out_cell(t, text, json_real(round_ms(elapsed)));
    out_str(t, r.spec.job_dir);
    out_str(t, spec_executor_name(r.spec.executor.type));
    out_str(t, db_path(env));
    rc = print_rows(t, format, NULL, 1);

done:
    out_free(t);
    report_clear(&r);
    return rc;
}

/* ---- trials ---- */

/* Parses TRIAL: a positive decimal integer (trials and logs). */
static int parse_trial_number(const char *s, int64_t *out) {
    if (!s[0] || s[0] == '-' || s[0] == '+') return TN_EINVAL;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno == ERANGE || v <= 0) return TN_EINVAL;
    *out = v;
    return 0;
}

/* Parses --replica=TYPE[:INDEX] against the spec into *type and *index (trials and
 * logs). Returns CLI_CONTINUE or an exit code. */
static int parse_replica(const char *value, const tn_spec *spec, const char *study, int *type,
                         int *index) {
    static const char *const names[] = {"chief", "master", "worker", "ps", "evaluator"};
    const char *colon = strchr(value, ':');
    size_t len = colon ? (size_t)(colon - value) : strlen(value);
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), value);
    *type = len < sizeof name ? tf_type_parse(name) : -1;
    if (*type < 0) {
        const char *near = tn_closest(name, names, 5);
        return cli_fail(TUNER_EXIT_USAGE,
                    "write --replica=TYPE:INDEX; TYPE is chief, master, worker, ps or evaluator",
                    "--replica: unknown replica type '%s'%s%s%s", name,
                    near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
    }
    *index = 0;
    if (colon) {
        char *end;
        errno = 0;
        long v = strtol(colon + 1, &end, 10);
        if (!colon[1] || *end || errno == ERANGE || v < 0 || v > 1000000)
            return cli_fail(TUNER_EXIT_USAGE, "write it as TYPE:INDEX, e.g. --replica=worker:1",
                        "--replica: bad index '%s'", colon + 1);
        *index = (int)v;
    }
    int count = spec_replica_count(spec, *type);
    if (*index >= count) {
        char list[256] = "";
        size_t used = 0;
        for (int ty = 0; ty < TF_NTYPES && used < sizeof list; ty++) {
            int k = spec_replica_count(spec, ty);
            if (k <= 0) continue;
            const char *nm = spec_replica_name(spec, ty);
            if (k == 1)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s:0",
                                         used ? ", " : "", nm);
            else
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s:0..%d",
                                         used ? ", " : "", nm, k - 1);
        }
        char hint[300];
        snprintf(hint, sizeof hint, "its replicas are %s", list);
        return cli_fail(TUNER_EXIT_NOT_FOUND, hint, "study %s has no replica %s:%d", study,
                    spec_replica_name(spec, *type), *index);
    }
    return CLI_CONTINUE;
}

static const cli_command trials_def = {
    "trials", "trials STUDY [TRIAL] [--state=STATE] [--replica=TYPE:INDEX] "
              "[--format=table|json|csv]",
    "Lists the trials of a study in number order: state, objective, one column per\n"
    "parameter (in the spec's order), duration in seconds (so far, while running),\n"
    "attempts, replica restarts and the error of a failed trial.\n"
    "\n"
    "With a trial number, prints that trial's measurements instead, one row per stored\n"
    "record, by step, then replica, then arrival: the step, the replica, the attempt\n"
    "(which run of the replica wrote it: 1 for its first start in the trial, 2 after a\n"
    "restart in place or a re-run of the job, ...), one column per metric (the study's\n"
    "metric first) and the record's timestamp. A step a restarted replica reported\n"
    "again shows once per attempt; the newest attempt's value is the one the learning\n"
    "curves and early stopping use.\n",
    {"STUDY", "TRIAL"},
    1,
    1};

/* Checks a --state value (any case) and writes the state it names to *state. Returns
 * CLI_CONTINUE or the usage exit code. */
static int parse_state(const char *value, int *state) {
    char up[32];
    size_t i = 0;
    for (; value[i] && i + 1 < sizeof up; i++)
        up[i] = (char)(value[i] >= 'a' && value[i] <= 'z' ? value[i] - 'a' + 'A' : value[i]);
    up[i] = '\0';
    int s = value[i] ? -1 : st_trial_state_parse(up);
    if (s >= 0) {
        *state = s;
        return CLI_CONTINUE;
    }
    const char *near = tn_closest(up, st_trial_state_names, ST_TRIAL_NSTATES);
    return cli_fail(TUNER_EXIT_USAGE,
                "the states are PENDING, RUNNING, SUCCEEDED, FAILED, STOPPED and CANCELLED",
                "--state: unknown trial state '%s'%s%s%s", value, near ? " (did you mean " : "",
                near ? near : "", near ? "?)" : "");
}

/* The table's text of a record's timestamp: ISO 8601 UTC with milliseconds when it is
 * a time of this century, else the number (a record without a timestamp has its
 * position, 1, 2, ...; a program may write anything). */
static void format_stamp(double ts, char *buf, size_t len) {
    if (ts >= 946684800.0 && ts < 4102444800.0) { /* 2000 to 2100 */
        time_t whole = (time_t)floor(ts);
        int ms = (int)floor((ts - (double)whole) * 1000.0);
        struct tm tm;
        char day[32];
        if (gmtime_r(&whole, &tm) && strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm) > 0) {
            snprintf(buf, len, "%s.%03dZ", day, ms > 999 ? 999 : ms);
            return;
        }
    }
    snprintf(buf, len, "%.6g", ts);
}

/* Adds name to names[0..*n) unless it is there. */
static void add_name(char ***names, size_t *n, const char *name) {
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*names)[i], name)) return;
    *names = tn_xrealloc(*names, (*n + 1) * sizeof **names);
    (*names)[(*n)++] = tn_xstrdup(name);
}

/* `tuner trials STUDY TRIAL`: one row per stored measurement of the trial (of the
 * replica --replica names, when given), by step, then replica, then arrival. Returns
 * the exit code. */
static int print_measurements(const report *r, const char *trial_s, const char *replica_s,
                              int format) {
    int64_t number = 0;
    if (parse_trial_number(trial_s, &number) != 0)
        return cli_usage(trials_def.name,
                         "TRIAL must be a positive integer (a trial number), got '%s'", trial_s);
    int found = 0;
    for (size_t i = 0; i < r->n && !found; i++) found = r->trials[i].number == number;
    if (!found) {
        char hint[300];
        snprintf(hint, sizeof hint, "see its trials with 'tuner trials %s'", r->study.name);
        return cli_fail(TUNER_EXIT_NOT_FOUND, hint, "study %s has no trial %lld", r->study.name,
                    (long long)number);
    }
    char only[48] = "";
    if (replica_s[0]) {
        int type, index, rc = parse_replica(replica_s, &r->spec, r->study.name, &type, &index);
        if (rc != CLI_CONTINUE) return rc;
        snprintf(only, sizeof only, "%s:%d", spec_replica_name(&r->spec, type), index);
    }
    st_measurement *ms = NULL;
    size_t n = 0;
    char err[1024];
    if (st_measurement_list(r->st, r->study.id, number, &ms, &n, err, sizeof err) != 0)
        return cli_fail(TUNER_EXIT_ERROR, NULL, "%s", err);
    /* The metrics, parsed once: the study's metric first, then the others in the order
     * the records first name them. */
    json_t **metrics = tn_xcalloc(n + 1, sizeof *metrics);
    char **names = NULL;
    size_t nnames = 0;
    if (r->spec.metric_tag && r->spec.metric_tag[0])
        add_name(&names, &nnames, r->spec.metric_tag);
    for (size_t i = 0; i < n; i++) {
        if (only[0] && strcmp(ms[i].replica, only) != 0) continue;
        metrics[i] = json_loads(ms[i].metrics, 0, NULL);
        if (!json_is_object(metrics[i])) {
            json_decref(metrics[i]);
            metrics[i] = json_object();
        }
        const char *key;
        json_t *v;
        json_object_foreach(metrics[i], key, v) add_name(&names, &nnames, key);
    }

    out_table *t = out_new();
    out_column(t, "step", "STEP", OUT_RIGHT);
    out_column(t, "replica", "REPLICA", 0);
    out_column(t, "attempt", "ATTEMPT", OUT_RIGHT);
    out_column(t, "metrics", NULL, OUT_NO_TABLE | OUT_NO_CSV);
    for (size_t k = 0; k < nnames; k++)
        out_column_in(t, "metrics", names[k], names[k], OUT_NO_JSON | OUT_RIGHT);
    out_column(t, "timestamp", "TIMESTAMP", OUT_RIGHT);
    for (size_t i = 0; i < n; i++) {
        if (!metrics[i]) continue; /* another replica's */
        out_row(t);
        out_int(t, ms[i].step);
        out_str(t, ms[i].replica);
        if (ms[i].attempt > 0)
            out_int(t, ms[i].attempt);
        else
            out_null(t); /* written before the store kept attempts */
        out_json(t, json_incref(metrics[i]));
        for (size_t k = 0; k < nnames; k++) {
            json_t *v = json_object_get(metrics[i], names[k]);
            if (json_is_integer(v))
                out_int(t, json_integer_value(v));
            else if (json_is_number(v))
                out_num(t, json_number_value(v));
            else
                out_null(t);
        }
        char stamp[64];
        format_stamp(ms[i].timestamp, stamp, sizeof stamp);
        out_cell(t, stamp, json_real(ms[i].timestamp));
    }
    char empty[400];
    snprintf(empty, sizeof empty, "trial %lld of study %s has no measurements%s%s yet",
             (long long)number, r->study.name, only[0] ? " of " : "", only);
    int rc = print_rows(t, format, empty, 0);
    out_free(t);
    for (size_t i = 0; i < n; i++) json_decref(metrics[i]);
    free(metrics);
    for (size_t k = 0; k < nnames; k++) free(names[k]);
    free(names);
    st_measurements_free(ms, n);
    return rc;
}

/* The columns of a study's metrics, one per metric named by its metricId (table and
 * CSV; JSON has them in `values`). */
static void metric_columns(out_table *t, const tn_spec *spec) {
    for (size_t k = 0; k < spec->nmetrics; k++)
        out_column_in(t, "metrics", spec->metrics[k].id, spec->metrics[k].id,
                      OUT_RIGHT | OUT_NO_JSON);
}

/* A trial's `values` object ({"metricId": value, ...}; null without an objective) and
 * its cells of metric_columns: each metric's value, empty when it has none. */
static void metric_cells(out_table *t, const tn_spec *spec, const st_trial *tr) {
    json_t *values = tr->has_objective ? json_object() : json_null();
    for (size_t k = 0; k < spec->nmetrics && tr->has_objective; k++)
        json_object_set_new(values, spec->metrics[k].id,
                            (int)k < tr->nvalues ? json_real(tr->values[k]) : json_null());
    out_json(t, values);
    for (size_t k = 0; k < spec->nmetrics; k++) {
        if (tr->has_objective && (int)k < tr->nvalues)
            out_num(t, tr->values[k]);
        else
            out_null(t);
    }
}

int cmd_trials(int argc, char **argv, const cli_env *env) {
    const char *format_s = "table", *state_s = "", *replica_s = "";
    const tn_flag flags[] = {
        {"format", TN_FLAG_STRING, &format_s, "FORMAT", "table, json or csv"},
        {"state", TN_FLAG_STRING, &state_s, "STATE",
         "only the trials in this state (RUNNING, FAILED, ...)"},
        {"replica", TN_FLAG_STRING, &replica_s, "TYPE:INDEX",
         "with TRIAL: only this replica's measurements (chief, worker:1, ...)"},
    };
    int pos[CLI_MAX_POSITIONAL], format = CLI_TABLE;
    int only = -1; /* a st_trial_state, or -1: every state */
    int rc = cli_parse(&trials_def, flags, CLI_NFLAGS(flags), argc, argv, pos, NULL);
    if (rc != CLI_CONTINUE) return rc;
    if ((rc = parse_format(format_s, &format)) != CLI_CONTINUE) return rc;
    int one = pos[1] >= 0; /* a trial's measurements */
    if (one && state_s[0])
        return cli_usage(trials_def.name, "--state chooses trials to list; it does not go "
                                           "with a trial number");
    if (!one && replica_s[0])
        return cli_usage(trials_def.name, "--replica chooses a replica's measurements: give "
                                           "a trial number too (tuner trials STUDY TRIAL "
                                           "--replica=TYPE:INDEX)");
    if (state_s[0] && (rc = parse_state(state_s, &only)) != CLI_CONTINUE) return rc;

    report r;
    if ((rc = report_open(env, argv[pos[0]], &r)) != CLI_CONTINUE) return rc;
    if (one) {
        rc = print_measurements(&r, argv[pos[1]], replica_s, format);
        report_clear(&r);
        return rc;
    }
    char empty[300];
    out_table *t = out_new();
    out_column(t, "number", "TRIAL", OUT_RIGHT);
    out_column(t, "state", "STATE", 0);
    /* several metrics: one column each (table, CSV) and `values` (JSON); the
     * objective, the first's, stays in JSON and CSV */
    int several = r.spec.nmetrics > 1;
    out_column(t, "objective", "OBJECTIVE", OUT_RIGHT | (several ? OUT_NO_TABLE : 0));
    if (several) {
        out_column(t, "values", NULL, OUT_NO_TABLE | OUT_NO_CSV);
        metric_columns(t, &r.spec);
    }
    out_column(t, "params", NULL, OUT_NO_TABLE | OUT_NO_CSV);
    param_columns(t, &r.spec);
    out_column(t, "duration", "SECONDS", OUT_RIGHT);
    out_column(t, "attempts", "ATTEMPTS", OUT_RIGHT);
    out_column(t, "restarts", "RESTARTS", OUT_RIGHT);
    out_column(t, "created", NULL, OUT_DATA_ONLY);
    out_column(t, "started", NULL, OUT_DATA_ONLY);
    out_column(t, "finished", NULL, OUT_DATA_ONLY);
    out_column(t, "error", "ERROR", 0);
    out_column(t, "executor_job", NULL, OUT_DATA_ONLY);

    double now = wall_clock();
    for (size_t i = 0; i < r.n; i++) {
        const st_trial *tr = &r.trials[i];
        if (only >= 0 && (int)tr->state != only) continue;
        out_row(t);
        out_int(t, tr->number);
        out_str(t, st_trial_state_name(tr->state));
        if (tr->has_objective)
            out_num(t, tr->objective);
        else
            out_null(t);
        if (several) metric_cells(t, &r.spec, tr);
        json_t *params = params_object(tr);
        out_json(t, json_incref(params));
        param_cells(t, &r.spec, params);
        json_decref(params);
        if (tr->started > 0) {
            double end = tr->finished > 0 ? tr->finished : now;
            out_num(t, round_ms(end > tr->started ? end - tr->started : 0));
        } else {
            out_null(t);
        }
        out_int(t, tr->attempts);
        out_int(t, tr->restarts);
        out_time(t, tr->created);
        out_time(t, tr->started);
        out_time(t, tr->finished);
        out_str(t, tr->error && tr->error[0] ? tr->error : NULL);
        out_str(t, tr->executor_job);
    }
    if (only >= 0)
        snprintf(empty, sizeof empty, "study %s has no %s trials", r.study.name,
                 st_trial_state_names[only]);
    else
        snprintf(empty, sizeof empty, "study %s has no trials yet", r.study.name);
    rc = print_rows(t, format, empty, 0);
    out_free(t);
    report_clear(&r);
    return rc;
}

/* ---- best ---- */

static const cli_command best_def = {
    "best", "best STUDY [--format=table|json|csv]",
    "Shows the best succeeded trial of a study by the spec's goal (MAXIMIZE or MINIMIZE;\n"
    "ties go to the lowest trial number): its number, objective and parameters. A study\n"
    "of several metrics has no one best: its Pareto front, the succeeded trials no other\n"
    "beats in every metric, one row each with every metric's value.\n",
    {"STUDY"},
    1,
    0};

/* `tuner best` of a study with several metrics: its Pareto front (study_pareto), one
 * row per trial in number order. */
static int print_pareto(report *r, int format) {
    unsigned char *front = tn_xcalloc(r->n + 1, 1);
    size_t k = study_pareto(&r->spec, r->trials, r->n, front);
    int rc;
    if (k == 0) {
        char hint[300];
        snprintf(hint, sizeof hint, "see its trials with 'tuner trials %s'", r->study.name);
        rc = cli_fail(TUNER_EXIT_NOT_FOUND, hint, "study %s has no succeeded trial yet",
                  r->study.name);
        free(front);
        return rc;
    }
    out_table *t = out_new();
    out_column(t, "study", NULL, OUT_DATA_ONLY);
    out_column(t, "number", "TRIAL", OUT_RIGHT);
    out_column(t, "values", NULL, OUT_NO_TABLE | OUT_NO_CSV);
    metric_columns(t, &r->spec);
    out_column(t, "params", NULL, OUT_NO_TABLE | OUT_NO_CSV);
    param_columns(t, &r->spec);
    for (size_t i = 0; i < r->n; i++) {
        if (!front[i]) continue;
        out_row(t);
        out_str(t, r->study.name);
        out_int(t, r->trials[i].number);
        metric_cells(t, &r->spec, &r->trials[i]);
        json_t *params = params_object(&r->trials[i]);
        out_json(t, json_incref(params));
        param_cells(t, &r->spec, params);
        json_decref(params);
    }
    rc = print_rows(t, format, NULL, 0);
    out_free(t);
    free(front);
    return rc;
}

int cmd_best(int argc, char **argv, const cli_env *env) {
    int pos[CLI_MAX_POSITIONAL], format;
    int rc = parse_format_only(&best_def, argc, argv, pos, &format);
    if (rc != CLI_CONTINUE) return rc;

    report r;
    if ((rc = report_open(env, argv[pos[0]], &r)) != CLI_CONTINUE) return rc;
    out_table *t = NULL;
    if (r.spec.nmetrics > 1) {
        rc = print_pareto(&r, format);
        goto done;
    }
    long b = study_best_index(r.trials, r.n, r.spec.goal);
    if (b < 0) {
        char hint[300];
        snprintf(hint, sizeof hint, "see its trials with 'tuner trials %s'", r.study.name);
        rc = cli_fail(TUNER_EXIT_NOT_FOUND, hint, "study %s has no succeeded trial yet",
                  r.study.name);
        goto done;
    }

    t = out_new();
    out_column(t, "study", "study", 0);
    out_column(t, "number", "trial", 0);
    out_column(t, "metric", NULL, OUT_DATA_ONLY);
    out_column(t, "goal", NULL, OUT_DATA_ONLY);
    out_column(t, "objective", r.spec.metric_tag, 0);
    out_column(t, "params", NULL, OUT_NO_TABLE | OUT_NO_CSV);
    param_columns(t, &r.spec);
    out_row(t);
    out_str(t, r.study.name);
    out_int(t, r.trials[b].number);
    out_str(t, r.spec.metric_tag);
    out_str(t, goal_name(r.spec.goal));
    out_num(t, r.trials[b].objective);
    json_t *params = params_object(&r.trials[b]);
    out_json(t, json_incref(params));
    param_cells(t, &r.spec, params);
    json_decref(params);
    rc = print_rows(t, format, NULL, 1);

done:
    out_free(t);
    report_clear(&r);
    return rc;
}

/* ---- logs ---- */

static const cli_command logs_def = {
    "logs", "logs STUDY TRIAL [--replica=TYPE:INDEX] [-f|--follow]",
    "Prints the log of one replica of a trial: JOB_DIR/TRIAL/logs/TYPE-INDEX.log, where\n"
    "JOB_DIR is the spec's jobDir (relative to the folder 'tuner run' ran in). The\n"
    "default replica is the chief (chief:0, or master:0 when useChiefInTfConfig is\n"
    "false); TYPE is chief, master, worker, ps or evaluator, INDEX defaults to 0. With\n"
    "--follow (-f) it keeps printing what is appended until the trial is no longer\n"
    "PENDING or RUNNING, then exits 0.\n",
    {"STUDY", "TRIAL"},
    2,
    0};

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The error for a log file that is not there, listing the logs that are. */
static int missing_log(const char *path, const char *dir, const tn_spec *spec,
                       const st_trial *trial) {
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        char hint[600];
        if (spec->ncommand == 0 && !spec->python_module)
            snprintf(hint, sizeof hint,
                     "study %s is driven by 'tuner ask' and 'tuner tell': its trials run "
                     "elsewhere and keep no logs here",
                     spec->job_id);
        else if (!st_trial_state_final(trial->state) && trial->started == 0)
            snprintf(hint, sizeof hint, "trial %lld has not started yet; --follow waits for it",
                     (long long)trial->number);
        else if (spec->job_dir[0] != '/')
            snprintf(hint, sizeof hint,
                     "jobDir '%s' is relative to the folder 'tuner run' ran in: run 'tuner "
                     "logs' from there",
                     spec->job_dir);
        else
            snprintf(hint, sizeof hint, "trial %lld wrote no logs (it is %s)",
                     (long long)trial->number, st_trial_state_name(trial->state));
        if (e == ENOENT)
            return cli_fail(TUNER_EXIT_NOT_FOUND, hint, "no log file %s: the folder %s does not exist",
                        path, dir);
        return cli_fail(TUNER_EXIT_ERROR, NULL, "cannot list %s: %s", dir, strerror(e));
    }
    char **names = NULL;
    size_t n = 0, cap = 0, total = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t len = strlen(ent->d_name);
        if (len < 5 || strcmp(ent->d_name + len - 4, ".log") != 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            names = tn_xrealloc(names, cap * sizeof *names);
        }
        names[n++] = tn_xstrdup(ent->d_name);
        total += len + 2;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    char *hint = tn_xmalloc(total + 128);
    if (n == 0) {
        snprintf(hint, total + 128, "%s holds no log files yet", dir);
    } else {
        size_t used = (size_t)snprintf(hint, total + 128, "the logs of trial %lld are: ",
                                       (long long)trial->number);
        for (size_t i = 0; i < n; i++)
            used += (size_t)snprintf(hint + used, total + 128 - used, "%s%s", i ? ", " : "",
                                     names[i]);
        snprintf(hint + used, total + 128 - used, " (choose with --replica=TYPE:INDEX)");
    }
    int rc = cli_fail(TUNER_EXIT_NOT_FOUND, hint, "no log file %s", path);
    free(hint);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

/* Copies what in holds past *pos to stdout (starting over when the file shrank).
 * Returns 0, or TN_EIO with the message printed. */
static int copy_new(FILE *in, const char *path, off_t *pos) {
    char buf[65536];
    struct stat sb;
    if (fstat(fileno(in), &sb) == 0 && sb.st_size < *pos) { /* truncated: read it anew */
        if (fseeko(in, 0, SEEK_SET) == 0) *pos = 0;
    }
    clearerr(in);
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, in)) > 0) {
        if (fwrite(buf, 1, got, stdout) != got) {
            cli_fail(TUNER_EXIT_ERROR, NULL, "cannot write the output: %s", strerror(errno));
            return TN_EIO;
        }
        *pos += (off_t)got;
    }
    if (ferror(in)) {
        cli_fail(TUNER_EXIT_ERROR, NULL, "cannot read %s: %s", path, strerror(errno));
        return TN_EIO;
    }
    if (fflush(stdout) != 0) {
        cli_fail(TUNER_EXIT_ERROR, NULL, "cannot write the output: %s", strerror(errno));
        return TN_EIO;
    }
    return 0;
}

/* Prints the log at path; with follow, keeps polling the file and the trial's state
 * until the trial is over. Returns the exit code. */
static int print_log(st_store *st, const st_study *study, const tn_spec *spec, st_trial *trial,
                     const char *path, const char *dir, int follow) {
    FILE *in = NULL;
    off_t pos = 0;
    char err[512];
    int rc = TUNER_EXIT_OK;
    int asktell = spec->ncommand == 0 && !spec->python_module; /* no logs will come */
    if (follow && !asktell && !st_trial_state_final(trial->state) &&
        study->state != ST_STUDY_RUNNING) /* else it would look like a hang */
        fprintf(stderr,
                "tuner: note: study %s is %s: no tuner is running it, so trial %lld stays %s "
                "until 'tuner resume %s'; following anyway (Ctrl-C stops)\n",
                study->name, st_study_state_name(study->state), (long long)trial->number,
                st_trial_state_name(trial->state), study->name);
    for (;;) {
        int active = !st_trial_state_final(trial->state);
        if (!in) { /* never blocks: a replica may have made its log a FIFO */
            int fd = tn_open_regular(path, "log", err, sizeof err);
            if (fd >= 0 && !(in = fdopen(fd, "rb"))) close(fd);
            if (fd < 0 && fd != TN_ENOENT) {
                rc = cli_fail(TUNER_EXIT_ERROR, NULL, "%s", err);
                break;
            }
        }
        if (in && copy_new(in, path, &pos) != 0) {
            rc = TUNER_EXIT_ERROR;
            break;
        }
        if (!follow || !active || (!in && asktell)) {
            if (!in) rc = missing_log(path, dir, spec, trial);
            break;
        }
        struct timespec ts = {0, FOLLOW_POLL_NS};
        nanosleep(&ts, NULL);
        /* Read the state before the next copy, so the copy after the trial ends gets
         * everything its replicas wrote. */
        st_trial now;
        int found;
        int grc = st_trial_get(st, study->id, trial->number, &now, &found, err, sizeof err);
        if (grc != 0 || !found) {
            rc = grc == 0 ? cli_fail(TUNER_EXIT_NOT_FOUND, NULL, "trial %lld of %s is gone",
                                     (long long)trial->number, study->name)
                          : cli_fail(TUNER_EXIT_ERROR, NULL, "%s", err);
            break;
        }
        st_trial_clear(trial);
        *trial = now;
    }
    if (in) fclose(in);
    return rc;
}

int cmd_logs(int argc, char **argv, const cli_env *env) {
    const char *replica_s = "";
    int follow = 0;
    const tn_flag flags[] = {
        {"replica", TN_FLAG_STRING, &replica_s, "TYPE:INDEX",
         "the replica whose log to print (chief:0 when not given)"},
        {"follow", TN_FLAG_BOOL, &follow, NULL,
         "keep printing new output until the trial ends (also -f)"},
    };
    /* -f is --follow (before a bare "--"); the strings stay argv's. */
    char **args = tn_xcalloc((size_t)argc + 1, sizeof *args);
    for (int i = 0, dash = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--")) dash = 1;
        args[i] = i > 0 && !dash && !strcmp(argv[i], "-f") ? (char *)"--follow" : argv[i];
    }
    int pos[CLI_MAX_POSITIONAL];
    int rc = cli_parse(&logs_def, flags, CLI_NFLAGS(flags), argc, args, pos, NULL);
    const char *name = rc == CLI_CONTINUE ? args[pos[0]] : NULL;
    const char *trial_s = rc == CLI_CONTINUE ? args[pos[1]] : NULL;
    free(args);
    if (rc != CLI_CONTINUE) return rc;
    int64_t number = 0;
    if (parse_trial_number(trial_s, &number) != 0)
        return cli_usage(logs_def.name,
                         "TRIAL must be a positive integer (a trial number), got '%s'", trial_s);

    st_store *st = NULL;
    st_study study;
    if ((rc = open_study(env, name, &st, &study)) != CLI_CONTINUE) return rc;
    tn_spec spec = {0};
    st_trial trial = {0};
    char err[1024], *path = NULL, *dir = NULL;
    if ((rc = need_spec(&study, &spec)) != CLI_CONTINUE) goto done;
    int found;
    int grc = st_trial_get(st, study.id, number, &trial, &found, err, sizeof err);
    if (grc != 0) {
        rc = cli_fail(TUNER_EXIT_ERROR, NULL, "%s", err);
        goto done;
    }
    if (!found) {
        char hint[300];
        snprintf(hint, sizeof hint, "see its trials with 'tuner trials %s'", study.name);
        rc = cli_fail(TUNER_EXIT_NOT_FOUND, hint, "study %s has no trial %lld", study.name,
                  (long long)number);
        goto done;
    }
    int type = TF_CHIEF, index = 0;
    if (replica_s[0] &&
        (rc = parse_replica(replica_s, &spec, study.name, &type, &index)) != CLI_CONTINUE)
        goto done;

    char *trial_dir = ex_trial_dir(spec.job_dir, (long long)number);
    dir = ex_logs_dir(trial_dir);
    path = ex_log_path(trial_dir, spec_replica_name(&spec, type), index);
    free(trial_dir);
    rc = print_log(st, &study, &spec, &trial, path, dir, follow);

done:
    free(path);
    free(dir);
    st_trial_clear(&trial);
    spec_clear(&spec);
    st_study_clear(&study);
    st_close(st);
    return rc;
}

/* ---- cancel ---- */

static const cli_command cancel_def = {
    "cancel", "cancel STUDY",
    "Cancels a study: sets its state to CANCELLED. A 'tuner run' or 'tuner resume' of it\n"
    "notices within a second, stops its running trials (recorded as CANCELLED) and\n"
    "exits; 'tuner resume STUDY' carries it on later. Cancelling a CANCELLED study again\n"
    "does nothing and succeeds; a study that already SUCCEEDED or FAILED cannot be\n"
    "cancelled (exit 2).\n",
    {"STUDY"},
    1,
    0};

int cmd_cancel(int argc, char **argv, const cli_env *env) {
    int pos[CLI_MAX_POSITIONAL];
    int rc = cli_parse(&cancel_def, NULL, 0, argc, argv, pos, NULL);
    if (rc != CLI_CONTINUE) return rc;
    const char *path = db_path(env), *name = argv[pos[0]];
    if (!store_exists(path)) return no_study(path, name, 1);
    st_store *st = NULL;
    if ((rc = open_store(path, &st)) != CLI_CONTINUE) return rc;
    /* one transaction reads the state and sets CANCELLED, so a `run` finishing at the
     * same moment cannot be overwritten */
    st_study s;
    char err[512] = "";
    st_study_state was = ST_STUDY_CREATED;
    int found;
    int got = st_study_get(st, name, &s, &found, err, sizeof err);
    if (got == 0 && found) {
        got = st_study_cancel(st, s.id, &was, &found, err, sizeof err);
        st_study_clear(&s);
    }
    if (got < 0) {
        rc = cli_fail(TUNER_EXIT_ERROR, NULL, "%s", err);
    } else if (!found) {
        rc = no_study(path, name, 0);
    } else if (was == ST_STUDY_CANCELLED) {
        printf("study %s is already cancelled\n", name);
        rc = TUNER_EXIT_OK;
    } else if (st_study_state_final(was)) { /* SUCCEEDED or FAILED */
        char hint[300];
        snprintf(hint, sizeof hint, "see its outcome with 'tuner show %s'", name);
        rc = cli_fail(TUNER_EXIT_USAGE, hint, "study %s already finished (%s): nothing to cancel",
                  name, st_study_state_name(was));
    } else {
        printf("cancelled study %s\n", name);
        rc = TUNER_EXIT_OK;
    }
    st_close(st);
    return rc;
}
