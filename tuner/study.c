/*
 * study.c — the study manager loop, ask and tell (see study.h).
 *
 * One `loop` holds what a running study needs: the store, the spec, the executor,
 * the trials now running (each with its job, its resources and its objective so
 * far), the queue of trials to run again after a crash, and the counters behind the
 * progress line. schedule() is the only place trials start; it runs after every
 * change that may free room (a trial ends) and decides when the study is over.
 */
#include "tuner/study.h"

#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"
#include "common/text.h"
#include "executor/executor.h"
#include "search/bo.h"
#include "search/mobo.h"
#include "search/pareto.h"
#include "search/space.h"
#include "search/stopping.h"
#include "tuner/params.h"

static double wall_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- sampling inside a transaction (run and ask share it) ---- */

typedef struct ask_ctx {
    const tn_spec *spec;
    const st_study *study;
    st_trial_state state;   /* state of the new trial */
    double *values;         /* (n) the point */
    int64_t number;         /* the new trial's number */
    char *params;           /* its parameters as JSON */
    int exhausted;          /* no trial left to give (nothing created) */
    int ask_tell;           /* study_ask: a study over is refused, and one with no trial
                               left to give and none out ends (asktell_end) */
    char note[512];         /* the sampler's note, or "" */
    char err[1024];
} ask_ctx;

static int state_to_sp(st_trial_state state) {
    switch (state) {
    case ST_TRIAL_SUCCEEDED: return SP_COMPLETE;
    case ST_TRIAL_STOPPED: return SP_STOPPED;
    case ST_TRIAL_PENDING:
    case ST_TRIAL_RUNNING: return SP_PENDING;
    default: return SP_FAILED;
    }
}

/* The study named by resumePreviousJobId, for AI Platform's warm start: its trials,
 * and where each of this study's metrics is among their values (found by metricId). */
typedef struct warm {
    st_trial *trials;              /* (n) its trials (NULL, 0 when none) */
    size_t n;
    int at[SPEC_MAX_METRICS];      /* this study's metric k is its values[at[k]]; -1 when
                                      it has no such metric (or its spec does not parse) */
    size_t skipped_space;          /* warm_start: succeeded trials outside this space */
    size_t skipped_metrics;        /* ... and without every metric of this study's */
} warm;

static void warm_clear(warm *w) {
    st_trials_free(w->trials, w->n);
    memset(w, 0, sizeof *w);
}

/* The previous study's trials and metrics (none when resumePreviousJobId is not set,
 * the sampler has no use for them, or the study is gone). */
static int previous_trials(st_store *st, const tn_spec *spec, warm *w, char *err,
                           size_t errlen) {
    memset(w, 0, sizeof *w);
    for (size_t k = 0; k < SPEC_MAX_METRICS; k++) w->at[k] = -1;
    if (!spec->resume_previous_job_id || !sp_uses_history(spec->algorithm)) return 0;
    st_study prev;
    int found;
    int rc = st_study_get(st, spec->resume_previous_job_id, &prev, &found, err, errlen);
    if (rc) return rc;
    if (!found) return 0; /* checked when the study was created; gone since: no warm start */
    rc = st_trial_list(st, prev.id, &w->trials, &w->n, err, errlen);
    tn_spec ps;
    spec_errors errs = {0};
    if (!rc && spec_parse(prev.spec, prev.name, 1, &ps, &errs) == 0) {
        for (size_t k = 0; k < spec->nmetrics; k++)
            for (size_t j = 0; j < ps.nmetrics; j++)
                if (!strcmp(spec->metrics[k].id, ps.metrics[j].id)) w->at[k] = (int)j;
        spec_clear(&ps);
    }
    spec_errors_clear(&errs);
    st_study_clear(&prev);
    return rc;
}

/* The previous study's succeeded trials that fit this study's space, appended to the
 * history: hist and vals (its points) and, with several metrics, mo and objs (their
 * values, nmetrics each), all with room for w->n. A study of one metric takes the
 * earlier trials' value of the same metricId, or their objective when the earlier
 * study has no such metric (AI Platform's warm start assumes the same objective); a
 * study of several takes only trials with a value of each of its metrics. Returns how
 * many were added; w->skipped_* count the others. */
static size_t warm_start(const tn_spec *spec, warm *w, sp_trial *hist, double *vals,
                         mo_trial *mo, double *objs) {
    size_t added = 0, m = spec->nmetrics;
    w->skipped_space = w->skipped_metrics = 0;
    for (size_t i = 0; i < w->n; i++) {
        const st_trial *t = &w->trials[i];
        if (t->state != ST_TRIAL_SUCCEEDED || !t->has_objective) continue;
        double *o = objs ? objs + added * m : NULL;
        int have = 1;
        for (size_t k = 0; k < m && have; k++) {
            int j = w->at[k];
            have = j >= 0 && j < t->nvalues;
            if (o && have) o[k] = t->values[j];
        }
        if (m > 1 && !have) {
            w->skipped_metrics++;
            continue;
        }
        double *v = vals + added * spec->space.n;
        if (tp_from_json(&spec->space, t->params, v, NULL, 0) != 0) {
            w->skipped_space++;
            continue;
        }
        double objective = have ? t->values[w->at[0]] : t->objective;
        hist[added] = (sp_trial){.values = v, .state = SP_COMPLETE, .has_objective = 1,
                                 .objective = objective};
        if (mo) mo[added] = (mo_trial){.values = v, .state = SP_COMPLETE, .objectives = o};
        added++;
    }
    return added;
}

static int asktell_end(st_store *st, const tn_spec *spec, const st_study *study,
                       int exhausted, int64_t last, char *err, size_t errlen);
static int asktell_open(st_store *st, const st_study *study, const char *what, char *err,
                        size_t errlen);

static int ask_in_txn(st_store *st, void *arg) {
    ask_ctx *a = arg;
    const sp_space *space = &a->spec->space;
    st_trial *trials = NULL;
    size_t n = 0;
    int rc;
    if (a->ask_tell) { /* a study over has none to give, and says why in a->err */
        rc = asktell_open(st, a->study, "hands out no more trials", a->err, sizeof a->err);
        if (rc == TN_EINVAL) a->exhausted = 1;
        if (rc) return rc == TN_EINVAL ? 0 : rc;
    }
    if (sp_uses_history(a->spec->algorithm)) {
        rc = st_trial_list(st, a->study->id, &trials, &n, a->err, sizeof a->err);
    } else { /* the sampler needs only the count: no O(n) parse of every trial */
        int64_t counts[ST_TRIAL_NSTATES];
        rc = st_trial_counts(st, a->study->id, counts, a->err, sizeof a->err);
        for (int i = 0; i < ST_TRIAL_NSTATES && !rc; i++) n += (size_t)counts[i];
    }
    if (rc) return rc;
    if ((int64_t)n >= a->spec->max_trials) {
        st_trials_free(trials, trials ? n : 0);
        a->exhausted = 1;
        return a->ask_tell ? asktell_end(st, a->spec, a->study, 1, 0, a->err, sizeof a->err)
                           : 0;
    }
    size_t listed = trials ? n : 0;
    warm w;
    rc = previous_trials(st, a->spec, &w, a->err, sizeof a->err);
    if (rc) {
        st_trials_free(trials, listed);
        return rc;
    }
    double *vals = tn_xcalloc((listed + w.n) * space->n + 1, sizeof *vals);
    sp_trial *hist = tn_xcalloc(listed + w.n + 1, sizeof *hist);
    /* several metrics: the same trials with every objective (mo_history) */
    size_t m = a->spec->nmetrics;
    mo_trial *mo = m > 1 ? tn_xcalloc(listed + w.n + 1, sizeof *mo) : NULL;
    double *objs = m > 1 ? tn_xcalloc(w.n * m + 1, sizeof *objs) : NULL;
    size_t h = warm_start(a->spec, &w, hist, vals, mo, objs);
    for (size_t i = 0; i < listed; i++) {
        if (tp_from_json(space, trials[i].params, vals + h * space->n, NULL, 0) != 0) continue;
        hist[h] = (sp_trial){.values = vals + h * space->n, .state = state_to_sp(trials[i].state),
                             .has_objective = trials[i].has_objective,
                             .objective = trials[i].objective};
        if (mo)
            mo[h] = (mo_trial){
                .values = hist[h].values, .state = hist[h].state,
                .objectives = trials[i].state == ST_TRIAL_SUCCEEDED && trials[i].has_objective &&
                                      trials[i].nvalues >= (int)m
                                  ? trials[i].values
                                  : NULL};
        h++;
    }
    sp_history history = {.trials = hist, .n = h, .maximize = a->spec->goal == SPEC_MAXIMIZE};
    int maximize[SPEC_MAX_METRICS];
    for (size_t k = 0; k < m; k++) maximize[k] = a->spec->metrics[k].goal == SPEC_MAXIMIZE;
    mo_history mo_hist = {.trials = mo, .n = h, .m = m, .maximize = maximize};
    if (a->spec->algorithm == SP_ALGO_UNSPECIFIED && mo) /* random scalarisations */
        rc = mo_suggest(space, &mo_hist, (uint64_t)a->study->seed, (uint64_t)n,
                        &a->spec->bayesian, a->values, a->note, sizeof a->note);
    else if (a->spec->algorithm == SP_ALGO_UNSPECIFIED) /* with the spec's sampler options */
        rc = bo_suggest(space, &history, (uint64_t)a->study->seed, (uint64_t)n,
                        &a->spec->bayesian, a->values, a->note, sizeof a->note);
    else
        rc = sp_suggest(a->spec->algorithm, space, &history, (uint64_t)a->study->seed,
                        (uint64_t)n, a->values, &a->exhausted, a->note, sizeof a->note);
    if (rc < 0) tn_error(a->err, sizeof a->err, rc, "the sampler failed: %s", tn_strerror(rc));
    if (rc == 0 && !a->exhausted) {
        a->params = tp_to_json(space, a->values);
        rc = st_trial_create(st, a->study->id, a->params, a->state, &a->number, a->err,
                             sizeof a->err);
    } else if (rc == 0 && a->ask_tell) { /* the grid is exhausted */
        rc = asktell_end(st, a->spec, a->study, 1, 0, a->err, sizeof a->err);
    }
    free(vals);
    free(hist);
    free(mo);
    free(objs);
    warm_clear(&w);
    st_trials_free(trials, listed);
    return rc;
}

/* Samples and creates the next trial: 0 (a->exhausted when there was none left to
 * create), or a negative code. */
static int ask_next(st_store *st, const tn_spec *spec, const st_study *study,
                    st_trial_state state, ask_ctx *a, char *err, size_t errlen) {
    memset(a, 0, sizeof *a);
    a->spec = spec;
    a->study = study;
    a->state = state;
    a->ask_tell = state == ST_TRIAL_PENDING; /* study_ask's; the run loop's are RUNNING */
    a->values = tn_xcalloc(spec->space.n + 1, sizeof *a->values);
    char terr[512] = "";
    int rc = st_transaction(st, ask_in_txn, a, terr, sizeof terr);
    if (rc < 0) tn_error(err, errlen, rc, "%s", a->err[0] ? a->err : terr);
    return rc;
}

int study_ask(st_store *st, const tn_spec *spec, const st_study *study, int64_t *number,
              char **params, int *exhausted, char *err, size_t errlen) {
    ask_ctx a;
    int rc = ask_next(st, spec, study, ST_TRIAL_PENDING, &a, err, errlen);
    *exhausted = rc == 0 && a.exhausted;
    if (rc == 0 && errlen > 0) /* why, if it is over; else the sampler's note */
        snprintf(err, errlen, "%s", a.exhausted ? a.err : a.note);
    if (rc == 0 && !a.exhausted) {
        *number = a.number;
        *params = a.params;
        a.params = NULL;
    }
    free(a.values);
    free(a.params);
    return rc;
}

int study_tell(st_store *st, const tn_spec *spec, const st_study *study, int64_t number,
               int failed, double objective, char *err, size_t errlen) {
    return study_tell_values(st, spec, study, number, failed, &objective, 1, err, errlen);
}

/* In an ask's or a tell's transaction: TN_EINVAL with a message when the study is over
 * (another ask or tell may have ended it since the caller read it), naming what it
 * refuses ("takes no more results"). */
static int asktell_open(st_store *st, const st_study *study, const char *what, char *err,
                        size_t errlen) {
    st_study now;
    int found = 0;
    int rc = st_study_get_id(st, study->id, &now, &found, err, errlen);
    if (rc) return rc;
    if (!found) return tn_error(err, errlen, TN_ENOENT, "there is no study %s", study->name);
    if (st_study_state_final(now.state))
        rc = tn_error(err, errlen, TN_EINVAL, "study %s is %s: it %s", study->name,
                      st_study_state_name(now.state), what);
    st_study_clear(&now);
    return rc;
}

/* In an ask's or a tell's transaction: ends a study driven by ask and tell as `tuner
 * run` would end it, once it has nothing left to run. FAILED when maxFailedTrials of its
 * trials have failed (the last told failed is trial `last`), the trials still out
 * CANCELLED (their tells are refused then); else SUCCEEDED when none is out and no more
 * can be asked (maxTrials of them, or `exhausted`: the grid). */
static int asktell_end(st_store *st, const tn_spec *spec, const st_study *study,
                       int exhausted, int64_t last, char *err, size_t errlen) {
    int64_t counts[ST_TRIAL_NSTATES], total = 0;
    int rc = st_trial_counts(st, study->id, counts, err, errlen);
    if (rc) return rc;
    for (int i = 0; i < ST_TRIAL_NSTATES; i++) total += counts[i];
    int64_t out = counts[ST_TRIAL_PENDING] + counts[ST_TRIAL_RUNNING];
    int64_t failed = counts[ST_TRIAL_FAILED];
    if (last > 0 && spec->max_failed_trials > 0 && failed >= spec->max_failed_trials) {
        rc = out ? st_trials_cancel_unfinished(st, study->id, "the study failed", err, errlen)
                 : 0;
        if (rc) return rc;
        char why[256];
        snprintf(why, sizeof why,
                 "%lld trial%s failed (maxFailedTrials is %d); the last, trial %lld, by "
                 "tuner tell --failed",
                 (long long)failed, failed == 1 ? "" : "s", spec->max_failed_trials,
                 (long long)last);
        return st_study_set_state(st, study->id, ST_STUDY_FAILED, why, err, errlen);
    }
    if (out == 0 && (exhausted || total >= spec->max_trials))
        return st_study_set_state(st, study->id, ST_STUDY_SUCCEEDED, NULL, err, errlen);
    return 0;
}

/* study_tell_values's check and write, as one transaction. */
typedef struct tell_ctx {
    const tn_spec *spec;
    const st_study *study;
    int64_t number;
    int failed;
    const double *values;
    size_t nvalues;
    char *err;
    size_t errlen;
} tell_ctx;

static int tell_in_transaction(st_store *st, void *arg) {
    const tell_ctx *c = arg;
    st_trial t;
    int found;
    int rc = asktell_open(st, c->study, "takes no more results", c->err, c->errlen);
    if (rc) return rc;
    rc = st_trial_get(st, c->study->id, c->number, &t, &found, c->err, c->errlen);
    if (rc) return rc;
    if (!found)
        return tn_error(c->err, c->errlen, TN_EINVAL, "study %s has no trial %lld",
                        c->study->name, (long long)c->number);
    if (st_trial_state_final(t.state)) {
        rc = tn_error(c->err, c->errlen, TN_EINVAL, "trial %lld of %s is already %s",
                      (long long)c->number, c->study->name, st_trial_state_name(t.state));
        st_trial_clear(&t);
        return rc;
    }
    t.state = c->failed ? ST_TRIAL_FAILED : ST_TRIAL_SUCCEEDED;
    t.has_objective = !c->failed;
    t.objective = c->failed ? 0.0 : c->values[0];
    t.nvalues = c->failed ? 0 : (int)c->nvalues;
    for (size_t k = 0; k < c->nvalues && !c->failed; k++) t.values[k] = c->values[k];
    t.finished = wall_clock();
    if (t.started == 0) t.started = t.created;
    t.attempts = t.attempts ? t.attempts : 1;
    rc = st_trial_update(st, &t, c->err, c->errlen);
    st_trial_clear(&t);
    if (rc) return rc;
    return asktell_end(st, c->spec, c->study, 0, c->failed ? c->number : 0, c->err, c->errlen);
}

int study_tell_values(st_store *st, const tn_spec *spec, const st_study *study, int64_t number,
                      int failed, const double *values, size_t nvalues, char *err,
                      size_t errlen) {
    if (!failed && (nvalues < 1 || nvalues > ST_MAX_VALUES))
        return tn_error(err, errlen, TN_EINVAL, "a trial has 1 to %d values, not %zu",
                        ST_MAX_VALUES, nvalues);
    for (size_t k = 0; k < nvalues && !failed; k++)
        if (!isfinite(values[k]))
            return tn_error(err, errlen, TN_EINVAL, "%s must be a finite number",
                            k ? "every value" : "the objective");
    /* The trial's state is read and written in one write transaction, so of two tells
     * of one trial at the same moment the second finds it finished. */
    tell_ctx c = {spec, study, number, failed, values, nvalues, err, errlen};
    return st_transaction(st, tell_in_transaction, &c, err, errlen);
}

long study_best_index(const st_trial *t, size_t n, int goal) {
    long best = -1;
    for (size_t i = 0; i < n; i++) {
        if (t[i].state != ST_TRIAL_SUCCEEDED || !t[i].has_objective ||
            isnan(t[i].objective))
            continue;
        if (best < 0 || (goal == SPEC_MINIMIZE ? t[i].objective < t[best].objective
                                               : t[i].objective > t[best].objective))
            best = (long)i;
    }
    return best;
}

size_t study_pareto(const tn_spec *spec, const st_trial *t, size_t n,
                    unsigned char *on_front) {
    size_t m = spec->nmetrics, k = 0;
    int maximize[SPEC_MAX_METRICS];
    for (size_t j = 0; j < m; j++) maximize[j] = spec->metrics[j].goal == SPEC_MAXIMIZE;
    double *pts = tn_xcalloc(n * m + 1, sizeof *pts);      /* (k, m): the candidates */
    size_t *which = tn_xcalloc(n + 1, sizeof *which);       /* (k): their indices */
    unsigned char *front = tn_xcalloc(n + 1, 1);
    for (size_t i = 0; i < n; i++) {
        on_front[i] = 0;
        if (t[i].state != ST_TRIAL_SUCCEEDED || !t[i].has_objective || t[i].nvalues < (int)m)
            continue;
        memcpy(pts + k * m, t[i].values, m * sizeof *pts);
        which[k++] = i;
    }
    size_t count = pa_front(pts, k, m, maximize, front);
    for (size_t j = 0; j < k; j++) on_front[which[j]] = front[j];
    free(pts);
    free(which);
    free(front);
    return count;
}

char *study_resolve_program(const char *name, const char *self_dir) {
    if (strchr(name, '/') || !self_dir) return tn_xstrdup(name);
    size_t len = strlen(self_dir) + strlen(name) + 2;
    char *beside = tn_xmalloc(len);
    snprintf(beside, len, "%s/%s", self_dir, name);
    struct stat sb; /* a program: a folder of that name beside tuner is not one */
    if (stat(beside, &sb) == 0 && S_ISREG(sb.st_mode) && access(beside, X_OK) == 0)
        return beside;
    free(beside);
    return tn_xstrdup(name);
}

_Static_assert(ST_MAX_VALUES >= SPEC_MAX_METRICS, "a trial holds a value of every metric");

/* ---- the loop ---- */

typedef struct loop loop;

/* How many times a replica was started in a trial before this run of it (the stored
 * `started` events): the attempts of a resumed trial go on from there. */
typedef struct replica_starts {
    char replica[32];      /* "chief:0", ... */
    int starts;
} replica_starts;

typedef struct trial_run {
    loop *L;
    int64_t number;
    double *values;        /* the trial's point */
    char *params;          /* as JSON */
    ex_job *job;
    int has_last;          /* the metric tag was reported, finite or not */
    double last;           /* its last value, from the preferred replica: the objective */
    int last_rank;         /* 1: from the chief, 0: from another replica */
    int64_t last_step;     /* the step of that record */
    char last_replica[32]; /* and its replica */
    int has_objective;     /* the last finite value of the metric (a stopped trial's) */
    double objective;
    struct {               /* the study's metrics[1 ..] (several metrics), each as the
                              first: the last value by arrival, the chief's first */
        int has;           /* reported, finite or not */
        double last;
        int rank;          /* 1: from the chief, 0: from another replica */
    } more[SPEC_MAX_METRICS];
    int lost_record; /* a measurement or event could not be stored: never SUCCEEDED */
    char *metric_problem;  /* the last trouble reading a metric file, for messages */
    double started;
    int attempts_before;   /* attempts of earlier runs (a resumed trial) */
    int restarts_before;
    int early_stopped;     /* the early-stopping rule stopped it */
    int late_reports;      /* records it wrote after that, not counted */
    char *stop_reason;     /* why */
    replica_starts *prior; /* (nprior) starts stored before this run (a resumed trial) */
    size_t nprior;
} trial_run;

static void trial_run_free(trial_run *t) {
    free(t->prior);
    free(t->values);
    free(t->params);
    free(t->stop_reason);
    free(t->metric_problem);
    free(t);
}

/* A trial's learning curve of the metric tag, for the early-stopping rule. */
typedef struct curve {
    int state;             /* enum sp_trial_state */
    es_point *pts;         /* steps strictly increasing */
    int *attempt;          /* (cap) the attempt of the record behind each point (0: not
                              known, a store older than schema version 4) */
    size_t n, cap;
    char *replica;         /* whose records these are; the chief's win */
    struct curve *more;    /* (nmetrics - 1) a study of several metrics: the curves of
                              metrics[1 ..], for the dominance rule; NULL until one has
                              a point (their state is not used: this curve's is) */
} curve;

struct loop {
    st_store *st;
    const tn_spec *spec;
    const st_study *study;
    const study_opts *o;
    struct event_base *base;
    ex_executor *x;
    trial_run **running;
    size_t nrunning;
    int64_t *rerun;          /* trials to run again, in order */
    size_t nrerun, rerun_next;
    int64_t created;         /* trials in the store */
    int64_t succeeded, failed, cancelled, stopped;
    curve *curves;           /* (trials) indexed by number - 1 */
    size_t ncurves;
    int exhausted;           /* the sampler has no more points */
    int interrupted;         /* SIGINT/SIGTERM: stopping */
    int failing;             /* maxFailedTrials reached: stopping */
    int fatal;               /* an error stops the loop: stopping */
    int done;                /* nothing runs and nothing is left to start */
    int cancel_requested;    /* `tuner cancel` marked the study: stopping */
    ex_job_config shape;     /* what every trial's job asks for (counts, resources) */
    char *program;
    struct event *signal_ev[3], *progress_ev; /* SIGINT, SIGTERM, SIGHUP (stop_signals) */
    double t0;
    int has_best;
    double best;
    int64_t best_trial;
    char error[1024];        /* the error that stopped the loop */
    int error_rc;
    char note_logged[512];   /* the sampler's last note printed */
    char *last_failure;      /* "trial N: ERROR" of the last trial that failed, or NULL */
};

static void log_line(loop *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_line(loop *L, const char *fmt, ...) {
    if (!L->o->log) return;
    if (L->o->progress && isatty(fileno(L->o->log))) fputs("\r\033[K", L->o->log);
    va_list ap;
    va_start(ap, fmt);
    tn_buf line = {0};
    tn_buf_printf(&line, "%s: ", L->study->name);
    char *text = tn_xvasprintf(fmt, ap);
    va_end(ap);
    tn_buf_str(&line, text);
    free(text);
    /* a trial's log tail, metric names, a sampler's or Slurm's words: nothing in them
     * may drive the terminal */
    tn_fputs_term(line.data, L->o->log);
    tn_buf_clear(&line);
    fputc('\n', L->o->log);
    fflush(L->o->log);
}

static int better(const loop *L, double a, double b) {
    return L->spec->goal == SPEC_MAXIMIZE ? a > b : a < b;
}

/* An error the loop cannot go on after (the store failed): stop every job; their
 * trials go back to PENDING, so `resume` runs them again. */
static void fail_loop(loop *L, int rc, const char *msg) {
    if (L->fatal) return;
    L->fatal = 1;
    L->error_rc = rc;
    snprintf(L->error, sizeof L->error, "%s", msg);
    for (size_t i = 0; i < L->nrunning; i++)
        if (L->running[i]->job) ex_job_stop(L->running[i]->job, EX_STOPPED, msg);
}

/* Reads trial `number` of the loop's study into row: 0, or a negative code with err
 * (a trial that is gone too: the loop made it, so the store lost it). */
static int get_trial(loop *L, int64_t number, st_trial *row, char *err, size_t errlen) {
    int found;
    int rc = st_trial_get(L->st, L->study->id, number, row, &found, err, errlen);
    if (rc == 0 && !found)
        rc = tn_error(err, errlen, TN_EIO,
                      "trial %lld of study %s is no longer in the store, which this run "
                      "created it in: was the store file replaced or edited while the study "
                      "ran? hint: 'tuner resume %s' runs again what is left",
                      (long long)number, L->study->name, L->study->name);
    return rc;
}

/* Counts a failed trial; at maxFailedTrials the study fails and the trials still
 * running are stopped (and recorded as CANCELLED). */
static void count_failure(loop *L) {
    L->failed++;
    if (L->failed < L->spec->max_failed_trials || L->failing) return;
    L->failing = 1;
    for (size_t i = 0; i < L->nrunning; i++)
        if (L->running[i]->job) ex_job_stop(L->running[i]->job, EX_STOPPED, "the study failed");
}

static void schedule(loop *L);

static void progress_line(loop *L) {
    if (!L->o->log || !L->o->progress || !isatty(fileno(L->o->log))) return;
    int elapsed = (int)(wall_clock() - L->t0);
    char best[128] = "best -";
    if (L->has_best)
        snprintf(best, sizeof best, "best %.6g (trial %lld)", L->best, (long long)L->best_trial);
    fprintf(L->o->log,
            "\r\033[K%s: %lld/%d done, %zu running, %lld failed, %lld stopped early | %s | "
            "%dm%02ds",
            L->study->name, (long long)(L->succeeded + L->failed + L->cancelled + L->stopped),
            L->spec->max_trials, L->nrunning, (long long)L->failed, (long long)L->stopped, best,
            elapsed / 60, elapsed % 60);
    fflush(L->o->log);
}

/* Once a second: the progress line, and whether `tuner cancel` marked the study. */
static void on_progress(evutil_socket_t fd, short what, void *arg) {
    loop *L = arg;
    progress_line(L);
    st_study now;
    int found;
    if (L->cancel_requested || st_study_get(L->st, L->study->name, &now, &found, NULL, 0) != 0)
        return;
    if (found && now.state == ST_STUDY_CANCELLED) {
        L->cancel_requested = 1;
        log_line(L, "cancelled: stopping %zu running trial%s", L->nrunning,
              L->nrunning == 1 ? "" : "s");
        for (size_t i = 0; i < L->nrunning; i++)
            ex_job_stop(L->running[i]->job, EX_STOPPED, "the study was cancelled");
        schedule(L);
    }
    st_study_clear(&now);
}

/* The curve of trial `number`, created (SP_PENDING, empty) if new. */
static curve *curve_of(loop *L, int64_t number) {
    size_t i = (size_t)number - 1;
    if (i >= L->ncurves) {
        L->curves = tn_xrealloc(L->curves, (i + 1) * sizeof *L->curves);
        memset(L->curves + L->ncurves, 0, (i + 1 - L->ncurves) * sizeof *L->curves);
        for (size_t k = L->ncurves; k <= i; k++) L->curves[k].state = SP_PENDING;
        L->ncurves = i + 1;
    }
    return &L->curves[i];
}

/* The trial's curve of the study's metric k (0: the metric tag's, curve_of). */
static curve *metric_curve(loop *L, int64_t number, size_t k) {
    curve *c = curve_of(L, number);
    if (k == 0) return c;
    if (!c->more) c->more = tn_xcalloc(L->spec->nmetrics - 1, sizeof *c->more);
    return &c->more[k - 1];
}

static void curve_clear(curve *c) {
    free(c->pts);
    free(c->attempt);
    free(c->replica);
}

/* Adds a measurement of replica to the curve (kept sorted by step): the chief's records
 * replace any other replica's, another replica's are ignored once a replica is chosen. A
 * repeated step (a restarted replica reporting it again) keeps one value, the newest
 * attempt's; between records of the same attempt, the later one's (records come in the
 * order they arrived, live and from st_measurement_list alike), so the rule sees one
 * value per step. Returns whether the point is now the curve's newest, at its highest
 * step (added there, or replacing the point there): only such a point moves a trial on
 * to a rung, and a restarted replica's repeat of lower steps does not, so a rung is
 * never decided twice. */
static int curve_add(curve *c, const char *replica, int64_t step, int attempt, double v) {
    if (!c->replica || (ex_replica_is_chief(replica) && !ex_replica_is_chief(c->replica))) {
        if (c->replica && strcmp(c->replica, replica) != 0) c->n = 0;
        free(c->replica);
        c->replica = tn_xstrdup(replica);
    } else if (strcmp(c->replica, replica) != 0) {
        return 0;
    }
    size_t i = c->n;
    while (i > 0 && c->pts[i - 1].step > step) i--;
    if (i > 0 && c->pts[i - 1].step == step) {
        if (attempt < c->attempt[i - 1]) return 0; /* an older attempt's record: nothing */
        c->pts[i - 1].value = v;
        c->attempt[i - 1] = attempt;
        return i == c->n;
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->pts = tn_xrealloc(c->pts, c->cap * sizeof *c->pts);
        c->attempt = tn_xrealloc(c->attempt, c->cap * sizeof *c->attempt);
    }
    memmove(c->pts + i + 1, c->pts + i, (c->n - i) * sizeof *c->pts);
    memmove(c->attempt + i + 1, c->attempt + i, (c->n - i) * sizeof *c->attempt);
    c->pts[i] = (es_point){step, v};
    c->attempt[i] = attempt;
    c->n++;
    return i == c->n - 1;
}

/* Applies the early-stopping rule to running trial t after a new measurement. */
static void decide_early_stop(loop *L, trial_run *t) {
    const es_config *cfg = &L->spec->early_stopping;
    if (cfg->policy == ES_NONE || t->early_stopped || !ex_job_is_running(t->job)) return;
    size_t m = L->spec->nmetrics;
    es_decision d;
    if (cfg->policy == ES_DOMINANCE && m > 1) { /* every metric's curve */
        es_trial *flat = tn_xcalloc(L->ncurves * m, sizeof *flat); /* (ncurves, m) */
        es_mtrial *view = tn_xcalloc(L->ncurves, sizeof *view);
        int maximize[SPEC_MAX_METRICS];
        for (size_t k = 0; k < m; k++) maximize[k] = L->spec->metrics[k].goal == SPEC_MAXIMIZE;
        for (size_t i = 0; i < L->ncurves; i++) {
            for (size_t k = 0; k < m; k++) {
                const curve *c = k == 0 ? &L->curves[i]
                                 : L->curves[i].more ? &L->curves[i].more[k - 1] : NULL;
                flat[i * m + k] = (es_trial){.number = (int64_t)i + 1,
                                             .state = L->curves[i].state,
                                             .curve = c ? c->pts : NULL, .n = c ? c->n : 0};
            }
            view[i] = (es_mtrial){.number = (int64_t)i + 1, .state = L->curves[i].state,
                                  .metrics = flat + i * m};
        }
        es_decide_dominance(cfg, maximize, m, view, L->ncurves, (size_t)t->number - 1, &d);
        free(view);
        free(flat);
    } else {
        es_trial *view = tn_xcalloc(L->ncurves, sizeof *view);
        for (size_t i = 0; i < L->ncurves; i++)
            view[i] = (es_trial){.number = (int64_t)i + 1, .state = L->curves[i].state,
                                 .curve = L->curves[i].pts, .n = L->curves[i].n};
        es_decide(cfg, view, L->ncurves, (size_t)t->number - 1, &d);
        free(view);
    }
    char detail[400];
    snprintf(detail, sizeof detail, "%s: %s: %s", es_policy_name(cfg->policy),
             d.stop ? "stop" : "continue", d.reason);
    st_event e = {.time = wall_clock(), .kind = "early_stopping", .detail = detail};
    char err[512];
    if (st_event_add(L->st, L->study->id, t->number, &e, err, sizeof err) != 0) {
        t->lost_record = 1; /* its history is incomplete: run it again on resume */
        fail_loop(L, TN_EIO, err);
    }
    if (!d.stop) return;
    t->early_stopped = 1;
    t->stop_reason = tn_xstrdup(detail);
    log_line(L, "trial %lld stopped early (%s)", (long long)t->number, detail);
    ex_job_stop(t->job, EX_STOPPED, detail);
}

/* Stores the trial's attempts and restarts so far, so that a tuner killed now does
 * not lose them (a Slurm job goes on, and a resume carries on counting). */
static void store_counts(trial_run *t) {
    loop *L = t->L;
    st_trial row;
    char err[512];
    if (!t->job || get_trial(L, t->number, &row, err, sizeof err) != 0) return;
    row.attempts = t->attempts_before + ex_job_attempts(t->job);
    row.restarts = t->restarts_before + ex_job_restarts(t->job);
    if (st_trial_update(L->st, &row, err, sizeof err) != 0) {
        t->lost_record = 1;
        fail_loop(L, TN_EIO, err);
    }
    st_trial_clear(&row);
}

static void on_event(void *ctx, const ex_event *ev) {
    trial_run *t = ctx;
    loop *L = t->L;
    const char *replica = ev->replica, *kind = ev->kind, *detail = ev->detail;
    st_event e = {.time = ev->time, .replica = (char *)replica, .kind = (char *)kind,
                  .detail = (char *)detail, .has_exit_code = ev->exit.code >= 0,
                  .exit_code = ev->exit.code >= 0 ? ev->exit.code : 0,
                  .signal = ev->exit.signal};
    char err[512];
    if (st_event_add(L->st, L->study->id, t->number, &e, err, sizeof err) != 0) {
        t->lost_record = 1; /* its history is incomplete: run it again on resume */
        fail_loop(L, TN_EIO, err);
    }
    if (!strcmp(kind, EX_EV_RUNNING)) { /* a later attempt started: counted before a kill */
        store_counts(t);
    } else if (!strcmp(kind, EX_EV_RESTARTED) || !strcmp(kind, EX_EV_RETRYING)) {
        log_line(L, "trial %lld: %s%s%s", (long long)t->number, replica ? replica : "",
              replica ? " " : "", detail);
        store_counts(t);
    } else if (ev->notice) { /* a Slurm job held, say: the study may wait for someone */
        log_line(L, "trial %lld: %s", (long long)t->number, detail);
    } else if (!strcmp(kind, EX_EV_METRICS)) { /* a metric file that cannot be read */
        free(t->metric_problem);
        t->metric_problem = tn_xasprintf("%s: %s", replica ? replica : "job", detail);
    }
}

/* The attempt of a record that run `run` of replica wrote, as the executor counts the
 * runs of this job: every start of the replica in the trial, those an earlier run of
 * the trial stored included, 1 for the first. A job that has told no start yet (run 0:
 * re-attached to a Slurm job whose starts are stored) is at the last stored one. */
static int attempt_of(const trial_run *t, const char *replica, int run) {
    int before = 0;
    for (size_t i = 0; i < t->nprior; i++)
        if (!strcmp(t->prior[i].replica, replica)) before = t->prior[i].starts;
    return before + run > 0 ? before + run : 1;
}

/* A record that has the metric's key with a value that is no number ("high", true, an
 * object): the trial's metric problem says so, for the message of a trial that ends
 * with no value ("no replica reported the metric" alone hid why). */
static void note_text_metric(trial_run *t, const char *replica, const htr_record *rec,
                             const char *tag) {
    json_t *obj = rec->line ? json_loads(rec->line, 0, NULL) : NULL;
    json_t *v = json_object_get(obj, tag);
    if (v) {
        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        free(t->metric_problem);
        t->metric_problem = tn_xasprintf("%s: '%s' was reported as %.60s%s, which is not a "
                                         "number",
                                         replica, tag, text ? text : "?",
                                         text && strlen(text) > 60 ? "..." : "");
        free(text);
    }
    json_decref(obj);
}

static void on_measurement(void *ctx, const char *replica, int run, const htr_record *rec) {
    trial_run *t = ctx;
    loop *L = t->L;
    char err[512];
    if (t->early_stopped) {
        /* Told to stop: what it reports from now on is not counted. Its objective stays
         * the value the decision judged, and no other trial is compared with a point
         * it reached after it was stopped. The first such record is noted. */
        if (t->late_reports++ == 0) {
            char detail[200];
            snprintf(detail, sizeof detail,
                     "records written after the stop are not counted (the first: %s, step "
                     "%lld)",
                     replica, (long long)rec->step);
            st_event e = {.time = wall_clock(), .kind = "early_stopping", .detail = detail};
            if (st_event_add(L->st, L->study->id, t->number, &e, err, sizeof err) != 0) {
                t->lost_record = 1;
                fail_loop(L, TN_EIO, err);
            }
        }
        return;
    }
    int attempt = attempt_of(t, replica, run);
    st_measurement m = {.step = rec->step, .replica = (char *)replica,
                        .metrics = rec->metrics_json, .timestamp = rec->timestamp,
                        .attempt = attempt};
    if (st_measurement_add(L->st, L->study->id, t->number, &m, err, sizeof err) != 0) {
        t->lost_record = 1; /* its result is incomplete: run it again on resume */
        fail_loop(L, TN_EIO, err);
        return;
    }
    double v;
    /* The objective is the last value reported, by arrival (the reader hands records
     * over once, in the order written), the chief's records before any other's: never
     * ordered by a timestamp the trial controls. So is every other metric's value. */
    int rank = ex_replica_is_chief(replica);
    int more_added = 0; /* the newest point of another metric's curve (the dominance rule's) */
    for (size_t k = 1; k < L->spec->nmetrics; k++) {
        if (!htr_record_metric(rec, L->spec->metrics[k].id, &v)) continue;
        if (!t->more[k].has || rank >= t->more[k].rank) {
            t->more[k].has = 1;
            t->more[k].last = v;
            t->more[k].rank = rank;
        }
        if (isfinite(v) &&
            curve_add(metric_curve(L, t->number, k), replica, rec->step, attempt, v))
            more_added = 1;
    }
    int dominance = L->spec->early_stopping.policy == ES_DOMINANCE;
    if (!htr_record_metric(rec, L->spec->metric_tag, &v)) {
        note_text_metric(t, replica, rec, L->spec->metric_tag);
        if (more_added && dominance) decide_early_stop(L, t);
        return;
    }
    if (!t->has_last || rank >= t->last_rank) {
        t->has_last = 1;
        t->last = v;
        t->last_rank = rank;
        t->last_step = rec->step;
        snprintf(t->last_replica, sizeof t->last_replica, "%s", replica);
        if (isfinite(v)) {
            t->has_objective = 1;
            t->objective = v;
        }
    }
    if (!isfinite(v)) {
        if (more_added && dominance) decide_early_stop(L, t);
        return;
    }
    int newest = curve_add(curve_of(L, t->number), replica, rec->step, attempt, v);
    if (newest || (more_added && dominance)) decide_early_stop(L, t);
}

static void release(loop *L, trial_run *t) {
    for (size_t i = 0; i < L->nrunning; i++) {
        if (L->running[i] == t) {
            L->running[i] = L->running[--L->nrunning];
            break;
        }
    }
}

static void on_finished(void *ctx, int outcome, const char *error) {
    trial_run *t = ctx;
    loop *L = t->L;
    char err[512], msg[1200];
    st_trial row;
    int rc = get_trial(L, t->number, &row, err, sizeof err);
    if (rc == 0) {
        st_trial_state state;
        const char *why = error;
        if (t->lost_record && outcome != EX_REFUSED) {
            state = ST_TRIAL_PENDING; /* not all of it is stored: resume runs it again */
        } else if (outcome == EX_STOPPED && t->early_stopped) {
            state = ST_TRIAL_STOPPED; /* keeps its last finite measurement as its value */
            why = t->stop_reason;
        } else if (outcome == EX_SUCCEEDED && t->has_last && isfinite(t->last)) {
            state = ST_TRIAL_SUCCEEDED;
        } else if (outcome == EX_SUCCEEDED && t->has_last) {
            state = ST_TRIAL_FAILED; /* a non-finite result is no result */
            snprintf(msg, sizeof msg,
                     "the last value of the metric '%s' is %g (%s at step %lld): the run "
                     "diverged or reported no number; an earlier value does not count",
                     L->spec->metric_tag, t->last, t->last_replica, (long long)t->last_step);
            why = msg;
        } else if (outcome == EX_SUCCEEDED) {
            state = ST_TRIAL_FAILED;
            snprintf(msg, sizeof msg,
                     "the job succeeded but no replica reported the metric '%s'%s%s%s (see "
                     "%s/%lld/logs)",
                     L->spec->metric_tag, t->metric_problem ? " (" : "",
                     t->metric_problem ? t->metric_problem : "", t->metric_problem ? ")" : "",
                     L->spec->job_dir, (long long)t->number);
            why = msg;
        } else if (outcome == EX_REFUSED) { /* nothing ran; no trial can until it is fixed */
            state = ST_TRIAL_PENDING;
            fail_loop(L, TN_EINVAL, error ? error : "the executor refused the job");
        } else if (outcome == EX_STOPPED && (L->interrupted || L->fatal)) {
            state = ST_TRIAL_PENDING; /* run again on resume */
        } else if (outcome == EX_STOPPED) {
            state = ST_TRIAL_CANCELLED;
        } else {
            state = ST_TRIAL_FAILED;
        }
        /* a study with several metrics: each must have its last value a number */
        size_t k = 1;
        while (state == ST_TRIAL_SUCCEEDED && k < L->spec->nmetrics && t->more[k].has &&
               isfinite(t->more[k].last))
            k++;
        if (state == ST_TRIAL_SUCCEEDED && k < L->spec->nmetrics) {
            state = ST_TRIAL_FAILED;
            if (t->more[k].has)
                snprintf(msg, sizeof msg,
                         "the last value of the metric '%s' (metric %zu of the study's %zu) "
                         "is %g: the run diverged or reported no number",
                         L->spec->metrics[k].id, k + 1, L->spec->nmetrics, t->more[k].last);
            else
                snprintf(msg, sizeof msg,
                         "the job succeeded but no replica reported the metric '%s' (metric "
                         "%zu of the study's %zu; see %s/%lld/logs)",
                         L->spec->metrics[k].id, k + 1, L->spec->nmetrics, L->spec->job_dir,
                         (long long)t->number);
            why = msg;
        }
        row.state = state;
        free(row.error);
        row.error = why && state != ST_TRIAL_PENDING ? tn_xstrdup(why) : NULL;
        /* a run whose last word was NaN diverged: its earlier value is no result to show */
        int diverged = state == ST_TRIAL_FAILED && t->has_last && !isfinite(t->last);
        row.has_objective = t->has_objective && !diverged;
        row.objective = t->objective;
        row.nvalues = row.has_objective;
        row.values[0] = t->objective;
        for (k = 1; k < L->spec->nmetrics && row.has_objective; k++) {
            if (!t->more[k].has || !isfinite(t->more[k].last)) break;
            row.values[k] = t->more[k].last;
        }
        if (row.has_objective && k == L->spec->nmetrics)
            row.nvalues = (int)k; /* else the objective alone, or none */
        row.attempts = t->attempts_before + ex_job_attempts(t->job);
        row.restarts = t->restarts_before + ex_job_restarts(t->job);
        row.finished = state != ST_TRIAL_PENDING ? wall_clock() : 0;
        if (state == ST_TRIAL_PENDING) { /* its job is gone: a resume runs it anew */
            free(row.executor_job);
            row.executor_job = NULL;
        }
        rc = st_trial_update(L->st, &row, err, sizeof err);
        if (rc) fail_loop(L, rc, err);
        switch (state) {
        case ST_TRIAL_SUCCEEDED: {
            L->succeeded++;
            int is_best = !L->has_best || better(L, t->objective, L->best);
            if (is_best) {
                L->has_best = 1;
                L->best = t->objective;
                L->best_trial = t->number;
            }
            if (L->spec->nmetrics == 1) {
                log_line(L, "trial %lld succeeded: %s = %.6g%s", (long long)t->number,
                         L->spec->metric_tag, t->objective, is_best ? " (best so far)" : "");
            } else {
                char line[1024];
                size_t len = 0;
                for (k = 0; k < L->spec->nmetrics && len < sizeof line; k++)
                    len += (size_t)snprintf(line + len, sizeof line - len, "%s%s = %.6g",
                                            k ? ", " : "", L->spec->metrics[k].id,
                                            row.values[k]);
                log_line(L, "trial %lld succeeded: %s", (long long)t->number, line);
            }
            break;
        }
        case ST_TRIAL_FAILED:
            log_line(L, "trial %lld failed: %s", (long long)t->number, why ? why : "unknown");
            free(L->last_failure);
            L->last_failure = tn_xasprintf("trial %lld: %s", (long long)t->number,
                                           why ? why : "unknown");
            count_failure(L);
            break;
        case ST_TRIAL_CANCELLED: L->cancelled++; break;
        case ST_TRIAL_STOPPED: L->stopped++; break;
        default: break;
        }
        curve_of(L, t->number)->state = state_to_sp(state);
        st_trial_clear(&row);
    } else {
        fail_loop(L, rc, err);
    }
    release(L, t);
    ex_job_free(t->job);
    trial_run_free(t);
    schedule(L);
}

/* The executor's handle of a trial's job changed (a new Slurm submission): store it
 * with the trial, with the attempts so far, so a resumed tuner re-attaches. */
static void on_handle(void *ctx, const char *handle) {
    trial_run *t = ctx;
    loop *L = t->L;
    st_trial row;
    char err[512];
    int rc = get_trial(L, t->number, &row, err, sizeof err);
    if (rc == 0) {
        free(row.executor_job);
        row.executor_job = tn_xstrdup(handle);
        row.attempts = t->attempts_before + (t->job ? ex_job_attempts(t->job) : 1);
        rc = st_trial_update(L->st, &row, err, sizeof err);
        st_trial_clear(&row);
    }
    if (rc) fail_loop(L, rc, err);
}

/* The trial's argv (program, fixed flags, args, one flag per parameter), yours to
 * ex_strv_free. */
static char **trial_argv(const loop *L, const double *values, size_t *argc) {
    const tn_spec *s = L->spec;
    size_t cap = 5 + s->ncommand + s->nargs + s->space.n, n = 0;
    char **argv = tn_xcalloc(cap, sizeof *argv);
    if (s->command) {
        argv[n++] = tn_xstrdup(L->program);
        for (size_t i = 1; i < s->ncommand; i++) argv[n++] = tn_xstrdup(s->command[i]);
    } else {
        argv[n++] = tn_xstrdup("python3");
        argv[n++] = tn_xstrdup("-m");
        argv[n++] = tn_xstrdup(s->python_module);
    }
    for (size_t i = 0; i < s->nargs; i++) argv[n++] = tn_xstrdup(s->args[i]);
    tp_append_flags(&s->space, values, argv, &n);
    argv[n] = NULL;
    *argc = n;
    return argv;
}

static const ex_callbacks trial_callbacks = {on_event, on_measurement, on_finished, on_handle};

/* Counts the stored starts of each replica of trial t (its `started` events), for a
 * trial that ran before (resumed, re-attached). On an error the counts stay 0: the
 * attempts then start over at 1, and a repeated step still goes to the later record. */
static void count_prior_starts(loop *L, trial_run *t) {
    st_event *ev = NULL;
    size_t nev = 0;
    if (st_event_list(L->st, L->study->id, t->number, &ev, &nev, NULL, 0) != 0) return;
    for (size_t i = 0; i < nev; i++) {
        if (!ev[i].replica || strcmp(ev[i].kind, "started") != 0) continue;
        size_t k = 0;
        while (k < t->nprior && strcmp(t->prior[k].replica, ev[i].replica) != 0) k++;
        if (k == t->nprior) {
            t->prior = tn_xrealloc(t->prior, (t->nprior + 1) * sizeof *t->prior);
            snprintf(t->prior[k].replica, sizeof t->prior[k].replica, "%s", ev[i].replica);
            t->prior[k].starts = 0;
            t->nprior++;
        }
        t->prior[k].starts++;
    }
    st_events_free(ev, nev);
}

/* A new trial_run of trial `number` (not yet in the running list). */
static trial_run *trial_run_new(loop *L, int64_t number, const double *values, const char *params,
                                const st_trial *row) {
    trial_run *t = tn_xcalloc(1, sizeof *t);
    t->L = L;
    t->number = number;
    curve_of(L, number)->state = SP_PENDING; /* a re-run keeps its earlier points */
    t->values = tn_xcalloc(L->spec->space.n + 1, sizeof *t->values);
    memcpy(t->values, values, L->spec->space.n * sizeof *values);
    t->params = tn_xstrdup(params);
    t->started = wall_clock();
    if (row) {
        t->attempts_before = row->attempts;
        t->restarts_before = row->restarts;
        count_prior_starts(L, t);
    }
    return t;
}

static void add_running(loop *L, trial_run *t) {
    if (L->nrunning % 16 == 0)
        L->running = tn_xrealloc(L->running, (L->nrunning + 16) * sizeof *L->running);
    L->running[L->nrunning++] = t;
}

/* Records a trial that could not be started as FAILED with err. */
static void fail_unstarted(loop *L, int64_t number, const char *err) {
    st_trial fail;
    char serr[1024];
    int rc = get_trial(L, number, &fail, serr, sizeof serr);
    if (rc == 0) {
        fail.state = ST_TRIAL_FAILED;
        free(fail.error);
        fail.error = tn_xstrdup(err);
        fail.finished = wall_clock();
        rc = st_trial_update(L->st, &fail, serr, sizeof serr);
        st_trial_clear(&fail);
    }
    log_line(L, "trial %lld failed: %s", (long long)number, err);
    if (rc) { /* not stored: the trial stays as it was (a resume runs it again) */
        fail_loop(L, rc, serr);
        return;
    }
    count_failure(L);
}

/* Queues trial `number` to run again later (its job did not fit after all). */
static void requeue(loop *L, int64_t number) {
    L->rerun = tn_xrealloc(L->rerun, (L->nrerun + 1) * sizeof *L->rerun);
    L->rerun[L->nrerun++] = number;
}

/* Fills cfg with the job of trial `number` with argv; trial_id is the caller's buffer
 * and the returned folder (the caller's to free once the job is started) what cfg
 * points into. */
static char *trial_job_config(const loop *L, int64_t number, char **argv, size_t argc,
                              char *trial_id, size_t idlen, ex_job_config *cfg) {
    snprintf(trial_id, idlen, "%lld", (long long)number);
    char *dir = ex_trial_dir(L->spec->job_dir, (long long)number);
    *cfg = L->shape;
    cfg->trial = trial_id;
    cfg->argv = (const char *const *)argv;
    cfg->argc = argc;
    cfg->job_dir = dir;
    return dir;
}

/* Starts trial `number` with the given point. Returns 0 or a negative code. */
static int start_trial(loop *L, int64_t number, const double *values, const char *params,
                       const st_trial *row) {
    trial_run *t = trial_run_new(L, number, values, params, row);
    size_t argc;
    char **argv = trial_argv(L, values, &argc);
    char trial_id[32], err[1024];
    ex_job_config cfg;
    char *dir = trial_job_config(L, number, argv, argc, trial_id, sizeof trial_id, &cfg);
    add_running(L, t);
    int rc = ex_job_start(L->x, &cfg, &trial_callbacks, t, &t->job, err, sizeof err);
    ex_strv_free(argv);
    free(dir);
    if (rc == 0) {
        store_counts(t); /* its first attempt (told before t->job was set) */
        return 0;
    }
    release(L, t);
    trial_run_free(t);
    if (rc == EX_BUSY) { /* no room after all: it waits for the next free slot */
        requeue(L, number);
        return 0;
    }
    fail_unstarted(L, number, err); /* nothing started (job dir): the trial fails */
    return 0;
}

/* The newest stored event of each replica (and of the job) that a replica's launcher
 * wrote (started, exited, restarted): what re-attaching must not tell again. The
 * array and its strings are yours (seen_free). */
static ex_seen *seen_events(loop *L, int64_t trial, size_t *n) {
    st_event *ev = NULL;
    size_t nev = 0;
    *n = 0;
    if (st_event_list(L->st, L->study->id, trial, &ev, &nev, NULL, 0) != 0) return NULL;
    ex_seen *seen = tn_xcalloc(nev + 1, sizeof *seen);
    for (size_t i = 0; i < nev; i++) {
        const char *k = ev[i].kind;
        if (strcmp(k, "started") && strcmp(k, "exited") && strcmp(k, "restarted")) continue;
        size_t s = 0;
        while (s < *n && !((!seen[s].replica && !ev[i].replica) ||
                           (seen[s].replica && ev[i].replica &&
                            !strcmp(seen[s].replica, ev[i].replica))))
            s++;
        if (s == *n) {
            seen[s].replica = ev[i].replica ? tn_xstrdup(ev[i].replica) : NULL;
            seen[s].time = ev[i].time;
            (*n)++;
        } else if (ev[i].time > seen[s].time) {
            seen[s].time = ev[i].time;
        }
    }
    st_events_free(ev, nev);
    return seen;
}

static void seen_free(ex_seen *seen, size_t n) {
    for (size_t i = 0; i < n; i++) free((char *)seen[i].replica);
    free(seen);
}

/* Re-attaches trial `row` to the job `handle` an earlier tuner left. Returns 0, or 1
 * when the executor cannot attach to it (the trial then runs again). */
static int attach_trial(loop *L, const st_trial *row, const double *values, const char *handle,
                        int attempts) {
    size_t nseen;
    ex_seen *seen = seen_events(L, row->number, &nseen);
    trial_run *t = trial_run_new(L, row->number, values, row->params, row);
    /* the stored attempts (the attached submission's included) go on counting there */
    t->attempts_before = 0;
    size_t argc;
    char **argv = trial_argv(L, values, &argc);
    char trial_id[32];
    ex_job_config cfg;
    char *dir = trial_job_config(L, row->number, argv, argc, trial_id, sizeof trial_id, &cfg);
    add_running(L, t);
    int rc = ex_job_attach(L->x, &cfg, &trial_callbacks, t, handle, attempts, seen, nseen,
                           &t->job);
    seen_free(seen, nseen);
    ex_strv_free(argv);
    free(dir);
    if (rc != 0 || !t->job) {
        release(L, t);
        trial_run_free(t);
        return 1;
    }
    /* the job attached may be a later one than the stored (a live one that recover
     * found, or one whose files the executor found): store it, and its attempt */
    const char *now = ex_job_handle(t->job) ? ex_job_handle(t->job) : handle;
    if (!row->executor_job || strcmp(now, row->executor_job) != 0) on_handle(t, now);
    log_line(L, "trial %lld: re-attached to its job (%s)", (long long)row->number, now);
    return 0;
}

/* Marks a trial RUNNING with a fresh start time (resumed trials). */
static int mark_running(loop *L, st_trial *row) {
    row->state = ST_TRIAL_RUNNING;
    row->started = wall_clock();
    row->finished = 0;
    char err[512];
    int rc = st_trial_update(L->st, row, err, sizeof err);
    if (rc) fail_loop(L, rc, err);
    return rc;
}

static void schedule(loop *L) {
    const tn_spec *s = L->spec;
    char err[1024];
    while (!L->interrupted && !L->failing && !L->fatal && !L->cancel_requested &&
           (int)L->nrunning < s->max_parallel_trials && ex_has_room(L->x, &L->shape)) {
        if (L->rerun_next < L->nrerun) { /* a trial an earlier run left unfinished */
            int64_t number = L->rerun[L->rerun_next++];
            st_trial row;
            if (get_trial(L, number, &row, err, sizeof err) != 0) {
                fail_loop(L, TN_EIO, err);
                break;
            }
            double *v = tn_xcalloc(s->space.n + 1, sizeof *v);
            if (tp_from_json(&s->space, row.params, v, err, sizeof err) != 0) {
                /* its stored parameters no longer fit the study's space (the store was
                 * edited): it cannot run again as it was */
                char why[1400];
                snprintf(why, sizeof why,
                         "cannot run it again: its stored parameters do not fit the study's "
                         "space: %s",
                         err);
                fail_unstarted(L, number, why);
            } else if (mark_running(L, &row) == 0) {
                log_line(L, "trial %lld: running it again (an earlier run left it unfinished)",
                         (long long)number);
                start_trial(L, number, v, row.params, &row);
            }
            free(v);
            st_trial_clear(&row);
            continue;
        }
        if (L->exhausted || L->created >= s->max_trials) break;
        ask_ctx a;
        int rc = ask_next(L->st, s, L->study, ST_TRIAL_RUNNING, &a, err, sizeof err);
        if (rc < 0) {
            fail_loop(L, rc, err);
        } else if (a.exhausted) {
            L->exhausted = 1;
        } else {
            L->created++;
            if (a.note[0] && strcmp(L->note_logged, a.note) != 0) {
                log_line(L, "trial %lld: %s", (long long)a.number, a.note);
                snprintf(L->note_logged, sizeof L->note_logged, "%s", a.note);
            }
            start_trial(L, a.number, a.values, a.params, NULL);
        }
        free(a.values);
        free(a.params);
    }
    int more = !L->interrupted && !L->failing && !L->fatal && !L->cancel_requested &&
               (L->rerun_next < L->nrerun || (!L->exhausted && L->created < s->max_trials));
    if (L->nrunning == 0 && !more && !L->done) {
        L->done = 1;
        event_base_loopbreak(L->base); /* no effect when the loop is not running yet:
                                          study_run checks done before dispatching */
    }
}

static void on_signal(evutil_socket_t sig, short what, void *arg) {
    loop *L = arg;
    /* a hangup often comes twice (the terminal, then the shell): only a second Ctrl-C
     * or SIGTERM takes away the replicas' grace */
    if (L->interrupted && sig == SIGHUP) return;
    if (L->interrupted) { /* second signal: no more grace */
        log_line(L, "second signal: killing every replica now");
        for (size_t i = 0; i < L->nrunning; i++) ex_job_stop(L->running[i]->job, EX_STOPPED, NULL);
        char aerr[2048];
        if (ex_abort_all(L->x, aerr, sizeof aerr) != 0) /* Slurm: one scancel for all */
            log_line(L, "%s", aerr); /* which jobs may still run, and what to do */
        while (L->nrunning > 0) {
            trial_run *t = L->running[0];
            release(L, t);
            /* Freed without their callbacks, so no replica's `exited` is stored: one
             * event says what became of them instead. A job whose cancel failed (the
             * Slurm controller away) may still run: its handle stays with the trial,
             * so `tuner resume` finds it (and cancels it) rather than forgetting it. */
            int may_run = ex_job_free(t->job) != 0;
            st_trial row;
            int have_row = get_trial(L, t->number, &row, NULL, 0) == 0;
            char *detail;
            if (may_run && have_row && row.executor_job)
                detail = tn_xasprintf("a second signal tried to cancel the trial's job at once, "
                                      "but the cancel failed: %s may still run; `tuner resume` "
                                      "cancels it and runs the trial again",
                                      row.executor_job);
            else if (may_run)
                detail = tn_xstrdup("a second signal tried to cancel the trial's job at once, but "
                                    "the cancel failed: a job of the trial may still run; `tuner "
                                    "resume` cancels it and runs the trial again");
            else
                detail = tn_xstrdup("a second signal killed every replica at once; their exits "
                                    "are not recorded, and `tuner resume` runs the trial again");
            st_event e = {.time = wall_clock(), .kind = "killed", .detail = detail};
            st_event_add(L->st, L->study->id, t->number, &e, NULL, 0);
            free(detail);
            if (have_row) {
                row.state = ST_TRIAL_PENDING;
                if (!may_run) { /* its job is gone: a resume runs it anew */
                    free(row.executor_job);
                    row.executor_job = NULL;
                }
                st_trial_update(L->st, &row, NULL, 0);
                st_trial_clear(&row);
            }
            trial_run_free(t);
        }
        event_base_loopbreak(L->base);
        return;
    }
    L->interrupted = 1;
    log_line(L, "%s: stopping %zu running trial%s (Ctrl-C again to kill them at once); "
             "`tuner resume %s` carries on",
          strsignal((int)sig), L->nrunning, L->nrunning == 1 ? "" : "s", L->study->name);
    for (size_t i = 0; i < L->nrunning; i++)
        ex_job_stop(L->running[i]->job, EX_STOPPED, "interrupted");
    schedule(L);
}

/* What every trial's job of spec asks for: all of ex_job_config but the trial's own
 * fields (trial, argv, job_dir), which start_trial fills. Points into spec. */
static void job_shape(const tn_spec *spec, const study_opts *o, ex_job_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->study = spec->job_id;
    cfg->metric_tag = spec->metric_tag;
    cfg->job = spec->training_input;
    cfg->use_chief_name = spec->use_chief_in_tf_config;
    for (int type = 0; type < TF_NTYPES; type++) {
        cfg->count[type] = spec_replica_count(spec, type);
        cfg->cores[type] = spec->resources[type].cores;
        cfg->gpus[type] = spec->resources[type].gpus;
        cfg->memory_mb[type] = spec->resources[type].memory_mb;
        cfg->env[type] = (const char *const *)spec->env[type];
    }
    cfg->max_replica_restarts = spec->max_replica_restarts;
    cfg->max_job_retries = spec->max_job_retries;
    cfg->restart_backoff = spec->restart_backoff;
    cfg->restart_backoff_max = spec->restart_backoff_max;
    cfg->fail_on_repeat = spec->fail_on_repeat;
    cfg->timeout_seconds = spec->trial_timeout_seconds;
    cfg->grace_seconds = o->grace_seconds > 0 ? o->grace_seconds : 10;
    cfg->poll_seconds = o->poll_seconds > 0 ? o->poll_seconds : 0.5;
}

/* The executor a run of spec uses: the spec's "executor" (local by default) with the
 * machine's resources from o. Strings point into spec, but for the two that
 * executor_options_clear frees. */
static void executor_options(const tn_spec *spec, const study_opts *o, ex_options *xo) {
    memset(xo, 0, sizeof *xo);
    const spec_executor *e = &spec->executor;
    xo->backend = e->type == SPEC_EXECUTOR_SLURM ? EX_SLURM : EX_LOCAL;
    xo->cores = o->cores;
    xo->gpus = o->gpus;
    xo->oversubscribe = o->oversubscribe;
    xo->job_dir = spec->job_dir;
    xo->slurm.partition = e->partition;
    xo->slurm.account = e->account;
    xo->slurm.qos = e->qos;
    xo->slurm.time_limit = e->time_limit;
    xo->slurm.extra_args = (const char *const *)e->extra_args;
    xo->slurm.nextra = e->nextra;
    xo->slurm.launcher = study_resolve_program("tuner-launch", o->self_dir);
    xo->slurm.job_prefix = ex_job_prefix(spec->job_id, spec->job_dir);
    xo->slurm.poll_seconds = 1;
}

static void executor_options_clear(ex_options *xo) {
    free((char *)xo->slurm.launcher);
    free((char *)xo->slurm.job_prefix);
    memset(xo, 0, sizeof *xo);
}

/* On Slurm, the job dir (made absolute as the tuner stores it) is the folder of every
 * job's --output file, where sbatch takes a backslash to mean "replace no %j here" and
 * drops it: the job cannot open its output (a folder that does not exist) and fails at
 * launch, every run (JobLaunchFailure), and the tuner runs it again with no word of why.
 * A line break or other control character is refused too (the spec refuses them in
 * jobDir; here one could come from the current folder). */
static int check_slurm_job_dir(const char *job_dir, char *err, size_t errlen) {
    char cwd[4096] = "";
    if (job_dir[0] != '/' && !getcwd(cwd, sizeof cwd)) cwd[0] = '\0';
    char *path = tn_xasprintf("%s%s%s", cwd, cwd[0] ? "/" : "", job_dir);
    const char *p = path;
    while (*p && *p != '\\' && (unsigned char)*p >= 0x20 && *p != 0x7f) p++;
    int rc = 0;
    if (*p == '\\')
        rc = tn_error(err, errlen, TN_EINVAL,
                      "the job dir %s has a backslash, which sbatch takes in the path of a job's "
                      "output file (JOB_DIR/slurm/slurm-%%j.out) to mean \"no %%j here\" and "
                      "drops: every job of the study would fail at launch, unable to open it\n"
                      "hint: set trainingInput.jobDir to a folder with no backslash in its path",
                      path);
    else if (*p)
        rc = tn_error(err, errlen, TN_EINVAL,
                      "the job dir has a line break, tab or other control character in its path "
                      "(byte 0x%02x after %.*s)\nhint: set trainingInput.jobDir to an absolute "
                      "path without one",
                      (unsigned char)*p, (int)(p - path), path);
    free(path);
    return rc;
}

int study_preflight(const tn_spec *spec, const study_opts *o, char *err, size_t errlen) {
    if (!spec->command && !spec->python_module)
        return tn_error(err, errlen, TN_EINVAL,
                        "the spec has no trainingInput.command or pythonModule: nothing to run\n"
                        "hint: drive the study with `tuner ask` and `tuner tell`");
    if (spec->executor.type == SPEC_EXECUTOR_SLURM && spec->job_dir &&
        check_slurm_job_dir(spec->job_dir, err, errlen) != 0)
        return TN_EINVAL;
    char *program = spec->command ? study_resolve_program(spec->command[0], o->self_dir)
                                  : tn_xstrdup("python3");
    int rc = 0;
    char why[512] = "";
    const char *path = NULL; /* the replicas' PATH: the spec's env may set it */
    for (char **e = spec->env[TF_CHIEF]; e && *e && !path; e++)
        if (!strncmp(*e, "PATH=", 5)) path = *e + 5;
    int bad = ex_program_problem(program, path, why, sizeof why) != 0;
    if (bad && spec->command)
        rc = tn_error(err, errlen, TN_EINVAL,
                      "cannot run '%s': %s\nhint: fix "
                      "trainingInput.command (a bare name is looked up beside tuner, then on "
                      "PATH); `tuner resume` runs the command the study was created with, so "
                      "for a stored study put the program back there",
                      program, why);
    else if (bad) /* pythonModule: python3 -m MODULE */
        rc = tn_error(err, errlen, TN_EINVAL,
                      "cannot run '%s' for trainingInput.pythonModule: %s\nhint: install "
                      "Python 3 (Debian: apt-get install python3 python3-venv python3-pip) or "
                      "put python3 on PATH (or the spec's env PATH)",
                      program, why);
    free(program);
    if (rc) return rc;
    ex_job_config shape;
    ex_options xo;
    job_shape(spec, o, &shape);
    executor_options(spec, o, &xo);
    rc = ex_check(&xo, &shape, err, errlen);
    executor_options_clear(&xo);
    return rc;
}

/* Whether the live job a is a later submission than job b (NULL: none): handles of one
 * executor ("slurm:ID"), a's id the larger; Slurm numbers its jobs in the order they
 * are submitted (up to MaxJobId, where it wraps: not within one trial's re-runs). */
static int later_job(const char *a, const char *b) {
    if (!b) return 1;
    const char *ca = strrchr(a, ':'), *cb = strrchr(b, ':');
    if (!ca || !cb || ca - a != cb - b || strncmp(a, b, (size_t)(ca - a)) != 0) return 0;
    char *ea, *eb;
    long long ia = strtoll(ca + 1, &ea, 10), ib = strtoll(cb + 1, &eb, 10);
    return !*ea && !*eb && ea > ca + 1 && eb > cb + 1 && ia > ib;
}

/* Picks up the trials an earlier run left RUNNING or PENDING: a trial whose job
 * still exists (the executor's handle stored with it, or a live job the executor
 * finds for it) is re-attached; the others run again, in order. Live jobs of the
 * study that no trial claims (strays of a crash) are cancelled. */
static int resume_trials(loop *L, const st_trial *trials, size_t n, char *err, size_t errlen) {
    char **live = NULL;
    long *live_trial = NULL;
    size_t nlive = 0;
    int killed = 0;
    int rc = ex_recover(L->x, &live, &live_trial, &nlive, &killed, err, errlen);
    if (rc) return rc;
    if (killed)
        log_line(L, "killed %d process%s an earlier run of the study left behind", killed,
                 killed == 1 ? "" : "es");
    unsigned char *claimed = tn_xcalloc(nlive + 1, 1);
    double *v = tn_xcalloc(L->spec->space.n + 1, sizeof *v);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const st_trial *t = &trials[i];
        /* a trial a cancel cut short runs again, as one a Ctrl-C stopped: resuming the
         * study is taking the cancel back */
        if (st_trial_state_final(t->state) && t->state != ST_TRIAL_CANCELLED) continue;
        /* the stored job (the attempts stored count it), unless a live job of the trial
         * is a later submission: one whose id was never stored, as when the tuner died
         * while a re-run's sbatch had not yet answered. The stored job has ended then
         * (a job is re-run once it is over), and attaching to it would re-run it once
         * more, cancelling the live one as a stray. */
        const char *handle = t->executor_job;
        int attempts = t->attempts > 0 ? t->attempts : 1;
        for (size_t k = 0; k < nlive; k++) {
            if (live_trial[k] != t->number || !later_job(live[k], handle)) continue;
            handle = live[k];
            attempts = t->attempts + 1;
        }
        if (handle && t->state == ST_TRIAL_RUNNING &&
            tp_from_json(&L->spec->space, t->params, v, NULL, 0) == 0 &&
            attach_trial(L, t, v, handle, attempts) == 0) {
            for (size_t k = 0; k < nlive; k++)
                if (!strcmp(live[k], handle)) claimed[k] = 1;
            continue;
        }
        L->rerun[L->nrerun++] = t->number;
    }
    for (size_t k = 0; k < nlive; k++) {
        if (claimed[k]) continue;
        char cerr[512];
        if (ex_cancel_handle(L->x, live[k], cerr, sizeof cerr) == 0)
            log_line(L, "cancelled %s, a stray job of trial %ld that no trial claims", live[k],
                     live_trial[k]);
        else
            log_line(L, "warning: cannot cancel %s, a stray job of trial %ld: %s", live[k],
                     live_trial[k], cerr);
    }
    free(v);
    free(claimed);
    ex_strv_free(live);
    free(live_trial);
    return rc;
}

/* Counts what an earlier run of the study finished, and its best so far. */
static void count_finished(loop *L, const st_trial *trials, size_t n) {
    for (size_t i = 0; i < n; i++) {
        switch (trials[i].state) {
        case ST_TRIAL_PENDING:
        case ST_TRIAL_RUNNING: break; /* resumed once the executor is up */
        case ST_TRIAL_SUCCEEDED:
            L->succeeded++;
            if (trials[i].has_objective &&
                (!L->has_best || better(L, trials[i].objective, L->best))) {
                L->has_best = 1;
                L->best = trials[i].objective;
                L->best_trial = trials[i].number;
            }
            break;
        case ST_TRIAL_FAILED: L->failed++; break;
        case ST_TRIAL_STOPPED: L->stopped++; break;
        default: L->cancelled++; break;
        }
    }
}

/* The stored learning curves of the trials, which the early-stopping rule compares. */
static int load_curves(loop *L, const st_trial *trials, size_t n, char *err, size_t errlen) {
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        curve *c = curve_of(L, trials[i].number);
        c->state = state_to_sp(trials[i].state);
        st_measurement *ms = NULL;
        size_t nm = 0;
        rc = st_measurement_list(L->st, L->study->id, trials[i].number, &ms, &nm, err, errlen);
        for (size_t k = 0; k < nm; k++) {
            json_t *obj = json_loads(ms[k].metrics, 0, NULL);
            for (size_t j = 0; j < L->spec->nmetrics; j++) { /* every metric's curve */
                json_t *v = json_object_get(obj, L->spec->metrics[j].id);
                if (json_is_number(v) && isfinite(json_number_value(v)))
                    curve_add(metric_curve(L, trials[i].number, j), ms[k].replica, ms[k].step,
                              ms[k].attempt, json_number_value(v));
            }
            json_decref(obj);
        }
        st_measurements_free(ms, nm);
    }
    return rc;
}

/* Says what resumePreviousJobId brings: how many trials warm-start the sampler. */
static int tell_warm_start(loop *L, char *err, size_t errlen) {
    const tn_spec *spec = L->spec;
    warm w;
    size_t used = 0;
    int rc = previous_trials(L->st, spec, &w, err, errlen);
    if (rc) return rc;
    if (w.n) {
        double *vals = tn_xcalloc(w.n * spec->space.n + 1, sizeof *vals);
        sp_trial *hist = tn_xcalloc(w.n + 1, sizeof *hist);
        used = warm_start(spec, &w, hist, vals, NULL, NULL);
        free(vals);
        free(hist);
    }
    char why[256] = "";
    if (w.skipped_space && w.skipped_metrics)
        snprintf(why, sizeof why, " (%zu skipped: their parameters are not in this space; "
                 "%zu: without every metric of this study)", w.skipped_space, w.skipped_metrics);
    else if (w.skipped_space)
        snprintf(why, sizeof why, " (%zu skipped: their parameters are not in this space)",
                 w.skipped_space);
    else if (w.skipped_metrics)
        snprintf(why, sizeof why, " (%zu skipped: without every metric of this study)",
                 w.skipped_metrics);
    warm_clear(&w);
    if (!sp_uses_history(spec->algorithm))
        log_line(L, "resumePreviousJobId %s: no warm start, %s does not use the history",
                 spec->resume_previous_job_id,
                 spec->algorithm == SP_ALGO_GRID ? "grid search" : "random search");
    else
        log_line(L, "warm start from study %s: %zu succeeded trial%s%s",
                 spec->resume_previous_job_id, used, used == 1 ? "" : "s", why);
    return 0;
}

/* Runs the event loop until the study is over: the executor, the earlier run's trials
 * resumed, signals, the progress line once a second, and the first trials. */
static int run_loop(loop *L, const ex_options *xo, const st_trial *trials, size_t n,
                    char *err, size_t errlen) {
    L->base = event_base_new();
    int rc = ex_executor_new(L->base, xo, &L->x, err, errlen);
    if (!rc) rc = resume_trials(L, trials, n, err, errlen);
    if (rc) return rc;
    /* SIGHUP too: a closed terminal or a dropped ssh session stops the study as Ctrl-C
     * does, rather than killing the tuner with its replicas left running */
    static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
        if (stop_signals[i] == SIGHUP && !L->o->stop_on_hangup) continue; /* nohup */
        L->signal_ev[i] = evsignal_new(L->base, stop_signals[i], on_signal, L);
        if (!L->signal_ev[i]) tn_out_of_memory("the study's signal events");
        evsignal_add(L->signal_ev[i], NULL);
    }
    L->progress_ev = event_new(L->base, -1, EV_PERSIST, on_progress, L);
    struct timeval second = {1, 0};
    evtimer_add(L->progress_ev, &second);
    L->t0 = wall_clock();
    schedule(L);
    if (!L->done) event_base_dispatch(L->base);
    if (L->o->log && L->o->progress && isatty(fileno(L->o->log))) {
        progress_line(L);
        fputc('\n', L->o->log);
    }
    return 0;
}

/* Stores how the study ended (why, when it failed): study_run's result and *outcome. */
static int finish_study(loop *L, int *outcome, char *err, size_t errlen) {
    const tn_spec *spec = L->spec;
    st_study_state state;
    char why[4096] = "";
    int rc = 0;
    if (L->fatal) {
        /* the store or the disk failed the run (I/O), not the study: it is left STOPPED,
         * for `tuner resume` once that is mended; a study that cannot run is FAILED */
        state = L->error_rc == TN_EIO || L->error_rc == 0 ? ST_STUDY_STOPPED : ST_STUDY_FAILED;
        snprintf(why, sizeof why, "%s", L->error);
        rc = tn_error(err, errlen, L->error_rc ? L->error_rc : TN_EIO, "%s", L->error);
    } else if (L->cancel_requested) {
        state = ST_STUDY_CANCELLED;
        *outcome = STUDY_INTERRUPTED;
    } else if (L->interrupted) {
        state = ST_STUDY_STOPPED;
        *outcome = STUDY_INTERRUPTED;
    } else if (L->failing) {
        state = ST_STUDY_FAILED;
        snprintf(why, sizeof why, "%lld trial%s failed (maxFailedTrials is %d)%s%s",
                 (long long)L->failed, L->failed == 1 ? "" : "s", spec->max_failed_trials,
                 L->last_failure ? "; the last, " : "", L->last_failure ? L->last_failure : "");
        tn_error(err, errlen, TN_EINVAL, "%s", why);
        *outcome = STUDY_FAILED;
    } else {
        state = ST_STUDY_SUCCEEDED;
        *outcome = STUDY_DONE;
    }
    /* A `tuner cancel` since the last look (on_progress, once a second) stands: the study
     * stays CANCELLED rather than end as this run would have it. */
    char serr[512];
    st_study_state stored = state;
    if (st_study_set_run_state(L->st, L->study->id, ST_STUDY_RUNNING, state,
                               why[0] ? why : NULL, &stored, serr, sizeof serr) != 0 &&
        rc == 0)
        rc = tn_error(err, errlen, TN_EIO, "%s", serr);
    if (stored == ST_STUDY_CANCELLED && state != ST_STUDY_CANCELLED) {
        log_line(L, "cancelled (tuner cancel) as the run ended: the study stays CANCELLED, "
                    "not %s",
                 st_study_state_name(state));
        *outcome = STUDY_INTERRUPTED;
    }
    if (rc == 0 && (*outcome == STUDY_DONE || *outcome == STUDY_FAILED))
        log_line(L, "%s: %lld succeeded, %lld failed, %lld stopped early%s",
                 st_study_state_name(state), (long long)L->succeeded, (long long)L->failed,
                 (long long)L->stopped, L->exhausted ? " (the grid is exhausted)" : "");
    return rc;
}

/* Releases what the loop holds; running trials (after a fatal error) are aborted. */
static void loop_free(loop *L) {
    char aerr[2048];
    if (L->nrunning > 0 && ex_abort_all(L->x, aerr, sizeof aerr) != 0) log_line(L, "%s", aerr);
    while (L->nrunning > 0) {
        trial_run *t = L->running[0];
        release(L, t);
        ex_job_free(t->job);
        trial_run_free(t);
    }
    ex_executor_free(L->x);
    for (size_t i = 0; i < sizeof L->signal_ev / sizeof L->signal_ev[0]; i++)
        if (L->signal_ev[i]) event_free(L->signal_ev[i]);
    if (L->progress_ev) event_free(L->progress_ev);
    if (L->base) event_base_free(L->base);
    for (size_t i = 0; i < L->ncurves; i++) {
        for (size_t k = 0; L->curves[i].more && k + 1 < L->spec->nmetrics; k++)
            curve_clear(&L->curves[i].more[k]);
        free(L->curves[i].more);
        curve_clear(&L->curves[i]);
    }
    free(L->curves);
    free(L->running);
    free(L->rerun);
    free(L->last_failure);
    free(L->program);
}

int study_run(st_store *st, const tn_spec *spec, const st_study *study, const study_opts *o,
              int *outcome, char *err, size_t errlen) {
    *outcome = STUDY_DONE;
    loop L;
    memset(&L, 0, sizeof L);
    L.st = st;
    L.spec = spec;
    L.study = study;
    L.o = o;
    st_trial *trials = NULL;
    size_t n = 0;
    ex_options xo;
    job_shape(spec, o, &L.shape);
    executor_options(spec, o, &xo);
    int rc = 0;
    if (!spec->command && !spec->python_module && st_study_state_final(study->state))
        rc = tn_error(err, errlen, TN_EINVAL,
                      "study %s is %s and has no command to run: `tuner resume` cannot carry "
                      "it on, and ask and tell take no more of its trials\n"
                      "hint: `tuner trials %s` shows what it got; create a new study to go on",
                      study->name, st_study_state_name(study->state), study->name);
    if (!rc) rc = study_preflight(spec, o, err, errlen);
    if (rc) goto done;
    L.program = spec->command ? study_resolve_program(spec->command[0], o->self_dir)
                              : tn_xstrdup("python3");

    /* What an earlier run left: finished counts, curves, and trials to run again. */
    rc = st_trial_list(st, study->id, &trials, &n, err, errlen);
    if (rc) goto done;
    L.created = (int64_t)n;
    L.rerun = tn_xcalloc(n + 1, sizeof *L.rerun);
    count_finished(&L, trials, n);
    if (spec->early_stopping.policy != ES_NONE && (rc = load_curves(&L, trials, n, err, errlen)))
        goto done;
    if (L.failed >= spec->max_failed_trials) {
        rc = tn_error(err, errlen, TN_EINVAL,
                      "study %s already has %lld failed trials (maxFailedTrials is %d)",
                      study->name, (long long)L.failed, spec->max_failed_trials);
        goto done;
    }
    /* RUNNING, unless a `tuner cancel` came in since the study was read (a resume may
     * have spent minutes installing the spec's packages): then nothing runs. */
    st_study_state stored = ST_STUDY_RUNNING;
    rc = st_study_set_run_state(st, study->id, study->state, ST_STUDY_RUNNING, NULL, &stored,
                                err, errlen);
    if (!rc && stored == ST_STUDY_CANCELLED) {
        log_line(&L, "cancelled (tuner cancel) while it was being set up: nothing was run");
        *outcome = STUDY_INTERRUPTED;
        goto done;
    }
    if (!rc && spec->resume_previous_job_id) rc = tell_warm_start(&L, err, errlen);
    if (!rc) rc = run_loop(&L, &xo, trials, n, err, errlen);
    if (!rc) rc = finish_study(&L, outcome, err, errlen);

done:
    st_trials_free(trials, n);
    executor_options_clear(&xo);
    loop_free(&L);
    return rc;
}
