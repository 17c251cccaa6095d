/*
 * test_output.c — tests for tuner/output.c: table alignment (left and right columns,
 * UTF-8 widths, no trailing spaces, control characters flattened), CSV quoting of
 * commas, quotes, CR and LF (RFC 4180), JSON escaping and numbers in shortest form
 * (read back with jansson), columns left out of some formats, records, empty results,
 * --format parsing, and a write error.
 *
 * Each case prints into a memory stream (render) and compares the whole text, so a
 * failure shows exactly what changed.
 */
#include "tuner/output.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "tests/check.h"

/* Prints t in the format (record: as a record) and returns the text (yours). */
static char *render(const out_table *t, int format, const char *empty, int record) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        perror("open_memstream");
        exit(2);
    }
    char err[256] = "";
    int rc = record ? out_print_record(t, format, f, err, sizeof err)
                    : out_print(t, format, f, empty, err, sizeof err);
    CHECK_MSG(rc == 0, "print failed: %s", err);
    fclose(f);
    return text;
}

#define CHECK_TEXT(got, want)                                                           \
    do {                                                                                \
        const char *g2_ = (got), *w2_ = (want);                                         \
        CHECK_MSG(g2_ && !strcmp(g2_, w2_), "got:\n%s\nexpected:\n%s", g2_ ? g2_ : "(null)", \
                  w2_);                                                                 \
    } while (0)

/* name (left), count (right), score (right) with a few rows. */
static out_table *small_table(void) {
    out_table *t = out_new();
    out_column(t, "name", "NAME", 0);
    out_column(t, "count", "N", OUT_RIGHT);
    out_column(t, "score", "SCORE", OUT_RIGHT);
    out_row(t);
    out_str(t, "a");
    out_int(t, 7);
    out_num(t, 0.5);
    out_row(t);
    out_str(t, "longer_name");
    out_int(t, 12345);
    out_num(t, 0.1234567891);
    out_row(t);
    out_str(t, "c");
    out_int(t, -3);
    out_null(t);
    return t;
}

static void test_table_alignment(void) {
    out_table *t = small_table();
    char *s = render(t, CLI_TABLE, "nothing", 0);
    CHECK_TEXT(s, "NAME             N     SCORE\n"
                  "a                7       0.5\n"
                  "longer_name  12345  0.123457\n"
                  "c               -3\n");
    free(s);
    out_free(t);
}

static void test_table_last_column_left_has_no_trailing_spaces(void) {
    out_table *t = out_new();
    out_column(t, "n", "TRIAL", OUT_RIGHT);
    out_column(t, "error", "ERROR", 0);
    out_row(t);
    out_int(t, 1);
    out_str(t, "replica chief:0 exited with status 1");
    out_row(t);
    out_int(t, 2);
    out_null(t);
    char *s = render(t, CLI_TABLE, NULL, 0);
    CHECK_TEXT(s, "TRIAL  ERROR\n"
                  "    1  replica chief:0 exited with status 1\n"
                  "    2\n");
    free(s);
    out_free(t);
}

static void test_table_utf8_and_control_characters(void) {
    out_table *t = out_new();
    out_column(t, "word", "WORD", 0);
    out_column(t, "x", "X", 0);
    out_row(t);
    out_str(t, "h\xc3\xa9llo"); /* héllo: 5 columns, 6 bytes */
    out_str(t, "1");
    out_row(t);
    out_str(t, "two\nlines\tand tab");
    out_str(t, "2");
    char *s = render(t, CLI_TABLE, NULL, 0);
    CHECK_TEXT(s, "WORD               X\n"
                  "h\xc3\xa9llo              1\n"
                  "two lines and tab  2\n");
    free(s);
    out_free(t);
}

/* Titles come from specs and from trials' metric records: flattened like cells; C1
 * controls (U+0080 to U+009F: CSI, NEL) become a space like C0's; wide characters (CJK)
 * take two columns and combining marks none, so the columns still line up. */
static void test_table_titles_c1_and_wide_characters(void) {
    out_table *t = out_new();
    out_column(t, "word", "W\nORD\x1b[2J", 0); /* a title with a newline and ESC */
    out_column(t, "x", "X", 0);
    out_row(t);
    out_str(t, "c1\xc2\x9b" "31m"); /* U+009B, CSI */
    out_str(t, "1");
    out_row(t);
    out_str(t, "\xe6\xbc\xa2\xe5\xad\x97"); /* two CJK characters: 4 columns */
    out_str(t, "2");
    out_row(t);
    out_str(t, "e\xcc\x81"); /* e and a combining acute: 1 column */
    out_str(t, "3");
    out_row(t);
    out_str(t, "raw\x9b" "1m\xff\xc1\x9b"); /* not UTF-8: 0x9B is CSI on an 8-bit terminal,
                                              also in an overlong '[' */
    out_str(t, "4");
    char *s = render(t, CLI_TABLE, NULL, 0);
    CHECK_TEXT(s, "W ORD [2J  X\n"
                  "c1 31m     1\n"
                  "\xe6\xbc\xa2\xe5\xad\x97       2\n"
                  "e\xcc\x81          3\n"
                  "raw?1m???  4\n");
    free(s);
    s = render(t, CLI_TABLE, NULL, 1); /* as a record: the label too */
    CHECK_TEXT(s, "W ORD [2J:  c1 31m\n"
                  "X:          1\n");
    free(s);
    out_free(t);
}

/* A parameter or metric column whose key another CSV column has (a parameter named
 * "state", a metric named like a parameter) gets its group as a prefix in the CSV
 * header, so each header names one column; alone, it keeps its key. Tables and JSON
 * are unchanged. */
static void test_csv_group_keys(void) {
    out_table *t = out_new();
    out_column(t, "state", "STATE", 0);
    out_column_in(t, "params", "state", "state", OUT_NO_JSON);
    out_column_in(t, "params", "x", "x", OUT_NO_JSON);
    out_column_in(t, "metrics", "x", "x", OUT_NO_JSON);
    out_column_in(t, "metrics", "loss", "loss", OUT_NO_JSON);
    out_row(t);
    out_str(t, "SUCCEEDED");
    out_str(t, "on");
    out_int(t, 1);
    out_num(t, 2.5);
    out_num(t, 0.25);
    char *s = render(t, CLI_CSV, NULL, 0);
    CHECK_TEXT(s, "state,params.state,params.x,metrics.x,loss\nSUCCEEDED,on,1,2.5,0.25\n");
    free(s);
    s = render(t, CLI_TABLE, NULL, 0);
    CHECK_TEXT(s, "STATE      state  x  x    loss\nSUCCEEDED  on     1  2.5  0.25\n");
    free(s);
    out_free(t);
}

static void test_csv_quoting(void) {
    out_table *t = out_new();
    out_column(t, "name", NULL, 0);
    out_column(t, "note", NULL, 0);
    out_column(t, "value", NULL, OUT_RIGHT);
    out_row(t);
    out_str(t, "plain");
    out_str(t, "a,b");
    out_num(t, 0.1);
    out_row(t);
    out_str(t, "say \"hi\"");
    out_str(t, "line1\nline2");
    out_num(t, 1e-5);
    out_row(t);
    out_str(t, "cr\r");
    out_null(t);
    out_num(t, 0.12345678901234568);
    char *s = render(t, CLI_CSV, "ignored", 0);
    CHECK_TEXT(s, "name,note,value\n"
                  "plain,\"a,b\",0.1\n"
                  "\"say \"\"hi\"\"\",\"line1\nline2\",1e-05\n"
                  "\"cr\r\",,0.12345678901234568\n");
    free(s);
    out_free(t);
}

/* Whole numbers print as such (100, not the equally short 1e+02); others in the
 * fewest digits that read back exactly. */
static void test_numbers_read_naturally(void) {
    const double v[] = {100, -3000, 0, 1e20, 2.5e-7, 1.0 / 3};
    const char *want[] = {"100", "-3000", "0", "1e+20", "2.5e-07", "0.3333333333333333"};
    out_table *t = out_new();
    out_column(t, "v", NULL, 0);
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        out_row(t);
        out_num(t, v[i]);
    }
    char *s = render(t, CLI_CSV, NULL, 0);
    const char *p = s + strlen("v\n");
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        size_t n = strcspn(p, "\n");
        CHECK_MSG(strlen(want[i]) == n && !strncmp(p, want[i], n), "row %zu: want %s in %s",
                  i, want[i], s);
        CHECK(strtod(p, NULL) == v[i]);
        p += n + (p[n] == '\n');
    }
    free(s);
    out_free(t);
}

static void test_json_escaping_reads_back(void) {
    const char *nasty = "quote\" backslash\\ newline\n tab\t bell\x07 \xc3\xa9";
    out_table *t = out_new();
    out_column(t, "s", NULL, 0);
    out_column(t, "n", NULL, 0);
    out_column(t, "x", NULL, 0);
    out_column(t, "nan", NULL, 0);
    out_column(t, "none", NULL, 0);
    out_row(t);
    out_str(t, nasty);
    out_int(t, -42);
    out_num(t, 0.1);
    out_num(t, NAN);
    out_null(t);
    char *s = render(t, CLI_JSON, NULL, 0);
    CHECK_STR_CONTAINS(s, "\"x\": 0.1,\n"); /* shortest form, not 0.10000000000000001 */
    CHECK_STR_CONTAINS(s, "\\\"");
    CHECK_STR_CONTAINS(s, "\\n");
    CHECK_STR_CONTAINS(s, "\\u0007");
    json_error_t je;
    json_t *v = json_loads(s, 0, &je);
    CHECK_MSG(v != NULL, "not JSON (%s): %s", je.text, s);
    if (v) {
        CHECK(json_is_array(v) && json_array_size(v) == 1);
        json_t *o = json_array_get(v, 0);
        CHECK(json_is_string(json_object_get(o, "s")) &&
              !strcmp(json_string_value(json_object_get(o, "s")), nasty));
        CHECK_INT_EQ(json_integer_value(json_object_get(o, "n")), -42);
        CHECK(json_real_value(json_object_get(o, "x")) == 0.1);
        CHECK(json_is_null(json_object_get(o, "nan")));
        CHECK(json_is_null(json_object_get(o, "none")));
        json_decref(v);
    }
    free(s);
    out_free(t);
}

static void test_json_invalid_utf8_is_replaced(void) {
    out_table *t = out_new();
    out_column(t, "s", NULL, 0);
    out_row(t);
    out_str(t, "bad\xff byte");
    char *s = render(t, CLI_JSON, NULL, 0);
    CHECK_TEXT(s, "[\n  {\n    \"s\": \"bad? byte\"\n  }\n]\n");
    free(s);
    out_free(t);
}

static void test_json_layout_and_nested_values(void) {
    out_table *t = out_new();
    out_column(t, "number", NULL, 0);
    out_column(t, "params", NULL, 0);
    out_row(t);
    out_int(t, 1);
    json_t *p = json_object();
    json_object_set_new(p, "lr", json_real(0.3));
    json_object_set_new(p, "opt", json_string("adam"));
    json_object_set_new(p, "units", json_integer(64));
    out_json(t, p);
    out_row(t);
    out_int(t, 2);
    out_json(t, json_object());
    char *s = render(t, CLI_JSON, NULL, 0);
    CHECK_TEXT(s, "[\n"
                  "  {\n"
                  "    \"number\": 1,\n"
                  "    \"params\": {\n"
                  "      \"lr\": 0.3,\n"
                  "      \"opt\": \"adam\",\n"
                  "      \"units\": 64\n"
                  "    }\n"
                  "  },\n"
                  "  {\n"
                  "    \"number\": 2,\n"
                  "    \"params\": {}\n"
                  "  }\n"
                  "]\n");
    free(s);
    /* Tables and CSV get the value compact. */
    s = render(t, CLI_CSV, NULL, 0);
    CHECK_TEXT(s, "number,params\n"
                  "1,\"{\"\"lr\"\":0.3,\"\"opt\"\":\"\"adam\"\",\"\"units\"\":64}\"\n"
                  "2,{}\n");
    free(s);
    out_free(t);
}

static void test_empty_results(void) {
    out_table *t = out_new();
    out_column(t, "name", "NAME", 0);
    out_column(t, "state", "STATE", 0);
    char *s = render(t, CLI_TABLE, "no studies in tuner.db", 0);
    CHECK_TEXT(s, "no studies in tuner.db\n");
    free(s);
    s = render(t, CLI_TABLE, NULL, 0);
    CHECK_TEXT(s, "NAME  STATE\n");
    free(s);
    s = render(t, CLI_JSON, "no studies", 0);
    CHECK_TEXT(s, "[]\n");
    free(s);
    s = render(t, CLI_CSV, "no studies", 0);
    CHECK_TEXT(s, "name,state\n");
    free(s);
    CHECK_INT_EQ(out_nrows(t), 0);
    out_free(t);
}

static void test_columns_per_format(void) {
    out_table *t = out_new();
    out_column(t, "name", "NAME", 0);
    out_column(t, "trials", "TRIALS", OUT_TABLE_ONLY);
    out_column(t, "succeeded", NULL, OUT_DATA_ONLY);
    out_column(t, "params", NULL, OUT_NO_CSV | OUT_NO_TABLE);
    out_column(t, "lr", "lr", OUT_NO_JSON | OUT_RIGHT);
    out_row(t);
    out_str(t, "s");
    out_str(t, "3 of 5");
    out_int(t, 3);
    out_json(t, json_pack("{s:f}", "lr", 0.25));
    out_num(t, 0.25);
    char *s = render(t, CLI_TABLE, NULL, 0);
    CHECK_TEXT(s, "NAME  TRIALS    lr\n"
                  "s     3 of 5  0.25\n");
    free(s);
    s = render(t, CLI_CSV, NULL, 0);
    CHECK_TEXT(s, "name,succeeded,lr\ns,3,0.25\n");
    free(s);
    s = render(t, CLI_JSON, NULL, 0);
    CHECK_TEXT(s, "[\n  {\n    \"name\": \"s\",\n    \"succeeded\": 3,\n"
                  "    \"params\": {\n      \"lr\": 0.25\n    }\n  }\n]\n");
    free(s);
    out_free(t);
}

static void test_time_cells(void) {
    out_table *t = out_new();
    out_column(t, "created", "CREATED", 0);
    out_column(t, "finished", "FINISHED", 0);
    out_row(t);
    out_time(t, 1700000000.25);
    out_time(t, 0); /* not yet */
    char *s = render(t, CLI_TABLE, NULL, 0);
    CHECK_TEXT(s, "CREATED               FINISHED\n"
                  "2023-11-14T22:13:20Z\n");
    free(s);
    s = render(t, CLI_JSON, NULL, 0);
    CHECK_TEXT(s, "[\n  {\n    \"created\": 1700000000.25,\n    \"finished\": null\n  }\n]\n");
    free(s);
    s = render(t, CLI_CSV, NULL, 0);
    CHECK_TEXT(s, "created,finished\n2023-11-14T22:13:20Z,\n");
    free(s);
    out_free(t);
}

static void test_custom_cells(void) {
    out_table *t = out_new();
    out_column(t, "elapsed", "ELAPSED", OUT_RIGHT);
    out_column(t, "best", "BEST", 0);
    out_column(t, "label", "LABEL", 0);
    out_row(t);
    out_cell(t, "1h02m03s", json_real(3723.5));
    out_cell(t, "none yet", NULL);
    out_cell(t, "a b", json_string("a,b"));
    char *s = render(t, CLI_TABLE, NULL, 0);
    CHECK_TEXT(s, " ELAPSED  BEST      LABEL\n1h02m03s  none yet  a b\n");
    free(s);
    s = render(t, CLI_JSON, NULL, 0);
    CHECK_TEXT(s, "[\n  {\n    \"elapsed\": 3723.5,\n    \"best\": null,\n"
                  "    \"label\": \"a,b\"\n  }\n]\n");
    free(s);
    s = render(t, CLI_CSV, NULL, 0);
    CHECK_TEXT(s, "elapsed,best,label\n3723.5,,\"a,b\"\n");
    free(s);
    out_free(t);
}

static void test_record(void) {
    out_table *t = out_new();
    out_column(t, "name", "name", 0);
    out_column(t, "error", "error", 0);
    out_column(t, "max_parallel_trials", "max parallel trials", 0);
    out_column(t, "pending", NULL, OUT_DATA_ONLY);
    out_row(t);
    out_str(t, "study_1");
    out_null(t); /* left out of the table */
    out_int(t, 2);
    out_int(t, 0);
    char *s = render(t, CLI_TABLE, NULL, 1);
    CHECK_TEXT(s, "name:                 study_1\n"
                  "max parallel trials:  2\n");
    free(s);
    s = render(t, CLI_JSON, NULL, 1);
    CHECK_TEXT(s, "{\n  \"name\": \"study_1\",\n  \"error\": null,\n"
                  "  \"max_parallel_trials\": 2,\n  \"pending\": 0\n}\n");
    free(s);
    s = render(t, CLI_CSV, NULL, 1);
    CHECK_TEXT(s, "name,error,max_parallel_trials,pending\nstudy_1,,2,0\n");
    free(s);
    out_free(t);

    /* A record needs a row. */
    t = out_new();
    out_column(t, "name", NULL, 0);
    char err[128] = "";
    FILE *f = fopen("/dev/null", "w");
    CHECK(f != NULL);
    if (f) {
        CHECK_INT_EQ(out_print_record(t, CLI_TABLE, f, err, sizeof err), TN_EINVAL);
        fclose(f);
    }
    out_free(t);
}

static void test_parse_format(void) {
    int fmt = 0;
    char err[128] = "";
    CHECK_INT_EQ(out_parse_format("table", &fmt, err, sizeof err), 0);
    CHECK_INT_EQ(fmt, CLI_TABLE);
    CHECK_INT_EQ(out_parse_format("json", &fmt, err, sizeof err), 0);
    CHECK_INT_EQ(fmt, CLI_JSON);
    CHECK_INT_EQ(out_parse_format("csv", &fmt, err, sizeof err), 0);
    CHECK_INT_EQ(fmt, CLI_CSV);
    CHECK_INT_EQ(out_parse_format("yaml", &fmt, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "unknown format 'yaml'");
    CHECK_STR_CONTAINS(err, "table, json or csv");
    CHECK_INT_EQ(fmt, CLI_CSV); /* unchanged */
    CHECK_INT_EQ(out_parse_format("JSON", &fmt, NULL, 0), TN_EINVAL);
}

static void test_write_error(void) {
    FILE *f = fopen("/dev/full", "w");
    if (!f) return; /* no /dev/full here */
    out_table *t = small_table();
    char err[128] = "";
    CHECK_INT_EQ(out_print(t, CLI_TABLE, f, NULL, err, sizeof err), TN_EIO);
    CHECK_STR_CONTAINS(err, "cannot write the output");
    fclose(f);
    out_free(t);
}

static void test_many_rows_and_columns(void) {
    /* More rows and columns than the first allocation holds. */
    out_table *t = out_new();
    char key[16];
    for (int c = 0; c < 40; c++) {
        snprintf(key, sizeof key, "c%d", c);
        out_column(t, key, NULL, OUT_RIGHT);
    }
    for (int r = 0; r < 100; r++) {
        out_row(t);
        for (int c = 0; c < 40; c++) out_int(t, r * c);
    }
    CHECK_INT_EQ(out_nrows(t), 100);
    char *s = render(t, CLI_JSON, NULL, 0);
    json_t *v = json_loads(s, 0, NULL);
    CHECK(v && json_array_size(v) == 100);
    if (v)
        CHECK_INT_EQ(json_integer_value(json_object_get(json_array_get(v, 99), "c39")), 99 * 39);
    json_decref(v);
    free(s);
    out_free(t);
}

int main(void) {
    RUN(test_table_alignment);
    RUN(test_table_last_column_left_has_no_trailing_spaces);
    RUN(test_table_utf8_and_control_characters);
    RUN(test_table_titles_c1_and_wide_characters);
    RUN(test_csv_quoting);
    RUN(test_csv_group_keys);
    RUN(test_numbers_read_naturally);
    RUN(test_json_escaping_reads_back);
    RUN(test_json_invalid_utf8_is_replaced);
    RUN(test_json_layout_and_nested_values);
    RUN(test_empty_results);
    RUN(test_columns_per_format);
    RUN(test_time_cells);
    RUN(test_custom_cells);
    RUN(test_record);
    RUN(test_parse_format);
    RUN(test_write_error);
    RUN(test_many_rows_and_columns);
    return check_summary();
}
