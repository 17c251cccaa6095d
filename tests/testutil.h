/*
 * testutil.h — file-system helpers the unit tests share (header only): paths built
 * without silent truncation, and rm -rf of a test's scratch folder.
 */
#ifndef TN_TESTUTIL_H
#define TN_TESTUTIL_H

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PATH_LEN
#define PATH_LEN 4096
#endif

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

#endif
