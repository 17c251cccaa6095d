/*
 * mobo.h — Bayesian optimisation of several objectives by random scalarisations.
 *
 * A study with several metrics (the spec's "metrics") has no one objective to model.
 * Each suggestion draws its own weights w, uniform on the simplex, from (seed, index);
 * puts every objective of the finished trials on [0, 1] (0 the best value seen, 1 the
 * worst, by its goal); turns each trial's objectives into one value, the augmented
 * Chebyshev scalarisation
 *
 *     g(y) = max_k w_k y_k + rho * sum_k w_k y_k        (rho = 0.05; lower is better)
 *
 * and hands that single-objective history to the Bayesian sampler (search/bo.h),
 * whose Gaussian process, acquisition, design and fallbacks are used as they are.
 * Every point of the Pareto front minimises g for some w, so across suggestions the
 * weights spread the trials along the front (ParEGO, Knowles 2006). Pure: a function
 * of (space, history, seed, index, options) alone. Design and benchmark:
 * docs/bayesian-optimisation.md, "Several objectives".
 *
 * Notation: n trials, P parameters, M objectives.
 */
#ifndef TN_SEARCH_MOBO_H
#define TN_SEARCH_MOBO_H

#include <stddef.h>
#include <stdint.h>

#include "search/bo.h"
#include "search/space.h"

#define MO_MAX_OBJECTIVES 16

/* One trial of the history. */
typedef struct mo_trial {
    const double *values;      /* (P) its point, as sp_trial's (NaN: inactive) */
    int state;                 /* enum sp_trial_state */
    const double *objectives;  /* (M) its value of every objective, when a COMPLETE
                                  trial has them all; NULL otherwise (a running,
                                  failed or stopped trial: it counts as bo counts it,
                                  without a value) */
} mo_trial;

typedef struct mo_history {
    const mo_trial *trials;    /* (n) */
    size_t n;
    size_t m;                  /* M: objectives, 1 ..= MO_MAX_OBJECTIVES */
    const int *maximize;       /* (M) 1: objective k is better larger */
} mo_history;

/* The weights of suggestion `index` (M values >= 0 summing to 1) into w: the same
 * (seed, index, m) give the same weights. */
void mo_weights(uint64_t seed, uint64_t index, size_t m, double *w);

/* The augmented Chebyshev scalarisation of each COMPLETE trial with finite objectives
 * under weights w, into g[i] (NaN for the others): objectives put on [0, 1] over those
 * trials (an objective with one value seen throughout is 0 for all; any finite values,
 * up to +-DBL_MAX, without overflow). Lower is better. */
void mo_scalarise(const mo_history *h, const double *w, double *g);

/* Suggests the point of trial number `index` as bo_suggest does (same contract for
 * out, note and the return), from the scalarised history under mo_weights(seed,
 * index). h may be NULL or empty (then the Bayesian sampler's design). TN_EINVAL when
 * m is 0 or above MO_MAX_OBJECTIVES, or maximize is NULL with trials. */
int mo_suggest(const sp_space *s, const mo_history *h, uint64_t seed, uint64_t index,
               const bo_options *opt, double *out, char *note, size_t notelen);

#endif
