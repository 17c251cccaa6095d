/*
 * nccl_none.c — nccl.h in a build without NCCL (or without CUDA): nothing is
 * available, and every call says so; the trainer then sums over the host (devices.c)
 * or its TCP ring (collective.c).
 */
#include "kernels/nccl.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/status.h"

#define NO_NCCL                                                                          \
    "this build has no NCCL; hint: install NCCL's header and library (nccl.h, "          \
    "libnccl.so) beside the CUDA toolkit and configure again"

int kc_built(void) { return 0; }

int kc_available(char *why, size_t whylen) {
    tn_error(why, whylen, TN_EINVAL, NO_NCCL);
    return 0;
}

const char *kc_version(void) { return ""; }

int kc_group_new(const kn_backend *const *k, int n, kc_group **out, char *err, size_t errlen) {
    (void)k;
    (void)n;
    *out = NULL;
    return tn_error(err, errlen, TN_EINVAL, NO_NCCL);
}

void kc_group_free(kc_group *g) { (void)g; }

/* There is never a group to call these with. */
static void no_group(void) {
    fprintf(stderr, "fatal: internal error: an NCCL group operation in a build without NCCL\n");
    abort();
}

void kc_group_allreduce(kc_group *g, float *const *bufs, size_t n) {
    (void)g, (void)bufs, (void)n;
    no_group();
}

void kc_group_reduce(kc_group *g, float *const *bufs, size_t n) {
    (void)g, (void)bufs, (void)n;
    no_group();
}

void kc_group_broadcast(kc_group *g, float *const *bufs, size_t n) {
    (void)g, (void)bufs, (void)n;
    no_group();
}

int kc_unique_id(unsigned char id[KC_ID_BYTES], char *err, size_t errlen) {
    (void)id;
    return tn_error(err, errlen, TN_EINVAL, NO_NCCL);
}

int kc_comm_new(const kn_backend *k, int nranks, int rank, const unsigned char id[KC_ID_BYTES],
                double timeout, kc_comm **out, char *err, size_t errlen) {
    (void)k, (void)nranks, (void)rank, (void)id, (void)timeout;
    *out = NULL;
    return tn_error(err, errlen, TN_EINVAL, NO_NCCL);
}

void kc_comm_free(kc_comm *c) { (void)c; }

int kc_allreduce(kc_comm *c, float *buf, size_t n, int bf16, double timeout, char *err,
                 size_t errlen) {
    (void)c, (void)buf, (void)n, (void)bf16, (void)timeout;
    return tn_error(err, errlen, TN_EINVAL, NO_NCCL);
}
