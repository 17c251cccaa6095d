/*
 * bo.h — the Bayesian-optimisation sampler, which ALGORITHM_UNSPECIFIED means.
 *
 * Each parameter becomes unit coordinates (one for DOUBLE, INTEGER and DISCRETE via
 * sp_to_unit, k one-hot coordinates for a CATEGORICAL of k categories; a conditional
 * parameter's inactive state is a point of its own, as far from each of its values as
 * the two ends of its range are from each other); a Gaussian
 * process (search/gp.h) is fitted there to the finished trials, and the next point
 * maximises the log expected improvement (or an upper confidence bound). The first
 * trials come from a randomly shifted Sobol design; running trials are "believed" at
 * the model's mean so that parallel suggestions differ; when the model cannot be
 * fitted the suggestion is random and the note says so. Pure, like every sampler: a
 * function of (space, history, seed, index, options) alone, with no I/O, clocks or
 * globals, except that it turns GSL's abort-on-error handler off (process-wide).
 * Design and measurements: docs/bayesian-optimisation.md, "The sampler".
 */
#ifndef TN_SEARCH_BO_H
#define TN_SEARCH_BO_H

#include <stddef.h>
#include <stdint.h>

#include "search/space.h"

enum bo_acquisition {
    BO_LOG_EI = 0, /* log expected improvement over the best value (default) */
    BO_UCB         /* upper confidence bound: mean + beta * sd */
};

/* The value a PENDING (running) trial is believed to measure, for the model
 * (docs/bayesian-optimisation.md, "Pending trials"). The constant liars are there to
 * be measured against the believer (bench_bo --pending); they did worse. */
enum bo_pending {
    BO_PENDING_BELIEVER = 0, /* kriging believer: the model's mean there (default) */
    BO_PENDING_LIAR_BEST,    /* constant liar: the best measured value */
    BO_PENDING_LIAR_WORST,   /* constant liar: the worst measured value */
    BO_PENDING_LIAR_MEAN,    /* constant liar: the mean of the measured values */
    BO_PENDING_COUNT
};

/* Options; a zeroed struct (or a NULL pointer) means every default. Negative counts
 * are invalid. */
typedef struct bo_options {
    int initial_trials;   /* trials drawn from the space-filling design before the
                             model takes over; every trial that has not FAILED counts
                             (COMPLETE, PENDING, STOPPED). 0: max(5, min(P + 1, 20))
                             for P parameters */
    int acquisition;      /* enum bo_acquisition */
    double ucb_beta;      /* BO_UCB's beta (>= 0); 0: 2 */
    int candidates;       /* quasi-random candidates scored per suggestion; 0: 2048,
                             fewer past 64 measured trials (at least 256) */
    int fit_restarts;     /* starts of the hyperparameter fit; 0: 3, and 1 past 40
                             measured trials */
    int force_fallback;   /* tests: act as if the model could not be fitted */
    int model_points;     /* measured trials the GP is built on at most: past it, the
                             best half of them and a seeded random draw of the rest;
                             0: 500 */
    int pending;          /* enum bo_pending: how running trials are believed */
    double onehot;        /* a CATEGORICAL's one-hot height (> 0); 0: chosen by the
                             fit's evidence between BO_ONEHOT and BO_ONEHOT_APART */
} bo_options;

/* Suggests the point of the study's trial number `index` (the number of trials
 * created before it) from the history h (may be NULL or empty) and writes its n legal
 * values to out[0..s->n) (a point of the space: inactive conditional parameters NaN,
 * sp_point_is_legal). The space must be valid (sp_space_ok); only
 * obviously unusable parameters are rejected again here. opt may be NULL (defaults).
 * note (may be NULL; notelen bytes, yours) receives one sentence when the suggestion
 * is worth a log line (a fallback to random or to the design, running trials left
 * out of the model, every candidate already tried), else the empty string; it is
 * cut to fit notelen.
 * Returns 0, or TN_EINVAL (bad arguments or options; out untouched). The same
 * arguments give the same point, bit for bit, on one build. */
int bo_suggest(const sp_space *s, const sp_history *h, uint64_t seed, uint64_t index,
               const bo_options *opt, double *out, char *note, size_t notelen);

/* The height of a CATEGORICAL's one-hot in the encoding (bo_encode): two categories
 * are BO_ONEHOT * sqrt(2) apart, so that under the GP's lengthscale prior (about 0.5)
 * they share nearly all they know until the fit shortens that parameter's lengthscale
 * (docs/bayesian-optimisation.md, "Encoding"). A suggestion fits the model at this
 * height and at BO_ONEHOT_APART and keeps the fit with the larger evidence. */
#define BO_ONEHOT 0.02

/* The other height the fit may choose (bo_options.onehot 0): categories as apart as
 * the two ends of a range, nearly independent under the prior; the larger evidence
 * (gp_log_evidence) of the two fits wins, suggestion by suggestion. */
#define BO_ONEHOT_APART 1.0

/* The Gaussian process's view of the point v of s (legal values as the samplers write
 * them, inactive parameters NaN): its D coordinates into x (D values; may be NULL, and
 * so may v), and into group (D values; may be NULL) the lengthscale of each, equal
 * for coordinates that share one (a parameter's: a CATEGORICAL's one-hot, the two of
 * a conditional ordinal parameter).
 * Returns D, which depends on s alone, or 0 (nothing written) when s is NULL or its
 * conditions are malformed (sp_conditions_ok). For tests and for explaining the model:
 * the encoding is in docs/bayesian-optimisation.md, "Encoding" and "Conditional
 * parameters". */
size_t bo_encode(const sp_space *s, const double *v, double *x, size_t *group);

/* Which values the sampler would fit its GP to, for measured points X (n x D,
 * row-major, in [0, 1]) with values z (n, larger is better), fitted as bo_suggest
 * fits n trials (seed keys the fit's starts): 0 for z as it is, k >= 1 for the k-th
 * monotone warp -log(max z - z + c) (docs/bayesian-optimisation.md, "Data"), chosen
 * by the fits' evidence. Returns TN_EINVAL for bad arguments, or gp_fit's negative
 * status when no candidate could be fitted. For tests and benchmarks. */
int bo_choose_warp(const double *X, const double *z, size_t n, size_t D, uint64_t seed);

#endif
