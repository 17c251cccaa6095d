/*
 * fuzz_util.h — what the libFuzzer harnesses of tests/fuzz share: the input as a
 * NUL-terminated string, a private temporary folder per process (for the readers that
 * take a path) and a check that aborts, so that a broken promise is reported as a
 * crash with its input kept. Static inline functions only: each harness is one program.
 * How the harnesses are built and run: docs/fuzzing.md.
 */
#ifndef TN_FUZZ_UTIL_H
#define TN_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A promise of the code under test that the input broke: says which, and aborts. */
#define FUZZ_CHECK(cond)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* data[0..size) followed by a NUL (an embedded NUL ends the string early, as it
 * would in a file read as text). Yours to free. */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) abort();
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

static char fuzz_dir_path[512]; /* this process's folder, "" until fuzz_dir() */

static inline void fuzz_dir_remove(void) {
    char cmd[600];
    if (!fuzz_dir_path[0]) return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fuzz_dir_path);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", fuzz_dir_path);
}

/* A folder of this process's own under $TMPDIR (or /tmp), removed at exit. */
static inline const char *fuzz_dir(void) {
    if (fuzz_dir_path[0]) return fuzz_dir_path;
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/tuner-fuzz.XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(fuzz_dir_path)) {
        perror("mkdtemp");
        abort();
    }
    atexit(fuzz_dir_remove);
    return fuzz_dir_path;
}

/* Replaces the file at path with data[0..size). */
static inline void fuzz_write_file(const char *path, const uint8_t *data, size_t size) {
    FILE *fp = fopen(path, "wb");
    if (!fp || (size && fwrite(data, 1, size, fp) != size) || fclose(fp) != 0) {
        perror(path);
        abort();
    }
}

#endif
