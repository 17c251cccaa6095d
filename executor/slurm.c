/*
 * slurm.c — the Slurm backend of the executor: one trial job is one Slurm job (see
 * executor.h; the whole design, with the files below, is in docs/slurm.md).
 *
 * Submitting: the job's description goes to JOB_DIR/slurm/job.json and a two-line
 * batch script to JOB_DIR/slurm/job.sh, which runs `tuner-launch job` inside the
 * allocation; sbatch gets the resources, one job component per distinct replica shape
 * (cores, memory, GPUs), so replica types that ask for different resources become
 * the components of a heterogeneous job. The launcher starts one srun step per
 * replica type, and each task of a step (`tuner-launch replica`) becomes one replica:
 * it publishes its host and port, waits for its peers, and runs the program under the
 * contract's rules (restart in place, give up, succeed), writing its events and,
 * once, the run's outcome into JOB_DIR/slurm/JOBID-RESTART/. The tuner reads those
 * files through the shared file system, as it reads the metric files.
 *
 * Watching: one `squeue -t all -j ID,...` per poll interval for all the jobs of the
 * executor, whatever their number, on the loop (never blocking it). A job that left
 * the queue ends with the outcome its launcher wrote; one that Slurm ended without
 * an outcome (cancelled or preempted from outside, node failure) is re-run, and a
 * time limit or out-of-memory fails the trial, each reported as such. Stopping is
 * scancel. The Slurm job id goes to the caller (ex_callbacks.handle) as soon as
 * sbatch prints it, so a tuner killed at any moment re-attaches on resume.
 */
#include "executor/executor_internal.h"

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/status.h"

#define CMD_TIMEOUT 60.0        /* seconds a Slurm command may take */
#define MAX_SUBMIT_TRIES 10     /* sbatch failing for a passing reason */

static const char *const TERMINAL[] = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                                       "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL",
                                       "DEADLINE", "SPECIAL_EXIT", "REVOKED"};

static int is_terminal(const char *state) {
    for (size_t i = 0; i < sizeof TERMINAL / sizeof TERMINAL[0]; i++)
        if (!strcmp(state, TERMINAL[i])) return 1;
    return 0;
}

/* One events file a launcher writes, read from where we left it. */
typedef struct ev_file {
    char *path;
    const char *who;          /* the replica's name, or NULL for the job */
    off_t offset;
    int exited;               /* the last event read is "exited": nothing of it runs */
    double told_until;        /* events up to this time were told before (re-attach) */
} ev_file;

typedef struct slurm_job {
    char jobid[32];           /* "" until sbatch has answered */
    int restart;              /* SLURM_RESTART_COUNT of the run whose files we read */
    char state[32];           /* as squeue last said; "" before */
    char reason[128];
    int told_running;         /* "running" said for this run */
    int missing;              /* squeue listings in a row without the job */
    int stop_requested;       /* scancel was (or is to be) sent */
    int scancel_failed;       /* the last scancel failed: send it again */
    int submit_tries;         /* failed sbatch calls in a row (passing reasons) */
    int quiet_requeues;       /* follow_requeue does not count runs (re-attaching) */
    double start_time;        /* when the current run started, as squeue says (0: not) */
    int aborted;              /* cancelled by slurm_abort: nothing to cancel when freed */
    int abort_failed;         /* ... but its scancel failed: the job may still run */
    long last_jobid;          /* the newest Slurm job id the trial had (0: none) */
    ex_seen *seen;            /* what re-attaching must not tell again (owned) */
    size_t nseen;
    ex_cmd *sbatch, *scancel, *lookup;
    ex_cmd *scancel_name;     /* scancel --name: stopping, not knowing whether a job runs */
    ex_cmd *scancel_gone;     /* scancel of a job squeue stopped listing, before its re-run */
    char gone_id[32];         /* ... its id */
    ex_cmd *scancel_extra;    /* scancel of live copies lost sbatch answers queued ... */
    char **extra_sent;        /* ... the ids it was given (NULL-terminated; owned) */
    char **extra_ids;         /* ... and copies found since, to cancel next (owned) */
    struct event *resubmit_ev;
    ev_file *ev;              /* the replicas' and the job's events files */
    size_t nev;
} slurm_job;

typedef struct slurm_exec {
    struct event *tick;       /* squeue every poll interval */
    ex_cmd *squeue;           /* in flight, or NULL */
    char **queried;           /* the ids that squeue was asked about */
    size_t nqueried;
    int failing;              /* squeue has been failing: said so once */
    long *live;               /* the study's live jobs as slurm_recover listed them ... */
    size_t nlive;
    int recovered;            /* ... once it has */
} slurm_exec;

static char *job_file(const ex_job *j, const char *name) {
    return tn_xasprintf("%s/slurm/%s", j->job_dir, name);
}

static char *attempt_dir(const ex_job *j, const char *jobid, int restart) {
    return tn_xasprintf("%s/slurm/%s-%d", j->job_dir, jobid, restart);
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- events files ---- */

/* The EX_EV_* of a kind a replica's launcher writes (started, exited, restarted), or
 * NULL for anything else (a line that is not the launcher's). */
static const char *launcher_kind(const char *kind) {
    static const char *const kinds[] = {EX_EV_STARTED, EX_EV_EXITED, EX_EV_RESTARTED};
    for (size_t i = 0; kind && i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kind, kinds[i])) return kinds[i];
    return NULL;
}

/* The exit an `exited` line of the launcher carries ({"exit_code": N} or
 * {"signal": S}), or EX_EXIT_UNKNOWN. */
static ex_exit launcher_exit(const json_t *line) {
    json_t *code = json_object_get(line, "exit_code"), *sig = json_object_get(line, "signal");
    ex_exit e = EX_EXIT_UNKNOWN;
    if (json_is_integer(code) && json_integer_value(code) >= 0 && json_integer_value(code) <= 255)
        e.code = (int)json_integer_value(code);
    if (json_is_integer(sig) && json_integer_value(sig) > 0 && json_integer_value(sig) < 128)
        e.signal = (int)json_integer_value(sig);
    return e;
}

static void reset_events(ex_job *j) {
    slurm_job *sj = j->impl;
    for (size_t i = 0; i < sj->nev; i++) free(sj->ev[i].path);
    free(sj->ev);
    sj->ev = NULL;
    sj->nev = 0;
    if (!sj->jobid[0]) return;
    char *dir = attempt_dir(j, sj->jobid, sj->restart);
    sj->ev = tn_xcalloc(j->nreps + 1, sizeof *sj->ev);
    for (size_t i = 0; i < j->nreps; i++) {
        const ex_replica *r = &j->reps[i];
        sj->ev[i].path = tn_xasprintf("%s/events/%s-%d.jsonl", dir,
                                      tf_type_label(r->type, !j->cfg.use_chief_name), r->index);
        sj->ev[i].who = r->name;
    }
    sj->ev[j->nreps].path = tn_xasprintf("%s/events/job.jsonl", dir);
    sj->nev = j->nreps + 1;
    free(dir);
    for (size_t i = 0; i < sj->nev; i++) /* what an earlier tuner stored of them */
        for (size_t k = 0; k < sj->nseen; k++)
            if ((!sj->seen[k].replica && !sj->ev[i].who) ||
                (sj->seen[k].replica && sj->ev[i].who && !strcmp(sj->seen[k].replica, sj->ev[i].who)))
                sj->ev[i].told_until = sj->seen[k].time;
}

/* Tells the events the launchers wrote since the last read (complete lines only). */
static void read_events(ex_job *j) {
    slurm_job *sj = j->impl;
    for (size_t i = 0; i < sj->nev; i++) {
        ev_file *f = &sj->ev[i];
        int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) continue;
        struct stat st;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= f->offset) {
            close(fd);
            continue;
        }
        size_t len = (size_t)(st.st_size - f->offset);
        if (len > (1u << 20)) len = 1u << 20; /* the rest next time */
        char *buf = tn_xmalloc(len + 1);
        ssize_t got = pread(fd, buf, len, f->offset);
        close(fd);
        if (got <= 0) {
            free(buf);
            continue;
        }
        buf[got] = '\0';
        char *line = buf, *nl;
        while ((nl = strchr(line, '\n'))) {
            *nl = '\0';
            f->offset += (off_t)(nl - line + 1);
            json_t *o = json_loads(line, 0, NULL);
            const char *kind = launcher_kind(json_string_value(json_object_get(o, "kind")));
            const char *detail = json_string_value(json_object_get(o, "detail"));
            double t = json_number_value(json_object_get(o, "time"));
            if (kind) f->exited = !strcmp(kind, EX_EV_EXITED);
            if (kind && !strcmp(kind, EX_EV_STARTED) && t > 0) /* the run started by then */
                ex__arm_timeout(j, ex__now() - t);
            if (kind && t > f->told_until) {
                if (!strcmp(kind, EX_EV_RESTARTED)) j->restarts++;
                ex__emit_at(j, t, f->who, kind, launcher_exit(o), "%s", detail ? detail : "");
            }
            json_decref(o);
            line = nl + 1;
        }
        free(buf);
    }
}

static void store_handle(ex_job *j);

/* A newer run of the same Slurm job (Slurm requeued it: SLURM_RESTART_COUNT grew):
 * read its files from now on, and count it as a re-run of the job (stored, and
 * against the retry limit), unless re-attaching (quiet_requeues). */
static void follow_requeue(ex_job *j) {
    slurm_job *sj = j->impl;
    if (!sj->jobid[0]) return;
    for (;;) {
        char *next = attempt_dir(j, sj->jobid, sj->restart + 1);
        int there = is_dir(next);
        free(next);
        if (!there) break;
        read_events(j); /* the end of the run before */
        sj->restart++;
        reset_events(j);
        sj->told_running = 0;
        if (sj->quiet_requeues) continue;
        j->attempts++;
        store_handle(j);
        if (j->phase == EX_PH_RUNNING && j->attempts > j->cfg.max_job_retries + 1) {
            char why[256];
            snprintf(why, sizeof why, "Slurm requeued job %s %d time%s; the job was run %d times",
                     sj->jobid, sj->restart, sj->restart == 1 ? "" : "s", j->attempts);
            ex__begin_stop(j, EX_FAILED, why);
        } else {
            ex__emit(j, NULL, EX_EV_RETRYING, "Slurm requeued job %s (run %d of the job, attempt %d)",
                     sj->jobid, sj->restart + 1, j->attempts);
        }
    }
}

/* ---- outcome ---- */

/* Whether the launchers wrote an outcome for the current run: 1 with *outcome and
 * *error (yours, or NULL), *retry; 0 when there is none yet. */
static int got_outcome(ex_job *j, int *outcome, char **error, int *retry) {
    slurm_job *sj = j->impl;
    char *dir = attempt_dir(j, sj->jobid, sj->restart);
    char *path = tn_xasprintf("%s/outcome", dir);
    free(dir);
    json_t *o = json_load_file(path, 0, NULL);
    free(path);
    if (!o) return 0;
    const char *what = json_string_value(json_object_get(o, "outcome"));
    const char *err = json_string_value(json_object_get(o, "error"));
    *outcome = what && !strcmp(what, "succeeded") ? EX_SUCCEEDED : EX_FAILED;
    *retry = json_is_true(json_object_get(o, "retry"));
    *error = err ? tn_xstrdup(err) : NULL;
    json_decref(o);
    return 1;
}

/* The last lines of the batch output of the job, for messages ("" when none). */
static void batch_tail(const ex_job *j, char *buf, size_t len) {
    const slurm_job *sj = j->impl;
    buf[0] = '\0';
    char *path = tn_xasprintf("%s/slurm/slurm-%s.out", j->job_dir, sj->jobid);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    free(path);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        off_t from = st.st_size > 400 ? st.st_size - 400 : 0;
        char tail[401];
        ssize_t got = pread(fd, tail, sizeof tail - 1, from);
        if (got > 0) {
            tail[got] = '\0';
            while (got > 0 && (tail[got - 1] == '\n' || tail[got - 1] == ' ')) tail[--got] = '\0';
            const char *start = tail;
            for (int lines = 0; got > 0; got--) { /* the last three lines */
                if (tail[got - 1] == '\n' && ++lines == 3) {
                    start = tail + got;
                    break;
                }
            }
            snprintf(buf, len, "%s", start);
            for (char *p = buf; *p; p++)
                if (*p == '\n') *p = ' ';
        }
    }
    close(fd);
}

/* ---- submitting ---- */

static int submit(ex_job *j, char *err, size_t errlen);
static void send_scancel(ex_job *j);
static void lookup_then(ex_job *j);
static void take_job(ex_job *j, const char *id, const char *how);

/* The job ended without success and may run again: re-run it while retries are
 * left, else it fails with why. */
static void retry_or_fail(ex_job *j, const char *why) {
    char msg[4096];
    if (j->attempts <= j->cfg.max_job_retries) {
        ex__emit(j, NULL, EX_EV_RETRYING, "%s; re-running the job (attempt %d of %d)", why,
                 j->attempts + 1, j->cfg.max_job_retries + 1);
        /* its wait in the queue (the backoff's BeginTime) does not count: the timeout
         * goes on when the new job runs */
        ex__pause_timeout(j);
        char err[1024];
        if (submit(j, err, sizeof err) == 0) return;
        snprintf(msg, sizeof msg, "%s", err);
    } else { /* "WHY; the job was run N times", before the log lines WHY may end with */
        const char *log = strstr(why, "; its log (");
        int head = log ? (int)(log - why) : (int)strlen(why);
        snprintf(msg, sizeof msg, "%.*s; the job was run %d time%s%s", head, why, j->attempts,
                 j->attempts == 1 ? "" : "s", why + head);
    }
    ex__finish_as(j, EX_FAILED, msg);
}

static void on_scancel_gone(void *ctx, int status, const char *out, const char *errtext) {
    ex_job *j = ctx;
    slurm_job *sj = j->impl;
    sj->scancel_gone = NULL;
    if (status != 0 && !strstr(errtext, "Invalid job id")) /* that one: gone indeed */
        ex__notice(j, EX_EV_QUEUED, "scancel %s (a job squeue no longer lists) failed: %s",
                 sj->gone_id, errtext[0] ? errtext : "no message");
}

/* The job went missing from squeue's listings: cancel its id all the same before the
 * job runs again, since a listing can be wrong (a line squeue garbled, a controller
 * that answered from a stale state) and the old run may still be queued or running. */
static void cancel_gone(ex_job *j) {
    slurm_job *sj = j->impl;
    if (sj->scancel_gone) ex__cmd_abandon(sj->scancel_gone); /* an older one: rare */
    snprintf(sj->gone_id, sizeof sj->gone_id, "%s", sj->jobid);
    char *argv[] = {"scancel", sj->gone_id, NULL};
    sj->scancel_gone = ex__cmd_run(j->x, argv, CMD_TIMEOUT, on_scancel_gone, j);
}

/* The Slurm job left the queue in state `state` ("" when Slurm no longer knows it):
 * the trial's job is over, or runs again. */
static void job_ended(ex_job *j, const char *state) {
    slurm_job *sj = j->impl;
    follow_requeue(j);
    read_events(j);
    if (j->phase == EX_PH_DONE) return; /* the requeue limit ended it */
    char why[1024], tail[512];
    if (j->phase == EX_PH_STOPPING) { /* we stopped it: what the stop said */
        ex__finish(j);
        return;
    }
    int outcome, retry;
    char *error = NULL;
    if (got_outcome(j, &outcome, &error, &retry)) {
        if (outcome == EX_SUCCEEDED || !retry)
            ex__finish_as(j, outcome, error);
        else
            retry_or_fail(j, error ? error : "the job failed");
        free(error);
        return;
    }
    const char *id = sj->jobid;
    if (!strcmp(state, "TIMEOUT") || !strcmp(state, "DEADLINE")) {
        snprintf(why, sizeof why,
                 "Slurm job %s reached its time limit%s%s (state %s)\nhint: raise the spec's "
                 "executor.timeLimit",
                 id, j->x->o.slurm.time_limit ? " of " : "",
                 j->x->o.slurm.time_limit ? j->x->o.slurm.time_limit : "", state);
        ex__finish_as(j, EX_FAILED, why);
        return;
    }
    if (!strcmp(state, "OUT_OF_MEMORY")) {
        snprintf(why, sizeof why,
                 "Slurm job %s ran out of memory (state OUT_OF_MEMORY)\nhint: raise the "
                 "replicas' trainingInput.resources memory",
                 id);
        ex__finish_as(j, EX_FAILED, why);
        return;
    }
    if (!strcmp(state, "CANCELLED"))
        snprintf(why, sizeof why, "Slurm job %s was cancelled outside the tuner", id);
    else if (!strcmp(state, "PREEMPTED"))
        snprintf(why, sizeof why, "Slurm preempted job %s", id);
    else if (!strcmp(state, "NODE_FAIL") || !strcmp(state, "BOOT_FAIL"))
        snprintf(why, sizeof why, "a node of Slurm job %s failed (state %s)", id, state);
    else if (!state[0]) {
        snprintf(why, sizeof why, "Slurm no longer knows job %s and it left no outcome", id);
        cancel_gone(j); /* in case squeue was wrong: never two runs of the trial at once */
    }
    else {
        batch_tail(j, tail, sizeof tail);
        snprintf(why, sizeof why, "Slurm job %s ended %s before its replicas decided%s%s", id,
                 state, tail[0] ? ": " : "", tail);
    }
    retry_or_fail(j, why);
}

/* Whether sbatch's complaint is a passing one (the controller busy or away), worth
 * trying again, rather than a refusal of the job as configured. */
static int passing_failure(const char *msg) {
    static const char *const passing[] = {"Unable to contact", "Socket timed out",
                                           "temporarily unable", "temporarily unavailable",
                                           "Connection refused", "timed out",
                                           "Zero Bytes were transmitted"};
    for (size_t i = 0; i < sizeof passing / sizeof passing[0]; i++)
        if (strstr(msg, passing[i])) return 1;
    return 0;
}

/* A command's stderr as one line for a message: trailing newlines dropped, the
 * others made spaces ("no message" when empty). */
static void one_line(char *buf, size_t len, const char *text) {
    snprintf(buf, len, "%s", text && text[0] ? text : "no message");
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = '\0';
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
}

/* scancel's argument for every job of the trial, whatever its id: --name=PREFIX.TRIAL
 * (yours to free). */
static char *name_arg(const ex_job *j) {
    return tn_xasprintf("--name=%s.%s", j->x->o.slurm.job_prefix, j->trial);
}

/* Counts one more passing failure of submitting (sbatch's, or that of the look for
 * the job it may have queued) and, while tries are left, arms the timer that looks
 * for the job and submits it only if Slurm has none (on_resubmit): 1 with *wait, the
 * backoff; 0 when the tries are used up. */
static int try_later(ex_job *j, double *wait) {
    slurm_job *sj = j->impl;
    if (++sj->submit_tries >= MAX_SUBMIT_TRIES) return 0;
    *wait = j->x->o.slurm.retry_seconds * (double)(1 << (sj->submit_tries < 6 ? sj->submit_tries - 1 : 5));
    struct timeval tv = ex__timeval(*wait);
    evtimer_add(sj->resubmit_ev, &tv);
    return 1;
}

/* Submitting failed for passing reasons MAX_SUBMIT_TRIES times in a row (an outage of
 * the controller for minutes): nothing the trial did, and no trial of the study can
 * be submitted either, so the study stops with the trial back to PENDING (the path of
 * EX_REFUSED) rather than the trial failing for good. A job that a lost answer queued
 * all the same is a live job of the trial's name: `tuner resume` finds and cancels it. */
static void give_up_submitting(ex_job *j, const char *last) {
    char why[1400];
    snprintf(why, sizeof why,
             "the Slurm controller did not answer (%s); trial %s was not submitted in %d "
             "tries\nhint: `tuner resume %s` when `scontrol ping` works",
             last, j->trial, MAX_SUBMIT_TRIES, j->study);
    ex__finish_as(j, EX_REFUSED, why);
}

static void on_scancel_name(void *ctx, int status, const char *out, const char *errtext) {
    ex_job *j = ctx;
    slurm_job *sj = j->impl;
    sj->scancel_name = NULL;
    if (status == 0) { /* whatever sbatch may have queued is cancelled */
        ex__finish(j);
        return;
    }
    char msg[512], *name = name_arg(j);
    one_line(msg, sizeof msg, errtext);
    double wait;
    if (try_later(j, &wait)) {
        ex__emit(j, NULL, EX_EV_STOPPING, "scancel %s failed (%s); looking for the job again in %gs",
                 name, msg, wait);
    } else { /* the controller is away for good, it seems: say what may be left */
        ex__emit(j, NULL, EX_EV_STOPPING, "scancel %s failed (%s): a job of the trial that sbatch "
                 "queued may still run; `scancel %s` once `scontrol ping` works", name, msg, name);
        ex__finish(j);
    }
    free(name);
}

/* Stopping while no one knows whether a lost sbatch answer queued a job: cancel every
 * job of the trial's name (on_scancel_name finishes, or looks again). */
static void send_scancel_name(ex_job *j) {
    slurm_job *sj = j->impl;
    if (sj->scancel_name) return;
    char *name = name_arg(j);
    char *argv[] = {"scancel", name, NULL};
    sj->scancel_name = ex__cmd_run(j->x, argv, CMD_TIMEOUT, on_scancel_name, j);
    free(name);
}

/* The look for the job (squeue --name) failed: without knowing, submitting again could
 * run the trial twice, so wait and look again (counted against the tries); stopping,
 * cancel by name instead. */
static void lookup_failed(ex_job *j, const char *errtext) {
    slurm_job *sj = j->impl;
    char msg[512];
    one_line(msg, sizeof msg, errtext);
    if (sj->stop_requested) {
        send_scancel_name(j);
        return;
    }
    double wait;
    if (try_later(j, &wait)) {
        ex__notice(j, EX_EV_QUEUED, "cannot look for a job that sbatch may have queued "
                 "(squeue: %s), so not submitting again yet; looking again in %gs", msg, wait);
        return;
    }
    give_up_submitting(j, msg);
}

/* Whether scancel's complaint errtext says that it could not cancel job `id`: its
 * per-job line ("... job id 12: ...") unless that says the job is gone already
 * ("Invalid job id", "already completing or completed"); without per-job lines, any
 * complaint but those. */
static int scancel_failed_for(const char *errtext, const char *id) {
    if (!errtext || !errtext[0]) return 0;
    char key[48];
    snprintf(key, sizeof key, "job id %s:", id);
    const char *line = strstr(errtext, key);
    if (!line && strstr(errtext, "job id ")) return 0; /* lines for other jobs only */
    const char *from = line ? line : errtext;
    size_t len = line ? strcspn(line, "\n") : strlen(errtext);
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), from);
    return !strstr(buf, "Invalid job id") && !strstr(buf, "already completing or completed");
}

static void send_scancel_extra(ex_job *j);

static void on_scancel_extra(void *ctx, int status, const char *out, const char *errtext) {
    ex_job *j = ctx;
    slurm_job *sj = j->impl;
    sj->scancel_extra = NULL;
    char msg[512];
    one_line(msg, sizeof msg, errtext);
    for (size_t k = 0; sj->extra_sent[k]; k++) {
        const char *id = sj->extra_sent[k];
        if (status == 0 || !scancel_failed_for(errtext, id))
            ex__emit(j, NULL, EX_EV_STOPPING, "cancelled Slurm job %s, another live job of the "
                     "trial (a second submission)", id);
        else
            ex__notice(j, EX_EV_STOPPING, "could not cancel Slurm job %s, another live job of "
                       "the trial (a second submission): %s; `scancel %s`", id,
                       msg[0] ? msg : "no message", id);
    }
    ex_strv_free(sj->extra_sent);
    sj->extra_sent = NULL;
    if (sj->extra_ids) send_scancel_extra(j); /* copies found while it ran */
}

/* Asks for the cancelling of job `id`, a live copy of the trial's job that a lost
 * sbatch answer queued; send_scancel_extra sends what was asked. */
static void cancel_extra(ex_job *j, long id) {
    slurm_job *sj = j->impl;
    size_t n = 0;
    while (sj->extra_ids && sj->extra_ids[n]) n++;
    sj->extra_ids = tn_xrealloc(sj->extra_ids, (n + 2) * sizeof *sj->extra_ids);
    sj->extra_ids[n] = tn_xasprintf("%ld", id);
    sj->extra_ids[n + 1] = NULL;
}

/* One scancel for the copies asked for, without waiting (the controller is slow when
 * answers get lost); while one runs, the next waits for it (on_scancel_extra). */
/* "scancel" and the copies' ids, sent and to send (the strings are sj's; free only
 * the array). */
static char **extra_argv(const slurm_job *sj) {
    size_t n = 0, m = 0;
    while (sj->extra_sent && sj->extra_sent[n]) n++;
    while (sj->extra_ids && sj->extra_ids[m]) m++;
    char **argv = tn_xcalloc(n + m + 2, sizeof *argv);
    argv[0] = "scancel";
    if (n) memcpy(argv + 1, sj->extra_sent, n * sizeof *argv);
    if (m) memcpy(argv + 1 + n, sj->extra_ids, m * sizeof *argv);
    return argv;
}

static void send_scancel_extra(ex_job *j) {
    slurm_job *sj = j->impl;
    if (sj->scancel_extra || !sj->extra_ids) return;
    sj->extra_sent = sj->extra_ids;
    sj->extra_ids = NULL;
    char **argv = extra_argv(sj);
    sj->scancel_extra = ex__cmd_run(j->x, argv, CMD_TIMEOUT, on_scancel_extra, j);
    free(argv);
}

/* One Slurm job of the trial's name, as the look lists it. */
typedef struct named_job {
    long id;
    int live;        /* a component is not over */
} named_job;

/* After an sbatch failure that may not be one (a timed-out socket: the controller may
 * have queued the job before the answer was lost), look for the job by its name
 * before submitting again, so that a trial never runs twice: adopt the newest job
 * newer than any the trial had, and cancel every other live one (copies that lost
 * answers queued, whatever their id), else submit (or, stopping, finish). */
static void on_lookup(void *ctx, int status, const char *out, const char *errtext) {
    ex_job *j = ctx;
    slurm_job *sj = j->impl;
    sj->lookup = NULL;
    if (status != 0) {
        lookup_failed(j, errtext);
        return;
    }
    size_t n = 0, cap = 8;
    named_job *v = tn_xcalloc(cap, sizeof *v);
    for (const char *line = out; *line;) { /* "ID|STATE", or "ID+K|STATE" per component */
        size_t len = strcspn(line, "\n");
        const char *bar = memchr(line, '|', len);
        char state[32] = "";
        if (bar) snprintf(state, sizeof state, "%.*s", (int)(len - (size_t)(bar + 1 - line)), bar + 1);
        long id = bar ? strtol(line, NULL, 10) : 0;
        line += len + (line[len] == '\n');
        if (id <= 0) continue;
        size_t k = 0;
        while (k < n && v[k].id != id) k++;
        if (k == n) {
            if (n == cap) v = tn_xrealloc(v, (cap *= 2) * sizeof *v);
            v[n++] = (named_job){id, 0};
        }
        if (!is_terminal(state)) v[k].live = 1;
    }
    /* The trial's jobs newer than any it had are lost submissions', whatever their
     * state (a quick job may be over already: its outcome is read as usual). */
    long newest = 0;
    for (size_t k = 0; k < n; k++)
        if (v[k].id > sj->last_jobid && v[k].id > newest) newest = v[k].id;
    for (size_t k = 0; k < n; k++)
        if (v[k].live && v[k].id != newest) cancel_extra(j, v[k].id);
    send_scancel_extra(j); /* rare: one call for all of them */
    free(v);
    if (newest > 0) {
        char idbuf[32];
        snprintf(idbuf, sizeof idbuf, "%ld", newest);
        take_job(j, idbuf, ", found by its name after sbatch's answer was lost");
        return;
    }
    if (sj->stop_requested) {
        ex__finish(j);
        return;
    }
    char err[1024];
    if (submit(j, err, sizeof err) != 0) {
        ex__finish_as(j, EX_FAILED, err);
    }
}

static void lookup_then(ex_job *j) {
    slurm_job *sj = j->impl;
    char *name = name_arg(j);
    char *argv[] = {"squeue", "--noheader", "--states=all", "--format=%i|%T", name, NULL};
    sj->lookup = ex__cmd_run(j->x, argv, CMD_TIMEOUT, on_lookup, j);
    free(name);
}

static void on_resubmit(evutil_socket_t fd, short what, void *arg) { lookup_then(arg); }

static void on_scancel(void *ctx, int status, const char *out, const char *errtext) {
    ex_job *j = ctx;
    slurm_job *sj = j->impl;
    sj->scancel = NULL;
    sj->scancel_failed = status != 0;
    if (status != 0) /* tried again while squeue still shows the job (job_seen) */
        ex__emit(j, NULL, EX_EV_STOPPING, "scancel %s failed, will try again: %s", sj->jobid,
                 errtext[0] ? errtext : "no message");
}

static void send_scancel(ex_job *j) {
    slurm_job *sj = j->impl;
    if (sj->scancel || !sj->jobid[0]) return;
    char *argv[] = {"scancel", sj->jobid, NULL};
    sj->scancel = ex__cmd_run(j->x, argv, CMD_TIMEOUT, on_scancel, j);
}

/* Hands the job's handle (and so, through the caller, the attempts so far) to be
 * stored. */
static void store_handle(ex_job *j) {
    slurm_job *sj = j->impl;
    if (!sj->jobid[0]) return;
    char handle[48];
    snprintf(handle, sizeof handle, "slurm:%s", sj->jobid);
    ex__set_handle(j, handle, 1);
}

/* A Slurm job id becomes the job's (a submission, or one adopted after an ambiguous
 * sbatch failure). */
static void take_job(ex_job *j, const char *id, const char *how) {
    slurm_job *sj = j->impl;
    snprintf(sj->jobid, sizeof sj->jobid, "%s", id);
    if (atol(id) > sj->last_jobid) sj->last_jobid = atol(id);
    sj->restart = 0;
    sj->state[0] = '\0';
    sj->reason[0] = '\0';
    sj->told_running = 0;
    sj->missing = 0;
    sj->submit_tries = 0;
    sj->start_time = 0;
    j->attempts++;
    reset_events(j);
    store_handle(j);
    ex__emit(j, NULL, EX_EV_SUBMITTED, "Slurm job %s (attempt %d%s)", sj->jobid, j->attempts, how);
    if (sj->stop_requested) send_scancel(j);
}

/* The job id in what sbatch --parsable printed: the last line that is one ("ID" or
 * "ID;CLUSTER"), as a site's wrapper or job_submit plugin may print notices before it
 * ("NOTICE: project quota 80% used"); 0 when no line is. */
static long parsable_id(const char *out) {
    long id = 0;
    for (const char *line = out; *line;) {
        size_t len = strcspn(line, "\n");
        while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ')) len--;
        size_t digits = strspn(line, "0123456789");
        if (digits > 0 && digits < 19 && (digits == len || (line[digits] == ';' && digits + 1 < len)))
            id = strtol(line, NULL, 10);
        line += strcspn(line, "\n");
        if (*line) line++;
    }
    return id;
}

static void on_sbatch(void *ctx, int status, const char *out, const char *errtext) {
    ex_job *j = ctx;
    slurm_job *sj = j->impl;
    sj->sbatch = NULL;
    char msg[1024];
    /* Whether the job may exist though sbatch gave no id: a passing failure (the
     * answer lost), sbatch killed, or an answer without an id. */
    int ambiguous;
    if (status == 0) {
        long id = parsable_id(out);
        if (id > 0) {
            char idbuf[32];
            snprintf(idbuf, sizeof idbuf, "%ld", id);
            take_job(j, idbuf, "");
            return;
        }
        char said[300];
        one_line(said, sizeof said, out);
        snprintf(msg, sizeof msg, "sbatch exited 0 but printed no job id: '%s'", said);
        ambiguous = 1;
    } else {
        snprintf(msg, sizeof msg, "%s", errtext[0] ? errtext : "sbatch failed");
        size_t len = strlen(msg);
        while (len > 0 && msg[len - 1] == '\n') msg[--len] = '\0'; /* trailing newlines */
        if (WIFSIGNALED(status)) /* killed (our timeout): the job may exist all the same */
            snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " (sbatch %s)",
                     strstr(msg, "timed out") ? "timed out" : "was killed");
        ambiguous = WIFSIGNALED(status) || passing_failure(msg);
    }
    if (sj->stop_requested) { /* nothing was submitted, or the lookup finds and cancels it */
        lookup_then(j);
        return;
    }
    double wait;
    if (ambiguous && try_later(j, &wait)) {
        ex__notice(j, EX_EV_QUEUED, "sbatch failed (%s); trying again in %gs", msg, wait);
        return;
    }
    if (ambiguous) {
        give_up_submitting(j, msg);
        return;
    }
    char why[1400];
    snprintf(why, sizeof why, "Slurm refused the job of trial %s: %s\nhint: check the spec's "
             "executor fields (partition, account, qos, timeLimit, extraArgs) and the "
             "replicas' resources",
             j->trial, msg);
    ex__finish_as(j, EX_REFUSED, why);
}

/* The job components: replica types with the same cores, memory and GPUs share one.
 * group[t] gets the component of type t (-1: no replicas); returns how many. */
static int components(const ex_job_config *c, int group[TF_NTYPES]) {
    int rep[TF_NTYPES], n = 0; /* a type standing for each component */
    for (int t = 0; t < TF_NTYPES; t++) {
        group[t] = -1;
        if (c->count[t] == 0) continue;
        for (int g = 0; g < n && group[t] < 0; g++) {
            int o = rep[g];
            if (c->cores[o] == c->cores[t] && c->memory_mb[o] == c->memory_mb[t] &&
                c->gpus[o] == c->gpus[t])
                group[t] = g;
        }
        if (group[t] < 0) {
            rep[n] = t;
            group[t] = n++;
        }
    }
    return n;
}

static int write_text(const char *path, const char *text, mode_t mode, char *err, size_t errlen) {
    char *tmp = tn_xasprintf("%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    int rc = 0;
    if (fd < 0) {
        rc = tn_error(err, errlen, TN_EIO, "cannot write %s: %s", tmp, strerror(errno));
    } else {
        size_t len = strlen(text), off = 0;
        while (off < len && rc == 0) {
            ssize_t w = write(fd, text + off, len - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) rc = tn_error(err, errlen, TN_EIO, "cannot write %s: %s", tmp, strerror(errno));
            else off += (size_t)w;
        }
        if (close(fd) != 0 && rc == 0)
            rc = tn_error(err, errlen, TN_EIO, "cannot write %s: %s", tmp, strerror(errno));
        if (rc == 0 && rename(tmp, path) != 0)
            rc = tn_error(err, errlen, TN_EIO, "cannot rename %s: %s", tmp, strerror(errno));
        if (rc) unlink(tmp);
    }
    free(tmp);
    return rc;
}

/* Quotes s for sh: 'it'\''s'. Yours to free. */
static char *sh_quote(const char *s) {
    size_t n = 3;
    for (const char *p = s; *p; p++) n += *p == '\'' ? 4 : 1;
    char *q = tn_xmalloc(n), *o = q;
    *o++ = '\'';
    for (const char *p = s; *p; p++) {
        if (*p == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *p;
        }
    }
    *o++ = '\'';
    *o = '\0';
    return q;
}

/* Writes JOB_DIR/slurm/job.json (what the launchers need) and job.sh. */
static int write_job_files(ex_job *j, const int group[TF_NTYPES], char *err, size_t errlen) {
    const ex_job_config *c = &j->cfg;
    char *dir = tn_xasprintf("%s/slurm", j->job_dir);
    int rc = tn_make_dirs(dir, err, errlen);
    free(dir);
    if (rc) return rc;
    json_t *argv = json_array();
    for (size_t i = 0; j->argv[i]; i++) json_array_append_new(argv, json_string(j->argv[i]));
    json_t *count = json_array(), *cores = json_array(), *gpus = json_array(),
           *mem = json_array(), *het = json_array();
    int ncomp = 0;
    for (int t = 0; t < TF_NTYPES; t++) ncomp = group[t] + 1 > ncomp ? group[t] + 1 : ncomp;
    for (int t = 0; t < TF_NTYPES; t++) {
        json_array_append_new(count, json_integer(c->count[t]));
        json_array_append_new(cores, json_integer(c->cores[t] > 0 ? c->cores[t] : 1));
        json_array_append_new(gpus, json_integer(c->gpus[t]));
        json_array_append_new(mem, json_integer(c->memory_mb[t]));
        json_array_append_new(het, json_integer(ncomp > 1 ? group[t] : -1));
    }
    json_t *doc = json_pack("{s:i, s:s, s:s, s:s, s:s, s:o, s:O?, s:b, s:o, s:o, s:o, s:o, s:o, "
                            "s:i, s:f, s:f}",
                            "version", 1, "study", j->study, "trial", j->trial, "metric_tag",
                            j->metric_tag, "job_dir", j->job_dir, "argv", argv, "job", j->job,
                            "use_chief_name", c->use_chief_name, "count", count, "cores", cores,
                            "gpus", gpus, "memory_mb", mem, "het_group", het,
                            "max_replica_restarts", c->max_replica_restarts, "grace_seconds",
                            c->grace_seconds, "rendezvous_seconds", 600.0);
    if (!doc) return tn_error(err, errlen, TN_EIO, "cannot describe the job (out of memory)");
    json_t *env = json_array();
    for (int t = 0; t < TF_NTYPES; t++) {
        json_t *list = json_array();
        for (size_t i = 0; c->env[t] && c->env[t][i]; i++)
            json_array_append_new(list, json_string(c->env[t][i]));
        json_array_append_new(env, list);
    }
    json_object_set_new(doc, "env", env);
    json_object_set_new(doc, "restart_backoff", json_real(c->restart_backoff));
    json_object_set_new(doc, "restart_backoff_max", json_real(c->restart_backoff_max));
    json_object_set_new(doc, "fail_on_repeat", json_boolean(c->fail_on_repeat));
    char *text = json_dumps(doc, JSON_INDENT(2));
    json_decref(doc);
    if (!text) return tn_error(err, errlen, TN_EIO, "cannot describe the job (out of memory)");
    char *json_path = job_file(j, "job.json");
    rc = write_text(json_path, text, 0644, err, errlen);
    free(text);
    if (rc == 0) {
        char *launcher = sh_quote(j->x->o.slurm.launcher), *qjson = sh_quote(json_path);
        char *script = tn_xasprintf("#!/bin/sh\n# trial %s of study %s, written by tuner\n"
                                    "exec %s job %s\n",
                                    j->trial, j->study, launcher, qjson);
        char *sh_path = job_file(j, "job.sh");
        rc = write_text(sh_path, script, 0755, err, errlen);
        free(sh_path);
        free(script);
        free(launcher);
        free(qjson);
    }
    free(json_path);
    return rc;
}

/* s with every '%' doubled (yours to free). */
static char *percent_escaped(const char *s) {
    size_t n = strlen(s) + 1;
    for (const char *p = s; *p; p++) n += *p == '%';
    char *out = tn_xmalloc(n), *o = out;
    for (const char *p = s; *p; p++) {
        *o++ = *p;
        if (*p == '%') *o++ = '%';
    }
    *o = '\0';
    return out;
}

/* The sbatch command line of the job: yours to ex_strv_free. */
static char **sbatch_argv(const ex_job *j, const int group[TF_NTYPES], int ncomp) {
    const ex_job_config *c = &j->cfg;
    const ex_slurm_options *o = &j->x->o.slurm;
    size_t cap = 9 + (size_t)ncomp * (12 + o->nextra), n = 0;
    char **argv = tn_xcalloc(cap, sizeof *argv);
    argv[n++] = tn_xstrdup("sbatch");
    argv[n++] = tn_xstrdup("--parsable");
    argv[n++] = tn_xasprintf("--job-name=%s.%s", o->job_prefix, j->trial);
    char *dir = percent_escaped(j->job_dir); /* sbatch expands % in --output */
    argv[n++] = tn_xasprintf("--output=%s/slurm/slurm-%%j.out", dir);
    free(dir);
    argv[n++] = tn_xstrdup("--open-mode=append");
    /* a re-run waits out its backoff in the queue (reason BeginTime) */
    double pause = ex_backoff(c->restart_backoff, c->restart_backoff_max, j->attempts);
    if (pause > 0) argv[n++] = tn_xasprintf("--begin=now+%d", (int)ceil(pause));
    for (int g = 0; g < ncomp; g++) {
        if (g > 0) argv[n++] = tn_xstrdup(":");
        int tasks = 0, t0 = -1;
        for (int t = 0; t < TF_NTYPES; t++) {
            if (group[t] != g) continue;
            tasks += c->count[t];
            if (t0 < 0) t0 = t;
        }
        int cores = c->cores[t0] > 0 ? c->cores[t0] : 1;
        argv[n++] = tn_xasprintf("--ntasks=%d", tasks);
        argv[n++] = tn_xasprintf("--cpus-per-task=%d", cores);
        if (c->memory_mb[t0] > 0)
            argv[n++] = tn_xasprintf("--mem-per-cpu=%dM", /* rounded up, without overflow */
                                     c->memory_mb[t0] / cores + (c->memory_mb[t0] % cores != 0));
        if (c->gpus[t0] > 0) argv[n++] = tn_xasprintf("--gpus-per-task=%d", c->gpus[t0]);
        if (o->partition) argv[n++] = tn_xasprintf("--partition=%s", o->partition);
        if (o->account) argv[n++] = tn_xasprintf("--account=%s", o->account);
        if (o->qos) argv[n++] = tn_xasprintf("--qos=%s", o->qos);
        if (o->time_limit) argv[n++] = tn_xasprintf("--time=%s", o->time_limit);
        for (size_t i = 0; i < o->nextra; i++) argv[n++] = tn_xstrdup(o->extra_args[i]);
    }
    argv[n++] = job_file(j, "job.sh");
    argv[n] = NULL;
    return argv;
}

/* Writes the job's files and runs sbatch (answered in on_sbatch). 0, or a negative
 * code with a message. */
static int submit(ex_job *j, char *err, size_t errlen) {
    slurm_job *sj = j->impl;
    int group[TF_NTYPES];
    int ncomp = components(&j->cfg, group);
    int rc = write_job_files(j, group, err, errlen);
    if (rc) return rc;
    sj->jobid[0] = '\0';
    reset_events(j);
    char **argv = sbatch_argv(j, group, ncomp);
    sj->sbatch = ex__cmd_run(j->x, argv, CMD_TIMEOUT, on_sbatch, j);
    ex_strv_free(argv);
    return 0;
}

/* ---- watching ---- */

/* What squeue says of one job. A heterogeneous job has a line per component
 * ("ID+K"): while any component is active, the job is, with that component's state;
 * once all are over, the leader's (+0) state speaks for it. */
typedef struct job_state {
    char id[32];
    char state[32];
    char reason[128];
    char nodes[256];
    double start;     /* when it started (seconds since the epoch), 0: not (yet) known */
    int active;
} job_state;

/* squeue's start time ("2026-11-24T00:43:50", local time; "N/A" before it is known) as
 * seconds since the epoch, or 0. */
static double start_seconds(const char *text) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end || *end) return 0;
    tm.tm_isdst = -1;
    time_t t = mktime(&tm);
    return t == (time_t)-1 ? 0 : (double)t;
}

static void on_squeue(void *ctx, int status, const char *out, const char *errtext);

static void squeue_all(ex_executor *x);

/* One squeue a poll interval: the timer is armed again only as this one starts, so two
 * calls are never closer than the interval, however late a tick comes. */
static void on_tick(evutil_socket_t fd, short what, void *arg) {
    ex_executor *x = arg;
    slurm_exec *se = x->impl;
    struct timeval tv = ex__timeval(x->o.slurm.poll_seconds);
    evtimer_add(se->tick, &tv);
    squeue_all(x);
}

static void squeue_all(ex_executor *x) {
    slurm_exec *se = x->impl;
    if (se->squeue) return; /* the last one is still running: never two at once */
    size_t n = 0, len = 0;
    for (size_t i = 0; i < x->njobs; i++) {
        slurm_job *sj = x->jobs[i]->impl;
        if (sj && sj->jobid[0] && x->jobs[i]->phase != EX_PH_DONE) {
            n++;
            len += strlen(sj->jobid) + 1;
        }
    }
    if (n == 0) return;
    ex_strv_free(se->queried);
    se->queried = tn_xcalloc(n + 1, sizeof *se->queried);
    se->nqueried = 0;
    char *ids = tn_xcalloc(len + 1, 1);
    for (size_t i = 0; i < x->njobs; i++) {
        slurm_job *sj = x->jobs[i]->impl;
        if (!sj || !sj->jobid[0] || x->jobs[i]->phase == EX_PH_DONE) continue;
        if (ids[0]) strcat(ids, ",");
        strcat(ids, sj->jobid);
        se->queried[se->nqueried++] = tn_xstrdup(sj->jobid);
    }
    char *argv[] = {"squeue", "--noheader", "--states=all", "--format=%i|%T|%r|%N|%S", "--jobs",
                    ids, NULL};
    se->squeue = ex__cmd_run(x, argv, CMD_TIMEOUT, on_squeue, x);
    free(ids);
}

/* Parses squeue's "ID|STATE|REASON|NODES|START" lines into one state per job (an
 * array that is yours to free). */
static job_state *parse_squeue(const char *out, size_t *n) {
    size_t cap = 16;
    job_state *v = tn_xcalloc(cap, sizeof *v);
    *n = 0;
    const char *line = out;
    while (*line) {
        /* the whole line, however long: a job on many nodes has a long %N, and a line
         * cut short would lose its last fields and the job seem gone */
        size_t len = strcspn(line, "\n");
        char *buf = tn_xmalloc(len + 1);
        memcpy(buf, line, len);
        buf[len] = '\0';
        line += len + (line[len] == '\n');
        char *f[5] = {buf, NULL, NULL, NULL, NULL};
        for (int k = 1; k < 5; k++) {
            char *bar = strchr(f[k - 1], '|');
            if (!bar) break;
            *bar = '\0';
            f[k] = bar + 1;
        }
        if (!f[4]) {
            free(buf);
            continue;
        }
        char id[32];
        snprintf(id, sizeof id, "%.*s", (int)strspn(f[0], "0123456789"), f[0]);
        if (!id[0]) {
            free(buf);
            continue;
        }
        const char *plus = strchr(f[0], '+');
        int leader = !plus || atoi(plus + 1) == 0, active = !is_terminal(f[1]);
        job_state *s = NULL;
        for (size_t i = 0; i < *n && !s; i++)
            if (!strcmp(v[i].id, id)) s = &v[i];
        if (!s) {
            if (*n == cap) v = tn_xrealloc(v, (cap *= 2) * sizeof *v);
            s = &v[(*n)++];
            memset(s, 0, sizeof *s);
            snprintf(s->id, sizeof s->id, "%s", id);
        } else if ((s->active && !(active && leader)) || /* an active component speaks */
                   (!s->active && !active && !leader)) {  /* over: the leader speaks */
            free(buf);
            continue;
        }
        snprintf(s->state, sizeof s->state, "%s", f[1]);
        snprintf(s->reason, sizeof s->reason, "%s", f[2]);
        snprintf(s->nodes, sizeof s->nodes, "%s", f[3]); /* a long list cut short: shown only */
        s->start = start_seconds(f[4]);
        s->active = active;
        free(buf);
    }
    return v;
}

/* Queue reasons a pending job never leaves by waiting (docs/slurm.md): the hint for
 * each, or NULL for a reason that may pass (resources, priority, a begin time). */
static const char *hopeless_reason(const char *reason) {
    static const struct {
        const char *reason, *hint;
    } hopeless[] = {
        {"PartitionTimeLimit", "executor.timeLimit is above the partition's MaxTime (`scontrol "
                               "show partition`): lower it, or pick another executor.partition"},
        {"PartitionNodeLimit", "the job asks for more nodes than the partition allows, or its "
                               "nodes are down or drained (`scontrol show partition`, `sinfo "
                               "-R`): fewer or smaller replicas, or another executor.partition"},
        {"BadConstraints", "no node of the partition has what the job asks for: check "
                           "executor.extraArgs (--constraint, --gres) and the replicas' resources"},
        {"DependencyNeverSatisfied", "the job depends on a job that can no longer satisfy it: "
                                     "drop the --dependency of executor.extraArgs"},
        {"InvalidAccount", "Slurm does not take executor.account (`sacctmgr show assoc "
                           "user=$USER`): fix or drop it"},
        {"InvalidQOS", "Slurm does not take executor.qos for this account: fix or drop it"},
        {"JobHeldAdmin", "an administrator holds the job: ask them why"},
    };
    for (size_t i = 0; i < sizeof hopeless / sizeof hopeless[0]; i++)
        if (!strcmp(reason, hopeless[i].reason)) return hopeless[i].hint;
    return NULL;
}

/* Whether a job that is not running waits only for its turn (or for what its spec asked
 * for: a dependency, a begin time): its changes are stored, not told. Anything else (held,
 * nodes down, drained or reserved, a limit of the account) is worth telling the user at
 * once, as the study may not move until someone acts. */
static int routine_wait(const job_state *s) {
    static const char *const routine[] = {"None",       "Priority",  "Resources",
                                          "BeginTime",  "Dependency", ""};
    if (strcmp(s->state, "PENDING") != 0) return 1; /* REQUEUED, SUSPENDED...: stored */
    for (size_t i = 0; i < sizeof routine / sizeof routine[0]; i++)
        if (!strcmp(s->reason, routine[i])) return 1;
    return 0;
}

static void job_seen(ex_job *j, const job_state *s) {
    slurm_job *sj = j->impl;
    sj->missing = 0;
    follow_requeue(j);
    if (j->phase == EX_PH_DONE) return;
    if (!s->active) {
        snprintf(sj->state, sizeof sj->state, "%s", s->state);
        job_ended(j, s->state);
        return;
    }
    if (j->phase == EX_PH_STOPPING && sj->scancel_failed) { /* still there: again */
        sj->scancel_failed = 0;
        send_scancel(j);
    }
    const char *hint = !strcmp(s->state, "PENDING") ? hopeless_reason(s->reason) : NULL;
    if (hint && j->phase == EX_PH_RUNNING) {
        /* It would pend forever, and so would every trial of the study: a refusal, as
         * sbatch's own (the study stops, the trial back to PENDING), once cancelled. */
        char why[1024];
        snprintf(why, sizeof why, "Slurm job %s of trial %s can never start: it pends with "
                 "reason %s\nhint: %s", sj->jobid, j->trial, s->reason, hint);
        ex__begin_stop(j, EX_REFUSED, why);
        return;
    }
    int running = !strcmp(s->state, "RUNNING") || !strcmp(s->state, "COMPLETING");
    if (running) /* the trial timeout counts from the start, not the time queued */
        ex__arm_timeout(j, s->start > 0 ? ex__now() - s->start : 0);
    if (running && !sj->told_running) {
        sj->told_running = 1;
        ex__emit(j, NULL, EX_EV_RUNNING, "Slurm job %s running on %s", sj->jobid, s->nodes);
    } else if (!running && (strcmp(sj->state, s->state) != 0 || strcmp(sj->reason, s->reason) != 0)) {
        if (!strcmp(s->state, "PENDING") || !strcmp(s->state, "REQUEUED")) sj->told_running = 0;
        if (routine_wait(s))
            ex__emit(j, NULL, EX_EV_QUEUED, "Slurm job %s %s (%s)", sj->jobid, s->state, s->reason);
        else
            ex__notice(j, EX_EV_QUEUED, "Slurm job %s %s (%s)", sj->jobid, s->state, s->reason);
    }
    snprintf(sj->state, sizeof sj->state, "%s", s->state);
    snprintf(sj->reason, sizeof sj->reason, "%s", s->reason);
}

static void on_squeue(void *ctx, int status, const char *out, const char *errtext) {
    ex_executor *x = ctx;
    slurm_exec *se = x->impl;
    se->squeue = NULL;
    /* "Invalid job id specified": squeue knows none of them (all purged) */
    int none_known = status != 0 && strstr(errtext, "Invalid job id");
    if (status != 0 && !none_known) {
        if (!se->failing) { /* say it once per outage, on every job */
            se->failing = 1;
            for (size_t i = 0; i < x->njobs; i++)
                ex__notice(x->jobs[i], EX_EV_QUEUED, "squeue failed, will keep asking: %.300s",
                           errtext);
        }
        return;
    }
    se->failing = 0;
    size_t n;
    job_state *states = parse_squeue(none_known ? "" : out, &n);
    /* jobs may end (and be freed) as we go: walk a copy of the list */
    size_t njobs = x->njobs;
    ex_job **jobs = tn_xcalloc(njobs + 1, sizeof *jobs);
    memcpy(jobs, x->jobs, njobs * sizeof *jobs);
    for (size_t i = 0; i < njobs; i++) {
        ex_job *j = jobs[i];
        int still = 0;
        for (size_t k = 0; k < x->njobs && !still; k++) still = x->jobs[k] == j;
        if (!still || j->phase == EX_PH_DONE) continue;
        slurm_job *sj = j->impl;
        int asked = 0;
        for (size_t q = 0; q < se->nqueried && !asked; q++) asked = !strcmp(se->queried[q], sj->jobid);
        if (!asked) continue; /* submitted since the call began */
        const job_state *s = NULL;
        for (size_t k = 0; k < n && !s; k++)
            if (!strcmp(states[k].id, sj->jobid)) s = &states[k];
        if (s) {
            job_seen(j, s);
        } else if (++sj->missing >= 2) { /* gone from Slurm's memory */
            job_ended(j, "");
        }
    }
    free(jobs);
    free(states);
}

/* ---- backend operations ---- */

static slurm_job *job_impl_new(ex_job *j) {
    slurm_job *sj = tn_xcalloc(1, sizeof *sj);
    j->impl = sj;
    sj->resubmit_ev = evtimer_new(j->x->base, on_resubmit, j);
    return sj;
}

static int slurm_start(ex_job *j, char *err, size_t errlen) {
    job_impl_new(j);
    return submit(j, err, errlen);
}

/* The modification time of job id's newest run folder in the trial's slurm folder,
 * or 0 when it has none (it never ran). */
static double run_mtime(const ex_job *j, long id) {
    double t = 0;
    for (int restart = 0;; restart++) {
        char buf[32];
        snprintf(buf, sizeof buf, "%ld", id);
        char *dir = attempt_dir(j, buf, restart);
        struct stat st;
        int there = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
        free(dir);
        if (!there) break;
        t = (double)st.st_mtim.tv_sec + 1e-9 * (double)st.st_mtim.tv_nsec;
    }
    return t;
}

/* A later job of the trial than `than` (the stored one) that ran, by the run folders
 * its launchers made ("ID-RESTART" in the trial's slurm folder); 0 when there is none
 * or the stored job is the one to attach to: it is still live (slurm_recover listed
 * it), or the later folder is older than its own (ids that wrapped at MaxJobId). */
static long later_run(const ex_job *j, long than) {
    const slurm_exec *se = j->x->impl;
    for (size_t k = 0; se->recovered && k < se->nlive; k++)
        if (se->live[k] == than) return 0;
    char *dir = job_file(j, "");
    DIR *d = opendir(dir);
    free(dir);
    long newest = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t digits = strspn(e->d_name, "0123456789");
        if (digits == 0 || digits > 18 || e->d_name[digits] != '-' ||
            strspn(e->d_name + digits + 1, "0123456789") != strlen(e->d_name + digits + 1) ||
            !e->d_name[digits + 1])
            continue;
        long id = strtol(e->d_name, NULL, 10);
        if (id > than && id > newest) newest = id;
    }
    if (d) closedir(d);
    double stored = newest > 0 ? run_mtime(j, than) : 0;
    if (newest > 0 && stored > 0 && run_mtime(j, newest) < stored) return 0;
    return newest;
}

static void slurm_attach(ex_job *j, const char *handle, const ex_seen *seen, size_t nseen,
                         int *attached) {
    *attached = 0;
    if (strncmp(handle, "slurm:", 6) != 0) return;
    const char *id = handle + 6;
    if (!id[0] || strspn(id, "0123456789") != strlen(id) || strlen(id) >= 19) return;
    slurm_job *sj = job_impl_new(j);
    sj->seen = tn_xcalloc(nseen + 1, sizeof *sj->seen);
    for (size_t i = 0; i < nseen; i++)
        sj->seen[i] = (ex_seen){seen[i].replica ? tn_xstrdup(seen[i].replica) : NULL, seen[i].time};
    sj->nseen = nseen;
    /* A later job of the trial ran while no tuner did, its id never stored (the tuner
     * died between sbatch's answer and storing it, or before looking for the job of a
     * lost answer): the handle's job was over then (a trial is re-run once its job is),
     * and attaching to it would run the trial once more. Take the later one. */
    long later = later_run(j, atol(id));
    char how[160] = "re-attached";
    if (later > 0) {
        snprintf(sj->jobid, sizeof sj->jobid, "%ld", later);
        snprintf(how, sizeof how, "re-attached: a later job of the trial than the stored "
                 "job %s, which ran while no tuner did", id);
        j->attempts++;
    } else {
        snprintf(sj->jobid, sizeof sj->jobid, "%s", id);
    }
    sj->last_jobid = atol(sj->jobid); /* a look after a re-run's lost answer must not adopt it */
    sj->restart = 0;
    reset_events(j);
    sj->quiet_requeues = 1; /* runs before now were counted (or cannot be told apart) */
    follow_requeue(j);      /* the newest run's files */
    sj->quiet_requeues = 0;
    char now[48];
    snprintf(now, sizeof now, "slurm:%s", sj->jobid);
    ex__set_handle(j, now, 0); /* the caller stores it if it is not the one it has */
    if (later > 0)
        ex__notice(j, EX_EV_SUBMITTED, "Slurm job %s (%s)", sj->jobid, how);
    else
        ex__emit(j, NULL, EX_EV_SUBMITTED, "Slurm job %s (%s)", sj->jobid, how);
    *attached = 1;
}

/* Whether the current run is over as far as the trial goes: its outcome is written
 * and every replica has exited (the job itself may still be leaving the queue). */
static int run_over(ex_job *j) {
    slurm_job *sj = j->impl;
    for (size_t i = 0; i < j->nreps; i++) /* the replicas; the job's own file aside */
        if (!sj->ev[i].exited) return 0;
    char *dir = attempt_dir(j, sj->jobid, sj->restart);
    char *path = tn_xasprintf("%s/outcome", dir);
    int decided = access(path, F_OK) == 0;
    free(path);
    free(dir);
    return decided;
}

static void slurm_poll(ex_job *j) {
    slurm_job *sj = j->impl;
    if (!sj || !sj->jobid[0]) return;
    follow_requeue(j);
    read_events(j);
    /* Learn of the end from the job's files, as soon as the launchers wrote it, rather
     * than at the next squeue: the trial's outcome does not wait for Slurm to clean the
     * job up. A job we are stopping waits for Slurm, so nothing is left in the queue. */
    if (j->phase == EX_PH_RUNNING && sj->nev > 0 && run_over(j)) job_ended(j, "");
}

static void slurm_stop(ex_job *j) {
    slurm_job *sj = j->impl;
    sj->stop_requested = 1;
    if (evtimer_pending(sj->resubmit_ev, NULL)) {
        /* Between two tries: the failure before may have queued a job all the same (a
         * lost answer), so look for it now; on_lookup cancels what it finds, or cancels
         * by name when it cannot look, and finishes once nothing is left. */
        evtimer_del(sj->resubmit_ev);
        ex__emit(j, NULL, EX_EV_STOPPING, "%s: looking for a job that sbatch may have queued",
                 j->stop_error ? j->stop_error : "the job is over");
        lookup_then(j);
        return;
    }
    ex__emit(j, NULL, EX_EV_STOPPING, "%s%s%s", j->stop_error ? j->stop_error : "the job is over",
             sj->jobid[0] ? ": scancel " : "", sj->jobid);
    send_scancel(j); /* without an id yet, on_sbatch sends it */
}

/* Whether a job of this trial may exist that we have no id for: sbatch in flight, or
 * failed in a way that does not say (waiting to try again, or looking). */
static int unknown_job(const ex_job *j) {
    const slurm_job *sj = j->impl;
    return sj->sbatch || sj->lookup || sj->scancel_name || evtimer_pending(sj->resubmit_ev, NULL);
}

/* Whether the trial's Slurm job (known or not) must still be cancelled when the job
 * is freed now. */
static int needs_cancel(const ex_job *j) {
    const slurm_job *sj = j->impl;
    return !sj->aborted && (unknown_job(j) ||
                            (j->phase != EX_PH_DONE && sj->jobid[0] && !is_terminal(sj->state)));
}

static int slurm_release(ex_job *j) {
    slurm_job *sj = j->impl;
    if (!sj) return 0;
    int rc = sj->abort_failed ? TN_EIO : 0; /* slurm_abort's scancel did not say it worked */
    if (needs_cancel(j)) {
        char *name = name_arg(j);
        char *by_name[] = {"scancel", name, NULL}, *by_id[] = {"scancel", sj->jobid, NULL};
        if (ex__cmd_sync(unknown_job(j) ? by_name : by_id, CMD_TIMEOUT, NULL, NULL) != 0)
            rc = TN_EIO;
        free(name);
    }
    ex__cmd_abandon(sj->sbatch);
    ex__cmd_abandon(sj->lookup);
    ex__cmd_abandon(sj->scancel);
    ex__cmd_abandon(sj->scancel_name);
    if (sj->scancel_gone) { /* still on its way: finish it here rather than drop it */
        ex__cmd_abandon(sj->scancel_gone);
        char *gone[] = {"scancel", sj->gone_id, NULL};
        ex__cmd_sync(gone, CMD_TIMEOUT, NULL, NULL);
    }
    if (sj->scancel_extra || sj->extra_ids) { /* the copies' scancel: the same */
        ex__cmd_abandon(sj->scancel_extra);
        char **argv = extra_argv(sj), *errtext = NULL;
        if (ex__cmd_sync(argv, CMD_TIMEOUT, NULL, &errtext) != 0)
            for (size_t k = 1; argv[k]; k++)
                if (scancel_failed_for(errtext, argv[k])) rc = TN_EIO;
        free(errtext);
        free(argv);
    }
    ex_strv_free(sj->extra_sent);
    ex_strv_free(sj->extra_ids);
    event_free(sj->resubmit_ev);
    for (size_t i = 0; i < sj->nev; i++) free(sj->ev[i].path);
    free(sj->ev);
    for (size_t i = 0; i < sj->nseen; i++) free((char *)sj->seen[i].replica);
    free(sj->seen);
    free(sj);
    j->impl = NULL;
    return rc;
}

/* Appends text to the growing string *s (yours to free). */
static void append(char **s, const char *text) {
    char *t = tn_xasprintf("%s%s", *s ? *s : "", text);
    free(*s);
    *s = t;
}

/* Cancels every job of the executor that is still queued or running, in one scancel
 * (a second Ctrl-C, a fatal error): freeing them then cancels nothing more. When a
 * scancel fails (the controller away), the jobs it named may still run: they are
 * marked (slurm_release says so of each) and the message names them and the scancel
 * to send once the controller answers. */
static int slurm_abort(ex_executor *x, char *err, size_t errlen) {
    size_t n = 0;
    char **argv = tn_xcalloc(x->njobs + 2, sizeof *argv);
    argv[n++] = "scancel";
    char *names_failed = NULL, *last_error = NULL, *study = NULL;
    for (size_t i = 0; i < x->njobs; i++) {
        ex_job *j = x->jobs[i];
        slurm_job *sj = j->impl;
        if (!sj || !needs_cancel(j)) continue;
        if (!study) study = j->study;
        if (unknown_job(j)) { /* by name: rare, one call each */
            char *name = name_arg(j), *errtext = NULL;
            char *by_name[] = {"scancel", name, NULL};
            if (ex__cmd_sync(by_name, CMD_TIMEOUT, NULL, &errtext) != 0) {
                sj->abort_failed = 1;
                append(&names_failed, " ");
                append(&names_failed, name);
                free(last_error);
                last_error = errtext;
                errtext = NULL;
            }
            free(errtext);
            free(name);
        } else {
            argv[n++] = sj->jobid;
        }
        sj->aborted = 1;
    }
    char *ids_failed = NULL;
    if (n > 1) {
        char *errtext = NULL;
        if (ex__cmd_sync(argv, CMD_TIMEOUT, NULL, &errtext) != 0) {
            for (size_t i = 0; i < x->njobs; i++) {
                slurm_job *sj = x->jobs[i]->impl;
                for (size_t k = 1; sj && k < n; k++)
                    if (argv[k] == sj->jobid) sj->abort_failed = 1;
            }
            for (size_t k = 1; k < n; k++) {
                append(&ids_failed, " ");
                append(&ids_failed, argv[k]);
            }
            free(last_error);
            last_error = errtext;
            errtext = NULL;
        }
        free(errtext);
    }
    int rc = 0;
    if (ids_failed || names_failed) { /* "jobs 27 28 and those named P.3 may still run" */
        char why[512];
        one_line(why, sizeof why, last_error);
        char *cmds = NULL, *names = NULL;
        if (ids_failed) {
            append(&cmds, "`scancel");
            append(&cmds, ids_failed);
            append(&cmds, "`");
        }
        for (char *p = names_failed; p && *p;) { /* " --name=A --name=B" */
            size_t len = strcspn(p + 1, " ") + 1;
            char *one = tn_xasprintf("%s`scancel%.*s`", cmds ? " and " : "", (int)len, p);
            append(&cmds, one);
            free(one);
            one = tn_xasprintf("%s%.*s", names ? ", " : " named ", (int)len - 8, p + 8);
            append(&names, one);
            free(one);
            p += len;
        }
        rc = tn_error(err, errlen, TN_EIO,
                      "scancel failed: jobs%s%s%s may still run; `tuner resume %s` or %s (%s)",
                      ids_failed ? ids_failed : "", ids_failed && names ? " and those" : "",
                      names ? names : "", study, cmds, why);
        free(cmds);
        free(names);
    }
    free(ids_failed);
    free(names_failed);
    free(last_error);
    free(argv);
    return rc;
}

static void slurm_free(ex_executor *x) {
    slurm_exec *se = x->impl;
    if (!se) return;
    ex__cmd_abandon(se->squeue);
    event_free(se->tick);
    ex_strv_free(se->queried);
    free(se->live);
    free(se);
    x->impl = NULL;
}

static int check_commands(const ex_slurm_options *o, char *err, size_t errlen) {
    static const char *const cmds[] = {"sbatch", "squeue", "scancel", "sinfo"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!ex_on_path(cmds[i]))
            return tn_error(err, errlen, TN_EINVAL,
                            "the Slurm executor needs %s, which is not on PATH\nhint: install "
                            "Slurm's client commands (Debian: slurm-client) and set SLURM_CONF if "
                            "the cluster needs it, or use the local executor",
                            cmds[i]);
    if (!o->launcher || access(o->launcher, X_OK) != 0)
        return tn_error(err, errlen, TN_EINVAL,
                        "the Slurm executor needs tuner-launch beside tuner, but %s is %s\n"
                        "hint: build the project (cmake --build), which puts it beside tuner",
                        o->launcher ? o->launcher : "(none)",
                        o->launcher ? "not an executable" : "not given");
    if (!o->job_prefix) return tn_error(err, errlen, TN_EINVAL, "no Slurm job name prefix");
    return 0;
}

int ex__slurm_init(ex_executor *x, char *err, size_t errlen) {
    int rc = check_commands(&x->o.slurm, err, errlen);
    if (rc) return rc;
    slurm_exec *se = tn_xcalloc(1, sizeof *se);
    x->impl = se;
    se->tick = evtimer_new(x->base, on_tick, x);
    struct timeval tv = ex__timeval(x->o.slurm.poll_seconds);
    evtimer_add(se->tick, &tv);
    return 0;
}

/* Largest "gpu" count of a gres string ("gpu:4", "gpu:a100:2(S:0-1),shard:8"). */
/* Whether name is one of the comma-separated names of list. */
static int in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && !strncmp(p, name, n)) return 1;
        p += k + (p[k] == ',');
    }
    return 0;
}

/* The first name of the comma-separated list that is not among known ("a, b, c"), or
 * NULL when all are (an empty name counts as unknown). */
static const char *first_unknown(const char *list, const char *known) {
    for (const char *p = list;;) {
        size_t k = strcspn(p, ",");
        int there = 0;
        for (const char *q = known; *q && k && !there;) {
            size_t m = strcspn(q, ",");
            there = m == k && !strncmp(q, p, k);
            q += m;
            while (*q == ',' || *q == ' ') q++;
        }
        if (!there) return p;
        if (!p[k]) return NULL;
        p += k + 1;
    }
}

static int gres_gpus(const char *gres) {
    int best = 0;
    for (const char *p = strstr(gres, "gpu:"); p; p = strstr(p + 1, "gpu:")) {
        const char *q = p + 4;
        const char *colon = strchr(q, ':'), *end = q + strcspn(q, ",(");
        if (colon && colon < end) q = colon + 1; /* gpu:TYPE:N */
        int n = atoi(q);
        if (n > best) best = n;
    }
    return best;
}

int ex__slurm_check(const ex_options *o, const ex_job_config *cfg, char *err, size_t errlen) {
    int rc = check_commands(&o->slurm, err, errlen);
    if (rc) return rc;
    char *out = NULL, *errtext = NULL;
    char *argv[] = {"sinfo", "--noheader", "--format=%P|%c|%m|%G|%D", NULL};
    int status = ex__cmd_sync(argv, CMD_TIMEOUT, &out, &errtext);
    if (status != 0) {
        char *nl = errtext + strlen(errtext);
        while (nl > errtext && nl[-1] == '\n') *--nl = '\0';
        rc = tn_error(err, errlen, TN_EINVAL,
                      "cannot reach the Slurm controller: sinfo failed: %s\nhint: check that "
                      "slurmctld runs (`scontrol ping`) and that SLURM_CONF points to the "
                      "cluster's slurm.conf",
                      errtext[0] ? errtext : "no message");
        free(out);
        free(errtext);
        return rc;
    }
    /* the partition: the one given, else the default (marked '*') */
    char part[128] = "";
    int found = 0, nodes = 0, max_cores = 0, max_mem = 0, max_gpus = 0;
    char known[1024] = "";
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char *f[5] = {line, NULL, NULL, NULL, NULL};
        for (int k = 1; k < 5; k++) {
            char *bar = f[k - 1] ? strchr(f[k - 1], '|') : NULL;
            if (!bar) break;
            *bar = '\0';
            f[k] = bar + 1;
        }
        if (!f[4]) continue;
        size_t len = strlen(f[0]);
        int is_default = len > 0 && f[0][len - 1] == '*';
        if (is_default) f[0][len - 1] = '\0';
        if (!strstr(known, f[0]) && strlen(known) + strlen(f[0]) + 3 < sizeof known)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                     known[0] ? ", " : "", f[0]);
        int match = o->slurm.partition ? in_list(o->slurm.partition, f[0]) : is_default;
        if (!match) continue;
        found = 1;
        snprintf(part, sizeof part, "%s", o->slurm.partition ? o->slurm.partition : f[0]);
        int c = atoi(f[1]), m = atoi(f[2]), g = gres_gpus(f[3]);
        nodes += atoi(f[4]);
        if (c > max_cores) max_cores = c;
        if (m > max_mem) max_mem = m;
        if (g > max_gpus) max_gpus = g;
    }
    free(out);
    free(errtext);
    /* a list ("gpu,cpu": Slurm starts the job in whichever can run it first): each must
     * be there; the job must fit the largest node of any */
    const char *missing = o->slurm.partition ? first_unknown(o->slurm.partition, known) : NULL;
    if (missing || (!found && o->slurm.partition))
        return tn_error(err, errlen, TN_EINVAL,
                        "executor.partition: Slurm has no partition '%.*s' (it has: %s)\n"
                        "hint: pick one of them (or a comma-separated list of them), or leave "
                        "the field out for the default",
                        missing ? (int)strcspn(missing, ",") : (int)strlen(o->slurm.partition),
                        missing ? missing : o->slurm.partition, known[0] ? known : "none");
    if (!found)
        return tn_error(err, errlen, TN_EINVAL,
                        "the Slurm cluster has no default partition (it has: %s)\nhint: set "
                        "executor.partition in the spec",
                        known[0] ? known : "none");
    for (int t = 0; t < TF_NTYPES; t++) {
        if (cfg->count[t] == 0) continue;
        const char *who = tf_type_label(t, !cfg->use_chief_name);
        int cores = cfg->cores[t] > 0 ? cfg->cores[t] : 1;
        if (cores > max_cores)
            return tn_error(err, errlen, TN_EINVAL,
                            "a %s replica asks for %d cores, but the largest node of Slurm "
                            "partition %s has %d\nhint: lower its trainingInput.resources cores, "
                            "or pick another executor.partition",
                            who, cores, part, max_cores);
        if (cfg->memory_mb[t] > max_mem)
            return tn_error(err, errlen, TN_EINVAL,
                            "a %s replica asks for %d MiB of memory, but the largest node of "
                            "Slurm partition %s has %d MiB\nhint: lower its resources memory, "
                            "or pick another executor.partition",
                            who, cfg->memory_mb[t], part, max_mem);
        if (cfg->gpus[t] > max_gpus)
            return tn_error(err, errlen, TN_EINVAL,
                            "a %s replica asks for %d GPU%s, but %s of Slurm partition %s has "
                            "%s%d\nhint: lower its acceleratorConfig count, or pick a partition "
                            "with GPUs",
                            who, cfg->gpus[t], cfg->gpus[t] == 1 ? "" : "s",
                            max_gpus ? "the largest node" : "no node", part,
                            max_gpus ? "" : "GPUs: ", max_gpus);
    }
    int group[TF_NTYPES];
    int ncomp = components(cfg, group);
    if (ncomp > 1 && nodes < ncomp)
        return tn_error(err, errlen, TN_EINVAL,
                        "the replica types ask for %d different sets of resources, so a trial "
                        "is a heterogeneous Slurm job of %d components, which Slurm places on "
                        "distinct nodes, but partition %s has %d node%s\nhint: give the replica "
                        "types the same resources, or pick a larger executor.partition",
                        ncomp, ncomp, part, nodes, nodes == 1 ? "" : "s");
    return 0;
}

static int slurm_recover(ex_executor *x, char ***handles, long **trials, size_t *n,
                         int *killed, char *err, size_t errlen) {
    (void)killed; /* the jobs go on: they are re-attached, not killed */
    const char *prefix = x->o.slurm.job_prefix;
    char *out = NULL, *errtext = NULL;
    /* the user's own jobs; a uid with no name (no passwd entry: a container's user)
     * is given as the number, which squeue takes too, never someone else's name */
    struct passwd *pw = getpwuid(getuid());
    char *user = pw ? tn_xasprintf("--user=%s", pw->pw_name)
                    : tn_xasprintf("--user=%lu", (unsigned long)getuid());
    char *argv[] = {"squeue", "--noheader", "--format=%i|%j|%T", user, NULL};
    int status = ex__cmd_sync(argv, CMD_TIMEOUT, &out, &errtext);
    int rc = 0;
    if (status != 0) {
        rc = tn_error(err, errlen, TN_EIO,
                      "cannot list the study's Slurm jobs: squeue failed: %s\nhint: check that "
                      "slurmctld runs (`scontrol ping`); the jobs go on meanwhile, and `tuner "
                      "resume` re-attaches to them",
                      errtext);
        goto done;
    }
    size_t plen = strlen(prefix), cap = 8;
    *handles = tn_xcalloc(cap + 1, sizeof **handles);
    *trials = tn_xcalloc(cap + 1, sizeof **trials);
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char *name = strchr(line, '|');
        char *state = name ? strchr(name + 1, '|') : NULL;
        if (!state) continue;
        *name++ = '\0';
        *state++ = '\0';
        if (strncmp(name, prefix, plen) != 0 || name[plen] != '.' || is_terminal(state) ||
            !strcmp(state, "COMPLETING")) /* ending anyway */
            continue;
        if (strchr(line, '+') && !strstr(line, "+0")) continue; /* one line per het job */
        char *end;
        long trial = strtol(name + plen + 1, &end, 10);
        if (*end || trial < 1) continue;
        if (*n == cap) {
            cap *= 2;
            *handles = tn_xrealloc(*handles, (cap + 1) * sizeof **handles);
            *trials = tn_xrealloc(*trials, (cap + 1) * sizeof **trials);
        }
        (*handles)[*n] = tn_xasprintf("slurm:%.*s", (int)strspn(line, "0123456789"), line);
        (*trials)[*n] = trial;
        (*n)++;
        (*handles)[*n] = NULL;
    }
    /* kept for slurm_attach: a stored job still live is the one to attach to */
    slurm_exec *se = x->impl;
    free(se->live);
    se->live = tn_xcalloc(*n + 1, sizeof *se->live);
    for (size_t k = 0; k < *n; k++) se->live[k] = atol((*handles)[k] + 6);
    se->nlive = *n;
    se->recovered = 1;
done:
    free(out);
    free(errtext);
    free(user);
    return rc;
}

static int slurm_cancel_handle(ex_executor *x, const char *handle, char *err, size_t errlen) {
    if (strncmp(handle, "slurm:", 6) != 0)
        return tn_error(err, errlen, TN_EINVAL, "'%s' is not a Slurm job", handle);
    char *errtext = NULL;
    char *argv[] = {"scancel", (char *)handle + 6, NULL};
    int status = ex__cmd_sync(argv, CMD_TIMEOUT, NULL, &errtext);
    int rc = status == 0 ? 0
                         : tn_error(err, errlen, TN_EIO, "scancel %s failed: %s", handle + 6,
                                    errtext);
    free(errtext);
    return rc;
}

const ex_backend_ops ex_slurm_ops = {
    .name = "slurm",
    .timeout_from_start = 1,
    .start = slurm_start,
    .attach = slurm_attach,
    .poll = slurm_poll,
    .stop = slurm_stop,
    .release = slurm_release,
    .abort = slurm_abort,
    .free = slurm_free,
    .recover = slurm_recover,
    .cancel_handle = slurm_cancel_handle,
};
