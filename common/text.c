/*
 * text.c — string helpers (see text.h).
 */
#include "common/text.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/status.h"

size_t tn_edit_distance(const char *a, const char *b) {
    /* Optimal string alignment: Levenshtein plus a swap of two adjacent letters as
     * one edit, the commonest typo ("maxTrail" for "maxTrials" is 2, not 3). */
    size_t la = strlen(a), lb = strlen(b), w = lb + 1;
    size_t *d = tn_xmalloc((la + 1) * w * sizeof *d);
    for (size_t i = 0; i <= la; i++) d[i * w] = i;
    for (size_t j = 0; j <= lb; j++) d[j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t best = d[(i - 1) * w + j - 1] + (a[i - 1] != b[j - 1]);
            if (d[(i - 1) * w + j] + 1 < best) best = d[(i - 1) * w + j] + 1;
            if (d[i * w + j - 1] + 1 < best) best = d[i * w + j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[(i - 2) * w + j - 2] + 1 < best)
                best = d[(i - 2) * w + j - 2] + 1;
            d[i * w + j] = best;
        }
    }
    size_t r = d[la * w + lb];
    free(d);
    return r;
}

const char *tn_closest(const char *word, const char *const *candidates, size_t n) {
    for (size_t i = 0; i < n; i++) /* differs only in case: surely meant */
        if (strcasecmp(word, candidates[i]) == 0) return candidates[i];
    size_t limit = strlen(word) / 3;
    if (limit < 2) limit = 2;
    const char *best = NULL;
    size_t best_d = limit + 1;
    for (size_t i = 0; i < n; i++) {
        size_t d = tn_edit_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    return best;
}

char *tn_format_double(double v, char *buf, size_t len) {
    if (isnan(v)) {
        snprintf(buf, len, "nan");
        return buf;
    }
    if (isinf(v)) {
        snprintf(buf, len, v > 0 ? "inf" : "-inf");
        return buf;
    }
    if (v == floor(v) && fabs(v) < 1e15) { /* 2500, not the equally short 2.5e+03 */
        snprintf(buf, len, "%.0f", v);
        return buf;
    }
    /* If some precision p < 15 reads back, %.15g prints the same digits: a normal v
     * is within 2^-53 (relative) of its p-digit decimal, far below half a unit of the
     * 15th digit, and %g drops the zeros after them. So 15, 16 and 17 are all to try
     * (fast enough for the API's 20,000 points a reply). A subnormal has fewer bits:
     * every precision is tried ("5e-324", not "4.94065645841247e-324"). */
    for (int prec = fabs(v) < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

/* ---- tn_buf ---- */

static void buf_reserve(tn_buf *b, size_t more) {
    if (b->len + more + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1) cap *= 2;
    b->data = tn_xrealloc(b->data, cap);
    b->cap = cap;
}

void tn_buf_add(tn_buf *b, const char *s, size_t n) {
    buf_reserve(b, n);
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void tn_buf_str(tn_buf *b, const char *s) { tn_buf_add(b, s, strlen(s)); }

void tn_buf_printf(tn_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *tn_buf_take(tn_buf *b) {
    char *s = b->data ? b->data : tn_xstrdup("");
    memset(b, 0, sizeof *b);
    return s;
}

void tn_buf_clear(tn_buf *b) {
    if (!b) return;
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* The length of the valid UTF-8 sequence at u (of len bytes), or 0: no overlong
 * forms, no surrogates, nothing above U+10FFFF; *cp gets its code point. */
static size_t utf8_valid(const unsigned char *u, size_t len, uint32_t *cp) {
    unsigned char c = u[0];
    size_t need = 0;
    uint32_t v = 0, lo = 0;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        need = 1, v = c & 0x1F, lo = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2, v = c & 0x0F, lo = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3, v = c & 0x07, lo = 0x10000;
    }
    if (!need || need >= len) return 0;
    for (size_t k = 1; k <= need; k++) {
        if ((u[k] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (u[k] & 0x3F);
    }
    if (v < lo || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return need + 1;
}

char *tn_utf8_clean(const char *s, size_t len, size_t *outlen) {
    /* worst case: every byte becomes the 3-byte U+FFFD */
    char *out = tn_xmalloc(3 * len + 1);
    size_t o = 0;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_valid(u + i, len - i, &cp);
        if (n) {
            memcpy(out + o, s + i, n);
            o += n;
            i += n;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3); /* U+FFFD for this one byte */
            o += 3;
            i++;
        }
    }
    out[o] = '\0';
    if (outlen) *outlen = o;
    return out;
}

char *tn_term_clean(const char *s) {
    size_t len = strlen(s);
    char *out = tn_xmalloc(len + 1);
    size_t o = 0;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        uint32_t cp = 0;
        size_t n = utf8_valid(u + i, len - i, &cp);
        int control = (cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7F && cp <= 0x9F);
        if (n && !control) {
            memcpy(out + o, s + i, n);
            o += n;
            i += n;
        } else {
            out[o++] = '?'; /* for the control character, or the byte that is not UTF-8 */
            i += n ? n : 1;
        }
    }
    out[o] = '\0';
    return out;
}

void tn_fputs_term(const char *s, FILE *f) {
    char *clean = tn_term_clean(s);
    fputs(clean, f);
    free(clean);
}
