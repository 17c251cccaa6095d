/*
 * bucket.c — bucketed all-reduce on a thread of its own (see bucket.h).
 *
 * One mutex and one condition variable: the main thread moves `ready` down and
 * waits for `active` to drop; the communication thread waits for the next bucket's
 * lower bound to be ready, sums it, and drops `active` after the last one (or the
 * first error).
 */
#include "trainer/bucket.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"

typedef struct bucket {
    size_t lo, hi; /* [lo, hi) of the buffer */
} bucket;

struct bk_reducer {
    cl_ring *ring;
    float *buf;
    size_t n;
    int precision;
    bucket *buckets;   /* from the end of the buffer to its start */
    int nbuckets;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* guarded by mu */
    int active;        /* a step is under way */
    int quit;
    int next;          /* the next bucket to send */
    size_t ready;      /* [ready, n) is final */
    int rc;            /* the step's first error */
    char err[512];
};

static void *comm_main(void *arg) {
    bk_reducer *b = arg;
    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->quit && !(b->active && b->next < b->nbuckets &&
                             b->ready <= b->buckets[b->next].lo))
            pthread_cond_wait(&b->cv, &b->mu);
        if (b->quit) break;
        bucket k = b->buckets[b->next];
        pthread_mutex_unlock(&b->mu);

        char err[512];
        int rc = cl_allreduce(b->ring, b->buf + k.lo, k.hi - k.lo, b->precision, err, sizeof err);

        pthread_mutex_lock(&b->mu);
        b->next++;
        if (rc) {
            b->rc = rc;
            snprintf(b->err, sizeof b->err, "%s", err);
        }
        if (rc || b->next == b->nbuckets) {
            b->active = 0;
            pthread_cond_broadcast(&b->cv);
        }
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

bk_reducer *bk_new(cl_ring *ring, float *buf, size_t n, const size_t *starts, int nstarts,
                   size_t bucket_floats, int precision) {
    assert(nstarts >= 1 && starts[0] == 0);
    bk_reducer *b = tn_xcalloc(1, sizeof *b);
    b->ring = ring;
    b->buf = buf;
    b->n = n;
    b->precision = precision;
    b->buckets = tn_xmalloc((size_t)nstarts * sizeof *b->buckets);
    size_t hi = n;
    for (int i = nstarts - 1; i >= 0; i--) {
        int last = i == 0;
        if (last || (bucket_floats > 0 && hi - starts[i] >= bucket_floats)) {
            b->buckets[b->nbuckets++] = (bucket){starts[i], hi};
            hi = starts[i];
        }
    }
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    if (pthread_create(&b->thread, NULL, comm_main, b) != 0) {
        fprintf(stderr, "fatal: cannot start the all-reduce thread\n");
        abort();
    }
    return b;
}

void bk_free(bk_reducer *b) {
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    b->quit = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b->buckets);
    free(b);
}

int bk_count(const bk_reducer *b) { return b->nbuckets; }

void bk_begin(bk_reducer *b) {
    pthread_mutex_lock(&b->mu);
    assert(!b->active);
    b->active = 1;
    b->next = 0;
    b->ready = b->n;
    b->rc = 0;
    b->err[0] = '\0';
    pthread_mutex_unlock(&b->mu);
}

void bk_ready(bk_reducer *b, size_t lo) {
    pthread_mutex_lock(&b->mu);
    if (lo < b->ready) {
        b->ready = lo;
        pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->mu);
}

int bk_finish(bk_reducer *b, char *err, size_t errlen) {
    bk_ready(b, 0);
    pthread_mutex_lock(&b->mu);
    while (b->active) pthread_cond_wait(&b->cv, &b->mu);
    int rc = b->rc;
    if (rc) tn_error(err, errlen, rc, "%s", b->err);
    pthread_mutex_unlock(&b->mu);
    return rc;
}
