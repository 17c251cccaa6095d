/*
 * command.c — running a command (sbatch, squeue, scancel, sinfo, sacct) with its
 * output captured, on the loop or synchronously (see executor_internal.h).
 *
 * The Slurm backend talks to the cluster only through Slurm's own commands, as a
 * user would, so it works with any Slurm version and configuration that answers them.
 * A command whose controller does not answer may take many seconds, so the loop never
 * waits for one: the child's stdout and stderr are read by events, its exit comes
 * through the executor's SIGCHLD watcher, and a timer kills it when it runs too long.
 */
#include "executor/executor_internal.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"

extern char **environ;

#define CMD_MAX_OUTPUT (64u << 20) /* more than any squeue of ours prints */

typedef struct out_buf {
    char *data;
    size_t len, cap;
} out_buf;

static void buf_add(out_buf *b, const char *p, size_t n) {
    if (b->len + n + 1 > CMD_MAX_OUTPUT) n = b->len + 1 < CMD_MAX_OUTPUT ? CMD_MAX_OUTPUT - b->len - 1 : 0;
    if (b->len + n + 1 > b->cap) {
        b->cap = b->cap ? b->cap : 4096;
        while (b->len + n + 1 > b->cap) b->cap *= 2;
        b->data = tn_xrealloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static const char *buf_str(const out_buf *b) { return b->data ? b->data : ""; }

/* Whether environment entry e ("NAME=value") is one of the variables Slurm sets in a
 * job, a step or a task to describe that job: its id, its run (SLURM_RESTART_COUNT), its
 * array task, its step, its nodes, tasks, CPUs, memory and GPUs, its bindings. */
static int describes_a_job(const char *e) {
    static const char *const names[] = {
        "SLURM_JOBID", "SLURM_RESTART_COUNT", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID",
        "SLURM_GTIDS", "SLURM_NODELIST", "SLURM_NNODES", "SLURM_NPROCS", "SLURM_TASK_PID",
        "SLURM_TASKS_PER_NODE", "SLURM_PRIO_PROCESS", "SLURM_UMASK", "SLURM_SUBMIT_DIR",
        "SLURM_SUBMIT_HOST", "SLURM_CLUSTER_NAME", "SLURM_WORKING_CLUSTER", "SLURM_NODE_ALIASES",
        "SLURM_LAUNCH_NODE_IPADDR", "SLURM_SCRIPT_CONTEXT", "SLURM_EXPORT_ENV",
        "SLURM_DISTRIBUTION", "SLURM_DIST_PLANESIZE", "SLURM_OVERLAP", "SLURM_EXACT",
        "SLURM_OVERCOMMIT", "SLURM_THREADS_PER_CORE", "SLURM_HET_SIZE", "SLURM_CONTAINER",
        "SLURM_SHARDS_ON_NODE", "SLURM_CPU_FREQ_REQ", "SLURM_TRES_PER_TASK", "SLURMD_NODENAME"};
    static const char *const prefixes[] = {
        "SLURM_JOB_", "SLURM_STEP", "SLURM_ARRAY_", "SLURM_HET_JOB_", "SLURM_PACK_",
        "SLURM_NTASKS", "SLURM_CPUS_", "SLURM_MEM_PER_", "SLURM_MEM_BIND", "SLURM_CPU_BIND",
        "SLURM_GPU", "SLURM_TOPOLOGY_ADDR", "SLURM_SRUN_COMM_", "SLURM_SPANK_", "SLURM_PTY_"};
    const char *eq = strchr(e, '=');
    if (!eq || strncmp(e, "SLURM", 5) != 0) return 0;
    size_t n = (size_t)(eq - e);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == n && !strncmp(e, names[i], n)) return 1;
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (!strncmp(e, prefixes[i], strlen(prefixes[i])) && strlen(prefixes[i]) <= n) return 1;
    /* a heterogeneous job's per-component copies: SLURM_NTASKS_HET_GROUP_1, ... */
    for (const char *p = e; p + 11 <= eq; p++)
        if (!strncmp(p, "_HET_GROUP_", 11)) return 1;
    return 0;
}

/* Whether e is one of sbatch's input variables that take the job out of the tuner's
 * hands, as the options of the same meaning the spec's extraArgs refuses: held
 * (SBATCH_HOLD), an array of copies (SBATCH_ARRAY_INX), another cluster, which the
 * tuner's squeue and scancel never see (SBATCH_CLUSTERS), a sbatch that waits for the
 * job's end (SBATCH_WAIT), a job without the environment the contract passes on
 * (SBATCH_EXPORT), its standard error or input elsewhere (SBATCH_ERROR, SBATCH_INPUT). */
static int takes_job_away(const char *e) {
    static const char *const names[] = {"SBATCH_HOLD", "SBATCH_ARRAY_INX", "SBATCH_CLUSTERS",
                                        "SBATCH_WAIT", "SBATCH_EXPORT", "SBATCH_ERROR",
                                        "SBATCH_INPUT"};
    const char *eq = strchr(e, '=');
    if (!eq || strncmp(e, "SBATCH_", 7) != 0) return 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == (size_t)(eq - e) && !strncmp(e, names[i], (size_t)(eq - e)))
            return 1;
    return 0;
}

/* The environment for Slurm's commands: the tuner's own, less what describes the tuner's
 * own job when the tuner runs inside one (SLURM_JOB_ID set: an sbatch script, salloc,
 * srun). sbatch passes the environment on to the trial's job (--export=ALL), and Slurm
 * sets only some of these variables there, so the rest would describe the wrong job:
 * an inherited SLURM_RESTART_COUNT makes the launcher write to the files of a run that
 * is not the job's and the tuner count a requeue that never was; SLURM_MEM_PER_NODE, a
 * CPU binding or SLURM_EXPORT_ENV would reach the trial's srun steps as their options.
 * Nor do sbatch's variables that would take the job out of the tuner's hands
 * (takes_job_away). Slurm's other settings (SLURM_CONF, SLURM_TIME_FORMAT, SBATCH_*, ...)
 * stay. NULL when nothing is removed; else an array of environ's strings, yours to free
 * (not them). */
static char **commands_env(void) {
    int in_job = getenv("SLURM_JOB_ID") || getenv("SLURM_JOBID");
    size_t n = 0, away = 0;
    while (environ[n]) away += takes_job_away(environ[n++]);
    if (!in_job && !away) return NULL;
    char **env = tn_xcalloc(n + 1, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!(in_job && describes_a_job(environ[i])) && !takes_job_away(environ[i]))
            env[k++] = environ[i];
    env[k] = NULL;
    return env;
}

/* Forks argv with stdout and stderr to pipes (fds[0], fds[1], close-on-exec and
 * non-blocking on our side), in a process group of its own whose id is *pid. A program
 * that cannot be executed exits 127 with the reason on its stderr. Returns 0 or -1
 * (errno set). */
static int cmd_fork(char *const *argv, pid_t *pid, int fds[2]) {
    int out[2], err[2];
    if (pipe(out) != 0) return -1;
    if (pipe(err) != 0) {
        close(out[0]);
        close(out[1]);
        return -1;
    }
    char **env = commands_env(); /* made before fork: the child only assigns it */
    pid_t child = fork();
    if (child < 0) {
        int e = errno;
        close(out[0]);
        close(out[1]);
        close(err[0]);
        close(err[1]);
        free(env);
        errno = e;
        return -1;
    }
    if (child == 0) {
        /* a process group of its own: a Ctrl-C at the terminal is the tuner's to handle,
         * and must not kill an sbatch half way (the job might be queued unseen); and a
         * timeout kills the whole group, what the command started included */
        setpgid(0, 0);
        if (env) environ = env;
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        close(out[0]);
        close(err[0]);
        close(out[1]);
        close(err[1]);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, STDIN_FILENO);
        execvp(argv[0], argv);
        int e = errno;
        dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0], strerror(e));
        _exit(127);
    }
    /* the parent sets the group too, so that it exists before any kill(-pid) of ours */
    setpgid(child, child);
    free(env);
    close(out[1]);
    close(err[1]);
    fds[0] = out[0];
    fds[1] = err[0];
    for (int i = 0; i < 2; i++) {
        fcntl(fds[i], F_SETFD, FD_CLOEXEC);
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
    }
    *pid = child;
    return 0;
}

/* ---- on the loop ---- */

struct ex_cmd {
    ex_executor *x;
    pid_t pid;
    int fds[2];               /* stdout, stderr; -1 once at end of file */
    struct event *ev[2];
    struct event *timer;
    out_buf buf[2];
    int exited, status, timed_out;
    double timeout;
    ex_cmd_done done;
    void *ctx;
};

static void cmd_free(ex_cmd *c) {
    for (int i = 0; i < 2; i++) {
        if (c->ev[i]) event_free(c->ev[i]);
        if (c->fds[i] >= 0) close(c->fds[i]);
        free(c->buf[i].data);
    }
    if (c->timer) event_free(c->timer);
    free(c);
}

/* Calls back once the command has exited and both pipes are at end of file. */
static void maybe_done(ex_cmd *c) {
    if (!c->exited || c->fds[0] >= 0 || c->fds[1] >= 0) return;
    if (c->timed_out) {
        char note[128];
        snprintf(note, sizeof note, "%stimed out after %gs and was killed",
                 c->buf[1].len ? "\n" : "", c->timeout);
        buf_add(&c->buf[1], note, strlen(note));
    }
    ex_cmd_done done = c->done;
    void *ctx = c->ctx;
    int status = c->status;
    out_buf out = c->buf[0], err = c->buf[1];
    c->buf[0] = (out_buf){0};
    c->buf[1] = (out_buf){0};
    cmd_free(c);
    done(ctx, status, buf_str(&out), buf_str(&err));
    free(out.data);
    free(err.data);
}

static void on_output(evutil_socket_t fd, short what, void *arg) {
    ex_cmd *c = arg;
    int i = fd == c->fds[0] ? 0 : 1;
    char chunk[8192];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n > 0) {
            buf_add(&c->buf[i], chunk, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        break; /* end of file or error */
    }
    event_free(c->ev[i]);
    c->ev[i] = NULL;
    close(c->fds[i]);
    c->fds[i] = -1;
    maybe_done(c);
}

static void on_exit_status(void *ctx, int status) {
    ex_cmd *c = ctx;
    c->exited = 1;
    c->status = status;
    /* the timer stays while a pipe is open: something the command left running (a
     * wrapper script's background child) holds it, and the timeout ends that too */
    if (c->timer && c->fds[0] < 0 && c->fds[1] < 0) evtimer_del(c->timer);
    maybe_done(c);
}

/* Kills the command's process group, not only the command: a wrapper script that runs
 * the real sbatch or squeue as its child, rather than exec'ing it, would leave that
 * child holding our pipes, the command in flight past its timeout, and no other squeue
 * would run. The group outlives the command while any of its members lives, so its id
 * names nothing else then. */
static void on_cmd_timeout(evutil_socket_t fd, short what, void *arg) {
    ex_cmd *c = arg;
    if (!c->exited) c->timed_out = 1;
    kill(-c->pid, SIGKILL);
}

static void on_deferred_failure(evutil_socket_t fd, short what, void *arg) { maybe_done(arg); }

ex_cmd *ex__cmd_run(ex_executor *x, char *const *argv, double timeout, ex_cmd_done done,
                    void *ctx) {
    ex_cmd *c = tn_xcalloc(1, sizeof *c);
    c->x = x;
    c->done = done;
    c->ctx = ctx;
    c->timeout = timeout;
    if (cmd_fork(argv, &c->pid, c->fds) != 0) { /* reported like a failed exec, from
                                                     the loop (never before we return) */
        char msg[512];
        snprintf(msg, sizeof msg, "cannot start %s: %s", argv[0], strerror(errno));
        buf_add(&c->buf[1], msg, strlen(msg));
        c->fds[0] = c->fds[1] = -1;
        c->exited = 1;
        c->status = 127 << 8;
        c->timer = evtimer_new(x->base, on_deferred_failure, c);
        struct timeval zero = {0, 0};
        evtimer_add(c->timer, &zero);
        return c;
    }
    for (int i = 0; i < 2; i++) {
        c->ev[i] = event_new(x->base, c->fds[i], EV_READ | EV_PERSIST, on_output, c);
        event_add(c->ev[i], NULL);
    }
    if (timeout > 0) {
        c->timer = evtimer_new(x->base, on_cmd_timeout, c);
        struct timeval tv = ex__timeval(timeout);
        evtimer_add(c->timer, &tv);
    }
    ex__watch(x, c->pid, on_exit_status, c);
    return c;
}

void ex__cmd_abandon(ex_cmd *c) {
    if (!c) return;
    if (c->pid > 0 && (!c->exited || c->fds[0] >= 0 || c->fds[1] >= 0))
        kill(-c->pid, SIGKILL); /* the command and what it started (on_cmd_timeout) */
    if (!c->exited && c->pid > 0) {
        ex__unwatch(c->x, c->pid);
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    cmd_free(c);
}

/* ---- synchronous ---- */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int ex__cmd_sync(char *const *argv, double timeout, char **out, char **errtext) {
    out_buf buf[2] = {{0}};
    pid_t pid;
    int fds[2], status = 127 << 8, timed_out = 0;
    if (cmd_fork(argv, &pid, fds) != 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "cannot start %s: %s", argv[0], strerror(errno));
        buf_add(&buf[1], msg, strlen(msg));
        goto done;
    }
    double deadline = now_seconds() + (timeout > 0 ? timeout : 1e9);
    while (fds[0] >= 0 || fds[1] >= 0) {
        struct pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
        double left = deadline - now_seconds();
        if (left <= 0) {
            timed_out = 1;
            kill(-pid, SIGKILL); /* its group: see on_cmd_timeout */
            break;
        }
        int n = poll(p, 2, (int)(left * 1000) + 1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        for (int i = 0; i < 2; i++) {
            if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char chunk[8192];
            ssize_t got = read(fds[i], chunk, sizeof chunk);
            if (got > 0) {
                buf_add(&buf[i], chunk, (size_t)got);
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                close(fds[i]);
                fds[i] = -1;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0) close(fds[i]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
        char note[128];
        snprintf(note, sizeof note, "%stimed out after %gs and was killed", buf[1].len ? "\n" : "",
                 timeout);
        buf_add(&buf[1], note, strlen(note));
    }
done:
    if (out) *out = tn_xstrdup(buf_str(&buf[0]));
    if (errtext) *errtext = tn_xstrdup(buf_str(&buf[1]));
    free(buf[0].data);
    free(buf[1].data);
    return status;
}
