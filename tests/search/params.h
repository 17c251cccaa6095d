/*
 * params.h — parameters and spaces for the search tests (header only): sp_param
 * literals of each type (P_DOUBLE, P_INT, P_DISC over a static array of values, P_CAT
 * over a static array of names), a conditional child of one, and a space made of an
 * array of them.
 */
#ifndef TN_TESTS_SEARCH_PARAMS_H
#define TN_TESTS_SEARCH_PARAMS_H

#include <stddef.h>

#include "search/space.h"

#define P_DOUBLE(nm, sc, lo, hi) \
    {(char *)(nm), SP_DOUBLE, (sc), (lo), (hi), NULL, 0, NULL, 0, 0, 0, NULL, 0}
#define P_INT(nm, sc, lo, hi) \
    {(char *)(nm), SP_INTEGER, (sc), (lo), (hi), NULL, 0, NULL, 0, 0, 0, NULL, 0}
#define P_DISC(nm, sc, v) \
    {(char *)(nm), SP_DISCRETE, (sc), 0, 0, (v), sizeof(v) / sizeof(v)[0], NULL, 0, 0, 0, NULL, 0}
#define P_CAT(nm, c) {(char *)(nm), SP_CATEGORICAL, SP_SCALE_NONE, 0, 0, NULL, 0, (c), \
                      sizeof(c) / sizeof(c)[0], 0, 0, NULL, 0}

/* The space of ps[0..n), in order (sp_space_add's copies: release with sp_space_clear). */
static inline sp_space make_space(const sp_param *ps, size_t n) {
    sp_space s = {0};
    for (size_t i = 0; i < n; i++) sp_space_add(&s, &ps[i]);
    return s;
}

/* p as a child of params[parent], active for the parent values when[0..n). */
static inline sp_param child(sp_param p, size_t parent, double *when, size_t n) {
    p.conditional = 1;
    p.parent = parent;
    p.when = when;
    p.nwhen = n;
    return p;
}

#endif
