/*
 * stopsim.h — what bench_stopping.c and bench_mostopping.c share: the simulated
 * study's workers and the checks of the flags both take.
 *
 * A study runs `n` trials at a time, started in order on the free workers (the lowest
 * numbered first); each worker's next report has a time, and the next report of all is
 * taken first (ties: the lower trial number). The caller sets next[w] when it starts a
 * trial on worker w and after each report, and frees w (cur[w] = -1) when its trial ends.
 */
#ifndef BENCH_STOPSIM_H
#define BENCH_STOPSIM_H

#define SS_MAXWORK 16 /* workers */

typedef struct ss_workers {
    int n;                   /* workers */
    int cur[SS_MAXWORK];     /* the trial (0-based) each runs; -1: free */
    double next[SS_MAXWORK]; /* the time of its next report */
    int started;             /* trials started */
} ss_workers;

/* n free workers, no trial started. */
void ss_init(ss_workers *s, int n);

/* Starts the next trial on the first free worker and returns the worker, with the
 * trial in *trial; -1 when every worker is busy or no trial may start: all `pool` are
 * started, max_trials are (0: no limit), or `spent` steps reached budget (0: none). */
int ss_start(ss_workers *s, int pool, int max_trials, long long budget, long long spent,
             int *trial);

/* The busy worker whose report comes next (ties: the lower trial); -1: none busy. */
int ss_next(const ss_workers *s);

/* Whether name is in the comma-separated list ("all": every name). */
int ss_listed(const char *list, const char *name);

/* Checks the flags both benchmarks take; prints "program: error: ..." and returns 2
 * when one is out of range, else 0. */
int ss_check_flags(const char *program, int seeds, int trials, int budget, int workers,
                   double jitter);

#endif
