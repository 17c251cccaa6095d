/*
 * bench_asktell.c — ask+tell pairs per second through the C API with the SQLite
 * store: what a program driving trials itself pays per trial. A fresh store file, a
 * random-search study with one DOUBLE parameter, then N times study_ask (sample and
 * create the trial in one IMMEDIATE transaction) and study_tell (record its value).
 * Prints one JSON object. Driven by bench/overhead.py.
 *
 *   bench_asktell [--trials=N] [--db=PATH]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/flags.h"
#include "tuner/spec.h"
#include "tuner/store.h"
#include "tuner/study.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    int trials = 1000;
    const char *db = "/tmp/bench_asktell.db";
    const tn_flag flags[] = {{"trials", TN_FLAG_INT, &trials, "N", "ask+tell pairs"},
                             {"db", TN_FLAG_STRING, &db, "PATH", "store file (replaced)"}};
    int help;
    if (tn_flags_program("bench_asktell", NULL, flags, 2, argc, argv, &help)) return 2;
    if (help) return 0;
    char err[1024];
    char spec_text[512];
    snprintf(spec_text, sizeof spec_text,
             "{\"jobId\": \"bench\", \"trainingInput\": {\"hyperparameters\": {"
             "\"goal\": \"MINIMIZE\", \"hyperparameterMetricTag\": \"y\", \"maxTrials\": %d, "
             "\"algorithm\": \"RANDOM_SEARCH\", \"params\": [{\"parameterName\": \"x\", "
             "\"type\": \"DOUBLE\", \"minValue\": -5, \"maxValue\": 5}]}}}",
             trials);
    tn_spec spec;
    spec_errors errs = {0};
    if (spec_parse(spec_text, "bench", 1, &spec, &errs) != 0) {
        fprintf(stderr, "bench_asktell: error: bad built-in spec\n");
        return 1;
    }
    const char *suffixes[] = {"", "-wal", "-shm"}; /* a fresh store */
    for (int i = 0; i < 3; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s%s", db, suffixes[i]);
        unlink(p);
    }
    st_store *st = NULL;
    int64_t id;
    st_study study;
    int found, exhausted;
    if (st_open(db, &st, err, sizeof err) || st_study_create(st, "bench", spec_text, 1,
                                                             ST_STUDY_CREATED, &id, err, sizeof err) ||
        st_study_get(st, "bench", &study, &found, err, sizeof err) || !found) {
        fprintf(stderr, "bench_asktell: error: %s\n", err);
        return 1;
    }
    double t0 = now();
    for (int i = 0; i < trials; i++) {
        int64_t number;
        char *params = NULL;
        if (study_ask(st, &spec, &study, &number, &params, &exhausted, err, sizeof err) != 0 ||
            exhausted ||
            study_tell(st, &spec, &study, number, 0, (double)i, err, sizeof err) != 0) {
            fprintf(stderr, "bench_asktell: error at trial %d: %s\n", i + 1, err);
            return 1;
        }
        free(params);
    }
    double secs = now() - t0;
    printf("{\"framework\": \"tuner\", \"what\": \"ask+tell (C API, SQLite)\", \"trials\": %d, "
           "\"seconds\": %.3f, \"per_sec\": %.1f}\n",
           trials, secs, trials / secs);
    st_study_clear(&study);
    st_close(st);
    spec_clear(&spec);
    return 0;
}
