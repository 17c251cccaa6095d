/*
 * nccl.c — nccl.h with NCCL, loaded with dlopen at the first use (see nccl.h).
 *
 * The group (one process, several GPUs) uses ncclCommInitAll and one ncclGroupStart /
 * ncclGroupEnd around the per-GPU calls, each on its backend's stream. The
 * communicator across processes is non-blocking (ncclConfig_t.blocking = 0): joining
 * it and every all-reduce are waited for here with a deadline, polling
 * ncclCommGetAsyncError and the stream, so that a lost peer is reported (and the
 * communicator aborted) instead of hanging the replica.
 */
#define _GNU_SOURCE /* nanosleep, sched_yield */
#include "kernels/nccl.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/status.h"
#include "kernels/cuda.h"

_Static_assert(sizeof(ncclUniqueId) == KC_ID_BYTES, "KC_ID_BYTES is an ncclUniqueId");

/* ---- the library ---- */

static struct {
    void *lib;
    __typeof__(ncclGetVersion) *get_version;
    __typeof__(ncclGetErrorString) *error_string;
    __typeof__(ncclGetLastError) *last_error;
    __typeof__(ncclGetUniqueId) *unique_id;
    __typeof__(ncclCommInitAll) *init_all;
    __typeof__(ncclCommInitRankConfig) *init_rank_config;
    __typeof__(ncclCommGetAsyncError) *async_error;
    __typeof__(ncclCommFinalize) *finalize;
    __typeof__(ncclCommDestroy) *destroy;
    __typeof__(ncclCommAbort) *abort_comm;
    __typeof__(ncclGroupStart) *group_start;
    __typeof__(ncclGroupEnd) *group_end;
    __typeof__(ncclAllReduce) *all_reduce;
    __typeof__(ncclReduce) *reduce;
    __typeof__(ncclBroadcast) *broadcast;
} nc;

static pthread_mutex_t nc_lock = PTHREAD_MUTEX_INITIALIZER;
static int nc_state;        /* 0 not tried, 1 loaded, -1 failed */
static char nc_why[512];    /* why it failed */
static char nc_version[32]; /* "2.28.9" */

static int load_nccl(void) {
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(nc_why, sizeof nc_why,
                 "cannot load NCCL (%s); hint: install NCCL 2 or add the folder holding "
                 "libnccl.so.2 to LD_LIBRARY_PATH",
                 dlerror());
        return -1;
    }
    struct {
        const char *name;
        void *slot;
        size_t size;
    } syms[] = {
#define SYM(field, name) {name, &nc.field, sizeof nc.field}
        SYM(get_version, "ncclGetVersion"),
        SYM(error_string, "ncclGetErrorString"),
        SYM(last_error, "ncclGetLastError"),
        SYM(unique_id, "ncclGetUniqueId"),
        SYM(init_all, "ncclCommInitAll"),
        SYM(init_rank_config, "ncclCommInitRankConfig"),
        SYM(async_error, "ncclCommGetAsyncError"),
        SYM(finalize, "ncclCommFinalize"),
        SYM(destroy, "ncclCommDestroy"),
        SYM(abort_comm, "ncclCommAbort"),
        SYM(group_start, "ncclGroupStart"),
        SYM(group_end, "ncclGroupEnd"),
        SYM(all_reduce, "ncclAllReduce"),
        SYM(reduce, "ncclReduce"),
        SYM(broadcast, "ncclBroadcast"),
#undef SYM
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(lib, syms[i].name);
        if (!p) {
            snprintf(nc_why, sizeof nc_why,
                     "libnccl.so.2 lacks %s; hint: use NCCL 2.14 or newer", syms[i].name);
            dlclose(lib);
            return -1;
        }
        memcpy(syms[i].slot, &p, syms[i].size); /* a function pointer from a void * */
    }
    int v = 0;
    if (nc.get_version(&v) != ncclSuccess) v = 0;
    /* NCCL_VERSION_CODE: major*10000 + minor*100 + patch (since 2.9) */
    snprintf(nc_version, sizeof nc_version, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    nc.lib = lib;
    return 1;
}

int kc_built(void) { return 1; }

int kc_available(char *why, size_t whylen) {
    pthread_mutex_lock(&nc_lock);
    if (nc_state == 0) nc_state = load_nccl();
    int ok = nc_state == 1;
    pthread_mutex_unlock(&nc_lock);
    if (!ok) tn_error(why, whylen, TN_EINVAL, "%s", nc_why);
    return ok;
}

const char *kc_version(void) { return nc_state == 1 ? nc_version : ""; }

static const char *nccl_message(ncclResult_t r, ncclComm_t comm) {
    static __thread char buf[512];
    const char *last = nc.last_error ? nc.last_error(comm) : NULL;
    snprintf(buf, sizeof buf, "%s%s%s", nc.error_string(r), last && *last ? ": " : "",
             last ? last : "");
    return buf;
}

/* A failed group operation: one process, nothing to recover. */
static void check_group(ncclResult_t r, const char *call, const char *file, int line) {
    if (r == ncclSuccess) return;
    fflush(stdout);
    fprintf(stderr, "fatal: %s:%d: %s failed: %s\n", file, line, call, nccl_message(r, NULL));
    fprintf(stderr, "hint: NCCL_DEBUG=WARN prints NCCL's own account (docs/distributed.md, "
                    "\"GPUs\")\n");
    exit(1);
}

#define CKG(call) check_group((call), #call, __FILE__, __LINE__)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Waiting: yield the core for the first 2 ms (a step waits briefly and often), then
 * sleep 100 us at a time. */
static void pause_since(double start) {
    if (now() - start < 2e-3) {
        sched_yield();
    } else {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

/* ---- one process, several GPUs ---- */

struct kc_group {
    int n;
    ncclComm_t comm[KN_CUDA_MAX_DEVICES];
    cudaStream_t stream[KN_CUDA_MAX_DEVICES];
};

int kc_group_new(const kn_backend *const *k, int n, kc_group **out, char *err, size_t errlen) {
    *out = NULL;
    if (!kc_available(err, errlen)) return TN_EINVAL;
    if (n < 1 || n > KN_CUDA_MAX_DEVICES)
        return tn_error(err, errlen, TN_EINVAL, "an NCCL group of %d GPUs (1 to %d)", n,
                        KN_CUDA_MAX_DEVICES);
    kc_group *g = tn_xcalloc(1, sizeof *g);
    int devs[KN_CUDA_MAX_DEVICES];
    g->n = n;
    for (int d = 0; d < n; d++) {
        devs[d] = kn_cuda_device(k[d]);
        g->stream[d] = (cudaStream_t)kn_cuda_stream(k[d]);
        if (devs[d] < 0) {
            free(g);
            return tn_error(err, errlen, TN_EINVAL, "device %d of the group is not a CUDA GPU",
                            d);
        }
    }
    ncclResult_t r = nc.init_all(g->comm, n, devs);
    if (r != ncclSuccess) {
        tn_error(err, errlen, TN_EIO, "ncclCommInitAll over %d GPUs: %s", n,
                 nccl_message(r, NULL));
        free(g);
        return TN_EIO;
    }
    *out = g;
    return 0;
}

void kc_group_free(kc_group *g) {
    if (!g) return;
    for (int d = 0; d < g->n; d++) nc.destroy(g->comm[d]);
    free(g);
}

void kc_group_allreduce(kc_group *g, float *const *bufs, size_t n) {
    if (!n) return;
    CKG(nc.group_start());
    for (int d = 0; d < g->n; d++)
        CKG(nc.all_reduce(bufs[d], bufs[d], n, ncclFloat, ncclSum, g->comm[d], g->stream[d]));
    CKG(nc.group_end());
}

void kc_group_reduce(kc_group *g, float *const *bufs, size_t n) {
    if (!n) return;
    CKG(nc.group_start());
    for (int d = 0; d < g->n; d++)
        CKG(nc.reduce(bufs[d], bufs[d], n, ncclFloat, ncclSum, 0, g->comm[d], g->stream[d]));
    CKG(nc.group_end());
}

void kc_group_broadcast(kc_group *g, float *const *bufs, size_t n) {
    if (!n) return;
    CKG(nc.group_start());
    for (int d = 0; d < g->n; d++)
        CKG(nc.broadcast(bufs[d], bufs[d], n, ncclFloat, 0, g->comm[d], g->stream[d]));
    CKG(nc.group_end());
}

/* ---- one GPU per process ---- */

struct kc_comm {
    ncclComm_t comm;
    const kn_backend *k;
    cudaStream_t stream;
    int device;
    int broken;       /* aborted after a failure: every later call fails */
    uint16_t *bf16;   /* (bf16_n) the bfloat16 copy of the buffer sent */
    size_t bf16_n;
};

int kc_unique_id(unsigned char id[KC_ID_BYTES], char *err, size_t errlen) {
    if (!kc_available(err, errlen)) return TN_EINVAL;
    ncclUniqueId u;
    ncclResult_t r = nc.unique_id(&u);
    if (r != ncclSuccess)
        return tn_error(err, errlen, TN_EIO, "ncclGetUniqueId: %s", nccl_message(r, NULL));
    memcpy(id, &u, KC_ID_BYTES);
    return 0;
}

/* Fails c: aborts the communicator (its pending work on the GPU included). */
static int give_up(kc_comm *c, char *err, size_t errlen, const char *what, ncclResult_t r) {
    tn_error(err, errlen, TN_EPEER, "NCCL %s failed: %s", what, nccl_message(r, c->comm));
    if (!c->broken) nc.abort_comm(c->comm);
    c->broken = 1;
    return TN_EPEER;
}

/* Waits for the communicator's pending call (a non-blocking communicator may return
 * ncclInProgress) until deadline. */
static int settle(kc_comm *c, double deadline, const char *what, char *err, size_t errlen) {
    double start = now();
    for (;;) {
        ncclResult_t st = ncclInProgress;
        ncclResult_t r = nc.async_error(c->comm, &st);
        if (r != ncclSuccess) return give_up(c, err, errlen, what, r);
        if (st == ncclSuccess) return 0;
        if (st != ncclInProgress) return give_up(c, err, errlen, what, st);
        if (now() > deadline) {
            int rc = give_up(c, err, errlen, what, ncclInProgress);
            tn_error(err, errlen, TN_EPEER,
                     "NCCL %s made no progress for %.0f s (a peer replica is missing or "
                     "hung); hint: raise --peer_timeout if a step can take longer",
                     what, deadline - start);
            return rc;
        }
        pause_since(start);
    }
}

int kc_comm_new(const kn_backend *k, int nranks, int rank, const unsigned char id[KC_ID_BYTES],
                double timeout, kc_comm **out, char *err, size_t errlen) {
    *out = NULL;
    if (!kc_available(err, errlen)) return TN_EINVAL;
    int dev = kn_cuda_device(k);
    if (dev < 0) return tn_error(err, errlen, TN_EINVAL, "NCCL needs a CUDA backend");
    cudaError_t e = cudaSetDevice(dev);
    if (e != cudaSuccess)
        return tn_error(err, errlen, TN_EIO, "cudaSetDevice(%d): %s", dev, cudaGetErrorString(e));
    kc_comm *c = tn_xcalloc(1, sizeof *c);
    c->k = k;
    c->device = dev;
    c->stream = (cudaStream_t)kn_cuda_stream(k);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclUniqueId u;
    memcpy(&u, id, KC_ID_BYTES);
    ncclResult_t r = nc.init_rank_config(&c->comm, nranks, u, rank, &config);
    int rc = 0;
    if (r != ncclSuccess && r != ncclInProgress) {
        rc = tn_error(err, errlen, TN_EIO, "ncclCommInitRankConfig (rank %d of %d): %s", rank,
                      nranks, nccl_message(r, NULL));
        if (c->comm) nc.abort_comm(c->comm);
        free(c);
        return rc;
    }
    rc = settle(c, now() + timeout, "communicator set-up", err, errlen);
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void kc_comm_free(kc_comm *c) {
    if (!c) return;
    cudaSetDevice(c->device);
    if (!c->broken) {
        /* a clean goodbye: flush, wait (bounded), destroy; abort if it hangs */
        ncclResult_t r = nc.finalize(c->comm);
        int rc = r == ncclSuccess || r == ncclInProgress
                     ? settle(c, now() + 30, "finalize", NULL, 0)
                     : give_up(c, NULL, 0, "finalize", r);
        if (!rc) nc.destroy(c->comm);
    }
    c->k->free(c->bf16);
    free(c);
}

int kc_allreduce(kc_comm *c, float *buf, size_t n, int bf16, double timeout, char *err,
                 size_t errlen) {
    if (c->broken)
        return tn_error(err, errlen, TN_EPEER, "the NCCL communicator was aborted earlier");
    if (!n) return 0;
    cudaError_t e = cudaSetDevice(c->device);
    if (e != cudaSuccess)
        return tn_error(err, errlen, TN_EIO, "cudaSetDevice(%d): %s", c->device,
                        cudaGetErrorString(e));
    double start = now(), deadline = start + timeout;
    ncclResult_t r;
    if (bf16) {
        if (c->bf16_n < n) {
            c->k->free(c->bf16);
            c->bf16 = c->k->alloc(n * sizeof(uint16_t));
            c->bf16_n = n;
        }
        c->k->to_bf16(c->bf16, buf, n);
        r = nc.all_reduce(c->bf16, c->bf16, n, ncclBfloat16, ncclSum, c->comm, c->stream);
    } else {
        r = nc.all_reduce(buf, buf, n, ncclFloat, ncclSum, c->comm, c->stream);
    }
    if (r != ncclSuccess && r != ncclInProgress) return give_up(c, err, errlen, "all-reduce", r);
    int rc = settle(c, deadline, "all-reduce", err, errlen);
    if (rc) return rc;
    if (bf16) c->k->from_bf16(buf, c->bf16, n);
    /* wait for the GPU, watching for a peer's failure */
    for (;;) {
        e = cudaStreamQuery(c->stream);
        if (e == cudaSuccess) return 0;
        if (e != cudaErrorNotReady) {
            fflush(stdout);
            fprintf(stderr, "fatal: %s:%d: cudaStreamQuery failed on GPU %d: %s (%s)\n",
                    __FILE__, __LINE__, c->device, cudaGetErrorString(e), cudaGetErrorName(e));
            exit(1);
        }
        ncclResult_t st = ncclSuccess;
        r = nc.async_error(c->comm, &st);
        if (r != ncclSuccess) return give_up(c, err, errlen, "all-reduce", r);
        if (st != ncclSuccess && st != ncclInProgress)
            return give_up(c, err, errlen, "all-reduce", st);
        if (now() > deadline) {
            give_up(c, err, errlen, "all-reduce", ncclInProgress);
            return tn_error(err, errlen, TN_EPEER,
                            "the NCCL all-reduce made no progress for %.0f s (a peer replica "
                            "is missing or hung); hint: raise --peer_timeout if a step can "
                            "take longer",
                            timeout);
        }
        pause_since(start);
    }
}
