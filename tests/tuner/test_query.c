/*
 * test_query.c — the read commands and cancel (tuner/query.c: list, show, trials,
 * best, logs, cancel) on a store this test writes: what each prints as JSON and CSV,
 * the filters, and every exit code a user meets (no such study or trial, a bad
 * --state, nothing succeeded yet, a finished study cancelled). stdout and stderr are
 * captured (tests/capture.h); the JSON is parsed back.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/status.h"
#include "tests/capture.h"
#include "tests/check.h"
#include "tests/testutil.h"
#include "tuner/commands.h"
#include "tuner/store.h"

static char g_dir[PATH_LEN], g_db[PATH_LEN];

/* A study's spec: MAXIMIZE (or MINIMIZE) the metric "score" over x in [0, 1]. */
static char *spec_text(const char *name, const char *goal) {
    return tn_xasprintf("{\"jobId\": \"%s\", \"trainingInput\": {\"command\": [\"/bin/true\"], "
                        "\"jobDir\": \"%s/runs/%s\", \"hyperparameters\": {\"goal\": \"%s\", "
                        "\"hyperparameterMetricTag\": \"score\", \"maxTrials\": 9, "
                        "\"params\": [{\"parameterName\": \"x\", \"type\": \"DOUBLE\", "
                        "\"minValue\": 0, \"maxValue\": 1}]}}}",
                        name, g_dir, name, goal);
}

/* A study of two metrics: MINIMIZE "loss", MAXIMIZE "acc", over x in [0, 1]. */
static char *spec_text_mo(const char *name) {
    return tn_xasprintf("{\"jobId\": \"%s\", \"trainingInput\": {\"command\": [\"/bin/true\"], "
                        "\"jobDir\": \"%s/runs/%s\", \"hyperparameters\": {\"metrics\": ["
                        "{\"metricId\": \"loss\", \"goal\": \"MINIMIZE\"}, "
                        "{\"metricId\": \"acc\", \"goal\": \"MAXIMIZE\"}], \"maxTrials\": 9, "
                        "\"params\": [{\"parameterName\": \"x\", \"type\": \"DOUBLE\", "
                        "\"minValue\": 0, \"maxValue\": 1}]}}}",
                        name, g_dir, name);
}

/* Adds a trial in state with objective obj (NAN: none) and x; returns its number. */
static int64_t add_trial(st_store *st, int64_t id, st_trial_state state, double obj, double x) {
    int found;
    char err[512], params[64];
    snprintf(params, sizeof params, "{\"x\": %g}", x);
    int64_t n = 0;
    CHECK(st_trial_create(st, id, params, ST_TRIAL_RUNNING, &n, err, sizeof err) == 0);
    st_trial t;
    CHECK(st_trial_get(st, id, n, &t, &found, err, sizeof err) == 0 && found);
    t.state = state;
    t.has_objective = obj == obj;
    t.objective = obj == obj ? obj : 0;
    t.attempts = 1;
    if (st_trial_state_final(state)) t.finished = t.started + 2;
    if (state == ST_TRIAL_FAILED) t.error = tn_xstrdup("exit status 1");
    CHECK(st_trial_update(st, &t, err, sizeof err) == 0);
    st_trial_clear(&t);
    return n;
}

/* Sets trial n of study id SUCCEEDED with the values (loss, acc). */
static void set_values(st_store *st, int64_t id, int64_t n, double loss, double acc) {
    int found;
    char err[512];
    st_trial t;
    CHECK(st_trial_get(st, id, n, &t, &found, err, sizeof err) == 0 && found);
    t.has_objective = 1;
    t.objective = t.values[0] = loss;
    t.values[1] = acc;
    t.nvalues = 2;
    CHECK_MSG(st_trial_update(st, &t, err, sizeof err) == 0, "%s", err);
    st_trial_clear(&t);
}

/* The store of the tests: study "s" (MAXIMIZE; trials 1 SUCCEEDED 0.5, 2 FAILED,
 * 3 SUCCEEDED 0.75, 4 RUNNING), "m" (MINIMIZE; 1 SUCCEEDED 0.5, 2 SUCCEEDED 0.25),
 * "none" (one FAILED trial) and "mo" (loss down, acc up; trials (loss, acc) 1 (0.3,
 * 0.8), 2 (0.2, 0.7), 3 (0.4, 0.6): dominated by 1, 4 (0.1, 0.5): the front is 1, 2,
 * 4, the best loss 4). */
static int make_store(void) {
    fmt_path(g_db, "%s/tuner.db", g_dir);
    st_store *st = NULL;
    char err[512];
    if (st_open(g_db, &st, err, sizeof err) != 0) {
        CHECK_MSG(0, "%s", err);
        return -1;
    }
    int64_t s = 0, m = 0, none = 0;
    char *ts = spec_text("s", "MAXIMIZE"), *tm = spec_text("m", "MINIMIZE"),
         *tn = spec_text("none", "MAXIMIZE");
    CHECK(st_study_create(st, "s", ts, 1, ST_STUDY_RUNNING, &s, err, sizeof err) == 0);
    CHECK(st_study_create(st, "m", tm, 2, ST_STUDY_SUCCEEDED, &m, err, sizeof err) == 0);
    CHECK(st_study_create(st, "none", tn, 3, ST_STUDY_FAILED, &none, err, sizeof err) == 0);
    free(ts), free(tm), free(tn);
    int64_t mo = 0;
    char *tmo = spec_text_mo("mo");
    CHECK(st_study_create(st, "mo", tmo, 4, ST_STUDY_RUNNING, &mo, err, sizeof err) == 0);
    free(tmo);
    static const double lossacc[][2] = {{0.3, 0.8}, {0.2, 0.7}, {0.4, 0.6}, {0.1, 0.5}};
    for (int i = 0; i < 4; i++)
        set_values(st, mo, add_trial(st, mo, ST_TRIAL_SUCCEEDED, lossacc[i][0], 0.1 * i),
                   lossacc[i][0], lossacc[i][1]);
    add_trial(st, s, ST_TRIAL_SUCCEEDED, 0.5, 0.1);
    add_trial(st, s, ST_TRIAL_FAILED, NAN, 0.2);
    add_trial(st, s, ST_TRIAL_SUCCEEDED, 0.75, 0.3);
    add_trial(st, s, ST_TRIAL_RUNNING, NAN, 0.4);
    add_trial(st, m, ST_TRIAL_SUCCEEDED, 0.5, 0.6);
    add_trial(st, m, ST_TRIAL_SUCCEEDED, 0.25, 0.7);
    add_trial(st, none, ST_TRIAL_FAILED, NAN, 0.9);
    /* trial 1 of s reported twice, the second time after a restart */
    st_measurement a = {.step = 5, .replica = "chief:0", .metrics = "{\"score\": 0.25}",
                        .timestamp = 100, .attempt = 1};
    st_measurement b = {.step = 5, .replica = "chief:0", .metrics = "{\"score\": 0.5}",
                        .timestamp = 200, .attempt = 2};
    CHECK(st_measurement_add(st, s, 1, &a, err, sizeof err) == 0);
    CHECK(st_measurement_add(st, s, 1, &b, err, sizeof err) == 0);
    st_close(st);
    return 0;
}

typedef int (*command)(int argc, char **argv, const cli_env *env);

/* Runs cmd with the words (NULL-terminated, after the command's name) on the store;
 * returns its exit code, with what it printed in *c. */
static int run(command cmd, const char *name, captured *c, char **words) {
    char *argv[16] = {(char *)name};
    int argc = 1;
    while (words[argc - 1] && argc < 15) {
        argv[argc] = words[argc - 1];
        argc++;
    }
    cli_env env = {.db = g_db, .self_dir = "."};
    capture_state cs = capture_begin();
    int rc = cmd(argc, argv, &env);
    capture_end(&cs, c);
    return rc;
}

/* stdout parsed as JSON (NULL, and a failed check, when it is not). */
static json_t *json_out(const captured *c) {
    json_error_t je;
    json_t *v = json_loads(c->out, 0, &je);
    CHECK_MSG(v != NULL, "not JSON (%s): %s", je.text, c->out);
    return v;
}

static void test_list(void) {
    captured c;
    CHECK_INT_EQ(run(cmd_list, "list", &c, (char *[]){"--format=json", NULL}), 0);
    json_t *v = json_out(&c);
    CHECK(json_array_size(v) == 4);
    json_t *s = json_array_get(v, 0);
    CHECK(!strcmp(json_string_value(json_object_get(s, "name")), "s"));
    CHECK(!strcmp(json_string_value(json_object_get(s, "state")), "RUNNING"));
    CHECK(json_integer_value(json_object_get(s, "succeeded")) == 2 &&
          json_integer_value(json_object_get(s, "failed")) == 1 &&
          json_integer_value(json_object_get(s, "running")) == 1);
    json_decref(v);
    CHECK_INT_EQ(run(cmd_list, "list", &c, (char *[]){"--format=xml", NULL}), TUNER_EXIT_USAGE);
    CHECK_STR_CONTAINS(c.err, "unknown format 'xml'");
}

static void test_show(void) {
    captured c;
    CHECK_INT_EQ(run(cmd_show, "show", &c, (char *[]){"s", "--format=json", NULL}), 0);
    json_t *v = json_out(&c);
    CHECK(json_integer_value(json_object_get(v, "best_trial")) == 3);
    CHECK(json_real_value(json_object_get(v, "best_objective")) == 0.75);
    CHECK(json_integer_value(json_object_get(v, "succeeded")) == 2);
    CHECK(!strcmp(json_string_value(json_object_get(v, "goal")), "MAXIMIZE"));
    json_decref(v);
    /* one metric: the front is the best trial, metrics and front only in the data */
    v = json_out(&c);
    CHECK(json_array_size(json_object_get(v, "metrics")) == 1);
    json_t *f = json_object_get(v, "pareto_front");
    CHECK(json_array_size(f) == 1 && json_integer_value(json_array_get(f, 0)) == 3);
    json_decref(v);
    CHECK_INT_EQ(run(cmd_show, "show", &c, (char *[]){"s", NULL}), 0);
    CHECK(!strstr(c.out, "Pareto front") && !strstr(c.out, "metrics"));
    CHECK_STR_CONTAINS(c.out, "best trial");
    /* several metrics: each with its goal, the front's trials, the best by the first */
    CHECK_INT_EQ(run(cmd_show, "show", &c, (char *[]){"mo", "--format=json", NULL}), 0);
    v = json_out(&c);
    json_t *ms = json_object_get(v, "metrics");
    CHECK(json_array_size(ms) == 2 &&
          !strcmp(json_string_value(json_object_get(json_array_get(ms, 1), "metricId")), "acc") &&
          !strcmp(json_string_value(json_object_get(json_array_get(ms, 1), "goal")), "MAXIMIZE"));
    f = json_object_get(v, "pareto_front");
    CHECK(json_array_size(f) == 3 && json_integer_value(json_array_get(f, 0)) == 1 &&
          json_integer_value(json_array_get(f, 1)) == 2 &&
          json_integer_value(json_array_get(f, 2)) == 4);
    CHECK(json_integer_value(json_object_get(v, "best_trial")) == 4);
    json_decref(v);
    CHECK_INT_EQ(run(cmd_show, "show", &c, (char *[]){"mo", NULL}), 0);
    CHECK_STR_CONTAINS(c.out, "loss (MINIMIZE), acc (MAXIMIZE)");
    CHECK_STR_CONTAINS(c.out, "1, 2, 4");
    CHECK_STR_CONTAINS(c.out, "best by first metric");
    CHECK_INT_EQ(run(cmd_show, "show", &c, (char *[]){"nosuch", NULL}), TUNER_EXIT_NOT_FOUND);
    CHECK_STR_CONTAINS(c.err, "tuner: error: no study named nosuch in");
    CHECK_INT_EQ(run(cmd_show, "show", &c, (char *[]){NULL}), TUNER_EXIT_USAGE);
    CHECK_STR_CONTAINS(c.err, "missing argument STUDY");
}

static void test_trials(void) {
    captured c;
    CHECK_INT_EQ(run(cmd_trials, "trials", &c, (char *[]){"s", "--format=csv", NULL}), 0);
    CHECK_MSG(!strncmp(c.out, "number,state,objective,x,", 25), "%s", c.out);
    CHECK_STR_CONTAINS(c.out, "\n1,SUCCEEDED,0.5,0.1,");
    CHECK_STR_CONTAINS(c.out, "\n2,FAILED,,0.2,");
    CHECK_STR_CONTAINS(c.out, "exit status 1");
    CHECK_INT_EQ(run(cmd_trials, "trials", &c, (char *[]){"s", "--state=failed", "--format=json",
                                                          NULL}),
                 0);
    json_t *v = json_out(&c);
    CHECK(json_array_size(v) == 1 &&
          json_integer_value(json_object_get(json_array_get(v, 0), "number")) == 2);
    json_decref(v);
    CHECK_INT_EQ(run(cmd_trials, "trials", &c, (char *[]){"s", "--state=succeded", NULL}),
                 TUNER_EXIT_USAGE);
    CHECK_STR_CONTAINS(c.err, "unknown trial state 'succeded' (did you mean SUCCEEDED?)");
    /* one trial's measurements: both attempts kept */
    CHECK_INT_EQ(run(cmd_trials, "trials", &c, (char *[]){"s", "1", "--format=json", NULL}), 0);
    v = json_out(&c);
    CHECK(json_array_size(v) == 2);
    CHECK(json_integer_value(json_object_get(json_array_get(v, 1), "attempt")) == 2);
    json_decref(v);
    CHECK_INT_EQ(run(cmd_trials, "trials", &c, (char *[]){"s", "9", NULL}), TUNER_EXIT_NOT_FOUND);
    CHECK_STR_CONTAINS(c.err, "study s has no trial 9");
    CHECK_INT_EQ(run(cmd_trials, "trials", &c, (char *[]){"s", "x", NULL}), TUNER_EXIT_USAGE);
    CHECK_STR_CONTAINS(c.err, "TRIAL must be a positive integer");
}

static void test_best(void) {
    captured c;
    CHECK_INT_EQ(run(cmd_best, "best", &c, (char *[]){"s", "--format=json", NULL}), 0);
    json_t *v = json_out(&c);
    CHECK(json_integer_value(json_object_get(v, "number")) == 3);
    json_decref(v);
    CHECK_INT_EQ(run(cmd_best, "best", &c, (char *[]){"m", "--format=json", NULL}), 0);
    v = json_out(&c);
    CHECK(json_integer_value(json_object_get(v, "number")) == 2); /* MINIMIZE: 0.25 */
    json_decref(v);
    CHECK_INT_EQ(run(cmd_best, "best", &c, (char *[]){"none", NULL}), TUNER_EXIT_NOT_FOUND);
    CHECK_STR_CONTAINS(c.err, "study none has no succeeded trial yet");
}

static void test_logs(void) {
    captured c;
    CHECK_INT_EQ(run(cmd_logs, "logs", &c, (char *[]){"s", "1", NULL}), TUNER_EXIT_NOT_FOUND);
    CHECK_STR_CONTAINS(c.err, "no log file");
    CHECK_STR_CONTAINS(c.err, "/runs/s/1/logs/chief-0.log");
    CHECK_INT_EQ(run(cmd_logs, "logs", &c, (char *[]){"s", "1", "--replica=wrker:0", NULL}),
                 TUNER_EXIT_USAGE);
    CHECK_STR_CONTAINS(c.err, "unknown replica type 'wrker' (did you mean worker?)");
    CHECK_INT_EQ(run(cmd_logs, "logs", &c, (char *[]){"s", "1", "--replica=worker:0", NULL}),
                 TUNER_EXIT_NOT_FOUND);
    CHECK_STR_CONTAINS(c.err, "study s has no replica worker:0");
}

static void test_cancel(void) {
    captured c;
    CHECK_INT_EQ(run(cmd_cancel, "cancel", &c, (char *[]){"s", NULL}), 0);
    CHECK_STR_CONTAINS(c.out, "cancelled study s");
    CHECK_INT_EQ(run(cmd_cancel, "cancel", &c, (char *[]){"s", NULL}), 0);
    CHECK_STR_CONTAINS(c.out, "study s is already cancelled");
    CHECK_INT_EQ(run(cmd_cancel, "cancel", &c, (char *[]){"m", NULL}), TUNER_EXIT_USAGE);
    CHECK_STR_CONTAINS(c.err, "study m already finished (SUCCEEDED): nothing to cancel");
    CHECK_INT_EQ(run(cmd_cancel, "cancel", &c, (char *[]){"nosuch", NULL}),
                 TUNER_EXIT_NOT_FOUND);
    CHECK_INT_EQ(run(cmd_show, "show", &c, (char *[]){"s", "--format=json", NULL}), 0);
    json_t *v = json_out(&c);
    CHECK(!strcmp(json_string_value(json_object_get(v, "state")), "CANCELLED"));
    json_decref(v);
}

int main(void) {
    if (scratch_mkdtemp(g_dir, "test_query") != 0) return 1;
    if (make_store() == 0) {
        RUN(test_list);
        RUN(test_show);
        RUN(test_trials);
        RUN(test_best);
        RUN(test_logs);
        RUN(test_cancel);
    }
    rm_rf(g_dir);
    return check_summary();
}
