/*
 * devices.h — several devices in one process: run work on each in parallel, and
 * combine their buffers. The strategies `mirrored` (gradients all-reduced across the
 * devices, each device applies the update to its own copy of the variables) and
 * `central_storage` (gradients reduced to the host, one update of the host's
 * variables, copied back to every device) are written against this interface.
 *
 * On the CPU each device is a thread over host memory, and the reductions are split
 * into one segment per device, each summed by its own thread. A CUDA backend
 * implements the same calls with NCCL (ncclAllReduce / ncclReduce / ncclBroadcast in
 * one group, a stream per device); the strategies do not change.
 */
#ifndef TN_DEVICES_H
#define TN_DEVICES_H

#include <stddef.h>

#include "kernels/kernels.h"

#define DV_MAX 64

typedef struct dv_group {
    int n;                          /* devices */
    const kn_backend *k[DV_MAX];    /* each device's backend */
} dv_group;

/* Runs fn(device, ctx) for every device at once and waits for all of them. */
void dv_parallel(const dv_group *g, void (*fn)(int device, void *ctx), void *ctx);

/* bufs[d] (n floats on device d): every device ends with the sum over devices. */
void dv_allreduce(const dv_group *g, float *const *bufs, size_t n);

/* host (n floats) = the sum over devices of bufs[d]. */
void dv_reduce_to_host(const dv_group *g, float *const *bufs, size_t n, float *host);

/* bufs[d] = host, on every device. */
void dv_broadcast_from_host(const dv_group *g, const float *host, float *const *bufs, size_t n);

#endif
