/*
 * test_pareto.c — tests for search/pareto.c: dominance (ties, equal points, mixed
 * goals), the front (duplicates, ties in one objective, one objective, none, every
 * point), and the two-objective hypervolume against areas worked out by hand.
 */
#include "search/pareto.h"

#include "tests/check.h"

#include <math.h>
#include <string.h>

static const int MAX2[] = {1, 1}, MIN2[] = {0, 0}, MAXMIN[] = {1, 0};

static void test_dominates(void) {
    double a[] = {2, 2}, b[] = {1, 2}, c[] = {2, 2}, d[] = {3, 1};
    CHECK(pa_dominates(a, b, 2, MAX2));   /* better in one, tied in the other */
    CHECK(!pa_dominates(b, a, 2, MAX2));
    CHECK(!pa_dominates(a, c, 2, MAX2));  /* equal: neither way */
    CHECK(!pa_dominates(a, d, 2, MAX2) && !pa_dominates(d, a, 2, MAX2)); /* a trade-off */
    CHECK(pa_dominates(b, a, 2, MIN2));   /* the goals turn it round */
    double e[] = {2, 1};                  /* maximize the first, minimize the second */
    CHECK(pa_dominates(e, a, 2, MAXMIN) && !pa_dominates(a, e, 2, MAXMIN));
}

/* A table of fronts: points, goals, the front wanted. */
typedef struct front_case {
    const char *what;
    size_t n, m;
    double pts[16];
    const int *maximize;
    unsigned char want[8];
} front_case;

static const int MAX1[] = {1}, MIN1[] = {0};

static const front_case FRONTS[] = {
    {"a trade-off curve and a dominated point", 4, 2, {1, 4, 2, 3, 4, 1, 1, 1}, MAX2,
     {1, 1, 1, 0}},
    {"duplicates of a front point are all on it", 3, 2, {3, 3, 3, 3, 1, 1}, MAX2, {1, 1, 0}},
    {"duplicates of a dominated point are all off it", 3, 2, {1, 1, 3, 3, 1, 1}, MAX2,
     {0, 1, 0}},
    {"a tie in one objective: the better in the other wins", 2, 2, {5, 1, 5, 2}, MAX2, {0, 1}},
    {"the same tie minimized", 2, 2, {5, 1, 5, 2}, MIN2, {1, 0}},
    {"mixed goals", 3, 2, {1, 5, 2, 5, 2, 6}, MAXMIN, {0, 1, 0}},
    {"one objective: every best value, ties included", 4, 1, {3, 7, 7, 1}, MAX1, {0, 1, 1, 0}},
    {"one objective minimized", 4, 1, {3, 7, 7, 1}, MIN1, {0, 0, 0, 1}},
    {"one point", 1, 3, {1, 2, 3}, (const int[]){1, 1, 1}, {1}},
    {"three objectives", 3, 3, {1, 1, 1, 2, 2, 2, 3, 0, 0}, (const int[]){1, 1, 1}, {0, 1, 1}},
};

static void test_fronts(void) {
    for (size_t c = 0; c < sizeof FRONTS / sizeof FRONTS[0]; c++) {
        const front_case *fc = &FRONTS[c];
        unsigned char got[8];
        memset(got, 7, sizeof got);
        size_t k = pa_front(fc->pts, fc->n, fc->m, fc->maximize, got);
        size_t want_k = 0;
        for (size_t i = 0; i < fc->n; i++) want_k += fc->want[i];
        CHECK_MSG(k == want_k, "%s: %zu on the front, want %zu", fc->what, k, want_k);
        for (size_t i = 0; i < fc->n; i++)
            CHECK_MSG(got[i] == fc->want[i], "%s: point %zu is %s the front", fc->what, i,
                      got[i] ? "on" : "off");
    }
    unsigned char none[1] = {9};
    CHECK(pa_front(NULL, 0, 2, MAX2, none) == 0 && none[0] == 9); /* nothing, untouched */
}

static void test_hypervolume(void) {
    const double ref[2] = {0, 0};
    /* maximized: (1, 4), (2, 3), (4, 1) from (0, 0): 1*4 + 1*3 + 2*1 = 9 */
    double pts[] = {2, 3, 4, 1, 1, 4, 1, 1};
    CHECK(fabs(pa_hypervolume2(pts, 4, MAX2, ref) - 9) < 1e-12);
    /* a duplicate and a dominated point change nothing */
    double dup[] = {2, 3, 2, 3, 4, 1, 1, 4, 1, 1, 0.5, 0.5};
    CHECK(fabs(pa_hypervolume2(dup, 6, MAX2, ref) - 9) < 1e-12);
    /* minimized to (1, 1): (0, 0.5) and (0.5, 0) give 0.5 + 0.5 - 0.25 = 0.75 */
    const double one[2] = {1, 1};
    double mins[] = {0, 0.5, 0.5, 0};
    CHECK(fabs(pa_hypervolume2(mins, 2, MIN2, one) - 0.75) < 1e-12);
    /* points not better than the reference in both add nothing */
    double out[] = {1, 0.2, 0.3, 1, 2, 2};
    CHECK(pa_hypervolume2(out, 3, MIN2, one) == 0);
    CHECK(pa_hypervolume2(NULL, 0, MIN2, one) == 0);
}

int main(void) {
    RUN(test_dominates);
    RUN(test_fronts);
    RUN(test_hypervolume);
    return check_summary();
}
