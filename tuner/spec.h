/*
 * spec.h — the study spec: an AI Platform job resource in JSON, parsed and validated.
 *
 * Field names and enum values are AI Platform's (trainingInput, HyperparameterSpec,
 * ParameterSpec), so a spec written for AI Platform reads the same here; the few
 * extensions are documented in docs/spec.md. Validation reports every problem at
 * once, each with the JSON path of the field and what was expected, before anything
 * runs; unknown fields are errors with a did-you-mean. Contract: docs/design.md,
 * "The study spec".
 */
#ifndef TN_TUNER_SPEC_H
#define TN_TUNER_SPEC_H

#include <jansson.h>
#include <stddef.h>

#include "common/tfconfig.h"
#include "search/bo.h"
#include "search/sampler.h"
#include "search/space.h"
#include "search/stopping.h"

enum spec_tier { SPEC_BASIC = 1, SPEC_BASIC_GPU, SPEC_STANDARD_1, SPEC_CUSTOM };
enum spec_goal { SPEC_MAXIMIZE = 1, SPEC_MINIMIZE };
/* Replica types: common/tfconfig.h's enum tf_type, which indexes resources and env. */

/* What one replica of a type asks of the machine. */
typedef struct spec_resources {
    int cores;      /* CPU cores (threads the replica is told to use), >= 1; default 1 */
    int gpus;       /* GPUs, >= 0; default 0 (1 for the chief of BASIC_GPU); from
                       resources.TYPE.gpus or AI Platform's TYPEConfig.acceleratorConfig */
    int memory_mb;  /* memory in MiB, >= 0; 0 (default): not said (Slurm: the cluster's
                       default; the local executor does not schedule memory) */
} spec_resources;

/* The most metrics a study may have ("metrics"). */
#define SPEC_MAX_METRICS 16

/* One metric of the study (Vertex AI's MetricSpec). */
typedef struct spec_metric {
    char *id;       /* metricId: the name in the hypertune file */
    int goal;       /* enum spec_goal */
} spec_metric;

enum spec_executor_type { SPEC_EXECUTOR_LOCAL = 1, SPEC_EXECUTOR_SLURM };

/* Where trials run: the extension "executor" (docs/spec.md, docs/slurm.md). */
typedef struct spec_executor {
    int type;                  /* enum spec_executor_type; default LOCAL */
    int given;                 /* the spec has an "executor" object */
    char *partition;           /* slurm: --partition, or NULL */
    char *account;             /* slurm: --account, or NULL */
    char *qos;                 /* slurm: --qos, or NULL */
    char *time_limit;          /* slurm: --time in Slurm's format, or NULL */
    char **extra_args;         /* slurm: more sbatch options */
    size_t nextra;
} spec_executor;

typedef struct tn_spec {
    char *job_id;                  /* jobId: [A-Za-z][A-Za-z0-9_]{0,127} */
    /* trainingInput */
    int scale_tier;                /* enum spec_tier; default BASIC */
    int worker_count;              /* replicas per type after applying the tier: */
    int ps_count;                  /*   BASIC 0/0/0, STANDARD_1 4/3/0, CUSTOM as given */
    int evaluator_count;
    int use_chief_in_tf_config;    /* default true; false: the chief is "master" */
    char *job_dir;                 /* jobDir; default "runs/<jobId>" */
    char **command;                /* extension: program and its fixed flags (ncommand >= 1),
                                      or NULL when pythonModule is used */
    size_t ncommand;
    char *python_module;           /* pythonModule: runs as python3 -m MODULE */
    char **args;                   /* args: more fixed flags */
    size_t nargs;
    spec_resources resources[TF_NTYPES]; /* extension: "resources" */
    int max_replica_restarts;      /* extension "restartPolicy": default 5 */
    int max_job_retries;           /* default 3 */
    double restart_backoff;        /* backoffSeconds: before the first restart or re-run,
                                      doubling after; default 1, 0: none */
    double restart_backoff_max;    /* maxBackoffSeconds: default 30 */
    int fail_on_repeat;            /* failOnRepeatedError: default true */
    char **env[TF_NTYPES]; /* extension "env" (all replicas) merged with each
                                      TYPEConfig's "env": "NAME=VALUE" strings,
                                      NULL-terminated; NULL when none */
    double trial_timeout_seconds;  /* extension "trialTimeout" ("600s" or 600); 0: none */
    /* trainingInput.hyperparameters */
    int goal;                      /* enum spec_goal of the first metric; default MAXIMIZE */
    char *metric_tag;              /* the first metric's id: hyperparameterMetricTag, or
                                      metrics[0].metricId; default
                                      "training/hptuning/metric" */
    spec_metric *metrics;          /* (nmetrics, 1 ..= SPEC_MAX_METRICS) the study's
                                      metrics in the spec's order: Vertex AI's "metrics",
                                      or the one of hyperparameterMetricTag and goal;
                                      metrics[0] is metric_tag and goal */
    size_t nmetrics;
    int max_trials;                /* default 1 */
    int max_parallel_trials;       /* default 1 */
    int max_failed_trials;         /* the study fails once this many trials failed; 0 in the
                                      spec (AI Platform's "decide for me") means maxTrials */
    int enable_early_stopping;     /* enableTrialEarlyStopping */
    bo_options bayesian;           /* extension "bayesianOptimization" (ALGORITHM_UNSPECIFIED
                                      only): initialTrials, acquisition, ucbBeta; zero
                                      fields mean the sampler's defaults */
    es_config early_stopping;      /* the rule in force: policy ES_NONE when off;
                                      enableTrialEarlyStopping alone means the default
                                      rule (es_config_default, search/stopping.h);
                                      extension "earlyStopping" picks the
                                      policy and options (docs/early-stopping.md) */
    int algorithm;                 /* enum sp_algorithm; default UNSPECIFIED */
    char *resume_previous_job_id;  /* resumePreviousJobId, or NULL */
    sp_space space;                /* params, with their conditionalParameterSpecs
                                      depth first: every parent before its children */
    json_t *training_input;        /* the trainingInput object as given (a reference
                                      owned by the spec): TF_CONFIG's "job" */
    spec_executor executor;        /* extension "executor": local (default) or slurm */
    char *notes;                   /* for the user, one a line, or NULL: the AI Platform
                                      fields given that have no effect here, with why
                                      ("ignored: trainingInput.region (...)"), and the
                                      study's name when it came from the file's name */
} tn_spec;

/* One problem found in a spec. */
typedef struct spec_error {
    char *path;     /* JSON path, e.g. "trainingInput.hyperparameters.params[1].minValue" */
    char *message;  /* what was found and what was expected */
    int line;       /* where a YAML spec wrote the value (1-based), 0 when not known (a */
    int column;     /*   JSON spec: its syntax errors say where in the message) */
} spec_error;

typedef struct spec_errors {
    spec_error *items;
    size_t n;
} spec_errors;

/* Parses and validates the spec in text (from a file named name, used in messages).
 * `for_ask_tell` != 0 allows a spec with neither command nor pythonModule (a study
 * driven by ask/tell). On success returns 0 and fills *out (release with
 * spec_clear). Otherwise returns TN_EINVAL with every problem in *errs (release with
 * spec_errors_clear): JSON syntax errors (path "" and the line and column), unknown
 * fields (with a did-you-mean), wrong types, out-of-range numbers, minValue >
 * maxValue, log scales with minValue <= 0, empty categoricalValues, discreteValues
 * not strictly increasing, duplicate parameterName (anywhere in the tree of
 * conditional parameters), GRID_SEARCH with a DOUBLE parameter, a condition
 * (conditionalParameterSpecs) of the wrong kind for its parent's type or naming a
 * value the parent cannot take, a bad jobId, maxParallelTrials > maxTrials, ... */
int spec_parse(const char *text, const char *name, int for_ask_tell, tn_spec *out,
               spec_errors *errs);

/* The largest spec file read, in bytes: a bigger one (or /dev/zero) is one error. */
#define SPEC_MAX_BYTES (16u << 20)

/* Reads the file at path and parses it: JSON, or YAML (gcloud's training config file;
 * tuner/spec_yaml.h) when sy_is_yaml says so, into the same spec with the same checks;
 * the problems of a YAML file carry its line and column. A missing file, one that is
 * not a regular file (a FIFO, a device: never opened in a way that blocks), or one
 * larger than SPEC_MAX_BYTES is one error naming it. The packageUris of a pythonModule
 * spec must also exist (relative paths from the current folder; tuner/package.h). */
int spec_load(const char *path, int for_ask_tell, tn_spec *out, spec_errors *errs);

/* spec_load that also hands back the spec as JSON text (*text, yours to free; NULL on
 * failure): a JSON file's own text, so that what is stored is what was validated; a
 * YAML file's tree, which `tuner resume` and `tuner show` read back as JSON. */
int spec_read(const char *path, int for_ask_tell, tn_spec *out, spec_errors *errs,
              char **text);

/* spec_read naming the study: job_id, when not NULL, is its jobId whatever the file
 * says (`--job-id`); else the file's jobId, and a YAML file without one (gcloud takes
 * the name on its command line) is named spec_job_id_from_path(path), which
 * out->notes says. *text holds the jobId in force. */
int spec_read_named(const char *path, const char *job_id, int for_ask_tell, tn_spec *out,
                    spec_errors *errs, char **text);

/* Whether s is a valid jobId: a letter, then letters, digits and underscores; at most
 * 128 characters. */
int spec_job_id_valid(const char *s);

/* A jobId made from a file's name: the base name without its extension, every
 * character but letters, digits and underscores made '_', "job_" before it unless it
 * starts with a letter, cut to 128 characters ("runs/2024-a.yaml": "job_2024_a").
 * Yours to free. */
char *spec_job_id_from_path(const char *path);

void spec_clear(tn_spec *s);
void spec_errors_clear(spec_errors *e);

/* Names used in TF_CONFIG and logs: "chief" (or "master" when
 * !use_chief_in_tf_config), "worker", "ps", "evaluator". */
const char *spec_replica_name(const tn_spec *s, int type);

/* Number of replicas of a type (chief: 1). */
int spec_replica_count(const tn_spec *s, int type);

/* "local" or "slurm". */
const char *spec_executor_name(int type);

#endif
