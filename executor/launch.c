/*
 * launch.c — `tuner-launch`, the Slurm backend's launcher inside an allocation.
 *
 * The tuner submits each trial as a Slurm job whose batch script runs
 *   tuner-launch job JOB_DIR/slurm/job.json
 * which starts one srun step per replica type; each task of a step runs
 *   tuner-launch replica JOB_DIR/slurm/job.json RUN_DIR TYPE
 * and becomes replica TYPE:$SLURM_PROCID. A replica's launcher picks a port on its
 * node ($SLURM_STEP_RESV_PORTS when Slurm reserved some, else a free one), publishes
 * "host:port" in RUN_DIR/rv/, waits for its peers there, builds its TF_CONFIG from
 * them with real host names, and runs the program with the same contract as the
 * local backend (contract.h): argv, environment, log, metric file, and the same
 * lifecycle rules, restarts in place included. What happens goes to
 * RUN_DIR/events/TYPE-INDEX.jsonl; the run's fate (the chief succeeded, a replica
 * failed for good or used up its restarts) is written once to RUN_DIR/outcome, which
 * every launcher watches: once it exists they all stop their programs and exit, the
 * steps end, the job ends, and the tuner reads the outcome. RUN_DIR is
 * JOB_DIR/slurm/$SLURM_JOB_ID-$SLURM_RESTART_COUNT, so a run Slurm requeues starts
 * afresh. Everything travels through the job dir on the shared file system.
 * Design: docs/slurm.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/status.h"
#include "common/tfconfig.h"
#include "executor/contract.h"

extern char **environ;

#define POLL_US 100000 /* how often a launcher looks at its child and the outcome */

static volatile sig_atomic_t g_signal; /* SIGTERM, SIGINT or SIGHUP received */

static void on_signal(int sig) { g_signal = sig; }

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tuner-launch: error: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void nap(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* ---- the job description (job.json, written by the tuner's slurm.c) ---- */

typedef struct job_desc {
    json_t *doc;
    const char *path;                /* of job.json */
    const char *study, *trial, *metric_tag, *job_dir;
    char **argv;                     /* NULL-terminated, --job-dir included */
    json_t *job;                     /* TF_CONFIG's "job" (borrowed from doc), or NULL */
    int use_chief_name;
    int count[TF_NTYPES], cores[TF_NTYPES], gpus[TF_NTYPES], memory_mb[TF_NTYPES];
    int het_group[TF_NTYPES];        /* -1: not a heterogeneous job */
    int max_restarts;
    double backoff, backoff_max;     /* restart backoff (ex_backoff) */
    int fail_on_repeat;              /* a repeated identical failure fails the trial */
    char **env[TF_NTYPES];           /* the spec's env per type ("NAME=VALUE"), or NULL */
    double grace, rendezvous;
} job_desc;

static const char *str_field(json_t *doc, const char *key, const char *path) {
    const char *s = json_string_value(json_object_get(doc, key));
    if (!s) die("%s: field \"%s\" is missing or not a string", path, key);
    return s;
}

static void int_array(json_t *doc, const char *key, int *out, const char *path) {
    json_t *a = json_object_get(doc, key);
    if (!json_is_array(a) || json_array_size(a) != TF_NTYPES)
        die("%s: field \"%s\" must be an array of %d integers", path, key, TF_NTYPES);
    for (int t = 0; t < TF_NTYPES; t++) {
        json_t *v = json_array_get(a, (size_t)t);
        if (!json_is_integer(v)) die("%s: %s[%d] is not an integer", path, key, t);
        out[t] = (int)json_integer_value(v);
    }
}

static void load_job(const char *path, job_desc *d) {
    json_error_t je;
    memset(d, 0, sizeof *d);
    d->path = path;
    d->doc = json_load_file(path, 0, &je);
    if (!d->doc) die("cannot read the job description %s: %s (line %d)", path, je.text, je.line);
    if (json_integer_value(json_object_get(d->doc, "version")) != 1)
        die("%s: unknown version (this tuner-launch reads version 1; use the tuner-launch of "
            "the tuner that submitted the job)", path);
    d->study = str_field(d->doc, "study", path);
    d->trial = str_field(d->doc, "trial", path);
    d->metric_tag = str_field(d->doc, "metric_tag", path);
    d->job_dir = str_field(d->doc, "job_dir", path);
    json_t *argv = json_object_get(d->doc, "argv");
    if (!json_is_array(argv) || json_array_size(argv) == 0)
        die("%s: field \"argv\" must be a non-empty array of strings", path);
    d->argv = tn_xcalloc(json_array_size(argv) + 1, sizeof *d->argv);
    for (size_t i = 0; i < json_array_size(argv); i++) {
        const char *a = json_string_value(json_array_get(argv, i));
        if (!a) die("%s: argv[%zu] is not a string", path, i);
        d->argv[i] = (char *)a;
    }
    d->job = json_object_get(d->doc, "job");
    if (json_is_null(d->job)) d->job = NULL;
    d->use_chief_name = json_is_true(json_object_get(d->doc, "use_chief_name"));
    int_array(d->doc, "count", d->count, path);
    int_array(d->doc, "cores", d->cores, path);
    int_array(d->doc, "gpus", d->gpus, path);
    int_array(d->doc, "memory_mb", d->memory_mb, path);
    int_array(d->doc, "het_group", d->het_group, path);
    if (d->count[TF_CHIEF] != 1) die("%s: a job has exactly one chief", path);
    d->max_restarts = (int)json_integer_value(json_object_get(d->doc, "max_replica_restarts"));
    /* absent in the job.json of an older tuner: no backoff, no repeat rule, no env */
    d->backoff = json_number_value(json_object_get(d->doc, "restart_backoff"));
    d->backoff_max = json_number_value(json_object_get(d->doc, "restart_backoff_max"));
    d->fail_on_repeat = json_is_true(json_object_get(d->doc, "fail_on_repeat"));
    json_t *env = json_object_get(d->doc, "env");
    for (int t = 0; t < TF_NTYPES && env; t++) {
        json_t *list = json_array_get(env, (size_t)t);
        if (!json_is_array(list)) continue;
        d->env[t] = tn_xcalloc(json_array_size(list) + 1, sizeof *d->env[t]);
        for (size_t i = 0; i < json_array_size(list); i++) {
            const char *e = json_string_value(json_array_get(list, i));
            if (!e || !strchr(e, '=')) die("%s: env[%d][%zu] is not a NAME=VALUE string", path, t, i);
            d->env[t][i] = (char *)e;
        }
    }
    d->grace = json_number_value(json_object_get(d->doc, "grace_seconds"));
    d->rendezvous = json_number_value(json_object_get(d->doc, "rendezvous_seconds"));
    if (d->grace <= 0) d->grace = 10;
    if (d->rendezvous <= 0) d->rendezvous = 600;
}

/* ---- files of a run ---- */

/* A name for a temporary file beside path that no other launcher uses: several nodes
 * write into one shared folder, and process ids repeat across hosts. Yours to free. */
static char *temp_name(const char *path) {
    char host[256] = "host";
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "host");
    host[sizeof host - 1] = '\0';
    return tn_xasprintf("%s.%s.%ld.tmp", path, host, (long)getpid());
}

/* Writes text to path atomically (a temporary file renamed over it). */
static int write_atomic(const char *path, const char *text) {
    char *tmp = temp_name(path);
    FILE *f = fopen(tmp, "w");
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0) ok = 0;
    if (ok && rename(tmp, path) != 0) ok = 0;
    if (!ok) unlink(tmp);
    free(tmp);
    return ok ? 0 : -1;
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Writes the run's outcome unless one is there: the first decision wins (link(2) is
 * atomic, on NFS too). Returns 1 when ours was written. */
static int decide(const char *run_dir, const char *outcome, int retry, const char *error) {
    char *path = tn_xasprintf("%s/outcome", run_dir);
    char *tmp = temp_name(path);
    json_t *o = json_pack("{s:s, s:b, s:f}", "outcome", outcome, "retry", retry, "time", now());
    if (error) json_object_set_new(o, "error", json_string(error));
    int ours = 0;
    if (json_dump_file(o, tmp, JSON_COMPACT) == 0) {
        if (link(tmp, path) == 0) {
            ours = 1;
        } else if (errno != EEXIST && !exists(path)) {
            /* a file system without hard links: rename, which may replace a decision
             * made at the same moment (second best) */
            ours = rename(tmp, path) == 0;
        }
        unlink(tmp); /* gone already after a rename */
    }
    json_decref(o);
    free(tmp);
    free(path);
    return ours;
}

static int decided(const char *run_dir) {
    char *path = tn_xasprintf("%s/outcome", run_dir);
    int there = exists(path);
    free(path);
    return there;
}

/* Appends one event line to the replica's (or the job's) events file: kind EX_EV_*,
 * with how the run ended for EX_EV_EXITED ("exit_code" or "signal", when known). */
static void event(int fd, const char *kind, ex_exit exit, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void event(int fd, const char *kind, ex_exit exit, const char *fmt, ...) {
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    json_t *o = json_pack("{s:f, s:s, s:s}", "time", now(), "kind", kind, "detail", detail);
    if (exit.code >= 0) json_object_set_new(o, "exit_code", json_integer(exit.code));
    if (exit.signal > 0) json_object_set_new(o, "signal", json_integer(exit.signal));
    char *line = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!line) return;
    size_t len = strlen(line);
    char *buf = tn_xmalloc(len + 2);
    memcpy(buf, line, len);
    buf[len] = '\n';
    ssize_t w = write(fd, buf, len + 1); /* one write: the reader sees whole lines */
    (void)w;
    free(buf);
    free(line);
}

/* ---- ports and the rendezvous ---- */

/* Binds a port for this task on this node and keeps it bound (not listening) until
 * the program starts, so that no other replica of the job on this host can get the
 * same one while the addresses are exchanged. The port is one Slurm reserved for the
 * step when it did (SLURM_STEP_RESV_PORTS "A-B" or "A", the task's SLURM_LOCALID-th)
 * and it is free, else one the kernel picks. Returns the port; *fd is the socket. */
static int hold_port(int *fd) {
    const char *resv = getenv("SLURM_STEP_RESV_PORTS");
    const char *local = getenv("SLURM_LOCALID");
    int lid = local ? atoi(local) : 0, want = 0;
    if (resv && *resv) {
        int lo = 0, hi = 0, got = sscanf(resv, "%d-%d", &lo, &hi);
        if (got == 1) hi = lo;
        if (got >= 1 && lo > 0 && lid >= 0 && lo + lid <= hi && lo + lid <= 65535) want = lo + lid;
    }
    for (int attempt = want ? 0 : 1; attempt < 2; attempt++) {
        *fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (*fd < 0) die("cannot open a socket: %s", strerror(errno));
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(attempt ? 0 : want)};
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        socklen_t len = sizeof a;
        if (bind(*fd, (struct sockaddr *)&a, sizeof a) == 0 &&
            getsockname(*fd, (struct sockaddr *)&a, &len) == 0)
            return ntohs(a.sin_port);
        if (attempt) die("cannot find a free port on this node: %s", strerror(errno));
        close(*fd); /* the reserved port is taken: let the kernel pick */
    }
    return 0; /* not reached */
}

/* Waits until every replica of the cluster (chief, workers, ps) has published its
 * address, and fills c's cluster with them. Returns 0, or -1 when the run was decided
 * meanwhile or a signal came, or the wait timed out (*timed_out set). */
static int rendezvous(const job_desc *d, const char *run_dir, tf_config *c, int *timed_out) {
    double deadline = now() + d->rendezvous;
    *timed_out = 0;
    for (;;) {
        int missing = 0;
        for (int t = 0; t < TF_NCLUSTER && !missing; t++)
            for (int i = 0; i < d->count[t] && !missing; i++) {
                char *p = tn_xasprintf("%s/rv/%s-%d", run_dir, tf_type_label(t, !d->use_chief_name), i);
                missing = !exists(p);
                free(p);
            }
        if (!missing) break;
        if (g_signal || decided(run_dir)) return -1;
        if (now() > deadline) {
            *timed_out = 1;
            return -1;
        }
        nap(POLL_US);
    }
    for (int t = 0; t < TF_NCLUSTER; t++)
        for (int i = 0; i < d->count[t]; i++) {
            char *p = tn_xasprintf("%s/rv/%s-%d", run_dir, tf_type_label(t, !d->use_chief_name), i);
            char addr[512] = "";
            FILE *f = fopen(p, "r");
            if (!f || !fgets(addr, sizeof addr, f)) die("cannot read %s: %s", p, strerror(errno));
            fclose(f);
            addr[strcspn(addr, "\n")] = '\0';
            tf_config_add(c, t, addr);
            free(p);
        }
    return 0;
}

/* ---- replica mode ---- */

/* The wait status of a program whose status could not be had (waitpid failed). */
#define STATUS_LOST EX_STATUS_LOST

/* A replica's last failure, as one JSON object in path: {"status": N, "reported": B,
 * "tail": "..."}. A missing or unreadable file is no failure yet. */
static void load_failure(const char *path, ex_failure *f) {
    json_t *o = json_load_file(path, 0, NULL);
    const char *tail = json_string_value(json_object_get(o, "tail"));
    if (json_is_integer(json_object_get(o, "status")) && tail) {
        f->set = 1;
        f->status = (int)json_integer_value(json_object_get(o, "status"));
        f->reported = json_is_true(json_object_get(o, "reported"));
        f->tail = tn_xstrdup(tail);
    }
    json_decref(o);
}

static void save_failure(const char *path, const ex_failure *f) {
    char *dir = tn_xstrdup(path), err[512];
    *strrchr(dir, '/') = '\0';
    json_t *o = json_pack("{sisbss}", "status", f->status, "reported", f->reported, "tail",
                          f->tail ? f->tail : "");
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (text && tn_make_dirs(dir, err, sizeof err) == 0 && write_atomic(path, text) != 0)
        fprintf(stderr, "tuner-launch: warning: cannot write %s: %s\n", path, strerror(errno));
    free(text);
    json_decref(o);
    free(dir);
}

static int run_replica(const job_desc *d, const char *run_dir, const char *type_name) {
    int type = tf_type_parse(type_name);
    if (type < 0) die("unknown replica type '%s' (chief, master, worker, ps, evaluator)", type_name);
    const char *procid = getenv("SLURM_PROCID");
    if (!procid) die("SLURM_PROCID is not set: `tuner-launch replica` runs as a task of srun");
    int index = atoi(procid);
    if (index < 0 || index >= d->count[type])
        die("task %d of the %s step, but the job has %d %s replica%s", index, type_name,
            d->count[type], type_name, d->count[type] == 1 ? "" : "s");
    const char *tname = tf_type_label(type, !d->use_chief_name);
    char name[64], host[256] = "localhost", err[1024];
    snprintf(name, sizeof name, "%s:%d", tname, index);
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    char *dir = tn_xasprintf("%s/events", run_dir);
    if (tn_make_dirs(dir, err, sizeof err) != 0) die("%s", err);
    free(dir);
    char *events_path = tn_xasprintf("%s/events/%s-%d.jsonl", run_dir, tname, index);
    int ev = open(events_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (ev < 0) die("cannot open %s: %s", events_path, strerror(errno));
    free(events_path);

    tf_config c;
    tf_config_init(&c);
    c.master = !d->use_chief_name;
    int port_fd = -1;
    if (type < TF_NCLUSTER) { /* publish our address */
        dir = tn_xasprintf("%s/rv", run_dir);
        if (tn_make_dirs(dir, err, sizeof err) != 0) die("%s", err);
        free(dir);
        char *rv = tn_xasprintf("%s/rv/%s-%d", run_dir, tname, index);
        char *addr = tn_xasprintf("%s:%d\n", host, hold_port(&port_fd));
        if (write_atomic(rv, addr) != 0) die("cannot write %s: %s", rv, strerror(errno));
        free(addr);
        free(rv);
    }
    int timed_out;
    int met = rendezvous(d, run_dir, &c, &timed_out);
    if (port_fd >= 0) close(port_fd); /* the program binds it now */
    if (met != 0) {
        if (timed_out) {
            char msg[512];
            snprintf(msg, sizeof msg,
                     "replica %s waited %gs for its peers to start; see %s/slurm/slurm-%s.out",
                     name, d->rendezvous, d->job_dir, getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "?");
            event(ev, EX_EV_EXITED, EX_EXIT_UNKNOWN, "%s", msg);
            decide(run_dir, "failed", 1, msg);
        }
        tf_config_clear(&c);
        close(ev);
        return 0;
    }
    if (decided(run_dir)) { /* the run was decided while we waited: nothing to start */
        tf_config_clear(&c);
        close(ev);
        return 0;
    }
    tf_config_set_task(&c, type, index, d->trial);
    tf_config_set_job(&c, d->job);
    char *log = ex_log_path(d->job_dir, tname, index);
    char *metric = ex_metric_path(d->job_dir, tname, index);
    ex_contract ct = {.study = d->study, .trial = d->trial, .metric_tag = d->metric_tag,
                      .metric_file = metric, .tf = &c, .cores = d->cores[type],
                      /* Slurm sets it for the GPUs it allocated; a replica that asked for
                       * none gets "" as locally, not what the tuner's environment had */
                      .gpus = d->gpus[type] > 0 ? NULL : "",
                      .user_env = d->env[type]};
    char **env = ex_contract_env(environ, &ct);
    tf_config_clear(&c);
    int restarts = 0, rc = 0;
    char msg[2048], how[128];
    /* the replica's last failure in this trial, kept in the job dir across the Slurm
     * job's re-runs, so a repeat is told whichever run it comes in */
    char *failure_path = tn_xasprintf("%s/slurm/failures/%s-%d", d->job_dir, tname, index);
    ex_failure last = {0};
    load_failure(failure_path, &last);
    for (;;) {
        pid_t pid;
        ex_run_mark mark;
        ex_run_mark_take(log, metric, &mark);
        int s = ex_spawn(d->argv, env, log, &pid, err, sizeof err);
        if (s == EX_ENOEXEC) {
            event(ev, EX_EV_EXITED, EX_EXIT_UNKNOWN, "%s", err);
            decide(run_dir, "failed", 0, err);
            break;
        }
        if (s != 0) { /* the log cannot be opened, fork failed: this node's trouble */
            event(ev, EX_EV_EXITED, EX_EXIT_UNKNOWN, "%s", err);
            decide(run_dir, "failed", 1, err);
            break;
        }
        event(ev, EX_EV_STARTED, EX_EXIT_UNKNOWN, "pid %ld on %s", (long)pid, host);
        int status = 0, stopped = 0, wait_errno = 0;
        for (;;) {
            pid_t got = waitpid(pid, &status, WNOHANG);
            if (got == pid) break;
            if (got < 0 && errno != EINTR) { /* never taken for a success */
                wait_errno = errno;
                status = STATUS_LOST;
                break;
            }
            if (g_signal || decided(run_dir)) {
                status = ex_stop_group(pid, d->grace);
                if (status == STATUS_LOST) wait_errno = errno; /* ex_stop_group's waitpid */
                stopped = 1;
                break;
            }
            nap(POLL_US);
        }
        kill(-pid, SIGKILL); /* what the program left in its process group goes with it */
        if (status == STATUS_LOST) {
            snprintf(err, sizeof err, "the exit status of pid %ld on %s is lost (waitpid: %s)",
                     (long)pid, host, strerror(wait_errno ? wait_errno : ECHILD));
            event(ev, EX_EV_EXITED, EX_EXIT_UNKNOWN, "%s", err);
            if (!stopped && !g_signal && !decided(run_dir)) decide(run_dir, "failed", 1, err);
            break;
        }
        ex_describe_status(status, how, sizeof how);
        event(ev, EX_EV_EXITED, ex_exit_of_status(status), "%s", how);
        /* the run is over already, or Slurm is ending the job (scancel, time limit): an
         * exit now is no decision, whatever its status */
        if (stopped || g_signal || decided(run_dir)) break;
        int action = ex_exit_action(type, status, restarts, d->max_restarts);
        if (action == EX_EXIT_JOB_SUCCEEDED) {
            decide(run_dir, "succeeded", 0, NULL);
            break;
        }
        if (action == EX_EXIT_DONE) break;
        char *tail = ex_log_tail(log, &mark, EX_TAIL_LINES, EX_TAIL_BYTES);
        int repeats = ex_failure_repeats(&last, status, tail, ex_run_reported(metric, &mark));
        save_failure(failure_path, &last);
        char *final = NULL;
        int retry = 0;
        if (action == EX_EXIT_PERMANENT) {
            snprintf(msg, sizeof msg,
                     "replica %s exited with status 2 (a usage error: re-running cannot help)",
                     name);
            final = ex_failure_message(msg, log, tail);
        } else if (repeats && d->fail_on_repeat) {
            snprintf(msg, sizeof msg,
                     "replica %s failed twice the same way (%s, the same last lines) before "
                     "reporting anything: re-running cannot help, so the trial fails "
                     "(restartPolicy.failOnRepeatedError)",
                     name, how);
            final = ex_failure_message(msg, log, tail);
        } else if (action == EX_EXIT_GIVE_UP) {
            snprintf(msg, sizeof msg, "replica %s failed %d time%s (last: %s)", name,
                     restarts + 1, restarts ? "s" : "", how);
            final = ex_failure_message(msg, log, tail);
            retry = 1;
        }
        free(tail);
        if (final) {
            decide(run_dir, "failed", retry, final);
            free(final);
            break;
        }
        restarts++;
        double pause = ex_backoff(d->backoff, d->backoff_max, restarts);
        if (pause > 0) {
            event(ev, EX_EV_RESTARTED, EX_EXIT_UNKNOWN, "restart %d of %d after %s, in %.3g s", restarts,
                  d->max_restarts, how, pause);
            double until = now() + pause;
            while (now() < until && !g_signal && !decided(run_dir)) nap(POLL_US);
            if (g_signal || decided(run_dir)) break;
        } else {
            event(ev, EX_EV_RESTARTED, EX_EXIT_UNKNOWN, "restart %d of %d after %s", restarts, d->max_restarts, how);
        }
    }
    ex_failure_clear(&last);
    free(failure_path);
    ex_strv_free(env);
    free(log);
    free(metric);
    close(ev);
    return rc;
}

static void free_job(job_desc *d) {
    free(d->argv);
    for (int t = 0; t < TF_NTYPES; t++) free(d->env[t]); /* its strings are doc's */
    json_decref(d->doc);
}

/* ---- job mode ---- */

typedef struct step {
    int type;
    pid_t pid;     /* > 0 while srun runs */
} step;

static int run_job(const job_desc *d, const char *self) {
    const char *jobid = getenv("SLURM_JOB_ID");
    if (!jobid) die("SLURM_JOB_ID is not set: `tuner-launch job` runs as a Slurm batch script");
    const char *restart = getenv("SLURM_RESTART_COUNT");
    char *run_dir = tn_xasprintf("%s/slurm/%s-%s", d->job_dir, jobid, restart && *restart ? restart : "0");
    char err[1024];
    char *events = tn_xasprintf("%s/events", run_dir);
    if (tn_make_dirs(events, err, sizeof err) != 0) die("%s", err);
    free(events);
    char *job_events = tn_xasprintf("%s/events/job.jsonl", run_dir);
    int ev = open(job_events, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (ev < 0) die("cannot open %s: %s", job_events, strerror(errno));
    free(job_events);
    fprintf(stderr, "tuner-launch: trial %s of %s, Slurm job %s (run %s) on %s\n", d->trial,
            d->study, jobid, restart && *restart ? restart : "0",
            getenv("SLURM_JOB_NODELIST") ? getenv("SLURM_JOB_NODELIST") : "?");
    step steps[TF_NTYPES];
    int nsteps = 0;
    for (int t = 0; t < TF_NTYPES; t++) {
        if (d->count[t] == 0) continue;
        char *args[16], *owned[8];
        int n = 0, nowned = 0;
        int cores = d->cores[t] > 0 ? d->cores[t] : 1;
        args[n++] = "srun";
        args[n++] = owned[nowned++] = tn_xasprintf("--ntasks=%d", d->count[t]);
        args[n++] = owned[nowned++] = tn_xasprintf("--nodes=1-%d", d->count[t]);
        args[n++] = owned[nowned++] = tn_xasprintf("--cpus-per-task=%d", cores);
        if (d->gpus[t] > 0) args[n++] = owned[nowned++] = tn_xasprintf("--gpus-per-task=%d", d->gpus[t]);
        if (d->memory_mb[t] > 0)
            args[n++] = owned[nowned++] =
                tn_xasprintf("--mem-per-cpu=%dM", /* rounded up, without overflow */
                             d->memory_mb[t] / cores + (d->memory_mb[t] % cores != 0));
        if (d->het_group[t] >= 0) args[n++] = owned[nowned++] = tn_xasprintf("--het-group=%d", d->het_group[t]);
        args[n++] = "--exact";
        args[n++] = "--kill-on-bad-exit=0";
        args[n++] = (char *)self;
        args[n++] = "replica";
        args[n++] = (char *)d->path;
        args[n++] = run_dir;
        args[n++] = (char *)tf_type_label(t, !d->use_chief_name);
        args[n] = NULL;
        pid_t pid = fork();
        if (pid < 0) die("fork: %s", strerror(errno));
        if (pid == 0) {
            execvp(args[0], args);
            fprintf(stderr, "tuner-launch: error: cannot run srun: %s\n", strerror(errno));
            _exit(127);
        }
        steps[nsteps++] = (step){t, pid};
        while (nowned > 0) free(owned[--nowned]);
    }
    /* Wait for the steps. One that fails before the run is decided decides it; once it
     * is decided, steps that do not end within the grace period (a step that never
     * started, say) are killed. */
    double decided_at = 0;
    int live = nsteps;
    while (live > 0) {
        int status;
        pid_t got = waitpid(-1, &status, WNOHANG);
        if (got > 0) {
            for (int s = 0; s < nsteps; s++) {
                if (steps[s].pid != got) continue;
                steps[s].pid = 0;
                live--;
                if (status != 0 && !g_signal && !decided(run_dir)) { /* a signal: Slurm
                                                                      ends the job */
                    char how[128], msg[1024];
                    ex_describe_status(status, how, sizeof how);
                    snprintf(msg, sizeof msg,
                             "the srun step of the %s replicas ended (%s) before the run was "
                             "decided; see %s/slurm/slurm-%s.out",
                             tf_type_label(steps[s].type, !d->use_chief_name), how, d->job_dir, jobid);
                    event(ev, EX_EV_EXITED, EX_EXIT_UNKNOWN, "%s", msg);
                    decide(run_dir, "failed", 1, msg);
                }
            }
            continue;
        }
        if (got < 0 && errno != EINTR) break;
        if (decided(run_dir) && decided_at == 0) decided_at = now();
        if (decided_at > 0 && now() - decided_at > d->grace + 30) {
            for (int s = 0; s < nsteps; s++)
                if (steps[s].pid > 0) kill(steps[s].pid, SIGKILL);
        }
        nap(POLL_US);
    }
    if (!decided(run_dir) && !g_signal)
        decide(run_dir, "failed", 1, "every replica ended, none with a decision (the chief did "
                                     "not exit 0)");
    close(ev);
    free(run_dir);
    return 0;
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: tuner-launch job JOB_DIR/slurm/job.json\n"
            "       tuner-launch replica JOB_DIR/slurm/job.json RUN_DIR TYPE\n\n"
            "The Slurm executor's launcher, run inside an allocation: `job` is the batch\n"
            "script of a trial's Slurm job and starts one srun step per replica type;\n"
            "`replica` is one task of such a step and runs one replica of the trial with\n"
            "the trial-job contract (TF_CONFIG from the allocation, real host names).\n"
            "The tuner writes job.json and submits the job; nobody runs this by hand.\n"
            "Docs: docs/slurm.md\n");
}

int main(int argc, char **argv) {
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = SIG_IGN; /* a file-size limit: EFBIG from the write, not death */
    sigaction(SIGXFSZ, &sa, NULL);
    /* SIGCHLD ignored by whoever started us (a site's wrapper, a container entrypoint)
     * would have the kernel reap the replica and its exit status lost: take it back */
    sa.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &sa, NULL);
    job_desc d;
    if (argc == 3 && !strcmp(argv[1], "job")) {
        load_job(argv[2], &d);
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) die("cannot find my own path: %s", strerror(errno));
        self[n] = '\0';
        int rc = run_job(&d, self);
        free_job(&d);
        return rc;
    }
    if (argc == 5 && !strcmp(argv[1], "replica")) {
        load_job(argv[2], &d);
        int rc = run_replica(&d, argv[3], argv[4]);
        free_job(&d);
        return rc;
    }
    usage(stderr);
    return 2;
}
