/*
 * shm.h — the shared-memory transport of the all-reduce, for replicas on one host.
 *
 * Over loopback TCP every byte of an all-reduce is copied twice by the kernel and
 * goes through the network stack; replicas that share a host can instead sum their
 * gradients in memory they all map, as NCCL's SHM transport does. collective.c sets
 * the segment up over the TCP ring, which stays open: it carries the other
 * collectives, and a closed socket is how a dead peer shows (see cl_open).
 *
 * The segment (a file in /dev/shm, or $TRAINER_SHM_DIR) holds two sets of one slot
 * per rank (double buffering) and, per rank, three counters on cache lines of their
 * own: chunks written, reduced and read. An all-reduce goes a slot's worth at a time:
 *   1. each rank copies the chunk into its slot (except its own part) and counts it
 *      written;
 *   2. once all have, rank q sums part q of the chunk, its own values first and then
 *      the other slots in rank order, into its result and into its slot, and counts
 *      the chunk reduced;
 *   3. once all have, each rank copies the other parts' sums into its result and
 *      counts the chunk read; a set is written again only after every rank has read it.
 * Each sum is computed once, so every rank ends with the same bits. With bf16 the
 * slots hold bfloat16: the peers' values and the sums are rounded, as on the wire.
 *
 * Waiting spins briefly, then sleeps on a futex in the segment; while asleep a rank
 * wakes every few ms to run the caller's liveness check and to see whether a peer has
 * given up (sm_abort), and gives a peer up after the timeout without progress.
 * Linux only (futexes), like the rest of the trainer's networking.
 */
#ifndef TN_SHM_H
#define TN_SHM_H

#include <stddef.h>
#include <stdint.h>

typedef struct sm_seg sm_seg;

/* What sm_allreduce calls back into (collective.c: the TCP ring). */
typedef struct sm_hooks {
    /* every few ms while waiting: 0 if the peers look alive, else an error */
    int (*alive)(void *ctx, char *err, size_t errlen);
    /* rank q is at another collective (its 16-byte header differs from mine) */
    int (*mismatch)(void *ctx, int q, const void *mine, const void *theirs, char *err,
                    size_t errlen);
    void *ctx;
} sm_hooks;

/* The directory segments live in: $TRAINER_SHM_DIR, else /dev/shm. */
const char *sm_dir(void);

/* Rank 0 creates a segment for n ranks and reserves its memory (a full /dev/shm is an
 * error here, not a SIGBUS later); *name (a file name in sm_dir()) and cookie[2] are
 * what the other ranks need to attach. names[q] names rank q in messages. */
int sm_create(int n, const char *const *names, char *name, size_t namelen,
              uint64_t cookie[2], sm_seg **out, char *err, size_t errlen);

/* The other ranks map rank 0's segment; it must be for n ranks and carry the cookie
 * (so a replica on another host never takes a stranger's file for it). */
int sm_attach(const char *name, const uint64_t cookie[2], int n, int rank,
              const char *const *names, sm_seg **out, char *err, size_t errlen);

/* Removes the segment's name (once every rank has attached; the mappings stay). */
void sm_unlink(const char *name);

/* Sums buf (n floats) over the ranks, in place. header is the collective's 16-byte
 * header, compared with every peer's (hooks->mismatch on a difference). A peer
 * silent for timeout seconds, one that gave up, or a failed liveness check: TN_EPEER
 * naming it. */
int sm_allreduce(sm_seg *s, float *buf, size_t n, int bf16, const void *header,
                 double timeout, const sm_hooks *hooks, char *err, size_t errlen);

/* Tells the peers this rank has given up (why is shown in their errors), and wakes
 * them. After an error the segment is unusable. */
void sm_abort(sm_seg *s, const char *why);

void sm_close(sm_seg *s);

#endif
