/*
 * devices.c — several devices in one process (see devices.h). CPU devices are threads
 * over host memory (kn_cpu's host_memory), so a reduction is plain loads and adds:
 * segment s of the buffers is summed by thread s, so the work and the memory traffic
 * are split evenly. GPUs reduce with NCCL (kernels/nccl.h), or through host memory
 * with the same order of additions as the CPU (device 0, then 1, ...).
 */
#include "trainer/devices.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"

static int on_host(const dv_group *g) { return g->k[0]->host_memory; }

void dv_open(dv_group *g, char *note, size_t notelen) {
    char why[512] = "";
    g->nccl = NULL;
    if (on_host(g)) {
        tn_error(note, notelen, 0, "the devices sum their buffers in host memory");
        return;
    }
    if (kc_group_new(g->k, g->n, &g->nccl, why, sizeof why) == 0)
        tn_error(note, notelen, 0, "the devices sum their buffers with NCCL %s", kc_version());
    else
        tn_error(note, notelen, 0, "the devices sum their buffers through host memory (%s)",
                 why);
}

void dv_close(dv_group *g) {
    kc_group_free(g->nccl);
    g->nccl = NULL;
    free(g->stage);
    g->stage = NULL;
    g->stage_n = 0;
}

typedef struct job {
    void (*fn)(int device, void *ctx);
    void *ctx;
    int device;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    j->fn(j->device, j->ctx);
    return NULL;
}

void dv_parallel(const dv_group *g, void (*fn)(int device, void *ctx), void *ctx) {
    assert(g->n >= 1 && g->n <= DV_MAX);
    if (g->n == 1 || !on_host(g)) {
        for (int d = 0; d < g->n; d++) fn(d, ctx);
        return;
    }
    pthread_t th[DV_MAX];
    job jobs[DV_MAX];
    for (int d = 1; d < g->n; d++) {
        jobs[d] = (job){fn, ctx, d};
        if (pthread_create(&th[d], NULL, run_job, &jobs[d]) != 0) {
            fn(d, ctx); /* no thread to be had: run it here */
            th[d] = 0;
        }
    }
    fn(0, ctx);
    for (int d = 1; d < g->n; d++)
        if (th[d]) pthread_join(th[d], NULL);
}

typedef struct reduction {
    const dv_group *g;
    float *const *bufs;
    size_t n;
    float *host;     /* reduce_to_host: the destination; allreduce: NULL */
    const float *src; /* broadcast_from_host: the source */
} reduction;

static void segment(size_t n, int parts, int i, size_t *lo, size_t *hi) {
    *lo = n * (size_t)i / (size_t)parts;
    *hi = n * (size_t)(i + 1) / (size_t)parts;
}

static void sum_segment(int s, void *arg) {
    reduction *r = arg;
    size_t lo, hi;
    segment(r->n, r->g->n, s, &lo, &hi);
    float *dst = r->host ? r->host : r->bufs[0];
    if (r->host) memcpy(dst + lo, r->bufs[0] + lo, (hi - lo) * sizeof(float));
    for (int d = 1; d < r->g->n; d++) {
        const float *x = r->bufs[d];
        for (size_t i = lo; i < hi; i++) dst[i] += x[i];
    }
    if (!r->host)
        for (int d = 1; d < r->g->n; d++)
            memcpy(r->bufs[d] + lo, dst + lo, (hi - lo) * sizeof(float));
}

static void copy_segment(int s, void *arg) {
    reduction *r = arg;
    size_t lo, hi;
    segment(r->n, r->g->n, s, &lo, &hi);
    for (int d = 0; d < r->g->n; d++)
        memcpy(r->bufs[d] + lo, r->src + lo, (hi - lo) * sizeof(float));
}

/* Without NCCL: host = the sum of every device's buffer, added in device order (the
 * CPU threads' order, so the numbers are the same). */
static void staged_sum(dv_group *g, float *const *bufs, size_t n, float *host) {
    if (g->stage_n < n) {
        free(g->stage);
        g->stage = tn_xmalloc(n * sizeof(float));
        g->stage_n = n;
    }
    g->k[0]->download(host, bufs[0], n * sizeof(float));
    for (int d = 1; d < g->n; d++) {
        g->k[d]->download(g->stage, bufs[d], n * sizeof(float));
        for (size_t i = 0; i < n; i++) host[i] += g->stage[i];
    }
}

void dv_allreduce(dv_group *g, float *const *bufs, size_t n) {
    if (g->n == 1) return;
    if (on_host(g)) {
        reduction r = {g, bufs, n, NULL, NULL};
        dv_parallel(g, sum_segment, &r);
    } else if (g->nccl) {
        kc_group_allreduce(g->nccl, bufs, n);
    } else {
        float *sum = tn_xmalloc(n * sizeof(float));
        staged_sum(g, bufs, n, sum);
        for (int d = 0; d < g->n; d++) g->k[d]->upload(bufs[d], sum, n * sizeof(float));
        free(sum);
    }
}

void dv_reduce_to_host(dv_group *g, float *const *bufs, size_t n, float *host) {
    if (on_host(g)) {
        reduction r = {g, bufs, n, host, NULL};
        dv_parallel(g, sum_segment, &r);
    } else if (g->nccl) {
        kc_group_reduce(g->nccl, bufs, n);
        g->k[0]->download(host, bufs[0], n * sizeof(float));
    } else {
        staged_sum(g, bufs, n, host);
    }
}

void dv_broadcast_from_host(dv_group *g, const float *host, float *const *bufs, size_t n) {
    if (on_host(g)) {
        reduction r = {g, bufs, n, NULL, host};
        dv_parallel(g, copy_segment, &r);
    } else if (g->nccl) {
        g->k[0]->upload(bufs[0], host, n * sizeof(float));
        kc_group_broadcast(g->nccl, bufs, n);
    } else {
        for (int d = 0; d < g->n; d++) g->k[d]->upload(bufs[d], host, n * sizeof(float));
    }
}
