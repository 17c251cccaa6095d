/*
 * spec.c — parses and validates a study spec (see spec.h; every field: docs/spec.md).
 *
 * One pass over the JSON tree, level by level: the job, trainingInput, its extensions
 * (resources, restartPolicy), hyperparameters, params[i]. Each reader checks the JSON
 * type and range of one field, records a problem at the field's path and carries on,
 * so a spec with five mistakes gets five messages. Rules that relate fields (tier and
 * counts, command and pythonModule, grid search and DOUBLE, maxParallelTrials and
 * maxTrials) run only when the fields they relate were valid, and a field that is
 * absent but misspelled (an unknown key whose did-you-mean names it) counts as
 * unknown rather than as its default — so one typo gives one message, not a cascade.
 * A parameter enters the search space only when it is entirely valid; on any error the
 * half-filled spec is cleared and the caller gets the errors alone.
 *
 * Conditional parameters (Vertex AI's conditionalParameterSpecs, in a params entry)
 * are read depth first: a parameter enters the space, then its children, each with
 * its parent's index and the parent values it exists for, so parents always come
 * before their children. Their paths extend the path without a push (path_extend),
 * so nesting is limited by the JSON parser's depth, not by MAX_DEPTH. Names must be
 * unique across the whole tree (report_duplicate_names, by sorting).
 */
#include "tuner/spec.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/status.h"
#include "common/jsonutil.h"
#include "search/stopping.h"
#include "common/fileio.h"
#include "common/text.h"
#include "executor/contract.h"
#include "tuner/package.h"
#include "tuner/spec_yaml.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_DEPTH 16        /* path pushes; the deepest spec path needs 6 */
#define MAX_REPLICAS 1024   /* per type and trial: a typo must not fork a thousand more */
#define MAX_EXACT_INT 9007199254740992.0 /* 2^53: integers a double holds exactly */
#define DEFAULT_METRIC_TAG "training/hptuning/metric"

/* ---- The fields each level accepts ---- */

static const char *const TOP_FIELDS[] = {"jobId", "trainingInput", "labels", "etag",
                                         /* extension */
                                         "executor"};

static const char *const INPUT_FIELDS[] = {
    "scaleTier", "workerCount", "parameterServerCount", "evaluatorCount",
    "useChiefInTfConfig", "jobDir", "args", "pythonModule", "hyperparameters",
    /* extensions */
    "command", "resources", "restartPolicy", "trialTimeout", "env",
    /* AI Platform's, accepted for compatibility and ignored (type-checked below) */
    "region", "runtimeVersion", "pythonVersion", "masterType", "workerType",
    "parameterServerType", "evaluatorType", "packageUris", "scheduling", "network",
    "serviceAccount", "enableWebAccess", "encryptionConfig",
    /* AI Platform's ReplicaConfig of each type: acceleratorConfig is read, the rest
       accepted and ignored */
    "masterConfig", "workerConfig", "parameterServerConfig", "evaluatorConfig"};

static const char *const HP_FIELDS[] = {
    "goal", "params", "maxTrials", "maxParallelTrials", "maxFailedTrials",
    "hyperparameterMetricTag", "enableTrialEarlyStopping", "resumePreviousJobId",
    "algorithm",
    /* Vertex AI's StudySpec */
    "metrics",
    /* extensions */
    "earlyStopping", "bayesianOptimization"};

/* Vertex AI's MetricSpec. */
static const char *const METRIC_FIELDS[] = {"metricId", "goal"};

static const char *const BO_FIELDS[] = {"initialTrials", "acquisition", "ucbBeta"};
static const char *const ACQ_NAMES[] = {"LOG_EI", "UCB"};
static const int ACQ_VALUES[] = {BO_LOG_EI, BO_UCB};

static const char *const ES_FIELDS[] = {"policy",      "minTrials",       "minStep",
                                        "useRunningAverage", "gracePeriod", "reductionFactor",
                                        "maxStep"};

static const char *const PARAM_FIELDS[] = {"parameterName", "type", "minValue", "maxValue",
                                           "categoricalValues", "discreteValues",
                                           "scaleType", "conditionalParameterSpecs"};

/* Vertex AI's ConditionalParameterSpec: a parameter (parameterSpec) and the values of
 * its parent it exists for, one condition of the kind that matches the parent's type
 * (CONDITION_TYPES); each condition is {"values": [...]}. */
static const char *const COND_FIELDS[] = {"parameterSpec", "parentDiscreteValues",
                                          "parentIntValues", "parentCategoricalValues"};
#define NCONDITIONS 3 /* COND_FIELDS[1 ..] */
static const int CONDITION_TYPES[NCONDITIONS] = {SP_DISCRETE, SP_INTEGER, SP_CATEGORICAL};
static const char *const CONDITION_FIELDS[] = {"values"};

static const char *const RESOURCE_KEYS[] = {"chief", "master", "worker", "ps", "evaluator"};
static const char *const RESOURCE_FIELDS[] = {"cores", "gpus", "memory"};

/* AI Platform's ReplicaConfig (masterConfig, workerConfig, ...) and AcceleratorConfig. */
static const char *const CONFIG_KEYS[] = {"masterConfig", "workerConfig",
                                          "parameterServerConfig", "evaluatorConfig"};
static const int CONFIG_TYPES[] = {TF_CHIEF, TF_WORKER, TF_PS, TF_EVALUATOR};
static const char *const REPLICA_CONFIG_FIELDS[] = {"acceleratorConfig", "env", "imageUri",
                                                    "tpuTfVersion", "containerCommand",
                                                    "containerArgs", "diskConfig"};
static const char *const ACCELERATOR_FIELDS[] = {"count", "type"};
static const char *const ACCELERATOR_TYPES[] = {
    "ACCELERATOR_TYPE_UNSPECIFIED", "NVIDIA_TESLA_K80", "NVIDIA_TESLA_P4",
    "NVIDIA_TESLA_P100", "NVIDIA_TESLA_V100", "NVIDIA_TESLA_T4", "NVIDIA_TESLA_A100",
    "NVIDIA_A100_80GB", "NVIDIA_L4", "NVIDIA_H100_80GB", "NVIDIA_H100_MEGA_80GB",
    "NVIDIA_H200_141GB"};

static const char *const EXECUTOR_FIELDS[] = {"type", "partition", "account", "timeLimit",
                                              "qos", "extraArgs"};
static const char *const EXECUTOR_NAMES[] = {"local", "slurm"};
static const int EXECUTOR_VALUES[] = {SPEC_EXECUTOR_LOCAL, SPEC_EXECUTOR_SLURM};
/* sbatch options the executor sets itself, and the spec field that sets them */
static const struct {
    const char *opt, *instead;
} SBATCH_OWNED[] = {
    {"--partition", "executor.partition"}, {"-p", "executor.partition"},
    {"--account", "executor.account"},     {"-A", "executor.account"},
    {"--qos", "executor.qos"},             {"-q", "executor.qos"},
    {"--time", "executor.timeLimit"},      {"-t", "executor.timeLimit"},
    {"--job-name", NULL}, {"-J", NULL},    {"--output", NULL}, {"-o", NULL},
    {"--error", NULL}, {"-e", NULL},       {"--open-mode", NULL}, {"--parsable", NULL},
    {"--ntasks", "the replica counts"},    {"-n", "the replica counts"},
    {"--cpus-per-task", "trainingInput.resources cores"},
    {"-c", "trainingInput.resources cores"},
    {"--gpus-per-task", "the acceleratorConfig counts"},
    {"--mem-per-cpu", "trainingInput.resources memory"},
    {"--wrap", NULL}, {"--array", NULL}, {"-a", NULL}, {"--het-job", NULL}};
/* sbatch options that would take the job out of the tuner's hands, and why */
#define WHY_CLUSTERS "sends the job to another cluster, where the tuner's squeue and scancel " \
                     "(which ask this host's cluster) never see it: the job would look gone " \
                     "and run again while it runs; run the tuner where that cluster is the " \
                     "default (SLURM_CONF)"
#define WHY_HOLD "submits the job held: it would wait in the queue until someone releases " \
                 "it (scontrol release), and its trial with it"
#define WHY_WAIT "makes sbatch wait for the job to end, but the tuner gives sbatch 60 s to " \
                 "answer with the job's id"
static const struct {
    const char *opt, *why;
} SBATCH_BREAKS[] = {
    {"--clusters", WHY_CLUSTERS}, {"-M", WHY_CLUSTERS}, {"--hold", WHY_HOLD}, {"-H", WHY_HOLD},
    {"--wait", WHY_WAIT}, {"-W", WHY_WAIT},
    {"--test-only", "only asks Slurm when the job would start, and submits nothing; "
                    "`tuner validate` checks a spec against the cluster"}};
static const char *const RESTART_FIELDS[] = {"maxReplicaRestarts", "maxJobRetries",
                                             "backoffSeconds", "maxBackoffSeconds",
                                             "failOnRepeatedError"};
static const char *const ENV_ITEM_FIELDS[] = {"name", "value"};
#define ENV_MAX_VARS 256          /* variables in one env */
#define ENV_MAX_VALUE (32 * 1024) /* bytes of one value */
/* Bytes of trainingInput as JSON, at most: TF_CONFIG carries it to every replica, one
 * environment variable, which Linux limits to 128 KiB (MAX_ARG_STRLEN); the cluster's
 * addresses and the task go beside it. The env values are inside it, so this also keeps
 * a replica's environment far below ARG_MAX (2 MiB by default). */
#define JOB_JSON_MAX (96 * 1024)

/* Where a field that is unknown at one level belongs, for "it belongs in ..." hints. */
static const struct {
    const char *const *fields;
    size_t n;
    const char *where;
} LEVELS[] = {
    {TOP_FIELDS, NELEM(TOP_FIELDS), "the top level of the spec"},
    {INPUT_FIELDS, NELEM(INPUT_FIELDS), "trainingInput"},
    {HP_FIELDS, NELEM(HP_FIELDS), "trainingInput.hyperparameters"},
    {PARAM_FIELDS, NELEM(PARAM_FIELDS), "each of trainingInput.hyperparameters.params"},
    {COND_FIELDS, NELEM(COND_FIELDS), "each entry of a parameter's conditionalParameterSpecs"},
    {EXECUTOR_FIELDS, NELEM(EXECUTOR_FIELDS), "executor (at the top level)"},
};

/* Why the AI Platform fields accepted for compatibility have no effect here: the
 * spec's notes list the fields a spec gives, once, with these (spec_notes). */
#define WHY_CLOUD "Google Cloud settings; trials run on this machine or the Slurm cluster"
#define WHY_RUNTIME "trials run with this machine's python3 and the packages it has"
#define WHY_MACHINE "machine types; each replica is a process here, and " \
                    "trainingInput.resources says what one needs"
#define WHY_SCHEDULING "the cloud job's queueing and time limits; a trial's limit is " \
                       "trainingInput.trialTimeout"
#define WHY_PACKAGES "trials run trainingInput.command; packages are installed for " \
                     "pythonModule only"
#define WHY_CONTAINER "container settings; replicas run the spec's program as processes"
#define WHY_METADATA "AI Platform's job metadata"

/* The ignored AI Platform fields of trainingInput, with the JSON type each must have
 * (packageUris has an effect with pythonModule: tuner/package.h). */
static const struct {
    const char *name;
    json_type type;
    const char *why;
} IGNORED_FIELDS[] = {
    {"region", JSON_STRING, WHY_CLOUD},          {"runtimeVersion", JSON_STRING, WHY_RUNTIME},
    {"pythonVersion", JSON_STRING, WHY_RUNTIME}, {"masterType", JSON_STRING, WHY_MACHINE},
    {"workerType", JSON_STRING, WHY_MACHINE},
    {"parameterServerType", JSON_STRING, WHY_MACHINE},
    {"evaluatorType", JSON_STRING, WHY_MACHINE}, {"packageUris", JSON_ARRAY, WHY_PACKAGES},
    {"scheduling", JSON_OBJECT, WHY_SCHEDULING}, {"network", JSON_STRING, WHY_CLOUD},
    {"serviceAccount", JSON_STRING, WHY_CLOUD},  {"enableWebAccess", JSON_TRUE, WHY_CLOUD},
    {"encryptionConfig", JSON_OBJECT, WHY_CLOUD},
};

/* ---- Enum names, in the order of the values they map to ---- */

static const char *const TIER_NAMES[] = {"BASIC", "BASIC_GPU", "STANDARD_1", "CUSTOM"};
static const int TIER_VALUES[] = {SPEC_BASIC, SPEC_BASIC_GPU, SPEC_STANDARD_1, SPEC_CUSTOM};

static const char *const GOAL_NAMES[] = {"MAXIMIZE", "MINIMIZE", "GOAL_TYPE_UNSPECIFIED"};
static const int GOAL_VALUES[] = {SPEC_MAXIMIZE, SPEC_MINIMIZE, SPEC_MAXIMIZE};

static const char *const ALGO_NAMES[] = {"ALGORITHM_UNSPECIFIED", "GRID_SEARCH",
                                         "RANDOM_SEARCH"};
static const int ALGO_VALUES[] = {SP_ALGO_UNSPECIFIED, SP_ALGO_GRID, SP_ALGO_RANDOM};

static const char *const TYPE_NAMES[] = {"DOUBLE", "INTEGER", "CATEGORICAL", "DISCRETE"};
static const int TYPE_VALUES[] = {SP_DOUBLE, SP_INTEGER, SP_CATEGORICAL, SP_DISCRETE};

static const char *const SCALE_NAMES[] = {"NONE", "UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE",
                                          "UNIT_REVERSE_LOG_SCALE"};
static const int SCALE_VALUES[] = {SP_SCALE_NONE, SP_LINEAR, SP_LOG, SP_REVERSE_LOG};

/* ---- The parse context: the errors so far and the path being read ---- */

typedef struct ctx {
    spec_errors errs;         /* every problem found so far */
    char *path;               /* JSON path of the value being read, NUL-terminated */
    size_t len, cap;          /* strlen(path), bytes allocated */
    size_t saved[MAX_DEPTH];  /* path lengths to return to, one per push */
    int depth;
} ctx;

static void add_error(spec_errors *e, const char *path, char *message) {
    e->items = tn_xrealloc(e->items, (e->n + 1) * sizeof *e->items);
    e->items[e->n].path = tn_xstrdup(path);
    e->items[e->n].message = message; /* already ours */
    e->items[e->n].line = e->items[e->n].column = 0; /* a YAML file's: spec_read_named */
    e->n++;
}

/* Records a problem at the current path. */
static void fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add_error(&c->errs, c->path ? c->path : "", tn_xvasprintf(fmt, ap));
    va_end(ap);
}

static void append(ctx *c, const char *s) {
    size_t n = strlen(s);
    if (c->len + n + 1 > c->cap) {
        c->cap = (c->len + n + 1) * 2;
        c->path = tn_xrealloc(c->path, c->cap);
    }
    memcpy(c->path + c->len, s, n + 1);
    c->len += n;
}

/* Descends into the field key of the current object; undo with pop(). */
static void push_key(ctx *c, const char *key) {
    assert(c->depth < MAX_DEPTH);
    c->saved[c->depth++] = c->len;
    if (c->len) append(c, ".");
    append(c, key);
}

/* Descends into element i of the current array; undo with pop(). */
static void push_index(ctx *c, size_t i) {
    char buf[32];
    assert(c->depth < MAX_DEPTH);
    c->saved[c->depth++] = c->len;
    snprintf(buf, sizeof buf, "[%zu]", i);
    append(c, buf);
}

static void pop(ctx *c) {
    assert(c->depth > 0);
    c->len = c->saved[--c->depth];
    c->path[c->len] = '\0';
}

/* Extends the path by s ("[2]", ".parameterSpec") without a push, so that levels that
 * nest without bound (conditional parameters) do not use up MAX_DEPTH; returns the
 * mark to give path_cut. Pushes made after it must be popped before the cut. */
static size_t path_extend(ctx *c, const char *s) {
    size_t mark = c->len;
    append(c, s);
    return mark;
}

static void path_cut(ctx *c, size_t mark) {
    assert(mark <= c->len);
    c->len = mark;
    c->path[mark] = '\0';
}

/* Records a problem at the field key of the current object. */
static void fail_at(ctx *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail_at(ctx *c, const char *key, const char *fmt, ...) {
    va_list ap;
    push_key(c, key);
    va_start(ap, fmt);
    add_error(&c->errs, c->path, tn_xvasprintf(fmt, ap));
    va_end(ap);
    pop(c);
}

/* The field key of obj, with the path pushed to it; NULL (and nothing pushed) when it
 * is absent or null (proto3 JSON: null means "not set"). */
static json_t *enter(ctx *c, json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return NULL;
    push_key(c, key);
    return v;
}

/* ---- Describing values in messages ---- */

#define CLIP 60 /* longest piece of a user's string quoted in a message */


/* "a string (\"abc\")", "2.5", "true", "an object": what a value is, for "got ...". */
static char *describe(const json_t *v, char *buf, size_t len) {
    char num[32];
    switch (json_typeof(v)) {
    case JSON_STRING: {
        const char *s = json_string_value(v);
        snprintf(buf, len, "a string (\"%.*s%s\")", CLIP, s, strlen(s) > CLIP ? "..." : "");
        break;
    }
    case JSON_INTEGER: snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
    case JSON_REAL: snprintf(buf, len, "%s", tn_format_double(json_real_value(v), num, sizeof num)); break;
    case JSON_TRUE: snprintf(buf, len, "true"); break;
    case JSON_FALSE: snprintf(buf, len, "false"); break;
    case JSON_NULL: snprintf(buf, len, "null"); break;
    default: snprintf(buf, len, "%s", tn_json_kind(v)); break;
    }
    return buf;
}

static void fail_type(ctx *c, const char *expected, const json_t *v) {
    char got[CLIP + 32];
    fail(c, "expected %s, got %s", expected, describe(v, got, sizeof got));
}

static const char *fmt_num(double v, char *buf, size_t len) {
    return tn_format_double(v, buf, len);
}

/* ---- Readers: each checks one value at the current path; 0 ok, -1 reported ---- */

/* Parses a whole string as a decimal integer (AI Platform's int64 fields are JSON
 * strings); 0 or -1. */
static int parse_integer_string(const char *s, long long *out) {
    if (!(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))))
        return -1;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end) return -1;
    *out = x;
    return 0;
}

/* An integer in [lo, hi]: a JSON integer, a number with an integral value, or (when
 * strings_ok) a string of decimal digits. */
static int read_int(ctx *c, const json_t *v, int strings_ok, long long lo, long long hi,
                    int *out) {
    long long x;
    if (json_is_integer(v)) {
        x = json_integer_value(v);
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d != floor(d) || fabs(d) > MAX_EXACT_INT) {
            fail_type(c, "an integer", v);
            return -1;
        }
        x = (long long)d;
    } else if (json_is_string(v) && strings_ok) {
        if (parse_integer_string(json_string_value(v), &x) != 0) {
            fail_type(c, "an integer (a number or a string of digits)", v);
            return -1;
        }
    } else {
        long long dummy;
        if (json_is_string(v) && parse_integer_string(json_string_value(v), &dummy) == 0) {
            char got[CLIP + 32];
            fail(c, "expected an integer, got %s; write it without quotes",
                 describe(v, got, sizeof got));
        } else {
            fail_type(c, "an integer", v);
        }
        return -1;
    }
    if (x < lo) {
        fail(c, "must be >= %lld, got %lld", lo, x);
        return -1;
    }
    if (x > hi) {
        fail(c, "must be <= %lld, got %lld", hi, x);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int read_number(ctx *c, const json_t *v, double *out) {
    if (!json_is_number(v)) {
        fail_type(c, "a number", v);
        return -1;
    }
    *out = json_number_value(v);
    return 0;
}

static int read_bool(ctx *c, const json_t *v, int *out) {
    if (!json_is_boolean(v)) {
        fail_type(c, "a boolean (true or false)", v);
        return -1;
    }
    *out = json_is_true(v);
    return 0;
}

/* A string; when nonempty, also not "". *out points into v. */
static int read_string(ctx *c, const json_t *v, int nonempty, const char **out) {
    if (!json_is_string(v)) {
        fail_type(c, "a string", v);
        return -1;
    }
    if (nonempty && json_string_length(v) == 0) {
        fail(c, "must not be empty");
        return -1;
    }
    *out = json_string_value(v);
    return 0;
}

/* One of names[0..n), mapped to values[i]; a near miss gets a did-you-mean. */
static int read_enum(ctx *c, const json_t *v, const char *const *names, const int *values,
                     size_t n, int *out) {
    if (!json_is_string(v)) {
        fail_type(c, "a string", v);
        return -1;
    }
    const char *s = json_string_value(v);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = values[i];
            return 0;
        }
    }
    const char *near = tn_closest(s, names, n);
    char list[256] = "";
    for (size_t i = 0; i < n; i++) {
        strncat(list, names[i], sizeof list - strlen(list) - 1);
        if (i + 1 < n) strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    char got[CLIP + 32];
    describe(v, got, sizeof got);
    if (near)
        fail(c, "expected one of %s, got %s (did you mean \"%s\"?)", list, got, near);
    else
        fail(c, "expected one of %s, got %s", list, got);
    return -1;
}

/* An array of strings, copied into *out (count *n); when min_one, at least one. */
static int read_string_array(ctx *c, const json_t *v, int min_one, char ***out, size_t *n) {
    if (!json_is_array(v)) {
        fail_type(c, "an array of strings", v);
        return -1;
    }
    if (min_one && json_array_size(v) == 0) {
        fail(c, "must hold at least one string");
        return -1;
    }
    int ok = 1;
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        if (!json_is_string(e)) {
            push_index(c, i);
            fail_type(c, "a string", e);
            pop(c);
            ok = 0;
        }
    }
    if (!ok) return -1;
    *n = json_array_size(v);
    *out = tn_xcalloc(*n ? *n : 1, sizeof **out);
    json_array_foreach(v, i, e) (*out)[i] = tn_xstrdup(json_string_value(e));
    return 0;
}

/* A protobuf Duration ("600s", "1.5s") or a number of seconds; > 0. */
#define DURATION_MAX 315576000.0 /* seconds in ten years: the longest duration a spec gives */

static int read_duration(ctx *c, const json_t *v, double *out) {
    double d;
    if (json_is_number(v)) {
        d = json_number_value(v);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = strlen(s), i = 0;
        if (s[i] == '-') i++;
        size_t digits = i;
        while (isdigit((unsigned char)s[i])) i++;
        int ok = i > digits;
        if (ok && s[i] == '.') {
            size_t frac = ++i;
            while (isdigit((unsigned char)s[i])) i++;
            ok = i > frac;
        }
        if (!ok || i + 1 != n || s[i] != 's') {
            char got[CLIP + 32];
            fail(c, "expected a duration such as \"600s\" or \"1.5s\", or a number of "
                    "seconds, got %s", describe(v, got, sizeof got));
            return -1;
        }
        d = strtod(s, NULL);
    } else {
        fail_type(c, "a duration such as \"600s\" or a number of seconds", v);
        return -1;
    }
    if (!(d > 0) || isinf(d)) {
        char got[CLIP + 32];
        fail(c, "must be > 0 seconds, got %s", describe(v, got, sizeof got));
        return -1;
    }
    if (d > DURATION_MAX) { /* past it a timer's seconds overflow: a trial timed out at once */
        char got[CLIP + 32];
        fail(c, "must be at most %.0f seconds (ten years), got %s", DURATION_MAX,
             describe(v, got, sizeof got));
        return -1;
    }
    *out = d;
    return 0;
}

/* ---- Unknown and missing fields ---- */

static int in_list(const char *key, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(key, list[i]) == 0) return 1;
    return 0;
}

/* Reports every key of obj (at the current path) that is not in known[0..n). */
static void check_fields(ctx *c, json_t *obj, const char *const *known, size_t n) {
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (in_list(key, known, n)) continue;
        const char *elsewhere = NULL;
        for (size_t l = 0; l < NELEM(LEVELS) && !elsewhere; l++)
            if (LEVELS[l].fields != known && in_list(key, LEVELS[l].fields, LEVELS[l].n))
                elsewhere = LEVELS[l].where;
        const char *near = tn_closest(key, known, n);
        push_key(c, key);
        if (elsewhere) {
            fail(c, "unknown field here (it belongs in %s)", elsewhere);
        } else if (near) {
            fail(c, "unknown field (did you mean \"%s\"?)", near);
        } else if (n <= 5) {
            char list[128] = "";
            for (size_t i = 0; i < n; i++) {
                strncat(list, known[i], sizeof list - strlen(list) - 1);
                if (i + 1 < n) strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            fail(c, "unknown field (expected %s)", list);
        } else {
            fail(c, "unknown field (the fields accepted here are listed in docs/spec.md)");
        }
        pop(c);
    }
}

/* Whether obj has an unknown key that check_fields reported as a misspelling of field:
 * then field's absence is a typo already reported, not a reason for more errors. */
static int misspelled(json_t *obj, const char *field, const char *const *known, size_t n) {
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (in_list(key, known, n)) continue;
        const char *near = tn_closest(key, known, n);
        if (near && strcmp(near, field) == 0) return 1;
    }
    return 0;
}

/* Reports field key of obj as missing, unless a misspelling of it was reported. */
static void missing(ctx *c, json_t *obj, const char *key, const char *const *known,
                    size_t n, const char *what) {
    if (misspelled(obj, key, known, n)) return;
    fail_at(c, key, "required field is missing (%s)", what);
}

/* ---- The levels ---- */

static int valid_job_id(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > 128 || !isalpha((unsigned char)s[0])) return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return 0;
    return 1;
}

/* A jobId-shaped string (jobId, resumePreviousJobId) into *out (copied). */
static int read_job_id(ctx *c, const json_t *v, char **out) {
    const char *s;
    if (read_string(c, v, 0, &s) != 0) return -1;
    if (!valid_job_id(s)) {
        char got[CLIP + 32];
        fail(c, "must start with a letter and hold only letters, digits and underscores "
                "(at most 128 characters), got %s", describe(v, got, sizeof got));
        return -1;
    }
    *out = tn_xstrdup(s);
    return 0;
}

static int valid_flag_name(const char *s) {
    if (!(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (size_t i = 1; s[i]; i++)
        if (!(isalnum((unsigned char)s[i]) || strchr("_.-", s[i]))) return 0;
    return 1;
}

static int valid_python_module(const char *s) {
    int start = 1;
    for (size_t i = 0; s[i]; i++) {
        if (s[i] == '.') {
            if (start) return 0;
            start = 1;
        } else if (isalpha((unsigned char)s[i]) || s[i] == '_' ||
                   (!start && isdigit((unsigned char)s[i]))) {
            start = 0;
        } else {
            return 0;
        }
    }
    return !start;
}

/* Orders indexes of strings by the string, then by the index. */
static const char *const *g_sort_strings;
static int cmp_by_string(const void *a, const void *b) {
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    int c = strcmp(g_sort_strings[i], g_sort_strings[j]);
    return c ? c : (i > j) - (i < j);
}

static int cmp_size(const void *a, const void *b) {
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    return (i > j) - (i < j);
}

/* Reports every categoricalValues[i] that repeats an earlier value, at its own path
 * and naming the first, in index order; strings that are NULL (not strings) are left
 * out. Sorts instead of comparing every pair, so 20,000 values take milliseconds.
 * Returns the number reported. */
static size_t report_duplicates(ctx *c, const char *const *vals, size_t n) {
    size_t *idx = tn_xcalloc(n + 1, sizeof *idx), m = 0;
    for (size_t i = 0; i < n; i++)
        if (vals[i]) idx[m++] = i;
    g_sort_strings = vals;
    qsort(idx, m, sizeof *idx, cmp_by_string);
    size_t *dup = tn_xcalloc(2 * m + 2, sizeof *dup), ndup = 0; /* (index, first) pairs */
    for (size_t k = 1, first = 0; k < m; k++) { /* first: where the run of equals began */
        if (strcmp(vals[idx[first]], vals[idx[k]]) != 0) {
            first = k;
            continue;
        }
        dup[2 * ndup] = idx[k];
        dup[2 * ndup + 1] = idx[first];
        ndup++;
    }
    qsort(dup, ndup, 2 * sizeof *dup, cmp_size); /* by the duplicate's index */
    for (size_t d = 0; d < ndup; d++) {
        const char *s = vals[dup[2 * d]];
        push_index(c, dup[2 * d]);
        fail(c, "duplicate value \"%.*s%s\" (also categoricalValues[%zu])", CLIP, s,
             strlen(s) > CLIP ? "..." : "", dup[2 * d + 1]);
        pop(c);
    }
    free(dup);
    free(idx);
    return ndup;
}

/* The names of every parameter of the tree read so far (children included), for the
 * check that they are unique (report_duplicate_names). */
typedef struct seen_names {
    const char **names; /* (n) points into the JSON */
    char **paths;       /* (n) each parameter's path, ours */
    size_t n, cap;
} seen_names;

static void seen_add(seen_names *s, const char *name, const char *path) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->names = tn_xrealloc(s->names, s->cap * sizeof *s->names);
        s->paths = tn_xrealloc(s->paths, s->cap * sizeof *s->paths);
    }
    s->names[s->n] = name;
    s->paths[s->n++] = tn_xstrdup(path);
}

static void seen_clear(seen_names *s) {
    for (size_t i = 0; i < s->n; i++) free(s->paths[i]);
    free(s->paths);
    free(s->names);
    memset(s, 0, sizeof *s);
}

/* Reports every parameter whose parameterName repeats one read before it, anywhere in
 * the tree, at its parameterName and naming the first (from "params[" on), in the
 * order they were read. Sorts instead of comparing every pair. */
static void report_duplicate_names(ctx *c, const seen_names *s) {
    size_t *idx = tn_xcalloc(s->n + 1, sizeof *idx);
    for (size_t i = 0; i < s->n; i++) idx[i] = i;
    g_sort_strings = s->names;
    qsort(idx, s->n, sizeof *idx, cmp_by_string); /* by name, then by order */
    size_t *dup = tn_xcalloc(2 * s->n + 2, sizeof *dup), ndup = 0; /* (index, first) */
    for (size_t k = 1, first = 0; k < s->n; k++) {
        if (strcmp(s->names[idx[first]], s->names[idx[k]]) != 0) {
            first = k;
            continue;
        }
        dup[2 * ndup] = idx[k];
        dup[2 * ndup + 1] = idx[first];
        ndup++;
    }
    qsort(dup, ndup, 2 * sizeof *dup, cmp_size);
    for (size_t d = 0; d < ndup; d++) {
        const char *path = s->paths[dup[2 * d]], *also = s->paths[dup[2 * d + 1]];
        const char *rel = strstr(also, "params[");
        char *at = tn_xasprintf("%s.parameterName", path);
        add_error(&c->errs, at, tn_xasprintf("duplicate parameterName \"%s\" (also %s)",
                                             s->names[dup[2 * d]], rel ? rel : also));
        free(at);
    }
    free(dup);
    free(idx);
}

/* The condition under which a parameter exists: its parent's index in the space and
 * the parent values it exists for (NULL for a top-level parameter). */
typedef struct cond_in {
    int ok;              /* the parent entered the space and the condition is valid */
    size_t parent;       /* the parent's index in out->space */
    const double *when;  /* nwhen values of the parent (a category as its index) */
    size_t nwhen;
} cond_in;

static void read_conditional(ctx *c, json_t *e, int algorithm, seen_names *seen,
                             tn_spec *out, const char *pname, int ptype, int padded,
                             size_t pindex);

/* The value v of a parameter's categoricalValues or discreteValues, which only a
 * parameter of type `only` has (type: the parameter's, 0 when not known): 1 when it is
 * an array with values to read, else 0 with the problem reported. expected: the JSON
 * it must be ("an array of strings"). */
static int value_array(ctx *c, const json_t *v, int type, int only, const char *expected) {
    if (type && type != only) {
        fail(c, "only for %s parameters (this one is %s)", TYPE_NAMES[only - SP_DOUBLE],
             TYPE_NAMES[type - SP_DOUBLE]);
        return 0;
    }
    if (!json_is_array(v)) {
        fail_type(c, expected, v);
        return 0;
    }
    if (json_array_size(v) == 0) {
        fail(c, "must hold at least one value");
        return 0;
    }
    return 1;
}

/* One entry of params (or a conditional parameter's parameterSpec; cond is then its
 * condition), at the current path; adds it to out->space when valid, then reads its
 * conditionalParameterSpecs. algorithm is 0 when it is not known (absent-but-misspelled
 * or invalid). */
static void read_param(ctx *c, json_t *p, int algorithm, seen_names *seen, tn_spec *out,
                       const cond_in *cond) {
    const size_t NP = NELEM(PARAM_FIELDS);
    int ok = 1;
    json_t *v;
    sp_param sp = {0};
    check_fields(c, p, PARAM_FIELDS, NP);

    /* parameterName */
    const char *name = NULL;
    if ((v = enter(c, p, "parameterName"))) {
        if (read_string(c, v, 1, &name) == 0) {
            if (!valid_flag_name(name)) {
                fail(c, "must start with a letter or underscore and hold only letters, "
                        "digits, '_', '.' and '-' (it becomes the --%.*s%s=VALUE flag)",
                     CLIP, name, strlen(name) > CLIP ? "..." : "");
                name = NULL;
            } else if (strcmp(name, "job-dir") == 0 || strcmp(name, "job_dir") == 0) {
                fail(c, "\"%s\" is reserved: every trial gets --job-dir=DIR", name);
                name = NULL;
            }
        }
        pop(c);
    } else {
        missing(c, p, "parameterName", PARAM_FIELDS, NP, "the name of the --flag");
    }
    if (name) seen_add(seen, name, c->path); /* duplicates: report_duplicate_names */
    if (!name) ok = 0;

    /* type */
    int type = 0;
    if ((v = enter(c, p, "type"))) {
        if (read_enum(c, v, TYPE_NAMES, TYPE_VALUES, NELEM(TYPE_NAMES), &type) != 0) type = 0;
        pop(c);
    } else {
        missing(c, p, "type", PARAM_FIELDS, NP, "DOUBLE, INTEGER, CATEGORICAL or DISCRETE");
    }
    if (!type) ok = 0;
    int ranged = type == SP_DOUBLE || type == SP_INTEGER;
    const char *tname = type ? TYPE_NAMES[type - SP_DOUBLE] : NULL;
    sp.type = type;

    /* scaleType */
    int scale = SP_SCALE_NONE;
    if ((v = enter(c, p, "scaleType"))) {
        if (read_enum(c, v, SCALE_NAMES, SCALE_VALUES, NELEM(SCALE_NAMES), &scale) != 0) {
            ok = 0;
        } else if (type == SP_CATEGORICAL && scale != SP_SCALE_NONE) {
            fail(c, "applies only to DOUBLE, INTEGER and DISCRETE parameters (this one is "
                    "CATEGORICAL)");
            ok = 0;
        }
        pop(c);
    }
    /* DISCRETE: accepted, no effect — each value owns an equal share of [0, 1]. */
    sp.scale = ranged ? scale : SP_SCALE_NONE;

    /* minValue, maxValue */
    static const char *const BOUNDS[2] = {"minValue", "maxValue"};
    double bound[2] = {0, 0};
    int have[2] = {0, 0};
    for (int b = 0; b < 2; b++) {
        if ((v = enter(c, p, BOUNDS[b]))) {
            if (type && !ranged) {
                fail(c, "only for DOUBLE and INTEGER parameters (this one is %s)", tname);
                ok = 0;
            } else if (read_number(c, v, &bound[b]) != 0) {
                ok = 0;
            } else if (type == SP_INTEGER && bound[b] != floor(bound[b])) {
                char num[32];
                fail(c, "must be an integer for an INTEGER parameter, got %s",
                     fmt_num(bound[b], num, sizeof num));
                ok = 0;
            } else if (type == SP_INTEGER &&
                       (fabs(bound[b]) > MAX_EXACT_INT ||
                        (json_is_integer(v) && (json_integer_value(v) > (json_int_t)MAX_EXACT_INT ||
                                                json_integer_value(v) < -(json_int_t)MAX_EXACT_INT)))) {
                /* checked on the JSON integer too: 2^53 + 1 rounds to 2^53 as a double */
                char num[32];
                if (json_is_integer(v))
                    snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                else
                    fmt_num(bound[b], num, sizeof num);
                fail(c, "must be from -2^53 to 2^53 (9007199254740992) for an INTEGER parameter, "
                        "where every integer is exact as a double; got %s",
                     num);
                ok = 0;
            } else {
                have[b] = 1;
            }
            pop(c);
        } else if (ranged) {
            char what[64];
            snprintf(what, sizeof what, "a %s parameter needs one", tname);
            missing(c, p, BOUNDS[b], PARAM_FIELDS, NP, what);
            ok = 0;
        }
    }
    if (have[0] && have[1] && bound[0] > bound[1]) {
        char lo[32], hi[32];
        fail_at(c, "maxValue", "must be >= minValue (%s), got %s",
                fmt_num(bound[0], lo, sizeof lo), fmt_num(bound[1], hi, sizeof hi));
        ok = 0;
    } else if (have[0] && (scale == SP_LOG || scale == SP_REVERSE_LOG) && bound[0] <= 0) {
        char lo[32];
        fail_at(c, "minValue", "%s needs minValue > 0, got %s", SCALE_NAMES[scale],
                fmt_num(bound[0], lo, sizeof lo));
        ok = 0;
    }
    sp.min = bound[0];
    sp.max = bound[1];

    /* categoricalValues */
    const char **cats = NULL;
    size_t ncats = 0;
    if ((v = enter(c, p, "categoricalValues"))) {
        if (!value_array(c, v, type, SP_CATEGORICAL, "an array of strings")) {
            ok = 0;
        } else {
            size_t i;
            json_t *e;
            cats = tn_xcalloc(json_array_size(v), sizeof *cats);
            json_array_foreach(v, i, e) {
                push_index(c, i);
                if (!json_is_string(e)) {
                    fail_type(c, "a string", e);
                    ok = 0;
                } else {
                    cats[i] = json_string_value(e);
                }
                pop(c);
            }
            ncats = json_array_size(v);
            if (report_duplicates(c, cats, ncats) != 0) ok = 0;
        }
        pop(c);
    } else if (type == SP_CATEGORICAL) {
        missing(c, p, "categoricalValues", PARAM_FIELDS, NP,
                "a CATEGORICAL parameter needs its values");
        ok = 0;
    }

    /* discreteValues */
    double *vals = NULL;
    size_t nvals = 0;
    if ((v = enter(c, p, "discreteValues"))) {
        if (!value_array(c, v, type, SP_DISCRETE, "an array of numbers")) {
            ok = 0;
        } else {
            size_t i, last = 0;
            int have_last = 0;
            json_t *e;
            vals = tn_xcalloc(json_array_size(v), sizeof *vals);
            json_array_foreach(v, i, e) {
                push_index(c, i);
                if (read_number(c, e, &vals[i]) != 0) {
                    ok = 0;
                } else {
                    if (have_last && !(vals[i] > vals[last])) {
                        char a[32], b[32];
                        fail(c, "discreteValues must be strictly increasing: %s after %s",
                             fmt_num(vals[i], a, sizeof a), fmt_num(vals[last], b, sizeof b));
                        ok = 0;
                    }
                    last = i;
                    have_last = 1;
                }
                pop(c);
            }
            nvals = json_array_size(v);
        }
        pop(c);
    } else if (type == SP_DISCRETE) {
        missing(c, p, "discreteValues", PARAM_FIELDS, NP,
                "a DISCRETE parameter needs its values");
        ok = 0;
    }

    /* Grid search enumerates values; a DOUBLE range has none to enumerate. */
    if (algorithm == SP_ALGO_GRID && type == SP_DOUBLE) {
        fail_at(c, "type", "grid search cannot enumerate a DOUBLE parameter; use DISCRETE "
                           "values or RANDOM_SEARCH");
        ok = 0;
    }

    int added = 0;
    size_t index = 0;
    if (ok && (!cond || cond->ok)) {
        sp.name = (char *)name;
        sp.values = vals;
        sp.nvalues = nvals;
        sp.categories = (char **)cats;
        sp.ncategories = ncats;
        if (cond) {
            sp.conditional = 1;
            sp.parent = cond->parent;
            sp.when = (double *)cond->when;
            sp.nwhen = cond->nwhen;
        }
        sp_space_add(&out->space, &sp); /* deep copy */
        index = out->space.n - 1;
        added = 1;
    }
    free(cats);
    free(vals);

    /* Its children, after it in the space. A DOUBLE has no values to condition on;
     * its children are still read for their own mistakes. */
    json_t *cps = json_object_get(p, "conditionalParameterSpecs");
    if (cps && !json_is_null(cps)) {
        size_t mark = path_extend(c, ".conditionalParameterSpecs");
        if (!json_is_array(cps)) {
            fail_type(c, "an array of conditional parameters ({\"parameterSpec\": {...}, "
                         "\"parentCategoricalValues\": {\"values\": [...]}})", cps);
        } else {
            if (type == SP_DOUBLE && json_array_size(cps) > 0)
                fail(c, "a DOUBLE parameter has no values for its children to exist under; "
                        "make \"%s\" DISCRETE or INTEGER", name ? name : "it");
            size_t j;
            json_t *e;
            json_array_foreach(cps, j, e) {
                char at[32];
                snprintf(at, sizeof at, "[%zu]", j);
                size_t m = path_extend(c, at);
                if (json_is_object(e))
                    read_conditional(c, e, algorithm, seen, out, name, type, added, index);
                else
                    fail_type(c, "an object (a conditional parameter: {\"parameterSpec\": "
                                 "{...}, \"parent...Values\": {\"values\": [...]}})", e);
                path_cut(c, m);
            }
        }
        path_cut(c, mark);
    }
}

/* A list of up to 8 of a parameter's values for messages ("sgd, adam",
 * "64, 128, 256", "1 to 8"), into buf. */
static const char *feasible_list(const sp_param *p, char *buf, size_t len) {
    char num[32], lo[32], hi[32];
    size_t n = p->type == SP_CATEGORICAL ? p->ncategories : p->nvalues;
    buf[0] = '\0';
    if (p->type == SP_INTEGER) {
        snprintf(buf, len, "%s to %s", fmt_num(p->min, lo, sizeof lo),
                 fmt_num(p->max, hi, sizeof hi));
        return buf;
    }
    for (size_t i = 0; i < n && i < 8; i++) {
        const char *s = p->type == SP_CATEGORICAL ? p->categories[i]
                                                  : fmt_num(p->values[i], num, sizeof num);
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%.*s", i ? ", " : "", CLIP, s);
    }
    if (n > 8) strncat(buf, ", ...", len - strlen(buf) - 1);
    return buf;
}

static int cmp_double_index(const void *a, const void *b) {
    const double *x = a, *y = b; /* (value, index) pairs */
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* A condition, {"values": [...]}, of the kind that takes a parent of type kind (at the
 * current path). parent is the parent when it entered the space (its values are then
 * checked against what it can take), else NULL. On success *when (yours) holds the
 * values as the parent's values (a category as its index) and returns 0. */
static int read_condition(ctx *c, const json_t *v, int kind, const sp_param *parent,
                          const char *pname, double **when, size_t *nwhen) {
    if (!json_is_object(v)) {
        fail_type(c, "an object: {\"values\": [...]}", v);
        return -1;
    }
    check_fields(c, (json_t *)v, CONDITION_FIELDS, NELEM(CONDITION_FIELDS));
    json_t *vals = enter(c, (json_t *)v, "values");
    if (!vals) {
        missing(c, (json_t *)v, "values", CONDITION_FIELDS, NELEM(CONDITION_FIELDS),
                "the parent's values the parameter exists for");
        return -1;
    }
    size_t n = json_is_array(vals) ? json_array_size(vals) : 0;
    if (!json_is_array(vals)) {
        char what[64];
        snprintf(what, sizeof what, "an array of %s values", kind == SP_CATEGORICAL ? "string"
                                                            : kind == SP_INTEGER ? "integer"
                                                                                 : "number");
        fail_type(c, what, vals);
        pop(c);
        return -1;
    }
    if (n == 0) {
        fail(c, "must hold at least one value of the parent");
        pop(c);
        return -1;
    }
    int ok = 1;
    double *w = tn_xcalloc(n, sizeof *w);
    size_t i;
    json_t *e;
    char list[512], got[CLIP + 32];
    json_array_foreach(vals, i, e) {
        push_index(c, i);
        if (kind == SP_CATEGORICAL) {
            if (!json_is_string(e)) {
                fail_type(c, "a string", e);
                ok = 0;
            } else if (parent) {
                const char *s = json_string_value(e);
                size_t k = 0;
                while (k < parent->ncategories && strcmp(parent->categories[k], s) != 0) k++;
                if (k < parent->ncategories) {
                    w[i] = (double)k;
                } else {
                    const char *near = tn_closest(s, (const char *const *)parent->categories,
                                                  parent->ncategories);
                    fail(c, "%s is not one of the categoricalValues of \"%s\" (%s)%s%s%s",
                         describe(e, got, sizeof got), pname,
                         feasible_list(parent, list, sizeof list), near ? " (did you mean \"" : "",
                         near ? near : "", near ? "\"?)" : "");
                    ok = 0;
                }
            }
        } else {
            double x = 0;
            long long ix;
            int is_num = 0;
            if (kind == SP_INTEGER && json_is_string(e) &&
                parse_integer_string(json_string_value(e), &ix) == 0 &&
                llabs(ix) <= (long long)MAX_EXACT_INT) {
                x = (double)ix; /* int64 values are strings in proto3 JSON */
                is_num = 1;
            } else if (json_is_number(e)) {
                x = json_number_value(e);
                is_num = kind != SP_INTEGER || (x == floor(x) && fabs(x) <= MAX_EXACT_INT);
            }
            if (!is_num) {
                fail_type(c, kind == SP_INTEGER ? "an integer (a number or a string of digits)"
                                                : "a number", e);
                ok = 0;
            } else if (parent && !sp_is_legal(parent, x)) {
                fail(c, "%s is not a value \"%s\" can take (%s%s)", describe(e, got, sizeof got),
                     pname, kind == SP_INTEGER ? "" : "discreteValues: ",
                     feasible_list(parent, list, sizeof list));
                ok = 0;
            } else {
                w[i] = x + 0.0;
            }
        }
        pop(c);
    }
    /* The same value twice: by sorting (value, index) pairs. Categories without a known
     * parent have no values yet; they are left out. */
    if (ok && (parent || kind != SP_CATEGORICAL)) {
        double *pairs = tn_xmalloc(2 * n * sizeof *pairs);
        for (i = 0; i < n; i++) {
            pairs[2 * i] = w[i];
            pairs[2 * i + 1] = (double)i;
        }
        qsort(pairs, n, 2 * sizeof *pairs, cmp_double_index);
        for (size_t k = 1, first = 0; k < n; k++) {
            if (pairs[2 * k] != pairs[2 * first]) {
                first = k;
                continue;
            }
            push_index(c, (size_t)pairs[2 * k + 1]);
            fail(c, "the same value as values[%zu]", (size_t)pairs[2 * first + 1]);
            pop(c);
            ok = 0;
        }
        free(pairs);
    }
    pop(c);
    if (!ok) {
        free(w);
        return -1;
    }
    *when = w;
    *nwhen = n;
    return 0;
}

/* Whether obj has an unknown key that is a misspelling of one of the conditions. */
static int condition_misspelled(json_t *obj) {
    for (size_t k = 0; k < NCONDITIONS; k++)
        if (misspelled(obj, COND_FIELDS[1 + k], COND_FIELDS, NELEM(COND_FIELDS))) return 1;
    return 0;
}

/* One entry of the conditionalParameterSpecs of the parameter pname (type ptype, 0
 * when unknown; added: it entered the space at pindex), at the current path: the
 * condition that matches the parent's type, then the parameter itself. */
static void read_conditional(ctx *c, json_t *e, int algorithm, seen_names *seen,
                             tn_spec *out, const char *pname, int ptype, int padded,
                             size_t pindex) {
    const size_t NC = NELEM(COND_FIELDS);
    /* A parameter's own fields written here, not in parameterSpec, get their own hint;
     * the rest the usual unknown-field messages. */
    json_t *rest = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(e, key, v) {
        if (in_list(key, PARAM_FIELDS, NELEM(PARAM_FIELDS)))
            fail_at(c, key, "unknown field here (a conditional parameter's own fields go in "
                            "its parameterSpec)");
        else
            json_object_set(rest, key, v);
    }
    check_fields(c, rest, COND_FIELDS, NC);
    json_decref(rest);
    if (!pname) pname = "the parent";

    /* The condition: exactly one, of the kind of the parent's type (a DOUBLE parent
     * was reported: its children never enter the space). */
    int want = -1, given = -1, cond_ok = ptype != SP_DOUBLE;
    for (int k = 0; k < NCONDITIONS; k++)
        if (CONDITION_TYPES[k] == ptype) want = k;
    double *when = NULL;
    size_t nwhen = 0;
    int present[NCONDITIONS];
    for (int k = 0; k < NCONDITIONS; k++) {
        v = json_object_get(e, COND_FIELDS[1 + k]);
        present[k] = v && !json_is_null(v);
        if (present[k] && (given < 0 || k == want)) given = k; /* the right kind first */
    }
    for (int k = 0; k < NCONDITIONS; k++) {
        if (present[k] && k != given) {
            fail_at(c, COND_FIELDS[1 + k], "give one condition (%s is given too)",
                    COND_FIELDS[1 + given]);
            cond_ok = 0;
        }
    }
    if (given >= 0) {
        v = enter(c, e, COND_FIELDS[1 + given]);
        if (want >= 0 && given != want) {
            fail(c, "\"%s\" is %s: the condition on its values is %s", pname,
                 TYPE_NAMES[ptype - SP_DOUBLE], COND_FIELDS[1 + want]);
            cond_ok = 0;
        } else {
            /* (the space may grow under a later child: the parent is looked up here) */
            const sp_param *parent =
                padded && ptype != SP_DOUBLE ? &out->space.params[pindex] : NULL;
            if (read_condition(c, v, CONDITION_TYPES[given], parent, pname, &when, &nwhen) != 0)
                cond_ok = 0;
        }
        pop(c);
    }
    if (given < 0) {
        cond_ok = 0;
        if (want >= 0) {
            char what[CLIP + 64];
            snprintf(what, sizeof what, "the values of \"%.*s\" the parameter exists for", CLIP,
                     pname);
            missing(c, e, COND_FIELDS[1 + want], COND_FIELDS, NC, what);
        } else if (ptype != SP_DOUBLE && !condition_misspelled(e)) {
            fail(c, "needs a condition: parentDiscreteValues, parentIntValues or "
                    "parentCategoricalValues, the parent's values the parameter exists for");
        }
    }

    /* The parameter itself. */
    json_t *ps = json_object_get(e, "parameterSpec");
    if (!ps || json_is_null(ps)) {
        missing(c, e, "parameterSpec", COND_FIELDS, NC,
                "the conditional parameter: {\"parameterName\": ..., \"type\": ...}");
    } else {
        size_t m = path_extend(c, ".parameterSpec");
        if (json_is_object(ps)) {
            cond_in ci = {cond_ok && padded, pindex, when, nwhen};
            read_param(c, ps, algorithm, seen, out, &ci);
        } else {
            fail_type(c, "an object (a parameter)", ps);
        }
        path_cut(c, m);
    }
    free(when);
}

/* The extension earlyStopping: {"policy": "median"|"asha"|"hyperband"|"none", options}.
 * Its presence turns early stopping on (median unless a policy is named). */
static void read_early_stopping(ctx *c, json_t *es, tn_spec *out) {
    es_config *e = &out->early_stopping;
    json_t *v;
    check_fields(c, es, ES_FIELDS, NELEM(ES_FIELDS));
    e->policy = out->nmetrics > 1 ? ES_DOMINANCE : ES_DEFAULT_POLICY;
    if ((v = enter(c, es, "policy"))) {
        const char *name;
        if (read_string(c, v, 1, &name) == 0) {
            int policy = es_policy_parse(name);
            if (policy < 0)
                fail(c, "expected one of \"median\", \"asha\", \"hyperband\", \"dominance\", "
                        "\"none\", got \"%s\"", name);
            else
                e->policy = policy;
        }
        pop(c);
    }
    static const struct {
        const char *field;
        long long lo;
    } ints[] = {{"minTrials", 1}, {"minStep", 0}, {"gracePeriod", 0}, {"reductionFactor", 2},
                {"maxStep", 0}};
    int known[NELEM(ints)]; /* valid, or absent and not misspelled: the rules may use it */
    for (size_t i = 0; i < NELEM(ints); i++) {
        known[i] = !misspelled(es, ints[i].field, ES_FIELDS, NELEM(ES_FIELDS));
        if (!(v = enter(c, es, ints[i].field))) continue;
        int x;
        known[i] = read_int(c, v, 0, ints[i].lo, INT_MAX, &x) == 0;
        if (known[i]) {
            switch (i) {
            case 0: e->min_trials = x; break;
            case 1: e->min_step = x; break;
            case 2: e->grace_period = x; break;
            case 3: e->reduction_factor = x; break;
            default: e->max_step = x; break;
            }
        }
        pop(c);
    }
    if ((v = enter(c, es, "useRunningAverage"))) {
        read_bool(c, v, &e->running_average);
        pop(c);
    }
    if (e->policy != ES_HYPERBAND || !known[4]) return; /* a bad maxStep said so already */
    if (e->max_step <= 0)
        fail_at(c, "maxStep",
                "hyperband needs maxStep, the step at which trials end (its brackets are "
                "built from it)");
    else if (known[2] && e->max_step <= e->grace_period)
        fail_at(c, "maxStep",
                "hyperband needs maxStep, the step at which trials end, above gracePeriod "
                "(%lld); got %lld",
                (long long)e->grace_period, (long long)e->max_step);
}

/* The extension bayesianOptimization: {"initialTrials": N, "acquisition": "LOG_EI" |
 * "UCB", "ucbBeta": B}, the options of ALGORITHM_UNSPECIFIED's sampler. */
static void read_bayesian(ctx *c, json_t *bo, tn_spec *out) {
    json_t *v;
    check_fields(c, bo, BO_FIELDS, NELEM(BO_FIELDS));
    if ((v = enter(c, bo, "initialTrials"))) {
        read_int(c, v, 0, 1, 100000, &out->bayesian.initial_trials);
        pop(c);
    }
    if ((v = enter(c, bo, "acquisition"))) {
        read_enum(c, v, ACQ_NAMES, ACQ_VALUES, NELEM(ACQ_NAMES), &out->bayesian.acquisition);
        pop(c);
    }
    if ((v = enter(c, bo, "ucbBeta"))) {
        double beta;
        if (read_number(c, v, &beta) == 0) {
            if (!(beta > 0 && beta < 1e6))
                fail(c, "must be > 0, got %g", beta);
            else
                out->bayesian.ucb_beta = beta;
        }
        pop(c);
    }
}

/* Sets the study's metrics to the one of metric_tag and goal. */
static void single_metric(tn_spec *out) {
    for (size_t i = 0; i < out->nmetrics; i++) free(out->metrics[i].id);
    out->metrics = tn_xrealloc(out->metrics, sizeof *out->metrics);
    out->metrics[0] = (spec_metric){.id = tn_xstrdup(out->metric_tag), .goal = out->goal};
    out->nmetrics = 1;
}

/* Whether name is a key the hypertune file protocol keeps for itself (docs/metrics.md):
 * no record can report it as a metric, so a study measured by it could never succeed. */
static int reserved_metric(const char *name) {
    static const char *const RESERVED[] = {"checkpoint_path", "global_step", "timestamp",
                                           "trial"};
    for (size_t i = 0; i < NELEM(RESERVED); i++)
        if (strcmp(name, RESERVED[i]) == 0) return 1;
    return 0;
}

static void fail_reserved_metric(ctx *c, const char *name) {
    fail(c, "\"%s\" is a key the hypertune file keeps for itself (checkpoint_path, "
            "global_step, timestamp, trial): no trial can report it as a metric; name the "
            "metric otherwise",
         name);
}

/* Reports a metric's name with a control character (C0, DEL, or C1 in UTF-8: one that
 * a terminal showing it would obey), which no program means as a name; 1 then. */
static int fail_control_metric(ctx *c, const char *id) {
    const unsigned char *p = (const unsigned char *)id;
    while (*p && *p >= 0x20 && *p != 0x7f && !(p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F))
        p++;
    if (!*p) return 0;
    fail(c, "must not contain a control character (byte 0x%02x after \"%.*s\"): it names "
            "a key of the hypertune file",
         *p, (int)((const char *)p - id < CLIP ? (const char *)p - id : CLIP), id);
    return 1;
}

/* One MetricSpec, {"metricId": "loss", "goal": "MINIMIZE"}, into *m (its id copied);
 * -1 when it has a problem (reported). */
static int read_metric(ctx *c, json_t *obj, spec_metric *m) {
    static const char *const GOALS[] = {"MAXIMIZE", "MINIMIZE"};
    static const int GOAL_OF[] = {SPEC_MAXIMIZE, SPEC_MINIMIZE};
    const size_t NM = NELEM(METRIC_FIELDS);
    size_t before = c->errs.n;
    json_t *v;
    const char *id = NULL;
    check_fields(c, obj, METRIC_FIELDS, NM);
    if ((v = enter(c, obj, "metricId"))) {
        if (read_string(c, v, 1, &id) == 0 && reserved_metric(id)) fail_reserved_metric(c, id);
        else if (id && fail_control_metric(c, id)) id = NULL;
        pop(c);
    } else {
        missing(c, obj, "metricId", METRIC_FIELDS, NM, "the metric's name in the hypertune file");
    }
    if ((v = enter(c, obj, "goal"))) {
        if (json_is_string(v) && strcmp(json_string_value(v), "GOAL_TYPE_UNSPECIFIED") == 0)
            fail(c, "must be MAXIMIZE or MINIMIZE (a metric of \"metrics\" names its goal), "
                    "got GOAL_TYPE_UNSPECIFIED");
        else
            read_enum(c, v, GOALS, GOAL_OF, NELEM(GOALS), &m->goal);
        pop(c);
    } else {
        missing(c, obj, "goal", METRIC_FIELDS, NM, "MAXIMIZE or MINIMIZE");
    }
    if (c->errs.n != before || !id) return -1;
    m->id = tn_xstrdup(id);
    return 0;
}

/* Vertex AI's "metrics": 1 ..= SPEC_MAX_METRICS MetricSpecs with distinct metricIds,
 * into out->metrics, the first also into metric_tag and goal. */
static void read_metrics(ctx *c, json_t *v, tn_spec *out) {
    if (!json_is_array(v)) {
        fail_type(c, "an array of metrics: [{\"metricId\": \"loss\", \"goal\": \"MINIMIZE\"}]", v);
        return;
    }
    size_t n = json_array_size(v);
    if (n == 0) {
        fail(c, "must hold at least one metric");
        return;
    }
    if (n > SPEC_MAX_METRICS) {
        fail(c, "must hold at most %d metrics, got %zu", SPEC_MAX_METRICS, n);
        return;
    }
    spec_metric *ms = tn_xcalloc(n, sizeof *ms);
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(v, i);
        push_index(c, i);
        if (!json_is_object(m)) {
            fail_type(c, "an object: {\"metricId\": \"loss\", \"goal\": \"MINIMIZE\"}", m);
            ok = 0;
        } else if (read_metric(c, m, &ms[i]) != 0) {
            ok = 0;
        } else {
            for (size_t j = 0; j < i; j++) {
                if (ms[j].id && strcmp(ms[j].id, ms[i].id) == 0) {
                    fail_at(c, "metricId", "\"%.*s\" is already metrics[%zu]'s; each metric "
                                           "is named once", CLIP, ms[i].id, j);
                    ok = 0;
                    break;
                }
            }
        }
        pop(c);
    }
    if (!ok) {
        for (size_t i = 0; i < n; i++) free(ms[i].id);
        free(ms);
        return;
    }
    for (size_t i = 0; i < out->nmetrics; i++) free(out->metrics[i].id);
    free(out->metrics);
    out->metrics = ms;
    out->nmetrics = n;
    free(out->metric_tag);
    out->metric_tag = tn_xstrdup(ms[0].id);
    out->goal = ms[0].goal;
}

static void read_hyperparameters(ctx *c, json_t *hp, tn_spec *out) {
    const size_t NH = NELEM(HP_FIELDS);
    json_t *v;
    check_fields(c, hp, HP_FIELDS, NH);

    if ((v = enter(c, hp, "goal"))) {
        read_enum(c, v, GOAL_NAMES, GOAL_VALUES, NELEM(GOAL_NAMES), &out->goal);
        pop(c);
    }

    /* maxTrials and maxParallelTrials: the cross check needs both known. */
    int trials_known = 1, parallel_known = 1;
    if ((v = enter(c, hp, "maxTrials"))) {
        trials_known = read_int(c, v, 0, 1, INT_MAX, &out->max_trials) == 0;
        pop(c);
    } else {
        trials_known = !misspelled(hp, "maxTrials", HP_FIELDS, NH);
    }
    if ((v = enter(c, hp, "maxParallelTrials"))) {
        parallel_known = read_int(c, v, 0, 1, INT_MAX, &out->max_parallel_trials) == 0;
        pop(c);
    } else {
        parallel_known = !misspelled(hp, "maxParallelTrials", HP_FIELDS, NH);
    }
    if (trials_known && parallel_known && out->max_parallel_trials > out->max_trials)
        fail_at(c, "maxParallelTrials", "must be <= maxTrials (%d), got %d", out->max_trials,
                out->max_parallel_trials);

    if ((v = enter(c, hp, "maxFailedTrials"))) {
        read_int(c, v, 0, 0, INT_MAX, &out->max_failed_trials);
        pop(c);
    }
    if ((v = enter(c, hp, "hyperparameterMetricTag"))) {
        const char *tag;
        if (read_string(c, v, 1, &tag) == 0) {
            if (reserved_metric(tag)) fail_reserved_metric(c, tag);
            else fail_control_metric(c, tag);
            free(out->metric_tag);
            out->metric_tag = tn_xstrdup(tag);
        }
        pop(c);
    }
    single_metric(out);
    if ((v = enter(c, hp, "metrics"))) {
        /* (null means not set: proto3 JSON) */
        json_t *tag = json_object_get(hp, "hyperparameterMetricTag"), *goal = json_object_get(hp, "goal");
        const char *other = tag && !json_is_null(tag)   ? "hyperparameterMetricTag"
                            : goal && !json_is_null(goal) ? "goal"
                                                          : NULL;
        if (other)
            fail(c, "give either metrics (Vertex AI) or hyperparameterMetricTag and goal (AI "
                    "Platform, one metric), not both: this spec has metrics and %s", other);
        else
            read_metrics(c, v, out);
        pop(c);
    }
    if ((v = enter(c, hp, "enableTrialEarlyStopping"))) {
        read_bool(c, v, &out->enable_early_stopping);
        pop(c);
    }
    /* enableTrialEarlyStopping alone: the default rule, dominance with several metrics */
    if (out->enable_early_stopping)
        out->early_stopping.policy = out->nmetrics > 1 ? ES_DOMINANCE : ES_DEFAULT_POLICY;
    if ((v = enter(c, hp, "earlyStopping"))) {
        if (json_is_object(v))
            read_early_stopping(c, v, out);
        else
            fail_type(c, "an object: {\"policy\": \"median\", ...}", v);
        pop(c);
    }
    if ((v = enter(c, hp, "resumePreviousJobId"))) {
        if (read_job_id(c, v, &out->resume_previous_job_id) == 0 && out->job_id &&
            strcmp(out->job_id, out->resume_previous_job_id) == 0)
            fail(c, "must name an earlier study, not this one (\"%s\")", out->job_id);
        pop(c);
    }
    int algorithm = SP_ALGO_UNSPECIFIED;
    if ((v = enter(c, hp, "algorithm"))) {
        if (read_enum(c, v, ALGO_NAMES, ALGO_VALUES, NELEM(ALGO_NAMES), &out->algorithm) != 0)
            algorithm = 0;
        else
            algorithm = out->algorithm;
        pop(c);
    } else if (misspelled(hp, "algorithm", HP_FIELDS, NH)) {
        algorithm = 0;
    }

    if ((v = enter(c, hp, "bayesianOptimization"))) {
        if (!json_is_object(v))
            fail_type(c, "an object: {\"initialTrials\": 10, ...}", v);
        else if (algorithm && algorithm != SP_ALGO_UNSPECIFIED)
            fail(c, "applies to ALGORITHM_UNSPECIFIED (Bayesian optimisation) only, not to "
                    "%s", algorithm == SP_ALGO_GRID ? "GRID_SEARCH" : "RANDOM_SEARCH");
        else
            read_bayesian(c, v, out);
        pop(c);
    }

    if ((v = enter(c, hp, "params"))) {
        if (!json_is_array(v)) {
            fail_type(c, "an array of parameters", v);
        } else if (json_array_size(v) == 0) {
            fail(c, "must hold at least one parameter");
        } else {
            seen_names seen = {0};
            size_t i;
            json_t *p;
            json_array_foreach(v, i, p) {
                push_index(c, i);
                if (json_is_object(p))
                    read_param(c, p, algorithm, &seen, out, NULL);
                else
                    fail_type(c, "an object (a parameter)", p);
                pop(c);
            }
            report_duplicate_names(c, &seen);
            seen_clear(&seen);
        }
        pop(c);
    } else {
        missing(c, hp, "params", HP_FIELDS, NH, "a non-empty array of parameters to tune");
    }
    out->early_stopping.maximize = out->goal == SPEC_MAXIMIZE;
}

/* Memory: a number of MiB, or a string with Slurm's units "512M", "4G", "1T" (binary;
 * a bare number in a string is MiB). */
static int read_memory(ctx *c, const json_t *v, int *out_mb) {
    double mb;
    if (json_is_integer(v)) {
        mb = (double)json_integer_value(v);
    } else if (json_is_string(v)) {
        /* digits, an optional fraction, an optional unit: K, M, G, T in either case,
         * alone or with B or i ("4G", "4g", "4GB", "4Gi"); nothing else (no signs,
         * exponents, hex) */
        const char *s = json_string_value(v), *p = s;
        double x = -1, unit = -1;
        while (isdigit((unsigned char)*p)) p++;
        if (p > s && *p == '.' && isdigit((unsigned char)p[1]))
            for (p++; isdigit((unsigned char)*p);) p++;
        if (p > s) {
            x = strtod(s, NULL); /* the digits just checked */
            static const char units[] = "KMGT";
            const char *u = *p ? strchr(units, toupper((unsigned char)*p)) : NULL;
            if (!*p)
                unit = 1;
            else if (u && (!p[1] || (!p[2] && strchr("BbIi", p[1]))))
                unit = pow(1024.0, (double)(u - units) - 1);
        }
        if (unit < 0) {
            char got[CLIP + 32];
            fail(c, "expected an amount of memory such as \"4G\" or \"512M\" (or a number of "
                    "MiB), got %s", describe(v, got, sizeof got));
            return -1;
        }
        mb = ceil(x * unit);
    } else {
        fail_type(c, "an amount of memory such as \"4G\" or a number of MiB", v);
        return -1;
    }
    if (mb < 1 || mb > (double)INT_MAX) {
        fail(c, "must be from 1 MiB to %d MiB", INT_MAX);
        return -1;
    }
    *out_mb = (int)mb;
    return 0;
}

static void read_resources(ctx *c, json_t *res, int *gpus_given, tn_spec *out) {
    static const int TYPES[] = {TF_CHIEF, TF_CHIEF, TF_WORKER, TF_PS, TF_EVALUATOR};
    check_fields(c, res, RESOURCE_KEYS, NELEM(RESOURCE_KEYS));
    for (size_t k = 0; k < NELEM(RESOURCE_KEYS); k++) {
        json_t *r, *v;
        if (!(r = enter(c, res, RESOURCE_KEYS[k]))) continue;
        spec_resources *sr = &out->resources[TYPES[k]];
        if (k == 1 && json_object_get(res, "chief") && !json_is_null(json_object_get(res, "chief"))) {
            fail(c, "the same replica as \"chief\" (master is its legacy name); give one");
        } else if (!json_is_object(r)) {
            fail_type(c, "an object such as {\"cores\": 4, \"gpus\": 0}", r);
        } else {
            check_fields(c, r, RESOURCE_FIELDS, NELEM(RESOURCE_FIELDS));
            if ((v = enter(c, r, "cores"))) {
                read_int(c, v, 0, 1, INT_MAX, &sr->cores);
                pop(c);
            }
            if ((v = enter(c, r, "gpus"))) {
                if (read_int(c, v, 0, 0, INT_MAX, &sr->gpus) == 0) gpus_given[TYPES[k]] = 1;
                pop(c);
            }
            if ((v = enter(c, r, "memory"))) {
                read_memory(c, v, &sr->memory_mb);
                pop(c);
            }
        }
        pop(c);
    }
}

/* Sets NAME=VALUE in the NULL-terminated list *env, replacing an earlier NAME. */
static void env_set(char ***env, const char *name, const char *value) {
    size_t n = 0, len = strlen(name);
    for (; *env && (*env)[n]; n++) {
        if (strncmp((*env)[n], name, len) == 0 && (*env)[n][len] == '=') {
            free((*env)[n]);
            (*env)[n] = tn_xasprintf("%s=%s", name, value);
            return;
        }
    }
    *env = tn_xrealloc(*env, (n + 2) * sizeof **env);
    (*env)[n] = tn_xasprintf("%s=%s", name, value);
    (*env)[n + 1] = NULL;
}

/* One variable of an env at the current path: a name a shell would take, not one of
 * the contract's (which the tuner sets for every replica), and a string value. */
static void read_env_var(ctx *c, const char *name, const json_t *value, char ***env) {
    const char *what = NULL;
    int ok = (isalpha((unsigned char)name[0]) || name[0] == '_') && strlen(name) <= 255;
    for (const char *p = name; ok && *p; p++) ok = isalnum((unsigned char)*p) || *p == '_';
    if (!ok) {
        fail(c, "'%.*s' is not a variable name: letters, digits and '_', not starting with a "
                "digit", CLIP, name);
        return;
    }
    if (ex_contract_var(name, &what)) {
        fail(c, "%s is the tuner's to set for every replica (%s, by the trial-job contract); "
                "it cannot be set here%s",
             name, what,
             strstr(what, "cores") ? ": give the replicas' cores in trainingInput.resources"
             : strstr(what, "gpus") ? ": give the replicas' GPUs in trainingInput.resources"
                                    : "");
        return;
    }
    if (!json_is_string(value)) {
        char got[CLIP + 32];
        fail(c, "the value of %s must be a string (quote numbers: \"1\"), got %s", name,
             describe(value, got, sizeof got));
        return;
    }
    if (json_string_length(value) > ENV_MAX_VALUE) {
        fail(c, "the value of %s is %zu bytes, more than %d", name, json_string_length(value),
             ENV_MAX_VALUE);
        return;
    }
    env_set(env, name, json_string_value(value));
}

/* An env at the current path: {"NAME": "value", ...}, or Vertex AI's containerSpec form
 * [{"name": "NAME", "value": "value"}, ...] (a name given twice is an error there),
 * merged into *env. */
static void read_env(ctx *c, json_t *v, char ***env) {
    size_t n = json_is_object(v) ? json_object_size(v) : json_is_array(v) ? json_array_size(v) : 0;
    if (!json_is_object(v) && !json_is_array(v)) {
        fail_type(c, "an object such as {\"TF_USE_LEGACY_KERAS\": \"1\"} or a list such as "
                     "[{\"name\": \"TF_USE_LEGACY_KERAS\", \"value\": \"1\"}]", v);
        return;
    }
    if (n > ENV_MAX_VARS) {
        fail(c, "%zu variables, more than %d", n, ENV_MAX_VARS);
        return;
    }
    if (json_is_object(v)) {
        const char *name;
        json_t *value;
        json_object_foreach(v, name, value) {
            push_key(c, name);
            read_env_var(c, name, value, env);
            pop(c);
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i), *name, *value;
        push_index(c, i);
        if (!json_is_object(item)) {
            fail_type(c, "an object {\"name\": ..., \"value\": ...}", item);
        } else {
            check_fields(c, item, ENV_ITEM_FIELDS, NELEM(ENV_ITEM_FIELDS));
            name = json_object_get(item, "name");
            value = json_object_get(item, "value");
            int twice = 0;
            for (size_t k = 0; k < i && json_is_string(name); k++)
                twice |= json_equal(json_object_get(json_array_get(v, k), "name"), name);
            if (!json_is_string(name))
                fail_at(c, "name", "required: the variable's name, a string");
            else if (!value)
                fail_at(c, "value", "required: the variable's value, a string");
            else if (twice)
                fail_at(c, "name", "%.*s is given twice", CLIP, json_string_value(name));
            else
                read_env_var(c, json_string_value(name), value, env);
        }
        pop(c);
    }
}

/* AI Platform's ReplicaConfig of one type: acceleratorConfig {count, type} gives the
 * replica's GPUs (agreeing with resources.TYPE.gpus when both are given), env (an
 * extension, as Vertex AI's containerSpec has it) its variables over the spec's env;
 * the container fields are accepted and ignored (trials run the spec's command). */
static void read_replica_config(ctx *c, json_t *rc, int type, const int *gpus_given,
                                tn_spec *out) {
    json_t *v, *a;
    check_fields(c, rc, REPLICA_CONFIG_FIELDS, NELEM(REPLICA_CONFIG_FIELDS));
    if ((v = enter(c, rc, "env"))) {
        read_env(c, v, &out->env[type]);
        pop(c);
    }
    for (size_t k = 2; k < NELEM(REPLICA_CONFIG_FIELDS); k++) { /* ignored: type-checked */
        if (!(v = enter(c, rc, REPLICA_CONFIG_FIELDS[k]))) continue;
        int want_array = !strcmp(REPLICA_CONFIG_FIELDS[k], "containerCommand") ||
                         !strcmp(REPLICA_CONFIG_FIELDS[k], "containerArgs");
        int want_object = !strcmp(REPLICA_CONFIG_FIELDS[k], "diskConfig");
        if (want_array && !json_is_array(v)) fail_type(c, "an array of strings", v);
        else if (want_object && !json_is_object(v)) fail_type(c, "an object", v);
        else if (!want_array && !want_object && !json_is_string(v)) fail_type(c, "a string", v);
        pop(c);
    }
    if (!(a = enter(c, rc, "acceleratorConfig"))) return;
    if (!json_is_object(a)) {
        fail_type(c, "an object such as {\"count\": \"1\", \"type\": \"NVIDIA_TESLA_T4\"}", a);
        pop(c);
        return;
    }
    check_fields(c, a, ACCELERATOR_FIELDS, NELEM(ACCELERATOR_FIELDS));
    if ((v = enter(c, a, "type"))) {
        const char *t = json_is_string(v) ? json_string_value(v) : NULL;
        if (t && !strncmp(t, "TPU_", 4)) {
            fail(c, "%s: TPUs are not supported (trials run on CPUs and NVIDIA GPUs)", t);
        } else if (!t || !in_list(t, ACCELERATOR_TYPES, NELEM(ACCELERATOR_TYPES))) {
            const char *near = t ? tn_closest(t, ACCELERATOR_TYPES, NELEM(ACCELERATOR_TYPES)) : NULL;
            char got[CLIP + 32];
            if (near)
                fail(c, "expected an NVIDIA accelerator type such as NVIDIA_TESLA_T4, got %s "
                        "(did you mean \"%s\"?)", describe(v, got, sizeof got), near);
            else
                fail(c, "expected an NVIDIA accelerator type such as NVIDIA_TESLA_T4, got %s",
                     describe(v, got, sizeof got));
        }
        pop(c);
    }
    int count = 0;
    if ((v = enter(c, a, "count"))) {
        if (read_int(c, v, 1, 0, 64, &count) == 0) {
            spec_resources *sr = &out->resources[type];
            if (gpus_given[type] && sr->gpus != count)
                fail(c, "says %d GPU%s but trainingInput.resources.%s.gpus says %d; give one",
                     count, count == 1 ? "" : "s", type == TF_CHIEF ? "chief" :
                     type == TF_WORKER ? "worker" : type == TF_PS ? "ps" : "evaluator",
                     sr->gpus);
            else
                sr->gpus = count;
        }
        pop(c);
    } else if (!misspelled(a, "count", ACCELERATOR_FIELDS, NELEM(ACCELERATOR_FIELDS))) {
        fail_at(c, "count", "required field is missing (the number of GPUs, such as \"1\")");
    }
    pop(c);
}

static void read_restart_policy(ctx *c, json_t *rp, tn_spec *out) {
    json_t *v;
    check_fields(c, rp, RESTART_FIELDS, NELEM(RESTART_FIELDS));
    if ((v = enter(c, rp, "maxReplicaRestarts"))) {
        read_int(c, v, 0, 0, INT_MAX, &out->max_replica_restarts);
        pop(c);
    }
    if ((v = enter(c, rp, "maxJobRetries"))) {
        read_int(c, v, 0, 0, INT_MAX, &out->max_job_retries);
        pop(c);
    }
    int max_given = 0; /* and valid */
    /* backoffSeconds valid, or absent and not misspelled (its default then holds) */
    int backoff_known = !misspelled(rp, "backoffSeconds", RESTART_FIELDS, NELEM(RESTART_FIELDS));
    if ((v = enter(c, rp, "backoffSeconds"))) {
        double d;
        backoff_known = 0;
        if (read_number(c, v, &d) == 0) {
            if (!(d >= 0 && d <= 3600)) fail(c, "must be from 0 to 3600 seconds");
            else out->restart_backoff = d, backoff_known = 1;
        }
        pop(c);
    }
    if ((v = enter(c, rp, "maxBackoffSeconds"))) {
        double d;
        if (read_number(c, v, &d) == 0) {
            if (!(d >= 0 && d <= 86400)) fail(c, "must be from 0 to 86400 seconds");
            else out->restart_backoff_max = d, max_given = 1;
        }
        pop(c);
    }
    if (max_given && !backoff_known) {
        /* the mistake in backoffSeconds was reported; no second message for it */
    } else if (max_given && out->restart_backoff_max < out->restart_backoff) {
        char a[32], b[32];
        fail_at(c, "maxBackoffSeconds", "%s is less than backoffSeconds (%s)",
                fmt_num(out->restart_backoff_max, a, sizeof a),
                fmt_num(out->restart_backoff, b, sizeof b));
    } else if (!max_given && out->restart_backoff_max < out->restart_backoff) {
        out->restart_backoff_max = out->restart_backoff;
    }
    if ((v = enter(c, rp, "failOnRepeatedError"))) {
        read_bool(c, v, &out->fail_on_repeat);
        pop(c);
    }
}

static void read_training_input(ctx *c, json_t *ti, int for_ask_tell, tn_spec *out) {
    const size_t NI = NELEM(INPUT_FIELDS);
    json_t *v;
    out->training_input = json_incref(ti);
    check_fields(c, ti, INPUT_FIELDS, NI);

    /* scaleTier first: it sets the default counts and the chief's GPU. */
    int tier_known = 1;
    if ((v = enter(c, ti, "scaleTier"))) {
        const char *s = json_is_string(v) ? json_string_value(v) : "";
        if (strcmp(s, "PREMIUM_1") == 0) {
            fail(c, "PREMIUM_1 is not supported locally; use CUSTOM with workerCount and "
                    "parameterServerCount");
            tier_known = 0;
        } else if (strcmp(s, "BASIC_TPU") == 0) {
            fail(c, "BASIC_TPU is not supported locally (no TPUs); use BASIC_GPU or CUSTOM");
            tier_known = 0;
        } else {
            tier_known = read_enum(c, v, TIER_NAMES, TIER_VALUES, NELEM(TIER_NAMES),
                                   &out->scale_tier) == 0;
        }
        pop(c);
    } else {
        tier_known = !misspelled(ti, "scaleTier", INPUT_FIELDS, NI);
    }
    if (out->scale_tier == SPEC_BASIC_GPU) out->resources[TF_CHIEF].gpus = 1;

    static const char *const COUNTS[] = {"workerCount", "parameterServerCount",
                                         "evaluatorCount"};
    int counts[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        if (!(v = enter(c, ti, COUNTS[k]))) continue;
        if (read_int(c, v, 1, 0, MAX_REPLICAS, &counts[k]) == 0 && tier_known &&
            out->scale_tier != SPEC_CUSTOM) {
            const char *t = TIER_NAMES[out->scale_tier - SPEC_BASIC];
            if (json_object_get(ti, "scaleTier"))
                fail(c, "only with scaleTier CUSTOM (scaleTier is %s)", t);
            else
                fail(c, "only with scaleTier CUSTOM (scaleTier defaults to BASIC)");
        }
        pop(c);
    }
    switch (out->scale_tier) {
    case SPEC_STANDARD_1:
        out->worker_count = 4;
        out->ps_count = 3;
        break;
    case SPEC_CUSTOM:
        out->worker_count = counts[0];
        out->ps_count = counts[1];
        out->evaluator_count = counts[2];
        break;
    default: break;
    }

    if ((v = enter(c, ti, "useChiefInTfConfig"))) {
        read_bool(c, v, &out->use_chief_in_tf_config);
        pop(c);
    }
    if ((v = enter(c, ti, "jobDir"))) {
        const char *s;
        if (read_string(c, v, 1, &s) == 0) {
            /* a folder name with a line break or a tab is a mistake (a pasted value), and
             * breaks every tool that reads paths by lines: the logs, the batch script,
             * Slurm's own */
            const char *p = s;
            while (*p && (unsigned char)*p >= 0x20 && *p != 0x7f) p++;
            if (*p)
                fail(c, "must not contain a line break, tab or other control character (byte "
                        "0x%02x after \"%.*s\")",
                     (unsigned char)*p, (int)(p - s < CLIP ? p - s : CLIP), s);
            else
                out->job_dir = tn_xstrdup(s);
        }
        pop(c);
    }
    if ((v = enter(c, ti, "args"))) {
        read_string_array(c, v, 0, &out->args, &out->nargs);
        pop(c);
    }

    /* The program: command (extension) or pythonModule, exactly one. */
    int has_command = 0, has_module = 0;
    if ((v = enter(c, ti, "command"))) {
        has_command = 1;
        if (read_string_array(c, v, 1, &out->command, &out->ncommand) == 0 &&
            out->command[0][0] == '\0') {
            push_index(c, 0);
            fail(c, "must not be empty (it is the program to run)");
            pop(c);
        }
        pop(c);
    }
    if ((v = enter(c, ti, "pythonModule"))) {
        has_module = 1;
        const char *s;
        if (read_string(c, v, 1, &s) == 0) {
            if (valid_python_module(s))
                out->python_module = tn_xstrdup(s);
            else
                fail(c, "expected a Python module name such as \"trainer.task\", got "
                        "\"%.*s%s\"", CLIP, s, strlen(s) > CLIP ? "..." : "");
        }
        pop(c);
    }
    if (has_command && has_module) {
        fail(c, "give \"command\" or \"pythonModule\", not both");
    } else if (!has_command && !has_module && !for_ask_tell &&
               !misspelled(ti, "command", INPUT_FIELDS, NI) &&
               !misspelled(ti, "pythonModule", INPUT_FIELDS, NI)) {
        fail(c, "needs \"command\" (the program and its fixed flags) or \"pythonModule\" "
                "(run as python3 -m MODULE)");
    }

    for (size_t k = 0; k < NELEM(IGNORED_FIELDS); k++) {
        if (!(v = enter(c, ti, IGNORED_FIELDS[k].name))) continue;
        json_type want = IGNORED_FIELDS[k].type;
        int ok = want == JSON_TRUE ? json_is_boolean(v) : json_typeof(v) == want;
        if (!ok) {
            fail_type(c, want == JSON_STRING   ? "a string"
                         : want == JSON_OBJECT ? "an object"
                         : want == JSON_ARRAY  ? "an array"
                                               : "a boolean (true or false)",
                      v);
        }
        pop(c);
    }

    if ((v = enter(c, ti, "env"))) { /* first: each TYPEConfig's env goes over it */
        char **all = NULL;
        read_env(c, v, &all);
        for (int t = 0; t < TF_NTYPES; t++)
            for (size_t i = 0; all && all[i]; i++) {
                char *eq = strchr(all[i], '=');
                *eq = '\0';
                env_set(&out->env[t], all[i], eq + 1);
                *eq = '=';
            }
        ex_strv_free(all);
        pop(c);
    }
    int gpus_given[TF_NTYPES] = {0};
    if ((v = enter(c, ti, "resources"))) {
        if (json_is_object(v))
            read_resources(c, v, gpus_given, out);
        else
            fail_type(c, "an object with chief, worker, ps or evaluator", v);
        pop(c);
    }
    for (size_t k = 0; k < NELEM(CONFIG_KEYS); k++) {
        if (!(v = enter(c, ti, CONFIG_KEYS[k]))) continue;
        if (json_is_object(v))
            read_replica_config(c, v, CONFIG_TYPES[k], gpus_given, out);
        else
            fail_type(c, "an object (AI Platform's ReplicaConfig)", v);
        pop(c);
    }
    if ((v = enter(c, ti, "restartPolicy"))) {
        if (json_is_object(v))
            read_restart_policy(c, v, out);
        else
            fail_type(c, "an object such as {\"maxReplicaRestarts\": 5, \"maxJobRetries\": 3}", v);
        pop(c);
    }
    if ((v = enter(c, ti, "trialTimeout"))) {
        read_duration(c, v, &out->trial_timeout_seconds);
        pop(c);
    }

    if ((v = enter(c, ti, "hyperparameters"))) {
        if (json_is_object(v))
            read_hyperparameters(c, v, out);
        else
            fail_type(c, "an object", v);
        pop(c);
    } else {
        missing(c, ti, "hyperparameters", INPUT_FIELDS, NI,
                "the study: goal, params, maxTrials, ...");
    }
}

/* Slurm's time format: MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS,
 * DAYS-HOURS:MINUTES, DAYS-HOURS:MINUTES:SECONDS, or UNLIMITED / INFINITE. */
static int valid_slurm_time(const char *s) {
    if (!strcmp(s, "UNLIMITED") || !strcmp(s, "INFINITE")) return 1;
    int fields = 0, colons = 0, dash = 0;
    const char *p = s;
    for (;;) {
        if (!isdigit((unsigned char)*p)) return 0;
        while (isdigit((unsigned char)*p)) p++;
        fields++;
        if (!*p) break;
        if (*p == '-') {
            if (dash || fields != 1) return 0;
            dash = 1;
        } else if (*p == ':') {
            colons++;
        } else {
            return 0;
        }
        p++;
    }
    return colons <= 2;
}

/* Whether sbatch argument a (its option name name_len long, up to any '=') is option
 * opt ("-p" or "--partition"), *exact saying whether it is spelt in full: a short
 * option may have its value attached ("-pgpu"), and sbatch takes any unambiguous
 * prefix of a long option too ("--part=gpu"). */
static int names_option(const char *a, size_t name_len, const char *opt, int *exact) {
    size_t ol = strlen(opt);
    int same = ol == 2 ? a[1] != '-' && !strncmp(a, opt, 2)
                       : name_len > 2 && name_len <= ol && !strncmp(a, opt, name_len);
    *exact = ol == 2 || name_len == ol;
    return same;
}

/* sbatch's short options that take a value (getopt's "a:"): in a bundle such as
 * "-vJname" the rest of the element after one of them is its value. */
#define SBATCH_SHORT_WITH_VALUE "aAbBcCdDeFGiJLmMnNopqStwx"

/* sbatch's long options that must have a value (getopt_long's required_argument in
 * Slurm 22.05, Debian 12's: src/common/slurm_opt.c): given without "=VALUE", each takes
 * the next element, the batch script's path. The options the tuner sets itself are
 * refused before (SBATCH_OWNED). Only 22.05's names: a later version's would make an
 * abbreviation look ambiguous that 22.05 reads as one of these (--conta, --ext). */
static const char *const SBATCH_LONG_WITH_VALUE[] = {
    "--account", "--acctg-freq", "--array", "--batch", "--bb", "--bbf", "--begin", "--chdir",
    "--cluster-constraint", "--clusters", "--comment", "--constraint", "--container",
    "--context", "--core-spec", "--cores-per-socket", "--cpu-freq", "--cpus-per-gpu",
    "--cpus-per-task", "--deadline", "--delay-boot", "--dependency", "--distribution",
    "--error", "--exclude", "--export", "--export-file", "--extra-node-info", "--gid",
    "--gpu-bind", "--gpu-freq", "--gpus", "--gpus-per-node", "--gpus-per-socket",
    "--gpus-per-task", "--gres", "--gres-flags", "--hint", "--input", "--job-name",
    "--kill-on-invalid-dep", "--licenses", "--mail-type", "--mail-user", "--mcs-label",
    "--mem", "--mem-bind", "--mem-per-cpu", "--mem-per-gpu", "--mincpus", "--network",
    "--nodefile", "--nodelist", "--nodes", "--ntasks", "--ntasks-per-core",
    "--ntasks-per-gpu", "--ntasks-per-node", "--ntasks-per-socket", "--ntasks-per-tres",
    "--open-mode", "--output", "--partition", "--power", "--prefer", "--priority",
    "--profile", "--qos", "--reservation", "--signal", "--sockets-per-node", "--switches",
    "--tasks-per-node", "--thread-spec", "--threads-per-core", "--time", "--time-min",
    "--tmp", "--uid", "--wait-all-nodes", "--wckey", "--wrap"};

/* sbatch's long options that take no value or an optional one ("--exclusive[=user]"):
 * with these an abbreviation is no longer one option's ("--ex" is --exclude or
 * --exclusive, which sbatch refuses as ambiguous). */
static const char *const SBATCH_LONG_NO_VALUE[] = {
    "--contiguous", "--exclusive", "--get-user-env", "--help", "--hold", "--ignore-pbs",
    "--nice", "--no-kill", "--no-requeue", "--overcommit", "--oversubscribe", "--parsable",
    "--propagate", "--quiet", "--reboot", "--requeue", "--spread-job", "--test-only",
    "--usage", "--use-min-nodes", "--verbose", "--version", "--wait"};

/* For a long option a given without a value ("--comment", or an abbreviation such as
 * "--comm"): the option that takes a value it stands for, NULL where it names none, or
 * one that needs no value too. */
static const char *long_needs_value(const char *a) {
    size_t len = strlen(a);
    const char *only = NULL;
    int exact;
    for (size_t o = 0; o < NELEM(SBATCH_LONG_NO_VALUE); o++)
        if (names_option(a, len, SBATCH_LONG_NO_VALUE[o], &exact)) return NULL;
    for (size_t o = 0; o < NELEM(SBATCH_LONG_WITH_VALUE); o++) {
        if (!names_option(a, len, SBATCH_LONG_WITH_VALUE[o], &exact)) continue;
        if (exact) return SBATCH_LONG_WITH_VALUE[o];
        if (only) return NULL; /* ambiguous: sbatch says so itself */
        only = SBATCH_LONG_WITH_VALUE[o];
    }
    return only;
}

/* Checks one short option, "-X", of an extraArgs element a against what the tuner owns
 * and what breaks the job (bundled says it is not the element's first); 1 when it was
 * refused (reported). */
static int refuse_short(ctx *c, const char *a, char x, int bundled) {
    char opt[3] = {'-', x, '\0'}, in[CLIP + 16] = "";
    if (bundled) snprintf(in, sizeof in, " (in \"%.*s\")", CLIP, a);
    for (size_t o = 0; o < NELEM(SBATCH_OWNED); o++) {
        if (strcmp(SBATCH_OWNED[o].opt, opt)) continue;
        if (SBATCH_OWNED[o].instead)
            fail(c, "%s%s is set by %s; give it there", opt, in, SBATCH_OWNED[o].instead);
        else
            fail(c, "%s%s is set by the tuner itself", opt, in);
        return 1;
    }
    for (size_t o = 0; o < NELEM(SBATCH_BREAKS); o++) {
        if (strcmp(SBATCH_BREAKS[o].opt, opt)) continue;
        fail(c, "%s%s %s", opt, in, SBATCH_BREAKS[o].why);
        return 1;
    }
    return 0;
}

/* An extraArgs element of short options, "-X" or a bundle as sbatch's getopt reads it
 * ("-sH" is -s and -H; "-vJname" is -v and -J name): every option in it is checked, and
 * one that takes a value must have it attached (alone, it would take the next element,
 * the batch script's path, for its value). */
static void check_short_bundle(ctx *c, const char *a) {
    if (!a[1]) {
        fail(c, "\"-\" alone is no option: sbatch would read the batch script from its input");
        return;
    }
    for (const char *p = a + 1; *p; p++) {
        if (refuse_short(c, a, *p, p > a + 1)) return;
        if (strchr(SBATCH_SHORT_WITH_VALUE, *p)) {
            if (!p[1])
                fail(c, "-%c takes a value: attach it (\"-%c%s\"), or sbatch takes the "
                        "batch script's path for it", *p, *p, *p == 'C' ? "a100" : "VALUE");
            return; /* the rest is its value */
        }
    }
}

static void read_executor(ctx *c, json_t *ex, tn_spec *out) {
    json_t *v;
    spec_executor *e = &out->executor;
    e->given = 1;
    check_fields(c, ex, EXECUTOR_FIELDS, NELEM(EXECUTOR_FIELDS));
    if ((v = enter(c, ex, "type"))) {
        read_enum(c, v, EXECUTOR_NAMES, EXECUTOR_VALUES, NELEM(EXECUTOR_NAMES), &e->type);
        pop(c);
    } else {
        missing(c, ex, "type", EXECUTOR_FIELDS, NELEM(EXECUTOR_FIELDS), "\"local\" or \"slurm\"");
    }
    static const char *const STRINGS[] = {"partition", "account", "qos", "timeLimit"};
    char **dest[] = {&e->partition, &e->account, &e->qos, &e->time_limit};
    for (size_t k = 0; k < NELEM(STRINGS); k++) {
        if (!(v = enter(c, ex, STRINGS[k]))) continue;
        const char *s;
        if (e->type == SPEC_EXECUTOR_LOCAL) {
            fail(c, "applies to the slurm executor only (executor.type is \"local\")");
        } else if (k == 3 && json_is_integer(v) && json_integer_value(v) > 0) {
            char buf[32];
            snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            *dest[k] = tn_xstrdup(buf); /* minutes */
        } else if (read_string(c, v, 1, &s) == 0) {
            if (k == 3 && !valid_slurm_time(s))
                fail(c, "expected Slurm's time format (MINUTES, HOURS:MINUTES:SECONDS, "
                        "DAYS-HOURS:MINUTES, ... or UNLIMITED), got \"%.*s\"", CLIP, s);
            else if (strchr(s, '\n') || strchr(s, ' '))
                fail(c, "must not contain spaces or line breaks");
            else
                *dest[k] = tn_xstrdup(s);
        }
        pop(c);
    }
    if ((v = enter(c, ex, "extraArgs"))) {
        if (e->type == SPEC_EXECUTOR_LOCAL) {
            fail(c, "applies to the slurm executor only (executor.type is \"local\")");
        } else if (read_string_array(c, v, 0, &e->extra_args, &e->nextra) == 0) {
            for (size_t i = 0; i < e->nextra; i++) {
                const char *a = e->extra_args[i];
                push_index(c, i);
                size_t name_len = strcspn(a, "=");
                /* every element an option with its value attached: a lone value would be
                 * taken by sbatch for the batch script when its option takes none */
                if (a[0] != '-') {
                    fail(c, "expected an sbatch option with its value attached, such as "
                            "\"--constraint=a100\" or \"-Ca100\", got \"%.*s\"",
                         CLIP, a);
                }
                if (a[0] == '-' && a[1] != '-') { /* short options, maybe bundled */
                    check_short_bundle(c, a);
                    pop(c);
                    continue;
                }
                if (!strcmp(a, "--")) {
                    fail(c, "\"--\" would end sbatch's options before the tuner's own");
                    pop(c);
                    continue;
                }
                int refused = 0;
                for (size_t o = 0; o < NELEM(SBATCH_OWNED) && a[0] == '-'; o++) {
                    const char *opt = SBATCH_OWNED[o].opt;
                    int exact;
                    if (!names_option(a, name_len, opt, &exact)) continue;
                    refused = 1;
                    if (exact && SBATCH_OWNED[o].instead)
                        fail(c, "%s is set by %s; give it there", opt, SBATCH_OWNED[o].instead);
                    else if (exact)
                        fail(c, "%s is set by the tuner itself", opt);
                    else /* an abbreviation, or an option that clashes with ours */
                        fail(c, "%.*s would stand for (or clash with) %s, which %s sets",
                             (int)name_len, a, opt,
                             SBATCH_OWNED[o].instead ? SBATCH_OWNED[o].instead : "the tuner");
                    break;
                }
                for (size_t o = 0; o < NELEM(SBATCH_BREAKS) && a[0] == '-' && !refused; o++) {
                    const char *opt = SBATCH_BREAKS[o].opt;
                    int exact;
                    if (!names_option(a, name_len, opt, &exact)) continue;
                    refused = 1;
                    if (exact)
                        fail(c, "%s %s", opt, SBATCH_BREAKS[o].why);
                    else
                        fail(c, "%.*s would stand for %s, which %s", (int)name_len, a, opt,
                             SBATCH_BREAKS[o].why);
                    break;
                }
                const char *takes = a[0] == '-' && !refused && !a[name_len] ? long_needs_value(a)
                                                                          : NULL;
                if (takes && !strcmp(takes, a))
                    fail(c, "%s takes a value: attach it (\"%s=VALUE\"), or sbatch takes the "
                            "batch script's path for it", a, a);
                else if (takes)
                    fail(c, "%s would stand for %s, which takes a value: attach it "
                            "(\"%s=VALUE\"), or sbatch takes the batch script's path for it",
                         a, takes, takes);
                pop(c);
            }
        }
        pop(c);
    }
}

/* At the path of trainingInput ti, of a study whose trials the tuner runs: it fits in
 * TF_CONFIG (JOB_JSON_MAX), so that a spec that validates can start its replicas (else
 * every trial fails with "Argument list too long"). */
static void check_job_size(ctx *c, json_t *ti) {
    char *text = json_dumps(ti, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t n = text ? strlen(text) : 0;
    free(text);
    if (n > JOB_JSON_MAX)
        fail(c, "is %zu bytes as JSON, more than %d: every replica gets it in TF_CONFIG, one "
                "environment variable, which Linux limits to 128 KiB; shorten it (fewer or "
                "shorter parameters and values, or long env values in a file the program "
                "reads)",
             n, JOB_JSON_MAX);
}

static void set_defaults(tn_spec *s) {
    s->scale_tier = SPEC_BASIC;
    s->use_chief_in_tf_config = 1;
    for (int t = 0; t < TF_NTYPES; t++) {
        s->resources[t].cores = 1;
        s->resources[t].gpus = 0;
    }
    s->executor.type = SPEC_EXECUTOR_LOCAL;
    s->max_replica_restarts = 5;
    s->max_job_retries = 3;
    s->restart_backoff = 1;
    s->restart_backoff_max = 30;
    s->fail_on_repeat = 1;
    s->goal = SPEC_MAXIMIZE;
    s->metric_tag = tn_xstrdup(DEFAULT_METRIC_TAG);
    single_metric(s);
    s->max_trials = 1;
    s->max_parallel_trials = 1;
    s->max_failed_trials = 0;
    s->algorithm = SP_ALGO_UNSPECIFIED;
    es_config_default(&s->early_stopping); /* the options' defaults: search/stopping.h */
    s->early_stopping.policy = ES_NONE;
}

static void read_job(ctx *c, json_t *root, int for_ask_tell, tn_spec *out) {
    const size_t NT = NELEM(TOP_FIELDS);
    json_t *v;
    set_defaults(out);
    check_fields(c, root, TOP_FIELDS, NT);

    if ((v = enter(c, root, "jobId"))) {
        read_job_id(c, v, &out->job_id);
        pop(c);
    } else {
        missing(c, root, "jobId", TOP_FIELDS, NT, "the study's name, such as \"fashion_mlp\"");
    }
    if ((v = enter(c, root, "labels"))) {
        if (!json_is_object(v)) {
            fail_type(c, "an object of strings", v);
        } else {
            const char *key;
            json_t *l;
            json_object_foreach(v, key, l) {
                if (json_is_string(l)) continue;
                push_key(c, key);
                fail_type(c, "a string", l);
                pop(c);
            }
        }
        pop(c);
    }
    if ((v = enter(c, root, "etag"))) {
        const char *s;
        read_string(c, v, 0, &s);
        pop(c);
    }
    if ((v = enter(c, root, "executor"))) {
        if (json_is_object(v))
            read_executor(c, v, out);
        else
            fail_type(c, "an object such as {\"type\": \"slurm\", \"partition\": \"gpu\"}", v);
        pop(c);
    }
    if ((v = enter(c, root, "trainingInput"))) {
        if (json_is_object(v)) {
            read_training_input(c, v, for_ask_tell, out);
            if (!for_ask_tell) check_job_size(c, v);
        } else {
            fail_type(c, "an object", v);
        }
        pop(c);
    } else {
        missing(c, root, "trainingInput", TOP_FIELDS, NT,
                "the job: scaleTier, command, hyperparameters, ...");
    }

    if (out->job_id && !out->job_dir) {
        size_t n = strlen("runs/") + strlen(out->job_id) + 1;
        out->job_dir = tn_xmalloc(n);
        snprintf(out->job_dir, n, "runs/%s", out->job_id);
    }
    /* 0 is AI Platform's "decide for me"; more than maxTrials could never be reached,
     * and a study whose every trial failed would end SUCCEEDED (spec_notes says so) */
    if (out->max_failed_trials == 0 || out->max_failed_trials > out->max_trials)
        out->max_failed_trials = out->max_trials;
}

/* ---- After the levels: a pythonModule's packages, and the notes ---- */

/* A pythonModule's packageUris are installed before its trials run (tuner/package.h),
 * so each must be a local package; with check_files (a spec read from a file), one
 * that is there. */
static void check_packages(ctx *c, json_t *root, const tn_spec *out, int check_files) {
    json_t *uris = json_object_get(json_object_get(root, "trainingInput"), "packageUris");
    if (!out->python_module || !json_is_array(uris)) return;
    push_key(c, "trainingInput");
    push_key(c, "packageUris");
    size_t i;
    json_t *u;
    json_array_foreach(uris, i, u) {
        char why[1024];
        push_index(c, i);
        if (!json_is_string(u))
            fail_type(c, "a string: the path of a package on this machine", u);
        else if (pkg_check_uri(json_string_value(u), check_files, why, sizeof why) != 0)
            fail(c, "%s", why);
        pop(c);
    }
    pop(c);
    pop(c);
}

/* Adds path to the paths ignored for why (by_why: why -> array of paths). */
static void note_ignored(json_t *by_why, const char *why, const char *path) {
    json_t *paths = json_object_get(by_why, why);
    if (!paths) json_object_set_new(by_why, why, paths = json_array());
    json_array_append_new(paths, json_string(path));
}

#define SLOW_BO_CATEGORIES 20000 /* categories in all past which spec_notes warns */

/* A valid spec's notes: the AI Platform fields it gives that have no effect here, one
 * line per reason ("ignored: trainingInput.region, trainingInput.network (why)"), and a
 * warning when Bayesian optimisation would be slow (SLOW_BO_CATEGORIES). NULL: none. */
static char *spec_notes(json_t *root, const tn_spec *out) {
    static const char *const TOP_IGNORED[] = {"labels", "etag"};
    json_t *by_why = json_object(), *ti = json_object_get(root, "trainingInput"), *v;
    char path[256];
    for (size_t k = 0; k < NELEM(TOP_IGNORED); k++)
        if ((v = json_object_get(root, TOP_IGNORED[k])) && !json_is_null(v))
            note_ignored(by_why, WHY_METADATA, TOP_IGNORED[k]);
    for (size_t k = 0; k < NELEM(IGNORED_FIELDS); k++) {
        if (!(v = json_object_get(ti, IGNORED_FIELDS[k].name)) || json_is_null(v)) continue;
        if (out->python_module && !strcmp(IGNORED_FIELDS[k].name, "packageUris")) continue;
        snprintf(path, sizeof path, "trainingInput.%s", IGNORED_FIELDS[k].name);
        note_ignored(by_why, IGNORED_FIELDS[k].why, path);
    }
    for (size_t k = 0; k < NELEM(CONFIG_KEYS); k++) {
        json_t *rc = json_object_get(ti, CONFIG_KEYS[k]);
        for (size_t f = 2; f < NELEM(REPLICA_CONFIG_FIELDS); f++) { /* [2..]: ignored */
            if (!(v = json_object_get(rc, REPLICA_CONFIG_FIELDS[f])) || json_is_null(v))
                continue;
            snprintf(path, sizeof path, "trainingInput.%s.%s", CONFIG_KEYS[k],
                     REPLICA_CONFIG_FIELDS[f]);
            note_ignored(by_why, WHY_CONTAINER, path);
        }
    }
    char *notes = NULL;
    const char *why;
    json_t *paths;
    json_object_foreach(by_why, why, paths) {
        size_t i;
        json_t *p;
        char *line = tn_xstrdup("ignored: "), *next;
        json_array_foreach(paths, i, p) {
            next = tn_xasprintf("%s%s%s", line, i ? ", " : "", json_string_value(p));
            free(line);
            line = next;
        }
        next = tn_xasprintf("%s%s%s (%s)", notes ? notes : "", notes ? "\n" : "", line, why);
        free(notes);
        free(line);
        notes = next;
    }
    json_decref(by_why);
    json_t *given = json_object_get(json_object_get(ti, "hyperparameters"), "maxFailedTrials");
    if (json_is_integer(given) && json_integer_value(given) > out->max_trials) {
        char *next = tn_xasprintf("%s%strainingInput.hyperparameters.maxFailedTrials (%" JSON_INTEGER_FORMAT
                                  ") is more than maxTrials (%d): the study fails once all %d "
                                  "have failed",
                                  notes ? notes : "", notes ? "\n" : "",
                                  json_integer_value(given), out->max_trials, out->max_trials);
        free(notes);
        notes = next;
    }
    /* Bayesian optimisation scores every category of a parameter in each suggestion,
     * and each score reads the candidate's one-hot: the time grows as the square of
     * the count (measured on 2 cores after 60 trials: 0.05 s with 1,000 categories,
     * 0.2 s with 5,000, 1.5 s with 20,000; docs/bayesian-optimisation.md). */
    size_t categories = 0;
    for (size_t i = 0; i < out->space.n; i++)
        if (out->space.params[i].type == SP_CATEGORICAL)
            categories += out->space.params[i].ncategories;
    if (out->algorithm == SP_ALGO_UNSPECIFIED && categories > SLOW_BO_CATEGORIES) {
        char *next = tn_xasprintf(
            "%s%sthe categorical parameters have %zu values in all: Bayesian optimisation "
            "(ALGORITHM_UNSPECIFIED) scores each, so every suggestion will take seconds "
            "(1.5 s with 20,000, growing as the square of the count); RANDOM_SEARCH, or "
            "fewer values, keeps suggestions fast",
            notes ? notes : "", notes ? "\n" : "", categories);
        free(notes);
        notes = next;
    }
    return notes;
}

/* Validates the spec tree root, a JSON file's or a YAML file's: the shared body of
 * spec_parse and spec_read_named. A NULL root is a file that could not be read as
 * JSON, whose error says where (syntax). check_files: a pythonModule's packageUris
 * must be there. */
static int parse_root(json_t *root, const char *syntax, int for_ask_tell, int check_files,
                      tn_spec *out, spec_errors *errs) {
    ctx c = {0};
    c.path = tn_xcalloc(1, 1);
    c.cap = 1;
    memset(out, 0, sizeof *out);

    if (!root) {
        fail(&c, "%s", syntax);
    } else if (!json_is_object(root)) {
        fail_type(&c, "a JSON object (an AI Platform job: {\"jobId\": ..., "
                      "\"trainingInput\": ...})", root);
    } else {
        read_job(&c, root, for_ask_tell, out);
        check_packages(&c, root, out, check_files);
        if (!c.errs.n) out->notes = spec_notes(root, out);
    }
    assert(c.depth == 0);
    free(c.path);

    int rc = c.errs.n ? TN_EINVAL : 0;
    if (rc) spec_clear(out);
    if (errs)
        *errs = c.errs;
    else
        spec_errors_clear(&c.errs);
    return rc;
}

/* The length of the UTF-8 byte order mark text starts with, or 0: an editor's mark,
 * which JSON (RFC 8259, 8.1) lets a parser ignore, as the YAML reader does. */
static size_t bom_length(const char *text, size_t len) {
    return len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

/* Parses len bytes of JSON text into *root, or NULL and a syntax error: jansson's text
 * (its one message that names one of its flags said as a user would need it), the
 * line and column into *line and *column. */
static json_t *load_json(const char *text, size_t len, char **syntax, int *line, int *column) {
    size_t bom = bom_length(text, len);
    json_error_t je;
    json_t *root =
        json_loadb(text + bom, len - bom, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    *syntax = NULL;
    *line = *column = 0;
    size_t blank = bom;
    while (blank < len && strchr(" \t\r\n", text[blank])) blank++;
    if (!root && blank == len) {
        *syntax = tn_xstrdup("the file is empty; a spec is a JSON object ({\"jobId\": ..., "
                             "\"trainingInput\": ...}) or YAML");
    } else if (!root) {
        *syntax = strstr(je.text, "JSON_ALLOW_NUL")
                      ? tn_xstrdup("a string holds \\u0000 (a NUL character), which a spec's "
                                   "strings may not")
                      : tn_xstrdup(je.text);
        *line = je.line;
        *column = je.column;
    }
    return root;
}

/* A syntax error's place, where it has one (an empty file has none): parse_root made it
 * the first (and only) error. */
static void place_syntax_error(spec_errors *errs, int line, int column) {
    if (errs && errs->n > 0 && line > 0) {
        errs->items[0].line = line;
        errs->items[0].column = column;
    }
}

/* Parses len bytes of JSON text; a syntax error gets its line and column (the caller
 * prints the errors under the text's name). */
static int parse_buffer(const char *text, size_t len, const char *name, int for_ask_tell,
                        tn_spec *out, spec_errors *errs) {
    (void)name;
    char *syntax;
    int line, column;
    json_t *root = load_json(text, len, &syntax, &line, &column);
    int rc = parse_root(root, syntax, for_ask_tell, 0, out, errs);
    if (!root) place_syntax_error(errs, line, column);
    free(syntax);
    json_decref(root);
    return rc;
}

int spec_parse(const char *text, const char *name, int for_ask_tell, tn_spec *out,
               spec_errors *errs) {
    assert(text && out);
    return parse_buffer(text, strlen(text), name, for_ask_tell, out, errs);
}

int spec_job_id_valid(const char *s) { return s && valid_job_id(s); }

char *spec_job_id_from_path(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    if (n == 0) return tn_xstrdup("job");
    char *id = tn_xmalloc(n + 5);
    size_t k = 0;
    if (!isalpha((unsigned char)base[0])) memcpy(id, "job_", 4), k = 4;
    for (size_t i = 0; i < n; i++)
        id[k++] = isalnum((unsigned char)base[i]) ? base[i] : '_';
    id[k < 128 ? k : 128] = '\0';
    assert(valid_job_id(id));
    return id;
}

int spec_read_named(const char *path, const char *job_id, int for_ask_tell, tn_spec *out,
                    spec_errors *errs, char **text) {
    assert(path && out);
    memset(out, 0, sizeof *out);
    if (text) *text = NULL;
    spec_errors found = {0};
    char *buf = NULL, *syntax = NULL, *named = NULL, err[1024];
    json_t *root = NULL;
    sy_where *where = NULL;
    size_t len = 0;
    int yaml = 0, line = 0, column = 0;
    int rc = tn_read_file(path, "spec", SPEC_MAX_BYTES, &buf, &len, err, sizeof err);
    if (rc) {
        add_error(&found, "", tn_xstrdup(err));
        goto done;
    }
    if ((yaml = sy_is_yaml(path, buf, len))) {
        if ((rc = sy_parse(buf, len, &root, &where, &found)) != 0) goto done;
    } else {
        size_t bom = bom_length(buf, len);
        memmove(buf, buf + bom, len - bom + 1); /* what is stored has no mark either */
        len -= bom;
        root = load_json(buf, len, &syntax, &line, &column);
    }
    if (json_is_object(root)) { /* the study's name: --job-id, the file's, its name's */
        json_t *given = json_object_get(root, "jobId");
        if (job_id) {
            json_object_set_new(root, "jobId", json_string(job_id));
        } else if (yaml && (!given || json_is_null(given))) {
            named = spec_job_id_from_path(path);
            json_object_set_new(root, "jobId", json_string(named));
        }
    }
    rc = parse_root(root, syntax, for_ask_tell, 1, out, &found);
    if (!root && !yaml) place_syntax_error(&found, line, column);
    for (size_t i = 0; where && i < found.n; i++) sy_where_annotate(where, &found.items[i]);
    if (rc == 0 && named) {
        char *notes = tn_xasprintf("jobId: %s, from the file's name (jobId or --job-id=ID "
                                   "names the study)%s%s", named, out->notes ? "\n" : "",
                                   out->notes ? out->notes : "");
        free(out->notes);
        out->notes = notes;
    }
    if (rc == 0 && text) {
        if (!yaml && !job_id) { /* what is stored is what was validated */
            *text = buf;
            buf = NULL;
        } else {
            char *dump = json_dumps(root, JSON_INDENT(2));
            if (!dump) abort(); /* out of memory */
            *text = tn_xstrdup(dump);
            free(dump);
        }
    }
done:
    json_decref(root);
    sy_where_free(where);
    free(syntax);
    free(named);
    free(buf);
    if (errs)
        *errs = found;
    else
        spec_errors_clear(&found);
    return rc;
}

int spec_read(const char *path, int for_ask_tell, tn_spec *out, spec_errors *errs,
              char **text) {
    return spec_read_named(path, NULL, for_ask_tell, out, errs, text);
}

int spec_load(const char *path, int for_ask_tell, tn_spec *out, spec_errors *errs) {
    return spec_read_named(path, NULL, for_ask_tell, out, errs, NULL);
}

void spec_clear(tn_spec *s) {
    if (!s) return;
    free(s->job_id);
    free(s->job_dir);
    for (size_t i = 0; i < s->ncommand; i++) free(s->command[i]);
    free(s->command);
    free(s->python_module);
    free(s->notes);
    for (size_t i = 0; i < s->nargs; i++) free(s->args[i]);
    free(s->args);
    free(s->metric_tag);
    for (size_t i = 0; i < s->nmetrics; i++) free(s->metrics[i].id);
    free(s->metrics);
    free(s->resume_previous_job_id);
    sp_space_clear(&s->space);
    json_decref(s->training_input);
    free(s->executor.partition);
    free(s->executor.account);
    free(s->executor.qos);
    free(s->executor.time_limit);
    for (size_t i = 0; i < s->executor.nextra; i++) free(s->executor.extra_args[i]);
    free(s->executor.extra_args);
    for (int t = 0; t < TF_NTYPES; t++) ex_strv_free(s->env[t]);
    memset(s, 0, sizeof *s);
}

void spec_errors_clear(spec_errors *e) {
    if (!e) return;
    for (size_t i = 0; i < e->n; i++) {
        free(e->items[i].path);
        free(e->items[i].message);
    }
    free(e->items);
    e->items = NULL;
    e->n = 0;
}

const char *spec_replica_name(const tn_spec *s, int type) {
    return tf_type_label(type, !s->use_chief_in_tf_config);
}

int spec_replica_count(const tn_spec *s, int type) {
    switch (type) {
    case TF_CHIEF: return 1;
    case TF_WORKER: return s->worker_count;
    case TF_PS: return s->ps_count;
    case TF_EVALUATOR: return s->evaluator_count;
    default: return 0;
    }
}

const char *spec_executor_name(int type) {
    return type == SPEC_EXECUTOR_SLURM ? "slurm" : "local";
}
