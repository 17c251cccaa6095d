/*
 * test_gradcheck.c — tests for trainer/model.c: the gradients of every layer type
 * and of the loss against central finite differences, through the model API.
 *
 * The loss mdl_backward differentiates is the mean softmax cross-entropy over the
 * batch, L = loss_sum / b. For a sample of coordinates of every parameter tensor
 * (weights and biases) the test compares grads[i] with
 *     (L(p_i + eps) - L(p_i - eps)) / (the two perturbed values' difference),
 * evaluated in double from the float forward pass, coordinate by coordinate with
 * |fd - grad| <= atol + rtol*|fd| and over all checked coordinates with the relative
 * error norm ||fd - grad|| / ||fd||. Dropout masks repeat because the dropout rng is
 * re-seeded identically before every forward call.
 *
 * Kinks. Where a perturbation moves a ReLU input across 0 or changes a max-pool
 * window's arg-max, the loss is not differentiable inside [p - eps, p + eps] and the
 * difference quotient measures no derivative. After each forward pass the test
 * records the sign of every ReLU input of the dense layers, and every pool arg-max
 * and the sign of every pooled maximum (a ReLU followed by a max-pool reaches the loss
 * only through the maxima); a coordinate whose +eps or -eps pass differs from the
 * unperturbed one anywhere is retried with eps/10 (and a ten times larger atol), and
 * skipped when that crosses a kink too. Each case asserts that at least 3/4 of the
 * sampled coordinates, and at least half of each tensor's, were compared. (With the
 * seeds here every coordinate is compared; 78 of about 2100 need the smaller step,
 * all in the 2x8x8 CNNs, where one conv parameter moves hundreds of pre-activations at
 * once.) TN_TEST_VERBOSE=1 prints these counts.
 *
 * The cases run twice: on the CPU backend as the trainer uses it, where a conv block
 * (conv, activation, pooling) is one call (kernels.h, conv_block_*), and with those
 * calls taken out of the table, so that the model makes each block of separate calls
 * (as for a backend without conv blocks). test_fused_matches_unfused compares the two
 * on larger batches.
 *
 * The CPU backend's device memory is host memory, so the test perturbs m->params
 * and reads m->grads and the layers' outputs directly. Contracts: trainer/model.h.
 */
#include "trainer/model.h"

#include "common/rng.h"
#include "common/status.h"
#include "tests/check.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const kn_backend *K; /* the backend the models run on */

#define INIT_SEED 1234    /* parameter initialisation */
#define DATA_SEED 99      /* inputs and labels */
#define DROPOUT_SEED 4242 /* re-seeded before every forward pass */
#define SAMPLE_SEED 7     /* which coordinates to check */
#define PER_TENSOR 50     /* coordinates checked per parameter tensor, at most */

/* ---------------------------------------------------------------------------------
 * Helpers
 * --------------------------------------------------------------------------------- */

/* A batch of b random examples: x uniform in [-1, 1), labels uniform over classes. */
typedef struct batch {
    float *x;       /* (b, D) */
    int32_t *y;     /* (b) */
    int b;
} batch;

static batch batch_new(const mdl_config *cfg, int b, uint64_t seed) {
    tn_rng r;
    tn_rng_seed(&r, seed);
    size_t d = (size_t)cfg->in_c * cfg->in_h * cfg->in_w;
    batch bt = {tn_xmalloc((size_t)b * d * sizeof(float)), tn_xmalloc((size_t)b * sizeof(int32_t)),
                b};
    for (size_t i = 0; i < (size_t)b * d; i++) bt.x[i] = 2.0f * tn_rng_uniformf(&r) - 1.0f;
    for (int i = 0; i < b; i++) bt.y[i] = (int32_t)tn_rng_below(&r, (uint64_t)cfg->classes);
    return bt;
}

static void batch_free(batch *bt) {
    free(bt->x);
    free(bt->y);
}

/* A model with max_batch examples and parameters drawn from INIT_SEED. */
static mdl_model *model_new(const mdl_config *cfg, int max_batch) {
    char err[256] = "";
    int rc = mdl_config_check(cfg, err, sizeof err);
    CHECK_MSG(rc == 0, "config rejected: %s", err);
    if (rc != 0) return NULL;
    mdl_model *m = mdl_new(cfg, K, max_batch);
    tn_rng r;
    tn_rng_seed(&r, INIT_SEED);
    mdl_init_params(m, &r);
    return m;
}

/* An activation a max-pool follows (in the conv stack): the loss sees it only through
 * the pool's maxima, so its kinks are recorded at the pool (kink_record). */
static int pooled_act(const mdl_model *m, int l) {
    return l + 1 < m->nlayers && m->layers[l + 1].type == MDL_POOL;
}

/* Number of kink indicators kink_record writes for a batch of b. */
static size_t kink_count(const mdl_model *m, int b) {
    size_t n = 0;
    for (int l = 0; l < m->nlayers; l++) {
        const mdl_layer *L = &m->layers[l];
        if (L->type == MDL_ACT && L->activation == MDL_RELU && !pooled_act(m, l))
            n += (size_t)b * L->in_size;
        if (L->type == MDL_POOL) n += (size_t)2 * b * L->out_size;
    }
    return n;
}

/* The choice (kernels.h: enum kn_pool_choice) a fused conv block makes for output i of
 * pool layer L, (C, B, h/2, w/2), whose unfused form took the element at plane index
 * argmax[i]: with ReLU KN_POOL_ZERO where the output is 0. */
static uint8_t choice_of(const mdl_layer *L, int activation, size_t i) {
    if (activation == MDL_RELU && !(L->out[i] > 0.0f)) return KN_POOL_ZERO;
    int pw = L->w / 2;
    size_t q = i % ((size_t)(L->h / 2) * pw);
    int rel = L->argmax[i] - (int)(2 * (q / pw) * L->w + 2 * (q % pw));
    return rel == 0 ? KN_POOL_TL : rel == 1 ? KN_POOL_TR : rel == L->w ? KN_POOL_BL : KN_POOL_BR;
}

/* Records, after a forward pass over b examples, where the loss is piecewise: the
 * sign of every ReLU input of the dense layers, and every max-pool's arg-maxes (a fused
 * conv block's choices) and the signs of its maxima (where the ReLU before it has its
 * kink: a window's other elements do not reach the loss). That is all a conv block's
 * fused forward pass keeps (model.h, mdl_model.fused), and all the loss depends on in
 * either form. */
static void kink_record(const mdl_model *m, int b, int32_t *sig) {
    for (int l = 0; l < m->nlayers; l++) {
        const mdl_layer *L = &m->layers[l];
        if (L->type == MDL_ACT && L->activation == MDL_RELU && !pooled_act(m, l)) {
            const float *in = m->layers[l - 1].out; /* an activation never comes first */
            for (size_t i = 0; i < (size_t)b * L->in_size; i++) *sig++ = in[i] > 0.0f;
        } else if (L->type == MDL_POOL) {
            for (size_t i = 0; i < (size_t)b * L->out_size; i++)
                *sig++ = m->fused ? L->choice[i] : L->argmax[i];
            for (size_t i = 0; i < (size_t)b * L->out_size; i++) *sig++ = L->out[i] > 0.0f;
        }
    }
}

/* The mean loss of a training forward pass over bt; the dropout rng starts from the
 * same seed every time, so the masks repeat. Records the kinks into sig if not NULL. */
static double batch_loss(mdl_model *m, const batch *bt, int32_t *sig) {
    tn_rng drop;
    tn_rng_seed(&drop, DROPOUT_SEED);
    double sum = NAN;
    mdl_forward(m, bt->x, bt->y, bt->b, 1, &drop, &sum, NULL);
    if (sig) kink_record(m, bt->b, sig);
    return sum / bt->b;
}

/* ---------------------------------------------------------------------------------
 * The gradient check
 * --------------------------------------------------------------------------------- */

/* Tolerances. The forward pass runs in float, so the mean loss carries a rounding
 * error of ~1e-8 and the difference quotient ~1e-8/eps of noise: up to ~1.5e-5 seen
 * at eps = 1e-3 (2e-4 at the retry's 1e-4), against gradients of 1e-4..0.3; the
 * truncation error (~eps^2 times the third derivative) is far below that. The
 * worst coordinate uses 0.4 of its tolerance; a gradient 3% off fails (see
 * test_gradcheck_detects_errors). */
#define GC_EPS 1e-3
#define GC_ATOL 5e-5
#define GC_RTOL 2e-3
#define GC_NORM 5e-3 /* bound on ||fd - grad|| / ||fd|| over a case (seen: <= 7e-4) */

typedef struct gc_result {
    int tried;        /* coordinates sampled */
    int checked;      /* of which compared (the others sat at a kink) */
    int retried;      /* of which compared with the smaller step */
    int bad;          /* compared and out of tolerance */
    int thin_tensors; /* tensors with fewer than half their sampled coordinates compared */
    double err2, fd2; /* sums of (fd - grad)^2 and fd^2 over the compared coordinates */
    double worst;     /* largest |fd - grad| / (atol + rtol*|fd|) */
} gc_result;

/* A deliberate error put into the analytic gradients, for the self-test. */
typedef struct gc_tamper {
    double scale; /* every gradient times this */
    long index;   /* and this one (if >= 0) plus delta */
    double delta;
} gc_tamper;

static const gc_tamper no_tamper = {1.0, -1, 0.0};

/* What one gradient check works on. */
typedef struct gc_run {
    mdl_model *m;
    const batch *bt;
    const double *grads; /* (P) the analytic gradient */
    const int32_t *sig0; /* the kinks of the unperturbed pass */
    int32_t *sig;        /* scratch for a perturbed pass's */
    size_t nsig;
    int quiet;           /* do not print mismatches (the self-test expects them) */
    gc_result *res;
} gc_run;

/* Central difference of the mean loss in parameter i with step eps (divided by the
 * step the float parameter really took). Returns 0, or -1 when the +eps or the -eps
 * pass sits on the other side of a kink. */
static int central_diff(gc_run *g, size_t i, double eps, double *fd) {
    float *p = g->m->params, orig = p[i];
    p[i] = orig + (float)eps;
    double hi = p[i], lp = batch_loss(g->m, g->bt, g->sig);
    int kink = memcmp(g->sig, g->sig0, g->nsig * sizeof *g->sig) != 0;
    p[i] = orig - (float)eps;
    double lo = p[i], lm = batch_loss(g->m, g->bt, g->sig);
    kink |= memcmp(g->sig, g->sig0, g->nsig * sizeof *g->sig) != 0;
    p[i] = orig;
    *fd = (lp - lm) / (hi - lo);
    return kink ? -1 : 0;
}

/* Checks up to PER_TENSOR coordinates of the n parameters at off. A coordinate at a
 * kink is retried with eps/10 and ten times the atol (the rounding noise grows as
 * 1/eps); when that step crosses a kink too, the coordinate is skipped. */
static void check_tensor(gc_run *g, const char *what, size_t off, size_t n, tn_rng *pick) {
    /* A sample without replacement: the first k of a partial Fisher-Yates shuffle. */
    size_t k = n < PER_TENSOR ? n : PER_TENSOR;
    size_t *idx = tn_xmalloc(n * sizeof *idx);
    for (size_t i = 0; i < n; i++) idx[i] = i;
    for (size_t i = 0; i < k; i++) {
        size_t j = i + (size_t)tn_rng_below(pick, n - i);
        size_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
    gc_result *r = g->res;
    int checked = 0;
    for (size_t s = 0; s < k; s++) {
        size_t i = off + idx[s];
        double fd, atol = GC_ATOL;
        r->tried++;
        if (central_diff(g, i, GC_EPS, &fd) != 0) {
            atol *= 10;
            if (central_diff(g, i, GC_EPS / 10, &fd) != 0) continue;
            r->retried++;
        }
        checked++;
        double an = g->grads[i], tol = atol + GC_RTOL * fabs(fd);
        r->err2 += (fd - an) * (fd - an);
        r->fd2 += fd * fd;
        if (fabs(fd - an) / tol > r->worst) r->worst = fabs(fd - an) / tol;
        if (fabs(fd - an) > tol && r->bad++ < 5 && !g->quiet)
            fprintf(stderr, "  %s[%zu]: finite difference %.7g, gradient %.7g\n", what, idx[s],
                    fd, an);
    }
    r->checked += checked;
    if (2 * checked < (int)k) r->thin_tensors++;
    free(idx);
}

/* Runs the check over every parameter tensor of m on bt. */
static gc_result gradcheck(mdl_model *m, const batch *bt, gc_tamper tamper) {
    gc_result res = {0};
    size_t nsig = kink_count(m, bt->b);
    int32_t *sig0 = tn_xcalloc(nsig + 1, sizeof *sig0), *sig = tn_xcalloc(nsig + 1, sizeof *sig);
    float *gf = tn_xmalloc(m->nparams * sizeof *gf);
    double *grads = tn_xmalloc(m->nparams * sizeof *grads);

    double loss = batch_loss(m, bt, sig0);
    CHECK_MSG(isfinite(loss) && loss > 0, "loss %g", loss);
    mdl_backward(m, bt->b);
    K->download(gf, m->grads, m->nparams * sizeof *gf);
    for (size_t i = 0; i < m->nparams; i++) grads[i] = gf[i] * tamper.scale;
    if (tamper.index >= 0) grads[tamper.index] += tamper.delta;

    int quiet = tamper.scale != 1.0 || tamper.index >= 0;
    gc_run g = {m, bt, grads, sig0, sig, nsig, quiet, &res};
    tn_rng pick;
    tn_rng_seed(&pick, SAMPLE_SEED);
    for (int l = 0; l < m->nlayers; l++) {
        const mdl_layer *L = &m->layers[l];
        size_t nw, nb;
        if (L->type == MDL_DENSE) {
            nw = (size_t)L->out_size * L->in_size;
            nb = L->out_size;
        } else if (L->type == MDL_CONV) {
            nw = (size_t)L->c_out * L->c_in * 9;
            nb = L->c_out;
        } else {
            continue;
        }
        char what[64];
        snprintf(what, sizeof what, "layer %d weight", l);
        check_tensor(&g, what, L->w_off, nw, &pick);
        snprintf(what, sizeof what, "layer %d bias", l);
        check_tensor(&g, what, L->b_off, nb, &pick);
    }
    free(sig0);
    free(sig);
    free(gf);
    free(grads);
    return res;
}

/* ---------------------------------------------------------------------------------
 * Gradient checks of every layer type
 * --------------------------------------------------------------------------------- */

#define MLP(act, drop, classes_, nh, ...)                                                   \
    {.kind = MDL_MLP, .activation = (act), .dropout = (drop), .in_c = 1, .in_h = 2,       \
     .in_w = 5, .classes = (classes_), .nhidden = (nh), .hidden = {__VA_ARGS__}}

static const struct gc_case {
    const char *name;
    mdl_config cfg;
    int b;
} gc_cases[] = {
    {"mlp relu, 1 hidden", MLP(MDL_RELU, 0.0f, 4, 1, 12), 5},
    {"mlp tanh, 1 hidden", MLP(MDL_TANH, 0.0f, 3, 1, 8), 4},
    {"mlp gelu, 1 hidden", MLP(MDL_GELU, 0.0f, 5, 1, 9), 4},
    {"mlp, 0 hidden", MLP(MDL_RELU, 0.0f, 4, 0, 0), 6},
    {"mlp relu, 2 hidden", MLP(MDL_RELU, 0.0f, 5, 2, 16, 9), 6},
    {"mlp tanh, 2 hidden", MLP(MDL_TANH, 0.0f, 3, 2, 7, 6), 3},
    {"mlp gelu, 2 hidden", MLP(MDL_GELU, 0.0f, 4, 2, 11, 5), 5},
    {"mlp relu, dropout 0.3", MLP(MDL_RELU, 0.3f, 4, 2, 16, 12), 6},
    {"mlp gelu, dropout 0.5", MLP(MDL_GELU, 0.5f, 3, 1, 14), 5},
    {"cnn relu 1x6x6, 1 conv",
     {.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 1, .in_h = 6, .in_w = 6, .classes = 3,
      .nconv = 1, .filters = {3}},
     3},
    {"cnn tanh 1x6x6, 1 conv, 1 hidden",
     {.kind = MDL_CNN, .activation = MDL_TANH, .in_c = 1, .in_h = 6, .in_w = 6, .classes = 3,
      .nhidden = 1, .hidden = {5}, .nconv = 1, .filters = {4}},
     3},
    {"cnn relu 2x8x8, 2 conv",
     {.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 2, .in_h = 8, .in_w = 8, .classes = 4,
      .nhidden = 1, .hidden = {6}, .nconv = 2, .filters = {3, 4}},
     3},
    {"cnn tanh 2x8x8, 2 conv",
     {.kind = MDL_CNN, .activation = MDL_TANH, .in_c = 2, .in_h = 8, .in_w = 8, .classes = 4,
      .nconv = 2, .filters = {3, 5}},
     2},
    {"cnn relu 1x7x5 (floor pooling), 2 conv",
     {.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 1, .in_h = 7, .in_w = 5, .classes = 3,
      .nhidden = 1, .hidden = {5}, .nconv = 2, .filters = {3, 4}},
     4},
    {"cnn tanh 1x7x5 (floor pooling), 1 conv",
     {.kind = MDL_CNN, .activation = MDL_TANH, .in_c = 1, .in_h = 7, .in_w = 5, .classes = 3,
      .nconv = 1, .filters = {3}},
     3},
    {"cnn gelu 2x8x8, dropout 0.25",
     {.kind = MDL_CNN, .activation = MDL_GELU, .dropout = 0.25f, .in_c = 2, .in_h = 8, .in_w = 8,
      .classes = 4, .nhidden = 1, .hidden = {8}, .nconv = 2, .filters = {3, 3}},
     3},
};

static void test_gradcheck_cases(void) {
    for (size_t c = 0; c < sizeof gc_cases / sizeof gc_cases[0]; c++) {
        const struct gc_case *gc = &gc_cases[c];
        mdl_model *m = model_new(&gc->cfg, gc->b);
        if (!m) continue;
        batch bt = batch_new(&gc->cfg, gc->b, DATA_SEED + c);
        gc_result r = gradcheck(m, &bt, no_tamper);
        double norm = sqrt(r.err2 / r.fd2);
        if (getenv("TN_TEST_VERBOSE"))
            printf("  %-40s %4d tried %4d checked (%3d retried), rel norm %.2e, worst %.2f\n",
                   gc->name, r.tried, r.checked, r.retried, norm, r.worst);
        CHECK_MSG(r.bad == 0, "%s: %d of %d coordinates out of tolerance", gc->name, r.bad,
                  r.checked);
        CHECK_MSG(norm <= GC_NORM, "%s: relative error norm %.3g", gc->name, norm);
        CHECK_MSG(4 * r.checked >= 3 * r.tried && r.thin_tensors == 0,
                  "%s: only %d of %d coordinates compared (%d tensors thin)", gc->name, r.checked,
                  r.tried, r.thin_tensors);
        CHECK_MSG(r.fd2 > 0, "%s: every finite difference is zero", gc->name);
        if (gc->cfg.dropout > 0) { /* the masks really drop units */
            int zeros = 0, kept = 0, total = 0;
            for (int l = 0; l < m->nlayers; l++) {
                const mdl_layer *L = &m->layers[l];
                if (L->type != MDL_DROPOUT) continue;
                total += gc->b * L->out_size;
                for (size_t i = 0; i < (size_t)gc->b * L->out_size; i++) {
                    zeros += L->mask[i] == 0.0f;
                    kept += fabsf(L->mask[i] - 1.0f / (1.0f - gc->cfg.dropout)) < 1e-6f;
                }
            }
            CHECK_MSG(zeros > 0 && kept > 0 && zeros + kept == total,
                      "%s: dropout masks have %d zeros, %d kept of %d", gc->name, zeros, kept,
                      total);
        }
        batch_free(&bt);
        mdl_free(m);
    }
}

/* The check has teeth: gradients 1% too large, or one output-bias gradient off by
 * 1e-3, fail it. */
static void test_gradcheck_detects_errors(void) {
    const mdl_config cfg = MLP(MDL_TANH, 0.0f, 3, 1, 8);
    mdl_model *m = model_new(&cfg, 4);
    if (!m) return;
    batch bt = batch_new(&cfg, 4, DATA_SEED);
    gc_result r = gradcheck(m, &bt, (gc_tamper){1.01, -1, 0.0});
    CHECK_MSG(r.bad > 0 && sqrt(r.err2 / r.fd2) > GC_NORM, "1%% error: %d bad, norm %.3g", r.bad,
              sqrt(r.err2 / r.fd2));
    const mdl_layer *out = &m->layers[m->nlayers - 1];
    r = gradcheck(m, &bt, (gc_tamper){1.0, (long)out->b_off + 1, 1e-3});
    CHECK_MSG(r.bad == 1, "one wrong gradient: %d bad", r.bad);
    batch_free(&bt);
    mdl_free(m);
}

/* ---------------------------------------------------------------------------------
 * Forward pass against a double-precision reference
 * --------------------------------------------------------------------------------- */

/* The logits of example x through m's layers in double, from the documented layouts:
 * dense weights (out, in), conv weights (C_out, C_in*3*3) with pad 1, 2x2 max pooling
 * with floor, dropout as identity (evaluation). Returns the loss of label y and sets
 * *right to whether the largest logit is y's. */
static double ref_example_loss(const mdl_model *m, const float *x, int32_t y, int *right) {
    size_t widest = (size_t)m->input_size;
    for (int l = 0; l < m->nlayers; l++)
        if ((size_t)m->layers[l].out_size > widest) widest = m->layers[l].out_size;
    double *a = tn_xcalloc(widest, sizeof *a), *o = tn_xcalloc(widest, sizeof *o);
    for (int i = 0; i < m->input_size; i++) a[i] = x[i];
    const float *p = m->params;
    for (int l = 0; l < m->nlayers; l++) {
        const mdl_layer *L = &m->layers[l];
        switch (L->type) {
        case MDL_DENSE:
            for (int j = 0; j < L->out_size; j++) {
                double s = p[L->b_off + j];
                for (int i = 0; i < L->in_size; i++)
                    s += (double)p[L->w_off + (size_t)j * L->in_size + i] * a[i];
                o[j] = s;
            }
            break;
        case MDL_CONV:
            for (int f = 0; f < L->c_out; f++)
                for (int yy = 0; yy < L->h; yy++)
                    for (int xx = 0; xx < L->w; xx++) {
                        double s = p[L->b_off + f];
                        for (int c = 0; c < L->c_in; c++)
                            for (int ki = 0; ki < 3; ki++)
                                for (int kj = 0; kj < 3; kj++) {
                                    int iy = yy + ki - 1, ix = xx + kj - 1;
                                    if (iy < 0 || iy >= L->h || ix < 0 || ix >= L->w) continue;
                                    size_t wi = (((size_t)f * L->c_in + c) * 3 + ki) * 3 + kj;
                                    s += (double)p[L->w_off + wi] *
                                         a[((size_t)c * L->h + iy) * L->w + ix];
                                }
                        o[((size_t)f * L->h + yy) * L->w + xx] = s;
                    }
            break;
        case MDL_ACT:
            for (int i = 0; i < L->in_size; i++) {
                double v = a[i];
                o[i] = L->activation == MDL_RELU   ? (v > 0 ? v : 0)
                       : L->activation == MDL_TANH ? tanh(v)
                                                   : 0.5 * v * (1 + erf(v / sqrt(2.0)));
            }
            break;
        case MDL_POOL: {
            int oh = L->h / 2, ow = L->w / 2;
            for (int c = 0; c < L->c_in; c++)
                for (int yy = 0; yy < oh; yy++)
                    for (int xx = 0; xx < ow; xx++) {
                        const double *pl = a + (size_t)c * L->h * L->w;
                        double v = pl[2 * yy * L->w + 2 * xx];
                        v = fmax(v, pl[2 * yy * L->w + 2 * xx + 1]);
                        v = fmax(v, pl[(2 * yy + 1) * L->w + 2 * xx]);
                        v = fmax(v, pl[(2 * yy + 1) * L->w + 2 * xx + 1]);
                        o[((size_t)c * oh + yy) * ow + xx] = v;
                    }
            break;
        }
        case MDL_DROPOUT: /* identity at evaluation */
        case MDL_FLATTEN: /* identity for one example: (c, h, w) read as a vector */
            for (int i = 0; i < L->in_size; i++) o[i] = a[i];
            break;
        default:
            CHECK_MSG(0, "layer %d has a type (%d) the reference does not know", l, L->type);
        }
        double *t = a;
        a = o;
        o = t;
    }
    int k = m->cfg.classes;
    int arg = 0;
    for (int j = 1; j < k; j++)
        if (a[j] > a[arg]) arg = j;
    double mx = a[arg], s = 0;
    for (int j = 0; j < k; j++) s += exp(a[j] - mx);
    double loss = mx + log(s) - a[y];
    *right = arg == y;
    free(a);
    free(o);
    return loss;
}

static void test_forward_reference(void) {
    for (size_t c = 0; c < sizeof gc_cases / sizeof gc_cases[0]; c++) {
        const struct gc_case *gc = &gc_cases[c];
        mdl_model *m = model_new(&gc->cfg, gc->b);
        if (!m) continue;
        batch bt = batch_new(&gc->cfg, gc->b, DATA_SEED + 100 + c);
        double want = 0;
        int want_correct = 0;
        for (int i = 0; i < gc->b; i++) {
            int right;
            want += ref_example_loss(m, bt.x + (size_t)i * m->input_size, bt.y[i], &right);
            want_correct += right;
        }
        double got = NAN;
        int64_t correct = -1;
        mdl_forward(m, bt.x, bt.y, gc->b, 0, NULL, &got, &correct); /* evaluation */
        CHECK_MSG(fabs(got - want) <= 1e-5 * gc->b, "%s: loss_sum %.9g, reference %.9g",
                  gc->name, got, want);
        CHECK_MSG(correct == want_correct, "%s: correct = %lld, reference %d", gc->name,
                  (long long)correct, want_correct);
        batch_free(&bt);
        mdl_free(m);
    }
}

/* ---------------------------------------------------------------------------------
 * The first layer's input gradient, smaller batches
 * --------------------------------------------------------------------------------- */

/* A table that forwards to K and notes each conv block backward call's dx. */
static const float *spy_dx[8];
static int spy_calls;

static void spy_conv_block_backward(float *dW, float *db, float *dx, const float *dy,
                                    const uint8_t *choice, const float *y, const float *zmax,
                                    const float *x, int b, size_t istride, size_t cstride, int c,
                                    int h, int w, const float *W, int f, int act) {
    if (spy_calls < 8) spy_dx[spy_calls] = dx;
    spy_calls++;
    K->conv_block_backward(dW, db, dx, dy, choice, y, zmax, x, b, istride, cstride, c, h, w, W,
                           f, act);
}

/* model.c never computes the first layer's input gradient: with only one dense
 * layer neither ping-pong buffer is touched; in a CNN with one conv block the
 * conv layer's col (which the input-gradient GEMM would overwrite) survives backward
 * unchanged, and where the backend runs conv blocks in one call (model.h,
 * mdl_model.fused), the first block's is asked for no dx, the second's is. */
static void test_fused_first_block_no_dx(void) {
    if (!K->conv_block_backward) return;
    kn_backend spy = *K;
    spy.conv_block_backward = spy_conv_block_backward;
    const mdl_config cfg = {.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 2, .in_h = 8,
                            .in_w = 6, .classes = 3, .nconv = 2, .filters = {3, 4}};
    mdl_model *m = mdl_new(&cfg, &spy, 5);
    CHECK(m->fused);
    for (int l = 0; l < m->nlayers; l++) { /* only the pool layers keep activations */
        const mdl_layer *L = &m->layers[l];
        if (L->type == MDL_CONV) CHECK(L->out == NULL && L->col == NULL);
        if (L->type == MDL_POOL) CHECK(L->out != NULL && L->choice != NULL && !L->argmax);
    }
    tn_rng r;
    tn_rng_seed(&r, INIT_SEED);
    mdl_init_params(m, &r);
    batch bt = batch_new(&cfg, 5, DATA_SEED);
    batch_loss(m, &bt, NULL);
    spy_calls = 0;
    mdl_backward(m, 5);
    CHECK_INT_EQ(spy_calls, 2);
    CHECK_MSG(spy_dx[0] != NULL, "the second block's input gradient was not asked for");
    CHECK_MSG(spy_dx[1] == NULL, "the first block's input gradient was asked for");
    batch_free(&bt);
    mdl_free(m);
}

static void test_first_layer_input_grad_unused(void) {
    const mdl_config mlp = MLP(MDL_RELU, 0.0f, 4, 0, 0);
    const mdl_config cnn = {.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 1, .in_h = 6,
                            .in_w = 6, .classes = 3, .nconv = 1, .filters = {3}};
    const mdl_config *cfgs[2] = {&mlp, &cnn};
    kn_backend unfused = *K; /* the conv block as separate calls, with a col */
    unfused.conv_block_forward = NULL;
    unfused.conv_block_backward = NULL;
    for (int c = 0; c < 2; c++) {
        const kn_backend *keep = K;
        if (c == 1) K = &unfused;
        mdl_model *m = model_new(cfgs[c], 4);
        K = keep;
        if (!m) continue;
        batch bt = batch_new(cfgs[c], 4, DATA_SEED);
        batch_loss(m, &bt, NULL);
        float *input = tn_xmalloc((size_t)4 * m->input_size * sizeof(float));
        memcpy(input, m->input, (size_t)4 * m->input_size * sizeof(float));
        size_t wa = 0;
        for (int l = 0; l < m->nlayers; l++)
            if ((size_t)m->layers[l].out_size > wa) wa = m->layers[l].out_size;
        if ((size_t)m->input_size > wa) wa = m->input_size;
        const mdl_layer *conv = &m->layers[0];
        size_t ncol = (size_t)9 * cfgs[c]->in_c * 4 * cfgs[c]->in_h * cfgs[c]->in_w;
        float *col = NULL;
        if (c == 0) {
            K->fill(m->grad_a, NAN, 4 * wa);
            K->fill(m->grad_b, NAN, 4 * wa);
        } else {
            CHECK(conv->type == MDL_CONV && conv->col != NULL);
            col = tn_xmalloc(ncol * sizeof(float));
            memcpy(col, conv->col, ncol * sizeof(float));
        }
        K->fill(m->grads, NAN, m->nparams);
        mdl_backward(m, 4);
        size_t finite = 0, untouched = 0;
        for (size_t i = 0; i < m->nparams; i++) finite += isfinite(m->grads[i]) != 0;
        if (c == 0) {
            for (size_t i = 0; i < 4 * wa; i++)
                untouched += isnan(m->grad_a[i]) && isnan(m->grad_b[i]);
            CHECK_MSG(untouched == 4 * wa, "mlp: %zu of %zu ping-pong entries touched",
                      4 * wa - untouched, 4 * wa);
        } else {
            CHECK_MSG(memcmp(col, conv->col, ncol * sizeof(float)) == 0,
                      "cnn: the first conv layer's col was overwritten by backward");
            free(col);
        }
        CHECK_MSG(finite == m->nparams, "%zu of %zu gradients not finite", m->nparams - finite,
                  m->nparams);
        CHECK(memcmp(input, m->input, (size_t)4 * m->input_size * sizeof(float)) == 0);
        free(input);
        batch_free(&bt);
        mdl_free(m);
    }
}

/* mdl_forward_rows gathers rows idx of a data set itself: the same loss, count and
 * gradients as mdl_forward on the batch gathered by hand, on the direct path (host
 * memory) and on the staging path a device backend takes. */
static void test_forward_rows(void) {
    const mdl_config cfg = {.kind = MDL_CNN, .activation = MDL_RELU, .dropout = 0.25f,
                            .in_c = 1, .in_h = 6, .in_w = 6, .classes = 3, .nhidden = 1,
                            .hidden = {5}, .nconv = 1, .filters = {2}};
    const int n = 10, b = 4;
    const int32_t idx[4] = {7, 2, 2, 9}; /* repeats allowed */
    batch all = batch_new(&cfg, n, DATA_SEED + 7);
    batch picked = batch_new(&cfg, b, DATA_SEED + 8);
    size_t d = (size_t)cfg.in_c * cfg.in_h * cfg.in_w;
    for (int i = 0; i < b; i++) {
        memcpy(picked.x + i * d, all.x + (size_t)idx[i] * d, d * sizeof(float));
        picked.y[i] = all.y[idx[i]];
    }
    kn_backend staged = *K;
    staged.host_memory = 0;
    const kn_backend *backends[2] = {K, &staged};
    for (int v = 0; v < 2; v++) {
        mdl_model *ref = model_new(&cfg, b), *m = mdl_new(&cfg, backends[v], b);
        mdl_set_params(m, ref->params);
        tn_rng r1, r2;
        tn_rng_seed(&r1, 5);
        tn_rng_seed(&r2, 5);
        double l1, l2;
        int64_t c1, c2;
        mdl_forward(ref, picked.x, picked.y, b, 1, &r1, &l1, &c1);
        mdl_forward_rows(m, all.x, all.y, idx, b, 1, &r2, &l2, &c2);
        CHECK_MSG(l1 == l2, "%s: loss %.9g vs %.9g", v ? "staged" : "direct", l1, l2);
        CHECK_INT_EQ(c1, c2);
        mdl_backward(ref, b);
        mdl_backward(m, b);
        CHECK_MSG(memcmp(ref->grads, m->grads, m->nparams * sizeof(float)) == 0,
                  "%s: gradients differ", v ? "staged" : "direct");
        CHECK(v == 0 ? m->stage_x == NULL : m->stage_x != NULL);
        mdl_free(ref);
        mdl_free(m);
    }
    batch_free(&all);
    batch_free(&picked);
}

/* b = 3 on a model built for 8 gives the loss and gradients of a model built for 3,
 * also right after a full batch of 8 left its buffers dirty. */
static void test_partial_batch(void) {
    const mdl_config cfgs[] = {
        MLP(MDL_RELU, 0.3f, 4, 2, 10, 7),
        {.kind = MDL_CNN, .activation = MDL_TANH, .dropout = 0.2f, .in_c = 2, .in_h = 7,
         .in_w = 6, .classes = 3, .nhidden = 1, .hidden = {6}, .nconv = 2, .filters = {3, 4}},
    };
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        mdl_model *big = model_new(&cfgs[c], 8), *small = model_new(&cfgs[c], 3);
        if (!big || !small) {
            mdl_free(big);
            mdl_free(small);
            continue;
        }
        CHECK(memcmp(big->params, small->params, big->nparams * sizeof(float)) == 0);
        batch full = batch_new(&cfgs[c], 8, DATA_SEED + 1), bt = batch_new(&cfgs[c], 3, DATA_SEED);
        batch_loss(big, &full, NULL);
        mdl_backward(big, 8);

        double lb = batch_loss(big, &bt, NULL), ls = batch_loss(small, &bt, NULL);
        mdl_backward(big, 3);
        mdl_backward(small, 3);
        CHECK_NEAR(lb, ls, 1e-7, 1e-6);
        size_t far = 0;
        for (size_t i = 0; i < big->nparams; i++)
            far += !(fabsf(big->grads[i] - small->grads[i]) <=
                     1e-7f + 1e-5f * fabsf(small->grads[i]));
        CHECK_MSG(far == 0, "config %zu: %zu of %zu gradients differ", c, far, big->nparams);
        size_t nonzero = 0;
        for (size_t i = 0; i < big->nparams; i++) nonzero += small->grads[i] != 0.0f;
        CHECK_MSG(nonzero > big->nparams / 4, "config %zu: only %zu gradients nonzero", c, nonzero);
        batch_free(&full);
        batch_free(&bt);
        mdl_free(big);
        mdl_free(small);
    }
}

/* ---------------------------------------------------------------------------------
 * Conv blocks in one call against the separate calls
 * --------------------------------------------------------------------------------- */

/* Runs a training forward and backward pass of cfg on b examples on backend k with
 * threads threads; returns the model (yours) with the loss in *loss. */
static mdl_model *pass_on(const kn_backend *k, int threads, const mdl_config *cfg, const batch *bt,
                          double *loss, int64_t *correct) {
    k->set_threads(threads);
    mdl_model *m = mdl_new(cfg, k, bt->b);
    tn_rng r;
    tn_rng_seed(&r, INIT_SEED);
    mdl_init_params(m, &r);
    tn_rng drop;
    tn_rng_seed(&drop, DROPOUT_SEED);
    mdl_forward(m, bt->x, bt->y, bt->b, 1, &drop, loss, correct);
    mdl_backward(m, bt->b);
    k->set_threads(1);
    return m;
}

/* The CPU's conv blocks (kernels.h, conv_block_*; model.h, mdl_model.fused) give the
 * loss, the pooled activations and the gradients of the separate calls (which the CUDA
 * backend makes, and test_gradcheck_cases_unfused checks), to rounding; on batches
 * that span several groups and chunks of cpu_conv.c, odd sizes, every activation, on
 * one thread and on two. */
static void test_fused_matches_unfused(void) {
    static const struct fused_case {
        mdl_config cfg;
        int b;
    } cases[] = {
        {{.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 1, .in_h = 28, .in_w = 28,
          .classes = 10, .nhidden = 1, .hidden = {16}, .nconv = 2, .filters = {8, 16}},
         37},
        {{.kind = MDL_CNN, .activation = MDL_TANH, .in_c = 3, .in_h = 13, .in_w = 11,
          .classes = 4, .nconv = 2, .filters = {5, 7}},
         19},
        {{.kind = MDL_CNN, .activation = MDL_GELU, .dropout = 0.2f, .in_c = 2, .in_h = 9,
          .in_w = 10, .classes = 3, .nhidden = 1, .hidden = {6}, .nconv = 2, .filters = {4, 3}},
         3},
        {{.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 16, .in_h = 32, .in_w = 30,
          .classes = 5, .nconv = 1, .filters = {24}},
         21}, /* a chunk is one image: 21 images in 16 groups of 1 or 2 chunks */
    };
    kn_backend unfused = *K;
    unfused.conv_block_forward = NULL;
    unfused.conv_block_backward = NULL;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const mdl_config *cfg = &cases[c].cfg;
        batch bt = batch_new(cfg, cases[c].b, DATA_SEED + 300 + c);
        double lu, lf, l2;
        int64_t cu, cf, c2;
        mdl_model *mu = pass_on(&unfused, 1, cfg, &bt, &lu, &cu);
        mdl_model *mf = pass_on(K, 1, cfg, &bt, &lf, &cf);
        mdl_model *m2 = pass_on(K, 2, cfg, &bt, &l2, &c2);
        CHECK(!mu->fused && mf->fused);
        CHECK_NEAR(lf, lu, 1e-6, 1e-6);
        CHECK_INT_EQ(cf, cu);
        for (int l = 0; l < mf->nlayers; l++) {
            const mdl_layer *U = &mu->layers[l], *F = &mf->layers[l];
            if (F->type != MDL_POOL) continue;
            size_t n = (size_t)bt.b * F->out_size, far = 0, moved = 0;
            size_t pp = (size_t)(F->h / 2) * (F->w / 2);
            for (size_t i = 0; i < n; i++) { /* fused (B, C, pp) against (C, B, pp) */
                size_t img = i / ((size_t)F->c_in * pp), ch = i / pp % F->c_in;
                size_t u = (ch * bt.b + img) * pp + i % pp;
                far += !(fabsf(F->out[i] - U->out[u]) <= 1e-6f + 1e-5f * fabsf(U->out[u]));
                moved += F->choice[i] != choice_of(U, cfg->activation, u);
            }
            CHECK_MSG(far == 0, "case %zu layer %d: %zu of %zu pooled values differ", c, l, far, n);
            CHECK_MSG(moved == 0, "case %zu layer %d: %zu of %zu choices differ", c, l, moved, n);
        }
        double scale = 0;
        for (size_t i = 0; i < mu->nparams; i++)
            if (fabsf(mu->grads[i]) > scale) scale = fabsf(mu->grads[i]);
        size_t far = 0;
        for (size_t i = 0; i < mu->nparams; i++)
            far += !(fabs((double)mf->grads[i] - mu->grads[i]) <=
                     1e-6 * scale + 1e-4 * fabs((double)mu->grads[i]));
        CHECK_MSG(far == 0, "case %zu: %zu of %zu gradients differ", c, far, mu->nparams);
        CHECK_MSG(scale > 0, "case %zu: every gradient is zero", c);
        /* OpenBLAS's products of the dense layers may round otherwise on two threads
         * (the conv blocks' own results do not depend on the threads: test_kernels) */
        CHECK_NEAR(l2, lf, 1e-6, 1e-6);
        CHECK_INT_EQ(c2, cf);
        far = 0;
        for (size_t i = 0; i < mu->nparams; i++)
            far += !(fabs((double)m2->grads[i] - mf->grads[i]) <=
                     1e-6 * scale + 1e-4 * fabs((double)mf->grads[i]));
        CHECK_MSG(far == 0, "case %zu: %zu of %zu gradients differ on 2 threads", c, far,
                  mu->nparams);
        mdl_free(mu);
        mdl_free(mf);
        mdl_free(m2);
        batch_free(&bt);
    }
}

/* ---------------------------------------------------------------------------------
 * Parameter counts and configuration checks
 * --------------------------------------------------------------------------------- */

static const struct count_case {
    const char *name;
    mdl_config cfg;
    size_t want;
} count_cases[] = {
    /* 784*256 + 256 + 256*256 + 256 + 256*10 + 10 = 200960 + 65792 + 2570 */
    {"mlp 784-256-256-10",
     {.kind = MDL_MLP, .activation = MDL_RELU, .in_c = 1, .in_h = 28, .in_w = 28, .classes = 10,
      .nhidden = 2, .hidden = {256, 256}},
     269322},
    /* conv1 32*1*9 + 32 = 320; conv2 64*32*9 + 64 = 18496; 28 -> 14 -> 7, so the
     * flattened size is 64*7*7 = 3136; dense 3136*128 + 128 = 401536; output
     * 128*10 + 10 = 1290. Total 320 + 18496 + 401536 + 1290. */
    {"cnn 1x28x28 32,64 128",
     {.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 1, .in_h = 28, .in_w = 28, .classes = 10,
      .nhidden = 1, .hidden = {128}, .nconv = 2, .filters = {32, 64}},
     421642},
    /* 10*4 + 4 */
    {"mlp 0 hidden", MLP(MDL_RELU, 0.0f, 4, 0, 0), 44},
    /* conv 3*1*9 + 3 = 30; 7x5 -> 3x2 -> 3*3*2 = 18 features; 18*3 + 3 = 57 */
    {"cnn 1x7x5 3", {.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 1, .in_h = 7, .in_w = 5,
                     .classes = 3, .nconv = 1, .filters = {3}},
     87},
};

static void test_param_count(void) {
    for (size_t c = 0; c < sizeof count_cases / sizeof count_cases[0]; c++) {
        const struct count_case *cc = &count_cases[c];
        CHECK_MSG(mdl_param_count(&cc->cfg) == cc->want, "%s: %zu parameters, want %zu", cc->name,
                  mdl_param_count(&cc->cfg), cc->want);
        mdl_model *m = model_new(&cc->cfg, 1);
        if (!m) continue;
        CHECK_MSG(m->nparams == cc->want, "%s: model has %zu parameters, want %zu", cc->name,
                  m->nparams, cc->want);
        mdl_free(m);
    }
}

static const struct reject_case {
    const char *name;
    mdl_config cfg;
    const char *words; /* the message must contain these */
} reject_cases[] = {
    {"dropout 1.0", MLP(MDL_RELU, 1.0f, 4, 1, 8), "--dropout"},
    {"dropout -0.1", MLP(MDL_RELU, -0.1f, 4, 1, 8), "--dropout"},
    {"0 classes", MLP(MDL_RELU, 0.0f, 0, 1, 8), "classes"},
    {"hidden width 0", MLP(MDL_RELU, 0.0f, 4, 2, 8, 0), "--hidden_units"},
    {"3 conv layers on 4x4",
     {.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 1, .in_h = 4, .in_w = 4, .classes = 3,
      .nconv = 3, .filters = {2, 2, 2}},
     "fewer conv layers"},
    {"4096 filters on 1024x1024 (2^32 values an image)",
     {.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 1, .in_h = 1024, .in_w = 1024,
      .classes = 3, .nconv = 1, .filters = {4096}},
     "4096 x 1024 x 1024 = 4294967296 values an image"},
    {"conv filters on an mlp",
     {.kind = MDL_MLP, .activation = MDL_RELU, .in_c = 1, .in_h = 2, .in_w = 5, .classes = 3,
      .nconv = 1, .filters = {8}},
     "--conv_filters"},
};

static void test_config_check(void) {
    char err[256];
    for (size_t c = 0; c < sizeof reject_cases / sizeof reject_cases[0]; c++) {
        const struct reject_case *rc = &reject_cases[c];
        err[0] = '\0';
        int code = mdl_config_check(&rc->cfg, err, sizeof err);
        CHECK_MSG(code == TN_EINVAL, "%s: returned %d", rc->name, code);
        CHECK_MSG(strstr(err, rc->words) != NULL, "%s: message \"%s\" lacks \"%s\"", rc->name, err,
                  rc->words);
        CHECK_MSG(mdl_config_check(&rc->cfg, NULL, 0) == TN_EINVAL, "%s: without a buffer",
                  rc->name);
    }
    /* The boundaries just inside are accepted: two conv layers on 4x4 (4 -> 2 -> 1). */
    const mdl_config ok[] = {
        {.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 1, .in_h = 4, .in_w = 4, .classes = 2,
         .nconv = 2, .filters = {2, 2}},
        MLP(MDL_GELU, 0.99f, 2, 1, 1),
    };
    for (size_t c = 0; c < sizeof ok / sizeof ok[0]; c++) {
        err[0] = '\0';
        CHECK_MSG(mdl_config_check(&ok[c], err, sizeof err) == 0, "valid config %zu rejected: %s",
                  c, err);
    }
    /* The batch: a conv layer's products have batch x 200 x 200 columns, at most INT_MAX
     * (53687 x 40000 is under it, 53688 x 40000 over); an MLP's batch has no such bound. */
    const mdl_config big = {.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 1, .in_h = 200,
                            .in_w = 200, .classes = 2, .nconv = 1, .filters = {2}};
    CHECK(mdl_config_check(&big, NULL, 0) == 0);
    err[0] = '\0';
    CHECK(mdl_batch_check(&big, 53687, err, sizeof err) == 0);
    CHECK(mdl_batch_check(&big, 53688, err, sizeof err) == TN_EINVAL);
    CHECK_MSG(strstr(err, "--batch_size 53688") && strstr(err, "200x200") &&
                  strstr(err, "to 53687 or less"),
              "batch error: \"%s\"", err);
    CHECK(mdl_batch_check(&big, 53688, NULL, 0) == TN_EINVAL);
    const mdl_config flat = MLP(MDL_RELU, 0.0f, 2, 1, 1);
    CHECK(mdl_batch_check(&flat, 65536, NULL, 0) == 0);
}

/* The same checks with the conv blocks as separate calls (a backend without them). */
static kn_backend g_unfused;

static void test_gradcheck_cases_unfused(void) {
    const kn_backend *keep = K;
    K = &g_unfused;
    test_gradcheck_cases();
    K = keep;
}

static void test_forward_reference_unfused(void) {
    const kn_backend *keep = K;
    K = &g_unfused;
    test_forward_reference();
    K = keep;
}

int main(void) {
    K = kn_cpu();
    g_unfused = *K;
    g_unfused.conv_block_forward = NULL;
    g_unfused.conv_block_backward = NULL;
    RUN(test_gradcheck_cases);
    RUN(test_gradcheck_cases_unfused);
    RUN(test_gradcheck_detects_errors);
    RUN(test_forward_reference);
    RUN(test_forward_reference_unfused);
    RUN(test_fused_matches_unfused);
    RUN(test_first_layer_input_grad_unused);
    RUN(test_fused_first_block_no_dx);
    RUN(test_partial_batch);
    RUN(test_forward_rows);
    RUN(test_param_count);
    RUN(test_config_check);
    return check_summary();
}
