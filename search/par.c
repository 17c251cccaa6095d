/*
 * par.c — par.h: a call's tasks taken from an atomic counter by the caller and by up
 * to par_threads() - 1 threads started for the call.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "search/par.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

static _Atomic int par_forced; /* par_set_threads; 0: the cores online */

void par_set_threads(int n) { atomic_store(&par_forced, n < 0 ? 0 : n); }

int par_threads(void) {
    int n = atomic_load(&par_forced);
    if (n <= 0) { /* the cores this process may run on (taskset, a cgroup's cpuset) */
        cpu_set_t set;
        long cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                                 : sysconf(_SC_NPROCESSORS_ONLN);
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
    /* the helpers take no signals: they stay with the caller's thread (the tuner's
     * loop), as for the dashboard's thread */
    sigset_t all, old;
    sigfillset(&all);
    int masked = want > 1 && pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
    for (size_t h = 1; h < want; h++) {
        if (pthread_create(&helper[started], NULL, par_worker, &r) != 0) break;
        started++;
    }
    if (masked) pthread_sigmask(SIG_SETMASK, &old, NULL);
    par_worker(&r);
    for (size_t h = 0; h < started; h++) pthread_join(helper[h], NULL);
}
