/*
 * test_store.c — tests for the SQLite store (tuner/store.h, docs/store.md).
 *
 * Each test works on its own file in a folder made fresh for this run under
 * $TN_TEST_TMP (or /tmp) and removed at the end. Covered: studies, trials (numbering,
 * every field round trip, counts), measurements (duplicates, order, attempts), events,
 * st_transaction (commit, rollback, nesting), persistence across reopen, the store's
 * identity (st_store_id), the migration of a version 3 file (measurements get their
 * attempt column), refusal of a newer schema, of a file that is not a database and of
 * a missing folder, trial numbers handed out by 4 processes at once, several processes
 * opening a new file at once, and 10,000 trials in one transaction.
 * The raw sqlite3 API is used only to look at or tamper with a file from outside.
 */
#include "tuner/store.h"

#include "common/status.h"

#include "tests/check.h"
#include "tests/tuner/oldstore.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[512]; /* this run's folder */

/* The path of a file NAME in this run's folder, into buf. */
static void tmp_path(char *buf, size_t len, const char *name) {
    snprintf(buf, len, "%s/%s", tmpdir, name);
}

/* Opens a fresh store NAME in the run's folder; NULL (and a recorded failure) if not. */
static st_store *open_fresh(const char *name, char *path, size_t pathlen) {
    tmp_path(path, pathlen, name);
    char err[512] = "";
    st_store *s = NULL;
    int rc = st_open(path, &s, err, sizeof err);
    CHECK_MSG(rc == 0 && s != NULL, "st_open(%s) = %d: %s", path, rc, err);
    return rc == 0 ? s : NULL;
}

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs one SQL statement on the file with the raw sqlite3 API (not the store). */
static int raw_exec(const char *path, const char *sql) {
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK) fprintf(stderr, "raw_exec(%s): %s\n", sql, sqlite3_errmsg(db));
    sqlite3_close(db);
    return rc;
}

/* ---------------------------------------------------------------------------------
 * Opening and the schema
 * --------------------------------------------------------------------------------- */

static void test_open_creates_schema(void) {
    char path[600];
    st_store *s = open_fresh("schema.db", path, sizeof path);
    if (!s) return;
    st_close(s);
    char buf[256];
    raw_text(path, "SELECT value FROM meta WHERE key = 'schema_version'", buf, sizeof buf);
    CHECK(strcmp(buf, "7") == 0);
    raw_text(path, "PRAGMA journal_mode", buf, sizeof buf);
    CHECK(strcmp(buf, "wal") == 0);
    static const char *const objects[] = {"studies", "trials", "measurements", "events",
                                          "trials_by_state", "events_by_trial",
                                          "trials_by_change", "measurements_by_seq",
                                          "measurements_by_step"};
    for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM sqlite_master WHERE name = '%s'",
                 objects[i]);
        raw_text(path, sql, buf, sizeof buf);
        CHECK_MSG(strcmp(buf, "1") == 0, "%s missing from the schema", objects[i]);
    }
    /* The trial-by-state count must use the index, not scan the table. */
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char plan[1024] = "";
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db,
                           "EXPLAIN QUERY PLAN SELECT state, COUNT(*) FROM trials "
                           "WHERE study_id = 1 GROUP BY state",
                           -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            size_t used = strlen(plan);
            snprintf(plan + used, sizeof plan - used, "%s;",
                     (const char *)sqlite3_column_text(st, 3));
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    CHECK_STR_CONTAINS(plan, "trials_by_state");
}

static void test_open_newer_schema_refused(void) {
    char path[600], err[512] = "";
    st_store *s = open_fresh("newer.db", path, sizeof path);
    if (!s) return;
    st_close(s);
    CHECK(raw_exec(path, "UPDATE meta SET value = '99' WHERE key = 'schema_version'") ==
          SQLITE_OK);
    s = NULL;
    int rc = st_open(path, &s, err, sizeof err);
    CHECK_INT_EQ(rc, TN_EVERSION);
    CHECK(s == NULL);
    CHECK_STR_CONTAINS(err, path);
    CHECK_STR_CONTAINS(err, "newer");
    CHECK_STR_CONTAINS(err, "schema 99");
    CHECK_STR_CONTAINS(err, "reads up to 7");
    st_close(s);
}

static void test_open_garbage_file(void) {
    char path[600], err[512] = "";
    tmp_path(path, sizeof path, "garbage.db");
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    for (int i = 0; i < 4096; i++) fputc("this is not a database, only text\n"[i % 34], f);
    fclose(f);
    st_store *s = NULL;
    int rc = st_open(path, &s, err, sizeof err);
    CHECK_INT_EQ(rc, TN_EFORMAT);
    CHECK(s == NULL);
    CHECK_STR_CONTAINS(err, path);
    CHECK_STR_CONTAINS(err, "not a tuner store");
    CHECK_STR_CONTAINS(err, "not a database");
    st_close(s);
}

static void test_open_foreign_database(void) {
    char path[600], err[512] = "";
    tmp_path(path, sizeof path, "foreign.db");
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)", NULL,
                       NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    st_store *s = NULL;
    int rc = st_open(path, &s, err, sizeof err);
    CHECK_INT_EQ(rc, TN_EFORMAT);
    CHECK_STR_CONTAINS(err, "not a tuner store");
    st_close(s);
    /* ... and was left alone: no tuner tables were added. */
    char buf[64];
    raw_text(path, "SELECT count(*) FROM sqlite_master", buf, sizeof buf);
    CHECK(strcmp(buf, "1") == 0);
}

static void test_open_missing_folder(void) {
    char path[600], err[512] = "";
    tmp_path(path, sizeof path, "no/such/folder/tuner.db");
    st_store *s = NULL;
    int rc = st_open(path, &s, err, sizeof err);
    CHECK_INT_EQ(rc, TN_ENOENT);
    CHECK(s == NULL);
    CHECK_STR_CONTAINS(err, path);
    CHECK_STR_CONTAINS(err, "no/such/folder");
    CHECK_STR_CONTAINS(err, "No such file or directory");
    /* A folder is not a store either. */
    err[0] = '\0';
    rc = st_open(tmpdir, &s, err, sizeof err);
    CHECK(rc < 0);
    CHECK_STR_CONTAINS(err, "is a folder");
    st_close(s);
    /* Nor a FIFO (SQLite said "disk I/O error (Illegal seek)"), for writers and readers;
     * opening it must not block either. */
    tmp_path(path, sizeof path, "fifo.db");
    CHECK(mkfifo(path, 0600) == 0);
    s = NULL;
    err[0] = '\0';
    CHECK_INT_EQ(st_open(path, &s, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "is a FIFO, not a tuner store");
    CHECK(s == NULL);
    err[0] = '\0';
    CHECK_INT_EQ(st_open_read(path, &s, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "is a FIFO, not a tuner store");
    CHECK(s == NULL);
    unlink(path);
}

/* ---------------------------------------------------------------------------------
 * Studies
 * --------------------------------------------------------------------------------- */

static void test_study_create_get_list(void) {
    int found;
    char path[600], err[512] = "";
    st_store *s = open_fresh("studies.db", path, sizeof path);
    if (!s) return;
    double before = wall_now();
    int64_t a = 0, b = 0;
    CHECK_INT_EQ(st_study_create(s, "alpha", "{\"jobId\": \"alpha\"}", 42, ST_STUDY_CREATED, &a,
                                 err, sizeof err), 0);
    CHECK_INT_EQ(st_study_create(s, "beta", "{\"jobId\": \"beta\"}", -7, ST_STUDY_RUNNING, &b,
                                 err, sizeof err), 0);
    double after = wall_now();
    CHECK(a > 0 && b > 0 && a != b);

    st_study st;
    CHECK_INT_EQ(st_study_get(s, "alpha", &st, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK_INT_EQ(st.id, a);
    CHECK(st.name && strcmp(st.name, "alpha") == 0);
    CHECK(st.spec && strcmp(st.spec, "{\"jobId\": \"alpha\"}") == 0);
    CHECK(st.state == ST_STUDY_CREATED);
    CHECK_INT_EQ(st.seed, 42);
    CHECK(st.created >= before - 1e-3 && st.created <= after + 1e-3);
    CHECK(st.updated == st.created);
    CHECK(st.error == NULL);
    st_study_clear(&st);
    CHECK(st.name == NULL); /* cleared */

    CHECK_INT_EQ(st_study_get(s, "gamma", &st, &found, err, sizeof err), 0);
    CHECK(!found);
    CHECK(st.name == NULL);
    st_study_clear(&st);

    st_study *list = NULL;
    size_t n = 0;
    CHECK_INT_EQ(st_study_list(s, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 2);
    if (n == 2) {
        CHECK(strcmp(list[0].name, "alpha") == 0 && list[0].id == a);
        CHECK(strcmp(list[1].name, "beta") == 0 && list[1].id == b);
        CHECK_INT_EQ(list[1].seed, -7);
        CHECK(list[1].state == ST_STUDY_RUNNING);
    }
    st_studies_free(list, n);
    st_close(s);
}

static void test_study_list_empty(void) {
    char path[600], err[512] = "";
    st_store *s = open_fresh("empty.db", path, sizeof path);
    if (!s) return;
    st_study *list = (st_study *)&list; /* must be overwritten */
    size_t n = 99;
    CHECK_INT_EQ(st_study_list(s, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 0);
    st_studies_free(list, n);
    st_trial *trials = NULL;
    CHECK_INT_EQ(st_trial_list(s, 1, &trials, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 0);
    st_trials_free(trials, n);
    int64_t counts[6] = {5, 5, 5, 5, 5, 5};
    CHECK_INT_EQ(st_trial_counts(s, 1, counts, err, sizeof err), 0);
    for (int i = 0; i < 6; i++) CHECK_INT_EQ(counts[i], 0);
    st_close(s);
}

static void test_study_duplicate_name(void) {
    int found;
    char path[600], err[512] = "";
    st_store *s = open_fresh("dup.db", path, sizeof path);
    if (!s) return;
    int64_t id = 0, id2 = -5;
    CHECK_INT_EQ(st_study_create(s, "mnist", "{}", 1, ST_STUDY_CREATED, &id, err, sizeof err), 0);
    int rc = st_study_create(s, "mnist", "{\"other\": 1}", 2, ST_STUDY_CREATED, &id2, err,
                             sizeof err);
    CHECK_INT_EQ(rc, TN_EINVAL);
    CHECK(strcmp(err, "a study named mnist already exists") == 0);
    CHECK_INT_EQ(id2, -5); /* untouched on failure */
    st_study st;
    CHECK_INT_EQ(st_study_get(s, "mnist", &st, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(st.spec && strcmp(st.spec, "{}") == 0); /* the first one is untouched */
    CHECK_INT_EQ(st.seed, 1);
    st_study_clear(&st);
    /* The failed insert left no transaction open: a later write still works. */
    CHECK_INT_EQ(st_study_create(s, "mnist2", "{}", 1, ST_STUDY_CREATED, &id2, err, sizeof err),
                 0);
    st_close(s);
}

static void test_study_set_state(void) {
    int found;
    char path[600], err[512] = "";
    st_store *s = open_fresh("state.db", path, sizeof path);
    if (!s) return;
    int64_t id = 0;
    CHECK_INT_EQ(st_study_create(s, "s1", "{}", 3, ST_STUDY_CREATED, &id, err, sizeof err), 0);
    st_study st;
    CHECK_INT_EQ(st_study_get(s, "s1", &st, &found, err, sizeof err), 0);
    CHECK(found);
    double created = st.created;
    st_study_clear(&st);

    CHECK_INT_EQ(st_study_set_state(s, id, ST_STUDY_FAILED, "4 trials failed", err, sizeof err),
                 0);
    CHECK_INT_EQ(st_study_get(s, "s1", &st, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(st.state == ST_STUDY_FAILED);
    CHECK(st.error && strcmp(st.error, "4 trials failed") == 0);
    CHECK(st.created == created);
    CHECK(st.updated >= created);
    st_study_clear(&st);

    CHECK_INT_EQ(st_study_set_state(s, id, ST_STUDY_RUNNING, NULL, err, sizeof err), 0);
    CHECK_INT_EQ(st_study_get(s, "s1", &st, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(st.state == ST_STUDY_RUNNING);
    CHECK(st.error == NULL);
    st_study_clear(&st);

    CHECK_INT_EQ(st_study_set_state(s, id + 100, ST_STUDY_RUNNING, NULL, err, sizeof err),
                 TN_ENOENT);
    CHECK_STR_CONTAINS(err, "no study");
    st_close(s);
}

/* A run's start and end (st_study_set_run_state) keep a `tuner cancel` that came in
 * since the run read the study: a resume that set up for minutes does not set RUNNING
 * over it, nor does a run that ends between two of its looks set its own end; the
 * resume of a study that was CANCELLED when read, and a run's own CANCELLED, go
 * through. */
static void test_run_state_keeps_cancel(void) {
    char path[600], err[512] = "";
    st_store *s = open_fresh("runstate.db", path, sizeof path);
    if (!s) return;
    int64_t id = 0;
    st_study_state was, stored;
    int found;
    CHECK_INT_EQ(st_study_create(s, "r", "{}", 1, ST_STUDY_STOPPED, &id, err, sizeof err), 0);
    st_study st;
#define STATE_NOW(want)                                                          \
    do {                                                                         \
        CHECK_INT_EQ(st_study_get(s, "r", &st, &found, err, sizeof err), 0);     \
        CHECK_MSG(found && st.state == (want), "the study is %s, not %s",       \
                  st_study_state_name(st.state), st_study_state_name(want));     \
        st_study_clear(&st);                                                     \
    } while (0)

    /* read STOPPED, then cancelled while setting up: stays CANCELLED */
    CHECK_INT_EQ(st_study_cancel(s, id, &was, &found, err, sizeof err), 0);
    CHECK_INT_EQ(st_study_set_run_state(s, id, ST_STUDY_STOPPED, ST_STUDY_RUNNING, NULL,
                                        &stored, err, sizeof err),
                 0);
    CHECK(stored == ST_STUDY_CANCELLED);
    STATE_NOW(ST_STUDY_CANCELLED);
    /* read CANCELLED: the resume of a cancelled study runs */
    CHECK_INT_EQ(st_study_set_run_state(s, id, ST_STUDY_CANCELLED, ST_STUDY_RUNNING, NULL,
                                        &stored, err, sizeof err),
                 0);
    CHECK(stored == ST_STUDY_RUNNING);
    STATE_NOW(ST_STUDY_RUNNING);
    /* cancelled just before the run ends: SUCCEEDED, FAILED, STOPPED do not undo it */
    const st_study_state ends[] = {ST_STUDY_SUCCEEDED, ST_STUDY_FAILED, ST_STUDY_STOPPED};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        CHECK_INT_EQ(st_study_set_state(s, id, ST_STUDY_RUNNING, NULL, err, sizeof err), 0);
        CHECK_INT_EQ(st_study_cancel(s, id, &was, &found, err, sizeof err), 0);
        CHECK_INT_EQ(st_study_set_run_state(s, id, ST_STUDY_RUNNING, ends[i], "why", &stored,
                                            err, sizeof err),
                     0);
        CHECK(stored == ST_STUDY_CANCELLED);
        STATE_NOW(ST_STUDY_CANCELLED);
    }
    /* no cancel: the run's own states go through, its CANCELLED too */
    CHECK_INT_EQ(st_study_set_state(s, id, ST_STUDY_RUNNING, NULL, err, sizeof err), 0);
    CHECK_INT_EQ(st_study_set_run_state(s, id, ST_STUDY_RUNNING, ST_STUDY_SUCCEEDED, NULL,
                                        &stored, err, sizeof err),
                 0);
    CHECK(stored == ST_STUDY_SUCCEEDED);
    STATE_NOW(ST_STUDY_SUCCEEDED);
    CHECK_INT_EQ(st_study_set_run_state(s, id, ST_STUDY_RUNNING, ST_STUDY_CANCELLED, NULL,
                                        &stored, err, sizeof err),
                 0);
    CHECK(stored == ST_STUDY_CANCELLED);
    STATE_NOW(ST_STUDY_CANCELLED);
#undef STATE_NOW
    CHECK_INT_EQ(st_study_set_run_state(s, id + 100, ST_STUDY_RUNNING, ST_STUDY_RUNNING, NULL,
                                        &stored, err, sizeof err),
                 TN_ENOENT);
    CHECK_STR_CONTAINS(err, "no study");
    st_close(s);
}

/* Every state's name parses back to it; other names, other cases and NULL are none. */
static void test_state_names(void) {
    for (int i = 0; i < ST_STUDY_NSTATES; i++) {
        CHECK_INT_EQ(st_study_state_parse(st_study_state_name((st_study_state)i)), i);
        CHECK(st_study_state_names[i] == st_study_state_name((st_study_state)i));
    }
    for (int i = 0; i < ST_TRIAL_NSTATES; i++) {
        CHECK_INT_EQ(st_trial_state_parse(st_trial_state_name((st_trial_state)i)), i);
        CHECK(st_trial_state_names[i] == st_trial_state_name((st_trial_state)i));
    }
    CHECK(strcmp(st_study_state_name(ST_STUDY_CANCELLED), "CANCELLED") == 0);
    CHECK(strcmp(st_trial_state_name(ST_TRIAL_STOPPED), "STOPPED") == 0);
    CHECK_INT_EQ(st_study_state_parse("DONE"), -1);
    CHECK_INT_EQ(st_study_state_parse("created"), -1);
    CHECK_INT_EQ(st_study_state_parse("PENDING"), -1); /* a trial state only */
    CHECK_INT_EQ(st_trial_state_parse("CREATED"), -1); /* a study state only */
    CHECK_INT_EQ(st_trial_state_parse(""), -1);
    CHECK_INT_EQ(st_trial_state_parse(NULL), -1);
    CHECK(strcmp(st_trial_state_name(ST_TRIAL_NSTATES), "(no state)") == 0);
    CHECK(st_study_state_final(ST_STUDY_SUCCEEDED) && st_study_state_final(ST_STUDY_FAILED) &&
          st_study_state_final(ST_STUDY_CANCELLED) && !st_study_state_final(ST_STUDY_CREATED) &&
          !st_study_state_final(ST_STUDY_RUNNING) && !st_study_state_final(ST_STUDY_STOPPED));
    CHECK(!st_trial_state_final(ST_TRIAL_PENDING) && !st_trial_state_final(ST_TRIAL_RUNNING) &&
          st_trial_state_final(ST_TRIAL_SUCCEEDED) && st_trial_state_final(ST_TRIAL_FAILED) &&
          st_trial_state_final(ST_TRIAL_STOPPED) && st_trial_state_final(ST_TRIAL_CANCELLED));
}

/* A state the tuner never writes (the file changed by other means) is an error that
 * names the row, from every read of it, and never a made-up state. */
static void test_foreign_state_refused(void) {
    int found;
    char path[600], err[512] = "";
    st_store *s = open_fresh("foreign_state.db", path, sizeof path);
    if (!s) return;
    int64_t id = 0, num = 0;
    CHECK_INT_EQ(st_study_create(s, "f", "{}", 1, ST_STUDY_RUNNING, &id, err, sizeof err), 0);
    CHECK_INT_EQ(st_trial_create(s, id, "{}", ST_TRIAL_RUNNING, &num, err, sizeof err), 0);
    st_close(s);
    CHECK_INT_EQ(raw_exec(path, "UPDATE trials SET state = 'PAUSED'"), SQLITE_OK);
    s = NULL;
    CHECK_MSG(st_open(path, &s, err, sizeof err) == 0, "%s", err);
    if (!s) return;
    st_trial t;
    CHECK_INT_EQ(st_trial_get(s, id, num, &t, &found, err, sizeof err), TN_EFORMAT);
    CHECK_STR_CONTAINS(err, "trial 1 of study");
    CHECK_STR_CONTAINS(err, "'PAUSED'");
    st_trial *list = NULL;
    size_t n = 0;
    err[0] = '\0';
    CHECK_INT_EQ(st_trial_list(s, id, &list, &n, err, sizeof err), TN_EFORMAT);
    CHECK(list == NULL && n == 0);
    CHECK_STR_CONTAINS(err, "never writes");
    int64_t counts[ST_TRIAL_NSTATES];
    CHECK_INT_EQ(st_trial_counts(s, id, counts, err, sizeof err), 0); /* counted as none */
    CHECK_INT_EQ(counts[ST_TRIAL_RUNNING], 0);
    st_close(s);
    CHECK_INT_EQ(raw_exec(path, "UPDATE studies SET state = 'ARCHIVED'"), SQLITE_OK);
    s = NULL;
    CHECK_MSG(st_open(path, &s, err, sizeof err) == 0, "%s", err);
    if (!s) return;
    st_study st;
    CHECK_INT_EQ(st_study_get(s, "f", &st, &found, err, sizeof err), TN_EFORMAT);
    CHECK_STR_CONTAINS(err, "study f has the state 'ARCHIVED'");
    st_close(s);
}

/* ---------------------------------------------------------------------------------
 * Trials
 * --------------------------------------------------------------------------------- */

static void test_trial_numbering(void) {
    int found;
    char path[600], err[512] = "";
    st_store *s = open_fresh("numbering.db", path, sizeof path);
    if (!s) return;
    int64_t a = 0, b = 0;
    CHECK_INT_EQ(st_study_create(s, "a", "{}", 1, ST_STUDY_RUNNING, &a, err, sizeof err), 0);
    CHECK_INT_EQ(st_study_create(s, "b", "{}", 1, ST_STUDY_RUNNING, &b, err, sizeof err), 0);
    for (int64_t i = 1; i <= 5; i++) {
        int64_t num = 0;
        CHECK_INT_EQ(st_trial_create(s, a, "{\"x\": 1}", ST_TRIAL_PENDING, &num, err, sizeof err),
                     0);
        CHECK_INT_EQ(num, i);
    }
    int64_t num = 0;
    double before = wall_now();
    CHECK_INT_EQ(st_trial_create(s, b, "{\"y\": 2}", ST_TRIAL_RUNNING, &num, err, sizeof err), 0);
    CHECK_INT_EQ(num, 1); /* each study counts from 1 */

    st_trial t;
    CHECK_INT_EQ(st_trial_get(s, b, 1, &t, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(t.state == ST_TRIAL_RUNNING);
    CHECK(t.created >= before - 1e-3);
    CHECK(t.started == t.created); /* RUNNING: started with it */
    CHECK(t.finished == 0);
    CHECK(!t.has_objective);
    CHECK_INT_EQ(t.attempts, 0);
    CHECK_INT_EQ(t.restarts, 0);
    st_trial_clear(&t);
    CHECK_INT_EQ(st_trial_get(s, a, 3, &t, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(t.state == ST_TRIAL_PENDING);
    CHECK(t.created > 0 && t.started == 0); /* PENDING: not started */
    CHECK(strcmp(t.params, "{\"x\": 1}") == 0);
    st_trial_clear(&t);

    CHECK_INT_EQ(st_trial_get(s, a, 6, &t, &found, err, sizeof err), 0);
    CHECK(!found);
    CHECK_INT_EQ(st_trial_get(s, b + 50, 1, &t, &found, err, sizeof err), 0);
    CHECK(!found);
    st_trial_clear(&t);

    int rc = st_trial_create(s, b + 50, "{}", ST_TRIAL_PENDING, &num, err, sizeof err);
    CHECK_INT_EQ(rc, TN_ENOENT);
    CHECK_STR_CONTAINS(err, "no study");
    st_close(s);
}

static void test_trial_update_round_trip(void) {
    int found;
    char path[600], err[512] = "";
    st_store *s = open_fresh("update.db", path, sizeof path);
    if (!s) return;
    int64_t id = 0, num = 0;
    CHECK_INT_EQ(st_study_create(s, "u", "{}", 1, ST_STUDY_RUNNING, &id, err, sizeof err), 0);
    CHECK_INT_EQ(st_trial_create(s, id, "{\"lr\": 0.01, \"opt\": \"adam\"}", ST_TRIAL_PENDING,
                                 &num, err, sizeof err), 0);
    CHECK_INT_EQ(st_trial_create(s, id, "{\"lr\": 0.02}", ST_TRIAL_PENDING, &num, err, sizeof err),
                 0);
    st_study before;
    CHECK_INT_EQ(st_study_get(s, "u", &before, &found, err, sizeof err), 0);
    CHECK(found);

    st_trial t;
    CHECK_INT_EQ(st_trial_get(s, id, 1, &t, &found, err, sizeof err), 0);
    CHECK(found);
    double created = t.created;
    t.state = ST_TRIAL_FAILED;
    t.has_objective = 1;
    t.objective = -0.8125;
    t.started = 1700000000.25;
    t.finished = 1700000123.5;
    t.attempts = 3;
    t.restarts = 7;
    t.error = strdup("chief:0 exited with status 2");
    t.executor_job = strdup("slurm:4242");
    CHECK_INT_EQ(st_trial_update(s, &t, err, sizeof err), 0);
    st_trial_clear(&t);

    CHECK_INT_EQ(st_trial_get(s, id, 1, &t, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK_INT_EQ(t.study_id, id);
    CHECK_INT_EQ(t.number, 1);
    CHECK(strcmp(t.params, "{\"lr\": 0.01, \"opt\": \"adam\"}") == 0);
    CHECK(t.state == ST_TRIAL_FAILED);
    CHECK(t.has_objective && t.objective == -0.8125);
    CHECK(t.created == created); /* never rewritten */
    CHECK(t.started == 1700000000.25);
    CHECK(t.finished == 1700000123.5);
    CHECK_INT_EQ(t.attempts, 3);
    CHECK_INT_EQ(t.restarts, 7);
    CHECK(t.error && strcmp(t.error, "chief:0 exited with status 2") == 0);
    CHECK(t.executor_job && strcmp(t.executor_job, "slurm:4242") == 0);

    /* Back to no objective, no error, no times: NULL in the file, 0 in the struct. */
    t.has_objective = 0;
    t.objective = 123;
    t.started = t.finished = 0;
    free(t.error);
    t.error = NULL;
    free(t.executor_job);
    t.executor_job = NULL;
    CHECK_INT_EQ(st_trial_update(s, &t, err, sizeof err), 0);
    st_trial_clear(&t);
    CHECK_INT_EQ(st_trial_get(s, id, 1, &t, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(!t.has_objective);
    CHECK(t.started == 0 && t.finished == 0);
    CHECK(t.error == NULL);
    CHECK(t.executor_job == NULL);
    char buf[64];
    raw_text(path, "SELECT typeof(objective) || typeof(started) FROM trials WHERE number = 1",
             buf, sizeof buf);
    CHECK(strcmp(buf, "nullnull") == 0);
    /* An objective of exactly 0 is a value, not "none". */
    t.has_objective = 1;
    t.objective = 0;
    CHECK_INT_EQ(st_trial_update(s, &t, err, sizeof err), 0);
    st_trial_clear(&t);
    CHECK_INT_EQ(st_trial_get(s, id, 1, &t, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(t.has_objective && t.objective == 0);

    /* The study's updated time moved; trial 2 was not touched. */
    st_study after;
    CHECK_INT_EQ(st_study_get(s, "u", &after, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(after.updated > before.updated);
    st_study_clear(&before);
    st_study_clear(&after);
    st_trial t2;
    CHECK_INT_EQ(st_trial_get(s, id, 2, &t2, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(t2.state == ST_TRIAL_PENDING && !t2.has_objective && t2.error == NULL);
    st_trial_clear(&t2);

    /* list returns both, in number order, with the same fields as get. */
    st_trial *list = NULL;
    size_t n = 0;
    CHECK_INT_EQ(st_trial_list(s, id, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 2);
    if (n == 2) {
        CHECK(list[0].number == 1 && list[1].number == 2);
        CHECK(list[0].has_objective && list[0].objective == 0 && list[0].attempts == 3);
        CHECK(strcmp(list[1].params, "{\"lr\": 0.02}") == 0);
    }
    st_trials_free(list, n);

    /* Bad updates are refused and change nothing. */
    t.number = 99;
    CHECK_INT_EQ(st_trial_update(s, &t, err, sizeof err), TN_ENOENT);
    CHECK_STR_CONTAINS(err, "trial 99");
    t.number = 1;
    t.objective = NAN;
    CHECK_INT_EQ(st_trial_update(s, &t, err, sizeof err), TN_EINVAL);
    t.objective = 1;
    t.state = ST_TRIAL_NSTATES; /* no state */
    CHECK_INT_EQ(st_trial_update(s, &t, err, sizeof err), TN_EINVAL);
    st_trial_clear(&t);
    st_close(s);
}

static void test_trial_counts(void) {
    int found;
    char path[600], err[512] = "";
    st_store *s = open_fresh("counts.db", path, sizeof path);
    if (!s) return;
    int64_t id = 0, other = 0, num = 0;
    CHECK_INT_EQ(st_study_create(s, "c", "{}", 1, ST_STUDY_RUNNING, &id, err, sizeof err), 0);
    CHECK_INT_EQ(st_study_create(s, "d", "{}", 1, ST_STUDY_RUNNING, &other, err, sizeof err), 0);
    /* states[i] for trial i + 1: 2 PENDING, 1 RUNNING, 3 SUCCEEDED, 1 FAILED, 2 STOPPED,
     * 0 CANCELLED. */
    static const st_trial_state states[] = {
        ST_TRIAL_PENDING,   ST_TRIAL_RUNNING,   ST_TRIAL_SUCCEEDED, ST_TRIAL_SUCCEEDED,
        ST_TRIAL_FAILED,    ST_TRIAL_STOPPED,   ST_TRIAL_SUCCEEDED, ST_TRIAL_STOPPED,
        ST_TRIAL_PENDING};
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        CHECK_INT_EQ(st_trial_create(s, id, "{}", ST_TRIAL_PENDING, &num, err, sizeof err), 0);
        st_trial t;
        CHECK_INT_EQ(st_trial_get(s, id, num, &t, &found, err, sizeof err), 0);
        CHECK(found);
        t.state = states[i];
        CHECK_INT_EQ(st_trial_update(s, &t, err, sizeof err), 0);
        st_trial_clear(&t);
    }
    CHECK_INT_EQ(st_trial_create(s, other, "{}", ST_TRIAL_RUNNING, &num, err, sizeof err), 0);
    int64_t counts[ST_TRIAL_NSTATES];
    CHECK_INT_EQ(st_trial_counts(s, id, counts, err, sizeof err), 0);
    static const int64_t want[6] = {2, 1, 3, 1, 2, 0};
    for (int i = 0; i < 6; i++) CHECK_MSG(counts[i] == want[i], "counts[%d] = %lld, want %lld",
                                          i, (long long)counts[i], (long long)want[i]);
    CHECK_INT_EQ(st_trial_counts(s, other, counts, err, sizeof err), 0);
    CHECK(counts[0] == 0 && counts[1] == 1 && counts[2] == 0);
    st_close(s);
}

/* ---------------------------------------------------------------------------------
 * Measurements and events
 * --------------------------------------------------------------------------------- */

static void test_measurements(void) {
    char path[600], err[512] = "";
    st_store *s = open_fresh("measure.db", path, sizeof path);
    if (!s) return;
    int64_t id = 0, num = 0;
    CHECK_INT_EQ(st_study_create(s, "m", "{}", 1, ST_STUDY_RUNNING, &id, err, sizeof err), 0);
    CHECK_INT_EQ(st_trial_create(s, id, "{}", ST_TRIAL_RUNNING, &num, err, sizeof err), 0);
    CHECK_INT_EQ(st_trial_create(s, id, "{}", ST_TRIAL_RUNNING, &num, err, sizeof err), 0);
    /* Out of order on purpose; two replicas share timestamp 10.5; step 150 comes last in
     * time (a restarted replica resumed from an older checkpoint); the chief's second
     * attempt reports step 100 again with an earlier timestamp (a clock set back); one
     * record's attempt is not known (0, stored as NULL). */
    st_measurement in[] = {
        {300, "chief:0", "{\"accuracy\": 0.9}", 30.0, 1},
        {150, "chief:0", "{\"accuracy\": 0.6}", 40.0, 1},
        {100, "chief:0", "{\"accuracy\": 0.5}", 10.5, 1},
        {100, "worker:0", "{\"accuracy\": 0.51}", 10.5, 1},
        {200, "chief:0", "{\"accuracy\": 0.7}", 20.25, 1},
        {100, "chief:0", "{\"accuracy\": 0.4}", 9.0, 2},
        {100, "worker:0", "{\"accuracy\": 0.45}", 9.5, 0},
    };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        CHECK_INT_EQ(st_measurement_add(s, id, 1, &in[i], err, sizeof err), 0);
    /* The same record read again (same replica, timestamp, step and metrics) is ignored,
     * even with another attempt (the row stored first stays); it is not an error. */
    st_measurement again = {200, "chief:0", "{\"accuracy\": 0.7}", 20.25, 7};
    CHECK_INT_EQ(st_measurement_add(s, id, 1, &again, err, sizeof err), 0);
    CHECK_INT_EQ(st_measurement_add(s, id, 1, &in[0], err, sizeof err), 0);
    /* Another record with the same timestamp is another record (a program that writes
     * whole seconds, or ordinals that a resumed reader counts again): kept, whether its
     * metrics or only its step differ. Version 6 kept only the first. */
    st_measurement same_ts[] = {{200, "chief:0", "{\"accuracy\": 0.75}", 20.25, 1},
                                {250, "chief:0", "{\"accuracy\": 0.7}", 20.25, 1}};
    for (size_t i = 0; i < 2; i++)
        CHECK_INT_EQ(st_measurement_add(s, id, 1, &same_ts[i], err, sizeof err), 0);
    /* Trial 2 gets one with the same key: a different trial, so it is stored. */
    CHECK_INT_EQ(st_measurement_add(s, id, 2, &in[0], err, sizeof err), 0);

    st_measurement *list = NULL;
    size_t n = 0;
    CHECK_INT_EQ(st_measurement_list(s, id, 1, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 9);
    /* by step, then replica, then arrival (not by timestamp); attempts as stored */
    static const struct {
        int64_t step;
        double ts;
        const char *replica, *metrics;
        int attempt;
    } want[] = {
        {100, 10.5, "chief:0", "{\"accuracy\": 0.5}", 1},
        {100, 9.0, "chief:0", "{\"accuracy\": 0.4}", 2},
        {100, 10.5, "worker:0", "{\"accuracy\": 0.51}", 1},
        {100, 9.5, "worker:0", "{\"accuracy\": 0.45}", 0},
        {150, 40.0, "chief:0", "{\"accuracy\": 0.6}", 1},
        {200, 20.25, "chief:0", "{\"accuracy\": 0.7}", 1},
        {200, 20.25, "chief:0", "{\"accuracy\": 0.75}", 1},
        {250, 20.25, "chief:0", "{\"accuracy\": 0.7}", 1},
        {300, 30.0, "chief:0", "{\"accuracy\": 0.9}", 1},
    };
    for (size_t i = 0; i < n && i < 9; i++) {
        CHECK_MSG(list[i].step == want[i].step && list[i].timestamp == want[i].ts &&
                      strcmp(list[i].replica, want[i].replica) == 0 &&
                      strcmp(list[i].metrics, want[i].metrics) == 0 &&
                      list[i].attempt == want[i].attempt,
                  "measurement %zu: step %lld ts %g %s %s attempt %d", i,
                  (long long)list[i].step, list[i].timestamp, list[i].replica, list[i].metrics,
                  list[i].attempt);
    }
    char buf[64];
    raw_text(path, "SELECT count(*) FROM measurements WHERE attempt IS NULL", buf, sizeof buf);
    CHECK_MSG(strcmp(buf, "1") == 0, "%s rows without an attempt, want 1", buf);
    st_measurements_free(list, n);
    CHECK_INT_EQ(st_measurement_list(s, id, 2, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 1);
    st_measurements_free(list, n);
    CHECK_INT_EQ(st_measurement_list(s, id, 3, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 0);
    st_measurements_free(list, n);

    /* A measurement of a trial that does not exist is an error, not silently dropped. */
    CHECK_INT_EQ(st_measurement_add(s, id, 3, &in[0], err, sizeof err), TN_ENOENT);
    st_measurement bad = {1, NULL, "{}", 1.0, 1};
    CHECK_INT_EQ(st_measurement_add(s, id, 1, &bad, err, sizeof err), TN_EINVAL);
    st_close(s);
}

static void test_events(void) {
    char path[600], err[512] = "";
    st_store *s = open_fresh("events.db", path, sizeof path);
    if (!s) return;
    int64_t id = 0, num = 0;
    CHECK_INT_EQ(st_study_create(s, "e", "{}", 1, ST_STUDY_RUNNING, &id, err, sizeof err), 0);
    CHECK_INT_EQ(st_trial_create(s, id, "{}", ST_TRIAL_RUNNING, &num, err, sizeof err), 0);
    st_event e1 = {.time = 100.5, .replica = "chief:0", .kind = "started"};
    st_event e2 = {.time = 101.0, .replica = "chief:0", .kind = "exited", .detail = "status 1",
                   .has_exit_code = 1, .exit_code = 1};
    /* earlier than e2, added later; killed */
    st_event e3 = {.time = 100.75, .replica = "worker:0", .kind = "exited", .signal = 9};
    st_event e4 = {.time = 99.0, .kind = "study_started", .detail = "seed 1"};
    CHECK_INT_EQ(st_event_add(s, id, 1, &e1, err, sizeof err), 0);
    CHECK_INT_EQ(st_event_add(s, id, 1, &e2, err, sizeof err), 0);
    CHECK_INT_EQ(st_event_add(s, id, 1, &e3, err, sizeof err), 0);
    CHECK_INT_EQ(st_event_add(s, id, 0, &e4, err, sizeof err), 0);

    st_event *list = NULL;
    size_t n = 0;
    CHECK_INT_EQ(st_event_list(s, id, 1, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 3);
    if (n == 3) {
        CHECK(list[0].time == 100.5 && strcmp(list[0].kind, "started") == 0 &&
              strcmp(list[0].replica, "chief:0") == 0 && list[0].detail == NULL &&
              !list[0].has_exit_code && list[0].signal == 0);
        CHECK(list[1].time == 100.75 && strcmp(list[1].replica, "worker:0") == 0 &&
              !list[1].has_exit_code && list[1].signal == 9);
        CHECK(list[2].time == 101.0 && strcmp(list[2].kind, "exited") == 0 &&
              list[2].detail && strcmp(list[2].detail, "status 1") == 0 &&
              list[2].has_exit_code && list[2].exit_code == 1 && list[2].signal == 0);
    }
    st_events_free(list, n);
    CHECK_INT_EQ(st_event_list(s, id, 0, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 1);
    if (n == 1) {
        CHECK(list[0].replica == NULL);
        CHECK(strcmp(list[0].kind, "study_started") == 0);
    }
    st_events_free(list, n);
    CHECK_INT_EQ(st_event_list(s, id, -1, &list, &n, err, sizeof err), 0); /* all, by time */
    CHECK_INT_EQ(n, 4);
    if (n == 4) CHECK(list[0].time == 99.0 && list[3].time == 101.0);
    st_events_free(list, n);

    /* time 0 means "now" */
    double before = wall_now();
    st_event e5 = {.time = 0, .kind = "note"};
    CHECK_INT_EQ(st_event_add(s, id, 0, &e5, err, sizeof err), 0);
    CHECK_INT_EQ(st_event_list(s, id, 0, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 2);
    if (n == 2) CHECK(list[1].time >= before - 1e-3);
    st_events_free(list, n);

    st_event nokind = {.time = 1};
    CHECK_INT_EQ(st_event_add(s, id, 1, &nokind, err, sizeof err), TN_EINVAL);
    st_event badcode = {.time = 1, .kind = "exited", .has_exit_code = 1, .exit_code = 256};
    CHECK_INT_EQ(st_event_add(s, id, 1, &badcode, err, sizeof err), TN_EINVAL);
    st_event badsig = {.time = 1, .kind = "exited", .signal = -1};
    CHECK_INT_EQ(st_event_add(s, id, 1, &badsig, err, sizeof err), TN_EINVAL);
    CHECK_INT_EQ(st_event_add(s, id + 9, 0, &e1, err, sizeof err), TN_ENOENT);
    st_close(s);
}

/* ---------------------------------------------------------------------------------
 * Transactions
 * --------------------------------------------------------------------------------- */

typedef struct tx_ctx {
    int fail_with;    /* what the function returns after its writes */
    int64_t study;    /* study to add trials to */
    int trials;       /* how many */
    char err[512];
} tx_ctx;

static int add_trials(st_store *s, void *arg) {
    tx_ctx *c = arg;
    for (int i = 0; i < c->trials; i++) {
        int64_t num = 0;
        int rc = st_trial_create(s, c->study, "{}", ST_TRIAL_PENDING, &num, c->err, sizeof c->err);
        if (rc) return rc;
    }
    st_event e = {.time = 1.0, .kind = "batch"};
    int rc = st_event_add(s, c->study, 0, &e, c->err, sizeof c->err);
    return rc ? rc : c->fail_with;
}

/* Creates a study, then (nested) adds trials that fail or not. */
static int create_and_nest(st_store *s, void *arg) {
    tx_ctx *c = arg;
    int rc = st_study_create(s, "nested", "{}", 1, ST_STUDY_CREATED, &c->study, c->err,
                             sizeof c->err);
    if (rc) return rc;
    tx_ctx inner = {.fail_with = -17, .study = c->study, .trials = 3};
    char err[512] = "";
    rc = st_transaction(s, add_trials, &inner, err, sizeof err);
    if (rc != -17) return -1000; /* the inner failure must come back as it was */
    inner.fail_with = 0;
    inner.trials = 2;
    rc = st_transaction(s, add_trials, &inner, err, sizeof err);
    return rc ? rc : c->fail_with;
}

static void test_transaction_commit_and_rollback(void) {
    int found;
    char path[600], err[512] = "";
    st_store *s = open_fresh("tx.db", path, sizeof path);
    if (!s) return;
    int64_t id = 0;
    CHECK_INT_EQ(st_study_create(s, "t", "{}", 1, ST_STUDY_RUNNING, &id, err, sizeof err), 0);

    tx_ctx ok = {.fail_with = 0, .study = id, .trials = 4};
    CHECK_INT_EQ(st_transaction(s, add_trials, &ok, err, sizeof err), 0);
    st_trial *list = NULL;
    size_t n = 0;
    CHECK_INT_EQ(st_trial_list(s, id, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 4);
    st_trials_free(list, n);

    /* A failing function leaves nothing behind, and its status comes back. */
    tx_ctx bad = {.fail_with = TN_EIO, .study = id, .trials = 5};
    err[0] = 'x';
    err[1] = '\0';
    CHECK_INT_EQ(st_transaction(s, add_trials, &bad, err, sizeof err), TN_EIO);
    CHECK_STR_CONTAINS(err, "rolled back");
    CHECK_INT_EQ(st_trial_list(s, id, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 4);
    st_trials_free(list, n);
    st_event *ev = NULL;
    CHECK_INT_EQ(st_event_list(s, id, 0, &ev, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 1); /* only the committed batch's event */
    st_events_free(ev, n);
    /* Numbering carries on after the rolled-back trials 5..9 as if they never were. */
    int64_t num = 0;
    CHECK_INT_EQ(st_trial_create(s, id, "{}", ST_TRIAL_PENDING, &num, err, sizeof err), 0);
    CHECK_INT_EQ(num, 5);

    /* A failure inside fn's own store call: its message reaches the caller. */
    tx_ctx missing = {.fail_with = 0, .study = id + 40, .trials = 1};
    CHECK_INT_EQ(st_transaction(s, add_trials, &missing, missing.err, sizeof missing.err),
                 TN_ENOENT);
    CHECK_STR_CONTAINS(missing.err, "no study");

    /* Nested: the inner failing transaction is undone, the rest commits. */
    tx_ctx outer = {.fail_with = 0};
    CHECK_INT_EQ(st_transaction(s, create_and_nest, &outer, err, sizeof err), 0);
    CHECK_INT_EQ(st_trial_list(s, outer.study, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 2);
    if (n == 2) CHECK(list[0].number == 1 && list[1].number == 2);
    st_trials_free(list, n);
    CHECK_INT_EQ(st_event_list(s, outer.study, 0, &ev, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 1); /* the failed inner batch's event is gone too */
    st_events_free(ev, n);

    /* Nested, and then the outer fails: everything is undone, the study included (a
     * fresh store, as "nested" now exists in this one). */
    tx_ctx outer2 = {.fail_with = -3};
    char path2[600];
    st_study st;
    st_store *s2 = open_fresh("tx2.db", path2, sizeof path2);
    if (s2) {
        CHECK_INT_EQ(st_transaction(s2, create_and_nest, &outer2, err, sizeof err), -3);
        CHECK_INT_EQ(st_study_get(s2, "nested", &st, &found, err, sizeof err), 0);
        CHECK(!found);
        st_study *studies = NULL;
        CHECK_INT_EQ(st_study_list(s2, &studies, &n, err, sizeof err), 0);
        CHECK_INT_EQ(n, 0);
        st_studies_free(studies, n);
        /* The store is usable afterwards. */
        CHECK_INT_EQ(st_study_create(s2, "after", "{}", 1, ST_STUDY_CREATED, NULL, err,
                                     sizeof err), 0);
        st_close(s2);
    }
    st_close(s);
}

/* ---------------------------------------------------------------------------------
 * Persistence
 * --------------------------------------------------------------------------------- */

static void test_reopen_keeps_everything(void) {
    int found;
    char path[600], err[512] = "";
    st_store *s = open_fresh("reopen.db", path, sizeof path);
    if (!s) return;
    int64_t id = 0, num = 0;
    CHECK_INT_EQ(st_study_create(s, "keep", "{\"jobId\": \"keep\"}", 99, ST_STUDY_RUNNING, &id,
                                 err, sizeof err), 0);
    CHECK_INT_EQ(st_trial_create(s, id, "{\"a\": 1}", ST_TRIAL_RUNNING, &num, err, sizeof err), 0);
    st_trial t;
    CHECK_INT_EQ(st_trial_get(s, id, 1, &t, &found, err, sizeof err), 0);
    CHECK(found);
    t.state = ST_TRIAL_SUCCEEDED;
    t.has_objective = 1;
    t.objective = 0.875;
    t.finished = t.started + 5;
    t.attempts = 1;
    CHECK_INT_EQ(st_trial_update(s, &t, err, sizeof err), 0);
    st_trial_clear(&t);
    st_measurement m = {10, "chief:0", "{\"accuracy\": 0.875}", 1234.5, 3};
    CHECK_INT_EQ(st_measurement_add(s, id, 1, &m, err, sizeof err), 0);
    st_event e = {.time = 1234.0, .replica = "chief:0", .kind = "exited", .detail = "status 0",
                  .has_exit_code = 1, .exit_code = 0};
    CHECK_INT_EQ(st_event_add(s, id, 1, &e, err, sizeof err), 0);
    CHECK_INT_EQ(st_study_set_state(s, id, ST_STUDY_SUCCEEDED, NULL, err, sizeof err), 0);
    st_close(s);

    s = NULL;
    CHECK_INT_EQ(st_open(path, &s, err, sizeof err), 0);
    if (!s) return;
    st_study st;
    CHECK_INT_EQ(st_study_get(s, "keep", &st, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(st.id == id && st.seed == 99 && st.state == ST_STUDY_SUCCEEDED);
    CHECK(strcmp(st.spec, "{\"jobId\": \"keep\"}") == 0);
    st_study_clear(&st);
    CHECK_INT_EQ(st_trial_get(s, id, 1, &t, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(t.state == ST_TRIAL_SUCCEEDED && t.has_objective && t.objective == 0.875);
    CHECK(t.finished == t.started + 5 && t.attempts == 1);
    st_trial_clear(&t);
    st_measurement *ml = NULL;
    size_t n = 0;
    CHECK_INT_EQ(st_measurement_list(s, id, 1, &ml, &n, err, sizeof err), 0);
    CHECK(n == 1 && ml[0].step == 10 && ml[0].timestamp == 1234.5 && ml[0].attempt == 3);
    st_measurements_free(ml, n);
    st_event *el = NULL;
    CHECK_INT_EQ(st_event_list(s, id, 1, &el, &n, err, sizeof err), 0);
    CHECK(n == 1 && strcmp(el[0].detail, "status 0") == 0);
    st_events_free(el, n);
    /* Numbering continues from what is in the file. */
    CHECK_INT_EQ(st_trial_create(s, id, "{}", ST_TRIAL_PENDING, &num, err, sizeof err), 0);
    CHECK_INT_EQ(num, 2);
    st_close(s);
}

/* The schema of version 3, as the tuner before measurements had attempts wrote it. */
static const char schema_v3[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE studies (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, spec TEXT NOT "
    "NULL, state TEXT NOT NULL, seed INTEGER NOT NULL, created REAL, updated REAL, error TEXT);"
    "CREATE TABLE trials (study_id INTEGER NOT NULL REFERENCES studies(id), number INTEGER NOT "
    "NULL, params TEXT NOT NULL, state TEXT NOT NULL, objective REAL, created REAL, started "
    "REAL, finished REAL, attempts INTEGER NOT NULL DEFAULT 0, restarts INTEGER NOT NULL "
    "DEFAULT 0, error TEXT, changed INTEGER NOT NULL DEFAULT 0, executor_job TEXT, "
    "PRIMARY KEY (study_id, number)) WITHOUT ROWID;"
    "CREATE INDEX trials_by_state ON trials(study_id, state);"
    "CREATE INDEX trials_by_change ON trials(study_id, changed);"
    "CREATE TABLE measurements (study_id INTEGER NOT NULL, trial INTEGER NOT NULL, replica "
    "TEXT NOT NULL, step INTEGER NOT NULL, timestamp REAL NOT NULL, metrics TEXT NOT NULL, "
    "seq INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (study_id, trial, replica, timestamp), "
    "FOREIGN KEY (study_id, trial) REFERENCES trials(study_id, number)) WITHOUT ROWID;"
    "CREATE INDEX measurements_by_seq ON measurements(study_id, seq);"
    "CREATE INDEX measurements_by_step ON measurements(study_id, trial, step);"
    "CREATE TABLE events (id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL REFERENCES "
    "studies(id), trial INTEGER NOT NULL, time REAL NOT NULL, replica TEXT, kind TEXT NOT NULL, "
    "detail TEXT);"
    "CREATE INDEX events_by_trial ON events(study_id, trial, time);"
    "INSERT INTO meta (key, value) VALUES ('schema_version', '3');";

/* The columns of table `table` of the file (name, type, not null, default, key). */
static void table_columns(const char *path, const char *table, char *buf, size_t len) {
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT group_concat(name || ':' || type || ':' || \"notnull\" || ':' || "
             "coalesce(dflt_value, '') || ':' || pk, ';') FROM pragma_table_info('%s')",
             table);
    raw_text(path, sql, buf, len);
}

/* A version 3 file, written with the raw API, is migrated when opened: its rows are
 * all there, old measurements have no attempt (NULL: version 3 never knew which run
 * wrote them), new ones store theirs, and the table is a new file's. */
/* st_store_id: made on first use (32 hex digits), the same on every call and after
 * reopening, kept when the file moves; another file, even at the same path, has
 * another. */
static void test_store_id(void) {
    char path[600], moved[600], err[512] = "";
    st_store *s = open_fresh("id.db", path, sizeof path);
    if (!s) return;
    char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    CHECK_INT_EQ(st_store_id(s, &a, err, sizeof err), 0);
    CHECK_INT_EQ(st_store_id(s, &b, err, sizeof err), 0);
    CHECK(a && b && strlen(a) == 32 && strspn(a, "0123456789abcdef") == 32);
    CHECK(a && b && strcmp(a, b) == 0);
    st_close(s);
    tmp_path(moved, sizeof moved, "id-moved.db");
    CHECK_INT_EQ(rename(path, moved), 0);
    s = NULL;
    CHECK_INT_EQ(st_open(moved, &s, err, sizeof err), 0);
    if (s) CHECK_INT_EQ(st_store_id(s, &c, err, sizeof err), 0);
    CHECK(a && c && strcmp(a, c) == 0);
    st_close(s);
    s = open_fresh("id.db", path, sizeof path); /* a new file where the first was */
    if (s) CHECK_INT_EQ(st_store_id(s, &d, err, sizeof err), 0);
    CHECK(a && d && strcmp(a, d) != 0);
    st_close(s);
    free(a);
    free(b);
    free(c);
    free(d);
}

/* An older store with a study that an older tuner is running (its job folder locked):
 * not migrated under it (its next write would fail against the new schema), and the
 * message names the study; once the run has ended (the lock let go), migrated. */
static void test_no_migration_under_older_run(void) {
    char path[600], dir[600], lockp[700], err[1024] = "";
    tmp_path(path, sizeof path, "v3run.db");
    tmp_path(dir, sizeof dir, "v3run_job");
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(lockp, sizeof lockp, "%s/.tuner.lock", dir);
    int lock = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    CHECK(lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) == 0); /* the older tuner's */
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, schema_v3, NULL, NULL, NULL) == SQLITE_OK);
    char *row = sqlite3_mprintf("INSERT INTO studies VALUES (1, 'busy', json_object("
                                "'trainingInput', json_object('jobDir', %Q)), 'RUNNING', 5, "
                                "1.0, 2.0, NULL);", dir);
    CHECK(sqlite3_exec(db, row, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_free(row);
    sqlite3_close(db);
    st_store *s = NULL;
    CHECK_INT_EQ(st_open(path, &s, err, sizeof err), TN_EVERSION);
    CHECK_STR_CONTAINS(err, "study busy is being run by an older tuner");
    CHECK_STR_CONTAINS(err, dir);
    char buf[64];
    raw_text(path, "SELECT value FROM meta WHERE key = 'schema_version'", buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "3"), "schema_version %s", buf);
    CHECK_INT_EQ(st_open_read(path, &s, err, sizeof err), TN_EVERSION);
    close(lock); /* the run ends */
    CHECK_MSG(st_open(path, &s, err, sizeof err) == 0, "%s", err);
    st_close(s);
    raw_text(path, "SELECT value FROM meta WHERE key = 'schema_version'", buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "7"), "schema_version %s", buf);
    remove(lockp);
    rmdir(dir);
}

static void test_migration_from_v3(void) {
    int found;
    char path[600], fresh[600], err[512] = "";
    tmp_path(path, sizeof path, "v3.db");
    tmp_path(fresh, sizeof fresh, "v4.db");
    st_store *s = old_store_open(
        path, schema_v3,
        "INSERT INTO trials VALUES (1, 1, '{\"x\": 0.5}', 'SUCCEEDED', 0.75, 1, 1, "
        "2, 1, 1, NULL, 3, 'slurm:17');"
        "INSERT INTO measurements VALUES (1, 1, 'chief:0', 5, 1.5, '{\"acc\": 0.2}', 1);"
        "INSERT INTO measurements VALUES (1, 1, 'chief:0', 5, 2.5, '{\"acc\": 0.7}', 2);"
        "INSERT INTO events VALUES (1, 1, 1, 1.2, 'chief:0', 'started', 'pid 1');"
        "INSERT INTO events VALUES (2, 1, 1, 1.3, 'chief:0', 'exited', "
        "'exit status 3');"
        "INSERT INTO events VALUES (3, 1, 1, 1.4, 'worker:0', 'exited', "
        "'killed by signal 9 (Killed)');"
        "INSERT INTO events VALUES (4, 1, 1, 1.5, 'worker:1', 'exited', "
        "'cannot run ./t: No such file');");
    if (!s) return;
    char buf[1024], want[1024];
    st_trial t;
    CHECK(st_trial_get(s, 1, 1, &t, &found, err, sizeof err) == 0 && found && t.objective == 0.75 &&
          t.restarts == 1 && t.changed == 3 && t.executor_job &&
          !strcmp(t.executor_job, "slurm:17"));
    /* a trial from before schema 6 has one value: its objective */
    CHECK(t.nvalues == 1 && t.values[0] == 0.75);
    /* and now takes two */
    t.nvalues = 2;
    t.values[1] = -3.5;
    CHECK_MSG(st_trial_update(s, &t, err, sizeof err) == 0, "%s", err);
    st_trial_clear(&t);
    CHECK(st_trial_get(s, 1, 1, &t, &found, err, sizeof err) == 0 && found && t.nvalues == 2 &&
          t.values[0] == 0.75 && t.values[1] == -3.5);
    st_trial_clear(&t);
    st_event *ev = NULL;
    size_t n = 0;
    CHECK(st_event_list(s, 1, 1, &ev, &n, err, sizeof err) == 0 && n == 4 &&
          !strcmp(ev[0].kind, "started"));
    if (n == 4) { /* the older exits, read back from their sentences once */
        CHECK(!ev[0].has_exit_code && ev[0].signal == 0);
        CHECK(ev[1].has_exit_code && ev[1].exit_code == 3 && ev[1].signal == 0);
        CHECK(!ev[2].has_exit_code && ev[2].signal == 9);
        CHECK(!ev[3].has_exit_code && ev[3].signal == 0); /* not known */
    }
    st_events_free(ev, n);
    /* a new record of the trial, from its second attempt */
    st_measurement m = {.step = 6, .replica = "chief:0", .metrics = "{\"acc\": 0.8}",
                        .timestamp = 3.5, .attempt = 2};
    CHECK(st_measurement_add(s, 1, 1, &m, err, sizeof err) == 0);
    /* schema 7: another record with an old row's timestamp is kept too, the same one
     * read again is not */
    st_measurement same_ts = {.step = 5, .replica = "chief:0", .metrics = "{\"acc\": 0.25}",
                              .timestamp = 1.5, .attempt = 2};
    CHECK(st_measurement_add(s, 1, 1, &same_ts, err, sizeof err) == 0);
    st_measurement old_again = {.step = 5, .replica = "chief:0", .metrics = "{\"acc\": 0.2}",
                                .timestamp = 1.5, .attempt = 2};
    CHECK(st_measurement_add(s, 1, 1, &old_again, err, sizeof err) == 0);
    st_measurement *ms = NULL;
    CHECK(st_measurement_list(s, 1, 1, &ms, &n, err, sizeof err) == 0);
    CHECK_INT_EQ(n, 4);
    if (n == 4) {
        CHECK(ms[0].step == 5 && ms[0].attempt == 0 && !strcmp(ms[0].metrics, "{\"acc\": 0.2}"));
        CHECK(ms[1].step == 5 && ms[1].attempt == 0 && !strcmp(ms[1].metrics, "{\"acc\": 0.7}"));
        CHECK(ms[2].step == 5 && ms[2].attempt == 2 && ms[2].timestamp == 1.5 &&
              !strcmp(ms[2].metrics, "{\"acc\": 0.25}"));
        CHECK(ms[3].step == 6 && ms[3].attempt == 2 && ms[3].timestamp == 3.5);
    }
    st_measurements_free(ms, n);
    raw_text(path, "SELECT count(*) FROM measurements WHERE attempt IS NULL", buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "2"), "%s old rows without an attempt, want 2", buf);
    raw_text(path, "SELECT max(seq) FROM measurements", buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "4"), "the newest row's seq is %s, want 4", buf);
    raw_text(path,
             "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN "
             "('measurements_by_seq', 'measurements_by_step')",
             buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "2"), "%s of the measurements' two indexes after the rebuild", buf);
    /* opening again changes nothing; the table is a new file's */
    reopen_beside_fresh(s, path, fresh);
    table_columns(path, "measurements", buf, sizeof buf);
    table_columns(fresh, "measurements", want, sizeof want);
    CHECK_MSG(buf[0] && !strcmp(buf, want), "migrated: %s\nnew: %s", buf, want);
    CHECK_STR_CONTAINS(want, "attempt:INTEGER:0::0");
    table_columns(path, "events", buf, sizeof buf);
    table_columns(fresh, "events", want, sizeof want);
    CHECK_MSG(buf[0] && !strcmp(buf, want), "migrated: %s\nnew: %s", buf, want);
    CHECK_STR_CONTAINS(want, "exit_code:INTEGER:0::0");
    CHECK_STR_CONTAINS(want, "signal:INTEGER:0::0");
    table_columns(path, "trials", buf, sizeof buf);
    table_columns(fresh, "trials", want, sizeof want);
    CHECK_MSG(buf[0] && !strcmp(buf, want), "migrated: %s\nnew: %s", buf, want);
    CHECK_STR_CONTAINS(want, "objectives:TEXT:0::0");
}

/* A trial's value of each metric: written for two or more, read back exactly (17
 * digits), the objective the first; one value is the objective alone (no column);
 * no objective, no values; the checks on what is written; a damaged column is an
 * error naming the trial. */
static void test_trial_values(void) {
    int found;
    char path[600], err[512] = "";
    st_store *s = open_fresh("values.db", path, sizeof path);
    if (!s) return;
    int64_t id = 0, num = 0;
    CHECK_INT_EQ(st_study_create(s, "v", "{}", 1, ST_STUDY_RUNNING, &id, err, sizeof err), 0);
    for (int i = 0; i < 3; i++)
        CHECK_INT_EQ(st_trial_create(s, id, "{}", ST_TRIAL_RUNNING, &num, err, sizeof err), 0);
    st_trial t;
    /* trial 1: three values, one of them a long fraction */
    CHECK_INT_EQ(st_trial_get(s, id, 1, &t, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(t.nvalues == 0 && !t.has_objective);
    t.state = ST_TRIAL_SUCCEEDED;
    t.has_objective = 1;
    t.objective = 0.1;
    t.nvalues = 3;
    t.values[0] = 0.1;
    t.values[1] = 1.0 / 3.0;
    t.values[2] = -1e300;
    CHECK_MSG(st_trial_update(s, &t, err, sizeof err) == 0, "%s", err);
    st_trial_clear(&t);
    CHECK_INT_EQ(st_trial_get(s, id, 1, &t, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(t.has_objective && t.objective == 0.1 && t.nvalues == 3);
    CHECK(t.values[0] == 0.1 && t.values[1] == 1.0 / 3.0 && t.values[2] == -1e300);
    /* the first value must be the objective */
    t.values[0] = 0.2;
    CHECK_INT_EQ(st_trial_update(s, &t, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "is not the objective");
    t.values[0] = 0.1;
    t.values[2] = NAN;
    CHECK_INT_EQ(st_trial_update(s, &t, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "value 3 is not finite");
    t.values[2] = 1;
    t.nvalues = ST_MAX_VALUES + 1;
    CHECK_INT_EQ(st_trial_update(s, &t, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "at most 16");
    st_trial_clear(&t);
    /* trial 2: one value is the objective, stored as before */
    CHECK_INT_EQ(st_trial_get(s, id, 2, &t, &found, err, sizeof err), 0);
    CHECK(found);
    t.has_objective = 1;
    t.objective = 4;
    t.nvalues = 1;
    t.values[0] = 4;
    CHECK_INT_EQ(st_trial_update(s, &t, err, sizeof err), 0);
    st_trial_clear(&t);
    CHECK_INT_EQ(st_trial_get(s, id, 2, &t, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(t.nvalues == 1 && t.values[0] == 4);
    st_trial_clear(&t);
    char buf[256];
    raw_text(path, "SELECT count(*) FROM trials WHERE objectives IS NOT NULL", buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "1"), "%s rows with objectives, want 1", buf);
    /* values without an objective are not written */
    CHECK_INT_EQ(st_trial_get(s, id, 3, &t, &found, err, sizeof err), 0);
    CHECK(found);
    t.nvalues = 2;
    CHECK_INT_EQ(st_trial_update(s, &t, err, sizeof err), 0);
    st_trial_clear(&t);
    CHECK_INT_EQ(st_trial_get(s, id, 3, &t, &found, err, sizeof err), 0);
    CHECK(found);
    CHECK(!t.has_objective && t.nvalues == 0);
    st_trial_clear(&t);
    /* a column that is not a list of numbers */
    static const char *const bad[] = {"[1]", "1,2", "[1,x]", "[1,2", "[1,2]x", "[]",
                                      "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char sql[256];
        snprintf(sql, sizeof sql, "UPDATE trials SET objectives = '%s' WHERE number = 1", bad[i]);
        CHECK(raw_exec(path, sql) == 0);
        CHECK_MSG(st_trial_get(s, id, 1, &t, &found, err, sizeof err) == TN_EIO, "%s", bad[i]);
        CHECK_STR_CONTAINS(err, "trial 1 of study 1: its objectives are not a list");
    }
    st_close(s);
}

/* ---------------------------------------------------------------------------------
 * Concurrency and size
 * --------------------------------------------------------------------------------- */

enum { NCHILD = 4, PER_CHILD = 50 };

/* A child: its own connection, PER_CHILD trials, each checked to hold its params. */
static int child_creates(const char *path, int64_t study, int child) {
    int found;
    char err[512] = "";
    st_store *s = NULL;
    if (st_open(path, &s, err, sizeof err) != 0) {
        fprintf(stderr, "child %d: %s\n", child, err);
        return 1;
    }
    int status = 0;
    for (int i = 0; i < PER_CHILD && status == 0; i++) {
        char params[64];
        snprintf(params, sizeof params, "{\"child\": %d, \"i\": %d}", child, i);
        int64_t num = 0;
        st_trial t;
        if (st_trial_create(s, study, params, ST_TRIAL_PENDING, &num, err, sizeof err) != 0 ||
            st_trial_get(s, study, num, &t, &found, err, sizeof err) != 0) {
            fprintf(stderr, "child %d: %s\n", child, err);
            status = 1;
            break;
        }
        if (strcmp(t.params, params) != 0) {
            fprintf(stderr, "child %d: trial %lld holds %s, not %s\n", child, (long long)num,
                    t.params, params);
            status = 1;
        }
        st_trial_clear(&t);
    }
    st_close(s);
    return status;
}

static void test_concurrent_trial_numbers(void) {
    char path[600], err[512] = "";
    st_store *s = open_fresh("concurrent.db", path, sizeof path);
    if (!s) return;
    int64_t id = 0;
    CHECK_INT_EQ(st_study_create(s, "race", "{}", 1, ST_STUDY_RUNNING, &id, err, sizeof err), 0);
    st_close(s); /* never carry a connection across fork */

    fflush(NULL);
    pid_t pids[NCHILD];
    for (int c = 0; c < NCHILD; c++) {
        pids[c] = fork();
        CHECK(pids[c] >= 0);
        if (pids[c] == 0) _exit(child_creates(path, id, c));
    }
    for (int c = 0; c < NCHILD; c++) {
        if (pids[c] < 0) continue;
        int status = 0;
        CHECK(waitpid(pids[c], &status, 0) == pids[c]);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d: status %d", c, status);
    }

    s = NULL;
    CHECK_INT_EQ(st_open(path, &s, err, sizeof err), 0);
    if (!s) return;
    st_trial *list = NULL;
    size_t n = 0;
    CHECK_INT_EQ(st_trial_list(s, id, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, NCHILD * PER_CHILD);
    int seen[NCHILD][PER_CHILD];
    memset(seen, 0, sizeof seen);
    int bad_numbers = 0, bad_params = 0;
    for (size_t k = 0; k < n; k++) {
        if (list[k].number != (int64_t)k + 1) bad_numbers++; /* 1..200, no gap, no repeat */
        int c = -1, i = -1;
        if (sscanf(list[k].params, "{\"child\": %d, \"i\": %d}", &c, &i) == 2 && c >= 0 &&
            c < NCHILD && i >= 0 && i < PER_CHILD && !seen[c][i])
            seen[c][i] = 1;
        else
            bad_params++;
    }
    CHECK_INT_EQ(bad_numbers, 0);
    CHECK_INT_EQ(bad_params, 0); /* every child's every trial is there exactly once */
    st_trials_free(list, n);
    st_close(s);
}

/* Several processes opening a new file at once: one creates the schema and switches to
 * WAL, the others wait for it (SQLite refuses the switch at once while others have the
 * file open, and a half-made schema must not look like a foreign database). */
static void test_concurrent_first_open(void) {
    enum { ROUNDS = 5, NOPEN = 6 };
    for (int round = 0; round < ROUNDS; round++) {
        char name[64], path[600], err[512] = "";
        snprintf(name, sizeof name, "first_open_%d.db", round);
        tmp_path(path, sizeof path, name);
        fflush(NULL);
        pid_t pids[NOPEN];
        for (int c = 0; c < NOPEN; c++) {
            pids[c] = fork();
            CHECK(pids[c] >= 0);
            if (pids[c] != 0) continue;
            st_store *s = NULL;
            char study[32];
            snprintf(study, sizeof study, "s%d", c);
            int rc = st_open(path, &s, err, sizeof err);
            if (rc == 0) rc = st_study_create(s, study, "{}", c, ST_STUDY_CREATED, NULL, err,
                                              sizeof err);
            if (rc) fprintf(stderr, "round %d, process %d: %s\n", round, c, err);
            st_close(s);
            _exit(rc ? 1 : 0);
        }
        int failed = 0;
        for (int c = 0; c < NOPEN; c++) {
            int status = 0;
            if (pids[c] > 0 && (waitpid(pids[c], &status, 0) != pids[c] || !WIFEXITED(status) ||
                                WEXITSTATUS(status) != 0))
                failed++;
        }
        CHECK_MSG(failed == 0, "round %d: %d of %d processes failed", round, failed, NOPEN);
        st_store *s = NULL;
        CHECK_INT_EQ(st_open(path, &s, err, sizeof err), 0);
        st_study *list = NULL;
        size_t n = 0;
        if (s) CHECK_INT_EQ(st_study_list(s, &list, &n, err, sizeof err), 0);
        CHECK_INT_EQ(n, NOPEN);
        st_studies_free(list, n);
        st_close(s);
        if (failed) break;
    }
}

typedef struct many_ctx {
    int64_t study;
    int n;
    char err[512];
} many_ctx;

static int create_many(st_store *s, void *arg) {
    many_ctx *c = arg;
    for (int i = 0; i < c->n; i++) {
        char params[48];
        snprintf(params, sizeof params, "{\"i\": %d}", i);
        int64_t num = 0;
        int rc = st_trial_create(s, c->study, params,
                                 i % 10 == 0 ? ST_TRIAL_RUNNING : ST_TRIAL_PENDING, &num, c->err,
                                 sizeof c->err);
        if (rc) return rc;
        if (num != i + 1) return -999;
    }
    return 0;
}

static void test_ten_thousand_trials(void) {
    char path[600], err[512] = "";
    st_store *s = open_fresh("many.db", path, sizeof path);
    if (!s) return;
    int64_t id = 0;
    CHECK_INT_EQ(st_study_create(s, "big", "{}", 1, ST_STUDY_RUNNING, &id, err, sizeof err), 0);
    clock_t t0 = clock();
    many_ctx c = {.study = id, .n = 10000};
    int rc = st_transaction(s, create_many, &c, err, sizeof err);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, err);
    clock_t t1 = clock();
    int64_t counts[ST_TRIAL_NSTATES];
    for (int rep = 0; rep < 100; rep++) /* a progress line asks this often */
        CHECK_INT_EQ(st_trial_counts(s, id, counts, err, sizeof err), 0);
    clock_t t2 = clock();
    CHECK_INT_EQ(counts[0], 9000);
    CHECK_INT_EQ(counts[1], 1000);
    CHECK(counts[2] == 0 && counts[3] == 0 && counts[4] == 0 && counts[5] == 0);
    st_trial *list = NULL;
    size_t n = 0;
    CHECK_INT_EQ(st_trial_list(s, id, &list, &n, err, sizeof err), 0);
    CHECK_INT_EQ(n, 10000);
    if (n == 10000)
        CHECK(list[9999].number == 10000 && strcmp(list[9999].params, "{\"i\": 9999}") == 0);
    st_trials_free(list, n);
    clock_t t3 = clock();
    printf("  10,000 trials: create %.0f ms, 100 counts %.0f ms, list %.0f ms (CPU)\n",
           1e3 * (double)(t1 - t0) / CLOCKS_PER_SEC, 1e3 * (double)(t2 - t1) / CLOCKS_PER_SEC,
           1e3 * (double)(t3 - t2) / CLOCKS_PER_SEC);
    st_close(s);
}

/* ---------------------------------------------------------------------------------
 * The run's folder
 * --------------------------------------------------------------------------------- */

static int make_tmpdir(void) {
    const char *base = getenv("TN_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/tn_store_XXXXXX", base);
    if (!mkdtemp(tmpdir)) {
        perror(tmpdir);
        return -1;
    }
    return 0;
}

/* Removes the run's folder and the files in it (the tests make no subfolders). */
static void remove_tmpdir(void) {
    DIR *d = opendir(tmpdir);
    if (!d) return;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", tmpdir, ent->d_name);
        if (unlink(path) != 0) perror(path);
    }
    closedir(d);
    if (rmdir(tmpdir) != 0) perror(tmpdir);
}

int main(void) {
    if (make_tmpdir() != 0) return 1;
    RUN(test_open_creates_schema);
    RUN(test_open_newer_schema_refused);
    RUN(test_open_garbage_file);
    RUN(test_open_foreign_database);
    RUN(test_open_missing_folder);
    RUN(test_study_create_get_list);
    RUN(test_study_list_empty);
    RUN(test_study_duplicate_name);
    RUN(test_study_set_state);
    RUN(test_run_state_keeps_cancel);
    RUN(test_state_names);
    RUN(test_foreign_state_refused);
    RUN(test_trial_numbering);
    RUN(test_trial_update_round_trip);
    RUN(test_trial_counts);
    RUN(test_measurements);
    RUN(test_events);
    RUN(test_transaction_commit_and_rollback);
    RUN(test_reopen_keeps_everything);
    RUN(test_store_id);
    RUN(test_migration_from_v3);
    RUN(test_no_migration_under_older_run);
    RUN(test_trial_values);
    RUN(test_concurrent_trial_numbers);
    RUN(test_concurrent_first_open);
    RUN(test_ten_thousand_trials);
    remove_tmpdir();
    return check_summary();
}
