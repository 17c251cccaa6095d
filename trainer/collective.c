/*
 * collective.c — the TCP ring and its collectives, and the choice of the all-reduce's
 * transport: the ring, or shared memory (shm.c) when every rank is on one host (see
 * collective.h).
 *
 * Each rank has two connections: `next` (it only sends on it) and `prev` (it only
 * receives). Every transfer goes through pump(), a poll() loop that sends to next and
 * receives from prev at the same time, so a rank never waits for its own send to
 * drain before reading (which would deadlock a ring once the buffers fill). Every
 * collective starts with a 16-byte header (operation, sequence number, size) sent to
 * next and checked against the one from prev.
 */
#define _GNU_SOURCE /* POLLRDHUP */
#include "trainer/collective.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"
#include "trainer/collective_internal.h"
#include "trainer/net.h"
#include "trainer/shm.h"

#define HELLO_MAGIC "TNRING03"
#define COLL_MAGIC 0x4c43544eu /* "TNCL" */
#define CL_HELLO_S 5.0         /* seconds an accepted connection has to say hello */

enum { OP_ALLREDUCE = 1, OP_ALLREDUCE_BF16, OP_ALLREDUCE_F64, OP_BROADCAST };

typedef struct coll_header {
    uint32_t magic, op;
    uint64_t seq_count; /* seq << 40 | element count (counts < 2^40) */
} coll_header;

_Static_assert(sizeof(coll_header) == 16, "the segment keeps 16-byte headers");

struct cl_ring {
    int n, rank;
    int next_fd, prev_fd;   /* -1 with one rank */
    double timeout;         /* seconds without progress before a peer is given up */
    uint64_t seq;           /* collectives done */
    char next_name[96];     /* "worker 1 (localhost:41234)" */
    char prev_name[96];
    void *scratch;          /* receive (and bf16 send) buffers, grown on demand */
    size_t scratch_size;
    char (*names)[96];      /* (n) every rank's name and address, for messages */
    sm_seg *shm;            /* the all-reduce's shared-memory segment, or NULL (TCP) */
    coll_header shm_header; /* the shared-memory all-reduce under way */
    char transport_note[512]; /* why the all-reduce uses the transport it uses */
};

typedef struct hello {
    char magic[8];
    uint32_t rank, n;
    uint64_t job;                   /* cl_config.job: whose ring this is */
    uint64_t cluster;               /* cluster_hash(): the ring's addresses */
    uint64_t part[CL_CONFIG_PARTS]; /* cl_config's */
} hello;

/* What a replica of another job said when it reached this one, for the messages. */
typedef struct foreign {
    int seen;
    uint32_t rank, n;
} foreign;

uint64_t cl_hash(uint64_t h, const void *data, size_t bytes) {
    const unsigned char *p = data;
    for (size_t i = 0; i < bytes; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint16_t cl_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return bf16_round(u);
}

float cl_from_bf16(uint16_t h) { return bf16_widen(h); }

int cl_rank(const cl_ring *r) { return r->rank; }
int cl_size(const cl_ring *r) { return r->n; }

int cl_transport(const cl_ring *r) { return r->shm ? CL_SHM : CL_TCP; }

const char *cl_transport_note(const cl_ring *r) { return r->transport_note; }

static void *scratch(cl_ring *r, size_t bytes) {
    if (bytes > r->scratch_size) {
        free(r->scratch);
        r->scratch = tn_xmalloc(bytes);
        r->scratch_size = bytes;
    }
    return r->scratch;
}

/* ---- setting up ---- */

/* The ring's cluster: every address in rank order. Replicas of one job (cl_config.job)
 * with other clusters were given different TF_CONFIGs: an error, named at once. */
static uint64_t cluster_hash(const cl_peer *peers, int n) {
    uint64_t h = cl_hash(CL_HASH_INIT, &n, sizeof n);
    for (int q = 0; q < n; q++) h = cl_hash(h, peers[q].addr, strlen(peers[q].addr) + 1);
    return h;
}

/* 0: h is the peer wanted; 1: not a trainer's hello (a stranger); 2: a replica of
 * another job (another trial: an earlier one's on a port given out again; *f notes it);
 * or an error, TN_EINVAL, since nothing a replica of this job can say otherwise is
 * mended by running it again: it was given another cluster, it is this replica itself
 * (one address in two spellings), or it runs with other flags. */
static int check_hello(const hello *h, const cl_ring *r, uint64_t cluster, int want_rank,
                       const cl_config *config, const char *who, foreign *f, char *err,
                       size_t errlen) {
    if (memcmp(h->magic, HELLO_MAGIC, 8) != 0) return 1; /* not one of ours */
    if (h->job != config->job) {
        *f = (foreign){1, h->rank, h->n};
        return 2;
    }
    if (h->cluster != cluster)
        return tn_error(err, errlen, TN_EINVAL,
                        "%s was given another TF_CONFIG cluster (it says it is rank %u of %u, "
                        "its addresses differ from this replica's); hint: every replica must "
                        "get the same TF_CONFIG cluster",
                        who, h->rank, h->n);
    if ((int)h->n == r->n && (int)h->rank == r->rank && want_rank != r->rank &&
        !memcmp(h->part, config->part, sizeof h->part))
        /* our own hello: the peer's address reached this replica's own listener, the
         * cluster naming one host:port twice in two spellings (localhost and 127.0.0.1) */
        return tn_error(err, errlen, TN_EINVAL,
                        "%s is this replica itself (%s): TF_CONFIG's cluster names one "
                        "address twice; hint: give every replica its own host:port",
                        who, r->names[r->rank]);
    if ((int)h->n != r->n || (int)h->rank != want_rank)
        return tn_error(err, errlen, TN_EINVAL,
                        "%s says it is rank %u of %u, but this replica expects rank %d of "
                        "%d; hint: every replica must get the same TF_CONFIG cluster",
                        who, h->rank, h->n, want_rank, r->n);
    for (int i = 0; i < CL_CONFIG_PARTS; i++)
        if (h->part[i] != config->part[i])
            return tn_error(err, errlen, TN_EINVAL,
                            "%s runs with a different configuration: %s differs from this "
                            "replica's; hint: %s",
                            who, config->name[i] ? config->name[i] : "an unnamed part",
                            config->hint[i] ? config->hint[i]
                                            : "give every replica of a job the same flags "
                                              "and data");
    return 0;
}

/* Appends to err (a timeout's message) what a replica of another job said. */
static void say_foreign(char *err, size_t errlen, const foreign *f, const char *where) {
    size_t used = err ? strlen(err) : 0;
    if (!f->seen || used + 1 >= errlen) return;
    snprintf(err + used, errlen - used,
             "; %s a replica of another job (rank %u of %u of another trial), turned "
             "away: one of an earlier job may still be running there",
             where, f->rank, f->n);
}

static int open_shm(cl_ring *r, int transport, char *err, size_t errlen);

int cl_open(const cl_peer *peers, int n, int rank, double timeout, uint64_t config_hash,
            int transport, cl_ring **out, char *err, size_t errlen) {
    cl_config config = {.part = {config_hash}, .name = {"its flags or data"}};
    return cl_open_config(peers, n, rank, timeout, &config, transport, out, err, errlen);
}

int cl_open_config(const cl_peer *peers, int n, int rank, double timeout,
                   const cl_config *config, int transport, cl_ring **out, char *err,
                   size_t errlen) {
    if (n < 1 || rank < 0 || rank >= n)
        return tn_error(err, errlen, TN_EINVAL, "rank %d of %d is out of range", rank, n);
    cl_ring *r = tn_xmalloc(sizeof *r);
    memset(r, 0, sizeof *r);
    r->n = n;
    r->rank = rank;
    r->next_fd = r->prev_fd = -1;
    r->timeout = timeout > 0 ? timeout : 60;
    if (n == 1) {
        *out = r;
        return 0;
    }
    r->names = tn_xmalloc((size_t)n * sizeof *r->names);
    for (int q = 0; q < n; q++)
        snprintf(r->names[q], sizeof r->names[q], "%s (%s)", peers[q].name, peers[q].addr);
    int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    snprintf(r->next_name, sizeof r->next_name, "%s", r->names[next]);
    snprintf(r->prev_name, sizeof r->prev_name, "%s", r->names[prev]);
    double deadline = nt_now() + r->timeout;
    int lfd = -1;
    uint64_t cluster = cluster_hash(peers, n);
    hello mine = {.rank = (uint32_t)rank, .n = (uint32_t)n, .job = config->job,
                  .cluster = cluster};
    memcpy(mine.magic, HELLO_MAGIC, 8);
    memcpy(mine.part, config->part, sizeof mine.part);
    hello h;
    foreign from_prev = {0}, at_next = {0};

    /* 1. listen; 2. connect to next (the kernel completes it as soon as next listens,
     * whether or not it has reached accept, so no order between ranks deadlocks) and
     * introduce ourselves; 3. accept prev, check it, answer; 4. check next's answer. */
    int rc = nt_listen(peers[rank].addr, 16, "this replica's TF_CONFIG address", &lfd, err,
                       errlen);
    if (!rc)
        rc = nt_connect(peers[next].addr, peers[next].name, deadline, r->timeout, &r->next_fd,
                        err, errlen);
    int e = rc ? 0 : nt_send_all(r->next_fd, &mine, sizeof mine);
    if (e)
        rc = tn_error(err, errlen, TN_EPEER, "lost %s while connecting: %s", r->next_name,
                      nt_io_error(e));
    while (!rc && r->prev_fd < 0) {
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        int ms = nt_wait_slice(deadline);
        int k = ms > 0 ? poll(&p, 1, ms) : 0;
        if (k == 0 && ms > 0 && !nt_stop_signal()) continue; /* a slice */
        if (nt_stop_signal()) {
            rc = tn_error(err, errlen, TN_EPEER,
                          "stopped by signal %d while waiting for %s to connect to this "
                          "replica at %s",
                          nt_stop_signal(), r->prev_name, peers[rank].addr);
            break;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            rc = tn_error(err, errlen, TN_EPEER,
                          "timed out after %.0f s waiting for %s to connect to this replica "
                          "at %s; hint: every replica of TF_CONFIG's cluster must be started",
                          r->timeout, r->prev_name, peers[rank].addr);
            say_foreign(err, errlen, &from_prev, "meanwhile there came");
            break;
        }
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        /* A peer sends its hello as it connects; a connection that sends nothing (a port
         * scan, a health probe) is a stranger once CL_HELLO_S pass, not a wait that
         * keeps the real peer out until the deadline. */
        double hello_by = nt_now() + CL_HELLO_S;
        int got = nt_recv_until(fd, &h, sizeof h, hello_by < deadline ? hello_by : deadline);
        int bad = got ? 1 : check_hello(&h, r, cluster, prev, config, r->prev_name, &from_prev,
                                        err, errlen);
        if (bad < 0) {
            nt_send_all(fd, &mine, sizeof mine); /* so that it learns why, too */
            close(fd);
            rc = bad;
            break;
        }
        if (bad == 2) nt_send_all(fd, &mine, sizeof mine); /* not its ring: say whose */
        if (bad) { /* a stranger, a replica of another job, or a peer that gave up */
            close(fd);
            continue;
        }
        nt_tune(fd);
        if (nt_send_all(fd, &mine, sizeof mine)) {
            close(fd);
            continue;
        }
        r->prev_fd = fd;
    }
    /* 4. next's answer. One from a replica of another job, which holds next's port, is
     * no answer: connect again until the deadline, for next may get the port yet. */
    while (!rc) {
        int got = nt_recv_until(r->next_fd, &h, sizeof h, deadline);
        if (got && at_next.seen) { /* the deadline came while it was tried again */
            rc = tn_error(err, errlen, TN_EPEER, "timed out after %.0f s waiting for %s at %s",
                          r->timeout, peers[next].name, peers[next].addr);
            say_foreign(err, errlen, &at_next, "its address was held by");
            break;
        }
        if (got) {
            rc = tn_error(err, errlen, TN_EPEER, "%s did not answer while connecting (%s)",
                          r->next_name, nt_io_error(got));
            break;
        }
        rc = check_hello(&h, r, cluster, next, config, r->next_name, &at_next, err, errlen);
        if (rc == 1)
            rc = tn_error(err, errlen, TN_EPEER, "%s is not a trainer replica",
                          r->next_name);
        if (rc != 2) break;
        close(r->next_fd);
        r->next_fd = -1;
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
        rc = nt_connect(peers[next].addr, peers[next].name, deadline, r->timeout,
                        &r->next_fd, err, errlen);
        if (rc) {
            say_foreign(err, errlen, &at_next, "its address was held by");
            break;
        }
        if ((e = nt_send_all(r->next_fd, &mine, sizeof mine)) != 0)
            rc = tn_error(err, errlen, TN_EPEER, "lost %s while connecting: %s",
                          r->next_name, nt_io_error(e));
    }
    if (lfd >= 0) close(lfd); /* a restarted peer must not reach a ring that is gone */
    if (!rc) rc = open_shm(r, transport, err, errlen);
    if (rc) {
        cl_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

void cl_close(cl_ring *r) {
    if (!r) return;
    if (r->next_fd >= 0) close(r->next_fd);
    if (r->prev_fd >= 0) close(r->prev_fd);
    sm_close(r->shm);
    free(r->names);
    free(r->scratch);
    free(r);
}

/* ---- moving bytes ---- */

typedef void (*progress_fn)(void *ctx, size_t received);

/* The 16-byte header a collective starts with, both ways (see header()). */
typedef struct wire_header {
    const coll_header *out; /* sent to next before the data */
    coll_header *in;        /* received from prev before the data */
    int (*check)(cl_ring *r, const coll_header *mine, const coll_header *theirs, char *err,
                 size_t errlen);
} wire_header;

static const char *closed_msg =
    "the connection closed (that replica exited: it crashed, was stopped, or lost a peer "
    "itself)";

/* Sends send[0..slen) to next while receiving recv[0..rlen) from prev, each preceded
 * by the collective's header when hdr is set (checked as soon as it has arrived, so a
 * replica out of step is reported at once). With follow, only data already received
 * may be sent (send == recv: forwarding). on_recv, if set, is told how many data bytes
 * have arrived after each read. */
static int pump(cl_ring *r, const wire_header *hdr, const void *send_buf, size_t slen,
                void *recv_buf, size_t rlen, int follow, progress_fn on_recv, void *ctx,
                char *err, size_t errlen) {
    size_t hs = hdr ? sizeof(coll_header) : 0;
    size_t sent = 0, got = 0, stotal = hs + slen, rtotal = hs + rlen;
    int checked = !hdr;
    double deadline = nt_now() + r->timeout;
    while (sent < stotal || got < rtotal) {
        size_t data_got = got > hs ? got - hs : 0;
        size_t can_send = hs + (follow ? (data_got < slen ? data_got : slen) : slen);
        /* next is watched only while there is something left to send to it (a
         * neighbour that has finished may close), and prev while there is something
         * to receive; a negative fd is skipped by poll */
        struct pollfd p[2] = {{.fd = sent < stotal ? r->next_fd : -1, .events = POLLRDHUP},
                              {.fd = got < rtotal ? r->prev_fd : -1, .events = POLLIN}};
        if (sent < can_send) p[0].events |= POLLOUT;
        int ms = (int)((deadline - nt_now()) * 1000);
        int k = ms > 0 ? nt_poll(p, 2, ms) : 0;
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return tn_error(err, errlen, TN_EIO, "poll: %s", strerror(errno));
        if (k == 0)
            return tn_error(err, errlen, TN_EPEER,
                            "no progress for %.0f s: %s is not answering (hung, stopped or "
                            "too slow); hint: raise --peer_timeout if a step can take longer",
                            r->timeout, got < rtotal ? r->prev_name : r->next_name);
        if (p[0].revents & (POLLRDHUP | POLLERR | POLLHUP))
            return tn_error(err, errlen, TN_EPEER, "lost %s: %s", r->next_name, closed_msg);
        if (p[0].revents & POLLOUT) {
            struct iovec iov[2];
            int n = 0;
            if (sent < hs) iov[n++] = (struct iovec){(char *)hdr->out + sent, hs - sent};
            size_t from = sent > hs ? sent - hs : 0;
            if (can_send > hs && from < can_send - hs)
                iov[n++] = (struct iovec){(char *)send_buf + from, can_send - hs - from};
            struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
            ssize_t s = sendmsg(r->next_fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (s < 0 && errno != EAGAIN && errno != EINTR)
                return tn_error(err, errlen, TN_EPEER, "lost %s: %s", r->next_name,
                                strerror(errno));
            if (s > 0) {
                sent += (size_t)s;
                deadline = nt_now() + r->timeout;
            }
        }
        if (p[1].revents & (POLLIN | POLLERR | POLLHUP)) {
            struct iovec iov[2];
            int n = 0;
            if (got < hs) iov[n++] = (struct iovec){(char *)hdr->in + got, hs - got};
            if (rlen > data_got)
                iov[n++] = (struct iovec){(char *)recv_buf + data_got, rlen - data_got};
            struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
            ssize_t s = recvmsg(r->prev_fd, &m, MSG_DONTWAIT);
            if (s == 0 || (s < 0 && errno != EAGAIN && errno != EINTR))
                return tn_error(err, errlen, TN_EPEER, "lost %s: %s", r->prev_name,
                                s == 0 ? closed_msg : strerror(errno));
            if (s > 0) {
                got += (size_t)s;
                deadline = nt_now() + r->timeout;
                if (!checked && got >= hs) {
                    checked = 1;
                    int rc = hdr->check(r, hdr->out, hdr->in, err, errlen);
                    if (rc) return rc;
                }
                if (on_recv && got > hs) on_recv(ctx, got - hs);
            }
        }
    }
    return 0;
}

static const char *op_name(uint32_t op) {
    switch (op) {
    case OP_ALLREDUCE: return "all-reduce";
    case OP_ALLREDUCE_BF16: return "all-reduce (bf16)";
    case OP_ALLREDUCE_F64: return "all-reduce (f64)";
    case OP_BROADCAST: return "broadcast";
    default: return "unknown operation";
    }
}

static int out_of_step(const char *who, const coll_header *mine, const coll_header *theirs,
                       char *err, size_t errlen) {
    if (theirs->magic == COLL_MAGIC && theirs->op == mine->op &&
        theirs->seq_count == mine->seq_count)
        return 0;
    return tn_error(err, errlen, TN_EPEER,
                    "replicas out of step: %s is at collective #%llu (%s of %llu elements), "
                    "this replica at #%llu (%s of %llu)",
                    who, (unsigned long long)(theirs->seq_count >> 40),
                    op_name(theirs->op),
                    (unsigned long long)(theirs->seq_count & ((1ull << 40) - 1)),
                    (unsigned long long)(mine->seq_count >> 40), op_name(mine->op),
                    (unsigned long long)(mine->seq_count & ((1ull << 40) - 1)));
}

static int check_header(cl_ring *r, const coll_header *mine, const coll_header *theirs,
                        char *err, size_t errlen) {
    return out_of_step(r->prev_name, mine, theirs, err, errlen);
}

/* Every collective starts with a header (operation, sequence number, size) sent to
 * next and checked against the one from prev: a replica that is at another
 * collective, or at the same one with another size, is caught at once. The header
 * travels with the collective's first data (wire_header), or alone (header()). */
static void make_header(cl_ring *r, uint32_t op, uint64_t count, coll_header *mine,
                        coll_header *theirs, wire_header *w) {
    *mine = (coll_header){COLL_MAGIC, op, (r->seq << 40) | (count & ((1ull << 40) - 1))};
    r->seq++;
    *w = (wire_header){mine, theirs, check_header};
}

static int header(cl_ring *r, uint32_t op, uint64_t count, char *err, size_t errlen) {
    coll_header mine, theirs;
    wire_header w;
    make_header(r, op, count, &mine, &theirs, &w);
    return pump(r, &w, NULL, 0, NULL, 0, 0, NULL, NULL, err, errlen);
}

/* Reduction as bytes arrive: adds the complete elements received so far. */
typedef struct reducer {
    float *dst;          /* the segment being summed into */
    const void *src;     /* the receive buffer (float or bf16) */
    size_t done;         /* elements already added */
    int bf16;
} reducer;

static void reduce_progress(void *ctx, size_t received) {
    reducer *d = ctx;
    size_t upto = received / (d->bf16 ? 2 : 4);
    float *restrict dst = d->dst;
    if (d->bf16) {
        const uint16_t *restrict s = d->src;
        for (size_t i = d->done; i < upto; i++) dst[i] += bf16_widen(s[i]);
    } else {
        const float *restrict s = d->src;
        for (size_t i = d->done; i < upto; i++) dst[i] += s[i];
    }
    d->done = upto;
}

static int ring_allreduce(cl_ring *r, const wire_header *w, float *buf, size_t n, int bf16,
                          char *err, size_t errlen) {
    size_t esize = bf16 ? 2 : 4;
    int rc = 0;
    size_t maxseg = n / (size_t)r->n + 1;
    /* scratch: receive buffer, then (bf16) the send buffer */
    char *base = scratch(r, maxseg * esize * (bf16 ? 2 : 1));
    void *rbuf = base;
    uint16_t *sbuf = bf16 ? (uint16_t *)(base + maxseg * esize) : NULL;

    /* reduce-scatter: after step s, the segment received holds s + 2 ranks' sum */
    for (int s = 0; s < r->n - 1; s++) {
        size_t soff, slen, roff, rlen;
        split_part(n, r->n, (r->rank - s + r->n) % r->n, &soff, &slen);
        split_part(n, r->n, (r->rank - s - 1 + 2 * r->n) % r->n, &roff, &rlen);
        const void *src = buf + soff;
        if (bf16) {
            bf16_pack(sbuf, buf + soff, slen);
            src = sbuf;
        }
        reducer d = {.dst = buf + roff, .src = rbuf, .bf16 = bf16};
        rc = pump(r, s == 0 ? w : NULL, src, slen * esize, rbuf, rlen * esize, 0,
                  reduce_progress, &d, err, errlen);
        if (rc) return rc;
    }
    /* this rank now holds the full sum of segment rank+1; in bf16 round it as the
     * others will receive it, so that every rank ends with the same bits */
    if (bf16) {
        size_t off, len;
        split_part(n, r->n, (r->rank + 1) % r->n, &off, &len);
        for (size_t i = 0; i < len; i++) buf[off + i] = bf16_widen(cl_to_bf16(buf[off + i]));
    }
    /* all-gather: pass the finished segments round */
    for (int s = 0; s < r->n - 1; s++) {
        size_t soff, slen, roff, rlen;
        split_part(n, r->n, (r->rank + 1 - s + r->n) % r->n, &soff, &slen);
        split_part(n, r->n, (r->rank - s + r->n) % r->n, &roff, &rlen);
        if (bf16) {
            bf16_pack(sbuf, buf + soff, slen);
            rc = pump(r, NULL, sbuf, slen * 2, rbuf, rlen * 2, 0, NULL, NULL, err, errlen);
            const uint16_t *h = rbuf;
            for (size_t i = 0; !rc && i < rlen; i++) buf[roff + i] = bf16_widen(h[i]);
        } else {
            rc = pump(r, NULL, buf + soff, slen * 4, buf + roff, rlen * 4, 0, NULL, NULL, err,
                      errlen);
        }
        if (rc) return rc;
    }
    return 0;
}

/* For short vectors: every rank passes every rank's vector round the ring (n-1 steps),
 * then sums them in rank order, so the result is the same bits everywhere. */
static int ring_allreduce_f64(cl_ring *r, double *buf, size_t n, char *err, size_t errlen) {
    int rc = header(r, OP_ALLREDUCE_F64, n, err, errlen);
    if (rc) return rc;
    double *all = tn_xmalloc((size_t)r->n * n * sizeof(double));
    memcpy(all + (size_t)r->rank * n, buf, n * sizeof(double));
    for (int s = 0; !rc && s < r->n - 1; s++) {
        int from = (r->rank - s + r->n) % r->n, to = (r->rank - s - 1 + r->n) % r->n;
        rc = pump(r, NULL, all + (size_t)from * n, n * sizeof(double), all + (size_t)to * n,
                  n * sizeof(double), 0, NULL, NULL, err, errlen);
    }
    if (!rc)
        for (size_t i = 0; i < n; i++) {
            double sum = 0;
            for (int k = 0; k < r->n; k++) sum += all[(size_t)k * n + i];
            buf[i] = sum;
        }
    free(all);
    return rc;
}

static int ring_broadcast(cl_ring *r, void *buf, size_t bytes, char *err, size_t errlen) {
    int rc = header(r, OP_BROADCAST, bytes, err, errlen);
    if (rc) return rc;
    if (r->rank == 0) return pump(r, NULL, buf, bytes, NULL, 0, 0, NULL, NULL, err, errlen);
    if (r->rank == r->n - 1)
        return pump(r, NULL, NULL, 0, buf, bytes, 0, NULL, NULL, err, errlen);
    return pump(r, NULL, buf, bytes, buf, bytes, 1, NULL, NULL, err, errlen);
}

/* ---- the shared-memory transport (shm.c), chosen over the ring ---- */

/* While a rank waits in shared memory its sockets carry nothing: end of stream or an
 * error means a neighbour exited, and data means it is at a collective over TCP. */
static int shm_alive(void *ctx, char *err, size_t errlen) {
    cl_ring *r = ctx;
    struct pollfd p[2] = {{.fd = r->next_fd, .events = POLLRDHUP},
                          {.fd = r->prev_fd, .events = POLLIN | POLLRDHUP}};
    if (poll(p, 2, 0) <= 0) return 0;
    if (p[0].revents & (POLLRDHUP | POLLERR | POLLHUP))
        return tn_error(err, errlen, TN_EPEER, "lost %s: %s", r->next_name, closed_msg);
    if (!p[1].revents) return 0;
    coll_header theirs;
    ssize_t k = recv(r->prev_fd, &theirs, sizeof theirs, MSG_PEEK | MSG_DONTWAIT);
    if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
        return tn_error(err, errlen, TN_EPEER, "lost %s: %s", r->prev_name,
                        k == 0 ? closed_msg : strerror(errno));
    return k == (ssize_t)sizeof theirs
               ? out_of_step(r->prev_name, &r->shm_header, &theirs, err, errlen)
               : 0;
}

static int shm_mismatch(void *ctx, int q, const void *mine, const void *theirs, char *err,
                        size_t errlen) {
    cl_ring *r = ctx;
    coll_header a, b;
    memcpy(&a, mine, sizeof a);
    memcpy(&b, theirs, sizeof b);
    return out_of_step(r->names[q], &a, &b, err, errlen);
}

/* What rank 0 offers along the ring once it is up. */
typedef struct shm_offer {
    char name[80];      /* the segment's file in sm_dir(); "" if there is none */
    uint64_t cookie[2];
    char why[256];      /* why there is none */
} shm_offer;

/* Picks the all-reduce's transport. Shared memory needs every rank on one host (and
 * the same sm_dir()): rank 0 creates a segment and offers it, every other rank tries
 * to map it, and a vote over the ring says whether all could. Otherwise TCP, and the
 * note says why; with CL_SHM that is an error. */
static int open_shm(cl_ring *r, int transport, char *err, size_t errlen) {
    shm_offer offer;
    memset(&offer, 0, sizeof offer);
    sm_seg *seg = NULL;
    char why[256] = "";
    const char **names = tn_xmalloc((size_t)r->n * sizeof *names);
    for (int q = 0; q < r->n; q++) names[q] = r->names[q];
    if (r->rank == 0 && transport != CL_TCP &&
        sm_create(r->n, names, offer.name, sizeof offer.name, offer.cookie, &seg, why,
                  sizeof why)) {
        offer.name[0] = '\0';
        snprintf(offer.why, sizeof offer.why, "%s", why);
    }
    int rc = ring_broadcast(r, &offer, sizeof offer, err, errlen);
    if (!rc && r->rank != 0 && transport != CL_TCP && offer.name[0])
        sm_attach(offer.name, offer.cookie, r->n, r->rank, names, &seg, why, sizeof why);
    double vote[2] = {seg != NULL, transport == CL_TCP}; /* mapped it; asked for TCP */
    if (!rc) rc = ring_allreduce_f64(r, vote, 2, err, errlen);
    if (r->rank == 0 && offer.name[0]) sm_unlink(offer.name); /* all have tried */
    free(names);
    if (!rc && vote[0] == r->n) {
        r->shm = seg;
        snprintf(r->transport_note, sizeof r->transport_note,
                 "shared memory (every replica is on this host; segment in %s)", sm_dir());
        return 0;
    }
    sm_close(seg);
    if (rc) return rc;
    if (vote[1] > 0)
        snprintf(r->transport_note, sizeof r->transport_note, "TCP (as asked)");
    else if (!offer.name[0])
        snprintf(r->transport_note, sizeof r->transport_note,
                 "TCP (%s could not create a shared-memory segment: %s)", r->names[0],
                 offer.why);
    else
        snprintf(r->transport_note, sizeof r->transport_note,
                 "TCP (%d of %d replicas could not map %s's shared-memory segment: they do "
                 "not all share one host's %s%s%s)",
                 r->n - (int)vote[0], r->n, r->names[0], sm_dir(), why[0] ? "; here: " : "",
                 why);
    if (transport == CL_SHM)
        return tn_error(err, errlen, TN_EINVAL,
                        "--allreduce_transport=shm is not possible: the all-reduce would use "
                        "%s; hint: start every replica on one host, or use "
                        "--allreduce_transport=auto",
                        r->transport_note);
    return 0;
}

/* A collective that failed leaves the ring unusable; peers waiting in shared memory
 * are told at once rather than when they next look at the sockets. */
static int failed(cl_ring *r, int rc, const char *err) {
    if (rc && r->shm) sm_abort(r->shm, err && *err ? err : "a collective failed");
    return rc;
}

int cl_allreduce(cl_ring *r, float *buf, size_t n, int precision, char *err, size_t errlen) {
    if (r->n == 1 || n == 0) return 0;
    int bf16 = precision == CL_BF16, rc;
    coll_header mine, theirs;
    wire_header w;
    make_header(r, bf16 ? OP_ALLREDUCE_BF16 : OP_ALLREDUCE, n, &mine, &theirs, &w);
    if (r->shm) {
        r->shm_header = mine;
        sm_hooks hooks = {shm_alive, shm_mismatch, r};
        rc = sm_allreduce(r->shm, buf, n, bf16, &mine, r->timeout, &hooks, err, errlen);
    } else {
        rc = ring_allreduce(r, &w, buf, n, bf16, err, errlen);
    }
    return failed(r, rc, err);
}

int cl_allreduce_f64(cl_ring *r, double *buf, size_t n, char *err, size_t errlen) {
    if (r->n == 1 || n == 0) return 0;
    return failed(r, ring_allreduce_f64(r, buf, n, err, errlen), err);
}

int cl_broadcast(cl_ring *r, void *buf, size_t bytes, char *err, size_t errlen) {
    if (r->n == 1 || bytes == 0) return 0;
    return failed(r, ring_broadcast(r, buf, bytes, err, errlen), err);
}
