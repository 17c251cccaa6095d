/*
 * sampler.c — the samplers' dispatch, and random search (see sampler.h).
 */
#include "search/sampler.h"

#include "common/rng.h"
#include "common/status.h"
#include "search/bo.h"

/* Random search: one uniform per parameter, in order, from a generator keyed by
 * sp_random_key(seed, index), which is one-to-one in seed for a fixed index and in
 * index for a fixed seed. Every parameter takes its draw, active or not, so that a
 * parameter's value does not depend on which others are active; the inactive ones are
 * then masked. */
static void random_point(const sp_space *s, uint64_t seed, uint64_t index, double *out) {
    tn_rng r;
    tn_rng_seed(&r, sp_random_key(seed, index));
    for (size_t i = 0; i < s->n; i++) out[i] = sp_from_unit(&s->params[i], tn_rng_uniform(&r));
    sp_mask_inactive(s, out);
}

int sp_suggest(int algorithm, const sp_space *s, const sp_history *h, uint64_t seed,
               uint64_t index, double *out, int *exhausted, char *note, size_t notelen) {
    if (note && notelen) note[0] = '\0';
    if (!exhausted) return TN_EINVAL;
    *exhausted = 0;
    if (algorithm != SP_ALGO_UNSPECIFIED && algorithm != SP_ALGO_GRID &&
        algorithm != SP_ALGO_RANDOM) {
        return TN_EINVAL;
    }
    if (!s || (s->n > 0 && !out) || !sp_space_ok(s)) return TN_EINVAL;
    if (algorithm == SP_ALGO_GRID) {
        for (size_t i = 0; i < s->n; i++) {
            if (s->params[i].type == SP_DOUBLE) return TN_EINVAL;
        }
        if (index >= sp_grid_size(s)) {
            *exhausted = 1;
            return 0;
        }
        sp_grid_point(s, index, out);
        return 0;
    }
    if (algorithm == SP_ALGO_UNSPECIFIED) return bo_suggest(s, h, seed, index, NULL, out, note, notelen);
    random_point(s, seed, index, out); /* grid and random search ignore the history */
    return 0;
}

int sp_uses_history(int algorithm) { return algorithm == SP_ALGO_UNSPECIFIED; }
