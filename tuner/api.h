/*
 * api.h — the dashboard's JSON API, apart from HTTP: what each endpoint answers, built
 * from the store, plus the pure pieces the server needs (routing, the SSE event text,
 * strict parsing of path segments and query values, reading the tail of a log).
 *
 * Nothing here knows libevent: a handler takes the already-parsed request (a study's
 * name or id, a trial number, the query values as given) and fills an api_reply with
 * the HTTP status and the JSON text, so the whole API can be unit-tested with a store
 * and no sockets (tests/tuner/test_dashboard.c). Every read of one reply runs in one
 * snapshot of the store (st_read). JSON is written by tn_buf_json: strings escaped for
 * JSON and, in addition, '<', '>' and '&' as \u003c, \u003e and \u0026, so a planted
 * "<script>" can never appear as markup in any response; numbers in their shortest
 * round-trip form. The contract (URLs, fields, codes): docs/dashboard.md.
 */
#ifndef TN_TUNER_API_H
#define TN_TUNER_API_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/text.h"
#include "tuner/store.h"

/* ---- replies ---- */

/* What an endpoint answers. */
typedef struct api_reply {
    int status;   /* HTTP status: 200, 202, 400, 404, 409, 500, ... */
    tn_buf body; /* the JSON text */
} api_reply;

/* Sets r to the error {"error": MESSAGE, "hint": HINT or null} with the status. */
void api_error(api_reply *r, int status, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void api_reply_clear(api_reply *r);

/* ---- routing ---- */

enum api_route_id {
    API_NOT_FOUND = 0, /* no such route (404) */
    API_BAD_PATH,      /* a path segment that is malformed or a traversal attempt (400) */
    API_STATIC,        /* a file of the page: name in r->asset */
    API_STUDIES,       /* GET  /api/studies */
    API_STUDY,         /* GET  /api/studies/{id} */
    API_TRIALS,        /* GET  /api/studies/{id}/trials */
    API_CURVES,        /* GET  /api/studies/{id}/curves */
    API_TRIAL,         /* GET  /api/studies/{id}/trials/{n} */
    API_LOG,           /* GET  /api/studies/{id}/trials/{n}/logs/{replica} */
    API_CANCEL,        /* POST /api/studies/{id}/cancel */
    API_EVENTS         /* GET  /api/events */
};

#define API_NAME_MAX 128 /* the longest study name (jobId) */

/* A request path, matched. */
typedef struct api_route {
    int id;                          /* enum api_route_id */
    char study[API_NAME_MAX + 1];    /* {id}: a study name or a numeric id ("" if none) */
    char trial[24];                  /* {n}, digits */
    char replica[48];                /* {replica}, checked by api_valid_replica */
    char asset[64];                  /* API_STATIC: the file name ("index.html" for /) */
    char why[256];                   /* API_BAD_PATH, API_NOT_FOUND: what was wrong */
} api_route;

/* Matches the path of a request (the raw path, without the query). Segments are
 * percent-decoded one by one; a decoded segment holding '/', a NUL byte or a bad
 * escape, or one that is "." or "..", makes the route API_BAD_PATH; a study segment
 * that cannot be a study (not letters, digits and '_', or too long) is API_NOT_FOUND;
 * a replica that is not `(chief|master|worker|ps|evaluator)-N` is API_BAD_PATH.
 * Files of the page are matched only by their exact raw name. Returns r->id. */
int api_route_parse(const char *path, api_route *r);
/* The methods a route answers, for the Allow header ("GET, HEAD" or "POST"). */
const char *api_route_allow(int id);
/* Whether name is a replica log name: (chief|master|worker|ps|evaluator)-DIGITS. */
int api_valid_replica(const char *name);
/* Whether s can name a study: letters, digits and '_' (a jobId, or a numeric id), at
 * most API_NAME_MAX. */
int api_valid_study_ref(const char *s);

/* ---- endpoints ---- */

/* Query values of GET /api/studies/{id}/trials, NULL when not given. */
typedef struct api_page_query {
    const char *offset, *limit, *sort, *state;
} api_page_query;

void api_studies(st_store *st, double now, api_reply *r);
void api_study(st_store *st, const char *id, double now, api_reply *r);
void api_trials(st_store *st, const char *id, const api_page_query *q, double now,
                api_reply *r);
void api_curves(st_store *st, const char *id, api_reply *r);
void api_trial(st_store *st, const char *id, const char *number, double now, api_reply *r);
/* The tail of JOB_DIR/N/logs/REPLICA.log; lines: the query value (NULL: 200). */
void api_log(st_store *st, const char *id, const char *number, const char *replica,
             const char *lines, api_reply *r);
void api_cancel(st_store *st, const char *id, api_reply *r);

/* ---- the live event stream ---- */

/* Where a client is in a study's change sequences (store.h). */
typedef struct api_cursor {
    int64_t trials;        /* the last trial change sent */
    int64_t measurements;  /* the last measurement sent */
} api_cursor;

/* A study the event stream follows: what the events need to know about it. */
typedef struct api_watch {
    int64_t id;           /* the study */
    char *name;           /* its name (yours, freed by api_watch_clear) */
    char *metric;         /* its hyperparameterMetricTag ("" when the spec does not parse) */
    api_cursor head;      /* the newest numbers in the store at the last api_watch_poll */
    int state;            /* the study's st_study_state and updated time at that poll
                             (state -1 before the first) */
    double updated;
    char *entry;          /* the study's list entry as JSON (the data of `study` events) */
    uint64_t version;     /* bumped whenever head, state or updated changed */
} api_watch;

/* Looks up the study `id` (name or number) and fills w with its head and entry.
 * Returns 0, or fills r with the error (404, 500) and returns -1. */
int api_watch_open(st_store *st, const char *id, api_watch *w, api_reply *r);
/* Re-reads the study's state and head; when something changed, rebuilds the entry and
 * bumps the version. Returns 0 with *gone (1 when the study is no longer in the store),
 * or a negative code. */
int api_watch_poll(st_store *st, api_watch *w, int *gone, char *err, size_t errlen);
void api_watch_clear(api_watch *w);

/* Appends to out the SSE events of what the study wrote after *cur (at most `limit`
 * trial changes and measurements in all), in order: `trial` events, then
 * `measurement` events; advances *cur. Each event has an `id:` ("T.M", the cursor
 * after it) for Last-Event-ID. Returns how many events were added, or a negative code. */
int api_sse_changes(st_store *st, const api_watch *w, api_cursor *cur, int64_t limit,
                    tn_buf *out, char *err, size_t errlen);
/* Appends the `study` event (w's entry) with the id of cur. */
void api_sse_study(const api_watch *w, const api_cursor *cur, tn_buf *out);
/* Parses a Last-Event-ID ("T.M"); 0, or -1 when it is not one. */
int api_cursor_parse(const char *text, api_cursor *cur);

/* ---- request framing ---- */

/* Where a request ends in what a connection sends, and whether its framing is one to
 * answer. evhttp 2.1 reads a body before the server sees its request and answers what
 * it dislikes there itself: a Content-Length over the limit has it read and drop that
 * many bytes before it answers 413 (for ever, for 10^22), a chunk size that is not a
 * number is 413. So the server scans each request itself first (dashboard.c holds the
 * bytes back from evhttp meanwhile) and answers those at once. The scan frames as evhttp
 * does: a body for every method but HEAD, TRACE and those evhttp does not know; chunked
 * when Transfer-Encoding is "chunked", else Content-Length bytes, else none; after the
 * last chunk, trailer lines up to an empty one. Where evhttp is lax it is strict, so a
 * request it passes on is framed the same by both: one Content-Length, all digits; no
 * Transfer-Encoding but chunked, and not with Content-Length; no folded header lines; a
 * chunk size of hex digits, then the line's end or a space. */
enum api_frame_state {
    API_FRAME_MORE,    /* the request goes on */
    API_FRAME_WHOLE,   /* the request ended */
    API_FRAME_REFUSED  /* status and why say what is wrong; nothing more is taken */
};

typedef struct api_frame {
    int state;             /* enum api_frame_state */
    int status;            /* API_FRAME_REFUSED: 400, 413 (body), 417 (an Expect other
                              than 100-continue), 431 (headers), 501 (an unknown method)
                              or 505 (HTTP/2 or later) */
    char why[96];          /* API_FRAME_REFUSED: what was wrong */
    int head;              /* the method is HEAD (a reply has no body) */
    int expect_continue;   /* the headers are in, a body is to come, and the client
                              waits for "100 Continue" before it sends it */
    size_t leading;        /* bytes of empty lines before the request line (RFC 9112
                              2.2: ignored), not yet dropped: the reader drops them
                              from its buffer before evhttp reads it, and zeroes this */
    /* the scan's own */
    size_t max_head;       /* bytes of request line, headers and trailers (431 above) */
    size_t max_body;       /* bytes of body, and of chunk-size lines (413 above) */
    int part;              /* what is being read (request line, headers, body, ...) */
    size_t head_bytes;     /* of request line, headers and trailers so far */
    size_t framing;        /* of chunk-size lines so far */
    int64_t body;          /* body bytes announced (Content-Length) or chunked so far */
    int64_t left;          /* of the body or of the chunk being read */
    char line[128];        /* the line being read: its first bytes */
    size_t linelen;        /* its length so far (CR included) */
    char last;             /* its last byte */
    int colon;             /* it holds a ':' (anywhere: past the bytes kept too) */
    /* the request line, as evhttp splits it (frame_request_line): byte offsets in it */
    int64_t first_sp;      /* the first space (-1: none yet) */
    int64_t last_sp;       /* the last space with a byte other than a space after it */
    int64_t pending_sp;    /* the last space */
    size_t end;            /* one past the last byte other than a space (and CR) */
    char version[16];      /* the last run of such bytes (its first bytes) */
    size_t vlen;           /* its length */
    int connect;           /* the method is CONNECT (its target is an authority) */
    int no_body;           /* the method has none */
    int http11;            /* HTTP/1.1 or later */
    int expect;            /* the first Expect header: 0 none, 1 100-continue, 2 another */
    int ncl, nte;          /* Content-Length and Transfer-Encoding headers seen */
    int cl_bad;            /* a Content-Length that is not digits */
    int te_other;          /* a Transfer-Encoding other than chunked */
} api_frame;

/* Starts the scan of a request; max_head and max_body are the limits. */
void api_frame_init(api_frame *f, size_t max_head, size_t max_body);
/* Scans the next len bytes of the connection. Returns how many belong to the request:
 * all while it goes on (state API_FRAME_MORE), fewer once it ended (API_FRAME_WHOLE:
 * the request is every byte taken since api_frame_init but the empty lines before its
 * request line, which f->leading counts) or was refused (API_FRAME_REFUSED); none once
 * it is not API_FRAME_MORE. Empty lines before the request line count toward
 * max_head. */
size_t api_frame_scan(api_frame *f, const char *p, size_t len);
/* Once the request line is read: the request target's offset and length in the
 * request line (between the method's space and the version's), and whether the method is
 * CONNECT (evhttp parses its target as an authority). Returns 0 before that. */
int api_frame_target(const api_frame *f, size_t *off, size_t *len, int *connect);
/* Ends the scan with a refusal: state API_FRAME_REFUSED, the status and why (the gate's
 * own checks of a whole request use it too). */
void api_frame_refuse(api_frame *f, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- helpers, exposed for the tests ---- */

/* Parses a decimal integer in [min, max] (no sign, no spaces, no leading '+').
 * Returns 0, or -1. */
int api_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);
/* Reads at most `lines` last lines of the file at path, seeking from its end (never
 * more than 4 MiB is read): *out gets an array of *n cleaned strings (yours: free each
 * and the array), *truncated whether the file holds more before them. The file must be
 * a regular file and not a symbolic link. 0, TN_ENOENT, or TN_EIO with a message. */
int api_tail(const char *path, int64_t lines, char ***out, size_t *n, int *truncated,
             char *err, size_t errlen);

#endif
