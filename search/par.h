/*
 * par.h — independent tasks of one suggestion on the machine's cores (search's own
 * threads, started per call: a suggestion's tasks take milliseconds, a thread tens of
 * microseconds). Each task writes only its own outputs, so the results are the same
 * bits on any number of threads; the caller is one of the threads.
 */
#ifndef SEARCH_PAR_H
#define SEARCH_PAR_H

#include <stddef.h>

typedef void (*par_task_fn)(void *ctx, size_t task);

/* Runs fn(ctx, 0) .. fn(ctx, ntasks - 1), each once, on at most par_threads()
 * threads (the caller's included), and returns when all have run. A thread that
 * cannot be started leaves its share to the others. */
void par_run(size_t ntasks, par_task_fn fn, void *ctx);

/* The threads par_run uses: the cores this process may run on (its CPU affinity; at
 * most PAR_MAX_THREADS), or what
 * par_set_threads set (n >= 1; 0: back to the cores online). For tests, which check
 * that the results do not depend on it. */
#define PAR_MAX_THREADS 8
int par_threads(void);
void par_set_threads(int n);

#endif
