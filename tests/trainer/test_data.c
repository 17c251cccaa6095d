/*
 * test_data.c — tests for trainer/data.c: IDX and CSV loading.
 *
 * Every input is generated here under $TN_TEST_TMP (or /tmp) with names unique to
 * this process: small IDX files written plain and through zlib's gzopen("wb"), and
 * CSV texts. The error cases are tables of broken files, each with the code and the
 * words the message must hold. When Debian's dataset-fashion-mnist package is
 * installed its test split is loaded too; without it that test says it skipped.
 */
#include "trainer/data.h"

#include "common/status.h"
#include "tests/check.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---------------------------------------------------------------------------------
 * Temporary files
 * --------------------------------------------------------------------------------- */

#define MAX_TEMPS 256

static char *temps_[MAX_TEMPS]; /* paths to remove at the end, files before folders */
static int ntemps_;

/* Returns a new unique path under the test folder (yours to keep until cleanup()). */
static const char *tmp_path(const char *name) {
    static int counter;
    const char *dir = getenv("TN_TEST_TMP");
    if (!dir || !*dir) dir = "/tmp";
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s/tn_test_data_%ld_%d_%s", dir, (long)getpid(),
             counter++, name);
    if (ntemps_ == MAX_TEMPS) {
        fprintf(stderr, "too many temporary files\n");
        exit(2);
    }
    temps_[ntemps_] = tn_xstrdup(buf);
    return temps_[ntemps_++];
}

/* Removes every temporary path, newest first (files inside a folder go before it). */
static void cleanup(void) {
    for (int i = ntemps_ - 1; i >= 0; i--) {
        if (remove(temps_[i]) != 0 && errno != ENOENT)
            fprintf(stderr, "note: cannot remove %s: %s\n", temps_[i], strerror(errno));
        free(temps_[i]);
    }
    ntemps_ = 0;
}

/* Writes len bytes to path, through gzip when gz is set. */
static void write_bytes(const char *path, const void *data, size_t len, int gz) {
    if (gz) {
        gzFile f = gzopen(path, "wb");
        if (!f || (len && gzwrite(f, data, (unsigned)len) != (int)len) || gzclose(f) != Z_OK) {
            fprintf(stderr, "cannot write %s\n", path);
            exit(2);
        }
        return;
    }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

static void write_text(const char *path, const char *text) {
    write_bytes(path, text, strlen(text), 0);
}

/* Reads a whole file into a new buffer (yours to free). */
static unsigned char *read_bytes(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = tn_xmalloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) buf = tn_xrealloc(buf, cap *= 2);
    }
    fclose(f);
    *len = n;
    return buf;
}

/* ---------------------------------------------------------------------------------
 * IDX builders
 * --------------------------------------------------------------------------------- */

typedef struct blob {
    unsigned char b[4096];
    size_t n;
} blob;

static void put32(blob *b, uint32_t v) {
    b->b[b->n++] = (unsigned char)(v >> 24);
    b->b[b->n++] = (unsigned char)(v >> 16);
    b->b[b->n++] = (unsigned char)(v >> 8);
    b->b[b->n++] = (unsigned char)v;
}

/* The pixel of example i at flat position k in the standard test images. */
static unsigned char pixel(int i, int k) { return (unsigned char)((i * 97 + k * 13) % 256); }

/* An image file: magic, header dims (n, h, w), then `count` images' worth of pixels
 * (count may differ from n to build broken files). */
static blob idx_images(uint32_t magic, uint32_t n, uint32_t h, uint32_t w, int count) {
    blob b = {.n = 0};
    put32(&b, magic);
    put32(&b, n);
    put32(&b, h);
    put32(&b, w);
    for (int i = 0; i < count; i++)
        for (uint32_t k = 0; k < h * w; k++) b.b[b.n++] = pixel(i, (int)k);
    return b;
}

static blob idx_labels(uint32_t magic, uint32_t n, const unsigned char *labels, int count) {
    blob b = {.n = 0};
    put32(&b, magic);
    put32(&b, n);
    for (int i = 0; i < count; i++) b.b[b.n++] = labels[i];
    return b;
}

static const unsigned char LABELS[] = {0, 1, 7, 3, 1};
#define NIMG 5
#define IMG_H 2
#define IMG_W 3

/* Writes the standard good pair (NIMG images of IMG_HxIMG_W, labels LABELS). */
static void write_good_pair(const char *ipath, const char *lpath, int gz_images,
                            int gz_labels) {
    blob im = idx_images(0x803, NIMG, IMG_H, IMG_W, NIMG);
    blob lb = idx_labels(0x801, NIMG, LABELS, NIMG);
    write_bytes(ipath, im.b, im.n, gz_images);
    write_bytes(lpath, lb.b, lb.n, gz_labels);
}

/* Checks ds holds the first n of the standard good pair. */
static void check_good(const ds_dataset *ds, int n) {
    CHECK_INT_EQ(ds->n, n);
    CHECK_INT_EQ(ds->d, IMG_H * IMG_W);
    CHECK_INT_EQ(ds->channels, 1);
    CHECK_INT_EQ(ds->height, IMG_H);
    CHECK_INT_EQ(ds->width, IMG_W);
    int maxlab = 0;
    for (int i = 0; i < n; i++) maxlab = LABELS[i] > maxlab ? LABELS[i] : maxlab;
    CHECK_INT_EQ(ds->classes, maxlab + 1 < 2 ? 2 : maxlab + 1);
    if (!ds->x || !ds->y || ds->n != n) return;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (ds->y[i] != LABELS[i]) bad++;
        for (int k = 0; k < IMG_H * IMG_W; k++)
            if (ds->x[i * IMG_H * IMG_W + k] != pixel(i, k) / 255.0f) bad++;
    }
    CHECK_INT_EQ(bad, 0);
}

static void check_cleared(const ds_dataset *ds) {
    CHECK(ds->x == NULL);
    CHECK(ds->y == NULL);
    CHECK_INT_EQ(ds->n, 0);
    CHECK_INT_EQ(ds->d, 0);
    CHECK_INT_EQ(ds->classes, 0);
}

/* ---------------------------------------------------------------------------------
 * IDX tests
 * --------------------------------------------------------------------------------- */

static void test_idx_load_plain_and_gz(void) {
    static const struct {
        int gz_images, gz_labels;
    } cases[] = {{0, 0}, {1, 1}, {1, 0}, {0, 1}};
    ds_dataset ref = {0};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *ip = tmp_path("images"), *lp = tmp_path("labels");
        write_good_pair(ip, lp, cases[c].gz_images, cases[c].gz_labels);
        ds_dataset ds;
        char err[512] = "";
        int rc = ds_load_idx(ip, lp, 0, &ds, err, sizeof(err));
        CHECK_MSG(rc == 0, "case %zu: rc %d: %s", c, rc, err);
        check_good(&ds, NIMG);
        if (c == 0) {
            ref = ds;
            continue;
        }
        /* gzip and plain give the same bytes */
        CHECK(ds.n == ref.n && ds.x && ref.x &&
              memcmp(ds.x, ref.x, (size_t)ref.n * ref.d * sizeof(float)) == 0);
        CHECK(ds.y && ref.y && memcmp(ds.y, ref.y, (size_t)ref.n * sizeof(int32_t)) == 0);
        ds_clear(&ds);
    }
    ds_clear(&ref);
    cleanup();
}

static void test_idx_limit(void) {
    static const struct {
        int64_t limit;
        int want_n;
    } cases[] = {{1, 1}, {2, 2}, {3, 3}, {NIMG, NIMG}, {NIMG + 10, NIMG}, {0, NIMG}, {-1, NIMG}};
    const char *ip = tmp_path("images.gz"), *lp = tmp_path("labels");
    write_good_pair(ip, lp, 1, 0);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        ds_dataset ds;
        char err[512] = "";
        int rc = ds_load_idx(ip, lp, cases[c].limit, &ds, err, sizeof(err));
        CHECK_MSG(rc == 0, "limit %lld: rc %d: %s", (long long)cases[c].limit, rc, err);
        check_good(&ds, cases[c].want_n); /* classes: 2 for {0}, {0,1}; 8 from 3 on */
        ds_clear(&ds);
    }
    cleanup();
}

/* With a limit, only the first examples are read: data missing after them is fine. */
static void test_idx_limit_reads_only_what_it_needs(void) {
    const char *ip = tmp_path("images"), *lp = tmp_path("labels");
    blob im = idx_images(0x803, 1000, IMG_H, IMG_W, 2); /* says 1000, holds 2 */
    blob lb = idx_labels(0x801, 1000, LABELS, 2);
    write_bytes(ip, im.b, im.n, 1);
    write_bytes(lp, lb.b, lb.n, 0);
    ds_dataset ds;
    char err[512] = "";
    int rc = ds_load_idx(ip, lp, 2, &ds, err, sizeof(err));
    CHECK_MSG(rc == 0, "rc %d: %s", rc, err);
    check_good(&ds, 2);
    ds_clear(&ds);
    rc = ds_load_idx(ip, lp, 3, &ds, err, sizeof(err));
    CHECK_INT_EQ(rc, TN_ETRUNC);
    CHECK_STR_CONTAINS(err, "for the first 3");
    check_cleared(&ds);
    cleanup();
}

/* A FIFO where a data file belongs: an error at once (the open used to wait for a
 * writer for ever). */
static void test_idx_fifo_refused(void) {
    const char *ip = tmp_path("images"), *lp = tmp_path("labels");
    CHECK(mkfifo(ip, 0600) == 0);
    blob lb = idx_labels(0x801, NIMG, LABELS, NIMG);
    write_bytes(lp, lb.b, lb.n, 0);
    ds_dataset ds;
    char err[1024] = "";
    CHECK_INT_EQ(ds_load_idx(ip, lp, 0, &ds, err, sizeof(err)), TN_EIO);
    CHECK_STR_CONTAINS(err, "is a FIFO, not a regular file");
    check_cleared(&ds);
    cleanup();
}

/* A folder that cannot be searched is not "not found": its error says why. */
static void test_idx_dir_unsearchable(void) {
    if (geteuid() == 0) { /* root searches anything */
        printf("skip test_idx_dir_unsearchable: running as root\n");
        return;
    }
    const char *dir = tmp_path("locked");
    CHECK(mkdir(dir, 0700) == 0);
    chmod(dir, 0600);
    ds_dataset ds;
    char err[1024] = "";
    CHECK_INT_EQ(ds_load_idx_dir(dir, 1, 0, &ds, err, sizeof(err)), TN_EIO);
    CHECK_STR_CONTAINS(err, "cannot look for train-images-idx3-ubyte in");
    CHECK_STR_CONTAINS(err, "Permission denied");
    chmod(dir, 0700);
    cleanup();
}

static void test_idx_classes_at_least_two(void) {
    static const unsigned char zeros[3] = {0, 0, 0};
    static const unsigned char high[3] = {0, 255, 4};
    static const struct {
        const unsigned char *labels;
        int classes;
    } cases[] = {{zeros, 2}, {high, 256}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *ip = tmp_path("images"), *lp = tmp_path("labels");
        blob im = idx_images(0x803, 3, 1, 1, 3);
        blob lb = idx_labels(0x801, 3, cases[c].labels, 3);
        write_bytes(ip, im.b, im.n, 0);
        write_bytes(lp, lb.b, lb.n, 0);
        ds_dataset ds;
        int rc = ds_load_idx(ip, lp, 0, &ds, NULL, 0);
        CHECK_INT_EQ(rc, 0);
        CHECK_INT_EQ(ds.classes, cases[c].classes);
        CHECK_INT_EQ(ds.d, 1);
        if (ds.y) CHECK_INT_EQ(ds.y[1], cases[c].labels[1]);
        ds_clear(&ds);
    }
    cleanup();
}

/* A labels file with more labels than its header says is refused, naming it; with a
 * limit below the count the rest of the files is not read (test_idx_limit_reads_only_
 * what_it_needs), so it loads. */
static void test_idx_trailing_labels(void) {
    const char *ip = tmp_path("images"), *lp = tmp_path("labels");
    blob im = idx_images(0x803, 3, IMG_H, IMG_W, 3), lb = idx_labels(0x801, 3, LABELS, NIMG);
    write_bytes(ip, im.b, im.n, 0);
    write_bytes(lp, lb.b, lb.n, 1);
    ds_dataset ds;
    char err[1024] = "";
    CHECK_INT_EQ(ds_load_idx(ip, lp, 0, &ds, err, sizeof err), TN_EFORMAT);
    CHECK_STR_CONTAINS(err, lp);
    CHECK_STR_CONTAINS(err, "holds more than its header says (3 labels)");
    check_cleared(&ds);
    CHECK_INT_EQ(ds_load_idx(ip, lp, 2, &ds, err, sizeof err), 0);
    CHECK_INT_EQ(ds.n, 2);
    ds_clear(&ds);
    remove(ip);
    remove(lp);
}

static void test_idx_errors(void) {
    enum { GOOD, MISSING, BYTES, DIRECTORY };
    static const unsigned char few[1] = {0};
    const struct {
        const char *name;
        int ikind, lkind; /* GOOD: the standard file; BYTES: the blob below */
        blob im, lb;
        int gz;
        int code;
        const char *want1, *want2; /* words the message must hold */
    } cases[] = {
        {"missing images", MISSING, GOOD, {.n = 0}, {.n = 0}, 0, TN_ENOENT, "not found", NULL},
        {"missing labels", GOOD, MISSING, {.n = 0}, {.n = 0}, 0, TN_ENOENT, "not found", NULL},
        {"bad magic", BYTES, GOOD, idx_images(0x12345678, NIMG, 2, 3, NIMG), {.n = 0}, 0,
         TN_EFORMAT, "bad magic 0x12345678, expected 0x00000803", "IDX image file"},
        {"labels given as images", BYTES, GOOD, idx_labels(0x801, NIMG, LABELS, NIMG),
         {.n = 0}, 0, TN_EFORMAT, "bad magic 0x00000801", "has 1 dimensions"},
        {"images with 2 dims", BYTES, GOOD, idx_images(0x802, NIMG, 2, 3, NIMG), {.n = 0},
         1, TN_EFORMAT, "bad magic 0x00000802, expected 0x00000803", "has 2 dimensions"},
        {"images of floats", BYTES, GOOD, idx_images(0xD03, NIMG, 2, 3, NIMG), {.n = 0}, 0,
         TN_EFORMAT, "element type 0x0d", NULL},
        {"labels with 3 dims", GOOD, BYTES, {.n = 0}, idx_images(0x803, NIMG, 2, 3, NIMG), 0,
         TN_EFORMAT, "expected 0x00000801", "has 3 dimensions"},
        {"empty images file", BYTES, GOOD, {.n = 0}, {.n = 0}, 0, TN_ETRUNC, "holds 0 bytes",
         "needs 16"},
        {"truncated images header", BYTES, GOOD, {.b = {0, 0, 8, 3, 0, 0, 0, 5, 0, 0}, .n = 10},
         {.n = 0}, 1, TN_ETRUNC, "truncated: the file holds 10 bytes", "needs 16"},
        {"truncated labels header", GOOD, BYTES, {.n = 0}, {.b = {0, 0, 8, 1, 0, 0}, .n = 6},
         0, TN_ETRUNC, "holds 6 bytes", "needs 8"},
        {"truncated pixels", BYTES, GOOD, idx_images(0x803, NIMG, 2, 3, 2), {.n = 0}, 0,
         TN_ETRUNC, "header says 5 images of 2x3", "only 12 bytes of pixels"},
        {"truncated pixels gz", BYTES, GOOD, idx_images(0x803, NIMG, 2, 3, 4), {.n = 0}, 1,
         TN_ETRUNC, "header says 5 images of 2x3", "only 24 bytes of pixels"},
        {"header claims 4 billion", BYTES, BYTES, idx_images(0x803, 0xffffffffu, 28, 28, 1),
         idx_labels(0x801, 0xffffffffu, few, 1), 0, TN_ETRUNC, "header says 4294967295",
         "only 784 bytes"},
        /* gzip (a bomb of a few MB may inflate to what it claims): refused before reading
         * when the floats would not fit in memory (it was read until memory ran out) */
        {"header claims 4 billion gz", BYTES, BYTES, idx_images(0x803, 0xffffffffu, 28, 28, 1),
         idx_labels(0x801, 0xffffffffu, few, 1), 1, TN_EFORMAT, "header says 4294967295 images "
         "of 28x28, 12544.0 GiB as the floats training keeps, more than this machine's memory",
         "--max_train_examples"},
        {"truncated labels", GOOD, BYTES, {.n = 0}, idx_labels(0x801, NIMG, LABELS, 3), 0,
         TN_ETRUNC, "header says 5 labels", "only 3"},
        {"count mismatch", GOOD, BYTES, {.n = 0}, idx_labels(0x801, NIMG - 1, LABELS, NIMG - 1),
         0, TN_EMISMATCH, "has 4 labels", "has 5 images"},
        {"zero images", BYTES, GOOD, idx_images(0x803, 0, 2, 3, 0), {.n = 0}, 0, TN_EFORMAT,
         "0 images", NULL},
        {"zero height", BYTES, GOOD, idx_images(0x803, NIMG, 0, 3, 0), {.n = 0}, 0, TN_EFORMAT,
         "images are 0x3", NULL},
        {"absurd image size", BYTES, GOOD, idx_images(0x803, 1, 65536, 65536, 0), {.n = 0}, 0,
         TN_EFORMAT, "images are 65536x65536", NULL},
        {"images path is a folder", DIRECTORY, GOOD, {.n = 0}, {.n = 0}, 0, TN_EIO,
         "is a folder, not a regular file", NULL},
        /* more than the header says: a wrong count, or data appended */
        {"more images than the header", BYTES, BYTES, idx_images(0x803, 3, 2, 3, NIMG),
         idx_labels(0x801, 3, LABELS, 3), 0, TN_EFORMAT, "holds more than its header says",
         "3 images of 2x3"},
        {"more images than the header gz", BYTES, BYTES, idx_images(0x803, 3, 2, 3, 4),
         idx_labels(0x801, 3, LABELS, 3), 1, TN_EFORMAT, "holds more than its header says",
         "3 images of 2x3"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *paths[2] = {tmp_path("images"), tmp_path("labels")};
        int kinds[2] = {cases[c].ikind, cases[c].lkind};
        const blob *blobs[2] = {&cases[c].im, &cases[c].lb};
        write_good_pair(paths[0], paths[1], 0, 0);
        for (int f = 0; f < 2; f++) {
            if (kinds[f] == MISSING) remove(paths[f]);
            if (kinds[f] == BYTES) write_bytes(paths[f], blobs[f]->b, blobs[f]->n, cases[c].gz);
            if (kinds[f] == DIRECTORY) {
                remove(paths[f]);
                CHECK(mkdir(paths[f], 0700) == 0);
            }
        }
        ds_dataset ds = {.n = 99, .d = 7}; /* junk the loader must clear */
        char err[1024] = "";
        int rc = ds_load_idx(paths[0], paths[1], 0, &ds, err, sizeof(err));
        CHECK_MSG(rc == cases[c].code, "%s: rc %d (%s), expected %d: %s", cases[c].name, rc,
                  tn_strerror(rc), cases[c].code, err);
        /* the message names the file at fault */
        int bad = cases[c].ikind != GOOD ? 0 : 1;
        if (cases[c].code == TN_EMISMATCH) bad = 1;
        CHECK_STR_CONTAINS(err, paths[bad]);
        CHECK_STR_CONTAINS(err, cases[c].want1);
        if (cases[c].want2) CHECK_STR_CONTAINS(err, cases[c].want2);
        check_cleared(&ds);
        /* and with no error buffer, the same code and no crash */
        rc = ds_load_idx(paths[0], paths[1], 0, &ds, NULL, 0);
        CHECK_INT_EQ(rc, cases[c].code);
        check_cleared(&ds);
    }
    cleanup();
}

/* Cut and damaged gzip streams: an error, never a crash or a silent success. */
static void test_idx_bad_gzip(void) {
    const char *good = tmp_path("images.gz"), *lp = tmp_path("labels");
    blob im = idx_images(0x803, 30, 10, 10, 30);
    write_bytes(good, im.b, im.n, 1);
    blob lb = idx_labels(0x801, 30, (const unsigned char[30]){0}, 30);
    write_bytes(lp, lb.b, lb.n, 0);
    size_t len;
    unsigned char *gz = read_bytes(good, &len);
    CHECK(len > 40);

    const char *cut = tmp_path("cut.gz");
    write_bytes(cut, gz, len / 2, 0);
    ds_dataset ds;
    char err[512] = "";
    int rc = ds_load_idx(cut, lp, 0, &ds, err, sizeof(err));
    CHECK_MSG(rc == TN_ETRUNC || rc == TN_ECORRUPT, "cut: rc %d: %s", rc, err);
    CHECK_STR_CONTAINS(err, cut);
    check_cleared(&ds);

    /* The trailer cut (its CRC and length, or only its last byte): zlib's gzread ends
     * without an error there; the loader must still refuse the file. */
    const size_t cuts[] = {8, 1};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        const char *trail = tmp_path("trail.gz");
        write_bytes(trail, gz, len - cuts[k], 0);
        rc = ds_load_idx(trail, lp, 0, &ds, err, sizeof(err));
        CHECK_MSG(rc == TN_ETRUNC, "trailer cut by %zu: rc %d: %s", cuts[k], rc, err);
        CHECK_STR_CONTAINS(err, trail);
        CHECK_STR_CONTAINS(err, "gzip stream is cut short");
        check_cleared(&ds);
    }

    /* Only the trailer's CRC damaged: caught when the file is read to its end. */
    const char *crc = tmp_path("crc.gz");
    gz[len - 8] ^= 0x5a;
    write_bytes(crc, gz, len, 0);
    rc = ds_load_idx(crc, lp, 0, &ds, err, sizeof(err));
    CHECK_MSG(rc < 0, "bad CRC: rc %d", rc);
    CHECK_STR_CONTAINS(err, crc);
    check_cleared(&ds);
    gz[len - 8] ^= 0x5a;

    const char *damaged = tmp_path("damaged.gz");
    for (size_t i = 20; i < len - 10; i++) gz[i] ^= 0x5a;
    write_bytes(damaged, gz, len, 0);
    rc = ds_load_idx(damaged, lp, 0, &ds, err, sizeof(err));
    CHECK_MSG(rc < 0, "damaged: rc %d", rc);
    CHECK_STR_CONTAINS(err, damaged);
    check_cleared(&ds);
    free(gz);
    cleanup();
}

static void test_idx_dir(void) {
    const char *dir = tmp_path("fmnist");
    CHECK(mkdir(dir, 0700) == 0);
    char p[4][1024];
    snprintf(p[0], sizeof(p[0]), "%s/train-images-idx3-ubyte", dir);
    snprintf(p[1], sizeof(p[1]), "%s/train-labels-idx1-ubyte", dir);
    snprintf(p[2], sizeof(p[2]), "%s/t10k-images-idx3-ubyte.gz", dir);
    snprintf(p[3], sizeof(p[3]), "%s/t10k-labels-idx1-ubyte.gz", dir);
    for (int i = 0; i < 4; i++) temps_[ntemps_++] = tn_xstrdup(p[i]);
    write_good_pair(p[0], p[1], 0, 0);                   /* train: plain names */
    blob im = idx_images(0x803, 2, IMG_H, IMG_W, 2);     /* test: .gz names */
    blob lb = idx_labels(0x801, 2, LABELS, 2);
    write_bytes(p[2], im.b, im.n, 1);
    write_bytes(p[3], lb.b, lb.n, 1);
    char slashed[1100];
    snprintf(slashed, sizeof(slashed), "%s/", dir);

    static const struct {
        int train, slash, want_n;
        int64_t limit;
    } cases[] = {{1, 0, NIMG, 0}, {0, 0, 2, 0}, {1, 1, 3, 3}, {0, 1, 1, 1}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        ds_dataset ds;
        char err[1024] = "";
        int rc = ds_load_idx_dir(cases[c].slash ? slashed : dir, cases[c].train,
                                 cases[c].limit, &ds, err, sizeof(err));
        CHECK_MSG(rc == 0, "case %zu: rc %d: %s", c, rc, err);
        check_good(&ds, cases[c].want_n);
        ds_clear(&ds);
    }

    /* a missing folder, and a folder missing one file: TN_ENOENT with the hint */
    remove(p[1]);
    const char *missing = tmp_path("no-such-folder");
    const struct {
        const char *dir;
        int train;
        const char *names;
    } bad[] = {{missing, 1, missing}, {dir, 1, "train-labels-idx1-ubyte"}};
    for (size_t c = 0; c < sizeof(bad) / sizeof(bad[0]); c++) {
        ds_dataset ds = {.n = 5};
        char err[1024] = "";
        int rc = ds_load_idx_dir(bad[c].dir, bad[c].train, 0, &ds, err, sizeof(err));
        CHECK_INT_EQ(rc, TN_ENOENT);
        CHECK_STR_CONTAINS(err, bad[c].names);
        CHECK_STR_CONTAINS(err, "not found");
        CHECK_STR_CONTAINS(err, "hint:");
        CHECK_STR_CONTAINS(err, "dataset-fashion-mnist");
        CHECK_STR_CONTAINS(err, "--data_dir");
        check_cleared(&ds);
    }
    cleanup();
}

/* Checks that ds holds n grey 28x28 images (784 features) of the classes. */
static void check_28x28(const ds_dataset *ds, int64_t n, int classes) {
    CHECK_INT_EQ(ds->n, n);
    CHECK_INT_EQ(ds->d, 784);
    CHECK_INT_EQ(ds->channels, 1);
    CHECK_INT_EQ(ds->height, 28);
    CHECK_INT_EQ(ds->width, 28);
    CHECK_INT_EQ(ds->classes, classes);
}

static void test_fashion_mnist(void) {
    struct stat st;
    if (stat(DS_DEFAULT_DIR, &st) != 0) {
        printf("skip: %s not installed (Debian package dataset-fashion-mnist)\n",
               DS_DEFAULT_DIR);
        return;
    }
    ds_dataset ds;
    char err[1024] = "";
    int rc = ds_load_idx_dir(DS_DEFAULT_DIR, 0, 100, &ds, err, sizeof(err));
    CHECK_MSG(rc == 0, "rc %d: %s", rc, err);
    check_28x28(&ds, 100, 10);
    if (rc != 0 || ds.n != 100) return;
    int out_of_range = 0;
    float hi = 0;
    for (int64_t i = 0; i < ds.n * ds.d; i++) {
        if (!(ds.x[i] >= 0.0f && ds.x[i] <= 1.0f)) out_of_range++;
        if (ds.x[i] > hi) hi = ds.x[i];
    }
    CHECK_INT_EQ(out_of_range, 0);
    CHECK_NEAR(hi, 1.0, 1e-6, 0); /* some pixel is 255 */
    /* the first test labels and the first image's pixel sum (33456 / 255) */
    static const int first[10] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
    for (int i = 0; i < 10; i++) CHECK_INT_EQ(ds.y[i], first[i]);
    double sum = 0;
    for (int k = 0; k < 784; k++) sum += ds.x[k];
    CHECK_NEAR(sum, 33456.0 / 255.0, 1e-3, 0);
    ds_clear(&ds);
}

/* ---------------------------------------------------------------------------------
 * CSV tests
 * --------------------------------------------------------------------------------- */

static void test_csv_ok(void) {
    static const struct {
        const char *name, *text;
        int label_column;
        float scale;
        int64_t limit;
        int n, d, side, classes; /* side: height = width (channels 1), or 0 */
        int y[4];
        float x[8];
    } cases[] = {
        {"label first", "1,0.5,2\n0,3,-4\n", 0, 1, 0, 2, 2, 0, 2, {1, 0}, {0.5f, 2, 3, -4}},
        {"header", "label,a,b\n3,1,2\n", 0, 1, 0, 1, 2, 0, 4, {3}, {1, 2}},
        {"label last", "1,2,5\n3,4,0\n", 2, 1, 0, 2, 2, 0, 6, {5, 0}, {1, 2, 3, 4}},
        {"label -1", "1,2,5\n3,4,0\n", -1, 1, 0, 2, 2, 0, 6, {5, 0}, {1, 2, 3, 4}},
        {"label -2", "1,7,2\n", -2, 1, 0, 1, 2, 0, 8, {7}, {1, 2}},
        {"scale", "0,255,51\n", 0, 1.0f / 255, 0, 1, 2, 0, 2, {0}, {1.0f, 0.2f}},
        {"CRLF", "y,a,b\r\n1,2,3\r\n0,4,5\r\n", 0, 1, 0, 2, 2, 0, 2, {1, 0}, {2, 3, 4, 5}},
        {"empty lines", "\n1,2\n\n  \r\n0,3\n\n", 0, 1, 0, 2, 1, 1, 2, {1, 0}, {2, 3}},
        {"no final newline", "2,1\n1,9", 0, 1, 0, 2, 1, 1, 3, {2, 1}, {1, 9}},
        {"blanks and exponents", " 1 , 2.5e1 ,\t-3E-1\n", 0, 1, 0, 1, 2, 0, 2, {1},
         {25, -0.3f}},
        {"square 2x2", "1,1,2,3,4\n0,5,6,7,8\n", 0, 1, 0, 2, 4, 2, 2, {1, 0},
         {1, 2, 3, 4, 5, 6, 7, 8}},
        {"not square (3)", "1,1,2,3\n", 0, 1, 0, 1, 3, 0, 2, {1}, {1, 2, 3}},
        {"limit", "1,1\n2,2\n3,3\n", 0, 1, 2, 2, 1, 1, 3, {1, 2}, {1, 2}},
        {"limit stops before a bad line", "1,1\nbad,line\n", 0, 1, 1, 1, 1, 1, 2, {1}, {1}},
        {"large label", "65535,1\n", 0, 1, 0, 1, 1, 1, 65536, {65535}, {1}},
        /* a spreadsheet's UTF-8 byte order mark: the first line is still an example */
        {"byte order mark", "\xef\xbb\xbf" "1,2\n0,3\n", 0, 1, 0, 2, 1, 1, 2, {1, 0}, {2, 3}},
        {"byte order mark, header", "\xef\xbb\xbf" "y,a\n1,2\n", 0, 1, 0, 1, 1, 1, 2, {1}, {2}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *path = tmp_path("ok.csv");
        write_text(path, cases[c].text);
        ds_dataset ds;
        char err[512] = "";
        int rc = ds_load_csv(path, cases[c].label_column, cases[c].scale, cases[c].limit, &ds,
                             err, sizeof(err));
        CHECK_MSG(rc == 0, "%s: rc %d: %s", cases[c].name, rc, err);
        CHECK_MSG(ds.n == cases[c].n && ds.d == cases[c].d && ds.classes == cases[c].classes,
                  "%s: n %lld d %d classes %d", cases[c].name, (long long)ds.n, ds.d,
                  ds.classes);
        int side = cases[c].side;
        CHECK_MSG(ds.channels == (side ? 1 : 0) && ds.height == side && ds.width == side,
                  "%s: shape %dx%dx%d", cases[c].name, ds.channels, ds.height, ds.width);
        if (rc == 0 && ds.n == cases[c].n && ds.d == cases[c].d) {
            for (int i = 0; i < cases[c].n; i++)
                CHECK_MSG(ds.y[i] == cases[c].y[i], "%s: y[%d] = %d", cases[c].name, i,
                          ds.y[i]);
            for (int k = 0; k < cases[c].n * cases[c].d; k++)
                CHECK_MSG(fabsf(ds.x[k] - cases[c].x[k]) <= 1e-6f * (1 + fabsf(cases[c].x[k])),
                          "%s: x[%d] = %g, expected %g", cases[c].name, k, (double)ds.x[k],
                          (double)cases[c].x[k]);
        }
        ds_clear(&ds);
    }
    cleanup();
}

/* An MNIST-shaped CSV: 785 columns, so lines far longer than any small buffer. */
static void test_csv_long_lines(void) {
    const char *path = tmp_path("mnist.csv");
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fprintf(f, "label");
    for (int k = 0; k < 784; k++) fprintf(f, ",pixel%d", k);
    fprintf(f, "\r\n");
    for (int i = 0; i < 3; i++) {
        fprintf(f, "%d", i * 4);
        for (int k = 0; k < 784; k++) fprintf(f, ",%d", pixel(i, k));
        fprintf(f, "\r\n");
    }
    fclose(f);
    ds_dataset ds;
    char err[512] = "";
    int rc = ds_load_csv(path, 0, 1.0f / 255.0f, 0, &ds, err, sizeof(err));
    CHECK_MSG(rc == 0, "rc %d: %s", rc, err);
    check_28x28(&ds, 3, 9);
    if (rc == 0 && ds.n == 3) {
        int bad = 0;
        for (int i = 0; i < 3; i++) {
            if (ds.y[i] != i * 4) bad++;
            for (int k = 0; k < 784; k++)
                if (fabsf(ds.x[i * 784 + k] - pixel(i, k) * (1.0f / 255.0f)) > 1e-6f) bad++;
        }
        CHECK_INT_EQ(bad, 0);
    }
    ds_clear(&ds);
    cleanup();
}

static void test_csv_errors(void) {
    static const char nul_line[] = "1,2\n0,3\0,4\n";
    static const struct {
        const char *name, *text;
        size_t len; /* 0: strlen(text) */
        int label_column;
        int code;
        const char *want1, *want2;
    } cases[] = {
        {"not a number", "1,2\n0,abc\n", 0, 0, TN_EFORMAT, "line 2, column 2", "'abc' is not a number"},
        {"not a number after header", "y,a\n1,x\n", 0, 0, TN_EFORMAT, "line 2, column 2",
         "'x'"},
        {"empty field", "1,2,3\n1,,3\n", 0, 0, TN_EFORMAT, "line 2, column 2", "not a number"},
        {"trailing junk", "1,2\n1,3x\n", 0, 0, TN_EFORMAT, "line 2, column 2", "'3x'"},
        {"hexadecimal", "1,2\n1,0x10\n", 0, 0, TN_EFORMAT, "line 2, column 2", "'0x10'"},
        {"fewer columns", "1,2,3\n\n0,1\n", 0, 0, TN_EFORMAT, "line 3 has 2 columns",
         "expected 3"},
        {"more columns", "1,2\n0,1,5\n", 0, 0, TN_EFORMAT, "line 2 has 3 columns", "expected 2"},
        {"negative label", "-1,2\n", 0, 0, TN_EFORMAT, "line 1, column 1", "is negative"},
        {"fractional label", "0,2\n1.5,2\n", 0, 0, TN_EFORMAT, "line 2, column 1",
         "not an integer"},
        {"label too large", "70000,1\n", 0, 0, TN_EFORMAT, "line 1, column 1", "too large"},
        {"last-column label negative", "1,2,-3\n", 0, -1, TN_EFORMAT, "line 1, column 3",
         "is negative"},
        {"infinite feature", "1,inf\n", 0, 0, TN_EFORMAT, "line 1, column 2",
         "not a finite number"},
        {"NaN feature", "h,x\n1,2\n1,nan\n", 0, 0, TN_EFORMAT, "line 3, column 2",
         "not a finite number"},
        {"feature overflows a float", "1,1e39\n", 0, 0, TN_EFORMAT, "line 1, column 2",
         "does not fit in a float"},
        {"empty file", "", 0, 0, TN_EFORMAT, "holds no examples", "empty"},
        {"only empty lines", "\n\r\n\n", 0, 0, TN_EFORMAT, "holds no examples", "empty lines"},
        {"header only", "label,a,b\n", 0, 0, TN_EFORMAT, "holds no examples", "header"},
        {"one column", "1\n2\n", 0, 0, TN_EFORMAT, "line 1 has 1 column", NULL},
        {"label column too large", "1,2,3\n", 0, 3, TN_EINVAL, "label column 3", "3 columns"},
        {"label column too negative", "1,2,3\n", 0, -4, TN_EINVAL, "label column -4",
         "3 columns"},
        {"NUL byte", nul_line, sizeof(nul_line) - 1, 0, TN_EFORMAT, "line 2", "NUL"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const char *path = tmp_path("bad.csv");
        size_t len = cases[c].len ? cases[c].len : strlen(cases[c].text);
        write_bytes(path, cases[c].text, len, 0);
        ds_dataset ds = {.n = 3};
        char err[512] = "";
        int rc = ds_load_csv(path, cases[c].label_column, 1.0f, 0, &ds, err, sizeof(err));
        CHECK_MSG(rc == cases[c].code, "%s: rc %d, expected %d: %s", cases[c].name, rc,
                  cases[c].code, err);
        CHECK_STR_CONTAINS(err, path);
        CHECK_STR_CONTAINS(err, cases[c].want1);
        if (cases[c].want2) CHECK_STR_CONTAINS(err, cases[c].want2);
        check_cleared(&ds);
    }

    /* a missing file, a folder, and a scale that is not a number */
    const char *missing = tmp_path("missing.csv");
    const char *folder = tmp_path("folder.csv");
    CHECK(mkdir(folder, 0700) == 0);
    const char *good = tmp_path("good.csv");
    write_text(good, "1,2\n");
    const char *fifo = tmp_path("fifo.csv");
    CHECK(mkfifo(fifo, 0600) == 0);
    const struct {
        const char *path;
        float scale;
        int code;
        const char *want;
    } other[] = {
        {missing, 1, TN_ENOENT, "not found"},
        {folder, 1, TN_EIO, "is a folder, not a regular file"},
        {fifo, 1, TN_EIO, "is a FIFO, not a regular file"}, /* it used to wait for a writer */
        {good, NAN, TN_EINVAL, "scale"},
    };
    for (size_t c = 0; c < sizeof(other) / sizeof(other[0]); c++) {
        ds_dataset ds;
        char err[512] = "";
        int rc = ds_load_csv(other[c].path, 0, other[c].scale, 0, &ds, err, sizeof(err));
        CHECK_MSG(rc == other[c].code, "case %zu: rc %d: %s", c, rc, err);
        CHECK_STR_CONTAINS(err, other[c].path);
        CHECK_STR_CONTAINS(err, other[c].want);
        check_cleared(&ds);
    }
    cleanup();
}

static void test_clear(void) {
    ds_clear(NULL);
    ds_dataset ds = {0};
    ds_clear(&ds);
    ds.x = tn_xmalloc(4 * sizeof(float));
    ds.y = tn_xmalloc(2 * sizeof(int32_t));
    ds.n = 2;
    ds.d = 2;
    ds.classes = 3;
    ds.channels = ds.height = ds.width = 1;
    ds_clear(&ds);
    check_cleared(&ds);
    CHECK_INT_EQ(ds.channels + ds.height + ds.width, 0);
}

int main(void) {
    RUN(test_idx_load_plain_and_gz);
    RUN(test_idx_limit);
    RUN(test_idx_limit_reads_only_what_it_needs);
    RUN(test_idx_classes_at_least_two);
    RUN(test_idx_errors);
    RUN(test_idx_fifo_refused);
    RUN(test_idx_dir_unsearchable);
    RUN(test_idx_trailing_labels);
    RUN(test_idx_bad_gzip);
    RUN(test_idx_dir);
    RUN(test_fashion_mnist);
    RUN(test_csv_ok);
    RUN(test_csv_long_lines);
    RUN(test_csv_errors);
    RUN(test_clear);
    return check_summary();
}
