/*
 * model.c — layers, forward and backward passes of the trainer's models (model.h).
 *
 * Layers run in sequence; layer l reads the output of layer l-1 (layer 0 reads the
 * input batch, (B, C, H, W)). The conv stack works in (C, B, H, W): a conv layer
 * im2cols every image into one (C_in*9, B*H*W) matrix and multiplies it once. The
 * backward pass walks back with the gradient in one of two ping-pong buffers;
 * activation and dropout layers work in place on it. The first layer's input
 * gradient is never computed (nothing needs it). With a backend's conv blocks
 * (m->fused), each conv -> act -> pool triple is one forward and one backward call,
 * made at the conv layer going forward and at the pool layer going back, and the
 * blocks keep their outputs image-major, (B, C, H/2, W/2), so the flatten after the
 * last one is no copy. The (C, B, H, W) stack and flatten's transpose are the
 * separate calls' (a backend without conv blocks).
 */
#include "trainer/model.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"

#define KSIZE 3 /* conv kernels are 3x3 */
#define KPAD 1  /* with zero padding 1: same height and width out */

_Static_assert((int)MDL_RELU == (int)KN_RELU && (int)MDL_TANH == (int)KN_TANH &&
                   (int)MDL_GELU == (int)KN_GELU,
               "the conv blocks take the model's activation codes");

int mdl_config_check(const mdl_config *cfg, char *err, size_t errlen) {
    if (cfg->kind != MDL_MLP && cfg->kind != MDL_CNN)
        return tn_error(err, errlen, TN_EINVAL, "unknown model kind %d", cfg->kind);
    if (cfg->activation < MDL_RELU || cfg->activation > MDL_GELU)
        return tn_error(err, errlen, TN_EINVAL, "unknown activation %d", cfg->activation);
    if (!(cfg->dropout >= 0.0f && cfg->dropout < 1.0f))
        return tn_error(err, errlen, TN_EINVAL, "--dropout must be in [0, 1), got %g",
                        (double)cfg->dropout);
    if (cfg->in_c < 1 || cfg->in_h < 1 || cfg->in_w < 1 ||
        (int64_t)cfg->in_c * cfg->in_h * cfg->in_w > (1 << 24))
        return tn_error(err, errlen, TN_EINVAL, "input shape %dx%dx%d is empty or too large",
                        cfg->in_c, cfg->in_h, cfg->in_w);
    if (cfg->classes < 2 || cfg->classes > 100000)
        return tn_error(err, errlen, TN_EINVAL, "%d classes: need between 2 and 100000",
                        cfg->classes);
    if (cfg->nhidden < 0 || cfg->nhidden > MDL_MAX_HIDDEN)
        return tn_error(err, errlen, TN_EINVAL, "--hidden_units: at most %d layers",
                        MDL_MAX_HIDDEN);
    for (int i = 0; i < cfg->nhidden; i++)
        if (cfg->hidden[i] < 1 || cfg->hidden[i] > 65536)
            return tn_error(err, errlen, TN_EINVAL,
                            "--hidden_units: layer %d has %d units; need 1 to 65536", i + 1,
                            cfg->hidden[i]);
    if (cfg->kind == MDL_CNN) {
        if (cfg->nconv < 1 || cfg->nconv > MDL_MAX_CONV)
            return tn_error(err, errlen, TN_EINVAL, "--conv_filters: need 1 to %d conv layers",
                            MDL_MAX_CONV);
        int h = cfg->in_h, w = cfg->in_w;
        for (int i = 0; i < cfg->nconv; i++) {
            if (cfg->filters[i] < 1 || cfg->filters[i] > 4096)
                return tn_error(err, errlen, TN_EINVAL,
                                "--conv_filters: layer %d has %d filters; need 1 to 4096", i + 1,
                                cfg->filters[i]);
            if (h < 2 || w < 2)
                return tn_error(err, errlen, TN_EINVAL,
                                "--conv_filters: the %dx%d input is pooled down to %dx%d before "
                                "conv layer %d; use fewer conv layers",
                                cfg->in_h, cfg->in_w, h, w, i + 1);
            if ((int64_t)cfg->filters[i] * h * w > INT_MAX) /* an image's output, in an int */
                return tn_error(err, errlen, TN_EINVAL,
                                "--conv_filters: conv layer %d makes %d x %d x %d = %lld values "
                                "an image, more than %d; use fewer filters or smaller images",
                                i + 1, cfg->filters[i], h, w,
                                (long long)cfg->filters[i] * h * w, INT_MAX);
            h /= 2;
            w /= 2;
        }
    } else if (cfg->nconv != 0) {
        return tn_error(err, errlen, TN_EINVAL, "--conv_filters applies to --model=cnn only");
    }
    return 0;
}

int mdl_batch_check(const mdl_config *cfg, int batch, char *err, size_t errlen) {
    int64_t plane = (int64_t)cfg->in_h * cfg->in_w; /* the first conv layer's, the largest */
    if (cfg->kind == MDL_CNN && (int64_t)batch * plane > INT_MAX)
        return tn_error(err, errlen, TN_EINVAL,
                        "--batch_size %d is too large for %dx%d images: a conv layer's "
                        "products have batch x height x width columns, at most %d; lower "
                        "--batch_size to %lld or less",
                        batch, cfg->in_h, cfg->in_w, INT_MAX, (long long)(INT_MAX / plane));
    return 0;
}

/* Appends the layers of cfg to m (or only counts parameters when m is NULL);
 * returns the parameter count. */
static size_t plan_layers(const mdl_config *cfg, mdl_model *m) {
    size_t p = 0;
    int n = 0;
    int c = cfg->in_c, h = cfg->in_h, w = cfg->in_w;
    int size = c * h * w;
    mdl_layer tmp[MDL_MAX_LAYERS];
    mdl_layer *L = m ? m->layers : tmp;

#define ADD(...) (L[n] = (mdl_layer){__VA_ARGS__}, n++)
    if (cfg->kind == MDL_CNN) {
        for (int i = 0; i < cfg->nconv; i++) {
            int f = cfg->filters[i];
            ADD(.type = MDL_CONV, .in_size = size, .out_size = f * h * w, .c_in = c, .c_out = f,
                .h = h, .w = w, .w_off = p, .b_off = p + (size_t)f * c * KSIZE * KSIZE);
            p += (size_t)f * c * KSIZE * KSIZE + f;
            c = f;
            size = c * h * w;
            ADD(.type = MDL_ACT, .activation = cfg->activation, .in_size = size, .out_size = size);
            ADD(.type = MDL_POOL, .in_size = size, .out_size = c * (h / 2) * (w / 2), .c_in = c,
                .c_out = c, .h = h, .w = w);
            h /= 2;
            w /= 2;
            size = c * h * w;
        }
        ADD(.type = MDL_FLATTEN, .in_size = size, .out_size = size, .c_in = c, .c_out = c,
            .h = h, .w = w);
    }
    for (int i = 0; i <= cfg->nhidden; i++) {
        int out = i < cfg->nhidden ? cfg->hidden[i] : cfg->classes;
        ADD(.type = MDL_DENSE, .in_size = size, .out_size = out, .w_off = p,
            .b_off = p + (size_t)out * size);
        p += (size_t)out * size + out;
        size = out;
        if (i < cfg->nhidden) {
            ADD(.type = MDL_ACT, .activation = cfg->activation, .in_size = size, .out_size = size);
            if (cfg->dropout > 0.0f) ADD(.type = MDL_DROPOUT, .in_size = size, .out_size = size);
        }
    }
#undef ADD
    assert(n <= MDL_MAX_LAYERS);
    if (m) m->nlayers = n;
    return p;
}

size_t mdl_param_count(const mdl_config *cfg) { return plan_layers(cfg, NULL); }

int mdl_parse_widths(const char *flag, const char *s, int32_t *out, int max, char *err,
                     size_t errlen) {
    int n = 0;
    const char *p = s;
    if (!*p) return 0;
    for (;;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 1 << 20 || (*end && *end != ','))
            return tn_error(err, errlen, TN_EINVAL,
                            "--%s expects positive integers separated by commas, got '%s'",
                            flag, s);
        if (n == max)
            return tn_error(err, errlen, TN_EINVAL, "--%s: at most %d values", flag, max);
        out[n++] = (int32_t)v;
        if (!*end) return n;
        p = end + 1;
    }
}

/* Whether layer l's out is stored: not for a fused conv block's conv and activation, nor
 * for the flatten after the last block, whose y is already image-major (kernels.h,
 * conv_block_forward): there flatten's out is the block's. */
static int keeps_out(const mdl_model *m, int l) {
    const mdl_layer *L = &m->layers[l];
    int in_block = L->type == MDL_CONV ||
                   (L->type == MDL_ACT && l + 1 < m->nlayers && m->layers[l + 1].type == MDL_POOL);
    return !(m->fused && (in_block || L->type == MDL_FLATTEN));
}

mdl_model *mdl_new(const mdl_config *cfg, const kn_backend *k, int max_batch) {
    assert(mdl_config_check(cfg, NULL, 0) == 0 && max_batch > 0 &&
           mdl_batch_check(cfg, max_batch, NULL, 0) == 0);
    mdl_model *m = tn_xcalloc(1, sizeof *m);
    m->cfg = *cfg;
    m->k = k;
    m->max_batch = max_batch;
    m->input_size = cfg->in_c * cfg->in_h * cfg->in_w;
    m->nparams = plan_layers(cfg, m);
    m->fused = cfg->kind == MDL_CNN && k->conv_block_forward && k->conv_block_backward;
    m->params = k->alloc(m->nparams * sizeof(float));
    m->grads = k->alloc((m->nparams + MDL_GRAD_SPARE) * sizeof(float));

    /* Size the activation arena, then carve it. A fused conv block keeps only its pool
     * layer's out, choice and (gelu) zmax. */
    size_t B = (size_t)max_batch, acts = 0, argmaxes = 0, widest = (size_t)m->input_size,
           mask = 0;
    for (int l = 0; l < m->nlayers; l++) {
        mdl_layer *L = &m->layers[l];
        int stored = keeps_out(m, l);
        if (stored) acts += B * L->out_size;
        if (L->type == MDL_CONV && !m->fused) acts += B * L->c_in * KSIZE * KSIZE * L->h * L->w;
        if (L->type == MDL_POOL && m->fused && cfg->activation == MDL_GELU)
            acts += B * L->out_size;
        if (L->type == MDL_DROPOUT) {
            acts += B * L->out_size;
            if ((size_t)L->out_size > mask) mask = L->out_size;
        }
        if (L->type == MDL_POOL) argmaxes += B * L->out_size;
        if ((size_t)L->out_size > widest) widest = L->out_size;
    }
    m->acts = k->alloc(acts * sizeof(float));
    size_t per = m->fused ? sizeof(uint8_t) : sizeof(int32_t); /* a choice or an arg-max */
    m->argmaxes = k->alloc((argmaxes ? argmaxes : 1) * per);
    float *a = m->acts;
    char *g = m->argmaxes;
    for (int l = 0; l < m->nlayers; l++) {
        mdl_layer *L = &m->layers[l];
        int stored = keeps_out(m, l);
        if (stored) {
            L->out = a;
            a += B * L->out_size;
        } else if (L->type == MDL_FLATTEN) {
            L->out = m->layers[l - 1].out;
        }
        if (L->type == MDL_CONV && !m->fused) {
            L->col = a;
            a += B * L->c_in * KSIZE * KSIZE * L->h * L->w;
        }
        if (L->type == MDL_POOL && m->fused && cfg->activation == MDL_GELU) {
            L->zmax = a;
            a += B * L->out_size;
        }
        if (L->type == MDL_DROPOUT) {
            L->mask = a;
            a += B * L->out_size;
        }
        if (L->type == MDL_POOL) {
            if (m->fused)
                L->choice = (uint8_t *)g;
            else
                L->argmax = (int32_t *)g;
            g += B * L->out_size * per;
        }
    }
    m->input = k->alloc(B * m->input_size * sizeof(float));
    m->labels = k->alloc(B * sizeof(int32_t));
    m->dlogits = k->alloc(B * cfg->classes * sizeof(float));
    m->grad_a = k->alloc(B * widest * sizeof(float));
    m->grad_b = k->alloc(B * widest * sizeof(float));
    m->mask_host = mask ? tn_xmalloc(B * mask * sizeof(float)) : NULL;
    return m;
}

void mdl_free(mdl_model *m) {
    if (!m) return;
    const kn_backend *k = m->k;
    k->free(m->params);
    k->free(m->grads);
    k->free(m->acts);
    k->free(m->argmaxes);
    k->free(m->input);
    k->free(m->labels);
    k->free(m->dlogits);
    k->free(m->grad_a);
    k->free(m->grad_b);
    free(m->mask_host);
    free(m->stage_x);
    free(m->stage_y);
    free(m);
}

void mdl_init_params(mdl_model *m, tn_rng *rng) {
    float *host = tn_xcalloc(m->nparams, sizeof(float));
    for (int l = 0; l < m->nlayers; l++) {
        const mdl_layer *L = &m->layers[l];
        size_t fan_in, nw, nb;
        if (L->type == MDL_DENSE) {
            fan_in = L->in_size;
            nw = (size_t)L->out_size * L->in_size;
            nb = L->out_size;
        } else if (L->type == MDL_CONV) {
            fan_in = (size_t)L->c_in * KSIZE * KSIZE;
            nw = (size_t)L->c_out * fan_in;
            nb = L->c_out;
        } else {
            continue;
        }
        float bound = 1.0f / sqrtf((float)fan_in);
        for (size_t i = 0; i < nw; i++)
            host[L->w_off + i] = (2.0f * tn_rng_uniformf(rng) - 1.0f) * bound;
        for (size_t i = 0; i < nb; i++)
            host[L->b_off + i] = (2.0f * tn_rng_uniformf(rng) - 1.0f) * bound;
    }
    mdl_set_params(m, host);
    free(host);
}

void mdl_get_params(const mdl_model *m, float *host) {
    m->k->download(host, m->params, m->nparams * sizeof(float));
}

void mdl_set_params(mdl_model *m, const float *host) {
    m->k->upload(m->params, host, m->nparams * sizeof(float));
}

static void act_forward(const kn_backend *k, int act, float *y, const float *x, size_t n) {
    switch (act) {
    case MDL_RELU: k->relu_forward(y, x, n); break;
    case MDL_TANH: k->tanh_forward(y, x, n); break;
    default: k->gelu_forward(y, x, n); break;
    }
}

static void act_backward(const kn_backend *k, int act, float *dx, const float *dy,
                         const float *x, const float *y, size_t n) {
    switch (act) {
    case MDL_RELU: k->relu_backward(dx, dy, x, y, n); break;
    case MDL_TANH: k->tanh_backward(dx, dy, x, y, n); break;
    default: k->gelu_backward(dx, dy, x, y, n); break;
    }
}

/* The forward pass over the b examples already in m->input and m->labels, up to the
 * logits, which it returns. Training draws the dropout masks on the host from rng, or
 * on the device from *seed when seed is not NULL (mdl_forward_device). */
static const float *forward_layers(mdl_model *m, int b, int training, tn_rng *rng,
                                   const uint64_t *seed) {
    const kn_backend *k = m->k;
    const float *in = m->input;
    for (int l = 0; l < m->nlayers; l++) {
        mdl_layer *L = &m->layers[l];
        size_t n = (size_t)b * L->out_size;
        const float *W = m->params + L->w_off, *bias = m->params + L->b_off;
        switch (L->type) {
        case MDL_DENSE: /* out (b, out) = in (b, in) W^T + bias */
            k->broadcast_rows(L->out, bias, b, L->out_size);
            k->gemm(0, 1, b, L->out_size, L->in_size, 1.0f, in, L->in_size, W, L->in_size, 1.0f,
                    L->out, L->out_size);
            break;
        case MDL_CONV: { /* out (c_out, b*hw) = W (c_out, c_in*9) col (c_in*9, b*hw) */
            int hw = L->h * L->w, ck = L->c_in * KSIZE * KSIZE, ld = b * hw;
            /* The batch input is (b, c_in, h, w), as is a conv block's y; after the
             * separate calls' pooling, later conv layers read (c_in, b, h, w). */
            int image_major = l == 0 || m->fused;
            size_t cstride = image_major ? (size_t)hw : (size_t)ld;
            size_t istride = image_major ? (size_t)L->in_size : (size_t)hw;
            if (m->fused) { /* conv, act, pool in one: the pool layer's out (b, c_out, ...) */
                mdl_layer *P = &m->layers[l + 2];
                assert(m->layers[l + 1].type == MDL_ACT && P->type == MDL_POOL);
                k->conv_block_forward(P->out, P->choice, P->zmax, in, b, istride, cstride,
                                      L->c_in, L->h, L->w, W, bias, L->c_out,
                                      m->layers[l + 1].activation);
                l += 2;
                L = P;
                break;
            }
            k->im2col_batch(L->col, in, b, istride, cstride, L->c_in, L->h, L->w, KSIZE, KSIZE,
                            KPAD);
            k->gemm(0, 0, L->c_out, ld, ck, 1.0f, W, ck, L->col, ld, 0.0f, L->out, ld);
            k->add_channel_bias(L->out, bias, 1, L->c_out, ld);
            break;
        }
        case MDL_FLATTEN: /* (c, b, hw) -> (b, c*hw); a conv block's y is that already */
            if (!m->fused) k->swap01(L->out, in, L->c_in, b, L->h * L->w);
            break;
        case MDL_ACT: act_forward(k, L->activation, L->out, in, n); break;
        case MDL_POOL:
            k->maxpool2_forward(L->out, L->argmax, in, b * L->c_in, L->h, L->w);
            break;
        case MDL_DROPOUT:
            if (training && seed) {
                k->dropout_mask(L->mask, n, 1.0f - m->cfg.dropout, seed, (uint64_t)l);
                k->mul(L->out, in, L->mask, n);
            } else if (training) {
                float keep = 1.0f - m->cfg.dropout, scale = 1.0f / keep;
                for (size_t i = 0; i < n; i++)
                    m->mask_host[i] = tn_rng_uniformf(rng) < keep ? scale : 0.0f;
                k->upload(L->mask, m->mask_host, n * sizeof(float));
                k->mul(L->out, in, L->mask, n);
            } else {
                k->copy(L->out, in, n * sizeof(float)); /* identity at evaluation */
            }
            break;
        }
        in = L->out;
    }
    return in;
}

/* The forward pass with the loss summed on the host. */
static void forward(mdl_model *m, int b, int training, tn_rng *rng, double *loss_sum,
                    int64_t *correct) {
    const float *logits = forward_layers(m, b, training, rng, NULL);
    m->k->softmax_xent(logits, m->labels, b, m->cfg.classes, training ? m->dlogits : NULL,
                       loss_sum, correct);
}

void mdl_forward(mdl_model *m, const float *x, const int32_t *labels, int b, int training,
                 tn_rng *rng, double *loss_sum, int64_t *correct) {
    assert(b >= 1 && b <= m->max_batch);
    m->k->upload(m->input, x, (size_t)b * m->input_size * sizeof(float));
    m->k->upload(m->labels, labels, (size_t)b * sizeof(int32_t));
    forward(m, b, training, rng, loss_sum, correct);
}

void mdl_forward_rows(mdl_model *m, const float *x, const int32_t *y, const int32_t *idx,
                      int b, int training, tn_rng *rng, double *loss_sum, int64_t *correct) {
    assert(b >= 1 && b <= m->max_batch);
    size_t d = (size_t)m->input_size;
    int direct = m->k->host_memory;
    if (!direct && !m->stage_x) {
        m->stage_x = tn_xmalloc((size_t)m->max_batch * d * sizeof(float));
        m->stage_y = tn_xmalloc((size_t)m->max_batch * sizeof(int32_t));
    }
    float *xs = direct ? m->input : m->stage_x;
    int32_t *ys = direct ? m->labels : m->stage_y;
    kn_cpu_gather(xs, ys, x, y, d, idx, b);
    if (!direct) {
        m->k->upload(m->input, xs, (size_t)b * d * sizeof(float));
        m->k->upload(m->labels, ys, (size_t)b * sizeof(int32_t));
    }
    forward(m, b, training, rng, loss_sum, correct);
}

void mdl_forward_device(mdl_model *m, const float *X, const int32_t *Y, const int32_t *idx,
                        const int64_t *pos, int b, const uint64_t *seed, kn_loss_acc *acc,
                        const int64_t *tag) {
    assert(b >= 1 && b <= m->max_batch);
    m->k->gather_rows(m->input, m->labels, X, Y, m->input_size, idx, pos, b);
    const float *logits = forward_layers(m, b, 1, NULL, seed);
    m->k->softmax_xent_acc(logits, m->labels, b, m->cfg.classes, m->dlogits, acc, tag);
}

void mdl_evaluate_device(mdl_model *m, const float *X, const int32_t *Y, int64_t lo, int64_t hi,
                         kn_loss_acc *acc, const int64_t *tag) {
    const kn_backend *k = m->k;
    size_t d = (size_t)m->input_size;
    for (int64_t i = lo; i < hi; i += m->max_batch) {
        int b = (int)(hi - i < m->max_batch ? hi - i : m->max_batch);
        k->copy(m->input, X + (size_t)i * d, (size_t)b * d * sizeof(float));
        k->copy(m->labels, Y + i, (size_t)b * sizeof(int32_t));
        const float *logits = forward_layers(m, b, 0, NULL, NULL);
        k->softmax_xent_acc(logits, m->labels, b, m->cfg.classes, NULL, acc, tag);
    }
}

void mdl_backward(mdl_model *m, int b) {
    const kn_backend *k = m->k;
    float *g = m->dlogits; /* gradient w.r.t. the current layer's output */
    for (int l = m->nlayers - 1; l >= 0; l--) {
        mdl_layer *L = &m->layers[l];
        const float *in = l > 0 ? m->layers[l - 1].out : m->input;
        float *dx = g == m->grad_a ? m->grad_b : m->grad_a;
        size_t n = (size_t)b * L->out_size;
        const float *W = m->params + L->w_off;
        float *dW = m->grads + L->w_off, *db = m->grads + L->b_off;
        switch (L->type) {
        case MDL_DENSE:
            /* dW (out, in) = g^T (out, b) in (b, in); db = column sums of g. */
            k->gemm(1, 0, L->out_size, L->in_size, b, 1.0f, g, L->out_size, in, L->in_size,
                    0.0f, dW, L->in_size);
            k->fill(db, 0.0f, L->out_size);
            k->sum_rows(db, g, b, L->out_size);
            if (m->grads_ready) m->grads_ready(m->grads_ready_ctx, L->w_off);
            if (l > 0) { /* dx (b, in) = g (b, out) W (out, in) */
                k->gemm(0, 0, b, L->in_size, L->out_size, 1.0f, g, L->out_size, W, L->in_size,
                        0.0f, dx, L->in_size);
                g = dx;
            }
            break;
        case MDL_CONV: {
            int hw = L->h * L->w, ck = L->c_in * KSIZE * KSIZE, ld = b * hw;
            /* dW (c_out, ck) = g (c_out, b*hw) col^T (b*hw, ck); db = row sums of g. */
            k->gemm(0, 1, L->c_out, ck, ld, 1.0f, g, ld, L->col, ld, 0.0f, dW, ck);
            k->fill(db, 0.0f, L->c_out);
            k->sum_channels(db, g, 1, L->c_out, ld);
            if (m->grads_ready) m->grads_ready(m->grads_ready_ctx, L->w_off);
            if (l > 0) { /* dcol (ck, b*hw) = W^T g, into col; dx (c_in, b, h, w) */
                k->gemm(1, 0, ck, ld, L->c_out, 1.0f, W, ck, g, ld, 0.0f, L->col, ld);
                k->fill(dx, 0.0f, (size_t)b * L->in_size);
                k->col2im_batch(dx, b, (size_t)hw, (size_t)ld, L->col, L->c_in, L->h, L->w,
                                KSIZE, KSIZE, KPAD);
                g = dx;
            }
            break;
        }
        case MDL_FLATTEN: /* (b, c*hw) -> (c, b, hw); a conv block's dy is (b, c*hw) */
            if (m->fused) break;
            k->swap01(dx, g, b, L->c_in, L->h * L->w);
            g = dx;
            break;
        case MDL_ACT: /* in place: g = g * f'(in) */
            act_backward(k, L->activation, g, g, in, L->out, n);
            break;
        case MDL_POOL:
            if (m->fused) { /* the whole conv block: g is the gradient w.r.t. its pool out */
                const mdl_layer *A = &m->layers[l - 1], *C = &m->layers[l - 2];
                assert(A->type == MDL_ACT && C->type == MDL_CONV);
                int first = l - 2 == 0;
                const float *cin = first ? m->input : m->layers[l - 3].out;
                /* x image-major: the batch input or the block before's y */
                k->conv_block_backward(m->grads + C->w_off, m->grads + C->b_off,
                                       first ? NULL : dx, g, L->choice, L->out, L->zmax, cin,
                                       b, (size_t)C->in_size, (size_t)C->h * C->w, C->c_in,
                                       C->h, C->w, m->params + C->w_off, C->c_out,
                                       A->activation);
                if (m->grads_ready) m->grads_ready(m->grads_ready_ctx, C->w_off);
                g = dx;
                l -= 2;
                break;
            }
            k->maxpool2_backward(dx, g, L->argmax, b * L->c_in, L->h, L->w);
            g = dx;
            break;
        case MDL_DROPOUT: k->mul(g, g, L->mask, n); break;
        }
    }
}
