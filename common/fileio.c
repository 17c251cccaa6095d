/*
 * fileio.c — opening and reading files without being blocked or swamped by them, and
 * making folders (see fileio.h).
 */
#include "common/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/status.h"

static const char *kind_of(mode_t mode) {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

int tn_open_regular(const char *path, const char *what, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT) return tn_error(err, errlen, TN_ENOENT, "%s %s does not exist", what, path);
        return tn_error(err, errlen, TN_EIO, "cannot open %s %s: %s", what, path, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return tn_error(err, errlen, TN_EIO, "cannot read %s %s: %s", what, path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        const char *kind = kind_of(st.st_mode);
        return tn_error(err, errlen, TN_EIO, "%s %s is %s%s", what, path, kind,
                        strcmp(kind, "not a regular file") ? ", not a regular file" : "");
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

int tn_read_file(const char *path, const char *what, size_t max, char **out, size_t *len,
                 char *err, size_t errlen) {
    *out = NULL;
    *len = 0;
    int fd = tn_open_regular(path, what, err, errlen);
    if (fd < 0) return fd;
    size_t cap = 8192, n = 0;
    char *buf = tn_xmalloc(cap + 1);
    int rc = 0;
    for (;;) {
        if (n == cap) {
            if (cap > max) break;
            cap *= 2;
            buf = tn_xrealloc(buf, cap + 1);
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            rc = tn_error(err, errlen, TN_EIO, "cannot read %s %s: %s", what, path, strerror(errno));
            break;
        }
        if (got == 0) break;
        n += (size_t)got;
        if (n > max) break;
    }
    close(fd);
    if (rc == 0 && n > max)
        rc = tn_error(err, errlen, TN_EINVAL, "%s %s is larger than %zu bytes, the most it may be",
                      what, path, max);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* mkdir dir unless a folder is there already. */
static int make_dir(const char *dir, char *err, size_t errlen) {
    if (mkdir(dir, 0755) == 0) return 0;
    int e = errno;
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
    int rc = tn_error(err, errlen, TN_EIO, "cannot create folder %s: %s", dir,
                      e == EEXIST ? "a file is in the way" : strerror(e));
    errno = e; /* for a caller's hint (a full disk) */
    return rc;
}

int tn_make_dirs(const char *path, char *err, size_t errlen) {
    if (!path[0])
        return tn_error(err, errlen, TN_EINVAL, "no folder to create: the path is empty");
    char *dir = tn_xstrdup(path);
    int rc = 0;
    for (char *p = dir + 1;; p++) { /* each folder on the way, then path */
        if (*p != '/' && *p != '\0') continue;
        char c = *p;
        *p = '\0';
        rc = make_dir(dir, err, errlen);
        *p = c;
        if (rc || !c) break;
    }
    int e = errno;
    free(dir);
    errno = e;
    return rc;
}

/* tn_remove_tree's first failure (nftw's callback has no context of its own). */
static _Thread_local int rm_errno;
static _Thread_local char rm_path[4096];

static int remove_one(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb, (void)ftw;
    /* a folder it could not read (FTW_DNR) may be empty still: rmdir says */
    int rc = type == FTW_DP || type == FTW_DNR ? rmdir(path) : unlink(path);
    if (rc != 0 && errno != ENOENT) {
        rm_errno = errno;
        snprintf(rm_path, sizeof rm_path, "%s", path);
        return 1; /* stops the walk */
    }
    return 0;
}

int tn_remove_tree(const char *path, char *err, size_t errlen) {
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return errno == ENOENT ? 0
                               : tn_error(err, errlen, TN_EIO, "cannot remove %s: %s", path,
                                          strerror(errno));
    rm_errno = 0;
    rm_path[0] = '\0';
    /* depth first, so that a folder is empty when its turn comes */
    int rc = nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    if (rc == 0) return 0;
    int e = rm_errno ? rm_errno : errno;
    return tn_error(err, errlen, TN_EIO, "cannot remove %s: %s", rm_path[0] ? rm_path : path,
                    strerror(e));
}
