/*
 * stopping.h — early-stopping rules: should a running trial stop now?
 *
 * Pure, like the samplers: a decision is a function of the study's intermediate
 * measurements (each trial's learning curve of the metric tag, by step) and the rule's
 * options, nothing else. The rules:
 *
 *   median     the median stopping rule (Vizier, Katib, Optuna's MedianPruner): at
 *              step s (>= min_step), once at least min_trials trials have COMPLETED
 *              with a measurement at or before s, a trial whose best value so far (or
 *              its running average, with running_average) is strictly worse than the
 *              median of those trials' values at step s (each one's last value at or
 *              before s) is stopped.
 *   asha       asynchronous successive halving: rungs at steps grace * eta^k
 *              (k = 0, 1, ...; below max_step when it is set). When a trial first
 *              reports a step at or past a rung, its value there is compared with
 *              the values of every trial that reached the rung (itself included): it
 *              continues only if it is among the top floor(n / eta) of them, or the
 *              best of them while n < eta (as Optuna's pruner does). With grace 0
 *              (automatic), grace is an eighth of the trials' length, rounded up:
 *              max_step when it is set, else the last step of the longest completed
 *              trial (no rung until one has completed, none at or past that length).
 *              The default rule: asha, eta 3, grace 0 (see es_config_default).
 *   hyperband  several ASHA brackets: bracket b = 0..B (B = floor(log_eta(max_step /
 *              grace))) has grace period grace * eta^b; trial number k belongs to
 *              bracket (k - 1) mod (B + 1) and is compared only with its bracket.
 *              Grace 0: an eighth of max_step, rounded up.
 *
 *   dominance  for several metrics (es_decide_dominance): at step s (>= min_step), a
 *              trial whose values at s (each metric's last value at or before s) are
 *              dominated (no better in any metric, worse in one) by those of at least
 *              min_trials COMPLETED trials is stopped. With one metric (es_decide):
 *              worse than min_trials completed trials at s.
 *
 * "Better" follows the goal (maximize or minimize); ties never stop a trial.
 * Design and measurements: docs/early-stopping.md.
 */
#ifndef TN_SEARCH_STOPPING_H
#define TN_SEARCH_STOPPING_H

#include <stddef.h>
#include <stdint.h>

enum es_policy { ES_NONE = 0, ES_MEDIAN, ES_ASHA, ES_HYPERBAND, ES_DOMINANCE };

/* The rule that `enableTrialEarlyStopping: true` alone turns on, chosen from
 * measurements (docs/benchmarks/early-stopping-synthetic.md). */
#define ES_DEFAULT_POLICY ES_ASHA

/* min_trials 0 (automatic) is this for median and for dominance. Dominance acts
 * sooner: at 5 it saved 15% to 34% of the steps of two-metric studies, at 3 twice as
 * much for 0.2% to 0.7% of the front's hypervolume
 * (docs/benchmarks/early-stopping-multi-objective.md). */
#define ES_MEDIAN_MIN_TRIALS 5
#define ES_DOMINANCE_MIN_TRIALS 3

/* grace_period 0 (automatic) is the trials' length divided by this, rounded up. */
#define ES_AUTO_GRACE_DIVISOR 8

typedef struct es_config {
    int policy;              /* enum es_policy */
    int maximize;            /* 1: larger values are better */
    int min_trials;          /* median: completed trials needed before acting;
                                dominance: completed trials that must dominate a trial
                                (>= 1), or 0: the policy's default (es_min_trials) */
    int64_t min_step;        /* median: first step at which it may act (>= 0) */
    int running_average;     /* median: judge the trial by its running average, not
                                its best value so far */
    int64_t grace_period;    /* asha, hyperband: the first rung's step (>= 1), or 0:
                                an eighth of the trials' length (rounded up) */
    int reduction_factor;    /* asha, hyperband: eta (>= 2) */
    int64_t max_step;        /* asha: no rung at or past it (0: unbounded, or with
                                grace 0 the longest completed trial's last step);
                                hyperband: required (> grace_period, or >= 1 with grace
                                0), sets the brackets */
} es_config;

/* One measurement of the metric tag. */
typedef struct es_point {
    int64_t step;
    double value;
} es_point;

/* One trial's learning curve, steps strictly increasing (the caller keeps the newest
 * value of a repeated step). */
typedef struct es_trial {
    int64_t number;          /* trial number, 1, 2, ... (hyperband's bracket) */
    int state;               /* enum sp_trial_state (search/space.h): SP_PENDING for a
                                running trial, SP_COMPLETE, SP_STOPPED, SP_FAILED */
    const es_point *curve;
    size_t n;
} es_trial;

typedef struct es_decision {
    int stop;                /* 1: stop the trial now */
    char reason[320];        /* why, in one sentence, for stop and continue alike:
                                "step 9: best 0.61 is worse than the median 0.74 of
                                6 completed trials", "rung 2 (step 9): 0.61 is not in
                                the top 2 of 7 trials (threshold 0.70)" */
} es_decision;

/* Fills *c with the defaults: policy ES_DEFAULT_POLICY, maximize, and every option's
 * default (minTrials 5, minStep 1, no running average; gracePeriod 0 (automatic),
 * reductionFactor 3, maxStep 0). The spec starts from these. */
void es_config_default(es_config *c);

/* The min_trials c's policy uses: c->min_trials, or when it is 0, the policy's default
 * (ES_MEDIAN_MIN_TRIALS, ES_DOMINANCE_MIN_TRIALS). */
int es_min_trials(const es_config *c);

/* Returns 0 or TN_EINVAL with a message naming the option (as the spec field
 * trainingInput.hyperparameters.earlyStopping.FIELD). */
int es_config_check(const es_config *c, char *err, size_t errlen);

/* Decides for trials[t], a running trial whose newest measurement is the last point
 * of its curve, given every trial of the study (trials[t] included). Only the newest
 * measurement can trigger a stop: asha and hyperband decide when it is the trial's
 * first at or past a rung, median at every step >= min_step. A trial with no
 * measurement, and ES_NONE, always continue. */
void es_decide(const es_config *c, const es_trial *trials, size_t n, size_t t,
               es_decision *out);

/* One trial of a study with several metrics: its curve of each. */
/* The most metrics es_decide_dominance compares (the spec's SPEC_MAX_METRICS). */
#define ES_MAX_METRICS 16

typedef struct es_mtrial {
    int64_t number;          /* as es_trial's */
    int state;               /* as es_trial's */
    const es_trial *metrics; /* (M) the curve of each metric (their number and state
                                are not read) */
} es_mtrial;

/* The dominance rule for trials[t], a running trial of a study with m metrics
 * (maximize[k]: metric k is better larger), given every trial (trials[t] included).
 * Its step s is the newest step among its curves; it continues while s < min_step or
 * while a metric has no value at or before s. c must have policy ES_DOMINANCE
 * (min_trials, min_step); other fields are not read. NaN is worse than any number. */
void es_decide_dominance(const es_config *c, const int *maximize, size_t m,
                         const es_mtrial *trials, size_t n, size_t t, es_decision *out);

/* "none", "median", "asha", "hyperband", "dominance"; and back (case-insensitive; -1
 * if unknown). */
const char *es_policy_name(int policy);
int es_policy_parse(const char *name);

#endif
