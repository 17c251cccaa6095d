/*
 * jsonutil.h — small helpers over jansson that every JSON reader of the project
 * shares (spec, TF_CONFIG), so error messages say the same thing everywhere.
 */
#ifndef TN_JSONUTIL_H
#define TN_JSONUTIL_H

#include <jansson.h>

/* What a JSON value is, for messages such as "expected an integer, got a string":
 * "an object", "an array", "a string", "an integer", "a number", "a boolean",
 * "null". Static storage. */
const char *tn_json_kind(const json_t *v);

#endif
