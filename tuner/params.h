/*
 * params.h — a trial's parameter values in their three forms: the doubles samplers
 * work with (search/space.h), the JSON object the store and the API show
 * ({"learning_rate": 0.01, "optimizer": "adam"}: numbers, integers without a
 * fraction, categories as strings), and the --name=value flags a replica gets. A
 * conditional parameter that is inactive (NaN among the doubles) is left out of the
 * JSON and gets no flag.
 */
#ifndef TN_TUNER_PARAMS_H
#define TN_TUNER_PARAMS_H

#include <stddef.h>

#include "search/space.h"

/* The JSON object of the values v[0..s->n), without the inactive (NaN) ones. The
 * string is yours to free. */
char *tp_to_json(const sp_space *s, const double *v);

/* Reads a JSON object written by tp_to_json (or by a user, for `tell`) into
 * v[0..s->n): every active parameter present and legal, no others (an inactive one is
 * absent or null, and becomes NaN). Returns 0 or TN_EINVAL with a message naming the
 * parameter. */
int tp_from_json(const sp_space *s, const char *json, double *v, char *err, size_t errlen);

/* The flags "--NAME=VALUE", one per active parameter, appended to argv at *argc (argv
 * must have room for s->n more). The strings are yours to free. */
void tp_append_flags(const sp_space *s, const double *v, char **argv, size_t *argc);

#endif
