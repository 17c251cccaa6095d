/*
 * gp.h — Gaussian-process regression on the unit cube, for Bayesian optimisation.
 *
 * Notation: n observations, points x_i in [0, 1]^d, values y_i. The model works on
 * standardised values z = (y - mean(y)) / sd(y) (sd 1 when all y are equal) and
 * reports predictions back in y's units.
 *   kernel  k(x, x') = s2 * (1 + sqrt(5) r + 5/3 r^2) * exp(-sqrt(5) r)   (Matern 5/2)
 *           r^2 = sum_j ((x_j - x'_j) / l_j)^2     (one l_j per dim, or dims grouped to
 *                                                   share one: group[j] picks l_j)
 *   model   z = m + f(x) + e,  f ~ GP(0, k),  e ~ N(0, s2n)
 *   theta   (log l_1 .. log l_L, log s2, log s2n), L = d lengthscales or one per
 *           group; m, the constant mean, is fitted in
 *           closed form (generalised least squares) for each theta.
 * Fitting maximises the log marginal likelihood plus weak log-normal priors on theta
 * with GSL's multimin (from several seeded starts); the Cholesky factor gets growing
 * jitter when the matrix is not numerically positive definite. GSL's abort-on-error
 * handler is never relied on: callers turn it off (gsl_set_error_handler_off) and
 * every status is checked, and OpenBLAS (GSL's BLAS here) is set to one thread. Pure
 * apart from those: no I/O, no clocks, no globals.
 * Design: docs/bayesian-optimisation.md.
 */
#ifndef TN_SEARCH_GP_H
#define TN_SEARCH_GP_H

#include <stddef.h>
#include <stdint.h>

typedef struct gp_model gp_model;

typedef struct gp_hyper {
    const double *log_lengthscale; /* one per lengthscale: d values, or ngroups */
    double log_signal_var;         /* log s2 */
    double log_noise_var;          /* log s2n */
    const size_t *group;           /* (d) the lengthscale of each dimension, as in
                                      gp_fit_options; NULL: one per dimension */
    size_t ngroups;
} gp_hyper;

typedef struct gp_fit_options {
    int restarts;                  /* multimin starts (>= 1; default 5 when 0) */
    int max_iterations;            /* per start (default 200 when 0) */
    uint64_t seed;                 /* for the starting points */
    const size_t *group;           /* (d) dimensions with equal group[j] share one
                                      lengthscale (a parameter embedded in several
                                      coordinates, whose geometry must not be
                                      stretched apart); NULL: one per dimension */
    size_t ngroups;                /* with group: the lengthscales, each group[j] <
                                      ngroups; ignored without */
} gp_fit_options;

/* Fits a GP to X (n x d, row-major, each in [0, 1]) and y (n), n >= 1, d >= 1. On
 * success returns 0 with *out yours to free with gp_free. Returns TN_EINVAL for bad
 * arguments (non-finite values, a group map with a group[j] >= ngroups or ngroups 0),
 * or TN_ECORRUPT when no hyperparameters give a usable
 * Cholesky factor even with the largest jitter (the caller then falls back to random
 * sampling and says so); log (may be NULL) then receives why. */
int gp_fit(const double *X, const double *y, size_t n, size_t d, const gp_fit_options *opt,
           gp_model **out, char *log, size_t loglen);

/* Builds the model with the given hyperparameters (no fitting), for tests and for
 * re-using a fit with one more (pretend) observation. Same returns as gp_fit. */
int gp_fit_fixed(const double *X, const double *y, size_t n, size_t d, const gp_hyper *h,
                 gp_model **out, char *log, size_t loglen);

/* Posterior mean and variance of f (without the noise term) at x (d values), in y's
 * units. var >= 0 always. */
void gp_predict(const gp_model *m, const double *x, double *mean, double *var);

/* gp_predict at k points x (k, d) into mean (k) and var (k), with the kernel values of
 * many points at once and one triangular solve for them (BLAS 3): for scoring a set
 * of candidates, several times faster than k calls of gp_predict. */
void gp_predict_many(const gp_model *m, const double *x, size_t k, double *mean, double *var);

/* The fitted hyperparameters (pointers valid until gp_free; group is NULL unless the
 * model was fitted with a group map, so that h can go to gp_fit_fixed as it is), the
 * jitter added to the diagonal (0 when none was needed), and the log marginal
 * likelihood at them. */
void gp_get_hyper(const gp_model *m, gp_hyper *h, double *jitter, double *log_likelihood);

/* The fit's log posterior density of y in y's own units: the log marginal likelihood
 * of the standardised z at the fitted hyperparameters, minus n log sd(y) (the
 * Jacobian of the standardisation), plus the log density of the hyperparameters'
 * priors. Fits of differently transformed values of the same data compare by it once
 * the caller adds the log Jacobian of its own transform, sum log |dw/dy| (bo.c's
 * choice between raw and warped values). */
double gp_log_evidence(const gp_model *m);

void gp_free(gp_model *m);

/* For tests: whether m computes its distances over the points' coordinates that are
 * not 0 (mostly-zero points, such as many categories' one-hots; see gp.c). */
int gp__sparse(const gp_model *m);

/* For tests: gp.c's e^-q (q >= 0), the kernel's exponential. */
double gp__exp_neg(double q);

/* log of the expected improvement over `best` of a Gaussian N(mean, sd^2), for
 * maximisation (callers negate for minimisation), computed stably far from the
 * incumbent (no log(0) for large negative z = (mean - best) / sd). sd > 0. */
double gp_log_ei(double mean, double sd, double best);

#endif
