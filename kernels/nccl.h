/*
 * nccl.h — NCCL collectives over CUDA backends (kernels/cuda.h), for the trainer's
 * strategies on GPUs: a group of the GPUs of one process (mirrored, central_storage;
 * trainer/devices.c) and one GPU per process across replicas (multi_worker_mirrored;
 * trainer/train.c, the unique id sent over the replicas' TCP ring).
 *
 * Every operation is queued on the CUDA stream of the backend whose buffers it works
 * on, so it is ordered with that device's kernels without the host waiting. libnccl
 * (libnccl.so.2) is loaded at the first use: a build with NCCL runs where NCCL is
 * absent, kc_available says why, and the trainer uses its own collectives instead.
 * In a build without NCCL (or without CUDA: kernels/nccl_none.c) nothing is available.
 *
 * Errors: creating a communicator returns an error the caller can fall back from. A
 * failure inside a group operation (one process: nothing to recover) exits with
 * file:line and NCCL's message. Operations across processes return TN_EPEER when a
 * peer fails or stops answering, after aborting the communicator.
 * Design: docs/distributed.md, "GPUs".
 */
#ifndef TN_KERNELS_NCCL_H
#define TN_KERNELS_NCCL_H

#include <stddef.h>

#include "kernels/kernels.h"

#define KC_ID_BYTES 128 /* an ncclUniqueId */

typedef struct kc_group kc_group; /* one communicator per GPU of this process */
typedef struct kc_comm kc_comm;   /* this process's GPU in a communicator of processes */

/* 1 when this build has the NCCL collectives (kernels/nccl.c), 0 when it was built
 * without NCCL (kernels/nccl_none.c). Whether NCCL loads is kc_available's question. */
int kc_built(void);

/* 1 when NCCL can be used (built with it, and libnccl.so.2 loads), else 0 with the
 * reason in why. */
int kc_available(char *why, size_t whylen);

/* The NCCL version in use ("2.28.9"), or "" when it is not available. */
const char *kc_version(void);

/* Communicators for the n CUDA backends k[0..n) (distinct GPUs of this process;
 * ncclCommInitAll). 0 and *out (yours: kc_group_free), or a negative TN_E* code with
 * the reason (NCCL absent, a backend that is not CUDA, NCCL refused). */
int kc_group_new(const kn_backend *const *k, int n, kc_group **out, char *err, size_t errlen);
void kc_group_free(kc_group *g); /* accepts NULL */

/* bufs[d] (n floats on GPU d) = the sum over the group, on every GPU. */
void kc_group_allreduce(kc_group *g, float *const *bufs, size_t n);
/* bufs[0] = the sum over the group (the others are left as they were). */
void kc_group_reduce(kc_group *g, float *const *bufs, size_t n);
/* bufs[d] = bufs[0] on every GPU. */
void kc_group_broadcast(kc_group *g, float *const *bufs, size_t n);

/* A new unique id for kc_comm_new, made by one process and sent to the others. */
int kc_unique_id(unsigned char id[KC_ID_BYTES], char *err, size_t errlen);

/* Joins the communicator of nranks processes named by id as rank `rank`, on the GPU
 * of backend k, waiting up to timeout seconds for the others. 0 and *out (yours:
 * kc_comm_free), or a negative TN_E* code with the reason; every rank must get the
 * same result to go on together (the caller votes). */
int kc_comm_new(const kn_backend *k, int nranks, int rank, const unsigned char id[KC_ID_BYTES],
                double timeout, kc_comm **out, char *err, size_t errlen);

/* Leaves the communicator (after the others are done with it, or aborting it when a
 * peer was lost). Accepts NULL. */
void kc_comm_free(kc_comm *c);

/* Sums buf (n floats on the device) over the ranks, in place, and waits until it is
 * done. With bf16 the values travel as bfloat16 (rounded to nearest even), summed by
 * NCCL in bfloat16. A peer that fails, or makes no progress for timeout seconds:
 * TN_EPEER, and the communicator is aborted (free it). */
int kc_allreduce(kc_comm *c, float *buf, size_t n, int bf16, double timeout, char *err,
                 size_t errlen);

#endif
