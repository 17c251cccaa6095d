/*
 * cpu_workers.h — the CPU backend's own threads, for the work it does outside OpenBLAS
 * (the conv blocks of cpu_conv.c): a caller hands out numbered tasks, it and the
 * workers take them one at a time until none is left, and it returns when all are
 * done.
 *
 * They are the backend's only threads: OpenBLAS is kept to the thread that calls it
 * (cpu.c, set_threads), and a product big enough is split between the workers instead,
 * so no two thread pools ever compete for the cores. Between runs a worker yields the
 * core at once and sleeps after a short while. Internal to kernels/ (cpu*.c).
 */
#ifndef TN_CPU_WORKERS_H
#define TN_CPU_WORKERS_H

/* One task of a run: task in [0, ntasks). Tasks of one run may run at the same time on
 * different threads, in any order. */
typedef void (*kw_task_fn)(void *ctx, int task);

/* Threads a run may use, the caller's included (clamped to [1, 64]); 1 (the default)
 * runs every task in the caller. Workers are started when a run first needs them. */
void kw_set_threads(int threads);
int kw_threads(void);

/* Runs fn(ctx, t) for every t in [0, ntasks) and returns when all have returned, their
 * writes visible to the caller. Uses up to kw_threads() threads, the caller's
 * included. A run asked for while another thread's is under way (the CPU devices of a
 * mirrored job share these workers) waits for it to end; one asked for from inside a
 * task runs every task in its caller. Which thread runs which task varies; what a run
 * computes must not depend on it. */
void kw_run(int ntasks, kw_task_fn fn, void *ctx);

/* 1 when the calling thread is running a task of a run (so a run it asked for would
 * not be shared out). */
int kw_inside(void);

#endif
