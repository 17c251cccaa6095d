/*
 * fuzz_spec.c — libFuzzer harness for the study spec parser (tuner/spec.h,
 * spec_parse): the input is the text of a spec file.
 *
 * Besides "no crash, no leak, no undefined behaviour" it checks spec.h's promises: a
 * spec that parses has no errors, a valid jobId, 1 <= maxParallelTrials <= maxTrials
 * and a program to run (unless parsed for ask/tell); one that does not parse returns
 * TN_EINVAL with at least one error, each with a path and a message. Seeds:
 * corpus/spec (the studies/ specs and the docs' examples). docs/fuzzing.md.
 */
#include "tests/fuzz/fuzz_util.h"

#include <ctype.h>

#include "common/status.h"
#include "tuner/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int valid_job_id(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n < 1 || n > 128 || !isalpha((unsigned char)s[0])) return 0;
    for (size_t i = 1; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_') return 0;
    return 1;
}

static void parse_once(const char *text, int for_ask_tell) {
    tn_spec spec;
    spec_errors errs = {0};
    memset(&spec, 0, sizeof spec);
    int rc = spec_parse(text, "fuzz.json", for_ask_tell, &spec, &errs);
    if (rc == 0) {
        FUZZ_CHECK(errs.n == 0);
        FUZZ_CHECK(valid_job_id(spec.job_id));
        FUZZ_CHECK(spec.max_parallel_trials >= 1 && spec.max_parallel_trials <= spec.max_trials);
        FUZZ_CHECK(spec.metric_tag != NULL && spec.job_dir != NULL);
        FUZZ_CHECK(for_ask_tell || spec.ncommand >= 1 || spec.python_module != NULL);
        for (int t = 0; t < TF_NTYPES; t++) {
            FUZZ_CHECK(spec_replica_name(&spec, t) != NULL);
            FUZZ_CHECK(spec_replica_count(&spec, t) >= 0);
        }
        FUZZ_CHECK(spec_executor_name(spec.executor.type) != NULL);
        spec_clear(&spec);
    } else {
        FUZZ_CHECK(rc == TN_EINVAL);
        FUZZ_CHECK(errs.n >= 1);
        for (size_t i = 0; i < errs.n; i++)
            FUZZ_CHECK(errs.items[i].path != NULL && errs.items[i].message != NULL &&
                       errs.items[i].message[0] != '\0');
    }
    spec_errors_clear(&errs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    parse_once(text, 0);
    parse_once(text, 1);
    free(text);
    return 0;
}
