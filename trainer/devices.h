/*
 * devices.h — several devices in one process: run work on each in parallel, and
 * combine their buffers. The strategies `mirrored` (gradients all-reduced across the
 * devices, each device applies the update to its own copy of the variables) and
 * `central_storage` (gradients reduced to the host, one update of the host's
 * variables, copied back to every device) are written against this interface.
 *
 * On the CPU each device is a thread over host memory, and the reductions are split
 * into one segment per device, each summed by its own thread. On GPUs (backends whose
 * memory is not the host's) the work of every device is queued from one thread (the
 * queues run at once), and the reductions are NCCL calls in one group, each on its
 * device's stream (kernels/nccl.h); without NCCL the buffers go through host memory
 * (downloaded, summed in device order, uploaded). The strategies do not change.
 */
#ifndef TN_DEVICES_H
#define TN_DEVICES_H

#include <stddef.h>

#include "kernels/kernels.h"
#include "kernels/nccl.h"

#define DV_MAX 64

typedef struct dv_group {
    int n;                          /* devices */
    const kn_backend *k[DV_MAX];    /* each device's backend */
    kc_group *nccl;                 /* GPUs: the NCCL communicators (dv_open), or NULL:
                                       reductions through host memory */
    float *stage;                   /* host staging of the reductions without NCCL */
    size_t stage_n;                 /* its size in floats */
} dv_group;

/* Prepares the group's reductions once n and k[] are set: NCCL communicators when the
 * backends are CUDA GPUs and NCCL is available; nothing on the CPU. Never fails: note
 * (may be NULL) gets one line saying how the devices exchange buffers and why. */
void dv_open(dv_group *g, char *note, size_t notelen);

/* Frees what dv_open and the reductions made (not the backends). */
void dv_close(dv_group *g);

/* Runs fn(device, ctx) for every device and returns when all have: on the CPU in a
 * thread each, at once; on GPUs in turn from this thread (fn queues work, which the
 * devices then run at once). */
void dv_parallel(const dv_group *g, void (*fn)(int device, void *ctx), void *ctx);

/* bufs[d] (n floats on device d): every device ends with the sum over devices. */
void dv_allreduce(dv_group *g, float *const *bufs, size_t n);

/* host (n floats) = the sum over devices of bufs[d]. bufs[0] may be overwritten. */
void dv_reduce_to_host(dv_group *g, float *const *bufs, size_t n, float *host);

/* bufs[d] = host, on every device. */
void dv_broadcast_from_host(dv_group *g, const float *host, float *const *bufs, size_t n);

#endif
