/*
 * train.c — the training run of one replica (see train.h).
 *
 * The loop is flat over steps: at the start of an epoch the data order is drawn from
 * the run's RNG; each step gathers a batch, runs forward, backward and the optimiser;
 * at the end of an epoch (and every --report_every steps) the model is evaluated on
 * the held-out set and the metrics are reported; at the end of an epoch (and every
 * --checkpoint_every steps, and on SIGTERM) a checkpoint is saved. The checkpoint
 * holds everything the loop reads, so a resumed run is bit-identical to one that
 * never stopped. Checkpoint sections: docs/trainer.md, "What a checkpoint holds".
 *
 * The strategies (docs/distributed.md) share this loop: multi-worker mirrored gives
 * each replica its slice of every global batch and sums the gradients over the ring
 * (collective.h) before the same update everywhere; mirrored and central_storage do
 * the same with devices in one process (devices.h); parameter_server has its own
 * asynchronous loop (ps_worker.c: pull, compute, push to the ps tasks of ps.h). The
 * evaluator (evaluator.c) follows the chief's checkpoints. What these files share is
 * train_internal.h.
 *
 * On a device whose memory is not the host's (a GPU, or the CPU presented as one for
 * tests), the synchronous strategies take the step without the host (dev_path): the
 * data sets are copied to each device once and every epoch's order once per epoch;
 * each step uploads a few values (batch position, dropout seed, the optimiser's
 * scalars: dev_step_args) and replays the step recorded in a graph (gather, forward,
 * loss, backward, update; recorded the second time a batch shape comes round); the
 * loss is summed on the device (kn_loss_acc) and read back only at reports,
 * checkpoints and every DEV_CHECK_EVERY steps, which is also when a non-finite loss is
 * noticed (and reported with the step it happened at). Design: docs/trainer.md,
 * "Devices".
 */
#include "trainer/train.h"
#include "trainer/train_internal.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/hypertune.h"
#include "common/status.h"
#include "kernels/cuda.h"
#include "kernels/nccl.h"
#include "trainer/bucket.h"
#include "trainer/checkpoint.h"
#include "trainer/collective.h"
#include "trainer/data.h"
#include "trainer/devices.h"
#include "trainer/ps.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint sections are stored in host order, which must be little-endian"
#endif


static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) { stop_requested = sig; }

int tr_stop_signal(void) { return (int)stop_requested; }

volatile const int *tr_stop_flag(void) { return &stop_requested; }

void tr_install_signal_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    /* A file-size limit (ulimit -f; Slurm passes the user's on) would kill the process
     * at the write that crosses it: ignored, the write fails with EFBIG and is reported
     * with a hint, as a full disk is (the checkpoint before stays) */
    sa.sa_handler = SIG_IGN;
    sigaction(SIGXFSZ, &sa, NULL);
}


double tr__now_seconds(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- (de)serialisation of the configuration and the state ---- */

static void config_encode(const mdl_config *c, uint32_t w[CONFIG_WORDS]) {
    memset(w, 0, CONFIG_WORDS * sizeof *w);
    int i = 0;
    w[i++] = CONFIG_VERSION;
    w[i++] = (uint32_t)c->kind;
    w[i++] = (uint32_t)c->activation;
    memcpy(&w[i++], &c->dropout, sizeof(float));
    w[i++] = (uint32_t)c->in_c;
    w[i++] = (uint32_t)c->in_h;
    w[i++] = (uint32_t)c->in_w;
    w[i++] = (uint32_t)c->classes;
    w[i++] = (uint32_t)c->nhidden;
    for (int j = 0; j < MDL_MAX_HIDDEN; j++) w[i++] = (uint32_t)c->hidden[j];
    w[i++] = (uint32_t)c->nconv;
    for (int j = 0; j < MDL_MAX_CONV; j++) w[i++] = (uint32_t)c->filters[j];
}

int tr__config_decode(const void *data, uint64_t size, mdl_config *c, char *err,
                      size_t errlen) {
    uint32_t w[CONFIG_WORDS];
    if (size != sizeof w)
        return tn_error(err, errlen, TN_EFORMAT, "model configuration has %llu bytes, expected %zu",
                        (unsigned long long)size, sizeof w);
    memcpy(w, data, sizeof w);
    if (w[0] != CONFIG_VERSION)
        return tn_error(err, errlen, TN_EVERSION, "model configuration version %u, expected %d",
                        w[0], CONFIG_VERSION);
    memset(c, 0, sizeof *c);
    int i = 1;
    c->kind = (int32_t)w[i++];
    c->activation = (int32_t)w[i++];
    memcpy(&c->dropout, &w[i++], sizeof(float));
    c->in_c = (int32_t)w[i++];
    c->in_h = (int32_t)w[i++];
    c->in_w = (int32_t)w[i++];
    c->classes = (int32_t)w[i++];
    c->nhidden = (int32_t)w[i++];
    for (int j = 0; j < MDL_MAX_HIDDEN; j++) c->hidden[j] = (int32_t)w[i++];
    c->nconv = (int32_t)w[i++];
    for (int j = 0; j < MDL_MAX_CONV; j++) c->filters[j] = (int32_t)w[i++];
    char why[256];
    if (mdl_config_check(c, why, sizeof why) != 0)
        return tn_error(err, errlen, TN_EFORMAT, "invalid model configuration: %s", why);
    return 0;
}

static void state_encode(const run_state *s, int64_t opt_t, uint64_t w[STATE_WORDS]) {
    memset(w, 0, STATE_WORDS * sizeof *w);
    w[0] = (uint64_t)s->global_step;
    w[1] = (uint64_t)s->epoch;
    w[2] = (uint64_t)s->step_in_epoch;
    w[3] = (uint64_t)s->ntrain;
    w[4] = (uint64_t)s->batch_size;
    w[5] = (uint64_t)s->opt_kind;
    w[6] = s->seed;
    memcpy(&w[7], &s->period_loss, sizeof(double));
    w[8] = (uint64_t)s->period_correct;
    w[9] = (uint64_t)s->period_count;
    w[10] = (uint64_t)opt_t;
}

static void state_decode(const uint64_t w[STATE_WORDS], run_state *s) {
    s->global_step = (int64_t)w[0];
    s->epoch = (int64_t)w[1];
    s->step_in_epoch = (int64_t)w[2];
    s->ntrain = (int64_t)w[3];
    s->batch_size = (int64_t)w[4];
    s->opt_kind = (int64_t)w[5];
    s->seed = w[6];
    memcpy(&s->period_loss, &w[7], sizeof(double));
    s->period_correct = (int64_t)w[8];
    s->period_count = (int64_t)w[9];
}

/* How the run's steps are shared out, besides the per-replica batch (in the state): the
 * strategy, the replicas (the devices of mirrored and central_storage, TF_CONFIG's chief
 * and workers otherwise) and the shard policy. The steps of an epoch, the examples of a
 * step and what global_step counts (every worker's update under parameter_server)
 * follow from them, so a checkpoint records them and a run resumes only its own
 * (check_resume, restore). One replica trains alike under every synchronous strategy and
 * shard policy, so it is recorded as one_device with data sharding, whatever the flags. */
static void cluster_encode(const run *r, uint64_t w[CLUSTER_WORDS]) {
    int alone = r->world == 1;
    w[0] = (uint64_t)(alone && r->c->strategy != TR_PARAMETER_SERVER ? TR_ONE_DEVICE
                                                                     : r->c->strategy);
    w[1] = (uint64_t)r->world;
    w[2] = (uint64_t)(alone ? TR_SHARD_DATA : r->shard);
}

/* A recorded cluster in words, for messages: "2 replicas (mirrored, data sharding)". */
static void cluster_describe(const uint64_t w[CLUSTER_WORDS], char *buf, size_t len) {
    if (w[1] == 1)
        snprintf(buf, len, "1 replica (%s)", tr_strategy_name((int)w[0]));
    else
        snprintf(buf, len, "%llu replicas (%s, %s sharding)", (unsigned long long)w[1],
                 tr_strategy_name((int)w[0]), tr_shard_name((int)w[2]));
}

/* ---- the run ---- */


/* The classes are the labels 0 to the largest seen: one stray label (255 among 0 to 9)
 * makes a model of 256 outputs, most never trained. When more than half the classes
 * have no training example, says so (a small --max_train_examples missing a class or
 * two is not worth a word). */
static void warn_sparse_classes(const run *r) {
    int32_t classes = r->train.classes > r->eval.classes ? r->train.classes : r->eval.classes;
    if (classes <= 2 || !r->train.y) return;
    unsigned char *seen = tn_xcalloc((size_t)classes, 1);
    int32_t present = 0;
    for (int64_t i = 0; i < r->train.n; i++) {
        int32_t y = r->train.y[i];
        if (y < 0 || y >= classes) continue;
        present += !seen[y];
        seen[y] = 1;
    }
    free(seen);
    if (2 * present >= classes) return;
    fprintf(stderr,
            "trainer: warning: the labels run from 0 to %d, so the model has %d classes, but "
            "only %d of them have a training example: a stray label in the data?\n",
            classes - 1, classes, present);
}

static int load_data(run *r, char *err, size_t errlen) {
    const tr_config *c = r->c;
    int rc;
    if (c->train_file || c->eval_file) {
        if (!c->train_file || !c->eval_file)
            return tn_error(err, errlen, TN_EINVAL,
                            "--train_file and --eval_file go together (metrics are computed "
                            "on the held-out --eval_file)");
        rc = ds_load_csv(c->train_file, c->label_column, (float)c->feature_scale,
                         c->max_train_examples, &r->train, err, errlen);
        if (rc) return rc;
        rc = ds_load_csv(c->eval_file, c->label_column, (float)c->feature_scale,
                         c->max_eval_examples, &r->eval, err, errlen);
    } else {
        const char *dir = c->data_dir ? c->data_dir : DS_DEFAULT_DIR;
        rc = ds_load_idx_dir(dir, 1, c->max_train_examples, &r->train, err, errlen);
        if (rc) return rc;
        rc = ds_load_idx_dir(dir, 0, c->max_eval_examples, &r->eval, err, errlen);
    }
    if (rc) return rc;
    if (r->train.d != r->eval.d)
        return tn_error(err, errlen, TN_EMISMATCH,
                        "training examples have %d features but evaluation examples have %d",
                        r->train.d, r->eval.d);
    const ds_dataset *t = &r->train, *e = &r->eval;
    if (t->channels > 0 && e->channels > 0 &&
        (t->channels != e->channels || t->height != e->height || t->width != e->width))
        return tn_error(err, errlen, TN_EMISMATCH,
                        "training images are %dx%dx%d but evaluation images are %dx%dx%d "
                        "(channels x height x width): the same number of features, another "
                        "shape; hint: the evaluation data belong to another dataset",
                        t->channels, t->height, t->width, e->channels, e->height, e->width);
    if (r->train.n > INT32_MAX)
        return tn_error(err, errlen, TN_EINVAL, "too many training examples (%lld)",
                        (long long)r->train.n);
    warn_sparse_classes(r);
    return 0;
}

/* Fills the data-dependent parts of the model configuration. */
static int shape_model(run *r, mdl_config *m, char *err, size_t errlen) {
    *m = r->c->model;
    const ds_dataset *t = &r->train;
    if (t->channels > 0) {
        m->in_c = t->channels;
        m->in_h = t->height;
        m->in_w = t->width;
    } else if (m->kind == MDL_CNN) {
        return tn_error(err, errlen, TN_EINVAL,
                        "--model=cnn needs images (IDX files, or a CSV whose feature count is "
                        "a perfect square); these data have %d features",
                        t->d);
    } else {
        m->in_c = t->d;
        m->in_h = m->in_w = 1;
    }
    m->classes = t->classes > r->eval.classes ? t->classes : r->eval.classes;
    int rc = mdl_config_check(m, err, errlen);
    return rc ? rc : mdl_batch_check(m, r->c->batch_size, err, errlen);
}

void tr__shuffle(run *r) {
    int64_t n = r->train.n;
    for (int64_t i = 0; i < n; i++) r->order[i] = (int32_t)i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)tn_rng_below(&r->st.rng, (uint64_t)i + 1);
        int32_t t = r->order[i];
        r->order[i] = r->order[j];
        r->order[j] = t;
    }
}

/* ---- sharding: which examples each replica trains on ---- */

/* Block i of `parts` near-equal blocks of n items: [lo, hi). */
void tr__block(int64_t n, int parts, int i, int64_t *lo, int64_t *hi) {
    *lo = n * i / parts;
    *hi = n * (i + 1) / parts;
}

int64_t tr__clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Steps in an epoch: the same on every replica, so they stay in step. */
static int64_t epoch_steps(const run *r) {
    int64_t n = r->train.n, B = r->c->batch_size, W = r->world;
    switch (r->shard) {
    case TR_SHARD_FILE: return ((n + W - 1) / W + B - 1) / B; /* the largest block */
    case TR_SHARD_OFF: return (n + B - 1) / B;
    default: return (n + B * W - 1) / (B * W);
    }
}

/* FILE sharding: after the order changes, this replica's block in that order. */
static void make_local(run *r) {
    if (r->shard != TR_SHARD_FILE) return;
    int64_t lo, hi;
    tr__block(r->train.n, r->world, r->rank, &lo, &hi);
    r->nlocal = 0;
    for (int64_t i = 0; i < r->train.n; i++)
        if (r->order[i] >= lo && r->order[i] < hi) r->local[r->nlocal++] = r->order[i];
}

/* The local batch of rank `rank` at step k of the epoch: its rows go into idx and its size is
 * returned (0 when this replica has nothing left this epoch); *global gets the
 * examples of the step over all replicas, which every replica can work out, and *pos
 * (pos may be NULL) where the rows start in the device's index list (resident.index). */
static int local_batch(run *r, int64_t k, int rank, int32_t *idx, int64_t *global,
                       int64_t *pos) {
    int64_t n = r->train.n, B = r->c->batch_size, W = r->world, b, unused;
    if (!pos) pos = &unused;
    switch (r->shard) {
    case TR_SHARD_FILE:
        *global = 0;
        for (int q = 0; q < W; q++) {
            int64_t lo, hi;
            tr__block(n, (int)W, q, &lo, &hi);
            *global += tr__clamp64(hi - lo - k * B, 0, B);
        }
        b = tr__clamp64(r->nlocal - k * B, 0, B);
        if (b) memcpy(idx, r->local + k * B, (size_t)b * sizeof(int32_t));
        *pos = k * B;
        return (int)b;
    case TR_SHARD_OFF: {
        b = tr__clamp64(n - k * B, 0, B);
        *global = b * W;
        int64_t start = (n / W) * rank + k * B;
        for (int64_t i = 0; i < b; i++) idx[i] = r->order[(start + i) % n];
        *pos = start % n; /* the index list repeats its first B entries after the end */
        return (int)b;
    }
    default: {
        int64_t first = k * B * W;
        *global = tr__clamp64(n - first, 0, B * W);
        b = tr__clamp64(*global - rank * B, 0, B);
        if (b) memcpy(idx, r->order + first + rank * B, (size_t)b * sizeof(int32_t));
        *pos = first + rank * B;
        return (int)b;
    }
    }
}

/* Summed loss and correct predictions of the model on examples [lo, hi). */
static void evaluate_range(mdl_model *m, const ds_dataset *ds, int64_t lo, int64_t hi,
                           double *loss_sum, int64_t *right) {
    *loss_sum = 0.0;
    *right = 0;
    for (int64_t i = lo; i < hi; i += m->max_batch) {
        int b = (int)(hi - i < m->max_batch ? hi - i : m->max_batch);
        double l;
        int64_t c;
        mdl_forward(m, ds->x + i * ds->d, ds->y + i, b, 0, NULL, &l, &c);
        *loss_sum += l;
        *right += c;
    }
}

/* Mean loss and accuracy of the model on a whole data set. */
void tr__evaluate(mdl_model *m, const ds_dataset *ds, double *loss, double *accuracy) {
    double total;
    int64_t right;
    evaluate_range(m, ds, 0, ds->n, &total, &right);
    *loss = total / (double)ds->n;
    *accuracy = (double)right / (double)ds->n;
}

static int dev_read(run *r, char *err, size_t errlen);

int tr__check_params(run *r, char *err, size_t errlen) {
    size_t p = r->model->nparams;
    float *params = tn_xmalloc(p * sizeof(float));
    mdl_get_params(r->model, params);
    size_t i = 0;
    while (i < p && isfinite(params[i])) i++;
    int rc = 0;
    if (i < p) {
        tn_error(err, errlen, TN_EINVAL,
                 "training diverged: parameter %zu is %g after step %lld; hint: lower "
                 "--learning_rate",
                 i, params[i], (long long)r->st.global_step);
        rc = TR_DIVERGED;
    }
    free(params);
    return rc;
}

int tr__save_checkpoint(run *r, char *err, size_t errlen) {
    if (!r->ckpt_dir) return 0;
    int rc = dev_read(r, err, errlen); /* the device path's period sums, into r->st */
    if (rc) return rc;
    size_t p = r->model->nparams;
    uint32_t cfg[CONFIG_WORDS];
    uint64_t state[STATE_WORDS], cluster[CLUSTER_WORDS];
    config_encode(&r->model->cfg, cfg);
    state_encode(&r->st, r->opt->t, state);
    cluster_encode(r, cluster);
    float *params = tn_xmalloc(p * sizeof(float));
    float *m = tn_xmalloc(p * sizeof(float));
    float *v = r->opt->v ? tn_xmalloc(p * sizeof(float)) : NULL;
    mdl_get_params(r->model, params);
    r->opt->k->download(m, r->opt->m, p * sizeof(float));
    if (v) r->opt->k->download(v, r->opt->v, p * sizeof(float));
    ckpt_section s[] = {
        {TAG_CONFIG, cfg, sizeof cfg},
        {TAG_STATE, state, sizeof state},
        {TAG_CLUSTER, cluster, sizeof cluster},
        {TAG_RNG, r->st.rng.s, sizeof r->st.rng.s},
        {TAG_PARAMS, params, p * sizeof(float)},
        {TAG_ORDER, r->order, (uint64_t)r->train.n * sizeof(int32_t)},
        {TAG_OPT_M, m, p * sizeof(float)},
        {TAG_OPT_V, v, v ? p * sizeof(float) : 0},
    };
    size_t n = sizeof s / sizeof s[0] - !v; /* TAG_OPT_V, last, only with a v */
    rc = ckpt_save(r->ckpt_dir, r->st.global_step, s, n, r->c->keep_checkpoints, NULL, 0,
                       err, errlen);
    free(params);
    free(m);
    free(v);
    return rc;
}

/* Reads a section of exactly `size` bytes into dst. */
int tr__take_section(const ckpt_file *f, uint32_t tag, void *dst, uint64_t size,
                     const char *path, char *err, size_t errlen) {
    uint64_t got;
    const void *data = ckpt_find(f, tag, &got);
    if (!data || got != size)
        return tn_error(err, errlen, TN_EFORMAT,
                        "%s: section %u is %s (expected %llu bytes)", path, tag,
                        data ? "the wrong size" : "missing", (unsigned long long)size);
    memcpy(dst, data, size);
    return 0;
}

/* ---- resuming: what a checkpoint must hold before the run trusts it ---- */

#define STATE_RESERVED 11 /* the state word that this version writes as 0 */

/* Whether a checkpoint's model is the run's (restore says so when not). */
static int same_model(const run *r, const mdl_config *saved) {
    uint32_t a[CONFIG_WORDS], b[CONFIG_WORDS];
    config_encode(saved, a);
    config_encode(&r->model->cfg, b);
    return memcmp(a, b, sizeof a) == 0;
}

/* Whether a checkpoint's state was written by a run with the run's settings. */
static int same_settings(const run *r, const run_state *st) {
    return st->ntrain == r->st.ntrain && st->batch_size == r->st.batch_size &&
           st->opt_kind == r->st.opt_kind && st->seed == r->st.seed;
}

/* The cluster section of a checkpoint into w: 1 when there is one, 0 when the file
 * predates it, or a negative code with the reason when the section is not one this
 * build writes. Only cluster_fit reads it. */
static int read_cluster(const ckpt_file *f, uint64_t w[CLUSTER_WORDS], char *why,
                        size_t whylen) {
    uint64_t size;
    const void *data = ckpt_find(f, TAG_CLUSTER, &size);
    if (!data) return 0;
    if (size != CLUSTER_WORDS * sizeof *w)
        return tn_error(why, whylen, TN_EFORMAT, "cluster: the wrong size (expected %zu bytes)",
                        CLUSTER_WORDS * sizeof *w);
    memcpy(w, data, CLUSTER_WORDS * sizeof *w);
    if (w[0] < TR_ONE_DEVICE || w[0] > TR_PARAMETER_SERVER)
        return tn_error(why, whylen, TN_EFORMAT, "cluster: strategy %llu is not one of 1 to %d",
                        (unsigned long long)w[0], TR_PARAMETER_SERVER);
    if (w[1] < 1 || w[1] > INT32_MAX)
        return tn_error(why, whylen, TN_EFORMAT, "cluster: %llu replicas",
                        (unsigned long long)w[1]);
    if (w[2] < TR_SHARD_DATA || w[2] > TR_SHARD_OFF)
        return tn_error(why, whylen, TN_EFORMAT,
                        "cluster: shard policy %llu is not one of %d to %d",
                        (unsigned long long)w[2], TR_SHARD_DATA, TR_SHARD_OFF);
    return 1;
}

/* How a checkpoint's cluster compares with the run's (cluster_fit). */
enum { CLUSTER_SAME = 0, CLUSTER_OTHER, CLUSTER_UNRECORDED };

/* The one reading of a checkpoint's cluster section and its comparison with the run's
 * cluster, for check_resume (which judges the section and passes another cluster's on)
 * and restore (which refuses it, by same_cluster): CLUSTER_SAME, CLUSTER_OTHER, or
 * CLUSTER_UNRECORDED for a file that predates the section (its replicas are unknown);
 * theirs and ours get the recorded words and the run's. A negative code with the
 * reason in why when the section is not one this build writes. */
static int cluster_fit(const run *r, const ckpt_file *f, uint64_t theirs[CLUSTER_WORDS],
                       uint64_t ours[CLUSTER_WORDS], char *why, size_t whylen) {
    cluster_encode(r, ours);
    int has = read_cluster(f, theirs, why, whylen);
    if (has <= 0) return has < 0 ? has : CLUSTER_UNRECORDED;
    return memcmp(theirs, ours, CLUSTER_WORDS * sizeof *ours) == 0 ? CLUSTER_SAME
                                                                    : CLUSTER_OTHER;
}

/* restore's verdict on the cluster of the checkpoint at path (which check_resume has
 * judged): 0 when it is the run's, else TN_EINVAL naming both and what to do. */
static int same_cluster(const run *r, const ckpt_file *f, const char *path, char *err,
                        size_t errlen) {
    uint64_t cl[CLUSTER_WORDS], ours[CLUSTER_WORDS];
    int fit = cluster_fit(r, f, cl, ours, err, errlen);
    if (fit == CLUSTER_SAME || fit < 0) return fit;
    char theirs_s[96], ours_s[96];
    cluster_describe(ours, ours_s, sizeof ours_s);
    if (fit == CLUSTER_UNRECORDED)
        return tn_error(err, errlen, TN_EINVAL,
                        "%s was written by a trainer that did not record the replicas and "
                        "the strategy, so it cannot be told whether it fits this run of %s; "
                        "hint: finish that run with the trainer that wrote it, or use a "
                        "fresh --job-dir",
                        path, ours_s);
    cluster_describe(cl, theirs_s, sizeof theirs_s);
    return tn_error(err, errlen, TN_EINVAL,
                    "the checkpoints in %s were written by a run of %s, and this run has %s; "
                    "the steps of an epoch depend on both, so the two cannot be mixed; hint: "
                    "resume with that run's cluster (--devices, TF_CONFIG's workers, "
                    "--strategy, --shard_policy) or use a fresh --job-dir",
                    r->ckpt_dir, theirs_s, ours_s);
}

/* Section `tag` (called name) holds n floats, every one finite (and not negative with
 * nonneg). */
static int check_floats(const ckpt_file *f, uint32_t tag, const char *name, size_t n,
                        int nonneg, char *why, size_t whylen) {
    uint64_t size;
    const float *v = ckpt_find(f, tag, &size);
    if (!v || size != n * sizeof(float))
        return tn_error(why, whylen, TN_EFORMAT, "%s: %s (expected %zu floats)", name,
                        v ? "the wrong size" : "missing", n);
    for (size_t i = 0; i < n; i++) {
        float x;
        memcpy(&x, v + i, sizeof x); /* the section's bytes, not a float array */
        if (!isfinite(x) || (nonneg && x < 0))
            return tn_error(why, whylen, TN_EFORMAT, "%s: value %zu is %g", name, i, (double)x);
    }
    return 0;
}

/* The state's counters against the run: step, epoch, position in the epoch, the
 * optimiser's step, the report period's sums. */
static int check_state(const run *r, const run_state *st, int64_t opt_t, uint64_t reserved,
                       int64_t step, char *why, size_t whylen) {
    int64_t spe = r->steps_per_epoch, gs = st->global_step;
    int ps = r->ps != NULL; /* asynchronous: global_step counts every worker's updates */
    if (gs != step)
        return tn_error(why, whylen, TN_EFORMAT,
                        "state: global_step %lld differs from the step in the file's name (%lld)",
                        (long long)gs, (long long)step);
    if (st->epoch < 0)
        return tn_error(why, whylen, TN_EFORMAT, "state: epoch %lld is negative",
                        (long long)st->epoch);
    if (st->step_in_epoch < 0 || st->step_in_epoch >= spe)
        return tn_error(why, whylen, TN_EFORMAT,
                        "state: step_in_epoch %lld is outside the epoch's %lld steps",
                        (long long)st->step_in_epoch, (long long)spe);
    /* synchronous: every step is one of global_step's (overflow-safe) */
    if (!ps && (st->epoch > (gs - st->step_in_epoch) / spe ||
                st->epoch * spe + st->step_in_epoch != gs))
        return tn_error(why, whylen, TN_EFORMAT,
                        "state: global_step %lld does not fit epoch %lld and step_in_epoch "
                        "%lld of %lld-step epochs",
                        (long long)gs, (long long)st->epoch, (long long)st->step_in_epoch,
                        (long long)spe);
    if (ps ? opt_t < 0 : opt_t != gs)
        return tn_error(why, whylen, TN_EFORMAT,
                        "state: the optimiser's step %lld %s", (long long)opt_t,
                        ps ? "is negative" : "differs from global_step");
    int64_t most = r->st.batch_size * r->world; /* examples in one step */
    if (st->period_count < 0 || st->period_count / most > gs)
        return tn_error(why, whylen, TN_EFORMAT,
                        "state: period_count %lld is outside [0, %lld steps of %lld examples]",
                        (long long)st->period_count, (long long)gs, (long long)most);
    if (st->period_correct < 0 || st->period_correct > st->period_count)
        return tn_error(why, whylen, TN_EFORMAT,
                        "state: period_correct %lld is outside [0, period_count %lld]",
                        (long long)st->period_correct, (long long)st->period_count);
    if (!isfinite(st->period_loss))
        return tn_error(why, whylen, TN_EFORMAT, "state: period_loss %g is not finite",
                        st->period_loss);
    if (reserved != 0)
        return tn_error(why, whylen, TN_EFORMAT,
                        "state: word %d is %llu; this version writes 0", STATE_RESERVED,
                        (unsigned long long)reserved);
    return 0;
}

/* The data order: a permutation of the n training examples. */
static int check_order(const ckpt_file *f, int64_t n, char *why, size_t whylen) {
    uint64_t size;
    const uint8_t *data = ckpt_find(f, TAG_ORDER, &size);
    if (!data || size != (uint64_t)n * sizeof(int32_t))
        return tn_error(why, whylen, TN_EFORMAT, "order: %s (expected %lld entries)",
                        data ? "the wrong size" : "missing", (long long)n);
    uint8_t *seen = tn_xcalloc((size_t)n, 1);
    int rc = 0;
    for (int64_t i = 0; i < n && !rc; i++) {
        int32_t e;
        memcpy(&e, data + i * (int64_t)sizeof e, sizeof e);
        if (e < 0 || e >= n)
            rc = tn_error(why, whylen, TN_EFORMAT, "order: entry %lld is %d, outside [0, %lld)",
                          (long long)i, e, (long long)n);
        else if (seen[e]++)
            rc = tn_error(why, whylen, TN_EFORMAT, "order: example %d appears twice", e);
    }
    free(seen);
    return rc;
}

/* ckpt_check_fn of restore: every section and field of a checkpoint that verified,
 * against the run (docs/trainer.md, "Checkpoints and resuming"). One of another model or
 * other settings passes, for restore to report the difference as an error. */
static int check_resume(const ckpt_file *f, int64_t step, void *ctx, char *why,
                        size_t whylen) {
    const run *r = ctx;
    uint64_t size;
    const void *data = ckpt_find(f, TAG_CONFIG, &size);
    mdl_config saved;
    char e[256];
    if (!data) return tn_error(why, whylen, TN_EFORMAT, "config: missing");
    if (tr__config_decode(data, size, &saved, e, sizeof e) != 0)
        return tn_error(why, whylen, TN_EFORMAT, "config: %s", e);
    uint64_t w[STATE_WORDS];
    data = ckpt_find(f, TAG_STATE, &size);
    if (!data || size != sizeof w)
        return tn_error(why, whylen, TN_EFORMAT, "state: %s (expected %zu bytes)",
                        data ? "the wrong size" : "missing", sizeof w);
    memcpy(w, data, sizeof w);
    run_state st;
    state_decode(w, &st);
    uint64_t cl[CLUSTER_WORDS], ours[CLUSTER_WORDS];
    int fit = cluster_fit(r, f, cl, ours, why, whylen);
    if (fit < 0) return fit;
    /* Of another run: passed on for restore to refuse, before the fields below are
     * judged by this run's step arithmetic, which is not the file's (a checkpoint of
     * another cluster would otherwise look damaged, be skipped and later pruned). */
    if (!same_model(r, &saved) || !same_settings(r, &st) || fit != CLUSTER_SAME) return 0;
    int rc = check_state(r, &st, (int64_t)w[10], w[STATE_RESERVED], step, why, whylen);
    if (rc) return rc;
    uint64_t rng[4];
    data = ckpt_find(f, TAG_RNG, &size);
    if (!data || size != sizeof rng)
        return tn_error(why, whylen, TN_EFORMAT, "rng: %s (expected %zu bytes)",
                        data ? "the wrong size" : "missing", sizeof rng);
    memcpy(rng, data, sizeof rng);
    if ((rng[0] | rng[1] | rng[2] | rng[3]) == 0)
        return tn_error(why, whylen, TN_EFORMAT, "rng: the generator's state is all zeros");
    rc = check_order(f, r->train.n, why, whylen);
    size_t p = r->model->nparams;
    if (!rc) rc = check_floats(f, TAG_PARAMS, "params", p, 0, why, whylen);
    if (!rc) rc = check_floats(f, TAG_OPT_M, "opt_m", p, 0, why, whylen);
    if (!rc && r->opt->v) rc = check_floats(f, TAG_OPT_V, "opt_v", p, 1, why, whylen);
    return rc;
}

/* Restores the run from the newest checkpoint that verifies and fits the run
 * (check_resume), if any. Returns 0 (restored, or a fresh start) or a negative code. */
int tr__restore(run *r, char *err, size_t errlen) {
    if (!r->ckpt_dir) return 0;
    ckpt_file *f = NULL;
    char path[4096];
    int rc = ckpt_load_newest_checked(r->ckpt_dir, check_resume, r, &f, path, sizeof path,
                                      stderr, err, errlen);
    if (rc != 0 || !f) return rc; /* an error, or nothing to restore */
    mdl_config saved;
    uint64_t size;
    const void *cfg = ckpt_find(f, TAG_CONFIG, &size);
    rc = cfg ? tr__config_decode(cfg, size, &saved, err, errlen)
             : tn_error(err, errlen, TN_EFORMAT, "no model configuration");
    /* Checkpoints of another run are a configuration error (TN_EINVAL: exit 2), found
     * before anything is written, so nothing of that run is pruned or overwritten. */
    if (!rc && !same_model(r, &saved))
        rc = tn_error(err, errlen, TN_EINVAL,
                      "the checkpoints in %s are of a different model (other --model, "
                      "--hidden_units, --conv_filters, --activation, --dropout or data); "
                      "hint: use a fresh --job-dir or the flags of that run",
                      r->ckpt_dir);
    uint64_t state[STATE_WORDS];
    if (!rc) rc = tr__take_section(f, TAG_STATE, state, sizeof state, path, err, errlen);
    run_state st = r->st;
    /* the cluster first: another one has another batch per replica, and saying so
     * names what the user changed */
    if (!rc) rc = same_cluster(r, f, path, err, errlen);
    if (!rc) {
        state_decode(state, &st);
        if (!same_settings(r, &st))
            rc = tn_error(err, errlen, TN_EINVAL,
                          "the checkpoints in %s were written by a run with other settings "
                          "(%lld examples, batch %lld, optimizer %lld, seed %llu; this run: "
                          "%lld, %lld, %lld, %llu); hint: use a fresh --job-dir or the flags "
                          "of that run",
                          r->ckpt_dir, (long long)st.ntrain, (long long)st.batch_size,
                          (long long)st.opt_kind, (unsigned long long)st.seed,
                          (long long)r->st.ntrain, (long long)r->st.batch_size,
                          (long long)r->st.opt_kind, (unsigned long long)r->st.seed);
    }
    /* from here on check_resume has vouched for every section */
    size_t p = r->model->nparams;
    float *buf = tn_xmalloc(p * sizeof(float));
    if (!rc) rc = tr__take_section(f, TAG_RNG, st.rng.s, sizeof st.rng.s, path, err, errlen);
    if (!rc) rc = tr__take_section(f, TAG_ORDER, r->order, (uint64_t)r->train.n * sizeof(int32_t),
                               path, err, errlen);
    if (!rc) rc = tr__take_section(f, TAG_PARAMS, buf, p * sizeof(float), path, err, errlen);
    if (!rc) mdl_set_params(r->model, buf);
    if (!rc) rc = tr__take_section(f, TAG_OPT_M, buf, p * sizeof(float), path, err, errlen);
    if (!rc) r->opt->k->upload(r->opt->m, buf, p * sizeof(float));
    if (!rc && r->opt->v) {
        rc = tr__take_section(f, TAG_OPT_V, buf, p * sizeof(float), path, err, errlen);
        if (!rc) r->opt->k->upload(r->opt->v, buf, p * sizeof(float));
    }
    free(buf);
    ckpt_file_free(f);
    if (rc) return rc;
    r->st = st;
    r->opt->t = (int64_t)state[10];
    fprintf(r->out, "resumed from %s (epoch %lld, step %lld)\n", path,
            (long long)st.epoch + 1, (long long)st.global_step);
    return 0;
}

/* ---- multi-worker: one configuration, one starting state ---- */

/* What the replicas of a multi-worker or parameter-server job must agree on, in named
 * parts so that a mismatch says what differs (cl_config). The device is not among
 * them: a replica without a GPU may run on the CPU beside replicas on GPUs. Two parts
 * matter to the synchronous ring only (ring_config): the precision of the products,
 * which changes the gradients every replica's update uses, and whether the steps run
 * on a device or on the host, since the two paths exchange different collectives (a
 * CPU replica can join GPU ones under parameter_server, not multi_worker_mirrored). */
enum { CFG_MODEL, CFG_DATA, CFG_LOOP, CFG_OPTIMISER, CFG_DISTRIBUTION, CFG_PRECISION, CFG_PATH };

static void config_parts(const run *r, const opt_config *oc, cl_config *out) {
    const tr_config *c = r->c;
    memset(out, 0, sizeof *out);
    uint32_t cfg[CONFIG_WORDS];
    config_encode(&r->model->cfg, cfg);
    out->name[CFG_MODEL] = "the model (--model, --hidden_units, --conv_filters, --activation, "
                           "--dropout)";
    out->part[CFG_MODEL] = cl_hash(CL_HASH_INIT, cfg, sizeof cfg);
    int64_t data[] = {r->train.n, r->eval.n};
    out->name[CFG_DATA] = "the data (examples or labels)";
    out->part[CFG_DATA] = cl_hash(cl_hash(CL_HASH_INIT, data, sizeof data), r->train.y,
                                  (size_t)r->train.n * sizeof(int32_t));
    int64_t loop[] = {c->batch_size, c->epochs, (int64_t)c->seed};
    out->name[CFG_LOOP] = "--batch_size, --epochs or --seed";
    out->part[CFG_LOOP] = cl_hash(CL_HASH_INIT, loop, sizeof loop);
    int64_t ov[] = {oc->kind, oc->schedule, oc->warmup_steps, oc->total_steps, oc->decay_steps};
    double od[] = {oc->learning_rate, oc->momentum, oc->weight_decay, oc->beta1,
                   oc->beta2, oc->epsilon, oc->decay_rate};
    out->name[CFG_OPTIMISER] = "the optimiser or its learning-rate schedule";
    out->part[CFG_OPTIMISER] = cl_hash(cl_hash(CL_HASH_INIT, ov, sizeof ov), od, sizeof od);
    int64_t dv[] = {r->shard, c->strategy, c->allreduce_precision, c->allreduce_transport,
                    r->world};
    out->name[CFG_DISTRIBUTION] = "the strategy, sharding or all-reduce flags";
    out->part[CFG_DISTRIBUTION] = cl_hash(cl_hash(CL_HASH_INIT, dv, sizeof dv), &c->bucket_mb,
                                          sizeof c->bucket_mb);
}

/* The ring's configuration: config_parts, the products' precision and the path. */
static void ring_config(const run *r, const opt_config *oc, cl_config *out) {
    config_parts(r, oc, out);
    int64_t precision = r->c->precision, path = r->dev_path;
    out->name[CFG_PRECISION] = "--precision (of the matrix products)";
    out->part[CFG_PRECISION] = cl_hash(CL_HASH_INIT, &precision, sizeof precision);
    out->name[CFG_PATH] = "where the steps run (on a GPU or the CPU presented as a device, "
                          "or on the CPU)";
    out->hint[CFG_PATH] = "multi_worker_mirrored cannot mix the two: run every replica on "
                          "GPUs or every one on the CPU (--device), or use "
                          "--strategy=parameter_server, whose replicas may differ";
    out->part[CFG_PATH] = cl_hash(CL_HASH_INIT, &path, sizeof path);
    /* the job: TF_CONFIG's trial and job (the study's), so that the replicas of another
     * trial, of this study or another, on the same ports are another job */
    const tf_config *tf = r->c->cluster;
    if (tf && tf->trial) out->job = cl_hash(CL_HASH_INIT, tf->trial, strlen(tf->trial) + 1);
    char *job = tf && tf->job ? json_dumps(tf->job, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (job) out->job = cl_hash(out->job ? out->job : CL_HASH_INIT, job, strlen(job));
    free(job);
}

/* The parameter servers' single hash of config_parts (ps.h): a ps names no part. */
static uint64_t ps_config_hash(const run *r, const opt_config *oc) {
    cl_config cfg;
    config_parts(r, oc, &cfg);
    return cl_hash(CL_HASH_INIT, cfg.part, sizeof cfg.part);
}

/* The ring's peers in rank order: the chief (or, without one, worker 0) first. */
static int open_ring(run *r, const cl_config *config, char *err, size_t errlen) {
    const tf_config *tf = r->c->cluster;
    int has_chief = tf->cluster[TF_CHIEF].n > 0;
    cl_peer *peers = tn_xmalloc((size_t)r->world * sizeof *peers);
    char (*names)[32] = tn_xmalloc((size_t)r->world * sizeof *names);
    for (int i = 0; i < r->world; i++) {
        if (has_chief && i == 0) {
            snprintf(names[i], sizeof names[i], "%s 0", tf_type_name(tf, TF_CHIEF));
            peers[i].addr = tf->cluster[TF_CHIEF].addr[0];
        } else {
            int w = has_chief ? i - 1 : i;
            snprintf(names[i], sizeof names[i], "worker %d", w);
            peers[i].addr = tf->cluster[TF_WORKER].addr[w];
        }
        peers[i].name = names[i];
    }
    fprintf(r->out, "multi-worker: replica %d of %d (%s), waiting for the others\n", r->rank,
            r->world, names[r->rank]);
    fflush(r->out);
    int rc = cl_open_config(peers, r->world, r->rank, r->c->peer_timeout, config,
                            r->c->allreduce_transport, &r->ring, err, errlen);
    if (!rc)
        fprintf(r->out, "multi-worker: all %d replicas connected; all-reduce over %s\n",
                r->world, cl_transport_note(r->ring));
    free(peers);
    free(names);
    return rc;
}

/* Every replica starts from the chief's state (its newest checkpoint, or its fresh
 * initialisation), so replicas that were restarted resume together even though only
 * the chief keeps checkpoints. */
static int sync_state(run *r, char *err, size_t errlen) {
    if (!r->ring) return 0;
    size_t p = r->model->nparams;
    const kn_backend *k = r->opt->k;
    uint64_t state[STATE_WORDS];
    state_encode(&r->st, r->opt->t, state);
    float *buf = tn_xmalloc(p * sizeof(float));
    int rc = cl_broadcast(r->ring, state, sizeof state, err, errlen);
    if (!rc) rc = cl_broadcast(r->ring, r->st.rng.s, sizeof r->st.rng.s, err, errlen);
    if (!rc)
        rc = cl_broadcast(r->ring, r->order, (size_t)r->train.n * sizeof(int32_t), err, errlen);
    if (!rc) {
        mdl_get_params(r->model, buf);
        rc = cl_broadcast(r->ring, buf, p * sizeof(float), err, errlen);
        if (!rc) mdl_set_params(r->model, buf);
    }
    float *moments[2] = {r->opt->m, r->opt->v};
    for (int i = 0; i < 2 && !rc; i++) {
        if (!moments[i]) continue;
        k->download(buf, moments[i], p * sizeof(float));
        rc = cl_broadcast(r->ring, buf, p * sizeof(float), err, errlen);
        if (!rc) k->upload(moments[i], buf, p * sizeof(float));
    }
    free(buf);
    if (rc || r->chief) return rc;
    tn_rng rng = r->st.rng;
    state_decode(state, &r->st);
    r->st.rng = rng;
    r->opt->t = (int64_t)state[10];
    if (r->st.global_step > 0)
        fprintf(r->out, "resumed from the chief's state (epoch %lld, step %lld)\n",
                (long long)r->st.epoch + 1, (long long)r->st.global_step);
    return 0;
}

/* Sums the gradients (and the control words after them) over the replicas. */
static int allreduce_grads(run *r, float ctl[2], char *err, size_t errlen) {
    const kn_backend *k = r->model->k;
    size_t p = r->model->nparams, n = p + 2;
    k->upload(r->model->grads + p, ctl, 2 * sizeof(float));
    float *g = r->model->grads;
    if (!k->host_memory) {
        k->download(r->host_grads, g, n * sizeof(float));
        g = r->host_grads;
    }
    int rc = cl_allreduce(r->ring, g, n, r->c->allreduce_precision, err, errlen);
    if (rc) return rc;
    if (!k->host_memory) k->upload(r->model->grads, g, n * sizeof(float));
    memcpy(ctl, g + p, 2 * sizeof(float));
    return 0;
}

static void dev_evaluate(run *r, int64_t lo, int64_t hi, double *loss_sum, int64_t *right);
static void dev_reset(run *r);

int tr__report(run *r, char *err, size_t errlen) {
    int rc = dev_read(r, err, errlen); /* the device path's training sums, first */
    if (rc) return rc;
    int64_t lo = 0, hi = r->eval.n; /* with a ring each replica evaluates a block */
    if (r->ring) tr__block(r->eval.n, r->world, r->rank, &lo, &hi);
    double eval_loss;
    int64_t eval_right;
    if (r->dev_path)
        dev_evaluate(r, lo, hi, &eval_loss, &eval_right);
    else
        evaluate_range(r->model, &r->eval, lo, hi, &eval_loss, &eval_right);
    double sums[5] = {eval_loss, (double)eval_right, r->st.period_loss,
                      (double)r->st.period_correct, (double)r->st.period_count};
    rc = r->ring ? cl_allreduce_f64(r->ring, sums, 5, err, errlen) : 0;
    if (rc) return rc;
    double loss = sums[0] / (double)r->eval.n, acc = sums[1] / (double)r->eval.n;
    if (!isfinite(loss)) /* finite parameters, but too large for the logits (every replica
                            has the same sums, so all stop here) */
        return tn_error(err, errlen, TN_EINVAL,
                        "training diverged: the evaluation loss is %g after step %lld; hint: "
                        "lower --learning_rate",
                        loss, (long long)r->st.global_step),
               TR_DIVERGED;
    double n = sums[4] > 0 ? sums[4] : 1;
    double train_loss = sums[2] / n, train_acc = sums[3] / n;
    double eps = r->period_seconds > 0 ? sums[4] / r->period_seconds : 0.0;
    double epoch = (double)r->st.epoch + (double)r->st.step_in_epoch / (double)r->steps_per_epoch;
    ht_metric m[] = {
        {"accuracy", acc},         {"loss", loss},
        {"train_accuracy", train_acc}, {"train_loss", train_loss},
        {"examples_per_sec", eps}, {"epoch", epoch},
        {"staleness", r->stale_count ? r->stale_sum / (double)r->stale_count : 0.0},
    };
    size_t nm = sizeof m / sizeof m[0] - (r->ps ? 0 : 1);
    if (r->metrics) {
        rc = ht_report(r->metrics, r->st.global_step, m, nm, NULL,
                       tr__now_seconds(CLOCK_REALTIME), err, errlen);
        if (rc) return rc;
    }
    fprintf(r->out,
            "epoch %.2f/%d  step %lld  train_loss %.4f  train_accuracy %.4f  loss %.4f  "
            "accuracy %.4f  %.0f examples/s  %.1fs\n",
            epoch, r->c->epochs, (long long)r->st.global_step, train_loss, train_acc, loss, acc,
            eps, tr__now_seconds(CLOCK_MONOTONIC) - r->start_time);
    if (r->ps)
        fprintf(r->out, "  staleness: mean %.2f over %lld pushes, max %lld so far\n",
                m[6].value, (long long)r->stale_count, (long long)r->stale_max);
    fflush(r->out);
    r->stale_sum = 0;
    r->stale_count = 0;
    r->st.period_loss = 0.0;
    r->st.period_correct = 0;
    r->st.period_count = 0;
    r->period_seconds = 0.0;
    dev_reset(r);
    return 0;
}

/* Saves the final model (configuration and parameters) to JOB_DIR/model.ckpt. */
static int save_model(run *r, char *err, size_t errlen) {
    if (!r->c->job_dir) return 0;
    uint32_t cfg[CONFIG_WORDS];
    uint64_t state[STATE_WORDS];
    config_encode(&r->model->cfg, cfg);
    state_encode(&r->st, r->opt->t, state);
    float *params = tn_xmalloc(r->model->nparams * sizeof(float));
    mdl_get_params(r->model, params);
    ckpt_section s[] = {{TAG_CONFIG, cfg, sizeof cfg},
                        {TAG_STATE, state, sizeof state},
                        {TAG_PARAMS, params, r->model->nparams * sizeof(float)}};
    size_t len = strlen(r->c->job_dir) + 16;
    char *path = tn_xmalloc(len);
    snprintf(path, len, "%s/model.ckpt", r->c->job_dir);
    int rc = ckpt_write(path, s, 3, err, errlen);
    if (!rc && r->chief) fprintf(r->out, "saved the model to %s\n", path);
    free(path);
    free(params);
    return rc;
}

/* Prints a fingerprint of the parameters: replicas that must hold the same
 * parameters print the same line (the tests compare them). */
static void print_fingerprint(run *r) {
    float *params = tn_xmalloc(r->model->nparams * sizeof(float));
    mdl_get_params(r->model, params);
    fprintf(r->out, "parameters: fnv1a %016llx after step %lld\n",
            (unsigned long long)cl_hash(CL_HASH_INIT, params, r->model->nparams * sizeof(float)),
            (long long)r->st.global_step);
    free(params);
}

/* ---- several devices in one process (mirrored, central_storage) ---- */

typedef struct dev_step {
    run *r;
    int64_t global;        /* examples of the step over all devices */
    int b[DV_MAX];         /* each device's share */
    double loss[DV_MAX];
    int64_t correct[DV_MAX];
} dev_step;

void tr__dropout_stream(const run *r, int rank, tn_rng *drop) {
    /* a stream per step and replica, so a resumed run draws the same masks and the
     * data order's stream is the same on every replica */
    tn_rng_seed(drop, tn_mix64(r->c->seed ^ tn_mix64((uint64_t)r->st.global_step *
                                                         (uint64_t)r->world +
                                                     (uint64_t)rank + 1)));
}

/* Each replica's loss gradient is the mean over its b examples; weighted by
 * b / global, the sum over replicas is the mean over the whole step. The weight is
 * applied to the (b, K) gradient of the logits, which backward carries linearly into
 * every parameter's gradient, rather than to the P gradients themselves. */
static void weigh_share(mdl_model *m, int b, int64_t global) {
    if (global != b) m->k->scale(m->dlogits, (float)b / (float)global, (size_t)b * m->cfg.classes);
}

/* Forward and backward of one replica's share of the step. */
static void replica_step(run *r, mdl_model *m, int rank, const int32_t *idx, int b,
                         int64_t global, double *loss, int64_t *correct) {
    *loss = 0.0;
    *correct = 0;
    if (b == 0) {
        m->k->fill(m->grads, 0.0f, m->nparams);
        return;
    }
    tn_rng drop;
    tr__dropout_stream(r, rank, &drop);
    mdl_forward_rows(m, r->train.x, r->train.y, idx, b, 1, &drop, loss, correct);
    weigh_share(m, b, global);
    mdl_backward(m, b);
}

static void device_step(int d, void *arg) {
    dev_step *s = arg;
    replica_step(s->r, s->r->dev[d], d, s->r->didx[d], s->b[d], s->global, &s->loss[d],
                 &s->correct[d]);
}

static void device_update(int d, void *arg) {
    run *r = arg;
    opt_step(r->dopt[d], r->dev[d]->params, r->dev[d]->grads);
}

/* The update after every device's gradient is in: mirrored sums the gradients on
 * every device and each applies it to its own copy of the variables (they stay
 * identical); central_storage sums them on the host, updates the host's variables
 * and copies them to every device. */
static void devices_update(run *r) {
    float *grads[DV_MAX], *params[DV_MAX];
    size_t p = r->model->nparams;
    for (int d = 0; d < r->ndev; d++) {
        grads[d] = r->dev[d]->grads;
        params[d] = r->dev[d]->params;
    }
    if (r->c->strategy == TR_MIRRORED) {
        dv_allreduce(&r->group, grads, p);
        dv_parallel(&r->group, device_update, r);
    } else {
        dv_reduce_to_host(&r->group, grads, p, r->central_grads);
        opt_step(r->opt, r->central, r->central_grads);
        dv_broadcast_from_host(&r->group, r->central, params, p);
    }
}

/* After a restore or an initialisation of device 0: every device (and the central
 * store) takes its variables and optimiser state. */
static void devices_sync(run *r) {
    if (r->ndev <= 1) return;
    size_t p = r->model->nparams;
    float *params[DV_MAX];
    for (int d = 0; d < r->ndev; d++) params[d] = r->dev[d]->params;
    float *host = tn_xmalloc(p * sizeof(float));
    if (r->central) {
        mdl_get_params(r->model, r->central);
    } else {
        for (int i = 0; i < 2; i++) { /* m, then v: through the host (other devices) */
            const float *from = i ? r->opt->v : r->opt->m;
            if (!from) continue;
            r->opt->k->download(host, from, p * sizeof(float));
            for (int d = 1; d < r->ndev; d++)
                r->dopt[d]->k->upload(i ? r->dopt[d]->v : r->dopt[d]->m, host, p * sizeof(float));
        }
        for (int d = 1; d < r->ndev; d++) r->dopt[d]->t = r->opt->t;
    }
    mdl_get_params(r->model, host);
    dv_broadcast_from_host(&r->group, host, params, p);
    free(host);
}

/* ---- the step without the host (dev_path; see the header) ---- */

/* Copies the data sets to every device (the evaluation set to device 0, which
 * evaluates), and makes each device's step values, sums and index list. */
static void dev_open(run *r) {
    size_t n = (size_t)r->train.n, d = (size_t)r->train.d, B = (size_t)r->c->batch_size;
    size_t ne = (size_t)r->eval.n;
    /* TRAINER_CUDA_GRAPHS=0: every step's calls made directly (to compare, or to debug) */
    const char *graphs = getenv("TRAINER_CUDA_GRAPHS");
    int no_graphs = graphs && strcmp(graphs, "0") == 0;
    if (kn_cuda_device(r->model->k) >= 0)
        fprintf(r->out, "device: the data sets are on the GPU; each step is %s\n",
                no_graphs ? "made call by call (TRAINER_CUDA_GRAPHS=0)"
                          : "recorded once as a CUDA graph and replayed");
    for (int q = 0; q < r->ndev; q++) {
        const kn_backend *k = r->dev[q]->k;
        resident *s = &r->res[q];
        s->no_graphs = no_graphs;
        s->X = k->alloc(n * d * sizeof(float));
        k->upload(s->X, r->train.x, n * d * sizeof(float));
        s->Y = k->alloc(n * sizeof(int32_t));
        k->upload(s->Y, r->train.y, n * sizeof(int32_t));
        if (q == 0) {
            s->EX = k->alloc(ne * d * sizeof(float));
            k->upload(s->EX, r->eval.x, ne * d * sizeof(float));
            s->EY = k->alloc(ne * sizeof(int32_t));
            k->upload(s->EY, r->eval.y, ne * sizeof(int32_t));
        }
        s->index = k->alloc((n + B) * sizeof(int32_t));
        s->args = k->alloc(sizeof(dev_step_args));
        s->acc = k->alloc(sizeof(kn_loss_acc));
        s->eval_acc = k->alloc(sizeof(kn_loss_acc));
        s->one = k->alloc(sizeof(int64_t));
        const int64_t one = 1;
        k->upload(s->one, &one, sizeof one);
    }
}

static void dev_close(run *r) {
    for (int q = 0; q < r->ndev; q++) {
        if (!r->dev[q]) continue;
        const kn_backend *k = r->dev[q]->k;
        resident *s = &r->res[q];
        for (int i = 0; i < DEV_GRAPHS; i++) k->graph_free(s->graphs[i].graph);
        void *bufs[] = {s->X, s->Y, s->EX, s->EY, s->index, s->args, s->acc, s->eval_acc, s->one};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) k->free(bufs[i]);
        memset(s, 0, sizeof *s);
    }
}

/* At the start of an epoch: each device's index list is this replica's order of the
 * examples (FILE sharding: its block), then the first B entries again, so that a batch
 * that wraps round the end (OFF sharding) is one run of positions. */
static void dev_index(run *r) {
    const int32_t *list = r->shard == TR_SHARD_FILE ? r->local : r->order;
    int64_t len = r->shard == TR_SHARD_FILE ? r->nlocal : r->train.n;
    size_t total = (size_t)r->train.n + (size_t)r->c->batch_size;
    int32_t *host = tn_xmalloc(total * sizeof(int32_t));
    for (size_t i = 0; i < total; i++) host[i] = len > 0 ? list[(int64_t)i % len] : 0;
    for (int q = 0; q < r->ndev; q++)
        r->dev[q]->k->upload(r->res[q].index, host, total * sizeof(int32_t));
    free(host);
}

/* The period's sums start from r->st (a restore or the chief's state): on device 0,
 * zero elsewhere. */
static void dev_load_sums(run *r) {
    if (!r->dev_path) return;
    for (int q = 0; q < r->ndev; q++) {
        kn_loss_acc a;
        memset(&a, 0, sizeof a);
        if (q == 0) {
            a.loss_sum = r->st.period_loss;
            a.correct = r->st.period_correct;
        }
        r->dev[q]->k->upload(r->res[q].acc, &a, sizeof a);
    }
}

/* After a report: the sums start again from zero. */
static void dev_reset(run *r) { dev_load_sums(r); }

/* Reads the devices' sums into r->st's period sums (waiting for the devices: that wait
 * is training time). Returns TR_DIVERGED, with the step and its loss, when a batch's
 * loss was not finite. */
static int dev_read(run *r, char *err, size_t errlen) {
    if (!r->dev_path) return 0;
    double t0 = tr__now_seconds(CLOCK_MONOTONIC), loss = 0.0, bad_loss = 0.0;
    int64_t right = 0, bad = 0;
    for (int q = 0; q < r->ndev; q++) {
        kn_loss_acc a;
        r->dev[q]->k->download(&a, r->res[q].acc, sizeof a);
        loss = q == 0 ? a.loss_sum : loss + a.loss_sum;
        right += a.correct;
        if (a.bad_tag && (!bad || a.bad_tag < bad)) {
            bad = a.bad_tag;
            bad_loss = a.bad_loss;
        }
    }
    r->period_seconds += tr__now_seconds(CLOCK_MONOTONIC) - t0;
    r->st.period_loss = loss;
    r->st.period_correct = right;
    if (!bad) return 0;
    tn_error(err, errlen, TN_EINVAL,
             "training diverged: the loss is %g at step %lld; hint: lower --learning_rate",
             bad_loss, (long long)bad);
    return TR_DIVERGED;
}

/* Evaluation of rows [lo, hi) of the evaluation set on device 0. */
static void dev_evaluate(run *r, int64_t lo, int64_t hi, double *loss_sum, int64_t *right) {
    const kn_backend *k = r->model->k;
    resident *s = &r->res[0];
    kn_loss_acc a;
    memset(&a, 0, sizeof a);
    k->upload(s->eval_acc, &a, sizeof a);
    mdl_evaluate_device(r->model, s->EX, s->EY, lo, hi, s->eval_acc, s->one);
    k->download(&a, s->eval_acc, sizeof a);
    *loss_sum = a.loss_sum;
    *right = a.correct;
}

/* The values device d's step reads: where its batch starts, its dropout seed (the
 * host path's stream for that replica and step), the optimiser's scalars. */
static void dev_args(run *r, int d, int rank, int64_t pos) {
    dev_step_args a;
    memset(&a, 0, sizeof a);
    a.pos = pos;
    a.tag = r->st.global_step + 1;
    tn_rng drop;
    tr__dropout_stream(r, rank, &drop);
    a.seed = tn_rng_u64(&drop);
    opt_scalars(r->dopt[d] ? r->dopt[d] : r->opt, a.hyper);
    r->dev[d]->k->upload_small(r->res[d].args, &a, sizeof a);
}

/* The calls of device d's step: gather, forward, loss, backward, and with update the
 * optimiser (one_device). Nothing here waits for the device or copies to the host. */
static void dev_body(run *r, int d, int b, int64_t global, int update) {
    mdl_model *m = r->dev[d];
    resident *s = &r->res[d];
    mdl_forward_device(m, s->X, s->Y, s->index, &s->args->pos, b, &s->args->seed, s->acc,
                       &s->args->tag);
    weigh_share(m, b, global);
    mdl_backward(m, b);
    if (update) opt_apply_device(r->dopt[d], m->params, m->grads, s->args->hyper);
}

/* Runs device d's step: replays its graph for this shape (b, global); the second time
 * a shape comes round its calls are recorded first (the first run sized every
 * buffer); a backend without graphs runs the calls directly. */
static void dev_run(run *r, int d, int b, int64_t global, int update) {
    const kn_backend *k = r->dev[d]->k;
    resident *s = &r->res[d];
    dev_graph *g = NULL, *oldest = &s->graphs[0];
    for (int i = 0; i < DEV_GRAPHS; i++) {
        dev_graph *e = &s->graphs[i];
        if (e->runs && e->b == b && e->global == global) g = e;
        if (e->used < oldest->used) oldest = e;
    }
    if (!g) {
        k->graph_free(oldest->graph);
        memset(oldest, 0, sizeof *oldest);
        oldest->b = b;
        oldest->global = global;
        g = oldest;
    }
    g->used = ++s->clock;
    if (!g->graph && g->runs > 0 && !s->no_graphs) {
        if (k->graph_begin()) {
            dev_body(r, d, b, global, update);
            g->graph = k->graph_end();
        }
        /* no graphs on this backend, or the recording failed (nothing ran: the calls
         * are made below); the backend said so, and no other shape tries again */
        if (!g->graph) s->no_graphs = 1;
    }
    if (g->graph)
        k->graph_launch(g->graph);
    else
        dev_body(r, d, b, global, update);
    g->runs++;
}

/* The error of a run whose loss went non-finite: here (at `step`, with `loss`) or on
 * another replica (which stops this one at `step` too). Returns TR_DIVERGED. */
static int diverged_error(char *err, size_t errlen, int here, double loss, long long step) {
    if (here)
        tn_error(err, errlen, TN_EINVAL,
                 "training diverged: the loss is %g at step %lld; hint: lower --learning_rate",
                 loss, step);
    else
        tn_error(err, errlen, TN_EINVAL,
                 "training diverged on another replica at step %lld; hint: lower "
                 "--learning_rate",
                 step);
    return TR_DIVERGED;
}

/* Multi-worker on the device: the all-reduce (NCCL, or the ring through the host) with
 * the stop and divergence votes after the gradients, then the update. */
static int dev_ring(run *r, char *err, size_t errlen) {
    mdl_model *m = r->model;
    const kn_backend *k = m->k;
    size_t p = m->nparams;
    kn_loss_acc a;
    k->download(&a, r->res[0].acc, sizeof a); /* waits: the vote needs this step's loss */
    float ctl[2] = {(float)stop_requested, (float)(a.bad_tag != 0)};
    int rc;
    if (r->nccl) {
        k->upload_small(m->grads + p, ctl, sizeof ctl);
        rc = kc_allreduce(r->nccl, m->grads, p + 2, r->c->allreduce_precision == CL_BF16,
                          r->c->peer_timeout, err, errlen);
        if (!rc) k->download(ctl, m->grads + p, sizeof ctl);
    } else {
        rc = allreduce_grads(r, ctl, err, errlen);
    }
    if (rc) return rc;
    /* a stop asked of any replica stops all of them after this step */
    r->stop_vote = ctl[0] > 0;
    if (r->stop_vote && !stop_requested) stop_requested = SIGTERM;
    if (a.bad_tag || ctl[1] > 0)
        return diverged_error(err, errlen, a.bad_tag != 0, a.bad_loss,
                        a.bad_tag ? (long long)a.bad_tag : (long long)r->st.global_step + 1);
    opt_apply_device(r->opt, m->params, m->grads, r->res[0].args->hyper);
    r->opt->t++;
    return 0;
}

/* One synchronous step on the device(s); *examples gets the examples of this process. */
static int dev_path_step(run *r, int *examples, char *err, size_t errlen) {
    int64_t k = r->st.step_in_epoch, global = 0, pos[DV_MAX];
    int b[DV_MAX];
    size_t p = r->model->nparams;
    *examples = 0;
    for (int d = 0; d < r->ndev; d++) {
        int rank = r->ndev > 1 ? d : r->rank;
        b[d] = local_batch(r, k, rank, r->ndev > 1 ? r->didx[d] : r->idx, &global, &pos[d]);
        dev_args(r, d, rank, pos[d]);
        *examples += b[d];
    }
    int fused = r->ndev == 1 && !r->ring; /* one_device: the update is part of the step */
    for (int d = 0; d < r->ndev; d++) {
        if (b[d] > 0)
            dev_run(r, d, b[d], global, fused);
        else
            r->dev[d]->k->fill(r->dev[d]->grads, 0.0f, p);
    }
    if (fused) {
        r->opt->t++;
        return 0;
    }
    if (r->ring) return dev_ring(r, err, errlen);
    float *grads[DV_MAX], *params[DV_MAX];
    for (int d = 0; d < r->ndev; d++) {
        grads[d] = r->dev[d]->grads;
        params[d] = r->dev[d]->params;
    }
    if (r->c->strategy == TR_MIRRORED) {
        dv_allreduce(&r->group, grads, p);
        for (int d = 0; d < r->ndev; d++) {
            opt_apply_device(r->dopt[d], params[d], grads[d], r->res[d].args->hyper);
            r->dopt[d]->t++;
        }
    } else {
        dv_reduce_to_host(&r->group, grads, p, r->central_grads);
        opt_step(r->opt, r->central, r->central_grads);
        dv_broadcast_from_host(&r->group, r->central, params, p);
    }
    return 0;
}

/* Multi-worker on GPUs: NCCL between the replicas when every one of them can use it (a
 * vote over the ring), with the unique id sent from the chief over the ring; else the
 * ring carries the gradients (through the host). */
static int open_nccl(run *r, char *err, size_t errlen) {
    char why[512] = "";
    const kn_backend *k = r->model->k;
    double vote = 0;
    if (kn_cuda_device(k) < 0)
        snprintf(why, sizeof why, "the replicas do not run on CUDA GPUs");
    else if (kc_available(why, sizeof why))
        vote = 1;
    int rc = cl_allreduce_f64(r->ring, &vote, 1, err, errlen);
    if (rc) return rc;
    if (vote == r->world) {
        struct {
            unsigned char id[KC_ID_BYTES];
            int32_t ok;
            char why[256];
        } offer;
        memset(&offer, 0, sizeof offer);
        if (r->rank == 0)
            offer.ok = kc_unique_id(offer.id, offer.why, sizeof offer.why) == 0;
        rc = cl_broadcast(r->ring, &offer, sizeof offer, err, errlen);
        if (rc) return rc;
        double joined = 0;
        if (offer.ok)
            joined = kc_comm_new(k, r->world, r->rank, offer.id, r->c->peer_timeout, &r->nccl,
                                 why, sizeof why) == 0;
        else
            snprintf(why, sizeof why, "the chief: %s", offer.why);
        rc = cl_allreduce_f64(r->ring, &joined, 1, err, errlen);
        if (rc) return rc;
        if (joined == r->world) {
            fprintf(r->out, "multi-worker: gradients all-reduced with NCCL %s, GPU to GPU\n",
                    kc_version());
            return 0;
        }
        kc_comm_free(r->nccl);
        r->nccl = NULL;
        if (!why[0])
            snprintf(why, sizeof why, "%d of %d replicas could not join the NCCL communicator",
                     r->world - (int)joined, r->world);
    } else if (!why[0]) {
        snprintf(why, sizeof why, "%d of %d replicas cannot use NCCL", r->world - (int)vote,
                 r->world);
    }
    fprintf(r->out, "multi-worker: gradients all-reduced through the host, not with NCCL (%s)\n",
            why);
    return 0;
}

/* Multi-worker: forward, then backward while the buckets of finished gradients are
 * all-reduced (bucket.h); ctl gets the summed control words (stop and divergence
 * votes), which travel in the spare words after the gradients. */
static void on_grads_ready(void *ctx, size_t lo) { bk_ready(ctx, lo); }

static int ring_step(run *r, int b, int64_t global, double *loss, int64_t *correct,
                     float ctl[2], char *err, size_t errlen) {
    mdl_model *m = r->model;
    size_t p = m->nparams;
    if (!r->reducer) { /* gradients off the host: one all-reduce after backward */
        replica_step(r, m, r->rank, r->idx, b, global, loss, correct);
        ctl[0] = (float)stop_requested;
        ctl[1] = (float)!isfinite(*loss);
        return allreduce_grads(r, ctl, err, errlen);
    }
    bk_begin(r->reducer);
    *loss = 0.0;
    *correct = 0;
    if (b > 0) {
        tn_rng drop;
        tr__dropout_stream(r, r->rank, &drop);
        mdl_forward_rows(m, r->train.x, r->train.y, r->idx, b, 1, &drop, loss, correct);
        weigh_share(m, b, global);
    }
    m->grads[p] = (float)stop_requested;
    m->grads[p + 1] = (float)!isfinite(*loss);
    if (b > 0)
        mdl_backward(m, b);
    else
        m->k->fill(m->grads, 0.0f, p);
    int rc = bk_finish(r->reducer, err, errlen);
    ctl[0] = m->grads[p];
    ctl[1] = m->grads[p + 1];
    return rc;
}

/* Sets up the bucketed all-reduce: buckets of whole layers, at least
 * --allreduce_bucket_mb each. */
static void start_reducer(run *r) {
    mdl_model *m = r->model;
    if (!r->ring || !m->k->host_memory) return;
    size_t starts[MDL_MAX_LAYERS];
    int n = 0;
    for (int l = 0; l < m->nlayers; l++)
        if (m->layers[l].type == MDL_DENSE || m->layers[l].type == MDL_CONV)
            starts[n++] = m->layers[l].w_off;
    size_t floats = (size_t)(r->c->bucket_mb * (1 << 20) / sizeof(float));
    r->reducer = bk_new(r->ring, m->grads, m->nparams + 2, starts, n, floats,
                        r->c->allreduce_precision);
    m->grads_ready = on_grads_ready;
    m->grads_ready_ctx = r->reducer;
    fprintf(r->out, "multi-worker: gradients all-reduced in %d bucket%s%s\n",
            bk_count(r->reducer), bk_count(r->reducer) == 1 ? "" : "s",
            bk_count(r->reducer) > 1 ? ", overlapped with the backward pass" : "");
}

static int train_loop(run *r, char *err, size_t errlen) {
    const tr_config *c = r->c;
    mdl_model *m = r->model;
    while (r->st.epoch < c->epochs) {
        if (r->st.step_in_epoch == 0) {
            tr__shuffle(r);
            make_local(r);
            if (r->dev_path) dev_index(r);
        }
        double t0 = tr__now_seconds(CLOCK_MONOTONIC);
        int64_t global;
        double loss = 0.0;
        int64_t correct = 0;
        int b = 0;
        if (r->dev_path) {
            int rc = dev_path_step(r, &b, err, errlen);
            if (rc) return rc;
        } else if (r->ndev > 1) {
            dev_step ds = {.r = r};
            for (int d = 0; d < r->ndev; d++)
                ds.b[d] = local_batch(r, r->st.step_in_epoch, d, r->didx[d], &ds.global, NULL);
            dv_parallel(&r->group, device_step, &ds);
            for (int d = 0; d < r->ndev; d++) {
                loss += ds.loss[d];
                correct += ds.correct[d];
                b += ds.b[d];
            }
        } else {
            b = local_batch(r, r->st.step_in_epoch, r->rank, r->idx, &global, NULL);
            if (!r->ring) replica_step(r, m, r->rank, r->idx, b, global, &loss, &correct);
        }
        int diverged = 0, peer_diverged = 0;
        if (r->dev_path) {
            /* the device's sums say, when they are read (dev_read, dev_ring) */
        } else if (r->ring) {
            float ctl[2];
            int rc = ring_step(r, b, global, &loss, &correct, ctl, err, errlen);
            if (rc) return rc;
            /* a stop asked of any replica stops all of them after this step, so the
             * chief's checkpoint is the state every replica reached */
            r->stop_vote = ctl[0] > 0;
            if (r->stop_vote && !stop_requested) stop_requested = SIGTERM;
            diverged = !isfinite(loss);
            peer_diverged = ctl[1] > 0 && !diverged;
        } else {
            diverged = !isfinite(loss);
        }
        if (diverged || peer_diverged)
            return diverged_error(err, errlen, diverged, loss, (long long)r->st.global_step + 1);
        if (!r->dev_path) { /* (dev_step updates on the device) */
            if (r->ndev > 1)
                devices_update(r);
            else
                opt_step(r->opt, m->params, m->grads);
        }
        r->period_seconds += tr__now_seconds(CLOCK_MONOTONIC) - t0;
        if (!r->dev_path) { /* the device path sums on the device (dev_read) */
            r->st.period_loss += loss;
            r->st.period_correct += correct;
        }
        r->st.period_count += b;
        r->st.global_step++;
        int end_of_epoch = ++r->st.step_in_epoch == r->steps_per_epoch;
        if (end_of_epoch) {
            r->st.epoch++;
            r->st.step_in_epoch = 0;
        }
        int report = end_of_epoch ||
                     (c->report_every > 0 && r->st.global_step % c->report_every == 0);
        /* With a ring, the votes decide (the same on every replica), never this
         * replica's flag alone, which a signal may have set after its vote went out. */
        int stopping = r->ring ? r->stop_vote : stop_requested != 0;
        int save = end_of_epoch || stopping ||
                   (c->checkpoint_every > 0 && r->st.global_step % c->checkpoint_every == 0);
        int rc = 0;
        if (r->dev_path && r->st.global_step % DEV_CHECK_EVERY == 0) rc = dev_read(r, err, errlen);
        /* The loss checked above is the one the update started from: an update can still
         * make the parameters non-finite, which nothing would see before the next step,
         * and after the last step nothing would at all. Before metrics or a checkpoint
         * leave, the parameters themselves (every replica at the same steps); on the
         * device, after its loss sums are read, which name the step a loss went
         * non-finite at where one did. */
        if (!rc && (report || save)) rc = dev_read(r, err, errlen);
        if (!rc && (report || save)) rc = tr__check_params(r, err, errlen);
        if (!rc && report) rc = tr__report(r, err, errlen);
        if (!rc && save) rc = tr__save_checkpoint(r, err, errlen);
        if (rc) return rc;
        if (stopping) {
            fprintf(r->out, "stopped by signal %d at step %lld%s\n", (int)stop_requested,
                    (long long)r->st.global_step, r->ckpt_dir ? " (checkpoint saved)" : "");
            return TR_INTERRUPTED;
        }
    }
    return 0;
}

/* ---- devices ---- */

/* The backends of n replicas in this process, into ks[0..n): CUDA devices first,
 * first + 1, ... (modulo the GPUs visible) with --device=gpu, else the CPU (presented
 * as a device with emulate_device, which also takes --precision). Returns 0, or
 * TN_EINVAL with the reason (no GPU, too few GPUs for --devices, no cuBLAS, a GPU this
 * build has no code for, a precision the CPU lacks: re-running cannot help). */
int tr__open_backends(const tr_config *c, int first, int n, const kn_backend **ks,
                      FILE *out, char *err, size_t errlen) {
    /* Out of memory, on the host or a GPU, says what to lower (common/status.h). */
    char hint[192];
    snprintf(hint, sizeof hint,
             "the model and its batch need more memory than there is: lower --batch_size "
             "(this run: %d per replica) or the model's size (--hidden_units, --conv_filters)",
             c->batch_size);
    tn_set_oom_hint(hint);
    if (c->device != TR_GPU) {
        if (c->precision != KN_FP32 && !c->emulate_device)
            return tn_error(err, errlen, TN_EINVAL,
                            "--precision=%s needs --device=gpu (the CPU computes in fp32)",
                            kn_precision_name(c->precision));
        const kn_backend *k = c->emulate_device ? kn_cpu_device() : kn_cpu();
        for (int d = 0; d < n; d++) ks[d] = k;
        if (c->emulate_device) {
            if (k->set_precision(c->precision) != 0)
                return tn_error(err, errlen, TN_EINVAL, "%s has no %s products", k->name,
                                kn_precision_name(c->precision));
            fprintf(out, "device: the CPU presented as a device (%s: GPU code paths, CPU "
                         "kernels); %s matrix products\n",
                    k->name, kn_precision_name(c->precision));
        }
        return 0;
    }
    char why[512];
    int count = kn_cuda_count(why, sizeof why);
    if (count == 0) return tn_error(err, errlen, TN_EINVAL, "--device=gpu: %s", why);
    if (n > count)
        return tn_error(err, errlen, TN_EINVAL,
                        "--devices=%d, but %d GPU%s visible; hint: use --devices=%d or fewer, "
                        "or make more GPUs visible (CUDA_VISIBLE_DEVICES)",
                        n, count, count == 1 ? " is" : "s are", count);
    for (int d = 0; d < n; d++) {
        int gpu = (first + d) % count;
        ks[d] = kn_cuda(gpu, why, sizeof why);
        if (!ks[d]) /* a missing cuBLAS: re-running cannot help either */
            return tn_error(err, errlen, TN_EINVAL, "GPU %d: %s", gpu, why);
        if (ks[d]->set_precision(c->precision) != 0)
            return tn_error(err, errlen, TN_EINVAL, "GPU %d has no %s products", gpu,
                            kn_precision_name(c->precision));
        char desc[256];
        kn_cuda_describe(gpu, desc, sizeof desc);
        fprintf(out, "device: GPU %d: %s; %s matrix products\n", gpu, desc,
                kn_precision_name(c->precision));
    }
    kn_cuda_set_oom_hint(hint);
    fflush(out);
    return 0;
}

const char *tr_strategy_name(int strategy) {
    switch (strategy) {
    case TR_AUTO: return "auto";
    case TR_ONE_DEVICE: return "one_device";
    case TR_MIRRORED: return "mirrored";
    case TR_CENTRAL_STORAGE: return "central_storage";
    case TR_MULTI_WORKER: return "multi_worker_mirrored";
    case TR_PARAMETER_SERVER: return "parameter_server";
    default: return "?";
    }
}

const char *tr_shard_name(int shard) {
    switch (shard) {
    case TR_SHARD_AUTO: return "auto";
    case TR_SHARD_DATA: return "data";
    case TR_SHARD_FILE: return "file";
    case TR_SHARD_OFF: return "off";
    default: return "?";
    }
}

int tr_pick_strategy(const tf_config *cluster) {
    if (!cluster) return TR_ONE_DEVICE;
    if (cluster->cluster[TF_PS].n > 0) return TR_PARAMETER_SERVER;
    return tf_world_size(cluster) > 1 ? TR_MULTI_WORKER : TR_ONE_DEVICE;
}

int tr_run(const tr_config *c, FILE *out, char *err, size_t errlen) {
    if (c->batch_size < 1 || c->batch_size > 65536)
        return tn_error(err, errlen, TN_EINVAL, "--batch_size must be 1 to 65536, got %d",
                        c->batch_size);
    if (c->threads < 1 || c->threads > 1024)
        return tn_error(err, errlen, TN_EINVAL, "--threads must be 1 to 1024, got %d", c->threads);
    if (c->eval_only) return tr__eval_only(c, out, err, errlen);
    if (c->epochs < 1) return tn_error(err, errlen, TN_EINVAL, "--epochs must be >= 1");
    if (c->keep_checkpoints < 1)
        return tn_error(err, errlen, TN_EINVAL, "--keep_checkpoints must be >= 1");
    if (c->report_every < 0 || c->checkpoint_every < 0)
        return tn_error(err, errlen, TN_EINVAL,
                        "--report_every and --checkpoint_every must be >= 0");
    if (c->job_dir) { /* known now, not at the first checkpoint an epoch later */
        char *ck = tn_xasprintf("%s/checkpoints", c->job_dir);
        int rc = tn_make_dirs(ck, err, errlen);
        if (!rc && access(ck, W_OK) != 0)
            rc = tn_error(err, errlen, TN_EIO,
                          "cannot write checkpoints into %s: %s; hint: give --job-dir a "
                          "folder this user can write",
                          ck, strerror(errno));
        free(ck);
        if (rc) return rc;
    }
    run r = {.c = c, .out = out, .world = 1, .chief = 1};
    int ps_mode = c->strategy == TR_PARAMETER_SERVER && c->cluster;
    if ((c->strategy == TR_MULTI_WORKER || ps_mode) && c->cluster) {
        r.world = tf_world_size(c->cluster);
        r.rank = tf_rank(c->cluster);
        r.chief = tf_is_chief(c->cluster);
    }
    int in_process = c->strategy == TR_MIRRORED || c->strategy == TR_CENTRAL_STORAGE;
    r.ndev = in_process && c->devices > 1 ? c->devices : 1;
    if (r.ndev > 1) r.world = r.ndev; /* device d takes rank d's share of each step */
    r.shard = c->shard_policy == TR_SHARD_AUTO ? TR_SHARD_DATA : c->shard_policy;
    if (r.ndev > 1 && r.shard != TR_SHARD_DATA)
        return tn_error(err, errlen, TN_EINVAL,
                        "--shard_policy=%s applies to the multi-worker strategies; devices in "
                        "one process split each batch",
                        tr_shard_name(r.shard));
    r.start_time = tr__now_seconds(CLOCK_MONOTONIC);
    mdl_config mc;
    opt_config oc = c->opt;
    int rc = load_data(&r, err, errlen);
    if (!rc && r.train.n < r.world)
        rc = tn_error(err, errlen, TN_EINVAL,
                      "%lld training examples cannot be shared by %d replicas",
                      (long long)r.train.n, r.world);
    if (!rc) rc = shape_model(&r, &mc, err, errlen);
    if (!rc) {
        r.steps_per_epoch = ps_mode ? (tr__ps_share(&r, r.rank) + c->batch_size - 1) / c->batch_size
                                    : epoch_steps(&r);
        oc.total_steps = ps_mode ? tr__ps_total_steps(&r) : r.steps_per_epoch * c->epochs;
        rc = opt_config_check(&oc, err, errlen);
    }
    if (!rc && r.chief) rc = ht_writer_open(c->metric_file, NULL, &r.metrics, err, errlen);
    if (rc) goto done;

    /* a replica of a multi-worker job takes GPU rank % count */
    const kn_backend *ks[DV_MAX];
    rc = tr__open_backends(c, r.world > 1 && r.ndev == 1 ? r.rank : 0, r.ndev, ks, out, err, errlen);
    if (rc) goto done;
    const kn_backend *k = ks[0];
    /* devices in one process share the cores */
    k->set_threads(r.ndev > 1 ? (c->threads / r.ndev > 0 ? c->threads / r.ndev : 1) : c->threads);
    /* the model's buffers for the rows a step or an evaluation chunk can have: a batch
     * larger than the training set (--batch_size=8192 over 10 examples) never fills */
    int rows = r.train.n < c->batch_size ? (int)r.train.n : c->batch_size;
    r.model = mdl_new(&mc, k, rows);
    /* central_storage: the optimiser updates the variables on the host */
    int central = r.ndev > 1 && c->strategy == TR_CENTRAL_STORAGE;
    r.opt = opt_new(&oc, central ? kn_cpu() : k, r.model->nparams);
    r.group.n = r.ndev;
    r.dev[0] = r.model;
    r.dopt[0] = r.opt;
    for (int d = 0; d < r.ndev; d++) {
        r.group.k[d] = ks[d];
        if (d > 0) r.dev[d] = mdl_new(&mc, ks[d], rows);
        if (d > 0 && c->strategy == TR_MIRRORED)
            r.dopt[d] = opt_new(&oc, ks[d], r.model->nparams);
        r.didx[d] = tn_xmalloc((size_t)c->batch_size * sizeof(int32_t));
    }
    if (r.ndev > 1) {
        char note[640];
        dv_open(&r.group, note, sizeof note);
        if (!k->host_memory) fprintf(out, "%s: %s\n", tr_strategy_name(c->strategy), note);
    }
    r.dev_path = !k->host_memory && !ps_mode;
    if (central) {
        r.central = tn_xmalloc(r.model->nparams * sizeof(float));
        r.central_grads = tn_xmalloc(r.model->nparams * sizeof(float));
    }
    r.order = tn_xmalloc((size_t)r.train.n * sizeof(int32_t));
    r.local = r.shard == TR_SHARD_FILE || ps_mode
                  ? tn_xmalloc((size_t)r.train.n * sizeof(int32_t))
                  : NULL;
    r.idx = tn_xmalloc((size_t)c->batch_size * sizeof(int32_t));
    if (!k->host_memory)
        r.host_grads = tn_xmalloc((r.model->nparams + MDL_GRAD_SPARE) * sizeof(float));
    if (c->job_dir) {
        size_t len = strlen(c->job_dir) + 16;
        r.ckpt_dir = tn_xmalloc(len);
        snprintf(r.ckpt_dir, len, "%s/checkpoints", c->job_dir);
    }
    r.st.ntrain = r.train.n;
    r.st.batch_size = c->batch_size;
    r.st.opt_kind = oc.kind;
    r.st.seed = c->seed;
    tn_rng_seed(&r.st.rng, c->seed);
    mdl_init_params(r.model, &r.st.rng);
    /* asynchronous workers each draw their own data order */
    if (ps_mode && r.rank > 0) tn_rng_seed(&r.st.rng, tn_mix64(c->seed ^ (uint64_t)r.rank));
    fprintf(out, "training %s: %zu parameters, %lld training and %lld evaluation examples, "
                 "%lld steps of batch %d%s, %d thread%s\n",
            mc.kind == MDL_CNN ? "cnn" : "mlp", r.model->nparams, (long long)r.train.n,
            (long long)r.eval.n, (long long)oc.total_steps, c->batch_size,
            r.world > 1 ? " per replica" : "", c->threads, c->threads == 1 ? "" : "s");
    if (ps_mode) {
        rc = tr__ps_setup(&r, ps_config_hash(&r, &oc), oc.total_steps, err, errlen);
        if (!rc) rc = tr__ps_loop(&r, err, errlen);
        if (rc == 0 && r.chief) rc = save_model(&r, err, errlen);
        if (rc == 0 && r.chief) print_fingerprint(&r);
        goto done;
    }
    if (r.world > 1 && r.ndev == 1) {
        cl_config ring;
        ring_config(&r, &oc, &ring);
        rc = open_ring(&r, &ring, err, errlen);
        if (!rc && r.dev_path) rc = open_nccl(&r, err, errlen);
        if (rc) goto done;
        start_reducer(&r);
    }
    if (r.chief) {
        rc = tr__restore(&r, err, errlen);
        if (rc) goto done;
    }
    rc = sync_state(&r, err, errlen);
    if (rc) goto done;
    devices_sync(&r);
    /* resumed in the middle of an epoch: the restored order's block (file sharding) */
    if (r.st.step_in_epoch > 0) make_local(&r);
    if (r.dev_path) {
        dev_open(&r);
        dev_load_sums(&r);
        if (r.st.step_in_epoch > 0) dev_index(&r);
    }
    if (r.ndev > 1)
        fprintf(out, "%s: %d replicas in this process, batch %d each\n",
                tr_strategy_name(c->strategy), r.ndev, c->batch_size);
    if (r.st.epoch >= c->epochs)
        fprintf(out, "training already complete (%lld steps)\n", (long long)r.st.global_step);
    rc = train_loop(&r, err, errlen);
    if (rc == 0) rc = save_model(&r, err, errlen);
    if (rc == 0) print_fingerprint(&r);

done:
    dev_close(&r);
    kc_comm_free(r.nccl);
    dv_close(&r.group);
    bk_free(r.reducer);
    cl_close(r.ring);
    ps_client_close(r.ps);
    ht_writer_free(r.metrics);
    for (int d = 1; d < r.ndev; d++) {
        mdl_free(r.dev[d]);
        if (r.dopt[d] != r.opt) opt_free(r.dopt[d]);
    }
    for (int d = 0; d < r.ndev; d++) free(r.didx[d]);
    free(r.central);
    free(r.central_grads);
    opt_free(r.opt);
    mdl_free(r.model);
    free(r.order);
    free(r.local);
    free(r.idx);
    free(r.host_grads);
    free(r.ckpt_dir);
    ds_clear(&r.train);
    ds_clear(&r.eval);
    return rc;
}
