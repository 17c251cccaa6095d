/*
 * collective.h — collectives between the replicas of a multi-worker job: a TCP ring,
 * and shared memory for the all-reduce when every replica is on one host.
 *
 * The replicas (chief and workers of TF_CONFIG, in rank order) form a ring: each
 * listens on its own TF_CONFIG address, connects to the next rank and accepts the
 * previous one. Opening the ring waits for every peer (retrying refused connections)
 * up to a timeout that names the peer still missing, and checks in a handshake that
 * every replica runs the same configuration (a hash of the flags that must agree).
 *
 *   all-reduce   ring reduce-scatter then all-gather, n-1 steps each: every rank
 *                sends and receives 2(n-1)/n of the buffer, whatever n is; sends and
 *                receives overlap, and received data is reduced as it arrives.
 *                Optional bf16 on the wire (half the bytes; the sums stay float32,
 *                and every rank ends with the same bits).
 *   broadcast    from rank 0, pipelined along the ring in chunks.
 *
 * When every replica runs on the same host (rank 0's segment in /dev/shm can be
 * mapped by all), the all-reduce sums in shared memory instead (shm.h): no byte goes
 * through the kernel's TCP stack. The ring stays up for everything else and for
 * noticing a lost peer. CL_AUTO picks shared memory where it can, TCP elsewhere.
 *
 * Every rank ends an all-reduce with identical bytes (each segment's sum is computed
 * once and then copied), so replicas that apply the same update stay identical.
 *
 * Failure: a peer that dies closes its sockets, and the neighbours see it at once
 * (end of stream, reset); a peer that stops answering is given up after the timeout.
 * Either way the call fails with a message naming the lost peer, and the ring is
 * unusable (close it). A collective carries a sequence number, so replicas that fall
 * out of step are reported rather than silently mixing data.
 *
 * With one rank every call returns at once (the single-replica path is the same).
 * Design: docs/distributed.md.
 */
#ifndef TN_COLLECTIVE_H
#define TN_COLLECTIVE_H

#include <stddef.h>
#include <stdint.h>

typedef struct cl_ring cl_ring;

enum cl_precision { CL_FP32 = 0, CL_BF16 = 1 };
enum cl_transport { CL_AUTO = 0, CL_TCP = 1, CL_SHM = 2 }; /* of the all-reduce */

typedef struct cl_peer {
    const char *name; /* for messages: "chief 0", "worker 1" */
    const char *addr; /* "host:port" (IPv6 "[addr]:port") */
} cl_peer;

/* Opens the ring of n peers as rank `rank`: listens on peers[rank].addr, connects to
 * the next rank and accepts the previous one, all within timeout seconds (refused
 * connections are retried), then picks the all-reduce's transport (`transport`; with
 * CL_SHM, replicas not all on one host are an error). Peers must agree on n and on
 * config_hash (see cl_open_config). On success *out is yours to close with cl_close.
 * Errors name the peer: TN_EPEER (a peer missing, lost or silent: "timed out after
 * 30 s waiting for worker 1 at localhost:41234"), TN_EINVAL (a peer of this job that
 * disagrees on n, its rank or the configuration, or this replica itself under another
 * spelling of its address: running it again cannot help), TN_EIO. */
int cl_open(const cl_peer *peers, int n, int rank, double timeout, uint64_t config_hash,
            int transport, cl_ring **out, char *err, size_t errlen);

/* What the peers of a ring must agree on, in parts, so that a mismatch names what
 * differs: part[i] is a hash (cl_hash) of one aspect of the configuration and name[i]
 * says what it is, for "worker 0 (HOST:PORT) runs with a different configuration:
 * NAME differs from this replica's; hint: HINT"; parts after the last named one are
 * unused (0). cl_open's config_hash is one part named "its flags or data". */
#define CL_CONFIG_PARTS 8
typedef struct cl_config {
    uint64_t part[CL_CONFIG_PARTS];
    const char *name[CL_CONFIG_PARTS]; /* static strings, or NULL for an unused part */
    const char *hint[CL_CONFIG_PARTS]; /* what to do; NULL: give every replica the same
                                          flags and data */
    uint64_t job; /* which job the ring is (a hash of TF_CONFIG's trial and job), or 0.
                     A replica of another job is turned away and the wait goes on (its
                     port may be one an earlier trial's replica still holds; a timeout's
                     message then says so); one of this job given another cluster (the
                     peers' addresses in order) is an error (TN_EINVAL). */
} cl_config;

/* cl_open with the configuration in parts (the peers compare every part). */
int cl_open_config(const cl_peer *peers, int n, int rank, double timeout,
                   const cl_config *config, int transport, cl_ring **out, char *err,
                   size_t errlen);
void cl_close(cl_ring *r);

int cl_rank(const cl_ring *r);
int cl_size(const cl_ring *r);

/* The all-reduce's transport (CL_TCP or CL_SHM), and why, for the logs: "shared
 * memory (...)" or "TCP (...)"; "" with one rank. Owned by the ring. */
int cl_transport(const cl_ring *r);
const char *cl_transport_note(const cl_ring *r);

/* Sums buf (n floats) over all ranks, in place. With CL_BF16 the values travel as
 * bfloat16 (rounded to nearest even); the result is then the bf16-rounded sum, the
 * same on every rank. A peer lost or silent for the timeout: TN_EIO naming it. */
int cl_allreduce(cl_ring *r, float *buf, size_t n, int precision, char *err, size_t errlen);

/* Sums buf (n doubles) over all ranks, in place: for counters and metric sums. */
int cl_allreduce_f64(cl_ring *r, double *buf, size_t n, char *err, size_t errlen);

/* Copies rank 0's `bytes` bytes of buf to every other rank's buf. */
int cl_broadcast(cl_ring *r, void *buf, size_t bytes, char *err, size_t errlen);

/* float32 <-> bfloat16 (round to nearest even; NaN stays NaN). */
uint16_t cl_to_bf16(float f);
float cl_from_bf16(uint16_t h);

/* 64-bit FNV-1a over bytes, chained from h (start with CL_HASH_INIT): for the
 * configuration hash the replicas compare. */
#define CL_HASH_INIT 0xcbf29ce484222325ull
uint64_t cl_hash(uint64_t h, const void *data, size_t bytes);

#endif
