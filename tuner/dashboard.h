/*
 * dashboard.h — the HTTP progress dashboard: the page and its JSON API (tuner/api.h),
 * served by the tuner itself on libevent's evhttp.
 *
 * `tuner run` / `resume` run it on a thread of its own, with its own event base and its
 * own store connection, so no amount of HTTP traffic can delay the study loop; `tuner
 * serve` runs it on the main thread. Either way it learns of changes from the store
 * alone (a poll every 250 ms of the studies' change sequences, store.h), so a `serve`
 * follows a study another process runs exactly as a `run` follows its own.
 *
 * Loopback by default; another address needs `public`, and then every /api/ request
 * needs the token. The token (128 random bits, hex) is made per server, written to a
 * 0600 file, and needed always to cancel a study. Limits: request headers 8 KiB, bodies
 * 4 KiB, 64 connections (refused ones get 503 and are closed at once), 32 event
 * streams, 10 s to send a whole request (TUNER_DASHBOARD_REQUEST_TIMEOUT overrides it;
 * streams have no deadline once started), 30 s for a client that stops reading. HTTP/1.1
 * requests need one Host header. Design and contract: docs/dashboard.md.
 */
#ifndef TN_TUNER_DASHBOARD_H
#define TN_TUNER_DASHBOARD_H

#include <stddef.h>
#include <stdio.h>

#define DASH_DEFAULT_ADDR "127.0.0.1"
#define DASH_DEFAULT_PORT 8470
#define DASH_PORT_TRIES 20 /* the default port taken: the next ones tried */

/* dash_new's "no port": the default port and the next DASH_PORT_TRIES were all taken. */
#define DASH_NO_PORT 1

typedef struct dash_server dash_server;

/* What dash_new needs. */
typedef struct dash_config {
    const char *listen;  /* "ADDR:PORT" as the user gave it (ADDR: IPv4, [IPv6] or
                            localhost; PORT 0: any free port), or NULL for the default
                            127.0.0.1:8470, where a taken port means trying the next */
    int public_access;   /* allow an address other than loopback (every /api/ request
                            then needs the token) */
    const char *db;      /* the store's path: the server opens its own connection */
    FILE *log;           /* where "port N is in use; using M" is said; NULL: nowhere */
    int stop_on_hangup;  /* dash_run: SIGHUP stops it as SIGTERM does (0: nohup) */
    int serve;           /* 1: `tuner serve`'s (--listen, --public; the server is the
                            command's point, so hints offer no "off"); 0: a study's
                            (--dashboard, --dashboard-public, or --dashboard=off) */
} dash_config;

/* Checks a listen address ("ADDR:PORT") without binding it, for `tuner serve` (serve
 * 1) or a study's dashboard (0: the hints name those flags). 0, or TN_EINVAL with a
 * message and a hint. */
int dash_check_address(const char *listen, int public_access, int serve, char *err,
                       size_t errlen);

/* Makes a server: binds the address (so a port in use is known at once), opens the
 * store, makes the token. Nothing is served before dash_start or dash_run. Returns 0
 * with *out yours (dash_free); TN_EINVAL for a usage error (a bad address, another
 * address than loopback without public_access, an explicit port in use), each with a
 * hint in err; DASH_NO_PORT; or another negative code (the store). */
int dash_new(const dash_config *c, dash_server **out, char *err, size_t errlen);

/* Writes the token to path (mode 0600, replacing what is there), or, when another
 * running server holds the file at path (its flock), to PATH.PORT beside it; the file
 * is locked while this server lives, and dash_free removes it if it still holds this
 * token. 0, or TN_EIO with a message. */
int dash_write_token(dash_server *d, const char *path, char *err, size_t errlen);
/* The token file dash_write_token wrote, or NULL. */
const char *dash_token_path(const dash_server *d);

/* The page's address with the token: "http://127.0.0.1:8470/#token=HEX". */
const char *dash_url(const dash_server *d);
/* The port bound. */
int dash_port(const dash_server *d);
/* The token (32 hex digits). */
const char *dash_token(const dash_server *d);

/* Serves on a new thread (every signal blocked there, so they reach the caller's
 * loop). 0, or TN_EIO with a message. */
int dash_start(dash_server *d, char *err, size_t errlen);
/* Stops the thread started by dash_start: a last look at the store is sent to the
 * event streams, then every connection is closed. Does nothing when not started. */
void dash_stop(dash_server *d);

/* Takes SIGINT, SIGTERM and SIGHUP for dash_run (a stop, its token file removed), from
 * now on: before the address is printed, so that a signal sent as soon as it is read is
 * not the default's (death, the file left behind). dash_run does it if not done. */
void dash_catch_signals(dash_server *d);
/* Serves on the calling thread until SIGINT, SIGTERM or SIGHUP. Returns 0. */
int dash_run(dash_server *d);

/* Stops it (if started), closes everything, removes the token file. Accepts NULL. */
void dash_free(dash_server *d);

/* ---- the page's files, embedded at build time (tuner/embed.cmake) ---- */

typedef struct dash_asset {
    const char *name;            /* file name in tuner/web/ ("index.html") */
    const unsigned char *data;   /* its bytes */
    size_t len;
} dash_asset;

extern const dash_asset dash_assets[];
extern const size_t dash_nassets;

#endif
