/*
 * pareto.c — the Pareto front and the two-objective hypervolume (see pareto.h).
 */
#include "search/pareto.h"

#include <assert.h>
#include <stdlib.h>

/* Objective k of a point as "lower is better". */
static double low(const double *p, size_t k, const int *maximize) {
    return maximize[k] ? -p[k] : p[k];
}

int pa_dominates(const double *a, const double *b, size_t m, const int *maximize) {
    int better = 0;
    for (size_t k = 0; k < m; k++) {
        double x = low(a, k, maximize), y = low(b, k, maximize);
        if (x > y) return 0;
        if (x < y) better = 1;
    }
    return better;
}

size_t pa_front(const double *pts, size_t n, size_t m, const int *maximize,
                unsigned char *on_front) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        on_front[i] = 1;
        for (size_t j = 0; j < n && on_front[i]; j++)
            if (j != i && pa_dominates(pts + j * m, pts + i * m, m, maximize)) on_front[i] = 0;
        count += on_front[i];
    }
    return count;
}

/* Orders two-objective points (lower is better) by the first, then the second. */
static int by_first(const void *a, const void *b) {
    const double *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

double pa_hypervolume2(const double *pts, size_t n, const int *maximize, const double ref[2]) {
    double *q = malloc((n ? n : 1) * 2 * sizeof *q); /* (n, 2), lower is better */
    if (!q) abort();
    double r0 = low(ref, 0, maximize), r1 = low(ref, 1, maximize);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double a = low(pts + 2 * i, 0, maximize), b = low(pts + 2 * i, 1, maximize);
        if (a < r0 && b < r1) {
            q[2 * k] = a;
            q[2 * k + 1] = b;
            k++;
        }
    }
    qsort(q, k, 2 * sizeof *q, by_first);
    /* Sweep by the first objective: each point that lowers the best second objective
     * so far adds the strip between it and the next such point's first value. */
    double volume = 0, best1 = r1;
    for (size_t i = 0; i < k; i++) {
        if (q[2 * i + 1] >= best1) continue; /* dominated (or equal): adds nothing */
        volume += (r0 - q[2 * i]) * (best1 - q[2 * i + 1]);
        best1 = q[2 * i + 1];
    }
    free(q);
    assert(volume >= 0);
    return volume;
}
