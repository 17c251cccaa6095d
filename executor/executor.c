/*
 * executor.c — the executor's front (see executor.h and executor_internal.h): the
 * backend-independent part of every job (configuration, replicas and their metric
 * files, timeout, the deferred outcome) and the process-wide SIGCHLD watcher that
 * local replicas and Slurm commands share.
 *
 * The front also counts each replica's runs from the `started` events the backends
 * emit, and reads a replica's metric file when one of its runs ends, so that every
 * record is handed over with the run that wrote it (docs/metrics.md, "Attempts: which
 * run wrote a record").
 */
#include "executor/executor_internal.h"

#include <errno.h>
#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "common/fileio.h"
#include "common/status.h"

/* How far ahead of the tuner's clock a record's timestamp may be and still place the
 * record after a run's end (a node's clock, a little ahead, is fine; a timestamp in
 * milliseconds, or 1e308, is not a time and places nothing). */
#define EX_CLOCK_SLACK 300.0

struct timeval ex__timeval(double s) {
    if (s < 0) s = 0;
    if (s > 1e9) s = 1e9; /* 31 years: far beyond any limit, and time_t never overflows */
    struct timeval tv = {(time_t)s, (suseconds_t)((s - (double)(time_t)s) * 1e6)};
    return tv;
}

double ex__now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static ex_replica *replica_named(ex_job *j, const char *name) {
    for (size_t i = 0; i < j->nreps; i++)
        if (!strcmp(j->reps[i].name, name)) return &j->reps[i];
    return NULL;
}

/* A run of replica r ended at `at` (its `exited` event, told now): reads its metric
 * file at once and holds what is new for the next poll, each record given to the run
 * that wrote it: the run that ended (r->runs), or the next one when the record's
 * timestamp is at or after `at` (and not beyond EX_CLOCK_SLACK ahead of the clock).
 * Locally a run's `exited` comes when it is dead and before its restart is started, so
 * what is new is the run's own, even a last line without its newline, which the
 * restarted program may overwrite. Slurm's events are read late, when the next run may
 * have written already; only the timestamps (the replica's clock on the node where the
 * launcher timed its events) tell the runs apart then. A failed read is left to the
 * next poll, which reports it. */
static void run_ended(ex_job *j, ex_replica *r, double at) {
    htr_record *recs = NULL;
    size_t n = 0;
    char err[512];
    if (j->phase == EX_PH_DONE) return; /* the last read is done: nothing comes after it */
    if (htr_poll_final(r->reader, &recs, &n, err, sizeof err) != 0 || n == 0) return;
    double limit = ex__now() + EX_CLOCK_SLACK;
    if (r->nheld + n > r->capheld) {
        r->capheld = r->nheld + n + 8;
        r->held = tn_xrealloc(r->held, r->capheld * sizeof *r->held);
        r->held_run = tn_xrealloc(r->held_run, r->capheld * sizeof *r->held_run);
    }
    for (size_t k = 0; k < n; k++) {
        const htr_record *rec = &recs[k];
        int next = rec->timestamp_given && rec->timestamp >= at && rec->timestamp <= limit;
        r->held[r->nheld] = *rec; /* the record's strings move with it */
        r->held_run[r->nheld++] = r->runs + next;
    }
    free(recs);
}

/* Tells the caller an event. Every event of every backend passes here: a replica's
 * `started` counts its runs, its `exited` reads what the run left (run_ended). */
static void emit_v(ex_job *j, double time, const char *who, const char *kind, ex_exit exit,
                   int notice, const char *fmt, va_list ap) __attribute__((format(printf, 7, 0)));
static void emit_v(ex_job *j, double time, const char *who, const char *kind, ex_exit exit,
                   int notice, const char *fmt, va_list ap) {
    int started = who && !strcmp(kind, EX_EV_STARTED);
    int exited = who && !strcmp(kind, EX_EV_EXITED);
    ex_replica *r = started || exited ? replica_named(j, who) : NULL;
    if (r && started) r->runs++;
    if (r && exited) run_ended(j, r, time);
    if (!j->cb.event) return;
    char detail[1024];
    vsnprintf(detail, sizeof detail, fmt, ap);
    ex_event e = {.time = time, .replica = who, .kind = kind, .detail = detail,
                  .exit = exited ? exit : EX_EXIT_UNKNOWN, .notice = notice};
    j->cb.event(j->ctx, &e);
}

void ex__emit(ex_job *j, const char *who, const char *kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit_v(j, ex__now(), who, kind, EX_EXIT_UNKNOWN, 0, fmt, ap);
    va_end(ap);
}

void ex__notice(ex_job *j, const char *kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit_v(j, ex__now(), NULL, kind, EX_EXIT_UNKNOWN, 1, fmt, ap);
    va_end(ap);
}

void ex__emit_at(ex_job *j, double time, const char *who, const char *kind, ex_exit exit,
                 const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit_v(j, time, who, kind, exit, 0, fmt, ap);
    va_end(ap);
}

void ex__arm_timeout(ex_job *j, double elapsed) {
    if (j->cfg.timeout_seconds <= 0 || j->timer_armed || j->phase == EX_PH_DONE) return;
    j->timer_armed = 1;
    j->timer_origin = ex__now() - elapsed;
    struct timeval tv = ex__timeval(j->cfg.timeout_seconds - j->timeout_used - elapsed);
    evtimer_add(j->timeout_ev, &tv);
}

void ex__pause_timeout(ex_job *j) {
    if (!j->timer_armed) return;
    j->timer_armed = 0;
    j->timeout_used += ex__now() - j->timer_origin;
    evtimer_del(j->timeout_ev);
}

void ex__poll_metrics(ex_job *j, int final) {
    for (size_t i = 0; i < j->nreps; i++) {
        ex_replica *r = &j->reps[i];
        if (r->nheld > 0) { /* read when a run ended: before what is newer */
            htr_record *held = r->held;
            int *runs = r->held_run;
            size_t nheld = r->nheld;
            r->held = NULL; /* detached: a callback that stops the job may poll again */
            r->held_run = NULL;
            r->nheld = r->capheld = 0;
            for (size_t k = 0; k < nheld && j->cb.measurement; k++)
                j->cb.measurement(j->ctx, r->name, runs[k], &held[k]);
            htr_records_free(held, nheld);
            free(runs);
        }
        htr_record *recs = NULL;
        size_t n = 0;
        char err[512];
        int rc = final ? htr_poll_final(r->reader, &recs, &n, err, sizeof err)
                       : htr_poll(r->reader, &recs, &n, err, sizeof err);
        if (rc != 0) { /* told once until it changes: not at every poll */
            if (!r->read_error || strcmp(r->read_error, err) != 0) {
                ex__emit(j, r->name, EX_EV_METRICS, "%s", err);
                free(r->read_error);
                r->read_error = tn_xstrdup(err);
            }
            continue;
        }
        free(r->read_error);
        r->read_error = NULL;
        for (size_t k = 0; k < n && j->cb.measurement; k++)
            j->cb.measurement(j->ctx, r->name, r->runs, &recs[k]);
        htr_records_free(recs, n);
        /* Lines that are not JSON objects are skipped; told at the first, and at the
         * end if more came, not at every poll. */
        htr_stats st;
        htr_get_stats(r->reader, &st);
        if (st.bad_lines > r->bad_told && (r->bad_told == 0 || final)) {
            ex__emit(j, r->name, EX_EV_METRICS,
                     "%zu line%s of %s %s not a JSON object and %s skipped (write one "
                     "JSON object a line, e.g. {\"%s\": 0.5, \"global_step\": 10})",
                     st.bad_lines, st.bad_lines == 1 ? "" : "s", r->metric_path,
                     st.bad_lines == 1 ? "is" : "are", st.bad_lines == 1 ? "was" : "were",
                     j->cfg.metric_tag[0] ? j->cfg.metric_tag : "accuracy");
            r->bad_told = st.bad_lines;
        }
        if (st.line_too_long && !r->long_told) {
            ex__emit(j, r->name, EX_EV_METRICS,
                     "%s ends in a line longer than %d MiB, which is not read (write one "
                     "short JSON object a line, e.g. {\"%s\": 0.5, \"global_step\": 10})",
                     r->metric_path, HTR_MAX_READ >> 20,
                     j->cfg.metric_tag[0] ? j->cfg.metric_tag : "accuracy");
            r->long_told = 1;
        }
    }
}

void ex__begin_stop(ex_job *j, int outcome, const char *error) {
    if (j->phase != EX_PH_RUNNING) return;
    j->phase = EX_PH_STOPPING;
    j->stop_outcome = outcome;
    free(j->stop_error);
    j->stop_error = error ? tn_xstrdup(error) : NULL;
    /* the timeout keeps running: a stop may lead to another attempt (local re-runs) */
    j->x->ops->stop(j);
}

void ex__finish(ex_job *j) {
    if (j->phase == EX_PH_DONE) return;
    j->phase = EX_PH_DONE;
    evtimer_del(j->timeout_ev);
    evtimer_del(j->poll_ev);
    ex__poll_metrics(j, 1); /* the last records */
    event_active(j->done_ev, 0, 0);
}

void ex__finish_as(ex_job *j, int outcome, const char *error) {
    j->stop_outcome = outcome;
    free(j->stop_error);
    j->stop_error = error ? tn_xstrdup(error) : NULL;
    ex__finish(j);
}

/* ---- children ---- */

void ex__watch(ex_executor *x, pid_t pid, void (*fn)(void *ctx, int status), void *ctx) {
    if (x->nwatches == x->capwatches) {
        x->capwatches = x->capwatches ? 2 * x->capwatches : 16;
        x->watches = tn_xrealloc(x->watches, x->capwatches * sizeof *x->watches);
    }
    x->watches[x->nwatches++] = (ex_watch){pid, fn, ctx};
}

void ex__unwatch(ex_executor *x, pid_t pid) {
    for (size_t i = 0; i < x->nwatches; i++) {
        if (x->watches[i].pid == pid) {
            x->watches[i] = x->watches[--x->nwatches];
            return;
        }
    }
}

static void on_sigchld(evutil_socket_t fd, short what, void *arg) {
    ex_executor *x = arg;
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) break;
        for (size_t i = 0; i < x->nwatches; i++) {
            if (x->watches[i].pid == pid) {
                ex_watch w = x->watches[i];
                x->watches[i] = x->watches[--x->nwatches];
                w.fn(w.ctx, status); /* may add or remove watches */
                break;
            }
        }
    }
}

/* ---- the executor ---- */

int ex_executor_new(struct event_base *base, const ex_options *o, ex_executor **out, char *err,
                    size_t errlen) {
    *out = NULL;
    const ex_backend_ops *ops;
    if (o->backend == EX_LOCAL)
        ops = &ex_local_ops;
    else if (o->backend == EX_SLURM)
        ops = &ex_slurm_ops;
    else
        return tn_error(err, errlen, TN_EINVAL, "unknown executor backend %d", o->backend);
    ex_executor *x = tn_xcalloc(1, sizeof *x);
    x->base = base;
    x->ops = ops;
    x->o = *o;
    ex_slurm_options *s = &x->o.slurm;
    s->partition = s->partition ? tn_xstrdup(s->partition) : NULL;
    s->account = s->account ? tn_xstrdup(s->account) : NULL;
    s->qos = s->qos ? tn_xstrdup(s->qos) : NULL;
    s->time_limit = s->time_limit ? tn_xstrdup(s->time_limit) : NULL;
    s->launcher = s->launcher ? tn_xstrdup(s->launcher) : NULL;
    s->job_prefix = s->job_prefix ? tn_xstrdup(s->job_prefix) : NULL;
    x->o.job_dir = o->job_dir ? tn_xstrdup(o->job_dir) : NULL;
    x->slurm_extra = tn_xcalloc(s->nextra + 1, sizeof *x->slurm_extra);
    for (size_t i = 0; i < s->nextra; i++) x->slurm_extra[i] = tn_xstrdup(s->extra_args[i]);
    s->extra_args = (const char *const *)x->slurm_extra;
    if (s->poll_seconds <= 0) s->poll_seconds = 1;
    if (s->retry_seconds <= 0) s->retry_seconds = 1;
    x->sigchld = evsignal_new(base, SIGCHLD, on_sigchld, x);
    evsignal_add(x->sigchld, NULL);
    if (o->backend == EX_SLURM) {
        int rc = ex__slurm_init(x, err, errlen);
        if (rc) {
            ex_executor_free(x);
            return rc;
        }
    }
    *out = x;
    return 0;
}

void ex_executor_free(ex_executor *x) {
    if (!x) return;
    while (x->njobs > 0) ex_job_free(x->jobs[x->njobs - 1]);
    if (x->ops->free) x->ops->free(x);
    event_free(x->sigchld);
    free((char *)x->o.slurm.partition);
    free((char *)x->o.slurm.account);
    free((char *)x->o.slurm.qos);
    free((char *)x->o.slurm.time_limit);
    free((char *)x->o.slurm.launcher);
    free((char *)x->o.slurm.job_prefix);
    free((char *)x->o.job_dir);
    ex_strv_free(x->slurm_extra);
    free(x->watches);
    free(x->jobs);
    free(x);
}

int ex_check(const ex_options *o, const ex_job_config *cfg, char *err, size_t errlen) {
    if (o->backend == EX_LOCAL) return ex__local_check(o, cfg, err, errlen);
    if (o->backend == EX_SLURM) return ex__slurm_check(o, cfg, err, errlen);
    return tn_error(err, errlen, TN_EINVAL, "unknown executor backend %d", o->backend);
}

int ex_recover(ex_executor *x, char ***handles, long **trials, size_t *n, int *killed,
               char *err, size_t errlen) {
    *handles = NULL;
    *trials = NULL;
    *n = 0;
    *killed = 0;
    return x->ops->recover ? x->ops->recover(x, handles, trials, n, killed, err, errlen) : 0;
}

int ex_cancel_handle(ex_executor *x, const char *handle, char *err, size_t errlen) {
    if (!x->ops->cancel_handle)
        return tn_error(err, errlen, TN_EINVAL, "the %s executor has no jobs to cancel by handle",
                        x->ops->name);
    return x->ops->cancel_handle(x, handle, err, errlen);
}

/* ---- jobs ---- */

static void on_poll(evutil_socket_t fd, short what, void *arg) {
    ex_job *j = arg;
    if (j->x->ops->poll) j->x->ops->poll(j);
    if (j->phase != EX_PH_DONE) ex__poll_metrics(j, 0);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg) {
    ex_job *j = arg;
    char msg[128];
    snprintf(msg, sizeof msg, "the trial timed out after %gs", j->cfg.timeout_seconds);
    if (j->phase == EX_PH_RUNNING) {
        ex__begin_stop(j, EX_FAILED, msg);
    } else if (j->phase == EX_PH_STOPPING) {
        /* The stop's own outcome stands (the chief's success, an early stop, a cancel:
         * replicas that take their time to stop change none of them); only a stop to run
         * the job again turns into the timeout's failure, when the backend sees the job
         * stopped (timed_out). */
        j->timed_out = 1;
    }
}

static void on_done(evutil_socket_t fd, short what, void *arg) {
    ex_job *j = arg;
    if (j->cb.finished) j->cb.finished(j->ctx, j->stop_outcome, j->stop_error);
}

/* A job with everything but the backend's part: the configuration copied, the
 * replicas named, their folders created. NULL with a message when the folders
 * cannot be made. */
static ex_job *job_new(ex_executor *x, const ex_job_config *cfg, const ex_callbacks *cb,
                       void *ctx, char *err, size_t errlen) {
    if (cfg->argc < 1 || cfg->count[TF_CHIEF] != 1) {
        tn_error(err, errlen, TN_EINVAL, "a job needs a program and exactly one chief");
        return NULL;
    }
    char *logs = ex_logs_dir(cfg->job_dir);
    char *metrics = ex_metrics_dir(cfg->job_dir);
    int rc = tn_make_dirs(logs, err, errlen);
    if (!rc) rc = tn_make_dirs(metrics, err, errlen);
    free(logs);
    free(metrics);
    if (rc) return NULL;
    ex_job *j = tn_xcalloc(1, sizeof *j);
    j->x = x;
    j->cfg = *cfg;
    j->cb = *cb;
    j->ctx = ctx;
    j->job_dir = tn_xstrdup(cfg->job_dir);
    j->study = tn_xstrdup(cfg->study ? cfg->study : "");
    j->trial = tn_xstrdup(cfg->trial ? cfg->trial : "");
    j->metric_tag = tn_xstrdup(cfg->metric_tag ? cfg->metric_tag : "");
    j->job = cfg->job ? json_incref(cfg->job) : NULL;
    j->cfg.study = j->study;
    j->cfg.trial = j->trial;
    j->cfg.metric_tag = j->metric_tag;
    j->cfg.job_dir = j->job_dir;
    j->cfg.job = j->job;
    if (j->cfg.grace_seconds <= 0) j->cfg.grace_seconds = 10;
    if (j->cfg.poll_seconds <= 0) j->cfg.poll_seconds = 0.5;
    j->argv = tn_xcalloc(cfg->argc + 2, sizeof *j->argv);
    for (size_t i = 0; i < cfg->argc; i++) j->argv[i] = tn_xstrdup(cfg->argv[i]);
    j->argv[cfg->argc] = tn_xasprintf("--job-dir=%s", cfg->job_dir);
    j->cfg.argv = (const char *const *)j->argv;
    for (int t = 0; t < TF_NTYPES; t++) {
        size_t n = 0;
        while (cfg->env[t] && cfg->env[t][n]) n++;
        j->env[t] = cfg->env[t] ? tn_xcalloc(n + 1, sizeof *j->env[t]) : NULL;
        for (size_t i = 0; i < n; i++) j->env[t][i] = tn_xstrdup(cfg->env[t][i]);
        j->cfg.env[t] = (const char *const *)j->env[t];
    }
    if (j->cfg.restart_backoff_max < j->cfg.restart_backoff)
        j->cfg.restart_backoff_max = j->cfg.restart_backoff;
    for (int t = 0; t < TF_NTYPES; t++) j->nreps += (size_t)cfg->count[t];
    j->reps = tn_xcalloc(j->nreps, sizeof *j->reps);
    size_t k = 0;
    for (int t = 0; t < TF_NTYPES; t++) {
        const char *tname = tf_type_label(t, !cfg->use_chief_name);
        for (int i = 0; i < cfg->count[t]; i++, k++) {
            ex_replica *r = &j->reps[k];
            r->type = t;
            r->index = i;
            snprintf(r->name, sizeof r->name, "%s:%d", tname, i);
            r->log_path = ex_log_path(cfg->job_dir, tname, i);
            r->metric_path = ex_metric_path(cfg->job_dir, tname, i);
            r->reader = htr_new(r->metric_path);
        }
    }
    j->poll_ev = event_new(x->base, -1, EV_PERSIST, on_poll, j);
    j->timeout_ev = evtimer_new(x->base, on_timeout, j);
    j->done_ev = event_new(x->base, -1, 0, on_done, j);
    j->phase = EX_PH_RUNNING;
    return j;
}

static void job_destroy(ex_job *j) {
    event_free(j->poll_ev);
    event_free(j->timeout_ev);
    event_free(j->done_ev);
    for (size_t i = 0; i < j->nreps; i++) {
        free(j->reps[i].log_path);
        free(j->reps[i].metric_path);
        free(j->reps[i].read_error);
        htr_free(j->reps[i].reader);
        htr_records_free(j->reps[i].held, j->reps[i].nheld);
        free(j->reps[i].held_run);
    }
    free(j->reps);
    ex_strv_free(j->argv);
    for (int t = 0; t < TF_NTYPES; t++) ex_strv_free(j->env[t]);
    free(j->job_dir);
    free(j->handle);
    free(j->study);
    free(j->trial);
    free(j->metric_tag);
    json_decref(j->job);
    free(j->stop_error);
    free(j);
}

/* Registers a started job with its executor and starts its timers. */
static void job_begin(ex_job *j) {
    ex_executor *x = j->x;
    if (x->njobs == x->capjobs) {
        x->capjobs = x->capjobs ? 2 * x->capjobs : 8;
        x->jobs = tn_xrealloc(x->jobs, x->capjobs * sizeof *x->jobs);
    }
    x->jobs[x->njobs++] = j;
    struct timeval poll = ex__timeval(j->cfg.poll_seconds);
    evtimer_add(j->poll_ev, &poll);
    if (!x->ops->timeout_from_start) ex__arm_timeout(j, 0);
}

int ex_has_room(ex_executor *x, const ex_job_config *cfg) {
    return x->ops->has_room ? x->ops->has_room(x, cfg) : 1;
}

int ex_job_start(ex_executor *x, const ex_job_config *cfg, const ex_callbacks *cb, void *ctx,
                 ex_job **out, char *err, size_t errlen) {
    *out = NULL;
    ex_job *j = job_new(x, cfg, cb, ctx, err, errlen);
    if (!j) return TN_EIO;
    int rc = x->ops->start(j, err, errlen);
    if (rc == EX_BUSY) {
        job_destroy(j);
        return EX_BUSY;
    }
    job_begin(j);
    if (rc < 0) { /* not everything could be started: the job fails through finished(),
                     once what did start is stopped */
        char why[1024];
        snprintf(why, sizeof why, "%s", err);
        ex__begin_stop(j, EX_FAILED, why);
    }
    *out = j;
    return 0;
}

int ex_job_attach(ex_executor *x, const ex_job_config *cfg, const ex_callbacks *cb, void *ctx,
                  const char *handle, int attempts, const ex_seen *seen, size_t nseen,
                  ex_job **out) {
    *out = NULL;
    if (!x->ops->attach || !handle) return 0;
    char err[512];
    ex_job *j = job_new(x, cfg, cb, ctx, err, sizeof err);
    if (!j) return TN_EIO;
    j->attempts = attempts > 0 ? attempts : 1;
    int attached = 0;
    x->ops->attach(j, handle, seen, nseen, &attached);
    if (!attached) {
        job_destroy(j);
        return 0;
    }
    job_begin(j);
    *out = j;
    return 0;
}

void ex_job_stop(ex_job *j, int outcome, const char *reason) {
    if (j) ex__begin_stop(j, outcome, reason);
}

int ex_job_is_running(const ex_job *j) { return j->phase == EX_PH_RUNNING; }

int ex_job_attempts(const ex_job *j) { return j->attempts; }
int ex_job_restarts(const ex_job *j) { return j->restarts; }
const char *ex_job_handle(const ex_job *j) { return j->handle; }

void ex__set_handle(ex_job *j, const char *handle, int store) {
    free(j->handle);
    j->handle = tn_xstrdup(handle);
    if (store && j->cb.handle) j->cb.handle(j->ctx, handle);
}

int ex_abort_all(ex_executor *x, char *err, size_t errlen) {
    return x && x->ops->abort ? x->ops->abort(x, err, errlen) : 0;
}

int ex_job_free(ex_job *j) {
    if (!j) return 0;
    ex_executor *x = j->x;
    int rc = x->ops->release(j);
    for (size_t i = 0; i < x->njobs; i++) {
        if (x->jobs[i] == j) {
            x->jobs[i] = x->jobs[--x->njobs];
            break;
        }
    }
    job_destroy(j);
    return rc;
}

char *ex_job_prefix(const char *study, const char *job_dir) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a, 64 bits */
    for (const unsigned char *p = (const unsigned char *)job_dir; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return tn_xasprintf("tuner.%08x.%s", (unsigned)(h ^ (h >> 32)), study);
}
