/*
 * kernels.h — the compute interface the training engine runs on.
 *
 * A backend is a table of functions over buffers that live on its device: the CPU
 * backend (kernels/cpu.c, OpenBLAS for every matrix product, plain loops written to
 * vectorise for the element-wise work) and, later, a CUDA backend with the same
 * table. The model never touches buffer contents directly: it allocates, copies in
 * and out, and calls these functions, so the same model code runs on either device.
 *
 * Notation: matrices are row-major. B batch, C channels, H x W image, D features,
 * K classes, P parameters. Shapes are written next to arguments as (B, D).
 * All functions are synchronous from the caller's point of view and never fail on
 * valid arguments (shapes are the caller's contract; asserted in debug builds).
 */
#ifndef TN_KERNELS_H
#define TN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef struct kn_backend {
    const char *name; /* "cpu", "cuda" */
    int host_memory;  /* 1 when device buffers are ordinary host memory, so callers may
                         read and write them directly instead of upload/download */

    /* Memory on the backend's device. alloc returns zeroed memory, aborting on
     * out-of-memory; free accepts NULL. */
    void *(*alloc)(size_t bytes);
    void (*free)(void *p);
    void (*upload)(void *dst_dev, const void *src_host, size_t bytes);
    void (*download)(void *dst_host, const void *src_dev, size_t bytes);
    void (*copy)(void *dst_dev, const void *src_dev, size_t bytes); /* no overlap */
    void (*fill)(float *x, float value, size_t n);
    void (*scale)(float *x, float a, size_t n); /* x *= a */

    /* Threads the backend may use (CPU: OpenBLAS threads). */
    void (*set_threads)(int threads);

    /* c (m, n) = alpha * op(a) op(b) + beta * c, op(x) = x or x^T per ta / tb;
     * op(a) is (m, k), op(b) is (k, n); lda/ldb/ldc are the row strides. */
    void (*gemm)(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc);

    /* y (rows, cols) = each row a copy of bias (cols). */
    void (*broadcast_rows)(float *y, const float *bias, int rows, int cols);
    /* db (cols) += sum over rows of dy (rows, cols). */
    void (*sum_rows)(float *db, const float *dy, int rows, int cols);
    /* db (c) += sum over b and s of dy (b, c, s): the bias gradient of a conv layer. */
    void (*sum_channels)(float *db, const float *dy, int b, int c, int s);
    /* y (b, c, s) += bias (c) broadcast over b and s. */
    void (*add_channel_bias)(float *y, const float *bias, int b, int c, int s);

    /* Activations, y = f(x) over n elements (y may equal x); backward writes
     * dx = dy * f'(x) given both x and y = f(x) (dx may equal dy). */
    void (*relu_forward)(float *y, const float *x, size_t n);
    void (*relu_backward)(float *dx, const float *dy, const float *x, const float *y, size_t n);
    void (*tanh_forward)(float *y, const float *x, size_t n);
    void (*tanh_backward)(float *dx, const float *dy, const float *x, const float *y, size_t n);
    void (*gelu_forward)(float *y, const float *x, size_t n);
    void (*gelu_backward)(float *dx, const float *dy, const float *x, const float *y, size_t n);

    /* y = x * m elementwise (dropout with a precomputed scaled mask of 0 or 1/keep);
     * y may equal x. */
    void (*mul)(float *y, const float *x, const float *m, size_t n);

    /* Softmax cross-entropy, mean over the batch. logits (b, k), labels (b).
     * Writes dlogits (b, k) = (softmax - onehot) / b when dlogits is not NULL;
     * returns the summed (not mean) loss in *loss_sum and the number of examples whose
     * arg-max equals the label in *correct (either may be NULL). */
    void (*softmax_xent)(const float *logits, const int32_t *labels, int b, int k,
                         float *dlogits, double *loss_sum, int64_t *correct);

    /* Convolution helpers for one image: col (c*kh*kw, oh*ow), each row at stride
     * ldcol >= oh*ow, from x (c, h, w) whose channel planes lie cstride >= h*w floats
     * apart, with zero padding `pad` and stride 1; col2im adds col back into dx laid
     * out like x, which the caller zeroes first. oh = h + 2*pad - kh + 1, ow likewise.
     * The strides let a batch share one col matrix (c*kh*kw, B*oh*ow), image i in
     * columns [i*oh*ow, (i+1)*oh*ow), and read images stored as (C, B, H, W). */
    void (*im2col)(float *col, int ldcol, const float *x, size_t cstride, int c, int h, int w,
                   int kh, int kw, int pad);
    void (*col2im)(float *dx, size_t cstride, const float *col, int ldcol, int c, int h, int w,
                   int kh, int kw, int pad);

    /* y (q, p, s) = x (p, q, s) with the first two axes swapped; y != x. Converts
     * between (C, B, H*W) and (B, C, H*W) layouts. */
    void (*swap01)(float *y, const float *x, int p, int q, int s);

    /* 2x2 max pooling with stride 2 over x (n, h, w) (n = batch * channels); an odd
     * last row or column is dropped, as PyTorch's floor mode does: y (n, h/2, w/2),
     * argmax (n, h/2, w/2) holds the index within each input plane. Backward writes
     * every element of dx (n, h, w). */
    void (*maxpool2_forward)(float *y, int32_t *argmax, const float *x, int n, int h, int w);
    void (*maxpool2_backward)(float *dx, const float *dy, const int32_t *argmax, int n, int h,
                              int w);

    /* Optimiser updates over n parameters p with gradients g; wd is weight decay.
     * sgd_momentum: v = mu*v + g + wd*p; p -= lr * (nesterov ? g + wd*p + mu*v : v)
     *   (mu = 0 gives plain SGD; v is then left as g + wd*p).
     * adam: g' = g + wd*p (L2, when decoupled == 0); m = b1*m + (1-b1)*g';
     *   v = b2*v + (1-b2)*g'^2; p -= lr * (m/bc1) / (sqrt(v/bc2) + eps)
     *   and, when decoupled (AdamW), p -= lr * wd * p first. bc1 = 1 - b1^t etc. */
    void (*sgd_momentum)(float *p, const float *g, float *v, size_t n, float lr, float mu,
                         float wd, int nesterov);
    void (*adam)(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                 float b2, float eps, float wd, int decoupled, float bc1, float bc2);
} kn_backend;

/* The CPU backend (always available). */
const kn_backend *kn_cpu(void);

#endif
