/*
 * executor_internal.h — what the executor's front (executor.c) and its backends
 * (local.c, slurm.c) share: the job every backend runs, the table of a backend's
 * operations, and the process-wide child watcher.
 *
 * The front owns everything backends have in common: the job's configuration (a
 * deep copy), its replicas' names and files, reading their metric files, the trial
 * timeout, and reporting the outcome from a deferred event (never from inside a
 * SIGCHLD or command callback, so the caller may free the job in finished()). A
 * backend brings the replicas to life and decides, by the lifecycle rules of
 * contract.h, when the job is over: it then calls ex__finish once. As Redis's event
 * loop backends do, every backend fills one static table of ex_backend_ops.
 */
#ifndef TN_EXECUTOR_INTERNAL_H
#define TN_EXECUTOR_INTERNAL_H

#include <sys/types.h>

#include "executor/executor.h"

enum ex_phase { EX_PH_RUNNING = 1, EX_PH_STOPPING, EX_PH_DONE };

typedef struct ex_replica {
    int type, index;
    char name[32];        /* "worker:1" (the chief: "chief:0" or "master:0") */
    char *log_path;       /* JOB_DIR/logs/worker-1.log */
    char *metric_path;    /* JOB_DIR/metrics/worker-1.metrics */
    htr_reader *reader;
    char *read_error;     /* the last error reading the metric file, told once */
    size_t bad_told;      /* the metric file's lines that are not JSON, as last told */
    int long_told;        /* a line longer than htreader reads was told */
    int runs;             /* its `started` events told so far: the run now going on */
    htr_record *held;     /* (nheld) records read when a run of it ended, handed over */
    int *held_run;        /*   at the next poll, and the run each came from */
    size_t nheld, capheld;
} ex_replica;

typedef struct ex_backend_ops {
    const char *name;                                      /* "local", "slurm" */
    int timeout_from_start;     /* 1: the trial timeout runs from when the backend says
                                   the job started (ex__arm_timeout), not from submission
                                   (Slurm: time in the queue does not count) */
    /* Sets up the backend's state of a new job (j->impl) and starts it. 0, EX_BUSY
     * (nothing done, nothing to free), or a negative code with a message. */
    int (*start)(ex_job *j, char *err, size_t errlen);
    /* Whether a job of this shape would start now (NULL: always). */
    int (*has_room)(ex_executor *x, const ex_job_config *cfg);
    /* Re-attaches to the job a handle names (slurm): *attached 1, or 0 when the handle
     * is not this backend's (nothing done). */
    void (*attach)(ex_job *j, const char *handle, const ex_seen *seen, size_t nseen,
                   int *attached);
    /* Called with every metric poll of a running job, before the metric files are
     * read (slurm: the replicas' event files). NULL: nothing to do. */
    void (*poll)(ex_job *j);
    /* Begins stopping a running job; the outcome to report is in j->stop_outcome and
     * j->stop_error. The backend calls ex__finish when everything is gone. */
    void (*stop)(ex_job *j);
    /* Frees j->impl, first killing or cancelling what is still alive: 0, or TN_EIO
     * when that failed (its or abort's cancel), so what the job ran may still run. */
    int (*release)(ex_job *j);
    /* Cancels what every job of the executor still runs, at once (ex_abort_all;
     * NULL: each release does it): 0, or a negative code with a message naming
     * what may still run and how to cancel it. */
    int (*abort)(ex_executor *x, char *err, size_t errlen);
    /* Frees the backend's part of the executor (x->impl). */
    void (*free)(ex_executor *x);
    /* ex_recover and ex_cancel_handle (NULL: the backend has nothing to recover). */
    int (*recover)(ex_executor *x, char ***handles, long **trials, size_t *n, int *killed,
                   char *err, size_t errlen);
    int (*cancel_handle)(ex_executor *x, const char *handle, char *err, size_t errlen);
} ex_backend_ops;

/* A child process the executor waits for: fn(ctx, status) runs from the loop once it
 * has exited. */
typedef struct ex_watch {
    pid_t pid;
    void (*fn)(void *ctx, int status);
    void *ctx;
} ex_watch;

struct ex_executor {
    struct event_base *base;
    ex_options o;               /* copy; strings below are owned */
    char **slurm_extra;         /* o.slurm.extra_args, owned */
    const ex_backend_ops *ops;
    void *impl;                 /* the backend's state */
    struct event *sigchld;
    ex_watch *watches;          /* children waited for */
    size_t nwatches, capwatches;
    ex_job **jobs;              /* jobs not yet freed */
    size_t njobs, capjobs;
};

struct ex_job {
    ex_executor *x;
    ex_job_config cfg;          /* copy; strings below are owned */
    char **argv;                /* cfg.argv + --job-dir=DIR + NULL */
    char **env[TF_NTYPES];      /* copies of cfg.env (cfg.env points here) */
    char *job_dir;
    char *study, *trial, *metric_tag;
    json_t *job;                /* a reference */
    ex_callbacks cb;
    void *ctx;
    ex_replica *reps;           /* chief, workers, ps, evaluators */
    size_t nreps;
    int attempts, restarts;     /* attempts started; replica restarts in all */
    char *handle;               /* the backend's handle (ex__set_handle), or NULL */
    int phase;                  /* enum ex_phase */
    int timed_out;              /* the trial timeout fired while the job was stopping:
                                   a stop to run it again fails instead, any other keeps
                                   its outcome */
    int timer_armed;            /* the trial timeout is running */
    double timer_origin;        /* ... since (ex__now() time) the run it counts began */
    double timeout_used;        /* seconds of it earlier runs used (ex__pause_timeout) */
    int stop_outcome;           /* what finishing reports ... */
    char *stop_error;           /* ... and why (NULL: success) */
    struct event *poll_ev, *timeout_ev, *done_ev;
    void *impl;                 /* the backend's state of the job */
};

extern const ex_backend_ops ex_local_ops;
extern const ex_backend_ops ex_slurm_ops;

/* The backends' parts of ex_executor_new and ex_check. */
int ex__slurm_init(ex_executor *x, char *err, size_t errlen);
int ex__local_check(const ex_options *o, const ex_job_config *cfg, char *err, size_t errlen);
int ex__slurm_check(const ex_options *o, const ex_job_config *cfg, char *err, size_t errlen);

/* Wall-clock seconds since the epoch. */
double ex__now(void);

/* Tells j's event callback what happened now (kind EX_EV_*, detail formatted as
 * printf); ex__emit_at what happened at `time` (seconds since the epoch), with the
 * exit of an EX_EV_EXITED event (EX_EXIT_UNKNOWN for the others). */
void ex__emit(ex_job *j, const char *who, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void ex__emit_at(ex_job *j, double time, const char *who, const char *kind, ex_exit exit,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* ex__emit of a job's event with ex_event.notice set: the tuner prints it as well. */
void ex__notice(ex_job *j, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The job's handle is now `handle` (ex_job_handle); store: also tell the handle
 * callback, so that the caller stores it. */
void ex__set_handle(ex_job *j, const char *handle, int store);

/* Starts the trial timeout (if the job has one and it is not running yet), `elapsed`
 * seconds of it already used. For backends with timeout_from_start. */
void ex__arm_timeout(ex_job *j, double elapsed);
/* Stops the trial timeout between two runs of a job (a re-run that waits out its
 * backoff in the queue), keeping the time used; the next ex__arm_timeout adds it. */
void ex__pause_timeout(ex_job *j);

/* Reads every replica's metric file and hands new records to the caller (first those
 * held since a run of the replica ended); final: also a last line without its newline
 * (nobody writes any more). */
void ex__poll_metrics(ex_job *j, int final);

/* Begins stopping a running job: records outcome and error (copied; NULL: none), then
 * lets the backend stop it. No effect unless the job is running. */
void ex__begin_stop(ex_job *j, int outcome, const char *error);

/* The job is over: reads the metric files one last time and reports
 * j->stop_outcome / j->stop_error from a deferred event. Call once. */
void ex__finish(ex_job *j);

/* ex__finish with this outcome and error (copied), replacing what a stop recorded. */
void ex__finish_as(ex_job *j, int outcome, const char *error);

/* Calls fn(ctx, status) from the loop when child pid has exited; the executor reaps
 * it. ex__unwatch forgets a pid (its status is then reaped and dropped). */
void ex__watch(ex_executor *x, pid_t pid, void (*fn)(void *ctx, int status), void *ctx);
void ex__unwatch(ex_executor *x, pid_t pid);

/* Commands (sbatch, squeue, ...) run as children with their output captured
 * (command.c). done(ctx, status, out, errtext) runs from the loop once the command
 * has exited and its output is read: status is its wait status (127 << 8 when it
 * could not be executed; killed by SIGKILL when it ran past its timeout, errtext then
 * saying so); out and errtext are its stdout and stderr, NUL-terminated, valid during
 * the call. ex__cmd_abandon kills a command that is still running and drops its
 * callback. */
typedef struct ex_cmd ex_cmd;
typedef void (*ex_cmd_done)(void *ctx, int status, const char *out, const char *errtext);
ex_cmd *ex__cmd_run(ex_executor *x, char *const *argv, double timeout, ex_cmd_done done,
                    void *ctx); /* never NULL; never calls done before it returns; the
                                   handle is gone once done has run */
void ex__cmd_abandon(ex_cmd *c);
/* The same, synchronously: returns the wait status, with out and errtext yours to
 * free (either may be NULL when not wanted). For use outside the loop's callbacks or
 * where waiting is the point (checks before a run, freeing a live job). */
int ex__cmd_sync(char *const *argv, double timeout, char **out, char **errtext);

/* A timeval of s seconds. */
struct timeval ex__timeval(double s);

#endif
