/*
 * params.c — trial parameters as doubles, JSON and flags (see params.h). An inactive
 * conditional parameter is NaN among the doubles, absent from the JSON and gets no
 * flag.
 */
#include "tuner/params.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"

char *tp_to_json(const sp_space *s, const double *v) {
    json_t *obj = json_object();
    for (size_t i = 0; i < s->n; i++) {
        const sp_param *p = &s->params[i];
        json_t *val;
        if (isnan(v[i])) continue; /* inactive */
        if (p->type == SP_CATEGORICAL)
            val = json_string(p->categories[(size_t)v[i]]);
        else if (p->type == SP_INTEGER || (v[i] == floor(v[i]) && fabs(v[i]) < 9e15 && p->type == SP_DISCRETE))
            val = json_integer((json_int_t)v[i]);
        else
            val = json_real(v[i]);
        json_object_set_new(obj, p->name, val);
    }
    char *text = json_dumps(obj, JSON_PRESERVE_ORDER | JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(obj);
    if (!text) tn_out_of_memory("a trial's parameters");
    char *copy = tn_xstrdup(text);
    free(text);
    return copy;
}

int tp_from_json(const sp_space *s, const char *json, double *v, char *err, size_t errlen) {
    json_error_t jerr;
    json_t *obj = json_loads(json, 0, &jerr);
    int rc = 0;
    if (!json_is_object(obj)) {
        rc = tn_error(err, errlen, TN_EINVAL, "parameters must be a JSON object%s%s",
                      obj ? "" : ": ", obj ? "" : jerr.text);
        goto done;
    }
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val) {
        if (sp_space_find(s, key) < 0) {
            rc = tn_error(err, errlen, TN_EINVAL, "'%s' is not a parameter of this study", key);
            goto done;
        }
    }
    for (size_t i = 0; i < s->n; i++) { /* parents first: their values decide */
        const sp_param *p = &s->params[i];
        val = json_object_get(obj, p->name);
        if (json_is_null(val)) val = NULL;
        if (p->conditional && !(p->parent < i && sp_condition_holds(p, v[p->parent]))) {
            v[i] = NAN;
            if (val) {
                const sp_param *q = p->parent < i ? &s->params[p->parent] : NULL;
                char pv[256] = "";
                if (q && !isnan(v[p->parent])) sp_format_value(q, v[p->parent], pv, sizeof pv);
                rc = tn_error(err, errlen, TN_EINVAL,
                              "parameter '%s' does not exist %s%s%s%s (it is conditional)",
                              p->name, q ? "when '" : "here", q ? q->name : "",
                              !q ? "" : pv[0] ? "' is " : "' is inactive", pv);
                goto done;
            }
            continue;
        }
        if (!val) {
            rc = tn_error(err, errlen, TN_EINVAL, "parameter '%s' is missing", p->name);
            goto done;
        }
        int ok;
        if (json_is_string(val))
            ok = sp_parse_value(p, json_string_value(val), &v[i]) == 0;
        else if (json_is_number(val) && p->type != SP_CATEGORICAL)
            ok = sp_is_legal(p, v[i] = json_number_value(val));
        else
            ok = 0;
        if (!ok) {
            rc = tn_error(err, errlen, TN_EINVAL, "parameter '%s': not a legal value", p->name);
            goto done;
        }
    }
done:
    json_decref(obj);
    return rc;
}

void tp_append_flags(const sp_space *s, const double *v, char **argv, size_t *argc) {
    for (size_t i = 0; i < s->n; i++) {
        if (isnan(v[i])) continue; /* inactive: no flag */
        char value[256];
        sp_format_value(&s->params[i], v[i], value, sizeof value);
        size_t len = strlen(s->params[i].name) + strlen(value) + 4;
        char *flag = tn_xmalloc(len);
        snprintf(flag, len, "--%s=%s", s->params[i].name, value);
        argv[(*argc)++] = flag;
    }
}
