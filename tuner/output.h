/*
 * output.h — the rows a read command prints, in the three forms --format asks for:
 * an aligned table for people, JSON (an array of objects) or CSV (RFC 4180 quoting)
 * for scripts.
 *
 * A command declares its columns, fills one row per item with typed cells, and prints
 * the whole once; every format comes from the same rows, so `tuner trials` can never
 * show one thing as a table and another as JSON. A column may be left out of some
 * formats (a combined "6 of 20 (3 ok, ...)" column for people beside the separate
 * counts scripts want). Numbers are kept as numbers: JSON and CSV get them in their
 * shortest round-trip form, tables with 6 significant digits. Strings are escaped by
 * jansson. Out-of-memory aborts (common/status.h). Documented in docs/cli.md.
 */
#ifndef TN_TUNER_OUTPUT_H
#define TN_TUNER_OUTPUT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tuner/commands.h" /* enum cli_format */

/* Column flags. */
enum out_flag {
    OUT_RIGHT = 1,    /* right-aligned in tables (numbers) */
    OUT_NO_TABLE = 2, /* left out of tables */
    OUT_NO_CSV = 4,   /* left out of CSV */
    OUT_NO_JSON = 8   /* left out of JSON */
};
#define OUT_TABLE_ONLY (OUT_NO_CSV | OUT_NO_JSON)
#define OUT_DATA_ONLY OUT_NO_TABLE

typedef struct out_table out_table;

/* A new, empty set of rows; yours to release with out_free (which accepts NULL). */
out_table *out_new(void);
void out_free(out_table *t);

/* Declares the next column: key is the JSON key and the CSV header, title the table
 * header (NULL: the key). Both are copied. All columns come before the first row. */
void out_column(out_table *t, const char *key, const char *title, int flags);

/* out_column for a column named by the user (a parameter, a metric) in a group
 * ("params", "metrics"): its CSV header is key, or GROUP.key where another CSV column
 * has that key too (a parameter named "state", a metric named like a parameter), so
 * that every header names one column. */
void out_column_in(out_table *t, const char *group, const char *key, const char *title,
                   int flags);

/* Starts a row; the cells that follow fill its columns in declaration order (columns
 * left without a cell are empty / null). */
void out_row(out_table *t);

/* Cells. Each appends to the current row. */
void out_null(out_table *t);                    /* empty; JSON null */
void out_str(out_table *t, const char *s);      /* a string; NULL is out_null */
void out_int(out_table *t, int64_t v);          /* an integer */
void out_num(out_table *t, double v);           /* a number; NaN and infinities: null */
void out_time(out_table *t, double seconds);    /* seconds since the epoch: ISO 8601 UTC
                                                   text, JSON number; 0 means none */
void out_json(out_table *t, json_t *v);         /* any JSON value (steals the reference);
                                                   tables and CSV get it compact */
/* A cell whose table text and data differ ("1h02m03s" for 3723.5 seconds, "none yet"
 * for null): text is the table's (copied; NULL: empty), json the value of JSON and CSV
 * (stolen; NULL: null, an empty CSV field; a string goes into CSV unquoted). */
void out_cell(out_table *t, const char *text, json_t *json);

/* Number of rows so far. */
size_t out_nrows(const out_table *t);

/* Parses a --format value ("table", "json", "csv") into *format (enum cli_format).
 * Returns 0, or TN_EINVAL with a message listing the three. */
int out_parse_format(const char *s, int *format, char *err, size_t errlen);

/* Prints every row in the format (enum cli_format). Tables: a header line, then the
 * rows, columns two spaces apart, no trailing spaces, control characters in cells
 * shown as spaces; with no rows, the line `empty` (when not NULL) instead of the
 * header. JSON: an array of objects, indented by two, `[]` when empty. CSV: a header
 * line of keys, then one line per row ending in "\n", fields quoted (and quotes
 * doubled) when they hold a comma, quote, CR or LF. Returns 0, or TN_EIO when writing
 * to f failed (message in err). */
int out_print(const out_table *t, int format, FILE *f, const char *empty, char *err,
              size_t errlen);

/* Prints the first row as one record: tables get a "title:  value" line per column
 * (empty cells are left out, labels aligned); JSON gets the object alone; CSV the
 * header and the row, as out_print. The table must have a row. Returns as out_print. */
int out_print_record(const out_table *t, int format, FILE *f, char *err, size_t errlen);

#endif
