/*
 * store.h — every study in one SQLite file: specs, trials, measurements, events.
 *
 * The file (default tuner.db; --db or $TUNER_DB) is opened in WAL mode with a busy
 * timeout, so several tuner processes (a `run`, an `ask`, a dashboard) can share it.
 * Every state change is one transaction; trial numbers are handed out inside an
 * IMMEDIATE transaction, so concurrent askers never get the same number. The schema
 * is versioned (table meta); an older schema is migrated, a newer one refused. The
 * schema, as tables: docs/store.md.
 */
#ifndef TN_TUNER_STORE_H
#define TN_TUNER_STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct st_store st_store;

/* Study states. */
#define ST_STUDY_CREATED "CREATED"     /* stored, never run (create, or ask/tell) */
#define ST_STUDY_RUNNING "RUNNING"     /* a tuner is running it (or was, and crashed) */
#define ST_STUDY_STOPPED "STOPPED"     /* interrupted (Ctrl-C, cancel); resumable */
#define ST_STUDY_SUCCEEDED "SUCCEEDED" /* all trials done */
#define ST_STUDY_FAILED "FAILED"       /* too many failed trials, or an error */
#define ST_STUDY_CANCELLED "CANCELLED" /* tuner cancel */

/* Trial states (AI Platform's, plus STOPPED for early stopping). */
#define ST_TRIAL_PENDING "PENDING"     /* created (asked), not started */
#define ST_TRIAL_RUNNING "RUNNING"
#define ST_TRIAL_SUCCEEDED "SUCCEEDED"
#define ST_TRIAL_FAILED "FAILED"
#define ST_TRIAL_STOPPED "STOPPED"     /* stopped early; keeps its last measurement */
#define ST_TRIAL_CANCELLED "CANCELLED"

typedef struct st_study {
    int64_t id;
    char *name;         /* jobId */
    char *spec;         /* the spec's JSON text as given */
    char *state;        /* ST_STUDY_* */
    int64_t seed;
    double created;     /* seconds since the epoch */
    double updated;
    char *error;        /* why it failed, or NULL */
} st_study;

typedef struct st_trial {
    int64_t study_id;
    int64_t number;     /* 1, 2, ... within the study */
    char *params;       /* JSON object {"name": value, ...} (numbers, or strings for
                           categorical parameters) */
    char *state;        /* ST_TRIAL_* */
    int has_objective;
    double objective;
    double created, started, finished;  /* 0 when not yet */
    int attempts;       /* job runs started (1 + retries) */
    int restarts;       /* replica restarts in all */
    char *error;        /* why it failed, or NULL */
} st_trial;

typedef struct st_measurement {
    int64_t step;       /* global_step (or the record's position when none) */
    char *replica;      /* "chief:0", "worker:1", ... */
    char *metrics;      /* JSON object of the record's metrics as numbers */
    double timestamp;   /* the record's timestamp */
} st_measurement;

typedef struct st_event {
    double time;
    char *replica;      /* NULL for job-level events */
    char *kind;         /* "started", "exited", "restarted", "job_retry", "succeeded", ... */
    char *detail;       /* free text, or NULL */
} st_event;

/* Opens (creating if needed) the store at path. On success *out is yours to close
 * with st_close. Errors name the file: not a database, newer schema, locked, ... */
int st_open(const char *path, st_store **out, char *err, size_t errlen);
void st_close(st_store *s);

/* Creates a study. TN_EINVAL (message "a study named NAME already exists") when the
 * name is taken. *id gets its id. */
int st_study_create(st_store *s, const char *name, const char *spec_json, int64_t seed,
                    const char *state, int64_t *id, char *err, size_t errlen);
/* Looks a study up by name: 0 and *out filled (release with st_study_clear), 1 when
 * there is none, negative on error. */
int st_study_get(st_store *s, const char *name, st_study *out, char *err, size_t errlen);
/* All studies, oldest first; *out is an array of *n (release with st_studies_free). */
int st_study_list(st_store *s, st_study **out, size_t *n, char *err, size_t errlen);
/* Sets the state (and error, which may be NULL) of a study. */
int st_study_set_state(st_store *s, int64_t id, const char *state, const char *error,
                       char *err, size_t errlen);
void st_study_clear(st_study *st);
void st_studies_free(st_study *list, size_t n);

/* Creates trial number max+1 of the study in one IMMEDIATE transaction, in state
 * `state` (PENDING or RUNNING), and returns its number. Concurrent callers (other
 * processes included) get distinct numbers. */
int st_trial_create(st_store *s, int64_t study_id, const char *params_json, const char *state,
                    int64_t *number, char *err, size_t errlen);
/* Reads one trial: 0, 1 when there is none, negative on error. */
int st_trial_get(st_store *s, int64_t study_id, int64_t number, st_trial *out, char *err,
                 size_t errlen);
/* All trials of a study in number order. */
int st_trial_list(st_store *s, int64_t study_id, st_trial **out, size_t *n, char *err,
                  size_t errlen);
/* Writes a trial's mutable fields (state, objective, times, attempts, restarts, error)
 * as given in t (matched by study_id and number). */
int st_trial_update(st_store *s, const st_trial *t, char *err, size_t errlen);
/* Trials per state of a study, for progress lines: counts of PENDING, RUNNING,
 * SUCCEEDED, FAILED, STOPPED, CANCELLED in that order. */
int st_trial_counts(st_store *s, int64_t study_id, int64_t counts[6], char *err, size_t errlen);
void st_trial_clear(st_trial *t);
void st_trials_free(st_trial *list, size_t n);

/* Stores a measurement of a trial; a record already stored (same replica and
 * timestamp) is ignored, so re-reading a metric file never duplicates. */
int st_measurement_add(st_store *s, int64_t study_id, int64_t trial, const st_measurement *m,
                       char *err, size_t errlen);
int st_measurement_list(st_store *s, int64_t study_id, int64_t trial, st_measurement **out,
                        size_t *n, char *err, size_t errlen);
void st_measurements_free(st_measurement *list, size_t n);

/* Appends an event of a trial (trial 0: of the study). */
int st_event_add(st_store *s, int64_t study_id, int64_t trial, const st_event *e, char *err,
                 size_t errlen);
int st_event_list(st_store *s, int64_t study_id, int64_t trial, st_event **out, size_t *n,
                  char *err, size_t errlen);
void st_events_free(st_event *list, size_t n);

/* Runs fn inside one transaction (BEGIN IMMEDIATE ... COMMIT; ROLLBACK when fn returns
 * non-zero, whose value is then returned). For state changes that touch several rows. */
int st_transaction(st_store *s, int (*fn)(st_store *s, void *ctx), void *ctx, char *err,
                   size_t errlen);

#endif
