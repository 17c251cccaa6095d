/*
 * jsonutil.h — small helpers over jansson that every JSON reader of the project
 * shares (spec, TF_CONFIG), so error messages say the same thing everywhere.
 */
#ifndef TN_JSONUTIL_H
#define TN_JSONUTIL_H

#include <jansson.h>

#include "common/text.h"

/* What a JSON value is, for messages such as "expected an integer, got a string":
 * "an object", "an array", "a string", "an integer", "a number", "a boolean",
 * "null". Static storage. */
const char *tn_json_kind(const json_t *v);

/* The one JSON writer (the CLI's --format=json, the dashboard's API, its event
 * stream). Objects keep their insertion order; integers as such; reals in shortest
 * round-trip form (tn_format_double), non-finite ones as null; strings as UTF-8, with
 * '"', '\\' and control characters escaped (\n, \r, \t, else \u00XX: C0, DEL and C1,
 * U+0080 to U+009F, so that no string drives a terminal it is printed on) and every
 * byte that is not part of valid UTF-8 written as '?', so one stray byte never loses
 * the whole document. Flags: */
#define TN_JSON_HTML_SAFE 1u /* also escape <, >, &, U+2028 and U+2029 (\u00XX,
                                \u2028, \u2029): safe inside HTML and JavaScript */
/* Appends v; indent < 0: compact (no spaces), else newlines and that many spaces per
 * nesting level, with ": " after keys. */
void tn_json_write(tn_buf *b, const json_t *v, int indent, unsigned flags);
/* Appends v as a JSON number, as above (null when not finite). */
void tn_json_write_number(tn_buf *b, double v);
/* Appends s[0..len) as a JSON string literal, as above. */
void tn_json_write_string(tn_buf *b, const char *s, size_t len, unsigned flags);

#endif
