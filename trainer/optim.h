/*
 * optim.h — optimisers and learning-rate schedules.
 *
 * SGD, momentum, Nesterov momentum, Adam (L2 weight decay) and AdamW (decoupled
 * weight decay), with the learning rate following a warm-up then a constant, cosine
 * or step schedule. The update rules are written out in kernels.h; the schedule is a
 * pure function of the step (opt_learning_rate). The state (moment buffers, step
 * count) lives on the backend's device and is saved in checkpoints.
 * Design: docs/trainer.md, "Optimisers".
 */
#ifndef TN_OPTIM_H
#define TN_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

enum opt_kind { OPT_SGD = 1, OPT_MOMENTUM, OPT_NESTEROV, OPT_ADAM, OPT_ADAMW };
enum opt_schedule { OPT_CONSTANT = 1, OPT_COSINE, OPT_STEP };

typedef struct opt_config {
    int kind;               /* enum opt_kind */
    double learning_rate;   /* peak learning rate */
    double momentum;        /* momentum and nesterov: mu */
    double weight_decay;    /* L2 (sgd, momentum, nesterov, adam) or decoupled (adamw) */
    double beta1, beta2;    /* adam, adamw */
    double epsilon;         /* adam, adamw */
    int schedule;           /* enum opt_schedule */
    int64_t warmup_steps;   /* linear warm-up from lr/warmup to lr over these steps */
    int64_t total_steps;    /* length of training, for cosine and step */
    double decay_rate;      /* step: multiply by this ... */
    int64_t decay_steps;    /* ... every this many steps after warm-up */
} opt_config;

/* Checks ranges (learning rate > 0, momentum in [0, 1), betas in [0, 1), ...);
 * returns 0 or TN_EINVAL naming the flag. */
int opt_config_check(const opt_config *c, char *err, size_t errlen);

/* The learning rate of update number step (0 = the first update). */
double opt_learning_rate(const opt_config *c, int64_t step);

typedef struct opt_state {
    opt_config cfg;
    const kn_backend *k;
    size_t n;       /* number of parameters */
    float *m;       /* (n) momentum / first moment, on the device */
    float *v;       /* (n) second moment (adam, adamw), on the device; NULL otherwise */
    int64_t t;      /* updates applied so far */
} opt_state;

/* State for n parameters, moments zero. Yours; free with opt_free. */
opt_state *opt_new(const opt_config *c, const kn_backend *k, size_t n);
void opt_free(opt_state *o);

/* Applies one update to params from grads (both n floats on the device) with the
 * learning rate of step o->t, then increments o->t. Returns the rate used. */
double opt_step(opt_state *o, float *params, const float *grads);

/* For a step that runs without the host (train.c on a GPU): the scalars of update
 * number o->t (the next one), as opt_step computes them: s[0] the learning rate, s[1]
 * and s[2] Adam's bias corrections 1 - beta1^(t+1) and 1 - beta2^(t+1) (1 for the other
 * optimisers). The caller uploads them to device memory for opt_apply_device. */
void opt_scalars(const opt_state *o, float s[3]);

/* Queues the update of params from grads with the scalars read from device memory s
 * (three floats, as opt_scalars wrote them): the same arithmetic as opt_step. It does
 * not advance o->t: the caller counts each update (o->t++), since a step recorded in a
 * graph replays the update without calling this again. */
void opt_apply_device(const opt_state *o, float *params, const float *grads, const float *s);

/* Number of state buffers of n floats (1 or 2): what a checkpoint must hold. */
int opt_buffer_count(const opt_state *o);

#endif
