/*
 * text.c — string helpers (see text.h).
 */
#include "common/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"

size_t tn_edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    size_t *row = tn_xmalloc((lb + 1) * sizeof *row);
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    size_t d = row[lb];
    free(row);
    return d;
}

const char *tn_closest(const char *word, const char *const *candidates, size_t n) {
    size_t limit = strlen(word) / 3;
    if (limit < 2) limit = 2;
    const char *best = NULL;
    size_t best_d = limit + 1;
    for (size_t i = 0; i < n; i++) {
        size_t d = tn_edit_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    return best;
}

char *tn_format_double(double v, char *buf, size_t len) {
    if (isnan(v)) {
        snprintf(buf, len, "nan");
        return buf;
    }
    if (isinf(v)) {
        snprintf(buf, len, v > 0 ? "inf" : "-inf");
        return buf;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}
