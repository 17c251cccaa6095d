/*
 * bench_gemm_cpu.c — the CPU backend's matrix products shape by shape: OpenBLAS's
 * cblas_sgemm against the backend's own AVX-512 kernel (kernels/cpu_gemm.c), on the
 * shapes the trainer's models make (the MLP's eight products a step, the CNN's dense
 * layers, and the products a Winograd conv block makes per chunk of images), through
 * the backend's table on one thread, as a training step calls them.
 *
 * Each shape is timed with each maker (kn_cpu_gemm) in turn, --rounds times, each
 * measurement repeating the product for at least --seconds, and the best kept. Prints
 * one JSON object a shape ("own_gflops": null where the CPU lacks AVX-512 F, and a
 * line before them with OpenBLAS's configuration and core); bench/gemm_cpu.py runs it
 * with OpenBLAS pinned and on its own choice and writes docs/benchmarks/gemm-cpu.md.
 *
 *   bench_gemm_cpu [--rounds=N] [--seconds=S]
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/flags.h"
#include "common/rng.h"
#include "common/status.h"
#include "kernels/kernels.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct shape {
    int ta, tb, m, n, k;
    const char *use;
} shape;

/* As trainer/model.c and kernels/cpu_conv.c call them at batch 128 (MLP 784-256-256-10,
 * CNN 32,64 / 128; a Winograd chunk of 4 images of 14 x 14: 196 tiles). */
static const shape SHAPES[] = {
    {0, 1, 128, 256, 784, "mlp: layer 1 forward"},
    {1, 0, 256, 784, 128, "mlp: layer 1 dW"},
    {0, 1, 128, 256, 256, "mlp: layer 2 forward"},
    {1, 0, 256, 256, 128, "mlp: layer 2 dW"},
    {0, 0, 128, 256, 256, "mlp: layer 2 dx"},
    {0, 1, 128, 10, 256, "mlp: layer 3 forward"},
    {1, 0, 10, 256, 128, "mlp: layer 3 dW"},
    {0, 0, 128, 256, 10, "mlp: layer 3 dx"},
    {0, 1, 128, 128, 3136, "cnn: dense 1 forward"},
    {1, 0, 128, 3136, 128, "cnn: dense 1 dW"},
    {0, 0, 128, 3136, 128, "cnn: dense 1 dx"},
    {0, 0, 64, 196, 32, "cnn: Winograd z, one of 16 per chunk"},
    {0, 1, 64, 32, 196, "cnn: Winograd dW, one of 16 per chunk"},
    {0, 0, 32, 196, 64, "cnn: Winograd dx, one of 16 per chunk"},
};

/* The best rate of gemm on these operands over rounds measurements, each of at least
 * seconds, in GFLOP/s. */
static double rate(const kn_backend *k, const shape *s, const float *a, const float *b, float *c,
                   int rounds, double seconds) {
    int lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    double flops = 2.0 * s->m * s->n * s->k, best = 0;
    for (int i = 0; i < 3; i++) /* warm: packing buffers, caches */
        k->gemm(s->ta, s->tb, s->m, s->n, s->k, 1.0f, a, lda, b, ldb, 0.0f, c, s->n);
    for (int r = 0; r < rounds; r++) {
        long reps = 0;
        double t0 = now(), t;
        do {
            for (int i = 0; i < 16; i++)
                k->gemm(s->ta, s->tb, s->m, s->n, s->k, 1.0f, a, lda, b, ldb, 0.0f, c, s->n);
            reps += 16;
        } while ((t = now() - t0) < seconds);
        if (flops * reps / t / 1e9 > best) best = flops * reps / t / 1e9;
    }
    return best;
}

int main(int argc, char **argv) {
    int rounds = 5;
    double seconds = 0.1;
    const tn_flag flags[] = {
        {"rounds", TN_FLAG_INT, &rounds, "N", "measurements of each shape and maker; the best is kept"},
        {"seconds", TN_FLAG_DOUBLE, &seconds, "S", "the least time a measurement takes"},
    };
    int help;
    if (tn_flags_program("bench_gemm_cpu", NULL, flags, sizeof flags / sizeof flags[0], argc,
                         argv, &help))
        return 2;
    if (help) return 0;
    if (rounds < 1 || !(seconds > 0 && seconds <= 60)) {
        fprintf(stderr, "bench_gemm_cpu: error: --rounds must be at least 1, --seconds "
                        "above 0 and at most 60\n");
        return 2;
    }
    const kn_backend *k = kn_cpu();
    k->set_threads(1);
    printf("{\"blas\": \"%s\", \"core\": \"%s\"}\n", openblas_get_config(),
           openblas_get_corename());
    tn_rng rng;
    tn_rng_seed(&rng, 1);
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
        const shape *s = &SHAPES[i];
        size_t na = (size_t)s->m * s->k, nb = (size_t)s->k * s->n, nc = (size_t)s->m * s->n;
        float *a = k->alloc(na * sizeof(float)), *b = k->alloc(nb * sizeof(float));
        float *c = k->alloc(nc * sizeof(float));
        for (size_t j = 0; j < na; j++) a[j] = tn_rng_uniformf(&rng) - 0.5f;
        for (size_t j = 0; j < nb; j++) b[j] = tn_rng_uniformf(&rng) - 0.5f;
        kn_cpu_gemm(KN_GEMM_OPENBLAS);
        double blas = rate(k, s, a, b, c, rounds, seconds);
        kn_cpu_gemm(KN_GEMM_OWN);
        uint64_t own0 = kn_cpu_gemm_own_products();
        double own = rate(k, s, a, b, c, rounds, seconds);
        char owns[32] = "null";
        if (kn_cpu_gemm_own_products() > own0) snprintf(owns, sizeof owns, "%.1f", own);
        printf("{\"shape\": \"%s %dx%dx%d\", \"use\": \"%s\", \"openblas_gflops\": %.1f, "
               "\"own_gflops\": %s}\n",
               s->ta ? (s->tb ? "TT" : "TN") : (s->tb ? "NT" : "NN"), s->m, s->n, s->k, s->use,
               blas, owns);
        fflush(stdout);
        k->free(a);
        k->free(b);
        k->free(c);
    }
    kn_cpu_gemm(KN_GEMM_RULE);
    return 0;
}
