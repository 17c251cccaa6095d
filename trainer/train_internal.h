/*
 * train_internal.h — what the files of one replica's training run share (train.c:
 * the synchronous loop, setup and checkpoints; evaluator.c: the evaluator and
 * --eval_only; ps_worker.c: a parameter-server worker's asynchronous loop): the run's
 * state, the checkpoint's sections, and the steps each of them takes from train.c.
 * Not an interface outside trainer/: train.h is.
 */
#ifndef TN_TRAIN_INTERNAL_H
#define TN_TRAIN_INTERNAL_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "common/hypertune.h"
#include "common/rng.h"
#include "kernels/nccl.h"
#include "trainer/bucket.h"
#include "trainer/checkpoint.h"
#include "trainer/collective.h"
#include "trainer/data.h"
#include "trainer/devices.h"
#include "trainer/model.h"
#include "trainer/optim.h"
#include "trainer/ps.h"
#include "trainer/train.h"

/* The sections of a checkpoint (docs/trainer.md, "What a checkpoint holds"). */
enum {
    TAG_CONFIG = 1, /* the model architecture: CONFIG_WORDS u32 */
    TAG_PARAMS = 2, /* (P) f32 */
    TAG_OPT_M = 3,  /* (P) f32 optimiser first buffer */
    TAG_OPT_V = 4,  /* (P) f32 optimiser second buffer (adam, adamw) */
    TAG_STATE = 5,  /* STATE_WORDS u64: counters, see run_state */
    TAG_RNG = 6,    /* 4 u64 */
    TAG_ORDER = 7,  /* (N) i32 the current epoch's data order */
    TAG_CLUSTER = 8 /* CLUSTER_WORDS u64: strategy, replicas, shard policy (cluster_encode) */
};

#define CONFIG_VERSION 1
#define CONFIG_WORDS (10 + MDL_MAX_HIDDEN + MDL_MAX_CONV)
#define STATE_WORDS 12
#define CLUSTER_WORDS 3

/* Everything the loop carries from step to step besides parameters and optimiser
 * buffers. */
typedef struct run_state {
    int64_t global_step;    /* steps done */
    int64_t epoch;          /* epochs completed */
    int64_t step_in_epoch;  /* steps done in the current epoch */
    int64_t ntrain;         /* training examples (must match on resume) */
    int64_t batch_size;     /* must match on resume */
    int64_t opt_kind;       /* must match on resume */
    uint64_t seed;          /* must match on resume */
    double period_loss;     /* summed training loss since the last report */
    int64_t period_correct; /* correct training predictions since the last report */
    int64_t period_count;   /* training examples since the last report */
    tn_rng rng;             /* data order and dropout */
} run_state;

/* The values of one step that a replayed graph reads, in device memory (one per
 * device), written by upload_small before the step. */
typedef struct dev_step_args {
    int64_t pos;      /* first position of the device's batch in its index list */
    uint64_t seed;    /* its dropout masks' seed */
    int64_t tag;      /* global_step + 1: names the step if its loss is not finite */
    float hyper[3];   /* the optimiser's scalars (opt_scalars) */
    float pad;
} dev_step_args;

/* A step recorded for one batch shape (a replica's examples b and the step's global
 * count, which sets the share's weight). */
typedef struct dev_graph {
    void *graph;      /* the recorded step, or NULL until its shape comes round again */
    int b;
    int64_t global;
    int runs;         /* times the step ran with this shape */
    uint64_t used;    /* for replacing the least recently used */
} dev_graph;

#define DEV_GRAPHS 4        /* shapes kept per device: full, short last, ... */
#define DEV_CHECK_EVERY 100 /* steps between reads of the loss sums (divergence) */

/* What one device keeps for the step without the host. */
typedef struct resident {
    float *X;              /* (N, D) the training set */
    int32_t *Y;            /* (N) */
    float *EX;             /* (M, D) the evaluation set (device 0 only) */
    int32_t *EY;           /* (M) */
    int32_t *index;        /* (N + B) the epoch's index list (the order, or this
                              replica's block), then its first B entries again */
    dev_step_args *args;   /* the step's values */
    kn_loss_acc *acc;      /* training sums since the last report (see dev_read) */
    kn_loss_acc *eval_acc; /* one evaluation's sums */
    int64_t *one;          /* a tag of 1, for evaluations */
    dev_graph graphs[DEV_GRAPHS];
    uint64_t clock;
    int no_graphs;         /* the backend records no graphs: run every step directly */
} resident;

typedef struct run {
    const tr_config *c;
    FILE *out;
    ds_dataset train, eval;
    mdl_model *model;
    opt_state *opt;
    run_state st;
    int32_t *order;       /* (N) the epoch's data order: the same on every replica */
    int32_t *local;       /* FILE sharding: (nlocal) this replica's block, in that order */
    int64_t nlocal;
    int32_t *idx;         /* (B) the rows of the current local batch */
    int64_t steps_per_epoch;
    int rank, world;      /* this replica's rank among the chief and workers; their count */
    int chief;            /* saves checkpoints and the model into --job-dir, reports */
    int shard;            /* enum tr_shard, resolved */
    cl_ring *ring;        /* the multi-worker ring, or NULL with one replica */
    int stop_vote;        /* with a ring: the last step's summed stop votes say stop (a
                             signal that comes after this replica's vote went out waits
                             for the next step's, so that all stop after the same step) */
    bk_reducer *reducer;  /* the ring's bucketed all-reduce overlapped with backward */
    ps_client *ps;        /* parameter server: the connections to the ps tasks */
    double stale_sum;     /* parameter server: staleness of the pushes since the last */
    int64_t stale_count;  /*   report, their count, and the largest seen in the run */
    int64_t stale_max;
    int ndev;             /* mirrored, central_storage: replicas (devices) in this process;
                             then world = ndev and device d takes rank d's share */
    dv_group group;
    mdl_model *dev[DV_MAX];  /* each device's replica; dev[0] is model */
    opt_state *dopt[DV_MAX]; /* mirrored: each device's optimiser; dopt[0] is opt */
    int32_t *didx[DV_MAX];   /* each device's batch rows */
    float *central;          /* central_storage: (P) the variables, on the host ... */
    float *central_grads;    /* ... and (P) the summed gradient; opt updates them */
    float *host_grads;    /* (P + MDL_GRAD_SPARE) staging when grads are not host memory */
    int dev_path;         /* the step runs without the host (see the header) */
    resident res[DV_MAX]; /* dev_path: each device's data, index list, sums, graphs */
    kc_comm *nccl;        /* multi-worker on GPUs: the NCCL communicator, or NULL (ring) */
    char *ckpt_dir;       /* JOB_DIR/checkpoints, or NULL */
    ht_writer *metrics;   /* the chief's metric reports, or NULL */
    double period_seconds; /* training time since the last report */
    double start_time;
} run;

/* ---- train.c's steps that the evaluator and the parameter-server loop take ---- */

/* Seconds on clock. */
double tr__now_seconds(clockid_t clock);
/* Decodes a TAG_CONFIG section into *c: 0, or an error naming what is wrong. */
int tr__config_decode(const void *data, uint64_t size, mdl_config *c, char *err,
                      size_t errlen);
/* Reads a section of exactly `size` bytes into dst. */
int tr__take_section(const ckpt_file *f, uint32_t tag, void *dst, uint64_t size,
                     const char *path, char *err, size_t errlen);
/* Mean loss and accuracy of the model on a whole data set. */
void tr__evaluate(mdl_model *m, const ds_dataset *ds, double *loss, double *accuracy);
/* The backends of n replicas in this process, into ks[0..n): CUDA devices first,
 * first + 1, ... (modulo the GPUs visible) with --device=gpu, else the CPU. 0, or
 * TN_EINVAL with the reason (re-running cannot help). */
int tr__open_backends(const tr_config *c, int first, int n, const kn_backend **ks,
                      FILE *out, char *err, size_t errlen);
/* Draws the epoch's data order into r->order. */
void tr__shuffle(run *r);
/* Block i of `parts` near-equal blocks of n items: [lo, hi). */
void tr__block(int64_t n, int parts, int i, int64_t *lo, int64_t *hi);
int64_t tr__clamp64(int64_t v, int64_t lo, int64_t hi);
/* The dropout stream of this step and replica `rank`. */
void tr__dropout_stream(const run *r, int rank, tn_rng *drop);
/* TR_DIVERGED, naming the first, where a parameter of the model is not finite (an
 * update went past what a float holds); else 0. */
int tr__check_params(run *r, char *err, size_t errlen);
/* Saves a checkpoint into r->ckpt_dir (none without one). */
int tr__save_checkpoint(run *r, char *err, size_t errlen);
/* Restores the run from the newest checkpoint that verifies and fits the run: 0
 * (restored, or a fresh start when there is none) or a negative code. */
int tr__restore(run *r, char *err, size_t errlen);
/* Evaluates and reports the metrics (the chief), and prints the progress line. */
int tr__report(run *r, char *err, size_t errlen);

/* ---- evaluator.c ---- */

/* --eval_only: evaluates --model_file (or the job dir's model) once. */
int tr__eval_only(const tr_config *c, FILE *out, char *err, size_t errlen);

/* ---- ps_worker.c ---- */

/* The examples replica `rank` trains on per epoch, and the updates of the whole run. */
int64_t tr__ps_share(const run *r, int rank);
int64_t tr__ps_total_steps(const run *r);
/* Connects to the ps tasks and agrees on the variables (the chief initialises them). */
int tr__ps_setup(run *r, uint64_t hash, int64_t total_steps, char *err, size_t errlen);
/* The asynchronous loop: pull, compute, push, until the run's updates are done. */
int tr__ps_loop(run *r, char *err, size_t errlen);

#endif
