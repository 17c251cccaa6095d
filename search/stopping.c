/*
 * stopping.c — the early-stopping rules (median, asha, hyperband): whether a running
 * trial should stop after its newest measurement.
 *
 * Pure, like the samplers: no I/O, no clocks, no global state; a decision is a
 * function of the configuration and the trials passed in, and does not depend on
 * their order in the array. The only memory used is one scratch array per call.
 *
 * All comparisons happen in "loss" space: loss = -value when maximizing, value when
 * minimizing, so smaller is better, and a NaN loss is worse than every number
 * (infinities are ordinary numbers). The rules, with worked examples and every
 * convention (ties, missing steps, rungs between steps), are written down in
 * docs/early-stopping.md, "The rules"; the contract is in stopping.h.
 */
#include "search/stopping.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "common/text.h"
#include "search/space.h"

#define FIELD "trainingInput.hyperparameters.earlyStopping."

static const char *const policy_names[] = {"none", "median", "asha", "hyperband", "dominance"};
#define NPOLICIES (sizeof(policy_names) / sizeof(policy_names[0]))

/* ---- Policy names ---- */

const char *es_policy_name(int policy) {
    if (policy < 0 || (size_t)policy >= NPOLICIES) return "unknown";
    return policy_names[policy];
}

int es_policy_parse(const char *name) {
    if (!name) return -1;
    for (size_t p = 0; p < NPOLICIES; p++) {
        const char *a = name, *b = policy_names[p];
        while (*a && tolower((unsigned char)*a) == *b) a++, b++;
        if (!*a && !*b) return (int)p;
    }
    return -1;
}

/* ---- Configuration ---- */

void es_config_default(es_config *c) {
    *c = (es_config){.policy = ES_DEFAULT_POLICY, .maximize = 1, .min_trials = 0, .min_step = 1,
                     .running_average = 0, .grace_period = 0, .reduction_factor = 3,
                     .max_step = 0};
}

int es_min_trials(const es_config *c) {
    if (c->min_trials > 0) return c->min_trials;
    return c->policy == ES_DOMINANCE ? ES_DOMINANCE_MIN_TRIALS : ES_MEDIAN_MIN_TRIALS;
}

int es_config_check(const es_config *c, char *err, size_t errlen) {
    if (!c) return tn_error(err, errlen, TN_EINVAL, "no early-stopping configuration");
    switch (c->policy) {
    case ES_NONE:
        return 0;
    case ES_MEDIAN:
    case ES_DOMINANCE:
        if (c->min_trials < 0)
            return tn_error(err, errlen, TN_EINVAL,
                            FIELD "minTrials must be >= 1 (0: the policy's default), got %d",
                            c->min_trials);
        if (c->min_step < 0)
            return tn_error(err, errlen, TN_EINVAL, FIELD "minStep must be >= 0, got %lld",
                            (long long)c->min_step);
        if (c->running_average != 0 && c->running_average != 1)
            return tn_error(err, errlen, TN_EINVAL,
                            FIELD "useRunningAverage must be true or false, got %d",
                            c->running_average);
        return 0;
    case ES_ASHA:
    case ES_HYPERBAND:
        if (c->grace_period < 0)
            return tn_error(err, errlen, TN_EINVAL,
                            FIELD "gracePeriod must be >= 0 (0: an eighth of the trials' "
                            "length), got %lld",
                            (long long)c->grace_period);
        if (c->reduction_factor < 2)
            return tn_error(err, errlen, TN_EINVAL,
                            FIELD "reductionFactor must be >= 2, got %d",
                            c->reduction_factor);
        if (c->max_step < 0)
            return tn_error(err, errlen, TN_EINVAL,
                            FIELD "maxStep must be >= 0 (0: no limit), got %lld",
                            (long long)c->max_step);
        if (c->policy == ES_HYPERBAND && c->grace_period == 0 && c->max_step < 1)
            return tn_error(err, errlen, TN_EINVAL,
                            FIELD "maxStep (the step at which trials end) must be >= 1 "
                            "with policy hyperband, got %lld",
                            (long long)c->max_step);
        if (c->policy == ES_HYPERBAND && c->grace_period > 0 && c->max_step <= c->grace_period)
            return tn_error(err, errlen, TN_EINVAL,
                            FIELD "maxStep must be > gracePeriod (%lld) with policy "
                            "hyperband, got %lld",
                            (long long)c->grace_period, (long long)c->max_step);
        return 0;
    default:
        return tn_error(err, errlen, TN_EINVAL,
                        FIELD "policy must be one of none, median, asha, hyperband, dominance, got %d",
                        c->policy);
    }
}

/* ---- Loss space ---- */

static double to_loss(const es_config *c, double value) { return c->maximize ? -value : value; }
static double from_loss(const es_config *c, double loss) { return c->maximize ? -loss : loss; }

/* Whether loss a is strictly worse than loss b (NaN is worse than any number, and
 * as good as another NaN). */
static int worse(double a, double b) {
    if (isnan(b)) return 0;
    if (isnan(a)) return 1;
    return a > b;
}

/* qsort order: best (smallest) loss first, NaN last; equal numbers ordered -0 before
 * +0 so that the sorted array, and every number printed from it, does not depend on
 * the input order. */
static int cmp_loss(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    if (worse(a, b)) return 1;
    if (worse(b, a)) return -1;
    if (isnan(a)) return 0;
    return (int)!signbit(a) - (int)!signbit(b);
}

/* The mean of a and b without overflow for finite inputs (NaN if either is NaN, or
 * for -inf and +inf). */
static double mean2(double a, double b) {
    double s = a + b;
    if (isinf(s) && isfinite(a) && isfinite(b)) return a / 2 + b / 2;
    return s / 2;
}

/* The mean of the values of the points with step <= s, and their count in *count
 * (the mean is 0 when there are none). Sums of finite values that overflow are
 * redone divided term by term, and the result is clamped to the range of the values
 * averaged, so that rounding never makes an average better than its best value (the
 * average of a constant curve is that constant exactly). NaN in, NaN out. */
static double mean_upto(const es_trial *tr, int64_t s, size_t *count) {
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    size_t k = 0;
    for (size_t i = 0; i < tr->n; i++) {
        double v = tr->curve[i].value;
        if (tr->curve[i].step > s) continue;
        sum += v;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        k++;
    }
    *count = k;
    if (k == 0) return 0;
    double mean = sum / (double)k;
    if (isinf(sum) && isfinite(lo) && isfinite(hi)) {
        mean = 0;
        for (size_t i = 0; i < tr->n; i++)
            if (tr->curve[i].step <= s) mean += tr->curve[i].value / (double)k;
    }
    if (mean < lo) mean = lo;
    if (mean > hi) mean = hi;
    return mean;
}

/* ---- Reasons ---- */

/* Formats a and b for one sentence: 6 significant digits, unless that would print
 * two different numbers alike, then the shortest round-trip form. NaN is "nan". */
static void fmt2(double a, double b, char *ba, char *bb, size_t len) {
    if (isnan(a)) snprintf(ba, len, "nan");
    else snprintf(ba, len, "%.6g", a);
    if (isnan(b)) snprintf(bb, len, "nan");
    else snprintf(bb, len, "%.6g", b);
    if (strcmp(ba, bb) == 0 && a != b && !(isnan(a) && isnan(b))) {
        tn_format_double(a, ba, len);
        tn_format_double(b, bb, len);
    }
}

#define NUMLEN 32

/* ---- Median ---- */

static void median_decide(const es_config *c, const es_trial *trials, size_t n, size_t t,
                          es_decision *out) {
    const es_trial *tr = &trials[t];
    int64_t s = tr->curve[tr->n - 1].step;
    if (s < c->min_step) {
        snprintf(out->reason, sizeof out->reason, "step %lld is before minStep %lld",
                 (long long)s, (long long)c->min_step);
        return;
    }

    /* The references' values at step s, as losses: each completed trial's value at
     * its last point at or before s (a trial that skipped step s counts with the
     * value it had then). */
    double *ref = tn_xmalloc(n * sizeof *ref);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const es_trial *r = &trials[i];
        if (i == t || r->state != SP_COMPLETE) continue;
        size_t k = r->n;
        while (k > 0 && r->curve[k - 1].step > s) k--;
        if (k > 0) ref[m++] = to_loss(c, r->curve[k - 1].value);
    }
    size_t need = (size_t)es_min_trials(c);
    if (m < need) {
        snprintf(out->reason, sizeof out->reason,
                 "step %lld: only %zu completed trial%s reached it (need %zu)", (long long)s,
                 m, m == 1 ? " has" : "s have", need);
        free(ref);
        return;
    }
    qsort(ref, m, sizeof *ref, cmp_loss);
    double med = m % 2 ? ref[m / 2] : mean2(ref[m / 2 - 1], ref[m / 2]);
    free(ref);

    /* The trial's own value: its best so far, or its running average. */
    double mine;
    if (c->running_average) {
        size_t k;
        mine = to_loss(c, mean_upto(tr, s, &k));
    } else {
        mine = NAN;
        for (size_t i = 0; i < tr->n; i++) {
            if (tr->curve[i].step > s) continue;
            double l = to_loss(c, tr->curve[i].value);
            if (worse(mine, l)) mine = l;
        }
    }

    out->stop = worse(mine, med);
    char bm[NUMLEN], bmed[NUMLEN];
    fmt2(from_loss(c, mine), from_loss(c, med), bm, bmed, NUMLEN);
    snprintf(out->reason, sizeof out->reason,
             "step %lld: %s %s is %sworse than the median %s of %zu completed trial%s",
             (long long)s, c->running_average ? "running average" : "best", bm,
             out->stop ? "" : "not ", bmed, m, m == 1 ? "" : "s");
}

/* ---- ASHA (and each hyperband bracket) ---- */

/* The value (as a loss) of tr at the rung at step r: its first point at or past r
 * (found by bisection: steps increase). Returns 0 when it has none. */
static int value_at(const es_config *c, const es_trial *tr, int64_t r, double *loss) {
    size_t lo = 0, hi = tr->n; /* the answer is in [lo, hi]; hi: none */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tr->curve[mid].step >= r) hi = mid;
        else lo = mid + 1;
    }
    if (lo == tr->n) return 0;
    *loss = to_loss(c, tr->curve[lo].value);
    return 1;
}

/* The bracket of trial number k among nb brackets: (k - 1) mod nb, taken >= 0. */
static int64_t bracket_of(int64_t k, int64_t nb) {
    int64_t b = (k % nb - 1 % nb) % nb; /* k - 1 without overflow at INT64_MIN */
    return b < 0 ? b + nb : b;
}

/* ASHA with first rung `grace` and no rung at or past `limit` (0: none), over the
 * trials in bracket `bracket` of nb (nb == 0: every trial). prefix starts the reason
 * ("" or the bracket); limit_name says what the limit is ("maxStep", "the trials'
 * length"). */
static void asha_decide(const es_config *c, int64_t grace, int64_t limit,
                        const char *limit_name, int64_t bracket, int64_t nb,
                        const char *prefix, const es_trial *trials, size_t n, size_t t,
                        es_decision *out) {
    const es_trial *tr = &trials[t];
    int64_t eta = c->reduction_factor;
    int64_t s = tr->curve[tr->n - 1].step;
    int has_prev = tr->n > 1;
    int64_t prev = has_prev ? tr->curve[tr->n - 2].step : 0;

    /* Walk the rungs up to s: the highest one that the newest point newly passes
     * (rung, at rung_step), the highest one passed at all (passed, at passed_step),
     * and whether there is a rung after s (r, rung k) below max_step and INT64_MAX. */
    int64_t r = grace, k = 0, rung = -1, rung_step = 0, passed = -1, passed_step = 0;
    int next = 0;
    for (;;) {
        if (limit > 0 && r >= limit) break;
        if (r > s) {
            next = 1;
            break;
        }
        passed = k, passed_step = r;
        if (!has_prev || prev < r) rung = k, rung_step = r;
        if (r > INT64_MAX / eta) break;
        r *= eta;
        k++;
    }
    if (rung < 0) {
        if (passed >= 0 && next)
            snprintf(out->reason, sizeof out->reason,
                     "%sstep %lld: no new rung (the next, rung %lld, is at step %lld)",
                     prefix, (long long)s, (long long)k, (long long)r);
        else if (passed >= 0)
            snprintf(out->reason, sizeof out->reason,
                     "%sstep %lld: no new rung (the last, rung %lld, is at step %lld)",
                     prefix, (long long)s, (long long)passed, (long long)passed_step);
        else if (next)
            snprintf(out->reason, sizeof out->reason,
                     "%sstep %lld is before the first rung (step %lld)", prefix,
                     (long long)s, (long long)grace);
        else
            snprintf(out->reason, sizeof out->reason, "%sno rung below %s %lld", prefix,
                     limit_name, (long long)limit);
        return;
    }

    /* A trial at its end (one that reports only there, say) is not judged: stopping it
     * would save nothing, and would drop its result. The end is maxStep when it is
     * given; else the completed trials' length, which a longer trial may pass. */
    if (limit > 0 && (c->max_step > 0 ? s >= limit : s == limit)) {
        snprintf(out->reason, sizeof out->reason,
                 "%sstep %lld is at %s %lld: its end, nothing left to save", prefix,
                 (long long)s, limit_name, (long long)limit);
        return;
    }

    /* Every trial of the bracket that reached the rung, t included. */
    double *loss = tn_xmalloc(n * sizeof *loss);
    size_t m = 0;
    double mine = NAN;
    for (size_t i = 0; i < n; i++) {
        if (nb > 0 && bracket_of(trials[i].number, nb) != bracket) continue;
        if (!value_at(c, &trials[i], rung_step, &loss[m])) continue;
        if (i == t) mine = loss[m];
        m++;
    }
    size_t keep = m / (size_t)eta;
    qsort(loss, m, sizeof *loss, cmp_loss);
    double thr = loss[(keep ? keep : 1) - 1];
    free(loss);
    out->stop = worse(mine, thr);

    char where[128], bm[NUMLEN], bt[NUMLEN];
    if (s == rung_step)
        snprintf(where, sizeof where, "rung %lld (step %lld)", (long long)rung,
                 (long long)rung_step);
    else
        snprintf(where, sizeof where, "rung %lld (step %lld, reached at step %lld)",
                 (long long)rung, (long long)rung_step, (long long)s);
    fmt2(from_loss(c, mine), from_loss(c, thr), bm, bt, NUMLEN);
    if (keep == 0)
        snprintf(out->reason, sizeof out->reason,
                 "%s%s: %s is %sthe best of %zu trial%s (threshold %s)", prefix, where, bm,
                 out->stop ? "not " : "", m, m == 1 ? "" : "s", bt);
    else
        snprintf(out->reason, sizeof out->reason,
                 "%s%s: %s is %sin the top %zu of %zu trials (threshold %s)", prefix, where,
                 bm, out->stop ? "not " : "", keep, m, bt);
}

/* The automatic grace period for trials of length len: an eighth of it, rounded up
 * (at least 1). */
static int64_t auto_grace(int64_t len) {
    int64_t g = len / ES_AUTO_GRACE_DIVISOR + (len % ES_AUTO_GRACE_DIVISOR > 0);
    return g < 1 ? 1 : g;
}

static void asha_auto_decide(const es_config *c, const es_trial *trials, size_t n, size_t t,
                             es_decision *out) {
    if (c->max_step > 0) { /* the user gave the trials' length */
        asha_decide(c, auto_grace(c->max_step), c->max_step, "maxStep", 0, 0, "", trials, n,
                    t, out);
        return;
    }
    /* The trials' length: the last step of the longest completed trial (t excluded,
     * as in the median rule). */
    int64_t len = 0;
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        const es_trial *r = &trials[i];
        if (i == t || r->state != SP_COMPLETE || r->n == 0 || !r->curve) continue;
        if (!any || r->curve[r->n - 1].step > len) len = r->curve[r->n - 1].step;
        any = 1;
    }
    if (!any) {
        snprintf(out->reason, sizeof out->reason,
                 "no trial has completed yet (the rungs are set from the trials' length)");
        return;
    }
    if (len < 2) { /* no rung can lie below it */
        snprintf(out->reason, sizeof out->reason,
                 "no rung below the trials' length %lld", (long long)len);
        return;
    }
    asha_decide(c, auto_grace(len), len, "the trials' length", 0, 0, "", trials, n, t, out);
}

static void hyperband_decide(const es_config *c, const es_trial *trials, size_t n, size_t t,
                             es_decision *out) {
    int64_t eta = c->reduction_factor;
    int64_t grace = c->grace_period > 0 ? c->grace_period : auto_grace(c->max_step);
    /* B = floor(log_eta(max_step / grace)): the largest b with grace * eta^b <= max_step. */
    int64_t nb = 1, g = grace;
    while (g <= c->max_step / eta) g *= eta, nb++;
    int64_t b = bracket_of(trials[t].number, nb);
    g = grace;
    for (int64_t i = 0; i < b; i++) g *= eta;
    char prefix[96];
    snprintf(prefix, sizeof prefix, "bracket %lld of %lld (gracePeriod %lld): ", (long long)b,
             (long long)nb, (long long)g);
    asha_decide(c, g, c->max_step, "maxStep", b, nb, prefix, trials, n, t, out);
}

/* ---- Decisions ---- */

/* ---- Dominance (several metrics) ---- */

/* The last value (as a loss for its goal; NaN as +inf) of tr at or before step s:
 * 0 when it has none. */
static int loss_upto(const es_trial *tr, int maximize, int64_t s, double *loss) {
    size_t lo = 0, hi = tr->n; /* the first point past s */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tr->curve[mid].step > s) hi = mid;
        else lo = mid + 1;
    }
    if (lo == 0) return 0;
    double v = tr->curve[lo - 1].value;
    *loss = isnan(v) ? INFINITY : maximize ? -v : v;
    return 1;
}

void es_decide_dominance(const es_config *c, const int *maximize, size_t m,
                         const es_mtrial *trials, size_t n, size_t t, es_decision *out) {
    out->stop = 0;
    out->reason[0] = '\0';
    char err[200];
    if (!c || c->policy != ES_DOMINANCE || es_config_check(c, err, sizeof err) != 0) {
        snprintf(out->reason, sizeof out->reason, "invalid early-stopping configuration: %s",
                 c && c->policy != ES_DOMINANCE ? "the policy is not dominance" : err);
        return;
    }
    if (!trials || t >= n || m == 0 || m > ES_MAX_METRICS || !maximize) {
        snprintf(out->reason, sizeof out->reason, "no trial %zu among %zu (or no metrics)", t, n);
        return;
    }
    const es_mtrial *me = &trials[t];
    int64_t s = INT64_MIN;
    for (size_t k = 0; k < m; k++)
        if (me->metrics[k].n && me->metrics[k].curve[me->metrics[k].n - 1].step > s)
            s = me->metrics[k].curve[me->metrics[k].n - 1].step;
    if (s == INT64_MIN) {
        snprintf(out->reason, sizeof out->reason, "no measurement yet");
        return;
    }
    if (s < c->min_step) {
        snprintf(out->reason, sizeof out->reason, "step %lld is before minStep %lld",
                 (long long)s, (long long)c->min_step);
        return;
    }
    double mine[ES_MAX_METRICS], other[ES_MAX_METRICS];
    for (size_t k = 0; k < m; k++) {
        if (!loss_upto(&me->metrics[k], maximize[k], s, &mine[k])) {
            snprintf(out->reason, sizeof out->reason, "step %lld: no value of metric %zu yet",
                     (long long)s, k + 1);
            return;
        }
    }
    size_t completed = 0, dominating = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == t || trials[i].state != SP_COMPLETE || !trials[i].metrics) continue;
        size_t k = 0;
        while (k < m && loss_upto(&trials[i].metrics[k], maximize[k], s, &other[k])) k++;
        if (k < m) continue; /* no value of every metric at s */
        completed++;
        int no_worse = 1, better = 0;
        for (k = 0; k < m; k++) {
            if (other[k] > mine[k]) no_worse = 0;
            if (other[k] < mine[k]) better = 1;
        }
        dominating += no_worse && better;
    }
    size_t need = (size_t)es_min_trials(c);
    out->stop = completed >= need && dominating >= need;
    snprintf(out->reason, sizeof out->reason,
             "step %lld: dominated by %zu of %zu completed trial%s (minTrials %zu)",
             (long long)s, dominating, completed, completed == 1 ? "" : "s", need);
}

void es_decide(const es_config *c, const es_trial *trials, size_t n, size_t t,
               es_decision *out) {
    out->stop = 0;
    out->reason[0] = '\0';
    char err[200];
    if (es_config_check(c, err, sizeof err) != 0) {
        snprintf(out->reason, sizeof out->reason, "invalid early-stopping configuration: %s",
                 err);
        return;
    }
    if (c->policy == ES_NONE) {
        snprintf(out->reason, sizeof out->reason, "early stopping is off (policy none)");
        return;
    }
    if (!trials || t >= n) {
        snprintf(out->reason, sizeof out->reason, "no trial %zu among %zu", t, n);
        return;
    }
    if (trials[t].n == 0 || !trials[t].curve) {
        snprintf(out->reason, sizeof out->reason, "no measurement yet");
        return;
    }
    switch (c->policy) {
    case ES_MEDIAN:
        median_decide(c, trials, n, t, out);
        break;
    case ES_DOMINANCE: { /* one metric: each trial's curve is its one metric's */
        es_mtrial *mt = tn_xcalloc(n, sizeof *mt);
        for (size_t i = 0; i < n; i++)
            mt[i] = (es_mtrial){.number = trials[i].number, .state = trials[i].state,
                                .metrics = &trials[i]};
        es_decide_dominance(c, &c->maximize, 1, mt, n, t, out);
        free(mt);
        break;
    }
    case ES_ASHA:
        if (c->grace_period == 0)
            asha_auto_decide(c, trials, n, t, out);
        else
            asha_decide(c, c->grace_period, c->max_step, "maxStep", 0, 0, "", trials, n, t,
                        out);
        break;
    case ES_HYPERBAND:
        hyperband_decide(c, trials, n, t, out);
        break;
    }
}
