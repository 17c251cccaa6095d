/*
 * test_executor.c — the executor against real processes: small /bin/sh replicas that
 * succeed, fail n times, fail always, cannot be executed, exit 2, ignore SIGTERM,
 * outlive the chief, hang past the timeout, and report metrics (each record with the
 * run of its replica that wrote it, across restarts and re-runs). Each case runs an
 * event loop until the job reports its outcome (or a safety timeout fails the test).
 */
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/status.h"
#include "common/tfconfig.h"
#include "executor/executor.h"
#include "tests/check.h"
#include "tests/executor/ex_test.h"

static char g_root[512];

/* A local executor on base (every test's). */
static ex_executor *local_executor(struct event_base *base, int gpus) {
    ex_options o = {.backend = EX_LOCAL, .gpus = gpus, .oversubscribe = 1};
    ex_executor *x = NULL;
    char err[256];
    CHECK_MSG(ex_executor_new(base, &o, &x, err, sizeof err) == 0, "%s", err);
    return x;
}

typedef struct job_case {
    const char *script;     /* /bin/sh -c SCRIPT; $1 is --job-dir=DIR */
    int workers, ps, evaluators;
    int restarts, retries;
    double timeout, grace;
    int stop_after_ms;      /* > 0: ex_job_stop after this long */
    double backoff;         /* restart_backoff (restart_backoff_max: 10 s) */
    int fail_on_repeat;
    const char *const *env; /* the chief's env */
} job_case;

/* Runs one job to its end; returns the attempts and restarts through the pointers. */
static outcome run_job(const char *name, const job_case *jc, int *attempts, int *restarts) {
    outcome o;
    memset(&o, 0, sizeof o);
    o.base = event_base_new();
    ex_executor *x = local_executor(o.base, 0);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/%s", g_root, name);
    const char *argv[] = {"/bin/sh", "-c", jc->script, "sh"};
    ex_job_config cfg = {.study = "exec_test", .trial = "7", .argv = argv, .argc = 4,
                         .job_dir = dir, .metric_tag = "accuracy", .use_chief_name = 1,
                         .count = {1, jc->workers, jc->ps, jc->evaluators},
                         .cores = {1, 1, 1, 1},
                         .max_replica_restarts = jc->restarts, .max_job_retries = jc->retries,
                         .timeout_seconds = jc->timeout,
                         .grace_seconds = jc->grace > 0 ? jc->grace : 0.3,
                         .poll_seconds = 0.05, .restart_backoff = jc->backoff,
                         .restart_backoff_max = 10, .fail_on_repeat = jc->fail_on_repeat,
                         .env = {jc->env}};
    ex_callbacks cb = {on_event, on_measurement, on_finished, on_handle};
    char err[512];
    ex_job *j = NULL;
    CHECK_MSG(ex_job_start(x, &cfg, &cb, &o, &j, err, sizeof err) == 0 && j, "%s: %s", name, err);
    struct event *safety = arm_safety(&o, 30);
    if (j && jc->stop_after_ms > 0) {
        struct timeval wait = {0, jc->stop_after_ms * 1000};
        event_base_loopexit(o.base, &wait);
        event_base_dispatch(o.base);
        ex_job_stop(j, EX_STOPPED, "asked to stop");
    }
    if (j && !o.finished) event_base_dispatch(o.base);
    job_done(j, attempts, restarts);
    event_free(safety);
    ex_executor_free(x);
    event_base_free(o.base);
    return o;
}

static int cmp_replica_strings(const void *a, const void *b) {
    return ex_replica_cmp(*(const char *const *)a, *(const char *const *)b);
}

/* Replica names, their order and a trial's files: the one place they are defined. */
static void test_replica_names_and_files(void) {
    int type = -1, index = -1;
    CHECK(ex_replica_parse("worker:12", &type, &index) == 0 && type == TF_WORKER && index == 12);
    CHECK(ex_replica_parse("master-0", &type, &index) == 0 && type == TF_CHIEF && index == 0);
    CHECK(ex_replica_parse("evaluator-3", &type, &index) == 0 && type == TF_EVALUATOR &&
          index == 3);
    static const char *const bad[] = {"chief",   "chief:",     "chief:x",      "chief:-1",
                                      ":0",      "workers:1",  "Chief:0",      "chief:0/..",
                                      "",        "ps:1234567890", "a-very-long-type-name:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(ex_replica_parse(bad[i], &type, &index) == TN_EINVAL, "'%s'", bad[i]);
    CHECK(ex_replica_is_chief("chief:0") && ex_replica_is_chief("master-0"));
    CHECK(!ex_replica_is_chief("worker:0") && !ex_replica_is_chief("chiefly:0"));
    const char *names[] = {"zzz", "evaluator:0", "ps-0", "worker:10", "worker-2", "master:0"};
    qsort(names, sizeof names / sizeof names[0], sizeof names[0], cmp_replica_strings);
    const char *want[] = {"master:0", "worker-2", "worker:10", "ps-0", "evaluator:0", "zzz"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK_MSG(!strcmp(names[i], want[i]), "position %zu: %s, want %s", i, names[i], want[i]);
    char *dir = ex_trial_dir("/runs/s", 7), *logs = ex_logs_dir(dir), *metrics = ex_metrics_dir(dir);
    char *log = ex_log_path(dir, "worker", 1), *metric = ex_metric_path(dir, "ps", 0);
    CHECK(!strcmp(dir, "/runs/s/7") && !strcmp(logs, "/runs/s/7/logs") &&
          !strcmp(metrics, "/runs/s/7/metrics"));
    CHECK(!strcmp(log, "/runs/s/7/logs/worker-1.log") &&
          !strcmp(metric, "/runs/s/7/metrics/ps-0.metrics"));
    free(dir), free(logs), free(metrics), free(log), free(metric);
}

static void test_chief_succeeds_and_reports(void) {
    job_case jc = {.script =
                       "printf '{\"global_step\": \"5\", \"accuracy\": \"0.75\", \"timestamp\": 1.5}\\n'"
                       " > \"$CLOUD_ML_HP_METRIC_FILE\"; echo hello from $1; exit 0",
                   .restarts = 5, .retries = 3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("ok", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.finished, 1);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    CHECK_INT_EQ(o.measurements, 1);
    CHECK_NEAR(o.last_accuracy, 0.75, 0, 0);
    CHECK_INT_EQ(attempts, 1);
    CHECK_INT_EQ(restarts, 0);
    CHECK_STR_CONTAINS(o.events, "chief:0 started");
    CHECK_STR_CONTAINS(o.events, "job running");
    /* stdout went to the log, and the program got --job-dir */
    char path[700], buf[256] = "";
    snprintf(path, sizeof path, "%s/ok/logs/chief-0.log", g_root);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (f) {
        CHECK(fgets(buf, sizeof buf, f) != NULL);
        fclose(f);
    }
    CHECK_STR_CONTAINS(buf, "hello from --job-dir=");
    CHECK_STR_CONTAINS(buf, "/ok");
}

static void test_fails_twice_then_succeeds(void) {
    /* A counter file in the job dir: fail on the first two runs. */
    job_case jc = {.script = "d=${1#--job-dir=}; n=$(cat $d/count 2>/dev/null || echo 0);"
                             " echo $((n+1)) > $d/count; [ $n -ge 2 ]",
                   .restarts = 5, .retries = 3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("twice", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    CHECK_INT_EQ(restarts, 2);
    CHECK_INT_EQ(attempts, 1);
    CHECK_STR_CONTAINS(o.events, "chief:0 restarted");
}

/* Each record comes with the run that wrote it. The first run reports step 5, then
 * step 6 without a newline (as the Python library leaves its last line), and fails;
 * the restarted run overwrites the file (as the library does) with its own step 5 and
 * succeeds. Read at the first run's exit, the file still holds both of its records,
 * the unfinished line included, which no later read could see. */
static void test_records_carry_their_run(void) {
    job_case jc = {.script = "d=${1#--job-dir=}; f=$CLOUD_ML_HP_METRIC_FILE;"
                             " if [ ! -e $d/ran ]; then touch $d/ran;"
                             "  printf '{\"global_step\": \"5\", \"accuracy\": \"0.2\"}\\n"
                             "{\"global_step\": \"6\", \"accuracy\": \"0.3\"}' > $f; exit 1; fi;"
                             " sleep 0.2;"
                             " printf '{\"global_step\": \"5\", \"accuracy\": \"0.7\"}\\n' > $f",
                   .restarts = 5, .retries = 3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("runs", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    CHECK_INT_EQ(restarts, 1);
    CHECK_MSG(!strcmp(o.runs, "5/1=0.2 6/1=0.3 5/2=0.7 "), "records: %s", o.runs);
    /* a re-run of the job counts on: runs 1 and 2 fail (restarts 1), run 3 reports */
    job_case rerun = {.script = "d=${1#--job-dir=}; n=$(cat $d/count 2>/dev/null || echo 0);"
                                " echo $((n+1)) > $d/count;"
                                " printf '{\"global_step\": \"%s\", \"accuracy\": \"0.5\"}\\n' $n"
                                " >> $CLOUD_ML_HP_METRIC_FILE; [ $n -ge 2 ]",
                      .restarts = 1, .retries = 1};
    o = run_job("rerun_runs", &rerun, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    CHECK_INT_EQ(attempts, 2);
    CHECK_MSG(!strcmp(o.runs, "0/1=0.5 1/2=0.5 2/3=0.5 "), "records: %s", o.runs);
}

static void test_always_fails(void) {
    job_case jc = {.script = "exit 1", .restarts = 2, .retries = 1};
    int attempts = 0, restarts = 0;
    outcome o = run_job("always", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_INT_EQ(attempts, 2);       /* 1 + 1 retry */
    CHECK_INT_EQ(restarts, 4);       /* 2 per attempt */
    CHECK_STR_CONTAINS(o.error, "replica chief:0 failed 3 times");
    CHECK_STR_CONTAINS(o.error, "exit status 1");
    CHECK_STR_CONTAINS(o.error, "run 2 times");
    CHECK_STR_CONTAINS(o.events, "job retrying");
}

static void test_permanent_errors(void) {
    /* exit status 2: a usage error, no restart */
    job_case usage = {.script = "echo 'bad flag' >&2; exit 2", .restarts = 5, .retries = 3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("usage", &usage, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_INT_EQ(attempts, 1);
    CHECK_INT_EQ(restarts, 0);
    CHECK_STR_CONTAINS(o.error, "status 2");
    CHECK_STR_CONTAINS(o.error, "chief-0.log");
}

/* A program exec refuses: the trial fails at once (no restart can help), saying what is
 * wrong with it: missing, a directory, a script whose #! interpreter is missing (exec
 * says ENOENT for that too). */
static void program_fails(const char *name, const char *program, const char *want) {
    outcome o;
    memset(&o, 0, sizeof o);
    o.base = event_base_new();
    ex_executor *x = local_executor(o.base, 0);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/%s", g_root, name);
    const char *argv[] = {program};
    ex_job_config cfg = {.trial = "1", .argv = argv, .argc = 1, .job_dir = dir,
                         .use_chief_name = 1, .count = {1, 1, 0, 0}, .max_replica_restarts = 5,
                         .max_job_retries = 3, .grace_seconds = 0.2, .poll_seconds = 0.05};
    ex_callbacks cb = {on_event, on_measurement, on_finished, on_handle};
    char err[512];
    ex_job *j = NULL;
    CHECK(ex_job_start(x, &cfg, &cb, &o, &j, err, sizeof err) == 0 && j);
    if (j) {
        if (!o.finished) event_base_dispatch(o.base);
        CHECK_INT_EQ(o.outcome, EX_FAILED);
        char head[700];
        snprintf(head, sizeof head, "cannot run %s: %s", program, want);
        CHECK_STR_CONTAINS(o.error, head);
        CHECK_INT_EQ(ex_job_restarts(j), 0);
        ex_job_free(j);
    }
    ex_executor_free(x);
    event_base_free(o.base);
}

static void test_program_not_found(void) {
    program_fails("notfound", "/no/such/program", "not found");
    char dir[600], script[600], why[512];
    snprintf(dir, sizeof dir, "%s/adir", g_root);
    CHECK(mkdir(dir, 0755) == 0);
    program_fails("isdir", dir, "a directory, not a program");
    snprintf(script, sizeof script, "%s/badinterp.sh", g_root);
    FILE *f = fopen(script, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("#!/no/such/interp -x\necho hi\n", f);
        fclose(f);
    }
    CHECK(chmod(script, 0755) == 0);
    program_fails("badinterp", script,
                  "its interpreter /no/such/interp (its #! line) is not found or not executable");
    /* ex_program_problem, as the tuner's preflight asks it */
    CHECK(ex_program_problem("sh", NULL, why, sizeof why) == 0);
    CHECK(ex_program_problem("/bin/sh", NULL, why, sizeof why) == 0);
    CHECK(ex_program_problem("no-such-program-xyz", NULL, why, sizeof why) != 0);
    CHECK_STR_CONTAINS(why, "not found on PATH");
    CHECK(ex_program_problem(dir, NULL, why, sizeof why) != 0);
    CHECK_STR_CONTAINS(why, "a directory");
    snprintf(script, sizeof script, "%s/notexec.sh", g_root);
    f = fopen(script, "w");
    if (f) fclose(f);
    CHECK(chmod(script, 0644) == 0);
    CHECK(ex_program_problem(script, NULL, why, sizeof why) != 0);
    CHECK_STR_CONTAINS(why, "not executable");
    /* Windows line endings: the kernel looks for "/bin/sh\r" */
    snprintf(script, sizeof script, "%s/crlf.sh", g_root);
    f = fopen(script, "w");
    if (f) {
        fputs("#!/bin/sh\r\necho hi\r\n", f);
        fclose(f);
    }
    CHECK(chmod(script, 0755) == 0);
    CHECK(ex_program_problem(script, NULL, why, sizeof why) != 0);
    CHECK_STR_CONTAINS(why, "its #! line ends in a carriage return");
    /* the PATH given (the replicas', which the spec's env may set), searched on past a
     * hit whose interpreter is missing, as execvp does */
    char d1[600], d2[600], twin[700], paths[1300];
    snprintf(d1, sizeof d1, "%s/path1", g_root);
    snprintf(d2, sizeof d2, "%s/path2", g_root);
    CHECK(mkdir(d1, 0755) == 0 && mkdir(d2, 0755) == 0);
    const char *heads[] = {"#!/no/such/interp\n", "#!/bin/sh\nexit 0\n"};
    const char *dirs[] = {d1, d2};
    for (int i = 0; i < 2; i++) {
        snprintf(twin, sizeof twin, "%s/twin-xyz", dirs[i]);
        f = fopen(twin, "w");
        if (f) {
            fputs(heads[i], f);
            fclose(f);
        }
        CHECK(chmod(twin, 0755) == 0);
    }
    snprintf(paths, sizeof paths, "%s:%s", d1, d2);
    CHECK(ex_program_problem("twin-xyz", paths, why, sizeof why) == 0);
    CHECK(ex_program_problem("twin-xyz", d2, why, sizeof why) == 0);
    CHECK(ex_program_problem("twin-xyz", NULL, why, sizeof why) != 0); /* not on ours */
    CHECK(ex_program_problem("twin-xyz", d1, why, sizeof why) != 0);
    CHECK_STR_CONTAINS(why, "its interpreter /no/such/interp");
}

static void test_chief_done_workers_stopped(void) {
    /* Workers and ps would run for a minute; the chief finishes at once. The worker
     * script traps TERM and records it. */
    job_case jc = {.script = "case \"$TF_CONFIG\" in *'\"type\":\"chief\"'*) sleep 0.3; exit 0;; esac;"
                             " d=${1#--job-dir=}; trap 'echo term >> $d/terms; exit 0' TERM;"
                             " sleep 60 & wait",
                   .workers = 2, .ps = 1, .restarts = 5, .retries = 3, .grace = 5};
    int attempts = 0, restarts = 0;
    outcome o = run_job("chiefdone", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    CHECK_INT_EQ(restarts, 0);
    char path[700];
    snprintf(path, sizeof path, "%s/chiefdone/terms", g_root);
    FILE *f = fopen(path, "r");
    int terms = 0;
    char line[64];
    while (f && fgets(line, sizeof line, f)) terms++;
    if (f) fclose(f);
    CHECK_INT_EQ(terms, 3); /* both workers and the ps got SIGTERM */
}

/* The replicas' ports: distinct, and below the kernel's range of ephemeral ports (where
 * there is room), so that no replica's outgoing connection can take a peer's port
 * before the peer binds it. The chief writes the cluster it was given. */
static void test_ports_below_ephemeral(void) {
    job_case jc = {.script = "case \"$TF_CONFIG\" in *'\"type\":\"chief\"'*) "
                             "echo \"$TF_CONFIG\" > ${1#--job-dir=}/tf; exit 0;; esac; sleep 60",
                   .workers = 2, .ps = 1, .evaluators = 1, .grace = 0.3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("ports", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    char path[700], tf[4096] = "";
    snprintf(path, sizeof path, "%s/ports/tf", g_root);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f && fgets(tf, sizeof tf, f), "no TF_CONFIG in %s", path);
    if (f) fclose(f);
    int lo = tf_ephemeral_port_low(), ports[8], n = 0;
    for (const char *p = tf; (p = strstr(p, "127.0.0.1:")) && n < 8; p++)
        ports[n++] = atoi(p + strlen("127.0.0.1:"));
    CHECK_MSG(n == 4, "%d addresses in %s (chief, 2 workers, ps; the evaluator has none)", n,
              tf);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < i; k++) CHECK_MSG(ports[i] != ports[k], "port %d twice", ports[i]);
        if (lo - TF_PORTS_LOWEST >= 1000)
            CHECK_MSG(ports[i] >= TF_PORTS_LOWEST && ports[i] < lo, "port %d not in [%d, %d)",
                      ports[i], TF_PORTS_LOWEST, lo);
    }
}

static void test_sigkill_after_grace(void) {
    job_case jc = {.script = "case \"$TF_CONFIG\" in *'\"type\":\"chief\"'*) exit 0;; esac;"
                             " trap '' TERM; sleep 60",
                   .workers = 1, .restarts = 0, .retries = 0, .grace = 0.3};
    int attempts = 0, restarts = 0;
    outcome o = run_job("stubborn", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    CHECK_STR_CONTAINS(o.events, "worker:0 exited");
    CHECK_STR_CONTAINS(o.events, "chief:0 exited: exit status 0 [exit 0];");
    /* how the run ended travels as data, not only in the sentence */
    CHECK_MSG(strstr(o.events, "worker:0 exited: killed by signal 9 (Killed) [signal 9];") ||
                  strstr(o.events, "worker:0 exited: killed by signal 15 (Terminated) [signal 15];"),
              "%s", o.events);
    CHECK_STR_CONTAINS(o.events, "job stopping");
}

static void test_timeout(void) {
    job_case jc = {.script = "sleep 60", .restarts = 5, .retries = 3, .timeout = 0.4};
    int attempts = 0, restarts = 0;
    outcome o = run_job("timeout", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_STR_CONTAINS(o.error, "timed out after 0.4s");
}

/* The trial timeout still applies to the job's later attempts. */
static void test_timeout_after_retry(void) {
    job_case jc = {.script = "d=${1#--job-dir=}; [ -e $d/ran ] || { touch $d/ran; exit 1; }; sleep 30",
                   .restarts = 0, .retries = 1, .timeout = 1.5};
    int attempts = 0, restarts = 0;
    outcome o = run_job("timeout_retry", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_INT_EQ(attempts, 2);
    CHECK_STR_CONTAINS(o.error, "timed out after 1.5s");
    CHECK_INT_EQ(o.bad_times, 0);
}

/* The trial timeout firing while the job stops, its replicas slow to go (they ignore
 * SIGTERM and wait for the grace period's SIGKILL): the stop's outcome stands, whether
 * the chief succeeded or the job was asked to stop; only a stop to run the job again
 * fails instead, and the job is not run again. */
static void test_timeout_while_stopping(void) {
    /* (each side waits for the other's trap to be set: a SIGTERM before it would end
     * the replica at once, and the stop with it) */
    job_case ok = {.script = "d=${1#--job-dir=}; case \"$TF_CONFIG\" in *'\"type\":\"chief\"'*) "
                             "until [ -e $d/trapped ]; do sleep 0.01; done; exit 0;; esac;"
                             " trap '' TERM; touch $d/trapped; sleep 60",
                   .workers = 1, .timeout = 0.6, .grace = 1.5};
    int attempts = 0, restarts = 0;
    outcome o = run_job("timeout_stop_ok", &ok, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    CHECK_MSG(o.error[0] == '\0', "%s", o.error);
    CHECK_STR_CONTAINS(o.events, "grace period of 1.5s over: SIGKILL");

    job_case asked = {.script = "trap '' TERM; sleep 60", .timeout = 0.6, .grace = 1.5,
                      .stop_after_ms = 200};
    o = run_job("timeout_stop_asked", &asked, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_STOPPED);
    CHECK_MSG(!strcmp(o.error, "asked to stop"), "%s", o.error);

    /* the worker fails at once with no restarts left: the job stops to run again */
    job_case retry = {.script = "d=${1#--job-dir=}; case \"$TF_CONFIG\" in *'\"type\":\"worker\"'*) "
                                "until [ -e $d/trapped ]; do sleep 0.01; done; exit 1;; esac;"
                                " trap '' TERM; touch $d/trapped; sleep 60",
                      .workers = 1, .restarts = 0, .retries = 2, .timeout = 0.6, .grace = 1.5};
    o = run_job("timeout_stop_retry", &retry, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_INT_EQ(attempts, 1);
    CHECK_STR_CONTAINS(o.error, "the trial timed out after 0.6s while its job stopped to run "
                                "again (replica worker:0 failed 1 time");
}

/* The first line (with its newline) of g_root/name into buf; "" when there is none. */
static void first_line(const char *name, char *buf, size_t len) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", g_root, name);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(buf, (int)len, f)) buf[0] = '\0';
        fclose(f);
    }
}

/* Whether process pid runs (a zombie waiting for its reaper does not). */
static int alive(pid_t pid) {
    char path[64], buf[256] = "";
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* "pid (comm) STATE ..." */
    return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

/* What a replica leaves behind in its process group (a data loader, `sleep &`) is gone
 * when the replica is: the chief exits 0 leaving a child that would write on. */
static void test_leftover_children_killed(void) {
    job_case jc = {.script = "d=${1#--job-dir=}; (sleep 2; echo late > $d/late) & echo $! > $d/child; "
                             "exit 0",
                   .restarts = 0, .retries = 0};
    int attempts = 0, restarts = 0;
    outcome o = run_job("leftover", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    char path[700], buf[32];
    first_line("leftover/child", buf, sizeof buf);
    long child = atol(buf);
    CHECK(child > 0);
    struct timespec ts = {0, 200000000};
    nanosleep(&ts, NULL);
    CHECK_MSG(child <= 0 || !alive((pid_t)child), "the chief's child %ld still runs", child);
    ts.tv_sec = 2;
    nanosleep(&ts, NULL);
    snprintf(path, sizeof path, "%s/leftover/late", g_root);
    CHECK_MSG(access(path, F_OK) != 0, "a leftover child wrote into the trial's folder");
}

/* A child that left its process group and its environment (env -i setsid: nothing of
 * the trial's variables is left) is gone when its replica exits: it was the replica's
 * child (a subreaper), then the executor's. So is what it started in turn. */
static void test_env_i_setsid_child_killed(void) {
    job_case jc = {.script = "d=${1#--job-dir=}; env -i setsid sleep 300 </dev/null >/dev/null "
                             "2>&1 & echo $! > $d/child; sleep 0.3; exit 0"};
    int attempts = 0, restarts = 0;
    outcome o = run_job("envi", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    CHECK_STR_CONTAINS(o.events, "killed 1 process the job left behind");
    char buf[32];
    first_line("envi/child", buf, sizeof buf);
    long child = atol(buf);
    CHECK(child > 0);
    CHECK_MSG(child <= 0 || !alive((pid_t)child), "the env -i setsid child %ld still runs",
              child);

    /* a shell in a session of its own that waits on its child, and the child: the shell
     * is killed first, then its child, an orphan of ours by then */
    job_case deep = {.script = "d=${1#--job-dir=}; env -i D=$d setsid /bin/sh -c 'sleep 301 & "
                               "echo $! > $D/grandchild; wait' </dev/null >/dev/null 2>&1 & "
                               "echo $! > $d/child; sleep 0.3; exit 0"};
    o = run_job("envi_deep", &deep, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    /* both, in one call as a rule; the grandchild in a later round where the shell is
     * slow to go (not counted then) */
    CHECK_STR_CONTAINS(o.events, "the job left behind");
    long pids[2];
    const char *files[2] = {"envi_deep/child", "envi_deep/grandchild"};
    for (int i = 0; i < 2; i++) {
        first_line(files[i], buf, sizeof buf);
        pids[i] = atol(buf);
        CHECK_MSG(pids[i] > 0, "%s: no pid", files[i]);
        CHECK_MSG(pids[i] <= 0 || !alive((pid_t)pids[i]), "%s %ld still runs", files[i],
                  pids[i]);
    }
}

/* What the process had as children before its first job (a monitor started beside it:
 * `monitor & exec tuner run ...`) is no orphan of a replica: it outlives the jobs. */
static void test_inherited_child_kept(void) {
    pid_t mine = fork();
    if (mine == 0) {
        execl("/bin/sleep", "sleep", "300", (char *)NULL);
        _exit(127);
    }
    CHECK(mine > 0);
    job_case jc = {.script = "d=${1#--job-dir=}; env -i setsid sleep 300 </dev/null >/dev/null "
                             "2>&1 & echo $! > $d/child; sleep 0.3; exit 0"};
    int attempts = 0, restarts = 0;
    outcome o = run_job("inherited", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    CHECK_STR_CONTAINS(o.events, "killed 1 process the job left behind");
    CHECK_MSG(mine <= 0 || alive(mine), "the process's own child %ld was killed", (long)mine);
    if (mine > 0) {
        kill(mine, SIGKILL);
        waitpid(mine, NULL, 0);
    }
}

/* What a child the process had before leaves behind when it exits during a job (a
 * wrapper's `( helper & ); exec tuner run ...`) is adopted by the process too, and is
 * not the job's either: it was killed and blamed on the trial. */
static void test_inherited_childs_orphan_kept(void) {
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t mine = fork();
    if (mine == 0) { /* in this process's group, as a non-interactive shell's job */
        close(fds[0]);
        pid_t helper = fork();
        if (helper == 0) {
            execl("/bin/sleep", "sleep", "300", (char *)NULL);
            _exit(127);
        }
        dprintf(fds[1], "%ld\n", (long)helper);
        close(fds[1]);
        usleep(400 * 1000); /* then it leaves the helper, during the job */
        _exit(0);
    }
    close(fds[1]);
    char buf[32] = "";
    ssize_t got = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    pid_t helper = got > 0 ? (pid_t)atol(buf) : 0;
    CHECK(mine > 0 && helper > 0);
    job_case jc = {.script = "d=${1#--job-dir=}; env -i setsid sleep 300 </dev/null >/dev/null "
                             "2>&1 & sleep 1; exit 0"};
    int attempts = 0, restarts = 0;
    outcome o = run_job("inherited_orphan", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    CHECK_STR_CONTAINS(o.events, "killed 1 process the job left behind"); /* its daemon */
    CHECK_MSG(helper <= 0 || alive(helper), "the helper %ld was killed", (long)helper);
    if (helper > 0) {
        kill(helper, SIGKILL);
        waitpid(helper, NULL, 0);
    }
    if (mine > 0) waitpid(mine, NULL, 0);
}

/* A job whose replica starts a daemon that is not an orphan (its parent, a child of the
 * replica, still runs) leaves it running only until the replica exits; the chief's
 * other replicas keep theirs meanwhile: a worker's daemon lives while the worker does. */
static void test_orphans_wait_for_their_replica(void) {
    job_case jc = {.script = "d=${1#--job-dir=}; case \"$TF_CONFIG\" in *'\"type\":\"worker\"'*) "
                             "env -i setsid sleep 302 </dev/null >/dev/null 2>&1 & "
                             "echo $! > $d/worker_child.new; mv $d/worker_child.new "
                             "$d/worker_child; sleep 300;; "
                             "*) until [ -e $d/worker_child ]; do sleep 0.01; done; sleep 0.3; "
                             "p=$(cat $d/worker_child); kill -0 $p && echo alive > $d/seen; "
                             "exit 0;; esac",
                   .workers = 1, .grace = 1};
    int attempts = 0, restarts = 0;
    outcome o = run_job("envi_worker", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    char buf[32];
    first_line("envi_worker/seen", buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "alive\n"), "the worker's daemon was gone while the worker ran");
    first_line("envi_worker/worker_child", buf, sizeof buf);
    long child = atol(buf);
    CHECK(child > 0);
    CHECK_MSG(child <= 0 || !alive((pid_t)child), "the worker's daemon %ld still runs", child);
    CHECK_STR_CONTAINS(o.events, "killed 1 process the job left behind");
}

/* What an earlier tuner's replicas left running in the study's job folder (a process
 * that left its group; the tuner died, so it was nobody's orphan of ours) is found by
 * ex_recover by the variable every process of a trial inherits, wherever it lies in an
 * environment larger than a page or a fixed buffer: here after 300 KB of variables (12:
 * one string may not pass 128 KiB). */
static void test_recover_kills_large_env(void) {
    enum { NVARS = 12, VAR_LEN = 25000 };
    char dir[600];
    snprintf(dir, sizeof dir, "%s/bigenv", g_root);
    mkdir(dir, 0755);
    char *env[NVARS + 2] = {NULL};
    for (int i = 0; i < NVARS; i++) {
        env[i] = malloc(VAR_LEN + 16);
        CHECK(env[i] != NULL);
        if (!env[i]) return;
        int n = sprintf(env[i], "BIG%d=", i);
        memset(env[i] + n, 'a', VAR_LEN);
        env[i][n + VAR_LEN] = '\0';
    }
    char metric[700], other[700];
    snprintf(metric, sizeof metric, "CLOUD_ML_HP_METRIC_FILE=%s/7/metrics/chief-0.json", dir);
    env[NVARS] = metric;
    pid_t child = fork();
    if (child == 0) {
        setsid();
        char *argv[] = {"sleep", "300", NULL};
        execve("/bin/sleep", argv, env);
        _exit(127);
    }
    /* and those of other studies, which stay: another folder, and studies whose job
     * folders lie inside this one's (one named like a trial's), whose replicas a run of
     * this study killed */
    static const char *const others[] = {"-other/7/metrics/chief-0.json",
                                         "/B/1/metrics/chief-0.json",
                                         "/12/1/metrics/chief-0.json"};
    enum { NOTHERS = sizeof others / sizeof others[0] };
    pid_t bystanders[NOTHERS];
    for (int b = 0; b < NOTHERS; b++) {
        snprintf(other, sizeof other, "CLOUD_ML_HP_METRIC_FILE=%s%s", dir, others[b]);
        char *env2[] = {other, NULL};
        bystanders[b] = fork();
        if (bystanders[b] == 0) {
            setsid();
            char *argv[] = {"sleep", "300", NULL};
            execve("/bin/sleep", argv, env2);
            _exit(127);
        }
    }
    for (int i = 0; i < NVARS; i++) free(env[i]);
    CHECK(child > 0 && bystanders[0] > 0 && bystanders[1] > 0 && bystanders[2] > 0);
    for (int tries = 0; tries < 500; tries++) { /* until all have exec'd: their
                                                   environments are sleep's, not ours */
        char path[64], comm[32] = "";
        int both = 1;
        pid_t pids[1 + NOTHERS] = {child, bystanders[0], bystanders[1], bystanders[2]};
        for (int i = 0; i < 1 + NOTHERS && both; i++) {
            snprintf(path, sizeof path, "/proc/%ld/comm", (long)pids[i]);
            FILE *f = fopen(path, "r");
            both = f && fgets(comm, sizeof comm, f) && !strcmp(comm, "sleep\n");
            if (f) fclose(f);
        }
        if (both) break;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    struct event_base *base = event_base_new();
    ex_options opt = {.backend = EX_LOCAL, .oversubscribe = 1, .job_dir = dir};
    ex_executor *x = NULL;
    char err[256];
    CHECK_MSG(ex_executor_new(base, &opt, &x, err, sizeof err) == 0, "%s", err);
    char **handles = NULL;
    long *trials = NULL;
    size_t n = 0;
    int killed = -1;
    CHECK_MSG(x && ex_recover(x, &handles, &trials, &n, &killed, err, sizeof err) == 0, "%s",
              err);
    CHECK_INT_EQ(killed, 1);
    CHECK_INT_EQ((long)n, 0);
    free(handles);
    free(trials);
    int status = 0;
    if (child > 0) {
        CHECK_INT_EQ((long)waitpid(child, &status, 0), (long)child);
        CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %d", status);
    }
    for (int b = 0; b < NOTHERS; b++) {
        CHECK_MSG(bystanders[b] <= 0 || alive(bystanders[b]), "a process of %s was killed",
                  others[b]);
        if (bystanders[b] > 0) {
            kill(bystanders[b], SIGKILL);
            waitpid(bystanders[b], NULL, 0);
        }
    }
    if (x) ex_executor_free(x);
    event_base_free(base);
}

/* A job freed while it runs (the tuner's second Ctrl-C) leaves nothing running: its
 * replicas' groups are killed, and so is what left them (setsid, with an environment of
 * its own: the orphan the replica's death leaves us). */
static void test_free_running_job_kills_all(void) {
    outcome o;
    memset(&o, 0, sizeof o);
    o.base = event_base_new();
    ex_executor *x = local_executor(o.base, 0);
    char dir[600], child_path[700];
    snprintf(dir, sizeof dir, "%s/freed", g_root);
    snprintf(child_path, sizeof child_path, "%s/child", dir);
    const char *script = "d=${1#--job-dir=}; env -i setsid sleep 300 </dev/null >/dev/null 2>&1 & "
                         "echo $! > $d/child; sleep 300";
    const char *argv[] = {"/bin/sh", "-c", script, "sh"};
    ex_job_config cfg = {.study = "exec_test", .trial = "8", .argv = argv, .argc = 4,
                         .job_dir = dir, .metric_tag = "accuracy", .use_chief_name = 1,
                         .count = {1, 1, 0, 0}, .cores = {1, 1, 1, 1}, .grace_seconds = 5,
                         .poll_seconds = 0.05};
    ex_callbacks cb = {on_event, on_measurement, on_finished, on_handle};
    char err[512];
    ex_job *j = NULL;
    CHECK_MSG(ex_job_start(x, &cfg, &cb, &o, &j, err, sizeof err) == 0 && j, "%s", err);
    long child = 0;
    for (int i = 0; i < 100 && child <= 0; i++) { /* until the chief has written its pid */
        struct timeval tick = {0, 50000};
        event_base_loopexit(o.base, &tick);
        event_base_dispatch(o.base);
        char buf[32] = "";
        FILE *f = fopen(child_path, "r");
        if (f) {
            if (fgets(buf, sizeof buf, f)) child = atol(buf);
            fclose(f);
        }
    }
    CHECK(child > 0);
    ex_job_free(j);
    struct timespec ts = {0, 200000000}; /* SIGKILL is sent, not yet done */
    nanosleep(&ts, NULL);
    CHECK_MSG(child <= 0 || !alive((pid_t)child), "the setsid child %ld still runs", child);
    if (child > 0) kill((pid_t)child, SIGKILL);
    ex_executor_free(x);
    event_base_free(o.base);
}

/* A program that clears its --job-dir as it starts (logs and metrics folders
 * included) and fails once is restarted all the same: the folders are made again
 * before each start, and the restart's log and record are there. */
static void test_restart_after_job_dir_removed(void) {
    job_case jc = {.script = "d=${1#--job-dir=}; if [ ! -e $d.wiped ]; then touch $d.wiped; "
                             "rm -rf \"$d\"; exit 1; fi; echo second run; "
                             "printf '{\"accuracy\": \"0.5\"}\\n' > \"$CLOUD_ML_HP_METRIC_FILE\"",
                   .restarts = 1};
    int attempts = 0, restarts = 0;
    outcome o = run_job("wiped", &jc, &attempts, &restarts);
    CHECK_MSG(o.outcome == EX_SUCCEEDED, "%d: %s", o.outcome, o.error);
    CHECK_INT_EQ(restarts, 1);
    CHECK_INT_EQ(o.measurements, 1);
    char buf[64];
    first_line("wiped/logs/chief-0.log", buf, sizeof buf);
    CHECK_STR_CONTAINS(buf, "second run");
}

static void test_stop(void) {
    job_case jc = {.script = "sleep 60", .workers = 1, .restarts = 5, .retries = 3,
                   .stop_after_ms = 300};
    int attempts = 0, restarts = 0;
    outcome o = run_job("stop", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.finished, 1);
    CHECK_INT_EQ(o.outcome, EX_STOPPED);
    CHECK_STR_CONTAINS(o.error, "asked to stop");
    CHECK_INT_EQ(restarts, 0); /* stopping is not a failure */
}

static void test_unwritable_job_dir(void) {
    char file[600], dir[700], err[512] = "";
    snprintf(file, sizeof file, "%s/plain", g_root);
    FILE *f = fopen(file, "w");
    if (f) fclose(f);
    snprintf(dir, sizeof dir, "%s/sub", file);
    struct event_base *base = event_base_new();
    ex_executor *x = local_executor(base, 0);
    const char *argv[] = {"/bin/true"};
    ex_job_config cfg = {.trial = "1", .argv = argv, .argc = 1, .job_dir = dir, .count = {1}};
    ex_callbacks cb = {0};
    ex_job *j = NULL;
    CHECK(ex_job_start(x, &cfg, &cb, NULL, &j, err, sizeof err) < 0);
    CHECK(j == NULL);
    CHECK_STR_CONTAINS(err, "cannot create folder");
    CHECK_STR_CONTAINS(err, "plain");
    ex_executor_free(x);
    event_base_free(base);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int occurrences(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

/* A program that fails before doing anything, the same way each time (a traceback):
 * the first repeat fails the job, with the log's last lines in the error. */
#define TRACEBACK "echo 'Traceback (most recent call last):'; echo '  File \"train.py\", line 1'; " \
                  "echo \"NameError: name 'x' is not defined\" >&2; exit 1"

static void test_repeated_failure_fails_at_once(void) {
    job_case jc = {.script = TRACEBACK, .restarts = 5, .retries = 3, .fail_on_repeat = 1};
    int attempts = 0, restarts = 0;
    outcome o = run_job("repeat", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_FAILED);
    CHECK_INT_EQ(attempts, 1);
    CHECK_INT_EQ(restarts, 1);
    CHECK_STR_CONTAINS(o.error, "replica chief:0 failed twice the same way (exit status 1, the "
                                "same last lines) before reporting anything");
    CHECK_STR_CONTAINS(o.error, "/repeat/logs/chief-0.log) ends:\n    Traceback (most recent "
                                "call last):\n      File \"train.py\", line 1\n    NameError: "
                                "name 'x' is not defined");
    /* without the rule: every restart and re-run, and the tail in the last message */
    job_case off = {.script = TRACEBACK, .restarts = 1, .retries = 1};
    o = run_job("repeat_off", &off, &attempts, &restarts);
    CHECK_INT_EQ(attempts, 2);
    CHECK_INT_EQ(restarts, 2);
    CHECK_STR_CONTAINS(o.error, "failed 2 times (last: exit status 1) and the job was run 2 "
                                "times; its log (");
    CHECK_STR_CONTAINS(o.error, "NameError: name 'x' is not defined");
}

/* Not a repeat: a different last line each time, a run that reported before it failed,
 * a failure that says nothing. */
static void test_not_a_repeat(void) {
    job_case differs = {.script = "d=${1#--job-dir=}; n=$(cat $d/n 2>/dev/null || echo 0); "
                                  "echo $((n+1)) > $d/n; echo \"run $n failed\"; exit 1",
                        .restarts = 3, .retries = 0, .fail_on_repeat = 1};
    int attempts = 0, restarts = 0;
    outcome o = run_job("differs", &differs, &attempts, &restarts);
    CHECK_INT_EQ(restarts, 3);
    CHECK_STR_CONTAINS(o.error, "failed 4 times");
    CHECK_STR_CONTAINS(o.error, "ends:\n    run 3 failed");
    job_case reported = {.script = "printf '{\"accuracy\": \"0.5\"}\\n' >> "
                                   "\"$CLOUD_ML_HP_METRIC_FILE\"; echo crashed; exit 1",
                         .restarts = 2, .retries = 0, .fail_on_repeat = 1};
    o = run_job("reported", &reported, &attempts, &restarts);
    CHECK_INT_EQ(restarts, 2);
    job_case silent = {.script = "exit 1", .restarts = 2, .retries = 0, .fail_on_repeat = 1};
    o = run_job("silent", &silent, &attempts, &restarts);
    CHECK_INT_EQ(restarts, 2);
    CHECK_STR_CONTAINS(o.error, "failed 3 times (last: exit status 1) and the job was run 1 "
                                "time; see ");
}

/* Restarts and re-runs wait, doubling: 0.2 s, then 0.4 s. */
static void test_backoff(void) {
    job_case jc = {.script = "d=${1#--job-dir=}; n=$(cat $d/count 2>/dev/null || echo 0);"
                             " echo $((n+1)) > $d/count; [ $n -ge 2 ]",
                   .restarts = 5, .retries = 0, .backoff = 0.2};
    int attempts = 0, restarts = 0;
    double t0 = now_seconds();
    outcome o = run_job("backoff", &jc, &attempts, &restarts);
    double took = now_seconds() - t0;
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    CHECK_INT_EQ(restarts, 2);
    CHECK_STR_CONTAINS(o.events, "restart 1 of 5 after exit status 1, in 0.2 s");
    CHECK_STR_CONTAINS(o.events, "restart 2 of 5 after exit status 1, in 0.4 s");
    CHECK_MSG(took >= 0.6, "the job took %.3f s, less than its backoff", took);
    job_case retry = {.script = "exit 1", .restarts = 0, .retries = 1, .backoff = 0.3};
    o = run_job("retry_backoff", &retry, &attempts, &restarts);
    CHECK_INT_EQ(attempts, 2);
    CHECK_STR_CONTAINS(o.events, "re-running the job in 0.3 s (attempt 2 of 2)");
    /* a stop while a restart waits: nothing restarts after it */
    job_case stop = {.script = "exit 1", .restarts = 5, .retries = 0, .backoff = 5,
                     .stop_after_ms = 300};
    t0 = now_seconds();
    o = run_job("stop_in_backoff", &stop, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_STOPPED);
    CHECK_MSG(now_seconds() - t0 < 4, "the stop waited for the backoff");
    CHECK_INT_EQ(occurrences(o.events, "chief:0 started"), 1);
}

/* The spec's env reaches the replica, over the tuner's own environment. */
static void test_env(void) {
    const char *const env[] = {"MODE=chief only", "HOME=/nowhere", NULL};
    job_case jc = {.script = "echo \"$MODE|$HOME\" > \"${1#--job-dir=}/env\"; printf "
                             "'{\"accuracy\": \"1\"}\\n' > \"$CLOUD_ML_HP_METRIC_FILE\"",
                   .restarts = 0, .env = env};
    int attempts = 0, restarts = 0;
    outcome o = run_job("env", &jc, &attempts, &restarts);
    CHECK_INT_EQ(o.outcome, EX_SUCCEEDED);
    char buf[128];
    first_line("env/env", buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "chief only|/nowhere\n"), "the replica saw %s", buf);
}

int main(void) {
    const char *base = getenv("TN_TEST_TMP");
    snprintf(g_root, sizeof g_root, "%s/test_executor.%ld", base && *base ? base : "/tmp",
             (long)getpid());
    mkdir(g_root, 0755);
    RUN(test_replica_names_and_files);
    RUN(test_chief_succeeds_and_reports);
    RUN(test_fails_twice_then_succeeds);
    RUN(test_records_carry_their_run);
    RUN(test_always_fails);
    RUN(test_permanent_errors);
    RUN(test_program_not_found);
    RUN(test_chief_done_workers_stopped);
    RUN(test_ports_below_ephemeral);
    RUN(test_sigkill_after_grace);
    RUN(test_timeout);
    RUN(test_timeout_after_retry);
    RUN(test_timeout_while_stopping);
    RUN(test_env_i_setsid_child_killed);
    RUN(test_orphans_wait_for_their_replica);
    RUN(test_inherited_child_kept);
    RUN(test_inherited_childs_orphan_kept);
    RUN(test_recover_kills_large_env);
    RUN(test_free_running_job_kills_all);
    RUN(test_restart_after_job_dir_removed);
    RUN(test_leftover_children_killed);
    RUN(test_stop);
    RUN(test_unwritable_job_dir);
    RUN(test_repeated_failure_fails_at_once);
    RUN(test_not_a_repeat);
    RUN(test_backoff);
    RUN(test_env);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    if (!check_failures_ && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_root);
    return check_summary();
}
