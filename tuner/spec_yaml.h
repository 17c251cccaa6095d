/*
 * spec_yaml.h — a study spec written in YAML: gcloud's training config file
 * (`gcloud ai-platform jobs submit training --config config.yaml`), read into the same
 * JSON tree a JSON spec is, so that one validator (spec.c) checks both.
 *
 * Beside the tree it keeps where each value was written, so that every problem the
 * validator finds at a JSON path ("trainingInput.hyperparameters.params[0].minValue")
 * is reported at its YAML line and column. Scalars are typed as gcloud's PyYAML reads
 * them (YAML 1.1: yes/no are booleans, 010 is octal), plus YAML 1.2's 0o17 and 1e-3;
 * quoted scalars are strings. What a spec cannot be is refused with its position:
 * duplicate keys, keys that are not strings, more than one document, nesting deeper
 * than SY_MAX_DEPTH, aliases that would copy more than SY_MAX_ALIAS_NODES values (a
 * "billion laughs" document), tags other than YAML's own, infinite or NaN numbers.
 * Format: docs/spec.md, "YAML: gcloud's config file".
 */
#ifndef TN_TUNER_SPEC_YAML_H
#define TN_TUNER_SPEC_YAML_H

#include <jansson.h>
#include <stddef.h>

#include "tuner/spec.h"

#define SY_MAX_DEPTH 64             /* nested mappings and sequences: a spec needs 7,
                                       and 3 more per level of conditional parameters */
#define SY_MAX_ALIAS_NODES 100000   /* values all aliases together may copy */

/* Where each value of a YAML document was written (opaque). */
typedef struct sy_where sy_where;

/* Reads the YAML document text[0..len) into *root, a JSON object (yours to
 * json_decref), and *where (yours to sy_where_free). Returns 0, or TN_EINVAL with every
 * problem in errs (appended; each with its path, line and column; release with
 * spec_errors_clear) and *root and *where NULL. A syntax error stops the reading, so
 * it comes alone; the other problems are all reported. */
int sy_parse(const char *text, size_t len, json_t **root, sy_where **where, spec_errors *errs);

/* Sets e->line and e->column to where the value at e->path was written: a mapping's
 * member at its key, a sequence's item at the item; a path the document does not have
 * (a missing field) at its nearest enclosing value. When the message is about a type
 * and the value was a plain scalar YAML read as a boolean, null, or a number where a
 * string was wanted, adds how YAML read it to e->message ("(YAML reads the plain
 * scalar yes as true; quote it if a string is meant)"). */
void sy_where_annotate(const sy_where *w, spec_error *e);

void sy_where_free(sy_where *w);

/* Whether a spec file is YAML: its name ends in .yaml or .yml (any case); a name
 * ending in .json is not; any other is YAML unless its first character other than
 * white space or a byte-order mark is '{'. */
int sy_is_yaml(const char *path, const char *text, size_t len);

#endif
