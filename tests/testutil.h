/*
 * testutil.h — file-system helpers the unit tests share (header only): paths built
 * without silent truncation, the text written to a temporary file, a test's scratch
 * folder made and removed (rm -rf), and environment variables set and restored.
 */
#ifndef TN_TESTUTIL_H
#define TN_TESTUTIL_H

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef PATH_LEN
#define PATH_LEN 4096
#endif

/* Saves, sets (value NULL: unsets) and later restores an environment variable. */
typedef struct saved_env {
    const char *name;
    char *old; /* NULL when unset */
} saved_env;

static inline saved_env env_set(const char *name, const char *value) {
    saved_env s = {name, NULL};
    const char *old = getenv(name);
    if (old) s.old = strdup(old);
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    return s;
}

static inline void env_restore(saved_env *s) {
    if (s->old)
        setenv(s->name, s->old, 1);
    else
        unsetenv(s->name);
    free(s->old);
    s->old = NULL;
}

/* snprintf into a PATH_LEN buffer; aborts rather than truncate. */
static inline void fmt_path(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void fmt_path(char *out, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, PATH_LEN, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= PATH_LEN) {
        fprintf(stderr, "test path too long\n");
        abort();
    }
}

/* Everything written to f so far (a tmpfile()), as a string (yours to free). */
static inline char *file_text(FILE *f) {
    long n = ftell(f);
    char *s = calloc((size_t)(n > 0 ? n : 0) + 1, 1);
    if (!s) abort();
    rewind(f);
    if (n > 0 && fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = '\0';
    return s;
}

/* Removes path and everything below it (a file or a folder); missing is fine. */
static inline void rm_rf(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            char sub[PATH_LEN];
            fmt_path(sub, "%s/%s", path, de->d_name);
            rm_rf(sub);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* The folder the tests may write in: $TN_TEST_TMP, or /tmp. */
static inline const char *test_tmp(void) {
    const char *base = getenv("TN_TEST_TMP");
    return base && *base ? base : "/tmp";
}

/* A new scratch folder of this run, test_tmp()/NAME.PID emptied first, into out (of
 * PATH_LEN): 0, or -1 (said on stderr). */
static inline int scratch_dir(char *out, const char *name) {
    fmt_path(out, "%s/%s.%ld", test_tmp(), name, (long)getpid());
    rm_rf(out);
    if (mkdir(out, 0755) != 0) {
        fprintf(stderr, "mkdir %s: %s\n", out, strerror(errno));
        return -1;
    }
    return 0;
}

/* A new folder test_tmp()/PREFIX.XXXXXX of a unique name (mkdtemp), test_tmp() made
 * first where missing, into out (of PATH_LEN): 0, or -1 (said on stderr). */
static inline int scratch_mkdtemp(char *out, const char *prefix) {
    mkdir(test_tmp(), 0755);
    fmt_path(out, "%s/%s.XXXXXX", test_tmp(), prefix);
    if (!mkdtemp(out)) {
        perror(out);
        return -1;
    }
    return 0;
}

#endif
