/*
 * space.c — the search space: how each parameter type and scale maps to and from the
 * unit interval, which values are legal, how a value is written as a flag and read
 * back, which parameters a point activates (conditional parameters), the grid (mixed
 * radix, last parameter fastest; a parameter's active children faster than it), and
 * the grid and random samplers.
 *
 * Pure: no I/O, no clocks, no global state; every result is a function of the
 * arguments. The formulas, the grid order and the random-search seeding are written
 * down in docs/search.md; the contract is in space.h.
 */
#include "search/space.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "common/status.h"
#include "common/text.h"

#define TWO_POW_63 9223372036854775808.0  /* 2^63 */
#define TWO_POW_64 18446744073709551616.0 /* 2^64 */

/* ---- Small helpers ---- */

/* u clamped to [0, 1]; NaN becomes 0. */
static double clamp01(double u) {
    if (!(u > 0.0)) return 0.0;
    return u < 1.0 ? u : 1.0;
}

static double clamp(double v, double lo, double hi) {
    if (v < lo) return lo;
    if (v > hi) return hi;
    return v;
}

/* The scale actually used for a DOUBLE or INTEGER: NONE and unknown scales are
 * linear, and so is a log scale whose lower bound is not positive (such a space is
 * invalid and sp_suggest rejects it; this only keeps the arithmetic finite). */
static int numeric_scale(const sp_param *p, double lo) {
    if ((p->scale == SP_LOG || p->scale == SP_REVERSE_LOG) && lo > 0.0) return p->scale;
    return SP_LINEAR;
}

/* The legal integers of an INTEGER parameter are [ceil(min), floor(max)]. */
static double int_lo(const sp_param *p) { return ceil(p->min); }
static double int_hi(const sp_param *p) { return floor(p->max); }

/* Continuous map of v in [lo, hi] to [0, 1] with the given scale; 0.5 when lo == hi. */
static double cont_to_unit(int scale, double lo, double hi, double v) {
    if (!(hi > lo)) return 0.5;
    v = clamp(v, lo, hi);
    double u;
    if (scale == SP_LOG) {
        u = (log(v) - log(lo)) / (log(hi) - log(lo));
    } else if (scale == SP_REVERSE_LOG) {
        double w = clamp((hi - v) + lo, lo, hi); /* the mirror image of v */
        u = 1.0 - (log(w) - log(lo)) / (log(hi) - log(lo));
    } else {
        double span = hi - lo;
        if (isfinite(span)) {
            u = (v - lo) / span;
        } else { /* the range is wider than DBL_MAX: work in halves */
            u = (0.5 * v - 0.5 * lo) / (0.5 * hi - 0.5 * lo);
        }
    }
    return clamp01(u);
}

/* The inverse of cont_to_unit: u is clamped, the ends map exactly to lo and hi, and
 * the result is non-decreasing in u and clamped to [lo, hi]. */
static double cont_from_unit(int scale, double lo, double hi, double u) {
    if (!(hi > lo)) return lo;
    u = clamp01(u);
    if (u <= 0.0) return lo;
    if (u >= 1.0) return hi;
    double v;
    if (scale == SP_LOG) {
        v = exp(log(lo) + u * (log(hi) - log(lo)));
    } else if (scale == SP_REVERSE_LOG) {
        double w = exp(log(lo) + (1.0 - u) * (log(hi) - log(lo)));
        v = hi - (w - lo);
    } else {
        double span = hi - lo;
        if (isfinite(span)) {
            v = lo + u * span;
        } else {
            double half = 0.5 * hi - 0.5 * lo;
            v = (lo + u * half) + u * half;
        }
    }
    return clamp(v, lo, hi);
}

/* The bucket of u among n equal shares of [0, 1]: floor(u * n), clamped to n - 1. */
static size_t bucket(double u, size_t n) {
    double k = floor(clamp01(u) * (double)n);
    if (k >= (double)n) return n - 1;
    return (size_t)k;
}

/* The index of the listed value nearest v (values strictly increasing, n > 0). */
static size_t nearest_value(const double *values, size_t n, double v) {
    if (!(v > values[0])) return 0; /* also NaN */
    size_t lo = 0, hi = n;          /* first index with values[i] >= v, by bisection */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (values[mid] < v) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo == n) return n - 1;
    return (values[lo] - v < v - values[lo - 1]) ? lo : lo - 1;
}

/* ---- The space ---- */

void sp_space_add(sp_space *s, const sp_param *p) {
    s->params = tn_xrealloc(s->params, (s->n + 1) * sizeof *s->params);
    sp_param *q = &s->params[s->n++];
    *q = *p;
    q->name = p->name ? tn_xstrdup(p->name) : NULL;
    q->values = NULL;
    q->nvalues = 0;
    if (p->values && p->nvalues > 0) {
        q->values = tn_xmalloc(p->nvalues * sizeof *q->values);
        memcpy(q->values, p->values, p->nvalues * sizeof *q->values);
        q->nvalues = p->nvalues;
    }
    q->categories = NULL;
    q->ncategories = 0;
    if (p->categories && p->ncategories > 0) {
        q->categories = tn_xmalloc(p->ncategories * sizeof *q->categories);
        for (size_t i = 0; i < p->ncategories; i++) {
            q->categories[i] = p->categories[i] ? tn_xstrdup(p->categories[i]) : NULL;
        }
        q->ncategories = p->ncategories;
    }
    q->when = NULL;
    q->nwhen = 0;
    if (p->when && p->nwhen > 0) {
        q->when = tn_xmalloc(p->nwhen * sizeof *q->when);
        memcpy(q->when, p->when, p->nwhen * sizeof *q->when);
        q->nwhen = p->nwhen;
    }
}

void sp_space_clear(sp_space *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) {
        sp_param *p = &s->params[i];
        free(p->name);
        free(p->values);
        for (size_t j = 0; j < p->ncategories; j++) free(p->categories[j]);
        free(p->categories);
        free(p->when);
    }
    free(s->params);
    s->params = NULL;
    s->n = 0;
}

int sp_space_find(const sp_space *s, const char *name) {
    if (!s || !name) return -1;
    for (size_t i = 0; i < s->n; i++) {
        if (s->params[i].name && strcmp(s->params[i].name, name) == 0) return (int)i;
    }
    return -1;
}

/* ---- Unit interval ---- */

double sp_to_unit(const sp_param *p, double value) {
    switch (p->type) {
    case SP_DOUBLE:
        return cont_to_unit(numeric_scale(p, p->min), p->min, p->max, value);
    case SP_INTEGER: {
        double lo = int_lo(p), hi = int_hi(p);
        if (!(hi > lo)) return 0.5;
        int scale = numeric_scale(p, lo);
        if (scale != SP_LINEAR || !isfinite(hi - lo + 1.0)) {
            return cont_to_unit(scale, lo, hi, value);
        }
        /* Linear: the integer k owns [k - 0.5, k + 0.5) of [lo - 0.5, hi + 0.5]. */
        double k = isnan(value) ? lo : clamp(round(value), lo, hi);
        return clamp01((k - lo + 0.5) / (hi - lo + 1.0));
    }
    case SP_DISCRETE:
        if (p->nvalues == 0) return 0.5;
        return ((double)nearest_value(p->values, p->nvalues, value) + 0.5) /
               (double)p->nvalues;
    case SP_CATEGORICAL: {
        if (p->ncategories == 0) return 0.5;
        double i = isnan(value) ? 0.0 : clamp(round(value), 0.0, (double)(p->ncategories - 1));
        return (i + 0.5) / (double)p->ncategories;
    }
    }
    return 0.5;
}

double sp_from_unit(const sp_param *p, double u) {
    switch (p->type) {
    case SP_DOUBLE:
        return cont_from_unit(numeric_scale(p, p->min), p->min, p->max, u);
    case SP_INTEGER: {
        double lo = int_lo(p), hi = int_hi(p);
        if (!(hi > lo)) return lo + 0.0;
        int scale = numeric_scale(p, lo);
        double v;
        if (scale != SP_LINEAR || !isfinite(hi - lo + 1.0)) {
            /* (A linear range wider than DBL_MAX holds only integers anyway.) */
            v = round(cont_from_unit(scale, lo, hi, u));
        } else {
            /* Equal shares: lo + floor(u * (hi - lo + 1)), the last share closed. */
            v = lo + floor(clamp01(u) * (hi - lo + 1.0));
        }
        return clamp(v, lo, hi) + 0.0; /* + 0.0 turns -0 into 0 */
    }
    case SP_DISCRETE:
        if (p->nvalues == 0) return NAN;
        return p->values[bucket(u, p->nvalues)];
    case SP_CATEGORICAL:
        if (p->ncategories == 0) return NAN;
        return (double)bucket(u, p->ncategories);
    }
    return NAN;
}

int sp_is_legal(const sp_param *p, double v) {
    if (!isfinite(v)) return 0;
    switch (p->type) {
    case SP_DOUBLE:
        return v >= p->min && v <= p->max;
    case SP_INTEGER:
        return v == floor(v) && v >= p->min && v <= p->max;
    case SP_DISCRETE:
        if (p->nvalues == 0) return 0;
        return p->values[nearest_value(p->values, p->nvalues, v)] == v;
    case SP_CATEGORICAL:
        return v == floor(v) && v >= 0.0 && v < (double)p->ncategories;
    }
    return 0;
}

/* ---- Conditional parameters ---- */

int sp_condition_holds(const sp_param *p, double parent_value) {
    if (!p->conditional) return 1;
    if (isnan(parent_value) || !p->when) return 0;
    for (size_t k = 0; k < p->nwhen; k++) {
        if (p->when[k] == parent_value) return 1;
    }
    return 0;
}

/* Whether parameter i is active at v, whose parents before i are already masked (an
 * inactive parent is NaN, which satisfies no condition). A parent index that does not
 * come before i (a malformed space, which the samplers refuse) counts as inactive. */
static int active_at(const sp_space *s, size_t i, const double *v) {
    const sp_param *p = &s->params[i];
    if (!p->conditional) return 1;
    if (p->parent >= i) return 0;
    return sp_condition_holds(p, v[p->parent]);
}

void sp_mask_inactive(const sp_space *s, double *v) {
    for (size_t i = 0; i < s->n; i++) {
        if (!active_at(s, i, v)) v[i] = NAN;
    }
}

int sp_point_is_legal(const sp_space *s, const double *v) {
    for (size_t i = 0; i < s->n; i++) {
        if (active_at(s, i, v) ? !sp_is_legal(&s->params[i], v[i]) : !isnan(v[i])) return 0;
    }
    return 1;
}

int sp_space_is_conditional(const sp_space *s) {
    for (size_t i = 0; s && i < s->n; i++) {
        if (s->params[i].conditional) return 1;
    }
    return 0;
}

/* ---- Flags ---- */

char *sp_format_value(const sp_param *p, double v, char *buf, size_t len) {
    switch (p->type) {
    case SP_CATEGORICAL:
        if (sp_is_legal(p, v) && p->categories && p->categories[(size_t)v]) {
            snprintf(buf, len, "%s", p->categories[(size_t)v]);
            return buf;
        }
        break;
    case SP_INTEGER:
    case SP_DISCRETE:
        /* Integral values as plain integers ("256", not "2.6e+02"), as long as
         * they fit a 64-bit integer in the program that reads the flag. */
        if (isfinite(v) && v == floor(v) && fabs(v) < TWO_POW_63) {
            snprintf(buf, len, "%.0f", v + 0.0);
            return buf;
        }
        break;
    default:
        break;
    }
    return tn_format_double(v, buf, len);
}

int sp_parse_value(const sp_param *p, const char *text, double *v) {
    if (!p || !text || !v) return TN_EINVAL;
    if (p->type == SP_CATEGORICAL) {
        for (size_t i = 0; i < p->ncategories; i++) {
            if (p->categories[i] && strcmp(p->categories[i], text) == 0) {
                *v = (double)i;
                return 0;
            }
        }
        return TN_EINVAL;
    }
    /* A number in JSON's alphabet: no spaces, hex, "nan" or "inf". */
    size_t len = strlen(text);
    if (len == 0 || strspn(text, "0123456789+-.eE") != len) return TN_EINVAL;
    char *end;
    double x = strtod(text, &end);
    if (end != text + len || !sp_is_legal(p, x)) return TN_EINVAL;
    *v = p->type == SP_DOUBLE ? x : x + 0.0;
    return 0;
}

/* ---- Grid ---- */

/* Number of grid values of one parameter, saturated at UINT64_MAX; 0 for a DOUBLE
 * or for a parameter with no legal value. */
static uint64_t param_count(const sp_param *p) {
    switch (p->type) {
    case SP_INTEGER: {
        double lo = int_lo(p), hi = int_hi(p);
        if (!(lo <= hi)) return 0;
        if (lo >= -TWO_POW_63 && hi < TWO_POW_63) {
            /* Exact: the difference of two int64 fits a uint64 (mod 2^64 arithmetic),
             * and as both are doubles below 2^63 it is at most 2^64 - 1024: no wrap. */
            uint64_t d = (uint64_t)(int64_t)hi - (uint64_t)(int64_t)lo;
            return d + 1;
        }
        double c = hi - lo + 1.0;
        return c >= TWO_POW_64 ? UINT64_MAX : (uint64_t)c;
    }
    case SP_DISCRETE:
        return p->nvalues;
    case SP_CATEGORICAL:
        return p->ncategories;
    default:
        return 0;
    }
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static uint64_t sat_mul(uint64_t a, uint64_t b) {
    return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* The integer lo + k of an INTEGER parameter, exactly where lo fits an int64. */
static double int_plus(double lo, uint64_t k) {
    if (lo >= -TWO_POW_63 && lo < TWO_POW_63) {
        uint64_t r = (uint64_t)(int64_t)lo + k; /* two's complement of the result */
        if (r <= (uint64_t)INT64_MAX) return (double)r;
        return -(double)(0 - r);
    }
    return lo + (double)k;
}

/* Grid value number k (0 <= k < param_count) of p. */
static double grid_value(const sp_param *p, uint64_t k) {
    switch (p->type) {
    case SP_INTEGER:
        return clamp(int_plus(int_lo(p), k), int_lo(p), int_hi(p)) + 0.0;
    case SP_DISCRETE:
        return p->values[k];
    default: /* SP_CATEGORICAL */
        return (double)k;
    }
}

/* The number k of v among p's grid values (grid_value(p, k) == v): 0 and *k set, or
 * -1 when v is not one of them. */
static int grid_ordinal(const sp_param *p, double v, uint64_t *k) {
    if (!sp_is_legal(p, v) || param_count(p) == 0) return -1;
    switch (p->type) {
    case SP_INTEGER: {
        double lo = int_lo(p);
        if (lo >= -TWO_POW_63 && v < TWO_POW_63) {
            *k = (uint64_t)(int64_t)v - (uint64_t)(int64_t)lo; /* as in param_count */
        } else {
            double d = v - lo;
            *k = d >= TWO_POW_64 ? UINT64_MAX : (uint64_t)d;
        }
        return 0;
    }
    case SP_DISCRETE:
        *k = nearest_value(p->values, p->nvalues, v);
        return 0;
    case SP_CATEGORICAL:
        *k = (uint64_t)v;
        return 0;
    default:
        return -1;
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The parameters as a tree: the children of each (in index order) and the number of
 * grid points of each subtree. Parents come before their children, so one pass from
 * the last parameter to the first counts every subtree after its children. */
typedef struct grid_tree {
    size_t *first;      /* (n + 1) the children of i are kid[first[i] .. first[i + 1]) */
    size_t *kid;        /* (n) */
    uint64_t *count;    /* (n) points of i's subtree: for each value of i, the product
                           of the points of the children active there; 0: no grid */
} grid_tree;

/* The sorted, distinct numbers of the values of parameter i at which some child of i
 * is active; *ord is yours to free. Returns how many. */
static size_t activating_values(const sp_space *s, const grid_tree *t, size_t i, uint64_t **ord) {
    const sp_param *p = &s->params[i];
    size_t m = 0, cap = 0;
    for (size_t c = t->first[i]; c < t->first[i + 1]; c++) cap += s->params[t->kid[c]].nwhen;
    *ord = tn_xmalloc((cap + 1) * sizeof **ord);
    for (size_t c = t->first[i]; c < t->first[i + 1]; c++) {
        const sp_param *q = &s->params[t->kid[c]];
        for (size_t w = 0; q->when && w < q->nwhen; w++) {
            if (grid_ordinal(p, q->when[w], &(*ord)[m]) == 0) m++;
        }
    }
    qsort(*ord, m, sizeof **ord, cmp_u64);
    size_t u = 0;
    for (size_t k = 0; k < m; k++) {
        if (u == 0 || (*ord)[k] != (*ord)[u - 1]) (*ord)[u++] = (*ord)[k];
    }
    return u;
}

/* Points of i's subtree at i's value v: the product of the counts of the children
 * active at v. */
static uint64_t points_at(const sp_space *s, const grid_tree *t, size_t i, double v) {
    uint64_t b = 1;
    for (size_t c = t->first[i]; c < t->first[i + 1]; c++) {
        size_t k = t->kid[c];
        if (sp_condition_holds(&s->params[k], v)) b = sat_mul(b, t->count[k]);
    }
    return b;
}

static void tree_init(grid_tree *t, const sp_space *s) {
    size_t n = s->n;
    t->first = tn_xcalloc(n + 2, sizeof *t->first);
    t->kid = tn_xmalloc((n + 1) * sizeof *t->kid);
    t->count = tn_xcalloc(n + 1, sizeof *t->count);
    /* Children by their parent, in index order (a counting sort). A parent index that
     * is not below the child's is malformed: such a child is left out. */
    for (size_t i = 0; i < n; i++) {
        const sp_param *p = &s->params[i];
        if (p->conditional && p->parent < i) t->first[p->parent + 2]++;
    }
    for (size_t i = 0; i < n; i++) t->first[i + 2] += t->first[i + 1];
    for (size_t i = 0; i < n; i++) {
        const sp_param *p = &s->params[i];
        if (p->conditional && p->parent < i) t->kid[t->first[p->parent + 1]++] = i;
    }
    for (size_t i = n; i-- > 0;) {
        const sp_param *p = &s->params[i];
        uint64_t c = param_count(p);
        int defined = c > 0;
        for (size_t k = t->first[i]; k < t->first[i + 1]; k++) defined &= t->count[t->kid[k]] > 0;
        if (!defined) continue; /* count 0: no grid */
        uint64_t *ord;
        size_t m = activating_values(s, t, i, &ord);
        uint64_t total = c - m; /* each other value is one point */
        for (size_t k = 0; k < m; k++)
            total = sat_add(total, points_at(s, t, i, grid_value(p, ord[k])));
        free(ord);
        t->count[i] = total;
    }
}

static void tree_clear(grid_tree *t) {
    free(t->first);
    free(t->kid);
    free(t->count);
}

uint64_t sp_grid_size(const sp_space *s) {
    for (size_t i = 0; i < s->n; i++) {
        if (param_count(&s->params[i]) == 0) return 0;
    }
    grid_tree t;
    tree_init(&t, s);
    uint64_t size = 1;
    for (size_t i = 0; i < s->n; i++) {
        if (s->params[i].conditional) continue;
        if (t.count[i] == 0) {
            size = 0;
            break;
        }
        size = sat_mul(size, t.count[i]);
    }
    tree_clear(&t);
    return size;
}

/* Writes the digits of index over the parameters idx[0..m) (radix: their counts; the
 * last fastest), each decoded into its subtree. */
static void grid_digits(const sp_space *s, const grid_tree *t, const size_t *idx, size_t m,
                        uint64_t index, double *out);

/* Point number d of parameter i's subtree into out: i's values in order, each taking
 * as many points as its active children make together. */
static void grid_decode(const sp_space *s, const grid_tree *t, size_t i, uint64_t d, double *out) {
    const sp_param *p = &s->params[i];
    if (param_count(p) == 0) { /* no grid: a DOUBLE gets its min, an empty list NaN */
        out[i] = p->type == SP_DOUBLE ? p->min : NAN;
        return;
    }
    uint64_t *ord;
    size_t m = activating_values(s, t, i, &ord);
    uint64_t next = 0; /* the first value not yet passed */
    for (size_t k = 0; k < m; k++) {
        uint64_t plain = ord[k] - next; /* values before ord[k]: one point each */
        if (d < plain) break;
        d -= plain;
        double v = grid_value(p, ord[k]);
        uint64_t b = points_at(s, t, i, v);
        if (d < b) { /* at v: the digits of d over the children active there */
            out[i] = v;
            size_t *act = tn_xmalloc((t->first[i + 1] - t->first[i] + 1) * sizeof *act), na = 0;
            for (size_t c = t->first[i]; c < t->first[i + 1]; c++) {
                if (sp_condition_holds(&s->params[t->kid[c]], v)) act[na++] = t->kid[c];
            }
            grid_digits(s, t, act, na, d, out);
            free(act);
            free(ord);
            return;
        }
        d -= b;
        next = ord[k] + 1;
    }
    free(ord);
    out[i] = grid_value(p, next + d); /* a value no child is active at */
}

static void grid_digits(const sp_space *s, const grid_tree *t, const size_t *idx, size_t m,
                        uint64_t index, double *out) {
    for (size_t j = m; j-- > 0;) {
        uint64_t c = t->count[idx[j]];
        if (c == 0) c = 1; /* no grid (sp_grid_size is 0): one point */
        grid_decode(s, t, idx[j], index % c, out);
        index /= c;
    }
}

void sp_grid_point(const sp_space *s, uint64_t index, double *out) {
    grid_tree t;
    tree_init(&t, s);
    size_t *roots = tn_xmalloc((s->n + 1) * sizeof *roots), nr = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->params[i].conditional) {
            out[i] = NAN; /* until its parent activates it */
        } else {
            roots[nr++] = i;
        }
    }
    grid_digits(s, &t, roots, nr, index, out);
    free(roots);
    tree_clear(&t);
}

/* ---- Samplers ---- */

/* Whether every parameter has a known type and scale and at least one legal value,
 * and log scales have positive bounds: the samplers' precondition. */
static int param_ok(const sp_param *p) {
    if (p->scale < SP_SCALE_NONE || p->scale > SP_REVERSE_LOG) return 0;
    int log_scale = p->scale == SP_LOG || p->scale == SP_REVERSE_LOG;
    switch (p->type) {
    case SP_DOUBLE:
        return isfinite(p->min) && isfinite(p->max) && p->min <= p->max &&
               (!log_scale || p->min > 0.0);
    case SP_INTEGER:
        return isfinite(p->min) && isfinite(p->max) && int_lo(p) <= int_hi(p) &&
               (!log_scale || p->min > 0.0);
    case SP_DISCRETE:
        if (!p->values || p->nvalues == 0) return 0;
        for (size_t i = 0; i < p->nvalues; i++) {
            if (!isfinite(p->values[i])) return 0;
            if (i > 0 && !(p->values[i] > p->values[i - 1])) return 0;
        }
        return 1;
    case SP_CATEGORICAL:
        if (!p->categories || p->ncategories == 0) return 0;
        for (size_t i = 0; i < p->ncategories; i++) {
            if (!p->categories[i]) return 0;
        }
        return 1;
    default:
        return 0;
    }
}

/* Whether parameter i's condition is well formed: its parent comes before it and is
 * INTEGER, DISCRETE or CATEGORICAL, and every value of when[] is one the parent can
 * take. (A top-level parameter has nothing to check.) */
static int condition_ok(const sp_space *s, size_t i) {
    const sp_param *p = &s->params[i];
    if (!p->conditional) return 1;
    if (p->parent >= i || !p->when || p->nwhen == 0) return 0;
    const sp_param *q = &s->params[p->parent];
    if (q->type == SP_DOUBLE) return 0;
    for (size_t k = 0; k < p->nwhen; k++) {
        if (!sp_is_legal(q, p->when[k])) return 0;
    }
    return 1;
}

int sp_conditions_ok(const sp_space *s) {
    for (size_t i = 0; s && i < s->n; i++) {
        if (!condition_ok(s, i)) return 0;
    }
    return 1;
}

int sp_space_ok(const sp_space *s) {
    if (!s || (s->n > 0 && !s->params)) return 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!param_ok(&s->params[i])) return 0;
    }
    return sp_conditions_ok(s);
}

uint64_t sp_random_key(uint64_t seed, uint64_t index) {
    return tn_mix64(tn_mix64(seed) ^ index);
}


