/*
 * train.h — one replica's training run: load data, build or restore the model,
 * train for the asked number of epochs, evaluate, report metrics by the hypertune
 * protocol, checkpoint, save the final model.
 *
 * A run is a pure function of its configuration and seed (for a given thread count):
 * killed at any point and started again with the same flags, it resumes from the
 * newest valid checkpoint in JOB_DIR/checkpoints and ends with the same parameters as
 * an uninterrupted run. Design: docs/trainer.md.
 */
#ifndef TN_TRAIN_H
#define TN_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "common/tfconfig.h"
#include "kernels/kernels.h"
#include "trainer/model.h"
#include "trainer/optim.h"

typedef struct tr_config {
    /* data */
    const char *data_dir;       /* folder of IDX files (default DS_DEFAULT_DIR) */
    const char *train_file;     /* CSV instead of IDX (needs eval_file too) */
    const char *eval_file;
    int label_column;           /* CSV label column, negative from the end */
    double feature_scale;       /* CSV features multiplied by this */
    int64_t max_train_examples; /* > 0: use only the first N training examples */
    int64_t max_eval_examples;  /* > 0: evaluate on the first N test examples */
    /* model: kind, activation, dropout, hidden, filters; shape and classes come from
     * the data */
    mdl_config model;
    /* optimisation */
    opt_config opt;             /* total_steps is filled in by the run */
    int batch_size;
    int epochs;
    uint64_t seed;
    int threads;                /* OpenBLAS threads, >= 1 */
    /* reporting and checkpoints */
    int64_t report_every;       /* > 0: also report every N steps */
    int64_t checkpoint_every;   /* > 0: also checkpoint every N steps */
    int keep_checkpoints;       /* newest checkpoints kept, >= 1 */
    const char *job_dir;        /* checkpoints and final model; NULL: none */
    const char *metric_file;    /* NULL: $CLOUD_ML_HP_METRIC_FILE or the default */
    int eval_only;              /* evaluate model_file and exit */
    const char *model_file;     /* eval_only: NULL means JOB_DIR/model.ckpt */
    /* distribution (docs/distributed.md) */
    int strategy;               /* enum tr_strategy, resolved (not TR_AUTO) */
    int shard_policy;           /* enum tr_shard */
    int allreduce_precision;    /* CL_FP32 or CL_BF16 (collective.h) */
    int allreduce_transport;    /* CL_AUTO, CL_TCP or CL_SHM (collective.h) */
    double peer_timeout;        /* seconds a peer may be missing or silent */
    double bucket_mb;           /* multi-worker: all-reduce buckets of at least this
                                   many MiB, overlapped with backward (0: one bucket) */
    int devices;                /* mirrored, central_storage: replicas in this process */
    const tf_config *cluster;   /* the parsed TF_CONFIG, or NULL: a single replica */
    /* devices (docs/trainer.md, "Devices") */
    int device;                 /* enum tr_device */
    int precision;              /* enum kn_precision of the matrix products (beyond
                                   KN_FP32: a GPU, or the emulated device) */
    int emulate_device;         /* TR_CPU: run the GPU code paths on the CPU backend
                                   presented as a device (kn_cpu_device), for tests */
} tr_config;

/* Where the replicas of this process compute. */
enum tr_device {
    TR_CPU = 0, /* the CPU backend (OpenBLAS) */
    TR_GPU = 1  /* CUDA GPUs: device d of this process's visible GPUs for replica d
                   (mirrored, central_storage), rank % count for multi-worker replicas */
};

/* Strategies, as tf.distribute's. */
enum tr_strategy {
    TR_AUTO = 0,          /* from the cluster: ps -> parameter_server, several workers ->
                             multi_worker_mirrored, else one_device (tr_pick_strategy) */
    TR_ONE_DEVICE,
    TR_MIRRORED,          /* several replicas in this process, gradients all-reduced */
    TR_CENTRAL_STORAGE,   /* several replicas in this process, variables held centrally */
    TR_MULTI_WORKER,      /* multi_worker_mirrored: chief + workers, ring all-reduce */
    TR_PARAMETER_SERVER   /* asynchronous: ps tasks hold the variables */
};

/* How the training examples are split between the replicas, as tf.data's
 * auto-shard policies: DATA gives every replica its part of each global batch
 * (the same examples a single replica with the global batch would see, so the
 * loss curve matches); FILE gives each replica a contiguous block of the examples
 * (as if each block were a file) and shuffles within it; OFF lets every replica
 * read all of them (each from its own offset in the shared order). */
enum tr_shard { TR_SHARD_AUTO = 0, TR_SHARD_DATA, TR_SHARD_FILE, TR_SHARD_OFF };

const char *tr_strategy_name(int strategy);

/* The --shard_policy name of an enum tr_shard value ("auto", "data", "file", "off"), or
 * "?" for another value: the one spelling of the flag's choices, its help and the
 * messages that name a policy. */
const char *tr_shard_name(int shard);

/* TR_AUTO's choice for a cluster (NULL: a single replica). */
int tr_pick_strategy(const tf_config *cluster);

/* Runs training (or evaluation, with eval_only) as configured; progress lines go to
 * out. Returns 0; TR_INTERRUPTED when a SIGTERM/SIGINT stopped it after saving a
 * checkpoint; TR_DIVERGED when the loss became NaN or infinite (message in err); or a
 * negative TN_E* code with the message in err (TN_EINVAL: the configuration is
 * invalid, re-running cannot help). */
#define TR_INTERRUPTED 1
#define TR_DIVERGED 2
int tr_run(const tr_config *c, FILE *out, char *err, size_t errlen);

/* The evaluator's job: follows the checkpoints the chief writes into
 * JOB_DIR/checkpoints, evaluates each new one on the held-out data, reports
 * eval_accuracy and eval_loss by the hypertune protocol at the checkpoint's step, and
 * returns 0 after the one that ends training. Stopped by SIGTERM: TR_INTERRUPTED. */
int tr_evaluator(const tr_config *c, FILE *out, char *err, size_t errlen);

/* Installs SIGTERM and SIGINT handlers that make tr_run stop at the next step,
 * checkpoint and return TR_INTERRUPTED. */
void tr_install_signal_handlers(void);

/* The signal that interrupted the run (0 if none). */
int tr_stop_signal(void);

/* The flag the handlers set (the signal number), for loops outside tr_run. */
volatile const int *tr_stop_flag(void);

#endif
