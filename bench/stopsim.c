/* stopsim.c — the simulated study's workers of bench_stopping and bench_mostopping
 * (stopsim.h). */
#include "stopsim.h"

#include <stdio.h>
#include <string.h>

void ss_init(ss_workers *s, int n) {
    s->n = n;
    s->started = 0;
    for (int w = 0; w < n; w++) s->cur[w] = -1;
}

int ss_start(ss_workers *s, int pool, int max_trials, long long budget, long long spent,
             int *trial) {
    if (s->started == pool || (max_trials && s->started == max_trials) ||
        (budget && spent >= budget))
        return -1;
    for (int w = 0; w < s->n; w++)
        if (s->cur[w] < 0) {
            *trial = s->cur[w] = s->started++;
            return w;
        }
    return -1;
}

int ss_next(const ss_workers *s) {
    int w = -1;
    for (int k = 0; k < s->n; k++)
        if (s->cur[k] >= 0 && (w < 0 || s->next[k] < s->next[w] ||
                               (s->next[k] == s->next[w] && s->cur[k] < s->cur[w])))
            w = k;
    return w;
}

int ss_listed(const char *list, const char *name) {
    if (!strcmp(list, "all")) return 1;
    for (const char *q = list; *q;) {
        size_t len = strcspn(q, ",");
        if (len == strlen(name) && !strncmp(q, name, len)) return 1;
        q += len + (q[len] == ',');
    }
    return 0;
}

int ss_check_flags(const char *program, int seeds, int trials, int budget, int workers,
                   double jitter) {
    if (seeds >= 1 && trials >= 1 && budget >= 1 && workers >= 1 && workers <= SS_MAXWORK &&
        jitter >= 0 && jitter < 1)
        return 0;
    fprintf(stderr, "%s: error: --seeds, --trials and --budget must be >= 1, --workers 1 to %d, "
                    "--jitter in [0, 1)\n", program, SS_MAXWORK);
    return 2;
}
