/*
 * executor.c — trial jobs as local processes (see executor.h).
 *
 * Each job moves through attempts; an attempt starts every replica, then reacts to
 * exits as AI Platform does (restart in place, re-run the job, fail, succeed when the
 * chief exits 0). Stopping a job is one path for every reason (success, failure,
 * retry, timeout, stop request): SIGTERM to every live process group, SIGKILL after
 * the grace period, and when the last replica is reaped the job either starts its
 * next attempt or reports its outcome. Outcomes are reported from a deferred event,
 * never from inside the SIGCHLD handler, so a callback may free the job.
 * Replicas get PR_SET_PDEATHSIG(SIGKILL): if the tuner itself dies, its replicas die
 * with it instead of running on as orphans beside the resumed study's.
 */
#include "executor/executor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/status.h"
#include "common/tfconfig.h"

extern char **environ;

#ifndef NSIG
#define NSIG 65 /* Linux: signals 1..64 */
#endif

enum phase { PH_RUNNING = 1, PH_STOPPING, PH_DONE };

typedef struct replica {
    ex_job *job;
    int type, index;
    char name[32];      /* "worker:1" */
    char *log_path;     /* JOB_DIR/logs/worker-1.log */
    char *metric_path;  /* JOB_DIR/metrics/worker-1.metrics */
    char *gpus;         /* CUDA_VISIBLE_DEVICES */
    htr_reader *reader;
    pid_t pid;          /* > 0 while running */
    int restarts;       /* restarts in place during this attempt */
    int finished;       /* exited 0 and not the chief: done, not restarted */
} replica;

struct ex_job {
    ex_executor *x;
    ex_job_config cfg;      /* copy; strings below are owned */
    char **argv;            /* cfg.argv + --job-dir=DIR + NULL */
    char *job_dir;
    char *study, *trial, *metric_tag;
    json_t *job;            /* a reference */
    ex_callbacks cb;
    void *ctx;
    replica *reps;          /* chief, workers, ps, evaluators */
    size_t nreps;
    char **addrs;           /* cluster addresses of chief, workers, ps: "127.0.0.1:PORT" */
    int attempts, restarts;
    int phase;
    int stop_outcome;       /* what finishing the stop reports ... */
    char *stop_error;       /* ... and why (NULL: success) */
    int retry;              /* finishing the stop starts another attempt */
    struct event *poll_ev, *grace_ev, *timeout_ev, *done_ev;
};

struct ex_executor {
    struct event_base *base;
    struct event *sigchld;
    ex_job **jobs;
    size_t njobs, cap;
};

static const char *type_name(const ex_job *j, int type) {
    static const char *names[EX_NTYPES] = {"chief", "worker", "ps", "evaluator"};
    if (type == EX_CHIEF && !j->cfg.use_chief_name) return "master";
    return names[type];
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = tn_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static void emit(ex_job *j, const char *who, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void emit(ex_job *j, const char *who, const char *kind, const char *fmt, ...) {
    if (!j->cb.event) return;
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    j->cb.event(j->ctx, who, kind, detail);
}

/* Reads every replica's metric file; final: also a last line without its newline
 * (nobody is writing any more). */
static void poll_metrics(ex_job *j, int final) {
    for (size_t i = 0; i < j->nreps; i++) {
        replica *r = &j->reps[i];
        htr_record *recs = NULL;
        size_t n = 0;
        char err[512];
        int rc = final ? htr_poll_final(r->reader, &recs, &n, err, sizeof err)
                       : htr_poll(r->reader, &recs, &n, err, sizeof err);
        if (rc != 0) {
            emit(j, r->name, "metrics", "cannot read %s: %s", r->metric_path, err);
            continue;
        }
        for (size_t k = 0; k < n && j->cb.measurement; k++) j->cb.measurement(j->ctx, r->name, &recs[k]);
        htr_records_free(recs, n);
    }
}

/* mkdir -p */
static int make_dirs(const char *path, char *err, size_t errlen) {
    char *p = tn_xstrdup(path);
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            struct stat st;
            if (mkdir(p, 0755) != 0 && !(errno == EEXIST && stat(p, &st) == 0 && S_ISDIR(st.st_mode))) {
                rc = tn_error(err, errlen, TN_EIO, "cannot create folder %s: %s", p,
                              errno == EEXIST ? "a file is in the way" : strerror(errno));
                break;
            }
            *s = c;
            if (!c) break;
        }
    }
    free(p);
    return rc;
}

/* Picks n distinct free TCP ports on 127.0.0.1 (all sockets held until all are
 * known, so they differ). */
static int pick_ports(int n, int *ports, char *err, size_t errlen) {
    int *fds = tn_xcalloc((size_t)n + 1, sizeof *fds);
    int rc = 0, i;
    for (i = 0; i < n; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof a) != 0 ||
            getsockname(fds[i], (struct sockaddr *)&a, &len) != 0) {
            rc = tn_error(err, errlen, TN_EIO, "cannot pick a free port on 127.0.0.1: %s",
                          strerror(errno));
            if (fds[i] >= 0) close(fds[i]);
            break;
        }
        ports[i] = ntohs(a.sin_port);
    }
    while (i-- > 0) close(fds[i]);
    free(fds);
    return rc;
}

/* The TF_CONFIG of replica r for the current addresses (yours to tf_config_clear). */
static void replica_tf_config(const ex_job *j, const replica *r, tf_config *c) {
    tf_config_init(c);
    c->master = !j->cfg.use_chief_name;
    size_t a = 0;
    static const int cluster_types[3] = {EX_CHIEF, EX_WORKER, EX_PS};
    static const int tf_types[3] = {TF_CHIEF, TF_WORKER, TF_PS};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < j->cfg.count[cluster_types[k]]; i++) tf_config_add(c, tf_types[k], j->addrs[a++]);
    static const int to_tf[EX_NTYPES] = {TF_CHIEF, TF_WORKER, TF_PS, TF_EVALUATOR};
    tf_config_set_task(c, to_tf[r->type], r->index, j->trial);
    tf_config_set_job(c, j->job);
}

/* The environment of a replica: ours, with the contract's variables replaced. */
static char **replica_env(ex_job *j, const replica *r) {
    const char *keys[] = {"TF_CONFIG", "CLOUD_ML_TRIAL_ID", "CLOUD_ML_HP_METRIC_TAG",
                          "CLOUD_ML_HP_METRIC_FILE", "CLOUD_ML_JOB_ID", "WORLD_SIZE", "RANK",
                          "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS",
                          "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES"};
    size_t nkeys = sizeof keys / sizeof keys[0], n = 0;
    while (environ[n]) n++;
    char **env = tn_xcalloc(n + nkeys + 1, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int ours = 0;
        for (size_t q = 0; q < nkeys && !ours; q++) {
            size_t len = strlen(keys[q]);
            ours = !strncmp(environ[i], keys[q], len) && environ[i][len] == '=';
        }
        if (!ours) env[k++] = tn_xstrdup(environ[i]);
    }
    tf_config c;
    replica_tf_config(j, r, &c);
    char *tf = tf_config_emit(&c);
    char host[256] = "127.0.0.1";
    int port = 0;
    tf_split_address(tf_chief_address(&c), host, sizeof host, &port, NULL, 0);
    int cores = j->cfg.cores[r->type] > 0 ? j->cfg.cores[r->type] : 1;
    env[k++] = xasprintf("TF_CONFIG=%s", tf);
    env[k++] = xasprintf("CLOUD_ML_TRIAL_ID=%s", j->trial);
    env[k++] = xasprintf("CLOUD_ML_HP_METRIC_TAG=%s", j->metric_tag);
    env[k++] = xasprintf("CLOUD_ML_HP_METRIC_FILE=%s", r->metric_path);
    env[k++] = xasprintf("CLOUD_ML_JOB_ID=%s", j->study);
    env[k++] = xasprintf("WORLD_SIZE=%d", tf_world_size(&c));
    if (tf_rank(&c) >= 0) env[k++] = xasprintf("RANK=%d", tf_rank(&c));
    env[k++] = xasprintf("MASTER_ADDR=%s", host);
    env[k++] = xasprintf("MASTER_PORT=%d", port);
    env[k++] = xasprintf("OMP_NUM_THREADS=%d", cores);
    env[k++] = xasprintf("OPENBLAS_NUM_THREADS=%d", cores);
    env[k++] = xasprintf("MKL_NUM_THREADS=%d", cores);
    env[k++] = xasprintf("CUDA_VISIBLE_DEVICES=%s", r->gpus);
    env[k] = NULL;
    free(tf);
    tf_config_clear(&c);
    return env;
}

static void free_strv(char **v) {
    if (!v) return;
    for (size_t i = 0; v[i]; i++) free(v[i]);
    free(v);
}

/* Starts replica r. Returns 0, or TN_EIO when the program could not be executed
 * (message in err): a permanent error. */
static int spawn(replica *r, char *err, size_t errlen) {
    ex_job *j = r->job;
    char **env = replica_env(j, r);
    int logfd = open(r->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (logfd < 0) {
        free_strv(env);
        return tn_error(err, errlen, TN_EIO, "cannot open log %s: %s", r->log_path, strerror(errno));
    }
    int pipefd[2];
    if (pipe(pipefd) != 0 || fcntl(pipefd[0], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(pipefd[1], F_SETFD, FD_CLOEXEC) != 0) {
        close(logfd);
        free_strv(env);
        return tn_error(err, errlen, TN_EIO, "pipe: %s", strerror(errno));
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(logfd);
        close(pipefd[0]);
        close(pipefd[1]);
        free_strv(env);
        return tn_error(err, errlen, TN_EIO, "fork: %s", strerror(e));
    }
    if (pid == 0) { /* child: only async-signal-safe calls until exec */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        dup2(logfd, STDOUT_FILENO);
        dup2(logfd, STDERR_FILENO);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, STDIN_FILENO);
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        for (int s = 1; s < NSIG; s++) sigaction(s, &dfl, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        environ = env;
        execvp(j->argv[0], j->argv);
        int e = errno;
        ssize_t w = write(pipefd[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    setpgid(pid, pid); /* also in the parent, so kill(-pid) works at once */
    close(pipefd[1]);
    close(logfd);
    free_strv(env);
    int child_errno = 0;
    ssize_t got;
    do {
        got = read(pipefd[0], &child_errno, sizeof child_errno);
    } while (got < 0 && errno == EINTR);
    close(pipefd[0]);
    if (got == (ssize_t)sizeof child_errno) { /* exec failed: reap it here */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        return tn_error(err, errlen, TN_EIO, "cannot run %s: %s%s", j->argv[0],
                        strerror(child_errno),
                        child_errno == ENOENT ? " (not found; check the spec's command)" : "");
    }
    r->pid = pid;
    emit(j, r->name, "started", "pid %ld", (long)pid);
    return 0;
}

static int live_replicas(const ex_job *j) {
    int n = 0;
    for (size_t i = 0; i < j->nreps; i++) n += j->reps[i].pid > 0;
    return n;
}

static void signal_all(ex_job *j, int sig) {
    for (size_t i = 0; i < j->nreps; i++)
        if (j->reps[i].pid > 0) kill(-j->reps[i].pid, sig);
}

static void finish_stop(ex_job *j);

/* Begins stopping the job; when every replica is gone, finish_stop reports
 * `outcome` with `error` (copied; NULL: none) or, with retry, starts a new attempt. */
static void begin_stop(ex_job *j, int outcome, const char *error, int retry) {
    if (j->phase != PH_RUNNING) return;
    j->phase = PH_STOPPING;
    j->stop_outcome = outcome;
    free(j->stop_error);
    j->stop_error = error ? tn_xstrdup(error) : NULL;
    j->retry = retry;
    if (j->timeout_ev) evtimer_del(j->timeout_ev);
    if (live_replicas(j) == 0) {
        finish_stop(j);
        return;
    }
    emit(j, NULL, "stopping", "%s", error ? error : "the chief succeeded; stopping the others");
    signal_all(j, SIGTERM);
    struct timeval tv = {(time_t)j->cfg.grace_seconds,
                         (suseconds_t)((j->cfg.grace_seconds - (double)(time_t)j->cfg.grace_seconds) * 1e6)};
    evtimer_add(j->grace_ev, &tv);
}

static int start_attempt(ex_job *j, char *err, size_t errlen);

static void finish_stop(ex_job *j) {
    evtimer_del(j->grace_ev);
    poll_metrics(j, 1); /* the last records */
    if (j->retry) {
        char err[1024];
        j->phase = PH_RUNNING;
        j->retry = 0;
        emit(j, NULL, "retrying", "re-running the job (attempt %d of %d)", j->attempts + 1,
             j->cfg.max_job_retries + 1);
        if (start_attempt(j, err, sizeof err) == 0) return;
        j->phase = PH_STOPPING;
        j->stop_outcome = EX_FAILED;
        free(j->stop_error);
        j->stop_error = tn_xstrdup(err);
        if (live_replicas(j) > 0) { /* a later replica failed to start: stop the rest */
            signal_all(j, SIGKILL);
            return;
        }
    }
    j->phase = PH_DONE;
    evtimer_del(j->poll_ev);
    event_active(j->done_ev, 0, 0);
}

static int start_attempt(ex_job *j, char *err, size_t errlen) {
    int ncluster = 1 + j->cfg.count[EX_WORKER] + j->cfg.count[EX_PS];
    int *ports = tn_xcalloc((size_t)ncluster, sizeof *ports);
    int rc = pick_ports(ncluster, ports, err, errlen);
    if (rc == 0) {
        for (int i = 0; i < ncluster; i++) {
            free(j->addrs[i]);
            j->addrs[i] = xasprintf("127.0.0.1:%d", ports[i]);
        }
    }
    free(ports);
    if (rc) return rc;
    j->attempts++;
    for (size_t i = 0; i < j->nreps && rc == 0; i++) {
        j->reps[i].restarts = 0;
        j->reps[i].finished = 0;
        rc = spawn(&j->reps[i], err, errlen);
    }
    if (rc) return rc;
    emit(j, NULL, "running", "attempt %d: %zu replica%s started", j->attempts, j->nreps,
         j->nreps == 1 ? "" : "s");
    if (j->cfg.timeout_seconds > 0 && j->attempts == 1) {
        struct timeval tv = {(time_t)j->cfg.timeout_seconds,
                             (suseconds_t)((j->cfg.timeout_seconds -
                                            (double)(time_t)j->cfg.timeout_seconds) * 1e6)};
        evtimer_add(j->timeout_ev, &tv);
    }
    return 0;
}

static void describe_status(int status, char *buf, size_t len) {
    if (WIFEXITED(status))
        snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "status 0x%x", status);
}

/* A replica of j exited with status. */
static void on_exit_status(replica *r, int status) {
    ex_job *j = r->job;
    char how[128], msg[2048];
    describe_status(status, how, sizeof how);
    r->pid = 0;
    emit(j, r->name, "exited", "%s", how);
    if (j->phase == PH_STOPPING) {
        if (live_replicas(j) == 0) finish_stop(j);
        return;
    }
    if (j->phase != PH_RUNNING) return;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        if (r->type == EX_CHIEF) begin_stop(j, EX_SUCCEEDED, NULL, 0);
        else r->finished = 1;
        return;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
        snprintf(msg, sizeof msg,
                 "replica %s exited with status 2 (a usage error: re-running cannot help); "
                 "see %s", r->name, r->log_path);
        begin_stop(j, EX_FAILED, msg, 0);
        return;
    }
    if (r->restarts < j->cfg.max_replica_restarts) {
        char err[1024];
        r->restarts++;
        j->restarts++;
        emit(j, r->name, "restarted", "restart %d of %d after %s", r->restarts,
             j->cfg.max_replica_restarts, how);
        if (spawn(r, err, sizeof err) != 0) begin_stop(j, EX_FAILED, err, 0);
        return;
    }
    if (j->attempts <= j->cfg.max_job_retries) {
        snprintf(msg, sizeof msg, "replica %s failed %d time%s (%s)", r->name, r->restarts + 1,
                 r->restarts ? "s" : "", how);
        begin_stop(j, EX_FAILED, msg, 1);
        return;
    }
    snprintf(msg, sizeof msg,
             "replica %s failed %d time%s (last: %s) and the job was run %d time%s; see %s",
             r->name, r->restarts + 1, r->restarts ? "s" : "", how, j->attempts,
             j->attempts == 1 ? "" : "s", r->log_path);
    begin_stop(j, EX_FAILED, msg, 0);
}

static void on_sigchld(evutil_socket_t fd, short what, void *arg) {
    ex_executor *x = arg;
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) break;
        for (size_t i = 0; i < x->njobs; i++) {
            ex_job *j = x->jobs[i];
            for (size_t k = 0; k < j->nreps; k++) {
                if (j->reps[k].pid == pid) {
                    on_exit_status(&j->reps[k], status);
                    goto next;
                }
            }
        }
    next:;
    }
}

static void on_poll(evutil_socket_t fd, short what, void *arg) { poll_metrics(arg, 0); }

static void on_grace(evutil_socket_t fd, short what, void *arg) {
    ex_job *j = arg;
    emit(j, NULL, "stopping", "grace period of %gs over: SIGKILL", j->cfg.grace_seconds);
    signal_all(j, SIGKILL);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg) {
    ex_job *j = arg;
    char msg[128];
    snprintf(msg, sizeof msg, "the trial timed out after %gs", j->cfg.timeout_seconds);
    begin_stop(j, EX_FAILED, msg, 0);
}

static void on_done(evutil_socket_t fd, short what, void *arg) {
    ex_job *j = arg;
    if (j->cb.finished) j->cb.finished(j->ctx, j->stop_outcome, j->stop_error);
}

ex_executor *ex_executor_new(struct event_base *base) {
    ex_executor *x = tn_xcalloc(1, sizeof *x);
    x->base = base;
    x->sigchld = evsignal_new(base, SIGCHLD, on_sigchld, x);
    evsignal_add(x->sigchld, NULL);
    return x;
}

void ex_executor_free(ex_executor *x) {
    if (!x) return;
    while (x->njobs > 0) ex_job_free(x->jobs[x->njobs - 1]);
    event_free(x->sigchld);
    free(x->jobs);
    free(x);
}

static void forget_job(ex_job *j) {
    ex_executor *x = j->x;
    for (size_t i = 0; i < x->njobs; i++) {
        if (x->jobs[i] == j) {
            x->jobs[i] = x->jobs[--x->njobs];
            return;
        }
    }
}

ex_job *ex_job_start(ex_executor *x, const ex_job_config *cfg, const ex_callbacks *cb,
                     void *ctx, char *err, size_t errlen) {
    if (cfg->argc < 1 || cfg->count[EX_CHIEF] != 1) {
        tn_error(err, errlen, TN_EINVAL, "a job needs a program and exactly one chief");
        return NULL;
    }
    char *logs = xasprintf("%s/logs", cfg->job_dir), *metrics = xasprintf("%s/metrics", cfg->job_dir);
    int rc = make_dirs(logs, err, errlen);
    if (!rc) rc = make_dirs(metrics, err, errlen);
    if (rc) {
        free(logs);
        free(metrics);
        return NULL;
    }
    ex_job *j = tn_xcalloc(1, sizeof *j);
    j->x = x;
    j->cfg = *cfg;
    j->cb = *cb;
    j->ctx = ctx;
    j->job_dir = tn_xstrdup(cfg->job_dir);
    j->study = tn_xstrdup(cfg->study ? cfg->study : "");
    j->trial = tn_xstrdup(cfg->trial ? cfg->trial : "");
    j->metric_tag = tn_xstrdup(cfg->metric_tag ? cfg->metric_tag : "");
    j->job = cfg->job ? json_incref(cfg->job) : NULL;
    if (j->cfg.grace_seconds <= 0) j->cfg.grace_seconds = 10;
    if (j->cfg.poll_seconds <= 0) j->cfg.poll_seconds = 0.5;
    j->argv = tn_xcalloc(cfg->argc + 2, sizeof *j->argv);
    for (size_t i = 0; i < cfg->argc; i++) j->argv[i] = tn_xstrdup(cfg->argv[i]);
    j->argv[cfg->argc] = xasprintf("--job-dir=%s", cfg->job_dir);
    for (int t = 0; t < EX_NTYPES; t++) j->nreps += (size_t)cfg->count[t];
    j->reps = tn_xcalloc(j->nreps, sizeof *j->reps);
    j->addrs = tn_xcalloc((size_t)(1 + cfg->count[EX_WORKER] + cfg->count[EX_PS]), sizeof *j->addrs);
    size_t k = 0;
    for (int t = 0; t < EX_NTYPES; t++) {
        for (int i = 0; i < cfg->count[t]; i++, k++) {
            replica *r = &j->reps[k];
            r->job = j;
            r->type = t;
            r->index = i;
            snprintf(r->name, sizeof r->name, "%s:%d", type_name(j, t), i);
            r->log_path = xasprintf("%s/%s-%d.log", logs, type_name(j, t), i);
            r->metric_path = xasprintf("%s/%s-%d.metrics", metrics, type_name(j, t), i);
            r->reader = htr_new(r->metric_path);
            r->gpus = tn_xstrdup(cfg->gpus && cfg->gpus[k] ? cfg->gpus[k] : "");
        }
    }
    free(logs);
    free(metrics);
    j->poll_ev = event_new(x->base, -1, EV_PERSIST, on_poll, j);
    j->grace_ev = evtimer_new(x->base, on_grace, j);
    j->timeout_ev = evtimer_new(x->base, on_timeout, j);
    j->done_ev = event_new(x->base, -1, 0, on_done, j);
    if (x->njobs == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 8;
        x->jobs = tn_xrealloc(x->jobs, x->cap * sizeof *x->jobs);
    }
    x->jobs[x->njobs++] = j;
    j->phase = PH_RUNNING;
    struct timeval poll = {(time_t)j->cfg.poll_seconds,
                           (suseconds_t)((j->cfg.poll_seconds - (double)(time_t)j->cfg.poll_seconds) * 1e6)};
    evtimer_add(j->poll_ev, &poll);
    char why[1024];
    if (start_attempt(j, why, sizeof why) != 0) begin_stop(j, EX_FAILED, why, 0);
    return j;
}

void ex_job_stop(ex_job *j, int outcome, const char *reason) {
    if (j && j->phase == PH_RUNNING) begin_stop(j, outcome, reason, 0);
}

int ex_job_is_running(const ex_job *j) { return j->phase == PH_RUNNING; }

int ex_job_attempts(const ex_job *j) { return j->attempts; }
int ex_job_restarts(const ex_job *j) { return j->restarts; }

void ex_job_free(ex_job *j) {
    if (!j) return;
    if (live_replicas(j) > 0) {
        signal_all(j, SIGKILL);
        for (size_t i = 0; i < j->nreps; i++) {
            if (j->reps[i].pid > 0) {
                while (waitpid(j->reps[i].pid, NULL, 0) < 0 && errno == EINTR) {
                }
                j->reps[i].pid = 0;
            }
        }
    }
    forget_job(j);
    event_free(j->poll_ev);
    event_free(j->grace_ev);
    event_free(j->timeout_ev);
    event_free(j->done_ev);
    for (size_t i = 0; i < j->nreps; i++) {
        free(j->reps[i].log_path);
        free(j->reps[i].metric_path);
        htr_free(j->reps[i].reader);
        free(j->reps[i].gpus);
    }
    free(j->reps);
    int ncluster = 1 + j->cfg.count[EX_WORKER] + j->cfg.count[EX_PS];
    for (int i = 0; i < ncluster; i++) free(j->addrs[i]);
    free(j->addrs);
    free_strv(j->argv);
    free(j->job_dir);
    free(j->study);
    free(j->trial);
    free(j->metric_tag);
    json_decref(j->job);
    free(j->stop_error);
    free(j);
}
