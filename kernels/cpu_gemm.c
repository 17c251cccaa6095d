/*
 * cpu_gemm.c — the CPU backend's own single-precision matrix product, in AVX-512, for
 * CPUs that have AVX-512 F while the OpenBLAS kernels in use do not: OpenBLAS pinned to
 * its Haswell kernels (OPENBLAS_CORETYPE=Haswell), or an OpenBLAS that does not know the
 * CPU and falls back to them. On such a CPU OpenBLAS's products run at under half the
 * machine's peak; the MLP's run at 84% of it here on one thread, 1.9x as fast
 * (docs/benchmarks/train-speed.md).
 * Where OpenBLAS has AVX-512 kernels of its own, they are about as fast, and kn_cpu
 * keeps them (the rule of cpu.c's cpu_gemm_own, kn_cpu_gemm). Contract: cblas_sgemm's, row-major.
 *
 * Notation: c (m, n) = alpha op(a) (m, k) op(b) (k, n) + beta c, op a transpose where ta
 * or tb. The method is the Goto/BLIS one: k is cut into blocks of at most KC, n into
 * blocks of at most NC and m into blocks of at most MC; a block of op(b) (KC, NC) is
 * packed into panels of NR columns, each stored k-major (NR floats per k), and a block
 * of op(a) (MC, KC) into panels of MR rows (MR floats per k), zero-padded; the micro
 * kernel multiplies one panel of each into an MR x NR tile of c held in registers
 * (MR x NR / 16 = 16 vectors), one rank-1 update per k. The panel of op(b) (KC x NR, 32
 * KiB at most) stays in the L1 cache while the panels of op(a) stream from L2.
 *
 * Numbers: each element of c is its k products summed in order of k by fused
 * multiply-adds, one block of k at a time, then alpha times that block's sum added to
 * c (to beta c for the first block, to 0 where beta is 0: c is not read then). Where an element sits
 * in its tile, and how the caller splits c between threads, changes nothing; so a
 * product split between threads (cpu.c) gives the bits of the whole one.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define MR 8   /* rows of a tile: one broadcast each per k */
#define NR 32  /* columns of a tile: two vectors of 16 */
#define KC 256 /* k per block, at most (a panel of op(b) 32 KiB) */
#define NC 512 /* columns per block of op(b), at most (512 KiB packed, in L2) */
#define MC 128 /* rows per block of op(a), at most (128 KiB packed) */

#define AVX512 __attribute__((target("avx512f,avx2,fma")))

/* Blocks of at most cap, as even as multiples of align allow: 784 in blocks of 256 is
 * 200 + 200 + 200 + 184, not 256 + 256 + 256 + 16, whose last pass over c would do
 * little work for its loads and stores. */
static int block_size(int total, int cap, int align) {
    int blocks = (total + cap - 1) / cap;
    int size = (total + blocks - 1) / blocks;
    size = (size + align - 1) / align * align;
    return size < cap ? size : cap;
}

/* Rows r0..r0+7 of an 8-wide slice of a row-major matrix (row stride ld) into columns:
 * dst[j * dstride + r] = src[r * ld + j] for r, j < 8. */
AVX512 static inline void transpose8(const float *src, size_t ld, float *dst, size_t dstride) {
    __m256 r0 = _mm256_loadu_ps(src + 0 * ld), r1 = _mm256_loadu_ps(src + 1 * ld);
    __m256 r2 = _mm256_loadu_ps(src + 2 * ld), r3 = _mm256_loadu_ps(src + 3 * ld);
    __m256 r4 = _mm256_loadu_ps(src + 4 * ld), r5 = _mm256_loadu_ps(src + 5 * ld);
    __m256 r6 = _mm256_loadu_ps(src + 6 * ld), r7 = _mm256_loadu_ps(src + 7 * ld);
    /* pairs of rows interleaved, then pairs of pairs, then the halves swapped */
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst + 0 * dstride, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(dst + 1 * dstride, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(dst + 2 * dstride, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(dst + 3 * dstride, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(dst + 4 * dstride, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(dst + 5 * dstride, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(dst + 6 * dstride, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(dst + 7 * dstride, _mm256_permute2f128_ps(s3, s7, 0x31));
}

/* op(a) rows [i0, i0+mc), k [p0, p0+kc) into panels of MR rows, each (kc, MR): ap[q kc
 * + kk MR + r] = op(a)(i0 + q + r, p0 + kk), 0 for rows past mc. */
AVX512 static void pack_a(int ta, const float *a, int lda, int i0, int mc, int p0, int kc,
                          float *restrict ap) {
    for (int q = 0; q < mc; q += MR) {
        int mr = mc - q < MR ? mc - q : MR;
        float *dst = ap + (size_t)q * kc;
        int kk = 0;
        if (ta) { /* op(a)(i, k) = a[k lda + i]: a panel's MR values of a k are adjacent */
            const float *src = a + (size_t)p0 * lda + i0 + q;
            if (mr == MR)
                for (; kk < kc; kk++)
                    _mm256_store_ps(dst + kk * MR, _mm256_loadu_ps(src + (size_t)kk * lda));
            for (; kk < kc; kk++) {
                int r = 0;
                for (; r < mr; r++) dst[kk * MR + r] = src[(size_t)kk * lda + r];
                for (; r < MR; r++) dst[kk * MR + r] = 0.0f;
            }
        } else { /* op(a)(i, k) = a[i lda + k]: a transpose, 8 k at a time */
            const float *src = a + (size_t)(i0 + q) * lda + p0;
            if (mr == MR)
                for (; kk + 8 <= kc; kk += 8) transpose8(src + kk, (size_t)lda, dst + kk * MR, MR);
            for (; kk < kc; kk++) {
                int r = 0;
                for (; r < mr; r++) dst[kk * MR + r] = src[(size_t)r * lda + kk];
                for (; r < MR; r++) dst[kk * MR + r] = 0.0f;
            }
        }
    }
}

/* Lanes [0, n) of a vector of 16 (n may be out of range either side). */
static inline __mmask16 lanes(int n) {
    return (__mmask16)(n >= 16 ? 0xFFFFu : n <= 0 ? 0u : (1u << n) - 1u);
}

/* op(b) k [p0, p0+kc), columns [j0, j0+nc) into panels of NR columns, each (kc, NR):
 * bp[q kc + kk NR + j] = op(b)(p0 + kk, j0 + q + j), 0 for columns past nc. */
AVX512 static void pack_b(int tb, const float *b, int ldb, int p0, int kc, int j0, int nc,
                          float *restrict bp) {
    for (int q = 0; q < nc; q += NR) {
        int nr = nc - q < NR ? nc - q : NR;
        float *dst = bp + (size_t)q * kc;
        if (!tb) { /* op(b)(k, j) = b[k ldb + j]: a panel's row of a k is adjacent */
            const float *src = b + (size_t)p0 * ldb + j0 + q;
            __mmask16 m0 = lanes(nr), m1 = lanes(nr - 16);
            for (int kk = 0; kk < kc; kk++) {
                const float *row = src + (size_t)kk * ldb;
                _mm512_store_ps(dst + kk * NR, _mm512_maskz_loadu_ps(m0, row));
                _mm512_store_ps(dst + kk * NR + 16, _mm512_maskz_loadu_ps(m1, row + 16));
            }
        } else { /* op(b)(k, j) = b[j ldb + k]: a transpose, 8 x 8 at a time */
            const float *src = b + (size_t)(j0 + q) * ldb + p0;
            int kk = 0;
            if (nr == NR)
                for (; kk + 8 <= kc; kk += 8)
                    for (int j = 0; j < NR; j += 8)
                        transpose8(src + (size_t)j * ldb + kk, (size_t)ldb, dst + kk * NR + j, NR);
            for (; kk < kc; kk++) {
                int j = 0;
                for (; j < nr; j++) dst[kk * NR + j] = src[(size_t)j * ldb + kk];
                for (; j < NR; j++) dst[kk * NR + j] = 0.0f;
            }
        }
    }
}

/* The micro kernel: tile (mr, nr) of c, row stride ldc, mr <= MR and nr <= NR, gets
 * alpha ap . bp over kc (panels as pack_a and pack_b make them) plus beta c where first,
 * plus c otherwise; c is not read where first and beta is 0. wide: the tile has more
 * than 16 columns (a constant where it is inlined, so a narrow tile makes half the
 * multiply-adds). */
AVX512 static inline void tile(int wide, int kc, const float *restrict ap,
                               const float *restrict bp, float *c, int ldc, int mr, int nr,
                               float alpha, float beta, int first) {
    __m512 acc[MR][2];
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int kk = 0; kk < kc; kk++, ap += MR, bp += NR) {
        __m512 b0 = _mm512_load_ps(bp), b1 = wide ? _mm512_load_ps(bp + 16) : b0;
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            __m512 x = _mm512_set1_ps(ap[r]);
            acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
            if (wide) acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
        }
    }
    __mmask16 m0 = lanes(nr), m1 = lanes(nr - 16);
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    for (int r = 0; r < mr; r++) {
        float *row = c + (size_t)r * ldc;
        for (int v = 0; v < 1 + wide; v++) {
            __mmask16 m = v ? m1 : m0;
            __m512 x = _mm512_mul_ps(va, acc[r][v]);
            if (!first)
                x = _mm512_add_ps(_mm512_maskz_loadu_ps(m, row + 16 * v), x);
            else if (beta != 0.0f)
                x = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m, row + 16 * v), x);
            else /* as OpenBLAS's 0 + alpha sum: -0 becomes +0 */
                x = _mm512_add_ps(x, _mm512_setzero_ps());
            _mm512_mask_storeu_ps(row + 16 * v, m, x);
        }
    }
}

AVX512 static void tile_wide(int kc, const float *ap, const float *bp, float *c, int ldc, int mr,
                             int nr, float alpha, float beta, int first) {
    tile(1, kc, ap, bp, c, ldc, mr, nr, alpha, beta, first);
}

AVX512 static void tile_narrow(int kc, const float *ap, const float *bp, float *c, int ldc,
                               int mr, int nr, float alpha, float beta, int first) {
    tile(0, kc, ap, bp, c, ldc, mr, nr, alpha, beta, first);
}

/* c = beta c, without reading c where beta is 0 (a product with nothing to sum). */
static void scale(int m, int n, float beta, float *c, int ldc) {
    for (int i = 0; i < m; i++) {
        float *row = c + (size_t)i * ldc;
        if (beta == 0.0f)
            memset(row, 0, (size_t)n * sizeof *row);
        else
            for (int j = 0; j < n; j++) row[j] *= beta;
    }
}

void kc_gemm_avx512(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                    const float *b, int ldb, float beta, float *c, int ldc) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0 || alpha == 0.0f) { /* as cblas_sgemm: a and b are not read */
        if (beta != 1.0f) scale(m, n, beta, c, ldc);
        return;
    }
    int kcb = block_size(k, KC, 8), ncb = block_size(n, NC, NR), mcb = block_size(m, MC, MR);
    size_t bsize = (size_t)kcb * ((ncb + NR - 1) / NR * NR);
    float *bp = kc_scratch(KC_SCRATCH_GEMM, bsize + (size_t)mcb * kcb);
    float *ap = bp + bsize; /* bsize is a multiple of 16 floats: 64-byte aligned */
    for (int j0 = 0; j0 < n; j0 += ncb) {
        int nc = n - j0 < ncb ? n - j0 : ncb;
        for (int p0 = 0; p0 < k; p0 += kcb) {
            int kc = k - p0 < kcb ? k - p0 : kcb;
            pack_b(tb, b, ldb, p0, kc, j0, nc, bp);
            for (int i0 = 0; i0 < m; i0 += mcb) {
                int mc = m - i0 < mcb ? m - i0 : mcb;
                pack_a(ta, a, lda, i0, mc, p0, kc, ap);
                for (int jr = 0; jr < nc; jr += NR) {
                    int nr = nc - jr < NR ? nc - jr : NR;
                    for (int ir = 0; ir < mc; ir += MR) {
                        int mr = mc - ir < MR ? mc - ir : MR;
                        float *ct = c + (size_t)(i0 + ir) * ldc + j0 + jr;
                        (nr > 16 ? tile_wide : tile_narrow)(kc, ap + (size_t)ir * kc,
                                                            bp + (size_t)jr * kc, ct, ldc, mr,
                                                            nr, alpha, beta, p0 == 0);
                    }
                }
            }
        }
    }
}

int kc_gemm_avx512_cpu(void) {
    static _Atomic int have = -1;
    int h = have;
    if (h < 0) have = h = __builtin_cpu_supports("avx512f") ? 1 : 0;
    return h;
}

#else /* not x86-64 GCC: never called (kc_gemm_avx512_cpu() is 0) */

void kc_gemm_avx512(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                    const float *b, int ldb, float beta, float *c, int ldc) {
    (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b;
    (void)ldb, (void)beta, (void)c, (void)ldc;
    abort();
}

int kc_gemm_avx512_cpu(void) { return 0; }

#endif
