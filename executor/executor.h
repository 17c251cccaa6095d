/*
 * executor.h — runs trial jobs as local processes and reports what happens to them.
 *
 * A job is one trial's set of replicas (chief, workers, parameter servers,
 * evaluators), each a process in its own process group, told its cluster, role and
 * trial in TF_CONFIG and the rest of the trial-job contract in its environment, its
 * output going to JOB_DIR/logs/TYPE-INDEX.log. The executor follows AI Platform's
 * lifecycle: a replica that exits non-zero is restarted in place (same role, same
 * addresses) up to max_replica_restarts times, then the whole job is re-run (new
 * ports) up to max_job_retries times, then the job fails; a permanent error (the
 * program cannot be executed, or exits with status 2, the usage-error convention)
 * fails it at once; the job succeeds when the chief exits 0, and the other replicas
 * are then stopped (SIGTERM, a grace period, SIGKILL to the process group). It reads
 * every replica's metric file (hypertune protocol) as it changes. Everything runs on
 * the caller's libevent loop; nothing blocks. Contract: ../shared/DESIGN.md, "The
 * trial-job contract"; design: docs/executor.md.
 */
#ifndef TN_EXECUTOR_H
#define TN_EXECUTOR_H

#include <jansson.h>
#include <stddef.h>

#include "common/htreader.h"

struct event_base;

enum ex_type { EX_CHIEF = 0, EX_WORKER, EX_PS, EX_EVALUATOR, EX_NTYPES };
enum ex_outcome { EX_SUCCEEDED = 1, EX_FAILED, EX_STOPPED };

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
    int count[EX_NTYPES];         /* replicas per type; count[EX_CHIEF] must be 1 */
    int cores[EX_NTYPES];         /* threads per replica of a type (OMP_NUM_THREADS...) */
    const char *const *gpus;      /* CUDA_VISIBLE_DEVICES of each replica, in replica
                                     order (chief, workers, ps, evaluators): the devices
                                     the scheduler assigned, "" for none; NULL: all "" */
    int max_replica_restarts;     /* restarts in place per replica per attempt */
    int max_job_retries;          /* re-runs of the whole job */
    double timeout_seconds;       /* > 0: the job fails when it runs longer */
    double grace_seconds;         /* SIGTERM to SIGKILL, > 0 */
    double poll_seconds;          /* how often metric files are read, > 0 */
} ex_job_config;

typedef struct ex_callbacks {
    /* Something happened: replica is "chief:0", "worker:1", ... or NULL for the job;
     * kind is "started", "running", "exited", "restarted", "retrying", "stopping";
     * detail is a sentence (pid, exit status, reason). */
    void (*event)(void *ctx, const char *replica, const char *kind, const char *detail);
    /* A new metric record of a replica (each record once). */
    void (*measurement)(void *ctx, const char *replica, const htr_record *rec);
    /* The job is over: every replica has exited. error is NULL on success. After this
     * call the job may be freed (from inside the callback too). */
    void (*finished)(void *ctx, int outcome, const char *error);
} ex_callbacks;

typedef struct ex_executor ex_executor;
typedef struct ex_job ex_job;

/* An executor on base: it owns the SIGCHLD handling of the process. One per process.
 * Free it after every job is over. */
ex_executor *ex_executor_new(struct event_base *base);
void ex_executor_free(ex_executor *x);

/* Starts a job: creates job_dir, job_dir/logs and job_dir/metrics, picks free ports on
 * 127.0.0.1, starts every replica. Returns NULL with a message in err when nothing
 * could be started (job_dir cannot be created, ...); failures of the replicas
 * themselves come through the callbacks. The job is yours to free with ex_job_free
 * once finished() has been called. */
ex_job *ex_job_start(ex_executor *x, const ex_job_config *cfg, const ex_callbacks *cb,
                     void *ctx, char *err, size_t errlen);

/* Stops a running job (early stopping, cancel, interrupt): SIGTERM to every replica's
 * process group, SIGKILL after the grace period; finished() then reports `outcome`
 * (EX_STOPPED or EX_FAILED) with `reason`. No effect on a job that is already
 * stopping or over. */
void ex_job_stop(ex_job *j, int outcome, const char *reason);

/* Whether the job is running: not yet stopping or over. */
int ex_job_is_running(const ex_job *j);

/* Attempts started (1 + job retries) and replica restarts so far. */
int ex_job_attempts(const ex_job *j);
int ex_job_restarts(const ex_job *j);

/* Frees a finished job (or stops it without callbacks, SIGKILL, and frees it). */
void ex_job_free(ex_job *j);

#endif
