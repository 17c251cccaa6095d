/*
 * checkpoint.h — crash-safe checkpoint files and the checkpoint folder.
 *
 * A checkpoint is a container of tagged binary sections (the trainer decides what
 * goes in them: configuration, parameters, optimiser state, counters, data order,
 * RNG state). The file has a versioned header, a section table and a CRC-32 per
 * section and over the header, so truncation and corruption are always detected.
 * Files are written atomically: a temporary file in the same folder, fsync, rename,
 * fsync of the folder; a crash at any moment leaves either the old set of
 * checkpoints or the new one, never a half-written file under a final name.
 * On-disk format: docs/checkpoint-format.md.
 */
#ifndef TN_CHECKPOINT_H
#define TN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CKPT_VERSION 1

/* One section to write: a tag (the trainer's own enum), and bytes it points to. */
typedef struct ckpt_section {
    uint32_t tag;
    const void *data;
    uint64_t size;
} ckpt_section;

/* A checkpoint read into memory and verified. Opaque; free with ckpt_file_free. */
typedef struct ckpt_file ckpt_file;

/* Writes the n sections to path atomically (see above), first deleting what
 * interrupted writes of path left beside it ("<path>.tmp.<digits>": a path has one
 * writer). Tags must be distinct.
 * Returns 0 or a negative TN_E* code (TN_EIO names the failing call and strerror,
 * e.g. a full disk; TN_EINVAL says that a folder at path is in the way of the rename,
 * which no retry can mend, with a hint to remove it); on failure no temporary file is
 * left and an existing file at path is untouched, except when only the final fsync of
 * the folder fails: the new file is then in place but may not survive a power cut. */
int ckpt_write(const char *path, const ckpt_section *sections, size_t n, char *err,
               size_t errlen);

/* Reads and verifies the checkpoint at path: magic, version (TN_EVERSION), sizes
 * (TN_ETRUNC when the file is shorter than it says), every CRC (TN_ECORRUPT).
 * On success *out is yours to free with ckpt_file_free. */
int ckpt_read(const char *path, ckpt_file **out, char *err, size_t errlen);

/* The section with this tag: its bytes (owned by f, valid until ckpt_file_free) and
 * size in *size; NULL when f has no such section. */
const void *ckpt_find(const ckpt_file *f, uint32_t tag, uint64_t *size);

void ckpt_file_free(ckpt_file *f);

/* ---- The checkpoint folder: DIR/ckpt-<step, 12 digits>.ckpt ----
 * Only regular files by that name (links followed) are checkpoints; a folder or a FIFO
 * by such a name is never read or deleted (loads warn about it on their log, with the
 * hint to remove or rename it: a save of a folder's step fails, see ckpt_write). */

/* Writes DIR/ckpt-<step>.ckpt (creating DIR and its parents if needed), then
 * prunes: checkpoints with a higher step than this one go first (the run resumed
 * below them, so they were unusable), then the oldest, so that at most `keep` (>= 1)
 * remain; the file just written never goes. Temporary files left in DIR by an earlier
 * crash are removed. The path written is copied into path_out when it is not NULL. */
int ckpt_save(const char *dir, int64_t step, const ckpt_section *sections, size_t n,
              int keep, char *path_out, size_t path_len, char *err, size_t errlen);

/* Loads the newest checkpoint in DIR that verifies. Each newer one that fails to
 * verify is reported on log (when not NULL) as "warning: checkpoint PATH is
 * unusable (REASON); trying the previous one" and skipped. Returns 0 with *out set
 * (and its path in path_out), or 0 with *out = NULL when DIR does not exist or holds
 * no checkpoint file at all (a fresh start), or a negative TN_E* code when there are
 * checkpoint files but none verifies. */
int ckpt_load_newest(const char *dir, ckpt_file **out, char *path_out, size_t path_len,
                     FILE *log, char *err, size_t errlen);

/* What a caller checks in a checkpoint that verified, before trusting it: f is the
 * file, step the step in its name, ctx the caller's. Returns 0 when f is usable, or a
 * negative TN_E* code with the reason, without the path, in why (which names the field,
 * e.g. "state: step_in_epoch 1000000 is outside the epoch's 120 steps"). */
typedef int (*ckpt_check_fn)(const ckpt_file *f, int64_t step, void *ctx, char *why,
                             size_t whylen);

/* ckpt_load_newest, with a check of each file that verifies (check may be NULL): a
 * file that check refuses is reported and skipped just as a damaged one, with the
 * check's reason, and when none is usable the result is the newest one's code. */
int ckpt_load_newest_checked(const char *dir, ckpt_check_fn check, void *ctx,
                             ckpt_file **out, char *path_out, size_t path_len, FILE *log,
                             char *err, size_t errlen);

#endif
