/*
 * checkpoint.c — crash-safe checkpoint files and the checkpoint folder (see
 * checkpoint.h).
 *
 * A file is a little-endian header, a section table and the section data; every
 * field is written one by one (never a struct dump), and the reader trusts nothing:
 * the whole file is read into memory and its magic, version, header CRC, size, and
 * every section's bounds and CRC are checked before a single section is handed out.
 * Writes go to "<path>.tmp.<pid>", are fsync'ed and renamed over path, and then the
 * folder is fsync'ed. The folder holds "ckpt-<12-digit step>.ckpt" files, newest
 * last in name order; ckpt_save prunes old ones (and leftovers above the step it
 * writes), and ckpt_load_newest falls back past damaged ones and past ones that the
 * caller's check refuses. The on-disk format (as tables), the write protocol, naming,
 * pruning and corruption handling: docs/checkpoint-format.md, "Checkpoint format".
 */
#include "trainer/checkpoint.h"

#include "common/fileio.h"
#include "common/status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#define CKPT_MAGIC "TNCKPT\r\n"     /* 8 bytes, no terminating NUL on disk */
#define CKPT_MAGIC_LEN 8
#define CKPT_FIXED_LEN 24           /* magic, version, section count, total size */
#define CKPT_ENTRY_LEN 24           /* tag, crc, offset, size */
#define CKPT_CRC_LEN 4              /* header CRC after the table */
#define CKPT_ALIGN 8                /* every section starts at a multiple of this */
#define CKPT_MAX_STEP 999999999999LL /* the largest step that fits in 12 digits */
#define CKPT_NAME_LEN 22            /* strlen("ckpt-") + 12 + strlen(".ckpt") */
#define CKPT_IO_CHUNK (1u << 30)    /* largest single write() and crc32() call */
#define CKPT_WHY_LEN 256            /* a reason, without the path */
#define CKPT_RELISTS 8 /* listings again when what was listed went before it was read */
#define CKPT_DISK_HINT "; hint: the disk is full; free space or use another --job-dir"
#define CKPT_FSIZE_HINT                                                                    \
    "; hint: the checkpoint is larger than the file-size limit (ulimit -f, which Slurm "   \
    "passes on to jobs); raise it (ulimit -f unlimited) and run again"
#define CKPT_IN_THE_WAY_HINT "; hint: remove or rename it"

typedef struct ckpt_entry {
    uint32_t tag;    /* the trainer's section tag */
    uint64_t offset; /* where the data start in the file (a multiple of CKPT_ALIGN) */
    uint64_t size;   /* bytes of data */
} ckpt_entry;

struct ckpt_file {
    uint8_t *buf;        /* (size) the whole file, verified */
    uint64_t size;       /* bytes in buf */
    uint32_t count;      /* number of sections */
    ckpt_entry *entries; /* (count) the decoded section table, in file order */
};

/* ---------------------------------------------------------------------------------
 * Little helpers: byte order, CRC, alignment, messages
 * --------------------------------------------------------------------------------- */

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* zlib's CRC-32 of n bytes, fed to crc32() in pieces that fit its uInt length. */
static uint32_t crc_of(const void *data, uint64_t n) {
    const Bytef *p = data;
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt part = n > CKPT_IO_CHUNK ? CKPT_IO_CHUNK : (uInt)n;
        crc = crc32(crc, p, part);
        p += part;
        n -= part;
    }
    return (uint32_t)crc;
}

/* x rounded up to a multiple of CKPT_ALIGN; the caller makes sure it cannot wrap. */
static uint64_t align_up(uint64_t x) {
    return (x + CKPT_ALIGN - 1) / CKPT_ALIGN * CKPT_ALIGN;
}

/* The hint for a failed call's errno e: the disk-full one, the file-size limit's, or "". */
static const char *disk_hint(int e) {
    int full = e == ENOSPC;
#ifdef EDQUOT
    full = full || e == EDQUOT;
#endif
    if (e == EFBIG) return CKPT_FSIZE_HINT;
    return full ? CKPT_DISK_HINT : "";
}

/* The TN_EIO message for a failed system call: the call, the path, strerror(e), and
 * a hint when the disk is full. */
static int io_error(char *err, size_t errlen, const char *call, const char *path, int e) {
    return tn_error(err, errlen, TN_EIO, "%s %s: %s%s", call, path, strerror(e),
                    disk_hint(e));
}

/* "a/b" + "c" -> "a/b/c" (trailing slashes of dir dropped; "/" stays "/"). The
 * returned string is yours to free. */
static char *path_join(const char *dir, const char *name) {
    size_t dlen = strlen(dir);
    while (dlen > 1 && dir[dlen - 1] == '/') dlen--;
    int slash = !(dlen > 0 && dir[dlen - 1] == '/');
    size_t len = dlen + (size_t)slash + strlen(name) + 1;
    char *p = tn_xmalloc(len);
    snprintf(p, len, "%.*s%s%s", (int)dlen, dir, slash ? "/" : "", name);
    return p;
}

/* The folder that holds path ("." when path has no slash). Yours to free. */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return tn_xstrdup(".");
    size_t len = slash == path ? 1 : (size_t)(slash - path);
    char *d = tn_xmalloc(len + 1);
    memcpy(d, path, len);
    d[len] = '\0';
    return d;
}

/* Copies s into out (out may be NULL); TN_EINVAL when it does not fit. */
static int copy_out(char *out, size_t outlen, const char *s, char *err, size_t errlen) {
    if (!out) return 0;
    size_t need = strlen(s) + 1;
    if (need > outlen)
        return tn_error(err, errlen, TN_EINVAL,
                        "path buffer of %zu bytes is too small for %s", outlen, s);
    memcpy(out, s, need);
    return 0;
}

/* ---------------------------------------------------------------------------------
 * Writing
 * --------------------------------------------------------------------------------- */

/* Writes all n bytes, retrying partial writes and EINTR. Returns 0, or -1 with errno. */
static int write_all(int fd, const void *data, uint64_t n) {
    const char *p = data;
    while (n > 0) {
        size_t part = n > CKPT_IO_CHUNK ? CKPT_IO_CHUNK : (size_t)n;
        ssize_t w = write(fd, p, part);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (uint64_t)w;
    }
    return 0;
}

/* Checks the sections and lays them out: fills offsets[i] and *total. */
static int plan_layout(const ckpt_section *sections, size_t n, uint64_t *offsets,
                       uint64_t *total, char *err, size_t errlen) {
    uint64_t end = CKPT_FIXED_LEN + (uint64_t)n * CKPT_ENTRY_LEN + CKPT_CRC_LEN;
    for (size_t i = 0; i < n; i++) {
        const ckpt_section *s = &sections[i];
        if (!s->data && s->size > 0)
            return tn_error(err, errlen, TN_EINVAL,
                            "section tag %" PRIu32 " has %" PRIu64 " bytes but no data",
                            s->tag, s->size);
        for (size_t j = 0; j < i; j++)
            if (sections[j].tag == s->tag)
                return tn_error(err, errlen, TN_EINVAL,
                                "section tag %" PRIu32 " appears twice (sections %zu and %zu)",
                                s->tag, j, i);
        offsets[i] = align_up(end);
        if (s->size > SIZE_MAX || s->size > UINT64_MAX - CKPT_ALIGN - offsets[i])
            return tn_error(err, errlen, TN_EINVAL,
                            "section tag %" PRIu32 " is too large (%" PRIu64 " bytes)",
                            s->tag, s->size);
        end = offsets[i] + s->size;
    }
    *total = end;
    return 0;
}

/* The header and table, padded with zeros up to the first section (*len bytes).
 * Yours to free. */
static uint8_t *build_header(const ckpt_section *sections, size_t n,
                             const uint64_t *offsets, uint64_t total, size_t *len) {
    size_t hlen = CKPT_FIXED_LEN + n * CKPT_ENTRY_LEN + CKPT_CRC_LEN;
    size_t padded = n > 0 ? (size_t)offsets[0] : hlen;
    uint8_t *h = tn_xcalloc(padded, 1);
    memcpy(h, CKPT_MAGIC, CKPT_MAGIC_LEN);
    put_u32(h + 8, CKPT_VERSION);
    put_u32(h + 12, (uint32_t)n);
    put_u64(h + 16, total);
    for (size_t i = 0; i < n; i++) {
        uint8_t *e = h + CKPT_FIXED_LEN + i * CKPT_ENTRY_LEN;
        put_u32(e, sections[i].tag);
        put_u32(e + 4, crc_of(sections[i].data, sections[i].size));
        put_u64(e + 8, offsets[i]);
        put_u64(e + 16, sections[i].size);
    }
    put_u32(h + hlen - CKPT_CRC_LEN, crc_of(h, hlen - CKPT_CRC_LEN));
    *len = padded;
    return h;
}

/* Writes the header and every section (with zero padding between) to fd. Returns 0,
 * or -1 with errno. */
static int write_body(int fd, const ckpt_section *sections, size_t n,
                      const uint64_t *offsets, uint64_t total) {
    static const uint8_t zeros[CKPT_ALIGN];
    size_t hlen = 0;
    uint8_t *header = build_header(sections, n, offsets, total, &hlen);
    int rc = write_all(fd, header, hlen);
    int e = errno;
    free(header);
    errno = e;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = write_all(fd, sections[i].data, sections[i].size);
        uint64_t end = offsets[i] + sections[i].size;
        if (rc == 0 && i + 1 < n) rc = write_all(fd, zeros, offsets[i + 1] - end);
    }
    return rc;
}

/* fsyncs the folder that holds path, so that a rename in it survives a crash. Some
 * file systems cannot fsync a folder and say EINVAL; that is not an error. */
static int sync_dir_of(const char *path, char *err, size_t errlen) {
    char *dir = dir_of(path);
    int rc = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        rc = io_error(err, errlen, "open", dir, errno);
    } else {
        if (fsync(fd) != 0 && errno != EINVAL) rc = io_error(err, errlen, "fsync", dir, errno);
        close(fd); /* read-only: nothing to lose */
    }
    free(dir);
    return rc;
}

/* The error for a rename of tmp over path that failed with e: TN_EIO naming both, but
 * TN_EINVAL for a folder by path's name (EISDIR: a file cannot replace a folder), which
 * fails every save of that step alike, restarted or not (so the trainer exits 2, a
 * permanent error, and the tuner does not restart the replica into the same failure);
 * its message says what is in the way and what to do, as list_dir's warning did when
 * the run started. */
static int rename_error(char *err, size_t errlen, const char *tmp, const char *path, int e) {
    if (e == EISDIR)
        return tn_error(err, errlen, TN_EINVAL,
                        "cannot save %s: it is a folder, not a checkpoint file (rename %s: "
                        "%s)" CKPT_IN_THE_WAY_HINT,
                        path, tmp, strerror(e));
    return tn_error(err, errlen, TN_EIO, "rename %s to %s: %s%s", tmp, path, strerror(e),
                    disk_hint(e));
}

/* Fills the open temporary file fd, closes it and renames tmp to path; on any
 * failure deletes tmp. Returns 0 or TN_EIO naming the call that failed. */
static int fill_and_rename(int fd, const char *tmp, const char *path,
                           const ckpt_section *sections, size_t n, const uint64_t *offsets,
                           uint64_t total, char *err, size_t errlen) {
    const char *call = NULL; /* the call that failed */
    int e = 0;
    if (write_body(fd, sections, n, offsets, total) != 0) call = "write";
    else if (fsync(fd) != 0) call = "fsync";
    if (call) e = errno;
    if (close(fd) != 0 && !call) {
        call = "close";
        e = errno;
    }
    if (!call && rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp); /* best effort: the error to report is the rename's */
        return rename_error(err, errlen, tmp, path, e);
    }
    if (!call) return 0;
    unlink(tmp); /* best effort: the error to report is the one above */
    return io_error(err, errlen, call, tmp, e);
}

/* Deletes what interrupted writes of path left beside it: "<path>.tmp.<digits>", any
 * pid's. A path has one writer (the chief), so none of them is in progress; one may
 * even carry this process's own name for it (a restart in a fresh container, where
 * pids repeat), which would make the exclusive create below fail on every restart.
 * Best effort: where the folder cannot be read, the create that follows fails and
 * says why. */
static void remove_own_tmps(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir = tn_xstrdup(slash ? path : ".");
    if (slash) dir[slash == path ? 1 : slash - path] = '\0';
    const char *base = slash ? slash + 1 : path;
    size_t blen = strlen(base);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *name = e->d_name, *pid = name + blen + 5;
        if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp.", 5) != 0 || !*pid ||
            strspn(pid, "0123456789") != strlen(pid))
            continue;
        char *p = path_join(dir, name);
        (void)unlink(p);
        free(p);
    }
    if (d) closedir(d);
    free(dir);
}

int ckpt_write(const char *path, const ckpt_section *sections, size_t n, char *err,
               size_t errlen) {
    if (!path || !*path || (n > 0 && !sections))
        return tn_error(err, errlen, TN_EINVAL, "ckpt_write: no path or no sections");
    if (n > UINT32_MAX)
        return tn_error(err, errlen, TN_EINVAL, "ckpt_write: %zu sections is too many", n);
    uint64_t *offsets = tn_xmalloc(n * sizeof(*offsets));
    uint64_t total = 0;
    int rc = plan_layout(sections, n, offsets, &total, err, errlen);
    if (rc == 0) {
        remove_own_tmps(path);
        size_t tlen = strlen(path) + 32;
        char *tmp = tn_xmalloc(tlen);
        snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
        int fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0) rc = io_error(err, errlen, "open", tmp, errno); /* nothing created */
        else rc = fill_and_rename(fd, tmp, path, sections, n, offsets, total, err, errlen);
        free(tmp);
    }
    /* After the rename the new file is in place, even if the folder's fsync fails. */
    if (rc == 0) rc = sync_dir_of(path, err, errlen);
    free(offsets);
    return rc;
}

/* ---------------------------------------------------------------------------------
 * Reading and verifying
 * --------------------------------------------------------------------------------- */

static int check_header(const uint8_t *b, uint64_t avail, uint64_t len, uint32_t *count,
                        char *why, size_t whylen);

/* Reads the whole file at path into *buf (yours to free) and its length into *len,
 * once its header fits its size (check_header on its first bytes). On failure the
 * reason (without the path) is in why; a file too large for memory is such a failure,
 * not an abort. */
static int slurp(const char *path, uint8_t **buf, uint64_t *len, char *why, size_t whylen) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        int e = errno;
        return tn_error(why, whylen, e == ENOENT ? TN_ENOENT : TN_EIO, "cannot open: %s",
                        strerror(e));
    }
    struct stat st;
    size_t cap = 1 << 16;
    if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        /* The header first: a file whose header does not fit its size (one extended by
         * accident to terabytes, say) is refused without reading it into memory. */
        uint8_t head[1 << 12];
        size_t got = fread(head, 1, sizeof head, fp);
        uint32_t count;
        int hrc = ferror(fp) ? 0 : check_header(head, got, (uint64_t)st.st_size, &count, why, whylen);
        if (hrc < 0) {
            fclose(fp);
            return hrc;
        }
        rewind(fp);
        if ((uint64_t)st.st_size >= SIZE_MAX / 2) {
            fclose(fp);
            return tn_error(why, whylen, TN_EIO, "file is too large to read into memory");
        }
        cap = (size_t)st.st_size + 1; /* one spare byte, so the first read sees EOF */
    }
    uint8_t *b = malloc(cap); /* a file larger than memory is one that cannot be used */
    if (!b) {
        fclose(fp);
        return tn_error(why, whylen, TN_EIO,
                        "cannot hold its %zu bytes in memory (out of memory)", cap - 1);
    }
    size_t n = 0;
    int rc = 0;
    for (;;) {
        if (n == cap) {
            if (cap > SIZE_MAX / 2) {
                rc = tn_error(why, whylen, TN_EIO, "file is too large to read into memory");
                break;
            }
            cap *= 2;
            uint8_t *nb = realloc(b, cap);
            if (!nb) {
                rc = tn_error(why, whylen, TN_EIO, "cannot hold it in memory (out of memory)");
                break;
            }
            b = nb;
        }
        n += fread(b + n, 1, cap - n, fp);
        if (ferror(fp)) {
            rc = tn_error(why, whylen, TN_EIO, "read: %s", strerror(errno));
            break;
        }
        if (feof(fp)) break;
    }
    fclose(fp); /* read-only: nothing to lose */
    if (rc) {
        free(b);
        return rc;
    }
    *buf = b;
    *len = n;
    return 0;
}

/* Checks magic, version, header CRC and size of a file of len bytes whose first avail
 * (at most len) are in b; on success *count is the number of sections. 1 when the
 * header is longer than avail, so that only the whole file can tell. */
static int check_header(const uint8_t *b, uint64_t avail, uint64_t len, uint32_t *count,
                        char *why, size_t whylen) {
    uint64_t keep = avail < CKPT_MAGIC_LEN ? avail : CKPT_MAGIC_LEN;
    if (memcmp(b, CKPT_MAGIC, (size_t)keep) != 0)
        return tn_error(why, whylen, TN_EFORMAT, "not a checkpoint file");
    if (len < CKPT_FIXED_LEN + CKPT_CRC_LEN)
        return tn_error(why, whylen, TN_ETRUNC,
                        "file is %" PRIu64 " bytes, shorter than any checkpoint header", len);
    if (avail < CKPT_FIXED_LEN + CKPT_CRC_LEN) return 1;
    uint32_t version = get_u32(b + 8);
    if (version != CKPT_VERSION)
        return tn_error(why, whylen, TN_EVERSION,
                        "format version %" PRIu32 "; this build reads version %d", version,
                        CKPT_VERSION);
    uint32_t n = get_u32(b + 12);
    uint64_t total = get_u64(b + 16);
    uint64_t hlen = CKPT_FIXED_LEN + (uint64_t)n * CKPT_ENTRY_LEN + CKPT_CRC_LEN;
    if (hlen > len) {
        if (total > len)
            return tn_error(why, whylen, TN_ETRUNC,
                            "file is %" PRIu64 " bytes, header says %" PRIu64, len, total);
        return tn_error(why, whylen, TN_ECORRUPT,
                        "header is damaged: %" PRIu32 " sections do not fit in %" PRIu64
                        " bytes", n, len);
    }
    if (hlen > avail) return 1;
    if (get_u32(b + hlen - CKPT_CRC_LEN) != crc_of(b, hlen - CKPT_CRC_LEN))
        return tn_error(why, whylen, TN_ECORRUPT, "header checksum mismatch");
    if (total != len)
        return tn_error(why, whylen, total > len ? TN_ETRUNC : TN_EFORMAT,
                        "file is %" PRIu64 " bytes, header says %" PRIu64, len, total);
    *count = n;
    return 0;
}

/* Decodes the table of a file whose header checked out and verifies every section:
 * aligned, in order, inside the file, CRC. Fills f->entries. */
static int check_sections(ckpt_file *f, char *why, size_t whylen) {
    uint64_t end = CKPT_FIXED_LEN + (uint64_t)f->count * CKPT_ENTRY_LEN + CKPT_CRC_LEN;
    f->entries = tn_xmalloc((size_t)f->count * sizeof(*f->entries));
    for (uint32_t i = 0; i < f->count; i++) {
        const uint8_t *e = f->buf + CKPT_FIXED_LEN + (uint64_t)i * CKPT_ENTRY_LEN;
        ckpt_entry *s = &f->entries[i];
        s->tag = get_u32(e);
        s->offset = get_u64(e + 8);
        s->size = get_u64(e + 16);
        /* Written as subtractions so that no hostile value can wrap around. */
        if (s->offset % CKPT_ALIGN != 0 || s->offset < end || s->offset > f->size ||
            s->size > f->size - s->offset)
            return tn_error(why, whylen, TN_ECORRUPT,
                            "section tag %" PRIu32 " (offset %" PRIu64 ", %" PRIu64
                            " bytes) is misplaced in a %" PRIu64 "-byte file",
                            s->tag, s->offset, s->size, f->size);
        if (get_u32(e + 4) != crc_of(f->buf + s->offset, s->size))
            return tn_error(why, whylen, TN_ECORRUPT,
                            "section tag %" PRIu32 ": checksum mismatch", s->tag);
        end = s->offset + s->size;
    }
    return 0;
}

/* ckpt_read with the reason for a failure in why, without the path. */
static int read_verified(const char *path, ckpt_file **out, char *why, size_t whylen) {
    ckpt_file *f = tn_xcalloc(1, sizeof(*f));
    int rc = slurp(path, &f->buf, &f->size, why, whylen);
    if (rc == 0) rc = check_header(f->buf, f->size, f->size, &f->count, why, whylen);
    if (rc == 0) rc = check_sections(f, why, whylen);
    if (rc) {
        ckpt_file_free(f);
        return rc;
    }
    *out = f;
    return 0;
}

int ckpt_read(const char *path, ckpt_file **out, char *err, size_t errlen) {
    char why[CKPT_WHY_LEN];
    *out = NULL;
    int rc = read_verified(path, out, why, sizeof(why));
    return rc ? tn_error(err, errlen, rc, "%s: %s", path, why) : 0;
}

const void *ckpt_find(const ckpt_file *f, uint32_t tag, uint64_t *size) {
    for (uint32_t i = 0; f && i < f->count; i++) {
        if (f->entries[i].tag != tag) continue;
        if (size) *size = f->entries[i].size;
        return f->buf + f->entries[i].offset;
    }
    return NULL;
}

void ckpt_file_free(ckpt_file *f) {
    if (!f) return;
    free(f->entries);
    free(f->buf);
    free(f);
}

/* ---------------------------------------------------------------------------------
 * The checkpoint folder
 * --------------------------------------------------------------------------------- */

/* Whether name is exactly "ckpt-" + 12 digits + ".ckpt". */
static int is_ckpt_name(const char *name) {
    if (strlen(name) != CKPT_NAME_LEN || strncmp(name, "ckpt-", 5) != 0 ||
        strcmp(name + 17, ".ckpt") != 0)
        return 0;
    for (int i = 5; i < 17; i++)
        if (name[i] < '0' || name[i] > '9') return 0;
    return 1;
}

/* Whether name is a temporary file that an interrupted checkpoint write left behind. */
static int is_stale_tmp(const char *name) {
    return strncmp(name, "ckpt-", 5) == 0 && strstr(name, ".ckpt.tmp.") != NULL;
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n) {
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* What a folder entry that is not a regular file is, for the warning. */
static const char *kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    return "not a regular file";
}

/* The names in dir that pass keep() and name regular files (symbolic links followed),
 * sorted (for checkpoints: oldest step first). Anything else by such a name (a folder
 * called ckpt-000000000040.ckpt, a FIFO) is neither read nor deleted, so it can neither
 * hang a reader nor fail every save; it is told on log (when not NULL) as "warning:
 * PATH is a FIFO, not a checkpoint file; left alone; hint: remove or rename it". A
 * folder's warning also says that no checkpoint can be saved by its name: a file cannot
 * be renamed over a folder, so a run that reaches that step fails there (rename_error),
 * and the warning is the user's chance to act before. (A save of that step replaces
 * anything else.) An entry that vanishes between readdir and stat (pruned meanwhile,
 * or a dangling link) is passed over silently.
 * Returns 0 with *names (yours to free with free_names) and *count, or TN_EIO. A dir
 * that does not exist holds nothing. */
static int list_dir(const char *dir, int (*keep)(const char *), FILE *log, char ***names,
                    size_t *count, char *err, size_t errlen) {
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : io_error(err, errlen, "opendir", dir, errno);
    size_t n = 0, cap = 0;
    char **v = NULL;
    struct dirent *de;
    for (;;) {
        errno = 0;
        if (!(de = readdir(d))) break;
        if (!keep(de->d_name)) continue;
        struct stat st;
        int e = fstatat(dirfd(d), de->d_name, &st, 0) != 0 ? errno : 0;
        if (e == ENOENT) continue;
        if (e && log)
            fprintf(log, "warning: cannot examine %s/%s (stat: %s), so it is not taken for a "
                         "checkpoint file; left alone\n",
                    dir, de->d_name, strerror(e));
        else if (!e && !S_ISREG(st.st_mode) && log)
            fprintf(log, "warning: %s/%s is %s, not a checkpoint file; left alone%s%s\n",
                    dir, de->d_name, kind_of(st.st_mode),
                    S_ISDIR(st.st_mode) ? ", but no checkpoint can be saved by its name" : "",
                    CKPT_IN_THE_WAY_HINT);
        if (e || !S_ISREG(st.st_mode)) continue; /* errno: the loop's top resets it */
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            v = tn_xrealloc(v, cap * sizeof(*v));
        }
        v[n++] = tn_xstrdup(de->d_name);
    }
    int e = errno;
    closedir(d);
    if (e) {
        free_names(v, n);
        return io_error(err, errlen, "readdir", dir, e);
    }
    if (n > 0) qsort(v, n, sizeof(*v), cmp_names);
    *names = v;
    *count = n;
    return 0;
}

/* Deletes dir/name; a file that is already gone is fine. */
static int remove_in(const char *dir, const char *name, char *err, size_t errlen) {
    char *p = path_join(dir, name);
    int rc = 0;
    if (unlink(p) != 0 && errno != ENOENT) rc = io_error(err, errlen, "unlink", p, errno);
    free(p);
    return rc;
}

/* Deletes the temporary files that an interrupted write left in dir. */
static int remove_stale(const char *dir, char *err, size_t errlen) {
    char **names;
    size_t n;
    int rc = list_dir(dir, is_stale_tmp, NULL, &names, &n, err, errlen);
    for (size_t i = 0; i < n && rc == 0; i++) rc = remove_in(dir, names[i], err, errlen);
    free_names(names, n);
    return rc;
}

/* Deletes the checkpoints in dir with a higher step than `newest` (the file just
 * written), then the oldest until at most keep remain, never `newest` itself. A higher
 * step is a leftover that the trainer resumed around because it was damaged or did
 * not fit the run; counting it would cost a good checkpoint its place, and the run's
 * own history replaces it. Names sort in step order (fixed width). */
static int prune(const char *dir, const char *newest, int keep, char *err, size_t errlen) {
    char **names;
    size_t n;
    int rc = list_dir(dir, is_ckpt_name, NULL, &names, &n, err, errlen);
    size_t older = 0; /* checkpoints below newest */
    for (size_t i = 0; i < n && rc == 0; i++) {
        int c = strcmp(names[i], newest);
        if (c > 0) rc = remove_in(dir, names[i], err, errlen);
        older += c < 0;
    }
    size_t excess = older > (size_t)keep - 1 ? older - ((size_t)keep - 1) : 0;
    for (size_t i = 0; i < n && excess > 0 && rc == 0; i++, excess--)
        rc = remove_in(dir, names[i], err, errlen); /* names[0 .. older) are below newest */
    free_names(names, n);
    return rc;
}

/* mkdir -p dir, with the full disk's hint. */
static int make_dirs(const char *dir, char *err, size_t errlen) {
    int rc = tn_make_dirs(dir, err, errlen);
    const char *hint = disk_hint(errno);
    if (rc == TN_EIO && *hint && err && errlen) {
        size_t n = strlen(err);
        snprintf(err + n, errlen - n, "%s", hint);
    }
    return rc;
}

int ckpt_save(const char *dir, int64_t step, const ckpt_section *sections, size_t n,
              int keep, char *path_out, size_t path_len, char *err, size_t errlen) {
    if (!dir || !*dir) return tn_error(err, errlen, TN_EINVAL, "ckpt_save: no folder");
    if (keep < 1)
        return tn_error(err, errlen, TN_EINVAL, "ckpt_save: keep is %d, must be at least 1",
                        keep);
    if (step < 0 || step > CKPT_MAX_STEP)
        return tn_error(err, errlen, TN_EINVAL,
                        "ckpt_save: step %" PRId64 " is outside [0, %lld]", step,
                        CKPT_MAX_STEP);
    char name[CKPT_NAME_LEN + 1];
    snprintf(name, sizeof(name), "ckpt-%012lld.ckpt", (long long)step);
    char *path = path_join(dir, name);
    int rc = copy_out(path_out, path_len, path, err, errlen);
    if (rc == 0) rc = make_dirs(dir, err, errlen);
    /* Temporary files go first: one may carry the very name ckpt_write is about to
     * use (the same step after a restart, the same pid in a fresh container). */
    if (rc == 0) rc = remove_stale(dir, err, errlen);
    if (rc == 0) rc = ckpt_write(path, sections, n, err, errlen);
    if (rc == 0) rc = prune(dir, name, keep, err, errlen);
    free(path);
    return rc;
}

int ckpt_load_newest(const char *dir, ckpt_file **out, char *path_out, size_t path_len,
                     FILE *log, char *err, size_t errlen) {
    return ckpt_load_newest_checked(dir, NULL, NULL, out, path_out, path_len, log, err, errlen);
}

/* read_verified, then the caller's check (when there is one) with the step in name. */
static int read_usable(const char *path, const char *name, ckpt_check_fn check, void *ctx,
                       ckpt_file **out, char *why, size_t whylen) {
    int rc = read_verified(path, out, why, whylen);
    if (rc || !check) return rc;
    int64_t step = strtoll(name + 5, NULL, 10); /* is_ckpt_name: 12 digits */
    rc = check(*out, step, ctx, why, whylen);
    if (rc == 0) return 0;
    if (rc > 0) rc = tn_error(why, whylen, TN_EFORMAT, "refused by its check");
    ckpt_file_free(*out);
    *out = NULL;
    return rc;
}

int ckpt_load_newest_checked(const char *dir, ckpt_check_fn check, void *ctx,
                             ckpt_file **out, char *path_out, size_t path_len, FILE *log,
                             char *err, size_t errlen) {
    *out = NULL;
    if (path_out && path_len > 0) path_out[0] = '\0';
    if (!dir || !*dir) return tn_error(err, errlen, TN_EINVAL, "ckpt_load_newest: no folder");
    /* A reader beside a running writer (the evaluator) may list files that the writer
     * prunes before they are opened: such a file is gone, not damaged, and the folder
     * is listed again (the writer saved a newer one before it pruned). */
    for (int listing = 0;; listing++) {
        char **names;
        size_t n;
        int rc = list_dir(dir, is_ckpt_name, log, &names, &n, err, errlen);
        if (rc) return rc;
        if (n == 0) { /* a fresh start: *out stays NULL */
            free_names(names, n);
            return 0;
        }
        char why[CKPT_WHY_LEN], newest_why[CKPT_WHY_LEN] = "";
        int newest_rc = 0; /* why the newest one failed */
        size_t gone = 0;   /* listed, then removed before it was read */
        int newest = 1;    /* the next file read is the newest there */
        for (size_t i = n; i-- > 0 && rc == 0 && !*out;) {
            char *p = path_join(dir, names[i]);
            rc = copy_out(path_out, path_len, p, err, errlen);
            int bad = rc == 0 ? read_usable(p, names[i], check, ctx, out, why, sizeof(why)) : 0;
            if (bad && access(p, F_OK) != 0 && errno == ENOENT) {
                gone++;
                free(p);
                continue;
            }
            if (bad == TN_EVERSION && newest) {
                /* A trainer of another format wrote it (or its version field is
                 * damaged): resumed around, it would be deleted at the first save (a
                 * save prunes every step above its own). Refused, as checkpoints of
                 * another run are: nothing is written or deleted. */
                rc = tn_error(err, errlen, TN_EINVAL,
                              "the newest checkpoint, %s, is of another format (%s); this "
                              "trainer cannot resume it, and would delete it at its first "
                              "save; hint: resume with the trainer that wrote it, or move "
                              "the file away to resume from the ones before",
                              p, why);
                if (path_out && path_len > 0) path_out[0] = '\0';
                free(p);
                break;
            }
            newest = 0;
            if (bad && log)
                fprintf(log, "warning: checkpoint %s is unusable (%s)%s\n", p, why,
                        i > 0 ? "; trying the previous one" : "");
            if (bad && !newest_rc) {
                newest_rc = bad;
                snprintf(newest_why, sizeof(newest_why), "%s", why);
            }
            free(p);
        }
        free_names(names, n);
        if (rc || *out) return rc; /* path_out too small, or loaded */
        if (path_out && path_len > 0) path_out[0] = '\0';
        if (gone > 0 && listing < CKPT_RELISTS) continue;
        if (gone == n)
            return tn_error(err, errlen, TN_EIO,
                            "%s: its checkpoints were removed as they were read, %d times; "
                            "hint: is another run pruning this --job-dir?",
                            dir, CKPT_RELISTS + 1);
        return tn_error(err, errlen, newest_rc,
                        "%s holds %zu checkpoint%s and none is usable (newest: %s); hint: "
                        "remove them or use a fresh --job-dir",
                        dir, n - gone, n - gone == 1 ? "" : "s", newest_why);
    }
}
