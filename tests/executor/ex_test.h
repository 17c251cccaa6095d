/*
 * ex_test.h — what the executor's tests share (test_executor.c, test_slurm.c): the
 * outcome a job's callbacks gather, the callbacks, and the safety timeout that ends
 * an event loop whose job never finishes. Header-only, included once per test.
 */
#ifndef TN_TESTS_EX_TEST_H
#define TN_TESTS_EX_TEST_H

#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "executor/executor.h"

typedef struct outcome {
    int finished;            /* times finished() was called */
    int outcome;
    char error[2048];
    char events[32768];      /* "replica kind: detail; " ... */
    int bad_times;           /* events whose time was not a plausible wall-clock time */
    double chief_exit_time;  /* the time the chief's "exited" event came with */
    char handle[64];         /* the last handle */
    char job_handle[64];     /* ex_job_handle when the job was done ("" if NULL) */
    int handles;
    const char *metric;      /* the metric runs records (NULL: "accuracy") */
    int measurements;
    double last_accuracy;    /* the metric's last value */
    char runs[1024];         /* "STEP/RUN=VALUE " per record, in the order handed over */
    struct event_base *base;
    ex_job *job;
    double t0;
    void (*hook)(struct outcome *o, double elapsed); /* test_slurm: every 100 ms */
    int hook_state;
} outcome;

/* Appends "REPLICA KIND: DETAIL[ [exit N]][ [signal S]][ [notice]]; " to o->events. */
static void on_event(void *ctx, const ex_event *e) {
    outcome *o = ctx;
    if (e->time < 1.6e9) o->bad_times++; /* an event's time is the wall clock */
    size_t len = strlen(o->events);
    char how[48] = "";
    if (e->exit.code >= 0) snprintf(how, sizeof how, " [exit %d]", e->exit.code);
    if (e->exit.signal > 0) snprintf(how, sizeof how, " [signal %d]", e->exit.signal);
    snprintf(o->events + len, sizeof o->events - len, "%s %s: %s%s%s; ",
             e->replica ? e->replica : "job", e->kind, e->detail ? e->detail : "", how,
             e->notice ? " [notice]" : "");
    if (e->replica && !strcmp(e->replica, "chief:0") && !strcmp(e->kind, "exited"))
        o->chief_exit_time = e->time;
}

static void on_measurement(void *ctx, const char *replica, int run, const htr_record *rec) {
    (void)replica;
    outcome *o = ctx;
    o->measurements++;
    double v;
    int has = htr_record_metric(rec, o->metric ? o->metric : "accuracy", &v);
    if (has) o->last_accuracy = v;
    size_t len = strlen(o->runs);
    snprintf(o->runs + len, sizeof o->runs - len, "%lld/%d=%g ", (long long)rec->step, run,
             has ? v : -1);
}

static void on_finished(void *ctx, int result, const char *error) {
    outcome *o = ctx;
    o->finished++;
    o->outcome = result;
    snprintf(o->error, sizeof o->error, "%s", error ? error : "");
    event_base_loopbreak(o->base);
}

static void on_handle(void *ctx, const char *handle) {
    outcome *o = ctx;
    o->handles++;
    snprintf(o->handle, sizeof o->handle, "%s", handle);
}

static void on_safety(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    outcome *o = arg;
    snprintf(o->error, sizeof o->error, "safety timeout: the job never finished");
    event_base_loopbreak(o->base);
}

/* Arms the safety timeout: after `seconds` on o->base the loop ends with an error
 * in o->error. The event is the caller's to event_free. */
static struct event *arm_safety(outcome *o, long seconds) {
    struct event *safety = evtimer_new(o->base, on_safety, o);
    struct timeval tv = {seconds, 0};
    evtimer_add(safety, &tv);
    return safety;
}

/* A job's end: its attempts and restarts through the pointers, and the job freed
 * (nothing when j is NULL). */
static void job_done(ex_job *j, int *attempts, int *restarts) {
    if (!j) return;
    *attempts = ex_job_attempts(j);
    *restarts = ex_job_restarts(j);
    ex_job_free(j);
}

#endif
