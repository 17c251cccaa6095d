/*
 * oldstore.h — store files of an older schema for the migration tests of the store and
 * the dashboard (header only): written with the raw SQLite API, then opened, and so
 * migrated, by st_open.
 */
#ifndef TN_TESTS_TUNER_OLDSTORE_H
#define TN_TESTS_TUNER_OLDSTORE_H

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "tests/check.h"
#include "tuner/store.h"

/* Column 0 of the first row of sql on the file as text, into buf ("" if none). */
static inline void raw_text(const char *path, const char *sql, char *buf, size_t len) {
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    buf[0] = '\0';
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Writes the file at path with the raw API: schema_sql (an older schema, with its
 * version in meta), the study "old" (id 1, SUCCEEDED, seed 5), then rows_sql; opens it
 * with st_open, which migrates it, and checks that it is at schema version 7 with the
 * study still there. The store (yours to close), or NULL (the failure recorded). */
static inline st_store *old_store_open(const char *path, const char *schema_sql,
                                       const char *rows_sql) {
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, schema_sql, NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       "INSERT INTO studies VALUES (1, 'old', '{}', 'SUCCEEDED', 5, 1.0, 2.0, "
                       "NULL);",
                       NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, rows_sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    char err[512] = "", buf[64];
    st_store *s = NULL;
    int rc = st_open(path, &s, err, sizeof err);
    CHECK_MSG(rc == 0, "%s", err);
    if (rc) return NULL;
    raw_text(path, "SELECT value FROM meta WHERE key = 'schema_version'", buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "7"), "schema_version %s", buf);
    st_study study;
    int found;
    CHECK(st_study_get(s, "old", &study, &found, err, sizeof err) == 0 && found &&
          study.seed == 5 && study.state == ST_STUDY_SUCCEEDED);
    st_study_clear(&study);
    return s;
}

/* Closes the migrated store s, then checks that path opens again (a migrated file is
 * not migrated twice) and that a new store opens at fresh, whose schema the test
 * compares the migrated one with. */
static inline void reopen_beside_fresh(st_store *s, const char *path, const char *fresh) {
    char err[512] = "";
    st_close(s);
    s = NULL;
    CHECK_MSG(st_open(path, &s, err, sizeof err) == 0, "%s: %s", path, err);
    st_close(s);
    s = NULL;
    CHECK_MSG(st_open(fresh, &s, err, sizeof err) == 0 && s, "%s: %s", fresh, err);
    st_close(s);
}

#endif
