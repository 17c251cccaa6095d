/*
 * capture.h — what a call prints on stdout and stderr, for the tests of commands
 * (header only): both are pointed at temporary files for the call, then read back.
 */
#ifndef TN_TEST_CAPTURE_H
#define TN_TEST_CAPTURE_H

#include <stdio.h>
#include <unistd.h>

typedef struct captured {
    char out[16384];
    char err[4096];
} captured;

typedef struct capture_state {
    int saved_out, saved_err;
    FILE *out, *err;
} capture_state;

static inline void capture_read(FILE *f, char *buf, size_t len) {
    rewind(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static inline capture_state capture_begin(void) {
    capture_state s;
    fflush(stdout);
    fflush(stderr);
    s.out = tmpfile();
    s.err = tmpfile();
    s.saved_out = dup(1);
    s.saved_err = dup(2);
    dup2(fileno(s.out), 1);
    dup2(fileno(s.err), 2);
    return s;
}

static inline void capture_end(capture_state *s, captured *c) {
    fflush(stdout);
    fflush(stderr);
    dup2(s->saved_out, 1);
    dup2(s->saved_err, 2);
    close(s->saved_out);
    close(s->saved_err);
    capture_read(s->out, c->out, sizeof c->out);
    capture_read(s->err, c->err, sizeof c->err);
}

#endif
