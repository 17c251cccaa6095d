/*
 * test_spec.c — tests for tuner/spec.c: the DESIGN.md example spec and every default,
 * tier, extension and AI Platform compatibility field on the happy path; a table of
 * bad specs, one per validation rule, each of which must give exactly the expected
 * number of errors with the expected path and message; five mistakes reported at
 * once; spec_load from a file and from a missing one. Conditional parameters (Vertex
 * AI's conditionalParameterSpecs): a tree parsed into parents-first order with each
 * condition, a chain nested 300 deep, mistakes anywhere in a tree reported together
 * with their paths, and a trial's values through params.c (JSON and flags without the
 * inactive parameters).
 *
 * Bad specs are written as JSON merge patches (RFC 7386: null deletes a field) over
 * the valid DESIGN.md example, so each case shows only what it breaks. Temporary
 * files go to $TN_TEST_TMP (default /tmp).
 */
#include "tuner/spec.h"

#include "common/status.h"
#include "common/text.h"
#include "tests/check.h"
#include "tuner/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The example spec of docs/spec.md, verbatim. */
static const char *const DESIGN_SPEC =
    "{\n"
    "  \"jobId\": \"fashion_mlp\",\n"
    "  \"trainingInput\": {\n"
    "    \"scaleTier\": \"CUSTOM\",\n"
    "    \"workerCount\": 1,\n"
    "    \"parameterServerCount\": 0,\n"
    "    \"evaluatorCount\": 0,\n"
    "    \"useChiefInTfConfig\": true,\n"
    "    \"jobDir\": \"runs/fashion_mlp\",\n"
    "    \"command\": [\"trainer\", \"--model=mlp\", \"--epochs=5\"],\n"
    "    \"args\": [],\n"
    "    \"hyperparameters\": {\n"
    "      \"goal\": \"MAXIMIZE\",\n"
    "      \"hyperparameterMetricTag\": \"accuracy\",\n"
    "      \"maxTrials\": 20,\n"
    "      \"maxParallelTrials\": 2,\n"
    "      \"maxFailedTrials\": 4,\n"
    "      \"enableTrialEarlyStopping\": true,\n"
    "      \"algorithm\": \"ALGORITHM_UNSPECIFIED\",\n"
    "      \"params\": [\n"
    "        {\"parameterName\": \"learning_rate\", \"type\": \"DOUBLE\",\n"
    "         \"minValue\": 0.001, \"maxValue\": 0.3, \"scaleType\": \"UNIT_LOG_SCALE\"},\n"
    "        {\"parameterName\": \"hidden_units\", \"type\": \"INTEGER\", \"minValue\": 32, "
    "\"maxValue\": 512},\n"
    "        {\"parameterName\": \"optimizer\", \"type\": \"CATEGORICAL\", "
    "\"categoricalValues\": [\"sgd\", \"adam\"]},\n"
    "        {\"parameterName\": \"batch_size\", \"type\": \"DISCRETE\", \"discreteValues\": "
    "[64, 128, 256]}\n"
    "      ]\n"
    "    }\n"
    "  }\n"
    "}\n";

/* Patch helpers: TI patches trainingInput, HP its hyperparameters, PARAMS replaces
 * the params array. The P_* are the example's four parameters. */
#define TI(x) "{\"trainingInput\": " x "}"
#define HP(x) TI("{\"hyperparameters\": " x "}")
#define PARAMS(x) HP("{\"params\": [" x "]}")
#define P_LR "{\"parameterName\": \"learning_rate\", \"type\": \"DOUBLE\", \"minValue\": 0.001, " \
             "\"maxValue\": 0.3, \"scaleType\": \"UNIT_LOG_SCALE\"}"
#define P_HU "{\"parameterName\": \"hidden_units\", \"type\": \"INTEGER\", \"minValue\": 32, " \
             "\"maxValue\": 512}"
#define P_OPT "{\"parameterName\": \"optimizer\", \"type\": \"CATEGORICAL\", " \
              "\"categoricalValues\": [\"sgd\", \"adam\"]}"
#define P_BS "{\"parameterName\": \"batch_size\", \"type\": \"DISCRETE\", " \
             "\"discreteValues\": [64, 128, 256]}"

/* Vertex AI's metrics: MX(list) replaces the example's hyperparameterMetricTag and goal
 * with "metrics": list; MET(id, goal) is one MetricSpec. */
#define MX(x) HP("{\"goal\": null, \"hyperparameterMetricTag\": null, \"metrics\": " x "}")
#define MET(id, goal) "{\"metricId\": \"" id "\", \"goal\": \"" goal "\"}"
#define MET4(p) MET(p "1", "MAXIMIZE") "," MET(p "2", "MAXIMIZE") "," MET(p "3", "MAXIMIZE") \
    "," MET(p "4", "MAXIMIZE")
#define HPM "trainingInput.hyperparameters.metrics"

/* Conditional parameters: OPT_IF(entries) is the example's optimizer with the given
 * conditionalParameterSpecs; MOM a DOUBLE child; IF_SGD(spec) the entry that makes spec
 * a child under "sgd"; C0 the path of the first entry. */
#define OPT_IF(entries) "{\"parameterName\": \"optimizer\", \"type\": \"CATEGORICAL\", " \
                        "\"categoricalValues\": [\"sgd\", \"adam\"], " \
                        "\"conditionalParameterSpecs\": [" entries "]}"
#define MOM "{\"parameterName\": \"momentum\", \"type\": \"DOUBLE\", \"minValue\": 0.5, " \
            "\"maxValue\": 0.99}"
#define IF_SGD(spec) "{\"parentCategoricalValues\": {\"values\": [\"sgd\"]}, " \
                     "\"parameterSpec\": " spec "}"
#define C0 "trainingInput.hyperparameters.params[0].conditionalParameterSpecs[0]"

/* RFC 7386 merge patch of target by patch (both objects): null deletes, objects merge,
 * anything else replaces. */
static void merge_patch(json_t *target, json_t *patch) {
    const char *key;
    json_t *v;
    json_object_foreach(patch, key, v) {
        json_t *t = json_object_get(target, key);
        if (json_is_null(v))
            json_object_del(target, key);
        else if (json_is_object(v) && json_is_object(t))
            merge_patch(t, v);
        else
            json_object_set(target, key, v); /* borrows v: patch keeps its reference */
    }
}

/* The example spec with patch applied, as text (yours to free). */
static char *patched(const char *patch) {
    json_error_t je;
    json_t *base = json_loads(DESIGN_SPEC, 0, &je);
    json_t *p = json_loads(patch, 0, &je);
    if (!base || !p) {
        fprintf(stderr, "bad test patch %s: %s\n", patch, je.text);
        abort();
    }
    merge_patch(base, p);
    char *text = json_dumps(base, JSON_INDENT(2));
    json_decref(p);
    json_decref(base);
    return text;
}

static void print_errors(const spec_errors *e) {
    for (size_t i = 0; i < e->n; i++)
        fprintf(stderr, "    %s: %s\n", e->items[i].path, e->items[i].message);
}

/* Whether some error has exactly this path and a message containing msg. */
static int has_error(const spec_errors *e, const char *path, const char *msg) {
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->items[i].path, path) == 0 && strstr(e->items[i].message, msg))
            return 1;
    return 0;
}

static int spec_is_zero(const tn_spec *s) {
    static const tn_spec zero;
    return memcmp(s, &zero, sizeof zero) == 0;
}

/* ---- Bad specs: one per rule ---- */

typedef struct bad_case {
    const char *patch;  /* merge patch over DESIGN_SPEC, or NULL to use raw */
    const char *raw;    /* the whole spec text */
    const char *path;   /* an error with exactly this path ... */
    const char *msg;    /* ... and a message containing this */
    int nerrors;        /* how many errors in all (0 means 1) */
    int ask_tell;       /* parse with for_ask_tell */
} bad_case;

static const bad_case BAD[] = {
    /* metrics (Vertex AI's StudySpec) */
    {MX("5"), NULL, HPM, "expected an array of metrics", 0, 0},
    {MX("[]"), NULL, HPM, "must hold at least one metric", 0, 0},
    {MX("[" MET4("a") "," MET4("b") "," MET4("c") "," MET4("d") "," MET("e", "MINIMIZE") "]"),
     NULL, HPM, "must hold at most 16 metrics, got 17", 0, 0},
    {MX("[3]"), NULL, HPM "[0]", "expected an object", 0, 0},
    {MX("[{\"goal\": \"MAXIMIZE\"}]"), NULL, HPM "[0].metricId", "required field is missing",
     0, 0},
    {MX("[{\"metricId\": \"a\"}]"), NULL, HPM "[0].goal", "required field is missing", 0, 0},
    {MX("[{\"metricId\": \"a\", \"goa\": \"MAXIMIZE\"}]"), NULL, HPM "[0].goa",
     "did you mean \"goal\"?", 0, 0},
    {MX("[" MET("", "MAXIMIZE") "]"), NULL, HPM "[0].metricId", "must not be empty", 0, 0},
    {MX("[{\"metricId\": 3, \"goal\": \"MAXIMIZE\"}]"), NULL, HPM "[0].metricId",
     "expected a string, got 3", 0, 0},
    {MX("[" MET("a", "MAXIMISE") "]"), NULL, HPM "[0].goal", "did you mean \"MAXIMIZE\"?", 0, 0},
    {MX("[" MET("a", "GOAL_TYPE_UNSPECIFIED") "]"), NULL, HPM "[0].goal",
     "must be MAXIMIZE or MINIMIZE", 0, 0},
    {MX("[" MET("a", "MAXIMIZE") "," MET("b", "MINIMIZE") "," MET("a", "MINIMIZE") "]"), NULL,
     HPM "[2].metricId", "\"a\" is already metrics[0]'s", 0, 0},
    {MX("[" MET("a", "MAXIMIZE") ", 1, {}]"), NULL, HPM "[2].goal", "required", 3, 0},
    {HP("{\"metrics\": [" MET("a", "MAXIMIZE") "]}"), NULL, HPM,
     "not both: this spec has metrics and hyperparameterMetricTag", 0, 0},
    {HP("{\"hyperparameterMetricTag\": null, \"metrics\": [" MET("a", "MAXIMIZE") "]}"),
     NULL, HPM, "not both: this spec has metrics and goal", 0, 0},
    /* a metric's name with a control character: a terminal showing it would obey it */
    {HP("{\"hyperparameterMetricTag\": \"acc\\u001b[31m\"}"), NULL,
     "trainingInput.hyperparameters.hyperparameterMetricTag",
     "must not contain a control character (byte 0x1b after \"acc\")", 0, 0},
    {MX("[" MET("ok", "MAXIMIZE") "," MET("c1\\u009b", "MINIMIZE") "]"), NULL,
     HPM "[1].metricId", "must not contain a control character (byte 0xc2 after \"c1\")", 0, 0},
    {MX("[" MET("del\\u007f", "MAXIMIZE") "]"), NULL, HPM "[0].metricId", "(byte 0x7f", 0, 0},
    /* JSON itself */
    {NULL, "{\n  \"jobId\": }\n", "", "unexpected token near '}'", 0, 0}, /* at 2:12: test_load */
    {NULL, "{\"jobId\": \"a\", \"jobId\": \"b\"}", "", "duplicate object key", 0, 0},
    {NULL, "[1, 2]", "", "expected a JSON object", 0, 0},
    {NULL, "", "", "the file is empty", 0, 0},
    /* top level */
    {"{\"jobId\": null}", NULL, "jobId", "required field is missing", 0, 0},
    {"{\"jobId\": \"fashion-mlp\"}", NULL, "jobId", "must start with a letter", 0, 0},
    {"{\"jobId\": \"1st\"}", NULL, "jobId", "only letters, digits and underscores", 0, 0},
    {"{\"jobId\": 7}", NULL, "jobId", "expected a string, got 7", 0, 0},
    {"{\"jobid\": \"x\"}", NULL, "jobid", "unknown field (did you mean \"jobId\"?)", 0, 0},
    {"{\"labels\": {\"team\": 3}}", NULL, "labels.team", "expected a string, got 3", 0, 0},
    {"{\"etag\": 1}", NULL, "etag", "expected a string", 0, 0},
    {"{\"trainingInput\": 5}", NULL, "trainingInput", "expected an object, got 5", 0, 0},
    {NULL, "{\"jobId\": \"a\"}", "trainingInput", "required field is missing", 0, 0},
    {"{\"maxTrials\": 5}", NULL, "maxTrials", "belongs in trainingInput.hyperparameters", 0, 0},
    /* trainingInput: tiers and counts */
    {TI("{\"scaleTier\": \"STANDARD\"}"), NULL, "trainingInput.scaleTier",
     "did you mean \"STANDARD_1\"?", 0, 0},
    {TI("{\"scaleTier\": \"custom\"}"), NULL, "trainingInput.scaleTier",
     "did you mean \"CUSTOM\"?", 0, 0},
    {TI("{\"scaleTier\": \"PREMIUM_1\"}"), NULL, "trainingInput.scaleTier",
     "not supported locally", 0, 0},
    {TI("{\"scaleTier\": \"BASIC_TPU\"}"), NULL, "trainingInput.scaleTier",
     "not supported locally", 0, 0},
    {TI("{\"scaleTier\": \"BASIC\"}"), NULL, "trainingInput.workerCount",
     "only with scaleTier CUSTOM (scaleTier is BASIC)", 3, 0},
    {TI("{\"scaleTier\": null, \"parameterServerCount\": null, \"evaluatorCount\": null}"),
     NULL, "trainingInput.workerCount", "scaleTier defaults to BASIC", 0, 0},
    {TI("{\"scaleTier\": \"STANDARD_1\", \"workerCount\": null, \"parameterServerCount\": null}"),
     NULL, "trainingInput.evaluatorCount", "only with scaleTier CUSTOM", 0, 0},
    {TI("{\"workerCount\": -1}"), NULL, "trainingInput.workerCount", "must be >= 0, got -1", 0, 0},
    {TI("{\"workerCount\": 5000}"), NULL, "trainingInput.workerCount", "must be <= 1024", 0, 0},
    {TI("{\"parameterServerCount\": \"two\"}"), NULL, "trainingInput.parameterServerCount",
     "expected an integer (a number or a string of digits), got a string (\"two\")", 0, 0},
    {TI("{\"evaluatorCount\": 1.5}"), NULL, "trainingInput.evaluatorCount",
     "expected an integer, got 1.5", 0, 0},
    /* trainingInput: other fields */
    {TI("{\"useChiefInTfConfig\": \"yes\"}"), NULL, "trainingInput.useChiefInTfConfig",
     "expected a boolean", 0, 0},
    {TI("{\"jobDir\": \"\"}"), NULL, "trainingInput.jobDir", "must not be empty", 0, 0},
    {TI("{\"jobDir\": \"runs/new\\nline\"}"), NULL, "trainingInput.jobDir",
     "must not contain a line break, tab or other control character (byte 0x0a after "
     "\"runs/new\")", 0, 0},
    {TI("{\"jobDir\": \"runs/a\\tb\"}"), NULL, "trainingInput.jobDir", "(byte 0x09 after", 0, 0},
    {TI("{\"args\": [\"--x=1\", 2]}"), NULL, "trainingInput.args[1]",
     "expected a string, got 2", 0, 0},
    {TI("{\"command\": []}"), NULL, "trainingInput.command", "at least one string", 0, 0},
    {TI("{\"command\": \"trainer --model=mlp\"}"), NULL, "trainingInput.command",
     "expected an array of strings", 0, 0},
    {TI("{\"command\": [\"\", \"--x\"]}"), NULL, "trainingInput.command[0]",
     "must not be empty", 0, 0},
    {TI("{\"pythonModule\": \"trainer.task\"}"), NULL, "trainingInput", "not both", 0, 0},
    {TI("{\"pythonModule\": \"trainer.task\"}"), NULL, "trainingInput", "not both", 0, 1},
    {TI("{\"command\": null}"), NULL, "trainingInput",
     "needs \"command\" (the program and its fixed flags) or \"pythonModule\"", 0, 0},
    {TI("{\"command\": null, \"pythonModule\": \"trainer/task.py\"}"), NULL,
     "trainingInput.pythonModule", "expected a Python module name", 0, 0},
    {TI("{\"region\": 5}"), NULL, "trainingInput.region", "expected a string, got 5", 0, 0},
    {TI("{\"masterConfig\": \"n1\"}"), NULL, "trainingInput.masterConfig",
     "expected an object", 0, 0},
    {TI("{\"comand\": [\"x\"]}"), NULL, "trainingInput.comand",
     "unknown field (did you mean \"command\"?)", 0, 0},
    {TI("{\"command\": null, \"comand\": [\"x\"]}"), NULL, "trainingInput.comand",
     "did you mean \"command\"?", 0, 0},
    {TI("{\"jobId\": \"x\"}"), NULL, "trainingInput.jobId",
     "belongs in the top level of the spec", 0, 0},
    {TI("{\"hyperparameters\": null}"), NULL, "trainingInput.hyperparameters",
     "required field is missing", 0, 0},
    {TI("{\"hyperparameters\": []}"), NULL, "trainingInput.hyperparameters",
     "expected an object, got an array", 0, 0},
    /* extensions */
    {TI("{\"resources\": {\"workers\": {\"cores\": 2}}}"), NULL,
     "trainingInput.resources.workers", "did you mean \"worker\"?", 0, 0},
    {TI("{\"resources\": {\"worker\": {\"cores\": 0}}}"), NULL,
     "trainingInput.resources.worker.cores", "must be >= 1, got 0", 0, 0},
    {TI("{\"resources\": {\"chief\": {\"gpus\": -1}}}"), NULL,
     "trainingInput.resources.chief.gpus", "must be >= 0, got -1", 0, 0},
    {TI("{\"resources\": {\"ps\": {\"core\": 2}}}"), NULL, "trainingInput.resources.ps.core",
     "did you mean \"cores\"?", 0, 0},
    {TI("{\"resources\": {\"chief\": {}, \"master\": {}}}"), NULL,
     "trainingInput.resources.master", "same replica as \"chief\"", 0, 0},
    {TI("{\"resources\": {\"evaluator\": 4}}"), NULL, "trainingInput.resources.evaluator",
     "expected an object", 0, 0},
    {TI("{\"restartPolicy\": {\"maxReplicaRestarts\": -1}}"), NULL,
     "trainingInput.restartPolicy.maxReplicaRestarts", "must be >= 0", 0, 0},
    {TI("{\"restartPolicy\": {\"maxJobRetries\": true}}"), NULL,
     "trainingInput.restartPolicy.maxJobRetries", "expected an integer, got true", 0, 0},
    {TI("{\"restartPolicy\": {\"retries\": 1}}"), NULL, "trainingInput.restartPolicy.retries",
     "unknown field (expected maxReplicaRestarts, maxJobRetries, backoffSeconds, maxBackoffSeconds, failOnRepeatedError)", 0, 0},
    {TI("{\"trialTimeout\": \"10m\"}"), NULL, "trainingInput.trialTimeout",
     "expected a duration such as \"600s\"", 0, 0},
    {TI("{\"trialTimeout\": \"1.s\"}"), NULL, "trainingInput.trialTimeout",
     "expected a duration", 0, 0},
    {TI("{\"trialTimeout\": 0}"), NULL, "trainingInput.trialTimeout", "must be > 0", 0, 0},
    /* the hypertune file's own keys cannot be metrics: no trial could ever report them */
    {HP("{\"hyperparameterMetricTag\": \"global_step\"}"), NULL,
     "trainingInput.hyperparameters.hyperparameterMetricTag",
     "\"global_step\" is a key the hypertune file keeps for itself", 0, 0},
    {HP("{\"hyperparameterMetricTag\": null, \"goal\": null, \"metrics\": ["
        "{\"metricId\": \"trial\", \"goal\": \"MAXIMIZE\"}]}"), NULL, HPM "[0].metricId",
     "\"trial\" is a key the hypertune file keeps for itself", 0, 0},
    {TI("{\"trialTimeout\": \"10000000000000000000s\"}"), NULL, "trainingInput.trialTimeout",
     "must be at most 315576000 seconds (ten years)", 0, 0},
    {TI("{\"trialTimeout\": \"-5s\"}"), NULL, "trainingInput.trialTimeout", "must be > 0", 0, 0},
    /* hyperparameters */
    {HP("{\"bayesianOptimization\": {\"initialTrials\": 0}}"), NULL,
     "trainingInput.hyperparameters.bayesianOptimization.initialTrials", "must be", 0, 0},
    {HP("{\"bayesianOptimization\": {\"acquisition\": \"EI\"}}"), NULL,
     "trainingInput.hyperparameters.bayesianOptimization.acquisition",
     "expected one of LOG_EI, UCB", 0, 0},
    {HP("{\"bayesianOptimization\": {\"ucbBeta\": -1}}"), NULL,
     "trainingInput.hyperparameters.bayesianOptimization.ucbBeta", "must be > 0", 0, 0},
    {HP("{\"bayesianOptimization\": {\"initalTrials\": 3}}"), NULL,
     "trainingInput.hyperparameters.bayesianOptimization.initalTrials",
     "did you mean \"initialTrials\"?", 0, 0},
    {HP("{\"algorithm\": \"RANDOM_SEARCH\", \"bayesianOptimization\": {}}"), NULL,
     "trainingInput.hyperparameters.bayesianOptimization",
     "applies to ALGORITHM_UNSPECIFIED (Bayesian optimisation) only, not to RANDOM_SEARCH", 0, 0},
    {HP("{\"maxTrail\": 20}"), NULL, "trainingInput.hyperparameters.maxTrail",
     "unknown field (did you mean \"maxTrials\"?)", 0, 0},
    /* early stopping: gracePeriod 0 is automatic (an eighth of the trials' length) */
    {HP("{\"earlyStopping\": {\"gracePeriod\": -1}}"), NULL,
     "trainingInput.hyperparameters.earlyStopping.gracePeriod", "must be >= 0, got -1", 0, 0},
    {HP("{\"earlyStopping\": {\"policy\": \"hyperband\"}}"), NULL,
     "trainingInput.hyperparameters.earlyStopping.maxStep",
     "hyperband needs maxStep, the step at which trials end (its brackets are built from "
     "it)", 0, 0},
    {HP("{\"earlyStopping\": {\"policy\": \"hyperband\", \"gracePeriod\": 9, "
        "\"maxStep\": 9}}"), NULL, "trainingInput.hyperparameters.earlyStopping.maxStep",
     "above gracePeriod (9); got 9", 0, 0},
    /* one message for a bad maxStep, not also hyperband's need of it */
    {HP("{\"earlyStopping\": {\"policy\": \"hyperband\", \"maxStpe\": 10}}"), NULL,
     "trainingInput.hyperparameters.earlyStopping.maxStpe", "did you mean \"maxStep\"?", 0, 0},
    {HP("{\"earlyStopping\": {\"policy\": \"hyperband\", \"maxStep\": -3}}"), NULL,
     "trainingInput.hyperparameters.earlyStopping.maxStep", "must be >= 0, got -3", 0, 0},
    {HP("{\"earlyStopping\": {\"policy\": \"hyperband\", \"gracePeriod\": -1, "
        "\"maxStep\": 9}}"), NULL, "trainingInput.hyperparameters.earlyStopping.gracePeriod",
     "must be >= 0, got -1", 0, 0},
    {HP("{\"maxTrials\": null, \"maxTrail\": 20}"), NULL,
     "trainingInput.hyperparameters.maxTrail", "did you mean \"maxTrials\"?", 0, 0},
    {HP("{\"goal\": \"MAX\"}"), NULL, "trainingInput.hyperparameters.goal",
     "expected one of MAXIMIZE, MINIMIZE, GOAL_TYPE_UNSPECIFIED, got a string (\"MAX\")", 0, 0},
    {HP("{\"maxTrials\": 0, \"maxParallelTrials\": 1}"), NULL,
     "trainingInput.hyperparameters.maxTrials", "must be >= 1, got 0", 0, 0},
    {HP("{\"maxTrials\": \"20\"}"), NULL, "trainingInput.hyperparameters.maxTrials",
     "write it without quotes", 0, 0},
    {HP("{\"maxParallelTrials\": 30}"), NULL, "trainingInput.hyperparameters.maxParallelTrials",
     "must be <= maxTrials (20), got 30", 0, 0},
    {HP("{\"maxTrials\": null}"), NULL, "trainingInput.hyperparameters.maxParallelTrials",
     "must be <= maxTrials (1), got 2", 0, 0},
    {HP("{\"maxParallelTrials\": 0}"), NULL, "trainingInput.hyperparameters.maxParallelTrials",
     "must be >= 1", 0, 0},
    {HP("{\"maxFailedTrials\": -1}"), NULL, "trainingInput.hyperparameters.maxFailedTrials",
     "must be >= 0", 0, 0},
    {HP("{\"hyperparameterMetricTag\": 5}"), NULL,
     "trainingInput.hyperparameters.hyperparameterMetricTag", "expected a string", 0, 0},
    {HP("{\"hyperparameterMetricTag\": \"\"}"), NULL,
     "trainingInput.hyperparameters.hyperparameterMetricTag", "must not be empty", 0, 0},
    {HP("{\"enableTrialEarlyStopping\": \"true\"}"), NULL,
     "trainingInput.hyperparameters.enableTrialEarlyStopping", "expected a boolean", 0, 0},
    {HP("{\"resumePreviousJobId\": \"old-study\"}"), NULL,
     "trainingInput.hyperparameters.resumePreviousJobId", "must start with a letter", 0, 0},
    {HP("{\"resumePreviousJobId\": \"fashion_mlp\"}"), NULL,
     "trainingInput.hyperparameters.resumePreviousJobId", "not this one", 0, 0},
    {HP("{\"algorithm\": \"BAYESIAN\"}"), NULL, "trainingInput.hyperparameters.algorithm",
     "expected one of ALGORITHM_UNSPECIFIED, GRID_SEARCH, RANDOM_SEARCH", 0, 0},
    {HP("{\"algorithm\": \"GRID_SERCH\"}"), NULL, "trainingInput.hyperparameters.algorithm",
     "did you mean \"GRID_SEARCH\"?", 0, 0},
    {HP("{\"params\": null}"), NULL, "trainingInput.hyperparameters.params",
     "required field is missing", 0, 0},
    {PARAMS(""), NULL, "trainingInput.hyperparameters.params", "at least one parameter", 0, 0},
    {HP("{\"params\": {}}"), NULL, "trainingInput.hyperparameters.params",
     "expected an array of parameters", 0, 0},
    {PARAMS("3"), NULL, "trainingInput.hyperparameters.params[0]", "expected an object", 0, 0},
    {HP("{\"scaleType\": \"NONE\"}"), NULL, "trainingInput.hyperparameters.scaleType",
     "belongs in each of trainingInput.hyperparameters.params", 0, 0},
    /* params[i] */
    {PARAMS("{\"type\": \"INTEGER\", \"minValue\": 1, \"maxValue\": 2}"), NULL,
     "trainingInput.hyperparameters.params[0].parameterName", "required field is missing", 0, 0},
    {PARAMS("{\"parameterName\": \"learning rate\", \"type\": \"DOUBLE\", \"minValue\": 0, "
            "\"maxValue\": 1}"), NULL,
     "trainingInput.hyperparameters.params[0].parameterName", "it becomes the --learning rate",
     0, 0},
    {PARAMS("{\"parameterName\": \"\", \"type\": \"DOUBLE\", \"minValue\": 0, "
            "\"maxValue\": 1}"), NULL,
     "trainingInput.hyperparameters.params[0].parameterName", "must not be empty", 0, 0},
    {PARAMS(P_LR "," P_HU "," P_OPT "," P_LR), NULL,
     "trainingInput.hyperparameters.params[3].parameterName",
     "duplicate parameterName \"learning_rate\" (also params[0])", 0, 0},
    {PARAMS("{\"parameterName\": \"job_dir\", \"type\": \"CATEGORICAL\", "
            "\"categoricalValues\": [\"a\"]}"), NULL,
     "trainingInput.hyperparameters.params[0].parameterName", "reserved", 0, 0},
    {PARAMS("{\"parameterName\": \"x\", \"minValue\": 1, \"maxValue\": 2}"), NULL,
     "trainingInput.hyperparameters.params[0].type", "required field is missing", 0, 0},
    {PARAMS("{\"parameterName\": \"x\", \"type\": \"FLOAT\", \"minValue\": 1, "
            "\"maxValue\": 2}"), NULL,
     "trainingInput.hyperparameters.params[0].type",
     "expected one of DOUBLE, INTEGER, CATEGORICAL, DISCRETE", 0, 0},
    {PARAMS("{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minValue\": 1}"), NULL,
     "trainingInput.hyperparameters.params[0].maxValue",
     "required field is missing (a DOUBLE parameter needs one)", 0, 0},
    {PARAMS(P_LR ", {\"parameterName\": \"n\", \"type\": \"INTEGER\", \"minValue\": 1.5, "
                 "\"maxValue\": 4}"), NULL,
     "trainingInput.hyperparameters.params[1].minValue",
     "must be an integer for an INTEGER parameter, got 1.5", 0, 0},
    /* beyond 2^53 (the first of these rounds to 2^53 as a double: checked as an integer) */
    {PARAMS(P_LR ", {\"parameterName\": \"n\", \"type\": \"INTEGER\", \"minValue\": 1, "
                 "\"maxValue\": 9007199254740993}"), NULL,
     "trainingInput.hyperparameters.params[1].maxValue",
     "must be from -2^53 to 2^53 (9007199254740992) for an INTEGER parameter, where every "
     "integer is exact as a double; got 9007199254740993", 0, 0},
    {PARAMS(P_LR ", {\"parameterName\": \"n\", \"type\": \"INTEGER\", \"minValue\": -1e16, "
                 "\"maxValue\": 4}"), NULL,
     "trainingInput.hyperparameters.params[1].minValue", "got -1e+16", 0, 0},
    {PARAMS(P_LR ", {\"parameterName\": \"n\", \"type\": \"INTEGER\", \"minValue\": 8, "
                 "\"maxValue\": 4}"), NULL,
     "trainingInput.hyperparameters.params[1].maxValue", "must be >= minValue (8), got 4", 0, 0},
    {PARAMS("{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minValue\": \"0.1\", "
            "\"maxValue\": 1}"), NULL,
     "trainingInput.hyperparameters.params[0].minValue",
     "expected a number, got a string (\"0.1\")", 0, 0},
    {PARAMS("{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minValue\": 0, "
            "\"maxValue\": 1, \"scaleType\": \"UNIT_LOG_SCALE\"}"), NULL,
     "trainingInput.hyperparameters.params[0].minValue",
     "UNIT_LOG_SCALE needs minValue > 0, got 0", 0, 0},
    {PARAMS("{\"parameterName\": \"x\", \"type\": \"INTEGER\", \"minValue\": -1, "
            "\"maxValue\": 1, \"scaleType\": \"UNIT_REVERSE_LOG_SCALE\"}"), NULL,
     "trainingInput.hyperparameters.params[0].minValue",
     "UNIT_REVERSE_LOG_SCALE needs minValue > 0", 0, 0},
    {PARAMS("{\"parameterName\": \"o\", \"type\": \"CATEGORICAL\", \"minValue\": 1, "
            "\"categoricalValues\": [\"a\"]}"), NULL,
     "trainingInput.hyperparameters.params[0].minValue",
     "only for DOUBLE and INTEGER parameters (this one is CATEGORICAL)", 0, 0},
    {PARAMS("{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minValue\": 0, "
            "\"maxValue\": 1, \"categoricalValues\": [\"a\"]}"), NULL,
     "trainingInput.hyperparameters.params[0].categoricalValues",
     "only for CATEGORICAL parameters (this one is DOUBLE)", 0, 0},
    {PARAMS("{\"parameterName\": \"o\", \"type\": \"CATEGORICAL\", \"categoricalValues\": []}"),
     NULL, "trainingInput.hyperparameters.params[0].categoricalValues",
     "must hold at least one value", 0, 0},
    {PARAMS(P_LR "," P_HU ", {\"parameterName\": \"o\", \"type\": \"CATEGORICAL\", "
                            "\"categoricalValues\": [\"sgd\", \"adam\", \"sgd\"]}"), NULL,
     "trainingInput.hyperparameters.params[2].categoricalValues[2]",
     "duplicate value \"sgd\" (also categoricalValues[0])", 0, 0},
    {PARAMS("{\"parameterName\": \"o\", \"type\": \"CATEGORICAL\", "
            "\"categoricalValues\": [\"a\", 1]}"), NULL,
     "trainingInput.hyperparameters.params[0].categoricalValues[1]",
     "expected a string, got 1", 0, 0},
    {PARAMS("{\"parameterName\": \"o\", \"type\": \"CATEGORICAL\"}"), NULL,
     "trainingInput.hyperparameters.params[0].categoricalValues", "required field is missing",
     0, 0},
    {PARAMS(P_LR "," P_HU "," P_OPT ", {\"parameterName\": \"b\", \"type\": \"DISCRETE\", "
                                    "\"discreteValues\": [64, 256, 128]}"), NULL,
     "trainingInput.hyperparameters.params[3].discreteValues[2]",
     "strictly increasing: 128 after 256", 0, 0},
    {PARAMS("{\"parameterName\": \"b\", \"type\": \"DISCRETE\", \"discreteValues\": [1, 1]}"),
     NULL, "trainingInput.hyperparameters.params[0].discreteValues[1]", "strictly increasing",
     0, 0},
    {PARAMS("{\"parameterName\": \"b\", \"type\": \"DISCRETE\", \"discreteValues\": [1, \"2\"]}"),
     NULL, "trainingInput.hyperparameters.params[0].discreteValues[1]", "expected a number", 0,
     0},
    {PARAMS("{\"parameterName\": \"b\", \"type\": \"DISCRETE\", \"discreteValues\": []}"),
     NULL, "trainingInput.hyperparameters.params[0].discreteValues", "at least one value", 0, 0},
    {PARAMS("{\"parameterName\": \"b\", \"type\": \"DISCRETE\"}"), NULL,
     "trainingInput.hyperparameters.params[0].discreteValues", "required field is missing", 0,
     0},
    {PARAMS("{\"parameterName\": \"n\", \"type\": \"INTEGER\", \"minValue\": 1, "
            "\"maxValue\": 4, \"discreteValues\": [1, 2]}"), NULL,
     "trainingInput.hyperparameters.params[0].discreteValues",
     "only for DISCRETE parameters (this one is INTEGER)", 0, 0},
    {PARAMS("{\"parameterName\": \"o\", \"type\": \"CATEGORICAL\", \"categoricalValues\": "
            "[\"a\"], \"scaleType\": \"UNIT_LOG_SCALE\"}"), NULL,
     "trainingInput.hyperparameters.params[0].scaleType",
     "applies only to DOUBLE, INTEGER and DISCRETE parameters", 0, 0},
    {PARAMS("{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minValue\": 1, "
            "\"maxValue\": 2, \"scaleType\": \"LOG\"}"), NULL,
     "trainingInput.hyperparameters.params[0].scaleType", "expected one of NONE", 0, 0},
    {HP("{\"algorithm\": \"GRID_SEARCH\"}"), NULL,
     "trainingInput.hyperparameters.params[0].type",
     "grid search cannot enumerate a DOUBLE parameter; use DISCRETE values or RANDOM_SEARCH",
     0, 0},
    {PARAMS("{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minvalue\": 1, "
            "\"maxValue\": 2}"), NULL,
     "trainingInput.hyperparameters.params[0].minvalue", "did you mean \"minValue\"?", 0, 0},
    {PARAMS("{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minValue\": 1, "
            "\"maxValue\": 2, \"goal\": \"MAXIMIZE\"}"), NULL,
     "trainingInput.hyperparameters.params[0].goal",
     "belongs in trainingInput.hyperparameters", 0, 0},
    /* conditional parameters: the condition */
    {PARAMS(OPT_IF("{\"parentIntValues\": {\"values\": [1]}, \"parameterSpec\": " MOM "}")),
     NULL, C0 ".parentIntValues",
     "\"optimizer\" is CATEGORICAL: the condition on its values is parentCategoricalValues", 0,
     0},
    {PARAMS("{\"parameterName\": \"lr\", \"type\": \"DOUBLE\", \"minValue\": 0.1, "
            "\"maxValue\": 1, \"conditionalParameterSpecs\": [{\"parentDiscreteValues\": "
            "{\"values\": [0.5]}, \"parameterSpec\": " P_HU "}]}"), NULL,
     "trainingInput.hyperparameters.params[0].conditionalParameterSpecs",
     "a DOUBLE parameter has no values for its children to exist under; make \"lr\" "
     "DISCRETE or INTEGER", 0, 0},
    {PARAMS(OPT_IF("{\"parentCategoricalValues\": {\"values\": [\"sdg\"]}, "
                   "\"parameterSpec\": " MOM "}")), NULL,
     C0 ".parentCategoricalValues.values[0]",
     "a string (\"sdg\") is not one of the categoricalValues of \"optimizer\" (sgd, adam) "
     "(did you mean \"sgd\"?)", 0, 0},
    {PARAMS("{\"parameterName\": \"hidden_units\", \"type\": \"INTEGER\", \"minValue\": 32, "
            "\"maxValue\": 512, \"conditionalParameterSpecs\": [{\"parentIntValues\": "
            "{\"values\": [\"64\", 16]}, \"parameterSpec\": " MOM "}]}"), NULL,
     C0 ".parentIntValues.values[1]",
     "16 is not a value \"hidden_units\" can take (32 to 512)", 0, 0},
    {PARAMS("{\"parameterName\": \"n\", \"type\": \"INTEGER\", \"minValue\": 1, "
            "\"maxValue\": 4, \"conditionalParameterSpecs\": [{\"parentIntValues\": "
            "{\"values\": [1.5, \"x\"]}, \"parameterSpec\": " MOM "}]}"), NULL,
     C0 ".parentIntValues.values[0]",
     "expected an integer (a number or a string of digits), got 1.5", 2, 0},
    {PARAMS("{\"parameterName\": \"batch_size\", \"type\": \"DISCRETE\", \"discreteValues\": "
            "[64, 128, 256], \"conditionalParameterSpecs\": [{\"parentDiscreteValues\": "
            "{\"values\": [100]}, \"parameterSpec\": " MOM "}]}"), NULL,
     C0 ".parentDiscreteValues.values[0]",
     "100 is not a value \"batch_size\" can take (discreteValues: 64, 128, 256)", 0, 0},
    {PARAMS(OPT_IF("{\"parameterSpec\": " MOM "}")), NULL, C0 ".parentCategoricalValues",
     "required field is missing (the values of \"optimizer\" the parameter exists for)", 0, 0},
    {PARAMS(OPT_IF("{\"parentCategoricalValue\": {\"values\": [\"sgd\"]}, "
                   "\"parameterSpec\": " MOM "}")), NULL, C0 ".parentCategoricalValue",
     "unknown field (did you mean \"parentCategoricalValues\"?)", 0, 0},
    {PARAMS(OPT_IF("{\"parentCategoricalValues\": {\"values\": [\"sgd\"]}, "
                   "\"parentIntValues\": {\"values\": [1]}, \"parameterSpec\": " MOM "}")),
     NULL, C0 ".parentIntValues",
     "give one condition (parentCategoricalValues is given too)", 0, 0},
    {PARAMS(OPT_IF("{\"parentCategoricalValues\": {\"values\": []}, \"parameterSpec\": " MOM
                   "}")), NULL, C0 ".parentCategoricalValues.values",
     "must hold at least one value of the parent", 0, 0},
    {PARAMS(OPT_IF("{\"parentCategoricalValues\": {\"values\": \"sgd\"}, "
                   "\"parameterSpec\": " MOM "}")), NULL, C0 ".parentCategoricalValues.values",
     "expected an array of string values, got a string (\"sgd\")", 0, 0},
    {PARAMS(OPT_IF("{\"parentCategoricalValues\": {\"value\": [\"sgd\"]}, "
                   "\"parameterSpec\": " MOM "}")), NULL, C0 ".parentCategoricalValues.value",
     "unknown field (did you mean \"values\"?)", 0, 0},
    {PARAMS(OPT_IF("{\"parentCategoricalValues\": [\"sgd\"], \"parameterSpec\": " MOM "}")),
     NULL, C0 ".parentCategoricalValues", "expected an object: {\"values\": [...]}", 0, 0},
    {PARAMS(OPT_IF("{\"parentCategoricalValues\": {\"values\": [\"sgd\", \"adam\", "
                   "\"sgd\"]}, \"parameterSpec\": " MOM "}")), NULL,
     C0 ".parentCategoricalValues.values[2]", "the same value as values[0]", 0, 0},
    /* conditional parameters: the entry and the tree */
    {PARAMS(OPT_IF("{\"parentCategoricalValues\": {\"values\": [\"sgd\"]}}")), NULL,
     C0 ".parameterSpec", "required field is missing (the conditional parameter", 0, 0},
    {PARAMS(OPT_IF("{\"parentCategoricalValues\": {\"values\": [\"sgd\"]}, "
                   "\"parameterSpec\": 3}")), NULL, C0 ".parameterSpec",
     "expected an object (a parameter), got 3", 0, 0},
    {PARAMS(OPT_IF("{\"parentCategoricalValues\": {\"values\": [\"sgd\"]}, "
                   "\"parameterSpec\": " MOM ", \"scaleType\": \"NONE\"}")), NULL,
     C0 ".scaleType", "a conditional parameter's own fields go in its parameterSpec", 0, 0},
    {PARAMS(OPT_IF("3")), NULL, C0, "expected an object (a conditional parameter", 0, 0},
    {PARAMS("{\"parameterName\": \"optimizer\", \"type\": \"CATEGORICAL\", "
            "\"categoricalValues\": [\"sgd\"], \"conditionalParameterSpecs\": {}}"), NULL,
     "trainingInput.hyperparameters.params[0].conditionalParameterSpecs",
     "expected an array of conditional parameters", 0, 0},
    {PARAMS("{\"parameterName\": \"optimizer\", \"type\": \"CATEGORICAL\", "
            "\"categoricalValues\": [\"sgd\"], \"parentCategoricalValues\": {}}"), NULL,
     "trainingInput.hyperparameters.params[0].parentCategoricalValues",
     "unknown field here (it belongs in each entry of a parameter's conditionalParameterSpecs)",
     0, 0},
    {PARAMS(OPT_IF(IF_SGD("{\"parameterName\": \"momentum\", \"type\": \"DOUBLE\", "
                          "\"minValue\": 0.9, \"maxValue\": 0.5}"))), NULL,
     C0 ".parameterSpec.maxValue", "must be >= minValue (0.9), got 0.5", 0, 0},
    {PARAMS(P_LR "," OPT_IF(IF_SGD(P_LR))), NULL,
     "trainingInput.hyperparameters.params[1].conditionalParameterSpecs[0].parameterSpec."
     "parameterName", "duplicate parameterName \"learning_rate\" (also params[0])", 0, 0},
    {PARAMS(OPT_IF(IF_SGD(MOM)) "," MOM), NULL,
     "trainingInput.hyperparameters.params[1].parameterName",
     "duplicate parameterName \"momentum\" (also params[0].conditionalParameterSpecs[0]."
     "parameterSpec)", 0, 0},
    {PARAMS(OPT_IF(IF_SGD(MOM) "," IF_SGD(MOM))), NULL,
     "trainingInput.hyperparameters.params[0].conditionalParameterSpecs[1].parameterSpec."
     "parameterName", "duplicate parameterName \"momentum\" (also params[0]."
     "conditionalParameterSpecs[0].parameterSpec)", 0, 0},
    {HP("{\"algorithm\": \"GRID_SEARCH\", \"params\": [" OPT_IF(IF_SGD(MOM)) "]}"), NULL,
     C0 ".parameterSpec.type", "grid search cannot enumerate a DOUBLE parameter", 0, 0},
    {PARAMS(OPT_IF(IF_SGD("{\"parameterName\": \"m\", \"type\": \"DISCRETE\", "
                          "\"discreteValues\": [0.5, 0.9], \"conditionalParameterSpecs\": "
                          "[{\"parentDiscreteValues\": {\"values\": [0.8]}, "
                          "\"parameterSpec\": " P_HU "}]}"))), NULL,
     C0 ".parameterSpec.conditionalParameterSpecs[0].parentDiscreteValues.values[0]",
     "0.8 is not a value \"m\" can take (discreteValues: 0.5, 0.9)", 0, 0},
    {PARAMS("{\"parameterName\": \"o\", \"type\": \"CATEGORICAL_\", \"categoricalValues\": "
            "[\"a\"], \"conditionalParameterSpecs\": [{\"parentCategoricalValues\": "
            "{\"values\": [\"b\"]}, \"parameterSpec\": " P_HU "}]}"), NULL,
     "trainingInput.hyperparameters.params[0].type", "did you mean \"CATEGORICAL\"?", 0, 0},
    /* the executor (extension) */
    {"{\"executor\": \"slurm\"}", NULL, "executor", "expected an object", 0, 0},
    {"{\"executor\": {}}", NULL, "executor.type", "required field is missing", 0, 0},
    {"{\"executor\": {\"type\": \"kubernetes\"}}", NULL, "executor.type",
     "expected one of local, slurm", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"partiton\": \"gpu\"}}", NULL,
     "executor.partiton", "did you mean \"partition\"?", 0, 0},
    {"{\"executor\": {\"type\": \"local\", \"partition\": \"gpu\"}}", NULL,
     "executor.partition", "applies to the slurm executor only", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"partition\": \"\"}}", NULL,
     "executor.partition", "must not be empty", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"timeLimit\": \"1h\"}}", NULL,
     "executor.timeLimit", "expected Slurm's time format", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"timeLimit\": \"1:2:3:4\"}}", NULL,
     "executor.timeLimit", "expected Slurm's time format", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"account\": \"a b\"}}", NULL,
     "executor.account", "must not contain spaces", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": \"--exclusive\"}}", NULL,
     "executor.extraArgs", "expected an array of strings", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"exclusive\"]}}", NULL,
     "executor.extraArgs[0]", "expected an sbatch option", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--constraint\", \"a100\"]}}",
     NULL, "executor.extraArgs[1]", "with its value attached", 2, 0},
    /* a long option that takes a value, given without one, would take the batch
     * script's path for it (sbatch then reads the script from its input) */
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--comment\"]}}", NULL,
     "executor.extraArgs[0]", "--comment takes a value: attach it (\"--comment=VALUE\"), or "
     "sbatch takes the batch script's path for it", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--exclusive\", \"--comm\"]}}",
     NULL, "executor.extraArgs[1]", "--comm would stand for --comment, which takes a value: "
     "attach it (\"--comment=VALUE\")", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--constraint\", \"a100\"]}}",
     NULL, "executor.extraArgs[0]", "--constraint takes a value", 2, 0},
    /* --export's value is required (it is no flag), and --conta is --container in
     * Slurm 22.05 (a later --container-id must not make it look ambiguous) */
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--export\"]}}", NULL,
     "executor.extraArgs[0]", "--export takes a value", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--conta\"]}}", NULL,
     "executor.extraArgs[0]", "--conta would stand for --container, which takes a value", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--exclusive\", "
     "\"--partition=gpu\"]}}", NULL, "executor.extraArgs[1]",
     "--partition is set by executor.partition; give it there", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"-pgpu\"]}}", NULL,
     "executor.extraArgs[0]", "-p is set by executor.partition", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--job-name=x\"]}}", NULL,
     "executor.extraArgs[0]", "--job-name is set by the tuner itself", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--cpus-per-task=4\"]}}", NULL,
     "executor.extraArgs[0]", "set by trainingInput.resources cores", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--part=gpu\"]}}", NULL,
     "executor.extraArgs[0]", "--part would stand for (or clash with) --partition, which "
     "executor.partition sets", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--mem=4G\"]}}", NULL,
     "executor.extraArgs[0]", "--mem would stand for (or clash with) --mem-per-cpu", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--out=x\"]}}", NULL,
     "executor.extraArgs[0]", "--out would stand for (or clash with) --output, which the tuner "
     "sets", 0, 0},
    /* options that take the job out of the tuner's hands: another cluster (its squeue
     * and scancel never see the job, which would run twice), held (pends forever), a
     * sbatch that waits for the job, a test that submits nothing */
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--clusters=other\"]}}", NULL,
     "executor.extraArgs[0]", "--clusters sends the job to another cluster, where the tuner's "
     "squeue and scancel", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--exclusive\", \"-Mother\"]}}",
     NULL, "executor.extraArgs[1]", "-M sends the job to another cluster", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--cluster=other\"]}}", NULL,
     "executor.extraArgs[0]", "--cluster would stand for --clusters, which sends the job", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--hold\"]}}", NULL,
     "executor.extraArgs[0]", "--hold submits the job held: it would wait in the queue until "
     "someone releases it", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"-H\"]}}", NULL,
     "executor.extraArgs[0]", "-H submits the job held", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--wait\"]}}", NULL,
     "executor.extraArgs[0]", "--wait makes sbatch wait for the job to end", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--test-only\"]}}", NULL,
     "executor.extraArgs[0]", "--test-only only asks Slurm when the job would start", 0, 0},
    /* short options bundled as sbatch's getopt reads them: each is checked (they went
     * through: -sH held the job, -vJother renamed it past the tuner's lookups) */
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"-sH\"]}}", NULL,
     "executor.extraArgs[0]", "-H (in \"-sH\") submits the job held", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"-vJother\"]}}", NULL,
     "executor.extraArgs[0]", "-J (in \"-vJother\") is set by the tuner itself", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"-va1-3\"]}}", NULL,
     "executor.extraArgs[0]", "-a (in \"-va1-3\") is set by the tuner itself", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"-QW\"]}}", NULL,
     "executor.extraArgs[0]", "-W (in \"-QW\") makes sbatch wait", 0, 0},
    /* after an option that takes a value, the rest is its value: "-CHx" is -C "Hx", no
     * error (the one error is the next element's) */
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"-CHx\", \"-H\"]}}", NULL,
     "executor.extraArgs[1]", "-H submits the job held", 0, 0},
    /* a short option without its value, "-", "--": each would take or end what follows */
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"-C\"]}}", NULL,
     "executor.extraArgs[0]", "-C takes a value: attach it (\"-Ca100\")", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"-\"]}}", NULL,
     "executor.extraArgs[0]", "\"-\" alone is no option", 0, 0},
    {"{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--\"]}}", NULL,
     "executor.extraArgs[0]", "\"--\" would end sbatch's options", 0, 0},
    {TI("{\"resources\": {\"worker\": {\"memory\": \"0x10\"}}}"), NULL,
     "trainingInput.resources.worker.memory", "expected an amount of memory", 0, 0},
    {TI("{\"resources\": {\"worker\": {\"memory\": \"4Gx\"}}}"), NULL,
     "trainingInput.resources.worker.memory", "expected an amount of memory", 0, 0},
    {TI("{\"resources\": {\"worker\": {\"memory\": \"1e3\"}}}"), NULL,
     "trainingInput.resources.worker.memory", "expected an amount of memory", 0, 0},
    {TI("{\"partition\": \"gpu\"}"), NULL, "trainingInput.partition",
     "belongs in executor (at the top level)", 0, 0},
    /* GPUs by AI Platform's acceleratorConfig, memory */
    {TI("{\"workerConfig\": []}"), NULL, "trainingInput.workerConfig",
     "expected an object (AI Platform's ReplicaConfig)", 0, 0},
    {TI("{\"workerConfig\": {\"acceleratorConfg\": {}}}"), NULL,
     "trainingInput.workerConfig.acceleratorConfg", "did you mean \"acceleratorConfig\"?", 0, 0},
    {TI("{\"workerConfig\": {\"acceleratorConfig\": {\"type\": \"NVIDIA_TESLA_T4\"}}}"), NULL,
     "trainingInput.workerConfig.acceleratorConfig.count", "required field is missing", 0, 0},
    {TI("{\"workerConfig\": {\"acceleratorConfig\": {\"count\": \"two\"}}}"), NULL,
     "trainingInput.workerConfig.acceleratorConfig.count", "expected an integer", 0, 0},
    {TI("{\"workerConfig\": {\"acceleratorConfig\": {\"count\": 65}}}"), NULL,
     "trainingInput.workerConfig.acceleratorConfig.count", "must be <= 64", 0, 0},
    {TI("{\"masterConfig\": {\"acceleratorConfig\": {\"count\": 1, \"type\": "
        "\"TPU_V3\"}}}"), NULL, "trainingInput.masterConfig.acceleratorConfig.type",
     "TPUs are not supported", 0, 0},
    {TI("{\"masterConfig\": {\"acceleratorConfig\": {\"count\": 1, \"type\": "
        "\"NVIDIA_TESLA_T5\"}}}"), NULL, "trainingInput.masterConfig.acceleratorConfig.type",
     "did you mean \"NVIDIA_TESLA_T4\"?", 0, 0},
    {TI("{\"resources\": {\"worker\": {\"gpus\": 1}}, \"workerConfig\": "
        "{\"acceleratorConfig\": {\"count\": 2}}}"), NULL,
     "trainingInput.workerConfig.acceleratorConfig.count",
     "says 2 GPUs but trainingInput.resources.worker.gpus says 1; give one", 0, 0},
    {TI("{\"masterConfig\": {\"imageUri\": 5}}"), NULL, "trainingInput.masterConfig.imageUri",
     "expected a string", 0, 0},
    {TI("{\"resources\": {\"worker\": {\"memory\": \"4 GB\"}}}"), NULL,
     "trainingInput.resources.worker.memory", "expected an amount of memory such as \"4G\"", 0,
     0},
    {TI("{\"resources\": {\"worker\": {\"memory\": 0}}}"), NULL,
     "trainingInput.resources.worker.memory", "must be from 1 MiB", 0, 0},
    {TI("{\"resources\": {\"worker\": {\"memory\": true}}}"), NULL,
     "trainingInput.resources.worker.memory", "expected an amount of memory", 0, 0},
    /* env: names, contract variables, values, forms */
    {TI("{\"env\": {\"1BAD\": \"x\"}}"), NULL, "trainingInput.env.1BAD",
     "'1BAD' is not a variable name", 0, 0},
    {TI("{\"env\": {\"A-B\": \"x\"}}"), NULL, "trainingInput.env.A-B",
     "is not a variable name", 0, 0},
    {TI("{\"env\": {\"TF_CONFIG\": \"{}\"}}"), NULL, "trainingInput.env.TF_CONFIG",
     "TF_CONFIG is the tuner's to set for every replica", 0, 0},
    {TI("{\"workerConfig\": {\"env\": {\"OMP_NUM_THREADS\": \"4\"}}}"), NULL,
     "trainingInput.workerConfig.env.OMP_NUM_THREADS",
     "give the replicas' cores in trainingInput.resources", 0, 0},
    {TI("{\"env\": {\"SEED\": 1}}"), NULL, "trainingInput.env.SEED",
     "the value of SEED must be a string (quote numbers: \"1\"), got 1", 0, 0},
    {TI("{\"env\": \"A=1\"}"), NULL, "trainingInput.env", "expected an object such as", 0, 0},
    {TI("{\"env\": [{\"name\": \"A\", \"value\": \"1\"}, {\"name\": \"A\", "
        "\"value\": \"2\"}]}"), NULL, "trainingInput.env[1].name", "A is given twice", 0, 0},
    {TI("{\"env\": [{\"name\": \"A\"}]}"), NULL, "trainingInput.env[0].value",
     "required", 0, 0},
    {TI("{\"env\": [{\"name\": \"A\", \"value\": \"1\", \"valu\": 2}]}"), NULL,
     "trainingInput.env[0].valu", "did you mean \"value\"?", 0, 0},
    /* the restart policy's backoff and repeat rule */
    {TI("{\"restartPolicy\": {\"backoffSeconds\": -1}}"), NULL,
     "trainingInput.restartPolicy.backoffSeconds", "must be from 0 to 3600 seconds", 0, 0},
    {TI("{\"restartPolicy\": {\"backoffSeconds\": 10, \"maxBackoffSeconds\": 5}}"), NULL,
     "trainingInput.restartPolicy.maxBackoffSeconds", "5 is less than backoffSeconds (10)", 0,
     0},
    /* one message for a bad backoffSeconds, not also maxBackoffSeconds against its default */
    {TI("{\"restartPolicy\": {\"backoffSeconds\": \"x\", \"maxBackoffSeconds\": 0.5}}"), NULL,
     "trainingInput.restartPolicy.backoffSeconds", "expected a number", 0, 0},
    {TI("{\"restartPolicy\": {\"backofSeconds\": 0.2, \"maxBackoffSeconds\": 0.5}}"), NULL,
     "trainingInput.restartPolicy.backofSeconds", "did you mean \"backoffSeconds\"?", 0, 0},
    {TI("{\"restartPolicy\": {\"failOnRepeatedError\": \"yes\"}}"), NULL,
     "trainingInput.restartPolicy.failOnRepeatedError", "expected a boolean", 0, 0},
};

static void test_bad_specs(void) {
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        const bad_case *bc = &BAD[i];
        char *text = bc->patch ? patched(bc->patch) : NULL;
        tn_spec s;
        spec_errors errs;
        int rc = spec_parse(text ? text : bc->raw, "spec.json", bc->ask_tell, &s, &errs);
        int want_n = bc->nerrors ? bc->nerrors : 1;
        int found = has_error(&errs, bc->path, bc->msg);
        CHECK_INT_EQ(rc, TN_EINVAL);
        CHECK(spec_is_zero(&s));
        CHECK_MSG(found && errs.n == (size_t)want_n,
                  "case %zu (%s): want %d error(s) incl. %s: ...%s..., got %zu", i,
                  bc->patch ? bc->patch : bc->raw, want_n, bc->path, bc->msg, errs.n);
        if (!found || errs.n != (size_t)want_n) print_errors(&errs);
        spec_errors_clear(&errs);
        CHECK(errs.n == 0 && errs.items == NULL);
        free(text);
    }
    CHECK(sizeof BAD / sizeof BAD[0] >= 30);
}

/* The example test message of the brief, exactly. */
static void test_unknown_field_message(void) {
    char *text = patched(HP("{\"maxTrail\": 20}"));
    tn_spec s;
    spec_errors errs;
    CHECK_INT_EQ(spec_parse(text, "spec.json", 0, &s, &errs), TN_EINVAL);
    CHECK_INT_EQ(errs.n, 1);
    if (errs.n == 1) {
        char line[256];
        snprintf(line, sizeof line, "%s: %s", errs.items[0].path, errs.items[0].message);
        CHECK_MSG(strcmp(line, "trainingInput.hyperparameters.maxTrail: unknown field (did "
                               "you mean \"maxTrials\"?)") == 0, "got %s", line);
    }
    spec_errors_clear(&errs);
    free(text);
}

/* Five independent mistakes at five levels: all five reported in one parse. */
static void test_five_errors_at_once(void) {
    char *text = patched("{\"jobId\": \"bad id\", \"trainingInput\": {"
                         "\"scaleTier\": \"PREMIUM_1\", \"trialTimeout\": \"soon\","
                         "\"hyperparameters\": {\"maxTrail\": 3, \"params\": ["
                         P_LR "," P_HU "," P_OPT ", {\"parameterName\": \"batch_size\", "
                         "\"type\": \"DISCRETE\", \"discreteValues\": [64, 32]}]}}}");
    tn_spec s;
    spec_errors errs;
    CHECK_INT_EQ(spec_parse(text, "spec.json", 0, &s, &errs), TN_EINVAL);
    CHECK_INT_EQ(errs.n, 5);
    CHECK(has_error(&errs, "jobId", "must start with a letter"));
    CHECK(has_error(&errs, "trainingInput.scaleTier", "not supported locally"));
    CHECK(has_error(&errs, "trainingInput.trialTimeout", "expected a duration"));
    CHECK(has_error(&errs, "trainingInput.hyperparameters.maxTrail", "did you mean"));
    CHECK(has_error(&errs, "trainingInput.hyperparameters.params[3].discreteValues[1]",
                    "strictly increasing"));
    if (errs.n != 5) print_errors(&errs);
    CHECK(spec_is_zero(&s));
    spec_errors_clear(&errs);
    free(text);
}

/* ---- Happy paths ---- */

/* Parses text, which must be valid; on failure prints the errors. */
static int parse_ok(const char *text, int for_ask_tell, tn_spec *s) {
    spec_errors errs;
    int rc = spec_parse(text, "spec.json", for_ask_tell, s, &errs);
    CHECK_INT_EQ(rc, 0);
    CHECK_INT_EQ(errs.n, 0);
    if (rc != 0) print_errors(&errs);
    spec_errors_clear(&errs);
    return rc;
}

/* trainingInput reaches every replica in TF_CONFIG, one environment variable (Linux:
 * at most 128 KiB): a spec whose trainingInput is over 96 KiB as JSON cannot start a
 * replica and is refused; one just under passes, and an ask/tell study, whose trials
 * the tuner does not start, is not held to it. */
static char *spec_with_env(int vars, size_t bytes) {
    size_t cap = (size_t)vars * (bytes + 16) + 64, n = 0;
    char *patch = tn_xmalloc(cap);
    n += (size_t)snprintf(patch + n, cap - n, "{\"trainingInput\": {\"env\": {");
    for (int i = 0; i < vars; i++) {
        n += (size_t)snprintf(patch + n, cap - n, "%s\"V%d\": \"", i ? ", " : "", i);
        memset(patch + n, 'a', bytes);
        n += bytes;
        n += (size_t)snprintf(patch + n, cap - n, "\"");
    }
    snprintf(patch + n, cap - n, "}}}");
    char *text = patched(patch);
    free(patch);
    return text;
}

static void test_job_size(void) {
    tn_spec s;
    spec_errors errs;
    char *big = spec_with_env(4, 30000), *fits = spec_with_env(3, 30000);
    CHECK_INT_EQ(spec_parse(big, "spec.json", 0, &s, &errs), TN_EINVAL);
    CHECK_INT_EQ(errs.n, 1);
    CHECK(has_error(&errs, "trainingInput", "TF_CONFIG, one environment variable"));
    spec_errors_clear(&errs);
    if (parse_ok(big, 1, &s) == 0) spec_clear(&s);
    if (parse_ok(fits, 0, &s) == 0) spec_clear(&s);
    free(big);
    free(fits);
}

/* null means not set (proto3 JSON): a hyperparameterMetricTag and goal given as null
 * beside metrics are not "both forms". */
static void test_null_tag_beside_metrics(void) {
    tn_spec s;
    if (parse_ok("{\"jobId\": \"n\", \"trainingInput\": {\"command\": [\"t\"], "
                 "\"hyperparameters\": {\"hyperparameterMetricTag\": null, \"goal\": null, "
                 "\"metrics\": [{\"metricId\": \"acc\", \"goal\": \"MAXIMIZE\"}], "
                 "\"params\": [{\"parameterName\": \"x\", \"type\": \"DOUBLE\", "
                 "\"minValue\": 0, \"maxValue\": 1}]}}}",
                 0, &s) == 0) {
        CHECK_INT_EQ(s.nmetrics, 1);
        CHECK(strcmp(s.metrics[0].id, "acc") == 0);
        spec_clear(&s);
    }
}

/* Thousands of categories make each Bayesian suggestion take seconds: the spec's
 * notes say so (it stays valid), and not under RANDOM_SEARCH nor below the limit. */
static char *spec_with_categories(size_t n, const char *algorithm) {
    tn_buf b = {0};
    tn_buf_str(&b, "{\"jobId\": \"cats\", \"trainingInput\": {\"hyperparameters\": {");
    if (algorithm) tn_buf_printf(&b, "\"algorithm\": \"%s\", ", algorithm);
    tn_buf_str(&b, "\"params\": [{\"parameterName\": \"c\", \"type\": \"CATEGORICAL\", "
                   "\"categoricalValues\": [");
    for (size_t i = 0; i < n; i++) tn_buf_printf(&b, "%s\"v%zu\"", i ? ", " : "", i);
    tn_buf_str(&b, "]}]}}}");
    return b.data;
}

/* A study the tuner runs with np CATEGORICAL parameters of 94 values each: "" and the
 * printable ASCII characters but the quote and the backslash, so that 20,000 values
 * and more fit in trainingInput's 96 KiB. */
static char *spec_with_short_categories(size_t np) {
    tn_buf b = {0};
    tn_buf_str(&b, "{\"jobId\":\"cats\",\"trainingInput\":{\"command\":[\"t\"],"
                   "\"hyperparameters\":{\"params\":[");
    for (size_t p = 0; p < np; p++) {
        tn_buf_printf(&b, "%s{\"parameterName\":\"p%zu\",\"type\":\"CATEGORICAL\","
                          "\"categoricalValues\":[\"\"", p ? "," : "", p);
        for (int ch = ' '; ch <= '~'; ch++)
            if (ch != '"' && ch != '\\') tn_buf_printf(&b, ",\"%c\"", ch);
        tn_buf_str(&b, "]}");
    }
    tn_buf_str(&b, "]}}}");
    return b.data;
}

/* Past 20,000 categories in all, Bayesian optimisation's note; for a study run by the
 * tuner too (many parameters of short values), and not for random search. */
static void test_slow_bayesian_note(void) {
    const struct {
        size_t n;        /* values of one parameter, or */
        size_t nparams;  /* parameters of 94 values (a study the tuner runs) */
        const char *algorithm;
        int noted;
    } cases[] = {{20001, 0, NULL, 1}, {20000, 0, NULL, 0}, {30000, 0, "RANDOM_SEARCH", 0},
                 {0, 213, NULL, 1}, {0, 212, NULL, 0}}; /* 20,022 and 19,928 values */
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int run = cases[k].nparams > 0;
        char *text = run ? spec_with_short_categories(cases[k].nparams)
                         : spec_with_categories(cases[k].n, cases[k].algorithm);
        tn_spec s;
        if (parse_ok(text, !run, &s) == 0) {
            int noted = s.notes && strstr(s.notes, "every suggestion will take seconds");
            CHECK_MSG(noted == cases[k].noted, "case %zu, %s: notes %s", k,
                      cases[k].algorithm ? cases[k].algorithm : "Bayesian",
                      s.notes ? s.notes : "(none)");
            spec_clear(&s);
        }
        free(text);
    }
}

static void test_design_example(void) {
    tn_spec s;
    if (parse_ok(DESIGN_SPEC, 0, &s) != 0) return;
    CHECK_STR_CONTAINS(s.job_id, "fashion_mlp");
    CHECK(strcmp(s.job_id, "fashion_mlp") == 0);
    CHECK_INT_EQ(s.scale_tier, SPEC_CUSTOM);
    CHECK_INT_EQ(s.worker_count, 1);
    CHECK_INT_EQ(s.ps_count, 0);
    CHECK_INT_EQ(s.evaluator_count, 0);
    CHECK_INT_EQ(s.use_chief_in_tf_config, 1);
    CHECK(strcmp(s.job_dir, "runs/fashion_mlp") == 0);
    CHECK_INT_EQ(s.ncommand, 3);
    CHECK(s.ncommand == 3 && strcmp(s.command[0], "trainer") == 0 &&
          strcmp(s.command[2], "--epochs=5") == 0);
    CHECK(s.python_module == NULL);
    CHECK_INT_EQ(s.nargs, 0);
    CHECK_INT_EQ(s.goal, SPEC_MAXIMIZE);
    CHECK(strcmp(s.metric_tag, "accuracy") == 0);
    CHECK_INT_EQ(s.max_trials, 20);
    CHECK_INT_EQ(s.max_parallel_trials, 2);
    CHECK_INT_EQ(s.max_failed_trials, 4);
    CHECK_INT_EQ(s.enable_early_stopping, 1);
    /* enableTrialEarlyStopping alone: the default rule, asha with eta 3 and the grace
     * period an eighth of the trials' length (gracePeriod 0) */
    CHECK_INT_EQ(s.early_stopping.policy, ES_ASHA);
    CHECK_INT_EQ(s.early_stopping.reduction_factor, 3);
    CHECK(s.early_stopping.grace_period == 0 && s.early_stopping.max_step == 0);
    CHECK_INT_EQ(s.algorithm, SP_ALGO_UNSPECIFIED);
    CHECK(s.resume_previous_job_id == NULL);
    CHECK_INT_EQ(s.max_replica_restarts, 5);
    CHECK_INT_EQ(s.max_job_retries, 3);
    CHECK(s.trial_timeout_seconds == 0);
    for (int t = 0; t < TF_NTYPES; t++) {
        CHECK_INT_EQ(s.resources[t].cores, 1);
        CHECK_INT_EQ(s.resources[t].gpus, 0);
    }

    CHECK_INT_EQ(s.space.n, 4);
    if (s.space.n == 4) {
        const sp_param *p = s.space.params;
        CHECK(strcmp(p[0].name, "learning_rate") == 0);
        CHECK_INT_EQ(p[0].type, SP_DOUBLE);
        CHECK_INT_EQ(p[0].scale, SP_LOG);
        CHECK_NEAR(p[0].min, 0.001, 0, 0);
        CHECK_NEAR(p[0].max, 0.3, 0, 0);
        CHECK_INT_EQ(p[1].type, SP_INTEGER);
        CHECK_INT_EQ(p[1].scale, SP_SCALE_NONE);
        CHECK_NEAR(p[1].min, 32, 0, 0);
        CHECK_NEAR(p[1].max, 512, 0, 0);
        CHECK_INT_EQ(p[2].type, SP_CATEGORICAL);
        CHECK_INT_EQ(p[2].ncategories, 2);
        CHECK(p[2].ncategories == 2 && strcmp(p[2].categories[1], "adam") == 0);
        CHECK_INT_EQ(p[3].type, SP_DISCRETE);
        CHECK_INT_EQ(p[3].nvalues, 3);
        CHECK(p[3].nvalues == 3 && p[3].values[0] == 64 && p[3].values[2] == 256);
        CHECK_INT_EQ(sp_space_find(&s.space, "batch_size"), 3);
    }

    /* The trainingInput object outlives the parse: TF_CONFIG's "job". */
    CHECK(json_is_object(s.training_input));
    CHECK(strcmp(json_string_value(json_object_get(s.training_input, "scaleTier")), "CUSTOM")
          == 0);
    CHECK(json_is_object(json_object_get(s.training_input, "hyperparameters")));

    CHECK(strcmp(spec_replica_name(&s, TF_CHIEF), "chief") == 0);
    CHECK(strcmp(spec_replica_name(&s, TF_WORKER), "worker") == 0);
    CHECK(strcmp(spec_replica_name(&s, TF_PS), "ps") == 0);
    CHECK(strcmp(spec_replica_name(&s, TF_EVALUATOR), "evaluator") == 0);
    CHECK_INT_EQ(spec_replica_count(&s, TF_CHIEF), 1);
    CHECK_INT_EQ(spec_replica_count(&s, TF_WORKER), 1);
    CHECK_INT_EQ(spec_replica_count(&s, TF_PS), 0);
    CHECK_INT_EQ(spec_replica_count(&s, TF_EVALUATOR), 0);
    spec_clear(&s);
    CHECK(spec_is_zero(&s));
    spec_clear(&s); /* a cleared spec clears again */
    spec_clear(NULL);
    spec_errors_clear(NULL);
}

#define MINIMAL(ti)                                                                       \
    "{\"jobId\": \"m\", \"trainingInput\": {" ti "\"hyperparameters\": {\"params\": ["    \
    "{\"parameterName\": \"x\", \"type\": \"INTEGER\", \"minValue\": 1, \"maxValue\": 3}]}}}"

static void test_defaults(void) {
    tn_spec s;
    if (parse_ok(MINIMAL("\"command\": [\"t\"],"), 0, &s) != 0) return;
    CHECK_INT_EQ(s.scale_tier, SPEC_BASIC);
    CHECK_INT_EQ(s.worker_count + s.ps_count + s.evaluator_count, 0);
    CHECK(strcmp(s.job_dir, "runs/m") == 0);
    CHECK(strcmp(s.metric_tag, "training/hptuning/metric") == 0);
    CHECK_INT_EQ(s.goal, SPEC_MAXIMIZE);
    CHECK_INT_EQ(s.max_trials, 1);
    CHECK_INT_EQ(s.max_parallel_trials, 1);
    CHECK_INT_EQ(s.max_failed_trials, 1); /* 0 means maxTrials */
    CHECK_INT_EQ(s.enable_early_stopping, 0);
    CHECK_INT_EQ(s.early_stopping.policy, ES_NONE);
    CHECK(s.early_stopping.grace_period == 0 && s.early_stopping.min_trials == 0);
    CHECK_INT_EQ(s.algorithm, SP_ALGO_UNSPECIFIED);
    CHECK_INT_EQ(s.use_chief_in_tf_config, 1);
    CHECK_INT_EQ(s.max_replica_restarts, 5);
    CHECK_INT_EQ(s.max_job_retries, 3);
    CHECK(s.trial_timeout_seconds == 0);
    CHECK_INT_EQ(s.resources[TF_CHIEF].cores, 1);
    CHECK_INT_EQ(s.resources[TF_CHIEF].gpus, 0);
    CHECK(s.args == NULL && s.nargs == 0);
    CHECK_INT_EQ(s.space.n, 1);
    CHECK_INT_EQ(spec_replica_count(&s, TF_WORKER), 0);
    spec_clear(&s);

    /* maxFailedTrials 0 is AI Platform's "decide for me": maxTrials. null is "not set". */
    char *text = patched(HP("{\"maxFailedTrials\": 0, \"maxParallelTrials\": null, "
                            "\"goal\": \"GOAL_TYPE_UNSPECIFIED\", \"enableTrialEarlyStopping\": "
                            "null, \"hyperparameterMetricTag\": null}"));
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.max_failed_trials, 20);
        CHECK_INT_EQ(s.max_parallel_trials, 1);
        CHECK_INT_EQ(s.goal, SPEC_MAXIMIZE);
        CHECK_INT_EQ(s.enable_early_stopping, 0);
        CHECK(strcmp(s.metric_tag, "training/hptuning/metric") == 0);
        spec_clear(&s);
    }
    free(text);
    char nulls[] = MINIMAL("\"command\": [\"t\"], \"jobDir\": null, \"scaleTier\": null, "
                           "\"resources\": null,");
    if (parse_ok(nulls, 0, &s) == 0) {
        CHECK(strcmp(s.job_dir, "runs/m") == 0);
        CHECK_INT_EQ(s.scale_tier, SPEC_BASIC);
        spec_clear(&s);
    }
}

/* jobId: at most 128 characters; resumePreviousJobId follows the same rule. */
/* Vertex AI's metrics: several, in order, the first also the metric tag and goal
 * everything of one metric reads; the one-metric form (and the default) one metric. */
static void test_metrics(void) {
    tn_spec s;
    char *text = patched(MX("[" MET("loss", "MINIMIZE") "," MET("accuracy", "MAXIMIZE") ","
                            MET("latency", "MINIMIZE") "]"));
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.nmetrics, 3);
        CHECK(!strcmp(s.metrics[0].id, "loss") && s.metrics[0].goal == SPEC_MINIMIZE);
        CHECK(!strcmp(s.metrics[1].id, "accuracy") && s.metrics[1].goal == SPEC_MAXIMIZE);
        CHECK(!strcmp(s.metrics[2].id, "latency") && s.metrics[2].goal == SPEC_MINIMIZE);
        CHECK(!strcmp(s.metric_tag, "loss") && s.goal == SPEC_MINIMIZE);
        CHECK(!s.early_stopping.maximize); /* the rule judges the first metric */
        /* enableTrialEarlyStopping alone: dominance with several metrics, at its own
         * minTrials */
        CHECK_INT_EQ(s.early_stopping.policy, ES_DOMINANCE);
        CHECK_INT_EQ(es_min_trials(&s.early_stopping), ES_DOMINANCE_MIN_TRIALS);
        spec_clear(&s);
    }
    free(text);
    text = patched(HP("{\"goal\": null, \"hyperparameterMetricTag\": null, \"metrics\": ["
                      MET("a", "MAXIMIZE") "," MET("b", "MINIMIZE") "], \"earlyStopping\": "
                      "{\"minTrials\": 3}}"));
    if (parse_ok(text, 0, &s) == 0) {
        CHECK(s.early_stopping.policy == ES_DOMINANCE && s.early_stopping.min_trials == 3);
        spec_clear(&s);
    }
    free(text);
    text = patched(HP("{\"goal\": null, \"hyperparameterMetricTag\": null, \"metrics\": ["
                      MET("a", "MAXIMIZE") "," MET("b", "MINIMIZE") "], \"earlyStopping\": "
                      "{\"policy\": \"asha\"}}"));
    if (parse_ok(text, 0, &s) == 0) { /* a named rule judges the first metric */
        CHECK_INT_EQ(s.early_stopping.policy, ES_ASHA);
        spec_clear(&s);
    }
    free(text);
    /* one metric: the default stays ASHA; dominance can be named */
    text = patched(HP("{\"earlyStopping\": {\"policy\": \"Dominance\"}}"));
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.early_stopping.policy, ES_DOMINANCE);
        spec_clear(&s);
    }
    free(text);
    if (parse_ok(DESIGN_SPEC, 0, &s) == 0) {
        CHECK_INT_EQ(s.early_stopping.policy, ES_DEFAULT_POLICY);
        spec_clear(&s);
    }
    text = patched(MX("[" MET4("a") "," MET4("b") "," MET4("c") "," MET4("d") "]"));
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.nmetrics, SPEC_MAX_METRICS);
        CHECK(!strcmp(s.metrics[15].id, "d4"));
        spec_clear(&s);
    }
    free(text);
    /* the one-metric form */
    if (parse_ok(DESIGN_SPEC, 0, &s) == 0) {
        CHECK_INT_EQ(s.nmetrics, 1);
        CHECK(!strcmp(s.metrics[0].id, "accuracy") && s.metrics[0].goal == SPEC_MAXIMIZE);
        spec_clear(&s);
    }
    text = patched(HP("{\"goal\": \"MINIMIZE\", \"hyperparameterMetricTag\": null}"));
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.nmetrics, 1);
        CHECK(!strcmp(s.metrics[0].id, "training/hptuning/metric") &&
              s.metrics[0].goal == SPEC_MINIMIZE);
        spec_clear(&s);
    }
    free(text);
    /* "metrics": null is not given (proto3 JSON) */
    text = patched(HP("{\"metrics\": null}"));
    if (parse_ok(text, 0, &s) == 0) {
        CHECK(s.nmetrics == 1 && !strcmp(s.metrics[0].id, "accuracy"));
        spec_clear(&s);
    }
    free(text);
}

static void test_job_id_length(void) {
    char id[130], patch[300];
    memset(id, 'a', 129);
    id[129] = '\0';
    tn_spec s;
    spec_errors errs;
    snprintf(patch, sizeof patch, "{\"jobId\": \"%s\"}", id);
    char *text = patched(patch);
    CHECK_INT_EQ(spec_parse(text, "spec.json", 0, &s, &errs), TN_EINVAL);
    CHECK(errs.n == 1 && has_error(&errs, "jobId", "at most 128 characters"));
    spec_errors_clear(&errs);
    free(text);
    id[128] = '\0';
    snprintf(patch, sizeof patch, "{\"jobId\": \"%s\"}", id);
    text = patched(patch);
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(strlen(s.job_id), 128);
        spec_clear(&s);
    }
    free(text);
}

static void test_tiers(void) {
    tn_spec s;
    if (parse_ok(MINIMAL("\"command\": [\"t\"], \"scaleTier\": \"BASIC_GPU\","), 0, &s) == 0) {
        CHECK_INT_EQ(s.scale_tier, SPEC_BASIC_GPU);
        CHECK_INT_EQ(s.resources[TF_CHIEF].gpus, 1);
        CHECK_INT_EQ(s.resources[TF_WORKER].gpus, 0);
        CHECK_INT_EQ(s.worker_count + s.ps_count + s.evaluator_count, 0);
        spec_clear(&s);
    }
    if (parse_ok(MINIMAL("\"command\": [\"t\"], \"scaleTier\": \"BASIC_GPU\", \"resources\": "
                         "{\"chief\": {\"cores\": 4, \"gpus\": 2}},"), 0, &s) == 0) {
        CHECK_INT_EQ(s.resources[TF_CHIEF].cores, 4);
        CHECK_INT_EQ(s.resources[TF_CHIEF].gpus, 2);
        spec_clear(&s);
    }
    if (parse_ok(MINIMAL("\"command\": [\"t\"], \"scaleTier\": \"STANDARD_1\","), 0, &s) == 0) {
        CHECK_INT_EQ(s.scale_tier, SPEC_STANDARD_1);
        CHECK_INT_EQ(spec_replica_count(&s, TF_WORKER), 4);
        CHECK_INT_EQ(spec_replica_count(&s, TF_PS), 3);
        CHECK_INT_EQ(spec_replica_count(&s, TF_EVALUATOR), 0);
        spec_clear(&s);
    }
    /* CUSTOM with AI Platform's int64-as-string counts. */
    if (parse_ok(MINIMAL("\"command\": [\"t\"], \"scaleTier\": \"CUSTOM\", \"workerCount\": "
                         "\"2\", \"parameterServerCount\": \"1\", \"evaluatorCount\": 1,"),
                 0, &s) == 0) {
        CHECK_INT_EQ(s.worker_count, 2);
        CHECK_INT_EQ(s.ps_count, 1);
        CHECK_INT_EQ(s.evaluator_count, 1);
        spec_clear(&s);
    }
    /* CUSTOM with no counts: the chief alone. */
    if (parse_ok(MINIMAL("\"command\": [\"t\"], \"scaleTier\": \"CUSTOM\","), 0, &s) == 0) {
        CHECK_INT_EQ(s.worker_count + s.ps_count + s.evaluator_count, 0);
        spec_clear(&s);
    }
}

static void test_master_and_extensions(void) {
    tn_spec s;
    const char *text = MINIMAL(
        "\"command\": [\"t\"], \"useChiefInTfConfig\": false, \"scaleTier\": \"CUSTOM\", "
        "\"workerCount\": 2, \"resources\": {\"master\": {\"cores\": 8}, \"worker\": "
        "{\"cores\": 2, \"gpus\": 1}, \"ps\": {}}, \"restartPolicy\": {\"maxReplicaRestarts\": "
        "0, \"maxJobRetries\": 7}, \"trialTimeout\": \"1.5s\", \"args\": [\"--a=1\", \"--b\"],");
    if (parse_ok(text, 0, &s) != 0) return;
    CHECK(strcmp(spec_replica_name(&s, TF_CHIEF), "master") == 0);
    CHECK(strcmp(spec_replica_name(&s, TF_WORKER), "worker") == 0);
    CHECK_INT_EQ(s.resources[TF_CHIEF].cores, 8);
    CHECK_INT_EQ(s.resources[TF_CHIEF].gpus, 0);
    CHECK_INT_EQ(s.resources[TF_WORKER].cores, 2);
    CHECK_INT_EQ(s.resources[TF_WORKER].gpus, 1);
    CHECK_INT_EQ(s.resources[TF_PS].cores, 1);
    CHECK_INT_EQ(s.max_replica_restarts, 0);
    CHECK_INT_EQ(s.max_job_retries, 7);
    CHECK_NEAR(s.trial_timeout_seconds, 1.5, 0, 0);
    CHECK_INT_EQ(s.nargs, 2);
    CHECK(s.nargs == 2 && strcmp(s.args[1], "--b") == 0);
    spec_clear(&s);

    if (parse_ok(MINIMAL("\"command\": [\"t\"], \"trialTimeout\": 600,"), 0, &s) == 0) {
        CHECK_NEAR(s.trial_timeout_seconds, 600, 0, 0);
        spec_clear(&s);
    }
    if (parse_ok(MINIMAL("\"command\": [\"t\"], \"trialTimeout\": \"600s\","), 0, &s) == 0) {
        CHECK_NEAR(s.trial_timeout_seconds, 600, 0, 0);
        spec_clear(&s);
    }
}

static void test_program(void) {
    tn_spec s;
    /* ask/tell: neither command nor pythonModule. */
    const char *none = MINIMAL("");
    if (parse_ok(none, 1, &s) == 0) {
        CHECK(s.command == NULL && s.ncommand == 0 && s.python_module == NULL);
        spec_clear(&s);
    }
    spec_errors errs;
    CHECK_INT_EQ(spec_parse(none, "spec.json", 0, &s, &errs), TN_EINVAL);
    CHECK(has_error(&errs, "trainingInput", "needs \"command\""));
    spec_errors_clear(&errs);
    /* errs may be NULL: the errors are discarded. */
    CHECK_INT_EQ(spec_parse(none, "spec.json", 0, &s, NULL), TN_EINVAL);

    if (parse_ok(MINIMAL("\"pythonModule\": \"trainer.task\","), 0, &s) == 0) {
        CHECK(strcmp(s.python_module, "trainer.task") == 0);
        CHECK(s.command == NULL);
        spec_clear(&s);
    }
}

static void test_search_fields(void) {
    tn_spec s;
    char *text = patched(HP("{\"goal\": \"MINIMIZE\", \"algorithm\": \"GRID_SEARCH\", "
                            "\"resumePreviousJobId\": \"older_study\", \"params\": ["
                            P_HU "," P_OPT ", {\"parameterName\": \"batch_size\", \"type\": "
                            "\"DISCRETE\", \"discreteValues\": [8, 16.5, 1e3], \"scaleType\": "
                            "\"UNIT_LOG_SCALE\"}, {\"parameterName\": \"drop.out-rate\", "
                            "\"type\": \"INTEGER\", \"minValue\": 3, \"maxValue\": 3, "
                            "\"scaleType\": \"UNIT_LINEAR_SCALE\"}]}"));
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.goal, SPEC_MINIMIZE);
        CHECK_INT_EQ(s.algorithm, SP_ALGO_GRID);
        CHECK(strcmp(s.resume_previous_job_id, "older_study") == 0);
        CHECK_INT_EQ(s.space.n, 4);
        if (s.space.n == 4) {
            CHECK_INT_EQ(s.space.params[2].scale, SP_SCALE_NONE); /* DISCRETE: no effect */
            CHECK_NEAR(s.space.params[2].values[1], 16.5, 0, 0);
            CHECK_NEAR(s.space.params[2].values[2], 1000, 0, 0);
            CHECK_INT_EQ(s.space.params[3].scale, SP_LINEAR);
            CHECK(strcmp(s.space.params[3].name, "drop.out-rate") == 0);
        }
        spec_clear(&s);
    }
    free(text);
    text = patched(HP("{\"algorithm\": \"RANDOM_SEARCH\"}"));
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.algorithm, SP_ALGO_RANDOM);
        CHECK_INT_EQ(s.bayesian.initial_trials, 0); /* the sampler's defaults */
        spec_clear(&s);
    }
    free(text);
    text = patched(HP("{\"bayesianOptimization\": {\"initialTrials\": 3, \"acquisition\": "
                      "\"UCB\", \"ucbBeta\": 1.5}}"));
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.algorithm, SP_ALGO_UNSPECIFIED);
        CHECK_INT_EQ(s.bayesian.initial_trials, 3);
        CHECK_INT_EQ(s.bayesian.acquisition, BO_UCB);
        CHECK_NEAR(s.bayesian.ucb_beta, 1.5, 0, 0);
        spec_clear(&s);
    }
    free(text);
}

/* AI Platform fields with no local effect are accepted, and the spec is unchanged. */
static void test_compat_fields(void) {
    tn_spec s;
    char *text = patched(
        "{\"labels\": {\"team\": \"vision\"}, \"etag\": \"abc=\", \"trainingInput\": {"
        "\"region\": \"us-central1\", \"runtimeVersion\": \"2.11\", \"pythonVersion\": \"3.7\","
        "\"masterType\": \"n1-standard-8\", \"workerType\": \"n1-standard-8\","
        "\"parameterServerType\": \"n1-standard-4\", \"evaluatorType\": \"n1-standard-4\","
        "\"masterConfig\": {\"imageUri\": \"gcr.io/x\"}, \"workerConfig\": {},"
        "\"parameterServerConfig\": {}, \"evaluatorConfig\": {}, \"packageUris\": "
        "[\"gs://b/p.tar.gz\"], \"scheduling\": {\"maxRunningTime\": \"7200s\"}, \"network\": "
        "\"projects/1/global/networks/n\", \"serviceAccount\": \"sa@p.iam\", "
        "\"enableWebAccess\": false, \"encryptionConfig\": {}}}");
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.worker_count, 1);
        CHECK_INT_EQ(s.space.n, 4);
        CHECK(json_is_string(json_object_get(s.training_input, "region")));
        spec_clear(&s);
    }
    free(text);
}

/* env for every replica, merged with each type's (Vertex AI's list form too), and the
 * restart policy's backoff and repeat rule with their defaults. */
static void test_env_and_restart_policy(void) {
    tn_spec s;
    if (parse_ok(DESIGN_SPEC, 0, &s) == 0) {
        for (int t = 0; t < TF_NTYPES; t++) CHECK(s.env[t] == NULL);
        CHECK(s.restart_backoff == 1 && s.restart_backoff_max == 30 && s.fail_on_repeat == 1);
        spec_clear(&s);
    }
    char *text = patched("{\"trainingInput\": {\"env\": {\"TF_USE_LEGACY_KERAS\": \"1\", "
                         "\"MODE\": \"all\"}, \"workerConfig\": {\"env\": [{\"name\": "
                         "\"MODE\", \"value\": \"worker\"}, {\"name\": \"EXTRA\", \"value\": "
                         "\"a=b c\"}]}, \"restartPolicy\": {\"backoffSeconds\": 0.5, "
                         "\"failOnRepeatedError\": false}}}");
    if (parse_ok(text, 0, &s) == 0) {
        char **chief = s.env[TF_CHIEF], **worker = s.env[TF_WORKER];
        CHECK(chief && !strcmp(chief[0], "TF_USE_LEGACY_KERAS=1") &&
              !strcmp(chief[1], "MODE=all") && !chief[2]);
        CHECK(worker && !strcmp(worker[0], "TF_USE_LEGACY_KERAS=1") &&
              !strcmp(worker[1], "MODE=worker") && !strcmp(worker[2], "EXTRA=a=b c") &&
              !worker[3]);
        CHECK(s.env[TF_PS] && !strcmp(s.env[TF_PS][1], "MODE=all"));
        /* maxBackoffSeconds not given: at least backoffSeconds, the default 30 here */
        CHECK(s.restart_backoff == 0.5 && s.restart_backoff_max == 30 && !s.fail_on_repeat);
        spec_clear(&s);
    }
    free(text);
    text = patched("{\"trainingInput\": {\"restartPolicy\": {\"backoffSeconds\": 60}}}");
    if (parse_ok(text, 0, &s) == 0) {
        CHECK(s.restart_backoff == 60 && s.restart_backoff_max == 60);
        spec_clear(&s);
    }
    free(text);
}

static void test_executor_gpus_memory(void) {
    tn_spec s;
    /* the local executor by default */
    if (parse_ok(DESIGN_SPEC, 0, &s) == 0) {
        CHECK_INT_EQ(s.executor.type, SPEC_EXECUTOR_LOCAL);
        CHECK(!s.executor.given);
        CHECK(strcmp(spec_executor_name(s.executor.type), "local") == 0);
        spec_clear(&s);
    }
    char *text = patched("{\"executor\": {\"type\": \"slurm\", \"partition\": \"gpu\", "
                         "\"account\": \"proj1\", \"qos\": \"high\", \"timeLimit\": "
                         "\"1-02:00:00\", \"extraArgs\": [\"--exclusive\", "
                         "\"--constraint=a100\"]}}");
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.executor.type, SPEC_EXECUTOR_SLURM);
        CHECK(strcmp(spec_executor_name(s.executor.type), "slurm") == 0);
        CHECK(strcmp(s.executor.partition, "gpu") == 0);
        CHECK(strcmp(s.executor.account, "proj1") == 0);
        CHECK(strcmp(s.executor.qos, "high") == 0);
        CHECK(strcmp(s.executor.time_limit, "1-02:00:00") == 0);
        CHECK(s.executor.nextra == 2 && strcmp(s.executor.extra_args[1], "--constraint=a100") == 0);
        spec_clear(&s);
    }
    free(text);
    /* every Slurm time format, and whole minutes as a number */
    static const char *const times[] = {"30", "30:00", "2:30:00", "1-0", "1-2:30",
                                        "1-2:30:00", "UNLIMITED", "INFINITE"};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        char patch[160];
        snprintf(patch, sizeof patch,
                 "{\"executor\": {\"type\": \"slurm\", \"timeLimit\": \"%s\"}}", times[i]);
        text = patched(patch);
        if (parse_ok(text, 0, &s) == 0) {
            CHECK_MSG(s.executor.time_limit && !strcmp(s.executor.time_limit, times[i]), "%s",
                      times[i]);
            spec_clear(&s);
        }
        free(text);
    }
    text = patched("{\"executor\": {\"type\": \"slurm\", \"extraArgs\": [\"--exclusive\", "
                   "\"--time-min=10\", \"--nodes=2\", \"--gres=gpu:a100:1\", \"-Ca100\", "
                   "\"--cluster-constraint=x\", \"--wait-all-nodes=1\", \"--hint=compute_bound\", "
                   "\"--requeue\", \"--nice\", \"--contiguous\", \"--spread-job\"]}}");
    /* options of their own, not prefixes of ours; the last four take no value */
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.executor.nextra, 12);
        spec_clear(&s);
    }
    free(text);
    text = patched("{\"executor\": {\"type\": \"slurm\", \"timeLimit\": 90}}");
    if (parse_ok(text, 0, &s) == 0) {
        CHECK(s.executor.time_limit && strcmp(s.executor.time_limit, "90") == 0);
        spec_clear(&s);
    }
    free(text);
    /* acceleratorConfig gives GPUs per replica type; resources.memory, with units */
    text = patched(TI("{\"scaleTier\": \"CUSTOM\", \"workerCount\": 2, \"masterConfig\": "
                      "{\"acceleratorConfig\": {\"count\": \"2\", \"type\": "
                      "\"NVIDIA_TESLA_A100\"}, \"imageUri\": \"gcr.io/x\"}, \"workerConfig\": "
                      "{\"acceleratorConfig\": {\"count\": 1}}, \"resources\": {\"worker\": "
                      "{\"gpus\": 1, \"memory\": \"1.5G\"}, \"chief\": {\"memory\": 512}, "
                      "\"ps\": {\"memory\": \"64K\"}, \"evaluator\": {\"memory\": \"2gb\"}}}"));
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.resources[TF_CHIEF].gpus, 2);
        CHECK_INT_EQ(s.resources[TF_WORKER].gpus, 1);
        CHECK_INT_EQ(s.resources[TF_PS].gpus, 0);
        CHECK_INT_EQ(s.resources[TF_WORKER].memory_mb, 1536);
        CHECK_INT_EQ(s.resources[TF_CHIEF].memory_mb, 512);
        CHECK_INT_EQ(s.resources[TF_PS].memory_mb, 1); /* rounded up to whole MiB */
        CHECK_INT_EQ(s.resources[TF_EVALUATOR].memory_mb, 2048); /* units in any case */
        spec_clear(&s);
    }
    free(text);
    /* BASIC_GPU's chief GPU, and acceleratorConfig overriding it */
    text = patched(TI("{\"scaleTier\": \"BASIC_GPU\", \"workerCount\": null, \"parameterServerCount\": null, \"evaluatorCount\": null}"));
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.resources[TF_CHIEF].gpus, 1);
        spec_clear(&s);
    }
    free(text);
    text = patched(TI("{\"scaleTier\": \"BASIC_GPU\", \"workerCount\": null, \"parameterServerCount\": null, \"evaluatorCount\": null, \"masterConfig\": "
                      "{\"acceleratorConfig\": {\"count\": 4, \"type\": \"NVIDIA_H100_80GB\"}}}"));
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.resources[TF_CHIEF].gpus, 4);
        spec_clear(&s);
    }
    free(text);
}

/* Five categorical parameters of 40,000 values each are checked for duplicates by
 * sorting, not pair by pair (which took seconds): well under the generous bound here
 * even under the sanitizers, and every duplicate is still found. (Parsed as an ask/tell
 * study's: a study the tuner runs could not pass 2 MB of trainingInput to its replicas,
 * test_job_size.) */
static void test_many_categorical_values(void) {
    const size_t nvals = 40000, nparams = 5;
    size_t cap = nparams * nvals * 12 + 4096, len = 0;
    char *text = tn_xmalloc(cap);
    len += (size_t)snprintf(text + len, cap - len,
                            "{\"jobId\": \"big\", \"trainingInput\": {\"command\": [\"t\"], "
                            "\"hyperparameters\": {\"algorithm\": \"RANDOM_SEARCH\", \"params\": [");
    for (size_t p = 0; p < nparams; p++) {
        len += (size_t)snprintf(text + len, cap - len,
                                "%s{\"parameterName\": \"p%zu\", \"type\": \"CATEGORICAL\", "
                                "\"categoricalValues\": [", p ? ", " : "", p);
        for (size_t i = 0; i < nvals; i++) /* the last parameter repeats value 7 last */
            len += (size_t)snprintf(text + len, cap - len, "%s\"v%zu\"", i ? ", " : "",
                                    p == nparams - 1 && i == nvals - 1 ? (size_t)7 : i);
        len += (size_t)snprintf(text + len, cap - len, "]}");
    }
    snprintf(text + len, cap - len, "]}}}");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tn_spec s;
    spec_errors errs;
    int rc = spec_parse(text, "big.json", 1, &s, &errs);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    CHECK_INT_EQ(rc, TN_EINVAL);
    CHECK(errs.n == 1 && has_error(&errs, "trainingInput.hyperparameters.params[4]."
                                          "categoricalValues[39999]",
                                   "duplicate value \"v7\" (also categoricalValues[7])"));
    CHECK_MSG(secs < 5, "validating 200,000 categorical values took %.2f s", secs);
    spec_errors_clear(&errs);
    free(text);
}

/* ---- Conditional parameters ---- */

/* text with its first `from` replaced by `to` (which must be there); yours to free. */
static char *replaced(const char *text, const char *from, const char *to) {
    const char *at = strstr(text, from);
    CHECK(at != NULL);
    if (!at) return tn_xstrdup(text);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1, head = (size_t)(at - text);
    char *out = tn_xmalloc(n);
    snprintf(out, n, "%.*s%s%s", (int)head, text, to, at + strlen(from));
    return out;
}

/* A tree: optimizer {sgd, adam, rmsprop}; under sgd and rmsprop a DISCRETE momentum,
 * under momentum 0.9 a CATEGORICAL nesterov; under adam an INTEGER warmup (its values
 * as AI Platform's int64 strings) with a DOUBLE beta1 under warmup 0 and 10. */
static const char *const COND_SPEC =
    "{\"jobId\": \"cond\", \"trainingInput\": {\"command\": [\"t\"], \"hyperparameters\": {"
    "\"maxTrials\": 5, \"params\": ["
    "{\"parameterName\": \"lr\", \"type\": \"DOUBLE\", \"minValue\": 0.001, \"maxValue\": 1},"
    "{\"parameterName\": \"optimizer\", \"type\": \"CATEGORICAL\", "
    " \"categoricalValues\": [\"sgd\", \"adam\", \"rmsprop\"], \"conditionalParameterSpecs\": ["
    "  {\"parentCategoricalValues\": {\"values\": [\"rmsprop\", \"sgd\"]}, \"parameterSpec\": "
    "   {\"parameterName\": \"momentum\", \"type\": \"DISCRETE\", \"discreteValues\": [0.5, 0.9],"
    "    \"conditionalParameterSpecs\": [{\"parentDiscreteValues\": {\"values\": [0.9]}, "
    "     \"parameterSpec\": {\"parameterName\": \"nesterov\", \"type\": \"CATEGORICAL\", "
    "      \"categoricalValues\": [\"no\", \"yes\"]}}]}},"
    "  {\"parentCategoricalValues\": {\"values\": [\"adam\"]}, \"parameterSpec\": "
    "   {\"parameterName\": \"warmup\", \"type\": \"INTEGER\", \"minValue\": 0, \"maxValue\": 10,"
    "    \"conditionalParameterSpecs\": [{\"parentIntValues\": {\"values\": [\"10\", 0]}, "
    "     \"parameterSpec\": {\"parameterName\": \"beta1\", \"type\": \"DOUBLE\", "
    "      \"minValue\": 0.8, \"maxValue\": 0.999, "
    "      \"scaleType\": \"UNIT_REVERSE_LOG_SCALE\"}}]}}]},"
    "{\"parameterName\": \"batch\", \"type\": \"DISCRETE\", \"discreteValues\": [32, 64]}]}}}";

static void test_conditional_tree(void) {
    tn_spec s;
    if (parse_ok(COND_SPEC, 0, &s) != 0) return;
    static const struct {
        const char *name;
        int type, conditional;
        size_t parent, nwhen;
        double when[2];
    } want[] = {
        {"lr", SP_DOUBLE, 0, 0, 0, {0}},
        {"optimizer", SP_CATEGORICAL, 0, 0, 0, {0}},
        {"momentum", SP_DISCRETE, 1, 1, 2, {2, 0}}, /* rmsprop, sgd: as category indices */
        {"nesterov", SP_CATEGORICAL, 1, 2, 1, {0.9}},
        {"warmup", SP_INTEGER, 1, 1, 1, {1}},
        {"beta1", SP_DOUBLE, 1, 4, 2, {10, 0}},
        {"batch", SP_DISCRETE, 0, 0, 0, {0}},
    };
    CHECK_INT_EQ(s.space.n, 7);
    for (size_t i = 0; i < s.space.n && i < 7; i++) {
        const sp_param *p = &s.space.params[i];
        CHECK_MSG(strcmp(p->name, want[i].name) == 0, "params[%zu] is %s", i, p->name);
        CHECK_INT_EQ(p->type, want[i].type);
        CHECK_INT_EQ(p->conditional, want[i].conditional);
        if (!want[i].conditional) continue;
        CHECK_INT_EQ(p->parent, want[i].parent);
        CHECK_INT_EQ(p->nwhen, want[i].nwhen);
        for (size_t k = 0; k < p->nwhen && k < want[i].nwhen; k++)
            CHECK_MSG(p->when[k] == want[i].when[k], "%s: when[%zu] = %g", p->name, k, p->when[k]);
    }
    CHECK(sp_conditions_ok(&s.space));
    CHECK(s.space.n == 7 && s.space.params[5].scale == SP_REVERSE_LOG);
    spec_clear(&s);

    /* The same tree under grid search, its DOUBLEs made DISCRETE: the grid has the
     * active combinations only. optimizer sgd or rmsprop: momentum 0.5, or 0.9 with
     * nesterov no/yes (3 each); adam: warmup 1..9 alone, or 0 and 10 with beta1 (2):
     * 9 + 2 * 2 = 13; times lr (2) and batch (2). */
    char *a = replaced(COND_SPEC, "\"maxTrials\": 5,", "\"algorithm\": \"GRID_SEARCH\",");
    char *b = replaced(a, "\"type\": \"DOUBLE\", \"minValue\": 0.001, \"maxValue\": 1",
                       "\"type\": \"DISCRETE\", \"discreteValues\": [0.01, 0.1]");
    char *c = replaced(b, "\"beta1\", \"type\": \"DOUBLE\"", "\"beta1\", \"type\": \"DISCRETE\"");
    char *grid = replaced(c, "\"minValue\": 0.8, \"maxValue\": 0.999",
                          "\"discreteValues\": [0.9, 0.99]");
    if (parse_ok(grid, 0, &s) == 0) {
        CHECK_INT_EQ(s.algorithm, SP_ALGO_GRID);
        CHECK_INT_EQ(sp_grid_size(&s.space), 2 * (3 + 3 + 13) * 2);
        spec_clear(&s);
    }
    free(a);
    free(b);
    free(c);
    free(grid);
}

/* A chain 300 deep, each parameter the child of the one before: parsed in order with
 * the right parents, and a mistake at the bottom reported with its whole path. */
static void test_conditional_deep(void) {
    const int depth = 300;
    size_t cap = (size_t)depth * 256 + 1024, len = 0;
    char *text = tn_xmalloc(cap);
    len += (size_t)snprintf(text + len, cap - len,
                            "{\"jobId\": \"deep\", \"trainingInput\": {\"command\": [\"t\"], "
                            "\"hyperparameters\": {\"params\": [");
    for (int i = 0; i <= depth; i++) {
        len += (size_t)snprintf(text + len, cap - len,
                                "{\"parameterName\": \"c%d\", \"type\": \"CATEGORICAL\", "
                                "\"categoricalValues\": [\"a\", \"b\"]%s", i,
                                i < depth ? ", \"conditionalParameterSpecs\": [{"
                                            "\"parentCategoricalValues\": {\"values\": [\"b\"]}, "
                                            "\"parameterSpec\": " : "");
    }
    for (int i = 0; i <= depth; i++)
        len += (size_t)snprintf(text + len, cap - len, i ? "}]}" : "}");
    snprintf(text + len, cap - len, "]}}}");
    tn_spec s;
    if (parse_ok(text, 0, &s) == 0) {
        CHECK_INT_EQ(s.space.n, depth + 1);
        int chain = 1;
        for (size_t i = 1; i < s.space.n; i++)
            chain &= s.space.params[i].conditional && s.space.params[i].parent == i - 1 &&
                     s.space.params[i].nwhen == 1 && s.space.params[i].when[0] == 1;
        CHECK(chain);
        /* every parameter active only down the "b" branch */
        double *v = tn_xcalloc(s.space.n, sizeof *v);
        for (size_t i = 0; i < s.space.n; i++) v[i] = i < 10 ? 1 : 0;
        sp_mask_inactive(&s.space, v);
        CHECK(v[10] == 0 && isnan(v[11]) && isnan(v[depth]));
        CHECK(sp_point_is_legal(&s.space, v));
        free(v);
        spec_clear(&s);
    }
    /* the last one's categories made empty */
    char *last = strstr(text, "\"c300\"");
    CHECK(last != NULL);
    if (last) {
        char *vals = strstr(last, "[\"a\", \"b\"]");
        memcpy(vals, "[        ]", 10);
    }
    spec_errors errs;
    CHECK_INT_EQ(spec_parse(text, "deep.json", 0, &s, &errs), TN_EINVAL);
    CHECK_INT_EQ(errs.n, 1);
    if (errs.n == 1) {
        const char *path = errs.items[0].path;
        size_t n = strlen(path);
        const char *tail = ".conditionalParameterSpecs[0].parameterSpec.categoricalValues";
        CHECK(n > strlen(tail) && strcmp(path + n - strlen(tail), tail) == 0);
        size_t levels = 0;
        for (const char *q = path; (q = strstr(q, ".parameterSpec")); q++) levels++;
        CHECK_INT_EQ(levels, depth);
    }
    spec_errors_clear(&errs);
    free(text);
}

/* Mistakes at several places of one tree: every one reported, each at its path. */
static void test_conditional_errors_at_once(void) {
    char *text = patched(PARAMS(
        OPT_IF("{\"parentCategoricalValues\": {\"values\": [\"sgd\", \"adamw\"]}, "
               "\"parameterSpec\": {\"parameterName\": \"momentum\", \"type\": \"DOUBLE\", "
               "\"minValue\": 1, \"maxValue\": 0}},"
               "{\"parentIntValues\": {\"values\": [1]}, \"parameterSpec\": " P_HU "},"
               "{\"parentCategoricalValues\": {\"values\": [\"adam\"]}, \"parameterSpec\": "
               "{\"parameterName\": \"learning_rate\", \"type\": \"DISCRETE\", "
               "\"discreteValues\": [0.1]}}") "," P_LR));
    tn_spec s;
    spec_errors errs;
    CHECK_INT_EQ(spec_parse(text, "spec.json", 0, &s, &errs), TN_EINVAL);
    CHECK_INT_EQ(errs.n, 4);
    CHECK(has_error(&errs, C0 ".parentCategoricalValues.values[1]", "did you mean \"adam\"?"));
    CHECK(has_error(&errs, C0 ".parameterSpec.maxValue", "must be >= minValue (1), got 0"));
    CHECK(has_error(&errs, "trainingInput.hyperparameters.params[0].conditionalParameterSpecs[1]"
                           ".parentIntValues", "is CATEGORICAL"));
    CHECK(has_error(&errs, "trainingInput.hyperparameters.params[1].parameterName",
                    "duplicate parameterName \"learning_rate\" (also params[0]."
                    "conditionalParameterSpecs[2].parameterSpec)"));
    if (errs.n != 4) print_errors(&errs);
    CHECK(spec_is_zero(&s));
    spec_errors_clear(&errs);
    free(text);
}

/* A trial's values through params.c: JSON and flags hold the active parameters only;
 * reading JSON back wants exactly those. */
static void test_conditional_params(void) {
    tn_spec s;
    if (parse_ok(COND_SPEC, 0, &s) != 0) return;
    const sp_space *sp = &s.space;
    /* lr, optimizer adam, momentum -, nesterov -, warmup 10, beta1 0.95, batch 64 */
    double v[7] = {0.01, 1, NAN, NAN, 10, 0.95, 64};
    CHECK(sp_point_is_legal(sp, v));
    char *json = tp_to_json(sp, v);
    CHECK(strcmp(json, "{\"lr\":0.01,\"optimizer\":\"adam\",\"warmup\":10,"
                       "\"beta1\":0.94999999999999996,\"batch\":64}") == 0);
    double back[7];
    char err[256] = "";
    CHECK_INT_EQ(tp_from_json(sp, json, back, err, sizeof err), 0);
    for (int i = 0; i < 7; i++) CHECK(isnan(v[i]) ? isnan(back[i]) : back[i] == v[i]);
    char *argv[8];
    size_t argc = 0;
    tp_append_flags(sp, v, argv, &argc);
    CHECK_INT_EQ(argc, 5);
    if (argc == 5) {
        CHECK(strcmp(argv[1], "--optimizer=adam") == 0);
        CHECK(strcmp(argv[2], "--warmup=10") == 0);
        CHECK(strcmp(argv[3], "--beta1=0.95") == 0);
        CHECK(strcmp(argv[4], "--batch=64") == 0);
    }
    for (size_t i = 0; i < argc; i++) free(argv[i]);
    free(json);

    /* warmup 5: beta1 inactive too; null stands for absent */
    CHECK_INT_EQ(tp_from_json(sp, "{\"lr\": 0.5, \"optimizer\": \"adam\", \"warmup\": 5, "
                                  "\"beta1\": null, \"batch\": 32}", back, err, sizeof err), 0);
    CHECK(back[4] == 5 && isnan(back[5]) && isnan(back[2]) && isnan(back[3]));
    /* sgd with momentum 0.9: nesterov needed */
    CHECK_INT_EQ(tp_from_json(sp, "{\"lr\": 0.5, \"optimizer\": \"sgd\", \"momentum\": 0.9, "
                                  "\"batch\": 32}", back, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "parameter 'nesterov' is missing");
    /* an inactive parameter given is refused, naming its parent's value */
    CHECK_INT_EQ(tp_from_json(sp, "{\"lr\": 0.5, \"optimizer\": \"adam\", \"momentum\": 0.9, "
                                  "\"warmup\": 1, \"batch\": 32}", back, err, sizeof err),
                 TN_EINVAL);
    CHECK_STR_CONTAINS(err, "parameter 'momentum' does not exist when 'optimizer' is adam");
    CHECK_INT_EQ(tp_from_json(sp, "{\"lr\": 0.5, \"optimizer\": \"sgd\", \"momentum\": 0.5, "
                                  "\"nesterov\": \"no\", \"batch\": 32}", back, err, sizeof err),
                 TN_EINVAL);
    CHECK_STR_CONTAINS(err, "parameter 'nesterov' does not exist when 'momentum' is 0.5");
    spec_clear(&s);
}

/* ---- spec_load ---- */

static void tmp_path(char *buf, size_t len, const char *name) {
    const char *dir = getenv("TN_TEST_TMP");
    snprintf(buf, len, "%s/test_spec_%ld_%s", dir && *dir ? dir : "/tmp", (long)getpid(), name);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void test_load(void) {
    char path[512];
    tn_spec s;
    spec_errors errs;

    tmp_path(path, sizeof path, "good.json");
    write_file(path, DESIGN_SPEC);
    CHECK_INT_EQ(spec_load(path, 0, &s, &errs), 0);
    CHECK_INT_EQ(errs.n, 0);
    CHECK(s.job_id && strcmp(s.job_id, "fashion_mlp") == 0);
    CHECK_INT_EQ(s.space.n, 4);
    spec_clear(&s);
    spec_errors_clear(&errs);
    remove(path);

    /* A syntax error says where, as its line and column (tuner prints FILE:LINE:COLUMN:
     * MESSAGE; the message does not name the file again). */
    tmp_path(path, sizeof path, "bad.json");
    write_file(path, "{\n  \"jobId\": \"a\",\n  \"trainingInput\": {,}\n}\n");
    CHECK_INT_EQ(spec_load(path, 0, &s, &errs), TN_EINVAL);
    CHECK_INT_EQ(errs.n, 1);
    if (errs.n == 1) {
        CHECK_INT_EQ(errs.items[0].line, 3);
        CHECK_INT_EQ(errs.items[0].column, 21); /* jansson's: past the ',' */
        CHECK_STR_CONTAINS(errs.items[0].message, "expected near ','");
        CHECK(strstr(errs.items[0].message, "bad.json") == NULL);
        CHECK(strcmp(errs.items[0].path, "") == 0);
    }
    spec_errors_clear(&errs);

    /* An empty file says so; a NUL in a string is named as a user would write it. */
    write_file(path, " \n\t\n");
    CHECK_INT_EQ(spec_load(path, 0, &s, &errs), TN_EINVAL);
    CHECK(errs.n == 1 && strstr(errs.items[0].message, "the file is empty") != NULL);
    spec_errors_clear(&errs);
    write_file(path, "{\"jobId\": \"a\\u0000b\"}");
    CHECK_INT_EQ(spec_load(path, 0, &s, &errs), TN_EINVAL);
    CHECK(errs.n == 1 && strstr(errs.items[0].message, "(a NUL character)") != NULL &&
          strstr(errs.items[0].message, "JSON_ALLOW_NUL") == NULL);
    spec_errors_clear(&errs);
    remove(path);

    /* A UTF-8 byte order mark (editors write one) is skipped, and not stored. */
    tmp_path(path, sizeof path, "bom.json");
    char *marked = tn_xasprintf("\xef\xbb\xbf%s", DESIGN_SPEC);
    write_file(path, marked);
    char *stored = NULL;
    CHECK_INT_EQ(spec_read_named(path, NULL, 0, &s, &errs, &stored), 0);
    CHECK_INT_EQ(errs.n, 0);
    CHECK(stored && strcmp(stored, DESIGN_SPEC) == 0);
    spec_clear(&s);
    spec_errors_clear(&errs);
    free(stored);
    free(marked);
    remove(path);

    tmp_path(path, sizeof path, "missing.json");
    CHECK_INT_EQ(spec_load(path, 0, &s, &errs), TN_ENOENT);
    CHECK_INT_EQ(errs.n, 1);
    if (errs.n == 1) {
        CHECK(strcmp(errs.items[0].path, "") == 0);
        CHECK_STR_CONTAINS(errs.items[0].message, path);
        CHECK_STR_CONTAINS(errs.items[0].message, "does not exist");
    }
    CHECK(spec_is_zero(&s));
    spec_errors_clear(&errs);
    CHECK_INT_EQ(spec_load(path, 0, &s, NULL), TN_ENOENT);

    /* What is not a regular file is refused at once, never read (a FIFO would block,
     * /dev/zero would never end) */
    tmp_path(path, sizeof path, "fifo.json");
    remove(path);
    CHECK(mkfifo(path, 0600) == 0);
    CHECK_INT_EQ(spec_load(path, 0, &s, &errs), TN_EIO);
    CHECK(errs.n == 1 && strstr(errs.items[0].message, "is a FIFO, not a regular file"));
    spec_errors_clear(&errs);
    remove(path);
    CHECK_INT_EQ(spec_load("/dev/zero", 0, &s, &errs), TN_EIO);
    CHECK(errs.n == 1 && strstr(errs.items[0].message, "/dev/zero is a character device"));
    spec_errors_clear(&errs);
    CHECK_INT_EQ(spec_load("/tmp", 0, &s, &errs), TN_EIO);
    CHECK(errs.n == 1 && strstr(errs.items[0].message, "is a folder"));
    spec_errors_clear(&errs);
    /* ... and a file larger than the cap is one error that says the limit */
    tmp_path(path, sizeof path, "huge.json");
    FILE *f = fopen(path, "w");
    CHECK(f && ftruncate(fileno(f), (off_t)SPEC_MAX_BYTES + 1) == 0);
    if (f) fclose(f);
    CHECK_INT_EQ(spec_load(path, 0, &s, &errs), TN_EINVAL);
    CHECK(errs.n == 1 && strstr(errs.items[0].message, "is larger than 16777216 bytes"));
    spec_errors_clear(&errs);
    remove(path);
}

int main(void) {
    RUN(test_bad_specs);
    RUN(test_unknown_field_message);
    RUN(test_five_errors_at_once);
    RUN(test_design_example);
    RUN(test_defaults);
    RUN(test_job_id_length);
    RUN(test_metrics);
    RUN(test_tiers);
    RUN(test_master_and_extensions);
    RUN(test_program);
    RUN(test_search_fields);
    RUN(test_compat_fields);
    RUN(test_executor_gpus_memory);
    RUN(test_env_and_restart_policy);
    RUN(test_job_size);
    RUN(test_null_tag_beside_metrics);
    RUN(test_slow_bayesian_note);
    RUN(test_many_categorical_values);
    RUN(test_conditional_tree);
    RUN(test_conditional_deep);
    RUN(test_conditional_errors_at_once);
    RUN(test_conditional_params);
    RUN(test_load);
    return check_summary();
}
