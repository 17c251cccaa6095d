/*
 * pareto.h — the Pareto front of points with several objectives.
 *
 * A study with several metrics (the spec's "metrics", docs/spec.md) has no one best
 * trial: its answer is the set of trials that no other trial beats in every metric at
 * once. `tuner best`, the dashboard's API and the multi-objective sampler
 * (search/mobo.h) all take that set from here. Pure: no I/O, no allocation beyond
 * what a call returns.
 *
 * Notation: n points of m objectives, row-major (n, m); maximize[k] != 0 when
 * objective k is better higher, else lower.
 */
#ifndef TN_SEARCH_PARETO_H
#define TN_SEARCH_PARETO_H

#include <stddef.h>

/* Whether a dominates b: no worse in every objective and strictly better in at least
 * one. Equal points dominate neither way. Values must not be NaN. */
int pa_dominates(const double *a, const double *b, size_t m, const int *maximize);

/* Marks on_front[i] = 1 for each point that no other point dominates, 0 for the rest,
 * and returns how many are on the front. Duplicates of a front point are all on it
 * (none dominates another); with m == 1 the front is every point with the best value
 * (ties included). O(n^2 m). */
size_t pa_front(const double *pts, size_t n, size_t m, const int *maximize,
                unsigned char *on_front);

/* The hypervolume that the points dominate in two objectives, bounded by the
 * reference point ref (worse than every point counted: a point not strictly better
 * than ref in both objectives adds nothing). The measure the benchmark compares
 * samplers by (bench/mobo.py, docs/benchmarks/). */
double pa_hypervolume2(const double *pts, size_t n, const int *maximize, const double ref[2]);

#endif
