/*
 * ps.h — the parameter-server strategy's two halves: the `ps` task that holds a shard
 * of the variables and applies the optimiser to it, and the client the chief and the
 * workers use to pull parameters and push gradients, asynchronously.
 *
 * The P parameters are split into contiguous near-equal shards, shard i of n on ps
 * task i ([P*i/n, P*(i+1)/n)). Each ps keeps its shard's parameters, its optimiser
 * state (opt_state over the shard, the same rules as one replica) and a version: the
 * number of updates applied. The chief initialises the ps tasks (from its checkpoint
 * or a fresh initialisation) unless they already hold variables, in which case it
 * adopts theirs (they are newer than any checkpoint). Workers pull (waiting until the
 * variables are initialised), compute, push; the ps applies each push at once.
 * Staleness of a push = updates applied on that shard between the pull and the push.
 * When the chief has finished it tells the ps tasks (ps_client_done); a worker's next
 * pull then answers PS_FINISHED, and a ps exits once every client has gone.
 *
 * Wire format (little-endian, one TCP connection per client and ps): requests and
 * replies are a fixed header (magic, op or status, three u64 arguments) followed by
 * float32 payloads whose sizes both sides know from the shard bounds. Every call
 * fails with TN_EPEER naming the ps ("lost ps 1 (localhost:4242): ...") when a ps
 * dies or stays silent for the timeout. Design: docs/distributed.md.
 */
#ifndef TN_PS_H
#define TN_PS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/tfconfig.h"
#include "trainer/optim.h"

/* Shard i of n over p parameters: [*lo, *hi). */
void ps_shard(size_t p, int n, int i, size_t *lo, size_t *hi);

/* ---- the ps task ---- */

typedef struct ps_server_config {
    const char *addr;      /* listen here: the ps task's TF_CONFIG address */
    int index, count;      /* this ps task's index, and the number of ps tasks */
    opt_config opt;        /* the optimiser (total_steps comes from the chief) */
    double timeout;        /* seconds a client may stay silent mid-message */
    double linger;         /* after the chief's "done": seconds to wait for the
                              remaining clients to go before exiting anyway */
} ps_server_config;

/* Serves until the chief has said training is done and every client has gone (or
 * `linger` seconds passed), or until *stop becomes non-zero (a signal handler's
 * flag; may be NULL). Progress lines go to out. Returns 0, or a negative TN_E* code
 * (cannot listen, ...) with the message in err. */
int ps_serve(const ps_server_config *c, volatile const int *stop, FILE *out, char *err,
             size_t errlen);

/* ---- the client (chief and workers) ---- */

typedef struct ps_client ps_client;

#define PS_FINISHED 1 /* ps_client_pull: the chief has finished training */

/* Connects to every ps task of the cluster (retrying refused connections for up to
 * timeout seconds; the error names the ps still missing) and says hello. p is the
 * parameter count and config_hash what the replicas must agree on (the ps tasks take
 * the chief's and refuse clients with another). *initialised tells whether every ps
 * already holds variables (then the chief adopts them). */
int ps_client_open(const tf_config *cluster, size_t p, double timeout, uint64_t config_hash,
                   ps_client **out, int *initialised, char *err, size_t errlen);
void ps_client_close(ps_client *c);

/* Chief: sets every ps's shard of parameters and optimiser state (m, and v when the
 * optimiser has it, else NULL), the update count t and the job's length
 * (opt->total_steps). A ps started with other optimiser settings than opt refuses
 * (TN_EMISMATCH naming the flag) and stays usable. */
int ps_client_init(ps_client *c, const float *params, const float *m, const float *v,
                   int64_t t, const opt_config *opt, char *err, size_t errlen);

/* Pulls all the parameters (p floats) into params; *version gets the updates applied
 * so far (ps 0's count). Waits while the chief has not initialised the variables.
 * Returns 0, PS_FINISHED, or a negative code. */
int ps_client_pull(ps_client *c, float *params, int64_t *version, char *err, size_t errlen);

/* Pushes gradients (p floats) computed from the last pull; each ps applies them to
 * its shard. *staleness (may be NULL) gets the updates other clients applied between
 * that pull and this push. */
int ps_client_push(ps_client *c, const float *grads, int64_t *staleness, char *err,
                   size_t errlen);

/* Chief, for checkpoints: every shard's parameters, m and v (v may be NULL when the
 * optimiser has no second buffer), the update count t and the version. */
int ps_client_fetch(ps_client *c, float *params, float *m, float *v, int64_t *t,
                    int64_t *version, char *err, size_t errlen);

/* Chief: training is over; the ps tasks answer further pulls with PS_FINISHED. */
int ps_client_done(ps_client *c, char *err, size_t errlen);

#endif
