/*
 * test_mobo.c — tests for search/mobo.c: the weights (on the simplex, reproducible,
 * different per suggestion), the scalarisation against values worked out by hand
 * (goals, normalisation, a constant objective, trials without values), mo_suggest's
 * contract (legal points, the same point for the same arguments, bad arguments), and
 * a two-objective problem (ZDT1 in two variables) where it must beat random search
 * by hypervolume at equal trials, over three seeds.
 */
#include "search/mobo.h"
#include "search/sampler.h"

#include "common/status.h"
#include "search/pareto.h"
#include "tests/check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void unit_space(sp_space *s, size_t dims) {
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < dims; i++) {
        char name[32];
        snprintf(name, sizeof name, "x%zu", i);
        sp_param p = {.name = name, .type = SP_DOUBLE, .scale = SP_LINEAR, .min = 0, .max = 1};
        sp_space_add(s, &p);
    }
}

static void test_weights(void) {
    for (size_t m = 1; m <= MO_MAX_OBJECTIVES; m += 5) {
        double w[MO_MAX_OBJECTIVES], again[MO_MAX_OBJECTIVES], other[MO_MAX_OBJECTIVES];
        mo_weights(7, 3, m, w);
        mo_weights(7, 3, m, again);
        mo_weights(7, 4, m, other);
        double sum = 0;
        int differ = 0;
        for (size_t k = 0; k < m; k++) {
            CHECK(w[k] >= 0 && w[k] <= 1);
            sum += w[k];
            CHECK(w[k] == again[k]);
            differ |= w[k] != other[k];
        }
        CHECK_MSG(fabs(sum - 1) < 1e-12, "m %zu: sum %g", m, sum);
        CHECK(differ || m == 1);
    }
}

static void test_scalarise(void) {
    static const double pt[] = {0.5};
    static const double a[] = {0, 10}, b[] = {1, 20}, c[] = {0.5, 15}, d[] = {3, 3};
    mo_trial t[] = {{pt, SP_COMPLETE, a}, {pt, SP_COMPLETE, b}, {pt, SP_COMPLETE, c},
                    {pt, SP_PENDING, NULL}, {pt, SP_FAILED, d}, {pt, SP_STOPPED, NULL}};
    const int min2[] = {0, 0}, maxmin[] = {1, 0};
    mo_history h = {t, 6, 2, min2};
    const double w[] = {0.5, 0.5};
    double g[6];
    mo_scalarise(&h, w, g);
    /* normalised: a (0, 0), b (1, 1), c (0.5, 0.5) */
    CHECK(fabs(g[0] - 0) < 1e-12);
    CHECK(fabs(g[1] - (0.5 + 0.05 * 1)) < 1e-12);
    CHECK(fabs(g[2] - (0.25 + 0.05 * 0.5)) < 1e-12);
    CHECK(isnan(g[3]) && isnan(g[4]) && isnan(g[5])); /* only COMPLETE trials with values */
    /* maximising the first: a (1, 0), b (0, 1) */
    h.maximize = maxmin;
    mo_scalarise(&h, w, g);
    CHECK(fabs(g[0] - (0.5 + 0.05 * 0.5)) < 1e-12 && fabs(g[1] - (0.5 + 0.05 * 0.5)) < 1e-12);
    /* the weights choose: all on the first objective */
    const double w1[] = {1, 0};
    mo_scalarise(&h, w1, g);
    CHECK(fabs(g[0] - 1.05) < 1e-12 && fabs(g[1]) < 1e-12 && fabs(g[2] - 0.525) < 1e-12);
    /* an objective with one value throughout is 0 for all */
    static const double e[] = {2, 5}, f[] = {2, 7};
    mo_trial u[] = {{pt, SP_COMPLETE, e}, {pt, SP_COMPLETE, f}};
    mo_history hu = {u, 2, 2, min2};
    mo_scalarise(&hu, w1, g);
    CHECK(g[0] == 0 && g[1] == 0);
    /* objectives of both signs near DBL_MAX (a diverged score): the range overflowed,
     * the worst trial got NaN (inf / inf, left out as unmeasured) and every other one
     * 0, so that objective dropped out whatever the weights */
    static const double big1[] = {-1e308, 3}, big2[] = {1e308, 1}, big3[] = {0, 2},
                        big4[] = {9e307, 0};
    mo_trial v[] = {{pt, SP_COMPLETE, big1}, {pt, SP_COMPLETE, big2}, {pt, SP_COMPLETE, big3},
                    {pt, SP_COMPLETE, big4}};
    mo_history hv = {v, 4, 2, min2};
    mo_scalarise(&hv, w1, g);
    CHECK_MSG(g[0] == 0 && fabs(g[1] - 1.05) < 1e-12 && fabs(g[2] - 0.525) < 1e-12 &&
                  fabs(g[3] - 0.9975) < 1e-12,
              "g = %g %g %g %g", g[0], g[1], g[2], g[3]);
    /* a trial with an infinite objective takes no part (it would squash the others'
     * range to nothing); the others are scored among themselves */
    static const double inf1[] = {INFINITY, 0};
    mo_trial x[] = {{pt, SP_COMPLETE, a}, {pt, SP_COMPLETE, b}, {pt, SP_COMPLETE, inf1}};
    mo_history hx = {x, 3, 2, min2};
    mo_scalarise(&hx, w, g);
    CHECK(fabs(g[0]) < 1e-12 && fabs(g[1] - 0.55) < 1e-12 && isnan(g[2]));
}

static void test_suggest_contract(void) {
    sp_space s;
    unit_space(&s, 2);
    double out[2], again[2];
    /* no history: the design */
    CHECK_INT_EQ(mo_suggest(&s, NULL, 1, 0, NULL, out, NULL, 0), 0);
    CHECK(sp_point_is_legal(&s, out));
    /* a history of 12 trials on a trade-off */
    double pts[12][2], obj[12][2];
    mo_trial t[12];
    for (int i = 0; i < 12; i++) {
        pts[i][0] = (i + 0.5) / 12;
        pts[i][1] = (i * 7 % 12 + 0.5) / 12;
        obj[i][0] = pts[i][0];
        obj[i][1] = 1 - pts[i][0] + pts[i][1];
        t[i] = (mo_trial){pts[i], i == 11 ? SP_PENDING : SP_COMPLETE, i == 11 ? NULL : obj[i]};
    }
    const int min2[] = {0, 0};
    mo_history h = {t, 12, 2, min2};
    char note[256];
    CHECK_INT_EQ(mo_suggest(&s, &h, 5, 12, NULL, out, note, sizeof note), 0);
    CHECK(sp_point_is_legal(&s, out));
    CHECK_INT_EQ(mo_suggest(&s, &h, 5, 12, NULL, again, note, sizeof note), 0);
    CHECK(out[0] == again[0] && out[1] == again[1]); /* bit for bit */
    h.m = 0;
    CHECK_INT_EQ(mo_suggest(&s, &h, 5, 12, NULL, out, NULL, 0), TN_EINVAL);
    h.m = MO_MAX_OBJECTIVES + 1;
    CHECK_INT_EQ(mo_suggest(&s, &h, 5, 12, NULL, out, NULL, 0), TN_EINVAL);
    h.m = 2;
    h.maximize = NULL;
    CHECK_INT_EQ(mo_suggest(&s, &h, 5, 12, NULL, out, NULL, 0), TN_EINVAL);
    sp_space_clear(&s);
}

/* ZDT1 in two variables (both minimised): f1 = x0, g = 1 + 9 x1, f2 = g (1 - sqrt(f1/g)). */
static void zdt1(const double *x, double *f) {
    double g = 1 + 9 * x[1];
    f[0] = x[0];
    f[1] = g * (1 - sqrt(x[0] / g));
}

/* The hypervolume (reference (1.1, 11)) after `trials` trials of mo_suggest (mo) or of
 * random search. */
static double run_zdt1(int mo, uint64_t seed, int trials) {
    int ex;
    sp_space s;
    unit_space(&s, 2);
    double x[64][2], f[64][2];
    mo_trial t[64];
    const int min2[] = {0, 0};
    for (int i = 0; i < trials; i++) {
        mo_history h = {t, (size_t)i, 2, min2};
        int rc = mo ? mo_suggest(&s, &h, seed, (uint64_t)i, NULL, x[i], NULL, 0)
                    : sp_suggest(SP_ALGO_RANDOM, &s, NULL, seed, (uint64_t)i, x[i], &ex, NULL, 0);
        CHECK_INT_EQ(rc, 0);
        zdt1(x[i], f[i]);
        t[i] = (mo_trial){x[i], SP_COMPLETE, f[i]};
    }
    const double ref[2] = {1.1, 11};
    sp_space_clear(&s);
    return pa_hypervolume2(&f[0][0], (size_t)trials, min2, ref);
}

static void test_zdt1_beats_random(void) {
    double mo = 0, rnd = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        mo += run_zdt1(1, seed, 30) / 3;
        rnd += run_zdt1(0, seed, 30) / 3;
    }
    printf("  ZDT1, 30 trials, mean of 3 seeds: hypervolume %.4f (random %.4f)\n", mo, rnd);
    CHECK_MSG(mo > rnd, "mo %.4f <= random %.4f", mo, rnd);
}

int main(void) {
    RUN(test_weights);
    RUN(test_scalarise);
    RUN(test_suggest_contract);
    RUN(test_zdt1_beats_random);
    return check_summary();
}
