/*
 * contract.c — the trial-job contract shared by every backend (see contract.h): the
 * replicas' names and files, their environment, starting one, and the meaning of an
 * exit.
 */
#include "executor/contract.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"
#include "common/text.h"

extern char **environ;

#ifndef NSIG
#define NSIG 65 /* Linux: signals 1..64 */
#endif

int ex_replica_parse(const char *name, int *type, int *index) {
    const char *sep = strpbrk(name, ":-");
    if (!sep || sep == name || (size_t)(sep - name) >= 16) return TN_EINVAL;
    char tname[16];
    memcpy(tname, name, (size_t)(sep - name));
    tname[sep - name] = '\0';
    int t = tf_type_parse(tname);
    const char *d = sep + 1;
    size_t nd = strlen(d);
    if (t < 0 || nd == 0 || nd > 9 || strspn(d, "0123456789") != nd) return TN_EINVAL;
    *type = t;
    *index = atoi(d);
    return 0;
}

int ex_replica_is_chief(const char *name) {
    int type, index;
    return ex_replica_parse(name, &type, &index) == 0 && type == TF_CHIEF;
}

int ex_replica_cmp(const char *a, const char *b) {
    int ta, ia, tb, ib;
    int ka = ex_replica_parse(a, &ta, &ia) == 0, kb = ex_replica_parse(b, &tb, &ib) == 0;
    if (ka != kb) return ka ? -1 : 1;
    if (ka && ta != tb) return ta < tb ? -1 : 1;
    if (ka && ia != ib) return ia < ib ? -1 : 1;
    return strcmp(a, b);
}

char *ex_trial_dir(const char *study_job_dir, long long trial) {
    return tn_xasprintf("%s/%lld", study_job_dir, trial);
}

char *ex_logs_dir(const char *dir) { return tn_xasprintf("%s/logs", dir); }

char *ex_metrics_dir(const char *dir) { return tn_xasprintf("%s/metrics", dir); }

char *ex_log_path(const char *dir, const char *type_name, int index) {
    return tn_xasprintf("%s/logs/%s-%d.log", dir, type_name, index);
}

char *ex_metric_path(const char *dir, const char *type_name, int index) {
    return tn_xasprintf("%s/metrics/%s-%d.metrics", dir, type_name, index);
}

/* Whether path is a regular file this process may execute. */
static int runnable_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, X_OK) == 0;
}

/* Why the file at path cannot be run, into why; 0 when it can. */
static int file_problem(const char *path, char *why, size_t len) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(why, len, "%s", errno == ENOENT ? "not found" : strerror(errno));
        return -1;
    }
    if (S_ISDIR(sb.st_mode)) return snprintf(why, len, "a directory, not a program"), -1;
    if (!S_ISREG(sb.st_mode)) return snprintf(why, len, "not a regular file"), -1;
    if (access(path, X_OK) != 0) return snprintf(why, len, "not executable (chmod +x)"), -1;
    /* a script: its interpreter too, or exec says only ENOENT, as if the script were gone */
    char head[256] = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    ssize_t n = fd >= 0 ? read(fd, head, sizeof head - 1) : -1;
    if (fd >= 0) close(fd);
    if (n < 2 || head[0] != '#' || head[1] != '!') return 0;
    head[n] = '\0';
    char *interp = head + 2 + strspn(head + 2, " \t");
    interp[strcspn(interp, " \t\n")] = '\0';
    size_t ilen = strlen(interp);
    if (ilen > 0 && interp[ilen - 1] == '\r') { /* the kernel looks for "/bin/sh\r" */
        snprintf(why, len, "its #! line ends in a carriage return (Windows line endings: "
                 "convert it, e.g. with dos2unix)");
        return -1;
    }
    if (!*interp || runnable_file(interp)) return 0;
    snprintf(why, len, "its interpreter %.150s (its #! line) is not found or not executable",
             interp);
    return -1;
}

int ex_program_problem(const char *prog, const char *path, char *why, size_t len) {
    if (strchr(prog, '/')) return file_problem(prog, why, len);
    if (!path) path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    char buf[4096], first[4096] = "", problem[512] = "";
    for (const char *p = path;;) { /* the first that runs, as execvp goes on looking */
        const char *end = strchr(p, ':');
        size_t plen = end ? (size_t)(end - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)plen, plen ? p : ".", prog);
        struct stat sb;
        if (runnable_file(buf)) {
            char whyhere[400];
            if (file_problem(buf, whyhere, sizeof whyhere) == 0) return 0;
            if (!problem[0]) snprintf(problem, sizeof problem, "%.200s: %.300s", buf, whyhere);
        } else if (!first[0] && stat(buf, &sb) == 0) {
            snprintf(first, sizeof first, "%s", buf);
        }
        if (!end) break;
        p = end + 1;
    }
    if (problem[0]) { /* found, but its interpreter is missing */
        snprintf(why, len, "%s", problem);
        return -1;
    }
    if (first[0]) { /* there, but not to run: say why of the first one */
        char whyfirst[256];
        file_problem(first, whyfirst, sizeof whyfirst);
        snprintf(why, len, "%.200s on PATH is %s", first, whyfirst);
        return -1;
    }
    snprintf(why, len, "not found on PATH");
    return -1;
}

int ex_on_path(const char *prog) {
    char why[512];
    return ex_program_problem(prog, NULL, why, sizeof why) == 0;
}

/* The contract's variables, and what sets each (for the spec's messages). */
static const struct {
    const char *name, *what;
} contract_vars[] = {
    {"TF_CONFIG", "the replica's cluster, task and trial"},
    {"CLOUD_ML_TRIAL_ID", "the trial number"},
    {"CLOUD_ML_HP_METRIC_TAG", "hyperparameterMetricTag"},
    {"CLOUD_ML_HP_METRIC_FILE", "the replica's metric file"},
    {"CLOUD_ML_JOB_ID", "the study's jobId"},
    {"WORLD_SIZE", "the cluster's size"},
    {"RANK", "the replica's rank"},
    {"MASTER_ADDR", "the chief's address"},
    {"MASTER_PORT", "the chief's port"},
    {"OMP_NUM_THREADS", "resources.TYPE.cores"},
    {"OPENBLAS_NUM_THREADS", "resources.TYPE.cores"},
    {"MKL_NUM_THREADS", "resources.TYPE.cores"},
    {"CUDA_VISIBLE_DEVICES", "resources.TYPE.gpus (the devices a replica is given)"},
};
#define NCONTRACT_VARS (sizeof contract_vars / sizeof contract_vars[0])

int ex_contract_var(const char *name, const char **what) {
    for (size_t i = 0; i < NCONTRACT_VARS; i++) {
        if (strcmp(name, contract_vars[i].name) != 0) continue;
        if (what) *what = contract_vars[i].what;
        return 1;
    }
    return 0;
}


static double monotonic_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int ex_stop_group(pid_t pid, double grace) {
    int status = EX_STATUS_LOST;
    kill(-pid, SIGTERM);
    double deadline = monotonic_seconds() + grace;
    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) break;
        if (got < 0 && errno != EINTR) {
            status = EX_STATUS_LOST;
            break;
        }
        if (monotonic_seconds() > deadline) {
            int saved;
            kill(-pid, SIGKILL);
            while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
            }
            saved = errno;
            if (got != pid) status = EX_STATUS_LOST;
            errno = saved;
            break;
        }
        nanosleep(&(struct timespec){0, 25 * 1000 * 1000}, NULL);
    }
    int saved = errno;
    kill(-pid, SIGKILL); /* whatever the program left behind in its group */
    errno = saved;
    return status;
}

/* Whether entry ("NAME=VALUE") sets the variable name (of length len). */
static int sets(const char *entry, const char *name, size_t len) {
    return !strncmp(entry, name, len) && entry[len] == '=';
}

char **ex_contract_env(char *const *base, const ex_contract *c) {
    size_t n = 0, nuser = 0;
    /* CUDA_VISIBLE_DEVICES is ours only when we assign the devices */
    size_t owned = c->gpus ? NCONTRACT_VARS : NCONTRACT_VARS - 1;
    while (base && base[n]) n++;
    while (c->user_env && c->user_env[nuser]) nuser++;
    char **env = tn_xcalloc(n + nuser + NCONTRACT_VARS + 1, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int replaced = 0;
        for (size_t q = 0; q < owned && !replaced; q++)
            replaced = sets(base[i], contract_vars[q].name, strlen(contract_vars[q].name));
        for (size_t u = 0; u < nuser && !replaced; u++) {
            const char *eq = strchr(c->user_env[u], '=');
            replaced = eq && sets(base[i], c->user_env[u], (size_t)(eq - c->user_env[u]));
        }
        if (!replaced) env[k++] = tn_xstrdup(base[i]);
    }
    for (size_t u = 0; u < nuser; u++) env[k++] = tn_xstrdup(c->user_env[u]);
    char *tf = tf_config_emit(c->tf);
    char host[256] = "127.0.0.1";
    int port = 0;
    const char *chief = tf_chief_address(c->tf);
    if (chief) tf_split_address(chief, host, sizeof host, &port, NULL, 0);
    int cores = c->cores > 0 ? c->cores : 1;
    env[k++] = tn_xasprintf("TF_CONFIG=%s", tf);
    env[k++] = tn_xasprintf("CLOUD_ML_TRIAL_ID=%s", c->trial);
    env[k++] = tn_xasprintf("CLOUD_ML_HP_METRIC_TAG=%s", c->metric_tag);
    env[k++] = tn_xasprintf("CLOUD_ML_HP_METRIC_FILE=%s", c->metric_file);
    env[k++] = tn_xasprintf("CLOUD_ML_JOB_ID=%s", c->study);
    env[k++] = tn_xasprintf("WORLD_SIZE=%d", tf_world_size(c->tf));
    if (tf_rank(c->tf) >= 0) env[k++] = tn_xasprintf("RANK=%d", tf_rank(c->tf));
    env[k++] = tn_xasprintf("MASTER_ADDR=%s", host);
    env[k++] = tn_xasprintf("MASTER_PORT=%d", port);
    env[k++] = tn_xasprintf("OMP_NUM_THREADS=%d", cores);
    env[k++] = tn_xasprintf("OPENBLAS_NUM_THREADS=%d", cores);
    env[k++] = tn_xasprintf("MKL_NUM_THREADS=%d", cores);
    if (c->gpus) env[k++] = tn_xasprintf("CUDA_VISIBLE_DEVICES=%s", c->gpus);
    env[k] = NULL;
    free(tf);
    return env;
}

void ex_strv_free(char **v) {
    if (!v) return;
    for (size_t i = 0; v[i]; i++) free(v[i]);
    free(v);
}

int ex_spawn(char *const *argv, char *const *env, const char *log_path, pid_t *pid, char *err,
             size_t errlen) {
    /* Never blocks the study loop: a replica may have left a FIFO where its log goes
     * (opening one for writing waits for a reader), so the log is opened non-blocking
     * and must be a regular file (docs/reliability.md). */
    int logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
    if (logfd < 0)
        return tn_error(err, errlen, TN_EIO, "cannot open log %s: %s", log_path,
                        errno == ENXIO ? "it is a FIFO, not a regular file" : strerror(errno));
    struct stat sb;
    if (fstat(logfd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(logfd);
        return tn_error(err, errlen, TN_EIO, "cannot open log %s: not a regular file",
                        log_path);
    }
    int fl = fcntl(logfd, F_GETFL);
    if (fl < 0 || fcntl(logfd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(logfd);
        return tn_error(err, errlen, TN_EIO, "cannot open log %s: %s", log_path, strerror(e));
    }
    int pipefd[2];
    if (pipe(pipefd) != 0 || fcntl(pipefd[0], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(pipefd[1], F_SETFD, FD_CLOEXEC) != 0) {
        close(logfd);
        return tn_error(err, errlen, TN_EIO, "pipe: %s", strerror(errno));
    }
    pid_t parent = getpid();
    pid_t child = fork();
    if (child < 0) {
        int e = errno;
        close(logfd);
        close(pipefd[0]);
        close(pipefd[1]);
        return tn_error(err, errlen, TN_EIO, "fork: %s", strerror(e));
    }
    if (child == 0) { /* only async-signal-safe calls until exec */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* what its descendants leave (a daemon that calls setsid and clears its
         * environment) stays its child, not init's, until it exits; kept across exec */
        prctl(PR_SET_CHILD_SUBREAPER, 1);
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
        environ = (char **)env;
        execvp(argv[0], argv);
        int e = errno;
        ssize_t w = write(pipefd[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    setpgid(child, child); /* also in the parent, so kill(-pid) works at once */
    close(pipefd[1]);
    close(logfd);
    int child_errno = 0;
    ssize_t got;
    do {
        got = read(pipefd[0], &child_errno, sizeof child_errno);
    } while (got < 0 && errno == EINTR);
    close(pipefd[0]);
    if (got == (ssize_t)sizeof child_errno) { /* exec failed: reap it here */
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
        }
        char why[512];
        if (child_errno == ENOENT || child_errno == EACCES) { /* what is missing, exactly */
            const char *path = NULL; /* the child's, which the spec's env may set */
            for (char *const *e = env; e && *e && !path; e++)
                if (!strncmp(*e, "PATH=", 5)) path = *e + 5;
            if (ex_program_problem(argv[0], path ? path : "/usr/bin:/bin", why, sizeof why) == 0)
                snprintf(why, sizeof why, "%s", strerror(child_errno));
            tn_error(err, errlen, TN_EIO, "cannot run %s: %s (check the spec's command)",
                     argv[0], why);
        } else {
            tn_error(err, errlen, TN_EIO, "cannot run %s: %s", argv[0], strerror(child_errno));
        }
        return EX_ENOEXEC;
    }
    *pid = child;
    return 0;
}

ex_exit ex_exit_of_status(int status) {
    if (WIFEXITED(status)) return (ex_exit){.code = WEXITSTATUS(status), .signal = 0};
    if (WIFSIGNALED(status)) return (ex_exit){.code = -1, .signal = WTERMSIG(status)};
    return EX_EXIT_UNKNOWN;
}

void ex_describe_status(int status, char *buf, size_t len) {
    if (WIFEXITED(status))
        snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "status 0x%x", status);
}

int ex_exit_action(int type, int status, int restarts, int max_restarts) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return type == TF_CHIEF ? EX_EXIT_JOB_SUCCEEDED : EX_EXIT_DONE;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) return EX_EXIT_PERMANENT;
    return restarts < max_restarts ? EX_EXIT_RESTART : EX_EXIT_GIVE_UP;
}

/* ---- What a failed run of a replica leaves to tell ---- */

void ex_run_mark_take(const char *log_path, const char *metric_path, ex_run_mark *m) {
    struct stat sb;
    memset(m, 0, sizeof *m);
    if (log_path && stat(log_path, &sb) == 0) m->log_size = sb.st_size;
    if (metric_path && stat(metric_path, &sb) == 0) {
        m->metric_exists = 1;
        m->metric_size = sb.st_size;
        m->metric_mtime_ns = (long long)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
    }
}

int ex_run_reported(const char *metric_path, const ex_run_mark *m) {
    struct stat sb;
    if (!metric_path || stat(metric_path, &sb) != 0) return 0;
    long long mtime = (long long)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
    return !m->metric_exists || sb.st_size != m->metric_size || mtime != m->metric_mtime_ns;
}

char *ex_log_tail(const char *log_path, const ex_run_mark *m, int max_lines, size_t max_bytes) {
    /* read at most the last 64 KiB the run wrote, non-blocking: a log is whatever the
     * program made of it */
    enum { WINDOW = 1 << 16 };
    int fd = open(log_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0) return tn_xstrdup("");
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size <= m->log_size) {
        close(fd);
        return tn_xstrdup("");
    }
    off_t from = sb.st_size - m->log_size > WINDOW ? sb.st_size - WINDOW : m->log_size;
    size_t want = (size_t)(sb.st_size - from);
    char *buf = tn_xmalloc(want + 1);
    ssize_t got = pread(fd, buf, want, from);
    close(fd);
    if (got <= 0) {
        free(buf);
        return tn_xstrdup("");
    }
    size_t len = (size_t)got;
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) len--;
    buf[len] = '\0';
    /* the start of the last max_lines lines, within max_bytes of the end */
    size_t start = len;
    int lines = 0;
    while (start > 0 && len - start < max_bytes) {
        if (buf[start - 1] == '\n' && ++lines == max_lines) break;
        start--;
    }
    if (len - start > max_bytes) start = len - max_bytes;
    char *out = tn_xmalloc(len - start + 1), *o = out;
    for (size_t i = start; i < len; i++)
        if (buf[i] != '\r') *o++ = buf[i] ? buf[i] : '?'; /* a progress bar's \r */
    *o = '\0';
    free(buf);
    /* what a terminal would obey (ESC, C1's CSI) and bytes that are not UTF-8 */
    char *clean = tn_term_clean(out);
    free(out);
    return clean;
}

int ex_failure_repeats(ex_failure *last, int status, const char *tail, int reported) {
    int repeats = last->set && !last->reported && !reported && last->status == status &&
                  tail && tail[0] && !strcmp(last->tail ? last->tail : "", tail);
    free(last->tail);
    last->set = 1;
    last->status = status;
    last->reported = reported;
    last->tail = tn_xstrdup(tail ? tail : "");
    return repeats;
}

void ex_failure_clear(ex_failure *f) {
    free(f->tail);
    memset(f, 0, sizeof *f);
}

double ex_backoff(double base, double cap, int n) {
    if (base <= 0 || n < 1) return 0;
    double d = base;
    for (int i = 1; i < n && d < cap; i++) d *= 2;
    return d < cap ? d : cap;
}

char *ex_failure_message(const char *what, const char *log_path, const char *tail) {
    if (!tail || !tail[0]) return tn_xasprintf("%s; see %s", what, log_path);
    size_t n = 0;
    for (const char *p = tail; *p; p++) n += *p == '\n';
    char *out = tn_xmalloc(strlen(what) + strlen(log_path) + strlen(tail) + 5 * (n + 1) + 64);
    char *o = out + sprintf(out, "%s; its log (%s) ends:\n    ", what, log_path);
    for (const char *p = tail; *p; p++) {
        *o++ = *p;
        if (*p == '\n') o += sprintf(o, "    ");
    }
    *o = '\0';
    return out;
}
