/*
 * fileio.h — opening and reading files that someone else controls (a spec, a trial's
 * metric file or log), so that nothing they are can block or swamp the reader; and
 * the one mkdir -p (tn_make_dirs).
 *
 * A trial may make its metric file a FIFO, a spec path may be /dev/zero: opening such
 * things the usual way blocks (a FIFO without a writer) or never ends (a device). These
 * open without blocking, accept regular files only (with a message naming the file and
 * what it is), and read at most a given size. Used by the metric-file reader, the spec
 * loader and `tuner logs`; see docs/reliability.md. Also rm -rf (tn_remove_tree).
 */
#ifndef TN_FILEIO_H
#define TN_FILEIO_H

#include <stddef.h>

/* Opens path read-only without blocking, close-on-exec, and checks it is a regular
 * file; the descriptor returned reads normally (blocking mode restored), and is yours
 * to close. Returns the fd, TN_ENOENT when there is no such file, or TN_EIO with a
 * message naming the file ("... is a FIFO, not a regular file"). `what` names the file
 * in messages ("metric file", "spec"). */
int tn_open_regular(const char *path, const char *what, char *err, size_t errlen);

/* Reads the whole regular file at path into *out (NUL-terminated; yours to free) and
 * its size into *len, refusing one larger than max bytes with a message that says the
 * limit. Returns 0, TN_ENOENT, or TN_EIO / TN_EINVAL with a message. */
int tn_read_file(const char *path, const char *what, size_t max, char **out, size_t *len,
                 char *err, size_t errlen);

/* mkdir -p: makes the folder path and every missing folder above it (mode 0755, less
 * the umask); those already there are fine, whatever mkdir says of them (some file
 * systems answer EACCES or EROFS before EEXIST). Returns 0, or TN_EIO with a message
 * naming the folder that could not be made and why ("cannot create folder /a/b:
 * Permission denied", "...: a file is in the way"), errno left at mkdir's, or
 * TN_EINVAL for an empty path. */
int tn_make_dirs(const char *path, char *err, size_t errlen);

/* rm -rf, for folders the project itself makes (a package's build folder): removes path
 * and, if it is a folder, everything in it, without following symbolic links (a link
 * is removed, not what it points to) or going into another file system mounted below
 * it. No path is fine. Returns 0, or TN_EIO with a message naming what could not be
 * removed and why. */
int tn_remove_tree(const char *path, char *err, size_t errlen);

#endif
