/*
 * bench_bo.c — Bayesian optimisation (ALGORITHM_UNSPECIFIED, search/bo.h) against
 * random search on standard test functions: the objective of every trial of a
 * sequential study, and the wall time of every suggestion. Driven by bench/bo.py,
 * which runs Optuna's samplers on the same functions (defined again there, and checked
 * against the points and values printed here) and writes
 * docs/benchmarks/bayesian-optimisation.md.
 *
 * A study, per (function, algorithm, seed): for trial i = 0 .. trials-1, sp_suggest
 * with the history of trials 0 .. i-1, all COMPLETE with their objective, minimised;
 * the trial is then evaluated and completes. With --workers=W > 1, W simulated workers
 * instead (run_study): a trial is suggested while up to W - 1 others run (PENDING),
 * each taking a seeded simulated time. Functions (minimised, DOUBLE parameters
 * on a linear scale unless said otherwise; f* the global minimum):
 *   branin      x0 in [-5, 10], x1 in [0, 15]                 f* = 0.397887...
 *   hartmann3   [0, 1]^3                                       f* = -3.862780...
 *   hartmann6   [0, 1]^6                                       f* = -3.322368...
 *   rosenbrock  [-5, 10]^4                                     f* = 0
 *   ackley      [-32.768, 32.768]^5 (a = 20, b = 0.2, c = 2 pi) f* = 0
 *   levy        [-10, 10]^4                                    f* = 0
 *   styblinski  [-5, 5]^5 (Styblinski-Tang)                    f* = -39.166166 * 5
 *   mixed       lr DOUBLE [1e-5, 1] log, units INTEGER [1, 128], cat CATEGORICAL
 *               {a, b, c}: f = (log10(lr) + 2)^2 + (units - 37)^2 / 1000
 *               + {0, 0.3, 0.7}[cat]                             f* = 0
 * Harder rows, run only when named (bench/bo.py --hard):
 *   ackley10    ackley in [-32.768, 32.768]^10                 f* = 0
 *   mixed20     20 parameters (6 DOUBLE, 2 on a log scale; 5 INTEGER, 1 log; 4
 *               DISCRETE; 5 CATEGORICAL): mixed20() below      f* = 0
 * Conditional spaces, run only when named (bench/bo.py --conditional;
 * docs/benchmarks/conditional.md):
 *   conditional optimizer CATEGORICAL {sgd, adam}; momentum DOUBLE [0, 0.99] only
 *               under sgd; beta1 DOUBLE [0.8, 0.999] only under adam; lr DOUBLE
 *               [1e-4, 1] log; schedule CATEGORICAL {constant, step}; decay DOUBLE
 *               [0.1, 0.9] only under step. A made-up validation loss:
 *                 sgd   (log10 lr - log10(0.1 (1 - momentum)))^2 + 2 (momentum - 0.9)^2
 *                 adam  0.1 + (log10 lr + 3)^2 + 20 (beta1 - 0.9)^2
 *               plus 0.05 (constant) or 0.2 (decay - 0.3)^2 (step)   f* = 0 (sgd,
 *               momentum 0.9, lr 0.01, step, decay 0.3)
 *   conditional_flat  the same function on the same parameters, every one always
 *               present (the function ignores those that do not apply): the space a
 *               sampler without conditions searches.
 * Prints one JSON line per study: {"kind": "run", "function", "algo" ("bo" or
 * "random"), "seed", "x" (the points, %.17g; null for an inactive parameter), "y",
 * "suggest_s" (seconds per suggestion), "notes" (suggestions with a note), "note"
 * (the first one)}.
 * --timing=N instead feeds N random trials of hartmann6 (random search, seed
 * --first_seed, indices 0 .. N-1) to the sampler as history and times --reps
 * suggestions of trial N (seeds 1 .. reps) after one untimed one; one JSON line with
 * the history and the times.
 *
 *   bench_bo [--function=NAME|all] [--algo=bo|random|both] [--seeds=20] [--first_seed=1]
 *            [--trials=0 (50; 100 for hartmann6)] [--timing=N --reps=5]
 *            [--model_points=0 (ours: bo_options.model_points; 0 the default)]
 *            [--pending=0 (ours: bo_options.pending, enum bo_pending)]
 *            [--onehot=0 (ours: bo_options.onehot; 0 chosen by the evidence)]
 *            [--threads=0 (ours: the threads of a suggestion; 0 the cores online)] [--list]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/flags.h"
#include "common/rng.h"
#include "common/status.h"
#include "search/bo.h"
#include "search/par.h"
#include "search/sampler.h"
#include "search/space.h"

typedef struct bench_fn {
    const char *name;
    int named_only;                    /* left out of --function=all (the conditional ones) */
    int dims;                          /* DOUBLE parameters, for the plain functions */
    double lo, hi;                     /* their common range (branin, mixed: own ranges) */
    double fmin;                       /* the global minimum */
    int trials;                        /* default trials per study */
    double (*f)(const double *x);      /* x: the values, as sp_suggest writes them */
} bench_fn;

static const double PI = 3.14159265358979323846;

static double branin(const double *x) {
    const double b = 5.1 / (4 * PI * PI), c = 5 / PI, t = 1 / (8 * PI);
    double u = x[1] - b * x[0] * x[0] + c * x[0] - 6;
    return u * u + 10 * (1 - t) * cos(x[0]) + 10;
}

static const double HART_ALPHA[4] = {1.0, 1.2, 3.0, 3.2};

static double hartmann3(const double *x) {
    static const double A[4][3] = {{3, 10, 30}, {0.1, 10, 35}, {3, 10, 30}, {0.1, 10, 35}};
    static const double P[4][3] = {{3689, 1170, 2673}, {4699, 4387, 7470},
                                   {1091, 8732, 5547}, {381, 5743, 8828}};
    double s = 0;
    for (int i = 0; i < 4; i++) {
        double e = 0;
        for (int j = 0; j < 3; j++) {
            double d = x[j] - 1e-4 * P[i][j];
            e += A[i][j] * d * d;
        }
        s -= HART_ALPHA[i] * exp(-e);
    }
    return s;
}

static double hartmann6(const double *x) {
    static const double A[4][6] = {{10, 3, 17, 3.5, 1.7, 8}, {0.05, 10, 17, 0.1, 8, 14},
                                   {3, 3.5, 1.7, 10, 17, 8}, {17, 8, 0.05, 10, 0.1, 14}};
    static const double P[4][6] = {{1312, 1696, 5569, 124, 8283, 5886},
                                   {2329, 4135, 8307, 3736, 1004, 9991},
                                   {2348, 1451, 3522, 2883, 3047, 6650},
                                   {4047, 8828, 8732, 5743, 1091, 381}};
    double s = 0;
    for (int i = 0; i < 4; i++) {
        double e = 0;
        for (int j = 0; j < 6; j++) {
            double d = x[j] - 1e-4 * P[i][j];
            e += A[i][j] * d * d;
        }
        s -= HART_ALPHA[i] * exp(-e);
    }
    return s;
}

static double rosenbrock(const double *x) {
    double s = 0;
    for (int i = 0; i < 3; i++) {
        double a = x[i + 1] - x[i] * x[i], b = x[i] - 1;
        s += 100 * a * a + b * b;
    }
    return s;
}

static double ackley_d(const double *x, int d) {
    double sq = 0, cs = 0;
    for (int i = 0; i < d; i++) {
        sq += x[i] * x[i];
        cs += cos(2 * PI * x[i]);
    }
    return -20 * exp(-0.2 * sqrt(sq / d)) - exp(cs / d) + 20 + exp(1.0);
}

static double ackley(const double *x) { return ackley_d(x, 5); }

static double ackley10(const double *x) { return ackley_d(x, 10); }

static double levy(const double *x) {
    double w[4];
    for (int i = 0; i < 4; i++) w[i] = 1 + (x[i] - 1) / 4;
    double s0 = sin(PI * w[0]), s = s0 * s0;
    for (int i = 0; i < 3; i++) {
        double si = sin(PI * w[i] + 1);
        s += (w[i] - 1) * (w[i] - 1) * (1 + 10 * si * si);
    }
    double sd = sin(2 * PI * w[3]);
    return s + (w[3] - 1) * (w[3] - 1) * (1 + sd * sd);
}

static double styblinski(const double *x) {
    double s = 0;
    for (int i = 0; i < 5; i++) s += x[i] * x[i] * x[i] * x[i] - 16 * x[i] * x[i] + 5 * x[i];
    return 0.5 * s;
}

static double mixed(const double *x) { /* lr, units, cat (the category's index) */
    static const double CAT[3] = {0, 0.3, 0.7};
    double l = log10(x[0]) + 2, u = x[1] - 37;
    return l * l + u * u / 1000 + CAT[(int)x[2]];
}

/* mixed20: a made-up training run with 20 hyperparameters of every type, two of them
 * irrelevant (noise, bucket), with interactions (the best learning rate depends on the
 * optimiser and the batch size, the best weight decay on dropout). x in the order of
 * make_space, categories as their index. Its minimum, 0, is at lr 10^-2.5, wd 1e-4,
 * momentum 0.9, dropout 0.2, smoothing 0.1, layers 4, units 256, epochs 60, heads 8,
 * batch 128, kernel 3, width 0.75, clip 1, adamw, gelu, batchnorm, cosine, he. */
static const double M20_BATCH[] = {16, 32, 64, 128, 256, 512};
static const double M20_KERNEL[] = {1, 3, 5, 7};
static const double M20_WIDTH[] = {0.25, 0.5, 0.75, 1, 1.25};
static const double M20_CLIP[] = {0.1, 0.5, 1, 5, 10};
static char *M20_OPT[] = {"sgd", "adam", "adamw", "rmsprop"};
static char *M20_ACT[] = {"relu", "gelu", "tanh"};
static char *M20_NORM[] = {"batchnorm", "layernorm", "none"};
static char *M20_SCHED[] = {"constant", "cosine", "step"};
static char *M20_INIT[] = {"he", "xavier"};

static double mixed20(const double *x) {
    static const double OPT[] = {0.4, 0.1, 0, 0.3}, ACT[] = {0.05, 0, 0.3},
                        NORM[] = {0, 0.05, 0.4}, SCHED[] = {0.2, 0, 0.1}, INIT[] = {0, 0.1};
    int opt = (int)x[15];
    double b = log2(x[11]) - 7;
    double t_lr = log10(x[0]) - (opt == 0 ? -1.5 : -2.5) - 0.15 * b;
    double t_wd = log10(x[1]) + 4 + 2 * (x[3] - 0.2);
    double f = t_lr * t_lr + 0.3 * t_wd * t_wd + 2 * (x[3] - 0.2) * (x[3] - 0.2);
    f += 4 * (x[2] - 0.9) * (x[2] - 0.9) * (opt == 0 || opt == 3 ? 1 : 0.25);
    f += 10 * (x[4] - 0.1) * (x[4] - 0.1);
    f += 0.02 * (x[6] - 4) * (x[6] - 4);
    f += 0.1 * (log2(x[7]) - 8) * (log2(x[7]) - 8);
    f += (x[8] - 60) * (x[8] - 60) / 2000;
    f += 0.01 * (x[9] - 8) * (x[9] - 8);
    f += 0.1 * b * b;
    f += 0.05 * ((x[12] - 3) / 2) * ((x[12] - 3) / 2);
    f += 0.5 * (x[13] - 0.75) * (x[13] - 0.75);
    f += 0.05 * log10(x[14]) * log10(x[14]);
    return f + OPT[opt] + ACT[(int)x[16]] + NORM[(int)x[17]] + SCHED[(int)x[18]] +
           INIT[(int)x[19]];
}

/* optimizer (0 sgd, 1 adam), momentum, beta1, lr, schedule (0 constant, 1 step),
 * decay; the parameters that do not apply are NaN (conditional) or ignored (flat). */
static double conditional(const double *x) {
    double l = log10(x[3]), f;
    if (x[0] == 0) {
        double t = l - log10(0.1 * (1 - x[1]));
        f = t * t + 2 * (x[1] - 0.9) * (x[1] - 0.9);
    } else {
        f = 0.1 + (l + 3) * (l + 3) + 20 * (x[2] - 0.9) * (x[2] - 0.9);
    }
    return f + (x[4] == 0 ? 0.05 : 0.2 * (x[5] - 0.3) * (x[5] - 0.3));
}

static const bench_fn FUNCS[] = {
    {"branin", 0, 2, 0, 0, 0.39788735772973816, 50, branin},
    {"hartmann3", 0, 3, 0, 1, -3.862779787332663, 50, hartmann3},
    {"hartmann6", 0, 6, 0, 1, -3.322368011415515, 100, hartmann6},
    {"rosenbrock", 0, 4, -5, 10, 0, 50, rosenbrock},
    {"ackley", 0, 5, -32.768, 32.768, 0, 50, ackley},
    {"ackley10", 1, 10, -32.768, 32.768, 0, 100, ackley10},
    {"mixed20", 1, 20, 0, 0, 0, 100, mixed20},
    {"levy", 0, 4, -10, 10, 0, 50, levy},
    {"styblinski", 0, 5, -5, 5, -39.16616570377142 * 5, 50, styblinski},
    {"mixed", 0, 3, 0, 0, 0, 50, mixed},
    {"conditional", 1, 6, 0, 0, 0, 50, conditional},
    {"conditional_flat", 1, 6, 0, 0, 0, 50, conditional},
};
#define NFUNCS (sizeof FUNCS / sizeof FUNCS[0])

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void add_double(sp_space *s, const char *name, int scale, double lo, double hi) {
    sp_space_add(s, &(sp_param){.name = (char *)name, .type = SP_DOUBLE, .scale = scale,
                                .min = lo, .max = hi});
}

static void add_int(sp_space *s, const char *name, int scale, double lo, double hi) {
    sp_space_add(s, &(sp_param){.name = (char *)name, .type = SP_INTEGER, .scale = scale,
                                .min = lo, .max = hi});
}

static void add_discrete(sp_space *s, const char *name, const double *v, size_t n) {
    sp_space_add(s, &(sp_param){.name = (char *)name, .type = SP_DISCRETE,
                                .values = (double *)v, .nvalues = n});
}

static void add_cat(sp_space *s, const char *name, char **c, size_t n) {
    sp_space_add(s, &(sp_param){.name = (char *)name, .type = SP_CATEGORICAL,
                                .categories = c, .ncategories = n});
}

/* The function's search space, into a zeroed s. */
static void make_space(const bench_fn *fn, sp_space *s) {
    char name[16];
    if (strncmp(fn->name, "conditional", 11) == 0) {
        int cond = strcmp(fn->name, "conditional") == 0;
        char *opts[] = {"sgd", "adam"}, *scheds[] = {"constant", "step"};
        double sgd = 0, adam = 1, step = 1;
        sp_space_add(s, &(sp_param){.name = "optimizer", .type = SP_CATEGORICAL,
                                    .categories = opts, .ncategories = 2});
        sp_space_add(s, &(sp_param){.name = "momentum", .type = SP_DOUBLE, .min = 0, .max = 0.99,
                                    .conditional = cond, .parent = 0, .when = &sgd, .nwhen = 1});
        sp_space_add(s, &(sp_param){.name = "beta1", .type = SP_DOUBLE, .min = 0.8, .max = 0.999,
                                    .conditional = cond, .parent = 0, .when = &adam, .nwhen = 1});
        sp_space_add(s, &(sp_param){.name = "lr", .type = SP_DOUBLE, .scale = SP_LOG,
                                    .min = 1e-4, .max = 1});
        sp_space_add(s, &(sp_param){.name = "schedule", .type = SP_CATEGORICAL,
                                    .categories = scheds, .ncategories = 2});
        sp_space_add(s, &(sp_param){.name = "decay", .type = SP_DOUBLE, .min = 0.1, .max = 0.9,
                                    .conditional = cond, .parent = 4, .when = &step, .nwhen = 1});
        return;
    }
    if (strcmp(fn->name, "mixed20") == 0) {
        add_double(s, "lr", SP_LOG, 1e-5, 1);
        add_double(s, "wd", SP_LOG, 1e-6, 1e-1);
        add_double(s, "momentum", SP_LINEAR, 0.5, 0.99);
        add_double(s, "dropout", SP_LINEAR, 0, 0.8);
        add_double(s, "smoothing", SP_LINEAR, 0, 0.3);
        add_double(s, "noise", SP_LINEAR, 0, 1);
        add_int(s, "layers", SP_LINEAR, 1, 12);
        add_int(s, "units", SP_LOG, 16, 1024);
        add_int(s, "epochs", SP_LINEAR, 1, 100);
        add_int(s, "heads", SP_LINEAR, 1, 16);
        add_int(s, "bucket", SP_LINEAR, 0, 1000);
        add_discrete(s, "batch", M20_BATCH, NELEM(M20_BATCH));
        add_discrete(s, "kernel", M20_KERNEL, NELEM(M20_KERNEL));
        add_discrete(s, "width", M20_WIDTH, NELEM(M20_WIDTH));
        add_discrete(s, "clip", M20_CLIP, NELEM(M20_CLIP));
        add_cat(s, "optimizer", M20_OPT, NELEM(M20_OPT));
        add_cat(s, "activation", M20_ACT, NELEM(M20_ACT));
        add_cat(s, "norm", M20_NORM, NELEM(M20_NORM));
        add_cat(s, "schedule", M20_SCHED, NELEM(M20_SCHED));
        add_cat(s, "init", M20_INIT, NELEM(M20_INIT));
        return;
    }
    if (strcmp(fn->name, "mixed") == 0) {
        char *cats[] = {"a", "b", "c"};
        sp_space_add(s, &(sp_param){.name = "lr", .type = SP_DOUBLE, .scale = SP_LOG,
                                    .min = 1e-5, .max = 1});
        sp_space_add(s, &(sp_param){.name = "units", .type = SP_INTEGER, .scale = SP_LINEAR,
                                    .min = 1, .max = 128});
        sp_space_add(s, &(sp_param){.name = "cat", .type = SP_CATEGORICAL, .categories = cats,
                                    .ncategories = 3});
        return;
    }
    for (int j = 0; j < fn->dims; j++) {
        sp_param p = {.name = name, .type = SP_DOUBLE, .scale = SP_LINEAR, .min = fn->lo,
                      .max = fn->hi};
        if (strcmp(fn->name, "branin") == 0) {
            p.min = j == 0 ? -5 : 0;
            p.max = j == 0 ? 10 : 15;
        }
        snprintf(name, sizeof name, "x%d", j);
        sp_space_add(s, &p);
    }
}

/* --model_points: our sampler with bo_options.model_points set (0: sp_suggest's
 * defaults). */
static int g_model_points = 0;
/* --pending: bo_options.pending (enum bo_pending; 0 the default). */
static int g_pending = 0;
/* --onehot: bo_options.onehot (0: chosen by the evidence). */
static double g_onehot = 0.0;

static int suggest(int algo, const sp_space *s, const sp_history *h, uint64_t seed,
                   uint64_t index, double *out, char *note, size_t notelen) {
    if (algo != SP_ALGO_UNSPECIFIED ||
        (g_model_points == 0 && g_pending == 0 && g_onehot == 0.0)) {
        int exhausted; /* random and Bayesian: never */
        return sp_suggest(algo, s, h, seed, index, out, &exhausted, note, notelen);
    }
    bo_options o = {0};
    o.model_points = g_model_points;
    o.pending = g_pending;
    o.onehot = g_onehot;
    return bo_suggest(s, h, seed, index, &o, out, note, notelen);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "key": [v...], each with `digits` significant digits. */
static void print_doubles(const char *key, const double *v, int n, int digits) {
    printf("\"%s\": [", key);
    for (int i = 0; i < n; i++) printf("%s%.*g", i ? ", " : "", digits, v[i]);
    printf("]");
}

static void print_points(const char *key, const double *x, int trials, size_t n) {
    printf("\"%s\": [", key);
    for (int i = 0; i < trials; i++) {
        printf("%s[", i ? ", " : "");
        for (size_t j = 0; j < n; j++) {
            double v = x[(size_t)i * n + j];
            if (isnan(v))
                printf("%snull", j ? ", " : ""); /* inactive */
            else
                printf("%s%.17g", j ? ", " : "", v);
        }
        printf("]");
    }
    printf("]");
}

/* Prints s as a JSON string (notes are plain text; only quotes and backslashes and
 * control characters need care). */
static void print_json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", (unsigned char)*s);
        else putchar(*s);
    }
    putchar('"');
}

/* Simulated duration of trial i of the study with this seed: 0.5 + U[0, 1), U from
 * tn_mix64(tn_mix64(seed) ^ (i + 1)) >> 11 (bench/bo.py computes the same). */
static double duration(int seed, int i) {
    uint64_t r = tn_mix64(tn_mix64((uint64_t)seed) ^ (uint64_t)(i + 1));
    return 0.5 + (double)(r >> 11) * 0x1.0p-53;
}

/* One study with `workers` simulated workers; prints its JSON line. While fewer than
 * `workers` trials run and the budget is not spent, the next trial is suggested from
 * every trial so far (finished ones COMPLETE, running ones PENDING); then the running
 * trial that finishes first (ties: the lower number) completes. workers 1 is the
 * sequential study. Returns 0 or the sampler's error. */
static int run_study(const bench_fn *fn, int algo, int seed, int trials, int workers) {
    sp_space s = {0};
    make_space(fn, &s);
    size_t n = s.n;
    double *x = tn_xcalloc((size_t)trials * n, sizeof *x);
    double *y = tn_xcalloc((size_t)trials, sizeof *y);
    double *secs = tn_xcalloc((size_t)trials, sizeof *secs);
    double *finish = tn_xcalloc((size_t)trials, sizeof *finish);
    sp_trial *tr = tn_xcalloc((size_t)trials, sizeof *tr);
    char note[512], first_note[512] = "";
    int notes = 0, rc = 0, created = 0, running = 0;
    double clock = 0;
    while (created < trials || running > 0) {
        while (running < workers && created < trials) {
            int i = created;
            sp_history h = {.trials = tr, .n = (size_t)i, .maximize = 0};
            double t0 = now();
            rc = suggest(algo, &s, &h, (uint64_t)seed, (uint64_t)i, x + (size_t)i * n, note,
                         sizeof note);
            secs[i] = now() - t0;
            if (rc != 0) {
                fprintf(stderr, "bench_bo: error: %s seed %d trial %d: sp_suggest: %s\n",
                        fn->name, seed, i, tn_strerror(rc));
                goto done;
            }
            if (note[0] && notes++ == 0) snprintf(first_note, sizeof first_note, "%s", note);
            tr[i] = (sp_trial){.values = x + (size_t)i * n, .state = SP_PENDING};
            finish[i] = clock + duration(seed, i);
            created++;
            running++;
        }
        int next = -1; /* the running trial that finishes first */
        for (int i = 0; i < created; i++) {
            if (tr[i].state == SP_PENDING && (next < 0 || finish[i] < finish[next])) next = i;
        }
        clock = finish[next];
        y[next] = fn->f(x + (size_t)next * n);
        tr[next] = (sp_trial){.values = x + (size_t)next * n, .state = SP_COMPLETE,
                              .has_objective = 1, .objective = y[next]};
        running--;
    }
    printf("{\"kind\": \"run\", \"function\": \"%s\", \"algo\": \"%s\", \"seed\": %d, "
           "\"workers\": %d, ", fn->name, algo == SP_ALGO_RANDOM ? "random" : "bo", seed, workers);
    print_points("x", x, trials, n);
    printf(", ");
    print_doubles("y", y, trials, 17);
    printf(", ");
    print_doubles("suggest_s", secs, trials, 6);
    printf(", \"notes\": %d, \"note\": ", notes);
    print_json_string(first_note);
    printf("}\n");
    fflush(stdout);
done:
    free(tr);
    free(finish);
    free(secs);
    free(y);
    free(x);
    sp_space_clear(&s);
    return rc;
}

/* The timing run: `history` random trials of fn as history, then reps timed
 * suggestions of trial number `history` (seeds 1 .. reps) after an untimed one. */
static int run_timing(const bench_fn *fn, int history, int reps, int seed) {
    sp_space s = {0};
    make_space(fn, &s);
    size_t n = s.n;
    double *x = tn_xcalloc((size_t)history * n, sizeof *x);
    double *y = tn_xcalloc((size_t)history, sizeof *y);
    double *ms = tn_xcalloc((size_t)reps, sizeof *ms);
    double *out = tn_xcalloc(n, sizeof *out);
    sp_trial *tr = tn_xcalloc((size_t)history, sizeof *tr);
    char note[512] = "";
    int rc = 0, exhausted;
    for (int i = 0; i < history && rc == 0; i++) {
        rc = sp_suggest(SP_ALGO_RANDOM, &s, NULL, (uint64_t)seed, (uint64_t)i,
                        x + (size_t)i * n, &exhausted, NULL, 0);
        y[i] = fn->f(x + (size_t)i * n);
        tr[i] = (sp_trial){.values = x + (size_t)i * n, .state = SP_COMPLETE,
                           .has_objective = 1, .objective = y[i]};
    }
    sp_history h = {.trials = tr, .n = (size_t)history, .maximize = 0};
    for (int r = 0; r <= reps && rc == 0; r++) { /* r = 0: untimed */
        double t0 = now();
        rc = suggest(SP_ALGO_UNSPECIFIED, &s, &h, (uint64_t)(r == 0 ? 1000 : r),
                        (uint64_t)history, out, note, sizeof note);
        if (r > 0) ms[r - 1] = 1e3 * (now() - t0);
    }
    if (rc != 0) {
        fprintf(stderr, "bench_bo: error: timing %s: sp_suggest: %s\n", fn->name, tn_strerror(rc));
    } else {
        printf("{\"kind\": \"timing\", \"function\": \"%s\", \"history\": %d, ", fn->name,
               history);
        print_points("x", x, history, n);
        printf(", ");
        print_doubles("y", y, history, 17);
        printf(", ");
        print_doubles("ms", ms, reps, 6);
        printf(", \"note\": ");
        print_json_string(note);
        printf("}\n");
    }
    free(tr);
    free(out);
    free(ms);
    free(y);
    free(x);
    sp_space_clear(&s);
    return rc;
}

int main(int argc, char **argv) {
    const char *function = "all", *algo = "both";
    int seeds = 20, first_seed = 1, trials = 0, timing = 0, reps = 5, list = 0, workers = 1;
    int threads = 0;
    const tn_flag flags[] = {
        {"function", TN_FLAG_STRING, &function, "NAME", "test function, or all"},
        {"algo", TN_FLAG_STRING, &algo, "NAME", "bo, random or both"},
        {"seeds", TN_FLAG_INT, &seeds, "N", "studies per function and algorithm"},
        {"first_seed", TN_FLAG_INT, &first_seed, "N", "first seed"},
        {"trials", TN_FLAG_INT, &trials, "N", "trials per study; 0: 50 (hartmann6: 100)"},
        {"workers", TN_FLAG_INT, &workers, "N", "simulated parallel workers (1: sequential)"},
        {"timing", TN_FLAG_INT, &timing, "N", "time suggestions after N random trials of "
                                              "hartmann6 instead"},
        {"reps", TN_FLAG_INT, &reps, "N", "timed suggestions (--timing)"},
        {"model_points", TN_FLAG_INT, &g_model_points, "N", "ours: build the GP on at most N "
                                                            "measured trials (0: default)"},
        {"pending", TN_FLAG_INT, &g_pending, "N", "ours: bo_options.pending, how running "
                                                  "trials are believed (0: default)"},
        {"onehot", TN_FLAG_DOUBLE, &g_onehot, "H", "ours: a categorical's one-hot height "
                                                   "(0: chosen by the fit's evidence)"},
        {"threads", TN_FLAG_INT, &threads, "N", "ours: threads a suggestion uses (search/par.h; "
                                                "0: the cores online)"},
        {"list", TN_FLAG_BOOL, &list, NULL, "print the functions and their minima"},
    };
    const size_t nflags = sizeof flags / sizeof flags[0];
    int help;
    if (tn_flags_program("bench_bo", NULL, flags, nflags, argc, argv, &help)) return 2;
    if (help) return 0;
    char err[512];
    int rc = 0;
    int algos = strcmp(algo, "bo") == 0 ? 1 : strcmp(algo, "random") == 0 ? 2
                : strcmp(algo, "both") == 0 ? 3 : 0;
    int found = strcmp(function, "all") == 0;
    /* --function=all: the standard functions; the conditional ones only by name */
    for (size_t k = 0; k < NFUNCS; k++) found |= strcmp(function, FUNCS[k].name) == 0;
    if (rc == 0 && (!algos || !found)) {
        snprintf(err, sizeof err, "unknown %s '%s'", algos ? "--function" : "--algo",
                 algos ? function : algo);
        rc = TN_EINVAL;
    }
    if (rc == 0 && (seeds < 1 || trials < 0 || timing < 0 || reps < 1 || g_model_points < 0 ||
                    workers < 1 || !(g_onehot >= 0.0) || threads < 0)) {
        snprintf(err, sizeof err, "--seeds, --reps and --workers must be >= 1, --trials, "
                 "--timing, --model_points, --onehot and --threads >= 0");
        rc = TN_EINVAL;
    }
    if (rc) {
        fprintf(stderr, "bench_bo: error: %s\nhint: run 'bench_bo --help'\n", err);
        return 2;
    }
    par_set_threads(threads);
    if (list) {
        for (size_t k = 0; k < NFUNCS; k++)
            printf("{\"kind\": \"function\", \"function\": \"%s\", \"fmin\": %.17g, "
                   "\"trials\": %d, \"named_only\": %s}\n", FUNCS[k].name, FUNCS[k].fmin,
                   FUNCS[k].trials, FUNCS[k].named_only ? "true" : "false");
        return 0;
    }
    if (timing) {
        for (size_t k = 0; k < NFUNCS; k++)
            if (strcmp(FUNCS[k].name, "hartmann6") == 0)
                return run_timing(&FUNCS[k], timing, reps, first_seed) ? 1 : 0;
    }
    for (size_t k = 0; k < NFUNCS; k++) {
        const bench_fn *fn = &FUNCS[k];
        if (strcmp(function, "all") == 0 ? fn->named_only : strcmp(function, fn->name) != 0)
            continue;
        int t = trials ? trials : fn->trials;
        for (int seed = first_seed; seed < first_seed + seeds; seed++) {
            if ((algos & 1) && run_study(fn, SP_ALGO_UNSPECIFIED, seed, t, workers)) return 1;
            if ((algos & 2) && run_study(fn, SP_ALGO_RANDOM, seed, t, workers)) return 1;
        }
    }
    return 0;
}
