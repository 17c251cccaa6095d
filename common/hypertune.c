/*
 * hypertune.c — writer of the cloudml-hypertune metric file (see hypertune.h).
 *
 * The writer holds the last HT_MAX_RECORDS records as encoded JSON lines in a ring
 * and rewrites the file from them on every report: write PATH.tmp, fsync, rename.
 */
#include "common/hypertune.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/status.h"
#include "common/text.h"

struct ht_writer {
    char *path;                    /* the metric file */
    char *trial;                   /* trial id written into every record */
    char *lines[HT_MAX_RECORDS];   /* ring of encoded records, oldest at head */
    size_t head;                   /* index of the oldest record */
    size_t count;                  /* records held, <= HT_MAX_RECORDS */
};

static void ring_push(ht_writer *w, char *line) {
    if (w->count == HT_MAX_RECORDS) {
        free(w->lines[w->head]);
        w->lines[w->head] = line;
        w->head = (w->head + 1) % HT_MAX_RECORDS;
    } else {
        w->lines[(w->head + w->count) % HT_MAX_RECORDS] = line;
        w->count++;
    }
}

/* mkdir -p of the folder holding path. */
static int make_parent_dirs(const char *path, char *err, size_t errlen) {
    char *dir = tn_xstrdup(path);
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash && slash != dir) {
        *slash = '\0';
        char why[1024];
        if ((rc = tn_make_dirs(dir, why, sizeof why)))
            rc = tn_error(err, errlen, rc, "metric file %s: %s", path, why);
    }
    free(dir);
    return rc;
}

/* Loads the valid JSON-object lines of an existing file into the ring. */
/* Takes the records already in the file (a restarted replica's earlier ones). The file
 * must be a regular file, if there: a FIFO would block the open (or the read) for
 * good, and the rename that writes it would replace a folder's or device's name. */
static int load_existing(ht_writer *w, char *err, size_t errlen) {
    int fd = open(w->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        return tn_error(err, errlen, TN_EIO, "cannot read metric file %s: %s", w->path,
                        strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return tn_error(err, errlen, TN_EIO, "cannot read metric file %s: %s", w->path,
                        strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return tn_error(err, errlen, TN_EIO,
                        "metric file %s is %s, not a regular file; remove it, or set "
                        "CLOUD_ML_HP_METRIC_FILE to a file's path",
                        w->path, S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISDIR(sb.st_mode) ? "a folder"
                                                                              : "a special file");
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return tn_error(err, errlen, TN_EIO, "fdopen: %s", strerror(errno));
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        json_t *obj = json_loads(line, 0, NULL);
        if (json_is_object(obj)) ring_push(w, tn_xstrdup(line));
        json_decref(obj);
    }
    free(line);
    /* A read error is not the file's end: the records after it would be lost at the
     * next rewrite, which keeps only what was read. */
    int bad = ferror(f);
    int e = errno;
    fclose(f);
    if (bad)
        return tn_error(err, errlen, TN_EIO, "cannot read metric file %s: %s", w->path,
                        strerror(e));
    return 0;
}

int ht_writer_open(const char *path, const char *trial, ht_writer **out, char *err,
                   size_t errlen) {
    *out = NULL;
    if (!path || !*path) path = getenv("CLOUD_ML_HP_METRIC_FILE");
    if (!path || !*path) path = HT_DEFAULT_PATH;
    if (!trial) trial = getenv("CLOUD_ML_TRIAL_ID");
    if (!trial) trial = "";
    int rc = make_parent_dirs(path, err, errlen);
    if (rc) return rc;
    ht_writer *w = tn_xcalloc(1, sizeof *w);
    /* A symbolic link: its target is the file (the rename of each rewrite would
     * otherwise replace the link with a file of its own, and the target never change). */
    struct stat lsb;
    char *target = lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode) ? realpath(path, NULL) : NULL;
    w->path = target ? target : tn_xstrdup(path);
    w->trial = tn_xstrdup(trial);
    if ((rc = load_existing(w, err, errlen))) {
        ht_writer_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

static int rewrite_file(ht_writer *w, char *err, size_t errlen) {
    size_t tlen = strlen(w->path) + 32;
    char *tmp = tn_xmalloc(tlen);
    snprintf(tmp, tlen, "%s.tmp.%ld", w->path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        int rc = tn_error(err, errlen, TN_EIO, "cannot write metric file %s: %s", tmp,
                          strerror(errno));
        free(tmp);
        return rc;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        free(tmp);
        return tn_error(err, errlen, TN_EIO, "fdopen: %s", strerror(errno));
    }
    for (size_t i = 0; i < w->count; i++) {
        fputs(w->lines[(w->head + i) % HT_MAX_RECORDS], f);
        fputc('\n', f);
    }
    int failed = fflush(f) != 0 || fsync(fileno(f)) != 0;
    int saved = errno;
    if (fclose(f) != 0 && !failed) {
        failed = 1;
        saved = errno; /* the close's own error, not a stale one */
    }
    if (!failed && rename(tmp, w->path) != 0) {
        failed = 1;
        saved = errno;
    }
    if (failed) {
        unlink(tmp);
        free(tmp);
        return tn_error(err, errlen, TN_EIO, "cannot write metric file %s: %s%s", w->path,
                        strerror(saved),
                        saved == ENOSPC  ? " (the disk is full)"
                        : saved == EFBIG ? " (the file-size limit, ulimit -f, is reached)"
                                         : "");
    }
    free(tmp);
    return 0;
}

int ht_report(ht_writer *w, int64_t global_step, const ht_metric *metrics, size_t n,
              const char *checkpoint_path, double timestamp, char *err, size_t errlen) {
    char num[64];
    if (!isfinite(timestamp))
        return tn_error(err, errlen, TN_EINVAL, "metric timestamp is not a finite number");
    json_t *obj = json_object();
    json_object_set_new(obj, "checkpoint_path",
                        json_string(checkpoint_path ? checkpoint_path : ""));
    snprintf(num, sizeof num, "%lld", (long long)global_step);
    json_object_set_new(obj, "global_step", json_string(num));
    for (size_t i = 0; i < n; i++) {
        const char *name = metrics[i].name;
        if (!strcmp(name, "checkpoint_path") || !strcmp(name, "global_step") ||
            !strcmp(name, "timestamp") || !strcmp(name, "trial")) {
            json_decref(obj);
            return tn_error(err, errlen, TN_EINVAL, "metric name '%s' is reserved", name);
        }
        json_object_set_new(obj, name,
                            json_string(tn_format_double(metrics[i].value, num, sizeof num)));
    }
    json_object_set_new(obj, "timestamp", json_real(timestamp));
    json_object_set_new(obj, "trial", json_string(w->trial));
    char *line = json_dumps(obj, JSON_PRESERVE_ORDER | JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(obj);
    if (!line) tn_out_of_memory("a metric record"); /* jansson's only failure here */
    ring_push(w, tn_xstrdup(line));
    free(line);
    return rewrite_file(w, err, errlen);
}

const char *ht_writer_path(const ht_writer *w) { return w->path; }

void ht_writer_free(ht_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->count; i++) free(w->lines[(w->head + i) % HT_MAX_RECORDS]);
    free(w->path);
    free(w->trial);
    free(w);
}
