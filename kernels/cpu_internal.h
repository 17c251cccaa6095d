/*
 * cpu_internal.h — what the CPU backend's files share (cpu.c, cpu_conv.c): the conv
 * blocks, written once and made into both CPU tables (kn_cpu, kn_cpu_device) with the
 * table's own matrix product, so that kn_cpu_device's tf32 and bf16 round inside a
 * block too. Contracts: kernels.h (conv_block_forward, conv_block_backward).
 */
#ifndef TN_CPU_INTERNAL_H
#define TN_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* A table's gemm (kernels.h). */
typedef void kc_gemm_fn(int ta, int tb, int m, int n, int k, float alpha, const float *a,
                        int lda, const float *b, int ldb, float beta, float *c, int ldc);

/* conv_block_forward and conv_block_backward with the products made by gemm; wino: 1 where
 * the table may take Winograd F(2x2,3x3) (kn_cpu_winograd) or the direct convolution
 * (kn_cpu_direct), whose products are its own, 0 for im2col and gemm always
 * (kn_cpu_device, which does what the CUDA backend does, and rounds in its gemm). */
void kc_conv_block_forward(kc_gemm_fn *gemm, int wino, float *y, uint8_t *choice, float *zmax,
                           const float *x, int b, size_t istride, size_t cstride, int c, int h,
                           int w, const float *W, const float *bias, int f, int act);
void kc_conv_block_backward(kc_gemm_fn *gemm, int wino, float *dW, float *db, float *dx,
                            const float *dy, const uint8_t *choice, const float *y,
                            const float *zmax, const float *x, int b, size_t istride,
                            size_t cstride, int c, int h, int w, const float *W, int f, int act);

/* Adds flops to kn_cpu_gemm_flops: the products a conv block makes without gemm. */
void kc_count_flops(uint64_t flops);

/* Per-thread scratch (cpu_conv.c), one of each kind a thread: */
enum kc_scratch {
    KC_SCRATCH_CHUNK,   /* a conv chunk's col and z, or its padded planes */
    KC_SCRATCH_PARTIAL, /* a conv call's partial sums */
    KC_SCRATCH_FILTERS, /* a conv call's Winograd filters */
    KC_SCRATCH_GEMM,    /* kc_gemm_avx512's packed operands */
    KC_SCRATCH_KINDS
};

/* This thread's scratch of kind `which`, at least n floats, 64-byte aligned (zeroed when
 * grown, its contents kept otherwise); it is the thread's until the thread ends, and
 * the next call for the same kind may move it. Out of memory aborts with a message. */
float *kc_scratch(int which, size_t n);

/* 1 where the CPU has AVX-512 F, so that kc_gemm_avx512 can run (x86-64 GCC builds). */
int kc_gemm_avx512_cpu(void);

/* cblas_sgemm's product, row-major (c (m, n) = alpha op(a) op(b) + beta c), by
 * cpu_gemm.c's AVX-512 kernel, on the calling thread; only where kc_gemm_avx512_cpu().
 * Each element's sum is made in the same order whatever m, n and where it lies, so a
 * product split between threads by rows or columns gives the whole one's bits. */
void kc_gemm_avx512(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                    const float *b, int ldb, float beta, float *c, int ldc);

#endif
