/*
 * fuzz_spec_yaml.c — libFuzzer harness for YAML specs: the converter
 * (tuner/spec_yaml.h: sy_parse, sy_where_annotate) and the file front end of
 * tuner/spec.c that validates what it makes (spec_read_named on a .yaml file). The
 * input is the text of a gcloud config.yaml.
 *
 * Besides "no crash, no leak, no undefined behaviour, no blow-up" (aliases are copies,
 * bounded by SY_MAX_ALIAS_NODES; nesting by SY_MAX_DEPTH) it checks their promises:
 * sy_parse gives an object and its locations, or TN_EINVAL with at least one error,
 * each with a path, a message and a line and column, and nothing else; every error a
 * YAML file gets from spec_read_named has a line and column; a spec that parses hands
 * back JSON text that spec_parse reads as the same study (jobId, parameters, tier).
 * Seeds: corpus/spec_yaml (the studies/ YAML specs and the problems of
 * tests/tuner/test_spec_yaml.c). docs/fuzzing.md.
 */
#include "tests/fuzz/fuzz_util.h"

#include "common/status.h"
#include "tuner/spec.h"
#include "tuner/spec_yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_errors(const spec_errors *e, size_t from) {
    for (size_t i = from; i < e->n; i++) {
        FUZZ_CHECK(e->items[i].path != NULL && e->items[i].message != NULL &&
                   e->items[i].message[0] != '\0');
        FUZZ_CHECK(e->items[i].line >= 1 && e->items[i].column >= 1);
    }
}

static void convert(const char *text, size_t size) {
    json_t *root = NULL;
    sy_where *where = NULL;
    spec_errors errs = {0};
    int rc = sy_parse(text, size, &root, &where, &errs);
    if (rc == 0) {
        FUZZ_CHECK(json_is_object(root) && where != NULL && errs.n == 0);
        /* Every member of the root is found where it was written. */
        const char *key;
        json_t *v;
        json_object_foreach(root, key, v) {
            spec_error e = {.path = (char *)key, .message = NULL};
            sy_where_annotate(where, &e);
            FUZZ_CHECK(e.line >= 1 && e.column >= 1);
        }
    } else {
        FUZZ_CHECK(rc == TN_EINVAL && root == NULL && where == NULL && errs.n >= 1);
        check_errors(&errs, 0);
    }
    json_decref(root);
    sy_where_free(where);
    spec_errors_clear(&errs);
}

static void validate(const uint8_t *data, size_t size) {
    char path[600];
    snprintf(path, sizeof path, "%s/config.yaml", fuzz_dir());
    fuzz_write_file(path, data, size);
    tn_spec spec, back;
    spec_errors errs = {0};
    char *text = NULL;
    int rc = spec_read_named(path, NULL, 0, &spec, &errs, &text);
    if (rc == 0) {
        FUZZ_CHECK(errs.n == 0 && text != NULL && spec.job_id != NULL);
        FUZZ_CHECK(spec_parse(text, "stored", 0, &back, NULL) == 0);
        FUZZ_CHECK(strcmp(back.job_id, spec.job_id) == 0);
        FUZZ_CHECK(back.space.n == spec.space.n && back.scale_tier == spec.scale_tier &&
                   back.max_trials == spec.max_trials);
        FUZZ_CHECK(json_equal(back.training_input, spec.training_input));
        spec_clear(&back);
        spec_clear(&spec);
    } else {
        FUZZ_CHECK(rc == TN_EINVAL && errs.n >= 1 && text == NULL);
        check_errors(&errs, 0);
    }
    free(text);
    spec_errors_clear(&errs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    convert((const char *)data, size); /* the bytes as they are, NULs included */
    validate(data, size);
    return 0;
}
