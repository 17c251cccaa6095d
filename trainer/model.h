/*
 * model.h — the trainer's models: a multi-layer perceptron and a small CNN, built as
 * a sequence of layers over one parameter buffer.
 *
 * One mdl_model owns everything a training step touches, each kind in one
 * allocation on the backend's device: parameters (P), gradients (P), the activations
 * of every layer for a batch of up to max_batch examples, the scratch of the
 * backward pass. Life cycle: mdl_new -> mdl_init_params -> (mdl_forward,
 * mdl_backward)* -> mdl_free. The optimiser (optim.h) updates params from grads.
 *
 *   mlp: [dense -> act -> (dropout)] per hidden layer -> dense (classes)
 *   cnn: [conv 3x3, pad 1 -> act -> maxpool 2x2] per filter count
 *        -> flatten -> [dense -> act -> (dropout)] per hidden layer -> dense (classes)
 *
 * Made of the backend's separate calls (a backend without conv blocks), the conv stack
 * keeps its activations as (C, B, H, W), so that each conv layer is one GEMM over the
 * whole batch, W (C_out, C_in*9) x col (C_in*9, B*H*W), rather than B small ones; the
 * flatten layer transposes to (B, C*H*W) for the dense head. Where the backend has
 * conv blocks (the CPU's and CUDA's: kernels.h, conv_block_forward), a conv, its
 * activation and its pooling are one call instead (on the CPU a few images at a time on
 * all cores; on a GPU im2col, one product and one kernel), which keeps only the pooled
 * activations (mdl_model.fused), image-major (B, C, H/2, W/2): flatten is no copy.
 *
 * Notation: B batch, D input features, K classes, P parameters. Dense weights are
 * (out, in) and conv weights (C_out, C_in*3*3), as in PyTorch, and initialised as
 * PyTorch does by default (uniform in +-1/sqrt(fan_in)), so recipes carry over.
 * Design: docs/trainer.md, "Models".
 */
#ifndef TN_MODEL_H
#define TN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"
#include "kernels/kernels.h"

enum mdl_kind { MDL_MLP = 1, MDL_CNN = 2 };
enum mdl_activation { MDL_RELU = 1, MDL_TANH = 2, MDL_GELU = 3 };
enum mdl_layer_type { MDL_DENSE = 1, MDL_CONV, MDL_ACT, MDL_POOL, MDL_DROPOUT, MDL_FLATTEN };

#define MDL_MAX_HIDDEN 8
#define MDL_MAX_CONV 4
/* Spare floats after the P gradients (see mdl_model.grads). */
#define MDL_GRAD_SPARE 4
#define MDL_MAX_LAYERS (3 * (MDL_MAX_HIDDEN + MDL_MAX_CONV) + 2)

/* Everything that determines the architecture. Stored in checkpoints and model
 * files, so it is plain int32 fields (written field by field by the caller). */
typedef struct mdl_config {
    int32_t kind;                   /* enum mdl_kind */
    int32_t activation;             /* enum mdl_activation */
    float dropout;                  /* drop probability after hidden dense layers, [0, 1) */
    int32_t in_c, in_h, in_w;       /* input shape; an MLP sees in_c*in_h*in_w features */
    int32_t classes;                /* K */
    int32_t nhidden;                /* number of hidden dense layers */
    int32_t hidden[MDL_MAX_HIDDEN]; /* their widths */
    int32_t nconv;                  /* cnn: number of conv blocks */
    int32_t filters[MDL_MAX_CONV];  /* cnn: output channels of each */
} mdl_config;

typedef struct mdl_layer {
    int type;          /* enum mdl_layer_type */
    int activation;    /* MDL_ACT: enum mdl_activation */
    int in_size;       /* features per example in */
    int out_size;      /* features per example out */
    int c_in, c_out;   /* conv: channels; pool, flatten: c_in = c_out = channels */
    int h, w;          /* conv, pool, flatten: input height and width */
    size_t w_off;      /* dense, conv: offset of the weights in params */
    size_t b_off;      /* dense, conv: offset of the bias in params */
    float *out;        /* (B, out_size) output of this layer; in the conv stack
                          (conv, act, pool) (C, B, H, W), but a fused block's pool out
                          (B, C, H/2, W/2), which the flatten after the last block
                          shares as its own out */
    float *col;        /* conv: (c_in*9, B*h*w) im2col of the batch; the backward
                          pass overwrites it with the gradient of the same shape */
    float *mask;       /* dropout: (B, out_size) 0 or 1/keep */
    int32_t *argmax;   /* pool, unfused: (B, out_size) */
    uint8_t *choice;   /* pool of a fused conv block: (B, C, H/2, W/2), the element of
                          each window taken (kernels.h: enum kn_pool_choice) */
    float *zmax;       /* pool of a fused conv block with gelu: (B, C, H/2, W/2) the
                          pre-activation at the element taken (its derivative needs it) */
} mdl_layer;

typedef struct mdl_model {
    mdl_config cfg;
    const kn_backend *k;
    int nlayers;
    mdl_layer layers[MDL_MAX_LAYERS];
    size_t nparams;      /* P */
    float *params;       /* (P) on the device */
    float *grads;        /* (P + MDL_GRAD_SPARE) on the device: the gradients, then
                            spare words the caller may use (the multi-worker strategy
                            all-reduces its control words with the gradients) */
    int fused;           /* cnn: each conv -> act -> pool runs as one call of the backend
                            (kn_backend.conv_block_*; the CPU's, CUDA's), which stores only
                            the pool layer's out, choice and zmax: the conv and act layers'
                            out and the conv layer's col are NULL, and flatten needs no
                            copy. 0: the calls one by one (a backend without conv blocks) */
    int max_batch;       /* the largest B forward/backward accept */
    int input_size;      /* D */
    float *input;        /* (B, D) the current batch, on the device */
    int32_t *labels;     /* (B) its labels, on the device */
    float *dlogits;      /* (B, K) gradient of the loss w.r.t. the logits */
    float *grad_a;       /* (B, max layer size) backward ping-pong buffers */
    float *grad_b;
    float *acts;         /* the one allocation behind every layer's out/col/mask */
    void *argmaxes;      /* the one allocation behind every pool layer's argmax (int32
                            each) or, where fused, choice (a byte each) */
    float *mask_host;    /* (B, max dropout size) dropout masks drawn on the host */
    float *stage_x;      /* (B, D) host staging of a gathered batch (device backends) */
    int32_t *stage_y;    /* (B) */
    /* Called by mdl_backward each time the gradients from offset lo to the end are
     * final (after each layer with parameters, the last layer first), so a caller can
     * start sending them while the backward pass goes on. NULL: not called. */
    void (*grads_ready)(void *ctx, size_t lo);
    void *grads_ready_ctx;
} mdl_model;

/* Checks a configuration: sizes positive and bounded, dropout in [0, 1), a CNN
 * needs an image input (in_h, in_w >= 2) that survives its pooling layers.
 * Returns 0 or TN_EINVAL with a message naming the problem and the flag to change. */
int mdl_config_check(const mdl_config *cfg, char *err, size_t errlen);

/* Checks a batch size against cfg (which passed mdl_config_check): a CNN's conv layers
 * multiply matrices of batch x height x width columns, whose sizes are ints, so that
 * product must be at most INT_MAX. Returns 0 or TN_EINVAL with a message naming
 * --batch_size and the largest it can be. */
int mdl_batch_check(const mdl_config *cfg, int batch, char *err, size_t errlen);

/* Parses a flag's list of widths, "256,256" (--hidden_units, --conv_filters), into
 * out[0..max): the count (0 for ""), or TN_EINVAL with a message naming --flag when an
 * entry is not an integer in [1, 2^20] or there are more than max. */
int mdl_parse_widths(const char *flag, const char *s, int32_t *out, int max, char *err,
                     size_t errlen);

/* Builds a model for batches of up to max_batch examples. cfg must pass
 * mdl_config_check, and max_batch mdl_batch_check. Parameters are zero until
 * mdl_init_params or mdl_set_params. The model is yours; free it with mdl_free. */
mdl_model *mdl_new(const mdl_config *cfg, const kn_backend *k, int max_batch);
void mdl_free(mdl_model *m);

/* Draws initial parameters from rng (PyTorch's default initialisation). */
void mdl_init_params(mdl_model *m, tn_rng *rng);

/* Copies the parameters to or from a host buffer of nparams floats. */
void mdl_get_params(const mdl_model *m, float *host);
void mdl_set_params(mdl_model *m, const float *host);

/* Runs the forward pass on b <= max_batch examples: x (b, D) and labels (b) on the
 * host are copied to the device first. With training != 0 dropout masks are drawn
 * from rng (which may be NULL otherwise). Computes the loss: the summed loss over
 * the batch in *loss_sum and the count of correct predictions in *correct, and,
 * when training, dlogits for mdl_backward. */
void mdl_forward(mdl_model *m, const float *x, const int32_t *labels, int b, int training,
                 tn_rng *rng, double *loss_sum, int64_t *correct);

/* mdl_forward on the batch made of rows idx[0..b) of a host data set x (N, D) with
 * labels y (N). The model gathers the rows itself: straight into its input buffer
 * when the backend's memory is host memory (one copy instead of two), else through a
 * host staging buffer and one upload. */
void mdl_forward_rows(mdl_model *m, const float *x, const int32_t *y, const int32_t *idx,
                      int b, int training, tn_rng *rng, double *loss_sum, int64_t *correct);

/* The training forward pass of a step that runs without the host (GPUs; see
 * kernels.h, "Steps without the host"): the batch is rows idx[*pos + i], i < b, of a
 * data set already on the device (X (N, D), Y (N)); the dropout masks are drawn there
 * from *seed (kn_backend.dropout_mask, salt: the layer's index); the loss is added to
 * acc (a non-finite batch loss is tagged with *tag) and dlogits written for
 * mdl_backward. Every pointer argument is device memory. Nothing is copied to or from
 * the host, so the calls it makes can be recorded in a graph. */
void mdl_forward_device(mdl_model *m, const float *X, const int32_t *Y, const int32_t *idx,
                        const int64_t *pos, int b, const uint64_t *seed, kn_loss_acc *acc,
                        const int64_t *tag);

/* Evaluation (no dropout, no dlogits) of rows [lo, hi) of a data set on the device
 * (X (N, D), Y (N)), in batches of max_batch: the losses and correct predictions are
 * added to acc (device memory; tag as above). */
void mdl_evaluate_device(mdl_model *m, const float *X, const int32_t *Y, int64_t lo, int64_t hi,
                         kn_loss_acc *acc, const int64_t *tag);

/* Backward pass of the last training forward pass over the same b examples:
 * writes the gradient of the mean loss into grads (overwriting them). */
void mdl_backward(mdl_model *m, int b);

/* Number of parameters a configuration has, without building the model. */
size_t mdl_param_count(const mdl_config *cfg);

#endif
