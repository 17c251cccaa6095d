/*
 * test_hypertune.c — tests for common/hypertune.c, the writer of the
 * cloudml-hypertune metric file: where the file goes (explicit path, missing parent
 * folders, $CLOUD_ML_HP_METRIC_FILE, $CLOUD_ML_TRIAL_ID), what each line holds (parsed
 * back with jansson), one line per report in order, the cap of HT_MAX_RECORDS newest
 * records, keeping a restarted replica's records while dropping garbage lines,
 * reserved metric names, and the error for a location that cannot be written.
 *
 * Files go under $TN_TEST_TMP (or /tmp) in a folder named after the pid, removed at
 * the end. The environment variables are restored after each test that sets them.
 * Contract: common/hypertune.h; docs/metrics.md.
 */
#include "common/hypertune.h"

#include "common/status.h"
#include "tests/check.h"
#include "tests/testutil.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_LEN 4096
#define MAX_LINES 512

static char g_root[PATH_LEN]; /* this run's folder */

/* ---------------------------------------------------------------------------------
 * Helpers
 * --------------------------------------------------------------------------------- */

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        abort();
    }
}

/* The lines of a file (without newlines); *n gets their number, -1 when the file
 * cannot be read. Free with free_lines. */
static char **read_lines(const char *path, int *n) {
    *n = -1;
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char **lines = calloc(MAX_LINES, sizeof *lines);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    *n = 0;
    while ((len = getline(&line, &cap, f)) >= 0 && *n < MAX_LINES) {
        if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
        lines[(*n)++] = strdup(line);
    }
    free(line);
    fclose(f);
    return lines;
}

static void free_lines(char **lines, int n) {
    for (int i = 0; i < n; i++) free(lines[i]);
    free(lines);
}

/* Files in dir whose names contain part. */
static int count_names(const char *dir, const char *part) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) n += strstr(de->d_name, part) != NULL;
    closedir(d);
    return n;
}

/* The string member key of obj, or NULL. */
static const char *str_member(json_t *obj, const char *key) {
    return json_string_value(json_object_get(obj, key));
}

/* global_step of a record line, parsed from its string; -1 on any problem. */
static long long step_of(const char *line) {
    json_t *obj = json_loads(line, 0, NULL);
    const char *s = str_member(obj, "global_step");
    long long step = -1;
    if (s) {
        char *end;
        step = strtoll(s, &end, 10);
        if (end == s || *end) step = -1;
    }
    json_decref(obj);
    return step;
}

/* Opens a writer on path, reports step with one metric, frees; returns the status. */
static int report_once(const char *path, int64_t step, double value) {
    ht_writer *w = NULL;
    char err[512] = "";
    int rc = ht_writer_open(path, "1", &w, err, sizeof err);
    if (rc == 0) {
        ht_metric m = {"loss", value};
        rc = ht_report(w, step, &m, 1, NULL, 1.0e9 + (double)step, err, sizeof err);
    }
    if (rc) fprintf(stderr, "  report_once(%s): %s\n", path, err);
    ht_writer_free(w);
    return rc;
}

/* ---------------------------------------------------------------------------------
 * Where the file goes
 * --------------------------------------------------------------------------------- */

static void test_explicit_path_creates_parents(void) {
    char dir[PATH_LEN], path[PATH_LEN];
    fmt_path(dir, "%s/explicit/a/b/c", g_root);
    fmt_path(path, "%s/out.metrics", dir);
    CHECK(!exists(dir));
    ht_writer *w = NULL;
    char err[512] = "";
    int rc = ht_writer_open(path, "3", &w, err, sizeof err);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, err);
    if (rc) return;
    CHECK(is_dir(dir));
    CHECK(!strcmp(ht_writer_path(w), path));
    ht_metric m = {"accuracy", 0.5};
    rc = ht_report(w, 1, &m, 1, NULL, 1.0, err, sizeof err);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, err);
    CHECK(exists(path));
    /* The temporary file was renamed into place, not left behind. */
    CHECK_INT_EQ(count_names(dir, ".tmp"), 0);
    CHECK_INT_EQ(count_names(dir, "out.metrics"), 1);
    ht_writer_free(w);
}

static void test_env_path_and_trial(void) {
    char path[PATH_LEN];
    fmt_path(path, "%s/env/deep/hp.metrics", g_root);
    saved_env e1 = env_set("CLOUD_ML_HP_METRIC_FILE", path);
    saved_env e2 = env_set("CLOUD_ML_TRIAL_ID", "17");

    ht_writer *w = NULL;
    char err[512] = "";
    int rc = ht_writer_open(NULL, NULL, &w, err, sizeof err);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, err);
    if (rc == 0) {
        CHECK(!strcmp(ht_writer_path(w), path));
        ht_metric m = {"accuracy", 0.25};
        CHECK_INT_EQ(ht_report(w, 5, &m, 1, "", 2.0, err, sizeof err), 0);
        int n;
        char **lines = read_lines(path, &n);
        CHECK_INT_EQ(n, 1);
        if (n == 1) {
            json_t *obj = json_loads(lines[0], 0, NULL);
            const char *trial = str_member(obj, "trial");
            CHECK_MSG(trial && !strcmp(trial, "17"), "trial '%s'", trial ? trial : "(none)");
            json_decref(obj);
        }
        free_lines(lines, n);
    }
    ht_writer_free(w);

    /* An explicit trial wins over the environment. */
    char path2[PATH_LEN];
    fmt_path(path2, "%s/env/explicit_trial.metrics", g_root);
    w = NULL;
    rc = ht_writer_open(path2, "abc", &w, err, sizeof err);
    CHECK_INT_EQ(rc, 0);
    if (rc == 0) {
        CHECK(!strcmp(ht_writer_path(w), path2));
        ht_metric m = {"accuracy", 0.25};
        CHECK_INT_EQ(ht_report(w, 5, &m, 1, NULL, 2.0, err, sizeof err), 0);
        int n;
        char **lines = read_lines(path2, &n);
        CHECK_INT_EQ(n, 1);
        if (n == 1) {
            json_t *obj = json_loads(lines[0], 0, NULL);
            const char *trial = str_member(obj, "trial");
            CHECK(trial && !strcmp(trial, "abc"));
            json_decref(obj);
        }
        free_lines(lines, n);
    }
    ht_writer_free(w);

    /* No trial anywhere: "". */
    env_restore(&e2);
    saved_env e3 = env_set("CLOUD_ML_TRIAL_ID", NULL);
    char path3[PATH_LEN];
    fmt_path(path3, "%s/env/no_trial.metrics", g_root);
    w = NULL;
    rc = ht_writer_open(path3, NULL, &w, err, sizeof err);
    CHECK_INT_EQ(rc, 0);
    if (rc == 0) {
        ht_metric m = {"accuracy", 0.25};
        CHECK_INT_EQ(ht_report(w, 5, &m, 1, NULL, 2.0, err, sizeof err), 0);
        int n;
        char **lines = read_lines(path3, &n);
        CHECK_INT_EQ(n, 1);
        if (n == 1) {
            json_t *obj = json_loads(lines[0], 0, NULL);
            const char *trial = str_member(obj, "trial");
            CHECK(trial && !strcmp(trial, ""));
            json_decref(obj);
        }
        free_lines(lines, n);
    }
    ht_writer_free(w);
    env_restore(&e3);
    env_restore(&e1);
}

/* ---------------------------------------------------------------------------------
 * What a record holds
 * --------------------------------------------------------------------------------- */

static void test_record_fields(void) {
    char path[PATH_LEN];
    fmt_path(path, "%s/fields/out.metrics", g_root);
    ht_writer *w = NULL;
    char err[512] = "";
    int rc = ht_writer_open(path, "3", &w, err, sizeof err);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, err);
    if (rc) return;
    const ht_metric metrics[] = {
        {"accuracy", 0.87}, {"loss", 1e-05},       {"third", 1.0 / 3.0},
        {"neg", -1234.5},   {"big", 6.02214076e23}, {"zero", 0.0},
    };
    const size_t nm = sizeof metrics / sizeof metrics[0];
    const double ts = 1525851440.12;
    rc = ht_report(w, 1000, metrics, nm, "gs://bucket/ckpt-1000", ts, err, sizeof err);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, err);
    rc = ht_report(w, INT64_C(123456789012), metrics, 1, NULL, ts + 1.0, err, sizeof err);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, err);
    ht_writer_free(w);

    int n;
    char **lines = read_lines(path, &n);
    CHECK_INT_EQ(n, 2);
    if (n != 2) {
        free_lines(lines, n);
        return;
    }
    json_error_t jerr;
    json_t *obj = json_loads(lines[0], 0, &jerr);
    CHECK_MSG(json_is_object(obj), "line 1 is not a JSON object: %s (%s)", lines[0], jerr.text);
    CHECK(strchr(lines[0], '\n') == NULL);

    const char *cp = str_member(obj, "checkpoint_path");
    CHECK(cp && !strcmp(cp, "gs://bucket/ckpt-1000"));
    CHECK_MSG(json_is_string(json_object_get(obj, "global_step")), "global_step not a string");
    const char *gs = str_member(obj, "global_step");
    CHECK(gs && !strcmp(gs, "1000"));
    for (size_t i = 0; i < nm; i++) {
        json_t *v = json_object_get(obj, metrics[i].name);
        CHECK_MSG(json_is_string(v), "metric %s is not a string", metrics[i].name);
        const char *s = json_string_value(v);
        if (!s) continue;
        char *end;
        double back = strtod(s, &end);
        CHECK_MSG(end != s && *end == '\0' && back == metrics[i].value,
                  "metric %s: '%s' does not read back as %.17g", metrics[i].name, s,
                  metrics[i].value);
    }
    json_t *t = json_object_get(obj, "timestamp");
    CHECK_MSG(json_is_number(t), "timestamp is not a number");
    CHECK_NEAR(json_number_value(t), ts, 1e-6, 0);
    const char *trial = str_member(obj, "trial");
    CHECK(trial && !strcmp(trial, "3"));
    /* Exactly these keys: 4 reserved + the metrics. */
    CHECK_INT_EQ(json_object_size(obj), 4 + nm);
    json_decref(obj);

    obj = json_loads(lines[1], 0, NULL);
    CHECK(json_is_object(obj));
    cp = str_member(obj, "checkpoint_path");
    CHECK(cp && !strcmp(cp, ""));
    gs = str_member(obj, "global_step");
    CHECK(gs && !strcmp(gs, "123456789012"));
    CHECK_NEAR(json_number_value(json_object_get(obj, "timestamp")), ts + 1.0, 1e-6, 0);
    CHECK_INT_EQ(json_object_size(obj), 5);
    json_decref(obj);
    free_lines(lines, n);
}

static void test_one_line_per_report_in_order(void) {
    char path[PATH_LEN];
    fmt_path(path, "%s/order/out.metrics", g_root);
    ht_writer *w = NULL;
    char err[512] = "";
    CHECK_INT_EQ(ht_writer_open(path, "1", &w, err, sizeof err), 0);
    if (!w) return;
    for (int i = 1; i <= 5; i++) {
        ht_metric m = {"loss", 1.0 / i};
        CHECK_INT_EQ(ht_report(w, i * 10, &m, 1, NULL, 100.0 + i, err, sizeof err), 0);
        int n;
        char **lines = read_lines(path, &n);
        CHECK_MSG(n == i, "after %d reports: %d lines", i, n);
        for (int j = 0; j < n; j++)
            CHECK_MSG(step_of(lines[j]) == (j + 1) * 10, "line %d: %s", j, lines[j]);
        free_lines(lines, n);
    }
    ht_writer_free(w);
}

static void test_keeps_last_100(void) {
    char path[PATH_LEN];
    fmt_path(path, "%s/cap/out.metrics", g_root);
    ht_writer *w = NULL;
    char err[512] = "";
    CHECK_INT_EQ(ht_writer_open(path, "1", &w, err, sizeof err), 0);
    if (!w) return;
    for (int i = 0; i < 150; i++) {
        ht_metric m = {"loss", (double)i};
        int rc = ht_report(w, i, &m, 1, NULL, 1000.0 + i, err, sizeof err);
        if (rc) {
            CHECK_MSG(rc == 0, "report %d: %s", i, err);
            break;
        }
    }
    ht_writer_free(w);
    int n;
    char **lines = read_lines(path, &n);
    CHECK_INT_EQ(n, HT_MAX_RECORDS);
    int wrong = 0;
    for (int j = 0; j < n; j++) {
        if (step_of(lines[j]) != 50 + j && wrong++ < 3)
            fprintf(stderr, "  line %d: %s\n", j, lines[j]);
    }
    CHECK_INT_EQ(wrong, 0);
    free_lines(lines, n);

    /* A writer reopened on the full file goes on dropping the oldest. */
    CHECK_INT_EQ(report_once(path, 150, 1.0), 0);
    lines = read_lines(path, &n);
    CHECK_INT_EQ(n, HT_MAX_RECORDS);
    if (n == HT_MAX_RECORDS) {
        CHECK_INT_EQ(step_of(lines[0]), 51);
        CHECK_INT_EQ(step_of(lines[n - 1]), 150);
    }
    free_lines(lines, n);
}

/* ---------------------------------------------------------------------------------
 * A restarted replica
 * --------------------------------------------------------------------------------- */

static void test_existing_file_kept_garbage_skipped(void) {
    char dir[PATH_LEN], path[PATH_LEN];
    fmt_path(dir, "%s/existing", g_root);
    fmt_path(path, "%s/out.metrics", dir);
    CHECK_INT_EQ(mkdir(dir, 0755), 0);
    write_text(path,
               "{\"checkpoint_path\": \"\", \"global_step\": \"1\", \"loss\": \"0.5\", "
               "\"timestamp\": 1.0, \"trial\": \"1\"}\n"
               "this is not json\n"
               "\n"
               "[1, 2, 3]\n"
               "{\"global_step\": \"2\", \"loss\": \"0.4\"}\n"
               "{\"global_step\": \"x\", \"loss\":\n"
               "42\n"
               "\"a string\"\n"
               "{\"global_step\": \"3\"} trailing\n"
               "{\"global_step\": \"4\", \"loss\": \"0.3\"}\r\n"
               "{\"global_step\": \"5\"}"); /* no final newline */
    CHECK_INT_EQ(report_once(path, 6, 0.2), 0);
    int n;
    char **lines = read_lines(path, &n);
    CHECK_INT_EQ(n, 5);
    const long long want[] = {1, 2, 4, 5, 6};
    for (int j = 0; j < n && j < 5; j++) {
        CHECK_MSG(step_of(lines[j]) == want[j], "line %d: %s", j, lines[j]);
        CHECK_MSG(!strchr(lines[j], '\r'), "line %d keeps a carriage return", j);
        json_t *obj = json_loads(lines[j], 0, NULL);
        CHECK_MSG(json_is_object(obj), "line %d not an object: %s", j, lines[j]);
        json_decref(obj);
    }
    free_lines(lines, n);

    /* An existing file with more than HT_MAX_RECORDS records: the newest are kept. */
    char big[PATH_LEN];
    fmt_path(big, "%s/big.metrics", dir);
    FILE *f = fopen(big, "w");
    CHECK(f != NULL);
    if (!f) return;
    for (int i = 0; i < 120; i++) fprintf(f, "{\"global_step\": \"%d\"}\n", i);
    fclose(f);
    CHECK_INT_EQ(report_once(big, 120, 0.1), 0);
    lines = read_lines(big, &n);
    CHECK_INT_EQ(n, HT_MAX_RECORDS);
    if (n == HT_MAX_RECORDS) {
        CHECK_INT_EQ(step_of(lines[0]), 21);
        CHECK_INT_EQ(step_of(lines[n - 1]), 120);
    }
    free_lines(lines, n);
}

/* ---------------------------------------------------------------------------------
 * Errors
 * --------------------------------------------------------------------------------- */

static void test_reserved_names_rejected(void) {
    char path[PATH_LEN];
    fmt_path(path, "%s/reserved/out.metrics", g_root);
    ht_writer *w = NULL;
    char err[512] = "";
    CHECK_INT_EQ(ht_writer_open(path, "1", &w, err, sizeof err), 0);
    if (!w) return;
    ht_metric ok = {"accuracy", 0.9};
    CHECK_INT_EQ(ht_report(w, 1, &ok, 1, NULL, 1.0, err, sizeof err), 0);
    const char *reserved[] = {"checkpoint_path", "global_step", "timestamp", "trial"};
    for (size_t i = 0; i < 4; i++) {
        ht_metric ms[2] = {{"accuracy", 0.9}, {reserved[i], 1.0}};
        err[0] = '\0';
        int rc = ht_report(w, 2, ms, 2, NULL, 2.0, err, sizeof err);
        CHECK_MSG(rc == TN_EINVAL, "%s: rc %d", reserved[i], rc);
        CHECK_STR_CONTAINS(err, reserved[i]);
        CHECK_STR_CONTAINS(err, "reserved");
    }
    /* Nothing was recorded for the rejected reports, now or at the next report. */
    int n;
    char **lines = read_lines(path, &n);
    CHECK_INT_EQ(n, 1);
    free_lines(lines, n);
    CHECK_INT_EQ(ht_report(w, 3, &ok, 1, NULL, 3.0, err, sizeof err), 0);
    lines = read_lines(path, &n);
    CHECK_INT_EQ(n, 2);
    if (n == 2) CHECK_INT_EQ(step_of(lines[1]), 3);
    free_lines(lines, n);
    ht_writer_free(w);
}

static void test_non_finite_timestamp_rejected(void) {
    char path[PATH_LEN], err[512] = "";
    fmt_path(path, "%s/nan_time/out.metrics", g_root);
    ht_writer *w = NULL;
    CHECK_INT_EQ(ht_writer_open(path, "1", &w, err, sizeof err), 0);
    if (!w) return;
    ht_metric m = {"accuracy", 0.5};
    CHECK_INT_EQ(ht_report(w, 1, &m, 1, NULL, NAN, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "timestamp");
    CHECK_INT_EQ(ht_report(w, 1, &m, 1, NULL, INFINITY, err, sizeof err), TN_EINVAL);
    int n;
    char **lines = read_lines(path, &n);
    CHECK(n <= 0); /* nothing written (no file, or an empty one) */
    free_lines(lines, n);
    ht_writer_free(w);
}

/* Opens a writer on path and reports once; the first failure's status and message
 * go to *rc and err. */
static void open_and_report(const char *path, int *rc, char *err, size_t errlen) {
    ht_writer *w = NULL;
    err[0] = '\0';
    *rc = ht_writer_open(path, "1", &w, err, errlen);
    if (*rc == 0) {
        CHECK(w != NULL);
        ht_metric m = {"loss", 1.0};
        *rc = ht_report(w, 1, &m, 1, NULL, 1.0, err, errlen);
    } else {
        CHECK(w == NULL);
    }
    ht_writer_free(w);
}

static void test_unwritable_location(void) {
    char file[PATH_LEN], path[PATH_LEN], err[PATH_LEN + 256];
    fmt_path(file, "%s/plain_file", g_root);
    write_text(file, "I am a regular file\n");
    int rc;

    /* The metric file's folder is a regular file: refused at open, naming it. */
    fmt_path(path, "%s/out.metrics", file);
    ht_writer *w = NULL;
    err[0] = '\0';
    CHECK_INT_EQ(ht_writer_open(path, "1", &w, err, sizeof err), TN_EIO);
    CHECK(w == NULL);
    CHECK_STR_CONTAINS(err, file);
    CHECK_STR_CONTAINS(err, "a file is in the way");
    ht_writer_free(w);

    /* A folder on the way is a regular file. */
    fmt_path(path, "%s/sub/deeper/out.metrics", file);
    open_and_report(path, &rc, err, sizeof err);
    CHECK_MSG(rc < 0, "rc %d", rc);
    CHECK_STR_CONTAINS(err, file);

    /* The metric file itself is a folder. */
    fmt_path(path, "%s/is_a_dir", g_root);
    CHECK_INT_EQ(mkdir(path, 0755), 0);
    open_and_report(path, &rc, err, sizeof err);
    CHECK_MSG(rc < 0, "rc %d", rc);
    CHECK_STR_CONTAINS(err, path);
    CHECK_INT_EQ(count_names(g_root, "is_a_dir.tmp"), 0);

    /* The metric file is a symbolic link: the records go to its target, and the link
     * stays a link (the rewrite's rename would have replaced it with a file). */
    char target[PATH_LEN], link[PATH_LEN];
    fmt_path(target, "%s/real.metrics", g_root);
    fmt_path(link, "%s/link.metrics", g_root);
    write_text(target, "");
    CHECK_INT_EQ(symlink(target, link), 0);
    open_and_report(link, &rc, err, sizeof err);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, err);
    struct stat lsb;
    CHECK(lstat(link, &lsb) == 0 && S_ISLNK(lsb.st_mode));
    int nt;
    char **tl = read_lines(target, &nt);
    CHECK_INT_EQ(nt, 1);
    if (nt == 1) CHECK_STR_CONTAINS(tl[0], "\"loss\"");
    free_lines(tl, nt);

    /* The metric file is a FIFO: refused at open, never blocking on it (the open of a
     * FIFO for reading waits for a writer), and left as it is. The test's own alarm
     * fails it should the open block. */
    fmt_path(path, "%s/metrics.fifo", g_root);
    CHECK_INT_EQ(mkfifo(path, 0644), 0);
    alarm(20);
    w = NULL;
    err[0] = '\0';
    CHECK_INT_EQ(ht_writer_open(path, "1", &w, err, sizeof err), TN_EIO);
    alarm(0);
    CHECK(w == NULL);
    CHECK_STR_CONTAINS(err, "is a FIFO, not a regular file");
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && S_ISFIFO(sb.st_mode));

    /* The regular file was not touched. */
    int n;
    char **lines = read_lines(file, &n);
    CHECK_INT_EQ(n, 1);
    if (n == 1) CHECK(!strcmp(lines[0], "I am a regular file"));
    free_lines(lines, n);
}

int main(void) {
    if (scratch_dir(g_root, "test_hypertune") != 0) return 1;
    RUN(test_explicit_path_creates_parents);
    RUN(test_env_path_and_trial);
    RUN(test_record_fields);
    RUN(test_one_line_per_report_in_order);
    RUN(test_keeps_last_100);
    RUN(test_existing_file_kept_garbage_skipped);
    RUN(test_reserved_names_rejected);
    RUN(test_unwritable_location);
    RUN(test_non_finite_timestamp_rejected);
    rm_rf(g_root);
    return check_summary();
}
