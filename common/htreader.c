/*
 * htreader.c — reader of the cloudml-hypertune metric file (see htreader.h).
 *
 * Every poll reads the file (its last HTR_MAX_READ bytes at most) and walks its
 * complete lines, and delivers each record once. A record with a timestamp is
 * identified by its timestamp and its full text (the text holds the timestamp): the
 * same line again is the same record, wherever it turns up. A line without one is
 * identified by its place in what its writer wrote: its text and which copy of that
 * text it is, for a program that appends {"loss": 0.5} twice reported twice. Two kinds
 * of writer have to be told apart without being asked:
 *
 * - One that appends (a program writing its own lines): every new line is new.
 * - One that rewrites (cloudml-hypertune truncates the file and writes its last 100
 *   records again at every report, not atomically): lines come back, and a line seen
 *   before is not new.
 *
 * The reader remembers where the lines it dealt with ended in the file and the bytes
 * just before that point. While the file still holds those bytes there at every read,
 * whatever follows them was appended, and what lies before them is not even looked at.
 * (A rewriter whose window is not full yet writes the same lines and one more: an
 * append, rightly.) Once a read finds the file rewritten or truncated, its writer
 * rewrites, and from then on (and in a read that cannot tell: the first, or one after
 * the file grew past the part read) each line is judged by its text, for a rewrite may
 * be read half-written and then whole: the k-th copy of a text in one read is new when
 * fewer than k copies were dealt with before. The reader keeps a hash set of every
 * line text it has dealt with (delivered records and bad lines alike), how many times,
 * and whether it had a timestamp. The set only grows: a record that drops out of the
 * 100-record window can come back into view while a non-atomic writer is mid-rewrite,
 * and must not be delivered again.
 */
#include "common/htreader.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/jsonutil.h"
#include "common/status.h"
#include "common/text.h"

/* ---------------------------------------------------------------------------------
 * The set of lines seen
 * --------------------------------------------------------------------------------- */

typedef struct seen_entry {
    uint64_t hash;   /* FNV-1a of the text; 0 marks an empty slot (real hashes are |1) */
    char *text;      /* the line, owned */
    size_t len;      /* its length (it may hold NUL bytes) */
    size_t dealt;    /* copies of this text delivered or counted bad */
    int stamped;     /* it is a record with a timestamp: one record however often seen */
    size_t in_read;  /* copies met so far in the read numbered read_id */
    uint64_t read_id;
} seen_entry;

typedef struct seen_set {
    seen_entry *slots; /* open addressing, linear probing */
    size_t cap;        /* a power of two, or 0 */
    size_t count;      /* used slots, <= cap / 2 */
} seen_set;

static uint64_t hash_text(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h | 1;
}

/* The entry for text, or NULL. */
static seen_entry *seen_find(const seen_set *s, const char *text, size_t len, uint64_t h) {
    if (!s->cap) return NULL;
    for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        seen_entry *e = &s->slots[i];
        if (!e->hash) return NULL;
        if (e->hash == h && e->len == len && !memcmp(e->text, text, len)) return e;
    }
}

static void seen_put(seen_set *s, seen_entry e) {
    for (size_t i = e.hash & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (!s->slots[i].hash) {
            s->slots[i] = e;
            return;
        }
    }
}

/* The entry for text, added (with nothing dealt with) when it is not there yet.
 * Valid until the next call. */
static seen_entry *seen_get(seen_set *s, const char *text, size_t len, uint64_t h) {
    seen_entry *found = seen_find(s, text, len, h);
    if (found) return found;
    if ((s->count + 1) * 2 > s->cap) {
        seen_set bigger = {tn_xcalloc(s->cap ? s->cap * 2 : 64, sizeof(seen_entry)),
                           s->cap ? s->cap * 2 : 64, s->count};
        for (size_t i = 0; i < s->cap; i++)
            if (s->slots[i].hash) seen_put(&bigger, s->slots[i]);
        free(s->slots);
        *s = bigger;
    }
    char *copy = tn_xmalloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = '\0';
    seen_put(s, (seen_entry){.hash = h, .text = copy, .len = len});
    s->count++;
    return seen_find(s, text, len, h);
}

static void seen_clear(seen_set *s) {
    for (size_t i = 0; i < s->cap; i++) free(s->slots[i].text);
    free(s->slots);
    memset(s, 0, sizeof *s);
}

/* ---------------------------------------------------------------------------------
 * The reader
 * --------------------------------------------------------------------------------- */

/* Bytes kept from before the end of what a read dealt with, to recognise an append. */
#define HTR_MARK 4096

struct htr_reader {
    char *path;      /* the metric file */
    seen_set seen;   /* every line text delivered or found bad, with its count */
    uint64_t reads;  /* reads that got the file's bytes; numbers them for seen_entry */
    /* The end of what the last read dealt with (the offset in the file just after
     * its last line's newline) and the mark_len <= HTR_MARK bytes before it; mark_len
     * is 0 when there is nothing to recognise (no line yet, or the last line taken
     * had no newline). */
    off_t done_end;
    char mark[HTR_MARK];
    size_t mark_len;
    int rewrites;    /* the file was seen rewritten: judge every line by its text */
    htr_stats stats; /* counters; stats.records is also the last ordinal given */
};

htr_reader *htr_new(const char *path) {
    htr_reader *r = tn_xcalloc(1, sizeof *r);
    r->path = tn_xstrdup(path);
    return r;
}

void htr_free(htr_reader *r) {
    if (!r) return;
    seen_clear(&r->seen);
    free(r->path);
    free(r);
}

const char *htr_path(const htr_reader *r) { return r->path; }

void htr_get_stats(const htr_reader *r, htr_stats *out) { *out = r->stats; }

int htr_record_metric(const htr_record *rec, const char *name, double *value) {
    for (size_t i = 0; i < rec->nmetrics; i++) {
        if (!strcmp(rec->metrics[i].name, name)) {
            *value = rec->metrics[i].value;
            return 1;
        }
    }
    return 0;
}

void htr_records_free(htr_record *recs, size_t n) {
    if (!recs) return;
    for (size_t i = 0; i < n; i++) {
        htr_record *rec = &recs[i];
        for (size_t j = 0; j < rec->nmetrics; j++) free(rec->metrics[j].name);
        free(rec->metrics);
        free(rec->trial);
        free(rec->checkpoint_path);
        free(rec->metrics_json);
        free(rec->line);
    }
    free(recs);
}

/* ---------------------------------------------------------------------------------
 * Values
 * --------------------------------------------------------------------------------- */

/* Parses a numeric string as Python's float() writes it: an optional sign, then
 * decimal digits with an optional fraction and exponent, or nan / inf / infinity in
 * any case. No spaces, no hex. Returns 1 and stores the value, or 0. */
static int parse_numeric_string(const char *s, double *out) {
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    if (!strcasecmp(p, "nan") || !strcasecmp(p, "inf") || !strcasecmp(p, "infinity")) {
        double v = (p[0] == 'n' || p[0] == 'N') ? NAN : INFINITY;
        *out = s[0] == '-' ? -v : v;
        return 1;
    }
    size_t digits = 0;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') p++, digits++;
    }
    if (!digits) return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return 0;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p) return 0;
    *out = strtod(s, NULL); /* overflow gives +-HUGE_VAL, i.e. infinity: fine */
    return 1;
}

/* A JSON number, or a numeric string: 1 and the value, or 0. */
static int number_of(const json_t *v, double *out) {
    if (json_is_integer(v)) {
        *out = (double)json_integer_value(v);
        return 1;
    }
    if (json_is_real(v)) {
        *out = json_real_value(v);
        return 1;
    }
    if (json_is_string(v)) return parse_numeric_string(json_string_value(v), out);
    return 0;
}

/* global_step: an integer, an integral number, or a string of either. */
static int step_of(const json_t *v, int64_t *out) {
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return 1;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        const char *p = s + (*s == '+' || *s == '-');
        if (*p >= '0' && *p <= '9' && p[strspn(p, "0123456789")] == '\0') {
            errno = 0;
            long long x = strtoll(s, NULL, 10);
            if (errno == ERANGE) return 0;
            *out = (int64_t)x;
            return 1;
        }
    }
    double d;
    if (number_of(v, &d) && isfinite(d) && d == floor(d) &&
        d >= -9.2e18 && d <= 9.2e18) {
        *out = (int64_t)d;
        return 1;
    }
    return 0;
}

static int is_reserved(const char *key) {
    return !strcmp(key, "checkpoint_path") || !strcmp(key, "global_step") ||
           !strcmp(key, "timestamp") || !strcmp(key, "trial");
}

/* Fills rec from obj, a JSON object read from line. ordinal is the record's number
 * among delivered records, from 1. */
static void fill_record(htr_record *rec, json_t *obj, const char *line, size_t len,
                        size_t ordinal) {
    memset(rec, 0, sizeof *rec);
    rec->line = tn_xmalloc(len + 1);
    memcpy(rec->line, line, len);
    rec->line[len] = '\0';

    rec->step_given = step_of(json_object_get(obj, "global_step"), &rec->step);
    if (!rec->step_given) rec->step = (int64_t)ordinal;
    double ts;
    rec->timestamp_given = number_of(json_object_get(obj, "timestamp"), &ts) && isfinite(ts);
    rec->timestamp = rec->timestamp_given ? ts : (double)ordinal;
    json_t *trial = json_object_get(obj, "trial");
    if (json_is_string(trial)) {
        rec->trial = tn_xstrdup(json_string_value(trial));
    } else if (json_is_number(trial)) {
        int64_t id;
        if (step_of(trial, &id)) { /* an integer, also when read as a double */
            char num[32];
            snprintf(num, sizeof num, "%lld", (long long)id);
            rec->trial = tn_xstrdup(num);
        }
    }
    json_t *cp = json_object_get(obj, "checkpoint_path");
    if (json_is_string(cp)) rec->checkpoint_path = tn_xstrdup(json_string_value(cp));

    tn_buf js = {0};
    tn_buf_add(&js, "{", 1);
    rec->metrics = tn_xmalloc(json_object_size(obj) * sizeof *rec->metrics);
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (is_reserved(key)) continue;
        double x;
        if (!number_of(v, &x)) {
            rec->nignored++;
            continue;
        }
        rec->metrics[rec->nmetrics++] = (htr_metric){tn_xstrdup(key), x};
        if (!isfinite(x)) {
            rec->ndropped++;
            continue;
        }
        if (js.len > 1) tn_buf_add(&js, ",", 1);
        tn_json_write_string(&js, key, strlen(key), 0);
        tn_buf_add(&js, ":", 1);
        tn_json_write_number(&js, x); /* 2500, not 2.5e+03 */
    }
    tn_buf_add(&js, "}", 1);
    rec->metrics_json = tn_buf_take(&js);
}

/* ---------------------------------------------------------------------------------
 * Reading
 * --------------------------------------------------------------------------------- */

/* Whether a file changed between two fstat calls (size or modification time). */
static int changed(const struct stat *a, const struct stat *b) {
    return a->st_size != b->st_size || a->st_mtim.tv_sec != b->st_mtim.tv_sec ||
           a->st_mtim.tv_nsec != b->st_mtim.tv_nsec;
}

/* One attempt of read_tail: 0 with the bytes, or 0 with *buf left NULL when the file
 * changed while it was being read (the bytes may mix the old and the new content: a
 * writer that rewrites in place truncates and writes again), or a negative code. */
static int read_tail_once(htr_reader *r, int fd, char **buf, size_t *len, off_t *base,
                          char *err, size_t errlen) {
    struct stat st, after;
    if (fstat(fd, &st) != 0)
        return tn_error(err, errlen, TN_EIO, "cannot read metric file %s: %s", r->path,
                        strerror(errno));
    if (!S_ISREG(st.st_mode))
        return tn_error(err, errlen, TN_EIO, "cannot read metric file %s: it is not a "
                        "regular file", r->path);
    /* Start one byte early when cutting, to see whether the cut is at a line start. */
    off_t size = st.st_size;
    off_t start = size > HTR_MAX_READ ? size - HTR_MAX_READ - 1 : 0;
    r->stats.truncated = start > 0;
    r->stats.line_too_long = 0;
    size_t want = (size_t)(size - start);
    char *b = tn_xmalloc(want + 1);
    size_t got = 0;
    while (got < want) {
        ssize_t k = pread(fd, b + got, want - got, start + (off_t)got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            int e = errno;
            free(b);
            return tn_error(err, errlen, TN_EIO, "cannot read metric file %s: %s", r->path,
                            strerror(e));
        }
        if (k == 0) break; /* the file shrank: a writer is rewriting it */
        got += (size_t)k;
    }
    if (got < want || fstat(fd, &after) != 0 || changed(&st, &after)) {
        free(b); /* try again */
        return 0;
    }
    size_t skip = 0;
    if (start > 0) {
        /* Drop the partial first line (or just the byte before a line start). */
        char *nl = memchr(b, '\n', got);
        skip = nl ? (size_t)(nl - b) + 1 : got;
        /* a newline only at the very end: the cut line is the file's last one */
        r->stats.line_too_long = !nl || (size_t)(nl - b) + 1 == got;
    }
    memmove(b, b + skip, got - skip);
    b[got - skip] = '\0';
    *buf = b;
    *len = got - skip;
    *base = start + (off_t)skip;
    return 0;
}

/* Reads the end of the file: *buf gets the bytes from the start of the first whole
 * line within the last HTR_MAX_READ bytes to the end (yours to free), *len their
 * number, *base the offset in the file of the first. A missing file gives NULL and 0,
 * and so does a file that keeps changing while it is read (its records come at a
 * later poll; the final poll, after the writer is gone, always gets them). */
static int read_tail(htr_reader *r, char **buf, size_t *len, off_t *base, char *err,
                     size_t errlen) {
    *buf = NULL;
    *len = 0;
    *base = 0;
    /* never blocks: a trial may have made its metric file a FIFO */
    int fd = tn_open_regular(r->path, "metric file", err, errlen);
    if (fd == TN_ENOENT) return 0;
    if (fd < 0) return fd;
    int rc = 0;
    for (int attempt = 0; attempt < 5 && !rc && !*buf; attempt++)
        rc = read_tail_once(r, fd, buf, len, base, err, errlen);
    close(fd);
    return rc;
}

static int blank(const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return 0;
    return 1;
}

/* line with every bare value outside strings that JSON (jansson) cannot hold but a
 * program may well write quoted, so that the value reader sees it as the numeric string
 * it means: Python's json.dumps of a diverged float (NaN, Infinity, -Infinity) and
 * numbers that overflow a double (1e999, an integer of 400 digits). NULL when there is
 * none. Yours to free; *out_len its length. */
static char *quote_unrepresentable(const char *line, size_t len, size_t *out_len) {
    tn_buf b = {0};
    int changed = 0, in_string = 0;
    for (size_t i = 0; i < len;) {
        char ch = line[i];
        if (in_string) {
            tn_buf_add(&b, &line[i], 1);
            if (ch == '\\' && i + 1 < len) {
                tn_buf_add(&b, &line[i + 1], 1);
                i += 2;
                continue;
            }
            if (ch == '"') in_string = 0;
            i++;
            continue;
        }
        if (ch == '"') {
            in_string = 1;
            tn_buf_add(&b, &line[i], 1);
            i++;
            continue;
        }
        if (ch == '-' || ch == '+' || ch == '.' || isalnum((unsigned char)ch)) {
            size_t j = i;
            while (j < len && (isalnum((unsigned char)line[j]) || strchr("+-.", line[j]))) j++;
            char tok[64];
            size_t n = j - i;
            int quote = 0;
            if (n < sizeof tok) {
                memcpy(tok, line + i, n);
                tok[n] = '\0';
                const char *t = tok + (tok[0] == '-');
                if (!strcmp(t, "NaN") || !strcmp(t, "Infinity")) {
                    quote = 1;
                } else if (isdigit((unsigned char)tok[tok[0] == '-'])) {
                    errno = 0;
                    double d = strtod(tok, NULL);
                    quote = errno == ERANGE && isinf(d);
                }
            } else {
                quote = isdigit((unsigned char)line[i + (line[i] == '-')]) != 0; /* a long number */
            }
            if (quote) tn_buf_add(&b, "\"", 1);
            tn_buf_add(&b, line + i, n);
            if (quote) tn_buf_add(&b, "\"", 1);
            changed |= quote;
            i = j;
            continue;
        }
        tn_buf_add(&b, &line[i], 1);
        i++;
    }
    if (!changed) {
        free(b.data);
        return NULL;
    }
    *out_len = b.len;
    return b.data;
}

/* A JSON object from the line, or NULL. Integers too big for jansson are read as
 * doubles on a second try, and values JSON cannot hold (quote_unrepresentable) as the
 * numeric strings they mean on a third, rather than making the line bad; bytes that
 * are not UTF-8 (a Latin-1 name in a text value) are read as U+FFFD. */
static json_t *load_object(const char *line, size_t len) {
    json_t *obj = json_loadb(line, len, 0, NULL);
    if (!obj) obj = json_loadb(line, len, JSON_DECODE_INT_AS_REAL, NULL);
    char *clean = NULL;
    if (!obj) {
        size_t n = 0;
        clean = tn_utf8_clean(line, len, &n);
        if (n == len && !memcmp(clean, line, len)) {
            free(clean); /* it was UTF-8 already */
            clean = NULL;
        } else {
            obj = json_loadb(clean, n, JSON_DECODE_INT_AS_REAL, NULL);
            line = clean;
            len = n;
        }
    }
    if (!obj) {
        size_t n = 0;
        char *quoted = quote_unrepresentable(line, len, &n);
        if (quoted) obj = json_loadb(quoted, n, JSON_DECODE_INT_AS_REAL, NULL);
        free(quoted);
    }
    free(clean);
    if (obj && !json_is_object(obj)) {
        json_decref(obj);
        obj = NULL;
    }
    return obj;
}

/* Where the lines appended since the last read begin in buf (the file's bytes from
 * offset base, len of them): the end of what the last read dealt with, when the bytes
 * before it are still the ones that read saw there; else SIZE_MAX. A file that no
 * longer holds them was rewritten (or truncated): its writer rewrites, and from then
 * on every line is judged by its text. One that grew so far that they are out of
 * the part read cannot be told, and this read's lines are judged by their text. */
static size_t appended_from(htr_reader *r, const char *buf, size_t len, off_t base) {
    if (r->rewrites || !r->mark_len || r->done_end - (off_t)r->mark_len < base)
        return SIZE_MAX;
    if (r->done_end > base + (off_t)len) { /* shorter than it was */
        r->rewrites = 1;
        return SIZE_MAX;
    }
    size_t end = (size_t)(r->done_end - base);
    if (memcmp(buf + end - r->mark_len, r->mark, r->mark_len)) {
        r->rewrites = 1;
        return SIZE_MAX;
    }
    return end;
}

static int poll_impl(htr_reader *r, int final, htr_record **out, size_t *n, char *err,
                     size_t errlen) {
    *out = NULL;
    *n = 0;
    char *buf;
    size_t len;
    off_t base;
    int rc = read_tail(r, &buf, &len, &base, err, errlen);
    if (rc) return rc;
    if (!buf) { /* no file, or one that would not hold still: try at the next poll */
        r->stats.polls++;
        return 0;
    }
    r->reads++;
    size_t from = appended_from(r, buf, len, base);
    htr_record *recs = NULL;
    size_t nrec = 0, cap = 0;
    size_t pos = from == SIZE_MAX ? 0 : from, done = pos;
    while (pos < len) {
        char *nl = memchr(buf + pos, '\n', len - pos);
        if (!nl && !final) break; /* being written: wait for its newline */
        size_t end = nl ? (size_t)(nl - buf) : len;
        const char *line = buf + pos;
        size_t ll = end - pos;
        pos = done = nl ? end + 1 : len;
        if (ll && line[ll - 1] == '\r') ll--;
        if (blank(line, ll)) continue;
        seen_entry *e = seen_get(&r->seen, line, ll, hash_text(line, ll));
        if (e->dealt && e->stamped) continue; /* its timestamp and text: that record */
        if (from == SIZE_MAX) { /* judged by its text: is this copy one more? */
            if (e->read_id != r->reads) {
                e->read_id = r->reads;
                e->in_read = 0;
            }
            if (++e->in_read <= e->dealt) continue;
        }
        e->dealt++;
        json_t *obj = load_object(line, ll);
        if (!obj) {
            r->stats.bad_lines++;
            continue;
        }
        if (nrec == cap) {
            cap = cap ? cap * 2 : 16;
            recs = tn_xrealloc(recs, cap * sizeof *recs);
        }
        r->stats.records++;
        htr_record *rec = &recs[nrec++];
        fill_record(rec, obj, line, ll, r->stats.records);
        e->stamped = rec->timestamp_given;
        r->stats.dropped += rec->ndropped;
        r->stats.ignored += rec->nignored;
        json_decref(obj);
    }
    /* Remember where this read's lines ended and the bytes before, for the next. */
    r->done_end = base + (off_t)done;
    r->mark_len = done > HTR_MARK ? HTR_MARK : done;
    if (r->mark_len && buf[done - 1] != '\n') r->mark_len = 0;
    memcpy(r->mark, buf + done - r->mark_len, r->mark_len);
    free(buf);
    r->stats.polls++;
    *out = recs;
    *n = nrec;
    return 0;
}

int htr_poll(htr_reader *r, htr_record **out, size_t *n, char *err, size_t errlen) {
    return poll_impl(r, 0, out, n, err, errlen);
}

int htr_poll_final(htr_reader *r, htr_record **out, size_t *n, char *err, size_t errlen) {
    return poll_impl(r, 1, out, n, err, errlen);
}
