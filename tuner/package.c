/*
 * package.c — a pythonModule's packages installed as AI Platform installs them (see
 * package.h; docs/spec.md, "pythonModule and packageUris").
 *
 * Commands, each started by the executor's ex_spawn (the tuner itself never forks)
 * with its output appended to JOB_DIR/venv/install.log and waited for: `python3 -m venv
 * --system-site-packages --without-pip` when the environment is not there yet (the
 * machine's pip, seen through the system site, installs into it); for each package
 * folder, `python -m pip wheel --no-deps` into a build folder of the study's own, with
 * setuptools' build/ and *.egg-info sent there too (build_wheel: pip builds in the
 * folder it is given, and setuptools packs whatever its build/lib holds, so a module
 * deleted since an earlier build was installed still, and the folder had to be
 * writable); then one `python -m pip install --no-build-isolation PATH...` of the
 * packages' absolute paths (a bare relative name would be read by pip as a project on
 * its index), the folders' wheels in their place, so that pip resolves their
 * requirements together; and for wheels a second `pip install --no-deps
 * --force-reinstall WHEEL...`, since pip keeps an installed wheel of the same version
 * however it changed. An older setuptools still builds in the folder, so a build holds
 * an exclusive flock on every folder it builds: two studies building one folder at
 * once take turns. pip runs without the settings that would install elsewhere than the
 * environment (PIP_USER, PIP_TARGET, PIP_PREFIX: a cluster's pip.conf often says user
 * = true). A failure is told with the end of what that command wrote and a hint for
 * the usual causes.
 */
#include "tuner/package.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/status.h"
#include "executor/contract.h"

extern char **environ;

#define TAIL_LINES 12      /* of pip's output in a failure's message */
#define TAIL_BYTES 2048

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

int pkg_check_uri(const char *uri, int check_files, char *err, size_t errlen) {
    static const char *const ARCHIVES[] = {".tar.gz", ".tgz", ".tar.bz2", ".zip", ".whl"};
    if (!uri[0])
        return tn_error(err, errlen, TN_EINVAL, "must not be empty (the path of a package)");
    if (strstr(uri, "://") || !strncmp(uri, "gs:", 3))
        return tn_error(err, errlen, TN_EINVAL,
                        "\"%.200s\" cannot be reached from here: give the path of the package "
                        "on this machine (a folder with setup.py or pyproject.toml, an sdist "
                        ".tar.gz or a wheel), after copying it here (gsutil cp)", uri);
    /* pip reads its arguments as requirements: a path with ';' has an environment
     * marker after it, one with '[' extras */
    const char *odd = strpbrk(uri, ";[]");
    if (odd)
        return tn_error(err, errlen, TN_EINVAL,
                        "\"%.200s\" has '%c' in it, which pip would read as requirement "
                        "syntax (';' starts an environment marker, '[' extras), not as part "
                        "of a path: rename or move the package", uri, *odd);
    if (!check_files) return 0;
    struct stat sb;
    if (stat(uri, &sb) != 0)
        return tn_error(err, errlen, TN_EINVAL, "\"%.200s\": %s (relative paths are from the "
                        "current folder)", uri, strerror(errno));
    if (S_ISDIR(sb.st_mode)) {
        char path[PATH_MAX];
        static const char *const PROJECT[] = {"setup.py", "pyproject.toml"};
        for (size_t i = 0; i < sizeof PROJECT / sizeof *PROJECT; i++) {
            snprintf(path, sizeof path, "%s/%s", uri, PROJECT[i]);
            if (access(path, F_OK) == 0) return 0;
        }
        return tn_error(err, errlen, TN_EINVAL, "\"%.200s\" is a folder without setup.py or "
                        "pyproject.toml: not a package pip can install", uri);
    }
    if (S_ISREG(sb.st_mode))
        for (size_t i = 0; i < sizeof ARCHIVES / sizeof *ARCHIVES; i++)
            if (ends_with(uri, ARCHIVES[i])) return 0;
    return tn_error(err, errlen, TN_EINVAL, "\"%.200s\" is not a package: expected a folder "
                    "with setup.py or pyproject.toml, an sdist (.tar.gz, .zip) or a wheel "
                    "(.whl)", uri);
}

/* This process's environment without pip's settings that install elsewhere than the
 * study's environment, and with PIP_USER=0 over a pip.conf's user = true; plus extra
 * ("NAME=value", NULL for none) over any NAME there. The strings are environ's, a
 * literal and extra; free the array only. */
static char **pip_environment(const char *extra) {
    size_t n = 0, name = extra ? strcspn(extra, "=") + 1 : 0;
    while (environ[n]) n++;
    char **env = tn_xcalloc(n + 3, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "PIP_USER=", 9) && strncmp(environ[i], "PIP_TARGET=", 11) &&
            strncmp(environ[i], "PIP_PREFIX=", 11) && !(extra && !strncmp(environ[i], extra, name)))
            env[k++] = environ[i];
    env[k++] = (char *)"PIP_USER=0";
    if (extra) env[k++] = (char *)extra;
    return env;
}

static volatile sig_atomic_t g_stop_signal; /* a stop asked for during an install */
static int g_stopped_by;                     /* the signal that stopped the last one */

static void on_stop_signal(int sig) { g_stop_signal = sig; }

int pkg_stop_signal(void) { return g_stopped_by; }

/* Waits for the install command pid (a process group of its own: the terminal's Ctrl-C
 * does not reach it) into *status. SIGINT, SIGTERM or SIGHUP meanwhile stops its whole
 * group, the build it runs with it (setup.py, a compiler: ex_stop_group, SIGKILL after
 * 5 s), and returns that signal; 0 when it ended by itself; -1 (errno) when it cannot
 * be waited for. The signals' dispositions are put back before it returns (SIGHUP's
 * left ignored under nohup). */
static int wait_install(pid_t pid, int *status) {
    static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa, old[3];
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    g_stop_signal = 0;
    g_stopped_by = 0;
    for (int i = 0; i < 3; i++) {
        sigaction(stops[i], NULL, &old[i]);
        if (old[i].sa_handler != SIG_IGN) sigaction(stops[i], &sa, NULL);
    }
    int sig = 0;
    for (;;) {
        pid_t got = waitpid(pid, status, WNOHANG);
        if (got == pid) { /* a stop that came as it ended still stops what would follow */
            if (g_stop_signal) sig = g_stopped_by = g_stop_signal;
            break;
        }
        if (got < 0 && errno != EINTR) {
            sig = -1;
            break;
        }
        if (g_stop_signal) { /* the first: a second meanwhile changes nothing */
            sig = g_stopped_by = g_stop_signal;
            *status = ex_stop_group(pid, 5.0);
            break;
        }
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    int saved = errno;
    for (int i = 0; i < 3; i++) sigaction(stops[i], &old[i], NULL);
    errno = saved;
    return sig;
}

/* Runs argv with its output appended to log and waits for it; `what` names it in a
 * failure's message. Returns 0 when it exits 0. */
static int run_logged(char *const *argv, const char *extra_env, const char *log, const char *what,
                      char *err, size_t errlen) {
    /* the command line, for whoever reads the log; never blocking on a FIFO there */
    int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
    struct stat sb;
    if (fd < 0 && errno == ENXIO) /* a FIFO nobody reads */
        return tn_error(err, errlen, TN_EIO, "cannot write %s: it is not a regular file; "
                        "hint: remove it (the study's installs log there)", log);
    if (fd < 0) return tn_error(err, errlen, TN_EIO, "cannot open %s: %s", log, strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return tn_error(err, errlen, TN_EIO, "cannot write %s: it is not a regular file; "
                        "hint: remove it (the study's installs log there)", log);
    }
    FILE *f = fdopen(fd, "a");
    if (!f) {
        close(fd);
        return tn_error(err, errlen, TN_EIO, "cannot open %s: %s", log, strerror(errno));
    }
    fputs("$", f);
    if (extra_env) fprintf(f, " %s", extra_env);
    for (size_t i = 0; argv[i]; i++) fprintf(f, " %s", argv[i]);
    fputc('\n', f);
    fclose(f);
    ex_run_mark mark;
    ex_run_mark_take(log, NULL, &mark);
    pid_t pid;
    char **env = pip_environment(extra_env);
    int rc = ex_spawn(argv, env, log, &pid, err, errlen);
    free(env);
    if (rc) return rc == EX_ENOEXEC ? TN_EINVAL : rc;
    int status, sig = wait_install(pid, &status);
    if (sig > 0)
        return tn_error(err, errlen, PKG_STOPPED,
                        "stopped by signal %d (%s) while %s; its processes were stopped too, "
                        "and nothing was stored", sig, strsignal(sig), what);
    if (sig < 0) return tn_error(err, errlen, TN_EIO, "waitpid: %s", strerror(errno));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    char how[96];
    ex_describe_status(status, how, sizeof how);
    char *tail = ex_log_tail(log, &mark, TAIL_LINES, TAIL_BYTES);
    char *head = tn_xasprintf("%s failed (%s)", what, how);
    char *msg = ex_failure_message(head, log, tail);
    const char *hint =
        strstr(tail, "No module named pip")
            ? "install pip for python3 (Debian: apt-get install python3-pip)"
        : strstr(tail, "invalid command 'bdist_wheel'") || strstr(tail, "No module named 'wheel'") ||
                strstr(tail, "No module named 'setuptools'")
            ? "pip builds the packages with this machine's setuptools and wheel "
              "(--no-build-isolation): install them (Debian: apt-get install "
              "python3-setuptools python3-wheel)"
            : "fix the package, or install on this machine what it requires; the whole "
              "output is in the log";
    rc = tn_error(err, errlen, TN_EIO, "%s\nhint: %s", msg, hint);
    free(msg);
    free(head);
    free(tail);
    return rc;
}

/* A package folder to lock for the install. */
typedef struct folder {
    dev_t dev;
    ino_t ino;
    const char *path;
    int fd; /* its lock, or -1 */
} folder;

static int folder_order(const void *a, const void *b) {
    const folder *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The configuration setuptools reads from DIST_EXTRA_CONFIG, after the package's
 * setup.cfg (so over what that says): its build/ and *.egg-info go to base instead of
 * the package folder. Values are read by ConfigParser, where '%' must be doubled. */
static int write_build_config(const char *path, const char *base, char *err, size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f) return tn_error(err, errlen, TN_EIO, "cannot write %s: %s", path, strerror(errno));
    const char *sections[] = {"[build]\nbuild_base = ", "[egg_info]\negg_base = "};
    for (size_t s = 0; s < 2; s++) {
        fputs(sections[s], f);
        for (const char *p = base; *p; p++) {
            if (*p == '%') fputc('%', f);
            fputc(*p, f);
        }
        fputc('\n', f);
    }
    if (fclose(f) != 0) return tn_error(err, errlen, TN_EIO, "cannot write %s: %s", path,
                                        strerror(errno));
    return 0;
}

/* Builds the package folder pkg_dir into a wheel with `python -m pip wheel --no-deps`,
 * in JOB_DIR/venv/build/N (venv the study's environment's folder, N the folder's place
 * among them): that folder emptied first, setuptools' build/ and *.egg-info in its
 * setuptools/ (DIST_EXTRA_CONFIG) and the wheel in its wheel/, so that nothing of an
 * earlier build is packed (setuptools packs whatever its build/lib holds: a module
 * deleted since would be installed still) and the package folder is only read. A
 * setuptools older than 65.4 (September 2022; Debian 12's 66 is newer), which does not
 * read DIST_EXTRA_CONFIG, builds in the folder, as pip always did: the folders' locks
 * cover that. The
 * wheel's path is *wheel's (yours to free). Returns 0, or what run_logged returns, or
 * TN_EIO / TN_EINVAL with a message. */
static int build_wheel(const char *python, const char *pkg_dir, const char *venv, size_t n,
                       const char *logpath, const char *job_id, FILE *log, char **wheel,
                       char *err, size_t errlen) {
    char *base = tn_xasprintf("%s/build/%zu", venv, n);
    char *setuptools = tn_xasprintf("%s/setuptools", base);
    char *wheels = tn_xasprintf("%s/wheel", base);
    char *config = tn_xasprintf("%s/setuptools.cfg", base);
    char *env = tn_xasprintf("DIST_EXTRA_CONFIG=%s", config);
    int rc = tn_remove_tree(base, err, errlen);
    if (rc == 0) rc = tn_make_dirs(setuptools, err, errlen);
    if (rc == 0) rc = write_build_config(config, setuptools, err, errlen);
    if (rc == 0) {
        if (job_id && log) fprintf(log, "%s: building %s (pip wheel)\n", job_id, pkg_dir);
        char *what = tn_xasprintf("building the package folder %s (pip wheel)", pkg_dir);
        char *argv[] = {(char *)python, "-m", "pip", "wheel", "--no-deps",
                        "--no-build-isolation", "--no-input", "--disable-pip-version-check",
                        "-w", wheels, (char *)pkg_dir, NULL};
        rc = run_logged(argv, env, logpath, what, err, errlen);
        free(what);
    }
    DIR *d = rc == 0 ? opendir(wheels) : NULL;
    if (rc == 0 && !d)
        rc = tn_error(err, errlen, TN_EIO, "pip wheel made no folder %s for %s: %s", wheels,
                      pkg_dir, strerror(errno));
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!ends_with(e->d_name, ".whl")) continue;
        if (*wheel) { /* one project, one wheel */
            rc = tn_error(err, errlen, TN_EIO, "pip wheel made more than one wheel of %s in %s",
                          pkg_dir, wheels);
            break;
        }
        *wheel = tn_xasprintf("%s/%s", wheels, e->d_name);
    }
    if (d) closedir(d);
    if (rc == 0 && !*wheel)
        rc = tn_error(err, errlen, TN_EIO, "pip wheel made no wheel of %s in %s", pkg_dir, wheels);
    if (rc) {
        free(*wheel);
        *wheel = NULL;
    }
    free(base);
    free(setuptools);
    free(wheels);
    free(config);
    free(env);
    return rc;
}

int pkg_prepare(tn_spec *spec, FILE *log, char *err, size_t errlen) {
    json_t *uris = json_object_get(spec->training_input, "packageUris");
    if (!spec->python_module || !json_is_array(uris) || json_array_size(uris) == 0) return 0;
    size_t n = json_array_size(uris), npk = 0; /* listed, and distinct */
    char *dir = tn_xasprintf("%s/venv", spec->job_dir);
    char *python = tn_xasprintf("%s/bin/python3", dir);
    char *logpath = tn_xasprintf("%s/install.log", dir);
    char **argv = tn_xcalloc(n + 10, sizeof *argv);
    int rc = tn_make_dirs(dir, err, errlen);
    for (size_t i = 0; i < n && rc == 0; i++) { /* absolute: a bare name is an index's */
        const char *u = json_string_value(json_array_get(uris, i));
        char abs[PATH_MAX];
        if (!u || !realpath(u, abs))
            rc = tn_error(err, errlen, TN_EINVAL, "trainingInput.packageUris[%zu]: \"%.200s\": "
                          "%s", i, u ? u : "", u ? strerror(errno) : "not a string");
        else if (strpbrk(abs, ";[]")) /* the path pip gets: the current folder's too */
            rc = tn_error(err, errlen, TN_EINVAL, "trainingInput.packageUris[%zu]: \"%.200s\" "
                          "is %s, which has '%c' in it: pip would read it as requirement "
                          "syntax (';' starts an environment marker, '[' extras); move the "
                          "package or run the tuner from a folder without it",
                          i, u, abs, *strpbrk(abs, ";[]"));
        else {
            int again = 0; /* listed before (another spelling, a link): given pip once */
            for (size_t k = 0; k < npk && !again; k++) again = !strcmp(argv[8 + k], abs);
            if (!again) argv[8 + npk++] = tn_xstrdup(abs);
        }
    }
    for (size_t i = 0; i < npk && rc == 0; i++) { /* a folder's wheel goes under dir */
        struct stat sb;
        if (stat(argv[8 + i], &sb) == 0 && S_ISDIR(sb.st_mode) && strpbrk(dir, ";[]"))
            rc = tn_error(err, errlen, TN_EINVAL, "the package folder %s is built into a wheel "
                          "under %s, which has '%c' in it: pip would read it as requirement "
                          "syntax; give the study a jobDir without it", argv[8 + i], dir,
                          *strpbrk(dir, ";[]"));
    }
    if (rc == 0 && access(python, X_OK) != 0) {
        if (log) fprintf(log, "%s: making the Python environment %s\n", spec->job_id, dir);
        char *venv[] = {"python3", "-m", "venv", "--system-site-packages", "--without-pip",
                        dir, NULL};
        rc = run_logged(venv, NULL, logpath, "making the study's Python environment "
                                       "(python3 -m venv)", err, errlen);
    }
    /* the folders, locked for their builds (a setuptools older than 65.4 builds in
     * them): each once, however often it is listed (a second flock of it would wait on
     * the first for ever), and in one order, by device and inode, so that two studies
     * listing the same folders in other orders cannot each hold one and wait for the
     * other */
    folder *folders = tn_xcalloc(n + 1, sizeof *folders);
    size_t nfolders = 0;
    for (size_t i = 0; i < npk && rc == 0; i++) {
        struct stat sb;
        if (stat(argv[8 + i], &sb) != 0 || !S_ISDIR(sb.st_mode)) continue;
        int seen = 0;
        for (size_t k = 0; k < nfolders && !seen; k++)
            seen = folders[k].dev == sb.st_dev && folders[k].ino == sb.st_ino;
        if (!seen) folders[nfolders++] = (folder){sb.st_dev, sb.st_ino, argv[8 + i], -1};
    }
    qsort(folders, nfolders, sizeof *folders, folder_order);
    for (size_t k = 0; k < nfolders && rc == 0; k++) {
        int fd = folders[k].fd = open(folders[k].path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) == 0) continue;
        if (log) fprintf(log, "%s: waiting for another install of %s to end\n", spec->job_id,
                         folders[k].path);
        while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
        }
    }
    /* each folder made a wheel of its own, by setuptools outside the folder: the wheel
     * is what the install below gets */
    for (size_t i = 0, built = 0; i < npk && rc == 0; i++) {
        struct stat sb;
        if (stat(argv[8 + i], &sb) != 0 || !S_ISDIR(sb.st_mode)) continue;
        char *wheel = NULL;
        rc = build_wheel(python, argv[8 + i], dir, ++built, logpath, log ? spec->job_id : NULL,
                         log, &wheel, err, errlen);
        if (rc == 0) {
            free(argv[8 + i]);
            argv[8 + i] = wheel;
        }
    }
    for (size_t k = 0; k < nfolders; k++)
        if (folders[k].fd >= 0) close(folders[k].fd); /* and so unlocked */
    free(folders);
    if (rc == 0) {
        if (log) fprintf(log, "%s: installing %zu package%s with pip (%s)\n", spec->job_id, npk,
                         npk == 1 ? "" : "s", logpath);
        const char *head[] = {python, "-m", "pip", "install", "--no-build-isolation",
                              "--no-input", "--disable-pip-version-check",
                              "--no-warn-script-location"};
        for (size_t i = 0; i < 8; i++) argv[i] = tn_xstrdup(head[i]);
        rc = run_logged(argv, NULL, logpath, "installing trainingInput.packageUris (pip install)",
                        err, errlen);
    }
    if (rc == 0) { /* wheels again, forced: pip keeps one of the same version otherwise */
        const char *again[] = {python, "-m", "pip", "install", "--no-deps", "--force-reinstall",
                               "--no-input", "--disable-pip-version-check",
                               "--no-warn-script-location"};
        char **wargv = tn_xcalloc(n + 10, sizeof *wargv);
        size_t k = 0;
        for (; k < 9; k++) wargv[k] = (char *)again[k];
        for (size_t i = 0; i < npk; i++)
            if (ends_with(argv[8 + i], ".whl")) wargv[k++] = argv[8 + i];
        if (k > 9)
            rc = run_logged(wargv, NULL, logpath, "installing the wheels of trainingInput.packageUris "
                            "again (pip install --force-reinstall)", err, errlen);
        free(wargv);
    }
    if (rc == 0) { /* each replica runs the environment's python3 -m MODULE */
        for (size_t i = 0; i < spec->ncommand; i++) free(spec->command[i]);
        free(spec->command);
        spec->command = tn_xcalloc(4, sizeof *spec->command);
        spec->command[0] = python;
        spec->command[1] = tn_xstrdup("-m");
        spec->command[2] = spec->python_module;
        spec->ncommand = 3;
        spec->python_module = NULL;
        python = NULL;
    }
    for (size_t i = 0; i < n + 8; i++) free(argv[i]);
    free(argv);
    free(logpath);
    free(python);
    free(dir);
    return rc;
}
