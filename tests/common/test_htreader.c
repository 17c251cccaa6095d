/*
 * test_htreader.c — tests for common/htreader.c, the reader of the cloudml-hypertune
 * metric file: files written by our writer (common/hypertune.c, ht_report) and by
 * hand as the Python library and appending programs write them. Every record must be
 * delivered exactly once across polls however the file is rewritten (the sliding
 * 100-record window), appended to or caught mid-write; garbage lines are skipped and
 * counted once; steps, timestamps, trials and metric values are read in each form
 * the protocol allows; a file too large is read from its end.
 *
 * Files go under $TN_TEST_TMP (or /tmp) in a folder named after the pid, removed at
 * the end. Contract: common/htreader.h; docs/metrics.md.
 */
#include "common/htreader.h"

#include "common/hypertune.h"
#include "common/status.h"
#include "tests/check.h"
#include "tests/testutil.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PATH_LEN 4096

static char g_root[PATH_LEN]; /* this run's folder */

/* ---------------------------------------------------------------------------------
 * Helpers
 * --------------------------------------------------------------------------------- */

/* Writes text to path with mode "w" (truncate) or "a" (append). */
static void put_text(const char *path, const char *mode, const char *text) {
    FILE *f = fopen(path, mode);
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        abort();
    }
}

/* Replaces path's contents atomically, as our writer does. */
static void replace_text(const char *path, const char *text) {
    char tmp[PATH_LEN];
    fmt_path(tmp, "%s.tmp", path);
    put_text(tmp, "w", text);
    if (rename(tmp, path) != 0) abort();
}

/* The file name for a test: g_root/name. */
static void test_file(char *out, const char *name) { fmt_path(out, "%s/%s", g_root, name); }

/* Polls once; fails the test on an error. Returns the records (free with
 * htr_records_free), their number in *n. */
static htr_record *poll_ok(htr_reader *r, size_t *n) {
    htr_record *recs = NULL;
    char err[512] = "";
    int rc = htr_poll(r, &recs, n, err, sizeof err);
    CHECK_MSG(rc == 0, "htr_poll: rc %d: %s", rc, err);
    CHECK(*n == 0 || recs != NULL);
    return recs;
}

/* The writer of trial `trial` to g_root/name (its path into path), and a reader of
 * the file into *r; NULL (reported) and no reader when the writer does not open. */
static ht_writer *open_writer(char *path, const char *name, const char *trial,
                              htr_reader **r) {
    char err[512] = "";
    ht_writer *w = NULL;
    test_file(path, name);
    CHECK_INT_EQ(ht_writer_open(path, trial, &w, err, sizeof err), 0);
    *r = w ? htr_new(path) : NULL;
    return w;
}

/* Polls once (poll_ok) and counts every record of a step below limit in
 * count[step]. */
static void poll_count(htr_reader *r, int *count, long long limit) {
    size_t n;
    htr_record *recs = poll_ok(r, &n);
    for (size_t k = 0; k < n; k++)
        if (recs[k].step >= 0 && recs[k].step < limit) count[recs[k].step]++;
    htr_records_free(recs, n);
}

/* Checks that each of the steps 0 to n-1 was counted once. */
static void check_each_once(const int *count, int n) {
    for (int i = 0; i < n; i++)
        CHECK_MSG(count[i] == 1, "step %d delivered %d times", i, count[i]);
}

/* A line as the Python library writes it (sorted keys, ", " and ": "). */
static void py_line(char *out, size_t len, long step, double value, double ts) {
    snprintf(out, len,
             "{\"checkpoint_path\": \"\", \"global_step\": \"%ld\", \"loss\": \"%.17g\", "
             "\"timestamp\": %.6f, \"trial\": \"0\"}\n", step, value, ts);
}

/* ---------------------------------------------------------------------------------
 * Files written by our writer
 * --------------------------------------------------------------------------------- */

static void test_missing_file_then_created(void) {
    char path[PATH_LEN];
    test_file(path, "missing/out.metrics");
    htr_reader *r = htr_new(path);
    CHECK(!strcmp(htr_path(r), path));
    size_t n = 99;
    htr_record *recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 0);
    CHECK(recs == NULL);
    recs = poll_ok(r, &n); /* still nothing, still no error */
    CHECK_INT_EQ(n, 0);

    ht_writer *w = NULL;
    char err[512] = "";
    CHECK_INT_EQ(ht_writer_open(path, "5", &w, err, sizeof err), 0);
    if (!w) {
        htr_free(r);
        return;
    }
    ht_metric ms[2] = {{"accuracy", 0.87}, {"loss", 0.4476}};
    CHECK_INT_EQ(ht_report(w, 469, ms, 2, "ckpt/ckpt-469.ckpt", 1795333339.40, err, sizeof err),
                 0);
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 1);
    if (n == 1) {
        CHECK_INT_EQ(recs[0].step, 469);
        CHECK_INT_EQ(recs[0].step_given, 1);
        CHECK(recs[0].timestamp == 1795333339.40);
        CHECK_INT_EQ(recs[0].timestamp_given, 1);
        CHECK(recs[0].trial && !strcmp(recs[0].trial, "5"));
        CHECK(recs[0].checkpoint_path && !strcmp(recs[0].checkpoint_path, "ckpt/ckpt-469.ckpt"));
        CHECK_INT_EQ(recs[0].nmetrics, 2);
        double v = -1;
        CHECK(htr_record_metric(&recs[0], "accuracy", &v) && v == 0.87);
        CHECK(htr_record_metric(&recs[0], "loss", &v) && v == 0.4476);
        CHECK(!htr_record_metric(&recs[0], "global_step", &v));
        CHECK(!htr_record_metric(&recs[0], "timestamp", &v));
        CHECK(!htr_record_metric(&recs[0], "nope", &v));
        CHECK_MSG(!strcmp(recs[0].metrics_json, "{\"accuracy\":0.87,\"loss\":0.4476}"), "%s",
                  recs[0].metrics_json);
        CHECK_INT_EQ(recs[0].ndropped, 0);
        CHECK_STR_CONTAINS(recs[0].line, "\"global_step\":\"469\"");
    }
    htr_records_free(recs, n);
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 0);
    htr_records_free(recs, n);
    ht_writer_free(w);
    htr_free(r);
}

/* 150 reports with the 100-record window, a poll after every report: all 150, each
 * once, in order. */
static void test_writer_150_reports_poll_each(void) {
    char path[PATH_LEN], err[512] = "";
    htr_reader *r;
    ht_writer *w = open_writer(path, "w150.metrics", "2", &r);
    if (!w) return;
    int count[150] = {0};
    int out_of_order = 0, bad_value = 0;
    long long last = -1;
    for (int i = 0; i < 150; i++) {
        ht_metric m[2] = {{"accuracy", i / 150.0}, {"epoch", (double)(i / 10)}};
        int rc = ht_report(w, i, m, 2, NULL, 1.7e9 + i * 0.25, err, sizeof err);
        CHECK_MSG(rc == 0, "report %d: %s", i, err);
        size_t n;
        htr_record *recs = poll_ok(r, &n);
        CHECK_MSG(n == 1, "after report %d: %zu new records", i, n);
        for (size_t k = 0; k < n; k++) {
            long long s = recs[k].step;
            if (s >= 0 && s < 150) count[s]++;
            if (s <= last) out_of_order++;
            last = s;
            double v;
            if (!htr_record_metric(&recs[k], "accuracy", &v) || v != s / 150.0) bad_value++;
        }
        htr_records_free(recs, n);
    }
    check_each_once(count, 150);
    CHECK_INT_EQ(out_of_order, 0);
    CHECK_INT_EQ(bad_value, 0);
    htr_stats st;
    htr_get_stats(r, &st);
    CHECK_INT_EQ(st.records, 150);
    CHECK_INT_EQ(st.polls, 150);
    CHECK_INT_EQ(st.bad_lines, 0);

    /* A restarted replica's writer reloads the file and rewrites it: nothing new. */
    ht_writer_free(w);
    w = NULL;
    CHECK_INT_EQ(ht_writer_open(path, "2", &w, err, sizeof err), 0);
    ht_metric m = {"accuracy", 1.0};
    CHECK_INT_EQ(ht_report(w, 150, &m, 1, NULL, 1.8e9, err, sizeof err), 0);
    size_t n;
    htr_record *recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 1);
    if (n == 1) CHECK_INT_EQ(recs[0].step, 150);
    htr_records_free(recs, n);
    ht_writer_free(w);
    htr_free(r);
}

/* Polls now and then while the window slides: what is in view when polled is
 * delivered once; what slid out between polls is gone. */
static void test_writer_window_slides_between_polls(void) {
    char path[PATH_LEN], err[512] = "";
    htr_reader *r;
    ht_writer *w = open_writer(path, "slide.metrics", "1", &r);
    if (!w) return;
    int count[260] = {0};
    int report = 0;
    /* Poll after 30 reports, 60 more, 100 more (a whole window), 70 more. */
    const int poll_at[] = {30, 90, 190, 260};
    for (size_t p = 0; p < 4; p++) {
        for (; report < poll_at[p]; report++) {
            ht_metric m = {"loss", 1.0 / (report + 1)};
            CHECK_INT_EQ(ht_report(w, report, &m, 1, NULL, 1e9 + report, err, sizeof err), 0);
        }
        poll_count(r, count, 260);
    }
    /* Delivered: 0..29, 30..89, 90..189, then 160..259 minus what was seen (190..259). */
    check_each_once(count, 260);
    ht_writer_free(w);
    htr_free(r);

    /* Between polls 60 reports pass that never were in view together with the
     * earlier ones: they are lost, the rest come once. */
    w = open_writer(path, "slide2.metrics", "1", &r);
    if (!w) return;
    int count2[160] = {0};
    for (int i = 0; i < 160; i++) {
        ht_metric m = {"loss", (double)i};
        CHECK_INT_EQ(ht_report(w, i, &m, 1, NULL, 2e9 + i, err, sizeof err), 0);
        if (i == 29 || i == 159) poll_count(r, count2, 160);
    }
    for (int i = 0; i < 160; i++) {
        int want = (i < 30 || i >= 60) ? 1 : 0;
        CHECK_MSG(count2[i] == want, "step %d delivered %d times, want %d", i, count2[i], want);
    }
    ht_writer_free(w);
    htr_free(r);
}

/* ---------------------------------------------------------------------------------
 * Files written by hand
 * --------------------------------------------------------------------------------- */

/* The Python library's rewrite: the whole file, the last 100 records. */
static void test_python_rewrite_by_hand(void) {
    char path[PATH_LEN];
    test_file(path, "py.metrics");
    htr_reader *r = htr_new(path);
    int count[140] = {0};
    size_t cap = 100 * 200;
    char *text = malloc(cap);
    for (int end = 10; end <= 140; end += 13) {
        /* The file after report number end-1: records max(0, end-100) .. end-1. */
        text[0] = '\0';
        size_t len = 0;
        for (int i = end > 100 ? end - 100 : 0; i < end; i++) {
            char line[200];
            py_line(line, sizeof line, i, 1.0 / (i + 1), 1525851440.123456 + i);
            memcpy(text + len, line, strlen(line) + 1);
            len += strlen(line);
        }
        put_text(path, "w", text); /* truncate and write, as the library does */
        size_t n;
        htr_record *recs = poll_ok(r, &n);
        for (size_t k = 0; k < n; k++) {
            if (recs[k].step >= 0 && recs[k].step < 140) count[recs[k].step]++;
            CHECK(recs[k].trial && !strcmp(recs[k].trial, "0"));
            CHECK(recs[k].checkpoint_path && !strcmp(recs[k].checkpoint_path, ""));
            CHECK_NEAR(recs[k].timestamp, 1525851440.123456 + (double)recs[k].step, 1e-6, 0);
        }
        htr_records_free(recs, n);
    }
    free(text);
    /* end = 10, 23, ..., 140 (the last poll): windows overlap, so all 140 come once. */
    check_each_once(count, 140);
    htr_free(r);
}

/* An exact hand-made rewrite: 0..99, then 20..119 — only 100..119 are new. */
static void test_rewrite_window_exact(void) {
    char path[PATH_LEN];
    test_file(path, "window.metrics");
    htr_reader *r = htr_new(path);
    for (int pass = 0; pass < 2; pass++) {
        char *text = malloc(120 * 200);
        size_t len = 0;
        for (int i = pass * 20; i < 100 + pass * 20; i++)
            len += (size_t)sprintf(text + len, "{\"global_step\": %d, \"loss\": %d.5, "
                                   "\"timestamp\": %d.25}\n", i, i, 1000 + i);
        replace_text(path, text);
        free(text);
        size_t n;
        htr_record *recs = poll_ok(r, &n);
        CHECK_INT_EQ(n, pass == 0 ? 100 : 20);
        if (n > 0) {
            CHECK_INT_EQ(recs[0].step, pass == 0 ? 0 : 100);
            CHECK_INT_EQ(recs[n - 1].step, pass == 0 ? 99 : 119);
            double v;
            CHECK(htr_record_metric(&recs[n - 1], "loss", &v) && v == (pass ? 119.5 : 99.5));
            CHECK(recs[n - 1].timestamp == (pass ? 1119.25 : 1099.25));
        }
        htr_records_free(recs, n);
    }
    htr_free(r);
}

static void test_appending_program(void) {
    char path[PATH_LEN];
    test_file(path, "append.metrics");
    htr_reader *r = htr_new(path);
    int total = 0;
    int count[50] = {0};
    for (int batch = 0; batch < 5; batch++) {
        for (int i = 0; i < batch + 1; i++, total++) {
            char line[200];
            snprintf(line, sizeof line, "{\"global_step\": \"%d\", \"accuracy\": \"0.%d\", "
                     "\"timestamp\": %d.5}\n", total * 10, total, 5000 + total);
            put_text(path, "a", line);
        }
        size_t n;
        htr_record *recs = poll_ok(r, &n);
        CHECK_MSG(n == (size_t)(batch + 1), "batch %d: %zu records", batch, n);
        for (size_t k = 0; k < n; k++)
            if (recs[k].step >= 0 && recs[k].step < 500) count[recs[k].step / 10]++;
        htr_records_free(recs, n);
    }
    for (int i = 0; i < total; i++) CHECK_MSG(count[i] == 1, "record %d: %d times", i, count[i]);
    htr_free(r);
}

static void test_partial_last_line(void) {
    char path[PATH_LEN];
    test_file(path, "partial.metrics");
    htr_reader *r = htr_new(path);
    const char *first = "{\"global_step\": \"1\", \"loss\": \"0.9\", \"timestamp\": 1.0}\n";
    const char *head = "{\"global_step\": \"2\", \"loss\": \"0.";
    const char *tail = "8\", \"timestamp\": 2.0}\n";
    char text[512];
    snprintf(text, sizeof text, "%s%s", first, head);
    put_text(path, "w", text);
    size_t n;
    htr_record *recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 1);
    if (n == 1) CHECK_INT_EQ(recs[0].step, 1);
    htr_records_free(recs, n);
    /* Polled again while still partial: nothing, and no bad line counted. */
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 0);
    htr_records_free(recs, n);

    /* A partial line that happens to be valid JSON still waits for its newline. */
    snprintf(text, sizeof text, "%s{\"global_step\": \"2\"}", first);
    put_text(path, "w", text);
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 0);
    htr_records_free(recs, n);

    /* The program finishes the line. */
    snprintf(text, sizeof text, "%s%s", first, head);
    put_text(path, "w", text);
    put_text(path, "a", tail);
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 1);
    if (n == 1) {
        CHECK_INT_EQ(recs[0].step, 2);
        double v;
        CHECK(htr_record_metric(&recs[0], "loss", &v) && v == 0.8);
    }
    htr_records_free(recs, n);
    htr_stats st;
    htr_get_stats(r, &st);
    CHECK_INT_EQ(st.bad_lines, 0);
    CHECK_INT_EQ(st.records, 2);

    /* The final read after the program exited takes an unterminated whole object,
     * once: adding its newline later does not deliver it again. */
    put_text(path, "a", "{\"global_step\": \"3\", \"loss\": \"0.7\"}");
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 0);
    htr_records_free(recs, n);
    char err[256] = "";
    CHECK_INT_EQ(htr_poll_final(r, &recs, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 1);
    if (n == 1) CHECK_INT_EQ(recs[0].step, 3);
    htr_records_free(recs, n);
    put_text(path, "a", "\n");
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 0);
    htr_records_free(recs, n);
    htr_free(r);
}

static void test_garbage_lines_skipped(void) {
    char path[PATH_LEN];
    test_file(path, "garbage.metrics");
    htr_reader *r = htr_new(path);
    const char *text =
        "{\"global_step\": \"1\", \"loss\": \"0.5\"}\n"
        "this is not json\n"
        "\n"
        "   \n"
        "[1, 2, 3]\n"
        "42\n"
        "\"a string\"\n"
        "{\"global_step\": \"2\", \"loss\":\n"
        "{\"global_step\": \"3\"} trailing\n"
        "{\"loss\": nan}\n"
        "{\"global_step\": \"4\", \"loss\": \"0.3\"}\r\n"
        "{\"global_step\": \"5\", \"loss\": \"0.2\"}\n";
    put_text(path, "w", text);
    size_t n;
    htr_record *recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 3);
    const int want[] = {1, 4, 5};
    for (size_t k = 0; k < n && k < 3; k++) {
        CHECK_INT_EQ(recs[k].step, want[k]);
        CHECK_MSG(!strchr(recs[k].line, '\r') && !strchr(recs[k].line, '\n'), "line %zu: %s", k,
                  recs[k].line);
    }
    htr_records_free(recs, n);
    htr_stats st;
    htr_get_stats(r, &st);
    CHECK_INT_EQ(st.bad_lines, 7); /* blank lines are not counted */

    /* Re-reading the same garbage does not count it again; new garbage does. */
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 0);
    htr_records_free(recs, n);
    put_text(path, "a", "more garbage\n{\"global_step\": \"6\"}\n");
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 1);
    htr_records_free(recs, n);
    htr_get_stats(r, &st);
    CHECK_INT_EQ(st.bad_lines, 8);
    CHECK_INT_EQ(st.records, 4);
    htr_free(r);
}

static void test_step_forms(void) {
    char path[PATH_LEN];
    test_file(path, "steps.metrics");
    htr_reader *r = htr_new(path);
    put_text(path, "w",
             "{\"global_step\": 1000, \"loss\": \"1\"}\n"            /* number */
             "{\"global_step\": \"2000\", \"loss\": \"2\"}\n"        /* string */
             "{\"loss\": \"3\"}\n"                                   /* missing: ordinal 3 */
             "{\"global_step\": \"4000.0\", \"loss\": \"4\"}\n"      /* integral string */
             "{\"global_step\": 5000.0, \"loss\": \"5\"}\n"          /* integral number */
             "{\"global_step\": \"abc\", \"loss\": \"6\"}\n"         /* not a step: ordinal */
             "{\"global_step\": \"7.5\", \"loss\": \"7\"}\n"         /* not an integer */
             "{\"global_step\": \"123456789012345\", \"loss\": \"8\"}\n"
             "{\"global_step\": null, \"loss\": \"9\"}\n");
    size_t n;
    htr_record *recs = poll_ok(r, &n);
    const struct {
        long long step;
        int given;
    } want[] = {{1000, 1}, {2000, 1}, {3, 0}, {4000, 1}, {5000, 1},
                {6, 0},    {7, 0},    {123456789012345LL, 1}, {9, 0}};
    CHECK_INT_EQ(n, 9);
    for (size_t k = 0; k < n && k < 9; k++) {
        CHECK_MSG(recs[k].step == want[k].step && recs[k].step_given == want[k].given,
                  "record %zu: step %lld given %d", k, (long long)recs[k].step,
                  recs[k].step_given);
        /* No timestamps here: the timestamp is the ordinal too. */
        CHECK_MSG(recs[k].timestamp == (double)(k + 1) && !recs[k].timestamp_given,
                  "record %zu: timestamp %g", k, recs[k].timestamp);
        /* global_step is never a metric. */
        CHECK_INT_EQ(recs[k].nmetrics, 1);
    }
    htr_records_free(recs, n);

    /* Ordinals go on counting across polls. */
    put_text(path, "a", "{\"loss\": \"10\"}\n");
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 1);
    if (n == 1) {
        CHECK_INT_EQ(recs[0].step, 10);
        CHECK_INT_EQ(recs[0].step_given, 0);
    }
    htr_records_free(recs, n);
    htr_free(r);
}

/* What jansson cannot hold but programs write as bare values: Python's json.dumps of a
 * diverged float (NaN, Infinity, -Infinity), a number that overflows a double, an
 * integer of hundreds of digits. Read as the numeric strings they mean (so a last NaN
 * fails the trial, docs/metrics.md), not skipped as bad lines, which let an earlier
 * value stand; the same text inside a string is left alone. */
static void test_unrepresentable_bare_values(void) {
    char path[PATH_LEN];
    test_file(path, "bare.metrics");
    htr_reader *r = htr_new(path);
    char big[420];
    memset(big, '9', 400);
    big[400] = '\0';
    char *text = tn_xasprintf(
        "{\"global_step\": 1, \"a\": NaN, \"b\": Infinity, \"c\": -Infinity, \"d\": 1e999, "
        "\"e\": %s, \"f\": -1e999, \"note\": \"NaN, Infinity: 1e999\", \"g\": 0.5}\n",
        big);
    put_text(path, "w", text);
    free(text);
    size_t n;
    htr_record *recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 1);
    if (n == 1) {
        const struct {
            const char *name;
            double value;
        } want[] = {{"a", NAN},      {"b", INFINITY},  {"c", -INFINITY}, {"d", INFINITY},
                    {"e", INFINITY}, {"f", -INFINITY}, {"g", 0.5}};
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
            double v = 0;
            CHECK_MSG(htr_record_metric(&recs[0], want[i].name, &v), "%s missing", want[i].name);
            CHECK_MSG(isnan(want[i].value) ? isnan(v) : v == want[i].value, "%s: %g",
                      want[i].name, v);
        }
        CHECK_INT_EQ(recs[0].nignored, 1); /* note: a string, not a number */
    }
    htr_records_free(recs, n);
    htr_stats st;
    htr_get_stats(r, &st);
    CHECK_INT_EQ(st.bad_lines, 0);
    htr_free(r);
}

static void test_metric_values(void) {
    char path[PATH_LEN];
    test_file(path, "values.metrics");
    htr_reader *r = htr_new(path);
    put_text(path, "w",
             "{\"global_step\": \"1\", \"a\": \"0.87\", \"b\": 0.5, \"c\": 3, \"d\": \"1e-05\", "
             "\"e\": \"-2.5E+3\", \"f\": \"nan\", \"g\": \"inf\", \"h\": \"-Infinity\", "
             "\"i\": \"abc\", \"j\": true, \"k\": null, \"l\": \"\", \"m\": [1], \"n\": {}, "
             "\"o\": \"0x10\", \"p\": \" 1\", \"q\": \"1.5.2\", \"r\": \"+7\", \"s\": \".5\", "
             "\"t\": \"1e400\", \"u\": 99999999999999999999999, "
             "\"timestamp\": \"12.5\", \"trial\": 4, \"checkpoint_path\": 7}\n");
    size_t n;
    htr_record *recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 1);
    if (n != 1) {
        htr_records_free(recs, n);
        htr_free(r);
        return;
    }
    htr_record *rec = &recs[0];
    const struct {
        const char *name;
        double value;
    } want[] = {{"a", 0.87},      {"b", 0.5},      {"c", 3},        {"d", 1e-05},
                {"e", -2500},     {"f", NAN},      {"g", INFINITY}, {"h", -INFINITY},
                {"r", 7},         {"s", 0.5},      {"t", INFINITY}, {"u", 1e23}};
    const size_t nw = sizeof want / sizeof want[0];
    CHECK_INT_EQ(rec->nmetrics, nw);
    for (size_t i = 0; i < nw; i++) {
        double v = 0;
        int found = htr_record_metric(rec, want[i].name, &v);
        CHECK_MSG(found, "metric %s missing", want[i].name);
        if (!found) continue;
        if (isnan(want[i].value))
            CHECK_MSG(isnan(v), "%s = %g", want[i].name, v);
        else
            CHECK_MSG(v == want[i].value, "%s = %.17g, want %.17g", want[i].name, v,
                      want[i].value);
    }
    double v;
    const char *ignored[] = {"i", "j", "k", "l", "m", "n", "o", "p", "q"};
    for (size_t i = 0; i < 9; i++)
        CHECK_MSG(!htr_record_metric(rec, ignored[i], &v), "%s is a metric", ignored[i]);
    CHECK_INT_EQ(rec->nignored, 9);
    CHECK_INT_EQ(rec->ndropped, 4); /* f, g, h, t */
    CHECK_MSG(!strcmp(rec->metrics_json,
                      "{\"a\":0.87,\"b\":0.5,\"c\":3,\"d\":1e-05,\"e\":-2500,\"r\":7,\"s\":0.5,"
                      "\"u\":1e+23}"),
              "%s", rec->metrics_json);
    json_t *parsed = json_loads(rec->metrics_json, 0, NULL);
    CHECK_MSG(json_is_object(parsed), "metrics_json is not a JSON object");
    json_decref(parsed);
    /* A numeric-string timestamp counts; an integer trial is written in decimal; a
     * non-string checkpoint path is none. */
    CHECK(rec->timestamp == 12.5 && rec->timestamp_given);
    CHECK(rec->trial && !strcmp(rec->trial, "4"));
    CHECK(rec->checkpoint_path == NULL);
    htr_records_free(recs, n);
    htr_stats st;
    htr_get_stats(r, &st);
    CHECK_INT_EQ(st.dropped, 4);
    CHECK_INT_EQ(st.ignored, 9);

    /* A record with no numeric metric at all has "{}". */
    put_text(path, "a", "{\"global_step\": \"2\", \"note\": \"hello\"}\n");
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 1);
    if (n == 1) {
        CHECK(!strcmp(recs[0].metrics_json, "{}"));
        CHECK_INT_EQ(recs[0].nmetrics, 0);
        CHECK(recs[0].trial == NULL);
    }
    htr_records_free(recs, n);
    htr_free(r);
}

static void test_same_timestamp_different_content(void) {
    char path[PATH_LEN];
    test_file(path, "samets.metrics");
    htr_reader *r = htr_new(path);
    put_text(path, "w",
             "{\"global_step\": \"1\", \"loss\": \"0.5\", \"timestamp\": 100.5}\n"
             "{\"global_step\": \"1\", \"accuracy\": \"0.7\", \"timestamp\": 100.5}\n");
    size_t n;
    htr_record *recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 2);
    if (n == 2) {
        CHECK(recs[0].timestamp == 100.5 && recs[1].timestamp == 100.5);
        double v;
        CHECK(htr_record_metric(&recs[0], "loss", &v) && v == 0.5);
        CHECK(htr_record_metric(&recs[1], "accuracy", &v) && v == 0.7);
    }
    htr_records_free(recs, n);
    /* The same line again (rewritten, or appended twice) is the same record; a line
     * differing only in the last digit of the timestamp is not. */
    put_text(path, "w",
             "{\"global_step\": \"1\", \"loss\": \"0.5\", \"timestamp\": 100.5}\n"
             "{\"global_step\": \"1\", \"accuracy\": \"0.7\", \"timestamp\": 100.5}\n"
             "{\"global_step\": \"1\", \"loss\": \"0.5\", \"timestamp\": 100.5}\n"
             "{\"global_step\": \"1\", \"loss\": \"0.5\", \"timestamp\": 100.50000000000001}\n");
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 1);
    if (n == 1) CHECK(recs[0].timestamp == 100.50000000000001 && recs[0].timestamp != 100.5);
    htr_records_free(recs, n);
    htr_free(r);
}

/* Collects the values of metric `name` of every record of one poll into vals (at
 * most cap), after *nv; returns how many the poll delivered. */
static size_t poll_values(htr_reader *r, const char *name, double *vals, size_t *nv,
                          size_t cap) {
    size_t n;
    htr_record *recs = poll_ok(r, &n);
    for (size_t k = 0; k < n; k++) {
        double v;
        if (*nv < cap && htr_record_metric(&recs[k], name, &v)) vals[(*nv)++] = v;
    }
    htr_records_free(recs, n);
    return n;
}

/* A program that appends its own lines without a timestamp or a step: the same line
 * written twice is two reports, in one poll or across polls, and the last one stands
 * (0.5, 0.3, 0.5 ends at 0.5, not 0.3). */
static void test_appended_copies_without_timestamp(void) {
    char path[PATH_LEN];
    test_file(path, "copies.metrics");
    htr_reader *r = htr_new(path);
    double v[16];
    size_t nv = 0;
    put_text(path, "w", "{\"accuracy\": 0.5}\n{\"accuracy\": 0.3}\n{\"accuracy\": 0.5}\n");
    CHECK_INT_EQ(poll_values(r, "accuracy", v, &nv, 16), 3);
    put_text(path, "a", "{\"accuracy\": 0.3}\n");
    CHECK_INT_EQ(poll_values(r, "accuracy", v, &nv, 16), 1);
    CHECK_INT_EQ(poll_values(r, "accuracy", v, &nv, 16), 0); /* nothing new */
    put_text(path, "a", "{\"accuracy\": 0.5}\n{\"accuracy\": 0.5}\n");
    CHECK_INT_EQ(poll_values(r, "accuracy", v, &nv, 16), 2);
    const double want[] = {0.5, 0.3, 0.5, 0.3, 0.5, 0.5};
    CHECK_INT_EQ(nv, 6);
    for (size_t i = 0; i < nv && i < 6; i++) CHECK_MSG(v[i] == want[i], "record %zu: %g", i, v[i]);
    /* The step and the timestamp are the ordinals. */
    put_text(path, "a", "{\"accuracy\": 0.5}\n");
    size_t n;
    htr_record *recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 1);
    if (n == 1) CHECK(recs[0].step == 7 && !recs[0].step_given && recs[0].timestamp == 7);
    htr_records_free(recs, n);
    htr_stats st;
    htr_get_stats(r, &st);
    CHECK_INT_EQ(st.records, 7);
    htr_free(r);
}

/* A program that rewrites its file without timestamps, read half-written and then
 * whole: once the file has been seen to shrink, what comes back is not new, copies
 * included, and only the lines beyond the copies dealt with are. */
static void test_rewrite_read_half_written(void) {
    char path[PATH_LEN];
    test_file(path, "halfway.metrics");
    htr_reader *r = htr_new(path);
    double v[16];
    size_t nv = 0;
    put_text(path, "w", "{\"loss\": 1}\n{\"loss\": 2}\n{\"loss\": 2}\n{\"loss\": 3}\n");
    CHECK_INT_EQ(poll_values(r, "loss", v, &nv, 16), 4);
    put_text(path, "w", "{\"loss\": 1}\n{\"loss\": 2}\n"); /* truncated, part written */
    CHECK_INT_EQ(poll_values(r, "loss", v, &nv, 16), 0);
    /* The whole again with one more: that one only. Had the reader taken what follows
     * the half as appended, it would deliver the second 2 and the 3 again. */
    put_text(path, "w", "{\"loss\": 1}\n{\"loss\": 2}\n{\"loss\": 2}\n{\"loss\": 3}\n"
             "{\"loss\": 4}\n");
    CHECK_INT_EQ(poll_values(r, "loss", v, &nv, 16), 1);
    /* A third copy of a text is one more report. */
    put_text(path, "w", "{\"loss\": 2}\n{\"loss\": 2}\n{\"loss\": 3}\n{\"loss\": 4}\n"
             "{\"loss\": 2}\n");
    CHECK_INT_EQ(poll_values(r, "loss", v, &nv, 16), 1);
    const double want[] = {1, 2, 2, 3, 4, 2};
    CHECK_INT_EQ(nv, 6);
    for (size_t i = 0; i < nv && i < 6; i++) CHECK_MSG(v[i] == want[i], "record %zu: %g", i, v[i]);
    htr_free(r);
}

/* A stray byte that is not UTF-8 in a text value does not lose the record's metrics;
 * the value is read with U+FFFD in its place. */
static void test_invalid_utf8_in_line(void) {
    char path[PATH_LEN];
    test_file(path, "latin1.metrics");
    htr_reader *r = htr_new(path);
    put_text(path, "w", "{\"accuracy\": 0.9, \"note\": \"caf\xe9\", \"trial\": \"t\xff\"}\n"
             "{\"caf\xe9\": 0.25, \"timestamp\": 12.5}\n");
    size_t n;
    htr_record *recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 2);
    if (n == 2) {
        double v;
        CHECK(htr_record_metric(&recs[0], "accuracy", &v) && v == 0.9);
        CHECK_INT_EQ(recs[0].nignored, 1);
        CHECK(recs[0].trial && !strcmp(recs[0].trial, "t\xef\xbf\xbd"));
        CHECK(htr_record_metric(&recs[1], "caf\xef\xbf\xbd", &v) && v == 0.25);
        CHECK_MSG(!strcmp(recs[1].metrics_json, "{\"caf\xef\xbf\xbd\":0.25}"), "%s",
                  recs[1].metrics_json);
    }
    htr_records_free(recs, n);
    htr_stats st;
    htr_get_stats(r, &st);
    CHECK_INT_EQ(st.bad_lines, 0);
    htr_free(r);
}

/* A file larger than HTR_MAX_READ is read from its end, starting at a whole line. */
static void test_huge_file_reads_tail(void) {
    char path[PATH_LEN];
    test_file(path, "huge.metrics");
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    /* Lines of one length L, so that exactly HTR_MAX_READ / L of them are whole in
     * the last HTR_MAX_READ bytes. */
    long bytes = 0, L = 0;
    int i = 0;
    while (bytes <= 3L * HTR_MAX_READ / 2) {
        int k = fprintf(f, "{\"global_step\": \"%07d\", \"loss\": \"%07d.25\", \"pad\": "
                        "\"xxxxxxxxxxxxxxxxxxxxxxxx\", \"timestamp\": %d}\n", i, i,
                        1000000 + i);
        CHECK(L == 0 || k == L);
        L = k;
        bytes += k;
        i++;
    }
    fclose(f);
    const int last = i - 1;
    htr_reader *r = htr_new(path);
    size_t n;
    htr_record *recs = poll_ok(r, &n);
    htr_stats st;
    htr_get_stats(r, &st);
    CHECK_INT_EQ(st.truncated, 1);
    CHECK_INT_EQ(st.line_too_long, 0); /* short lines: whole ones within the end */
    CHECK_INT_EQ(st.bad_lines, 0); /* the cut-off first line is not taken for garbage */
    CHECK_MSG(n == (size_t)(HTR_MAX_READ / L), "%zu records, want %ld", n, HTR_MAX_READ / L);
    if (n > 0) {
        CHECK_INT_EQ(recs[n - 1].step, last);
        int gaps = 0;
        for (size_t k = 1; k < n; k++) gaps += recs[k].step != recs[k - 1].step + 1;
        CHECK_INT_EQ(gaps, 0);
    }
    htr_records_free(recs, n);
    /* Appending one more: just it. */
    put_text(path, "a", "{\"global_step\": \"999999\"}\n");
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 1);
    if (n == 1) CHECK_INT_EQ(recs[0].step, 999999);
    htr_records_free(recs, n);
    /* Shrunk under the limit: read whole again, nothing new. */
    put_text(path, "w", "{\"global_step\": \"999999\"}\n");
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 0);
    htr_records_free(recs, n);
    htr_get_stats(r, &st);
    CHECK_INT_EQ(st.truncated, 0);
    /* One record longer than the end read: no record, and the stats say why. */
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"global_step\": \"1\", \"pad\": \"", f);
        for (long k = 0; k < 3L * HTR_MAX_READ / 2; k++) fputc('x', f);
        fputs("\", \"loss\": \"0.5\"}\n", f);
        fclose(f);
    }
    recs = poll_ok(r, &n);
    CHECK_INT_EQ(n, 0);
    htr_records_free(recs, n);
    htr_get_stats(r, &st);
    CHECK_INT_EQ(st.truncated, 1);
    CHECK_INT_EQ(st.line_too_long, 1);
    htr_free(r);
}

/* A child process rewrites the file in place the way the Python library does
 * (truncate, then one write per line) while this process polls as fast as it can:
 * whatever states the reader catches the file in, no record comes twice, no line is
 * taken for garbage, and the final poll ends with the last record. */
static void test_concurrent_inplace_rewrites(void) {
    enum { REPORTS = 300 };
    char path[PATH_LEN];
    test_file(path, "race.metrics");
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid < 0) return;
    if (pid == 0) {
        for (int end = 1; end <= REPORTS; end++) {
            FILE *f = fopen(path, "w");
            if (!f) _exit(1);
            for (int i = end > 100 ? end - 100 : 0; i < end; i++) {
                char line[200];
                py_line(line, sizeof line, i, 1.0 / (i + 1), 1.6e9 + i);
                fputs(line, f);
                fflush(f); /* one write per line: readers see every prefix */
            }
            fclose(f);
        }
        _exit(0);
    }
    htr_reader *r = htr_new(path);
    int count[REPORTS] = {0};
    int others = 0, polls = 0, status = 0;
    for (;;) {
        int done = waitpid(pid, &status, WNOHANG) == pid;
        htr_record *recs = NULL;
        size_t n = 0;
        char err[512] = "";
        int rc = done ? htr_poll_final(r, &recs, &n, err, sizeof err)
                      : htr_poll(r, &recs, &n, err, sizeof err);
        CHECK_MSG(rc == 0, "poll: %s", err);
        for (size_t k = 0; k < n; k++) {
            if (recs[k].step >= 0 && recs[k].step < REPORTS)
                count[recs[k].step]++;
            else
                others++;
        }
        htr_records_free(recs, n);
        polls++;
        if (done) break;
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int twice = 0;
    for (int i = 0; i < REPORTS; i++) twice += count[i] > 1;
    CHECK_INT_EQ(twice, 0);
    CHECK_INT_EQ(others, 0);
    CHECK_INT_EQ(count[REPORTS - 1], 1);
    htr_stats st;
    htr_get_stats(r, &st);
    CHECK_INT_EQ(st.bad_lines, 0);
    CHECK_INT_EQ(st.polls, polls);
    htr_free(r);
}

static void test_unreadable(void) {
    char path[PATH_LEN];
    test_file(path, "a_folder");
    CHECK_INT_EQ(mkdir(path, 0755), 0);
    htr_reader *r = htr_new(path);
    htr_record *recs = (htr_record *)1;
    size_t n = 7;
    char err[PATH_LEN + 128] = "";
    CHECK_INT_EQ(htr_poll(r, &recs, &n, err, sizeof err), TN_EIO);
    CHECK(recs == NULL && n == 0);
    CHECK_STR_CONTAINS(err, path);
    CHECK_STR_CONTAINS(err, "not a regular file");
    /* A NULL error buffer is fine. */
    CHECK_INT_EQ(htr_poll(r, &recs, &n, NULL, 0), TN_EIO);
    htr_free(r);
    htr_free(NULL);
    htr_records_free(NULL, 0);
}

int main(void) {
    if (scratch_dir(g_root, "test_htreader") != 0) return 1;
    RUN(test_missing_file_then_created);
    RUN(test_writer_150_reports_poll_each);
    RUN(test_writer_window_slides_between_polls);
    RUN(test_python_rewrite_by_hand);
    RUN(test_rewrite_window_exact);
    RUN(test_appending_program);
    RUN(test_partial_last_line);
    RUN(test_garbage_lines_skipped);
    RUN(test_step_forms);
    RUN(test_metric_values);
    RUN(test_unrepresentable_bare_values);
    RUN(test_same_timestamp_different_content);
    RUN(test_appended_copies_without_timestamp);
    RUN(test_rewrite_read_half_written);
    RUN(test_invalid_utf8_in_line);
    RUN(test_huge_file_reads_tail);
    RUN(test_concurrent_inplace_rewrites);
    RUN(test_unreadable);
    rm_rf(g_root);
    return check_summary();
}
