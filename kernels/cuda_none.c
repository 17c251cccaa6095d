/*
 * cuda_none.c — cuda.h in a build without CUDA (TUNER_CUDA=OFF, or configured where
 * no nvcc was found): there is no CUDA device to use, and every function says so and
 * how to build with CUDA. The CPU backend (cpu.c) is the whole of such a build.
 */
#include "kernels/cuda.h"

#include "common/status.h"

#define NO_CUDA                                                                          \
    "this build has no CUDA backend; hint: install the CUDA toolkit (nvcc, cuBLAS) and "  \
    "configure with -DTUNER_CUDA=ON (docs/architecture.md, \"Build\")"

int kn_cuda_built(void) { return 0; }

int kn_cuda_absent(void) { return 1; }

int kn_cuda_count(char *err, size_t errlen) {
    tn_error(err, errlen, TN_EINVAL, NO_CUDA);
    return 0;
}

const kn_backend *kn_cuda(int device, char *err, size_t errlen) {
    (void)device;
    tn_error(err, errlen, TN_EINVAL, NO_CUDA);
    return NULL;
}

int kn_cuda_device(const kn_backend *k) {
    (void)k;
    return -1;
}

void *kn_cuda_stream(const kn_backend *k) {
    (void)k;
    return NULL;
}

void kn_cuda_describe(int device, char *buf, size_t len) {
    tn_error(buf, len, TN_EINVAL, "CUDA device %d (this build has no CUDA backend)", device);
}

void kn_cuda_set_oom_hint(const char *hint) { (void)hint; }
