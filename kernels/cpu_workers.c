/*
 * cpu_workers.c — the CPU backend's own threads (cpu_workers.h).
 *
 * One team for the process: worker w (1 .. threads-1) waits for the run counter to move,
 * then takes tasks from a shared atomic counter until none is left and says it is done;
 * the caller is worker 0. A waiting worker first polls for KW_SPIN_NS, yielding the core
 * on every poll (the runs of a step follow each other within microseconds), then sleeps
 * on a condition variable until the next run. One caller runs the team at a time
 * (kw_lock): another waits for it, and a run asked for from inside a task runs in its
 * caller (kw_in_task).
 */
#include "kernels/cpu_workers.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define KW_MAX 64            /* threads, the caller's included */
#define KW_SPIN_NS 200000    /* a worker polls this long after a run before it sleeps */

static pthread_mutex_t kw_lock = PTHREAD_MUTEX_INITIALIZER; /* held for a whole run */
static int kw_started;                                      /* workers 1..kw_started run */

static _Atomic int kw_nthreads = 1; /* kw_set_threads */

/* The current run: written by its caller before kw_gen moves, read by the workers
 * after they see it move. */
static kw_task_fn kw_fn;
static void *kw_ctx;
static int kw_ntasks;
static int kw_nworkers;          /* workers 0..kw_nworkers-1 take tasks */
static _Atomic int kw_next;      /* the next task to take */
static _Atomic int kw_busy;      /* started workers that have not yet seen the run through:
                                    every one answers every run, so none can miss one or
                                    read the next run's fields for this one */
static _Atomic unsigned kw_gen;  /* counts runs */

static pthread_mutex_t kw_sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kw_wake = PTHREAD_COND_INITIALIZER;
static _Atomic int kw_sleepers; /* workers waiting on kw_wake (or about to) */

void kw_set_threads(int threads) {
    atomic_store(&kw_nthreads, threads < 1 ? 1 : threads > KW_MAX ? KW_MAX : threads);
}

int kw_threads(void) { return atomic_load(&kw_nthreads); }

static double kw_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e9 * (double)ts.tv_sec + (double)ts.tv_nsec;
}

static _Thread_local int kw_in_task; /* this thread runs a task of a run */

int kw_inside(void) { return kw_in_task; }

static void kw_take_tasks(void) {
    kw_in_task = 1;
    for (;;) {
        int t = atomic_fetch_add(&kw_next, 1);
        if (t >= kw_ntasks) break;
        kw_fn(kw_ctx, t);
    }
    kw_in_task = 0;
}

/* Returns the run counter once it differs from seen. */
static unsigned kw_wait(unsigned seen) {
    unsigned g;
    double start = kw_now_ns();
    for (int i = 0;; i++) {
        if ((g = atomic_load(&kw_gen)) != seen) return g;
        if ((i & 63) == 63 && kw_now_ns() - start > KW_SPIN_NS) break;
        sched_yield();
    }
    pthread_mutex_lock(&kw_sleep_lock);
    atomic_fetch_add(&kw_sleepers, 1);
    while ((g = atomic_load(&kw_gen)) == seen) pthread_cond_wait(&kw_wake, &kw_sleep_lock);
    atomic_fetch_sub(&kw_sleepers, 1);
    pthread_mutex_unlock(&kw_sleep_lock);
    return g;
}

static unsigned kw_first_seen[KW_MAX]; /* the run counter when worker w was started */

static void *kw_main(void *arg) {
    int w = (int)(intptr_t)arg;
    unsigned seen = kw_first_seen[w];
    for (;;) {
        seen = kw_wait(seen);
        if (w < kw_nworkers) kw_take_tasks();
        atomic_fetch_sub(&kw_busy, 1);
    }
    return NULL;
}

/* Starts workers up to want-1 (under kw_lock); returns the threads there are. */
static int kw_start(int want) {
    while (kw_started < want - 1) {
        int w = kw_started + 1;
        kw_first_seen[w] = atomic_load(&kw_gen);
        pthread_t th;
        if (pthread_create(&th, NULL, kw_main, (void *)(intptr_t)w) != 0) break;
        pthread_detach(th);
        kw_started = w;
    }
    return kw_started + 1 < want ? kw_started + 1 : want;
}

void kw_run(int ntasks, kw_task_fn fn, void *ctx) {
    int threads = kw_threads();
    if (threads > ntasks) threads = ntasks;
    if (threads <= 1 || kw_in_task) {
        int outer = kw_in_task;
        kw_in_task = 1;
        for (int t = 0; t < ntasks; t++) fn(ctx, t);
        kw_in_task = outer;
        return;
    }
    pthread_mutex_lock(&kw_lock);
    threads = kw_start(threads);
    kw_fn = fn;
    kw_ctx = ctx;
    kw_ntasks = ntasks;
    kw_nworkers = threads;
    atomic_store(&kw_next, 0);
    atomic_store(&kw_busy, kw_started);
    atomic_fetch_add(&kw_gen, 1); /* publishes the run */
    if (atomic_load(&kw_sleepers) > 0) {
        pthread_mutex_lock(&kw_sleep_lock);
        pthread_cond_broadcast(&kw_wake);
        pthread_mutex_unlock(&kw_sleep_lock);
    }
    kw_take_tasks();
    while (atomic_load(&kw_busy) > 0) sched_yield();
    pthread_mutex_unlock(&kw_lock);
}
