/*
 * output.c — rows as a table, JSON or CSV (see output.h).
 *
 * Cells keep their type (string, integer, number, time, JSON value) until printing,
 * so each format renders them its own way: cell_text() gives the text of a table or
 * CSV field, emit_cell() the JSON. JSON is written here rather than with json_dumps
 * so that numbers come out in their shortest round-trip form (jansson prints 0.1 as
 * 0.10000000000000001); strings still go through jansson's escaper, and objects and
 * arrays nest with the same two-space indent jq uses.
 */
#include "tuner/output.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/status.h"
#include "common/text.h"

enum cell_kind { CELL_NULL = 0, CELL_STR, CELL_INT, CELL_NUM, CELL_TIME, CELL_JSON, CELL_CUSTOM };

typedef struct cell {
    int kind;      /* enum cell_kind; CELL_NULL for a column left without a cell */
    char *text;    /* STR, CUSTOM (may be NULL: empty) */
    int64_t i;     /* INT */
    double num;    /* NUM, TIME */
    json_t *json;  /* JSON, CUSTOM (may be NULL: null); owned */
} cell;

typedef struct column {
    char *key;     /* JSON key, CSV header */
    char *title;   /* table header */
    int flags;     /* enum out_flag */
} column;

struct out_table {
    column *cols;  /* (ncols) */
    size_t ncols, capcols;
    cell **rows;   /* (nrows, ncols) each row one allocation of ncols cells */
    size_t nrows, caprows;
    size_t next;   /* the column the next cell of the last row fills */
};

/* ---- building ---- */

out_table *out_new(void) { return tn_xcalloc(1, sizeof(out_table)); }

static void cell_clear(cell *c) {
    free(c->text);
    json_decref(c->json);
    memset(c, 0, sizeof *c);
}

void out_free(out_table *t) {
    if (!t) return;
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) cell_clear(&t->rows[r][c]);
        free(t->rows[r]);
    }
    free(t->rows);
    for (size_t c = 0; c < t->ncols; c++) {
        free(t->cols[c].key);
        free(t->cols[c].title);
    }
    free(t->cols);
    free(t);
}

void out_column(out_table *t, const char *key, const char *title, int flags) {
    if (t->nrows > 0) {
        fprintf(stderr, "tuner: internal error: column '%s' declared after the first row\n", key);
        abort();
    }
    if (t->ncols == t->capcols) {
        t->capcols = t->capcols ? 2 * t->capcols : 16;
        t->cols = tn_xrealloc(t->cols, t->capcols * sizeof *t->cols);
    }
    t->cols[t->ncols++] = (column){.key = tn_xstrdup(key), .title = tn_xstrdup(title ? title : key),
                                   .flags = flags};
}

void out_row(out_table *t) {
    if (t->nrows == t->caprows) {
        t->caprows = t->caprows ? 2 * t->caprows : 16;
        t->rows = tn_xrealloc(t->rows, t->caprows * sizeof *t->rows);
    }
    t->rows[t->nrows++] = tn_xcalloc(t->ncols + 1, sizeof(cell));
    t->next = 0;
}

size_t out_nrows(const out_table *t) { return t->nrows; }

/* The cell the next out_* call fills. Too many cells for the columns is a bug in the
 * caller, so it aborts rather than losing data quietly. */
static cell *next_cell(out_table *t) {
    if (t->nrows == 0 || t->next >= t->ncols) {
        fprintf(stderr, "tuner: internal error: %s\n",
                t->nrows == 0 ? "a cell before out_row" : "more cells than columns");
        abort();
    }
    return &t->rows[t->nrows - 1][t->next++];
}

void out_null(out_table *t) { next_cell(t)->kind = CELL_NULL; }

void out_str(out_table *t, const char *s) {
    cell *c = next_cell(t);
    if (!s) return;
    c->kind = CELL_STR;
    c->text = tn_xstrdup(s);
}

void out_int(out_table *t, int64_t v) {
    cell *c = next_cell(t);
    c->kind = CELL_INT;
    c->i = v;
}

void out_num(out_table *t, double v) {
    cell *c = next_cell(t);
    if (!isfinite(v)) return;
    c->kind = CELL_NUM;
    c->num = v;
}

void out_time(out_table *t, double seconds) {
    cell *c = next_cell(t);
    if (!(seconds > 0) || !isfinite(seconds)) return;
    c->kind = CELL_TIME;
    c->num = seconds;
}

void out_json(out_table *t, json_t *v) {
    cell *c = next_cell(t);
    if (!v) return;
    c->kind = CELL_JSON;
    c->json = v;
}

void out_cell(out_table *t, const char *text, json_t *json) {
    cell *c = next_cell(t);
    c->kind = CELL_CUSTOM;
    c->text = text ? tn_xstrdup(text) : NULL;
    c->json = json;
}

int out_parse_format(const char *s, int *format, char *err, size_t errlen) {
    if (!strcmp(s, "table")) *format = CLI_TABLE;
    else if (!strcmp(s, "json")) *format = CLI_JSON;
    else if (!strcmp(s, "csv")) *format = CLI_CSV;
    else
        return tn_error(err, errlen, TN_EINVAL,
                        "unknown format '%s': expected table, json or csv", s);
    return 0;
}

/* ---- text of a cell ---- */

/* A growing string. */
typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf;

static void sb_putn(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = 2 * (b->len + n + 1) + 64;
        b->s = tn_xrealloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_puts(sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

/* Takes the string out of b (never NULL). */
static char *sb_take(sbuf *b) {
    char *s = b->s ? b->s : tn_xstrdup("");
    b->s = NULL;
    b->len = b->cap = 0;
    return s;
}

static void format_iso8601(double seconds, char *buf, size_t len) {
    time_t tt = (time_t)floor(seconds);
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "%.0f", seconds);
}

static void emit_json(sbuf *b, const json_t *v, int indent, int level);

/* The text of a cell in a table (6 significant digits) or CSV (exact; a custom cell's
 * JSON value, a string unquoted); yours to free. */
static char *cell_text(const cell *c, int format) {
    char buf[64];
    sbuf b = {0};
    switch (c->kind) {
    case CELL_STR: return tn_xstrdup(c->text);
    case CELL_CUSTOM:
        if (format == CLI_TABLE) return tn_xstrdup(c->text ? c->text : "");
        if (json_is_string(c->json)) return tn_xstrdup(json_string_value(c->json));
        if (c->json && !json_is_null(c->json)) emit_json(&b, c->json, -1, 0);
        return sb_take(&b);
    case CELL_INT: snprintf(buf, sizeof buf, "%lld", (long long)c->i); break;
    case CELL_NUM:
        if (format == CLI_TABLE)
            snprintf(buf, sizeof buf, "%.6g", c->num);
        else
            tn_format_double(c->num, buf, sizeof buf);
        break;
    case CELL_TIME: format_iso8601(c->num, buf, sizeof buf); break;
    case CELL_JSON: emit_json(&b, c->json, -1, 0); return sb_take(&b);
    default: buf[0] = '\0';
    }
    return tn_xstrdup(buf);
}

/* ---- JSON ---- */

/* A JSON string literal of s[0..n), escaped by jansson. Bytes that are not valid UTF-8
 * (jansson refuses them) become '?', so a stray byte in an error message never loses
 * the whole output. */
static void emit_string(sbuf *b, const char *s, size_t n) {
    json_t *js = json_stringn(s, n);
    if (!js) {
        char *copy = tn_xmalloc(n + 1);
        for (size_t i = 0; i < n; i++) copy[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
        copy[n] = '\0';
        js = json_stringn(copy, n); /* plain ASCII now (NULs included, which jansson takes) */
        free(copy);
        if (!js) {
            fprintf(stderr, "tuner: out of memory\n");
            abort();
        }
    }
    char *text = json_dumps(js, JSON_ENCODE_ANY);
    json_decref(js);
    if (!text) {
        fprintf(stderr, "tuner: out of memory\n");
        abort();
    }
    sb_puts(b, text);
    free(text);
}

static void emit_number(sbuf *b, double v) {
    char buf[64];
    if (!isfinite(v)) {
        sb_puts(b, "null");
        return;
    }
    tn_format_double(v, buf, sizeof buf);
    sb_puts(b, buf);
}

static void emit_newline(sbuf *b, int indent, int level) {
    if (indent < 0) return;
    sb_puts(b, "\n");
    for (int i = 0; i < indent * level; i++) sb_puts(b, " ");
}

/* Writes v; indent < 0: compact (jansson's JSON_COMPACT separators), else that many
 * spaces per level, starting at nesting level `level`. */
static void emit_json(sbuf *b, const json_t *v, int indent, int level) {
    char buf[32];
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        if (json_object_size(v) == 0) {
            sb_puts(b, "{}");
            break;
        }
        const char *key;
        json_t *val;
        int first = 1;
        sb_puts(b, "{");
        json_object_foreach((json_t *)v, key, val) {
            if (!first) sb_puts(b, ",");
            first = 0;
            emit_newline(b, indent, level + 1);
            emit_string(b, key, strlen(key));
            sb_puts(b, indent < 0 ? ":" : ": ");
            emit_json(b, val, indent, level + 1);
        }
        emit_newline(b, indent, level);
        sb_puts(b, "}");
        break;
    }
    case JSON_ARRAY: {
        if (json_array_size(v) == 0) {
            sb_puts(b, "[]");
            break;
        }
        size_t i;
        json_t *val;
        sb_puts(b, "[");
        json_array_foreach(v, i, val) {
            if (i) sb_puts(b, ",");
            emit_newline(b, indent, level + 1);
            emit_json(b, val, indent, level + 1);
        }
        emit_newline(b, indent, level);
        sb_puts(b, "]");
        break;
    }
    case JSON_STRING: emit_string(b, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER:
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        sb_puts(b, buf);
        break;
    case JSON_REAL: emit_number(b, json_real_value(v)); break;
    case JSON_TRUE: sb_puts(b, "true"); break;
    case JSON_FALSE: sb_puts(b, "false"); break;
    default: sb_puts(b, "null");
    }
}

static void emit_cell(sbuf *b, const cell *c, int indent, int level) {
    char buf[32];
    switch (c->kind) {
    case CELL_STR: emit_string(b, c->text, strlen(c->text)); break;
    case CELL_INT:
        snprintf(buf, sizeof buf, "%lld", (long long)c->i);
        sb_puts(b, buf);
        break;
    case CELL_NUM:
    case CELL_TIME: emit_number(b, c->num); break;
    case CELL_JSON:
    case CELL_CUSTOM:
        if (c->json)
            emit_json(b, c->json, indent, level);
        else
            sb_puts(b, "null");
        break;
    default: sb_puts(b, "null");
    }
}

/* One row as a JSON object at nesting level `level`. */
static void emit_row(sbuf *b, const out_table *t, const cell *row, int level) {
    int first = 1;
    sb_puts(b, "{");
    for (size_t c = 0; c < t->ncols; c++) {
        if (t->cols[c].flags & OUT_NO_JSON) continue;
        if (!first) sb_puts(b, ",");
        first = 0;
        emit_newline(b, 2, level + 1);
        emit_string(b, t->cols[c].key, strlen(t->cols[c].key));
        sb_puts(b, ": ");
        emit_cell(b, &row[c], 2, level + 1);
    }
    if (first) {
        sb_puts(b, "}");
        return;
    }
    emit_newline(b, 2, level);
    sb_puts(b, "}");
}

/* ---- tables ---- */

/* Columns of a table: display width, counting UTF-8 code points (not bytes). */
static size_t display_width(const char *s) {
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) w++;
    return w;
}

/* Control characters (a newline in an error message) would break the rows apart. */
static void flatten(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = ' ';
}

static void pad(sbuf *b, size_t n) {
    for (size_t i = 0; i < n; i++) sb_puts(b, " ");
}

/* Drops trailing spaces and ends the line. */
static void end_line(sbuf *b, size_t line_start) {
    while (b->len > line_start && b->s[b->len - 1] == ' ') b->s[--b->len] = '\0';
    sb_puts(b, "\n");
}

static void render_table(sbuf *b, const out_table *t, const char *empty) {
    if (t->nrows == 0 && empty) {
        sb_puts(b, empty);
        sb_puts(b, "\n");
        return;
    }
    size_t *vis = tn_xcalloc(t->ncols + 1, sizeof *vis), nvis = 0;
    for (size_t c = 0; c < t->ncols; c++)
        if (!(t->cols[c].flags & OUT_NO_TABLE)) vis[nvis++] = c;
    /* text[r * nvis + v]; row -1 (the header) is the titles */
    char **text = tn_xcalloc(t->nrows * nvis + 1, sizeof *text);
    size_t *width = tn_xcalloc(nvis + 1, sizeof *width);
    for (size_t v = 0; v < nvis; v++) width[v] = display_width(t->cols[vis[v]].title);
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t v = 0; v < nvis; v++) {
            char *s = cell_text(&t->rows[r][vis[v]], CLI_TABLE);
            flatten(s);
            size_t w = display_width(s);
            if (w > width[v]) width[v] = w;
            text[r * nvis + v] = s;
        }
    }
    for (size_t r = 0; r <= t->nrows; r++) { /* r == 0: header */
        size_t start = b->len;
        for (size_t v = 0; v < nvis; v++) {
            const char *s = r == 0 ? t->cols[vis[v]].title : text[(r - 1) * nvis + v];
            size_t gap = width[v] - display_width(s);
            if (v) sb_puts(b, "  ");
            if (t->cols[vis[v]].flags & OUT_RIGHT) pad(b, gap);
            sb_puts(b, s);
            if (!(t->cols[vis[v]].flags & OUT_RIGHT)) pad(b, gap);
        }
        end_line(b, start);
    }
    for (size_t i = 0; i < t->nrows * nvis; i++) free(text[i]);
    free(text);
    free(width);
    free(vis);
}

/* ---- CSV ---- */

static void csv_field(sbuf *b, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        sb_puts(b, s);
        return;
    }
    sb_puts(b, "\"");
    for (const char *p = s; *p; p++) {
        if (*p == '"') sb_puts(b, "\"");
        sb_putn(b, p, 1);
    }
    sb_puts(b, "\"");
}

static void render_csv(sbuf *b, const out_table *t, size_t nrows) {
    int first = 1;
    for (size_t c = 0; c < t->ncols; c++) {
        if (t->cols[c].flags & OUT_NO_CSV) continue;
        if (!first) sb_puts(b, ",");
        first = 0;
        csv_field(b, t->cols[c].key);
    }
    sb_puts(b, "\n");
    for (size_t r = 0; r < nrows; r++) {
        first = 1;
        for (size_t c = 0; c < t->ncols; c++) {
            if (t->cols[c].flags & OUT_NO_CSV) continue;
            if (!first) sb_puts(b, ",");
            first = 0;
            char *s = cell_text(&t->rows[r][c], CLI_CSV);
            csv_field(b, s);
            free(s);
        }
        sb_puts(b, "\n");
    }
}

/* ---- printing ---- */

static int write_out(sbuf *b, FILE *f, char *err, size_t errlen) {
    int rc = 0;
    if (b->len && fwrite(b->s, 1, b->len, f) != b->len) rc = TN_EIO;
    if (fflush(f) != 0) rc = TN_EIO;
    int e = errno;
    free(b->s);
    if (rc) return tn_error(err, errlen, TN_EIO, "cannot write the output: %s", strerror(e));
    return 0;
}

int out_print(const out_table *t, int format, FILE *f, const char *empty, char *err,
              size_t errlen) {
    sbuf b = {0};
    if (format == CLI_JSON) {
        if (t->nrows == 0) {
            sb_puts(&b, "[]");
        } else {
            sb_puts(&b, "[");
            for (size_t r = 0; r < t->nrows; r++) {
                if (r) sb_puts(&b, ",");
                emit_newline(&b, 2, 1);
                emit_row(&b, t, t->rows[r], 1);
            }
            sb_puts(&b, "\n]");
        }
        sb_puts(&b, "\n");
    } else if (format == CLI_CSV) {
        render_csv(&b, t, t->nrows);
    } else {
        render_table(&b, t, empty);
    }
    return write_out(&b, f, err, errlen);
}

int out_print_record(const out_table *t, int format, FILE *f, char *err, size_t errlen) {
    if (t->nrows == 0) return tn_error(err, errlen, TN_EINVAL, "no record to print");
    sbuf b = {0};
    const cell *row = t->rows[0];
    if (format == CLI_JSON) {
        emit_row(&b, t, row, 0);
        sb_puts(&b, "\n");
    } else if (format == CLI_CSV) {
        render_csv(&b, t, 1);
    } else {
        char **text = tn_xcalloc(t->ncols + 1, sizeof *text);
        size_t label = 0;
        for (size_t c = 0; c < t->ncols; c++) {
            if (t->cols[c].flags & OUT_NO_TABLE) continue;
            text[c] = cell_text(&row[c], CLI_TABLE);
            flatten(text[c]);
            size_t w = display_width(t->cols[c].title) + 1;
            if (text[c][0] && w > label) label = w;
        }
        for (size_t c = 0; c < t->ncols; c++) {
            if (!text[c] || !text[c][0]) continue;
            size_t start = b.len;
            sb_puts(&b, t->cols[c].title);
            sb_puts(&b, ":");
            pad(&b, label - (display_width(t->cols[c].title) + 1) + 2);
            sb_puts(&b, text[c]);
            end_line(&b, start);
        }
        for (size_t c = 0; c < t->ncols; c++) free(text[c]);
        free(text);
    }
    return write_out(&b, f, err, errlen);
}
