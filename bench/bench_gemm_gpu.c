/*
 * bench_gemm_gpu.c — the floor of a training step on a GPU: the step's matrix products
 * alone, through the same cuBLAS calls the CUDA backend makes (kernels/cuda.cu),
 * recorded once in a CUDA graph and replayed, so that neither launches nor anything
 * but the products is timed. bench/gpu_speed.py compares trainer's step with it.
 *
 * Builds the model as trainer would (its layer shapes), then times the sequence of
 * gemm calls one step makes (forward, then backward: weight and input gradients), on
 * scratch buffers; in tf32 and bf16 each call includes the rounding of its operands that
 * the backend does first. Prints one JSON object ("graph": false when the recording
 * failed and the calls were timed as they were made).
 *
 *   bench_gemm_gpu [--model=mlp|cnn] [--batch_size=N] [--precision=fp32|tf32|bf16]
 *                  [--steps=N] [--hidden_units=256,256] [--conv_filters=32,64]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/flags.h"
#include "common/status.h"
#include "kernels/cuda.h"
#include "trainer/model.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The gemm calls of one training step of m at batch b, in model.c's order and shapes. */
static void step_gemms(const kn_backend *k, const mdl_model *m, int b, float *A, float *B,
                       float *C) {
    for (int l = 0; l < m->nlayers; l++) {
        const mdl_layer *L = &m->layers[l];
        if (L->type == MDL_DENSE)
            k->gemm(0, 1, b, L->out_size, L->in_size, 1.0f, A, L->in_size, B, L->in_size, 1.0f,
                    C, L->out_size);
        if (L->type == MDL_CONV) {
            int ld = b * L->h * L->w, ck = L->c_in * 9;
            k->gemm(0, 0, L->c_out, ld, ck, 1.0f, A, ck, B, ld, 0.0f, C, ld);
        }
    }
    for (int l = m->nlayers - 1; l >= 0; l--) {
        const mdl_layer *L = &m->layers[l];
        if (L->type == MDL_DENSE) {
            k->gemm(1, 0, L->out_size, L->in_size, b, 1.0f, A, L->out_size, B, L->in_size, 0.0f,
                    C, L->in_size);
            if (l > 0)
                k->gemm(0, 0, b, L->in_size, L->out_size, 1.0f, A, L->out_size, B, L->in_size,
                        0.0f, C, L->in_size);
        }
        if (L->type == MDL_CONV) {
            int ld = b * L->h * L->w, ck = L->c_in * 9;
            k->gemm(0, 1, L->c_out, ck, ld, 1.0f, A, ld, B, ld, 0.0f, C, ck);
            if (l > 0) k->gemm(1, 0, ck, ld, L->c_out, 1.0f, A, ck, B, ld, 0.0f, C, ld);
        }
    }
}

int main(int argc, char **argv) {
    const char *model = "mlp", *hidden = NULL, *filters = "32,64", *precision = "fp32";
    int batch = 128, steps = 1000;
    const tn_flag flags[] = {
        {"model", TN_FLAG_STRING, &model, "mlp|cnn", "model"},
        {"batch_size", TN_FLAG_INT, &batch, "N", "batch size"},
        {"precision", TN_FLAG_STRING, &precision, "fp32|tf32|bf16", "matrix products"},
        {"steps", TN_FLAG_INT, &steps, "N", "timed steps"},
        {"hidden_units", TN_FLAG_STRING, &hidden, "N,N", "hidden widths"},
        {"conv_filters", TN_FLAG_STRING, &filters, "N,N", "cnn filters"},
    };
    int help;
    if (tn_flags_program("bench_gemm_gpu", NULL, flags, sizeof flags / sizeof flags[0], argc,
                         argv, &help))
        return 2;
    if (help) return 0;
    char err[512];
    int rc = 0, prec = -1;
    for (int p = KN_FP32; p <= KN_BF16; p++)
        if (!strcmp(precision, kn_precision_name(p))) prec = p;
    int cnn = !strcmp(model, "cnn");
    mdl_config cfg = {.kind = cnn ? MDL_CNN : MDL_MLP, .activation = MDL_RELU, .in_c = 1,
                      .in_h = 28, .in_w = 28, .classes = 10};
    if (prec < 0)
        rc = tn_error(err, sizeof err, TN_EINVAL,
                      "--precision must be fp32, tf32 or bf16, not '%s'", precision);
    else if (batch < 1 || batch > 65536 || steps < 1)
        rc = tn_error(err, sizeof err, TN_EINVAL,
                      "--batch_size must be 1 to 65536 and --steps at least 1");
    else if (!cnn && strcmp(model, "mlp"))
        rc = tn_error(err, sizeof err, TN_EINVAL, "--model must be mlp or cnn, not '%s'", model);
    if (!rc) {
        rc = mdl_parse_widths("hidden_units", hidden ? hidden : (cnn ? "128" : "256,256"),
                              cfg.hidden, MDL_MAX_HIDDEN, err, sizeof err);
        if (rc >= 0) cfg.nhidden = rc, rc = 0;
    }
    if (!rc && cnn) {
        rc = mdl_parse_widths("conv_filters", filters, cfg.filters, MDL_MAX_CONV, err,
                              sizeof err);
        if (rc >= 0) cfg.nconv = rc, rc = 0;
    }
    if (!rc) rc = mdl_config_check(&cfg, err, sizeof err);
    if (rc) {
        fprintf(stderr, "bench_gemm_gpu: error: %s\n", err);
        return 2;
    }
    const kn_backend *k = kn_cuda(0, err, sizeof err);
    if (!k) {
        fprintf(stderr, "bench_gemm_gpu: error: %s\n", err);
        return 1;
    }
    if (k->set_precision(prec) != 0) {
        fprintf(stderr, "bench_gemm_gpu: error: the CUDA backend refused --precision=%s\n",
                precision);
        return 1;
    }
    mdl_model *m = mdl_new(&cfg, k, batch);
    size_t big = m->nparams;
    for (int l = 0; l < m->nlayers; l++) {
        const mdl_layer *L = &m->layers[l];
        size_t need = (size_t)batch * (L->in_size > L->out_size ? L->in_size : L->out_size);
        if (L->type == MDL_CONV)
            need = (size_t)batch * (L->c_in * 9 > L->c_out ? L->c_in * 9 : L->c_out) * L->h * L->w;
        if (need > big) big = need;
    }
    float *A = k->alloc(big * sizeof(float)), *B = k->alloc(big * sizeof(float)),
          *C = k->alloc(big * sizeof(float));
    for (int s = 0; s < 10; s++) step_gemms(k, m, batch, A, B, C); /* warm-up, sizes */
    double t0 = 0;
    void *graph = NULL;
    if (k->graph_begin()) {
        step_gemms(k, m, batch, A, B, C);
        graph = k->graph_end(); /* NULL: the recording failed, and the backend said so */
    }
    for (int s = 0; s < 10 + steps; s++) {
        if (s == 10) {
            k->sync();
            t0 = now();
        }
        if (graph)
            k->graph_launch(graph);
        else
            step_gemms(k, m, batch, A, B, C);
    }
    k->sync();
    double step_s = (now() - t0) / steps;
    char gpu[256];
    kn_cuda_describe(0, gpu, sizeof gpu);
    printf("{\"framework\": \"cublas-floor\", \"model\": \"%s\", \"batch_size\": %d, "
           "\"precision\": \"%s\", \"steps\": %d, \"step_us\": %.2f, "
           "\"gemm_floor_examples_per_sec\": %.1f, \"graph\": %s, \"gpu\": \"%s\"}\n",
           model, batch, precision, steps, step_s * 1e6, batch / step_s,
           graph ? "true" : "false", gpu);
    k->graph_free(graph);
    k->free(A);
    k->free(B);
    k->free(C);
    mdl_free(m);
    return 0;
}
