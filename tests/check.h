/*
 * check.h — the project's minimal test harness (header only).
 *
 * A test file defines functions `static void test_xxx(void)` and lists them in
 * main() with RUN(test_xxx). CHECK* macros record a failure with file:line and go on;
 * main returns check_summary(), which prints "N passed, N failed" and is non-zero
 * when anything failed. Numerical checks use |got - want| <= atol + rtol * |want|.
 */
#ifndef TN_CHECK_H
#define TN_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_failures_;
static int check_passed_;
static int check_failed_;
static const char *check_current_;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__,         \
                    check_current_, #cond);                                             \
            check_failures_++;                                                          \
        }                                                                               \
    } while (0)

#define CHECK_MSG(cond, ...)                                                            \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: %s: CHECK(%s) failed: ", __FILE__, __LINE__,         \
                    check_current_, #cond);                                             \
            fprintf(stderr, __VA_ARGS__);                                               \
            fputc('\n', stderr);                                                        \
            check_failures_++;                                                          \
        }                                                                               \
    } while (0)

#define CHECK_INT_EQ(got, want)                                                         \
    do {                                                                                \
        long long g_ = (long long)(got), w_ = (long long)(want);                        \
        CHECK_MSG(g_ == w_, "%s = %lld, expected %lld", #got, g_, w_);                  \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                                 \
    do {                                                                                \
        const char *h_ = (hay), *n_ = (needle);                                         \
        CHECK_MSG(h_ && strstr(h_, n_), "\"%s\" does not contain \"%s\"",               \
                  h_ ? h_ : "(null)", n_);                                              \
    } while (0)

#define CHECK_NEAR(got, want, atol, rtol)                                               \
    do {                                                                                \
        double g_ = (double)(got), w_ = (double)(want);                                 \
        CHECK_MSG(fabs(g_ - w_) <= (atol) + (rtol) * fabs(w_), "%s = %.9g, expected %.9g", \
                  #got, g_, w_);                                                        \
    } while (0)

#define RUN(fn)                                                                         \
    do {                                                                                \
        int before_ = check_failures_;                                                  \
        check_current_ = #fn;                                                           \
        fn();                                                                           \
        if (check_failures_ == before_) {                                               \
            check_passed_++;                                                            \
        } else {                                                                        \
            check_failed_++;                                                            \
            fprintf(stderr, "FAIL %s\n", #fn);                                          \
        }                                                                               \
    } while (0)

static inline int check_summary(void) {
    printf("%d passed, %d failed\n", check_passed_, check_failed_);
    return check_failed_ ? 1 : 0;
}

#endif
