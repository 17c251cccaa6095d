/*
 * test_ps.c — the parameter server on loopback: ps tasks run ps_serve in threads
 * (stopped through their stop flags), clients call from the test thread or their own.
 * Updates are checked exactly against the optimiser's rule (SGD and momentum with
 * values whose products are exact in float32) or against opt_step on the whole
 * vector (Adam); versions and staleness against the pushes made; and the failure
 * paths (a ps that never comes, one that dies, one that stays silent, a client with
 * other flags, a stranger) against the messages users will read.
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/netutil.h"
#include "common/status.h"
#include "common/tfconfig.h"
#include "trainer/net.h"
#include "trainer/ps.h"

#define MAXPS 3
#define P 11 /* parameters: shards of 5 and 6 over two ps tasks */

static void sleep_s(double s) {
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static opt_config sgd(double lr) {
    return (opt_config){.kind = OPT_SGD, .learning_rate = lr, .beta1 = 0.9, .beta2 = 0.999,
                        .epsilon = 1e-8, .schedule = OPT_CONSTANT};
}

/* ---- ps tasks in threads ---- */

typedef struct server {
    ps_server_config cfg;
    char addr[32];
    volatile int stop;
    pthread_t th;
    atomic_int returned;
    double returned_at;
    int rc;
    char err[512];
    char *buf;      /* its output stream's buffer */
    size_t buflen;
    FILE *out;
    char log[4096]; /* what it printed, once torn down */
} server;

typedef struct cluster {
    int n;
    opt_config opt; /* the ps tasks', and what the chief sends in INIT */
    server ps[MAXPS];
    tf_config tf;
} cluster;

static void *serve(void *arg) {
    server *s = arg;
    s->rc = ps_serve(&s->cfg, &s->stop, s->out, s->err, sizeof s->err);
    s->returned_at = nt_now();
    atomic_store(&s->returned, 1);
    return NULL;
}

/* n ps tasks in the cluster; the first `started` of them serving. */
static void setup(cluster *c, int n, int started, opt_config opt, double timeout,
                  double linger) {
    memset(c, 0, sizeof *c);
    c->n = n;
    c->opt = opt;
    c->opt.total_steps = 100;
    tf_config_init(&c->tf);
    for (int i = 0; i < n; i++) {
        server *s = &c->ps[i];
        snprintf(s->addr, sizeof s->addr, "localhost:%d", free_port());
        s->cfg = (ps_server_config){.addr = s->addr, .index = i, .count = n, .opt = opt,
                                    .timeout = timeout, .linger = linger};
        s->out = open_memstream(&s->buf, &s->buflen);
        tf_config_add(&c->tf, TF_PS, s->addr);
    }
    for (int i = 0; i < started; i++) pthread_create(&c->ps[i].th, NULL, serve, &c->ps[i]);
    sleep_s(0.05); /* not needed (clients retry), but keeps the tests' timings honest */
}

/* Whether ps i returns by itself within seconds. */
static int returns_within(cluster *c, int i, double seconds) {
    double end = nt_now() + seconds;
    while (!atomic_load(&c->ps[i].returned) && nt_now() < end) sleep_s(0.01);
    return atomic_load(&c->ps[i].returned);
}

/* Stops ps i and joins it. */
static void stop_ps(cluster *c, int i) {
    server *s = &c->ps[i];
    if (!s->th) return;
    s->stop = 1;
    pthread_join(s->th, NULL);
    s->th = 0;
}

/* Stops every ps (all at once); what each printed is then in c->ps[i].log. */
static void teardown(cluster *c) {
    for (int i = 0; i < c->n; i++) c->ps[i].stop = 1;
    for (int i = 0; i < c->n; i++) {
        stop_ps(c, i);
        fclose(c->ps[i].out);
        snprintf(c->ps[i].log, sizeof c->ps[i].log, "%s", c->ps[i].buf);
        free(c->ps[i].buf);
    }
    tf_config_clear(&c->tf);
}

static ps_client *open_client(cluster *c, uint64_t hash, int *initialised) {
    char err[512] = "";
    ps_client *cl = NULL;
    int rc = ps_client_open(&c->tf, P, 5, hash, &cl, initialised, err, sizeof err);
    CHECK_MSG(rc == 0, "open: %s", err);
    return cl;
}

/* The chief: open_client with hash 7, then its INIT with p as the variables and as
 * the slots, and c's optimiser (checked). */
static ps_client *open_chief(cluster *c, const float *p) {
    char err[512] = "";
    ps_client *chief = open_client(c, 7, NULL);
    CHECK_INT_EQ(ps_client_init(chief, p, p, NULL, 0, &c->opt, err, sizeof err), 0);
    return chief;
}

/* Dyadic values: sums and products by 1/4, 1/2 are exact in float32. */
static void fill(float *x, float base, float step) {
    for (int i = 0; i < P; i++) x[i] = base + step * (float)(i - 5);
}

static int same(const float *a, const float *b) { return !memcmp(a, b, P * sizeof(float)); }

/* ---- tests ---- */

static void test_shard_bounds(void) {
    const size_t ps[] = {0, 1, 2, 3, 7, 10, 11, 1000, 65537, (size_t)1 << 31,
                         SIZE_MAX / 3};
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++)
        for (int n = 1; n <= 7; n++) {
            size_t p = ps[k], prev = 0, lo, hi, small = SIZE_MAX, big = 0;
            int ok = 1;
            for (int i = 0; i < n; i++) {
                ps_shard(p, n, i, &lo, &hi);
                ok &= lo == prev && hi >= lo;
                if (p <= ((size_t)1 << 31)) /* the formula of ps.h, no overflow here */
                    ok &= lo == p * (size_t)i / (size_t)n && hi == p * (size_t)(i + 1) / (size_t)n;
                if (hi - lo < small) small = hi - lo;
                if (hi - lo > big) big = hi - lo;
                prev = hi;
            }
            CHECK_MSG(ok && prev == p && big - small <= 1, "p=%zu n=%d", p, n);
        }
}

static void test_init_pull_push_sgd(void) {
    cluster c;
    setup(&c, 2, 2, sgd(0.25), 5, 30);
    float p0[P], m0[P], g[P], got[P], m[P], want[P];
    fill(p0, 1.0f, 0.5f);
    fill(m0, -0.25f, 0.125f);
    fill(g, 0.5f, -0.25f);
    char err[512] = "";
    int init = -1;
    ps_client *chief = open_client(&c, 7, &init);
    CHECK_INT_EQ(init, 0);
    CHECK_INT_EQ(ps_client_init(chief, p0, m0, NULL, 0, &c.opt, err, sizeof err), 0);
    int64_t version = -1, stale = -1, t = -1;
    CHECK_INT_EQ(ps_client_pull(chief, got, &version, err, sizeof err), 0);
    CHECK(same(got, p0));
    CHECK_INT_EQ(version, 0);
    /* fetch before any push: exactly what init gave */
    CHECK_INT_EQ(ps_client_fetch(chief, got, m, NULL, &t, &version, err, sizeof err), 0);
    CHECK(same(got, p0) && same(m, m0));
    CHECK_INT_EQ(t, 0);

    CHECK_INT_EQ(ps_client_push(chief, g, &stale, err, sizeof err), 0);
    CHECK_INT_EQ(stale, 0);
    for (int i = 0; i < P; i++) want[i] = p0[i] - 0.25f * g[i];
    CHECK_INT_EQ(ps_client_pull(chief, got, &version, err, sizeof err), 0);
    CHECK_MSG(same(got, want), "params after one SGD step");
    CHECK_INT_EQ(version, 1);
    CHECK_INT_EQ(ps_client_fetch(chief, got, m, NULL, &t, &version, err, sizeof err), 0);
    CHECK(same(got, want));
    CHECK_MSG(same(m, g), "plain SGD leaves m = g"); /* the kernel's rule with mu = 0 */
    CHECK_INT_EQ(t, 1);
    CHECK_INT_EQ(version, 1);

    /* a second client finds the variables initialised */
    ps_client *w = open_client(&c, 7, &init);
    CHECK_INT_EQ(init, 1);
    CHECK_INT_EQ(ps_client_pull(w, got, &version, err, sizeof err), 0);
    CHECK(same(got, want));
    ps_client_close(w);
    ps_client_close(chief);
    teardown(&c);
    CHECK_STR_CONTAINS(c.ps[0].log, "ps 0: serving parameters [0, 5) of 11");
    CHECK_STR_CONTAINS(c.ps[1].log, "ps 1: serving parameters [5, 11) of 11");
    CHECK_STR_CONTAINS(c.ps[1].log, "ps 1: initialised by the chief at version 0");
    CHECK_INT_EQ(c.ps[0].rc, 0);
}

static void test_momentum(void) {
    cluster c;
    opt_config o = sgd(0.5);
    o.kind = OPT_MOMENTUM;
    o.momentum = 0.5;
    setup(&c, 2, 2, o, 5, 30);
    float p[P], m[P], g[P], got[P], gotm[P];
    fill(p, 2.0f, 0.25f);
    fill(m, 0.5f, -0.125f);
    fill(g, -1.0f, 0.25f);
    char err[512] = "";
    ps_client *chief = open_client(&c, 7, NULL);
    CHECK_INT_EQ(ps_client_init(chief, p, m, NULL, 3, &c.opt, err, sizeof err), 0);
    int64_t t = -1, version = -1;
    for (int step = 0; step < 2; step++) {
        CHECK_INT_EQ(ps_client_pull(chief, got, &version, err, sizeof err), 0);
        CHECK_INT_EQ(version, 3 + step); /* versions count on from the checkpoint's t */
        CHECK_INT_EQ(ps_client_push(chief, g, NULL, err, sizeof err), 0);
        for (int i = 0; i < P; i++) {
            m[i] = 0.5f * m[i] + g[i];
            p[i] -= 0.5f * m[i];
        }
    }
    CHECK_INT_EQ(ps_client_fetch(chief, got, gotm, NULL, &t, &version, err, sizeof err), 0);
    CHECK_MSG(same(got, p), "params after two momentum steps");
    CHECK_MSG(same(gotm, m), "momentum buffer after two steps");
    CHECK_INT_EQ(t, 5);
    CHECK_INT_EQ(version, 5);
    ps_client_close(chief);
    teardown(&c);
}

static void test_adam_fetch_and_step(void) {
    cluster c;
    opt_config o = sgd(0.01);
    o.kind = OPT_ADAM;
    setup(&c, 3, 3, o, 5, 30);
    float p[P], m[P], v[P], g[P], got[P], gotm[P], gotv[P];
    fill(p, 0.3f, 0.1f);
    fill(m, 0.01f, 0.02f);
    for (int i = 0; i < P; i++) v[i] = 0.001f * (float)(i + 1);
    fill(g, 0.2f, -0.07f);
    char err[512] = "";
    ps_client *chief = open_client(&c, 7, NULL);
    /* an Adam ps refuses a chief without the second moment, and stays usable */
    CHECK_INT_EQ(ps_client_init(chief, p, m, NULL, 7, &c.opt, err, sizeof err), TN_EMISMATCH);
    CHECK_STR_CONTAINS(err, "state buffers");
    CHECK_INT_EQ(ps_client_init(chief, p, m, v, 7, &c.opt, err, sizeof err), 0);
    int64_t t = -1, version = -1;
    CHECK_INT_EQ(ps_client_fetch(chief, got, gotm, gotv, &t, &version, err, sizeof err), 0);
    CHECK(same(got, p) && same(gotm, m) && same(gotv, v));
    CHECK_INT_EQ(t, 7);
    CHECK_INT_EQ(version, 7);
    CHECK_INT_EQ(ps_client_fetch(chief, got, gotm, NULL, &t, &version, err, sizeof err),
                 TN_EMISMATCH);

    /* one push, against opt_step over the whole vector (the update is element-wise) */
    CHECK_INT_EQ(ps_client_pull(chief, got, &version, err, sizeof err), 0);
    CHECK_INT_EQ(ps_client_push(chief, g, NULL, err, sizeof err), 0);
    opt_config ref_cfg = o;
    ref_cfg.total_steps = 100;
    opt_state *ref = opt_new(&ref_cfg, kn_cpu(), P);
    memcpy(ref->m, m, sizeof m);
    memcpy(ref->v, v, sizeof v);
    ref->t = 7;
    opt_step(ref, p, g);
    CHECK_INT_EQ(ps_client_fetch(chief, got, gotm, gotv, &t, &version, err, sizeof err), 0);
    for (int i = 0; i < P; i++) {
        CHECK_NEAR(got[i], p[i], 0, 1e-6);
        CHECK_NEAR(gotm[i], ref->m[i], 0, 1e-6);
        CHECK_NEAR(gotv[i], ref->v[i], 0, 1e-6);
    }
    CHECK_INT_EQ(t, 8);
    opt_free(ref);
    ps_client_close(chief);
    teardown(&c);
}

static void test_staleness_and_versions(void) {
    cluster c;
    setup(&c, 2, 2, sgd(0.25), 5, 30);
    float p[P], g[P], got[P];
    fill(p, 1.0f, 0.5f);
    fill(g, 0.25f, 0.25f);
    char err[512] = "";
    ps_client *a = open_client(&c, 7, NULL), *b = open_client(&c, 7, NULL);
    CHECK_INT_EQ(ps_client_init(a, p, p, NULL, 0, &c.opt, err, sizeof err), 0);
    int64_t version = -1, stale = -1;
    CHECK_INT_EQ(ps_client_pull(a, got, &version, err, sizeof err), 0);
    for (int k = 0; k < 2; k++) {
        CHECK_INT_EQ(ps_client_pull(b, got, &version, err, sizeof err), 0);
        CHECK_INT_EQ(version, k);
        CHECK_INT_EQ(ps_client_push(b, g, &stale, err, sizeof err), 0);
        CHECK_INT_EQ(stale, 0);
    }
    CHECK_INT_EQ(ps_client_push(a, g, &stale, err, sizeof err), 0);
    CHECK_INT_EQ(stale, 2); /* b's two updates landed between a's pull and push */
    CHECK_INT_EQ(ps_client_pull(b, got, &version, err, sizeof err), 0);
    CHECK_INT_EQ(version, 3);
    for (int i = 0; i < P; i++) p[i] -= 0.25f * g[i] * 3; /* 3 * 0.25 * g: still exact */
    CHECK(same(got, p));
    ps_client_close(a);
    ps_client_close(b);
    teardown(&c);
}

typedef struct worker {
    cluster *c;
    uint64_t hash;
    float params[P];
    int64_t version;
    int rc, initialised;
    char err[512];
    atomic_int finished;
    double took;
} worker;

static void *run_worker(void *arg) {
    worker *w = arg;
    double t0 = nt_now();
    ps_client *cl = NULL;
    w->rc = ps_client_open(&w->c->tf, P, 5, w->hash, &cl, &w->initialised, w->err,
                           sizeof w->err);
    if (!w->rc) w->rc = ps_client_pull(cl, w->params, &w->version, w->err, sizeof w->err);
    ps_client_close(cl);
    w->took = nt_now() - t0;
    atomic_store(&w->finished, 1);
    return NULL;
}

/* Several workers pulling and pushing a big model at once: every update lands once. */
#define BIG 300001
#define WORKERS 3
#define STEPS 20

typedef struct pusher {
    cluster *c;
    int rc;
    char err[512];
    int64_t last_version;
} pusher;

static void *run_pusher(void *arg) {
    pusher *w = arg;
    float *params = malloc(BIG * sizeof(float)), *g = malloc(BIG * sizeof(float));
    for (size_t i = 0; i < BIG; i++) g[i] = 0.125f;
    ps_client *cl = NULL;
    w->rc = ps_client_open(&w->c->tf, BIG, 10, 7, &cl, NULL, w->err, sizeof w->err);
    for (int k = 0; !w->rc && k < STEPS; k++) {
        w->rc = ps_client_pull(cl, params, &w->last_version, w->err, sizeof w->err);
        if (!w->rc) w->rc = ps_client_push(cl, g, NULL, w->err, sizeof w->err);
    }
    ps_client_close(cl);
    free(params);
    free(g);
    return NULL;
}

static void test_concurrent_workers(void) {
    cluster c;
    setup(&c, 2, 2, sgd(0.25), 10, 30);
    float *p = malloc(BIG * sizeof(float)), *got = malloc(BIG * sizeof(float));
    for (size_t i = 0; i < BIG; i++) p[i] = 4.0f + (float)(i % 7);
    char err[512] = "";
    ps_client *chief = NULL;
    CHECK_INT_EQ(ps_client_open(&c.tf, BIG, 10, 7, &chief, NULL, err, sizeof err), 0);
    CHECK_INT_EQ(ps_client_init(chief, p, p, NULL, 0, &c.opt, err, sizeof err), 0);
    pusher w[WORKERS];
    pthread_t th[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        w[i] = (pusher){.c = &c};
        pthread_create(&th[i], NULL, run_pusher, &w[i]);
    }
    for (int i = 0; i < WORKERS; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(w[i].rc == 0, "worker %d: %s", i, w[i].err);
    }
    int64_t t = -1, version = -1;
    CHECK_INT_EQ(ps_client_fetch(chief, got, p, NULL, &t, &version, err, sizeof err), 0);
    CHECK_INT_EQ(version, WORKERS * STEPS);
    /* each update subtracts 0.25 * 0.125 exactly */
    size_t bad = 0;
    for (size_t i = 0; i < BIG; i++)
        bad += got[i] != 4.0f + (float)(i % 7) - (float)(WORKERS * STEPS) * 0.03125f;
    CHECK_MSG(bad == 0, "%zu parameters off", bad);
    ps_client_close(chief);
    free(p);
    free(got);
    teardown(&c);
}

static void test_worker_waits_for_init(void) {
    cluster c;
    setup(&c, 2, 2, sgd(0.25), 5, 30);
    worker w = {.c = &c, .hash = 7};
    pthread_t th;
    pthread_create(&th, NULL, run_worker, &w);
    sleep_s(0.6);
    CHECK_MSG(!atomic_load(&w.finished), "the pull returned before the chief initialised: %s",
              w.err);
    float p[P];
    fill(p, 3.0f, -0.5f);
    char err[512] = "";
    ps_client *chief = open_client(&c, 7, NULL);
    CHECK_INT_EQ(ps_client_init(chief, p, p, NULL, 4, &c.opt, err, sizeof err), 0);
    pthread_join(th, NULL);
    CHECK_MSG(w.rc == 0, "worker: %s", w.err);
    CHECK_INT_EQ(w.initialised, 0);
    CHECK(same(w.params, p));
    CHECK_INT_EQ(w.version, 4);
    CHECK(w.took >= 0.5);
    ps_client_close(chief);
    teardown(&c);
}

/* The ps gives up waiting for the chief after its timeout, with a message that says
 * so; meanwhile its keep-alives stop the client's shorter timeout from firing. */
static void test_no_chief(void) {
    cluster c;
    setup(&c, 1, 1, sgd(0.25), 1.2, 30);
    char err[512] = "";
    ps_client *w = NULL;
    CHECK_INT_EQ(ps_client_open(&c.tf, P, 0.5, 7, &w, NULL, err, sizeof err), 0);
    float got[P];
    double t0 = nt_now();
    int rc = ps_client_pull(w, got, NULL, err, sizeof err);
    CHECK_INT_EQ(rc, TN_EPEER);
    CHECK_STR_CONTAINS(err, "not initialised within 1.2 s: is the chief running?");
    CHECK(nt_now() - t0 > 1.0 && nt_now() - t0 < 3);
    ps_client_close(w);
    teardown(&c);
}

static void test_config_mismatch(void) {
    cluster c;
    setup(&c, 2, 2, sgd(0.25), 5, 30);
    float p[P];
    fill(p, 1.0f, 0.5f);
    char err[512] = "";
    /* a worker with other flags that connected before the chief is caught at its pull */
    ps_client *early = open_client(&c, 8, NULL);
    ps_client *chief = open_chief(&c, p);
    float got[P];
    CHECK_INT_EQ(ps_client_pull(early, got, NULL, err, sizeof err), TN_EMISMATCH);
    CHECK_STR_CONTAINS(err, "ps 0 holds the variables of a job with another configuration");
    /* and one that comes later, at once */
    ps_client *late = NULL;
    err[0] = '\0';
    CHECK_INT_EQ(ps_client_open(&c.tf, P, 5, 9, &late, NULL, err, sizeof err), TN_EMISMATCH);
    CHECK_STR_CONTAINS(err, "ps 0 holds the variables of a job with another configuration; "
                            "hint: give every replica the same flags");
    CHECK(late == NULL);
    /* another model size is refused as well */
    CHECK_INT_EQ(ps_client_open(&c.tf, P + 1, 5, 7, &late, NULL, err, sizeof err), TN_EMISMATCH);
    CHECK_STR_CONTAINS(err, "11 parameters");
    /* the chief carries on */
    CHECK_INT_EQ(ps_client_pull(chief, got, NULL, err, sizeof err), 0);
    ps_client_close(early);
    ps_client_close(chief);
    teardown(&c);
}

static void test_done_then_exit(void) {
    cluster c;
    setup(&c, 2, 2, sgd(0.25), 5, 30);
    float p[P], got[P];
    fill(p, 1.0f, 0.5f);
    char err[512] = "";
    ps_client *chief = open_client(&c, 7, NULL), *w = open_client(&c, 7, NULL);
    CHECK_INT_EQ(ps_client_init(chief, p, p, NULL, 0, &c.opt, err, sizeof err), 0);
    CHECK_INT_EQ(ps_client_push(chief, p, NULL, err, sizeof err), 0);
    CHECK_INT_EQ(ps_client_done(chief, err, sizeof err), 0);
    int64_t version = -1;
    CHECK_INT_EQ(ps_client_pull(w, got, &version, err, sizeof err), PS_FINISHED);
    CHECK_INT_EQ(version, 1);
    ps_client_close(chief);
    CHECK(!returns_within(&c, 0, 0.5)); /* the worker is still connected */
    ps_client_close(w);
    double t0 = nt_now();
    CHECK(returns_within(&c, 0, 2) && returns_within(&c, 1, 2));
    CHECK(nt_now() - t0 < 1);
    for (int i = 0; i < 2; i++) {
        CHECK_INT_EQ(c.ps[i].rc, 0);
        pthread_join(c.ps[i].th, NULL);
        c.ps[i].th = 0;
    }
    teardown(&c);
    CHECK_STR_CONTAINS(c.ps[0].log, "ps 0: training finished; 1 client still connected");
    CHECK_STR_CONTAINS(c.ps[1].log, "every client has gone");
}

static void test_linger(void) {
    cluster c;
    setup(&c, 1, 1, sgd(0.25), 5, 0.5);
    float p[P], got[P];
    fill(p, 1.0f, 0.5f);
    char err[512] = "";
    ps_client *chief = open_chief(&c, p);
    CHECK_INT_EQ(ps_client_done(chief, err, sizeof err), 0);
    double t0 = nt_now();
    CHECK(returns_within(&c, 0, 3)); /* the chief stays connected: linger decides */
    CHECK(nt_now() - t0 >= 0.4);
    CHECK_INT_EQ(c.ps[0].rc, 0);
    CHECK_INT_EQ(ps_client_pull(chief, got, NULL, err, sizeof err), TN_EPEER);
    CHECK_STR_CONTAINS(err, "lost ps 0");
    ps_client_close(chief);
    teardown(&c);
    CHECK_STR_CONTAINS(c.ps[0].log, "1 client still connected 0.5 s after training finished");
}

static void test_missing_ps_is_named(void) {
    cluster c;
    setup(&c, 2, 1, sgd(0.25), 5, 30); /* ps 1 never starts */
    int held = hold_port(c.ps[1].addr); /* and nothing else takes its port */
    CHECK(held >= 0);
    char err[512] = "";
    ps_client *cl = NULL;
    double t0 = nt_now();
    CHECK_INT_EQ(ps_client_open(&c.tf, P, 1, 7, &cl, NULL, err, sizeof err), TN_EPEER);
    CHECK(nt_now() - t0 < 2.5);
    CHECK_STR_CONTAINS(err, "waiting for ps 1 at ");
    CHECK_STR_CONTAINS(err, c.ps[1].addr);
    CHECK_STR_CONTAINS(err, "Connection refused");
    CHECK_STR_CONTAINS(err, "hint: every replica of TF_CONFIG's cluster must be started");
    CHECK(cl == NULL);
    if (held >= 0) close(held);
    teardown(&c);
}

static void test_dead_ps_noticed(void) {
    cluster c;
    setup(&c, 2, 2, sgd(0.25), 30, 30);
    float p[P], got[P];
    fill(p, 1.0f, 0.5f);
    char err[512] = "";
    ps_client *chief = NULL;
    /* a long timeout: only the end of the stream can be noticed this fast */
    CHECK_INT_EQ(ps_client_open(&c.tf, P, 30, 7, &chief, NULL, err, sizeof err), 0);
    CHECK_INT_EQ(ps_client_init(chief, p, p, NULL, 0, &c.opt, err, sizeof err), 0);
    CHECK_INT_EQ(ps_client_pull(chief, got, NULL, err, sizeof err), 0);
    stop_ps(&c, 1);
    CHECK_INT_EQ(c.ps[1].rc, 0);
    double t0 = nt_now();
    int rc = ps_client_push(chief, p, NULL, err, sizeof err);
    CHECK_INT_EQ(rc, TN_EPEER);
    CHECK(nt_now() - t0 < 2);
    char want[64];
    snprintf(want, sizeof want, "lost ps 1 (%s)", c.ps[1].addr);
    CHECK_STR_CONTAINS(err, want);
    /* the client is unusable now, and says so */
    CHECK_INT_EQ(ps_client_pull(chief, got, NULL, err, sizeof err), TN_EPEER);
    ps_client_close(chief);
    teardown(&c);
    CHECK_STR_CONTAINS(c.ps[1].log, "ps 1: stopped");
}

static void test_silent_ps(void) {
    /* something listens (the kernel completes the connection) but never answers */
    char addr[32];
    int fd = listen_silent(addr, sizeof addr);
    CHECK(fd >= 0);
    tf_config tf;
    tf_config_init(&tf);
    tf_config_add(&tf, TF_PS, addr);
    char err[512] = "";
    ps_client *cl = NULL;
    double t0 = nt_now();
    CHECK_INT_EQ(ps_client_open(&tf, P, 0.5, 7, &cl, NULL, err, sizeof err), TN_EPEER);
    CHECK(nt_now() - t0 < 2);
    char want[64];
    snprintf(want, sizeof want, "ps 0 (%s) did not answer for 0.5 s", addr);
    CHECK_STR_CONTAINS(err, want);
    close(fd);
    tf_config_clear(&tf);
}

static void test_stranger_is_dropped(void) {
    cluster c;
    setup(&c, 1, 1, sgd(0.25), 5, 30);
    int port = atoi(strchr(c.ps[0].addr, ':') + 1);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = loopback_addr(port);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
    const char garbage[] = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    CHECK(send(fd, garbage, sizeof garbage, MSG_NOSIGNAL) == (ssize_t)sizeof garbage);
    char buf[64];
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t k = recv(fd, buf, sizeof buf, 0);
    CHECK_MSG(k <= 0 && (k == 0 || errno != EAGAIN), "the ps did not close the connection");
    close(fd);
    /* the ps still serves */
    float p[P], got[P];
    fill(p, 1.0f, 0.5f);
    char err[512] = "";
    ps_client *chief = open_chief(&c, p);
    CHECK_INT_EQ(ps_client_pull(chief, got, NULL, err, sizeof err), 0);
    CHECK(same(got, p));
    ps_client_close(chief);
    teardown(&c);
    CHECK_STR_CONTAINS(c.ps[0].log, "does not speak the ps protocol");
}

static void test_cannot_listen(void) {
    char addr[32], err[512] = "";
    int fd = listen_silent(addr, sizeof addr);
    CHECK(fd >= 0);
    ps_server_config cfg = {.addr = addr, .index = 0, .count = 1, .opt = sgd(0.1),
                            .timeout = 1, .linger = 1};
    CHECK_INT_EQ(ps_serve(&cfg, NULL, NULL, err, sizeof err), TN_EIO);
    CHECK_STR_CONTAINS(err, "cannot listen on");
    cfg.index = 1;
    CHECK_INT_EQ(ps_serve(&cfg, NULL, NULL, err, sizeof err), TN_EINVAL);
    close(fd);
}

/* A ps started with other optimiser flags than the chief refuses its INIT, naming the
 * flag, and takes the right one on the same connection. */
static void test_optimiser_mismatch(void) {
    cluster c;
    setup(&c, 2, 2, sgd(0.25), 5, 30);
    float p[P], m[P], got[P];
    fill(p, 1.0f, 0.5f);
    fill(m, 0.0f, 0.0f);
    char err[512] = "";
    ps_client *chief = open_client(&c, 7, NULL);
    opt_config other = c.opt;
    other.learning_rate = 0.5;
    CHECK_INT_EQ(ps_client_init(chief, p, m, NULL, 0, &other, err, sizeof err), TN_EMISMATCH);
    CHECK_STR_CONTAINS(err, "other optimiser flags than the chief");
    CHECK_STR_CONTAINS(err, "--learning_rate: 0.25 here, 0.5 on the chief");
    other = c.opt;
    other.kind = OPT_MOMENTUM;
    CHECK_INT_EQ(ps_client_init(chief, p, m, NULL, 0, &other, err, sizeof err), TN_EMISMATCH);
    CHECK_STR_CONTAINS(err, "--optimizer");
    other = c.opt;
    other.total_steps = 12345; /* the job's length is the chief's to say */
    CHECK_INT_EQ(ps_client_init(chief, p, m, NULL, 0, &other, err, sizeof err), 0);
    int64_t version = -1;
    CHECK_INT_EQ(ps_client_pull(chief, got, &version, err, sizeof err), 0);
    CHECK(same(got, p));
    ps_client_close(chief);
    teardown(&c);
}

int main(void) {
    RUN(test_shard_bounds);
    RUN(test_cannot_listen);
    RUN(test_init_pull_push_sgd);
    RUN(test_momentum);
    RUN(test_adam_fetch_and_step);
    RUN(test_staleness_and_versions);
    RUN(test_concurrent_workers);
    RUN(test_worker_waits_for_init);
    RUN(test_no_chief);
    RUN(test_config_mismatch);
    RUN(test_optimiser_mismatch);
    RUN(test_done_then_exit);
    RUN(test_linger);
    RUN(test_missing_ps_is_named);
    RUN(test_dead_ps_noticed);
    RUN(test_silent_ps);
    RUN(test_stranger_is_dropped);
    return check_summary();
}
