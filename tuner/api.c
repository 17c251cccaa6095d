/*
 * api.c — the dashboard's JSON API (see api.h; the contract is docs/dashboard.md).
 *
 * Each endpoint is a function of the store and the parsed request that fills an
 * api_reply. A study named in a URL is read with its spec (parsed again with the
 * ask/tell rules, as the read commands do) for its goal, metric, limits, parameters and
 * jobDir; a spec that no longer parses leaves those fields null rather than failing.
 * The reads of one reply run in one snapshot (st_read), so a page of trials and its
 * total, or a study's counts and best, always agree. JSON text is written here, not by
 * jansson's dumper, for two reasons: numbers in their shortest round-trip form (0.1,
 * not 0.10000000000000001), and '<', '>', '&' escaped in every string.
 */
#include "tuner/api.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/jsonutil.h"
#include "common/status.h"
#include "executor/contract.h"
#include "tuner/spec.h"
#include "tuner/study.h"

#define API_DEFAULT_LIMIT 100    /* trials per page when not asked */
#define API_MAX_LIMIT 1000       /* the most trials per page */
#define API_DEFAULT_LINES 200    /* log lines when not asked */
#define API_MAX_LINES 5000       /* the most log lines */
#define API_TAIL_MAX_BYTES (4 << 20) /* the most of a log read for one reply */
#define API_LOG_REPLY_MAX (4 << 20)  /* the most its lines may take in the reply's JSON */

/* ---------------------------------------------------------------------------------
 * Buffers and JSON text
 * --------------------------------------------------------------------------------- */


/* ---------------------------------------------------------------------------------
 * Replies
 * --------------------------------------------------------------------------------- */

void api_error(api_reply *r, int status, const char *hint, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t len;
    char *clean = tn_utf8_clean(msg, strlen(msg), &len); /* a path may hold any bytes */
    r->status = status;
    r->body.len = 0;
    tn_buf_str(&r->body, "{\"error\":");
    tn_json_write_string(&r->body, clean, len, TN_JSON_HTML_SAFE);
    tn_buf_str(&r->body, ",\"hint\":");
    if (hint)
        tn_json_write_string(&r->body, hint, strlen(hint), TN_JSON_HTML_SAFE);
    else
        tn_buf_str(&r->body, "null");
    tn_buf_str(&r->body, "}");
    free(clean);
}

void api_reply_clear(api_reply *r) {
    if (!r) return;
    tn_buf_clear(&r->body);
    r->status = 0;
}

/* Sets r to 200 with v as the body; steals v. */
static void reply_json(api_reply *r, int status, json_t *v) {
    r->status = status;
    r->body.len = 0;
    tn_json_write(&r->body, v, -1, TN_JSON_HTML_SAFE);
    json_decref(v);
}

/* ---------------------------------------------------------------------------------
 * Parsing
 * --------------------------------------------------------------------------------- */

int api_parse_int(const char *s, int64_t min, int64_t max, int64_t *out) {
    if (!s || !*s) return -1;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        if (v > (INT64_MAX - (*p - '0')) / 10) return -1;
        v = v * 10 + (*p - '0');
    }
    if (v < min || v > max) return -1;
    *out = v;
    return 0;
}

/* Percent-decodes a path segment s[0..len) into out (room for len + 1). Returns 0, or
 * -1 for a bad escape, an encoded or raw NUL, or a '/' after decoding. */
static int decode_segment(const char *s, size_t len, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= len) return -1;
            int v = 0;
            for (int k = 1; k <= 2; k++) {
                char h = s[i + k];
                v <<= 4;
                if (h >= '0' && h <= '9') v |= h - '0';
                else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
                else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
                else return -1;
            }
            c = (char)v;
            i += 2;
        }
        if (c == '\0' || c == '/') return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

/* Whether s is a number written as the server writes it: no leading zero ("01", "00"),
 * so that each id has one spelling and the replies echo what is served. */
static int canonical_number(const char *s) { return s[0] != '0' || s[1] == '\0'; }

int api_valid_replica(const char *name) {
    int type, index;
    size_t dash = strcspn(name, ":-");
    return ex_replica_parse(name, &type, &index) == 0 && name[dash] == '-' &&
           canonical_number(name + dash + 1);
}

int api_valid_study_ref(const char *s) {
    if (!*s || strlen(s) > API_NAME_MAX) return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return 0;
    return 1;
}

static int all_digits(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

int api_route_parse(const char *path, api_route *r) {
    memset(r, 0, sizeof *r);
    r->id = API_NOT_FOUND;
    if (!path || path[0] != '/') { /* "*", " /" (two spaces): a malformed target, 400 */
        r->id = API_BAD_PATH;
        snprintf(r->why, sizeof r->why, "the path must start with /");
        return r->id;
    }
    if (strncmp(path, "/api/", 5) != 0 && strcmp(path, "/api") != 0) {
        /* a file of the page: only plain names, matched exactly by the server */
        const char *name = path[1] ? path + 1 : "index.html";
        size_t n = strlen(name);
        snprintf(r->why, sizeof r->why, "no such file");
        if (n >= sizeof r->asset) return r->id;
        for (size_t i = 0; i < n; i++) {
            char c = name[i];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-') ||
                (c == '.' && i == 0))
                return r->id;
        }
        memcpy(r->asset, name, n + 1);
        r->id = API_STATIC;
        return r->id;
    }
    /* /api/...: split into at most 8 decoded segments */
    enum { MAXSEG = 8 };
    char seg[MAXSEG][API_NAME_MAX + 1];
    int nseg = 0;
    const char *p = path + 1;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (nseg == MAXSEG || len > 3 * API_NAME_MAX) {
            snprintf(r->why, sizeof r->why, "no such endpoint");
            return r->id;
        }
        char tmp[3 * API_NAME_MAX + 1];
        if (decode_segment(p, len, tmp) != 0 || !strcmp(tmp, ".") || !strcmp(tmp, "..")) {
            r->id = API_BAD_PATH;
            snprintf(r->why, sizeof r->why,
                     "a path segment is malformed (a bad %%-escape, an encoded '/' or NUL, or "
                     "'.' or '..')");
            return r->id;
        }
        if (strlen(tmp) > API_NAME_MAX) {
            snprintf(r->why, sizeof r->why, "no such endpoint");
            return r->id;
        }
        memcpy(seg[nseg++], tmp, strlen(tmp) + 1);
        if (!slash) break;
        p = slash + 1;
        if (!*p) { /* a trailing slash: an empty last segment */
            if (nseg == MAXSEG) return r->id;
            seg[nseg++][0] = '\0';
        }
    }
    snprintf(r->why, sizeof r->why, "no such endpoint");
    if (nseg < 2 || strcmp(seg[0], "api") != 0) return r->id;
    if (nseg == 2 && !strcmp(seg[1], "events")) return r->id = API_EVENTS;
    if (strcmp(seg[1], "studies") != 0) return r->id;
    if (nseg == 2) return r->id = API_STUDIES;
    if (!api_valid_study_ref(seg[2])) {
        snprintf(r->why, sizeof r->why, "no study named '%.100s'", seg[2]);
        return r->id;
    }
    snprintf(r->study, sizeof r->study, "%s", seg[2]);
    if (nseg == 3) return r->id = API_STUDY;
    if (nseg == 4 && !strcmp(seg[3], "trials")) return r->id = API_TRIALS;
    if (nseg == 4 && !strcmp(seg[3], "curves")) return r->id = API_CURVES;
    if (nseg == 4 && !strcmp(seg[3], "cancel")) return r->id = API_CANCEL;
    if (nseg < 5 || strcmp(seg[3], "trials") != 0) return r->id;
    if (!all_digits(seg[4]) || strlen(seg[4]) >= sizeof r->trial) {
        snprintf(r->why, sizeof r->why, "no trial '%.100s' (a trial is a number: 1, 2, ...)",
                 seg[4]);
        return r->id;
    }
    memcpy(r->trial, seg[4], strlen(seg[4]) + 1); /* fits: checked above */
    if (nseg == 5) return r->id = API_TRIAL;
    if (nseg == 7 && !strcmp(seg[5], "logs")) {
        if (!api_valid_replica(seg[6]) || strlen(seg[6]) >= sizeof r->replica) {
            r->id = API_BAD_PATH;
            snprintf(r->why, sizeof r->why,
                     "'%.60s' is not a replica: write TYPE-INDEX, TYPE one of chief, master, "
                     "worker, ps, evaluator (chief-0, worker-1)",
                     seg[6]);
            return r->id;
        }
        memcpy(r->replica, seg[6], strlen(seg[6]) + 1); /* fits: checked above */
        return r->id = API_LOG;
    }
    return r->id;
}

const char *api_route_allow(int id) {
    return id == API_CANCEL ? "POST" : "GET, HEAD";
}

/* ---------------------------------------------------------------------------------
 * Studies
 * --------------------------------------------------------------------------------- */

/* A study named in a URL, with its spec. */
typedef struct study_ref {
    st_study row;
    tn_spec spec;
    int have_spec;   /* the stored spec parses */
} study_ref;

static void study_ref_clear(study_ref *s) {
    st_study_clear(&s->row);
    if (s->have_spec) spec_clear(&s->spec);
    memset(s, 0, sizeof *s);
}

/* Parses the stored spec of s->row into s->spec (ask/tell rules, as the read commands). */
static void parse_spec(study_ref *s) {
    spec_errors errs = {0};
    s->have_spec = spec_parse(s->row.spec, s->row.name, 1, &s->spec, &errs) == 0;
    spec_errors_clear(&errs);
}

/* What a read of the API did not find (the `missing` of the read contexts). */
enum { FOUND_ALL, NO_STUDY, NO_TRIAL };

/* Reads the study `id` (a name, or digits: the numeric id): 0, with *missing set to
 * NO_STUDY when there is none (else left as it is), or a negative code. */
static int find_study(st_store *st, const char *id, study_ref *out, int *missing, char *err,
                      size_t errlen) {
    memset(out, 0, sizeof *out);
    int64_t n;
    int rc = 0, found = 0;
    if (!all_digits(id))
        rc = st_study_get(st, id, &out->row, &found, err, errlen);
    else if (canonical_number(id) && api_parse_int(id, 1, INT64_MAX, &n) == 0)
        rc = st_study_get_id(st, n, &out->row, &found, err, errlen);
    if (rc == 0 && found) parse_spec(out);
    if (rc == 0 && !found) *missing = NO_STUDY;
    return rc;
}

/* find_study, then trial `number` of the study into *t: 0, with *missing set to NO_STUDY
 * or NO_TRIAL when one is not there, or a negative code. */
static int find_trial(st_store *st, const char *id, int64_t number, study_ref *s, st_trial *t,
                      int *missing, char *err, size_t errlen) {
    int found;
    int rc = find_study(st, id, s, missing, err, errlen);
    if (rc || *missing) return rc;
    rc = st_trial_get(st, s->row.id, number, t, &found, err, errlen);
    if (rc == 0 && !found) *missing = NO_TRIAL;
    return rc;
}

/* Parses the {n} of a trial's URL into *out: 0, or -1 with r the 404. */
static int parse_trial_number(const char *number, int64_t *out, api_reply *r) {
    if (canonical_number(number) && api_parse_int(number, 1, INT64_MAX, out) == 0) return 0;
    api_error(r, 404, "trials are numbered 1, 2, ...", "no trial '%.40s'", number);
    return -1;
}

/* The 404 of a study or trial that is missing (NO_STUDY: id names the study; NO_TRIAL:
 * s the study and number the trial), else the 500 of a read that failed with err. */
static void read_error(api_reply *r, int missing, const char *id, const study_ref *s,
                       int64_t number, const char *err) {
    if (missing == NO_TRIAL)
        api_error(r, 404, "GET /api/studies/{id}/trials lists the trials",
                  "study %s has no trial %lld", s->row.name, (long long)number);
    else if (missing == NO_STUDY)
        api_error(r, 404, "GET /api/studies lists the studies in the store",
                  "no study named %s", id);
    else
        api_error(r, 500, "the store could not be read", "%s", err);
}

static const char *goal_name(int goal) { return goal == SPEC_MINIMIZE ? "MINIMIZE" : "MAXIMIZE"; }

/* The list entry of a study: id, name, state, times, counts, limits, goal, metric and
 * the best trial. 0, or negative with the message in err. */
static int study_entry(st_store *st, const study_ref *s, json_t **out, char *err,
                       size_t errlen) {
    int64_t counts[ST_TRIAL_NSTATES];
    int rc = st_trial_counts(st, s->row.id, counts, err, errlen);
    if (rc) return rc;
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(s->row.id));
    json_object_set_new(o, "name", json_string(s->row.name));
    json_object_set_new(o, "state", json_string(st_study_state_name(s->row.state)));
    json_object_set_new(o, "created", json_real(s->row.created));
    json_object_set_new(o, "updated", json_real(s->row.updated));
    json_t *c = json_object();
    for (int i = 0; i < ST_TRIAL_NSTATES; i++)
        json_object_set_new(c, st_trial_state_names[i], json_integer(counts[i]));
    json_object_set_new(o, "counts", c);
    json_object_set_new(o, "max_trials",
                        s->have_spec ? json_integer(s->spec.max_trials) : json_null());
    json_object_set_new(o, "goal", s->have_spec ? json_string(goal_name(s->spec.goal)) : json_null());
    json_object_set_new(o, "metric", s->have_spec ? json_string(s->spec.metric_tag) : json_null());
    json_t *metrics = json_null();
    if (s->have_spec) {
        metrics = json_array();
        for (size_t k = 0; k < s->spec.nmetrics; k++)
            json_array_append_new(metrics, json_pack("{ssss}", "metricId", s->spec.metrics[k].id,
                                                     "goal", goal_name(s->spec.metrics[k].goal)));
    }
    json_object_set_new(o, "metrics", metrics);
    json_t *best = json_null();
    if (s->have_spec) {
        int64_t number;
        double value;
        int found;
        rc = st_trial_best(st, s->row.id, s->spec.goal != SPEC_MINIMIZE, &number, &value,
                           &found, err, errlen);
        if (rc) {
            json_decref(o);
            return rc;
        }
        if (found) best = json_pack("{sIsf}", "trial", (json_int_t)number, "value", value);
    }
    json_object_set_new(o, "best", best);
    *out = o;
    return 0;
}

typedef struct studies_ctx {
    json_t *list;      /* the entries */
    char err[1024];
} studies_ctx;

static int studies_read(st_store *st, void *arg) {
    studies_ctx *c = arg;
    st_study *rows = NULL;
    size_t n = 0;
    int rc = st_study_list(st, &rows, &n, c->err, sizeof c->err);
    for (size_t i = 0; i < n && rc == 0; i++) {
        study_ref s = {.row = rows[i]};
        parse_spec(&s);
        json_t *e = NULL;
        rc = study_entry(st, &s, &e, c->err, sizeof c->err);
        if (rc == 0) json_array_append_new(c->list, e);
        if (s.have_spec) spec_clear(&s.spec);
    }
    st_studies_free(rows, n);
    return rc;
}

void api_studies(st_store *st, double now, api_reply *r) {
    studies_ctx c = {.list = json_array()};
    char err[1024] = "";
    int rc = st_read(st, studies_read, &c, err, sizeof err);
    if (rc) {
        json_decref(c.list);
        api_error(r, 500, "the store could not be read", "%s", c.err[0] ? c.err : err);
        return;
    }
    (void)now;
    reply_json(r, 200, json_pack("{so}", "studies", c.list));
}

/* The parameters of the spec, for the page: name, type and range or values. */
static json_t *params_json(const tn_spec *spec) {
    static const char *const types[] = {"", "DOUBLE", "INTEGER", "CATEGORICAL", "DISCRETE"};
    static const char *const scales[] = {"NONE", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE",
                                         "UNIT_REVERSE_LOG_SCALE"};
    json_t *a = json_array();
    for (size_t i = 0; i < spec->space.n; i++) {
        const sp_param *p = &spec->space.params[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(p->name));
        json_object_set_new(o, "type", json_string(p->type >= 1 && p->type <= 4 ? types[p->type] : "?"));
        if (p->type == SP_DOUBLE || p->type == SP_INTEGER) {
            json_object_set_new(o, "scale",
                                json_string(p->scale >= 0 && p->scale <= 3 ? scales[p->scale] : "NONE"));
            if (p->type == SP_INTEGER) {
                json_object_set_new(o, "min", json_integer((json_int_t)p->min));
                json_object_set_new(o, "max", json_integer((json_int_t)p->max));
            } else {
                json_object_set_new(o, "min", json_real(p->min));
                json_object_set_new(o, "max", json_real(p->max));
            }
        } else if (p->type == SP_CATEGORICAL) {
            json_t *v = json_array();
            for (size_t k = 0; k < p->ncategories; k++)
                json_array_append_new(v, json_string(p->categories[k]));
            json_object_set_new(o, "values", v);
        } else {
            json_t *v = json_array();
            for (size_t k = 0; k < p->nvalues; k++) json_array_append_new(v, json_real(p->values[k]));
            json_object_set_new(o, "values", v);
        }
        if (p->conditional && p->parent < i) { /* exists only for these values of its parent */
            const sp_param *q = &spec->space.params[p->parent];
            json_t *w = json_array();
            for (size_t k = 0; k < p->nwhen; k++) {
                double x = p->when[k];
                json_array_append_new(w, q->type == SP_CATEGORICAL ? json_string(q->categories[(size_t)x])
                                         : q->type == SP_INTEGER   ? json_integer((json_int_t)x)
                                                                   : json_real(x));
            }
            json_object_set_new(o, "parent", json_string(q->name));
            json_object_set_new(o, "parentValues", w);
        }
        json_array_append_new(a, o);
    }
    return a;
}

typedef struct study_ctx {
    const char *id;         /* as in the URL */
    double now;
    study_ref s;
    json_t *out;            /* the reply's object */
    json_t *best_so_far;    /* [{"trial", "value", "best"}] */
    int maximize;
    int has_best;
    double best;
    int missing;            /* FOUND_ALL, or NO_STUDY */
    char err[1024];
} study_ctx;

static void best_so_far_row(void *arg, int64_t number, double value) {
    study_ctx *c = arg;
    if (!c->has_best || (c->maximize ? value > c->best : value < c->best)) c->best = value;
    c->has_best = 1;
    json_array_append_new(c->best_so_far, json_pack("{sIsfsf}", "trial", (json_int_t)number,
                                                    "value", value, "best", c->best));
}

/* The study's "pareto": the numbers of its Pareto front's trials (study_pareto) when
 * it has several metrics; with one, the best trial's ([] when none). */
static int pareto_list(st_store *st, study_ctx *c, json_t *o) {
    json_t *list = json_array();
    if (c->s.have_spec && c->s.spec.nmetrics > 1) {
        st_trial *t = NULL;
        size_t n = 0;
        int rc = st_trial_list(st, c->s.row.id, &t, &n, c->err, sizeof c->err);
        if (rc) {
            json_decref(list);
            return rc;
        }
        unsigned char *front = tn_xcalloc(n + 1, 1);
        study_pareto(&c->s.spec, t, n, front);
        for (size_t i = 0; i < n; i++)
            if (front[i]) json_array_append_new(list, json_integer(t[i].number));
        free(front);
        st_trials_free(t, n);
    } else {
        json_t *trial = json_object_get(json_object_get(o, "best"), "trial");
        if (trial) json_array_append(list, trial);
    }
    json_object_set_new(o, "pareto", list);
    return 0;
}

static int study_read(st_store *st, void *arg) {
    study_ctx *c = arg;
    int rc = find_study(st, c->id, &c->s, &c->missing, c->err, sizeof c->err);
    if (rc || c->missing) return rc;
    json_t *o = NULL;
    if ((rc = study_entry(st, &c->s, &o, c->err, sizeof c->err))) return rc;
    c->out = o;
    json_t *spec = json_loads(c->s.row.spec, 0, NULL);
    json_object_set_new(o, "spec", spec ? spec : json_null());
    json_object_set_new(o, "params", c->s.have_spec ? params_json(&c->s.spec) : json_array());
    json_object_set_new(o, "parallel",
                        c->s.have_spec ? json_integer(c->s.spec.max_parallel_trials) : json_null());
    double first = 0, last = 0;
    int64_t active = 0;
    if ((rc = st_trial_span(st, c->s.row.id, &first, &last, &active, c->err, sizeof c->err)))
        return rc;
    double end = active > 0 && c->s.row.state == ST_STUDY_RUNNING ? c->now : last;
    double elapsed = first > 0 && end > first ? end - first : 0;
    json_object_set_new(o, "elapsed", json_real(round(elapsed * 1000) / 1000));
    json_object_set_new(o, "error", c->s.row.error ? json_string(c->s.row.error) : json_null());
    c->best_so_far = json_array();
    c->maximize = !c->s.have_spec || c->s.spec.goal != SPEC_MINIMIZE;
    rc = st_trial_outcomes(st, c->s.row.id, best_so_far_row, c, c->err, sizeof c->err);
    json_object_set_new(o, "best_so_far", c->best_so_far);
    c->best_so_far = NULL;
    if (rc == 0) rc = pareto_list(st, c, o);
    return rc;
}

void api_study(st_store *st, const char *id, double now, api_reply *r) {
    study_ctx c = {.id = id, .now = now};
    char err[1024] = "";
    int rc = st_read(st, study_read, &c, err, sizeof err);
    if (rc || c.missing) {
        read_error(r, c.missing, id, &c.s, 0, c.err[0] ? c.err : err);
        json_decref(c.out);
    } else {
        reply_json(r, 200, c.out);
    }
    study_ref_clear(&c.s);
}

/* ---------------------------------------------------------------------------------
 * Trials
 * --------------------------------------------------------------------------------- */

/* A time as JSON: null for 0 (not yet). */
static json_t *time_json(double t) { return t > 0 ? json_real(t) : json_null(); }

/* The trial object of the API. */
static json_t *trial_json(const st_trial *t, double now) {
    json_t *o = json_object();
    json_object_set_new(o, "number", json_integer(t->number));
    json_object_set_new(o, "state", json_string(st_trial_state_name(t->state)));
    json_t *params = t->params ? json_loads(t->params, 0, NULL) : NULL;
    if (!json_is_object(params)) {
        json_decref(params);
        params = json_object();
    }
    json_object_set_new(o, "params", params);
    json_object_set_new(o, "value", t->has_objective ? json_real(t->objective) : json_null());
    json_t *values = json_array(); /* each metric's, in the study's order */
    for (int k = 0; k < t->nvalues; k++) json_array_append_new(values, json_real(t->values[k]));
    json_object_set_new(o, "values", values);
    json_object_set_new(o, "created", time_json(t->created));
    json_object_set_new(o, "started", time_json(t->started));
    json_object_set_new(o, "finished", time_json(t->finished));
    json_t *duration = json_null();
    if (t->started > 0 && t->finished > 0)
        duration = json_real(round((t->finished - t->started) * 1000) / 1000);
    else if (t->started > 0 && t->state == ST_TRIAL_RUNNING)
        duration = json_real(round((now - t->started) * 1000) / 1000);
    json_object_set_new(o, "duration", duration);
    json_object_set_new(o, "attempts", json_integer(t->attempts));
    json_object_set_new(o, "restarts", json_integer(t->restarts));
    json_object_set_new(o, "error", t->error ? json_string(t->error) : json_null());
    json_object_set_new(o, "executor_job",
                        t->executor_job ? json_string(t->executor_job) : json_null());
    json_object_set_new(o, "last_step", t->has_last_step ? json_integer(t->last_step) : json_null());
    return o;
}

static const char *const sorts[ST_SORT_COUNT] = {
    [ST_SORT_NUMBER] = "number",     [ST_SORT_NUMBER_DESC] = "-number",
    [ST_SORT_VALUE] = "value",       [ST_SORT_VALUE_DESC] = "-value",
    [ST_SORT_DURATION] = "duration", [ST_SORT_DURATION_DESC] = "-duration",
    [ST_SORT_STATE] = "state",       [ST_SORT_STATE_DESC] = "-state"};

/* Parses state=A,B (any case) into a mask; 0 with *mask, or -1 (bad names). */
static int parse_states(const char *text, unsigned *mask) {
    *mask = 0;
    if (!text || !*text) return 0;
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int found = -1;
        for (int i = 0; i < ST_TRIAL_NSTATES; i++)
            if (len == strlen(st_trial_state_names[i]) &&
                !strncasecmp(p, st_trial_state_names[i], len))
                found = i;
        if (found < 0) return -1;
        *mask |= 1u << found;
        if (!comma) return 0;
        p = comma + 1;
    }
}

typedef struct trials_ctx {
    const char *id;
    int sort;
    unsigned states;
    int64_t offset, limit;
    double now;
    study_ref s;
    st_trial *rows;
    size_t n;
    int64_t total;
    int missing;     /* FOUND_ALL, or NO_STUDY */
    char err[1024];
} trials_ctx;

static int trials_read(st_store *st, void *arg) {
    trials_ctx *c = arg;
    int rc = find_study(st, c->id, &c->s, &c->missing, c->err, sizeof c->err);
    if (rc || c->missing) return rc;
    return st_trial_page(st, c->s.row.id, c->sort, c->states, c->offset, c->limit, c->now,
                         &c->rows, &c->n, &c->total, c->err, sizeof c->err);
}

void api_trials(st_store *st, const char *id, const api_page_query *q, double now,
                api_reply *r) {
    trials_ctx c = {.id = id, .now = now, .limit = API_DEFAULT_LIMIT};
    if (q->offset && api_parse_int(q->offset, 0, INT32_MAX, &c.offset) != 0) {
        api_error(r, 400, "write offset=N, N >= 0", "bad offset '%.40s'", q->offset);
        return;
    }
    if (q->limit && api_parse_int(q->limit, 0, API_MAX_LIMIT, &c.limit) != 0) {
        api_error(r, 400, "write limit=N with N from 0 to 1000, and page with offset",
                  "bad limit '%.40s': at most %d trials per page", q->limit, API_MAX_LIMIT);
        return;
    }
    c.sort = -1;
    for (int i = 0; i < ST_SORT_COUNT; i++)
        if (!strcmp(q->sort ? q->sort : "number", sorts[i])) c.sort = i;
    if (c.sort < 0) {
        api_error(r, 400,
                  "sort is one of number, -number, value, -value, duration, -duration, state, "
                  "-state",
                  "bad sort '%.40s'", q->sort);
        return;
    }
    if (parse_states(q->state, &c.states) != 0) {
        api_error(r, 400,
                  "state is a comma-separated list of PENDING, RUNNING, SUCCEEDED, FAILED, "
                  "STOPPED, CANCELLED",
                  "bad state '%.60s'", q->state);
        return;
    }
    char err[1024] = "";
    int rc = st_read(st, trials_read, &c, err, sizeof err);
    if (rc || c.missing) {
        read_error(r, c.missing, id, &c.s, 0, c.err[0] ? c.err : err);
    } else {
        json_t *list = json_array();
        for (size_t i = 0; i < c.n; i++) json_array_append_new(list, trial_json(&c.rows[i], now));
        reply_json(r, 200, json_pack("{sIsIsIso}", "total", (json_int_t)c.total, "offset",
                                     (json_int_t)c.offset, "limit", (json_int_t)c.limit,
                                     "trials", list));
    }
    st_trials_free(c.rows, c.n);
    study_ref_clear(&c.s);
}

/* ---- one trial ---- */

static int cmp_names(const void *a, const void *b) {
    return ex_replica_cmp(*(const char *const *)a, *(const char *const *)b);
}

/* The replicas of a trial, derived from its events (docs/dashboard.md, "Replicas"):
 * `started` makes a replica RUNNING; `exited` makes it EXITED (exit code 0) or FAILED
 * (another code), KILLED (a signal), or EXITED when how is not known (it could not
 * start); `restarted` counts a restart. */
static json_t *replicas_json(const st_event *ev, size_t n) {
    json_t *byname = json_object(); /* "chief-0" -> object */
    for (size_t i = 0; i < n; i++) {
        if (!ev[i].replica) continue;
        char name[64];
        snprintf(name, sizeof name, "%s", ev[i].replica);
        char *colon = strchr(name, ':');
        if (colon) *colon = '-';
        json_t *r = json_object_get(byname, name);
        if (!r) {
            r = json_pack("{sssssnsisn}", "name", name, "state", "RUNNING", "exit_code",
                          "restarts", 0, "signal");
            json_object_set_new(byname, name, r);
        }
        const char *kind = ev[i].kind;
        if (!strcmp(kind, EX_EV_STARTED)) {
            json_object_set_new(r, "state", json_string("RUNNING"));
            json_object_set_new(r, "exit_code", json_null());
            json_object_set_new(r, "signal", json_null());
        } else if (!strcmp(kind, EX_EV_EXITED)) {
            const char *state = "EXITED";
            if (ev[i].signal > 0) state = "KILLED";
            else if (ev[i].has_exit_code && ev[i].exit_code != 0) state = "FAILED";
            json_object_set_new(r, "state", json_string(state));
            json_object_set_new(r, "exit_code", ev[i].has_exit_code
                                                    ? json_integer(ev[i].exit_code)
                                                    : json_null());
            json_object_set_new(r, "signal",
                                ev[i].signal > 0 ? json_integer(ev[i].signal) : json_null());
        } else if (!strcmp(kind, EX_EV_RESTARTED)) {
            json_int_t k = json_integer_value(json_object_get(r, "restarts"));
            json_object_set_new(r, "restarts", json_integer(k + 1));
        }
    }
    /* in type order: chief, workers, ps, evaluators, each by index */
    size_t count = json_object_size(byname);
    const char **names = tn_xcalloc(count + 1, sizeof *names);
    const char *key;
    json_t *val;
    size_t k = 0;
    json_object_foreach(byname, key, val) names[k++] = key;
    qsort(names, count, sizeof *names, cmp_names);
    json_t *list = json_array();
    for (size_t i = 0; i < count; i++)
        json_array_append(list, json_object_get(byname, names[i]));
    free(names);
    json_decref(byname);
    return list;
}

/* The log names (chief-0, ...) present in dir, in replica order. */
static json_t *logs_json(const char *dir) {
    json_t *list = json_array();
    DIR *d = opendir(dir);
    if (!d) return list;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t len = strlen(ent->d_name);
        if (len < 5 || len > 60 || strcmp(ent->d_name + len - 4, ".log") != 0) continue;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(len - 4), ent->d_name);
        if (!api_valid_replica(name)) continue;
        if (n == cap) names = tn_xrealloc(names, (cap = cap ? 2 * cap : 8) * sizeof *names);
        names[n++] = tn_xstrdup(name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(list, json_string(names[i]));
        free(names[i]);
    }
    free(names);
    return list;
}

typedef struct trial_ctx {
    const char *id;
    int64_t number;
    study_ref s;
    st_trial t;
    int have_trial;
    st_measurement *ms;
    size_t nms;
    st_event *ev;
    size_t nev;
    int missing;        /* FOUND_ALL, NO_STUDY or NO_TRIAL */
    char err[1024];
} trial_ctx;

static int trial_read(st_store *st, void *arg) {
    trial_ctx *c = arg;
    int rc = find_trial(st, c->id, c->number, &c->s, &c->t, &c->missing, c->err,
                        sizeof c->err);
    if (rc || c->missing) return rc;
    c->have_trial = 1;
    if ((rc = st_measurement_list(st, c->s.row.id, c->number, &c->ms, &c->nms, c->err,
                                  sizeof c->err)))
        return rc;
    return st_event_list(st, c->s.row.id, c->number, &c->ev, &c->nev, c->err, sizeof c->err);
}

void api_trial(st_store *st, const char *id, const char *number, double now, api_reply *r) {
    trial_ctx c = {.id = id};
    if (parse_trial_number(number, &c.number, r) != 0) return;
    char err[1024] = "";
    int rc = st_read(st, trial_read, &c, err, sizeof err);
    if (rc || c.missing) {
        read_error(r, c.missing, id, &c.s, c.number, c.err[0] ? c.err : err);
    } else {
        for (size_t i = 0; i < c.nms; i++) {
            if (!c.t.has_last_step || c.ms[i].step > c.t.last_step) c.t.last_step = c.ms[i].step;
            c.t.has_last_step = 1;
        }
        json_t *o = trial_json(&c.t, now);
        json_t *ms = json_array();
        for (size_t i = 0; i < c.nms; i++) {
            json_t *metrics = json_loads(c.ms[i].metrics, 0, NULL);
            if (!json_is_object(metrics)) {
                json_decref(metrics);
                metrics = json_object();
            }
            json_array_append_new(
                ms, json_pack("{sIsssososf}", "step", (json_int_t)c.ms[i].step, "replica",
                              c.ms[i].replica, "attempt",
                              c.ms[i].attempt > 0 ? json_integer(c.ms[i].attempt) : json_null(),
                              "metrics", metrics, "timestamp", c.ms[i].timestamp));
        }
        json_object_set_new(o, "measurements", ms);
        json_t *ev = json_array();
        for (size_t i = 0; i < c.nev; i++)
            json_array_append_new(
                ev, json_pack("{sfsossso so so}", "time", c.ev[i].time, "replica",
                              c.ev[i].replica ? json_string(c.ev[i].replica) : json_null(),
                              "kind", c.ev[i].kind, "detail",
                              c.ev[i].detail ? json_string(c.ev[i].detail) : json_null(),
                              "exit_code",
                              c.ev[i].has_exit_code ? json_integer(c.ev[i].exit_code)
                                                    : json_null(),
                              "signal",
                              c.ev[i].signal > 0 ? json_integer(c.ev[i].signal) : json_null()));
        json_object_set_new(o, "events", ev);
        json_object_set_new(o, "replicas", replicas_json(c.ev, c.nev));
        json_t *logs = json_array();
        if (c.s.have_spec) {
            char *trial_dir = ex_trial_dir(c.s.spec.job_dir, (long long)c.number);
            char *dir = ex_logs_dir(trial_dir);
            free(trial_dir);
            json_decref(logs);
            logs = logs_json(dir);
            free(dir);
        }
        json_object_set_new(o, "logs", logs);
        reply_json(r, 200, o);
    }
    st_measurements_free(c.ms, c.nms);
    st_events_free(c.ev, c.nev);
    st_trial_clear(&c.t);
    study_ref_clear(&c.s);
}

/* ---- a replica's log ---- */

int api_tail(const char *path, int64_t lines, char ***out, size_t *n, int *truncated,
             char *err, size_t errlen) {
    *out = NULL;
    *n = 0;
    *truncated = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        return tn_error(err, errlen, e == ENOENT || e == ELOOP ? TN_ENOENT : TN_EIO,
                        "cannot open %s: %s", path, strerror(e));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return tn_error(err, errlen, TN_ENOENT, "%s is not a regular file", path);
    }
    /* Fill buf from its end, reading the file backwards in blocks, until it holds
     * `lines` whole lines, the start of the file, or API_TAIL_MAX_BYTES. */
    size_t cap = sb.st_size < API_TAIL_MAX_BYTES ? (size_t)sb.st_size : API_TAIL_MAX_BYTES;
    char *buf = tn_xmalloc(cap + 1);
    off_t start = sb.st_size; /* file offset of the first byte held */
    size_t len = 0;           /* bytes held, at buf + cap - len */
    int64_t breaks = 0;       /* line breaks held, the file's final one left out */
    int rc = 0;
    while (start > 0 && len < cap) {
        size_t want = cap - len < 65536 ? cap - len : 65536;
        if ((off_t)want > start) want = (size_t)start;
        char *at = buf + cap - len - want;
        ssize_t got = pread(fd, at, want, start - (off_t)want);
        if (got < 0) {
            rc = tn_error(err, errlen, TN_EIO, "cannot read %s: %s", path, strerror(errno));
            break;
        }
        if ((size_t)got != want) break; /* the file shrank under us: keep what we have */
        for (size_t i = 0; i < want; i++)
            breaks += at[i] == '\n' && !(start == sb.st_size && i == want - 1);
        start -= (off_t)want;
        len += want;
        /* whole lines held: the first one only if it starts the file */
        if (breaks + 1 - (start > 0) > lines) break;
    }
    close(fd);
    if (rc) {
        free(buf);
        return rc;
    }
    const char *data = buf + cap - len;
    size_t total = len && data[len - 1] == '\n' ? len - 1 : len; /* without the final break */
    int64_t segments = len ? breaks + 1 : 0;
    /* the first segment is cut, and left out, unless it is the only one: a newest line
     * longer than the window keeps its end (a progress bar's \r updates, say) */
    int64_t partial = start > 0 && segments > 1;
    int64_t whole = segments - partial;
    int64_t skip = partial + (whole > lines ? whole - lines : 0);
    *truncated = start > 0 || whole > lines;
    char **list = tn_xcalloc((size_t)(segments - skip) + 1, sizeof *list);
    size_t k = 0, from = 0;
    int64_t idx = 0;
    if (start > 0 && segments == 1) /* cut: from its first whole character */
        while (from < total && from < 3 && ((unsigned char)data[from] & 0xc0) == 0x80) from++;
    for (size_t i = 0; len > 0 && i <= total; i++) {
        if (i < total && data[i] != '\n') continue;
        if (idx++ >= skip) {
            size_t l = i - from;
            if (l && data[from + l - 1] == '\r') l--; /* CRLF */
            list[k++] = tn_utf8_clean(data + from, l, NULL);
        }
        from = i + 1;
    }
    free(buf);
    *out = list;
    *n = k;
    return 0;
}

/* At most the bytes s takes as a JSON string's contents written with
 * TN_JSON_HTML_SAFE: a control character, <, >, & or DEL six (\u00XX), '"' and '\\'
 * two, a byte of another character two (U+2028 and U+2029 take six for three). */
static size_t json_size_bound(const char *s, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        n += c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f ? 6
             : c == '"' || c == '\\' || c >= 0x80                    ? 2
                                                                       : 1;
    }
    return n;
}

/* Keeps the newest of list's n lines that fit API_LOG_REPLY_MAX as JSON (a log of
 * control characters grows sixfold): frees the older ones, moves the rest to the front,
 * and returns how many are left. A newest line too large alone keeps its end, cut at a
 * character's start. *truncated is set when anything went. */
static size_t fit_reply(char **list, size_t n, int *truncated) {
    size_t budget = API_LOG_REPLY_MAX, first = n;
    while (first > 0) {
        size_t len = strlen(list[first - 1]);
        size_t need = json_size_bound(list[first - 1], len) + 3; /* quotes, comma */
        if (need <= budget) {
            budget -= need;
            first--;
            continue;
        }
        if (first == n) { /* the newest alone: its end, as much as fits */
            char *line = list[n - 1];
            size_t from = len, size = 3;
            while (from > 0) {
                size_t add = json_size_bound(line + from - 1, 1);
                if (size + add > budget) break;
                size += add;
                from--;
            }
            while (from < len && ((unsigned char)line[from] & 0xc0) == 0x80) from++;
            memmove(line, line + from, len - from + 1);
            first = n - 1;
            *truncated = 1;
        }
        break;
    }
    if (first == 0) return n;
    *truncated = 1;
    for (size_t i = 0; i < first; i++) free(list[i]);
    memmove(list, list + first, (n - first) * sizeof *list);
    return n - first;
}

typedef struct log_ctx {
    const char *id;
    int64_t number;
    study_ref s;
    st_trial t;
    int missing;     /* FOUND_ALL, NO_STUDY or NO_TRIAL */
    char err[1024];
} log_ctx;

static int log_read(st_store *st, void *arg) {
    log_ctx *c = arg;
    return find_trial(st, c->id, c->number, &c->s, &c->t, &c->missing, c->err, sizeof c->err);
}

void api_log(st_store *st, const char *id, const char *number, const char *replica,
             const char *lines_s, api_reply *r) {
    log_ctx c = {.id = id};
    int64_t lines = API_DEFAULT_LINES;
    if (!api_valid_replica(replica)) {
        api_error(r, 400, "write TYPE-INDEX: chief-0, worker-1, ps-0, evaluator-0",
                  "'%.60s' is not a replica", replica);
        return;
    }
    if (lines_s && api_parse_int(lines_s, 1, API_MAX_LINES, &lines) != 0) {
        api_error(r, 400, "write lines=N with N from 1 to 5000", "bad lines '%.40s'", lines_s);
        return;
    }
    if (parse_trial_number(number, &c.number, r) != 0) return;
    char err[1024] = "";
    int rc = st_read(st, log_read, &c, err, sizeof err);
    if (rc || c.missing) {
        read_error(r, c.missing, id, &c.s, c.number, c.err[0] ? c.err : err);
    } else if (!c.s.have_spec) {
        api_error(r, 404, "the store may have been written by another version of tuner",
                  "the spec stored for study %s does not parse: its jobDir is unknown",
                  c.s.row.name);
    } else {
        /* the file has the replica's own type name (master-0.log for a master) */
        size_t dash = strcspn(replica, "-");
        char tname[16];
        snprintf(tname, sizeof tname, "%.*s", (int)dash, replica);
        char *trial_dir = ex_trial_dir(c.s.spec.job_dir, (long long)c.number);
        char *path = ex_log_path(trial_dir, tname, atoi(replica + dash + 1));
        free(trial_dir);
        char **list = NULL;
        size_t n = 0;
        int truncated = 0;
        char terr[1200];
        rc = api_tail(path, lines, &list, &n, &truncated, terr, sizeof terr);
        if (rc == 0) n = fit_reply(list, n, &truncated);
        if (rc == TN_ENOENT) {
            api_error(r, 404, "the trial's detail lists its logs under \"logs\"",
                      "trial %lld of %s has no log %s", (long long)c.number, c.s.row.name,
                      replica);
        } else if (rc) {
            api_error(r, 500, NULL, "%s", terr);
        } else {
            json_t *a = json_array();
            for (size_t i = 0; i < n; i++) json_array_append_new(a, json_string(list[i]));
            reply_json(r, 200, json_pack("{sssosb}", "replica", replica, "lines", a, "truncated",
                                         truncated));
        }
        for (size_t i = 0; i < n; i++) free(list[i]);
        free(list);
        free(path);
    }
    st_trial_clear(&c.t);
    study_ref_clear(&c.s);
}

/* ---------------------------------------------------------------------------------
 * Learning curves
 * --------------------------------------------------------------------------------- */

/* One measurement kept for the curve of the trial being read. */
typedef struct curve_pt {
    int64_t step;
    int attempt;      /* the run of its replica that wrote it (0: not known) */
    int64_t seq;      /* its arrival in the study's measurement sequence */
    double timestamp;
    double value;
    int rep;          /* its replica: an index into the trial's replicas */
} curve_pt;

/* The rows come in the table's own order (trial, replica, timestamp): no sort in SQLite
 * and no index lookups. Per trial the curve is then chosen as the study loop chooses
 * the curve it stops trials by (study.c, curve_add): the chief's (or master's) points,
 * else those of the replica that reported first; a step reported twice (a restarted
 * replica) keeps the value of the newest attempt, of two of the same attempt the later
 * arrival's (rows of a store older than schema version 4, with no attempt and, from
 * version 1, no sequence, by their timestamps). */
typedef struct curves_ctx {
    const char *id;
    study_ref s;
    tn_buf *out;            /* the reply being written */
    int64_t *numbers;        /* (ntrials) every trial's number, in order */
    st_trial_state *tstates; /* (ntrials) and state */
    size_t ntrials, cap;
    size_t next;             /* the next trial of numbers[] to write */
    int64_t trial;           /* the trial whose points are being gathered, or 0 */
    char replica[64];        /* the replica of the last row */
    int nreps;               /* replicas of the trial so far */
    int chief_rep;           /* the chief's replica index, or -1 */
    int first_rep;           /* the replica whose first point is the earliest */
    double first_ts;         /* that point's timestamp */
    curve_pt *pts;
    size_t npts, ptcap;
    int written;             /* curves written so far (for commas) */
    int missing;             /* FOUND_ALL, or NO_STUDY */
    char err[1024];
} curves_ctx;

static void curves_state(void *arg, int64_t number, st_trial_state state) {
    curves_ctx *c = arg;
    if (c->ntrials == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->numbers = tn_xrealloc(c->numbers, c->cap * sizeof *c->numbers);
        c->tstates = tn_xrealloc(c->tstates, c->cap * sizeof *c->tstates);
    }
    c->numbers[c->ntrials] = number;
    c->tstates[c->ntrials++] = state;
}

/* By step, then from the point that counts least to the one that counts: attempt,
 * arrival, timestamp. */
static int cmp_points(const void *a, const void *b) {
    const curve_pt *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    if (x->attempt != y->attempt) return x->attempt < y->attempt ? -1 : 1;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return x->timestamp < y->timestamp ? -1 : x->timestamp > y->timestamp;
}

/* Writes the curve of numbers[i] with the gathered points (if they are its). */
static void curve_write(curves_ctx *c, size_t i, int with_points) {
    tn_buf *b = c->out;
    tn_buf_printf(b, "%s{\"trial\":%lld,\"state\":", c->written++ ? "," : "",
                   (long long)c->numbers[i]);
    const char *state = st_trial_state_name(c->tstates[i]);
    tn_json_write_string(b, state, strlen(state), TN_JSON_HTML_SAFE);
    tn_buf_str(b, ",\"points\":[");
    if (with_points && c->npts) {
        int rep = c->chief_rep >= 0 ? c->chief_rep : c->first_rep;
        size_t n = 0;
        for (size_t p = 0; p < c->npts; p++)
            if (c->pts[p].rep == rep) c->pts[n++] = c->pts[p];
        qsort(c->pts, n, sizeof *c->pts, cmp_points);
        int k = 0;
        for (size_t p = 0; p < n; p++) {
            if (p + 1 < n && c->pts[p + 1].step == c->pts[p].step) continue; /* newer follows */
            tn_buf_printf(b, "%s[%lld,", k++ ? "," : "", (long long)c->pts[p].step);
            tn_json_write_number(b, c->pts[p].value);
            tn_buf_add(b, "]", 1);
        }
    }
    tn_buf_str(b, "]}");
}

/* Writes the trials up to the gathered one (those have no points), then it. */
static void curves_flush(curves_ctx *c) {
    while (c->next < c->ntrials && c->numbers[c->next] < c->trial) curve_write(c, c->next++, 0);
    if (c->next < c->ntrials && c->numbers[c->next] == c->trial) curve_write(c, c->next++, 1);
    c->npts = 0;
    c->trial = 0;
}

static void curves_point(void *arg, const st_point *p) {
    curves_ctx *c = arg;
    if (!p->has_value) return; /* records without the metric choose nothing */
    if (p->trial != c->trial) {
        if (c->trial) curves_flush(c);
        c->trial = p->trial;
        c->nreps = 0;
        c->chief_rep = -1;
        c->replica[0] = '\0';
    }
    if (c->nreps == 0 || strcmp(p->replica, c->replica) != 0) { /* the next replica's rows */
        snprintf(c->replica, sizeof c->replica, "%s", p->replica);
        c->nreps++;
        if (c->chief_rep < 0 && ex_replica_is_chief(p->replica)) c->chief_rep = c->nreps - 1;
        if (c->nreps == 1 || p->timestamp < c->first_ts) {
            c->first_rep = c->nreps - 1;
            c->first_ts = p->timestamp;
        }
    }
    if (c->npts == c->ptcap) {
        c->ptcap = c->ptcap ? 2 * c->ptcap : 64;
        c->pts = tn_xrealloc(c->pts, c->ptcap * sizeof *c->pts);
    }
    c->pts[c->npts++] = (curve_pt){.step = p->step, .attempt = p->attempt, .seq = p->seq,
                                   .timestamp = p->timestamp, .value = p->value,
                                   .rep = c->nreps - 1};
}

static int curves_read(st_store *st, void *arg) {
    curves_ctx *c = arg;
    int rc = find_study(st, c->id, &c->s, &c->missing, c->err, sizeof c->err);
    if (rc || c->missing) return rc;
    if ((rc = st_trial_states(st, c->s.row.id, curves_state, c, c->err, sizeof c->err)))
        return rc;
    const char *metric = c->s.have_spec ? c->s.spec.metric_tag : "";
    tn_buf_str(c->out, "{\"metric\":");
    if (c->s.have_spec) tn_json_write_string(c->out, metric, strlen(metric), TN_JSON_HTML_SAFE);
    else tn_buf_str(c->out, "null");
    tn_buf_str(c->out, ",\"curves\":[");
    if (c->s.have_spec &&
        (rc = st_points_all(st, c->s.row.id, metric, curves_point, c, c->err, sizeof c->err)))
        return rc;
    if (c->trial) curves_flush(c);
    while (c->next < c->ntrials) curve_write(c, c->next++, 0);
    tn_buf_str(c->out, "]}");
    return 0;
}

void api_curves(st_store *st, const char *id, api_reply *r) {
    curves_ctx c = {.id = id, .out = &r->body};
    r->body.len = 0;
    char err[1024] = "";
    int rc = st_read(st, curves_read, &c, err, sizeof err);
    if (rc || c.missing)
        read_error(r, c.missing, id, &c.s, 0, c.err[0] ? c.err : err);
    else
        r->status = 200;
    free(c.tstates);
    free(c.numbers);
    free(c.pts);
    study_ref_clear(&c.s);
}

/* ---------------------------------------------------------------------------------
 * Cancel
 * --------------------------------------------------------------------------------- */

void api_cancel(st_store *st, const char *id, api_reply *r) {
    study_ref s;
    char err[1024] = "";
    st_study_state was = ST_STUDY_CREATED;
    int missing = FOUND_ALL, found;
    int rc = find_study(st, id, &s, &missing, err, sizeof err);
    if (rc || missing) {
        read_error(r, missing, id, &s, 0, err);
        return;
    }
    if (st_readonly(st)) {
        api_error(r, 409, "cancel with `tuner cancel` where the store can be written",
                  "the dashboard has the store read-only (it cannot be written here): study "
                  "%s cannot be cancelled from it", s.row.name);
        study_ref_clear(&s);
        return;
    }
    rc = st_study_cancel(st, s.row.id, &was, &found, err, sizeof err);
    if (rc || !found) {
        read_error(r, rc ? FOUND_ALL : NO_STUDY, id, &s, 0, err);
    } else if (was == ST_STUDY_SUCCEEDED || was == ST_STUDY_FAILED) {
        api_error(r, 409, "a finished study cannot be cancelled",
                  "study %s already finished (%s): nothing to cancel", s.row.name,
                  st_study_state_name(was));
    } else {
        reply_json(r, 202, json_pack("{ssss}", "study", s.row.name, "state",
                                     st_study_state_name(ST_STUDY_CANCELLED)));
    }
    study_ref_clear(&s);
}

/* ---------------------------------------------------------------------------------
 * The live event stream
 * --------------------------------------------------------------------------------- */

int api_cursor_parse(const char *text, api_cursor *cur) {
    if (!text) return -1;
    const char *dot = strchr(text, '.');
    if (!dot || dot - text > 20) return -1;
    char a[24];
    memcpy(a, text, (size_t)(dot - text));
    a[dot - text] = '\0';
    int64_t t, m;
    if (api_parse_int(a, 0, INT64_MAX, &t) != 0 || api_parse_int(dot + 1, 0, INT64_MAX, &m) != 0)
        return -1;
    cur->trials = t;
    cur->measurements = m;
    return 0;
}

typedef struct watch_ctx {
    api_watch *w;
    const char *id;       /* api_watch_open: the URL's study */
    int gone;             /* the study is not there */
    int changed;          /* something changed since the last poll */
    char err[1024];
} watch_ctx;

/* Reads the study's row and head; rebuilds the entry when they changed. */
static int watch_read(st_store *st, void *arg) {
    watch_ctx *c = arg;
    api_watch *w = c->w;
    study_ref s;
    memset(&s, 0, sizeof s);
    int missing = FOUND_ALL, found = 1;
    int rc = c->id ? find_study(st, c->id, &s, &missing, c->err, sizeof c->err)
                   : st_study_get_id(st, w->id, &s.row, &found, c->err, sizeof c->err);
    if (rc) return rc;
    if (missing || !found) {
        c->gone = 1;
        return 0;
    }
    api_cursor head;
    rc = st_study_cursor(st, s.row.id, &head.trials, &head.measurements, c->err, sizeof c->err);
    if (rc == 0 && (c->id || head.trials != w->head.trials ||
                    head.measurements != w->head.measurements ||
                    w->state != (int)s.row.state || w->updated != s.row.updated)) {
        if (!c->id) parse_spec(&s);
        json_t *e = NULL;
        rc = study_entry(st, &s, &e, c->err, sizeof c->err);
        if (rc == 0) {
            tn_buf b = {0};
            tn_json_write(&b, e, -1, TN_JSON_HTML_SAFE);
            json_decref(e);
            free(w->entry);
            w->entry = b.data;
            w->head = head;
            w->state = (int)s.row.state;
            w->updated = s.row.updated;
            w->version++;
            c->changed = 1;
            if (c->id) {
                w->id = s.row.id;
                w->name = tn_xstrdup(s.row.name);
                w->metric = tn_xstrdup(s.have_spec ? s.spec.metric_tag : "");
            }
        }
    }
    study_ref_clear(&s);
    return rc;
}

int api_watch_open(st_store *st, const char *id, api_watch *w, api_reply *r) {
    memset(w, 0, sizeof *w);
    w->state = -1;
    watch_ctx c = {.w = w, .id = id};
    char err[1024] = "";
    int rc = st_read(st, watch_read, &c, err, sizeof err);
    if (rc || c.gone) {
        read_error(r, c.gone ? NO_STUDY : FOUND_ALL, id, NULL, 0, c.err[0] ? c.err : err);
        api_watch_clear(w);
        return -1;
    }
    return 0;
}

int api_watch_poll(st_store *st, api_watch *w, int *gone, char *err, size_t errlen) {
    watch_ctx c = {.w = w};
    char terr[1024] = "";
    *gone = 0;
    int rc = st_read(st, watch_read, &c, terr, sizeof terr);
    if (rc) return tn_error(err, errlen, rc, "%s", c.err[0] ? c.err : terr);
    *gone = c.gone;
    return 0;
}

void api_watch_clear(api_watch *w) {
    if (!w) return;
    free(w->name);
    free(w->metric);
    free(w->entry);
    memset(w, 0, sizeof *w);
}

typedef struct sse_ctx {
    const api_watch *w;
    api_cursor *cur;
    int64_t limit;
    tn_buf *out;
    int events;
    char err[1024];
} sse_ctx;

static void sse_point(void *arg, const st_point *p) {
    sse_ctx *c = arg;
    c->cur->measurements = p->seq;
    tn_buf_printf(c->out, "event: measurement\nid: %lld.%lld\ndata: {\"trial\":%lld,\"step\":%lld,\"value\":",
                   (long long)c->cur->trials, (long long)p->seq, (long long)p->trial,
                   (long long)p->step);
    if (p->has_value) tn_json_write_number(c->out, p->value);
    else tn_buf_str(c->out, "null");
    tn_buf_str(c->out, ",\"replica\":");
    tn_json_write_string(c->out, p->replica, strlen(p->replica), TN_JSON_HTML_SAFE);
    tn_buf_str(c->out, "}\n\n");
    c->events++;
}

static int sse_read(st_store *st, void *arg) {
    sse_ctx *c = arg;
    st_trial *rows = NULL;
    size_t n = 0;
    int rc = st_trial_changes(st, c->w->id, c->cur->trials, c->limit, &rows, &n, c->err,
                              sizeof c->err);
    if (rc) return rc;
    /* One snapshot: every trial a measurement below belongs to is already sent. */
    double now_s = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].changed > c->cur->trials) c->cur->trials = rows[i].changed;
        if (now_s == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            now_s = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
        }
        json_t *t = trial_json(&rows[i], now_s);
        tn_buf_printf(c->out, "event: trial\nid: %lld.%lld\ndata: ", (long long)c->cur->trials,
                       (long long)c->cur->measurements);
        tn_json_write(c->out, t, -1, TN_JSON_HTML_SAFE);
        tn_buf_str(c->out, "\n\n");
        json_decref(t);
        c->events++;
    }
    st_trials_free(rows, n);
    /* The trial batch was cut short: its measurements may be of trials not sent yet. */
    if ((int64_t)n >= c->limit) return 0;
    return st_points_since(st, c->w->id, c->w->metric, c->cur->measurements,
                           c->limit - (int64_t)n, sse_point, c, c->err, sizeof c->err);
}

int api_sse_changes(st_store *st, const api_watch *w, api_cursor *cur, int64_t limit,
                    tn_buf *out, char *err, size_t errlen) {
    sse_ctx c = {.w = w, .cur = cur, .limit = limit > 0 ? limit : 1, .out = out};
    char terr[1024] = "";
    int rc = st_read(st, sse_read, &c, terr, sizeof terr);
    if (rc) return tn_error(err, errlen, rc, "%s", c.err[0] ? c.err : terr);
    return c.events;
}

void api_sse_study(const api_watch *w, const api_cursor *cur, tn_buf *out) {
    tn_buf_printf(out, "event: study\nid: %lld.%lld\ndata: %s\n\n", (long long)cur->trials,
                   (long long)cur->measurements, w->entry ? w->entry : "null");
}

/* ---------------------------------------------------------------------------------
 * Request framing
 * --------------------------------------------------------------------------------- */

enum { FR_REQUEST_LINE, FR_HEADERS, FR_BODY, FR_CHUNK_SIZE, FR_CHUNK_DATA, FR_TRAILERS };

void api_frame_init(api_frame *f, size_t max_head, size_t max_body) {
    memset(f, 0, sizeof *f);
    f->state = API_FRAME_MORE;
    f->max_head = max_head;
    f->max_body = max_body;
    f->part = FR_REQUEST_LINE;
    f->first_sp = f->last_sp = f->pending_sp = -1;
}

void api_frame_refuse(api_frame *f, int status, const char *fmt, ...) {
    f->state = API_FRAME_REFUSED;
    f->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->why, sizeof f->why, fmt, ap);
    va_end(ap);
}

/* Whether line (n bytes) is the header `name`; *value then points at its value, of
 * *vlen bytes: without the spaces before it and the blanks after it, as evhttp reads
 * it (a tab before the value stays: "Expect:\t100-continue" is not 100-continue). */
static int frame_header(const char *line, size_t n, const char *name, const char **value,
                        size_t *vlen) {
    size_t k = strlen(name);
    if (n <= k || line[k] != ':' || strncasecmp(line, name, k) != 0) return 0;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && *v == ' ') v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t')) end--;
    *value = v;
    *vlen = (size_t)(end - v);
    return 1;
}

/* The version token v (n bytes): HTTP/<digits>.<digits>, as evhttp 2.1 reads it (a
 * major version above 1 it refuses). Returns the major version times 1000 plus the
 * minor (each capped at 999), or -1 when v is not one. */
static int frame_version(const char *v, size_t n) {
    if (n < 8 || memcmp(v, "HTTP/", 5) != 0) return -1;
    size_t i = 5;
    int part[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        size_t start = i;
        for (; i < n && v[i] >= '0' && v[i] <= '9'; i++)
            if (part[k] < 999) part[k] = 10 * part[k] + (v[i] - '0');
        if (i == start || (i - start > 1 && v[start] == '0')) return -1; /* none, or 01 */
        if (k == 0 && (i == n || v[i++] != '.')) return -1;
    }
    return i == n ? 1000 * part[0] + part[1] : -1;
}

/* The request line, split as evhttp 2.1.12 splits it (evhttp_parse_request_line): the
 * spaces at its end left out, at least 14 bytes ("GET / HTTP/1.0"), the method up to
 * the first space, the version after the last space, the target between them (not
 * empty). The method must be one evhttp knows (else 501) and the version HTTP/0.x or
 * HTTP/1.x (a malformed one 400, a later one 505): whatever evhttp would refuse with
 * its own page is refused here, in the dashboard's form. The scan kept the positions
 * of the first space and of the last one before a byte that is not a space, the end of
 * the last such byte, and the last run of such bytes (the version). */
static void frame_request_line(api_frame *f) {
    if (f->end < 14 || f->first_sp < 0 || f->last_sp <= f->first_sp + 1) {
        api_frame_refuse(f, 400, "malformed request line: send METHOD TARGET HTTP/1.1");
        return;
    }
    static const char *const methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS",
                                          "CONNECT", "HEAD", "TRACE"}; /* the last two: no body */
    size_t m = (size_t)f->first_sp, known = sizeof methods / sizeof methods[0];
    for (size_t i = 0; i < known; i++)
        if (m == strlen(methods[i]) && !memcmp(f->line, methods[i], m)) {
            known = i;
            break;
        }
    if (known == sizeof methods / sizeof methods[0]) {
        int token = m > 0 && m <= 16; /* named in the reply only when short and plain */
        for (size_t i = 0; i < m && token; i++)
            token = isalnum((unsigned char)f->line[i]) || f->line[i] == '-' || f->line[i] == '_';
        if (token)
            api_frame_refuse(f, 501, "unknown method %.*s (methods are case-sensitive)",
                             (int)m, f->line);
        else
            api_frame_refuse(f, 501, "unknown method");
        return;
    }
    f->connect = known == 6;
    f->head = known == 7;
    f->no_body = known >= 7;
    int version = f->vlen <= sizeof f->version ? frame_version(f->version, f->vlen) : -1;
    if (version < 0) {
        api_frame_refuse(f, 400, "malformed HTTP version: send HTTP/1.1");
        return;
    }
    /* HTTP/1.0 and 1.1 only: evhttp would serve 0.9 or 1.2 and echo that version in
     * its status line */
    if (version != 1000 && version != 1001) {
        api_frame_refuse(f, 505, "HTTP/%d.%d is not served here: send HTTP/1.1",
                         version / 1000, version % 1000);
        return;
    }
    f->http11 = version >= 1001;
    f->part = FR_HEADERS;
}

int api_frame_target(const api_frame *f, size_t *off, size_t *len, int *connect) {
    if (f->part == FR_REQUEST_LINE || f->last_sp <= f->first_sp + 1) return 0;
    *off = (size_t)f->first_sp + 1;
    *len = (size_t)(f->last_sp - f->first_sp - 1);
    *connect = f->connect;
    return 1;
}

/* The end of the headers: how the body is framed. */
static void frame_headers_end(api_frame *f) {
    const char *bad = f->ncl > 1             ? "more than one Content-Length header"
                      : f->nte > 1           ? "more than one Transfer-Encoding header"
                      : f->ncl && f->nte     ? "both Content-Length and Transfer-Encoding"
                      : f->te_other          ? "a Transfer-Encoding other than chunked"
                      : f->cl_bad            ? "the Content-Length is not a number"
                                             : NULL;
    if (bad) {
        api_frame_refuse(f, 400, "%s", bad);
    } else if (f->no_body || (!f->nte && f->body == 0)) {
        f->state = API_FRAME_WHOLE;
    } else if (f->expect == 2 && f->http11) { /* evhttp's 417, before the body */
        api_frame_refuse(f, 417, "Expect is not 100-continue");
    } else if (f->body > (int64_t)f->max_body) {
        api_frame_refuse(f, 413, "the body is over %zu bytes", f->max_body);
    } else {
        f->expect_continue = f->expect == 1 && f->http11;
        f->part = f->nte ? FR_CHUNK_SIZE : FR_BODY;
        f->left = f->body;
    }
}

/* A header or trailer line (f->part says which). */
static void frame_header_line(api_frame *f, size_t n) {
    if (n == 0) {
        if (f->part == FR_HEADERS) frame_headers_end(f);
        else f->state = API_FRAME_WHOLE;
        return;
    }
    if (f->line[0] == ' ' || f->line[0] == '\t') {
        api_frame_refuse(f, 400, "a header line folded onto the line before it");
        return;
    }
    size_t stored = n < sizeof f->line ? n : sizeof f->line - 1;
    if (!f->colon) {
        api_frame_refuse(f, 400, "malformed header line");
        return;
    }
    /* the name: a token, right before the colon ("Host : x" and ": x" are not) */
    const char *colon = memchr(f->line, ':', stored);
    size_t nlen = colon ? (size_t)(colon - f->line) : stored;
    int token = nlen > 0;
    for (size_t i = 0; i < nlen && token; i++)
        token = isalnum((unsigned char)f->line[i]) || strchr("!#$%&'*+-.^_`|~", f->line[i]);
    if (!token) {
        api_frame_refuse(f, 400, "malformed header name: a token right before ':'");
        return;
    }
    if (!colon) return; /* a long name: not one that frames the body */
    if (f->part == FR_TRAILERS) return;
    const char *v;
    size_t vlen;
    if (frame_header(f->line, stored, "Content-Length", &v, &vlen)) {
        f->ncl++;
        if (vlen == 0 || n != stored) f->cl_bad = 1;
        for (size_t i = 0; i < vlen && !f->cl_bad; i++) {
            if (v[i] < '0' || v[i] > '9') f->cl_bad = 1;
            else if (f->body <= (int64_t)f->max_body) f->body = 10 * f->body + (v[i] - '0');
        }
    } else if (frame_header(f->line, stored, "Transfer-Encoding", &v, &vlen)) {
        f->nte++;
        if (n != stored || vlen != 7 || strncasecmp(v, "chunked", 7) != 0) f->te_other = 1;
    } else if (!f->expect && frame_header(f->line, stored, "Expect", &v, &vlen)) {
        /* the first one counts, as evhttp_find_header finds it */
        f->expect = n == stored && vlen == 12 && strncasecmp(v, "100-continue", 12) == 0 ? 1 : 2;
    }
}

/* A chunk-size line: hex digits, then its end or a space (what evhttp 2.1 reads). */
static void frame_chunk_size(api_frame *f, size_t n) {
    if (n == 0) return; /* the line break after a chunk's data */
    size_t i = 0;
    int64_t size = 0;
    for (; i < n && i < sizeof f->line - 1 && isxdigit((unsigned char)f->line[i]); i++) {
        int d = f->line[i] <= '9' ? f->line[i] - '0' : (f->line[i] | 0x20) - 'a' + 10;
        if (size <= (int64_t)f->max_body) size = 16 * size + d;
    }
    if (i == 0 || (i < n && (i >= sizeof f->line - 1 || f->line[i] != ' '))) {
        api_frame_refuse(f, 400, "malformed chunk size");
        return;
    }
    if (f->body + size > (int64_t)f->max_body) {
        api_frame_refuse(f, 413, "the body is over %zu bytes", f->max_body);
        return;
    }
    f->body += size;
    f->left = size;
    f->part = size ? FR_CHUNK_DATA : FR_TRAILERS;
}

size_t api_frame_scan(api_frame *f, const char *p, size_t len) {
    size_t i = 0;
    while (i < len && f->state == API_FRAME_MORE) {
        if (f->part == FR_BODY || f->part == FR_CHUNK_DATA) {
            size_t take = len - i < (uint64_t)f->left ? len - i : (size_t)f->left;
            i += take;
            f->left -= (int64_t)take;
            if (f->left == 0) {
                if (f->part == FR_BODY) f->state = API_FRAME_WHOLE;
                else f->part = FR_CHUNK_SIZE;
            }
            continue;
        }
        char c = p[i++];
        if (f->part != FR_CHUNK_SIZE && (c == '\0' || (f->last == '\r' && c != '\n'))) {
            /* evhttp would refuse either with its own page (a NUL ends its strings; a CR
             * inside a header line it takes for a broken line fold) */
            api_frame_refuse(f, 400, "%s in the request line or headers",
                         c == '\0' ? "a NUL byte" : "a CR not followed by LF");
            break;
        }
        if (f->part == FR_CHUNK_SIZE) {
            if (++f->framing > f->max_body) {
                api_frame_refuse(f, 413, "the body's chunk-size lines are over %zu bytes",
                             f->max_body);
                break;
            }
        } else if (++f->head_bytes > f->max_head) {
            api_frame_refuse(f, 431, "the request line and headers are over %zu bytes",
                         f->max_head);
            break;
        }
        if (c != '\n') {
            if (f->linelen < sizeof f->line - 1) f->line[f->linelen] = c;
            if (f->part == FR_REQUEST_LINE && c == ' ') {
                if (f->first_sp < 0) f->first_sp = (int64_t)f->linelen;
                f->pending_sp = (int64_t)f->linelen;
            } else if (f->part == FR_REQUEST_LINE && c != '\r') {
                /* (a CR ends the line, or is refused at the next byte) */
                if (f->pending_sp >= (int64_t)f->end) { /* spaces since the last byte */
                    f->last_sp = f->pending_sp;
                    f->vlen = 0;
                }
                if (f->vlen < sizeof f->version) f->version[f->vlen] = c;
                f->vlen++;
                f->end = f->linelen + 1;
            }
            f->linelen++;
            f->last = c;
            f->colon |= c == ':';
            continue;
        }
        /* a line, without its CR LF or LF (evhttp's EVBUFFER_EOL_CRLF) */
        size_t n = f->linelen - (f->linelen && f->last == '\r');
        if (n < sizeof f->line) f->line[n] = '\0';
        else f->line[sizeof f->line - 1] = '\0';
        if (f->part == FR_REQUEST_LINE && n == 0) {
            f->leading += f->linelen + 1; /* an empty line before it: ignored */
        } else if (f->part == FR_REQUEST_LINE) {
            frame_request_line(f);
        } else if (f->part == FR_CHUNK_SIZE) {
            frame_chunk_size(f, n);
        } else {
            frame_header_line(f, n);
        }
        f->linelen = 0;
        f->last = 0;
        f->colon = 0;
    }
    return i;
}
