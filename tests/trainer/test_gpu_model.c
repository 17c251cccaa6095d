/*
 * test_gpu_model.c — the models, optimisers and collectives on a GPU (kernels/cuda.cu,
 * kernels/nccl.c, trainer/devices.c), checked against the CPU backend, which
 * test_gradcheck checks against finite differences.
 *
 *   - gradients: the same model, parameters, batch and dropout masks on both backends
 *     give the same loss and gradients (|gpu - cpu| <= atol + rtol*|cpu|), for every
 *     layer type; and central finite differences of the GPU's own loss agree with its
 *     gradients (smooth activations; coordinates where a max-pool's arg-max moves are
 *     skipped, as test_gradcheck does);
 *   - training: 30 steps of the step without the host (data on the device, batches
 *     gathered there, update with its scalars in device memory, as train.c runs it)
 *     follow the CPU's steps within tolerance, with and without a recorded graph (the
 *     graph's replays give the same bits as the calls made directly); tf32 and bf16
 *     products still train, and their parameters differ from fp32's (within 5%);
 *   - NCCL with one GPU: a group (devices.h's dv_ calls) and a one-rank communicator
 *     leave the buffers as they are (bf16 rounds them). Left out in a build without
 *     NCCL; a build with NCCL where it does not load fails.
 *
 * Without a GPU or driver at all (or without CUDA in the build) it prints why and exits
 * 77, which ctest reports as skipped; a GPU it cannot use is a failure.
 * `test_gpu_model --backend=cpu-device` runs the same checks with the CPU presented as
 * a device in the GPU's place (kn_cpu_device: its tf32 and bf16 products round their
 * inputs as the GPU's do; its graph recordings are made to fail, so the "graph" run
 * tests the fallback to direct calls; no NCCL), so that the test itself and the device
 * code paths are exercised on every machine.
 */
#include "kernels/cuda.h"
#include "kernels/nccl.h"
#include "trainer/devices.h"
#include "trainer/model.h"
#include "trainer/optim.h"

#include "common/rng.h"
#include "common/status.h"
#include "tests/check.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const kn_backend *G; /* the GPU */
static const kn_backend *C; /* the CPU */
static int g_cuda;          /* G is a CUDA GPU (else the CPU presented as a device) */

#define INIT_SEED 1234
#define DATA_SEED 99
#define DROPOUT_SEED 4242

static const mdl_config configs[] = {
    {.kind = MDL_MLP, .activation = MDL_RELU, .in_c = 1, .in_h = 6, .in_w = 5, .classes = 7,
     .nhidden = 2, .hidden = {33, 17}},
    {.kind = MDL_MLP, .activation = MDL_TANH, .dropout = 0.3f, .in_c = 1, .in_h = 6, .in_w = 5,
     .classes = 4, .nhidden = 1, .hidden = {40}},
    {.kind = MDL_MLP, .activation = MDL_GELU, .in_c = 1, .in_h = 3, .in_w = 3, .classes = 3,
     .nhidden = 2, .hidden = {12, 9}},
    {.kind = MDL_CNN, .activation = MDL_RELU, .in_c = 1, .in_h = 9, .in_w = 7, .classes = 5,
     .nhidden = 1, .hidden = {16}, .nconv = 2, .filters = {4, 6}},
    {.kind = MDL_CNN, .activation = MDL_TANH, .dropout = 0.25f, .in_c = 2, .in_h = 8,
     .in_w = 8, .classes = 4, .nhidden = 1, .hidden = {8}, .nconv = 2, .filters = {3, 5}},
    {.kind = MDL_CNN, .activation = MDL_GELU, .in_c = 1, .in_h = 28, .in_w = 28, .classes = 10,
     .nhidden = 1, .hidden = {32}, .nconv = 2, .filters = {8, 16}},
};
#define NCONFIGS (sizeof configs / sizeof configs[0])

static size_t features(const mdl_config *c) { return (size_t)c->in_c * c->in_h * c->in_w; }

/* n examples: x uniform in [-1, 1); labels uniform, or with learnable the class whose
 * slice of the features has the largest sum (so that training has something to find). */
static void make_data(const mdl_config *c, int n, uint64_t seed, int learnable, float **x,
                      int32_t **y) {
    tn_rng r;
    tn_rng_seed(&r, seed);
    size_t d = features(c), per = d / (size_t)c->classes;
    *x = tn_xmalloc((size_t)n * d * sizeof(float));
    *y = tn_xmalloc((size_t)n * sizeof(int32_t));
    for (size_t i = 0; i < (size_t)n * d; i++) (*x)[i] = 2.0f * tn_rng_uniformf(&r) - 1.0f;
    for (int i = 0; i < n; i++) {
        (*y)[i] = (int32_t)tn_rng_below(&r, (uint64_t)c->classes);
        if (!learnable || per == 0) continue;
        double best = -1e300;
        for (int k = 0; k < c->classes; k++) {
            double sum = 0;
            for (size_t j = 0; j < per; j++) sum += (*x)[(size_t)i * d + (size_t)k * per + j];
            if (sum > best) best = sum, (*y)[i] = k;
        }
    }
}

static mdl_model *model_on(const kn_backend *k, const mdl_config *c, int max_batch) {
    mdl_model *m = mdl_new(c, k, max_batch);
    tn_rng r;
    tn_rng_seed(&r, INIT_SEED);
    mdl_init_params(m, &r);
    return m;
}

/* Counts |got - want| > atol + rtol*|want| and prints the first few. */
static size_t count_far(const char *label, const float *got, const float *want, size_t n,
                        double atol, double rtol) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        if (fabs(g - w) <= atol + rtol * fabs(w)) continue;
        if (bad++ < 3) fprintf(stderr, "  %s: [%zu] = %.9g, expected %.9g\n", label, i, g, w);
    }
    return bad;
}

static double max_abs(const float *x, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

/* ---------------------------------------------------------------------------------
 * Gradients
 * --------------------------------------------------------------------------------- */

/* One forward and backward pass on each backend with the same masks (drawn on the host
 * from the same seed): the loss, the correct count and every gradient agree. */
static void test_grads_match_cpu(void) {
    for (size_t t = 0; t < NCONFIGS; t++) {
        const mdl_config *cfg = &configs[t];
        const int b = 13;
        float *x;
        int32_t *y;
        make_data(cfg, b, DATA_SEED + t, 0, &x, &y);
        mdl_model *mc = model_on(C, cfg, b), *mg = model_on(G, cfg, b);
        double lc, lg;
        int64_t cc, cg;
        tn_rng dc, dg;
        tn_rng_seed(&dc, DROPOUT_SEED);
        tn_rng_seed(&dg, DROPOUT_SEED);
        mdl_forward(mc, x, y, b, 1, &dc, &lc, &cc);
        mdl_forward(mg, x, y, b, 1, &dg, &lg, &cg);
        CHECK_MSG(fabs(lg - lc) <= 1e-5 * fabs(lc) + 1e-6, "config %zu: loss %.9g on the GPU, "
                  "%.9g on the CPU", t, lg, lc);
        CHECK_INT_EQ(cg, cc);
        mdl_backward(mc, b);
        mdl_backward(mg, b);
        size_t p = mc->nparams;
        float *gg = tn_xmalloc(p * sizeof(float));
        G->download(gg, mg->grads, p * sizeof(float));
        char label[64];
        snprintf(label, sizeof label, "config %zu gradients", t);
        double scale = max_abs(mc->grads, p);
        CHECK_MSG(count_far(label, gg, mc->grads, p, 1e-5 * scale, 1e-3) == 0,
                  "%s: GPU and CPU differ", label);
        free(gg);
        mdl_free(mc);
        mdl_free(mg);
        free(x);
        free(y);
    }
}

/* The pool layers' arg-maxes (a fused conv block's choices, a byte each, widened) after
 * a forward pass (where the loss has kinks). */
static size_t pool_state(const mdl_model *m, int b, int32_t *out) {
    size_t n = 0;
    for (int l = 0; l < m->nlayers; l++) {
        const mdl_layer *L = &m->layers[l];
        if (L->type != MDL_POOL) continue;
        size_t k = (size_t)b * L->out_size;
        if (out && m->fused) {
            uint8_t *c = tn_xmalloc(k);
            m->k->download(c, L->choice, k);
            for (size_t i = 0; i < k; i++) out[n + i] = c[i];
            free(c);
        } else if (out) {
            m->k->download(out + n, L->argmax, k * sizeof(int32_t));
        }
        n += k;
    }
    return n;
}

static double gpu_loss(mdl_model *m, const float *x, const int32_t *y, int b, int32_t *kinks) {
    double l;
    mdl_forward(m, x, y, b, 0, NULL, &l, NULL);
    if (kinks) pool_state(m, b, kinks);
    return l / b;
}

/* Central differences of the GPU's loss against its gradients, for smooth activations
 * (tanh, gelu; no dropout so that the loss is a function of the parameters). */
static void test_gradcheck_gpu(void) {
    static const mdl_config smooth[] = {
        {.kind = MDL_MLP, .activation = MDL_TANH, .in_c = 1, .in_h = 2, .in_w = 5, .classes = 4,
         .nhidden = 2, .hidden = {9, 7}},
        {.kind = MDL_MLP, .activation = MDL_GELU, .in_c = 1, .in_h = 2, .in_w = 5, .classes = 3,
         .nhidden = 1, .hidden = {11}},
        {.kind = MDL_CNN, .activation = MDL_TANH, .in_c = 2, .in_h = 8, .in_w = 8, .classes = 4,
         .nhidden = 1, .hidden = {6}, .nconv = 2, .filters = {3, 4}},
    };
    for (size_t t = 0; t < sizeof smooth / sizeof smooth[0]; t++) {
        const mdl_config *cfg = &smooth[t];
        const int b = 4;
        float *x;
        int32_t *y;
        make_data(cfg, b, DATA_SEED + 100 + t, 0, &x, &y);
        mdl_model *m = model_on(G, cfg, b);
        size_t p = m->nparams, nk = pool_state(m, b, NULL);
        int32_t *k0 = tn_xcalloc(nk + 1, sizeof(int32_t)), *k1 = tn_xcalloc(nk + 1, 4);
        float *params = tn_xmalloc(p * sizeof(float)), *grads = tn_xmalloc(p * sizeof(float));
        double loss = gpu_loss(m, x, y, b, k0);
        CHECK(isfinite(loss));
        tn_rng none;
        tn_rng_seed(&none, 1);
        double l2;
        mdl_forward(m, x, y, b, 1, &none, &l2, NULL);
        mdl_backward(m, b);
        G->download(grads, m->grads, p * sizeof(float));
        mdl_get_params(m, params);
        tn_rng pick;
        tn_rng_seed(&pick, 7 + t);
        int checked = 0, tried = 0, bad = 0;
        for (int s = 0; s < 60; s++) {
            size_t i = (size_t)tn_rng_below(&pick, p);
            const double eps = 1e-3;
            float orig = params[i], v = orig + (float)eps;
            G->upload(m->params + i, &v, sizeof v);
            double hi = v, lp = gpu_loss(m, x, y, b, k1);
            int kink = memcmp(k0, k1, nk * sizeof(int32_t)) != 0;
            v = orig - (float)eps;
            G->upload(m->params + i, &v, sizeof v);
            double lo = v, lm = gpu_loss(m, x, y, b, k1);
            kink |= memcmp(k0, k1, nk * sizeof(int32_t)) != 0;
            G->upload(m->params + i, &orig, sizeof orig);
            tried++;
            if (kink) continue;
            checked++;
            double fd = (lp - lm) / (hi - lo), an = grads[i];
            if (fabs(fd - an) > 5e-5 + 2e-3 * fabs(fd) && bad++ < 5)
                fprintf(stderr, "  config %zu [%zu]: finite difference %.7g, gradient %.7g\n", t,
                        i, fd, an);
        }
        CHECK_MSG(bad == 0, "config %zu: %d of %d coordinates off", t, bad, checked);
        CHECK_MSG(4 * checked >= 3 * tried, "config %zu: only %d of %d coordinates compared", t,
                  checked, tried);
        free(k0);
        free(k1);
        free(params);
        free(grads);
        mdl_free(m);
        free(x);
        free(y);
    }
}

/* ---------------------------------------------------------------------------------
 * Training: the step without the host, as train.c runs it
 * --------------------------------------------------------------------------------- */

typedef struct step_args { /* device memory: what a step reads, as train.c's */
    int64_t pos;
    uint64_t seed;
    int64_t tag;
    float hyper[3];
    float pad;
} step_args;

enum { TN = 300, TB = 32, TSTEPS = 30 };

typedef struct gpu_run {
    mdl_model *m;
    opt_state *o;
    float *X;
    int32_t *Y, *index;
    step_args *args;
    kn_loss_acc *acc;
    void *graph;
} gpu_run;

static void gpu_run_open(gpu_run *g, const mdl_config *cfg, const opt_config *oc, const float *x,
                         const int32_t *y, const int32_t *order) {
    size_t d = features(cfg);
    g->m = model_on(G, cfg, TB);
    g->o = opt_new(oc, G, g->m->nparams);
    g->X = G->alloc(TN * d * sizeof(float));
    G->upload(g->X, x, TN * d * sizeof(float));
    g->Y = G->alloc(TN * sizeof(int32_t));
    G->upload(g->Y, y, TN * sizeof(int32_t));
    g->index = G->alloc(TN * sizeof(int32_t));
    G->upload(g->index, order, TN * sizeof(int32_t));
    g->args = G->alloc(sizeof(step_args));
    g->acc = G->alloc(sizeof(kn_loss_acc));
    g->graph = NULL;
}

static void gpu_run_close(gpu_run *g) {
    G->graph_free(g->graph);
    void *bufs[] = {g->X, g->Y, g->index, g->args, g->acc};
    for (int i = 0; i < 5; i++) G->free(bufs[i]);
    opt_free(g->o);
    mdl_free(g->m);
}

static void gpu_body(gpu_run *g, int b) {
    mdl_forward_device(g->m, g->X, g->Y, g->index, &g->args->pos, b, &g->args->seed, g->acc,
                       &g->args->tag);
    mdl_backward(g->m, b);
    opt_apply_device(g->o, g->m->params, g->m->grads, g->args->hyper);
}

/* Step s: the batch at position s*TB % (TN - TB + 1); with graphs, the calls are made
 * directly once, recorded at the second step and replayed after. */
static void gpu_step(gpu_run *g, int s, int graphs) {
    step_args a;
    memset(&a, 0, sizeof a);
    a.pos = (int64_t)s * TB % (TN - TB + 1);
    a.tag = s + 1;
    opt_scalars(g->o, a.hyper);
    G->upload_small(g->args, &a, sizeof a);
    if (graphs && s == 1 && G->graph_begin()) {
        gpu_body(g, TB);
        g->graph = G->graph_end();
    }
    if (g->graph)
        G->graph_launch(g->graph);
    else
        gpu_body(g, TB);
    g->o->t++;
}

static void test_training_matches_cpu(void) {
    const mdl_config *cfgs[] = {&configs[0], &configs[3]}; /* mlp, cnn; no dropout */
    opt_config ocs[] = {
        {.kind = OPT_MOMENTUM, .learning_rate = 0.05, .momentum = 0.9, .schedule = OPT_COSINE,
         .total_steps = TSTEPS, .warmup_steps = 3},
        {.kind = OPT_ADAMW, .learning_rate = 3e-3, .beta1 = 0.9, .beta2 = 0.999, .epsilon = 1e-8,
         .weight_decay = 0.01, .schedule = OPT_CONSTANT, .total_steps = TSTEPS},
    };
    for (size_t t = 0; t < 2; t++) {
        const mdl_config *cfg = cfgs[t];
        const opt_config *oc = &ocs[t];
        float *x;
        int32_t *y, order[TN];
        make_data(cfg, TN, DATA_SEED + 7, 1, &x, &y);
        tn_rng r;
        tn_rng_seed(&r, 5);
        for (int i = 0; i < TN; i++) order[i] = i;
        for (int i = TN - 1; i > 0; i--) {
            int j = (int)tn_rng_below(&r, (uint64_t)i + 1), tmp = order[i];
            order[i] = order[j];
            order[j] = tmp;
        }
        /* the CPU, as the host path runs it */
        mdl_model *mc = model_on(C, cfg, TB);
        opt_state *occ = opt_new(oc, C, mc->nparams);
        double cpu_loss = 0;
        for (int s = 0; s < TSTEPS; s++) {
            double l;
            int64_t c;
            mdl_forward_rows(mc, x, y, order + (size_t)s * TB % (TN - TB + 1), TB, 1, NULL, &l,
                             &c);
            mdl_backward(mc, TB);
            opt_step(occ, mc->params, mc->grads);
            cpu_loss += l;
        }
        /* the GPU, directly and with a graph (the CPU presented as a device: with a
         * recording that fails, so the calls are made again directly) */
        gpu_run direct, graphed;
        if (!g_cuda) kn_cpu_device_fail_graphs(1);
        gpu_run_open(&direct, cfg, oc, x, y, order);
        gpu_run_open(&graphed, cfg, oc, x, y, order);
        for (int s = 0; s < TSTEPS; s++) {
            gpu_step(&direct, s, 0);
            gpu_step(&graphed, s, 1);
        }
        if (!g_cuda) kn_cpu_device_fail_graphs(0);
        CHECK_MSG(graphed.graph != NULL || !g_cuda, "config %zu: no graph was recorded", t);
        size_t p = mc->nparams;
        float *pd = tn_xmalloc(p * sizeof(float)), *pg = tn_xmalloc(p * sizeof(float));
        mdl_get_params(direct.m, pd);
        mdl_get_params(graphed.m, pg);
        CHECK_MSG(memcmp(pd, pg, p * sizeof(float)) == 0,
                  "config %zu: the graph's replays differ from the calls made directly", t);
        char label[64];
        snprintf(label, sizeof label, "config %zu parameters after %d steps", t, TSTEPS);
        CHECK_MSG(count_far(label, pd, mc->params, p, 1e-4, 1e-3) == 0,
                  "%s: GPU and CPU differ", label);
        kn_loss_acc a;
        G->download(&a, direct.acc, sizeof a);
        CHECK_MSG(fabs(a.loss_sum - cpu_loss) <= 1e-4 * fabs(cpu_loss),
                  "config %zu: summed loss %.9g on the GPU, %.9g on the CPU", t, a.loss_sum,
                  cpu_loss);
        CHECK_INT_EQ(a.bad_tag, 0);
        free(pd);
        free(pg);
        gpu_run_close(&direct);
        gpu_run_close(&graphed);
        opt_free(occ);
        mdl_free(mc);
        free(x);
        free(y);
    }
}

/* tf32 and bf16 products: training still lowers the loss, and stays near fp32's but
 * not on it (the inputs were rounded). */
static void test_training_precisions(void) {
    const mdl_config *cfg = &configs[3];
    opt_config oc = {.kind = OPT_MOMENTUM, .learning_rate = 0.05, .momentum = 0.9,
                     .schedule = OPT_CONSTANT, .total_steps = TSTEPS};
    float *x;
    int32_t *y, order[TN];
    make_data(cfg, TN, DATA_SEED + 8, 1, &x, &y);
    for (int i = 0; i < TN; i++) order[i] = (i * 7) % TN;
    float *ref = NULL;
    static const int precisions[] = {KN_FP32, KN_TF32, KN_BF16};
    for (size_t i = 0; i < 3; i++) {
        CHECK(G->set_precision(precisions[i]) == 0);
        gpu_run g;
        gpu_run_open(&g, cfg, &oc, x, y, order);
        kn_loss_acc a, first;
        memset(&first, 0, sizeof first);
        for (int s = 0; s < TSTEPS; s++) {
            gpu_step(&g, s, 1);
            if (s == 2) G->download(&first, g.acc, sizeof first);
        }
        G->download(&a, g.acc, sizeof a);
        double early = first.loss_sum / (3.0 * TB), late = (a.loss_sum - first.loss_sum) /
                                                         ((TSTEPS - 3.0) * TB);
        CHECK_MSG(isfinite(a.loss_sum) && late < early,
                  "precision %d: mean loss %.4g over the first steps, %.4g after", precisions[i],
                  early, late);
        size_t p = g.m->nparams;
        float *params = tn_xmalloc(p * sizeof(float));
        mdl_get_params(g.m, params);
        if (!ref) {
            ref = params;
        } else { /* ||p - p_fp32|| / ||p_fp32||: rounding noise, not a different model */
            double diff = 0, norm = 0;
            for (size_t j = 0; j < p; j++) {
                diff += ((double)params[j] - ref[j]) * ((double)params[j] - ref[j]);
                norm += (double)ref[j] * ref[j];
            }
            CHECK_MSG(sqrt(diff / norm) < 0.05, "%s: parameters %.3g away from fp32's",
                      kn_precision_name(precisions[i]), sqrt(diff / norm));
            CHECK_MSG(diff > 0, "%s: the same parameters as fp32's: were the inputs rounded?",
                      kn_precision_name(precisions[i]));
            free(params);
        }
        gpu_run_close(&g);
    }
    CHECK(G->set_precision(KN_FP32) == 0);
    free(ref);
    free(x);
    free(y);
}

/* ---------------------------------------------------------------------------------
 * NCCL with one GPU
 * --------------------------------------------------------------------------------- */

static void test_nccl_one_gpu(void) {
    if (!g_cuda) return; /* NCCL is for CUDA GPUs */
    char why[512];
    if (!kc_built()) {
        printf("note: this build has no NCCL: its checks are left out\n");
        return;
    }
    if (!kc_available(why, sizeof why)) { /* built with NCCL: it must load */
        CHECK_MSG(0, "NCCL is not available: %s", why);
        return;
    }
    enum { N = 1001 };
    float x[N], got[N], host[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i % 17) * 0.37f - 2.0f;
    float *d = G->alloc(sizeof x);

    /* devices.h over a group of one GPU: NCCL's reduce and broadcast */
    dv_group g;
    memset(&g, 0, sizeof g);
    g.n = 1;
    g.k[0] = G;
    char note[640];
    dv_open(&g, note, sizeof note);
    CHECK_MSG(g.nccl != NULL, "dv_open: %s", note);
    if (!g.nccl) {
        dv_close(&g);
        G->free(d);
        return;
    }
    G->upload(d, x, sizeof x);
    float *bufs[1] = {d};
    kc_group_allreduce(g.nccl, bufs, N);
    dv_reduce_to_host(&g, bufs, N, host);
    CHECK(memcmp(host, x, sizeof x) == 0);
    for (int i = 0; i < N; i++) host[i] = -x[i];
    dv_broadcast_from_host(&g, host, bufs, N);
    G->download(got, d, sizeof got);
    CHECK(memcmp(got, host, sizeof got) == 0);
    dv_close(&g);

    /* a communicator of one process */
    unsigned char id[KC_ID_BYTES];
    kc_comm *c = NULL;
    CHECK(kc_unique_id(id, why, sizeof why) == 0);
    int rc = kc_comm_new(G, 1, 0, id, 30, &c, why, sizeof why);
    CHECK_MSG(rc == 0, "kc_comm_new: %s", why);
    if (rc == 0) {
        G->upload(d, x, sizeof x);
        CHECK(kc_allreduce(c, d, N, 0, 30, why, sizeof why) == 0);
        G->download(got, d, sizeof got);
        CHECK(memcmp(got, x, sizeof x) == 0);
        CHECK(kc_allreduce(c, d, N, 1, 30, why, sizeof why) == 0);
        G->download(got, d, sizeof got);
        size_t bad = 0;
        for (int i = 0; i < N; i++) bad += fabsf(got[i] - x[i]) > 0x1.0p-8f * fabsf(x[i]);
        CHECK_MSG(bad == 0, "bf16 all-reduce: %zu values beyond bf16 rounding", bad);
        kc_comm_free(c);
    }
    G->free(d);
}

int main(int argc, char **argv) {
    char why[512];
    if (argc > 1 && !strcmp(argv[1], "--backend=cpu-device")) {
        G = kn_cpu_device();
        printf("testing on the CPU presented as a device\n");
    } else {
        G = kn_cuda(0, why, sizeof why);
        if (!G && kn_cuda_absent()) {
            printf("skipped: no GPU to test on: %s\n", why);
            return 77;
        }
        if (!G) {
            fprintf(stderr, "test_gpu_model: error: CUDA is there but the backend cannot be "
                            "created: %s\n", why);
            return 1;
        }
        g_cuda = 1;
        kn_cuda_describe(0, why, sizeof why);
        printf("testing on %s\n", why);
    }
    C = kn_cpu();
    C->set_threads(1);
    RUN(test_grads_match_cpu);
    RUN(test_gradcheck_gpu);
    RUN(test_training_matches_cpu);
    RUN(test_training_precisions);
    RUN(test_nccl_one_gpu);
    return check_summary();
}
