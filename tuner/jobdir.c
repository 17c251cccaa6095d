/*
 * jobdir.c — a study's job folder: its lock and its ownership mark (see jobdir.h; the
 * rules: docs/tuner.md, "The job folder").
 */
#include "tuner/jobdir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/status.h"
#include "common/text.h"

#define JD_LOCK ".tuner.lock"
#define JD_MARK_MAX 65536 /* a mark is a few hundred bytes */

/* Whether the process that wrote `name` ("tuner run (pid N)") into the lock file is
 * known to have ended: no process here has its pid (ESRCH). Told only on the host that
 * wrote it (`host`, the file's second line; "" from a tuner that wrote none): a pid of
 * another host (a job folder on shared storage) says nothing here. A pid taken since by
 * another process keeps the name standing (rare). */
static int writer_has_ended(const char *name, const char *host) {
    const char *at = strstr(name, "(pid ");
    if (!at) return 0;
    char *end;
    long pid = strtol(at + 5, &end, 10);
    if (pid <= 0 || *end != ')') return 0; /* kill(0 or less) means process groups */
    char here[256] = "";
    if (host[0] && (gethostname(here, sizeof here - 1) != 0 || strcmp(host, here) != 0))
        return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Who holds the lock on fd, which this process could not take: shared holders
 * (JD_SHARED), or an exclusive one (JD_BUSY), named by what it wrote into the file
 * ("tuner run (pid N)"). The file keeps the last name written, so a holder that has
 * not written its own yet (or is no tuner) would be taken for the last one: a name
 * whose process has ended is said to be no holder. */
static int describe_holder(int fd, const char *path, char *err, size_t errlen) {
    if (flock(fd, LOCK_SH | LOCK_NB) == 0) { /* only shared holders: asks and tells */
        flock(fd, LOCK_UN);
        return tn_error(err, errlen, JD_SHARED,
                        "%s is held by a `tuner ask` or `tuner tell` of the study", path);
    }
    char text[512] = "";
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    const char *host = "";
    char *nl = strchr(text, '\n');
    if (nl) { /* the name, then "host HOST" */
        *nl++ = '\0';
        nl[strcspn(nl, "\n")] = '\0';
        if (strncmp(nl, "host ", 5) == 0) host = nl + 5;
    }
    for (char *p = text; *p; p++)
        if (!isprint((unsigned char)*p)) *p = ' ';
    if (!text[0])
        return tn_error(err, errlen, JD_BUSY,
                        "%s is held by a process that has not written its name in it", path);
    if (writer_has_ended(text, host))
        return tn_error(err, errlen, JD_BUSY,
                        "%s is held by a process that has not written its name in it; %s, "
                        "whose name is there, has ended",
                        path, text);
    return tn_error(err, errlen, JD_BUSY, "%s is held by %s", path, text);
}

int jd_lock(const char *job_dir, int exclusive, const char *what, int *fd, char *err,
            size_t errlen) {
    *fd = -1;
    /* An exclusive lock needs the folder; a shared one goes on without it (another
     * user's study, a read-only disk): the open below tells whether anything can hold
     * the lock there. */
    int rc = tn_make_dirs(job_dir, exclusive ? err : NULL, errlen);
    if (rc && exclusive) return rc;
    char *path = tn_xasprintf("%s/" JD_LOCK, job_dir);
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0 && !exclusive && (errno == EACCES || errno == EROFS || errno == ENOENT)) {
        f = open(path, O_RDONLY | O_CLOEXEC); /* another user's study: flock reads too */
        if (f < 0 && errno == ENOENT) { /* no file, and none can be made: no holder */
            free(path);
            return 0;
        }
    }
    if (f < 0) {
        rc = tn_error(err, errlen, TN_EIO, "cannot open %s: %s", path, strerror(errno));
        free(path);
        return rc;
    }
    if (flock(f, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
        int e = errno;
        rc = e == EWOULDBLOCK ? describe_holder(f, path, err, errlen)
                              : tn_error(err, errlen, TN_EIO, "cannot lock %s: %s", path,
                                         strerror(e));
        close(f);
        free(path);
        return rc;
    }
    if (exclusive) { /* for those it refuses: who holds it, and where that pid lives */
        char line[512], host[256] = "";
        if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
        int n = snprintf(line, sizeof line, "tuner %s (pid %ld)\nhost %s\n", what,
                         (long)getpid(), host);
        if (ftruncate(f, 0) != 0 || pwrite(f, line, (size_t)n, 0) != n) {
            /* the lock holds all the same; only the name of its holder is lost */
        }
    }
    free(path);
    *fd = f;
    return 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The trial folders in job_dir (subfolders named by a number 1, 2, ...): how many
 * are numbered above `above`, and the lowest few of those in list, as "3, 4, 7, ...".
 * A folder that cannot be read (none there) has none. */
static size_t trial_folders(const char *job_dir, int64_t above, char *list, size_t len) {
    list[0] = '\0';
    DIR *d = opendir(job_dir);
    if (!d) return 0;
    size_t n = 0, cap = 0;
    int64_t *nums = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *s = e->d_name;
        if (s[0] < '1' || s[0] > '9' || strspn(s, "0123456789") != strlen(s) || strlen(s) > 18)
            continue;
        char *path = tn_xasprintf("%s/%s", job_dir, s);
        struct stat sb;
        int dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
        free(path);
        int64_t number = strtoll(s, NULL, 10);
        if (!dir || number <= above) continue;
        if (n == cap) nums = tn_xrealloc(nums, (cap = cap ? 2 * cap : 16) * sizeof *nums);
        nums[n++] = number;
    }
    closedir(d);
    if (n) qsort(nums, n, sizeof *nums, cmp_i64);
    for (size_t i = 0; i < n && i < 6; i++) {
        size_t at = strlen(list);
        if (i == 5) snprintf(list + at, len - at, ", ...");
        else snprintf(list + at, len - at, "%s%lld", i ? ", " : "", (long long)nums[i]);
    }
    free(nums);
    return n;
}

/* The error for the mark at path that is there but damaged (how), so that whose its
 * folder is cannot be told. */
static int damaged_mark(const char *path, const char *how, char *err, size_t errlen) {
    return tn_error(err, errlen, TN_EFORMAT,
                    "job folder mark %s is damaged (%s): whose the folder is cannot be told",
                    path, how);
}

/* The error for the mark at path that tn_read_file refused (rc, why): one that is not
 * a regular file, or far too large, is damaged; a regular file that cannot be read
 * (permissions, the disk) is an I/O error, said as why says it. */
static int unusable_mark(const char *path, int rc, const char *why, char *err,
                         size_t errlen) {
    struct stat sb;
    if (rc == TN_EINVAL)
        return damaged_mark(path, "larger than any mark, which is a few hundred bytes", err,
                            errlen);
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return damaged_mark(path, S_ISDIR(sb.st_mode) ? "a folder, not a file"
                                                      : "not a regular file",
                            err, errlen);
    return tn_error(err, errlen, TN_EIO, "%s", why);
}

int jd_check(const char *job_dir, const jd_owner *me, int64_t trials, char *err,
             size_t errlen) {
    char *path = tn_xasprintf("%s/" JD_MARK, job_dir);
    char *text = NULL, why[512] = "";
    size_t len;
    int rc = tn_read_file(path, "job folder mark", JD_MARK_MAX, &text, &len, why, sizeof why);
    if (rc == TN_ENOENT) { /* unmarked: free unless it holds trial folders not ours */
        char list[96];
        size_t n = trial_folders(job_dir, trials, list, sizeof list);
        rc = n == 0 ? 0
                    : tn_error(err, errlen, TN_EINVAL,
                               "job folder %s holds trial folder%s (%s) that %s not this "
                               "study's, and no mark (%s) says whose (a tuner before this "
                               "one left none)",
                               job_dir, n == 1 ? "" : "s", list, n == 1 ? "is" : "are",
                               JD_MARK);
        free(path);
        return rc;
    }
    if (rc < 0) {
        rc = unusable_mark(path, rc, why, err, errlen);
        free(path);
        return rc;
    }
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    const char *store_id = NULL, *store = NULL, *study = NULL;
    json_int_t study_id = 0;
    if (json_unpack(doc, "{s:s, s:s, s:s, s:I}", "store_id", &store_id, "store", &store,
                    "study", &study, "study_id", &study_id) != 0 ||
        !store_id[0] || !store[0] || !study[0] || study_id < 1) {
        rc = damaged_mark(path, "not the JSON object naming a study and its store that the "
                                "tuner writes",
                          err, errlen);
    } else if (strcmp(store_id, me->store_id) != 0) {
        rc = tn_error(err, errlen, TN_EINVAL,
                      "job folder %s belongs to study %s of %s store %s; a study that "
                      "shared it would take that study's trials and checkpoints for its own",
                      job_dir, study, strcmp(store, me->store) == 0 ? "an earlier" : "the",
                      store);
    } else if (study_id != me->study_id || strcmp(study, me->study) != 0) {
        rc = tn_error(err, errlen, TN_EINVAL,
                      "job folder %s belongs to study %s of this store; a study that shared "
                      "it would take that study's trials and checkpoints for its own",
                      job_dir, study);
    }
    json_decref(doc);
    free(text);
    free(path);
    return rc;
}

int jd_claim(const char *job_dir, const jd_owner *me, char *err, size_t errlen) {
    json_t *doc = json_pack("{s:s, s:I, s:s, s:s}", "study", me->study,
                            "study_id", (json_int_t)me->study_id, "store", me->store,
                            "store_id", me->store_id);
    char *json = doc ? json_dumps(doc, JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    if (!json) tn_out_of_memory("the job folder's mark");
    char *text = tn_xasprintf("%s\n", json);
    free(json);
    char *path = tn_xasprintf("%s/" JD_MARK, job_dir);
    char *tmp = tn_xasprintf("%s.%ld.tmp", path, (long)getpid());
    size_t n = strlen(text);
    int rc = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 || write(fd, text, n) != (ssize_t)n || fsync(fd) != 0)
        rc = tn_error(err, errlen, TN_EIO, "cannot write %s: %s", tmp, strerror(errno));
    if (fd >= 0 && close(fd) != 0 && rc == 0)
        rc = tn_error(err, errlen, TN_EIO, "cannot write %s: %s", tmp, strerror(errno));
    if (rc == 0 && rename(tmp, path) != 0)
        rc = tn_error(err, errlen, TN_EIO, "cannot rename %s to %s: %s", tmp, path,
                      strerror(errno));
    if (rc) {
        unlink(tmp);
    } else { /* the rename survives a crash once the folder is synced */
        int dfd = open(job_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || fsync(dfd) != 0)
            rc = tn_error(err, errlen, TN_EIO, "cannot sync %s: %s", job_dir, strerror(errno));
        if (dfd >= 0) close(dfd);
    }
    free(text);
    free(tmp);
    free(path);
    return rc;
}
