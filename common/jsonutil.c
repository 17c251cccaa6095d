/*
 * jsonutil.c — jansson helpers (see jsonutil.h).
 */
#include "common/jsonutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *tn_json_kind(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a value";
}

/* ---- writing ---- */

/* The length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0 when there is none. */
static size_t utf8_length(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;      /* overlong */
        else if (c == 0xED) hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;      /* overlong */
        else if (c == 0xF4) hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return len;
}

void tn_json_write_string(tn_buf *b, const char *s, size_t len, unsigned flags) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    int html = (flags & TN_JSON_HTML_SAFE) != 0;
    tn_buf_add(b, "\"", 1);
    size_t run = 0; /* bytes pending, to copy as they are */
    for (size_t i = 0; i < len;) {
        unsigned char c = u[i];
        const char *esc = NULL;
        char code[7];
        size_t n = utf8_length(u + i, len - i);
        if (n == 0) {
            esc = "?"; /* not UTF-8 */
            n = 1;
        } else if (c == '"') {
            esc = "\\\"";
        } else if (c == '\\') {
            esc = "\\\\";
        } else if (c == '\n') {
            esc = "\\n";
        } else if (c == '\r') {
            esc = "\\r";
        } else if (c == '\t') {
            esc = "\\t";
        } else if (c < 0x20 || c == 0x7f || (html && (c == '<' || c == '>' || c == '&'))) {
            snprintf(code, sizeof code, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
            esc = code;
        } else if (n == 2 && c == 0xC2 && u[i + 1] <= 0x9F) { /* C1: U+0080 to U+009F */
            snprintf(code, sizeof code, "\\u00%c%c", hex[u[i + 1] >> 4], hex[u[i + 1] & 15]);
            esc = code;
        } else if (html && n == 3 && c == 0xE2 && u[i + 1] == 0x80 &&
                   (u[i + 2] == 0xA8 || u[i + 2] == 0xA9)) {
            esc = u[i + 2] == 0xA8 ? "\\u2028" : "\\u2029"; /* line ends in JavaScript */
        }
        if (!esc) {
            run += n;
        } else {
            tn_buf_add(b, s + i - run, run);
            run = 0;
            tn_buf_str(b, esc);
        }
        i += n;
    }
    tn_buf_add(b, s + len - run, run);
    tn_buf_add(b, "\"", 1);
}

void tn_json_write_number(tn_buf *b, double v) {
    char num[40];
    if (isfinite(v))
        tn_buf_str(b, tn_format_double(v, num, sizeof num));
    else
        tn_buf_add(b, "null", 4);
}

static void write_newline(tn_buf *b, int indent, int level) {
    if (indent < 0) return;
    tn_buf_add(b, "\n", 1);
    for (int i = 0; i < indent * level; i++) tn_buf_add(b, " ", 1);
}

static void write_value(tn_buf *b, const json_t *v, int indent, unsigned flags, int level) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *val;
        int first = 1;
        tn_buf_add(b, "{", 1);
        /* jansson (>= 2.8) keeps objects in insertion order */
        json_object_foreach((json_t *)v, key, val) {
            if (!first) tn_buf_add(b, ",", 1);
            first = 0;
            write_newline(b, indent, level + 1);
            tn_json_write_string(b, key, strlen(key), flags);
            tn_buf_str(b, indent < 0 ? ":" : ": ");
            write_value(b, val, indent, flags, level + 1);
        }
        if (!first) write_newline(b, indent, level);
        tn_buf_add(b, "}", 1);
        break;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        tn_buf_add(b, "[", 1);
        for (size_t i = 0; i < n; i++) {
            if (i) tn_buf_add(b, ",", 1);
            write_newline(b, indent, level + 1);
            write_value(b, json_array_get(v, i), indent, flags, level + 1);
        }
        if (n) write_newline(b, indent, level);
        tn_buf_add(b, "]", 1);
        break;
    }
    case JSON_STRING:
        tn_json_write_string(b, json_string_value(v), json_string_length(v), flags);
        break;
    case JSON_INTEGER: tn_buf_printf(b, "%lld", (long long)json_integer_value(v)); break;
    case JSON_REAL: tn_json_write_number(b, json_real_value(v)); break;
    case JSON_TRUE: tn_buf_add(b, "true", 4); break;
    case JSON_FALSE: tn_buf_add(b, "false", 5); break;
    default: tn_buf_add(b, "null", 4); break;
    }
}

void tn_json_write(tn_buf *b, const json_t *v, int indent, unsigned flags) {
    write_value(b, v, indent, flags, 0);
}
