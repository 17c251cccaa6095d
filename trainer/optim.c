/*
 * optim.c — optimisers and schedules (see optim.h).
 */
#include "trainer/optim.h"

#include <math.h>
#include <stdlib.h>

#include "common/status.h"

int opt_config_check(const opt_config *c, char *err, size_t errlen) {
    if (c->kind < OPT_SGD || c->kind > OPT_ADAMW)
        return tn_error(err, errlen, TN_EINVAL, "unknown optimizer %d", c->kind);
    if (!(c->learning_rate > 0.0 && isfinite(c->learning_rate)))
        return tn_error(err, errlen, TN_EINVAL, "--learning_rate must be > 0, got %g",
                        c->learning_rate);
    if (!(c->momentum >= 0.0 && c->momentum < 1.0))
        return tn_error(err, errlen, TN_EINVAL, "--momentum must be in [0, 1), got %g",
                        c->momentum);
    if (!(c->weight_decay >= 0.0 && isfinite(c->weight_decay)))
        return tn_error(err, errlen, TN_EINVAL, "--weight_decay must be >= 0, got %g",
                        c->weight_decay);
    if (!(c->beta1 >= 0.0 && c->beta1 < 1.0) || !(c->beta2 >= 0.0 && c->beta2 < 1.0))
        return tn_error(err, errlen, TN_EINVAL, "--beta1 and --beta2 must be in [0, 1)");
    if (!(c->epsilon > 0.0))
        return tn_error(err, errlen, TN_EINVAL, "--epsilon must be > 0, got %g", c->epsilon);
    if (c->schedule < OPT_CONSTANT || c->schedule > OPT_STEP)
        return tn_error(err, errlen, TN_EINVAL, "unknown learning-rate schedule %d",
                        c->schedule);
    if (c->warmup_steps < 0)
        return tn_error(err, errlen, TN_EINVAL, "--warmup_steps must be >= 0");
    if (c->schedule == OPT_STEP && !(c->decay_rate > 0.0 && c->decay_rate <= 1.0))
        return tn_error(err, errlen, TN_EINVAL, "--lr_decay_rate must be in (0, 1], got %g",
                        c->decay_rate);
    if (c->decay_steps < 0)
        return tn_error(err, errlen, TN_EINVAL, "--lr_decay_steps must be >= 0");
    return 0;
}

double opt_learning_rate(const opt_config *c, int64_t step) {
    double lr = c->learning_rate;
    if (step < c->warmup_steps) return lr * (double)(step + 1) / (double)c->warmup_steps;
    int64_t after = step - c->warmup_steps;
    int64_t span = c->total_steps - c->warmup_steps;
    switch (c->schedule) {
    case OPT_COSINE:
        if (span <= 0) return lr;
        if (after >= span) return 0.0;
        return lr * 0.5 * (1.0 + cos(M_PI * (double)after / (double)span));
    case OPT_STEP: {
        /* Default: three equal stages over the training after warm-up. */
        int64_t every = c->decay_steps > 0 ? c->decay_steps : (span > 2 ? (span + 2) / 3 : 1);
        return lr * pow(c->decay_rate, (double)(after / every));
    }
    default: return lr;
    }
}

opt_state *opt_new(const opt_config *c, const kn_backend *k, size_t n) {
    opt_state *o = tn_xcalloc(1, sizeof *o);
    o->cfg = *c;
    o->k = k;
    o->n = n;
    o->m = k->alloc(n * sizeof(float));
    if (c->kind == OPT_ADAM || c->kind == OPT_ADAMW) o->v = k->alloc(n * sizeof(float));
    return o;
}

void opt_free(opt_state *o) {
    if (!o) return;
    o->k->free(o->m);
    o->k->free(o->v);
    free(o);
}

int opt_buffer_count(const opt_state *o) { return o->v ? 2 : 1; }

double opt_step(opt_state *o, float *params, const float *grads) {
    const opt_config *c = &o->cfg;
    double lr = opt_learning_rate(c, o->t);
    o->t++;
    switch (c->kind) {
    case OPT_SGD:
        o->k->sgd_momentum(params, grads, o->m, o->n, (float)lr, 0.0f, (float)c->weight_decay, 0);
        break;
    case OPT_MOMENTUM:
    case OPT_NESTEROV:
        o->k->sgd_momentum(params, grads, o->m, o->n, (float)lr, (float)c->momentum,
                           (float)c->weight_decay, c->kind == OPT_NESTEROV);
        break;
    default: {
        float bc1 = (float)(1.0 - pow(c->beta1, (double)o->t));
        float bc2 = (float)(1.0 - pow(c->beta2, (double)o->t));
        o->k->adam(params, grads, o->m, o->v, o->n, (float)lr, (float)c->beta1,
                   (float)c->beta2, (float)c->epsilon, (float)c->weight_decay,
                   c->kind == OPT_ADAMW, bc1, bc2);
        break;
    }
    }
    return lr;
}

void opt_scalars(const opt_state *o, float s[3]) {
    const opt_config *c = &o->cfg;
    s[0] = (float)opt_learning_rate(c, o->t);
    s[1] = s[2] = 1.0f;
    if (c->kind == OPT_ADAM || c->kind == OPT_ADAMW) {
        s[1] = (float)(1.0 - pow(c->beta1, (double)(o->t + 1)));
        s[2] = (float)(1.0 - pow(c->beta2, (double)(o->t + 1)));
    }
}

void opt_apply_device(const opt_state *o, float *params, const float *grads, const float *s) {
    const opt_config *c = &o->cfg;
    switch (c->kind) {
    case OPT_SGD:
        o->k->sgd_momentum_dev(params, grads, o->m, o->n, s, 0.0f, (float)c->weight_decay, 0);
        break;
    case OPT_MOMENTUM:
    case OPT_NESTEROV:
        o->k->sgd_momentum_dev(params, grads, o->m, o->n, s, (float)c->momentum,
                               (float)c->weight_decay, c->kind == OPT_NESTEROV);
        break;
    default:
        o->k->adam_dev(params, grads, o->m, o->v, o->n, s, (float)c->beta1, (float)c->beta2,
                       (float)c->epsilon, (float)c->weight_decay, c->kind == OPT_ADAMW);
        break;
    }
}
