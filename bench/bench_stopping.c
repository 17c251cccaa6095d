/*
 * bench_stopping.c — the early-stopping rules of search/stopping.h on synthetic
 * learning curves: how many steps each rule saves and what it costs in the best value
 * found. Driven by bench/stopping.py, which runs Optuna's pruners on the same curves
 * (this program prints them) and writes docs/benchmarks/early-stopping-synthetic.md.
 *
 * The task, per seed (tn_rng seeded with the seed; draws in exactly this order):
 *   for trial i = 1 .. P (P = max(trials, budget): enough trials for any run)
 *     v   = 0.5 + 0.2 * (U + U)     hidden final value: triangular on [0.5, 0.9]
 *     a   = 0.05 + 0.4 * U          how far below v the curve starts: [0.05, 0.45]
 *     tau = 1 + 7 * U               how slowly it gets there, in steps: [1, 8]
 *     for step s = 1 .. 27:  y(s) = v - a * exp(-s / tau) + 0.01 * N
 *   (U: tn_rng_uniform, N: tn_rng_normal). Maximize. Curves cross: a slow learner
 *   with a high v starts below fast learners with a lower v.
 * A study runs its trials one at a time, in order (sequential: every earlier trial
 * has completed or stopped when a trial runs). A trial reports steps 1, 2, ...; after
 * each step below 27 the rule decides whether it stops; a trial that reports step 27
 * completes (stopping it then would save nothing). The study goes on until it has
 * run `trials` trials and spent `budget` steps.
 * Measures, on a prefix of that sequence of trials (the same function in stopping.py):
 *   trials  the first `trials` trials;
 *   budget  trials in order until `budget` steps are spent (the trial running when
 *           the budget runs out is cut off and does not complete).
 *   steps = steps reported; best = the hidden v of the completed trial with the best
 *   reported value at step 27 (null if none completed).
 * Prints one JSON line per (policy, seed) and, with --curves, one per seed with the
 * curves (%.17g, so Python reads the same doubles).
 *
 *   bench_stopping [--seeds=20] [--first_seed=1] [--trials=50] [--budget=405] [--curves]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/flags.h"
#include "common/rng.h"
#include "common/status.h"
#include "search/space.h"
#include "search/stopping.h"

#define NSTEPS 27 /* steps per trial; hyperband's max_step */

typedef struct curve {
    double v, a, tau;  /* hidden final value, start gap, time constant (steps) */
    double y[NSTEPS];  /* y[s - 1]: the value reported at step s */
} curve;

typedef struct measure {
    int64_t steps;     /* steps reported */
    int started;       /* trials that reported at least one step */
    int completed;     /* trials that reported step NSTEPS */
    int best_trial;    /* number (1-based) of the completed trial with the best y(NSTEPS);
                          0 if none completed */
    double best_value; /* its hidden v */
} measure;

/* The study's curves for one seed: c[0 .. n-1], in trial order. */
static void make_curves(uint64_t seed, curve *c, int n) {
    tn_rng r;
    tn_rng_seed(&r, seed);
    for (int i = 0; i < n; i++) {
        c[i].v = 0.5 + 0.2 * (tn_rng_uniform(&r) + tn_rng_uniform(&r));
        c[i].a = 0.05 + 0.4 * tn_rng_uniform(&r);
        c[i].tau = 1 + 7 * tn_rng_uniform(&r);
        for (int s = 1; s <= NSTEPS; s++)
            c[i].y[s - 1] = c[i].v - c[i].a * exp(-s / c[i].tau) + 0.01 * tn_rng_normal(&r);
    }
}

/* Runs trials in order under cfg until at least min_trials have run and budget steps
 * are spent (or all n curves are used). steps[i] gets the steps trial i+1 reported.
 * Returns the number of trials run. */
static int simulate(const es_config *cfg, const curve *c, int n, int min_trials,
                    int64_t budget, int *steps) {
    es_point *pts = tn_xcalloc((size_t)n * NSTEPS, sizeof *pts);
    es_trial *tr = tn_xcalloc((size_t)n, sizeof *tr);
    int64_t spent = 0;
    int i;
    for (i = 0; i < n && (i < min_trials || spent < budget); i++) {
        tr[i] = (es_trial){.number = i + 1, .state = SP_PENDING, .curve = pts + (size_t)i * NSTEPS};
        for (int s = 1; s <= NSTEPS; s++) {
            pts[(size_t)i * NSTEPS + s - 1] = (es_point){s, c[i].y[s - 1]};
            tr[i].n = (size_t)s;
            spent++;
            if (s == NSTEPS) {
                tr[i].state = SP_COMPLETE;
                break;
            }
            es_decision d;
            es_decide(cfg, tr, (size_t)i + 1, (size_t)i, &d);
            if (d.stop) {
                tr[i].state = SP_STOPPED;
                break;
            }
        }
        steps[i] = (int)tr[i].n;
    }
    free(tr);
    free(pts);
    return i;
}

/* The measure on the prefix of a run (ran trials, steps[]) of at most max_trials
 * trials and budget steps. */
static measure measure_prefix(const curve *c, const int *steps, int ran, int max_trials,
                              int64_t budget) {
    measure m = {0};
    double best_y = -INFINITY;
    for (int i = 0; i < ran && i < max_trials && m.steps < budget; i++) {
        m.started++;
        if (m.steps + steps[i] > budget) { /* cut off by the budget */
            m.steps = budget;
            break;
        }
        m.steps += steps[i];
        if (steps[i] < NSTEPS) continue;
        m.completed++;
        if (c[i].y[NSTEPS - 1] > best_y) {
            best_y = c[i].y[NSTEPS - 1];
            m.best_trial = i + 1;
            m.best_value = c[i].v;
        }
    }
    return m;
}

static void print_measure(const char *name, const measure *m) {
    printf("\"%s\": {\"steps\": %lld, \"started\": %d, \"completed\": %d, ", name,
           (long long)m->steps, m->started, m->completed);
    if (m->best_trial)
        printf("\"best_trial\": %d, \"best_value\": %.17g}", m->best_trial, m->best_value);
    else
        printf("\"best_trial\": null, \"best_value\": null}");
}

static void print_curves(uint64_t seed, const curve *c, int n) {
    printf("{\"kind\": \"curves\", \"seed\": %llu, \"steps\": %d, \"trials\": [",
           (unsigned long long)seed, NSTEPS);
    for (int i = 0; i < n; i++) {
        printf("%s{\"v\": %.17g, \"a\": %.17g, \"tau\": %.17g, \"y\": [", i ? ", " : "", c[i].v,
               c[i].a, c[i].tau);
        for (int s = 0; s < NSTEPS; s++) printf("%s%.17g", s ? ", " : "", c[i].y[s]);
        printf("]}");
    }
    printf("]}\n");
}

int main(int argc, char **argv) {
    int seeds = 20, first_seed = 1, trials = 50, budget = 405, curves = 0;
    const tn_flag flags[] = {
        {"seeds", TN_FLAG_INT, &seeds, "N", "seeds (studies per policy)"},
        {"first_seed", TN_FLAG_INT, &first_seed, "N", "first seed"},
        {"trials", TN_FLAG_INT, &trials, "N", "trials per study (equal-trials measure)"},
        {"budget", TN_FLAG_INT, &budget, "N", "steps per study (equal-budget measure)"},
        {"curves", TN_FLAG_BOOL, &curves, NULL, "also print each seed's curves"},
    };
    const size_t nflags = sizeof flags / sizeof flags[0];
    char err[512];
    int rc = tn_flags_parse(flags, nflags, argc, argv, NULL, 0, NULL, err, sizeof err);
    if (rc == 1) {
        tn_flags_help(stdout, flags, nflags);
        return 0;
    }
    if (rc == 0 && (seeds < 1 || trials < 1 || budget < 1)) {
        snprintf(err, sizeof err, "--seeds, --trials and --budget must be >= 1");
        rc = TN_EINVAL;
    }
    if (rc) {
        fprintf(stderr, "bench_stopping: error: %s\n", err);
        return 2;
    }

    /* The rules with the spec's defaults (minTrials 5, minStep 1), eta 3 and a grace
     * period of 1 step; max_step 27 (hyperband needs it; asha would put no rung there
     * anyway, as no decision is asked for at step 27). */
    const es_config base = {.maximize = 1, .min_trials = 5, .min_step = 1, .grace_period = 1,
                            .reduction_factor = 3, .max_step = NSTEPS};
    es_config cfgs[] = {base, base, base, base};
    cfgs[0].policy = ES_NONE;
    cfgs[1].policy = ES_MEDIAN;
    cfgs[2].policy = ES_ASHA;
    cfgs[3].policy = ES_HYPERBAND;
    const size_t ncfgs = sizeof cfgs / sizeof cfgs[0];
    for (size_t p = 0; p < ncfgs; p++) {
        if (es_config_check(&cfgs[p], err, sizeof err)) {
            fprintf(stderr, "bench_stopping: error: %s: %s\n", es_policy_name(cfgs[p].policy), err);
            return 1;
        }
    }

    int pool = trials > budget ? trials : budget; /* every trial reports >= 1 step */
    curve *c = tn_xcalloc((size_t)pool, sizeof *c);
    int *steps = tn_xcalloc((size_t)pool, sizeof *steps);
    for (int seed = first_seed; seed < first_seed + seeds; seed++) {
        make_curves((uint64_t)seed, c, pool);
        if (curves) print_curves((uint64_t)seed, c, pool);
        for (size_t p = 0; p < ncfgs; p++) {
            int ran = simulate(&cfgs[p], c, pool, trials, budget, steps);
            measure at_trials = measure_prefix(c, steps, ran, trials, INT64_MAX);
            measure at_budget = measure_prefix(c, steps, ran, pool, budget);
            printf("{\"kind\": \"run\", \"policy\": \"%s\", \"seed\": %d, \"steps\": [",
                   es_policy_name(cfgs[p].policy), seed);
            for (int i = 0; i < ran; i++) printf("%s%d", i ? ", " : "", steps[i]);
            printf("], ");
            print_measure("trials", &at_trials);
            printf(", ");
            print_measure("budget", &at_budget);
            printf("}\n");
        }
    }
    free(steps);
    free(c);
    return 0;
}
