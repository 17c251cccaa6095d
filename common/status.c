/*
 * status.c — error codes, error messages and aborting allocators (see status.h).
 */
#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tn_strerror(int code) {
    switch (code) {
    case TN_OK: return "success";
    case TN_EINVAL: return "invalid argument";
    case TN_EIO: return "input/output error";
    case TN_ENOENT: return "no such file or folder";
    case TN_EFORMAT: return "bad file format";
    case TN_ETRUNC: return "file truncated";
    case TN_ECORRUPT: return "checksum mismatch";
    case TN_EVERSION: return "unsupported file version";
    case TN_EMISMATCH: return "configuration mismatch";
    case TN_EPEER: return "peer lost";
    default: return "unknown error";
    }
}

int tn_error(char *err, size_t errlen, int code, const char *fmt, ...) {
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

static char oom_hint[256]; /* tn_set_oom_hint */

void tn_set_oom_hint(const char *hint) {
    snprintf(oom_hint, sizeof oom_hint, "%s", hint ? hint : "");
}

__attribute__((noreturn)) static void oom_exit(void) {
    if (oom_hint[0]) fprintf(stderr, "hint: %s\n", oom_hint);
    exit(1);
}

void tn_out_of_memory(const char *what) {
    fflush(stdout);
    fprintf(stderr, "fatal: out of memory (%s)\n", what);
    oom_exit();
}

void tn_alloc_failed(size_t bytes) {
    fflush(stdout);
    fprintf(stderr, "fatal: out of memory allocating %zu bytes\n", bytes);
    oom_exit();
}

static void oom(size_t size) { tn_alloc_failed(size); }

void *tn_xmalloc(size_t size) {
    void *p = malloc(size ? size : 1);
    if (!p) oom(size);
    return p;
}

void *tn_xcalloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) oom(count * size);
    return p;
}

void *tn_xrealloc(void *ptr, size_t size) {
    void *p = realloc(ptr, size ? size : 1);
    if (!p) oom(size);
    return p;
}

char *tn_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = tn_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

char *tn_xvasprintf(const char *fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n < 0) { /* a format error: the format itself, rather than nothing */
        va_end(again);
        return tn_xstrdup(fmt);
    }
    char *s = tn_xmalloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, again);
    va_end(again);
    return s;
}

char *tn_xasprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = tn_xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}
