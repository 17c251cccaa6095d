/*
 * bench_fma_peak.c — the machine's single-precision FMA peak: what no matrix product on
 * these cores can beat, the ceiling for the GEMM floor of bench_train.
 *
 * Each of --threads threads (started together) runs independent chains of fused
 * multiply-adds in registers, 8 floats a vector (AVX2 + FMA) and, where the CPU has
 * AVX-512, 16; no memory is touched. A thread's rate is 2 flops per lane per FMA over
 * its own wall time; the peak is the sum over the threads, best of --rounds. Prints one
 * JSON object; null for an instruction set the CPU lacks. bench/train_speed.py sets
 * each setting's products against the peak of the vectors its OpenBLAS kernels use.
 *
 *   bench_fma_peak [--threads=N] [--rounds=N] [--iterations=N]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/flags.h"

#define CHAINS 12 /* independent accumulators: more than an FMA's latency x its ports */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* n rounds of CHAINS FMAs of 8 lanes; returns a sum of the chains so that none is dead
 * code. a stays bounded: a <- a * 0.9999999 + 1e-7 tends to 1. */
__attribute__((target("avx2,fma"))) static float fma_avx2(long n) {
    __m256 a[CHAINS];
    const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < CHAINS; i++) a[i] = _mm256_set1_ps((float)i);
    for (long r = 0; r < n; r++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) a[i] = _mm256_fmadd_ps(a[i], m, c);
    float lanes[8], s = 0.0f;
    for (int i = 0; i < CHAINS; i++) {
        _mm256_storeu_ps(lanes, a[i]);
        s += lanes[0];
    }
    return s;
}

__attribute__((target("avx512f"))) static float fma_avx512(long n) {
    __m512 a[CHAINS];
    const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < CHAINS; i++) a[i] = _mm512_set1_ps((float)i);
    for (long r = 0; r < n; r++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++) a[i] = _mm512_fmadd_ps(a[i], m, c);
    float s = 0.0f;
    for (int i = 0; i < CHAINS; i++) s += _mm512_reduce_add_ps(a[i]);
    return s;
}

static int have(int lanes) {
    return lanes == 8 ? __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                      : __builtin_cpu_supports("avx512f");
}
#else
static float fma_avx2(long n) { return (float)n; }
static float fma_avx512(long n) { return (float)n; }
static int have(int lanes) { return (void)lanes, 0; }
#endif

typedef struct run {
    pthread_barrier_t *start;
    int lanes;
    long iterations;
    double gflops; /* out: this thread's */
    float sink;
} run;

static void *run_thread(void *arg) {
    run *r = arg;
    pthread_barrier_wait(r->start);
    double t0 = now();
    r->sink = r->lanes == 8 ? fma_avx2(r->iterations) : fma_avx512(r->iterations);
    double s = now() - t0;
    r->gflops = 2.0 * r->lanes * CHAINS * (double)r->iterations / s / 1e9;
    return NULL;
}

/* The sum over `threads` threads of their rates, best of `rounds`. */
static double peak(int lanes, int threads, int rounds, long iterations) {
    pthread_t tid[64];
    run runs[64];
    pthread_barrier_t start;
    double best = 0.0;
    for (int k = 0; k < rounds; k++) {
        pthread_barrier_init(&start, NULL, (unsigned)threads);
        for (int t = 0; t < threads; t++) {
            runs[t] = (run){&start, lanes, iterations, 0.0, 0.0f};
            if (t > 0 && pthread_create(&tid[t], NULL, run_thread, &runs[t])) {
                fprintf(stderr, "bench_fma_peak: error: cannot start thread %d\n", t);
                exit(1);
            }
        }
        run_thread(&runs[0]);
        double sum = runs[0].gflops;
        for (int t = 1; t < threads; t++) {
            pthread_join(tid[t], NULL);
            sum += runs[t].gflops;
        }
        pthread_barrier_destroy(&start);
        if (sum > best) best = sum;
    }
    return best;
}

int main(int argc, char **argv) {
    int threads = 1, rounds = 3, iterations = 20000000;
    const tn_flag flags[] = {
        {"threads", TN_FLAG_INT, &threads, "N", "threads, started together (1 to 64)"},
        {"rounds", TN_FLAG_INT, &rounds, "N", "measurements; the best is kept"},
        {"iterations", TN_FLAG_INT, &iterations, "N", "rounds of 12 FMAs per measurement"},
    };
    int help;
    if (tn_flags_program("bench_fma_peak", NULL, flags, sizeof flags / sizeof flags[0], argc,
                         argv, &help))
        return 2;
    if (help) return 0;
    if (threads < 1 || threads > 64 || rounds < 1 || iterations < 1) {
        fprintf(stderr, "bench_fma_peak: error: --threads must be 1 to 64, --rounds and "
                        "--iterations at least 1\n");
        return 2;
    }
    char avx2[32] = "null", avx512[32] = "null";
    if (have(8)) snprintf(avx2, sizeof avx2, "%.1f", peak(8, threads, rounds, iterations));
    if (have(16)) snprintf(avx512, sizeof avx512, "%.1f", peak(16, threads, rounds, iterations));
    printf("{\"threads\": %d, \"avx2_gflops\": %s, \"avx512_gflops\": %s}\n", threads, avx2,
           avx512);
    return 0;
}
