/*
 * test_slurm.c — the Slurm backend of the executor and its launcher, against a stand-in
 * for Slurm's commands (tests/executor/fakeslurm.py: sbatch, squeue, scancel, sinfo and
 * srun, with the queue in files), so that every path runs on any machine: submission,
 * the job components, watching at a bounded rate, the launcher's rendezvous and
 * lifecycle (restart in place, give up, permanent errors, success), re-runs after a
 * cancel, preemption or node failure from outside, a time limit or out-of-memory
 * failing the trial, sbatch refusing the job or failing for a while, squeue failing,
 * a job Slurm forgot, stopping, the trial timeout, re-attaching after a crash,
 * recovering and cancelling strays, and the checks against sinfo. The same backend
 * against a real cluster: tests/tuner/tuner_slurm.sh.
 *
 *   test_slurm TUNER_LAUNCH FAKESLURM_PY
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"
#include "executor/executor.h"
#include "executor/executor_internal.h" /* ex__cmd_sync */
#include "tests/check.h"
#include "tests/executor/ex_test.h"

static char g_root[512], g_fake[600], g_launcher[PATH_MAX];

/* ---- the fake cluster ---- */

static void fake_write(const char *name, const char *text) {
    char p[1400];
    snprintf(p, sizeof p, "%s/%s", g_fake, name);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void fake_remove(const char *name) {
    char p[1400];
    snprintf(p, sizeof p, "%s/%s", g_fake, name);
    unlink(p);
}

/* The whole of a fake state file into buf ("" when missing). */
static void fake_read(const char *name, char *buf, size_t len) {
    char p[1400];
    snprintf(p, sizeof p, "%s/%s", g_fake, name);
    buf[0] = '\0';
    FILE *f = fopen(p, "r");
    if (!f) return;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* A clean fake cluster: no jobs, no failures; run: sbatch runs the jobs. */
static void fake_reset(int run) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/jobs' '%s/pids' '%s'/calls '%s'/*_fail '%s'/state "
             "'%s'/run '%s'/sinfo '%s'/sbatch_lie '%s'/sbatch_stdout '%s'/nodelist", g_fake,
             g_fake, g_fake, g_fake, g_fake, g_fake, g_fake, g_fake, g_fake, g_fake);
    if (system(cmd) != 0) fprintf(stderr, "cannot reset %s\n", g_fake);
    if (run) fake_write("run", "");
}

/* How many calls of command were made, and the smallest gap between two of them. */
static int fake_calls(const char *command, double *min_gap) {
    char buf[1 << 16];
    fake_read("calls", buf, sizeof buf);
    int n = 0;
    double last = -1;
    if (min_gap) *min_gap = 1e9;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        double t;
        char name[32];
        if (sscanf(line, "%lf %31s", &t, name) != 2 || strcmp(name, command) != 0) continue;
        if (last >= 0 && min_gap && t - last < *min_gap) *min_gap = t - last;
        last = t;
        n++;
    }
    return n;
}

/* The most job ids one squeue call asked about (its --jobs list). */
static int most_jobs_per_squeue(void) {
    char buf[1 << 16];
    fake_read("calls", buf, sizeof buf);
    int most = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        char *jobs = strstr(line, " squeue ") ? strstr(line, "--jobs ") : NULL;
        if (!jobs) continue;
        int n = 1;
        for (const char *p = jobs + 7; *p && *p != ' '; p++) n += *p == ',';
        if (n > most) most = n;
    }
    return most;
}

/* Whether some call of the log contains text. */
static int fake_called_with(const char *text) {
    char buf[1 << 16];
    fake_read("calls", buf, sizeof buf);
    return strstr(buf, text) != NULL;
}

/* ---- running one job ---- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void on_tick(evutil_socket_t fd, short what, void *arg) {
    outcome *o = arg;
    if (o->hook && !o->finished) o->hook(o, now_s() - o->t0);
}

/* The job's id as sbatch gave it ("" before). */
static const char *job_id(const outcome *o) { return o->handle[0] ? o->handle + 6 : ""; }

typedef struct job_case {
    const char *script;      /* /bin/sh -c SCRIPT; $1 is --job-dir=DIR */
    int workers, ps;
    int chief_cores, worker_cores, worker_gpus;
    int chief_memory_mb;     /* 0: not said */
    int restarts, retries;
    double timeout;
    const char *attach;      /* attach to this handle instead of starting */
    const ex_seen *seen;     /* ... with these events stored already */
    size_t nseen;
    int attempts_before;     /* ... started this many times so far (0: 1) */
    void (*hook)(outcome *o, double elapsed);
    double poll;             /* how often metric and event files are read (0: 0.1 s) */
    double backoff;          /* restart_backoff (restart_backoff_max: 10 s) */
    int fail_on_repeat;
    const char *const *env;  /* every replica's env */
    double retry_seconds;    /* the first wait after a passing sbatch failure (0: 1 s) */
} job_case;

/* squeue every 0.25 s keeps the tests short; test_squeue_rate checks the tuner's 1 s. */
static const double g_squeue_every = 0.25;

static ex_slurm_options slurm_options(void) {
    ex_slurm_options s = {.partition = "debug", .time_limit = "10", .launcher = g_launcher,
                          .job_prefix = "tuner.test.s", .poll_seconds = g_squeue_every};
    return s;
}

static outcome run_job(const char *name, const job_case *jc, int *attempts, int *restarts) {
    outcome o;
    memset(&o, 0, sizeof o);
    o.base = event_base_new();
    o.hook = jc->hook;
    o.metric = "acc";
    o.t0 = now_s();
    ex_options opts = {.backend = EX_SLURM, .slurm = slurm_options()};
    opts.slurm.retry_seconds = jc->retry_seconds;
    ex_executor *x = NULL;
    char err[1024] = "", dir[700];
    CHECK_MSG(ex_executor_new(o.base, &opts, &x, err, sizeof err) == 0, "%s", err);
    snprintf(dir, sizeof dir, "%s/%s", g_root, name);
    const char *argv[] = {"/bin/sh", "-c", jc->script, "sh"};
    ex_job_config cfg = {.study = "s", .trial = "3", .argv = argv, .argc = 4, .job_dir = dir,
                         .metric_tag = "acc", .use_chief_name = 1,
                         .count = {1, jc->workers, jc->ps, 0},
                         .cores = {jc->chief_cores ? jc->chief_cores : 1,
                                   jc->worker_cores ? jc->worker_cores : 1, 1, 1},
                         .gpus = {0, jc->worker_gpus, 0, 0},
                         .memory_mb = {jc->chief_memory_mb, 0, 0, 0},
                         .max_replica_restarts = jc->restarts, .max_job_retries = jc->retries,
                         .timeout_seconds = jc->timeout, .grace_seconds = 1,
                         .poll_seconds = jc->poll > 0 ? jc->poll : 0.1,
                         .restart_backoff = jc->backoff, .restart_backoff_max = 10,
                         .fail_on_repeat = jc->fail_on_repeat,
                         .env = {jc->env, jc->env, jc->env, jc->env}};
    ex_callbacks cb = {on_event, on_measurement, on_finished, on_handle};
    int rc = jc->attach ? ex_job_attach(x, &cfg, &cb, &o, jc->attach,
                                        jc->attempts_before ? jc->attempts_before : 1, jc->seen,
                                        jc->nseen, &o.job)
                        : ex_job_start(x, &cfg, &cb, &o, &o.job, err, sizeof err);
    CHECK_MSG(rc == 0 && o.job, "%s: %s", name, err);
    struct event *safety = arm_safety(&o, 40);
    struct event *tick = event_new(o.base, -1, EV_PERSIST, on_tick, &o);
    struct timeval t100 = {0, 100000};
    evtimer_add(tick, &t100);
    if (o.job && !o.finished) event_base_dispatch(o.base);
    if (o.job && ex_job_handle(o.job))
        snprintf(o.job_handle, sizeof o.job_handle, "%s", ex_job_handle(o.job));
    job_done(o.job, attempts, restarts);
    event_free(tick);
    event_free(safety);
    ex_executor_free(x);
    event_base_free(o.base);
    return o;
}

/* The chief reports and exits 0; the others report and wait to be stopped. */
#define SERVE                                                                          \
    "printf '{\"global_step\": \"1\", \"acc\": \"0.5\", \"timestamp\": 1.5}\\n' "        \
    "> \"$CLOUD_ML_HP_METRIC_FILE\"; "                                                 \
    "case \"$TF_CONFIG\" in *'\"type\":\"chief\"'*) exit 0;; esac; sleep 30"

/* ---- cases ---- */

static void test_happy_path(void) {
    fake_reset(1);
    /* the chief waits for all four replicas to have started (their tf-* files): a chief
     * that succeeds at once may end the run before a slower peer starts, rightly */
    job_case jc = {.script = "d=${1#--job-dir=}; echo \"$TF_CONFIG\" > \"$d/tf-$SLURM_PROCID-$$\"; "
                             "case \"$TF_CONFIG\" in *'\"type\":\"chief\"'*) for i in $(seq 100); do "
                             "[ $(ls \"$d\"/tf-* | wc -l) -ge 4 ] && break; sleep 0.1; done;; esac; " SERVE,
                   .workers = 2, .ps = 1, .restarts = 5, .retries = 3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("happy", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.finished, 1);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "outcome %d: %s; events: %s", o.outcome, o.error, o.events);
    CHECK_INT_EQ(attempts, 1);
    CHECK_INT_EQ(restarts, 0);
    CHECK_INT_EQ(o.handles, 1);
    CHECK_STR_CONTAINS(o.handle, "slurm:");
    CHECK(o.measurements >= 1);
    CHECK_STR_CONTAINS(o.events, "job submitted: Slurm job");
    CHECK_STR_CONTAINS(o.events, "chief:0 started: pid");
    CHECK_STR_CONTAINS(o.events, "worker:1 started");
    CHECK_STR_CONTAINS(o.events, "ps:0 exited");
    /* the launcher writes how the run ended as data, and the executor hands it on */
    CHECK_STR_CONTAINS(o.events, "chief:0 exited: exit status 0 [exit 0];");
    /* one job component: all four replicas alike */
    CHECK(fake_called_with("sbatch --parsable --job-name=tuner.test.s.3"));
    CHECK(fake_called_with("--ntasks=4 --cpus-per-task=1 --partition=debug --time=10"));
    CHECK(!fake_called_with(" : "));
    /* one srun step per replica type */
    CHECK_INT_EQ(fake_calls("srun", NULL), 3);
    CHECK(fake_called_with("srun --ntasks=2 --nodes=1-2 --cpus-per-task=1 --exact"));
}

/* Three jobs at once, watched for three seconds: one squeue a second for all of them. */
static void test_squeue_rate(void) {
    fake_reset(1);
    struct event_base *base = event_base_new();
    ex_slurm_options so = slurm_options();
    so.poll_seconds = 1; /* as the tuner runs it */
    ex_options opts = {.backend = EX_SLURM, .slurm = so};
    ex_executor *x = NULL;
    char err[512], dir[700];
    CHECK(ex_executor_new(base, &opts, &x, err, sizeof err) == 0);
    outcome o[3];
    ex_job *jobs[3] = {NULL, NULL, NULL};
    const char *argv[] = {"/bin/sh", "-c", "sleep 3", "sh"};
    for (int i = 0; i < 3; i++) {
        memset(&o[i], 0, sizeof o[i]);
        o[i].base = base;
        snprintf(dir, sizeof dir, "%s/rate%d", g_root, i);
        char trial[8];
        snprintf(trial, sizeof trial, "%d", i + 1);
        ex_job_config cfg = {.trial = trial, .argv = argv, .argc = 4, .job_dir = dir,
                             .use_chief_name = 1, .count = {1}, .grace_seconds = 1,
                             .poll_seconds = 0.1};
        ex_callbacks cb = {on_event, on_measurement, on_finished, on_handle};
        CHECK(ex_job_start(x, &cfg, &cb, &o[i], &jobs[i], err, sizeof err) == 0);
    }
    double t0 = now_s();
    while (now_s() - t0 < 15 && !(o[0].finished && o[1].finished && o[2].finished)) {
        struct timeval tick = {0, 200000};
        event_base_loopexit(base, &tick);
        event_base_dispatch(base);
    }
    double elapsed = now_s() - t0, gap;
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(o[i].outcome == EX_SUCCEEDED, "job %d: %s", i, o[i].error);
        ex_job_free(jobs[i]);
    }
    int n = fake_calls("squeue", &gap);
    CHECK_MSG(n >= 2 && n <= (int)elapsed + 1, "%d squeue calls in %.1f s", n, elapsed);
    /* the stand-in logs each call when its Python has started, which varies */
    CHECK_MSG(gap >= 0.5, "two squeue calls %.3f s apart", gap);
    CHECK(fake_called_with("squeue --noheader --states=all --format=%i|%T|%r|%N|%S --jobs "));
    CHECK_INT_EQ(most_jobs_per_squeue(), 3); /* one call asks about all of them */
    ex_executor_free(x);
    event_base_free(base);
}

static void test_heterogeneous_components(void) {
    fake_reset(1);
    job_case jc = {.script = SERVE, .workers = 2, .chief_cores = 2, .worker_cores = 1,
                   .worker_gpus = 2, .restarts = 5, .retries = 3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("het", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK(fake_called_with("--ntasks=1 --cpus-per-task=2 --partition=debug --time=10 : "
                           "--ntasks=2 --cpus-per-task=1 --gpus-per-task=2"));
    CHECK(fake_called_with("--het-group=1"));
    CHECK(fake_called_with("srun --ntasks=2 --nodes=1-2 --cpus-per-task=1 --gpus-per-task=2"));
}

/* Memory per replica goes to sbatch and srun per core, rounded up; near INT_MAX MiB
 * (2 TiB) the rounding overflowed to a negative --mem-per-cpu. */
static void test_memory_per_cpu(void) {
    fake_reset(1);
    job_case jc = {.script = SERVE, .chief_cores = 2, .chief_memory_mb = 2147483647};
    int attempts = 0, restarts = 0;
    outcome o = run_job("mem", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK(fake_called_with("--ntasks=1 --cpus-per-task=2 --mem-per-cpu=1073741824M"));
    CHECK(fake_called_with("srun --ntasks=1 --nodes=1-1 --cpus-per-task=2 "
                           "--mem-per-cpu=1073741824M"));
    jc.chief_memory_mb = 1001; /* rounded up: 501 per core */
    o = run_job("mem2", &jc, &attempts, &restarts);
    CHECK(fake_called_with("--mem-per-cpu=501M"));
}

/* CUDA_VISIBLE_DEVICES as the contract says: Slurm's for a replica given GPUs (the
 * stand-in leaves the environment's, as Slurm would set its own), "" for one that asked
 * for none, whatever the tuner's environment had. The chief waits for the worker's
 * file: a chief that succeeds at once may end the run before the worker starts. */
static void test_cuda_visible_devices(void) {
    fake_reset(1);
    setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    job_case jc = {.script = "d=${1#--job-dir=}; t=worker; case \"$TF_CONFIG\" in "
                             "*'\"type\":\"chief\"'*) t=chief;; esac; "
                             "echo \"${CUDA_VISIBLE_DEVICES-unset}\" > \"$d/cuda-$t\"; "
                             "if [ $t = chief ]; then for i in $(seq 300); do "
                             "[ -f \"$d/cuda-worker\" ] && break; sleep 0.1; done; fi; " SERVE,
                   .workers = 1, .worker_gpus = 1, .restarts = 0};
    int attempts = 0, restarts = 0;
    outcome o = run_job("cuda", &jc, &attempts, &restarts);
    unsetenv("CUDA_VISIBLE_DEVICES");
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    const char *types[] = {"chief", "worker"}, *want[] = {"\n", "0\n"};
    for (int i = 0; i < 2; i++) {
        char path[1400], buf[64] = "?";
        snprintf(path, sizeof path, "%s/cuda/cuda-%s", g_root, types[i]);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
            fclose(f);
        }
        CHECK_MSG(!strcmp(buf, want[i]), "the %s saw CUDA_VISIBLE_DEVICES '%s'", types[i], buf);
    }
}

static void test_restart_in_place(void) {
    fake_reset(1);
    /* the chief fails twice (a counter in the job dir), then succeeds */
    job_case jc = {.script = "d=${1#--job-dir=}; case \"$TF_CONFIG\" in *'\"type\":\"chief\"'*) "
                             "n=$(cat $d/count 2>/dev/null || echo 0); echo $((n+1)) > $d/count; "
                             "[ $n -ge 2 ] || exit 1;; esac; " SERVE,
                   .workers = 1, .restarts = 5, .retries = 3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("twice", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(attempts, 1);
    CHECK_INT_EQ(restarts, 2);
    CHECK_STR_CONTAINS(o.events, "chief:0 restarted: restart 1 of 5 after exit status 1");
}

/* The launchers' events are read late (here every 1.5 s): when the tuner reads that
 * the chief's first run exited, the restarted run has reported too. The records'
 * timestamps, against the exit's (both the node's clock), give each its run. */
static void test_records_carry_their_run(void) {
    fake_reset(1);
    job_case jc = {.script = "d=${1#--job-dir=}; a=0.7; [ -e $d/ran ] || { touch $d/ran; a=0.2; }; "
                             "printf '{\"global_step\": \"5\", \"acc\": \"%s\", "
                             "\"timestamp\": %s}\\n' $a $(date +%s.%N)"
                             " >> $CLOUD_ML_HP_METRIC_FILE; "
                             "[ $a = 0.7 ] && sleep 2",
                   .restarts = 5, .retries = 3, .poll = 1.5};
    int attempts = 0, restarts = 0;
    outcome o = run_job("runs", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(restarts, 1);
    CHECK_MSG(!strcmp(o.runs, "5/1=0.2 5/2=0.7 "), "records: %s; events: %s", o.runs, o.events);
}

static void test_gives_up_then_fails(void) {
    fake_reset(1);
    job_case jc = {.script = "exit 1", .restarts = 1, .retries = 1};
    int attempts = 0, restarts = 0;
    outcome o = run_job("always", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_INT_EQ(attempts, 2);
    CHECK_INT_EQ(restarts, 2);
    CHECK_STR_CONTAINS(o.error, "replica chief:0 failed 2 times (last: exit status 1)");
    CHECK_STR_CONTAINS(o.error, "the job was run 2 times");
    CHECK_STR_CONTAINS(o.events, "job retrying");
    CHECK_INT_EQ(o.handles, 2); /* each submission's id was handed out */
}

static void test_permanent_error(void) {
    fake_reset(1);
    job_case jc = {.script = "echo bad flag >&2; exit 2", .workers = 1, .restarts = 5,
                   .retries = 3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("usage", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_INT_EQ(attempts, 1);
    CHECK_STR_CONTAINS(o.error, "exited with status 2 (a usage error");
    CHECK_STR_CONTAINS(o.error, "-0.log");
}

/* A replica started with SIGCHLD ignored (a site's wrapper, a container entrypoint)
 * has its exit status reaped by the kernel: the launcher takes SIGCHLD back, so a
 * program that exits 3 fails the trial (it was taken for exit 0: the trial succeeded). */
static void test_sigchld_ignored(void) {
    fake_reset(1);
    fake_write("srun_sigchld_ignored", "");
    job_case jc = {.script = "sleep 0.3; exit 3", .workers = 0, .restarts = 0, .retries = 0};
    int attempts = 0, restarts = 0;
    outcome o = run_job("sigchld", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_STR_CONTAINS(o.error, "exit status 3");
    fake_remove("srun_sigchld_ignored");
}

static void test_program_not_found(void) {
    fake_reset(1);
    outcome o;
    memset(&o, 0, sizeof o);
    o.base = event_base_new();
    ex_options opts = {.backend = EX_SLURM, .slurm = slurm_options()};
    ex_executor *x = NULL;
    char err[512], dir[700];
    CHECK(ex_executor_new(o.base, &opts, &x, err, sizeof err) == 0);
    snprintf(dir, sizeof dir, "%s/notfound", g_root);
    const char *argv[] = {"/no/such/program"};
    ex_job_config cfg = {.trial = "1", .argv = argv, .argc = 1, .job_dir = dir,
                         .use_chief_name = 1, .count = {1, 0, 0, 0}, .max_replica_restarts = 5,
                         .max_job_retries = 3, .grace_seconds = 1, .poll_seconds = 0.1};
    ex_callbacks cb = {on_event, on_measurement, on_finished, on_handle};
    CHECK(ex_job_start(x, &cfg, &cb, &o, &o.job, err, sizeof err) == 0);
    struct event *safety = arm_safety(&o, 30);
    if (!o.finished) event_base_dispatch(o.base);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_STR_CONTAINS(o.error, "cannot run /no/such/program");
    CHECK_INT_EQ(ex_job_attempts(o.job), 1);
    ex_job_free(o.job);
    event_free(safety);
    ex_executor_free(x);
    event_base_free(o.base);
}

/* Cancels the first job from outside once it runs; the second run succeeds. */
static void cancel_outside(outcome *o, double elapsed) {
    if (o->hook_state == 0 && strstr(o->events, "chief:0 started")) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "scancel %s", job_id(o));
        if (system(cmd) != 0) fprintf(stderr, "scancel failed\n");
        o->hook_state = 1;
    }
}

static void test_cancelled_outside_is_rerun(void) {
    fake_reset(1);
    job_case jc = {.script = "d=${1#--job-dir=}; [ -e $d/ran ] && exit 0; touch $d/ran; sleep 30",
                   .restarts = 5, .retries = 3, .hook = cancel_outside};
    int attempts = 0, restarts = 0;
    outcome o = run_job("cancelled", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(attempts, 2);
    CHECK_STR_CONTAINS(o.events, "was cancelled outside the tuner; re-running the job (attempt 2");
}

/* Sets the (not running) job's state once it was submitted; the next job runs. */
static const char *g_end_state;
static void end_job(outcome *o, double elapsed) {
    if (o->hook_state == 0 && o->handle[0] && strstr(o->events, "job queued: Slurm job")) {
        char name[64], text[128];
        snprintf(name, sizeof name, "jobs/%s", job_id(o));
        snprintf(text, sizeof text, "%s|None|fake1|tuner.test.s.3", g_end_state);
        fake_write("run", "");
        fake_write(name, text);
        o->hook_state = 1;
    }
}

static void test_slurm_ends_job(void) {
    static const struct {
        const char *state;
        int outcome;
        const char *says;
    } cases[] = {
        {"TIMEOUT", EX_FAILED, "reached its time limit of 10 (state TIMEOUT)"},
        {"OUT_OF_MEMORY", EX_FAILED, "ran out of memory"},
        {"NODE_FAIL", EX_FAILED, "a node of Slurm job"},
        {"PREEMPTED", EX_FAILED, "Slurm preempted job"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fake_reset(0); /* jobs stay PENDING until the hook ends them */
        g_end_state = cases[i].state;
        job_case jc = {.script = "exit 0", .restarts = 5, .retries = 0, .hook = end_job};
        int attempts = 0, restarts = 0;
        char name[64];
        snprintf(name, sizeof name, "ended-%zu", i);
        outcome o = run_job(name, &jc, &attempts, &restarts);
        CHECK_MSG(o.outcome == cases[i].outcome, "%s: outcome %d", cases[i].state, o.outcome);
        CHECK_MSG(strstr(o.error, cases[i].says), "%s: %s", cases[i].state, o.error);
        CHECK_STR_CONTAINS(o.events, "job queued: Slurm job");
    }
    /* node failure and preemption are re-runs, while retries last */
    fake_reset(0);
    g_end_state = "NODE_FAIL";
    job_case jc = {.script = "exit 0", .restarts = 5, .retries = 1, .hook = end_job};
    int attempts = 0, restarts = 0;
    outcome o = run_job("nodefail", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(attempts, 2);
    CHECK_STR_CONTAINS(o.events, "failed (state NODE_FAIL); re-running the job (attempt 2 of 2)");
}

static void test_sbatch_refuses(void) {
    fake_reset(1);
    fake_write("sbatch_fail", "sbatch: error: Batch job submission failed: Invalid partition "
                              "name specified\n");
    job_case jc = {.script = "exit 0", .restarts = 5, .retries = 3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("refused", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_REFUSED);
    CHECK_STR_CONTAINS(o.error, "Slurm refused the job of trial 3");
    CHECK_STR_CONTAINS(o.error, "Invalid partition name specified");
    CHECK_STR_CONTAINS(o.error, "hint:");
    CHECK_INT_EQ(attempts, 0);
}

static void test_sbatch_fails_for_a_while(void) {
    fake_reset(1);
    fake_write("sbatch_fail", "sbatch: error: Batch job submission failed: Unable to contact "
                              "slurm controller (connect failure)\n"
                              "sbatch: error: Socket timed out on send/recv operation\n");
    job_case jc = {.script = "exit 0", .restarts = 5, .retries = 3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("passing", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_STR_CONTAINS(o.events, "sbatch failed (sbatch: error: Batch job submission failed: "
                                 "Unable to contact slurm controller");
    CHECK_STR_CONTAINS(o.events, "trying again in 1s");
    CHECK_STR_CONTAINS(o.events, "trying again in 2s");
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 3);
}

/* squeue fails for a while, then answers. */
static void squeue_outage(outcome *o, double elapsed) {
    if (o->hook_state == 0 && o->handle[0]) {
        fake_write("squeue_fail", "slurm_load_jobs error: Unable to contact slurm controller\n");
        o->hook_state = 1;
    } else if (o->hook_state == 1 && strstr(o->events, "squeue failed")) {
        fake_remove("squeue_fail");
        o->hook_state = 2;
    }
}

static void test_squeue_outage(void) {
    fake_reset(1);
    job_case jc = {.script = "sleep 2.5", .restarts = 5, .retries = 3, .hook = squeue_outage};
    int attempts = 0, restarts = 0;
    outcome o = run_job("outage", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_STR_CONTAINS(o.events, "squeue failed, will keep asking: slurm_load_jobs error");
    /* said once, not at every failed call */
    const char *first = strstr(o.events, "squeue failed");
    CHECK(first && !strstr(first + 1, "squeue failed"));
}

/* Slurm forgets the job (purged) before it ran: the job runs again, its old id
 * cancelled first in case the listing was wrong. */
static char g_forgotten[32];
static void forget_job(outcome *o, double elapsed) {
    if (o->hook_state == 0 && o->handle[0] && strstr(o->events, "job queued: Slurm job")) {
        char name[64];
        snprintf(g_forgotten, sizeof g_forgotten, "%s", job_id(o));
        snprintf(name, sizeof name, "jobs/%s", job_id(o));
        fake_remove(name);
        fake_write("run", ""); /* the next one runs */
        o->hook_state = 1;
    }
}

static void test_forgotten_job_is_rerun(void) {
    fake_reset(0);
    job_case jc = {.script = "exit 0", .restarts = 5, .retries = 3, .hook = forget_job};
    int attempts = 0, restarts = 0;
    outcome o = run_job("forgotten", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_STR_CONTAINS(o.events, "no longer knows job");
    CHECK_INT_EQ(attempts, 2);
    char cancel[64];
    snprintf(cancel, sizeof cancel, "scancel %s\n", g_forgotten);
    CHECK_MSG(fake_called_with(cancel), "no %s", cancel);
}

static void stop_when_running(outcome *o, double elapsed) {
    if (o->hook_state == 0 && strstr(o->events, "worker:0 started") &&
        strstr(o->events, "job running")) {
        ex_job_stop(o->job, EX_STOPPED, "stopped early");
        o->hook_state = 1;
    }
}

static void test_stop_cancels(void) {
    fake_reset(1);
    job_case jc = {.script = "sleep 30", .workers = 1, .restarts = 5, .retries = 3,
                   .hook = stop_when_running};
    int attempts = 0, restarts = 0;
    outcome o = run_job("stop", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_STOPPED);
    CHECK_STR_CONTAINS(o.error, "stopped early");
    CHECK_STR_CONTAINS(o.events, "job running: Slurm job");
    CHECK_STR_CONTAINS(o.events, "job stopping: stopped early: scancel");
    char buf[128];
    snprintf(buf, sizeof buf, "scancel %s", job_id(&o));
    CHECK(fake_called_with(buf));
}

/* The first scancel fails (the controller away): it is sent again while the job is
 * still listed, and the stop completes. */
static void stop_with_failing_scancel(outcome *o, double elapsed) {
    if (o->hook_state == 0 && strstr(o->events, "chief:0 started")) {
        fake_write("scancel_fail", "scancel: error: Unable to contact slurm controller\n");
        ex_job_stop(o->job, EX_STOPPED, "stopped early");
        o->hook_state = 1;
    }
}

static void test_scancel_failing_is_retried(void) {
    fake_reset(1);
    job_case jc = {.script = "sleep 30", .restarts = 5, .retries = 3,
                   .hook = stop_with_failing_scancel};
    int attempts = 0, restarts = 0;
    outcome o = run_job("scancelfail", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_STOPPED);
    CHECK_STR_CONTAINS(o.events, "failed, will try again: scancel: error: Unable to contact");
    CHECK_INT_EQ(fake_calls("scancel", NULL), 2);
}

static void test_trial_timeout(void) {
    fake_reset(1);
    job_case jc = {.script = "sleep 30", .restarts = 5, .retries = 3, .timeout = 1.5};
    int attempts = 0, restarts = 0;
    outcome o = run_job("timeout", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_STR_CONTAINS(o.error, "timed out after 1.5s");
    CHECK(fake_called_with("scancel"));
}

/* A re-run waits out its backoff in the queue (sbatch --begin, reason BeginTime); the
 * trial timeout does not count that wait. The first run fails at once, the re-run waits
 * 3 s and then runs 0.5 s: 1 s of a 2.5 s timeout, which fired in the queue before. */
static void test_trial_timeout_not_in_backoff(void) {
    fake_reset(1);
    job_case jc = {.script = "d=${1#--job-dir=}; if [ -e \"$d/ran\" ]; then sleep 0.5; exit 0; fi; "
                             "touch \"$d/ran\"; exit 1",
                   .retries = 1, .timeout = 2.5, .backoff = 3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("timeoutbackoff", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "outcome %d: %s", o.outcome, o.error);
    CHECK_INT_EQ(attempts, 2);
    CHECK(fake_called_with("--begin=now+3"));
    CHECK_STR_CONTAINS(o.events, "BeginTime");
}

static void test_attach_to_finished_job(void) {
    fake_reset(0);
    /* job 7 ran while no tuner watched: it is COMPLETED, its outcome on disk */
    char dir[1400];
    snprintf(dir, sizeof dir, "mkdir -p '%s/attach/slurm/7-0/events' '%s/jobs'", g_root, g_fake);
    CHECK(system(dir) == 0);
    fake_write("jobs/7", "COMPLETED|None|fake1|tuner.test.s.3");
    snprintf(dir, sizeof dir, "%s/attach/slurm/7-0/outcome", g_root);
    FILE *f = fopen(dir, "w");
    if (f) {
        fputs("{\"outcome\": \"succeeded\", \"retry\": false, \"time\": 1}\n", f);
        fclose(f);
    }
    snprintf(dir, sizeof dir, "%s/attach/slurm/7-0/events/chief-0.jsonl", g_root);
    f = fopen(dir, "w");
    if (f) {
        /* what no launcher writes is not told: an unknown kind, an exit code out of
         * range (the exit is then not known) */
        fputs("{\"time\": 100.0, \"kind\": \"started\", \"detail\": \"pid 1 on n1\"}\n"
              "{\"time\": 150.0, \"kind\": \"hacked\", \"detail\": \"x\"}\n"
              "{\"time\": 200.0, \"kind\": \"exited\", \"detail\": \"exit status 0\", "
              "\"exit_code\": 900}\n", f);
        fclose(f);
    }
    /* the tuner stored "started" (time 100) before it died: only "exited" is new */
    ex_seen seen[] = {{"chief:0", 100.0}, {"worker:0", 500.0}};
    job_case jc = {.script = "exit 0", .restarts = 5, .retries = 3, .attach = "slurm:7",
                   .seen = seen, .nseen = 2, .attempts_before = 2};
    int attempts = 0, restarts = 0;
    outcome o = run_job("attach", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 0); /* nothing ran twice */
    CHECK_STR_CONTAINS(o.events, "chief:0 exited: exit status 0;");
    CHECK(!strstr(o.events, "hacked"));
    CHECK(!strstr(o.events, "chief:0 started")); /* stored before: not told again */
    CHECK_NEAR(o.chief_exit_time, 200.0, 0, 0);  /* the launcher's time, not now */
    CHECK_INT_EQ(attempts, 2);                    /* the count goes on */
    CHECK_STR_CONTAINS(o.events, "re-attached");
    /* handles of other backends are not ours */
    snprintf(dir, sizeof dir, "%s/attach_other", g_root);
    struct event_base *base = event_base_new();
    ex_options opts = {.backend = EX_SLURM, .slurm = slurm_options()};
    ex_executor *x = NULL;
    char err[256];
    CHECK(ex_executor_new(base, &opts, &x, err, sizeof err) == 0);
    const char *argv[] = {"/bin/true"};
    ex_job_config cfg = {.trial = "1", .argv = argv, .argc = 1, .job_dir = dir, .count = {1}};
    ex_callbacks cb = {0};
    ex_job *j = NULL;
    /* not ours: 0 with no job, not an error */
    j = (ex_job *)&j;
    CHECK_INT_EQ(ex_job_attach(x, &cfg, &cb, NULL, "local:1", 1, NULL, 0, &j), 0);
    CHECK(j == NULL);
    j = (ex_job *)&j;
    CHECK_INT_EQ(ex_job_attach(x, &cfg, &cb, NULL, "slurm:12x", 1, NULL, 0, &j), 0);
    CHECK(j == NULL);
    ex_executor_free(x);
    event_base_free(base);
}

/* Writes DIR/slurm/RUN/outcome under g_root (the run folder a launcher makes). */
static void write_run_outcome(const char *dir, const char *run, const char *json) {
    char path[1400];
    snprintf(path, sizeof path, "mkdir -p '%s/%s/slurm/%s/events'", g_root, dir, run);
    CHECK(system(path) == 0);
    snprintf(path, sizeof path, "%s/%s/slurm/%s/outcome", g_root, dir, run);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fprintf(f, "%s\n", json);
        fclose(f);
    }
}

/* The stored job 7 failed and a later job of the trial, 9, ran and succeeded while no
 * tuner did (its id never stored): attaching to 7 attaches to 9, one attempt more, and
 * its outcome is the trial's; nothing is submitted. Folders that are not runs are not
 * taken for one. */
static void test_attach_takes_later_run(void) {
    fake_reset(0);
    write_run_outcome("later", "7-0", "{\"outcome\": \"failed\", \"retry\": true, "
                      "\"error\": \"chief exited 1\", \"time\": 1}");
    write_run_outcome("later", "9-0", "{\"outcome\": \"failed\", \"retry\": true, "
                      "\"error\": \"killed\", \"time\": 2}");
    write_run_outcome("later", "9-1", "{\"outcome\": \"succeeded\", \"retry\": false, "
                      "\"time\": 3}"); /* requeued once by Slurm */
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/later/slurm/12-' '%s/later/slurm/13a-0' "
             "'%s/later/slurm/-0' && touch '%s/later/slurm/14-0x'", g_root, g_root, g_root, g_root);
    CHECK(system(cmd) == 0);
    job_case jc = {.script = "exit 0", .restarts = 5, .retries = 3, .attach = "slurm:7",
                   .attempts_before = 1};
    int attempts = 0, restarts = 0;
    outcome o = run_job("later", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 0);
    CHECK_INT_EQ(attempts, 2); /* job 9 is the trial's second submission */
    CHECK_MSG(!strcmp(o.job_handle, "slurm:9"), "handle %s", o.job_handle);
    CHECK_STR_CONTAINS(o.events, "Slurm job 9 (re-attached: a later job of the trial than "
                                 "the stored job 7, which ran while no tuner did) [notice]");
    CHECK_INT_EQ(o.handles, 0); /* the caller stores it, as it stores the attempts */

    /* the stored job is the newest that ran: it is the one attached */
    fake_reset(0);
    write_run_outcome("latest", "5-0", "{\"outcome\": \"failed\", \"retry\": true, "
                      "\"error\": \"x\", \"time\": 1}");
    write_run_outcome("latest", "7-0", "{\"outcome\": \"failed\", \"retry\": false, "
                      "\"error\": \"the chief failed\", \"time\": 2}");
    jc.attempts_before = 2;
    o = run_job("latest", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_STR_CONTAINS(o.error, "the chief failed");
    CHECK_INT_EQ(attempts, 2);
    CHECK_MSG(!strcmp(o.job_handle, "slurm:7"), "handle %s", o.job_handle);
    CHECK(!strstr(o.events, "a later job"));
}

/* The handle ex_job_attach takes for `stored` in the trial folder g_root/dir, on
 * executor x ("" when it attaches to none). */
static void attached_handle(ex_executor *x, const char *dir, const char *stored, char *buf,
                            size_t len) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", g_root, dir);
    const char *argv[] = {"/bin/true"};
    ex_job_config cfg = {.study = "s", .trial = "3", .argv = argv, .argc = 1, .job_dir = path,
                         .count = {1}, .poll_seconds = 0.1};
    ex_callbacks cb = {0};
    ex_job *j = NULL;
    buf[0] = '\0';
    CHECK_INT_EQ(ex_job_attach(x, &cfg, &cb, NULL, stored, 1, NULL, 0, &j), 0);
    if (j && ex_job_handle(j)) snprintf(buf, len, "%s", ex_job_handle(j));
    ex_job_free(j);
}

/* A later run folder is not taken over the stored job when the stored job is still
 * live (slurm_recover listed it: the later one is a copy that ended), nor when it is
 * older than the stored job's own (ids that wrapped at MaxJobId). */
static void test_attach_keeps_stored(void) {
    fake_reset(0);
    char mk[1400];
    snprintf(mk, sizeof mk, "mkdir -p '%s/jobs'", g_fake);
    CHECK(system(mk) == 0);
    fake_write("jobs/7", "RUNNING|None|n1|tuner.test.s.3");
    write_run_outcome("keep_live", "7-0", "{\"outcome\": \"failed\", \"retry\": true, "
                      "\"time\": 1}"); /* (a failed run before its requeue) */
    write_run_outcome("keep_live", "9-0", "{\"outcome\": \"succeeded\", \"retry\": false, "
                      "\"time\": 2}");
    struct event_base *base = event_base_new();
    ex_options opts = {.backend = EX_SLURM, .slurm = slurm_options()};
    ex_executor *x = NULL;
    char err[512], handle[64];
    CHECK(ex_executor_new(base, &opts, &x, err, sizeof err) == 0);
    /* without the live list, the later folder wins (test_attach_takes_later_run) */
    attached_handle(x, "keep_live", "slurm:7", handle, sizeof handle);
    CHECK_MSG(!strcmp(handle, "slurm:9"), "handle %s", handle);
    char **handles = NULL;
    long *trials = NULL;
    size_t n = 0;
    int killed = 0;
    CHECK_MSG(ex_recover(x, &handles, &trials, &n, &killed, err, sizeof err) == 0, "%s", err);
    CHECK_INT_EQ(n, 1);
    ex_strv_free(handles);
    free(trials);
    attached_handle(x, "keep_live", "slurm:7", handle, sizeof handle);
    CHECK_MSG(!strcmp(handle, "slurm:7"), "handle %s", handle);
    ex_executor_free(x);

    /* ids wrapped: the stored job 5 ran after the folder of job 9000 was made */
    fake_reset(0);
    write_run_outcome("keep_wrap", "5-0", "{\"outcome\": \"failed\", \"retry\": true, "
                      "\"time\": 2}");
    write_run_outcome("keep_wrap", "9000-0", "{\"outcome\": \"succeeded\", \"retry\": "
                      "false, \"time\": 1}");
    snprintf(mk, sizeof mk, "touch -d '2 hours ago' '%s/keep_wrap/slurm/9000-0'", g_root);
    CHECK(system(mk) == 0);
    CHECK(ex_executor_new(base, &opts, &x, err, sizeof err) == 0);
    attached_handle(x, "keep_wrap", "slurm:5", handle, sizeof handle);
    CHECK_MSG(!strcmp(handle, "slurm:5"), "handle %s", handle);
    ex_executor_free(x);
    event_base_free(base);
}

/* Slurm requeues the job once it runs: the second run is counted as a re-run of the
 * job, stored, and its files are read. */
static void requeue_once(outcome *o, double elapsed) {
    if (o->hook_state == 0 && strstr(o->events, "chief:0 started")) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "scontrol requeue %s", job_id(o));
        if (system(cmd) != 0) fprintf(stderr, "scontrol requeue failed\n");
        o->hook_state = 1;
    }
}

static void test_requeue_counts_as_rerun(void) {
    fake_reset(1);
    job_case jc = {.script = "[ \"$SLURM_RESTART_COUNT\" = 1 ] && exit 0; sleep 30",
                   .restarts = 5, .retries = 3, .hook = requeue_once};
    int attempts = 0, restarts = 0;
    outcome o = run_job("requeue", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(attempts, 2);
    CHECK_STR_CONTAINS(o.events, "job retrying: Slurm requeued job");
    CHECK_INT_EQ(o.handles, 2); /* the new count was handed out to be stored */
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 1);
    /* with no retries left, a requeue fails the trial */
    fake_reset(1);
    job_case none = {.script = "[ \"$SLURM_RESTART_COUNT\" = 1 ] && exit 0; sleep 30",
                     .restarts = 5, .retries = 0, .hook = requeue_once};
    o = run_job("requeue0", &none, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_STR_CONTAINS(o.error, "requeued job");
    CHECK_STR_CONTAINS(o.error, "the job was run 2 times");
}

/* sbatch queues the job but its answer is lost (a timed-out socket): the job is found
 * by its name, not submitted twice. */
static void test_lost_sbatch_answer(void) {
    fake_reset(1);
    fake_write("sbatch_lie", "");
    job_case jc = {.script = "exit 0", .restarts = 5, .retries = 3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("lost_answer", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 1);
    CHECK_INT_EQ(attempts, 1);
    CHECK_STR_CONTAINS(o.events, "found by its name after sbatch's answer was lost");
}

/* The id the fake's next sbatch gives (its jobs are numbered across the tests). */
static long fake_next_id(void) {
    char buf[32];
    fake_read("next_id", buf, sizeof buf);
    return buf[0] ? atol(buf) : 1;
}

/* The state the fake has for job id ("" when it has none). */
static void fake_job_state(long id, char *buf, size_t len) {
    char name[64];
    snprintf(name, sizeof name, "jobs/%ld", id);
    fake_read(name, buf, len);
}

/* A copy of the trial's job is live in the queue when sbatch's answer is lost (an
 * earlier lost answer queued it): the look adopts the newest job and cancels the copy,
 * saying so; a scancel that fails is told with the command to run. */
static void test_lost_answer_cancels_copies(void) {
    for (int fail = 0; fail < 3; fail++) { /* 2: the copy was gone already */
        fake_reset(1);
        long copy = fake_next_id();
        char name[64], next[32];
        snprintf(name, sizeof name, "jobs/%ld", copy);
        char mk[1400];
        snprintf(mk, sizeof mk, "mkdir -p '%s/jobs'", g_fake);
        CHECK(system(mk) == 0);
        fake_write(name, "PENDING|None|fake1|tuner.test.s.3");
        snprintf(next, sizeof next, "%ld", copy + 1);
        fake_write("next_id", next);
        fake_write("sbatch_lie", "");
        char gone[128];
        snprintf(gone, sizeof gone, "scancel: error: Kill job error on job id %ld: Invalid job "
                 "id specified", copy);
        if (fail) fake_write("scancel_fail", fail == 1 ? "scancel: error: Socket timed out on "
                                                         "send/recv" : gone);
        /* the job outlasts the scancel, whose answer is told as it comes */
        job_case jc = {.script = "sleep 2", .restarts = 5, .retries = 3, .retry_seconds = 0.2};
        int attempts = 0, restarts = 0;
        outcome o = run_job(fail == 1 ? "copies_fail" : fail ? "copies_gone" : "copies", &jc,
                            &attempts, &restarts);
        CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
        CHECK_INT_EQ(fake_calls("sbatch", NULL), 1);
        CHECK_INT_EQ(attempts, 1);
        char want[256], state[128];
        snprintf(want, sizeof want, "Slurm job %ld (attempt 1, found by its name", copy + 1);
        CHECK_STR_CONTAINS(o.events, want);
        fake_job_state(copy, state, sizeof state);
        if (fail != 1) {
            snprintf(want, sizeof want, "cancelled Slurm job %ld, another live job of the trial "
                     "(a second submission)", copy);
            CHECK_STR_CONTAINS(o.events, want);
            if (!fail) CHECK_MSG(strstr(state, "CANCELLED"), "job %ld: %s", copy, state);
            CHECK(!strstr(o.events, "could not cancel"));
        } else {
            snprintf(want, sizeof want, "could not cancel Slurm job %ld, another live job of the "
                     "trial (a second submission): scancel: error: Socket timed out on "
                     "send/recv; `scancel %ld` [notice]", copy, copy);
            CHECK_STR_CONTAINS(o.events, want);
            CHECK_MSG(strstr(state, "PENDING"), "job %ld: %s", copy, state);
        }
    }
}

/* sbatch's answer is lost and the look for the job (squeue --name) fails too: the
 * tuner waits and looks again rather than submitting a second copy of the trial. */
static void test_lookup_failing_waits(void) {
    fake_reset(1);
    fake_write("sbatch_lie", "");
    fake_write("squeue_name_fail", "squeue: error: Socket timed out on send/recv operation\n");
    job_case jc = {.script = "exit 0", .restarts = 5, .retries = 3, .retry_seconds = 0.2};
    int attempts = 0, restarts = 0;
    outcome o = run_job("lookup_fails", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 1); /* never a second copy */
    CHECK_INT_EQ(attempts, 1);
    CHECK_STR_CONTAINS(o.events, "cannot look for a job that sbatch may have queued (squeue: "
                                 "squeue: error: Socket timed out");
    CHECK_STR_CONTAINS(o.events, "found by its name after sbatch's answer was lost");
}

/* squeue lists the job with a node list longer than any fixed line: the job is seen,
 * not taken for gone (and re-run beside itself). */
static void test_long_node_list(void) {
    fake_reset(1);
    char list[4096];
    size_t n = (size_t)snprintf(list, sizeof list, "gpu-node[");
    for (int i = 1; i < 800 && n + 8 < sizeof list; i += 2)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%04d", i > 1 ? "," : "", i);
    snprintf(list + n, sizeof list - n, "]\n");
    fake_write("nodelist", list);
    job_case jc = {.script = "sleep 2", .restarts = 5, .retries = 3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("longnodes", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(attempts, 1);
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 1);
    CHECK_STR_CONTAINS(o.events, "running on gpu-node[0001,0003");
    CHECK(!strstr(o.events, "no longer knows"));
}

/* sbatch exits 0 but prints a site's notice before the id: the id is the last line
 * that is one; an answer with no id at all may still have queued the job, which is
 * then found by its name, not submitted twice nor taken for a refusal. */
static void test_sbatch_prints_more_than_the_id(void) {
    fake_reset(1);
    fake_write("sbatch_stdout", "NOTICE: project quota 80% used\n%j;cluster1\n");
    job_case jc = {.script = "exit 0", .restarts = 5, .retries = 3, .retry_seconds = 0.2};
    int attempts = 0, restarts = 0;
    outcome o = run_job("notice", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 1);
    CHECK_INT_EQ(attempts, 1);
    fake_reset(1);
    fake_write("sbatch_stdout", "NOTICE: your job was queued\n");
    o = run_job("noid", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 1);
    CHECK_INT_EQ(attempts, 1);
    CHECK_STR_CONTAINS(o.events, "sbatch exited 0 but printed no job id: 'NOTICE: your job was "
                                 "queued'");
    CHECK_STR_CONTAINS(o.events, "found by its name after sbatch's answer was lost");
}

/* A stop while the tuner waits to try sbatch again: the lost answer queued a job,
 * which is looked for and cancelled, not left in the queue. */
static void stop_in_backoff(outcome *o, double elapsed) {
    if (o->hook_state == 0 && strstr(o->events, "trying again in")) {
        ex_job_stop(o->job, EX_STOPPED, "interrupted");
        o->hook_state = 1;
    }
}

static void test_stop_during_backoff(void) {
    fake_reset(0); /* the job stays PENDING */
    fake_write("sbatch_lie", "");
    long id = fake_next_id();
    job_case jc = {.script = "exit 0", .restarts = 5, .retries = 3, .retry_seconds = 5,
                   .hook = stop_in_backoff};
    int attempts = 0, restarts = 0;
    outcome o = run_job("stop_backoff", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_STOPPED, "outcome %d: %s; %s", o.outcome, o.error, o.events);
    char state[128];
    fake_job_state(id, state, sizeof state);
    CHECK_MSG(strstr(state, "CANCELLED"), "job %ld: %s; %s", id, state, o.events);
    CHECK_STR_CONTAINS(o.events, "looking for a job that sbatch may have queued");
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 1);
    /* the look fails too: every job of the trial's name is cancelled */
    fake_reset(0);
    fake_write("sbatch_lie", "");
    fake_write("squeue_name_fail", "squeue: error: Socket timed out on send/recv operation\n");
    id = fake_next_id();
    o = run_job("stop_backoff2", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_STOPPED, "outcome %d: %s; %s", o.outcome, o.error, o.events);
    fake_job_state(id, state, sizeof state);
    CHECK_MSG(strstr(state, "CANCELLED"), "job %ld: %s; %s", id, state, o.events);
    CHECK(fake_called_with("scancel --name=tuner.test.s.3"));
}

/* The controller does not answer for minutes: after ten tries the study is stopped
 * with the trial to run again (EX_REFUSED), not failed for good with a hint about
 * the spec; a look that keeps failing counts against the same tries. */
static void test_controller_outage_stops_study(void) {
    fake_reset(1);
    char lines[4096] = "";
    for (int i = 0; i < 10; i++)
        strcat(lines, "sbatch: error: Batch job submission failed: Unable to contact slurm "
                      "controller (connect failure)\n");
    fake_write("sbatch_fail", lines);
    job_case jc = {.script = "exit 0", .restarts = 5, .retries = 3, .retry_seconds = 0.01};
    int attempts = 0, restarts = 0;
    outcome o = run_job("outage_sbatch", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_REFUSED, "outcome %d: %s", o.outcome, o.error);
    CHECK_STR_CONTAINS(o.error, "the Slurm controller did not answer (sbatch: error: Batch job "
                                "submission failed: Unable to contact slurm controller");
    CHECK_STR_CONTAINS(o.error, "hint: `tuner resume s` when `scontrol ping` works");
    CHECK(!strstr(o.error, "refused"));
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 10);
    CHECK_INT_EQ(attempts, 0);
    fake_reset(0);
    fake_write("sbatch_lie", "");
    lines[0] = '\0';
    for (int i = 0; i < 10; i++)
        strcat(lines, "squeue: error: Unable to contact slurm controller (connect failure)\n");
    fake_write("squeue_name_fail", lines);
    o = run_job("outage_squeue", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_REFUSED, "outcome %d: %s", o.outcome, o.error);
    CHECK_STR_CONTAINS(o.error, "the Slurm controller did not answer (squeue: error: Unable");
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 1);
}

/* The job pends with a reason it never leaves by waiting (a timeLimit above the
 * partition's MaxTime where Slurm does not refuse it at submission): the job is
 * cancelled and the study stops (EX_REFUSED) with the reason and a hint, rather than
 * the trial waiting forever; a reason that passes (Resources) is waited out. */
static const char *g_pend_reason;
static void pend_with_reason(outcome *o, double elapsed) {
    if (o->hook_state == 0 && o->handle[0] && strstr(o->events, "job queued: Slurm job")) {
        char name[64], text[128];
        snprintf(name, sizeof name, "jobs/%s", job_id(o));
        snprintf(text, sizeof text, "PENDING|%s|(null)|tuner.test.s.3", g_pend_reason);
        fake_write(name, text);
        o->hook_state = 1;
    }
}

static void test_hopeless_pending_reason(void) {
    fake_reset(0);
    g_pend_reason = "PartitionTimeLimit";
    job_case jc = {.script = "exit 0", .restarts = 5, .retries = 3, .hook = pend_with_reason};
    int attempts = 0, restarts = 0;
    outcome o = run_job("hopeless", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_REFUSED, "outcome %d: %s; %s", o.outcome, o.error, o.events);
    CHECK_STR_CONTAINS(o.error, "can never start: it pends with reason PartitionTimeLimit");
    CHECK_STR_CONTAINS(o.error, "hint: executor.timeLimit is above the partition's MaxTime");
    char state[128];
    fake_job_state(atol(job_id(&o)), state, sizeof state);
    CHECK_STR_CONTAINS(state, "CANCELLED"); /* nothing left in the queue */
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 1);
}

/* A job held (a reason that someone must act on, but that can clear) is waited for, and
 * its reason is a notice, which the tuner prints; the routine wait before it is only
 * stored. The hook stops the job once the notice came. */
static void stop_after_notice(outcome *o, double elapsed) {
    pend_with_reason(o, elapsed);
    if (o->hook_state == 1 && strstr(o->events, "[notice]")) {
        ex_job_stop(o->job, EX_STOPPED, "the test saw the notice");
        o->hook_state = 2;
    }
}

static void test_held_job_is_a_notice(void) {
    fake_reset(0);
    g_pend_reason = "JobHeldUser";
    job_case jc = {.script = "exit 0", .restarts = 5, .retries = 3, .hook = stop_after_notice};
    int attempts = 0, restarts = 0;
    outcome o = run_job("held", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_STOPPED, "outcome %d: %s; %s", o.outcome, o.error, o.events);
    char want[128];
    snprintf(want, sizeof want, "job queued: Slurm job %s PENDING (JobHeldUser) [notice]; ",
             job_id(&o));
    CHECK_STR_CONTAINS(o.events, want);
    snprintf(want, sizeof want, "job queued: Slurm job %s PENDING (None); ", job_id(&o));
    CHECK_STR_CONTAINS(o.events, want); /* the routine wait: stored, not told */
}

/* Slurm's commands run in a process group of their own: a Ctrl-C at the terminal
 * (SIGINT to the tuner's group) never reaches an sbatch half way. */
static void test_commands_own_process_group(void) {
    char *out = NULL;
    char *argv[] = {"sh", "-c", "ps -o pgid= -p $$", NULL};
    int status = ex__cmd_sync(argv, 10, &out, NULL);
    CHECK_INT_EQ(status, 0);
    long pgid = out ? atol(out) : 0;
    CHECK_MSG(pgid > 0 && pgid != (long)getpgrp(), "the command ran in group %ld", pgid);
    free(out);
}

/* A command past its timeout is killed with what it started: a wrapper script on PATH
 * that runs the real command as its child (no exec) would otherwise leave that child
 * holding the pipes, and the command in flight long after its timeout. */
typedef struct timed_cmd {
    int done, status;
    char out[64], err[256];
} timed_cmd;

static void on_timed_cmd(void *ctx, int status, const char *out, const char *errtext) {
    timed_cmd *t = ctx;
    t->done = 1;
    t->status = status;
    snprintf(t->out, sizeof t->out, "%s", out);
    snprintf(t->err, sizeof t->err, "%s", errtext);
}

/* Whether process pid has ended (gone, or a zombie not yet reaped by its new parent),
 * waiting up to 3 s for it. */
static int process_ended(long pid) {
    for (int i = 0; i < 30; i++) {
        char path[64], stat[256] = "";
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f) return 1;
        size_t n = fread(stat, 1, sizeof stat - 1, f);
        stat[n] = '\0';
        fclose(f);
        const char *end = strrchr(stat, ')'); /* "PID (COMM) STATE ..." */
        if (end && end[1] == ' ' && end[2] == 'Z') return 1;
        struct timespec pause = {0, 100000000};
        nanosleep(&pause, NULL);
    }
    return 0;
}

static void test_command_timeout_kills_its_group(void) {
    /* sh forks sleep and waits for it: killing sh alone leaves sleep holding stdout */
    char *hangs[] = {"sh", "-c", "sleep 30 & echo $!; wait; echo late", NULL};
    double t0 = now_s();
    char *out = NULL, *errtext = NULL;
    int status = ex__cmd_sync(hangs, 1, &out, &errtext);
    CHECK_MSG(now_s() - t0 < 10, "the command took %.1f s past its timeout of 1 s", now_s() - t0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    CHECK_STR_CONTAINS(errtext ? errtext : "", "timed out after 1s");
    CHECK_MSG(out && atol(out) > 0 && process_ended(atol(out)), "the command's child %s lives on",
              out ? out : "?");
    free(out);
    free(errtext);

    struct event_base *base = event_base_new();
    ex_options opts = {.backend = EX_SLURM, .slurm = slurm_options()};
    ex_executor *x = NULL;
    char err[1024] = "";
    CHECK_MSG(ex_executor_new(base, &opts, &x, err, sizeof err) == 0, "%s", err);
    if (!x) {
        event_base_free(base);
        return;
    }
    /* on the loop: a command that hangs, and one that exits at once but leaves a child
     * behind with its stdout */
    char *leaves[] = {"sh", "-c", "sleep 30 & echo 5", NULL};
    timed_cmd a = {0}, b = {0};
    t0 = now_s();
    ex__cmd_run(x, hangs, 1, on_timed_cmd, &a);
    ex__cmd_run(x, leaves, 1, on_timed_cmd, &b);
    while ((!a.done || !b.done) && now_s() - t0 < 20) event_base_loop(base, EVLOOP_ONCE);
    CHECK_MSG(a.done && b.done && now_s() - t0 < 10, "the commands took %.1f s (done: %d %d)",
              now_s() - t0, a.done, b.done);
    CHECK(WIFSIGNALED(a.status) && WTERMSIG(a.status) == SIGKILL);
    CHECK_STR_CONTAINS(a.err, "timed out after 1s");
    CHECK_MSG(atol(a.out) > 0 && process_ended(atol(a.out)), "the command's child %s lives on", a.out);
    CHECK_INT_EQ(b.status, 0); /* it did answer: the answer stands */
    CHECK_MSG(!strcmp(b.out, "5\n"), "it printed '%s'", b.out);
    ex_executor_free(x);
    event_base_free(base);
}

/* The tuner itself runs inside a Slurm job (a batch script, salloc): what Slurm set to
 * describe that job is not passed on to the trial's job through sbatch. An inherited
 * SLURM_RESTART_COUNT, which Slurm sets on a requeued run only, made the launcher write
 * to the files of run 1 and the tuner count a requeue, failing every trial with
 * maxJobRetries 0. Slurm's settings (SLURM_CONF) stay. */
/* Runs job `name` (its script writes one line to its folder's file "env") with the
 * nvars variables vars set in this process's environment meanwhile; that line into
 * line (len bytes; "" when there is none), the attempts into *attempts. */
static outcome run_with_vars(const char *name, const char *const (*vars)[2], size_t nvars,
                             const char *script, int *attempts, char *line, size_t len) {
    for (size_t i = 0; i < nvars; i++) setenv(vars[i][0], vars[i][1], 1);
    job_case jc = {.script = script, .restarts = 0, .retries = 0};
    int restarts = 0;
    *attempts = 0;
    outcome o = run_job(name, &jc, attempts, &restarts);
    for (size_t i = 0; i < nvars; i++) unsetenv(vars[i][0]);
    char path[1400];
    snprintf(path, sizeof path, "%s/%s/env", g_root, name);
    line[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(line, (int)len, f)) line[0] = '\0';
        fclose(f);
    }
    return o;
}

static void test_tuner_inside_a_job(void) {
    fake_reset(1);
    static const char *const vars[][2] = {
        {"SLURM_JOB_ID", "15"}, {"SLURM_JOBID", "15"}, {"SLURM_RESTART_COUNT", "1"},
        {"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_STEP_RESV_PORTS", "1-2"},
        {"SLURM_MEM_PER_NODE", "100"}, {"SLURM_NTASKS_HET_GROUP_0", "3"},
        {"SLURM_CONF", "/kept/slurm.conf"}};
    int attempts;
    char buf[128];
    outcome o = run_with_vars("inside_a_job", vars, sizeof vars / sizeof *vars,
                              "echo \"$SLURM_RESTART_COUNT|$SLURM_ARRAY_TASK_ID|"
                              "$SLURM_STEP_RESV_PORTS|$SLURM_MEM_PER_NODE|"
                              "$SLURM_NTASKS_HET_GROUP_0|$SLURM_CONF\" > \"${1#--job-dir=}/env\"; "
                              "exit 0",
                              &attempts, buf, sizeof buf);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(attempts, 1);
    CHECK_MSG(!strcmp(buf, "|||||/kept/slurm.conf\n"), "the replica saw '%s'", buf);
}

/* A job folder with what the batch script and sbatch's --output patterns must carry
 * through: a space, quotes, $(...), %j and %% (which Slurm expands, left to right). */
static void test_odd_job_dir(void) {
    fake_reset(1);
    job_case jc = {.script = "echo \"{\\\"acc\\\": 0.5}\" > \"$CLOUD_ML_HP_METRIC_FILE\"; exit 0",
                   .restarts = 0, .retries = 0};
    int attempts = 0, restarts = 0;
    outcome o = run_job("odd a'b\"$(x)%j%%#", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_INT_EQ(attempts, 1);
}

/* sbatch's variables that would take the job out of the tuner's hands (held, an array,
 * another cluster, no environment, ...) do not reach sbatch; its other settings do. */
static void test_sbatch_variables_left_out(void) {
    fake_reset(1);
    static const char *const vars[][2] = {{"SBATCH_HOLD", "1"}, {"SBATCH_ARRAY_INX", "1-3"},
                                          {"SBATCH_CLUSTERS", "other"},
                                          {"SBATCH_EXPORT", "NONE"},
                                          {"SBATCH_PARTITION", "kept"}};
    int attempts;
    char buf[128];
    outcome o = run_with_vars("sbatch_vars", vars, sizeof vars / sizeof *vars,
                              "echo \"$SBATCH_HOLD|$SBATCH_ARRAY_INX|$SBATCH_CLUSTERS|"
                              "$SBATCH_EXPORT|$SBATCH_PARTITION\" > \"${1#--job-dir=}/env\"; "
                              "exit 0",
                              &attempts, buf, sizeof buf);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    CHECK_MSG(!strcmp(buf, "||||kept\n"), "the replica saw '%s'", buf);
}

static void test_recover_and_cancel_strays(void) {
    fake_reset(0);
    CHECK(system("true") == 0);
    char mk[700];
    snprintf(mk, sizeof mk, "mkdir -p '%s/jobs'", g_fake);
    CHECK(system(mk) == 0);
    fake_write("jobs/20", "RUNNING|None|n1|tuner.test.s.4");
    fake_write("jobs/21", "PENDING|Resources|(null)|tuner.test.s.5");
    fake_write("jobs/22", "COMPLETED|None|n1|tuner.test.s.6");  /* over: not live */
    fake_write("jobs/23", "RUNNING|None|n1|tuner.other.s.4");   /* another study */
    fake_write("jobs/24", "RUNNING|None|n1|tuner.test.s.x");    /* not a trial */
    struct event_base *base = event_base_new();
    ex_options opts = {.backend = EX_SLURM, .slurm = slurm_options()};
    ex_executor *x = NULL;
    char err[512];
    CHECK(ex_executor_new(base, &opts, &x, err, sizeof err) == 0);
    char **handles = NULL;
    long *trials = NULL;
    size_t n = 0;
    int killed = 0;
    CHECK_MSG(ex_recover(x, &handles, &trials, &n, &killed, err, sizeof err) == 0, "%s", err);
    CHECK_INT_EQ(n, 2);
    if (n == 2) {
        CHECK(!strcmp(handles[0], "slurm:20") && trials[0] == 4);
        CHECK(!strcmp(handles[1], "slurm:21") && trials[1] == 5);
    }
    CHECK_INT_EQ(ex_cancel_handle(x, "slurm:21", err, sizeof err), 0);
    char state[128];
    fake_read("jobs/21", state, sizeof state);
    CHECK_STR_CONTAINS(state, "CANCELLED");
    CHECK(ex_cancel_handle(x, "local:1", err, sizeof err) != 0);
    ex_strv_free(handles);
    free(trials);
    /* squeue failing: an error that says what to do */
    fake_write("squeue_fail", "slurm_load_jobs error: Unable to contact slurm controller\n");
    CHECK(ex_recover(x, &handles, &trials, &n, &killed, err, sizeof err) != 0);
    CHECK_STR_CONTAINS(err, "cannot list the study's Slurm jobs");
    CHECK_STR_CONTAINS(err, "scontrol ping");
    ex_executor_free(x);
    event_base_free(base);
}

/* A uid with no passwd entry (a container's user): resume lists that uid's jobs
 * (--user=UID), not root's. Needs root to become such a user; skipped otherwise. */
static void test_recover_user_without_name(void) {
    if (getuid() != 0) {
        printf("skipped test_recover_user_without_name: not root\n");
        return;
    }
    uid_t uid = 61000;
    while (getpwuid(uid) && uid < 62000) uid++;
    fake_reset(0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "chmod 0777 '%s' && touch '%s/calls' && chmod 0666 '%s/calls'",
             g_fake, g_fake, g_fake);
    CHECK(system(cmd) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) { /* the tuner as that user */
        if (setgid(uid) != 0 || setuid(uid) != 0) _exit(3);
        struct event_base *base = event_base_new();
        ex_options opts = {.backend = EX_SLURM, .slurm = slurm_options()};
        ex_executor *x = NULL;
        char err[512];
        char **handles = NULL;
        long *trials = NULL;
        size_t n = 0;
        int killed = 0;
        if (ex_executor_new(base, &opts, &x, err, sizeof err) != 0) _exit(4);
        int rc = ex_recover(x, &handles, &trials, &n, &killed, err, sizeof err);
        _exit(rc == 0 ? 0 : 5);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    char want[64];
    snprintf(want, sizeof want, "--user=%lu", (unsigned long)uid);
    CHECK_MSG(fake_called_with(want), "squeue was not asked for %s", want);
    CHECK(!fake_called_with("--user=root"));
}

/* A one-replica job of "sleep 30" of trial 9 of study s, started on a fresh executor
 * and run for run_s seconds, by when Slurm has given it a job id (o.handle): the
 * set-up of the tests that stop a live job. */
typedef struct live_job {
    struct event_base *base;
    ex_executor *x;
    char dir[700];
    ex_job_config cfg;
    outcome o;
    ex_callbacks cb;
    ex_job *j;
} live_job;

static const char *const live_argv[] = {"/bin/sh", "-c", "sleep 30", "sh"};

/* Runs l's event loop for run_s seconds. */
static void live_run(live_job *l, double run_s) {
    struct timeval tv = {(time_t)run_s, (suseconds_t)((run_s - (double)(time_t)run_s) * 1e6)};
    event_base_loopexit(l->base, &tv);
    event_base_dispatch(l->base);
}

static void live_job_start(live_job *l, const char *name, double run_s) {
    memset(l, 0, sizeof *l);
    fake_reset(1);
    l->base = event_base_new();
    ex_options opts = {.backend = EX_SLURM, .slurm = slurm_options()};
    char err[512];
    CHECK_MSG(ex_executor_new(l->base, &opts, &l->x, err, sizeof err) == 0, "%s", err);
    snprintf(l->dir, sizeof l->dir, "%s/%s", g_root, name);
    l->cfg = (ex_job_config){.study = "s", .trial = "9", .argv = live_argv, .argc = 4,
                             .job_dir = l->dir, .use_chief_name = 1, .count = {1},
                             .grace_seconds = 1, .poll_seconds = 0.1};
    l->o.base = l->base;
    l->cb = (ex_callbacks){on_event, on_measurement, on_finished, on_handle};
    CHECK_MSG(ex_job_start(l->x, &l->cfg, &l->cb, &l->o, &l->j, err, sizeof err) == 0, "%s", err);
    live_run(l, run_s);
    CHECK(l->o.handle[0]);
}

static void live_job_end(live_job *l) {
    ex_executor_free(l->x);
    event_base_free(l->base);
}

/* Slurm's state of the job of l->o's handle, into state. */
static void live_job_state(live_job *l, char *state, size_t len) {
    char name[64];
    snprintf(name, sizeof name, "jobs/%s", job_id(&l->o));
    fake_read(name, state, len);
}

static void test_free_live_job_cancels_it(void) {
    live_job l;
    live_job_start(&l, "freelive", 2.5);
    ex_job_free(l.j); /* still running: cancelled, no orphan left */
    char state[128];
    live_job_state(&l, state, sizeof state);
    CHECK_STR_CONTAINS(state, "CANCELLED");
    live_job_end(&l);
}

/* A second Ctrl-C's one scancel fails (the controller away): ex_abort_all says which
 * jobs may still run and how to cancel them, and freeing the job says it may still
 * run, rather than both taking the cancel for done. */
static void test_abort_scancel_fails(void) {
    live_job l;
    live_job_start(&l, "abortfail", 1.5);
    fake_write("scancel_fail", "scancel: error: Kill job error on job id: Socket timed out on "
                               "send/recv operation\n");
    char err[2048];
    int rc = ex_abort_all(l.x, err, sizeof err);
    CHECK(rc != 0);
    char want[256], state[128];
    snprintf(want, sizeof want, "scancel failed: jobs %s may still run; `tuner resume s` or "
             "`scancel %s` (scancel: error: Kill job error", job_id(&l.o), job_id(&l.o));
    CHECK_STR_CONTAINS(err, want);
    CHECK_INT_EQ(ex_job_free(l.j), TN_EIO); /* its job may still run */
    live_job_state(&l, state, sizeof state);
    CHECK_STR_CONTAINS(state, "RUNNING");
    CHECK(system("scancel $(ls \"$FAKE_SLURM_DIR/jobs\")") == 0); /* no orphan left */
    /* when scancel works, nothing is said and nothing may run */
    CHECK(ex_job_start(l.x, &l.cfg, &l.cb, &l.o, &l.j, err, sizeof err) == 0);
    l.o.handle[0] = '\0';
    live_run(&l, 1.5);
    CHECK(l.o.handle[0]);
    CHECK_INT_EQ(ex_abort_all(l.x, err, sizeof err), 0);
    CHECK_INT_EQ(ex_job_free(l.j), 0);
    live_job_state(&l, state, sizeof state);
    CHECK_STR_CONTAINS(state, "CANCELLED");
    live_job_end(&l);
}

static void test_check_against_sinfo(void) {
    fake_reset(0);
    const char *argv[] = {"/bin/true"};
    ex_job_config cfg = {.argv = argv, .argc = 1, .use_chief_name = 1, .count = {1, 2, 1, 0},
                         .cores = {1, 1, 1, 1}};
    ex_options o = {.backend = EX_SLURM, .slurm = slurm_options()};
    char err[1024];
    fake_write("sinfo", "debug*|4|4000|(null)|3\nbig|64|512000|gpu:a100:4(S:0-1)|2\n");
    CHECK_MSG(ex_check(&o, &cfg, err, sizeof err) == 0, "%s", err);
    o.slurm.partition = "nope";
    CHECK(ex_check(&o, &cfg, err, sizeof err) == TN_EINVAL);
    CHECK_STR_CONTAINS(err, "Slurm has no partition 'nope' (it has: debug, big)");
    o.slurm.partition = NULL; /* the default */
    cfg.cores[TF_WORKER] = 8;
    CHECK(ex_check(&o, &cfg, err, sizeof err) == TN_EINVAL);
    CHECK_STR_CONTAINS(err, "a worker replica asks for 8 cores, but the largest node of Slurm "
                            "partition debug has 4");
    o.slurm.partition = "big";
    CHECK_MSG(ex_check(&o, &cfg, err, sizeof err) == 0, "%s", err);
    /* a list, as sbatch takes it (the job starts in whichever can run it first): each
     * must be there, and the job fit the largest node of any (it was refused whole) */
    o.slurm.partition = "debug,big";
    CHECK_MSG(ex_check(&o, &cfg, err, sizeof err) == 0, "%s", err);
    o.slurm.partition = "debug,bog";
    CHECK(ex_check(&o, &cfg, err, sizeof err) == TN_EINVAL);
    CHECK_STR_CONTAINS(err, "Slurm has no partition 'bog' (it has: debug, big)");
    o.slurm.partition = "debug,";
    CHECK(ex_check(&o, &cfg, err, sizeof err) == TN_EINVAL);
    CHECK_STR_CONTAINS(err, "Slurm has no partition '' (it has: debug, big)");
    o.slurm.partition = "big";
    cfg.gpus[TF_CHIEF] = 8;
    CHECK(ex_check(&o, &cfg, err, sizeof err) == TN_EINVAL);
    CHECK_STR_CONTAINS(err, "a chief replica asks for 8 GPUs, but the largest node");
    cfg.gpus[TF_CHIEF] = 4;
    cfg.memory_mb[TF_PS] = 600000;
    CHECK(ex_check(&o, &cfg, err, sizeof err) == TN_EINVAL);
    CHECK_STR_CONTAINS(err, "a ps replica asks for 600000 MiB");
    cfg.memory_mb[TF_PS] = 0;
    /* three different shapes: a heterogeneous job of 3 components on 2 nodes */
    CHECK(ex_check(&o, &cfg, err, sizeof err) == TN_EINVAL);
    CHECK_STR_CONTAINS(err, "3 components");
    cfg.gpus[TF_CHIEF] = 0;
    cfg.cores[TF_WORKER] = 1;
    o.slurm.partition = "debug";
    cfg.gpus[TF_WORKER] = 1;
    CHECK(ex_check(&o, &cfg, err, sizeof err) == TN_EINVAL);
    CHECK_STR_CONTAINS(err, "no node of Slurm partition debug has GPUs");
    cfg.gpus[TF_WORKER] = 0;
    fake_write("sinfo", "debug|4|4000|(null)|3\n");
    o.slurm.partition = NULL;
    CHECK(ex_check(&o, &cfg, err, sizeof err) == TN_EINVAL);
    CHECK_STR_CONTAINS(err, "no default partition");
    fake_write("sinfo_fail", "slurm_load_partitions: Unable to contact slurm controller "
                             "(connect failure)\n");
    CHECK(ex_check(&o, &cfg, err, sizeof err) == TN_EINVAL);
    CHECK_STR_CONTAINS(err, "cannot reach the Slurm controller");
    CHECK_STR_CONTAINS(err, "Unable to contact slurm controller");
    CHECK_STR_CONTAINS(err, "scontrol ping");
    fake_remove("sinfo_fail");
    /* the launcher must be there */
    o.slurm.launcher = "/no/such/tuner-launch";
    CHECK(ex_check(&o, &cfg, err, sizeof err) == TN_EINVAL);
    CHECK_STR_CONTAINS(err, "tuner-launch");
    /* no Slurm commands on PATH */
    o.slurm = slurm_options();
    const char *path = getenv("PATH");
    char *saved = path ? strdup(path) : NULL;
    setenv("PATH", "/nonexistent", 1);
    CHECK(ex_check(&o, &cfg, err, sizeof err) == TN_EINVAL);
    CHECK_STR_CONTAINS(err, "needs sbatch, which is not on PATH");
    struct event_base *base = event_base_new();
    ex_executor *x = NULL;
    CHECK(ex_executor_new(base, &o, &x, err, sizeof err) == TN_EINVAL && x == NULL);
    event_base_free(base);
    if (saved) setenv("PATH", saved, 1);
    free(saved);
}

/* The launcher on its own: usage, a broken description, a rendezvous that never
 * completes. */
static void test_launcher_errors(void) {
    char cmd[8192], out[4096];
    snprintf(cmd, sizeof cmd, "'%s' --help", g_launcher);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    CHECK(p && pclose(p) == 0);
    CHECK_STR_CONTAINS(out, "usage: tuner-launch job");
    snprintf(cmd, sizeof cmd, "'%s' bogus 2>&1", g_launcher);
    p = popen(cmd, "r");
    n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    CHECK(p && WEXITSTATUS(pclose(p)) == 2);
    /* a job description that is not JSON */
    char bad[700];
    snprintf(bad, sizeof bad, "%s/bad.json", g_root);
    FILE *f = fopen(bad, "w");
    if (f) {
        fputs("{not json", f);
        fclose(f);
    }
    snprintf(cmd, sizeof cmd, "SLURM_JOB_ID=1 '%s' job '%s' 2>&1", g_launcher, bad);
    p = popen(cmd, "r");
    n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    CHECK(p && WEXITSTATUS(pclose(p)) == 2);
    CHECK_STR_CONTAINS(out, "cannot read the job description");
    CHECK_STR_CONTAINS(out, "bad.json");
    /* replica mode outside srun */
    snprintf(cmd, sizeof cmd, "env -u SLURM_PROCID '%s' replica '%s' /tmp chief 2>&1", g_launcher,
             bad);
    p = popen(cmd, "r");
    n = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[n] = '\0';
    CHECK(p && WEXITSTATUS(pclose(p)) == 2);
}

static void test_rendezvous_timeout(void) {
    /* a worker whose peers never come: it gives up and decides the run */
    char dir[700], json[800], run[800], cmd[8192];
    snprintf(dir, sizeof dir, "%s/lonely", g_root);
    snprintf(json, sizeof json, "%s/job.json", dir);
    snprintf(run, sizeof run, "%s/slurm/1-0", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", run);
    CHECK(system(cmd) == 0);
    FILE *f = fopen(json, "w");
    if (f) {
        fprintf(f, "{\"version\": 1, \"study\": \"s\", \"trial\": \"1\", \"metric_tag\": \"acc\", "
                   "\"job_dir\": \"%s\", \"argv\": [\"/bin/true\"], \"job\": null, "
                   "\"use_chief_name\": true, \"count\": [1, 1, 0, 0], \"cores\": [1, 1, 1, 1], "
                   "\"gpus\": [0, 0, 0, 0], \"memory_mb\": [0, 0, 0, 0], "
                   "\"het_group\": [-1, -1, -1, -1], \"max_replica_restarts\": 1, "
                   "\"grace_seconds\": 1, \"rendezvous_seconds\": 0.5}\n", dir);
        fclose(f);
    }
    snprintf(cmd, sizeof cmd, "SLURM_PROCID=0 SLURM_JOB_ID=1 '%s' replica '%s' '%s' worker",
             g_launcher, json, run);
    CHECK(system(cmd) == 0);
    char path[1400], buf[1024] = "";
    snprintf(path, sizeof path, "%s/outcome", run);
    f = fopen(path, "r");
    CHECK(f != NULL);
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    CHECK_STR_CONTAINS(buf, "\"outcome\":\"failed\"");
    CHECK_STR_CONTAINS(buf, "\"retry\":true");
    CHECK_STR_CONTAINS(buf, "worker:0 waited 0.5s for its peers");
}

/* The launcher fails a replica that repeats its failure (the same last lines, nothing
 * reported) at once, with the traceback; it remembers the failure across the Slurm
 * job's re-runs; restarts back off and re-runs wait in the queue (--begin). */
#define TRACEBACK "echo 'Traceback (most recent call last):'; echo \"NameError: name 'x' is " \
                  "not defined\" >&2; exit 1"

static void test_repeated_failure_is_permanent(void) {
    fake_reset(1);
    job_case jc = {.script = TRACEBACK, .restarts = 5, .retries = 3, .fail_on_repeat = 1,
                   .backoff = 0.2};
    int attempts = 0, restarts = 0;
    outcome o = run_job("repeat", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_INT_EQ(attempts, 1);
    CHECK_INT_EQ(restarts, 1);
    CHECK_STR_CONTAINS(o.error, "replica chief:0 failed twice the same way (exit status 1, the "
                                "same last lines) before reporting anything");
    CHECK_STR_CONTAINS(o.error, "ends:\n    Traceback (most recent call last):\n    NameError: "
                                "name 'x' is not defined");
    CHECK_STR_CONTAINS(o.events, "chief:0 restarted: restart 1 of 5 after exit status 1, in 0.2 s");

    /* no restarts in place: the repeat comes in the job's second run */
    fake_reset(1);
    job_case rerun = {.script = TRACEBACK, .restarts = 0, .retries = 3, .fail_on_repeat = 1,
                      .backoff = 1};
    o = run_job("repeat_rerun", &rerun, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_INT_EQ(attempts, 2);
    CHECK_STR_CONTAINS(o.error, "failed twice the same way");
    char calls[1 << 16];
    fake_read("calls", calls, sizeof calls);
    CHECK_STR_CONTAINS(calls, "--begin=now+1 "); /* the re-run waits out its backoff */
    CHECK_INT_EQ(fake_calls("sbatch", NULL), 2);

    /* the rule off: every restart, and the tail in the message that ends it */
    fake_reset(1);
    job_case off = {.script = TRACEBACK, .restarts = 1, .retries = 0};
    o = run_job("repeat_off", &off, &attempts, &restarts);
    CHECK_INT_EQ(restarts, 1);
    CHECK_STR_CONTAINS(o.error, "replica chief:0 failed 2 times (last: exit status 1); the job "
                                "was run 1 time; its log (");
    CHECK_STR_CONTAINS(o.error, "NameError: name 'x' is not defined");
}

/* The spec's env reaches every replica through job.json and the launcher. */
static void test_env(void) {
    fake_reset(1);
    const char *const env[] = {"MODE=from the spec", NULL};
    job_case jc = {.script = "echo \"$MODE\" > \"${1#--job-dir=}/env-$SLURM_PROCID\"; " SERVE,
                   .workers = 1, .restarts = 0, .env = env};
    int attempts = 0, restarts = 0;
    outcome o = run_job("env", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%s; %s", o.error, o.events);
    char path[1400], buf[128] = "";
    snprintf(path, sizeof path, "%s/env/env-0", g_root);
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
        fclose(f);
    }
    CHECK_MSG(!strcmp(buf, "from the spec\n"), "the replica saw '%s'", buf);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_slurm TUNER_LAUNCH FAKESLURM_PY\n");
        return 2;
    }
    char fake_py[PATH_MAX];
    if (!realpath(argv[1], g_launcher) || !realpath(argv[2], fake_py)) {
        fprintf(stderr, "test_slurm: cannot find %s or %s\n", argv[1], argv[2]);
        return 2;
    }
    const char *base = getenv("TN_TEST_TMP");
    snprintf(g_root, sizeof g_root, "%s/test_slurm.%ld", base && *base ? base : "/tmp",
             (long)getpid());
    snprintf(g_fake, sizeof g_fake, "%s/fake", g_root);
    char bin[700], cmd[12288];
    snprintf(bin, sizeof bin, "%s/bin", g_root);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' '%s' && for c in sbatch squeue scancel sinfo srun; "
             "do ln -sf '%s' '%s'/$c; done; ln -sf '%s' '%s'/scontrol", g_fake, bin, fake_py, bin,
             fake_py, bin);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot set up %s\n", g_root);
        return 1;
    }
    const char *path = getenv("PATH");
    snprintf(cmd, sizeof cmd, "%s:%s", bin, path ? path : "/usr/bin:/bin");
    setenv("PATH", cmd, 1);
    setenv("FAKE_SLURM_DIR", g_fake, 1);
    RUN(test_happy_path);
    RUN(test_squeue_rate);
    RUN(test_heterogeneous_components);
    RUN(test_memory_per_cpu);
    RUN(test_cuda_visible_devices);
    RUN(test_restart_in_place);
    RUN(test_records_carry_their_run);
    RUN(test_gives_up_then_fails);
    RUN(test_permanent_error);
    RUN(test_sigchld_ignored);
    RUN(test_program_not_found);
    RUN(test_cancelled_outside_is_rerun);
    RUN(test_slurm_ends_job);
    RUN(test_sbatch_refuses);
    RUN(test_sbatch_fails_for_a_while);
    RUN(test_squeue_outage);
    RUN(test_forgotten_job_is_rerun);
    RUN(test_stop_cancels);
    RUN(test_scancel_failing_is_retried);
    RUN(test_trial_timeout);
    RUN(test_trial_timeout_not_in_backoff);
    RUN(test_attach_to_finished_job);
    RUN(test_attach_takes_later_run);
    RUN(test_attach_keeps_stored);
    RUN(test_requeue_counts_as_rerun);
    RUN(test_lost_sbatch_answer);
    RUN(test_lost_answer_cancels_copies);
    RUN(test_lookup_failing_waits);
    RUN(test_long_node_list);
    RUN(test_sbatch_prints_more_than_the_id);
    RUN(test_stop_during_backoff);
    RUN(test_controller_outage_stops_study);
    RUN(test_hopeless_pending_reason);
    RUN(test_held_job_is_a_notice);
    RUN(test_commands_own_process_group);
    RUN(test_command_timeout_kills_its_group);
    RUN(test_tuner_inside_a_job);
    RUN(test_sbatch_variables_left_out);
    RUN(test_odd_job_dir);
    RUN(test_recover_and_cancel_strays);
    RUN(test_recover_user_without_name);
    RUN(test_free_live_job_cancels_it);
    RUN(test_abort_scancel_fails);
    RUN(test_check_against_sinfo);
    RUN(test_launcher_errors);
    RUN(test_rendezvous_timeout);
    RUN(test_repeated_failure_is_permanent);
    RUN(test_env);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    if (!check_failures_ && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_root);
    return check_summary();
}
