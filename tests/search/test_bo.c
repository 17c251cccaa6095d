/*
 * test_bo.c — tests for search/bo.c, the Bayesian-optimisation sampler: legal values
 * for every type and scale over a simulated parallel study, bitwise reproducibility
 * (also across the number of threads a suggestion runs on, search/par.h),
 * different indices and seeds giving different points, the spread of the initial
 * design, finding the optimum of a 1-D quadratic when maximising and minimising (and
 * with a wild outlier, which the skew transform handles), distinct parallel
 * suggestions (pending trials believed at the mean), failed and stopped trials kept
 * out of the model, the fallbacks (forced model failure, no two distinct measured
 * points, every point taken), a categorical optimum, more dimensions than Sobol has,
 * beating random search, bad arguments, and a timing printout (100 and 500 trials in
 * 6-D; printed, not asserted). Conditional parameters: legal points (inactive ones
 * NaN) over a parallel study of a tree of every type, reproducibility, a conditional
 * optimum found and random search beaten, an inactive parameter not read as a value
 * of it, a small tree tried point by point, malformed trees refused.
 *
 * Histories are built in one static study (st) by the helpers below.
 */
#define _POSIX_C_SOURCE 200809L
#include "search/bo.h"

#include "common/rng.h"
#include "common/status.h"
#include "search/par.h"
#include "search/sampler.h"
#include "search/space.h"
#include "tests/check.h"
#include "tests/search/params.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Spaces ---- */

static double disc_batch[] = {16, 32, 64, 128, 256};
static char *cats3[] = {"sgd", "adam", "rmsprop"};

/* Every type and scale. */
static const sp_param mixed_params[] = {
    P_DOUBLE("lr", SP_LOG, 1e-5, 1),
    P_DOUBLE("momentum", SP_REVERSE_LOG, 0.9, 0.9999),
    P_DOUBLE("dropout", SP_LINEAR, 0, 0.5),
    P_INT("layers", SP_LINEAR, 1, 8),
    P_INT("units", SP_LOG, 16, 1024),
    P_DISC("batch", SP_SCALE_NONE, disc_batch),
    P_CAT("optimizer", cats3),
};

static void make_unit_space(sp_space *s, size_t dims) {
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < dims; i++) {
        char name[32];
        snprintf(name, sizeof name, "x%u", (unsigned)i);
        sp_param p = P_DOUBLE(name, SP_LINEAR, 0, 1);
        sp_space_add(s, &p);
    }
}

/* ---- Histories ---- */

#define MAXT 600
#define MAXP 48

typedef struct study {
    sp_trial t[MAXT];
    double v[MAXT][MAXP];
    sp_history h;
} study;

static study st; /* the history under construction (static: it is large) */

static void study_reset(int maximize) {
    memset(&st, 0, sizeof st);
    st.h.trials = st.t;
    st.h.maximize = maximize;
}

/* Adds a trial with P values; objective NAN means "no measurement". */
static sp_trial *study_add(const double *v, size_t P, int state, double objective) {
    size_t k = st.h.n++;
    memcpy(st.v[k], v, P * sizeof *v);
    st.t[k].values = st.v[k];
    st.t[k].state = state;
    st.t[k].has_objective = !isnan(objective);
    st.t[k].objective = objective;
    return &st.t[k];
}

static int all_legal(const sp_space *s, const double *v) {
    for (size_t i = 0; i < s->n; i++) {
        if (!sp_is_legal(&s->params[i], v[i])) return 0;
    }
    return 1;
}

/* The 1-D quadratic's history: 10 complete trials at 0.05, 0.15, ..., 0.95 of
 * (x - OPT)^2 (minimising) or its negation (maximising). */
#define OPT 0.37

static double quad(double x) { return (x - OPT) * (x - OPT); }

static void quad_history(int maximize) {
    study_reset(maximize);
    for (int k = 0; k < 10; k++) {
        double x = 0.05 + 0.1 * k;
        study_add(&x, 1, SP_COMPLETE, maximize ? -quad(x) : quad(x));
    }
}

/* A smooth test function of the unit point u (P values), to minimise: a bowl with
 * its minimum inside the cube, plus a mild ripple. */
static double bowl(const double *u, size_t P) {
    double f = 0;
    for (size_t i = 0; i < P; i++) {
        double c = 0.25 + 0.5 * (double)i / (double)(P > 1 ? P - 1 : 1);
        f += (u[i] - c) * (u[i] - c) + 0.02 * sin(9.0 * u[i]);
    }
    return f;
}

static double objective_of(const sp_space *s, const double *v) {
    double u[MAXP];
    for (size_t i = 0; i < s->n; i++) u[i] = sp_to_unit(&s->params[i], v[i]);
    return bowl(u, s->n);
}

static double dist(const double *a, const double *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++) d += (a[i] - b[i]) * (a[i] - b[i]);
    return sqrt(d);
}

/* ---- Tests ---- */

/* A parallel study (3 trials running at a time) over every type and scale: every
 * suggestion legal, no point suggested twice, no fallback needed. */
static void test_legal_mixed_parallel(void) {
    sp_space s;
    s = make_space(mixed_params, sizeof mixed_params / sizeof mixed_params[0]);
    study_reset(0);
    char note[256];
    int notes = 0;
    for (uint64_t k = 0; k < 40; k++) {
        double v[MAXP];
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 7, k, NULL, v, note, sizeof note), 0);
        CHECK_MSG(all_legal(&s, v), "trial %d has an illegal value", (int)k);
        notes += note[0] != '\0';
        for (size_t j = 0; j < st.h.n; j++) {
            CHECK_MSG(memcmp(st.v[j], v, s.n * sizeof *v) != 0, "trial %d repeats %d",
                      (int)k, (int)j);
        }
        study_add(v, s.n, SP_PENDING, NAN);
        if (k >= 2) { /* the trial started two steps ago finishes */
            sp_trial *t = &st.t[k - 2];
            t->state = SP_COMPLETE;
            t->objective = objective_of(&s, t->values);
            t->has_objective = 1;
        }
    }
    CHECK_INT_EQ(notes, 0);
    sp_space_clear(&s);
}

/* Same arguments, same point, bit for bit: in the design and with the model, and with
 * the history copied elsewhere. */
static void test_reproducible(void) {
    sp_space s;
    s = make_space(mixed_params, sizeof mixed_params / sizeof mixed_params[0]);
    study_reset(1);
    for (uint64_t k = 0; k < 14; k++) {
        double v[MAXP], w[MAXP];
        char n1[256], n2[256];
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 99, k, NULL, v, n1, sizeof n1), 0);
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 99, k, NULL, w, n2, sizeof n2), 0);
        CHECK_MSG(memcmp(v, w, s.n * sizeof *v) == 0, "index %d differs", (int)k);
        CHECK(strcmp(n1, n2) == 0);
        int state = k % 5 == 3 ? SP_FAILED : k % 5 == 4 ? SP_PENDING : SP_COMPLETE;
        study_add(v, s.n, state, state == SP_COMPLETE ? -objective_of(&s, v) : NAN);
    }
    /* The same history at other addresses. */
    static study copy;
    copy = st;
    for (size_t k = 0; k < copy.h.n; k++) copy.t[k].values = copy.v[k];
    copy.h.trials = copy.t;
    double v[MAXP], w[MAXP];
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 99, 14, NULL, v, NULL, 0), 0);
    CHECK_INT_EQ(bo_suggest(&s, &copy.h, 99, 14, NULL, w, NULL, 0), 0);
    CHECK(memcmp(v, w, s.n * sizeof *v) == 0);
    sp_space_clear(&s);
}

/* The suggestion does not depend on how many threads make it (search/par.h: the
 * fits, the candidates' predictions and the refinements run on the cores at once):
 * the same bits on 1, 2 and 5 threads, with the model and its warps, categories (two
 * encodings fitted), running trials and thousands of candidates; and par_run runs
 * each task once, whatever the threads. */
static int par_counts[64];

static void count_task(void *ctx, size_t t) {
    (void)ctx;
    __atomic_fetch_add(&par_counts[t], 1, __ATOMIC_RELAXED);
}

static void test_threads_same_bits(void) {
    const size_t ntasks[] = {0, 1, 3, 64};
    for (int threads = 1; threads <= 8; threads += 3) {
        par_set_threads(threads);
        CHECK_INT_EQ(par_threads(), threads);
        for (size_t c = 0; c < sizeof ntasks / sizeof ntasks[0]; c++) {
            memset(par_counts, 0, sizeof par_counts);
            par_run(ntasks[c], count_task, NULL);
            for (size_t t = 0; t < 64; t++)
                CHECK_MSG(par_counts[t] == (t < ntasks[c]), "%d threads, %zu tasks: task %zu "
                          "ran %d times", threads, ntasks[c], t, par_counts[t]);
        }
    }
    par_set_threads(0);
    CHECK(par_threads() >= 1);

    sp_space s;
    s = make_space(mixed_params, sizeof mixed_params / sizeof mixed_params[0]);
    study_reset(0);
    for (uint64_t k = 0; k < 70; k++) { /* 70 trials, the last 4 running */
        double v[MAXP];
        par_set_threads(1 + (int)(k % 3));
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 5, k, NULL, v, NULL, 0), 0);
        study_add(v, s.n, k >= 66 ? SP_PENDING : SP_COMPLETE,
                  k >= 66 ? NAN : objective_of(&s, v));
    }
    const int threads[] = {1, 2, 5};
    for (uint64_t k = 70; k < 73; k++) {
        double v[3][MAXP];
        char note[3][256];
        for (int i = 0; i < 3; i++) {
            par_set_threads(threads[i]);
            CHECK_INT_EQ(bo_suggest(&s, &st.h, 5, k, NULL, v[i], note[i], sizeof note[i]), 0);
        }
        for (int i = 1; i < 3; i++) {
            CHECK_MSG(memcmp(v[0], v[i], s.n * sizeof v[0][0]) == 0,
                      "index %d: %d threads differ from 1", (int)k, threads[i]);
            CHECK(strcmp(note[0], note[i]) == 0);
        }
    }
    par_set_threads(0);
    sp_space_clear(&s);
}

/* Another index or seed gives another point, in the design and with the model. */
static void test_index_and_seed_differ(void) {
    sp_space s;
    make_unit_space(&s, 3);
    double a[MAXP], b[MAXP], c[MAXP];
    CHECK_INT_EQ(bo_suggest(&s, NULL, 5, 0, NULL, a, NULL, 0), 0);
    CHECK_INT_EQ(bo_suggest(&s, NULL, 5, 1, NULL, b, NULL, 0), 0);
    CHECK_INT_EQ(bo_suggest(&s, NULL, 6, 0, NULL, c, NULL, 0), 0);
    CHECK(memcmp(a, b, 3 * sizeof *a) != 0);
    CHECK(memcmp(a, c, 3 * sizeof *a) != 0);

    study_reset(0);
    for (uint64_t k = 0; k < 8; k++) {
        double v[MAXP];
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 5, k, NULL, v, NULL, 0), 0);
        study_add(v, 3, SP_COMPLETE, objective_of(&s, v));
    }
    char note[256];
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 5, 8, NULL, a, note, sizeof note), 0);
    CHECK_STR_CONTAINS(note, ""); /* not NULL */
    CHECK_INT_EQ(note[0], 0);     /* the model, not a fallback */
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 5, 9, NULL, b, NULL, 0), 0);
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 6, 8, NULL, c, NULL, 0), 0);
    CHECK(memcmp(a, b, 3 * sizeof *a) != 0);
    CHECK(memcmp(a, c, 3 * sizeof *a) != 0);
    sp_space_clear(&s);
}

/* The first trials of a study (all running at once) are spread out: their smallest
 * pairwise distance is well above what uniform draws give, for several seeds. The
 * design is a function of (seed, index): with or without the earlier trials in the
 * history, the same points. */
static void test_design_spread(void) {
    sp_space s;
    make_unit_space(&s, 2);
    bo_options o = {0};
    o.initial_trials = 16;
    double worst = 1.0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        study_reset(0);
        double pts[16][2];
        for (uint64_t k = 0; k < 16; k++) {
            char note[128];
            CHECK_INT_EQ(bo_suggest(&s, &st.h, seed, k, &o, pts[k], note, sizeof note), 0);
            CHECK_INT_EQ(note[0], 0);
            double alone[2];
            CHECK_INT_EQ(bo_suggest(&s, NULL, seed, k, &o, alone, NULL, 0), 0);
            CHECK(memcmp(alone, pts[k], sizeof alone) == 0);
            study_add(pts[k], 2, SP_PENDING, NAN);
        }
        double dmin = 1.0;
        for (int i = 0; i < 16; i++) {
            for (int j = 0; j < i; j++) {
                double d = dist(pts[i], pts[j], 2);
                if (d < dmin) dmin = d;
            }
        }
        if (dmin < worst) worst = dmin;
    }
    /* 16 uniform points in the square: median smallest distance 0.043, above 0.08 in
     * 9% of draws (so all 8 seeds by chance: 4e-9). The rotated Sobol net: sqrt(2)/16
     * = 0.088 at worst. */
    CHECK_MSG(worst > 0.08, "smallest pairwise distance %g", worst);
    sp_space_clear(&s);
}

/* With 10 measurements of a 1-D quadratic, the next point is near its optimum,
 * whether the study maximises -(x - OPT)^2 or minimises (x - OPT)^2. */
static void test_quadratic_optimum(void) {
    sp_space s;
    make_unit_space(&s, 1);
    for (int maximize = 0; maximize <= 1; maximize++) {
        quad_history(maximize);
        for (uint64_t seed = 1; seed <= 3; seed++) {
            double x;
            char note[256];
            CHECK_INT_EQ(bo_suggest(&s, &st.h, seed, 10, NULL, &x, note, sizeof note), 0);
            CHECK_MSG(fabs(x - OPT) < 0.1, "maximize %d seed %d: x = %g", maximize,
                      (int)seed, x);
            CHECK_INT_EQ(note[0], 0);
        }
    }
    sp_space_clear(&s);
}

/* Same with UCB as the acquisition. */
static void test_quadratic_ucb(void) {
    sp_space s;
    make_unit_space(&s, 1);
    bo_options o = {0};
    o.acquisition = BO_UCB;
    quad_history(0);
    double x, y;
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 1, 10, &o, &x, NULL, 0), 0);
    CHECK_MSG(fabs(x - OPT) < 0.1, "x = %g", x);
    o.ucb_beta = 50; /* mostly exploration: somewhere far from the measured points */
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 1, 10, &o, &y, NULL, 0), 0);
    CHECK_MSG(x != y, "x = y = %g", x);
    sp_space_clear(&s);
}

/* A wild outlier (a diverged run) makes the values badly skewed; normal scores keep
 * the rest informative, so the optimum is still found. (Without the transform the
 * outlier squashes every other value to the same standardised level.) */
static void test_skewed_outlier(void) {
    sp_space s;
    make_unit_space(&s, 1);
    quad_history(0);
    double bad = 0.99;
    study_add(&bad, 1, SP_COMPLETE, 1e6);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        double x;
        CHECK_INT_EQ(bo_suggest(&s, &st.h, seed, 11, NULL, &x, NULL, 0), 0);
        CHECK_MSG(fabs(x - OPT) < 0.1, "seed %d: x = %g", (int)seed, x);
    }
    sp_space_clear(&s);
}

/* The evidence's choice of values (bo_choose_warp): 30 points of a smooth function
 * with no tail are fitted as they are; a long tail of bad values (a maximised
 * -exp(6 |x - c|), from about -1 to -400, the shape of branin's values) is warped;
 * bad arguments are refused. */
static void test_warp_choice(void) {
    enum { N = 30, D = 2 };
    double X[N * D], smooth[N], tail[N];
    tn_rng r;
    tn_rng_seed(&r, 11);
    for (int i = 0; i < N; i++) {
        double a = tn_rng_uniform(&r), b = tn_rng_uniform(&r);
        X[i * D] = a;
        X[i * D + 1] = b;
        smooth[i] = sin(3.0 * a) + 0.5 * cos(2.0 * b);
        tail[i] = -exp(6.0 * sqrt((a - 0.3) * (a - 0.3) + (b - 0.6) * (b - 0.6)));
    }
    for (uint64_t seed = 1; seed <= 3; seed++) {
        int ws = bo_choose_warp(X, smooth, N, D, seed), wt = bo_choose_warp(X, tail, N, D, seed);
        CHECK_MSG(ws == 0, "seed %d: smooth values warped (%d)", (int)seed, ws);
        CHECK_MSG(wt >= 1, "seed %d: long-tailed values not warped (%d)", (int)seed, wt);
    }
    CHECK_INT_EQ(bo_choose_warp(NULL, smooth, N, D, 1), TN_EINVAL);
    CHECK_INT_EQ(bo_choose_warp(X, smooth, 0, D, 1), TN_EINVAL);
}

/* Past model_points measured trials the GP is built on a subset (the best half and a
 * random draw of the rest): 40 trials of a 2-D bowl give another suggestion with
 * model_points 10 than with all of them, the same one with model_points 40 (not
 * past it), and one still near the bowl's minimum; a negative value is refused. */
static void test_model_subset(void) {
    sp_space s;
    make_unit_space(&s, 2);
    study_reset(0);
    tn_rng r;
    tn_rng_seed(&r, 5);
    for (int k = 0; k < 40; k++) {
        double u[2] = {tn_rng_uniform(&r), tn_rng_uniform(&r)};
        study_add(u, 2, SP_COMPLETE, bowl(u, 2));
    }
    double all[2], same[2], sub[2];
    bo_options o = {0};
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 2, 40, &o, all, NULL, 0), 0);
    o.model_points = 40;
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 2, 40, &o, same, NULL, 0), 0);
    o.model_points = 10;
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 2, 40, &o, sub, NULL, 0), 0);
    CHECK(memcmp(all, same, sizeof all) == 0);
    CHECK_MSG(memcmp(all, sub, sizeof all) != 0, "(%g, %g) both ways", all[0], all[1]);
    CHECK_MSG(bowl(sub, 2) < 0.1, "subset model's point (%g, %g): %g", sub[0], sub[1],
              bowl(sub, 2));
    o.model_points = -1;
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 2, 40, &o, sub, NULL, 0), TN_EINVAL);
    sp_space_clear(&s);
}

/* Parallel suggestions differ: each suggestion is added as pending before the next
 * is asked for, and with 3 pending trials at the incumbent the next one is elsewhere.
 * The pending trials act through the model (believed at its mean), not only as taken
 * points: the same points as FAILED trials (taken, not modelled) give another point. */
static void test_parallel_distinct(void) {
    sp_space s;
    make_unit_space(&s, 1);
    quad_history(1);
    double x[4];
    for (int k = 0; k < 4; k++) {
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 3, 10 + (uint64_t)k, NULL, &x[k], NULL, 0), 0);
        for (int j = 0; j < k; j++) {
            CHECK_MSG(fabs(x[k] - x[j]) > 1e-3, "suggestions %d and %d: %g, %g", j, k,
                      x[j], x[k]);
        }
        study_add(&x[k], 1, SP_PENDING, NAN);
    }

    quad_history(1);
    double inc = 0.35; /* the best measured point */
    for (int k = 0; k < 3; k++) study_add(&inc, 1, SP_PENDING, NAN);
    double y, y_failed;
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 3, 13, NULL, &y, NULL, 0), 0);
    CHECK_MSG(fabs(y - inc) > 1e-3, "y = %g", y);
    for (int k = 10; k < 13; k++) st.t[k].state = SP_FAILED;
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 3, 13, NULL, &y_failed, NULL, 0), 0);
    CHECK_MSG(y != y_failed, "y = %g either way", y);

    /* In 2-D, around a measured incumbent near the optimum. */
    sp_space s2;
    make_unit_space(&s2, 2);
    study_reset(0);
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++) {
            double u[2] = {0.125 + 0.25 * i, 0.125 + 0.25 * j};
            study_add(u, 2, SP_COMPLETE, bowl(u, 2));
        }
    }
    double best[2];
    CHECK_INT_EQ(bo_suggest(&s2, &st.h, 4, 16, NULL, best, NULL, 0), 0);
    study_add(best, 2, SP_COMPLETE, bowl(best, 2));
    double pend[3][2];
    for (int k = 0; k < 3; k++) {
        CHECK_INT_EQ(bo_suggest(&s2, &st.h, 4, 17 + (uint64_t)k, NULL, pend[k], NULL, 0), 0);
        CHECK_MSG(dist(pend[k], best, 2) > 1e-3, "pending %d on the incumbent", k);
        for (int j = 0; j < k; j++) CHECK(dist(pend[k], pend[j], 2) > 1e-3);
        study_add(pend[k], 2, SP_PENDING, NAN);
    }
    double next[2], next_failed[2];
    CHECK_INT_EQ(bo_suggest(&s2, &st.h, 4, 20, NULL, next, NULL, 0), 0);
    for (size_t k = 17; k < 20; k++) st.t[k].state = SP_FAILED;
    CHECK_INT_EQ(bo_suggest(&s2, &st.h, 4, 20, NULL, next_failed, NULL, 0), 0);
    CHECK(memcmp(next, next_failed, sizeof next) != 0);
    sp_space_clear(&s2);
    sp_space_clear(&s);
}

/* How near a running trial a suggestion may come follows the model's noise: on a
 * noise-free 1-D quadratic measured densely around its optimum, with the suggested
 * point running, the next suggestions refine within 1e-3 of it (the last digits of
 * the optimum; a fixed 1e-3 box around running trials forbids that); with the same
 * points measured with noise of sd 0.01, they keep more than 1e-3 from every running
 * trial. Both stay more than 1e-5 (the measured trials' tolerance) apart. */
static void dense_quad_history(double noise_sd, uint64_t seed) {
    tn_rng g;
    tn_rng_seed(&g, seed);
    study_reset(1);
    for (int k = 0; k < 25; k++) {
        double x = k < 10 ? 0.05 + 0.1 * k : 0.30 + 0.01 * (k - 10);
        study_add(&x, 1, SP_COMPLETE, -quad(x) + noise_sd * tn_rng_normal(&g));
    }
}

static void test_pending_radius(void) {
    sp_space s;
    make_unit_space(&s, 1);
    for (int noisy = 0; noisy <= 1; noisy++) {
        dense_quad_history(noisy ? 0.01 : 0.0, 7);
        double x[4], nearest = HUGE_VAL;
        for (int k = 0; k < 4; k++) {
            CHECK_INT_EQ(bo_suggest(&s, &st.h, 5, 30 + (uint64_t)k, NULL, &x[k], NULL, 0), 0);
            for (int j = 0; j < k; j++) nearest = fmin(nearest, fabs(x[k] - x[j]));
            study_add(&x[k], 1, SP_PENDING, NAN);
        }
        printf("  %s: suggestions %.6f %.6f %.6f %.6f, nearest pair %.2g\n",
               noisy ? "noisy" : "noise-free", x[0], x[1], x[2], x[3], nearest);
        CHECK_MSG(nearest > 1e-5, "nearest pair %g", nearest);
        if (noisy) {
            CHECK_MSG(nearest > 1e-3, "noisy: nearest pair %g", nearest);
        } else {
            CHECK_MSG(nearest < 1e-3, "noise-free: nearest pair %g", nearest);
        }
    }
    sp_space_clear(&s);
}

/* The constant liars (bo_options.pending): 8 suggestions in a row, each pending
 * during the next, around a measured incumbent near the 2-D bowl's optimum. Each is
 * legal and distinct; the liar at the worst value spreads them further than the
 * believer (its lies push the next point away); the liar at the best value keeps
 * them nearer the incumbent than the worst value. Unknown values are refused. */
static double min_pairwise(double pts[][2], int k) {
    double m = HUGE_VAL;
    for (int i = 0; i < k; i++)
        for (int j = 0; j < i; j++) m = fmin(m, dist(pts[i], pts[j], 2));
    return m;
}

static void test_pending_liars(void) {
    sp_space s;
    make_unit_space(&s, 2);
    double spread[BO_PENDING_COUNT], far[BO_PENDING_COUNT];
    for (int p = 0; p < BO_PENDING_COUNT; p++) {
        study_reset(0);
        for (int i = 0; i < 4; i++) {
            for (int j = 0; j < 4; j++) {
                double u[2] = {0.125 + 0.25 * i, 0.125 + 0.25 * j};
                study_add(u, 2, SP_COMPLETE, bowl(u, 2));
            }
        }
        bo_options o = {0};
        o.pending = p;
        double best[2], pts[8][2];
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 4, 16, &o, best, NULL, 0), 0);
        study_add(best, 2, SP_COMPLETE, bowl(best, 2));
        far[p] = 0;
        for (int k = 0; k < 8; k++) {
            char note[256];
            CHECK_INT_EQ(bo_suggest(&s, &st.h, 4, 17 + (uint64_t)k, &o, pts[k], note,
                                    sizeof note), 0);
            CHECK(all_legal(&s, pts[k]));
            CHECK_MSG(note[0] == 0, "pending %d: %s", p, note);
            far[p] += dist(pts[k], best, 2) / 8;
            study_add(pts[k], 2, SP_PENDING, NAN);
        }
        spread[p] = min_pairwise(pts, 8);
        CHECK_MSG(spread[p] > 1e-3, "pending %d: closest pair %g", p, spread[p]);
    }
    CHECK_MSG(spread[BO_PENDING_LIAR_WORST] > spread[BO_PENDING_BELIEVER],
              "closest pair: worst-value liar %g, believer %g",
              spread[BO_PENDING_LIAR_WORST], spread[BO_PENDING_BELIEVER]);
    CHECK_MSG(far[BO_PENDING_LIAR_BEST] < far[BO_PENDING_LIAR_WORST],
              "mean distance from the incumbent: best-value liar %g, worst-value %g",
              far[BO_PENDING_LIAR_BEST], far[BO_PENDING_LIAR_WORST]);
    double v[2];
    bo_options bad = {0};
    bad.pending = BO_PENDING_COUNT;
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 4, 25, &bad, v, NULL, 0), TN_EINVAL);
    bad.pending = -1;
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 4, 25, &bad, v, NULL, 0), TN_EINVAL);
    sp_space_clear(&s);
}

/* Failed trials are not data: failures right next to the next point, carrying absurd
 * objectives or none, change nothing. */
static void test_failed_ignored(void) {
    sp_space s;
    make_unit_space(&s, 1);
    quad_history(0);
    double x0, x1;
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 2, 10, NULL, &x0, NULL, 0), 0);
    double f[4] = {x0 + 0.02, x0 - 0.02, x0 + 0.04, x0 - 0.04};
    double objs[4] = {NAN, -1e300, INFINITY, NAN};
    for (int k = 0; k < 4; k++) {
        if (f[k] < 0 || f[k] > 1) f[k] = 0.5;
        study_add(&f[k], 1, SP_FAILED, objs[k]);
    }
    char note[256];
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 2, 10, NULL, &x1, note, sizeof note), 0);
    CHECK_MSG(memcmp(&x0, &x1, sizeof x0) == 0, "%g became %g", x0, x1);
    CHECK_INT_EQ(note[0], 0);
    CHECK(fabs(x1 - OPT) < 0.1);

    /* Only failures: the design goes on (no model, no note). */
    study_reset(0);
    for (int k = 0; k < 12; k++) {
        double u = (k + 0.5) / 12.0;
        study_add(&u, 1, SP_FAILED, NAN);
    }
    double d, alone;
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 2, 12, NULL, &d, note, sizeof note), 0);
    CHECK_INT_EQ(bo_suggest(&s, NULL, 2, 12, NULL, &alone, NULL, 0), 0);
    CHECK(memcmp(&d, &alone, sizeof d) == 0);
    CHECK_INT_EQ(note[0], 0);
    sp_space_clear(&s);
}

/* A stopped trial's last value is not a measurement: the model is the same as with a
 * failed trial at that point (and differs from a complete trial there). */
static void test_stopped_not_modelled(void) {
    sp_space s;
    make_unit_space(&s, 1);
    double at = 0.8, great = -5.0; /* minimising: far better than anything measured */
    double as_stopped, as_failed, as_complete;
    quad_history(0);
    study_add(&at, 1, SP_STOPPED, great);
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 2, 11, NULL, &as_stopped, NULL, 0), 0);
    quad_history(0);
    study_add(&at, 1, SP_FAILED, NAN);
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 2, 11, NULL, &as_failed, NULL, 0), 0);
    quad_history(0);
    study_add(&at, 1, SP_COMPLETE, great);
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 2, 11, NULL, &as_complete, NULL, 0), 0);
    CHECK_MSG(memcmp(&as_stopped, &as_failed, sizeof at) == 0, "%g vs %g", as_stopped,
              as_failed);
    CHECK_MSG(fabs(as_complete - as_stopped) > 0.1, "%g vs %g", as_complete, as_stopped);
    CHECK(fabs(as_complete - at) < 0.15); /* the model would chase a measured 0.8 */
    sp_space_clear(&s);
}

/* When the model cannot be fitted the suggestion is random search's point for
 * (seed, index), legal, and the note says so. */
static void test_fallback_forced(void) {
    int ex;
    sp_space s;
    s = make_space(mixed_params, sizeof mixed_params / sizeof mixed_params[0]);
    study_reset(0);
    for (uint64_t k = 0; k < 12; k++) {
        double v[MAXP];
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 11, k, NULL, v, NULL, 0), 0);
        study_add(v, s.n, SP_COMPLETE, objective_of(&s, v));
    }
    bo_options o = {0};
    o.force_fallback = 1;
    double v[MAXP], r[MAXP];
    char note[256];
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 11, 12, &o, v, note, sizeof note), 0);
    CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &s, &st.h, 11, 12, r, &ex, NULL, 0), 0);
    CHECK(all_legal(&s, v));
    CHECK(memcmp(v, r, s.n * sizeof *v) == 0);
    CHECK_STR_CONTAINS(note, "could not be fitted");
    CHECK_STR_CONTAINS(note, "random suggestion");
    /* A short note buffer is cut, not overrun. */
    char tiny[8];
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 11, 12, &o, v, tiny, sizeof tiny), 0);
    CHECK_INT_EQ((int)strlen(tiny), 7);
    sp_space_clear(&s);
}

/* All measurements at one point: no model yet; the design goes on, with a note. */
static void test_no_two_distinct_points(void) {
    sp_space s;
    make_unit_space(&s, 2);
    study_reset(1);
    double u[2] = {0.3, 0.6};
    for (int k = 0; k < 6; k++) study_add(u, 2, SP_COMPLETE, 1.0 + k);
    double v[2];
    char note[256];
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 1, 6, NULL, v, note, sizeof note), 0);
    CHECK(all_legal(&s, v));
    CHECK(dist(u, v, 2) > 1e-3);
    CHECK_STR_CONTAINS(note, "fewer than 2 distinct points");

    /* More parallel trials than the initial design: all pending, none measured. */
    study_reset(1);
    for (uint64_t k = 0; k < 9; k++) {
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 1, k, NULL, v, note, sizeof note), 0);
        CHECK(all_legal(&s, v));
        CHECK_INT_EQ(note[0] != 0, k >= 5); /* the note once the design is used up */
        study_add(v, 2, SP_PENDING, NAN);
    }
    sp_space_clear(&s);
}

/* A small space: the untried category is suggested; once every point is tried, a
 * legal point anyway, with a note. */
static void test_small_space_exhausted(void) {
    sp_space s;
    static const sp_param cat[] = {P_CAT("optimizer", cats3)};
    s = make_space(cat, 1);
    bo_options o = {0};
    o.initial_trials = 2;
    study_reset(1);
    double c0 = 0, c1 = 2, c2 = 1, v;
    study_add(&c0, 1, SP_COMPLETE, 0.5);
    study_add(&c1, 1, SP_COMPLETE, 0.7);
    char note[256];
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 1, 2, &o, &v, note, sizeof note), 0);
    CHECK(v == 1.0);
    CHECK_INT_EQ(note[0], 0);
    study_add(&c2, 1, SP_COMPLETE, 0.6);
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 1, 3, &o, &v, note, sizeof note), 0);
    CHECK(sp_is_legal(&s.params[0], v));
    CHECK_STR_CONTAINS(note, "tried already");
    sp_space_clear(&s);
}

/* A categorical optimum is found: the third category is worth much more. Once x is
 * refined to 1e-4 of its optimum, EI may spend a trial on another category. */
static void test_categorical_optimum(void) {
    static const sp_param ps[] = {P_DOUBLE("x", SP_LINEAR, 0, 1), P_CAT("c", cats3)};
    sp_space s;
    s = make_space(ps, 2);
    study_reset(1);
    int picks = 0;
    double best = -HUGE_VAL, best_v[2] = {0, 0};
    for (uint64_t k = 0; k < 20; k++) {
        double v[2];
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 3, k, NULL, v, NULL, 0), 0);
        CHECK(all_legal(&s, v));
        if (k >= 14) picks += v[1] == 2.0;
        double y = -(v[0] - 0.6) * (v[0] - 0.6) + (v[1] == 2.0 ? 0.5 : 0.0);
        if (y > best) {
            best = y;
            memcpy(best_v, v, sizeof best_v);
        }
        study_add(v, 2, SP_COMPLETE, y);
    }
    CHECK_MSG(picks >= 4, "category 2 in %d of the last 6 suggestions", picks);
    CHECK_MSG(best_v[1] == 2.0 && fabs(best_v[0] - 0.6) < 0.01, "best (%g, %g)", best_v[0],
              best_v[1]);
    sp_space_clear(&s);
}

/* Categories that matter little beside the continuous parameters (0.05 or 0.1 each,
 * against a bowl whose values reach 1.4) are still all set right within 40 trials, in
 * each of 6 studies: the design's best point has some of them wrong, and the sampler
 * must leave them for others it has seen only at poor points (the one-hot's height,
 * BO_ONEHOT, lets categories share what the model knows; the sweep moves them one at
 * a time). With one-hots of height 1, 2 of the 6 studies end with a category wrong. */
#define NCONT 3
#define NCAT 4

static double cat_effect(const double *v) {
    static const double eff[3] = {0.1, 0.05, 0.0};
    double f = 0.0;
    for (int k = 0; k < NCAT; k++) f += eff[((int)v[NCONT + k] + k) % 3]; /* best: 2 1 0 2 */
    return f;
}

static void test_small_categorical_effects(void) {
    static const sp_param ps[] = {P_DOUBLE("x0", SP_LINEAR, 0, 1), P_DOUBLE("x1", SP_LINEAR, 0, 1),
                                  P_DOUBLE("x2", SP_LINEAR, 0, 1), P_CAT("c0", cats3),
                                  P_CAT("c1", cats3), P_CAT("c2", cats3), P_CAT("c3", cats3)};
    const size_t P = NCONT + NCAT;
    sp_space s;
    s = make_space(ps, P);
    int right = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        study_reset(0);
        double best = HUGE_VAL, best_v[NCONT + NCAT] = {0};
        for (uint64_t k = 0; k < 40; k++) {
            double v[NCONT + NCAT];
            CHECK_INT_EQ(bo_suggest(&s, &st.h, seed, k, NULL, v, NULL, 0), 0);
            double y = cat_effect(v);
            for (int i = 0; i < NCONT; i++) y += (v[i] - 0.25 * (i + 1)) * (v[i] - 0.25 * (i + 1));
            if (y < best) {
                best = y;
                memcpy(best_v, v, sizeof best_v);
            }
            study_add(v, P, SP_COMPLETE, y);
        }
        printf("  seed %d: best of 40 %.4f, categories %g %g %g %g (best 2 1 0 2)\n", (int)seed,
               best, best_v[3], best_v[4], best_v[5], best_v[6]);
        right += cat_effect(best_v) == 0.0;
    }
    CHECK_MSG(right == 6, "every category right in %d of 6 studies", right);
    sp_space_clear(&s);
}

/* The one-hot's height is chosen by the fits' evidence (bo_options.onehot 0): where
 * the category moves the optimum of x (as an optimiser moves the best learning rate:
 * under sgd x is best at 0.85, under adam at 0.15), the default suggests what height
 * BO_ONEHOT_APART does and not what BO_ONEHOT does; where it adds only 0.01, what
 * BO_ONEHOT does. */
static char *sgd_adam[] = {"sgd", "adam"};

static void onehot_suggestions(int strong, double *chosen, double *near, double *apart) {
    static const sp_param ps[] = {P_DOUBLE("x", SP_LINEAR, 0, 1), P_CAT("c", sgd_adam)};
    sp_space s;
    s = make_space(ps, 2);
    study_reset(0);
    for (int k = 0; k < 12; k++) {
        double v[2] = {(k / 2) * 0.18 + 0.03, k % 2}, a = v[1] == 0.0 ? 0.85 : 0.15;
        double y = strong ? (v[0] - a) * (v[0] - a) : (v[0] - 0.5) * (v[0] - 0.5) + 0.01 * v[1];
        study_add(v, 2, SP_COMPLETE, y);
    }
    bo_options o = {0};
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 5, 12, &o, chosen, NULL, 0), 0);
    o.onehot = BO_ONEHOT;
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 5, 12, &o, near, NULL, 0), 0);
    o.onehot = BO_ONEHOT_APART;
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 5, 12, &o, apart, NULL, 0), 0);
    printf("  %s effect: chosen (%.4f, %g), at BO_ONEHOT (%.4f, %g), apart (%.4f, %g)\n",
           strong ? "strong" : "small", chosen[0], chosen[1], near[0], near[1], apart[0],
           apart[1]);
    sp_space_clear(&s);
}

static void test_onehot_by_evidence(void) {
    double c[2], n[2], a[2];
    onehot_suggestions(1, c, n, a);
    CHECK(memcmp(n, a, sizeof n) != 0); /* the two heights do suggest differently */
    CHECK(memcmp(c, a, sizeof c) == 0);
    onehot_suggestions(0, c, n, a);
    CHECK(memcmp(n, a, sizeof n) != 0);
    CHECK(memcmp(c, n, sizeof c) == 0);
    bo_options bad = {0};
    bad.onehot = -1.0;
    sp_space s;
    make_unit_space(&s, 1);
    double v;
    CHECK_INT_EQ(bo_suggest(&s, NULL, 1, 0, &bad, &v, NULL, 0), TN_EINVAL);
    bad.onehot = NAN;
    CHECK_INT_EQ(bo_suggest(&s, NULL, 1, 0, &bad, &v, NULL, 0), TN_EINVAL);
    sp_space_clear(&s);
}

/* More parameters than GSL's Sobol tables (40): Halton's sequence, then the model. */
static void test_many_dimensions(void) {
    sp_space s;
    make_unit_space(&s, 45);
    study_reset(0);
    for (uint64_t k = 0; k < 24; k++) {
        double v[MAXP];
        char note[256];
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 8, k, NULL, v, note, sizeof note), 0);
        CHECK(all_legal(&s, v));
        CHECK_INT_EQ(note[0], 0);
        for (size_t j = 0; j < st.h.n; j++) CHECK(dist(v, st.v[j], 45) > 0.1);
        study_add(v, 45, SP_COMPLETE, objective_of(&s, v));
    }
    sp_space_clear(&s);
}

/* On a smooth 4-D bowl, 30 trials of the sampler find a better point than 30 of
 * random search, for each of several seeds. */
static void test_beats_random(void) {
    int ex;
    sp_space s;
    make_unit_space(&s, 4);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        double best_bo = INFINITY, best_rs = INFINITY;
        study_reset(0);
        for (uint64_t k = 0; k < 30; k++) {
            double v[4], r[4];
            CHECK_INT_EQ(bo_suggest(&s, &st.h, seed, k, NULL, v, NULL, 0), 0);
            CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &s, NULL, seed, k, r, &ex, NULL, 0), 0);
            double y = objective_of(&s, v), yr = objective_of(&s, r);
            study_add(v, 4, SP_COMPLETE, y);
            if (y < best_bo) best_bo = y;
            if (yr < best_rs) best_rs = yr;
        }
        printf("  seed %d: best of 30, Bayesian %.4f, random %.4f\n", (int)seed, best_bo,
               best_rs);
        CHECK_MSG(best_bo < best_rs, "seed %d: %g vs %g", (int)seed, best_bo, best_rs);
    }
    sp_space_clear(&s);
}

/* ---- Conditional parameters ---- */

static char *cats2[] = {"sgd", "adam"};
static double when0[] = {0}, when1[] = {1}, when_02[] = {0, 2}, when_4[] = {4};
static double disc_ab[] = {0.5, 0.9};

static int same_point(const double *a, const double *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (isnan(a[i]) != isnan(b[i]) || (!isnan(a[i]) && a[i] != b[i])) return 0;
    return 1;
}

/* A tree of every type: optimizer {sgd, adam, rmsprop}; under sgd and rmsprop a log
 * DOUBLE momentum and an INTEGER layers, under layers 4 a DISCRETE width; under adam
 * a CATEGORICAL schedule; lr at the top. */
static void make_tree(sp_space *s) {
    const sp_param ps[] = {
        P_CAT("optimizer", cats3),
        child((sp_param)P_DOUBLE("momentum", SP_REVERSE_LOG, 0.5, 0.99), 0, when_02, 2),
        child((sp_param)P_INT("layers", SP_LINEAR, 1, 4), 0, when_02, 2),
        child((sp_param)P_DISC("width", SP_SCALE_NONE, disc_batch), 2, when_4, 1),
        child((sp_param)P_CAT("schedule", cats2), 0, when1, 1),
        P_DOUBLE("lr", SP_LOG, 1e-4, 1),
    };
    *s = make_space(ps, sizeof ps / sizeof ps[0]);
}

/* A smooth objective of the tree's active values (to minimise). */
static double tree_objective(const sp_space *s, const double *v) {
    double u[MAXP];
    for (size_t i = 0; i < s->n; i++) u[i] = isnan(v[i]) ? 0.5 : sp_to_unit(&s->params[i], v[i]);
    return bowl(u, s->n) + (v[0] == 1 ? 0.2 : 0.0);
}

/* A parallel study of the tree (3 running at a time): every point legal, inactive
 * parameters NaN, none repeated, no fallback; the same arguments give the same point. */
static void test_conditional_legal_parallel(void) {
    sp_space s;
    make_tree(&s);
    study_reset(0);
    char note[256];
    int notes = 0, seen_inactive = 0, seen_grandchild = 0;
    for (uint64_t k = 0; k < 40; k++) {
        double v[MAXP], w[MAXP];
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 11, k, NULL, v, note, sizeof note), 0);
        CHECK_MSG(sp_point_is_legal(&s, v), "trial %d is not a point of the tree", (int)k);
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 11, k, NULL, w, NULL, 0), 0);
        CHECK_MSG(memcmp(v, w, s.n * sizeof *v) == 0, "trial %d not reproducible", (int)k);
        notes += note[0] != '\0';
        seen_inactive += isnan(v[1]);
        seen_grandchild += !isnan(v[3]);
        for (size_t j = 0; j < st.h.n; j++)
            CHECK_MSG(!same_point(st.v[j], v, s.n), "trial %d repeats %d", (int)k, (int)j);
        study_add(v, s.n, SP_PENDING, NAN);
        if (k >= 2) {
            sp_trial *t = &st.t[k - 2];
            t->state = SP_COMPLETE;
            t->objective = tree_objective(&s, t->values);
            t->has_objective = 1;
        }
    }
    CHECK_INT_EQ(notes, 0);
    CHECK(seen_inactive > 0 && seen_inactive < 40);
    CHECK(seen_grandchild > 0);
    sp_space_clear(&s);
}

/* optimizer {sgd, adam}; momentum under sgd, beta1 under adam; lr for both. sgd's
 * optimum (0 at lr 0.3, momentum 0.8) beats adam's (0.15). */
static double opt_objective(const double *v) {
    if (v[0] == 0) return (v[3] - 0.3) * (v[3] - 0.3) + 2 * (v[1] - 0.8) * (v[1] - 0.8);
    return 0.15 + (v[3] - 0.6) * (v[3] - 0.6) + (v[2] - 0.5) * (v[2] - 0.5);
}

static void make_opt_space(sp_space *s) {
    const sp_param ps[] = {P_CAT("optimizer", cats2),
                           child((sp_param)P_DOUBLE("momentum", SP_LINEAR, 0, 1), 0, when0, 1),
                           child((sp_param)P_DOUBLE("beta1", SP_LINEAR, 0, 1), 0, when1, 1),
                           P_DOUBLE("lr", SP_LINEAR, 0, 1)};
    *s = make_space(ps, 4);
}

/* The conditional optimum is found in 40 trials, better than random search's best,
 * for each of several seeds. */
static void test_conditional_optimum(void) {
    int ex;
    sp_space s;
    make_opt_space(&s);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        double best_bo = INFINITY, best_rs = INFINITY, at[4] = {0};
        study_reset(0);
        for (uint64_t k = 0; k < 40; k++) {
            double v[4], r[4];
            CHECK_INT_EQ(bo_suggest(&s, &st.h, seed, k, NULL, v, NULL, 0), 0);
            CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &s, NULL, seed, k, r, &ex, NULL, 0), 0);
            CHECK(sp_point_is_legal(&s, v) && sp_point_is_legal(&s, r));
            double y = opt_objective(v), yr = opt_objective(r);
            study_add(v, 4, SP_COMPLETE, y);
            if (y < best_bo) {
                best_bo = y;
                memcpy(at, v, sizeof at);
            }
            if (yr < best_rs) best_rs = yr;
        }
        printf("  seed %d: best of 40, Bayesian %.5f (%s), random %.5f\n", (int)seed, best_bo,
               at[0] == 0 ? "sgd" : "adam", best_rs);
        CHECK_MSG(best_bo < best_rs, "seed %d: %g vs %g", (int)seed, best_bo, best_rs);
        CHECK_MSG(best_bo < 0.01 && at[0] == 0, "seed %d: best %g", (int)seed, best_bo);
    }
    sp_space_clear(&s);
}

/* A branch that is far better but used up is not suggested again, and the inactive
 * momentum is not taken for a value: adam (momentum inactive: one point, taken)
 * measured far above every sgd trial, whose values peak at momentum 0.75; the next
 * point is sgd. (With normal scores it was sgd near its peak; with the raw values that
 * the evidence now prefers, EI against the unreachable incumbent explores sgd's ends:
 * docs/bayesian-optimisation.md, "Data", limitations.) */
static void test_inactive_not_a_value(void) {
    static const sp_param ps[] = {
        P_CAT("optimizer", cats2),
        {.name = (char *)"momentum", .type = SP_DOUBLE, .min = 0, .max = 1, .conditional = 1,
         .parent = 0, .when = when0, .nwhen = 1}};
    sp_space s;
    s = make_space(ps, 2);
    for (int rep = 0; rep < 3; rep++) {
        study_reset(1);
        double adam[2] = {1, NAN};
        study_add(adam, 2, SP_COMPLETE, 10.0);
        for (int k = 0; k < 6; k++) {
            double m = 0.05 + 0.18 * k + 0.02 * rep, v[2] = {0, m};
            study_add(v, 2, SP_COMPLETE, -(m - 0.75) * (m - 0.75));
        }
        double v[2];
        char note[256];
        bo_options o = {0};
        o.initial_trials = 2;
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 5 + (uint64_t)rep, 7, &o, v, note, sizeof note), 0);
        CHECK_INT_EQ(note[0], 0);
        CHECK_MSG(v[0] == 0 && v[1] >= 0 && v[1] <= 1, "rep %d: suggested (%g, %g)", rep, v[0],
                  v[1]);
    }
    sp_space_clear(&s);
}

/* The model's coordinates (bo_encode): an inactive ordinal parameter is the centre
 * of the arc its values lie on, at distance 1 from every value (the distance between
 * the range's two ends), with one lengthscale for the arc's two coordinates; an
 * inactive CATEGORICAL is no category; parameters that are not conditional are
 * encoded as before (unit value, one-hot of height BO_ONEHOT); each parameter has one
 * lengthscale, shared by its coordinates. */
static void test_inactive_encoding(void) {
    sp_space s;
    make_tree(&s); /* optimizer(3) momentum(2) layers(2) width(2) schedule(2) lr(1) */
    size_t group[32];
    size_t D = bo_encode(&s, NULL, NULL, group);
    CHECK_INT_EQ(D, 12);
    if (D != 12) {
        sp_space_clear(&s);
        return;
    }
    /* one lengthscale per parameter: optimizer 0-2, the arcs' pairs 3-4, 5-6, 7-8,
     * schedule 9-10, lr 11 */
    static const size_t param_of[12] = {0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5};
    int same = 1;
    for (size_t a = 0; a < D; a++)
        for (size_t b = a + 1; b < D; b++) {
            if ((group[a] == group[b]) != (param_of[a] == param_of[b])) same = 0;
        }
    CHECK(same);

    double x[12], y[12];
    /* adam: momentum, layers and width inactive; schedule active */
    double adam[6] = {1, NAN, NAN, NAN, 1, 0.01};
    bo_encode(&s, adam, x, NULL);
    CHECK(x[0] == 0 && x[1] == BO_ONEHOT && x[2] == 0); /* one-hot adam */
    for (size_t j = 3; j <= 8; j++) CHECK(x[j] == 0);  /* arcs' centres */
    CHECK(x[9] == 0 && x[10] == BO_ONEHOT);             /* schedule = adam's second */
    CHECK_NEAR(x[11], sp_to_unit(&s.params[5], 0.01), 1e-15, 0);
    /* sgd: schedule inactive (no category); the distance from momentum's centre to each
     * momentum value is 1, and the range's ends are 1 apart */
    double prev[2] = {0, 0};
    for (int k = 0; k <= 20; k++) {
        double m = sp_from_unit(&s.params[1], k / 20.0);
        double sgd[6] = {0, m, 4, 64, NAN, 0.01};
        bo_encode(&s, sgd, y, NULL);
        CHECK(y[9] == 0 && y[10] == 0);
        CHECK_NEAR(hypot(y[3], y[4]), 1.0, 1e-12, 0);     /* from the centre */
        CHECK_NEAR(hypot(y[5], y[6]), 1.0, 1e-12, 0);     /* layers 4 */
        if (k == 0) memcpy(prev, &y[3], sizeof prev);
        if (k == 20) CHECK_NEAR(hypot(y[3] - prev[0], y[4] - prev[1]), 1.0, 1e-9, 0);
    }
    /* a top-level parameter: the unit value itself */
    sp_space u;
    u = make_space(mixed_params, sizeof mixed_params / sizeof mixed_params[0]);
    double v[7] = {0.01, 0.99, 0.25, 3, 64, 128, 2}, ux[16];
    size_t Du = bo_encode(&u, v, ux, group);
    CHECK_INT_EQ(Du, 9);
    for (size_t i = 0; i < 6; i++) CHECK_NEAR(ux[i], sp_to_unit(&u.params[i], v[i]), 1e-15, 0);
    CHECK(ux[6] == 0 && ux[7] == 0 && ux[8] == BO_ONEHOT);
    for (size_t j = 0; j < Du; j++) CHECK_INT_EQ(group[j], j < 6 ? j : 6);
    /* a malformed tree has no encoding */
    s.params[3].parent = 3;
    CHECK_INT_EQ(bo_encode(&s, adam, x, group), 0);
    CHECK_INT_EQ(bo_encode(NULL, adam, x, group), 0);
    sp_space_clear(&u);
    sp_space_clear(&s);
}

/* A tree of 5 points (a: x in {sgd, adam, rmsprop}; b: y in {0.5, 0.9}) is tried point
 * by point, never a point twice, then the sampler says it has run out. */
static void test_conditional_exhausted(void) {
    static const sp_param ps[] = {
        P_CAT("opt", cats2),
        {.name = (char *)"x", .type = SP_CATEGORICAL, .categories = cats3, .ncategories = 3,
         .conditional = 1, .parent = 0, .when = when0, .nwhen = 1},
        {.name = (char *)"y", .type = SP_DISCRETE, .values = disc_ab, .nvalues = 2,
         .conditional = 1, .parent = 0, .when = when1, .nwhen = 1}};
    sp_space s;
    s = make_space(ps, 3);
    bo_options o = {0};
    o.initial_trials = 2;
    study_reset(0);
    char note[256];
    for (uint64_t k = 0; k < 5; k++) {
        double v[3];
        CHECK_INT_EQ(bo_suggest(&s, &st.h, 2, k, &o, v, note, sizeof note), 0);
        CHECK(sp_point_is_legal(&s, v));
        CHECK_MSG(note[0] == 0, "trial %d: %s", (int)k, note);
        for (size_t j = 0; j < st.h.n; j++)
            CHECK_MSG(!same_point(st.v[j], v, 3), "trial %d repeats %d", (int)k, (int)j);
        study_add(v, 3, SP_COMPLETE, (double)k);
    }
    double v[3];
    CHECK_INT_EQ(bo_suggest(&s, &st.h, 2, 5, &o, v, note, sizeof note), 0);
    CHECK(sp_point_is_legal(&s, v));
    CHECK_STR_CONTAINS(note, "tried already");
    sp_space_clear(&s);

    /* a malformed tree is refused */
    sp_space b;
    b = make_space(ps, 3);
    b.params[2].parent = 2;
    CHECK_INT_EQ(bo_suggest(&b, NULL, 1, 0, NULL, v, NULL, 0), TN_EINVAL);
    b.params[2].parent = 0;
    b.params[2].when[0] = 7; /* not a category of opt */
    CHECK_INT_EQ(bo_suggest(&b, NULL, 1, 0, NULL, v, NULL, 0), TN_EINVAL);
    sp_space_clear(&b);
}

static void test_bad_arguments(void) {
    sp_space s;
    make_unit_space(&s, 1);
    double v = -1;
    char note[16] = "junk";
    CHECK_INT_EQ(bo_suggest(NULL, NULL, 1, 0, NULL, &v, note, sizeof note), TN_EINVAL);
    CHECK_INT_EQ(note[0], 0);
    CHECK_INT_EQ(bo_suggest(&s, NULL, 1, 0, NULL, NULL, NULL, 0), TN_EINVAL);
    sp_history h = {NULL, 3, 0};
    CHECK_INT_EQ(bo_suggest(&s, &h, 1, 0, NULL, &v, NULL, 0), TN_EINVAL);
    CHECK(v == -1);
    sp_param empty = P_CAT("c", cats3);
    empty.ncategories = 0;
    sp_space bad = {&empty, 1};
    CHECK_INT_EQ(bo_suggest(&bad, NULL, 1, 0, NULL, &v, NULL, 0), TN_EINVAL);
    bo_options o = {0};
    o.acquisition = 7;
    CHECK_INT_EQ(bo_suggest(&s, NULL, 1, 0, &o, &v, NULL, 0), TN_EINVAL);
    o.acquisition = BO_UCB;
    o.ucb_beta = -1;
    CHECK_INT_EQ(bo_suggest(&s, NULL, 1, 0, &o, &v, NULL, 0), TN_EINVAL);
    o.ucb_beta = 0;
    o.candidates = -5;
    CHECK_INT_EQ(bo_suggest(&s, NULL, 1, 0, &o, &v, NULL, 0), TN_EINVAL);
    CHECK(v == -1);
    sp_space none = {NULL, 0};
    CHECK_INT_EQ(bo_suggest(&none, NULL, 1, 0, NULL, NULL, NULL, 0), 0);
    sp_space_clear(&s);
}

int main(void) {
    RUN(test_legal_mixed_parallel);
    RUN(test_reproducible);
    RUN(test_threads_same_bits);
    RUN(test_index_and_seed_differ);
    RUN(test_design_spread);
    RUN(test_quadratic_optimum);
    RUN(test_quadratic_ucb);
    RUN(test_skewed_outlier);
    RUN(test_warp_choice);
    RUN(test_model_subset);
    RUN(test_parallel_distinct);
    RUN(test_pending_radius);
    RUN(test_pending_liars);
    RUN(test_failed_ignored);
    RUN(test_stopped_not_modelled);
    RUN(test_fallback_forced);
    RUN(test_no_two_distinct_points);
    RUN(test_small_space_exhausted);
    RUN(test_categorical_optimum);
    RUN(test_small_categorical_effects);
    RUN(test_onehot_by_evidence);
    RUN(test_many_dimensions);
    RUN(test_beats_random);
    RUN(test_conditional_legal_parallel);
    RUN(test_conditional_optimum);
    RUN(test_inactive_not_a_value);
    RUN(test_inactive_encoding);
    RUN(test_conditional_exhausted);
    RUN(test_bad_arguments);
    return check_summary();
}
