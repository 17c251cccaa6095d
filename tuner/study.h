/*
 * study.h — running a study: the manager loop behind `tuner run` and `tuner resume`,
 * and the single-trial operations behind `ask` and `tell`.
 *
 * The loop runs on libevent: it asks the sampler for points (inside a store
 * transaction, so the trial number and the point are decided together), starts each
 * trial as a job through the executor when its replicas fit on the machine, stores
 * every measurement and event as it comes, and records each outcome in its own
 * transaction. Killed at any moment, it loses nothing: `resume` re-runs the trials
 * that were running (their replicas resume from their checkpoints) and carries on.
 * Design: docs/tuner.md.
 */
#ifndef TN_TUNER_STUDY_H
#define TN_TUNER_STUDY_H

#include <stdint.h>
#include <stdio.h>

#include "tuner/spec.h"
#include "tuner/store.h"

typedef struct study_opts {
    int cores;             /* cores of the machine to schedule on (0: all online) */
    int gpus;              /* GPUs of the machine (0: none) */
    int oversubscribe;     /* start trials even when their replicas do not fit */
    double poll_seconds;   /* how often metric files are read (0: 0.5) */
    double grace_seconds;  /* SIGTERM to SIGKILL when stopping replicas (0: 10) */
    int progress;          /* 1: a live progress line (on a terminal) */
    const char *self_dir;  /* folder of the tuner binary: bare command names are looked
                              up there first, then on PATH */
    FILE *log;             /* one line per trial event worth telling; NULL: quiet */
    int stop_on_hangup;    /* SIGHUP stops the study as SIGTERM does (0: under nohup,
                              which ignores it, it goes on) */
} study_opts;

/* Outcomes of study_run (its *outcome). */
enum study_outcome {
    STUDY_DONE,        /* every trial ran (or the grid was exhausted) */
    STUDY_FAILED,      /* maxFailedTrials trials failed (err says which and why) */
    STUDY_INTERRUPTED  /* SIGINT or SIGTERM (study STOPPED, resumable), or `tuner cancel`
                          (study CANCELLED): jobs stopped */
};

/* Checks, before anything is stored or started, that the study can run here: it has
 * a command (or pythonModule), the program can be executed, and one trial's replicas
 * fit on the machine (unless o->oversubscribe). Returns 0 or TN_EINVAL with a message
 * and a hint. study_run calls it too. */
int study_preflight(const tn_spec *spec, const study_opts *o, char *err, size_t errlen);

/* Runs the stored study to its end. Trials left RUNNING or PENDING by an earlier run
 * are run again first. Returns 0 with *outcome one of the outcomes above, or a
 * negative TN_E* code with the message in err (bad command, a trial that can never
 * fit, store errors). */
int study_run(st_store *st, const tn_spec *spec, const st_study *study, const study_opts *o,
              int *outcome, char *err, size_t errlen);

/* Creates the next trial of a study in state PENDING with the sampler's point and
 * writes its number to *number and its parameters (JSON, yours to free) to *params;
 * err then holds the sampler's note for the user ("the Gaussian process could not be
 * fitted (...): random suggestion"), or "".
 * Returns 0 with *exhausted: 1 (and nothing created) when the study has no trials left
 * to give: maxTrials reached or the grid exhausted (err ""; the study is stored
 * SUCCEEDED then, where no trial is out, PENDING or RUNNING), or the study is over
 * (SUCCEEDED, FAILED or CANCELLED: err says so). Or a negative code. */
int study_ask(st_store *st, const tn_spec *spec, const st_study *study, int64_t *number,
              char **params, int *exhausted, char *err, size_t errlen);

/* Records the outcome of a trial handed out by study_ask: its objective, or failed.
 * In the same transaction the study ends as `tuner run` would end it: FAILED once
 * maxFailedTrials of its trials have failed (the trials still out are CANCELLED),
 * SUCCEEDED once maxTrials trials are over. TN_EINVAL with a message when the study
 * is over, the trial is, or there is no such trial. */
int study_tell(st_store *st, const tn_spec *spec, const st_study *study, int64_t number,
               int failed, double objective, char *err, size_t errlen);

/* study_tell with the trial's value of each of the study's metrics (values[0] the
 * objective; nvalues 1 ..= ST_MAX_VALUES, every one finite; ignored when failed). */
int study_tell_values(st_store *st, const tn_spec *spec, const st_study *study, int64_t number,
                      int failed, const double *values, size_t nvalues, char *err,
                      size_t errlen);

/* Index of the best SUCCEEDED trial with an objective by the spec's goal (ties: the
 * earlier in the array, i.e. the lower number for a st_trial_list result); -1 when
 * there is none. */
long study_best_index(const st_trial *trials, size_t n, int goal);

/* The Pareto front of a study's trials by all of the spec's metrics and goals
 * (search/pareto.h): on_front[i] = 1 for each SUCCEEDED trial that has a value of
 * every metric and that no other such trial dominates, 0 for every other trial.
 * Returns how many are on it. With one metric: every SUCCEEDED trial with the best
 * objective (ties included). */
size_t study_pareto(const tn_spec *spec, const st_trial *trials, size_t n,
                    unsigned char *on_front);

/* Resolves a spec's command[0] as the executor will run it: a name with a '/' as is;
 * a bare name beside the tuner binary (self_dir) if there, else as is (for PATH).
 * Returns a string that is yours to free. */
char *study_resolve_program(const char *name, const char *self_dir);

#endif
