/*
 * kernels.h — the compute interface the training engine runs on.
 *
 * A backend is a table of functions over buffers that live on its device: the CPU
 * backend (kernels/cpu.c, OpenBLAS for every matrix product, plain loops written to
 * vectorise for the element-wise work) and the CUDA backend (kernels/cuda.cu, cuBLAS
 * for the products and its own kernels for the rest; kernels/cuda.h creates one per
 * GPU). The model never touches buffer contents directly: it allocates, copies in and
 * out, and calls these functions, so the same model code runs on either device.
 *
 * Notation: matrices are row-major. B batch, C channels, H x W image, D features,
 * K classes, P parameters, N examples. Shapes are written next to arguments as (B, D).
 * Every function never fails on valid arguments (shapes are the caller's contract;
 * asserted in debug builds); a device backend that meets an error it cannot return
 * (out of memory, a failed launch) exits the process with file:line, the library's
 * message and a hint (docs/trainer.md, "Devices").
 *
 * Order of work: the CPU backend does each call before returning. A device backend
 * runs the calls of one table in order on one queue (a CUDA stream): a call may return
 * before its work is done, but every later call sees its result; upload and download
 * return once the bytes have been copied, and sync waits for everything. So results
 * are the same as if every call were synchronous, and the host only waits where it
 * reads something back.
 *
 * Optional entries. A backend may leave the last entries of the table NULL:
 * conv_block_forward and conv_block_backward, a whole conv block (conv, bias,
 * activation, max-pool) in one call, which the CPU backend works a few images at a time
 * on all its threads (kernels/cpu_conv.c) and the CUDA backend makes of im2col, one
 * product and one kernel for the rest each way (kernels/cuda.cu). The model makes the
 * block of the separate calls where they are NULL (trainer/model.h, mdl_model.fused).
 *
 * Steps without the host. A training step on a GPU is a few dozen short launches; the
 * host should neither wait for the device every step nor pay for each launch. For that
 * the table also has: a data set kept on the device and batches gathered there
 * (gather_rows), dropout masks drawn there (dropout_mask), the loss summed there
 * (softmax_xent_acc into a kn_loss_acc), optimiser updates whose per-step scalars are
 * read from device memory (sgd_momentum_dev, adam_dev), small stream-ordered uploads
 * of those per-step values (upload_small), and graphs: a step recorded once
 * (graph_begin, graph_end) and replayed (graph_launch). Design: docs/trainer.md,
 * "Devices".
 */
#ifndef TN_KERNELS_H
#define TN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Precision of the matrix products (set_precision). The parameters, gradients,
 * optimiser state, every product's result and every element-wise kernel stay float32
 * whatever the setting; only the products' two inputs are rounded (to nearest even)
 * before they are multiplied, and the sums are float32. */
enum kn_precision {
    KN_FP32 = 0, /* float32 products (the default; the only one the CPU backend has) */
    KN_TF32 = 1, /* inputs rounded to TensorFloat-32 (10 mantissa bits); CUDA: cuBLAS on
                    tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32) */
    KN_BF16 = 2  /* inputs rounded to bfloat16 (7 mantissa bits); CUDA: bfloat16 operands
                    (CUDA_R_16BF) on tensor cores, float32 result, CUBLAS_COMPUTE_32F */
};

/* "fp32", "tf32", "bf16" (for flags and logs); "?" for anything else. Static. */
const char *kn_precision_name(int precision);

/* The running sums of a training run's loss, kept in device memory by
 * softmax_xent_acc, so that a step needs no device-to-host copy: the host reads the
 * struct back at reports and checkpoints. Zero it to start (upload zeroes). */
typedef struct kn_loss_acc {
    double loss_sum;  /* summed cross-entropy over every example added */
    int64_t correct;  /* examples whose arg-max logit was their label */
    int64_t bad_tag;  /* the tag of the first batch whose summed loss was not finite;
                         0 while every batch has been finite */
    double bad_loss;  /* that batch's summed loss (NaN or infinite) */
} kn_loss_acc;

/* The most bytes upload_small copies at once. */
#define KN_SMALL_MAX 256

/* dropout_mask's uniform numbers, the same on every backend: u(seed, salt, i) is the
 * top 24 bits of splitmix64's finaliser applied to
 * seed + KN_DROP_SALT * salt + KN_DROP_STEP * (i + 1), times 2^-24. */
#define KN_DROP_SALT 0xd1b54a32d192ed03ull
#define KN_DROP_STEP 0x9e3779b97f4a7c15ull

typedef struct kn_backend {
    const char *name; /* "cpu", "cpu-device" (kn_cpu_device), "cuda" */
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

    /* Threads the backend may use (CPU: OpenBLAS's for the products, and as many of its
     * own for the conv blocks). */
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

    /* ---- for steps that run without the host (see the header) ---- */

    /* Sets the precision of the matrix products (enum kn_precision) for every later
     * gemm call (graphs recorded before keep theirs). Returns 0, or TN_EINVAL when the
     * backend has no such mode (the CPU backend computes in float32 only; kn_cpu_device
     * takes all three and rounds the inputs as the CUDA backend does). */
    int (*set_precision)(int precision);

    /* Copies bytes (<= KN_SMALL_MAX) from src_host to dst_dev in the backend's order
     * of work, without waiting for the device: src_host may be reused at once, and
     * every later call sees the new bytes. For the values of one step (batch
     * position, dropout seed, learning rate) that a replayed graph reads. */
    void (*upload_small)(void *dst_dev, const void *src_host, size_t bytes);

    /* Waits until every call made so far has finished (the CPU returns at once). */
    void (*sync)(void);

    /* Graphs. graph_begin starts recording the calls that follow instead of running
     * them, and returns 1; a backend without graphs (the CPU), or one whose recordings
     * have failed before, returns 0, runs the calls as usual, and graph_end is then not
     * called. graph_end stops recording and returns the graph (yours: graph_free), or
     * NULL when the recording failed: then nothing was recorded and none of the calls
     * since graph_begin has run, so the caller makes them again directly; the backend
     * has said so in one line and refuses graphs for the rest of the run. graph_launch
     * runs a graph once, as if its calls were made again with the same arguments
     * (pointer arguments are read again, so per-step values go through device memory
     * and upload_small). While recording, nothing may be allocated, freed, uploaded,
     * downloaded or waited for (the process exits if it is), and every call must have
     * been made once with the same shapes before, so that each scratch buffer a call
     * needs already has its size (else the recording fails). Scratch the backend
     * grows later is new memory: a buffer a live graph may use is freed only after
     * the last graph is freed, so a graph stays valid whatever runs between launches. */
    int (*graph_begin)(void);
    void *(*graph_end)(void);
    void (*graph_launch)(void *graph);
    void (*graph_free)(void *graph); /* accepts NULL */

    /* A batch from a data set in device memory: x (b, d) and y (b) get rows
     * idx[*pos + i], i < b, of X (N, d) and Y (N). idx, pos (one int64) are device
     * memory, so a replayed step gathers the batch of the step it replays. */
    void (*gather_rows)(float *x, int32_t *y, const float *X, const int32_t *Y, int d,
                        const int32_t *idx, const int64_t *pos, int b);

    /* Dropout masks drawn on the device: mask[i] = u(*seed, salt, i) < keep ? 1/keep : 0
     * for i < n, with u as KN_DROP_SALT says (the same masks on every backend). seed
     * is device memory (one uint64). */
    void (*dropout_mask)(float *mask, size_t n, float keep, const uint64_t *seed,
                         uint64_t salt);

    /* softmax_xent with the sums kept in device memory: acc->loss_sum += the batch's
     * summed loss, acc->correct += its correct predictions, and when that summed loss
     * is not finite and acc->bad_tag is 0, acc->bad_tag = *tag and acc->bad_loss = the
     * loss. dlogits as softmax_xent (may be NULL). acc and tag (one int64, non-zero)
     * are device memory. Nothing is copied to the host. */
    void (*softmax_xent_acc)(const float *logits, const int32_t *labels, int b, int k,
                             float *dlogits, kn_loss_acc *acc, const int64_t *tag);

    /* im2col and col2im of b images in one call: image i is x + i*istride (dx + i*
     * istride), its channel planes cstride apart, and owns columns [i*oh*ow,
     * (i+1)*oh*ow) of col (c*kh*kw, b*oh*ow). The same as b calls of im2col / col2im
     * with ldcol = b*oh*ow; col2im_batch adds into dx as col2im does. */
    void (*im2col_batch)(float *col, const float *x, int b, size_t istride, size_t cstride,
                         int c, int h, int w, int kh, int kw, int pad);
    void (*col2im_batch)(float *dx, int b, size_t istride, size_t cstride, const float *col,
                         int c, int h, int w, int kh, int kw, int pad);

    /* sgd_momentum and adam with the scalars that change every step read from device
     * memory: lr (one float) the learning rate; hyper (three floats) = {lr, bc1, bc2}.
     * The same arithmetic as the by-value forms. */
    void (*sgd_momentum_dev)(float *p, const float *g, float *v, size_t n, const float *lr,
                             float mu, float wd, int nesterov);
    void (*adam_dev)(float *p, const float *g, float *m, float *v, size_t n,
                     const float *hyper, float b1, float b2, float eps, float wd,
                     int decoupled);

    /* float32 <-> bfloat16 (round to nearest even, NaN kept), for gradients sent as
     * bfloat16; dst and src do not overlap. */
    void (*to_bf16)(uint16_t *dst, const float *src, size_t n);
    void (*from_bf16)(float *dst, const uint16_t *src, size_t n);

    /* ---- optional: NULL where a backend does not have them; the model then makes a
     * conv block of the calls above ----
     *
     * A conv block in one call: conv 3x3 (zero padding 1, stride 1), + bias, activation
     * act (enum kn_activation), 2x2 max pooling (stride 2, an odd last row or column
     * dropped). x holds b images of c channels of h x w: image i at x + i*istride, its
     * channel planes cstride apart (im2col_batch's layout, so (b, c, h, w) and
     * (c, b, h, w) both work). W (f, c*9) as PyTorch's (f, c, 3, 3), bias (f); f at most
     * 65535 and b*h*w at most INT_MAX (the model's limits are lower: mdl_batch_check).
     * forward writes y (b, f, h/2, w/2), the pooled activations (image-major: the last
     * block's y is already the (b, f*h/2*w/2) rows a dense layer takes, and a next block
     * reads it as x with istride f*(h/2)*(w/2), cstride (h/2)*(w/2)); choice (b, f, h/2, w/2),
     * a byte an output (enum kn_pool_choice): the element of its 2x2 window it took (the
     * first of equal ones, as maxpool2_forward's arg-max), or with ReLU KN_POOL_ZERO
     * where the output is 0 (no gradient passes back); and, when zmax is not NULL, zmax
     * (b, f, h/2, w/2), the pre-activation (conv + bias) at the element taken. The
     * numbers are those of im2col_batch, gemm, add_channel_bias, the activation and
     * maxpool2_forward in turn. (A byte where maxpool2_forward keeps an int32 index: the
     * backward pass reads a quarter as much, and with ReLU need not read y.) */
    void (*conv_block_forward)(float *y, uint8_t *choice, float *zmax, const float *x, int b,
                               size_t istride, size_t cstride, int c, int h, int w,
                               const float *W, const float *bias, int f, int act);
    /* The gradients of a conv block given dy (b, f, h/2, w/2), the gradient of the loss
     * w.r.t. its y, and its forward pass's x, choice, and y (tanh; not read for relu) or
     * zmax (gelu):
     * writes dW (f, c*9), db (f) and, when dx is not NULL, dx, the gradient w.r.t. x,
     * in x's layout (istride, cstride): every element of the b images' planes. Sums may
     * be taken in another order than the unfused calls' (gemm, sum_channels), so results
     * agree with theirs to rounding. It comes after the block's forward pass over the
     * same x, which must not change in between: the CUDA backend makes its dW from the
     * im2col of x that the forward pass kept (kernels/cuda.cu). */
    void (*conv_block_backward)(float *dW, float *db, float *dx, const float *dy,
                                const uint8_t *choice, const float *y, const float *zmax,
                                const float *x, int b, size_t istride, size_t cstride, int c,
                                int h, int w, const float *W, int f, int act);
} kn_backend;

/* Activations of conv_block_forward/backward: y = max(x, 0), tanh(x), x * Phi(x). */
enum kn_activation { KN_RELU = 1, KN_TANH = 2, KN_GELU = 3 };

/* conv_block_forward's choice: the element of a 2x2 pooling window an output took (top
 * left, top right, bottom left, bottom right: of window (py, px), the element at row
 * 2py + (c >> 1), column 2px + (c & 1) for c < 4), or, with ReLU, that the output is 0
 * and passes no gradient back. */
enum kn_pool_choice {
    KN_POOL_TL = 0,
    KN_POOL_TR = 1,
    KN_POOL_BL = 2,
    KN_POOL_BR = 3,
    KN_POOL_ZERO = 4
};

/* The CPU backend (always available). Its buffers are host memory (host_memory 1). */
const kn_backend *kn_cpu(void);


/* The CPU backend presented as a device with memory of its own: the same functions and
 * results, but host_memory is 0, so callers go through upload, download and the
 * step-without-the-host path as they do for a GPU. It lets the code written for GPUs
 * run, and be tested, on any machine (trainer: TRAINER_EMULATE_DEVICE=1). Where a GPU
 * differs visibly it behaves like the GPU: set_precision(KN_TF32 or KN_BF16) rounds
 * every product's inputs as the CUDA backend does (so fp32's results change), and see
 * kn_cpu_device_fail_graphs. One table for the process: its precision is shared. */
const kn_backend *kn_cpu_device(void);

/* The batch gather on host memory, kn_cpu's gather_rows and the trainer's step on a
 * host-memory table alike: x (b, d) and y (b) get rows rows[i], i < b, of X (N, d) and Y
 * (N). The rows come in a random order, so it asks for the lines of a row two ahead
 * while it copies one (a hint: the same result; about 1% of an MLP step,
 * docs/benchmarks/train-speed.md). */
void kn_cpu_gather(float *x, int32_t *y, const float *X, const int32_t *Y, size_t d,
                   const int32_t *rows, int b);

/* For tests of the fallback from a failed graph recording: with on, kn_cpu_device's
 * graph_begin returns 1 and the calls that follow do nothing (as nothing runs on a
 * stream under capture) until graph_end, which returns NULL, says in one line that
 * graphs are off, and makes graph_begin return 0 from then on, as the CUDA backend
 * does when a capture fails. 0 (the default) gives no graphs at all. Call it before
 * the table is used from other threads. */
void kn_cpu_device_fail_graphs(int on);

/* For benchmarks of the GEMM floor (bench/bench_train.c): with on, the conv blocks of
 * kn_cpu and kn_cpu_device make only their matrix products, with the same shapes, order
 * and threads, on whatever their buffers hold; everything else they would do is
 * skipped and their outputs are left as they are. 0 (the default) computes. */
void kn_cpu_gemm_only(int on);

/* The floating-point operations, 2mnk each, of every matrix product that kn_cpu and
 * kn_cpu_device have made since the process started (the conv blocks' included, however
 * they are split between threads): for benchmarks that set a step's products against
 * the machine's peak (bench/bench_train.c). */
uint64_t kn_cpu_gemm_flops(void);

/* Who makes kn_cpu's and kn_cpu_device's matrix products (the dense layers' and the
 * conv blocks'): KN_GEMM_RULE (the default) the backend's own AVX-512 kernel
 * (kernels/cpu_gemm.c) where the CPU has AVX-512 F and the OpenBLAS kernels in use have
 * none (OPENBLAS_CORETYPE=Haswell, or an OpenBLAS that does not know the CPU: twice
 * their speed there), OpenBLAS's cblas_sgemm elsewhere; KN_GEMM_OPENBLAS OpenBLAS
 * always; KN_GEMM_OWN the own kernel wherever the CPU has AVX-512 F (for tests and
 * benchmarks). The first product reads the default from TN_CPU_GEMM (auto, openblas or
 * avx512; KN_GEMM_ENV goes back to it); TN_CPU_NO_AVX512=1 keeps every product on
 * OpenBLAS. The own kernel's results differ from OpenBLAS's by rounding only, and do
 * not depend on how the threads split a product (OpenBLAS's may, in the last bits).
 * Call it between steps. */
enum { KN_GEMM_ENV = -1, KN_GEMM_OPENBLAS = 0, KN_GEMM_RULE = 1, KN_GEMM_OWN = 2 };
void kn_cpu_gemm(int mode);

/* The products (single-threaded calls, a split product's parts counted each) that the
 * own AVX-512 kernel has made since the process started (kn_cpu_gemm): for tests and
 * benchmarks that must know which way the products went. */
uint64_t kn_cpu_gemm_own_products(void);

/* Which conv blocks of kn_cpu take Winograd F(2x2,3x3) for their products (the conv
 * output, dx and dW: kernels/cpu_conv.c; kn_cpu_device never does): KN_WINO_RULE
 * (the default) those with at least 16 input channels, where it measures faster
 * (docs/benchmarks/train-speed.md); KN_WINO_OFF none (im2col and one GEMM, as before);
 * KN_WINO_ALL every one (for tests). Call it between steps, not during one. */
enum { KN_WINO_OFF = 0, KN_WINO_RULE = 1, KN_WINO_ALL = 2 };
void kn_cpu_winograd(int mode);

/* Which conv blocks of kn_cpu that do not take Winograd make their forward pass by the
 * direct convolution (kernels/cpu_conv.c, AVX2 only: ReLU, h and w even, the pooling
 * fused): KN_DIRECT_RULE (the default) those with one input channel, where it measures
 * faster (docs/benchmarks/train-speed.md); KN_DIRECT_OFF none (im2col and one GEMM);
 * KN_DIRECT_ALL every one it can take (for tests). kn_cpu_fuse_pooling(0) and
 * TN_CPU_NO_DIRECT=1 (for the whole run: im2col's bits, as kn_cpu_device and the CUDA
 * backend make them) turn it off too. Such a block's backward pass makes dW and db directly too where it has no dx to
 * make and the CPU has AVX-512; else it is im2col's. Call it between steps. */
enum { KN_DIRECT_OFF = 0, KN_DIRECT_RULE = 1, KN_DIRECT_ALL = 2 };
void kn_cpu_direct(int mode);

/* The images whose conv blocks kn_cpu has made by the direct convolution since the
 * process started: forward passes (backward 0), or weight gradients (backward 1). For
 * tests and benchmarks that must know which way a block went. */
uint64_t kn_cpu_direct_images(int backward);

/* The images whose Winograd conv blocks kn_cpu has pooled (which 0) or unpooled (1) by
 * the fused transforms' AVX-512 forms, whose tiles it has transformed by the input
 * transform's (2: forward and backward passes), or whose dx it has made by the adjoint
 * transform's (3), since the process started (kn_cpu_conv_avx512): for tests that must
 * know that those forms ran. */
uint64_t kn_cpu_wino_avx512_images(int which);

/* Whether kn_cpu's Winograd blocks with ReLU and even h and w fuse the pooling into
 * their transforms (kernels/cpu_conv.c, AVX2 only): 1 (the default) fuses, 0 keeps the
 * separate passes, which give the same bits (for tests). Call it between steps. */
void kn_cpu_fuse_pooling(int on);

/* Whether kn_cpu's conv blocks take their AVX2 forms where the CPU has them (1, the
 * default) or their plain loops (0), as TN_CPU_NO_SIMD=1 does for the whole run; for
 * tests comparing the two. Call it between steps. */
void kn_cpu_conv_simd(int on);

/* Whether the AVX2 forms of kn_cpu's conv blocks that have an AVX-512 form (the direct
 * convolution; Winograd's input and adjoint transforms and its fused pooling and
 * unpooling) take it where the CPU has AVX-512 F, BW and VL (1, the default;
 * TN_CPU_NO_AVX512=1 turns them off for the whole run) or keep to AVX2 (0): the same
 * bits, for tests comparing the two. Call it between steps. */
void kn_cpu_conv_avx512(int on);

#ifdef __cplusplus
}
#endif

#endif
