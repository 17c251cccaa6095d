/*
 * cuda.h — the CUDA backend of kernels.h: one kn_backend table per GPU, with its own
 * CUDA stream, cuBLAS handle and cuBLAS workspace (kernels/cuda.cu).
 *
 * The same functions exist in every build. In a build without CUDA (TUNER_CUDA=OFF,
 * or no nvcc where it was configured: kernels/cuda_none.c) they find no device and say
 * why and how to build with CUDA. In a CUDA build the CUDA runtime is linked
 * statically and cuBLAS (libcublas.so.13) is loaded when the first backend is created,
 * so the binary starts, and runs on the CPU, on machines without a GPU or CUDA
 * libraries; a failure to find them is reported when a GPU is asked for.
 *
 * Errors inside a table's functions (a failed CUDA or cuBLAS call, out of device
 * memory) exit the process with file:line, the library's message and a hint
 * (kernels.h). Design: docs/trainer.md, "Devices"; docs/architecture.md, "Build".
 */
#ifndef TN_KERNELS_CUDA_H
#define TN_KERNELS_CUDA_H

#include <stddef.h>

#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most GPUs one process drives (one backend table each). */
#define KN_CUDA_MAX_DEVICES 16

/* 1 when this build has the CUDA backend, 0 when it was built without CUDA. */
int kn_cuda_built(void);

/* Number of CUDA devices this process can use (those CUDA_VISIBLE_DEVICES names, all
 * when it is unset). 0 when there is none, with the reason in err: no CUDA in this
 * build (and how to configure one), no driver, no device. Initialises the CUDA driver
 * on the first call (a fraction of a second), so call it only when a GPU may be used. */
int kn_cuda_count(char *err, size_t errlen);

/* 1 when this machine has no GPU for this build to use at all: the build has no CUDA,
 * no NVIDIA driver is installed (CUDA finds no usable driver library and there is no
 * /proc/driver/nvidia), or no device is there or visible. 0 when a GPU is there, and
 * also when CUDA fails for another reason (a driver too old for this build, a broken
 * installation): GPU tests skip on 1 and fail on 0 when kn_cuda fails. */
int kn_cuda_absent(void);

/* The backend of CUDA device `device` (0 <= device < kn_cuda_count()), created on
 * the first call and the same table on later ones; it lives until the process ends.
 * NULL with the reason in err when there is no such device, this build has no code for
 * it (its compute capability is older than the architectures built: TN_EINVAL, naming
 * the GPU, its capability and what the build has), or its stream, cuBLAS handle or
 * workspace cannot be created. The table's functions may be called from any
 * thread (each makes its device current first), but not from two threads at once. */
const kn_backend *kn_cuda(int device, char *err, size_t errlen);

/* For the NCCL collectives (kernels/nccl.h): the CUDA device and the cudaStream_t
 * (as void *) of a table kn_cuda returned; -1 and NULL for any other table. */
int kn_cuda_device(const kn_backend *k);
void *kn_cuda_stream(const kn_backend *k);

/* One line about a device for the logs: "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB,
 * 132 SMs)"; the reason when it cannot be read. */
void kn_cuda_describe(int device, char *buf, size_t len);

/* A hint printed after a fatal out-of-memory error, such as "lower --batch_size
 * (this run: 1024)". Copied; NULL clears it. */
void kn_cuda_set_oom_hint(const char *hint);

#ifdef __cplusplus
}
#endif

#endif
