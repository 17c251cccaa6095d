/*
 * executor.h — runs trial jobs and reports what happens to them, on one of two
 * backends the study loop never has to tell apart.
 *
 * A job is one trial's set of replicas (chief, workers, parameter servers,
 * evaluators), each told its cluster, role and trial in TF_CONFIG and the rest of the
 * trial-job contract in its environment (contract.h), its output going to
 * JOB_DIR/logs/TYPE-INDEX.log. Both backends follow AI Platform's lifecycle: a
 * replica that exits non-zero is restarted in place (same role, same addresses) up to
 * max_replica_restarts times, then the whole job is re-run up to max_job_retries
 * times, then the job fails; a permanent error (the program cannot be executed, or
 * exits with status 2) fails it at once; the job succeeds when the chief exits 0, and
 * the other replicas are then stopped. Every replica's metric file (hypertune
 * protocol) is read as it changes.
 *
 *   local  the replicas are processes of this host (local.c), ports on 127.0.0.1;
 *          the executor schedules them on the host's cores and GPUs.
 *   slurm  one trial is one Slurm job (slurm.c): sbatch, squeue at a bounded rate,
 *          scancel; inside the allocation `tuner-launch` (launch.c) starts the
 *          replicas with real host names. The job dir must be on a file system the
 *          tuner and the nodes share. A job survives the tuner: its Slurm job id is
 *          handed to the caller to store, and a resumed tuner re-attaches to it.
 *
 * Everything runs on the caller's libevent loop; nothing blocks except the few
 * documented synchronous calls (ex_check, ex_recover, freeing a live Slurm job).
 * Design: docs/executor.md and docs/slurm.md.
 */
#ifndef TN_EXECUTOR_H
#define TN_EXECUTOR_H

#include <jansson.h>
#include <stddef.h>

#include "common/htreader.h"
#include "executor/contract.h"

struct event_base;

/* How a job ended. EX_REFUSED: the backend refused the job as configured (Slurm:
 * sbatch rejected the partition, account, QOS or request) or cannot submit it at all
 * for now (Slurm's controller did not answer ten tries), so no trial of the study can
 * run until that is fixed; nothing of the trial ran, and it runs again on resume. */
enum ex_outcome { EX_SUCCEEDED = 1, EX_FAILED, EX_STOPPED, EX_REFUSED };
enum ex_backend { EX_LOCAL = 1, EX_SLURM };

/* Returned by ex_job_start when the job does not fit now (local: the host's cores or
 * GPUs are taken by other jobs); start it again once a job has finished. A negative
 * code beside TN_E* and EX_ENOEXEC (contract.h), as the convention has it, though
 * not a failure: nothing was done. */
#define EX_BUSY (-101)

/* Settings of the Slurm backend (docs/slurm.md, "Spec fields"). */
typedef struct ex_slurm_options {
    const char *partition;        /* --partition, or NULL for the cluster's default */
    const char *account;          /* --account, or NULL */
    const char *qos;              /* --qos, or NULL */
    const char *time_limit;       /* --time (Slurm's format, "30", "1:00:00"), or NULL */
    const char *const *extra_args;/* more sbatch options, for every job component */
    size_t nextra;
    const char *launcher;         /* path of tuner-launch, the same on every node */
    const char *job_prefix;       /* job names are PREFIX.TRIAL (ex_job_prefix) */
    double poll_seconds;          /* squeue at most this often, whatever the number of
                                     jobs (0: every second, as the tuner runs it) */
    double retry_seconds;         /* the first wait after sbatch (or the look for its
                                     job) failed for a passing reason, doubled with each
                                     failure up to 32 times it (0: 1 s; tests shorten it) */
} ex_slurm_options;

typedef struct ex_options {
    int backend;                  /* enum ex_backend */
    /* local */
    int cores;                    /* cores to schedule on (0: all online) */
    int gpus;                     /* GPUs to schedule on; their ids are those of
                                     $CUDA_VISIBLE_DEVICES when set, else 0..gpus-1 */
    int oversubscribe;            /* start jobs even when they do not fit */
    const char *job_dir;          /* the study's jobDir: where ex_recover finds what an
                                     earlier tuner's replicas left running */
    /* slurm */
    ex_slurm_options slurm;
} ex_options;

typedef struct ex_job_config {
    const char *study;            /* CLOUD_ML_JOB_ID */
    const char *trial;            /* the trial id, "1", "2", ... */
    const char *const *argv;      /* the program and every flag but --job-dir (argc >= 1);
                                     argv[0] is a path or a name looked up on PATH */
    size_t argc;
    const char *job_dir;          /* the trial's folder: --job-dir=DIR, logs/, metrics/ */
    const char *metric_tag;       /* CLOUD_ML_HP_METRIC_TAG */
    json_t *job;                  /* TF_CONFIG's "job" (borrowed), or NULL */
    int use_chief_name;           /* 1: "chief"; 0: legacy "master" */
    int count[TF_NTYPES];         /* replicas per type; count[TF_CHIEF] must be 1 */
    int cores[TF_NTYPES];         /* cores per replica of a type (OMP_NUM_THREADS...) */
    int gpus[TF_NTYPES];          /* GPUs per replica of a type */
    int memory_mb[TF_NTYPES];     /* memory per replica of a type in MiB (0: not said;
                                     Slurm: --mem-per-cpu) */
    int max_replica_restarts;     /* restarts in place per replica per attempt */
    int max_job_retries;          /* re-runs of the whole job */
    double restart_backoff;       /* seconds before a replica's first restart in place,
                                     and before the job's first re-run, doubling each
                                     time after (ex_backoff); 0: at once */
    double restart_backoff_max;   /* the most that pause grows to */
    int fail_on_repeat;           /* 1: a replica that fails twice the same way before
                                     reporting anything fails the trial at once
                                     (ex_failure_repeats) */
    const char *const *env[TF_NTYPES]; /* the spec's env of each replica type: "NAME=VALUE"
                                          strings, NULL-terminated, or NULL (copied) */
    double timeout_seconds;       /* > 0: the job fails when it runs longer */
    double grace_seconds;         /* SIGTERM to SIGKILL, > 0 */
    double poll_seconds;          /* how often metric files are read, > 0 */
} ex_job_config;

typedef struct ex_event {
    double time;          /* seconds since the epoch: now for what the executor sees
                             itself, the launcher's clock for what a Slurm replica's
                             launcher wrote */
    const char *replica;  /* "chief:0", "worker:1", ... or NULL for the job */
    const char *kind;     /* EX_EV_* */
    const char *detail;   /* a sentence for people (pid, exit status, reason) */
    ex_exit exit;         /* EX_EV_EXITED: how the run ended; else EX_EXIT_UNKNOWN */
    int notice;           /* worth telling the user now, beyond storing it: a Slurm job
                             that waits for something other than its turn (held, nodes
                             down or reserved, ...), a command failing in an outage */
} ex_event;

typedef struct ex_callbacks {
    /* Something happened (*e and its strings live until the call returns). */
    void (*event)(void *ctx, const ex_event *e);
    /* A new metric record of a replica (each record once, in the order read). run is
     * the run of the replica that wrote it, as this job counts them: its `started`
     * events told through event() so far (1 for its first start, 2 after an in-place
     * restart or a re-run of the job, ...), or 0 when the job has told no start of it
     * (a re-attached job whose starts an earlier tuner was told). So that a record is
     * given to the run that wrote it, the replica's metric file is also read at each
     * of its `exited` events (the records are handed over at the next poll); a record
     * then found whose timestamp is at or after the exit's time (and at most 5 minutes
     * ahead of the clock) belongs to the next run: Slurm's events arrive late, when a
     * restarted run may have written already. docs/metrics.md, "Attempts: which run
     * wrote a record". */
    void (*measurement)(void *ctx, const char *replica, int run, const htr_record *rec);
    /* The job is over: every replica has exited. error is NULL on success. After this
     * call the job may be freed (from inside the callback too). */
    void (*finished)(void *ctx, int outcome, const char *error);
    /* The backend's handle of the job changed (Slurm: "slurm:JOBID" after each
     * submission): store it, so that ex_job_attach can find the job after a crash.
     * May be NULL; never called by the local backend. */
    void (*handle)(void *ctx, const char *handle);
} ex_callbacks;

typedef struct ex_executor ex_executor;
typedef struct ex_job ex_job;

/* An executor on base with the backend o describes (copied; its strings too). It owns
 * the SIGCHLD handling of the process: one per process. Returns 0 with *out, or
 * TN_EINVAL with a message (bad options; slurm: sbatch, squeue or scancel not on
 * PATH). Free it after every job is over. */
int ex_executor_new(struct event_base *base, const ex_options *o, ex_executor **out, char *err,
                    size_t errlen);
void ex_executor_free(ex_executor *x);

/* Checks, before anything runs, that a job of shape cfg can ever run with the options
 * o: local: its replicas' cores and GPUs fit on the host (unless oversubscribe);
 * slurm: the commands are installed, the controller answers, the partition exists and
 * some node of it has the cores, memory and GPUs one replica asks for (from `sinfo`;
 * synchronous). Returns 0 or TN_EINVAL with a message and a hint. */
int ex_check(const ex_options *o, const ex_job_config *cfg, char *err, size_t errlen);

/* Whether a job of shape cfg would start now (local: its cores and GPUs are free on
 * the host; slurm: always, the cluster queues it). */
int ex_has_room(ex_executor *x, const ex_job_config *cfg);

/* Starts a job: creates job_dir, job_dir/logs and job_dir/metrics, starts every
 * replica (local) or submits the job (slurm). Returns 0 with *out, EX_BUSY when it
 * does not fit now (nothing done), or a negative code with a message when nothing
 * could be started (job_dir cannot be created, ...); failures of the replicas
 * themselves come through the callbacks. *out is yours to free with ex_job_free once
 * finished() has been called. */
int ex_job_start(ex_executor *x, const ex_job_config *cfg, const ex_callbacks *cb, void *ctx,
                 ex_job **out, char *err, size_t errlen);

/* The newest event the caller stored of a replica ("chief:0", or NULL for the job's
 * own): what re-attaching must not tell again. */
typedef struct ex_seen {
    const char *replica;
    double time;
} ex_seen;

/* Re-attaches to a job an earlier tuner started, by the handle it stored: the job goes
 * on where it is (still queued, running, or already over: its outcome is read), as if
 * this process had started it. attempts is how many times it was started so far (the
 * retry budget goes on from there); seen[0..nseen) are the events already stored, per
 * replica, so that events up to those times are not told again. Where the trial has a
 * later job than the handle's that was never stored (Slurm: its files in the trial's
 * job dir; the tuner died before storing its id, and it ran while no tuner did), that
 * job is the one attached, one attempt more: ex_job_handle says which. Returns 0 with *out,
 * or 0 with *out = NULL when the handle is not this backend's (the caller runs the
 * trial again), or a negative code when the job could not be set up (its folders). */
int ex_job_attach(ex_executor *x, const ex_job_config *cfg, const ex_callbacks *cb, void *ctx,
                  const char *handle, int attempts, const ex_seen *seen, size_t nseen,
                  ex_job **out);

/* What an earlier tuner of the study left (synchronous). Slurm: the live jobs, queued
 * or running jobs named PREFIX.TRIAL (one squeue), so that a resumed tuner re-attaches
 * to them or cancels the strays: trials[i] is the trial of handles[i] (yours to free
 * with ex_strv_free). Local: no jobs (a dead tuner's replicas died with it), but the
 * processes they left behind (a child of a replica: only direct children get the
 * parent-death signal) are killed, found by the metric file in their environment
 * being under the study's job dir; *killed gets how many. Returns 0 or a negative
 * code with a message. */
int ex_recover(ex_executor *x, char ***handles, long **trials, size_t *n, int *killed,
               char *err, size_t errlen);

/* Cancels a job by its handle without attaching (a stray of ex_recover); synchronous. */
int ex_cancel_handle(ex_executor *x, const char *handle, char *err, size_t errlen);

/* Stops a running job (early stopping, cancel, interrupt): local: SIGTERM to every
 * replica's process group, SIGKILL after the grace period; slurm: scancel. finished()
 * then reports `outcome` (EX_STOPPED or EX_FAILED) with `reason`. No effect on a job
 * that is already stopping or over. */
void ex_job_stop(ex_job *j, int outcome, const char *reason);

/* Whether the job is running: not yet stopping or over. */
int ex_job_is_running(const ex_job *j);

/* Attempts started (1 + job retries) and replica restarts so far. */
int ex_job_attempts(const ex_job *j);
int ex_job_restarts(const ex_job *j);
/* The backend's handle of the job now ("slurm:JOBID"; the one the last handle callback
 * told, or the one attached), or NULL (the local backend, or not submitted yet). */
const char *ex_job_handle(const ex_job *j);

/* Frees a finished job, or stops one that is not (local: SIGKILL to its replicas;
 * slurm: scancel) without callbacks, and frees it. Returns 0, or TN_EIO when that
 * stop (or ex_abort_all's) failed: slurm: scancel failed, so the job's Slurm job (its
 * last handle) may still run. Local jobs are killed for sure: always 0. */
int ex_job_free(ex_job *j);

/* Stops what every job of the executor still runs, at once and without callbacks
 * (slurm: one scancel for all of them; local: nothing, freeing kills), before the jobs
 * are freed: a second Ctrl-C, a fatal error. Synchronous. Returns 0, or a negative
 * code with a message (a line for the terminal) saying which jobs may still run and
 * how to cancel them; ex_job_free then tells which jobs those are. */
int ex_abort_all(ex_executor *x, char *err, size_t errlen);

/* The Slurm job name prefix of a study: "tuner.HASH.STUDY", HASH a digest of the
 * study's job dir, so studies of the same name in other stores never meet. Yours to
 * free. */
char *ex_job_prefix(const char *study, const char *job_dir);

/* The GPUs of this host, counted through NVML (libnvidia-ml, loaded at run time, so
 * the tuner needs no CUDA to build or run): the count, or 0 with the reason in why
 * (no driver, no library) when there are none to use. $CUDA_VISIBLE_DEVICES, when
 * set, limits them to those it lists. */
int ex_host_gpus(char *why, size_t whylen);

#endif
