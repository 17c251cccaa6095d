/*
 * test_dashboard.c — tests for the dashboard's pure parts and its store reads
 * (tuner/api.h, the dashboard section of tuner/store.h; docs/dashboard.md).
 *
 * Table-driven: routing and the strict parsing of path segments (traversal attempts
 * included), replica names, integers, Last-Event-IDs; request framing (where a request
 * ends, and every refusal: 400, 413, 431); JSON text (escaping of markup,
 * control characters and line separators; shortest numbers); UTF-8 cleaning; the tail
 * of a log (lines, partial first block, CRLF, no final newline, empty files, a file
 * larger than the read limit, symbolic links refused). Against a store: the migration
 * of a version 1 file (data kept, the same schema as a new file), the change sequences,
 * paging, sorting, filters, the best trial, cancelling, learning curves (the chief's
 * points preferred, a repeated step keeping the newest value), replicas derived from
 * events, and the event stream's text. The page's embedded files: each is served by its
 * own name, and every file index.html or a script names is embedded. The end-to-end
 * HTTP tests are tests/tuner/dashboard_api.py.
 */
#include "tuner/api.h"
#include "tuner/dashboard.h"
#include "tuner/store.h"

#include "common/jsonutil.h"
#include "common/status.h"
#include "common/text.h"

#include "tests/check.h"
#include "tests/testutil.h"
#include "tests/tuner/oldstore.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[PATH_LEN]; /* this run's folder */

/* ---------------------------------------------------------------------------------
 * Routing and parsing
 * --------------------------------------------------------------------------------- */

static void test_route_table(void) {
    static const struct {
        const char *path;
        int id;
        const char *study, *trial, *replica, *asset;
    } cases[] = {
        {"/", API_STATIC, "", "", "", "index.html"},
        {"/app.js", API_STATIC, "", "", "", "app.js"},
        {"/favicon.ico", API_STATIC, "", "", "", "favicon.ico"},
        {"/api/studies", API_STUDIES, "", "", "", ""},
        {"/api/studies/fashion_mlp", API_STUDY, "fashion_mlp", "", "", ""},
        {"/api/studies/12", API_STUDY, "12", "", "", ""},
        {"/api/studies/s/trials", API_TRIALS, "s", "", "", ""},
        {"/api/studies/s/curves", API_CURVES, "s", "", "", ""},
        {"/api/studies/s/cancel", API_CANCEL, "s", "", "", ""},
        {"/api/studies/s/trials/7", API_TRIAL, "s", "7", "", ""},
        {"/api/studies/s/trials/7/logs/chief-0", API_LOG, "s", "7", "chief-0", ""},
        {"/api/studies/s/trials/7/logs/evaluator-12", API_LOG, "s", "7", "evaluator-12", ""},
        {"/api/studies/%73/trials", API_TRIALS, "s", "", "", ""},  /* %73 is 's' */
        {"/api/events", API_EVENTS, "", "", "", ""},
        /* not found */
        {"/api", API_NOT_FOUND, "", "", "", ""},
        {"/api/", API_NOT_FOUND, "", "", "", ""},
        {"/api/studies/", API_NOT_FOUND, "", "", "", ""},
        {"/api/studies/s/", API_NOT_FOUND, "", "", "", ""},
        {"/api/studies/s/trials/x", API_NOT_FOUND, "s", "", "", ""},
        {"/api/studies/s/trials/-1", API_NOT_FOUND, "s", "", "", ""},
        {"/api/studies/bad-name", API_NOT_FOUND, "", "", "", ""},
        {"/api/studies/s/trials/1/logs", API_NOT_FOUND, "s", "1", "", ""},
        {"/api/nothing", API_NOT_FOUND, "", "", "", ""},
        {"/etc/passwd", API_NOT_FOUND, "", "", "", ""},
        {"/.dashboard-token", API_NOT_FOUND, "", "", "", ""},
        {"//app.js", API_NOT_FOUND, "", "", "", ""},
        {"/app.js/", API_NOT_FOUND, "", "", "", ""},
        {"/%2e%2e/etc/passwd", API_NOT_FOUND, "", "", "", ""},
        /* malformed or traversal: 400 */
        {"", API_BAD_PATH, "", "", "", ""},
        {"*", API_BAD_PATH, "", "", "", ""},           /* not a path: GET * HTTP/1.1 */
        {" /", API_BAD_PATH, "", "", "", ""},          /* GET  / HTTP/1.1 (two spaces) */
        {"/api/studies/..", API_BAD_PATH, "", "", "", ""},
        {"/api/studies/%2e%2e/trials", API_BAD_PATH, "", "", "", ""},
        {"/api/studies/.", API_BAD_PATH, "", "", "", ""},
        {"/api/studies/a%2fb", API_BAD_PATH, "", "", "", ""},
        {"/api/studies/a%00", API_BAD_PATH, "", "", "", ""},
        {"/api/studies/a%zz", API_BAD_PATH, "", "", "", ""},
        {"/api/studies/a%4", API_BAD_PATH, "", "", "", ""},
        {"/api/studies/s/trials/1/logs/..%2f..%2fetc%2fpasswd", API_BAD_PATH, "", "", "", ""},
        {"/api/studies/s/trials/1/logs/chief-0.log", API_BAD_PATH, "", "", "", ""},
        {"/api/studies/s/trials/1/logs/chief", API_BAD_PATH, "", "", "", ""},
        {"/api/studies/s/trials/1/logs/%2Fetc%2Fpasswd", API_BAD_PATH, "", "", "", ""},
        {"/api/studies/s/trials/1/logs/..", API_BAD_PATH, "", "", "", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        api_route r;
        int id = api_route_parse(cases[i].path, &r);
        CHECK_MSG(id == cases[i].id && r.id == id, "%s: route %d, expected %d", cases[i].path,
                  id, cases[i].id);
        if (id != cases[i].id || id == API_NOT_FOUND || id == API_BAD_PATH) continue;
        CHECK_MSG(!strcmp(r.study, cases[i].study), "%s: study '%s'", cases[i].path, r.study);
        CHECK_MSG(!strcmp(r.trial, cases[i].trial), "%s: trial '%s'", cases[i].path, r.trial);
        CHECK_MSG(!strcmp(r.replica, cases[i].replica), "%s: replica '%s'", cases[i].path,
                  r.replica);
        CHECK_MSG(!strcmp(r.asset, cases[i].asset), "%s: asset '%s'", cases[i].path, r.asset);
    }
    CHECK(!strcmp(api_route_allow(API_CANCEL), "POST"));
    CHECK(!strcmp(api_route_allow(API_TRIALS), "GET, HEAD"));
    /* a study segment at the limit is a study; one past it is not */
    char path[400], name[API_NAME_MAX + 2];
    memset(name, 'a', API_NAME_MAX);
    name[API_NAME_MAX] = '\0';
    snprintf(path, sizeof path, "/api/studies/%s", name);
    api_route r;
    CHECK_INT_EQ(api_route_parse(path, &r), API_STUDY);
    snprintf(path, sizeof path, "/api/studies/%sa", name);
    CHECK_INT_EQ(api_route_parse(path, &r), API_NOT_FOUND);
}

/* The embedded file whose name is the n bytes at s, or NULL. */
static const dash_asset *asset_named(const char *s, size_t n) {
    for (size_t i = 0; i < dash_nassets; i++)
        if (strlen(dash_assets[i].name) == n && !memcmp(dash_assets[i].name, s, n))
            return &dash_assets[i];
    return NULL;
}

/* Checks each reference in a's text that follows `key` and runs to `end`: it must be
 * prefix + the name of an embedded file, which is then marked in reached[]. "data:"
 * and "#..." references are not files. Returns how many it saw. */
static int check_refs(const dash_asset *a, const char *key, const char *prefix, char end,
                      int *reached) {
    const char *d = (const char *)a->data;
    size_t klen = strlen(key), plen = strlen(prefix);
    int n = 0;
    for (size_t i = 0; i + klen <= a->len; i++) {
        if (memcmp(d + i, key, klen) != 0) continue;
        size_t s = i + klen, e = s;
        while (e < a->len && d[e] != end && d[e] != '\n') e++;
        if ((e - s >= 5 && !memcmp(d + s, "data:", 5)) || (e > s && d[s] == '#')) continue;
        n++;
        int prefixed = e - s > plen && !memcmp(d + s, prefix, plen);
        CHECK_MSG(prefixed, "%s: '%.*s' is not %s<file>", a->name, (int)(e - s), d + s, prefix);
        if (!prefixed) continue;
        const dash_asset *t = asset_named(d + s + plen, e - s - plen);
        CHECK_MSG(t, "%s names '%.*s': no such file in tuner/web/ (only files directly in it "
                  "are embedded)", a->name, (int)(e - s), d + s);
        if (t) reached[t - dash_assets] = 1;
    }
    return n;
}

/* The page's files (tuner/web/, embedded by tuner/embed.cmake). The server looks a path
 * up by exact name, so each file must route to its own name; and every file the page
 * loads (index.html's src= and href=, each module's imports) must be there, or the
 * page breaks in the browser only: embed.cmake skips folders and unusual names. */
static void test_page_files(void) {
    int reached[64] = {0};
    CHECK(dash_nassets > 0 && dash_nassets <= sizeof reached / sizeof reached[0]);
    if (dash_nassets == 0 || dash_nassets > sizeof reached / sizeof reached[0]) return;
    const dash_asset *page = asset_named("index.html", strlen("index.html"));
    CHECK(page != NULL);
    if (page) reached[page - dash_assets] = 1;
    for (size_t i = 0; i < dash_nassets; i++) {
        const dash_asset *a = &dash_assets[i];
        char path[80];
        api_route r;
        snprintf(path, sizeof path, "/%s", a->name);
        CHECK_MSG(api_route_parse(path, &r) == API_STATIC && !strcmp(r.asset, a->name),
                  "%s does not route to %s", path, a->name);
    }
    /* from index.html, what it loads, then what each module loaded imports */
    int scanned[64] = {0};
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < dash_nassets; i++) {
            const dash_asset *a = &dash_assets[i];
            size_t len = strlen(a->name);
            if (!reached[i] || scanned[i]) continue;
            scanned[i] = again = 1;
            if (a == page) {
                int n = check_refs(a, "src=\"", "", '"', reached);
                n += check_refs(a, "href=\"", "", '"', reached);
                CHECK(n >= 2); /* app.css and app.js at least */
            } else if (len > 3 && !strcmp(a->name + len - 3, ".js")) {
                check_refs(a, "from '", "./", '\'', reached);
                check_refs(a, "from \"", "./", '"', reached);
            }
        }
    }
    for (size_t i = 0; i < dash_nassets; i++)
        CHECK_MSG(reached[i], "%s is embedded but the page never loads it", dash_assets[i].name);
}

static void test_replica_names(void) {
    static const struct {
        const char *name;
        int ok;
    } cases[] = {{"chief-0", 1},  {"master-0", 1},    {"worker-12", 1}, {"ps-3", 1},
                 {"evaluator-0", 1}, {"chief", 0},   {"chief-", 0},    {"chief-x", 0},
                 {"chief-0x", 0}, {"chief:0", 0},     {"Chief-0", 0},   {"../chief-0", 0},
                 {"chief-0/..", 0}, {"workers-1", 0}, {"", 0},          {"chief-1234567890", 0},
                 {"chief-00", 0}, {"worker-01", 0},   {"worker-10", 1}}; /* one spelling */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_MSG(api_valid_replica(cases[i].name) == cases[i].ok, "'%s'", cases[i].name);
}

static void test_parse_int(void) {
    int64_t v = -1;
    CHECK(api_parse_int("0", 0, 10, &v) == 0 && v == 0);
    CHECK(api_parse_int("1000", 0, 1000, &v) == 0 && v == 1000);
    CHECK(api_parse_int("1001", 0, 1000, &v) != 0);
    CHECK(api_parse_int("-1", 0, 10, &v) != 0);
    CHECK(api_parse_int("+1", 0, 10, &v) != 0);
    CHECK(api_parse_int(" 1", 0, 10, &v) != 0);
    CHECK(api_parse_int("1 ", 0, 10, &v) != 0);
    CHECK(api_parse_int("", 0, 10, &v) != 0);
    CHECK(api_parse_int(NULL, 0, 10, &v) != 0);
    CHECK(api_parse_int("99999999999999999999999", 0, INT64_MAX, &v) != 0);
    CHECK(api_parse_int("9223372036854775807", 0, INT64_MAX, &v) == 0 && v == INT64_MAX);
    api_cursor c = {0, 0};
    CHECK(api_cursor_parse("12.345", &c) == 0 && c.trials == 12 && c.measurements == 345);
    CHECK(api_cursor_parse("12", &c) != 0);
    CHECK(api_cursor_parse("a.1", &c) != 0);
    CHECK(api_cursor_parse("1.-1", &c) != 0);
    CHECK(api_cursor_parse(NULL, &c) != 0);
}

/* Request framing (api_frame_scan), with small limits: 128 bytes of head, 16 of body.
 * Each request is scanned whole and again a byte at a time: the same outcome. */
static void test_request_framing(void) {
    enum { MORE = API_FRAME_MORE, WHOLE = API_FRAME_WHOLE, NO = API_FRAME_REFUSED };
    static const struct {
        const char *text;
        int state, status; /* the outcome */
        int taken;         /* bytes of the request (-1: all of text) */
        int expect_continue;
    } cases[] = {
        {"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /next", WHOLE, 0, 27, 0},
        {"GET / HTTP/1.1\nHost: a\n\nGET", WHOLE, 0, 24, 0},      /* bare LF, as evhttp */
        {"GET / HTTP/1.1\r\nHost", MORE, 0, -1, 0},
        {"POST /c HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET", WHOLE, 0, 42, 0},
        {"POST /c HTTP/1.1\r\nContent-Length: 16\r\n\r\n0123456789abcdef", WHOLE, 0, -1, 0},
        {"POST /c HTTP/1.1\r\nContent-Length: 0\r\n\r\nGET", WHOLE, 0, 39, 0},
        {"POST /c HTTP/1.1\r\ncontent-length:  2 \r\n\r\nab", WHOLE, 0, -1, 0},
        {"POST /c HTTP/1.1\r\nContent-Length: 17\r\n\r\n", NO, 413, -1, 0},
        {"POST /c HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", NO, 413, -1, 0},
        {"POST /c HTTP/1.1\r\nContent-Length: abc\r\n\r\n", NO, 400, -1, 0},
        {"POST /c HTTP/1.1\r\nContent-Length: -1\r\n\r\n", NO, 400, -1, 0},
        {"POST /c HTTP/1.1\r\nContent-Length: +1\r\n\r\n", NO, 400, -1, 0},
        {"POST /c HTTP/1.1\r\nContent-Length:\r\n\r\n", NO, 400, -1, 0},
        {"POST /c HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", NO, 400, -1, 0},
        {"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET",
         WHOLE, 0, 61, 0},
        {"POST /c HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n3 x\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
         WHOLE, 0, -1, 0},                                         /* a space ends a size */
        {"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzzzz\r\n", NO, 400, -1, 0},
        {"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\n", NO, 400, -1, 0},
        {"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0x3\r\n", NO, 400, -1, 0},
        {"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n", NO, 413, -1, 0},
        {"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n7\r\n",
         NO, 413, -1, 0},
        {"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000001\r\n",
         NO, 413, -1, 0},                                          /* the size lines' limit */
        {"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n", NO, 400, -1, 0},
        {"POST /c HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", NO, 400, -1, 0},
        {"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n", NO, 400, -1, 0},
        {"GET / HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n", NO, 400, -1, 0},
        {"GET / HTTP/1.1\r\nno colon\r\n\r\n", NO, 400, -1, 0},
        {"GET /\r\n\r\n", NO, 400, -1, 0},
        {"\r\nGET / HTTP/1.1\r\n\r\nGET", WHOLE, 0, 20, 0}, /* empty lines before it */
        {"\r\n\n\r\nGET / HTTP/1.1\r\n\r\n", WHOLE, 0, -1, 0},
        {"\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n"
         "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n"
         "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n"
         "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n"
         "\r\nGET / HTTP/1.1\r\n\r\n", NO, 431, -1, 0},    /* they count toward the head */
        {"\r\rGET / HTTP/1.1\r\n\r\n", NO, 400, -1, 0},
        {" \r\nGET / HTTP/1.1\r\n\r\n", NO, 400, -1, 0},  /* not empty: a space */
        {"GET / HTTP/1.1\r\nX-Long: 01234567890123456789012345678901234567890123456789"
         "01234567890123456789012345678901234567890123456789"
         "01234567890123456789012345678901234567890123456789", NO, 431, -1, 0},
        {"HEAD / HTTP/1.1\r\nContent-Length: 100\r\n\r\nGET", WHOLE, 0, 40, 0}, /* no body */
        {"TRACE / HTTP/1.1\r\nContent-Length: 1\r\n\r\nGET", WHOLE, 0, 39, 0},
        {"POST /c HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n", MORE, 0, -1, 1},
        {"POST /c HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n", MORE, 0, -1, 0},
        {"POST /c HTTP/1.1\r\nExpect: 100-continue\r\n\r\n", WHOLE, 0, -1, 0},
        /* what evhttp would answer with its own page: the gate answers it instead */
        {"BREW / HTTP/1.1\r\n\r\n", NO, 501, -1, 0},
        {"get / HTTP/1.1\r\n\r\n", NO, 501, -1, 0},                /* case-sensitive */
        {"GET / HTTP/x.y\r\n\r\n", NO, 400, -1, 0},
        {"GET / FOO/1.1\r\n\r\n", NO, 400, -1, 0},
        {"GET / HTTP/1.\r\n\r\n", NO, 400, -1, 0},
        {"GET / HTTP/1.1x\r\n\r\n", NO, 400, -1, 0},
        {"GET / HTTP/2.0\r\n\r\n", NO, 505, -1, 0},
        {"GET / HTTP/1.1\r\nX-A: a\rb\r\n\r\n", NO, 400, -1, 0},      /* a bare CR */
        {"GET /a\rb HTTP/1.1\r\n\r\n", NO, 400, -1, 0},
        {"GET / HTTP/1.1\r\r\n\r\n", NO, 400, -1, 0},
        {"GET / HTTP/1.1 \r\nHost: a\r\n\r\n", WHOLE, 0, -1, 0},     /* as evhttp */
        {"GET / HTTP/0.9\r\n\r\n", NO, 505, -1, 0}, /* evhttp would echo these */
        {"GET / HTTP/1.2\r\n\r\n", NO, 505, -1, 0},
        {"GET / HTTP/1.10\r\n\r\n", NO, 505, -1, 0},
        {"GET / HTTP/01.1\r\n\r\n", NO, 400, -1, 0},
        {"GET / HTTP/1.01\r\n\r\n", NO, 400, -1, 0},
        {"GET / HTTP/1.0\r\n\r\n", WHOLE, 0, -1, 0},
        {"GET / HTTP/1.1\r\nHost : evil\r\n\r\n", NO, 400, -1, 0}, /* header names */
        {"GET / HTTP/1.1\r\n: x\r\n\r\n", NO, 400, -1, 0},
        {"GET / HTTP/1.1\r\nX(y): x\r\n\r\n", NO, 400, -1, 0},
        {"GET / HTTP/1.1\r\nX-Ok_1.a~: x\r\n\r\n", WHOLE, 0, -1, 0},
        {"POST /c HTTP/1.1\r\nExpect: foo\r\nContent-Length: 3\r\n\r\n", NO, 417, -1, 0},
        {"POST /c HTTP/1.1\r\nExpect: foo\r\nContent-Length: 17\r\n\r\n", NO, 417, -1, 0},
        {"POST /c HTTP/1.1\r\nExpect: 100-continue\r\nExpect: foo\r\nContent-Length: 3\r\n"
         "\r\n", MORE, 0, -1, 1},                                 /* the first one counts */
        {"POST /c HTTP/1.0\r\nExpect: foo\r\nContent-Length: 3\r\n\r\nabc", WHOLE, 0, -1, 0},
        {"POST /c HTTP/1.1\r\nExpect: foo\r\n\r\n", WHOLE, 0, -1, 0},        /* no body */
        {"POST /c HTTP/1.1\r\nExpect:\t100-continue\r\nContent-Length: 3\r\n\r\n", NO, 417,
         -1, 0},                             /* evhttp keeps the tab: not 100-continue */
        /* the request line split as evhttp 2.1.12 splits it */
        {"POST  HTTP/1.1\r\n\r\n", NO, 400, -1, 0},                   /* an empty target */
        {"GET / HTTP/1\r\n\r\n", NO, 400, -1, 0},                      /* under 14 bytes */
        {"GET / HTTP/1.1\t\r\n\r\n", NO, 400, -1, 0},     /* a tab is not stripped */
        {"GET / HTTP/1.1   \r\nHost: a\r\n\r\n", WHOLE, 0, -1, 0},  /* spaces are */
        {"GET /a b HTTP/1.1\r\n\r\n", WHOLE, 0, -1, 0},          /* the target "/a b" */
        {"GET   HTTP/1.1\r\n\r\n", WHOLE, 0, -1, 0},               /* the target " " */
        {" GET / HTTP/1.1\r\n\r\n", NO, 501, -1, 0},             /* the method "" */
        {"POST /c HTTP/1.1\r\nContent-Length: 3\r\n\r\na\rb", WHOLE, 0, -1, 0}, /* body */
        {"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\na\rb\r\n0\r\n\r\n",
         WHOLE, 0, -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *t = cases[i].text;
        size_t len = strlen(t), want = cases[i].taken < 0 ? len : (size_t)cases[i].taken;
        api_frame f, g;
        api_frame_init(&f, 128, 16);
        size_t took = api_frame_scan(&f, t, len);
        api_frame_init(&g, 128, 16);
        size_t one = 0;
        while (one < len && g.state == API_FRAME_MORE) one += api_frame_scan(&g, t + one, 1);
        CHECK_MSG(f.state == cases[i].state && f.status == cases[i].status &&
                  f.expect_continue == cases[i].expect_continue, "case %zu: state %d status %d "
                  "continue %d (%s)", i, f.state, f.status, f.expect_continue, f.why);
        CHECK_MSG(f.state == API_FRAME_REFUSED || took == want, "case %zu: took %zu of %zu", i,
                  took, want);
        CHECK_MSG(g.state == f.state && g.status == f.status && (f.state != API_FRAME_WHOLE ||
                  one == took), "case %zu: a byte at a time: state %d status %d took %zu", i,
                  g.state, g.status, one);
        CHECK_MSG(f.state != API_FRAME_REFUSED || f.why[0], "case %zu: no reason", i);
    }
    api_frame f;
    api_frame_init(&f, 128, 16);
    CHECK(api_frame_scan(&f, "HEAD / HTTP/1.1\r\n\r\n", 19) == 19 && f.head);
    CHECK_INT_EQ((long)f.leading, 0);
    api_frame_init(&f, 128, 16); /* the empty lines before the request line, to drop */
    CHECK(api_frame_scan(&f, "\r\n\nHEAD / HTTP/1.1\r\n\r\n", 22) == 22 && f.head);
    CHECK_INT_EQ((long)f.leading, 3);
    size_t toff = 0, tlen = 0;
    int tconnect = 1; /* the target's offset: in the request line */
    CHECK(api_frame_target(&f, &toff, &tlen, &tconnect) && toff == 5 && tlen == 1 && !tconnect);
    /* Lines longer than the scan keeps (f.line, 128 bytes): a request line's version is
     * still read (HTTP/1.1 waits for 100 Continue, HTTP/1.0 does not), and a header line
     * without a colon is refused wherever it would have had one. */
    char text[1024], pad[213];
    memset(pad, 'a', 212);
    pad[212] = '\0';
    /* the version at each place of the ring that keeps the line's last bytes, after CR
     * LF and after a bare LF, scanned whole and a byte at a time */
    for (int v = 0; v < 2; v++) {
        for (int shift = 0; shift < 12; shift++) {
            for (int crlf = 0; crlf < 2; crlf++) {
                snprintf(text, sizeof text, "POST /cancel?%s HTTP/1.%d%s\nExpect: "
                         "100-continue\r\nContent-Length: 1\r\n\r\n", pad + shift, 1 - v,
                         crlf ? "\r" : "");
                api_frame g;
                api_frame_init(&f, 1024, 16);
                api_frame_scan(&f, text, strlen(text));
                api_frame_init(&g, 1024, 16);
                for (size_t k = 0; text[k]; k++) api_frame_scan(&g, text + k, 1);
                CHECK_MSG(f.state == API_FRAME_MORE && f.expect_continue == !v &&
                          g.state == API_FRAME_MORE && g.expect_continue == !v,
                          "HTTP/1.%d, shift %d, %s", 1 - v, shift, crlf ? "CR LF" : "LF");
            }
        }
    }
    /* lines longer than the scan keeps, each around the 212-byte pad, scanned whole and
     * a byte at a time: the version is the line's last run of bytes other than spaces,
     * and a header line without a colon is refused wherever it would have had one */
    static const struct {
        const char *before, *after;
        int state, status;
    } longs[] = {
        {"GET /?", " xxxHTTP/1.1\r\n\r\n", NO, 400},
        {"GET /?", " HTTP/1.1    \r\n\r\n", WHOLE, 0},
        {"GET /?", " HTTP/9.9\r\n\r\n", NO, 505},
        {"GET /?", " HTTP/1.1.1\r\n\r\n", NO, 400},
        {"GET / HTTP/1.1\r\nX", "\r\n\r\n", NO, 400},
        {"GET / HTTP/1.1\r\nX", ": 1\r\n\r\n", WHOLE, 0},
    };
    for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++) {
        snprintf(text, sizeof text, "%s%s%s", longs[i].before, pad, longs[i].after);
        size_t len = strlen(text), one = 0;
        api_frame g;
        api_frame_init(&f, 1024, 16);
        size_t took = api_frame_scan(&f, text, len);
        api_frame_init(&g, 1024, 16);
        while (one < len && g.state == API_FRAME_MORE) one += api_frame_scan(&g, text + one, 1);
        CHECK_MSG(f.state == longs[i].state && f.status == longs[i].status &&
                  g.state == f.state && g.status == f.status &&
                  (f.state != WHOLE || (took == len && one == len)),
                  "long line %zu: state %d status %d (%s), a byte at a time %d %d", i, f.state,
                  f.status, f.why, g.state, g.status);
    }
    /* a NUL byte in a header line (strlen would stop at it) */
    static const char nul[] = "GET / HTTP/1.1\r\nX\0A: 1\r\n\r\n";
    api_frame_init(&f, 1024, 16);
    api_frame_scan(&f, nul, sizeof nul - 1);
    CHECK_MSG(f.state == API_FRAME_REFUSED && f.status == 400 && strstr(f.why, "NUL"),
              "NUL: %d %d %s", f.state, f.status, f.why);
    /* the target's place, for the gate's URI check: between the method's space and the
     * version's; none before the line is read */
    {
        size_t off = 0, len = 0;
        int connect = -1;
        api_frame_init(&f, 1024, 16);
        api_frame_scan(&f, "GET /a b?c HTTP/1.1", 19);
        CHECK(!api_frame_target(&f, &off, &len, &connect));
        api_frame_scan(&f, "  \r\n", 4);
        CHECK_MSG(api_frame_target(&f, &off, &len, &connect) && off == 4 && len == 6 &&
                  connect == 0, "%zu %zu %d", off, len, connect);
        api_frame_init(&f, 1024, 16);
        api_frame_scan(&f, "CONNECT a:1 HTTP/1.1\r\n", 22);
        CHECK_MSG(api_frame_target(&f, &off, &len, &connect) && off == 8 && len == 3 &&
                  connect == 1, "%zu %zu %d", off, len, connect);
    }
    /* an unknown method is named only when it is short and plain */
    api_frame_init(&f, 1024, 16);
    api_frame_scan(&f, "BREW / HTTP/1.1\r\n", 17);
    CHECK_MSG(strstr(f.why, "BREW") != NULL, "%s", f.why);
    api_frame_init(&f, 1024, 16);
    api_frame_scan(&f, "<b>x</b> / HTTP/1.1\r\n", 21);
    CHECK_MSG(f.status == 501 && strchr(f.why, '<') == NULL, "%d %s", f.status, f.why);
}

/* ---------------------------------------------------------------------------------
 * JSON text and UTF-8
 * --------------------------------------------------------------------------------- */

static void test_json_text(void) {
    static const struct {
        const char *in;
        const char *out;
    } cases[] = {
        {"plain", "\"plain\""},
        {"<script>alert(1)</script>", "\"\\u003cscript\\u003ealert(1)\\u003c/script\\u003e\""},
        {"a&b", "\"a\\u0026b\""},
        {"q\"b\\", "\"q\\\"b\\\\\""},
        {"l1\nl2\r\t", "\"l1\\nl2\\r\\t\""},
        {"\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\""},
        {"line\xe2\x80\xa8sep\xe2\x80\xa9", "\"line\\u2028sep\\u2029\""},
        {"caf\xc3\xa9", "\"caf\xc3\xa9\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tn_buf b = {0};
        tn_json_write_string(&b, cases[i].in, strlen(cases[i].in), TN_JSON_HTML_SAFE);
        CHECK_MSG(b.data && !strcmp(b.data, cases[i].out), "%s -> %s, expected %s", cases[i].in,
                  b.data, cases[i].out);
        /* and it reads back as the same string */
        json_t *back = b.data ? json_loads(b.data, JSON_DECODE_ANY, NULL) : NULL;
        CHECK_MSG(json_is_string(back) && !strcmp(json_string_value(back), cases[i].in),
                  "%s does not read back", cases[i].out);
        json_decref(back);
        tn_buf_clear(&b);
    }
    json_t *v = json_pack("{sfsfsfsIsnsbs[is]}", "tenth", 0.1, "tiny", 1e-300, "big", 123456789.0,
                          "int", (json_int_t)-42, "null", "yes", 1, "list", 1, "x");
    tn_buf b = {0};
    tn_json_write(&b, v, -1, TN_JSON_HTML_SAFE);
    CHECK_MSG(b.data && !strcmp(b.data, "{\"tenth\":0.1,\"tiny\":1e-300,\"big\":123456789,"
                                        "\"int\":-42,\"null\":null,\"yes\":true,"
                                        "\"list\":[1,\"x\"]}"),
              "%s", b.data);
    tn_buf_clear(&b);
    json_decref(v);
    /* numbers: the shortest round trip, as tn_format_double, on random bit patterns */
    uint64_t state = 42;
    int same = 1;
    for (int i = 0; i < 20000 && same; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        double d;
        uint64_t bits = state ^ (state >> 29);
        memcpy(&d, &bits, sizeof d);
        if (i % 3 == 0) d = (double)(state >> 11) / 9007199254740992.0; /* in [0, 1) */
        if (i % 3 == 1) d = round(d * 1e6) / 1e6;
        if (!isfinite(d)) continue;
        char want[40];
        tn_format_double(d, want, sizeof want);
        json_t *real = json_real(d);
        tn_json_write(&b, real, -1, TN_JSON_HTML_SAFE);
        json_decref(real);
        same = b.data && !strcmp(b.data, want);
        CHECK_MSG(same, "%.17g: %s, expected %s", d, b.data, want);
        b.len = 0;
    }
    tn_buf_clear(&b);
    api_reply r = {0};
    api_error(&r, 404, "a <hint>", "no study named %s", "x\xff");
    CHECK_INT_EQ(r.status, 404);
    CHECK_MSG(r.body.data && !strcmp(r.body.data, "{\"error\":\"no study named x\xef\xbf\xbd\","
                                                  "\"hint\":\"a \\u003chint\\u003e\"}"),
              "%s", r.body.data);
    api_reply_clear(&r);
}

static void test_utf8_clean(void) {
    static const struct {
        const char *in;
        size_t len;
        const char *out;
    } cases[] = {
        {"ascii", 5, "ascii"},
        {"\xc3\xa9", 2, "\xc3\xa9"},                        /* é */
        {"\xe2\x82\xac", 3, "\xe2\x82\xac"},                /* € */
        {"\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80"},        /* an emoji */
        {"\xff", 1, "\xef\xbf\xbd"},                        /* never valid */
        {"a\xc3", 2, "a\xef\xbf\xbd"},                      /* cut short */
        {"\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd"},        /* overlong '/' */
        {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* a surrogate */
        {"\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* > U+10FFFF */
        {"a\0b", 3, "a\0b"},                                /* NUL kept (JSON escapes it) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = 0;
        char *got = tn_utf8_clean(cases[i].in, cases[i].len, &len);
        size_t want = cases[i].len == 3 && cases[i].in[1] == '\0' ? 3 : strlen(cases[i].out);
        CHECK_MSG(len == want && !memcmp(got, cases[i].out, want), "case %zu: got %zu bytes", i,
                  len);
        free(got);
    }
}

/* ---------------------------------------------------------------------------------
 * Log tails
 * --------------------------------------------------------------------------------- */

static void write_file(const char *path, const char *data, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(data, 1, len, f) == len);
    fclose(f);
}

/* api_tail of path, joined with '|' into out. Returns its status. */
static int tail_joined(const char *path, int64_t lines, char *out, size_t outlen, int *trunc) {
    char **list = NULL, err[512] = "";
    size_t n = 0;
    int rc = api_tail(path, lines, &list, &n, trunc, err, sizeof err);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(out);
        snprintf(out + used, outlen - used, "%s%s", i ? "|" : "", list[i]);
        free(list[i]);
    }
    free(list);
    return rc;
}

static void test_tail(void) {
    char path[PATH_LEN], got[4096];
    int trunc = -1;
    fmt_path(path, "%s/tail.log", tmpdir);
    static const struct {
        const char *data;
        int64_t lines;
        const char *want;
        int truncated;
    } cases[] = {
        {"a\nb\nc\n", 2, "b|c", 1},
        {"a\nb\nc\n", 3, "a|b|c", 0},
        {"a\nb\nc\n", 10, "a|b|c", 0},
        {"a\nb\nc", 2, "b|c", 1},           /* no final newline */
        {"a\r\nb\r\n", 5, "a|b", 0},        /* CRLF */
        {"\n\n", 5, "|", 0},                /* two empty lines */
        {"only", 1, "only", 0},
        {"x\xffy\n", 1, "x\xef\xbf\xbdy", 0},
        {"", 5, "", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_file(path, cases[i].data, strlen(cases[i].data));
        int rc = tail_joined(path, cases[i].lines, got, sizeof got, &trunc);
        CHECK_MSG(rc == 0 && !strcmp(got, cases[i].want) && trunc == cases[i].truncated,
                  "case %zu: rc %d, '%s' (truncated %d), expected '%s' (%d)", i, rc, got, trunc,
                  cases[i].want, cases[i].truncated);
    }
    /* many blocks: lines crossing the 64 KiB block boundaries */
    size_t n = 200000, len = 0;
    char *big = tn_xmalloc(n * 12);
    for (size_t i = 0; i < n; i++) len += (size_t)sprintf(big + len, "line %zu\n", i);
    write_file(path, big, len);
    CHECK(tail_joined(path, 3, got, sizeof got, &trunc) == 0);
    CHECK_MSG(!strcmp(got, "line 199997|line 199998|line 199999") && trunc == 1, "%s", got);
    char **list = NULL, err[256];
    size_t k = 0;
    CHECK(api_tail(path, 5000, &list, &k, &trunc, err, sizeof err) == 0);
    CHECK(k == 5000 && list && !strcmp(list[0], "line 195000") && trunc == 1);
    for (size_t i = 0; i < k; i++) free(list[i]);
    free(list);
    free(big);
    /* a newest line longer than the read limit (4 MiB), after a short one: its end,
     * truncated (a progress bar's \r updates make such lines) */
    size_t huge = (4u << 20) + 100;
    big = tn_xmalloc(huge + 1);
    memcpy(big, "old\n", 4);
    memset(big + 4, 'z', huge - 4);
    big[huge - 1] = '\n';
    write_file(path, big, huge);
    CHECK(api_tail(path, 2, &list, &k, &trunc, err, sizeof err) == 0);
    CHECK_MSG(k == 1 && list && strlen(list[0]) == (4u << 20) - 1 && list[0][0] == 'z' &&
                  trunc == 1,
              "%zu lines, the first %zu bytes", k, k ? strlen(list[0]) : 0);
    for (size_t i = 0; i < k; i++) free(list[i]);
    free(list);
    /* cut inside a character: from the first whole one, with no U+FFFD for the cut */
    size_t euros = huge / 3; /* 4 MiB is 1 more than a multiple of 3: the window starts
                                on the last byte of a euro sign */
    for (size_t i = 0; i < euros; i++) memcpy(big + 3 * i, "\xe2\x82\xac", 3);
    write_file(path, big, 3 * euros);
    CHECK(api_tail(path, 1, &list, &k, &trunc, err, sizeof err) == 0);
    CHECK_MSG(k == 1 && list && strlen(list[0]) == (4u << 20) - 1 &&
                  !strncmp(list[0], "\xe2\x82\xac", 3) && !strstr(list[0], "\xef\xbf\xbd") &&
                  trunc == 1,
              "%zu lines, %zu bytes, starting %02x", k, k ? strlen(list[0]) : 0,
              k ? (unsigned char)list[0][0] : 0);
    for (size_t i = 0; i < k; i++) free(list[i]);
    free(list);
    free(big);
    /* symbolic links and missing files are refused */
    char link[PATH_LEN];
    fmt_path(link, "%s/link.log", tmpdir);
    write_file(path, "secret\n", 7);
    CHECK(symlink(path, link) == 0);
    CHECK_INT_EQ(tail_joined(link, 5, got, sizeof got, &trunc), TN_ENOENT);
    fmt_path(link, "%s/missing.log", tmpdir);
    CHECK_INT_EQ(tail_joined(link, 5, got, sizeof got, &trunc), TN_ENOENT);
    CHECK_INT_EQ(tail_joined(tmpdir, 5, got, sizeof got, &trunc), TN_ENOENT); /* a folder */
}

/* ---------------------------------------------------------------------------------
 * The store: migration and the dashboard's reads
 * --------------------------------------------------------------------------------- */

/* The schema of version 1, as the first tuner wrote it. */
static const char schema_v1[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE studies (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, spec TEXT NOT "
    "NULL, state TEXT NOT NULL, seed INTEGER NOT NULL, created REAL, updated REAL, error TEXT);"
    "CREATE TABLE trials (study_id INTEGER NOT NULL REFERENCES studies(id), number INTEGER NOT "
    "NULL, params TEXT NOT NULL, state TEXT NOT NULL, objective REAL, created REAL, started "
    "REAL, finished REAL, attempts INTEGER NOT NULL DEFAULT 0, restarts INTEGER NOT NULL "
    "DEFAULT 0, error TEXT, PRIMARY KEY (study_id, number)) WITHOUT ROWID;"
    "CREATE INDEX trials_by_state ON trials(study_id, state);"
    "CREATE TABLE measurements (study_id INTEGER NOT NULL, trial INTEGER NOT NULL, replica "
    "TEXT NOT NULL, step INTEGER NOT NULL, timestamp REAL NOT NULL, metrics TEXT NOT NULL, "
    "PRIMARY KEY (study_id, trial, replica, timestamp), FOREIGN KEY (study_id, trial) "
    "REFERENCES trials(study_id, number)) WITHOUT ROWID;"
    "CREATE TABLE events (id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL REFERENCES "
    "studies(id), trial INTEGER NOT NULL, time REAL NOT NULL, replica TEXT, kind TEXT NOT NULL, "
    "detail TEXT);"
    "CREATE INDEX events_by_trial ON events(study_id, trial, time);"
    "INSERT INTO meta (key, value) VALUES ('schema_version', '1');";

static const char spec_json[] =
    "{\"jobId\": \"s\", \"trainingInput\": {\"jobDir\": \"/nonexistent/s\", "
    "\"hyperparameters\": {\"goal\": \"MAXIMIZE\", \"hyperparameterMetricTag\": \"acc\", "
    "\"maxTrials\": 50, \"algorithm\": \"RANDOM_SEARCH\", \"params\": [{\"parameterName\": "
    "\"x\", \"type\": \"DOUBLE\", \"minValue\": 0, \"maxValue\": 1}]}}}";

/* The query plan of sql on the file: every row's detail, joined with ';'. */
static void query_plan(const char *path, const char *sql, char *buf, size_t len) {
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    buf[0] = '\0';
    char q[1024];
    snprintf(q, sizeof q, "EXPLAIN QUERY PLAN %s", sql);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            size_t used = strlen(buf);
            snprintf(buf + used, len - used, "%s;", (const char *)sqlite3_column_text(st, 3));
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Every table's columns (name, type, not null, default, key) and every index's columns,
 * as one text, to compare two files' schemas. */
static void schema_text(const char *path, char *buf, size_t len) {
    static const char sql[] =
        "SELECT group_concat(line, ';') FROM ("
        " SELECT m.name || '.' || p.name || ':' || p.type || ':' || p.\"notnull\" || ':' || "
        "  coalesce(p.dflt_value, '') || ':' || p.pk AS line "
        " FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' "
        " UNION ALL SELECT m.name || '(' || i.name || ')' FROM sqlite_master m, "
        "  pragma_index_info(m.name) i WHERE m.type = 'index' AND m.sql IS NOT NULL "
        " ORDER BY 1)";
    raw_text(path, sql, buf, len);
}

static void test_migration_from_v1(void) {
    int found;
    char path[PATH_LEN], fresh[PATH_LEN], err[512] = "";
    fmt_path(path, "%s/v1.db", tmpdir);
    fmt_path(fresh, "%s/v2.db", tmpdir);
    st_store *s = old_store_open(
        path, schema_v1,
        "INSERT INTO trials VALUES (1, 1, '{\"x\": 0.5}', 'SUCCEEDED', 0.75, 1, 1, 2, 1, 0, "
        "NULL);"
        "INSERT INTO measurements VALUES (1, 1, 'chief:0', 3, 1.5, '{\"acc\": 0.7}');"
        "INSERT INTO events VALUES (1, 1, 1, 1.2, 'chief:0', 'started', 'pid 1');");
    if (!s) return;
    char buf[4096], want[4096];
    st_trial t;
    CHECK(st_trial_get(s, 1, 1, &t, &found, err, sizeof err) == 0 && found && t.has_objective &&
          t.objective == 0.75 && t.changed == 0 && t.executor_job == NULL);
    st_trial_clear(&t);
    st_measurement *ms = NULL;
    size_t n = 0;
    CHECK(st_measurement_list(s, 1, 1, &ms, &n, err, sizeof err) == 0 && n == 1 && ms[0].step == 3);
    st_measurements_free(ms, n);
    /* new writes get sequence numbers after the old rows' 0 */
    int64_t number = 0, ct = -1, cm = -1;
    CHECK(st_trial_create(s, 1, "{\"x\": 0.1}", ST_TRIAL_RUNNING, &number, err, sizeof err) == 0);
    st_measurement m = {.step = 1, .replica = "chief:0", .metrics = "{\"acc\": 1}", .timestamp = 9};
    CHECK(st_measurement_add(s, 1, number, &m, err, sizeof err) == 0);
    CHECK(st_study_cursor(s, 1, &ct, &cm, err, sizeof err) == 0 && ct == 1 && cm == 1);
    /* opening again changes nothing; the schema is a new file's */
    reopen_beside_fresh(s, path, fresh);
    schema_text(path, buf, sizeof buf);
    schema_text(fresh, want, sizeof want);
    CHECK_MSG(buf[0] && !strcmp(buf, want), "migrated:\n%s\nnew:\n%s", buf, want);
    CHECK_STR_CONTAINS(want, "trials_by_change(changed)");
    CHECK_STR_CONTAINS(want, "trials.executor_job:TEXT");
    CHECK_STR_CONTAINS(want, "trials.objectives:TEXT");
    CHECK_STR_CONTAINS(want, "measurements_by_seq(seq)");
    CHECK_STR_CONTAINS(want, "measurements_by_step(step)");
}

/* A fresh store with study "s" (spec_json); NULL on failure. */
static st_store *store_with_study(const char *name, int64_t *id) {
    char path[PATH_LEN], err[512] = "";
    fmt_path(path, "%s/%s", tmpdir, name);
    st_store *s = NULL;
    if (st_open(path, &s, err, sizeof err) != 0 ||
        st_study_create(s, "s", spec_json, 1, ST_STUDY_RUNNING, id, err, sizeof err) != 0) {
        CHECK_MSG(0, "%s", err);
        st_close(s);
        return NULL;
    }
    return s;
}

/* Sets trial number's state and objective (NAN: none) and times. */
static void set_trial(st_store *s, int64_t id, int64_t number, st_trial_state state, double obj,
                      double started, double finished) {
    st_trial t;
    char err[512];
    int found;
    CHECK(st_trial_get(s, id, number, &t, &found, err, sizeof err) == 0 && found);
    t.state = state;
    t.has_objective = !isnan(obj);
    t.objective = isnan(obj) ? 0 : obj;
    t.started = started;
    t.finished = finished;
    CHECK_MSG(st_trial_update(s, &t, err, sizeof err) == 0, "%s", err);
    st_trial_clear(&t);
}

static void test_change_sequences(void) {
    int64_t id;
    st_store *s = store_with_study("seq.db", &id);
    if (!s) return;
    char err[512];
    int64_t n1, n2, ct, cm;
    CHECK(st_study_cursor(s, id, &ct, &cm, err, sizeof err) == 0 && ct == 0 && cm == 0);
    st_trial_create(s, id, "{\"x\": 0.1}", ST_TRIAL_RUNNING, &n1, err, sizeof err);
    st_trial_create(s, id, "{\"x\": 0.2}", ST_TRIAL_RUNNING, &n2, err, sizeof err);
    set_trial(s, id, n1, ST_TRIAL_SUCCEEDED, 0.5, 1, 2);
    CHECK(st_study_cursor(s, id, &ct, &cm, err, sizeof err) == 0 && ct == 3);
    st_trial *rows = NULL;
    size_t n = 0;
    CHECK(st_trial_changes(s, id, 0, 10, &rows, &n, err, sizeof err) == 0);
    /* each trial once, at its latest write, in change order: 2 (change 2), 1 (change 3) */
    CHECK(n == 2 && rows[0].number == n2 && rows[0].changed == 2 && rows[1].number == n1 &&
          rows[1].changed == 3 && rows[1].state == ST_TRIAL_SUCCEEDED);
    st_trials_free(rows, n);
    CHECK(st_trial_changes(s, id, 2, 10, &rows, &n, err, sizeof err) == 0 && n == 1 &&
          rows[0].number == n1);
    st_trials_free(rows, n);
    CHECK(st_trial_changes(s, id, 3, 10, &rows, &n, err, sizeof err) == 0 && n == 0);
    st_trials_free(rows, n);
    /* measurements: a sequence of their own; a duplicate record takes no number */
    st_measurement m = {.step = 1, .replica = "chief:0", .metrics = "{\"acc\": 0.25}", .timestamp = 1};
    CHECK(st_measurement_add(s, id, n2, &m, err, sizeof err) == 0);
    CHECK(st_measurement_add(s, id, n2, &m, err, sizeof err) == 0);
    m.timestamp = 2, m.step = 2, m.metrics = "{\"loss\": 3}";
    CHECK(st_measurement_add(s, id, n2, &m, err, sizeof err) == 0);
    CHECK(st_study_cursor(s, id, &ct, &cm, err, sizeof err) == 0 && cm == 2);
    /* a second study's sequences are its own */
    int64_t other, n3;
    CHECK(st_study_create(s, "t", spec_json, 1, ST_STUDY_RUNNING, &other, err, sizeof err) == 0);
    CHECK(st_trial_create(s, other, "{\"x\": 0.3}", ST_TRIAL_RUNNING, &n3, err, sizeof err) == 0);
    CHECK(st_study_cursor(s, other, &ct, &cm, err, sizeof err) == 0 && ct == 1 && cm == 0);
    /* the queries run on the indexes, not a scan of the study */
    char path[PATH_LEN], plan[1024];
    fmt_path(path, "%s/seq.db", tmpdir);
    query_plan(path, "SELECT number FROM trials WHERE study_id = 1 AND changed > 5 ORDER BY changed",
               plan, sizeof plan);
    CHECK_STR_CONTAINS(plan, "trials_by_change");
    query_plan(path, "SELECT trial FROM measurements WHERE study_id = 1 AND seq > 5 ORDER BY seq",
               plan, sizeof plan);
    CHECK_STR_CONTAINS(plan, "measurements_by_seq");
    st_close(s);
}

static void test_trial_page(void) {
    int found;
    int64_t id;
    st_store *s = store_with_study("page.db", &id);
    if (!s) return;
    char err[512];
    /* 1: SUCCEEDED 0.5 (10 s), 2: FAILED, 3: SUCCEEDED 0.9 (2 s), 4: RUNNING since 100,
     * 5: SUCCEEDED 0.5 (1 s), 6: PENDING */
    for (int i = 0; i < 6; i++) {
        int64_t n;
        st_trial_create(s, id, "{\"x\": 0.5}", ST_TRIAL_RUNNING, &n, err, sizeof err);
    }
    set_trial(s, id, 1, ST_TRIAL_SUCCEEDED, 0.5, 100, 110);
    set_trial(s, id, 2, ST_TRIAL_FAILED, NAN, 100, 105);
    set_trial(s, id, 3, ST_TRIAL_SUCCEEDED, 0.9, 100, 102);
    set_trial(s, id, 4, ST_TRIAL_RUNNING, NAN, 100, 0);
    set_trial(s, id, 5, ST_TRIAL_SUCCEEDED, 0.5, 100, 101);
    set_trial(s, id, 6, ST_TRIAL_PENDING, NAN, 0, 0);
    st_measurement m = {.step = 7, .replica = "chief:0", .metrics = "{}", .timestamp = 1};
    st_measurement_add(s, id, 1, &m, err, sizeof err);
    m.step = 3, m.timestamp = 2;
    st_measurement_add(s, id, 1, &m, err, sizeof err);
    static const struct {
        int sort;
        unsigned states;
        int64_t offset, limit;
        const char *want;  /* the numbers, in order */
        int64_t total;
    } cases[] = {
        {ST_SORT_NUMBER, 0, 0, 100, "1,2,3,4,5,6", 6},
        {ST_SORT_NUMBER_DESC, 0, 0, 100, "6,5,4,3,2,1", 6},
        {ST_SORT_NUMBER, 0, 2, 2, "3,4", 6},
        {ST_SORT_NUMBER, 0, 6, 2, "", 6},
        {ST_SORT_NUMBER, 0, 0, 0, "", 6},
        {ST_SORT_VALUE, 0, 0, 100, "1,5,3,2,4,6", 6},        /* ties by number; nulls last */
        {ST_SORT_VALUE_DESC, 0, 0, 100, "3,1,5,2,4,6", 6},
        {ST_SORT_DURATION, 0, 0, 100, "5,3,2,1,4,6", 6},     /* running: to now (1000) */
        {ST_SORT_DURATION_DESC, 0, 0, 100, "4,1,2,3,5,6", 6},
        {ST_SORT_STATE, 0, 0, 100, "4,6,1,3,5,2", 6},
        {ST_SORT_NUMBER, 1u << 2, 0, 100, "1,3,5", 3},       /* SUCCEEDED */
        {ST_SORT_NUMBER, (1u << 0) | (1u << 1), 0, 100, "4,6", 2}, /* PENDING, RUNNING */
        {ST_SORT_VALUE_DESC, 1u << 2, 1, 1, "1", 3},
        {ST_SORT_NUMBER, 1u << 5, 0, 100, "", 0},            /* CANCELLED: none */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        st_trial *rows = NULL;
        size_t n = 0;
        int64_t total = -1;
        int rc = st_trial_page(s, id, cases[i].sort, cases[i].states, cases[i].offset,
                               cases[i].limit, 1000, &rows, &n, &total, err, sizeof err);
        char got[128] = "";
        for (size_t k = 0; k < n; k++) {
            size_t used = strlen(got);
            snprintf(got + used, sizeof got - used, "%s%lld", k ? "," : "", (long long)rows[k].number);
        }
        CHECK_MSG(rc == 0 && !strcmp(got, cases[i].want) && total == cases[i].total,
                  "case %zu: rc %d '%s' total %lld, expected '%s' total %lld (%s)", i, rc, got,
                  (long long)total, cases[i].want, (long long)cases[i].total, err);
        if (i == 0 && n == 6)
            CHECK(rows[0].has_last_step && rows[0].last_step == 7 && !rows[1].has_last_step);
        st_trials_free(rows, n);
    }
    int64_t number = 0;
    double value = 0;
    CHECK(st_trial_best(s, id, 1, &number, &value, &found, err, sizeof err) == 0 && found && number == 3 && value == 0.9);
    CHECK(st_trial_best(s, id, 0, &number, &value, &found, err, sizeof err) == 0 && found && number == 1 && value == 0.5);
    double first, last;
    int64_t active;
    CHECK(st_trial_span(s, id, &first, &last, &active, err, sizeof err) == 0 && first == 100 &&
          last == 110 && active == 2);
    st_close(s);
}

static void test_cancel(void) {
    int found;
    int64_t id;
    st_store *s = store_with_study("cancel.db", &id);
    if (!s) return;
    char err[512];
    st_study_state was = ST_STUDY_CREATED;
    CHECK(st_study_cancel(s, id, &was, &found, err, sizeof err) == 0 && found && was == ST_STUDY_RUNNING);
    st_study study;
    CHECK(st_study_get_id(s, id, &study, &found, err, sizeof err) == 0 && found &&
          study.state == ST_STUDY_CANCELLED);
    st_study_clear(&study);
    CHECK(st_study_cancel(s, id, &was, &found, err, sizeof err) == 0 && found && was == ST_STUDY_CANCELLED);
    CHECK(st_study_set_state(s, id, ST_STUDY_SUCCEEDED, NULL, err, sizeof err) == 0);
    CHECK(st_study_cancel(s, id, &was, &found, err, sizeof err) == 0 && found && was == ST_STUDY_SUCCEEDED);
    CHECK(st_study_get_id(s, id, &study, &found, err, sizeof err) == 0 && found &&
          study.state == ST_STUDY_SUCCEEDED);
    st_study_clear(&study);
    CHECK_INT_EQ(st_study_cancel(s, 99, &was, &found, err, sizeof err), 0);
    CHECK(!found);
    api_reply r = {0};
    api_cancel(s, "s", &r);
    CHECK_INT_EQ(r.status, 409);
    CHECK_STR_CONTAINS(r.body.data, "already finished (SUCCEEDED)");
    api_cancel(s, "nosuch", &r);
    CHECK_INT_EQ(r.status, 404);
    api_reply_clear(&r);
    st_close(s);
}

/* ---------------------------------------------------------------------------------
 * Endpoints on a store
 * --------------------------------------------------------------------------------- */

static void add_point(st_store *s, int64_t id, int64_t trial, const char *replica, int64_t step,
                      double ts, double acc) {
    char metrics[64], err[512];
    snprintf(metrics, sizeof metrics, "{\"acc\": %.17g}", acc);
    st_measurement m = {.step = step, .replica = (char *)replica, .metrics = metrics, .timestamp = ts};
    CHECK_MSG(st_measurement_add(s, id, trial, &m, err, sizeof err) == 0, "%s", err);
}

static void test_curves(void) {
    int64_t id;
    st_store *s = store_with_study("curves.db", &id);
    if (!s) return;
    char err[512];
    for (int i = 0; i < 4; i++) {
        int64_t n;
        st_trial_create(s, id, "{\"x\": 0.5}", ST_TRIAL_RUNNING, &n, err, sizeof err);
    }
    /* 1: a worker reports first, then the chief: the chief's points win */
    add_point(s, id, 1, "worker:0", 1, 1.0, 0.1);
    add_point(s, id, 1, "chief:0", 1, 1.1, 0.2);
    add_point(s, id, 1, "chief:0", 2, 1.2, 0.3);
    add_point(s, id, 1, "worker:0", 3, 1.3, 0.9);
    /* 2: only workers: the first one's points */
    add_point(s, id, 2, "worker:1", 1, 2.0, 0.4);
    add_point(s, id, 2, "worker:0", 1, 2.1, 0.8);
    add_point(s, id, 2, "worker:1", 2, 2.2, 0.5);
    /* 3: none. 4: a restarted chief reports step 1 twice: the newer value */
    add_point(s, id, 4, "chief:0", 1, 4.0, 0.6);
    add_point(s, id, 4, "chief:0", 1, 4.5, 0.7);
    /* a record without the metric is no point */
    st_measurement m = {.step = 5, .replica = "chief:0", .metrics = "{\"loss\": 1}", .timestamp = 5};
    st_measurement_add(s, id, 4, &m, err, sizeof err);
    set_trial(s, id, 3, ST_TRIAL_STOPPED, 0.3, 1, 2);
    api_reply r = {0};
    api_curves(s, "s", &r);
    CHECK_INT_EQ(r.status, 200);
    CHECK_MSG(r.body.data &&
                  !strcmp(r.body.data,
                          "{\"metric\":\"acc\",\"curves\":["
                          "{\"trial\":1,\"state\":\"RUNNING\",\"points\":[[1,0.2],[2,0.3]]},"
                          "{\"trial\":2,\"state\":\"RUNNING\",\"points\":[[1,0.4],[2,0.5]]},"
                          "{\"trial\":3,\"state\":\"STOPPED\",\"points\":[]},"
                          "{\"trial\":4,\"state\":\"RUNNING\",\"points\":[[1,0.7]]}]}"),
              "%s", r.body.data);
    api_curves(s, "1", &r); /* by id */
    CHECK_INT_EQ(r.status, 200);
    api_curves(s, "nosuch", &r);
    CHECK_INT_EQ(r.status, 404);
    api_reply_clear(&r);
    st_close(s);
}

static void test_trial_detail_replicas(void) {
    int64_t id, n;
    st_store *s = store_with_study("replicas.db", &id);
    if (!s) return;
    char err[512];
    st_trial_create(s, id, "{\"x\": 0.5}", ST_TRIAL_RUNNING, &n, err, sizeof err);
    /* how a run ended is read from the event's data, never from its sentence (code -1:
     * none) */
    static const struct {
        const char *replica, *kind, *detail;
        int code, signal;
    } ev[] = {
        {"chief:0", "started", "pid 10", -1, 0},   {"worker:1", "started", "pid 11", -1, 0},
        {"worker:0", "started", "pid 12", -1, 0},  {NULL, "running", "attempt 1", -1, 0},
        {"worker:0", "exited", "exit status 0", 1, 0},
        {"worker:0", "restarted", "restart 1 of 5", -1, 0},
        {"worker:0", "started", "pid 13", -1, 0},  {"worker:1", "exited", "exit status 0", -1, 9},
        {"chief:0", "exited", "killed by signal 9", 0, 0},
        {"worker:2", "started", "pid 14", -1, 0},  {"worker:2", "exited", "cannot run", -1, 0},
    };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
        st_event e = {.time = 10 + (double)i, .replica = (char *)ev[i].replica,
                      .kind = (char *)ev[i].kind, .detail = (char *)ev[i].detail,
                      .has_exit_code = ev[i].code >= 0, .exit_code = ev[i].code >= 0 ? ev[i].code : 0,
                      .signal = ev[i].signal};
        CHECK(st_event_add(s, id, n, &e, err, sizeof err) == 0);
    }
    add_point(s, id, n, "chief:0", 4, 1.0, 0.5);
    api_reply r = {0};
    api_trial(s, "s", "1", 20, &r);
    CHECK_INT_EQ(r.status, 200);
    json_t *doc = r.body.data ? json_loads(r.body.data, 0, NULL) : NULL;
    json_t *reps = json_object_get(doc, "replicas");
    tn_buf b = {0};
    tn_json_write(&b, reps, -1, TN_JSON_HTML_SAFE);
    CHECK_MSG(b.data && !strcmp(b.data,
                                "[{\"name\":\"chief-0\",\"state\":\"EXITED\",\"exit_code\":0,"
                                "\"restarts\":0,\"signal\":null},"
                                "{\"name\":\"worker-0\",\"state\":\"RUNNING\",\"exit_code\":null,"
                                "\"restarts\":1,\"signal\":null},"
                                "{\"name\":\"worker-1\",\"state\":\"KILLED\",\"exit_code\":null,"
                                "\"restarts\":0,\"signal\":9},"
                                "{\"name\":\"worker-2\",\"state\":\"EXITED\",\"exit_code\":null,"
                                "\"restarts\":0,\"signal\":null}]"),
              "%s", b.data);
    tn_buf_clear(&b);
    CHECK_INT_EQ(json_integer_value(json_object_get(doc, "last_step")), 4);
    CHECK_INT_EQ(json_array_size(json_object_get(doc, "events")), 11);
    json_t *chief_exit = json_array_get(json_object_get(doc, "events"), 8);
    CHECK(json_integer_value(json_object_get(chief_exit, "exit_code")) == 0 &&
          json_is_integer(json_object_get(chief_exit, "exit_code")) &&
          json_is_null(json_object_get(chief_exit, "signal")));
    CHECK(json_is_null(json_object_get(json_array_get(json_object_get(doc, "events"), 3), "replica")));
    CHECK_INT_EQ(json_array_size(json_object_get(doc, "logs")), 0); /* no such jobDir */
    json_decref(doc);
    api_trial(s, "s", "2", 20, &r);
    CHECK_INT_EQ(r.status, 404);
    api_trial(s, "s", "0", 20, &r);
    CHECK_INT_EQ(r.status, 404);
    api_log(s, "s", "1", "chief-0", NULL, &r);
    CHECK_INT_EQ(r.status, 404); /* no such file */
    api_log(s, "s", "1", "chief-0", "0", &r);
    CHECK_INT_EQ(r.status, 400);
    api_log(s, "s", "1", "../x", NULL, &r);
    CHECK_INT_EQ(r.status, 400);
    api_reply_clear(&r);
    st_close(s);
}

static void test_trials_endpoint_errors(void) {
    int64_t id;
    st_store *s = store_with_study("errors.db", &id);
    if (!s) return;
    static const struct {
        api_page_query q;
        int status;
    } cases[] = {
        {{NULL, NULL, NULL, NULL}, 200},
        {{"0", "1000", "-value", "SUCCEEDED,running"}, 200},
        {{NULL, "1001", NULL, NULL}, 400},
        {{NULL, "-1", NULL, NULL}, 400},
        {{"x", NULL, NULL, NULL}, 400},
        {{NULL, NULL, "values", NULL}, 400},
        {{NULL, NULL, NULL, "DONE"}, 400},
        {{NULL, NULL, NULL, "SUCCEEDED,"}, 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        api_reply r = {0};
        api_trials(s, "s", &cases[i].q, 0, &r);
        CHECK_MSG(r.status == cases[i].status, "case %zu: %d %s", i, r.status, r.body.data);
        api_reply_clear(&r);
    }
    api_reply r = {0};
    api_page_query none = {0};
    api_trials(s, "nosuch", &none, 0, &r);
    CHECK_INT_EQ(r.status, 404);
    api_study(s, "nosuch", 0, &r);
    CHECK_INT_EQ(r.status, 404);
    api_studies(s, 0, &r);
    CHECK_INT_EQ(r.status, 200);
    api_reply_clear(&r);
    st_close(s);
}

/* A study of two metrics through the API: the study's metrics and its Pareto front
 * (trials 1, 3 and 4: trial 2 is beaten by 3 in both; a failed trial never counts),
 * and each trial's values in the metrics' order. */
static void test_two_metrics(void) {
    int found;
    static const char two_spec[] =
        "{\"jobId\": \"s\", \"trainingInput\": {\"hyperparameters\": {\"metrics\": ["
        "{\"metricId\": \"score\", \"goal\": \"MAXIMIZE\"}, "
        "{\"metricId\": \"cost\", \"goal\": \"MINIMIZE\"}], \"maxTrials\": 5, "
        "\"params\": [{\"parameterName\": \"x\", \"type\": \"DOUBLE\", "
        "\"minValue\": 0, \"maxValue\": 1}]}}}";
    char path[PATH_LEN], err[512] = "";
    fmt_path(path, "%s/%s", tmpdir, "two.db");
    st_store *s = NULL;
    int64_t id = 0, number = 0;
    if (st_open(path, &s, err, sizeof err) != 0 ||
        st_study_create(s, "s", two_spec, 1, ST_STUDY_RUNNING, &id, err, sizeof err) != 0) {
        CHECK_MSG(0, "%s", err);
        st_close(s);
        return;
    }
    static const double values[][2] = {{1, 1}, {2, 3}, {3, 2}, {4, 5}, {9, 0}};
    for (int i = 0; i < 5; i++) {
        CHECK(st_trial_create(s, id, "{\"x\": 0.5}", ST_TRIAL_RUNNING, &number, err, sizeof err) == 0);
        st_trial t;
        CHECK(st_trial_get(s, id, number, &t, &found, err, sizeof err) == 0 && found);
        t.state = i == 4 ? ST_TRIAL_FAILED : ST_TRIAL_SUCCEEDED;
        t.has_objective = 1;
        t.objective = values[i][0];
        t.nvalues = 2;
        t.values[0] = values[i][0];
        t.values[1] = values[i][1];
        CHECK_MSG(st_trial_update(s, &t, err, sizeof err) == 0, "%s", err);
        st_trial_clear(&t);
    }
    api_reply r = {0};
    api_study(s, "s", 0, &r);
    CHECK_INT_EQ(r.status, 200);
    json_t *study = json_loadb(r.body.data, r.body.len, 0, NULL);
    char *metrics = json_dumps(json_object_get(study, "metrics"), JSON_COMPACT);
    char *pareto = json_dumps(json_object_get(study, "pareto"), JSON_COMPACT);
    CHECK_MSG(metrics && !strcmp(metrics, "[{\"metricId\":\"score\",\"goal\":\"MAXIMIZE\"},"
                                          "{\"metricId\":\"cost\",\"goal\":\"MINIMIZE\"}]"),
              "metrics %s", metrics ? metrics : "none");
    CHECK_MSG(pareto && !strcmp(pareto, "[1,3,4]"), "pareto %s", pareto ? pareto : "none");
    free(metrics);
    free(pareto);
    json_decref(study);
    api_reply_clear(&r);
    api_page_query all = {0};
    api_trials(s, "s", &all, 0, &r);
    CHECK_INT_EQ(r.status, 200);
    json_t *page = json_loadb(r.body.data, r.body.len, 0, NULL);
    json_t *trials = json_object_get(page, "trials");
    CHECK_INT_EQ(json_array_size(trials), 5);
    for (size_t i = 0; i < json_array_size(trials) && i < 5; i++) {
        json_t *v = json_object_get(json_array_get(trials, i), "values");
        CHECK_MSG(json_array_size(v) == 2 &&
                      json_number_value(json_array_get(v, 0)) == values[i][0] &&
                      json_number_value(json_array_get(v, 1)) == values[i][1],
                  "trial %zu's values", i + 1);
    }
    json_decref(page);
    api_reply_clear(&r);
    st_close(s);
}

/* Counts the lines of text that start with prefix. */
static int count_prefix(const char *text, const char *prefix) {
    int n = 0;
    size_t len = strlen(prefix);
    for (const char *p = text; p && *p;) {
        if (!strncmp(p, prefix, len)) n++;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return n;
}

static void test_event_stream_text(void) {
    int gone;
    int64_t id, n;
    st_store *s = store_with_study("sse.db", &id);
    if (!s) return;
    char err[512];
    api_watch w;
    api_reply r = {0};
    CHECK(api_watch_open(s, "nosuch", &w, &r) != 0 && r.status == 404);
    CHECK(api_watch_open(s, "s", &w, &r) == 0);
    CHECK(w.id == id && !strcmp(w.metric, "acc") && w.head.trials == 0 && w.version == 1);
    api_cursor cur = w.head;
    st_trial_create(s, id, "{\"x\": 0.5}", ST_TRIAL_RUNNING, &n, err, sizeof err);
    add_point(s, id, n, "chief:0", 1, 1.0, 0.25);
    st_measurement m = {.step = 2, .replica = "chief:0", .metrics = "{\"loss\": 1}", .timestamp = 2};
    st_measurement_add(s, id, n, &m, err, sizeof err);
    CHECK(api_watch_poll(s, &w, &gone, err, sizeof err) == 0 && !gone);
    CHECK(w.version == 2 && w.head.trials == 1 && w.head.measurements == 2);
    tn_buf b = {0};
    int events = api_sse_changes(s, &w, &cur, 100, &b, err, sizeof err);
    CHECK_INT_EQ(events, 3);
    CHECK_MSG(b.data && !strncmp(b.data, "event: trial\nid: 1.0\ndata: {\"number\":1,", 38), "%s",
              b.data);
    CHECK_STR_CONTAINS(b.data, "event: measurement\nid: 1.1\ndata: {\"trial\":1,\"step\":1,"
                               "\"value\":0.25,\"replica\":\"chief:0\"}\n\n");
    CHECK_STR_CONTAINS(b.data, "event: measurement\nid: 1.2\ndata: {\"trial\":1,\"step\":2,"
                               "\"value\":null,\"replica\":\"chief:0\"}\n\n");
    CHECK(cur.trials == 1 && cur.measurements == 2);
    api_sse_study(&w, &cur, &b);
    CHECK_STR_CONTAINS(b.data, "event: study\nid: 1.2\ndata: {\"id\":1,\"name\":\"s\"");
    tn_buf_clear(&b);
    /* nothing new: nothing sent, the version stays */
    CHECK(api_watch_poll(s, &w, &gone, err, sizeof err) == 0 && !gone && w.version == 2);
    CHECK_INT_EQ(api_sse_changes(s, &w, &cur, 100, &b, err, sizeof err), 0);
    /* a batch cut short sends no measurements (they may be of trials not sent yet) */
    for (int i = 0; i < 3; i++) {
        int64_t k;
        st_trial_create(s, id, "{\"x\": 0.5}", ST_TRIAL_RUNNING, &k, err, sizeof err);
        add_point(s, id, k, "chief:0", 1, 10.0 + i, 0.5);
    }
    CHECK_INT_EQ(api_sse_changes(s, &w, &cur, 2, &b, err, sizeof err), 2);
    CHECK(count_prefix(b.data, "event: trial") == 2 && count_prefix(b.data, "event: measurement") == 0);
    CHECK_INT_EQ(api_sse_changes(s, &w, &cur, 100, &b, err, sizeof err), 4);
    CHECK(count_prefix(b.data, "event: trial") == 3 && count_prefix(b.data, "event: measurement") == 3);
    tn_buf_clear(&b);
    /* the study's state is part of what a poll notices */
    CHECK(st_study_set_state(s, id, ST_STUDY_STOPPED, NULL, err, sizeof err) == 0);
    uint64_t before = w.version;
    CHECK(api_watch_poll(s, &w, &gone, err, sizeof err) == 0 && !gone && w.version == before + 1);
    CHECK_STR_CONTAINS(w.entry, "\"state\":\"STOPPED\"");
    api_watch_clear(&w);
    api_reply_clear(&r);
    st_close(s);
}

int main(void) {
    if (scratch_mkdtemp(tmpdir, "tn_dashboard") != 0) return 1;
    RUN(test_route_table);
    RUN(test_page_files);
    RUN(test_replica_names);
    RUN(test_parse_int);
    RUN(test_request_framing);
    RUN(test_json_text);
    RUN(test_utf8_clean);
    RUN(test_tail);
    RUN(test_migration_from_v1);
    RUN(test_change_sequences);
    RUN(test_trial_page);
    RUN(test_cancel);
    RUN(test_curves);
    RUN(test_trial_detail_replicas);
    RUN(test_trials_endpoint_errors);
    RUN(test_two_metrics);
    RUN(test_event_stream_text);
    rm_rf(tmpdir);
    return check_summary();
}
