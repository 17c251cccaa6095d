/*
 * jobdir.h — a study's job folder (trainingInput.jobDir): its lock and its owner.
 *
 * The trials of a study write into JOB_DIR/N (logs, metric files, a trainer's
 * checkpoints), and a trial run again resumes from what is there. So a folder must
 * belong to one study: a new study that found another's trial folders would take their
 * checkpoints and results for its own. The folder holds two files of the tuner's:
 *
 *   .tuner.lock   flock'ed exclusively by the process that runs or claims the study
 *                 (run, resume, create), which writes its pid and host there;
 *                 shared by ask and tell, so that asks and tells go on together but
 *                 never beside a running tuner. Released when the process dies, even
 *                 by SIGKILL.
 *   .tuner-study  the mark: which study of which store owns the folder (JSON), written
 *                 atomically (a temporary file, fsync, rename) under the lock.
 *
 * Design and rules: docs/tuner.md, "The job folder".
 */
#ifndef TN_TUNER_JOBDIR_H
#define TN_TUNER_JOBDIR_H

#include <stddef.h>
#include <stdint.h>

/* The mark's name in a job folder (for messages). */
#define JD_MARK ".tuner-study"

/* jd_lock's answers when another process holds the lock (positive values: not errors
 * of this process): held exclusively (a run, resume or create), or, to an exclusive
 * lock, shared (asks and tells). */
#define JD_BUSY 1
#define JD_SHARED 2

/* Takes the lock of the job folder job_dir (JOB_DIR/.tuner.lock), making the folder
 * (mkdir -p) and the file when needed: exclusive (run, resume, create), with "tuner
 * WHAT (pid PID)" and "host HOST" written into the file for those it refuses to name;
 * or shared (ask, tell). Never waits. Returns 0 with *fd, the lock (closing it releases
 * the lock; -1 for a shared lock whose file can be neither opened nor made: no process
 * can hold it then); JD_BUSY with a message naming the holder when another process
 * holds it exclusively (the file keeps the last holder's name: one whose process has
 * ended, as this host tells, is not given as the holder's), JD_SHARED (to an exclusive
 * lock) when asks or tells hold it shared; or TN_EIO with a message (naming the folder
 * that could not be made, for an exclusive lock; a shared one goes on to open the
 * file). */
int jd_lock(const char *job_dir, int exclusive, const char *what, int *fd, char *err,
            size_t errlen);

/* A study as the owner of a job folder. */
typedef struct jd_owner {
    const char *store_id;  /* its store's identity (st_store_id) */
    const char *store;     /* its store's path, for people to read */
    const char *study;     /* its name */
    int64_t study_id;      /* its id in the store; 0 for a study not stored yet */
} jd_owner;

/* Whether the study `me` may use job_dir (call it under the exclusive lock): the folder
 * has no mark, or `me`'s (same store identity, id and name), and, without a mark, no
 * trial folder (JOB_DIR/N) numbered above `trials`, the trials the study has (0 for a
 * new study: none at all, since a tuner older than the mark left its trials unmarked).
 * A folder that does not exist is free. Returns 0; TN_EINVAL with a message naming
 * whose the folder is; TN_EFORMAT when the mark is damaged (not the JSON the tuner
 * writes, not a file, far too large), the message naming it; or TN_EIO when it cannot
 * be read (permissions, the disk), the message naming it and why. No hint: what to do
 * depends on the command. */
int jd_check(const char *job_dir, const jd_owner *me, int64_t trials, char *err,
             size_t errlen);

/* Marks job_dir as `me`'s (JOB_DIR/.tuner-study), crash-safe: the mark is written to a
 * temporary file, synced, renamed over the old one and the folder synced, so a reader
 * finds the old mark or the new one whole. Returns 0 or TN_EIO with a message. */
int jd_claim(const char *job_dir, const jd_owner *me, char *err, size_t errlen);

#endif
