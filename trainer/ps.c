/*
 * ps.c — the parameter server and its client (see ps.h).
 *
 * Server: the main thread accepts connections (poll, TICK_MS ticks to watch *stop and
 * the end of the job); each connection gets a thread with blocking I/O, which waits
 * for the next request with poll (so an idle client is fine) and reads or writes a
 * message with the socket timeouts set to cfg->timeout. One mutex guards the shard
 * (parameters, optimiser state, flags); a condition variable wakes pulls that wait
 * for the chief's INIT. Payloads are read and written outside the mutex, through the
 * connection's own buffer; only the copy and the update run under it.
 *
 * Wire: every message is a 32-byte header (msg_header), then float32 payloads of the
 * shard's size (n = hi - lo of the client's p) or an error text.
 *
 *   request  a            b            c              payload        reply a, b, c; payload
 *   HELLO    config hash  p            count<<32|i    -              initialised, version, P
 *   INIT     P            total_steps  t              opt params m [v] version
 *   PULL     -            -            -              -              version, -, n; params
 *   PUSH     -            -            -              grads          version, staleness
 *   FETCH    -            -            -              -              t, version, n; params m [v]
 *   DONE     -            -            -              -              -
 *
 * [v] travels when the header's flags carry F_HAS_V (INIT: the chief sends it; FETCH:
 * the chief wants it). opt is the chief's optimiser (OPT_FIELDS 64-bit words, see
 * opt_encode), which the ps checks against the one it was started with. A reply's
 * status is OK, FINISHED (a pull after the chief's DONE; a = version), WAITING (sent
 * every KEEPALIVE_S while a pull waits for INIT, so the client's timeout only fires on
 * a silent ps; the client skips it) or ERROR (a = text length, b = -code, then the
 * text, which names the ps). The version of a shard is its optimiser's t: the updates
 * applied since the job began.
 */
#define _GNU_SOURCE /* accept4 */
#include "trainer/ps.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"
#include "trainer/net.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ps wire format is little-endian and sent in host order"
#endif

#define PS_MAGIC 0x31504e54u      /* "TNP1" */
#define MAX_PARAMS (1ull << 31)   /* the most parameters a job may have */
#define MAX_TEXT 1024             /* the longest error text on the wire */
#define TICK_MS 200               /* how often blocked loops look at stop flags */
#define KEEPALIVE_S 0.25          /* WAITING replies while a pull waits for INIT */

enum { OP_HELLO = 1, OP_INIT, OP_PULL, OP_PUSH, OP_FETCH, OP_DONE };
enum { ST_OK = 0, ST_FINISHED, ST_WAITING, ST_ERROR };
enum { F_HAS_V = 1 };

typedef struct msg_header {
    uint32_t magic;   /* PS_MAGIC */
    uint16_t op;      /* request: OP_*; reply: ST_* */
    uint16_t flags;   /* F_HAS_V */
    uint64_t a, b, c; /* arguments, see the table above */
} msg_header;

_Static_assert(sizeof(msg_header) == 32, "the header is 32 bytes on the wire");

/* The optimiser settings the ps and the chief must share, one 64-bit word each in
 * this order (the job's length, total_steps, travels in the header): the flag that
 * sets it, and where and as what it sits in opt_config. */
enum { W_INT, W_INT64, W_DOUBLE }; /* what a word holds */
static const struct {
    const char *flag;
    size_t offset;
    int type;
} opt_fields[] = {
    {"optimizer", offsetof(opt_config, kind), W_INT},
    {"learning_rate", offsetof(opt_config, learning_rate), W_DOUBLE},
    {"momentum", offsetof(opt_config, momentum), W_DOUBLE},
    {"weight_decay", offsetof(opt_config, weight_decay), W_DOUBLE},
    {"beta1", offsetof(opt_config, beta1), W_DOUBLE},
    {"beta2", offsetof(opt_config, beta2), W_DOUBLE},
    {"epsilon", offsetof(opt_config, epsilon), W_DOUBLE},
    {"lr_schedule", offsetof(opt_config, schedule), W_INT},
    {"warmup_steps", offsetof(opt_config, warmup_steps), W_INT64},
    {"decay_rate", offsetof(opt_config, decay_rate), W_DOUBLE},
    {"decay_steps", offsetof(opt_config, decay_steps), W_INT64},
};
#define OPT_FIELDS (sizeof opt_fields / sizeof opt_fields[0])

static void opt_encode(const opt_config *o, uint64_t w[OPT_FIELDS]) {
    for (size_t i = 0; i < OPT_FIELDS; i++) {
        const char *p = (const char *)o + opt_fields[i].offset;
        int k;
        int64_t l;
        switch (opt_fields[i].type) {
        case W_INT: memcpy(&k, p, sizeof k); w[i] = (uint64_t)(int64_t)k; break;
        case W_INT64: memcpy(&l, p, sizeof l); w[i] = (uint64_t)l; break;
        default: memcpy(&w[i], p, sizeof w[i]); break;
        }
    }
}

/* Word i as the flag's value, for messages. */
static void opt_field_text(const uint64_t w[OPT_FIELDS], size_t i, char *out, size_t len) {
    double d;
    memcpy(&d, &w[i], sizeof d);
    if (opt_fields[i].type == W_DOUBLE)
        snprintf(out, len, "%g", d);
    else
        snprintf(out, len, "%lld", (long long)w[i]);
}

void ps_shard(size_t p, int n, int i, size_t *lo, size_t *hi) {
    assert(n > 0 && i >= 0 && i < n);
    /* p*i/n without overflow: p = q*n + r, so p*i/n = q*i + r*i/n with r*i < n*n */
    size_t q = p / (size_t)n, r = p % (size_t)n;
    *lo = q * (size_t)i + r * (size_t)i / (size_t)n;
    *hi = q * (size_t)(i + 1) + r * (size_t)(i + 1) / (size_t)n;
}

/* ---- sockets (both halves) ---- */

/* TCP_NODELAY (requests and replies are small and answered at once), and the
 * timeouts after which a blocked recv or send gives up with EAGAIN. */
static void tune_socket(int fd, double timeout) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {.tv_sec = (time_t)timeout};
    tv.tv_usec = (suseconds_t)((timeout - (double)tv.tv_sec) * 1e6);
    if (tv.tv_sec == 0 && tv.tv_usec == 0) tv.tv_usec = 1000; /* 0 would mean "never" */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* ---- the ps task ---- */

typedef struct ps_conn ps_conn;

typedef struct ps_server {
    const ps_server_config *cfg;
    FILE *out;                /* progress lines; may be NULL */
    const kn_backend *k;      /* the CPU backend: its buffers are host memory */
    ps_conn *conns;           /* connections not yet reaped (the main thread's alone) */
    pthread_mutex_t lock;     /* guards everything below */
    pthread_cond_t changed;   /* broadcast on INIT, DONE and shutdown */
    size_t p, lo, hi;         /* all the parameters, and this shard [lo, hi); 0 before INIT */
    float *params;            /* (hi - lo) */
    opt_state *opt;           /* over the shard; opt->t is the version */
    int initialised;          /* the chief's INIT has arrived */
    uint64_t hash;            /* the configuration hash of the client that sent it */
    int finished;             /* the chief said training is done */
    double done_at;           /* when the reply to DONE went out; 0 before */
    int shutdown;             /* ps_serve is returning: connection threads end */
    int clients;              /* connection threads still running */
} ps_server;

struct ps_conn {
    ps_server *s;
    int fd;                   /* closed by the main thread once the thread is joined */
    pthread_t thread;
    int running;              /* under s->lock: 0 once the thread is about to return */
    char peer[80];            /* "127.0.0.1:53412", for logs */
    int said_hello;
    uint64_t hash;            /* the client's configuration hash, from HELLO */
    size_t p, lo, hi;         /* the client's parameter count and its shard here */
    int64_t pulled;           /* the version at this client's last pull; -1 before */
    float *buf;               /* payloads in and out, cap floats */
    size_t cap;
    ps_conn *next;
};

/* A progress line on s->out: "ps 0: " and the message. */
static void say(ps_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(ps_server *s, const char *fmt, ...) {
    if (!s->out) return;
    char line[MAX_TEXT + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(s->out, "ps %d: %s\n", s->cfg->index, line);
    fflush(s->out);
}

static int64_t version_locked(const ps_server *s) { return s->opt ? s->opt->t : 0; }

static float *conn_buffer(ps_conn *c, size_t floats) {
    if (floats > c->cap) {
        free(c->buf);
        c->buf = tn_xmalloc(floats * sizeof(float));
        c->cap = floats;
    }
    return c->buf;
}

static int reply(ps_conn *c, int status, int flags, uint64_t a, uint64_t b, uint64_t cc) {
    msg_header h = {PS_MAGIC, (uint16_t)status, (uint16_t)flags, a, b, cc};
    return nt_send_all(c->fd, &h, sizeof h);
}

/* Sends an ERROR reply carrying code and the message (which should name the ps), and
 * logs it. Returns 0, or what the failed nt_send_all returned. */
static int reply_error(ps_conn *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int reply_error(ps_conn *c, int code, const char *fmt, ...) {
    char text[MAX_TEXT];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    size_t len = strlen(text);
    if (c->s->out) { /* the text already names this ps */
        fprintf(c->s->out, "%s (answered %s)\n", text, c->peer);
        fflush(c->s->out);
    }
    int e = reply(c, ST_ERROR, 0, len, (uint64_t)-(int64_t)code, 0);
    return e ? e : nt_send_all(c->fd, text, len);
}

/* Whether the variables this ps holds belong to the client's job: 0, or the message
 * (for reply_error) in msg. Under s->lock. */
static int check_job_locked(const ps_conn *c, char *msg, size_t len) {
    const ps_server *s = c->s;
    if (!s->initialised) return 0;
    if (s->hash != c->hash)
        return tn_error(msg, len, TN_EMISMATCH,
                        "ps %d holds the variables of a job with another configuration; "
                        "hint: give every replica the same flags",
                        s->cfg->index);
    if (s->p != c->p)
        return tn_error(msg, len, TN_EMISMATCH,
                        "ps %d holds a model of %zu parameters, the client's has %zu; hint: "
                        "give every replica the same flags",
                        s->cfg->index, s->p, c->p);
    return 0;
}

/* check_job_locked for a request (what: "fetch") that needs the variables: the chief
 * must have initialised them first. Under s->lock. */
static int check_initialised_locked(const ps_conn *c, const char *what, char *msg,
                                    size_t len) {
    if (!c->s->initialised)
        return tn_error(msg, len, TN_EPEER, "ps %d: %s before the chief initialised the "
                        "variables", c->s->cfg->index, what);
    return check_job_locked(c, msg, len);
}

/* Each handler returns 0 to go on serving the connection, or non-zero to close it
 * (a failed send or receive, or a client that broke the protocol). */

static int on_hello(ps_conn *c, const msg_header *h) {
    ps_server *s = c->s;
    const ps_server_config *cfg = s->cfg;
    uint64_t n = h->c >> 32, i = h->c & 0xffffffffu;
    if (h->b == 0 || h->b > MAX_PARAMS) {
        reply_error(c, TN_EPEER, "ps %d: a client says hello with %llu parameters (1 to %llu)",
                    cfg->index, (unsigned long long)h->b, (unsigned long long)MAX_PARAMS);
        return 1;
    }
    if (n != (uint64_t)cfg->count || i != (uint64_t)cfg->index) {
        reply_error(c, TN_EMISMATCH,
                    "ps %d (%s) is ps task %d of %d, but the client expected ps %llu of %llu; "
                    "hint: every replica must get the same TF_CONFIG cluster",
                    cfg->index, cfg->addr, cfg->index, cfg->count, (unsigned long long)i,
                    (unsigned long long)n);
        return 1;
    }
    c->hash = h->a;
    c->p = (size_t)h->b;
    ps_shard(c->p, cfg->count, cfg->index, &c->lo, &c->hi);
    char msg[MAX_TEXT];
    pthread_mutex_lock(&s->lock);
    int code = check_job_locked(c, msg, sizeof msg);
    int initialised = s->initialised;
    int64_t version = version_locked(s);
    size_t p = s->p;
    pthread_mutex_unlock(&s->lock);
    if (code) {
        reply_error(c, code, "%s", msg);
        return 1;
    }
    c->said_hello = 1;
    return reply(c, ST_OK, 0, (uint64_t)initialised, (uint64_t)version, p) != 0;
}

static int on_init(ps_conn *c, const msg_header *h) {
    ps_server *s = c->s;
    const ps_server_config *cfg = s->cfg;
    if (h->a != c->p) {
        reply_error(c, TN_EPEER, "ps %d: INIT for %llu parameters after a HELLO for %zu",
                    cfg->index, (unsigned long long)h->a, c->p);
        return 1;
    }
    size_t n = c->hi - c->lo;
    int has_v = (h->flags & F_HAS_V) != 0;
    opt_config oc = cfg->opt;
    oc.total_steps = (int64_t)h->b;
    uint64_t mine[OPT_FIELDS], chiefs[OPT_FIELDS];
    opt_encode(&oc, mine);
    /* the CPU backend's buffers are host memory: read straight into them */
    opt_state *o = opt_new(&oc, s->k, n);
    float *params = tn_xmalloc(n * sizeof(float));
    int e = nt_recv_all(c->fd, chiefs, sizeof chiefs);
    if (!e) e = nt_recv_all(c->fd, params, n * sizeof(float));
    if (!e) e = nt_recv_all(c->fd, o->m, n * sizeof(float));
    if (!e && has_v) e = nt_recv_all(c->fd, o->v ? o->v : conn_buffer(c, n), n * sizeof(float));
    const char *why = e ? nt_io_error(e) : NULL; /* before anything can change errno */
    int differs = -1;
    for (size_t i = 0; !e && differs < 0 && i < OPT_FIELDS; i++)
        if (mine[i] != chiefs[i]) differs = (int)i;
    if (e || differs >= 0 || has_v != (o->v != NULL)) {
        opt_free(o);
        free(params);
        if (e) {
            say(s, "lost %s while it sent the variables: %s", c->peer, why);
            return 1;
        }
        if (differs >= 0) { /* the whole message was read: the connection stays in step */
            char here[32], there[32];
            opt_field_text(mine, (size_t)differs, here, sizeof here);
            opt_field_text(chiefs, (size_t)differs, there, sizeof there);
            return reply_error(c, TN_EMISMATCH,
                               "ps %d was started with other optimiser flags than the chief "
                               "(--%s: %s here, %s on the chief); hint: give every replica "
                               "(the ps tasks too) the same flags",
                               cfg->index, opt_fields[differs].flag, here, there) != 0;
        }
        return reply_error(c, TN_EMISMATCH,
                           "ps %d's optimiser keeps %d state buffers, the chief's %d; hint: "
                           "give every replica (the ps tasks too) the same flags",
                           cfg->index, has_v ? 1 : 2, has_v ? 2 : 1) != 0;
    }
    o->t = (int64_t)h->c;

    pthread_mutex_lock(&s->lock);
    int resized = !s->initialised || s->p != c->p;
    float *old_params = s->params;
    opt_state *old_opt = s->opt;
    s->params = params;
    s->opt = o;
    s->p = c->p;
    s->lo = c->lo;
    s->hi = c->hi;
    s->hash = c->hash;
    s->initialised = 1;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    free(old_params);
    opt_free(old_opt);

    if (resized) say(s, "serving parameters [%zu, %zu) of %zu", c->lo, c->hi, c->p);
    say(s, "initialised by the chief at version %lld", (long long)o->t);
    return reply(c, ST_OK, 0, (uint64_t)o->t, 0, 0) != 0;
}

/* Absolute CLOCK_MONOTONIC time `seconds` from now, for pthread_cond_timedwait. */
static struct timespec after(double seconds) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double ns = (double)ts.tv_nsec + seconds * 1e9;
    ts.tv_sec += (time_t)(ns / 1e9);
    ts.tv_nsec = (long)(ns - (double)(time_t)(ns / 1e9) * 1e9);
    return ts;
}

static int on_pull(ps_conn *c) {
    ps_server *s = c->s;
    double deadline = nt_now() + s->cfg->timeout, keepalive = nt_now() + KEEPALIVE_S;
    char msg[MAX_TEXT];
    pthread_mutex_lock(&s->lock);
    while (!s->initialised && !s->finished && !s->shutdown) {
        double t = nt_now();
        if (t >= deadline) {
            pthread_mutex_unlock(&s->lock);
            return reply_error(c, TN_EPEER,
                               "ps %d: the variables were not initialised within %g s: is "
                               "the chief running?",
                               s->cfg->index, s->cfg->timeout) != 0;
        }
        if (t >= keepalive) {
            pthread_mutex_unlock(&s->lock);
            if (reply(c, ST_WAITING, 0, 0, 0, 0)) return 1;
            keepalive = nt_now() + KEEPALIVE_S;
            pthread_mutex_lock(&s->lock);
            continue;
        }
        struct timespec ts = after((keepalive < deadline ? keepalive : deadline) - t);
        pthread_cond_timedwait(&s->changed, &s->lock, &ts);
    }
    if (s->shutdown) {
        pthread_mutex_unlock(&s->lock);
        return 1;
    }
    int64_t version = version_locked(s);
    if (s->finished) {
        pthread_mutex_unlock(&s->lock);
        return reply(c, ST_FINISHED, 0, (uint64_t)version, 0, 0) != 0;
    }
    int code = check_job_locked(c, msg, sizeof msg);
    size_t n = s->hi - s->lo;
    if (!code) {
        memcpy(conn_buffer(c, n), s->params, n * sizeof(float));
        c->pulled = version;
    }
    pthread_mutex_unlock(&s->lock);
    if (code) return reply_error(c, code, "%s", msg) != 0;
    int e = reply(c, ST_OK, 0, (uint64_t)version, 0, n);
    return (e ? e : nt_send_all(c->fd, c->buf, n * sizeof(float))) != 0;
}

static int on_push(ps_conn *c) {
    ps_server *s = c->s;
    size_t n = c->hi - c->lo;
    float *grads = conn_buffer(c, n);
    int e = nt_recv_all(c->fd, grads, n * sizeof(float));
    if (e) {
        say(s, "lost %s while it sent gradients: %s", c->peer, nt_io_error(e));
        return 1;
    }
    char msg[MAX_TEXT];
    pthread_mutex_lock(&s->lock);
    int code = check_initialised_locked(c, "gradients pushed", msg, sizeof msg);
    int64_t before = version_locked(s), staleness = 0;
    if (!code) {
        opt_step(s->opt, s->params, grads);
        if (c->pulled >= 0 && before > c->pulled) staleness = before - c->pulled;
    }
    pthread_mutex_unlock(&s->lock);
    if (code) return reply_error(c, code, "%s", msg) != 0;
    return reply(c, ST_OK, 0, (uint64_t)(before + 1), (uint64_t)staleness, 0) != 0;
}

static int on_fetch(ps_conn *c, const msg_header *h) {
    ps_server *s = c->s;
    int want_v = (h->flags & F_HAS_V) != 0;
    char msg[MAX_TEXT];
    pthread_mutex_lock(&s->lock);
    int code = check_initialised_locked(c, "fetch", msg, sizeof msg);
    if (!code && want_v != (s->opt->v != NULL))
        code = tn_error(msg, sizeof msg, TN_EMISMATCH,
                        "ps %d's optimiser keeps %d state buffers, the chief's %d; hint: give "
                        "every replica (the ps tasks too) the same flags",
                        s->cfg->index, want_v ? 1 : 2, want_v ? 2 : 1);
    size_t n = s->hi - s->lo;
    int64_t t = 0;
    if (!code) {
        float *buf = conn_buffer(c, n * (want_v ? 3 : 2));
        memcpy(buf, s->params, n * sizeof(float));
        memcpy(buf + n, s->opt->m, n * sizeof(float));
        if (want_v) memcpy(buf + 2 * n, s->opt->v, n * sizeof(float));
        t = s->opt->t;
    }
    pthread_mutex_unlock(&s->lock);
    if (code) return reply_error(c, code, "%s", msg) != 0;
    int e = reply(c, ST_OK, want_v ? F_HAS_V : 0, (uint64_t)t, (uint64_t)t, n);
    return (e ? e : nt_send_all(c->fd, c->buf, n * (want_v ? 3 : 2) * sizeof(float))) != 0;
}

static int on_done(ps_conn *c) {
    ps_server *s = c->s;
    pthread_mutex_lock(&s->lock);
    s->finished = 1;
    int others = s->clients - 1;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    say(s, "training finished; %d client%s still connected", others, others == 1 ? "" : "s");
    int e = reply(c, ST_OK, 0, 0, 0, 0);
    pthread_mutex_lock(&s->lock);
    s->done_at = nt_now(); /* linger from here: the chief has its answer */
    pthread_mutex_unlock(&s->lock);
    return e != 0;
}

/* Waits until the client sends something: 1, or 0 when the server shuts down or the
 * connection failed. An idle client is fine for as long as it likes. */
static int wait_for_request(ps_conn *c) {
    for (;;) {
        pthread_mutex_lock(&c->s->lock);
        int stop = c->s->shutdown;
        pthread_mutex_unlock(&c->s->lock);
        if (stop) return 0;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int k = poll(&p, 1, TICK_MS);
        if (k < 0 && errno != EINTR) return 0;
        if (k > 0) return 1; /* data, end of stream or an error: recv tells which */
    }
}

static void *conn_main(void *arg) {
    ps_conn *c = arg;
    ps_server *s = c->s;
    while (wait_for_request(c)) {
        msg_header h;
        int e = nt_recv_all(c->fd, &h, sizeof h);
        if (e) {
            if (e != TN_EPEER) say(s, "lost %s: %s", c->peer, nt_io_error(e));
            break; /* TN_EPEER: the client has gone */
        }
        if (h.magic != PS_MAGIC) {
            say(s, "closed a connection from %s that does not speak the ps protocol",
                c->peer);
            break;
        }
        if (h.op != OP_HELLO && !c->said_hello) {
            reply_error(c, TN_EPEER, "ps %d: a request before HELLO", s->cfg->index);
            break;
        }
        int stop;
        switch (h.op) {
        case OP_HELLO: stop = on_hello(c, &h); break;
        case OP_INIT: stop = on_init(c, &h); break;
        case OP_PULL: stop = on_pull(c); break;
        case OP_PUSH: stop = on_push(c); break;
        case OP_FETCH: stop = on_fetch(c, &h); break;
        case OP_DONE: stop = on_done(c); break;
        default:
            reply_error(c, TN_EPEER, "ps %d: unknown request %u", s->cfg->index, h.op);
            stop = 1;
        }
        if (stop) break;
    }
    shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_lock(&s->lock);
    c->running = 0;
    s->clients--;
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void conn_free(ps_conn *c) {
    close(c->fd);
    free(c->buf);
    free(c);
}

/* Joins and frees the connections whose thread has ended (all of them with all). */
static void reap(ps_server *s, int all) {
    ps_conn **pp = &s->conns;
    while (*pp) {
        ps_conn *c = *pp;
        pthread_mutex_lock(&s->lock);
        int running = c->running;
        pthread_mutex_unlock(&s->lock);
        if (running && !all) {
            pp = &c->next;
            continue;
        }
        if (running) shutdown(c->fd, SHUT_RDWR); /* wakes a blocked recv or send */
        pthread_join(c->thread, NULL);
        *pp = c->next;
        conn_free(c);
    }
}

static void accept_one(ps_server *s, int lfd) {
    struct sockaddr_storage sa;
    socklen_t salen = sizeof sa;
    int fd = accept4(lfd, (struct sockaddr *)&sa, &salen, SOCK_CLOEXEC);
    if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) usleep(TICK_MS * 1000); /* no busy loop */
        return;
    }
    ps_conn *c = tn_xcalloc(1, sizeof *c);
    c->s = s;
    c->fd = fd;
    c->pulled = -1;
    c->running = 1;
    char host[64] = "?", port[16] = "?";
    getnameinfo((struct sockaddr *)&sa, salen, host, sizeof host, port, sizeof port,
                NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(c->peer, sizeof c->peer, "%s:%s", host, port);
    tune_socket(fd, s->cfg->timeout);
    pthread_mutex_lock(&s->lock);
    s->clients++;
    pthread_mutex_unlock(&s->lock);
    int rc = pthread_create(&c->thread, NULL, conn_main, c);
    if (rc) {
        say(s, "cannot serve %s: pthread_create: %s", c->peer, strerror(rc));
        pthread_mutex_lock(&s->lock);
        s->clients--;
        pthread_mutex_unlock(&s->lock);
        conn_free(c);
        return;
    }
    c->next = s->conns;
    s->conns = c;
}

int ps_serve(const ps_server_config *cfg, volatile const int *stop, FILE *out, char *err,
             size_t errlen) {
    if (cfg->count < 1 || cfg->index < 0 || cfg->index >= cfg->count)
        return tn_error(err, errlen, TN_EINVAL, "ps task %d of %d is out of range", cfg->index,
                        cfg->count);
    if (!(cfg->timeout > 0))
        return tn_error(err, errlen, TN_EINVAL, "the ps timeout must be > 0, got %g",
                        cfg->timeout);
    int lfd = -1;
    int rc = nt_listen(cfg->addr, 64, "this ps task's TF_CONFIG address", &lfd, err, errlen);
    if (rc) return rc;

    ps_server s = {.cfg = cfg, .out = out, .k = kn_cpu()};
    assert(s.k->host_memory);
    s.k->set_threads(1); /* one update at a time per shard, and no idle BLAS threads */
    pthread_mutex_init(&s.lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s.changed, &ca);
    pthread_condattr_destroy(&ca);
    say(&s, "listening on %s (task %d of %d)", cfg->addr, cfg->index, cfg->count);

    for (;;) {
        if (stop && *stop) {
            say(&s, "stopped");
            break;
        }
        reap(&s, 0);
        pthread_mutex_lock(&s.lock);
        int finished = s.finished, clients = s.clients;
        double done_at = s.done_at;
        pthread_mutex_unlock(&s.lock);
        if (finished && clients == 0) {
            say(&s, "every client has gone; exiting");
            break;
        }
        if (done_at > 0 && nt_now() - done_at >= cfg->linger) {
            say(&s, "%d client%s still connected %g s after training finished; exiting "
                    "anyway",
                clients, clients == 1 ? "" : "s", cfg->linger);
            break;
        }
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        int k = poll(&p, 1, TICK_MS);
        if (k > 0) accept_one(&s, lfd);
    }

    close(lfd); /* a client reconnecting now is refused, not left waiting */
    pthread_mutex_lock(&s.lock);
    s.shutdown = 1;
    pthread_cond_broadcast(&s.changed);
    pthread_mutex_unlock(&s.lock);
    reap(&s, 1);
    free(s.params);
    opt_free(s.opt);
    pthread_cond_destroy(&s.changed);
    pthread_mutex_destroy(&s.lock);
    return 0;
}

/* ---- the client ---- */

typedef struct ps_link {
    int fd;           /* -1 until connected */
    char name[300];   /* "ps 1 (localhost:4242)", for messages */
    size_t lo, hi;    /* its shard of the parameters */
} ps_link;

struct ps_client {
    int n;            /* ps tasks */
    size_t p;         /* parameters */
    double timeout;   /* seconds a ps may stay silent */
    ps_link *ps;      /* (n) */
    float *scratch;   /* for payloads nobody asked for */
    int broken;       /* a connection was lost mid-message: every call now fails */
};

/* Connects to addr, retrying refused connections until deadline; each attempt is
 * itself bounded by the deadline (a host that drops packets does not hang us). */
/* A send or receive on l failed (e as nt_send_all / nt_recv_all return it, errno as
 * they left it): the connection is out of step now, so the client is unusable. */
static int lost(ps_client *c, const ps_link *l, int e, char *err, size_t errlen) {
    int sys = e == TN_EIO ? errno : 0;
    c->broken = 1;
    if (sys == EAGAIN || sys == EWOULDBLOCK)
        return tn_error(err, errlen, TN_EPEER,
                        "%s did not answer for %g s (hung, stopped or too slow); hint: raise "
                        "--peer_timeout if an update can take longer",
                        l->name, c->timeout);
    if (e == TN_EPEER || sys == ECONNRESET || sys == EPIPE)
        return tn_error(err, errlen, TN_EPEER,
                        "lost %s: the connection closed (that ps task exited: it crashed or "
                        "was stopped)",
                        l->name);
    return tn_error(err, errlen, TN_EPEER, "lost %s: %s", l->name, strerror(sys));
}

static int broke_protocol(ps_client *c, const ps_link *l, const char *what, char *err,
                          size_t errlen) {
    c->broken = 1;
    return tn_error(err, errlen, TN_EPEER,
                    "%s broke the ps protocol (%s); hint: is it a ps task of this job, "
                    "running the same trainer version?",
                    l->name, what);
}

/* Sends a request header, pre (prelen bytes, if not NULL) and up to three payloads of
 * the link's shard (NULL: none; each is the whole p-float array, of which the shard
 * is sent). */
static int request(ps_client *c, ps_link *l, int op, int flags, uint64_t a, uint64_t b,
                   uint64_t cc, const void *pre, size_t prelen, const float *x, const float *y,
                   const float *z, char *err, size_t errlen) {
    msg_header h = {PS_MAGIC, (uint16_t)op, (uint16_t)flags, a, b, cc};
    size_t bytes = (l->hi - l->lo) * sizeof(float);
    int e = nt_send_all(l->fd, &h, sizeof h);
    if (!e && pre) e = nt_send_all(l->fd, pre, prelen);
    if (!e && x) e = nt_send_all(l->fd, x + l->lo, bytes);
    if (!e && y) e = nt_send_all(l->fd, y + l->lo, bytes);
    if (!e && z) e = nt_send_all(l->fd, z + l->lo, bytes);
    return e ? lost(c, l, e, err, errlen) : 0;
}

/* Reads l's reply header, skipping WAITING. 0 with h holding an OK or FINISHED reply;
 * the ps's own message and code for an ERROR reply (the connection stays usable);
 * TN_EPEER for a lost connection. */
static int read_reply(ps_client *c, ps_link *l, msg_header *h, char *err, size_t errlen) {
    for (;;) {
        int e = nt_recv_all(l->fd, h, sizeof *h);
        if (e) return lost(c, l, e, err, errlen);
        if (h->magic != PS_MAGIC) return broke_protocol(c, l, "bad magic", err, errlen);
        if (h->op == ST_WAITING) continue;
        if (h->op == ST_OK || h->op == ST_FINISHED) return 0;
        if (h->op != ST_ERROR || h->a > MAX_TEXT)
            return broke_protocol(c, l, "bad reply", err, errlen);
        char text[MAX_TEXT + 1];
        e = nt_recv_all(l->fd, text, (size_t)h->a);
        if (e) return lost(c, l, e, err, errlen);
        text[h->a] = '\0';
        int code = h->b >= 1 && h->b <= 99 ? -(int)h->b : TN_EPEER;
        return tn_error(err, errlen, code, "%s", text);
    }
}

/* Reads a payload of the link's shard into x + lo (x NULL: thrown away), after checking
 * the count the ps announced. */
static int read_shard(ps_client *c, ps_link *l, const msg_header *h, float *x, char *err,
                      size_t errlen) {
    size_t n = l->hi - l->lo;
    if (h->c != n) return broke_protocol(c, l, "a shard of another size", err, errlen);
    if (!x && !c->scratch) /* big enough for any shard */
        c->scratch = tn_xmalloc((c->p / (size_t)c->n + 1) * sizeof(float));
    int e = nt_recv_all(l->fd, x ? x + l->lo : c->scratch, n * sizeof(float));
    return e ? lost(c, l, e, err, errlen) : 0;
}

/* Keeps the first error of a round: later ones write no message. */
#define FIRST_ERR (rc ? NULL : err), (rc ? 0 : errlen)

static int check_usable(const ps_client *c, char *err, size_t errlen) {
    if (!c->broken) return 0;
    return tn_error(err, errlen, TN_EPEER,
                    "the connections to the ps tasks are unusable after an earlier error");
}

int ps_client_open(const tf_config *cluster, size_t p, double timeout, uint64_t config_hash,
                   ps_client **out, int *initialised, char *err, size_t errlen) {
    const tf_list *l = &cluster->cluster[TF_PS];
    if (l->n == 0)
        return tn_error(err, errlen, TN_EINVAL,
                        "the parameter-server strategy needs ps tasks in TF_CONFIG's cluster");
    if (p == 0 || p > MAX_PARAMS)
        return tn_error(err, errlen, TN_EINVAL, "a model of %zu parameters (1 to %llu)", p,
                        (unsigned long long)MAX_PARAMS);
    ps_client *c = tn_xcalloc(1, sizeof *c);
    c->n = (int)l->n;
    c->p = p;
    c->timeout = timeout > 0 ? timeout : 60;
    c->ps = tn_xcalloc(l->n, sizeof *c->ps);
    for (int i = 0; i < c->n; i++) {
        c->ps[i].fd = -1;
        snprintf(c->ps[i].name, sizeof c->ps[i].name, "ps %d (%s)", i, l->addr[i]);
        ps_shard(p, c->n, i, &c->ps[i].lo, &c->ps[i].hi);
    }
    double deadline = nt_now() + c->timeout;
    int rc = 0, all = 1;
    for (int i = 0; !rc && i < c->n; i++) {
        char who[32];
        snprintf(who, sizeof who, "ps %d", i);
        rc = nt_connect(l->addr[i], who, deadline, c->timeout, &c->ps[i].fd, err, errlen);
        if (!rc) tune_socket(c->ps[i].fd, c->timeout);
    }
    uint64_t where = (uint64_t)c->n << 32;
    for (int i = 0; !rc && i < c->n; i++)
        rc = request(c, &c->ps[i], OP_HELLO, 0, config_hash, p, where | (uint64_t)i, NULL, 0,
                     NULL, NULL, NULL, err, errlen);
    for (int i = 0; !rc && i < c->n; i++) {
        msg_header h;
        rc = read_reply(c, &c->ps[i], &h, err, errlen);
        if (!rc && h.op != ST_OK) rc = broke_protocol(c, &c->ps[i], "bad hello", err, errlen);
        all &= !rc && h.a != 0;
    }
    if (rc) {
        ps_client_close(c);
        return rc;
    }
    if (initialised) *initialised = all;
    *out = c;
    return 0;
}

void ps_client_close(ps_client *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++)
        if (c->ps[i].fd >= 0) close(c->ps[i].fd);
    free(c->ps);
    free(c->scratch);
    free(c);
}

int ps_client_init(ps_client *c, const float *params, const float *m, const float *v,
                   int64_t t, const opt_config *opt, char *err, size_t errlen) {
    int rc = check_usable(c, err, errlen);
    uint64_t w[OPT_FIELDS];
    opt_encode(opt, w);
    for (int i = 0; !rc && i < c->n; i++)
        rc = request(c, &c->ps[i], OP_INIT, v ? F_HAS_V : 0, c->p, (uint64_t)opt->total_steps,
                     (uint64_t)t, w, sizeof w, params, m, v, err, errlen);
    /* every reply is read, so that an error from one ps leaves the others in step */
    for (int i = 0; !c->broken && i < c->n; i++) {
        msg_header h;
        int r = read_reply(c, &c->ps[i], &h, FIRST_ERR);
        if (!rc) rc = r;
    }
    return rc;
}

int ps_client_pull(ps_client *c, float *params, int64_t *version, char *err, size_t errlen) {
    int rc = check_usable(c, err, errlen), finished = 0;
    for (int i = 0; !rc && i < c->n; i++)
        rc = request(c, &c->ps[i], OP_PULL, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL, err, errlen);
    for (int i = 0; !c->broken && i < c->n; i++) {
        msg_header h;
        int r = read_reply(c, &c->ps[i], &h, FIRST_ERR);
        if (!r && h.op == ST_FINISHED)
            finished = 1;
        else if (!r)
            r = read_shard(c, &c->ps[i], &h, params, FIRST_ERR);
        if (!r && i == 0 && version) *version = (int64_t)h.a;
        if (!rc) rc = r;
    }
    return rc ? rc : finished ? PS_FINISHED : 0;
}

int ps_client_push(ps_client *c, const float *grads, int64_t *staleness, char *err,
                   size_t errlen) {
    int rc = check_usable(c, err, errlen);
    int64_t worst = 0;
    for (int i = 0; !rc && i < c->n; i++)
        rc = request(c, &c->ps[i], OP_PUSH, 0, 0, 0, 0, NULL, 0, grads, NULL, NULL, err, errlen);
    for (int i = 0; !c->broken && i < c->n; i++) {
        msg_header h;
        int r = read_reply(c, &c->ps[i], &h, FIRST_ERR);
        /* the shards see the same pushes, so their staleness differs only when pushes
         * interleave differently on two ps tasks: report the worst */
        if (!r && (int64_t)h.b > worst) worst = (int64_t)h.b;
        if (!rc) rc = r;
    }
    if (!rc && staleness) *staleness = worst;
    return rc;
}

int ps_client_fetch(ps_client *c, float *params, float *m, float *v, int64_t *t,
                    int64_t *version, char *err, size_t errlen) {
    int rc = check_usable(c, err, errlen);
    for (int i = 0; !rc && i < c->n; i++)
        rc = request(c, &c->ps[i], OP_FETCH, v ? F_HAS_V : 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL,
                     err, errlen);
    for (int i = 0; !c->broken && i < c->n; i++) {
        msg_header h;
        int r = read_reply(c, &c->ps[i], &h, FIRST_ERR);
        if (!r && h.op != ST_OK) r = broke_protocol(c, &c->ps[i], "bad fetch", FIRST_ERR);
        if (!r && (h.flags & F_HAS_V) != (v ? F_HAS_V : 0))
            r = broke_protocol(c, &c->ps[i], "a fetch without the buffers asked for",
                               FIRST_ERR);
        if (!r) r = read_shard(c, &c->ps[i], &h, params, FIRST_ERR);
        if (!r) r = read_shard(c, &c->ps[i], &h, m, FIRST_ERR);
        if (!r && v) r = read_shard(c, &c->ps[i], &h, v, FIRST_ERR);
        if (!r && i == 0) {
            if (t) *t = (int64_t)h.a;
            if (version) *version = (int64_t)h.b;
        }
        if (!rc) rc = r;
    }
    return rc;
}

int ps_client_done(ps_client *c, char *err, size_t errlen) {
    int rc = check_usable(c, err, errlen);
    for (int i = 0; !rc && i < c->n; i++)
        rc = request(c, &c->ps[i], OP_DONE, 0, 0, 0, 0, NULL, 0, NULL, NULL, NULL, err, errlen);
    for (int i = 0; !c->broken && i < c->n; i++) {
        msg_header h;
        int r = read_reply(c, &c->ps[i], &h, FIRST_ERR);
        if (!rc) rc = r;
    }
    return rc;
}
