/*
 * sampler.h — the study's samplers behind one call: grid search, random search and
 * Bayesian optimisation (search/bo.h), chosen by AI Platform's algorithm. The space
 * (search/space.h) knows nothing of them; the Bayesian optimiser knows the space but
 * not this dispatch. Pure: the point depends on the space, the history and the seed
 * alone. Design: docs/search.md.
 */
#ifndef TN_SEARCH_SAMPLER_H
#define TN_SEARCH_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "search/space.h"

enum sp_algorithm { SP_ALGO_UNSPECIFIED = 1, SP_ALGO_GRID, SP_ALGO_RANDOM };


/* Whether the algorithm's suggestions depend on the history (so that callers may
 * skip building it when they do not): 0 for grid and random search, 1 for Bayesian
 * optimisation. */
int sp_uses_history(int algorithm);

/* Suggests the point of the study's trial number `index` (0 for the first trial,
 * i.e. the number of trials created before it) into out[0..n); the point is legal
 * (sp_point_is_legal: inactive parameters NaN). Grid: grid point `index`;
 * past the end *exhausted is set to 1 and out is untouched (TN_EINVAL when the space
 * has a DOUBLE). Random: a uniform
 * draw in the unit cube mapped through sp_from_unit, from a generator seeded by
 * (seed, index) alone, so the same seed gives the same sequence whatever the order of
 * completion; every parameter consumes its draw, active or not, and the inactive ones
 * are then masked. A space whose conditions are malformed (a parent that is DOUBLE or
 * not before its child, no values, a value the parent cannot take) is TN_EINVAL.
 * ALGORITHM_UNSPECIFIED: Bayesian optimisation (search/bo.h, default options) on the
 * history h, which must hold every trial of the study (pending ones
 * with their points). note (notelen bytes, may be NULL) receives a sentence worth
 * logging (a fallback to random search, ...) or "". Returns 0 with *exhausted (1 when
 * there are no points left, only ever for grid search; exhausted must not be NULL),
 * or a negative TN_E* code. */
int sp_suggest(int algorithm, const sp_space *s, const sp_history *h, uint64_t seed,
               uint64_t index, double *out, int *exhausted, char *note, size_t notelen);

#endif
