/*
 * bench_mobo.c — several objectives: our sampler (random Chebyshev scalarisations over
 * the Bayesian sampler, search/mobo.h) and random search on standard two-objective
 * problems. Driven by bench/mobo.py, which runs Optuna's NSGA-II and TPE on the same
 * problems (defined again there, and checked against the values printed here),
 * computes every study's hypervolume and writes docs/benchmarks/multi-objective.md.
 *
 * A study, per (problem, algorithm, seed): for trial i = 0 .. trials-1, a suggestion
 * from the history of trials 0 .. i-1, all COMPLETE with both objectives (minimised);
 * the trial is then evaluated and completes. Problems (D variables in [0, 1]):
 *   zdt1    f1 = x0, g = 1 + 9 mean(x1..), f2 = g (1 - sqrt(f1 / g))     (convex front)
 *   zdt2    as zdt1 with f2 = g (1 - (f1 / g)^2)                          (concave front)
 *   dtlz2   two objectives: g = sum_{i >= 1} (x_i - 0.5)^2,
 *           f1 = (1 + g) cos(x0 pi / 2), f2 = (1 + g) sin(x0 pi / 2)      (a quarter circle)
 *
 *   bench_mobo PROBLEM ALGO SEED TRIALS DIMS     ALGO: mobo or random
 *
 * Prints one JSON line: {"problem", "algo", "seed", "x": [[...], ...] (%.17g),
 * "f": [[f1, f2], ...], "suggest_s" (mean seconds per suggestion)}.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/mobo.h"
#include "search/sampler.h"
#include "search/space.h"

#define MAXD 32

static void evaluate(const char *problem, const double *x, int d, double *f) {
    if (!strcmp(problem, "dtlz2")) {
        double g = 0;
        for (int i = 1; i < d; i++) g += (x[i] - 0.5) * (x[i] - 0.5);
        f[0] = (1 + g) * cos(x[0] * M_PI / 2);
        f[1] = (1 + g) * sin(x[0] * M_PI / 2);
        return;
    }
    double s = 0;
    for (int i = 1; i < d; i++) s += x[i];
    double g = 1 + 9 * s / (d - 1);
    f[0] = x[0];
    f[1] = !strcmp(problem, "zdt1") ? g * (1 - sqrt(x[0] / g)) : g * (1 - (x[0] / g) * (x[0] / g));
}

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: bench_mobo zdt1|zdt2|dtlz2 mobo|random SEED TRIALS DIMS\n");
        return 2;
    }
    const char *problem = argv[1], *algo = argv[2];
    unsigned long long seed = strtoull(argv[3], NULL, 10);
    int trials = atoi(argv[4]), d = atoi(argv[5]);
    if ((strcmp(problem, "zdt1") && strcmp(problem, "zdt2") && strcmp(problem, "dtlz2")) ||
        (strcmp(algo, "mobo") && strcmp(algo, "random")) || trials < 1 || d < 2 || d > MAXD) {
        fprintf(stderr, "bench_mobo: bad arguments\n");
        return 2;
    }
    sp_space s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < d; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        sp_param p = {.name = name, .type = SP_DOUBLE, .scale = SP_LINEAR, .min = 0, .max = 1};
        sp_space_add(&s, &p);
    }
    double *x = calloc((size_t)trials * d, sizeof *x), *f = calloc((size_t)trials * 2, sizeof *f);
    mo_trial *t = calloc((size_t)trials, sizeof *t);
    if (!x || !f || !t) return 1;
    const int min2[] = {0, 0};
    double spent = 0;
    for (int i = 0; i < trials; i++) {
        mo_history h = {t, (size_t)i, 2, min2};
        double t0 = seconds();
        int exhausted; /* random search: never */
        int rc = !strcmp(algo, "mobo")
                     ? mo_suggest(&s, &h, seed, (uint64_t)i, NULL, x + i * d, NULL, 0)
                     : sp_suggest(SP_ALGO_RANDOM, &s, NULL, seed, (uint64_t)i, x + i * d,
                                  &exhausted, NULL, 0);
        spent += seconds() - t0;
        if (rc != 0) {
            fprintf(stderr, "bench_mobo: the sampler failed (%d)\n", rc);
            return 1;
        }
        evaluate(problem, x + i * d, d, f + 2 * i);
        t[i] = (mo_trial){x + i * d, SP_COMPLETE, f + 2 * i};
    }
    printf("{\"problem\": \"%s\", \"algo\": \"%s\", \"seed\": %llu, \"x\": [", problem, algo, seed);
    for (int i = 0; i < trials; i++) {
        printf("%s[", i ? ", " : "");
        for (int k = 0; k < d; k++) printf("%s%.17g", k ? ", " : "", x[i * d + k]);
        printf("]");
    }
    printf("], \"f\": [");
    for (int i = 0; i < trials; i++)
        printf("%s[%.17g, %.17g]", i ? ", " : "", f[2 * i], f[2 * i + 1]);
    printf("], \"suggest_s\": %.6g}\n", spent / trials);
    free(x);
    free(f);
    free(t);
    sp_space_clear(&s);
    return 0;
}
