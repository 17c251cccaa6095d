/*
 * test_stopping.c — tests for search/stopping.c: the median rule (worse, better and
 * tied trials, too few completed trials, minStep, missing steps, running averages
 * worked by hand, useRunningAverage, which trials are references, NaN and infinity),
 * ASHA (rungs 1, 3, 9 with eta 3, promotion while n < eta, keep = floor(n / eta),
 * jumps past several rungs, steps between rungs, maxStep, stopped and failed
 * competitors, ties, rungs near INT64_MAX), ASHA's automatic grace period (an eighth
 * of the longest completed trial, or of maxStep; trials in parallel), the default rule
 * on a study two trials at a time, hyperband (brackets by trial number, B,
 * comparison within the bracket only), es_config_check, policy names, and two
 * properties over random histories: the best trial is never stopped, and decisions
 * do not depend on the order of the trials array.
 *
 * Histories are written as strings, "step:value step:value ...", in tables of cases;
 * the trial decided is the last of its table. Every case runs twice: as written, and
 * mirrored (values negated, MAXIMIZE <-> MINIMIZE), which must decide the same.
 */
#include "search/stopping.h"

#include "common/rng.h"
#include "common/status.h"
#include "search/space.h"
#include "tests/check.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define C SP_COMPLETE
#define R SP_PENDING
#define S SP_STOPPED
#define F SP_FAILED

#define MAXT 40 /* trials in a study */
#define MAXP 24 /* points in a curve */
#define TABT 12 /* trials in a table case */

#define F_ "trainingInput.hyperparameters.earlyStopping."

#define MEDIAN(mt, ms, ra) \
    {.policy = ES_MEDIAN, .maximize = 1, .min_trials = (mt), .min_step = (ms), \
     .running_average = (ra)}
#define ASHA(g, eta, max) \
    {.policy = ES_ASHA, .maximize = 1, .grace_period = (g), .reduction_factor = (eta), \
     .max_step = (max)}
#define HYPERBAND(g, eta, max) \
    {.policy = ES_HYPERBAND, .maximize = 1, .grace_period = (g), \
     .reduction_factor = (eta), .max_step = (max)}

/* One trial of a table: its state (0 ends the table), its curve, its number (0: its
 * position + 1). */
typedef struct ht {
    int state;
    const char *curve;
    int64_t number;
} ht;

typedef struct study {
    es_trial trials[MAXT];
    es_point points[MAXT][MAXP];
    size_t n;
} study;

/* Reads "step:value ..." into p (values negated when negate); returns the count. */
static size_t parse_curve(const char *text, int negate, es_point *p) {
    size_t n = 0;
    char *end;
    while (text && *text) {
        if (*text == ' ') {
            text++;
            continue;
        }
        if (n == MAXP) abort();
        p[n].step = strtoll(text, &end, 10);
        if (*end != ':') abort();
        p[n].value = strtod(end + 1, &end);
        if (negate) p[n].value = -p[n].value;
        text = end;
        n++;
    }
    return n;
}

static void study_build(study *st, const ht *spec, size_t max, int negate) {
    memset(st, 0, sizeof *st);
    for (size_t i = 0; i < max && spec[i].state; i++) {
        es_trial *t = &st->trials[i];
        t->number = spec[i].number ? spec[i].number : (int64_t)i + 1;
        t->state = spec[i].state;
        t->curve = st->points[i];
        t->n = parse_curve(spec[i].curve, negate, st->points[i]);
        st->n = i + 1;
    }
}

/* ---- Table cases: es_decide on a hand-made history ---- */

typedef struct decide_case {
    const char *name;
    es_config cfg;
    int stop;           /* the decision wanted for the last trial */
    const char *reason; /* a part of the reason wanted (as written, not mirrored) */
    ht trials[TABT];
} decide_case;

static void run_cases(const decide_case *cases, size_t ncases) {
    static study st; /* static: a study is large */
    for (size_t i = 0; i < ncases; i++) {
        const decide_case *k = &cases[i];
        for (int mirror = 0; mirror <= 1; mirror++) {
            study_build(&st, k->trials, TABT, mirror);
            es_config cfg = k->cfg;
            if (mirror) cfg.maximize = !cfg.maximize;
            es_decision d;
            memset(&d, 'x', sizeof d);
            es_decide(&cfg, st.trials, st.n, st.n - 1, &d);
            CHECK_MSG(d.stop == k->stop, "%s%s: stop = %d, want %d (%s)", k->name,
                      mirror ? " (mirrored)" : "", d.stop, k->stop, d.reason);
            CHECK_MSG(memchr(d.reason, '\0', sizeof d.reason) && d.reason[0] != '\0',
                      "%s: empty or unterminated reason", k->name);
            if (!mirror && k->reason)
                CHECK_MSG(strstr(d.reason, k->reason), "%s: reason \"%s\" lacks \"%s\"",
                          k->name, d.reason, k->reason);
        }
    }
}

#define RUN_CASES(table) run_cases((table), sizeof(table) / sizeof(table)[0])

/* ---- Median ---- */

/* References whose running averages up to step 3 are 3, 5 and 10 (their best values
 * are 6, 9 and 20, their last values too; up to step 2 the averages are 1.5, 3, 5). */
/* Three completed trials whose values are 1, 2, 0 at step 1; 2, 4, 10 at step 2;
 * 6, 9, 20 at step 3. */
#define REFS_3_5_10 {C, "1:1 2:2 3:6", 0}, {C, "1:2 2:4 3:9", 0}, {C, "1:0 2:10 3:20", 0}

static const decide_case median_cases[] = {
    {"clearly worse trial stopped", MEDIAN(3, 0, 0), 1,
     "step 3: best 0.3 is worse than the median 0.9 of 3 completed trials",
     {{C, "1:0.8 2:0.9 3:1.0", 0}, {C, "1:0.7 2:0.8 3:0.9", 0}, {C, "1:0.6 2:0.7 3:0.8", 0},
      {R, "1:0.1 2:0.2 3:0.3", 0}}},
    {"better trial kept", MEDIAN(3, 0, 0), 0,
     "step 3: best 0.95 is not worse than the median 0.9 of 3 completed trials",
     {{C, "1:0.8 2:0.9 3:1.0", 0}, {C, "1:0.7 2:0.8 3:0.9", 0}, {C, "1:0.6 2:0.7 3:0.8", 0},
      {R, "1:0.5 2:0.95 3:0.9", 0}}},
    {"equal to an odd median kept", MEDIAN(3, 0, 0), 0,
     "best 0.5 is not worse than the median 0.5",
     {{C, "1:0 2:0.5", 0}, {C, "1:0.5 2:0.5", 0}, {C, "1:1 2:0.5", 0}, {R, "1:0.5 2:0.25", 0}}},
    {"equal to an even median kept", MEDIAN(3, 0, 0), 0,
     "best 0.625 is not worse than the median 0.625 of 4 completed trials",
     {{C, "1:0.25", 0}, {C, "1:0.5", 0}, {C, "1:0.75", 0}, {C, "1:1", 0}, {R, "1:0.625", 0}}},
    {"just below an even median stopped", MEDIAN(3, 0, 0), 1,
     "best 0.62 is worse than the median 0.625 of 4",
     {{C, "1:0.25", 0}, {C, "1:0.5", 0}, {C, "1:0.75", 0}, {C, "1:1", 0}, {R, "1:0.62", 0}}},
    {"too few completed trials", MEDIAN(5, 0, 0), 0,
     "step 9: only 3 completed trials have reached it (need 5)",
     {{C, "1:0.9 9:0.9", 0}, {C, "1:0.9 9:0.9", 0}, {C, "1:0.9 9:0.9", 0},
      {S, "1:0.9 9:0.9", 0}, {F, "9:0.9", 0}, {R, "9:0.9", 0}, {R, "1:0.1 9:0.1", 0}}},
    {"completed trials that start after the step do not count", MEDIAN(3, 0, 0), 0,
     "step 2: only 2 completed trials have reached it (need 3)",
     {{C, "1:0.9 2:0.9", 0}, {C, "1:0.9", 0}, {C, "5:0.9 6:0.9", 0}, {R, "1:0.1 2:0.1", 0}}},
    {"one completed trial, singular", MEDIAN(2, 0, 0), 0,
     "step 1: only 1 completed trial has reached it (need 2)",
     {{C, "1:0.9", 0}, {R, "1:0.1", 0}}},
    {"one completed trial is enough with minTrials 1", MEDIAN(1, 0, 0), 1,
     "the median 0.9 of 1 completed trial", {{C, "1:0.9", 0}, {R, "1:0.1", 0}}},
    {"before minStep", MEDIAN(3, 5, 0), 0, "step 4 is before minStep 5",
     {{C, "1:0.9 5:0.9", 0}, {C, "1:0.9 5:0.9", 0}, {C, "1:0.9 5:0.9", 0},
      {R, "1:0.1 4:0.1", 0}}},
    {"at minStep", MEDIAN(3, 5, 0), 1, "step 5: best 0.1 is worse than the median 0.9",
     {{C, "1:0.9 5:0.9", 0}, {C, "1:0.9 5:0.9", 0}, {C, "1:0.9 5:0.9", 0},
      {R, "1:0.1 5:0.1", 0}}},
    /* References reported at 2, 5, 9; none has a point at 7, so each counts with its
     * value at 5: 0.4, 0.6, 0.8 (not the value at 9, nor an average). */
    {"missing steps: the last value before the step, worse", MEDIAN(3, 0, 0), 1,
     "step 7: best 0.45 is worse than the median 0.6 of 3",
     {{C, "2:0.2 5:0.4 9:1", 0}, {C, "2:0.4 5:0.6 9:1", 0}, {C, "2:0.6 5:0.8 9:1", 0},
      {R, "1:0.3 7:0.45", 0}}},
    {"missing steps: the last value before the step, better", MEDIAN(3, 0, 0), 0,
     "step 7: best 0.65 is not worse than the median 0.6 of 3",
     {{C, "2:0.2 5:0.4 9:1", 0}, {C, "2:0.4 5:0.6 9:1", 0}, {C, "2:0.6 5:0.8 9:1", 0},
      {R, "1:0.3 7:0.65", 0}}},
    {"references' values at the step (6, 9, 20)", MEDIAN(3, 0, 0), 1,
     "step 3: best 4 is worse than the median 9 of 3", {REFS_3_5_10, {R, "1:4 2:4 3:4", 0}}},
    {"references judged by their value at the step, not their average", MEDIAN(3, 0, 0), 0,
     "step 3: best 9.5 is not worse than the median 9 of 3",
     {REFS_3_5_10, {R, "1:1 2:9.5 3:2", 0}}},
    {"references' values at an earlier step (2, 4, 10)", MEDIAN(3, 0, 0), 0,
     "step 2: best 4.5 is not worse than the median 4 of 3",
     {REFS_3_5_10, {R, "1:0 2:4.5", 0}}},
    {"references' values at an earlier step, worse", MEDIAN(3, 0, 0), 1,
     "step 2: best 3.5 is worse than the median 4 of 3", {REFS_3_5_10, {R, "1:0 2:3.5", 0}}},
    {"even count: the mean of the middle two (6, 7, 9, 20 -> 8)", MEDIAN(3, 0, 0), 0,
     "best 8 is not worse than the median 8 of 4",
     {REFS_3_5_10, {C, "1:7 2:7 3:7", 0}, {R, "1:8 2:6 3:6", 0}}},
    {"even count: below the mean of the middle two", MEDIAN(3, 0, 0), 1,
     "best 7.5 is worse than the median 8 of 4",
     {REFS_3_5_10, {C, "1:7 2:7 3:7", 0}, {R, "1:7.5 2:5 3:5", 0}}},
    {"useRunningAverage: judged by its average 3, not its best 9", MEDIAN(3, 0, 1), 1,
     "step 3: running average 3 is worse than the median 9 of 3",
     {REFS_3_5_10, {R, "1:0 2:0 3:9", 0}}},
    {"without useRunningAverage the same trial is kept", MEDIAN(3, 0, 0), 0,
     "step 3: best 9 is not worse than the median 9", {REFS_3_5_10, {R, "1:0 2:0 3:9", 0}}},
    {"useRunningAverage: an average equal to the median is kept", MEDIAN(3, 0, 1), 0,
     "running average 9 is not worse than the median 9", {REFS_3_5_10, {R, "1:9 2:9 3:9", 0}}},
    {"stopped, failed and running trials are not references", MEDIAN(3, 0, 0), 0,
     "best 0.25 is not worse than the median 0.2 of 3 completed trials",
     {{C, "1:0.1", 0}, {C, "1:0.2", 0}, {C, "1:0.3", 0}, {S, "1:0.9", 0}, {S, "1:0.9", 0},
      {F, "1:0.9", 0}, {F, "1:0.9", 0}, {R, "1:0.9", 0}, {R, "1:0.9", 0}, {R, "1:0.25", 0}}},
    {"stopped, failed and running trials do not count toward minTrials", MEDIAN(4, 0, 0), 0,
     "only 3 completed trials have reached it (need 4)",
     {{C, "1:0.1", 0}, {C, "1:0.2", 0}, {C, "1:0.3", 0}, {S, "1:0.9", 0}, {F, "1:0.9", 0},
      {R, "1:0.9", 0}, {R, "1:0.05", 0}}},
    {"the trial itself is not a reference", MEDIAN(3, 0, 0), 0,
     "only 2 completed trials have reached it (need 3)",
     {{C, "1:0.9", 0}, {C, "1:0.9", 0}, {C, "1:0.1", 0}}},
    {"a NaN point of the trial is its worst, not its best", MEDIAN(3, 0, 0), 0,
     "best 0.9 is not worse than the median 0.5",
     {{C, "1:0.5", 0}, {C, "1:0.5", 0}, {C, "1:0.5", 0}, {R, "1:nan 2:0.9", 0}}},
    {"a trial with only NaN is worse than any median", MEDIAN(3, 0, 0), 1,
     "best nan is worse than the median 0.5",
     {{C, "1:0.5", 0}, {C, "1:0.5", 0}, {C, "1:0.5", 0}, {R, "1:nan", 0}}},
    {"a reference that is NaN at the step ranks last", MEDIAN(3, 0, 0), 0,
     "best 0.15 is not worse than the median 0.1 of 3",
     {{C, "1:0.9 2:nan", 0}, {C, "1:0.1 2:0.1", 0}, {C, "1:0.2 2:0.2", 0}, {R, "2:0.15", 0}}},
    {"a reference that is NaN at the step ranks last, worse", MEDIAN(3, 0, 0), 1,
     "best 0.05 is worse than the median 0.1 of 3",
     {{C, "1:0.9 2:nan", 0}, {C, "1:0.1 2:0.1", 0}, {C, "1:0.2 2:0.2", 0}, {R, "2:0.05", 0}}},
    {"a NaN median stops nothing", MEDIAN(3, 0, 0), 0,
     "best -1000 is not worse than the median nan",
     {{C, "1:nan", 0}, {C, "1:nan", 0}, {C, "1:0.5", 0}, {R, "1:-1000", 0}}},
    /* Three running averages of 0.1, 0.1, 0.1: summed and divided they give
     * 0.10000000000000002, which would make 0.1 look worse than the median. */
    {"the average of a constant curve is that constant", MEDIAN(3, 0, 0), 0,
     "best 0.1 is not worse than the median 0.1 of 3",
     {{C, "1:0.1 2:0.1 3:0.1", 0}, {C, "1:0.1 2:0.1 3:0.1", 0}, {C, "1:0.1 2:0.1 3:0.1", 0},
      {R, "3:0.1", 0}}},
    {"the mean of two huge middle values does not overflow", MEDIAN(2, 0, 0), 0,
     "best 1.4e+308 is not worse than the median 1.25e+308 of 2",
     {{C, "1:1e308", 0}, {C, "1:1.5e308", 0}, {R, "1:1.4e308", 0}}},
    {"a reference counts with its value at the step, huge values", MEDIAN(1, 0, 0), 0,
     "best 1.6e+308 is not worse than the median 1.5e+308 of 1",
     {{C, "1:1e308 2:1.5e308", 0}, {R, "2:1.6e308", 0}}},
    {"the running average of huge values does not overflow", MEDIAN(1, 0, 1), 0,
     "running average 1.6e+308 is not worse than the median 1.5e+308 of 1",
     {{C, "1:1e308 2:1.5e308", 0}, {R, "1:1.6e308 2:1.6e308", 0}}},
    {"infinities are ordinary values", MEDIAN(3, 0, 0), 1,
     "best -1 is worse than the median 0 of 3",
     {{C, "1:-inf", 0}, {C, "1:0", 0}, {C, "1:inf", 0}, {R, "1:-1", 0}}},
    {"an infinite best is kept", MEDIAN(3, 0, 0), 0, "best inf is not worse than the median 0",
     {{C, "1:-inf", 0}, {C, "1:0", 0}, {C, "1:inf", 0}, {R, "1:-1 2:inf", 0}}},
};

/* Minimizing, written out (the mirror of every case above runs too). */
static const decide_case median_min_cases[] = {
    {"minimize: larger is worse", {.policy = ES_MEDIAN, .min_trials = 3}, 1,
     "step 1: best 0.25 is worse than the median 0.2 of 3",
     {{C, "1:0.3", 0}, {C, "1:0.2", 0}, {C, "1:0.1", 0}, {R, "1:0.25", 0}}},
    {"minimize: best so far is the smallest", {.policy = ES_MEDIAN, .min_trials = 3}, 0,
     "step 2: best 0.15 is not worse than the median 0.2 of 3",
     {{C, "1:0.3", 0}, {C, "1:0.2", 0}, {C, "1:0.1", 0}, {R, "1:0.5 2:0.15", 0}}},
    {"minimize: a NaN point is the worst", {.policy = ES_MEDIAN, .min_trials = 3}, 0,
     "best 0.15 is not worse",
     {{C, "1:0.3", 0}, {C, "1:0.2", 0}, {C, "1:0.1", 0}, {R, "1:0.15 2:nan", 0}}},
};

static void test_median(void) {
    RUN_CASES(median_cases);
    RUN_CASES(median_min_cases);
}

/* ---- ASHA ---- */

static const decide_case asha_cases[] = {
    {"the first trial is the best of 1", ASHA(1, 3, 0), 0,
     "rung 0 (step 1): 0.1 is the best of 1 trial (threshold 0.1)", {{R, "1:0.1", 0}}},
    {"n < eta: not the best is stopped", ASHA(1, 3, 0), 1,
     "rung 0 (step 1): 0.5 is not the best of 2 trials (threshold 0.9)",
     {{C, "1:0.9", 0}, {R, "1:0.5", 0}}},
    {"n < eta: tied for the best is kept", ASHA(1, 3, 0), 0,
     "rung 0 (step 1): 0.9 is the best of 2 trials (threshold 0.9)",
     {{C, "1:0.9", 0}, {R, "1:0.9", 0}}},
    {"6 competitors keep 2: the second is kept", ASHA(1, 3, 0), 0,
     "rung 0 (step 1): 0.5 is in the top 2 of 6 trials (threshold 0.5)",
     {{C, "1:0.1", 0}, {R, "1:0.2", 0}, {C, "1:0.3", 0}, {R, "1:0.4", 0}, {C, "1:0.6", 0},
      {R, "1:0.5", 0}}},
    {"6 competitors keep 2: the third is stopped", ASHA(1, 3, 0), 1,
     "rung 0 (step 1): 0.4 is not in the top 2 of 6 trials (threshold 0.5)",
     {{C, "1:0.1", 0}, {R, "1:0.2", 0}, {C, "1:0.3", 0}, {R, "1:0.5", 0}, {C, "1:0.6", 0},
      {R, "1:0.4", 0}}},
    {"tied with the keep-th best is kept", ASHA(1, 3, 0), 0,
     "0.5 is in the top 2 of 6 trials (threshold 0.5)",
     {{C, "1:0.1", 0}, {R, "1:0.2", 0}, {C, "1:0.5", 0}, {R, "1:0.5", 0}, {C, "1:0.9", 0},
      {R, "1:0.5", 0}}},
    {"rung 1 is step 3", ASHA(1, 3, 0), 1,
     "rung 1 (step 3): 0.2 is not in the top 1 of 4 trials (threshold 0.9)",
     {{C, "1:0.1 3:0.9", 0}, {C, "1:0.1 3:0.9", 0}, {R, "1:0.1 2:0.1 3:0.9", 0},
      {R, "1:0.5 2:0.5 3:0.2", 0}}},
    /* At rung 2 (step 9) the competitors are 0.9, 0.8 and the trial's 0.6: stopped.
     * Were it decided at rung 1 (step 3) it would be the best of 5 and kept. */
    {"a jump from step 2 to step 10 is decided at rung 2 (step 9)", ASHA(1, 3, 0), 1,
     "rung 2 (step 9, reached at step 10): 0.6 is not in the top 1 of 3 trials "
     "(threshold 0.9)",
     {{C, "1:0.1 3:0.1 9:0.9", 0}, {C, "1:0.1 3:0.1 9:0.8", 0}, {R, "1:0.1 3:0.1", 0},
      {S, "1:0.1 3:0.1", 0}, {R, "1:0.5 2:0.5 10:0.6", 0}}},
    {"a step between rungs decides nothing", ASHA(1, 3, 0), 0,
     "step 5: no new rung (the next, rung 2, is at step 9)",
     {{C, "1:0.9 3:0.9 5:0.9", 0}, {C, "1:0.9 3:0.9 5:0.9", 0}, {R, "1:0.5 3:0.5 5:0", 0}}},
    {"a rung already decided is not decided again", ASHA(1, 3, 0), 0,
     "step 4: no new rung (the next, rung 2, is at step 9)",
     {{C, "1:0.9 3:0.9 4:0.9", 0}, {C, "1:0.9 3:0.9 4:0.9", 0}, {R, "1:0.1 3:0.1 4:0", 0}}},
    {"a step before the first rung decides nothing", ASHA(2, 3, 0), 0,
     "step 1 is before the first rung (step 2)",
     {{C, "1:0.9 2:0.9", 0}, {C, "1:0.9 2:0.9", 0}, {R, "1:0", 0}}},
    {"maxStep 9: no rung at 9", ASHA(1, 3, 9), 0,
     "step 9: no new rung (the last, rung 1, is at step 3)",
     {{C, "1:0.5 3:0.5 9:0.9", 0}, {C, "1:0.5 3:0.5 9:0.9", 0}, {C, "1:0.5 3:0.5 9:0.9", 0},
      {R, "1:0.5 3:0.5 9:0", 0}}},
    {"maxStep 10: a rung at 9", ASHA(1, 3, 10), 1,
     "rung 2 (step 9): 0 is not in the top 1 of 4 trials (threshold 0.9)",
     {{C, "1:0.5 3:0.5 9:0.9", 0}, {C, "1:0.5 3:0.5 9:0.9", 0}, {C, "1:0.5 3:0.5 9:0.9", 0},
      {R, "1:0.5 3:0.5 9:0", 0}}},
    /* A trial that reports once, at its end (AI Platform's usual trainer): judged at
     * rung 1 it would be stopped, which saves nothing and drops its result. */
    {"maxStep 9: one report at 9 is not judged", ASHA(1, 3, 9), 0,
     "step 9 is at maxStep 9: its end, nothing left to save",
     {{C, "9:0.9", 0}, {C, "9:0.9", 0}, {C, "9:0.9", 0}, {R, "9:0", 0}}},
    {"maxStep 9: one report past it is not judged", ASHA(1, 3, 9), 0,
     "step 12 is at maxStep 9: its end",
     {{C, "9:0.9", 0}, {C, "9:0.9", 0}, {C, "9:0.9", 0}, {R, "12:0", 0}}},
    {"maxStep at gracePeriod: no rungs", ASHA(3, 3, 3), 0, "no rung below maxStep 3",
     {{C, "3:0.9", 0}, {C, "3:0.9", 0}, {C, "3:0.9", 0}, {R, "3:0", 0}}},
    {"stopped and failed trials compete", ASHA(1, 3, 0), 1,
     "rung 0 (step 1): 0.5 is not in the top 1 of 3 trials (threshold 0.9)",
     {{S, "1:0.9", 0}, {F, "1:0.8", 0}, {R, "1:0.5", 0}}},
    {"trials without a point at the rung do not compete", ASHA(1, 3, 0), 0,
     "0.1 is the best of 1 trial", {{F, "", 0}, {S, "", 0}, {R, "", 0}, {R, "1:0.1", 0}}},
    /* At rung 0 the others' values are 0.1 (their point at 1, not their best 0.9) and
     * 0.2 (their first point past 1, at 2). */
    {"the value at a rung is the first point at or past it", ASHA(1, 3, 0), 0,
     "0.3 is in the top 1 of 3 trials (threshold 0.3)",
     {{C, "1:0.1 2:0.9", 0}, {C, "2:0.2 3:0.9", 0}, {R, "1:0.3", 0}}},
    {"a NaN value is the worst", ASHA(1, 3, 0), 1,
     "nan is not the best of 2 trials (threshold 0.1)",
     {{S, "1:0.1", 0}, {R, "1:nan", 0}}},
    {"better than a NaN", ASHA(1, 3, 0), 0, "0.1 is the best of 2 trials (threshold 0.1)",
     {{S, "1:nan", 0}, {R, "1:0.1", 0}}},
    {"minimize: smaller is better",
     {.policy = ES_ASHA, .grace_period = 1, .reduction_factor = 3}, 1,
     "rung 0 (step 1): 0.5 is not the best of 2 trials (threshold 0.1)",
     {{C, "1:0.1", 0}, {R, "1:0.5", 0}}},
    {"rungs up to INT64_MAX: the highest is 2^62", ASHA(1, 2, 0), 0,
     "rung 62 (step 4611686018427387904, reached at step 9223372036854775807)",
     {{R, "1:0.5 9223372036854775807:0.5", 0}}},
    {"a first rung at 2^62 has no successor", ASHA(4611686018427387904LL, 3, 0), 0,
     "step 9223372036854775807: no new rung (the last, rung 0, is at step "
     "4611686018427387904)",
     {{R, "4611686018427387904:0.5 9223372036854775807:0.1", 0}}},
    /* Globally the trial is not in the top 2 of 6; in hyperband it is in bracket 0
     * with trial 1 only (below). */
    {"asha compares with every trial", ASHA(1, 3, 9), 1,
     "0.5 is not in the top 2 of 6 trials (threshold 0.9)",
     {{R, "1:0.2", 1}, {C, "1:0.9", 2}, {C, "1:0.9", 3}, {C, "1:0.9", 5}, {C, "1:0.9", 6},
      {R, "1:0.5", 4}}},
};

static void test_asha(void) { RUN_CASES(asha_cases); }

/* ---- ASHA with the automatic grace period (the default rule) ---- */

/* Two completed trials of 27 steps: the trials' length is 27, the grace period
 * ceil(27 / 8) = 4, the rungs 4 and 12 (36 is past 27). Their values at rung 0 are
 * 0.6 and 0.5, at rung 1 0.7 and 0.6. */
#define DONE27 {C, "1:0.5 4:0.6 12:0.7 27:0.8", 0}, {C, "1:0.4 4:0.5 12:0.6 27:0.7", 0}

static const decide_case asha_auto_cases[] = {
    {"no trial has completed: nothing is decided", ASHA(0, 3, 0), 0,
     "no trial has completed yet (the rungs are set from the trials' length)",
     {{R, "1:0.9 4:0.9 12:0.9", 0}, {S, "1:0.9 4:0.9", 0}, {R, "1:0 4:0 12:0", 0}}},
    {"before the first rung, at ceil(27 / 8) = 4", ASHA(0, 3, 0), 0,
     "step 3 is before the first rung (step 4)", {DONE27, {R, "1:0 2:0 3:0", 0}}},
    {"a hopeless trial is stopped at step 4", ASHA(0, 3, 0), 1,
     "rung 0 (step 4): 0.1 is not in the top 1 of 3 trials (threshold 0.6)",
     {DONE27, {R, "1:0.1 2:0.1 3:0.1 4:0.1", 0}}},
    {"a good trial continues at step 4", ASHA(0, 3, 0), 0,
     "rung 0 (step 4): 0.65 is in the top 1 of 3 trials (threshold 0.65)",
     {DONE27, {R, "1:0 2:0.2 3:0.3 4:0.65", 0}}},
    {"the second rung is at step 12", ASHA(0, 3, 0), 1,
     "rung 1 (step 12): 0.55 is not in the top 1 of 3 trials (threshold 0.7)",
     {DONE27, {R, "4:0.7 8:0.7 12:0.55", 0}}},
    {"no rung at or past the trials' length", ASHA(0, 3, 0), 0,
     "step 26: no new rung (the last, rung 1, is at step 12)",
     {DONE27, {R, "4:0.9 12:0.9 26:0", 0}}},
    {"the longest completed trial sets the length", ASHA(0, 3, 0), 0,
     "step 2 is before the first rung (step 4)",
     {{C, "1:0.9 2:0.9 9:0.9", 0}, DONE27, {R, "1:0 2:0", 0}}},
    /* The length is 9 (grace 2): stopped and running trials that went further do
     * not count, but they compete at the rung. */
    {"stopped and running trials do not set the length", ASHA(0, 3, 0), 1,
     "rung 0 (step 2): 0 is not in the top 1 of 4 trials (threshold 0.9)",
     {{C, "1:0.9 2:0.9 9:0.9", 0}, {S, "2:0.9 40:0.9", 0}, {R, "2:0.9 30:0.9", 0},
      {R, "1:0 2:0", 0}}},
    /* Were its own 27 the length, the rungs would be 4 and 12; with 9 they are 2, 6. */
    {"the trial itself does not set the length", ASHA(0, 3, 0), 1,
     "rung 1 (step 6, reached at step 27): 0 is not the best of 2 trials (threshold 0.9)",
     {{C, "1:0.9 2:0.9 9:0.9", 0}, {C, "1:0 2:0 27:0", 0}}},
    {"one report at the trials' length is not judged", ASHA(0, 3, 0), 0,
     "step 27 is at the trials' length 27: its end, nothing left to save",
     {{C, "27:0.8", 0}, {C, "27:0.7", 0}, {R, "27:0", 0}}},
    {"a length of 8 gives grace 1", ASHA(0, 3, 0), 1,
     "rung 0 (step 1): 0 is not the best of 2 trials (threshold 0.9)",
     {{C, "1:0.9 8:0.9", 0}, {R, "1:0", 0}}},
    {"a length of 1 leaves no rung", ASHA(0, 3, 0), 0, "no rung below the trials' length 1",
     {{C, "1:0.9", 0}, {R, "1:0", 0}}},
    {"a length of 0 leaves no rung", ASHA(0, 3, 0), 0, "no rung below the trials' length 0",
     {{C, "0:0.9", 0}, {R, "0:0", 0}}},
    /* The real study's scale: 628 steps, reports every 52; grace 79, rungs 79, 237. */
    {"628 steps: the first report is before the first rung", ASHA(0, 3, 0), 0,
     "step 52 is before the first rung (step 79)",
     {{C, "52:0.7 104:0.8 628:0.86", 0}, {C, "52:0.6 104:0.75 628:0.85", 0},
      {R, "52:0.1", 0}}},
    {"628 steps: decided at the report after the rung", ASHA(0, 3, 0), 1,
     "rung 0 (step 79, reached at step 104): 0.2 is not in the top 1 of 3 trials "
     "(threshold 0.8)",
     {{C, "52:0.7 104:0.8 628:0.86", 0}, {C, "52:0.6 104:0.75 628:0.85", 0},
      {R, "52:0.1 104:0.2", 0}}},
    {"maxStep gives the length before any trial completes", ASHA(0, 3, 27), 1,
     "rung 0 (step 4): 0 is not the best of 2 trials (threshold 0.9)",
     {{R, "1:0.9 4:0.9", 0}, {R, "1:0 4:0", 0}}},
    {"maxStep: no rung at or past it", ASHA(0, 3, 27), 0,
     "step 26: no new rung (the last, rung 1, is at step 12)",
     {{R, "1:0.9 4:0.9 12:0.9 26:0.9", 0}, {R, "4:0.9 12:0.9 26:0", 0}}},
    /* Asynchronous: with trials in parallel, a rung is judged against the trials that
     * have reached it so far, running ones included; a trial that has not reached it
     * yet (the third, at step 2) is not a competitor, and nobody waits for it. */
    {"parallel: a running trial past the rung competes", ASHA(0, 3, 0), 1,
     "rung 0 (step 4): 0.55 is not in the top 1 of 3 trials (threshold 0.9)",
     {{C, "1:0.5 4:0.6 12:0.7 27:0.8", 0}, {R, "1:0.3 4:0.9 5:0.9", 0},
      {R, "1:0.95 2:0.95", 0}, {R, "1:0.5 4:0.55", 0}}},
    {"parallel: a trial not yet at the rung does not compete", ASHA(0, 3, 0), 0,
     "rung 0 (step 4): 0.92 is in the top 1 of 3 trials (threshold 0.92)",
     {{C, "1:0.5 4:0.6 12:0.7 27:0.8", 0}, {R, "1:0.3 4:0.9 5:0.9", 0},
      {R, "1:0.95 2:0.95", 0}, {R, "1:0.5 4:0.92", 0}}},
    {"parallel: the first trial at a rung continues at once", ASHA(0, 3, 27), 0,
     "rung 1 (step 12): 0.1 is the best of 1 trial (threshold 0.1)",
     {{R, "1:0.9 4:0.9", 0}, {R, "4:0.1 12:0.1", 0}}},
    {"hyperband: grace ceil(27 / 8) = 4, brackets 4 and 12", HYPERBAND(0, 3, 27), 1,
     "bracket 0 of 2 (gracePeriod 4): rung 0 (step 4): 0 is not the best of 2 trials",
     {{R, "4:0.9", 1}, {R, "4:0.9", 2}, {R, "4:0", 3}}},
    {"hyperband: bracket 1 starts at 12", HYPERBAND(0, 3, 27), 0,
     "bracket 1 of 2 (gracePeriod 12): step 4 is before the first rung (step 12)",
     {{R, "4:0.9", 1}, {R, "4:0", 2}}},
    {"hyperband: maxStep 1 leaves no rung", HYPERBAND(0, 3, 1), 0,
     "bracket 0 of 1 (gracePeriod 1): no rung below maxStep 1", {{R, "1:0", 1}}},
};

static void test_asha_auto(void) { RUN_CASES(asha_auto_cases); }

/* The default rule on a study run two trials at a time: six trials of 9 steps whose
 * curves are final * step / 9 with finals 0.5, 0.9, 0.1, 0.75, 0.2, 0.95 (so they rank
 * at every step as at the end). Trials 1 and 2 run side by side, then 3 and 4, then 5
 * and 6; at each tick every running trial reports its next step, lower numbers first.
 * Trials 1 and 2 run to the end: no trial had completed. From then on the length is 9,
 * the grace period 2, the rungs 2 and 6. At step 2, trial 3 is not the top 1 of 3
 * (trials 1, 2, 3), trial 4 not of 4, trial 5 not of 5; trial 6 is in the top 2 of 6
 * there and the best of 3 at step 6 (trials 1, 2, 6), and completes. */
static void test_default_two_at_a_time(void) {
    static const double finals[] = {0.5, 0.9, 0.1, 0.75, 0.2, 0.95};
    static const int want_steps[] = {9, 9, 2, 2, 2, 9};
    enum { NT = 6, NS = 9 };
    es_config cfg;
    es_config_default(&cfg);
    CHECK_INT_EQ(cfg.policy, ES_ASHA);
    CHECK_INT_EQ(cfg.reduction_factor, 3);
    CHECK(cfg.grace_period == 0 && cfg.max_step == 0 && cfg.maximize == 1);
    CHECK_INT_EQ(es_config_check(&cfg, NULL, 0), 0);

    es_point pts[NT][NS];
    es_trial tr[NT];
    memset(tr, 0, sizeof tr);
    size_t started = 0;
    for (size_t pair = 0; pair < NT / 2; pair++) {
        size_t a = 2 * pair;
        for (size_t i = a; i < a + 2; i++) tr[i] = (es_trial){(int64_t)i + 1, R, pts[i], 0};
        started = a + 2;
        for (int s = 1; s <= NS; s++) {
            for (size_t i = a; i < a + 2; i++) {
                if (tr[i].state != R) continue;
                pts[i][s - 1] = (es_point){s, finals[i] * s / NS};
                tr[i].n = (size_t)s;
                if (s == NS) {
                    tr[i].state = C;
                    continue;
                }
                es_decision d;
                es_decide(&cfg, tr, started, i, &d);
                if (i < 2)
                    CHECK_MSG(!d.stop && strstr(d.reason, "no trial has completed yet"),
                              "trial %zu step %d: %s", i + 1, s, d.reason);
                if (d.stop) tr[i].state = S;
            }
        }
    }
    int total = 0;
    for (size_t i = 0; i < NT; i++) {
        CHECK_MSG((int)tr[i].n == want_steps[i], "trial %zu ran %zu steps, want %d", i + 1,
                  tr[i].n, want_steps[i]);
        CHECK_INT_EQ(tr[i].state, want_steps[i] == NS ? C : S);
        total += (int)tr[i].n;
    }
    CHECK_INT_EQ(total, 33); /* of 54 */
}

/* ---- Hyperband ---- */

static const decide_case hyperband_cases[] = {
    {"hyperband compares within the bracket only", HYPERBAND(1, 3, 9), 0,
     "bracket 0 of 3 (gracePeriod 1): rung 0 (step 1): 0.5 is the best of 2 trials",
     {{R, "1:0.2", 1}, {C, "1:0.9", 2}, {C, "1:0.9", 3}, {C, "1:0.9", 5}, {C, "1:0.9", 6},
      {R, "1:0.5", 4}}},
    {"hyperband: worse within the bracket", HYPERBAND(1, 3, 9), 1,
     "bracket 0 of 3 (gracePeriod 1): rung 0 (step 1): 0.1 is not the best of 2 trials "
     "(threshold 0.2)",
     {{R, "1:0.2", 1}, {C, "1:0.05", 2}, {C, "1:0.05", 3}, {C, "1:0.05", 5}, {C, "1:0.05", 6},
      {R, "1:0.1", 4}}},
    {"bracket 1 waits for its first rung, 3", HYPERBAND(1, 3, 9), 0,
     "bracket 1 of 3 (gracePeriod 3): step 1 is before the first rung (step 3)",
     {{C, "1:0.9 3:0.9", 5}, {R, "1:0", 2}}},
    {"bracket 1 decides at step 3", HYPERBAND(1, 3, 9), 1,
     "bracket 1 of 3 (gracePeriod 3): rung 0 (step 3): 0.1 is not the best of 2 trials "
     "(threshold 0.9)",
     {{C, "1:0.9 3:0.9", 5}, {C, "1:0 3:0", 1}, {R, "1:0 3:0.1", 2}}},
    {"the last bracket has no rungs", HYPERBAND(1, 3, 9), 0,
     "bracket 2 of 3 (gracePeriod 9): no rung below maxStep 9",
     {{C, "1:0.9 3:0.9 9:0.9", 6}, {R, "1:0 3:0 9:0", 3}}},
};

/* Trial number k is in bracket (k - 1) mod (B + 1), whose first rung is grace * eta^b;
 * B = floor(log_eta(maxStep / gracePeriod)). */
static void test_hyperband_brackets(void) {
    static const struct {
        int64_t grace, max, number;
        int eta;
        const char *want;
    } cases[] = {
        {1, 27, 1, 3, "bracket 0 of 4 (gracePeriod 1): "},
        {1, 27, 2, 3, "bracket 1 of 4 (gracePeriod 3): "},
        {1, 27, 3, 3, "bracket 2 of 4 (gracePeriod 9): "},
        {1, 27, 4, 3, "bracket 3 of 4 (gracePeriod 27): no rung below maxStep 27"},
        {1, 27, 5, 3, "bracket 0 of 4 (gracePeriod 1): "},
        {1, 27, 8, 3, "bracket 3 of 4 "},
        {1, 27, 10, 3, "bracket 1 of 4 "},
        {1, 26, 4, 3, "bracket 0 of 3 (gracePeriod 1): "},
        {1, 26, 3, 3, "bracket 2 of 3 (gracePeriod 9): "},
        {2, 16, 4, 2, "bracket 3 of 4 (gracePeriod 16): "},
        {2, 15, 4, 2, "bracket 0 of 3 (gracePeriod 2): "},
        {3, 4, 7, 3, "bracket 0 of 1 (gracePeriod 3): "},
        {1, INT64_MAX, 63, 2, "bracket 62 of 63 (gracePeriod 4611686018427387904): "},
        {1, INT64_MAX, 64, 2, "bracket 0 of 63 (gracePeriod 1): "},
        {1, 27, 0, 3, "bracket 3 of 4 "},  /* numbers below 1: (k - 1) mod 4, >= 0 */
        {1, 27, -1, 3, "bracket 2 of 4 "},
        {1, 27, INT64_MIN, 3, "bracket 3 of 4 "}, /* -2^63 - 1 = 3 (mod 4) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        es_config c = HYPERBAND(cases[i].grace, cases[i].eta, cases[i].max);
        es_point p = {1, 0.5};
        es_trial tr = {cases[i].number, R, &p, 1};
        es_decision d;
        es_decide(&c, &tr, 1, 0, &d);
        CHECK_INT_EQ(d.stop, 0);
        CHECK_MSG(strstr(d.reason, cases[i].want), "case %zu: \"%s\" lacks \"%s\"", i,
                  d.reason, cases[i].want);
    }
}

static void test_hyperband(void) { RUN_CASES(hyperband_cases); }

/* ---- Trivial decisions ---- */

static void test_trivial(void) {
    es_point p = {1, 0.0};
    es_point q = {1, 1.0};
    es_trial trials[] = {{1, C, &q, 1}, {2, R, &p, 1}, {3, R, NULL, 0}};
    es_decision d;

    es_config none = {.policy = ES_NONE};
    es_decide(&none, trials, 3, 1, &d);
    CHECK_INT_EQ(d.stop, 0);
    CHECK_STR_CONTAINS(d.reason, "early stopping is off");

    es_config med = MEDIAN(1, 0, 0);
    es_decide(&med, trials, 3, 1, &d);
    CHECK_INT_EQ(d.stop, 1); /* the setting stops it when there is a point... */
    es_decide(&med, trials, 3, 2, &d);
    CHECK_INT_EQ(d.stop, 0); /* ...and not when there is none */
    CHECK_STR_CONTAINS(d.reason, "no measurement yet");

    es_config asha = ASHA(1, 2, 0), hb = HYPERBAND(1, 2, 4);
    es_decide(&asha, trials, 3, 1, &d);
    CHECK_INT_EQ(d.stop, 1);
    es_decide(&asha, trials, 3, 2, &d);
    CHECK_INT_EQ(d.stop, 0);
    CHECK_STR_CONTAINS(d.reason, "no measurement yet");
    es_decide(&hb, trials, 3, 2, &d);
    CHECK_INT_EQ(d.stop, 0);
    CHECK_STR_CONTAINS(d.reason, "no measurement yet");

    es_decide(&med, trials, 3, 3, &d); /* no such trial */
    CHECK_INT_EQ(d.stop, 0);
    CHECK_STR_CONTAINS(d.reason, "no trial 3 among 3");

    es_config bad = ASHA(1, 1, 0); /* an invalid configuration stops nothing */
    es_decide(&bad, trials, 3, 1, &d);
    CHECK_INT_EQ(d.stop, 0);
    CHECK_STR_CONTAINS(d.reason, "invalid early-stopping configuration: " F_ "reductionFactor");
}

/* ---- Configuration ---- */

static void test_config_check(void) {
    static const struct {
        es_config c;
        const char *want; /* NULL: valid */
    } cases[] = {
        {{.policy = ES_NONE, .min_trials = -5, .reduction_factor = -1, .max_step = -3}, NULL},
        {{.policy = 7}, F_ "policy must be one of none, median, asha, hyperband, dominance, got 7"},
        {{.policy = -1}, F_ "policy must be one of none, median, asha, hyperband, dominance, got -1"},
        {MEDIAN(1, 0, 0), NULL},
        {MEDIAN(5, 10, 1), NULL},
        {MEDIAN(-1, 0, 0), F_ "minTrials must be >= 1 (0: the policy's default), got -1"},
        {MEDIAN(-2, 0, 0), F_ "minTrials must be >= 1 (0: the policy's default), got -2"},
        {MEDIAN(1, -1, 0), F_ "minStep must be >= 0, got -1"},
        {MEDIAN(1, 0, 2), F_ "useRunningAverage must be true or false, got 2"},
        {MEDIAN(1, 0, -1), F_ "useRunningAverage must be true or false, got -1"},
        {ASHA(1, 2, 0), NULL},
        {ASHA(1, 3, 1), NULL}, /* legal, though it leaves no rung */
        {ASHA(0, 3, 0), NULL}, /* automatic: an eighth of the trials' length */
        {ASHA(0, 3, 27), NULL},
        {ASHA(-1, 3, 0),
         F_ "gracePeriod must be >= 0 (0: an eighth of the trials' length), got -1"},
        {ASHA(-4, 3, 0),
         F_ "gracePeriod must be >= 0 (0: an eighth of the trials' length), got -4"},
        {ASHA(1, 1, 0), F_ "reductionFactor must be >= 2, got 1"},
        {ASHA(1, 0, 0), F_ "reductionFactor must be >= 2, got 0"},
        {ASHA(1, 3, -1), F_ "maxStep must be >= 0 (0: no limit), got -1"},
        {HYPERBAND(1, 3, 2), NULL},
        {HYPERBAND(1, 3, INT64_MAX), NULL},
        {HYPERBAND(1, 3, 0),
         F_ "maxStep must be > gracePeriod (1) with policy hyperband, got 0"},
        {HYPERBAND(5, 3, 5),
         F_ "maxStep must be > gracePeriod (5) with policy hyperband, got 5"},
        {HYPERBAND(0, 3, 9), NULL},
        {HYPERBAND(0, 3, 1), NULL}, /* grace 1: one bracket, no rung */
        {HYPERBAND(0, 3, 0),
         F_ "maxStep (the step at which trials end) must be >= 1 with policy hyperband, "
            "got 0"},
        {HYPERBAND(-1, 3, 9),
         F_ "gracePeriod must be >= 0 (0: an eighth of the trials' length), got -1"},
        {HYPERBAND(1, 1, 9), F_ "reductionFactor must be >= 2, got 1"},
        {HYPERBAND(1, 3, -9), F_ "maxStep must be >= 0 (0: no limit), got -9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256] = "";
        int rc = es_config_check(&cases[i].c, err, sizeof err);
        if (!cases[i].want) {
            CHECK_MSG(rc == 0, "case %zu: rc %d (%s)", i, rc, err);
            CHECK_INT_EQ(es_config_check(&cases[i].c, NULL, 0), 0);
        } else {
            CHECK_MSG(rc == TN_EINVAL, "case %zu: rc %d, want TN_EINVAL", i, rc);
            CHECK_MSG(strcmp(err, cases[i].want) == 0, "case %zu: \"%s\", want \"%s\"", i,
                      err, cases[i].want);
            CHECK_INT_EQ(es_config_check(&cases[i].c, NULL, 0), TN_EINVAL);
        }
    }
    CHECK_INT_EQ(es_config_check(NULL, NULL, 0), TN_EINVAL);
}

static void test_policy_names(void) {
    for (int p = ES_NONE; p <= ES_DOMINANCE; p++)
        CHECK_INT_EQ(es_policy_parse(es_policy_name(p)), p);
    CHECK(strcmp(es_policy_name(ES_NONE), "none") == 0);
    CHECK(strcmp(es_policy_name(ES_MEDIAN), "median") == 0);
    CHECK(strcmp(es_policy_name(ES_ASHA), "asha") == 0);
    CHECK(strcmp(es_policy_name(ES_HYPERBAND), "hyperband") == 0);
    CHECK(es_policy_name(5) != NULL && es_policy_name(-1) != NULL);
    CHECK_INT_EQ(es_policy_parse("MEDIAN"), ES_MEDIAN);
    CHECK_INT_EQ(es_policy_parse("Asha"), ES_ASHA);
    CHECK_INT_EQ(es_policy_parse("HyperBand"), ES_HYPERBAND);
    CHECK_INT_EQ(es_policy_parse("NONE"), ES_NONE);
    static const char *const bad[] = {"bogus", "", "median ", "medians", "med", "hyper band",
                                      "unknown"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(es_policy_parse(bad[i]) == -1, "\"%s\" parsed", bad[i]);
    CHECK_INT_EQ(es_policy_parse(NULL), -1);
}

/* ---- Dominance (several metrics) ---- */

/* Two metrics, the first maximised, the second minimised. The running trial R is at
 * step 2 with (0.4, 5). A (0.6, 4) and B (0.9, 1 at step 1; its step 3 is later)
 * dominate it; C (equal) and E (a trade-off) do not; D has no value by step 2; F
 * dominates but FAILED. */
static void test_dominance(void) {
    static const es_point r0[] = {{1, 0.5}, {2, 0.4}}, r1[] = {{1, 3}, {2, 5}};
    static const es_point a0[] = {{2, 0.6}}, a1[] = {{2, 4}};
    static const es_point b0[] = {{1, 0.9}, {3, 0.1}}, b1[] = {{1, 1}};
    static const es_point c0[] = {{2, 0.4}}, c1[] = {{2, 5}};
    static const es_point d0[] = {{3, 1}}, d1[] = {{3, 0}};
    static const es_point e0[] = {{2, 0.3}}, e1[] = {{2, 1}};
#define CURVES(x, y) {{0, 0, x, sizeof x / sizeof x[0]}, {0, 0, y, sizeof y / sizeof y[0]}}
    es_trial m[7][2] = {CURVES(r0, r1), CURVES(a0, a1), CURVES(b0, b1), CURVES(c0, c1),
                        CURVES(d0, d1), CURVES(e0, e1), CURVES(a0, b1)};
#undef CURVES
    es_mtrial tr[7];
    for (int i = 0; i < 7; i++)
        tr[i] = (es_mtrial){i + 1, i == 0 ? SP_PENDING : i == 6 ? SP_FAILED : SP_COMPLETE, m[i]};
    const int goals[] = {1, 0};
    es_config c;
    es_config_default(&c);
    c.policy = ES_DOMINANCE;
    c.min_trials = 2;
    es_decision d;
    es_decide_dominance(&c, goals, 2, tr, 7, 0, &d);
    CHECK_MSG(d.stop && !strcmp(d.reason, "step 2: dominated by 2 of 4 completed trials "
                                          "(minTrials 2)"), "%d %s", d.stop, d.reason);
    c.min_trials = 3; /* one more needed */
    es_decide_dominance(&c, goals, 2, tr, 7, 0, &d);
    CHECK_MSG(!d.stop && strstr(d.reason, "dominated by 2 of 4"), "%s", d.reason);
    c.min_trials = 2;
    c.min_step = 3;
    es_decide_dominance(&c, goals, 2, tr, 7, 0, &d);
    CHECK_MSG(!d.stop && !strcmp(d.reason, "step 2 is before minStep 3"), "%s", d.reason);
    c.min_step = 1;
    /* the goals turned round: R dominates A and B instead; C still equal, E a trade-off */
    const int other[] = {0, 1};
    es_decide_dominance(&c, other, 2, tr, 7, 0, &d);
    CHECK_MSG(!d.stop && strstr(d.reason, "dominated by 0 of 4"), "%s", d.reason);
    /* a metric without a value yet */
    m[0][1].n = 0;
    es_decide_dominance(&c, goals, 2, tr, 7, 0, &d);
    CHECK_MSG(!d.stop && !strcmp(d.reason, "step 2: no value of metric 2 yet"), "%s", d.reason);
    m[0][1].n = 2;
    /* NaN is worse than any number: with R's first metric NaN, C (equal in the second)
     * and E (0.3, 1) dominate too */
    static const es_point rn[] = {{1, 0.5}, {2, NAN}};
    m[0][0].curve = rn;
    es_decide_dominance(&c, goals, 2, tr, 7, 0, &d);
    CHECK_MSG(d.stop && strstr(d.reason, "dominated by 4 of 4"), "%s", d.reason);
    m[0][0].curve = r0;
    /* bad arguments continue */
    es_decide_dominance(&c, goals, 0, tr, 7, 0, &d);
    CHECK(!d.stop);
    es_decide_dominance(&c, goals, 2, tr, 7, 7, &d);
    CHECK(!d.stop);
    c.policy = ES_MEDIAN;
    es_decide_dominance(&c, goals, 2, tr, 7, 0, &d);
    CHECK(!d.stop && strstr(d.reason, "not dominance"));
    /* one metric through es_decide: worse than min_trials completed trials; a tie is not */
    static const es_point run[] = {{1, 0.5}}, hi1[] = {{1, 0.9}}, hi2[] = {{1, 0.8}},
                          tie[] = {{1, 0.5}};
    es_trial one[] = {{1, SP_PENDING, run, 1}, {2, SP_COMPLETE, hi1, 1},
                      {3, SP_COMPLETE, tie, 1}, {4, SP_COMPLETE, hi2, 1}};
    c.policy = ES_DOMINANCE;
    c.maximize = 1;
    es_decide(&c, one, 4, 0, &d);
    CHECK_MSG(d.stop && strstr(d.reason, "dominated by 2 of 3"), "%s", d.reason);
    c.min_trials = 3;
    es_decide(&c, one, 4, 0, &d);
    CHECK_MSG(!d.stop, "%s", d.reason);
    /* minTrials 0: the policy's default, 3 for dominance, 5 for median */
    c.min_trials = 0;
    CHECK_INT_EQ(es_min_trials(&c), 3);
    c.min_trials = 2;
    es_decide(&c, one, 4, 0, &d);
    CHECK_MSG(d.stop, "%s", d.reason);
    c.min_trials = 0;
    es_decide(&c, one, 4, 0, &d); /* 2 dominate, 3 needed */
    CHECK_MSG(!d.stop && strstr(d.reason, "(minTrials 3)"), "%s", d.reason);
    char err[200];
    CHECK_INT_EQ(es_config_check(&c, err, sizeof err), 0);
    c.policy = ES_MEDIAN;
    CHECK_INT_EQ(es_min_trials(&c), 5);
    c.policy = ES_DOMINANCE;
    c.min_trials = -1;
    CHECK_INT_EQ(es_config_check(&c, err, sizeof err), TN_EINVAL);
    CHECK_INT_EQ(es_policy_parse("Dominance"), ES_DOMINANCE);
    CHECK(!strcmp(es_policy_name(ES_DOMINANCE), "dominance"));
}

/* ---- Properties over random histories ---- */

/* A random study: numbers 1..n, random states, curves of up to 12 points with
 * increasing steps, values on a 0.1 grid (so ties are common), a few NaN, infinite
 * or -0. */
static void random_study(tn_rng *r, study *st) {
    memset(st, 0, sizeof *st);
    st->n = 2 + (size_t)tn_rng_below(r, 25);
    static const int states[] = {R, C, S, F};
    for (size_t i = 0; i < st->n; i++) {
        es_trial *t = &st->trials[i];
        t->number = (int64_t)i + 1;
        t->state = states[tn_rng_below(r, 4)];
        t->curve = st->points[i];
        t->n = (size_t)tn_rng_below(r, 13);
        int64_t step = (int64_t)tn_rng_below(r, 3);
        for (size_t j = 0; j < t->n; j++) {
            uint64_t u = tn_rng_below(r, 100);
            double v = (double)tn_rng_below(r, 11) / 10;
            if (u < 4) v = NAN;
            else if (u < 5) v = INFINITY;
            else if (u < 6) v = -INFINITY;
            else if (u < 12 && v == 0) v = -0.0;
            st->points[i][j] = (es_point){step, v};
            step += 1 + (int64_t)tn_rng_below(r, 3);
        }
    }
}

static es_config random_config(tn_rng *r, int policy) {
    es_config c = {.policy = policy, .maximize = (int)tn_rng_below(r, 2)};
    c.min_trials = 1 + (int)tn_rng_below(r, 4);
    c.min_step = (int64_t)tn_rng_below(r, 4);
    c.running_average = (int)tn_rng_below(r, 2);
    c.grace_period = (int64_t)tn_rng_below(r, 4); /* 0: automatic */
    c.reduction_factor = 2 + (int)tn_rng_below(r, 3);
    if (policy == ES_HYPERBAND)
        c.max_step = c.grace_period + 1 + (int64_t)tn_rng_below(r, 30);
    else
        c.max_step = tn_rng_below(r, 2) ? 0 : c.grace_period + (int64_t)tn_rng_below(r, 20);
    return c;
}

/* A trial whose every value is the best value of the whole study is never stopped:
 * its best (and running average) is at least as good as every reference's running
 * average, so as the median (median); it is the best at every rung (asha,
 * hyperband). */
static void test_property_best_never_stopped(void) {
    static study st;
    tn_rng r;
    tn_rng_seed(&r, 20240611);
    int decided = 0;
    for (int iter = 0; iter < 400; iter++) {
        random_study(&r, &st);
        int policy = ES_MEDIAN + (int)(iter % 3);
        es_config c = random_config(&r, policy);
        size_t t = (size_t)tn_rng_below(&r, st.n);
        if (st.trials[t].n == 0) continue;
        double best = NAN; /* the best non-NaN value of the study */
        for (size_t i = 0; i < st.n; i++)
            for (size_t j = 0; j < st.trials[i].n; j++) {
                double v = st.points[i][j].value;
                if (isnan(v)) continue;
                if (isnan(best) || (c.maximize ? v > best : v < best)) best = v;
            }
        if (isnan(best)) continue;
        st.trials[t].state = R;
        for (size_t j = 0; j < st.trials[t].n; j++) st.points[t][j].value = best;
        es_decision d;
        es_decide(&c, st.trials, st.n, t, &d);
        CHECK_MSG(!d.stop, "iteration %d (%s): the best trial was stopped: %s", iter,
                  es_policy_name(policy), d.reason);
        decided++;
    }
    CHECK(decided > 300);
}

/* Decisions (stop and reason) do not depend on the order of the trials array. */
static void test_property_order_independent(void) {
    static study st, sh;
    tn_rng r;
    tn_rng_seed(&r, 77);
    int stops = 0, total = 0;
    for (int iter = 0; iter < 300; iter++) {
        random_study(&r, &st);
        /* sh = st shuffled (Fisher-Yates); pos[i] = where trial i went */
        size_t perm[MAXT], pos[MAXT];
        for (size_t i = 0; i < st.n; i++) perm[i] = i;
        for (size_t i = st.n - 1; i > 0; i--) {
            size_t j = (size_t)tn_rng_below(&r, i + 1), x = perm[i];
            perm[i] = perm[j], perm[j] = x;
        }
        sh = st;
        for (size_t i = 0; i < st.n; i++) {
            sh.trials[i] = st.trials[perm[i]];
            pos[perm[i]] = i;
        }
        for (int policy = ES_MEDIAN; policy <= ES_HYPERBAND; policy++) {
            es_config c = random_config(&r, policy);
            for (size_t t = 0; t < st.n; t++) {
                es_decision a, b;
                es_decide(&c, st.trials, st.n, t, &a);
                es_decide(&c, sh.trials, sh.n, pos[t], &b);
                CHECK_MSG(a.stop == b.stop && strcmp(a.reason, b.reason) == 0,
                          "iteration %d (%s), trial %zu: \"%s\" (%d) vs \"%s\" (%d)", iter,
                          es_policy_name(policy), t, a.reason, a.stop, b.reason, b.stop);
                stops += a.stop;
                total++;
            }
        }
    }
    CHECK(stops > total / 20); /* the histories exercise stopping, not just continuing */
}

int main(void) {
    RUN(test_median);
    RUN(test_asha);
    RUN(test_asha_auto);
    RUN(test_default_two_at_a_time);
    RUN(test_hyperband);
    RUN(test_hyperband_brackets);
    RUN(test_trivial);
    RUN(test_config_check);
    RUN(test_policy_names);
    RUN(test_dominance);
    RUN(test_property_best_never_stopped);
    RUN(test_property_order_independent);
    return check_summary();
}
