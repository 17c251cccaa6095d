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
#include <unistd.h>

#include "common/status.h"

extern char **environ;

#ifndef NSIG
#define NSIG 65 /* Linux: signals 1..64 */
#endif

const char *ex_type_name(int type, int use_chief_name) {
    static const char *const names[EX_NTYPES] = {"chief", "worker", "ps", "evaluator"};
    if (type < 0 || type >= EX_NTYPES) return "?";
    if (type == EX_CHIEF && !use_chief_name) return "master";
    return names[type];
}

int ex_type_parse(const char *name) {
    if (!strcmp(name, "master")) return EX_CHIEF;
    for (int t = 0; t < EX_NTYPES; t++)
        if (!strcmp(name, ex_type_name(t, 1))) return t;
    return -1;
}

char *ex_log_path(const char *job_dir, const char *type_name, int index) {
    return tn_xasprintf("%s/logs/%s-%d.log", job_dir, type_name, index);
}

char *ex_metric_path(const char *job_dir, const char *type_name, int index) {
    return tn_xasprintf("%s/metrics/%s-%d.metrics", job_dir, type_name, index);
}

int ex_on_path(const char *prog) {
    if (strchr(prog, '/')) return access(prog, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    char buf[4096];
    for (const char *p = path;;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)len, len ? p : ".", prog);
        if (access(buf, X_OK) == 0) return 1;
        if (!end) return 0;
        p = end + 1;
    }
}

int ex_make_dirs(const char *path, char *err, size_t errlen) {
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

char **ex_contract_env(char *const *base, const ex_contract *c) {
    static const char *const keys[] = {
        "TF_CONFIG", "CLOUD_ML_TRIAL_ID", "CLOUD_ML_HP_METRIC_TAG", "CLOUD_ML_HP_METRIC_FILE",
        "CLOUD_ML_JOB_ID", "WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT",
        "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES"};
    size_t nkeys = sizeof keys / sizeof keys[0], n = 0;
    /* CUDA_VISIBLE_DEVICES is ours only when we assign the devices */
    size_t owned = c->gpus ? nkeys : nkeys - 1;
    while (base && base[n]) n++;
    char **env = tn_xcalloc(n + nkeys + 1, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int ours = 0;
        for (size_t q = 0; q < owned && !ours; q++) {
            size_t len = strlen(keys[q]);
            ours = !strncmp(base[i], keys[q], len) && base[i][len] == '=';
        }
        if (!ours) env[k++] = tn_xstrdup(base[i]);
    }
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
    int logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (logfd < 0)
        return tn_error(err, errlen, TN_EIO, "cannot open log %s: %s", log_path, strerror(errno));
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
        tn_error(err, errlen, TN_EIO, "cannot run %s: %s%s", argv[0], strerror(child_errno),
                 child_errno == ENOENT ? " (not found; check the spec's command)" : "");
        return EX_ENOEXEC;
    }
    *pid = child;
    return 0;
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
        return type == EX_CHIEF ? EX_EXIT_JOB_SUCCEEDED : EX_EXIT_DONE;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) return EX_EXIT_PERMANENT;
    return restarts < max_restarts ? EX_EXIT_RESTART : EX_EXIT_GIVE_UP;
}
