/*
 * mobo.c — several objectives by random Chebyshev scalarisations over the Bayesian
 * sampler (see mobo.h; docs/bayesian-optimisation.md, "Several objectives").
 */
#include "search/mobo.h"

#include <math.h>
#include <stdlib.h>

#include "common/rng.h"
#include "common/status.h"

#define MO_RHO 0.05 /* the augmented term's weight: breaks ties between weakly
                       dominated points, which plain max_k would score alike */

void mo_weights(uint64_t seed, uint64_t index, size_t m, double *w) {
    tn_rng r;
    /* a stream apart from the samplers' (which seed with seed and index alone) */
    tn_rng_seed(&r, tn_mix64(tn_mix64(seed ^ 0x6d6f626f) ^ index));
    double sum = 0;
    for (size_t k = 0; k < m; k++) {
        double u = tn_rng_uniform(&r);
        w[k] = -log(u > 0 ? u : 1e-300); /* exponentials, normalised: uniform on the simplex */
        sum += w[k];
    }
    for (size_t k = 0; k < m; k++) w[k] /= sum;
}

/* Whether trial t takes part: COMPLETE, with m objectives, all finite (one infinite
 * value would make every other trial's share of its range 0, or NaN). */
static int scored(const mo_trial *t, size_t m) {
    if (t->state != SP_COMPLETE || !t->objectives) return 0;
    for (size_t k = 0; k < m; k++)
        if (!isfinite(t->objectives[k])) return 0;
    return 1;
}

void mo_scalarise(const mo_history *h, const double *w, double *g) {
    double lo[MO_MAX_OBJECTIVES], hi[MO_MAX_OBJECTIVES];
    size_t m = h->m;
    for (size_t k = 0; k < m; k++) {
        lo[k] = INFINITY;
        hi[k] = -INFINITY;
    }
    for (size_t i = 0; i < h->n; i++) {
        const mo_trial *t = &h->trials[i];
        if (!scored(t, m)) continue;
        for (size_t k = 0; k < m; k++) {
            double y = h->maximize[k] ? -t->objectives[k] : t->objectives[k];
            if (y < lo[k]) lo[k] = y;
            if (y > hi[k]) hi[k] = y;
        }
    }
    for (size_t i = 0; i < h->n; i++) {
        const mo_trial *t = &h->trials[i];
        g[i] = NAN;
        if (!scored(t, m)) continue;
        double worst = 0, sum = 0;
        for (size_t k = 0; k < m; k++) {
            double y = h->maximize[k] ? -t->objectives[k] : t->objectives[k];
            /* halves: objectives of both signs near DBL_MAX (a diverged score) would
             * overflow hi - lo to inf, and y - lo with it, to inf / inf */
            double range = hi[k] / 2 - lo[k] / 2;
            double z = range > 0 ? (y / 2 - lo[k] / 2) / range : 0;
            if (w[k] * z > worst) worst = w[k] * z;
            sum += w[k] * z;
        }
        g[i] = worst + MO_RHO * sum;
    }
}

int mo_suggest(const sp_space *s, const mo_history *h, uint64_t seed, uint64_t index,
               const bo_options *opt, double *out, char *note, size_t notelen) {
    size_t n = h ? h->n : 0;
    if (h && (h->m == 0 || h->m > MO_MAX_OBJECTIVES || (n && (!h->maximize || !h->trials))))
        return TN_EINVAL;
    double w[MO_MAX_OBJECTIVES];
    sp_trial *one = tn_xcalloc(n + 1, sizeof *one);
    double *g = tn_xcalloc(n + 1, sizeof *g);
    if (n) {
        mo_weights(seed, index, h->m, w);
        mo_scalarise(h, w, g);
    }
    for (size_t i = 0; i < n; i++) {
        const mo_trial *t = &h->trials[i];
        int has = !isnan(g[i]);
        one[i] = (sp_trial){.values = t->values, .state = t->state, .has_objective = has,
                            .objective = has ? g[i] : 0};
    }
    sp_history single = {.trials = one, .n = n, .maximize = 0};
    int rc = bo_suggest(s, &single, seed, index, opt, out, note, notelen);
    free(one);
    free(g);
    return rc;
}
