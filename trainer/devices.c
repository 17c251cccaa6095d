/*
 * devices.c — CPU devices as threads (see devices.h). Every buffer is host memory
 * (kn_cpu's host_memory), so a reduction is plain loads and adds: segment s of the
 * buffers is summed by thread s, so the work and the memory traffic are split evenly.
 */
#include "trainer/devices.h"

#include <assert.h>
#include <pthread.h>
#include <string.h>

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
    if (g->n == 1) {
        fn(0, ctx);
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

static void check_host(const dv_group *g) {
    for (int d = 0; d < g->n; d++) assert(g->k[d]->host_memory);
    (void)g;
}

void dv_allreduce(const dv_group *g, float *const *bufs, size_t n) {
    check_host(g);
    if (g->n == 1) return;
    reduction r = {g, bufs, n, NULL, NULL};
    dv_parallel(g, sum_segment, &r);
}

void dv_reduce_to_host(const dv_group *g, float *const *bufs, size_t n, float *host) {
    check_host(g);
    reduction r = {g, bufs, n, host, NULL};
    dv_parallel(g, sum_segment, &r);
}

void dv_broadcast_from_host(const dv_group *g, const float *host, float *const *bufs, size_t n) {
    check_host(g);
    reduction r = {g, bufs, n, NULL, host};
    dv_parallel(g, copy_segment, &r);
}
