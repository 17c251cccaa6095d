/*
 * bench_dashfill.c — fills a stored study with finished trials and their learning
 * curves, fast, for the dashboard's load benchmark (bench/dashboard_load.sh).
 *
 *   bench_dashfill DB STUDY TRIALS STEPS
 *
 * The study must exist (`tuner create SPEC.json`). Each trial gets uniform random
 * parameters from the study's space, STEPS measurements of the spec's metric from the
 * chief (a rising curve ending at the trial's objective), and is recorded SUCCEEDED,
 * all through the store's own functions (so the change sequences are right) and in
 * one transaction, so 1,000 trials take well under a second instead of the minutes
 * 2,000 `tuner ask`/`tell` processes would.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/status.h"
#include "tuner/params.h"
#include "tuner/spec.h"
#include "tuner/store.h"

typedef struct fill {
    const tn_spec *spec;
    int64_t study;     /* the study's id */
    long trials, steps;
    char err[1024];
} fill;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fill_txn(st_store *st, void *arg) {
    fill *f = arg;
    const sp_space *space = &f->spec->space;
    double *v = calloc(space->n + 1, sizeof *v);
    uint64_t state = 12345;
    double t0 = now_s() - (double)f->trials * 2;
    int rc = 0;
    for (long i = 0; i < f->trials && rc == 0; i++) {
        double score = 0;
        for (size_t k = 0; k < space->n; k++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            double u = (double)(state >> 11) / 9007199254740992.0;
            v[k] = sp_from_unit(&space->params[k], u);
            score += u / (double)space->n;
        }
        char *params = tp_to_json(space, v);
        int64_t number;
        rc = st_trial_create(st, f->study, params, ST_TRIAL_RUNNING, &number, f->err, sizeof f->err);
        free(params);
        for (long s = 1; s <= f->steps && rc == 0; s++) {
            char metrics[128];
            snprintf(metrics, sizeof metrics, "{\"%s\": %.6f}", f->spec->metric_tag,
                     score * (double)s / (double)f->steps);
            st_measurement m = {.step = s, .replica = "chief:0", .metrics = metrics,
                                .timestamp = t0 + (double)i * 2 + (double)s * 0.01};
            rc = st_measurement_add(st, f->study, number, &m, f->err, sizeof f->err);
        }
        if (rc) break;
        st_trial t;
        int found; /* created just above: always */
        if ((rc = st_trial_get(st, f->study, number, &t, &found, f->err, sizeof f->err))) break;
        t.state = ST_TRIAL_SUCCEEDED;
        t.has_objective = 1;
        t.objective = score;
        t.started = t0 + (double)i * 2;
        t.finished = t.started + 1 + score;
        t.attempts = 1;
        rc = st_trial_update(st, &t, f->err, sizeof f->err);
        st_trial_clear(&t);
    }
    free(v);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: bench_dashfill DB STUDY TRIALS STEPS\n");
        return 2;
    }
    st_store *st = NULL;
    st_study study = {0};
    tn_spec spec;
    spec_errors errs = {0};
    char err[1024] = ""; /* the store's functions write it only when they fail */
    int code = 1;
    fill f = {.trials = atol(argv[3]), .steps = atol(argv[4])};
    if (st_open(argv[1], &st, err, sizeof err) != 0) {
        fprintf(stderr, "bench_dashfill: %s\n", err);
        goto done;
    }
    int found;
    int rc = st_study_get(st, argv[2], &study, &found, err, sizeof err);
    if (rc == 0 && !found) {
        fprintf(stderr, "bench_dashfill: no such study '%s' in %s\nhint: create it first "
                        "(tuner create SPEC.json --db=THIS_STORE)\n",
                argv[2], argv[1]);
        goto done;
    }
    if (rc != 0) {
        fprintf(stderr, "bench_dashfill: %s\n", err);
        goto done;
    }
    if (spec_parse(study.spec, study.name, 1, &spec, &errs) != 0) {
        fprintf(stderr, "bench_dashfill: the stored spec does not parse\n");
        spec_errors_clear(&errs);
        goto done;
    }
    f.spec = &spec;
    f.study = study.id;
    double t = now_s();
    if (st_transaction(st, fill_txn, &f, err, sizeof err) != 0) {
        fprintf(stderr, "bench_dashfill: %s\n", f.err[0] ? f.err : err);
    } else {
        printf("bench_dashfill: %ld trials with %ld measurements each in %.2f s\n", f.trials,
               f.steps, now_s() - t);
        code = 0;
    }
    spec_clear(&spec);
done:
    st_study_clear(&study);
    st_close(st);
    return code;
}
