/*
 * gp.c — Gaussian-process regression for Bayesian optimisation (see gp.h): the
 * Matern 5/2 kernel with one lengthscale per dimension, a constant mean fitted by
 * generalised least squares, hyperparameters by maximum a posteriori under weak
 * log-normal priors (GSL's BFGS with analytic gradients, several seeded starts),
 * growing jitter when the Cholesky factor fails, and a numerically stable log
 * expected improvement. Design, priors, bounds and measured cost:
 * docs/bayesian-optimisation.md, "The Gaussian process".
 *
 * Notation (as in gp.h; shapes in comments as (n, d) etc.):
 *   n, d      observations, dimensions;  L lengthscales;  P = L + 2 hyperparameters
 *   g (d)     the lengthscale of each dimension: g_j = j (L = d), or a group map
 *   X (n, d)  points;  y (n) values;  z = (y - ybar) / sd  standardised values
 *   theta (P) (log l_1 .. log l_L, log s2, log s2n); s2 signal, s2n noise variance
 *   r         scaled distance, r^2 = sum_j ((x_j - x'_j) / l_{g_j})^2;  q = sqrt(5) r
 *   k(r)      s2 (1 + q + q^2 / 3) exp(-q)            (Matern 5/2)
 *   K (n, n)  k(x_a, x_b) + (s2n + jitter) [a == b];  L its lower Cholesky factor
 *   m         constant mean, (1' K^-1 z) / (1' K^-1 1)
 *   alpha (n) K^-1 (z - m 1)
 *   log ML    -1/2 (z - m 1)' alpha - sum_i log L_ii - n/2 log(2 pi)
 *   F(theta)  -log ML - log prior  (minimised)
 *   dF/dtheta_p = -1/2 tr((alpha alpha' - K^-1) dK/dtheta_p) + dprior_p, with
 *             dK/dlog l_k = s2 5/3 (1 + q) exp(-q) sum_{j: g_j = k} ((x_j - x'_j) / l_k)^2,
 *             dK/dlog s2 = K - (s2n + jitter) I,  dK/dlog s2n = s2n I.
 *   u (P)     unconstrained coordinates the minimiser sees:
 *             theta_p = lo_p + (hi_p - lo_p) sigmoid(u_p), so theta stays in its box.
 *   h(z)      z Phi(z) + phi(z); EI = sd h((mean - best) / sd)
 */
#include "search/gp.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_math.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_vector.h>

#include "common/rng.h"
#include "common/status.h"
#include "search/par.h"

/* OpenBLAS, which GSL's BLAS calls go to (search/CMakeLists.txt), on one thread: the
 * GP's matrices (at most a few hundred rows) are factored faster on one than on
 * several. Declared here: OpenBLAS's cblas.h clashes with GSL's gsl_cblas.h. */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);

/* The loops over a row of points (distances, kernel values, the gradient's sums) are
 * written to vectorise; on x86-64 GCC also builds them for AVX2 and picks that at run
 * time where the CPU has it. Both builds do the same operations in the same order
 * (gp.c is built with -ffp-contract=off: no a * b + c becomes one FMA), so they give
 * the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define VECTORISE __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define VECTORISE
#endif

/* ---- Constants: priors, box, jitter, minimiser (all documented in the design) ---- */

#define SQRT5 2.23606797749978969641
#define LOG_2PI 1.83787706640934548356         /* log(2 pi) */
#define HALF_LOG_2PI 0.91893853320467274178    /* log(sqrt(2 pi)) */

/* Priors on theta: independent normals on the logs, N(mean, sd^2). */
#define PRIOR_LOG_L_MEAN (-0.69314718055994531) /* log 0.5 */
#define PRIOR_LOG_L_SD 1.5
#define PRIOR_LOG_S2_MEAN 0.0                    /* log 1 */
#define PRIOR_LOG_S2_SD 1.5
#define PRIOR_LOG_S2N_MEAN (-6.9077552789821371) /* log 1e-3 */
#define PRIOR_LOG_S2N_SD 2.0

/* The box theta is kept in, as (low, high) of the variance or lengthscale itself. */
#define L_MIN 1e-3
#define L_MAX 1e3
#define S2_MIN 1e-4
#define S2_MAX 1e4
#define S2N_MIN 1e-8
#define S2N_MAX 1.0

/* Default theta: start 0 of every fit, and the last resort when no start works. */
#define DEFAULT_L 0.5
#define DEFAULT_S2 1.0
#define DEFAULT_S2N 1e-3

/* Jitter ladder, relative to mean(diag K) = s2 + s2n: 1e-10, 1e-9, ..., 1e-2. */
#define JITTER_FIRST 1e-10
#define JITTER_LAST 1e-2

/* Minimiser: vector_bfgs2 in u; stop when |grad_u F| < GRAD_TOL. */
#define BFGS_STEP 0.1
#define BFGS_LINE_TOL 0.3
#define GRAD_TOL 1e-2
#define DEFAULT_RESTARTS 5
#define DEFAULT_ITERATIONS 200

/* Past FIT_MAX_POINTS observations the hyperparameters are searched on a seeded
 * random subset of that many points (the model itself uses all n). */
#define FIT_MAX_POINTS 100

/* Points whose coordinates are mostly 0 take the sparse distances past this many
 * dimensions (below it the dense loop is as fast). */
#define SPARSE_MIN_D 16

/* ---- Sparse points ----
 * A CATEGORICAL's one-hot takes k coordinates of which one is not 0 (none where the
 * parameter is inactive), so with many categories almost every coordinate of every
 * point is 0, and a dense distance costs O(d) where O(coordinates not 0) would do:
 * with 5,000 categories a suggestion took seconds, nearly all of them in the
 * distances of the fit and of the candidates. Where at most a quarter of the points'
 * coordinates are not 0, they are kept compressed by rows (CSR) as well, and each
 * distance merges the two rows' coordinates in increasing order. A coordinate where
 * both points are 0 adds t*t = +0 to the dense sum (and gab t t = +-0 to a gradient
 * term), which leaves it as it was: both forms give the same bits. */
typedef struct gp_sparse {
    size_t *start; /* (n + 1) row i's coordinates are [start[i], start[i + 1]) */
    uint32_t *idx; /* their dimensions, increasing within a row */
    double *val;   /* their values */
} gp_sparse;

/* The rows of X (n, d) compressed, or NULL where that does not pay (d small, or more
 * than a quarter of the coordinates not 0). Yours to free with sparse_free. */
static gp_sparse *sparse_new(const double *X, size_t n, size_t d) {
    if (d < SPARSE_MIN_D || d > UINT32_MAX) return NULL;
    size_t nnz = 0;
    for (size_t k = 0; k < n * d; k++) nnz += X[k] != 0.0;
    if (nnz > n * d / 4) return NULL;
    gp_sparse *s = tn_xmalloc(sizeof *s);
    s->start = tn_xmalloc((n + 1) * sizeof *s->start);
    s->idx = tn_xmalloc((nnz ? nnz : 1) * sizeof *s->idx);
    s->val = tn_xmalloc((nnz ? nnz : 1) * sizeof *s->val);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        s->start[i] = k;
        for (size_t j = 0; j < d; j++)
            if (X[i * d + j] != 0.0) {
                s->idx[k] = (uint32_t)j;
                s->val[k++] = X[i * d + j];
            }
    }
    s->start[n] = k;
    return s;
}

static void sparse_free(gp_sparse *s) {
    if (!s) return;
    free(s->start);
    free(s->idx);
    free(s->val);
    free(s);
}

/* A point x (d values) compressed into idx and val (room for d each); returns how
 * many coordinates are not 0. */
static size_t sparse_row(const double *x, size_t d, uint32_t *idx, double *val) {
    size_t k = 0;
    for (size_t j = 0; j < d; j++)
        if (x[j] != 0.0) {
            idx[k] = (uint32_t)j;
            val[k++] = x[j];
        }
    return k;
}

/* The squared scaled distance between two compressed rows (a: an coordinates, b: bn),
 * the sum of t^2 over the dimensions, t = (x_j - x'_j) / l_j, in increasing j as the
 * dense loop takes them; when g is not NULL, also adds gab t t into g[j gs] for each
 * (work_gradient's sum, as grad_row adds it). */
static inline double sparse_r2(const uint32_t *ai, const double *av, size_t an,
                               const uint32_t *bi, const double *bv, size_t bn,
                               const double *inv_l, double *g, size_t gs, double gab) {
    double r2 = 0;
    size_t p = 0, q = 0;
    while (p < an || q < bn) {
        uint32_t ja = p < an ? ai[p] : UINT32_MAX, jb = q < bn ? bi[q] : UINT32_MAX;
        uint32_t j = ja < jb ? ja : jb;
        double xa = ja == j ? av[p++] : 0.0, xb = jb == j ? bv[q++] : 0.0;
        double t = (xa - xb) * inv_l[j];
        r2 += t * t;
        if (g) g[j * gs] += gab * t * t;
    }
    return r2;
}

/* Row i of s as the three arguments of sparse_r2. */
#define SPARSE_ROW(s, i) (s)->idx + (s)->start[i], (s)->val + (s)->start[i], \
                         (s)->start[(i) + 1] - (s)->start[i]

/* ---- The model ---- */

struct gp_model {
    size_t n, d;
    size_t nl;         /* lengthscales */
    size_t *group;     /* (d) each dimension's lengthscale; NULL: dimension j has l_j */
    double *XT;        /* (d, n) training points by coordinate: XT[j n + i] = x_ij;
                          NULL where sp holds them */
    gp_sparse *sp;     /* the points compressed, where mostly 0 (sparse_new); else NULL */
    double y_mean;     /* z = (y - y_mean) / y_sd */
    double y_sd;
    double *log_l;     /* (nl) log lengthscales */
    double *inv_l;     /* (d) 1 / l_{g_j} */
    double log_s2;     /* log signal variance (z units) */
    double log_s2n;    /* log noise variance (z units) */
    double s2;         /* exp(log_s2) */
    double m;          /* constant mean, z units */
    gsl_matrix *L;     /* (n, n) lower triangle: Cholesky factor of K (jitter included) */
    gsl_vector *alpha; /* (n) K^-1 (z - m 1) */
    double jitter;     /* added to K's diagonal, z units; 0 when none was needed */
    double log_lik;    /* log ML of z at theta (m profiled out) */
};

/* ---- Workspace for one data set: K, its factor, the solves ---- */

typedef struct gp_work {
    size_t n, d;
    size_t nl;          /* lengthscales: theta has nl + 2 values */
    const size_t *g;    /* (d) each dimension's lengthscale, not owned */
    const double *X;    /* (n, d) points, not owned */
    double *XT;         /* (d, n) the same by coordinate, where sp is NULL; else NULL */
    gp_sparse *sp;      /* X compressed, where it is mostly 0 (sparse_new); else NULL */
    const double *z;    /* (n) standardised values, not owned */
    gsl_matrix *A;      /* (n, n) K in the lower triangle, then L; after the gradient,
                           K^-1 (the upper triangle is not used) */
    gsl_matrix *G;      /* (n, n) strict lower triangle (b > a): s2 5/3 (1 + q) exp(-q),
                           the lengthscales' dK factor; strict upper: not used */
    double *kv;         /* (n, n) strict lower triangle: k(x_a, x_b), kept for the
                           gradient (A's is factored) */
    double *acc;        /* (d + 1, n) the gradient's sums, per dimension and column */
    double *wrow;       /* (n) grad_row's scratch */
    gsl_vector *ki1;    /* (n) K^-1 1 */
    gsl_vector *kiz;    /* (n) K^-1 z */
    gsl_vector *alpha;  /* (n) K^-1 (z - m 1) */
    gsl_vector *ones;   /* (n) all 1 */
    double *inv_l;      /* (d) 1 / l_{g_j} */
    double *theta;      /* (P) theta at the last objective call */
    double *dtheta;     /* (P) dtheta / du there */
    double *gtheta;     /* (P) gradient of -log ML w.r.t. theta there */
    double *u_last;     /* (P) u at the last objective call */
    int have_factor;    /* A holds L, alpha and log_lik for u_last (the minimiser often
                           asks for the gradient where it has just asked for F) */
    double s2, s2n;     /* at the last factorisation */
    double m;           /* constant mean at the last solve */
    double jitter;      /* at the last factorisation */
    double log_lik;     /* at the last solve */
} gp_work;

static void work_init(gp_work *w, const double *X, const double *z, size_t n, size_t d,
                      const size_t *g, size_t nl) {
    w->n = n;
    w->d = d;
    w->nl = nl;
    w->g = g;
    w->X = X;
    w->sp = sparse_new(X, n, d);
    w->XT = NULL;
    if (!w->sp) {
        w->XT = tn_xmalloc(n * d * sizeof(double));
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < d; j++) w->XT[j * n + i] = X[i * d + j];
    }
    w->z = z;
    w->A = gsl_matrix_alloc(n, n);
    w->G = gsl_matrix_alloc(n, n);
    w->kv = tn_xmalloc(n * n * sizeof(double));
    w->acc = tn_xmalloc((d + 1) * n * sizeof(double));
    w->wrow = tn_xmalloc(n * sizeof(double));
    w->ki1 = gsl_vector_alloc(n);
    w->kiz = gsl_vector_alloc(n);
    w->alpha = gsl_vector_alloc(n);
    w->ones = gsl_vector_alloc(n);
    if (!w->A || !w->G || !w->ki1 || !w->kiz || !w->alpha || !w->ones) {
        fprintf(stderr, "fatal: out of memory allocating a %zu x %zu GP matrix\n", n, n);
        abort();
    }
    gsl_vector_set_all(w->ones, 1.0);
    w->inv_l = tn_xmalloc(d * sizeof(double));
    w->theta = tn_xmalloc((nl + 2) * sizeof(double));
    w->dtheta = tn_xmalloc((nl + 2) * sizeof(double));
    w->gtheta = tn_xmalloc((nl + 2) * sizeof(double));
    w->u_last = tn_xcalloc(nl + 2, sizeof(double));
    w->have_factor = 0;
    w->s2 = w->s2n = w->m = w->jitter = w->log_lik = 0;
}

static void work_clear(gp_work *w) {
    gsl_matrix_free(w->A);
    gsl_matrix_free(w->G);
    gsl_vector_free(w->ki1);
    gsl_vector_free(w->kiz);
    gsl_vector_free(w->alpha);
    gsl_vector_free(w->ones);
    free(w->inv_l);
    free(w->theta);
    free(w->dtheta);
    free(w->gtheta);
    free(w->u_last);
    free(w->XT);
    free(w->kv);
    free(w->acc);
    free(w->wrow);
    sparse_free(w->sp);
    memset(w, 0, sizeof(*w));
}

/* ---- Rows of kernel values ---- */

/* e^-q for q >= 0, within about 1 ulp of the exact value (tests/search/test_gp.c,
 * test_exp_neg), written to vectorise (libm's exp is a call per value): 0 past
 * q = 708.39 (e^-q is within 0.01% of DBL_MIN there), and NaN for NaN. x = -q = k ln 2 + r with k
 * an integer and |r| <= ln(2) / 2; e^x = 2^k e^r, e^r by its Taylor series to r^13
 * (the first term left out is below 2e-16 relative), 2^k put into the exponent bits.
 * k comes from rounding x log2(e) by adding 1.5 2^52, whose low bits are then k. */
#define EXP_NEG_MAX 708.39                  /* e^-q > DBL_MIN up to here: k >= -1022 */
#define EXP_ROUND 6755399441055744.0        /* 1.5 * 2^52 */
#define EXP_LN2_HI 6.93147180369123816490e-01 /* ln 2 to 32 bits: k LN2_HI is exact */
#define EXP_LN2_LO 1.90821492927058770002e-10 /* ... and the rest */

static inline double exp_neg(double q) {
    double x = q > EXP_NEG_MAX ? -EXP_NEG_MAX : -q;
    double t = x * M_LOG2E + EXP_ROUND;
    double k = t - EXP_ROUND;
    double r = (x - k * EXP_LN2_HI) - k * EXP_LN2_LO;
    double p = 1.0 / 6227020800.0; /* 1 / 13! */
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    uint64_t bits; /* t's low bits hold k, -1022 <= k <= 0: 2^k's exponent field */
    memcpy(&bits, &t, sizeof bits);
    bits = (bits + 1023) << 52;
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    return q > EXP_NEG_MAX ? 0.0 : p * scale;
}

double gp__exp_neg(double q) { return exp_neg(q); }

/* r2[i] = sum_j ((x_j - x_ij) / l_j)^2, the scaled squared distance from x (d values)
 * to each of the first m points of XT (d, ld), in increasing j. */
VECTORISE static void dist2_row(const double *restrict x, const double *restrict XT, size_t ld,
                                size_t m, size_t d, const double *restrict inv_l,
                                double *restrict r2) {
    for (size_t i = 0; i < m; i++) r2[i] = 0.0;
    for (size_t j = 0; j < d; j++) {
        const double *c = XT + j * ld;
        double xj = x[j], il = inv_l[j];
        for (size_t i = 0; i < m; i++) {
            double t = (xj - c[i]) * il;
            r2[i] += t * t;
        }
    }
}

/* In place: r2 (n) scaled squared distances become the kernel values s2 k(r). */
VECTORISE static void matern_row(double *restrict v, size_t n, double s2) {
    for (size_t i = 0; i < n; i++) {
        double q = SQRT5 * sqrt(v[i]);
        v[i] = s2 * (1.0 + q + q * q / 3.0) * exp_neg(q);
    }
}

/* The same with the lengthscales' dK factor s2 5/3 (1 + q) exp(-q) into dk (n) and a
 * copy of the kernel values into k2 (n). */
VECTORISE static void matern_row_dk(double *restrict v, double *restrict k2, double *restrict dk,
                                    size_t n, double s2) {
    for (size_t i = 0; i < n; i++) {
        double q = SQRT5 * sqrt(v[i]), e = exp_neg(q);
        double k = s2 * (1.0 + q + q * q / 3.0) * e;
        v[i] = k;
        k2[i] = k;
        dk[i] = s2 * (5.0 / 3.0) * (1.0 + q) * e;
    }
}

/* One row b of the gradient's sum over the pairs a < b (a = 0 .. b - 1): with
 * w_ab = 2 (alpha_a alpha_b - Ki_ab), adds w_ab dk_ab ((x_bj - x_aj) / l_j)^2 into
 * acc[j n + a] for each dimension j (d of them) and w_ab k_ab into acc[d n + a]. */
VECTORISE static void grad_row(const double *restrict xb, const double *restrict XT, size_t n,
                               size_t b, size_t d, const double *restrict inv_l,
                               const double *restrict al, const double *restrict ki,
                               const double *restrict dk, const double *restrict kv,
                               double *restrict wab, double *restrict acc) {
    double ab = al[b];
    for (size_t a = 0; a < b; a++) wab[a] = 2.0 * (ab * al[a] - ki[a]);
    double *as2 = acc + d * n;
    for (size_t a = 0; a < b; a++) as2[a] += wab[a] * kv[a];
    for (size_t a = 0; a < b; a++) wab[a] *= dk[a];
    for (size_t j = 0; j < d; j++) {
        const double *c = XT + j * n;
        double *aj = acc + j * n, xj = xb[j], il = inv_l[j];
        for (size_t a = 0; a < b; a++) {
            double t = (xj - c[a]) * il;
            aj[a] += wab[a] * t * t;
        }
    }
}

/* Whether A's lower triangle holds a usable factor: GSL succeeded and every pivot
 * L_ii^2 is above rounding level, n eps mean(diag K). */
static int factor_usable(const gsl_matrix *A, int status, double diag) {
    if (status != GSL_SUCCESS) return 0;
    double tol = (double)A->size1 * DBL_EPSILON * diag;
    for (size_t i = 0; i < A->size1; i++) {
        double p = gsl_matrix_get(A, i, i);
        if (!isfinite(p) || p * p <= tol) return 0;
    }
    return 1;
}

/* Row b of K's strict lower triangle (a < b) into A, kv and G (matern_row_dk). */
static void kernel_row(gp_work *w, size_t b) {
    size_t n = w->n, d = w->d;
    double *Ab = w->A->data + b * w->A->tda, *Gb = w->G->data + b * w->G->tda;
    if (w->sp) {
        for (size_t a = 0; a < b; a++)
            Ab[a] = sparse_r2(SPARSE_ROW(w->sp, b), SPARSE_ROW(w->sp, a), w->inv_l, NULL, 0, 0);
    } else {
        dist2_row(w->X + b * d, w->XT, n, b, d, w->inv_l, Ab);
    }
    matern_row_dk(Ab, w->kv + b * n, Gb, b, w->s2);
}

/* Builds K for theta (P values) in w->A's lower triangle (and kv, G), then factors
 * it, adding jitter 1e-10, 1e-9, ..., 1e-2 times mean(diag K) until the factor is
 * usable. Returns 0 (A's lower triangle is L, w->jitter set) or -1 (no jitter
 * worked, or theta does not give finite positive variances and lengthscales). */
static int work_factor(gp_work *w, const double *theta) {
    size_t n = w->n, d = w->d, nl = w->nl;
    for (size_t j = 0; j < d; j++) {
        w->inv_l[j] = exp(-theta[w->g[j]]);
        if (!isfinite(w->inv_l[j])) return -1;
    }
    w->s2 = exp(theta[nl]);
    w->s2n = exp(theta[nl + 1]);
    if (!(w->s2 > 0) || !isfinite(w->s2) || !isfinite(w->s2n)) return -1;

    double diag = w->s2 + w->s2n;
    double *A = w->A->data, *kv = w->kv;
    size_t ta = w->A->tda;
    for (size_t b = 0; b < n; b++) {
        kernel_row(w, b);
        A[b * ta + b] = diag;
    }

    w->jitter = 0;
    int status = gsl_linalg_cholesky_decomp1(w->A);
    if (factor_usable(w->A, status, diag)) return 0;
    for (double rel = JITTER_FIRST; rel <= JITTER_LAST * 1.0000001; rel *= 10) {
        /* decomp1 overwrote the lower triangle: K again from kv */
        w->jitter = rel * diag;
        for (size_t b = 0; b < n; b++) {
            memcpy(A + b * ta, kv + b * n, b * sizeof *A);
            A[b * ta + b] = diag + w->jitter;
        }
        status = gsl_linalg_cholesky_decomp1(w->A);
        if (factor_usable(w->A, status, diag)) return 0;
    }
    return -1;
}

/* x = K^-1 b with the factor in A's lower triangle. */
static int chol_solve(const gsl_matrix *A, const gsl_vector *b, gsl_vector *x) {
    int status = gsl_vector_memcpy(x, b);
    if (status == GSL_SUCCESS) status = gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit, A, x);
    if (status == GSL_SUCCESS) status = gsl_blas_dtrsv(CblasLower, CblasTrans, CblasNonUnit, A, x);
    return status;
}

/* After work_factor: the mean m, alpha and the log marginal likelihood. Returns 0, or
 * -1 when a GSL call fails or the result is not finite. */
static int work_solve(gp_work *w) {
    size_t n = w->n;
    gsl_vector_const_view zv = gsl_vector_const_view_array(w->z, n);
    if (chol_solve(w->A, w->ones, w->ki1) != GSL_SUCCESS) return -1;
    if (chol_solve(w->A, &zv.vector, w->kiz) != GSL_SUCCESS) return -1;
    double su = 0, sv = 0;
    for (size_t i = 0; i < n; i++) {
        su += gsl_vector_get(w->ki1, i);
        sv += gsl_vector_get(w->kiz, i);
    }
    if (!(su > 0) || !isfinite(sv)) return -1;
    w->m = sv / su;
    /* alpha = K^-1 z - m K^-1 1; fit = (z - m 1)' alpha */
    double fit = 0, logdet = 0;
    for (size_t i = 0; i < n; i++) {
        double al = gsl_vector_get(w->kiz, i) - w->m * gsl_vector_get(w->ki1, i);
        gsl_vector_set(w->alpha, i, al);
        fit += (w->z[i] - w->m) * al;
        logdet += log(gsl_matrix_get(w->A, i, i));
    }
    w->log_lik = -0.5 * fit - logdet - 0.5 * (double)n * LOG_2PI;
    return isfinite(w->log_lik) ? 0 : -1;
}

/* Gradient of -log ML w.r.t. theta (P values) into g, after work_solve. Turns A
 * into K^-1. Returns 0 or -1. */
static int work_gradient(gp_work *w, double *g) {
    size_t n = w->n, d = w->d, nl = w->nl;
    if (gsl_linalg_cholesky_invert(w->A) != GSL_SUCCESS) return -1;
    const double *Ki = w->A->data, *G = w->G->data, *al = w->alpha->data;
    size_t ta = w->A->tda, tg = w->G->tda;
    for (size_t p = 0; p < nl + 2; p++) g[p] = 0;
    /* W = alpha alpha' - K^-1; dF_p = -1/2 sum_ab W_ab dK_ab, and both are symmetric:
     * pairs a < b count twice. dK/dlog s2 = s2 corr (diagonal s2, k below it in kv),
     * dK/dlog s2n = s2n I, dK/dlog l_k = G sum over the dimensions j of lengthscale k
     * of (x_j - x'_j)^2 / l_k^2. The pairs' terms are summed per dimension and column
     * a (acc), row by row, then over the columns. */
    double gs2 = 0, gs2n = 0;
    for (size_t a = 0; a < n; a++) {
        double waa = al[a] * al[a] - Ki[a * ta + a];
        gs2 += waa * w->s2;
        gs2n += waa * w->s2n;
    }
    double *acc = w->acc;
    memset(acc, 0, (d + 1) * n * sizeof *acc);
    for (size_t b = 1; b < n; b++) {
        const double *Kib = Ki + b * ta, *Gb = G + b * tg, *kvb = w->kv + b * n;
        if (w->sp) {
            double *as2 = acc + d * n;
            for (size_t a = 0; a < b; a++) {
                double wb = 2.0 * (al[b] * al[a] - Kib[a]);
                as2[a] += wb * kvb[a];
                sparse_r2(SPARSE_ROW(w->sp, b), SPARSE_ROW(w->sp, a), w->inv_l, acc + a, n,
                          wb * Gb[a]);
            }
        } else {
            grad_row(w->X + b * d, w->XT, n, b, d, w->inv_l, al, Kib, Gb, kvb, w->wrow, acc);
        }
    }
    for (size_t j = 0; j <= d; j++) {
        double s = 0;
        for (size_t a = 0; a < n; a++) s += acc[j * n + a];
        if (j < d)
            g[w->g[j]] += s;
        else
            gs2 += s;
    }
    for (size_t k = 0; k < nl; k++) g[k] *= -0.5;
    g[nl] = -0.5 * gs2;
    g[nl + 1] = -0.5 * gs2n;
    for (size_t p = 0; p < nl + 2; p++)
        if (!isfinite(g[p])) return -1;
    return 0;
}

/* ---- Priors and the box (theta_p for p < nl is a log lengthscale) ---- */

static double prior_mean(size_t p, size_t nl) {
    return p < nl ? PRIOR_LOG_L_MEAN : p == nl ? PRIOR_LOG_S2_MEAN : PRIOR_LOG_S2N_MEAN;
}

static double prior_sd(size_t p, size_t nl) {
    return p < nl ? PRIOR_LOG_L_SD : p == nl ? PRIOR_LOG_S2_SD : PRIOR_LOG_S2N_SD;
}

static void box(size_t p, size_t nl, double *lo, double *hi) {
    if (p < nl) {
        *lo = log(L_MIN);
        *hi = log(L_MAX);
    } else if (p == nl) {
        *lo = log(S2_MIN);
        *hi = log(S2_MAX);
    } else {
        *lo = log(S2N_MIN);
        *hi = log(S2N_MAX);
    }
}

/* theta_p from u_p, and dtheta_p / du_p. */
static double theta_of_u(size_t p, size_t nl, double u, double *dtheta_du) {
    double lo, hi;
    box(p, nl, &lo, &hi);
    double s = u >= 0 ? 1.0 / (1.0 + exp(-u)) : exp(u) / (1.0 + exp(u));
    if (dtheta_du) *dtheta_du = (hi - lo) * s * (1.0 - s);
    return lo + (hi - lo) * s;
}

/* u_p for theta_p, theta_p first moved at least 2% of the box's width inside it (at
 * the very edge the sigmoid is flat and the minimiser would not move). */
static double u_of_theta(size_t p, size_t nl, double theta) {
    double lo, hi;
    box(p, nl, &lo, &hi);
    double s = (theta - lo) / (hi - lo);
    s = fmin(fmax(s, 0.02), 0.98);
    return log(s / (1.0 - s));
}

static void default_theta(double *theta, size_t nl) {
    for (size_t k = 0; k < nl; k++) theta[k] = log(DEFAULT_L);
    theta[nl] = log(DEFAULT_S2);
    theta[nl + 1] = log(DEFAULT_S2N);
}

/* ---- The objective for GSL's minimiser, in u ---- */

/* F at u (and its gradient w.r.t. u into g when g is not NULL); +inf when the
 * model cannot be built there. */
static double objective(const gsl_vector *uv, gp_work *w, gsl_vector *g) {
    size_t nl = w->nl, P = nl + 2;
    double *theta = w->theta, *dtheta = w->dtheta, *gth = w->gtheta;
    double f = GSL_POSINF;
    int same = w->have_factor;
    for (size_t p = 0; p < P; p++) {
        double u = gsl_vector_get(uv, p);
        if (!isfinite(u)) goto out;
        if (same && u != w->u_last[p]) same = 0;
    }
    if (!same) {
        w->have_factor = 0;
        for (size_t p = 0; p < P; p++) {
            w->u_last[p] = gsl_vector_get(uv, p);
            theta[p] = theta_of_u(p, nl, w->u_last[p], &dtheta[p]);
        }
        if (work_factor(w, theta) != 0 || work_solve(w) != 0) goto out;
        w->have_factor = 1;
    }
    f = -w->log_lik;
    for (size_t p = 0; p < P; p++) {
        double t = (theta[p] - prior_mean(p, nl)) / prior_sd(p, nl);
        f += 0.5 * t * t;
    }
    if (g) {
        w->have_factor = 0; /* A becomes K^-1 */
        if (work_gradient(w, gth) != 0) {
            f = GSL_POSINF;
        } else {
            for (size_t p = 0; p < P; p++) {
                double sd = prior_sd(p, nl);
                double dp = gth[p] + (theta[p] - prior_mean(p, nl)) / (sd * sd);
                gsl_vector_set(g, p, dp * dtheta[p]);
            }
        }
    }
out:
    if (g && !isfinite(f)) gsl_vector_set_zero(g);
    return f;
}

static double obj_f(const gsl_vector *u, void *params) { return objective(u, params, NULL); }

static void obj_df(const gsl_vector *u, void *params, gsl_vector *g) {
    (void)objective(u, params, g);
}

static void obj_fdf(const gsl_vector *u, void *params, double *f, gsl_vector *g) {
    *f = objective(u, params, g);
}

/* Minimises F from theta0 (P values) with at most max_iter BFGS iterations. On
 * return theta_out holds the best point the minimiser reached and the return value
 * is F there (+inf when the start itself failed). */
static double minimise(gp_work *w, const double *theta0, int max_iter, double *theta_out) {
    size_t nl = w->nl, P = nl + 2;
    double best = GSL_POSINF;
    gsl_multimin_function_fdf fdf = {obj_f, obj_df, obj_fdf, P, w};
    gsl_multimin_fdfminimizer *s =
        gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, P);
    gsl_vector *u0 = gsl_vector_alloc(P);
    if (!s || !u0) {
        fprintf(stderr, "fatal: out of memory allocating the GP minimiser\n");
        abort();
    }
    for (size_t p = 0; p < P; p++) gsl_vector_set(u0, p, u_of_theta(p, nl, theta0[p]));
    if (gsl_multimin_fdfminimizer_set(s, &fdf, u0, BFGS_STEP, BFGS_LINE_TOL) != GSL_SUCCESS)
        goto out;
    for (int it = 0; it < max_iter; it++) {
        /* Any status but success (GSL_ENOPROG: the line search found no lower point)
         * ends this start; the minimiser's x is still its best point so far. */
        if (gsl_multimin_fdfminimizer_iterate(s) != GSL_SUCCESS) break;
        if (gsl_multimin_test_gradient(gsl_multimin_fdfminimizer_gradient(s), GRAD_TOL) ==
            GSL_SUCCESS)
            break;
    }
    best = gsl_multimin_fdfminimizer_minimum(s);
    if (!isfinite(best)) {
        best = GSL_POSINF;
        goto out;
    }
    const gsl_vector *x = gsl_multimin_fdfminimizer_x(s);
    for (size_t p = 0; p < P; p++) theta_out[p] = theta_of_u(p, nl, gsl_vector_get(x, p), NULL);
out:
    gsl_vector_free(u0);
    gsl_multimin_fdfminimizer_free(s);
    return best;
}

/* ---- Building and fitting ---- */

/* What each fit does first: GSL's errors returned (not aborting), OpenBLAS on one
 * thread, log emptied; then the data checked: 0 or TN_EINVAL. */
static pthread_once_t fit_setup_once = PTHREAD_ONCE_INIT;

static void fit_setup(void) {
    gsl_set_error_handler_off();
    openblas_set_num_threads(1);
}

static int begin_fit(const double *X, const double *y, size_t n, size_t d, gp_model **out,
                     char *log, size_t loglen) {
    /* Fits may run on several threads at once (par.h): the settings are made once,
     * and OpenBLAS's again only if someone changed it since. */
    pthread_once(&fit_setup_once, fit_setup);
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
    if (log && loglen) log[0] = '\0';
    if (out) *out = NULL;
    if (!X || !y || !out) return tn_error(log, loglen, TN_EINVAL, "gp: NULL argument");
    if (n < 1 || d < 1)
        return tn_error(log, loglen, TN_EINVAL, "gp: need n >= 1 and d >= 1, got n = %zu, d = %zu",
                        n, d);
    if (d > SIZE_MAX / sizeof(double) / n || n > SIZE_MAX / sizeof(double) / n)
        return tn_error(log, loglen, TN_EINVAL, "gp: n = %zu, d = %zu is too large", n, d);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(y[i]))
            return tn_error(log, loglen, TN_EINVAL, "gp: y[%zu] is not finite", i);
        for (size_t j = 0; j < d; j++)
            if (!isfinite(X[i * d + j]))
                return tn_error(log, loglen, TN_EINVAL, "gp: X[%zu][%zu] is not finite", i, j);
    }
    return 0;
}

/* The lengthscale of each of the d dimensions: a copy of group (which must map into
 * [0, ngroups), ngroups >= 1) into *g with *nl = ngroups, or, for a NULL group, the
 * identity with *nl = d. *g is yours to free. Returns 0 or TN_EINVAL. */
static int group_map(const size_t *group, size_t ngroups, size_t d, size_t **g, size_t *nl,
                     char *log, size_t loglen) {
    *g = tn_xmalloc(d * sizeof(size_t));
    *nl = group ? ngroups : d;
    for (size_t j = 0; j < d; j++) {
        if (group && group[j] >= ngroups) {
            free(*g);
            *g = NULL;
            return tn_error(log, loglen, TN_EINVAL,
                            "gp: group[%zu] = %zu, but there are %zu lengthscales", j, group[j],
                            ngroups);
        }
        (*g)[j] = group ? group[j] : j;
    }
    return 0;
}

/* Mean and standard deviation (n - 1 in the denominator; 1 when n = 1 or all y are
 * equal) of y. Returns 0, or -1 when they overflow. */
static int standardise(const double *y, size_t n, double *mean, double *sd, double *z) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += y[i];
    *mean = s / (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (y[i] - *mean) * (y[i] - *mean);
    *sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
    if (!isfinite(*mean) || !isfinite(*sd)) return -1;
    if (!(*sd > 0)) *sd = 1;
    for (size_t i = 0; i < n; i++) z[i] = (y[i] - *mean) / *sd;
    return 0;
}

/* Factors K for theta on all the data in w and moves the result into a new model.
 * Returns the model, or NULL when no jitter gives a usable factor. */
static gp_model *build(gp_work *w, const double *theta, double y_mean, double y_sd,
                       int grouped) {
    size_t n = w->n, d = w->d, nl = w->nl;
    w->have_factor = 0;
    if (work_factor(w, theta) != 0 || work_solve(w) != 0) return NULL;
    gp_model *m = tn_xcalloc(1, sizeof(*m));
    m->n = n;
    m->d = d;
    m->nl = nl;
    if (grouped) {
        m->group = tn_xmalloc(d * sizeof(size_t));
        memcpy(m->group, w->g, d * sizeof(size_t));
    }
    m->XT = w->XT; /* the points, by coordinate or compressed, move to the model */
    w->XT = NULL;
    m->sp = w->sp;
    w->sp = NULL;
    m->y_mean = y_mean;
    m->y_sd = y_sd;
    m->log_l = tn_xmalloc(nl * sizeof(double));
    m->inv_l = tn_xmalloc(d * sizeof(double));
    for (size_t k = 0; k < nl; k++) m->log_l[k] = theta[k];
    for (size_t j = 0; j < d; j++) m->inv_l[j] = w->inv_l[j];
    m->log_s2 = theta[nl];
    m->log_s2n = theta[nl + 1];
    m->s2 = w->s2;
    m->m = w->m;
    m->L = w->A; /* the factor moves to the model */
    m->alpha = w->alpha;
    w->A = NULL;
    w->alpha = NULL;
    m->jitter = w->jitter;
    m->log_lik = w->log_lik;
    return m;
}

int gp_fit_fixed(const double *X, const double *y, size_t n, size_t d, const gp_hyper *h,
                 gp_model **out, char *log, size_t loglen) {
    int rc = begin_fit(X, y, n, d, out, log, loglen);
    if (rc) return rc;
    if (!h || !h->log_lengthscale)
        return tn_error(log, loglen, TN_EINVAL, "gp: no hyperparameters given");
    size_t *g, nl;
    if ((rc = group_map(h->group, h->ngroups, d, &g, &nl, log, loglen)) != 0) return rc;
    double *theta = tn_xmalloc((nl + 2) * sizeof(double));
    for (size_t k = 0; k < nl; k++) theta[k] = h->log_lengthscale[k];
    theta[nl] = h->log_signal_var;
    theta[nl + 1] = h->log_noise_var;
    for (size_t p = 0; p < nl + 2; p++) {
        /* exp must give a positive finite lengthscale and signal variance, and a
         * finite noise variance (0 is allowed: jitter then does its job). */
        double e = exp(p < nl ? -theta[p] : theta[p]);
        if (!isfinite(theta[p]) || !isfinite(e) || (p <= nl && !(e > 0))) {
            rc = tn_error(log, loglen, TN_EINVAL,
                          "gp: hyperparameter %zu (log scale) = %g is out of range", p, theta[p]);
            free(theta);
            free(g);
            return rc;
        }
    }
    double *z = tn_xmalloc(n * sizeof(double));
    double y_mean, y_sd;
    if (standardise(y, n, &y_mean, &y_sd, z) != 0) {
        rc = tn_error(log, loglen, TN_EINVAL, "gp: the mean or spread of y overflows");
        goto done;
    }
    gp_work w;
    work_init(&w, X, z, n, d, g, nl);
    *out = build(&w, theta, y_mean, y_sd, h->group != NULL);
    work_clear(&w);
    if (!*out)
        rc = tn_error(log, loglen, TN_ECORRUPT,
                      "gp: the kernel matrix is not positive definite even with jitter "
                      "%g * mean(diag) at the given hyperparameters",
                      JITTER_LAST);
    else if ((*out)->jitter > 0 && log && loglen)
        snprintf(log, loglen, "gp: jitter %g added to the diagonal", (*out)->jitter);
done:
    free(z);
    free(theta);
    free(g);
    return rc;
}

int gp_fit(const double *X, const double *y, size_t n, size_t d, const gp_fit_options *opt,
           gp_model **out, char *log, size_t loglen) {
    int rc = begin_fit(X, y, n, d, out, log, loglen);
    if (rc) return rc;
    gp_fit_options o = {0};
    if (opt) o = *opt;
    if (o.restarts < 0 || o.max_iterations < 0)
        return tn_error(log, loglen, TN_EINVAL,
                        "gp: restarts and max_iterations must be >= 0 (0: default), got %d, %d",
                        o.restarts, o.max_iterations);
    int restarts = o.restarts ? o.restarts : DEFAULT_RESTARTS;
    int max_iter = o.max_iterations ? o.max_iterations : DEFAULT_ITERATIONS;
    uint64_t seed = o.seed;
    size_t *g, nl;
    if ((rc = group_map(o.group, o.ngroups, d, &g, &nl, log, loglen)) != 0) return rc;

    size_t P = nl + 2;
    double *z = tn_xmalloc(n * sizeof(double));
    double *theta0 = tn_xmalloc(P * sizeof(double));
    double *theta = tn_xmalloc(P * sizeof(double));
    double *best = tn_xmalloc(P * sizeof(double));
    double *Xs = NULL, *zs = NULL;
    double y_mean, y_sd;
    if (standardise(y, n, &y_mean, &y_sd, z) != 0) {
        rc = tn_error(log, loglen, TN_EINVAL, "gp: the mean or spread of y overflows");
        goto done;
    }

    /* The data the hyperparameters are searched on: all of it, or a seeded subset. */
    size_t ns = n;
    const double *Xfit = X, *zfit = z;
    if (n > FIT_MAX_POINTS) {
        ns = FIT_MAX_POINTS;
        size_t *idx = tn_xmalloc(n * sizeof(size_t));
        for (size_t i = 0; i < n; i++) idx[i] = i;
        tn_rng sub;
        tn_rng_seed(&sub, seed ^ UINT64_C(0x5ab5e7f00d5eed00));
        for (size_t i = 0; i < ns; i++) { /* partial Fisher-Yates */
            size_t k = i + (size_t)tn_rng_below(&sub, (uint64_t)(n - i));
            size_t t = idx[i];
            idx[i] = idx[k];
            idx[k] = t;
        }
        Xs = tn_xmalloc(ns * d * sizeof(double));
        zs = tn_xmalloc(ns * sizeof(double));
        for (size_t i = 0; i < ns; i++) {
            memcpy(Xs + i * d, X + idx[i] * d, d * sizeof(double));
            zs[i] = z[idx[i]];
        }
        free(idx);
        Xfit = Xs;
        zfit = zs;
    }

    gp_work w;
    work_init(&w, Xfit, zfit, ns, d, g, nl);
    tn_rng rng;
    tn_rng_seed(&rng, seed);
    double best_f = GSL_POSINF;
    int failed = 0;
    for (int r = 0; r < restarts; r++) {
        if (r == 0) {
            default_theta(theta0, nl);
        } else {
            for (size_t p = 0; p < P; p++)
                theta0[p] = prior_mean(p, nl) + prior_sd(p, nl) * tn_rng_normal(&rng);
        }
        double f = minimise(&w, theta0, max_iter, theta);
        if (!isfinite(f)) {
            failed++;
        } else if (f < best_f) {
            best_f = f;
            memcpy(best, theta, P * sizeof(double));
        }
    }
    int used_default = !isfinite(best_f);
    if (used_default) default_theta(best, nl);
    if (ns != n) { /* the model itself uses every point */
        work_clear(&w);
        work_init(&w, X, z, n, d, g, nl);
    }
    *out = build(&w, best, y_mean, y_sd, o.group != NULL);
    work_clear(&w);

    if (!*out) {
        rc = tn_error(log, loglen, TN_ECORRUPT,
                      "gp: cannot fit the Gaussian process: the kernel matrix is not positive "
                      "definite even with jitter %g * mean(diag), at %s",
                      JITTER_LAST,
                      used_default ? "every start and at the default hyperparameters"
                                   : "the fitted hyperparameters");
    } else if (log && loglen && (failed || (*out)->jitter > 0)) {
        /* success, but worth a log line */
        char jit[64] = "";
        if ((*out)->jitter > 0)
            snprintf(jit, sizeof jit, "%sjitter %g added to the diagonal", failed ? "; " : "",
                     (*out)->jitter);
        if (used_default)
            snprintf(log, loglen, "gp: all %d starts failed: using the default "
                     "hyperparameters unfitted%s", restarts, jit);
        else if (failed)
            snprintf(log, loglen, "gp: %d of %d starts failed%s", failed, restarts, jit);
        else
            snprintf(log, loglen, "gp: %s", jit);
    }
done:
    free(z);
    free(theta0);
    free(theta);
    free(best);
    free(Xs);
    free(zs);
    free(g);
    return rc;
}

/* ---- Using the model ---- */

/* Rows predicted together: GP_PREDICT_ROWS x n kernel values, a few hundred KiB at
 * the largest model (500 points), stay in cache through the triangular solve. */
#define GP_PREDICT_ROWS 128

/* One call's blocks of GP_PREDICT_ROWS points (the last one shorter). */
typedef struct predict_job {
    const gp_model *m;
    const double *x;
    size_t k;
    double *mean, *var;
} predict_job;

/* Block `block` of a predict_job: its points' means and variances. The blocks are
 * the same whichever thread predicts them, so the results are too. */
static void predict_block(void *ctx, size_t block) {
    const predict_job *job = ctx;
    const gp_model *m = job->m;
    size_t n = m->n, d = m->d, j0 = block * GP_PREDICT_ROWS;
    size_t r = job->k - j0 < GP_PREDICT_ROWS ? job->k - j0 : GP_PREDICT_ROWS;
    double *kx = tn_xmalloc(r * n * sizeof(double)); /* (r, n) k(x_j, X_i) */
    const double *alpha = m->alpha->data; /* stride 1: allocated by gsl_vector_alloc */
    uint32_t *xi = m->sp ? tn_xmalloc(d * sizeof *xi) : NULL; /* a point compressed */
    double *xv = m->sp ? tn_xmalloc(d * sizeof *xv) : NULL;
    for (size_t j = 0; j < r; j++) {
        const double *xj = job->x + (j0 + j) * d;
        double *kj = kx + j * n, mu = m->m;
        if (m->sp) {
            size_t xn = sparse_row(xj, d, xi, xv);
            for (size_t i = 0; i < n; i++)
                kj[i] = sparse_r2(xi, xv, xn, SPARSE_ROW(m->sp, i), m->inv_l, NULL, 0, 0);
        } else {
            dist2_row(xj, m->XT, n, n, d, m->inv_l, kj);
        }
        matern_row(kj, n, m->s2);
        for (size_t i = 0; i < n; i++) mu += kj[i] * alpha[i];
        job->mean[j0 + j] = m->y_mean + m->y_sd * mu;
    }
    /* V = Kx L^-T, so row j of V is (L^-1 k_j)' and var_j = s2 - |V_j|^2: one
     * triangular solve with r right-hand sides instead of r solves (for one, the
     * vector solve: the matrix one would pack L first) */
    int ok;
    if (r == 1) {
        gsl_vector_view kv = gsl_vector_view_array(kx, n);
        ok = gsl_blas_dtrsv(CblasLower, CblasNoTrans, CblasNonUnit, m->L, &kv.vector) ==
             GSL_SUCCESS;
    } else {
        gsl_matrix_view kv = gsl_matrix_view_array(kx, r, n);
        ok = gsl_blas_dtrsm(CblasRight, CblasLower, CblasTrans, CblasNonUnit, 1.0, m->L,
                            &kv.matrix) == GSL_SUCCESS;
    }
    for (size_t j = 0; j < r; j++) {
        double v2 = m->s2;
        if (ok) { /* (else, which cannot happen: the sizes match, the prior variance) */
            const double *vj = kx + j * n;
            for (size_t i = 0; i < n; i++) v2 -= vj[i] * vj[i];
        }
        if (!(v2 > 0)) v2 = 0;
        job->var[j0 + j] = m->y_sd * m->y_sd * v2;
    }
    free(kx);
    free(xi);
    free(xv);
}

void gp_predict_many(const gp_model *m, const double *x, size_t k, double *mean, double *var) {
    predict_job job = {m, x, k, mean, var};
    size_t blocks = (k + GP_PREDICT_ROWS - 1) / GP_PREDICT_ROWS;
    if (blocks == 1) {
        predict_block(&job, 0); /* one point (the refinement's), or a few: no thread */
    } else if (blocks > 1) {
        par_run(blocks, predict_block, &job);
    }
}

void gp_predict(const gp_model *m, const double *x, double *mean, double *var) {
    gp_predict_many(m, x, 1, mean, var);
}

void gp_get_hyper(const gp_model *m, gp_hyper *h, double *jitter, double *log_likelihood) {
    if (h) {
        h->log_lengthscale = m->log_l;
        h->log_signal_var = m->log_s2;
        h->log_noise_var = m->log_s2n;
        h->group = m->group;
        h->ngroups = m->group ? m->nl : 0;
    }
    if (jitter) *jitter = m->jitter;
    if (log_likelihood) *log_likelihood = m->log_lik;
}

double gp_log_evidence(const gp_model *m) {
    size_t nl = m->nl;
    double lp = 0;
    for (size_t p = 0; p < nl + 2; p++) {
        double th = p < nl ? m->log_l[p] : p == nl ? m->log_s2 : m->log_s2n;
        double sd = prior_sd(p, nl), t = (th - prior_mean(p, nl)) / sd;
        lp -= 0.5 * t * t + log(sd) + HALF_LOG_2PI;
    }
    return m->log_lik - (double)m->n * log(m->y_sd) + lp;
}

int gp__sparse(const gp_model *m) { return m->sp != NULL; }

void gp_free(gp_model *m) {
    if (!m) return;
    free(m->XT);
    sparse_free(m->sp);
    free(m->group);
    free(m->log_l);
    free(m->inv_l);
    gsl_matrix_free(m->L);
    gsl_vector_free(m->alpha);
    free(m);
}

/* ---- Log expected improvement ---- */

/* log h(z), h(z) = z Phi(z) + phi(z), for z < -5: with x = -z, h = phi(x) / (1 + x T)
 * where T = x + 2/(x + 3/(x + 4/(x + ...))) (from Laplace's continued fraction for
 * Mills' ratio, Phi(-x)/phi(x) = 1/(x + 1/(x + 2/(x + ...)))), which has no
 * cancellation. T by the modified Lentz method. */
static double log_h_tail(double x) {
    const double tiny = 1e-300;
    double f = x, C = x, D = 0;
    for (int k = 2; k < 5000; k++) {
        D = x + k * D;
        if (fabs(D) < tiny) D = tiny;
        C = x + k / C;
        if (fabs(C) < tiny) C = tiny;
        D = 1.0 / D;
        double delta = C * D;
        f *= delta;
        if (fabs(delta - 1.0) < 2.0 * DBL_EPSILON) break;
    }
    return -0.5 * x * x - HALF_LOG_2PI - log1p(x * f);
}

double gp_log_ei(double mean, double sd, double best) {
    if (sd == 0) return log(fmax(mean - best, 0.0)); /* outside the contract; the limit */
    double z = (mean - best) / sd;
    if (isnan(z)) return NAN;
    if (z < -5.0) return log(sd) + log_h_tail(-z);
    /* No harmful cancellation here: for z >= 0 both terms are positive, and for
     * -5 <= z < 0 at most a factor ~30 of relative accuracy is lost. */
    double Phi = 0.5 * erfc(-z / M_SQRT2);
    double phi = exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
    return log(sd) + log(z * Phi + phi);
}
