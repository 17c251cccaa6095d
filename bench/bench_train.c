/*
 * bench_train.c — training throughput of the trainer's step against the floor set by
 * its matrix products alone.
 *
 * Loads Fashion-MNIST into memory, builds the model as `trainer` would, and times
 * (a) full training steps (batch gather, forward, backward, optimiser update: what
 * `trainer` does per step) and (b) the GEMM floor: the same steps with every kernel
 * call but the matrix products skipped (the conv blocks' own non-GEMM work too:
 * kn_cpu_gemm_only) and no optimiser update, so the products are the step's own, with
 * the same shapes, order, buffers and threads. Prints one JSON object. Driven by
 * bench/train_speed.py, which compares against PyTorch in the same run.
 *
 * --profile also times every kernel call of the step and of the floor's step (by function;
 * conv blocks by layer and matrix products by shape) and prints to stderr where a step's
 * time goes, and how much of it each kernel spends outside the floor (its timers then
 * cost a little in the JSON's step and floor figures both). step_cpu_ms and floor_cpu_ms are
 * the process's CPU time per step (all threads'): on one thread, a figure that other
 * processes on the machine disturb less than the wall clock. gflop_per_step is what the
 * step's products compute (2mnk each, kn_cpu_gemm_flops: Winograd's products count as
 * made, fewer than im2col's), floor_gflops their rate in the floor's steps, to set
 * against the machine's FMA peak (bench_fma_peak). --unfused runs the CNN's conv
 * blocks as separate calls (im2col, one GEMM over the batch, bias, activation,
 * pooling: the CUDA backend's way, and the CPU's before it had conv blocks), to compare.
 * "gemm" says who made the products: "avx512", the CPU backend's own kernel, or
 * "openblas" (kn_cpu_gemm's rule; TN_CPU_GEMM=openblas|avx512 picks one).
 *
 *   bench_train [--model=mlp|cnn] [--threads=N] [--batch_size=N] [--steps=N]
 *               [--hidden_units=256,256] [--conv_filters=32,64] [--data_dir=DIR]
 *               [--profile] [--unfused] [--winograd=0|1|2] [--direct=0|1|2]
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/flags.h"
#include "common/rng.h"
#include "common/status.h"
#include "trainer/data.h"
#include "trainer/model.h"
#include "trainer/optim.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of the whole process: on one thread, the step's time without the time other
 * processes took the core away (this machine is shared). */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- --profile: every kernel call of the steps and of the floor's steps timed, by
 * function (conv blocks by layer, gemm by shape) ---- */

static const kn_backend *prof_base; /* the table the profiled one forwards to */
static kn_backend prof_table;
#define PROF_MAX 64
static struct prof_entry {
    char name[64];
    double seconds, floor_seconds; /* in the full steps, in the floor's */
    long calls;
} prof_entries[PROF_MAX];
static int prof_n;
static int prof_floor; /* the floor's steps are being timed */

static void prof_add(const char *name, double seconds) {
    int i = 0;
    while (i < prof_n && strcmp(prof_entries[i].name, name)) i++;
    if (i == prof_n) {
        if (prof_n == PROF_MAX) return;
        snprintf(prof_entries[prof_n++].name, sizeof prof_entries[0].name, "%s", name);
    }
    if (prof_floor) {
        prof_entries[i].floor_seconds += seconds;
    } else {
        prof_entries[i].seconds += seconds;
        prof_entries[i].calls++;
    }
}

#define PROF(fn, params, args)                                                           \
    static void prof_##fn params {                                                       \
        double t_ = now();                                                               \
        prof_base->fn args;                                                              \
        prof_add(#fn, now() - t_);                                                       \
    }
PROF(fill, (float *x, float v, size_t n), (x, v, n))
PROF(copy, (void *d, const void *s, size_t n), (d, s, n))
PROF(broadcast_rows, (float *y, const float *b, int r, int c), (y, b, r, c))
PROF(sum_rows, (float *db, const float *dy, int r, int c), (db, dy, r, c))
PROF(sum_channels, (float *db, const float *dy, int b, int c, int s), (db, dy, b, c, s))
PROF(add_channel_bias, (float *y, const float *bias, int b, int c, int s), (y, bias, b, c, s))
PROF(relu_forward, (float *y, const float *x, size_t n), (y, x, n))
PROF(relu_backward, (float *dx, const float *dy, const float *x, const float *y, size_t n),
     (dx, dy, x, y, n))
PROF(softmax_xent,
     (const float *z, const int32_t *l, int b, int k, float *dz, double *loss, int64_t *c),
     (z, l, b, k, dz, loss, c))
PROF(swap01, (float *y, const float *x, int p, int q, int s), (y, x, p, q, s))
PROF(maxpool2_forward, (float *y, int32_t *a, const float *x, int n, int h, int w),
     (y, a, x, n, h, w))
PROF(maxpool2_backward, (float *dx, const float *dy, const int32_t *a, int n, int h, int w),
     (dx, dy, a, n, h, w))
PROF(sgd_momentum,
     (float *p, const float *g, float *v, size_t n, float lr, float mu, float wd, int nest),
     (p, g, v, n, lr, mu, wd, nest))
PROF(im2col_batch,
     (float *col, const float *x, int b, size_t is, size_t cs, int c, int h, int w, int kh,
      int kw, int pad),
     (col, x, b, is, cs, c, h, w, kh, kw, pad))
/* The conv blocks by shape, as the products: c x h x w -> f (one entry per layer). */
static void prof_add_block(const char *fn, int c, int h, int w, int f, double seconds) {
    char name[64];
    snprintf(name, sizeof name, "%s %dx%dx%d->%d", fn, c, h, w, f);
    prof_add(name, seconds);
}
static void prof_conv_block_forward(float *y, uint8_t *a, float *z, const float *x, int b,
                                    size_t is, size_t cs, int c, int h, int w, const float *W,
                                    const float *bias, int f, int act) {
    double t = now();
    prof_base->conv_block_forward(y, a, z, x, b, is, cs, c, h, w, W, bias, f, act);
    prof_add_block("conv_block_forward", c, h, w, f, now() - t);
}
static void prof_conv_block_backward(float *dW, float *db, float *dx, const float *dy,
                                     const uint8_t *a, const float *y, const float *z,
                                     const float *x, int b, size_t is, size_t cs, int c, int h,
                                     int w, const float *W, int f, int act) {
    double t = now();
    prof_base->conv_block_backward(dW, db, dx, dy, a, y, z, x, b, is, cs, c, h, w, W, f, act);
    prof_add_block("conv_block_backward", c, h, w, f, now() - t);
}
PROF(col2im_batch,
     (float *dx, int b, size_t is, size_t cs, const float *col, int c, int h, int w, int kh,
      int kw, int pad),
     (dx, b, is, cs, col, c, h, w, kh, kw, pad))
#undef PROF

static void prof_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc) {
    double t = now();
    prof_base->gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    char name[64];
    snprintf(name, sizeof name, "gemm %c%c %dx%dx%d", ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k);
    prof_add(name, now() - t);
}

/* A copy of base whose calls are timed (the ones a CPU training step makes). */
static const kn_backend *prof_wrap(const kn_backend *base) {
    prof_base = base;
    prof_table = *base;
#define W(fn) prof_table.fn = prof_##fn
    W(fill); W(copy); W(broadcast_rows); W(sum_rows); W(sum_channels); W(add_channel_bias);
    W(relu_forward); W(relu_backward); W(softmax_xent); W(swap01); W(maxpool2_forward);
    W(maxpool2_backward); W(sgd_momentum); W(im2col_batch); W(col2im_batch); W(gemm);
    if (base->conv_block_forward) {
        W(conv_block_forward);
        W(conv_block_backward);
    }
#undef W
    return &prof_table;
}

/* Prints the profile of `steps` steps that took total seconds, and of as many of the
 * floor's that took floor_total, to stderr: per kernel (a conv block per layer, a
 * product per shape) its time in a step, in the floor's step (a conv block's products
 * alone, kn_cpu_gemm_only; about 0 for a call the floor skips), and the difference, the
 * kernel's share of the time outside the floor. */
static void prof_print(int steps, double total, double floor_total) {
    double sum = 0, floor_sum = 0;
    fprintf(stderr, "%-40s %9s %9s %9s %6s %6s\n", "kernel", "ms/step", "floor ms", "outside",
            "calls", "share");
    for (int i = 0; i < prof_n; i++) {
        struct prof_entry *e = &prof_entries[i];
        sum += e->seconds;
        floor_sum += e->floor_seconds;
        fprintf(stderr, "%-40s %9.3f %9.3f %9.3f %6ld %5.1f%%\n", e->name,
                1e3 * e->seconds / steps, 1e3 * e->floor_seconds / steps,
                1e3 * (e->seconds - e->floor_seconds) / steps, e->calls / steps,
                100 * e->seconds / total);
    }
    fprintf(stderr, "%-40s %9.3f %9.3f %9.3f %6s %5.1f%%\n", "(outside kernels)",
            1e3 * (total - sum) / steps, 1e3 * (floor_total - floor_sum) / steps,
            1e3 * ((total - sum) - (floor_total - floor_sum)) / steps, "",
            100 * (total - sum) / total);
    fprintf(stderr, "%-40s %9.3f %9.3f %9.3f\n", "step", 1e3 * total / steps,
            1e3 * floor_total / steps, 1e3 * (total - floor_total) / steps);
}

static int parse_list(const char *s, int32_t *out, int max) {
    int n = 0;
    while (*s && n < max) {
        out[n++] = (int32_t)strtol(s, (char **)&s, 10);
        if (*s == ',') s++;
    }
    return n;
}

/* ---- the GEMM floor: the step with every call but its matrix products skipped ---- */

static kn_backend floor_table;

static void skip_fill(float *x, float v, size_t n) { (void)x, (void)v, (void)n; }
static void skip_rows(float *y, const float *b, int r, int c) { (void)y, (void)b, (void)r, (void)c; }
static void skip_channels(float *y, const float *b, int n, int c, int s) {
    (void)y, (void)b, (void)n, (void)c, (void)s;
}
static void skip_unary(float *y, const float *x, size_t n) { (void)y, (void)x, (void)n; }
static void skip_binary(float *dx, const float *dy, const float *x, const float *y, size_t n) {
    (void)dx, (void)dy, (void)x, (void)y, (void)n;
}
static void skip_mul(float *y, const float *x, const float *m, size_t n) {
    (void)y, (void)x, (void)m, (void)n;
}
static void skip_xent(const float *z, const int32_t *l, int b, int k, float *dz, double *loss,
                      int64_t *c) {
    (void)z, (void)l, (void)b, (void)k, (void)dz;
    if (loss) *loss = 0;
    if (c) *c = 0;
}
static void skip_swap01(float *y, const float *x, int p, int q, int s) {
    (void)y, (void)x, (void)p, (void)q, (void)s;
}
static void skip_pool_fwd(float *y, int32_t *a, const float *x, int n, int h, int w) {
    (void)y, (void)a, (void)x, (void)n, (void)h, (void)w;
}
static void skip_pool_bwd(float *dx, const float *dy, const int32_t *a, int n, int h, int w) {
    (void)dx, (void)dy, (void)a, (void)n, (void)h, (void)w;
}
static void skip_im2col(float *col, const float *x, int b, size_t is, size_t cs, int c, int h,
                        int w, int kh, int kw, int pad) {
    (void)col, (void)x, (void)b, (void)is, (void)cs, (void)c, (void)h, (void)w, (void)kh,
        (void)kw, (void)pad;
}
static void skip_col2im(float *dx, int b, size_t is, size_t cs, const float *col, int c, int h,
                        int w, int kh, int kw, int pad) {
    (void)dx, (void)b, (void)is, (void)cs, (void)col, (void)c, (void)h, (void)w, (void)kh,
        (void)kw, (void)pad;
}

/* A copy of base whose calls other than the matrix products do nothing (the conv
 * blocks' own non-GEMM work is skipped by kn_cpu_gemm_only). */
static const kn_backend *floor_wrap(const kn_backend *base) {
    floor_table = *base;
    kn_backend *t = &floor_table;
    t->fill = skip_fill;
    t->broadcast_rows = skip_rows;
    t->sum_rows = skip_rows;
    t->sum_channels = skip_channels;
    t->add_channel_bias = skip_channels;
    t->relu_forward = t->tanh_forward = t->gelu_forward = skip_unary;
    t->relu_backward = t->tanh_backward = t->gelu_backward = skip_binary;
    t->mul = skip_mul;
    t->softmax_xent = skip_xent;
    t->swap01 = skip_swap01;
    t->maxpool2_forward = skip_pool_fwd;
    t->maxpool2_backward = skip_pool_bwd;
    t->im2col_batch = skip_im2col;
    t->col2im_batch = skip_col2im;
    return t;
}

int main(int argc, char **argv) {
    const char *model = "mlp", *hidden = NULL, *filters = "32,64", *data_dir = DS_DEFAULT_DIR;
    int threads = 1, batch = 128, steps = 300, profile = 0, unfused = 0, wino = KN_WINO_RULE;
    int direct = KN_DIRECT_RULE;
    const tn_flag flags[] = {
        {"model", TN_FLAG_STRING, &model, "mlp|cnn", "model"},
        {"threads", TN_FLAG_INT, &threads, "N", "threads"},
        {"batch_size", TN_FLAG_INT, &batch, "N", "batch size"},
        {"steps", TN_FLAG_INT, &steps, "N", "timed steps"},
        {"hidden_units", TN_FLAG_STRING, &hidden, "N,N", "hidden widths"},
        {"conv_filters", TN_FLAG_STRING, &filters, "N,N", "cnn filters"},
        {"data_dir", TN_FLAG_STRING, &data_dir, "DIR", "IDX folder"},
        {"profile", TN_FLAG_BOOL, &profile, "", "time every kernel call, print a table to stderr"},
        {"unfused", TN_FLAG_BOOL, &unfused, "", "cnn: conv, activation, pooling as separate calls"},
        {"winograd", TN_FLAG_INT, &wino, "0|1|2", "conv blocks: 0 im2col, 1 the rule, 2 Winograd"},
        {"direct", TN_FLAG_INT, &direct, "0|1|2",
         "conv blocks' direct convolution: 0 none, 1 the rule, 2 every one it can take"},
    };
    int help;
    if (tn_flags_program("bench_train", NULL, flags, sizeof flags / sizeof flags[0], argc, argv,
                         &help))
        return 2;
    if (help) return 0;
    const char *bad = strcmp(model, "mlp") && strcmp(model, "cnn") ? "--model must be mlp or cnn"
                      : threads < 1 || threads > 1024           ? "--threads must be 1 to 1024"
                      : batch < 1 || batch > 65536              ? "--batch_size must be 1 to 65536"
                      : steps < 1 || steps > 100000000          ? "--steps must be 1 to 100000000"
                                                                : NULL;
    if (bad) {
        fprintf(stderr, "bench_train: error: %s\n", bad);
        return 2;
    }
    char err[512];
    int cnn = !strcmp(model, "cnn");
    ds_dataset ds = {0};
    if (ds_load_idx_dir(data_dir, 1, 0, &ds, err, sizeof err)) {
        fprintf(stderr, "bench_train: error: %s\n", err);
        return 1;
    }
    mdl_config cfg = {.kind = cnn ? MDL_CNN : MDL_MLP, .activation = MDL_RELU, .in_c = 1,
                      .in_h = ds.height, .in_w = ds.width, .classes = ds.classes};
    cfg.nhidden = parse_list(hidden ? hidden : (cnn ? "128" : "256,256"), cfg.hidden, MDL_MAX_HIDDEN);
    if (cnn) cfg.nconv = parse_list(filters, cfg.filters, MDL_MAX_CONV);
    if (mdl_config_check(&cfg, err, sizeof err)) {
        fprintf(stderr, "bench_train: error: %s\n", err);
        return 2;
    }
    static kn_backend plain;
    const kn_backend *k = kn_cpu();
    if (unfused) { /* the table without its conv blocks: the model makes them of calls */
        plain = *k;
        plain.conv_block_forward = NULL;
        plain.conv_block_backward = NULL;
        k = &plain;
    }
    k->set_threads(threads);
    if (wino < KN_WINO_OFF || wino > KN_WINO_ALL || direct < KN_DIRECT_OFF || direct > KN_DIRECT_ALL) {
        fprintf(stderr, "bench_train: error: --winograd and --direct take 0, 1 or 2\n");
        return 2;
    }
    kn_cpu_winograd(wino);
    kn_cpu_direct(direct);
    const kn_backend *km = profile ? prof_wrap(k) : k; /* the model's and optimiser's */
    mdl_model *m = mdl_new(&cfg, km, batch);
    tn_rng rng;
    tn_rng_seed(&rng, 1);
    mdl_init_params(m, &rng);
    opt_config oc = {.kind = OPT_MOMENTUM, .learning_rate = 0.05, .momentum = 0.9, .beta1 = 0.9,
                     .beta2 = 0.999, .epsilon = 1e-8, .schedule = OPT_CONSTANT};
    opt_state *opt = opt_new(&oc, km, m->nparams);
    int32_t *idx = tn_xmalloc((size_t)batch * sizeof(int32_t));

    /* (a) full steps over random batches, after a warm-up */
    uint64_t own0 = kn_cpu_gemm_own_products();
    double loss = 0;
    double t0 = 0, c0 = 0;
    int warmup = steps / 10 + 5;
    for (int s = -warmup; s < steps; s++) {
        if (s == 0) {
            t0 = now();
            c0 = cpu_now();
            prof_n = 0;
            memset(prof_entries, 0, sizeof prof_entries);
        }
        for (int i = 0; i < batch; i++) idx[i] = (int32_t)tn_rng_below(&rng, (uint64_t)ds.n);
        int64_t correct;
        mdl_forward_rows(m, ds.x, ds.y, idx, batch, 1, &rng, &loss, &correct);
        mdl_backward(m, batch);
        opt_step(opt, m->params, m->grads);
    }
    double step_s = (now() - t0) / steps, step_cpu = (cpu_now() - c0) / steps;

    /* (b) the same steps with only their GEMMs: the same calls, shapes, order and
     * threads, on the buffers as the last step left them; no optimiser update (with
     * --profile, timed call by call too: the table the model calls now forwards to the
     * floor's, which the optimiser, done, no longer uses) */
    m->k = profile ? prof_wrap(floor_wrap(k)) : floor_wrap(k);
    prof_floor = 1;
    kn_cpu_gemm_only(1);
    uint64_t f0 = 0;
    for (int s = -warmup; s < steps; s++) {
        if (s == 0) {
            t0 = now();
            c0 = cpu_now();
            f0 = kn_cpu_gemm_flops();
            for (int i = 0; i < prof_n; i++) prof_entries[i].floor_seconds = 0;
        }
        mdl_forward_rows(m, ds.x, ds.y, idx, batch, 1, &rng, NULL, NULL);
        mdl_backward(m, batch);
    }
    double gemm_s = (now() - t0) / steps, gemm_cpu = (cpu_now() - c0) / steps;
    double flops = (double)(kn_cpu_gemm_flops() - f0) / steps; /* the products' own, a step */
    kn_cpu_gemm_only(0);
    prof_floor = 0;
    if (profile) {
        prof_print(steps, step_s * steps, gemm_s * steps);
        prof_wrap(k); /* back to the full table for what follows (freeing) */
    }
    m->k = km;

    printf("{\"framework\": \"tuner\", \"model\": \"%s\", \"threads\": %d, \"batch_size\": %d, "
           "\"steps\": %d, \"examples_per_sec\": %.1f, \"gemm_floor_examples_per_sec\": %.1f, "
           "\"fraction_of_floor\": %.3f, \"final_loss\": %.4f, \"conv\": \"%s\", "
           "\"step_cpu_ms\": %.3f, \"floor_cpu_ms\": %.3f, \"gflop_per_step\": %.4f, "
           "\"floor_gflops\": %.1f, \"classes\": %d, \"blas\": \"%s\", \"gemm\": \"%s\"}\n",
           model, threads, batch, steps, batch / step_s, batch / gemm_s, gemm_s / step_s,
           loss / batch, !cnn ? "none" : m->fused ? "fused" : "unfused", 1e3 * step_cpu, 1e3 * gemm_cpu,
           flops / 1e9, flops / gemm_s / 1e9, (int)cfg.classes, openblas_get_config(),
           kn_cpu_gemm_own_products() > own0 ? "avx512" : "openblas");
    free(idx);
    opt_free(opt);
    mdl_free(m);
    ds_clear(&ds);
    return 0;
}
