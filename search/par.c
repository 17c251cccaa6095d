/*
 * par.c — par.h: a call's tasks taken from an atomic counter by the caller and by up
 * to par_threads() - 1 threads started for the call.
 */
#include "search/par.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static _Atomic int par_forced; /* par_set_threads; 0: the cores online */

void par_set_threads(int n) { atomic_store(&par_forced, n < 0 ? 0 : n); }

int par_threads(void) {
    int n = atomic_load(&par_forced);
    if (n <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 ? (int)cores : 1;
    }
    return n < 1 ? 1 : n > PAR_MAX_THREADS ? PAR_MAX_THREADS : n;
}

typedef struct par_run_state {
    par_task_fn fn;
    void *ctx;
    size_t ntasks;
    _Atomic size_t next;
} par_run_state;

static void *par_worker(void *arg) {
    par_run_state *r = arg;
    for (size_t t; (t = atomic_fetch_add(&r->next, 1)) < r->ntasks;) r->fn(r->ctx, t);
    return NULL;
}

void par_run(size_t ntasks, par_task_fn fn, void *ctx) {
    par_run_state r = {fn, ctx, ntasks, 0};
    size_t want = (size_t)par_threads();
    if (want > ntasks) want = ntasks;
    pthread_t helper[PAR_MAX_THREADS];
    size_t started = 0;
    for (size_t h = 1; h < want; h++) {
        if (pthread_create(&helper[started], NULL, par_worker, &r) != 0) break;
        started++;
    }
    par_worker(&r);
    for (size_t h = 0; h < started; h++) pthread_join(helper[h], NULL);
}
