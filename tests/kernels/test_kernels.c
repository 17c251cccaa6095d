/*
 * test_kernels.c — tests for the backends of kernels.h: every function of the table
 * against a naive reference written here with double loops.
 *
 *   test_kernels [--backend=cpu|cpu-device|cuda] [--gemm=openblas|avx512]
 *
 * --gemm picks who makes the CPU tables' matrix products (kn_cpu_gemm; by default its
 * rule): OpenBLAS, or the backend's own AVX-512 kernel (exit 77 where the CPU lacks
 * AVX-512 F), so that every test runs on either.
 *
 * The tests reach the backend only through its table (alloc, upload, call, download),
 * so the same file runs against the CPU backend (kernels/cpu.c, the default), the CPU
 * presented as a device (kn_cpu_device) and the CUDA backend (kernels/cuda.cu, GPU 0;
 * without a GPU or driver at all, or without CUDA in the build, it prints why and exits
 * 77, which ctest reports as skipped; a GPU it cannot use is a failure): K is the
 * backend under test. Inputs come from a fixed-seed tn_rng. Outputs are compared element by element
 * with |got - want| <= atol + rtol*|want| (want in double); padding and one element
 * past the end of outputs hold sentinels that must survive, and outputs the kernel
 * must write in full start as NaN. Lengths include 1, 7, 33 and 1000 so the
 * vectorised loops' tails run; element-wise kernels are also run in place where the
 * interface allows it. Contracts: kernels/kernels.h.
 */
#include "kernels/kernels.h"

#include "common/rng.h"
#include "kernels/cpu_workers.h"
#include "kernels/cuda.h"
#include "common/status.h"
#include "tests/check.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cblas.h>

static const kn_backend *K; /* the backend under test */
static int g_cuda;          /* K is the CUDA backend */
static tn_rng g_rng;        /* every random input; seeded once in main */

#define SENTINEL 12345.0f /* in padding and past the end: must be left alone */

/* ---------------------------------------------------------------------------------
 * Helpers
 * --------------------------------------------------------------------------------- */

static const size_t g_lengths[] = {1, 7, 33, 1000}; /* element-wise lengths: vector tails */
#define NLENGTHS (sizeof g_lengths / sizeof g_lengths[0])

/* Uniform floats in [lo, hi). */
static void rand_fill(float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * tn_rng_uniformf(&g_rng);
}

static float *host_floats(size_t n) { return tn_xcalloc(n, sizeof(float)); }
static double *host_doubles(size_t n) { return tn_xcalloc(n, sizeof(double)); }

/* A device buffer of n floats holding a copy of host[0..n). */
static float *dev_dup(const float *host, size_t n) {
    float *d = K->alloc(n * sizeof(float));
    K->upload(d, host, n * sizeof(float));
    return d;
}

static void dev_get(float *host, const float *dev, size_t n) {
    K->download(host, dev, n * sizeof(float));
}

/* Counts elements with |got - want| > atol + rtol*|want| (NaN counts as far) and
 * prints the first few under label; 0 when all are close. */
static size_t count_far(const char *label, const float *got, const double *want, size_t n,
                        double atol, double rtol) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        if (fabs(g - w) <= atol + rtol * fabs(w)) continue;
        if (bad++ < 3)
            fprintf(stderr, "  %s: [%zu] = %.9g, expected %.9g\n", label, i, g, w);
    }
    return bad;
}

#define CHECK_ALL_NEAR(label, got, want, n, atol, rtol)                                 \
    CHECK_MSG(count_far(label, got, want, n, atol, rtol) == 0, "%s: out of tolerance",  \
              label)

/* ---------------------------------------------------------------------------------
 * Memory: alloc, free, fill, upload, download, copy
 * --------------------------------------------------------------------------------- */

static void test_alloc_zeroed(void) {
    static const size_t sizes[] = {1, 3, 4, 63, 64, 65, 1000, 4 * 4096 + 5};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        /* Dirty a block of the same size first, so a reused block would show. */
        unsigned char *dirty = K->alloc(n);
        unsigned char *ones = tn_xmalloc(n);
        memset(ones, 0xAB, n);
        K->upload(dirty, ones, n);
        K->free(dirty);

        unsigned char *p = K->alloc(n);
        CHECK(p != NULL);
        CHECK_MSG((uintptr_t)p % sizeof(float) == 0, "alloc(%zu) not float-aligned", n);
        K->download(ones, p, n);
        size_t nonzero = 0;
        for (size_t i = 0; i < n; i++) nonzero += ones[i] != 0;
        CHECK_MSG(nonzero == 0, "alloc(%zu): %zu bytes not zero", n, nonzero);
        K->free(p);
        free(ones);
    }
    K->free(K->alloc(0)); /* a zero-size allocation can be freed */
    K->free(NULL);
}

static void test_fill(void) {
    static const float values[] = {0.0f, 1.5f, -3.25f};
    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
        for (size_t l = 0; l < NLENGTHS; l++) {
            size_t n = g_lengths[l];
            float *h = host_floats(n + 1);
            rand_fill(h, n, 1.0f, 2.0f);
            h[n] = SENTINEL;
            float *d = dev_dup(h, n + 1);
            K->fill(d, values[v], n);
            dev_get(h, d, n + 1);
            size_t bad = 0;
            for (size_t i = 0; i < n; i++) bad += h[i] != values[v];
            CHECK_MSG(bad == 0, "fill(%g, n=%zu): %zu elements wrong", (double)values[v], n,
                      bad);
            CHECK_MSG(h[n] == SENTINEL, "fill(n=%zu) wrote past the end", n);
            K->free(d);
            free(h);
        }
    }
}

static void test_upload_download_copy(void) {
    enum { N = 1001 };
    int32_t src[N], back[N];
    for (int i = 0; i < N; i++) src[i] = (int32_t)tn_rng_u64(&g_rng);
    int32_t *a = K->alloc(sizeof src), *b = K->alloc(sizeof src);
    K->upload(a, src, sizeof src);
    K->copy(b, a, sizeof src);
    memset(back, 0, sizeof back);
    K->download(back, b, sizeof back);
    CHECK(memcmp(src, back, sizeof src) == 0);

    /* Partial copies move exactly the bytes asked for, odd counts and offsets included;
     * a zero-byte copy does nothing. */
    unsigned char bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[8];
    unsigned char *c = K->alloc(8), *e = K->alloc(8);
    K->upload(c, bytes, 7);
    K->upload(e, bytes, 8);
    K->copy(e + 1, c + 4, 3); /* e: 1 5 6 7 5 6 7 8 */
    K->copy(e, c + 7, 0);
    K->download(got, e, 8);
    static const unsigned char want[8] = {1, 5, 6, 7, 5, 6, 7, 8};
    CHECK(memcmp(got, want, 8) == 0);
    K->download(got, c, 8); /* the eighth byte was never uploaded: still zero */
    CHECK(got[0] == 1 && got[6] == 7 && got[7] == 0);
    K->free(a);
    K->free(b);
    K->free(c);
    K->free(e);
}

/* ---------------------------------------------------------------------------------
 * gemm
 * --------------------------------------------------------------------------------- */

typedef struct gemm_shape {
    int m, n, k;
} gemm_shape;

typedef struct gemm_scalars {
    float alpha, beta;
} gemm_scalars;

typedef struct gemm_pads {
    int a, b, c; /* extra columns beyond each matrix's width: ld = width + pad */
} gemm_pads;

static const gemm_shape gemm_shapes[] = {
    {1, 1, 1}, {4, 4, 4}, {5, 7, 3}, {7, 5, 11}, {1, 9, 4}, {6, 1, 8}, {33, 17, 65}, {64, 48, 100},
};
static const gemm_scalars gemm_scalar_cases[] = {{1, 0}, {0.5f, -1.5f}, {-2, 1}, {1, 1}};
static const gemm_pads gemm_pad_cases[] = {{0, 0, 0}, {3, 1, 2}};

/* Runs one gemm through the backend and compares c (and its padding) with a double
 * reference. A's and B's padding hold NaN, which must not be read. */
static void gemm_case(int ta, int tb, gemm_shape s, gemm_scalars sc, gemm_pads pd) {
    int ar = ta ? s.k : s.m, ac = ta ? s.m : s.k; /* stored shapes */
    int br = tb ? s.n : s.k, bc = tb ? s.k : s.n;
    int lda = ac + pd.a, ldb = bc + pd.b, ldc = s.n + pd.c;
    size_t na = (size_t)ar * lda, nb = (size_t)br * ldb, nc = (size_t)s.m * ldc;
    float *a = host_floats(na), *b = host_floats(nb), *c = host_floats(nc);
    for (size_t i = 0; i < na; i++)
        a[i] = (int)(i % lda) < ac ? 2.0f * tn_rng_uniformf(&g_rng) - 1.0f : NAN;
    for (size_t i = 0; i < nb; i++)
        b[i] = (int)(i % ldb) < bc ? 2.0f * tn_rng_uniformf(&g_rng) - 1.0f : NAN;
    for (size_t i = 0; i < nc; i++)
        c[i] = (int)(i % ldc) < s.n ? 2.0f * tn_rng_uniformf(&g_rng) - 1.0f : SENTINEL;

    double *want = host_doubles(nc);
    for (int i = 0; i < s.m; i++) {
        for (int j = 0; j < ldc; j++) {
            size_t ij = (size_t)i * ldc + j;
            if (j >= s.n) {
                want[ij] = SENTINEL;
                continue;
            }
            double acc = 0.0;
            for (int p = 0; p < s.k; p++) {
                double av = ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
                double bv = tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
                acc += av * bv;
            }
            want[ij] = (double)sc.alpha * acc + (double)sc.beta * c[ij];
        }
    }

    float *da = dev_dup(a, na), *db = dev_dup(b, nb), *dc = dev_dup(c, nc);
    K->gemm(ta, tb, s.m, s.n, s.k, sc.alpha, da, lda, db, ldb, sc.beta, dc, ldc);
    dev_get(c, dc, nc);
    char label[128];
    snprintf(label, sizeof label, "gemm ta=%d tb=%d m=%d n=%d k=%d alpha=%g beta=%g ld+%d,%d,%d",
             ta, tb, s.m, s.n, s.k, (double)sc.alpha, (double)sc.beta, pd.a, pd.b, pd.c);
    /* float accumulation over k terms of size <= 1 */
    CHECK_ALL_NEAR(label, c, want, nc, 2e-6 * (s.k + 2), 1e-5);
    K->free(da);
    K->free(db);
    K->free(dc);
    free(a);
    free(b);
    free(c);
    free(want);
}

static void test_gemm(void) {
    for (int t = 0; t < 4; t++)
        for (size_t s = 0; s < sizeof gemm_shapes / sizeof gemm_shapes[0]; s++)
            for (size_t c = 0; c < sizeof gemm_scalar_cases / sizeof gemm_scalar_cases[0]; c++)
                for (size_t p = 0; p < sizeof gemm_pad_cases / sizeof gemm_pad_cases[0]; p++)
                    gemm_case(t >> 1, t & 1, gemm_shapes[s], gemm_scalar_cases[c],
                              gemm_pad_cases[p]);
}

/* Products whose sizes cross the own AVX-512 kernel's blocks (kernels/cpu_gemm.c: k in
 * blocks of up to 256, n of up to 512, m of up to 128, tiles of 8 x 32, narrow tiles of
 * up to 16 columns): several blocks each way, the MLP's shapes (784-256-256-10, batch
 * 128, as trainer/model.c calls them), tiles with one row or column of their own. The
 * same checks as test_gemm; OpenBLAS takes them too. */
static void test_gemm_blocks(void) {
    static const struct {
        int ta, tb;
        gemm_shape s;
    } cases[] = {
        {0, 1, {128, 256, 784}}, {1, 0, {256, 784, 128}}, {0, 0, {128, 784, 256}},
        {0, 1, {128, 10, 256}},  {1, 0, {10, 256, 128}},  {0, 0, {128, 256, 10}},
        {1, 1, {137, 529, 513}}, {0, 1, {129, 33, 257}},  {1, 0, {9, 17, 600}},
        {0, 0, {1, 545, 3}},     {1, 1, {300, 1, 41}},    {0, 1, {17, 15, 8}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gemm_case(cases[i].ta, cases[i].tb, cases[i].s, (gemm_scalars){1, 0}, (gemm_pads){0, 0, 0});
        gemm_case(cases[i].ta, cases[i].tb, cases[i].s, (gemm_scalars){-0.5f, 1.5f},
                  (gemm_pads){3, 1, 5});
    }
}

/* cblas_sgemm's special cases: beta 0 does not read c (NaN there is overwritten), k 0
 * makes c beta c (zeros where beta is 0, NaN or not), and alpha 0 reads neither a nor b
 * (NaN there does not reach c). */
static void test_gemm_special(void) {
    if (g_cuda) return; /* cuBLAS's contract is the same; these are the CPU paths' */
    int m = 19, n = 37, k = 45;
    float *a = host_floats((size_t)m * k), *b = host_floats((size_t)k * n);
    float *c = host_floats((size_t)m * n);
    double *want = host_doubles((size_t)m * n);
    rand_fill(a, (size_t)m * k, -1, 1);
    rand_fill(b, (size_t)k * n, -1, 1);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int p = 0; p < k; p++) acc += (double)a[i * k + p] * b[p * n + j];
            want[i * n + j] = 2.0 * acc;
        }
    for (size_t i = 0; i < (size_t)m * n; i++) c[i] = NAN;
    float *da = dev_dup(a, (size_t)m * k), *db = dev_dup(b, (size_t)k * n);
    float *dc = dev_dup(c, (size_t)m * n);
    K->gemm(0, 0, m, n, k, 2.0f, da, k, db, n, 0.0f, dc, n);
    dev_get(c, dc, (size_t)m * n);
    CHECK_ALL_NEAR("gemm beta 0 over NaN", c, want, (size_t)m * n, 1e-4, 1e-5);

    for (size_t i = 0; i < (size_t)m * n; i++) c[i] = (float)i, want[i] = 0.5 * (double)i;
    K->upload(dc, c, (size_t)m * n * sizeof(float));
    K->gemm(0, 0, m, n, 0, 1.0f, da, k, db, n, 0.5f, dc, n);
    dev_get(c, dc, (size_t)m * n);
    CHECK_ALL_NEAR("gemm k 0, beta 0.5", c, want, (size_t)m * n, 0, 0);

    for (size_t i = 0; i < (size_t)m * n; i++) c[i] = NAN, want[i] = 0;
    K->upload(dc, c, (size_t)m * n * sizeof(float));
    K->gemm(0, 0, m, n, 0, 1.0f, da, k, db, n, 0.0f, dc, n);
    dev_get(c, dc, (size_t)m * n);
    CHECK_ALL_NEAR("gemm k 0, beta 0 over NaN", c, want, (size_t)m * n, 0, 0);

    for (size_t i = 0; i < (size_t)m * k; i++) a[i] = NAN;
    for (size_t i = 0; i < (size_t)m * n; i++) c[i] = 1.0f + (float)i, want[i] = 3.0 + 3.0 * i;
    K->upload(da, a, (size_t)m * k * sizeof(float));
    K->upload(dc, c, (size_t)m * n * sizeof(float));
    K->gemm(0, 0, m, n, k, 0.0f, da, k, db, n, 3.0f, dc, n);
    dev_get(c, dc, (size_t)m * n);
    CHECK_ALL_NEAR("gemm alpha 0, a NaN", c, want, (size_t)m * n, 0, 0);

    /* a zero sum times a negative alpha over beta 0 is +0, as cblas's 0 + alpha sum */
    for (size_t i = 0; i < (size_t)m * k; i++) a[i] = 0.0f;
    for (size_t i = 0; i < (size_t)m * n; i++) c[i] = NAN;
    K->upload(da, a, (size_t)m * k * sizeof(float));
    K->upload(dc, c, (size_t)m * n * sizeof(float));
    K->gemm(0, 0, m, n, k, -1.0f, da, k, db, n, 0.0f, dc, n);
    dev_get(c, dc, (size_t)m * n);
    size_t negzero = 0;
    for (size_t i = 0; i < (size_t)m * n; i++) negzero += c[i] != 0.0f || signbit(c[i]);
    CHECK_MSG(negzero == 0, "gemm of zeros, alpha -1, beta 0: %zu elements not +0", negzero);
    K->free(da);
    K->free(db);
    K->free(dc);
    free(a);
    free(b);
    free(c);
    free(want);
}

/* A product split between threads (cpu.c: by rows or by columns, on 2 and 3 threads)
 * gives the bits of the whole product, which the own kernel promises
 * (kernels/cpu_gemm.c) and the trainer's determinism across a job's replicas leans on;
 * checked where the own kernel makes the products (OpenBLAS's edge kernels may sum
 * otherwise, which docs/trainer.md allows for). */
static void test_gemm_split_bits(void) {
    if (g_cuda) return;
    uint64_t own0 = kn_cpu_gemm_own_products();
    static const struct {
        int ta, tb;
        gemm_shape s;
    } cases[] = {{0, 1, {128, 256, 784}}, {1, 0, {256, 784, 128}}, {0, 0, {150, 70, 300}},
                 {1, 1, {61, 333, 200}}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int ta = cases[i].ta, tb = cases[i].tb, m = cases[i].s.m, n = cases[i].s.n,
            k = cases[i].s.k;
        size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
        float *a = host_floats(na), *b = host_floats(nb), *c1 = host_floats(nc),
              *c2 = host_floats(nc);
        rand_fill(a, na, -1, 1);
        rand_fill(b, nb, -1, 1);
        rand_fill(c1, nc, -1, 1);
        float *da = dev_dup(a, na), *db = dev_dup(b, nb), *dc = dev_dup(c1, nc);
        K->set_threads(1);
        K->gemm(ta, tb, m, n, k, 0.75f, da, ta ? m : k, db, tb ? k : n, 0.5f, dc, n);
        dev_get(c2, dc, nc);
        for (int threads = 2; threads <= 3; threads++) {
            float *again = host_floats(nc);
            K->upload(dc, c1, nc * sizeof(float));
            K->set_threads(threads);
            K->gemm(ta, tb, m, n, k, 0.75f, da, ta ? m : k, db, tb ? k : n, 0.5f, dc, n);
            dev_get(again, dc, nc);
            if (kn_cpu_gemm_own_products() > own0)
                CHECK_MSG(memcmp(again, c2, nc * sizeof(float)) == 0,
                          "gemm ta=%d tb=%d %dx%dx%d: %d threads' bits differ from one's", ta,
                          tb, m, n, k, threads);
            free(again);
        }
        K->set_threads(1);
        K->free(da);
        K->free(db);
        K->free(dc);
        free(a);
        free(b);
        free(c1);
        free(c2);
    }
}

/* kn_cpu_gemm's modes: KN_GEMM_OPENBLAS makes no product by the own kernel, KN_GEMM_OWN
 * every one where the CPU has AVX-512 F (and TN_CPU_NO_AVX512=1 none), and the rule the
 * own kernel exactly where OpenBLAS's kernels in use are not AVX-512 ones. The mode the
 * run was started with (--gemm, or TN_CPU_GEMM's) is put back. */
static int g_gemm_mode = KN_GEMM_ENV; /* --gemm's, or TN_CPU_GEMM's */

static int own_gemm_possible(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    const char *no512 = getenv("TN_CPU_NO_AVX512");
    return __builtin_cpu_supports("avx512f") && !(no512 && strcmp(no512, "1") == 0);
#else
    return 0;
#endif
}

static void test_gemm_modes(void) {
    if (g_cuda) return;
    const char *core = openblas_get_corename();
    int openblas512 = core && (!strcasecmp(core, "skylakex") || !strcasecmp(core, "cooperlake") ||
                               !strcasecmp(core, "sapphirerapids"));
    static const struct {
        int mode;
        const char *name;
    } modes[] = {{KN_GEMM_OPENBLAS, "openblas"}, {KN_GEMM_OWN, "avx512"}, {KN_GEMM_RULE, "rule"}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        kn_cpu_gemm(modes[i].mode);
        uint64_t own0 = kn_cpu_gemm_own_products();
        gemm_case(0, 1, (gemm_shape){33, 17, 65}, (gemm_scalars){1, 0}, (gemm_pads){0, 0, 0});
        int own = kn_cpu_gemm_own_products() > own0;
        int want = own_gemm_possible() &&
                   (modes[i].mode == KN_GEMM_OWN || (modes[i].mode == KN_GEMM_RULE && !openblas512));
        CHECK_MSG(own == want, "kn_cpu_gemm(%s) with OpenBLAS's %s kernels: the own kernel %s",
                  modes[i].name, core ? core : "(unnamed)", own ? "ran" : "did not run");
    }
    kn_cpu_gemm(g_gemm_mode);
}

/* The result does not depend on the thread count (beyond rounding). */
/* On several threads the CPU splits products of 4 MFLOP and more along the longer side
 * of c (kernels/cpu.c): rows (m > n) and columns, odd sizes, every transpose, padded
 * strides, on 1 to 3 threads. */
static void test_gemm_threads(void) {
    gemm_shape big = {96, 80, 128}, rows = {133, 47, 331}, cols = {37, 250, 300};
    for (int threads = 1; threads <= 3; threads++) {
        K->set_threads(threads);
        gemm_case(0, 1, big, (gemm_scalars){1, 0}, (gemm_pads){0, 0, 0});
        gemm_case(1, 0, big, (gemm_scalars){0.5f, 2}, (gemm_pads){1, 2, 3});
        for (int t = 0; t < 4; t++) {
            gemm_case(t & 1, t >> 1, rows, (gemm_scalars){1, 1}, (gemm_pads){t, 2, 1});
            gemm_case(t & 1, t >> 1, cols, (gemm_scalars){-2, 0.5f}, (gemm_pads){1, t, 3});
        }
    }
    K->set_threads(1);
}

/* ---------------------------------------------------------------------------------
 * Bias helpers: broadcast_rows, sum_rows, sum_channels, add_channel_bias
 * --------------------------------------------------------------------------------- */

static void test_broadcast_rows(void) {
    static const int shapes[][2] = {{1, 1}, {3, 7}, {4, 33}, {2, 1000}, {9, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        size_t n = (size_t)rows * cols;
        float *bias = host_floats(cols), *y = host_floats(n + 1);
        double *want = host_doubles(n + 1);
        rand_fill(bias, cols, -1, 1);
        rand_fill(y, n, 5, 6); /* garbage to overwrite */
        y[n] = SENTINEL;
        for (size_t i = 0; i < n; i++) want[i] = bias[i % cols];
        want[n] = SENTINEL;
        float *dbias = dev_dup(bias, cols), *dy = dev_dup(y, n + 1);
        K->broadcast_rows(dy, dbias, rows, cols);
        dev_get(y, dy, n + 1);
        char label[64];
        snprintf(label, sizeof label, "broadcast_rows %dx%d", rows, cols);
        CHECK_ALL_NEAR(label, y, want, n + 1, 0, 0);
        K->free(dbias);
        K->free(dy);
        free(bias);
        free(y);
        free(want);
    }
}

static void test_sum_rows(void) {
    /* (CUDA: one chunk of rows up to 256, then 2, 4 and the most, 64, chunks of rows
     * summed side by side and added in a second pass) */
    static const int shapes[][2] = {{1, 1},     {3, 7},   {5, 33},   {2, 1000},
                                    {100, 3},   {257, 40}, {1000, 37}, {20000, 5}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        size_t n = (size_t)rows * cols;
        float *dy = host_floats(n), *db = host_floats(cols + 1);
        double *want = host_doubles(cols + 1);
        rand_fill(dy, n, -1, 1);
        rand_fill(db, cols, -1, 1); /* sum_rows accumulates into db */
        db[cols] = SENTINEL;
        for (int j = 0; j <= cols; j++) want[j] = db[j];
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < cols; j++) want[j] += dy[(size_t)r * cols + j];
        float *ddy = dev_dup(dy, n), *ddb = dev_dup(db, cols + 1);
        K->sum_rows(ddb, ddy, rows, cols);
        dev_get(db, ddb, cols + 1);
        char label[64];
        snprintf(label, sizeof label, "sum_rows %dx%d", rows, cols);
        CHECK_ALL_NEAR(label, db, want, cols + 1, 1e-6 * (rows + 1), 1e-6);
        /* the same sums again, bit for bit (a fixed order, whatever the sizes) */
        float *again = host_floats(cols + 1);
        float *ddb2 = K->alloc((size_t)(cols + 1) * sizeof(float));
        K->fill(ddb2, 0.0f, (size_t)cols + 1);
        K->sum_rows(ddb2, ddy, rows, cols);
        K->fill(ddb, 0.0f, (size_t)cols + 1);
        K->sum_rows(ddb, ddy, rows, cols);
        dev_get(again, ddb2, cols + 1);
        dev_get(db, ddb, cols + 1);
        CHECK_MSG(memcmp(again, db, (size_t)cols * sizeof(float)) == 0,
                  "%s: two calls summed differently", label);
        free(again);
        K->free(ddb2);
        K->free(ddy);
        K->free(ddb);
        free(dy);
        free(db);
        free(want);
    }
}

static const int g_channel_shapes[][3] = { /* b, c, s */
    {1, 1, 1}, {2, 3, 7}, {3, 4, 33}, {2, 2, 1000}, {5, 7, 1},
};
#define NCHANNEL_SHAPES (sizeof g_channel_shapes / sizeof g_channel_shapes[0])

static void test_sum_channels(void) {
    for (size_t s = 0; s < NCHANNEL_SHAPES; s++) {
        int b = g_channel_shapes[s][0], c = g_channel_shapes[s][1], sp = g_channel_shapes[s][2];
        size_t n = (size_t)b * c * sp;
        float *dy = host_floats(n), *db = host_floats(c + 1);
        double *want = host_doubles(c + 1);
        rand_fill(dy, n, -1, 1);
        rand_fill(db, c, -1, 1); /* accumulates */
        db[c] = SENTINEL;
        for (int ch = 0; ch <= c; ch++) want[ch] = db[ch];
        for (int i = 0; i < b; i++)
            for (int ch = 0; ch < c; ch++)
                for (int j = 0; j < sp; j++) want[ch] += dy[((size_t)i * c + ch) * sp + j];
        float *ddy = dev_dup(dy, n), *ddb = dev_dup(db, c + 1);
        K->sum_channels(ddb, ddy, b, c, sp);
        dev_get(db, ddb, c + 1);
        char label[64];
        snprintf(label, sizeof label, "sum_channels b=%d c=%d s=%d", b, c, sp);
        CHECK_ALL_NEAR(label, db, want, c + 1, 1e-6 * (b * sp + 1), 1e-6);
        K->free(ddy);
        K->free(ddb);
        free(dy);
        free(db);
        free(want);
    }
}

static void test_add_channel_bias(void) {
    for (size_t s = 0; s < NCHANNEL_SHAPES; s++) {
        int b = g_channel_shapes[s][0], c = g_channel_shapes[s][1], sp = g_channel_shapes[s][2];
        size_t n = (size_t)b * c * sp;
        float *y = host_floats(n + 1), *bias = host_floats(c);
        double *want = host_doubles(n + 1);
        rand_fill(y, n, -1, 1);
        rand_fill(bias, c, -1, 1);
        y[n] = SENTINEL;
        for (size_t i = 0; i <= n; i++) want[i] = y[i];
        for (int i = 0; i < b; i++)
            for (int ch = 0; ch < c; ch++)
                for (int j = 0; j < sp; j++) want[((size_t)i * c + ch) * sp + j] += bias[ch];
        float *dy = dev_dup(y, n + 1), *dbias = dev_dup(bias, c);
        K->add_channel_bias(dy, dbias, b, c, sp);
        dev_get(y, dy, n + 1);
        char label[64];
        snprintf(label, sizeof label, "add_channel_bias b=%d c=%d s=%d", b, c, sp);
        CHECK_ALL_NEAR(label, y, want, n + 1, 1e-7, 1e-6);
        K->free(dy);
        K->free(dbias);
        free(y);
        free(bias);
        free(want);
    }
}

/* ---------------------------------------------------------------------------------
 * Activations and mul
 * --------------------------------------------------------------------------------- */

typedef void (*act_fwd_fn)(float *y, const float *x, size_t n);
typedef void (*act_bwd_fn)(float *dx, const float *dy, const float *x, const float *y, size_t n);

static double ref_relu(double x) { return x > 0 ? x : 0; }
static double ref_drelu(double x) { return x > 0 ? 1 : 0; } /* 0 at 0, as PyTorch */
static double ref_tanh(double x) { return tanh(x); }
static double ref_dtanh(double x) { return 1 - tanh(x) * tanh(x); }
static double ref_gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double ref_dgelu(double x) {
    return 0.5 * (1 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2 * M_PI);
}

/* Inputs for the activations: the special values first (zero, both signs of zero,
 * saturation, the GELU tails), then uniform in [-6, 6]. */
static void act_inputs(float *x, size_t n) {
    static const float special[] = {0.0f, -0.0f, 1e-3f, -1e-3f, 0.5f, -0.5f, 3.0f, -3.0f,
                                    10.0f, -10.0f, 20.0f, -20.0f, 1e-30f, -1e-30f};
    size_t ns = sizeof special / sizeof special[0];
    rand_fill(x, n, -6, 6);
    for (size_t i = 0; i < n && i < ns; i++) x[i] = special[i];
}

static void test_activations(void) {
    const struct {
        const char *name;
        act_fwd_fn fwd;
        act_bwd_fn bwd;
        double (*f)(double);
        double (*df)(double);
    } acts[] = {
        {"relu", K->relu_forward, K->relu_backward, ref_relu, ref_drelu},
        {"tanh", K->tanh_forward, K->tanh_backward, ref_tanh, ref_dtanh},
        {"gelu", K->gelu_forward, K->gelu_backward, ref_gelu, ref_dgelu},
    };
    const double atol = 1e-6, rtol = 1e-5; /* a few float ulps of libm's tanhf, erff */
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        for (size_t l = 0; l < NLENGTHS; l++) {
            size_t n = g_lengths[l];
            float *x = host_floats(n + 1), *dy = host_floats(n + 1), *out = host_floats(n + 1);
            float *y = host_floats(n);
            double *want_y = host_doubles(n + 1), *want_dx = host_doubles(n + 1);
            act_inputs(x, n);
            rand_fill(dy, n, -2, 2);
            x[n] = dy[n] = SENTINEL;
            for (size_t i = 0; i < n; i++) {
                want_y[i] = acts[a].f(x[i]);
                want_dx[i] = dy[i] * acts[a].df(x[i]);
            }
            want_y[n] = want_dx[n] = SENTINEL;
            char label[64];

            /* Out of place. */
            float *dxv = dev_dup(x, n + 1), *ddy = dev_dup(dy, n + 1);
            float *dout = K->alloc((n + 1) * sizeof(float));
            K->fill(dout, NAN, n);
            K->fill(dout + n, SENTINEL, 1);
            acts[a].fwd(dout, dxv, n);
            dev_get(out, dout, n + 1);
            snprintf(label, sizeof label, "%s_forward n=%zu", acts[a].name, n);
            CHECK_ALL_NEAR(label, out, want_y, n + 1, atol, rtol);
            memcpy(y, out, n * sizeof(float)); /* y = f(x) as the backend computed it */
            float *dyv = dev_dup(y, n);
            K->fill(dout, NAN, n);
            acts[a].bwd(dout, ddy, dxv, dyv, n);
            dev_get(out, dout, n + 1);
            snprintf(label, sizeof label, "%s_backward n=%zu", acts[a].name, n);
            CHECK_ALL_NEAR(label, out, want_dx, n + 1, atol, rtol);

            /* In place: y == x, then dx == dy. */
            float *buf = dev_dup(x, n + 1);
            acts[a].fwd(buf, buf, n);
            dev_get(out, buf, n + 1);
            snprintf(label, sizeof label, "%s_forward in place n=%zu", acts[a].name, n);
            CHECK_ALL_NEAR(label, out, want_y, n + 1, atol, rtol);
            K->upload(buf, dy, (n + 1) * sizeof(float));
            acts[a].bwd(buf, buf, dxv, dyv, n);
            dev_get(out, buf, n + 1);
            snprintf(label, sizeof label, "%s_backward in place n=%zu", acts[a].name, n);
            CHECK_ALL_NEAR(label, out, want_dx, n + 1, atol, rtol);

            K->free(dxv);
            K->free(ddy);
            K->free(dout);
            K->free(dyv);
            K->free(buf);
            free(x);
            free(dy);
            free(out);
            free(y);
            free(want_y);
            free(want_dx);
        }
    }
}

/* Hand values, so a reference that shares a mistake with the kernel still fails. */
static void test_activation_values(void) {
    float x[4] = {-1.0f, 0.0f, 1.0f, 2.0f}, y[4], dy[4] = {1, 1, 1, 1}, dx[4];
    float *dxv = dev_dup(x, 4), *dyv = K->alloc(sizeof y), *ddy = dev_dup(dy, 4);
    float *ddx = K->alloc(sizeof dx);

    K->relu_forward(dyv, dxv, 4);
    dev_get(y, dyv, 4);
    CHECK(y[0] == 0.0f && y[1] == 0.0f && y[2] == 1.0f && y[3] == 2.0f);
    K->relu_backward(ddx, ddy, dxv, dyv, 4);
    dev_get(dx, ddx, 4);
    CHECK(dx[0] == 0.0f && dx[1] == 0.0f && dx[2] == 1.0f && dx[3] == 1.0f);

    K->tanh_forward(dyv, dxv, 4);
    dev_get(y, dyv, 4);
    CHECK_NEAR(y[2], 0.7615941559557649, 1e-7, 1e-6);
    K->tanh_backward(ddx, ddy, dxv, dyv, 4);
    dev_get(dx, ddx, 4);
    CHECK_NEAR(dx[0], 0.41997434161402614, 1e-7, 1e-6);
    CHECK_NEAR(dx[1], 1.0, 1e-7, 1e-6);

    K->gelu_forward(dyv, dxv, 4); /* exact GELU, not the tanh approximation */
    dev_get(y, dyv, 4);
    CHECK_NEAR(y[0], -0.15865525393145707, 1e-7, 1e-6);
    CHECK_NEAR(y[1], 0.0, 1e-7, 1e-6);
    CHECK_NEAR(y[2], 0.8413447460685429, 1e-7, 1e-6);
    CHECK_NEAR(y[3], 1.9544997361036416, 1e-7, 1e-6);
    K->gelu_backward(ddx, ddy, dxv, dyv, 4);
    dev_get(dx, ddx, 4);
    CHECK_NEAR(dx[0], -0.08331547058768629, 1e-7, 1e-6);
    CHECK_NEAR(dx[1], 0.5, 1e-7, 1e-6);
    CHECK_NEAR(dx[2], 1.0833154705876864, 1e-7, 1e-6);
    CHECK_NEAR(dx[3], 1.085231801078197, 1e-7, 1e-6);
    K->free(dxv);
    K->free(dyv);
    K->free(ddy);
    K->free(ddx);
}

static void test_mul(void) {
    for (size_t l = 0; l < NLENGTHS; l++) {
        size_t n = g_lengths[l];
        float *x = host_floats(n + 1), *mk = host_floats(n), *out = host_floats(n + 1);
        double *want = host_doubles(n + 1);
        rand_fill(x, n, -3, 3);
        for (size_t i = 0; i < n; i++) mk[i] = i % 3 ? 1.0f / 0.7f : 0.0f; /* a dropout mask */
        x[n] = SENTINEL;
        for (size_t i = 0; i < n; i++) want[i] = (double)x[i] * mk[i];
        want[n] = SENTINEL;
        float *dx = dev_dup(x, n + 1), *dm = dev_dup(mk, n), *dout = K->alloc((n + 1) * 4);
        K->fill(dout + n, SENTINEL, 1);
        char label[64];
        K->mul(dout, dx, dm, n);
        dev_get(out, dout, n + 1);
        snprintf(label, sizeof label, "mul n=%zu", n);
        CHECK_ALL_NEAR(label, out, want, n + 1, 0, 1e-7);
        K->mul(dx, dx, dm, n); /* in place, as dropout's backward pass runs it */
        dev_get(out, dx, n + 1);
        snprintf(label, sizeof label, "mul in place n=%zu", n);
        CHECK_ALL_NEAR(label, out, want, n + 1, 0, 1e-7);
        K->free(dx);
        K->free(dm);
        K->free(dout);
        free(x);
        free(mk);
        free(out);
        free(want);
    }
}

/* ---------------------------------------------------------------------------------
 * softmax_xent
 * --------------------------------------------------------------------------------- */

/* Reference: log-sum-exp in double; the arg-max is the first largest logit (as
 * numpy's and PyTorch's argmax), so ties count as correct only for the first. */
static void ref_xent(const float *z, const int32_t *labels, int b, int k, double *dlogits,
                     double *loss, int64_t *correct) {
    *loss = 0;
    *correct = 0;
    for (int i = 0; i < b; i++) {
        const float *r = z + (size_t)i * k;
        int arg = 0;
        for (int j = 1; j < k; j++)
            if (r[j] > r[arg]) arg = j;
        double mx = r[arg], s = 0;
        for (int j = 0; j < k; j++) s += exp(r[j] - mx);
        double lse = mx + log(s);
        *loss += lse - r[labels[i]];
        *correct += arg == labels[i];
        for (int j = 0; j < k; j++)
            dlogits[(size_t)i * k + j] = (exp(r[j] - lse) - (j == labels[i])) / b;
    }
}

/* Runs softmax_xent on (z, labels) and compares everything with ref_xent. */
static void xent_compare(const char *name, const float *z, const int32_t *labels, int b, int k) {
    size_t n = (size_t)b * k;
    double *want = host_doubles(n + 1), want_loss;
    int64_t want_correct;
    ref_xent(z, labels, b, k, want, &want_loss, &want_correct);
    want[n] = SENTINEL;
    float *dz = dev_dup(z, n), *dd = K->alloc((n + 1) * sizeof(float)), *got = host_floats(n + 1);
    int32_t *dl = K->alloc((size_t)b * sizeof(int32_t));
    K->upload(dl, labels, (size_t)b * sizeof(int32_t));
    K->fill(dd, NAN, n);
    K->fill(dd + n, SENTINEL, 1);
    double loss = -1;
    int64_t correct = -1;
    K->softmax_xent(dz, dl, b, k, dd, &loss, &correct);
    dev_get(got, dd, n + 1);
    CHECK_MSG(fabs(loss - want_loss) <= 1e-5 + 1e-6 * fabs(want_loss),
              "%s: loss_sum %.9g, expected %.9g", name, loss, want_loss);
    CHECK_MSG(correct == want_correct, "%s: correct %lld, expected %lld", name,
              (long long)correct, (long long)want_correct);
    CHECK_ALL_NEAR(name, got, want, n + 1, 1e-7, 1e-5);

    /* Each output is optional; the others come out the same. */
    double loss2 = -1;
    int64_t correct2 = -1;
    K->softmax_xent(dz, dl, b, k, NULL, &loss2, NULL);
    CHECK_MSG(loss2 == loss, "%s: loss without dlogits %.9g != %.9g", name, loss2, loss);
    K->softmax_xent(dz, dl, b, k, NULL, NULL, &correct2);
    CHECK_MSG(correct2 == correct, "%s: correct without the others differs", name);
    K->softmax_xent(dz, dl, b, k, dd, NULL, NULL);
    dev_get(got, dd, n + 1);
    CHECK_ALL_NEAR(name, got, want, n + 1, 1e-7, 1e-5);
    K->free(dz);
    K->free(dd);
    K->free(dl);
    free(want);
    free(got);
}

static void test_softmax_xent_random(void) {
    static const int shapes[][2] = {{1, 2}, {5, 7}, {17, 10}, {3, 100}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int b = shapes[s][0], k = shapes[s][1];
        float *z = host_floats((size_t)b * k);
        int32_t *labels = tn_xcalloc(b, sizeof(int32_t));
        for (size_t i = 0; i < (size_t)b * k; i++) z[i] = (float)(3 * tn_rng_normal(&g_rng));
        for (int i = 0; i < b; i++) labels[i] = (int32_t)tn_rng_below(&g_rng, k);
        char label[64];
        snprintf(label, sizeof label, "softmax_xent b=%d k=%d", b, k);
        xent_compare(label, z, labels, b, k);
        free(z);
        free(labels);
    }
}

/* Hand-computed cases: large logits (a naive exp overflows), ties. */
static const struct xent_case {
    const char *name;
    int b, k;
    float z[12];
    int32_t labels[3];
    double loss;     /* summed */
    int64_t correct; /* with the first of tied maxima as the arg-max */
} xent_cases[] = {
    /* row 0: log(1 + e^-1000 + e^-2000) = 0; row 1: log(1 + e^-1) + 1 */
    {"large logits", 2, 3, {1000, 0, -1000, -1000, 1000, 999}, {0, 2}, 1.3132616875182228, 1},
    /* log(1 + e^-2000) + 2000 */
    {"huge loss", 1, 2, {1000, -1000}, {1}, 2000.0, 0},
    /* log(1 + e^-1 + e^-2) */
    {"large negative", 1, 3, {-1000, -1001, -1002}, {0}, 0.40760596444438013, 1},
    /* row 0: all equal, log 4; row 1: tie between 1 and 2, label 2 is not the arg-max;
     * row 2: tie between 0, 1 and 3, label 3 is not the arg-max; the sum is
     * log 4 + log(2 + e^-3 + e^-5) + log(3 + e^-4) */
    {"ties", 3, 4, {1, 1, 1, 1, 2, 5, 5, 0, -3, -3, -7, -3}, {0, 2, 3}, 3.2120109741105294, 1},
};

static void test_softmax_xent_cases(void) {
    for (size_t c = 0; c < sizeof xent_cases / sizeof xent_cases[0]; c++) {
        const struct xent_case *xc = &xent_cases[c];
        xent_compare(xc->name, xc->z, xc->labels, xc->b, xc->k);
        /* And against the hand values. */
        int32_t *dl = K->alloc(sizeof xc->labels);
        float *dz = dev_dup(xc->z, (size_t)xc->b * xc->k);
        K->upload(dl, xc->labels, sizeof xc->labels);
        double loss = -1;
        int64_t correct = -1;
        K->softmax_xent(dz, dl, xc->b, xc->k, NULL, &loss, &correct);
        CHECK_MSG(fabs(loss - xc->loss) <= 1e-5 + 1e-6 * xc->loss, "%s: loss %.12g, want %.12g",
                  xc->name, loss, xc->loss);
        CHECK_MSG(correct == xc->correct, "%s: correct %lld, want %lld", xc->name,
                  (long long)correct, (long long)xc->correct);
        K->free(dl);
        K->free(dz);
    }
}

/* ---------------------------------------------------------------------------------
 * im2col, col2im
 * --------------------------------------------------------------------------------- */

static const struct conv_case {
    int c, h, w, kh, kw, pad;
} conv_cases[] = {
    {2, 5, 3, 3, 3, 1}, /* the model's 3x3 pad 1, odd sizes */
    {1, 1, 1, 3, 3, 1}, /* every tap but the centre is padding */
    {3, 4, 6, 1, 1, 0}, /* 1x1: col is x */
    {2, 5, 3, 3, 3, 0}, /* valid: oh = 3, ow = 1 */
    {1, 3, 2, 3, 3, 2}, /* padding wider than the kernel's reach */
    {2, 4, 5, 1, 3, 1}, /* kh != kw */
    {3, 8, 8, 3, 3, 1},
};

/* The reference col (c*kh*kw, oh*ow) of one image. */
static void ref_im2col(double *col, const float *x, const struct conv_case *cc) {
    int oh = cc->h + 2 * cc->pad - cc->kh + 1, ow = cc->w + 2 * cc->pad - cc->kw + 1;
    for (int ch = 0; ch < cc->c; ch++)
        for (int ki = 0; ki < cc->kh; ki++)
            for (int kj = 0; kj < cc->kw; kj++)
                for (int oy = 0; oy < oh; oy++)
                    for (int ox = 0; ox < ow; ox++) {
                        int iy = oy + ki - cc->pad, ix = ox + kj - cc->pad;
                        size_t row = ((size_t)ch * cc->kh + ki) * cc->kw + kj;
                        col[row * oh * ow + (size_t)oy * ow + ox] =
                            iy >= 0 && iy < cc->h && ix >= 0 && ix < cc->w
                                ? x[((size_t)ch * cc->h + iy) * cc->w + ix]
                                : 0.0;
                    }
}

#define OHW(cc) (((cc)->h + 2 * (cc)->pad - (cc)->kh + 1) * ((cc)->w + 2 * (cc)->pad - (cc)->kw + 1))

/* The batched layout the model uses: images stored (C, B, H, W) (channel stride
 * B*H*W), their cols side by side in one (c*kh*kw, B*oh*ow) matrix (row stride
 * B*oh*ow). Each image's block must equal the contiguous single-image result, and
 * col2im must scatter back into the same strided layout. */
static void test_im2col_strided(void) {
    const int B = 3;
    for (size_t t = 0; t < sizeof conv_cases / sizeof conv_cases[0]; t++) {
        const struct conv_case *cc = &conv_cases[t];
        int hw = cc->h * cc->w, ohw = OHW(cc), rows = cc->c * cc->kh * cc->kw;
        size_t nx = (size_t)cc->c * B * hw, ncol = (size_t)rows * B * ohw;
        size_t none = (size_t)rows * ohw;
        float *x = host_floats(nx), *one = host_floats((size_t)cc->c * hw);
        float *col = host_floats(ncol), *ref = host_floats(none), *dx = host_floats(nx);
        float *done = host_floats((size_t)cc->c * hw);
        rand_fill(x, nx, -1, 1);
        float *dxv = dev_dup(x, nx), *dcol = K->alloc(ncol * sizeof(float));
        float *dref = K->alloc(none * sizeof(float)), *done_v = K->alloc((size_t)cc->c * hw * 4);
        K->fill(dcol, NAN, ncol);
        for (int i = 0; i < B; i++)
            K->im2col(dcol + (size_t)i * ohw, B * ohw, dxv + (size_t)i * hw, (size_t)B * hw, cc->c,
                      cc->h, cc->w, cc->kh, cc->kw, cc->pad);
        dev_get(col, dcol, ncol);
        size_t bad = 0;
        for (int i = 0; i < B; i++) {
            for (int ch = 0; ch < cc->c; ch++) /* image i alone, (c, h, w) */
                memcpy(one + (size_t)ch * hw, x + ((size_t)ch * B + i) * hw, (size_t)hw * sizeof(float));
            K->upload(done_v, one, (size_t)cc->c * hw * sizeof(float));
            K->im2col(dref, ohw, done_v, (size_t)hw, cc->c, cc->h, cc->w, cc->kh, cc->kw, cc->pad);
            dev_get(ref, dref, none);
            for (int r = 0; r < rows; r++)
                for (int j = 0; j < ohw; j++)
                    bad += col[(size_t)r * B * ohw + (size_t)i * ohw + j] != ref[(size_t)r * ohw + j];
        }
        CHECK_MSG(bad == 0, "case %zu: %zu strided im2col entries differ", t, bad);
        /* col2im back into the strided layout equals per-image col2im. */
        float *ddx = K->alloc(nx * sizeof(float));
        for (int i = 0; i < B; i++)
            K->col2im(ddx + (size_t)i * hw, (size_t)B * hw, dcol + (size_t)i * ohw, B * ohw, cc->c,
                      cc->h, cc->w, cc->kh, cc->kw, cc->pad);
        dev_get(dx, ddx, nx);
        bad = 0;
        for (int i = 0; i < B; i++) {
            for (int ch = 0; ch < cc->c; ch++)
                memcpy(one + (size_t)ch * hw, x + ((size_t)ch * B + i) * hw, (size_t)hw * sizeof(float));
            K->upload(done_v, one, (size_t)cc->c * hw * sizeof(float));
            K->im2col(dref, ohw, done_v, (size_t)hw, cc->c, cc->h, cc->w, cc->kh, cc->kw, cc->pad);
            K->fill(done_v, 0.0f, (size_t)cc->c * hw);
            K->col2im(done_v, (size_t)hw, dref, ohw, cc->c, cc->h, cc->w, cc->kh, cc->kw, cc->pad);
            dev_get(done, done_v, (size_t)cc->c * hw);
            for (int ch = 0; ch < cc->c; ch++)
                for (int j = 0; j < hw; j++)
                    bad += dx[((size_t)ch * B + i) * hw + j] != done[(size_t)ch * hw + j];
        }
        CHECK_MSG(bad == 0, "case %zu: %zu strided col2im entries differ", t, bad);

        /* The batched calls equal the per-image ones, bit for bit. */
        float *bcol = K->alloc(ncol * sizeof(float)), *bdx = K->alloc(nx * sizeof(float));
        float *got = host_floats(ncol > nx ? ncol : nx);
        K->fill(bcol, NAN, ncol);
        K->im2col_batch(bcol, dxv, B, (size_t)hw, (size_t)B * hw, cc->c, cc->h, cc->w, cc->kh,
                        cc->kw, cc->pad);
        dev_get(got, bcol, ncol);
        CHECK_MSG(memcmp(got, col, ncol * sizeof(float)) == 0, "case %zu: im2col_batch differs",
                  t);
        K->col2im_batch(bdx, B, (size_t)hw, (size_t)B * hw, bcol, cc->c, cc->h, cc->w, cc->kh,
                        cc->kw, cc->pad);
        dev_get(got, bdx, nx);
        CHECK_MSG(memcmp(got, dx, nx * sizeof(float)) == 0, "case %zu: col2im_batch differs", t);
        K->free(bcol);
        K->free(bdx);
        free(got);

        K->free(dxv);
        K->free(dcol);
        K->free(dref);
        K->free(done_v);
        K->free(ddx);
        free(x);
        free(one);
        free(col);
        free(ref);
        free(dx);
        free(done);
    }
}

/* Also on 2 and 3 threads, with copies of 65,536 floats and more, which the CPU splits
 * between its threads. */
static void test_swap01(void) {
    const int shapes[][3] = {{1, 1, 1},    {2, 3, 4},    {5, 1, 7},  {3, 4, 1},
                             {64, 8, 49},  {64, 128, 49}, {129, 37, 17}, {2, 40000, 1}};
    for (size_t t = 0; t < 3 * sizeof shapes / sizeof shapes[0]; t++) {
        int p = shapes[t / 3][0], q = shapes[t / 3][1], sz = shapes[t / 3][2];
        K->set_threads(1 + (int)(t % 3));
        size_t n = (size_t)p * q * sz;
        float *x = host_floats(n), *y = host_floats(n + 1), *back = host_floats(n);
        rand_fill(x, n, -1, 1);
        float *dx = dev_dup(x, n), *dy = K->alloc((n + 1) * sizeof(float));
        float *dback = K->alloc(n * sizeof(float));
        K->fill(dy, NAN, n);
        K->fill(dy + n, SENTINEL, 1);
        K->swap01(dy, dx, p, q, sz);
        dev_get(y, dy, n + 1);
        size_t bad = 0;
        for (int i = 0; i < p; i++)
            for (int j = 0; j < q; j++)
                for (int k = 0; k < sz; k++)
                    bad += y[((size_t)j * p + i) * sz + k] != x[((size_t)i * q + j) * sz + k];
        CHECK_MSG(bad == 0, "swap01 %dx%dx%d: %zu entries wrong", p, q, sz, bad);
        CHECK(y[n] == SENTINEL);
        K->swap01(dback, dy, q, p, sz); /* its own inverse with the axes exchanged */
        dev_get(back, dback, n);
        CHECK(memcmp(back, x, n * sizeof(float)) == 0);
        K->free(dx);
        K->free(dy);
        K->free(dback);
        free(x);
        free(y);
        free(back);
    }
    K->set_threads(1);
}

static void test_im2col_col2im(void) {
    for (size_t t = 0; t < sizeof conv_cases / sizeof conv_cases[0]; t++) {
        const struct conv_case *cc = &conv_cases[t];
        int oh = cc->h + 2 * cc->pad - cc->kh + 1, ow = cc->w + 2 * cc->pad - cc->kw + 1;
        size_t nx = (size_t)cc->c * cc->h * cc->w;
        size_t ncol = (size_t)cc->c * cc->kh * cc->kw * oh * ow;
        float *x = host_floats(nx + 1), *col = host_floats(ncol + 1), *y = host_floats(ncol);
        float *dx0 = host_floats(nx + 1), *dx = host_floats(nx + 1);
        double *want_col = host_doubles(ncol + 1), *want_dx = host_doubles(nx + 1);
        rand_fill(x, nx, -1, 1);
        rand_fill(y, ncol, -1, 1);
        rand_fill(dx0, nx, -1, 1);
        x[nx] = dx0[nx] = SENTINEL;
        ref_im2col(want_col, x, cc);
        want_col[ncol] = SENTINEL;
        char label[96];

        /* im2col writes every element of col (which starts as NaN). */
        float *dxv = dev_dup(x, nx), *dcol = K->alloc((ncol + 1) * sizeof(float));
        K->fill(dcol, NAN, ncol);
        K->fill(dcol + ncol, SENTINEL, 1);
        K->im2col(dcol, OHW(cc), dxv, (size_t)cc->h * cc->w, cc->c, cc->h, cc->w, cc->kh, cc->kw,
                  cc->pad);
        dev_get(col, dcol, ncol + 1);
        snprintf(label, sizeof label, "im2col c=%d h=%d w=%d k=%dx%d pad=%d", cc->c, cc->h,
                 cc->w, cc->kh, cc->kw, cc->pad);
        CHECK_ALL_NEAR(label, col, want_col, ncol + 1, 0, 0);

        /* col2im adds into dx: dx0 + the sum over taps of y at each pixel. */
        for (size_t i = 0; i <= nx; i++) want_dx[i] = dx0[i];
        for (int ch = 0; ch < cc->c; ch++)
            for (int ki = 0; ki < cc->kh; ki++)
                for (int kj = 0; kj < cc->kw; kj++)
                    for (int oy = 0; oy < oh; oy++)
                        for (int ox = 0; ox < ow; ox++) {
                            int iy = oy + ki - cc->pad, ix = ox + kj - cc->pad;
                            if (iy < 0 || iy >= cc->h || ix < 0 || ix >= cc->w) continue;
                            size_t row = ((size_t)ch * cc->kh + ki) * cc->kw + kj;
                            want_dx[((size_t)ch * cc->h + iy) * cc->w + ix] +=
                                y[row * oh * ow + (size_t)oy * ow + ox];
                        }
        float *dy = dev_dup(y, ncol), *ddx = dev_dup(dx0, nx + 1);
        K->col2im(ddx, (size_t)cc->h * cc->w, dy, OHW(cc), cc->c, cc->h, cc->w, cc->kh, cc->kw,
                  cc->pad);
        dev_get(dx, ddx, nx + 1);
        snprintf(label, sizeof label, "col2im c=%d h=%d w=%d k=%dx%d pad=%d", cc->c, cc->h,
                 cc->w, cc->kh, cc->kw, cc->pad);
        CHECK_ALL_NEAR(label, dx, want_dx, nx + 1, 1e-6, 1e-6);

        /* Adjoint: <im2col(x), y> == <x, col2im(y)> with dx zeroed first. */
        K->fill(ddx, 0.0f, nx);
        K->col2im(ddx, (size_t)cc->h * cc->w, dy, OHW(cc), cc->c, cc->h, cc->w, cc->kh, cc->kw,
                  cc->pad);
        dev_get(dx, ddx, nx);
        double lhs = 0, rhs = 0, scale = 0;
        for (size_t i = 0; i < ncol; i++) {
            lhs += (double)col[i] * y[i];
            scale += fabs((double)col[i] * y[i]);
        }
        for (size_t i = 0; i < nx; i++) rhs += (double)x[i] * dx[i];
        CHECK_MSG(fabs(lhs - rhs) <= 1e-6 * (scale + 1),
                  "%s: <im2col x, y> %.9g != <x, col2im y> %.9g", label, lhs, rhs);

        K->free(dxv);
        K->free(dcol);
        K->free(dy);
        K->free(ddx);
        free(x);
        free(col);
        free(y);
        free(dx0);
        free(dx);
        free(want_col);
        free(want_dx);
    }
}

/* ---------------------------------------------------------------------------------
 * maxpool2
 * --------------------------------------------------------------------------------- */

static const struct pool_case {
    int n, h, w;
    float lo, hi; /* input range */
} pool_cases[] = {
    {3, 4, 6, -1, 1}, {2, 5, 7, -1, 1}, /* odd: last row and column dropped */
    {1, 2, 2, -1, 1}, {2, 3, 3, -1, 1}, {4, 7, 2, -1, 1},
    {2, 6, 4, -3, -2}, /* all negative: the max is not clamped at 0 */
};

/* Forward against a reference (the first largest element of each window, in the
 * order top-left, top-right, bottom-left, bottom-right), then backward: dx holds dy
 * at each window's arg-max and 0 everywhere else, dropped rows and columns included. */
static void pool_check(const char *name, const float *x, int n, int h, int w) {
    int oh = h / 2, ow = w / 2;
    size_t nx = (size_t)n * h * w, ny = (size_t)n * oh * ow;
    double *want_y = host_doubles(ny + 1), *want_dx = host_doubles(nx + 1);
    int32_t *want_arg = tn_xcalloc(ny, sizeof(int32_t)), *arg = tn_xcalloc(ny, sizeof(int32_t));
    float *y = host_floats(ny + 1), *dy = host_floats(ny), *dx = host_floats(nx + 1);
    rand_fill(dy, ny, -1, 1);
    for (int p = 0; p < n; p++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                const float *pl = x + (size_t)p * h * w;
                int taps[4] = {2 * oy * w + 2 * ox, 2 * oy * w + 2 * ox + 1,
                               (2 * oy + 1) * w + 2 * ox, (2 * oy + 1) * w + 2 * ox + 1};
                int best = taps[0];
                for (int t = 1; t < 4; t++)
                    if (pl[taps[t]] > pl[best]) best = taps[t];
                size_t o = ((size_t)p * oh + oy) * ow + ox;
                want_y[o] = pl[best];
                want_arg[o] = best;
            }
    want_y[ny] = SENTINEL;
    for (size_t i = 0; i < ny; i++)
        want_dx[(i / ((size_t)oh * ow)) * h * w + want_arg[i]] += dy[i];
    want_dx[nx] = SENTINEL;

    float *dxv = dev_dup(x, nx), *dyv = K->alloc((ny + 1) * sizeof(float));
    int32_t *dargv = K->alloc(ny * sizeof(int32_t));
    K->fill(dyv, NAN, ny);
    K->fill(dyv + ny, SENTINEL, 1);
    K->maxpool2_forward(dyv, dargv, dxv, n, h, w);
    dev_get(y, dyv, ny + 1);
    K->download(arg, dargv, ny * sizeof(int32_t));
    char label[96];
    snprintf(label, sizeof label, "maxpool2_forward %s n=%d h=%d w=%d", name, n, h, w);
    CHECK_ALL_NEAR(label, y, want_y, ny + 1, 0, 0);
    CHECK_MSG(memcmp(arg, want_arg, ny * sizeof(int32_t)) == 0, "%s: argmax differs", label);

    float *dgv = dev_dup(dy, ny), *ddx = K->alloc((nx + 1) * sizeof(float));
    K->fill(ddx, NAN, nx); /* backward writes every element */
    K->fill(ddx + nx, SENTINEL, 1);
    K->maxpool2_backward(ddx, dgv, dargv, n, h, w);
    dev_get(dx, ddx, nx + 1);
    snprintf(label, sizeof label, "maxpool2_backward %s n=%d h=%d w=%d", name, n, h, w);
    CHECK_ALL_NEAR(label, dx, want_dx, nx + 1, 0, 0);

    K->free(dxv);
    K->free(dyv);
    K->free(dargv);
    K->free(dgv);
    K->free(ddx);
    free(want_y);
    free(want_dx);
    free(want_arg);
    free(arg);
    free(y);
    free(dy);
    free(dx);
}

static void test_maxpool2(void) {
    for (size_t t = 0; t < sizeof pool_cases / sizeof pool_cases[0]; t++) {
        const struct pool_case *pc = &pool_cases[t];
        size_t nx = (size_t)pc->n * pc->h * pc->w;
        float *x = host_floats(nx);
        rand_fill(x, nx, pc->lo, pc->hi);
        pool_check("random", x, pc->n, pc->h, pc->w);
        free(x);
    }
}

/* Ties go to the first maximum in window order; hand-checked arg-maxes. */
static void test_maxpool2_ties(void) {
    static const float x[4 * 5] = {
        1, 3, /**/ 7, 7, /**/ 9, /* window (0,0): 3 at index 1; (0,1): 7 at index 2 */
        3, 0, /**/ 7, 7, /**/ 9, /* last column dropped */
        0, 0, /**/ -1, -2,/**/ 9, /* window (1,0): all 0, index 10; (1,1): -1 at 12 */
        0, 0, /**/ -1, -1,/**/ 9,
    };
    pool_check("ties", x, 1, 4, 5);
    static const int32_t want[4] = {1, 2, 10, 12};
    int32_t got[4];
    float *dx = dev_dup(x, 20), *dy = K->alloc(4 * sizeof(float));
    int32_t *darg = K->alloc(sizeof got);
    K->maxpool2_forward(dy, darg, dx, 1, 4, 5);
    K->download(got, darg, sizeof got);
    CHECK(memcmp(got, want, sizeof want) == 0);
    K->free(dx);
    K->free(dy);
    K->free(darg);
}

/* The updates of more than 65536 parameters are split between the CPU's threads
 * (kernels/cpu.c), element by element: the same bits on 1, 2 and 3 threads. */
static void test_optim_threads(void) {
    const size_t n = 200003;
    float *p0 = host_floats(n), *g = host_floats(n), *v0 = host_floats(n), *m0 = host_floats(n);
    float *got[3][3];
    rand_fill(p0, n, -1, 1);
    rand_fill(g, n, -1, 1);
    rand_fill(m0, n, -0.1f, 0.1f);
    rand_fill(v0, n, 0, 0.01f);
    for (int kind = 0; kind < 4; kind++) {
        for (int threads = 1; threads <= 3; threads++) {
            float *dp = dev_dup(p0, n), *dg = dev_dup(g, n), *dm = dev_dup(m0, n);
            float *dv = dev_dup(v0, n);
            K->set_threads(threads);
            if (kind < 2)
                K->sgd_momentum(dp, dg, dv, n, 0.05f, 0.9f, 1e-4f, kind);
            else
                K->adam(dp, dg, dm, dv, n, 1e-3f, 0.9f, 0.999f, 1e-8f, 1e-2f, kind - 2, 0.1f,
                        0.001f);
            K->set_threads(1);
            float **out = got[threads - 1];
            out[0] = host_floats(n);
            out[1] = host_floats(n);
            out[2] = host_floats(n);
            dev_get(out[0], dp, n);
            dev_get(out[1], dm, n);
            dev_get(out[2], dv, n);
            K->free(dp);
            K->free(dg);
            K->free(dm);
            K->free(dv);
        }
        for (int t = 1; t < 3; t++)
            for (int i = 0; i < 3; i++)
                CHECK_MSG(memcmp(got[t][i], got[0][i], n * sizeof(float)) == 0,
                          "optimiser %d on %d threads: buffer %d differs from one thread's",
                          kind, t + 1, i);
        size_t changed = 0;
        for (size_t i = 0; i < n; i++) changed += got[0][0][i] != p0[i];
        CHECK_MSG(changed > n / 2, "optimiser %d: only %zu of %zu parameters moved", kind,
                  changed, n);
        for (int t = 0; t < 3; t++)
            for (int i = 0; i < 3; i++) free(got[t][i]);
    }
    free(p0);
    free(g);
    free(v0);
    free(m0);
}

/* ---------------------------------------------------------------------------------
 * Conv blocks (optional: conv_block_forward, conv_block_backward)
 * --------------------------------------------------------------------------------- */

static const struct block_case {
    int b, c, h, w, f, act;
    int planar; /* x as (c, b, h, w) with a gap of one image per channel; else (b, c, h, w)
                   with a gap of 3 floats after each image */
} block_cases[] = {
    {3, 1, 6, 6, 2, KN_RELU, 0},
    {5, 2, 7, 5, 3, KN_TANH, 1},   /* odd h and w: the last row and column are dropped */
    {2, 3, 9, 8, 4, KN_GELU, 0},
    {1, 2, 2, 2, 1, KN_RELU, 1},   /* one image, one pooled output per plane */
    {17, 4, 3, 5, 5, KN_GELU, 1},  /* more images than groups (16) */
    {37, 1, 28, 28, 16, KN_RELU, 0}, /* the model's first layer: chunks of several images */
    {21, 16, 20, 18, 24, KN_RELU, 1}, /* the second: several chunks in some groups */
    {6, 3, 11, 13, 4, KN_TANH, 0},
    {2, 2, 1, 3, 2, KN_RELU, 1},   /* one row: nothing to pool, every gradient 0 */
    {3, 1, 3, 1, 2, KN_GELU, 0},   /* one column */
    {4, 3, 10, 36, 5, KN_RELU, 1}, /* rows of 18 windows (the AVX2 forms take 8 at a time),
                                      an odd number of filters */
};

static double ref_act(int act, double v) {
    return act == KN_RELU ? ref_relu(v) : act == KN_TANH ? ref_tanh(v) : ref_gelu(v);
}
static double ref_dact(int act, double v) {
    return act == KN_RELU ? ref_drelu(v) : act == KN_TANH ? ref_dtanh(v) : ref_dgelu(v);
}

/* Where a block's input element (image i, channel ch, y, x) lives. */
static size_t block_at(const struct block_case *bc, int i, int ch, int yy, int xx) {
    size_t hw = (size_t)bc->h * bc->w;
    size_t istride = bc->planar ? hw : (size_t)bc->c * hw + 3;
    size_t cstride = bc->planar ? (size_t)(bc->b + 1) * hw : hw;
    return i * istride + ch * cstride + (size_t)yy * bc->w + xx;
}

/* Where a block's pooled output (filter co, image i, pooled position q) lives in y,
 * choice, zmax and dy: (b, f, h/2, w/2) (kernels.h). */
static size_t block_out_at(const struct block_case *bc, int co, int i, int q) {
    return ((size_t)i * bc->f + co) * (bc->h / 2) * (bc->w / 2) + q;
}

static size_t block_x_size(const struct block_case *bc) {
    return block_at(bc, bc->b - 1, bc->c - 1, bc->h - 1, bc->w - 1) + 1 +
           (bc->planar ? (size_t)bc->h * bc->w : 3); /* the last gap too */
}

/* A block case's inputs, random: x (its gaps too), W, bias and dy (with one float, 0,
 * past the pooled outputs, for the copies of np + 1 floats some tests make), and their
 * sizes. */
typedef struct {
    float *x, *W, *bias, *dy;
    size_t nx, nw, np;
} block_in;

static block_in block_inputs(const struct block_case *bc) {
    block_in in = {.nx = block_x_size(bc), .nw = (size_t)bc->f * bc->c * 9,
                   .np = (size_t)bc->f * bc->b * (bc->h / 2) * (bc->w / 2)};
    in.x = host_floats(in.nx);
    in.W = host_floats(in.nw);
    in.bias = host_floats(bc->f);
    in.dy = host_floats(in.np + 1);
    rand_fill(in.x, in.nx, -1, 1);
    rand_fill(in.W, in.nw, -0.5f, 0.5f);
    rand_fill(in.bias, bc->f, -0.3f, 0.3f);
    rand_fill(in.dy, in.np, -1, 1);
    return in;
}

static void block_inputs_free(block_in *in) {
    free(in->x);
    free(in->W);
    free(in->bias);
    free(in->dy);
}

/* What one forward and backward pass of a block wrote. */
/* The conv's pre-activation at (co, i, yy, xx) in double, from the definition: bias
 * plus the 3x3 taps over every input channel, zero outside the plane. */
static double ref_conv_at(const struct block_case *bc, const float *x, const float *W,
                          const float *bias, int co, int i, int yy, int xx) {
    double acc = bias[co];
    for (int ch = 0; ch < bc->c; ch++)
        for (int tap = 0; tap < 9; tap++) {
            int iy = yy + tap / 3 - 1, ix = xx + tap % 3 - 1;
            if (iy < 0 || iy >= bc->h || ix < 0 || ix >= bc->w) continue;
            acc += (double)W[((size_t)co * bc->c + ch) * 9 + tap] * x[block_at(bc, i, ch, iy, ix)];
        }
    return acc;
}

/* Its backward: d, the gradient of the pre-activation at (co, i, yy, xx), added into
 * dw (f, c, 3, 3) through the input and into dx (block_at) through the filters. */
static void ref_conv_back_at(const struct block_case *bc, const float *x, const float *W,
                             int co, int i, int yy, int xx, double d, double *dw, double *dx) {
    for (int ch = 0; ch < bc->c; ch++)
        for (int tap = 0; tap < 9; tap++) {
            int iy = yy + tap / 3 - 1, ix = xx + tap % 3 - 1;
            if (iy < 0 || iy >= bc->h || ix < 0 || ix >= bc->w) continue;
            size_t wi = ((size_t)co * bc->c + ch) * 9 + tap, xi = block_at(bc, i, ch, iy, ix);
            dw[wi] += d * x[xi];
            dx[xi] += d * W[wi];
        }
}

/* A reference dx to accumulate into: 0 on the planes, SENTINEL in the layout's gaps
 * (which the block must leave as they are). */
static double *ref_dx_new(const struct block_case *bc, size_t nx) {
    double *dx = host_doubles(nx);
    for (size_t k = 0; k < nx; k++) dx[k] = SENTINEL;
    for (int i = 0; i < bc->b; i++)
        for (int ch = 0; ch < bc->c; ch++)
            for (int p = 0; p < bc->h * bc->w; p++) dx[block_at(bc, i, ch, 0, 0) + p] = 0;
    return dx;
}

typedef struct block_out {
    float *y, *zmax, *dW, *db, *dx; /* with a sentinel past the end; dx as x */
    uint8_t *choice;                /* with CHOICE_SENTINEL past the end */
} block_out;

#define CHOICE_SENTINEL 0xA5 /* a byte no choice is (kernels.h: enum kn_pool_choice) */

/* Runs the block on K with `threads` threads; zmax asked for when want_zmax, dx when
 * want_dx (else the dx of block_out stays as it was set up: NaN and sentinels). */
static block_out block_run_dx(const struct block_case *bc, const float *x, const float *W,
                              const float *bias, const float *dy, int threads, int want_zmax,
                              int want_dx) {
    size_t hw = (size_t)bc->h * bc->w, np = (size_t)bc->f * bc->b * (bc->h / 2) * (bc->w / 2);
    size_t nx = block_x_size(bc), nw = (size_t)bc->f * bc->c * 9;
    size_t istride = bc->planar ? hw : (size_t)bc->c * hw + 3;
    size_t cstride = bc->planar ? (size_t)(bc->b + 1) * hw : hw;
    float *dxv = dev_dup(x, nx), *dW = dev_dup(W, nw), *dbias = dev_dup(bias, bc->f);
    float *ddy = dev_dup(dy, np);
    float *dyo = K->alloc((np + 1) * sizeof(float)), *dz = K->alloc((np + 1) * sizeof(float));
    uint8_t *dch = K->alloc(np + 1), past = CHOICE_SENTINEL;
    float *dgw = K->alloc((nw + 1) * sizeof(float)), *dgb = K->alloc((bc->f + 1) * sizeof(float));
    float *dgx = K->alloc(nx * sizeof(float));
    K->fill(dyo, NAN, np);
    K->fill(dyo + np, SENTINEL, 1);
    K->fill(dz, NAN, np);
    K->fill(dz + np, SENTINEL, 1);
    K->upload(dch + np, &past, 1);
    K->fill(dgw, NAN, nw);
    K->fill(dgw + nw, SENTINEL, 1);
    K->fill(dgb, NAN, bc->f);
    K->fill(dgb + bc->f, SENTINEL, 1);
    /* dx: NaN on the images' planes (all written), SENTINEL in the gaps (none) */
    float *gx = host_floats(nx);
    for (size_t i = 0; i < nx; i++) gx[i] = SENTINEL;
    for (int i = 0; i < bc->b; i++)
        for (int ch = 0; ch < bc->c; ch++)
            for (size_t p = 0; p < hw; p++) gx[block_at(bc, i, ch, 0, 0) + p] = NAN;
    K->upload(dgx, gx, nx * sizeof(float));
    K->set_threads(threads);
    K->conv_block_forward(dyo, dch, want_zmax ? dz : NULL, dxv, bc->b, istride, cstride, bc->c,
                          bc->h, bc->w, dW, dbias, bc->f, bc->act);
    K->conv_block_backward(dgw, dgb, want_dx ? dgx : NULL, ddy, dch, dyo, dz, dxv, bc->b,
                           istride, cstride, bc->c, bc->h, bc->w, dW, bc->f, bc->act);
    K->set_threads(1);
    block_out o = {host_floats(np + 1), host_floats(np + 1), host_floats(nw + 1),
                   host_floats(bc->f + 1), gx, tn_xcalloc(np + 1, 1)};
    dev_get(o.y, dyo, np + 1);
    dev_get(o.zmax, dz, np + 1);
    dev_get(o.dW, dgw, nw + 1);
    dev_get(o.db, dgb, bc->f + 1);
    dev_get(o.dx, dgx, nx);
    K->download(o.choice, dch, np + 1);
    void *bufs[] = {dxv, dW, dbias, ddy, dyo, dz, dch, dgw, dgb, dgx};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) K->free(bufs[i]);
    return o;
}

static block_out block_run(const struct block_case *bc, const float *x, const float *W,
                           const float *bias, const float *dy, int threads, int want_zmax) {
    return block_run_dx(bc, x, W, bias, dy, threads, want_zmax, 1);
}

static void block_out_free(block_out *o) {
    free(o->y);
    free(o->zmax);
    free(o->dW);
    free(o->db);
    free(o->dx);
    free(o->choice);
}

/* The block against a reference in double written from the definition: conv with
 * zero padding, + bias, the activation, the first largest of each 2x2 window (its
 * choice; with relu KN_POOL_ZERO where that is 0); backward the derivative at each
 * window's element taken, dW, db and dx by the chain rule. On one
 * thread and two (the same bits: the sums do not depend on the threads), with and
 * without zmax (relu, tanh), with and without dx (a first layer's, which nothing
 * needs), in both layouts with gaps that must keep their sentinels. */
static void test_conv_block(void) {
    if (!K->conv_block_forward || !K->conv_block_backward) {
        /* the CUDA backend has them (kernels/cuda.cu): their absence there is a fault */
        CHECK_MSG(strcmp(K->name, "cuda") != 0, "the CUDA backend has no conv blocks");
        printf("  (the backend has no conv blocks: the model makes them of calls)\n");
        return;
    }
    for (size_t t = 0; t < sizeof block_cases / sizeof block_cases[0]; t++) {
        const struct block_case *bc = &block_cases[t];
        int ph = bc->h / 2, pw = bc->w / 2, hw = bc->h * bc->w;
        block_in in = block_inputs(bc);
        size_t nx = in.nx, nw = in.nw, np = in.np;
        float *x = in.x, *W = in.W, *bias = in.bias, *dy = in.dy;
        /* the reference: z (f, b, h, w), then pooling */
        double *z = host_doubles((size_t)bc->f * bc->b * hw);
        for (int co = 0; co < bc->f; co++)
            for (int i = 0; i < bc->b; i++)
                for (int yy = 0; yy < bc->h; yy++)
                    for (int xx = 0; xx < bc->w; xx++) {
                        z[(((size_t)co * bc->b + i) * bc->h + yy) * bc->w + xx] =
                            ref_conv_at(bc, x, W, bias, co, i, yy, xx);
                    }
        double *want_y = host_doubles(np + 1), *want_z = host_doubles(np + 1);
        double *want_dw = host_doubles(nw + 1), *want_db = host_doubles(bc->f + 1);
        double *want_dx = ref_dx_new(bc, nx);
        uint8_t *want_choice = tn_xcalloc(np + 1, 1);
        for (int co = 0; co < bc->f; co++)
            for (int i = 0; i < bc->b; i++)
                for (int py = 0; py < ph; py++)
                    for (int px = 0; px < pw; px++) {
                        const double *zp = z + ((size_t)co * bc->b + i) * hw;
                        int taps[4] = {2 * py * bc->w + 2 * px, 2 * py * bc->w + 2 * px + 1,
                                       (2 * py + 1) * bc->w + 2 * px,
                                       (2 * py + 1) * bc->w + 2 * px + 1};
                        int k_best = 0;
                        for (int k = 1; k < 4; k++)
                            if (ref_act(bc->act, zp[taps[k]]) > ref_act(bc->act, zp[taps[k_best]]))
                                k_best = k;
                        int best = taps[k_best];
                        size_t o = block_out_at(bc, co, i, py * pw + px);
                        want_choice[o] = bc->act == KN_RELU && !(zp[best] > 0)
                                             ? KN_POOL_ZERO
                                             : (uint8_t)(KN_POOL_TL + k_best);
                        want_y[o] = ref_act(bc->act, zp[best]);
                        want_z[o] = zp[best];
                        double d = dy[o] * ref_dact(bc->act, zp[best]);
                        int yy = best / bc->w, xx = best % bc->w;
                        want_db[co] += d;
                        ref_conv_back_at(bc, x, W, co, i, yy, xx, d, want_dw, want_dx);
                    }
        want_y[np] = want_z[np] = SENTINEL;
        want_choice[np] = CHOICE_SENTINEL;
        want_dw[nw] = want_db[bc->f] = SENTINEL;

        char label[128];
        float *one_nodx_dW = host_floats(nw + 1);
        block_out one = block_run(bc, x, W, bias, dy, 1, 1);
        snprintf(label, sizeof label, "conv block b=%d c=%d %dx%d f=%d act=%d%s", bc->b, bc->c,
                 bc->h, bc->w, bc->f, bc->act, bc->planar ? " (c,b,h,w)" : "");
        double sums = (double)bc->b * ph * pw; /* terms of a dW or db sum */
        CHECK_ALL_NEAR(label, one.y, want_y, np + 1, 1e-5, 1e-5);
        CHECK_ALL_NEAR(label, one.zmax, want_z, np + 1, 1e-5, 1e-5);
        CHECK_MSG(memcmp(one.choice, want_choice, np + 1) == 0, "%s: choice differs", label);
        CHECK_ALL_NEAR(label, one.dW, want_dw, nw + 1, 1e-6 * sums, 1e-4);
        CHECK_ALL_NEAR(label, one.db, want_db, (size_t)bc->f + 1, 1e-6 * sums, 1e-4);
        CHECK_ALL_NEAR(label, one.dx, want_dx, nx, 1e-5 * bc->f, 1e-4);

        block_out two = block_run(bc, x, W, bias, dy, 2, 1);
        CHECK_MSG(memcmp(one.y, two.y, (np + 1) * sizeof(float)) == 0 &&
                      memcmp(one.choice, two.choice, np + 1) == 0 &&
                      memcmp(one.dW, two.dW, (nw + 1) * sizeof(float)) == 0 &&
                      memcmp(one.db, two.db, (bc->f + 1) * sizeof(float)) == 0 &&
                      memcmp(one.dx, two.dx, nx * sizeof(float)) == 0,
                  "%s: two threads give other bits than one", label);
        block_out_free(&two);
        /* Without dx (a first layer's), on one thread and two. */
        for (int threads = 1; threads <= 2; threads++) {
            block_out nodx = block_run_dx(bc, x, W, bias, dy, threads, 1, 0);
            char l2[160];
            snprintf(l2, sizeof l2, "%s, no dx, %d thread%s", label, threads,
                     threads > 1 ? "s" : "");
            CHECK_ALL_NEAR(l2, nodx.dW, want_dw, nw + 1, 1e-6 * sums, 1e-4);
            CHECK_ALL_NEAR(l2, nodx.db, want_db, (size_t)bc->f + 1, 1e-6 * sums, 1e-4);
            size_t touched = 0;
            for (size_t i = 0; i < nx; i++) touched += !isnan(nodx.dx[i]) && nodx.dx[i] != SENTINEL;
            CHECK_MSG(touched == 0, "%s: %zu elements of dx written", l2, touched);
            if (threads == 2)
                CHECK_MSG(memcmp(nodx.dW, one_nodx_dW, (nw + 1) * sizeof(float)) == 0,
                          "%s: other bits than on one thread", l2);
            else
                memcpy(one_nodx_dW, nodx.dW, (nw + 1) * sizeof(float));
            block_out_free(&nodx);
        }
        if (bc->act != KN_GELU) { /* zmax is optional where y gives the derivative */
            block_out no_z = block_run(bc, x, W, bias, dy, 2, 0);
            CHECK_MSG(memcmp(one.y, no_z.y, np * sizeof(float)) == 0 &&
                          memcmp(one.dW, no_z.dW, nw * sizeof(float)) == 0 &&
                          memcmp(one.dx, no_z.dx, nx * sizeof(float)) == 0,
                      "%s: without zmax the results differ", label);
            size_t untouched = 0;
            for (size_t i = 0; i <= np; i++) untouched += isnan(no_z.zmax[i]) || i == np;
            CHECK_MSG(untouched == np + 1, "%s: zmax written though NULL was passed", label);
            block_out_free(&no_z);
        }
        block_out_free(&one);
        free(one_nodx_dW);
        block_inputs_free(&in);
        free(z);
        free(want_y);
        free(want_z);
        free(want_dw);
        free(want_db);
        free(want_dx);
        free(want_choice);
    }
}

/* Ties go to the first largest element of a window, as maxpool2_forward's; with relu
 * a window whose pre-activations are all negative is KN_POOL_ZERO (every activation
 * there is 0), and its gradient is 0. Hand-checked: one 1x4x4 image, one filter that
 * only passes the centre tap (weight 1), bias 0. */
static void test_conv_block_ties(void) {
    if (!K->conv_block_forward) return;
    static const float x[16] = {
        1, 3, /**/ 7, 7,   /* window 0: 3 at index 1; window 1: 7 at 2 */
        3, 0, /**/ 7, 7,
        -2, -1, /**/ 0, 5, /* window 2: all negative: index 8, y 0; window 3: 5 at 11 */
        -3, -4, /**/ 5, 1,
    };
    float W[9] = {0, 0, 0, 0, 1, 0, 0, 0, 0}, bias = 0, dy[4] = {1, 1, 1, 1};
    static const uint8_t want_choice[4] = {KN_POOL_TR, KN_POOL_TL, KN_POOL_ZERO, KN_POOL_TR};
    static const float want_y[4] = {3, 7, 0, 5};
    float *dx = dev_dup(x, 16), *dw = dev_dup(W, 9), *db = dev_dup(&bias, 1);
    float *dyv = dev_dup(dy, 4), *y = K->alloc(4 * sizeof(float));
    float *gw = K->alloc(9 * sizeof(float)), *gb = K->alloc(sizeof(float));
    float *gx = K->alloc(16 * sizeof(float));
    uint8_t *choice = K->alloc(4);
    K->conv_block_forward(y, choice, NULL, dx, 1, 16, 16, 1, 4, 4, dw, db, 1, KN_RELU);
    K->conv_block_backward(gw, gb, gx, dyv, choice, y, NULL, dx, 1, 16, 16, 1, 4, 4, dw, 1,
                           KN_RELU);
    uint8_t got_choice[4];
    float got_y[4], got_b, got_x[16];
    K->download(got_choice, choice, sizeof got_choice);
    dev_get(got_y, y, 4);
    dev_get(&got_b, gb, 1);
    dev_get(got_x, gx, 16);
    CHECK(memcmp(got_choice, want_choice, sizeof want_choice) == 0);
    CHECK(memcmp(got_y, want_y, sizeof want_y) == 0);
    CHECK_NEAR(got_b, 3.0, 0, 0); /* window 2 passes no gradient */
    for (int i = 0; i < 16; i++) /* the centre tap: dx is dz */
        CHECK_NEAR(got_x[i], i == 1 || i == 2 || i == 11 ? 1.0 : 0.0, 0, 0);
    void *bufs[] = {dx, dw, db, dyv, y, gw, gb, gx, choice};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) K->free(bufs[i]);
}

/* The blocks' tests above again with every block of kn_cpu on Winograd F(2x2,3x3) (by
 * default only those of 16 input channels or more: of block_cases, one), so the forward
 * pass, dx and dW of every case (odd sizes, partial tiles, one row, one column, 1 to 16
 * channels, one thread and two) meet the double reference through the Winograd path
 * too, with the same tolerances as im2col's (the cases' errors stay within them: see
 * test_conv_block_winograd for a bound). */
static void test_conv_block_winograd_all(void) {
    if (K != kn_cpu()) {
        printf("  (only kn_cpu takes Winograd)\n");
        return;
    }
    kn_cpu_winograd(KN_WINO_ALL);
    test_conv_block();
    test_conv_block_ties();
    kn_cpu_winograd(KN_WINO_RULE);
}

/* Whether kn_cpu's AVX2 forms (avx512 0) or its AVX-512 forms (1) run here: the CPU has
 * them and TN_CPU_NO_SIMD=1 (or TN_CPU_NO_AVX512=1) does not turn them off. */
static int cpu_has_simd(int avx512) {
#if defined(__x86_64__) && defined(__GNUC__)
    const char *nosimd = getenv("TN_CPU_NO_SIMD"), *no512 = getenv("TN_CPU_NO_AVX512");
    if ((nosimd && *nosimd == '1') || !__builtin_cpu_supports("avx2") ||
        !__builtin_cpu_supports("fma"))
        return 0;
    return !avx512 || (!(no512 && *no512 == '1') && __builtin_cpu_supports("avx512f") &&
                       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"));
#else
    (void)avx512;
    return 0;
#endif
}

/* The direct convolution forward (kn_cpu_direct) on every block it can take (ReLU, even
 * h and w, AVX2: cases of one to three input channels, one image and many, one filter,
 * an odd number of them, planes narrower than eight windows and wider), against the double reference
 * and on ties; by default it takes the blocks of one channel, which test_conv_block
 * runs too. */
static void test_conv_block_direct_all(void) {
    if (K != kn_cpu()) {
        printf("  (only kn_cpu takes the direct convolution)\n");
        return;
    }
    if (!cpu_has_simd(0)) {
        printf("  (no AVX2 forms here: the direct convolution is not taken)\n");
        return;
    }
    uint64_t f0 = kn_cpu_direct_images(0), b0 = kn_cpu_direct_images(1);
    kn_cpu_direct(KN_DIRECT_ALL);
    test_conv_block();
    test_conv_block_ties();
    kn_cpu_direct(KN_DIRECT_RULE);
    /* the blocks did go that way: forward, and without dx with AVX-512 the dW too */
    CHECK_MSG(kn_cpu_direct_images(0) > f0, "no block took the direct convolution forward");
    CHECK_MSG(!cpu_has_simd(1) || kn_cpu_direct_images(1) > b0,
              "no block took the direct convolution's dW");
}

/* The direct weight gradient reads its split padded planes sixteen lanes at a time, past
 * their last column, and multiplies what lies there by zeros: that must be zeros too, not
 * what the thread's scratch held before (a Winograd block's tiles, NaN here: its x and
 * W are), or dW would be NaN. One thread, so that both blocks share its scratch. */
static void test_conv_block_direct_stale_scratch(void) {
    if (K != kn_cpu() || !cpu_has_simd(1)) {
        printf("  (no direct weight gradient here)\n");
        return;
    }
    const struct block_case wino = {4, 16, 28, 28, 8, KN_RELU, 0};
    const struct block_case first = {4, 1, 28, 28, 8, KN_RELU, 0};
    block_in a = block_inputs(&wino), b = block_inputs(&first);
    for (size_t i = 0; i < a.nx; i++) a.x[i] = NAN;
    for (size_t i = 0; i < a.nw; i++) a.W[i] = NAN; /* its dx's tiles NaN too */
    block_out oa = block_run_dx(&wino, a.x, a.W, a.bias, a.dy, 1, 1, 1);
    block_out ob = block_run_dx(&first, b.x, b.W, b.bias, b.dy, 1, 1, 0);
    size_t bad = 0;
    for (size_t i = 0; i < b.nw; i++) bad += !isfinite(ob.dW[i]);
    for (int i = 0; i < first.f; i++) bad += !isfinite(ob.db[i]);
    CHECK_MSG(bad == 0, "%zu of dW and db not finite after a block that left NaN in scratch", bad);
    block_out_free(&oa);
    block_out_free(&ob);
    block_inputs_free(&a);
    block_inputs_free(&b);
}

/* Runs each of the cases with Winograd as wino_mode says (kn_cpu_winograd; restored to
 * the rule after) and knob(0) and knob(1), on one thread and two, with dx and (where
 * no_dx_too) without, and checks that the two give
 * the same bits: y, the choices and zmax forward; dW, dx and (where with_db) db
 * backward. what names the knob's 0 in the messages. */
static void blocks_same_bits(const struct block_case *cases, size_t ncases, void (*knob)(int),
                             const char *what, int no_dx_too, int with_db, int wino_mode) {
    kn_cpu_winograd(wino_mode);
    for (size_t t = 0; t < ncases; t++) {
        const struct block_case *bc = &cases[t];
        block_in in = block_inputs(bc);
        size_t nx = in.nx, nw = in.nw, np = in.np;
        for (int threads = 1; threads <= 2; threads++)
            for (int want_dx = !no_dx_too; want_dx <= 1; want_dx++) {
                block_out o[2];
                for (int on = 0; on < 2; on++) {
                    knob(on);
                    o[on] = block_run_dx(bc, in.x, in.W, in.bias, in.dy, threads, 1, want_dx);
                }
                knob(1);
                char label[160];
                snprintf(label, sizeof label, "b=%d c=%d %dx%d f=%d act=%d, %d thread%s%s", bc->b,
                         bc->c, bc->h, bc->w, bc->f, bc->act, threads, threads > 1 ? "s" : "",
                         want_dx ? "" : ", no dx");
                CHECK_MSG(memcmp(o[0].y, o[1].y, (np + 1) * sizeof(float)) == 0 &&
                              memcmp(o[0].choice, o[1].choice, np + 1) == 0 &&
                              memcmp(o[0].zmax, o[1].zmax, (np + 1) * sizeof(float)) == 0,
                          "%s: the forward pass gives other bits than %s", label, what);
                CHECK_MSG(memcmp(o[0].dW, o[1].dW, (nw + 1) * sizeof(float)) == 0,
                          "%s: dW gives other bits than %s", label, what);
                CHECK_MSG(!with_db || memcmp(o[0].db, o[1].db, (bc->f + 1) * sizeof(float)) == 0,
                          "%s: db gives other bits than %s", label, what);
                CHECK_MSG(memcmp(o[0].dx, o[1].dx, nx * sizeof(float)) == 0,
                          "%s: dx gives other bits than %s", label, what);
                block_out_free(&o[0]);
                block_out_free(&o[1]);
            }
        block_inputs_free(&in);
    }
    kn_cpu_winograd(KN_WINO_RULE);
}

/* The Winograd blocks with ReLU and even h and w fuse the pooling into the transforms
 * (kn_cpu_fuse_pooling); the fused and separate passes make the same values in the same
 * order, so every output must be the same bits: y, the choices and zmax forward; dW,
 * db and dx backward, with and without dx, on one thread and two. Shapes: the model's
 * second layer, rows of exactly eight tiles, two groups of eight with one tile over,
 * one tile, one row and one column of tiles, and chunks of one image. */
static void test_conv_block_fused_bits(void) {
    if (K != kn_cpu()) {
        printf("  (only kn_cpu fuses)\n");
        return;
    }
    static const struct block_case cases[] = {
        {6, 32, 14, 14, 64, KN_RELU, 1}, {3, 16, 16, 16, 8, KN_RELU, 0},
        {4, 17, 20, 18, 9, KN_RELU, 1},  {5, 16, 2, 2, 3, KN_RELU, 0},
        {3, 16, 2, 4, 5, KN_RELU, 1},    {3, 16, 4, 2, 5, KN_RELU, 0},
        {19, 32, 22, 22, 64, KN_RELU, 0},
    };
    blocks_same_bits(cases, sizeof cases / sizeof cases[0], kn_cpu_fuse_pooling,
                     "the separate passes", 1, 1, KN_WINO_ALL);
}

/* The Winograd blocks' AVX2 forms (the transforms, the fused pooling, dx's adjoint
 * transform, eight tiles at a time with the neighbours' columns from the neighbouring
 * lanes and groups) against their plain loops (kn_cpu_conv_simd(0)): the same sums in
 * the same order, so y, the choices, zmax, dW and dx must be the same bits (db is summed
 * in eight lanes by the AVX2 unpooling: not compared). Shapes: the model's second layer,
 * rows of one, two and three groups of eight tiles and of exactly two, one row of tiles
 * in three groups, sixteen groups (the AVX2 adjoint's most), odd h and w (partial
 * tiles), one tile, planes narrower than a store (which runs over several later rows),
 * a width of 31 (whose split padded copy's last column is past its stores), widths of
 * 16 and 15 (the widest planes the input transform splits in registers), tanh (no
 * fused pooling), and a row too long for the AVX2 adjoint (the plain one on both
 * sides), on one thread and two. Where the AVX2 forms cannot run (TN_CPU_NO_SIMD=1,
 * a CPU without AVX2 and FMA) there is nothing to compare, and it says so. */
static void test_conv_block_simd_bits(void) {
    if (K != kn_cpu()) {
        printf("  (only kn_cpu has AVX2 forms)\n");
        return;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    const char *off = getenv("TN_CPU_NO_SIMD");
    if ((off && *off == '1') || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        printf("  (no AVX2 forms here to compare with the plain loops)\n");
        return;
    }
#else
    printf("  (no AVX2 forms on this architecture)\n");
    return;
#endif
    static const struct block_case cases[] = {
        {6, 32, 14, 14, 64, KN_RELU, 0}, {2, 16, 18, 34, 8, KN_RELU, 1},
        {2, 16, 6, 32, 4, KN_RELU, 0},   {3, 16, 9, 17, 5, KN_TANH, 0},
        {3, 17, 2, 2, 5, KN_RELU, 1},    {2, 16, 2, 40, 4, KN_RELU, 0},
        {2, 16, 7, 23, 6, KN_RELU, 0},   {3, 16, 5, 3, 3, KN_TANH, 0},
        {2, 16, 6, 6, 3, KN_RELU, 1},    {1, 16, 3, 250, 2, KN_RELU, 0},
        {1, 16, 3, 262, 2, KN_RELU, 0},  {3, 16, 6, 31, 4, KN_RELU, 0},
        /* the input transform straight from planes of at most 16 columns: 16 (eight tiles,
         * the zero column past them in the last lane), 15, a planar x */
        {3, 16, 5, 16, 4, KN_RELU, 1},   {2, 16, 7, 15, 3, KN_TANH, 0},
        {2, 16, 8, 16, 4, KN_RELU, 0},
        /* the filters' transforms, eight kernels of a row at a time, then a ragged tail:
         * dx's transposed rows over f = 8 + 5 and 8 + 4, U's over c = 16 + 4 */
        {2, 16, 6, 6, 13, KN_RELU, 0},   {2, 20, 4, 6, 12, KN_RELU, 1},
    };
    blocks_same_bits(cases, sizeof cases / sizeof cases[0], kn_cpu_conv_simd, "the plain loops",
                     0, 0, KN_WINO_ALL);
}

/* The direct convolution's AVX-512 form against its AVX2 form (kn_cpu_conv_avx512): each
 * lane the same FMAs in the same order and the same comparisons, so y, the choices and
 * zmax must be the same bits (the backward pass is im2col's on both sides). Shapes: the
 * model's first layer, rows of fewer than eight windows, of exactly sixteen, of more
 * than sixteen, one window, filters not a multiple of four, several channels, planar x.
 * Where there is no AVX-512 form to compare (TN_CPU_NO_AVX512=1, TN_CPU_NO_SIMD=1, a CPU
 * without AVX-512 F, BW and VL) it says so. */
static void test_conv_block_direct_bits(void) {
    if (K != kn_cpu()) {
        printf("  (only kn_cpu takes the direct convolution)\n");
        return;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (!cpu_has_simd(1)) {
        printf("  (no AVX-512 forms here to compare with the AVX2 ones)\n");
        return;
    }
    uint64_t f0 = kn_cpu_direct_images(0);
    static const struct block_case cases[] = {
        {9, 1, 28, 28, 32, KN_RELU, 0}, {3, 1, 10, 12, 5, KN_RELU, 1},
        {2, 1, 6, 32, 7, KN_RELU, 0},   {2, 2, 8, 38, 6, KN_RELU, 1},
        {3, 1, 2, 2, 3, KN_RELU, 0},    {2, 3, 4, 70, 9, KN_RELU, 0},
    };
    kn_cpu_direct(KN_DIRECT_ALL);
    blocks_same_bits(cases, sizeof cases / sizeof cases[0], kn_cpu_conv_avx512,
                     "the AVX2 forms", 0, 1, KN_WINO_OFF);
    kn_cpu_direct(KN_DIRECT_RULE);
    CHECK_MSG(kn_cpu_direct_images(0) > f0, "no block took the direct convolution");
#else
    printf("  (no AVX-512 forms on this machine)\n");
#endif
}

/* The Winograd transforms' AVX-512 forms (kn_cpu_conv_avx512) against their AVX2 forms:
 * the fused pooling and unpooling, which walk a filter's tiles of a chunk's images
 * straight through sixteen at a time (the AVX2 forms a row of a plane at a time), x's
 * transform on planes of at most 14 columns, two tile rows a vector, and dx's adjoint
 * transform, two images' planes a vector (an odd image left to the AVX2 form). Lane by
 * lane the same sums and comparisons, and db summed in the AVX2 order, so y, the
 * choices, zmax, dW, db and dx must be the same bits. A batch is cut into up to 16
 * groups, so a chunk holds several images only where the batch is several times 16:
 * those cases give chunks of 2 to 16 images (vectors across two images' planes of the
 * model's 49 tiles, across 4 and 16 planes of one tile; odd chunks, whose last image the
 * adjoint makes in AVX2; rows of three groups of eight tiles) and groups of two chunks
 * (the weight gradient summed over them). The others, chunks of one image: planes of
 * exactly 16 tiles, 15 and 17, one and two tiles; for x's transform odd h and w
 * (partial tiles, not fused), 14 columns (the widest) and 13, one row of tiles, a 1x1
 * plane, tanh. On one thread and two, with dx and without. Where there is no AVX-512
 * form it says so; where there is, each form must have run (kn_cpu_wino_avx512_images). */
static void test_conv_block_wino_avx512_bits(void) {
    if (K != kn_cpu()) {
        printf("  (only kn_cpu fuses)\n");
        return;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (!cpu_has_simd(1)) {
        printf("  (no AVX-512 forms here to compare with the AVX2 ones)\n");
        return;
    }
    uint64_t f0 = kn_cpu_wino_avx512_images(0), b0 = kn_cpu_wino_avx512_images(1),
             x0 = kn_cpu_wino_avx512_images(2), a0 = kn_cpu_wino_avx512_images(3);
    static const struct block_case cases[] = {
        {6, 32, 14, 14, 64, KN_RELU, 0}, {5, 16, 8, 8, 4, KN_RELU, 1},
        {4, 16, 6, 10, 3, KN_RELU, 0},   {3, 16, 2, 34, 5, KN_RELU, 1},
        {21, 16, 2, 2, 3, KN_RELU, 0},   {11, 16, 2, 4, 5, KN_RELU, 1},
        {19, 32, 22, 22, 64, KN_RELU, 0}, {1, 16, 4, 6, 2, KN_RELU, 0},
        /* x's transform alone */
        {3, 16, 7, 9, 4, KN_TANH, 0},    {2, 16, 5, 13, 3, KN_RELU, 1},
        {2, 16, 9, 14, 3, KN_TANH, 0},   {3, 16, 1, 1, 2, KN_TANH, 0},
        {2, 17, 2, 12, 5, KN_RELU, 0},
        /* chunks of several images */
        {80, 16, 14, 14, 8, KN_RELU, 0}, {64, 16, 2, 2, 3, KN_RELU, 1},
        {256, 16, 2, 2, 3, KN_RELU, 0},  {48, 16, 6, 10, 3, KN_RELU, 0},
        {50, 16, 2, 34, 3, KN_RELU, 1},  {256, 16, 22, 22, 4, KN_RELU, 0},
        {48, 16, 7, 9, 3, KN_TANH, 0},
    };
    blocks_same_bits(cases, sizeof cases / sizeof cases[0], kn_cpu_conv_avx512, "the AVX2 forms",
                     1, 1, KN_WINO_ALL);
    CHECK_MSG(kn_cpu_wino_avx512_images(0) > f0 && kn_cpu_wino_avx512_images(1) > b0 &&
                  kn_cpu_wino_avx512_images(2) > x0 && kn_cpu_wino_avx512_images(3) > a0,
              "the AVX-512 forms did not run");
#else
    printf("  (no AVX-512 forms on this machine)\n");
#endif
}

/* Winograd F(2x2,3x3) against a double reference and against the im2col path, on the
 * model's shapes and odd ones: 14x14 (7x7 whole tiles), 7x7 and odd h or w alone
 * (partial tiles: the last row or column of tiles makes one output of two), 1 to 64
 * channels in and out. The forward pass is checked through y, the pooled maximum: it
 * moves by no more than the conv output does, so a window whose choice would tie does
 * not matter. dx and dW are checked with both paths' backward pass fed the same
 * forward results (im2col's), against dx and dW in double from those choices; db,
 * the same sums in both paths, must be the same bits.
 *
 * Tolerance: each output (of z, or of dx) is a sum of K = 9c (9f for dx) products. In
 * float, im2col's GEMM errs by up to about K * eps * S, S = the sum of the terms'
 * magnitudes (eps = 6e-8); Winograd adds the transforms' roundings, each a few
 * additions of terms no larger than 2.25x an input or filter element, which at most
 * multiplies the bound by a small constant (Lavin and Gray 2016, Barabasz et al. 2020
 * measure F(2x2,3x3)'s float error within a few times direct convolution's). With
 * inputs in [-1, 1] and weights in [-0.5, 0.5], S <= K / 2 (+ the bias), so atol =
 * 2 * K * eps * S bounds it (the errors observed are 1/100 of it or less, and alike in
 * both paths), while a transform with one coefficient wrong errs by a sizeable part of S
 * (0.1 and more): the check fails on any such mistake (tried: a sign in B^T, a row of G,
 * a sign in the transform of dz's tiles). dW the same way: each element a sum of
 * K = b*h*w products of dz and x, of which at most S = b*ph*pw are not 0, each no
 * larger than 1 (errors observed: a tenth of that bound or less, alike in both paths;
 * the smallest case's are near an ulp of dW). */
static void test_conv_block_winograd(void) {
    if (K != kn_cpu()) {
        printf("  (only kn_cpu takes Winograd)\n");
        return;
    }
    static const struct block_case cases[] = {
        {3, 32, 14, 14, 64, KN_RELU, 0}, /* the model's second layer */
        {4, 64, 7, 7, 32, KN_TANH, 1},   /* odd: partial tiles in both directions */
        {2, 16, 9, 6, 24, KN_RELU, 0},   /* odd h */
        {5, 8, 6, 11, 3, KN_TANH, 1},    /* odd w, few filters */
        {19, 3, 5, 5, 4, KN_RELU, 0},    /* more images than groups */
        {2, 2, 3, 1, 2, KN_TANH, 1},     /* one column: nothing pooled, dx all 0 */
        {3, 17, 2, 2, 5, KN_RELU, 0},    /* one tile */
        {2, 5, 9, 17, 6, KN_TANH, 1},    /* odd h and w, two groups of eight tiles a row */
        {20, 32, 22, 22, 64, KN_RELU, 1}, /* chunks of one image, two in some groups */
        {3, 16, 16, 16, 8, KN_RELU, 0},  /* rows of exactly eight tiles: no lane past them */
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        const struct block_case *bc = &cases[t];
        int ph = bc->h / 2, pw = bc->w / 2, hw = bc->h * bc->w;
        size_t istride = bc->planar ? (size_t)hw : (size_t)bc->c * hw + 3;
        size_t cstride = bc->planar ? (size_t)(bc->b + 1) * hw : (size_t)hw;
        block_in in = block_inputs(bc);
        size_t nx = in.nx, nw = in.nw, np = in.np;
        float *x = in.x, *W = in.W, *bias = in.bias, *dy = in.dy;
        char label[160];
        snprintf(label, sizeof label, "winograd b=%d c=%d %dx%d f=%d act=%d%s", bc->b, bc->c,
                 bc->h, bc->w, bc->f, bc->act, bc->planar ? " (c,b,h,w)" : "");
        const double eps = 6e-8;
        double atol_y = 2 * 9.0 * bc->c * eps * (9.0 * bc->c / 2 + 0.3);
        double atol_dx = 2 * 9.0 * bc->f * eps * (9.0 * bc->f / 2);
        double atol_dw = 2.0 * bc->b * hw * eps * ((double)bc->b * ph * pw);

        /* forward in both paths; y against the double reference */
        float *y[2], *zm[2], *dW[2], *db[2], *dx[2];
        uint8_t *choice[2];
        float *dxv = dev_dup(x, nx), *dWv = dev_dup(W, nw), *dbias = dev_dup(bias, bc->f);
        for (int m = 0; m < 2; m++) {
            y[m] = K->alloc((np + 1) * sizeof(float));
            zm[m] = K->alloc((np + 1) * sizeof(float));
            choice[m] = K->alloc(np + 1);
            kn_cpu_winograd(m ? KN_WINO_ALL : KN_WINO_OFF);
            K->conv_block_forward(y[m], choice[m], zm[m], dxv, bc->b, istride, cstride, bc->c,
                                  bc->h, bc->w, dWv, dbias, bc->f, bc->act);
        }
        double *want_y = host_doubles(np + 1);
        for (int co = 0; co < bc->f; co++)
            for (int i = 0; i < bc->b; i++)
                for (int py = 0; py < ph; py++)
                    for (int px = 0; px < pw; px++) {
                        double best = -INFINITY;
                        for (int q = 0; q < 4; q++) {
                            int yy = 2 * py + q / 2, xx = 2 * px + q % 2;
                            double a = ref_act(bc->act, ref_conv_at(bc, x, W, bias, co, i, yy, xx));
                            best = a > best ? a : best;
                        }
                        want_y[block_out_at(bc, co, i, py * pw + px)] = best;
                    }
        float *got_y = host_floats(np + 1);
        for (int m = 0; m < 2; m++) {
            char l2[200];
            snprintf(l2, sizeof l2, "%s: y, %s", label, m ? "Winograd" : "im2col");
            dev_get(got_y, y[m], np);
            CHECK_ALL_NEAR(l2, got_y, want_y, np, atol_y, 0);
        }

        /* backward in both paths from im2col's forward results */
        float *ddy = dev_dup(dy, np + 1);
        float *host_dx = host_floats(nx);
        for (size_t i = 0; i < nx; i++) host_dx[i] = SENTINEL;
        for (int m = 0; m < 2; m++) {
            dW[m] = K->alloc(nw * sizeof(float));
            db[m] = K->alloc((size_t)bc->f * sizeof(float));
            dx[m] = dev_dup(host_dx, nx);
            kn_cpu_winograd(m ? KN_WINO_ALL : KN_WINO_OFF);
            K->conv_block_backward(dW[m], db[m], dx[m], ddy, choice[0], y[0], zm[0], dxv, bc->b,
                                   istride, cstride, bc->c, bc->h, bc->w, dWv, bc->f, bc->act);
        }
        kn_cpu_winograd(KN_WINO_RULE);
        /* dx in double: dz at each window's element taken, through the filters */
        uint8_t *c0 = tn_xcalloc(np + 1, 1);
        float *y0 = host_floats(np + 1), *z0 = host_floats(np + 1);
        K->download(c0, choice[0], np);
        dev_get(y0, y[0], np);
        dev_get(z0, zm[0], np);
        double *want_dx = ref_dx_new(bc, nx), *want_dw = host_doubles(nw);
        for (int co = 0; co < bc->f; co++)
            for (int i = 0; i < bc->b; i++)
                for (int q = 0; q < ph * pw; q++) {
                    size_t o = block_out_at(bc, co, i, q);
                    double d = dy[o] * ref_dact(bc->act, z0[o]); /* 0 where KN_POOL_ZERO */
                    int c = c0[o] == KN_POOL_ZERO ? KN_POOL_TL : c0[o];
                    int yy = 2 * (q / pw) + c / 2, xx = 2 * (q % pw) + c % 2;
                    ref_conv_back_at(bc, x, W, co, i, yy, xx, d, want_dw, want_dx);
                }
        float *got[2][3];
        for (int m = 0; m < 2; m++) {
            char l2[200];
            snprintf(l2, sizeof l2, "%s: dx and dW, %s", label, m ? "Winograd" : "im2col");
            got[m][0] = host_floats(nx);
            got[m][1] = host_floats(nw);
            got[m][2] = host_floats(bc->f);
            dev_get(got[m][0], dx[m], nx);
            dev_get(got[m][1], dW[m], nw);
            dev_get(got[m][2], db[m], bc->f);
            CHECK_ALL_NEAR(l2, got[m][0], want_dx, nx, atol_dx, 0);
            CHECK_ALL_NEAR(l2, got[m][1], want_dw, nw, atol_dw, 0);
        }
        CHECK_MSG(memcmp(got[0][2], got[1][2], bc->f * sizeof(float)) == 0,
                  "%s: db differs between the paths", label);
        for (int m = 0; m < 2; m++) {
            for (int j = 0; j < 3; j++) free(got[m][j]);
            void *bufs[] = {y[m], zm[m], choice[m], dW[m], db[m], dx[m]};
            for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) K->free(bufs[i]);
        }
        void *bufs[] = {dxv, dWv, dbias, ddy};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) K->free(bufs[i]);
        block_inputs_free(&in);
        free(want_y);
        free(got_y);
        free(host_dx);
        free(c0);
        free(y0);
        free(z0);
        free(want_dx);
        free(want_dw);
    }
}

/* One block's buffers on the backend for test_conv_block_order: its inputs, its
 * forward outputs, and its gradients (dx NaN on the planes, SENTINEL in the gaps, as
 * block_run_dx's). */
typedef struct {
    float *x, *W, *bias, *dy, *y, *zmax, *dW, *db, *dx;
    uint8_t *choice;
    size_t istride, cstride;
} block_dev;

static block_dev block_dev_new(const struct block_case *bc, const block_in *in) {
    size_t hw = (size_t)bc->h * bc->w;
    block_dev d = {.x = dev_dup(in->x, in->nx), .W = dev_dup(in->W, in->nw),
                   .bias = dev_dup(in->bias, bc->f), .dy = dev_dup(in->dy, in->np),
                   .y = K->alloc(in->np * sizeof(float)),
                   .zmax = K->alloc(in->np * sizeof(float)),
                   .dW = K->alloc(in->nw * sizeof(float)), .db = K->alloc(bc->f * sizeof(float)),
                   .choice = K->alloc(in->np),
                   .istride = bc->planar ? hw : (size_t)bc->c * hw + 3,
                   .cstride = bc->planar ? (size_t)(bc->b + 1) * hw : hw};
    float *gx = host_floats(in->nx);
    for (size_t i = 0; i < in->nx; i++) gx[i] = SENTINEL;
    for (int i = 0; i < bc->b; i++)
        for (int ch = 0; ch < bc->c; ch++)
            for (size_t p = 0; p < hw; p++) gx[block_at(bc, i, ch, 0, 0) + p] = NAN;
    d.dx = dev_dup(gx, in->nx);
    free(gx);
    return d;
}

static void block_dev_forward(const struct block_case *bc, const block_dev *d) {
    K->conv_block_forward(d->y, d->choice, d->zmax, d->x, bc->b, d->istride, d->cstride, bc->c,
                          bc->h, bc->w, d->W, d->bias, bc->f, bc->act);
}

static void block_dev_backward(const struct block_case *bc, const block_dev *d) {
    K->conv_block_backward(d->dW, d->db, d->dx, d->dy, d->choice, d->y, d->zmax, d->x, bc->b,
                           d->istride, d->cstride, bc->c, bc->h, bc->w, d->W, bc->f, bc->act);
}

/* The gradients d holds against o's (block_run's), bit for bit. */
static void block_dev_check(const struct block_case *bc, const block_in *in, const block_dev *d,
                            const block_out *o, const char *label) {
    float *dW = host_floats(in->nw), *db = host_floats(bc->f), *dx = host_floats(in->nx);
    dev_get(dW, d->dW, in->nw);
    dev_get(db, d->db, bc->f);
    dev_get(dx, d->dx, in->nx);
    CHECK_MSG(memcmp(dW, o->dW, in->nw * sizeof(float)) == 0 &&
                  memcmp(db, o->db, bc->f * sizeof(float)) == 0 &&
                  memcmp(dx, o->dx, in->nx * sizeof(float)) == 0,
              "%s: other gradients than a forward pass right before", label);
    free(dW);
    free(db);
    free(dx);
}

static void block_dev_free(block_dev *d) {
    void *bufs[] = {d->x, d->W, d->bias, d->dy, d->y, d->zmax, d->dW, d->db, d->dx, d->choice};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) K->free(bufs[i]);
}

/* A block's backward pass need not come right after its forward pass: the model makes
 * forward 1, forward 2, backward 2, backward 1, and two blocks of one shape may be
 * in flight at once. And a backward pass may be made twice. Each gives the bits of a
 * backward pass right after the forward pass (the CUDA backend keeps each forward
 * pass's im2col for its backward pass, which spends it making dx; made again, the
 * backward pass makes im2col itself). */
static void test_conv_block_order(void) {
    if (!K->conv_block_forward) return;
    const int cases[] = {1, 6}; /* tanh, odd h and w, (c, b, h, w); relu, several chunks */
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        const struct block_case *bc = &block_cases[cases[t]];
        block_in a = block_inputs(bc), b = block_inputs(bc);
        block_out oa = block_run(bc, a.x, a.W, a.bias, a.dy, 1, 1);
        block_out ob = block_run(bc, b.x, b.W, b.bias, b.dy, 1, 1);
        block_dev da = block_dev_new(bc, &a), db = block_dev_new(bc, &b);
        block_dev_forward(bc, &da);
        block_dev_forward(bc, &db);
        block_dev_backward(bc, &db);
        block_dev_backward(bc, &da);
        char label[96];
        snprintf(label, sizeof label, "case %d, the second block", cases[t]);
        block_dev_check(bc, &b, &db, &ob, label);
        snprintf(label, sizeof label, "case %d, the first block", cases[t]);
        block_dev_check(bc, &a, &da, &oa, label);
        block_dev_backward(bc, &da);
        snprintf(label, sizeof label, "case %d, the first block's backward pass again",
                 cases[t]);
        block_dev_check(bc, &a, &da, &oa, label);
        block_dev_free(&da);
        block_dev_free(&db);
        block_out_free(&oa);
        block_out_free(&ob);
        block_inputs_free(&a);
        block_inputs_free(&b);
    }
}

/* kn_cpu_gemm_only (the benchmark's GEMM floor): the blocks of kn_cpu and kn_cpu_device
 * make their products and nothing else: every output is left as it was. (The CUDA
 * backend's floor is bench_gemm_gpu's: it has no such mode.) */
static void conv_block_gemm_only_case(const struct block_case *bc);

static void test_conv_block_gemm_only(void) {
    if (!K->conv_block_forward || strcmp(K->name, "cuda") == 0) return;
    for (int t = 5; t <= 6; t++) /* the model's layers: the direct convolution, Winograd */
        conv_block_gemm_only_case(&block_cases[t]);
}

static void conv_block_gemm_only_case(const struct block_case *bc) {
    block_in in = block_inputs(bc);
    size_t nx = in.nx, nw = in.nw, np = in.np;
    float *x = in.x, *W = in.W, *bias = in.bias, *dy = in.dy;
    for (int want_dx = 0; want_dx <= 1; want_dx++) { /* without dx: the direct dW too */
        kn_cpu_gemm_only(1);
        block_out o = block_run_dx(bc, x, W, bias, dy, 2, 1, want_dx);
        kn_cpu_gemm_only(0);
        size_t written = 0;
        for (size_t i = 0; i < np; i++) written += !isnan(o.y[i]) + !isnan(o.zmax[i]);
        for (size_t i = 0; i < nw; i++) written += !isnan(o.dW[i]);
        for (size_t i = 0; i < (size_t)bc->f; i++) written += !isnan(o.db[i]);
        for (size_t i = 0; i < nx; i++) written += !isnan(o.dx[i]) && o.dx[i] != SENTINEL;
        CHECK_MSG(written == 0, "b=%d c=%d %dx%d%s: %zu outputs written in GEMM-only mode", bc->b,
                  bc->c, bc->h, bc->w, want_dx ? "" : ", no dx", written);
        block_out_free(&o);
    }
    block_inputs_free(&in);
}

/* kn_cpu_gemm_flops counts 2mnk for each product, once however the product is split
 * between threads, and the conv blocks' own products: im2col's three (z, dW, dx) of
 * f x 9c x b*h*w each, Winograd's 3 x 16 of f x c x (tiles), or the direct
 * convolution's z (the same multiply-adds as im2col's, made without gemm) with im2col's
 * dW and dx, and without dx its own dW where the CPU has AVX-512 (the same count either
 * way), on one thread and two. */
static void test_gemm_flops(void) {
    if (g_cuda) return;
    uint64_t f0 = kn_cpu_gemm_flops();
    gemm_case(0, 1, (gemm_shape){5, 7, 3}, (gemm_scalars){1, 0}, (gemm_pads){0, 0, 0});
    CHECK_MSG(kn_cpu_gemm_flops() - f0 == 2 * 5 * 7 * 3, "gemm 5x7x3: %llu flops counted",
              (unsigned long long)(kn_cpu_gemm_flops() - f0));
    K->set_threads(2); /* 4 MFLOP and more: split in two parts */
    f0 = kn_cpu_gemm_flops();
    gemm_case(0, 0, (gemm_shape){160, 96, 160}, (gemm_scalars){1, 0}, (gemm_pads){0, 0, 0});
    CHECK_MSG(kn_cpu_gemm_flops() - f0 == 2ull * 160 * 96 * 160,
              "gemm 160x96x160 on two threads: %llu flops counted",
              (unsigned long long)(kn_cpu_gemm_flops() - f0));
    K->set_threads(1);
    if (!K->conv_block_forward) return;
    static const char *names[] = {"im2col", "Winograd", "direct forward"};
    for (int algo = 0; algo < 3; algo++) {
        if (algo && K != kn_cpu()) break; /* only kn_cpu takes the others */
        /* even h and w: Winograd takes the one, the direct convolution the other */
        const struct block_case *bc = &block_cases[algo == 2 ? 5 : 6];
        block_in in = block_inputs(bc);
        uint64_t hw = (uint64_t)bc->h * bc->w, tiles = (uint64_t)bc->b * (bc->h / 2) * (bc->w / 2);
        kn_cpu_winograd(algo == 1 ? KN_WINO_ALL : KN_WINO_OFF);
        kn_cpu_direct(algo == 2 ? KN_DIRECT_ALL : KN_DIRECT_OFF);
        for (int threads = 1; threads <= 2; threads++)
            for (int want_dx = 0; want_dx <= 1; want_dx++) {
                f0 = kn_cpu_gemm_flops();
                uint64_t d0 = kn_cpu_direct_images(0), d1 = kn_cpu_direct_images(1);
                block_out o = block_run_dx(bc, in.x, in.W, in.bias, in.dy, threads, 1, want_dx);
                uint64_t got = kn_cpu_gemm_flops() - f0, products = 2 + (uint64_t)want_dx;
                if (algo == 2) /* it went the direct way where it can */
                    CHECK_MSG(kn_cpu_direct_images(0) - d0 == (cpu_has_simd(0) ? (uint64_t)bc->b : 0) &&
                                  kn_cpu_direct_images(1) - d1 ==
                                      (!want_dx && cpu_has_simd(1) ? (uint64_t)bc->b : 0),
                              "conv block (direct, %d threads%s): the images taken directly",
                              threads, want_dx ? "" : ", no dx");
                uint64_t want = algo == 1 ? products * 16 * 2 * (uint64_t)bc->f * bc->c * tiles
                                          : products * 2 * (uint64_t)bc->f * 9 * bc->c * bc->b * hw;
                CHECK_MSG(got == want,
                          "conv block (%s, %d threads%s): %llu flops counted, %llu made",
                          names[algo], threads, want_dx ? "" : ", no dx",
                          (unsigned long long)got, (unsigned long long)want);
                block_out_free(&o);
            }
        block_inputs_free(&in);
    }
    kn_cpu_winograd(KN_WINO_RULE);
    kn_cpu_direct(KN_DIRECT_RULE);
    K->set_threads(1);
}

/* The CPU backend's own threads (kernels/cpu_workers.h, under the conv blocks): every
 * task of a run runs exactly once and before kw_run returns, on 1, 2 and 5 threads
 * (more than this machine may have cores), with fewer tasks than threads, after the
 * count went down, with two callers at once (one waits for the other's run), and from
 * inside a task (the inner run's tasks run in that task's thread). */
#define KW_TASKS 1000
typedef struct kw_count {
    _Atomic int ran[KW_TASKS];
} kw_count;

static void kw_count_task(void *ctx, int task) {
    kw_count *c = ctx;
    volatile double x = 0; /* some work, so that tasks overlap; task 1 takes longest, so */
    for (int i = 0; i < (task == 1 ? 200000 : 200); i++) x += i; /* a run that returned */
    atomic_fetch_add(&c->ran[task], 1); /* before its workers were done would show */
}

static int kw_count_check(kw_count *c, int ntasks) {
    int bad = 0;
    for (int t = 0; t < KW_TASKS; t++) {
        bad += atomic_load(&c->ran[t]) != (t < ntasks);
        atomic_store(&c->ran[t], 0);
    }
    return bad;
}

/* A task that asks for a run of 50 tasks of its own (numbered after its own). */
typedef struct kw_nest {
    kw_count *c;
    int base;
} kw_nest;

static _Atomic int kw_outside; /* inner tasks that ran outside a task */

static void kw_nest_task(void *ctx, int task) {
    const kw_nest *n = ctx;
    if (!kw_inside()) atomic_fetch_add(&kw_outside, 1);
    kw_count_task(n->c, n->base + task);
}

static void kw_nested_task(void *ctx, int task) {
    kw_nest n = {ctx, task * 50};
    kw_run(50, kw_nest_task, &n);
}

static void *kw_caller(void *arg) {
    kw_count *c = arg;
    for (int r = 0; r < 50; r++) {
        kw_run(KW_TASKS, kw_count_task, c);
        if (kw_count_check(c, KW_TASKS)) return c; /* failed */
    }
    return NULL;
}

static void test_workers(void) {
    if (g_cuda) return;
    static kw_count c, c2;
    static const int threads[] = {1, 2, 5, 2, 1};
    static const int ntasks[] = {KW_TASKS, 3, 1, 0};
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        kw_set_threads(threads[i]);
        CHECK_INT_EQ(kw_threads(), threads[i]);
        for (size_t n = 0; n < sizeof ntasks / sizeof ntasks[0]; n++)
            for (int r = 0; r < 20; r++) {
                kw_run(ntasks[n], kw_count_task, &c);
                CHECK_MSG(kw_count_check(&c, ntasks[n]) == 0,
                          "%d threads, %d tasks: a task did not run exactly once", threads[i],
                          ntasks[n]);
            }
    }
    kw_set_threads(2);
    kw_run(4, kw_nested_task, &c);
    CHECK_MSG(kw_count_check(&c, 4 * 50) == 0, "runs inside tasks: a task did not run once");
    CHECK_INT_EQ(atomic_load(&kw_outside), 0);
    CHECK(!kw_inside());
    pthread_t th;
    CHECK(pthread_create(&th, NULL, kw_caller, &c2) == 0);
    void *failed = kw_caller(&c);
    void *failed2 = NULL;
    pthread_join(th, &failed2);
    CHECK_MSG(failed == NULL && failed2 == NULL, "two callers at once: a task did not run once");
    kw_set_threads(0);
    CHECK_INT_EQ(kw_threads(), 1);
    kw_set_threads(1000);
    CHECK_INT_EQ(kw_threads(), 64);
    kw_set_threads(1);
}

/* ---------------------------------------------------------------------------------
 * Optimisers: the formulas of kernels.h over a few steps
 * --------------------------------------------------------------------------------- */

enum { OPT_N = 1003, OPT_STEPS = 4 };

static const struct sgd_case {
    const char *name;
    float lr, mu, wd;
    int nesterov;
} sgd_cases[] = {
    {"plain", 0.1f, 0.0f, 0.0f, 0},
    {"plain wd", 0.1f, 0.0f, 1e-2f, 0},
    {"momentum", 0.05f, 0.9f, 0.0f, 0},
    {"momentum wd", 0.05f, 0.9f, 5e-2f, 0},
    {"nesterov", 0.05f, 0.9f, 0.0f, 1},
    {"nesterov wd", 0.05f, 0.9f, 5e-2f, 1},
    {"nesterov mu=0 wd", 0.1f, 0.0f, 1e-2f, 1},
};

static void test_sgd_momentum(void) {
    for (size_t c = 0; c < sizeof sgd_cases / sizeof sgd_cases[0]; c++) {
        const struct sgd_case *sc = &sgd_cases[c];
        float *p = host_floats(OPT_N + 1), *v = host_floats(OPT_N + 1), *g = host_floats(OPT_N);
        double *rp = host_doubles(OPT_N + 1), *rv = host_doubles(OPT_N + 1);
        rand_fill(p, OPT_N, -1, 1);
        rand_fill(v, OPT_N, -0.5f, 0.5f); /* as if after earlier steps */
        p[OPT_N] = v[OPT_N] = SENTINEL;
        for (int i = 0; i <= OPT_N; i++) {
            rp[i] = p[i];
            rv[i] = v[i];
        }
        float *dp = dev_dup(p, OPT_N + 1), *dv = dev_dup(v, OPT_N + 1), *dg = K->alloc(OPT_N * 4);
        for (int step = 0; step < OPT_STEPS; step++) {
            rand_fill(g, OPT_N, -1, 1);
            K->upload(dg, g, OPT_N * sizeof(float));
            K->sgd_momentum(dp, dg, dv, OPT_N, sc->lr, sc->mu, sc->wd, sc->nesterov);
            for (int i = 0; i < OPT_N; i++) {
                double gi = g[i] + (double)sc->wd * rp[i];
                rv[i] = sc->mu * rv[i] + gi;
                rp[i] -= sc->lr * (sc->nesterov ? gi + sc->mu * rv[i] : rv[i]);
            }
            dev_get(p, dp, OPT_N + 1);
            dev_get(v, dv, OPT_N + 1);
            char label[96];
            snprintf(label, sizeof label, "sgd %s step %d: p", sc->name, step + 1);
            CHECK_ALL_NEAR(label, p, rp, OPT_N + 1, 1e-6, 1e-5);
            snprintf(label, sizeof label, "sgd %s step %d: v", sc->name, step + 1);
            CHECK_ALL_NEAR(label, v, rv, OPT_N + 1, 1e-6, 1e-5);
        }
        K->free(dp);
        K->free(dv);
        K->free(dg);
        free(p);
        free(v);
        free(g);
        free(rp);
        free(rv);
    }
}

/* One hand-computed step: p = 1, g = 0.5, v = 0.2, lr 0.1, mu 0.9, wd 0.1:
 * v = 0.18 + 0.5 + 0.1 = 0.78; p = 1 - 0.078 (plain), 1 - 0.1*(0.6 + 0.702) (nesterov). */
static void test_sgd_momentum_values(void) {
    for (int nesterov = 0; nesterov <= 1; nesterov++) {
        float p = 1.0f, g = 0.5f, v = 0.2f;
        float *dp = dev_dup(&p, 1), *dg = dev_dup(&g, 1), *dv = dev_dup(&v, 1);
        K->sgd_momentum(dp, dg, dv, 1, 0.1f, 0.9f, 0.1f, nesterov);
        dev_get(&p, dp, 1);
        dev_get(&v, dv, 1);
        CHECK_NEAR(v, 0.78, 1e-6, 0);
        CHECK_NEAR(p, nesterov ? 0.8698 : 0.922, 1e-6, 0);
        K->free(dp);
        K->free(dg);
        K->free(dv);
    }
}

static const struct adam_case {
    const char *name;
    float lr, b1, b2, eps, wd;
    int decoupled;
} adam_cases[] = {
    {"adam", 1e-2f, 0.9f, 0.999f, 1e-8f, 0.0f, 0},
    {"adam L2", 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 0},
    {"adamw", 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 1},
    {"adamw big eps", 3e-2f, 0.8f, 0.99f, 1e-1f, 0.5f, 1},
};

static void test_adam(void) {
    for (size_t c = 0; c < sizeof adam_cases / sizeof adam_cases[0]; c++) {
        const struct adam_case *ac = &adam_cases[c];
        float *p = host_floats(OPT_N + 1), *m = host_floats(OPT_N + 1);
        float *v = host_floats(OPT_N + 1), *g = host_floats(OPT_N);
        double *rp = host_doubles(OPT_N + 1), *rm = host_doubles(OPT_N + 1);
        double *rv = host_doubles(OPT_N + 1);
        rand_fill(p, OPT_N, -1, 1);
        p[OPT_N] = m[OPT_N] = v[OPT_N] = SENTINEL; /* m, v start at zero */
        for (int i = 0; i <= OPT_N; i++) {
            rp[i] = p[i];
            rm[i] = m[i];
            rv[i] = v[i];
        }
        float *dp = dev_dup(p, OPT_N + 1), *dm = dev_dup(m, OPT_N + 1), *dv = dev_dup(v, OPT_N + 1);
        float *dg = K->alloc(OPT_N * sizeof(float));
        for (int t = 1; t <= OPT_STEPS; t++) {
            rand_fill(g, OPT_N, -1, 1);
            K->upload(dg, g, OPT_N * sizeof(float));
            double bc1 = 1 - pow(ac->b1, t), bc2 = 1 - pow(ac->b2, t);
            K->adam(dp, dg, dm, dv, OPT_N, ac->lr, ac->b1, ac->b2, ac->eps, ac->wd,
                    ac->decoupled, (float)bc1, (float)bc2);
            for (int i = 0; i < OPT_N; i++) {
                double gi = g[i] + (ac->decoupled ? 0.0 : (double)ac->wd * rp[i]);
                rm[i] = ac->b1 * rm[i] + (1 - (double)ac->b1) * gi;
                rv[i] = ac->b2 * rv[i] + (1 - (double)ac->b2) * gi * gi;
                if (ac->decoupled) rp[i] -= (double)ac->lr * ac->wd * rp[i];
                rp[i] -= ac->lr * (rm[i] / bc1) / (sqrt(rv[i] / bc2) + ac->eps);
            }
            dev_get(p, dp, OPT_N + 1);
            dev_get(m, dm, OPT_N + 1);
            dev_get(v, dv, OPT_N + 1);
            char label[96];
            snprintf(label, sizeof label, "%s step %d: p", ac->name, t);
            CHECK_ALL_NEAR(label, p, rp, OPT_N + 1, 1e-6, 1e-5);
            snprintf(label, sizeof label, "%s step %d: m", ac->name, t);
            CHECK_ALL_NEAR(label, m, rm, OPT_N + 1, 1e-7, 1e-5);
            snprintf(label, sizeof label, "%s step %d: v", ac->name, t);
            CHECK_ALL_NEAR(label, v, rv, OPT_N + 1, 1e-8, 1e-5);
        }
        K->free(dp);
        K->free(dm);
        K->free(dv);
        K->free(dg);
        free(p);
        free(m);
        free(v);
        free(g);
        free(rp);
        free(rm);
        free(rv);
    }
}

/* Adam's first step moves every parameter by lr * sign(g) (eps aside), whatever |g|:
 * m/bc1 = g and sqrt(v/bc2) = |g|. AdamW also shrinks p by lr*wd first. */
static void test_adam_first_step(void) {
    float p[3] = {1.0f, -2.0f, 0.5f}, g[3] = {0.25f, 3.0f, -1e-3f};
    float zero[3] = {0, 0, 0};
    float *dp = dev_dup(p, 3), *dg = dev_dup(g, 3), *dm = dev_dup(zero, 3), *dv = dev_dup(zero, 3);
    K->adam(dp, dg, dm, dv, 3, 0.1f, 0.9f, 0.999f, 1e-8f, 0.5f, 1, 1 - 0.9f, 1 - 0.999f);
    dev_get(p, dp, 3);
    CHECK_NEAR(p[0], 1.0 * 0.95 - 0.1, 1e-5, 0);
    CHECK_NEAR(p[1], -2.0 * 0.95 - 0.1, 1e-5, 0);
    CHECK_NEAR(p[2], 0.5 * 0.95 + 0.1, 1e-4, 0); /* eps matters at |g| = 1e-3: 1e-5 relative */
    K->free(dp);
    K->free(dg);
    K->free(dm);
    K->free(dv);
}

/* ---------------------------------------------------------------------------------
 * The additions for steps without the host
 * --------------------------------------------------------------------------------- */


/* FP32 is every backend's; the CPU has nothing else. The CUDA backend and the CPU
 * presented as a device (which rounds as cuda.cu does: kernels.h) also take TF32 and
 * BF16: their products are within the inputs' rounding (13 and 16 of float32's 23
 * mantissa bits dropped, to nearest: 2^-11 and 2^-8 relative) of the exact ones, and
 * differ from fp32's, so a set_precision that changed nothing would fail here. Also with
 * transposed operands whose rows are longer than they hold (lda > columns), which the
 * rounding copies must follow. */
static void test_set_precision(void) {
    CHECK(K->set_precision(KN_FP32) == 0);
    CHECK(K->set_precision(99) == TN_EINVAL);
    if (K == kn_cpu()) {
        CHECK(K->set_precision(KN_TF32) == TN_EINVAL);
        CHECK(K->set_precision(KN_BF16) == TN_EINVAL);
        return;
    }
    const int m = 64, n = 48, k = 256, pad = 3;
    /* case 0: a (m, k), b (k, n); case 1: the same values stored transposed, a as
     * (k, m) with row stride m + pad and b as (n, k) with row stride k + pad */
    float *a = host_floats((size_t)m * k), *b = host_floats((size_t)k * n);
    float *at = host_floats((size_t)k * (m + pad)), *bt = host_floats((size_t)n * (k + pad));
    float *c = host_floats((size_t)m * n), *c32 = host_floats((size_t)m * n);
    double *want = host_doubles((size_t)m * n);
    rand_fill(a, (size_t)m * k, -1, 1);
    rand_fill(b, (size_t)k * n, -1, 1);
    rand_fill(at, (size_t)k * (m + pad), -9, 9); /* the padding: never read */
    rand_fill(bt, (size_t)n * (k + pad), -9, 9);
    for (int i = 0; i < m; i++)
        for (int p = 0; p < k; p++) at[(size_t)p * (m + pad) + i] = a[(size_t)i * k + p];
    for (int p = 0; p < k; p++)
        for (int j = 0; j < n; j++) bt[(size_t)j * (k + pad) + p] = b[(size_t)p * n + j];
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int p = 0; p < k; p++) acc += (double)a[i * k + p] * b[p * n + j];
            want[i * n + j] = acc;
        }
    float *da = dev_dup(a, (size_t)m * k), *db = dev_dup(b, (size_t)k * n);
    float *dat = dev_dup(at, (size_t)k * (m + pad)), *dbt = dev_dup(bt, (size_t)n * (k + pad));
    float *dc = K->alloc((size_t)m * n * sizeof(float));
    static const struct {
        int precision;
        double unit; /* the inputs' relative rounding */
    } modes[] = {{KN_FP32, 0x1.0p-24}, {KN_TF32, 0x1.0p-11}, {KN_BF16, 0x1.0p-8}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        for (int t = 0; t < 2; t++) {
            CHECK(K->set_precision(modes[i].precision) == 0);
            if (t == 0)
                K->gemm(0, 0, m, n, k, 1.0f, da, k, db, n, 0.0f, dc, n);
            else
                K->gemm(1, 1, m, n, k, 1.0f, dat, m + pad, dbt, k + pad, 0.0f, dc, n);
            dev_get(c, dc, (size_t)m * n);
            char label[64];
            snprintf(label, sizeof label, "gemm in %s%s", kn_precision_name(modes[i].precision),
                     t ? ", transposed" : "");
            /* each of the k terms a*b (|a*b| < 1, about 1/3 typically) is off by up to 2
             * units relative from its rounded inputs, with random signs: the sum is off
             * by about unit * sqrt(k) / 4 typically; 2 * unit * sqrt(k) is 8 times that
             * (fp32: the float32 sums' rounding, up to k units) */
            double atol = modes[i].precision == KN_FP32 ? 2e-6 * (k + 2)
                                                        : 2.0 * modes[i].unit * sqrt((double)k);
            CHECK_ALL_NEAR(label, c, want, (size_t)m * n, atol, 0);
            if (modes[i].precision == KN_FP32) {
                if (t == 0) memcpy(c32, c, (size_t)m * n * sizeof(float));
                continue;
            }
            size_t same = 0;
            for (size_t e = 0; e < (size_t)m * n; e++) same += c[e] == c32[e];
            CHECK_MSG(2 * same < (size_t)m * n,
                      "%s: %zu of %d results are fp32's: were the inputs rounded?", label, same,
                      m * n);
        }
    }
    CHECK(K->set_precision(KN_FP32) == 0);
    K->gemm(0, 0, m, n, k, 1.0f, da, k, db, n, 0.0f, dc, n);
    dev_get(c, dc, (size_t)m * n);
    CHECK_MSG(memcmp(c, c32, (size_t)m * n * sizeof(float)) == 0, "gemm back in fp32 differs");
    void *bufs[] = {da, db, dat, dbt, dc};
    for (int i = 0; i < 5; i++) K->free(bufs[i]);
    free(a);
    free(b);
    free(at);
    free(bt);
    free(c);
    free(c32);
    free(want);
}

/* upload_small is ordered with the other calls, and its source may be reused at once. */
static void test_upload_small(void) {
    unsigned char src[KN_SMALL_MAX], got[KN_SMALL_MAX];
    for (int i = 0; i < KN_SMALL_MAX; i++) src[i] = (unsigned char)(i * 7 + 1);
    unsigned char *d = K->alloc(KN_SMALL_MAX), *e = K->alloc(KN_SMALL_MAX);
    K->upload_small(d, src, KN_SMALL_MAX);
    memset(src, 0, sizeof src); /* reused at once */
    K->copy(e, d, KN_SMALL_MAX); /* sees the upload */
    K->download(got, e, sizeof got);
    size_t bad = 0;
    for (int i = 0; i < KN_SMALL_MAX; i++) bad += got[i] != (unsigned char)(i * 7 + 1);
    CHECK_MSG(bad == 0, "upload_small: %zu bytes wrong", bad);
    int64_t v = 41;
    K->upload_small(d + 8, &v, sizeof v); /* an odd size at an offset */
    K->upload_small(d, &v, 0);
    K->sync();
    K->download(got, d, 16);
    CHECK(got[0] == 1 && memcmp(got + 8, &v, sizeof v) == 0);
    K->free(d);
    K->free(e);
}

/* Rows idx[*pos + i] of a data set, pos in device memory. */
static void test_gather_rows(void) {
    enum { N = 10, D = 7, B = 4 };
    float X[N * D], x[B * D + 1];
    int32_t Y[N], y[B + 1], idx[N] = {3, 9, 0, 4, 4, 8, 1, 2, 7, 5};
    rand_fill(X, N * D, -1, 1);
    for (int i = 0; i < N; i++) Y[i] = 100 + i;
    float *dX = dev_dup(X, N * D), *dx = K->alloc(sizeof x);
    int32_t *dY = K->alloc(sizeof Y), *dy = K->alloc(sizeof y), *didx = K->alloc(sizeof idx);
    int64_t *dpos = K->alloc(sizeof(int64_t));
    K->upload(dY, Y, sizeof Y);
    K->upload(didx, idx, sizeof idx);
    K->fill(dx + B * D, SENTINEL, 1);
    for (int64_t pos = 0; pos <= N - B; pos += 3) {
        K->upload_small(dpos, &pos, sizeof pos);
        K->gather_rows(dx, dy, dX, dY, D, didx, dpos, B);
        K->download(x, dx, sizeof x);
        K->download(y, dy, B * sizeof(int32_t));
        size_t bad = 0;
        for (int i = 0; i < B; i++) {
            bad += y[i] != Y[idx[pos + i]];
            bad += memcmp(x + i * D, X + idx[pos + i] * D, D * sizeof(float)) != 0;
        }
        CHECK_MSG(bad == 0, "gather_rows at %lld: %zu rows wrong", (long long)pos, bad);
        CHECK(x[B * D] == SENTINEL);
    }
    K->free(dX);
    K->free(dx);
    K->free(dY);
    K->free(dy);
    K->free(didx);
    K->free(dpos);
}

/* kernels.h's u(seed, salt, i), written out again. */
static float ref_drop_u(uint64_t seed, uint64_t salt, size_t i) {
    uint64_t z = seed + KN_DROP_SALT * salt + KN_DROP_STEP * ((uint64_t)i + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)(z >> 40) * 0x1.0p-24f;
}

/* The same masks on every backend, as documented; about keep of them kept. */
static void test_dropout_mask(void) {
    static const float keeps[] = {0.5f, 0.7f, 0.9f};
    enum { N = 4099 };
    float *m = host_floats(N + 1);
    float *dm = K->alloc((N + 1) * sizeof(float));
    uint64_t *dseed = K->alloc(sizeof(uint64_t));
    for (size_t t = 0; t < sizeof keeps / sizeof keeps[0]; t++) {
        uint64_t seed = tn_rng_u64(&g_rng), salt = t + 2;
        K->upload(dseed, &seed, sizeof seed);
        K->fill(dm + N, SENTINEL, 1);
        K->dropout_mask(dm, N, keeps[t], dseed, salt);
        dev_get(m, dm, N + 1);
        size_t bad = 0, kept = 0;
        float scale = 1.0f / keeps[t];
        for (size_t i = 0; i < N; i++) {
            float want = ref_drop_u(seed, salt, i) < keeps[t] ? scale : 0.0f;
            bad += m[i] != want;
            kept += m[i] != 0.0f;
        }
        CHECK_MSG(bad == 0, "dropout_mask keep %g: %zu entries differ from the reference",
                  (double)keeps[t], bad);
        CHECK_NEAR((double)kept / N, keeps[t], 0.03, 0);
        CHECK(m[N] == SENTINEL);
    }
    K->free(dm);
    K->free(dseed);
    free(m);
}

/* softmax_xent_acc adds what softmax_xent returns; the first non-finite batch is
 * tagged and later ones do not move the tag. */
static void test_softmax_xent_acc(void) {
    enum { B = 9, C = 10 };
    float z[B * C], d1[B * C], d2[B * C];
    int32_t labels[B];
    for (int i = 0; i < B * C; i++) z[i] = (float)(2 * tn_rng_normal(&g_rng));
    for (int i = 0; i < B; i++) labels[i] = (int32_t)tn_rng_below(&g_rng, C);
    float *dz = dev_dup(z, B * C), *dd = K->alloc(sizeof d1);
    int32_t *dl = K->alloc(sizeof labels);
    K->upload(dl, labels, sizeof labels);
    kn_loss_acc start = {1.5, 3, 0, 0}, got;
    kn_loss_acc *dacc = K->alloc(sizeof start);
    int64_t tag = 17, tag2 = 18;
    int64_t *dtag = K->alloc(sizeof tag), *dtag2 = K->alloc(sizeof tag2);
    K->upload(dacc, &start, sizeof start);
    K->upload(dtag, &tag, sizeof tag);
    K->upload(dtag2, &tag2, sizeof tag2);
    double loss;
    int64_t correct;
    K->softmax_xent(dz, dl, B, C, dd, &loss, &correct);
    dev_get(d1, dd, B * C);
    K->softmax_xent_acc(dz, dl, B, C, dd, dacc, dtag);
    dev_get(d2, dd, B * C);
    K->download(&got, dacc, sizeof got);
    CHECK(got.loss_sum == 1.5 + loss);
    CHECK_INT_EQ(got.correct, 3 + correct);
    CHECK_INT_EQ(got.bad_tag, 0);
    CHECK(memcmp(d1, d2, sizeof d1) == 0);
    K->softmax_xent_acc(dz, dl, B, C, NULL, dacc, dtag); /* no dlogits */
    K->download(&got, dacc, sizeof got);
    CHECK_NEAR(got.loss_sum, 1.5 + 2 * loss, 1e-12, 1e-12);
    CHECK_INT_EQ(got.correct, 3 + 2 * correct);
    /* a NaN logit, then an infinite one */
    z[4] = NAN;
    K->upload(dz, z, sizeof z);
    K->softmax_xent_acc(dz, dl, B, C, dd, dacc, dtag);
    z[4] = 0.0f;
    z[C + 2] = INFINITY;
    K->upload(dz, z, sizeof z);
    K->softmax_xent_acc(dz, dl, B, C, dd, dacc, dtag2);
    K->download(&got, dacc, sizeof got);
    CHECK_INT_EQ(got.bad_tag, 17);
    CHECK(isnan(got.bad_loss));
    CHECK(!isfinite(got.loss_sum));
    K->free(dz);
    K->free(dd);
    K->free(dl);
    K->free(dacc);
    K->free(dtag);
    K->free(dtag2);
}

/* The optimisers with their scalars in device memory compute what the by-value forms
 * compute, bit for bit. */
static void test_optim_dev(void) {
    enum { N = 777 };
    float p0[N], g[N], a[N], b[N], pa[N], pb[N];
    rand_fill(p0, N, -1, 1);
    rand_fill(g, N, -1, 1);
    float hyper[3] = {0.03f, 1.0f - 0.9f * 0.9f, 1.0f - 0.999f * 0.999f};
    float *dh = dev_dup(hyper, 3), *dg = dev_dup(g, N);
    for (int kind = 0; kind < 3; kind++) {
        float *p1 = dev_dup(p0, N), *p2 = dev_dup(p0, N);
        float *m1 = K->alloc(N * 4), *m2 = K->alloc(N * 4), *v1 = K->alloc(N * 4),
              *v2 = K->alloc(N * 4);
        for (int step = 0; step < 3; step++) {
            if (kind < 2) {
                K->sgd_momentum(p1, dg, m1, N, hyper[0], 0.9f, 0.01f, kind);
                K->sgd_momentum_dev(p2, dg, m2, N, dh, 0.9f, 0.01f, kind);
            } else {
                K->adam(p1, dg, m1, v1, N, hyper[0], 0.9f, 0.999f, 1e-8f, 0.01f, 1, hyper[1],
                        hyper[2]);
                K->adam_dev(p2, dg, m2, v2, N, dh, 0.9f, 0.999f, 1e-8f, 0.01f, 1);
            }
        }
        dev_get(pa, p1, N);
        dev_get(pb, p2, N);
        dev_get(a, m1, N);
        dev_get(b, m2, N);
        CHECK_MSG(memcmp(pa, pb, sizeof pa) == 0 && memcmp(a, b, sizeof a) == 0,
                  "optimiser %d: the _dev form differs", kind);
        void *bufs[] = {p1, p2, m1, m2, v1, v2};
        for (int i = 0; i < 6; i++) K->free(bufs[i]);
    }
    K->free(dh);
    K->free(dg);
}

static void test_bf16(void) {
    float x[8] = {1.0f, -2.5f, 1.00390625f /* 1 + 2^-8: a tie, to even */, 1.01171875f,
                  3.0e38f, INFINITY, NAN, 0x1.fffffep-127f};
    static const uint16_t want[7] = {0x3f80, 0xc020, 0x3f80, 0x3f82, 0x7f62, 0x7f80};
    uint16_t h[8];
    float back[8];
    float *dx = dev_dup(x, 8), *dback = K->alloc(sizeof back);
    uint16_t *dh = K->alloc(sizeof h);
    K->to_bf16(dh, dx, 8);
    K->download(h, dh, sizeof h);
    CHECK(memcmp(h, want, 6 * sizeof(uint16_t)) == 0);
    CHECK((h[6] & 0x7f80) == 0x7f80 && (h[6] & 0x7f) != 0); /* NaN stays NaN */
    K->from_bf16(dback, dh, 8);
    dev_get(back, dback, 8);
    CHECK(back[0] == 1.0f && back[1] == -2.5f && back[2] == 1.0f && back[3] == 1.015625f);
    CHECK(isinf(back[5]) && isnan(back[6]));
    K->free(dx);
    K->free(dback);
    K->free(dh);
}

/* A graph replays its calls, reading pointer arguments again (a position set with
 * upload_small between launches); a backend without graphs says so and runs them. */
static void test_graph(void) {
    enum { N = 6, D = 3, B = 2 };
    float X[N * D], x[B * D], s[5] = {1, 2, 3, 4, 5};
    int32_t Y[N], y[B], idx[N] = {5, 4, 3, 2, 1, 0};
    for (int i = 0; i < N * D; i++) X[i] = (float)i;
    for (int i = 0; i < N; i++) Y[i] = i;
    float *dX = dev_dup(X, N * D), *dx = K->alloc(sizeof x), *ds = dev_dup(s, 5);
    int32_t *dY = K->alloc(sizeof Y), *dy = K->alloc(sizeof y), *didx = K->alloc(sizeof idx);
    int64_t *dpos = K->alloc(sizeof(int64_t)), pos = 0;
    K->upload(dY, Y, sizeof Y);
    K->upload(didx, idx, sizeof idx);
    K->upload_small(dpos, &pos, sizeof pos);
    /* the calls once, as a step runs before it is recorded */
    K->gather_rows(dx, dy, dX, dY, D, didx, dpos, B);
    K->scale(ds, 2.0f, 5);
    void *g = NULL;
    int recording = K->graph_begin();
    CHECK(recording == g_cuda);
    if (recording) {
        K->gather_rows(dx, dy, dX, dY, D, didx, dpos, B);
        K->scale(ds, 2.0f, 5);
        g = K->graph_end();
        CHECK(g != NULL);
    }
    for (pos = 1; pos <= 3; pos++) {
        K->upload_small(dpos, &pos, sizeof pos);
        if (g) {
            K->graph_launch(g);
        } else {
            K->gather_rows(dx, dy, dX, dY, D, didx, dpos, B);
            K->scale(ds, 2.0f, 5);
        }
        K->download(x, dx, sizeof x);
        K->download(y, dy, sizeof y);
        CHECK_MSG(y[0] == idx[pos] && y[1] == idx[pos + 1] && x[0] == X[idx[pos] * D] &&
                      x[D + 2] == X[idx[pos + 1] * D + 2],
                  "replay at position %lld gathered rows %d, %d", (long long)pos, y[0], y[1]);
    }
    dev_get(s, ds, 5);
    CHECK(s[0] == 16.0f && s[4] == 80.0f); /* x2 once, then three replays */
    K->graph_free(g);
    K->graph_free(NULL);
    void *bufs[] = {dX, dx, ds, dY, dy, didx, dpos};
    for (int i = 0; i < 7; i++) K->free(bufs[i]);
}

/* A failed recording (kernels.h, "Graphs"): graph_end returns NULL, none of the calls
 * made since graph_begin has run, the caller makes them again, and graph_begin says no
 * from then on. The CPU presented as a device fails its recordings on request
 * (kn_cpu_device_fail_graphs); a GPU cannot be made to, so this runs on cpu-device. */
static void test_graph_failure(void) {
    if (K != kn_cpu_device()) return;
    float s[3] = {1, 2, 3};
    float *ds = dev_dup(s, 3);
    kn_cpu_device_fail_graphs(1);
    CHECK(K->graph_begin() == 1);
    K->scale(ds, 10.0f, 3);
    K->fill(ds + 1, 7.0f, 1);
    void *g = K->graph_end();
    CHECK(g == NULL);
    dev_get(s, ds, 3);
    CHECK_MSG(s[0] == 1 && s[1] == 2 && s[2] == 3, "calls ran while recording: %g %g %g",
              (double)s[0], (double)s[1], (double)s[2]);
    K->scale(ds, 10.0f, 3); /* the caller's fallback: the calls made directly */
    dev_get(s, ds, 3);
    CHECK(s[0] == 10 && s[2] == 30);
    CHECK(K->graph_begin() == 0); /* never again in this run */
    kn_cpu_device_fail_graphs(0);
    CHECK(K->graph_begin() == 0); /* the default: no graphs */
    K->graph_free(g);
    K->free(ds);
}

/* A graph stays valid when the scratch its calls use is grown (and replaced) by later
 * calls made directly: sum_rows over 512 rows recorded, then over 20000 rows (more
 * chunks of partial sums than the graph's), then the graph replayed. Without graphs
 * (the CPU) the calls are made each time instead. */
static void test_graph_outlives_scratch(void) {
    enum { R1 = 512, R2 = 20000, COLS = 64 };
    float *dy = host_floats((size_t)R2 * COLS), *db = host_floats(COLS);
    double *want = host_doubles(COLS);
    rand_fill(dy, (size_t)R2 * COLS, -1, 1);
    float *ddy = dev_dup(dy, (size_t)R2 * COLS), *ddb = K->alloc(COLS * sizeof(float));
    float *dbig = K->alloc(COLS * sizeof(float));
    K->sum_rows(ddb, ddy, R1, COLS); /* sizes the scratch for R1 */
    void *g = NULL;
    if (K->graph_begin()) {
        K->sum_rows(ddb, ddy, R1, COLS);
        g = K->graph_end();
        CHECK(g != NULL);
    }
    K->sum_rows(dbig, ddy, R2, COLS); /* grows the scratch while g lives */
    K->fill(ddb, 0.0f, COLS);
    for (int rep = 0; rep < 2; rep++) {
        if (g)
            K->graph_launch(g);
        else
            K->sum_rows(ddb, ddy, R1, COLS);
    }
    dev_get(db, ddb, COLS);
    for (int j = 0; j < COLS; j++) {
        want[j] = 0;
        for (int r = 0; r < R1; r++) want[j] += 2.0 * dy[(size_t)r * COLS + j];
    }
    CHECK_ALL_NEAR("sum_rows replayed after the scratch grew", db, want, COLS, 1e-6 * R1, 1e-6);
    K->graph_free(g);
    K->free(ddy);
    K->free(ddb);
    K->free(dbig);
    free(dy);
    free(db);
    free(want);
}

/* Picks the backend from --backend=NAME. 0; 77 (skip) when there is no GPU or driver
 * at all, or no CUDA in the build; 1 when a GPU seems to be there but cannot be used
 * (a driver too old for the build, a broken installation: that must not pass as a
 * skip). */
static int pick_backend(int argc, char **argv) {
    const char *name = "cpu", *gemm = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--backend=", 10)) name = argv[i] + 10;
        if (!strncmp(argv[i], "--gemm=", 7)) gemm = argv[i] + 7;
    }
    if (gemm) { /* the CPU tables' products (kn_cpu_gemm): every test runs on them */
        if (!strcmp(gemm, "openblas")) {
            g_gemm_mode = KN_GEMM_OPENBLAS;
        } else if (!strcmp(gemm, "avx512")) {
            if (!own_gemm_possible()) {
                printf("skipped: the CPU has no AVX-512 F (or TN_CPU_NO_AVX512=1): no own "
                       "AVX-512 products to test\n");
                return 77;
            }
            g_gemm_mode = KN_GEMM_OWN;
        } else {
            fprintf(stderr, "test_kernels: unknown --gemm=%s (openblas or avx512)\n", gemm);
            return 2;
        }
        kn_cpu_gemm(g_gemm_mode);
    }
    if (!strcmp(name, "cpu")) {
        K = kn_cpu();
    } else if (!strcmp(name, "cpu-device")) {
        K = kn_cpu_device();
    } else if (!strcmp(name, "cuda")) {
        char why[512];
        K = kn_cuda(0, why, sizeof why);
        if (!K && kn_cuda_absent()) {
            printf("skipped: no GPU to test the CUDA backend on: %s\n", why);
            return 77;
        }
        if (!K) {
            fprintf(stderr, "test_kernels: error: CUDA is there but the backend cannot be "
                            "created: %s\n", why);
            return 1;
        }
        kn_cuda_describe(0, why, sizeof why);
        printf("testing the CUDA backend on %s\n", why);
        g_cuda = 1;
    } else {
        fprintf(stderr, "test_kernels: unknown --backend=%s (cpu, cpu-device or cuda)\n", name);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv) {
    int rc = pick_backend(argc, argv);
    if (rc) return rc;
    tn_rng_seed(&g_rng, 20240611);
    RUN(test_alloc_zeroed);
    RUN(test_fill);
    RUN(test_upload_download_copy);
    RUN(test_gemm);
    RUN(test_gemm_threads);
    RUN(test_gemm_blocks);
    RUN(test_gemm_special);
    RUN(test_gemm_split_bits);
    RUN(test_gemm_modes);
    RUN(test_broadcast_rows);
    RUN(test_sum_rows);
    RUN(test_sum_channels);
    RUN(test_add_channel_bias);
    RUN(test_activations);
    RUN(test_activation_values);
    RUN(test_mul);
    RUN(test_softmax_xent_random);
    RUN(test_softmax_xent_cases);
    RUN(test_im2col_col2im);
    RUN(test_im2col_strided);
    RUN(test_swap01);
    RUN(test_maxpool2);
    RUN(test_maxpool2_ties);
    RUN(test_conv_block);
    RUN(test_conv_block_ties);
    RUN(test_conv_block_winograd_all);
    RUN(test_conv_block_direct_all);
    RUN(test_conv_block_winograd);
    RUN(test_conv_block_fused_bits);
    RUN(test_conv_block_simd_bits);
    RUN(test_conv_block_direct_bits);
    RUN(test_conv_block_wino_avx512_bits);
    RUN(test_conv_block_direct_stale_scratch);
    RUN(test_conv_block_order);
    RUN(test_conv_block_gemm_only);
    RUN(test_gemm_flops);
    RUN(test_workers);
    RUN(test_sgd_momentum);
    RUN(test_sgd_momentum_values);
    RUN(test_adam);
    RUN(test_adam_first_step);
    RUN(test_optim_threads);
    RUN(test_set_precision);
    RUN(test_upload_small);
    RUN(test_gather_rows);
    RUN(test_dropout_mask);
    RUN(test_softmax_xent_acc);
    RUN(test_optim_dev);
    RUN(test_bf16);
    RUN(test_graph);
    RUN(test_graph_failure);
    RUN(test_graph_outlives_scratch);
    return check_summary();
}
