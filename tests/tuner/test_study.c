/*
 * test_study.c — the study loop (study_run) and the single-trial operations (study_ask,
 * study_tell, study_best_index, study_preflight) against a real store and real local
 * replicas: small /bin/sh programs that report a metric from their --x flag.
 *
 * Covered: a grid study run to the end (every point once, objectives from the flags,
 * parallel trials, the study SUCCEEDED); failing trials ending the study at
 * maxFailedTrials with the last failure named; a study resumed after a crash (a trial
 * left PENDING runs again, the finished ones are counted, not re-run); ask and tell
 * (numbering, exhaustion, bad objectives, unknown and finished trials); the best
 * trial by goal with ties; the checks before anything runs.
 *
 * Scratch files go under $TN_TEST_TMP (or /tmp) and are removed at the end.
 */
#include "tuner/study.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/status.h"
#include "tests/check.h"
#include "tests/testutil.h"

static char g_dir[PATH_LEN];

/* Reports x as the metric "score"; fails (exit 1) when x is negative. */
static const char *const REPORT_X =
    "for a; do case $a in --x=*) x=${a#--x=};; esac; done; "
    "case $x in -*) echo bad x >&2; exit 1;; esac; "
    "echo \"{\\\"score\\\": \\\"$x\\\"}\" > $CLOUD_ML_HP_METRIC_FILE";

/* spec_parse of text as study `name`, each error printed. */
static int parse_spec(const char *text, const char *name, int ask_tell, tn_spec *spec) {
    spec_errors errs;
    int rc = spec_parse(text, name, ask_tell, spec, &errs);
    for (size_t i = 0; i < errs.n; i++)
        fprintf(stderr, "  spec: %s: %s\n", errs.items[i].path, errs.items[i].message);
    spec_errors_clear(&errs);
    return rc;
}

/* parse_spec of the JSON doc (consumed). */
static int parse_doc(json_t *doc, const char *name, int ask_tell, tn_spec *spec) {
    char *text = json_dumps(doc, 0);
    json_decref(doc);
    int rc = parse_spec(text, name, ask_tell, spec);
    free(text);
    return rc;
}

/* A spec of study `name`: a DISCRETE x over values (n of them) searched by algorithm,
 * run by REPORT_X (no command when ask_tell). Yours to spec_clear. */
static int make_spec(const char *name, const char *algorithm, const double *values, size_t n,
                     int max_trials, int parallel, int max_failed, int ask_tell,
                     tn_spec *spec) {
    json_t *vals = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(vals, json_real(values[i]));
    char job_dir[PATH_LEN];
    fmt_path(job_dir, "%s/runs/%s", g_dir, name);
    json_t *ti = json_pack(
        "{s:s, s:s, s:{s:i, s:i}, s:{s:s, s:s, s:i, s:i, s:i, s:s, s:[{s:s, s:s, s:o}]}}",
        "scaleTier", "BASIC", "jobDir", job_dir, "restartPolicy", "maxReplicaRestarts", 0,
        "maxJobRetries", 0, "hyperparameters", "goal", "MAXIMIZE",
        "hyperparameterMetricTag", "score", "maxTrials", max_trials, "maxParallelTrials",
        parallel, "maxFailedTrials", max_failed, "algorithm", algorithm, "params",
        "parameterName", "x", "type", "DISCRETE", "discreteValues", vals);
    if (!ask_tell)
        json_object_set_new(ti, "command", json_pack("[s, s, s, s]", "/bin/sh", "-c", REPORT_X,
                                                     "sh"));
    json_t *doc = json_pack("{s:s, s:o}", "jobId", name, "trainingInput", ti);
    return parse_doc(doc, name, ask_tell, spec);
}

/* A fresh store with the study of spec stored (state CREATED, seed 7). */
static st_store *store_with(const char *file, const tn_spec *spec, st_study *study) {
    int found;
    char path[PATH_LEN];
    fmt_path(path, "%s/%s", g_dir, file);
    unlink(path);
    st_store *st = NULL;
    char err[512];
    CHECK_MSG(st_open(path, &st, err, sizeof err) == 0, "%s", err);
    if (!st) return NULL;
    int64_t id = 0;
    CHECK(st_study_create(st, spec->job_id, "{}", 7, ST_STUDY_CREATED, &id, err, sizeof err) ==
          0);
    CHECK(st_study_get(st, spec->job_id, study, &found, err, sizeof err) == 0 && found);
    return st;
}

/* make_spec, then store_with in NAME.db: the store, with *spec and *study (close them
 * with close_study), or NULL (reported; nothing left to free). */
static st_store *open_study(const char *name, const char *algorithm, const double *values,
                            size_t n, int max_trials, int parallel, int max_failed,
                            int ask_tell, tn_spec *spec, st_study *study) {
    if (make_spec(name, algorithm, values, n, max_trials, parallel, max_failed, ask_tell,
                  spec) != 0) {
        CHECK_MSG(0, "the spec of %s does not parse", name);
        return NULL;
    }
    char file[128];
    snprintf(file, sizeof file, "%s.db", name);
    st_store *st = store_with(file, spec, study);
    if (!st) spec_clear(spec);
    return st;
}

static void close_study(st_store *st, st_study *study, tn_spec *spec) {
    st_study_clear(study);
    st_close(st);
    spec_clear(spec);
}

static study_opts quiet_opts(void) {
    return (study_opts){.cores = 2, .oversubscribe = 1, .poll_seconds = 0.05,
                        .grace_seconds = 1};
}

/* study_run of the study to the end (checked), then its trials (yours to
 * st_trials_free; *n of them, NULL and 0 when they cannot be listed). */
static st_trial *run_to_the_end(st_store *st, const tn_spec *spec, st_study *study, size_t *n) {
    int outcome;
    study_opts o = quiet_opts();
    char err[1024] = "";
    int rc = study_run(st, spec, study, &o, &outcome, err, sizeof err);
    CHECK_MSG(rc == 0 && outcome == STUDY_DONE, "study_run = %d (%d): %s", rc, outcome, err);
    st_trial *t = NULL;
    *n = 0;
    CHECK(st_trial_list(st, study->id, &t, n, err, sizeof err) == 0);
    return t;
}

/* The study's trials, and how many are in state. */
static int count_state(st_store *st, int64_t id, st_trial_state state) {
    st_trial *t = NULL;
    size_t n = 0;
    char err[512];
    if (st_trial_list(st, id, &t, &n, err, sizeof err) != 0) return -1;
    int k = 0;
    for (size_t i = 0; i < n; i++) k += t[i].state == state;
    st_trials_free(t, n);
    return k;
}

static void test_grid_study_runs_to_the_end(void) {
    int found;
    static const double xs[] = {1, 2, 3, 4};
    tn_spec spec;
    st_study study;
    st_store *st = open_study("grid", "GRID_SEARCH", xs, 4, 10, 2, 2, 0, &spec, &study);
    if (!st) return;
    char err[1024] = "";
    size_t n;
    st_trial *t = run_to_the_end(st, &spec, &study, &n);
    CHECK_INT_EQ(n, 4); /* the grid is exhausted before maxTrials */
    int seen[5] = {0};
    for (size_t i = 0; i < n; i++) {
        CHECK_MSG(t[i].state == ST_TRIAL_SUCCEEDED, "trial %lld is %s: %s",
                  (long long)t[i].number, st_trial_state_name(t[i].state),
                  t[i].error ? t[i].error : "");
        json_t *p = json_loads(t[i].params, 0, NULL);
        double x = json_number_value(json_object_get(p, "x"));
        json_decref(p);
        CHECK(t[i].has_objective && t[i].objective == x); /* the objective is its own x */
        if (x >= 1 && x <= 4) seen[(int)x]++;
        CHECK(t[i].attempts == 1 && t[i].finished >= t[i].started && t[i].started > 0);
    }
    CHECK(seen[1] == 1 && seen[2] == 1 && seen[3] == 1 && seen[4] == 1); /* each point once */
    long b = study_best_index(t, n, SPEC_MAXIMIZE);
    CHECK(b >= 0 && t[b].objective == 4);
    st_trials_free(t, n);
    st_study now;
    CHECK(st_study_get(st, "grid", &now, &found, err, sizeof err) == 0 && found &&
          now.state == ST_STUDY_SUCCEEDED && now.error == NULL);
    st_study_clear(&now);
    close_study(st, &study, &spec);
}

/* The spec (a JSON doc) of study `name` of two metrics, score (MAXIMIZE) then cost
 * (MINIMIZE), run by the shell script report, its hyperparameters' other fields
 * those of hp (consumed). */
static json_t *two_metric_doc(const char *name, const char *report, json_t *hp) {
    char job_dir[PATH_LEN];
    fmt_path(job_dir, "%s/runs/%s", g_dir, name);
    json_t *metrics = json_pack("{s:[{s:s, s:s}, {s:s, s:s}]}", "metrics", "metricId",
                                "score", "goal", "MAXIMIZE", "metricId", "cost", "goal",
                                "MINIMIZE");
    json_object_update(metrics, hp);
    json_decref(hp);
    return json_pack("{s:s, s:{s:s, s:s, s:[s, s, s, s], s:{s:i, s:i}, s:o}}", "jobId", name,
                     "trainingInput", "scaleTier", "BASIC", "jobDir", job_dir, "command",
                     "/bin/sh", "-c", report, "sh", "restartPolicy", "maxReplicaRestarts", 0,
                     "maxJobRetries", 0, "hyperparameters", metrics);
}

/* Reports x as "score" and a cost by x: x = 1 reports cost 100, then 9 (the last by
 * arrival counts); x = 2 cost 4; x = 3 no cost at all; x = 4 a cost that is NaN. */
static const char *const REPORT_TWO =
    "for a; do case $a in --x=*) x=${a#--x=};; esac; done; f=$CLOUD_ML_HP_METRIC_FILE; "
    "case $x in "
    "1*) echo '{\"timestamp\": 1, \"score\": \"1\", \"cost\": \"100\"}' > $f; "
    "    echo '{\"timestamp\": 2, \"score\": \"1\", \"cost\": \"9\"}' >> $f;; "
    "2*) echo '{\"score\": \"2\", \"cost\": \"4\"}' > $f;; "
    "3*) echo '{\"score\": \"3\"}' > $f;; "
    "*) echo '{\"score\": \"4\", \"cost\": \"nan\"}' > $f;; "
    "esac";

/* A study of two metrics (Vertex AI's "metrics") run to the end: every trial stores
 * both values (the first is the objective), and a trial without a number for the
 * second fails saying which metric. */
static void test_two_metrics(void) {
    int found;
    json_t *doc = two_metric_doc(
        "two", REPORT_TWO,
        json_pack("{s:i, s:i, s:i, s:s, s:[{s:s, s:s, s:[i, i, i, i]}]}", "maxTrials", 4,
                  "maxParallelTrials", 2, "maxFailedTrials", 3, "algorithm", "GRID_SEARCH",
                  "params", "parameterName", "x", "type", "DISCRETE", "discreteValues", 1,
                  2, 3, 4));
    tn_spec spec;
    if (parse_doc(doc, "two", 0, &spec) != 0) {
        CHECK_MSG(0, "the two-metric spec does not parse");
        return;
    }
    CHECK_INT_EQ(spec.nmetrics, 2);
    st_study study;
    st_store *st = store_with("two.db", &spec, &study);
    if (!st) return;
    size_t n;
    st_trial *t = run_to_the_end(st, &spec, &study, &n);
    CHECK_INT_EQ(n, 4);
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_loads(t[i].params, 0, NULL);
        int x = (int)json_number_value(json_object_get(p, "x"));
        json_decref(p);
        const char *why = t[i].error ? t[i].error : "";
        switch (x) {
        case 1:
        case 2:
            CHECK_MSG(t[i].state == ST_TRIAL_SUCCEEDED, "x = %d: %s", x, why);
            CHECK(t[i].has_objective && t[i].objective == x && t[i].nvalues == 2);
            CHECK(t[i].values[0] == x && t[i].values[1] == (x == 1 ? 9 : 4));
            break;
        case 3:
            CHECK_MSG(t[i].state == ST_TRIAL_FAILED, "x = 3: %s", st_trial_state_name(t[i].state));
            CHECK_STR_CONTAINS(why, "no replica reported the metric 'cost' (metric 2 of the "
                                    "study's 2");
            break;
        case 4:
            CHECK_MSG(t[i].state == ST_TRIAL_FAILED, "x = 4: %s", st_trial_state_name(t[i].state));
            CHECK_STR_CONTAINS(why, "the last value of the metric 'cost' (metric 2 of the "
                                    "study's 2) is nan");
            break;
        default: CHECK_MSG(0, "x = %d", x);
        }
    }
    st_trials_free(t, n);
    char err[512];
    st_study now;
    CHECK(st_study_get(st, "two", &now, &found, err, sizeof err) == 0 && found && now.state == ST_STUDY_SUCCEEDED);
    st_study_clear(&now);
    close_study(st, &study, &spec);
}

/* Three steps, 0.3 s apart, of score and cost by x: x = 1 and 2 are good at every
 * step, x = 3 is worse in both from step 1 on (and sleeps on after its first). */
static const char *const REPORT_STEPS =
    "for a; do case $a in --x=*) x=${a#--x=};; esac; done; f=$CLOUD_ML_HP_METRIC_FILE; "
    "case $x in 3*) s=0.1; c=9;; *) s=0.9; c=1;; esac; "
    "for i in 1 2 3; do "
    "  echo \"{\\\"timestamp\\\": $i, \\\"global_step\\\": $i, \\\"score\\\": \\\"$s\\\", "
    "\\\"cost\\\": \\\"$c\\\"}\" >> $f; sleep 0.3; "
    "done";

/* Early stopping by dominance in a study of two metrics: trial 3, dominated at its
 * first step by both completed trials (minTrials 2), is STOPPED with the rule's
 * reason; the first two run to the end. */
static void test_two_metrics_dominance(void) {
    json_t *doc = two_metric_doc(
        "dom", REPORT_STEPS,
        json_pack("{s:i, s:i, s:s, s:{s:s, s:i, s:i}, s:[{s:s, s:s, s:[i, i, i]}]}",
                  "maxTrials", 3, "maxParallelTrials", 1, "algorithm", "GRID_SEARCH",
                  "earlyStopping", "policy", "dominance", "minTrials", 2, "minStep", 1,
                  "params", "parameterName", "x", "type", "DISCRETE", "discreteValues", 1,
                  2, 3));
    tn_spec spec;
    if (parse_doc(doc, "dom", 0, &spec) != 0) {
        CHECK_MSG(0, "the dominance spec does not parse");
        return;
    }
    CHECK_INT_EQ(spec.early_stopping.policy, ES_DOMINANCE);
    st_study study;
    st_store *st = store_with("dom.db", &spec, &study);
    if (!st) return;
    size_t n;
    st_trial *t = run_to_the_end(st, &spec, &study, &n);
    CHECK_INT_EQ(n, 3);
    for (size_t i = 0; i < n; i++) {
        const char *why = t[i].error ? t[i].error : "";
        if (t[i].number < 3) {
            CHECK_MSG(t[i].state == ST_TRIAL_SUCCEEDED && t[i].nvalues == 2 &&
                          t[i].values[0] == 0.9 && t[i].values[1] == 1,
                      "trial %lld: %s %s", (long long)t[i].number,
                      st_trial_state_name(t[i].state), why);
        } else {
            CHECK_MSG(t[i].state == ST_TRIAL_STOPPED, "trial 3: %s %s",
                      st_trial_state_name(t[i].state), why);
            CHECK_STR_CONTAINS(why, "dominance: stop: step 1: dominated by 2 of 2 completed "
                                    "trials (minTrials 2)");
            CHECK(t[i].nvalues == 2 && t[i].values[0] == 0.1 && t[i].values[1] == 9);
        }
    }
    st_trials_free(t, n);
    close_study(st, &study, &spec);
}

static void test_failures_end_the_study(void) {
    int outcome, found;
    static const double xs[] = {-5, -4, -3, -2, -1};
    tn_spec spec;
    st_study study;
    st_store *st = open_study("failing", "RANDOM_SEARCH", xs, 5, 5, 1, 2, 0, &spec, &study);
    if (!st) return;
    study_opts o = quiet_opts();
    char err[2048] = "";
    int rc = study_run(st, &spec, &study, &o, &outcome, err, sizeof err);
    CHECK_INT_EQ(rc, 0);
    CHECK_INT_EQ(outcome, STUDY_FAILED);
    CHECK_STR_CONTAINS(err, "2 trials failed (maxFailedTrials is 2)");
    CHECK_STR_CONTAINS(err, "the last, trial 2:");
    CHECK_STR_CONTAINS(err, "bad x"); /* the log's last line travels with it */
    CHECK_INT_EQ(count_state(st, study.id, ST_TRIAL_FAILED), 2);
    st_study now;
    CHECK(st_study_get(st, "failing", &now, &found, err, sizeof err) == 0 && found &&
          now.state == ST_STUDY_FAILED && now.error && strstr(now.error, "maxFailedTrials"));
    st_study_clear(&now);
    /* resuming a study that already failed that often refuses at once */
    rc = study_run(st, &spec, &study, &o, &outcome, err, sizeof err);
    CHECK_INT_EQ(rc, TN_EINVAL);
    CHECK_STR_CONTAINS(err, "already has 2 failed trials");
    close_study(st, &study, &spec);
}

/* A `tuner cancel` between the read of the study and the run's start (a resume that
 * spent minutes installing packages) stands: nothing runs, the study stays CANCELLED
 * (before, the run set RUNNING over it and ran every trial). */
static void test_cancel_while_setting_up(void) {
    int outcome, found;
    static const double xs[] = {1, 2, 3};
    tn_spec spec;
    st_study study;
    st_store *st = open_study("cancelsetup", "GRID_SEARCH", xs, 3, 3, 1, 3, 0, &spec, &study);
    if (!st) return;
    char err[1024] = "";
    st_study_state was;
    CHECK(st_study_cancel(st, study.id, &was, &found, err, sizeof err) == 0 && found);
    study_opts o = quiet_opts();
    int rc = study_run(st, &spec, &study, &o, &outcome, err, sizeof err);
    CHECK_MSG(rc == 0, "study_run: %s", err);
    CHECK_INT_EQ(outcome, STUDY_INTERRUPTED);
    st_trial *t = NULL;
    size_t n = 0;
    CHECK(st_trial_list(st, study.id, &t, &n, err, sizeof err) == 0);
    CHECK_MSG(n == 0, "%zu trials were created", n);
    st_trials_free(t, n);
    st_study now;
    CHECK(st_study_get(st, "cancelsetup", &now, &found, err, sizeof err) == 0 && found);
    CHECK_MSG(now.state == ST_STUDY_CANCELLED, "the study is %s",
              st_study_state_name(now.state));
    st_study_clear(&now);
    close_study(st, &study, &spec);
}

static void test_resume_runs_what_was_left(void) {
    int found;
    static const double xs[] = {1, 2, 3};
    tn_spec spec;
    st_study study;
    st_store *st = open_study("resumed", "GRID_SEARCH", xs, 3, 3, 1, 3, 0, &spec, &study);
    if (!st) return;
    char err[1024] = "";
    /* what a crashed run left: trial 1 done, trial 2 started but never finished */
    int64_t num = 0;
    CHECK(st_trial_create(st, study.id, "{\"x\": 1}", ST_TRIAL_RUNNING, &num, err,
                          sizeof err) == 0);
    st_trial t;
    CHECK(st_trial_get(st, study.id, num, &t, &found, err, sizeof err) == 0 && found);
    t.state = ST_TRIAL_SUCCEEDED;
    t.has_objective = 1;
    t.objective = 1;
    t.attempts = 1;
    t.finished = t.started + 1;
    CHECK(st_trial_update(st, &t, err, sizeof err) == 0);
    st_trial_clear(&t);
    CHECK(st_trial_create(st, study.id, "{\"x\": 2}", ST_TRIAL_RUNNING, &num, err,
                          sizeof err) == 0);
    size_t n;
    st_trial *all = run_to_the_end(st, &spec, &study, &n);
    CHECK_INT_EQ(n, 3);
    if (n == 3) {
        CHECK(all[0].state == ST_TRIAL_SUCCEEDED && all[0].attempts == 1); /* not re-run */
        CHECK(all[1].state == ST_TRIAL_SUCCEEDED && all[1].objective == 2); /* re-run */
        CHECK(all[2].state == ST_TRIAL_SUCCEEDED && all[2].objective == 3); /* the rest */
    }
    st_trials_free(all, n);
    close_study(st, &study, &spec);
}

/* A trial an earlier run left unfinished whose stored parameters no longer fit the
 * space (the store edited) fails, saying why, instead of being passed over and left
 * RUNNING for good in a study that then ends. */
static void test_rerun_with_bad_params_fails(void) {
    static const double xs[] = {1, 2, 3};
    tn_spec spec;
    st_study study;
    st_store *st = open_study("badrerun", "GRID_SEARCH", xs, 3, 3, 1, 3, 0, &spec, &study);
    if (!st) return;
    char err[1024] = "";
    int64_t num = 0;
    CHECK(st_trial_create(st, study.id, "{\"y\": 1}", ST_TRIAL_RUNNING, &num, err,
                          sizeof err) == 0);
    size_t n;
    st_trial *all = run_to_the_end(st, &spec, &study, &n);
    CHECK_INT_EQ(n, 3);
    if (n == 3) {
        CHECK_MSG(all[0].state == ST_TRIAL_FAILED, "trial 1 is %s",
                  st_trial_state_name(all[0].state));
        CHECK_STR_CONTAINS(all[0].error ? all[0].error : "",
                           "cannot run it again: its stored parameters do not fit");
        CHECK(all[1].state == ST_TRIAL_SUCCEEDED && all[2].state == ST_TRIAL_SUCCEEDED);
    }
    st_trials_free(all, n);
    close_study(st, &study, &spec);
}

/* open_study of an ask/tell study `name`: a grid of two points, x = 0.25 and 0.5
 * (5 trials at most, one at a time, 5 may fail). */
static st_store *open_ask_tell_grid(const char *name, tn_spec *spec, st_study *study) {
    static const double xs[] = {0.25, 0.5};
    return open_study(name, "GRID_SEARCH", xs, 2, 5, 1, 5, 1, spec, study);
}

/* tell with a value of each metric: stored in order, the first the objective; the
 * checks on the values (finite, 1 to ST_MAX_VALUES). */
static void test_tell_values(void) {
    int found, exhausted;
    tn_spec spec;
    st_study study;
    st_store *st = open_ask_tell_grid("tellv", &spec, &study);
    if (!st) return;
    char err[1024] = "";
    int64_t a = 0;
    char *pa = NULL;
    CHECK(study_ask(st, &spec, &study, &a, &pa, &exhausted, err, sizeof err) == 0 && !exhausted);
    free(pa);
    const double bad[] = {1, NAN};
    CHECK_INT_EQ(study_tell_values(st, &spec, &study, a, 0, bad, 2, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "every value must be a finite number");
    double many[ST_MAX_VALUES + 1] = {0};
    CHECK_INT_EQ(study_tell_values(st, &spec, &study, a, 0, many, ST_MAX_VALUES + 1, err, sizeof err),
                 TN_EINVAL);
    CHECK_INT_EQ(study_tell_values(st, &spec, &study, a, 0, many, 0, err, sizeof err), TN_EINVAL);
    const double two[] = {0.75, -2};
    CHECK_MSG(study_tell_values(st, &spec, &study, a, 0, two, 2, err, sizeof err) == 0, "%s", err);
    st_trial t;
    CHECK(st_trial_get(st, study.id, a, &t, &found, err, sizeof err) == 0 && found);
    CHECK(t.state == ST_TRIAL_SUCCEEDED && t.objective == 0.75 && t.nvalues == 2 &&
          t.values[1] == -2);
    st_trial_clear(&t);
    close_study(st, &study, &spec);
}

/* An ask/tell study `name` of x in [0, 1] by the default sampler, with the metrics
 * (a JSON array; NULL: one metric, "score", MAXIMIZE) and resuming `previous` (or
 * NULL), created in st (seed 7) with its spec text stored as the warm start reads it. */
static int make_warm_study(st_store *st, const char *name, const char *metrics,
                           const char *previous, tn_spec *spec, st_study *study) {
    char *metric = metrics ? tn_xasprintf("\"metrics\": %s", metrics)
                           : tn_xasprintf("\"goal\": \"MAXIMIZE\", "
                                          "\"hyperparameterMetricTag\": \"score\"");
    char *resume = previous ? tn_xasprintf(", \"resumePreviousJobId\": \"%s\"", previous)
                            : tn_xstrdup("");
    char *text = tn_xasprintf(
        "{\"jobId\": \"%s\", \"trainingInput\": {\"jobDir\": \"%s/runs/%s\", "
        "\"hyperparameters\": {%s, \"maxTrials\": 40%s, \"params\": [{\"parameterName\": "
        "\"x\", \"type\": \"DOUBLE\", \"minValue\": 0, \"maxValue\": 1}]}}}",
        name, g_dir, name, metric, resume);
    int rc = parse_spec(text, name, 1, spec);
    int64_t id = 0;
    int found = 0;
    char err[512] = "";
    if (!rc) rc = st_study_create(st, name, text, 7, ST_STUDY_CREATED, &id, err, sizeof err);
    if (!rc) rc = st_study_get(st, name, study, &found, err, sizeof err);
    CHECK_MSG(rc == 0 && found, "%s: %s", name, err);
    free(text);
    free(resume);
    free(metric);
    return rc == 0 && found ? 0 : -1;
}

/* The x of the next trial study_ask gives (NAN when it fails). */
static double ask_x(st_store *st, const tn_spec *spec, const st_study *study, int64_t *number) {
    char err[1024] = "", *params = NULL;
    int exhausted = 0;
    if (study_ask(st, spec, study, number, &params, &exhausted, err, sizeof err) != 0 ||
        exhausted) {
        CHECK_MSG(0, "ask %s: %s", study->name, err);
        return NAN;
    }
    json_t *p = json_loads(params, 0, NULL);
    double x = json_number_value(json_object_get(p, "x"));
    json_decref(p);
    free(params);
    return x;
}

/* resumePreviousJobId with several metrics: the earlier study's trials warm-start the
 * multi-objective sampler, matched by metricId (whatever their order there), so the
 * first suggestion is the model's, not the cold study's; an earlier study without
 * every metric warm-starts nothing. */
static void test_warm_start_metrics(void) {
    char path[PATH_LEN], err[1024] = "";
    fmt_path(path, "%s/warm.db", g_dir);
    unlink(path);
    st_store *st = NULL;
    CHECK_MSG(st_open(path, &st, err, sizeof err) == 0, "%s", err);
    if (!st) return;
    static const char *const MO = "[{\"metricId\": \"loss\", \"goal\": \"MINIMIZE\"}, "
                                  "{\"metricId\": \"acc\", \"goal\": \"MAXIMIZE\"}]",
                             *MO_TURNED = "[{\"metricId\": \"acc\", \"goal\": \"MAXIMIZE\"}, "
                                          "{\"metricId\": \"loss\", \"goal\": \"MINIMIZE\"}]";
    tn_spec sp[5];
    st_study s[5];
    const char *names[5] = {"prev_mo", "prev_one", "cold", "warm", "warm_from_one"};
    const char *metrics[5] = {MO_TURNED, NULL, MO, MO, MO};
    const char *prev[5] = {NULL, NULL, NULL, "prev_mo", "prev_one"};
    int made = 0;
    while (made < 5 &&
           make_warm_study(st, names[made], metrics[made], prev[made], &sp[made], &s[made]) == 0)
        made++;
    if (made == 5) {
        /* 12 told trials of each earlier study: acc = 1 - (x - 0.8)^2, loss = (x - 0.7)^2 */
        for (int i = 0; i < 12; i++) {
            int64_t n = 0;
            double x = ask_x(st, &sp[0], &s[0], &n), v[2] = {1 - (x - 0.8) * (x - 0.8),
                                                            (x - 0.7) * (x - 0.7)};
            CHECK_MSG(study_tell_values(st, &sp[0], &s[0], n, 0, v, 2, err, sizeof err) == 0, "%s", err);
            x = ask_x(st, &sp[1], &s[1], &n);
            CHECK_MSG(study_tell(st, &sp[1], &s[1], n, 0, v[0], err, sizeof err) == 0, "%s", err);
        }
        int64_t n;
        double cold = ask_x(st, &sp[2], &s[2], &n), warm = ask_x(st, &sp[3], &s[3], &n),
               from_one = ask_x(st, &sp[4], &s[4], &n);
        CHECK_MSG(warm != cold, "the warm start changed nothing: x = %g", warm);
        CHECK_MSG(warm > 0.5 && warm < 0.95, "the warm study's first x %g is not near the "
                  "earlier study's front, [0.7, 0.8]", warm);
        CHECK_MSG(from_one == cold, "a study without every metric warm-started: %g, cold %g",
                  from_one, cold);
    }
    for (int i = 0; i < made; i++) {
        st_study_clear(&s[i]);
        spec_clear(&sp[i]);
    }
    st_close(st);
}

static void test_ask_and_tell(void) {
    int found, exhausted;
    tn_spec spec;
    st_study study;
    st_store *st = open_ask_tell_grid("asktell", &spec, &study);
    if (!st) return;
    char err[1024] = "";
    int64_t a = 0, b = 0, c = 0;
    char *pa = NULL, *pb = NULL, *pc = NULL;
    CHECK_INT_EQ(study_ask(st, &spec, &study, &a, &pa, &exhausted, err, sizeof err), 0);
    CHECK(!exhausted);
    CHECK_INT_EQ(study_ask(st, &spec, &study, &b, &pb, &exhausted, err, sizeof err), 0);
    CHECK(!exhausted);
    CHECK(a == 1 && b == 2 && pa && pb && strcmp(pa, pb) != 0);
    /* the grid has two points: no third trial */
    CHECK_INT_EQ(study_ask(st, &spec, &study, &c, &pc, &exhausted, err, sizeof err), 0);
    CHECK(exhausted);
    CHECK(pc == NULL);
    CHECK_INT_EQ(study_tell(st, &spec, &study, a, 0, NAN, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "finite");
    CHECK_INT_EQ(study_tell(st, &spec, &study, a, 0, 0.75, err, sizeof err), 0);
    CHECK_INT_EQ(study_tell(st, &spec, &study, a, 0, 0.5, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "trial 1 of asktell is already SUCCEEDED");
    CHECK_INT_EQ(study_tell(st, &spec, &study, 99, 0, 0.5, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "has no trial 99");
    CHECK_INT_EQ(study_tell(st, &spec, &study, b, 1, NAN, err, sizeof err), 0); /* failed */
    st_trial t;
    CHECK(st_trial_get(st, study.id, a, &t, &found, err, sizeof err) == 0 && found &&
          t.state == ST_TRIAL_SUCCEEDED && t.objective == 0.75 && t.attempts == 1);
    st_trial_clear(&t);
    CHECK(st_trial_get(st, study.id, b, &t, &found, err, sizeof err) == 0 && found &&
          t.state == ST_TRIAL_FAILED && !t.has_objective);
    st_trial_clear(&t);
    free(pa);
    free(pb);
    close_study(st, &study, &spec);
}

/* The stored state of study `study` (-1 when it cannot be read). */
static int study_state_now(st_store *st, const st_study *study) {
    st_study now;
    int found = 0;
    char err[512];
    if (st_study_get_id(st, study->id, &now, &found, err, sizeof err) != 0 || !found) return -1;
    int state = (int)now.state;
    st_study_clear(&now);
    return state;
}

/* An ask/tell study ends as a run would: SUCCEEDED at the tell of its last trial or at
 * the ask that finds the grid exhausted with none out; FAILED at the tell that reaches
 * maxFailedTrials, the trials still out CANCELLED. A study over refuses asks (no trial
 * to give, saying why) and tells. */
static void test_ask_tell_study_ends(void) {
    tn_spec spec;
    st_study study;
    char err[1024] = "";
    int64_t n[3] = {0};
    int exhausted = 0;
    char *params = NULL;
    static const double xs[] = {0.1, 0.2, 0.3};
    /* maxTrials 2 of a grid of 3: the second tell ends it */
    st_store *st = open_study("atend", "GRID_SEARCH", xs, 3, 2, 1, 2, 1, &spec, &study);
    if (!st) return;
    for (int i = 0; i < 2; i++) ask_x(st, &spec, &study, &n[i]);
    CHECK_INT_EQ(study_tell(st, &spec, &study, n[0], 0, 0.5, err, sizeof err), 0);
    CHECK_INT_EQ(study_state_now(st, &study), ST_STUDY_CREATED); /* trial 2 is out */
    CHECK_INT_EQ(study_tell(st, &spec, &study, n[1], 1, 0, err, sizeof err), 0);
    CHECK_INT_EQ(study_state_now(st, &study), ST_STUDY_SUCCEEDED);
    CHECK_INT_EQ(study_ask(st, &spec, &study, &n[2], &params, &exhausted, err, sizeof err), 0);
    CHECK(exhausted);
    CHECK_STR_CONTAINS(err, "study atend is SUCCEEDED: it hands out no more trials");
    close_study(st, &study, &spec);

    /* the grid (2 points) exhausted before maxTrials (5): the ask that finds it so, with
     * none out, ends it */
    st = open_study("atgrid", "GRID_SEARCH", xs, 2, 5, 1, 5, 1, &spec, &study);
    if (!st) return;
    for (int i = 0; i < 2; i++) {
        ask_x(st, &spec, &study, &n[i]);
        CHECK_INT_EQ(study_tell(st, &spec, &study, n[i], 0, 0.5, err, sizeof err), 0);
    }
    CHECK_INT_EQ(study_state_now(st, &study), ST_STUDY_CREATED);
    CHECK_INT_EQ(study_ask(st, &spec, &study, &n[2], &params, &exhausted, err, sizeof err), 0);
    CHECK(exhausted && err[0] == '\0');
    CHECK_INT_EQ(study_state_now(st, &study), ST_STUDY_SUCCEEDED);
    close_study(st, &study, &spec);

    /* maxFailedTrials 1 of 3: the failed tell fails the study, the others' trials are
     * CANCELLED and their tells refused */
    st = open_study("atfail", "GRID_SEARCH", xs, 3, 3, 1, 1, 1, &spec, &study);
    if (!st) return;
    for (int i = 0; i < 3; i++) ask_x(st, &spec, &study, &n[i]);
    CHECK_INT_EQ(study_tell(st, &spec, &study, n[0], 0, 0.5, err, sizeof err), 0);
    CHECK_INT_EQ(study_tell(st, &spec, &study, n[1], 1, 0, err, sizeof err), 0);
    st_study now;
    int found = 0;
    CHECK(st_study_get_id(st, study.id, &now, &found, err, sizeof err) == 0 && found);
    CHECK_INT_EQ(now.state, ST_STUDY_FAILED);
    CHECK_MSG(now.error && strstr(now.error, "1 trial failed (maxFailedTrials is 1); the last, "
                                             "trial 2, by tuner tell --failed"),
              "%s", now.error ? now.error : "(no error)");
    st_study_clear(&now);
    st_trial t;
    CHECK(st_trial_get(st, study.id, n[2], &t, &found, err, sizeof err) == 0 && found);
    CHECK_INT_EQ(t.state, ST_TRIAL_CANCELLED);
    CHECK(t.finished > 0 && t.error && !strcmp(t.error, "the study failed"));
    st_trial_clear(&t);
    CHECK(st_trial_get(st, study.id, n[0], &t, &found, err, sizeof err) == 0 && found);
    CHECK_INT_EQ(t.state, ST_TRIAL_SUCCEEDED); /* told before: kept */
    st_trial_clear(&t);
    CHECK_INT_EQ(study_tell(st, &spec, &study, n[2], 0, 0.9, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "study atfail is FAILED: it takes no more results");
    close_study(st, &study, &spec);
}

static void test_best_index(void) {
    st_trial t[5];
    memset(t, 0, sizeof t);
    const st_trial_state states[5] = {ST_TRIAL_FAILED, ST_TRIAL_SUCCEEDED, ST_TRIAL_SUCCEEDED,
                                      ST_TRIAL_STOPPED, ST_TRIAL_SUCCEEDED};
    const double obj[5] = {9, 0.5, 0.8, 0.9, 0.8};
    for (int i = 0; i < 5; i++)
        t[i] = (st_trial){.number = i + 1, .state = states[i], .has_objective = 1,
                          .objective = obj[i]};
    CHECK_INT_EQ(study_best_index(t, 5, SPEC_MAXIMIZE), 2); /* a tie: the lower number */
    CHECK_INT_EQ(study_best_index(t, 5, SPEC_MINIMIZE), 1); /* FAILED and STOPPED never */
    t[1].objective = NAN;
    CHECK_INT_EQ(study_best_index(t, 5, SPEC_MINIMIZE), 2);
    t[2].has_objective = t[4].has_objective = 0;
    CHECK_INT_EQ(study_best_index(t, 5, SPEC_MAXIMIZE), -1);
    CHECK_INT_EQ(study_best_index(t, 0, SPEC_MAXIMIZE), -1);
}

static void test_preflight(void) {
    static const double xs[] = {1};
    tn_spec spec;
    if (make_spec("pre", "GRID_SEARCH", xs, 1, 1, 1, 1, 0, &spec) != 0) {
        CHECK_MSG(0, "the preflight spec does not parse");
        return;
    }
    study_opts o = quiet_opts();
    char err[1024] = "";
    CHECK_MSG(study_preflight(&spec, &o, err, sizeof err) == 0, "%s", err);
    free(spec.command[0]);
    spec.command[0] = tn_xstrdup("/no/such/trainer");
    CHECK_INT_EQ(study_preflight(&spec, &o, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "cannot run '/no/such/trainer'");
    CHECK_STR_CONTAINS(err, "hint: fix trainingInput.command");
    spec_clear(&spec);
    if (make_spec("pre2", "GRID_SEARCH", xs, 1, 1, 1, 1, 1, &spec) != 0) {
        CHECK_MSG(0, "the ask/tell preflight spec does not parse");
        return;
    }
    CHECK_INT_EQ(study_preflight(&spec, &o, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "tuner ask");
    spec_clear(&spec);
}

int main(void) {
    if (scratch_mkdtemp(g_dir, "test_study") != 0) return 1;
    RUN(test_grid_study_runs_to_the_end);
    RUN(test_two_metrics);
    RUN(test_two_metrics_dominance);
    RUN(test_failures_end_the_study);
    RUN(test_cancel_while_setting_up);
    RUN(test_resume_runs_what_was_left);
    RUN(test_rerun_with_bad_params_fails);
    RUN(test_ask_and_tell);
    RUN(test_ask_tell_study_ends);
    RUN(test_warm_start_metrics);
    RUN(test_tell_values);
    RUN(test_best_index);
    RUN(test_preflight);
    rm_rf(g_dir);
    return check_summary();
}
