/*
 * test_checkpoint.c — tests for trainer/checkpoint.c: byte-exact round trips, every
 * kind of damage (a flipped byte in each part of the file, truncation at many
 * lengths, hostile offsets), failed writes that must leave no temporary file and an
 * existing checkpoint untouched, pruning in ckpt_save, and the fall-back of
 * ckpt_load_newest past damaged checkpoints with its warning text, and past ones that
 * the caller's check refuses (ckpt_load_newest_checked); entries named like
 * checkpoints that are not regular files (a folder, a FIFO) left alone, and a save over
 * such a folder (the rename fails) refused with a hint.
 *
 * Files go under $TN_TEST_TMP (or /tmp) in a folder named after the pid, removed at
 * the end. A failed write is provoked with RLIMIT_FSIZE (write() fails with EFBIG),
 * which works when running as root, where permission bits would not.
 * Format: docs/checkpoint-format.md, "Checkpoint format".
 */
#include "trainer/checkpoint.h"

#include "common/status.h"
#include "tests/check.h"
#include "tests/testutil.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define PATH_LEN 4096
#define BIG_SIZE (1u << 20)
#define HEADER_FIXED 24 /* magic, version, count, total size */
#define ENTRY_LEN 24    /* tag, crc, offset, size */

static char g_root[PATH_LEN]; /* this run's folder */

/* ---------------------------------------------------------------------------------
 * Helpers
 * --------------------------------------------------------------------------------- */

/* A fresh, empty folder g_root/name; its path goes to out. */
static void fresh_dir(char *out, const char *name) {
    fmt_path(out, "%s/%s", g_root, name);
    if (mkdir(out, 0755) != 0) {
        fprintf(stderr, "mkdir %s: %s\n", out, strerror(errno));
        abort();
    }
}

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* How many entries of dir contain needle in their name. */
static int count_names(const char *dir, const char *needle) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strstr(de->d_name, needle)) n++;
    closedir(d);
    return n;
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(data, 1, n, fp) != n || fclose(fp) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        abort();
    }
}

/* The whole file at path (yours to free); its length in *n. */
static unsigned char *read_bytes(const char *path, size_t *n) {
    long size = file_size(path);
    FILE *fp = fopen(path, "rb");
    if (size < 0 || !fp) {
        fprintf(stderr, "cannot read %s\n", path);
        abort();
    }
    unsigned char *b = tn_xmalloc((size_t)size);
    *n = fread(b, 1, (size_t)size, fp);
    fclose(fp);
    return b;
}

static void flip_byte(const char *path, size_t at) {
    size_t n;
    unsigned char *b = read_bytes(path, &n);
    if (at >= n) abort();
    b[at] ^= 0x5a;
    write_bytes(path, b, n);
    free(b);
}

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static void put_le32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Rewrites the header CRC of the checkpoint image b (n sections) after an edit, so
 * that a test reaches the checks behind it. */
static void reseal_header(unsigned char *b, uint32_t n) {
    size_t hlen = HEADER_FIXED + (size_t)n * ENTRY_LEN;
    put_le32(b + hlen, (uint32_t)crc32(0L, b, (uInt)hlen));
}

/* Four sections: small, empty, 1 MB of pseudo-random bytes, and one carrying step. */
typedef struct fixture {
    unsigned char *big;      /* (BIG_SIZE) */
    int64_t step;            /* stored in section tag 40 */
    ckpt_section sections[4];
} fixture;

static void fixture_init(fixture *fx, int64_t step) {
    static const char hello[] = "hello, checkpoint";
    fx->big = tn_xmalloc(BIG_SIZE);
    uint32_t x = 12345u;
    for (size_t i = 0; i < BIG_SIZE; i++) {
        x = x * 1664525u + 1013904223u;
        fx->big[i] = (unsigned char)(x >> 24);
    }
    fx->step = step;
    fx->sections[0] = (ckpt_section){.tag = 10, .data = hello, .size = sizeof(hello)};
    fx->sections[1] = (ckpt_section){.tag = 20, .data = NULL, .size = 0};
    fx->sections[2] = (ckpt_section){.tag = 30, .data = fx->big, .size = BIG_SIZE};
    fx->sections[3] = (ckpt_section){.tag = 40, .data = &fx->step, .size = sizeof(fx->step)};
}

static void fixture_clear(fixture *fx) {
    free(fx->big);
}

/* Checks that f holds exactly fx's sections, byte for byte. */
static void check_matches(const ckpt_file *f, const fixture *fx) {
    for (int i = 0; i < 4; i++) {
        const ckpt_section *s = &fx->sections[i];
        uint64_t size = 12345;
        const void *p = ckpt_find(f, s->tag, &size);
        CHECK_MSG(p != NULL, "section tag %u missing", (unsigned)s->tag);
        CHECK_INT_EQ(size, s->size);
        if (p && size == s->size && s->size > 0) CHECK(memcmp(p, s->data, s->size) == 0);
        if (p) CHECK_INT_EQ((uintptr_t)p % 8, 0);
    }
}

/* Writes fx to g_root/name and returns its path in out. */
static void write_fixture(char *out, const char *name, const fixture *fx) {
    char err[512] = "";
    fmt_path(out, "%s/%s", g_root, name);
    int rc = ckpt_write(out, fx->sections, 4, err, sizeof(err));
    CHECK_MSG(rc == 0, "ckpt_write: %s", err);
}

/* fixture_init(fx, step), written clean to g_root/name: the file's bytes (free them),
 * their number in *n. */
static unsigned char *clean_bytes(fixture *fx, int64_t step, const char *name, size_t *n) {
    char clean[PATH_LEN];
    fixture_init(fx, step);
    write_fixture(clean, name, fx);
    return read_bytes(clean, n);
}

/* ---------------------------------------------------------------------------------
 * Files
 * --------------------------------------------------------------------------------- */

static void test_round_trip(void) {
    fixture fx;
    fixture_init(&fx, 777);
    char path[PATH_LEN], err[512] = "";
    write_fixture(path, "round_trip.ckpt", &fx);
    size_t n;
    unsigned char *raw = read_bytes(path, &n);
    CHECK(n >= 8 && memcmp(raw, "TNCKPT\r\n", 8) == 0);
    CHECK(n >= 24 && raw[8] == CKPT_VERSION && raw[12] == 4 && le64(raw + 16) == n);
    free(raw);
    CHECK_INT_EQ(count_names(g_root, "round_trip.ckpt.tmp."), 0);

    ckpt_file *f = NULL;
    int rc = ckpt_read(path, &f, err, sizeof(err));
    CHECK_MSG(rc == 0, "ckpt_read: %s", err);
    CHECK(f != NULL);
    check_matches(f, &fx);
    ckpt_file_free(f);

    /* Overwriting an existing file replaces it. */
    fx.step = 778;
    write_fixture(path, "round_trip.ckpt", &fx);
    f = NULL;
    CHECK_INT_EQ(ckpt_read(path, &f, err, sizeof(err)), 0);
    check_matches(f, &fx);
    ckpt_file_free(f);
    fixture_clear(&fx);
}

static void test_no_sections(void) {
    char path[PATH_LEN], err[512] = "";
    fmt_path(path, "%s/empty.ckpt", g_root);
    CHECK_INT_EQ(ckpt_write(path, NULL, 0, err, sizeof(err)), 0);
    ckpt_file *f = NULL;
    CHECK_INT_EQ(ckpt_read(path, &f, err, sizeof(err)), 0);
    CHECK(f != NULL);
    CHECK(ckpt_find(f, 0, NULL) == NULL);
    ckpt_file_free(f);
}

static void test_find_missing_tag(void) {
    fixture fx;
    fixture_init(&fx, 1);
    char path[PATH_LEN], err[512] = "";
    write_fixture(path, "find.ckpt", &fx);
    ckpt_file *f = NULL;
    CHECK_INT_EQ(ckpt_read(path, &f, err, sizeof(err)), 0);
    uint64_t size = 99;
    CHECK(ckpt_find(f, 11, &size) == NULL);
    CHECK_INT_EQ(size, 99); /* untouched */
    CHECK(ckpt_find(f, 10, NULL) != NULL);
    ckpt_file_free(f);
    ckpt_file_free(NULL);
    fixture_clear(&fx);
}

static void test_bad_arguments(void) {
    static const char a[] = "a";
    char path[PATH_LEN], err[512] = "";
    fmt_path(path, "%s/dup.ckpt", g_root);
    ckpt_section dup[3] = {{.tag = 1, .data = a, .size = 1},
                           {.tag = 2, .data = a, .size = 1},
                           {.tag = 1, .data = a, .size = 1}};
    CHECK_INT_EQ(ckpt_write(path, dup, 3, err, sizeof(err)), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "tag 1 appears twice");
    CHECK(!file_exists(path));
    CHECK_INT_EQ(count_names(g_root, "dup.ckpt"), 0);

    ckpt_section nodata = {.tag = 1, .data = NULL, .size = 5};
    CHECK_INT_EQ(ckpt_write(path, &nodata, 1, err, sizeof(err)), TN_EINVAL);
    CHECK_INT_EQ(ckpt_write(path, NULL, 2, err, sizeof(err)), TN_EINVAL);
    CHECK(!file_exists(path));
}

/* One flipped byte in each part of the file, each caught with the right code. */
static void test_corruption(void) {
    fixture fx;
    char path[PATH_LEN];
    size_t n;
    unsigned char *raw = clean_bytes(&fx, 5, "corrupt_clean.ckpt", &n);
    size_t table = HEADER_FIXED, hcrc = HEADER_FIXED + 4 * ENTRY_LEN;
    size_t big_at = (size_t)le64(raw + table + 2 * ENTRY_LEN + 8); /* tag 30's offset */
    size_t step_at = (size_t)le64(raw + table + 3 * ENTRY_LEN + 8);
    struct {
        const char *what;
        size_t at;
        int code;
        const char *msg;
    } cases[] = {
        {"magic", 3, TN_EFORMAT, "not a checkpoint file"},
        {"version", 8, TN_EVERSION, "this build reads version 1"},
        {"section count", 12, TN_ECORRUPT, "header"},
        {"total size", 17, TN_ECORRUPT, "header checksum mismatch"},
        {"table: a tag", table + ENTRY_LEN, TN_ECORRUPT, "header checksum mismatch"},
        {"table: an offset", table + 2 * ENTRY_LEN + 9, TN_ECORRUPT, "header checksum"},
        {"header crc", hcrc + 2, TN_ECORRUPT, "header checksum mismatch"},
        {"1 MB section", big_at + BIG_SIZE / 2, TN_ECORRUPT, "section tag 30: checksum"},
        {"last byte", step_at + 7, TN_ECORRUPT, "section tag 40: checksum mismatch"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fmt_path(path, "%s/corrupt_%zu.ckpt", g_root, i);
        write_bytes(path, raw, n);
        flip_byte(path, cases[i].at);
        ckpt_file *f = NULL;
        char err[512] = "";
        int rc = ckpt_read(path, &f, err, sizeof(err));
        CHECK_MSG(rc == cases[i].code, "%s: got %d (%s), want %d", cases[i].what, rc, err,
                  cases[i].code);
        CHECK_STR_CONTAINS(err, cases[i].msg);
        CHECK_STR_CONTAINS(err, path);
        CHECK(f == NULL);
        ckpt_file_free(f);
    }
    /* The version message says which version was found. */
    char err[512] = "";
    ckpt_file *f = NULL;
    raw[8] = 2;
    write_bytes(path, raw, n);
    CHECK_INT_EQ(ckpt_read(path, &f, err, sizeof(err)), TN_EVERSION);
    CHECK_STR_CONTAINS(err, "format version 2; this build reads version 1");
    free(raw);
    fixture_clear(&fx);
}

/* Truncated at many lengths: always an error, never a crash. */
static void test_truncation(void) {
    fixture fx;
    char path[PATH_LEN];
    size_t n;
    unsigned char *raw = clean_bytes(&fx, 6, "trunc_clean.ckpt", &n);
    size_t lengths[] = {0,  1,   5,   8,   12,    20,    24,   27,
                        30, 60, 123, 124, 200, n / 2, n - 8, n - 1};
    for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
        fmt_path(path, "%s/trunc_%zu.ckpt", g_root, lengths[i]);
        write_bytes(path, raw, lengths[i]);
        ckpt_file *f = NULL;
        char err[512] = "";
        int rc = ckpt_read(path, &f, err, sizeof(err));
        CHECK_MSG(rc == TN_ETRUNC, "%zu bytes: got %d (%s)", lengths[i], rc, err);
        CHECK(f == NULL);
    }
    /* Mid-data: the message gives both sizes. */
    char want[128], err[512] = "";
    ckpt_file *f = NULL;
    fmt_path(path, "%s/trunc_%zu.ckpt", g_root, n / 2);
    snprintf(want, sizeof(want), "file is %zu bytes, header says %zu", n / 2, n);
    CHECK_INT_EQ(ckpt_read(path, &f, err, sizeof(err)), TN_ETRUNC);
    CHECK_STR_CONTAINS(err, want);

    /* Extra bytes at the end are not a checkpoint either. */
    unsigned char *longer = tn_xcalloc(n + 3, 1);
    memcpy(longer, raw, n);
    fmt_path(path, "%s/trunc_longer.ckpt", g_root);
    write_bytes(path, longer, n + 3);
    CHECK_INT_EQ(ckpt_read(path, &f, err, sizeof(err)), TN_EFORMAT);
    free(longer);

    /* Extended to 64 GiB (a sparse file: truncate made it so, by accident or on
     * purpose): refused by its header, never read into memory (which aborted the run). */
    fmt_path(path, "%s/trunc_huge.ckpt", g_root);
    write_bytes(path, raw, n);
    if (truncate(path, (off_t)64 << 30) == 0) {
        snprintf(want, sizeof(want), "file is %llu bytes, header says %zu", 64ull << 30, n);
        CHECK_INT_EQ(ckpt_read(path, &f, err, sizeof(err)), TN_EFORMAT);
        CHECK_STR_CONTAINS(err, want);
        CHECK(f == NULL);
    } else {
        printf("note: no sparse 64 GiB file here (%s): that case not run\n", strerror(errno));
    }
    unlink(path);

    /* Not a checkpoint at all, and no file. */
    fmt_path(path, "%s/trunc_text.ckpt", g_root);
    write_bytes(path, "hello world, this is text, not a checkpoint\n", 44);
    CHECK_INT_EQ(ckpt_read(path, &f, err, sizeof(err)), TN_EFORMAT);
    fmt_path(path, "%s/no_such.ckpt", g_root);
    CHECK_INT_EQ(ckpt_read(path, &f, err, sizeof(err)), TN_ENOENT);
    CHECK_INT_EQ(ckpt_read(g_root, &f, err, sizeof(err)), TN_EIO); /* a folder */
    CHECK(f == NULL);
    free(raw);
    fixture_clear(&fx);
}

/* A hostile file with a valid header CRC: offsets and sizes that would wrap around
 * or point outside the file, and section counts that cannot fit. */
static void test_hostile_header(void) {
    fixture fx;
    char path[PATH_LEN];
    size_t n;
    unsigned char *raw = clean_bytes(&fx, 7, "hostile_clean.ckpt", &n);
    unsigned char *b = tn_xmalloc(n);
    struct {
        size_t entry, field; /* field 8: offset, 16: size */
        uint64_t value;
    } cases[] = {
        {2, 16, UINT64_MAX},      /* size wraps offset + size */
        {2, 8, UINT64_MAX - 7},   /* offset far outside, aligned */
        {2, 8, 0},                /* points into the header */
        {2, 8, 8 * 1000000000ull}, /* outside */
        {0, 8, 129},              /* not aligned */
        {3, 8, 0},                /* goes backwards: overlaps the previous one */
        {3, 16, 9},               /* one byte past the end */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(b, raw, n);
        unsigned char *e = b + HEADER_FIXED + cases[i].entry * ENTRY_LEN;
        put_le64(e + cases[i].field, cases[i].value);
        reseal_header(b, 4);
        fmt_path(path, "%s/hostile_%zu.ckpt", g_root, i);
        write_bytes(path, b, n);
        ckpt_file *f = NULL;
        char err[512] = "";
        int rc = ckpt_read(path, &f, err, sizeof(err));
        CHECK_MSG(rc == TN_ECORRUPT, "case %zu: got %d (%s)", i, rc, err);
        CHECK_STR_CONTAINS(err, "is misplaced in a"); /* caught before any CRC */
        CHECK(f == NULL);
    }
    /* A section count of 2^32 - 1 in a file whose total size matches. */
    memcpy(b, raw, n);
    put_le32(b + 12, UINT32_MAX);
    fmt_path(path, "%s/hostile_count.ckpt", g_root);
    write_bytes(path, b, n);
    ckpt_file *f = NULL;
    char err[512] = "";
    CHECK_INT_EQ(ckpt_read(path, &f, err, sizeof(err)), TN_ECORRUPT);
    free(b);
    free(raw);
    fixture_clear(&fx);
}

/* ---------------------------------------------------------------------------------
 * Failed writes
 * --------------------------------------------------------------------------------- */

static void test_write_unwritable_place(void) {
    static const char a[] = "abc";
    ckpt_section s = {.tag = 1, .data = a, .size = 3};
    char file[PATH_LEN], path[PATH_LEN], err[512] = "";
    fmt_path(file, "%s/plain_file", g_root);
    write_bytes(file, "x", 1);
    fmt_path(path, "%s/sub/ckpt.ckpt", file); /* under a regular file */
    CHECK_INT_EQ(ckpt_write(path, &s, 1, err, sizeof(err)), TN_EIO);
    CHECK_STR_CONTAINS(err, "open ");
    CHECK_STR_CONTAINS(err, path);
    CHECK_STR_CONTAINS(err, strerror(ENOTDIR));
    CHECK_INT_EQ(file_size(file), 1);
    CHECK_INT_EQ(count_names(g_root, ".tmp."), 0);

    /* ckpt_save cannot create its folder there either. */
    char dir[PATH_LEN];
    fmt_path(dir, "%s/jobs", file);
    CHECK_INT_EQ(ckpt_save(dir, 1, &s, 1, 3, NULL, 0, err, sizeof(err)), TN_EIO);
    CHECK_STR_CONTAINS(err, "cannot create folder");
    CHECK_STR_CONTAINS(err, file);
    CHECK_STR_CONTAINS(err, "a file is in the way");
}

/* write() fails half way (RLIMIT_FSIZE): the old file survives, no temporary left. */
static void test_failed_write_keeps_old_file(void) {
    fixture fx;
    fixture_init(&fx, 8);
    char dir[PATH_LEN], path[PATH_LEN], err[512] = "";
    fresh_dir(dir, "failed_write");
    fmt_path(path, "%s/keep.ckpt", dir);
    ckpt_section small = {.tag = 1, .data = "old", .size = 3};
    CHECK_INT_EQ(ckpt_write(path, &small, 1, err, sizeof(err)), 0);
    long old_size = file_size(path);

    struct rlimit saved, lim;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    CHECK(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    lim = saved;
    lim.rlim_cur = 64 * 1024;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    int rc = ckpt_write(path, fx.sections, 4, err, sizeof(err));
    CHECK(setrlimit(RLIMIT_FSIZE, &saved) == 0);
    signal(SIGXFSZ, old_handler);

    CHECK_INT_EQ(rc, TN_EIO);
    CHECK_STR_CONTAINS(err, "write ");
    CHECK_STR_CONTAINS(err, "keep.ckpt.tmp.");
    CHECK_STR_CONTAINS(err, strerror(EFBIG));
    CHECK_INT_EQ(count_names(dir, ".tmp."), 0);
    CHECK_INT_EQ(file_size(path), old_size);
    ckpt_file *f = NULL;
    CHECK_INT_EQ(ckpt_read(path, &f, err, sizeof(err)), 0);
    uint64_t size = 0;
    const void *p = ckpt_find(f, 1, &size);
    CHECK(p && size == 3 && memcmp(p, "old", 3) == 0);
    ckpt_file_free(f);
    fixture_clear(&fx);
}

/* ---------------------------------------------------------------------------------
 * The checkpoint folder
 * --------------------------------------------------------------------------------- */

static void test_save_prunes_and_cleans(void) {
    char dir[PATH_LEN], p[PATH_LEN], out[PATH_LEN], want[PATH_LEN], err[512] = "";
    fmt_path(dir, "%s/save/a/b", g_root); /* parents created */
    int64_t step = 0;
    ckpt_section s = {.tag = 1, .data = &step, .size = sizeof(step)};
    for (step = 1; step <= 5; step++) {
        int rc = ckpt_save(dir, step, &s, 1, 2, out, sizeof(out), err, sizeof(err));
        CHECK_MSG(rc == 0, "ckpt_save step %lld: %s", (long long)step, err);
        fmt_path(want, "%s/ckpt-%012lld.ckpt", dir, (long long)step);
        CHECK(strcmp(out, want) == 0);
    }
    CHECK_INT_EQ(count_names(dir, ".ckpt"), 2);
    fmt_path(p, "%s/ckpt-000000000004.ckpt", dir);
    CHECK(file_exists(p));
    fmt_path(p, "%s/ckpt-000000000005.ckpt", dir);
    CHECK(file_exists(p));

    /* Leftovers of a crash go; files that only look similar stay. */
    const char *stale[] = {"ckpt-000000000006.ckpt.tmp.4242", "ckpt-000000000001.ckpt.tmp.1"};
    const char *other[] = {"notes.tmp.1", "ckpt-12.ckpt", "ckpt-000000000001.ckpt.bak",
                           "xckpt-000000000001.ckpt", "ckpt-00000000000x.ckpt",
                           "ckpt-notes.tmp.3"};
    size_t n_other = sizeof(other) / sizeof(other[0]);
    for (int i = 0; i < 2; i++) {
        fmt_path(p, "%s/%s", dir, stale[i]);
        write_bytes(p, "junk", 4);
    }
    for (size_t i = 0; i < n_other; i++) {
        fmt_path(p, "%s/%s", dir, other[i]);
        write_bytes(p, "keep", 4);
    }
    step = 6;
    CHECK_INT_EQ(ckpt_save(dir, step, &s, 1, 3, NULL, 0, err, sizeof(err)), 0);
    CHECK_INT_EQ(count_names(dir, ".tmp.4242"), 0);
    CHECK_INT_EQ(count_names(dir, "ckpt.tmp.1"), 0);
    for (size_t i = 0; i < n_other; i++) {
        fmt_path(p, "%s/%s", dir, other[i]);
        CHECK_MSG(file_exists(p), "%s was removed", other[i]);
    }
    fmt_path(p, "%s/ckpt-000000000004.ckpt", dir); /* keep = 3: 4, 5, 6 */
    CHECK(file_exists(p));

    /* keep = 1 leaves only the newest. */
    step = 7;
    CHECK_INT_EQ(ckpt_save(dir, step, &s, 1, 1, NULL, 0, err, sizeof(err)), 0);
    fmt_path(p, "%s/ckpt-000000000007.ckpt", dir);
    CHECK(file_exists(p));
    fmt_path(p, "%s/ckpt-000000000006.ckpt", dir);
    CHECK(!file_exists(p));
}

/* What interrupted writes of a file left beside it (any pid's temporary of that very
 * file, this process's own included: a restart in a fresh container where pids repeat,
 * which made the exclusive create fail on every restart) goes with the next write of
 * the file; other files, and names that only look similar, stay. */
static void test_write_removes_its_leftovers(void) {
    char dir[PATH_LEN], path[PATH_LEN], p[PATH_LEN], err[512] = "";
    fmt_path(dir, "%s/leftovers", g_root);
    CHECK(mkdir(dir, 0700) == 0);
    fmt_path(path, "%s/model.ckpt", dir);
    char own[64];
    snprintf(own, sizeof own, "model.ckpt.tmp.%ld", (long)getpid());
    const char *gone[] = {own, "model.ckpt.tmp.99999999"};
    const char *stay[] = {"model.ckpt.tmp.", "model.ckpt.tmp.12x", "other.ckpt.tmp.7",
                          "model.ckpt.bak", "xmodel.ckpt.tmp.8"};
    for (size_t i = 0; i < 2; i++) {
        fmt_path(p, "%s/%s", dir, gone[i]);
        write_bytes(p, "junk", 4);
    }
    for (size_t i = 0; i < sizeof stay / sizeof stay[0]; i++) {
        fmt_path(p, "%s/%s", dir, stay[i]);
        write_bytes(p, "keep", 4);
    }
    int64_t v = 42;
    ckpt_section s = {.tag = 1, .data = &v, .size = sizeof(v)};
    int rc = ckpt_write(path, &s, 1, err, sizeof(err));
    CHECK_MSG(rc == 0, "ckpt_write beside its leftovers: %s", err);
    CHECK(file_exists(path));
    for (size_t i = 0; i < 2; i++) {
        fmt_path(p, "%s/%s", dir, gone[i]);
        CHECK_MSG(!file_exists(p), "%s was left", gone[i]);
    }
    for (size_t i = 0; i < sizeof stay / sizeof stay[0]; i++) {
        fmt_path(p, "%s/%s", dir, stay[i]);
        CHECK_MSG(file_exists(p), "%s was removed", stay[i]);
    }
}

static void test_save_arguments(void) {
    char dir[PATH_LEN], small[8], err[512] = "";
    fmt_path(dir, "%s/save_args", g_root);
    int64_t v = 1;
    ckpt_section s = {.tag = 1, .data = &v, .size = sizeof(v)};
    CHECK_INT_EQ(ckpt_save(dir, 1, &s, 1, 0, NULL, 0, err, sizeof(err)), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "keep");
    CHECK_INT_EQ(ckpt_save(dir, -1, &s, 1, 2, NULL, 0, err, sizeof(err)), TN_EINVAL);
    CHECK_INT_EQ(ckpt_save(dir, 1000000000000LL, &s, 1, 2, NULL, 0, err, sizeof(err)),
                 TN_EINVAL);
    CHECK_INT_EQ(ckpt_save(dir, 1, &s, 1, 2, small, sizeof(small), err, sizeof(err)),
                 TN_EINVAL);
    CHECK(!file_exists(dir)); /* nothing happened */
    CHECK_INT_EQ(ckpt_save(dir, 999999999999LL, &s, 1, 2, NULL, 0, err, sizeof(err)), 0);
    CHECK_INT_EQ(count_names(dir, "ckpt-999999999999.ckpt"), 1);
}

/* The file just written is never pruned. Checkpoints above its step are what the run
 * resumed around (unusable) and go first, so they never cost a good one its place. */
static void test_save_prunes_abandoned_steps(void) {
    char dir[PATH_LEN], p[PATH_LEN], err[512] = "";
    fresh_dir(dir, "save_lower");
    int64_t v = 1;
    ckpt_section s = {.tag = 1, .data = &v, .size = sizeof(v)};
    CHECK_INT_EQ(ckpt_save(dir, 100, &s, 1, 5, NULL, 0, err, sizeof(err)), 0);
    CHECK_INT_EQ(ckpt_save(dir, 300, &s, 1, 5, NULL, 0, err, sizeof(err)), 0);
    CHECK_INT_EQ(ckpt_save(dir, 400, &s, 1, 5, NULL, 0, err, sizeof(err)), 0);
    CHECK_INT_EQ(ckpt_save(dir, 200, &s, 1, 2, NULL, 0, err, sizeof(err)), 0);
    CHECK_INT_EQ(count_names(dir, ".ckpt"), 2);
    fmt_path(p, "%s/ckpt-000000000100.ckpt", dir); /* the good one before it stays */
    CHECK(file_exists(p));
    fmt_path(p, "%s/ckpt-000000000200.ckpt", dir);
    CHECK(file_exists(p));
    /* keep = 1 leaves only the file just written. */
    CHECK_INT_EQ(ckpt_save(dir, 500, &s, 1, 5, NULL, 0, err, sizeof(err)), 0);
    CHECK_INT_EQ(ckpt_save(dir, 150, &s, 1, 1, NULL, 0, err, sizeof(err)), 0);
    CHECK_INT_EQ(count_names(dir, ".ckpt"), 1);
    fmt_path(p, "%s/ckpt-000000000150.ckpt", dir);
    CHECK(file_exists(p));
}

/* Saves steps 10, 20, 30 into dir, each with its step in section tag 1. */
static void save_three(const char *dir) {
    char err[512] = "";
    for (int64_t step = 10; step <= 30; step += 10) {
        ckpt_section s = {.tag = 1, .data = &step, .size = sizeof(step)};
        int rc = ckpt_save(dir, step, &s, 1, 5, NULL, 0, err, sizeof(err));
        CHECK_MSG(rc == 0, "ckpt_save: %s", err);
    }
}

static int64_t step_of(const ckpt_file *f) {
    uint64_t size = 0;
    const void *p = ckpt_find(f, 1, &size);
    int64_t step = -1;
    if (p && size == sizeof(step)) memcpy(&step, p, sizeof(step));
    return step;
}

static void test_load_newest(void) {
    char dir[PATH_LEN], p[PATH_LEN], got[PATH_LEN], err[512] = "";
    fresh_dir(dir, "load");
    save_three(dir);
    ckpt_file *f = NULL;
    FILE *log = tmpfile();
    CHECK_INT_EQ(ckpt_load_newest(dir, &f, got, sizeof(got), log, err, sizeof(err)), 0);
    CHECK_INT_EQ(step_of(f), 30);
    fmt_path(p, "%s/ckpt-000000000030.ckpt", dir);
    CHECK(strcmp(got, p) == 0);
    ckpt_file_free(f);
    char *text = file_text(log);
    CHECK_MSG(text[0] == '\0', "unexpected log: %s", text);
    free(text);
    fclose(log);

    /* The newest is damaged: a warning, and the one before it. */
    flip_byte(p, file_size(p) - 1);
    log = tmpfile();
    f = NULL;
    CHECK_INT_EQ(ckpt_load_newest(dir, &f, got, sizeof(got), log, err, sizeof(err)), 0);
    CHECK_INT_EQ(step_of(f), 20);
    CHECK_STR_CONTAINS(got, "ckpt-000000000020.ckpt");
    ckpt_file_free(f);
    char want[2 * PATH_LEN];
    snprintf(want, sizeof(want),
             "warning: checkpoint %s is unusable (section tag 1: checksum mismatch); "
             "trying the previous one\n",
             p);
    text = file_text(log);
    CHECK_MSG(strcmp(text, want) == 0, "log is \"%s\"", text);
    free(text);
    fclose(log);

    /* Also with a NULL log, and with a path buffer that is too small. */
    char tiny[8];
    CHECK_INT_EQ(ckpt_load_newest(dir, &f, NULL, 0, NULL, err, sizeof(err)), 0);
    CHECK_INT_EQ(step_of(f), 20);
    ckpt_file_free(f);
    CHECK_INT_EQ(ckpt_load_newest(dir, &f, tiny, sizeof(tiny), NULL, err, sizeof(err)),
                 TN_EINVAL);
    CHECK(f == NULL);
}

static void test_load_newest_nothing(void) {
    char dir[PATH_LEN], p[PATH_LEN], got[PATH_LEN] = "x", err[512] = "";
    ckpt_file *f = (ckpt_file *)&f; /* must be reset */
    fmt_path(dir, "%s/load_missing", g_root);
    CHECK_INT_EQ(ckpt_load_newest(dir, &f, got, sizeof(got), NULL, err, sizeof(err)), 0);
    CHECK(f == NULL);
    CHECK(got[0] == '\0');
    fresh_dir(dir, "load_empty");
    f = (ckpt_file *)&f;
    CHECK_INT_EQ(ckpt_load_newest(dir, &f, got, sizeof(got), NULL, err, sizeof(err)), 0);
    CHECK(f == NULL);
    fmt_path(p, "%s/ckpt-12.ckpt", dir); /* not checkpoint names */
    write_bytes(p, "junk", 4);
    fmt_path(p, "%s/ckpt-00000000000x.ckpt", dir);
    write_bytes(p, "junk", 4);
    fmt_path(p, "%s/ckpt-000000000001.ckpt.tmp.7", dir);
    write_bytes(p, "junk", 4);
    f = (ckpt_file *)&f;
    CHECK_INT_EQ(ckpt_load_newest(dir, &f, got, sizeof(got), NULL, err, sizeof(err)), 0);
    CHECK(f == NULL);
}

static void test_load_newest_all_damaged(void) {
    char dir[PATH_LEN], p[PATH_LEN], got[PATH_LEN], err[512] = "";
    fresh_dir(dir, "load_bad");
    save_three(dir);
    fmt_path(p, "%s/ckpt-000000000010.ckpt", dir);
    flip_byte(p, 0);
    fmt_path(p, "%s/ckpt-000000000020.ckpt", dir);
    if (truncate(p, 30) != 0) abort();
    fmt_path(p, "%s/ckpt-000000000030.ckpt", dir);
    flip_byte(p, file_size(p) - 1);
    FILE *log = tmpfile();
    ckpt_file *f = NULL;
    int rc = ckpt_load_newest(dir, &f, got, sizeof(got), log, err, sizeof(err));
    CHECK_INT_EQ(rc, TN_ECORRUPT); /* the newest one's reason */
    CHECK(f == NULL);
    CHECK(got[0] == '\0');
    CHECK_STR_CONTAINS(err, dir);
    CHECK_STR_CONTAINS(err, "holds 3 checkpoints and none is usable (newest: section tag 1: "
                            "checksum mismatch");
    CHECK_STR_CONTAINS(err, "hint: remove them or use a fresh --job-dir");
    char *text = file_text(log);
    CHECK_STR_CONTAINS(text, "ckpt-000000000030.ckpt is unusable (section tag 1: checksum");
    CHECK_STR_CONTAINS(text, "ckpt-000000000020.ckpt is unusable (file is 30 bytes");
    CHECK_STR_CONTAINS(text, "ckpt-000000000010.ckpt is unusable (not a checkpoint file)\n");
    int lines = 0;
    for (const char *c = text; *c; c++) lines += *c == '\n';
    CHECK_INT_EQ(lines, 3);
    free(text);
    fclose(log);
}

/* The newest checkpoint of another format version (a newer trainer wrote it): refused,
 * not resumed around, since the first save would then delete it (a save prunes every
 * step above its own). An older one of another version is passed over. */
static void test_load_newest_other_version(void) {
    char dir[PATH_LEN], p[PATH_LEN], got[PATH_LEN] = "x", err[1024] = "";
    fresh_dir(dir, "load_version");
    save_three(dir);
    fmt_path(p, "%s/ckpt-000000000030.ckpt", dir);
    flip_byte(p, 9); /* version 1 + 0x5a00 */
    ckpt_file *f = NULL;
    int rc = ckpt_load_newest(dir, &f, got, sizeof(got), NULL, err, sizeof(err));
    CHECK_INT_EQ(rc, TN_EINVAL); /* the trainer's exit 2: running again cannot help */
    CHECK(f == NULL);
    CHECK(got[0] == '\0');
    CHECK_STR_CONTAINS(err, "the newest checkpoint, ");
    CHECK_STR_CONTAINS(err, "ckpt-000000000030.ckpt, is of another format (format version");
    CHECK_STR_CONTAINS(err, "would delete it at its first save; hint: resume with the trainer "
                            "that wrote it, or move the file away");
    CHECK_INT_EQ(count_names(dir, ".ckpt"), 3); /* nothing deleted */
    /* moved away: the ones before load; an older file of another version is passed over */
    char q[PATH_LEN];
    fmt_path(q, "%s/moved", g_root);
    CHECK(rename(p, q) == 0);
    fmt_path(p, "%s/ckpt-000000000010.ckpt", dir);
    flip_byte(p, 9);
    CHECK_INT_EQ(ckpt_load_newest(dir, &f, got, sizeof(got), NULL, err, sizeof(err)), 0);
    CHECK_INT_EQ(step_of(f), 20);
    ckpt_file_free(f);
}

/* A check that refuses steps at or above ctx's limit, the way the trainer refuses a
 * checkpoint whose fields do not fit the run; it also sees the step in the name. */
static int refuse_from(const ckpt_file *f, int64_t step, void *ctx, char *why, size_t whylen) {
    int64_t limit = *(const int64_t *)ctx;
    if (step != step_of(f))
        return tn_error(why, whylen, TN_EINVAL, "name says step %lld, section says %lld",
                        (long long)step, (long long)step_of(f));
    if (step_of(f) >= limit)
        return tn_error(why, whylen, TN_EFORMAT, "state: step_in_epoch %lld is past the epoch",
                        (long long)step_of(f));
    return 0;
}

static void test_load_newest_checked(void) {
    char dir[PATH_LEN], p[PATH_LEN], got[PATH_LEN], err[512] = "";
    fresh_dir(dir, "load_checked");
    save_three(dir);
    int64_t limit = 30;
    ckpt_file *f = NULL;
    FILE *log = tmpfile();
    int rc = ckpt_load_newest_checked(dir, refuse_from, &limit, &f, got, sizeof(got), log, err,
                                      sizeof(err));
    CHECK_MSG(rc == 0, "ckpt_load_newest_checked: %s", err);
    CHECK_INT_EQ(step_of(f), 20);
    CHECK_STR_CONTAINS(got, "ckpt-000000000020.ckpt");
    ckpt_file_free(f);
    fmt_path(p, "%s/ckpt-000000000030.ckpt", dir);
    char want[2 * PATH_LEN];
    snprintf(want, sizeof(want),
             "warning: checkpoint %s is unusable (state: step_in_epoch 30 is past the epoch); "
             "trying the previous one\n",
             p);
    char *text = file_text(log);
    CHECK_MSG(strcmp(text, want) == 0, "log is \"%s\"", text);
    free(text);
    fclose(log);

    /* None passes: the check's code and reason, as for damaged files; nothing deleted. */
    limit = 0;
    f = NULL;
    rc = ckpt_load_newest_checked(dir, refuse_from, &limit, &f, got, sizeof(got), NULL, err,
                                  sizeof(err));
    CHECK_INT_EQ(rc, TN_EFORMAT);
    CHECK(f == NULL);
    CHECK(got[0] == '\0');
    CHECK_STR_CONTAINS(err, "holds 3 checkpoints and none is usable (newest: state: "
                            "step_in_epoch 30 is past the epoch)");
    CHECK_INT_EQ(count_names(dir, ".ckpt"), 3);

    /* Without a check it is ckpt_load_newest. */
    CHECK_INT_EQ(ckpt_load_newest_checked(dir, NULL, NULL, &f, NULL, 0, NULL, err, sizeof(err)),
                 0);
    CHECK_INT_EQ(step_of(f), 30);
    ckpt_file_free(f);
}

/* A writer beside the reader (the chief beside the evaluator) saves and prunes between
 * the reader's listing and its reads. Played by a check: at its first call (step 30) it
 * removes steps 10 and 20, as a prune would, and refuses 30 (a reader that found it
 * half-written, say); the files gone are no damage, and the folder listed again gives 30. */
struct vanish_ctx {
    const char *dir;
    int calls;
    int remove_all; /* every time, the step read too, after a newer one is saved */
};

static int vanish_check(const ckpt_file *f, int64_t step, void *arg, char *why, size_t whylen) {
    struct vanish_ctx *v = arg;
    char p[PATH_LEN];
    (void)f;
    if (v->calls++ > 0 && !v->remove_all) return 0;
    if (v->remove_all) {
        char err[512];
        int64_t next = step + 10;
        ckpt_section sec = {.tag = 1, .data = &next, .size = sizeof(next)};
        CHECK(ckpt_save(v->dir, next, &sec, 1, 5, NULL, 0, err, sizeof(err)) == 0);
    }
    for (int64_t s = 10; s <= step; s += 10) {
        if (s == step && !v->remove_all) continue;
        fmt_path(p, "%s/ckpt-%012lld.ckpt", v->dir, (long long)s);
        unlink(p);
    }
    return tn_error(why, whylen, TN_EFORMAT, "not yet whole");
}

static void test_load_newest_pruned_while_read(void) {
    char dir[PATH_LEN], got[PATH_LEN], err[512] = "";
    fresh_dir(dir, "load_pruned");
    save_three(dir);
    struct vanish_ctx v = {.dir = dir};
    ckpt_file *f = NULL;
    FILE *log = tmpfile();
    int rc = ckpt_load_newest_checked(dir, vanish_check, &v, &f, got, sizeof(got), log, err,
                                      sizeof(err));
    CHECK_MSG(rc == 0, "ckpt_load_newest_checked: %s", err);
    CHECK_INT_EQ(step_of(f), 30);
    CHECK_STR_CONTAINS(got, "ckpt-000000000030.ckpt");
    CHECK_INT_EQ(v.calls, 2);
    ckpt_file_free(f);
    char *text = file_text(log); /* the refusal of 30 is told; the files gone are not */
    CHECK_STR_CONTAINS(text, "ckpt-000000000030.ckpt is unusable (not yet whole)");
    CHECK_MSG(!strstr(text, "000000000020") && !strstr(text, "000000000010"), "log: %s", text);
    free(text);
    fclose(log);

    /* Whatever is listed is gone once read, every time: nine listings, then an error
     * that says so. */
    struct vanish_ctx all = {.dir = dir, .remove_all = 1};
    f = NULL;
    rc = ckpt_load_newest_checked(dir, vanish_check, &all, &f, got, sizeof(got), NULL, err,
                                  sizeof(err));
    CHECK_INT_EQ(rc, TN_EIO);
    CHECK(f == NULL);
    CHECK_INT_EQ(all.calls, 9);
    CHECK_STR_CONTAINS(err, "its checkpoints were removed as they were read, 9 times; hint: is "
                            "another run pruning this --job-dir?");
}

/* Entries named like checkpoints (or like a crash's temporary files) that are not
 * regular files are not checkpoints: a load tells them once and passes over them, and a
 * save neither reads nor deletes them. A folder called ckpt-<step>.ckpt above the newest
 * step made every save fail ("unlink ...: Is a directory") after the run had trained. A
 * symbolic link to a checkpoint file is one; a dangling link is passed over. */
static void test_folder_named_like_a_checkpoint(void) {
    char dir[PATH_LEN], p[PATH_LEN], q[PATH_LEN], got[PATH_LEN], err[512] = "";
    fresh_dir(dir, "not_regular");
    save_three(dir);
    fmt_path(p, "%s/ckpt-000000000040.ckpt", dir);
    CHECK(mkdir(p, 0755) == 0);
    fmt_path(q, "%s/inside", p);
    write_bytes(q, "keep", 4);
    fmt_path(p, "%s/ckpt-000000000050.ckpt", dir);
    CHECK(mkfifo(p, 0644) == 0); /* would block a reader that opened it */
    fmt_path(p, "%s/ckpt-000000000001.ckpt.tmp.99", dir);
    CHECK(mkdir(p, 0755) == 0);
    fmt_path(p, "%s/ckpt-000000000060.ckpt", dir);
    CHECK(symlink("no-such-file", p) == 0);

    FILE *log = tmpfile();
    ckpt_file *f = NULL;
    int rc = ckpt_load_newest(dir, &f, got, sizeof(got), log, err, sizeof(err));
    CHECK_MSG(rc == 0, "ckpt_load_newest: %s", err);
    CHECK_INT_EQ(step_of(f), 30);
    CHECK_STR_CONTAINS(got, "ckpt-000000000030.ckpt");
    ckpt_file_free(f);
    char want[3 * PATH_LEN];
    snprintf(want, sizeof(want),
             "warning: %s/ckpt-000000000040.ckpt is a folder, not a checkpoint file; left "
             "alone, but no checkpoint can be saved by its name; hint: remove or rename "
             "it\nwarning: %s/ckpt-000000000050.ckpt is a FIFO, not a checkpoint file; "
             "left alone; hint: remove or rename it\n",
             dir, dir);
    char *text = file_text(log);
    /* readdir's order is the file system's: compare the lines as a set */
    CHECK_MSG(strlen(text) == strlen(want), "log is \"%s\"", text);
    CHECK_STR_CONTAINS(text, "ckpt-000000000040.ckpt is a folder, not a checkpoint file; "
                             "left alone, but no checkpoint can be saved by its name; hint: "
                             "remove or rename it\n");
    CHECK_STR_CONTAINS(text, "ckpt-000000000050.ckpt is a FIFO, not a checkpoint file; "
                             "left alone; hint: remove or rename it\n");
    free(text);
    fclose(log);

    /* A save prunes around them: 10 and 20 go (keep = 2: 35 and 30), they all stay. */
    int64_t step = 35;
    ckpt_section s = {.tag = 1, .data = &step, .size = sizeof(step)};
    rc = ckpt_save(dir, step, &s, 1, 2, NULL, 0, err, sizeof(err));
    CHECK_MSG(rc == 0, "ckpt_save: %s", err);
    const char *left[] = {"ckpt-000000000030.ckpt", "ckpt-000000000035.ckpt",
                          "ckpt-000000000040.ckpt/inside", "ckpt-000000000050.ckpt",
                          "ckpt-000000000001.ckpt.tmp.99"};
    for (size_t i = 0; i < sizeof(left) / sizeof(left[0]); i++) {
        fmt_path(p, "%s/%s", dir, left[i]);
        CHECK_MSG(file_exists(p), "%s was removed", left[i]);
    }
    struct stat st;
    fmt_path(p, "%s/ckpt-000000000060.ckpt", dir);
    CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK_INT_EQ(count_names(dir, "ckpt-0000000000"), 6);

    /* Only such entries: a fresh start, not "none is usable". */
    fresh_dir(dir, "only_folders");
    fmt_path(p, "%s/ckpt-000000000010.ckpt", dir);
    CHECK(mkdir(p, 0755) == 0);
    f = (ckpt_file *)&f;
    CHECK_INT_EQ(ckpt_load_newest(dir, &f, got, sizeof(got), NULL, err, sizeof(err)), 0);
    CHECK(f == NULL);

    /* A symbolic link to a checkpoint file is a checkpoint. */
    fresh_dir(dir, "linked");
    save_three(dir);
    fmt_path(p, "%s/ckpt-000000000030.ckpt", dir);
    fmt_path(q, "%s/ckpt-000000000040.ckpt", dir);
    CHECK(symlink(p, q) == 0);
    CHECK_INT_EQ(ckpt_load_newest(dir, &f, got, sizeof(got), NULL, err, sizeof(err)), 0);
    CHECK_STR_CONTAINS(got, "ckpt-000000000040.ckpt");
    CHECK_INT_EQ(step_of(f), 30);
    ckpt_file_free(f);
}

/* The rename fails (a folder by the checkpoint's name: EISDIR): an error that says
 * what is in the way and what to do, no temporary file left, the folder untouched; the
 * same from ckpt_save, which then prunes nothing. Every save of that step failed with
 * only "rename ...tmp.PID: Is a directory". */
static void test_rename_onto_folder(void) {
    static const char a[] = "abc";
    ckpt_section s = {.tag = 1, .data = a, .size = 3};
    char dir[PATH_LEN], path[PATH_LEN], inside[PATH_LEN], want[3 * PATH_LEN];
    char err[3 * PATH_LEN] = "";
    fresh_dir(dir, "rename_onto_folder");
    save_three(dir);
    fmt_path(path, "%s/ckpt-000000000040.ckpt", dir);
    CHECK(mkdir(path, 0755) == 0);
    fmt_path(inside, "%s/inside", path);
    write_bytes(inside, "keep", 4);

    CHECK_INT_EQ(ckpt_write(path, &s, 1, err, sizeof(err)), TN_EINVAL);
    snprintf(want, sizeof(want), "cannot save %s: it is a folder, not a checkpoint file "
                                 "(rename %s.tmp.", path, path);
    CHECK_STR_CONTAINS(err, want);
    snprintf(want, sizeof(want), ": %s); hint: remove or rename it", strerror(EISDIR));
    CHECK_STR_CONTAINS(err, want);
    CHECK_INT_EQ(count_names(dir, ".tmp."), 0);
    CHECK_INT_EQ(file_size(inside), 4);

    /* keep = 1 would prune 10, 20 and 30 after a write that succeeded */
    err[0] = '\0';
    CHECK_INT_EQ(ckpt_save(dir, 40, &s, 1, 1, NULL, 0, err, sizeof(err)), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "it is a folder, not a checkpoint file");
    CHECK_STR_CONTAINS(err, "hint: remove or rename it");
    CHECK_INT_EQ(count_names(dir, ".tmp."), 0);
    CHECK_INT_EQ(count_names(dir, "ckpt-0000000000"), 4);
    CHECK_INT_EQ(file_size(inside), 4);
}

int main(void) {
    if (scratch_dir(g_root, "test_checkpoint") != 0) return 1;
    RUN(test_round_trip);
    RUN(test_no_sections);
    RUN(test_find_missing_tag);
    RUN(test_bad_arguments);
    RUN(test_corruption);
    RUN(test_truncation);
    RUN(test_hostile_header);
    RUN(test_write_unwritable_place);
    RUN(test_failed_write_keeps_old_file);
    RUN(test_save_prunes_and_cleans);
    RUN(test_write_removes_its_leftovers);
    RUN(test_save_arguments);
    RUN(test_save_prunes_abandoned_steps);
    RUN(test_load_newest);
    RUN(test_load_newest_nothing);
    RUN(test_load_newest_all_damaged);
    RUN(test_load_newest_other_version);
    RUN(test_load_newest_checked);
    RUN(test_load_newest_pruned_while_read);
    RUN(test_folder_named_like_a_checkpoint);
    RUN(test_rename_onto_folder);
    int rc = check_summary();
    if (rc == 0) rm_rf(g_root); /* keep the files of a failed run to look at */
    return rc;
}
