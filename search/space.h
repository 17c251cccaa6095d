/*
 * space.h — the search space of a study: its parameters, their scales and conditions,
 * the grid, and what a sampler is given (search/sampler.h draws from it).
 *
 * Pure: no I/O, no clocks, no global state. A parameter's value is always a double:
 * the number itself for DOUBLE, INTEGER (integral) and DISCRETE (one of the listed
 * values), the index of the category for CATEGORICAL. Every parameter maps to and
 * from the unit interval with its scale (linear, log, reverse log), which is what
 * samplers work in. A sampler decides the next point from the study's history and a
 * seed alone, so a study is reproducible. A parameter may be conditional (Vertex AI's
 * conditionalParameterSpecs): it exists only while its parent has one of some values,
 * to any depth; while it does not, it is inactive and its value is NaN. Design:
 * docs/search.md.
 */
#ifndef TN_SEARCH_SPACE_H
#define TN_SEARCH_SPACE_H

#include <stddef.h>
#include <stdint.h>

enum sp_type { SP_DOUBLE = 1, SP_INTEGER, SP_CATEGORICAL, SP_DISCRETE };
enum sp_scale { SP_SCALE_NONE = 0, SP_LINEAR, SP_LOG, SP_REVERSE_LOG };

typedef struct sp_param {
    char *name;          /* parameterName; becomes the --name=value flag */
    int type;            /* enum sp_type */
    int scale;           /* enum sp_scale; NONE means linear for DOUBLE/INTEGER */
    double min, max;     /* DOUBLE, INTEGER: the closed range, min <= max */
    double *values;      /* DISCRETE: nvalues values, strictly increasing */
    size_t nvalues;
    char **categories;   /* CATEGORICAL: ncategories distinct strings */
    size_t ncategories;
    /* Conditional parameters: zero for a top-level parameter (always active). */
    int conditional;     /* 1: active only while params[parent] is active and its
                            value is one of when[0..nwhen) */
    size_t parent;       /* conditional: the parent's index, below this one's; the
                            parent is INTEGER, DISCRETE or CATEGORICAL */
    double *when;        /* conditional: nwhen >= 1 legal values of the parent (a
                            category as its index) */
    size_t nwhen;
} sp_param;

typedef struct sp_space {
    sp_param *params;    /* n parameters, every parent before its children; the space
                            owns them, their strings and arrays */
    size_t n;
} sp_space;

/* Adds a copy of p (deep: strings and arrays, when[] included, are copied) to the
 * space. */
void sp_space_add(sp_space *s, const sp_param *p);
/* Frees what the space holds and zeroes it; accepts a zeroed space. */
void sp_space_clear(sp_space *s);
/* Index of the parameter named name, or -1. */
int sp_space_find(const sp_space *s, const char *name);

/* The unit-interval coordinate of a legal value, and back. from_unit clamps u to
 * [0, 1] and always returns a legal value: INTEGER rounds to the nearest integer in
 * range, DISCRETE and CATEGORICAL pick the nearest value / the bucket of u (each
 * category and each discrete value owns an equal share of [0, 1]). Log scales need
 * min > 0. REVERSE_LOG puts more resolution near max (as AI Platform's does). */
double sp_to_unit(const sp_param *p, double value);
double sp_from_unit(const sp_param *p, double u);

/* Whether v is a legal value of p. NaN (inactive) never is. */
int sp_is_legal(const sp_param *p, double v);

/* ---- Conditional parameters: points with inactive parameters ----
 *
 * A point holds one value per parameter, NaN for an inactive one. Parameter i is
 * active when it is not conditional, or when its parent is active and the parent's
 * value is one of p->when. */

/* Whether a conditional p's condition holds for its parent's value (one of when[];
 * never for NaN). 1 for a parameter that is not conditional. */
int sp_condition_holds(const sp_param *p, double parent_value);

/* Sets the value of every parameter that is inactive at v to NaN, parents first, so
 * that any array of values (a draw of every parameter, say) becomes a point. */
void sp_mask_inactive(const sp_space *s, double *v);

/* Whether v is a point of the space: every active parameter has a legal value and
 * every inactive one is NaN. */
int sp_point_is_legal(const sp_space *s, const double *v);

/* Whether some parameter of the space is conditional. */
int sp_space_is_conditional(const sp_space *s);

/* Whether every condition is well formed: each conditional parameter's parent comes
 * before it and is INTEGER, DISCRETE or CATEGORICAL, and when[] holds at least one
 * value, each a legal value of the parent. The samplers refuse a space without it. */
int sp_conditions_ok(const sp_space *s);

/* Whether every parameter has a known type and scale and at least one legal value
 * (log scales with positive bounds) and every condition is well formed: what the
 * samplers (search/sampler.h, search/bo.h) require of a space. */
int sp_space_ok(const sp_space *s);

/* The value as the replica's flag gets it: DOUBLE in shortest round-trip form,
 * INTEGER as an integer, DISCRETE as the listed number (integers without ".0"),
 * CATEGORICAL as the category string. Returns buf. */
char *sp_format_value(const sp_param *p, double v, char *buf, size_t len);

/* Parses a value written by sp_format_value (or a JSON number / category string).
 * Returns 0 and sets *v, or TN_EINVAL when text is not a legal value of p. */
int sp_parse_value(const sp_param *p, const char *text, double *v);

/* ---- Grid ---- */

/* Number of grid points: without conditional parameters, the product over
 * parameters of their number of values (INTEGER: max - min + 1; DISCRETE: nvalues;
 * CATEGORICAL: ncategories). With them, only active combinations count: a parameter
 * with children counts, for each of its values, the product of the points of the
 * children active there (docs/search.md, "Grid"). A DOUBLE parameter makes the grid
 * undefined: returns 0. Saturates at UINT64_MAX. */
uint64_t sp_grid_size(const sp_space *s);

/* Writes grid point `index` (0 <= index < sp_grid_size) to out[0..n): mixed radix,
 * the last parameter varying fastest, each parameter's active children varying
 * faster than it; inactive parameters NaN. */
void sp_grid_point(const sp_space *s, uint64_t index, double *out);

/* ---- Samplers ---- */

enum sp_trial_state { SP_PENDING = 1, SP_COMPLETE, SP_FAILED, SP_STOPPED };

/* One trial of the history a sampler is given. */
typedef struct sp_trial {
    const double *values;  /* n values, one per parameter (NaN: inactive) */
    int state;             /* enum sp_trial_state; PENDING = running or asked */
    int has_objective;     /* COMPLETE (and STOPPED with a measurement) */
    double objective;      /* the final (or last) value of the metric */
} sp_trial;

typedef struct sp_history {
    const sp_trial *trials;
    size_t n;
    int maximize;          /* 1: larger objectives are better */
} sp_history;

/* The seed of random search's generator for trial `index`: tn_mix64(tn_mix64(seed)
 * ^ index), one-to-one in seed for a fixed index and in index for a fixed seed. The
 * Bayesian sampler's fallback uses it to give random search's very point. */
uint64_t sp_random_key(uint64_t seed, uint64_t index);

#endif
