/*
 * store.h — every study in one SQLite file: specs, trials, measurements, events.
 *
 * The file (default tuner.db; --db or $TUNER_DB) is opened in WAL mode with a busy
 * timeout, so several tuner processes (a `run`, an `ask`, a dashboard) can share it.
 * Every state change is one transaction; trial numbers are handed out inside an
 * IMMEDIATE transaction, so concurrent askers never get the same number. The schema
 * is versioned (table meta); an older schema is migrated, a newer one refused. The
 * schema, as tables: docs/store.md. A lookup that may find nothing (st_study_get, ...)
 * returns 0 with *found 0 then: only errors are negative codes (docs/architecture.md).
 */
#ifndef TN_TUNER_STORE_H
#define TN_TUNER_STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct st_store st_store;

/* Study states, as stored (the names) and as the code knows them (the enum). */
typedef enum st_study_state {
    ST_STUDY_CREATED,   /* stored, never run (create; ask/tell until it ends) */
    ST_STUDY_RUNNING,   /* a tuner is running it (or was, and crashed) */
    ST_STUDY_STOPPED,   /* interrupted (Ctrl-C, cancel); resumable */
    ST_STUDY_SUCCEEDED, /* all trials done */
    ST_STUDY_FAILED,    /* too many failed trials, or an error */
    ST_STUDY_CANCELLED, /* tuner cancel */
    ST_STUDY_NSTATES
} st_study_state;

/* Trial states (AI Platform's, plus STOPPED for early stopping), in lifecycle order:
 * the order of st_trial_counts' counts and of st_trial_page's state bits. */
typedef enum st_trial_state {
    ST_TRIAL_PENDING,   /* created (asked), not started */
    ST_TRIAL_RUNNING,
    ST_TRIAL_SUCCEEDED,
    ST_TRIAL_FAILED,
    ST_TRIAL_STOPPED,   /* stopped early; keeps its last measurement */
    ST_TRIAL_CANCELLED,
    ST_TRIAL_NSTATES
} st_trial_state;

/* The states' names, as stored and shown, indexed by state. */
extern const char *const st_study_state_names[ST_STUDY_NSTATES];
extern const char *const st_trial_state_names[ST_TRIAL_NSTATES];
/* The state's name ("CREATED", "PENDING", ...); never NULL. */
const char *st_study_state_name(st_study_state state);
const char *st_trial_state_name(st_trial_state state);
/* The state with that name (exact, upper case), or -1 when there is none. */
int st_study_state_parse(const char *name);
int st_trial_state_parse(const char *name);
/* Whether a study in that state is over: SUCCEEDED, FAILED or CANCELLED (not resumable). */
int st_study_state_final(st_study_state state);
/* Whether a trial in that state is over: neither PENDING nor RUNNING. */
int st_trial_state_final(st_trial_state state);

typedef struct st_study {
    int64_t id;
    char *name;         /* jobId */
    char *spec;         /* the spec's JSON text as given */
    st_study_state state;
    int64_t seed;
    double created;     /* seconds since the epoch */
    double updated;
    char *error;        /* why it failed, or NULL */
} st_study;

/* The most values a trial holds: one per metric of its study (spec.h's
 * SPEC_MAX_METRICS). */
#define ST_MAX_VALUES 16

typedef struct st_trial {
    int64_t study_id;
    int64_t number;     /* 1, 2, ... within the study */
    char *params;       /* JSON object {"name": value, ...} (numbers, or strings for
                           categorical parameters) */
    st_trial_state state;
    int has_objective;
    double objective;   /* the study's first metric: values[0] */
    int nvalues;        /* when has_objective: its value of each of the study's metrics,
                           in the spec's order (values[0] == objective); read back as 1
                           (the objective) for a trial stored without more, 0 when it
                           has no objective. Stored only for nvalues >= 2 (column
                           trials.objectives, docs/store.md) */
    double values[ST_MAX_VALUES];
    double created, started, finished;  /* 0 when not yet */
    int attempts;       /* job runs started (1 + retries) */
    int restarts;       /* replica restarts in all */
    char *error;        /* why it failed, or NULL */
    char *executor_job; /* the executor's handle of the trial's job ("slurm:JOBID"), or
                           NULL: a resumed tuner re-attaches to it */
    int64_t changed;    /* the study's trial change sequence at the trial's last write
                           (create or update): it grows with every write, so "changed
                           after N" finds what is new (the dashboard's live updates) */
    int has_last_step;  /* st_trial_page and st_trial_changes only: whether it has */
    int64_t last_step;  /*   measurements, and the highest step among them */
} st_trial;

typedef struct st_measurement {
    int64_t step;       /* global_step (or the record's position when none) */
    char *replica;      /* "chief:0", "worker:1", ... */
    char *metrics;      /* JSON object of the record's metrics as numbers */
    double timestamp;   /* the record's timestamp */
    int attempt;        /* which run of the replica wrote it: 1 for its first start in
                           the trial, 2 for the next (an in-place restart or a re-run of
                           the job), ...; 0 when not known (stored as NULL: rows of a
                           store older than schema version 4). docs/store.md */
} st_measurement;

typedef struct st_event {
    double time;
    char *replica;      /* NULL for job-level events */
    char *kind;         /* the executor's (EX_EV_* in executor/contract.h: "started",
                           "exited", "restarted", "metrics" of a replica; "submitted",
                           "queued", "running", "retrying", "stopping" of the job) or the
                           study loop's ("early_stopping": a rule's decision; "killed": a
                           second signal killed the replicas, whose exits are not stored) */
    char *detail;       /* a sentence for people, or NULL */
    int has_exit_code;  /* "exited": how the run ended, as data (not in the detail): */
    int exit_code;      /*   its exit status when has_exit_code, */
    int signal;         /*   the signal that killed it, or 0 */
} st_event;

/* Opens (creating if needed) the store at path. On success *out is yours to close
 * with st_close. Errors name the file: not a database, newer schema, locked, ... */
int st_open(const char *path, st_store **out, char *err, size_t errlen);
/* Opens the store for a command that only reads it, never making one: a missing file,
 * an empty one or an SQLite file without the tuner's tables is an error (TN_EFORMAT
 * for the last two) and stays as it was. Otherwise as st_open when it can be written
 * (an older schema upgraded), else read-only, when the file system is read-only or the
 * user cannot write the file or its folder, with SQLite's locks when its -wal and
 * -shm files allow, else immutable. Then st_readonly says 1, every write fails with a
 * message that says why the store is read-only, and st_note may hold a warning to
 * show (a write-ahead log that cannot be read). */
int st_open_read(const char *path, st_store **out, char *err, size_t errlen);
int st_readonly(const st_store *s);
const char *st_note(const st_store *s);
void st_close(st_store *s);
/* The store's identity: a random id (32 hex digits) kept in table meta as 'store_id',
 * made by the first call on a store that has none (a store stays the same store when
 * it is moved; a new file at the same path is another). Job folders are marked with it
 * (tuner/jobdir.h). 0 with *out yours to free, or a negative code. */
int st_store_id(st_store *s, char **out, char *err, size_t errlen);

/* Creates a study. TN_EINVAL (message "a study named NAME already exists") when the
 * name is taken. *id gets its id. */
int st_study_create(st_store *s, const char *name, const char *spec_json, int64_t seed,
                    st_study_state state, int64_t *id, char *err, size_t errlen);
/* Looks a study up by name: 0 with *found 1 and *out filled (release with
 * st_study_clear), 0 with *found 0 and *out zeroed when there is none, or a negative
 * code. */
int st_study_get(st_store *s, const char *name, st_study *out, int *found, char *err,
                 size_t errlen);
/* All studies, oldest first; *out is an array of *n (release with st_studies_free). */
int st_study_list(st_store *s, st_study **out, size_t *n, char *err, size_t errlen);
/* Sets the state (and error, which may be NULL) of a study. */
int st_study_set_state(st_store *s, int64_t id, st_study_state state, const char *error,
                       char *err, size_t errlen);
void st_study_clear(st_study *st);
void st_studies_free(st_study *list, size_t n);

/* Creates trial number max+1 of the study in one IMMEDIATE transaction, in state
 * `state` (PENDING or RUNNING), and returns its number. Concurrent callers (other
 * processes included) get distinct numbers. */
int st_trial_create(st_store *s, int64_t study_id, const char *params_json,
                    st_trial_state state, int64_t *number, char *err, size_t errlen);
/* Reads one trial: 0 with *found (0 and *out zeroed when there is none), or a negative
 * code. */
int st_trial_get(st_store *s, int64_t study_id, int64_t number, st_trial *out, int *found,
                 char *err, size_t errlen);
/* All trials of a study in number order. */
int st_trial_list(st_store *s, int64_t study_id, st_trial **out, size_t *n, char *err,
                  size_t errlen);

/* Sets every trial of the study that is not in a final state (PENDING, RUNNING) to
 * CANCELLED, finished now, with error why (a study cancelled or failed while asks had
 * trials out). Call it inside a transaction (st_transaction). 0, or a negative code
 * with err. */
int st_trials_cancel_unfinished(st_store *s, int64_t study_id, const char *why, char *err,
                                size_t errlen);
/* Writes a trial's mutable fields (state, objective and values, times, attempts,
 * restarts, error, executor_job) as given in t (matched by study_id and number).
 * TN_EINVAL when has_objective and nvalues >= 2 with values[0] != objective or a value
 * that is not finite. */
int st_trial_update(st_store *s, const st_trial *t, char *err, size_t errlen);
/* Trials per state of a study (counts[state]), for progress lines. */
int st_trial_counts(st_store *s, int64_t study_id, int64_t counts[ST_TRIAL_NSTATES], char *err,
                    size_t errlen);
void st_trial_clear(st_trial *t);
void st_trials_free(st_trial *list, size_t n);

/* Stores a measurement of a trial; a record already stored (same replica, timestamp,
 * step and metrics) is ignored, so re-reading a metric file never duplicates (the
 * stored row, its attempt included, stays as it was), while another record with the
 * same timestamp is stored too. */
int st_measurement_add(st_store *s, int64_t study_id, int64_t trial, const st_measurement *m,
                       char *err, size_t errlen);
/* A trial's measurements by step, then replica, then arrival (the order they were
 * stored in); *out is yours (st_measurements_free). */
int st_measurement_list(st_store *s, int64_t study_id, int64_t trial, st_measurement **out,
                        size_t *n, char *err, size_t errlen);
void st_measurements_free(st_measurement *list, size_t n);

/* Appends an event of a trial (trial 0: of the study). */
int st_event_add(st_store *s, int64_t study_id, int64_t trial, const st_event *e, char *err,
                 size_t errlen);
int st_event_list(st_store *s, int64_t study_id, int64_t trial, st_event **out, size_t *n,
                  char *err, size_t errlen);
void st_events_free(st_event *list, size_t n);

/* ---- Reads for the dashboard (docs/dashboard.md) ----
 *
 * Every trial write (create, update) gives the trial the next number of its study's
 * trial change sequence (st_trial.changed), and every stored measurement the next
 * number of the study's measurement sequence; both are indexed, so a poller asks
 * "what changed after N" in O(log n) however many trials the study has. */

/* One measurement as a point of a metric: borrowed strings, valid during the callback. */
typedef struct st_point {
    int64_t trial;        /* the trial's number */
    int64_t step;
    const char *replica;  /* "chief:0", ... */
    double timestamp;
    int64_t seq;          /* the measurement's place in the study's sequence */
    int has_value;        /* whether the record holds the metric as a number */
    double value;
    int attempt;          /* the run of the replica that wrote it (0: not known) */
} st_point;

/* Orders of st_trial_page. Values and durations that are missing sort last either way;
 * ties go to the lower number. STATE is RUNNING, PENDING, SUCCEEDED, STOPPED, FAILED,
 * CANCELLED. */
enum st_sort {
    ST_SORT_NUMBER, ST_SORT_NUMBER_DESC, ST_SORT_VALUE, ST_SORT_VALUE_DESC,
    ST_SORT_DURATION, ST_SORT_DURATION_DESC, ST_SORT_STATE, ST_SORT_STATE_DESC, ST_SORT_COUNT
};

/* st_study_get by id: 0 with *found, or a negative code. */
int st_study_get_id(st_store *s, int64_t id, st_study *out, int *found, char *err,
                    size_t errlen);
/* The newest numbers of the study's trial change and measurement sequences (0 when
 * nothing was written yet). */
int st_study_cursor(st_store *s, int64_t study_id, int64_t *trials, int64_t *measurements,
                    char *err, size_t errlen);
/* Sets the state of a study that a run starts (RUNNING) or ends, in one transaction
 * with a look at its state now: where it is CANCELLED but was not when the run read it
 * (`seen`; at an end, the run's state until then, which it knows is not CANCELLED), a
 * `tuner cancel` came in meanwhile, and the study stays CANCELLED. *stored gets the state
 * the study has after. 0, or a negative code (TN_ENOENT: no such study). */
int st_study_set_run_state(st_store *s, int64_t id, st_study_state seen, st_study_state state,
                           const char *error, st_study_state *stored, char *err,
                           size_t errlen);
/* Cancels a study as `tuner cancel` does: reads its state and, unless it is SUCCEEDED,
 * FAILED or already CANCELLED, sets CANCELLED, in one transaction. *was gets the state
 * before. 0 with *found (0 when there is no such study), or a negative code. */
int st_study_cancel(st_store *s, int64_t study_id, st_study_state *was, int *found, char *err,
                    size_t errlen);

/* The trials written after change `after`, in change order, at most limit, with their
 * last step; *out is yours (st_trials_free). */
int st_trial_changes(st_store *s, int64_t study_id, int64_t after, int64_t limit,
                     st_trial **out, size_t *n, char *err, size_t errlen);
/* One page of a study's trials with their last step: those whose state is in `states`
 * (bit 1 << state; 0: every state), in the order
 * `sort` (enum st_sort; durations of running trials run to `now`), skipping offset,
 * at most limit. *total gets how many trials match. */
int st_trial_page(st_store *s, int64_t study_id, int sort, unsigned states, int64_t offset,
                  int64_t limit, double now, st_trial **out, size_t *n, int64_t *total,
                  char *err, size_t errlen);
/* The best SUCCEEDED trial with an objective (maximize: the highest; ties: the lower
 * number). 0 with *found, and *number and *value when found; or a negative code. */
int st_trial_best(st_store *s, int64_t study_id, int maximize, int64_t *number, double *value,
                  int *found, char *err, size_t errlen);
/* The earliest start and latest finish of the study's trials (0 when none) and how many
 * are RUNNING or PENDING. */
int st_trial_span(st_store *s, int64_t study_id, double *first_start, double *last_finish,
                  int64_t *active, char *err, size_t errlen);
/* Calls fn for every SUCCEEDED trial with an objective, in number order. */
int st_trial_outcomes(st_store *s, int64_t study_id,
                      void (*fn)(void *ctx, int64_t number, double objective), void *ctx,
                      char *err, size_t errlen);
/* Calls fn for every trial's number and state, in number order. */
int st_trial_states(st_store *s, int64_t study_id,
                    void (*fn)(void *ctx, int64_t number, st_trial_state state), void *ctx,
                    char *err, size_t errlen);

/* Calls fn for each measurement after `after` in the study's measurement sequence, in
 * that order, at most limit, with the value of `metric` when the record has it. */
int st_points_since(st_store *s, int64_t study_id, const char *metric, int64_t after,
                    int64_t limit, void (*fn)(void *ctx, const st_point *p), void *ctx,
                    char *err, size_t errlen);
/* Calls fn for each measurement of the study, with the value of `metric` when the
 * record has it, in trial, replica, timestamp order (the table's own, so nothing is
 * sorted): every learning curve in one query. The caller orders a curve's points (by
 * step, then attempt, then seq: the newest attempt of a step wins). */
int st_points_all(st_store *s, int64_t study_id, const char *metric,
                  void (*fn)(void *ctx, const st_point *p), void *ctx, char *err,
                  size_t errlen);

/* Runs fn with every read it makes seeing one snapshot of the store (BEGIN DEFERRED ...
 * COMMIT; in WAL mode this never waits for a writer and never blocks one); fn must not
 * write. Inside another transaction fn just runs. Returns fn's value, or an error. */
int st_read(st_store *s, int (*fn)(st_store *s, void *ctx), void *ctx, char *err,
            size_t errlen);

/* Runs fn inside one transaction (BEGIN IMMEDIATE ... COMMIT; ROLLBACK when fn returns
 * non-zero, whose value is then returned). For state changes that touch several rows. */
int st_transaction(st_store *s, int (*fn)(st_store *s, void *ctx), void *ctx, char *err,
                   size_t errlen);

#endif
