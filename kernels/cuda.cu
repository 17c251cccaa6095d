/*
 * cuda.cu — the CUDA backend of kernels.h (see cuda.h): cuBLAS for every matrix
 * product, the kernels below for the rest. One table per GPU, each with its own
 * non-blocking stream (every call is queued there, in order), cuBLAS handle and cuBLAS
 * workspace (set after the stream, so that recording a graph never allocates).
 *
 * Layout, as llm.c's layers: a "kernels" part (device code), a "launchers" part (one
 * host function per table entry, taking the device's context), then the tables: the
 * interface's functions take no context, so each device slot gets its own copies of
 * the launchers' entry points (a template over the slot number).
 *
 * Notation as kernels.h: row-major matrices; B batch, C channels, H x W image, K
 * classes. cuBLAS is column-major: a row-major C (m, n) = op(A) op(B) is the
 * column-major C^T = op(B)^T op(A)^T, so gemm passes B before A, and n before m.
 *
 * Numbers: the element-wise kernels use cpu.c's formulas (IEEE division and square
 * root, no fast-math), but they agree with the CPU to rounding, not bit for bit: nvcc
 * contracts a*b + c into fused multiply-adds (one rounding instead of two; we keep that
 * default, -fmad=true, because the products (cuBLAS) and libm's counterparts (tanhf,
 * erff, expf) differ from the CPU's in the last bits anyway, so turning it off would buy
 * no bit-identity and cost speed), and the kernels that sum (sum_rows, sum_channels,
 * the loss) add in other orders than the CPU's loops. Those sums use fixed reduction
 * trees whose shape depends only on the call's sizes, so a run is reproducible bit for
 * bit on the same GPU and software (tests/kernels/test_kernels.c checks every entry
 * against a double-precision reference). col2im and max-pool backward gather instead
 * of scattering: no atomics anywhere.
 *
 * Precision (set_precision): fp32 products are cublasGemmEx in float32. For tf32 and
 * bf16 the operands are first rounded (to nearest even) into scratch by our own
 * kernel, as TensorFloat-32 values in float32 storage or as bfloat16; cuBLAS then
 * multiplies those with float32 sums (CUBLAS_COMPUTE_32F_FAST_TF32 for tf32,
 * CUDA_R_16BF operands with CUBLAS_COMPUTE_32F for bf16) into a float32 result. So the
 * inputs are exactly tf32 or bf16 values whatever kernel cuBLAS picks, and
 * kn_cpu_device (cpu.c) rounds the same way.
 *
 * Graphs: a step is recorded with stream capture. A call that fails while recording
 * (CUDA refusing to capture something, an instantiation that fails) does not end the
 * process: the recording is abandoned, graph_end returns NULL, one line says that
 * graphs are off for this run, and the caller makes the calls directly, where any fault
 * that was not about recording recurs and is fatal as usual. Scratch buffers that a
 * recorded graph points to are never freed while a graph lives (grow).
 *
 * Errors: every CUDA and cuBLAS status is checked; a failure exits with file:line,
 * the library's message and a hint (out of memory: the device's free memory and the
 * hint the trainer set with kn_cuda_set_oom_hint). Design: docs/trainer.md, "Devices".
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>
#include <unistd.h>

#include "kernels/conv_window.h"
#include "kernels/cuda.h"
#include "kernels/kernels.h"

extern "C" {
#include "common/status.h"
}

#define BLOCK 256                /* threads per block of the element-wise kernels */
#define MAX_BLOCKS (1u << 20)    /* grid-stride loops cover the rest */
#define WORKSPACE (32u << 20)    /* cuBLAS workspace: 32 MiB, as cuBLAS advises on Hopper */
#define CHANNEL_SPLITS 64        /* sum_channels: partial sums per channel, at most */
#define ROW_CHUNK 256            /* sum_rows: rows per block of the first pass, at least */
#define ROW_SPLITS 64            /* sum_rows: chunks of rows, at most */
#define KEPT_COLS 8              /* conv blocks whose forward im2col is kept for their
                                    backward pass, at most */

/* ---------------------------------------------------------------------------------
 * Errors
 * --------------------------------------------------------------------------------- */

static char g_oom_hint[256];

static void report_free_memory(void) {
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
        fprintf(stderr, "hint: the GPU has %.1f MiB free of %.1f MiB%s%s\n",
                (double)free_b / (1 << 20), (double)total_b / (1 << 20),
                g_oom_hint[0] ? "; " : "", g_oom_hint);
    else if (g_oom_hint[0])
        fprintf(stderr, "hint: %s\n", g_oom_hint);
}

/* Exits after a failed call: file:line, what was called, the library's message. */
static void fatal(const char *file, int line, int device, const char *call, const char *why,
                  int oom) {
    fflush(stdout);
    fprintf(stderr, "fatal: %s:%d: %s failed on GPU %d: %s\n", file, line, call, device, why);
    if (oom)
        report_free_memory();
    else
        fprintf(stderr, "hint: errors of earlier kernels surface at later calls; "
                        "CUDA_LAUNCH_BLOCKING=1 reports each at its own launch "
                        "(docs/trainer.md, \"Devices\")\n");
    exit(1);
}

/* While GPU `device` records a graph, notes a failed call there and returns 1 (the
 * recording is abandoned at graph_end; see the header); else returns 0. */
static int recording_failed(int device, const char *call, const char *why);

static void check_cuda(cudaError_t e, const char *call, const char *file, int line,
                       int device) {
    if (e == cudaSuccess) return;
    char why[256];
    snprintf(why, sizeof why, "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
    if (recording_failed(device, call, why)) {
        cudaGetLastError(); /* a launch's error is not sticky: clear it */
        return;
    }
    fatal(file, line, device, call, why, e == cudaErrorMemoryAllocation);
}

#define CK(dev, call) check_cuda((call), #call, __FILE__, __LINE__, (dev))
#define CK_LAUNCH(dev) check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__, (dev))

/* ---------------------------------------------------------------------------------
 * cuBLAS, loaded at the first backend (see cuda.h): its library is large, and a
 * process that never uses a GPU should neither pay for loading it nor need it.
 * --------------------------------------------------------------------------------- */

typedef cublasStatus_t (*fn_create)(cublasHandle_t *);
typedef cublasStatus_t (*fn_destroy)(cublasHandle_t);
typedef cublasStatus_t (*fn_set_stream)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*fn_set_workspace)(cublasHandle_t, void *, size_t);
typedef cublasStatus_t (*fn_set_math)(cublasHandle_t, cublasMath_t);
typedef cublasStatus_t (*fn_gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                     int, int, const void *, const void *, cudaDataType, int,
                                     const void *, cudaDataType, int, const void *, void *,
                                     cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
typedef const char *(*fn_status_string)(cublasStatus_t);

/* The pointer types must be those of the header's declarations. */
static_assert(std::is_same<decltype(&cublasCreate_v2), fn_create>::value, "cublasCreate");
static_assert(std::is_same<decltype(&cublasDestroy_v2), fn_destroy>::value, "cublasDestroy");
static_assert(std::is_same<decltype(&cublasSetStream_v2), fn_set_stream>::value, "SetStream");
static_assert(std::is_same<decltype(&cublasSetWorkspace_v2), fn_set_workspace>::value,
              "SetWorkspace");
static_assert(std::is_same<decltype(&cublasSetMathMode), fn_set_math>::value, "SetMathMode");
static_assert(std::is_same<decltype(&cublasGetStatusString), fn_status_string>::value,
              "GetStatusString");
static_assert(sizeof(static_cast<fn_gemm_ex>(&cublasGemmEx)) > 0, "cublasGemmEx");

#define STR_(x) #x
#define STR(x) STR_(x)
#define CUBLAS_SONAME "libcublas.so." STR(CUBLAS_VER_MAJOR)

static struct {
    void *lib;
    fn_create create;
    fn_destroy destroy;
    fn_set_stream set_stream;
    fn_set_workspace set_workspace;
    fn_set_math set_math;
    fn_gemm_ex gemm_ex;
    fn_status_string status_string;
} g_blas;

/* Loads cuBLAS once (under g_lock). 0, or TN_EIO with the reason in err. */
static int load_cublas(char *err, size_t errlen) {
    if (g_blas.lib) return 0;
    void *lib = dlopen(CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return tn_error(err, errlen, TN_EIO,
                        "cannot load cuBLAS (%s); hint: install the CUDA %d libraries, or add "
                        "the folder holding " CUBLAS_SONAME " to LD_LIBRARY_PATH",
                        dlerror(), CUBLAS_VER_MAJOR);
    struct {
        const char *name;
        void **slot;
    } syms[] = {
        {"cublasCreate_v2", (void **)&g_blas.create},
        {"cublasDestroy_v2", (void **)&g_blas.destroy},
        {"cublasSetStream_v2", (void **)&g_blas.set_stream},
        {"cublasSetWorkspace_v2", (void **)&g_blas.set_workspace},
        {"cublasSetMathMode", (void **)&g_blas.set_math},
        {"cublasGemmEx", (void **)&g_blas.gemm_ex},
        {"cublasGetStatusString", (void **)&g_blas.status_string},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(lib, syms[i].name);
        if (!*syms[i].slot) {
            dlclose(lib);
            return tn_error(err, errlen, TN_EIO, "%s lacks %s; hint: use CUDA %d's cuBLAS",
                            CUBLAS_SONAME, syms[i].name, CUBLAS_VER_MAJOR);
        }
    }
    g_blas.lib = lib;
    return 0;
}

static void check_blas(cublasStatus_t s, const char *call, const char *file, int line,
                       int device) {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    char why[256];
    snprintf(why, sizeof why, "%s (cuBLAS status %d)",
             g_blas.status_string ? g_blas.status_string(s) : "cuBLAS error", (int)s);
    if (recording_failed(device, call, why)) {
        cudaGetLastError();
        return;
    }
    fatal(file, line, device, call, why, s == CUBLAS_STATUS_ALLOC_FAILED);
}

#define CKB(dev, call) check_blas((call), #call, __FILE__, __LINE__, (dev))

/* ---------------------------------------------------------------------------------
 * One device's context
 * --------------------------------------------------------------------------------- */

/* A conv block's im2col of its input x, kept from its forward pass for its backward
 * pass (which then makes no im2col of its own): the key is x and its shape. */
typedef struct kept_col {
    const float *x;
    int b, ch, h, w;
    size_t istride, cstride;
    int valid;                   /* col holds im2col of x from the last forward pass */
    unsigned long used;          /* when it was last claimed (0: never) */
    float *col;                  /* (cap floats) */
    size_t cap;
} kept_col;

typedef struct cuda_ctx {
    kn_backend table;            /* what kn_cuda returns */
    int ready;                   /* created (under g_lock) */
    int device;                  /* CUDA device number */
    cudaStream_t stream;         /* every call of the table is queued here */
    cublasHandle_t blas;
    void *workspace;             /* (WORKSPACE bytes) cuBLAS's, fixed before any capture */
    int precision;               /* enum kn_precision of gemm */
    int capturing;               /* a graph is being recorded */
    char capture_error[320];     /* the first call that failed while recording, or "" */
    int graphs_off;              /* a recording failed: graph_begin says no from then on */
    int live_graphs;             /* graphs graph_end returned and graph_free has not freed */
    void **retired;              /* (nretired) scratch replaced while graphs lived: kept
                                    until the last graph is freed, as they may use it */
    int nretired;
    void *rows;                  /* softmax: per-row loss (rows_cap doubles), then per-row
                                    hit (rows_cap ints) */
    size_t rows_cap;
    float *partials;             /* sum_rows, sum_channels: (partials_cap) partial sums */
    size_t partials_cap;
    unsigned char *operands;     /* gemm in tf32 or bf16: the rounded operands
                                    (operands_cap bytes) */
    size_t operands_cap;
    float *col;                  /* conv blocks: im2col of x where none was kept, then
                                    dx's columns (col_cap floats) */
    size_t col_cap;
    kept_col kept[KEPT_COLS];    /* conv blocks: the forward passes' im2col */
    unsigned long kept_clock;
    float *z;                    /* conv blocks: the conv output, then its gradient */
    size_t z_cap;
    kn_loss_acc *own_acc;        /* softmax_xent's sums on the device, and ... */
    int64_t *own_tag;            /* ... a tag of 1 for them */
} cuda_ctx;

static cuda_ctx g_ctx[KN_CUDA_MAX_DEVICES]; /* slot d drives CUDA device d */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static int recording_failed(int device, const char *call, const char *why) {
    if (device < 0 || device >= KN_CUDA_MAX_DEVICES || !g_ctx[device].capturing) return 0;
    cuda_ctx *c = &g_ctx[device];
    if (!c->capture_error[0])
        snprintf(c->capture_error, sizeof c->capture_error, "%s: %s", call, why);
    return 1;
}

/* Makes c's device current on the calling thread (each thread has its own). */
static void bind(const cuda_ctx *c) {
    int cur = -1;
    CK(c->device, cudaGetDevice(&cur));
    if (cur != c->device) CK(c->device, cudaSetDevice(c->device));
}

/* The calls that may not be recorded (kernels.h, "Graphs") end the process if they
 * are: they would wait for, or copy to, the host while nothing runs. */
static void not_while_recording(const cuda_ctx *c, const char *what) {
    if (c->capturing)
        fatal(__FILE__, __LINE__, c->device, what, "called while a graph is recorded", 0);
}

/* Scratch that grows as calls need it, and never shrinks. It cannot grow while a graph
 * is recorded (the calls of a step run once before they are recorded, which sizes it;
 * should one not have, the recording is abandoned: see the header). A buffer it
 * replaces while graphs live is not freed but retired, because a recorded graph may
 * point to it; the last graph_free frees the retired ones. */
static void *grow(cuda_ctx *c, void *p, size_t *cap, size_t need, size_t elem, const char *what) {
    if (need <= *cap) return p;
    if (c->capturing) {
        char why[160];
        snprintf(why, sizeof why, "scratch must grow to %zu elements while a graph is recorded",
                 need);
        recording_failed(c->device, what, why);
        return p; /* the recording will be discarded, never run */
    }
    if (p && c->live_graphs > 0) {
        void **r = (void **)realloc(c->retired, (size_t)(c->nretired + 1) * sizeof *r);
        if (!r) fatal(__FILE__, __LINE__, c->device, "realloc", "out of host memory", 0);
        c->retired = r;
        c->retired[c->nretired++] = p;
    } else if (p) {
        CK(c->device, cudaStreamSynchronize(c->stream)); /* calls queued may still use p */
        CK(c->device, cudaFree(p));
    }
    p = NULL;
    cudaError_t e = cudaMalloc(&p, need * elem);
    if (e != cudaSuccess) {
        char why[256];
        snprintf(why, sizeof why, "%s: cannot allocate %.1f MiB of %s scratch",
                 cudaGetErrorString(e), (double)(need * elem) / (1 << 20), what);
        fatal(__FILE__, __LINE__, c->device, "cudaMalloc", why, e == cudaErrorMemoryAllocation);
    }
    *cap = need;
    return p;
}

static unsigned blocks_for(size_t n) {
    size_t b = (n + BLOCK - 1) / BLOCK;
    if (b < 1) b = 1;
    return (unsigned)(b < MAX_BLOCKS ? b : MAX_BLOCKS);
}

/* ---------------------------------------------------------------------------------
 * Kernels
 * --------------------------------------------------------------------------------- */

/* i over [0, n) in a grid-stride loop, in the index type I (32 bits where n allows:
 * the index arithmetic of im2col and friends is mostly divisions). */
#define FOR_EACH(I, i, n)                                                                \
    for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < (I)(n);              \
         i += (I)gridDim.x * (I)blockDim.x)

#define FULL_MASK 0xffffffffu

__global__ void k_fill(float *x, float v, size_t n) {
    FOR_EACH(size_t, i, n) x[i] = v;
}

__global__ void k_scale(float *x, float a, size_t n) {
    FOR_EACH(size_t, i, n) x[i] *= a;
}

template <typename I> __global__ void k_broadcast_rows(float *y, const float *bias, I n, I cols) {
    FOR_EACH(I, i, n) y[i] = bias[i % cols];
}

/* sum_rows, first pass: blocks of 32 columns x 16 row lanes, grid x over the columns
 * and y over chunks of `chunk` rows. Each lane sums every 16th row of its chunk, then
 * the lane sums are added in lane order; the chunk's sum goes to part[chunk * cols + j],
 * or with one chunk (part NULL) straight into db[j]. */
__global__ void k_sum_rows(float *db, float *part, const float *dy, int rows, int cols,
                           int chunk) {
    __shared__ float lanes[16][33];
    int j = blockIdx.x * 32 + threadIdx.x;
    int lo = blockIdx.y * chunk, hi = lo + chunk < rows ? lo + chunk : rows;
    float s = 0.0f;
    if (j < cols)
        for (int r = lo + threadIdx.y; r < hi; r += 16) s += dy[(size_t)r * cols + j];
    lanes[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && j < cols) {
        float t = 0.0f;
        for (int y = 0; y < 16; y++) t += lanes[y][threadIdx.x];
        if (part)
            part[(size_t)blockIdx.y * cols + j] = t;
        else
            db[j] += t;
    }
}

/* sum_rows, second pass: db[j] += the chunks' sums, in chunk order. */
__global__ void k_sum_row_parts(float *db, const float *part, int cols, int chunks) {
    FOR_EACH(int, j, cols) {
        float t = 0.0f;
        for (int q = 0; q < chunks; q++) t += part[(size_t)q * cols + j];
        db[j] += t;
    }
}

/* Sum of v over a block of BLOCK threads, in a fixed tree; the result in thread 0. */
template <typename T> __device__ T block_sum(T v, T *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    return sh[0];
}

/* sum_channels, first pass: part[ch * splits + sp] = the sum of chunk sp of channel
 * ch's b*s elements (grid: x = channel, y = chunk). */
__global__ void k_channel_parts(float *part, const float *dy, int b, int c, size_t s,
                                int splits) {
    __shared__ float sh[BLOCK];
    int ch = blockIdx.x, sp = blockIdx.y;
    size_t total = (size_t)b * s, chunk = (total + splits - 1) / splits;
    size_t lo = (size_t)sp * chunk, hi = lo + chunk < total ? lo + chunk : total;
    float acc = 0.0f;
    if (b == 1) {
        const float *p = dy + (size_t)ch * s;
        for (size_t t = lo + threadIdx.x; t < hi; t += BLOCK) acc += p[t];
    } else {
        for (size_t t = lo + threadIdx.x; t < hi; t += BLOCK)
            acc += dy[((t / s) * c + ch) * s + t % s];
    }
    float sum = block_sum(acc, sh);
    if (threadIdx.x == 0) part[(size_t)ch * splits + sp] = sum;
}

/* sum_channels, second pass: db[ch] += the chunks' sums, in chunk order (with add 0,
 * db[ch] = their sum: the conv blocks'). */
__global__ void k_channel_total(float *db, const float *part, int c, int splits, int add) {
    int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= c) return;
    float t = 0.0f;
    for (int sp = 0; sp < splits; sp++) t += part[(size_t)ch * splits + sp];
    db[ch] = add ? db[ch] + t : t;
}

template <typename I>
__global__ void k_add_channel_bias(float *y, const float *bias, I n, I c, I s) {
    FOR_EACH(I, i, n) y[i] += bias[(i / s) % c];
}

__global__ void k_relu_forward(float *y, const float *x, size_t n) {
    FOR_EACH(size_t, i, n) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

__global__ void k_relu_backward(float *dx, const float *dy, const float *x, size_t n) {
    FOR_EACH(size_t, i, n) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void k_tanh_forward(float *y, const float *x, size_t n) {
    FOR_EACH(size_t, i, n) y[i] = tanhf(x[i]);
}

__global__ void k_tanh_backward(float *dx, const float *dy, const float *y, size_t n) {
    FOR_EACH(size_t, i, n) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

/* GELU, exact form x * Phi(x), as cpu.c. */
__global__ void k_gelu_forward(float *y, const float *x, size_t n) {
    FOR_EACH(size_t, i, n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + erff(v * (float)M_SQRT1_2));
    }
}

__global__ void k_gelu_backward(float *dx, const float *dy, const float *x, size_t n) {
    const float inv_sqrt_2pi = 0.3989422804014327f;
    FOR_EACH(size_t, i, n) {
        float v = x[i];
        float cdf = 0.5f * (1.0f + erff(v * (float)M_SQRT1_2));
        float pdf = inv_sqrt_2pi * expf(-0.5f * v * v);
        dx[i] = dy[i] * (cdf + v * pdf);
    }
}

__global__ void k_mul(float *y, const float *x, const float *m, size_t n) {
    FOR_EACH(size_t, i, n) y[i] = x[i] * m[i];
}

/* Softmax cross-entropy, one warp per row (8 rows per block): the arg-max (the first
 * largest logit, as cpu.c: each lane scans its columns in order, then lanes combine
 * keeping the lower column unless the higher one is strictly larger), the log-sum-exp
 * in double, dlogits (when asked), and the row's loss and hit into row_loss /
 * row_right. A label out of range gives a NaN loss. */
__global__ void k_xent_rows(const float *z, const int32_t *labels, int b, int k, float *dz,
                            float inv_b, double *row_loss, int *row_right) {
    int row = blockIdx.x * (BLOCK / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= b) return; /* the whole warp */
    const float *r = z + (size_t)row * k;
    const int none = 0x7fffffff;
    float bv = 0.0f;
    int bi = none;
    if (lane < k) {
        bv = r[lane];
        bi = lane;
    }
    for (int j = lane + 32; j < k; j += 32) {
        float v = r[j];
        if (v > bv) {
            bv = v;
            bi = j;
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        float ov = __shfl_xor_sync(FULL_MASK, bv, off);
        int oi = __shfl_xor_sync(FULL_MASK, bi, off);
        int take = oi != none && (bi == none || (oi < bi ? !(bv > ov) : ov > bv));
        if (take) {
            bv = ov;
            bi = oi;
        }
    }
    float zmax = bv;
    double s = 0.0;
    for (int j = lane; j < k; j += 32) s += exp((double)(r[j] - zmax));
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(FULL_MASK, s, off);
    double lse = log(s);
    int label = labels[row];
    int valid = label >= 0 && label < k;
    if (dz) {
        float *d = dz + (size_t)row * k;
        for (int j = lane; j < k; j += 32) {
            float p = (float)exp((double)(r[j] - zmax) - lse);
            d[j] = (p - (j == label ? 1.0f : 0.0f)) * inv_b;
        }
    }
    if (lane == 0) {
        row_loss[row] = valid ? lse - (double)(r[label] - zmax) : (double)NAN;
        row_right[row] = valid && bi == label;
    }
}

/* Adds the b rows' losses and hits to acc, in a fixed tree (one block). */
__global__ void k_xent_sum(const double *row_loss, const int *row_right, int b,
                           kn_loss_acc *acc, const int64_t *tag) {
    __shared__ double shl[BLOCK];
    __shared__ long long shr[BLOCK];
    double l = 0.0;
    long long h = 0;
    for (int i = threadIdx.x; i < b; i += BLOCK) {
        l += row_loss[i];
        h += row_right[i];
    }
    double loss = block_sum(l, shl);
    long long hits = block_sum(h, shr);
    if (threadIdx.x == 0) {
        acc->loss_sum += loss;
        acc->correct += (int64_t)hits;
        if (!isfinite(loss) && acc->bad_tag == 0) {
            acc->bad_tag = *tag;
            acc->bad_loss = loss;
        }
    }
}

/* im2col of b images: one thread per column (image, output pixel) and channel (grid
 * y), which finds its pixel once (the divisions) and writes the channel's kh*kw rows
 * of col; taps that fall in the padding are 0. */
template <typename I>
__global__ void k_im2col(float *col, size_t ldcol, const float *x, I ncols, size_t istride,
                         size_t cstride, int c, int h, int w, int kh, int kw, int pad, I oh,
                         I ow) {
    for (int ch = blockIdx.y; ch < c; ch += gridDim.y) {
        FOR_EACH(I, e, ncols) {
            I ohw = oh * ow, i = e / ohw, p = e % ohw;
            int oy = (int)(p / ow), ox = (int)(p % ow);
            const float *plane = x + (size_t)i * istride + (size_t)ch * cstride;
            float *out = col + (size_t)ch * kh * kw * ldcol + e;
            for (int ki = 0; ki < kh; ki++) {
                int iy = oy + ki - pad;
                bool row_in = iy >= 0 && iy < h;
                for (int kj = 0; kj < kw; kj++) {
                    int ix = ox + kj - pad;
                    out[(size_t)(ki * kw + kj) * ldcol] =
                        row_in && ix >= 0 && ix < w ? plane[(size_t)iy * w + ix] : 0.0f;
                }
            }
        }
    }
}

/* col2im of b images, as a gather: each input pixel adds its taps' columns (ki, then
 * kj, the order cpu.c adds them in) to its dx, or with add 0 writes their sum (the
 * conv blocks' dx). Grid y: channels; x: b*h*w pixels. */
template <typename I>
__global__ void k_col2im(float *dx, I npix, size_t istride, size_t cstride, const float *col,
                         size_t ldcol, int c, I h, I w, int kh, int kw, int pad, int oh, int ow,
                         int add) {
    for (int ch = blockIdx.y; ch < c; ch += gridDim.y) {
        FOR_EACH(I, e, npix) {
            I hw = h * w, i = e / hw, p = e % hw;
            int iy = (int)(p / w), ix = (int)(p % w);
            float *d = dx + (size_t)i * istride + (size_t)ch * cstride + (size_t)iy * w + ix;
            float acc = add ? *d : 0.0f;
            size_t base = (size_t)i * oh * ow;
            for (int ki = 0; ki < kh; ki++) {
                int oy = iy - ki + pad;
                if (oy < 0 || oy >= oh) continue;
                for (int kj = 0; kj < kw; kj++) {
                    int ox = ix - kj + pad;
                    if (ox < 0 || ox >= ow) continue;
                    size_t row = ((size_t)ch * kh + ki) * kw + kj;
                    acc += col[row * ldcol + base + (size_t)oy * ow + ox];
                }
            }
            *d = acc;
        }
    }
}

/* y (q, p, s) = x (p, q, s). */
template <typename I> __global__ void k_swap01(float *y, const float *x, I p, I q, I s, I n) {
    FOR_EACH(I, o, n) {
        I k = o % s, t = o / s, i = t % p, j = t / p;
        y[o] = x[(i * q + j) * s + k];
    }
}

/* 2x2 max pooling; the comparisons in cpu.c's order, so ties go to the same element. */
template <typename I>
__global__ void k_pool_forward(float *y, int32_t *argmax, const float *x, I h, I w, I oh, I ow,
                               I n) {
    FOR_EACH(I, o, n) {
        I ox = o % ow, t = o / ow, oy = t % oh, pl = t / oh;
        const float *in = x + (size_t)pl * h * w;
        int32_t i0 = (int32_t)(2 * oy * w + 2 * ox), k = i0;
        float m = in[i0], v = in[i0 + 1];
        if (v > m) m = v, k = i0 + 1;
        v = in[i0 + w];
        if (v > m) m = v, k = i0 + (int32_t)w;
        v = in[i0 + w + 1];
        if (v > m) m = v, k = i0 + (int32_t)w + 1;
        y[o] = m;
        argmax[o] = k;
    }
}

/* Backward, as a gather: each input element takes dy of its window if it was that
 * window's arg-max, else 0 (windows do not overlap; dropped rows and columns get 0). */
template <typename I>
__global__ void k_pool_backward(float *dx, const float *dy, const int32_t *argmax, I h, I w,
                                I oh, I ow, I n) {
    FOR_EACH(I, e, n) {
        I xx = e % w, t = e / w, yy = t % h, pl = t / h;
        I oy = yy / 2, ox = xx / 2;
        float v = 0.0f;
        if (oy < oh && ox < ow) {
            I o = (pl * oh + oy) * ow + ox;
            if (argmax[o] == (int32_t)(yy * w + xx)) v += dy[o];
        }
        dx[e] = v;
    }
}

/* ---- conv blocks (kernels.h, conv_block_forward and _backward): z (f, b*h*w), the
 * conv output without its bias, is im2col and one product; these kernels do the rest
 * of a block in one pass each, as cpu_conv.c's scalar forms do it. ---- */

/* Forward: each pooled output o of y (b, f, ph, pw), image-major, from the four
 * elements of its window in z plus the bias, as conv_window.h's kn_window_pool (the
 * CPU's too): the activation, the first largest, its choice and (when zmax is not
 * NULL) the pre-activation taken. */
template <typename I>
__global__ void k_block_pool(float *y, uint8_t *choice, float *zmax, const float *z,
                             const float *bias, I b, int f, I h, I w, I ph, I pw, int act, I n) {
    FOR_EACH(I, o, n) {
        I px = o % pw, t = o / pw, py = t % ph;
        t /= ph;
        int co = (int)(t % (I)f);
        I i = t / (I)f;
        const float *r0 = z + ((size_t)co * b + i) * h * w + (size_t)2 * py * w + 2 * px;
        const float *r1 = r0 + w;
        float bb = bias[co], zm;
        y[o] = kn_window_pool(act, r0[0] + bb, r0[1] + bb, r1[0] + bb, r1[1] + bb, &choice[o],
                              &zm);
        if (zmax) zmax[o] = zm;
    }
}

/* Backward: dz (f, b*h*w) from dy (b, f, ph, pw): at each window's chosen element the
 * activation's derivative there times dy (kn_window_grad), 0 at its other three (with
 * odd h or w the dropped last row or column is zeroed before); and part[co * splits +
 * sp], the sum of chunk sp of filter co's gradients (db's first pass, a fixed tree as
 * k_channel_parts'). Grid: x = chunk, y = filter. */
template <typename I>
__global__ void k_block_unpool(float *dz, float *part, const float *dy, const uint8_t *choice,
                               const float *y, const float *zmax, I b, int f, I h, I w, I ph,
                               I pw, int act, int splits) {
    __shared__ float sh[BLOCK];
    int co = blockIdx.y, sp = blockIdx.x;
    I per = b * ph * pw, chunk = (per + (I)splits - 1) / (I)splits;
    I lo = (I)sp * chunk, hi = lo + chunk < per ? lo + chunk : per;
    float acc = 0.0f;
    for (I t = lo + threadIdx.x; t < hi; t += BLOCK) {
        I px = t % pw, u = t / pw, py = u % ph, i = u / ph;
        size_t o = ((size_t)i * f + co) * ph * pw + (size_t)py * pw + px;
        uint8_t k = choice[o];
        float v = kn_window_grad(act, dy[o], k, y ? y + o : NULL, zmax ? zmax + o : NULL);
        float *d0 = dz + ((size_t)co * b + i) * h * w + (size_t)2 * py * w + 2 * px;
        d0[0] = k == KN_POOL_TL ? v : 0.0f; /* KN_POOL_ZERO: v is 0 */
        d0[1] = k == KN_POOL_TR ? v : 0.0f;
        d0[w] = k == KN_POOL_BL ? v : 0.0f;
        d0[w + 1] = k == KN_POOL_BR ? v : 0.0f;
        acc += v;
    }
    float sum = block_sum(acc, sh);
    if (threadIdx.x == 0) part[(size_t)co * splits + sp] = sum;
}

/* The optimisers, as cpu.c; lr_dev / hyper (when not NULL) hold the per-step scalars. */
__global__ void k_sgd(float *p, const float *g, float *v, size_t n, const float *lr_dev,
                      float lr_val, float mu, float wd, int nesterov) {
    float lr = lr_dev ? *lr_dev : lr_val;
    if (nesterov) {
        FOR_EACH(size_t, i, n) {
            float gi = g[i] + wd * p[i];
            float vi = mu * v[i] + gi;
            v[i] = vi;
            p[i] -= lr * (gi + mu * vi);
        }
    } else {
        FOR_EACH(size_t, i, n) {
            float vi = mu * v[i] + g[i] + wd * p[i];
            v[i] = vi;
            p[i] -= lr * vi;
        }
    }
}

__global__ void k_adam(float *p, const float *g, float *m, float *v, size_t n,
                       const float *hyper, float lr_val, float bc1_val, float bc2_val, float b1,
                       float b2, float eps, float wd, int decoupled) {
    float lr = hyper ? hyper[0] : lr_val;
    float bc1 = hyper ? hyper[1] : bc1_val, bc2 = hyper ? hyper[2] : bc2_val;
    float l2 = decoupled ? 0.0f : wd;
    float shrink = decoupled ? 1.0f - lr * wd : 1.0f;
    float inv_bc1 = 1.0f / bc1, inv_sqrt_bc2 = 1.0f / sqrtf(bc2);
    FOR_EACH(size_t, i, n) {
        float gi = g[i] + l2 * p[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * shrink - lr * (mi * inv_bc1) / (sqrtf(vi) * inv_sqrt_bc2 + eps);
    }
}

template <typename I>
__global__ void k_gather(float *x, int32_t *y, const float *X, const int32_t *Y, I d,
                         const int32_t *idx, const int64_t *pos, I n) {
    const int32_t *rows = idx + *pos;
    FOR_EACH(I, e, n) {
        I i = e / d, j = e % d;
        int32_t r = rows[i];
        x[e] = X[(size_t)r * d + j];
        if (j == 0) y[i] = Y[r];
    }
}

/* kernels.h's u(seed, salt, i): the same bits as cpu.c's. */
__global__ void k_dropout(float *mask, size_t n, float keep, const uint64_t *seed,
                          uint64_t salt) {
    float scale = 1.0f / keep;
    uint64_t base = *seed + KN_DROP_SALT * salt;
    FOR_EACH(size_t, i, n) {
        uint64_t z = base + KN_DROP_STEP * ((uint64_t)i + 1);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        float u = (float)(z >> 40) * 0x1.0p-24f;
        mask[i] = u < keep ? scale : 0.0f;
    }
}

/* float32 -> bfloat16 bits, rounded to nearest even; a NaN stays a (quiet) NaN. */
__device__ uint16_t bf16_bits(float f) {
    uint32_t u = __float_as_uint(f);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : r);
}

/* float32 rounded to TensorFloat-32 (10 mantissa bits), to nearest even; infinities
 * and NaNs as they are. */
__device__ float tf32_round(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7f800000u) == 0x7f800000u) return f;
    return __uint_as_float((u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u);
}

__global__ void k_to_bf16(uint16_t *dst, const float *src, size_t n) {
    FOR_EACH(size_t, i, n) dst[i] = bf16_bits(src[i]);
}

/* gemm's operands in tf32 or bf16: the rows x cols matrix src (row stride ld), rounded,
 * into dst packed (row stride cols); n = rows * cols. */
template <typename I>
__global__ void k_pack_bf16(uint16_t *dst, const float *src, I cols, size_t ld, I n) {
    FOR_EACH(I, e, n) dst[e] = bf16_bits(src[(size_t)(e / cols) * ld + e % cols]);
}

template <typename I>
__global__ void k_pack_tf32(float *dst, const float *src, I cols, size_t ld, I n) {
    FOR_EACH(I, e, n) dst[e] = tf32_round(src[(size_t)(e / cols) * ld + e % cols]);
}

/* The same, for a contiguous operand (ld == cols), with no index arithmetic: four
 * elements at a time where src is 16-byte and dst 8-byte (bf16) or 16-byte (tf32)
 * aligned and n4 = n / 4; one at a time else. */
__global__ void k_pack_bf16_x4(uint2 *dst, const float4 *src, size_t n4) {
    FOR_EACH(size_t, i, n4) {
        float4 v = src[i];
        dst[i] = make_uint2((uint32_t)bf16_bits(v.x) | (uint32_t)bf16_bits(v.y) << 16,
                            (uint32_t)bf16_bits(v.z) | (uint32_t)bf16_bits(v.w) << 16);
    }
}

__global__ void k_pack_tf32_x4(float4 *dst, const float4 *src, size_t n4) {
    FOR_EACH(size_t, i, n4) {
        float4 v = src[i];
        dst[i] = make_float4(tf32_round(v.x), tf32_round(v.y), tf32_round(v.z), tf32_round(v.w));
    }
}

__global__ void k_round_tf32(float *dst, const float *src, size_t n) {
    FOR_EACH(size_t, i, n) dst[i] = tf32_round(src[i]);
}

__global__ void k_from_bf16(float *dst, const uint16_t *src, size_t n) {
    FOR_EACH(size_t, i, n) dst[i] = __uint_as_float((uint32_t)src[i] << 16);
}

/* upload_small: the bytes travel in the launch's parameters. */
typedef struct small_blob {
    unsigned char bytes[KN_SMALL_MAX];
} small_blob;

__global__ void k_poke(unsigned char *dst, small_blob blob, int n) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = blob.bytes[i];
}

/* ---------------------------------------------------------------------------------
 * Launchers: one per table entry, on a device's context
 * --------------------------------------------------------------------------------- */

/* Launches kernel<I> with I = unsigned when every index fits in 31 bits, else size_t. */
#define LAUNCH_I(c, n, kernel, grid, ...)                                                \
    do {                                                                                 \
        if ((size_t)(n) <= (size_t)INT32_MAX)                                            \
            kernel<unsigned><<<(grid), BLOCK, 0, (c)->stream>>>(__VA_ARGS__);            \
        else                                                                             \
            kernel<size_t><<<(grid), BLOCK, 0, (c)->stream>>>(__VA_ARGS__);              \
        CK_LAUNCH((c)->device);                                                          \
    } while (0)

#define LAUNCH(c, n, kernel, ...)                                                        \
    do {                                                                                 \
        kernel<<<blocks_for(n), BLOCK, 0, (c)->stream>>>(__VA_ARGS__);                   \
        CK_LAUNCH((c)->device);                                                          \
    } while (0)

static void *c_alloc(cuda_ctx *c, size_t bytes) {
    not_while_recording(c, "alloc");
    bind(c);
    size_t rounded = bytes < 256 ? 256 : bytes;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, rounded);
    if (e != cudaSuccess) {
        char why[256];
        snprintf(why, sizeof why, "%s: cannot allocate %.1f MiB", cudaGetErrorString(e),
                 (double)rounded / (1 << 20));
        fatal(__FILE__, __LINE__, c->device, "cudaMalloc", why, e == cudaErrorMemoryAllocation);
    }
    CK(c->device, cudaMemsetAsync(p, 0, rounded, c->stream));
    CK(c->device, cudaStreamSynchronize(c->stream));
    return p;
}

static void c_free(cuda_ctx *c, void *p) {
    if (!p) return;
    not_while_recording(c, "free");
    bind(c);
    CK(c->device, cudaFree(p));
    /* a conv block's input may have been in p, and a new one may get its address: no
     * kept im2col outlives a free (frees are rare; the next forward passes keep anew) */
    for (int i = 0; i < KEPT_COLS; i++) c->kept[i].valid = 0;
}

static void c_upload(cuda_ctx *c, void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    not_while_recording(c, "upload");
    bind(c);
    CK(c->device, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stream));
    CK(c->device, cudaStreamSynchronize(c->stream)); /* src may be freed on return */
}

static void c_download(cuda_ctx *c, void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    not_while_recording(c, "download");
    bind(c);
    CK(c->device, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream));
    CK(c->device, cudaStreamSynchronize(c->stream));
}

static void c_copy(cuda_ctx *c, void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    bind(c);
    CK(c->device, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream));
}

static void c_fill(cuda_ctx *c, float *x, float value, size_t n) {
    if (!n) return;
    bind(c);
    if (value == 0.0f && !signbit(value))
        CK(c->device, cudaMemsetAsync(x, 0, n * sizeof *x, c->stream));
    else
        LAUNCH(c, n, k_fill, x, value, n);
}

static void c_scale(cuda_ctx *c, float *x, float a, size_t n) {
    if (!n) return;
    bind(c);
    LAUNCH(c, n, k_scale, x, a, n);
}

/* Rounds the rows x cols matrix src (row stride ld) to the precision into dst, packed
 * (row stride cols). */
static void pack_operand(cuda_ctx *c, void *dst, const float *src, int rows, int cols, int ld) {
    size_t n = (size_t)rows * cols;
    if (!n) return;
    int bf16 = c->precision == KN_BF16;
    if (ld == cols || rows == 1) { /* contiguous: no row arithmetic */
        size_t dalign = bf16 ? 8 : 16;
        if (n % 4 == 0 && (uintptr_t)src % 16 == 0 && (uintptr_t)dst % dalign == 0) {
            if (bf16)
                LAUNCH(c, n / 4, k_pack_bf16_x4, (uint2 *)dst, (const float4 *)src, n / 4);
            else
                LAUNCH(c, n / 4, k_pack_tf32_x4, (float4 *)dst, (const float4 *)src, n / 4);
        } else if (bf16) {
            LAUNCH(c, n, k_to_bf16, (uint16_t *)dst, src, n);
        } else {
            LAUNCH(c, n, k_round_tf32, (float *)dst, src, n);
        }
        return;
    }
    if (c->precision == KN_BF16)
        LAUNCH_I(c, n, k_pack_bf16, blocks_for(n), (uint16_t *)dst, src, cols, (size_t)ld, n);
    else
        LAUNCH_I(c, n, k_pack_tf32, blocks_for(n), (float *)dst, src, cols, (size_t)ld, n);
}

static void c_gemm(cuda_ctx *c, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                   int lda, const float *b, int ldb, float beta, float *cm, int ldc) {
    if (m <= 0 || n <= 0) return;
    bind(c);
    /* Row-major C (m, n) is column-major C^T (n, m) = op(B)^T op(A)^T; the stored B is
     * column-major B^T, so op(B)^T is B_cm untransposed when tb == 0. */
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (c->precision == KN_FP32) {
        CKB(c->device, g_blas.gemm_ex(c->blas, opb, opa, n, m, k, &alpha, b, CUDA_R_32F, ldb, a,
                                      CUDA_R_32F, lda, &beta, cm, CUDA_R_32F, ldc,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        return;
    }
    /* tf32, bf16: the stored operands, rounded and packed into scratch (B's copy 256
     * bytes in, so both stay aligned for the tensor cores), then multiplied */
    int bf16 = c->precision == KN_BF16;
    size_t esz = bf16 ? sizeof(uint16_t) : sizeof(float);
    int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    size_t abytes = ((size_t)ar * ac * esz + 255) / 256 * 256, bbytes = (size_t)br * bc * esz;
    c->operands = (unsigned char *)grow(c, c->operands, &c->operands_cap, abytes + bbytes, 1,
                                        bf16 ? "bf16 operand" : "tf32 operand");
    void *a2 = c->operands, *b2 = c->operands + abytes;
    pack_operand(c, a2, a, ar, ac, lda);
    pack_operand(c, b2, b, br, bc, ldb);
    cudaDataType t = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    CKB(c->device, g_blas.gemm_ex(c->blas, opb, opa, n, m, k, &alpha, b2, t, bc > 1 ? bc : 1, a2,
                                  t, ac > 1 ? ac : 1, &beta, cm, CUDA_R_32F, ldc,
                                  bf16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32,
                                  CUBLAS_GEMM_DEFAULT));
}

static void c_broadcast_rows(cuda_ctx *c, float *y, const float *bias, int rows, int cols) {
    size_t n = (size_t)rows * cols;
    if (!n) return;
    bind(c);
    LAUNCH_I(c, n, k_broadcast_rows, blocks_for(n), y, bias, n, cols);
}

static void c_sum_rows(cuda_ctx *c, float *db, const float *dy, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    bind(c);
    /* chunks of ROW_CHUNK rows (at most ROW_SPLITS), summed side by side, then added in
     * chunk order: the same tree for the same sizes, so the same bits */
    int chunks = (rows + ROW_CHUNK - 1) / ROW_CHUNK;
    if (chunks > ROW_SPLITS) chunks = ROW_SPLITS;
    int chunk = (rows + chunks - 1) / chunks;
    float *part = NULL;
    if (chunks > 1) {
        c->partials = (float *)grow(c, c->partials, &c->partials_cap, (size_t)chunks * cols,
                                    sizeof(float), "sum_rows");
        part = c->partials;
    }
    dim3 grid((unsigned)((cols + 31) / 32), (unsigned)chunks);
    k_sum_rows<<<grid, dim3(32, 16), 0, c->stream>>>(db, part, dy, rows, cols, chunk);
    CK_LAUNCH(c->device);
    if (chunks > 1) {
        k_sum_row_parts<<<blocks_for((size_t)cols), BLOCK, 0, c->stream>>>(db, part, cols,
                                                                           chunks);
        CK_LAUNCH(c->device);
    }
}

static void c_sum_channels(cuda_ctx *c, float *db, const float *dy, int b, int ch, int s) {
    if (b <= 0 || ch <= 0 || s <= 0) return;
    bind(c);
    size_t total = (size_t)b * s, per = (size_t)BLOCK * 16;
    int splits = (int)((total + per - 1) / per);
    if (splits > CHANNEL_SPLITS) splits = CHANNEL_SPLITS;
    c->partials = (float *)grow(c, c->partials, &c->partials_cap, (size_t)ch * splits,
                                sizeof(float), "sum_channels");
    k_channel_parts<<<dim3((unsigned)ch, (unsigned)splits), BLOCK, 0, c->stream>>>(
        c->partials, dy, b, ch, (size_t)s, splits);
    CK_LAUNCH(c->device);
    k_channel_total<<<(unsigned)((ch + BLOCK - 1) / BLOCK), BLOCK, 0, c->stream>>>(
        db, c->partials, ch, splits, 1);
    CK_LAUNCH(c->device);
}

static void c_add_channel_bias(cuda_ctx *c, float *y, const float *bias, int b, int ch, int s) {
    size_t n = (size_t)b * ch * s;
    if (!n) return;
    bind(c);
    LAUNCH_I(c, n, k_add_channel_bias, blocks_for(n), y, bias, n, ch, s);
}

static void c_relu_forward(cuda_ctx *c, float *y, const float *x, size_t n) {
    if (!n) return;
    bind(c);
    LAUNCH(c, n, k_relu_forward, y, x, n);
}

static void c_relu_backward(cuda_ctx *c, float *dx, const float *dy, const float *x,
                            const float *y, size_t n) {
    if (!n) return;
    bind(c);
    (void)y;
    LAUNCH(c, n, k_relu_backward, dx, dy, x, n);
}

static void c_tanh_forward(cuda_ctx *c, float *y, const float *x, size_t n) {
    if (!n) return;
    bind(c);
    LAUNCH(c, n, k_tanh_forward, y, x, n);
}

static void c_tanh_backward(cuda_ctx *c, float *dx, const float *dy, const float *x,
                            const float *y, size_t n) {
    if (!n) return;
    bind(c);
    (void)x;
    LAUNCH(c, n, k_tanh_backward, dx, dy, y, n);
}

static void c_gelu_forward(cuda_ctx *c, float *y, const float *x, size_t n) {
    if (!n) return;
    bind(c);
    LAUNCH(c, n, k_gelu_forward, y, x, n);
}

static void c_gelu_backward(cuda_ctx *c, float *dx, const float *dy, const float *x,
                            const float *y, size_t n) {
    if (!n) return;
    bind(c);
    (void)y;
    LAUNCH(c, n, k_gelu_backward, dx, dy, x, n);
}

static void c_mul(cuda_ctx *c, float *y, const float *x, const float *m, size_t n) {
    if (!n) return;
    bind(c);
    LAUNCH(c, n, k_mul, y, x, m, n);
}

static void c_softmax_xent_acc(cuda_ctx *c, const float *logits, const int32_t *labels, int b,
                               int k, float *dlogits, kn_loss_acc *acc, const int64_t *tag) {
    if (b <= 0) return;
    bind(c);
    c->rows = grow(c, c->rows, &c->rows_cap, (size_t)b, sizeof(double) + sizeof(int), "softmax");
    double *row_loss = (double *)c->rows;
    int *row_right = (int *)(row_loss + c->rows_cap);
    unsigned rows_per_block = BLOCK / 32;
    k_xent_rows<<<(unsigned)((b + rows_per_block - 1) / rows_per_block), BLOCK, 0, c->stream>>>(
        logits, labels, b, k, dlogits, 1.0f / (float)b, row_loss, row_right);
    CK_LAUNCH(c->device);
    k_xent_sum<<<1, BLOCK, 0, c->stream>>>(row_loss, row_right, b, acc, tag);
    CK_LAUNCH(c->device);
}

static void c_softmax_xent(cuda_ctx *c, const float *logits, const int32_t *labels, int b, int k,
                           float *dlogits, double *loss_sum, int64_t *correct) {
    kn_loss_acc acc;
    memset(&acc, 0, sizeof acc);
    if (b > 0) {
        bind(c);
        CK(c->device, cudaMemsetAsync(c->own_acc, 0, sizeof *c->own_acc, c->stream));
        c_softmax_xent_acc(c, logits, labels, b, k, dlogits, c->own_acc, c->own_tag);
        c_download(c, &acc, c->own_acc, sizeof acc);
    }
    if (loss_sum) *loss_sum = acc.loss_sum;
    if (correct) *correct = acc.correct;
}

static void c_im2col_batch(cuda_ctx *c, float *col, const float *x, int b, size_t istride,
                           size_t cstride, int ch, int h, int w, int kh, int kw, int pad,
                           size_t ldcol) {
    int oh = h + 2 * pad - kh + 1, ow = w + 2 * pad - kw + 1;
    if (b <= 0 || oh <= 0 || ow <= 0 || ch <= 0 || kh <= 0 || kw <= 0) return;
    bind(c);
    size_t ncols = (size_t)b * oh * ow;
    dim3 grid(blocks_for(ncols), (unsigned)(ch < 65535 ? ch : 65535));
    LAUNCH_I(c, ncols, k_im2col, grid, col, ldcol, x, ncols, istride, cstride, ch, h, w, kh, kw,
             pad, oh, ow);
}

/* col2im of b images into dx: added to it (add 1), or written (add 0). */
static void col2im_into(cuda_ctx *c, float *dx, int b, size_t istride, size_t cstride,
                        const float *col, size_t ldcol, int ch, int h, int w, int kh, int kw,
                        int pad, int add) {
    int oh = h + 2 * pad - kh + 1, ow = w + 2 * pad - kw + 1;
    if (b <= 0 || ch <= 0 || h <= 0 || w <= 0) return;
    bind(c);
    size_t npix = (size_t)b * h * w;
    dim3 grid(blocks_for(npix), (unsigned)(ch < 65535 ? ch : 65535));
    LAUNCH_I(c, npix, k_col2im, grid, dx, npix, istride, cstride, col, ldcol, ch, h, w, kh, kw,
             pad, oh, ow, add);
}

static void c_col2im_batch(cuda_ctx *c, float *dx, int b, size_t istride, size_t cstride,
                           const float *col, size_t ldcol, int ch, int h, int w, int kh, int kw,
                           int pad) {
    col2im_into(c, dx, b, istride, cstride, col, ldcol, ch, h, w, kh, kw, pad, 1);
}

static void c_im2col(cuda_ctx *c, float *col, int ldcol, const float *x, size_t cstride, int ch,
                     int h, int w, int kh, int kw, int pad) {
    c_im2col_batch(c, col, x, 1, 0, cstride, ch, h, w, kh, kw, pad, (size_t)ldcol);
}

static void c_col2im(cuda_ctx *c, float *dx, size_t cstride, const float *col, int ldcol, int ch,
                     int h, int w, int kh, int kw, int pad) {
    c_col2im_batch(c, dx, 1, 0, cstride, col, (size_t)ldcol, ch, h, w, kh, kw, pad);
}

static void c_swap01(cuda_ctx *c, float *y, const float *x, int p, int q, int s) {
    size_t n = (size_t)p * q * s;
    if (!n) return;
    bind(c);
    LAUNCH_I(c, n, k_swap01, blocks_for(n), y, x, p, q, s, n);
}

static void c_maxpool2_forward(cuda_ctx *c, float *y, int32_t *argmax, const float *x, int n,
                               int h, int w) {
    int oh = h / 2, ow = w / 2;
    size_t total = (size_t)n * oh * ow;
    if (!total) return;
    bind(c);
    LAUNCH_I(c, (size_t)n * h * w, k_pool_forward, blocks_for(total), y, argmax, x, h, w, oh, ow,
             total);
}

static void c_maxpool2_backward(cuda_ctx *c, float *dx, const float *dy, const int32_t *argmax,
                                int n, int h, int w) {
    size_t total = (size_t)n * h * w;
    if (!total) return;
    bind(c);
    LAUNCH_I(c, total, k_pool_backward, blocks_for(total), dx, dy, argmax, h, w, h / 2, w / 2,
             total);
}

/* The kept im2col of x with this shape, or NULL. */
static kept_col *kept_find(cuda_ctx *c, const float *x, int b, size_t istride, size_t cstride,
                           int ch, int h, int w) {
    for (int i = 0; i < KEPT_COLS; i++) {
        kept_col *e = &c->kept[i];
        if (e->used && e->x == x && e->b == b && e->ch == ch && e->h == h && e->w == w &&
            e->istride == istride && e->cstride == cstride)
            return e;
    }
    return NULL;
}

/* The entry a forward pass over x keeps its im2col in: x's own with this shape, else
 * one that x had with another (an evaluation's batch reuses a training step's buffer),
 * else the least recently used; its contents are not valid until im2col is made. */
static kept_col *kept_claim(cuda_ctx *c, const float *x, int b, size_t istride, size_t cstride,
                            int ch, int h, int w) {
    kept_col *e = kept_find(c, x, b, istride, cstride, ch, h, w);
    for (int i = 0; !e && i < KEPT_COLS; i++) /* x's, kept with another shape */
        if (c->kept[i].used && c->kept[i].x == x) e = &c->kept[i];
    if (!e) { /* the least recently used, an unused one (0) first */
        e = &c->kept[0];
        for (int i = 1; i < KEPT_COLS; i++)
            if (c->kept[i].used < e->used) e = &c->kept[i];
    }
    e->x = x;
    e->b = b;
    e->ch = ch;
    e->h = h;
    e->w = w;
    e->istride = istride;
    e->cstride = cstride;
    e->valid = 0;
    e->used = ++c->kept_clock;
    return e;
}

/* A conv block (kernels.h): im2col of x into its kept entry, z = W col, then
 * k_block_pool. */
static void c_conv_block_forward(cuda_ctx *c, float *y, uint8_t *choice, float *zmax,
                                 const float *x, int b, size_t istride, size_t cstride, int ch,
                                 int h, int w, const float *W, const float *bias, int f,
                                 int act) {
    if (b <= 0 || ch <= 0 || h <= 0 || w <= 0 || f <= 0) return;
    bind(c);
    int ck = ch * 9;
    size_t ld = (size_t)b * h * w, n = (size_t)b * f * (h / 2) * (w / 2);
    kept_col *e = kept_claim(c, x, b, istride, cstride, ch, h, w);
    e->col = (float *)grow(c, e->col, &e->cap, (size_t)ck * ld, sizeof(float),
                           "conv block im2col");
    c->z = (float *)grow(c, c->z, &c->z_cap, (size_t)f * ld, sizeof(float), "conv block output");
    c_im2col_batch(c, e->col, x, b, istride, cstride, ch, h, w, 3, 3, 1, ld);
    e->valid = 1;
    c_gemm(c, 0, 0, f, (int)ld, ck, 1.0f, W, ck, e->col, (int)ld, 0.0f, c->z, (int)ld);
    if (!n) return;
    LAUNCH_I(c, (size_t)f * ld, k_block_pool, blocks_for(n), y, choice, zmax, c->z, bias, b, f,
             h, w, h / 2, w / 2, act, n);
}

/* Its gradients: dz (k_block_unpool, with db's partial sums), db, dW = dz col^T with
 * the forward pass's col (made again where none was kept), and with dx its columns
 * W^T dz, into the same buffer (the kept col is spent), gathered by col2im. */
static void c_conv_block_backward(cuda_ctx *c, float *dW, float *db, float *dx, const float *dy,
                                  const uint8_t *choice, const float *y, const float *zmax,
                                  const float *x, int b, size_t istride, size_t cstride, int ch,
                                  int h, int w, const float *W, int f, int act) {
    if (ch <= 0 || f <= 0) return;
    bind(c);
    int ck = ch * 9, ph = h / 2, pw = w / 2;
    if (b <= 0 || h <= 0 || w <= 0) { /* no examples: zero gradients */
        CK(c->device, cudaMemsetAsync(dW, 0, (size_t)f * ck * sizeof *dW, c->stream));
        CK(c->device, cudaMemsetAsync(db, 0, (size_t)f * sizeof *db, c->stream));
        return;
    }
    size_t ld = (size_t)b * h * w, per = (size_t)b * ph * pw, grain = (size_t)BLOCK * 4;
    int splits = (int)((per + grain - 1) / grain);
    splits = splits < 1 ? 1 : splits > CHANNEL_SPLITS ? CHANNEL_SPLITS : splits;
    kept_col *e = kept_find(c, x, b, istride, cstride, ch, h, w);
    float *col;
    if (e && e->valid) {
        col = e->col;
    } else {
        e = NULL;
        c->col = (float *)grow(c, c->col, &c->col_cap, (size_t)ck * ld, sizeof(float),
                               "conv block im2col");
        col = c->col;
    }
    c->z = (float *)grow(c, c->z, &c->z_cap, (size_t)f * ld, sizeof(float), "conv block output");
    c->partials = (float *)grow(c, c->partials, &c->partials_cap, (size_t)f * splits,
                                sizeof(float), "conv block bias gradient");
    if ((h & 1) || (w & 1)) /* the dropped row or column, which no window writes */
        CK(c->device, cudaMemsetAsync(c->z, 0, (size_t)f * ld * sizeof(float), c->stream));
    dim3 grid((unsigned)splits, (unsigned)f);
    if ((size_t)f * ld <= (size_t)INT32_MAX)
        k_block_unpool<unsigned><<<grid, BLOCK, 0, c->stream>>>(
            c->z, c->partials, dy, choice, y, zmax, b, f, h, w, ph, pw, act, splits);
    else
        k_block_unpool<size_t><<<grid, BLOCK, 0, c->stream>>>(
            c->z, c->partials, dy, choice, y, zmax, b, f, h, w, ph, pw, act, splits);
    CK_LAUNCH(c->device);
    k_channel_total<<<(unsigned)((f + BLOCK - 1) / BLOCK), BLOCK, 0, c->stream>>>(
        db, c->partials, f, splits, 0);
    CK_LAUNCH(c->device);
    if (!e) c_im2col_batch(c, col, x, b, istride, cstride, ch, h, w, 3, 3, 1, ld);
    c_gemm(c, 0, 1, f, ck, (int)ld, 1.0f, c->z, (int)ld, col, (int)ld, 0.0f, dW, ck);
    if (!dx) return;
    if (e) e->valid = 0;
    c_gemm(c, 1, 0, ck, (int)ld, f, 1.0f, W, ck, c->z, (int)ld, 0.0f, col, (int)ld);
    col2im_into(c, dx, b, istride, cstride, col, ld, ch, h, w, 3, 3, 1, 0);
}

static void c_sgd(cuda_ctx *c, float *p, const float *g, float *v, size_t n, const float *lr_dev,
                  float lr, float mu, float wd, int nesterov) {
    if (!n) return;
    bind(c);
    LAUNCH(c, n, k_sgd, p, g, v, n, lr_dev, lr, mu, wd, nesterov);
}

static void c_adam(cuda_ctx *c, float *p, const float *g, float *m, float *v, size_t n,
                   const float *hyper, float lr, float b1, float b2, float eps, float wd,
                   int decoupled, float bc1, float bc2) {
    if (!n) return;
    bind(c);
    LAUNCH(c, n, k_adam, p, g, m, v, n, hyper, lr, bc1, bc2, b1, b2, eps, wd, decoupled);
}

static int c_set_precision(cuda_ctx *c, int precision) {
    if (precision != KN_FP32 && precision != KN_TF32 && precision != KN_BF16)
        return tn_error(NULL, 0, TN_EINVAL, "unknown precision %d", precision);
    c->precision = precision;
    return 0;
}

static void c_upload_small(cuda_ctx *c, void *dst, const void *src, size_t bytes) {
    if (!bytes) return;
    if (bytes > KN_SMALL_MAX)
        fatal(__FILE__, __LINE__, c->device, "upload_small", "more than KN_SMALL_MAX bytes", 0);
    bind(c);
    small_blob blob;
    memcpy(blob.bytes, src, bytes);
    k_poke<<<1, 64, 0, c->stream>>>((unsigned char *)dst, blob, (int)bytes);
    CK_LAUNCH(c->device);
}

static void c_sync(cuda_ctx *c) {
    not_while_recording(c, "sync");
    bind(c);
    CK(c->device, cudaStreamSynchronize(c->stream));
}

/* Turns graphs off for the rest of the run after a failed recording, saying why. */
static void graphs_off(cuda_ctx *c) {
    cudaGetLastError(); /* the failure's error, when it is not sticky */
    c->graphs_off = 1;
    fflush(stdout);
    fprintf(stderr, "warning: GPU %d: recording a CUDA graph failed (%s); graphs are off for this "
                    "run: each step's calls are made directly\n",
            c->device, c->capture_error);
    c->capture_error[0] = '\0';
}

static int c_graph_begin(cuda_ctx *c) {
    if (c->graphs_off) return 0;
    not_while_recording(c, "graph_begin");
    bind(c);
    cudaError_t e = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        snprintf(c->capture_error, sizeof c->capture_error, "cudaStreamBeginCapture: %s (%s)",
                 cudaGetErrorString(e), cudaGetErrorName(e));
        graphs_off(c);
        return 0;
    }
    c->capture_error[0] = '\0';
    c->capturing = 1;
    return 1;
}

static void *c_graph_end(cuda_ctx *c) {
    bind(c);
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(c->stream, &graph);
    c->capturing = 0;
    if (e != cudaSuccess && !c->capture_error[0])
        snprintf(c->capture_error, sizeof c->capture_error, "cudaStreamEndCapture: %s (%s)",
                 cudaGetErrorString(e), cudaGetErrorName(e));
    cudaGraphExec_t exec = NULL;
    if (!c->capture_error[0]) {
        e = cudaGraphInstantiate(&exec, graph, 0);
        if (e != cudaSuccess) {
            exec = NULL;
            snprintf(c->capture_error, sizeof c->capture_error, "cudaGraphInstantiate: %s (%s)",
                     cudaGetErrorString(e), cudaGetErrorName(e));
        }
    }
    if (graph) cudaGraphDestroy(graph); /* the executable graph is a copy */
    if (c->capture_error[0]) { /* nothing was recorded: the caller makes the calls */
        graphs_off(c);
        return NULL;
    }
    c->live_graphs++;
    return (void *)exec;
}

static void c_graph_launch(cuda_ctx *c, void *graph) {
    bind(c);
    CK(c->device, cudaGraphLaunch((cudaGraphExec_t)graph, c->stream));
}

/* Frees a graph; with the last one, the scratch it may have used (grow). */
static void c_graph_free(cuda_ctx *c, void *graph) {
    if (!graph) return;
    not_while_recording(c, "graph_free");
    bind(c);
    CK(c->device, cudaGraphExecDestroy((cudaGraphExec_t)graph));
    if (--c->live_graphs > 0 || !c->nretired) return;
    CK(c->device, cudaStreamSynchronize(c->stream)); /* launches may still use them */
    for (int i = 0; i < c->nretired; i++) CK(c->device, cudaFree(c->retired[i]));
    free(c->retired);
    c->retired = NULL;
    c->nretired = 0;
}

static void c_gather_rows(cuda_ctx *c, float *x, int32_t *y, const float *X, const int32_t *Y,
                          int d, const int32_t *idx, const int64_t *pos, int b) {
    size_t n = (size_t)b * d;
    if (!n) return;
    bind(c);
    LAUNCH_I(c, n, k_gather, blocks_for(n), x, y, X, Y, d, idx, pos, n);
}

static void c_dropout_mask(cuda_ctx *c, float *mask, size_t n, float keep, const uint64_t *seed,
                           uint64_t salt) {
    if (!n) return;
    bind(c);
    LAUNCH(c, n, k_dropout, mask, n, keep, seed, salt);
}

static void c_to_bf16(cuda_ctx *c, uint16_t *dst, const float *src, size_t n) {
    if (!n) return;
    bind(c);
    LAUNCH(c, n, k_to_bf16, dst, src, n);
}

static void c_from_bf16(cuda_ctx *c, float *dst, const uint16_t *src, size_t n) {
    if (!n) return;
    bind(c);
    LAUNCH(c, n, k_from_bf16, dst, src, n);
}

/* ---------------------------------------------------------------------------------
 * The tables: slot S's entry points forward to the launchers with g_ctx[S]
 * --------------------------------------------------------------------------------- */

template <int S> struct slot {
    static cuda_ctx *c() { return &g_ctx[S]; }
    static void *alloc(size_t n) { return c_alloc(c(), n); }
    static void free(void *p) { c_free(c(), p); }
    static void upload(void *d, const void *s, size_t n) { c_upload(c(), d, s, n); }
    static void download(void *d, const void *s, size_t n) { c_download(c(), d, s, n); }
    static void copy(void *d, const void *s, size_t n) { c_copy(c(), d, s, n); }
    static void fill(float *x, float v, size_t n) { c_fill(c(), x, v, n); }
    static void scale(float *x, float a, size_t n) { c_scale(c(), x, a, n); }
    static void set_threads(int threads) { (void)threads; }
    static void gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, float *cm, int ldc) {
        c_gemm(c(), ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cm, ldc);
    }
    static void broadcast_rows(float *y, const float *bias, int rows, int cols) {
        c_broadcast_rows(c(), y, bias, rows, cols);
    }
    static void sum_rows(float *db, const float *dy, int rows, int cols) {
        c_sum_rows(c(), db, dy, rows, cols);
    }
    static void sum_channels(float *db, const float *dy, int b, int ch, int s) {
        c_sum_channels(c(), db, dy, b, ch, s);
    }
    static void add_channel_bias(float *y, const float *bias, int b, int ch, int s) {
        c_add_channel_bias(c(), y, bias, b, ch, s);
    }
    static void relu_forward(float *y, const float *x, size_t n) { c_relu_forward(c(), y, x, n); }
    static void relu_backward(float *dx, const float *dy, const float *x, const float *y,
                              size_t n) {
        c_relu_backward(c(), dx, dy, x, y, n);
    }
    static void tanh_forward(float *y, const float *x, size_t n) { c_tanh_forward(c(), y, x, n); }
    static void tanh_backward(float *dx, const float *dy, const float *x, const float *y,
                              size_t n) {
        c_tanh_backward(c(), dx, dy, x, y, n);
    }
    static void gelu_forward(float *y, const float *x, size_t n) { c_gelu_forward(c(), y, x, n); }
    static void gelu_backward(float *dx, const float *dy, const float *x, const float *y,
                              size_t n) {
        c_gelu_backward(c(), dx, dy, x, y, n);
    }
    static void mul(float *y, const float *x, const float *m, size_t n) { c_mul(c(), y, x, m, n); }
    static void softmax_xent(const float *z, const int32_t *l, int b, int k, float *dz,
                             double *loss, int64_t *correct) {
        c_softmax_xent(c(), z, l, b, k, dz, loss, correct);
    }
    static void im2col(float *col, int ldcol, const float *x, size_t cstride, int ch, int h,
                       int w, int kh, int kw, int pad) {
        c_im2col(c(), col, ldcol, x, cstride, ch, h, w, kh, kw, pad);
    }
    static void col2im(float *dx, size_t cstride, const float *col, int ldcol, int ch, int h,
                       int w, int kh, int kw, int pad) {
        c_col2im(c(), dx, cstride, col, ldcol, ch, h, w, kh, kw, pad);
    }
    static void swap01(float *y, const float *x, int p, int q, int s) {
        c_swap01(c(), y, x, p, q, s);
    }
    static void maxpool2_forward(float *y, int32_t *arg, const float *x, int n, int h, int w) {
        c_maxpool2_forward(c(), y, arg, x, n, h, w);
    }
    static void maxpool2_backward(float *dx, const float *dy, const int32_t *arg, int n, int h,
                                  int w) {
        c_maxpool2_backward(c(), dx, dy, arg, n, h, w);
    }
    static void sgd_momentum(float *p, const float *g, float *v, size_t n, float lr, float mu,
                             float wd, int nesterov) {
        c_sgd(c(), p, g, v, n, NULL, lr, mu, wd, nesterov);
    }
    static void adam(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1,
                     float b2, float eps, float wd, int decoupled, float bc1, float bc2) {
        c_adam(c(), p, g, m, v, n, NULL, lr, b1, b2, eps, wd, decoupled, bc1, bc2);
    }
    static int set_precision(int precision) { return c_set_precision(c(), precision); }
    static void upload_small(void *d, const void *s, size_t n) { c_upload_small(c(), d, s, n); }
    static void sync() { c_sync(c()); }
    static int graph_begin() { return c_graph_begin(c()); }
    static void *graph_end() { return c_graph_end(c()); }
    static void graph_launch(void *g) { c_graph_launch(c(), g); }
    static void graph_free(void *g) { c_graph_free(c(), g); }
    static void gather_rows(float *x, int32_t *y, const float *X, const int32_t *Y, int d,
                            const int32_t *idx, const int64_t *pos, int b) {
        c_gather_rows(c(), x, y, X, Y, d, idx, pos, b);
    }
    static void dropout_mask(float *mask, size_t n, float keep, const uint64_t *seed,
                             uint64_t salt) {
        c_dropout_mask(c(), mask, n, keep, seed, salt);
    }
    static void softmax_xent_acc(const float *z, const int32_t *l, int b, int k, float *dz,
                                 kn_loss_acc *acc, const int64_t *tag) {
        c_softmax_xent_acc(c(), z, l, b, k, dz, acc, tag);
    }
    static void im2col_batch(float *col, const float *x, int b, size_t istride, size_t cstride,
                             int ch, int h, int w, int kh, int kw, int pad) {
        size_t ohw = (size_t)(h + 2 * pad - kh + 1) * (size_t)(w + 2 * pad - kw + 1);
        c_im2col_batch(c(), col, x, b, istride, cstride, ch, h, w, kh, kw, pad, (size_t)b * ohw);
    }
    static void col2im_batch(float *dx, int b, size_t istride, size_t cstride, const float *col,
                             int ch, int h, int w, int kh, int kw, int pad) {
        size_t ohw = (size_t)(h + 2 * pad - kh + 1) * (size_t)(w + 2 * pad - kw + 1);
        c_col2im_batch(c(), dx, b, istride, cstride, col, (size_t)b * ohw, ch, h, w, kh, kw, pad);
    }
    static void sgd_momentum_dev(float *p, const float *g, float *v, size_t n, const float *lr,
                                 float mu, float wd, int nesterov) {
        c_sgd(c(), p, g, v, n, lr, 0.0f, mu, wd, nesterov);
    }
    static void adam_dev(float *p, const float *g, float *m, float *v, size_t n,
                         const float *hyper, float b1, float b2, float eps, float wd,
                         int decoupled) {
        c_adam(c(), p, g, m, v, n, hyper, 0.0f, b1, b2, eps, wd, decoupled, 1.0f, 1.0f);
    }
    static void conv_block_forward(float *y, uint8_t *choice, float *zmax, const float *x, int b,
                                   size_t istride, size_t cstride, int ch, int h, int w,
                                   const float *W, const float *bias, int f, int act) {
        c_conv_block_forward(c(), y, choice, zmax, x, b, istride, cstride, ch, h, w, W, bias, f,
                             act);
    }
    static void conv_block_backward(float *dW, float *db, float *dx, const float *dy,
                                    const uint8_t *choice, const float *y, const float *zmax,
                                    const float *x, int b, size_t istride, size_t cstride,
                                    int ch, int h, int w, const float *W, int f, int act) {
        c_conv_block_backward(c(), dW, db, dx, dy, choice, y, zmax, x, b, istride, cstride, ch, h,
                              w, W, f, act);
    }
    static void to_bf16(uint16_t *d, const float *s, size_t n) { c_to_bf16(c(), d, s, n); }
    static void from_bf16(float *d, const uint16_t *s, size_t n) { c_from_bf16(c(), d, s, n); }

    static void fill_table(kn_backend *t) {
        t->name = "cuda";
        t->host_memory = 0;
        t->alloc = alloc;
        t->free = free;
        t->upload = upload;
        t->download = download;
        t->copy = copy;
        t->fill = fill;
        t->scale = scale;
        t->set_threads = set_threads;
        t->gemm = gemm;
        t->broadcast_rows = broadcast_rows;
        t->sum_rows = sum_rows;
        t->sum_channels = sum_channels;
        t->add_channel_bias = add_channel_bias;
        t->relu_forward = relu_forward;
        t->relu_backward = relu_backward;
        t->tanh_forward = tanh_forward;
        t->tanh_backward = tanh_backward;
        t->gelu_forward = gelu_forward;
        t->gelu_backward = gelu_backward;
        t->mul = mul;
        t->softmax_xent = softmax_xent;
        t->im2col = im2col;
        t->col2im = col2im;
        t->swap01 = swap01;
        t->maxpool2_forward = maxpool2_forward;
        t->maxpool2_backward = maxpool2_backward;
        t->sgd_momentum = sgd_momentum;
        t->adam = adam;
        t->set_precision = set_precision;
        t->upload_small = upload_small;
        t->sync = sync;
        t->graph_begin = graph_begin;
        t->graph_end = graph_end;
        t->graph_launch = graph_launch;
        t->graph_free = graph_free;
        t->gather_rows = gather_rows;
        t->dropout_mask = dropout_mask;
        t->softmax_xent_acc = softmax_xent_acc;
        t->im2col_batch = im2col_batch;
        t->col2im_batch = col2im_batch;
        t->sgd_momentum_dev = sgd_momentum_dev;
        t->adam_dev = adam_dev;
        t->to_bf16 = to_bf16;
        t->from_bf16 = from_bf16;
        t->conv_block_forward = conv_block_forward;
        t->conv_block_backward = conv_block_backward;
    }
};

static void (*const g_fill[KN_CUDA_MAX_DEVICES])(kn_backend *) = {
    slot<0>::fill_table,  slot<1>::fill_table,  slot<2>::fill_table,  slot<3>::fill_table,
    slot<4>::fill_table,  slot<5>::fill_table,  slot<6>::fill_table,  slot<7>::fill_table,
    slot<8>::fill_table,  slot<9>::fill_table,  slot<10>::fill_table, slot<11>::fill_table,
    slot<12>::fill_table, slot<13>::fill_table, slot<14>::fill_table, slot<15>::fill_table,
};

/* ---------------------------------------------------------------------------------
 * cuda.h
 * --------------------------------------------------------------------------------- */

extern "C" int kn_cuda_built(void) { return 1; }

extern "C" int kn_cuda_count(char *err, size_t errlen) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* not sticky: clear it */
        tn_error(err, errlen, TN_EINVAL,
                 "no usable CUDA device: %s (%s); hint: check the NVIDIA driver (nvidia-smi) "
                 "and CUDA_VISIBLE_DEVICES",
                 cudaGetErrorString(e), cudaGetErrorName(e));
        return 0;
    }
    if (n == 0)
        tn_error(err, errlen, TN_EINVAL,
                 "no CUDA device is visible; hint: check CUDA_VISIBLE_DEVICES and nvidia-smi");
    return n;
}

extern "C" int kn_cuda_absent(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    cudaGetLastError();
    if (e == cudaSuccess) return n == 0;
    if (e == cudaErrorNoDevice) return 1;
    /* no driver at all, rather than one too old for this build */
    if (e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary)
        return access("/proc/driver/nvidia", F_OK) != 0;
    return 0;
}

#ifndef KN_CUDA_ARCHS /* set by kernels/CMakeLists.txt from TUNER_CUDA_ARCHITECTURES */
#define KN_CUDA_ARCHS "sm_80, sm_90, compute_90 (PTX)"
#define KN_CUDA_MIN_SM 80
#endif

/* Whether this build has code that GPU `device` (current) runs: a capability below the
 * oldest architecture built, or a kernel that cannot be loaded, is an error that names
 * the GPU, its capability and what the build has, rather than "no kernel image" at the
 * first launch. 0 or TN_EINVAL. */
static int check_arch(int device, char *err, size_t errlen) {
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return tn_error(err, errlen, TN_EIO, "cannot read CUDA device %d's properties: %s (%s)",
                        device, cudaGetErrorString(e), cudaGetErrorName(e));
    }
    int sm = p.major * 10 + p.minor;
    cudaFuncAttributes fa;
    e = sm < KN_CUDA_MIN_SM ? cudaErrorNoKernelImageForDevice
                            : cudaFuncGetAttributes(&fa, (const void *)k_fill);
    if (e == cudaSuccess) return 0;
    cudaGetLastError();
    if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction ||
        e == cudaErrorUnsupportedPtxVersion || e == cudaErrorInvalidPtx)
        return tn_error(err, errlen, TN_EINVAL,
                        "GPU %d (%s) has compute capability %d.%d (sm_%d), and this build has "
                        "code for %s only; hint: %sconfigure with "
                        "-DTUNER_CUDA_ARCHITECTURES=\"%d-real;...\" to build for it",
                        device, p.name, p.major, p.minor, sm, KN_CUDA_ARCHS,
                        sm < KN_CUDA_MIN_SM ? "use a newer GPU, or " : "", sm);
    return tn_error(err, errlen, TN_EIO, "cannot run kernels on GPU %d (%s): %s (%s)", device,
                    p.name, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* Creates slot `device`'s stream, cuBLAS handle and workspace (under g_lock); on
 * failure releases what it made. 0, or TN_EINVAL / TN_EIO with the reason. */
static int create(cuda_ctx *c, int device, char *err, size_t errlen) {
    const int64_t one = 1;
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    const char *call = "cudaSetDevice";
    cudaError_t e = cudaSetDevice(device);
    int rc = e == cudaSuccess ? check_arch(device, err, errlen) : 0;
    if (rc) return rc;
    if (e == cudaSuccess) {
        call = "cudaStreamCreateWithFlags";
        e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    }
    if (e == cudaSuccess) call = "cudaMalloc", e = cudaMalloc(&c->workspace, WORKSPACE);
    if (e == cudaSuccess) e = cudaMalloc((void **)&c->own_acc, sizeof *c->own_acc);
    if (e == cudaSuccess) e = cudaMalloc((void **)&c->own_tag, sizeof *c->own_tag);
    if (e == cudaSuccess) {
        call = "cudaMemcpyAsync";
        e = cudaMemcpyAsync(c->own_tag, &one, sizeof one, cudaMemcpyHostToDevice, c->stream);
    }
    if (e == cudaSuccess) call = "cudaStreamSynchronize", e = cudaStreamSynchronize(c->stream);
    if (e != cudaSuccess) {
        cudaGetLastError();
        rc = tn_error(err, errlen, TN_EIO, "cannot set up CUDA device %d: %s: %s (%s)", device,
                      call, cudaGetErrorString(e), cudaGetErrorName(e));
        goto err;
    }
    s = g_blas.create(&c->blas);
    if (s != CUBLAS_STATUS_SUCCESS) {
        c->blas = NULL;
        goto blas_err;
    }
    /* the stream first: cublasSetStream resets the workspace to cuBLAS's own pool */
    s = g_blas.set_stream(c->blas, c->stream);
    if (s == CUBLAS_STATUS_SUCCESS) s = g_blas.set_workspace(c->blas, c->workspace, WORKSPACE);
    if (s == CUBLAS_STATUS_SUCCESS) s = g_blas.set_math(c->blas, CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS) goto blas_err;
    c->device = device;
    c->precision = KN_FP32;
    g_fill[device](&c->table);
    c->ready = 1;
    return 0;

blas_err:
    rc = tn_error(err, errlen, TN_EIO, "cannot set up cuBLAS on CUDA device %d: %s", device,
                  g_blas.status_string(s));
err:
    if (c->blas) g_blas.destroy(c->blas);
    cudaFree(c->own_tag);
    cudaFree(c->own_acc);
    cudaFree(c->workspace);
    if (c->stream) cudaStreamDestroy(c->stream);
    cudaGetLastError();
    memset(c, 0, sizeof *c);
    return rc;
}

extern "C" const kn_backend *kn_cuda(int device, char *err, size_t errlen) {
    int n = kn_cuda_count(err, errlen);
    if (n == 0) return NULL;
    if (device < 0 || device >= n) {
        tn_error(err, errlen, TN_EINVAL, "there is no CUDA device %d: %d device%s visible",
                 device, n, n == 1 ? " is" : "s are");
        return NULL;
    }
    if (device >= KN_CUDA_MAX_DEVICES) {
        tn_error(err, errlen, TN_EINVAL, "CUDA device %d: one process drives at most %d GPUs",
                 device, KN_CUDA_MAX_DEVICES);
        return NULL;
    }
    pthread_mutex_lock(&g_lock);
    cuda_ctx *c = &g_ctx[device];
    int rc = c->ready ? 0 : load_cublas(err, errlen);
    if (!rc && !c->ready) rc = create(c, device, err, errlen);
    pthread_mutex_unlock(&g_lock);
    return rc ? NULL : &c->table;
}

static cuda_ctx *ctx_of(const kn_backend *k) {
    for (int s = 0; s < KN_CUDA_MAX_DEVICES; s++)
        if (g_ctx[s].ready && k == &g_ctx[s].table) return &g_ctx[s];
    return NULL;
}

extern "C" int kn_cuda_device(const kn_backend *k) {
    cuda_ctx *c = ctx_of(k);
    return c ? c->device : -1;
}

extern "C" void *kn_cuda_stream(const kn_backend *k) {
    cuda_ctx *c = ctx_of(k);
    return c ? (void *)c->stream : NULL;
}

extern "C" void kn_cuda_describe(int device, char *buf, size_t len) {
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, device);
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(buf, len, "CUDA device %d (%s)", device, cudaGetErrorString(e));
        return;
    }
    snprintf(buf, len, "%s (sm_%d%d, %.1f GiB, %d SMs)", p.name, p.major, p.minor,
             (double)p.totalGlobalMem / (1 << 30), p.multiProcessorCount);
}

extern "C" void kn_cuda_set_oom_hint(const char *hint) {
    snprintf(g_oom_hint, sizeof g_oom_hint, "%s", hint ? hint : "");
}
