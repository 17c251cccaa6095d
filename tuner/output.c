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
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include "common/jsonutil.h"
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
    char *group;   /* out_column_in's, or NULL */
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
        free(t->cols[c].group);
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

void out_column_in(out_table *t, const char *group, const char *key, const char *title,
                   int flags) {
    out_column(t, key, title, flags);
    t->cols[t->ncols - 1].group = tn_xstrdup(group);
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

static void format_iso8601(double seconds, char *buf, size_t len) {
    time_t tt = (time_t)floor(seconds);
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, len, "%.0f", seconds);
}

/* The text of a cell in a table (6 significant digits) or CSV (exact; a custom cell's
 * JSON value, a string unquoted); yours to free. */
static char *cell_text(const cell *c, int format) {
    char buf[64];
    tn_buf b = {0};
    switch (c->kind) {
    case CELL_STR: return tn_xstrdup(c->text);
    case CELL_CUSTOM:
        if (format == CLI_TABLE) return tn_xstrdup(c->text ? c->text : "");
        if (json_is_string(c->json)) return tn_xstrdup(json_string_value(c->json));
        if (c->json && !json_is_null(c->json)) tn_json_write(&b, c->json, -1, 0);
        return tn_buf_take(&b);
    case CELL_INT: snprintf(buf, sizeof buf, "%lld", (long long)c->i); break;
    case CELL_NUM:
        if (format == CLI_TABLE)
            snprintf(buf, sizeof buf, "%.6g", c->num);
        else
            tn_format_double(c->num, buf, sizeof buf);
        break;
    case CELL_TIME: format_iso8601(c->num, buf, sizeof buf); break;
    case CELL_JSON: tn_json_write(&b, c->json, -1, 0); return tn_buf_take(&b);
    default: buf[0] = '\0';
    }
    return tn_xstrdup(buf);
}

/* ---- JSON ---- */

/* A cell's JSON value (new reference). Text that is not UTF-8 is kept as it is: the
 * writer shows its stray bytes as '?' rather than losing the cell. */
static json_t *cell_json(const cell *c) {
    switch (c->kind) {
    case CELL_STR: return json_stringn_nocheck(c->text, strlen(c->text));
    case CELL_INT: return json_integer((json_int_t)c->i);
    case CELL_NUM:
    case CELL_TIME: return isfinite(c->num) ? json_real(c->num) : json_null();
    case CELL_JSON:
    case CELL_CUSTOM: return c->json ? json_incref(c->json) : json_null();
    default: return json_null();
    }
}

/* One row as a JSON object of its columns (those not OUT_NO_JSON), in column order. */
static json_t *row_json(const out_table *t, const cell *row) {
    json_t *o = json_object();
    for (size_t c = 0; c < t->ncols; c++)
        if (!(t->cols[c].flags & OUT_NO_JSON))
            json_object_set_new_nocheck(o, t->cols[c].key, cell_json(&row[c]));
    return o;
}

/* ---- tables ---- */

/* wcwidth's answers need a UTF-8 character type; the tuner's own locale stays "C". */
static locale_t utf8_ctype;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void utf8_ctype_open(void) {
    utf8_ctype = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* The code point of the valid UTF-8 sequence at s, and its length in *len; -1 (and
 * *len 1) for a byte that starts none. */
static long utf8_decode(const unsigned char *s, size_t *len) {
    int n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3
            : (s[0] & 0xF8) == 0xF0                 ? 4 : 0;
    *len = 1;
    if (n == 0) return -1;
    long cp = n == 1 ? s[0] : s[0] & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return -1;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    *len = (size_t)n;
    return cp;
}

/* Columns of a table: the display width of s on a terminal (wcwidth: two columns for
 * CJK and most emoji, none for combining marks and invisible format characters), or,
 * where the C.UTF-8 locale is missing, its code points. */
static size_t display_width(const char *s) {
    pthread_once(&utf8_once, utf8_ctype_open);
    locale_t old = utf8_ctype ? uselocale(utf8_ctype) : (locale_t)0; /* this thread's */
    size_t w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t len;
        long cp = utf8_decode(p, &len);
        int cw = cp >= 0x80 && utf8_ctype ? wcwidth((wchar_t)cp) : 1;
        w += cw < 0 ? 1 : (size_t)cw;
        p += len;
    }
    if (utf8_ctype) uselocale(old);
    return w;
}

/* Control characters would break the rows apart (a newline in an error message) or
 * drive the terminal (ESC, or C1's CSI, U+009B, from a trial's metric names): C0, DEL
 * and C1 (U+0080 to U+009F, two bytes in UTF-8) each become one space, in place; a
 * byte that is not UTF-8 (a lone 0x9B is CSI to an 8-bit terminal) becomes '?'. */
static void flatten(char *s) {
    char *o = s;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t len;
        long cp = utf8_decode(p, &len);
        /* overlong forms too ("\xC1\x9B" would pass its 0x9B), surrogates, beyond U+10FFFF */
        long least = len == 2 ? 0x80 : len == 3 ? 0x800 : len == 4 ? 0x10000 : 0;
        if (cp < least || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            *o++ = '?';
            p++;
        } else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
            *o++ = ' ';
            p += len;
        } else {
            memmove(o, p, len);
            o += len;
            p += len;
        }
    }
    *o = '\0';
}

/* A flattened copy of s (yours to free): a column's title or label, which may come from
 * a spec or a trial's records as much as a cell does. */
static char *flat_copy(const char *s) {
    char *c = tn_xstrdup(s);
    flatten(c);
    return c;
}

static void pad(tn_buf *b, size_t n) {
    for (size_t i = 0; i < n; i++) tn_buf_str(b, " ");
}

/* Drops trailing spaces and ends the line. */
static void end_line(tn_buf *b, size_t line_start) {
    while (b->len > line_start && b->data[b->len - 1] == ' ') b->data[--b->len] = '\0';
    tn_buf_str(b, "\n");
}

static void render_table(tn_buf *b, const out_table *t, const char *empty) {
    if (t->nrows == 0 && empty) {
        tn_buf_str(b, empty);
        tn_buf_str(b, "\n");
        return;
    }
    size_t *vis = tn_xcalloc(t->ncols + 1, sizeof *vis), nvis = 0;
    for (size_t c = 0; c < t->ncols; c++)
        if (!(t->cols[c].flags & OUT_NO_TABLE)) vis[nvis++] = c;
    /* text[r * nvis + v]; row -1 (the header) is the titles */
    char **text = tn_xcalloc(t->nrows * nvis + 1, sizeof *text);
    size_t *width = tn_xcalloc(nvis + 1, sizeof *width);
    char **title = tn_xcalloc(nvis + 1, sizeof *title);
    for (size_t v = 0; v < nvis; v++) {
        title[v] = flat_copy(t->cols[vis[v]].title);
        width[v] = display_width(title[v]);
    }
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
            const char *s = r == 0 ? title[v] : text[(r - 1) * nvis + v];
            size_t gap = width[v] - display_width(s);
            if (v) tn_buf_str(b, "  ");
            if (t->cols[vis[v]].flags & OUT_RIGHT) pad(b, gap);
            tn_buf_str(b, s);
            if (!(t->cols[vis[v]].flags & OUT_RIGHT)) pad(b, gap);
        }
        end_line(b, start);
    }
    for (size_t i = 0; i < t->nrows * nvis; i++) free(text[i]);
    for (size_t v = 0; v < nvis; v++) free(title[v]);
    free(title);
    free(text);
    free(width);
    free(vis);
}

/* ---- CSV ---- */

static void csv_field(tn_buf *b, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        tn_buf_str(b, s);
        return;
    }
    tn_buf_str(b, "\"");
    for (const char *p = s; *p; p++) {
        if (*p == '"') tn_buf_str(b, "\"");
        tn_buf_add(b, p, 1);
    }
    tn_buf_str(b, "\"");
}

/* Whether another CSV column than c has c's key. */
static int csv_key_shared(const out_table *t, size_t c) {
    for (size_t o = 0; o < t->ncols; o++)
        if (o != c && !(t->cols[o].flags & OUT_NO_CSV) && !strcmp(t->cols[o].key, t->cols[c].key))
            return 1;
    return 0;
}

static void render_csv(tn_buf *b, const out_table *t, size_t nrows) {
    int first = 1;
    for (size_t c = 0; c < t->ncols; c++) {
        if (t->cols[c].flags & OUT_NO_CSV) continue;
        if (!first) tn_buf_str(b, ",");
        first = 0;
        if (t->cols[c].group && csv_key_shared(t, c)) {
            char *k = tn_xasprintf("%s.%s", t->cols[c].group, t->cols[c].key);
            csv_field(b, k);
            free(k);
        } else {
            csv_field(b, t->cols[c].key);
        }
    }
    tn_buf_str(b, "\n");
    for (size_t r = 0; r < nrows; r++) {
        first = 1;
        for (size_t c = 0; c < t->ncols; c++) {
            if (t->cols[c].flags & OUT_NO_CSV) continue;
            if (!first) tn_buf_str(b, ",");
            first = 0;
            char *s = cell_text(&t->rows[r][c], CLI_CSV);
            csv_field(b, s);
            free(s);
        }
        tn_buf_str(b, "\n");
    }
}

/* ---- printing ---- */

static int write_out(tn_buf *b, FILE *f, char *err, size_t errlen) {
    int rc = 0;
    if (b->len && fwrite(b->data, 1, b->len, f) != b->len) rc = TN_EIO;
    if (fflush(f) != 0) rc = TN_EIO;
    int e = errno;
    free(b->data);
    if (rc) return tn_error(err, errlen, TN_EIO, "cannot write the output: %s", strerror(e));
    return 0;
}

int out_print(const out_table *t, int format, FILE *f, const char *empty, char *err,
              size_t errlen) {
    tn_buf b = {0};
    if (format == CLI_JSON) {
        json_t *rows = json_array();
        for (size_t r = 0; r < t->nrows; r++)
            json_array_append_new(rows, row_json(t, t->rows[r]));
        tn_json_write(&b, rows, 2, 0);
        json_decref(rows);
        tn_buf_add(&b, "\n", 1);
    } else if (format == CLI_CSV) {
        render_csv(&b, t, t->nrows);
    } else {
        render_table(&b, t, empty);
    }
    return write_out(&b, f, err, errlen);
}

int out_print_record(const out_table *t, int format, FILE *f, char *err, size_t errlen) {
    if (t->nrows == 0) return tn_error(err, errlen, TN_EINVAL, "no record to print");
    tn_buf b = {0};
    const cell *row = t->rows[0];
    if (format == CLI_JSON) {
        json_t *o = row_json(t, row);
        tn_json_write(&b, o, 2, 0);
        json_decref(o);
        tn_buf_str(&b, "\n");
    } else if (format == CLI_CSV) {
        render_csv(&b, t, 1);
    } else {
        char **text = tn_xcalloc(t->ncols + 1, sizeof *text);
        char **title = tn_xcalloc(t->ncols + 1, sizeof *title);
        size_t label = 0;
        for (size_t c = 0; c < t->ncols; c++) {
            if (t->cols[c].flags & OUT_NO_TABLE) continue;
            text[c] = cell_text(&row[c], CLI_TABLE);
            flatten(text[c]);
            title[c] = flat_copy(t->cols[c].title);
            size_t w = display_width(title[c]) + 1;
            if (text[c][0] && w > label) label = w;
        }
        for (size_t c = 0; c < t->ncols; c++) {
            if (!text[c] || !text[c][0]) continue;
            size_t start = b.len;
            tn_buf_str(&b, title[c]);
            tn_buf_str(&b, ":");
            pad(&b, label - (display_width(title[c]) + 1) + 2);
            tn_buf_str(&b, text[c]);
            end_line(&b, start);
        }
        for (size_t c = 0; c < t->ncols; c++) {
            free(text[c]);
            free(title[c]);
        }
        free(title);
        free(text);
    }
    return write_out(&b, f, err, errlen);
}
