/*
 * test_status.c — tests for the small shared helpers of common/: error codes and
 * messages (status.h), the random number generator and the kernel's randomness
 * (rng.h), mkdir -p (fileio.h) and the string helpers (text.h).
 *
 * The rng checks are statistical but deterministic (fixed seeds) with bounds several
 * standard deviations wide, so they never flake yet catch a broken generator: a
 * constant stream, modulo bias, a wrong range, a normal with the wrong moments, or
 * state that does not fully determine the sequence.
 */
#include "common/fileio.h"
#include "common/jsonutil.h"
#include "common/rng.h"
#include "common/status.h"
#include "common/text.h"

#include "tests/check.h"
#include "tests/testutil.h"

#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>

/* ---------------------------------------------------------------------------------
 * status.h
 * --------------------------------------------------------------------------------- */

static const int all_codes[] = {TN_OK,     TN_EINVAL,  TN_EIO,      TN_ENOENT,  TN_EFORMAT,
                                TN_ETRUNC, TN_ECORRUPT, TN_EVERSION, TN_EMISMATCH, TN_EPEER};
#define NCODES (sizeof all_codes / sizeof all_codes[0])

static void test_strerror_every_code(void) {
    const char *unknown = tn_strerror(-12345);
    CHECK(unknown != NULL && unknown[0] != '\0');
    for (size_t i = 0; i < NCODES; i++) {
        const char *s = tn_strerror(all_codes[i]);
        CHECK_MSG(s != NULL && s[0] != '\0', "code %d has no name", all_codes[i]);
        if (!s) continue;
        CHECK_MSG(strcmp(s, unknown) != 0, "code %d named like an unknown code ('%s')",
                  all_codes[i], s);
        for (size_t j = 0; j < i; j++) {
            const char *t = tn_strerror(all_codes[j]);
            CHECK_MSG(t && strcmp(s, t) != 0, "codes %d and %d share the name '%s'",
                      all_codes[i], all_codes[j], s);
        }
    }
    CHECK_STR_CONTAINS(tn_strerror(TN_EINVAL), "invalid");
    CHECK_STR_CONTAINS(tn_strerror(TN_ECORRUPT), "checksum");
}

static void test_strerror_unknown_codes(void) {
    const int odd[] = {1, 42, -10, -100, INT_MIN, INT_MAX};
    const char *unknown = tn_strerror(-12345);
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        const char *s = tn_strerror(odd[i]);
        CHECK_MSG(s != NULL && !strcmp(s, unknown), "code %d: '%s'", odd[i], s ? s : "(null)");
    }
    CHECK_STR_CONTAINS(unknown, "unknown");
}

static void test_error_formats_and_returns_code(void) {
    char err[64];
    strcpy(err, "old");
    CHECK_INT_EQ(tn_error(err, sizeof err, TN_EIO, "cannot open %s: %d", "x.bin", 7), TN_EIO);
    CHECK(!strcmp(err, "cannot open x.bin: 7"));
    for (size_t i = 0; i < NCODES; i++)
        CHECK_INT_EQ(tn_error(err, sizeof err, all_codes[i], "m"), all_codes[i]);
}

static void test_error_null_buffer_and_zero_length(void) {
    CHECK_INT_EQ(tn_error(NULL, 0, TN_EINVAL, "x %d", 1), TN_EINVAL);
    CHECK_INT_EQ(tn_error(NULL, 100, TN_ENOENT, "x %d", 1), TN_ENOENT);
    char err[8];
    memset(err, '#', sizeof err);
    CHECK_INT_EQ(tn_error(err, 0, TN_EFORMAT, "should not be written"), TN_EFORMAT);
    for (size_t i = 0; i < sizeof err; i++) CHECK_MSG(err[i] == '#', "byte %zu written", i);
}

static void test_error_truncates(void) {
    char err[16];
    memset(err, '#', sizeof err);
    CHECK_INT_EQ(tn_error(err, 5, TN_EIO, "%s", "abcdefghij"), TN_EIO);
    CHECK(!strcmp(err, "abcd"));
    CHECK_MSG(err[5] == '#', "wrote past errlen");
    CHECK_INT_EQ(tn_error(err, 1, TN_EIO, "abc"), TN_EIO);
    CHECK(err[0] == '\0');
}

/* ---------------------------------------------------------------------------------
 * rng.h
 * --------------------------------------------------------------------------------- */

static void test_xasprintf(void) {
    char *s = tn_xasprintf("%s-%d.%s", "worker", 12, "log");
    CHECK(s && strcmp(s, "worker-12.log") == 0);
    free(s);
    s = tn_xasprintf("%s", ""); /* empty */
    CHECK(s && s[0] == '\0');
    free(s);
    char big[5000]; /* longer than any first guess */
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    s = tn_xasprintf("[%s]", big);
    CHECK(s && strlen(s) == sizeof big + 1 && s[0] == '[' && s[sizeof big] == ']');
    free(s);
}

static void test_rng_same_seed_same_sequence(void) {
    tn_rng a, b;
    tn_rng_seed(&a, 12345);
    tn_rng_seed(&b, 12345);
    int same = 1;
    for (int i = 0; i < 1000; i++) same &= tn_rng_u64(&a) == tn_rng_u64(&b);
    for (int i = 0; i < 100; i++) same &= tn_rng_normal(&a) == tn_rng_normal(&b);
    for (int i = 0; i < 100; i++) same &= tn_rng_below(&a, 7) == tn_rng_below(&b, 7);
    CHECK(same);
}

static void test_rng_different_seeds_differ(void) {
    const uint64_t seeds[] = {0, 1, 2, 3, 42, 0x9e3779b97f4a7c15ULL, UINT64_MAX};
    enum { NS = sizeof seeds / sizeof seeds[0], ND = 4 };
    uint64_t first[NS][ND];
    for (int i = 0; i < NS; i++) {
        tn_rng r;
        tn_rng_seed(&r, seeds[i]);
        CHECK_MSG(r.s[0] | r.s[1] | r.s[2] | r.s[3], "seed %d gives an all-zero state", i);
        for (int d = 0; d < ND; d++) first[i][d] = tn_rng_u64(&r);
        /* Not stuck: consecutive outputs differ. */
        CHECK(first[i][0] != first[i][1] || first[i][1] != first[i][2]);
    }
    for (int i = 0; i < NS; i++)
        for (int j = 0; j < i; j++)
            CHECK_MSG(memcmp(first[i], first[j], sizeof first[i]) != 0,
                      "seeds %d and %d give the same stream", i, j);
}

static void test_rng_uniform_range(void) {
    tn_rng r;
    tn_rng_seed(&r, 7);
    const int n = 100000;
    double lo = 1.0, hi = 0.0, sum = 0.0;
    float lof = 1.0f, hif = 0.0f;
    double sumf = 0.0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double u = tn_rng_uniform(&r);
        float uf = tn_rng_uniformf(&r);
        bad += !(u >= 0.0 && u < 1.0) || !(uf >= 0.0f && uf < 1.0f);
        lo = fmin(lo, u);
        hi = fmax(hi, u);
        sum += u;
        lof = fminf(lof, uf);
        hif = fmaxf(hif, uf);
        sumf += uf;
    }
    CHECK_INT_EQ(bad, 0);
    /* Mean of U(0,1) over 1e5 draws: sd 0.0009. */
    CHECK_NEAR(sum / n, 0.5, 0.005, 0);
    CHECK_NEAR(sumf / n, 0.5, 0.005, 0);
    CHECK(lo < 0.001 && hi > 0.999);
    CHECK(lof < 0.001f && hif > 0.999f);
}

/* Chi-square statistic of nbins counts against a uniform expectation. */
static double chi_square(const long *counts, int nbins, long total) {
    double expect = (double)total / nbins, chi = 0.0;
    for (int b = 0; b < nbins; b++) chi += (counts[b] - expect) * (counts[b] - expect) / expect;
    return chi;
}

static void test_rng_below_range_and_uniformity(void) {
    tn_rng r;
    tn_rng_seed(&r, 99);
    CHECK_INT_EQ(tn_rng_below(&r, 1), 0);

    const uint64_t ns[] = {2, 3, 7, 10, 64, 1000};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        uint64_t n = ns[k];
        long *counts = calloc(n, sizeof *counts);
        long total = (long)n * 200;
        int out = 0;
        for (long i = 0; i < total; i++) {
            uint64_t x = tn_rng_below(&r, n);
            if (x >= n)
                out++;
            else
                counts[x]++;
        }
        CHECK_MSG(out == 0, "below(%llu) gave %d out-of-range values", (unsigned long long)n,
                  out);
        /* Chi-square with n-1 degrees of freedom: mean n-1, sd sqrt(2(n-1)). A loose
         * bound of mean + 6 sd (+10 for small n) never fails on a good generator. */
        double dof = (double)(n - 1);
        double chi = chi_square(counts, (int)n, total);
        CHECK_MSG(chi < dof + 6.0 * sqrt(2.0 * dof) + 10.0, "below(%llu): chi-square %.1f",
                  (unsigned long long)n, chi);
        free(counts);
    }

    /* A huge n where plain modulo would be visibly biased: with n = 2/3 of 2^64,
     * x % n puts half again as much mass on [0, n/2). */
    uint64_t big = UINT64_MAX / 3 * 2;
    long low = 0, total = 100000;
    int out = 0;
    for (long i = 0; i < total; i++) {
        uint64_t x = tn_rng_below(&r, big);
        out += x >= big;
        low += x < big / 2;
    }
    CHECK_INT_EQ(out, 0);
    CHECK_NEAR((double)low / total, 0.5, 0.01, 0);
}

static void test_rng_normal_moments(void) {
    tn_rng r;
    tn_rng_seed(&r, 2024);
    const int n = 100000;
    double sum = 0.0, sum2 = 0.0;
    long within1 = 0;
    int finite = 1;
    for (int i = 0; i < n; i++) {
        double z = tn_rng_normal(&r);
        finite &= isfinite(z) != 0;
        sum += z;
        sum2 += z * z;
        within1 += fabs(z) < 1.0;
    }
    double mean = sum / n, var = sum2 / n - mean * mean;
    CHECK(finite);
    CHECK_NEAR(mean, 0.0, 0.02, 0);         /* sd 0.003 */
    CHECK_NEAR(var, 1.0, 0.03, 0);          /* sd 0.0045 */
    CHECK_NEAR((double)within1 / n, 0.6827, 0.01, 0);
}

static void test_rng_state_copy_continues(void) {
    tn_rng r;
    tn_rng_seed(&r, 31337);
    for (int i = 0; i < 123; i++) tn_rng_u64(&r);
    tn_rng saved = r; /* what a checkpoint stores */
    uint64_t a[50];
    double an[50];
    for (int i = 0; i < 50; i++) {
        a[i] = tn_rng_below(&r, 1000003);
        an[i] = tn_rng_normal(&r);
    }
    tn_rng restored;
    memcpy(&restored, &saved, sizeof restored);
    int same = 1;
    for (int i = 0; i < 50; i++) {
        same &= tn_rng_below(&restored, 1000003) == a[i];
        same &= tn_rng_normal(&restored) == an[i];
    }
    CHECK(same);
    CHECK(!memcmp(&restored, &r, sizeof r));
}

/* tn_random_hex: 2n lowercase hex digits and a NUL, nothing written past them, every
 * digit in use, and not the same twice; n = 0 gives "". */
static void test_random_hex(void) {
    char a[33 + 8], b[33];
    memset(a, '#', sizeof a);
    char err[256] = "";
    CHECK_INT_EQ(tn_random_hex(a, 16, err, sizeof err), 0);
    CHECK_INT_EQ((int)strlen(a), 32);
    CHECK_INT_EQ((int)strspn(a, "0123456789abcdef"), 32);
    CHECK(a[33] == '#' && a[sizeof a - 1] == '#');
    CHECK_INT_EQ(tn_random_hex(b, 16, err, sizeof err), 0);
    CHECK_MSG(strcmp(a, b) != 0, "two ids alike: %s", a);
    char empty[1] = {'#'};
    CHECK_INT_EQ(tn_random_hex(empty, 0, err, sizeof err), 0);
    CHECK(empty[0] == '\0');
    /* 8192 digits: a digit missing from them all is a broken mapping, not chance */
    static char many[2 * 4096 + 1];
    CHECK_INT_EQ(tn_random_hex(many, 4096, err, sizeof err), 0);
    for (const char *d = "0123456789abcdef"; *d; d++)
        CHECK_MSG(strchr(many, *d) != NULL, "digit %c never made", *d);
}

static volatile sig_atomic_t g_alarms;
static void on_alarm(int sig) {
    (void)sig;
    g_alarms++;
}

/* tn_random_bytes fills all it is asked for though signals keep coming: getrandom
 * stops at a signal and says how much it gave (or EINTR when nothing), so 40 MiB under
 * a timer of 1 ms is read in many calls, and the last MiB must not be left zero. */
static void test_random_bytes_under_signals(void) {
    size_t n = (size_t)40 << 20;
    unsigned char *buf = calloc(n, 1);
    CHECK(buf != NULL);
    if (!buf) return;
    struct sigaction sa = {.sa_handler = on_alarm}, old; /* no SA_RESTART */
    sigemptyset(&sa.sa_mask);
    CHECK_INT_EQ(sigaction(SIGALRM, &sa, &old), 0);
    struct itimerval every_ms = {{0, 1000}, {0, 1000}}, off = {{0, 0}, {0, 0}};
    g_alarms = 0;
    CHECK_INT_EQ(setitimer(ITIMER_REAL, &every_ms, NULL), 0);
    char err[256] = "";
    CHECK_INT_EQ(tn_random_bytes(buf, n, err, sizeof err), 0);
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGALRM, &old, NULL);
    CHECK_MSG(g_alarms > 0, "no signal came while reading: the test proved nothing");
    size_t zero = 0;
    for (size_t i = n - ((size_t)1 << 20); i < n; i++) zero += buf[i] == 0;
    CHECK_MSG(zero < 8192, "%zu of the last MiB's bytes are zero", zero);
    free(buf);
}

/* ---------------------------------------------------------------------------------
 * fileio.h: tn_make_dirs
 * --------------------------------------------------------------------------------- */

/* Every folder on the way is made, and again (all there, a trailing slash) is fine. */
static void test_make_dirs_deep_and_again(void) {
    char root[PATH_LEN], path[PATH_LEN], err[PATH_LEN + 256] = "";
    if (scratch_dir(root, "make_dirs") != 0) {
        CHECK(0);
        return;
    }
    fmt_path(path, "%s/a/b/c", root);
    CHECK_INT_EQ(tn_make_dirs(path, err, sizeof err), 0);
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK_INT_EQ(tn_make_dirs(path, err, sizeof err), 0);
    fmt_path(path, "%s/a/b/c/", root);
    CHECK_INT_EQ(tn_make_dirs(path, err, sizeof err), 0);
    fmt_path(path, "%s/a//d", root);
    CHECK_INT_EQ(tn_make_dirs(path, err, sizeof err), 0);
    fmt_path(path, "%s/a/d", root);
    CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    rm_rf(root);
}

/* What stops it is named, with why: a file in the way (the file, not a folder below
 * it), a name too long for the file system (an errno that holds for root too). */
static void test_make_dirs_errors(void) {
    char root[PATH_LEN], file[PATH_LEN], path[PATH_LEN], err[PATH_LEN + 256] = "";
    if (scratch_dir(root, "make_dirs_err") != 0) {
        CHECK(0);
        return;
    }
    fmt_path(file, "%s/plain", root);
    FILE *f = fopen(file, "w");
    if (f) fclose(f);
    fmt_path(path, "%s/plain/sub/deeper", root);
    CHECK_INT_EQ(tn_make_dirs(path, err, sizeof err), TN_EIO);
    char want[PATH_LEN];
    fmt_path(want, "cannot create folder %s: a file is in the way", file);
    CHECK_STR_CONTAINS(err, want);
    CHECK_INT_EQ(tn_make_dirs(file, err, sizeof err), TN_EIO);
    CHECK_STR_CONTAINS(err, want);
    char name[300];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    fmt_path(path, "%s/ok/%s/below", root, name);
    CHECK_INT_EQ(tn_make_dirs(path, err, sizeof err), TN_EIO);
    fmt_path(path, "%s/ok/%s", root, name);
    fmt_path(want, "cannot create folder %s: %s", path, strerror(ENAMETOOLONG));
    CHECK_STR_CONTAINS(err, want);
    CHECK_INT_EQ(tn_make_dirs("", err, sizeof err), TN_EINVAL);
    CHECK_INT_EQ(tn_make_dirs(file, NULL, 0), TN_EIO); /* no buffer: only the code */
    rm_rf(root);
}

/* tn_remove_tree: a tree of folders, files and links goes, the links' targets outside
 * it stay; a lone file goes; nothing there is fine; what cannot go is named (a folder
 * under a file: ENOTDIR, which holds for root too). */
static void test_remove_tree(void) {
    char root[PATH_LEN], path[PATH_LEN], keep[PATH_LEN], link[PATH_LEN], err[PATH_LEN + 256] = "";
    if (scratch_dir(root, "remove_tree") != 0) {
        CHECK(0);
        return;
    }
    fmt_path(keep, "%s/keep", root);
    fmt_path(path, "%s/keep/inside.txt", root);
    CHECK_INT_EQ(tn_make_dirs(keep, err, sizeof err), 0);
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
    fmt_path(path, "%s/tree/a/b", root);
    CHECK_INT_EQ(tn_make_dirs(path, err, sizeof err), 0);
    fmt_path(path, "%s/tree/a/b/file", root);
    f = fopen(path, "w");
    if (f) fclose(f);
    fmt_path(link, "%s/tree/a/to_keep", root);
    CHECK(symlink(keep, link) == 0);
    fmt_path(link, "%s/tree/dangling", root);
    CHECK(symlink("/no/such/target", link) == 0);
    fmt_path(path, "%s/tree", root);
    CHECK_INT_EQ(tn_remove_tree(path, err, sizeof err), 0);
    struct stat st;
    CHECK(lstat(path, &st) != 0 && errno == ENOENT);
    fmt_path(path, "%s/keep/inside.txt", root);
    CHECK_MSG(stat(path, &st) == 0, "a link's target outside the tree was removed");
    CHECK_INT_EQ(tn_remove_tree(path, err, sizeof err), 0); /* a file */
    CHECK(lstat(path, &st) != 0);
    CHECK_INT_EQ(tn_remove_tree(path, err, sizeof err), 0); /* gone already */
    fmt_path(path, "%s/keep/plain", root);
    f = fopen(path, "w");
    if (f) fclose(f);
    fmt_path(path, "%s/keep/plain/below", root);
    CHECK_INT_EQ(tn_remove_tree(path, err, sizeof err), TN_EIO);
    CHECK_STR_CONTAINS(err, "cannot remove");
    CHECK_STR_CONTAINS(err, strerror(ENOTDIR));
    rm_rf(root);
}

/* ---------------------------------------------------------------------------------
 * text.h
 * --------------------------------------------------------------------------------- */

static void test_edit_distance_table(void) {
    static const struct {
        const char *a, *b;
        size_t d;
    } cases[] = {
        {"", "", 0},
        {"", "abc", 3},
        {"abc", "", 3},
        {"abc", "abc", 0},
        {"abc", "abd", 1},         /* substitute */
        {"abc", "abxc", 1},        /* insert */
        {"abc", "ac", 1},          /* delete */
        {"abc", "xabc", 1},        /* insert at the front */
        {"abc", "ab", 1},          /* delete at the end */
        {"kitten", "sitting", 3},
        {"flaw", "lawn", 2},
        {"learnig_rate", "learning_rate", 1},
        {"abc", "xyz", 3},
        {"ab", "ba", 1},           /* a swap of adjacent letters is one edit */
        {"maxTrail", "maxTrials", 2}, /* swap + insert */
        {"abc", "ca", 3},          /* not a restricted swap (optimal string alignment) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t d = tn_edit_distance(cases[i].a, cases[i].b);
        CHECK_MSG(d == cases[i].d, "'%s' vs '%s': %zu, expected %zu", cases[i].a, cases[i].b,
                  d, cases[i].d);
        size_t back = tn_edit_distance(cases[i].b, cases[i].a);
        CHECK_MSG(back == d, "not symmetric for '%s' / '%s'", cases[i].a, cases[i].b);
    }
}

static void test_closest(void) {
    const char *names[] = {"batch_size", "learning_rate", "job_dir", "momentum", "epochs"};
    size_t n = sizeof names / sizeof names[0];
    const char *best = tn_closest("learnig_rate", names, n);
    CHECK(best && !strcmp(best, "learning_rate"));
    best = tn_closest("job-dr", names, n);
    CHECK(best && !strcmp(best, "job_dir"));
    best = tn_closest("epoch", names, n);
    CHECK(best && !strcmp(best, "epochs"));
    best = tn_closest("momentum", names, n); /* exact */
    CHECK(best && !strcmp(best, "momentum"));
    CHECK(tn_closest("zzzzzzzz", names, n) == NULL);
    /* differing only in case wins outright */
    const char *cased[] = {"maxTrials", "MaxTrials"};
    CHECK(tn_closest("MAXTRIALS", cased, 2) == cased[0]);
    CHECK(tn_closest("maxTrail", cased, 1) == cased[0]);
    CHECK(tn_closest("learning_rate", names, 0) == NULL);
    /* The limit is max(2, len/3): 2 edits are allowed for a short word, 3 not. */
    const char *shorts[] = {"abcd"};
    CHECK(tn_closest("abxy", shorts, 1) == shorts[0]);
    CHECK(tn_closest("axyz", shorts, 1) == NULL);
    /* ... and 4 edits for a 12-letter word, 5 not. */
    const char *longs[] = {"abcdefghijkl"};
    CHECK(tn_closest("abcdefghwxyz", longs, 1) == longs[0]);
    CHECK(tn_closest("abcdefgvwxyz", longs, 1) == NULL);
}

static void test_format_double_cases(void) {
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        {0.1, "0.1"},     {1e-05, "1e-05"},       {123456789.0, "123456789"},
        {0.87, "0.87"},   {0.0, "0"},             {-2.5, "-2.5"},
        {1.0 / 3.0, "0.3333333333333333"},        {0.30000000000000004, "0.30000000000000004"},
        {NAN, "nan"},     {INFINITY, "inf"},      {-INFINITY, "-inf"},
        {1e300, "1e+300"}, {5e-324, "5e-324"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        memset(buf, 0, sizeof buf);
        char *r = tn_format_double(cases[i].v, buf, sizeof buf);
        CHECK(r == buf);
        CHECK_MSG(!strcmp(buf, cases[i].want), "got '%s', expected '%s'", buf, cases[i].want);
    }
}

/* Significant digits in a %g-style string ("-1.25e-07" -> 3). */
static int significant_digits(const char *s) {
    int n = 0, leading = 1;
    for (; *s && *s != 'e'; s++) {
        if (*s < '0' || *s > '9') continue;
        if (leading && *s == '0') continue;
        leading = 0;
        n++;
    }
    return n;
}

static void test_format_double_round_trips(void) {
    tn_rng r;
    tn_rng_seed(&r, 5);
    int failures = 0, not_shortest = 0, tried = 0;
    while (tried < 1000) {
        double v;
        if (tried % 2) {
            uint64_t bits = tn_rng_u64(&r);
            memcpy(&v, &bits, sizeof v);
            if (!isfinite(v)) continue;
        } else {
            /* Everyday magnitudes too, not only the extremes random bits give. */
            v = (tn_rng_uniform(&r) - 0.5) * pow(10.0, (double)tn_rng_below(&r, 21) - 10.0);
        }
        tried++;
        char buf[64], shorter[320];
        tn_format_double(v, buf, sizeof buf);
        if (strtod(buf, NULL) != v) {
            if (failures++ < 5) fprintf(stderr, "  %.17g formatted as '%s'\n", v, buf);
            continue;
        }
        int digits = significant_digits(buf);
        if (digits > 1) {
            snprintf(shorter, sizeof shorter, "%.*g", digits - 1, v);
            if (strtod(shorter, NULL) == v && not_shortest++ < 5)
                fprintf(stderr, "  %.17g: '%s' is shorter than '%s'\n", v, shorter, buf);
        }
        CHECK(digits <= 17);
    }
    CHECK_INT_EQ(failures, 0);
    CHECK_INT_EQ(not_shortest, 0);
}

static void test_buf(void) {
    tn_buf b = {0};
    char *empty = tn_buf_take(&b);
    CHECK(empty && !strcmp(empty, ""));
    free(empty);
    tn_buf_str(&b, "trial ");
    tn_buf_printf(&b, "%d of %s", 3, "s");
    tn_buf_add(&b, "!?", 1);
    for (int i = 0; i < 300; i++) tn_buf_add(&b, "x", 1); /* grows past the first block */
    CHECK(b.len == strlen("trial 3 of s!") + 300 && b.data[b.len] == '\0');
    CHECK(!strncmp(b.data, "trial 3 of s!xxx", 16));
    char *text = tn_buf_take(&b);
    CHECK(b.data == NULL && b.len == 0 && b.cap == 0);
    free(text);
    tn_buf_str(&b, "gone");
    tn_buf_clear(&b);
    CHECK(b.data == NULL && b.len == 0);
    tn_buf_clear(NULL);
}

/* Writes v with tn_json_write(indent, flags) and compares with want. */
static void check_json(const json_t *v, int indent, unsigned flags, const char *want) {
    tn_buf b = {0};
    tn_json_write(&b, v, indent, flags);
    CHECK_MSG(b.data && !strcmp(b.data, want), "got %s\nwant %s", b.data ? b.data : "(null)",
              want);
    tn_buf_clear(&b);
}

/* What a terminal is shown: newline and tab kept, other controls (C0, DEL, C1) and
 * bytes that are not UTF-8 each one '?', valid UTF-8 kept. */
static void test_term_clean(void) {
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"plain\ttext\nnext", "plain\ttext\nnext"},
        {"esc\x1b]0;title\x07 cr\rover", "esc?]0;title? cr?over"},
        {"del\x7f csi\xc2\x9b" "31m nbsp\xc2\xa0", "del? csi?31m nbsp\xc2\xa0"},
        {"raw\x9b" "31m bad\xff\xfe cut\xc3", "raw?31m bad?? cut?"},
        {"caf\xc3\xa9 \xf0\x9f\x99\x82", "caf\xc3\xa9 \xf0\x9f\x99\x82"},
        {"overlong \xc0\xaf surrogate \xed\xa0\x80", "overlong ?? surrogate ???"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = tn_term_clean(cases[i].in);
        CHECK_MSG(!strcmp(got, cases[i].want), "case %zu: got \"%s\"", i, got);
        free(got);
    }
}

static void test_json_write(void) {
    json_t *v = json_pack("{s:i, s:f, s:f, s:[s, b, n], s:{}, s:[]}", "n", 3, "x", 0.1, "w",
                          100.0, "list", "a\"b\\c\n", 1, "obj", "arr");
    check_json(v, -1, 0, "{\"n\":3,\"x\":0.1,\"w\":100,\"list\":[\"a\\\"b\\\\c\\n\",true,null],"
                         "\"obj\":{},\"arr\":[]}");
    check_json(v, 2, 0, "{\n  \"n\": 3,\n  \"x\": 0.1,\n  \"w\": 100,\n  \"list\": [\n"
                        "    \"a\\\"b\\\\c\\n\",\n    true,\n    null\n  ],\n  \"obj\": {},\n"
                        "  \"arr\": []\n}");
    json_decref(v);
    /* non-finite reals are null; -0 keeps its sign; shortest round-trip digits */
    tn_buf b = {0};
    tn_json_write_number(&b, NAN);
    tn_buf_add(&b, " ", 1);
    tn_json_write_number(&b, -INFINITY);
    tn_buf_add(&b, " ", 1);
    tn_json_write_number(&b, -0.0);
    tn_buf_add(&b, " ", 1);
    tn_json_write_number(&b, 1.0 / 3.0);
    CHECK_MSG(!strcmp(b.data, "null null -0 0.3333333333333333"), "%s", b.data);
    tn_buf_clear(&b);
}

static void test_json_write_strings(void) {
    static const struct {
        const char *in;
        unsigned flags;
        const char *want;
    } cases[] = {
        {"plain", 0, "\"plain\""},
        {"tab\there\x01\x1f", 0, "\"tab\\there\\u0001\\u001f\""},
        {"<a href='x'>&</a>", 0, "\"<a href='x'>&</a>\""},
        {"<a>&\x7f", TN_JSON_HTML_SAFE, "\"\\u003ca\\u003e\\u0026\\u007f\""},
        /* DEL and C1 (CSI is U+009B) always: a terminal showing the JSON obeys them */
        {"del\x7f csi\xc2\x9b" "31m nbsp\xc2\xa0", 0,
         "\"del\\u007f csi\\u009b31m nbsp\xc2\xa0\""},
        {"\xe2\x80\xa8|\xe2\x80\xa9", TN_JSON_HTML_SAFE, "\"\\u2028|\\u2029\""},
        {"\xe2\x80\xa8", 0, "\"\xe2\x80\xa8\""},
        {"caf\xc3\xa9 \xf0\x9f\x99\x82", 0, "\"caf\xc3\xa9 \xf0\x9f\x99\x82\""}, /* kept */
        {"bad \xff byte", 0, "\"bad ? byte\""},
        {"cut \xc3", 0, "\"cut ?\""},                  /* a sequence cut short */
        {"overlong \xc0\xaf", 0, "\"overlong ??\""},   /* '/' in two bytes */
        {"surrogate \xed\xa0\x80", 0, "\"surrogate ???\""},
        {"too high \xf4\x90\x80\x80", 0, "\"too high ????\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tn_buf b = {0};
        tn_json_write_string(&b, cases[i].in, strlen(cases[i].in), cases[i].flags);
        CHECK_MSG(b.data && !strcmp(b.data, cases[i].want), "case %zu: got %s, want %s", i,
                  b.data, cases[i].want);
        /* what is written always parses, to the input's valid UTF-8 */
        json_error_t je;
        json_t *back = json_loads(b.data, JSON_DECODE_ANY, &je);
        CHECK_MSG(json_is_string(back), "case %zu: %s does not parse: %s", i, b.data, je.text);
        json_decref(back);
        tn_buf_clear(&b);
    }
    tn_buf b = {0};
    tn_json_write_string(&b, "a\0b", 3, 0); /* a NUL inside: escaped, not the end */
    CHECK_MSG(!strcmp(b.data, "\"a\\u0000b\""), "%s", b.data);
    tn_buf_clear(&b);
}

int main(void) {
    RUN(test_strerror_every_code);
    RUN(test_strerror_unknown_codes);
    RUN(test_error_formats_and_returns_code);
    RUN(test_error_null_buffer_and_zero_length);
    RUN(test_error_truncates);
    RUN(test_xasprintf);
    RUN(test_rng_same_seed_same_sequence);
    RUN(test_rng_different_seeds_differ);
    RUN(test_rng_uniform_range);
    RUN(test_rng_below_range_and_uniformity);
    RUN(test_rng_normal_moments);
    RUN(test_rng_state_copy_continues);
    RUN(test_random_hex);
    RUN(test_random_bytes_under_signals);
    RUN(test_make_dirs_deep_and_again);
    RUN(test_make_dirs_errors);
    RUN(test_remove_tree);
    RUN(test_edit_distance_table);
    RUN(test_closest);
    RUN(test_format_double_cases);
    RUN(test_format_double_round_trips);
    RUN(test_buf);
    RUN(test_json_write);
    RUN(test_json_write_strings);
    RUN(test_term_clean);
    return check_summary();
}
