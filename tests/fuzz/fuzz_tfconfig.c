/*
 * fuzz_tfconfig.c — libFuzzer harness for TF_CONFIG (common/tfconfig.h,
 * tf_config_parse): the input is the variable's text.
 *
 * Besides "no crash, no leak, no undefined behaviour" it checks tfconfig.h's promises:
 * a failed parse returns TN_EINVAL with a message and leaves the struct as
 * tf_config_init does; a parsed one passes tf_config_check, its addresses split
 * (tf_split_address), its world and rank agree, and what tf_config_emit writes parses
 * back to a config that emits the same text. Seeds: corpus/tfconfig. docs/fuzzing.md.
 */
#include "tests/fuzz/fuzz_util.h"

#include "common/status.h"
#include "common/tfconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    char err[512] = "";
    tf_config c;
    int rc = tf_config_parse(text, &c, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc == TN_EINVAL && err[0] != '\0');
        for (int t = 0; t < TF_NCLUSTER; t++) FUZZ_CHECK(c.cluster[t].n == 0);
        FUZZ_CHECK(c.trial == NULL && c.job == NULL && c.environment == NULL);
        free(text);
        return 0;
    }
    FUZZ_CHECK(tf_config_check(&c, err, sizeof err) == 0);
    FUZZ_CHECK(c.type >= 0 && c.type < TF_NTYPES && c.index >= 0);
    for (int t = 0; t < TF_NCLUSTER; t++)
        for (size_t i = 0; i < c.cluster[t].n; i++) {
            char host[256];
            int port = 0;
            if (tf_split_address(c.cluster[t].addr[i], host, sizeof host, &port, err,
                                 sizeof err) == 0)
                FUZZ_CHECK(port >= 1 && port <= 65535 && host[0] != '\0');
        }
    /* tfconfig.h: chief + workers, or 1 for the empty cluster (a cluster of ps tasks
     * only is refused: no one would train); rank -1 for ps and evaluator */
    size_t members = c.cluster[TF_CHIEF].n + c.cluster[TF_WORKER].n;
    int world = tf_world_size(&c), rank = tf_rank(&c);
    FUZZ_CHECK(members > 0 || c.cluster[TF_PS].n == 0);
    FUZZ_CHECK(world == (members ? (int)members : 1));
    FUZZ_CHECK(rank >= -1 && rank < world);
    FUZZ_CHECK((rank == -1) == (c.type == TF_PS || c.type == TF_EVALUATOR));
    (void)tf_chief_address(&c);
    (void)tf_is_chief(&c);
    (void)tf_type_name(&c, c.type);

    char *once = tf_config_emit(&c);
    tf_config back;
    rc = tf_config_parse(once, &back, err, sizeof err);
    if (rc != 0) fprintf(stderr, "emitted %s\ndoes not parse: %s\n", once, err);
    FUZZ_CHECK(rc == 0);
    char *twice = tf_config_emit(&back);
    if (strcmp(once, twice) != 0) fprintf(stderr, "emitted %s\nthen %s\n", once, twice);
    FUZZ_CHECK(strcmp(once, twice) == 0);
    free(once);
    free(twice);
    tf_config_clear(&back);
    tf_config_clear(&c);
    free(text);
    return 0;
}
