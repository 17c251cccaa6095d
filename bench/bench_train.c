/*
 * bench_train.c — training throughput of the trainer's step against the floor set by
 * its matrix products alone.
 *
 * Loads Fashion-MNIST into memory, builds the model as `trainer` would, and times
 * (a) full training steps (batch gather, forward, backward, optimiser update: what
 * `trainer` does per step) and (b) only the cblas_sgemm calls of one step, with the
 * same shapes, transposes and order, on scratch buffers. Prints one JSON object.
 * Driven by bench/run_train_bench.sh, which compares against PyTorch in the same run.
 *
 *   bench_train [--model=mlp|cnn] [--threads=N] [--batch_size=N] [--steps=N]
 *               [--hidden_units=256,256] [--conv_filters=32,64] [--data_dir=DIR]
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/flags.h"
#include "common/rng.h"
#include "common/status.h"
#include "trainer/data.h"
#include "trainer/model.h"
#include "trainer/optim.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_list(const char *s, int32_t *out, int max) {
    int n = 0;
    while (*s && n < max) {
        out[n++] = (int32_t)strtol(s, (char **)&s, 10);
        if (*s == ',') s++;
    }
    return n;
}

/* The GEMMs of one training step of m for batch b, in the order mdl_forward and
 * mdl_backward issue them, on scratch buffers big enough for any of them. */
static void step_gemms(const mdl_model *m, int b, float *A, float *B, float *C) {
    for (int l = 0; l < m->nlayers; l++) {
        const mdl_layer *L = &m->layers[l];
        if (L->type == MDL_DENSE)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, b, L->out_size, L->in_size, 1.0f,
                        A, L->in_size, B, L->in_size, 1.0f, C, L->out_size);
        if (L->type == MDL_CONV) {
            int ld = b * L->h * L->w, ck = L->c_in * 9;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L->c_out, ld, ck, 1.0f, A, ck,
                        B, ld, 0.0f, C, ld);
        }
    }
    for (int l = m->nlayers - 1; l >= 0; l--) {
        const mdl_layer *L = &m->layers[l];
        if (L->type == MDL_DENSE) {
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, L->out_size, L->in_size, b, 1.0f,
                        A, L->out_size, B, L->in_size, 0.0f, C, L->in_size);
            if (l > 0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, b, L->in_size, L->out_size,
                            1.0f, A, L->out_size, B, L->in_size, 0.0f, C, L->in_size);
        }
        if (L->type == MDL_CONV) {
            int ld = b * L->h * L->w, ck = L->c_in * 9;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L->c_out, ck, ld, 1.0f, A, ld, B,
                        ld, 0.0f, C, ck);
            if (l > 0)
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ck, ld, L->c_out, 1.0f, A, ck,
                            B, ld, 0.0f, C, ld);
        }
    }
}

int main(int argc, char **argv) {
    const char *model = "mlp", *hidden = NULL, *filters = "32,64", *data_dir = DS_DEFAULT_DIR;
    int threads = 1, batch = 128, steps = 300;
    const tn_flag flags[] = {
        {"model", TN_FLAG_STRING, &model, "mlp|cnn", "model"},
        {"threads", TN_FLAG_INT, &threads, "N", "threads"},
        {"batch_size", TN_FLAG_INT, &batch, "N", "batch size"},
        {"steps", TN_FLAG_INT, &steps, "N", "timed steps"},
        {"hidden_units", TN_FLAG_STRING, &hidden, "N,N", "hidden widths"},
        {"conv_filters", TN_FLAG_STRING, &filters, "N,N", "cnn filters"},
        {"data_dir", TN_FLAG_STRING, &data_dir, "DIR", "IDX folder"},
    };
    char err[512];
    int rc = tn_flags_parse(flags, sizeof flags / sizeof flags[0], argc, argv, NULL, 0, NULL, err,
                            sizeof err);
    if (rc) {
        if (rc == 1) {
            tn_flags_help(stdout, flags, sizeof flags / sizeof flags[0]);
            return 0;
        }
        fprintf(stderr, "bench_train: error: %s\n", err);
        return 2;
    }
    int cnn = !strcmp(model, "cnn");
    ds_dataset ds = {0};
    if (ds_load_idx_dir(data_dir, 1, 0, &ds, err, sizeof err)) {
        fprintf(stderr, "bench_train: error: %s\n", err);
        return 1;
    }
    mdl_config cfg = {.kind = cnn ? MDL_CNN : MDL_MLP, .activation = MDL_RELU, .in_c = 1,
                      .in_h = ds.height, .in_w = ds.width, .classes = 10};
    cfg.nhidden = parse_list(hidden ? hidden : (cnn ? "128" : "256,256"), cfg.hidden, MDL_MAX_HIDDEN);
    if (cnn) cfg.nconv = parse_list(filters, cfg.filters, MDL_MAX_CONV);
    if (mdl_config_check(&cfg, err, sizeof err)) {
        fprintf(stderr, "bench_train: error: %s\n", err);
        return 2;
    }
    const kn_backend *k = kn_cpu();
    k->set_threads(threads);
    mdl_model *m = mdl_new(&cfg, k, batch);
    tn_rng rng;
    tn_rng_seed(&rng, 1);
    mdl_init_params(m, &rng);
    opt_config oc = {.kind = OPT_MOMENTUM, .learning_rate = 0.05, .momentum = 0.9, .beta1 = 0.9,
                     .beta2 = 0.999, .epsilon = 1e-8, .schedule = OPT_CONSTANT};
    opt_state *opt = opt_new(&oc, k, m->nparams);
    int32_t *idx = tn_xmalloc((size_t)batch * sizeof(int32_t));

    /* (a) full steps over random batches, after a warm-up */
    double loss = 0;
    double t0 = 0;
    int warmup = steps / 10 + 5;
    for (int s = -warmup; s < steps; s++) {
        if (s == 0) t0 = now();
        for (int i = 0; i < batch; i++) idx[i] = (int32_t)tn_rng_below(&rng, (uint64_t)ds.n);
        int64_t correct;
        mdl_forward_rows(m, ds.x, ds.y, idx, batch, 1, &rng, &loss, &correct);
        mdl_backward(m, batch);
        opt_step(opt, m->params, m->grads);
    }
    double step_s = (now() - t0) / steps;

    /* (b) the same GEMMs alone */
    size_t big = 0;
    for (int l = 0; l < m->nlayers; l++) {
        const mdl_layer *L = &m->layers[l];
        size_t need = (size_t)batch * (L->in_size > L->out_size ? L->in_size : L->out_size);
        if (L->type == MDL_CONV)
            need = (size_t)batch * (L->c_in * 9 > L->c_out ? L->c_in * 9 : L->c_out) * L->h * L->w;
        if (need > big) big = need;
    }
    if ((size_t)m->nparams > big) big = m->nparams;
    float *A = k->alloc(big * sizeof(float)), *B = k->alloc(big * sizeof(float)),
          *C = k->alloc(big * sizeof(float));
    for (int s = -warmup; s < steps; s++) {
        if (s == 0) t0 = now();
        step_gemms(m, batch, A, B, C);
    }
    double gemm_s = (now() - t0) / steps;

    printf("{\"framework\": \"tuner\", \"model\": \"%s\", \"threads\": %d, \"batch_size\": %d, "
           "\"steps\": %d, \"examples_per_sec\": %.1f, \"gemm_floor_examples_per_sec\": %.1f, "
           "\"fraction_of_floor\": %.3f, \"final_loss\": %.4f}\n",
           model, threads, batch, steps, batch / step_s, batch / gemm_s, gemm_s / step_s,
           loss / batch);
    k->free(A);
    k->free(B);
    k->free(C);
    free(idx);
    opt_free(opt);
    mdl_free(m);
    ds_clear(&ds);
    return 0;
}
