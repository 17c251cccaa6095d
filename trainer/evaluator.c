/*
 * evaluator.c — the evaluator replica (tr_evaluator: follows the chief's checkpoints
 * and reports eval_loss and eval_accuracy for each) and --eval_only (one evaluation
 * of a model file). See train.h; the checkpoints are train.c's.
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

/* Loads an evaluation set as the flags say (CSV or IDX). */
static int load_eval(const tr_config *c, ds_dataset *eval, char *err, size_t errlen) {
    const char *dir = c->data_dir ? c->data_dir : DS_DEFAULT_DIR;
    return c->eval_file ? ds_load_csv(c->eval_file, c->label_column, (float)c->feature_scale,
                                      c->max_eval_examples, eval, err, errlen)
                        : ds_load_idx_dir(dir, 0, c->max_eval_examples, eval, err, errlen);
}

/* Builds the model a checkpoint or model file holds, with its parameters, checked
 * against the evaluation data. */
static int model_from_file(const ckpt_file *f, const char *path, const tr_config *c,
                           const kn_backend *k, const ds_dataset *eval, mdl_model **out,
                           char *err, size_t errlen) {
    mdl_config cfg;
    uint64_t size;
    const void *data = ckpt_find(f, TAG_CONFIG, &size);
    if (!data) return tn_error(err, errlen, TN_EFORMAT, "%s: not a model file", path);
    int rc = tr__config_decode(data, size, &cfg, err, errlen);
    if (rc) return rc;
    if (eval->d != cfg.in_c * cfg.in_h * cfg.in_w || eval->classes > cfg.classes)
        return tn_error(err, errlen, TN_EMISMATCH,
                        "the model in %s takes %d features and %d classes; the data have %d "
                        "features and %d classes",
                        path, cfg.in_c * cfg.in_h * cfg.in_w, cfg.classes, eval->d,
                        eval->classes);
    /* a model of images (in_h x in_w, not a flat vector of in_c) takes images of its shape */
    if ((cfg.in_h > 1 || cfg.in_w > 1) && eval->channels > 0 &&
        (eval->channels != cfg.in_c || eval->height != cfg.in_h || eval->width != cfg.in_w))
        return tn_error(err, errlen, TN_EMISMATCH,
                        "the model in %s takes images of %dx%dx%d; the data's are %dx%dx%d "
                        "(channels x height x width); hint: evaluate it on data of the dataset "
                        "it was trained on",
                        path, cfg.in_c, cfg.in_h, cfg.in_w, eval->channels, eval->height,
                        eval->width);
    rc = mdl_batch_check(&cfg, c->batch_size, err, errlen);
    if (rc) return rc;
    mdl_model *m = mdl_new(&cfg, k, c->batch_size);
    m->k->set_threads(c->threads);
    float *params = tn_xmalloc(m->nparams * sizeof(float));
    rc = tr__take_section(f, TAG_PARAMS, params, m->nparams * sizeof(float), path, err, errlen);
    if (!rc) mdl_set_params(m, params);
    free(params);
    if (rc) {
        mdl_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

int tr__eval_only(const tr_config *c, FILE *out, char *err, size_t errlen) {
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
    ds_dataset eval = {0};
    ht_writer *metrics = NULL;
    ckpt_file *f = NULL;
    mdl_model *m = NULL;
    const kn_backend *k = NULL;
    int rc = tr__open_backends(c, 0, 1, &k, out, err, errlen);
    if (!rc) rc = ckpt_read(path, &f, err, errlen);
    if (!rc) rc = load_eval(c, &eval, err, errlen);
    if (!rc) rc = model_from_file(f, path, c, k, &eval, &m, err, errlen);
    if (!rc) {
        double loss, acc;
        tr__evaluate(m, &eval, &loss, &acc);
        uint64_t state[STATE_WORDS] = {0};
        tr__take_section(f, TAG_STATE, state, sizeof state, path, NULL, 0);
        ht_metric met[] = {{"accuracy", acc}, {"loss", loss}};
        rc = ht_writer_open(c->metric_file, NULL, &metrics, err, errlen);
        if (!rc)
            rc = ht_report(metrics, (int64_t)state[0], met, 2, path, tr__now_seconds(CLOCK_REALTIME),
                           err, errlen);
        if (!rc)
            fprintf(out, "evaluated %s on %lld examples: accuracy %.4f  loss %.4f\n", path,
                    (long long)eval.n, acc, loss);
    }
    ht_writer_free(metrics);
    mdl_free(m);
    ckpt_file_free(f);
    ds_clear(&eval);
    free(path);
    return rc;
}

/* Sleeps about `seconds`, returning early on a stop signal. */
static void nap(double seconds) {
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}

/* ckpt_check_fn of the evaluator: the state's step is the file name's and its epoch
 * within the run's, so a damaged-but-sealed file cannot make it skip the checkpoints
 * after it or stop early (the model's sections are checked when it is built). */
static int check_evaluated(const ckpt_file *f, int64_t step, void *ctx, char *why,
                           size_t whylen) {
    const tr_config *c = ctx;
    uint64_t size, state[STATE_WORDS];
    const void *data = ckpt_find(f, TAG_STATE, &size);
    if (!data || size != sizeof state)
        return tn_error(why, whylen, TN_EFORMAT, "state: %s (expected %zu bytes)",
                        data ? "the wrong size" : "missing", sizeof state);
    memcpy(state, data, sizeof state);
    if ((int64_t)state[0] != step)
        return tn_error(why, whylen, TN_EFORMAT,
                        "state: global_step %lld differs from the step in the file's name (%lld)",
                        (long long)(int64_t)state[0], (long long)step);
    if ((int64_t)state[1] < 0 || (int64_t)state[1] > c->epochs)
        return tn_error(why, whylen, TN_EFORMAT, "state: epoch %lld is outside [0, %d]",
                        (long long)(int64_t)state[1], c->epochs);
    return 0;
}

int tr_evaluator(const tr_config *c, FILE *out, char *err, size_t errlen) {
    if (!c->job_dir)
        return tn_error(err, errlen, TN_EINVAL,
                        "the evaluator needs --job-dir: the chief's, whose checkpoints it "
                        "evaluates");
    size_t len = strlen(c->job_dir) + 16;
    char *dir = tn_xmalloc(len);
    snprintf(dir, len, "%s/checkpoints", c->job_dir);
    ds_dataset eval = {0};
    ht_writer *metrics = NULL;
    const kn_backend *k = NULL;
    int rc = tr__open_backends(c, 0, 1, &k, out, err, errlen);
    if (!rc) rc = load_eval(c, &eval, err, errlen);
    if (!rc) rc = ht_writer_open(c->metric_file, NULL, &metrics, err, errlen);
    if (!rc)
        fprintf(out, "evaluator: following the checkpoints in %s (%lld evaluation examples)\n",
                dir, (long long)eval.n);
    int64_t last = -1;
    double waited = 0;
    while (!rc) {
        if (tr_stop_signal()) {
            fprintf(out, "evaluator: stopped by signal %d\n", (int)tr_stop_signal());
            rc = TR_INTERRUPTED;
            break;
        }
        ckpt_file *f = NULL;
        char path[4096];
        /* a file it skips is told when it looks after an evaluation, not every poll */
        rc = ckpt_load_newest_checked(dir, check_evaluated, (void *)c, &f, path, sizeof path,
                                      waited == 0 ? out : NULL, err, errlen);
        if (rc) break; /* none yet: f is NULL */
        uint64_t state[STATE_WORDS] = {0};
        int done = 0;
        if (f && !tr__take_section(f, TAG_STATE, state, sizeof state, path, NULL, 0) &&
            (int64_t)state[0] > last) {
            mdl_model *m = NULL;
            rc = model_from_file(f, path, c, k, &eval, &m, err, errlen);
            if (!rc) {
                double loss, acc;
                tr__evaluate(m, &eval, &loss, &acc);
                ht_metric met[] = {{"eval_accuracy", acc}, {"eval_loss", loss}};
                rc = ht_report(metrics, (int64_t)state[0], met, 2, path,
                               tr__now_seconds(CLOCK_REALTIME), err, errlen);
                fprintf(out, "evaluator: step %lld  eval_loss %.4f  eval_accuracy %.4f  (%s)\n",
                        (long long)state[0], loss, acc, path);
                fflush(out);
            }
            mdl_free(m);
            last = (int64_t)state[0];
            done = (int64_t)state[1] >= c->epochs;
            waited = 0;
        }
        ckpt_file_free(f);
        if (rc || done) break;
        if (waited >= 60 && (int)waited % 60 == 0)
            fprintf(out, "evaluator: no new checkpoint for %.0f s\n", waited);
        nap(0.25);
        waited += 0.25;
    }
    if (!rc)
        fprintf(out, "evaluator: evaluated the final checkpoint (step %lld)\n",
                (long long)last);
    ht_writer_free(metrics);
    ds_clear(&eval);
    free(dir);
    return rc;
}

