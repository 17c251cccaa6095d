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
 */
#include "trainer/train.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/hypertune.h"
#include "common/status.h"
#include "trainer/checkpoint.h"
#include "trainer/data.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint sections are stored in host order, which must be little-endian"
#endif

enum {
    TAG_CONFIG = 1, /* the model architecture: CONFIG_WORDS u32 */
    TAG_PARAMS = 2, /* (P) f32 */
    TAG_OPT_M = 3,  /* (P) f32 optimiser first buffer */
    TAG_OPT_V = 4,  /* (P) f32 optimiser second buffer (adam, adamw) */
    TAG_STATE = 5,  /* STATE_WORDS u64: counters, see run_state */
    TAG_RNG = 6,    /* 4 u64 */
    TAG_ORDER = 7   /* (N) i32 the current epoch's data order */
};

#define CONFIG_VERSION 1
#define CONFIG_WORDS (10 + MDL_MAX_HIDDEN + MDL_MAX_CONV)
#define STATE_WORDS 12

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) { stop_requested = sig; }

int tr_stop_signal(void) { return (int)stop_requested; }

void tr_install_signal_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* Everything the loop carries from step to step besides parameters and optimiser
 * buffers. */
typedef struct run_state {
    int64_t global_step;    /* steps done */
    int64_t epoch;          /* epochs completed */
    int64_t step_in_epoch;  /* steps done in the current epoch */
    int64_t ntrain;         /* training examples (must match on resume) */
    int64_t batch_size;     /* must match on resume */
    int64_t opt_kind;       /* must match on resume */
    uint64_t seed;          /* must match on resume */
    double period_loss;     /* summed training loss since the last report */
    int64_t period_correct; /* correct training predictions since the last report */
    int64_t period_count;   /* training examples since the last report */
    tn_rng rng;             /* data order and dropout */
} run_state;

static double now_seconds(clockid_t clock) {
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

static int config_decode(const void *data, uint64_t size, mdl_config *c, char *err,
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

/* ---- the run ---- */

typedef struct run {
    const tr_config *c;
    FILE *out;
    ds_dataset train, eval;
    mdl_model *model;
    opt_state *opt;
    run_state st;
    int32_t *order;       /* (N) current epoch's data order */
    int64_t steps_per_epoch;
    char *ckpt_dir;       /* JOB_DIR/checkpoints, or NULL */
    ht_writer *metrics;
    double period_seconds; /* training time since the last report */
    double start_time;
} run;

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
    if (r->train.n > INT32_MAX)
        return tn_error(err, errlen, TN_EINVAL, "too many training examples (%lld)",
                        (long long)r->train.n);
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
    return mdl_config_check(m, err, errlen);
}

static void shuffle(run *r) {
    int64_t n = r->train.n;
    for (int64_t i = 0; i < n; i++) r->order[i] = (int32_t)i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)tn_rng_below(&r->st.rng, (uint64_t)i + 1);
        int32_t t = r->order[i];
        r->order[i] = r->order[j];
        r->order[j] = t;
    }
}

/* Mean loss and accuracy of the model on a data set, in batches. */
static void evaluate(mdl_model *m, const ds_dataset *ds, double *loss, double *accuracy) {
    double total = 0.0;
    int64_t right = 0;
    for (int64_t i = 0; i < ds->n; i += m->max_batch) {
        int b = (int)(ds->n - i < m->max_batch ? ds->n - i : m->max_batch);
        double l;
        int64_t c;
        mdl_forward(m, ds->x + i * ds->d, ds->y + i, b, 0, NULL, &l, &c);
        total += l;
        right += c;
    }
    *loss = total / (double)ds->n;
    *accuracy = (double)right / (double)ds->n;
}

static int save_checkpoint(run *r, char *err, size_t errlen) {
    if (!r->ckpt_dir) return 0;
    size_t p = r->model->nparams;
    uint32_t cfg[CONFIG_WORDS];
    uint64_t state[STATE_WORDS];
    config_encode(&r->model->cfg, cfg);
    state_encode(&r->st, r->opt->t, state);
    float *params = tn_xmalloc(p * sizeof(float));
    float *m = tn_xmalloc(p * sizeof(float));
    float *v = r->opt->v ? tn_xmalloc(p * sizeof(float)) : NULL;
    mdl_get_params(r->model, params);
    r->model->k->download(m, r->opt->m, p * sizeof(float));
    if (v) r->model->k->download(v, r->opt->v, p * sizeof(float));
    ckpt_section s[] = {
        {TAG_CONFIG, cfg, sizeof cfg},
        {TAG_STATE, state, sizeof state},
        {TAG_RNG, r->st.rng.s, sizeof r->st.rng.s},
        {TAG_PARAMS, params, p * sizeof(float)},
        {TAG_ORDER, r->order, (uint64_t)r->train.n * sizeof(int32_t)},
        {TAG_OPT_M, m, p * sizeof(float)},
        {TAG_OPT_V, v, v ? p * sizeof(float) : 0},
    };
    size_t n = v ? 7 : 6;
    int rc = ckpt_save(r->ckpt_dir, r->st.global_step, s, n, r->c->keep_checkpoints, NULL, 0,
                       err, errlen);
    free(params);
    free(m);
    free(v);
    return rc;
}

/* Reads a section of exactly `size` bytes into dst. */
static int take_section(const ckpt_file *f, uint32_t tag, void *dst, uint64_t size,
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

/* Restores the run from the newest valid checkpoint, if any. Returns 0 (restored),
 * 1 (fresh start) or a negative code. */
static int restore(run *r, char *err, size_t errlen) {
    if (!r->ckpt_dir) return 1;
    ckpt_file *f = NULL;
    char path[4096];
    int rc = ckpt_load_newest(r->ckpt_dir, &f, path, sizeof path, stderr, err, errlen);
    if (rc != 0) return rc;
    mdl_config saved;
    uint64_t size;
    const void *cfg = ckpt_find(f, TAG_CONFIG, &size);
    rc = cfg ? config_decode(cfg, size, &saved, err, errlen)
             : tn_error(err, errlen, TN_EFORMAT, "no model configuration");
    uint32_t a[CONFIG_WORDS], b[CONFIG_WORDS];
    if (!rc) {
        config_encode(&saved, a);
        config_encode(&r->model->cfg, b);
        if (memcmp(a, b, sizeof a) != 0)
            rc = tn_error(err, errlen, TN_EMISMATCH,
                          "the checkpoints in %s are of a different model (other --model, "
                          "--hidden_units, --conv_filters, --activation, --dropout or data); "
                          "hint: use a fresh --job-dir or the flags of that run",
                          r->ckpt_dir);
    }
    uint64_t state[STATE_WORDS];
    if (!rc) rc = take_section(f, TAG_STATE, state, sizeof state, path, err, errlen);
    run_state st = r->st;
    if (!rc) {
        state_decode(state, &st);
        if (st.ntrain != r->st.ntrain || st.batch_size != r->st.batch_size ||
            st.opt_kind != r->st.opt_kind || st.seed != r->st.seed)
            rc = tn_error(err, errlen, TN_EMISMATCH,
                          "the checkpoints in %s were written by a run with other settings "
                          "(%lld examples, batch %lld, optimizer %lld, seed %llu); hint: use "
                          "a fresh --job-dir or the flags of that run",
                          r->ckpt_dir, (long long)st.ntrain, (long long)st.batch_size,
                          (long long)st.opt_kind, (unsigned long long)st.seed);
    }
    size_t p = r->model->nparams;
    float *buf = tn_xmalloc(p * sizeof(float));
    if (!rc) rc = take_section(f, TAG_RNG, st.rng.s, sizeof st.rng.s, path, err, errlen);
    if (!rc) rc = take_section(f, TAG_ORDER, r->order, (uint64_t)r->train.n * sizeof(int32_t),
                               path, err, errlen);
    if (!rc) rc = take_section(f, TAG_PARAMS, buf, p * sizeof(float), path, err, errlen);
    if (!rc) mdl_set_params(r->model, buf);
    if (!rc) rc = take_section(f, TAG_OPT_M, buf, p * sizeof(float), path, err, errlen);
    if (!rc) r->model->k->upload(r->opt->m, buf, p * sizeof(float));
    if (!rc && r->opt->v) {
        rc = take_section(f, TAG_OPT_V, buf, p * sizeof(float), path, err, errlen);
        if (!rc) r->model->k->upload(r->opt->v, buf, p * sizeof(float));
    }
    for (int64_t i = 0; !rc && i < r->train.n; i++)
        if (r->order[i] < 0 || r->order[i] >= r->train.n)
            rc = tn_error(err, errlen, TN_EFORMAT, "%s: data order out of range", path);
    free(buf);
    ckpt_file_free(f);
    if (rc) return rc;
    r->st = st;
    r->opt->t = (int64_t)state[10];
    fprintf(r->out, "resumed from %s (epoch %lld, step %lld)\n", path,
            (long long)st.epoch + 1, (long long)st.global_step);
    return 0;
}

static int report(run *r, char *err, size_t errlen) {
    double loss, acc;
    evaluate(r->model, &r->eval, &loss, &acc);
    double n = (double)(r->st.period_count ? r->st.period_count : 1);
    double train_loss = r->st.period_loss / n;
    double train_acc = (double)r->st.period_correct / n;
    double eps = r->period_seconds > 0 ? (double)r->st.period_count / r->period_seconds : 0.0;
    double epoch = (double)r->st.epoch + (double)r->st.step_in_epoch / (double)r->steps_per_epoch;
    ht_metric m[] = {
        {"accuracy", acc},         {"loss", loss},
        {"train_accuracy", train_acc}, {"train_loss", train_loss},
        {"examples_per_sec", eps}, {"epoch", epoch},
    };
    int rc = ht_report(r->metrics, r->st.global_step, m, sizeof m / sizeof m[0], NULL,
                       now_seconds(CLOCK_REALTIME), err, errlen);
    if (rc) return rc;
    fprintf(r->out,
            "epoch %.2f/%d  step %lld  train_loss %.4f  train_accuracy %.4f  loss %.4f  "
            "accuracy %.4f  %.0f examples/s  %.1fs\n",
            epoch, r->c->epochs, (long long)r->st.global_step, train_loss, train_acc, loss, acc,
            eps, now_seconds(CLOCK_MONOTONIC) - r->start_time);
    fflush(r->out);
    r->st.period_loss = 0.0;
    r->st.period_correct = 0;
    r->st.period_count = 0;
    r->period_seconds = 0.0;
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
    if (!rc) fprintf(r->out, "saved the model to %s\n", path);
    free(path);
    free(params);
    return rc;
}

static int train_loop(run *r, char *err, size_t errlen) {
    const tr_config *c = r->c;
    mdl_model *m = r->model;
    int64_t n = r->train.n;
    int B = c->batch_size;
    while (r->st.epoch < c->epochs) {
        if (r->st.step_in_epoch == 0) shuffle(r);
        double t0 = now_seconds(CLOCK_MONOTONIC);
        int64_t first = r->st.step_in_epoch * B;
        int b = (int)(n - first < B ? n - first : B);
        double loss;
        int64_t correct;
        mdl_forward_rows(m, r->train.x, r->train.y, r->order + first, b, 1, &r->st.rng, &loss,
                         &correct);
        if (!isfinite(loss)) {
            tn_error(err, errlen, TN_EINVAL,
                     "training diverged: the loss is %g at step %lld; hint: lower "
                     "--learning_rate",
                     loss, (long long)r->st.global_step + 1);
            return TR_DIVERGED;
        }
        mdl_backward(m, b);
        opt_step(r->opt, m->params, m->grads);
        r->period_seconds += now_seconds(CLOCK_MONOTONIC) - t0;
        r->st.period_loss += loss;
        r->st.period_correct += correct;
        r->st.period_count += b;
        r->st.global_step++;
        int end_of_epoch = ++r->st.step_in_epoch == r->steps_per_epoch;
        if (end_of_epoch) {
            r->st.epoch++;
            r->st.step_in_epoch = 0;
        }
        int rc = 0;
        if (end_of_epoch || (c->report_every > 0 && r->st.global_step % c->report_every == 0))
            rc = report(r, err, errlen);
        if (!rc && (end_of_epoch || stop_requested ||
                    (c->checkpoint_every > 0 && r->st.global_step % c->checkpoint_every == 0)))
            rc = save_checkpoint(r, err, errlen);
        if (rc) return rc;
        if (stop_requested) {
            fprintf(r->out, "stopped by signal %d at step %lld%s\n", (int)stop_requested,
                    (long long)r->st.global_step, r->ckpt_dir ? " (checkpoint saved)" : "");
            return TR_INTERRUPTED;
        }
    }
    return 0;
}

static int eval_only(const tr_config *c, FILE *out, char *err, size_t errlen) {
    char *path = NULL;
    if (c->model_file) {
        path = tn_xstrdup(c->model_file);
    } else if (c->job_dir) {
        size_t len = strlen(c->job_dir) + 16;
        path = tn_xmalloc(len);
        snprintf(path, len, "%s/model.ckpt", c->job_dir);
    } else {
        return tn_error(err, errlen, TN_EINVAL, "--eval_only needs --model_file or --job-dir");
    }
    run r = {.c = c, .out = out};
    ckpt_file *f = NULL;
    mdl_config cfg;
    uint64_t size;
    int rc = ckpt_read(path, &f, err, errlen);
    const void *data = rc ? NULL : ckpt_find(f, TAG_CONFIG, &size);
    if (!rc && !data) rc = tn_error(err, errlen, TN_EFORMAT, "%s: not a model file", path);
    if (!rc) rc = config_decode(data, size, &cfg, err, errlen);
    const char *dir = c->data_dir ? c->data_dir : DS_DEFAULT_DIR;
    if (!rc) {
        rc = c->eval_file ? ds_load_csv(c->eval_file, c->label_column, (float)c->feature_scale,
                                        c->max_eval_examples, &r.eval, err, errlen)
                          : ds_load_idx_dir(dir, 0, c->max_eval_examples, &r.eval, err, errlen);
    }
    if (!rc && (r.eval.d != cfg.in_c * cfg.in_h * cfg.in_w || r.eval.classes > cfg.classes))
        rc = tn_error(err, errlen, TN_EMISMATCH,
                      "the model in %s takes %d features and %d classes; the data have %d "
                      "features and %d classes",
                      path, cfg.in_c * cfg.in_h * cfg.in_w, cfg.classes, r.eval.d, r.eval.classes);
    mdl_model *m = NULL;
    if (!rc) {
        m = mdl_new(&cfg, kn_cpu(), c->batch_size);
        m->k->set_threads(c->threads);
        float *params = tn_xmalloc(m->nparams * sizeof(float));
        rc = take_section(f, TAG_PARAMS, params, m->nparams * sizeof(float), path, err, errlen);
        if (!rc) mdl_set_params(m, params);
        free(params);
    }
    if (!rc) {
        double loss, acc;
        evaluate(m, &r.eval, &loss, &acc);
        uint64_t state[STATE_WORDS] = {0};
        take_section(f, TAG_STATE, state, sizeof state, path, NULL, 0);
        ht_metric met[] = {{"accuracy", acc}, {"loss", loss}};
        rc = ht_writer_open(c->metric_file, NULL, &r.metrics, err, errlen);
        if (!rc)
            rc = ht_report(r.metrics, (int64_t)state[0], met, 2, path,
                           now_seconds(CLOCK_REALTIME), err, errlen);
        if (!rc)
            fprintf(out, "evaluated %s on %lld examples: accuracy %.4f  loss %.4f\n", path,
                    (long long)r.eval.n, acc, loss);
    }
    ht_writer_free(r.metrics);
    mdl_free(m);
    ckpt_file_free(f);
    ds_clear(&r.eval);
    free(path);
    return rc;
}

int tr_run(const tr_config *c, FILE *out, char *err, size_t errlen) {
    if (c->batch_size < 1 || c->batch_size > 65536)
        return tn_error(err, errlen, TN_EINVAL, "--batch_size must be 1 to 65536, got %d",
                        c->batch_size);
    if (c->threads < 1 || c->threads > 1024)
        return tn_error(err, errlen, TN_EINVAL, "--threads must be 1 to 1024, got %d", c->threads);
    if (c->eval_only) return eval_only(c, out, err, errlen);
    if (c->epochs < 1) return tn_error(err, errlen, TN_EINVAL, "--epochs must be >= 1");
    if (c->keep_checkpoints < 1)
        return tn_error(err, errlen, TN_EINVAL, "--keep_checkpoints must be >= 1");
    if (c->report_every < 0 || c->checkpoint_every < 0)
        return tn_error(err, errlen, TN_EINVAL,
                        "--report_every and --checkpoint_every must be >= 0");
    run r = {.c = c, .out = out};
    r.start_time = now_seconds(CLOCK_MONOTONIC);
    mdl_config mc;
    opt_config oc = c->opt;
    int rc = load_data(&r, err, errlen);
    if (!rc) rc = shape_model(&r, &mc, err, errlen);
    if (!rc) {
        r.steps_per_epoch = (r.train.n + c->batch_size - 1) / c->batch_size;
        oc.total_steps = r.steps_per_epoch * c->epochs;
        rc = opt_config_check(&oc, err, errlen);
    }
    if (!rc) rc = ht_writer_open(c->metric_file, NULL, &r.metrics, err, errlen);
    if (rc) goto done;

    const kn_backend *k = kn_cpu();
    k->set_threads(c->threads);
    r.model = mdl_new(&mc, k, c->batch_size);
    r.opt = opt_new(&oc, k, r.model->nparams);
    r.order = tn_xmalloc((size_t)r.train.n * sizeof(int32_t));
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
    fprintf(out, "training %s: %zu parameters, %lld training and %lld evaluation examples, "
                 "%lld steps of batch %d, %d thread%s\n",
            mc.kind == MDL_CNN ? "cnn" : "mlp", r.model->nparams, (long long)r.train.n,
            (long long)r.eval.n, (long long)oc.total_steps, c->batch_size, c->threads,
            c->threads == 1 ? "" : "s");
    rc = restore(&r, err, errlen);
    if (rc < 0) goto done;
    if (r.st.epoch >= c->epochs)
        fprintf(out, "training already complete (%lld steps)\n", (long long)r.st.global_step);
    rc = train_loop(&r, err, errlen);
    if (rc == 0) rc = save_model(&r, err, errlen);

done:
    ht_writer_free(r.metrics);
    opt_free(r.opt);
    mdl_free(r.model);
    free(r.order);
    free(r.ckpt_dir);
    ds_clear(&r.train);
    ds_clear(&r.eval);
    return rc;
}
