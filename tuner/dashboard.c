/*
 * dashboard.c — the dashboard's HTTP server on evhttp (see dashboard.h; the design and
 * the contract are docs/dashboard.md).
 *
 * Set-up follows libevent's http sample: one event base, one evhttp with limits, a
 * listener we bind ourselves (close-on-exec, so trials never inherit it), one generic
 * callback that routes (api_route_parse) and ends every request in exactly one reply.
 * What evhttp 2.1 lacks is built around it:
 *  - a connection cap: evhttp_set_bevcb tells us of each new connection; an event made
 *    active there runs right after the accept, finds the connection behind the new
 *    bufferevent (its callback argument), and either adopts it (a close callback keeps
 *    the count) or answers 503 and closes it at once (a refused connection is never
 *    counted);
 *  - a deadline for each request: evhttp 2.1's only timeouts are the bufferevent's idle
 *    ones, which every byte received restarts, so a client sending a header line every
 *    few seconds (Slowloris) would hold its connection for ever. Each adopted connection
 *    has a timer, armed when it opens and again when a reply is done (the connection
 *    then waits for its next request), stopped when the request is complete (on_request:
 *    line, headers and body read); when it fires the connection is closed. An event
 *    stream, once started, has no deadline;
 *  - a gate before evhttp's parser: evhttp 2.1 reads a request's body before the server
 *    sees the request and answers bad bodies itself, wrongly (a Content-Length over the
 *    limit is read and dropped before its 413, so 10^22 never gets one; a chunk size that
 *    is not a number is 413). While a request is awaited, the connection's input buffer
 *    is frozen at its front, so evhttp reads nothing; an evbuffer callback scans what
 *    arrives (api_frame_scan) and thaws the buffer once the request is whole, or answers
 *    400/413/431 itself at once and drops what the client still sends;
 *  - Server-Sent Events: a chunked reply per client, fed by one 250 ms poll of the store
 *    for every study that has clients (api_watch_poll, api_sse_changes), with a comment
 *    every 15 s to keep proxies and dead peers honest. A client that goes away is freed
 *    from the connection's close callback (or the request's completion callback,
 *    whichever evhttp calls), never twice.
 * The page's files come from the table tuner/embed.cmake builds from tuner/web/; a path
 * is served only if it names one of them exactly.
 */
#include "tuner/dashboard.h"

#include <sys/queue.h> /* before libevent's headers, which define TAILQ_ only if absent */

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h> /* the request's HTTP version: 2.1 has no accessor */
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/rng.h"
#include "common/status.h"
#include "tuner/api.h"
#include "tuner/store.h"

#define DASH_MAX_HEADERS 8192       /* bytes of request line and headers */
#define DASH_MAX_BODY 4096          /* bytes of request body */
#define DASH_MAX_HELD (DASH_MAX_HEADERS + 2 * DASH_MAX_BODY + 1024)
                                    /* the most the gate holds back from evhttp, and so
                                       evhttp's limit on a request's headers: they cannot
                                       reach it (the gate answers 431 above 8 KiB); a body
                                       with its chunk-size lines is at most 8 KiB */
#define DASH_MAX_AHEAD (4 * DASH_MAX_HELD)
                                    /* the most a client may send while its request is
                                       answered (pipelined requests, up to 80 KiB): evhttp
                                       reads on during a reply, to see a close, and keeps
                                       what comes; more closes the connection */
#define DASH_MAX_CONNS 64           /* open connections */
#define DASH_MAX_CLIENTS 32         /* event streams */
#define DASH_TIMEOUT_S 30           /* evhttp's idle timeouts: a connection that neither
                                       sends nor takes a byte this long is closed (a
                                       client that stops reading a reply) */
#define DASH_REQUEST_S 10           /* a request (line, headers, body) must arrive whole
                                       within this long of the connection's opening or
                                       of its previous reply; TUNER_DASHBOARD_REQUEST_TIMEOUT
                                       (seconds, 0.1 to 3600) overrides it */
#define DASH_POLL_MS 250            /* how often the store is looked at for the streams */
#define DASH_HEARTBEAT_S 15         /* a comment to every stream this often */
#define DASH_BATCH 1000             /* trial changes and measurements per stream per poll */
#define DASH_MAX_BACKLOG (4 << 20)  /* a stream this far behind is dropped */

/* The Content-Security-Policy of every response. */
static const char csp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/* The headers every response carries whatever it is: evhttp's replies (common_headers)
 * and those written to the socket directly (send_raw) take them from here, so neither
 * can miss one. Content-Type and Cache-Control depend on the reply and come apart. */
static const struct {
    const char *name, *value;
} security_headers[] = {
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"X-Frame-Options", "DENY"},
    {"Content-Security-Policy", csp},
};

/* The Content-Type of JSON replies (the API's, errors). */
static const char json_ctype[] = "application/json; charset=utf-8";

typedef struct dash_client dash_client;

/* One connection, adopted (counted) right after it was accepted. */
typedef struct dash_conn {
    dash_server *d;
    struct evhttp_connection *evcon;
    struct event *deadline;          /* closes it when a request is not whole in time;
                                        pending only while a request is awaited */
    api_frame frame;                 /* the request awaited or being answered, scanned;
                                        its state is the gate's: MORE holds the request
                                        back from evhttp, WHOLE let it through (until its
                                        reply is done), REFUSED answered it and drops
                                        what comes */
    size_t scanned;                  /* bytes of the input buffer frame has seen */
    int continued;                   /* "100 Continue" sent for it */
    int target_checked;              /* its target, by gate_check_target */
    struct evbuffer_cb_entry *input_cb; /* on_input, on the connection's input buffer */
    dash_client *client;             /* the event stream on it, or NULL */
    struct dash_conn *prev, *next;   /* d->conns */
} dash_conn;

/* A study followed by event streams. */
typedef struct dash_watch {
    api_watch w;
    int nclients;                    /* streams following it */
    int gone;                        /* the study was not found at the last poll */
    struct dash_watch *next;         /* d->watches */
} dash_watch;

/* One event stream. */
struct dash_client {
    dash_server *d;
    dash_conn *conn;                 /* its connection */
    struct evhttp_request *req;      /* the request being answered */
    dash_watch *watch;               /* the study */
    api_cursor cur;                  /* what it has been sent */
    uint64_t version;                /* the watch's version its last study event showed */
    dash_client *prev, *next;        /* d->clients */
};

struct dash_server {
    struct event_base *base;         /* the server's own */
    struct evhttp *http;
    st_store *st;                    /* its own connection to the store */
    int public_access;               /* every /api/ request needs the token */
    struct timeval request_tv;       /* the request deadline (DASH_REQUEST_S) */
    char host[64];                   /* the address bound, as in URLs ("127.0.0.1", "[::1]") */
    int port;                        /* the port bound */
    char token[33];                  /* 32 hex digits */
    char url[160];                   /* http://HOST:PORT/#token=TOKEN */
    char *token_path;                /* the token file written, or NULL */
    int token_fd;                    /* it, open and flock'ed while we serve; or -1 */
    int stop_on_hangup;              /* dash_run stops on SIGHUP too (not under nohup) */
    pthread_t thread;                /* dash_start's */
    int started;                     /* the thread runs */
    int stop_fd;                     /* an eventfd: written by dash_stop */
    struct event *stop_ev, *poll_ev, *beat_ev, *adopt_ev, *signal_ev[3];
    struct bufferevent **pending;    /* new connections' bufferevents, to adopt */
    size_t npending, cappending;
    dash_conn *conns;                /* adopted connections */
    int nconns;
    dash_client *clients;            /* event streams */
    int nclients;
    dash_watch *watches;             /* studies the streams follow */
};

static double wall_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------------------------
 * Addresses
 * --------------------------------------------------------------------------------- */

/* A listen address, parsed. */
typedef struct dash_addr {
    struct sockaddr_storage sa;      /* the address to bind */
    socklen_t salen;
    char host[64];                   /* for URLs: "127.0.0.1", "[::1]" */
    char bare[64];                   /* without brackets */
    int port;                        /* 0: any free port */
    int loopback;                    /* 127.0.0.0/8 or ::1 */
} dash_addr;

static int parse_address(const char *text, dash_addr *a, int serve, char *err, size_t errlen) {
    const char *hint =
        serve ? "\nhint: write ADDR:PORT: 127.0.0.1:8470, localhost:8470, [::1]:8470"
              : "\nhint: write ADDR:PORT: 127.0.0.1:8470, localhost:8470, [::1]:8470, or off";
    memset(a, 0, sizeof *a);
    /* an IPv6 address is bracketed, its port after the ']' ([::1]:8470) */
    const char *close = text[0] == '[' ? strchr(text, ']') : NULL;
    if (text[0] == '[' && !close)
        return tn_error(err, errlen, TN_EINVAL,
                        "'%s' is not an address: the IPv6 address needs its closing ']'%s",
                        text, hint);
    if (close && close[1] != ':')
        return tn_error(err, errlen, TN_EINVAL, "'%s' is not an address: the port is missing "
                        "after ']'%s", text, hint);
    if (!close && strchr(text, ':') != strrchr(text, ':'))
        return tn_error(err, errlen, TN_EINVAL,
                        "'%s' is not an address: an IPv6 address goes in brackets, as in "
                        "[::1]:8470%s",
                        text, hint);
    const char *colon = close ? close + 1 : strrchr(text, ':');
    if (!colon)
        return tn_error(err, errlen, TN_EINVAL, "'%s' is not an address: the port is missing%s",
                        text, hint);
    int64_t port;
    if (api_parse_int(colon + 1, 0, 65535, &port) != 0)
        return tn_error(err, errlen, TN_EINVAL, "'%s': the port must be a number from 0 to 65535%s",
                        text, hint);
    a->port = (int)port;
    size_t hlen = (size_t)(colon - text);
    char host[64];
    if (hlen >= sizeof host)
        return tn_error(err, errlen, TN_EINVAL, "'%s' is not an address%s", text, hint);
    memcpy(host, text, hlen);
    host[hlen] = '\0';
    if (!host[0] || !strcasecmp(host, "localhost")) snprintf(host, sizeof host, "127.0.0.1");
    struct sockaddr_in *v4 = (struct sockaddr_in *)&a->sa;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&a->sa;
    if (host[0] == '[' && hlen >= 2 && host[strlen(host) - 1] == ']') {
        host[strlen(host) - 1] = '\0';
        if (inet_pton(AF_INET6, host + 1, &v6->sin6_addr) != 1)
            return tn_error(err, errlen, TN_EINVAL, "'%s' is not an IPv6 address%s", host + 1, hint);
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)a->port);
        a->salen = sizeof *v6;
        a->loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
        snprintf(a->bare, sizeof a->bare, "%s", host + 1);
        snprintf(a->host, sizeof a->host, "[%.60s]", host + 1);
    } else if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)a->port);
        a->salen = sizeof *v4;
        a->loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
        snprintf(a->bare, sizeof a->bare, "%s", host);
        snprintf(a->host, sizeof a->host, "%s", host);
    } else {
        return tn_error(err, errlen, TN_EINVAL,
                        "'%s' is not an IP address (names other than localhost are not "
                        "looked up)%s",
                        host, hint);
    }
    return 0;
}

int dash_check_address(const char *listen, int public_access, int serve, char *err,
                       size_t errlen) {
    dash_addr a;
    int rc = parse_address(listen, &a, serve, err, errlen);
    if (rc) return rc;
    if (!a.loopback && !public_access)
        return tn_error(err, errlen, TN_EINVAL,
                        "%s is not a loopback address: the dashboard would be open "
                        "to the network\nhint: keep 127.0.0.1, or allow it with %s; every "
                        "API request then needs the token",
                        a.bare, serve ? "--public" : "--dashboard-public");
    return 0;
}

/* ---------------------------------------------------------------------------------
 * Replies
 * --------------------------------------------------------------------------------- */

static const char *reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Internal Server Error";
    }
}

/* The headers every response carries. */
static void common_headers(struct evhttp_request *req, const char *type, int no_store) {
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    if (type) evhttp_add_header(h, "Content-Type", type);
    for (size_t i = 0; i < sizeof security_headers / sizeof security_headers[0]; i++)
        evhttp_add_header(h, security_headers[i].name, security_headers[i].value);
    evhttp_add_header(h, "Cache-Control", no_store ? "no-store" : "no-cache");
}

/* Writes a JSON reply straight to a connection's socket, for the replies made outside
 * evhttp (the gate's refusals, the connection cap's 503): the headers evhttp's JSON
 * replies get (common_headers), then Connection: close, and no body for a HEAD request.
 * Best effort, without blocking: the callers close the connection either way, and say
 * why a reply of a few hundred bytes fits. */
static void send_raw(int sock, const api_reply *r, int head) {
    tn_buf b = {0};
    tn_buf_printf(&b, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n", r->status, reason(r->status),
                  json_ctype);
    for (size_t i = 0; i < sizeof security_headers / sizeof security_headers[0]; i++)
        tn_buf_printf(&b, "%s: %s\r\n", security_headers[i].name, security_headers[i].value);
    tn_buf_printf(&b, "Cache-Control: no-store\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n",
                  r->body.len);
    if (!head) tn_buf_add(&b, r->body.data, r->body.len);
    ssize_t sent = send(sock, b.data, b.len, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)sent;
    tn_buf_clear(&b);
}

/* Sends a whole reply. A HEAD request gets the GET's headers, its Content-Length
 * included, and no body (RFC 9110 9.3.2): evhttp 2.1 writes the body it is given even
 * for HEAD, and adds no Content-Length then. */
static void send_body(struct evhttp_request *req, int status, const char *type, int no_store,
                      const void *body, size_t len) {
    common_headers(req, type, no_store);
    if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
        if (status != 204) { /* a 204 has no Content-Length (RFC 9110 8.6) */
            char n[24];
            snprintf(n, sizeof n, "%zu", len);
            evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Length", n);
        }
        len = 0;
    }
    struct evbuffer *b = evbuffer_new();
    if (!b) tn_out_of_memory("a reply's buffer");
    if (len) evbuffer_add(b, body, len);
    evhttp_send_reply(req, status, reason(status), b);
    evbuffer_free(b);
}

static void send_api(struct evhttp_request *req, const api_reply *r) {
    send_body(req, r->status, json_ctype, 1, r->body.data, r->body.len);
}

/* An error reply, with an extra header (name NULL: none). */
static void send_error(struct evhttp_request *req, int status, const char *header,
                       const char *value, const char *hint, const char *msg) {
    api_reply r = {0};
    api_error(&r, status, hint, "%s", msg);
    if (header) evhttp_add_header(evhttp_request_get_output_headers(req), header, value);
    send_api(req, &r);
    api_reply_clear(&r);
}

/* ---------------------------------------------------------------------------------
 * Connections: the cap
 * --------------------------------------------------------------------------------- */

static void client_free(dash_client *c);

/* evhttp frees a connection: forget it, and the event stream on it. */
static void on_conn_close(struct evhttp_connection *evcon, void *arg) {
    dash_conn *conn = arg;
    dash_server *d = conn->d;
    dash_client *c = conn->client;
    if (c) {
        /* On a peer's EOF evhttp detaches the unfinished request and leaves it to us;
         * otherwise (the server is being freed) it frees the request itself. */
        struct evhttp_request *req = c->req;
        c->req = NULL;
        if (req) {
            evhttp_request_set_on_complete_cb(req, NULL, NULL);
            if (!evhttp_request_get_connection(req)) evhttp_send_reply_end(req); /* frees it */
        }
        client_free(c);
    }
    if (conn->prev) conn->prev->next = conn->next;
    else d->conns = conn->next;
    if (conn->next) conn->next->prev = conn->prev;
    d->nconns--;
    evbuffer_remove_cb_entry(bufferevent_get_input(evhttp_connection_get_bufferevent(evcon)),
                             conn->input_cb);
    event_free(conn->deadline); /* this may be its own callback's doing: allowed */
    free(conn);
}

/* ---------------------------------------------------------------------------------
 * Connections: the gate
 * --------------------------------------------------------------------------------- */

/* The reply to a refused request, written to the socket at once: no reply is under way
 * (a request is awaited), so evhttp has handed everything it had to the kernel, and a
 * reply of a few hundred bytes fits unless a pipelining client has stopped reading (then
 * it is cut short: only that client loses). Then the sending side is shut (the client
 * sees the end of the reply) and the gate drops what still comes, until the client
 * closes or the deadline fires. */
static void gate_refuse(dash_conn *conn) {
    const api_frame *f = &conn->frame;
    api_reply r = {0};
    api_error(&r, f->status,
              f->status == 413   ? "the dashboard takes no request body over 4 KiB"
              : f->status == 431 ? "send at most 8 KiB of request line and headers"
              : f->status == 501 ? "the dashboard answers GET, HEAD and POST"
                                 : "send a well-formed HTTP/1.1 request (RFC 9112)",
              "%s", f->why);
    int sock = bufferevent_getfd(evhttp_connection_get_bufferevent(conn->evcon));
    send_raw(sock, &r, f->head);
    shutdown(sock, SHUT_WR);
    api_reply_clear(&r);
}

/* Scans what arrived since the last look, until the request ends. evbuffer_peek: the
 * buffer's own bytes, in place (a copy-out refuses a frozen one). */
static void gate_read(dash_conn *conn, struct evbuffer *in) {
    size_t len = evbuffer_get_length(in);
    while (conn->frame.state == API_FRAME_MORE && conn->scanned < len) {
        struct evbuffer_ptr pos;
        struct evbuffer_iovec v[8];
        if (evbuffer_ptr_set(in, &pos, conn->scanned, EVBUFFER_PTR_SET) != 0) break;
        int n = evbuffer_peek(in, (ev_ssize_t)(len - conn->scanned), &pos, v, 8);
        if (n <= 0) break;
        for (int i = 0; i < n && i < 8 && conn->frame.state == API_FRAME_MORE; i++)
            conn->scanned += api_frame_scan(&conn->frame, v[i].iov_base, v[i].iov_len);
    }
}

/* The request's target, once its line is read (api_frame_target), refused with the
 * gate's 400 when evhttp's URI parser would refuse it (an authority with a bad port or
 * IP literal, say), which evhttp would answer with its own page: the same parser,
 * evhttp_uri_parse_with_flags, run on it here (a CONNECT's target is an authority:
 * parsed as "//TARGET", which evhttp_uri_parse_authority reads the same way). The
 * request line is at the front of in (the gate let nothing through before it). */
static void gate_check_target(dash_conn *conn, struct evbuffer *in) {
    size_t off, len;
    int connect;
    if (conn->target_checked || !api_frame_target(&conn->frame, &off, &len, &connect)) return;
    conn->target_checked = 1;
    char *t = tn_xmalloc(len + 3);
    size_t at = connect ? 2 : 0;
    memcpy(t, "//", at);
    struct evbuffer_ptr pos;
    struct evbuffer_iovec v[16];
    size_t got = 0;
    while (got < len && evbuffer_ptr_set(in, &pos, off + got, EVBUFFER_PTR_SET) == 0) {
        int k = evbuffer_peek(in, (ev_ssize_t)(len - got), &pos, v, 16);
        if (k <= 0) break;
        for (int i = 0; i < k && i < 16 && got < len; i++) {
            size_t take = v[i].iov_len < len - got ? v[i].iov_len : len - got;
            memcpy(t + at + got, v[i].iov_base, take);
            got += take;
        }
    }
    t[at + got] = '\0';
    struct evhttp_uri *uri = got == len ? evhttp_uri_parse_with_flags(t, EVHTTP_URI_NONCONFORMANT)
                                        : NULL;
    if (uri) evhttp_uri_free(uri);
    else api_frame_refuse(&conn->frame, 400, "the request target is not a URI");
    free(t);
}

/* Looks at what the connection sent since the last look, while a request is awaited:
 * lets a whole request through to evhttp, answers one that is refused, says "100
 * Continue" to a client that waits for it, and drops what a refused one sends. The
 * scan's state is the gate's: a request ends (WHOLE or REFUSED) in exactly one look,
 * which acts on it once. */
static void gate_scan(dash_conn *conn) {
    struct evbuffer *in = bufferevent_get_input(evhttp_connection_get_bufferevent(conn->evcon));
    if (conn->frame.state == API_FRAME_WHOLE) { /* evhttp's, until its reply */
        /* a client that sends on and on while its reply (an event stream, say) is
         * written: closed, from the loop (not inside the bufferevent's read) */
        if (evbuffer_get_length(in) > DASH_MAX_AHEAD) event_active(conn->deadline, EV_TIMEOUT, 1);
        return;
    }
    if (conn->frame.state == API_FRAME_MORE) {
        gate_read(conn, in);
        if (conn->frame.leading > 0) { /* empty lines before the request line: evhttp
                                          would refuse them (RFC 9112 2.2 ignores them) */
            evbuffer_unfreeze(in, 1);
            evbuffer_drain(in, conn->frame.leading);
            evbuffer_freeze(in, 1);
            conn->scanned -= conn->frame.leading;
            conn->frame.leading = 0;
        }
        if (conn->frame.state != API_FRAME_REFUSED) gate_check_target(conn, in);
        if (conn->frame.state == API_FRAME_WHOLE) {
            evbuffer_unfreeze(in, 1); /* evhttp reads it now, or at its next read */
            return;
        }
        if (conn->frame.state == API_FRAME_MORE) {
            if (conn->frame.expect_continue && !conn->continued) {
                static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                ssize_t sent = send(bufferevent_getfd(evhttp_connection_get_bufferevent(conn->evcon)),
                                    cont, sizeof cont - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                (void)sent; /* if it is lost, the client sends the body after its wait */
                conn->continued = 1;
            }
            return;
        }
        gate_refuse(conn); /* refused in this look */
    }
    evbuffer_unfreeze(in, 1); /* refused: what came is dropped */
    evbuffer_drain(in, evbuffer_get_length(in));
    evbuffer_freeze(in, 1);
}

/* Bytes arrived on a connection (before evhttp's read callback sees them). */
static void on_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg) {
    if (info->n_added) gate_scan(arg); /* the gate's own drains come here too */
    (void)in;
}

/* The connection now waits for a request: it has d->request_tv to send all of it, and
 * the gate holds it back from evhttp until it is whole. */
static void conn_await_request(dash_conn *conn) {
    api_frame_init(&conn->frame, DASH_MAX_HEADERS, DASH_MAX_BODY);
    conn->scanned = 0;
    conn->continued = 0;
    conn->target_checked = 0;
    evbuffer_freeze(bufferevent_get_input(evhttp_connection_get_bufferevent(conn->evcon)), 1);
    evtimer_add(conn->deadline, &conn->d->request_tv);
    gate_scan(conn); /* what the client sent after its previous request */
}

/* A request was not whole in time (or no request came), or the client sent more than
 * DASH_MAX_AHEAD while its reply was written (gate_scan): close the connection. Nothing
 * is sent: the peer may be an idle keep-alive connection, to which a 408 would be an
 * unsolicited reply. */
static void on_deadline(evutil_socket_t fd, short what, void *arg) {
    dash_conn *conn = arg;
    evhttp_connection_free(conn->evcon); /* on_conn_close frees conn */
    (void)fd, (void)what;
}

static dash_conn *find_conn(dash_server *d, struct evhttp_connection *evcon) {
    for (dash_conn *c = d->conns; c; c = c->next)
        if (c->evcon == evcon) return c;
    return NULL;
}

/* A reply is done (evhttp_send_done) and the connection, unless it is closed next,
 * waits for another request: its deadline starts again. */
static void on_reply_done(struct evhttp_request *req, void *arg) {
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    dash_conn *conn = evcon ? find_conn(arg, evcon) : NULL;
    if (conn) conn_await_request(conn);
}

/* evhttp makes the bufferevent of each new connection here: note it for on_adopt,
 * which runs once the accept callback is over and the connection exists. */
static struct bufferevent *on_new_bev(struct event_base *base, void *arg) {
    dash_server *d = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) return NULL;
    if (d->npending == d->cappending) {
        d->cappending = d->cappending ? 2 * d->cappending : 8;
        d->pending = tn_xrealloc(d->pending, d->cappending * sizeof *d->pending);
    }
    d->pending[d->npending++] = bev;
    event_active(d->adopt_ev, EV_TIMEOUT, 1);
    return bev;
}

static void on_adopt(evutil_socket_t fd, short what, void *arg) {
    dash_server *d = arg;
    for (size_t i = 0; i < d->npending; i++) {
        struct bufferevent *bev = d->pending[i];
        bufferevent_event_cb event_cb = NULL;
        void *cbarg = NULL;
        bufferevent_getcb(bev, NULL, NULL, &event_cb, &cbarg); /* evhttp's: its connection */
        struct evhttp_connection *evcon = cbarg;
        if (!evcon || evhttp_connection_get_bufferevent(evcon) != bev) continue;
        if (d->nconns >= DASH_MAX_CONNS) {
            /* a new socket's buffer is empty: the reply fits */
            api_reply busy = {0};
            api_error(&busy, 503, "close other tabs or clients and retry", "too many connections");
            int sock = bufferevent_getfd(bev);
            send_raw(sock, &busy, 0); /* the method is not read: a body even for HEAD */
            api_reply_clear(&busy);
            /* what the client sent already is read and dropped, so that the close is a
             * FIN after the 503 rather than a reset that could discard it */
            char sink[4096];
            for (int k = 0; k < 4 && recv(sock, sink, sizeof sink, MSG_DONTWAIT) > 0; k++) {}
            evhttp_connection_free(evcon); /* never adopted: not counted */
            continue;
        }
        /* Replies go out as soon as they are written: with Nagle's algorithm, the end of
         * a reply larger than a segment waits for the client's delayed ACK (40 ms). */
        int one = 1;
        setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        dash_conn *conn = tn_xcalloc(1, sizeof *conn);
        conn->d = d;
        conn->evcon = evcon;
        conn->deadline = evtimer_new(d->base, on_deadline, conn);
        conn->input_cb = evbuffer_add_cb(bufferevent_get_input(bev), on_input, conn);
        if (!conn->deadline || !conn->input_cb) tn_out_of_memory("a connection's timer");
        conn_await_request(conn);
        conn->next = d->conns;
        if (d->conns) d->conns->prev = conn;
        d->conns = conn;
        d->nconns++;
        evhttp_connection_set_closecb(evcon, on_conn_close, conn);
    }
    d->npending = 0;
    (void)fd, (void)what;
}

/* ---------------------------------------------------------------------------------
 * Event streams
 * --------------------------------------------------------------------------------- */

static void watch_release(dash_server *d, dash_watch *w) {
    if (--w->nclients > 0) return;
    for (dash_watch **p = &d->watches; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    api_watch_clear(&w->w);
    free(w);
}

/* Unlinks and frees a client; its request is no longer ours. */
static void client_free(dash_client *c) {
    dash_server *d = c->d;
    if (c->conn) c->conn->client = NULL;
    if (c->prev) c->prev->next = c->next;
    else d->clients = c->next;
    if (c->next) c->next->prev = c->prev;
    d->nclients--;
    watch_release(d, c->watch);
    free(c);
}

/* evhttp finished the request by itself (an error it answered): forget the client. */
static void on_stream_complete(struct evhttp_request *req, void *arg) {
    dash_client *c = arg;
    c->req = NULL;
    on_reply_done(req, c->d);
    client_free(c);
}

/* Ends a stream politely (the final chunk) and frees the client; once the chunk is
 * sent, the connection awaits a request again, with a deadline. The client goes first:
 * with nothing left to write, evhttp_send_reply_end finishes the request at once, and
 * on an HTTP/1.0 connection (no keep-alive) frees the connection too, whose close
 * callback must then find no client on it. */
static void client_end(dash_client *c) {
    dash_server *d = c->d;
    struct evhttp_request *req = c->req;
    client_free(c);
    if (req) {
        evhttp_request_set_on_complete_cb(req, on_reply_done, d);
        evhttp_send_reply_end(req);
    }
}

/* Sends text to a client; drops it when it is too far behind. Returns 0, or -1 when
 * the client was freed. */
static int client_send(dash_client *c, const char *text, size_t len) {
    if (!c->req || !len) return 0;
    struct evhttp_connection *evcon = evhttp_request_get_connection(c->req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    if (bev && evbuffer_get_length(bufferevent_get_output(bev)) > DASH_MAX_BACKLOG) {
        evhttp_connection_free(evcon); /* its close callback frees the client */
        return -1;
    }
    struct evbuffer *b = evbuffer_new();
    if (!b) tn_out_of_memory("a stream's buffer");
    evbuffer_add(b, text, len);
    evhttp_send_reply_chunk(c->req, b);
    evbuffer_free(b);
    return 0;
}

/* Sends a client what its study wrote since its cursor, and the study when it changed. */
static int client_update(dash_client *c) {
    api_watch *w = &c->watch->w;
    tn_buf b = {0};
    char err[1024];
    if (c->cur.trials < w->head.trials || c->cur.measurements < w->head.measurements) {
        if (api_sse_changes(c->d->st, w, &c->cur, DASH_BATCH, &b, err, sizeof err) < 0) {
            tn_buf_clear(&b);
            return 0; /* the store is busy or failing: try again at the next poll */
        }
    }
    if (c->version != w->version) {
        api_sse_study(w, &c->cur, &b);
        c->version = w->version;
    }
    int rc = client_send(c, b.data, b.len);
    tn_buf_clear(&b);
    return rc;
}

static void poll_streams(dash_server *d) {
    char err[1024];
    int gone;
    for (dash_watch *w = d->watches; w; w = w->next) /* errors: next time */
        w->gone = api_watch_poll(d->st, &w->w, &gone, err, sizeof err) == 0 && gone;
    for (dash_client *c = d->clients, *next; c; c = next) {
        next = c->next;
        if (c->watch->gone) /* the study left the store: nothing more will come */
            client_end(c);
        else
            client_update(c);
    }
}

static void on_poll(evutil_socket_t fd, short what, void *arg) {
    dash_server *d = arg;
    if (d->clients) poll_streams(d);
    (void)fd, (void)what;
}

static void on_heartbeat(evutil_socket_t fd, short what, void *arg) {
    dash_server *d = arg;
    static const char beat[] = ": heartbeat\n\n";
    for (dash_client *c = d->clients, *next; c; c = next) {
        next = c->next;
        client_send(c, beat, sizeof beat - 1);
    }
    (void)fd, (void)what;
}

/* GET /api/events?study=NAME */
static void start_stream(dash_server *d, struct evhttp_request *req, const char *study,
                         int head_only) {
    if (!study || !*study) {
        send_error(req, 400, NULL, NULL, "write /api/events?study=NAME",
                   "the event stream needs a study");
        return;
    }
    if (!api_valid_study_ref(study)) {
        send_error(req, 404, NULL, NULL, "GET /api/studies lists the studies in the store",
                   "no such study");
        return;
    }
    if (d->nclients >= DASH_MAX_CLIENTS) { /* HEAD too: it answers what GET would */
        send_error(req, 503, "Retry-After", "5", "close other dashboard tabs and retry",
                   "too many event streams");
        return;
    }
    api_reply r = {0};
    if (head_only) { /* HEAD: the headers a stream would get, and no stream */
        api_watch probe;
        if (api_watch_open(d->st, study, &probe, &r) != 0) {
            send_api(req, &r);
        } else {
            /* as the GET's, without Transfer-Encoding and with no Content-Length: a
             * stream has no length, and a HEAD reply no body (evhttp adds neither) */
            api_watch_clear(&probe);
            common_headers(req, "text/event-stream", 1);
            evhttp_add_header(evhttp_request_get_output_headers(req), "X-Accel-Buffering", "no");
            evhttp_send_reply(req, 200, "OK", NULL);
        }
        api_reply_clear(&r);
        return;
    }
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    dash_conn *conn = evcon ? find_conn(d, evcon) : NULL;
    if (!conn || conn->client) {
        send_error(req, 503, "Retry-After", "5", "close other dashboard tabs and retry",
                   "too many event streams");
        return;
    }
    /* the study, followed by one watch however many clients follow it; an id in its one
     * spelling, as api_watch_open takes it ("01" is no study) */
    dash_watch *w = NULL;
    int64_t id = 0;
    char canon[24] = "";
    if (api_parse_int(study, 1, INT64_MAX, &id) == 0)
        snprintf(canon, sizeof canon, "%" PRId64, id);
    for (dash_watch *x = d->watches; x; x = x->next)
        if ((!strcmp(canon, study) && id == x->w.id) || !strcmp(x->w.name, study)) w = x;
    if (!w) {
        dash_watch fresh = {0};
        if (api_watch_open(d->st, study, &fresh.w, &r) != 0) {
            send_api(req, &r);
            api_reply_clear(&r);
            return;
        }
        w = tn_xmalloc(sizeof *w);
        *w = fresh;
        w->next = d->watches;
        d->watches = w;
    }
    dash_client *c = tn_xcalloc(1, sizeof *c);
    c->d = d;
    c->conn = conn;
    c->req = req;
    c->watch = w;
    w->nclients++;
    c->cur = w->w.head;
    const char *last = evhttp_find_header(evhttp_request_get_input_headers(req), "Last-Event-ID");
    api_cursor resume;
    if (last && api_cursor_parse(last, &resume) == 0 && resume.trials <= w->w.head.trials &&
        resume.measurements <= w->w.head.measurements)
        c->cur = resume;
    c->version = w->w.version - 1; /* so the first update sends the study */
    c->next = d->clients;
    if (d->clients) d->clients->prev = c;
    d->clients = c;
    d->nclients++;
    conn->client = c;
    common_headers(req, "text/event-stream", 1);
    evhttp_add_header(evhttp_request_get_output_headers(req), "X-Accel-Buffering", "no");
    evhttp_send_reply_start(req, 200, "OK");
    evhttp_request_set_on_complete_cb(req, on_stream_complete, c);
    /* A stream is quiet on the client's side: no read timeout; a peer that stops
     * reading still hits the write timeout. */
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    struct timeval wtv = {DASH_TIMEOUT_S, 0};
    bufferevent_set_timeouts(bev, NULL, &wtv);
    static const char hello[] = ": hello\nretry: 1000\n\n";
    if (client_send(c, hello, sizeof hello - 1) == 0) client_update(c);
}

/* ---------------------------------------------------------------------------------
 * Requests
 * --------------------------------------------------------------------------------- */

/* The request's Host headers, as HTTP wants them (RFC 7230 5.4): 0 with *host the one
 * given, or NULL when an HTTP/1.0 request has none; -1 when an HTTP/1.1 request has
 * none or any request has several (the server must answer 400). */
static int host_header(struct evhttp_request *req, const char **host) {
    *host = NULL;
    int n = 0;
    const struct evkeyval *h;
    TAILQ_FOREACH(h, evhttp_request_get_input_headers(req), next) {
        if (strcasecmp(h->key, "Host") != 0) continue;
        *host = h->value;
        n++;
    }
    int http11 = req->major > 1 || (req->major == 1 && req->minor >= 1);
    return n > 1 || (n == 0 && http11) ? -1 : 0;
}

/* Whether the Host header names this server by a loopback name (DNS rebinding: a page
 * of another site whose name resolves to 127.0.0.1 sends its own name). */
static int host_ok(const dash_server *d, const char *host) {
    if (!host) return 1; /* HTTP/1.0 without Host: no browser sends that, and no page
                            can make it send one (Host is not for scripts to set) */
    char name[128];
    snprintf(name, sizeof name, "%s", host);
    char *end = name[0] == '[' ? strchr(name, ']') : strrchr(name, ':');
    if (name[0] == '[' && end) end[1] = '\0';
    else if (end) *end = '\0';
    return !strcasecmp(name, "localhost") || !strcmp(name, "127.0.0.1") ||
           !strcmp(name, "[::1]") || !strcmp(name, d->host);
}

/* Constant-time comparison of a given token with ours. */
static int token_matches(const dash_server *d, const char *given) {
    size_t n = strlen(given);
    if (n != sizeof d->token - 1) return 0; /* the length is no secret */
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++) diff |= (unsigned char)(given[i] ^ d->token[i]);
    return diff == 0;
}

/* The token of a request: "Authorization: Bearer T", or (GET and HEAD only, for
 * EventSource, which cannot set headers) the query's token=T. NULL when none. */
static const char *request_token(struct evhttp_request *req, const struct evkeyvalq *query,
                                 int allow_query) {
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (auth) {
        if (strncasecmp(auth, "Bearer ", 7) != 0) return "";
        auth += 7;
        while (*auth == ' ') auth++;
        return auth;
    }
    return allow_query ? evhttp_find_header(query, "token") : NULL;
}

/* Checks the token: 0 to go on, or -1 with the reply sent (401 missing, 403 wrong). */
static int check_token(const dash_server *d, struct evhttp_request *req,
                       const struct evkeyvalq *query, int allow_query) {
    const char *token = request_token(req, query, allow_query);
    if (!token || !*token) {
        send_error(req, 401, "WWW-Authenticate", "Bearer",
                   "send 'Authorization: Bearer TOKEN' (the token is printed by the tuner and "
                   "written to its .dashboard-token file)",
                   "this needs the dashboard's token");
        return -1;
    }
    if (!token_matches(d, token)) {
        send_error(req, 403, NULL, NULL,
                   "use the token this tuner printed (each run or serve makes a new one)",
                   "wrong token");
        return -1;
    }
    return 0;
}

static const char *content_type(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot) return "application/octet-stream";
    if (!strcmp(dot, ".html")) return "text/html; charset=utf-8";
    if (!strcmp(dot, ".js")) return "text/javascript; charset=utf-8";
    if (!strcmp(dot, ".css")) return "text/css; charset=utf-8";
    if (!strcmp(dot, ".svg")) return "image/svg+xml";
    if (!strcmp(dot, ".png")) return "image/png";
    if (!strcmp(dot, ".ico")) return "image/x-icon";
    if (!strcmp(dot, ".json")) return "application/json; charset=utf-8";
    return "application/octet-stream";
}

static void serve_asset(struct evhttp_request *req, const char *name) {
    for (size_t i = 0; i < dash_nassets; i++) {
        if (!strcmp(dash_assets[i].name, name)) {
            send_body(req, 200, content_type(name), 0, dash_assets[i].data, dash_assets[i].len);
            return;
        }
    }
    if (!strcmp(name, "favicon.ico")) { /* no icon: nothing, successfully */
        send_body(req, 204, NULL, 0, NULL, 0);
        return;
    }
    send_error(req, 404, NULL, NULL, "the page is at /", "no such file");
}

/* The query string as evhttp_parse_query_str takes it: the empty parameters of a legal
 * query ("?&limit=2", "a&&b") left out, and a bare name ("?x") given an empty value.
 * Yours to free. */
static char *tidy_query(const char *qs) {
    size_t n = strlen(qs);
    char *out = tn_xmalloc(2 * n + 1), *o = out;
    for (const char *p = qs; *p;) {
        size_t len = strcspn(p, "&");
        if (len > 0) {
            if (o > out) *o++ = '&';
            memcpy(o, p, len);
            o += len;
            if (!memchr(p, '=', len)) *o++ = '=';
        }
        p += len + (p[len] == '&');
    }
    *o = '\0';
    return out;
}

static void on_request(struct evhttp_request *req, void *arg) {
    dash_server *d = arg;
    struct evkeyvalq query;
    TAILQ_INIT(&query);
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    const char *qs = uri ? evhttp_uri_get_query(uri) : NULL;
    if (!path || !*path) path = "/";
    api_route route;
    api_route_parse(path, &route);
    int is_api = !strncmp(path, "/api/", 5) || !strcmp(path, "/api"); /* a page's 404 too */
    const char *allow = route.id == API_NOT_FOUND || route.id == API_BAD_PATH
                            ? "GET, HEAD, POST" /* no route: what the server answers at all */
                            : api_route_allow(route.id);
    int read = cmd == EVHTTP_REQ_GET || cmd == EVHTTP_REQ_HEAD;
    double now = wall_clock();
    api_reply r = {0};
    const char *host;

    /* The request is whole: its connection's deadline stops until the reply is done. */
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    dash_conn *conn = evcon ? find_conn(d, evcon) : NULL;
    if (conn) evtimer_del(conn->deadline);
    evhttp_request_set_on_complete_cb(req, on_reply_done, d); /* a stream sets its own */

    if (host_header(req, &host) != 0) { /* malformed: answered, then the connection closed */
        send_error(req, 400, "Connection", "close",
                   "send one 'Host: ADDR:PORT' header with the address the tuner printed "
                   "(HTTP/1.1 requires it; every HTTP/1.1 client sends it)",
                   host ? "more than one Host header" : "an HTTP/1.1 request needs a Host header");
        goto done;
    }
    /* An absolute-form target ("GET http://h/api/..."): its authority is the request's
     * host, whatever Host says (RFC 9112 3.2.2). */
    const char *target_host = uri && evhttp_uri_get_scheme(uri) ? evhttp_uri_get_host(uri)
                                                                : NULL; /* not "//x/..." */
    char authority[120];
    const char *named = host;
    if (target_host && *target_host) {
        snprintf(authority, sizeof authority,
                 strchr(target_host, ':') && target_host[0] != '[' ? "[%s]" : "%s", target_host);
        named = authority;
    }
    if (!d->public_access && !host_ok(d, named)) {
        send_error(req, 403, NULL, NULL,
                   "open the dashboard at http://127.0.0.1:PORT/ (the address the tuner printed)",
                   "this dashboard answers only to a loopback Host name");
        goto done;
    }
    if (!read && cmd != EVHTTP_REQ_POST) {
        send_error(req, 405, "Allow", allow, "the dashboard answers GET, HEAD and POST only",
                   "method not allowed");
        goto done;
    }
    char *tidy = qs ? tidy_query(qs) : NULL;
    int bad_query = tidy && evhttp_parse_query_str(tidy, &query) != 0;
    free(tidy);
    if (bad_query) {
        send_error(req, 400, NULL, NULL, "write the query as name=value&name=value",
                   "malformed query string");
        goto done;
    }
    if (route.id == API_BAD_PATH) {
        send_error(req, 400, NULL, NULL, "see docs/dashboard.md for the API", route.why);
        goto done;
    }
    if (is_api && d->public_access && route.id != API_CANCEL &&
        check_token(d, req, &query, read) != 0)
        goto done;
    if (route.id == API_NOT_FOUND) {
        send_error(req, 404, NULL, NULL, "the API: /api/studies, /api/events?study=NAME; the "
                   "page: /", route.why);
        goto done;
    }
    if ((route.id == API_CANCEL) == read) {
        send_error(req, 405, "Allow", allow, route.id == API_CANCEL
                   ? "cancel with POST and the token" : "this endpoint only reads: use GET",
                   "method not allowed");
        goto done;
    }
    if (route.id == API_CANCEL && check_token(d, req, &query, 0) != 0) goto done;

    api_page_query pq = {
        .offset = evhttp_find_header(&query, "offset"), .limit = evhttp_find_header(&query, "limit"),
        .sort = evhttp_find_header(&query, "sort"), .state = evhttp_find_header(&query, "state")};
    switch (route.id) {
    case API_STATIC: serve_asset(req, route.asset); goto done;
    case API_EVENTS:
        start_stream(d, req, evhttp_find_header(&query, "study"), cmd == EVHTTP_REQ_HEAD);
        goto done;
    case API_STUDIES: api_studies(d->st, now, &r); break;
    case API_STUDY: api_study(d->st, route.study, now, &r); break;
    case API_TRIALS: api_trials(d->st, route.study, &pq, now, &r); break;
    case API_CURVES: api_curves(d->st, route.study, &r); break;
    case API_TRIAL: api_trial(d->st, route.study, route.trial, now, &r); break;
    case API_LOG:
        api_log(d->st, route.study, route.trial, route.replica,
                evhttp_find_header(&query, "lines"), &r);
        break;
    case API_CANCEL: api_cancel(d->st, route.study, &r); break;
    default: api_error(&r, 404, NULL, "no such endpoint"); break;
    }
    send_api(req, &r);
done:
    api_reply_clear(&r);
    evhttp_clear_headers(&query);
}

/* ---------------------------------------------------------------------------------
 * Life cycle
 * --------------------------------------------------------------------------------- */

static void shut_down(dash_server *d) {
    if (d->clients) { /* a last look, so the streams see how the study ended */
        poll_streams(d);
        for (dash_client *c = d->clients, *next; c; c = next) {
            next = c->next;
            client_end(c);
        }
        struct timeval drain = {0, 200000}; /* let the last chunks reach the clients */
        event_base_loopexit(d->base, &drain);
    } else {
        event_base_loopbreak(d->base);
    }
}

static void on_stop(evutil_socket_t fd, short what, void *arg) {
    uint64_t v;
    ssize_t got = read(fd, &v, sizeof v);
    (void)got;
    shut_down(arg);
    (void)what;
}

static void on_signal(evutil_socket_t sig, short what, void *arg) {
    shut_down(arg);
    (void)sig, (void)what;
}

/* The request deadline: DASH_REQUEST_S, or TUNER_DASHBOARD_REQUEST_TIMEOUT's seconds
 * (a knob for tests; a bad value is said on log and the default kept). */
static struct timeval request_deadline(FILE *log) {
    double s = DASH_REQUEST_S;
    const char *v = getenv("TUNER_DASHBOARD_REQUEST_TIMEOUT");
    if (v && *v) {
        char *end;
        double x = strtod(v, &end);
        if (*end == '\0' && x >= 0.1 && x <= 3600)
            s = x;
        else if (log)
            fprintf(log, "dashboard: TUNER_DASHBOARD_REQUEST_TIMEOUT=%s is not a number of "
                         "seconds from 0.1 to 3600; using %d\n", v, DASH_REQUEST_S);
    }
    struct timeval tv = {(time_t)s, 0};
    tv.tv_usec = (suseconds_t)((s - (double)tv.tv_sec) * 1e6);
    return tv;
}

/* Binds a listener to a; errno is kept for the caller. */
static struct evconnlistener *bind_listener(struct event_base *base, const dash_addr *a) {
    return evconnlistener_new_bind(base, NULL, NULL,
                                   LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE,
                                   128, (const struct sockaddr *)&a->sa, (int)a->salen);
}

int dash_new(const dash_config *c, dash_server **out, char *err, size_t errlen) {
    *out = NULL;
    int explicit_addr = c->listen != NULL;
    char text[96];
    if (explicit_addr)
        snprintf(text, sizeof text, "%s", c->listen);
    else
        snprintf(text, sizeof text, "%s:%d", DASH_DEFAULT_ADDR, DASH_DEFAULT_PORT);
    int rc = dash_check_address(text, c->public_access, c->serve, err, errlen);
    if (rc) return rc;
    dash_addr a;
    parse_address(text, &a, c->serve, NULL, 0);

    /* SIGPIPE would kill the process when a client goes away mid-write; the executor
     * restores every signal's default in the trials it starts. */
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, NULL);

    dash_server *d = tn_xcalloc(1, sizeof *d);
    d->stop_fd = -1;
    d->token_fd = -1;
    d->public_access = c->public_access;
    d->stop_on_hangup = c->stop_on_hangup;
    d->request_tv = request_deadline(c->log);
    d->base = event_base_new();
    d->http = d->base ? evhttp_new(d->base) : NULL;
    if (!d->http) {
        rc = tn_error(err, errlen, TN_EIO, "dashboard: cannot make an event base");
        goto fail;
    }
    struct evconnlistener *lev = bind_listener(d->base, &a);
    int e = errno;
    for (int i = 1; !lev && !explicit_addr && e == EADDRINUSE && i <= DASH_PORT_TRIES; i++) {
        int port = DASH_DEFAULT_PORT + i;
        ((struct sockaddr_in *)&a.sa)->sin_port = htons((uint16_t)port);
        lev = bind_listener(d->base, &a);
        e = errno;
        if (lev) {
            a.port = port;
            if (c->log)
                fprintf(c->log, "dashboard: port %d is in use; serving on port %d instead\n",
                        DASH_DEFAULT_PORT, port);
        }
    }
    if (!lev) {
        if (!explicit_addr && e == EADDRINUSE) {
            rc = tn_error(err, errlen, DASH_NO_PORT,
                          c->serve ? "dashboard: ports %d to %d of %s are all in use\nhint: "
                                     "pick a free one with --listen=ADDR:PORT (port 0: any)"
                                   : "dashboard: ports %d to %d of %s are all in use; running "
                                     "without the dashboard\nhint: pick a free one with "
                                     "--dashboard=ADDR:PORT, or say --dashboard=off",
                          DASH_DEFAULT_PORT, DASH_DEFAULT_PORT + DASH_PORT_TRIES, a.bare);
            goto fail;
        }
        rc = tn_error(err, errlen, e == EADDRINUSE || e == EACCES || e == EADDRNOTAVAIL
                                       ? TN_EINVAL : TN_EIO,
                      "dashboard: cannot listen on %s:%d: %s\nhint: %s", a.host, a.port,
                      strerror(e),
                      e == EADDRINUSE && c->serve
                          ? "another process holds the port: pick another with "
                            "--listen=ADDR:PORT (port 0: any free one)"
                      : e == EADDRINUSE ? "another process holds the port: pick another "
                                          "(ADDR:PORT, or port 0 for any free one), or turn the "
                                          "dashboard off (--dashboard=off)"
                      : e == EACCES   ? "ports below 1024 need privileges: pick a port above 1024"
                                      : "pick an address of this machine, or 127.0.0.1");
        goto fail;
    }
    if (evhttp_bind_listener(d->http, lev) == NULL) {
        evconnlistener_free(lev);
        rc = tn_error(err, errlen, TN_EIO, "dashboard: cannot serve on %s:%d", a.host, a.port);
        goto fail;
    }
    if (a.port == 0) { /* any free port: which one */
        struct sockaddr_storage got;
        socklen_t len = sizeof got;
        if (getsockname(evconnlistener_get_fd(lev), (struct sockaddr *)&got, &len) == 0)
            a.port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                                     : ((struct sockaddr_in *)&got)->sin_port);
    }
    d->port = a.port;
    snprintf(d->host, sizeof d->host, "%s", a.host);

    /* the gate enforces the limits before evhttp reads a request (DASH_MAX_HELD) */
    evhttp_set_max_headers_size(d->http, DASH_MAX_HELD);
    evhttp_set_max_body_size(d->http, DASH_MAX_BODY);
    evhttp_set_timeout(d->http, DASH_TIMEOUT_S);
    /* every method reaches on_request, which answers 405 itself (with Allow) */
    evhttp_set_allowed_methods(d->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                                            EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    evhttp_set_gencb(d->http, on_request, d);
    evhttp_set_bevcb(d->http, on_new_bev, d);

    /* `tuner serve`'s: read-only when the store cannot be written (everything but cancel
     * works), and never made. A study's may come before its run has made the store, which
     * it then makes: the run writes it anyway. */
    rc = c->serve ? st_open_read(c->db, &d->st, err, errlen) : st_open(c->db, &d->st, err, errlen);
    if (rc) goto fail;
    if (st_readonly(d->st) && c->log)
        fprintf(c->log, "dashboard: the store is read-only here: cancelling from the page "
                        "is off%s%s\n",
                st_note(d->st) ? "; " : "", st_note(d->st) ? st_note(d->st) : "");
    if ((rc = tn_random_hex(d->token, 16, err, errlen))) goto fail; /* 128 bits */
    snprintf(d->url, sizeof d->url, "http://%s:%d/#token=%s", d->host, d->port, d->token);

    d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (d->stop_fd < 0) {
        rc = tn_error(err, errlen, TN_EIO, "dashboard: eventfd: %s", strerror(errno));
        goto fail;
    }
    struct timeval poll = {0, DASH_POLL_MS * 1000}, beat = {DASH_HEARTBEAT_S, 0};
    d->stop_ev = event_new(d->base, d->stop_fd, EV_READ | EV_PERSIST, on_stop, d);
    d->poll_ev = event_new(d->base, -1, EV_PERSIST, on_poll, d);
    d->beat_ev = event_new(d->base, -1, EV_PERSIST, on_heartbeat, d);
    d->adopt_ev = event_new(d->base, -1, 0, on_adopt, d);
    if (!d->stop_ev || !d->poll_ev || !d->beat_ev || !d->adopt_ev)
        tn_out_of_memory("the dashboard's timers");
    event_add(d->stop_ev, NULL);
    event_add(d->poll_ev, &poll);
    event_add(d->beat_ev, &beat);
    *out = d;
    return 0;
fail:
    dash_free(d);
    return rc;
}

/* Whether a running server holds the token file at path (its flock). */
static int token_file_held(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return 0;
    int held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}

int dash_write_token(dash_server *d, const char *path, char *err, size_t errlen) {
    /* Another server's (a second `tuner serve` of the store): its file stays, and
     * this one's goes beside it, named by the port. A file no server holds (left by a
     * killed one) is replaced. */
    char *final = token_file_held(path) ? tn_xasprintf("%s.%d", path, d->port)
                                        : tn_xstrdup(path);
    char *tmp = tn_xasprintf("%s.%ld.tmp", final, (long)getpid());
    unlink(tmp);
    int rc = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        rc = tn_error(err, errlen, TN_EIO, "cannot write the dashboard token to %s: %s", tmp,
                      strerror(errno));
        goto done;
    }
    char line[40];
    int n = snprintf(line, sizeof line, "%s\n", d->token);
    /* held until dash_free, so that another server leaves the file alone */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || fchmod(fd, 0600) != 0 ||
        write(fd, line, (size_t)n) != n) {
        rc = tn_error(err, errlen, TN_EIO, "cannot write the dashboard token to %s: %s", tmp,
                      strerror(errno));
        close(fd);
        unlink(tmp);
        goto done;
    }
    if (rename(tmp, final) != 0) {
        rc = tn_error(err, errlen, TN_EIO, "cannot write the dashboard token to %s: %s", final,
                      strerror(errno));
        close(fd);
        unlink(tmp);
        goto done;
    }
    if (d->token_fd >= 0) close(d->token_fd);
    d->token_fd = fd;
    free(d->token_path);
    d->token_path = final;
    final = NULL;
done:
    free(final);
    free(tmp);
    return rc;
}

const char *dash_token_path(const dash_server *d) { return d->token_path; }

const char *dash_url(const dash_server *d) { return d->url; }
int dash_port(const dash_server *d) { return d->port; }
const char *dash_token(const dash_server *d) { return d->token; }

static void *thread_main(void *arg) {
    dash_server *d = arg;
    event_base_dispatch(d->base);
    return NULL;
}

int dash_start(dash_server *d, char *err, size_t errlen) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread inherits: no signal goes there */
    int e = pthread_create(&d->thread, NULL, thread_main, d);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) return tn_error(err, errlen, TN_EIO, "dashboard: cannot start a thread: %s", strerror(e));
    d->started = 1;
    return 0;
}

void dash_stop(dash_server *d) {
    if (!d || !d->started) return;
    uint64_t one = 1;
    ssize_t w = write(d->stop_fd, &one, sizeof one);
    (void)w; /* an eventfd write of 1 cannot fail short of overflow */
    pthread_join(d->thread, NULL);
    d->started = 0;
}

void dash_catch_signals(dash_server *d) {
    static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP}; /* a closed terminal too */
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
        if (d->signal_ev[i]) continue;
        if (stop_signals[i] == SIGHUP && !d->stop_on_hangup) continue; /* nohup */
        d->signal_ev[i] = evsignal_new(d->base, stop_signals[i], on_signal, d);
        if (!d->signal_ev[i]) tn_out_of_memory("the dashboard's signal events");
        evsignal_add(d->signal_ev[i], NULL);
    }
}

int dash_run(dash_server *d) {
    dash_catch_signals(d);
    event_base_dispatch(d->base);
    return 0;
}

void dash_free(dash_server *d) {
    if (!d) return;
    dash_stop(d);
    while (d->clients) client_end(d->clients);
    if (d->http) evhttp_free(d->http); /* closes every connection (on_conn_close) */
    while (d->watches) { /* left only if a stream never started */
        dash_watch *w = d->watches;
        d->watches = w->next;
        api_watch_clear(&w->w);
        free(w);
    }
    struct event *evs[] = {d->stop_ev,       d->poll_ev,      d->beat_ev,     d->adopt_ev,
                           d->signal_ev[0], d->signal_ev[1], d->signal_ev[2]};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i]) event_free(evs[i]);
    if (d->base) event_base_free(d->base);
    if (d->stop_fd >= 0) close(d->stop_fd);
    st_close(d->st);
    if (d->token_path) { /* removed only if it still holds our token */
        char buf[64] = "";
        FILE *f = fopen(d->token_path, "r");
        if (f) {
            if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
            fclose(f);
        }
        if (!strncmp(buf, d->token, sizeof d->token - 1)) unlink(d->token_path);
        free(d->token_path);
    }
    if (d->token_fd >= 0) close(d->token_fd); /* its lock with it */
    free(d->pending);
    free(d);
}
