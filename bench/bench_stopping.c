/*
 * bench_stopping.c — the early-stopping rules of search/stopping.h, and the candidates
 * for the default rule, on studies run several trials at a time: how many steps each
 * saves and what it costs in the best value found. Driven by bench/stopping.py, which
 * runs Optuna's pruners on the same studies (this program prints them) and writes
 * docs/benchmarks/early-stopping-synthetic.md.
 *
 * The synthetic task, per seed (tn_rng seeded with the seed; draws in exactly this
 * order):
 *   for trial i = 1 .. P
 *     v   = 0.5 + 0.2 * (U + U)     hidden final value: triangular on [0.5, 0.9]
 *     a   = 0.05 + 0.4 * U          how far below v the curve starts: [0.05, 0.45]
 *     tau = 1 + 7 * U               how slowly it gets there, in steps: [1, 8]
 *     for step s = 1 .. 27:  y(s) = v - a * exp(-s / tau) + 0.01 * N
 *   (U: tn_rng_uniform, N: tn_rng_normal). Maximize. Curves cross: a slow learner
 *   with a high v starts below fast learners with a lower v.
 * With --curves_from=FILE the curves are a real study's instead (bench/stopping_real.py
 * --curves writes them: the first line the number of trials, then one trial a line,
 * "n step value step value ..."; v is the last value), and seed k runs them in the
 * order of the k-th random permutation (seed 0: as recorded).
 * Each trial also has a time per step, 1 + jitter * (2U - 1), from a second generator
 * seeded with tn_mix64(seed ^ 0x5eed), so the curves do not depend on it.
 *
 * A study runs `workers` trials at a time. Trial k reports its steps at times
 * start + step * time-per-step; the next report of all is taken first (ties: the lower
 * trial number). After each report but a trial's last the rule decides whether the
 * trial stops, seeing every trial started so far (running ones with the points they
 * have reported); a trial that reports its last step completes. A freed worker starts
 * the next trial at once. Two kinds of study:
 *   trials N  N trials (maxTrials N): steps reported, trials completed, and best =
 *             the hidden v of the completed trial with the best last value;
 *   budget B  trials until B steps are reported: a report that would pass B is not
 *             made, the study ends there, and trials still running do not complete.
 * Prints, per rule and seed, one JSON line with the three studies (--trials, 50 and
 * the budget) and, with --curves, one per seed with the curves and times per step
 * (%.17g, so Python reads the same doubles).
 *
 *   bench_stopping [--seeds=200] [--first_seed=1] [--workers=2] [--jitter=0.5]
 *                  [--trials=24] [--budget=405] [--rules=all] [--curves]
 *                  [--curves_from=FILE]
 */
#include <errno.h>
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

#define NSTEPS 27  /* steps per synthetic trial */
#define MAXPTS 64  /* points per trial */

typedef struct task {
    int n;                /* points */
    int64_t step[MAXPTS]; /* steps, increasing */
    double y[MAXPTS];     /* values reported */
    double v;             /* hidden final value (synthetic) or the last value (real) */
    double dt;            /* time per step */
} task;

typedef struct measure {
    int64_t steps;    /* steps reported */
    int started;      /* trials that reported at least one step */
    int completed;    /* trials that reported their last step */
    int best_trial;   /* number of the completed trial with the best last value; 0: none */
    double best_value; /* its v */
} measure;

/* ---- The rules compared ---- */

enum { K_ES, K_FRACTION, K_CURVE };

/* A rule: an es_config (K_ES); ASHA with the grace period a given fraction of the
 * trials' length (K_FRACTION: what grace 0 does with 1/8, here with any fraction);
 * or the learning-curve candidate (K_CURVE). */
typedef struct rule {
    const char *name;
    int kind;
    es_config es;
    double fraction; /* K_FRACTION: grace = ceil(fraction * length) */
    int min_trials;  /* K_CURVE: completed trials needed */
    double pct;      /* K_CURVE: percentile of the completed trials' last values */
} rule;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p-th percentile of x[0..m) (m >= 1), linear between order statistics. */
static double percentile(double *x, size_t m, double p) {
    qsort(x, m, sizeof *x, cmp_double);
    double pos = p / 100 * (double)(m - 1);
    size_t lo = (size_t)pos, hi = lo + 1 < m ? lo + 1 : lo;
    return x[lo] + (pos - (double)lo) * (x[hi] - x[lo]);
}

/* The longest completed trial's last step other than t (0: none completed). */
static int64_t length_of(const es_trial *tr, size_t n, size_t t) {
    int64_t len = 0;
    for (size_t i = 0; i < n; i++)
        if (i != t && tr[i].state == SP_COMPLETE && tr[i].n && tr[i].curve[tr[i].n - 1].step > len)
            len = tr[i].curve[tr[i].n - 1].step;
    return len;
}

/* The learning-curve candidate (maximizing): a model of the rest of a curve made of
 * the completed trials' curves. At step s, the most any completed trial gained from
 * its value at s to its last value is g; the trial stops when its value now plus g
 * is below the pct-th percentile of the completed trials' last values, that is when
 * even gaining as much as the best learner did it would end in the worse part. */
static int curve_stops(const rule *r, const es_trial *tr, size_t n, size_t t) {
    const es_trial *me = &tr[t];
    int64_t s = me->curve[me->n - 1].step;
    double *last = tn_xmalloc((n + 1) * sizeof *last), gain = -INFINITY;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == t || tr[i].state != SP_COMPLETE) continue;
        double fin = tr[i].curve[tr[i].n - 1].value;
        last[m++] = fin;
        size_t k = tr[i].n;
        while (k > 0 && tr[i].curve[k - 1].step > s) k--;
        if (k > 0 && fin - tr[i].curve[k - 1].value > gain) gain = fin - tr[i].curve[k - 1].value;
    }
    int stop = 0;
    if ((int)m >= r->min_trials && gain > -INFINITY)
        stop = me->curve[me->n - 1].value + gain < percentile(last, m, r->pct);
    free(last);
    return stop;
}

static int rule_stops(const rule *r, const es_trial *tr, size_t n, size_t t) {
    es_decision d;
    if (r->kind == K_CURVE) return curve_stops(r, tr, n, t);
    if (r->kind == K_FRACTION) {
        int64_t len = length_of(tr, n, t);
        if (len < 2) return 0;
        es_config c = r->es;
        c.grace_period = (int64_t)ceil(r->fraction * (double)len);
        c.max_step = len;
        es_decide(&c, tr, n, t, &d);
        return d.stop;
    }
    es_decide(&r->es, tr, n, t, &d);
    return d.stop;
}

/* ---- The tasks ---- */

static void synthetic(uint64_t seed, task *c, int n) {
    tn_rng r;
    tn_rng_seed(&r, seed);
    for (int i = 0; i < n; i++) {
        double v = 0.5 + 0.2 * (tn_rng_uniform(&r) + tn_rng_uniform(&r));
        double a = 0.05 + 0.4 * tn_rng_uniform(&r);
        double tau = 1 + 7 * tn_rng_uniform(&r);
        c[i].n = NSTEPS;
        c[i].v = v;
        for (int s = 1; s <= NSTEPS; s++) {
            c[i].step[s - 1] = s;
            c[i].y[s - 1] = v - a * exp(-s / tau) + 0.01 * tn_rng_normal(&r);
        }
    }
}

/* Reads a real study's curves (the format in the header); returns the number of
 * trials, or -1 with a message in err. */
static int read_curves(const char *path, task **out, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) return tn_error(err, errlen, TN_EIO, "%s: %s", path, strerror(errno)), -1;
    int n = 0;
    task *c = NULL;
    if (fscanf(f, "%d", &n) != 1 || n < 1 || n > 100000) goto bad;
    c = tn_xcalloc((size_t)n, sizeof *c);
    for (int i = 0; i < n; i++) {
        if (fscanf(f, "%d", &c[i].n) != 1 || c[i].n < 1 || c[i].n > MAXPTS) goto bad;
        for (int j = 0; j < c[i].n; j++) {
            long long st;
            if (fscanf(f, "%lld %lf", &st, &c[i].y[j]) != 2) goto bad;
            c[i].step[j] = st;
            if (st < 1 || (j > 0 && st <= c[i].step[j - 1])) goto bad;
        }
        c[i].v = c[i].y[c[i].n - 1];
    }
    fclose(f);
    *out = c;
    return n;
bad:
    fclose(f);
    free(c);
    tn_error(err, errlen, TN_EINVAL, "%s: not a curves file (see bench_stopping.c's header)",
             path);
    return -1;
}

/* The tasks of one seed: c[0 .. pool) from the synthetic task or the real curves
 * (real[0 .. nreal) in the seed's permutation, repeated as needed), with times per
 * step. */
static void make_tasks(uint64_t seed, const task *real, int nreal, double jitter, task *c,
                       int pool) {
    if (!real) {
        synthetic(seed, c, pool);
    } else {
        int *perm = tn_xmalloc((size_t)nreal * sizeof *perm);
        for (int i = 0; i < nreal; i++) perm[i] = i;
        tn_rng r;
        tn_rng_seed(&r, seed);
        for (int i = nreal - 1; seed && i > 0; i--) {
            int j = (int)tn_rng_below(&r, (uint64_t)i + 1), x = perm[i];
            perm[i] = perm[j], perm[j] = x;
        }
        for (int i = 0; i < pool; i++) c[i] = real[perm[i % nreal]];
        free(perm);
    }
    tn_rng d;
    tn_rng_seed(&d, tn_mix64(seed ^ 0x5eedULL));
    for (int i = 0; i < pool; i++) c[i].dt = 1 + jitter * (2 * tn_rng_uniform(&d) - 1);
}

/* ---- The study ---- */

/* Runs a study of at most max_trials trials (0: no limit) and budget steps (0: no
 * limit) with `workers` at a time; steps[i] gets the steps trial i+1 reported. */
static measure simulate(const rule *r, const task *c, int pool, int workers, int max_trials,
                        int64_t budget, int *steps) {
    es_point *pts = tn_xcalloc((size_t)pool * MAXPTS, sizeof *pts);
    es_trial *tr = tn_xcalloc((size_t)pool, sizeof *tr);
    ss_workers ws;
    double best_y = -INFINITY;
    measure m = {0};
    ss_init(&ws, workers);
    for (;;) {
        int w, i;
        while ((w = ss_start(&ws, pool, max_trials, budget, m.steps, &i)) >= 0) {
            tr[i] = (es_trial){.number = i + 1, .state = SP_PENDING,
                               .curve = pts + (size_t)i * MAXPTS};
            ws.next[w] = (double)c[i].step[0] * c[i].dt;
        }
        if ((w = ss_next(&ws)) < 0) break;
        i = ws.cur[w];
        int j = (int)tr[i].n;
        int64_t inc = c[i].step[j] - (j ? c[i].step[j - 1] : 0);
        if (budget && m.steps + inc > budget) break; /* the budget is spent */
        pts[(size_t)i * MAXPTS + j] = (es_point){c[i].step[j], c[i].y[j]};
        tr[i].n = (size_t)j + 1;
        m.steps += inc;
        if (j == 0) m.started++;
        int end = 1;
        if (j + 1 == c[i].n) {
            tr[i].state = SP_COMPLETE;
            m.completed++;
            if (c[i].y[j] > best_y) {
                best_y = c[i].y[j];
                m.best_trial = i + 1;
                m.best_value = c[i].v;
            }
        } else if (rule_stops(r, tr, (size_t)ws.started, (size_t)i)) {
            tr[i].state = SP_STOPPED;
        } else {
            end = 0;
            ws.next[w] += (double)(c[i].step[j + 1] - c[i].step[j]) * c[i].dt;
        }
        if (end) ws.cur[w] = -1;
    }
    for (int i = 0; i < ws.started; i++) steps[i] = (int)(tr[i].n ? tr[i].curve[tr[i].n - 1].step : 0);
    free(tr);
    free(pts);
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

static void print_tasks(uint64_t seed, const task *c, int n) {
    printf("{\"kind\": \"curves\", \"seed\": %llu, \"trials\": [", (unsigned long long)seed);
    for (int i = 0; i < n; i++) {
        printf("%s{\"v\": %.17g, \"dt\": %.17g, \"steps\": [", i ? ", " : "", c[i].v, c[i].dt);
        for (int s = 0; s < c[i].n; s++) printf("%s%lld", s ? ", " : "", (long long)c[i].step[s]);
        printf("], \"y\": [");
        for (int s = 0; s < c[i].n; s++) printf("%s%.17g", s ? ", " : "", c[i].y[s]);
        printf("]}");
    }
    printf("]}\n");
}

int main(int argc, char **argv) {
    int seeds = 200, first_seed = 1, workers = 2, trials = 24, budget = 405, curves = 0;
    double jitter = 0.5;
    const char *rules_arg = "all", *curves_from = NULL;
    const tn_flag flags[] = {
        {"seeds", TN_FLAG_INT, &seeds, "N", "seeds (studies per rule)"},
        {"first_seed", TN_FLAG_INT, &first_seed, "N", "first seed"},
        {"workers", TN_FLAG_INT, &workers, "N", "trials at a time"},
        {"jitter", TN_FLAG_DOUBLE, &jitter, "J", "time per step 1 +- J, per trial"},
        {"trials", TN_FLAG_INT, &trials, "N", "trials of the first study (the second has 50)"},
        {"budget", TN_FLAG_INT, &budget, "N", "steps of the budget study"},
        {"rules", TN_FLAG_STRING, &rules_arg, "LIST", "rules to run, by name, comma-separated (all)"},
        {"curves", TN_FLAG_BOOL, &curves, NULL, "also print each seed's curves"},
        {"curves_from", TN_FLAG_STRING, &curves_from, "FILE", "a real study's curves"},
    };
    const size_t nflags = sizeof flags / sizeof flags[0];
    int help;
    if (tn_flags_program("bench_stopping", NULL, flags, nflags, argc, argv, &help)) return 2;
    if (help) return 0;
    if (ss_check_flags("bench_stopping", seeds, trials, budget, workers, jitter)) return 2;

    /* The rules. The default is es_config_default's (asha, eta 3, grace 0: an eighth
     * of the trials' length); "old-default" is the median rule with the spec's options
     * before issue 15 (minTrials 5, minStep 1); the rest are the candidates. */
    es_config def;
    es_config_default(&def);
    es_config med = def, asha = def;
    med.policy = ES_MEDIAN;
    asha.policy = ES_ASHA;
    rule all[32];
    size_t nall = 0;
    all[nall++] = (rule){.name = "none", .kind = K_ES, .es = {.policy = ES_NONE, .maximize = 1}};
    all[nall++] = (rule){.name = "default", .kind = K_ES, .es = def};
    all[nall++] = (rule){.name = "old-default", .kind = K_ES, .es = med};
    static const char *const median_names[] = {"median-min1", "median-min2", "median-min3"};
    for (int mt = 3; mt >= 1; mt--) {
        all[nall] = (rule){.name = median_names[mt - 1], .kind = K_ES, .es = med};
        all[nall++].es.min_trials = mt;
    }
    all[nall] = (rule){.name = "asha-grace1", .kind = K_ES, .es = asha};
    all[nall++].es.grace_period = 1;
    static const struct {
        const char *name;
        int eta;
        double fraction;
    } fr[] = {{"asha-eta3-L/9", 3, 1.0 / 9}, {"asha-eta3-L/8", 3, 1.0 / 8},
              {"asha-eta3-L/6", 3, 1.0 / 6}, {"asha-eta2-L/9", 2, 1.0 / 9},
              {"asha-eta2-L/8", 2, 1.0 / 8}, {"asha-eta4-L/8", 4, 1.0 / 8},
              {"asha-eta4-L/6", 4, 1.0 / 6}};
    for (size_t k = 0; k < sizeof fr / sizeof fr[0]; k++) {
        all[nall] = (rule){.name = fr[k].name, .kind = K_FRACTION, .es = asha,
                             .fraction = fr[k].fraction};
        all[nall++].es.reduction_factor = fr[k].eta;
    }
    all[nall++] = (rule){.name = "curve-p70", .kind = K_CURVE, .min_trials = 3, .pct = 70};
    all[nall++] = (rule){.name = "curve-p80", .kind = K_CURVE, .min_trials = 3, .pct = 80};

    rule run[32];
    size_t nrun = 0;
    for (size_t k = 0; k < nall; k++)
        if (ss_listed(rules_arg, all[k].name)) run[nrun++] = all[k];
    if (nrun == 0) {
        fprintf(stderr, "bench_stopping: error: --rules=%s names no rule\n", rules_arg);
        return 2;
    }

    task *real = NULL;
    int nreal = 0;
    char err[512];
    if (curves_from && (nreal = read_curves(curves_from, &real, err, sizeof err)) < 0) {
        fprintf(stderr, "bench_stopping: error: %s\n", err);
        return 1;
    }
    int big = trials > 50 ? trials : 50;
    int pool = big > budget ? big : budget; /* every trial reports >= 1 step */
    task *c = tn_xcalloc((size_t)pool, sizeof *c);
    int *steps = tn_xcalloc((size_t)pool, sizeof *steps);
    for (int seed = first_seed; seed < first_seed + seeds; seed++) {
        make_tasks((uint64_t)seed, real, nreal, jitter, c, pool);
        if (curves) print_tasks((uint64_t)seed, c, pool);
        for (size_t k = 0; k < nrun; k++) {
            measure a = simulate(&run[k], c, pool, workers, trials, 0, steps);
            printf("{\"kind\": \"run\", \"rule\": \"%s\", \"seed\": %d, \"workers\": %d, "
                   "\"steps\": [", run[k].name, seed, workers);
            for (int i = 0; i < a.started; i++) printf("%s%d", i ? ", " : "", steps[i]);
            printf("], ");
            print_measure("trials", &a);
            measure b = simulate(&run[k], c, pool, workers, 50, 0, steps);
            printf(", ");
            print_measure("trials50", &b);
            measure d = simulate(&run[k], c, pool, workers, 0, budget, steps);
            printf(", ");
            print_measure("budget", &d);
            printf("}\n");
        }
    }
    free(steps);
    free(c);
    free(real);
    return 0;
}
