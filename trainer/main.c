/*
 * main.c — the `trainer` command: flags in, a training run out.
 *
 * Parses the flags (every one accepted as --name=value or --name value, as AI
 * Platform passes hyperparameters), turns them into a tr_config and runs it.
 * Exit codes (docs/trainer.md, "Exit codes"): 0 done; 1 runtime error (data, disk,
 * checkpoint); 2 permanent error (bad flag or configuration, or training diverged:
 * re-running cannot help); 128+signal when stopped by SIGTERM/SIGINT after a checkpoint.
 * Its role comes from TF_CONFIG (none: a single replica), its device from --device
 * (default: a GPU when CUDA_VISIBLE_DEVICES names one, this build has CUDA and a GPU is
 * there; else the CPU).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/flags.h"
#include "common/status.h"
#include "common/tfconfig.h"
#include "kernels/cuda.h"
#include "trainer/collective.h"
#include "trainer/data.h"
#include "trainer/net.h"
#include "trainer/ps.h"
#include "trainer/train.h"

/* 2 means "re-running with the same flags cannot help": the executor fails such a
 * trial at once instead of restarting it. */
enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2, EXIT_DIVERGED = 2 };

typedef struct name_value {
    const char *name;
    int value;
} name_value;

static const name_value models[] = {{"mlp", MDL_MLP}, {"cnn", MDL_CNN}, {NULL, 0}};
static const name_value activations[] = {
    {"relu", MDL_RELU}, {"tanh", MDL_TANH}, {"gelu", MDL_GELU}, {NULL, 0}};
static const name_value optimizers[] = {{"sgd", OPT_SGD},   {"momentum", OPT_MOMENTUM},
                                        {"nesterov", OPT_NESTEROV}, {"adam", OPT_ADAM},
                                        {"adamw", OPT_ADAMW}, {NULL, 0}};
static const name_value schedules[] = {
    {"constant", OPT_CONSTANT}, {"cosine", OPT_COSINE}, {"step", OPT_STEP}, {NULL, 0}};
static const name_value precisions[] = {{"fp32", CL_FP32}, {"bf16", CL_BF16}, {NULL, 0}};
static const name_value transports[] = {
    {"auto", CL_AUTO}, {"tcp", CL_TCP}, {"shm", CL_SHM}, {NULL, 0}};
static const name_value device_names[] = {
    {"auto", -1}, {"cpu", TR_CPU}, {"gpu", TR_GPU}, {NULL, 0}};
static const name_value precision_names[] = {
    {"fp32", KN_FP32}, {"tf32", KN_TF32}, {"bf16", KN_BF16}, {NULL, 0}};

/* The values first..last of an enum as a table, named by name(): where the trainer has
 * a function that spells its choices (tr_strategy_name, tr_shard_name), the flag takes
 * them from it rather than a second spelling here. t has room for last - first + 2
 * entries (the NULL end). */
static void table_of(const char *(*name)(int), int first, int last, name_value *t) {
    for (int v = first; v <= last; v++) t[v - first] = (name_value){name(v), v};
    t[last - first + 1] = (name_value){NULL, 0};
}

/* The names of table t as "a|b|c", for --help and lookup's message. */
static void choice_list(const name_value *t, char *buf, size_t len) {
    buf[0] = '\0';
    for (int i = 0; t[i].name; i++) {
        strncat(buf, i ? "|" : "", len - strlen(buf) - 1);
        strncat(buf, t[i].name, len - strlen(buf) - 1);
    }
}

static int lookup(const char *flag, const char *s, const name_value *t, int *out, char *err,
                  size_t errlen) {
    for (int i = 0; t[i].name; i++) {
        if (!strcmp(s, t[i].name)) {
            *out = t[i].value;
            return 0;
        }
    }
    char choices[128];
    choice_list(t, choices, sizeof choices);
    return tn_error(err, errlen, TN_EINVAL, "--%s must be one of %s, got '%s'", flag, choices, s);
}

/* Whether CUDA_VISIBLE_DEVICES names a device: set, not empty, and not "-1" or
 * "none" (which hide every GPU). */
static int gpu_named(void) {
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v) return 0;
    while (*v == ' ') v++;
    return *v && strncmp(v, "-1", 2) != 0 && strcmp(v, "none") != 0 && strcmp(v, "NoDevFiles");
}

/* --device: auto is the GPU when CUDA_VISIBLE_DEVICES names one, the build has CUDA
 * and a GPU is there, as TensorFlow places its work; else the CPU. An explicit gpu
 * without CUDA or without a GPU is an error, as is --precision other than fp32 on the
 * CPU, except that the CPU presented as a device (TRAINER_EMULATE_DEVICE=1, for tests)
 * takes every precision; TRAINER_EMULATE_GRAPH_FAILURE=1 there makes its graph
 * recordings fail (kn_cpu_device_fail_graphs). --devices against the GPUs there is
 * checked where the GPUs are opened (train.c). 0 or TN_EINVAL with the message. */
static int resolve_device(tr_config *c, int device, int precision, char *err, size_t errlen) {
    char why[512] = "";
    if (device < 0) {
        device = gpu_named() && kn_cuda_built() && kn_cuda_count(why, sizeof why) > 0 ? TR_GPU
                                                                                    : TR_CPU;
    } else if (device == TR_GPU && kn_cuda_count(why, sizeof why) == 0) {
        return tn_error(err, errlen, TN_EINVAL, "--device=gpu: %s", why);
    }
    /* tests run the GPU code paths on the CPU (kernels.h, kn_cpu_device) */
    const char *emulate = getenv("TRAINER_EMULATE_DEVICE");
    c->emulate_device = device == TR_CPU && emulate && strcmp(emulate, "1") == 0;
    if (device == TR_CPU && precision != KN_FP32 && !c->emulate_device)
        return tn_error(err, errlen, TN_EINVAL,
                        "--precision=%s needs --device=gpu: the CPU computes in fp32%s",
                        kn_precision_name(precision),
                        kn_cuda_built() ? "" : " (and this build has no CUDA)");
    const char *fail = getenv("TRAINER_EMULATE_GRAPH_FAILURE");
    if (c->emulate_device && fail && strcmp(fail, "1") == 0) kn_cpu_device_fail_graphs(1);
    c->device = device;
    c->precision = precision;
    return 0;
}

/* --threads=0's count: $OPENBLAS_NUM_THREADS, $OMP_NUM_THREADS, or the cores (at most
 * 1024). A variable above 1024 is an error that names it, not --threads. */
static int default_threads(int *out, char *err, size_t errlen) {
    const char *names[] = {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(names[i]);
        long n = v ? strtol(v, NULL, 10) : 0;
        if (n > 1024)
            return tn_error(err, errlen, TN_EINVAL,
                            "$%s=%s (which --threads=0 takes) is more than 1024 threads; set "
                            "it lower or give --threads=N",
                            names[i], v);
        if (n > 0) {
            *out = (int)n;
            return 0;
        }
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    *out = n <= 0 ? 1 : n > 1024 ? 1024 : (int)n;
    return 0;
}

/* Checks the strategy against the cluster (tf: NULL for a single replica) and fills
 * the distribution fields of c; the per-replica batch comes from --global_batch_size
 * when that is given. */
static int resolve_strategy(tr_config *c, const tf_config *tf, int type, int strategy,
                            int shard, int precision, int devices, int global_batch,
                            double peer_timeout, int batch_given, char *err, size_t errlen) {
    int world = tf ? tf_world_size(tf) : 1, nps = tf ? (int)tf->cluster[TF_PS].n : 0;
    if (strategy == TR_AUTO) strategy = devices > 1 ? TR_MIRRORED : tr_pick_strategy(tf);
    const char *name = tr_strategy_name(strategy);
    int replicas = 1, in_process = strategy == TR_MIRRORED || strategy == TR_CENTRAL_STORAGE;
    if (in_process || strategy == TR_ONE_DEVICE) {
        if (world > 1 || nps > 0)
            return tn_error(err, errlen, TN_EINVAL,
                            "--strategy=%s runs in one process, but TF_CONFIG's cluster has %d "
                            "replicas and %d ps tasks; hint: use --strategy=auto",
                            name, world, nps);
        replicas = in_process ? devices : 1;
    } else if (strategy == TR_MULTI_WORKER) {
        if (nps > 0)
            return tn_error(err, errlen, TN_EINVAL,
                            "TF_CONFIG's cluster has ps tasks, which --strategy=%s does not use; "
                            "hint: use --strategy=parameter_server (or auto)",
                            name);
        replicas = world;
    } else if (strategy == TR_PARAMETER_SERVER) {
        if (nps == 0)
            return tn_error(err, errlen, TN_EINVAL,
                            "--strategy=%s needs ps tasks in TF_CONFIG's cluster (none given); "
                            "hint: set parameterServerCount in the spec, or use --strategy=auto",
                            name);
        replicas = world;
    }
    if (devices > 1 && !in_process)
        return tn_error(err, errlen, TN_EINVAL,
                        "--devices applies to --strategy=mirrored or central_storage, not %s",
                        name);
    if (precision == CL_BF16 && strategy != TR_MULTI_WORKER)
        return tn_error(err, errlen, TN_EINVAL,
                        "--allreduce_precision=bf16 applies to multi_worker_mirrored (the "
                        "gradients on the wire), not %s",
                        name);
    if (c->allreduce_transport != CL_AUTO && strategy != TR_MULTI_WORKER)
        return tn_error(err, errlen, TN_EINVAL,
                        "--allreduce_transport applies to multi_worker_mirrored (between "
                        "replica processes), not %s",
                        name);
    if (global_batch > 0 && type != TF_PS && type != TF_EVALUATOR) {
        if (global_batch % replicas)
            return tn_error(err, errlen, TN_EINVAL,
                            "--global_batch_size=%d does not divide among %d replicas; hint: "
                            "use a multiple of %d",
                            global_batch, replicas, replicas);
        int per = global_batch / replicas;
        if (per > 65536)
            return tn_error(err, errlen, TN_EINVAL,
                            "--global_batch_size=%d gives %d examples to each of %d "
                            "replica%s, more than 65536",
                            global_batch, per, replicas, replicas == 1 ? "" : "s");
        if (batch_given && per != c->batch_size)
            return tn_error(err, errlen, TN_EINVAL,
                            "--batch_size=%d and --global_batch_size=%d disagree: %d replicas "
                            "get %d examples each; hint: give only one of them",
                            c->batch_size, global_batch, replicas, per);
        c->batch_size = per;
    }
    c->strategy = strategy;
    c->shard_policy = shard;
    c->allreduce_precision = precision;
    c->devices = in_process ? devices : 1;
    c->peer_timeout = peer_timeout;
    return 0;
}

/* The exit status for tr_run's (or the evaluator's) result, printing the error. */
static int exit_code(int rc, const char *err) {
    fflush(stdout);
    if (rc == TR_INTERRUPTED) return 128 + (tr_stop_signal() ? tr_stop_signal() : SIGTERM);
    if (rc < 0 && nt_stop_signal()) { /* stopped while it waited for its peers */
        fprintf(stderr, "trainer: %s\n", err);
        return 128 + nt_stop_signal();
    }
    if (rc == TR_DIVERGED) {
        fprintf(stderr, "trainer: error: %s\n", err);
        return EXIT_DIVERGED;
    }
    if (rc) {
        fprintf(stderr, "trainer: error: %s\n", err);
        return rc == TN_EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
    }
    return 0;
}

/* A ps task: serves its shard of the variables until the chief is done. */
static int run_ps(const tr_config *c, const tf_config *tf) {
    ps_server_config sc = {.addr = tf->cluster[TF_PS].addr[tf->index],
                           .index = tf->index,
                           .count = (int)tf->cluster[TF_PS].n,
                           .opt = c->opt,
                           .timeout = c->peer_timeout,
                           .linger = 30};
    char err[1024];
    int rc = ps_serve(&sc, tr_stop_flag(), stdout, err, sizeof err);
    fflush(stdout);
    if (rc) {
        fprintf(stderr, "trainer: error: %s\n", err);
        return EXIT_RUNTIME;
    }
    return tr_stop_signal() ? 128 + tr_stop_signal() : 0;
}

static void usage(FILE *out, const tn_flag *flags, size_t n) {
    fprintf(out,
            "usage: trainer [--flag=value | --flag value]...\n"
            "\n"
            "Trains an MLP or a CNN on Fashion-MNIST (or any MNIST-format IDX folder, or CSV\n"
            "files) on the CPU or on GPUs (--device), reporting metrics by the\n"
            "cloudml-hypertune file protocol\n"
            "($CLOUD_ML_HP_METRIC_FILE) and checkpointing into --job-dir, from which a\n"
            "restarted run resumes. Runs alone, or as a replica of a tuner trial.\n"
            "\n"
            "flags:\n");
    tn_flags_help(out, flags, n, '_');
    fprintf(out,
            "\n"
            "exit codes: 0 done; 1 runtime error (data, disk, checkpoint); 2 permanent error\n"
            "(bad flag or configuration, checkpoints in --job-dir of another model, settings\n"
            "or cluster, a folder where a checkpoint must go, or training diverged:\n"
            "re-running cannot help);\n"
            "130/143 stopped by SIGINT/SIGTERM (checkpoint saved).\n"
            "docs: docs/trainer.md\n");
}

int main(int argc, char **argv) {
    const char *model = "mlp", *activation = "relu", *optimizer = "momentum";
    const char *schedule = "cosine", *hidden = NULL, *filters = "32,64";
    const char *data_dir = DS_DEFAULT_DIR, *train_file = NULL, *eval_file = NULL;
    const char *job_dir = NULL, *model_file = NULL;
    double dropout = 0.0, lr = 0.05, momentum = 0.9, wd = 0.0, beta1 = 0.9, beta2 = 0.999;
    double eps = 1e-8, decay_rate = 0.1, feature_scale = 1.0;
    int batch = 128, epochs = 5, threads = 0, keep = 3, label_column = 0, eval_only_flag = 0;
    int64_t seed = 1, warmup = 0, decay_steps = 0, report_every = 0, ckpt_every = 0;
    int64_t max_train = 0, max_eval = 0;
    const char *strategy = tr_strategy_name(TR_AUTO);
    const char *shard_policy = tr_shard_name(TR_SHARD_AUTO);
    const char *precision = "fp32", *transport = "auto", *device = "auto";
    const char *precision_flag = "fp32";
    int global_batch = 0, devices = 1;
    double peer_timeout = 60, bucket_mb = 0.25;
    name_value shard_policies[TR_SHARD_OFF + 2], strategies[TR_PARAMETER_SERVER + 2];
    char shard_choices[64], strategy_help[160];
    table_of(tr_shard_name, TR_SHARD_AUTO, TR_SHARD_OFF, shard_policies);
    choice_list(shard_policies, shard_choices, sizeof shard_choices);
    table_of(tr_strategy_name, TR_AUTO, TR_PARAMETER_SERVER, strategies);
    choice_list(strategies, strategy_help, sizeof strategy_help);
    strncat(strategy_help, " (auto: from TF_CONFIG's cluster)",
            sizeof strategy_help - strlen(strategy_help) - 1);

    const tn_flag flags[] = {
        {"model", TN_FLAG_STRING, &model, "mlp|cnn", "model to train"},
        {"hidden_units", TN_FLAG_STRING, &hidden, "N,N,...",
         "widths of the hidden dense layers (default: 256,256 for mlp, 128 for cnn)"},
        {"conv_filters", TN_FLAG_STRING, &filters, "N,N,...",
         "cnn: filters of each conv 3x3 + max-pool block"},
        {"activation", TN_FLAG_STRING, &activation, "relu|tanh|gelu", "hidden activation"},
        {"dropout", TN_FLAG_DOUBLE, &dropout, "P", "drop probability after hidden dense layers"},
        {"optimizer", TN_FLAG_STRING, &optimizer, "NAME", "sgd|momentum|nesterov|adam|adamw"},
        {"learning_rate", TN_FLAG_DOUBLE, &lr, "RATE", "peak learning rate"},
        {"momentum", TN_FLAG_DOUBLE, &momentum, "MU", "momentum and nesterov: momentum"},
        {"weight_decay", TN_FLAG_DOUBLE, &wd, "W", "L2 penalty (decoupled for adamw)"},
        {"beta1", TN_FLAG_DOUBLE, &beta1, "B", "adam, adamw: first-moment decay"},
        {"beta2", TN_FLAG_DOUBLE, &beta2, "B", "adam, adamw: second-moment decay"},
        {"epsilon", TN_FLAG_DOUBLE, &eps, "E", "adam, adamw: denominator term"},
        {"lr_schedule", TN_FLAG_STRING, &schedule, "NAME", "constant|cosine|step"},
        {"warmup_steps", TN_FLAG_INT64, &warmup, "N", "linear learning-rate warm-up steps"},
        {"lr_decay_rate", TN_FLAG_DOUBLE, &decay_rate, "R", "step schedule: factor per stage"},
        {"lr_decay_steps", TN_FLAG_INT64, &decay_steps, "N",
         "step schedule: steps per stage (0: a third of training)"},
        {"batch_size", TN_FLAG_INT, &batch, "N",
         "examples per step (1 to 65536; cnn: batch x image height x width at most 2^31-1)"},
        {"epochs", TN_FLAG_INT, &epochs, "N", "passes over the training data"},
        {"seed", TN_FLAG_INT64, &seed, "N", "seed of initialisation, data order and dropout"},
        {"threads", TN_FLAG_INT, &threads, "N",
         "compute threads (0: $OPENBLAS_NUM_THREADS, $OMP_NUM_THREADS or all cores)"},
        {"data_dir", TN_FLAG_STRING, &data_dir, "DIR",
         "folder of MNIST-format IDX files (plain or .gz)"},
        {"train_file", TN_FLAG_STRING, &train_file, "CSV", "training data as CSV instead"},
        {"eval_file", TN_FLAG_STRING, &eval_file, "CSV", "held-out data as CSV"},
        {"label_column", TN_FLAG_INT, &label_column, "N",
         "CSV column of the label (negative: from the end)"},
        {"feature_scale", TN_FLAG_DOUBLE, &feature_scale, "S",
         "CSV features are multiplied by this (1/255 for raw pixels)"},
        {"max_train_examples", TN_FLAG_INT64, &max_train, "N",
         "use only the first N training examples (0: all)"},
        {"max_eval_examples", TN_FLAG_INT64, &max_eval, "N",
         "evaluate on the first N held-out examples (0: all)"},
        {"report_every", TN_FLAG_INT64, &report_every, "N",
         "also report metrics every N steps (0: each epoch only)"},
        {"checkpoint_every", TN_FLAG_INT64, &ckpt_every, "N",
         "also checkpoint every N steps (0: each epoch only)"},
        {"keep_checkpoints", TN_FLAG_INT, &keep, "N", "newest checkpoints to keep"},
        {"job_dir", TN_FLAG_STRING, &job_dir, "DIR",
         "where checkpoints and the final model go (also --job-dir; in a cluster, the "
         "chief's only); a run resumes only checkpoints of its own model, settings and "
         "cluster"},
        {"eval_only", TN_FLAG_BOOL, &eval_only_flag, NULL,
         "evaluate --model_file on the held-out data and exit"},
        {"model_file", TN_FLAG_STRING, &model_file, "PATH",
         "model to evaluate (default: JOB_DIR/model.ckpt)"},
        {"strategy", TN_FLAG_STRING, &strategy, "NAME", strategy_help},
        {"devices", TN_FLAG_INT, &devices, "N",
         "mirrored, central_storage: replicas in this process (threads on the CPU, one GPU "
         "each with --device=gpu)"},
        {"device", TN_FLAG_STRING, &device, "auto|cpu|gpu",
         "where to compute (auto: a GPU when CUDA_VISIBLE_DEVICES names one and this build "
         "has CUDA, else the CPU)"},
        {"precision", TN_FLAG_STRING, &precision_flag, "fp32|tf32|bf16",
         "GPU: precision of the matrix products (tf32, bf16: tensor cores, float32 sums and "
         "parameters)"},
        {"global_batch_size", TN_FLAG_INT, &global_batch, "N",
         "examples per step over all replicas (0: --batch_size x replicas); must divide"},
        {"shard_policy", TN_FLAG_STRING, &shard_policy, shard_choices,
         "how replicas split the training examples (auto: data)"},
        {"allreduce_precision", TN_FLAG_STRING, &precision, "fp32|bf16",
         "multi_worker_mirrored: precision of the gradients on the wire"},
        {"allreduce_transport", TN_FLAG_STRING, &transport, "auto|tcp|shm",
         "multi_worker_mirrored: how the gradients travel (auto: shared memory when every "
         "replica is on this host, else the TCP ring)"},
        {"allreduce_bucket_mb", TN_FLAG_DOUBLE, &bucket_mb, "MB",
         "multi_worker_mirrored: all-reduce buckets of at least this size, sent while the "
         "backward pass goes on (0: one all-reduce after it)"},
        {"peer_timeout", TN_FLAG_DOUBLE, &peer_timeout, "SECONDS",
         "how long to wait for a missing or silent peer replica"},
    };
    const size_t nflags = sizeof flags / sizeof flags[0];
    char err[1024];
    int help;
    int rc = tn_flags_parse(flags, nflags, argc, argv, NULL, 0, NULL, &help, err, sizeof err);
    if (!rc && help) {
        usage(stdout, flags, nflags);
        return 0;
    }

    tr_config c;
    memset(&c, 0, sizeof c);
    int kind = 0, act = 0, opt = 0, sched = 0;
    int strat = 0, shard = 0, prec = 0, trans = 0, dev = 0, mprec = 0;
    /* the flags that name one of a few choices */
    const struct {
        const char *flag, *value;
        const name_value *names;
        int *out;
    } choices[] = {
        {"model", model, models, &kind},
        {"activation", activation, activations, &act},
        {"optimizer", optimizer, optimizers, &opt},
        {"lr_schedule", schedule, schedules, &sched},
        {"strategy", strategy, strategies, &strat},
        {"shard_policy", shard_policy, shard_policies, &shard},
        {"allreduce_precision", precision, precisions, &prec},
        {"allreduce_transport", transport, transports, &trans},
        {"device", device, device_names, &dev},
        {"precision", precision_flag, precision_names, &mprec},
    };
    for (size_t i = 0; !rc && i < sizeof choices / sizeof choices[0]; i++)
        rc = lookup(choices[i].flag, choices[i].value, choices[i].names, choices[i].out, err,
                    sizeof err);
    c.allreduce_transport = trans;
    if (!rc && !(peer_timeout > 0 && peer_timeout <= 86400))
        rc = tn_error(err, sizeof err, TN_EINVAL, "--peer_timeout must be in (0, 86400] seconds");
    if (!rc && !(bucket_mb >= 0 && bucket_mb <= 4096))
        rc = tn_error(err, sizeof err, TN_EINVAL, "--allreduce_bucket_mb must be 0 to 4096");
    if (!rc && (devices < 1 || devices > 64))
        rc = tn_error(err, sizeof err, TN_EINVAL, "--devices must be 1 to 64, got %d", devices);
    if (!rc && global_batch < 0)
        rc = tn_error(err, sizeof err, TN_EINVAL, "--global_batch_size must be >= 0");
    if (!rc) {
        c.model.kind = kind;
        c.model.activation = act;
        c.model.dropout = (float)dropout;
        if (!hidden) hidden = kind == MDL_CNN ? "128" : "256,256";
        rc = mdl_parse_widths("hidden_units", hidden, c.model.hidden, MDL_MAX_HIDDEN, err,
                              sizeof err);
        if (rc >= 0) c.model.nhidden = rc, rc = 0;
    }
    if (!rc && kind == MDL_CNN) {
        rc = mdl_parse_widths("conv_filters", filters, c.model.filters, MDL_MAX_CONV, err,
                              sizeof err);
        if (rc >= 0) c.model.nconv = rc, rc = 0;
    } else if (!rc && tn_flags_given(flags, nflags, "conv_filters")) {
        rc = tn_error(err, sizeof err, TN_EINVAL, "--conv_filters applies to --model=cnn only");
    }
    if (!rc && (seed < 0))
        rc = tn_error(err, sizeof err, TN_EINVAL, "--seed must be >= 0");
    if (!rc && (threads < 0 || threads > 1024)) /* one message for the flag's range */
        rc = tn_error(err, sizeof err, TN_EINVAL, "--threads must be 0 (automatic) to 1024, got %d",
                      threads);
    if (!rc && threads == 0) rc = default_threads(&threads, err, sizeof err);
    /* A path flag given with nothing after the '=' is a mistake (a shell variable that
     * was empty), not a request for the default. */
    static const char *const paths[] = {"data_dir", "train_file", "eval_file", "job_dir",
                                        "model_file"};
    const char *const values[] = {data_dir, train_file, eval_file, job_dir, model_file};
    for (size_t i = 0; !rc && i < sizeof paths / sizeof paths[0]; i++)
        if (values[i] && !*values[i] && tn_flags_given(flags, nflags, paths[i]))
            rc = tn_error(err, sizeof err, TN_EINVAL, "--%s is empty; give a path or leave the "
                          "flag out", paths[i]);
    if (rc) {
        fprintf(stderr, "trainer: error: %s\nhint: see 'trainer --help'\n", err);
        return EXIT_USAGE;
    }
    c.opt = (opt_config){.kind = opt, .learning_rate = lr, .momentum = momentum,
                         .weight_decay = wd, .beta1 = beta1, .beta2 = beta2, .epsilon = eps,
                         .schedule = sched, .warmup_steps = warmup, .decay_rate = decay_rate,
                         .decay_steps = decay_steps};
    c.data_dir = data_dir;
    c.train_file = train_file;
    c.eval_file = eval_file;
    c.label_column = label_column;
    c.feature_scale = feature_scale;
    c.max_train_examples = max_train;
    c.max_eval_examples = max_eval;
    c.batch_size = batch;
    c.epochs = epochs;
    c.seed = (uint64_t)seed;
    c.threads = threads;
    c.report_every = report_every;
    c.checkpoint_every = ckpt_every;
    c.keep_checkpoints = keep;
    c.job_dir = job_dir; /* an empty one was refused above */
    c.eval_only = eval_only_flag;
    c.model_file = model_file;
    if (max_train < 0 || max_eval < 0) {
        fprintf(stderr, "trainer: error: --max_train_examples and --max_eval_examples must be "
                        ">= 0\n");
        return EXIT_USAGE;
    }

    /* The replica's role and the strategy (docs/distributed.md). */
    tf_config tf;
    rc = tf_config_from_env(&tf, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "trainer: error: %s\nhint: see docs/distributed.md for TF_CONFIG\n", err);
        return EXIT_USAGE;
    }
    /* unset, TF_CONFIG is the single-replica default: not a cluster */
    int clustered = tf_world_size(&tf) + (int)tf.cluster[TF_PS].n > 1;
    rc = resolve_strategy(&c, clustered ? &tf : NULL, tf.type, strat, shard, prec, devices,
                          global_batch, peer_timeout, tn_flags_given(flags, nflags, "batch_size"),
                          err, sizeof err);
    if (!rc && !(clustered && tf.type == TF_PS)) /* a ps task computes nothing */
        rc = resolve_device(&c, dev, mprec, err, sizeof err);
    if (rc) {
        fprintf(stderr, "trainer: error: %s\n", err);
        tf_config_clear(&tf);
        return EXIT_USAGE;
    }
    tr_install_signal_handlers();
    nt_watch_stop(tr_stop_flag()); /* SIGTERM while waiting for peers: stop at once */
    if (clustered && tf.type == TF_PS) {
        rc = run_ps(&c, &tf);
        tf_config_clear(&tf);
        return rc;
    }
    if (tf.type == TF_EVALUATOR && !c.eval_only) {
        rc = tr_evaluator(&c, stdout, err, sizeof err);
        tf_config_clear(&tf);
        return exit_code(rc, err);
    }
    /* Only the chief writes to --job-dir. The other replicas write nothing at all: only
     * the chief resumes from a checkpoint (the others take its state when the job
     * starts), so theirs would never be read. (They used to go to a private folder in
     * /tmp, removed at the end, which every SIGKILL of a worker left behind.) */
    if (clustered && !tf_is_chief(&tf) && !c.eval_only) {
        printf("%s %d: not the chief, so it writes no checkpoints or model (the chief's "
               "--job-dir holds the job's)\n",
               tf_type_name(&tf, tf.type), tf.index);
        c.job_dir = NULL;
    }
    c.cluster = clustered ? &tf : NULL;
    c.bucket_mb = bucket_mb;
    rc = tr_run(&c, stdout, err, sizeof err);
    tf_config_clear(&tf);
    return exit_code(rc, err);
}
