/*
 * test_collective.c — the collectives on loopback: each rank runs in its own thread
 * with its own ring, as separate processes would, and every ring test runs twice: with
 * the all-reduce over TCP and over shared memory. Sums are checked against sums
 * computed here, ranks against each other bit for bit, and the failure paths (a peer
 * that never comes, one that dies mid-collective, one that goes silent, one with other
 * flags, one out of step, no usable /dev/shm) against the messages users will read.
 * Segments go to a private $TRAINER_SHM_DIR, which must be empty at the end.
 */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/check.h"
#include "tests/netutil.h"
#include "common/status.h"
#include "trainer/bucket.h"
#include "trainer/collective.h"
#include "trainer/net.h"
#include "trainer/shm.h"

#define MAXR 5

static int g_transport = CL_TCP; /* the all-reduce transport the ring tests run over */

typedef struct rank_job {
    int n, rank;
    cl_peer *peers;
    uint64_t hash;
    const cl_config *config; /* when set, cl_open_config instead of hash */
    double timeout;
    int scenario;     /* what the rank does after opening */
    size_t count;     /* elements */
    float *buf;       /* (count) in, the result out */
    int rc;           /* of the first failing call */
    char err[512];
    double failed_after; /* seconds from start to the failure */
    int nbuckets;
    int transport;       /* the all-reduce's, as opened */
    char note[512];
} rank_job;

enum { SC_ALLREDUCE, SC_BF16, SC_BROADCAST, SC_F64, SC_DIE, SC_OUT_OF_STEP, SC_MANY, SC_BUCKETS,
       SC_BUCKETS_DIE, SC_SILENT };

static float value(int rank, size_t i) { return (float)((int)(i % 97) - 48) * 0.25f + (float)rank; }

static void *run_rank(void *arg) {
    rank_job *j = arg;
    double t0 = nt_now();
    cl_ring *r = NULL;
    if (j->config)
        j->rc = cl_open_config(j->peers, j->n, j->rank, j->timeout, j->config, g_transport, &r,
                               j->err, sizeof j->err);
    else
        j->rc = cl_open(j->peers, j->n, j->rank, j->timeout, j->hash, g_transport, &r, j->err,
                        sizeof j->err);
    if (j->rc) {
        j->failed_after = nt_now() - t0;
        return NULL;
    }
    j->transport = cl_transport(r);
    snprintf(j->note, sizeof j->note, "%s", cl_transport_note(r));
    switch (j->scenario) {
    case SC_ALLREDUCE:
        j->rc = cl_allreduce(r, j->buf, j->count, CL_FP32, j->err, sizeof j->err);
        break;
    case SC_BF16:
        j->rc = cl_allreduce(r, j->buf, j->count, CL_BF16, j->err, sizeof j->err);
        break;
    case SC_BROADCAST:
        j->rc = cl_broadcast(r, j->buf, j->count * sizeof(float), j->err, sizeof j->err);
        break;
    case SC_F64: {
        double d[3] = {j->rank + 0.5, 1e-17, -(double)j->rank};
        j->rc = cl_allreduce_f64(r, d, 3, j->err, sizeof j->err);
        j->buf[0] = (float)d[0];
        j->buf[1] = (float)d[2];
        break;
    }
    case SC_DIE: /* the last rank does one all-reduce, then "crashes" */
        j->rc = cl_allreduce(r, j->buf, j->count, CL_FP32, j->err, sizeof j->err);
        if (j->rank == j->n - 1) {
            cl_close(r);
            return NULL;
        }
        t0 = nt_now();
        for (int k = 0; k < 100 && !j->rc; k++)
            j->rc = cl_allreduce(r, j->buf, j->count, CL_FP32, j->err, sizeof j->err);
        break;
    case SC_OUT_OF_STEP:
        j->rc = cl_allreduce(r, j->buf, j->count + (size_t)j->rank, CL_FP32, j->err,
                             sizeof j->err);
        break;
    case SC_BUCKETS:      /* bucketed, as the backward pass reports layers final */
    case SC_BUCKETS_DIE: { /* the last rank leaves after the first step */
        /* layers start at 0, 100, 5000, 9000; the last 2 elements are control words */
        const size_t starts[] = {0, 100, 5000, 9000};
        size_t n = j->count; /* 10002 */
        bk_reducer *b = bk_new(r, j->buf, n, starts, 4, 3000, CL_FP32);
        j->nbuckets = bk_count(b);
        for (int step = 0; step < 3 && !j->rc; step++) {
            if (j->scenario == SC_BUCKETS_DIE && step == 1 && j->rank == j->n - 1) break;
            if (step > 0)
                for (size_t k = 0; k < n; k++) j->buf[k] = value(j->rank, k);
            bk_begin(b);
            for (int l = 3; l >= 0; l--) bk_ready(b, starts[l]); /* last layer first */
            j->rc = bk_finish(b, j->err, sizeof j->err);
        }
        bk_free(b);
        break;
    }
    case SC_SILENT: /* every rank but 0 stalls past the timeout before its all-reduce */
        if (j->rank) nanosleep(&(struct timespec){2, 500000000}, NULL);
        t0 = nt_now();
        j->rc = cl_allreduce(r, j->buf, j->count, CL_FP32, j->err, sizeof j->err);
        break;
    case SC_MANY: /* many small collectives in a row stay in step */
        for (int k = 0; k < 200 && !j->rc; k++)
            j->rc = cl_allreduce(r, j->buf, j->count, CL_FP32, j->err, sizeof j->err);
        break;
    }
    j->failed_after = nt_now() - t0;
    cl_close(r);
    return NULL;
}

typedef struct ring_test {
    int n;
    char addr[MAXR][32];
    char name[MAXR][32];
    cl_peer peers[MAXR];
    rank_job job[MAXR];
    pthread_t th[MAXR];
} ring_test;

static void setup(ring_test *t, int n, int scenario, size_t count, double timeout) {
    memset(t, 0, sizeof *t);
    t->n = n;
    for (int i = 0; i < n; i++) {
        snprintf(t->addr[i], sizeof t->addr[i], "localhost:%d", free_port());
        snprintf(t->name[i], sizeof t->name[i], i ? "worker %d" : "chief %d", i ? i - 1 : 0);
        t->peers[i] = (cl_peer){t->name[i], t->addr[i]};
    }
    for (int i = 0; i < n; i++) {
        rank_job *j = &t->job[i];
        *j = (rank_job){.n = n, .rank = i, .peers = t->peers, .hash = 42, .timeout = timeout,
                        .scenario = scenario, .count = count};
        j->buf = calloc(count + MAXR + 2, sizeof(float));
        for (size_t k = 0; k < count + (size_t)n; k++) j->buf[k] = value(i, k);
    }
}

/* Starts ranks [0, upto). */
static void start(ring_test *t, int upto) {
    for (int i = 0; i < upto; i++) pthread_create(&t->th[i], NULL, run_rank, &t->job[i]);
}

static void finish(ring_test *t, int upto) {
    for (int i = 0; i < upto; i++) pthread_join(t->th[i], NULL);
}

static void teardown(ring_test *t) {
    for (int i = 0; i < t->n; i++) free(t->job[i].buf);
}

/* Whether a rank lost its port to another process between free_port and its own bind
 * (tests running at once, ctest -j): it could not listen, or it reached a ring that is
 * not its own: that rank's message, or NULL. The test then runs the scenario again on
 * other ports. */
static const char *ports_taken(const ring_test *t, int upto) {
    for (int i = 0; i < upto; i++)
        if (strstr(t->job[i].err, "Address already in use") ||
            strstr(t->job[i].err, "says it is rank") ||
            strstr(t->job[i].err, "another job"))
            return t->job[i].err;
    return NULL;
}

/* setup, then adjust (where not NULL: what the test changes before the ranks start),
 * then start and finish ranks [0, upto), up to three times while ports_taken: a port
 * free_port found can be taken before its rank binds it, by another test's process or
 * by an outgoing connection's own port, so every ring test runs through here. */
static void run_ring_as(ring_test *t, int n, int upto, int scenario, size_t count,
                        double timeout, void (*adjust)(ring_test *, void *), void *ctx) {
    for (int attempt = 1;; attempt++) {
        setup(t, n, scenario, count, timeout);
        if (adjust) adjust(t, ctx);
        start(t, upto);
        finish(t, upto);
        const char *why = ports_taken(t, upto);
        if (attempt == 3 || !why) return;
        printf("note: another process took this ring's ports (%s): again\n", why);
        teardown(t);
    }
}

/* Every rank as setup made it. */
static void run_ring(ring_test *t, int n, int scenario, size_t count, double timeout) {
    run_ring_as(t, n, n, scenario, count, timeout, NULL, NULL);
}

static void test_allreduce_sums_and_agrees(void) {
    const size_t counts[] = {1, 2, 3, 7, 1000, 262147, 1300001}; /* the last: 3 chunks */
    for (int n = 2; n <= 4; n++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            ring_test t;
            run_ring(&t, n, SC_ALLREDUCE, counts[c], 20);
            int bad = 0, differ = 0;
            for (int i = 0; i < n; i++) {
                CHECK_MSG(t.job[i].rc == 0, "n=%d count=%zu rank %d: %s", n, counts[c], i,
                          t.job[i].err);
                CHECK_MSG(t.job[i].transport == g_transport, "rank %d: all-reduce over %s", i,
                          t.job[i].note);
                for (size_t k = 0; k < counts[c]; k++) {
                    double want = 0;
                    for (int q = 0; q < n; q++) want += value(q, k);
                    if (fabs(t.job[i].buf[k] - want) > 1e-4) bad++;
                }
                if (memcmp(t.job[i].buf, t.job[0].buf, counts[c] * sizeof(float))) differ++;
            }
            CHECK_MSG(bad == 0, "n=%d count=%zu: %d wrong sums", n, counts[c], bad);
            CHECK_MSG(differ == 0, "n=%d count=%zu: ranks disagree", n, counts[c]);
            teardown(&t);
        }
}

static void test_bf16_identical_and_close(void) {
    ring_test t;
    run_ring(&t, 3, SC_BF16, 50001, 20);
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(t.job[i].rc == 0, "rank %d: %s", i, t.job[i].err);
        CHECK_MSG(!memcmp(t.job[i].buf, t.job[0].buf, 50001 * sizeof(float)),
                  "rank %d ends with other bits than rank 0", i);
    }
    for (size_t k = 0; k < 50001; k++) {
        double want = value(0, k) + value(1, k) + value(2, k);
        double e = fabs(t.job[0].buf[k] - want) / (fabs(want) + 1);
        if (e > worst) worst = e;
        /* the result is representable in bf16 */
        CHECK(cl_from_bf16(cl_to_bf16(t.job[0].buf[k])) == t.job[0].buf[k]);
    }
    CHECK_MSG(worst < 2e-2, "bf16 relative error %g", worst);
    teardown(&t);
}

static void test_bf16_rounding(void) {
    CHECK(cl_from_bf16(cl_to_bf16(1.0f)) == 1.0f);
    CHECK(cl_from_bf16(cl_to_bf16(-2.5f)) == -2.5f);
    /* 1 + 2^-8 is halfway between two bf16 values: ties go to even (1.0) */
    CHECK(cl_from_bf16(cl_to_bf16(1.0f + 1.0f / 256)) == 1.0f);
    CHECK(cl_from_bf16(cl_to_bf16(1.0f + 3.0f / 256)) == 1.0f + 4.0f / 256);
    CHECK(isnan(cl_from_bf16(cl_to_bf16(NAN))));
    CHECK(isinf(cl_from_bf16(cl_to_bf16(INFINITY))));
}

static void test_broadcast_and_f64(void) {
    for (int n = 2; n <= 4; n++) {
        ring_test t;
        run_ring(&t, n, SC_BROADCAST, 300007, 20);
        for (int i = 0; i < n; i++) {
            CHECK_MSG(t.job[i].rc == 0, "rank %d: %s", i, t.job[i].err);
            int same = 1;
            for (size_t k = 0; k < 300007; k++) same &= t.job[i].buf[k] == value(0, k);
            CHECK_MSG(same, "n=%d rank %d did not get rank 0's data", n, i);
        }
        teardown(&t);
        run_ring(&t, n, SC_F64, 4, 20);
        double want = 0, want2 = 0;
        for (int i = 0; i < n; i++) want += i + 0.5, want2 -= i;
        for (int i = 0; i < n; i++) {
            CHECK_MSG(t.job[i].rc == 0, "rank %d: %s", i, t.job[i].err);
            CHECK_NEAR(t.job[i].buf[0], want, 1e-6, 0);
            CHECK_NEAR(t.job[i].buf[1], want2, 1e-6, 0);
        }
        teardown(&t);
    }
}

static void test_many_small_collectives(void) {
    ring_test t;
    run_ring(&t, 3, SC_MANY, 17, 20);
    for (int i = 0; i < 3; i++) CHECK_MSG(t.job[i].rc == 0, "rank %d: %s", i, t.job[i].err);
    teardown(&t);
}

/* The last rank's port held (bound, not listening: *(int *)ctx, the one an earlier
 * attempt held closed first), so that no process can listen there. */
static void hold_last(ring_test *t, void *ctx) {
    int *held = ctx;
    if (*held >= 0) close(*held);
    *held = hold_port(t->addr[t->n - 1]);
}

static void test_missing_peer_is_named(void) {
    ring_test t;
    int held = -1;
    run_ring_as(&t, 3, 2, SC_ALLREDUCE, 10, 1.0, hold_last, &held); /* worker 1 (rank 2)
                                                                      never starts */
    if (held >= 0) close(held);
    CHECK_INT_EQ(t.job[1].rc, TN_EPEER);
    CHECK_STR_CONTAINS(t.job[1].err, "waiting for worker 1");
    CHECK_STR_CONTAINS(t.job[1].err, t.addr[2]);
    CHECK_INT_EQ(t.job[0].rc, TN_EPEER);
    CHECK_STR_CONTAINS(t.job[0].err, "worker 1");
    CHECK(t.job[0].failed_after < 5);
    teardown(&t);
}

static void test_dead_peer_noticed_at_once(void) {
    for (int n = 3; n <= 4; n++) {
        ring_test t;
        run_ring(&t, n, SC_DIE, 100000, 30); /* the timeout is long: only EOF can be this fast */
        int named = 0;
        for (int i = 0; i < n - 1; i++) {
            CHECK_MSG(t.job[i].rc == TN_EPEER, "n=%d rank %d: rc %d: %s", n, i, t.job[i].rc,
                      t.job[i].err);
            CHECK_MSG(t.job[i].failed_after < 3, "n=%d rank %d took %.1f s to notice", n, i,
                      t.job[i].failed_after);
            /* whoever notices first gives up, and the others may notice that first:
             * every message names a lost peer, and one at least the dead one */
            CHECK_STR_CONTAINS(t.job[i].err, "lost ");
            char dead[32];
            snprintf(dead, sizeof dead, "lost worker %d", n - 2);
            named |= strstr(t.job[i].err, dead) != NULL;
        }
        CHECK_MSG(named, "n=%d: no survivor names the dead rank ('%s')", n, t.job[0].err);
        teardown(&t);
    }
}

static void test_silent_peer_given_up(void) {
    ring_test t;
    run_ring(&t, 2, SC_SILENT, 1000, 1.0);
    CHECK_MSG(t.job[0].rc == TN_EPEER, "rc %d: %s", t.job[0].rc, t.job[0].err);
    CHECK_STR_CONTAINS(t.job[0].err, "no progress for 1 s: worker 0");
    CHECK_STR_CONTAINS(t.job[0].err, "--peer_timeout");
    CHECK_MSG(t.job[0].failed_after > 0.9 && t.job[0].failed_after < 2.4,
              "gave up after %.2f s", t.job[0].failed_after);
    /* the late rank finds rank 0 gone rather than waiting for it */
    CHECK_MSG(t.job[1].rc == TN_EPEER, "late rank: rc %d: %s", t.job[1].rc, t.job[1].err);
    teardown(&t);
}

static void other_hash(ring_test *t, void *ctx) {
    (void)ctx;
    t->job[1].hash = 43;
}

static void test_config_mismatch(void) {
    ring_test t;
    run_ring_as(&t, 2, 2, SC_ALLREDUCE, 10, 2, other_hash, NULL);
    CHECK(t.job[0].rc != 0 && t.job[1].rc != 0);
    int named = strstr(t.job[0].err, "different configuration") ||
                strstr(t.job[1].err, "different configuration");
    CHECK_MSG(named, "errors: '%s' / '%s'", t.job[0].err, t.job[1].err);
    teardown(&t);
}

/* The two ranks' configurations: ((const cl_config **)ctx)[rank]. */
static void configs(ring_test *t, void *ctx) {
    const cl_config *const *c = ctx;
    t->job[0].config = c[0];
    t->job[1].config = c[1];
}

/* A configuration in parts: the mismatch names the part that differs, with its hint
 * (or the default one); configurations that agree open the ring. */
static void test_config_parts_named(void) {
    static const cl_config mine = {.part = {1, 2, 3},
                                   .name = {"the model", "--precision", "where the steps run"},
                                   .hint = {NULL, NULL, "run them alike"}};
    cl_config other = mine;
    other.part[1] = 5;
    const cl_config *two[2] = {&mine, &other};
    ring_test t;
    run_ring_as(&t, 2, 2, SC_ALLREDUCE, 10, 2, configs, two);
    /* both see it (the one that finds it first answers with its own hello), and
     * neither is worth running again: a usage error */
    CHECK(t.job[0].rc == TN_EINVAL && t.job[1].rc == TN_EINVAL);
    CHECK_STR_CONTAINS(t.job[0].err, "worker 0 (localhost:");
    CHECK_STR_CONTAINS(t.job[0].err, "runs with a different configuration: --precision "
                                     "differs from this replica's; hint: give every replica");
    teardown(&t);
    other = mine;
    other.part[2] = 9;
    run_ring_as(&t, 2, 2, SC_ALLREDUCE, 10, 2, configs, two);
    CHECK_STR_CONTAINS(t.job[1].err, "where the steps run differs from this replica's; hint: "
                                     "run them alike");
    teardown(&t);
    two[1] = &mine;
    run_ring_as(&t, 2, 2, SC_ALLREDUCE, 10, 2, configs, two);
    CHECK_MSG(t.job[0].rc == 0 && t.job[1].rc == 0, "'%s' / '%s'", t.job[0].err, t.job[1].err);
    teardown(&t);
}

/* A replica of another job (an earlier trial's, still running on a port given out
 * again): rank `rank` of a 2-replica job of its own, listening on `own` and connecting
 * to `to`, which it takes for its next peer, for `timeout` seconds. */
typedef struct foreign_job {
    char own[32], to[32], other[32];
    cl_peer peers[2];
    rank_job job;
    pthread_t th;
} foreign_job;

static void foreign_start(foreign_job *f, int rank, const char *own, const char *to,
                          double timeout) {
    /* the flags' hash of cl_open's rings (42), another trial's job */
    static const cl_config other = {.part = {42}, .name = {"its flags or data"}, .job = 7};
    memset(f, 0, sizeof *f);
    snprintf(f->own, sizeof f->own, "%s", own);
    snprintf(f->to, sizeof f->to, "%s", to);
    f->peers[rank] = (cl_peer){"its own", f->own};
    f->peers[1 - rank] = (cl_peer){"its peer", f->to};
    f->job = (rank_job){.n = 2, .rank = rank, .peers = f->peers, .config = &other,
                        .timeout = timeout, .scenario = SC_ALLREDUCE, .count = 10};
    f->job.buf = calloc(10 + MAXR + 2, sizeof(float));
    pthread_create(&f->th, NULL, run_rank, &f->job);
}

static void foreign_finish(foreign_job *f) {
    pthread_join(f->th, NULL);
    free(f->job.buf);
}

/* A replica of another job with the same flags reaches rank 1's port before rank 0
 * does: it is turned away, and the ring forms with its own rank 0 (it used to be let
 * in: the two jobs' gradients summed, and the real rank 0 left out). */
static void test_foreign_replica_turned_away(void) {
    for (int attempt = 1; attempt <= 3; attempt++) {
        ring_test t;
        setup(&t, 2, SC_ALLREDUCE, 1000, 10);
        char own[32];
        snprintf(own, sizeof own, "localhost:%d", free_port());
        foreign_job f;
        foreign_start(&f, 0, own, t.addr[1], 3); /* it takes rank 1 for its next */
        pthread_create(&t.th[1], NULL, run_rank, &t.job[1]);
        nanosleep(&(struct timespec){0, 500 * 1000 * 1000}, NULL); /* f knocks first */
        pthread_create(&t.th[0], NULL, run_rank, &t.job[0]);
        finish(&t, 2);
        foreign_finish(&f);
        const char *why = ports_taken(&t, 2);
        if (why && attempt < 3) {
            printf("note: another process took this ring's ports (%s): again\n", why);
            teardown(&t);
            continue;
        }
        for (int i = 0; i < 2; i++) CHECK_MSG(t.job[i].rc == 0, "rank %d: %s", i, t.job[i].err);
        int bad = 0;
        for (size_t k = 0; k < 1000; k++)
            bad += t.job[1].buf[k] != value(0, k) + value(1, k);
        CHECK_MSG(bad == 0, "%d wrong sums", bad);
        CHECK_MSG(f.job.rc == TN_EPEER, "the foreign replica: rc %d: %s", f.job.rc, f.job.err);
        teardown(&t);
        return;
    }
}

/* A replica of the same job given another cluster (here one address in another
 * spelling, which still reaches the same port): an error at once that says so, not a
 * stranger waited out until the timeout. */
static void other_cluster(ring_test *t, void *ctx) {
    static char alias[32], *colon;
    static cl_peer peers[2];
    (void)ctx;
    colon = strrchr(t->addr[0], ':');
    snprintf(alias, sizeof alias, "127.0.0.1%s", colon ? colon : ":0");
    peers[0] = (cl_peer){t->name[0], alias};
    peers[1] = t->peers[1];
    t->job[1].peers = peers;
}

static void test_other_cluster_named(void) {
    ring_test t;
    run_ring_as(&t, 2, 2, SC_ALLREDUCE, 10, 20, other_cluster, NULL);
    int named = 0;
    for (int i = 0; i < 2; i++) {
        CHECK_MSG(t.job[i].rc != 0, "rank %d formed a ring", i);
        CHECK_MSG(t.job[i].failed_after < 10, "rank %d took %.1f s", i, t.job[i].failed_after);
        named |= t.job[i].rc == TN_EINVAL && strstr(t.job[i].err, "was given another TF_CONFIG "
                                                                   "cluster") != NULL;
    }
    CHECK_MSG(named, "'%s' / '%s'", t.job[0].err, t.job[1].err);
    teardown(&t);
}

/* Why a ring did not form, when a replica of another job came: rank 0, whose previous
 * peer never starts, says one came and was turned away; rank 1, whose next peer's port
 * a replica of another job holds, says so. */
static void test_foreign_replica_named(void) {
    ring_test t;
    foreign_job f;
    /* (not run_ring_as: its retries take "another job" for a port lost to a stranger) */
    setup(&t, 3, SC_ALLREDUCE, 10, 1.5);
    int held = hold_port(t.addr[2]); /* worker 1 (rank 2) never starts */
    char own[32];
    snprintf(own, sizeof own, "localhost:%d", free_port());
    foreign_start(&f, 1, own, t.addr[0], 3);
    start(&t, 2);
    finish(&t, 2);
    foreign_finish(&f);
    if (held >= 0) close(held);
    CHECK_INT_EQ(t.job[0].rc, TN_EPEER);
    CHECK_STR_CONTAINS(t.job[0].err, "waiting for worker 1 (");
    CHECK_STR_CONTAINS(t.job[0].err, "to connect to this replica");
    CHECK_STR_CONTAINS(t.job[0].err, "meanwhile there came a replica of another job (rank 1 "
                                     "of 2 of another trial), turned away");
    teardown(&t);

    /* rank 2's port is the foreign replica's, whose own next listens but never answers */
    for (int attempt = 1; attempt <= 3; attempt++) {
        char silent[32];
        int sfd = listen_silent(silent, sizeof silent);
        setup(&t, 3, SC_ALLREDUCE, 10, 2);
        foreign_start(&f, 1, t.addr[2], silent, 4);
        nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL); /* it listens */
        start(&t, 2);
        finish(&t, 2);
        foreign_finish(&f);
        if (sfd >= 0) close(sfd);
        if (ports_taken(&t, 2) && !strstr(t.job[1].err, "held by") && attempt < 3) {
            teardown(&t);
            continue;
        }
        CHECK_INT_EQ(t.job[1].rc, TN_EPEER);
        CHECK_STR_CONTAINS(t.job[1].err, "waiting for worker 1 at");
        CHECK_STR_CONTAINS(t.job[1].err, "its address was held by a replica of another job "
                                         "(rank 1 of 2");
        teardown(&t);
        return;
    }
}

static void test_out_of_step(void) {
    ring_test t;
    run_ring(&t, 2, SC_OUT_OF_STEP, 10, 2);
    CHECK_INT_EQ(t.job[0].rc, TN_EPEER);
    CHECK_STR_CONTAINS(t.job[0].err, "out of step");
    teardown(&t);
}

static void test_single_rank_is_a_no_op(void) {
    cl_peer p = {"chief 0", "localhost:1"}; /* never bound with one rank */
    cl_ring *r = NULL;
    char err[256];
    CHECK_INT_EQ(cl_open(&p, 1, 0, 1, 0, CL_AUTO, &r, err, sizeof err), 0);
    float x[3] = {1, 2, 3};
    CHECK_INT_EQ(cl_allreduce(r, x, 3, CL_BF16, err, sizeof err), 0);
    CHECK(x[0] == 1 && x[1] == 2 && x[2] == 3);
    CHECK_INT_EQ(cl_size(r), 1);
    cl_close(r);
    CHECK_INT_EQ(cl_open(&p, 2, 2, 1, 0, CL_AUTO, &r, err, sizeof err), TN_EINVAL);
}

static void test_buckets_sum_every_bucket(void) {
    ring_test t;
    run_ring(&t, 3, SC_BUCKETS, 10002, 20);
    int bad = 0;
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(t.job[i].rc == 0, "rank %d: %s", i, t.job[i].err);
        /* 3000-float buckets of whole layers from the end: [5000, 10002), [100, 5000),
         * [0, 100) */
        CHECK_INT_EQ(t.job[i].nbuckets, 3);
        for (size_t k = 0; k < 10002; k++) {
            double want = 0;
            for (int q = 0; q < 3; q++) want += value(q, k);
            if (fabs(t.job[i].buf[k] - want) > 1e-4) bad++;
        }
        CHECK(!memcmp(t.job[i].buf, t.job[0].buf, 10002 * sizeof(float)));
    }
    CHECK_MSG(bad == 0, "%d wrong sums", bad);
    teardown(&t);
}

static void test_buckets_lost_peer(void) {
    ring_test t;
    run_ring(&t, 2, SC_BUCKETS_DIE, 10002, 30);
    CHECK_MSG(t.job[0].rc == TN_EPEER, "rank 0: rc %d: %s", t.job[0].rc, t.job[0].err);
    CHECK_STR_CONTAINS(t.job[0].err, "lost worker 0");
    teardown(&t);
}

/* Replicas in one process share /dev/shm: CL_AUTO takes shared memory, and says so. */
static void test_auto_takes_shared_memory(void) {
    int saved = g_transport;
    g_transport = CL_AUTO;
    ring_test t;
    run_ring(&t, 3, SC_ALLREDUCE, 5000, 20);
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(t.job[i].rc == 0, "rank %d: %s", i, t.job[i].err);
        CHECK_INT_EQ(t.job[i].transport, CL_SHM);
        CHECK_STR_CONTAINS(t.job[i].note, "shared memory");
    }
    teardown(&t);
    g_transport = saved;
}

/* No usable segment directory: auto falls back to TCP and says why; shm refuses. */
static void test_no_shared_memory(void) {
    const char *dir = getenv("TRAINER_SHM_DIR");
    char saved[256];
    snprintf(saved, sizeof saved, "%s", dir);
    setenv("TRAINER_SHM_DIR", "/nonexistent/trainer-shm", 1);
    const int modes[] = {CL_AUTO, CL_SHM};
    for (int m = 0; m < 2; m++) {
        g_transport = modes[m];
        ring_test t;
        run_ring(&t, 2, SC_ALLREDUCE, 1000, 20);
        for (int i = 0; i < 2; i++) {
            if (modes[m] == CL_AUTO) {
                CHECK_MSG(t.job[i].rc == 0, "rank %d: %s", i, t.job[i].err);
                CHECK_INT_EQ(t.job[i].transport, CL_TCP);
                CHECK_STR_CONTAINS(t.job[i].note, "could not create a shared-memory segment");
                CHECK_STR_CONTAINS(t.job[i].note, "/nonexistent/trainer-shm");
                CHECK_NEAR(t.job[i].buf[5], value(0, 5) + value(1, 5), 1e-6, 0);
            } else {
                CHECK_INT_EQ(t.job[i].rc, TN_EINVAL);
                CHECK_STR_CONTAINS(t.job[i].err, "--allreduce_transport=shm is not possible");
                CHECK_STR_CONTAINS(t.job[i].err, "hint:");
            }
        }
        teardown(&t);
    }
    setenv("TRAINER_SHM_DIR", saved, 1);
    g_transport = CL_TCP;
}

/* A segment is only taken for the one offered: right name, ranks and cookie. */
static void test_segment_checks(void) {
    const char *names[] = {"chief 0", "worker 0"};
    char name[96], err[512];
    uint64_t cookie[2];
    sm_seg *a = NULL, *b = NULL;
    CHECK_INT_EQ(sm_create(2, names, name, sizeof name, cookie, &a, err, sizeof err), 0);
    uint64_t wrong[2] = {cookie[0], cookie[1] ^ 1};
    CHECK_INT_EQ(sm_attach(name, wrong, 2, 1, names, &b, err, sizeof err), TN_EMISMATCH);
    CHECK_STR_CONTAINS(err, "is not the chief's segment");
    CHECK_INT_EQ(sm_attach(name, cookie, 3, 1, names, &b, err, sizeof err), TN_EMISMATCH);
    CHECK_INT_EQ(sm_attach(name, cookie, 2, 1, names, &b, err, sizeof err), 0);
    sm_unlink(name);
    CHECK_INT_EQ(sm_attach(name, cookie, 2, 1, names, &b, err, sizeof err), TN_EIO);
    CHECK_STR_CONTAINS(err, "cannot open");
    /* a peer that gave up is named, with its reason, by whoever waits for it */
    sm_abort(b, "lost worker 7 (somewhere)");
    sm_hooks hooks = {NULL, NULL, NULL};
    float x[4] = {1, 2, 3, 4};
    unsigned char header[16] = {1};
    CHECK_INT_EQ(sm_allreduce(a, x, 4, 0, header, 5, &hooks, err, sizeof err), TN_EPEER);
    CHECK_STR_CONTAINS(err, "worker 0 gave up: lost worker 7 (somewhere)");
    sm_close(a);
    sm_close(b);
    sm_close(NULL);
}

static void run_ring_tests(int transport) {
    g_transport = transport;
    fprintf(stderr, "-- all-reduce over %s\n", transport == CL_SHM ? "shared memory" : "TCP");
    RUN(test_allreduce_sums_and_agrees);
    RUN(test_bf16_identical_and_close);
    RUN(test_broadcast_and_f64);
    RUN(test_many_small_collectives);
    RUN(test_missing_peer_is_named);
    RUN(test_dead_peer_noticed_at_once);
    RUN(test_silent_peer_given_up);
    RUN(test_config_mismatch);
    RUN(test_config_parts_named);
    RUN(test_foreign_replica_turned_away);
    RUN(test_foreign_replica_named);
    RUN(test_other_cluster_named);
    RUN(test_out_of_step);
    RUN(test_buckets_sum_every_bucket);
    RUN(test_buckets_lost_peer);
}

/* The one send/receive of the ring and the parameter servers (trainer/net.h). */
static void test_net_send_receive(void) {
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    char buf[8] = {0};
    CHECK_INT_EQ(nt_send_all(sv[0], "abcdefgh", 8), 0);
    CHECK_INT_EQ(nt_recv_all(sv[1], buf, 8), 0);
    CHECK(!memcmp(buf, "abcdefgh", 8));
    /* nothing comes: the deadline ends the wait */
    double t0 = nt_now();
    int e = nt_recv_until(sv[1], buf, 4, t0 + 0.05);
    CHECK_INT_EQ(e, TN_EIO);
    CHECK_INT_EQ(errno, ETIMEDOUT);
    CHECK(!strcmp(nt_io_error(e), "timed out"));
    CHECK(nt_now() - t0 < 5);
    /* part of a message, then the peer goes: the end of the stream, either way */
    CHECK_INT_EQ(nt_send_all(sv[0], "xy", 2), 0);
    CHECK_INT_EQ(nt_send_all(sv[0], "zw", 2), 0);
    close(sv[0]);
    CHECK_INT_EQ(nt_recv_until(sv[1], buf, 2, nt_now() + 5), 0);
    CHECK(!memcmp(buf, "xy", 2));
    CHECK_INT_EQ(nt_recv_all(sv[1], buf, 4), TN_EPEER);
    CHECK(!strcmp(nt_io_error(TN_EPEER), "the connection closed"));
    CHECK_INT_EQ(nt_recv_until(sv[1], buf, 4, nt_now() + 5), TN_EPEER);
    /* sending to a peer that is gone is an error, not SIGPIPE */
    CHECK_INT_EQ(nt_send_all(sv[1], "q", 1), TN_EIO);
    CHECK_INT_EQ(errno, EPIPE);
    CHECK(!strcmp(nt_io_error(TN_EIO), strerror(EPIPE)));
    close(sv[1]);
}

int main(void) {
    /* a tmpfs, as in use: a segment on a disk could stall on writeback under load */
    char shm_dir[] = "/dev/shm/test-collective-XXXXXX", tmp_dir[] = "/tmp/test-collective-XXXXXX";
    const char *dir = mkdtemp(shm_dir) ? shm_dir : mkdtemp(tmp_dir);
    if (!dir) return 1;
    setenv("TRAINER_SHM_DIR", dir, 1);
    RUN(test_net_send_receive);
    RUN(test_bf16_rounding);
    RUN(test_single_rank_is_a_no_op);
    RUN(test_segment_checks);
    run_ring_tests(CL_TCP);
    run_ring_tests(CL_SHM);
    RUN(test_auto_takes_shared_memory);
    RUN(test_no_shared_memory);
    /* every segment was unlinked once all its ranks had it */
    DIR *d = opendir(dir);
    int left = 0;
    for (struct dirent *e; d && (e = readdir(d));) left += e->d_name[0] != '.';
    if (d) closedir(d);
    CHECK_MSG(left == 0, "%d segment files left in %s", left, dir);
    rmdir(dir);
    return check_summary();
}
