/*
 * cpu_conv.c — the CPU backend's conv blocks (kernels.h: conv_block_forward and
 * conv_block_backward): conv 3x3 (zero padding 1) + bias + activation + 2x2 max-pool in
 * one call, worked a few images at a time so that what passes from one step to the next
 * stays in the core's cache, on all the backend's threads.
 *
 * Notation as kernels.h: b images of c channels of h x w, f filters, hw = h*w,
 * ck = c*9 (the rows of an image's im2col), ph x pw = (h/2) x (w/2) the pooled planes.
 *
 * The batch is cut into G groups of consecutive images (G = min(b, CC_GROUPS), fewer
 * when the groups' partial weight gradients would be large), each one task for the
 * threads of cpu_workers.h, and a group into chunks of nc images whose im2col
 * (ck, nc*hw) and conv output (f, nc*hw) fit in a core's L2 cache together (Winograd:
 * whose V and M do; as few chunks as that takes, as even as they go). Per chunk:
 *
 *   forward:  col = im2col(x);  z = W col (one GEMM);  y, choice, zmax = pool(act(z + bias))
 *   backward: dz = act'(z) * unpool(dy) (zero off the elements chosen);  db_g += sum of dz;
 *             col = im2col(x) again (cheaper than keeping the whole batch's);
 *             dW_g += dz col^T (or dW_g^T += col dz^T);  dcol = W^T dz (into col);
 *             dx = col2im(dcol)
 *
 * then dW = dW_0 + ... + dW_{G-1} and db likewise, in group order, so the result does
 * not depend on which thread ran which group nor on how many threads there were. Each
 * GEMM is OpenBLAS's on the group's thread: a layer's big products become many products
 * on data in cache instead of one over a (ck, b*hw) matrix of tens of MiB in DRAM, and
 * im2col, col2im, the bias, the activation and the pooling never make a pass over the
 * whole batch of their own. Where there are fewer groups than threads (a batch of one
 * image, or huge layers), the groups run one after another, each product split between
 * the threads (cpu.c).
 *
 * Blocks of 16 input channels or more (kn_cpu_winograd; the measurements behind the rule
 * are in docs/benchmarks/train-speed.md) make z, dx and dW by Winograd F(2x2,3x3)
 * instead, with no im2col (see the notes above CC_TILE_PAD): the filters transformed
 * once a call, then per chunk the input's 4x4 tiles transformed, 16 GEMMs (f, c) x
 * (c, tiles), and the results' tiles transformed back into z: 2.25x fewer
 * multiplications than im2col's product. The backward pass runs these steps backwards:
 * dz's tiles (A dz A^T) and the input's make, in 16 GEMMs (f, tiles) x (tiles, c), each
 * group's gradient of the transformed filters, dU_g (their sum becomes dW at the end,
 * G^T dU G); the same dz tiles, in 16 GEMMs (c, f) x (f, tiles), make the gradient of
 * the input's tiles, which the adjoint of the input transform adds back into dx.
 *
 * Blocks of one input channel (the first layer; kn_cpu_direct) with ReLU and even h and w
 * make their forward pass by the direct convolution instead (AVX2, and AVX-512 where the
 * CPU has it): no im2col and no z. Each channel's plane is copied once into a padded
 * plane whose rows are split into their even and odd columns, so that a load gives one
 * element of eight (sixteen) pooling windows; the four outputs of each window are summed
 * tap by tap in registers, for two (four) filters at a time, and pooled there. Their
 * im2col GEMM (K = 9c) is thin, and the passes over z around it cost more than it does.
 * Where there is no dx to make (a first layer) and the CPU has AVX-512, their weight
 * gradient is direct too: each window's pooled gradient put at the element it chose and
 * multiplied into the inputs under the taps, sixteen windows at a time, with no dz and
 * no im2col (cc_direct_dw_image_avx512); else their backward pass is im2col's.
 *
 * The pooling and its backward pass for ReLU (the model's default) are also written in
 * AVX2, eight windows at a time, used where the CPU has AVX2 and FMA (TN_CPU_NO_SIMD=1
 * turns them off: the tests run both forms); tanh and GELU take the plain loops. Where a
 * Winograd block has ReLU and even h and w, each 2x2 output tile is a pooling window,
 * so the AVX2 forms fuse them: forward, the output transform pools its tiles in
 * registers and z is never stored; backward, dz is made from dy window by window and
 * transformed at once into the tiles dW and dx take, and is never stored either. The
 * same values in the same order: the fused forms give the same bits.
 *
 * Numbers: the forward pass computes what im2col_batch, gemm, add_channel_bias, the
 * activation and maxpool2_forward compute (the same products, sums and comparisons);
 * the backward pass what maxpool2_backward, the activation's backward, gemm and col2im
 * compute, except that dW and db are summed per group first (db plane by plane, in
 * eight lanes by the AVX2 unpooling; the direct dW and db in sixteen lanes over the
 * group's images). The direct z is the same products in another order (tap by tap:
 * test_conv_block_direct_all). Winograd's z, dx and dW are the same sums in
 * another order through the transforms, with float errors of the same order
 * (tests/kernels: test_conv_block_winograd); they too do not depend on the threads, and
 * the AVX2 forms give the plain loops' bits (test_conv_block_simd_bits).
 */
#include "kernels/cpu_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/conv_window.h"
#include "kernels/cpu_workers.h"
#include "kernels/kernels.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define VECTORISE __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define VECTORISE
#endif

#define CC_GROUPS 16                    /* groups of a batch, at most */
#define CC_CHUNK_BYTES (768 << 10)      /* a chunk's col + z, about */
#define CC_WINO_CHUNK_BYTES (1536 << 10) /* a chunk's V and M where Winograd: the GEMMs
                                            get more tiles (3% faster on the model's second
                                            layer than with 768 KiB; 3 MiB is slower; its
                                            chunks, 4 images, are the same since z no
                                            longer counts) */
#define CC_PARTIAL_BYTES (64u << 20)    /* the groups' partial dW and db, at most */
#define CC_PAD 32                       /* floats after a chunk's scratch: the SIMD pooling
                                           reads and writes up to 16 past a row */

#define CC_WINO_MIN_C 16             /* input channels from which Winograd is taken (cc_plan) */
#define CC_DIRECT_MAX_C 1            /* input channels up to which the direct convolution is
                                        taken forward (cc_plan; train-speed.md: the model's
                                        first layer) */

static _Atomic int cc_gemm_only; /* kn_cpu_gemm_only */
static _Atomic int cc_wino_mode = KN_WINO_RULE; /* kn_cpu_winograd */
static _Atomic int cc_fuse = 1;                 /* kn_cpu_fuse_pooling */
static _Atomic int cc_simd = 1;                 /* kn_cpu_conv_simd */
static _Atomic int cc_direct_mode = KN_DIRECT_RULE; /* kn_cpu_direct */
static _Atomic int cc_avx512_on = 1;                /* kn_cpu_conv_avx512 */

void kn_cpu_gemm_only(int on) { atomic_store(&cc_gemm_only, on); }

void kn_cpu_winograd(int mode) { atomic_store(&cc_wino_mode, mode); }

void kn_cpu_fuse_pooling(int on) { atomic_store(&cc_fuse, on); }

void kn_cpu_conv_simd(int on) { atomic_store(&cc_simd, on); }

void kn_cpu_direct(int mode) { atomic_store(&cc_direct_mode, mode); }

void kn_cpu_conv_avx512(int on) { atomic_store(&cc_avx512_on, on); }

static _Atomic uint64_t cc_direct_done[2]; /* kn_cpu_direct_images */
static _Atomic uint64_t cc_wide_done[4];   /* kn_cpu_wino_avx512_images */

uint64_t kn_cpu_direct_images(int backward) { return atomic_load(&cc_direct_done[backward != 0]); }

uint64_t kn_cpu_wino_avx512_images(int which) {
    return which >= 0 && which < 4 ? atomic_load(&cc_wide_done[which]) : 0;
}

/* ---- per-thread scratch, grown on demand and freed when its thread ends ---- */

typedef struct cc_buf {
    float *p;
    size_t cap; /* floats */
} cc_buf;

static pthread_key_t cc_keys[KC_SCRATCH_KINDS]; /* enum kc_scratch */
static pthread_once_t cc_once = PTHREAD_ONCE_INIT;

static void cc_buf_free(void *p) {
    cc_buf *b = p;
    free(b->p);
    free(b);
}

static void cc_make_keys(void) {
    for (int i = 0; i < KC_SCRATCH_KINDS; i++)
        if (pthread_key_create(&cc_keys[i], cc_buf_free) != 0) {
            fprintf(stderr, "fatal: kernels/cpu_conv.c: pthread_key_create failed\n");
            abort();
        }
}

float *kc_scratch(int which, size_t n) {
    pthread_once(&cc_once, cc_make_keys);
    cc_buf *b = pthread_getspecific(cc_keys[which]);
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b || pthread_setspecific(cc_keys[which], b) != 0) goto oom;
    }
    if (b->cap < n) {
        size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
        free(b->p);
        b->p = aligned_alloc(64, bytes);
        if (!b->p) goto oom;
        memset(b->p, 0, bytes);
        b->cap = n;
    }
    return b->p;
oom:
    fprintf(stderr, "fatal: out of memory allocating %zu bytes of CPU kernel scratch\n",
            n * sizeof(float));
    abort();
}

/* ---- one call ---- */

typedef struct cc_block {
    kc_gemm_fn *gemm;
    int b, c, h, w, f, act;
    size_t istride, cstride;
    int hw, ck, ph, pw;
    int groups, nc; /* groups of the batch; images per chunk */
    int gemm_only;  /* kn_cpu_gemm_only when the call began */
    int wino;       /* z, dx and dW by Winograd F(2x2,3x3) (cc_plan says when) */
    int fused;      /* Winograd with the pooling fused into the transforms: ReLU, h and w
                       even (every tile a pooling window), AVX2 (cc_plan) */
    int avx512;     /* Winograd, and the transforms' AVX-512 forms where they have one:
                       x's tiles (cc_wino_in14_avx512), dx's adjoint (cc_wino_adj2_avx512),
                       the fused pooling and unpooling */
    int wide;       /* fused and avx512: the fused transforms take a filter's tiles of a
                       chunk's images at once (cc_wino_pool_relu_avx512) */
    int direct;     /* forward by the direct convolution with the pooling fused
                       (cc_direct_image_avx2; cc_plan says when) */
    int direct_dw;  /* backward too, where there is no dx and AVX-512 (cc_plan) */
    int th, tw, nt; /* Winograd: tiles down and across an h x w plane, nt = th*tw */
    int ldt;        /* Winograd: the row stride of V and M, nc*nt + CC_TILE_PAD */
    const float *U; /* Winograd: the filters transformed, (16, f, c) forward, transposed
                       (16, c, f) for dx */
    const float *x, *W, *bias;
    /* forward */
    float *y, *zmax_out;
    uint8_t *choice_out;
    /* backward */
    const float *dy, *yin, *zmax;
    const uint8_t *choice;
    float *dx;
    int dwt;        /* the groups' dW are kept transposed, (ck, f) */
    size_t npart;   /* floats of a group's weight gradient: f*ck, or 16*f*c (its dU) */
    float *partial; /* (groups, npart + f): each group's dW (or dW^T, or dU), then its db */
} cc_block;

/* Where the pooled plane of filter co and image i starts in y, choice, zmax and dy,
 * (b, f, ph, pw) as kernels.h has them. */
static size_t cc_plane_at(const cc_block *k, int co, int i) {
    return ((size_t)i * k->f + co) * k->ph * k->pw;
}

/* How many outputs from that plane's start the forward pass may write, garbage past the
 * plane included (the AVX2 stores, eight at a time): up to the end of the image's
 * planes, whose later filters are written after it (the filters are the outer loop) by
 * the same thread (a chunk's images are one group's). */
static size_t cc_plane_room(const cc_block *k, int co) {
    return (size_t)(k->f - co) * k->ph * k->pw;
}

static int cc_group_lo(const cc_block *k, int g) {
    return (int)((long long)g * k->b / k->groups);
}

/* out = the n consecutive h x w planes at in, each shifted by (dy, dx) in {-1, 0, 1}:
 * out[y][x] = in[y+dy][x+dx] within a plane, 0 where that falls outside it. One
 * contiguous copy, then the rows and columns that fall outside are zeroed. */
static void cc_shift_planes(float *restrict out, const float *restrict in, int n, int h, int w,
                            int dy, int dx) {
    size_t hw = (size_t)h * w, total = (size_t)n * hw;
    ptrdiff_t s = (ptrdiff_t)dy * w + dx;
    size_t a = s < 0 ? (size_t)-s : 0, e = s > 0 ? (size_t)s : 0; /* e: from the end */
    a = a < total ? a : total;
    e = e < total - a ? total - e : a;
    for (size_t p = 0; p < a; p++) out[p] = 0.0f; /* a, total - e <= w + 1: no calls */
    memcpy(out + a, in + (ptrdiff_t)a + s, (e - a) * sizeof *out);
    for (size_t p = e; p < total; p++) out[p] = 0.0f;
    if (dy)
        for (int j = 0; j < n; j++) {
            float *row = out + j * hw + (dy < 0 ? 0 : (size_t)(h - 1) * w);
            for (int x = 0; x < w; x++) row[x] = 0.0f;
        }
    if (dx)
        for (size_t r = 0, c = dx < 0 ? 0 : (size_t)w - 1; r < (size_t)n * h; r++)
            out[r * w + c] = 0.0f;
}

/* The adjoint of cc_shift_planes: out[y+dy][x+dx] += in[y][x] where that is inside
 * its plane. The entries of in that would leave their plane or row are zeroed first (in
 * is scratch), so that one contiguous loop adds 0 there. */
VECTORISE static void cc_unshift_add_planes(float *restrict out, float *restrict in, int n, int h,
                                            int w, int dy, int dx) {
    size_t hw = (size_t)h * w, total = (size_t)n * hw;
    if (dy)
        for (int j = 0; j < n; j++) {
            float *row = in + j * hw + (dy < 0 ? 0 : (size_t)(h - 1) * w);
            for (int x = 0; x < w; x++) row[x] = 0.0f;
        }
    if (dx)
        for (size_t r = 0, c = dx < 0 ? 0 : (size_t)w - 1; r < (size_t)n * h; r++)
            in[r * w + c] = 0.0f;
    ptrdiff_t s = (ptrdiff_t)dy * w + dx;
    size_t a = s < 0 ? (size_t)-s : 0, e = s > 0 ? (size_t)s : 0;
    a = a < total ? a : total;
    e = e < total - a ? total - e : a;
    float *o = out + s;
    for (size_t p = a; p < e; p++) o[p] += in[p];
}

/* col (ck, n*hw), row stride ld, of images [i0, i0+n). Where an image's planes follow
 * the previous image's (x as (c, b, h, w), or one channel), a channel's n planes are
 * shifted in one go. */
static void cc_im2col(const cc_block *k, float *col, int ld, int i0, int n) {
    int run = k->istride == (size_t)k->hw ? n : 1; /* images per shifted block */
    for (int j = 0; j < n; j += run) {
        const float *img = k->x + (size_t)(i0 + j) * k->istride;
        for (int ch = 0; ch < k->c; ch++) {
            const float *plane = img + (size_t)ch * k->cstride;
            for (int t = 0; t < 9; t++)
                cc_shift_planes(col + ((size_t)ch * 9 + t) * ld + (size_t)j * k->hw, plane, run,
                                k->h, k->w, t / 3 - 1, t % 3 - 1);
        }
    }
}

/* dx of images [i0, i0+n) = col2im(col); col is scratch and is changed. */
static void cc_col2im(const cc_block *k, float *col, int ld, int i0, int n) {
    int run = k->istride == (size_t)k->hw ? n : 1;
    for (int j = 0; j < n; j += run) {
        float *img = k->dx + (size_t)(i0 + j) * k->istride;
        for (int ch = 0; ch < k->c; ch++) {
            float *plane = img + (size_t)ch * k->cstride;
            memset(plane, 0, (size_t)run * k->hw * sizeof *plane);
            for (int t = 0; t < 9; t++)
                cc_unshift_add_planes(plane, col + ((size_t)ch * 9 + t) * ld + (size_t)j * k->hw,
                                      run, k->h, k->w, t / 3 - 1, t % 3 - 1);
        }
    }
}

/* ---- pooling, one pair of rows at a time: r0, r1 the rows 2py and 2py+1 of a conv
 * output plane, pw windows; the outputs of row py of the pooled plane, and each one's
 * choice (kernels.h: enum kn_pool_choice), a byte. Each window as conv_window.h's
 * kn_window_pool (the CUDA backend's too). ---- */

static void cc_pool_row(const float *r0, const float *r1, int pw, float bias, int act, float *y,
                        uint8_t *choice, float *zmax) {
    for (int px = 0; px < pw; px++) {
        float zm;
        y[px] = kn_window_pool(act, r0[2 * px] + bias, r0[2 * px + 1] + bias, r1[2 * px] + bias,
                               r1[2 * px + 1] + bias, &choice[px], &zm);
        if (zmax) zmax[px] = zm;
    }
}

/* The gradient of a pooled row: d0, d1 = d0 + w (rows 2py, 2py+1 of dz, zero already)
 * get at each window's chosen element the activation's derivative there times g
 * (kn_window_grad); returns their sum. */
static float cc_unpool_row(float *d0, int pw, int w, int act, const float *g,
                           const uint8_t *choice, const float *y, const float *zmax) {
    float sum = 0.0f;
    for (int px = 0; px < pw; px++) {
        float v = kn_window_grad(act, g[px], choice[px], y ? y + px : NULL,
                                 zmax ? zmax + px : NULL);
        d0[2 * px + kn_window_offset(choice[px], w)] = v; /* past d0's end: into d1 */
        sum += v;
    }
    return sum;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CC_AVX2 __attribute__((target("avx2,fma")))

/* Lanes [0, n) of a mask (n may be <= 0 or >= 8). */
CC_AVX2 static __m256i cc_lanes(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The even and odd elements of the 16 floats lo, hi. */
CC_AVX2 static inline void cc_split2(__m256 lo, __m256 hi, __m256 *even, __m256 *odd) {
    __m256 e = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)); /* a0 a2 a8 a10 | a4 a6 a12 a14 */
    __m256 o = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* The even and odd elements of the 16 floats at p (which may run past the row: the
 * caller ignores those lanes, and the scratch has CC_PAD floats after its end). */
CC_AVX2 static inline void cc_split(const float *p, __m256 *even, __m256 *odd) {
    cc_split2(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), even, odd);
}

/* The ReLU pooling of eight windows, lane by lane: v0 .. v3 a window's four conv outputs
 * plus the bias, in the order of cc_pool_row (top left, top right, bottom left, bottom
 * right). The same comparisons as cc_pool_row's, so the same y, choice (in av's 32-bit
 * lanes) and zmax. */
CC_AVX2 static void cc_pool8_relu(__m256 v0, __m256 v1, __m256 v2, __m256 v3, __m256 *yv,
                                  __m256i *av, __m256 *zv) {
    const __m256 zero = _mm256_setzero_ps();
    __m256 m = v0, c;
    __m256i a = _mm256_set1_epi32(KN_POOL_TL);
    c = _mm256_cmp_ps(v1, m, _CMP_GT_OQ);
    a = _mm256_blendv_epi8(a, _mm256_set1_epi32(KN_POOL_TR), _mm256_castps_si256(c));
    m = _mm256_blendv_ps(m, v1, c);
    c = _mm256_cmp_ps(v2, m, _CMP_GT_OQ);
    a = _mm256_blendv_epi8(a, _mm256_set1_epi32(KN_POOL_BL), _mm256_castps_si256(c));
    m = _mm256_blendv_ps(m, v2, c);
    c = _mm256_cmp_ps(v3, m, _CMP_GT_OQ);
    a = _mm256_blendv_epi8(a, _mm256_set1_epi32(KN_POOL_BR), _mm256_castps_si256(c));
    m = _mm256_blendv_ps(m, v3, c);
    __m256 pos = _mm256_cmp_ps(m, zero, _CMP_GT_OQ);
    *yv = _mm256_blendv_ps(zero, m, pos);
    *zv = _mm256_blendv_ps(v0, m, pos);
    *av = _mm256_blendv_epi8(_mm256_set1_epi32(KN_POOL_ZERO), a, _mm256_castps_si256(pos));
}

/* Stores eight pooled outputs at y, choice (a byte each, from av's lanes) and zmax (if
 * not NULL) + px, of which `room` - px are writable and pw - px wanted: where eight do
 * not fit, the stores are masked, and choice's a copy (AMD's masked stores are slow:
 * elsewhere the lanes past pw are written and the next row overwrites them). */
CC_AVX2 static void cc_pool8_store(float *y, uint8_t *choice, float *zmax, int px, int pw,
                                   size_t room, __m256 yv, __m256i av, __m256 zv) {
    __m128i c16 = _mm_packus_epi32(_mm256_castsi256_si128(av), _mm256_extracti128_si256(av, 1));
    __m128i c8 = _mm_packus_epi16(c16, c16);
    if ((size_t)px + 8 <= room) {
        _mm256_storeu_ps(y + px, yv);
        _mm_storel_epi64((__m128i *)(choice + px), c8);
        if (zmax) _mm256_storeu_ps(zmax + px, zv);
    } else {
        __m256i keep = cc_lanes(pw - px);
        uint8_t b[16];
        _mm_storeu_si128((__m128i *)b, c8);
        _mm256_maskstore_ps(y + px, keep, yv);
        memcpy(choice + px, b, (size_t)(pw - px));
        if (zmax) _mm256_maskstore_ps(zmax + px, keep, zv);
    }
}

/* cc_pool_row for ReLU, eight windows at a time. y, choice and zmax have room for
 * `room` >= pw outputs (cc_pool8_store). */
CC_AVX2 static void cc_pool_row_relu_avx2(const float *r0, const float *r1, int pw, float bias,
                                          float *y, uint8_t *choice, float *zmax, size_t room) {
    const __m256 vb = _mm256_set1_ps(bias);
    for (int px = 0; px < pw; px += 8) {
        __m256 v0, v1, v2, v3, yv, zv;
        __m256i av;
        cc_split(r0 + 2 * px, &v0, &v1);
        cc_split(r1 + 2 * px, &v2, &v3);
        cc_pool8_relu(_mm256_add_ps(v0, vb), _mm256_add_ps(v1, vb), _mm256_add_ps(v2, vb),
                      _mm256_add_ps(v3, vb), &yv, &av, &zv);
        cc_pool8_store(y, choice, zmax, px, pw, room, yv, av, zv);
    }
}

/* Interleaves e and o into the 16 floats at p: e0 o0 e1 o1 ... */
CC_AVX2 static void cc_merge(float *p, __m256 e, __m256 o) {
    __m256 lo = _mm256_unpacklo_ps(e, o), hi = _mm256_unpackhi_ps(e, o);
    _mm256_storeu_ps(p, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_storeu_ps(p + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}

/* cc_merge's first n (0 < n <= 16) floats only, by masked stores: nothing past them is
 * touched. (Through a buffer and memcpy, the copy's loads waited for the buffer's two
 * stores to reach the cache.) */
CC_AVX2 static void cc_merge_n(float *p, __m256 e, __m256 o, int n) {
    __m256 lo = _mm256_unpacklo_ps(e, o), hi = _mm256_unpackhi_ps(e, o);
    _mm256_maskstore_ps(p, cc_lanes(n), _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_maskstore_ps(p + 8, cc_lanes(n - 8), _mm256_permute2f128_ps(lo, hi, 0x31));
}

/* The ReLU unpooling of eight windows: g and choice the windows' gradients and choices
 * (of which `avail` are readable: a masked load and a copy where fewer than eight are),
 * `keep` the lanes that are windows. Returns v, the gradient each window passes (g
 * where the choice is not KN_POOL_ZERO, that is where y > 0; else 0, and 0 in the lanes
 * not kept), and in d00 .. d11 the window's four elements of dz (v at the element
 * chosen, 0 elsewhere: top left, top right, bottom left, bottom right). */
CC_AVX2 static inline __m256 cc_unpool8_relu(const float *g, const uint8_t *choice, size_t avail,
                                             __m256i keep, __m256 *d00, __m256 *d01,
                                             __m256 *d10, __m256 *d11) {
    __m256 gv;
    __m128i c8;
    if (avail >= 8) {
        gv = _mm256_loadu_ps(g);
        c8 = _mm_loadl_epi64((const __m128i *)choice);
    } else {
        uint8_t b[16] = {0};
        memcpy(b, choice, avail);
        gv = _mm256_maskload_ps(g, keep);
        c8 = _mm_loadu_si128((const __m128i *)b);
    }
    __m256i av = _mm256_cvtepu8_epi32(c8);
    __m256i live = _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(KN_POOL_ZERO), av), keep);
    __m256 v = _mm256_and_ps(gv, _mm256_castsi256_ps(live));
#define CC_AT(c) \
    _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_cmpeq_epi32(av, _mm256_set1_epi32(c))))
    *d00 = CC_AT(KN_POOL_TL);
    *d01 = CC_AT(KN_POOL_TR);
    *d10 = CC_AT(KN_POOL_BL);
    *d11 = CC_AT(KN_POOL_BR);
#undef CC_AT
    return v;
}

/* The sum of the eight lanes of v, pairwise: ((l0 + l1) + (l2 + l3)) + ((l4 + l5) +
 * (l6 + l7)), in registers. */
CC_AVX2 static inline float cc_sum8(__m256 v) {
    __m256 s1 = _mm256_add_ps(v, _mm256_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
    __m256 s2 = _mm256_add_ps(s1, _mm256_permute_ps(s1, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(s2), _mm256_extractf128_ps(s2, 1)));
}

/* cc_unpool_row for ReLU: writes all of the first 2*pw columns of rows d0 and
 * d1 = d0 + w (no need to zero them first), and zeros past them, up to 16 - 2*(pw % 8)
 * floats into the rows that follow (which the caller writes after, or wants zero: the
 * scratch has CC_PAD floats after its end). The windows go right to left, so that what
 * the last ones put past the end of d0 (into d1) is overwritten by the first ones'.
 * g and choice have `room` >= pw readable elements. The sum is taken in eight lanes. */
CC_AVX2 static float cc_unpool_row_relu_avx2(float *d0, int pw, int w, const float *g,
                                             const uint8_t *choice, size_t room) {
    __m256 sum = _mm256_setzero_ps();
    for (int px = (pw - 1) / 8 * 8; px >= 0; px -= 8) {
        __m256 d00, d01, d10, d11;
        sum = _mm256_add_ps(sum, cc_unpool8_relu(g + px, choice + px, room - (size_t)px,
                                                 cc_lanes(pw - px), &d00, &d01, &d10, &d11));
        cc_merge(d0 + 2 * px, d00, d01);
        cc_merge(d0 + w + 2 * px, d10, d11);
    }
    return cc_sum8(sum);
}

/* cc_pool_row_relu_avx2 over the ph row pairs of a plane zp (h, w): y, choice, zmax of the
 * pooled plane, with room for `room` >= ph*pw outputs. One call per plane, so that the
 * rows' loop is in AVX2 code too. */
CC_AVX2 static void cc_pool_plane_relu_avx2(const float *zp, int ph, int pw, int w, float bias,
                                            float *y, uint8_t *choice, float *zmax, size_t room) {
    for (int py = 0; py < ph; py++) {
        size_t q = (size_t)py * pw;
        const float *r0 = zp + (size_t)2 * py * w;
        cc_pool_row_relu_avx2(r0, r0 + w, pw, bias, y + q, choice + q, zmax ? zmax + q : NULL,
                              room - q);
    }
}

/* cc_unpool_row_relu_avx2 over the ph row pairs of a plane d (h, w), g and choice its
 * pooled plane's, with `room` >= ph*pw readable; returns the sum of what it wrote. */
CC_AVX2 static float cc_unpool_plane_relu_avx2(float *d, int ph, int pw, int w, const float *g,
                                               const uint8_t *choice, size_t room) {
    float sum = 0.0f;
    for (int py = 0; py < ph; py++) {
        size_t q = (size_t)py * pw;
        sum += cc_unpool_row_relu_avx2(d + (size_t)2 * py * w, pw, w, g + q, choice + q, room - q);
    }
    return sum;
}
#endif

/* Whether the CPU has AVX2 and FMA (avx512 0) or AVX-512 F, BW and VL (1) and the environment
 * variable off is not "1": read once, into *have. */
static int cc_cpu_has(_Atomic int *have, int avx512, const char *off) {
    int h = atomic_load(have);
    if (h < 0) {
        h = 0;
#if defined(__x86_64__) && defined(__GNUC__)
        const char *v = getenv(off);
        h = !(v && *v == '1') && (avx512 ? __builtin_cpu_supports("avx512f") &&
                                                   __builtin_cpu_supports("avx512bw") &&
                                                   __builtin_cpu_supports("avx512vl")
                                          : __builtin_cpu_supports("avx2") &&
                                                __builtin_cpu_supports("fma"));
#else
        (void)avx512, (void)off;
#endif
        atomic_store(have, h);
    }
    return h;
}

/* 1 where the AVX2 forms above run: x86-64 CPUs with AVX2 and FMA, unless
 * TN_CPU_NO_SIMD=1 or kn_cpu_conv_simd(0) (the tests run both forms). */
static int cc_avx2(void) {
    static _Atomic int have = -1;
    return cc_cpu_has(&have, 0, "TN_CPU_NO_SIMD") && atomic_load(&cc_simd);
}

/* 1 where the AVX-512 forms run: cc_avx2() and a CPU with AVX-512 F, BW and VL (every
 * AVX-512 CPU but the Xeon Phi), unless TN_CPU_NO_AVX512=1 or kn_cpu_conv_avx512(0). */
static int cc_avx512(void) {
    static _Atomic int have = -1;
    return cc_cpu_has(&have, 1, "TN_CPU_NO_AVX512") && cc_avx2() && atomic_load(&cc_avx512_on);
}

/* y, choice, zmax of images [i0, i0+n) from their conv output z (f, n*hw), row stride ld:
 * pool(act(z + bias)). */
static void cc_pool_forward(const cc_block *k, const float *z, int ld, int i0, int n) {
    int w = k->w, ph = k->ph, pw = k->pw, act = k->act;
    for (int co = 0; co < k->f; co++) {
        float bias = k->bias[co];
        for (int j = 0; j < n; j++) {
            const float *zp = z + (size_t)co * ld + (size_t)j * k->hw;
            size_t o = cc_plane_at(k, co, i0 + j);
            float *zo = k->zmax_out ? k->zmax_out + o : NULL;
#if defined(__x86_64__) && defined(__GNUC__)
            if (act == KN_RELU && cc_avx2()) {
                cc_pool_plane_relu_avx2(zp, ph, pw, w, bias, k->y + o, k->choice_out + o, zo,
                                        cc_plane_room(k, co));
                continue;
            }
#endif
            for (int py = 0; py < ph; py++) {
                size_t q = (size_t)py * pw;
                const float *r0 = zp + (size_t)2 * py * w;
                cc_pool_row(r0, r0 + w, pw, bias, act, k->y + o + q, k->choice_out + o + q,
                            zo ? zo + q : NULL);
            }
        }
    }
}

/* dz (f, n*hw), row stride ld = n*hw, of images [i0, i0+n): the activation's derivative
 * times dy at each window's chosen element, 0 elsewhere; adds each plane's sum of dz to
 * its filter's db, image by image (so db's sums do not depend on the chunks). */
static void cc_pool_backward(const cc_block *k, float *dz, int ld, int i0, int n, float *db) {
    int w = k->w, h = k->h, ph = k->ph, pw = k->pw, act = k->act;
    int simd = act == KN_RELU && cc_avx2();
    size_t pp = (size_t)ph * pw;
    /* The SIMD form writes all of the pooled rows and columns; the dropped ones, and the
     * scalar form's untouched elements, must be 0. */
    if (!simd || (h & 1) || (w & 1)) memset(dz, 0, (size_t)k->f * ld * sizeof *dz);
    for (int co = 0; co < k->f; co++)
        for (int j = 0; j < n; j++) {
            size_t o = cc_plane_at(k, co, i0 + j);
            float *d = dz + (size_t)co * ld + (size_t)j * k->hw;
#if defined(__x86_64__) && defined(__GNUC__)
            if (simd) { /* room: up to the end of the pooled planes */
                db[co] += cc_unpool_plane_relu_avx2(d, ph, pw, w, k->dy + o, k->choice + o,
                                                    (size_t)k->f * k->b * pp - o);
                continue;
            }
#endif
            float sum = 0.0f;
            for (int py = 0; py < ph; py++) {
                size_t q = o + (size_t)py * pw;
                sum += cc_unpool_row(d + (size_t)2 * py * w, pw, w, act, k->dy + q, k->choice + q,
                                     k->yin + q, k->zmax ? k->zmax + q : NULL);
            }
            db[co] += sum;
        }
}

/* ---- Winograd F(2x2,3x3) (Lavin and Gray, 2016): a 2x2 tile of the conv output from
 * the 4x4 tile of the input around it, y = A^T [(G g G^T) .* (B^T d B)] A, with
 *
 *   B^T = | 1  0 -1  0 |    G = | 1    0    0  |    A^T = | 1  1  1  0 |
 *         | 0  1  1  0 |        | 1/2  1/2  1/2|          | 0  1 -1 -1 |
 *         | 0 -1  1  0 |        | 1/2 -1/2  1/2|
 *         | 0  1  0 -1 |        | 0    0    1  |
 *
 * Tile (ty, tx) of a plane makes output rows 2ty, 2ty+1 and columns 2tx, 2tx+1 from
 * input rows 2ty-1 .. 2ty+2 and columns 2tx-1 .. 2tx+2 (0 outside the plane); where h or
 * w is odd the last tiles are partial: their outputs past the plane are dropped. The sum
 * over input channels of the element-wise products is, for each position p of the 4x4,
 * one GEMM over a chunk's tiles:
 *
 *   M[p] (f, tiles) = U[p] (f, c) V[p] (c, tiles)
 *
 * with U the transformed filters (once a call) and V the transformed input tiles: 16
 * multiplications per tile, channel and filter against im2col's 36 for the same four
 * outputs. The backward pass runs these steps backwards: with dM = A dY A^T the
 * gradient of M from a tile's 2x2 outputs dY,
 *
 *   dU[p] (f, c) = sum over tiles of dM[p] V[p]^T     dV[p] (c, tiles) = U[p]^T dM[p]
 *
 * (16 GEMMs each), dW = G^T dU G for each filter, and dx the sum over the tiles of
 * B dV B^T, each 4x4 added where its input tile lies (tiles overlap by two rows and two
 * columns; what falls on the zero border is dropped): cc_wino_adj. dx is so the exact
 * gradient of the z computed, from the dM that dW takes too: no transform of dz's own
 * tiles, and the adjoint transform runs over the c input channels only.
 *
 * V and M keep a chunk's tiles in rows of ldt = nc*nt + CC_TILE_PAD floats: the AVX2
 * transforms work eight tiles of a row of tiles at a time, and those of a plane's last
 * group of eight store up to seven lanes past it, onto the tiles of the next plane
 * (written after: planes are done in order) or the padding. ---- */

#define CC_TILE_PAD 8 /* floats after a row of V or M */
#define CC_SPLIT_SLACK 16 /* floats after a split padded plane that its reads reach, zeroed
                             (cc_wino_pad_split_avx2; within cc_wino_pad_size's 32) */

/* U (16, f, c) of the filters W (f, c, 3, 3), or where transposed the same transforms
 * as U^T (16, c, f) (dx's: dV = U^T dM): u[p * us] (p = 4i + j, us = f*c) = (G g G^T)[i][j]
 * of each 3x3 kernel g. Rows [lo, hi) of U's (f, c) (transposed: (c, f)) matrices, a
 * row's kernels innermost from e0: each of a kernel's 16 stores goes to the float after
 * the previous kernel's. */
static void cc_wino_filters_rows(float *restrict U, const float *restrict W, int f, int c,
                                 int transposed, int lo, int hi, int e0) {
    size_t us = (size_t)f * c;
    int inner = transposed ? f : c;
    for (int r = lo; r < hi; r++)
        for (int e = e0; e < inner; e++) {
            int co = transposed ? e : r, ci = transposed ? r : e;
            const float *g = W + ((size_t)co * c + ci) * 9;
            float *u = U + (size_t)r * inner + e;
            float t[4][3];
            for (int j = 0; j < 3; j++) { /* t = G g */
                float g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
                t[0][j] = g0;
                t[1][j] = 0.5f * (g0 + g1 + g2);
                t[2][j] = 0.5f * (g0 - g1 + g2);
                t[3][j] = g2;
            }
            for (int i = 0; i < 4; i++) { /* u = t G^T */
                u[(size_t)(4 * i + 0) * us] = t[i][0];
                u[(size_t)(4 * i + 1) * us] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
                u[(size_t)(4 * i + 2) * us] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
                u[(size_t)(4 * i + 3) * us] = t[i][2];
            }
        }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* cc_wino_filters_rows, eight kernels of a row at a time: their taps gathered (a
 * row's next kernel is 9 floats on where not transposed, 9c where transposed), each of
 * the 16 stores eight consecutive floats of U. The same sums in the same order, so the
 * same bits; a row's last kernels past a multiple of eight by cc_wino_filters_rows. */
CC_AVX2 static void cc_wino_filters_rows_avx2(float *restrict U, const float *restrict W, int f,
                                              int c, int transposed, int lo, int hi) {
    size_t us = (size_t)f * c;
    int inner = transposed ? f : c, wide = inner / 8 * 8;
    const __m256i at = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                          _mm256_set1_epi32(transposed ? 9 * c : 9));
    const __m256 half = _mm256_set1_ps(0.5f);
    for (int r = lo; r < hi; r++) {
        for (int e = 0; e < wide; e += 8) {
            int co = transposed ? e : r, ci = transposed ? r : e;
            const float *g = W + ((size_t)co * c + ci) * 9;
            float *u = U + (size_t)r * inner + e;
            __m256 t[4][3];
            for (int j = 0; j < 3; j++) { /* t = G g */
                __m256 g0 = _mm256_i32gather_ps(g + j, at, 4);
                __m256 g1 = _mm256_i32gather_ps(g + 3 + j, at, 4);
                __m256 g2 = _mm256_i32gather_ps(g + 6 + j, at, 4);
                t[0][j] = g0;
                t[1][j] = _mm256_mul_ps(half, _mm256_add_ps(_mm256_add_ps(g0, g1), g2));
                t[2][j] = _mm256_mul_ps(half, _mm256_add_ps(_mm256_sub_ps(g0, g1), g2));
                t[3][j] = g2;
            }
            for (int i = 0; i < 4; i++) { /* u = t G^T */
                __m256 t0 = t[i][0], t1 = t[i][1], t2 = t[i][2];
                _mm256_storeu_ps(u + (size_t)(4 * i + 0) * us, t0);
                _mm256_storeu_ps(u + (size_t)(4 * i + 1) * us,
                                 _mm256_mul_ps(half, _mm256_add_ps(_mm256_add_ps(t0, t1), t2)));
                _mm256_storeu_ps(u + (size_t)(4 * i + 2) * us,
                                 _mm256_mul_ps(half, _mm256_add_ps(_mm256_sub_ps(t0, t1), t2)));
                _mm256_storeu_ps(u + (size_t)(4 * i + 3) * us, t2);
            }
        }
        if (wide < inner) cc_wino_filters_rows(U, W, f, c, transposed, r, r + 1, wide);
    }
}
#endif

/* dW (f, c, 3, 3) of 3x3 kernels [lo, hi) (of the f*c) from the gradient of their
 * transforms dU (16, f, c): dg = G^T du G, du[p * us] for p = 4i + j (consecutive
 * kernels' du are consecutive floats of each of dU's 16 rows). */
VECTORISE static void cc_wino_filter_grads(float *restrict dW, const float *restrict dU, size_t us,
                                           size_t lo, size_t hi) {
    for (size_t k = lo; k < hi; k++) {
        const float *du = dU + k;
        float *dg = dW + k * 9;
        float t[3][4];
        for (int j = 0; j < 4; j++) { /* t = G^T du */
            float x0 = du[(size_t)j * us], x1 = du[(size_t)(4 + j) * us];
            float x2 = du[(size_t)(8 + j) * us], x3 = du[(size_t)(12 + j) * us];
            t[0][j] = x0 + 0.5f * (x1 + x2);
            t[1][j] = 0.5f * (x1 - x2);
            t[2][j] = 0.5f * (x1 + x2) + x3;
        }
        for (int i = 0; i < 3; i++) { /* t G */
            dg[3 * i + 0] = t[i][0] + 0.5f * (t[i][1] + t[i][2]);
            dg[3 * i + 1] = 0.5f * (t[i][1] - t[i][2]);
            dg[3 * i + 2] = 0.5f * (t[i][1] + t[i][2]) + t[i][3];
        }
    }
}

/* Floats of a chunk's plane scratch: the padded plane of cc_wino_pad, (2th+2) rows of
 * 2tw+2, with room for the AVX2 transform's reads past its last row; also
 * cc_wino_adj's 16*tw. */
static size_t cc_wino_pad_size(int th, int tw) {
    size_t pad = (size_t)(2 * th + 2) * (2 * tw + 2), adj = (size_t)16 * tw;
    return (pad > adj ? pad : adj) + 32;
}

/* pad = the h x w plane at in with a border of zeros: row r, column x of the plane at
 * pad[(r + 1) * (2tw + 2) + x + 1], zeros around it up to 2th+2 rows and 2tw+2 columns. */
static void cc_wino_pad(float *restrict pad, const float *restrict in, int h, int w, int th,
                        int tw) {
    int pw = 2 * tw + 2, prows = 2 * th + 2;
    memset(pad, 0, (size_t)pw * sizeof *pad); /* row -1 */
    for (int r = 0; r < h; r++) {
        float *row = pad + (size_t)(r + 1) * pw;
        row[0] = 0.0f;
        memcpy(row + 1, in + (size_t)r * w, (size_t)w * sizeof *row);
        for (int x = w + 1; x < pw; x++) row[x] = 0.0f;
    }
    memset(pad + (size_t)(h + 1) * pw, 0, (size_t)(prows - h - 1) * pw * sizeof *pad);
}

/* v[p * vs + t] = (B^T d B)[p] of tile t = ty*tw + tx of the th x tw tiles of the padded
 * plane pad (cc_wino_pad). */
static void cc_wino_in(float *restrict v, size_t vs, const float *restrict pad, int th, int tw) {
    int pw = 2 * tw + 2;
    for (int ty = 0; ty < th; ty++) {
        const float *d0 = pad + (size_t)2 * ty * pw, *d1 = d0 + pw, *d2 = d1 + pw, *d3 = d2 + pw;
        float *o = v + (size_t)ty * tw;
        for (int tx = 0; tx < tw; tx++) {
            float r[4][4];
            for (int j = 0; j < 4; j++) { /* r = B^T d */
                int x = 2 * tx + j;
                r[0][j] = d0[x] - d2[x];
                r[1][j] = d1[x] + d2[x];
                r[2][j] = d2[x] - d1[x];
                r[3][j] = d1[x] - d3[x];
            }
            for (int i = 0; i < 4; i++) { /* r B */
                o[(size_t)(4 * i + 0) * vs + tx] = r[i][0] - r[i][2];
                o[(size_t)(4 * i + 1) * vs + tx] = r[i][1] + r[i][2];
                o[(size_t)(4 * i + 2) * vs + tx] = r[i][2] - r[i][1];
                o[(size_t)(4 * i + 3) * vs + tx] = r[i][1] - r[i][3];
            }
        }
    }
}

/* The 2x2 tile A^T m A of m[p * ms] (p = 4i + j): y[0], y[1] the first row, y[2], y[3]
 * the second. */
static inline void cc_wino_tile_out(float y[4], const float *m, size_t ms) {
    float s[2][4];
    for (int j = 0; j < 4; j++) {
        float m0 = m[(size_t)j * ms], m1 = m[(size_t)(4 + j) * ms];
        float m2 = m[(size_t)(8 + j) * ms], m3 = m[(size_t)(12 + j) * ms];
        s[0][j] = m0 + m1 + m2;
        s[1][j] = m1 - m2 - m3;
    }
    for (int i = 0; i < 2; i++) {
        y[2 * i] = s[i][0] + s[i][1] + s[i][2];
        y[2 * i + 1] = s[i][1] - s[i][2] - s[i][3];
    }
}

/* Rows 2ty0 .. h-1 of out, an h x w plane, = the tiles A^T m A of tile rows ty0 .. th-1,
 * m[p * ms + t] for tile t; a partial tile's outputs past the plane are dropped. */
static void cc_wino_out(float *restrict out, int h, int w, const float *restrict m, size_t ms,
                        int th, int tw, int ty0) {
    for (int ty = ty0; ty < th; ty++) {
        const float *mt = m + (size_t)ty * tw;
        float *o0 = out + (size_t)2 * ty * w, *o1 = o0 + w;
        for (int tx = 0; tx < tw; tx++) {
            float y[4];
            int x = 2 * tx;
            cc_wino_tile_out(y, mt + tx, ms);
            o0[x] = y[0];
            if (x + 1 < w) o0[x + 1] = y[1];
            if (2 * ty + 1 < h) {
                o1[x] = y[2];
                if (x + 1 < w) o1[x + 1] = y[3];
            }
        }
    }
}

/* m[p * ms + t] = (A dY A^T)[p] of each 2x2 tile t of the h x w plane dY at in (0 past
 * the plane in a partial tile): what the products of tile t get back from its outputs. */
static void cc_wino_grad_tiles(float *restrict m, size_t ms, const float *restrict in, int h,
                               int w, int th, int tw) {
    for (int ty = 0; ty < th; ty++) {
        const float *r0 = in + (size_t)2 * ty * w, *r1 = r0 + w;
        int two_rows = 2 * ty + 1 < h;
        float *mt = m + (size_t)ty * tw;
        for (int tx = 0; tx < tw; tx++) {
            int x = 2 * tx, two_cols = x + 1 < w;
            float y00 = r0[x], y01 = two_cols ? r0[x + 1] : 0.0f;
            float y10 = two_rows ? r1[x] : 0.0f, y11 = two_rows && two_cols ? r1[x + 1] : 0.0f;
            float a[4][2] = {{y00, y01}, {y00 + y10, y01 + y11}, {y00 - y10, y01 - y11},
                             {-y10, -y11}}; /* A dY */
            for (int i = 0; i < 4; i++) { /* (A dY) A^T */
                mt[(size_t)(4 * i + 0) * ms + tx] = a[i][0];
                mt[(size_t)(4 * i + 1) * ms + tx] = a[i][0] + a[i][1];
                mt[(size_t)(4 * i + 2) * ms + tx] = a[i][0] - a[i][1];
                mt[(size_t)(4 * i + 3) * ms + tx] = -a[i][1];
            }
        }
    }
}

/* Output row o (w floats) of dx from a padded row's four values of each of the tw tiles,
 * a[l * tw + u] (column l of tile u, after B down the columns and the rows above
 * added): B^T across them makes the tile's four columns, of which the first and last
 * overlap the neighbours' (out column 2u is the tile's second plus the left tile's
 * fourth, 2u+1 its third plus the right tile's first; the first and last padded
 * columns are dropped). The sums of cc_wino_adj_avx2, lane by lane, in its order: 0
 * where it shifts a zero in. */
static void cc_wino_adj_row(float *restrict o, int w, int tw, const float *restrict a) {
    const float *a0 = a, *a1 = a0 + tw, *a2 = a1 + tw, *a3 = a2 + tw;
    for (int u = 0; u < tw; u++) {
        o[2 * u] = ((a1[u] - a2[u]) + a3[u]) - (u > 0 ? a3[u - 1] : 0.0f);
        if (2 * u + 1 < w)
            o[2 * u + 1] = ((a1[u] - a0[u]) + a2[u]) + (u + 1 < tw ? a0[u + 1] : 0.0f);
    }
}

/* The adjoint of cc_wino_in, into dx's h x w plane out: out = the sum over the th x tw
 * tiles of B dv B^T, dv[p] = m[p * ms + t] of tile t = ty*tw + tx, each 4x4 added at
 * rows 2ty-1 .. 2ty+2 and columns 2tx-1 .. 2tx+2 (what falls on the zero border is
 * dropped). B runs down each tile's columns first: padded row 2ty is then the first
 * row of tile row ty plus the third of the row above (carried in c2), padded row 2ty+1
 * the second plus the fourth (c3, kept as its negation's operand); a padded row's
 * columns are cc_wino_adj_row's. scr has 16*tw floats. The same sums in the same order
 * as cc_wino_adj_avx2: the same bits. */
static void cc_wino_adj(float *restrict out, int h, int w, const float *restrict m, size_t ms,
                        int th, int tw, float *restrict scr) {
    size_t n = (size_t)4 * tw;
    float *c2 = scr, *c3 = c2 + n, *e = c3 + n, *o = e + n; /* [l * tw + u] */
    memset(c2, 0, 2 * n * sizeof *c2);
    for (int ty = 0; ty < th; ty++) {
        const float *mt = m + (size_t)ty * tw;
        for (int l = 0; l < 4; l++)
            for (int u = 0; u < tw; u++) {
                float q0 = mt[(size_t)l * ms + u], q1 = mt[(size_t)(4 + l) * ms + u];
                float q2 = mt[(size_t)(8 + l) * ms + u], q3 = mt[(size_t)(12 + l) * ms + u];
                size_t i = (size_t)l * tw + u;
                e[i] = q0 + c2[i];
                o[i] = ((q1 - q2) + q3) - c3[i];
                c2[i] = (q1 - q0) + q2;
                c3[i] = q3;
            }
        if (ty > 0) cc_wino_adj_row(out + (size_t)(2 * ty - 1) * w, w, tw, e);
        cc_wino_adj_row(out + (size_t)2 * ty * w, w, tw, o); /* 2ty <= h - 1 */
    }
    if (2 * th - 1 < h) cc_wino_adj_row(out + (size_t)(2 * th - 1) * w, w, tw, c2);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* Zeros the n floats at p, eight at a time (a plane's few rows: no call). */
CC_AVX2 static inline void cc_zero_avx2(float *p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(p + i, _mm256_setzero_ps());
    for (; i < n; i++) p[i] = 0.0f;
}

/* cc_wino_pad with each padded row's columns split, for cc_wino_in_avx2: row r of the
 * plane at pad + (r + 1) * (2tw + 2) as its even padded columns 0, 2, .., 2tw (E: 0, then
 * the plane's odd columns) and then its odd ones 1, 3, .., 2tw + 1 (O: the plane's even
 * columns), each tw + 1 floats, zeros past the plane; rows of zeros around it as
 * cc_wino_pad. Each of the plane's rows is split once here, where the transform would
 * split it twice (two tile rows take it). Stores up to 6 floats past a row, into the next
 * (written after; past the last, into the rows of zeros after it, written after too);
 * and zeros the CC_SPLIT_SLACK floats after the padded plane, which the sixteen-lane
 * reads of its last rows reach (cc_direct_dw16 multiplies them by zeros: stale NaN
 * there would make NaN). */
CC_AVX2 static void cc_wino_pad_split_avx2(float *restrict pad, const float *restrict in, int h,
                                           int w, int th, int tw) {
    int pw = 2 * tw + 2, prows = 2 * th + 2;
    int tail = (w - 1) / 16 * 16; /* the last group of 16 columns, cut by the lanes below */
    const __m256 keep_lo = _mm256_castsi256_ps(cc_lanes(w - tail)),
                 keep_hi = _mm256_castsi256_ps(cc_lanes(w - tail - 8));
    cc_zero_avx2(pad, (size_t)pw); /* row -1 */
    for (int r = 0; r < h; r++) {
        const float *x = in + (size_t)r * w;
        float *e = pad + (size_t)(r + 1) * pw, *o = e + tw + 1;
        for (int c = tail; c >= 0; c -= 16) { /* the plane's columns c .. c + 15; the last
                                                 group's E store reaches into O, first */
            __m256 lo, hi, xe, xo;
            if (c + 16 <= w) {
                lo = _mm256_loadu_ps(x + c);
                hi = _mm256_loadu_ps(x + c + 8);
            } else {
                const float *p = x + c;
                if ((size_t)r * w + c + 16 > (size_t)h * w) { /* past it: another's, or none
                                                                 (masked: a plane's last
                                                                 rows, where w < 16) */
                    lo = _mm256_maskload_ps(p, cc_lanes(w - c));
                    hi = _mm256_maskload_ps(p + 8, cc_lanes(w - c - 8));
                } else {
                    lo = _mm256_and_ps(_mm256_loadu_ps(p), keep_lo); /* 16 of the plane */
                    hi = _mm256_and_ps(_mm256_loadu_ps(p + 8), keep_hi);
                }
            }
            cc_split2(lo, hi, &xe, &xo);
            _mm256_storeu_ps(e + 1 + c / 2, xo); /* E[m] = x[2m - 1] */
            _mm256_storeu_ps(o + c / 2, xe);     /* O[m] = x[2m], over E's stores past E */
        }
        e[0] = 0.0f;
        o[tw] = 0.0f; /* x[2tw], past the plane (and the stores where w % 16 is 0 or 15) */
    }
    cc_zero_avx2(pad + (size_t)(h + 1) * pw, (size_t)(prows - h - 1) * pw + CC_SPLIT_SLACK);
}

/* B^T d B of eight tiles, d their 4x4 elements e[row][column] (taken), into the 16 rows
 * of V at o, vs apart: B^T across the rows, then B across the columns, as cc_wino_in. */
CC_AVX2 static inline __attribute__((always_inline)) void cc_wino_in8(__m256 e[4][4], float *o,
                                                                      size_t vs) {
    for (int j = 0; j < 4; j++) { /* B^T d */
        __m256 d0 = e[0][j], d1 = e[1][j], d2 = e[2][j], d3 = e[3][j];
        e[0][j] = _mm256_sub_ps(d0, d2);
        e[1][j] = _mm256_add_ps(d1, d2);
        e[2][j] = _mm256_sub_ps(d2, d1);
        e[3][j] = _mm256_sub_ps(d1, d3);
    }
    for (int i = 0; i < 4; i++) { /* (B^T d) B */
        float *q = o + (size_t)4 * i * vs;
        _mm256_storeu_ps(q, _mm256_sub_ps(e[i][0], e[i][2]));
        _mm256_storeu_ps(q + vs, _mm256_add_ps(e[i][1], e[i][2]));
        _mm256_storeu_ps(q + 2 * vs, _mm256_sub_ps(e[i][2], e[i][1]));
        _mm256_storeu_ps(q + 3 * vs, _mm256_sub_ps(e[i][1], e[i][3]));
    }
}

/* cc_wino_in, eight tiles of a row at a time, from the split padded plane of
 * cc_wino_pad_split_avx2: a tile row's columns 2tx, 2tx+1, 2tx+2, 2tx+3 of each of its
 * four rows are E and O at tx and at tx + 1, four loads with no shuffles; B^T across
 * the rows, then B across the columns. The same sums as cc_wino_in, so the same bits. A
 * row's last eight store up to 7 lanes past it (see CC_TILE_PAD); the padded plane has
 * room for the reads past its last row. */
CC_AVX2 static void cc_wino_in_avx2(float *restrict v, size_t vs, const float *restrict pad,
                                    int th, int tw) {
    int pw = 2 * tw + 2;
    for (int ty = 0; ty < th; ty++) {
        const float *d = pad + (size_t)2 * ty * pw;
        float *o = v + (size_t)ty * tw;
        for (int tx = 0; tx < tw; tx += 8) {
            __m256 e[4][4]; /* [row][column]: columns 2tx, 2tx+1, 2tx+2, 2tx+3 of a tile */
            for (int i = 0; i < 4; i++) {
                const float *re = d + (size_t)i * pw + tx, *ro = re + tw + 1;
                e[i][0] = _mm256_loadu_ps(re);
                e[i][1] = _mm256_loadu_ps(ro);
                e[i][2] = _mm256_loadu_ps(re + 1);
                e[i][3] = _mm256_loadu_ps(ro + 1);
            }
            cc_wino_in8(e, o + tx, vs);
        }
    }
}

/* Padded row pr of the h x w plane at in (w <= 16), as cc_wino_pad_split_avx2 splits
 * it, in registers: q[0] = E[0..7], q[1] = O[0..7], q[2] = E[1..8], q[3] = O[1..8]
 * (E[m] = x[2m - 1], O[m] = x[2m], zero outside the plane). */
CC_AVX2 static inline __attribute__((always_inline)) void
cc_split_row16(const float *restrict in, int h, int w, int pr, __m256 keep_lo, __m256 keep_hi,
               __m256 q[4]) {
    int r = pr - 1;
    if (r < 0 || r >= h) {
        q[0] = q[1] = q[2] = q[3] = _mm256_setzero_ps();
        return;
    }
    const float *p = in + (size_t)r * w;
    __m256 lo, hi, xe, xo;
    if ((size_t)r * w + 16 <= (size_t)h * w) { /* 16 of the plane: the rest masked off */
        lo = _mm256_and_ps(_mm256_loadu_ps(p), keep_lo);
        hi = _mm256_and_ps(_mm256_loadu_ps(p + 8), keep_hi);
    } else { /* a last row: nothing past the plane is read */
        lo = _mm256_maskload_ps(p, cc_lanes(w));
        hi = _mm256_maskload_ps(p + 8, cc_lanes(w - 8));
    }
    cc_split2(lo, hi, &xe, &xo); /* x[0, 2, .., 14], x[1, 3, .., 15] */
    const __m256i right = _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6),
                  left = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 0);
    q[0] = _mm256_blend_ps(_mm256_permutevar8x32_ps(xo, right), _mm256_setzero_ps(), 0x01);
    q[1] = xe;
    q[2] = xo;
    q[3] = _mm256_blend_ps(_mm256_permutevar8x32_ps(xe, left), _mm256_setzero_ps(), 0x80);
}

/* cc_wino_in_avx2 straight from a plane of at most 16 columns (a tile row is one vector
 * of eight tiles), with no padded plane: each padded row split in registers
 * (cc_split_row16), once for the two tile rows that share it. Stored and loaded again
 * (cc_wino_pad_split_avx2), the rows cost more than the transform: a load that spans
 * two of the stores waits for both to reach the cache. The same sums (cc_wino_in8), so
 * the same bits; as there, a row's last eight store up to 7 lanes past it. */
CC_AVX2 static void cc_wino_in16_avx2(float *restrict v, size_t vs, const float *restrict in,
                                      int h, int w, int th, int tw) {
    const __m256 keep_lo = _mm256_castsi256_ps(cc_lanes(w)),
                 keep_hi = _mm256_castsi256_ps(cc_lanes(w - 8));
    __m256 e[4][4]; /* [row][column] of the tile row's padded rows, as cc_wino_in_avx2's */
    cc_split_row16(in, h, w, 0, keep_lo, keep_hi, e[0]);
    cc_split_row16(in, h, w, 1, keep_lo, keep_hi, e[1]);
    for (int ty = 0; ty < th; ty++) {
        __m256 q[4][4];
        for (int j = 0; j < 4; j++) q[0][j] = e[0][j], q[1][j] = e[1][j];
        cc_split_row16(in, h, w, 2 * ty + 2, keep_lo, keep_hi, q[2]);
        cc_split_row16(in, h, w, 2 * ty + 3, keep_lo, keep_hi, q[3]);
        for (int j = 0; j < 4; j++) e[0][j] = q[2][j], e[1][j] = q[3][j]; /* the next's */
        cc_wino_in8(q, v + (size_t)ty * tw, vs);
    }
}

/* The direct convolution's sums of one filter over eight pooling windows (row py,
 * windows px .. px+7), channel by channel: *tl, *tr, *bl, *br += the conv outputs at each
 * window's top left, top right, bottom left and bottom right, from the channel's split
 * padded plane d (cc_wino_pad_split_avx2; rows pwid floats apart, E then O in a row,
 * tw + 1 each) and its 3x3 weights wt. An output at even column 2px takes padded
 * columns 2px, 2px+1, 2px+2 of its three rows, which are E[px], O[px], E[px+1]; one at
 * odd column 2px+1 takes O[px], E[px+1], O[px+1]: eight windows' worth a load, no
 * shuffles. Taps in order (dy, dx), each an FMA. */
CC_AVX2 static inline __attribute__((always_inline)) void
cc_direct8(const float *d, int pwid, int tw, const float *wt, __m256 *tl, __m256 *tr, __m256 *bl,
           __m256 *br) {
    for (int dy = 0; dy < 3; dy++) {
        const float *e0 = d + (size_t)dy * pwid, *o0 = e0 + tw + 1; /* rows 2py+dy, +1 */
        const float *e1 = e0 + pwid, *o1 = e1 + tw + 1;
        __m256 w0 = _mm256_broadcast_ss(wt + 3 * dy), w1 = _mm256_broadcast_ss(wt + 3 * dy + 1),
               w2 = _mm256_broadcast_ss(wt + 3 * dy + 2);
        __m256 a = _mm256_loadu_ps(e0), b = _mm256_loadu_ps(o0), c = _mm256_loadu_ps(e0 + 1),
               e = _mm256_loadu_ps(o0 + 1);
        *tl = _mm256_fmadd_ps(w2, c, _mm256_fmadd_ps(w1, b, _mm256_fmadd_ps(w0, a, *tl)));
        *tr = _mm256_fmadd_ps(w2, e, _mm256_fmadd_ps(w1, c, _mm256_fmadd_ps(w0, b, *tr)));
        a = _mm256_loadu_ps(e1), b = _mm256_loadu_ps(o1), c = _mm256_loadu_ps(e1 + 1),
        e = _mm256_loadu_ps(o1 + 1);
        *bl = _mm256_fmadd_ps(w2, c, _mm256_fmadd_ps(w1, b, _mm256_fmadd_ps(w0, a, *bl)));
        *br = _mm256_fmadd_ps(w2, e, _mm256_fmadd_ps(w1, c, _mm256_fmadd_ps(w0, b, *br)));
    }
}

/* Floats of the split padded planes of an image's c channels (cc_direct_image_avx2). */
static size_t cc_direct_pad_floats(int c, int th, int tw) {
    return (size_t)c * cc_wino_pad_size(th, tw);
}

/* Image i's c channel planes split and padded (cc_wino_pad_split_avx2) into pads, one
 * cc_wino_pad_size apart: what the direct convolution's passes read. */
CC_AVX2 static void cc_direct_pads(const cc_block *k, int i, float *pads) {
    size_t psz = cc_wino_pad_size(k->ph, k->pw);
    const float *img = k->x + (size_t)i * k->istride;
    for (int ch = 0; ch < k->c; ch++)
        cc_wino_pad_split_avx2(pads + (size_t)ch * psz, img + (size_t)ch * k->cstride, k->h,
                               k->w, k->ph, k->pw);
}

/* The forward pass of image i where k->direct (ReLU, h and w even): each channel's plane
 * split and padded once (cc_wino_pad_split_avx2, into pads), then for two filters at a
 * time, row of windows by row, eight windows at a time, the conv outputs of each
 * window's four elements summed in registers (cc_direct8: the loads serve both filters,
 * and the eight sums in flight keep both FMA units busy), the bias added and pooled
 * there (cc_pool8_relu): z is never stored. Where k->gemm_only, the padded copies and
 * the sums alone (the block's products), into `sink`. */
CC_AVX2 static void cc_direct_image_avx2(const cc_block *k, int i, float *pads, float *sink) {
    int c = k->c, f = k->f, ph = k->ph, pw = k->pw, th = ph, tw = pw, pwid = 2 * tw + 2;
    size_t psz = cc_wino_pad_size(th, tw), plane = (size_t)ph * pw;
    cc_direct_pads(k, i, pads);
    __m256 keep = _mm256_setzero_ps();
    for (int co = 0; co < f; co += 2) {
        int two = co + 1 < f;
        const float *wa = k->W + (size_t)co * c * 9, *wb = two ? wa + (size_t)c * 9 : wa;
        const __m256 ba = _mm256_set1_ps(k->bias[co]), bb = _mm256_set1_ps(k->bias[co + two]);
        size_t oa = cc_plane_at(k, co, i), ob = cc_plane_at(k, co + two, i);
        /* the first filter's last row must not spill into the second's, written already */
        size_t room_a = two ? plane : cc_plane_room(k, co), room_b = cc_plane_room(k, co + two);
        for (int py = 0; py < ph; py++) {
            size_t q = (size_t)py * pw;
            for (int px = 0; px < pw; px += 8) {
                __m256 tl = _mm256_setzero_ps(), tr = tl, bl = tl, br = tl;
                __m256 tl2 = tl, tr2 = tl, bl2 = tl, br2 = tl;
                for (int ch = 0; ch < c; ch++) {
                    const float *d = pads + (size_t)ch * psz + (size_t)2 * py * pwid + px;
                    cc_direct8(d, pwid, tw, wa + (size_t)ch * 9, &tl, &tr, &bl, &br);
                    cc_direct8(d, pwid, tw, wb + (size_t)ch * 9, &tl2, &tr2, &bl2, &br2);
                }
                if (k->gemm_only) {
                    keep = _mm256_add_ps(keep, _mm256_add_ps(_mm256_add_ps(tl, tr), _mm256_add_ps(bl, br)));
                    keep = _mm256_add_ps(keep, _mm256_add_ps(_mm256_add_ps(tl2, tr2), _mm256_add_ps(bl2, br2)));
                    continue;
                }
                __m256 yv, zv;
                __m256i av;
                cc_pool8_relu(_mm256_add_ps(tl, ba), _mm256_add_ps(tr, ba), _mm256_add_ps(bl, ba),
                              _mm256_add_ps(br, ba), &yv, &av, &zv);
                cc_pool8_store(k->y + oa + q, k->choice_out + oa + q,
                               k->zmax_out ? k->zmax_out + oa + q : NULL, px, pw, room_a - q,
                               yv, av, zv);
                if (!two) continue;
                cc_pool8_relu(_mm256_add_ps(tl2, bb), _mm256_add_ps(tr2, bb),
                              _mm256_add_ps(bl2, bb), _mm256_add_ps(br2, bb), &yv, &av, &zv);
                cc_pool8_store(k->y + ob + q, k->choice_out + ob + q,
                               k->zmax_out ? k->zmax_out + ob + q : NULL, px, pw, room_b - q,
                               yv, av, zv);
            }
        }
    }
    _mm256_storeu_ps(sink, keep);
}

#define CC_DY_AHEAD 1024 /* bytes: how far ahead the direct dW prefetches dy and the choices
                            (written long before: without it the model's first layer's
                            backward pass took 1.07 ms a step on an AMD EPYC, with it 0.77;
                            512 and 2048 no better) */
#define CC_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))

/* What sixteen windows' elements read from two rows of a split padded plane (r at row,
 * the next pwid floats on; E then O in a row, tw + 1 each): per row E[px], O[px],
 * E[px+1], O[px+1] (the columns under taps 0, 1, 2 of even outputs are the first three,
 * of odd outputs the last three), v[0..3] for the first row and v[4..7] the second. */
CC_AVX512 static inline __attribute__((always_inline)) void
cc_window_rows16(const float *r, int pwid, int tw, __m512 v[8]) {
    for (int i = 0; i < 2; i++) {
        const float *e = r + (size_t)i * pwid, *o = e + tw + 1;
        v[4 * i] = _mm512_loadu_ps(e);
        v[4 * i + 1] = _mm512_loadu_ps(o);
        v[4 * i + 2] = _mm512_loadu_ps(e + 1);
        v[4 * i + 3] = _mm512_loadu_ps(o + 1);
    }
}

/* cc_direct8 for sixteen windows and four filters at once (AVX-512): the input vectors
 * loaded once serve all four, and the sixteen sums in flight keep both FMA units busy.
 * acc[4 * j + e]: filter j's window element e (top left, top right, bottom left, bottom
 * right). Each lane the same FMAs in the same order as cc_direct8's, so the same bits. */
CC_AVX512 static inline __attribute__((always_inline)) void
cc_direct16x4(const float *d, int pwid, int tw, const float *const wt[4], __m512 acc[16]) {
    for (int dy = 0; dy < 3; dy++) {
        __m512 v[8];
        cc_window_rows16(d + (size_t)dy * pwid, pwid, tw, v);
        __m512 a0 = v[0], b0 = v[1], c0 = v[2], f0 = v[3], a1 = v[4], b1 = v[5], c1 = v[6],
               f1 = v[7];
        for (int j = 0; j < 4; j++) {
            __m512 w0 = _mm512_set1_ps(wt[j][3 * dy]), w1 = _mm512_set1_ps(wt[j][3 * dy + 1]),
                   w2 = _mm512_set1_ps(wt[j][3 * dy + 2]);
            __m512 *q = acc + 4 * j;
            q[0] = _mm512_fmadd_ps(w2, c0, _mm512_fmadd_ps(w1, b0, _mm512_fmadd_ps(w0, a0, q[0])));
            q[1] = _mm512_fmadd_ps(w2, f0, _mm512_fmadd_ps(w1, c0, _mm512_fmadd_ps(w0, b0, q[1])));
            q[2] = _mm512_fmadd_ps(w2, c1, _mm512_fmadd_ps(w1, b1, _mm512_fmadd_ps(w0, a1, q[2])));
            q[3] = _mm512_fmadd_ps(w2, f1, _mm512_fmadd_ps(w1, c1, _mm512_fmadd_ps(w0, b1, q[3])));
        }
    }
}

/* cc_pool8_relu for sixteen windows (AVX-512), the same comparisons lane by lane: y, the
 * choices (a byte each in cv) and zmax. */
CC_AVX512 static inline __attribute__((always_inline)) void
cc_pool16_relu(__m512 v0, __m512 v1, __m512 v2, __m512 v3, __m512 *yv, __m128i *cv, __m512 *zv) {
    const __m512 zero = _mm512_setzero_ps();
    __m512 m = v0;
    __m512i a = _mm512_set1_epi32(KN_POOL_TL);
    __mmask16 c = _mm512_cmp_ps_mask(v1, m, _CMP_GT_OQ);
    a = _mm512_mask_blend_epi32(c, a, _mm512_set1_epi32(KN_POOL_TR));
    m = _mm512_mask_blend_ps(c, m, v1);
    c = _mm512_cmp_ps_mask(v2, m, _CMP_GT_OQ);
    a = _mm512_mask_blend_epi32(c, a, _mm512_set1_epi32(KN_POOL_BL));
    m = _mm512_mask_blend_ps(c, m, v2);
    c = _mm512_cmp_ps_mask(v3, m, _CMP_GT_OQ);
    a = _mm512_mask_blend_epi32(c, a, _mm512_set1_epi32(KN_POOL_BR));
    m = _mm512_mask_blend_ps(c, m, v3);
    __mmask16 pos = _mm512_cmp_ps_mask(m, zero, _CMP_GT_OQ);
    *yv = _mm512_mask_blend_ps(pos, zero, m);
    *zv = _mm512_mask_blend_ps(pos, v0, m);
    *cv = _mm512_cvtepi32_epi8(_mm512_mask_blend_epi32(pos, _mm512_set1_epi32(KN_POOL_ZERO), a));
}

/* cc_pool8_relu and cc_pool8_store for sixteen windows (AVX-512), the same comparisons:
 * y, choice and zmax (if not NULL) of the windows at px, of which `room` - px are
 * writable and pw - px wanted. Where sixteen fit they are stored whole (those past pw
 * land in rows written after); else through a buffer (AMD's masked stores, and its
 * narrowing stores to memory, are slow). */
CC_AVX512 static inline void cc_pool16_relu_store(__m512 v0, __m512 v1, __m512 v2, __m512 v3,
                                                  float *y, uint8_t *choice, float *zmax,
                                                  int px, int pw, size_t room) {
    __m512 yv, zv;
    __m128i cv;
    cc_pool16_relu(v0, v1, v2, v3, &yv, &cv, &zv);
    if ((size_t)px + 16 <= room) {
        _mm512_storeu_ps(y + px, yv);
        _mm_storeu_si128((__m128i *)(choice + px), cv);
        if (zmax) _mm512_storeu_ps(zmax + px, zv);
        return;
    }
    size_t n = (size_t)(pw - px < 16 ? pw - px : 16);
    float fb[16];
    uint8_t cb[16];
    _mm512_storeu_ps(fb, yv);
    memcpy(y + px, fb, n * sizeof *fb);
    _mm_storeu_si128((__m128i *)cb, cv);
    memcpy(choice + px, cb, n);
    if (zmax) {
        _mm512_storeu_ps(fb, zv);
        memcpy(zmax + px, fb, n * sizeof *fb);
    }
}

/* cc_direct_image_avx2 with AVX-512: four filters at a time, sixteen windows at a time;
 * a plane's stores run past a row only into its next (so not past its last: the four
 * filters' planes are written row by row together). The same sums, bias and
 * comparisons lane by lane, so the same bits. */
CC_AVX512 static void cc_direct_image_avx512(const cc_block *k, int i, float *pads, float *sink) {
    int c = k->c, f = k->f, ph = k->ph, pw = k->pw, th = ph, tw = pw, pwid = 2 * tw + 2;
    size_t psz = cc_wino_pad_size(th, tw);
    cc_direct_pads(k, i, pads);
    __m512 keep = _mm512_setzero_ps();
    for (int co = 0; co < f; co += 4) {
        int nf = f - co < 4 ? f - co : 4; /* filters of this four (the rest repeat the last) */
        const float *wf[4];
        for (int j = 0; j < 4; j++) wf[j] = k->W + (size_t)(co + (j < nf ? j : nf - 1)) * c * 9;
        for (int py = 0; py < ph; py++)
            for (int px = 0; px < pw; px += 16) {
                __m512 acc[16];
                for (int j = 0; j < 16; j++) acc[j] = _mm512_setzero_ps();
                for (int ch = 0; ch < c; ch++) {
                    const float *wt[4];
                    for (int j = 0; j < 4; j++) wt[j] = wf[j] + (size_t)ch * 9;
                    cc_direct16x4(pads + (size_t)ch * psz + (size_t)2 * py * pwid + px, pwid, tw,
                                  wt, acc);
                }
                if (k->gemm_only) {
                    for (int j = 0; j < 16; j++) keep = _mm512_add_ps(keep, acc[j]);
                    continue;
                }
                size_t q = (size_t)py * pw, room = (size_t)ph * pw - q;
                for (int j = 0; j < nf; j++) {
                    const __m512 b = _mm512_set1_ps(k->bias[co + j]);
                    size_t o = cc_plane_at(k, co + j, i) + q;
                    cc_pool16_relu_store(_mm512_add_ps(acc[4 * j], b), _mm512_add_ps(acc[4 * j + 1], b),
                                         _mm512_add_ps(acc[4 * j + 2], b),
                                         _mm512_add_ps(acc[4 * j + 3], b), k->y + o,
                                         k->choice_out + o, k->zmax_out ? k->zmax_out + o : NULL,
                                         px, pw, room);
                }
            }
    }
    _mm512_storeu_ps(sink, keep);
}

/* The weight gradient's sums of one filter and channel over sixteen windows (row py,
 * windows px .. px+15): acc[3 dy + dx] += the gradient at each window's element e
 * (g[e]: zero but at the element pooling chose) times the input under tap (dy, dx) of
 * that element, from the split padded plane d (as cc_direct16x4 reads it), elements in
 * order, taps in order. */
CC_AVX512 static inline __attribute__((always_inline)) void
cc_direct_dw16(const float *d, int pwid, int tw, const __m512 g[4], __m512 acc[9]) {
    for (int dy = 0; dy < 3; dy++) {
        __m512 v[8];
        cc_window_rows16(d + (size_t)dy * pwid, pwid, tw, v);
        __m512 a0 = v[0], b0 = v[1], c0 = v[2], f0 = v[3], a1 = v[4], b1 = v[5], c1 = v[6],
               f1 = v[7];
        __m512 *q = acc + 3 * dy;
        q[0] = _mm512_fmadd_ps(g[3], b1, _mm512_fmadd_ps(g[2], a1, _mm512_fmadd_ps(g[1], b0, _mm512_fmadd_ps(g[0], a0, q[0]))));
        q[1] = _mm512_fmadd_ps(g[3], c1, _mm512_fmadd_ps(g[2], b1, _mm512_fmadd_ps(g[1], c0, _mm512_fmadd_ps(g[0], b0, q[1]))));
        q[2] = _mm512_fmadd_ps(g[3], f1, _mm512_fmadd_ps(g[2], c1, _mm512_fmadd_ps(g[1], f0, _mm512_fmadd_ps(g[0], c0, q[2]))));
    }
}

/* The backward pass of image i where k->direct_dw (no dx: a first layer): each channel's
 * plane split and padded as forward, then for each filter, sixteen windows at a time,
 * the pooled gradient dy put at the element its window chose (ReLU: nowhere where it
 * chose none) and multiplied into the input under each tap (cc_direct_dw16): dz is
 * never made, nor im2col. acc (f, 9c, 16) and dbacc (f, 16) gather the group's sums in
 * sixteen lanes (cc_direct_dw_finish). Where k->gemm_only, the padded copies and the
 * products alone: dy at every element. */
CC_AVX512 static void cc_direct_dw_image_avx512(const cc_block *k, int i, float *pads, float *acc,
                                                float *dbacc) {
    int c = k->c, f = k->f, ph = k->ph, pw = k->pw, th = ph, tw = pw, pwid = 2 * tw + 2;
    size_t psz = cc_wino_pad_size(th, tw), total = (size_t)f * k->b * ph * pw;
    cc_direct_pads(k, i, pads);
    for (int co = 0; co < f; co++) {
        size_t o = cc_plane_at(k, co, i);
        __m512 db = _mm512_loadu_ps(dbacc + (size_t)co * 16);
        for (int ch = 0; ch < c; ch++) {
            float *ap = acc + ((size_t)co * c + ch) * 9 * 16;
            __m512 a[9];
            for (int t = 0; t < 9; t++) a[t] = _mm512_loadu_ps(ap + 16 * t);
            for (int py = 0; py < ph; py++)
                for (int px = 0; px < pw; px += 16) {
                    size_t q = o + (size_t)py * pw + px;
                    int n = pw - px < 16 ? pw - px : 16;
                    __mmask16 keep = (__mmask16)((1u << n) - 1);
                    __m512 gv, g[4]; /* no masked loads: AMD's take a slow path here */
                    _mm_prefetch((const char *)(k->dy + q) + CC_DY_AHEAD, _MM_HINT_T0);
                    _mm_prefetch((const char *)(k->choice + q) + CC_DY_AHEAD / 4, _MM_HINT_T0);
                    if (total - q >= 16) {
                        gv = _mm512_maskz_mov_ps(keep, _mm512_loadu_ps(k->dy + q));
                    } else {
                        float gb[16] = {0};
                        memcpy(gb, k->dy + q, (size_t)n * sizeof *gb);
                        gv = _mm512_loadu_ps(gb);
                    }
                    if (k->gemm_only) {
                        g[0] = g[1] = g[2] = g[3] = gv;
                    } else {
                        uint8_t cb[16] = {0};
                        __m128i cv;
                        if (total - q >= 16) {
                            cv = _mm_loadu_si128((const __m128i *)(k->choice + q));
                        } else {
                            memcpy(cb, k->choice + q, (size_t)n);
                            cv = _mm_loadu_si128((const __m128i *)cb);
                        }
                        __m512i cw = _mm512_cvtepu8_epi32(cv);
                        __mmask16 any = 0;
                        for (int e = 0; e < 4; e++) {
                            __mmask16 at = _mm512_mask_cmpeq_epi32_mask(keep, cw, _mm512_set1_epi32(KN_POOL_TL + e));
                            g[e] = _mm512_maskz_mov_ps(at, gv);
                            any |= at;
                        }
                        if (ch == 0) db = _mm512_mask_add_ps(db, any, db, gv);
                    }
                    cc_direct_dw16(pads + (size_t)ch * psz + (size_t)2 * py * pwid + px, pwid, tw,
                                   g, a);
                }
            for (int t = 0; t < 9; t++) _mm512_storeu_ps(ap + 16 * t, a[t]);
        }
        _mm512_storeu_ps(dbacc + (size_t)co * 16, db);
    }
}

/* The group's dW (f, 9c) and db (f) from their sixteen lanes each, summed in a fixed
 * order. */
CC_AVX512 static void cc_direct_dw_finish(const float *acc, const float *dbacc, int f, int ck,
                                          float *dW, float *db) {
    for (size_t j = 0; j < (size_t)f * ck; j++) dW[j] = _mm512_reduce_add_ps(_mm512_loadu_ps(acc + 16 * j));
    for (int co = 0; co < f; co++) db[co] = _mm512_reduce_add_ps(_mm512_loadu_ps(dbacc + 16 * (size_t)co));
}


/* The 2x2 outputs A^T m A of the eight tiles at m (m[p * ms + lane], p = 4i + j): y00,
 * y01 their first row, y10, y11 their second; the sums of cc_wino_tile_out, in its
 * order. */
CC_AVX2 static inline __attribute__((always_inline)) void
cc_wino_tile8_out(const float *m, size_t ms, __m256 *y00, __m256 *y01, __m256 *y10, __m256 *y11) {
    __m256 s0[4], s1[4]; /* A^T m */
    for (int j = 0; j < 4; j++) {
        __m256 m0 = _mm256_loadu_ps(m + (size_t)j * ms);
        __m256 m1 = _mm256_loadu_ps(m + (size_t)(4 + j) * ms);
        __m256 m2 = _mm256_loadu_ps(m + (size_t)(8 + j) * ms);
        __m256 m3 = _mm256_loadu_ps(m + (size_t)(12 + j) * ms);
        s0[j] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
        s1[j] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
    }
    *y00 = _mm256_add_ps(_mm256_add_ps(s0[0], s0[1]), s0[2]);
    *y01 = _mm256_sub_ps(_mm256_sub_ps(s0[1], s0[2]), s0[3]);
    *y10 = _mm256_add_ps(_mm256_add_ps(s1[0], s1[1]), s1[2]);
    *y11 = _mm256_sub_ps(_mm256_sub_ps(s1[1], s1[2]), s1[3]);
}

/* cc_wino_out, eight tiles of a row at a time (each its two output rows interleaved by
 * cc_merge), on planes of w >= 8. Every tile row but the last stores 16 floats a row
 * per group of eight, up to 16 - 1 floats past a row's end (8 where there is a single
 * group of eight), into the next row, which is written after (the groups go right to
 * left: what the last puts past its row is overwritten by the first's second row). The
 * last tile row, which nothing follows in the plane, goes through a buffer and keeps to
 * the plane; where h is odd cc_wino_out does it (its tiles make one output row). m has
 * 7 readable floats past a tile row (CC_TILE_PAD). */
CC_AVX2 static void cc_wino_out_avx2(float *restrict out, int h, int w, const float *restrict m,
                                     size_t ms, int th, int tw) {
    for (int ty = 0; ty < th; ty++) {
        const float *mt = m + (size_t)ty * tw;
        float *o0 = out + (size_t)2 * ty * w;
        int last = ty + 1 == th;
        if (last && (h & 1)) {
            cc_wino_out(out, h, w, m, ms, th, tw, ty);
            break;
        }
        for (int tx = (tw - 1) / 8 * 8; tx >= 0; tx -= 8) {
            __m256 y00, y01, y10, y11;
            cc_wino_tile8_out(mt + tx, ms, &y00, &y01, &y10, &y11);
            int cols = w - 2 * tx; /* of this group's 16 columns, those in the plane */
            if (!last || cols >= 16) {
                cc_merge(o0 + 2 * tx, y00, y01);
                cc_merge(o0 + w + 2 * tx, y10, y11);
            } else {
                float buf[32];
                cc_merge(buf, y00, y01);
                cc_merge(buf + 16, y10, y11);
                memcpy(o0 + 2 * tx, buf, (size_t)cols * sizeof *buf);
                memcpy(o0 + w + 2 * tx, buf + 16, (size_t)cols * sizeof *buf);
            }
        }
    }
}

/* cc_wino_out_avx2 and cc_pool_plane_relu_avx2 in one pass, for planes of even h and w,
 * where tile (ty, tx) is pooling window (ty, tx): the four outputs of eight tiles are
 * made, the bias added and pooled in registers, and the conv output is never stored.
 * The same sums and comparisons as those two, so the same y, choice and zmax (the
 * pooled plane's th x tw outputs, with room for `room` >= th*tw: cc_pool8_store). */
CC_AVX2 static void cc_wino_pool_relu_avx2(const float *restrict m, size_t ms, int th, int tw,
                                           float bias, float *y, uint8_t *choice, float *zmax,
                                           size_t room) {
    const __m256 vb = _mm256_set1_ps(bias);
    for (int ty = 0; ty < th; ty++) {
        const float *mt = m + (size_t)ty * tw;
        size_t q = (size_t)ty * tw;
        for (int tx = 0; tx < tw; tx += 8) {
            __m256 y00, y01, y10, y11, yv, zv;
            __m256i av;
            cc_wino_tile8_out(mt + tx, ms, &y00, &y01, &y10, &y11);
            cc_pool8_relu(_mm256_add_ps(y00, vb), _mm256_add_ps(y01, vb), _mm256_add_ps(y10, vb),
                          _mm256_add_ps(y11, vb), &yv, &av, &zv);
            cc_pool8_store(y + q, choice + q, zmax ? zmax + q : NULL, tx, tw, room - q, yv, av, zv);
        }
    }
}

/* m[p * ms + lane] = (A dY A^T)[p] of eight tiles' 2x2 dY: y00, y01 their first row,
 * y10, y11 their second (the sums of cc_wino_grad_tiles, in its order). */
CC_AVX2 static inline void cc_wino_grad8(float *m, size_t ms, __m256 y00, __m256 y01, __m256 y10,
                                         __m256 y11) {
    const __m256 zero = _mm256_setzero_ps();
    __m256 a[4][2] = {{y00, y01},
                      {_mm256_add_ps(y00, y10), _mm256_add_ps(y01, y11)},
                      {_mm256_sub_ps(y00, y10), _mm256_sub_ps(y01, y11)},
                      {_mm256_sub_ps(zero, y10), _mm256_sub_ps(zero, y11)}}; /* A dY */
    for (int i = 0; i < 4; i++) { /* (A dY) A^T */
        float *q = m + (size_t)4 * i * ms;
        _mm256_storeu_ps(q, a[i][0]);
        _mm256_storeu_ps(q + ms, _mm256_add_ps(a[i][0], a[i][1]));
        _mm256_storeu_ps(q + 2 * ms, _mm256_sub_ps(a[i][0], a[i][1]));
        _mm256_storeu_ps(q + 3 * ms, _mm256_sub_ps(zero, a[i][1]));
    }
}

/* cc_wino_grad_tiles, eight tiles of a row at a time. Reads up to 16 floats past the
 * plane (the scratch has CC_PAD after dz); stores up to 7 lanes past a row of tiles (see
 * CC_TILE_PAD). */
CC_AVX2 static void cc_wino_grad_tiles_avx2(float *restrict m, size_t ms, const float *restrict in,
                                            int h, int w, int th, int tw) {
    const __m256 zero = _mm256_setzero_ps();
    for (int ty = 0; ty < th; ty++) {
        const float *r0 = in + (size_t)2 * ty * w, *r1 = r0 + w;
        int two_rows = 2 * ty + 1 < h;
        float *mt = m + (size_t)ty * tw;
        for (int tx = 0; tx < tw; tx += 8) {
            __m256 y00, y01, y10 = zero, y11 = zero;
            cc_split(r0 + 2 * tx, &y00, &y01);
            if (two_rows) cc_split(r1 + 2 * tx, &y10, &y11);
            if (w & 1) { /* the last tile's second column is past the plane */
                __m256 keep = _mm256_castsi256_ps(cc_lanes(w / 2 - tx));
                y01 = _mm256_and_ps(y01, keep);
                y11 = _mm256_and_ps(y11, keep);
            }
            cc_wino_grad8(mt + tx, ms, y00, y01, y10, y11);
        }
    }
}

/* The backward pass's unpooling (cc_unpool_plane_relu_avx2) and the transform of dz's
 * tiles for dW (cc_wino_grad_tiles_avx2) in one pass, for planes of even h and w, where
 * pooling window (ty, tx) is tile (ty, tx): per eight windows, the window's four
 * elements of dz are made in registers (the gradient at the element chosen where y > 0,
 * else 0) and transformed into m, which dx's products take too (cc_wino_dx_chunk): dz
 * itself is never stored. m's stores go up to 7 lanes past a tile row, as
 * cc_wino_grad_tiles_avx2's. g and choice have `room` >= th*tw readable. The values,
 * the sums into m and the sum returned are those of the two passes: the same bits. */
CC_AVX2 static float cc_wino_unpool_relu_avx2(float *restrict m, size_t ms, int th, int tw,
                                              const float *g, const uint8_t *choice,
                                              size_t room) {
    float sum = 0.0f;
    for (int ty = 0; ty < th; ty++) {
        size_t q = (size_t)ty * tw;
        __m256 rsum = _mm256_setzero_ps();
        for (int tx = (tw - 1) / 8 * 8; tx >= 0; tx -= 8) {
            __m256 y00, y01, y10, y11;
            rsum = _mm256_add_ps(rsum, cc_unpool8_relu(g + q + tx, choice + q + tx,
                                                       room - q - (size_t)tx, cc_lanes(tw - tx),
                                                       &y00, &y01, &y10, &y11));
            cc_wino_grad8(m + q + tx, ms, y00, y01, y10, y11);
        }
        sum += cc_sum8(rsum);
    }
    return sum;
}

/* Lanes [0, n) of a mask, 0 <= n <= 16. */
CC_AVX512 static inline __mmask16 cc_mask16(int n) {
    return (__mmask16)((1u << n) - 1u);
}

/* The lane indices i + d. */
CC_AVX512 static inline __m512i cc_iota16(int d) {
    return _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            _mm512_set1_epi32(d));
}

/* Row r - 1 of the h x w plane at in, as a vector (lanes [0, w): `row`), or zeros where
 * that is not a row of the plane. The rows before `whole` are loaded with the 16 - w
 * floats after them and those lanes cleared by `cols` (lanes [0, w) all ones), faster
 * than a masked load on AMD; the rest by a masked load, which reads nothing past the
 * plane. */
CC_AVX512 static inline __attribute__((always_inline)) __m512
cc_row16(const float *in, int r, int h, int w, int whole, __mmask16 row, __m512i cols) {
    if (r < 1 || r > h) return _mm512_setzero_ps();
    const float *p = in + (size_t)(r - 1) * w;
    return r - 1 < whole ? _mm512_castsi512_ps(_mm512_and_si512(
                               _mm512_castps_si512(_mm512_loadu_ps(p)), cols))
                         : _mm512_maskz_loadu_ps(row, p);
}

/* cc_wino_in16_avx2 with AVX-512, for planes of at most 14 columns, whose padded rows
 * (2tw + 2 <= 16 floats) are a vector each: two tile rows a vector, ty in lanes [0, tw)
 * and ty + 1 in [tw, 2tw), so that they are stored as one (V's tiles of a plane are
 * row after row). Each of a tile's sixteen values is picked by one permutation from
 * two of x's rows as loaded (padded row 2ty + i and 2ty + 2 + i for tile rows ty and
 * ty + 1; column 2tx + c - 1 of x, the padding's zeros where that is -1, the load's
 * zeros past w), where the AVX2 form splits every row into its even and odd columns.
 * The same sums as cc_wino_in8, so the same bits. Stores keep to the plane's tiles. */
CC_AVX512 static void cc_wino_in14_avx512(float *restrict v, size_t vs, const float *restrict in,
                                          int h, int w, int th, int tw) {
    /* lane l < tw (tile l of row ty) takes column 2l + c - 1 of the first row; lane
     * l >= tw (tile l - tw of row ty + 1) column 2(l - tw) + c - 1 of the second, whose
     * elements are indices 16 on */
    const __m512i iota = cc_iota16(0);
    const __mmask16 second = _mm512_cmpge_epi32_mask(iota, _mm512_set1_epi32(tw));
    __m512i idx[4];
    for (int c = 0; c < 4; c++) {
        __m512i at = _mm512_add_epi32(_mm512_add_epi32(iota, iota), _mm512_set1_epi32(c - 1));
        idx[c] = _mm512_mask_add_epi32(at, second, at, _mm512_set1_epi32(16 - 2 * tw));
    }
    /* column -1 (tile 0 of each row, c = 0) is the padding's zero */
    const __mmask16 pick[4] = {(__mmask16)(0xffffu & ~(1u | 1u << tw)), 0xffff, 0xffff, 0xffff};
    const __mmask16 row = cc_mask16(w);
    const int whole = h - (16 + w - 1) / w; /* rows [0, whole) have 16 floats of the plane */
    const __m512i cols = _mm512_maskz_set1_epi32(row, -1);
#define CC_ROW(pr) cc_row16(in, pr, h, w, whole, row, cols)
    __m512 r0 = CC_ROW(0), r1 = CC_ROW(1);
    for (int ty = 0; ty < th; ty += 2) {
        __m512 r[6] = {r0, r1, CC_ROW(2 * ty + 2), CC_ROW(2 * ty + 3), CC_ROW(2 * ty + 4),
                       CC_ROW(2 * ty + 5)};
        __m512 e[4][4]; /* [row][column] of the two tile rows' tiles */
        for (int i = 0; i < 4; i++)
            for (int c = 0; c < 4; c++)
                e[i][c] = _mm512_maskz_permutex2var_ps(pick[c], r[i], idx[c], r[i + 2]);
        for (int c = 0; c < 4; c++) { /* B^T d */
            __m512 d0 = e[0][c], d1 = e[1][c], d2 = e[2][c], d3 = e[3][c];
            e[0][c] = _mm512_sub_ps(d0, d2);
            e[1][c] = _mm512_add_ps(d1, d2);
            e[2][c] = _mm512_sub_ps(d2, d1);
            e[3][c] = _mm512_sub_ps(d1, d3);
        }
        __mmask16 keep = cc_mask16((th - ty < 2 ? th - ty : 2) * tw);
        float *o = v + (size_t)ty * tw;
        for (int i = 0; i < 4; i++) { /* (B^T d) B */
            float *q = o + (size_t)4 * i * vs;
            _mm512_mask_storeu_ps(q, keep, _mm512_sub_ps(e[i][0], e[i][2]));
            _mm512_mask_storeu_ps(q + vs, keep, _mm512_add_ps(e[i][1], e[i][2]));
            _mm512_mask_storeu_ps(q + 2 * vs, keep, _mm512_sub_ps(e[i][2], e[i][1]));
            _mm512_mask_storeu_ps(q + 3 * vs, keep, _mm512_sub_ps(e[i][1], e[i][3]));
        }
        r0 = r[4];
        r1 = r[5];
    }
#undef CC_ROW
}

/* The fused Winograd transforms with AVX-512, sixteen tiles at a time. A chunk's tiles
 * of one filter lie in a row of M image after image (cc_wino_forward_chunk), and where
 * the pooling is fused each tile is a pooling window, whose output sits at the tile's
 * index in its image's pooled plane: so the row is worked straight through, sixteen
 * tiles at a time, and a vector that holds the end of one image's tiles and the start of
 * the next's (or of several next ones', where a plane has fewer than sixteen tiles)
 * takes its pooled values from, or puts them into, each plane by masked loads and
 * stores of its lanes moved down to lane 0. The 196 tiles of the model's second layer
 * (four images of 7x7) take 13 vectors, where the AVX2 forms take a vector of eight for
 * each of the 28 rows of seven. Lane by lane the sums and comparisons of the AVX2
 * forms, so the same bits. */

/* The flat walk over a chunk's tiles: the vector from tile t starts at tile vq of image
 * vj (of the chunk), and holds `end` tiles. It is taken in pieces, each within one
 * image's plane: `lanes` lanes from lane l0, the tiles of image j from tile q.
 * cc_flat_first gives a vector's first piece, cc_flat_next the next (0 past its last),
 * cc_flat_advance moves on to the next vector. */
typedef struct cc_flat {
    int vj, vq;                /* the vector */
    int j, q, l0, lanes, end; /* the piece */
} cc_flat;

static inline void cc_flat_first(cc_flat *w, int nt, int total, int t) {
    w->j = w->vj;
    w->q = w->vq;
    w->l0 = 0;
    w->end = total - t < 16 ? total - t : 16;
    w->lanes = nt - w->q < w->end ? nt - w->q : w->end;
}

static inline int cc_flat_next(cc_flat *w, int nt) {
    w->l0 += w->lanes;
    w->j++;
    w->q = 0;
    w->lanes = nt < w->end - w->l0 ? nt : w->end - w->l0;
    return w->l0 < w->end;
}

static inline void cc_flat_advance(cc_flat *w, int nt) {
    w->vq += 16;
    while (w->vq >= nt) w->vq -= nt, w->vj++;
}

/* The byte indices i + d (bytes whose index is negative are zeroed by _mm_shuffle_epi8). */
CC_AVX2 static inline __m128i cc_iota8(int d) {
    return _mm_add_epi8(_mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                        _mm_set1_epi8((char)d));
}

/* cc_wino_tile8_out for sixteen tiles, of which the first `lanes` are read. */
CC_AVX512 static inline __attribute__((always_inline)) void
cc_wino_tile16_out(const float *m, size_t ms, __mmask16 lanes, __m512 *y00, __m512 *y01,
                   __m512 *y10, __m512 *y11) {
    __m512 s0[4], s1[4]; /* A^T m */
    for (int j = 0; j < 4; j++) {
        __m512 m0 = _mm512_maskz_loadu_ps(lanes, m + (size_t)j * ms);
        __m512 m1 = _mm512_maskz_loadu_ps(lanes, m + (size_t)(4 + j) * ms);
        __m512 m2 = _mm512_maskz_loadu_ps(lanes, m + (size_t)(8 + j) * ms);
        __m512 m3 = _mm512_maskz_loadu_ps(lanes, m + (size_t)(12 + j) * ms);
        s0[j] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
        s1[j] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
    }
    *y00 = _mm512_add_ps(_mm512_add_ps(s0[0], s0[1]), s0[2]);
    *y01 = _mm512_sub_ps(_mm512_sub_ps(s0[1], s0[2]), s0[3]);
    *y10 = _mm512_add_ps(_mm512_add_ps(s1[0], s1[1]), s1[2]);
    *y11 = _mm512_sub_ps(_mm512_sub_ps(s1[1], s1[2]), s1[3]);
}

/* cc_wino_pool_relu_avx2 for filter co of the chunk's n images [i0, i0+n) at once: m its
 * row of M (the images' tiles one after another), ms the stride between the 16 rows of
 * a tile's values. */
CC_AVX512 static void cc_wino_pool_relu_avx512(const cc_block *k, const float *m, size_t ms,
                                               int co, int i0, int n) {
    const __m512 vb = _mm512_set1_ps(k->bias[co]);
    int nt = k->nt, total = n * nt;
    /* the block's outputs at image i0's plane of filter co, `image` floats an image on
     * (the intrinsics' stores may alias anything: locals, so k is not read again) */
    size_t at = cc_plane_at(k, co, i0), image = (size_t)k->f * k->ph * k->pw;
    float *y = k->y + at, *zmax = k->zmax_out ? k->zmax_out + at : NULL;
    uint8_t *choice = k->choice_out + at;
    cc_flat w = {0, 0, 0, 0, 0, 0, 0};
    for (int t = 0; t < total; t += 16, cc_flat_advance(&w, nt)) {
        cc_flat_first(&w, nt, total, t);
        __m512 y00, y01, y10, y11, yv, zv;
        __m128i cv;
        cc_wino_tile16_out(m + t, ms, cc_mask16(w.end), &y00, &y01, &y10, &y11);
        cc_pool16_relu(_mm512_add_ps(y00, vb), _mm512_add_ps(y01, vb), _mm512_add_ps(y10, vb),
                       _mm512_add_ps(y11, vb), &yv, &cv, &zv);
        do {
            size_t o = (size_t)w.j * image + (size_t)w.q;
            if (w.lanes == 16) {
                _mm512_storeu_ps(y + o, yv);
                _mm_storeu_si128((__m128i *)(choice + o), cv);
                if (zmax) _mm512_storeu_ps(zmax + o, zv);
                break;
            }
            __m512 ys = yv, zs = zv;
            __m128i cs = cv;
            if (w.l0) { /* this piece's lanes down to lane 0 */
                __m512i down = cc_iota16(w.l0);
                ys = _mm512_permutexvar_ps(down, yv);
                zs = _mm512_permutexvar_ps(down, zv);
                cs = _mm_shuffle_epi8(cv, cc_iota8(w.l0));
            }
            __mmask16 mk = cc_mask16(w.lanes);
            _mm512_mask_storeu_ps(y + o, mk, ys);
            _mm_mask_storeu_epi8(choice + o, mk, cs);
            if (zmax) _mm512_mask_storeu_ps(zmax + o, mk, zs);
        } while (cc_flat_next(&w, nt));
    }
}

/* cc_wino_grad8 for sixteen tiles: the first `lanes` of each of m's 16 rows are
 * written. */
CC_AVX512 static inline __attribute__((always_inline)) void
cc_wino_grad16(float *m, size_t ms, __mmask16 lanes, __m512 y00, __m512 y01, __m512 y10,
               __m512 y11) {
    const __m512 zero = _mm512_setzero_ps();
    __m512 a[4][2] = {{y00, y01},
                      {_mm512_add_ps(y00, y10), _mm512_add_ps(y01, y11)},
                      {_mm512_sub_ps(y00, y10), _mm512_sub_ps(y01, y11)},
                      {_mm512_sub_ps(zero, y10), _mm512_sub_ps(zero, y11)}}; /* A dY */
    for (int i = 0; i < 4; i++) { /* (A dY) A^T */
        float *q = m + (size_t)4 * i * ms;
        _mm512_mask_storeu_ps(q, lanes, a[i][0]);
        _mm512_mask_storeu_ps(q + ms, lanes, _mm512_add_ps(a[i][0], a[i][1]));
        _mm512_mask_storeu_ps(q + 2 * ms, lanes, _mm512_sub_ps(a[i][0], a[i][1]));
        _mm512_mask_storeu_ps(q + 3 * ms, lanes, _mm512_sub_ps(zero, a[i][1]));
    }
}

/* The sum of a plane's th x tw values at v (row after row), in the order of
 * cc_wino_unpool_relu_avx2's: eight lanes a row, the groups of eight from the last (for
 * rows of up to eight, ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), the lanes past
 * tw 0), and the rows' sums one after another. v has 16 floats readable past the plane.
 * Rows of up to eight are summed two at a time, one in each half of a vector. */
CC_AVX512 static float cc_plane_sum8(const float *v, int th, int tw) {
    float sum = 0.0f;
    if (tw <= 8) {
        /* lane l of each half takes element l of its row, where l < tw */
        const __m512i iota = cc_iota16(0);
        const __mmask16 hi = (__mmask16)0xff00u;
        __m512i idx = _mm512_mask_sub_epi32(iota, hi, iota, _mm512_set1_epi32(8 - tw));
        __mmask16 in = _mm512_cmplt_epi32_mask(_mm512_and_si512(iota, _mm512_set1_epi32(7)),
                                               _mm512_set1_epi32(tw));
        for (int ty = 0; ty < th; ty += 2) {
            __mmask16 rows = ty + 1 < th ? in : (__mmask16)(in & 0xffu);
            __m512 r = _mm512_maskz_permutexvar_ps(rows, idx, _mm512_loadu_ps(v + (size_t)ty * tw));
            __m512 s1 = _mm512_add_ps(r, _mm512_permute_ps(r, _MM_SHUFFLE(2, 3, 0, 1)));
            __m512 s2 = _mm512_add_ps(s1, _mm512_permute_ps(s1, _MM_SHUFFLE(1, 0, 3, 2)));
            __m512 s3 = _mm512_add_ps(s2, _mm512_shuffle_f32x4(s2, s2, _MM_SHUFFLE(2, 3, 0, 1)));
            sum += _mm512_cvtss_f32(s3);
            if (ty + 1 < th) sum += _mm_cvtss_f32(_mm512_extractf32x4_ps(s3, 2));
        }
        return sum;
    }
    for (int ty = 0; ty < th; ty++) {
        const float *r = v + (size_t)ty * tw;
        __m256 rsum = _mm256_setzero_ps();
        for (int tx = (tw - 1) / 8 * 8; tx >= 0; tx -= 8)
            rsum = _mm256_add_ps(rsum, _mm256_maskz_loadu_ps(
                                           (__mmask8)(tw - tx >= 8 ? 0xff : (1u << (tw - tx)) - 1u),
                                           r + tx));
        sum += cc_sum8(rsum);
    }
    return sum;
}

/* cc_wino_unpool_relu_avx2 for filter co of the chunk's n images [i0, i0+n) at once,
 * into m, its row of M (ms as cc_wino_pool_relu_avx512's): dz's tiles from dy and the
 * choices, transformed. The gradients passed are kept in vbuf (n*nt + 16 floats) and
 * each image's sum added to *db in cc_wino_unpool_relu_avx2's order, so db too is the
 * AVX2 form's bits. */
CC_AVX512 static void cc_wino_unpool_relu_avx512(const cc_block *k, float *m, size_t ms, int co,
                                                 int i0, int n, float *vbuf, float *db) {
    const __m512i zero_choice = _mm512_set1_epi32(KN_POOL_ZERO);
    int nt = k->nt, total = n * nt, th = k->th, tw = k->tw;
    size_t at = cc_plane_at(k, co, i0), image = (size_t)k->f * k->ph * k->pw;
    const float *dy = k->dy + at; /* as in cc_wino_pool_relu_avx512 */
    const uint8_t *choice = k->choice + at;
    cc_flat w = {0, 0, 0, 0, 0, 0, 0};
    for (int t = 0; t < total; t += 16, cc_flat_advance(&w, nt)) {
        cc_flat_first(&w, nt, total, t);
        __m512 gv = _mm512_setzero_ps();
        __m128i c8 = _mm_setzero_si128();
        do {
            size_t o = (size_t)w.j * image + (size_t)w.q;
            if (w.lanes == 16) {
                gv = _mm512_loadu_ps(dy + o);
                c8 = _mm_loadu_si128((const __m128i *)(choice + o));
                break;
            }
            __mmask16 mk = cc_mask16(w.lanes);
            __m512 g = _mm512_maskz_loadu_ps(mk, dy + o);
            __m128i c = _mm_maskz_loadu_epi8(mk, choice + o);
            /* lanes [0, lanes) up to lane l0; the bytes of c below l0 shuffle in as 0 */
            gv = _mm512_mask_permutexvar_ps(gv, (__mmask16)(mk << w.l0), cc_iota16(-w.l0), g);
            c8 = _mm_or_si128(c8, _mm_shuffle_epi8(c, cc_iota8(-w.l0)));
        } while (cc_flat_next(&w, nt));
        __m512i av = _mm512_cvtepu8_epi32(c8);
        /* the lanes past the chunk read 0 for the gradient: v is 0 there */
        __m512 v = _mm512_maskz_mov_ps(_mm512_cmplt_epi32_mask(av, zero_choice), gv);
        _mm512_storeu_ps(vbuf + t, v);
#define CC_AT(c) _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(av, _mm512_set1_epi32(c)), v)
        cc_wino_grad16(m + t, ms, cc_mask16(w.end), CC_AT(KN_POOL_TL), CC_AT(KN_POOL_TR),
                       CC_AT(KN_POOL_BL), CC_AT(KN_POOL_BR));
#undef CC_AT
    }
    for (int j = 0; j < n; j++) *db += cc_plane_sum8(vbuf + (size_t)j * nt, th, tw);
}

#define CC_ADJ_GROUPS 16 /* cc_wino_adj_avx2: rows of up to 16 groups of eight tiles */

/* v's lanes one up (lane u gets lane u-1), lane 0 getting prev's lane 7. */
CC_AVX2 static inline __m256 cc_lanes_up(__m256 v, __m256 prev) {
    const __m256i rot = _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6);
    return _mm256_blend_ps(_mm256_permutevar8x32_ps(v, rot), _mm256_permutevar8x32_ps(prev, rot),
                           0x01);
}

/* v's lanes one down (lane u gets lane u+1), lane 7 getting next's lane 0. */
CC_AVX2 static inline __m256 cc_lanes_down(__m256 v, __m256 next) {
    const __m256i rot = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 0);
    return _mm256_blend_ps(_mm256_permutevar8x32_ps(v, rot), _mm256_permutevar8x32_ps(next, rot),
                           0x80);
}

/* What a padded row's group of eight tiles leaves for the next group (cc_wino_adj_avx2):
 * its fourth column (the left neighbour's share of the next group's first out column),
 * its odd out columns but for the right neighbour's share, its first column, and its
 * even out columns, done. */
typedef struct cc_adj_lag {
    __m256 a3, d2, a0, even;
} cc_adj_lag;

/* Out columns 16g .. 16g+15 of row o (w floats): the even ones and the odd ones of group
 * g. Where `tight`, nothing is written past the row; else up to 15 floats, into rows
 * written after. */
CC_AVX2 static inline void cc_adj_store(float *o, int w, int g, int tight, __m256 even,
                                        __m256 odd) {
    int x = 16 * g;
    if (!tight || x + 16 <= w)
        cc_merge(o + x, even, odd);
    else
        cc_merge_n(o + x, even, odd, w - x);
}

/* One padded row of group g (cc_wino_adj_row's sums): its even out columns now, and the
 * odd ones of group g-1, whose right neighbour's first column is group g's lane 0. */
CC_AVX2 static inline void cc_adj_group(float *o, int w, int g, int tight, const __m256 a[4],
                                        cc_adj_lag *lag) {
    __m256 d1 = _mm256_add_ps(_mm256_sub_ps(a[1], a[2]), a[3]);
    __m256 d2 = _mm256_add_ps(_mm256_sub_ps(a[1], a[0]), a[2]);
    __m256 even = _mm256_sub_ps(d1, cc_lanes_up(a[3], lag->a3));
    if (g > 0 && o)
        cc_adj_store(o, w, g - 1, tight, lag->even,
                     _mm256_add_ps(lag->d2, cc_lanes_down(lag->a0, a[0])));
    *lag = (cc_adj_lag){a[3], d2, a[0], even};
}

/* The last group's odd out columns: no tile to its right. */
CC_AVX2 static inline void cc_adj_end(float *o, int w, int groups, int tight,
                                      const cc_adj_lag *lag) {
    if (o)
        cc_adj_store(o, w, groups - 1, tight, lag->even,
                     _mm256_add_ps(lag->d2, cc_lanes_down(lag->a0, _mm256_setzero_ps())));
}

/* cc_wino_adj, eight tiles of a row at a time, for rows of up to 8 * CC_ADJ_GROUPS
 * tiles: the same sums, lane by lane. Each group of eight keeps its own carries (c2,
 * c3); the columns shared with the neighbouring tiles come from the neighbouring lanes
 * (cc_lanes_up, cc_lanes_down), across groups from the group before and the one after
 * (so a group's odd columns are stored one group later: cc_adj_lag). Past the last tile
 * the first column's lanes are zeroed, as they would come down into its odd out
 * column. Reads up to 7 lanes past a row of tiles (CC_TILE_PAD). Rows are written in
 * order; where one group makes a row, its stores run up to 15 floats past it, into the
 * rows written after, except near the plane's end. */
CC_AVX2 static void cc_wino_adj_avx2(float *restrict out, int h, int w, const float *restrict m,
                                     size_t ms, int th, int tw) {
    const __m256 zero = _mm256_setzero_ps();
    int groups = (tw + 7) / 8;
    const __m256 last = _mm256_castsi256_ps(cc_lanes(tw - 8 * (groups - 1)));
    __m256 c2[CC_ADJ_GROUPS][4], c3[CC_ADJ_GROUPS][4];
    for (int g = 0; g < groups; g++)
        for (int l = 0; l < 4; l++) c2[g][l] = c3[g][l] = zero;
    for (int ty = 0; ty <= th; ty++) {
        /* padded rows 2ty and 2ty+1 (out rows 2ty-1 and 2ty) of tile rows ty-1 and ty; at
         * ty = th, padded row 2th alone (out row 2th-1) */
        int re = 2 * ty - 1, ro = 2 * ty;
        float *oe = ty > 0 && re < h ? out + (size_t)re * w : NULL;
        float *oo = ty < th ? out + (size_t)ro * w : NULL;
        int te = groups > 1 || (h - re) * w < 16, to = groups > 1 || (h - ro) * w < 16;
        cc_adj_lag le = {zero, zero, zero, zero}, lo = le;
        for (int g = 0; g < groups; g++) {
            __m256 e[4], o[4];
            if (ty < th) {
                const float *mt = m + (size_t)ty * tw + 8 * g;
                for (int l = 0; l < 4; l++) {
                    __m256 q0 = _mm256_loadu_ps(mt + (size_t)l * ms);
                    __m256 q1 = _mm256_loadu_ps(mt + (size_t)(4 + l) * ms);
                    __m256 q2 = _mm256_loadu_ps(mt + (size_t)(8 + l) * ms);
                    __m256 q3 = _mm256_loadu_ps(mt + (size_t)(12 + l) * ms);
                    e[l] = _mm256_add_ps(q0, c2[g][l]);
                    o[l] = _mm256_sub_ps(_mm256_add_ps(_mm256_sub_ps(q1, q2), q3), c3[g][l]);
                    c2[g][l] = _mm256_add_ps(_mm256_sub_ps(q1, q0), q2);
                    c3[g][l] = q3;
                }
            } else {
                for (int l = 0; l < 4; l++) e[l] = o[l] = c2[g][l];
            }
            if (g == groups - 1) { /* no tile past the row's last: its first column is 0 */
                e[0] = _mm256_and_ps(e[0], last);
                o[0] = _mm256_and_ps(o[0], last);
            }
            cc_adj_group(oe, w, g, te, e, &le);
            cc_adj_group(oo, w, g, to, o, &lo);
        }
        cc_adj_end(oe, w, groups, te, &le);
        cc_adj_end(oo, w, groups, to, &lo);
    }
}

/* cc_wino_adj_avx2 for two planes at once with AVX-512: the tiles at m in the low half
 * of each vector, those at m + nt (the next image's plane of the channel) in the high
 * half, out0 and out1 the two planes of dx. Every step of the AVX2 form in each half,
 * the lanes moved within it, so both planes get the AVX2 form's bits. */
typedef struct cc_adj_lag16 {
    __m512 a3, d2, a0, even;
} cc_adj_lag16;

/* cc_lanes_up in each half: lane u gets lane u - 1, lane 0 prev's lane 7. */
CC_AVX512 static inline __m512 cc_lanes_up16(__m512 v, __m512 prev) {
    const __m512i up = _mm512_setr_epi32(23, 0, 1, 2, 3, 4, 5, 6, 31, 8, 9, 10, 11, 12, 13, 14);
    return _mm512_permutex2var_ps(v, up, prev);
}

/* cc_lanes_down in each half: lane u gets lane u + 1, lane 7 next's lane 0. */
CC_AVX512 static inline __m512 cc_lanes_down16(__m512 v, __m512 next) {
    const __m512i down = _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 16, 9, 10, 11, 12, 13, 14, 15, 24);
    return _mm512_permutex2var_ps(v, down, next);
}

/* cc_adj_store for each half: the low half's 16 columns into o0, the high half's into
 * o1. */
CC_AVX512 static inline void cc_adj_store16(float *o0, float *o1, int w, int g, int tight,
                                            __m512 even, __m512 odd) {
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15,
                                         31);
    int x = 16 * g;
    __m512 r0 = _mm512_permutex2var_ps(even, lo, odd), r1 = _mm512_permutex2var_ps(even, hi, odd);
    if (!tight || x + 16 <= w) {
        _mm512_storeu_ps(o0 + x, r0);
        _mm512_storeu_ps(o1 + x, r1);
    } else {
        _mm512_mask_storeu_ps(o0 + x, cc_mask16(w - x), r0);
        _mm512_mask_storeu_ps(o1 + x, cc_mask16(w - x), r1);
    }
}

CC_AVX512 static inline void cc_adj_group16(float *o0, float *o1, int w, int g, int tight,
                                            const __m512 a[4], cc_adj_lag16 *lag) {
    __m512 d1 = _mm512_add_ps(_mm512_sub_ps(a[1], a[2]), a[3]);
    __m512 d2 = _mm512_add_ps(_mm512_sub_ps(a[1], a[0]), a[2]);
    __m512 even = _mm512_sub_ps(d1, cc_lanes_up16(a[3], lag->a3));
    if (g > 0 && o0)
        cc_adj_store16(o0, o1, w, g - 1, tight, lag->even,
                       _mm512_add_ps(lag->d2, cc_lanes_down16(lag->a0, a[0])));
    *lag = (cc_adj_lag16){a[3], d2, a[0], even};
}

CC_AVX512 static inline void cc_adj_end16(float *o0, float *o1, int w, int groups, int tight,
                                          const cc_adj_lag16 *lag) {
    if (o0)
        cc_adj_store16(o0, o1, w, groups - 1, tight, lag->even,
                       _mm512_add_ps(lag->d2, cc_lanes_down16(lag->a0, _mm512_setzero_ps())));
}

/* Eight tiles at p in the low half, eight at p + nt in the high. */
CC_AVX512 static inline __m512 cc_load2x8(const float *p, int nt) {
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(
                                                   _mm256_loadu_ps(p))),
                                               _mm256_castps_pd(_mm256_loadu_ps(p + nt)), 1));
}

CC_AVX512 static void cc_wino_adj2_avx512(float *restrict out0, float *restrict out1, int h, int w,
                                          const float *restrict m, size_t ms, int th, int tw,
                                          int nt) {
    const __m512 zero = _mm512_setzero_ps();
    int groups = (tw + 7) / 8, in_last = tw - 8 * (groups - 1);
    const __mmask16 last = (__mmask16)((1u << in_last) - 1u) * 0x0101u; /* in each half */
    __m512 c2[CC_ADJ_GROUPS][4], c3[CC_ADJ_GROUPS][4];
    for (int g = 0; g < groups; g++)
        for (int l = 0; l < 4; l++) c2[g][l] = c3[g][l] = zero;
    for (int ty = 0; ty <= th; ty++) {
        int re = 2 * ty - 1, ro = 2 * ty;
        int has_e = ty > 0 && re < h, has_o = ty < th;
        float *oe0 = has_e ? out0 + (size_t)re * w : NULL;
        float *oe1 = has_e ? out1 + (size_t)re * w : NULL;
        float *oo0 = has_o ? out0 + (size_t)ro * w : NULL;
        float *oo1 = has_o ? out1 + (size_t)ro * w : NULL;
        int te = groups > 1 || (h - re) * w < 16, to = groups > 1 || (h - ro) * w < 16;
        cc_adj_lag16 le = {zero, zero, zero, zero}, lo = le;
        for (int g = 0; g < groups; g++) {
            __m512 e[4], o[4];
            if (ty < th) {
                const float *mt = m + (size_t)ty * tw + 8 * g;
                for (int l = 0; l < 4; l++) {
                    __m512 q0 = cc_load2x8(mt + (size_t)l * ms, nt);
                    __m512 q1 = cc_load2x8(mt + (size_t)(4 + l) * ms, nt);
                    __m512 q2 = cc_load2x8(mt + (size_t)(8 + l) * ms, nt);
                    __m512 q3 = cc_load2x8(mt + (size_t)(12 + l) * ms, nt);
                    e[l] = _mm512_add_ps(q0, c2[g][l]);
                    o[l] = _mm512_sub_ps(_mm512_add_ps(_mm512_sub_ps(q1, q2), q3), c3[g][l]);
                    c2[g][l] = _mm512_add_ps(_mm512_sub_ps(q1, q0), q2);
                    c3[g][l] = q3;
                }
            } else {
                for (int l = 0; l < 4; l++) e[l] = o[l] = c2[g][l];
            }
            if (g == groups - 1) { /* no tile past the row's last: its first column is 0 */
                e[0] = _mm512_maskz_mov_ps(last, e[0]);
                o[0] = _mm512_maskz_mov_ps(last, o[0]);
            }
            cc_adj_group16(oe0, oe1, w, g, te, e, &le);
            cc_adj_group16(oo0, oo1, w, g, to, o, &lo);
        }
        cc_adj_end16(oe0, oe1, w, groups, te, &le);
        cc_adj_end16(oo0, oo1, w, groups, to, &lo);
    }
}
#endif

/* The transforms, in AVX2 where cc_avx2() says so. */
static void cc_wino_in_plane(float *v, size_t vs, const float *in, int h, int w, int th, int tw,
                             float *pad, int avx512) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx512 && w <= 14) {
        cc_wino_in14_avx512(v, vs, in, h, w, th, tw);
        return;
    }
    if (w <= 16 && cc_avx2()) {
        cc_wino_in16_avx2(v, vs, in, h, w, th, tw);
        return;
    }
    if (cc_avx2()) {
        cc_wino_pad_split_avx2(pad, in, h, w, th, tw);
        cc_wino_in_avx2(v, vs, pad, th, tw);
        return;
    }
#else
    (void)avx512;
#endif
    cc_wino_pad(pad, in, h, w, th, tw);
    cc_wino_in(v, vs, pad, th, tw);
}

static void cc_wino_out_plane(float *out, int h, int w, const float *m, size_t ms, int th,
                              int tw) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (w >= 8 && cc_avx2()) {
        cc_wino_out_avx2(out, h, w, m, ms, th, tw);
        return;
    }
#endif
    cc_wino_out(out, h, w, m, ms, th, tw, 0);
}

static void cc_wino_grad_plane(float *m, size_t ms, const float *in, int h, int w, int th,
                               int tw) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (cc_avx2()) {
        cc_wino_grad_tiles_avx2(m, ms, in, h, w, th, tw);
        return;
    }
#endif
    cc_wino_grad_tiles(m, ms, in, h, w, th, tw);
}

/* cc_wino_adj, in AVX2 where cc_avx2() says so and a row has few enough tiles. */
static void cc_wino_adj_plane(float *out, int h, int w, const float *m, size_t ms, int th, int tw,
                              float *scr) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (tw <= 8 * CC_ADJ_GROUPS && cc_avx2()) {
        cc_wino_adj_avx2(out, h, w, m, ms, th, tw);
        return;
    }
#endif
    cc_wino_adj(out, h, w, m, ms, th, tw, scr);
}

/* Floats of a chunk's first scratch area: im2col's col (ck, nc*hw), or where the block
 * takes Winograd its V and M, (16, c + f, ldt). */
static size_t cc_area(const cc_block *k) {
    return k->wino ? (size_t)16 * (k->c + k->f) * k->ldt : (size_t)k->ck * k->hw * k->nc;
}

/* Floats of a chunk's z or dz: (f, nc*hw); where k->fused, whose passes store neither,
 * room for the gradients a filter passes back through the chunk's pooling windows
 * (cc_wino_unpool_relu_avx512). */
static size_t cc_z_floats(const cc_block *k) {
    return k->fused ? (size_t)k->nc * k->nt + 16 : (size_t)k->f * k->nc * k->hw;
}

/* This thread's chunk scratch: the first area (col, or Winograd's V then M), then z or dz
 * (cc_z_floats), CC_PAD floats, then Winograd's plane scratch (cc_wino_pad_size: the
 * padded plane of x's transform, and later in a chunk cc_wino_adj's rows). */
static float *cc_chunk_scratch(const cc_block *k) {
    size_t pad = k->wino ? cc_wino_pad_size(k->th, k->tw) : 0;
    return kc_scratch(KC_SCRATCH_CHUNK, cc_area(k) + cc_z_floats(k) + CC_PAD + pad);
}

/* Prefetches the n floats at p into the cache, to be read (write 0) or written (1). */
static inline void cc_prefetch_plane(const float *p, size_t n, int write) {
    const char *b = (const char *)p, *e = (const char *)(p + n);
    for (; b < e; b += 64) {
        if (write)
            __builtin_prefetch(b, 1, 3);
        else
            __builtin_prefetch(b, 0, 3);
    }
}

/* V (16, c, ldt): the transformed tiles of x's images [i0, i0+n). The AVX-512 form's
 * loads of x wait on the cache (x is the layer before's output for the whole batch):
 * there each plane's lines are prefetched while the one before is transformed (on an
 * AMD EPYC, 30% off the transform's time; the AVX2 form got no faster). */
static void cc_wino_x_tiles(const cc_block *k, float *V, float *pad, int i0, int n) {
    size_t ldt = k->ldt, plane = (size_t)k->h * k->w;
    int wide = k->avx512 && k->w <= 14; /* cc_wino_in14_avx512 */
    for (int ch = 0; ch < k->c; ch++) /* V's row of a channel in order; x's planes of the
                                          chunk c*h*w apart where image-major */
        for (int j = 0; j < n; j++) {
            int nj = j + 1 < n ? j + 1 : 0, nch = j + 1 < n ? ch : ch + 1;
            if (wide && nch < k->c)
                cc_prefetch_plane(k->x + (size_t)(i0 + nj) * k->istride + (size_t)nch * k->cstride,
                                  plane, 0);
            cc_wino_in_plane(V + (size_t)ch * ldt + (size_t)j * k->nt, (size_t)k->c * ldt,
                             k->x + (size_t)(i0 + j) * k->istride + (size_t)ch * k->cstride,
                             k->h, k->w, k->th, k->tw, pad, k->avx512);
        }
    if (wide) atomic_fetch_add(&cc_wide_done[2], (uint64_t)n);
}

/* Images [i0, i0+n) by Winograd: V (16, c, ldt) of x, the 16 products into M (16, f,
 * ldt), then the tiles of M back into z (f, n*hw) for cc_pool_forward, or where
 * k->fused pooled straight into y, choice and zmax (cc_wino_pool_relu_avx2). */
static void cc_wino_forward_chunk(const cc_block *k, float *area, float *z, float *pad, int i0,
                                  int n) {
    int c = k->c, f = k->f, tiles = n * k->nt, ldt = k->ldt;
    size_t ld = (size_t)n * k->hw;
    float *V = area, *M = area + (size_t)16 * c * ldt;
    if (!k->gemm_only) cc_wino_x_tiles(k, V, pad, i0, n);
    for (int p = 0; p < 16; p++)
        k->gemm(0, 0, f, tiles, c, 1.0f, k->U + (size_t)p * f * c, c, V + (size_t)p * c * ldt,
                ldt, 0.0f, M + (size_t)p * f * ldt, ldt);
    if (k->gemm_only) return;
#if defined(__x86_64__) && defined(__GNUC__)
    if (k->wide) { /* a filter's tiles of all n images at once */
        for (int co = 0; co < f; co++)
            cc_wino_pool_relu_avx512(k, M + (size_t)co * ldt, (size_t)f * ldt, co, i0, n);
        return;
    }
    if (k->fused) {
        for (int co = 0; co < f; co++)
            for (int j = 0; j < n; j++) {
                size_t o = cc_plane_at(k, co, i0 + j);
                cc_wino_pool_relu_avx2(M + (size_t)co * ldt + (size_t)j * k->nt,
                                       (size_t)f * ldt, k->th, k->tw, k->bias[co],
                                       k->y + o, k->choice_out + o,
                                       k->zmax_out ? k->zmax_out + o : NULL, cc_plane_room(k, co));
            }
        return;
    }
#endif
    for (int co = 0; co < f; co++)
        for (int j = 0; j < n; j++)
            cc_wino_out_plane(z + (size_t)co * ld + (size_t)j * k->hw, k->h, k->w,
                              M + (size_t)co * ldt + (size_t)j * k->nt, (size_t)f * ldt, k->th,
                              k->tw);
    cc_pool_forward(k, z, (int)ld, i0, n);
}

/* dU (16, f, c) = beta dU + M[p] V[p]^T for each p: the gradient of the transformed
 * filters from a chunk's tiles, V (16, c, ldt) of x and M (16, f, ldt) of dz. */
static void cc_wino_dw_products(const cc_block *k, const float *V, const float *M, int tiles,
                                float *dU, float beta) {
    int c = k->c, f = k->f, ldt = k->ldt;
    for (int p = 0; p < 16; p++)
        k->gemm(0, 1, f, c, tiles, 1.0f, M + (size_t)p * f * ldt, ldt, V + (size_t)p * c * ldt,
                ldt, beta, dU + (size_t)p * f * c, c);
}

/* dU (16, f, c) = beta dU + the gradient of the transformed filters from images
 * [i0, i0+n): V (16, c, ldt) of x as forward, M (16, f, ldt) of dz's tiles
 * (cc_wino_grad_tiles), then cc_wino_dw_products. */
static void cc_wino_dw_chunk(const cc_block *k, float *area, const float *dz, float *pad, int i0,
                             int n, float *dU, float beta) {
    int c = k->c, f = k->f, ldt = k->ldt;
    size_t ld = (size_t)n * k->hw;
    float *V = area, *M = area + (size_t)16 * c * ldt;
    if (!k->gemm_only) {
        cc_wino_x_tiles(k, V, pad, i0, n);
        for (int co = 0; co < f; co++)
            for (int j = 0; j < n; j++)
                cc_wino_grad_plane(M + (size_t)co * ldt + (size_t)j * k->nt, (size_t)f * ldt,
                                   dz + (size_t)co * ld + (size_t)j * k->hw, k->h, k->w, k->th,
                                   k->tw);
    }
    cc_wino_dw_products(k, V, M, n * k->nt, dU, beta);
}

/* dx of images [i0, i0+n) by Winograd's steps backwards, M (16, f, ldt) holding dz's
 * tiles A dz A^T (those dW took) and k->U the filters transposed: the 16 products
 * dV[p] (c, tiles) = U[p]^T M[p] into V's place (16, c, ldt; dW is done with V), then
 * each of dx's planes the adjoint transform of its tiles (cc_wino_adj; with AVX-512 two
 * images' planes at a time, cc_wino_adj2_avx512), channel by channel and the chunk's
 * images in turn, so that each of dV's 16 rows is read straight through (image by
 * image, the step was 2.5% slower on an AMD EPYC: each plane's reads jumped a row of
 * dV). dx's next planes are prefetched for writing while these are made: dx is the
 * batch's, and its lines are not in the cache (on an AMD EPYC the transform's time fell
 * by a sixth in AVX2, by a quarter in AVX-512). scr: the chunk's plane scratch. */
static void cc_wino_dx_chunk(const cc_block *k, float *area, float *scr, int i0, int n) {
    int c = k->c, f = k->f, tiles = n * k->nt, ldt = k->ldt;
    float *dV = area, *M = area + (size_t)16 * c * ldt;
    for (int p = 0; p < 16; p++)
        k->gemm(0, 0, c, tiles, f, 1.0f, k->U + (size_t)p * c * f, f, M + (size_t)p * f * ldt,
                ldt, 0.0f, dV + (size_t)p * c * ldt, ldt);
    if (k->gemm_only) return;
    int pairs = k->avx512 && k->tw <= 8 * CC_ADJ_GROUPS ? n / 2 : 0; /* cc_wino_adj2_avx512 */
    for (int ch = 0; ch < c; ch++) {
        float *x0 = k->dx + (size_t)i0 * k->istride + (size_t)ch * k->cstride;
        const float *d0 = dV + (size_t)ch * ldt;
        for (int j = 0; j < n;) {
            int two = j < 2 * pairs;
            int nj = j + 1 + two, nch = ch; /* the next planes, prefetched for writing */
            if (nj >= n) nj = 0, nch++;
            if (nch < c)
                for (int u = 0; u < 1 + (nj < 2 * pairs); u++)
                    cc_prefetch_plane(k->dx + (size_t)(i0 + nj + u) * k->istride +
                                          (size_t)nch * k->cstride,
                                      (size_t)k->h * k->w, 1);
#if defined(__x86_64__) && defined(__GNUC__)
            if (two) {
                cc_wino_adj2_avx512(x0 + (size_t)j * k->istride, x0 + (size_t)(j + 1) * k->istride,
                                    k->h, k->w, d0 + (size_t)j * k->nt, (size_t)c * ldt, k->th,
                                    k->tw, k->nt);
                j += 2;
                continue;
            }
#endif
            cc_wino_adj_plane(x0 + (size_t)j * k->istride, k->h, k->w, d0 + (size_t)j * k->nt,
                              (size_t)c * ldt, k->th, k->tw, scr);
            j++;
        }
    }
    if (pairs) atomic_fetch_add(&cc_wide_done[3], (uint64_t)2 * pairs);
}

/* The backward pass of images [i0, i0+n) where k->fused: V (16, c, ldt) of x; dz made
 * from dy and transformed at once (cc_wino_unpool_relu_avx2, or with AVX-512
 * cc_wino_unpool_relu_avx512, which keeps the gradients passed in vbuf: the chunk's
 * z area) into M (16, f, ldt); db += dz's sums, dU += the products; then dx from M
 * (cc_wino_dx_chunk). */
static void cc_wino_backward_fused(const cc_block *k, float *area, float *vbuf, float *pad,
                                   int i0, int n, float *dU, float beta, float *db) {
    int c = k->c, f = k->f, ldt = k->ldt;
    float *V = area, *M = area + (size_t)16 * c * ldt;
#if defined(__x86_64__) && defined(__GNUC__)
    if (!k->gemm_only) {
        size_t pp = (size_t)k->ph * k->pw, total = (size_t)f * k->b * pp;
        cc_wino_x_tiles(k, V, pad, i0, n);
        for (int co = 0; co < f; co++) {
            if (k->wide) {
                cc_wino_unpool_relu_avx512(k, M + (size_t)co * ldt, (size_t)f * ldt, co, i0, n,
                                           vbuf, db + co);
                continue;
            }
            for (int j = 0; j < n; j++) {
                size_t o = cc_plane_at(k, co, i0 + j);
                db[co] += cc_wino_unpool_relu_avx2(M + (size_t)co * ldt + (size_t)j * k->nt,
                                                   (size_t)f * ldt, k->th, k->tw, k->dy + o,
                                                   k->choice + o, total - o);
            }
        }
    }
#else
    (void)f, (void)db, (void)vbuf;
#endif
    cc_wino_dw_products(k, V, M, n * k->nt, dU, beta);
    if (k->dx) cc_wino_dx_chunk(k, area, pad, i0, n);
}

static void cc_forward_group(void *ctx, int g) {
    const cc_block *k = ctx;
    int lo = cc_group_lo(k, g), hi = cc_group_lo(k, g + 1);
#if defined(__x86_64__) && defined(__GNUC__)
    if (k->direct) {
        size_t n = cc_direct_pad_floats(k->c, k->ph, k->pw);
        float *pads = kc_scratch(KC_SCRATCH_CHUNK, n + 16);
        int wide = cc_avx512();
        for (int i = lo; i < hi; i++)
            if (wide)
                cc_direct_image_avx512(k, i, pads, pads + n);
            else
                cc_direct_image_avx2(k, i, pads, pads + n);
        return;
    }
#endif
    float *col = cc_chunk_scratch(k), *z = col + cc_area(k);
    float *pad = z + cc_z_floats(k) + CC_PAD;
    for (int i = lo; i < hi; i += k->nc) {
        int n = hi - i < k->nc ? hi - i : k->nc, ld = n * k->hw;
        if (k->wino) {
            cc_wino_forward_chunk(k, col, z, pad, i, n);
            continue;
        }
        if (!k->gemm_only) cc_im2col(k, col, ld, i, n);
        k->gemm(0, 0, k->f, ld, k->ck, 1.0f, k->W, k->ck, col, ld, 0.0f, z, ld);
        if (!k->gemm_only) cc_pool_forward(k, z, ld, i, n);
    }
}

static void cc_backward_group(void *ctx, int g) {
    const cc_block *k = ctx;
    int lo = cc_group_lo(k, g), hi = cc_group_lo(k, g + 1);
    float *dW = k->partial + (size_t)g * (k->npart + k->f), *db = dW + k->npart;
    float *col = cc_chunk_scratch(k), *dz = col + cc_area(k);
    float *pad = dz + cc_z_floats(k) + CC_PAD;
    memset(db, 0, (size_t)k->f * sizeof *db);
#if defined(__x86_64__) && defined(__GNUC__)
    if (k->direct_dw) {
        size_t n = cc_direct_pad_floats(k->c, k->ph, k->pw) + 16, na = (size_t)k->f * k->ck * 16;
        float *pads = kc_scratch(KC_SCRATCH_CHUNK, n + na + (size_t)k->f * 16), *acc = pads + n;
        float *dbacc = acc + na;
        memset(acc, 0, (na + (size_t)k->f * 16) * sizeof *acc);
        for (int i = lo; i < hi; i++) cc_direct_dw_image_avx512(k, i, pads, acc, dbacc);
        cc_direct_dw_finish(acc, dbacc, k->f, k->ck, dW, db);
        return;
    }
#endif
    for (int i = lo; i < hi; i += k->nc) {
        int n = hi - i < k->nc ? hi - i : k->nc, ld = n * k->hw;
        float beta = i == lo ? 0.0f : 1.0f;
        if (k->fused) {
            cc_wino_backward_fused(k, col, dz, pad, i, n, dW, beta, db);
            continue;
        }
        if (!k->gemm_only) cc_pool_backward(k, dz, ld, i, n, db);
        if (k->wino) { /* dU from V and M in col's area, then dx from M into V's place */
            cc_wino_dw_chunk(k, col, dz, pad, i, n, dW, beta);
            if (k->dx) cc_wino_dx_chunk(k, col, pad, i, n);
            continue;
        }
        if (!k->gemm_only) cc_im2col(k, col, ld, i, n);
        if (k->dwt) /* dW^T (ck, f) += col dz^T: the same sums (cc_plan says when) */
            k->gemm(0, 1, k->ck, k->f, ld, 1.0f, col, ld, dz, ld, beta, dW, k->f);
        else
            k->gemm(0, 1, k->f, k->ck, ld, 1.0f, dz, ld, col, ld, beta, dW, k->ck);
        if (k->dx) {
            k->gemm(1, 0, k->ck, ld, k->f, 1.0f, k->W, k->ck, dz, ld, 0.0f, col, ld);
            if (!k->gemm_only) cc_col2im(k, col, ld, i, n);
        }
    }
}

/* Fills in the plan of a call: groups, chunk size, the weight gradient's orientation. */
static void cc_plan(cc_block *k) {
    int own = k->wino; /* the table's own algorithms allowed (kc_conv_block_forward's and
                          kc_conv_block_backward's wino) */
    k->hw = k->h * k->w;
    k->ck = k->c * 9;
    k->ph = k->h / 2;
    k->pw = k->w / 2;
    k->th = (k->h + 1) / 2;
    k->tw = (k->w + 1) / 2;
    k->nt = k->th * k->tw;
    /* Winograd where the table allows it (k->wino on entry) and kn_cpu_winograd says so:
     * by default where c >= CC_WINO_MIN_C. The transforms cost per tile and channel what
     * the products save per tile, channel and filter, so few input channels do not pay
     * for them (docs/benchmarks/train-speed.md: the model's second layer with c = 4
     * slower, 8 even, 16 and 32 faster; its first layer, c = 1, slower). */
    int mode = atomic_load(&cc_wino_mode);
    k->wino = k->wino && (mode == KN_WINO_ALL || (mode == KN_WINO_RULE && k->c >= CC_WINO_MIN_C));
    k->fused = k->wino && k->act == KN_RELU && !(k->h & 1) && !(k->w & 1) && cc_avx2() &&
               atomic_load(&cc_fuse);
    k->avx512 = k->wino && cc_avx512();
    k->wide = k->fused && k->avx512;
    /* The direct convolution where the table allows it and kn_cpu_direct says so: by
     * default where c <= CC_DIRECT_MAX_C, whose im2col GEMMs are too thin (K = 9c) to
     * pay for the passes over z around them (train-speed.md: the first layer, c = 1). */
    static _Atomic int env_off = -1; /* TN_CPU_NO_DIRECT=1 */
    if (atomic_load(&env_off) < 0) {
        const char *v = getenv("TN_CPU_NO_DIRECT");
        atomic_store(&env_off, v && *v == '1');
    }
    int dmode = atomic_load(&env_off) ? KN_DIRECT_OFF : atomic_load(&cc_direct_mode);
    k->direct = own && !k->wino && k->act == KN_RELU && !(k->h & 1) && !(k->w & 1) &&
                cc_avx2() && atomic_load(&cc_fuse) &&
                (dmode == KN_DIRECT_ALL || (dmode == KN_DIRECT_RULE && k->c <= CC_DIRECT_MAX_C));
    k->npart = k->wino ? (size_t)16 * k->f * k->c : (size_t)k->f * k->ck;
    size_t part = (k->npart + k->f) * sizeof(float);
    int g = k->b < CC_GROUPS ? k->b : CC_GROUPS;
    while (g > 1 && (size_t)g * part > CC_PARTIAL_BYTES) g--;
    k->groups = g;
    /* an image's V and M (Winograd: fused or not, the same chunks, so the same bits), or
     * its col and z */
    size_t per_image = (k->wino ? (size_t)16 * (k->c + k->f) * k->nt
                                : (size_t)(k->ck + k->f) * k->hw) * sizeof(float);
    int most = (k->b + g - 1) / g; /* the largest group */
    size_t fit = (k->wino ? CC_WINO_CHUNK_BYTES : CC_CHUNK_BYTES) / per_image;
    int nc = fit < 1 ? 1 : fit > (size_t)most ? most : (int)fit;
    int chunks = (most + nc - 1) / nc;
    k->nc = (most + chunks - 1) / chunks; /* as many chunks, as even as they go */
    k->ldt = k->nc * k->nt + CC_TILE_PAD;
    k->gemm_only = atomic_load(&cc_gemm_only);
    /* The direct convolution's backward pass makes dW itself where there is no dx. */
    k->direct_dw = k->direct && !k->dx && cc_avx512();
    /* OpenBLAS (0.3.21, Haswell and SkylakeX kernels) makes the weight gradient faster as
     * col dz^T, (ck, f), where ck >= f (the second layer: 3% and 7%); the first layer's
     * (f = 32, ck = 9) is faster as dz col^T on AVX2. The direct dW is (f, ck). */
    k->dwt = k->ck >= k->f && !k->direct_dw;
}

/* Runs the groups on the workers when there are enough to go round (a product made
 * inside a group then runs on its thread alone: the workers are taken); else one after
 * the other, each product on all threads. */
static void cc_run(cc_block *k, kw_task_fn fn) {
    if (k->groups >= kw_threads()) {
        kw_run(k->groups, fn, k);
    } else {
        for (int g = 0; g < k->groups; g++) fn(k, g);
    }
}

/* The filters' transforms on the backend's threads (one task per thread, a range of U's
 * rows each: cc_wino_filters_rows, or its AVX2 form where cc_avx2(); what a task writes
 * does not depend on the thread). */
typedef struct cc_filters {
    float *U;
    const float *W;
    int f, c, transposed, tasks;
} cc_filters;

static void cc_filters_task(void *ctx, int t) {
    const cc_filters *q = ctx;
    int rows = q->transposed ? q->c : q->f;
    int lo = (int)((long long)t * rows / q->tasks), hi = (int)((long long)(t + 1) * rows / q->tasks);
#if defined(__x86_64__) && defined(__GNUC__)
    if (cc_avx2()) {
        cc_wino_filters_rows_avx2(q->U, q->W, q->f, q->c, q->transposed, lo, hi);
        return;
    }
#endif
    cc_wino_filters_rows(q->U, q->W, q->f, q->c, q->transposed, lo, hi, 0);
}

static void cc_wino_filters(float *U, const float *W, int f, int c, int transposed) {
    cc_filters q = {U, W, f, c, transposed, kw_threads()};
    kw_run(q.tasks, cc_filters_task, &q);
}

void kc_conv_block_forward(kc_gemm_fn *gemm, int wino, float *y, uint8_t *choice, float *zmax,
                           const float *x, int b, size_t istride, size_t cstride, int c, int h,
                           int w, const float *W, const float *bias, int f, int act) {
    if (b <= 0) return;
    cc_block k = {.gemm = gemm, .wino = wino, .b = b, .c = c, .h = h, .w = w, .f = f,
                  .act = act, .istride = istride, .cstride = cstride, .x = x, .W = W,
                  .bias = bias, .y = y, .zmax_out = zmax, .choice_out = choice};
    cc_plan(&k);
    if (k.wino) { /* the filters transformed once, into this thread's scratch, read by all */
        float *U = kc_scratch(KC_SCRATCH_FILTERS, (size_t)16 * f * c);
        if (!k.gemm_only) cc_wino_filters(U, W, f, c, 0);
        k.U = U;
    }
    if (k.direct) {
        kc_count_flops(2 * (uint64_t)f * 9 * c * (uint64_t)h * w * b);
        atomic_fetch_add(&cc_direct_done[0], (uint64_t)b);
    }
    if (k.wide && !k.gemm_only) atomic_fetch_add(&cc_wide_done[0], (uint64_t)b);
    cc_run(&k, cc_forward_group);
}

/* out (rows, cols) = the sum of the groups' (rows, cols) at partial, stride apart, in
 * group order; transposed: out (cols, rows) instead. Untransposed, a block of out at a
 * time (in L1) takes each group's block in turn: one stream at a time, not one an
 * element of each group; each element's sums are the same, in the same order. */
VECTORISE static void cc_sum_groups(float *restrict out, const float *restrict partial, int rows,
                                    int cols, size_t stride, int groups, int transposed) {
    if (!transposed) {
        enum { BLOCK = 1024 };
        size_t n = (size_t)rows * cols;
        for (size_t lo = 0; lo < n; lo += BLOCK) {
            size_t m = n - lo < BLOCK ? n - lo : BLOCK;
            float *restrict o = out + lo;
            for (size_t i = 0; i < m; i++) o[i] = partial[lo + i];
            for (int g = 1; g < groups; g++) {
                const float *restrict q = partial + (size_t)g * stride + lo;
                for (size_t i = 0; i < m; i++) o[i] += q[i];
            }
        }
        return;
    }
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            size_t i = (size_t)r * cols + c;
            float sum = partial[i];
            for (int g = 1; g < groups; g++) sum += partial[(size_t)g * stride + i];
            out[(size_t)c * rows + r] = sum;
        }
}

/* The end of a Winograd backward pass on the backend's threads: each task takes a range
 * [lo, hi) of the f*c 3x3 kernels, sums their 16 dU over the groups (in group order),
 * then makes their dW = G^T dU G; the ranges are disjoint, so the bits do not depend
 * on the threads. */
typedef struct cc_finish {
    float *dW, *dU;
    const float *partial;
    size_t us, stride;
    int groups, tasks;
} cc_finish;

static void cc_finish_task(void *ctx, int t) {
    const cc_finish *q = ctx;
    size_t lo = (size_t)t * q->us / q->tasks, hi = (size_t)(t + 1) * q->us / q->tasks;
    if (lo == hi) return;
    for (int p = 0; p < 16; p++) {
        size_t at = (size_t)p * q->us + lo;
        cc_sum_groups(q->dU + at, q->partial + at, 1, (int)(hi - lo), q->stride, q->groups, 0);
    }
    cc_wino_filter_grads(q->dW, q->dU, q->us, lo, hi);
}

void kc_conv_block_backward(kc_gemm_fn *gemm, int wino, float *dW, float *db, float *dx,
                            const float *dy, const uint8_t *choice, const float *y,
                            const float *zmax, const float *x, int b, size_t istride,
                            size_t cstride, int c, int h, int w, const float *W, int f, int act) {
    cc_block k = {.gemm = gemm, .wino = wino, .b = b, .c = c, .h = h, .w = w, .f = f,
                  .act = act, .istride = istride, .cstride = cstride, .x = x, .W = W, .dy = dy,
                  .yin = y, .zmax = zmax, .choice = choice, .dx = dx};
    size_t nw = (size_t)f * c * 9;
    if (b <= 0) {
        memset(dW, 0, nw * sizeof *dW);
        memset(db, 0, (size_t)f * sizeof *db);
        return;
    }
    cc_plan(&k);
    /* the groups' partial sums, then (Winograd) the sum of their dU */
    k.partial = kc_scratch(KC_SCRATCH_PARTIAL, (size_t)k.groups * (k.npart + f) + (k.wino ? k.npart : 0));
    if (k.wino && dx) { /* dx's filters, transposed, once */
        float *U = kc_scratch(KC_SCRATCH_FILTERS, (size_t)16 * f * c);
        if (!k.gemm_only) cc_wino_filters(U, W, f, c, 1);
        k.U = U;
    }
    if (k.direct_dw) {
        kc_count_flops(2 * (uint64_t)f * 9 * c * (uint64_t)h * w * b);
        atomic_fetch_add(&cc_direct_done[1], (uint64_t)b);
    }
    if (k.wide && !k.gemm_only) atomic_fetch_add(&cc_wide_done[1], (uint64_t)b);
    cc_run(&k, cc_backward_group);
    if (k.gemm_only) return;
    size_t stride = k.npart + f;
    if (k.wino) { /* dU summed, then each filter's G^T dU G */
        cc_finish q = {dW, k.partial + (size_t)k.groups * stride, k.partial, (size_t)f * c, stride,
                       k.groups, kw_threads()};
        kw_run(q.tasks, cc_finish_task, &q);
    } else if (k.dwt) {
        cc_sum_groups(dW, k.partial, k.ck, f, stride, k.groups, 1);
    } else {
        cc_sum_groups(dW, k.partial, f, k.ck, stride, k.groups, 0);
    }
    cc_sum_groups(db, k.partial + k.npart, 1, f, stride, k.groups, 0);
}
