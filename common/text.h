/*
 * text.h — small string helpers that both the tuner and the trainer need: edit
 * distance for "did you mean" hints, shortest round-trip formatting of numbers,
 * UTF-8 repair, and the one growable text buffer.
 */
#ifndef TN_TEXT_H
#define TN_TEXT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* A growable text buffer: zero-initialise it, append, then take or clear it. data is
 * NUL-terminated once anything was appended (NULL before). */
typedef struct tn_buf {
    char *data;
    size_t len;  /* bytes used, the NUL not counted */
    size_t cap;  /* bytes allocated */
} tn_buf;

void tn_buf_add(tn_buf *b, const char *s, size_t n);
void tn_buf_str(tn_buf *b, const char *s);
void tn_buf_printf(tn_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text (yours to free; "" when nothing was appended); b is empty again. */
char *tn_buf_take(tn_buf *b);
void tn_buf_clear(tn_buf *b);

/* Edit distance between a and b: insert, delete, substitute, and swap two adjacent
 * letters, each cost 1 (optimal string alignment). */
size_t tn_edit_distance(const char *a, const char *b);

/* The candidate word most likely meant, for "did you mean" hints: one that differs
 * only in case, else the closest by tn_edit_distance within max(2, strlen(word) / 3)
 * edits; NULL when none is that near. candidates is an array of n strings. */
const char *tn_closest(const char *word, const char *const *candidates, size_t n);

/* Formats v so that it reads back as the same double: a whole number below 1e15 as
 * one ("100", "-3000", "0"), anything else with the fewest significant digits (at
 * most 17) in printf's %g style ("0.1", "1e-05", "1e+20", "nan", "inf"). Returns
 * buf. */
char *tn_format_double(double v, char *buf, size_t len);

/* A copy of s[0..len) with every byte sequence that is not valid UTF-8 (an overlong
 * form, a surrogate, a code point above U+10FFFF, a stray or cut-off byte) replaced by
 * U+FFFD, one per byte; yours to free (never NULL); *outlen, when not NULL, gets its
 * length. Valid text comes back unchanged. */
char *tn_utf8_clean(const char *s, size_t len, size_t *outlen);

/* A copy of s fit to print on a terminal, whoever wrote it (a trial's log or metric
 * names, a spec): control characters but newline and tab (C0, DEL, and C1, U+0080 to
 * U+009F, which terminals may take for ESC sequences) and bytes that are not UTF-8
 * each become '?'. Yours to free. */
char *tn_term_clean(const char *s);
/* fputs of tn_term_clean(s). */
void tn_fputs_term(const char *s, FILE *f);

#endif
