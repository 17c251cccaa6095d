/*
 * bench_mostopping.c — early stopping in a study of several metrics (issue 16): the
 * dominance rule of search/stopping.h at its defaults and other settings, and what a
 * user would otherwise use, the single-metric default rule (ASHA) on the first metric
 * alone, on synthetic learning curves whose final values trace a known trade-off
 * front. Driven by bench/mostopping.py, which computes the hypervolumes and writes
 * docs/benchmarks/early-stopping-multi-objective.md.
 *
 * The problems (x: the trial's hyperparameters, D uniform draws on [0, 1], as random
 * search suggests them; f: the final values, both or all minimised here):
 *   zdt     D = 3, ZDT1 scaled down: f1 = x0, g = 1 + (x1 + x2), f2 = g (1 - sqrt(f1 / g));
 *           f1 in [0, 1], f2 in [0, 3]. Metric 1 is f1, MINIMIZE; metric 2 is reported
 *           as 3 - f2, MAXIMIZE (so the goals differ, as error and accuracy would).
 *   dtlz2   D = 12 (DTLZ2's own for three objectives), three metrics, all MINIMIZE:
 *           g = sum_{i = 2..11} (x_i - 0.5)^2, f1 = (1 + g) cos(x0 pi/2) cos(x1 pi/2),
 *           f2 = (1 + g) cos(x0 pi/2) sin(x1 pi/2), f3 = (1 + g) sin(x0 pi/2); each in
 *           [0, 3.5], below 2.5 but for g > 1.5 (rare: g's mean is 0.83).
 * Each metric k has a range R_k (zdt: 1 and 3; dtlz2: 2 each). The curves, per seed
 * (tn_rng seeded with tn_mix64(seed) ^ the problem's tag; draws in exactly this order):
 *   for trial i = 1 .. P
 *     x_0 .. x_{D-1} = U              the suggestion
 *     tau = 1 + 7 U                   how slowly the trial learns, in steps: [1, 8]
 *     a_k = 0.05 + 0.4 U, k = 1..M    how far from f_k metric k starts, in R_k
 *     for step s = 1 .. 27, k = 1..M:
 *       e_k(s) = f_k + R_k (a_k exp(-s / tau) + 0.01 N)
 *       reported: e_k(s) for a minimised metric, C_k - e_k(s) for a maximised one
 *   (U: tn_rng_uniform, N: tn_rng_normal). Every curve improves towards its final value,
 *   and they cross: a slow learner with a good f starts behind fast learners with a
 *   worse one. A trial's time per step is 1 + jitter (2U - 1), from a second generator
 *   seeded with tn_mix64(seed ^ 0x5eed), as in bench_stopping.c.
 *
 * The study is bench_stopping.c's (its workers in stopsim.c): `workers` trials at a
 * time; the next report of all first (ties: the lower trial number); after each report
 * but a trial's last (each report carries every metric) the rule decides, seeing every
 * trial started so far; a trial that reports step 27 completes. Three studies per rule
 * and seed: --trials trials, 50 trials, and trials until --budget steps are reported (a
 * report that would pass it is not made). The rules:
 *   none            no early stopping
 *   dom-default     dominance at es_config_default's minTrials and minStep (0: dominance's own
 *                   default, ES_DOMINANCE_MIN_TRIALS = 3; 1)
 *   dom-mN          dominance, minTrials N, minStep 1
 *   dom-mN-sS       dominance, minTrials N, minStep S
 *   asha-first      the single-metric default (es_config_default: asha, eta 3, grace 0)
 *                   on metric 1's curves alone, with metric 1's goal
 *   median-first    the median rule at its defaults (minTrials 5, minStep 1) on metric 1
 *
 * Prints, per problem and seed, {"kind": "task", ...} with every trial's reported
 * values at step 27 (%.17g) and the goals, and per rule one {"kind": "run", ...} line:
 * for each study the steps reported, and each started trial's last step and whether it
 * completed.
 *
 *   bench_mostopping [--seeds=200] [--first_seed=1] [--workers=2] [--jitter=0.5]
 *                    [--trials=24] [--budget=405] [--problems=zdt,dtlz2] [--rules=all]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/flags.h"
#include "common/rng.h"
#include "common/status.h"
#include "search/space.h"
#include "search/stopping.h"
#include "stopsim.h"

#define NSTEPS 27  /* steps per trial */
#define MAXM 3     /* metrics */
#define MAXD 12    /* hyperparameters */

typedef struct problem {
    const char *name;
    int m, d;
    int maximize[MAXM];   /* the reported metric's goal */
    double range[MAXM];   /* R_k */
    double flip[MAXM];    /* C_k for a maximised metric */
    uint64_t tag;
} problem;

static const problem problems[] = {
    {"zdt", 2, 3, {0, 1, 0}, {1, 3, 0}, {0, 3, 0}, 0x2d7ULL},
    {"dtlz2", 3, 12, {0, 0, 0}, {2, 2, 2}, {0, 0, 0}, 0xd712ULL},
};

typedef struct task {
    double y[MAXM][NSTEPS]; /* reported values, step s at [s - 1] */
    double dt;              /* time per step */
} task;

/* The final values f of x (all minimised). */
static void evaluate(const problem *p, const double *x, double *f) {
    if (!strcmp(p->name, "zdt")) {
        double g = 1 + x[1] + x[2];
        f[0] = x[0];
        f[1] = g * (1 - sqrt(x[0] / g));
        return;
    }
    double g = 0;
    for (int i = 2; i < p->d; i++) g += (x[i] - 0.5) * (x[i] - 0.5);
    double a = x[0] * M_PI / 2, b = x[1] * M_PI / 2;
    f[0] = (1 + g) * cos(a) * cos(b);
    f[1] = (1 + g) * cos(a) * sin(b);
    f[2] = (1 + g) * sin(a);
}

static void make_tasks(const problem *p, uint64_t seed, double jitter, task *c, int pool) {
    tn_rng r, d;
    tn_rng_seed(&r, tn_mix64(seed) ^ p->tag);
    for (int i = 0; i < pool; i++) {
        double x[MAXD], f[MAXM], a[MAXM];
        for (int j = 0; j < p->d; j++) x[j] = tn_rng_uniform(&r);
        evaluate(p, x, f);
        double tau = 1 + 7 * tn_rng_uniform(&r);
        for (int k = 0; k < p->m; k++) a[k] = 0.05 + 0.4 * tn_rng_uniform(&r);
        for (int s = 1; s <= NSTEPS; s++)
            for (int k = 0; k < p->m; k++) {
                double e = f[k] + p->range[k] * (a[k] * exp(-s / tau) + 0.01 * tn_rng_normal(&r));
                c[i].y[k][s - 1] = p->maximize[k] ? p->flip[k] - e : e;
            }
    }
    tn_rng_seed(&d, tn_mix64(seed ^ 0x5eedULL));
    for (int i = 0; i < pool; i++) c[i].dt = 1 + jitter * (2 * tn_rng_uniform(&d) - 1);
}

/* ---- The rules ---- */

enum { K_NONE, K_DOM, K_FIRST };

typedef struct rule {
    char name[32];
    int kind;
    es_config es;
} rule;

/* Whether rule r stops trial t; tr[i * MAXM + k] is trial i's curve of metric k, mt[i]
 * its es_mtrial, first[] scratch for the first metric's curves. */
static int rule_stops(const rule *r, const problem *p, const es_mtrial *mt, es_trial *first,
                      size_t n, size_t t) {
    es_decision d;
    if (r->kind == K_NONE) return 0;
    if (r->kind == K_DOM) {
        es_decide_dominance(&r->es, p->maximize, (size_t)p->m, mt, n, t, &d);
        return d.stop;
    }
    for (size_t i = 0; i < n; i++) {
        first[i] = mt[i].metrics[0];
        first[i].number = mt[i].number;
        first[i].state = mt[i].state;
    }
    es_config c = r->es;
    c.maximize = p->maximize[0];
    es_decide(&c, first, n, t, &d);
    return d.stop;
}

/* ---- The study ---- */

typedef struct measure {
    long long steps; /* steps reported */
    int started;     /* trials that reported at least one step */
} measure;

/* Runs a study of at most max_trials trials (0: no limit) and budget steps (0: no
 * limit); last[i] gets trial i's last step, done[i] whether it completed. */
static measure simulate(const rule *r, const problem *p, const task *c, int pool, int workers,
                        int max_trials, long long budget, int *last, int *done) {
    es_point *pts = tn_xcalloc((size_t)pool * MAXM * NSTEPS, sizeof *pts);
    es_trial *curves = tn_xcalloc((size_t)pool * MAXM, sizeof *curves);
    es_mtrial *mt = tn_xcalloc((size_t)pool, sizeof *mt);
    es_trial *first = tn_xcalloc((size_t)pool, sizeof *first);
    ss_workers ws;
    measure m = {0, 0};
    ss_init(&ws, workers);
    for (;;) {
        int w, i;
        while ((w = ss_start(&ws, pool, max_trials, budget, m.steps, &i)) >= 0) {
            for (int k = 0; k < p->m; k++)
                curves[(size_t)i * MAXM + k] =
                    (es_trial){.number = i + 1, .state = SP_PENDING,
                               .curve = pts + ((size_t)i * MAXM + k) * NSTEPS};
            mt[i] = (es_mtrial){.number = i + 1, .state = SP_PENDING,
                                .metrics = curves + (size_t)i * MAXM};
            done[i] = 0;
            ws.next[w] = c[i].dt;
        }
        if ((w = ss_next(&ws)) < 0) break;
        i = ws.cur[w];
        int j = (int)curves[(size_t)i * MAXM].n; /* the step is j + 1 */
        if (budget && m.steps + 1 > budget) break;
        for (int k = 0; k < p->m; k++) {
            es_trial *tr = &curves[(size_t)i * MAXM + k];
            pts[((size_t)i * MAXM + k) * NSTEPS + j] = (es_point){j + 1, c[i].y[k][j]};
            tr->n = (size_t)j + 1;
        }
        m.steps++;
        if (j == 0) m.started++;
        int end = 1;
        if (j + 1 == NSTEPS) {
            mt[i].state = SP_COMPLETE;
            done[i] = 1;
        } else if (rule_stops(r, p, mt, first, (size_t)ws.started, (size_t)i)) {
            mt[i].state = SP_STOPPED;
        } else {
            end = 0;
            ws.next[w] += c[i].dt;
        }
        if (end) ws.cur[w] = -1;
    }
    for (int i = 0; i < ws.started; i++) last[i] = (int)curves[(size_t)i * MAXM].n;
    free(first);
    free(mt);
    free(curves);
    free(pts);
    return m;
}

static void print_study(const char *name, const measure *m, const int *last, const int *done) {
    printf("\"%s\": {\"steps\": %lld, \"started\": %d, \"last\": [", name, m->steps, m->started);
    for (int i = 0; i < m->started; i++) printf("%s%d", i ? ", " : "", last[i]);
    printf("], \"completed\": [");
    for (int i = 0; i < m->started; i++) printf("%s%d", i ? ", " : "", done[i]);
    printf("]}");
}

int main(int argc, char **argv) {
    int seeds = 200, first_seed = 1, workers = 2, trials = 24, budget = 405;
    double jitter = 0.5;
    const char *rules_arg = "all", *problems_arg = "zdt,dtlz2";
    const tn_flag flags[] = {
        {"seeds", TN_FLAG_INT, &seeds, "N", "seeds (studies per rule and problem)"},
        {"first_seed", TN_FLAG_INT, &first_seed, "N", "first seed"},
        {"workers", TN_FLAG_INT, &workers, "N", "trials at a time"},
        {"jitter", TN_FLAG_DOUBLE, &jitter, "J", "time per step 1 +- J, per trial"},
        {"trials", TN_FLAG_INT, &trials, "N", "trials of the first study (the second has 50)"},
        {"budget", TN_FLAG_INT, &budget, "N", "steps of the budget study"},
        {"problems", TN_FLAG_STRING, &problems_arg, "LIST", "zdt, dtlz2, comma-separated"},
        {"rules", TN_FLAG_STRING, &rules_arg, "LIST", "rules to run, by name, comma-separated (all)"},
    };
    const size_t nflags = sizeof flags / sizeof flags[0];
    int help;
    if (tn_flags_program("bench_mostopping", NULL, flags, nflags, argc, argv, &help)) return 2;
    if (help) return 0;
    if (ss_check_flags("bench_mostopping", seeds, trials, budget, workers, jitter)) return 2;

    es_config def;
    es_config_default(&def);
    rule all[32];
    size_t nall = 0;
    all[nall++] = (rule){.name = "none", .kind = K_NONE};
    es_config dom = def;
    dom.policy = ES_DOMINANCE;
    all[nall++] = (rule){.name = "dom-default", .kind = K_DOM, .es = dom};
    static const int mins[] = {1, 2, 3, 5, 8};
    for (size_t k = 0; k < sizeof mins / sizeof mins[0]; k++) {
        rule r = {.kind = K_DOM, .es = dom};
        r.es.min_trials = mins[k];
        r.es.min_step = 1;
        snprintf(r.name, sizeof r.name, "dom-m%d", mins[k]);
        all[nall++] = r;
    }
    static const int ms[][2] = {{1, 4}, {2, 4}, {3, 4}, {5, 4}, {1, 9}, {2, 9}};
    for (size_t k = 0; k < sizeof ms / sizeof ms[0]; k++) {
        rule r = {.kind = K_DOM, .es = dom};
        r.es.min_trials = ms[k][0];
        r.es.min_step = ms[k][1];
        snprintf(r.name, sizeof r.name, "dom-m%d-s%d", ms[k][0], ms[k][1]);
        all[nall++] = r;
    }
    all[nall++] = (rule){.name = "asha-first", .kind = K_FIRST, .es = def};
    es_config med = def;
    med.policy = ES_MEDIAN;
    all[nall++] = (rule){.name = "median-first", .kind = K_FIRST, .es = med};

    rule run[32];
    size_t nrun = 0;
    for (size_t k = 0; k < nall; k++)
        if (ss_listed(rules_arg, all[k].name)) run[nrun++] = all[k];
    if (nrun == 0) {
        fprintf(stderr, "bench_mostopping: error: --rules=%s names no rule\n", rules_arg);
        return 2;
    }
    int nprob = 0;
    for (size_t q = 0; q < sizeof problems / sizeof problems[0]; q++)
        nprob += ss_listed(problems_arg, problems[q].name);
    if (nprob == 0) {
        fprintf(stderr, "bench_mostopping: error: --problems=%s names no problem\n",
                problems_arg);
        return 2;
    }

    int big = trials > 50 ? trials : 50;
    int pool = big > budget ? big : budget; /* every trial reports >= 1 step */
    task *c = tn_xcalloc((size_t)pool, sizeof *c);
    int *last = tn_xcalloc((size_t)pool, sizeof *last), *done = tn_xcalloc((size_t)pool, sizeof *done);
    for (size_t q = 0; q < sizeof problems / sizeof problems[0]; q++) {
        const problem *p = &problems[q];
        if (!ss_listed(problems_arg, p->name)) continue;
        for (int seed = first_seed; seed < first_seed + seeds; seed++) {
            make_tasks(p, (uint64_t)seed, jitter, c, pool);
            printf("{\"kind\": \"task\", \"problem\": \"%s\", \"seed\": %d, \"maximize\": [",
                   p->name, seed);
            for (int k = 0; k < p->m; k++) printf("%s%s", k ? ", " : "", p->maximize[k] ? "true" : "false");
            printf("], \"final\": [");
            for (int i = 0; i < pool; i++) {
                printf("%s[", i ? ", " : "");
                for (int k = 0; k < p->m; k++) printf("%s%.17g", k ? ", " : "", c[i].y[k][NSTEPS - 1]);
                printf("]");
            }
            printf("]}\n");
            for (size_t k = 0; k < nrun; k++) {
                printf("{\"kind\": \"run\", \"problem\": \"%s\", \"rule\": \"%s\", \"seed\": %d, "
                       "\"workers\": %d, ", p->name, run[k].name, seed, workers);
                measure a = simulate(&run[k], p, c, pool, workers, trials, 0, last, done);
                print_study("trials", &a, last, done);
                printf(", ");
                measure b = simulate(&run[k], p, c, pool, workers, 50, 0, last, done);
                print_study("trials50", &b, last, done);
                printf(", ");
                measure e = simulate(&run[k], p, c, pool, workers, 0, budget, last, done);
                print_study("budget", &e, last, done);
                printf("}\n");
            }
        }
    }
    free(done);
    free(last);
    free(c);
    return 0;
}
