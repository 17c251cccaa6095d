/*
 * ps_worker.c — a worker of the parameter_server strategy: its asynchronous loop
 * (pull the variables from the ps tasks, compute a gradient on its own examples, push
 * it; ps.h has the tasks and the protocol) and how the examples are shared out. The
 * setup, checkpoints and reports are train.c's (docs/distributed.md).
 */
#include "trainer/train.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/hypertune.h"
#include "common/status.h"
#include "kernels/cuda.h"
#include "trainer/train_internal.h"

/* ---- parameter server: asynchronous training ---- */

/* Whether example i is this worker's under the shard policy (FILE: a block; DATA:
 * every world-th example; OFF: all of them). */
static int ps_mine(const run *r, int64_t i, int rank) {
    if (r->shard == TR_SHARD_OFF) return 1;
    if (r->shard == TR_SHARD_FILE) {
        int64_t lo, hi;
        tr__block(r->train.n, r->world, rank, &lo, &hi);
        return i >= lo && i < hi;
    }
    return i % r->world == rank;
}

/* Examples worker `rank` trains on per epoch. */
int64_t tr__ps_share(const run *r, int rank) {
    int64_t n = r->train.n, W = r->world, lo, hi;
    if (r->shard == TR_SHARD_OFF) return n;
    if (r->shard == TR_SHARD_FILE) {
        tr__block(n, (int)W, rank, &lo, &hi);
        return hi - lo;
    }
    return (n - rank + W - 1) / W;
}

/* Updates in the whole job: every worker's steps, for the learning-rate schedule. */
int64_t tr__ps_total_steps(const run *r) {
    int64_t steps = 0, B = r->c->batch_size;
    for (int q = 0; q < r->world; q++) steps += (tr__ps_share(r, q) + B - 1) / B;
    return steps * r->c->epochs;
}

/* After the order changes: this worker's examples, in that order. */
static void ps_make_local(run *r) {
    r->nlocal = 0;
    for (int64_t i = 0; i < r->train.n; i++)
        if (ps_mine(r, r->order[i], r->rank)) r->local[r->nlocal++] = r->order[i];
}

/* Copies the variables and optimiser state the ps tasks hold into the model and the
 * local optimiser buffers (the chief, before a checkpoint). */
static int ps_fetch(run *r, char *err, size_t errlen) {
    size_t p = r->model->nparams;
    const kn_backend *k = r->model->k;
    float *params = tn_xmalloc(p * sizeof(float)), *m = tn_xmalloc(p * sizeof(float));
    float *v = r->opt->v ? tn_xmalloc(p * sizeof(float)) : NULL;
    int64_t t, version;
    int rc = ps_client_fetch(r->ps, params, m, v, &t, &version, err, errlen);
    if (!rc) {
        mdl_set_params(r->model, params);
        k->upload(r->opt->m, m, p * sizeof(float));
        if (v) k->upload(r->opt->v, v, p * sizeof(float));
        r->opt->t = t;
        r->st.global_step = version;
    }
    free(params);
    free(m);
    free(v);
    return rc;
}

/* Connects to the ps tasks. The chief adopts the variables they hold (they are newer
 * than any checkpoint), or else gives them its own: restored from its newest
 * checkpoint, or freshly initialised. */
int tr__ps_setup(run *r, uint64_t hash, int64_t total_steps, char *err, size_t errlen) {
    int initialised = 0;
    fprintf(r->out, "parameter server: worker %d of %d, %zu ps task%s\n", r->rank, r->world,
            r->c->cluster->cluster[TF_PS].n, r->c->cluster->cluster[TF_PS].n == 1 ? "" : "s");
    fflush(r->out);
    int rc = ps_client_open(r->c->cluster, r->model->nparams, r->c->peer_timeout, hash, &r->ps,
                            &initialised, err, errlen);
    if (rc || !r->chief) return rc;
    rc = tr__restore(r, err, errlen);
    if (rc) return rc;
    if (initialised) {
        fprintf(r->out, "the ps tasks already hold the variables: carrying on from them\n");
        return ps_fetch(r, err, errlen);
    }
    size_t p = r->model->nparams;
    const kn_backend *k = r->model->k;
    float *params = tn_xmalloc(p * sizeof(float)), *m = tn_xmalloc(p * sizeof(float));
    float *v = r->opt->v ? tn_xmalloc(p * sizeof(float)) : NULL;
    mdl_get_params(r->model, params);
    k->download(m, r->opt->m, p * sizeof(float));
    if (v) k->download(v, r->opt->v, p * sizeof(float));
    opt_config oc = r->opt->cfg;
    oc.total_steps = total_steps;
    rc = ps_client_init(r->ps, params, m, v, r->opt->t, &oc, err, errlen);
    free(params);
    free(m);
    free(v);
    return rc;
}

int tr__ps_loop(run *r, char *err, size_t errlen) {
    const tr_config *c = r->c;
    mdl_model *m = r->model;
    size_t p = m->nparams;
    int B = c->batch_size;
    float *params = tn_xmalloc(p * sizeof(float));
    float *grads = m->k->host_memory ? NULL : tn_xmalloc(p * sizeof(float));
    int rc = 0, first = 1;
    while (!rc && r->st.epoch < c->epochs) {
        if (r->st.step_in_epoch == 0) {
            tr__shuffle(r);
            ps_make_local(r);
        }
        double t0 = tr__now_seconds(CLOCK_MONOTONIC);
        int64_t version;
        rc = ps_client_pull(r->ps, params, &version, err, errlen);
        if (rc == PS_FINISHED) {
            fprintf(r->out, "the chief has finished training: stopping at update %lld\n",
                    (long long)version);
            rc = 0;
            break;
        }
        if (rc) break;
        if (first && !r->chief) {
            /* a worker (re)joining a job under way starts at the job's epoch */
            int64_t total = tr__ps_total_steps(r);
            r->st.epoch = version * c->epochs / (total ? total : 1);
            first = 0;
            if (r->st.epoch >= c->epochs) break;
        }
        mdl_set_params(m, params);
        int64_t start = r->st.step_in_epoch * B;
        int b = (int)tr__clamp64(r->nlocal - start, 0, B);
        double loss = 0.0;
        int64_t correct = 0;
        if (b > 0) {
            memcpy(r->idx, r->local + start, (size_t)b * sizeof(int32_t));
            tn_rng drop;
            r->st.global_step = version;
            tr__dropout_stream(r, r->rank, &drop);
            mdl_forward_rows(m, r->train.x, r->train.y, r->idx, b, 1, &drop, &loss, &correct);
            if (!isfinite(loss)) {
                rc = tn_error(err, errlen, TN_EINVAL,
                              "training diverged: the loss is %g at update %lld; hint: lower "
                              "--learning_rate",
                              loss, (long long)version + 1);
                rc = TR_DIVERGED;
                break;
            }
            mdl_backward(m, b);
            const float *g = m->grads;
            if (grads) {
                m->k->download(grads, m->grads, p * sizeof(float));
                g = grads;
            }
            int64_t stale = 0;
            rc = ps_client_push(r->ps, g, &stale, err, errlen);
            if (rc) break;
            r->stale_sum += (double)stale;
            r->stale_count++;
            if (stale > r->stale_max) r->stale_max = stale;
            r->st.global_step = version + 1;
        }
        r->period_seconds += tr__now_seconds(CLOCK_MONOTONIC) - t0;
        r->st.period_loss += loss;
        r->st.period_correct += correct;
        r->st.period_count += b;
        int end_of_epoch = ++r->st.step_in_epoch == r->steps_per_epoch;
        if (end_of_epoch) {
            r->st.epoch++;
            r->st.step_in_epoch = 0;
        }
        if (r->chief && (end_of_epoch || tr_stop_signal() ||
                         (c->report_every > 0 && r->st.global_step % c->report_every == 0) ||
                         (c->checkpoint_every > 0 &&
                          r->st.global_step % c->checkpoint_every == 0))) {
            /* the newest variables, for the report and the checkpoint */
            rc = ps_fetch(r, err, errlen);
            if (!rc) rc = tr__check_params(r, err, errlen);
            if (!rc && (end_of_epoch || (c->report_every > 0 &&
                                         r->st.global_step % c->report_every == 0)))
                rc = tr__report(r, err, errlen);
            if (!rc) rc = tr__save_checkpoint(r, err, errlen);
        } else if (!r->chief && end_of_epoch) {
            fprintf(r->out, "epoch %lld/%d done (update %lld); staleness mean %.2f, max %lld\n",
                    (long long)r->st.epoch, c->epochs, (long long)r->st.global_step,
                    r->stale_count ? r->stale_sum / (double)r->stale_count : 0.0,
                    (long long)r->stale_max);
            fflush(r->out);
        }
        if (!rc && tr_stop_signal()) {
            fprintf(r->out, "stopped by signal %d at update %lld%s\n", tr_stop_signal(),
                    (long long)r->st.global_step, r->chief ? " (checkpoint saved)" : "");
            rc = TR_INTERRUPTED;
        }
    }
    if (!rc && r->chief) {
        rc = ps_fetch(r, err, errlen);
        if (!rc) rc = ps_client_done(r->ps, err, errlen);
        if (!rc)
            fprintf(r->out, "parameter server: largest staleness seen %lld\n",
                    (long long)r->stale_max);
    }
    free(params);
    free(grads);
    return rc;
}

