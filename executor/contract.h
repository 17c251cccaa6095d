/*
 * contract.h — the trial-job contract in one place for every executor backend: the
 * names and files of a trial's replicas, the environment a replica gets, how it is
 * started, and what its exit means.
 *
 * The local backend (local.c) starts replicas with it on this host, and the Slurm
 * launcher (launch.c, `tuner-launch`) starts them with it inside an allocation, so a
 * replica sees the same argv, TF_CONFIG, environment and files wherever it runs, and
 * both follow the same restart rules. The contract itself:
 * docs/executor.md.
 */
#ifndef TN_EXECUTOR_CONTRACT_H
#define TN_EXECUTOR_CONTRACT_H

#include <stddef.h>
#include <sys/types.h>

#include "common/tfconfig.h"

/* Replica types are common/tfconfig.h's enum tf_type (TF_CHIEF, TF_WORKER, TF_PS,
 * TF_EVALUATOR; TF_NTYPES), in replica order, the one enum of the spec, the executor
 * and TF_CONFIG; their names: tf_type_label and tf_type_parse. */

/* A replica's name, TYPE SEP INDEX with SEP ':' ("worker:1": the contract's, stored
 * and shown) or '-' ("worker-1": files and URLs). ex_replica_parse reads either into
 * its type ("master" is the chief) and index (digits only, below 10^9): 0, or
 * TN_EINVAL (no message) when name is no replica's. */
int ex_replica_parse(const char *name, int *type, int *index);
/* Whether name is the chief's (chief or master, either separator). */
int ex_replica_is_chief(const char *name);
/* Replica order, for listings: chief, workers, ps, evaluators, each by index; names
 * that are no replica's after them, by strcmp. */
int ex_replica_cmp(const char *a, const char *b);

/* A trial's files (docs/executor.md, "What each replica gets"), yours to free:
 *   JOB_DIR/T                          the trial's folder (ex_trial_dir: the study's
 *                                      jobDir and the trial's number); in it, DIR:
 *   DIR/logs/TYPE-INDEX.log            a replica's stdout and stderr
 *   DIR/metrics/TYPE-INDEX.metrics     its CLOUD_ML_HP_METRIC_FILE */
char *ex_trial_dir(const char *study_job_dir, long long trial);
char *ex_logs_dir(const char *dir);
char *ex_metrics_dir(const char *dir);
char *ex_log_path(const char *dir, const char *type_name, int index);
char *ex_metric_path(const char *dir, const char *type_name, int index);

/* Whether prog can be executed: a path (with a '/') to an executable regular file, or a
 * name found so on $PATH (/usr/bin:/bin when unset), as execvp would look it up; a
 * script's #! interpreter must be there too. */
int ex_on_path(const char *prog);
/* 0 when prog can be executed (ex_on_path) with path as $PATH (NULL: this process's);
 * else -1 and why not, a phrase for "cannot run PROG: WHY": "not found", "a directory,
 * not a program", "not executable (chmod +x)", "its interpreter /x (its #! line) is not
 * found or not executable", ... */
int ex_program_problem(const char *prog, const char *path, char *why, size_t len);

/* What the contract tells one replica besides its argv. */
typedef struct ex_contract {
    const char *study;        /* CLOUD_ML_JOB_ID */
    const char *trial;        /* CLOUD_ML_TRIAL_ID and TF_CONFIG's task.trial */
    const char *metric_tag;   /* CLOUD_ML_HP_METRIC_TAG */
    const char *metric_file;  /* CLOUD_ML_HP_METRIC_FILE */
    const tf_config *tf;      /* the replica's TF_CONFIG (cluster, task, job) */
    int cores;                /* OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS */
    const char *gpus;         /* CUDA_VISIBLE_DEVICES ("" for none); NULL: left as the
                                 environment has it (Slurm sets it for the GPUs it
                                 allocated) */
    char *const *user_env;    /* the spec's env for this replica type: "NAME=VALUE"
                                 strings, NULL-terminated, or NULL */
} ex_contract;

/* The environment of a replica: a copy of base (NULL-terminated, e.g. environ), then
 * c->user_env over it, then the contract's variables (TF_CONFIG, CLOUD_ML_*,
 * WORLD_SIZE, RANK, MASTER_ADDR, MASTER_PORT, the thread counts, CUDA_VISIBLE_DEVICES)
 * set as c says; RANK is left out for ps and evaluator. A NULL-terminated array that
 * is yours to ex_strv_free. */
char **ex_contract_env(char *const *base, const ex_contract *c);

/* Whether name is one of the contract's variables, which the spec's env may not set
 * (the tuner sets them for every replica); *what gets what sets it, for messages. */
int ex_contract_var(const char *name, const char **what);

void ex_strv_free(char **v);

/* Starts argv[0] (a path, or a name looked up on PATH) with argv and env in a process
 * group of its own, stdin from /dev/null, stdout and stderr appended to log_path,
 * default signal dispositions, PR_SET_PDEATHSIG(SIGKILL) so that it dies with its
 * parent, and PR_SET_CHILD_SUBREAPER, so that an orphan among its descendants (one
 * whose parent died: a daemon, say) becomes its child, and when it exits, its parent's
 * where that is a subreaper too (the local backend: kill_orphans). On success returns
 * 0 with the child's pid in *pid (yours to reap). Returns TN_EIO with a message when the log cannot be opened or the fork fails, and
 * EX_ENOEXEC when the program could not be executed (the child reports execvp's
 * errno through a close-on-exec pipe, and is reaped here): a permanent error. */
#define EX_ENOEXEC (-100)
int ex_spawn(char *const *argv, char *const *env, const char *log_path, pid_t *pid, char *err,
             size_t errlen);

/* Stops the process group of pid, a child started by ex_spawn (its group's leader):
 * SIGTERM to the group, SIGKILL to it after grace seconds if pid has not exited by
 * then, and SIGKILL once more to whatever pid left behind in its group. Returns pid's
 * wait status, reaped, or EX_STATUS_LOST when waitpid failed (errno says why). */
#define EX_STATUS_LOST (-1)
int ex_stop_group(pid_t pid, double grace);

/* The kinds of event the executor tells (ex_event), as stored; a Slurm replica's launcher
 * writes the replica's (docs/executor.md, "Events"). A replica's: */
#define EX_EV_STARTED "started"     /* a run of it began (detail: pid, host) */
#define EX_EV_EXITED "exited"       /* a run ended (ex_event.exit says how) */
#define EX_EV_RESTARTED "restarted" /* it is started again in place */
#define EX_EV_METRICS "metrics"     /* its metric file cannot be read as it should */
/* The job's: */
#define EX_EV_SUBMITTED "submitted" /* handed to Slurm (detail: the job id) */
#define EX_EV_QUEUED "queued"       /* waiting in Slurm's queue, or to be submitted */
#define EX_EV_RUNNING "running"     /* an attempt's replicas are up */
#define EX_EV_RETRYING "retrying"   /* the whole job runs again (a new attempt) */
#define EX_EV_STOPPING "stopping"   /* it is being stopped, and why */

/* How a run of a replica ended, as data: code is its exit status (0 to 255) or -1,
 * signal the signal that killed it or 0. {-1, 0}: not known, or it never ran (it
 * could not be started). */
typedef struct ex_exit {
    int code;
    int signal;
} ex_exit;
#define EX_EXIT_UNKNOWN ((ex_exit){.code = -1, .signal = 0})

/* The ex_exit of a waitpid status. */
ex_exit ex_exit_of_status(int status);

/* "exit status N", "killed by signal N (NAME)": the sentence of an `exited` event's
 * detail, for people (programs read its ex_exit). */
void ex_describe_status(int status, char *buf, size_t len);

/* What a replica's exit means (docs/executor.md, "Lifecycle"). */
enum ex_exit_action {
    EX_EXIT_JOB_SUCCEEDED = 1, /* the chief exited 0: the job succeeded */
    EX_EXIT_DONE,              /* another replica exited 0: done, not restarted */
    EX_EXIT_PERMANENT,         /* exit status 2, the usage-error convention: re-running
                                  cannot help, the trial fails */
    EX_EXIT_RESTART,           /* restart it in place (restarts < max_restarts) */
    EX_EXIT_GIVE_UP            /* restarts used up: the attempt fails (re-run the job) */
};

/* The action for a replica of `type` that exited with wait status `status` after
 * `restarts` restarts in place during this attempt, of at most max_restarts. */
int ex_exit_action(int type, int status, int restarts, int max_restarts);

/* ---- What a failed run of a replica leaves to tell ---- */

/* A run's starting point in its replica's files, taken just before it starts, so its
 * end can tell what this run wrote: its own log lines, and whether it reported. */
typedef struct ex_run_mark {
    off_t log_size;
    off_t metric_size;
    long long metric_mtime_ns;
    int metric_exists;
} ex_run_mark;

void ex_run_mark_take(const char *log_path, const char *metric_path, ex_run_mark *m);

/* Whether the run reported anything: its metric file changed since m. */
int ex_run_reported(const char *metric_path, const ex_run_mark *m);

/* The last lines of what the run wrote to its log since m (at most max_lines lines
 * and max_bytes bytes, from the end; carriage returns dropped, other control
 * characters but newline and tab, C1's included, and bytes that are not UTF-8 shown as
 * '?': tn_term_clean), without a trailing newline: yours to free, "" when it wrote
 * none. */
char *ex_log_tail(const char *log_path, const ex_run_mark *m, int max_lines, size_t max_bytes);

/* A replica's last failure in its trial, to tell a repeat. Zeroed: none yet. */
typedef struct ex_failure {
    int set;
    int status;     /* wait status */
    int reported;   /* the run reported a metric before it failed */
    char *tail;     /* its log tail (ex_log_tail) */
} ex_failure;

/* Records a failure of the replica (wait status, the run's log tail, whether it
 * reported) in *last and returns 1 when it repeats the previous one: the same status
 * and the same log tail, not empty, neither run having reported anything. Such a
 * replica fails before doing any work, the same way each time, and says why (a syntax
 * error, a missing module, a bad flag): running it again cannot help. A silent failure
 * is no evidence of that, so it is never a repeat. */
int ex_failure_repeats(ex_failure *last, int status, const char *tail, int reported);
void ex_failure_clear(ex_failure *f);

/* The pause before the n-th restart or re-run (n >= 1): base * 2^(n-1) seconds, at
 * most cap; 0 when base is 0. */
double ex_backoff(double base, double cap, int n);

/* "WHAT; its log (LOG_PATH) ends:\n    LINE\n    LINE..." when tail is not empty, else
 * "WHAT; see LOG_PATH": the message of a failure that ends a trial. Yours to free. */
char *ex_failure_message(const char *what, const char *log_path, const char *tail);

/* The lines of the log tail that go into a trial's error, and their bytes at most. */
#define EX_TAIL_LINES 12
#define EX_TAIL_BYTES 2000

#endif
