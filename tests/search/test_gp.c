/*
 * test_gp.c — tests for search/gp.c: the posterior with fixed hyperparameters against
 * an independent reference written here (plain loops, Gaussian elimination with
 * partial pivoting), interpolation and the prior far from the data, the analytic
 * gradient (indirectly: the fitted point must be stationary for finite differences of
 * log ML + log prior, both read through gp_fit_fixed and gp_get_hyper), lengthscales
 * recovered for smooth and wiggly functions, jitter for duplicate points, all-equal y,
 * n = 1, the hyperparameter search on a subset (n > 100), bad arguments, seed
 * reproducibility, log EI against exact EI and against mpmath references far in the
 * tail, the kernel's exponential against expl, and a timing printout (not a check) for
 * n = 100 and 500 in d = 6.
 * Grouped lengthscales (dimensions sharing one, as a conditional parameter's two
 * coordinates do): against the reference with the lengthscales repeated, the
 * identity map the same as none, a fitted tie stationary, bad maps refused.
 *
 * Numerical checks are |got - want| <= atol + rtol |want|.
 */
#include "search/gp.h"

#include "common/rng.h"
#include "common/status.h"
#include "tests/check.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXN 12 /* points in the reference computations */

/* The priors of docs/bayesian-optimisation.md, "The Gaussian process": independent
 * normals on log l_j, log s2, log s2n. */
static const double prior_mu_l = -0.69314718055994531, prior_sd_l = 1.5;  /* log 0.5 */
static const double prior_mu_s2 = 0.0, prior_sd_s2 = 1.5;
static const double prior_mu_s2n = -6.9077552789821371, prior_sd_s2n = 2.0; /* log 1e-3 */

/* ---- Reference: the GP posterior by plain loops ---- */

/* Solves A x = b (n x n, row stride MAXN) by Gaussian elimination with partial
 * pivoting on copies; returns log |det A|. */
static double ref_solve(int n, const double A[][MAXN], const double *b, double *x) {
    double M[MAXN][MAXN + 1];
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) M[i][j] = A[i][j];
        M[i][n] = b[i];
    }
    double logdet = 0;
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int i = c + 1; i < n; i++)
            if (fabs(M[i][c]) > fabs(M[piv][c])) piv = i;
        for (int j = 0; j <= n; j++) {
            double t = M[c][j];
            M[c][j] = M[piv][j];
            M[piv][j] = t;
        }
        logdet += log(fabs(M[c][c]));
        for (int i = c + 1; i < n; i++) {
            double f = M[i][c] / M[c][c];
            for (int j = c; j <= n; j++) M[i][j] -= f * M[c][j];
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        double s = M[i][n];
        for (int j = i + 1; j < n; j++) s -= M[i][j] * x[j];
        x[i] = s / M[i][i];
    }
    return logdet;
}

/* Matern 5/2 written from r^2: s2 (1 + sqrt(5 r^2) + 5 r^2 / 3) exp(-sqrt(5 r^2)). */
static double ref_kernel(const double *x, const double *xp, int d, const double *ls, double s2) {
    double r2 = 0;
    for (int j = 0; j < d; j++) r2 += (x[j] - xp[j]) * (x[j] - xp[j]) / (ls[j] * ls[j]);
    return s2 * (1 + sqrt(5 * r2) + 5 * r2 / 3) * exp(-sqrt(5 * r2));
}

typedef struct ref_gp {
    int n, d;
    double X[MAXN][4], ybar, sd, ls[4], s2, s2n;
    double K[MAXN][MAXN], m, alpha[MAXN], loglik;
} ref_gp;

static void ref_fit(ref_gp *g, int n, int d, const double *X, const double *y, const double *ls,
                    double s2, double s2n) {
    g->n = n;
    g->d = d;
    g->s2 = s2;
    g->s2n = s2n;
    for (int j = 0; j < d; j++) g->ls[j] = ls[j];
    double s = 0, ss = 0, z[MAXN], one[MAXN], u[MAXN], v[MAXN];
    for (int i = 0; i < n; i++) s += y[i];
    g->ybar = s / n;
    for (int i = 0; i < n; i++) ss += (y[i] - g->ybar) * (y[i] - g->ybar);
    g->sd = sqrt(ss / (n - 1));
    for (int i = 0; i < n; i++) {
        z[i] = (y[i] - g->ybar) / g->sd;
        one[i] = 1;
        for (int j = 0; j < d; j++) g->X[i][j] = X[i * d + j];
    }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            g->K[a][b] = ref_kernel(g->X[a], g->X[b], d, ls, s2) + (a == b ? s2n : 0);
    double logdet = ref_solve(n, (const double(*)[MAXN])g->K, one, u);
    ref_solve(n, (const double(*)[MAXN])g->K, z, v);
    double su = 0, sv = 0;
    for (int i = 0; i < n; i++) su += u[i], sv += v[i];
    g->m = sv / su;
    double fit = 0;
    for (int i = 0; i < n; i++) {
        g->alpha[i] = v[i] - g->m * u[i];
        fit += (z[i] - g->m) * g->alpha[i];
    }
    g->loglik = -0.5 * fit - 0.5 * logdet - 0.5 * n * log(2 * M_PI);
}

static void ref_predict(const ref_gp *g, const double *x, double *mean, double *var) {
    double k[MAXN] = {0}, w[MAXN], mu = g->m, kw = 0;
    for (int i = 0; i < g->n; i++) k[i] = ref_kernel(x, g->X[i], g->d, g->ls, g->s2);
    ref_solve(g->n, (const double(*)[MAXN])g->K, k, w);
    for (int i = 0; i < g->n; i++) mu += k[i] * g->alpha[i], kw += k[i] * w[i];
    *mean = g->ybar + g->sd * mu;
    *var = g->sd * g->sd * (g->s2 - kw);
}

/* ---- Helpers ---- */

/* log ML + log prior (up to a constant) at theta = (log l.., log s2, log s2n), through
 * gp_fit_fixed; NAN when the model cannot be built. */
static double log_post(const double *X, const double *y, size_t n, size_t d,
                       const double *theta) {
    gp_hyper h = {theta, theta[d], theta[d + 1], NULL, 0};
    gp_model *m = NULL;
    if (gp_fit_fixed(X, y, n, d, &h, &m, NULL, 0) != 0) return NAN;
    double ll, jitter;
    gp_get_hyper(m, NULL, &jitter, &ll);
    gp_free(m);
    double lp = ll;
    for (size_t p = 0; p < d + 2; p++) {
        double mu = p < d ? prior_mu_l : p == d ? prior_mu_s2 : prior_mu_s2n;
        double sd = p < d ? prior_sd_l : p == d ? prior_sd_s2 : prior_sd_s2n;
        lp -= 0.5 * (theta[p] - mu) * (theta[p] - mu) / (sd * sd);
    }
    return lp;
}

static void uniform_points(double *X, size_t n, size_t d, uint64_t seed) {
    tn_rng r;
    tn_rng_seed(&r, seed);
    for (size_t i = 0; i < n * d; i++) X[i] = tn_rng_uniform(&r);
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- Fixed hyperparameters ---- */

static const double X5[] = {0.1, 0.2, 0.4, 0.9, 0.8, 0.3, 0.55, 0.5, 0.95, 0.85}; /* (5, 2) */
static const double y5[] = {1.2, -0.4, 0.9, 2.1, 0.3};

static void test_fixed_matches_reference(void) {
    static const struct {
        double ls[2], s2, s2n;
    } cases[] = {
        {{0.3, 0.6}, 1.3, 0.02},
        {{0.1, 0.1}, 0.5, 1e-4},
        {{2.0, 0.05}, 3.0, 0.3},
    };
    static const double xs[][2] = {{0.3, 0.3}, {0.7, 0.7}, {0.1, 0.2}, {0.0, 1.0}, {0.5, 0.52}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        double logl[2] = {log(cases[c].ls[0]), log(cases[c].ls[1])};
        gp_hyper h = {logl, log(cases[c].s2), log(cases[c].s2n), NULL, 0};
        gp_model *m = NULL;
        char log_[200] = "x";
        int rc = gp_fit_fixed(X5, y5, 5, 2, &h, &m, log_, sizeof log_);
        CHECK_INT_EQ(rc, 0);
        if (rc) continue;
        CHECK_MSG(log_[0] == '\0', "log = \"%s\"", log_);
        ref_gp g;
        ref_fit(&g, 5, 2, X5, y5, cases[c].ls, cases[c].s2, cases[c].s2n);
        gp_hyper got;
        double jitter, ll;
        gp_get_hyper(m, &got, &jitter, &ll);
        CHECK(jitter == 0);
        CHECK(got.log_lengthscale[0] == logl[0] && got.log_lengthscale[1] == logl[1]);
        CHECK(got.log_signal_var == h.log_signal_var && got.log_noise_var == h.log_noise_var);
        CHECK_NEAR(ll, g.loglik, 1e-10, 1e-10);
        for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
            double mean, var, rmean, rvar;
            gp_predict(m, xs[i], &mean, &var);
            ref_predict(&g, xs[i], &rmean, &rvar);
            CHECK_NEAR(mean, rmean, 1e-10, 1e-10);
            CHECK_NEAR(var, rvar, 1e-10, 1e-9);
        }
        gp_free(m);
    }
}

/* gp_log_evidence is in y's units: scaling y by a (and shifting it) fits the same
 * standardised data, so the evidence drops by exactly n log a; and it is the log ML
 * plus the log prior density, so with fixed hyperparameters it moves with log_lik. */
static void test_log_evidence_units(void) {
    double logl[2] = {log(0.3), log(0.6)};
    gp_hyper h = {logl, log(1.3), log(0.02), NULL, 0};
    double y2[5];
    for (int i = 0; i < 5; i++) y2[i] = 7.0 + 1000.0 * y5[i];
    gp_model *a = NULL, *b = NULL;
    CHECK_INT_EQ(gp_fit_fixed(X5, y5, 5, 2, &h, &a, NULL, 0), 0);
    CHECK_INT_EQ(gp_fit_fixed(X5, y2, 5, 2, &h, &b, NULL, 0), 0);
    if (a && b) {
        double ea = gp_log_evidence(a), eb = gp_log_evidence(b);
        CHECK(isfinite(ea) && isfinite(eb));
        CHECK_NEAR(eb, ea - 5.0 * log(1000.0), 1e-9, 1e-9);
    }
    gp_free(a);
    gp_free(b);
}

static void test_interpolates_and_reverts_to_prior(void) {
    double logl[2] = {log(0.05), log(0.05)};
    gp_hyper h = {logl, log(2.0), log(1e-12), NULL, 0};
    gp_model *m = NULL;
    CHECK_INT_EQ(gp_fit_fixed(X5, y5, 5, 2, &h, &m, NULL, 0), 0);
    if (!m) return;
    double sd = 0, ybar = 0;
    for (int i = 0; i < 5; i++) ybar += y5[i] / 5;
    for (int i = 0; i < 5; i++) sd += (y5[i] - ybar) * (y5[i] - ybar) / 4;
    sd = sqrt(sd);
    for (int i = 0; i < 5; i++) {
        double mean, var;
        gp_predict(m, X5 + 2 * i, &mean, &var);
        CHECK_NEAR(mean, y5[i], 1e-8, 0);
        CHECK(var >= 0 && var < 1e-9);
    }
    /* far from every point (many lengthscales): the prior, m and s2 sd^2 */
    double far[2] = {0.25, 0.65}, mean, var;
    gp_predict(m, far, &mean, &var);
    CHECK_NEAR(var, 2.0 * sd * sd, 0, 1e-6);
    /* the mean there is the GLS mean: with nearly independent points, ~ the average */
    CHECK_NEAR(mean, ybar, 1e-3, 0);
    gp_free(m);
}

/* ---- Fitting ---- */

typedef struct fit_case {
    const char *name;
    size_t n, d;
    double noise;                   /* sd of the noise added to y */
    double (*f)(const double *x);
} fit_case;

static double f_bowl(const double *x) { return (x[0] - 0.3) * (x[0] - 0.3) + 2 * x[1] * x[1]; }
static double f_sines(const double *x) { return sin(5 * x[0]) + cos(7 * x[1]) + x[2]; }
static double f_linear(const double *x) { return x[0] + 0.5 * x[1]; }
static double f_wiggly(const double *x) { return sin(12 * x[0]); }

static void make_data(const fit_case *c, uint64_t seed, double *X, double *y) {
    uniform_points(X, c->n, c->d, seed);
    tn_rng r;
    tn_rng_seed(&r, seed + 1);
    for (size_t i = 0; i < c->n; i++) y[i] = c->f(X + i * c->d) + c->noise * tn_rng_normal(&r);
}

/* The analytic gradient, checked through the optimiser: where BFGS stopped (its
 * gradient below 1e-2 in the internal coordinates), central differences of
 * log ML + log prior must vanish too. A wrong gradient moves the stopping point away
 * from the true stationary point (for a wrong factor 5/3 in dK/dlog l, by O(0.3)). */
static void test_fit_is_stationary(void) {
    static const fit_case cases[] = {
        {"bowl 2-D", 25, 2, 0.05, f_bowl},
        {"sines 3-D", 30, 3, 0.1, f_sines},
        {"linear 2-D, noiseless", 15, 2, 0.0, f_linear},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        size_t n = cases[c].n, d = cases[c].d;
        double X[30 * 3], y[30], theta[5], tp[5];
        make_data(&cases[c], 100 + c, X, y);
        gp_fit_options opt = {3, 0, 11, NULL, 0};
        gp_model *m = NULL;
        char log_[200] = "x";
        CHECK_INT_EQ(gp_fit(X, y, n, d, &opt, &m, log_, sizeof log_), 0);
        CHECK_MSG(log_[0] == '\0', "log = \"%s\"", log_); /* nothing to report */
        if (!m) continue;
        gp_hyper h;
        double jitter, ll;
        gp_get_hyper(m, &h, &jitter, &ll);
        CHECK(jitter == 0);
        for (size_t j = 0; j < d; j++) theta[j] = h.log_lengthscale[j];
        theta[d] = h.log_signal_var;
        theta[d + 1] = h.log_noise_var;
        double lp = log_post(X, y, n, d, theta);
        CHECK_NEAR(lp, log_post(X, y, n, d, theta), 0, 0); /* deterministic */
        const double step = 1e-4;
        for (size_t p = 0; p < d + 2; p++) {
            memcpy(tp, theta, sizeof(tp));
            tp[p] = theta[p] + step;
            double up = log_post(X, y, n, d, tp);
            tp[p] = theta[p] - step;
            double down = log_post(X, y, n, d, tp);
            double fd = (up - down) / (2 * step);
            CHECK_MSG(fabs(fd) < 0.05, "%s: d(log posterior)/d theta_%zu = %g at theta_%zu = %g",
                      cases[c].name, p, fd, p, theta[p]);
            /* a maximum, not a saddle: both neighbours lower, up to |gradient| step */
            CHECK(lp >= up - 1e-5 && lp >= down - 1e-5);
        }
        gp_free(m);
    }
}

static void test_lengthscales_recovered(void) {
    /* linear in 2-D: long lengthscales (the prior's median is 0.5) */
    fit_case lin = {"linear", 20, 2, 0.0, f_linear};
    double X[40 * 2], y[40];
    make_data(&lin, 7, X, y);
    gp_model *m = NULL;
    CHECK_INT_EQ(gp_fit(X, y, 20, 2, NULL, &m, NULL, 0), 0);
    if (m) {
        gp_hyper h;
        gp_get_hyper(m, &h, NULL, NULL);
        CHECK_MSG(exp(h.log_lengthscale[0]) > 1.0, "l_0 = %g", exp(h.log_lengthscale[0]));
        CHECK_MSG(exp(h.log_lengthscale[1]) > 1.0, "l_1 = %g", exp(h.log_lengthscale[1]));
        gp_free(m);
    }
    /* sin(12 x_0) in 2-D (period 0.52; l_0 comes out near 0.26), x_1 irrelevant:
     * short l_0, long l_1 */
    fit_case wig = {"wiggly", 40, 2, 0.01, f_wiggly};
    make_data(&wig, 8, X, y);
    m = NULL;
    CHECK_INT_EQ(gp_fit(X, y, 40, 2, NULL, &m, NULL, 0), 0);
    if (m) {
        gp_hyper h;
        gp_get_hyper(m, &h, NULL, NULL);
        double l0 = exp(h.log_lengthscale[0]), l1 = exp(h.log_lengthscale[1]);
        CHECK_MSG(l0 < 0.35, "l_0 = %g", l0);
        CHECK_MSG(l1 > 1.0, "l_1 = %g", l1);
        /* and it predicts the function between the data */
        double x[2] = {0.37, 0.5}, mean, var;
        gp_predict(m, x, &mean, &var);
        CHECK_NEAR(mean, sin(12 * 0.37), 0.05, 0);
        gp_free(m);
    }
}

/* ---- Degenerate data ---- */

static void test_duplicates_need_jitter(void) {
    /* 3 distinct points, two of them twice with different values: K without noise is
     * singular, so the fixed fit with s2n = 0 needs jitter. */
    static const double X[] = {0.2, 0.2, 0.7, 0.1, 0.2, 0.2, 0.5, 0.9, 0.7, 0.1};
    static const double y[] = {1.0, 2.0, 1.5, 0.0, 2.2};
    double logl[2] = {log(0.4), log(0.4)};
    gp_hyper h = {logl, 0.0, -1000.0, NULL, 0}; /* s2n = exp(-1000) = 0 */
    gp_model *m = NULL;
    char log_[200];
    CHECK_INT_EQ(gp_fit_fixed(X, y, 5, 2, &h, &m, log_, sizeof log_), 0);
    CHECK_STR_CONTAINS(log_, "jitter");
    if (m) {
        double jitter, ll;
        gp_get_hyper(m, NULL, &jitter, &ll);
        CHECK_MSG(jitter > 0 && jitter <= 1e-2, "jitter = %g", jitter);
        CHECK(isfinite(ll));
        double mean, var;
        gp_predict(m, X, &mean, &var);
        CHECK(isfinite(mean) && isfinite(var) && var >= 0);
        CHECK_NEAR(mean, 1.25, 1e-3, 0); /* the average of the two values there */
        gp_free(m);
    }
    /* fitting the same data: the noise absorbs the duplicates */
    m = NULL;
    CHECK_INT_EQ(gp_fit(X, y, 5, 2, NULL, &m, NULL, 0), 0);
    if (m) {
        double mean, var;
        gp_predict(m, X + 2, &mean, &var);
        CHECK(isfinite(mean) && isfinite(var) && var >= 0);
        gp_free(m);
    }
}

static void test_all_equal_y(void) {
    double X[8 * 3], y[8];
    uniform_points(X, 8, 3, 3);
    for (int i = 0; i < 8; i++) y[i] = 3.7;
    gp_model *m = NULL;
    char log_[200];
    CHECK_INT_EQ(gp_fit(X, y, 8, 3, NULL, &m, log_, sizeof log_), 0);
    if (!m) return;
    double x[3] = {0.5, 0.5, 0.5}, mean, var;
    gp_predict(m, x, &mean, &var);
    CHECK_NEAR(mean, 3.7, 1e-12, 1e-12);
    CHECK(isfinite(var) && var >= 0);
    gp_predict(m, X, &mean, &var);
    CHECK_NEAR(mean, 3.7, 1e-12, 1e-12);
    gp_free(m);
}

static void test_single_point(void) {
    double X[2] = {0.3, 0.6}, y[1] = {-2.5};
    gp_model *m = NULL;
    CHECK_INT_EQ(gp_fit(X, y, 1, 2, NULL, &m, NULL, 0), 0);
    if (!m) return;
    gp_hyper h;
    double jitter, ll;
    gp_get_hyper(m, &h, &jitter, &ll);
    CHECK(isfinite(ll) && isfinite(h.log_lengthscale[0]) && isfinite(h.log_noise_var));
    double mean, var, far[2] = {0.9, 0.0}, vfar;
    gp_predict(m, X, &mean, &var);
    CHECK_NEAR(mean, -2.5, 1e-12, 0);
    gp_predict(m, far, &mean, &vfar);
    CHECK_NEAR(mean, -2.5, 1e-12, 0);
    CHECK(var >= 0 && var < vfar);
    gp_free(m);
}

/* n > 100: the hyperparameters are searched on a seeded subset, the model uses all. */
static void test_large_n_subset(void) {
    enum { N = 160, D = 2 };
    static double X[N * D], y[N];
    fit_case c = {"bowl", N, D, 0.01, f_bowl};
    make_data(&c, 21, X, y);
    gp_fit_options opt = {2, 0, 5, NULL, 0};
    gp_model *m = NULL;
    CHECK_INT_EQ(gp_fit(X, y, N, D, &opt, &m, NULL, 0), 0);
    if (!m) return;
    double worst = 0;
    for (int i = 0; i < N; i++) { /* every point, not only the subset, is fitted */
        double mean, var;
        gp_predict(m, X + i * D, &mean, &var);
        worst = fmax(worst, fabs(mean - y[i]));
    }
    CHECK_MSG(worst < 0.05, "largest residual %g", worst);
    gp_free(m);
}

/* gp_predict_many at many points (more than one block of rows, and a last partial
 * block) gives what gp_predict gives at each; on a small model it matches the
 * reference; none is asked for without harm. */
static void test_predict_many(void) {
    enum { N = 160, D = 2, K = 300 };
    static double X[N * D], y[N], xs[K * D], mean[K], var[K];
    fit_case c = {"bowl", N, D, 0.01, f_bowl};
    make_data(&c, 23, X, y);
    double logl[D] = {log(0.3), log(0.2)};
    gp_hyper h = {logl, log(1.1), log(0.01), NULL, 0};
    gp_model *m = NULL;
    CHECK_INT_EQ(gp_fit_fixed(X, y, N, D, &h, &m, NULL, 0), 0);
    if (!m) return;
    uniform_points(xs, K, D, 24);
    for (size_t i = 0; i < D; i++) xs[i] = X[i]; /* a measured point: variance near 0 */
    gp_predict_many(m, xs, K, mean, var);
    int bad = 0;
    for (size_t j = 0; j < K; j++) {
        double m1, v1;
        gp_predict(m, xs + j * D, &m1, &v1);
        if (fabs(mean[j] - m1) > 1e-9 * (1 + fabs(m1)) || fabs(var[j] - v1) > 1e-9 ||
            !(var[j] >= 0)) {
            if (bad++ < 3)
                printf("  point %zu: many %g %g, one %g %g\n", j, mean[j], var[j], m1, v1);
        }
    }
    CHECK_INT_EQ(bad, 0);
    CHECK(var[0] < 0.02);
    gp_predict_many(m, xs, 0, mean, var);
    gp_free(m);

    double ls5[2] = {0.3, 0.6}, logl5[2] = {log(0.3), log(0.6)};
    gp_hyper h5 = {logl5, log(1.3), log(0.02), NULL, 0};
    CHECK_INT_EQ(gp_fit_fixed(X5, y5, 5, 2, &h5, &m, NULL, 0), 0);
    if (!m) return;
    ref_gp g;
    ref_fit(&g, 5, 2, X5, y5, ls5, 1.3, 0.02);
    gp_predict_many(m, xs, 7, mean, var);
    for (size_t j = 0; j < 7; j++) {
        double rm, rv;
        ref_predict(&g, xs + j * 2, &rm, &rv);
        CHECK_NEAR(mean[j], rm, 1e-10, 1e-10);
        CHECK_NEAR(var[j], rv, 1e-10, 1e-9);
    }
    gp_free(m);
}

/* ---- Grouped lengthscales ---- */

/* log ML + log prior at theta = (log l_0 .. log l_{L-1}, log s2, log s2n) with the
 * group map g (L lengthscales); NAN when the model cannot be built. */
static double log_post_g(const double *X, const double *y, size_t n, size_t d,
                         const double *theta, const size_t *g, size_t L) {
    gp_hyper h = {theta, theta[L], theta[L + 1], g, L};
    gp_model *m = NULL;
    if (gp_fit_fixed(X, y, n, d, &h, &m, NULL, 0) != 0) return NAN;
    double ll;
    gp_get_hyper(m, NULL, NULL, &ll);
    gp_free(m);
    for (size_t p = 0; p < L + 2; p++) {
        double mu = p < L ? prior_mu_l : p == L ? prior_mu_s2 : prior_mu_s2n;
        double sd = p < L ? prior_sd_l : p == L ? prior_sd_s2 : prior_sd_s2n;
        ll -= 0.5 * (theta[p] - mu) * (theta[p] - mu) / (sd * sd);
    }
    return ll;
}

static void test_groups(void) {
    /* Fixed: dims 0 and 2 share lengthscale 1 (0.2), dim 1 has lengthscale 0 (0.4):
     * the reference with (0.2, 0.4, 0.2). */
    double X[8 * 3], y[8];
    uniform_points(X, 8, 3, 31);
    for (int i = 0; i < 8; i++) y[i] = sin(4 * X[3 * i]) + X[3 * i + 1] - X[3 * i + 2];
    const size_t g[3] = {1, 0, 1};
    double logl[2] = {log(0.4), log(0.2)}, ls[3] = {0.2, 0.4, 0.2};
    gp_hyper h = {logl, log(1.5), log(0.01), g, 2};
    gp_model *m = NULL;
    CHECK_INT_EQ(gp_fit_fixed(X, y, 8, 3, &h, &m, NULL, 0), 0);
    if (m) {
        ref_gp r;
        ref_fit(&r, 8, 3, X, y, ls, 1.5, 0.01);
        gp_hyper got;
        double ll;
        gp_get_hyper(m, &got, NULL, &ll);
        CHECK(got.group != NULL && got.ngroups == 2);
        CHECK(got.group && got.group[0] == 1 && got.group[1] == 0 && got.group[2] == 1);
        CHECK(got.log_lengthscale[0] == logl[0] && got.log_lengthscale[1] == logl[1]);
        CHECK_NEAR(ll, r.loglik, 1e-10, 1e-10);
        static const double xs[][3] = {{0.2, 0.5, 0.9}, {0.8, 0.1, 0.4}};
        for (int i = 0; i < 2; i++) {
            double mean, var, rmean, rvar;
            gp_predict(m, xs[i], &mean, &var);
            ref_predict(&r, xs[i], &rmean, &rvar);
            CHECK_NEAR(mean, rmean, 1e-10, 1e-10);
            CHECK_NEAR(var, rvar, 1e-10, 1e-9);
        }
        /* what gp_get_hyper hands back builds the same model again */
        gp_model *again = NULL;
        CHECK_INT_EQ(gp_fit_fixed(X, y, 8, 3, &got, &again, NULL, 0), 0);
        double ll2;
        if (again) gp_get_hyper(again, NULL, NULL, &ll2);
        CHECK(again && ll2 == ll);
        gp_free(again);
        gp_free(m);
    }

    /* Fitted: the identity map is the same as none, bit for bit; without a map
     * gp_get_hyper gives none back. */
    fit_case c = {"sines 3-D", 25, 3, 0.05, f_sines};
    double Xf[25 * 3], yf[25];
    make_data(&c, 41, Xf, yf);
    const size_t id[3] = {0, 1, 2};
    gp_fit_options plain = {3, 0, 9, NULL, 0}, ident = {3, 0, 9, id, 3};
    gp_model *a = NULL, *b = NULL;
    CHECK_INT_EQ(gp_fit(Xf, yf, 25, 3, &plain, &a, NULL, 0), 0);
    CHECK_INT_EQ(gp_fit(Xf, yf, 25, 3, &ident, &b, NULL, 0), 0);
    if (a && b) {
        gp_hyper ha, hb;
        double lla, llb;
        gp_get_hyper(a, &ha, NULL, &lla);
        gp_get_hyper(b, &hb, NULL, &llb);
        CHECK(ha.group == NULL && ha.ngroups == 0 && hb.group != NULL && hb.ngroups == 3);
        CHECK(memcmp(ha.log_lengthscale, hb.log_lengthscale, 3 * sizeof(double)) == 0);
        CHECK(lla == llb && ha.log_noise_var == hb.log_noise_var);
    }
    gp_free(a);
    gp_free(b);

    /* Fitted with dims 0 and 1 tied: two lengthscales, and the fit is stationary in
     * all four hyperparameters (the gradient sums over the tied dimensions). */
    const size_t tie[3] = {0, 0, 1};
    gp_fit_options tied = {3, 0, 9, tie, 2};
    m = NULL;
    CHECK_INT_EQ(gp_fit(Xf, yf, 25, 3, &tied, &m, NULL, 0), 0);
    if (m) {
        gp_hyper ht;
        gp_get_hyper(m, &ht, NULL, NULL);
        CHECK_INT_EQ(ht.ngroups, 2);
        double theta[4] = {ht.log_lengthscale[0], ht.log_lengthscale[1], ht.log_signal_var,
                           ht.log_noise_var}, tp[4];
        double lp = log_post_g(Xf, yf, 25, 3, theta, tie, 2);
        for (size_t p = 0; p < 4; p++) {
            memcpy(tp, theta, sizeof tp);
            tp[p] = theta[p] + 1e-4;
            double up = log_post_g(Xf, yf, 25, 3, tp, tie, 2);
            tp[p] = theta[p] - 1e-4;
            double down = log_post_g(Xf, yf, 25, 3, tp, tie, 2);
            double fd = (up - down) / 2e-4;
            CHECK_MSG(fabs(fd) < 0.05, "tied: d(log posterior)/d theta_%zu = %g", p, fd);
            CHECK(lp >= up - 1e-5 && lp >= down - 1e-5);
        }
        gp_free(m);
    }

    /* Bad maps: a group past ngroups, or ngroups 0. */
    const size_t past[3] = {0, 2, 1};
    gp_fit_options bad = {1, 0, 0, past, 2};
    char log_[200] = "";
    m = (gp_model *)&m;
    CHECK_INT_EQ(gp_fit(Xf, yf, 25, 3, &bad, &m, log_, sizeof log_), TN_EINVAL);
    CHECK(m == NULL);
    CHECK_STR_CONTAINS(log_, "group[1] = 2, but there are 2 lengthscales");
    bad.group = id;
    bad.ngroups = 0;
    CHECK_INT_EQ(gp_fit(Xf, yf, 25, 3, &bad, &m, NULL, 0), TN_EINVAL);
    h.group = past;
    CHECK_INT_EQ(gp_fit_fixed(X, y, 8, 3, &h, &m, NULL, 0), TN_EINVAL);
    CHECK(m == NULL);
}

/* ---- Sparse points ---- */

/* Points whose coordinates are mostly 0 (a CATEGORICAL's one-hot with many categories)
 * take gp.c's compressed distances; they must give what the dense loop gives, bit for
 * bit. The same 120 points in 3 dimensions (a third of their coordinates exactly 0, so
 * that the merge meets a coordinate in one point only, in the other only, and in both)
 * are placed at dimensions 5, 20 and 47 of 48, the rest 0. Their models must be those
 * of the 3-dimensional points, which take the dense loop: fixed hyperparameters with
 * a lengthscale per dimension (the 45 zero dimensions' anything) and with a group map
 * that gives the 48 dimensions the 3 lengthscales; and fitted with that map (past 100
 * points, so on gp_fit's subset): the predictions, the log likelihood and the fitted
 * hyperparameters. */
static void test_sparse_matches_dense(void) {
    enum { N = 120, D = 3, DP = 48, K = 50 };
    static const size_t at[D] = {5, 20, 47};
    static double X[N * D], XP[N * DP], y[N], xs[K * D], xsp[K * DP];
    static double mean[2][K], var[2][K];
    tn_rng r;
    tn_rng_seed(&r, 41);
    uniform_points(X, N, D, 42);
    uniform_points(xs, K, D, 43);
    for (size_t k = 0; k < N * D; k++)
        if (tn_rng_uniform(&r) < 1.0 / 3) X[k] = 0.0;
    for (size_t k = 0; k < K * D; k++)
        if (tn_rng_uniform(&r) < 1.0 / 3) xs[k] = 0.0;
    for (size_t i = 0; i < N; i++) {
        const double *x = X + i * D;
        y[i] = sin(6 * x[0]) + x[1] - x[2] * x[2] + 0.01 * tn_rng_uniform(&r);
    }
    memset(XP, 0, sizeof XP);
    memset(xsp, 0, sizeof xsp);
    for (size_t j = 0; j < D; j++) {
        for (size_t i = 0; i < N; i++) XP[i * DP + at[j]] = X[i * D + j];
        for (size_t i = 0; i < K; i++) xsp[i * DP + at[j]] = xs[i * D + j];
    }
    size_t group[DP];
    double logl[D] = {log(0.3), log(0.5), log(0.2)}, loglp[DP];
    for (size_t j = 0; j < DP; j++) {
        group[j] = 0;
        loglp[j] = log(0.1 + 0.01 * (double)j); /* the zero dimensions' do not matter */
    }
    for (size_t j = 0; j < D; j++) {
        group[at[j]] = j;
        loglp[at[j]] = logl[j];
    }
    static const char *what[] = {"fixed, a lengthscale a dimension", "fixed, grouped",
                                 "fitted, grouped"};
    for (int c = 0; c < 3; c++) {
        gp_model *m[2] = {NULL, NULL};
        double ll[2];
        for (int v = 0; v < 2; v++) {
            const double *x = v ? XP : X;
            size_t d = v ? DP : D;
            if (c == 2) {
                gp_fit_options o = {2, 40, 777, v ? group : NULL, v ? D : 0};
                CHECK_INT_EQ(gp_fit(x, y, N, d, &o, &m[v], NULL, 0), 0);
            } else {
                gp_hyper h = {v && c == 0 ? loglp : logl, log(1.2), log(0.01),
                              v && c == 1 ? group : NULL, v && c == 1 ? D : 0};
                CHECK_INT_EQ(gp_fit_fixed(x, y, N, d, &h, &m[v], NULL, 0), 0);
            }
            if (!m[v]) {
                gp_free(m[0]);
                return;
            }
            gp_predict_many(m[v], v ? xsp : xs, K, mean[v], var[v]);
            gp_get_hyper(m[v], NULL, NULL, &ll[v]);
        }
        CHECK_MSG(!gp__sparse(m[0]) && gp__sparse(m[1]),
                  "%s: the 48-dimensional points should take the sparse form, the 3 not",
                  what[c]);
        CHECK_MSG(memcmp(mean[0], mean[1], sizeof mean[0]) == 0 &&
                      memcmp(var[0], var[1], sizeof var[0]) == 0,
                  "%s: the sparse points predict other bits than the dense ones", what[c]);
        CHECK_MSG(memcmp(&ll[0], &ll[1], sizeof ll[0]) == 0,
                  "%s: log likelihood %.17g, not %.17g", what[c], ll[1], ll[0]);
        if (c == 2) {
            gp_hyper a, b;
            gp_get_hyper(m[0], &a, NULL, NULL);
            gp_get_hyper(m[1], &b, NULL, NULL);
            CHECK_MSG(memcmp(a.log_lengthscale, b.log_lengthscale, D * sizeof(double)) == 0 &&
                          a.log_signal_var == b.log_signal_var &&
                          a.log_noise_var == b.log_noise_var,
                      "%s: other hyperparameters", what[c]);
        }
        double m1, v1; /* a measured point, by gp_predict */
        gp_predict(m[1], XP, &m1, &v1);
        CHECK_NEAR(m1, y[0], 0.05, 0.05);
        gp_free(m[0]);
        gp_free(m[1]);
    }
}

/* ---- Arguments ---- */

static void test_bad_arguments(void) {
    double X[6] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, y[3] = {1, 2, 3};
    double logl[2] = {0, 0};
    gp_hyper h = {logl, 0, -5, NULL, 0};
    gp_model *m = (gp_model *)&m; /* must come back NULL */
    char log_[200];

    X[3] = NAN;
    CHECK_INT_EQ(gp_fit(X, y, 3, 2, NULL, &m, log_, sizeof log_), TN_EINVAL);
    CHECK(m == NULL);
    CHECK_STR_CONTAINS(log_, "X[1][1] is not finite");
    CHECK_INT_EQ(gp_fit_fixed(X, y, 3, 2, &h, &m, log_, sizeof log_), TN_EINVAL);
    X[3] = 0.4;
    y[2] = INFINITY;
    CHECK_INT_EQ(gp_fit(X, y, 3, 2, NULL, &m, log_, sizeof log_), TN_EINVAL);
    CHECK_STR_CONTAINS(log_, "y[2] is not finite");
    CHECK_INT_EQ(gp_fit_fixed(X, y, 3, 2, &h, &m, NULL, 0), TN_EINVAL);
    y[2] = 3;
    y[0] = 1e308, y[1] = -1e308; /* finite, but the spread overflows */
    CHECK_INT_EQ(gp_fit(X, y, 3, 2, NULL, &m, log_, sizeof log_), TN_EINVAL);
    y[0] = 1, y[1] = 2;

    CHECK_INT_EQ(gp_fit(X, y, 0, 2, NULL, &m, NULL, 0), TN_EINVAL);
    CHECK_INT_EQ(gp_fit(X, y, 3, 0, NULL, &m, NULL, 0), TN_EINVAL);
    CHECK_INT_EQ(gp_fit(NULL, y, 3, 2, NULL, &m, NULL, 0), TN_EINVAL);
    CHECK_INT_EQ(gp_fit(X, NULL, 3, 2, NULL, &m, NULL, 0), TN_EINVAL);
    CHECK_INT_EQ(gp_fit(X, y, 3, 2, NULL, NULL, NULL, 0), TN_EINVAL);
    gp_fit_options bad = {-1, 0, 0, NULL, 0};
    CHECK_INT_EQ(gp_fit(X, y, 3, 2, &bad, &m, NULL, 0), TN_EINVAL);
    bad = (gp_fit_options){1, -3, 0, NULL, 0};
    CHECK_INT_EQ(gp_fit(X, y, 3, 2, &bad, &m, NULL, 0), TN_EINVAL);

    CHECK_INT_EQ(gp_fit_fixed(X, y, 3, 2, NULL, &m, NULL, 0), TN_EINVAL);
    logl[1] = NAN;
    CHECK_INT_EQ(gp_fit_fixed(X, y, 3, 2, &h, &m, log_, sizeof log_), TN_EINVAL);
    CHECK_STR_CONTAINS(log_, "out of range");
    logl[1] = 0;
    h.log_noise_var = INFINITY;
    CHECK_INT_EQ(gp_fit_fixed(X, y, 3, 2, &h, &m, NULL, 0), TN_EINVAL);
    h.log_noise_var = -5;
    h.log_signal_var = 800; /* exp overflows */
    CHECK_INT_EQ(gp_fit_fixed(X, y, 3, 2, &h, &m, NULL, 0), TN_EINVAL);
    CHECK(m == NULL);

    /* finite, but s2 + s2n overflows: no jitter gives a factor */
    h.log_signal_var = 709.5;
    h.log_noise_var = 709.5;
    CHECK_INT_EQ(gp_fit_fixed(X, y, 3, 2, &h, &m, log_, sizeof log_), TN_ECORRUPT);
    CHECK(m == NULL);
    CHECK_STR_CONTAINS(log_, "not positive definite");

    gp_free(NULL);
}

static void test_options_and_seeds(void) {
    fit_case c = {"sines", 20, 3, 0.05, f_sines};
    double X[20 * 3], y[20];
    make_data(&c, 31, X, y);
    double first[5] = {0};
    for (int rep = 0; rep < 2; rep++) {
        gp_fit_options opt = {4, 50, 12345, NULL, 0};
        gp_model *m = NULL;
        CHECK_INT_EQ(gp_fit(X, y, 20, 3, &opt, &m, NULL, 0), 0);
        if (!m) return;
        gp_hyper h;
        double now[5];
        gp_get_hyper(m, &h, NULL, NULL);
        memcpy(now, h.log_lengthscale, 3 * sizeof(double));
        now[3] = h.log_signal_var;
        now[4] = h.log_noise_var;
        if (rep == 0) memcpy(first, now, sizeof(now));
        else CHECK(memcmp(first, now, sizeof(now)) == 0); /* bit for bit */
        gp_free(m);
    }
    /* one start, one iteration: still a model */
    gp_fit_options tiny = {1, 1, 0, NULL, 0};
    gp_model *m = NULL;
    CHECK_INT_EQ(gp_fit(X, y, 20, 3, &tiny, &m, NULL, 0), 0);
    gp_free(m);
}

/* ---- log EI ---- */

/* EI in closed form, fine where it is not tiny. */
static double ei_exact(double mean, double sd, double best) {
    double z = (mean - best) / sd;
    return sd * (z * 0.5 * erfc(-z / sqrt(2.0)) + exp(-0.5 * z * z) / sqrt(2 * M_PI));
}

static void test_log_ei_matches_exact(void) {
    static const double cases[][3] = {/* mean, sd, best */
        {0.0, 1.0, 0.0}, {1.0, 1.0, 0.0}, {-1.0, 1.0, 0.0}, {3.0, 0.5, 1.0},
        {-0.3, 2.0, 0.4}, {10.0, 1e-3, 9.999}, {-2.0, 0.7, 0.5}, {1e6, 10.0, 0.0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double want = ei_exact(cases[i][0], cases[i][1], cases[i][2]);
        CHECK_NEAR(exp(gp_log_ei(cases[i][0], cases[i][1], cases[i][2])), want, 0, 1e-12);
    }
}

static void test_log_ei_tail(void) {
    /* log(z Phi(z) + phi(z)) by mpmath 1.3.0 at 50 digits:
     *   mp.log(z*mp.ncdf(z) + mp.npdf(z)) */
    static const double ref[][2] = {
        {-5.0, -16.74430116266099014327},   {-7.5, -33.12409434553469940304},
        {-10.0, -55.55312203612235592718},  {-20.0, -206.9178385094250978539},
        {-40.0, -808.2985683566199602409},  {-100.0, -5010.129578800249792325},
        {-1000.0, -500014.7344520911584469}, {-2.0, -4.76878352391711415688103},
        {-4.9, -16.21281640789773586029094}, {-5.1, -17.28518577470483413956118},
    };
    for (size_t i = 0; i < sizeof(ref) / sizeof(ref[0]); i++) {
        double z = ref[i][0];
        double got = gp_log_ei(z, 1.0, 0.0);
        CHECK(isfinite(got));
        /* atol 1e-9 in log EI is a relative error of 1e-9 in EI */
        CHECK_NEAR(got, ref[i][1], 1e-9, 1e-14);
        /* scaled: mean, sd and best in other units */
        double sd = 0.25, best = 3.0;
        CHECK_NEAR(gp_log_ei(best + z * sd, sd, best), ref[i][1] + log(sd), 1e-9, 1e-14);
    }
    CHECK(isfinite(gp_log_ei(-1e9, 1.0, 0.0)));
}

static void test_log_ei_monotone(void) {
    double prev = -INFINITY;
    int bad = 0;
    for (int i = 0; i <= 13000; i++) {
        double mean = -60.0 + 0.005 * i; /* z from -60 to 5 */
        double v = gp_log_ei(mean, 1.0, 0.0);
        if (!isfinite(v) || !(v > prev)) bad++;
        prev = v;
    }
    CHECK_INT_EQ(bad, 0);
}

/* ---- The kernel's exponential ---- */

/* gp.c's e^-q against long double expl: within 1.5 ulp of the exact value over the
 * whole range it covers (1.14 measured; the Taylor series one term shorter is 2.4 off),
 * exactly 1 at 0, 0 where e^-q is below DBL_MIN, NaN for NaN. */
static double ulps_off(double got, long double want) {
    double w = (double)want, ulp = nextafter(w, INFINITY) - w;
    return (double)fabsl((long double)got - want) / ulp;
}

static void test_exp_neg(void) {
    double worst = 0, at = 0;
    tn_rng rng;
    tn_rng_seed(&rng, 7);
    for (int i = 0; i < 400000; i++) {
        /* a sweep over [0, 708.39] and random points, many of them small */
        double q = i < 200000 ? 708.39 * i / 199999.0
                              : (i & 1 ? 708.39 : 5.0) * tn_rng_uniform(&rng);
        double e = ulps_off(gp__exp_neg(q), expl(-(long double)q));
        if (e > worst) {
            worst = e;
            at = q;
        }
    }
    CHECK_MSG(worst <= 1.5, "e^-q is %.3f ulp off at q = %.17g", worst, at);
    CHECK(gp__exp_neg(0.0) == 1.0);
    CHECK(gp__exp_neg(708.39) >= DBL_MIN);
    CHECK(gp__exp_neg(708.4) == 0.0 && gp__exp_neg(1e6) == 0.0 && gp__exp_neg(INFINITY) == 0.0);
    CHECK(isnan(gp__exp_neg(NAN)));
}

/* ---- Cost ---- */

static void test_timing(void) {
    enum { D = 6 };
    static const size_t ns[] = {100, 500};
    static double X[500 * D], y[500];
    for (size_t k = 0; k < 2; k++) {
        size_t n = ns[k];
        uniform_points(X, n, D, 41);
        for (size_t i = 0; i < n; i++) {
            double s = 0;
            for (size_t j = 0; j < D; j++) s += sin(3 * X[i * D + j] + (double)j);
            y[i] = s;
        }
        gp_fit_options opt = {5, 200, 1, NULL, 0};
        gp_model *m = NULL;
        double t0 = seconds();
        int rc = gp_fit(X, y, n, D, &opt, &m, NULL, 0);
        double t1 = seconds();
        double mean, var;
        int reps = 200;
        for (int r = 0; r < reps && m; r++) gp_predict(m, X + (size_t)r % n * D, &mean, &var);
        double t2 = seconds();
        CHECK_INT_EQ(rc, 0);
        printf("timing: gp_fit n = %zu, d = %d, 5 starts: %.3f s; gp_predict %.1f us\n", n, D,
               t1 - t0, (t2 - t1) / reps * 1e6);
        gp_free(m);
    }
}

int main(void) {
    RUN(test_fixed_matches_reference);
    RUN(test_log_evidence_units);
    RUN(test_interpolates_and_reverts_to_prior);
    RUN(test_fit_is_stationary);
    RUN(test_lengthscales_recovered);
    RUN(test_duplicates_need_jitter);
    RUN(test_all_equal_y);
    RUN(test_single_point);
    RUN(test_large_n_subset);
    RUN(test_predict_many);
    RUN(test_groups);
    RUN(test_sparse_matches_dense);
    RUN(test_bad_arguments);
    RUN(test_options_and_seeds);
    RUN(test_log_ei_matches_exact);
    RUN(test_log_ei_tail);
    RUN(test_log_ei_monotone);
    RUN(test_exp_neg);
    RUN(test_timing);
    return check_summary();
}
