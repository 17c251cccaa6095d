/*
 * data.c — loads training and evaluation data into a ds_dataset (see data.h).
 *
 * Two formats: MNIST-style IDX files (an image file and a label file, each plain or
 * gzip; zlib's gz* functions read both transparently) and CSV files of numbers. Every
 * input is untrusted: headers are checked before anything is allocated from them,
 * buffers grow only as real bytes arrive (a header that claims four billion images
 * costs nothing until the bytes are there), and every problem becomes a TN_E* code
 * plus a message naming the file and what is wrong, never a crash.
 *
 * IDX layout (big-endian): a 4-byte magic 0x0000TTNN (TT = 0x08, unsigned bytes; NN
 * = number of dimensions), then NN 4-byte sizes, then the elements. Images are
 * 0x00000803 (N, H, W); labels are 0x00000801 (N). Design: docs/trainer.md, "Data".
 */
#include "trainer/data.h"

#include "common/fileio.h"
#include "common/status.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define IDX_IMAGES_MAGIC 0x00000803u
#define IDX_LABELS_MAGIC 0x00000801u
#define IDX_MAX_PIXELS (1u << 24)     /* H * W above this is not an image we train on */
#define DS_MAX_FEATURES (1 << 24)     /* same bound for CSV columns */
#define CSV_MAX_LABEL 65535
#define READ_CHUNK (4u << 20)         /* first buffer size and largest single gzread */

#define DS_HINT                                                                         \
    "hint: install Debian's dataset-fashion-mnist package (apt-get install "           \
    "dataset-fashion-mnist, or scripts/install-deps.sh) or pass --data_dir=FOLDER "     \
    "holding MNIST-format IDX files"

void ds_clear(ds_dataset *ds) {
    if (!ds) return;
    free(ds->x);
    free(ds->y);
    memset(ds, 0, sizeof(*ds));
}

/* ---------------------------------------------------------------------------------
 * IDX
 * --------------------------------------------------------------------------------- */

/* Opens path for reading with zlib (plain or gzip): a regular file only, opened
 * without blocking first (a FIFO in its place would hang the open until someone
 * writes to it); *size gets its size in bytes. */
static int idx_open(const char *path, gzFile *out, uint64_t *size, char *err,
                    size_t errlen) {
    char why[PATH_MAX + 128];
    int fd = tn_open_regular(path, "data file", why, sizeof why);
    if (fd == TN_ENOENT) return tn_error(err, errlen, TN_ENOENT, "%s: not found", path);
    if (fd < 0) return tn_error(err, errlen, TN_EIO, "%s; " DS_HINT, why);
    struct stat st;
    *size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    errno = 0;
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        int e = errno ? errno : ENOMEM;
        close(fd);
        return tn_error(err, errlen, TN_EIO, "%s: cannot open: %s", path, strerror(e));
    }
    gzbuffer(gz, 128u << 10); /* before the first read; a failure only costs speed */
    *out = gz;
    return 0;
}

/* Turns a failed gzread into a message. */
static int gz_fail(gzFile gz, const char *path, char *err, size_t errlen) {
    int zerr = Z_OK;
    const char *msg = gzerror(gz, &zerr);
    if (zerr == Z_ERRNO)
        return tn_error(err, errlen, TN_EIO, "%s: read failed: %s", path, strerror(errno));
    /* zlib's message begins with the path it was opened by (gzdopen: "<fd:N>") */
    const char *colon = msg && !strncmp(msg, "<fd:", 4) ? strstr(msg, ": ") : NULL;
    return tn_error(err, errlen, TN_ECORRUPT, "%s: corrupt gzip data: %s", path,
                    colon ? colon + 2 : msg ? msg : "unknown zlib error");
}

/* Reads up to len bytes into buf; *got is how many arrived (fewer only at the end of
 * the file). Returns 0 or a negative TN_E* code: TN_ETRUNC where a gzip stream ends
 * before its end (zlib's gzread then returns 0, not an error, and says so only in
 * gzerror: a file cut in its data, or in the trailer whose CRC would have checked it). */
static int gz_read_full(gzFile gz, const char *path, void *buf, size_t len, size_t *got,
                        char *err, size_t errlen) {
    unsigned char *p = buf;
    size_t done = 0;
    while (done < len) {
        size_t want = len - done;
        if (want > READ_CHUNK) want = READ_CHUNK;
        int n = gzread(gz, p + done, (unsigned)want);
        if (n < 0) return gz_fail(gz, path, err, errlen);
        if (n == 0) {
            int zerr = Z_OK;
            (void)gzerror(gz, &zerr);
            if (zerr == Z_BUF_ERROR)
                return tn_error(err, errlen, TN_ETRUNC,
                                "%s: truncated: its gzip stream is cut short (a download or "
                                "copy that did not finish?); " DS_HINT,
                                path);
            break;
        }
        done += (size_t)n;
    }
    *got = done;
    return 0;
}

/* Reads up to need bytes into a new buffer (*out, yours to free) that grows only as
 * bytes arrive, so a lying header cannot make us allocate what the file lacks. */
static int gz_read_grow(gzFile gz, const char *path, uint64_t need, unsigned char **out,
                        size_t *got, char *err, size_t errlen) {
    size_t cap = need < READ_CHUNK ? (size_t)need : READ_CHUNK;
    unsigned char *buf = tn_xmalloc(cap);
    size_t len = 0;
    for (;;) {
        size_t n = 0;
        int rc = gz_read_full(gz, path, buf + len, cap - len, &n, err, errlen);
        if (rc < 0) {
            free(buf);
            return rc;
        }
        len += n;
        if (len < cap || len == need) break; /* end of file, or all we need */
        cap = (uint64_t)cap * 2 < need ? cap * 2 : (size_t)need;
        buf = tn_xrealloc(buf, cap);
    }
    *out = buf;
    *got = len;
    return 0;
}

/* Reads up to need pixel bytes and scales them to [0, 1] into a new float array (*out,
 * yours to free) as they arrive, one chunk at a time: the array grows only with real
 * data, and no second full-size byte buffer is needed. *got counts the bytes read. */
static int gz_read_pixels(gzFile gz, const char *path, uint64_t need, float **out,
                          size_t *got, char *err, size_t errlen) {
    size_t chunk = need < READ_CHUNK ? (size_t)need : READ_CHUNK;
    unsigned char *buf = tn_xmalloc(chunk);
    float *x = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    while (len < need) {
        size_t want = need - len < chunk ? (size_t)(need - len) : chunk, n = 0;
        rc = gz_read_full(gz, path, buf, want, &n, err, errlen);
        if (rc < 0) break;
        if (len + n > cap) {
            cap = (uint64_t)cap * 2 < need ? cap * 2 : (size_t)need;
            if (cap < len + n) cap = len + n;
            x = tn_xrealloc(x, cap * sizeof(float));
        }
        for (size_t i = 0; i < n; i++) x[len + i] = buf[i] / 255.0f;
        len += n;
        if (n < want) break; /* end of file */
    }
    free(buf);
    if (rc < 0) {
        free(x);
        return rc;
    }
    *out = x;
    *got = len;
    return 0;
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Checks an IDX magic number: unsigned bytes with `dims` dimensions. what names the
 * file kind for messages ("image", "label"). */
static int idx_check_magic(const char *path, uint32_t magic, uint32_t want, int dims,
                           const char *what, char *err, size_t errlen) {
    if (magic == want) return 0;
    if ((magic >> 16) == 0 && ((magic >> 8) & 0xff) == 0x08)
        return tn_error(err, errlen, TN_EFORMAT,
                        "%s: bad magic 0x%08x, expected 0x%08x (an IDX %s file, %d "
                        "dimensions): this file has %u dimensions",
                        path, magic, want, what, dims, magic & 0xff);
    if ((magic >> 16) == 0)
        return tn_error(err, errlen, TN_EFORMAT,
                        "%s: bad magic 0x%08x, expected 0x%08x: element type 0x%02x is "
                        "not supported (an IDX %s file holds unsigned bytes, 0x08)",
                        path, magic, want, (magic >> 8) & 0xff, what);
    return tn_error(err, errlen, TN_EFORMAT,
                    "%s: bad magic 0x%08x, expected 0x%08x (an IDX %s file)", path, magic,
                    want, what);
}

/* Reads and checks the header of an IDX file: 4 + 4 * dims bytes into dim[]. */
static int idx_header(gzFile gz, const char *path, uint32_t want, int dims,
                      const char *what, uint32_t *dim, char *err, size_t errlen) {
    unsigned char h[16];
    size_t len = 4 + 4 * (size_t)dims, got = 0;
    int rc = gz_read_full(gz, path, h, len, &got, err, errlen);
    if (rc < 0) return rc;
    if (got >= 4) {
        rc = idx_check_magic(path, be32(h), want, dims, what, err, errlen);
        if (rc < 0) return rc;
    }
    if (got < len)
        return tn_error(err, errlen, TN_ETRUNC,
                        "%s: truncated: the file holds %zu bytes, an IDX %s header "
                        "needs %zu",
                        path, got, what, len);
    for (int i = 0; i < dims; i++) dim[i] = be32(h + 4 + 4 * i);
    return 0;
}

/* After the last of the count items its header announced (what, e.g. "images of
 * 28x28"): the data must end there. Reading past them also makes zlib check a gzip
 * file's trailer (its CRC and length); bytes after a gzip stream that are not another
 * one, zlib ignores. */
static int idx_check_end(gzFile gz, const char *path, uint32_t count, const char *what,
                         char *err, size_t errlen) {
    unsigned char extra;
    size_t got = 0;
    int rc = gz_read_full(gz, path, &extra, 1, &got, err, errlen);
    if (rc < 0) return rc;
    if (got)
        return tn_error(err, errlen, TN_EFORMAT,
                        "%s: holds more than its header says (%u %s): the header's count is "
                        "wrong, or data was appended; " DS_HINT,
                        path, count, what);
    return 0;
}

int ds_load_idx(const char *images_path, const char *labels_path, int64_t limit,
                ds_dataset *out, char *err, size_t errlen) {
    if (!out) return tn_error(err, errlen, TN_EINVAL, "ds_load_idx: no output dataset");
    memset(out, 0, sizeof(*out));
    if (!images_path || !labels_path)
        return tn_error(err, errlen, TN_EINVAL, "ds_load_idx: no file path given");

    gzFile gi = NULL, gl = NULL;
    unsigned char *lab = NULL;
    uint32_t idim[3] = {0}, ldim[1] = {0};
    uint64_t isize = 0, lsize = 0;
    int rc = idx_open(images_path, &gi, &isize, err, errlen);
    if (rc < 0) goto done;
    rc = idx_header(gi, images_path, IDX_IMAGES_MAGIC, 3, "image", idim, err, errlen);
    if (rc < 0) goto done;
    uint32_t n = idim[0], h = idim[1], w = idim[2];
    if (n == 0) {
        rc = tn_error(err, errlen, TN_EFORMAT, "%s: header says the file holds 0 images",
                      images_path);
        goto done;
    }
    if (h == 0 || w == 0 || (uint64_t)h * w > IDX_MAX_PIXELS) {
        rc = tn_error(err, errlen, TN_EFORMAT,
                      "%s: header says images are %ux%u; expected nonzero sizes of at "
                      "most %u pixels",
                      images_path, h, w, IDX_MAX_PIXELS);
        goto done;
    }

    rc = idx_open(labels_path, &gl, &lsize, err, errlen);
    if (rc < 0) goto done;
    rc = idx_header(gl, labels_path, IDX_LABELS_MAGIC, 1, "label", ldim, err, errlen);
    if (rc < 0) goto done;
    if (ldim[0] != n) {
        rc = tn_error(err, errlen, TN_EMISMATCH,
                      "%s: labels file has %u labels but images file %s has %u images",
                      labels_path, ldim[0], images_path, n);
        goto done;
    }

    uint64_t keep = limit > 0 && (uint64_t)limit < n ? (uint64_t)limit : n;
    uint64_t d = (uint64_t)h * w, need = keep * d;
    /* The pixels are kept as floats: a header that claims more than the machine's
     * memory holds (a gzip file of a few MB can inflate to many GB) is refused before
     * anything is read, rather than read until memory runs out. A plain file too short
     * for its header's count is told truncated as it is read (what is read is what it
     * holds). */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double memory = pages > 0 && page > 0 ? (double)pages * (double)page : 0;
    int short_plain = gzdirect(gi) && isize < 16 + need;
    if (need > SIZE_MAX / sizeof(float) ||
        (memory > 0 && !short_plain && (double)need * sizeof(float) > memory)) {
        rc = tn_error(err, errlen, TN_EFORMAT,
                      "%s: header says %llu images of %ux%u, %.1f GiB as the floats training "
                      "keeps, more than this machine's memory (%.1f GiB): the header is wrong, "
                      "or load fewer (--max_train_examples, --max_eval_examples)",
                      images_path, (unsigned long long)keep, h, w,
                      (double)need * sizeof(float) / 1073741824.0, memory / 1073741824.0);
        goto done;
    }
    size_t got = 0;
    rc = gz_read_pixels(gi, images_path, need, &out->x, &got, err, errlen);
    if (rc < 0) goto done;
    if (got < need) {
        if (keep == n)
            rc = tn_error(err, errlen, TN_ETRUNC,
                          "%s: truncated: header says %u images of %ux%u but the file "
                          "holds only %zu bytes of pixels, not %llu",
                          images_path, n, h, w, got, (unsigned long long)need);
        else
            rc = tn_error(err, errlen, TN_ETRUNC,
                          "%s: truncated: header says %u images of %ux%u but the file "
                          "holds only %zu bytes of pixels, fewer than the %llu needed "
                          "for the first %llu",
                          images_path, n, h, w, got, (unsigned long long)need,
                          (unsigned long long)keep);
        goto done;
    }
    if (keep == n) { /* read to the end: nothing may follow */
        char what[64];
        snprintf(what, sizeof what, "images of %ux%u", h, w);
        if ((rc = idx_check_end(gi, images_path, n, what, err, errlen)) < 0) goto done;
    }
    rc = gz_read_grow(gl, labels_path, keep, &lab, &got, err, errlen);
    if (rc < 0) goto done;
    if (got < keep) {
        rc = tn_error(err, errlen, TN_ETRUNC,
                      "%s: truncated: header says %u labels but the file holds only %zu",
                      labels_path, n, got);
        goto done;
    }
    if (keep == n && (rc = idx_check_end(gl, labels_path, n, "labels", err, errlen)) < 0)
        goto done;

    out->y = tn_xmalloc((size_t)keep * sizeof(int32_t));
    int32_t maxlab = 0;
    for (size_t i = 0; i < (size_t)keep; i++) {
        out->y[i] = lab[i];
        if (lab[i] > maxlab) maxlab = lab[i];
    }
    out->n = (int64_t)keep;
    out->d = (int32_t)d;
    out->channels = 1;
    out->height = (int32_t)h;
    out->width = (int32_t)w;
    out->classes = maxlab + 1 < 2 ? 2 : maxlab + 1;
    rc = 0;

done:
    free(lab);
    if (gi) gzclose(gi);
    if (gl) gzclose(gl);
    if (rc < 0) ds_clear(out);
    return rc;
}

/* Sets *out (yours to free) to dir/name or dir/name.gz, whichever exists. */
static int find_idx_file(const char *dir, const char *name, char **out, char *err,
                         size_t errlen) {
    size_t dl = strlen(dir), nl = strlen(name);
    int slash = dl > 0 && dir[dl - 1] == '/';
    char *p = tn_xmalloc(dl + nl + 5);
    snprintf(p, dl + nl + 5, "%s%s%s", dir, slash ? "" : "/", name);
    struct stat st;
    if (stat(p, &st) == 0) {
        *out = p;
        return 0;
    }
    int e = errno;
    strcat(p, ".gz");
    if (stat(p, &st) == 0) {
        *out = p;
        return 0;
    }
    if (e != ENOENT || errno != ENOENT) { /* not missing: the folder cannot be searched */
        int why = e != ENOENT ? e : errno;
        int rc = tn_error(err, errlen, TN_EIO, "cannot look for %s in %s: %s", name, dir,
                          strerror(why));
        free(p);
        return rc;
    }
    p[strlen(p) - 3] = '\0';
    int rc = tn_error(err, errlen, TN_ENOENT, "%s (or %s.gz) not found; " DS_HINT, p, name);
    free(p);
    return rc;
}

int ds_load_idx_dir(const char *dir, int train, int64_t limit, ds_dataset *out,
                    char *err, size_t errlen) {
    if (!out) return tn_error(err, errlen, TN_EINVAL, "ds_load_idx_dir: no output dataset");
    memset(out, 0, sizeof(*out));
    if (!dir || !*dir)
        return tn_error(err, errlen, TN_EINVAL, "ds_load_idx_dir: no data folder given");
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return tn_error(err, errlen, TN_ENOENT, "data folder %s not found; " DS_HINT,
                            dir);
        return tn_error(err, errlen, TN_EIO, "data folder %s: %s", dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return tn_error(err, errlen, TN_ENOENT, "data folder %s is not a folder; " DS_HINT,
                        dir);

    const char *iname = train ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte";
    const char *lname = train ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte";
    char *ipath = NULL, *lpath = NULL;
    int rc = find_idx_file(dir, iname, &ipath, err, errlen);
    if (rc == 0) rc = find_idx_file(dir, lname, &lpath, err, errlen);
    if (rc == 0) rc = ds_load_idx(ipath, lpath, limit, out, err, errlen);
    free(ipath);
    free(lpath);
    return rc;
}

/* ---------------------------------------------------------------------------------
 * CSV
 * --------------------------------------------------------------------------------- */

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* Parses one field (s, NUL-terminated, surrounding blanks allowed) as a number.
 * Returns 0 and sets *v, or TN_EINVAL (no message) when the field is not a number. Infinities and NaN
 * parse here; callers that need finite values check. */
static int parse_number(const char *s, double *v) {
    char *end;
    while (is_blank(*s)) s++;
    if (!*s) return TN_EINVAL;
    /* decimal only: strtod's hexadecimal ("0x10" is 16) is not what a CSV file means */
    const char *digits = s + (*s == '+' || *s == '-'); /* (blanks skipped above) */
    if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) return TN_EINVAL;
    double x = strtod(s, &end);
    if (end == s) return TN_EINVAL;
    while (is_blank(*end)) end++;
    if (*end) return TN_EINVAL;
    *v = x; /* ERANGE: overflow gives +-HUGE_VAL (caught as not finite), underflow ~0 */
    return 0;
}

/* Splits line (modified in place) at commas into fields; *fields grows as needed.
 * Returns the number of fields. */
static size_t split_fields(char *line, char ***fields, size_t *cap) {
    size_t n = 0;
    char *p = line;
    for (;;) {
        if (n == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            *fields = tn_xrealloc(*fields, *cap * sizeof(char *));
        }
        (*fields)[n++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = '\0';
        p = c + 1;
    }
    return n;
}

/* A field as messages show it: leading blanks dropped (%.40s bounds its length). */
static const char *shown(const char *s) {
    while (is_blank(*s)) s++;
    return s;
}

/* What ds_load_csv knows of the file while it reads it. */
typedef struct csv_reader {
    const char *path;
    int label_column;    /* as given: negative counts from the end */
    float scale;
    size_t ncols;        /* columns per line, set by the first data line */
    size_t lc;           /* the label column, 0-based */
    size_t xcap, ycap;   /* rows of out->x and out->y allocated */
    int32_t maxlab;      /* the largest label so far */
} csv_reader;

/* Sets the columns from the first data line, which has nf fields: 0, or an error. */
static int csv_columns(csv_reader *c, size_t nf, long long lineno, char *err, size_t errlen) {
    if (nf < 2)
        return tn_error(err, errlen, TN_EFORMAT,
                        "%s: line %lld has 1 column; expected a label and at least one "
                        "feature",
                        c->path, lineno);
    if (nf - 1 > DS_MAX_FEATURES)
        return tn_error(err, errlen, TN_EFORMAT,
                        "%s: line %lld has %zu columns, more than the %d features supported",
                        c->path, lineno, nf, DS_MAX_FEATURES);
    long long l = c->label_column < 0 ? (long long)nf + c->label_column : c->label_column;
    if (l < 0 || l >= (long long)nf)
        return tn_error(err, errlen, TN_EINVAL,
                        "%s: label column %d is out of range: line %lld has %zu columns",
                        c->path, c->label_column, lineno, nf);
    c->ncols = nf;
    c->lc = (size_t)l;
    return 0;
}

/* Appends example n, the line's fields, to out: 0, or an error naming the field. */
static int csv_example(csv_reader *c, char **fields, int64_t n, long long lineno,
                       ds_dataset *out, char *err, size_t errlen) {
    size_t d = c->ncols - 1;
    if ((size_t)n * d + d > c->xcap) {
        c->xcap = c->xcap ? c->xcap * 2 : d * 256;
        out->x = tn_xrealloc(out->x, c->xcap * sizeof(float));
    }
    if ((size_t)n + 1 > c->ycap) {
        c->ycap = c->ycap ? c->ycap * 2 : 256;
        out->y = tn_xrealloc(out->y, c->ycap * sizeof(int32_t));
    }
    float *xr = out->x + (size_t)n * d;
    for (size_t col = 0; col < c->ncols; col++) {
        const char *field = fields[col];
        double v;
        if (parse_number(field, &v) < 0)
            return tn_error(err, errlen, TN_EFORMAT,
                            "%s: line %lld, column %zu: '%.40s' is not a number", c->path,
                            lineno, col + 1, shown(field));
        if (col == c->lc) {
            const char *why = NULL;
            if (!isfinite(v) || v != floor(v)) why = "is not an integer";
            else if (v < 0) why = "is negative";
            else if (v > CSV_MAX_LABEL) why = "is too large (at most 65535)";
            if (why)
                return tn_error(err, errlen, TN_EFORMAT,
                                "%s: line %lld, column %zu: label '%.40s' %s", c->path,
                                lineno, col + 1, shown(field), why);
            out->y[n] = (int32_t)v;
            if (out->y[n] > c->maxlab) c->maxlab = out->y[n];
            continue;
        }
        double scaled = v * c->scale;
        if (!isfinite(v))
            return tn_error(err, errlen, TN_EFORMAT,
                            "%s: line %lld, column %zu: '%.40s' is not a finite number",
                            c->path, lineno, col + 1, shown(field));
        if (!isfinite(scaled) || fabs(scaled) > FLT_MAX)
            return tn_error(err, errlen, TN_EFORMAT,
                            "%s: line %lld, column %zu: '%.40s' times scale %g does not fit "
                            "in a float",
                            c->path, lineno, col + 1, shown(field), (double)c->scale);
        *xr++ = (float)scaled;
    }
    return 0;
}

/* Whether the first non-empty line, split into nf fields, is a header: not all
 * numbers. */
static int csv_is_header(char **fields, size_t nf) {
    double v;
    for (size_t i = 0; i < nf; i++)
        if (parse_number(fields[i], &v) != 0) return 1;
    return 0;
}

/* Sets the examples' count, features and classes, and a square image's shape. */
static void csv_finish(const csv_reader *c, int64_t n, ds_dataset *out) {
    out->n = n;
    out->d = (int32_t)(c->ncols - 1);
    out->classes = c->maxlab + 1 < 2 ? 2 : c->maxlab + 1;
    int32_t side = (int32_t)lround(sqrt((double)out->d));
    if ((int64_t)side * side == out->d) {
        out->channels = 1;
        out->height = side;
        out->width = side;
    }
}

int ds_load_csv(const char *path, int label_column, float scale, int64_t limit,
                ds_dataset *out, char *err, size_t errlen) {
    if (!out) return tn_error(err, errlen, TN_EINVAL, "ds_load_csv: no output dataset");
    memset(out, 0, sizeof(*out));
    if (!path) return tn_error(err, errlen, TN_EINVAL, "ds_load_csv: no file path given");
    if (!isfinite(scale))
        return tn_error(err, errlen, TN_EINVAL, "%s: scale %g is not a finite number",
                        path, (double)scale);

    char why[PATH_MAX + 128];
    int fd = tn_open_regular(path, "data file", why, sizeof why); /* never a FIFO's wait */
    if (fd == TN_ENOENT) return tn_error(err, errlen, TN_ENOENT, "%s: not found", path);
    if (fd < 0) return tn_error(err, errlen, TN_EIO, "%s", why);
    FILE *f = fdopen(fd, "r");
    if (!f) {
        int e = errno;
        close(fd);
        return tn_error(err, errlen, TN_EIO, "%s: cannot open: %s", path, strerror(e));
    }

    csv_reader c = {.path = path, .label_column = label_column, .scale = scale};
    char *line = NULL, **fields = NULL;
    size_t linecap = 0, fcap = 0;
    int64_t n = 0;
    long long lineno = 0;
    int seen_first = 0, had_header = 0, rc = 0;
    ssize_t len;
    while (!rc && (limit <= 0 || n < limit) && (len = getline(&line, &linecap, f)) >= 0) {
        lineno++;
        if ((size_t)len != strlen(line)) {
            rc = tn_error(err, errlen, TN_EFORMAT, "%s: line %lld contains a NUL byte",
                          path, lineno);
            break;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        /* a UTF-8 byte order mark (files saved by spreadsheets) is not part of the first
         * field: with it, a first line of numbers was taken for a header and lost */
        if (lineno == 1 && (unsigned char)line[0] == 0xef && (unsigned char)line[1] == 0xbb &&
            (unsigned char)line[2] == 0xbf)
            memmove(line, line + 3, (size_t)(len -= 3) + 1);
        const char *q = line;
        while (is_blank(*q)) q++;
        if (!*q) continue; /* empty line */

        size_t nf = split_fields(line, &fields, &fcap);
        if (!seen_first) {
            seen_first = 1;
            if ((had_header = csv_is_header(fields, nf))) continue;
        }
        if (c.ncols == 0)
            rc = csv_columns(&c, nf, lineno, err, errlen);
        else if (nf != c.ncols)
            rc = tn_error(err, errlen, TN_EFORMAT, "%s: line %lld has %zu columns, expected %zu",
                          path, lineno, nf, c.ncols);
        if (!rc) rc = csv_example(&c, fields, n, lineno, out, err, errlen);
        if (!rc) n++;
    }
    if (!rc && ferror(f))
        rc = tn_error(err, errlen, TN_EIO, "%s: read failed at line %lld: %s", path, lineno,
                      strerror(errno));
    else if (!rc && n == 0)
        rc = tn_error(err, errlen, TN_EFORMAT, "%s: holds no examples%s", path,
                      had_header ? " (only a header line)"
                      : lineno > 0 ? " (only empty lines)" : " (the file is empty)");
    if (!rc) csv_finish(&c, n, out);

    free(line);
    free(fields);
    fclose(f);
    if (rc < 0) ds_clear(out);
    return rc;
}
