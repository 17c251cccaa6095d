/*
 * cpu.c — the CPU backend of kernels.h: OpenBLAS's cblas_sgemm for the matrix products,
 * or the backend's own AVX-512 kernel where the CPU has AVX-512 and OpenBLAS's kernels
 * in use do not (cpu_gemm.c; kn_cpu_gemm), plain C loops for the rest. The loops are written so that GCC vectorises
 * them at -O2/-O3 (no aliasing between outputs and inputs except where the
 * interface allows it, unit strides, no calls in the inner loop except libm's).
 * Notation and contracts: kernels.h.
 *
 * Threads: all of them are the backend's own (cpu_workers.c); OpenBLAS is kept to one
 * thread, the calling one. On several threads a big product is split between the
 * workers along the longer side of its result, and a big optimiser update element by
 * element, and the conv blocks (conv + bias + activation + pooling in one call, worked
 * a few images at a time: cpu_conv.c) hand groups of images to the workers.
 *
 * The same functions make a second table, kn_cpu_device: the CPU presented as a
 * device with memory of its own (host_memory 0), so that the trainer's GPU code paths
 * (staging, the step without the host) run and are tested on any machine. The
 * additions for those paths (gather_rows, dropout_mask, softmax_xent_acc, the *_dev
 * optimisers, the batched im2col) are thin wrappers over the kernels above, so both
 * paths compute the same numbers. Where a GPU behaves visibly otherwise, that table
 * behaves like the GPU, so that tests see it: its tf32 and bf16 products round their
 * inputs as cuda.cu does, and its graphs can be made to fail as a failed CUDA stream
 * capture does (kn_cpu_device_fail_graphs). The CPU table's numbers never change.
 */
#include "kernels/kernels.h"

/* Hot element-wise loops are compiled twice, for the x86-64 baseline and for AVX2 +
 * FMA, and the loader picks the one the CPU runs (GCC's function multi-versioning),
 * so one binary is both portable and fast. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define VECTORISE __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define VECTORISE
#endif

/* The element-wise kernels may run in place (y == x, dx == dy): each output element
 * depends only on the same element of the inputs, which this tells the vectoriser. */
#if defined(__GNUC__) && !defined(__clang__)
#define IVDEP _Pragma("GCC ivdep")
#else
#define IVDEP
#endif

#include <assert.h>
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/status.h"
#include "kernels/cpu_internal.h"
#include "kernels/cpu_workers.h"

/* An allocation that fails ends the process as a device backend's does (kernels.h): a
 * message, the program's hint (tn_set_oom_hint), exit 1. */
static void *cpu_alloc(size_t bytes) {
    /* 64-byte aligned so vector loads never split cache lines. */
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) tn_alloc_failed(bytes);
    memset(p, 0, rounded ? rounded : 64);
    return p;
}

static void cpu_free(void *p) { free(p); }

static void cpu_copy(void *dst, const void *src, size_t bytes) {
    if (bytes) memcpy(dst, src, bytes);
}

static void cpu_fill(float *x, float value, size_t n) {
    if (value == 0.0f) {
        memset(x, 0, n * sizeof *x);
        return;
    }
    for (size_t i = 0; i < n; i++) x[i] = value;
}

/* Every thread is the backend's own (cpu_workers.h); OpenBLAS runs on the thread that
 * calls it, so its threads never compete with ours for the cores. */
static void cpu_set_threads(int threads) {
    openblas_set_num_threads(1);
    kw_set_threads(threads);
}

/* kn_cpu_gemm_flops and kn_cpu_gemm_own_products: counters per thread, each thread's on
 * a cache line of its own, so that the threads' products do not pass one line between
 * the cores on every call; threads past the first CPU_FLOP_SLOTS share the last. */
#define CPU_FLOP_SLOTS 64
static struct {
    _Alignas(64) _Atomic uint64_t flops;
    _Atomic uint64_t own; /* products made by kc_gemm_avx512 */
} cpu_counts[CPU_FLOP_SLOTS];
static _Atomic int cpu_flop_slots;           /* slots handed out */
static _Thread_local int cpu_flop_slot = -1; /* this thread's */

static void count_product(uint64_t flops, uint64_t own) {
    if (cpu_flop_slot < 0) {
        int s = atomic_fetch_add(&cpu_flop_slots, 1);
        cpu_flop_slot = s < CPU_FLOP_SLOTS ? s : CPU_FLOP_SLOTS - 1;
    }
    if (flops)
        atomic_fetch_add_explicit(&cpu_counts[cpu_flop_slot].flops, flops, memory_order_relaxed);
    if (own) atomic_fetch_add_explicit(&cpu_counts[cpu_flop_slot].own, own, memory_order_relaxed);
}

uint64_t kn_cpu_gemm_flops(void) {
    uint64_t sum = 0;
    for (int i = 0; i < CPU_FLOP_SLOTS; i++) sum += atomic_load(&cpu_counts[i].flops);
    return sum;
}

uint64_t kn_cpu_gemm_own_products(void) {
    uint64_t sum = 0;
    for (int i = 0; i < CPU_FLOP_SLOTS; i++) sum += atomic_load(&cpu_counts[i].own);
    return sum;
}

void kc_count_flops(uint64_t flops) { count_product(flops, 0); }

/* ---- who makes the products: OpenBLAS, or cpu_gemm.c's AVX-512 kernel ---- */

static _Atomic int cpu_gemm_mode = KN_GEMM_ENV; /* kn_cpu_gemm; KN_GEMM_ENV: TN_CPU_GEMM's,
                                                    read at the next product */
static _Atomic int cpu_gemm_warned;              /* a bad TN_CPU_GEMM was said */
static _Atomic int cpu_gemm_rule = -1; /* once worked out: 0 TN_CPU_NO_AVX512=1, 1 OpenBLAS
                                          has AVX-512 kernels, 2 it has not */

void kn_cpu_gemm(int mode) { atomic_store(&cpu_gemm_mode, mode); }

/* Whether OpenBLAS's kernels in use are AVX-512 ones: the cores it names for them
 * (SkylakeX, Cooperlake, SapphireRapids; others, Haswell and Zen included, are AVX2 or
 * older). A name it gains later for AVX-512 kernels reads as AVX2 here: the own kernel
 * then runs, about as fast as those (docs/benchmarks/train-speed.md). */
static int openblas_has_avx512(void) {
    const char *core = openblas_get_corename();
    static const char *const avx512_cores[] = {"skylakex", "cooperlake", "sapphirerapids"};
    if (!core) return 0;
    for (size_t i = 0; i < sizeof avx512_cores / sizeof avx512_cores[0]; i++)
        if (strcasecmp(core, avx512_cores[i]) == 0) return 1;
    return 0;
}

/* TN_CPU_GEMM's mode: unset or "auto" KN_GEMM_RULE, "openblas", "avx512"; anything else
 * is said once on stderr and read as unset. */
static int gemm_mode_from_env(void) {
    const char *v = getenv("TN_CPU_GEMM");
    if (!v || !*v || strcmp(v, "auto") == 0) return KN_GEMM_RULE;
    if (strcmp(v, "openblas") == 0) return KN_GEMM_OPENBLAS;
    if (strcmp(v, "avx512") == 0) return KN_GEMM_OWN;
    if (!atomic_exchange(&cpu_gemm_warned, 1))
        fprintf(stderr,
                "warning: TN_CPU_GEMM=%s is not auto, openblas or avx512; taking auto\n", v);
    return KN_GEMM_RULE;
}

/* Whether this product is made by kc_gemm_avx512 (kn_cpu_gemm's rule). Decided once a
 * product, before it is split, so that its parts have one maker. */
static int cpu_gemm_own(void) {
    int mode = atomic_load(&cpu_gemm_mode);
    if (mode == KN_GEMM_ENV) {
        int env = gemm_mode_from_env(), unset = KN_GEMM_ENV;
        /* a kn_cpu_gemm call meanwhile wins */
        atomic_compare_exchange_strong(&cpu_gemm_mode, &unset, env);
        mode = atomic_load(&cpu_gemm_mode);
    }
    if (mode == KN_GEMM_OPENBLAS || !kc_gemm_avx512_cpu()) return 0;
    int rule = atomic_load(&cpu_gemm_rule);
    if (rule < 0) {
        const char *no512 = getenv("TN_CPU_NO_AVX512"); /* read as cpu_conv.c reads it */
        rule = no512 && *no512 == '1' ? 0 : openblas_has_avx512() ? 1 : 2;
        atomic_store(&cpu_gemm_rule, rule);
    }
    return rule == 2 || (rule == 1 && mode == KN_GEMM_OWN);
}

/* One product on the calling thread, by the own kernel (own) or OpenBLAS. */
static void cpu_gemm_1(int own, int ta, int tb, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc) {
    if (own) {
        count_product(0, 1);
        kc_gemm_avx512(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* A product split between the threads: part t of `parts` computes the rows (by_rows) or
 * columns [lo, hi) of c, whole sums over k each, so no element's sum depends on the
 * split. */
typedef struct gemm_split {
    int own, ta, tb, m, n, k, lda, ldb, ldc, parts, by_rows;
    float alpha, beta;
    const float *a, *b;
    float *c;
} gemm_split;

#define CPU_SPLIT_FLOPS 4e6 /* smaller products run whole: a worker's wake-up costs more */
#define CPU_SPLIT_ALIGN 16  /* rows or columns per part, a multiple of */
#define CPU_SPLIT_ELEMENTS 65536 /* smaller copies and updates run on one thread */

static int split_at(int total, int parts, int t) {
    int per = (total + parts - 1) / parts;
    per = (per + CPU_SPLIT_ALIGN - 1) / CPU_SPLIT_ALIGN * CPU_SPLIT_ALIGN;
    return t * per < total ? t * per : total;
}

static void gemm_part(void *ctx, int t) {
    const gemm_split *g = ctx;
    int lo = split_at(g->by_rows ? g->m : g->n, g->parts, t);
    int hi = split_at(g->by_rows ? g->m : g->n, g->parts, t + 1);
    if (hi <= lo) return;
    if (g->by_rows)
        cpu_gemm_1(g->own, g->ta, g->tb, hi - lo, g->n, g->k, g->alpha,
                   g->ta ? g->a + lo : g->a + (size_t)lo * g->lda, g->lda, g->b, g->ldb, g->beta,
                   g->c + (size_t)lo * g->ldc, g->ldc);
    else
        cpu_gemm_1(g->own, g->ta, g->tb, g->m, hi - lo, g->k, g->alpha, g->a, g->lda,
                   g->tb ? g->b + (size_t)lo * g->ldb : g->b + lo, g->ldb, g->beta, g->c + lo,
                   g->ldc);
}

/* On several threads, a product big enough is split along the longer side of c. */
static void cpu_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, float *c, int ldc) {
    kc_count_flops(2 * (uint64_t)m * (uint64_t)n * (uint64_t)k);
    int threads = kw_threads(), own = cpu_gemm_own();
    if (threads > 1 && !kw_inside() && 2.0 * m * n * k >= CPU_SPLIT_FLOPS &&
        (m > n ? m : n) >= 2 * CPU_SPLIT_ALIGN) {
        gemm_split g = {own, ta, tb, m, n, k, lda, ldb, ldc, threads, m > n,
                        alpha, beta, a, b, c};
        kw_run(threads, gemm_part, &g);
        return;
    }
    cpu_gemm_1(own, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void cpu_broadcast_rows(float *y, const float *bias, int rows, int cols) {
    for (int r = 0; r < rows; r++) memcpy(y + (size_t)r * cols, bias, (size_t)cols * sizeof *y);
}

VECTORISE static void cpu_sum_rows(float *restrict db, const float *restrict dy, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        const float *row = dy + (size_t)r * cols;
        for (int j = 0; j < cols; j++) db[j] += row[j];
    }
}

VECTORISE static void cpu_sum_channels(float *restrict db, const float *restrict dy, int b,
                                       int c, int s) {
    /* Eight independent partial sums per plane, so the reduction vectorises without
     * reassociation by the compiler (and the order, hence the result, is fixed). */
    for (int i = 0; i < b; i++) {
        for (int ch = 0; ch < c; ch++) {
            const float *p = dy + ((size_t)i * c + ch) * s;
            float acc[8] = {0};
            int j = 0;
            for (; j + 8 <= s; j += 8)
                for (int t = 0; t < 8; t++) acc[t] += p[j + t];
            float total = 0.0f;
            for (int t = 0; t < 8; t++) total += acc[t];
            for (; j < s; j++) total += p[j];
            db[ch] += total;
        }
    }
}

VECTORISE static void cpu_add_channel_bias(float *y, const float *bias, int b, int c, int s) {
    for (int i = 0; i < b; i++) {
        for (int ch = 0; ch < c; ch++) {
            float *p = y + ((size_t)i * c + ch) * s;
            float v = bias[ch];
            for (int j = 0; j < s; j++) p[j] += v;
        }
    }
}

VECTORISE static void cpu_relu_forward(float *y, const float *x, size_t n) {
    IVDEP
    for (size_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

VECTORISE static void cpu_relu_backward(float *dx, const float *dy, const float *x, const float *y,
                              size_t n) {
    (void)y;
    IVDEP
    for (size_t i = 0; i < n; i++) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

static void cpu_tanh_forward(float *y, const float *x, size_t n) {
    IVDEP
    for (size_t i = 0; i < n; i++) y[i] = tanhf(x[i]);
}

VECTORISE static void cpu_tanh_backward(float *dx, const float *dy, const float *x, const float *y,
                              size_t n) {
    (void)x;
    IVDEP
    for (size_t i = 0; i < n; i++) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

/* GELU, exact form: x * Phi(x), Phi the standard normal CDF. */
VECTORISE static void cpu_gelu_forward(float *y, const float *x, size_t n) {
    IVDEP
    for (size_t i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * (float)M_SQRT1_2));
}

/* d/dx x Phi(x) = Phi(x) + x phi(x). */
VECTORISE static void cpu_gelu_backward(float *dx, const float *dy, const float *x, const float *y,
                              size_t n) {
    (void)y;
    const float inv_sqrt_2pi = 0.3989422804014327f;
    IVDEP
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float cdf = 0.5f * (1.0f + erff(v * (float)M_SQRT1_2));
        float pdf = inv_sqrt_2pi * expf(-0.5f * v * v);
        dx[i] = dy[i] * (cdf + v * pdf);
    }
}

VECTORISE static void cpu_scale(float *x, float a, size_t n) {
    IVDEP
    for (size_t i = 0; i < n; i++) x[i] *= a;
}

VECTORISE static void cpu_mul(float *y, const float *x, const float *m, size_t n) {
    IVDEP
    for (size_t i = 0; i < n; i++) y[i] = x[i] * m[i];
}

static void cpu_softmax_xent(const float *logits, const int32_t *labels, int b, int k,
                             float *dlogits, double *loss_sum, int64_t *correct) {
    double total = 0.0;
    int64_t right = 0;
    for (int i = 0; i < b; i++) {
        const float *z = logits + (size_t)i * k;
        int label = labels[i];
        assert(label >= 0 && label < k);
        float zmax = z[0];
        int arg = 0;
        for (int j = 1; j < k; j++) {
            if (z[j] > zmax) {
                zmax = z[j];
                arg = j;
            }
        }
        double sum = 0.0;
        for (int j = 0; j < k; j++) sum += exp((double)(z[j] - zmax));
        double log_sum = log(sum);
        total += log_sum - (double)(z[label] - zmax);
        right += arg == label;
        if (dlogits) {
            float *d = dlogits + (size_t)i * k;
            float inv_b = 1.0f / (float)b;
            for (int j = 0; j < k; j++) {
                float p = (float)exp((double)(z[j] - zmax) - log_sum);
                d[j] = (p - (j == label ? 1.0f : 0.0f)) * inv_b;
            }
        }
    }
    if (loss_sum) *loss_sum = total;
    if (correct) *correct = right;
}

static void cpu_im2col(float *col, int ldcol, const float *x, size_t cstride, int c, int h,
                       int w, int kh, int kw, int pad) {
    int oh = h + 2 * pad - kh + 1, ow = w + 2 * pad - kw + 1;
    for (int ch = 0; ch < c; ch++) {
        const float *plane = x + (size_t)ch * cstride;
        for (int ki = 0; ki < kh; ki++) {
            for (int kj = 0; kj < kw; kj++) {
                float *row = col + (((size_t)ch * kh + ki) * kw + kj) * ldcol;
                int shift = kj - pad; /* input column ix = ox + shift */
                int lo = -shift > 0 ? -shift : 0;
                int hi = w - shift < ow ? w - shift : ow;
                if (lo > ow) lo = ow;
                if (hi < lo) hi = lo;
                for (int oy = 0; oy < oh; oy++) {
                    int iy = oy + ki - pad;
                    float *out = row + (size_t)oy * ow;
                    if (iy < 0 || iy >= h) {
                        memset(out, 0, (size_t)ow * sizeof *out);
                        continue;
                    }
                    const float *in = plane + (size_t)iy * w;
                    for (int ox = 0; ox < lo; ox++) out[ox] = 0.0f;
                    memcpy(out + lo, in + lo + shift, (size_t)(hi - lo) * sizeof *out);
                    for (int ox = hi; ox < ow; ox++) out[ox] = 0.0f;
                }
            }
        }
    }
}

VECTORISE static void cpu_col2im(float *dx, size_t cstride, const float *col, int ldcol, int c,
                                 int h, int w, int kh, int kw, int pad) {
    int oh = h + 2 * pad - kh + 1, ow = w + 2 * pad - kw + 1;
    for (int ch = 0; ch < c; ch++) {
        float *plane = dx + (size_t)ch * cstride;
        for (int ki = 0; ki < kh; ki++) {
            for (int kj = 0; kj < kw; kj++) {
                const float *row = col + (((size_t)ch * kh + ki) * kw + kj) * ldcol;
                int shift = kj - pad;
                int lo = -shift > 0 ? -shift : 0;
                int hi = w - shift < ow ? w - shift : ow;
                for (int oy = 0; oy < oh; oy++) {
                    int iy = oy + ki - pad;
                    if (iy < 0 || iy >= h) continue;
                    const float *in = row + (size_t)oy * ow;
                    float *out = plane + (size_t)iy * w;
                    for (int ox = lo; ox < hi; ox++) out[ox + shift] += in[ox];
                }
            }
        }
    }
}

typedef struct swap_split {
    float *y;
    const float *x;
    int p, q, s, parts;
} swap_split;

/* Part t of a swap01: rows i of x (and their places in y) in its share of [0, p). The
 * blocks are small (a pooled plane: 49 floats in the CNN), so they are copied by a plain
 * loop: a memcpy call per block, or per eight floats, measured slower (the CNN's two
 * swaps: 0.21 and 0.22 ms a step against 0.18, one thread). */
VECTORISE static void swap01_part(void *ctx, int t) {
    const swap_split *w = ctx;
    int lo = (int)((long long)w->p * t / w->parts), hi = (int)((long long)w->p * (t + 1) / w->parts);
    size_t s = (size_t)w->s;
    for (int i = lo; i < hi; i++)
        for (int j = 0; j < w->q; j++) {
            float *restrict to = w->y + ((size_t)j * w->p + i) * s;
            const float *restrict from = w->x + ((size_t)i * w->q + j) * s;
            for (size_t k = 0; k < s; k++) to[k] = from[k];
        }
}

static void cpu_swap01(float *y, const float *x, int p, int q, int s) {
    swap_split w = {y, x, p, q, s, 1};
    if ((size_t)p * q * s >= CPU_SPLIT_ELEMENTS && !kw_inside()) w.parts = kw_threads();
    if (w.parts > p) w.parts = p;
    if (w.parts > 1)
        kw_run(w.parts, swap01_part, &w);
    else
        swap01_part(&w, 0);
}

static void cpu_maxpool2_forward(float *y, int32_t *argmax, const float *x, int n, int h,
                                 int w) {
    int oh = h / 2, ow = w / 2;
    for (int p = 0; p < n; p++) {
        const float *in = x + (size_t)p * h * w;
        float *out = y + (size_t)p * oh * ow;
        int32_t *arg = argmax + (size_t)p * oh * ow;
        for (int oy = 0; oy < oh; oy++) {
            for (int ox = 0; ox < ow; ox++) {
                /* Branch-free: the comparisons become conditional moves. The first of
                 * equal values wins. */
                int32_t i0 = (2 * oy) * w + 2 * ox;
                float m = in[i0];
                int32_t k = i0;
                float v = in[i0 + 1];
                k = v > m ? i0 + 1 : k;
                m = v > m ? v : m;
                v = in[i0 + w];
                k = v > m ? i0 + w : k;
                m = v > m ? v : m;
                v = in[i0 + w + 1];
                k = v > m ? i0 + w + 1 : k;
                m = v > m ? v : m;
                out[oy * ow + ox] = m;
                arg[oy * ow + ox] = k;
            }
        }
    }
}

static void cpu_maxpool2_backward(float *dx, const float *dy, const int32_t *argmax, int n,
                                  int h, int w) {
    int os = (h / 2) * (w / 2);
    memset(dx, 0, (size_t)n * h * w * sizeof *dx);
    for (int p = 0; p < n; p++) {
        float *d = dx + (size_t)p * h * w;
        const float *g = dy + (size_t)p * os;
        const int32_t *arg = argmax + (size_t)p * os;
        for (int i = 0; i < os; i++) d[arg[i]] += g[i];
    }
}

VECTORISE static void sgd_momentum_1(float *restrict p, const float *restrict g, float *restrict v,
                                      size_t n, float lr, float mu, float wd, int nesterov) {
    if (nesterov) {
        for (size_t i = 0; i < n; i++) {
            float gi = g[i] + wd * p[i];
            float vi = mu * v[i] + gi;
            v[i] = vi;
            p[i] -= lr * (gi + mu * vi);
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            float vi = mu * v[i] + g[i] + wd * p[i];
            v[i] = vi;
            p[i] -= lr * vi;
        }
    }
}

VECTORISE static void adam_1(float *restrict p, const float *restrict g, float *restrict m,
                              float *restrict v, size_t n, float lr, float b1, float b2, float eps,
                              float wd, int decoupled, float bc1, float bc2) {
    float l2 = decoupled ? 0.0f : wd;
    float shrink = decoupled ? 1.0f - lr * wd : 1.0f;
    float inv_bc1 = 1.0f / bc1, inv_sqrt_bc2 = 1.0f / sqrtf(bc2);
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] + l2 * p[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * shrink - lr * (mi * inv_bc1) / (sqrtf(vi) * inv_sqrt_bc2 + eps);
    }
}

/* The optimiser updates split between the threads: element by element, so the split
 * changes nothing in the result. */

typedef struct optim_split {
    int parts, kind; /* kind 0: sgd_momentum, 1: adam */
    size_t n;
    float *p, *m, *v;
    const float *g;
    float lr, mu, wd, b1, b2, eps, bc1, bc2;
    int flag; /* nesterov, or decoupled */
} optim_split;

static void optim_part(void *ctx, int t) {
    const optim_split *o = ctx;
    size_t per = (o->n + o->parts - 1) / o->parts;
    per = (per + CPU_SPLIT_ALIGN - 1) / CPU_SPLIT_ALIGN * CPU_SPLIT_ALIGN;
    size_t lo = (size_t)t * per < o->n ? (size_t)t * per : o->n;
    size_t hi = lo + per < o->n ? lo + per : o->n;
    if (o->kind == 0)
        sgd_momentum_1(o->p + lo, o->g + lo, o->v + lo, hi - lo, o->lr, o->mu, o->wd, o->flag);
    else
        adam_1(o->p + lo, o->g + lo, o->m + lo, o->v + lo, hi - lo, o->lr, o->b1, o->b2, o->eps,
               o->wd, o->flag, o->bc1, o->bc2);
}

static int optim_parts(size_t n) {
    int threads = kw_threads();
    return threads > 1 && !kw_inside() && n >= CPU_SPLIT_ELEMENTS ? threads : 1;
}

static void cpu_sgd_momentum(float *p, const float *g, float *v, size_t n, float lr, float mu,
                             float wd, int nesterov) {
    int parts = optim_parts(n);
    if (parts == 1) {
        sgd_momentum_1(p, g, v, n, lr, mu, wd, nesterov);
        return;
    }
    optim_split o = {.parts = parts, .kind = 0, .n = n, .p = p, .v = v, .g = g, .lr = lr,
                     .mu = mu, .wd = wd, .flag = nesterov};
    kw_run(parts, optim_part, &o);
}

static void cpu_adam(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                     float b2, float eps, float wd, int decoupled, float bc1, float bc2) {
    int parts = optim_parts(n);
    if (parts == 1) {
        adam_1(p, g, m, v, n, lr, b1, b2, eps, wd, decoupled, bc1, bc2);
        return;
    }
    optim_split o = {.parts = parts, .kind = 1, .n = n, .p = p, .m = m, .v = v, .g = g,
                     .lr = lr, .wd = wd, .b1 = b1, .b2 = b2, .eps = eps, .bc1 = bc1,
                     .bc2 = bc2, .flag = decoupled};
    kw_run(parts, optim_part, &o);
}

/* ---- for steps without the host (kernels.h); thin wrappers over the above ---- */

static int cpu_set_precision(int precision) {
    if (precision == KN_FP32) return 0;
    return tn_error(NULL, 0, TN_EINVAL, "the CPU backend computes in float32 only");
}

static void cpu_upload_small(void *dst, const void *src, size_t bytes) {
    assert(bytes <= KN_SMALL_MAX);
    cpu_copy(dst, src, bytes);
}

static void cpu_sync(void) {}

static int cpu_graph_begin(void) { return 0; } /* no graphs: calls run as they come */
static void *cpu_graph_end(void) { return NULL; }
static void cpu_graph_launch(void *graph) { assert(graph == NULL); (void)graph; }
static void cpu_graph_free(void *graph) { (void)graph; }

#define CPU_GATHER_AHEAD 2 /* rows: kn_cpu_gather */

void kn_cpu_gather(float *x, int32_t *y, const float *X, const int32_t *Y, size_t d,
                   const int32_t *rows, int b) {
    size_t bytes = d * sizeof *x;
    for (int i = 0; i < b; i++) {
        if (i + CPU_GATHER_AHEAD < b && bytes) { /* every line of that row */
            const char *p = (const char *)(X + (size_t)rows[i + CPU_GATHER_AHEAD] * d);
            for (const char *c = (const char *)((uintptr_t)p & ~(uintptr_t)63); c < p + bytes;
                 c += 64)
                __builtin_prefetch(c, 0, 0);
        }
        memcpy(x + (size_t)i * d, X + (size_t)rows[i] * d, bytes);
        y[i] = Y[rows[i]];
    }
}

static void cpu_gather_rows(float *x, int32_t *y, const float *X, const int32_t *Y, int d,
                            const int32_t *idx, const int64_t *pos, int b) {
    kn_cpu_gather(x, y, X, Y, (size_t)d, idx + *pos, b);
}

/* u(seed, salt, i) of kernels.h: splitmix64's finaliser, top 24 bits. */
static float drop_uniform(uint64_t seed, uint64_t salt, size_t i) {
    uint64_t z = seed + KN_DROP_SALT * salt + KN_DROP_STEP * ((uint64_t)i + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)(z >> 40) * 0x1.0p-24f;
}

static void cpu_dropout_mask(float *mask, size_t n, float keep, const uint64_t *seed,
                             uint64_t salt) {
    float scale = 1.0f / keep;
    uint64_t s = *seed;
    for (size_t i = 0; i < n; i++) mask[i] = drop_uniform(s, salt, i) < keep ? scale : 0.0f;
}

static void cpu_softmax_xent_acc(const float *logits, const int32_t *labels, int b, int k,
                                 float *dlogits, kn_loss_acc *acc, const int64_t *tag) {
    double loss = 0.0;
    int64_t right = 0;
    if (b > 0) cpu_softmax_xent(logits, labels, b, k, dlogits, &loss, &right);
    acc->loss_sum += loss;
    acc->correct += right;
    if (!isfinite(loss) && acc->bad_tag == 0) {
        acc->bad_tag = *tag;
        acc->bad_loss = loss;
    }
}

static void cpu_im2col_batch(float *col, const float *x, int b, size_t istride, size_t cstride,
                             int c, int h, int w, int kh, int kw, int pad) {
    int ohw = (h + 2 * pad - kh + 1) * (w + 2 * pad - kw + 1);
    for (int i = 0; i < b; i++)
        cpu_im2col(col + (size_t)i * ohw, b * ohw, x + (size_t)i * istride, cstride, c, h, w,
                   kh, kw, pad);
}

static void cpu_col2im_batch(float *dx, int b, size_t istride, size_t cstride, const float *col,
                             int c, int h, int w, int kh, int kw, int pad) {
    int ohw = (h + 2 * pad - kh + 1) * (w + 2 * pad - kw + 1);
    for (int i = 0; i < b; i++)
        cpu_col2im(dx + (size_t)i * istride, cstride, col + (size_t)i * ohw, b * ohw, c, h, w,
                   kh, kw, pad);
}

static void cpu_sgd_momentum_dev(float *p, const float *g, float *v, size_t n, const float *lr,
                                 float mu, float wd, int nesterov) {
    cpu_sgd_momentum(p, g, v, n, *lr, mu, wd, nesterov);
}

static void cpu_adam_dev(float *p, const float *g, float *m, float *v, size_t n,
                         const float *hyper, float b1, float b2, float eps, float wd,
                         int decoupled) {
    cpu_adam(p, g, m, v, n, hyper[0], b1, b2, eps, wd, decoupled, hyper[1], hyper[2]);
}

/* Round to nearest even; a NaN stays a (quiet) NaN. */
static void cpu_to_bf16(uint16_t *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &src[i], sizeof u);
        uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        dst[i] = (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : r);
    }
}

static void cpu_from_bf16(float *dst, const uint16_t *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)src[i] << 16;
        memcpy(&dst[i], &u, sizeof u);
    }
}

static void cpu_conv_block_forward(float *y, uint8_t *choice, float *zmax, const float *x, int b,
                                   size_t istride, size_t cstride, int c, int h, int w,
                                   const float *W, const float *bias, int f, int act) {
    kc_conv_block_forward(cpu_gemm, 1, y, choice, zmax, x, b, istride, cstride, c, h, w, W, bias,
                          f, act);
}

static void cpu_conv_block_backward(float *dW, float *db, float *dx, const float *dy,
                                    const uint8_t *choice, const float *y, const float *zmax,
                                    const float *x, int b, size_t istride, size_t cstride, int c,
                                    int h, int w, const float *W, int f, int act) {
    kc_conv_block_backward(cpu_gemm, 1, dW, db, dx, dy, choice, y, zmax, x, b, istride, cstride, c,
                           h, w, W, f, act);
}

static const kn_backend cpu_backend = {
    .name = "cpu",
    .host_memory = 1,
    .alloc = cpu_alloc, .free = cpu_free, .upload = cpu_copy, .download = cpu_copy,
    .copy = cpu_copy, .fill = cpu_fill, .scale = cpu_scale,
    .set_threads = cpu_set_threads, .gemm = cpu_gemm,
    .broadcast_rows = cpu_broadcast_rows, .sum_rows = cpu_sum_rows,
    .sum_channels = cpu_sum_channels, .add_channel_bias = cpu_add_channel_bias,
    .relu_forward = cpu_relu_forward, .relu_backward = cpu_relu_backward,
    .tanh_forward = cpu_tanh_forward, .tanh_backward = cpu_tanh_backward,
    .gelu_forward = cpu_gelu_forward, .gelu_backward = cpu_gelu_backward, .mul = cpu_mul,
    .softmax_xent = cpu_softmax_xent, .im2col = cpu_im2col, .col2im = cpu_col2im,
    .swap01 = cpu_swap01, .maxpool2_forward = cpu_maxpool2_forward,
    .maxpool2_backward = cpu_maxpool2_backward, .sgd_momentum = cpu_sgd_momentum,
    .adam = cpu_adam, .set_precision = cpu_set_precision,
    .upload_small = cpu_upload_small, .sync = cpu_sync, .graph_begin = cpu_graph_begin,
    .graph_end = cpu_graph_end, .graph_launch = cpu_graph_launch,
    .graph_free = cpu_graph_free, .gather_rows = cpu_gather_rows,
    .dropout_mask = cpu_dropout_mask, .softmax_xent_acc = cpu_softmax_xent_acc,
    .im2col_batch = cpu_im2col_batch, .col2im_batch = cpu_col2im_batch,
    .sgd_momentum_dev = cpu_sgd_momentum_dev, .adam_dev = cpu_adam_dev,
    .to_bf16 = cpu_to_bf16, .from_bf16 = cpu_from_bf16,
    .conv_block_forward = cpu_conv_block_forward, .conv_block_backward = cpu_conv_block_backward,
};

const kn_backend *kn_cpu(void) { return &cpu_backend; }

const char *kn_precision_name(int precision) {
    switch (precision) {
    case KN_FP32: return "fp32";
    case KN_TF32: return "tf32";
    case KN_BF16: return "bf16";
    default: return "?";
    }
}

/* ---------------------------------------------------------------------------------
 * kn_cpu_device: the same kernels behind a table that behaves as a GPU's where tests
 * need to see it (kernels.h): set_precision takes tf32 and bf16 and rounds the
 * products' inputs as the CUDA backend does, and kn_cpu_device_fail_graphs makes its
 * graphs fail as a failed CUDA stream capture does. cpu_backend's numbers never change.
 * --------------------------------------------------------------------------------- */

static _Atomic int dev_precision = KN_FP32; /* of dev_gemm */
static _Atomic int dev_fail_graphs;         /* kn_cpu_device_fail_graphs */
static _Atomic int dev_graphs_off;          /* a recording failed: no more graphs */
static _Thread_local int dev_recording;     /* this thread is "recording": calls do nothing */

void kn_cpu_device_fail_graphs(int on) {
    dev_fail_graphs = on;
    dev_graphs_off = 0;
}

static int dev_set_precision(int precision) {
    if (precision != KN_FP32 && precision != KN_TF32 && precision != KN_BF16)
        return tn_error(NULL, 0, TN_EINVAL, "unknown precision %d", precision);
    dev_precision = precision;
    return 0;
}

/* x rounded to the precision, to nearest even, as cuda.cu's bf16_bits and tf32_round:
 * bf16 keeps 7 mantissa bits, tf32 10; infinities and NaNs stay what they are. */
static float round_to(float x, int precision) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u) return x;
    int drop = precision == KN_BF16 ? 16 : 13;
    uint32_t half = (1u << (drop - 1)) - 1, keep = ~((1u << drop) - 1);
    u = (u + half + ((u >> drop) & 1u)) & keep;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The stored rows x cols operand (row stride ld), rounded, packed (row stride cols). */
static float *rounded_copy(const float *src, int rows, int cols, int ld, int precision) {
    float *dst = cpu_alloc((size_t)rows * cols * sizeof(float));
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++)
            dst[(size_t)r * cols + j] = round_to(src[(size_t)r * ld + j], precision);
    return dst;
}

static void dev_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, float *c, int ldc) {
    int precision = dev_precision;
    if (dev_recording) return;
    if (precision == KN_FP32 || m <= 0 || n <= 0 || k <= 0) {
        cpu_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    float *a2 = rounded_copy(a, ar, ac, lda, precision);
    float *b2 = rounded_copy(b, br, bc, ldb, precision);
    cpu_gemm(ta, tb, m, n, k, alpha, a2, ac, b2, bc, beta, c, ldc);
    free(a2);
    free(b2);
}

/* Graphs: none, unless kn_cpu_device_fail_graphs asked for failing ones. Then
 * graph_begin "records" (the calls that follow do nothing, as on a stream under
 * capture) and graph_end finds the recording failed: it says so once and returns NULL,
 * and graph_begin refuses from then on, as the CUDA backend does (cuda.cu). */
static int dev_graph_begin(void) {
    if (!dev_fail_graphs || dev_graphs_off) return 0;
    dev_recording = 1;
    return 1;
}

static void *dev_graph_end(void) {
    assert(dev_recording);
    dev_recording = 0;
    if (!atomic_exchange(&dev_graphs_off, 1)) {
        fflush(stdout);
        fprintf(stderr, "warning: cpu-device: recording a graph failed (simulated: "
                        "kn_cpu_device_fail_graphs); graphs are off for this run: each step's "
                        "calls are made directly\n");
    }
    return NULL;
}

/* Calls that may not be recorded (kernels.h, "Graphs"), as the CUDA backend treats them. */
static void dev_not_recording(const char *what) {
    if (!dev_recording) return;
    fprintf(stderr, "fatal: cpu-device: %s called while a graph is recorded\n", what);
    abort();
}

static void *dev_alloc(size_t bytes) {
    dev_not_recording("alloc");
    return cpu_alloc(bytes);
}
static void dev_free(void *p) {
    dev_not_recording("free");
    cpu_free(p);
}
static void dev_upload(void *dst, const void *src, size_t bytes) {
    dev_not_recording("upload");
    cpu_copy(dst, src, bytes);
}
static void dev_download(void *dst, const void *src, size_t bytes) {
    dev_not_recording("download");
    cpu_copy(dst, src, bytes);
}
static void dev_sync(void) { dev_not_recording("sync"); }

/* The rest run unless this thread records. */
#define DEV_CALL(name, params, args)                                                     \
    static void dev_##name params {                                                      \
        if (!dev_recording) cpu_##name args;                                             \
    }
DEV_CALL(copy, (void *d, const void *s, size_t n), (d, s, n))
DEV_CALL(fill, (float *x, float v, size_t n), (x, v, n))
DEV_CALL(scale, (float *x, float a, size_t n), (x, a, n))
DEV_CALL(broadcast_rows, (float *y, const float *bias, int rows, int cols), (y, bias, rows, cols))
DEV_CALL(sum_rows, (float *db, const float *dy, int rows, int cols), (db, dy, rows, cols))
DEV_CALL(sum_channels, (float *db, const float *dy, int b, int c, int s), (db, dy, b, c, s))
DEV_CALL(add_channel_bias, (float *y, const float *bias, int b, int c, int s), (y, bias, b, c, s))
DEV_CALL(relu_forward, (float *y, const float *x, size_t n), (y, x, n))
DEV_CALL(relu_backward, (float *dx, const float *dy, const float *x, const float *y, size_t n),
         (dx, dy, x, y, n))
DEV_CALL(tanh_forward, (float *y, const float *x, size_t n), (y, x, n))
DEV_CALL(tanh_backward, (float *dx, const float *dy, const float *x, const float *y, size_t n),
         (dx, dy, x, y, n))
DEV_CALL(gelu_forward, (float *y, const float *x, size_t n), (y, x, n))
DEV_CALL(gelu_backward, (float *dx, const float *dy, const float *x, const float *y, size_t n),
         (dx, dy, x, y, n))
DEV_CALL(mul, (float *y, const float *x, const float *m, size_t n), (y, x, m, n))
DEV_CALL(softmax_xent,
         (const float *z, const int32_t *l, int b, int k, float *dz, double *loss,
          int64_t *correct),
         (z, l, b, k, dz, loss, correct))
DEV_CALL(im2col,
         (float *col, int ldcol, const float *x, size_t cs, int c, int h, int w, int kh, int kw,
          int pad),
         (col, ldcol, x, cs, c, h, w, kh, kw, pad))
DEV_CALL(col2im,
         (float *dx, size_t cs, const float *col, int ldcol, int c, int h, int w, int kh, int kw,
          int pad),
         (dx, cs, col, ldcol, c, h, w, kh, kw, pad))
DEV_CALL(swap01, (float *y, const float *x, int p, int q, int s), (y, x, p, q, s))
DEV_CALL(maxpool2_forward, (float *y, int32_t *arg, const float *x, int n, int h, int w),
         (y, arg, x, n, h, w))
DEV_CALL(maxpool2_backward, (float *dx, const float *dy, const int32_t *arg, int n, int h, int w),
         (dx, dy, arg, n, h, w))
DEV_CALL(sgd_momentum,
         (float *p, const float *g, float *v, size_t n, float lr, float mu, float wd, int nest),
         (p, g, v, n, lr, mu, wd, nest))
DEV_CALL(adam,
         (float *p, const float *g, float *m, float *v, size_t n, float lr, float b1, float b2,
          float eps, float wd, int dec, float bc1, float bc2),
         (p, g, m, v, n, lr, b1, b2, eps, wd, dec, bc1, bc2))
DEV_CALL(upload_small, (void *d, const void *s, size_t n), (d, s, n))
DEV_CALL(gather_rows,
         (float *x, int32_t *y, const float *X, const int32_t *Y, int d, const int32_t *idx,
          const int64_t *pos, int b),
         (x, y, X, Y, d, idx, pos, b))
DEV_CALL(dropout_mask, (float *mask, size_t n, float keep, const uint64_t *seed, uint64_t salt),
         (mask, n, keep, seed, salt))
DEV_CALL(softmax_xent_acc,
         (const float *z, const int32_t *l, int b, int k, float *dz, kn_loss_acc *acc,
          const int64_t *tag),
         (z, l, b, k, dz, acc, tag))
DEV_CALL(im2col_batch,
         (float *col, const float *x, int b, size_t is, size_t cs, int c, int h, int w, int kh,
          int kw, int pad),
         (col, x, b, is, cs, c, h, w, kh, kw, pad))
DEV_CALL(col2im_batch,
         (float *dx, int b, size_t is, size_t cs, const float *col, int c, int h, int w, int kh,
          int kw, int pad),
         (dx, b, is, cs, col, c, h, w, kh, kw, pad))
DEV_CALL(sgd_momentum_dev,
         (float *p, const float *g, float *v, size_t n, const float *lr, float mu, float wd,
          int nest),
         (p, g, v, n, lr, mu, wd, nest))
DEV_CALL(adam_dev,
         (float *p, const float *g, float *m, float *v, size_t n, const float *hyper, float b1,
          float b2, float eps, float wd, int dec),
         (p, g, m, v, n, hyper, b1, b2, eps, wd, dec))
DEV_CALL(to_bf16, (uint16_t *d, const float *s, size_t n), (d, s, n))
DEV_CALL(from_bf16, (float *d, const uint16_t *s, size_t n), (d, s, n))
#undef DEV_CALL

/* The conv blocks with dev_gemm's products (rounded as set_precision says). */
static void dev_conv_block_forward(float *y, uint8_t *choice, float *zmax, const float *x, int b,
                                   size_t istride, size_t cstride, int c, int h, int w,
                                   const float *W, const float *bias, int f, int act) {
    if (!dev_recording)
        kc_conv_block_forward(dev_gemm, 0, y, choice, zmax, x, b, istride, cstride, c, h, w, W,
                              bias, f, act);
}

static void dev_conv_block_backward(float *dW, float *db, float *dx, const float *dy,
                                    const uint8_t *choice, const float *y, const float *zmax,
                                    const float *x, int b, size_t istride, size_t cstride, int c,
                                    int h, int w, const float *W, int f, int act) {
    if (!dev_recording)
        kc_conv_block_backward(dev_gemm, 0, dW, db, dx, dy, choice, y, zmax, x, b, istride, cstride,
                               c, h, w, W, f, act);
}

static const kn_backend cpu_device_backend = {
    .name = "cpu-device",
    .host_memory = 0,
    .alloc = dev_alloc, .free = dev_free, .upload = dev_upload, .download = dev_download,
    .copy = dev_copy, .fill = dev_fill, .scale = dev_scale,
    .set_threads = cpu_set_threads, .gemm = dev_gemm,
    .broadcast_rows = dev_broadcast_rows, .sum_rows = dev_sum_rows,
    .sum_channels = dev_sum_channels, .add_channel_bias = dev_add_channel_bias,
    .relu_forward = dev_relu_forward, .relu_backward = dev_relu_backward,
    .tanh_forward = dev_tanh_forward, .tanh_backward = dev_tanh_backward,
    .gelu_forward = dev_gelu_forward, .gelu_backward = dev_gelu_backward, .mul = dev_mul,
    .softmax_xent = dev_softmax_xent, .im2col = dev_im2col, .col2im = dev_col2im,
    .swap01 = dev_swap01, .maxpool2_forward = dev_maxpool2_forward,
    .maxpool2_backward = dev_maxpool2_backward, .sgd_momentum = dev_sgd_momentum,
    .adam = dev_adam, .set_precision = dev_set_precision,
    .upload_small = dev_upload_small, .sync = dev_sync, .graph_begin = dev_graph_begin,
    .graph_end = dev_graph_end, .graph_launch = cpu_graph_launch,
    .graph_free = cpu_graph_free, .gather_rows = dev_gather_rows,
    .dropout_mask = dev_dropout_mask, .softmax_xent_acc = dev_softmax_xent_acc,
    .im2col_batch = dev_im2col_batch, .col2im_batch = dev_col2im_batch,
    .sgd_momentum_dev = dev_sgd_momentum_dev, .adam_dev = dev_adam_dev,
    .to_bf16 = dev_to_bf16, .from_bf16 = dev_from_bf16,
    .conv_block_forward = dev_conv_block_forward, .conv_block_backward = dev_conv_block_backward,
};

const kn_backend *kn_cpu_device(void) { return &cpu_device_backend; }
