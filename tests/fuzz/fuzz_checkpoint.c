/*
 * fuzz_checkpoint.c — libFuzzer harness for the checkpoint reader
 * (trainer/checkpoint.h): the input becomes DIR/ckpt-000000000001.ckpt in a temporary
 * folder, read by ckpt_read and by ckpt_load_newest.
 *
 * Besides "no crash, no leak, no undefined behaviour" it checks checkpoint.h's
 * promises: the two readers agree; a failure is a negative code with a message that
 * names the file; a file that verifies hands out every section its table names, inside
 * the file and 8-byte aligned, and each section's bytes are read (so that AddressSanitizer
 * sees any out-of-bounds one). Seeds: corpus/checkpoint, plus small checkpoints that
 * ckpt_seeds (the project's own writer) adds to the working copy. docs/fuzzing.md.
 */
#include "tests/fuzz/fuzz_util.h"

#include <sys/stat.h>

#include "common/status.h"
#include "trainer/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

volatile unsigned fuzz_sink; /* the sections' bytes end here, so that they are read */

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Reads every section the table of a verified file names; returns a sum of the bytes,
 * for the compiler not to drop the reads. */
static unsigned touch_sections(const ckpt_file *f, const uint8_t *data, size_t size) {
    unsigned sum = 0;
    uint32_t n = size >= 16 ? le32(data + 12) : 0;
    for (uint32_t i = 0; i < n && 24 + 24 * (size_t)i + 24 <= size; i++) {
        uint32_t tag = le32(data + 24 + 24 * (size_t)i);
        uint64_t len = 0;
        const uint8_t *p = ckpt_find(f, tag, &len);
        FUZZ_CHECK(p != NULL);                 /* the table names it */
        FUZZ_CHECK(((uintptr_t)p & 7) == 0);   /* aligned in memory, as documented */
        FUZZ_CHECK(len <= size);
        for (uint64_t j = 0; j < len; j++) sum += p[j];
    }
    return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char dir[600], path[700];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/ckpts", fuzz_dir());
        snprintf(path, sizeof path, "%s/ckpt-000000000001.ckpt", dir);
        FUZZ_CHECK(mkdir(dir, 0755) == 0);
    }
    fuzz_write_file(path, data, size);
    char err[1024] = "", got[1024] = "";
    ckpt_file *f = NULL;
    int rc = ckpt_read(path, &f, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc < 0 && f == NULL && strstr(err, path) != NULL);
    } else {
        fuzz_sink += touch_sections(f, data, size);
    }
    ckpt_file *g = (ckpt_file *)&g; /* must be reset */
    int rc2 = ckpt_load_newest(dir, &g, got, sizeof got, NULL, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(rc2 == 0 && g != NULL && strcmp(got, path) == 0);
    } else { /* the newest of another version is refused as a configuration error */
        int want = rc == TN_EVERSION ? TN_EINVAL : rc;
        FUZZ_CHECK(rc2 == want && g == NULL && got[0] == '\0' && strstr(err, dir) != NULL);
    }
    ckpt_file_free(g);
    ckpt_file_free(f);
    return 0;
}
