/*
 * local.c — the local backend of the executor: a trial job's replicas are processes
 * of this host (see executor.h).
 *
 * The backend schedules jobs on the host's cores and GPUs: a job starts only when the
 * cores and GPUs its replicas ask for are free (else ex_job_start says EX_BUSY), and
 * each replica gets distinct devices in CUDA_VISIBLE_DEVICES. A job moves through
 * attempts; an attempt picks free ports on 127.0.0.1, starts every replica, then
 * reacts to exits by the rules of contract.h (restart in place, re-run the job, fail,
 * succeed when the chief exits 0). Stopping is one path for every reason (success,
 * failure, retry, timeout, stop request): SIGTERM to every live process group,
 * SIGKILL after the grace period, and when the last replica is reaped the job either
 * starts its next attempt or is over. Replicas get PR_SET_PDEATHSIG(SIGKILL): if the
 * tuner dies, its replicas die with it instead of running on beside a resumed study's.
 *
 * Nothing a replica starts outlives it: its process group is killed when it exits, and
 * what left the group is found two ways. Each replica is a child subreaper (ex_spawn)
 * and so is this process (host_new; not as PID 1, which adopts every orphan anyway): a
 * descendant whose parent dies becomes the replica's child, and this process's when the
 * replica exits, where kill_orphans finds it whatever it did to its session or
 * environment (sparing the children this process had before, note_inherited, and
 * what is in their process groups or this process's, which no replica's descendant is).
 * kill_under finds the rest by the CLOUD_ML_HP_METRIC_FILE each process of a trial
 * inherits: what an earlier tuner's replicas left running, for a resumed study.
 */
#include "executor/executor_internal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/status.h"

extern char **environ;

/* The host's resources (x->impl). */
typedef struct local_host {
    int cores_total, cores_used;
    int ngpus;
    char **gpu_ids;         /* (ngpus) device ids as CUDA_VISIBLE_DEVICES names them */
    unsigned char *gpu_used;
    int adopts;             /* this process is a child subreaper: kill_orphans kills
                               what it adopts */
    struct inherited {      /* its children from before (started before it exec'd, as in
                               `monitor & exec tuner run ...`): not the replicas' */
        pid_t pid;
        pid_t pgrp;
        unsigned long long start; /* /proc/PID/stat's starttime */
    } *inherited;
    size_t ninherited;
    pid_t own_group;        /* this process's group: a replica and its descendants are in
                               groups of their own (ex_spawn), so an orphan in this one,
                               or in an inherited child's, is the inherited child's */
} local_host;

typedef struct local_replica {
    ex_job *job;
    ex_replica *r;          /* the front's replica (name, files, reader) */
    char *gpus;             /* CUDA_VISIBLE_DEVICES */
    pid_t pid;              /* > 0 while running */
    pid_t group;            /* its latest process group (killed when it exited) */
    int restarts;           /* restarts in place during this attempt */
    ex_run_mark mark;       /* where its current run started in its files */
    ex_failure last_failure; /* its last failure in this trial (a repeat fails it) */
    struct event *restart_ev; /* pending while it waits out its restart backoff */
} local_replica;

typedef struct local_job {
    local_replica *reps;    /* (nreps), as the front's */
    char **addrs;           /* cluster addresses of chief, workers, ps: "127.0.0.1:PORT" */
    int ncluster;
    int cores;              /* cores taken on the host */
    int *gpus_taken;        /* indexes into local_host.gpu_ids */
    int ngpus_taken;
    int retry;              /* the stop in progress starts another attempt */
    int orphans;            /* processes kill_orphans killed for this job's replicas */
    struct event *grace_ev;
    struct event *retry_ev; /* pending while the next attempt waits out its backoff */
} local_job;

static local_host *host_of(ex_job *j) { return j->x->impl; }

static int online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static int job_cores(const ex_job_config *cfg) {
    int n = 0;
    for (int t = 0; t < TF_NTYPES; t++) n += cfg->count[t] * (cfg->cores[t] > 0 ? cfg->cores[t] : 1);
    return n;
}

static int job_gpus(const ex_job_config *cfg) {
    int n = 0;
    for (int t = 0; t < TF_NTYPES; t++) n += cfg->count[t] * cfg->gpus[t];
    return n;
}

/* ---- GPUs of the host ---- */

/* The ids $CUDA_VISIBLE_DEVICES lists (NULL when unset; an empty list when set to ""):
 * yours to ex_strv_free, count in *n. */
static char **visible_devices(size_t *n) {
    *n = 0;
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v) return NULL;
    char **ids = tn_xcalloc(strlen(v) / 2 + 2, sizeof *ids);
    const char *p = v;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len > 0) {
            char *id = tn_xmalloc(len + 1);
            memcpy(id, p, len);
            id[len] = '\0';
            ids[(*n)++] = id;
        }
        p += len;
        if (*p == ',') p++;
    }
    return ids;
}

int ex_host_gpus(char *why, size_t whylen) {
    /* NVML's C API, declared here: the tuner needs no CUDA headers to build. */
    typedef int (*nvml_init_fn)(void);
    typedef int (*nvml_count_fn)(unsigned int *);
    typedef const char *(*nvml_error_fn)(int);
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        tn_error(why, whylen, TN_EIO, "no NVIDIA driver (libnvidia-ml.so.1 cannot be loaded)");
        return 0;
    }
    nvml_init_fn init = (nvml_init_fn)dlsym(lib, "nvmlInit_v2");
    nvml_count_fn count = (nvml_count_fn)dlsym(lib, "nvmlDeviceGetCount_v2");
    nvml_init_fn shutdown = (nvml_init_fn)dlsym(lib, "nvmlShutdown");
    nvml_error_fn errstr = (nvml_error_fn)dlsym(lib, "nvmlErrorString");
    unsigned int n = 0;
    int rc = -1;
    if (!init || !count || !shutdown) {
        tn_error(why, whylen, TN_EIO, "libnvidia-ml.so.1 lacks nvmlInit_v2 or nvmlDeviceGetCount_v2");
    } else if ((rc = init()) != 0) {
        tn_error(why, whylen, TN_EIO, "NVML cannot start: %s", errstr ? errstr(rc) : "error");
    } else {
        if ((rc = count(&n)) != 0) {
            tn_error(why, whylen, TN_EIO, "NVML cannot count the GPUs: %s",
                     errstr ? errstr(rc) : "error");
            n = 0;
        }
        shutdown();
    }
    dlclose(lib);
    size_t nvis;
    char **vis = visible_devices(&nvis);
    if (vis && nvis < n) n = (unsigned)nvis;
    ex_strv_free(vis);
    if (n == 0 && rc == 0) tn_error(why, whylen, TN_EIO, "NVML found no GPU");
    return (int)n;
}

/* ---- the host's share of the executor ---- */

static void note_inherited(local_host *h);

static local_host *host_new(const ex_options *o) {
    local_host *h = tn_xcalloc(1, sizeof *h);
    /* the replicas' orphans become ours when a replica exits (kill_orphans); not where
     * this process is a container's init, which adopts every orphan of the container */
    if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) {
        h->adopts = 1;
        h->own_group = getpgrp();
        note_inherited(h);
    }
    h->cores_total = o->cores > 0 ? o->cores : online_cores();
    h->ngpus = o->gpus > 0 ? o->gpus : 0;
    size_t nvis;
    char **vis = visible_devices(&nvis);
    if (vis && (size_t)h->ngpus > nvis) h->ngpus = (int)nvis; /* only those listed */
    h->gpu_ids = tn_xcalloc((size_t)h->ngpus + 1, sizeof *h->gpu_ids);
    h->gpu_used = tn_xcalloc((size_t)h->ngpus + 1, 1);
    for (int g = 0; g < h->ngpus; g++)
        h->gpu_ids[g] = vis ? tn_xstrdup(vis[g]) : tn_xasprintf("%d", g);
    ex_strv_free(vis);
    return h;
}

static void local_free(ex_executor *x) {
    local_host *h = x->impl;
    if (!h) return;
    if (h->adopts) prctl(PR_SET_CHILD_SUBREAPER, 0); /* nothing watches for them now */
    free(h->inherited);
    ex_strv_free(h->gpu_ids);
    free(h->gpu_used);
    free(h);
    x->impl = NULL;
}

int ex__local_check(const ex_options *o, const ex_job_config *cfg, char *err, size_t errlen) {
    size_t nvis;
    char **vis = visible_devices(&nvis);
    ex_strv_free(vis);
    if (vis && (size_t)o->gpus > nvis)
        return tn_error(err, errlen, TN_EINVAL,
                        "--gpus=%d, but CUDA_VISIBLE_DEVICES lists %zu device%s (%s)\nhint: "
                        "list them all in CUDA_VISIBLE_DEVICES, or lower --gpus",
                        o->gpus, nvis, nvis == 1 ? "" : "s", getenv("CUDA_VISIBLE_DEVICES"));
    if (o->oversubscribe) return 0;
    int have_cores = o->cores > 0 ? o->cores : online_cores();
    int cores = job_cores(cfg), gpus = job_gpus(cfg);
    if (cores > have_cores)
        return tn_error(err, errlen, TN_EINVAL,
                        "a trial needs %d cores but the machine has %d (a trial's cores are the "
                        "sum of its replicas' trainingInput.resources)\nhint: lower the "
                        "resources, pass --cores=N, or --oversubscribe",
                        cores, have_cores);
    if (gpus > o->gpus)
        return tn_error(err, errlen, TN_EINVAL,
                        "a trial needs %d GPU%s but the machine has %d\nhint: lower the spec's "
                        "acceleratorConfig counts, pass --gpus=N (if the count was not "
                        "detected), or --oversubscribe",
                        gpus, gpus == 1 ? "" : "s", o->gpus);
    return 0;
}

/* ---- replicas ---- */

/* The TF_CONFIG of replica r for the current addresses (yours to tf_config_clear). */
static void replica_tf_config(const ex_job *j, const local_replica *lr, tf_config *c) {
    const local_job *lj = j->impl;
    tf_config_init(c);
    c->master = !j->cfg.use_chief_name;
    int a = 0;
    for (int t = 0; t < TF_NCLUSTER; t++)
        for (int i = 0; i < j->cfg.count[t]; i++) tf_config_add(c, t, lj->addrs[a++]);
    tf_config_set_task(c, lr->r->type, lr->r->index, j->trial);
    tf_config_set_job(c, j->job);
}

static void on_replica_exit(void *ctx, int status);

/* Starts replica lr. Returns 0, or a negative code with a message (EX_ENOEXEC: the
 * program could not be executed, a permanent error). */
static int spawn(local_replica *lr, char *err, size_t errlen) {
    ex_job *j = lr->job;
    tf_config c;
    replica_tf_config(j, lr, &c);
    ex_contract ct = {.study = j->study, .trial = j->trial, .metric_tag = j->metric_tag,
                      .metric_file = lr->r->metric_path, .tf = &c,
                      .cores = j->cfg.cores[lr->r->type], .gpus = lr->gpus,
                      .user_env = (char *const *)j->cfg.env[lr->r->type]};
    char **env = ex_contract_env(environ, &ct);
    tf_config_clear(&c);
    /* The trial's logs and metrics folders, again: a program that clears its --job-dir
     * as it starts has removed them by its restart. */
    char *logs = ex_logs_dir(j->job_dir), *metrics = ex_metrics_dir(j->job_dir);
    int rc = tn_make_dirs(logs, err, errlen);
    if (!rc) rc = tn_make_dirs(metrics, err, errlen);
    free(logs);
    free(metrics);
    if (rc) {
        ex_strv_free(env);
        return rc;
    }
    ex_run_mark_take(lr->r->log_path, lr->r->metric_path, &lr->mark);
    pid_t pid;
    rc = ex_spawn(j->argv, env, lr->r->log_path, &pid, err, errlen);
    ex_strv_free(env);
    if (rc) return rc;
    lr->pid = pid;
    lr->group = pid;
    ex__watch(j->x, pid, on_replica_exit, lr);
    ex__emit(j, lr->r->name, EX_EV_STARTED, "pid %ld", (long)pid);
    return 0;
}

static int live_replicas(const ex_job *j) {
    const local_job *lj = j->impl;
    int n = 0;
    for (size_t i = 0; i < j->nreps; i++) n += lj->reps[i].pid > 0;
    return n;
}

static void signal_all(ex_job *j, int sig) {
    local_job *lj = j->impl;
    for (size_t i = 0; i < j->nreps; i++)
        if (lj->reps[i].pid > 0) kill(-lj->reps[i].pid, sig);
}

static int start_attempt(ex_job *j, char *err, size_t errlen) {
    local_job *lj = j->impl;
    int *ports = tn_xcalloc((size_t)lj->ncluster + 1, sizeof *ports);
    int rc = tf_pick_local_ports(lj->ncluster, ports, err, errlen);
    if (rc == 0) {
        for (int i = 0; i < lj->ncluster; i++) {
            free(lj->addrs[i]);
            lj->addrs[i] = tn_xasprintf("127.0.0.1:%d", ports[i]);
        }
    }
    free(ports);
    if (rc) return rc;
    j->attempts++;
    for (size_t i = 0; i < j->nreps && rc == 0; i++) {
        lj->reps[i].restarts = 0;
        rc = spawn(&lj->reps[i], err, errlen);
    }
    if (rc) return rc;
    ex__emit(j, NULL, EX_EV_RUNNING, "attempt %d: %zu replica%s started", j->attempts, j->nreps,
             j->nreps == 1 ? "" : "s");
    return 0;
}

static int kill_under(const char *dir, int trials, const pid_t *groups, size_t ngroups);
static int kill_orphans(ex_executor *x, const pid_t *groups, size_t ngroups);

/* The process groups of j's replicas, their last runs' included (yours to free). */
static pid_t *job_groups(const ex_job *j) {
    const local_job *lj = j->impl;
    pid_t *groups = tn_xcalloc(j->nreps + 1, sizeof *groups);
    for (size_t i = 0; i < j->nreps; i++) groups[i] = lj->reps[i].group;
    return groups;
}

/* Starts the next attempt; when it cannot start, the job fails with why. */
static void next_attempt(ex_job *j) {
    char err[1024];
    if (start_attempt(j, err, sizeof err) == 0) return;
    j->phase = EX_PH_STOPPING;
    j->stop_outcome = EX_FAILED;
    free(j->stop_error);
    j->stop_error = tn_xstrdup(err);
    if (live_replicas(j) > 0) { /* a later replica failed to start: stop the rest */
        signal_all(j, SIGKILL);
        return;
    }
    ex__finish(j);
}

static void on_retry_due(evutil_socket_t fd, short what, void *arg) {
    ex_job *j = arg;
    if (j->phase == EX_PH_RUNNING) next_attempt(j);
    (void)fd, (void)what;
}

/* Every replica is gone: start the next attempt (after its backoff), or the job is
 * over. Either way nothing of this attempt lives on, not even what left the process
 * groups, and no replica waits to restart. */
static void stopped(ex_job *j) {
    local_job *lj = j->impl;
    evtimer_del(lj->grace_ev);
    evtimer_del(lj->retry_ev);
    for (size_t i = 0; i < j->nreps; i++) evtimer_del(lj->reps[i].restart_ev);
    pid_t *groups = job_groups(j);
    int strays = lj->orphans + kill_under(j->job_dir, 0, groups, j->nreps);
    lj->orphans = 0;
    free(groups);
    if (strays > 0)
        ex__emit(j, NULL, EX_EV_STOPPING, "killed %d process%s the job left behind outside its "
                 "replicas' process groups", strays, strays == 1 ? "" : "es");
    if (lj->retry && j->timed_out) { /* the trial's time ran out: no next attempt */
        lj->retry = 0;
        char *why = tn_xasprintf("the trial timed out after %gs while its job stopped to run "
                                 "again (%s)",
                                 j->cfg.timeout_seconds, j->stop_error ? j->stop_error : "");
        free(j->stop_error);
        j->stop_error = why; /* the outcome is EX_FAILED already (stop_for_retry) */
    } else if (lj->retry) {
        lj->retry = 0;
        ex__poll_metrics(j, 1); /* the last attempt's last records */
        j->phase = EX_PH_RUNNING;
        double pause = ex_backoff(j->cfg.restart_backoff, j->cfg.restart_backoff_max,
                                  j->attempts);
        if (pause > 0) {
            ex__emit(j, NULL, EX_EV_RETRYING, "re-running the job in %.3g s (attempt %d of %d)",
                     pause, j->attempts + 1, j->cfg.max_job_retries + 1);
            struct timeval tv = ex__timeval(pause);
            evtimer_add(lj->retry_ev, &tv);
        } else {
            ex__emit(j, NULL, EX_EV_RETRYING, "re-running the job (attempt %d of %d)",
                     j->attempts + 1, j->cfg.max_job_retries + 1);
            next_attempt(j);
        }
        return;
    }
    ex__finish(j);
}

static void local_stop(ex_job *j) {
    local_job *lj = j->impl;
    if (live_replicas(j) == 0) {
        stopped(j);
        return;
    }
    ex__emit(j, NULL, EX_EV_STOPPING, "%s",
             j->stop_error ? j->stop_error : "the chief succeeded; stopping the others");
    signal_all(j, SIGTERM);
    struct timeval tv = ex__timeval(j->cfg.grace_seconds);
    evtimer_add(lj->grace_ev, &tv);
}

/* Stops the job to run it again (restarts of a replica used up). */
static void stop_for_retry(ex_job *j, const char *why) {
    local_job *lj = j->impl;
    lj->retry = 1;
    ex__begin_stop(j, EX_FAILED, why);
}

static void on_restart_due(evutil_socket_t fd, short what, void *arg) {
    local_replica *lr = arg;
    ex_job *j = lr->job;
    char err[1024];
    if (j->phase == EX_PH_RUNNING && spawn(lr, err, sizeof err) != 0)
        ex__begin_stop(j, EX_FAILED, err);
    (void)fd, (void)what;
}

static void on_replica_exit(void *ctx, int status) {
    local_replica *lr = ctx;
    ex_job *j = lr->job;
    const ex_replica *r = lr->r;
    char how[128], what[1024];
    ex_describe_status(status, how, sizeof how);
    kill(-lr->pid, SIGKILL); /* what the replica left in its process group goes with it */
    lr->pid = 0;
    pid_t *groups = job_groups(j); /* and what left the group, now our children */
    local_job *lj = j->impl;
    lj->orphans += kill_orphans(j->x, groups, j->nreps);
    free(groups);
    ex__emit_at(j, ex__now(), r->name, EX_EV_EXITED, ex_exit_of_status(status), "%s", how);
    if (j->phase == EX_PH_STOPPING) {
        if (live_replicas(j) == 0) stopped(j);
        return;
    }
    if (j->phase != EX_PH_RUNNING) return;
    int action = ex_exit_action(r->type, status, lr->restarts, j->cfg.max_replica_restarts);
    if (action == EX_EXIT_JOB_SUCCEEDED) {
        ex__begin_stop(j, EX_SUCCEEDED, NULL);
        return;
    }
    if (action == EX_EXIT_DONE) return;

    /* A failure. What its run reported (read at its `exited` event) is handed over now,
     * before any restart; its log's last lines go with the message. */
    ex__poll_metrics(j, 0);
    char *tail = ex_log_tail(r->log_path, &lr->mark, EX_TAIL_LINES, EX_TAIL_BYTES);
    int reported = ex_run_reported(r->metric_path, &lr->mark);
    int repeats = ex_failure_repeats(&lr->last_failure, status, tail, reported);
    char *msg = NULL;
    if (action == EX_EXIT_PERMANENT) {
        snprintf(what, sizeof what,
                 "replica %s exited with status 2 (a usage error: re-running cannot help)",
                 r->name);
        msg = ex_failure_message(what, r->log_path, tail);
    } else if (repeats && j->cfg.fail_on_repeat) {
        snprintf(what, sizeof what,
                 "replica %s failed twice the same way (%s, the same last lines) before "
                 "reporting anything: re-running cannot help, so the trial fails "
                 "(restartPolicy.failOnRepeatedError)",
                 r->name, how);
        msg = ex_failure_message(what, r->log_path, tail);
    } else if (action == EX_EXIT_RESTART) {
        lr->restarts++;
        j->restarts++;
        double pause = ex_backoff(j->cfg.restart_backoff, j->cfg.restart_backoff_max,
                                  lr->restarts);
        if (pause > 0) {
            ex__emit(j, r->name, EX_EV_RESTARTED, "restart %d of %d after %s, in %.3g s",
                     lr->restarts, j->cfg.max_replica_restarts, how, pause);
            struct timeval tv = ex__timeval(pause);
            evtimer_add(lr->restart_ev, &tv);
        } else {
            ex__emit(j, r->name, EX_EV_RESTARTED, "restart %d of %d after %s", lr->restarts,
                     j->cfg.max_replica_restarts, how);
            on_restart_due(-1, 0, lr);
        }
    } else if (j->attempts <= j->cfg.max_job_retries) { /* EX_EXIT_GIVE_UP */
        snprintf(what, sizeof what, "replica %s failed %d time%s (%s)", r->name,
                 lr->restarts + 1, lr->restarts ? "s" : "", how);
        stop_for_retry(j, what);
    } else {
        snprintf(what, sizeof what,
                 "replica %s failed %d time%s (last: %s) and the job was run %d time%s",
                 r->name, lr->restarts + 1, lr->restarts ? "s" : "", how, j->attempts,
                 j->attempts == 1 ? "" : "s");
        msg = ex_failure_message(what, r->log_path, tail);
    }
    if (msg) ex__begin_stop(j, EX_FAILED, msg);
    free(msg);
    free(tail);
}

static void on_grace(evutil_socket_t fd, short what, void *arg) {
    ex_job *j = arg;
    ex__emit(j, NULL, EX_EV_STOPPING, "grace period of %gs over: SIGKILL", j->cfg.grace_seconds);
    signal_all(j, SIGKILL);
}

static int local_has_room(ex_executor *x, const ex_job_config *cfg) {
    if (x->o.oversubscribe) return 1;
    if (!x->impl) x->impl = host_new(&x->o);
    local_host *h = x->impl;
    int free_gpus = 0;
    for (int g = 0; g < h->ngpus; g++) free_gpus += !h->gpu_used[g];
    return h->cores_used + job_cores(cfg) <= h->cores_total && free_gpus >= job_gpus(cfg);
}

/* Takes the job's cores and GPUs on the host; 0, or EX_BUSY when they are not free. */
static int take_resources(ex_job *j) {
    local_host *h = host_of(j);
    local_job *lj = j->impl;
    lj->cores = job_cores(&j->cfg);
    int gpus = job_gpus(&j->cfg);
    if (!local_has_room(j->x, &j->cfg)) return EX_BUSY;
    h->cores_used += lj->cores;
    lj->gpus_taken = tn_xcalloc((size_t)gpus + 1, sizeof *lj->gpus_taken);
    int g = 0;
    for (size_t i = 0; i < j->nreps; i++) {
        local_replica *lr = &lj->reps[i];
        char list[256] = "";
        for (int k = 0; k < j->cfg.gpus[lr->r->type]; k++) {
            while (g < h->ngpus && h->gpu_used[g]) g++;
            if (g >= h->ngpus) break; /* oversubscribed: share */
            h->gpu_used[g] = 1;
            lj->gpus_taken[lj->ngpus_taken++] = g;
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s%s", used ? "," : "", h->gpu_ids[g]);
        }
        lr->gpus = tn_xstrdup(list);
    }
    return 0;
}

static int local_release(ex_job *j) {
    local_job *lj = j->impl;
    if (!lj) return 0;
    if (live_replicas(j) > 0) {
        signal_all(j, SIGKILL);
        pid_t *groups = job_groups(j);
        for (size_t i = 0; i < j->nreps; i++) {
            local_replica *lr = &lj->reps[i];
            if (lr->pid <= 0) continue;
            ex__unwatch(j->x, lr->pid);
            while (waitpid(lr->pid, NULL, 0) < 0 && errno == EINTR) {
            }
            lr->pid = 0;
        }
        kill_orphans(j->x, groups, j->nreps); /* what left the groups (setsid) too */
        kill_under(j->job_dir, 0, groups, j->nreps);
        free(groups);
    }
    local_host *h = host_of(j);
    h->cores_used -= lj->cores;
    for (int i = 0; i < lj->ngpus_taken; i++) h->gpu_used[lj->gpus_taken[i]] = 0;
    for (size_t i = 0; i < j->nreps; i++) {
        free(lj->reps[i].gpus);
        ex_failure_clear(&lj->reps[i].last_failure);
        if (lj->reps[i].restart_ev) event_free(lj->reps[i].restart_ev);
    }
    for (int i = 0; i < lj->ncluster; i++) free(lj->addrs[i]);
    free(lj->addrs);
    free(lj->reps);
    free(lj->gpus_taken);
    if (lj->grace_ev) event_free(lj->grace_ev);
    if (lj->retry_ev) event_free(lj->retry_ev);
    free(lj);
    j->impl = NULL;
    return 0; /* SIGKILL, waited for: nothing of it runs */
}

static int local_start(ex_job *j, char *err, size_t errlen) {
    ex_executor *x = j->x;
    if (!x->impl) x->impl = host_new(&x->o);
    local_job *lj = tn_xcalloc(1, sizeof *lj);
    j->impl = lj;
    lj->reps = tn_xcalloc(j->nreps + 1, sizeof *lj->reps);
    for (size_t i = 0; i < j->nreps; i++) lj->reps[i] = (local_replica){.job = j, .r = &j->reps[i]};
    lj->ncluster = j->cfg.count[TF_CHIEF] + j->cfg.count[TF_WORKER] + j->cfg.count[TF_PS];
    lj->addrs = tn_xcalloc((size_t)lj->ncluster + 1, sizeof *lj->addrs);
    if (take_resources(j) == EX_BUSY) {
        free(lj->reps);
        free(lj->addrs);
        free(lj);
        j->impl = NULL;
        return EX_BUSY;
    }
    lj->grace_ev = evtimer_new(x->base, on_grace, j);
    lj->retry_ev = evtimer_new(x->base, on_retry_due, j);
    for (size_t i = 0; i < j->nreps; i++)
        lj->reps[i].restart_ev = evtimer_new(x->base, on_restart_due, &lj->reps[i]);
    if (!lj->grace_ev || !lj->retry_ev) tn_out_of_memory("a job's timers");
    return start_attempt(j, err, errlen);
}

/* Of process pid, from /proc/PID/stat ("pid (comm) state ppid pgrp session tty tpgid
 * flags minflt cminflt majflt cmajflt utime stime cutime cstime priority nice threads
 * itrealvalue starttime ...", comm may hold anything): its parent, process group and
 * start time (clock ticks after boot), and whether it is a zombie. 0, or -1 when it is
 * gone. */
static int proc_stat(long pid, pid_t *ppid, pid_t *pgrp, unsigned long long *start,
                     int *zombie) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n;
    do {
        n = read(fd, buf, sizeof buf - 1);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'), *save = NULL, state = 0;
    long pp = 0, pg = 0;
    int field = 3, have = 0;
    for (char *t = p ? strtok_r(p + 1, " ", &save) : NULL; t && field <= 22;
         t = strtok_r(NULL, " ", &save), field++) {
        if (field == 3) state = t[0];
        else if (field == 4) pp = strtol(t, NULL, 10);
        else if (field == 5) pg = strtol(t, NULL, 10);
        else if (field == 22) *start = strtoull(t, NULL, 10), have = 1;
    }
    if (!have) return -1;
    *ppid = (pid_t)pp;
    *pgrp = (pid_t)pg;
    *zombie = state == 'Z' || state == 'X';
    return 0;
}

/* Calls fn(ctx, pid, pgrp, start, zombie) for each child of this process. */
static void each_child(void (*fn)(void *ctx, pid_t pid, pid_t pgrp, unsigned long long start,
                                  int zombie),
                       void *ctx) {
    pid_t self = getpid();
    DIR *proc = opendir("/proc");
    struct dirent *e;
    while (proc && (e = readdir(proc))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        pid_t ppid, pgrp;
        unsigned long long start;
        int zombie;
        if (*end || pid <= 1 || proc_stat(pid, &ppid, &pgrp, &start, &zombie) || ppid != self)
            continue;
        fn(ctx, (pid_t)pid, pgrp, start, zombie);
    }
    if (proc) closedir(proc);
}

static void add_inherited(void *ctx, pid_t pid, pid_t pgrp, unsigned long long start,
                          int zombie) {
    local_host *h = ctx;
    h->inherited = tn_xrealloc(h->inherited, (h->ninherited + 1) * sizeof *h->inherited);
    h->inherited[h->ninherited++] = (struct inherited){pid, pgrp, start};
    (void)zombie;
}

/* This process's children now, before any replica: kill_orphans leaves them alone. */
static void note_inherited(local_host *h) { each_child(add_inherited, h); }

/* A round of kill_orphans. */
typedef struct orphan_round {
    ex_executor *x;
    const pid_t *groups;
    size_t ngroups;
    pid_t found[256];
    size_t nfound;
    int killed;
} orphan_round;

static void orphan_seen(void *ctx, pid_t pid, pid_t pgrp, unsigned long long start,
                        int zombie) {
    orphan_round *r = ctx;
    const local_host *h = r->x->impl;
    if (r->nfound == sizeof r->found / sizeof r->found[0]) return; /* the next round's */
    for (size_t i = 0; i < r->x->nwatches; i++)
        if (r->x->watches[i].pid == pid) return; /* a replica, a command, or an orphan
                                                     killed already, whose exit is awaited */
    for (size_t i = 0; i < h->ninherited; i++)
        if (h->inherited[i].pid == pid && h->inherited[i].start == start) return;
    /* in a replica's group first: an inherited child's group id, long gone, may have
     * been given to a replica since */
    int in_group = 0;
    for (size_t g = 0; g < r->ngroups && !in_group; g++) in_group = r->groups[g] == pgrp;
    if (!in_group) {
        if (pgrp == h->own_group) return; /* an inherited child's orphan (its own group) */
        for (size_t i = 0; i < h->ninherited; i++)
            if (h->inherited[i].pgrp == pgrp) return; /* an orphan in an inherited group */
    }
    if (!zombie && kill(pid, SIGKILL) == 0 && !in_group) r->killed++;
    r->found[r->nfound++] = pid;
}

static void on_orphan_exit(void *ctx, int status);

/* Kills every child of this process that is neither a watched one nor one it had
 * before (note_inherited) nor in the process group of this process or of one it had
 * before (what those leave: `( helper & ) ; exec tuner run`): orphans of the replicas
 * (host_new, ex_spawn), a daemon that left its replica's process group and environment
 * (env -i setsid ...) among them. Waits
 * up to 200 ms for them to go, so that what they left in turn, ours as well then, is
 * found by the next round; those still there are watched, and their exits start
 * another round (on_orphan_exit) instead of holding up the loop. Returns how many it
 * killed that were running outside the ngroups process groups in groups (those are
 * killed already, and not counted); each is counted once. */
static int kill_orphans(ex_executor *x, const pid_t *groups, size_t ngroups) {
    const local_host *h = x->impl;
    if (!h || !h->adopts) return 0;
    int killed = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int round = 0; round < 32; round++) {
        orphan_round r = {.x = x, .groups = groups, .ngroups = ngroups};
        each_child(orphan_seen, &r);
        killed += r.killed;
        if (r.nfound == 0) break;
        /* reaped here, not by the SIGCHLD watcher: once one is, its orphans are ours */
        struct timespec tick = {0, 1000000}, now;
        for (;;) {
            size_t left = 0;
            for (size_t i = 0; i < r.nfound; i++) {
                pid_t w = waitpid(r.found[i], NULL, WNOHANG);
                if (w == 0 || (w < 0 && errno == EINTR)) r.found[left++] = r.found[i];
            }
            r.nfound = left;
            clock_gettime(CLOCK_MONOTONIC, &now);
            double spent = (double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec -
                                                                              t0.tv_nsec);
            if (r.nfound == 0 || spent > 0.2) break;
            nanosleep(&tick, NULL);
        }
        if (r.nfound > 0) { /* slow to go (a process in an uninterruptible sleep): later */
            for (size_t i = 0; i < r.nfound; i++) ex__watch(x, r.found[i], on_orphan_exit, x);
            break;
        }
    }
    return killed;
}

/* An orphan kill_orphans watched is gone: what it left is ours now. */
static void on_orphan_exit(void *ctx, int status) {
    kill_orphans(ctx, NULL, 0);
    (void)status;
}

/* Whether rest, what follows "DIR/" in a CLOUD_ML_HP_METRIC_FILE, is a metric file of
 * DIR's trial (trials 0: DIR is the trial's folder), as ex_metric_path names them:
 * "metrics/NAME", after "N/" when DIR is a study's job dir (trials 1). Nothing deeper:
 * another study's job dir may lie inside this one's, and its trials are not ours. */
static int is_trial_metric_file(const char *rest, int trials) {
    if (trials) {
        const char *d = rest;
        while (*d >= '0' && *d <= '9') d++;
        if (d == rest || *d != '/') return 0;
        rest = d + 1;
    }
    return !strncmp(rest, "metrics/", 8) && rest[8] && !strchr(rest + 8, '/');
}

/* Kills every process (but this one) whose CLOUD_ML_HP_METRIC_FILE, which each process
 * of a trial inherits, is a metric file of dir's trial (trials 0: dir is a trial's
 * folder) or trials (trials 1: dir is a study's job dir): what a trial left behind
 * outside its replicas' process groups (a child that called setsid, say), or what an
 * earlier tuner's replicas left running. Returns how many it killed, not counting
 * members of the ngroups process groups in groups (already killed, perhaps not yet
 * gone). */
static int kill_under(const char *dir, int trials, const pid_t *groups, size_t ngroups) {
    char *want = tn_xasprintf("CLOUD_ML_HP_METRIC_FILE=%s/", dir);
    size_t wlen = strlen(want);
    int killed = 0;
    DIR *proc = opendir("/proc");
    struct dirent *e;
    pid_t self = getpid();
    size_t cap = 1 << 16;
    char *buf = tn_xmalloc(cap);
    while (proc && (e = readdir(proc))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 1 || pid == self) continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/environ", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue; /* gone, or not ours to read */
        /* the whole of it: the variable comes after the tuner's own environment and the
         * spec's env, which can be large */
        size_t got = 0;
        for (;;) {
            if (cap - got < 2) buf = tn_xrealloc(buf, cap *= 2);
            ssize_t r = read(fd, buf + got, cap - got - 1);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        close(fd);
        if (got == 0) continue;
        buf[got] = '\0';
        for (char *v = buf; v < buf + got; v += strlen(v) + 1) {
            if (strncmp(v, want, wlen) != 0 || !is_trial_metric_file(v + wlen, trials)) continue;
            pid_t group = getpgid((pid_t)pid);
            int known = 0;
            for (size_t g = 0; g < ngroups && !known; g++) known = groups[g] == group;
            if (kill((pid_t)pid, SIGKILL) == 0 && !known) killed++;
            break;
        }
    }
    if (proc) closedir(proc);
    free(buf);
    free(want);
    return killed;
}

/* A resumed tuner kills what an earlier one's trials left running in the study's job
 * dir (only a tuner's direct children get the parent-death signal). */
static int local_recover(ex_executor *x, char ***handles, long **trials, size_t *n,
                         int *killed, char *err, size_t errlen) {
    if (x->o.job_dir && x->o.job_dir[0]) *killed = kill_under(x->o.job_dir, 1, NULL, 0);
    (void)handles, (void)trials, (void)n, (void)err, (void)errlen;
    return 0;
}

const ex_backend_ops ex_local_ops = {
    .name = "local",
    .start = local_start,
    .has_room = local_has_room,
    .attach = NULL,
    .stop = local_stop,
    .release = local_release,
    .free = local_free,
    .recover = local_recover,
    .cancel_handle = NULL,
};
