/*
 * bo.c — the Bayesian-optimisation sampler: the space-filling design, the encoding of
 * the space for the Gaussian process, the data (negation, raw or warped values chosen
 * by the fit's evidence, pending trials believed at the mean), the fit, and the
 * maximisation of the acquisition (quasi-random and local candidates, then
 * Nelder-Mead on the best few).
 *
 * Notation: P parameters, D encoded coordinates (P plus k - 1 per CATEGORICAL of k,
 * plus 1 per conditional INTEGER, DISCRETE or DOUBLE), n measured trials. A "unit
 * point" u in [0, 1]^P is what the sampler searches over (one coordinate per
 * parameter, a CATEGORICAL's coordinate picking its bucket, as sp_from_unit does; an
 * inactive parameter of a trial's point is BO_INACTIVE_U); x in [0, 1]^D is its
 * encoding, which the GP sees. The model always maximises: z = objective, or
 * -objective when minimising.
 *
 * Conditional parameters: a point's values decide which parameters are active
 * (sp_mask_inactive); an inactive one is encoded as a value it can never take, at the
 * same distance from all its values: the centre of the arc its active values lie on
 * (an ordinal one), all zeros (a CATEGORICAL's one-hot). See "Conditional
 * parameters" in docs/bayesian-optimisation.md.
 *
 * Pure: no I/O, no clocks, no global state (GSL's error handler aside, which is
 * turned off); every random choice comes from a generator keyed by (seed, index, use).
 * The design is written down in docs/bayesian-optimisation.md; the contract is bo.h.
 */
#include "search/bo.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_qrng.h>
#include <gsl/gsl_vector.h>

#include "common/rng.h"
#include "common/status.h"
#include "search/gp.h"
#include "search/par.h"

#define BO_SAME_TOL 1e-3        /* DOUBLE coordinates closer than this to a failed or
                                   stopped trial's are "the same" (unit coordinates);
                                   a pending one's radius is at most this */
#define BO_SAME_TOL_MEASURED 1e-5 /* ... to a measured trial's (larger would stop the
                                   refinement of an optimum short) */
#define BO_CANDIDATES 2048      /* quasi-random candidates (a power of two for Sobol) */
#define BO_MIN_CANDIDATES 256   /* ... and the fewest, however many trials */
#define BO_LOCAL_CENTRES 3      /* best measured points that get local candidates */
#define BO_LOCAL_PER_CENTRE 32  /* Gaussian perturbations around each */
#define BO_LOCAL_SD_NEAR 0.02   /* half of them with this sd (unit coordinates) */
#define BO_LOCAL_SD_FAR 0.1     /* the other half with this one */
#define BO_LOCAL_SD_NEAR_PENDING 0.005 /* ... with running trials believed: their beliefs flatten
                                   the acquisition at the best points, and its peaks
                                   between them are finer (docs/bayesian-optimisation.md,
                                   "What was tried at 8 workers") */
#define BO_REFINE 5             /* candidates refined with Nelder-Mead */
#define BO_REFINE_STEP 0.01     /* Nelder-Mead's initial simplex size (0.05 before: fewer
                                   8-worker studies refined hartmann6's optimum; see
                                   docs/bayesian-optimisation.md, "Maximising the
                                   acquisition") */
#define BO_REFINE_TOL 1e-4      /* ... and its final size */
#define BO_REFINE_ITERS 100     /* ... and its iterations (fewer past 100 trials) */
#define BO_MIN_REFINE_ITERS 60
#define BO_SWEEP_ROUNDS 3       /* rounds of moving each category to its best */
#define BO_FIT_RESTARTS 3       /* gp_fit's starts up to BO_CHEAP_N trials, then 1 */
#define BO_FIT_ITERS 100        /* gp_fit's iterations per start up to BO_CHEAP_N */
#define BO_MIN_FIT_ITERS 10
#define BO_MODEL_POINTS 500     /* measured trials the GP is built on at most */
#define BO_CHEAP_N 40           /* trials up to which the fit gets its full budget */
#define BO_SD_FLOOR 1e-10       /* gp_log_ei needs sd > 0 */
#define BO_TRIES 128            /* design / random draws before giving up on "new" */
#define BO_INACTIVE_U (-1.0)    /* unit coordinate of an inactive parameter: outside
                                   [0, 1], so never "the same" as an active value */
#define BO_ARC_ANGLE (M_PI / 3) /* a conditional ordinal's values lie on this arc of the
                                   unit circle: its ends 1 apart, the centre 1 from all */

/* Uses of randomness, each keyed separately by (seed, index). */
enum { USE_DESIGN = 1, USE_CANDIDATES, USE_LOCAL, USE_FIT, USE_SUBSET };

/* ---- Small helpers ---- */

static double clamp01(double u) {
    if (!(u > 0.0)) return 0.0;
    return u < 1.0 ? u : 1.0;
}

__attribute__((format(printf, 3, 4)))
static void set_note(char *note, size_t len, const char *fmt, ...) {
    if (!note || len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, len, fmt, ap);
    va_end(ap);
}

/* The key of one use of randomness for (seed, index); never random search's key. */
static uint64_t use_key(uint64_t seed, uint64_t index, uint64_t use) {
    return tn_mix64(sp_random_key(seed, index) ^ (use * 0xd1b54a32d192ed03ULL));
}

/* ---- Encoding ---- */

typedef struct enc {
    const sp_space *s;
    size_t P;                /* parameters */
    size_t D;                /* encoded coordinates */
    size_t *off;             /* (P) each parameter's first coordinate */
    size_t *group;           /* (D) the GP lengthscale of each coordinate: one per
                                parameter, shared by a CATEGORICAL's one-hot and by a
                                conditional ordinal's two */
    size_t ngroups;
    double onehot;           /* a CATEGORICAL's one-hot height: BO_ONEHOT, or the one
                                the fit chose (choose_onehot) */
    int categorical;         /* whether any parameter is CATEGORICAL */
} enc;

/* Coordinates of parameter p: k for a CATEGORICAL of k (one-hot), 2 for a
 * conditional ordinal (its arc), else 1. */
static size_t enc_width(const sp_param *p) {
    if (p->type == SP_CATEGORICAL) return p->ncategories;
    return p->conditional ? 2 : 1;
}

static void enc_init(enc *e, const sp_space *s) {
    e->s = s;
    e->P = s->n;
    e->off = tn_xmalloc((s->n + 1) * sizeof *e->off);
    e->D = 0;
    for (size_t i = 0; i < s->n; i++) {
        e->off[i] = e->D;
        e->D += enc_width(&s->params[i]);
    }
    e->group = tn_xmalloc((e->D + 1) * sizeof *e->group);
    e->ngroups = 0;
    e->onehot = BO_ONEHOT;
    e->categorical = 0;
    for (size_t i = 0; i < s->n; i++) {
        const sp_param *p = &s->params[i];
        size_t g = e->ngroups++;
        for (size_t j = 0; j < enc_width(p); j++) e->group[e->off[i] + j] = g;
        e->categorical |= p->type == SP_CATEGORICAL;
    }
}

static void enc_clear(enc *e) {
    free(e->off);
    free(e->group);
}

/* x (D) of the unit point u (P); vs (P) receives the values u decodes to, inactive
 * parameters NaN. Snapped (relaxed = 0): each ordinal coordinate is the one of the
 * legal value u decodes to, so the model scores what would be suggested; relaxed: u
 * itself (for the local optimiser). A CATEGORICAL is always the one-hot of its
 * bucket, of height e->onehot. Which parameters are active follows from the decoded
 * values of their parents, so u's coordinates of inactive parameters are never read.
 * An inactive parameter is the origin of its coordinates: for a CATEGORICAL no
 * category (e->onehot from each category), for a conditional ordinal the centre of
 * the arc (cos(A t), sin(A t)), t in [0, 1], that its unit values map to: the same
 * distance 1 from every value, which is the distance between the range's two ends.
 * The space's conditions must be well formed (sp_conditions_ok). */
static void enc_unit(const enc *e, const double *u, int relaxed, double *x, double *vs) {
    for (size_t i = 0; i < e->P; i++) {
        const sp_param *p = &e->s->params[i];
        double *xi = x + e->off[i];
        int active = !p->conditional || sp_condition_holds(p, vs[p->parent]);
        if (!active) {
            vs[i] = NAN;
            for (size_t j = 0; j < enc_width(p); j++) xi[j] = 0.0;
            continue;
        }
        vs[i] = sp_from_unit(p, u[i]);
        if (p->type == SP_CATEGORICAL) {
            size_t c = (size_t)vs[i];
            for (size_t j = 0; j < p->ncategories; j++) xi[j] = j == c ? e->onehot : 0.0;
            continue;
        }
        double t = relaxed ? clamp01(u[i]) : sp_to_unit(p, vs[i]);
        if (p->conditional) {
            xi[0] = cos(BO_ARC_ANGLE * t);
            xi[1] = sin(BO_ARC_ANGLE * t);
        } else {
            xi[0] = t;
        }
    }
}

/* The unit point of a trial's values (a CATEGORICAL at its bucket's centre, an
 * inactive parameter BO_INACTIVE_U). */
static void unit_of_values(const sp_space *s, const double *v, double *u) {
    for (size_t i = 0; i < s->n; i++) {
        u[i] = isnan(v[i]) ? BO_INACTIVE_U : sp_to_unit(&s->params[i], v[i]);
    }
}

/* The point u decodes to: every parameter's value, then the inactive ones NaN. */
static void decode(const sp_space *s, const double *u, double *v) {
    for (size_t i = 0; i < s->n; i++) v[i] = sp_from_unit(&s->params[i], u[i]);
    sp_mask_inactive(s, v);
}

size_t bo_encode(const sp_space *s, const double *v, double *x, size_t *group) {
    if (!s || !sp_conditions_ok(s)) return 0;
    enc e;
    enc_init(&e, s);
    size_t D = e.D;
    if (group) memcpy(group, e.group, D * sizeof *group);
    if (x && v) {
        double *u = tn_xmalloc((e.P + 1) * sizeof *u), *vs = tn_xmalloc((e.P + 1) * sizeof *vs);
        unit_of_values(s, v, u);
        enc_unit(&e, u, 1, x, vs); /* as the measured trials are encoded */
        free(vs);
        free(u);
    }
    enc_clear(&e);
    return D;
}

/* ---- Points already taken ---- */

/* The unit points of every trial of the history, whatever its state: a suggestion
 * equal to one of them would waste a trial. */
typedef struct taken {
    double *u;               /* (m, P) */
    double *tol;             /* (m) BO_SAME_TOL_MEASURED or BO_SAME_TOL; a pending
                                trial's is -1: pending_tol */
    double pending_tol;      /* BO_SAME_TOL until the model sets it (pending_radius) */
    size_t m;
} taken;

static void taken_init(taken *t, const sp_space *s, const sp_history *h) {
    size_t n = h ? h->n : 0;
    t->u = tn_xmalloc((n * s->n + 1) * sizeof *t->u);
    t->tol = tn_xmalloc((n + 1) * sizeof *t->tol);
    t->m = 0;
    for (size_t k = 0; k < n; k++) {
        const sp_trial *tr = &h->trials[k];
        if (!tr->values) continue;
        unit_of_values(s, tr->values, t->u + t->m * s->n);
        t->tol[t->m] = tr->state == SP_COMPLETE && tr->has_objective && isfinite(tr->objective)
                           ? BO_SAME_TOL_MEASURED
                           : tr->state == SP_PENDING ? -1.0 : BO_SAME_TOL;
        t->m++;
    }
    t->pending_tol = BO_SAME_TOL;
}

/* Whether the legal values v equal a taken point: countable parameters equal, DOUBLE
 * parameters within the taken point's tolerance in unit coordinates (BO_SAME_TOL, or
 * BO_SAME_TOL_MEASURED for a measured trial), inactive parameters inactive in both
 * (BO_INACTIVE_U is more than either from every active coordinate). */
static int taken_has(const taken *t, const sp_space *s, const double *v, double *scratch) {
    unit_of_values(s, v, scratch);
    for (size_t k = 0; k < t->m; k++) {
        const double *w = t->u + k * s->n;
        double tol = t->tol[k] < 0.0 ? t->pending_tol : t->tol[k];
        size_t i = 0;
        for (; i < s->n; i++) {
            if (s->params[i].type == SP_DOUBLE) {
                if (!(fabs(scratch[i] - w[i]) < tol)) break;
            } else if (scratch[i] != w[i]) {
                break;
            }
        }
        if (i == s->n) return 1;
    }
    return 0;
}

/* ---- Low-discrepancy points ---- */

/* A Cranley-Patterson rotation of Sobol's sequence (dim <= 40, GSL's limit), of
 * Halton's (dim <= 1229) past that, or plain pseudo-random points past that. */
typedef struct lds {
    gsl_qrng *q;             /* NULL: pseudo-random points from r */
    tn_rng r;                /* draws the shift, then (without q) the points */
    double *shift;           /* (dim) in [0, 1) */
    size_t dim;
} lds;

static void lds_init(lds *l, size_t dim, uint64_t key) {
    l->dim = dim;
    /* gsl_qrng_alloc does not report a dimension its generator cannot do (it ignores
     * the init status), so the limits (40 and 1229 in GSL 2.7) are checked here. */
    l->q = NULL;
    if (dim >= 1 && dim <= gsl_qrng_sobol->max_dimension) {
        l->q = gsl_qrng_alloc(gsl_qrng_sobol, (unsigned)dim);
    } else if (dim >= 1 && dim <= gsl_qrng_halton->max_dimension) {
        l->q = gsl_qrng_alloc(gsl_qrng_halton, (unsigned)dim);
    }
    tn_rng_seed(&l->r, key);
    l->shift = tn_xmalloc(dim * sizeof *l->shift);
    for (size_t j = 0; j < dim; j++) l->shift[j] = tn_rng_uniform(&l->r);
}

static void lds_clear(lds *l) {
    if (l->q) gsl_qrng_free(l->q);
    free(l->shift);
}

/* The next point, into u (dim). */
static void lds_next(lds *l, double *u) {
    if (l->q && gsl_qrng_get(l->q, u) != GSL_SUCCESS) { /* exhausted: go on randomly */
        gsl_qrng_free(l->q);
        l->q = NULL;
    }
    for (size_t j = 0; j < l->dim; j++) {
        double a = (l->q ? u[j] : tn_rng_uniform(&l->r)) + l->shift[j];
        u[j] = a >= 1.0 ? a - 1.0 : a;
    }
}

/* ---- Fallback points ---- */

/* Point number `index` of the study's design (one rotation per seed, so that the
 * points of one study are a rotated low-discrepancy sequence), or the next points of
 * the sequence while that one is taken. Writes the values to out (P); returns 1 when
 * they are not taken, 0 when BO_TRIES points all were (out is then the first). */
static int design_point(const sp_space *s, const taken *t, uint64_t seed, uint64_t index,
                        double *out, double *u, double *scratch) {
    lds l;
    lds_init(&l, s->n, tn_mix64(tn_mix64(seed) ^ (USE_DESIGN * 0xd1b54a32d192ed03ULL)));
    for (uint64_t k = 0; k < index; k++) lds_next(&l, u);
    int found = 0;
    for (int tries = 0; tries < BO_TRIES && !found; tries++) {
        lds_next(&l, u);
        decode(s, u, scratch);
        if (tries == 0) memcpy(out, scratch, s->n * sizeof *out);
        if (!taken_has(t, s, scratch, u)) {
            memcpy(out, scratch, s->n * sizeof *out);
            found = 1;
        }
    }
    lds_clear(&l);
    return found;
}

/* Random search's point for (seed, index) (the same generator and draws as
 * RANDOM_SEARCH), or the generator's next draws while that one is taken. Same
 * returns as design_point. */
static int random_point(const sp_space *s, const taken *t, uint64_t seed, uint64_t index,
                        double *out, double *u, double *scratch) {
    tn_rng r;
    tn_rng_seed(&r, sp_random_key(seed, index));
    for (int tries = 0; tries < BO_TRIES; tries++) {
        for (size_t i = 0; i < s->n; i++) u[i] = tn_rng_uniform(&r);
        decode(s, u, scratch);
        if (tries == 0) memcpy(out, scratch, s->n * sizeof *out);
        if (!taken_has(t, s, scratch, u)) {
            memcpy(out, scratch, s->n * sizeof *out);
            return 1;
        }
    }
    return 0;
}

/* ---- The data ---- */

static int fit_restarts(size_t n);
static int fit_iterations(size_t n);

/* The values the GP is fitted to: z as it is, or a monotone warp
 *   w = -log(max z - z + c),  c = kappa (max z - median z),  kappa in BO_WARP_KAPPA,
 * which keeps the order (so the incumbent), keeps the magnitudes near the best value
 * and squashes a long tail of bad ones. Each is fitted and the fit with the larger
 * evidence in z's own units wins: gp_log_evidence plus the log Jacobian of the warp,
 * sum log |dw/dz| = -sum log(max z - z + c). See "Data" in
 * docs/bayesian-optimisation.md. */
static const double BO_WARP_KAPPA[] = {0.1, 1.0};
#define BO_NWARPS (sizeof BO_WARP_KAPPA / sizeof BO_WARP_KAPPA[0])

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Fits the candidates of z (n) at X (n, D) and keeps the best: *out (yours to free)
 * is its model, z is overwritten with the values it was fitted to, *warp (may be
 * NULL) receives 0 for z as it is or k >= 1 for BO_WARP_KAPPA[k - 1], and *evidence
 * (may be NULL) the winner's evidence plus log Jacobian, the score. Returns 0, or
 * the raw fit's gp_fit status (log says why) when no candidate could be fitted. */
/* The fits of fit_chosen, one a task (par.h): k = 0 the values as they are, k >= 1
 * warp k - 1. */
typedef struct warp_fits {
    const double *X, *z;
    size_t n, D;
    const gp_fit_options *fo;
    double zmax, spread;
    double *w;          /* (nw + 1, n) the values each fit is made to */
    double *logjac;     /* (nw + 1) */
    gp_model **model;   /* (nw + 1), NULL where the fit failed */
    int *rc;            /* (nw + 1) */
    char *why;          /* fit 0's message */
    size_t whylen;
} warp_fits;

static void warp_fit(void *ctx, size_t k) {
    warp_fits *f = ctx;
    double *w = f->w + k * f->n, logjac = 0.0;
    if (k == 0) {
        memcpy(w, f->z, f->n * sizeof *w);
    } else {
        double c = BO_WARP_KAPPA[k - 1] * f->spread;
        for (size_t i = 0; i < f->n; i++) {
            double g = log(f->zmax - f->z[i] + c);
            w[i] = -g;
            logjac -= g;
        }
    }
    f->logjac[k] = logjac;
    f->model[k] = NULL;
    f->rc[k] = gp_fit(f->X, w, f->n, f->D, f->fo, &f->model[k], k == 0 ? f->why : NULL,
                      k == 0 ? f->whylen : 0);
}

static int fit_chosen(const double *X, double *z, size_t n, size_t D,
                      const gp_fit_options *fo, gp_model **out, int *warp, double *evidence,
                      char *why, size_t whylen) {
    double *srt = tn_xmalloc((n + 1) * sizeof *srt);
    memcpy(srt, z, n * sizeof *srt);
    qsort(srt, n, sizeof *srt, cmp_double);
    double zmax = n ? srt[n - 1] : 0.0, spread = n ? zmax - srt[n / 2] : 0.0;
    size_t nw = n >= 3 && spread > 0.0 && isfinite(spread) ? BO_NWARPS : 0;
    /* the fits are independent: on the cores at once, then compared in order */
    gp_model *model[BO_NWARPS + 1];
    double logjac[BO_NWARPS + 1];
    int frc[BO_NWARPS + 1];
    warp_fits f = {X, z, n, D, fo, zmax, spread,
                   tn_xmalloc((nw + 1) * (n + 1) * sizeof(double)), logjac, model, frc,
                   why, whylen};
    par_run(nw + 1, warp_fit, &f);
    double best_score = -HUGE_VAL;
    int rc = TN_ECORRUPT, chosen = -1;
    *out = NULL;
    for (size_t k = 0; k <= nw; k++) {
        if (frc[k] != 0) {
            if (k == 0) rc = frc[k];
            continue;
        }
        double score = gp_log_evidence(model[k]) + logjac[k];
        if (chosen < 0 || score > best_score) {
            best_score = score;
            chosen = (int)k;
            gp_free(*out);
            *out = model[k];
        } else {
            gp_free(model[k]);
        }
    }
    if (chosen >= 0) {
        memcpy(z, f.w + (size_t)chosen * n, n * sizeof *z);
        rc = 0;
    }
    if (warp) *warp = chosen;
    if (evidence) *evidence = best_score;
    free(f.w);
    free(srt);
    return rc;
}

int bo_choose_warp(const double *X, const double *z, size_t n, size_t D, uint64_t seed) {
    if (!X || !z || n == 0 || D == 0) return TN_EINVAL;
    gsl_set_error_handler_off();
    double *zc = tn_xmalloc(n * sizeof *zc);
    memcpy(zc, z, n * sizeof *zc);
    gp_fit_options fo = {fit_restarts(n), fit_iterations(n), seed, NULL, 0};
    gp_model *gp = NULL;
    int warp = -1, rc = fit_chosen(X, zc, n, D, &fo, &gp, &warp, NULL, NULL, 0);
    gp_free(gp);
    free(zc);
    return rc != 0 ? rc : warp;
}

/* Sorts by value, larger first, then by position: a total order, so qsort's result
 * does not depend on its algorithm. */
typedef struct ranked {
    double v;
    size_t i;
} ranked;

static int ranked_cmp(const void *a, const void *b) {
    const ranked *p = a, *q = b;
    if (p->v > q->v) return -1;
    if (p->v < q->v) return 1;
    return (p->i > q->i) - (p->i < q->i);
}

/* ---- The acquisition ---- */

typedef struct acq {
    const enc *e;
    const gp_model *gp;
    int kind;                /* enum bo_acquisition */
    double beta;             /* UCB */
    double best;             /* EI's incumbent */
    double *x;               /* (D) scratch */
    double *vs;              /* (P) scratch: the decoded values */
    double *u;               /* (P) the point being refined */
    size_t *free_dims;       /* the coordinates Nelder-Mead moves */
    size_t nfree;
} acq;

/* The acquisition at the unit point u (larger is better); -HUGE_VAL when the model
 * returns something unusable. */
static double acq_value(const acq *a, double mean, double var) {
    double sd = sqrt(var > 0.0 ? var : 0.0);
    if (sd < BO_SD_FLOOR) sd = BO_SD_FLOOR;
    double v = a->kind == BO_UCB ? mean + a->beta * sd : gp_log_ei(mean, sd, a->best);
    return isfinite(v) ? v : -HUGE_VAL;
}

static double acq_at(acq *a, const double *u, int relaxed) {
    enc_unit(a->e, u, relaxed, a->x, a->vs);
    double mean, var;
    gp_predict(a->gp, a->x, &mean, &var);
    return acq_value(a, mean, var);
}

/* The acquisition at k unit points u (k, P), decoded (not relaxed), into order[j]
 * (value, j): the candidates' scores, predicted together (gp_predict_many). */
static void acq_rank(acq *a, const double *u, size_t k, ranked *order) {
    size_t D = a->e->D, P = a->e->P;
    double *x = tn_xmalloc((k ? k : 1) * D * sizeof *x);
    double *mv = tn_xmalloc((k ? k : 1) * 2 * sizeof *mv);
    for (size_t j = 0; j < k; j++) enc_unit(a->e, u + j * P, 0, x + j * D, a->vs);
    gp_predict_many(a->gp, x, k, mv, mv + k);
    for (size_t j = 0; j < k; j++) order[j] = (ranked){acq_value(a, mv[j], mv[k + j]), j};
    free(mv);
    free(x);
}

/* Nelder-Mead's objective: minus the acquisition at the relaxed point with the free
 * coordinates set from t and clamped to [0, 1], plus the squared distance from the box
 * so that the simplex does not drift on the flat outside. */
static double refine_f(const gsl_vector *t, void *params) {
    acq *a = params;
    double out2 = 0.0;
    for (size_t k = 0; k < a->nfree; k++) {
        double v = gsl_vector_get(t, k), c = clamp01(v);
        out2 += (v - c) * (v - c);
        a->u[a->free_dims[k]] = c;
    }
    double v = acq_at(a, a->u, 1);
    return isfinite(v) ? -v + out2 : 1e300;
}

/* Refines the unit point u (P) in place with Nelder-Mead over the free coordinates
 * (categorical and inactive ones stay; a parent that moves may switch its children
 * on or off, which the encoding follows). Returns 0, or a GSL status when it could
 * not start (u is then unchanged). */
static int refine(acq *a, double *u, int iters) {
    size_t m = a->nfree;
    if (m == 0) return 0;
    const size_t P = a->e->P;
    gsl_multimin_fminimizer *mm = gsl_multimin_fminimizer_alloc(gsl_multimin_fminimizer_nmsimplex2, m);
    gsl_vector *t = gsl_vector_alloc(m), *step = gsl_vector_alloc(m);
    int rc = GSL_ENOMEM;
    if (!mm || !t || !step) goto done;
    for (size_t k = 0; k < m; k++) gsl_vector_set(t, k, u[a->free_dims[k]]);
    gsl_vector_set_all(step, BO_REFINE_STEP);
    memcpy(a->u, u, P * sizeof *u);
    gsl_multimin_function f = {refine_f, m, a};
    rc = gsl_multimin_fminimizer_set(mm, &f, t, step);
    if (rc != GSL_SUCCESS) goto done;
    for (int it = 0; it < iters; it++) {
        if (gsl_multimin_fminimizer_iterate(mm) != GSL_SUCCESS) break; /* no progress */
        if (gsl_multimin_test_size(gsl_multimin_fminimizer_size(mm), BO_REFINE_TOL) ==
            GSL_SUCCESS) {
            break;
        }
    }
    const gsl_vector *best = gsl_multimin_fminimizer_x(mm);
    for (size_t k = 0; k < m; k++) u[a->free_dims[k]] = clamp01(gsl_vector_get(best, k));
done:
    gsl_vector_free(step);
    gsl_vector_free(t);
    if (mm) gsl_multimin_fminimizer_free(mm);
    return rc;
}

/* Moves each CATEGORICAL parameter of u (P) in turn to the category where the
 * acquisition (relaxed, the other coordinates held) is largest, round after round
 * until a round moves none or BO_SWEEP_ROUNDS have run: Nelder-Mead cannot move a
 * category, and the candidates' Gaussian steps seldom leave one, so without it the
 * categories of a study stay those of its best early points. A parameter inactive at
 * u never moves (every category scores the same). Returns whether u changed. */
static int sweep_categories(acq *a, double *u) {
    const sp_space *s = a->e->s;
    double cur = acq_at(a, u, 1);
    int changed = 0;
    for (int r = 0; r < BO_SWEEP_ROUNDS; r++) {
        int moved = 0;
        for (size_t i = 0; i < a->e->P; i++) {
            const sp_param *p = &s->params[i];
            if (p->type != SP_CATEGORICAL) continue;
            double was = u[i], best_u = was;
            size_t at = (size_t)sp_from_unit(p, was);
            for (size_t c = 0; c < p->ncategories; c++) {
                if (c == at) continue;
                u[i] = sp_to_unit(p, (double)c);
                double v = acq_at(a, u, 1);
                if (v > cur) {
                    cur = v;
                    best_u = u[i];
                }
            }
            u[i] = best_u;
            moved |= best_u != was;
        }
        if (!moved) break;
        changed = 1;
    }
    return changed;
}

/* Points a->free_dims at the ordinal parameters active at the point whose decoded
 * values are v (P): those Nelder-Mead moves. */
static void free_ordinals(acq *a, const double *v) {
    const sp_space *s = a->e->s;
    a->nfree = 0;
    for (size_t i = 0; i < a->e->P; i++) {
        if (s->params[i].type != SP_CATEGORICAL && !isnan(v[i])) {
            a->free_dims[a->nfree++] = i;
        }
    }
}

/* The refinements of one suggestion's best candidates, one a task (par.h). */
typedef struct refine_job {
    const sp_space *s;
    const acq *a;           /* the model and encoding; each task has its own scratch */
    const double *cand;     /* (., P) the candidates */
    size_t P;
    int iters;
    size_t pick[BO_REFINE]; /* the candidates refined (rows of cand) */
    size_t npicks;
    double *v;              /* (BO_REFINE, P) each refinement decoded */
    double score[BO_REFINE];/* ... its acquisition there */
    int ok[BO_REFINE];      /* ... whether Nelder-Mead could start */
} refine_job;

/* Nelder-Mead moves the ordinal parameters active at the candidate; then the
 * categories move, and if one did, Nelder-Mead again from there. */
static void refine_task(void *ctx, size_t r) {
    refine_job *j = ctx;
    size_t P = j->P, D = j->a->e->D;
    acq a = *j->a;
    a.x = tn_xmalloc(D * sizeof *a.x);
    a.vs = tn_xmalloc(P * sizeof *a.vs);
    a.u = tn_xmalloc(P * sizeof *a.u);
    a.free_dims = tn_xmalloc(P * sizeof *a.free_dims);
    double *u = tn_xmalloc(P * sizeof *u), *v = j->v + r * P;
    memcpy(u, j->cand + j->pick[r] * P, P * sizeof *u);
    decode(j->s, u, v);
    free_ordinals(&a, v);
    j->ok[r] = refine(&a, u, j->iters) == 0;
    if (j->ok[r]) {
        if (sweep_categories(&a, u)) {
            decode(j->s, u, v);
            free_ordinals(&a, v);
            (void)refine(&a, u, j->iters); /* u stays the sweep's if it cannot start */
        }
        j->score[r] = acq_at(&a, u, 0);
        decode(j->s, u, v);
    }
    free(u);
    free(a.x);
    free(a.vs);
    free(a.u);
    free(a.free_dims);
}

/* ---- The sampler ---- */

static int space_usable(const sp_space *s) {
    if (!sp_conditions_ok(s)) return 0;
    for (size_t i = 0; i < s->n; i++) {
        const sp_param *p = &s->params[i];
        switch (p->type) {
        case SP_DOUBLE:
        case SP_INTEGER:
            if (!isfinite(p->min) || !isfinite(p->max) || p->min > p->max) return 0;
            break;
        case SP_DISCRETE:
            if (!p->values || p->nvalues == 0) return 0;
            break;
        case SP_CATEGORICAL:
            if (p->ncategories == 0) return 0;
            break;
        default:
            return 0;
        }
    }
    return 1;
}

/* The budgets, which shrink as the n measured trials make the model dearer: a fit
 * iteration costs O(n^3) (up to gp_fit's subset size, 100), a prediction O(n^2).
 * Measured costs: docs/bayesian-optimisation.md, "The sampler", "Cost". */
static int fit_restarts(size_t n) { return n <= BO_CHEAP_N ? BO_FIT_RESTARTS : 1; }

static int fit_iterations(size_t n) {
    double r = (double)BO_CHEAP_N / (double)n;
    double it = n <= BO_CHEAP_N ? BO_FIT_ITERS : BO_FIT_ITERS * r * r * r;
    return it > BO_MIN_FIT_ITERS ? (int)it : BO_MIN_FIT_ITERS;
}

static size_t n_candidates(size_t n) {
    double r = 64.0 / (double)(n > 64 ? n : 64);
    double c = BO_CANDIDATES * r * r;
    return c > BO_MIN_CANDIDATES ? (size_t)c : BO_MIN_CANDIDATES;
}

static int refine_iterations(size_t n) {
    double r = 100.0 / (double)(n > 100 ? n : 100);
    double it = BO_REFINE_ITERS * r * r;
    return it > BO_MIN_REFINE_ITERS ? (int)it : BO_MIN_REFINE_ITERS;
}

/* Keeps at most m of the n measured rows of X (n, D), z (n) and uobs (n, P), in their
 * order: the best m / 2 by z and a random draw (keyed by key) of m - m / 2 of the
 * others, so that the model's cost stops growing with the study while it still sees
 * the region of the incumbent closely and the rest of the space coarsely. Returns the
 * rows kept. */
static size_t keep_subset(double *X, double *z, double *uobs, size_t n, size_t D, size_t P,
                          size_t m, uint64_t key) {
    if (n <= m) return n;
    ranked *order = tn_xmalloc(n * sizeof *order);
    unsigned char *keep = tn_xcalloc(n, 1);
    for (size_t k = 0; k < n; k++) order[k] = (ranked){z[k], k};
    qsort(order, n, sizeof *order, ranked_cmp);
    size_t top = m / 2;
    for (size_t k = 0; k < top; k++) keep[order[k].i] = 1;
    tn_rng g;
    tn_rng_seed(&g, key);
    for (size_t k = top; k < m; k++) { /* partial Fisher-Yates over the rest */
        size_t j = k + (size_t)tn_rng_below(&g, (uint64_t)(n - k));
        ranked tmp = order[k];
        order[k] = order[j];
        order[j] = tmp;
        keep[order[k].i] = 1;
    }
    size_t out = 0;
    for (size_t k = 0; k < n; k++) {
        if (!keep[k]) continue;
        if (out != k) {
            memmove(X + out * D, X + k * D, D * sizeof *X);
            memmove(uobs + out * P, uobs + k * P, P * sizeof *uobs);
            z[out] = z[k];
        }
        out++;
    }
    free(keep);
    free(order);
    return out;
}

/* How close (in unit coordinates, on every DOUBLE parameter) a suggestion may come
 * to a pending trial: the distance at which the fitted GP can no longer tell the two
 * points apart through its noise. For Matern 5/2, 1 - k(r) / s2 ~ (5/6) r^2 at small
 * scaled distance r, which equals s2n / s2 at r = sqrt(1.2 s2n / s2); times the
 * shortest lengthscale of a DOUBLE parameter, and kept within [BO_SAME_TOL_MEASURED,
 * BO_SAME_TOL]. A noise-free objective refines near a running trial (the last digits
 * of an optimum); a noisy one keeps its running trials apart. */
static double pending_radius(const enc *e, const gp_model *gp) {
    gp_hyper hy;
    double jitter, ll;
    gp_get_hyper(gp, &hy, &jitter, &ll);
    double lmin = HUGE_VAL;
    for (size_t i = 0; i < e->P; i++) {
        if (e->s->params[i].type != SP_DOUBLE) continue;
        double l = exp(hy.log_lengthscale[e->group[e->off[i]]]);
        if (l < lmin) lmin = l;
    }
    double r = lmin * sqrt(1.2 * exp(hy.log_noise_var - hy.log_signal_var));
    if (!(r > BO_SAME_TOL_MEASURED)) return BO_SAME_TOL_MEASURED;
    return r < BO_SAME_TOL ? r : BO_SAME_TOL;
}

/* Rescales the CATEGORICAL coordinates of the n points X (n, D), encoded by e at
 * height e->onehot, to height h (e itself is left as it is). */
static void onehot_rescale(const enc *e, double *X, size_t n, double h) {
    double r = h / e->onehot;
    for (size_t i = 0; i < e->P; i++) {
        const sp_param *p = &e->s->params[i];
        if (p->type != SP_CATEGORICAL) continue;
        for (size_t k = 0; k < n; k++)
            for (size_t j = 0; j < p->ncategories; j++) X[k * e->D + e->off[i] + j] *= r;
    }
}

/* Fits the model (fit_chosen) to the n measured points X (n, D; encoded by e) and
 * values z, and when the space has a CATEGORICAL, also with its one-hot at height
 * BO_ONEHOT_APART; the larger evidence wins, and X, z and e->onehot are left as the
 * winner's (docs/bayesian-optimisation.md, "Encoding"). Same returns as fit_chosen. */
static int choose_onehot(enc *e, double *X, double *z, size_t n, const gp_fit_options *fo,
                         gp_model **out, char *log, size_t loglen) {
    size_t D = e->D;
    double *z0 = e->categorical ? tn_xmalloc((n + 1) * sizeof *z0) : NULL;
    if (z0) memcpy(z0, z, n * sizeof *z0);
    double near_score = -HUGE_VAL, apart_score = -HUGE_VAL;
    int rc = fit_chosen(X, z, n, D, fo, out, NULL, &near_score, log, loglen);
    if (!z0) return rc;
    double *Xa = tn_xmalloc((n * D + 1) * sizeof *Xa);
    memcpy(Xa, X, n * D * sizeof *Xa);
    onehot_rescale(e, Xa, n, BO_ONEHOT_APART);
    gp_model *apart = NULL;
    if (fit_chosen(Xa, z0, n, D, fo, &apart, NULL, &apart_score, NULL, 0) == 0 &&
        (rc != 0 || apart_score > near_score)) {
        gp_free(*out);
        *out = apart;
        memcpy(X, Xa, n * D * sizeof *X);
        memcpy(z, z0, n * sizeof *z);
        e->onehot = BO_ONEHOT_APART;
        rc = 0;
    } else {
        gp_free(apart);
    }
    free(Xa);
    free(z0);
    return rc;
}

/* The model path: fits, believes the pending trials, maximises the acquisition and
 * writes the winner to out. Returns 0, or -1 with *note set when the caller should
 * fall back to random. */
static int model_point(const sp_space *s, const sp_history *h, taken *t,
                       uint64_t seed, uint64_t index, const bo_options *o, double *out,
                       char *note, size_t notelen) {
    enc e;
    enc_init(&e, s);
    const size_t P = e.P, D = e.D, nt = h ? h->n : 0;
    double *X = tn_xmalloc((nt * D + 1) * sizeof *X); /* measured, then pending rows */
    double *z = tn_xmalloc((nt + 1) * sizeof *z);
    double *uobs = tn_xmalloc((nt * P + 1) * sizeof *uobs);
    double *u = tn_xmalloc(P * sizeof *u), *v = tn_xmalloc(P * sizeof *v);
    double *w = tn_xmalloc(P * sizeof *w), *vs = tn_xmalloc(P * sizeof *vs);
    double *cand = NULL;
    ranked *order = NULL;
    size_t *free_dims = tn_xmalloc(P * sizeof *free_dims);
    gp_model *gp = NULL;
    int rc = 0;
    char log[256] = "";

    /* Measured trials: COMPLETE with a finite objective. */
    size_t n = 0;
    for (size_t k = 0; k < nt; k++) {
        const sp_trial *tr = &h->trials[k];
        if (tr->state != SP_COMPLETE || !tr->has_objective || !isfinite(tr->objective) ||
            !tr->values) {
            continue;
        }
        unit_of_values(s, tr->values, uobs + n * P);
        enc_unit(&e, uobs + n * P, 1, X + n * D, vs); /* to_unit of legal values: exact */
        z[n] = h->maximize ? tr->objective : -tr->objective;
        n++;
    }
    if (o->force_fallback) {
        set_note(note, notelen, "the Gaussian process could not be fitted (forced by "
                                "the options): random suggestion");
        rc = -1;
        goto done;
    }
    size_t mp = o->model_points > 0 ? (size_t)o->model_points : BO_MODEL_POINTS;
    n = keep_subset(X, z, uobs, n, D, P, mp, use_key(seed, index, USE_SUBSET));

    int restarts = o->fit_restarts > 0 ? o->fit_restarts : fit_restarts(n);
    gp_fit_options fo = {restarts, fit_iterations(n), use_key(seed, index, USE_FIT), e.group,
                         e.ngroups};
    int frc;
    if (o->onehot > 0.0) { /* a height set by the options: the encoding's, rescaled */
        onehot_rescale(&e, X, n, o->onehot);
        e.onehot = o->onehot;
        frc = fit_chosen(X, z, n, D, &fo, &gp, NULL, NULL, log, sizeof log);
    } else {
        frc = choose_onehot(&e, X, z, n, &fo, &gp, log, sizeof log);
    }
    if (frc != 0) {
        set_note(note, notelen, "the Gaussian process could not be fitted (%s): random "
                                "suggestion", log[0] ? log : tn_strerror(frc));
        rc = -1;
        goto done;
    }

    t->pending_tol = pending_radius(&e, gp);

    /* Pending trials: each is observed at a believed value, and the model is rebuilt
     * with the fitted hyperparameters. Kriging believer (the default): the model's
     * mean there, all from the model of the measured trials; constant liar: one value
     * for all of them, the best, worst or mean measured one. The belief is whole: a
     * believed value above every measured one becomes the incumbent, so that EI does
     * not pile onto the same peak. */
    double zlo = HUGE_VAL, zhi = -HUGE_VAL, zsum = 0.0;
    for (size_t k = 0; k < n; k++) {
        zlo = z[k] < zlo ? z[k] : zlo;
        zhi = z[k] > zhi ? z[k] : zhi;
        zsum += z[k];
    }
    size_t np = 0;
    int believed = 0; /* the running trials are in the model */
    for (size_t k = 0; k < nt; k++) {
        const sp_trial *tr = &h->trials[k];
        if (tr->state != SP_PENDING || !tr->values) continue;
        double *x = X + (n + np) * D, var;
        unit_of_values(s, tr->values, u);
        enc_unit(&e, u, 1, x, vs);
        switch (o->pending) {
        case BO_PENDING_LIAR_BEST: z[n + np] = zhi; break; /* z is maximised */
        case BO_PENDING_LIAR_WORST: z[n + np] = zlo; break;
        case BO_PENDING_LIAR_MEAN: z[n + np] = zsum / (double)n; break;
        default: gp_predict(gp, x, &z[n + np], &var); break;
        }
        np++;
    }
    if (np > 0) {
        gp_hyper hy;
        double jitter, ll;
        gp_model *with = NULL;
        gp_get_hyper(gp, &hy, &jitter, &ll);
        if (gp_fit_fixed(X, z, n + np, D, &hy, &with, log, sizeof log) == 0) {
            gp_free(gp);
            gp = with;
            believed = 1;
        } else {
            set_note(note, notelen, "the %zu running trials could not be added to the "
                     "Gaussian process (%s): they may be suggested again", np, log);
        }
    }

    double best = -HUGE_VAL;
    for (size_t k = 0; k < n + np; k++) {
        if (z[k] > best) best = z[k];
    }

    /* Candidates: a rotated Sobol set, and Gaussian steps around the best points. */
    size_t nq = o->candidates > 0 ? (size_t)o->candidates : n_candidates(n);
    size_t ncentres = n < BO_LOCAL_CENTRES ? n : BO_LOCAL_CENTRES;
    size_t nc = nq + ncentres * BO_LOCAL_PER_CENTRE;
    cand = tn_xmalloc(nc * P * sizeof *cand);
    lds l;
    lds_init(&l, P, use_key(seed, index, USE_CANDIDATES));
    for (size_t k = 0; k < nq; k++) lds_next(&l, cand + k * P);
    lds_clear(&l);
    order = tn_xmalloc((n > nc ? n : nc) * sizeof *order);
    for (size_t k = 0; k < n; k++) order[k] = (ranked){z[k], k};
    qsort(order, n, sizeof *order, ranked_cmp);
    tn_rng g;
    tn_rng_seed(&g, use_key(seed, index, USE_LOCAL));
    for (size_t c = 0; c < ncentres; c++) {
        const double *centre = uobs + order[c].i * P;
        for (size_t k = 0; k < BO_LOCAL_PER_CENTRE; k++) {
            double *q = cand + (nq + c * BO_LOCAL_PER_CENTRE + k) * P;
            double sd = k % 2 ? BO_LOCAL_SD_FAR
                              : believed ? BO_LOCAL_SD_NEAR_PENDING : BO_LOCAL_SD_NEAR;
            for (size_t i = 0; i < P; i++) {
                /* an inactive coordinate has no value to step from: a uniform one, in
                 * case a step of its parent makes it active */
                q[i] = centre[i] < 0.0 ? tn_rng_uniform(&g)
                                       : clamp01(centre[i] + sd * tn_rng_normal(&g));
            }
        }
    }

    double *x = tn_xmalloc(D * sizeof *x), *ua = tn_xmalloc(P * sizeof *ua);
    acq a = {&e, gp, o->acquisition, o->ucb_beta > 0.0 ? o->ucb_beta : 2.0, best,
             x, vs, ua, free_dims, 0};
    acq_rank(&a, cand, nc, order);
    qsort(order, nc, sizeof *order, ranked_cmp);

    /* The best candidates that are not taken, refined (each on its own, so on the
     * cores at once: refine_task); the winner is the best of them and of their
     * refinements, each scored where it decodes to, compared in the candidates'
     * order. */
    refine_job rj = {s, &a, cand, P, refine_iterations(n), {0}, 0,
                     tn_xmalloc(BO_REFINE * (P + 1) * sizeof(double)), {0}, {0}};
    for (size_t k = 0; k < nc && rj.npicks < BO_REFINE; k++) {
        decode(s, cand + order[k].i * P, v);
        if (!taken_has(t, s, v, w)) rj.pick[rj.npicks++] = order[k].i;
    }
    par_run(rj.npicks, refine_task, &rj);
    double win = -HUGE_VAL;
    int found = 0;
    for (size_t r = 0, k = 0; r < rj.npicks; k++) {
        if (order[k].i != rj.pick[r]) continue;
        decode(s, cand + rj.pick[r] * P, v);
        if (!found || order[k].v > win) {
            memcpy(out, v, P * sizeof *out);
            win = order[k].v;
            found = 1;
        }
        const double *vr = rj.v + r * P;
        if (rj.ok[r] && rj.score[r] > win && !taken_has(t, s, vr, w)) {
            memcpy(out, vr, P * sizeof *out);
            win = rj.score[r];
        }
        r++;
    }
    free(rj.v);
    free(x);
    free(ua);
    if (!found) { /* every candidate is taken: a small space nearly exhausted */
        if (!random_point(s, t, seed, index, out, u, v)) {
            decode(s, cand + order[0].i * P, out);
            set_note(note, notelen, "every candidate point has been tried already: "
                                    "suggesting the best one again");
        }
    }

done:
    gp_free(gp);
    free(order);
    free(cand);
    free(free_dims);
    free(vs);
    free(w);
    free(v);
    free(u);
    free(uobs);
    free(z);
    free(X);
    enc_clear(&e);
    return rc;
}

int bo_suggest(const sp_space *s, const sp_history *h, uint64_t seed, uint64_t index,
               const bo_options *opt, double *out, char *note, size_t notelen) {
    gsl_set_error_handler_off();
    set_note(note, notelen, "%s", "");
    if (!s || (s->n > 0 && (!s->params || !out)) || !space_usable(s)) return TN_EINVAL;
    if (h && h->n > 0 && !h->trials) return TN_EINVAL;
    if (opt && (opt->initial_trials < 0 || opt->candidates < 0 || opt->fit_restarts < 0 ||
                opt->model_points < 0 ||
                opt->pending < 0 || opt->pending >= BO_PENDING_COUNT ||
                (opt->acquisition != BO_LOG_EI && opt->acquisition != BO_UCB) ||
                !(opt->ucb_beta >= 0.0) || !isfinite(opt->ucb_beta) ||
                !(opt->onehot >= 0.0) || !isfinite(opt->onehot))) {
        return TN_EINVAL;
    }
    if (s->n == 0) return 0;

    bo_options o = {0};
    if (opt) o = *opt;
    const size_t P = s->n;
    if (o.initial_trials == 0) { /* max(5, min(P + 1, 20)) */
        o.initial_trials = P + 1 < 5 ? 5 : P + 1 > 20 ? 20 : (int)P + 1;
    }

    taken t;
    taken_init(&t, s, h);
    double *u = tn_xmalloc(P * sizeof *u), *scratch = tn_xmalloc(P * sizeof *scratch);

    /* Trials that are not failed, and the distinct measured points among them. */
    size_t alive = 0, measured = 0;
    const double *first = NULL;
    int distinct = 0;
    for (size_t k = 0; h && k < h->n; k++) {
        const sp_trial *tr = &h->trials[k];
        if (tr->state == SP_FAILED) continue;
        alive++;
        if (tr->state != SP_COMPLETE || !tr->has_objective || !isfinite(tr->objective) ||
            !tr->values) {
            continue;
        }
        measured++;
        if (!first) {
            first = tr->values;
        } else if (!distinct) {
            unit_of_values(s, first, u);
            unit_of_values(s, tr->values, scratch);
            distinct = memcmp(u, scratch, P * sizeof *u) != 0;
        }
    }

    if (alive < (size_t)o.initial_trials || !distinct) {
        if (alive >= (size_t)o.initial_trials) {
            set_note(note, notelen, "%zu finished trial%s with a measurement, at fewer "
                     "than 2 distinct points: the Gaussian process waits, and the "
                     "space-filling design goes on", measured, measured == 1 ? "" : "s");
        }
        if (!design_point(s, &t, seed, index, out, u, scratch) &&
            !random_point(s, &t, seed, index, out, u, scratch)) {
            set_note(note, notelen, "every design and random point tried has been "
                                    "tried already: suggesting one again");
        }
        goto done;
    }
    if (model_point(s, h, &t, seed, index, &o, out, note, notelen) != 0 &&
        !random_point(s, &t, seed, index, out, u, scratch)) {
        size_t len = note ? strlen(note) : 0;
        if (note && len + 1 < notelen) {
            snprintf(note + len, notelen - len, "%s",
                     " (every random point tried has been tried already)");
        }
    }

done:
    free(scratch);
    free(u);
    free(t.u);
    free(t.tol);
    return 0;
}
