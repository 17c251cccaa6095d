/*
 * test_space.c — tests for search/space.c: the unit-interval map of every type and
 * scale (round trips, monotonicity, endpoints, clamping, min == max), reverse log's
 * resolution near max, legality of from_unit everywhere, equal shares for integers,
 * discrete values and categories, flag formatting and parsing, grid size, order and
 * coverage (saturation and huge integer ranges included), and the samplers (grid
 * exhaustion, random reproducibility and independence from the history, the
 * ALGORITHM_UNSPECIFIED note, invalid algorithms and spaces). Conditional parameters:
 * which values activate which parameters, legal points, the grid of a tree against
 * brute force (only active combinations, each once, in the documented order, with
 * huge ranges), random search's draws and masking, and malformed conditions refused.
 *
 * Most tests run over one table of parameters (cases[]) that covers every
 * type x scale, so a new case is checked by all of them.
 */
#include "search/sampler.h"
#include "search/space.h"

#include "common/rng.h"
#include "common/status.h"
#include "tests/check.h"
#include "tests/search/params.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double disc_batch[] = {16, 64, 128, 256};
static double disc_half[] = {0.5};
static double disc_lr[] = {0.001, 0.01, 0.5};
static double disc_neg[] = {-3, -0.25, 0, 7.5};
static char *cats3[] = {"sgd", "adam", "rmsprop"};
static char *cats1[] = {"only"};

/* Every type x scale, plus degenerate ranges. */
static const sp_param cases[] = {
    P_DOUBLE("d_none", SP_SCALE_NONE, -2, 3),
    P_DOUBLE("d_lin", SP_LINEAR, 0.1, 0.7),
    P_DOUBLE("d_log", SP_LOG, 1e-4, 1),
    P_DOUBLE("d_rlog", SP_REVERSE_LOG, 0.9, 0.9999),
    P_DOUBLE("d_rlog_wide", SP_REVERSE_LOG, 1e-3, 10),
    P_DOUBLE("d_same", SP_LINEAR, 2, 2),
    P_DOUBLE("d_same_log", SP_LOG, 2, 2),
    P_INT("i_none", SP_SCALE_NONE, 1, 4),
    P_INT("i_lin", SP_LINEAR, -5, 10),
    P_INT("i_log", SP_LOG, 1, 1024),
    P_INT("i_rlog", SP_REVERSE_LOG, 2, 100),
    P_INT("i_same", SP_LOG, 3, 3),
    P_DISC("q_none", SP_SCALE_NONE, disc_batch),
    P_DISC("q_lin", SP_LINEAR, disc_neg),
    P_DISC("q_log", SP_LOG, disc_lr),
    P_DISC("q_one", SP_SCALE_NONE, disc_half),
    P_CAT("c3", cats3),
    P_CAT("c1", cats1),
};
#define NCASES (sizeof cases / sizeof cases[0])

/* ---- Helpers ---- */

/* The legal values of a parameter in increasing order, for the enumerable types
 * (all of them for INTEGER, DISCRETE and CATEGORICAL; for DOUBLE the ends and 99
 * points between). Returns the count; out has room for max. */
static size_t legal_values(const sp_param *p, double *out, size_t max) {
    size_t n = 0;
    switch (p->type) {
    case SP_DOUBLE:
        if (p->min == p->max) {
            out[n++] = p->min;
            break;
        }
        for (int k = 0; k <= 100 && n < max; k++) {
            out[n++] = p->min + (p->max - p->min) * k / 100.0;
        }
        out[n - 1] = p->max;
        break;
    case SP_INTEGER:
        for (double v = p->min; v <= p->max && n < max; v++) out[n++] = v;
        break;
    case SP_DISCRETE:
        for (size_t i = 0; i < p->nvalues && n < max; i++) out[n++] = p->values[i];
        break;
    case SP_CATEGORICAL:
        for (size_t i = 0; i < p->ncategories && n < max; i++) out[n++] = (double)i;
        break;
    }
    return n;
}

/* The smallest and largest legal values. */
static double first_legal(const sp_param *p) {
    if (p->type == SP_DISCRETE) return p->values[0];
    if (p->type == SP_CATEGORICAL) return 0;
    return p->min;
}

static double last_legal(const sp_param *p) {
    if (p->type == SP_DISCRETE) return p->values[p->nvalues - 1];
    if (p->type == SP_CATEGORICAL) return (double)(p->ncategories - 1);
    return p->max;
}

/* Round-trip tolerance for DOUBLE: a few ulps of the range (reverse log loses bits
 * of v in max + min - v, so the tolerance is absolute in the range). */
static double tol(const sp_param *p) {
    return p->type == SP_DOUBLE ? 1e-12 * (fabs(p->max) + fabs(p->min)) : 0.0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- Unit interval ---- */

static void test_unit_round_trip(void) {
    double vals[128];
    for (size_t c = 0; c < NCASES; c++) {
        const sp_param *p = &cases[c];
        size_t n = legal_values(p, vals, 128);
        CHECK(n > 0);
        for (size_t i = 0; i < n; i++) {
            CHECK_MSG(sp_is_legal(p, vals[i]), "%s: %.17g", p->name, vals[i]);
            double u = sp_to_unit(p, vals[i]);
            CHECK_MSG(u >= 0.0 && u <= 1.0, "%s: to_unit(%.17g) = %.17g", p->name, vals[i], u);
            double back = sp_from_unit(p, u);
            CHECK_MSG(fabs(back - vals[i]) <= tol(p), "%s: from_unit(to_unit(%.17g)) = %.17g",
                      p->name, vals[i], back);
            if (p->type != SP_DOUBLE) CHECK_MSG(back == vals[i], "%s: inexact", p->name);
        }
    }
}

static void test_unit_monotonic(void) {
    double vals[128];
    for (size_t c = 0; c < NCASES; c++) {
        const sp_param *p = &cases[c];
        /* from_unit is non-decreasing over a fine sweep of u. */
        double prev = sp_from_unit(p, 0.0);
        for (int k = 1; k <= 10000; k++) {
            double v = sp_from_unit(p, k / 10000.0);
            CHECK_MSG(v >= prev, "%s: from_unit(%g) = %.17g < %.17g", p->name, k / 10000.0,
                      v, prev);
            prev = v;
        }
        /* to_unit is strictly increasing over distinct legal values. */
        size_t n = legal_values(p, vals, 128);
        for (size_t i = 1; i < n; i++) {
            CHECK_MSG(sp_to_unit(p, vals[i]) > sp_to_unit(p, vals[i - 1]),
                      "%s: to_unit not increasing at %.17g", p->name, vals[i]);
        }
    }
}

static void test_unit_endpoints_and_clamping(void) {
    for (size_t c = 0; c < NCASES; c++) {
        const sp_param *p = &cases[c];
        double lo = first_legal(p), hi = last_legal(p);
        CHECK_MSG(sp_from_unit(p, 0.0) == lo, "%s: from_unit(0)", p->name);
        CHECK_MSG(sp_from_unit(p, 1.0) == hi, "%s: from_unit(1)", p->name);
        CHECK_MSG(sp_from_unit(p, -0.5) == lo, "%s: from_unit(-0.5)", p->name);
        CHECK_MSG(sp_from_unit(p, -INFINITY) == lo, "%s: from_unit(-inf)", p->name);
        CHECK_MSG(sp_from_unit(p, 1.5) == hi, "%s: from_unit(1.5)", p->name);
        CHECK_MSG(sp_from_unit(p, INFINITY) == hi, "%s: from_unit(inf)", p->name);
        if (p->type != SP_DOUBLE) { /* the last share reaches up to 1 */
            CHECK_MSG(sp_from_unit(p, nextafter(1.0, 0.0)) == hi, "%s: from_unit(1-)", p->name);
        }
        CHECK_MSG(sp_is_legal(p, sp_from_unit(p, NAN)), "%s: from_unit(nan)", p->name);
        if (p->type == SP_DOUBLE && p->min < p->max) {
            CHECK_MSG(sp_to_unit(p, p->min) == 0.0, "%s: to_unit(min)", p->name);
            CHECK_MSG(sp_to_unit(p, p->max) == 1.0, "%s: to_unit(max)", p->name);
        }
        if (lo == hi) { /* one legal value: the middle of the interval */
            CHECK_MSG(sp_to_unit(p, lo) == 0.5, "%s: to_unit of the only value", p->name);
            CHECK_MSG(sp_from_unit(p, 0.3) == lo, "%s: from_unit(0.3)", p->name);
        }
    }
}

/* The exact formulas of docs/search.md at a few points. */
static void test_unit_formulas(void) {
    const sp_param lin = P_DOUBLE("x", SP_LINEAR, 2, 10);
    const sp_param lg = P_DOUBLE("x", SP_LOG, 1e-4, 1);
    const sp_param rl = P_DOUBLE("x", SP_REVERSE_LOG, 1, 100);
    const sp_param in = P_INT("x", SP_LINEAR, 1, 4);
    const sp_param il = P_INT("x", SP_LOG, 1, 100);
    const sp_param q = P_DISC("x", SP_LOG, disc_batch);
    const sp_param ct = P_CAT("x", cats3);
    CHECK_NEAR(sp_to_unit(&lin, 4), 0.25, 1e-15, 0);
    CHECK_NEAR(sp_from_unit(&lin, 0.75), 8, 1e-15, 0);
    CHECK_NEAR(sp_to_unit(&lg, 1e-2), 0.5, 1e-15, 0);
    CHECK_NEAR(sp_from_unit(&lg, 0.25), 1e-3, 0, 1e-14);
    /* Reverse log: u = 1 - ln(max + min - v) / ln(max / min). */
    CHECK_NEAR(sp_to_unit(&rl, 91), 0.5, 1e-15, 0);
    CHECK_NEAR(sp_from_unit(&rl, 0.5), 91, 0, 1e-14);
    CHECK_NEAR(sp_to_unit(&rl, 100), 1.0, 0, 0);
    /* INTEGER linear: equal shares of [min - 0.5, max + 0.5]. */
    CHECK_NEAR(sp_to_unit(&in, 1), 0.125, 0, 0);
    CHECK_NEAR(sp_to_unit(&in, 3), 0.625, 0, 0);
    /* INTEGER log: the value itself through the log formula, rounded back. */
    CHECK_NEAR(sp_to_unit(&il, 10), 0.5, 1e-15, 0);
    CHECK_INT_EQ(sp_from_unit(&il, 0.5), 10);
    CHECK_INT_EQ(sp_from_unit(&il, 0.49), 10); /* 100^0.49 = 9.55 */
    /* DISCRETE (any scale) and CATEGORICAL: value i at (i + 0.5) / n. */
    CHECK_NEAR(sp_to_unit(&q, 128), 0.625, 0, 0);
    CHECK_NEAR(sp_to_unit(&ct, 2), 5.0 / 6.0, 1e-15, 0);
    CHECK_INT_EQ(sp_from_unit(&q, 0.5), 128);
    CHECK_INT_EQ(sp_from_unit(&ct, 1.0 / 3.0), 1);
    /* Bucket edges are closed on the left. */
    CHECK_INT_EQ(sp_from_unit(&in, 0.25), 2);
    CHECK_INT_EQ(sp_from_unit(&in, nextafter(0.25, 0)), 1);
    CHECK_INT_EQ(sp_from_unit(&in, 0.75), 4);
}

static void test_reverse_log_resolution(void) {
    enum { N = 10001 };
    static double v[N];
    const sp_param rl = P_DOUBLE("x", SP_REVERSE_LOG, 1e-3, 10);
    const sp_param lg = P_DOUBLE("x", SP_LOG, 1e-3, 10);
    const double mid = (1e-3 + 10) / 2;
    tn_rng r;
    tn_rng_seed(&r, 7);
    for (int i = 0; i < N; i++) v[i] = sp_from_unit(&rl, tn_rng_uniform(&r));
    qsort(v, N, sizeof v[0], cmp_double);
    CHECK_MSG(v[N / 2] > mid, "reverse log median %g <= %g", v[N / 2], mid);
    CHECK_MSG(v[N / 2] > 9.5, "reverse log median %g", v[N / 2]); /* analytically 9.9 */
    for (int i = 0; i < N; i++) v[i] = sp_from_unit(&lg, tn_rng_uniform(&r));
    qsort(v, N, sizeof v[0], cmp_double);
    CHECK_MSG(v[N / 2] < mid, "log median %g >= %g", v[N / 2], mid);
    /* A step of u near max moves v less than the same step near min. */
    double near_max = sp_from_unit(&rl, 0.99) - sp_from_unit(&rl, 0.98);
    double near_min = sp_from_unit(&rl, 0.02) - sp_from_unit(&rl, 0.01);
    CHECK(near_max < near_min / 100);
    /* Log is the mirror: the opposite. */
    CHECK(sp_from_unit(&lg, 0.99) - sp_from_unit(&lg, 0.98) >
          100 * (sp_from_unit(&lg, 0.02) - sp_from_unit(&lg, 0.01)));
}

static void test_from_unit_always_legal(void) {
    tn_rng r;
    tn_rng_seed(&r, 11);
    for (size_t c = 0; c < NCASES; c++) {
        const sp_param *p = &cases[c];
        int bad = 0;
        for (int i = 0; i < 10000; i++) {
            double u = i < 9000 ? tn_rng_uniform(&r) : -0.1 + 1.2 * tn_rng_uniform(&r);
            if (!sp_is_legal(p, sp_from_unit(p, u))) bad++;
        }
        CHECK_MSG(bad == 0, "%s: %d illegal values", p->name, bad);
    }
    /* Ranges wider than DBL_MAX and huge integer ranges stay finite and legal. */
    const sp_param wide[] = {P_DOUBLE("w", SP_LINEAR, -DBL_MAX, DBL_MAX),
                             P_INT("w", SP_LINEAR, -1e308, 1e308),
                             P_INT("w", SP_LINEAR, -9e18, 9e18),
                             P_INT("w", SP_LOG, 1, 1e18)};
    for (size_t c = 0; c < sizeof wide / sizeof wide[0]; c++) {
        for (int i = 0; i <= 100; i++) {
            double u = i / 100.0, v = sp_from_unit(&wide[c], u);
            CHECK_MSG(sp_is_legal(&wide[c], v), "wide %zu: from_unit(%g) = %g", c, u, v);
            double back = sp_to_unit(&wide[c], v);
            CHECK_MSG(back >= 0 && back <= 1, "wide %zu: to_unit(%g) = %g", c, v, back);
        }
    }
}

static void test_equal_shares(void) {
    enum { N = 200000 };
    const sp_param in = P_INT("x", SP_LINEAR, 1, 4);
    const sp_param q = P_DISC("x", SP_LOG, disc_batch);
    const sp_param ct = P_CAT("x", cats3);
    int ci[4] = {0}, cq[4] = {0}, cc[3] = {0};
    tn_rng r;
    tn_rng_seed(&r, 3);
    for (int i = 0; i < N; i++) {
        double u = tn_rng_uniform(&r);
        ci[(int)sp_from_unit(&in, u) - 1]++;
        double d = sp_from_unit(&q, u);
        for (int k = 0; k < 4; k++) cq[k] += d == disc_batch[k];
        cc[(int)sp_from_unit(&ct, u)]++;
    }
    for (int k = 0; k < 4; k++) {
        CHECK_NEAR(ci[k] / (double)N, 0.25, 0.01, 0);
        CHECK_NEAR(cq[k] / (double)N, 0.25, 0.01, 0);
    }
    for (int k = 0; k < 3; k++) CHECK_NEAR(cc[k] / (double)N, 1.0 / 3.0, 0.01, 0);
}

/* A parameter of each type: the values test_legality and test_parse check. */
static const sp_param one_d = P_DOUBLE("d", SP_LINEAR, 0, 1);
static const sp_param one_i = P_INT("i", SP_LINEAR, 1, 4);
static const sp_param one_q = P_DISC("q", SP_SCALE_NONE, disc_batch);
static const sp_param one_c = P_CAT("c", cats3);

static void test_legality(void) {
    static const struct {
        const sp_param *p;
        double v;
        int legal;
    } t[] = {
        {&one_d, 0, 1}, {&one_d, 1, 1}, {&one_d, 0.5, 1}, {&one_d, -1e-300, 0},
        {&one_d, 1.0000001, 0}, {&one_d, NAN, 0}, {&one_d, INFINITY, 0},
        {&one_i, 1, 1}, {&one_i, 4, 1}, {&one_i, 2.5, 0}, {&one_i, 0, 0}, {&one_i, 5, 0},
        {&one_i, NAN, 0},
        {&one_q, 16, 1}, {&one_q, 256, 1}, {&one_q, 65, 0}, {&one_q, 0, 0}, {&one_q, 1000, 0},
        {&one_q, NAN, 0},
        {&one_c, 0, 1}, {&one_c, 2, 1}, {&one_c, 3, 0}, {&one_c, -1, 0}, {&one_c, 0.5, 0},
        {&one_c, INFINITY, 0},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        CHECK_MSG(sp_is_legal(t[k].p, t[k].v) == t[k].legal, "%s: %g", t[k].p->name, t[k].v);
    }
}

/* ---- Flags ---- */

static void test_format(void) {
    static const sp_param d = P_DOUBLE("d", SP_LOG, 1e-6, 1);
    static const sp_param i = P_INT("i", SP_LINEAR, -10, 1000);
    static const sp_param q = P_DISC("q", SP_SCALE_NONE, disc_batch);
    static const sp_param h = P_DISC("h", SP_SCALE_NONE, disc_half);
    static const sp_param c = P_CAT("c", cats3);
    static const struct {
        const sp_param *p;
        double v;
        const char *want;
    } t[] = {
        {&d, 0.1, "0.1"},   {&d, 1e-5, "1e-05"}, {&d, 0.3, "0.3"},   {&d, 1, "1"},
        {&i, 32, "32"},     {&i, 1000, "1000"},  {&i, -0.0, "0"},    {&i, -7, "-7"},
        {&q, 64, "64"},     {&q, 256, "256"},    {&h, 0.5, "0.5"},   {&c, 1, "adam"},
        {&c, 2, "rmsprop"},
    };
    char buf[64];
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        sp_format_value(t[k].p, t[k].v, buf, sizeof buf);
        CHECK_MSG(strcmp(buf, t[k].want) == 0, "%s: %g -> \"%s\", expected \"%s\"",
                  t[k].p->name, t[k].v, buf, t[k].want);
    }
    CHECK(sp_format_value(&c, 0, buf, sizeof buf) == buf);
}

static void test_format_parse_round_trip(void) {
    double vals[128];
    char buf[64];
    tn_rng r;
    tn_rng_seed(&r, 5);
    for (size_t c = 0; c < NCASES; c++) {
        const sp_param *p = &cases[c];
        size_t n = legal_values(p, vals, 100);
        for (int k = 0; k < 20; k++) vals[n++] = sp_from_unit(p, tn_rng_uniform(&r));
        for (size_t i = 0; i < n; i++) {
            sp_format_value(p, vals[i], buf, sizeof buf);
            double back = NAN;
            int rc = sp_parse_value(p, buf, &back);
            CHECK_MSG(rc == 0 && back == vals[i], "%s: %.17g -> \"%s\" -> rc %d, %.17g",
                      p->name, vals[i], buf, rc, back);
        }
    }
}

static void test_parse(void) {
    static const struct {
        const sp_param *p;
        const char *text;
        int rc;
        double want;
    } t[] = {
        {&one_d, "0.25", 0, 0.25}, {&one_d, "1e-1", 0, 0.1}, {&one_d, "1", 0, 1},
        {&one_d, "1.5", TN_EINVAL, 0}, {&one_d, "-0.1", TN_EINVAL, 0},
        {&one_d, "inf", TN_EINVAL, 0}, {&one_d, "nan", TN_EINVAL, 0},
        {&one_d, "", TN_EINVAL, 0}, {&one_d, " 0.5", TN_EINVAL, 0},
        {&one_d, "0.5 ", TN_EINVAL, 0}, {&one_d, "0.5x", TN_EINVAL, 0},
        {&one_d, "0x0.8", TN_EINVAL, 0},
        {&one_i, "3", 0, 3}, {&one_i, "3.0", 0, 3}, {&one_i, "3.5", TN_EINVAL, 0},
        {&one_i, "0", TN_EINVAL, 0}, {&one_i, "5", TN_EINVAL, 0}, {&one_i, "three", TN_EINVAL, 0},
        {&one_q, "64", 0, 64}, {&one_q, "64.0", 0, 64}, {&one_q, "65", TN_EINVAL, 0},
        {&one_c, "adam", 0, 1}, {&one_c, "sgd", 0, 0}, {&one_c, "SGD", TN_EINVAL, 0},
        {&one_c, "1", TN_EINVAL, 0}, {&one_c, "", TN_EINVAL, 0}, {&one_c, "adam ", TN_EINVAL, 0},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        double v = -12345;
        int rc = sp_parse_value(t[k].p, t[k].text, &v);
        CHECK_MSG(rc == t[k].rc, "%s: \"%s\": rc %d", t[k].p->name, t[k].text, rc);
        if (t[k].rc == 0) {
            CHECK_MSG(v == t[k].want, "%s: \"%s\" -> %g", t[k].p->name, t[k].text, v);
        } else {
            CHECK_MSG(v == -12345, "%s: \"%s\" wrote %g on failure", t[k].p->name,
                      t[k].text, v);
        }
    }
}

/* ---- Grid ---- */

/* Builds a space from a list of parameters. */
static void test_grid_size(void) {
    static const sp_param i14 = P_INT("a", SP_LINEAR, 1, 4);
    static const sp_param ilog = P_INT("a", SP_LOG, 1, 1024);
    static const sp_param i16 = P_INT("b", SP_SCALE_NONE, -5, 10);
    static const sp_param c3 = P_CAT("c", cats3);
    static const sp_param q4 = P_DISC("q", SP_SCALE_NONE, disc_batch);
    static const sp_param dbl = P_DOUBLE("d", SP_LINEAR, 0, 1);
    static const sp_param huge = P_INT("h", SP_LINEAR, -1e18, 1e18);
    static const sp_param i64 = P_INT("h", SP_LINEAR, -9223372036854775808.0,
                                      9223372036854774784.0); /* 2^63 - 1024 */
    static const sp_param p53 = P_INT("h", SP_LINEAR, 0, 9007199254740992.0); /* 2^53 */
    static const sp_param vast = P_INT("h", SP_LINEAR, -1e30, 1e30);
    static const struct {
        const sp_param *ps[4];
        size_t n;
        uint64_t want;
    } t[] = {
        {{0}, 0, 1},
        {{&i14}, 1, 4},
        {{&ilog}, 1, 1024},
        {{&i14, &c3}, 2, 12},
        {{&q4, &c3, &i16}, 3, 192},
        {{&dbl}, 1, 0},
        {{&i14, &dbl, &c3}, 3, 0},
        {{&huge}, 1, 2000000000000000001ULL},
        {{&huge, &huge}, 2, UINT64_MAX},
        {{&huge, &huge, &dbl}, 3, 0},
        {{&i64}, 1, UINT64_MAX - 1022},
        {{&i64, &i14}, 2, UINT64_MAX},
        {{&p53}, 1, 9007199254740993ULL},
        {{&vast}, 1, UINT64_MAX},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        sp_param ps[4];
        for (size_t j = 0; j < t[k].n; j++) ps[j] = *t[k].ps[j];
        sp_space s = make_space(ps, t[k].n);
        uint64_t got = sp_grid_size(&s);
        CHECK_MSG(got == t[k].want, "case %zu: %llu, expected %llu", k,
                  (unsigned long long)got, (unsigned long long)t[k].want);
        sp_space_clear(&s);
    }
}

static void test_grid_order(void) {
    const sp_param ps[] = {P_INT("a", SP_LINEAR, 1, 2), P_CAT("b", cats3)};
    static const double want[6][2] = {{1, 0}, {1, 1}, {1, 2}, {2, 0}, {2, 1}, {2, 2}};
    sp_space s = make_space(ps, 2);
    CHECK_INT_EQ(sp_grid_size(&s), 6);
    for (uint64_t k = 0; k < 6; k++) {
        double out[2] = {-1, -1};
        sp_grid_point(&s, k, out);
        CHECK_MSG(out[0] == want[k][0] && out[1] == want[k][1], "point %llu = (%g, %g)",
                  (unsigned long long)k, out[0], out[1]);
    }
    sp_space_clear(&s);
}

static void test_grid_covers_once(void) {
    const sp_param ps[] = {P_DISC("q", SP_LOG, disc_batch), P_CAT("c", cats3),
                           P_INT("i", SP_REVERSE_LOG, 2, 17)};
    sp_space s = make_space(ps, 3);
    uint64_t n = sp_grid_size(&s);
    CHECK_INT_EQ(n, 4 * 3 * 16);
    int seen[4][3][16];
    memset(seen, 0, sizeof seen);
    for (uint64_t k = 0; k < n; k++) {
        double out[3];
        sp_grid_point(&s, k, out);
        int legal = 1;
        for (size_t j = 0; j < 3; j++) legal &= sp_is_legal(&s.params[j], out[j]);
        CHECK_MSG(legal, "point %llu illegal", (unsigned long long)k);
        if (!legal) continue;
        int qi = 0;
        while (disc_batch[qi] != out[0]) qi++;
        seen[qi][(int)out[1]][(int)out[2] - 2]++;
    }
    int once = 0;
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 16; c++) once += seen[a][b][c] == 1;
    CHECK_INT_EQ(once, 4 * 3 * 16);
    sp_space_clear(&s);
}

static void test_grid_huge_integer(void) {
    /* [-2^63, 2^63 - 1024]: the grid's integers are computed exactly. */
    const sp_param p = P_INT("h", SP_LINEAR, -9223372036854775808.0, 9223372036854774784.0);
    sp_space s = make_space(&p, 1);
    double v;
    sp_grid_point(&s, 0, &v);
    CHECK(v == -9223372036854775808.0);
    sp_grid_point(&s, UINT64_MAX - 1023, &v);
    CHECK(v == 9223372036854774784.0);
    sp_grid_point(&s, 9223372036854775808ULL, &v);
    CHECK(v == 0.0 && !signbit(v));
    sp_grid_point(&s, 9223372036854775807ULL, &v);
    CHECK(v == -1.0);
    sp_space_clear(&s);
}

/* ---- Samplers ---- */

/* One parameter of every type and scale. */
static sp_space mixed_space(void) {
    const sp_param ps[] = {
        P_DOUBLE("lr", SP_LOG, 1e-4, 0.3),   P_DOUBLE("beta", SP_REVERSE_LOG, 0.9, 0.999),
        P_DOUBLE("drop", SP_SCALE_NONE, 0, 0.5), P_INT("units", SP_LINEAR, 32, 512),
        P_INT("layers", SP_LOG, 1, 8),       P_DISC("batch", SP_SCALE_NONE, disc_batch),
        P_CAT("opt", cats3),
    };
    return make_space(ps, sizeof ps / sizeof ps[0]);
}

static void test_suggest_grid(void) {
    int ex;
    const sp_param ps[] = {P_INT("a", SP_LINEAR, 1, 2), P_CAT("b", cats3)};
    sp_space s = make_space(ps, 2);
    char note[128] = "junk";
    for (uint64_t k = 0; k < 6; k++) {
        double out[2], want[2];
        sp_grid_point(&s, k, want);
        CHECK_INT_EQ(sp_suggest(SP_ALGO_GRID, &s, NULL, 42, k, out, &ex, note, sizeof note), 0);
        CHECK(!ex);
        CHECK(out[0] == want[0] && out[1] == want[1]);
        CHECK(note[0] == '\0');
    }
    double out[2];
    CHECK_INT_EQ(sp_suggest(SP_ALGO_GRID, &s, NULL, 42, 6, out, &ex, NULL, 0), 0);
    CHECK(ex);
    CHECK_INT_EQ(sp_suggest(SP_ALGO_GRID, &s, NULL, 42, UINT64_MAX, out, &ex, NULL, 0), 0);
    CHECK(ex);
    sp_space_clear(&s);

    sp_space m = mixed_space(); /* has DOUBLEs */
    double mo[7];
    CHECK_INT_EQ(sp_suggest(SP_ALGO_GRID, &m, NULL, 42, 0, mo, &ex, NULL, 0), TN_EINVAL);
    sp_space_clear(&m);
}

static void test_suggest_random(void) {
    int ex;
    sp_space s = mixed_space();
    const size_t n = s.n;
    double a[7], b[7];
    const double vals[7] = {0.01, 0.95, 0.1, 64, 2, 128, 1};
    const sp_trial trials[3] = {{vals, SP_COMPLETE, 1, 0.8},
                                {vals, SP_FAILED, 0, 0},
                                {vals, SP_PENDING, 0, 0}};
    const sp_history empty = {NULL, 0, 1}, full = {trials, 3, 0};
    double sum_drop = 0;
    for (uint64_t seed = 0; seed < 3; seed++) {
        for (uint64_t k = 0; k < 200; k++) {
            CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &s, NULL, seed, k, a, &ex, NULL, 0), 0);
            for (size_t j = 0; j < n; j++) {
                CHECK_MSG(sp_is_legal(&s.params[j], a[j]), "%s = %g", s.params[j].name, a[j]);
            }
            /* Same (seed, index), any history: the same point. */
            CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &s, &empty, seed, k, b, &ex, NULL, 0), 0);
            CHECK(memcmp(a, b, sizeof a) == 0);
            CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &s, &full, seed, k, b, &ex, NULL, 0), 0);
            CHECK(memcmp(a, b, sizeof a) == 0);
            /* Another index or another seed: another point. */
            CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &s, NULL, seed, k + 1, b, &ex, NULL, 0), 0);
            CHECK(a[0] != b[0]);
            CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &s, NULL, seed + 1000, k, b, &ex, NULL, 0), 0);
            CHECK(a[0] != b[0]);
            sum_drop += a[2];
        }
    }
    CHECK_NEAR(sum_drop / 600, 0.25, 0.03, 0); /* uniform on [0, 0.5] */
    /* The order of asking does not matter. */
    CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &s, NULL, 9, 5, a, &ex, NULL, 0), 0);
    CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &s, NULL, 9, 2, b, &ex, NULL, 0), 0);
    CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &s, NULL, 9, 5, b, &ex, NULL, 0), 0);
    CHECK(memcmp(a, b, sizeof a) == 0);
    sp_space_clear(&s);
}

/* ALGORITHM_UNSPECIFIED is Bayesian optimisation (search/bo.c, tested there): with
 * no history its points come from the space-filling design, not random search;
 * legal, reproducible, with no note. */
static void test_suggest_unspecified(void) {
    int ex;
    sp_space s = mixed_space();
    double a[7], b[7];
    char note[256] = "junk";
    sp_history empty = {.trials = NULL, .n = 0, .maximize = 1};
    CHECK_INT_EQ(sp_suggest(SP_ALGO_UNSPECIFIED, &s, &empty, 4, 3, a, &ex, note, sizeof note), 0);
    CHECK(note[0] == '\0');
    for (size_t i = 0; i < s.n; i++) CHECK(sp_is_legal(&s.params[i], a[i]));
    CHECK_INT_EQ(sp_suggest(SP_ALGO_UNSPECIFIED, &s, &empty, 4, 3, b, &ex, NULL, 0), 0);
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(sp_uses_history(SP_ALGO_UNSPECIFIED));
    CHECK(!sp_uses_history(SP_ALGO_RANDOM) && !sp_uses_history(SP_ALGO_GRID));
    sp_space_clear(&s);
}

static void test_suggest_rejects(void) {
    int ex;
    sp_space s = mixed_space();
    double out[7];
    char note[64] = "junk";
    CHECK_INT_EQ(sp_suggest(0, &s, NULL, 1, 0, out, &ex, note, sizeof note), TN_EINVAL);
    CHECK(note[0] == '\0');
    CHECK_INT_EQ(sp_suggest(99, &s, NULL, 1, 0, out, &ex, NULL, 0), TN_EINVAL);
    CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, NULL, NULL, 1, 0, out, &ex, NULL, 0), TN_EINVAL);
    CHECK_INT_EQ(sp_suggest(SP_ALGO_GRID, &s, NULL, 1, 0, out, NULL, NULL, 0), TN_EINVAL);
    sp_space_clear(&s);

    /* Spaces no sampler can draw from. */
    static double unsorted[] = {2, 1};
    const sp_param bad[] = {
        P_DOUBLE("x", SP_LOG, 0, 1),                                /* log needs min > 0 */
        P_DOUBLE("x", SP_LINEAR, 2, 1),                             /* min > max */
        P_DOUBLE("x", SP_LINEAR, 0, INFINITY),                      /* not finite */
        P_INT("x", SP_LINEAR, 1.2, 1.8),                            /* no integer */
        P_INT("x", SP_REVERSE_LOG, -1, 5),                          /* log needs min > 0 */
        P_DISC("x", SP_SCALE_NONE, unsorted),                       /* not increasing */
        {.name = (char *)"x", .type = SP_DISCRETE},                  /* no values */
        {.name = (char *)"x", .type = SP_CATEGORICAL},               /* no categories */
        {.name = (char *)"x", .type = 42, .max = 1},                 /* unknown type */
        {.name = (char *)"x", .type = SP_DOUBLE, .scale = 9, .max = 1}, /* unknown scale */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        sp_space b = make_space(&bad[k], 1);
        CHECK_MSG(sp_suggest(SP_ALGO_RANDOM, &b, NULL, 1, 0, out, &ex, NULL, 0) == TN_EINVAL,
                  "bad space %zu accepted", k);
        sp_space_clear(&b);
    }

    /* An empty space has one (empty) point. */
    sp_space e = {0};
    CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &e, NULL, 1, 0, NULL, &ex, NULL, 0), 0);
    CHECK_INT_EQ(sp_suggest(SP_ALGO_GRID, &e, NULL, 1, 0, NULL, &ex, NULL, 0), 0);
    CHECK(!ex);
    CHECK_INT_EQ(sp_suggest(SP_ALGO_GRID, &e, NULL, 1, 1, NULL, &ex, NULL, 0), 0);
    CHECK(ex);
}

/* ---- Conditional parameters ---- */

static char *cats_ny[] = {"no", "yes"};
static double disc_mom[] = {0.5, 0.9};
static double when_sgd_rms[] = {0, 2}, when_09[] = {0.9}, when_adam[] = {1};

/* opt {sgd, adam, rmsprop}; mom {0.5, 0.9} under sgd and rmsprop; nest {no, yes}
 * under mom 0.9; beta 1..3 under adam; lr 1..2 (or a DOUBLE). */
static sp_space tree_space(int lr_double) {
    const sp_param ps[] = {
        P_CAT("opt", cats3),
        child((sp_param)P_DISC("mom", SP_SCALE_NONE, disc_mom), 0, when_sgd_rms, 2),
        child((sp_param)P_CAT("nest", cats_ny), 1, when_09, 1),
        child((sp_param)P_INT("beta", SP_LINEAR, 1, 3), 0, when_adam, 1),
        lr_double ? (sp_param)P_DOUBLE("lr", SP_LOG, 1e-3, 1)
                  : (sp_param)P_INT("lr", SP_LINEAR, 1, 2),
    };
    return make_space(ps, 5);
}

static int same_point(const double *a, const double *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) != isnan(b[i]) || (!isnan(a[i]) && a[i] != b[i])) return 0;
    }
    return 1;
}

static void test_conditions(void) {
    sp_space s = tree_space(0);
    const sp_param *mom = &s.params[1], *nest = &s.params[2];
    CHECK(sp_condition_holds(&s.params[0], NAN)); /* not conditional */
    CHECK(sp_condition_holds(mom, 0) && sp_condition_holds(mom, 2));
    CHECK(!sp_condition_holds(mom, 1) && !sp_condition_holds(mom, NAN));
    CHECK(sp_condition_holds(nest, 0.9) && !sp_condition_holds(nest, 0.5));
    CHECK(sp_space_is_conditional(&s) && sp_conditions_ok(&s));
    static const struct {
        double v[5];
        double masked[5];
        int legal; /* as given */
    } t[] = {
        {{0, 0.9, 1, 2, 1}, {0, 0.9, 1, NAN, 1}, 0},     /* beta set under sgd */
        {{0, 0.9, 1, NAN, 1}, {0, 0.9, 1, NAN, 1}, 1},   /* sgd, momentum 0.9, nesterov */
        {{2, 0.5, 1, NAN, 2}, {2, 0.5, NAN, NAN, 2}, 0}, /* nest set under momentum 0.5 */
        {{2, 0.5, NAN, NAN, 2}, {2, 0.5, NAN, NAN, 2}, 1},
        {{1, 0.9, 0, 3, 1}, {1, NAN, NAN, 3, 1}, 0},     /* a grandchild under adam */
        {{1, NAN, NAN, 3, 1}, {1, NAN, NAN, 3, 1}, 1},
        {{1, NAN, NAN, NAN, 1}, {1, NAN, NAN, NAN, 1}, 0}, /* beta missing */
        {{1, NAN, NAN, 4, 1}, {1, NAN, NAN, 4, 1}, 0},   /* beta out of range */
        {{0, 0.9, NAN, NAN, 1}, {0, 0.9, NAN, NAN, 1}, 0}, /* nest missing */
        {{NAN, NAN, NAN, NAN, 1}, {NAN, NAN, NAN, NAN, 1}, 0}, /* a root missing */
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
        double v[5];
        memcpy(v, t[k].v, sizeof v);
        CHECK_MSG(sp_point_is_legal(&s, v) == t[k].legal, "case %zu", k);
        sp_mask_inactive(&s, v);
        CHECK_MSG(same_point(v, t[k].masked, 5), "case %zu masked", k);
    }
    sp_space_clear(&s);
    sp_space u = mixed_space();
    CHECK(!sp_space_is_conditional(&u) && sp_conditions_ok(&u));
    sp_space_clear(&u);
}

/* The grid of the tree holds every active combination once: the distinct masked
 * points of the full product, 18 of them. */
static void test_conditional_grid(void) {
    int ex;
    sp_space s = tree_space(0);
    double brute[72][5];
    size_t nb = 0;
    for (int o = 0; o < 3; o++)
        for (int m = 0; m < 2; m++)
            for (int ne = 0; ne < 2; ne++)
                for (int b = 1; b <= 3; b++)
                    for (int l = 1; l <= 2; l++) {
                        double v[5] = {o, disc_mom[m], ne, b, l};
                        sp_mask_inactive(&s, v);
                        size_t k = 0;
                        while (k < nb && !same_point(brute[k], v, 5)) k++;
                        if (k == nb) memcpy(brute[nb++], v, sizeof v);
                    }
    CHECK_INT_EQ(nb, 18);
    CHECK_INT_EQ(sp_grid_size(&s), nb);
    int hit[72] = {0};
    for (uint64_t k = 0; k < sp_grid_size(&s) && k < 72; k++) {
        double v[5];
        sp_grid_point(&s, k, v);
        CHECK_MSG(sp_point_is_legal(&s, v), "grid point %llu illegal", (unsigned long long)k);
        size_t j = 0;
        while (j < nb && !same_point(brute[j], v, 5)) j++;
        CHECK_MSG(j < nb, "grid point %llu not an active combination", (unsigned long long)k);
        if (j < nb) hit[j]++;
    }
    int once = 0;
    for (size_t j = 0; j < nb; j++) once += hit[j] == 1;
    CHECK_INT_EQ(once, 18);
    /* with a DOUBLE anywhere there is no grid */
    sp_space d = tree_space(1);
    CHECK_INT_EQ(sp_grid_size(&d), 0);
    double out[5];
    CHECK_INT_EQ(sp_suggest(SP_ALGO_GRID, &d, NULL, 1, 0, out, &ex, NULL, 0), TN_EINVAL);
    sp_space_clear(&d);
    sp_space_clear(&s);

    /* The order: the last root fastest; a parameter's active children faster than it.
     * a {1, 2}, b {x, y} under a = 2, and c {1, 2}. */
    static double when_2[] = {2};
    static char *xy[] = {"x", "y"};
    const sp_param o[] = {P_INT("a", SP_LINEAR, 1, 2),
                          child((sp_param)P_CAT("b", xy), 0, when_2, 1),
                          P_INT("c", SP_LINEAR, 1, 2)};
    sp_space g = make_space(o, 3);
    static const double want[6][3] = {{1, NAN, 1}, {1, NAN, 2}, {2, 0, 1},
                                      {2, 0, 2},   {2, 1, 1},   {2, 1, 2}};
    CHECK_INT_EQ(sp_grid_size(&g), 6);
    for (uint64_t k = 0; k < 6; k++) {
        double v[3];
        sp_grid_point(&g, k, v);
        CHECK_MSG(same_point(v, want[k], 3), "point %llu = (%g, %g, %g)", (unsigned long long)k,
                  v[0], v[1], v[2]);
    }
    for (uint64_t k = 0; k < 6; k++) {
        double a[3], b[3];
        sp_grid_point(&g, k, a);
        CHECK_INT_EQ(sp_suggest(SP_ALGO_GRID, &g, NULL, 3, k, b, &ex, NULL, 0), 0);
        CHECK(same_point(a, b, 3));
    }
    double v3[3];
    CHECK_INT_EQ(sp_suggest(SP_ALGO_GRID, &g, NULL, 3, 6, v3, &ex, NULL, 0), 0);
    CHECK(ex);
    sp_space_clear(&g);

    /* Two children active at one value multiply; a child under every value. */
    static double when_all[] = {0, 1, 2};
    const sp_param m[] = {P_CAT("opt", cats3),
                          child((sp_param)P_INT("x", SP_LINEAR, 1, 4), 0, when_adam, 1),
                          child((sp_param)P_CAT("y", cats_ny), 0, when_all, 3)};
    sp_space ms = make_space(m, 3);
    CHECK_INT_EQ(sp_grid_size(&ms), 2 + 4 * 2 + 2); /* sgd: y; adam: x * y; rmsprop: y */
    sp_space_clear(&ms);
}

/* A huge INTEGER parent with a child under two of its values: counted and indexed
 * without walking the range. */
static void test_conditional_grid_huge(void) {
    const double big = 1099511627776.0, half = 549755813888.0; /* 2^40, 2^39 */
    static double when_big[2];
    when_big[0] = half;
    when_big[1] = 5;
    const sp_param ps[] = {P_INT("p", SP_LINEAR, 0, big),
                           child((sp_param)P_CAT("c", cats3), 0, when_big, 2)};
    sp_space s = make_space(ps, 2);
    CHECK_INT_EQ(sp_grid_size(&s), (uint64_t)big + 1 - 2 + 3 + 3);
    static const struct {
        uint64_t k;
        double p, c;
    } t[] = {{0, 0, NAN},         {4, 4, NAN},           {5, 5, 0},
             {7, 5, 2},           {8, 6, NAN},           {549755813890ULL, half, 0},
             {549755813892ULL, half, 2}, {549755813893ULL, half + 1, NAN},
             {1099511627780ULL, big, NAN}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        double v[2], want[2] = {t[i].p, t[i].c};
        sp_grid_point(&s, t[i].k, v);
        CHECK_MSG(same_point(v, want, 2), "point %llu = (%.17g, %g)", (unsigned long long)t[i].k,
                  v[0], v[1]);
    }
    sp_space_clear(&s);
}

/* Random search on the tree: legal points, each parameter active as often as its
 * condition says, and the same draws as the space without conditions (a draw per
 * parameter, active or not, then masked). */
static void test_conditional_random(void) {
    int ex;
    sp_space s = tree_space(1), flat = tree_space(1);
    for (size_t i = 0; i < flat.n; i++) flat.params[i].conditional = 0;
    int mom = 0, nest = 0, beta = 0;
    const int N = 3000;
    for (int k = 0; k < N; k++) {
        double a[5], b[5];
        CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &s, NULL, 7, (uint64_t)k, a, &ex, NULL, 0), 0);
        CHECK_INT_EQ(sp_suggest(SP_ALGO_RANDOM, &flat, NULL, 7, (uint64_t)k, b, &ex, NULL, 0), 0);
        CHECK(sp_point_is_legal(&s, a));
        for (size_t i = 0; i < 5; i++) CHECK(isnan(a[i]) || a[i] == b[i]);
        sp_mask_inactive(&s, b);
        CHECK(same_point(a, b, 5));
        mom += !isnan(a[1]);
        nest += !isnan(a[2]);
        beta += !isnan(a[3]);
    }
    CHECK_NEAR((double)mom / N, 2.0 / 3, 0.03, 0);
    CHECK_NEAR((double)nest / N, 1.0 / 3, 0.03, 0);
    CHECK_NEAR((double)beta / N, 1.0 / 3, 0.03, 0);
    /* Bayesian optimisation with no history: legal points of the tree too */
    for (uint64_t k = 0; k < 8; k++) {
        double a[5];
        CHECK_INT_EQ(sp_suggest(SP_ALGO_UNSPECIFIED, &s, NULL, 7, k, a, &ex, NULL, 0), 0);
        CHECK(sp_point_is_legal(&s, a));
    }
    sp_space_clear(&flat);
    sp_space_clear(&s);
}

/* Conditions no sampler can follow are refused by every algorithm. */
static void test_conditional_rejects(void) {
    int ex;
    static double when_none[] = {0}, when_bad_cat[] = {3}, when_frac[] = {1.5};
    const sp_param root_cat = P_CAT("opt", cats3), root_dbl = P_DOUBLE("x", SP_LINEAR, 0, 1);
    const sp_param root_int = P_INT("n", SP_LINEAR, 1, 4), leaf = P_INT("k", SP_LINEAR, 1, 2);
    struct {
        sp_param parent, kid;
        const char *why;
    } bad[] = {
        {root_cat, child(leaf, 1, when_adam, 1), "its own parent"},
        {root_cat, child(leaf, 5, when_adam, 1), "a parent past it"},
        {root_dbl, child(leaf, 0, when_none, 1), "a DOUBLE parent"},
        {root_cat, child(leaf, 0, when_none, 0), "no values"},
        {root_cat, child(leaf, 0, NULL, 1), "no array"},
        {root_cat, child(leaf, 0, when_bad_cat, 1), "a category the parent lacks"},
        {root_int, child(leaf, 0, when_frac, 1), "a value the INTEGER cannot take"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        sp_param ps[2] = {bad[k].parent, bad[k].kid};
        sp_space s = make_space(ps, 2);
        double out[2];
        CHECK_MSG(!sp_conditions_ok(&s), "%s: accepted", bad[k].why);
        for (int algo = SP_ALGO_UNSPECIFIED; algo <= SP_ALGO_RANDOM; algo++)
            CHECK_MSG(sp_suggest(algo, &s, NULL, 1, 0, out, &ex, NULL, 0) == TN_EINVAL,
                      "%s: algorithm %d accepted it", bad[k].why, algo);
        sp_space_clear(&s);
    }
    /* sp_space_add copies when[] */
    double w[] = {1};
    sp_param c = child(leaf, 0, w, 1);
    sp_space s = {0};
    sp_space_add(&s, &root_cat);
    sp_space_add(&s, &c);
    w[0] = 2;
    CHECK(s.params[1].when != w && s.params[1].when[0] == 1 && s.params[1].nwhen == 1);
    CHECK(s.params[1].conditional && s.params[1].parent == 0);
    sp_space_clear(&s);
}

/* ---- The space ---- */

static void test_space_add_find_clear(void) {
    double vals[] = {1, 2, 3};
    char n0[] = "batch", c0[] = "sgd", c1[] = "adam";
    char *cs[] = {c0, c1};
    sp_param p = {.name = n0, .type = SP_DISCRETE, .values = vals, .nvalues = 3};
    sp_param q = {.name = (char *)"opt", .type = SP_CATEGORICAL, .categories = cs,
                  .ncategories = 2};
    sp_param r = P_DOUBLE("lr", SP_LOG, 1e-3, 1);
    sp_space s = {0};
    sp_space_add(&s, &p);
    sp_space_add(&s, &q);
    sp_space_add(&s, &r);
    /* Deep copies: changing the originals changes nothing in the space. */
    vals[0] = 99;
    n0[0] = 'X';
    c1[0] = 'X';
    CHECK_INT_EQ(s.n, 3);
    CHECK(s.params[0].values != vals && s.params[0].values[0] == 1);
    CHECK(strcmp(s.params[0].name, "batch") == 0 && s.params[0].name != n0);
    CHECK(strcmp(s.params[1].categories[1], "adam") == 0 && s.params[1].categories != cs);
    CHECK(s.params[2].min == 1e-3 && s.params[2].scale == SP_LOG);
    CHECK_INT_EQ(sp_space_find(&s, "batch"), 0);
    CHECK_INT_EQ(sp_space_find(&s, "opt"), 1);
    CHECK_INT_EQ(sp_space_find(&s, "lr"), 2);
    CHECK_INT_EQ(sp_space_find(&s, "Xatch"), -1);
    CHECK_INT_EQ(sp_space_find(&s, ""), -1);
    sp_space_clear(&s);
    CHECK(s.params == NULL && s.n == 0);
    sp_space_clear(&s); /* a zeroed space */
    sp_space_clear(NULL);
    CHECK_INT_EQ(sp_space_find(&s, "lr"), -1);
}

int main(void) {
    RUN(test_unit_round_trip);
    RUN(test_unit_monotonic);
    RUN(test_unit_endpoints_and_clamping);
    RUN(test_unit_formulas);
    RUN(test_reverse_log_resolution);
    RUN(test_from_unit_always_legal);
    RUN(test_equal_shares);
    RUN(test_legality);
    RUN(test_format);
    RUN(test_format_parse_round_trip);
    RUN(test_parse);
    RUN(test_grid_size);
    RUN(test_grid_order);
    RUN(test_grid_covers_once);
    RUN(test_grid_huge_integer);
    RUN(test_suggest_grid);
    RUN(test_suggest_random);
    RUN(test_suggest_unspecified);
    RUN(test_suggest_rejects);
    RUN(test_space_add_find_clear);
    RUN(test_conditions);
    RUN(test_conditional_grid);
    RUN(test_conditional_grid_huge);
    RUN(test_conditional_random);
    RUN(test_conditional_rejects);
    return check_summary();
}
