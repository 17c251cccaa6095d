/*
 * store.c — every study in one SQLite file (see store.h; schema and rules: docs/store.md).
 *
 * One connection per st_store, opened NOMUTEX: a store belongs to one thread at a time.
 * The file is in WAL mode with synchronous=FULL and a 10 s busy timeout, so a `run`, an
 * `ask` and a dashboard can share it and a commit survives the process being killed.
 * Every write runs in a transaction: its own BEGIN IMMEDIATE ... COMMIT, or a SAVEPOINT
 * inside the caller's (st_transaction), so writes nest and a failed one undoes only
 * itself. Statements are prepared on first use and cached in the store, and each is
 * reset (bindings cleared) as soon as its rows are read. SQLite's error text is copied
 * into the caller's buffer at once, prefixed by the file and the operation.
 */
#include "tuner/store.h"

#include "common/rng.h"
#include "common/status.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define ST_SCHEMA_VERSION 7      /* the newest schema this build reads and writes */
#define ST_BUSY_TIMEOUT_MS 10000 /* how long a statement waits for another's lock */

/* The schema, version 7 (docs/store.md describes every column; version 2 added the
 * change sequences the dashboard follows: docs/dashboard.md, "Change detection";
 * version 3 the executor's handle of a trial's job, so that a resumed tuner
 * re-attaches to its Slurm jobs; version 4 the attempt of each measurement, which run
 * of its replica wrote it; version 5 how a replica's run ended, as data; version 6 a
 * trial's value of every metric of a study with several; version 7 a measurement's key
 * that is its whole record, not its timestamp). A new file gets this directly; an older file gets
 * the migrations from its version on, and the result is the same schema
 * (tests/tuner/test_dashboard.c compares them). */
static const char schema_sql[] =
    "CREATE TABLE meta (\n"
    "  key TEXT PRIMARY KEY,\n"
    "  value TEXT);\n"
    "CREATE TABLE studies (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  name TEXT UNIQUE NOT NULL,\n"
    "  spec TEXT NOT NULL,\n"
    "  state TEXT NOT NULL,\n"
    "  seed INTEGER NOT NULL,\n"
    "  created REAL,\n"
    "  updated REAL,\n"
    "  error TEXT);\n"
    "CREATE TABLE trials (\n"
    "  study_id INTEGER NOT NULL REFERENCES studies(id),\n"
    "  number INTEGER NOT NULL,\n"
    "  params TEXT NOT NULL,\n"
    "  state TEXT NOT NULL,\n"
    "  objective REAL,\n"
    "  created REAL,\n"
    "  started REAL,\n"
    "  finished REAL,\n"
    "  attempts INTEGER NOT NULL DEFAULT 0,\n"
    "  restarts INTEGER NOT NULL DEFAULT 0,\n"
    "  error TEXT,\n"
    "  changed INTEGER NOT NULL DEFAULT 0,\n"
    "  executor_job TEXT,\n"
    "  objectives TEXT,\n"
    "  PRIMARY KEY (study_id, number)) WITHOUT ROWID;\n"
    "CREATE INDEX trials_by_state ON trials(study_id, state);\n"
    "CREATE INDEX trials_by_change ON trials(study_id, changed);\n"
    "CREATE TABLE measurements (\n"
    "  study_id INTEGER NOT NULL,\n"
    "  trial INTEGER NOT NULL,\n"
    "  replica TEXT NOT NULL,\n"
    "  step INTEGER NOT NULL,\n"
    "  timestamp REAL NOT NULL,\n"
    "  metrics TEXT NOT NULL,\n"
    "  seq INTEGER NOT NULL DEFAULT 0,\n"
    "  attempt INTEGER,\n"
    "  PRIMARY KEY (study_id, trial, replica, timestamp, step, metrics),\n"
    "  FOREIGN KEY (study_id, trial) REFERENCES trials(study_id, number)) WITHOUT ROWID;\n"
    "CREATE INDEX measurements_by_seq ON measurements(study_id, seq);\n"
    "CREATE INDEX measurements_by_step ON measurements(study_id, trial, step);\n"
    "CREATE TABLE events (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  study_id INTEGER NOT NULL REFERENCES studies(id),\n"
    "  trial INTEGER NOT NULL,\n"
    "  time REAL NOT NULL,\n"
    "  replica TEXT,\n"
    "  kind TEXT NOT NULL,\n"
    "  detail TEXT,\n"
    "  exit_code INTEGER,\n"
    "  signal INTEGER);\n"
    "CREATE INDEX events_by_trial ON events(study_id, trial, time);\n"
    "INSERT INTO meta (key, value) VALUES ('schema_version', '7');\n";

/* migrations[v] turns a version v file into version v + 1; st_open runs them in order,
 * in one IMMEDIATE transaction with the update of schema_version. Each keeps every row:
 * columns are added, and the one key change (6 -> 7) rebuilds its table with all rows. */
static const char *const migrations[ST_SCHEMA_VERSION] = {
    [1] = /* 1 -> 2: the change sequences of the dashboard. Rows written before keep 0:
           * they are older than any client's starting point. */
    "ALTER TABLE trials ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;\n"
    "CREATE INDEX trials_by_change ON trials(study_id, changed);\n"
    "ALTER TABLE measurements ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;\n"
    "CREATE INDEX measurements_by_seq ON measurements(study_id, seq);\n"
    "CREATE INDEX measurements_by_step ON measurements(study_id, trial, step);\n",
    [2] = /* 2 -> 3: the executor's handle of a trial's job (a Slurm job id) */
    "ALTER TABLE trials ADD COLUMN executor_job TEXT;\n",
    [3] = /* 3 -> 4: the attempt of a measurement. Rows written before get NULL: no
           * version 3 file says which run of a replica wrote a row (docs/store.md). */
    "ALTER TABLE measurements ADD COLUMN attempt INTEGER;\n",
    [4] = /* 4 -> 5: how a replica's run ended, as data. Older `exited` rows get it
           * from their detail, which version 4 wrote as "exit status N" or "killed by
           * signal N (NAME)"; other details leave both NULL (not known). */
    "ALTER TABLE events ADD COLUMN exit_code INTEGER;\n"
    "ALTER TABLE events ADD COLUMN signal INTEGER;\n"
    "UPDATE events SET exit_code = CAST(substr(detail, 13) AS INTEGER) "
    "WHERE kind = 'exited' AND detail GLOB 'exit status [0-9]*';\n"
    "UPDATE events SET signal = CAST(substr(detail, 18) AS INTEGER) "
    "WHERE kind = 'exited' AND detail GLOB 'killed by signal [0-9]*';\n",
    [5] = /* 5 -> 6: a trial's value of every metric of a study with several (a JSON
           * array in the spec's order). Rows written before get NULL: their studies
           * have one metric, whose value is `objective`. */
    "ALTER TABLE trials ADD COLUMN objectives TEXT;\n",
    [6] = /* 6 -> 7: a measurement is its record, not its timestamp: two records of a
           * replica with one timestamp and other contents (whole-second timestamps,
           * or ordinals that a resumed reader counts again) are both kept, where the
           * second was dropped. A rebuild (a key cannot be altered); every row kept. */
    "CREATE TABLE measurements_v7 (\n"
    "  study_id INTEGER NOT NULL,\n"
    "  trial INTEGER NOT NULL,\n"
    "  replica TEXT NOT NULL,\n"
    "  step INTEGER NOT NULL,\n"
    "  timestamp REAL NOT NULL,\n"
    "  metrics TEXT NOT NULL,\n"
    "  seq INTEGER NOT NULL DEFAULT 0,\n"
    "  attempt INTEGER,\n"
    "  PRIMARY KEY (study_id, trial, replica, timestamp, step, metrics),\n"
    "  FOREIGN KEY (study_id, trial) REFERENCES trials(study_id, number)) WITHOUT ROWID;\n"
    "INSERT INTO measurements_v7 (study_id, trial, replica, step, timestamp, metrics, seq, "
    "attempt) SELECT study_id, trial, replica, step, timestamp, metrics, seq, attempt FROM "
    "measurements;\n"
    "DROP TABLE measurements;\n"
    "ALTER TABLE measurements_v7 RENAME TO measurements;\n"
    "CREATE INDEX measurements_by_seq ON measurements(study_id, seq);\n"
    "CREATE INDEX measurements_by_step ON measurements(study_id, trial, step);\n",
};

/* The cached statements, one per query the store runs. */
enum query {
    Q_BEGIN,
    Q_BEGIN_READ,
    Q_COMMIT,
    Q_ROLLBACK,
    Q_SAVEPOINT,
    Q_RELEASE,
    Q_ROLLBACK_TO,
    Q_STUDY_INSERT,
    Q_STUDY_GET,
    Q_STUDY_LIST,
    Q_STUDY_SET_STATE,
    Q_STUDY_TOUCH,
    Q_TRIAL_NEXT,
    Q_TRIAL_INSERT,
    Q_TRIAL_GET,
    Q_TRIAL_LIST,
    Q_TRIAL_UPDATE,
    Q_TRIAL_COUNTS,
    Q_MEASUREMENT_INSERT,
    Q_MEASUREMENT_LIST,
    Q_EVENT_INSERT,
    Q_EVENT_LIST_TRIAL,
    Q_EVENT_LIST_STUDY,
    Q_STUDY_GET_ID,
    Q_STUDY_CURSOR,
    Q_TRIAL_CHANGES,
    Q_TRIAL_BEST_MAX,
    Q_TRIAL_BEST_MIN,
    Q_TRIAL_SPAN,
    Q_TRIAL_OUTCOMES,
    Q_TRIAL_STATES,
    Q_TRIAL_FILTER_COUNT,
    Q_TRIAL_PAGE,                   /* + enum st_sort: one statement per order */
    Q_POINTS_SINCE = Q_TRIAL_PAGE + ST_SORT_COUNT,
    Q_POINTS_ALL,
    Q_COUNT
};

#define STUDY_COLUMNS "id, name, spec, state, seed, created, updated, error"
#define TRIAL_COLUMNS                                                                   \
    "study_id, number, params, state, objective, created, started, finished, attempts, " \
    "restarts, error, changed, executor_job, objectives"
/* The next number of the study's trial change sequence (?1 is the study). */
#define NEXT_CHANGE "(SELECT COALESCE(MAX(changed), 0) + 1 FROM trials WHERE study_id = ?1)"
/* TRIAL_COLUMNS and the highest step of the trial's measurements (index
 * measurements_by_step), for the dashboard's trial lists. */
#define TRIAL_COLUMNS_STEP                                                               \
    TRIAL_COLUMNS ", (SELECT MAX(m.step) FROM measurements m "                          \
                  "WHERE m.study_id = trials.study_id AND m.trial = trials.number)"
/* The bit of a trial's state in a st_trial_page state mask (1 << st_trial_state). */
#define STATE_BIT                                                                        \
    "(CASE state WHEN 'PENDING' THEN 1 WHEN 'RUNNING' THEN 2 WHEN 'SUCCEEDED' THEN 4 "   \
    "WHEN 'FAILED' THEN 8 WHEN 'STOPPED' THEN 16 WHEN 'CANCELLED' THEN 32 ELSE 0 END)"
/* Trials of study ?1 in the state mask ?2 (0: all). */
#define PAGE_WHERE " FROM trials WHERE study_id = ?1 AND (?2 = 0 OR (?2 & " STATE_BIT ") != 0)"
#define PAGE_SQL(order) "SELECT " TRIAL_COLUMNS_STEP PAGE_WHERE " ORDER BY " order " LIMIT ?3 OFFSET ?4"
/* A trial's duration for sorting (?5 is now): NULL before it started. */
#define DURATION "(CASE WHEN started IS NULL THEN NULL ELSE COALESCE(finished, ?5) - started END)"
/* The lifecycle order of states for sort=state. */
#define STATE_RANK                                                                       \
    "(CASE state WHEN 'RUNNING' THEN 0 WHEN 'PENDING' THEN 1 WHEN 'SUCCEEDED' THEN 2 "   \
    "WHEN 'STOPPED' THEN 3 WHEN 'FAILED' THEN 4 WHEN 'CANCELLED' THEN 5 ELSE 6 END)"
/* A measurement's value of metric ?2 when it is a number (json_each: any key works,
 * quotes included, which a json_extract path cannot express). */
#define POINT_VALUE                                                                      \
    "(SELECT j.value FROM json_each(m.metrics) j WHERE j.key = ?2 "                      \
    "AND j.type IN ('integer', 'real'))"

static const char *const query_sql[Q_COUNT] = {
    [Q_BEGIN] = "BEGIN IMMEDIATE",
    [Q_BEGIN_READ] = "BEGIN DEFERRED",
    [Q_COMMIT] = "COMMIT",
    [Q_ROLLBACK] = "ROLLBACK",
    [Q_SAVEPOINT] = "SAVEPOINT st_nested",
    [Q_RELEASE] = "RELEASE st_nested",
    [Q_ROLLBACK_TO] = "ROLLBACK TO st_nested",
    [Q_STUDY_INSERT] = "INSERT INTO studies (name, spec, state, seed, created, updated) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
    [Q_STUDY_GET] = "SELECT " STUDY_COLUMNS " FROM studies WHERE name = ?1",
    [Q_STUDY_LIST] = "SELECT " STUDY_COLUMNS " FROM studies ORDER BY id",
    [Q_STUDY_SET_STATE] = "UPDATE studies SET state = ?2, error = ?3, updated = ?4 WHERE id = ?1",
    [Q_STUDY_TOUCH] = "UPDATE studies SET updated = ?2 WHERE id = ?1",
    [Q_TRIAL_NEXT] = "SELECT COALESCE(MAX(number), 0) + 1 FROM trials WHERE study_id = ?1",
    [Q_TRIAL_INSERT] = "INSERT INTO trials (study_id, number, params, state, created, started, "
                       "changed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, " NEXT_CHANGE ")",
    [Q_TRIAL_GET] = "SELECT " TRIAL_COLUMNS " FROM trials WHERE study_id = ?1 AND number = ?2",
    [Q_TRIAL_LIST] = "SELECT " TRIAL_COLUMNS " FROM trials WHERE study_id = ?1 ORDER BY number",
    [Q_TRIAL_UPDATE] = "UPDATE trials SET state = ?3, objective = ?4, started = ?5, "
                       "finished = ?6, attempts = ?7, restarts = ?8, error = ?9, "
                       "executor_job = ?10, objectives = ?11, "
                       "changed = " NEXT_CHANGE " WHERE study_id = ?1 AND number = ?2",
    [Q_TRIAL_COUNTS] = "SELECT state, COUNT(*) FROM trials WHERE study_id = ?1 GROUP BY state",
    /* ON CONFLICT names the key, so only a duplicate record is skipped; a missing trial
     * (foreign key) is still an error, which INSERT OR IGNORE would not promise. */
    [Q_MEASUREMENT_INSERT] = "INSERT INTO measurements (study_id, trial, replica, step, "
                             "timestamp, metrics, attempt, seq) VALUES (?1, ?2, ?3, ?4, ?5, "
                             "?6, ?7, (SELECT COALESCE(MAX(seq), 0) + 1 FROM measurements "
                             "WHERE study_id = ?1)) "
                             "ON CONFLICT (study_id, trial, replica, timestamp, step, "
                             "metrics) DO NOTHING",
    /* by arrival (seq) within a step and replica; rows a version 1 store wrote all have
     * seq 0 and fall back to their timestamps */
    [Q_MEASUREMENT_LIST] = "SELECT step, replica, metrics, timestamp, attempt FROM "
                           "measurements WHERE study_id = ?1 AND trial = ?2 "
                           "ORDER BY step, replica, seq, timestamp",
    [Q_EVENT_INSERT] = "INSERT INTO events (study_id, trial, time, replica, kind, detail, "
                       "exit_code, signal) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [Q_EVENT_LIST_TRIAL] = "SELECT time, replica, kind, detail, exit_code, signal FROM events "
                           "WHERE study_id = ?1 AND trial = ?2 ORDER BY time, id",
    [Q_EVENT_LIST_STUDY] = "SELECT time, replica, kind, detail, exit_code, signal FROM events "
                           "WHERE study_id = ?1 ORDER BY time, id",
    [Q_STUDY_GET_ID] = "SELECT " STUDY_COLUMNS " FROM studies WHERE id = ?1",
    [Q_STUDY_CURSOR] = "SELECT (SELECT COALESCE(MAX(changed), 0) FROM trials WHERE study_id = ?1), "
                       "(SELECT COALESCE(MAX(seq), 0) FROM measurements WHERE study_id = ?1)",
    [Q_TRIAL_CHANGES] = "SELECT " TRIAL_COLUMNS_STEP " FROM trials WHERE study_id = ?1 "
                        "AND changed > ?2 ORDER BY changed LIMIT ?3",
    [Q_TRIAL_BEST_MAX] = "SELECT number, objective FROM trials WHERE study_id = ?1 AND "
                         "state = 'SUCCEEDED' AND objective IS NOT NULL "
                         "ORDER BY objective DESC, number LIMIT 1",
    [Q_TRIAL_BEST_MIN] = "SELECT number, objective FROM trials WHERE study_id = ?1 AND "
                         "state = 'SUCCEEDED' AND objective IS NOT NULL "
                         "ORDER BY objective, number LIMIT 1",
    [Q_TRIAL_SPAN] = "SELECT MIN(started), MAX(finished), "
                     "COALESCE(SUM(state IN ('RUNNING', 'PENDING')), 0) "
                     "FROM trials WHERE study_id = ?1",
    [Q_TRIAL_OUTCOMES] = "SELECT number, objective FROM trials WHERE study_id = ?1 AND "
                         "state = 'SUCCEEDED' AND objective IS NOT NULL ORDER BY number",
    [Q_TRIAL_STATES] = "SELECT number, state FROM trials WHERE study_id = ?1 ORDER BY number",
    [Q_TRIAL_FILTER_COUNT] = "SELECT COUNT(*)" PAGE_WHERE,
    [Q_TRIAL_PAGE + ST_SORT_NUMBER] = PAGE_SQL("number"),
    [Q_TRIAL_PAGE + ST_SORT_NUMBER_DESC] = PAGE_SQL("number DESC"),
    [Q_TRIAL_PAGE + ST_SORT_VALUE] = PAGE_SQL("objective IS NULL, objective, number"),
    [Q_TRIAL_PAGE + ST_SORT_VALUE_DESC] = PAGE_SQL("objective IS NULL, objective DESC, number"),
    [Q_TRIAL_PAGE + ST_SORT_DURATION] = PAGE_SQL(DURATION " IS NULL, " DURATION ", number"),
    [Q_TRIAL_PAGE + ST_SORT_DURATION_DESC] =
        PAGE_SQL(DURATION " IS NULL, " DURATION " DESC, number"),
    [Q_TRIAL_PAGE + ST_SORT_STATE] = PAGE_SQL(STATE_RANK ", number"),
    [Q_TRIAL_PAGE + ST_SORT_STATE_DESC] = PAGE_SQL(STATE_RANK " DESC, number"),
    [Q_POINTS_SINCE] = "SELECT m.trial, m.step, m.replica, m.timestamp, m.seq, " POINT_VALUE
                       ", m.attempt FROM measurements m WHERE m.study_id = ?1 AND m.seq > ?3 "
                       "ORDER BY m.seq LIMIT ?4",
    [Q_POINTS_ALL] = "SELECT m.trial, m.step, m.replica, m.timestamp, m.seq, " POINT_VALUE
                     ", m.attempt FROM measurements m WHERE m.study_id = ?1 "
                     "ORDER BY m.trial, m.replica, m.timestamp",
};

struct st_store {
    sqlite3 *db;                  /* the one connection; NOMUTEX, so one thread at a time */
    char *path;                   /* as given to st_open, for messages */
    int depth;                    /* open transactions: 0 none, 1 BEGIN, n > 1 savepoints */
    int readonly;                 /* opened by st_open_read's fallback: nothing is written */
    char *note;                   /* a warning for the user (st_note), or NULL */
    sqlite3_stmt *stmt[Q_COUNT];  /* prepared on first use; reset after each use */
};

/* Why the store at path cannot be written, into buf ("" when nothing says so): a
 * read-only file system, or no write access to the file or to its folder (SQLite
 * creates its -wal and -shm files there). */
#define ST_DISK_FULL "the disk that holds it is full"

/* The error of a write that a full disk refused, before or while it opened. */
static int full_disk_error(const char *path, char *err, size_t errlen) {
    return tn_error(err, errlen, TN_EIO,
                    "cannot write the store %s: %s; hint: free space there and run the "
                    "command again (what was stored is kept; a study goes on with `tuner "
                    "resume`); list, show, trials, best, logs and serve can still read it",
                    path, ST_DISK_FULL);
}

/* Where SQLite keeps the store at path and its -wal, -shm and -journal files: the file a
 * symbolic link at path leads to, in that file's folder (path itself when it does not
 * exist yet). Yours to free. */
static char *store_file(const char *path) {
    char *real = realpath(path, NULL);
    return real ? real : tn_xstrdup(path);
}

/* Whether the store at path, or its -wal or -journal file, has reached the file-size
 * limit (ulimit -f, RLIMIT_FSIZE): a write past it fails with EFBIG, which SQLite
 * reports as a plain I/O error (the errno it keeps is that of a later call). Within a
 * page or two of the limit counts: the write that crossed it stopped there. */
static int at_file_size_limit(const char *given) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
    static const char *const suffix[] = {"", "-wal", "-journal"};
    char *path = store_file(given);
    int near = 0;
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0] && !near; i++) {
        char *p = tn_xasprintf("%s%s", path, suffix[i]);
        struct stat sb;
        near = stat(p, &sb) == 0 && (rlim_t)sb.st_size + 2 * 65536 >= rl.rlim_cur;
        free(p);
    }
    free(path);
    return near;
}

/* Why the store at given cannot be written ("" when nothing says so): its file system,
 * its file or the folder SQLite's -wal and -shm files go in, that of the file a symbolic
 * link leads to. */
static const char *why_unwritable(const char *given, char *buf, size_t len) {
    char *path = store_file(given);
    const char *slash = strrchr(path, '/');
    char *dir = slash ? tn_xasprintf("%.*s", (int)(slash == path ? 1 : slash - path), path)
                      : tn_xstrdup(".");
    struct statvfs fs;
    buf[0] = '\0';
    int have_fs = statvfs(dir, &fs) == 0;
    if (have_fs && (fs.f_flag & ST_RDONLY))
        snprintf(buf, len, "it is on a read-only file system");
    else if (have_fs && (uint64_t)fs.f_bavail * fs.f_frsize < 64 * 1024) /* not even a -shm */
        snprintf(buf, len, "%s", ST_DISK_FULL);
    else if (access(path, W_OK) != 0 && errno != ENOENT)
        snprintf(buf, len, "you cannot write it: %s", strerror(errno));
    else if (access(dir, W_OK) != 0)
        snprintf(buf, len, "you cannot write its folder %s (for SQLite's -wal and -shm "
                 "files): %s", dir, strerror(errno));
    free(dir);
    free(path);
    return buf;
}

const char *const st_study_state_names[ST_STUDY_NSTATES] = {
    [ST_STUDY_CREATED] = "CREATED",     [ST_STUDY_RUNNING] = "RUNNING",
    [ST_STUDY_STOPPED] = "STOPPED",     [ST_STUDY_SUCCEEDED] = "SUCCEEDED",
    [ST_STUDY_FAILED] = "FAILED",       [ST_STUDY_CANCELLED] = "CANCELLED"};
const char *const st_trial_state_names[ST_TRIAL_NSTATES] = {
    [ST_TRIAL_PENDING] = "PENDING",     [ST_TRIAL_RUNNING] = "RUNNING",
    [ST_TRIAL_SUCCEEDED] = "SUCCEEDED", [ST_TRIAL_FAILED] = "FAILED",
    [ST_TRIAL_STOPPED] = "STOPPED",     [ST_TRIAL_CANCELLED] = "CANCELLED"};

const char *st_study_state_name(st_study_state state) {
    return (unsigned)state < ST_STUDY_NSTATES ? st_study_state_names[state] : "(no state)";
}

const char *st_trial_state_name(st_trial_state state) {
    return (unsigned)state < ST_TRIAL_NSTATES ? st_trial_state_names[state] : "(no state)";
}

/* The index of name in names (n entries), or -1. */
static int name_index(const char *const *names, int n, const char *name) {
    for (int i = 0; name && i < n; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

int st_study_state_parse(const char *name) {
    return name_index(st_study_state_names, ST_STUDY_NSTATES, name);
}

int st_trial_state_parse(const char *name) {
    return name_index(st_trial_state_names, ST_TRIAL_NSTATES, name);
}

int st_study_state_final(st_study_state state) {
    return state == ST_STUDY_SUCCEEDED || state == ST_STUDY_FAILED ||
           state == ST_STUDY_CANCELLED;
}

int st_trial_state_final(st_trial_state state) {
    return state != ST_TRIAL_PENDING && state != ST_TRIAL_RUNNING;
}

/* Wall-clock seconds since the epoch. */
static double now(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (double)time(NULL);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}


/* ---------------------------------------------------------------------------------
 * Errors and statements
 * --------------------------------------------------------------------------------- */

/* Formats "PATH: OP: SQLITE MESSAGE" into err, copying sqlite3_errmsg at once, and
 * returns the TN code for the SQLite code rc. */
static int fail(st_store *s, int rc, const char *op, char *err, size_t errlen) {
    const char *msg = sqlite3_errmsg(s->db);
    switch (rc & 0xff) {
    case SQLITE_NOTADB:
        return tn_error(err, errlen, TN_EFORMAT, "%s is not a tuner store (%s)", s->path, msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return tn_error(err, errlen, TN_EIO,
                        "%s: %s: %s (another process kept the store locked for more than "
                        "%d s; is a long command holding it?)",
                        s->path, op, msg, ST_BUSY_TIMEOUT_MS / 1000);
    case SQLITE_CORRUPT:
        return tn_error(err, errlen, TN_ECORRUPT,
                        "%s: %s: %s; hint: the file is damaged: put back a copy, or save "
                        "what it still holds with `sqlite3 %s .recover | sqlite3 NEW.db`",
                        s->path, op, msg, s->path);
    case SQLITE_FULL:
    full:
        return tn_error(err, errlen, TN_EIO,
                        "%s: %s: %s; hint: free space on the disk that holds it (what was "
                        "stored before is kept), then run the command again (a study goes "
                        "on with `tuner resume`)",
                        s->path, op, msg);
    case SQLITE_CONSTRAINT:
        return tn_error(err, errlen, TN_EINVAL, "%s: %s: %s", s->path, op, msg);
    case SQLITE_READONLY: {
        char why[512];
        if (!strcmp(why_unwritable(s->path, why, sizeof why), ST_DISK_FULL))
            return full_disk_error(s->path, err, errlen); /* opened read-only for that */
        return tn_error(err, errlen, TN_EIO,
                        "%s: %s needs to write the store, which is read-only here (%s); run "
                        "it where the store can be written",
                        s->path, op, why[0] ? why : msg);
    }
    default:
        if (sqlite3_system_errno(s->db) == ENOSPC) goto full; /* an I/O error of a full disk */
        if ((rc & 0xff) == SQLITE_IOERR &&
            (sqlite3_system_errno(s->db) == EFBIG || at_file_size_limit(s->path)))
            return tn_error(err, errlen, TN_EIO,
                            "%s: %s: %s (the store reached the file-size limit, ulimit -f); "
                            "hint: raise the limit (ulimit -f unlimited), then run the command "
                            "again (what was stored before is kept; a study goes on with "
                            "`tuner resume`)",
                            s->path, op, msg);
        return tn_error(err, errlen, TN_EIO, "%s: %s: %s", s->path, op, msg);
    }
}

/* Resets a statement after use and clears its bindings. sqlite3_reset repeats the
 * error of the last step, which the caller has already handled; clear_bindings
 * always succeeds. */
static void done(sqlite3_stmt *st) {
    (void)sqlite3_reset(st);
    (void)sqlite3_clear_bindings(st);
}

/* The cached statement q, prepared on first use: 0, or an error. */
static int prep(st_store *s, enum query q, sqlite3_stmt **out, const char *op, char *err,
                size_t errlen) {
    if (!s->stmt[q]) {
        int rc = sqlite3_prepare_v3(s->db, query_sql[q], -1, SQLITE_PREPARE_PERSISTENT,
                                    &s->stmt[q], NULL);
        if (rc != SQLITE_OK) return fail(s, rc, op, err, errlen);
    }
    *out = s->stmt[q];
    return 0;
}

/* Binds ?1, ?2, ... by a type string and returns the first SQLite error, if any:
 *   'i' int64_t   't' const char * (NULL binds NULL)   'r' double
 *   'z' double, NULL when 0 (a time not yet set)   'n' double, NULL when NaN
 *   'p' int64_t, NULL when 0 or below   'N' int64_t, NULL when below 0 */
static int vbind(sqlite3_stmt *st, const char *types, va_list ap) {
    int rc = SQLITE_OK;
    for (int i = 0; types[i] && rc == SQLITE_OK; i++) {
        int idx = i + 1;
        switch (types[i]) {
        case 'i': rc = sqlite3_bind_int64(st, idx, va_arg(ap, int64_t)); break;
        case 't': {
            const char *t = va_arg(ap, const char *);
            rc = t ? sqlite3_bind_text(st, idx, t, -1, SQLITE_STATIC) : sqlite3_bind_null(st, idx);
            break;
        }
        case 'r': rc = sqlite3_bind_double(st, idx, va_arg(ap, double)); break;
        case 'N': { /* a count or code that may be 0, or NULL when negative */
            int64_t v = va_arg(ap, int64_t);
            rc = v >= 0 ? sqlite3_bind_int64(st, idx, v) : sqlite3_bind_null(st, idx);
            break;
        }
        case 'p': { /* a positive integer, or NULL for 0 and below (not known) */
            int64_t v = va_arg(ap, int64_t);
            rc = v > 0 ? sqlite3_bind_int64(st, idx, v) : sqlite3_bind_null(st, idx);
            break;
        }
        case 'z': {
            double v = va_arg(ap, double);
            rc = v != 0 ? sqlite3_bind_double(st, idx, v) : sqlite3_bind_null(st, idx);
            break;
        }
        case 'n': {
            double v = va_arg(ap, double);
            rc = isnan(v) ? sqlite3_bind_null(st, idx) : sqlite3_bind_double(st, idx, v);
            break;
        }
        default: assert(!"bad bind type"); rc = SQLITE_MISUSE;
        }
    }
    return rc;
}

static int bind(sqlite3_stmt *st, const char *types, ...) {
    va_list ap;
    va_start(ap, types);
    int rc = vbind(st, types, ap);
    va_end(ap);
    return rc;
}

/* Runs a bound statement that returns no rows (brc: the result of binding) and resets
 * it. 0, or an error already formatted; *xrc (may be NULL) gets SQLite's extended code,
 * so a caller can replace the message for a constraint it expects. */
static int step_done(st_store *s, sqlite3_stmt *st, int brc, const char *op, char *err,
                     size_t errlen, int *xrc) {
    int rc = brc == SQLITE_OK ? sqlite3_step(st) : brc;
    if (xrc) *xrc = rc;
    int ret = rc == SQLITE_DONE ? 0 : fail(s, rc, op, err, errlen);
    done(st);
    return ret;
}

/* Runs the cached statement q, which returns no rows, with ?1, ?2, ... bound to the
 * values of `types` (as bind's): 0, or a negative code with err; *xrc (NULL: not
 * wanted) gets the step's (extended) result, to tell a failed constraint. */
static int write_q(st_store *s, enum query q, const char *op, int *xrc, char *err,
                   size_t errlen, const char *types, ...) {
    sqlite3_stmt *st = NULL;
    int rc = prep(s, q, &st, op, err, errlen);
    if (xrc) *xrc = SQLITE_OK;
    if (rc) return rc;
    va_list ap;
    va_start(ap, types);
    int brc = vbind(st, types, ap);
    va_end(ap);
    return step_done(s, st, brc, op, err, errlen, xrc);
}

/* Runs the cached statement q, which takes no parameters and returns no rows. */
static int exec_q(st_store *s, enum query q, const char *op, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    int rc = prep(s, q, &st, op, err, errlen);
    return rc ? rc : step_done(s, st, SQLITE_OK, op, err, errlen, NULL);
}

/* A copy of a text column, NULL for SQL NULL. */
static char *col_text(sqlite3_stmt *st, int i) {
    if (sqlite3_column_type(st, i) == SQLITE_NULL) return NULL;
    const unsigned char *t = sqlite3_column_text(st, i);
    if (!t) tn_out_of_memory("the SQLite store"); /* the only reason a non-NULL value has no text */
    return tn_xstrdup((const char *)t);
}

/* A copy of a NOT NULL text column ("" if a hand-edited file holds NULL). */
static char *col_text_nn(sqlite3_stmt *st, int i) {
    char *t = col_text(st, i);
    return t ? t : tn_xstrdup("");
}

/* A REAL column, 0 for NULL. */
static double col_real(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? 0 : sqlite3_column_double(st, i);
}

/* list (of *cap elements of size elem), grown if needed to hold n + 1. */
static void *grow(void *list, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return list;
    *cap = *cap ? 2 * *cap : 16;
    return tn_xrealloc(list, *cap * elem);
}

/* Reads st's current row into row (a zeroed st_study, st_trial, ..., or what the
 * caller passes along): 0, or a negative TN_E* code with err when the row holds what
 * the tuner never writes (a store changed by other means). */
typedef int (*row_reader)(sqlite3_stmt *st, void *row, char *err, size_t errlen);

/* Steps st, whose binding returned brc, to its end, reading each row with fn(st, arg)
 * until fn fails; finalises st. 0, fn's code, or a negative code with err. */
static int each_row(st_store *s, sqlite3_stmt *st, int brc, const char *op, row_reader fn,
                    void *arg, char *err, size_t errlen) {
    int src = brc, rc = 0;
    if (src == SQLITE_OK)
        while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW) rc = fn(st, arg, err, errlen);
    if (!rc && src != SQLITE_DONE) rc = fail(s, src, op, err, errlen);
    done(st);
    return rc;
}

/* What a list of rows is made of: the element's size, how one is read, and how what a
 * read one holds is freed (on a part-read one too). */
typedef struct row_kind {
    size_t size;
    row_reader read;
    void (*clear)(void *row);
} row_kind;

/* Frees a list of n rows of the given kind (NULL: nothing). */
static void free_rows(void *list, size_t n, const row_kind *kind) {
    if (!list) return;
    for (size_t i = 0; i < n; i++) kind->clear((char *)list + i * kind->size);
    free(list);
}

/* A list read_rows is filling. */
typedef struct row_list {
    const row_kind *kind;
    char *rows;
    size_t cap, n;
} row_list;

static int list_row(sqlite3_stmt *st, void *arg, char *err, size_t errlen) {
    row_list *l = arg;
    l->rows = grow(l->rows, &l->cap, l->n, l->kind->size);
    void *row = l->rows + l->n * l->kind->size;
    memset(row, 0, l->kind->size);
    l->n++; /* even when it fails: what it read is freed */
    return l->kind->read(st, row, err, errlen);
}

/* Steps st, whose binding returned brc, to its end, reading each row into a new element
 * of a list of the given kind; finalises st. Returns the list (NULL for none), *n its
 * rows, and *rc 0; on an error NULL, *n 0 and *rc a negative code with err, what was
 * read freed. */
static void *read_rows(st_store *s, sqlite3_stmt *st, int brc, const char *op,
                       const row_kind *kind, size_t *n, int *rc, char *err, size_t errlen) {
    row_list l = {.kind = kind};
    if ((*rc = each_row(s, st, brc, op, list_row, &l, err, errlen))) {
        free_rows(l.rows, l.n, kind);
        l.rows = NULL;
        l.n = 0;
    }
    *n = l.n;
    return l.rows;
}

/* Steps a bound statement (brc: the result of binding) that returns one row (an
 * aggregate's): 0 with the row to read (the caller then resets it with done), or a
 * negative code with err and the statement reset (no row is an error too). */
static int step_row(st_store *s, sqlite3_stmt *st, int brc, const char *op, char *err,
                    size_t errlen) {
    int src = brc == SQLITE_OK ? sqlite3_step(st) : brc;
    if (src == SQLITE_ROW) return 0;
    int rc = fail(s, src, op, err, errlen);
    done(st);
    return rc;
}

/* Steps a bound statement (brc: the result of binding) that returns at most one row,
 * reads the row into row with fn, and resets the statement: 0 with *found (whether
 * there was a row), or a negative code with err. */
static int read_one(st_store *s, sqlite3_stmt *st, int brc, const char *op, row_reader fn,
                    void *row, int *found, char *err, size_t errlen) {
    int src = brc, rc = 0;
    *found = 0;
    if (src == SQLITE_OK) src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
        *found = 1;
        rc = fn(st, row, err, errlen);
    } else if (src != SQLITE_DONE) {
        rc = fail(s, src, op, err, errlen);
    }
    done(st);
    return rc;
}

/* ---------------------------------------------------------------------------------
 * Transactions: BEGIN IMMEDIATE at the outside, SAVEPOINTs inside
 * --------------------------------------------------------------------------------- */

/* The message for a write attempted after SQLite rolled the whole transaction back
 * (it does so on some errors: disk full, I/O, out of memory). */
static int aborted(st_store *s, const char *op, char *err, size_t errlen) {
    return tn_error(err, errlen, TN_EIO,
                    "%s: %s: the enclosing transaction was rolled back by an earlier error",
                    s->path, op);
}

static int tx_begin(st_store *s, const char *op, char *err, size_t errlen) {
    if (s->depth > 0 && sqlite3_get_autocommit(s->db)) return aborted(s, op, err, errlen);
    assert(s->depth > 0 || sqlite3_get_autocommit(s->db));
    int rc = exec_q(s, s->depth == 0 ? Q_BEGIN : Q_SAVEPOINT, op, err, errlen);
    if (rc == 0) s->depth++;
    return rc;
}

/* Undoes the innermost transaction. Errors go to err only when it holds no message
 * yet, so the one that caused the rollback is kept. */
static void tx_rollback(st_store *s, char *err, size_t errlen) {
    assert(s->depth > 0);
    char msg[512] = "";
    if (!sqlite3_get_autocommit(s->db)) { /* else SQLite already rolled everything back */
        if (s->depth == 1) {
            exec_q(s, Q_ROLLBACK, "rolling back", msg, sizeof msg);
        } else if (exec_q(s, Q_ROLLBACK_TO, "rolling back", msg, sizeof msg) == 0) {
            exec_q(s, Q_RELEASE, "rolling back", msg, sizeof msg);
        }
    }
    s->depth--;
    if (msg[0] && err && errlen > 0 && err[0] == '\0') snprintf(err, errlen, "%s", msg);
}

static int tx_commit(st_store *s, const char *op, char *err, size_t errlen) {
    assert(s->depth > 0);
    if (sqlite3_get_autocommit(s->db)) {
        s->depth--;
        return aborted(s, op, err, errlen);
    }
    int rc = exec_q(s, s->depth == 1 ? Q_COMMIT : Q_RELEASE, op, err, errlen);
    if (rc == 0) {
        s->depth--;
        return 0;
    }
    tx_rollback(s, err, errlen);
    return rc;
}

/* Ends the innermost transaction: commits it when rc is 0, else rolls it back and
 * returns rc. */
static int tx_end(st_store *s, int rc, const char *op, char *err, size_t errlen) {
    if (rc == 0) return tx_commit(s, op, err, errlen);
    tx_rollback(s, err, errlen);
    return rc;
}

/* ---------------------------------------------------------------------------------
 * Opening
 * --------------------------------------------------------------------------------- */

/* Checks the folder of path exists and path is not a folder, for a clear message
 * (SQLite would only say "unable to open database file"). */
static int check_path(const char *path, char *err, size_t errlen) {
    struct stat sb;
    int exists = stat(path, &sb) == 0;
    if (exists && S_ISDIR(sb.st_mode))
        return tn_error(err, errlen, TN_EINVAL, "%s is a folder, not a tuner store", path);
    if (exists && !S_ISREG(sb.st_mode))
        return tn_error(err, errlen, TN_EINVAL,
                        "%s is a %s, not a tuner store (a store is a regular file)", path,
                        S_ISFIFO(sb.st_mode)   ? "FIFO"
                        : S_ISSOCK(sb.st_mode) ? "socket"
                        : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "device"
                                                                     : "special file");
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) return 0; /* the working folder, or / */
    size_t n = (size_t)(slash - path);
    char *dir = tn_xmalloc(n + 1);
    memcpy(dir, path, n);
    dir[n] = '\0';
    int rc = 0;
    if (stat(dir, &sb) != 0) {
        int e = errno;
        rc = tn_error(err, errlen, e == ENOENT ? TN_ENOENT : TN_EIO,
                      "cannot open %s: folder %s: %s", path, dir, strerror(e));
    } else if (!S_ISDIR(sb.st_mode)) {
        rc = tn_error(err, errlen, TN_ENOENT, "cannot open %s: %s is not a folder", path, dir);
    }
    free(dir);
    return rc;
}

/* Runs a one-off query (no parameters) and reads column 0 of its first row into
 * *ival or *sval (either may be NULL; *sval is yours). 0 with a row, 1 without. */
static int scalar(st_store *s, const char *sql, int64_t *ival, char **sval, const char *op,
                  char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        int ret = fail(s, rc, op, err, errlen);
        (void)sqlite3_finalize(st); /* st is NULL after a failed prepare; harmless */
        return ret;
    }
    int ret;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        if (ival) *ival = sqlite3_column_int64(st, 0);
        if (sval) *sval = col_text(st, 0);
        ret = 0;
    } else if (rc == SQLITE_DONE) {
        ret = 1;
    } else {
        ret = fail(s, rc, op, err, errlen);
    }
    (void)sqlite3_finalize(st); /* repeats the step's error, handled above */
    return ret;
}

/* Reads the schema version into *version: 0 for an empty database, else meta's. A file
 * that is not a database, or a database of something else, is TN_EFORMAT. */
static int read_version(st_store *s, int64_t *version, char *err, size_t errlen) {
    const char *op = "reading the schema";
    /* One statement, so both counts come from one snapshot even while another process
     * is creating the schema. */
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT (SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                                "AND name = 'meta'), (SELECT count(*) FROM sqlite_master "
                                "WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\')",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    int64_t has_meta = 0, objects = 0;
    if (rc == SQLITE_ROW) {
        has_meta = sqlite3_column_int64(st, 0);
        objects = sqlite3_column_int64(st, 1);
        rc = 0;
    } else {
        rc = fail(s, rc, op, err, errlen);
    }
    (void)sqlite3_finalize(st); /* repeats the error handled above */
    if (rc) return rc;
    if (!has_meta) {
        if (objects > 0)
            return tn_error(err, errlen, TN_EFORMAT,
                            "%s is not a tuner store (a SQLite database of something else: "
                            "it has tables but no table meta)",
                            s->path);
        *version = 0;
        return 0;
    }
    char *text = NULL;
    rc = scalar(s, "SELECT value FROM meta WHERE key = 'schema_version'", NULL, &text, op, err,
                errlen);
    if (rc < 0) return rc;
    char *end = NULL;
    errno = 0;
    long long v = text ? strtoll(text, &end, 10) : 0;
    if (rc == 1 || !text || end == text || *end != '\0' || errno != 0 || v < 1) {
        rc = tn_error(err, errlen, TN_EFORMAT,
                      "%s is not a tuner store (meta.schema_version is '%s', not a version)",
                      s->path, text ? text : "missing");
    } else {
        *version = v;
        rc = 0;
    }
    free(text);
    return rc;
}

/* Refuses a schema this build cannot read: a newer one. An older one is migrated
 * (migrate_schema); docs/store.md, "Versions". */
static int check_version(st_store *s, int64_t version, char *err, size_t errlen) {
    if (version > ST_SCHEMA_VERSION)
        return tn_error(err, errlen, TN_EVERSION,
                        "%s was written by a newer tuner (schema %lld); this one reads up to %d",
                        s->path, (long long)version, ST_SCHEMA_VERSION);
    assert(version >= 1);
    return 0;
}

/* Runs a PRAGMA (or any statement without parameters or rows of interest). */
static int exec_sql(st_store *s, const char *sql, const char *op, char *err, size_t errlen) {
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : fail(s, rc, op, err, errlen);
}

/* Creates the schema if the file has none, or migrates an older one step by step up
 * to ST_SCHEMA_VERSION, in one IMMEDIATE transaction (with the new schema_version), so
 * a crash leaves the file at its old version, complete. Another process may have done
 * either since we looked, so the version is read again inside. */
/* Before an older schema is migrated: a study the store says is RUNNING, whose job
 * folder's lock (JOB_DIR/.tuner.lock, tuner/jobdir.h) another process holds, is being
 * run by a tuner older than this one (a tuner of this version would have migrated the
 * store first), which would fail at its next write to the new schema. Refused then,
 * with the study named; 0 otherwise. */
static int check_no_older_run(st_store *s, int64_t version, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    const char *sql = "SELECT name, json_extract(spec, '$.trainingInput.jobDir') FROM studies "
                      "WHERE state = 'RUNNING'";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return 0; /* no JSON1 */
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        const char *dir = (const char *)sqlite3_column_text(st, 1);
        if (!name || !dir || !dir[0]) continue;
        char *lock = tn_xasprintf("%s/.tuner.lock", dir);
        /* (the probe holds the lock shared for an instant: a run starting just then is
         * refused as by an ask, and says so; flock has no test that takes nothing) */
        int fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        int held = fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
        if (fd >= 0) close(fd);
        free(lock);
        if (held)
            rc = tn_error(err, errlen, TN_EVERSION,
                          "%s is at schema version %lld, and study %s is being run by an older "
                          "tuner (its job folder %s is locked): upgrading the store to "
                          "version %d now would fail that run's next write; hint: run this "
                          "again once that run has ended, or use the tuner that runs it",
                          s->path, (long long)version, name, dir, ST_SCHEMA_VERSION);
    }
    sqlite3_finalize(st);
    return rc;
}

static int create_schema(st_store *s, char *err, size_t errlen) {
    const char *op = "creating the schema";
    int rc = tx_begin(s, op, err, errlen);
    if (rc) return rc;
    int64_t version = 0;
    rc = read_version(s, &version, err, errlen);
    if (rc == 0 && version == 0) rc = exec_sql(s, schema_sql, op, err, errlen);
    if (rc == 0 && version != 0) rc = check_version(s, version, err, errlen);
    if (rc == 0 && version != 0 && version < ST_SCHEMA_VERSION)
        rc = check_no_older_run(s, version, err, errlen);
    if (rc == 0 && version != 0 && version < ST_SCHEMA_VERSION) {
        char mop[96];
        for (int64_t v = version; v < ST_SCHEMA_VERSION && rc == 0; v++) {
            snprintf(mop, sizeof mop, "migrating the schema from version %lld to %lld",
                     (long long)v, (long long)v + 1);
            rc = exec_sql(s, migrations[v], mop, err, errlen);
        }
        if (rc == 0) {
            char sql[96];
            snprintf(sql, sizeof sql,
                     "UPDATE meta SET value = '%d' WHERE key = 'schema_version'",
                     ST_SCHEMA_VERSION);
            rc = exec_sql(s, sql, "migrating the schema", err, errlen);
        }
    }
    if (rc) {
        tx_rollback(s, err, errlen);
        return rc;
    }
    return tx_commit(s, op, err, errlen);
}

/* PRAGMA journal_mode = WAL, into *mode (yours). Switching needs the file to itself,
 * and SQLite answers SQLITE_BUSY at once, without the busy handler, when another
 * connection has it open (several processes opening a new store together), so this
 * retries for up to the busy timeout. WAL mode is stored in the file: once set, the
 * pragma changes nothing and never waits. */
static int switch_to_wal(st_store *s, char **mode, char *err, size_t errlen) {
    const char *op = "switching to WAL mode";
    double deadline = now() + ST_BUSY_TIMEOUT_MS / 1000.0;
    long pause_ns = 1000000; /* 1 ms, doubling to 64 ms */
    for (;;) {
        char msg[512] = "";
        int rc = scalar(s, "PRAGMA journal_mode = WAL", NULL, mode, op, msg, sizeof msg);
        int busy = (sqlite3_extended_errcode(s->db) & 0xff) == SQLITE_BUSY;
        if (rc >= 0 || !busy || now() >= deadline) {
            if (rc < 0) tn_error(err, errlen, rc, "%s", msg);
            return rc;
        }
        struct timespec ts = {0, pause_ns};
        nanosleep(&ts, NULL); /* an interrupted sleep only retries sooner */
        if (pause_ns < 64000000) pause_ns *= 2;
    }
}

/* st_open, and for a reader (st_open_read) the same without making anything: no file
 * where there is none, and no schema (nor WAL mode) in an SQLite file that holds no
 * tuner store; an older schema is still migrated (store.md). */
static int open_rw(const char *path, int reader, st_store **out, char *err, size_t errlen) {
    assert(path && out);
    *out = NULL;
    if (path[0] == '\0') return tn_error(err, errlen, TN_EINVAL, "the store path is empty");
    int rc = check_path(path, err, errlen);
    if (rc) return rc;

    st_store *s = tn_xcalloc(1, sizeof *s);
    s->path = tn_xstrdup(path);
    int src = sqlite3_open_v2(path, &s->db,
                              SQLITE_OPEN_READWRITE | (reader ? 0 : SQLITE_OPEN_CREATE) |
                                  SQLITE_OPEN_NOMUTEX,
                              NULL);
    if (!s->db) tn_out_of_memory("the SQLite store"); /* SQLite returns no handle only when malloc failed */
    if (src != SQLITE_OK) {
        int e = sqlite3_system_errno(s->db);
        rc = tn_error(err, errlen, TN_EIO, "cannot open %s: %s%s%s%s", path,
                      sqlite3_errmsg(s->db), e ? " (" : "", e ? strerror(e) : "", e ? ")" : "");
        goto fail;
    }
    if ((src = sqlite3_extended_result_codes(s->db, 1)) != SQLITE_OK ||
        (src = sqlite3_busy_timeout(s->db, ST_BUSY_TIMEOUT_MS)) != SQLITE_OK) {
        rc = fail(s, src, "configuring the connection", err, errlen);
        goto fail;
    }

    /* The first read: SQLite finds out only now whether the file is a database. A newer
     * schema is refused before anything (the journal mode included) is changed. */
    int64_t version = 0;
    if ((rc = read_version(s, &version, err, errlen))) goto fail;
    if (version != 0 && (rc = check_version(s, version, err, errlen))) goto fail;
    if (version == 0 && reader) {
        rc = tn_error(err, errlen, TN_EFORMAT,
                      "%s holds no tuner store (an SQLite file without its tables); `tuner "
                      "run` or `tuner create` makes a store",
                      path);
        goto fail;
    }

    /* WAL: readers never block the writer, and a commit is one append to the log.
     * synchronous=FULL fsyncs the log at each commit, so a commit survives power loss
     * as well as a killed process (NORMAL would survive only the latter). */
    char *mode = NULL;
    if ((rc = switch_to_wal(s, &mode, err, errlen)) < 0) goto fail;
    /* ("memory" is what a ":memory:" store answers.) */
    int wal = mode && (strcmp(mode, "wal") == 0 || strcmp(mode, "memory") == 0);
    if (!wal)
        rc = tn_error(err, errlen, TN_EIO,
                      "%s: cannot use WAL mode (the journal mode stays '%s'); is the file on "
                      "a network file system?",
                      path, mode ? mode : "unknown");
    free(mode);
    if (!wal) goto fail;
    if ((rc = exec_sql(s, "PRAGMA synchronous = FULL", "setting synchronous", err, errlen)) ||
        (rc = exec_sql(s, "PRAGMA foreign_keys = ON", "enabling foreign keys", err, errlen)))
        goto fail;

    if (version != ST_SCHEMA_VERSION && (rc = create_schema(s, err, errlen))) goto fail;
    *out = s;
    return 0;

fail:
    st_close(s);
    char why[512];
    struct stat sb;
    if (stat(path, &sb) != 0 && why_unwritable(path, why, sizeof why)[0]) {
        char *was = tn_xstrdup(err);
        rc = tn_error(err, errlen, TN_EIO,
                      "cannot create the store %s: %s (%s); pass --db=PATH (or set TUNER_DB) "
                      "to a store where you can write",
                      path, why, was);
        free(was);
    } else if (!strcmp(why_unwritable(path, why, sizeof why), ST_DISK_FULL)) {
        rc = full_disk_error(path, err, errlen);
    } else if (why[0]) { /* what to do, not only SQLite's word */
        char *was = tn_xstrdup(err);
        rc = tn_error(err, errlen, TN_EIO,
                      "cannot write the store %s: %s (%s); commands that change it (run, "
                      "resume, create, cancel, ask, tell) need write access, while list, "
                      "show, trials, best, logs and serve can read it as it is",
                      path, why, was);
        free(was);
    }
    return rc < 0 ? rc : TN_EIO;
}

int st_open(const char *path, st_store **out, char *err, size_t errlen) {
    return open_rw(path, 0, out, err, errlen);
}

/* The URI that opens path immutable (SQLite then takes no locks and needs no -shm
 * file): "file:" and the path with %, ? and # escaped. */
static char *immutable_uri(const char *path) {
    size_t n = strlen(path);
    char *uri = tn_xmalloc(3 * n + 32), *o = uri;
    o += sprintf(o, "file:");
    for (const char *p = path; *p; p++)
        o += strchr("%?#", *p) ? sprintf(o, "%%%02X", (unsigned char)*p) : sprintf(o, "%c", *p);
    sprintf(o, "?immutable=1");
    return uri;
}

/* Opens path read-only: with SQLite's locks and the -wal and -shm files when they
 * exist (a tuner elsewhere may be writing), else immutable (a read-only file system
 * after a clean close). */
static int open_readonly(const char *path, const char *why, st_store **out, char *err,
                         size_t errlen) {
    st_store *s = tn_xcalloc(1, sizeof *s);
    s->path = tn_xstrdup(path);
    s->readonly = 1;
    int64_t version = 0;
    int rc = 0;
    for (int immutable = 0; immutable < 2; immutable++) {
        char *uri = immutable ? immutable_uri(path) : NULL;
        int src = sqlite3_open_v2(immutable ? uri : path, &s->db,
                                  SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX |
                                      (immutable ? SQLITE_OPEN_URI : 0),
                                  NULL);
        free(uri);
        if (!s->db) tn_out_of_memory("the SQLite store");
        if (src == SQLITE_OK) src = sqlite3_extended_result_codes(s->db, 1);
        if (src == SQLITE_OK) src = sqlite3_busy_timeout(s->db, ST_BUSY_TIMEOUT_MS);
        rc = src == SQLITE_OK ? read_version(s, &version, err, errlen)
                              : fail(s, src, "opening read-only", err, errlen);
        if (rc == 0) break;
        int ext = sqlite3_extended_errcode(s->db), code = ext & 0xff;
        int no_shm = ext == SQLITE_IOERR_SHMOPEN || ext == SQLITE_IOERR_SHMSIZE ||
                     ext == SQLITE_IOERR_SHMMAP || sqlite3_system_errno(s->db) == ENOSPC;
        (void)sqlite3_close(s->db);
        s->db = NULL;
        if (code != SQLITE_CANTOPEN && code != SQLITE_READONLY && !no_shm)
            break; /* not a wal/shm issue (no_shm: no room for the -shm file) */
    }
    if (rc == 0 && version == 0)
        rc = tn_error(err, errlen, TN_EFORMAT, "%s holds no tuner store yet", path);
    if (rc == 0 && version < ST_SCHEMA_VERSION)
        rc = tn_error(err, errlen, TN_EVERSION,
                      "%s is at schema version %lld and this tuner reads %d; it is upgraded "
                      "by any command run where it can be written (here %s)",
                      path, (long long)version, ST_SCHEMA_VERSION, why);
    if (rc == 0) rc = check_version(s, version, err, errlen);
    if (rc) {
        st_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

int st_open_read(const char *path, st_store **out, char *err, size_t errlen) {
    assert(path && out);
    *out = NULL;
    /* An empty file is not a store yet, and a reader must not make it one (st_open
     * would write the schema into it). It may be one being made (a first `tuner run`
     * has just created it): give it a moment. */
    struct stat eb;
    int empty = 0;
    for (int wait = 0; wait < 20; wait++) {
        empty = stat(path, &eb) == 0 && S_ISREG(eb.st_mode) && eb.st_size == 0;
        if (!empty) break;
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    }
    if (empty)
        return tn_error(err, errlen, TN_EFORMAT,
                        "%s is an empty file, not a tuner store; `tuner run` or `tuner "
                        "create` makes a store there",
                        path);
    int rc = open_rw(path, 1, out, err, errlen);
    char why[512];
    if (rc == 0 || !why_unwritable(path, why, sizeof why)[0]) return rc;
    rc = open_readonly(path, why, out, err, errlen);
    if (rc) return rc;
    st_store *s = *out;
    struct stat sb;
    char *file = store_file(path);
    char *wal = tn_xasprintf("%s-wal", file);
    char *shm = tn_xasprintf("%s-shm", file);
    free(file);
    if (stat(wal, &sb) == 0 && sb.st_size > 0 && stat(shm, &sb) != 0)
        s->note = tn_xasprintf("%s is read-only here (%s) and its write-ahead log %s cannot "
                               "be read without its -shm file: what was written since the "
                               "last checkpoint may be missing",
                               path, why, wal);
    free(wal);
    free(shm);
    return 0;
}

int st_readonly(const st_store *s) { return s->readonly; }

const char *st_note(const st_store *s) { return s->note; }

int st_store_id(st_store *s, char **out, char *err, size_t errlen) {
    assert(s && out);
    *out = NULL;
    const char *op = "reading the store's id";
    char *id = NULL;
    int rc = scalar(s, "SELECT value FROM meta WHERE key = 'store_id'", NULL, &id, op, err,
                    errlen);
    if (rc == 0 && id) {
        *out = id;
        return 0;
    }
    free(id);
    if (rc < 0) return rc;
    char hex[2 * 16 + 1], why[256];
    if ((rc = tn_random_hex(hex, 16, why, sizeof why)))
        return tn_error(err, errlen, rc, "%s: %s: %s", s->path, op, why);
    /* Another process may make one at the same time: the first stays, both read it. */
    char sql[128];
    snprintf(sql, sizeof sql,
             "INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', '%s')", hex);
    op = "making the store's id";
    if ((rc = tx_begin(s, op, err, errlen))) return rc;
    rc = exec_sql(s, sql, op, err, errlen);
    if ((rc = tx_end(s, rc, op, err, errlen))) return rc;
    rc = scalar(s, "SELECT value FROM meta WHERE key = 'store_id'", NULL, &id, op, err, errlen);
    if (rc == 0 && id) {
        *out = id;
        return 0;
    }
    free(id);
    return rc < 0 ? rc
                  : tn_error(err, errlen, TN_EIO, "%s: %s: no id after storing it", s->path, op);
}

void st_close(st_store *s) {
    if (!s) return;
    for (int q = 0; q < Q_COUNT; q++)
        (void)sqlite3_finalize(s->stmt[q]); /* repeats an error already handled */
    if (s->db && sqlite3_close(s->db) != SQLITE_OK)
        fprintf(stderr, "tuner: warning: closing %s: %s\n", s->path, sqlite3_errmsg(s->db));
    free(s->note);
    free(s->path);
    free(s);
}

/* ---------------------------------------------------------------------------------
 * Studies
 * --------------------------------------------------------------------------------- */

/* The error for a row whose state column names no state. */
static int bad_state(const char *what, sqlite3_stmt *st, int col, char *err, size_t errlen) {
    const unsigned char *text = sqlite3_column_text(st, col);
    return tn_error(err, errlen, TN_EFORMAT,
                    "%s has the state '%.40s', which the tuner never writes: the store was "
                    "changed by something else (restore it from a backup, or fix the row "
                    "with sqlite3)", what, text ? (const char *)text : "(null)");
}

static int read_study(sqlite3_stmt *st, void *row, char *err, size_t errlen) {
    st_study *out = row;
    out->id = sqlite3_column_int64(st, 0);
    out->name = col_text_nn(st, 1);
    out->spec = col_text_nn(st, 2);
    out->seed = sqlite3_column_int64(st, 4);
    out->created = col_real(st, 5);
    out->updated = col_real(st, 6);
    out->error = col_text(st, 7);
    int state = st_study_state_parse((const char *)sqlite3_column_text(st, 3));
    if (state < 0) {
        char what[320];
        snprintf(what, sizeof what, "study %s", out->name);
        return bad_state(what, st, 3, err, errlen);
    }
    out->state = (st_study_state)state;
    return 0;
}

static void clear_study(void *row) { st_study_clear(row); }

static const row_kind study_rows = {sizeof(st_study), read_study, clear_study};

int st_study_create(st_store *s, const char *name, const char *spec_json, int64_t seed,
                    st_study_state state, int64_t *id, char *err, size_t errlen) {
    assert(s && name && spec_json && (unsigned)state < ST_STUDY_NSTATES);
    char op[256];
    snprintf(op, sizeof op, "creating study %s", name);
    int xrc, rc = tx_begin(s, op, err, errlen);
    if (rc) return rc;
    rc = write_q(s, Q_STUDY_INSERT, op, &xrc, err, errlen, "tttir", name, spec_json,
                 st_study_state_name(state), seed, now());
    if (rc && xrc == SQLITE_CONSTRAINT_UNIQUE)
        rc = tn_error(err, errlen, TN_EINVAL, "a study named %s already exists", name);
    if (rc == 0 && id) *id = sqlite3_last_insert_rowid(s->db);
    return tx_end(s, rc, op, err, errlen);
}

int st_study_get(st_store *s, const char *name, st_study *out, int *found, char *err,
                 size_t errlen) {
    assert(s && name && out && found);
    memset(out, 0, sizeof *out);
    *found = 0;
    char op[256];
    snprintf(op, sizeof op, "reading study %s", name);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_STUDY_GET, &st, op, err, errlen);
    if (rc) return rc;
    rc = read_one(s, st, bind(st, "t", name), op, read_study, out, found, err, errlen);
    if (rc) st_study_clear(out);
    return rc;
}

int st_study_list(st_store *s, st_study **out, size_t *n, char *err, size_t errlen) {
    assert(s && out && n);
    *out = NULL;
    *n = 0;
    const char *op = "listing studies";
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_STUDY_LIST, &st, op, err, errlen);
    if (rc) return rc;
    *out = read_rows(s, st, SQLITE_OK, op, &study_rows, n, &rc, err, errlen);
    return rc;
}

int st_study_set_state(st_store *s, int64_t id, st_study_state state, const char *error,
                       char *err, size_t errlen) {
    assert(s && (unsigned)state < ST_STUDY_NSTATES);
    char op[96];
    snprintf(op, sizeof op, "setting the state of study %lld", (long long)id);
    int rc = tx_begin(s, op, err, errlen);
    if (rc) return rc;
    rc = write_q(s, Q_STUDY_SET_STATE, op, NULL, err, errlen, "ittr", id,
                 st_study_state_name(state), error, now());
    if (rc == 0 && sqlite3_changes(s->db) == 0)
        rc = tn_error(err, errlen, TN_ENOENT, "%s: %s: there is no study %lld", s->path, op,
                      (long long)id);
    return tx_end(s, rc, op, err, errlen);
}

void st_study_clear(st_study *st) {
    if (!st) return;
    free(st->name);
    free(st->spec);
    free(st->error);
    memset(st, 0, sizeof *st);
}

void st_studies_free(st_study *list, size_t n) { free_rows(list, n, &study_rows); }

/* ---------------------------------------------------------------------------------
 * Trials
 * --------------------------------------------------------------------------------- */

/* A trial's values as stored in trials.objectives: a JSON array of 2 ..= ST_MAX_VALUES
 * finite numbers, "[0.93,12.5]", into out->values and nvalues. 0, or -1 when json is
 * not that. */
static int parse_values(const char *json, st_trial *out) {
    const char *p = json;
    int n = 0;
    if (*p++ != '[') return -1;
    for (;;) {
        char *end;
        while (*p == ' ') p++;
        if (n == ST_MAX_VALUES) return -1;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || !isfinite(v)) return -1;
        out->values[n++] = v;
        for (p = end; *p == ' ';) p++;
        if (*p == ']' && p[1] == '\0') break;
        if (*p++ != ',') return -1;
    }
    if (n < 2) return -1;
    out->nvalues = n;
    return 0;
}

static int read_trial(sqlite3_stmt *st, void *row, char *err, size_t errlen) {
    st_trial *out = row;
    out->study_id = sqlite3_column_int64(st, 0);
    out->number = sqlite3_column_int64(st, 1);
    out->params = col_text_nn(st, 2);
    out->has_objective = sqlite3_column_type(st, 4) != SQLITE_NULL;
    out->objective = out->has_objective ? sqlite3_column_double(st, 4) : 0;
    out->created = col_real(st, 5);
    out->started = col_real(st, 6);
    out->finished = col_real(st, 7);
    out->attempts = sqlite3_column_int(st, 8);
    out->restarts = sqlite3_column_int(st, 9);
    out->error = col_text(st, 10);
    out->changed = sqlite3_column_int64(st, 11);
    out->executor_job = col_text(st, 12);
    out->nvalues = 0;
    if (out->has_objective) {
        out->nvalues = 1;
        out->values[0] = out->objective;
        const char *json = (const char *)sqlite3_column_text(st, 13);
        if (json && parse_values(json, out) != 0) {
            char what[96];
            snprintf(what, sizeof what, "trial %lld of study %lld", (long long)out->number,
                     (long long)out->study_id);
            st_trial_clear(out);
            return tn_error(err, errlen, TN_EIO, "%s: its objectives are not a list of "
                            "numbers", what);
        }
    }
    /* TRIAL_COLUMNS_STEP adds the highest step of its measurements */
    out->has_last_step = sqlite3_column_count(st) > 14 && sqlite3_column_type(st, 14) != SQLITE_NULL;
    out->last_step = out->has_last_step ? sqlite3_column_int64(st, 14) : 0;
    int state = st_trial_state_parse((const char *)sqlite3_column_text(st, 3));
    if (state < 0) {
        char what[96];
        snprintf(what, sizeof what, "trial %lld of study %lld", (long long)out->number,
                 (long long)out->study_id);
        return bad_state(what, st, 3, err, errlen);
    }
    out->state = (st_trial_state)state;
    return 0;
}

static void clear_trial(void *row) { st_trial_clear(row); }

static const row_kind trial_rows = {sizeof(st_trial), read_trial, clear_trial};

int st_trial_create(st_store *s, int64_t study_id, const char *params_json,
                    st_trial_state state, int64_t *number, char *err, size_t errlen) {
    assert(s && params_json && (unsigned)state < ST_TRIAL_NSTATES);
    char op[96];
    snprintf(op, sizeof op, "creating a trial of study %lld", (long long)study_id);
    sqlite3_stmt *st = NULL;
    /* IMMEDIATE (or a savepoint in the caller's IMMEDIATE transaction): the write lock
     * is held from before MAX(number) is read until the new row is committed. */
    int rc = tx_begin(s, op, err, errlen);
    if (rc) return rc;
    if ((rc = prep(s, Q_TRIAL_NEXT, &st, op, err, errlen)) ||
        (rc = step_row(s, st, bind(st, "i", study_id), op, err, errlen)))
        goto fail;
    int64_t next = sqlite3_column_int64(st, 0);
    done(st);

    double t = now();
    double started = state == ST_TRIAL_RUNNING ? t : 0;
    int xrc;
    rc = write_q(s, Q_TRIAL_INSERT, op, &xrc, err, errlen, "iittrz", study_id, next,
                 params_json, st_trial_state_name(state), t, started);
    if (rc && xrc == SQLITE_CONSTRAINT_FOREIGNKEY)
        rc = tn_error(err, errlen, TN_ENOENT, "%s: %s: there is no study %lld", s->path, op,
                      (long long)study_id);
    if ((rc = tx_end(s, rc, op, err, errlen))) return rc;
    if (number) *number = next;
    return 0;
fail:
    tx_rollback(s, err, errlen);
    return rc;
}

int st_trial_get(st_store *s, int64_t study_id, int64_t number, st_trial *out, int *found,
                 char *err, size_t errlen) {
    assert(s && out && found);
    memset(out, 0, sizeof *out);
    *found = 0;
    char op[96];
    snprintf(op, sizeof op, "reading trial %lld of study %lld", (long long)number,
             (long long)study_id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_TRIAL_GET, &st, op, err, errlen);
    if (rc) return rc;
    rc = read_one(s, st, bind(st, "ii", study_id, number), op, read_trial, out, found, err,
                  errlen);
    if (rc) st_trial_clear(out);
    return rc;
}

int st_trial_list(st_store *s, int64_t study_id, st_trial **out, size_t *n, char *err,
                  size_t errlen) {
    assert(s && out && n);
    *out = NULL;
    *n = 0;
    char op[96];
    snprintf(op, sizeof op, "listing the trials of study %lld", (long long)study_id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_TRIAL_LIST, &st, op, err, errlen);
    if (rc) return rc;
    *out = read_rows(s, st, bind(st, "i", study_id), op, &trial_rows, n, &rc, err, errlen);
    return rc;
}

int st_trial_update(st_store *s, const st_trial *t, char *err, size_t errlen) {
    assert(s && t);
    char op[96];
    snprintf(op, sizeof op, "updating trial %lld of study %lld", (long long)t->number,
             (long long)t->study_id);
    if ((unsigned)t->state >= ST_TRIAL_NSTATES)
        return tn_error(err, errlen, TN_EINVAL, "%s: %d is not a trial state", op,
                        (int)t->state);
    if (!t->params) /* not written, but the struct must be a whole trial */
        return tn_error(err, errlen, TN_EINVAL, "%s: the trial has no params", op);
    if (t->has_objective && isnan(t->objective))
        return tn_error(err, errlen, TN_EINVAL, "%s: the objective is NaN", op);
    if (t->attempts < 0 || t->restarts < 0)
        return tn_error(err, errlen, TN_EINVAL, "%s: negative attempts or restarts", op);
    /* the values of a study with several metrics, as JSON: [v0,v1,...] */
    char values[ST_MAX_VALUES * 26 + 4] = "";
    int nvalues = t->has_objective ? t->nvalues : 0;
    if (nvalues > ST_MAX_VALUES || nvalues < 0)
        return tn_error(err, errlen, TN_EINVAL, "%s: %d values (at most %d)", op, nvalues,
                        ST_MAX_VALUES);
    if (nvalues >= 2) {
        if (t->values[0] != t->objective)
            return tn_error(err, errlen, TN_EINVAL,
                            "%s: the first value (%.17g) is not the objective (%.17g)", op,
                            t->values[0], t->objective);
        size_t len = 0;
        for (int i = 0; i < nvalues; i++) {
            if (!isfinite(t->values[i]))
                return tn_error(err, errlen, TN_EINVAL, "%s: value %d is not finite (%g)", op,
                                i + 1, t->values[i]);
            len += (size_t)snprintf(values + len, sizeof values - len, "%s%.17g",
                                    i ? "," : "[", t->values[i]);
        }
        snprintf(values + len, sizeof values - len, "]");
    }
    int rc = tx_begin(s, op, err, errlen);
    if (rc) return rc;
    rc = write_q(s, Q_TRIAL_UPDATE, op, NULL, err, errlen, "iitnzziittt", t->study_id,
                 t->number, st_trial_state_name(t->state),
                 t->has_objective ? t->objective : NAN, t->started, t->finished,
                 (int64_t)t->attempts, (int64_t)t->restarts, t->error, t->executor_job,
                 nvalues >= 2 ? values : NULL);
    if (rc == 0 && sqlite3_changes(s->db) == 0)
        rc = tn_error(err, errlen, TN_ENOENT, "%s: %s: there is no such trial", s->path, op);
    if (rc == 0)
        rc = write_q(s, Q_STUDY_TOUCH, op, NULL, err, errlen, "ir", t->study_id, now());
    return tx_end(s, rc, op, err, errlen);
}

static int count_row(sqlite3_stmt *st, void *arg, char *err, size_t errlen) {
    int64_t *counts = arg;
    int i = st_trial_state_parse((const char *)sqlite3_column_text(st, 0));
    if (i >= 0) counts[i] = sqlite3_column_int64(st, 1);
    (void)err, (void)errlen;
    return 0;
}

int st_trial_counts(st_store *s, int64_t study_id, int64_t counts[ST_TRIAL_NSTATES], char *err,
                    size_t errlen) {
    assert(s && counts);
    for (int i = 0; i < ST_TRIAL_NSTATES; i++) counts[i] = 0;
    char op[96];
    snprintf(op, sizeof op, "counting the trials of study %lld", (long long)study_id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_TRIAL_COUNTS, &st, op, err, errlen);
    if (rc) return rc;
    return each_row(s, st, bind(st, "i", study_id), op, count_row, counts, err, errlen);
}

void st_trial_clear(st_trial *t) {
    if (!t) return;
    free(t->params);
    free(t->error);
    free(t->executor_job);
    memset(t, 0, sizeof *t);
}

void st_trials_free(st_trial *list, size_t n) { free_rows(list, n, &trial_rows); }

/* ---------------------------------------------------------------------------------
 * Measurements and events
 * --------------------------------------------------------------------------------- */

int st_measurement_add(st_store *s, int64_t study_id, int64_t trial, const st_measurement *m,
                       char *err, size_t errlen) {
    assert(s && m);
    char op[128];
    snprintf(op, sizeof op, "storing a measurement of trial %lld of study %lld",
             (long long)trial, (long long)study_id);
    if (!m->replica || !m->metrics || !isfinite(m->timestamp))
        return tn_error(err, errlen, TN_EINVAL,
                        "%s: a measurement needs a replica, metrics and a finite timestamp", op);
    int xrc, rc = tx_begin(s, op, err, errlen);
    if (rc) return rc;
    rc = write_q(s, Q_MEASUREMENT_INSERT, op, &xrc, err, errlen, "iitirtp", study_id, trial,
                 m->replica, m->step, m->timestamp, m->metrics, (int64_t)m->attempt);
    if (rc && xrc == SQLITE_CONSTRAINT_FOREIGNKEY)
        rc = tn_error(err, errlen, TN_ENOENT, "%s: %s: there is no such trial", s->path, op);
    return tx_end(s, rc, op, err, errlen);
}

static int read_measurement(sqlite3_stmt *st, void *row, char *err, size_t errlen) {
    st_measurement *m = row;
    m->step = sqlite3_column_int64(st, 0);
    m->replica = col_text_nn(st, 1);
    m->metrics = col_text_nn(st, 2);
    m->timestamp = sqlite3_column_double(st, 3);
    m->attempt = sqlite3_column_type(st, 4) == SQLITE_NULL ? 0 : sqlite3_column_int(st, 4);
    (void)err, (void)errlen;
    return 0;
}

static void clear_measurement(void *row) {
    st_measurement *m = row;
    free(m->replica);
    free(m->metrics);
}

static const row_kind measurement_rows = {sizeof(st_measurement), read_measurement,
                                          clear_measurement};

int st_measurement_list(st_store *s, int64_t study_id, int64_t trial, st_measurement **out,
                        size_t *n, char *err, size_t errlen) {
    assert(s && out && n);
    *out = NULL;
    *n = 0;
    char op[128];
    snprintf(op, sizeof op, "listing the measurements of trial %lld of study %lld",
             (long long)trial, (long long)study_id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_MEASUREMENT_LIST, &st, op, err, errlen);
    if (rc) return rc;
    *out = read_rows(s, st, bind(st, "ii", study_id, trial), op, &measurement_rows, n, &rc,
                     err, errlen);
    return rc;
}

void st_measurements_free(st_measurement *list, size_t n) {
    free_rows(list, n, &measurement_rows);
}

int st_event_add(st_store *s, int64_t study_id, int64_t trial, const st_event *e, char *err,
                 size_t errlen) {
    assert(s && e);
    char op[128];
    snprintf(op, sizeof op, "storing an event of trial %lld of study %lld", (long long)trial,
             (long long)study_id);
    if (!e->kind || trial < 0 || !isfinite(e->time))
        return tn_error(err, errlen, TN_EINVAL,
                        "%s: an event needs a kind, a trial >= 0 and a finite time", op);
    if ((e->has_exit_code && (e->exit_code < 0 || e->exit_code > 255)) || e->signal < 0)
        return tn_error(err, errlen, TN_EINVAL,
                        "%s: exit code %d or signal %d out of range", op, e->exit_code,
                        e->signal);
    int xrc, rc = tx_begin(s, op, err, errlen);
    if (rc) return rc;
    rc = write_q(s, Q_EVENT_INSERT, op, &xrc, err, errlen, "iirtttNp", study_id, trial,
                 e->time != 0 ? e->time : now(), e->replica, e->kind, e->detail,
                 (int64_t)(e->has_exit_code ? e->exit_code : -1), (int64_t)e->signal);
    if (rc && xrc == SQLITE_CONSTRAINT_FOREIGNKEY)
        rc = tn_error(err, errlen, TN_ENOENT, "%s: %s: there is no study %lld", s->path, op,
                      (long long)study_id);
    return tx_end(s, rc, op, err, errlen);
}

static int read_event(sqlite3_stmt *st, void *row, char *err, size_t errlen) {
    st_event *e = row;
    e->time = sqlite3_column_double(st, 0);
    e->replica = col_text(st, 1);
    e->kind = col_text_nn(st, 2);
    e->detail = col_text(st, 3);
    e->has_exit_code = sqlite3_column_type(st, 4) != SQLITE_NULL;
    e->exit_code = e->has_exit_code ? sqlite3_column_int(st, 4) : 0;
    e->signal = sqlite3_column_type(st, 5) == SQLITE_NULL ? 0 : sqlite3_column_int(st, 5);
    (void)err, (void)errlen;
    return 0;
}

static void clear_event(void *row) {
    st_event *e = row;
    free(e->replica);
    free(e->kind);
    free(e->detail);
}

static const row_kind event_rows = {sizeof(st_event), read_event, clear_event};

int st_event_list(st_store *s, int64_t study_id, int64_t trial, st_event **out, size_t *n,
                  char *err, size_t errlen) {
    assert(s && out && n);
    *out = NULL;
    *n = 0;
    char op[128];
    snprintf(op, sizeof op, "listing the events of trial %lld of study %lld", (long long)trial,
             (long long)study_id);
    sqlite3_stmt *st = NULL;
    int all = trial < 0; /* every event of the study, its trials' included */
    int rc = prep(s, all ? Q_EVENT_LIST_STUDY : Q_EVENT_LIST_TRIAL, &st, op, err, errlen);
    if (rc) return rc;
    *out = read_rows(s, st, all ? bind(st, "i", study_id) : bind(st, "ii", study_id, trial), op,
                     &event_rows, n, &rc, err, errlen);
    return rc;
}

void st_events_free(st_event *list, size_t n) { free_rows(list, n, &event_rows); }

/* ---------------------------------------------------------------------------------
 * Reads for the dashboard
 * --------------------------------------------------------------------------------- */

int st_study_get_id(st_store *s, int64_t id, st_study *out, int *found, char *err,
                    size_t errlen) {
    assert(s && out && found);
    memset(out, 0, sizeof *out);
    *found = 0;
    char op[96];
    snprintf(op, sizeof op, "reading study %lld", (long long)id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_STUDY_GET_ID, &st, op, err, errlen);
    if (rc) return rc;
    rc = read_one(s, st, bind(st, "i", id), op, read_study, out, found, err, errlen);
    if (rc) st_study_clear(out);
    return rc;
}

int st_study_cursor(st_store *s, int64_t study_id, int64_t *trials, int64_t *measurements,
                    char *err, size_t errlen) {
    assert(s && trials && measurements);
    char op[96];
    snprintf(op, sizeof op, "reading the change sequences of study %lld", (long long)study_id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_STUDY_CURSOR, &st, op, err, errlen);
    if (rc || (rc = step_row(s, st, bind(st, "i", study_id), op, err, errlen))) return rc;
    *trials = sqlite3_column_int64(st, 0);
    *measurements = sqlite3_column_int64(st, 1);
    done(st);
    return 0;
}

typedef struct cancel_txn {
    int64_t id;          /* the study */
    int found;           /* it exists */
    st_study_state was;  /* its state before */
    char *err;           /* the caller's error buffer */
    size_t errlen;
} cancel_txn;

static int cancel_in_txn(st_store *s, void *arg) {
    cancel_txn *c = arg;
    st_study study;
    int rc = st_study_get_id(s, c->id, &study, &c->found, c->err, c->errlen);
    if (rc || !c->found) return rc;
    c->was = study.state;
    if (!st_study_state_final(study.state))
        rc = st_study_set_state(s, study.id, ST_STUDY_CANCELLED, NULL, c->err, c->errlen);
    if (!rc && study.state == ST_STUDY_CREATED) {
        /* No tuner runs it: the trials out are ask's, which no tell may finish now
         * (a study that a tuner runs cancels its own, as it stops them). */
        rc = st_trials_cancel_unfinished(s, study.id, "the study was cancelled", c->err,
                                         c->errlen);
    }
    st_study_clear(&study);
    return rc;
}

int st_trials_cancel_unfinished(st_store *s, int64_t study_id, const char *why, char *err,
                                size_t errlen) {
    st_trial *trials = NULL;
    size_t n = 0;
    int rc = st_trial_list(s, study_id, &trials, &n, err, errlen);
    for (size_t i = 0; i < n && !rc; i++) {
        st_trial *t = &trials[i];
        if (st_trial_state_final(t->state)) continue;
        t->state = ST_TRIAL_CANCELLED;
        t->finished = now();
        free(t->error);
        t->error = tn_xstrdup(why);
        rc = st_trial_update(s, t, err, errlen);
    }
    st_trials_free(trials, n);
    return rc;
}

/* A run's own change of its study's state (start or end), which a `tuner cancel` since
 * the run last looked must not undo. */
typedef struct run_state_txn {
    int64_t id;             /* the study */
    st_study_state seen;    /* start: the state the run read before it set up */
    st_study_state state;   /* the state to set */
    const char *error;      /* ... and its error */
    st_study_state *stored; /* the state the study has after */
    char *err;
    size_t errlen;
} run_state_txn;

static int run_state_in_txn(st_store *s, void *arg) {
    run_state_txn *c = arg;
    st_study study;
    int found;
    int rc = st_study_get_id(s, c->id, &study, &found, c->err, c->errlen);
    if (rc) return rc;
    if (!found)
        return tn_error(c->err, c->errlen, TN_ENOENT, "%s: there is no study %lld", s->path,
                        (long long)c->id);
    int cancelled = study.state == ST_STUDY_CANCELLED && c->seen != ST_STUDY_CANCELLED &&
                    c->state != ST_STUDY_CANCELLED;
    st_study_clear(&study);
    *c->stored = cancelled ? ST_STUDY_CANCELLED : c->state;
    if (cancelled) return 0;
    return st_study_set_state(s, c->id, c->state, c->error, c->err, c->errlen);
}

int st_study_set_run_state(st_store *s, int64_t id, st_study_state seen, st_study_state state,
                           const char *error, st_study_state *stored, char *err,
                           size_t errlen) {
    assert(s && stored && (unsigned)state < ST_STUDY_NSTATES);
    run_state_txn c = {.id = id, .seen = seen, .state = state, .error = error,
                       .stored = stored, .err = err, .errlen = errlen};
    return st_transaction(s, run_state_in_txn, &c, err, errlen);
}

int st_study_cancel(st_store *s, int64_t study_id, st_study_state *was, int *found, char *err,
                    size_t errlen) {
    assert(s && found);
    cancel_txn c = {.id = study_id, .err = err, .errlen = errlen};
    *found = 0;
    int rc = st_transaction(s, cancel_in_txn, &c, err, errlen);
    if (rc) return rc;
    if (c.found && was) *was = c.was;
    *found = c.found;
    return 0;
}

int st_trial_changes(st_store *s, int64_t study_id, int64_t after, int64_t limit,
                     st_trial **out, size_t *n, char *err, size_t errlen) {
    assert(s && out && n);
    *out = NULL;
    *n = 0;
    char op[96];
    snprintf(op, sizeof op, "reading the changed trials of study %lld", (long long)study_id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_TRIAL_CHANGES, &st, op, err, errlen);
    if (rc) return rc;
    *out = read_rows(s, st, bind(st, "iii", study_id, after, limit), op, &trial_rows, n, &rc,
                     err, errlen);
    return rc;
}

int st_trial_page(st_store *s, int64_t study_id, int sort, unsigned states, int64_t offset,
                  int64_t limit, double now_s, st_trial **out, size_t *n, int64_t *total,
                  char *err, size_t errlen) {
    assert(s && out && n && total);
    *out = NULL;
    *n = 0;
    *total = 0;
    if (sort < 0 || sort >= ST_SORT_COUNT || offset < 0 || limit < 0)
        return tn_error(err, errlen, TN_EINVAL, "st_trial_page: bad sort, offset or limit");
    char op[96];
    snprintf(op, sizeof op, "listing the trials of study %lld", (long long)study_id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_TRIAL_FILTER_COUNT, &st, op, err, errlen);
    if (rc || (rc = step_row(s, st, bind(st, "ii", study_id, (int64_t)states), op, err, errlen)))
        return rc;
    *total = sqlite3_column_int64(st, 0);
    done(st);
    if ((rc = prep(s, (enum query)(Q_TRIAL_PAGE + sort), &st, op, err, errlen))) return rc;
    /* ?5 (now) is used by the duration orders only */
    int brc = sort == ST_SORT_DURATION || sort == ST_SORT_DURATION_DESC
                  ? bind(st, "iiiir", study_id, (int64_t)states, limit, offset, now_s)
                  : bind(st, "iiii", study_id, (int64_t)states, limit, offset);
    *out = read_rows(s, st, brc, op, &trial_rows, n, &rc, err, errlen);
    return rc;
}

/* Where st_trial_best's row goes. */
typedef struct best_row {
    int64_t *number;
    double *value;
} best_row;

static int read_best(sqlite3_stmt *st, void *row, char *err, size_t errlen) {
    best_row *b = row;
    *b->number = sqlite3_column_int64(st, 0);
    *b->value = sqlite3_column_double(st, 1);
    (void)err, (void)errlen;
    return 0;
}

int st_trial_best(st_store *s, int64_t study_id, int maximize, int64_t *number, double *value,
                  int *found, char *err, size_t errlen) {
    assert(s && number && value && found);
    *found = 0;
    char op[96];
    snprintf(op, sizeof op, "finding the best trial of study %lld", (long long)study_id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, maximize ? Q_TRIAL_BEST_MAX : Q_TRIAL_BEST_MIN, &st, op, err, errlen);
    if (rc) return rc;
    best_row row = {number, value};
    return read_one(s, st, bind(st, "i", study_id), op, read_best, &row, found, err, errlen);
}

int st_trial_span(st_store *s, int64_t study_id, double *first_start, double *last_finish,
                  int64_t *active, char *err, size_t errlen) {
    assert(s && first_start && last_finish && active);
    char op[96];
    snprintf(op, sizeof op, "reading the times of study %lld", (long long)study_id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_TRIAL_SPAN, &st, op, err, errlen);
    if (rc || (rc = step_row(s, st, bind(st, "i", study_id), op, err, errlen))) return rc;
    *first_start = col_real(st, 0);
    *last_finish = col_real(st, 1);
    *active = sqlite3_column_int64(st, 2);
    done(st);
    return 0;
}

/* Where st_trial_outcomes's rows go. */
typedef struct outcome_sink {
    void (*fn)(void *ctx, int64_t number, double objective);
    void *ctx;
} outcome_sink;

static int outcome_row(sqlite3_stmt *st, void *arg, char *err, size_t errlen) {
    const outcome_sink *o = arg;
    o->fn(o->ctx, sqlite3_column_int64(st, 0), sqlite3_column_double(st, 1));
    (void)err, (void)errlen;
    return 0;
}

int st_trial_outcomes(st_store *s, int64_t study_id,
                      void (*fn)(void *ctx, int64_t number, double objective), void *ctx,
                      char *err, size_t errlen) {
    assert(s && fn);
    char op[96];
    snprintf(op, sizeof op, "reading the outcomes of study %lld", (long long)study_id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_TRIAL_OUTCOMES, &st, op, err, errlen);
    if (rc) return rc;
    outcome_sink o = {fn, ctx};
    return each_row(s, st, bind(st, "i", study_id), op, outcome_row, &o, err, errlen);
}

/* Where st_trial_states's rows go. */
typedef struct state_sink {
    void (*fn)(void *ctx, int64_t number, st_trial_state state);
    void *ctx;
    int64_t study_id;
} state_sink;

static int state_row(sqlite3_stmt *st, void *arg, char *err, size_t errlen) {
    const state_sink *o = arg;
    int64_t number = sqlite3_column_int64(st, 0);
    int state = st_trial_state_parse((const char *)sqlite3_column_text(st, 1));
    if (state < 0) {
        char what[96];
        snprintf(what, sizeof what, "trial %lld of study %lld", (long long)number,
                 (long long)o->study_id);
        return bad_state(what, st, 1, err, errlen);
    }
    o->fn(o->ctx, number, (st_trial_state)state);
    return 0;
}

int st_trial_states(st_store *s, int64_t study_id,
                    void (*fn)(void *ctx, int64_t number, st_trial_state state), void *ctx,
                    char *err, size_t errlen) {
    assert(s && fn);
    char op[96];
    snprintf(op, sizeof op, "reading the trial states of study %lld", (long long)study_id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_TRIAL_STATES, &st, op, err, errlen);
    if (rc) return rc;
    state_sink o = {fn, ctx, study_id};
    return each_row(s, st, bind(st, "i", study_id), op, state_row, &o, err, errlen);
}

/* Where a points query's rows go. */
typedef struct point_sink {
    void (*fn)(void *ctx, const st_point *p);
    void *ctx;
} point_sink;

static int point_row(sqlite3_stmt *st, void *arg, char *err, size_t errlen) {
    const point_sink *o = arg;
    const unsigned char *replica = sqlite3_column_text(st, 2);
    st_point p = {.trial = sqlite3_column_int64(st, 0),
                  .step = sqlite3_column_int64(st, 1),
                  .replica = replica ? (const char *)replica : "",
                  .timestamp = sqlite3_column_double(st, 3),
                  .seq = sqlite3_column_int64(st, 4),
                  .has_value = sqlite3_column_type(st, 5) != SQLITE_NULL,
                  .attempt =
                      sqlite3_column_type(st, 6) == SQLITE_NULL ? 0 : sqlite3_column_int(st, 6)};
    p.value = p.has_value ? sqlite3_column_double(st, 5) : 0;
    o->fn(o->ctx, &p);
    (void)err, (void)errlen;
    return 0;
}

int st_points_since(st_store *s, int64_t study_id, const char *metric, int64_t after,
                    int64_t limit, void (*fn)(void *ctx, const st_point *p), void *ctx,
                    char *err, size_t errlen) {
    assert(s && metric && fn);
    char op[128];
    snprintf(op, sizeof op, "reading the new measurements of study %lld", (long long)study_id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_POINTS_SINCE, &st, op, err, errlen);
    if (rc) return rc;
    point_sink o = {fn, ctx};
    return each_row(s, st, bind(st, "itii", study_id, metric, after, limit), op, point_row, &o,
                    err, errlen);
}

int st_points_all(st_store *s, int64_t study_id, const char *metric,
                  void (*fn)(void *ctx, const st_point *p), void *ctx, char *err,
                  size_t errlen) {
    assert(s && metric && fn);
    char op[128];
    snprintf(op, sizeof op, "reading the learning curves of study %lld", (long long)study_id);
    sqlite3_stmt *st = NULL;
    int rc = prep(s, Q_POINTS_ALL, &st, op, err, errlen);
    if (rc) return rc;
    point_sink o = {fn, ctx};
    return each_row(s, st, bind(st, "it", study_id, metric), op, point_row, &o, err, errlen);
}

/* ---------------------------------------------------------------------------------
 * Caller's transactions
 * --------------------------------------------------------------------------------- */

int st_read(st_store *s, int (*fn)(st_store *s, void *ctx), void *ctx, char *err,
            size_t errlen) {
    assert(s && fn);
    if (s->depth > 0) return fn(s, ctx);
    int rc = exec_q(s, Q_BEGIN_READ, "starting a read", err, errlen);
    if (rc) return rc;
    s->depth++;
    int frc = fn(s, ctx);
    char msg[512] = "";
    /* A read-only transaction: COMMIT and ROLLBACK end it alike; COMMIT can only fail if
     * SQLite already ended it, which leaves nothing to undo. */
    if (!sqlite3_get_autocommit(s->db)) exec_q(s, Q_COMMIT, "ending a read", msg, sizeof msg);
    s->depth--;
    if (frc == 0 && msg[0]) return tn_error(err, errlen, TN_EIO, "%s", msg);
    return frc;
}

int st_transaction(st_store *s, int (*fn)(st_store *s, void *ctx), void *ctx, char *err,
                   size_t errlen) {
    assert(s && fn);
    int rc = tx_begin(s, "starting a transaction", err, errlen);
    if (rc) return rc;
    if (err && errlen > 0) err[0] = '\0'; /* so fn's own message, if any, is kept */
    int frc = fn(s, ctx);
    if (frc != 0) {
        tx_rollback(s, err, errlen);
        if (err && errlen > 0 && err[0] == '\0')
            tn_error(err, errlen, frc, "%s: a transaction failed (%d: %s) and was rolled back",
                     s->path, frc, tn_strerror(frc));
        return frc;
    }
    return tx_commit(s, "committing a transaction", err, errlen);
}
