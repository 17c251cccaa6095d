/*
 * spec_yaml.c — a YAML spec read into the JSON tree spec.c validates (see spec_yaml.h;
 * the format: docs/spec.md, "YAML: gcloud's config file").
 *
 * One pass over libyaml's events with an explicit stack of the mappings and sequences
 * open, so that nesting, aliases and size are bounded as they are read rather than
 * after a document is built. Beside each value the pass builds its location: a JSON
 * array [POS, KIDS] (POS the line and column in one integer, KIDS an object of the
 * members' locations for a mapping, an array of the items' for a sequence, null for a
 * scalar), plus [.., TEXT, VALUE] for a plain scalar YAML read as something other than
 * a string, so that a message can say how YAML read it. A member's POS is its key's.
 * Anchored nodes are kept; an alias is a deep copy of its anchor, counted against
 * SY_MAX_ALIAS_NODES. Problems are recorded at the node's path and the pass goes on;
 * a syntax error, too deep a nesting or too many aliased values end it.
 */
#include "tuner/spec_yaml.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "common/status.h"

/* ---- Positions: line and column (1-based) in one JSON integer ---- */

#define COL_BITS 25 /* columns below 2^25: more than a 16 MiB line */
#define COL_MASK (((json_int_t)1 << COL_BITS) - 1)

static json_int_t pos_make(size_t line, size_t column) {
    if (column > (size_t)COL_MASK) column = (size_t)COL_MASK;
    return ((json_int_t)line << COL_BITS) | (json_int_t)column;
}

static json_int_t pos_of(yaml_mark_t m) { return pos_make(m.line + 1, m.column + 1); }

static int pos_line(json_int_t p) { return (int)(p >> COL_BITS); }

static int pos_column(json_int_t p) { return (int)(p & COL_MASK); }

struct sy_where {
    json_t *tree; /* the root's location: [POS, KIDS] */
};

/* A new location: [pos, kids] (kids taken; NULL: a scalar's null). */
static json_t *loc_new(json_int_t pos, json_t *kids) {
    json_t *loc = json_pack("[Io]", pos, kids ? kids : json_null());
    if (!loc) abort(); /* out of memory */
    return loc;
}

/* ---- The pass's state ---- */

typedef struct anchor {
    char *name;
    json_t *value;   /* the anchored node and its location (references) */
    json_t *loc;
    size_t nodes;    /* values in it: what an alias of it copies */
    int height;      /* mappings and sequences nested in it, itself included */
} anchor;

typedef struct frame {
    json_t *value;      /* the mapping (object) or sequence (array) being read */
    json_t *kids;       /* the locations of its members (object) or items (array) */
    json_t *merges;     /* mapping: what its << key merges in; NULL: none */
    json_int_t merge_pos; /* where that << key was */
    json_int_t pos;     /* where the node starts */
    char *anchor;       /* its anchor, registered when it ends; NULL: none */
    int is_map;
    int height;         /* nesting below it so far, itself included */
    size_t nodes;       /* values in it so far, itself included */
    size_t path_len;    /* the path's length outside it, restored when it ends */
    /* A mapping alternates key and value: */
    int have_key;       /* a key was read: the next node is its value */
    char *key;          /* that key (NULL: not a string; its value is dropped) */
    int drop;           /* the value is dropped (the key's problem is reported) */
    int merge;          /* the key is <<: the value is merged in when the mapping ends */
    json_int_t key_pos; /* where the key was */
    size_t index;       /* sequence: the next item's index */
} frame;

typedef struct conv {
    yaml_parser_t parser;
    const char *text;          /* the document, for positions of encoding errors */
    size_t len;
    frame stack[SY_MAX_DEPTH]; /* the mappings and sequences open, outermost first */
    int depth;
    anchor *anchors;
    size_t nanchors;
    size_t alias_nodes;        /* values copied by aliases so far */
    int documents;             /* documents started */
    json_t *root, *root_loc;   /* the document's node, once read */
    spec_errors *errs;         /* appended to */
    size_t nerrs;              /* problems found by this pass */
    int stop;                  /* a problem that ends the pass was found */
    char *path;                /* the path of the node being read */
    size_t plen, pcap;
} conv;

static void add_error(conv *c, const char *path, json_int_t pos, char *message) {
    spec_errors *e = c->errs;
    e->items = tn_xrealloc(e->items, (e->n + 1) * sizeof *e->items);
    spec_error *it = &e->items[e->n++];
    it->path = tn_xstrdup(path);
    it->message = message;
    it->line = pos_line(pos);
    it->column = pos_column(pos);
    c->nerrs++;
}

/* Records a problem at the current path. */
static void fail(conv *c, json_int_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(conv *c, json_int_t pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add_error(c, c->path, pos, tn_xvasprintf(fmt, ap));
    va_end(ap);
}

/* ---- The path of the node being read, as spec.c writes paths ---- */

static void path_append(conv *c, const char *s, size_t n) {
    if (c->plen + n + 1 > c->pcap) {
        c->pcap = (c->plen + n + 1) * 2;
        c->path = tn_xrealloc(c->path, c->pcap);
    }
    memcpy(c->path + c->plen, s, n);
    c->plen += n;
    c->path[c->plen] = '\0';
}

static void path_key(conv *c, const char *key) {
    if (c->plen) path_append(c, ".", 1);
    path_append(c, key, strlen(key));
}

static void path_cut(conv *c, size_t len) {
    c->plen = len;
    c->path[len] = '\0';
}

/* Extends the path to the node about to be read: the member of the open mapping whose
 * key was read, or the next item of the open sequence (a key keeps its mapping's
 * path). Returns the length to cut back to. */
static size_t path_enter(conv *c) {
    size_t old = c->plen;
    if (c->depth == 0) return old;
    frame *f = &c->stack[c->depth - 1];
    if (!f->is_map) {
        char buf[32];
        int n = snprintf(buf, sizeof buf, "[%zu]", f->index);
        path_append(c, buf, (size_t)n);
    } else if (f->have_key && f->key) {
        path_key(c, f->key);
    }
    return old;
}

/* ---- Scalars: typed as PyYAML (YAML 1.1) reads them, plus YAML 1.2's forms ---- */

static int is_word(const char *s, size_t n, const char *const *words) {
    for (size_t i = 0; words[i]; i++)
        if (strlen(words[i]) == n && memcmp(s, words[i], n) == 0) return 1;
    return 0;
}

static const char *const NULLS[] = {"~", "null", "Null", "NULL", NULL};
static const char *const TRUES[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                    "on", "On", "ON", NULL};
static const char *const FALSES[] = {"false", "False", "FALSE", "no", "No", "NO",
                                     "off", "Off", "OFF", NULL};

/* An integer: [-+]? then 0b[01_]+, 0x[0-9a-fA-F_]+, 0o[0-7_]+ (YAML 1.2), 0[0-7_]+
 * (octal, as YAML 1.1: "0_" is 0), 0, or [1-9][0-9_]*: a digit first, so "_1" and "-_1"
 * are strings, as PyYAML reads them. Returns 1 with *out, 2 when it is one but out of
 * the int64 range, 0 when it is not one. */
static int parse_int(const char *s, size_t n, json_int_t *out) {
    size_t i = 0;
    int neg = 0, octal0 = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    if (i >= n || !isdigit((unsigned char)s[i])) return 0;
    unsigned base = 10;
    if (s[i] == '0' && i + 1 < n) {
        char k = s[i + 1];
        if (k == 'b') base = 2, i += 2;
        else if (k == 'x') base = 16, i += 2;
        else if (k == 'o') base = 8, i += 2;
        else base = 8, i += 1, octal0 = 1;
    }
    uint64_t v = 0;
    int digits = 0, over = 0;
    for (; i < n; i++) {
        if (s[i] == '_') continue;
        unsigned d;
        if (isdigit((unsigned char)s[i])) d = (unsigned)(s[i] - '0');
        else if (base == 16 && isxdigit((unsigned char)s[i]))
            d = (unsigned)(tolower((unsigned char)s[i]) - 'a' + 10);
        else return 0;
        if (d >= base) return 0;
        if (v > (UINT64_MAX - d) / base) over = 1;
        else v = v * base + d;
        digits++;
    }
    if (!digits && !octal0) return 0;
    if (over || v > (uint64_t)INT64_MAX + (uint64_t)neg) return 2;
    *out = neg ? (json_int_t)(0 - v) : (json_int_t)v;
    return 1;
}

/* A float: [-+]? then digits with '_' and an optional fraction, or a fraction alone,
 * then an optional exponent; with a '.' or an exponent (so not an integer). Returns 1
 * with *out, 2 for .inf and .nan (and numbers beyond a double), 0 when it is not one. */
static int parse_float(const char *s, size_t n, double *out) {
    size_t i = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) i++;
    if (n - i == 4 && s[i] == '.' &&
        (!memcmp(s + i + 1, "inf", 3) || !memcmp(s + i + 1, "Inf", 3) ||
         !memcmp(s + i + 1, "INF", 3)))
        return 2;
    if (n == 4 && (!memcmp(s, ".nan", 4) || !memcmp(s, ".NaN", 4) || !memcmp(s, ".NAN", 4)))
        return 2;
    size_t int_digits = 0, frac_digits = 0;
    int dot = 0, expo = 0;
    if (i < n && isdigit((unsigned char)s[i]))
        for (; i < n && (isdigit((unsigned char)s[i]) || s[i] == '_'); i++) int_digits++;
    if (i < n && s[i] == '.') {
        dot = 1;
        for (i++; i < n && (isdigit((unsigned char)s[i]) || s[i] == '_'); i++)
            frac_digits += s[i] != '_';
    }
    if (!int_digits && !frac_digits) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+')) i++;
        size_t e = 0;
        for (; i < n && isdigit((unsigned char)s[i]); i++) e++;
        if (!e) return 0;
        expo = 1;
    }
    if (i != n || !(dot || expo)) return 0;
    char *buf = tn_xmalloc(n + 1), *b = buf;
    for (size_t k = 0; k < n; k++)
        if (s[k] != '_') *b++ = s[k];
    *b = '\0';
    errno = 0;
    double d = strtod(buf, NULL);
    free(buf);
    if (isinf(d)) return 2;
    *out = d;
    return 1;
}

/* What a plain scalar is: null, a boolean, an integer, a float, or a string. Returns
 * the value (a new reference), or NULL with *why set for a number YAML reads but a
 * spec cannot hold. */
static json_t *resolve_plain(const char *s, size_t n, const char **why) {
    json_int_t i;
    double d;
    if (n == 0 || is_word(s, n, NULLS)) return json_null();
    if (is_word(s, n, TRUES)) return json_true();
    if (is_word(s, n, FALSES)) return json_false();
    switch (parse_int(s, n, &i)) {
    case 1: return json_integer(i);
    case 2: *why = "is an integer beyond 64 bits"; return NULL;
    default: break;
    }
    switch (parse_float(s, n, &d)) {
    case 1: return json_real(d);
    case 2: *why = "is not a finite number (a spec has no use for infinities or NaN)"; return NULL;
    default: break;
    }
    return json_stringn(s, n); /* NULL when not UTF-8: libyaml's input is checked */
}

/* How a JSON value is named in messages. */
static const char *kind_of(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "a mapping";
    case JSON_ARRAY: return "a sequence";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* The value of a scalar event, typed by its tag, its style and its text (a new
 * reference); on a problem, reported at the current path, null. */
static json_t *scalar_value(conv *c, const yaml_event_t *ev, int *plain_nonstring) {
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    json_int_t pos = pos_of(ev->start_mark);
    const char *why = NULL;
    json_t *v = NULL;
    *plain_nonstring = 0;
    if (!tag && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        v = resolve_plain(s, n, &why);
        *plain_nonstring = v && !json_is_string(v);
    } else if (!tag || !strcmp(tag, "!") || !strcmp(tag, YAML_STR_TAG)) {
        v = json_stringn(s, n);
    } else if (!strcmp(tag, YAML_INT_TAG)) {
        json_int_t i;
        int r = parse_int(s, n, &i);
        if (r == 1) v = json_integer(i);
        else why = r == 2 ? "is an integer beyond 64 bits" : "is not an integer (!!int)";
    } else if (!strcmp(tag, YAML_FLOAT_TAG)) {
        json_int_t i;
        double d;
        int r = parse_float(s, n, &d);
        if (r == 1) v = json_real(d);
        else if (parse_int(s, n, &i) == 1) v = json_real((double)i);
        else why = r == 2 ? "is not a finite number (a spec has no use for infinities or NaN)"
                          : "is not a number (!!float)";
    } else if (!strcmp(tag, YAML_BOOL_TAG)) {
        if (is_word(s, n, TRUES)) v = json_true();
        else if (is_word(s, n, FALSES)) v = json_false();
        else why = "is not a boolean (!!bool: true or false)";
    } else if (!strcmp(tag, YAML_NULL_TAG)) {
        if (n == 0 || is_word(s, n, NULLS)) v = json_null();
        else why = "is not null (!!null: null, ~ or nothing)";
    } else {
        fail(c, pos, "the tag %.60s is not supported: a spec holds strings, numbers, "
                     "booleans, null, mappings and sequences", tag);
        return json_null();
    }
    if (!v && !why) why = "is not valid UTF-8";
    if (!v) {
        fail(c, pos, "%.*s%s %s", n > 60 ? 60 : (int)n, s, n > 60 ? "..." : "", why);
        return json_null();
    }
    return v;
}

/* ---- Anchors ---- */

static void anchor_add(conv *c, const char *name, json_t *value, json_t *loc, size_t nodes,
                       int height) {
    c->anchors = tn_xrealloc(c->anchors, (c->nanchors + 1) * sizeof *c->anchors);
    anchor *a = &c->anchors[c->nanchors++];
    a->name = tn_xstrdup(name);
    a->value = json_incref(value);
    a->loc = json_incref(loc);
    a->nodes = nodes;
    a->height = height;
}

/* The anchor an alias names: the latest defined before it (YAML allows redefining). */
static const anchor *anchor_find(const conv *c, const char *name) {
    for (size_t i = c->nanchors; i-- > 0;)
        if (!strcmp(c->anchors[i].name, name)) return &c->anchors[i];
    return NULL;
}

/* ---- Handing a node read whole to the mapping or sequence it is in ---- */

/* Moves what a merge value (a mapping, or a sequence of mappings) holds into f's
 * mapping, for each key it does not have yet: the keys written in the mapping win, and
 * of the merged mappings, the first listed. */
static void apply_merges(frame *f) {
    if (!f->merges) return;
    json_t *mv = json_array_get(f->merges, 0), *ml = json_array_get(f->merges, 1);
    int many = json_is_array(mv); /* a sequence of mappings, else one mapping */
    size_t n = many ? json_array_size(mv) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *v = many ? json_array_get(mv, i) : mv;
        json_t *l = many ? json_array_get(json_array_get(ml, 1), i) : ml;
        json_t *lk = json_array_get(l, 1);
        const char *key;
        json_t *member;
        json_object_foreach(v, key, member) {
            if (json_object_get(f->value, key)) continue;
            json_object_set(f->value, key, member);
            json_t *mk = json_object_get(lk, key);
            json_object_set(f->kids, key, mk ? mk : json_null());
        }
    }
}

/* A node read whole: value and loc (new references, taken), the values in it (nodes),
 * its nesting (height), its anchor, where it starts, and key: its text when it may be a
 * mapping's key (a string scalar), else NULL with not_key saying why when the reason
 * is not its kind ("": already reported); merge_key: it is a plain <<. */
static void node_done(conv *c, json_t *value, json_t *loc, size_t nodes, int height,
                      const char *anchor_name, json_int_t pos, const char *key,
                      const char *not_key, int merge_key) {
    if (anchor_name) anchor_add(c, anchor_name, value, loc, nodes, height);
    if (c->depth == 0) {
        c->root = value;
        c->root_loc = loc;
        return;
    }
    frame *f = &c->stack[c->depth - 1];
    if (!f->is_map) {
        json_array_append_new(f->value, value);
        json_array_append_new(f->kids, loc);
        f->index++;
        f->nodes += nodes;
        if (height + 1 > f->height) f->height = height + 1;
        return;
    }
    if (!f->have_key) { /* the node is a key */
        f->have_key = 1;
        f->drop = 0;
        f->merge = 0;
        free(f->key);
        f->key = NULL;
        f->key_pos = pos;
        if (merge_key) {
            f->merge = 1;
            f->key = tn_xstrdup("<<");
            if (f->merges) {
                size_t old = c->plen;
                path_key(c, "<<");
                fail(c, pos, "duplicate key (also on line %d)", pos_line(f->merge_pos));
                path_cut(c, old);
                f->drop = 1;
            }
            f->merge_pos = pos;
        } else if (!key) {
            if (not_key && *not_key)
                fail(c, pos, "%s", not_key);
            else if (!not_key)
                fail(c, pos, "a key must be a string, not %s%s", kind_of(value),
                     json_is_object(value) || json_is_array(value) ? ""
                     : "; quote it to make it one");
            f->drop = 1;
        } else {
            f->key = tn_xstrdup(key);
            json_t *first = json_object_get(f->kids, key);
            if (first || json_object_get(f->value, key)) {
                size_t old = c->plen;
                path_key(c, key);
                fail(c, pos, "duplicate key (also on line %d)",
                     pos_line(json_integer_value(json_array_get(first, 0))));
                path_cut(c, old);
                f->drop = 1;
            }
        }
        json_decref(value);
        json_decref(loc);
        return;
    }
    f->have_key = 0; /* the node is the value of the key read */
    if (f->drop) {
        json_decref(value);
        json_decref(loc);
        return;
    }
    json_array_set_new(loc, 0, json_integer(f->key_pos));
    f->nodes += nodes;
    if (height + 1 > f->height) f->height = height + 1;
    if (f->merge) {
        int ok = json_is_object(value);
        if (json_is_array(value)) {
            size_t i;
            json_t *item;
            ok = 1;
            json_array_foreach(value, i, item) ok &= json_is_object(item);
        }
        if (!ok) {
            size_t old = c->plen;
            path_key(c, "<<");
            fail(c, f->key_pos, "<< merges a mapping, or a sequence of mappings, into this "
                                "one; got %s", kind_of(value));
            path_cut(c, old);
            json_decref(value);
            json_decref(loc);
            return;
        }
        f->merges = json_pack("[oo]", value, loc);
        if (!f->merges) abort(); /* out of memory */
        return;
    }
    if (json_object_set_new(f->value, f->key, value) != 0) { /* the key is not UTF-8 */
        fail(c, f->key_pos, "a key must be valid UTF-8 text without NUL characters");
        json_decref(loc);
        return;
    }
    json_object_set_new(f->kids, f->key, loc);
}

/* ---- Events ---- */

static void on_scalar(conv *c, const yaml_event_t *ev) {
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length, old = path_enter(c), nerrs = c->nerrs;
    int plain_nonstring;
    json_t *v = scalar_value(c, ev, &plain_nonstring);
    json_int_t pos = pos_of(ev->start_mark);
    json_t *loc = loc_new(pos, NULL);
    if (plain_nonstring) { /* how YAML read it, for messages (plain text is UTF-8) */
        json_t *text = json_stringn(s, n);
        json_array_append_new(loc, text ? text : json_string("?"));
        json_array_append(loc, v);
    }
    char *key = NULL; /* v goes to node_done */
    const char *not_key = NULL;
    if (c->nerrs > nerrs) not_key = ""; /* reported */
    else if (json_is_string(v) && memchr(s, '\0', n))
        not_key = "a key must not hold a NUL character";
    else if (json_is_string(v)) key = tn_xstrdup(json_string_value(v));
    int merge = !ev->data.scalar.tag && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                n == 2 && !memcmp(s, "<<", 2);
    path_cut(c, old);
    node_done(c, v, loc, 1, 0, (const char *)ev->data.scalar.anchor, pos, key, not_key, merge);
    free(key);
}

static void on_alias(conv *c, const yaml_event_t *ev) {
    const char *name = (const char *)ev->data.alias.anchor;
    json_int_t pos = pos_of(ev->start_mark);
    size_t old = path_enter(c);
    const anchor *a = anchor_find(c, name);
    if (!a) {
        fail(c, pos, "alias *%.60s: no anchor &%.60s before it (an alias names a node "
                     "written earlier, outside it)", name, name);
        path_cut(c, old);
        node_done(c, json_null(), loc_new(pos, NULL), 1, 0, NULL, pos, NULL, "", 0);
        return;
    }
    if (a->nodes > SY_MAX_ALIAS_NODES - c->alias_nodes) {
        fail(c, pos, "aliases copy more than %d values in all (a \"billion laughs\" "
                     "document?); write the values out", SY_MAX_ALIAS_NODES);
        c->stop = 1;
        path_cut(c, old);
        return;
    }
    if (c->depth + a->height > SY_MAX_DEPTH) {
        fail(c, pos, "alias *%.60s nests mappings and sequences deeper than %d levels",
             name, SY_MAX_DEPTH);
        c->stop = 1;
        path_cut(c, old);
        return;
    }
    c->alias_nodes += a->nodes;
    json_t *v = json_deep_copy(a->value), *loc = json_deep_copy(a->loc);
    if (!v || !loc) abort(); /* out of memory */
    json_array_set_new(loc, 0, json_integer(pos));
    path_cut(c, old);
    node_done(c, v, loc, a->nodes, a->height, NULL, pos, NULL,
              "a key must be written out, not an alias", 0);
}

static void on_start(conv *c, const yaml_event_t *ev, int is_map) {
    json_int_t pos = pos_of(ev->start_mark);
    const char *tag = (const char *)(is_map ? ev->data.mapping_start.tag
                                            : ev->data.sequence_start.tag);
    const char *anchor_name = (const char *)(is_map ? ev->data.mapping_start.anchor
                                                    : ev->data.sequence_start.anchor);
    size_t old = path_enter(c);
    if (c->depth == SY_MAX_DEPTH) {
        fail(c, pos, "mappings and sequences nested deeper than %d levels",
             SY_MAX_DEPTH);
        c->stop = 1;
        path_cut(c, old);
        return;
    }
    if (tag && strcmp(tag, "!") && strcmp(tag, is_map ? YAML_MAP_TAG : YAML_SEQ_TAG))
        fail(c, pos, "the tag %.60s is not supported: a spec holds strings, numbers, "
                     "booleans, null, mappings and sequences", tag);
    frame *f = &c->stack[c->depth++];
    memset(f, 0, sizeof *f);
    f->is_map = is_map;
    f->value = is_map ? json_object() : json_array();
    f->kids = is_map ? json_object() : json_array();
    f->pos = pos;
    f->anchor = anchor_name ? tn_xstrdup(anchor_name) : NULL;
    f->height = 1;
    f->nodes = 1;
    f->path_len = old;
}

static void on_end(conv *c) {
    assert(c->depth > 0);
    frame f = c->stack[--c->depth];
    if (f.is_map) apply_merges(&f);
    path_cut(c, f.path_len);
    node_done(c, f.value, loc_new(f.pos, f.kids), f.nodes, f.height, f.anchor, f.pos, NULL,
              NULL, 0);
    json_decref(f.merges);
    free(f.anchor);
    free(f.key);
}

/* The parser's error, at its position. */
static void syntax_error(conv *c) {
    yaml_parser_t *p = &c->parser;
    if (p->error == YAML_MEMORY_ERROR) {
        fprintf(stderr, "tuner: out of memory reading a YAML spec\n");
        abort();
    }
    path_cut(c, 0);
    if (p->error == YAML_READER_ERROR) { /* encoding: only an offset is known */
        size_t off = p->problem_offset < c->len ? p->problem_offset : c->len, line = 1, col = 1;
        for (size_t i = 0; i < off; i++) {
            if (c->text[i] == '\n') line++, col = 1;
            else col++;
        }
        fail(c, pos_make(line, col), "%s (YAML is UTF-8 text without control characters)",
             p->problem ? p->problem : "unreadable text");
    } else if (p->context) {
        fail(c, pos_of(p->problem_mark), "%s (%s on line %zu)",
             p->problem ? p->problem : "syntax error", p->context, p->context_mark.line + 1);
    } else {
        fail(c, pos_of(p->problem_mark), "%s", p->problem ? p->problem : "syntax error");
    }
    c->stop = 1;
}

/* ---- The pass ---- */

static void conv_clear(conv *c) {
    while (c->depth > 0) {
        frame *f = &c->stack[--c->depth];
        json_decref(f->value);
        json_decref(f->kids);
        json_decref(f->merges);
        free(f->anchor);
        free(f->key);
    }
    for (size_t i = 0; i < c->nanchors; i++) {
        free(c->anchors[i].name);
        json_decref(c->anchors[i].value);
        json_decref(c->anchors[i].loc);
    }
    free(c->anchors);
    free(c->path);
    yaml_parser_delete(&c->parser);
}

int sy_parse(const char *text, size_t len, json_t **root, sy_where **where, spec_errors *errs) {
    assert(text && root && where && errs);
    *root = NULL;
    *where = NULL;
    conv c;
    memset(&c, 0, sizeof c);
    c.text = text;
    c.len = len;
    c.errs = errs;
    c.path = tn_xcalloc(1, 1);
    c.pcap = 1;
    if (!yaml_parser_initialize(&c.parser)) abort(); /* out of memory */
    yaml_parser_set_input_string(&c.parser, (const unsigned char *)text, len);
    for (int done = 0; !done && !c.stop;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&c.parser, &ev)) {
            syntax_error(&c);
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT: done = 1; break;
        case YAML_DOCUMENT_START_EVENT:
            if (++c.documents > 1) {
                path_cut(&c, 0);
                fail(&c, pos_of(ev.start_mark), "a second YAML document: a spec is one "
                                                "document (remove the --- line)");
                c.stop = 1;
            }
            break;
        case YAML_SCALAR_EVENT: on_scalar(&c, &ev); break;
        case YAML_ALIAS_EVENT: on_alias(&c, &ev); break;
        case YAML_SEQUENCE_START_EVENT: on_start(&c, &ev, 0); break;
        case YAML_MAPPING_START_EVENT: on_start(&c, &ev, 1); break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: on_end(&c); break;
        default: break; /* stream start, document end */
        }
        yaml_event_delete(&ev);
    }
    if (!c.stop && !c.root) {
        fail(&c, pos_make(1, 1), "no YAML document: the file is empty (a spec is a mapping "
                                 "with trainingInput: ...)");
    } else if (!c.stop && !json_is_object(c.root)) {
        fail(&c, json_integer_value(json_array_get(c.root_loc, 0)),
             "expected a mapping (an AI Platform job: trainingInput: ..., and optionally "
             "jobId, labels), got %s", kind_of(c.root));
    }
    int rc = c.nerrs ? TN_EINVAL : 0;
    if (rc == 0) {
        *root = c.root;
        *where = tn_xcalloc(1, sizeof **where);
        (*where)->tree = c.root_loc;
    } else {
        json_decref(c.root);
        json_decref(c.root_loc);
    }
    conv_clear(&c);
    return rc;
}

/* ---- Finding where a path was written ---- */

/* The location of the value at path, or of the nearest enclosing value written;
 * *exact says whether it is the value's own. */
static const json_t *find(const json_t *loc, const char *path, int *exact) {
    const char *p = path;
    while (*p) {
        const json_t *kids = json_array_get(loc, 1), *next = NULL;
        if (*p == '[') {
            char *end;
            errno = 0;
            unsigned long long i = strtoull(p + 1, &end, 10);
            if (errno || *end != ']' || !json_is_array(kids)) break;
            next = json_array_get(kids, (size_t)i);
            p = end + 1;
        } else {
            if (*p == '.' && p != path) p++;
            if (!json_is_object(kids)) break;
            /* The longest key that is there: keys may hold '.' and '[' themselves. */
            size_t n = strlen(p);
            for (size_t cut = n; cut > 0 && !next; cut--) {
                if (cut < n && p[cut] != '.' && p[cut] != '[') continue;
                if ((next = json_object_getn(kids, p, cut))) p += cut;
            }
        }
        if (!next || json_is_null(next)) break;
        loc = next;
    }
    *exact = *p == '\0';
    return loc;
}

void sy_where_annotate(const sy_where *w, spec_error *e) {
    if (!w || !e) return;
    int exact;
    const json_t *loc = find(w->tree, e->path ? e->path : "", &exact);
    json_int_t pos = json_integer_value(json_array_get(loc, 0));
    e->line = pos_line(pos);
    e->column = pos_column(pos);
    const json_t *text = json_array_get(loc, 2), *value = json_array_get(loc, 3);
    if (!exact || !text || !e->message || strncmp(e->message, "expected", 8) != 0) return;
    if (!(json_is_boolean(value) || json_is_null(value) || strstr(e->message, "a string")))
        return;
    const char *as = json_is_true(value)    ? "true"
                     : json_is_false(value) ? "false"
                     : json_is_null(value)  ? "null"
                                            : "a number";
    const char *t = json_string_value(text);
    char *m = *t ? tn_xasprintf("%s (YAML reads the plain scalar %.40s%s as %s; quote it if "
                                "a string is meant)", e->message, t,
                                strlen(t) > 40 ? "..." : "", as)
                 : tn_xasprintf("%s (YAML reads an empty value as null)", e->message);
    free(e->message);
    e->message = m;
}

void sy_where_free(sy_where *w) {
    if (!w) return;
    json_decref(w->tree);
    free(w);
}

/* ---- Which files are YAML ---- */

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

int sy_is_yaml(const char *path, const char *text, size_t len) {
    if (path && (ends_with(path, ".yaml") || ends_with(path, ".yml"))) return 1;
    if (path && ends_with(path, ".json")) return 0;
    size_t i = 0;
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) i = 3;
    while (i < len && isspace((unsigned char)text[i])) i++;
    return !(i < len && text[i] == '{');
}
