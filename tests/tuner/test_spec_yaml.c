/*
 * test_spec_yaml.c — tests for YAML specs (tuner/spec_yaml.c and the file front end of
 * tuner/spec.c): gcloud's config.yaml read into the same spec as its JSON twin; how
 * plain scalars are typed; every problem a YAML file can have, each with its path,
 * line and column (syntax, duplicate and non-string keys, a second document, too deep
 * a nesting, an alias bomb, unknown tags and anchors, numbers a spec cannot hold, the
 * validator's own errors placed on the YAML line), all reported at once; anchors and
 * merge keys; the study's name from --job-id, the file or its name; the note listing
 * the ignored AI Platform fields once, the same for JSON and YAML; a pythonModule's
 * packageUris checked. Files go to a folder of $TN_TEST_TMP (default /tmp).
 */
#include "tuner/spec.h"
#include "tuner/spec_yaml.h"

#include "common/status.h"
#include "tests/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[512]; /* this run's folder */

static void make_dir(void) {
    const char *tmp = getenv("TN_TEST_TMP");
    snprintf(g_dir, sizeof g_dir, "%s/test_spec_yaml_%ld", tmp && *tmp ? tmp : "/tmp",
             (long)getpid());
    mkdir(g_dir, 0755);
}

/* Writes text to g_dir/name; the path is in buf. */
static const char *write_file(char *buf, size_t len, const char *name, const char *text) {
    snprintf(buf, len, "%s/%s", g_dir, name);
    FILE *f = fopen(buf, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return buf;
}

static void print_errors(const spec_errors *e) {
    for (size_t i = 0; i < e->n; i++)
        fprintf(stderr, "    %d:%d: %s: %s\n", e->items[i].line, e->items[i].column,
                e->items[i].path, e->items[i].message);
}

/* The index of the error with exactly this path and a message containing msg, or -1. */
static long find_error(const spec_errors *e, const char *path, const char *msg) {
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->items[i].path, path) == 0 && strstr(e->items[i].message, msg))
            return (long)i;
    return -1;
}

/* gcloud's config.yaml for the example of docs/spec.md (its JSON: DESIGN_JSON), with
 * AI Platform's cloud fields. */
static const char *const CONFIG_YAML =
    "# gcloud ai-platform jobs submit training fashion_mlp --config config.yaml\n"
    "trainingInput:\n"
    "  scaleTier: CUSTOM\n"
    "  masterType: n1-standard-8\n"
    "  workerType: n1-standard-8\n"
    "  workerCount: 1\n"
    "  parameterServerCount: 0\n"
    "  evaluatorCount: 0\n"
    "  useChiefInTfConfig: true\n"
    "  region: us-central1\n"
    "  runtimeVersion: '2.11'\n"
    "  pythonVersion: '3.7'\n"
    "  jobDir: runs/fashion_mlp\n"
    "  command: [trainer, --model=mlp, --epochs=5]\n"
    "  args: []\n"
    "  hyperparameters:\n"
    "    goal: MAXIMIZE\n"
    "    hyperparameterMetricTag: accuracy\n"
    "    maxTrials: 20\n"
    "    maxParallelTrials: 2\n"
    "    maxFailedTrials: 4\n"
    "    enableTrialEarlyStopping: True\n"
    "    algorithm: ALGORITHM_UNSPECIFIED\n"
    "    params:\n"
    "      - parameterName: learning_rate\n"
    "        type: DOUBLE\n"
    "        minValue: 0.001\n"
    "        maxValue: 0.3\n"
    "        scaleType: UNIT_LOG_SCALE\n"
    "      - parameterName: hidden_units\n"
    "        type: INTEGER\n"
    "        minValue: 32\n"
    "        maxValue: 512\n"
    "      - parameterName: optimizer\n"
    "        type: CATEGORICAL\n"
    "        categoricalValues:\n"
    "          - sgd\n"
    "          - adam\n"
    "      - {parameterName: batch_size, type: DISCRETE, discreteValues: [64, 128, 256]}\n";

static const char *const DESIGN_JSON =
    "{\"jobId\": \"config\", \"trainingInput\": {\"scaleTier\": \"CUSTOM\",\n"
    " \"masterType\": \"n1-standard-8\", \"workerType\": \"n1-standard-8\",\n"
    " \"workerCount\": 1, \"parameterServerCount\": 0, \"evaluatorCount\": 0,\n"
    " \"useChiefInTfConfig\": true, \"region\": \"us-central1\", \"runtimeVersion\": \"2.11\",\n"
    " \"pythonVersion\": \"3.7\", \"jobDir\": \"runs/fashion_mlp\",\n"
    " \"command\": [\"trainer\", \"--model=mlp\", \"--epochs=5\"], \"args\": [],\n"
    " \"hyperparameters\": {\"goal\": \"MAXIMIZE\", \"hyperparameterMetricTag\": \"accuracy\",\n"
    "  \"maxTrials\": 20, \"maxParallelTrials\": 2, \"maxFailedTrials\": 4,\n"
    "  \"enableTrialEarlyStopping\": true, \"algorithm\": \"ALGORITHM_UNSPECIFIED\",\n"
    "  \"params\": [\n"
    "   {\"parameterName\": \"learning_rate\", \"type\": \"DOUBLE\", \"minValue\": 0.001,\n"
    "    \"maxValue\": 0.3, \"scaleType\": \"UNIT_LOG_SCALE\"},\n"
    "   {\"parameterName\": \"hidden_units\", \"type\": \"INTEGER\", \"minValue\": 32,\n"
    "    \"maxValue\": 512},\n"
    "   {\"parameterName\": \"optimizer\", \"type\": \"CATEGORICAL\",\n"
    "    \"categoricalValues\": [\"sgd\", \"adam\"]},\n"
    "   {\"parameterName\": \"batch_size\", \"type\": \"DISCRETE\",\n"
    "    \"discreteValues\": [64, 128, 256]}]}}}\n";

/* ---- The happy path: the same spec as its JSON twin ---- */

static void test_config_yaml(void) {
    char path[600];
    tn_spec y, j;
    spec_errors errs;
    char *text = NULL;
    write_file(path, sizeof path, "config.yaml", CONFIG_YAML);
    int rc = spec_read_named(path, NULL, 0, &y, &errs, &text);
    CHECK_INT_EQ(rc, 0);
    if (rc) print_errors(&errs);
    spec_errors_clear(&errs);
    if (rc) return;
    CHECK_INT_EQ(spec_parse(DESIGN_JSON, "design.json", 0, &j, NULL), 0);
    /* The study is named after the file (gcloud takes the name on its command line). */
    CHECK(y.job_id && strcmp(y.job_id, "config") == 0);
    CHECK_INT_EQ(y.scale_tier, SPEC_CUSTOM);
    CHECK_INT_EQ(y.worker_count, 1);
    CHECK_INT_EQ(y.max_trials, 20);
    CHECK_INT_EQ(y.max_parallel_trials, 2);
    CHECK_INT_EQ(y.max_failed_trials, 4);
    CHECK_INT_EQ(y.space.n, 4);
    CHECK(strcmp(y.metric_tag, "accuracy") == 0);
    CHECK(y.ncommand == 3 && strcmp(y.command[2], "--epochs=5") == 0);
    CHECK(y.early_stopping.policy == j.early_stopping.policy);
    /* What replicas find in TF_CONFIG's "job" is the same tree as the JSON's. */
    CHECK(json_equal(y.training_input, j.training_input));
    /* The notes: the name, then each ignored field once, with why. */
    CHECK_STR_CONTAINS(y.notes, "jobId: config, from the file's name");
    CHECK_STR_CONTAINS(y.notes, "ignored: trainingInput.region (Google Cloud settings");
    CHECK_STR_CONTAINS(y.notes, "ignored: trainingInput.runtimeVersion, "
                                "trainingInput.pythonVersion (trials run with this machine's");
    CHECK_STR_CONTAINS(y.notes, "ignored: trainingInput.masterType, trainingInput.workerType "
                                "(machine types");
    CHECK_STR_CONTAINS(j.notes, "ignored: trainingInput.masterType, trainingInput.workerType");
    CHECK(j.notes && y.notes && strstr(y.notes, j.notes) != NULL); /* the same, after the name */
    /* The text to store is JSON that reads back as the same spec. */
    tn_spec back;
    CHECK(text && text[0] == '{');
    CHECK_INT_EQ(spec_parse(text ? text : "", "stored", 0, &back, NULL), 0);
    if (back.job_id) {
        CHECK(strcmp(back.job_id, "config") == 0);
        CHECK(json_equal(back.training_input, y.training_input));
    }
    spec_clear(&back);
    spec_clear(&y);
    spec_clear(&j);
    free(text);
}

/* ---- Scalars ---- */

typedef struct scalar_case {
    const char *yaml;  /* the value of v: in a mapping */
    const char *json;  /* what it must read as */
} scalar_case;

static const scalar_case SCALARS[] = {
    {"", "null"}, {"~", "null"}, {"null", "null"}, {"Null", "null"}, {"NULL", "null"},
    {"true", "true"}, {"True", "true"}, {"yes", "true"}, {"Yes", "true"}, {"ON", "true"},
    {"false", "false"}, {"no", "false"}, {"Off", "false"},
    {"y", "\"y\""}, {"n", "\"n\""}, {"nil", "\"nil\""},
    {"0", "0"}, {"42", "42"}, {"-7", "-7"}, {"+7", "7"}, {"1_000", "1000"},
    {"0x1F", "31"}, {"0o17", "15"}, {"017", "15"}, {"0b101", "5"},
    {"_1", "\"_1\""}, {"+_5", "\"+_5\""}, {"-_1", "\"-_1\""}, {"0_", "0"}, {"0_7", "7"},
    {"._5", "0.5"}, {"_1.5", "\"_1.5\""},
    {"9223372036854775807", "9223372036854775807"},
    {"-9223372036854775808", "-9223372036854775808"},
    {"1.5", "1.5"}, {"0.001", "0.001"}, {"-2.5", "-2.5"}, {".5", "0.5"}, {"-.5", "-0.5"},
    {"1.", "1.0"}, {"1e-3", "0.001"}, {"1.0e+3", "1000.0"}, {"2E2", "200.0"},
    {"1_0.5", "10.5"},
    {"09", "\"09\""}, {"1:30", "\"1:30\""}, {"2024-01-01", "\"2024-01-01\""},
    {"0x", "\"0x\""}, {"1e", "\"1e\""}, {"+", "\"+\""}, {"a b", "\"a b\""},
    {"'yes'", "\"yes\""}, {"\"1\"", "\"1\""}, {"'~'", "\"~\""}, {"\"\"", "\"\""},
    {"!!str 12", "\"12\""}, {"!!str yes", "\"yes\""}, {"! 12", "\"12\""},
    {"!!int \"12\"", "12"}, {"!!float 1", "1.0"}, {"!!float '2.5'", "2.5"},
    {"!!bool yes", "true"}, {"!!null ''", "null"},
    {"|\n  two\n  lines\n", "\"two\\nlines\\n\""}, {">-\n  folded\n  text\n", "\"folded text\""},
    {"\"tab\\there\"", "\"tab\\there\""}, {"gs://bucket/x", "\"gs://bucket/x\""},
};

static void test_scalars(void) {
    for (size_t i = 0; i < sizeof SCALARS / sizeof *SCALARS; i++) {
        const scalar_case *sc = &SCALARS[i];
        char text[256];
        snprintf(text, sizeof text, "v: %s\n", sc->yaml);
        json_t *root = NULL, *want = json_loads(sc->json, JSON_DECODE_ANY, NULL);
        sy_where *w = NULL;
        spec_errors errs = {0};
        int rc = sy_parse(text, strlen(text), &root, &w, &errs);
        json_t *got = json_object_get(root, "v");
        CHECK_MSG(rc == 0 && want && got && json_equal(got, want), "case %zu: v: %s", i,
                  sc->yaml);
        if (rc) print_errors(&errs);
        /* Reals keep being reals, integers integers (spec.c tells 1 from 1.0 apart only
         * for messages, but the text stored must say what was written). */
        if (got && want) CHECK_MSG(json_typeof(got) == json_typeof(want), "case %zu", i);
        spec_errors_clear(&errs);
        json_decref(root);
        json_decref(want);
        sy_where_free(w);
    }
}

/* ---- Problems, each with its path, line and column ---- */

typedef struct bad_case {
    const char *yaml;   /* the whole file */
    const char *path;   /* an error with exactly this path ... */
    int line, column;   /* ... at this position ... */
    const char *msg;    /* ... and a message containing this */
    int nerrors;        /* how many errors in all (0 means 1) */
} bad_case;

/* The valid tail of a spec after "trainingInput:\n", with the problem before it. */
#define REST "  command: [trainer]\n  hyperparameters:\n    params:\n" \
             "      - {parameterName: x, type: DOUBLE, minValue: 0, maxValue: 1}\n"

static const bad_case BAD[] = {
    /* YAML syntax: alone, at the parser's position */
    {"trainingInput:\n  scaleTier: [CUSTOM\n" REST, "", 3, 10,
     "did not find expected ',' or ']'", 0},
    {"trainingInput:\n  scaleTier: CUSTOM\n workerCount: 1\n", "", 3, 2,
     "did not find expected key (while parsing a block mapping on line 1)", 0},
    {"trainingInput:\n\tscaleTier: BASIC\n", "", 2, 1, "found character that cannot start", 0},
    {"trainingInput: {a: 1\n", "", 2, 1, "did not find expected ',' or '}'", 0},
    {"a: \"\xff\"\n", "", 1, 5, "invalid leading UTF-8 octet", 0},
    {"a: b\x01\n", "", 1, 5, "control characters are not allowed", 0},
    /* documents */
    {"", "", 1, 1, "no YAML document: the file is empty", 0},
    {"# only a comment\n", "", 1, 1, "no YAML document", 0},
    {"trainingInput:\n" REST "---\njobId: x\n", "", 6, 1, "a second YAML document", 0},
    {"- a\n- b\n", "", 1, 1, "expected a mapping (an AI Platform job", 0},
    {"just text\n", "", 1, 1, "got a string", 0},
    /* keys */
    {"trainingInput:\n  scaleTier: BASIC\n  scaleTier: CUSTOM\n" REST,
     "trainingInput.scaleTier", 3, 3, "duplicate key (also on line 2)", 0},
    {"trainingInput:\n  [a, b]: 1\n" REST, "trainingInput", 2, 3,
     "a key must be a string, not a sequence", 0},
    {"trainingInput:\n  ? {a: 1}\n  : 1\n" REST, "trainingInput", 2, 5,
     "a key must be a string, not a mapping", 0},
    {"trainingInput:\n  1: x\n" REST, "trainingInput", 2, 3,
     "a key must be a string, not a number; quote it", 0},
    {"trainingInput:\n  yes: x\n" REST, "trainingInput", 2, 3, "not a boolean; quote it", 0},
    {"trainingInput:\n  \"a\\0b\": x\n" REST, "trainingInput", 2, 3,
     "a key must not hold a NUL character", 0},
    {"base: &b x\ntrainingInput:\n  *b : 1\n" REST, "trainingInput", 3, 3,
     "a key must be written out, not an alias", 0},
    /* values a spec cannot hold */
    {"trainingInput:\n  trialTimeout: .inf\n" REST, "trainingInput.trialTimeout", 2, 17,
     ".inf is not a finite number", 0},
    {"trainingInput:\n  trialTimeout: .NaN\n" REST, "trainingInput.trialTimeout", 2, 17,
     "not a finite number", 0},
    {"trainingInput:\n  trialTimeout: 1e999\n" REST, "trainingInput.trialTimeout", 2, 17,
     "not a finite number", 0},
    {"trainingInput:\n  workerCount: 99999999999999999999\n" REST,
     "trainingInput.workerCount", 2, 16, "an integer beyond 64 bits", 0},
    {"trainingInput:\n  workerCount: !!int four\n" REST, "trainingInput.workerCount", 2, 16,
     "four is not an integer (!!int)", 0},
    {"trainingInput:\n  jobDir: !!binary aGVsbG8=\n" REST, "trainingInput.jobDir", 2, 11,
     "the tag tag:yaml.org,2002:binary is not supported", 0},
    {"trainingInput:\n  args: !python/tuple [a]\n" REST, "trainingInput.args", 2, 9,
     "the tag !python/tuple is not supported", 0},
    /* aliases */
    {"trainingInput:\n  jobDir: *nowhere\n" REST, "trainingInput.jobDir", 2, 11,
     "alias *nowhere: no anchor &nowhere before it", 0},
    {"a: &a [*a]\n", "a[0]", 1, 8, "no anchor &a before it", 0},
    {"trainingInput:\n  <<: 5\n" REST, "trainingInput.<<", 2, 3,
     "<< merges a mapping, or a sequence of mappings", 0},
    {"trainingInput:\n  <<: {a: 1}\n  <<: {b: 2}\n" REST, "trainingInput.<<", 3, 3,
     "duplicate key (also on line 2)", 0},
    /* the validator's problems, at the YAML line: a member at its key, an item at the
     * item, a missing field at the nearest value written, all at once */
    {"trainingInput:\n  scaleTier: custom\n  workerCount: two\n" REST,
     "trainingInput.scaleTier", 2, 3, "(did you mean \"CUSTOM\"?)", 2},
    {"trainingInput:\n  scaleTier: CUSTOM\n  workerCount: two\n" REST,
     "trainingInput.workerCount", 3, 3, "got a string (\"two\")", 0},
    {"trainingInput:\n  command: [trainer]\n  hyperparameters:\n    maxTrail: 3\n"
     "    params:\n      - {parameterName: x, type: DOUBLE, minValue: 0, maxValue: 1}\n",
     "trainingInput.hyperparameters.maxTrail", 4, 5, "did you mean \"maxTrials\"?", 0},
    {"trainingInput:\n  command: [trainer]\n  hyperparameters:\n    params:\n"
     "      - parameterName: x\n        minValue: 0\n        maxValue: 1\n",
     "trainingInput.hyperparameters.params[0].type", 5, 9, "required field is missing", 0},
    {"trainingInput:\n  command: [trainer]\n  hyperparameters:\n    params:\n"
     "      - parameterName: o\n        type: CATEGORICAL\n"
     "        categoricalValues: [a, yes, 3]\n",
     "trainingInput.hyperparameters.params[0].categoricalValues[1]", 7, 32,
     "got true (YAML reads the plain scalar yes as true; quote it if a string is meant)", 2},
    {"trainingInput:\n  command: [trainer]\n  hyperparameters:\n    params:\n"
     "      - parameterName: o\n        type: CATEGORICAL\n"
     "        categoricalValues: [a, yes, 3]\n",
     "trainingInput.hyperparameters.params[0].categoricalValues[2]", 7, 37,
     "got 3 (YAML reads the plain scalar 3 as a number; quote it if a string is meant)", 2},
    {"trainingInput:\n  command: [trainer]\n  useChiefInTfConfig: 'yes'\n"
     "  hyperparameters:\n    params:\n"
     "      - {parameterName: x, type: DOUBLE, minValue: 0, maxValue: 1}\n",
     "trainingInput.useChiefInTfConfig", 3, 3, "got a string (\"yes\")", 0},
    {"jobId: 9lives\ntrainingInput:\n" REST, "jobId", 1, 1, "must start with a letter", 0},
    {"trainingInput:\n  hyperparameters:\n    params:\n"
     "      - {parameterName: x, type: DOUBLE, minValue: 0, maxValue: 1}\n",
     "trainingInput", 1, 1, "needs \"command\"", 0},
    {"trainingInput:\n  command: [trainer]\n", "trainingInput.hyperparameters", 1, 1,
     "required field is missing", 0},
    {"trainingInput: 3\n", "trainingInput", 1, 1, "expected an object, got 3", 0},
};

static void test_bad(void) {
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        const bad_case *bc = &BAD[i];
        char path[600];
        tn_spec s;
        spec_errors errs;
        write_file(path, sizeof path, "bad.yaml", bc->yaml);
        int rc = spec_read_named(path, NULL, 0, &s, &errs, NULL);
        long k = find_error(&errs, bc->path, bc->msg);
        int want_n = bc->nerrors ? bc->nerrors : 1;
        CHECK_MSG(rc == TN_EINVAL && k >= 0 && errs.n == (size_t)want_n,
                  "case %zu: want %d error(s) incl. %s: ...%s..., got %zu", i, want_n,
                  bc->path, bc->msg, errs.n);
        if (k >= 0)
            CHECK_MSG(errs.items[k].line == bc->line && errs.items[k].column == bc->column,
                      "case %zu: at %d:%d, want %d:%d", i, errs.items[k].line,
                      errs.items[k].column, bc->line, bc->column);
        for (size_t e = 0; e < errs.n; e++) /* every problem of a YAML file has a place */
            CHECK_MSG(errs.items[e].line >= 1 && errs.items[e].column >= 1, "case %zu", i);
        if (k < 0 || errs.n != (size_t)want_n) print_errors(&errs);
        spec_errors_clear(&errs);
        spec_clear(&s);
    }
}

/* Five mistakes, five messages, in the order of the file. */
static void test_all_at_once(void) {
    static const char *const text =
        "jobId: study-1\n"
        "trainingInput:\n"
        "  scaleTier: BASIC\n"
        "  workerCount: 2\n"
        "  comand: [trainer]\n"
        "  hyperparameters:\n"
        "    maxTrials: 0\n"
        "    params:\n"
        "      - {parameterName: x, type: DOUBLE, minValue: 1, maxValue: 0}\n";
    char path[600];
    tn_spec s;
    spec_errors errs;
    write_file(path, sizeof path, "five.yml", text);
    CHECK_INT_EQ(spec_read_named(path, NULL, 0, &s, &errs, NULL), TN_EINVAL);
    static const struct {
        const char *path;
        int line, column;
    } want[] = {{"jobId", 1, 1},
                {"trainingInput.comand", 5, 3},
                {"trainingInput.workerCount", 4, 3},
                {"trainingInput.hyperparameters.maxTrials", 7, 5},
                {"trainingInput.hyperparameters.params[0].maxValue", 9, 55}};
    CHECK_INT_EQ(errs.n, 5);
    for (size_t i = 0; i < 5; i++) {
        long k = find_error(&errs, want[i].path, "");
        CHECK_MSG(k >= 0 && errs.items[k].line == want[i].line &&
                      errs.items[k].column == want[i].column,
                  "%s: want %d:%d", want[i].path, want[i].line, want[i].column);
    }
    if (errs.n != 5) print_errors(&errs);
    spec_errors_clear(&errs);
}

/* ---- Anchors, aliases and merge keys; a billion laughs; nesting ---- */

static void test_anchors(void) {
    static const char *const text =
        "trainingInput:\n"
        "  command: [trainer]\n"
        "  resources:\n"
        "    chief: &box {cores: 2, memory: 4G}\n"
        "    worker: *box\n"
        "    ps:\n"
        "      <<: *box\n"
        "      cores: 1\n"
        "  scaleTier: CUSTOM\n"
        "  workerCount: 1\n"
        "  parameterServerCount: 1\n"
        "  hyperparameters:\n"
        "    params:\n"
        "      - &lr {parameterName: lr, type: DOUBLE, minValue: 0.1, maxValue: 1}\n"
        "      - <<: [*lr, {type: INTEGER}]\n"
        "        parameterName: units\n"
        "        minValue: 1\n"
        "        maxValue: 8\n";
    char path[600];
    tn_spec s;
    spec_errors errs;
    write_file(path, sizeof path, "anchors.yaml", text);
    int rc = spec_read_named(path, NULL, 0, &s, &errs, NULL);
    CHECK_INT_EQ(rc, 0);
    if (rc) print_errors(&errs);
    spec_errors_clear(&errs);
    if (rc) return;
    CHECK_INT_EQ(s.resources[TF_CHIEF].cores, 2);
    CHECK_INT_EQ(s.resources[TF_WORKER].cores, 2);
    CHECK_INT_EQ(s.resources[TF_WORKER].memory_mb, 4096);
    CHECK_INT_EQ(s.resources[TF_PS].cores, 1);      /* the key written wins */
    CHECK_INT_EQ(s.resources[TF_PS].memory_mb, 4096); /* the rest is merged */
    CHECK_INT_EQ(s.space.n, 2);
    json_t *p1 = json_array_get(json_object_get(json_object_get(s.training_input,
                                "hyperparameters"), "params"), 1);
    /* the first mapping listed wins over later ones: lr's type DOUBLE */
    CHECK(strcmp(json_string_value(json_object_get(p1, "type")), "DOUBLE") == 0);
    CHECK(strcmp(json_string_value(json_object_get(p1, "parameterName")), "units") == 0);
    spec_clear(&s);

    /* A problem inside an anchored value is reported where each copy is, the copy at
     * its alias. */
    static const char *const twice =
        "trainingInput:\n"
        "  command: [trainer]\n"
        "  resources:\n"
        "    chief: &box {cores: 0}\n"
        "    worker: *box\n"
        "  hyperparameters:\n"
        "    params:\n"
        "      - {parameterName: x, type: DOUBLE, minValue: 0, maxValue: 1}\n";
    write_file(path, sizeof path, "twice.yaml", twice);
    CHECK_INT_EQ(spec_read_named(path, NULL, 0, &s, &errs, NULL), TN_EINVAL);
    long a = find_error(&errs, "trainingInput.resources.chief.cores", "must be >= 1");
    long b = find_error(&errs, "trainingInput.resources.worker.cores", "must be >= 1");
    CHECK(a >= 0 && errs.items[a].line == 4 && errs.items[a].column == 18);
    CHECK(b >= 0 && errs.items[b].line == 4 && errs.items[b].column == 18);
    long w = find_error(&errs, "trainingInput.resources.worker", "");
    CHECK(w < 0); /* (only the two) */
    CHECK_INT_EQ(errs.n, 2);
    spec_errors_clear(&errs);
}

static void test_alias_bomb(void) {
    /* Nine levels of ten aliases each: 10^9 strings if expanded. */
    static const char *const text =
        "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n"
        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
        "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
        "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
        "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
        "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
        "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
    json_t *root = NULL;
    sy_where *w = NULL;
    spec_errors errs = {0};
    CHECK_INT_EQ(sy_parse(text, strlen(text), &root, &w, &errs), TN_EINVAL);
    CHECK(root == NULL && w == NULL);
    CHECK_INT_EQ(errs.n, 1);
    if (errs.n == 1) {
        CHECK_STR_CONTAINS(errs.items[0].message, "aliases copy more than 100000 values");
        CHECK(errs.items[0].line == 6 && strncmp(errs.items[0].path, "f[", 2) == 0);
    }
    spec_errors_clear(&errs);

    /* Below the limit, aliases are copies (a few thousand values). */
    static const char *const fine = "a: &a [1,2,3,4,5,6,7,8,9,10]\n"
                                    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                                    "c: [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n";
    CHECK_INT_EQ(sy_parse(fine, strlen(fine), &root, &w, &errs), 0);
    json_t *c = json_object_get(root, "c");
    CHECK(json_array_size(c) == 10 &&
          json_integer_value(json_array_get(json_array_get(json_array_get(c, 9), 9), 9)) == 10);
    json_decref(root);
    sy_where_free(w);
    spec_errors_clear(&errs);
}

static void test_nesting(void) {
    char text[4 * SY_MAX_DEPTH + 64];
    json_t *root = NULL;
    sy_where *w = NULL;
    spec_errors errs = {0};
    /* SY_MAX_DEPTH levels in all are fine ... */
    size_t n = 0;
    n += (size_t)sprintf(text + n, "a: ");
    for (int i = 1; i < SY_MAX_DEPTH; i++) text[n++] = '[';
    for (int i = 1; i < SY_MAX_DEPTH; i++) text[n++] = ']';
    text[n++] = '\n';
    CHECK_INT_EQ(sy_parse(text, n, &root, &w, &errs), 0);
    json_decref(root);
    sy_where_free(w);
    /* ... one more is an error at the bracket that opens it. */
    n = (size_t)sprintf(text, "a: ");
    for (int i = 0; i < SY_MAX_DEPTH; i++) text[n++] = '[';
    for (int i = 0; i < SY_MAX_DEPTH; i++) text[n++] = ']';
    text[n++] = '\n';
    CHECK_INT_EQ(sy_parse(text, n, &root, &w, &errs), TN_EINVAL);
    CHECK_INT_EQ(errs.n, 1);
    if (errs.n == 1) {
        CHECK_STR_CONTAINS(errs.items[0].message, "nested deeper than 64 levels");
        CHECK_INT_EQ(errs.items[0].column, 3 + SY_MAX_DEPTH);
    }
    spec_errors_clear(&errs);
    /* An alias cannot nest deeper than writing it out would. */
    n = (size_t)sprintf(text, "a: &x ");
    for (int i = 1; i < SY_MAX_DEPTH; i++) text[n++] = '[';
    for (int i = 1; i < SY_MAX_DEPTH; i++) text[n++] = ']';
    n += (size_t)sprintf(text + n, "\nb: [*x]\n");
    CHECK_INT_EQ(sy_parse(text, n, &root, &w, &errs), TN_EINVAL);
    CHECK(errs.n == 1 && strstr(errs.items[0].message, "alias *x nests"));
    spec_errors_clear(&errs);
}

/* ---- The study's name ---- */

static void test_job_id(void) {
    char path[600];
    tn_spec s;
    char *text = NULL;
    static const char *const with_id = "jobId: from_file\ntrainingInput:\n" REST;
    /* the file's jobId, unless --job-id */
    write_file(path, sizeof path, "named.yaml", with_id);
    CHECK_INT_EQ(spec_read_named(path, NULL, 0, &s, NULL, NULL), 0);
    CHECK(s.job_id && strcmp(s.job_id, "from_file") == 0);
    CHECK(!s.notes || !strstr(s.notes, "jobId"));
    spec_clear(&s);
    CHECK_INT_EQ(spec_read_named(path, "flag_id", 0, &s, NULL, &text), 0);
    CHECK(s.job_id && strcmp(s.job_id, "flag_id") == 0);
    CHECK(text && strstr(text, "\"jobId\": \"flag_id\""));
    spec_clear(&s);
    free(text);
    /* no jobId: the file's base name, made a valid one */
    write_file(path, sizeof path, "2024-sweep.v2.yml", "trainingInput:\n" REST);
    CHECK_INT_EQ(spec_read_named(path, NULL, 0, &s, NULL, &text), 0);
    CHECK(s.job_id && strcmp(s.job_id, "job_2024_sweep_v2") == 0);
    CHECK_STR_CONTAINS(s.notes, "jobId: job_2024_sweep_v2, from the file's name");
    CHECK(text && strstr(text, "\"jobId\": \"job_2024_sweep_v2\""));
    spec_clear(&s);
    free(text);
    /* jobId: null (YAML's ~) is not set either */
    write_file(path, sizeof path, "nulled.yaml", "jobId: ~\ntrainingInput:\n" REST);
    CHECK_INT_EQ(spec_read_named(path, NULL, 0, &s, NULL, NULL), 0);
    CHECK(s.job_id && strcmp(s.job_id, "nulled") == 0);
    spec_clear(&s);
    /* --job-id on a JSON spec too; a JSON spec without jobId still needs one */
    static const char *const json = "{\"trainingInput\": {\"command\": [\"t\"], "
                                    "\"hyperparameters\": {\"params\": [{\"parameterName\": "
                                    "\"x\", \"type\": \"DOUBLE\", \"minValue\": 0, "
                                    "\"maxValue\": 1}]}}}";
    write_file(path, sizeof path, "nameless.json", json);
    spec_errors errs;
    CHECK_INT_EQ(spec_read_named(path, NULL, 0, &s, &errs, NULL), TN_EINVAL);
    CHECK(find_error(&errs, "jobId", "required field is missing") >= 0);
    CHECK(errs.n == 1 && errs.items[0].line == 0); /* JSON: no positions */
    spec_errors_clear(&errs);
    CHECK_INT_EQ(spec_read_named(path, "given", 0, &s, NULL, &text), 0);
    CHECK(s.job_id && strcmp(s.job_id, "given") == 0);
    CHECK(text && strstr(text, "\"given\""));
    spec_clear(&s);
    free(text);

    static const struct {
        const char *path, *id;
    } names[] = {{"config.yaml", "config"},         {"runs/2024-a.yaml", "job_2024_a"},
                 {"/x/my.config.yml", "my_config"}, {"a b", "a_b"},
                 {"_x.yaml", "job__x"},             {".yaml", "job__yaml"},
                 {"dir/", "job"},                   {"Ünï.yaml", "job___n__"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char *id = spec_job_id_from_path(names[i].path);
        CHECK_MSG(strcmp(id, names[i].id) == 0 && spec_job_id_valid(id), "%s: %s, want %s",
                  names[i].path, id, names[i].id);
        free(id);
    }
    char longname[300];
    memset(longname, 'a', 250);
    strcpy(longname + 250, ".yaml");
    char *id = spec_job_id_from_path(longname);
    CHECK(strlen(id) == 128 && spec_job_id_valid(id));
    free(id);
    CHECK(spec_job_id_valid("ok_1") && !spec_job_id_valid("1x") && !spec_job_id_valid("a-b") &&
          !spec_job_id_valid("") && !spec_job_id_valid(NULL));
}

/* ---- The ignored fields: listed once, the same for JSON and YAML ---- */

static void test_ignored(void) {
    static const char *const yaml =
        "labels: {team: vision}\n"
        "trainingInput:\n"
        "  region: europe-west4\n"
        "  network: projects/1/global/networks/x\n"
        "  scheduling: {maxRunningTime: 7200s}\n"
        "  packageUris: [gs://bucket/trainer-0.1.tar.gz]\n"
        "  masterConfig: {imageUri: gcr.io/p/i:latest, acceleratorConfig: {count: 0}}\n"
        "  workerConfig: {imageUri: gcr.io/p/i:latest}\n"
        "  command: [trainer]\n"
        "  hyperparameters:\n"
        "    params:\n"
        "      - {parameterName: x, type: DOUBLE, minValue: 0, maxValue: 1}\n";
    char path[600];
    tn_spec s;
    spec_errors errs;
    write_file(path, sizeof path, "ignored.yaml", yaml);
    int rc = spec_read_named(path, "ign", 0, &s, &errs, NULL);
    CHECK_INT_EQ(rc, 0);
    if (rc) print_errors(&errs);
    spec_errors_clear(&errs);
    if (rc) return;
    static const char *const want[] = {
        "ignored: labels (AI Platform's job metadata)",
        "ignored: trainingInput.region, trainingInput.network (Google Cloud settings",
        "ignored: trainingInput.packageUris (trials run trainingInput.command; packages are "
        "installed for pythonModule only)",
        "ignored: trainingInput.scheduling (the cloud job's queueing and time limits",
        "ignored: trainingInput.masterConfig.imageUri, trainingInput.workerConfig.imageUri "
        "(container settings"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) CHECK_STR_CONTAINS(s.notes, want[i]);
    /* once each: five lines, no name note (--job-id) */
    size_t lines = 1;
    for (const char *p = s.notes; p && *p; p++) lines += *p == '\n';
    CHECK_INT_EQ(lines, 5);
    CHECK(strstr(strstr(s.notes, "region") + 1, "region") == NULL);
    spec_clear(&s);

    /* The same spec in JSON gives the same notes. */
    json_t *root = NULL;
    sy_where *w = NULL;
    CHECK_INT_EQ(sy_parse(yaml, strlen(yaml), &root, &w, &errs), 0);
    json_object_set_new(root, "jobId", json_string("ign"));
    char *json = json_dumps(root, 0);
    tn_spec j;
    CHECK_INT_EQ(spec_parse(json, "ignored.json", 0, &j, NULL), 0);
    write_file(path, sizeof path, "ignored.yaml", yaml);
    CHECK_INT_EQ(spec_read_named(path, "ign", 0, &s, NULL, NULL), 0);
    CHECK(j.notes && s.notes && strcmp(j.notes, s.notes) == 0);
    spec_clear(&j);
    spec_clear(&s);
    free(json);
    json_decref(root);
    sy_where_free(w);

    /* A spec without such fields has no notes. */
    write_file(path, sizeof path, "plain.yaml", "jobId: plain\ntrainingInput:\n" REST);
    CHECK_INT_EQ(spec_read_named(path, NULL, 0, &s, NULL, NULL), 0);
    CHECK(s.notes == NULL);
    spec_clear(&s);
}

/* ---- pythonModule with packageUris ---- */

static void test_packages(void) {
    char path[600], pkg[600], sdist[600], text[2048];
    tn_spec s;
    spec_errors errs;
    /* a package folder with setup.py, an sdist, a folder that is not a package */
    snprintf(pkg, sizeof pkg, "%s/trainer_pkg", g_dir);
    mkdir(pkg, 0755);
    write_file(path, sizeof path, "trainer_pkg/setup.py", "from setuptools import setup\n");
    write_file(sdist, sizeof sdist, "trainer-0.1.tar.gz", "not really gzip\n");
    snprintf(path, sizeof path, "%s/empty_dir", g_dir);
    mkdir(path, 0755);

#define MODULE_SPEC(uris) \
    "trainingInput:\n  pythonModule: trainer.task\n  packageUris: " uris "\n" \
    "  hyperparameters:\n    params:\n" \
    "      - {parameterName: x, type: DOUBLE, minValue: 0, maxValue: 1}\n"
    snprintf(text, sizeof text, MODULE_SPEC("[%s, %s]"), pkg, sdist);
    write_file(path, sizeof path, "module.yaml", text);
    int rc = spec_read_named(path, NULL, 0, &s, &errs, NULL);
    CHECK_INT_EQ(rc, 0);
    if (rc) print_errors(&errs);
    spec_errors_clear(&errs);
    CHECK(s.python_module && strcmp(s.python_module, "trainer.task") == 0);
    CHECK(!s.notes || !strstr(s.notes, "packageUris")); /* used, not ignored */
    spec_clear(&s);

    /* gs://, a missing path, a folder that is not a package, a file that is not one,
     * an empty string and a number: six problems at once, each at its item */
    snprintf(text, sizeof text,
             MODULE_SPEC("\n    - gs://bucket/trainer-0.1.tar.gz\n    - %s/nope.tar.gz\n"
                         "    - %s/empty_dir\n    - %s/trainer_pkg/setup.py\n    - ''\n"
                         "    - 7"),
             g_dir, g_dir, g_dir);
    write_file(path, sizeof path, "module.yaml", text);
    CHECK_INT_EQ(spec_read_named(path, NULL, 0, &s, &errs, NULL), TN_EINVAL);
    static const struct {
        const char *msg;
        int line;
    } want[] = {{"\"gs://bucket/trainer-0.1.tar.gz\" cannot be reached from here: give the "
                 "path of the package on this machine", 4},
                {"nope.tar.gz\": No such file or directory (relative paths are from the "
                 "current folder)", 5},
                {"empty_dir\" is a folder without setup.py or pyproject.toml", 6},
                {"setup.py\" is not a package: expected a folder", 7},
                {"must not be empty", 8},
                {"expected a string: the path of a package on this machine, got 7", 9}};
    CHECK_INT_EQ(errs.n, 6);
    for (size_t i = 0; i < 6; i++) {
        char p[64];
        snprintf(p, sizeof p, "trainingInput.packageUris[%zu]", i);
        long k = find_error(&errs, p, want[i].msg);
        CHECK_MSG(k >= 0 && errs.items[k].line == want[i].line && errs.items[k].column == 7,
                  "%s: ...%s... on line %d", p, want[i].msg, want[i].line);
    }
    if (errs.n != 6) print_errors(&errs);
    spec_errors_clear(&errs);

    /* a path pip would read as requirement syntax: a marker after ';', extras in '[]' */
    spec_errors perrs;
    tn_spec ps;
    CHECK_INT_EQ(spec_parse("{\"jobId\": \"m\", \"trainingInput\": {\"pythonModule\": \"t.task\","
                            " \"packageUris\": [\"/pkgs/m; python_version < '0'\", "
                            "\"/pkgs/n[gpu]\"], \"hyperparameters\": {\"params\": "
                            "[{\"parameterName\": \"x\", \"type\": \"DOUBLE\", \"minValue\": 0, "
                            "\"maxValue\": 1}]}}}", "stored", 0, &ps, &perrs),
                 TN_EINVAL);
    CHECK(find_error(&perrs, "trainingInput.packageUris[0]", "has ';' in it, which pip would "
                     "read as requirement syntax") >= 0);
    CHECK(find_error(&perrs, "trainingInput.packageUris[1]", "has '[' in it") >= 0);
    spec_errors_clear(&perrs);

    /* Parsing stored text checks no files (a study resumed elsewhere), but still refuses
     * a URL. */
    tn_spec j;
    CHECK_INT_EQ(spec_parse("{\"jobId\": \"m\", \"trainingInput\": {\"pythonModule\": \"t.task\","
                            " \"packageUris\": [\"/nowhere/pkg.tar.gz\"], \"hyperparameters\":"
                            " {\"params\": [{\"parameterName\": \"x\", \"type\": \"DOUBLE\","
                            " \"minValue\": 0, \"maxValue\": 1}]}}}", "stored", 0, &j, NULL),
                 0);
    spec_clear(&j);
    CHECK_INT_EQ(spec_parse("{\"jobId\": \"m\", \"trainingInput\": {\"pythonModule\": \"t.task\","
                            " \"packageUris\": [\"https://x/pkg.tar.gz\"], \"hyperparameters\":"
                            " {\"params\": [{\"parameterName\": \"x\", \"type\": \"DOUBLE\","
                            " \"minValue\": 0, \"maxValue\": 1}]}}}", "stored", 0, &j, &errs),
                 TN_EINVAL);
    CHECK(find_error(&errs, "trainingInput.packageUris[0]", "cannot be reached") >= 0);
    spec_errors_clear(&errs);
#undef MODULE_SPEC
}

/* ---- Which files are YAML ---- */

static void test_format(void) {
    CHECK(sy_is_yaml("config.yaml", "{}", 2));
    CHECK(sy_is_yaml("CONFIG.YML", "{}", 2));
    CHECK(!sy_is_yaml("spec.json", "a: 1", 4));
    CHECK(!sy_is_yaml("spec", "  \n{\"a\": 1}", 10));
    CHECK(!sy_is_yaml("spec", "\xEF\xBB\xBF{}", 5));
    CHECK(sy_is_yaml("spec", "# comment\n{}", 12));
    CHECK(sy_is_yaml("spec", "trainingInput: {}", 17));
    CHECK(sy_is_yaml("spec.txt", "", 0));
    /* A spec named without an extension is read by what it holds. */
    char path[600];
    tn_spec s;
    write_file(path, sizeof path, "spec_noext", "jobId: noext\ntrainingInput:\n" REST);
    CHECK_INT_EQ(spec_read_named(path, NULL, 0, &s, NULL, NULL), 0);
    CHECK(s.job_id && strcmp(s.job_id, "noext") == 0);
    spec_clear(&s);
    write_file(path, sizeof path, "spec_noext2", DESIGN_JSON);
    CHECK_INT_EQ(spec_read_named(path, NULL, 0, &s, NULL, NULL), 0);
    CHECK(s.job_id && strcmp(s.job_id, "config") == 0);
    spec_clear(&s);
    /* JSON is YAML too: a .yaml file holding JSON reads the same */
    write_file(path, sizeof path, "design.yaml", DESIGN_JSON);
    tn_spec j;
    CHECK_INT_EQ(spec_read_named(path, NULL, 0, &s, NULL, NULL), 0);
    CHECK_INT_EQ(spec_parse(DESIGN_JSON, "design.json", 0, &j, NULL), 0);
    CHECK(s.training_input && j.training_input && json_equal(s.training_input, j.training_input));
    spec_clear(&s);
    spec_clear(&j);
}

int main(void) {
    make_dir();
    RUN(test_config_yaml);
    RUN(test_scalars);
    RUN(test_bad);
    RUN(test_all_at_once);
    RUN(test_anchors);
    RUN(test_alias_bomb);
    RUN(test_nesting);
    RUN(test_job_id);
    RUN(test_ignored);
    RUN(test_packages);
    RUN(test_format);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return check_summary();
}
