/*
 * status.h — the error type shared by every part of the project.
 *
 * Fallible functions return 0 on success or one of the negative TN_E* codes below,
 * and take an optional caller-provided buffer (err, errlen; err may be NULL) that
 * receives a one-line human message naming what failed and, where one is known,
 * what to do about it. tn_strerror() names each code, as strerror() does errno.
 * Out-of-memory ends the process with a message, the program's hint (tn_set_oom_hint)
 * and exit status 1 (tn_xmalloc and friends) rather than being threaded through every
 * caller. See docs/architecture.md, "Errors".
 */
#ifndef TN_STATUS_H
#define TN_STATUS_H

#include <stdarg.h>
#include <stddef.h>

enum {
    TN_OK = 0,
    TN_EINVAL = -1,   /* an argument or option is invalid */
    TN_EIO = -2,      /* a system call failed (the message carries strerror) */
    TN_ENOENT = -3,   /* a file or folder does not exist */
    TN_EFORMAT = -4,  /* a file is not in the expected format */
    TN_ETRUNC = -5,   /* a file ends before its header says it should */
    TN_ECORRUPT = -6, /* a checksum does not match */
    TN_EVERSION = -7, /* a file was written by an incompatible version */
    TN_EMISMATCH = -8, /* a file (or peer) does not match the configuration asked for */
    TN_EPEER = -9      /* a peer replica was lost, or broke the protocol */
};

/* The name of a TN_E* code ("invalid argument", ...); never NULL. */
const char *tn_strerror(int code);

/* Formats a message into err (if err is not NULL and errlen > 0) and returns code,
 * so a failing function can end with `return tn_error(err, errlen, TN_EIO, ...)`. */
int tn_error(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* What out-of-memory prints as its hint ("lower --batch_size ..."; copied; "" or NULL:
 * none). Set once, before the allocations it is about. */
void tn_set_oom_hint(const char *hint);

/* Ends the process after an allocation of `bytes` failed: "fatal: out of memory
 * allocating N bytes", the hint, exit status 1 (no abort, no core dump). */
void tn_alloc_failed(size_t bytes) __attribute__((noreturn));

/* malloc/calloc/realloc/strdup that end the process (tn_alloc_failed) on failure.
 * Sizes of zero are allowed and return a unique pointer. The memory is yours. */
void *tn_xmalloc(size_t size);
void *tn_xcalloc(size_t count, size_t size);
void *tn_xrealloc(void *ptr, size_t size);
char *tn_xstrdup(const char *s);

/* Prints "fatal: out of memory (WHAT)" and the hint, and exits 1: for the allocations
 * of libraries (jansson, libevent, SQLite) that fail only when memory runs out. */
void tn_out_of_memory(const char *what) __attribute__((noreturn));

/* printf into a new string, aborting on out-of-memory: yours to free. */
char *tn_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *tn_xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
