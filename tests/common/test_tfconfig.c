/*
 * test_tfconfig.c — tests for common/tfconfig.c: TF_CONFIG emitted and parsed back
 * for the tiers of DESIGN.md (BASIC, STANDARD_1) and every task in them, the
 * evaluator (never in the cluster), the legacy "master" naming, the exact text of a
 * simple emit, a table of malformed TF_CONFIGs whose messages must name the field,
 * address checks and splitting, $TF_CONFIG unset / empty / set, and the table of
 * world size, rank and chief-ness that PyTorch programs get.
 *
 * Contract: common/tfconfig.h; docs/design.md, "The trial-job contract".
 */
#include "common/tfconfig.h"

#include "common/status.h"
#include "tests/check.h"
#include "tests/testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* ---------------------------------------------------------------------------------
 * Helpers
 * --------------------------------------------------------------------------------- */

static int str_eq(const char *a, const char *b) {
    if (!a || !b) return a == b;
    return !strcmp(a, b);
}

/* Whether a and b describe the same TF_CONFIG; says what differs on stderr. */
static int configs_equal(const tf_config *a, const tf_config *b) {
    for (int t = 0; t < TF_NCLUSTER; t++) {
        if (a->cluster[t].n != b->cluster[t].n) {
            fprintf(stderr, "  cluster[%d]: %zu vs %zu entries\n", t, a->cluster[t].n,
                    b->cluster[t].n);
            return 0;
        }
        for (size_t i = 0; i < a->cluster[t].n; i++) {
            if (strcmp(a->cluster[t].addr[i], b->cluster[t].addr[i])) {
                fprintf(stderr, "  cluster[%d][%zu]: %s vs %s\n", t, i, a->cluster[t].addr[i],
                        b->cluster[t].addr[i]);
                return 0;
            }
        }
    }
    if (a->master != b->master || a->type != b->type || a->index != b->index) {
        fprintf(stderr, "  master/type/index: %d/%d/%d vs %d/%d/%d\n", a->master, a->type,
                a->index, b->master, b->type, b->index);
        return 0;
    }
    if (!str_eq(a->trial, b->trial)) {
        fprintf(stderr, "  trial: %s vs %s\n", a->trial ? a->trial : "(null)",
                b->trial ? b->trial : "(null)");
        return 0;
    }
    if ((a->job == NULL) != (b->job == NULL) || (a->job && !json_equal(a->job, b->job))) {
        fprintf(stderr, "  job differs\n");
        return 0;
    }
    const char *ea = a->environment ? a->environment : "cloud";
    const char *eb = b->environment ? b->environment : "cloud";
    if (strcmp(ea, eb)) {
        fprintf(stderr, "  environment: %s vs %s\n", ea, eb);
        return 0;
    }
    return 1;
}

/* tf_config_parse of text into c, which must succeed. */
static void parse_ok(const char *text, tf_config *c) {
    char err[512] = "";
    int rc = tf_config_parse(text, c, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", text, err);
}

/* Emits c, parses the text back, checks both agree and that a second emit gives the
 * same text. */

static void check_round_trip(const tf_config *c, const char *what) {
    char *text = tf_config_emit(c);
    CHECK_MSG(text != NULL, "%s: emit returned NULL", what);
    if (!text) return;
    tf_config back;
    char err[512] = "";
    int rc = tf_config_parse(text, &back, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: parse of %s failed: %s", what, text, err);
    if (rc == 0) {
        CHECK_MSG(configs_equal(c, &back), "%s: round trip of %s differs", what, text);
        char *again = tf_config_emit(&back);
        CHECK_MSG(!strcmp(text, again), "%s: re-emit %s != %s", what, again, text);
        free(again);
    }
    tf_config_clear(&back);
    free(text);
}

/* A cluster of nchief/nworker/nps replicas on localhost, ports from 2222. */
static void make_cluster(tf_config *c, int nchief, int nworker, int nps, int master) {
    tf_config_init(c);
    c->master = master;
    char addr[64];
    int port = 2222;
    for (int i = 0; i < nchief; i++) {
        snprintf(addr, sizeof addr, "localhost:%d", port++);
        tf_config_add(c, TF_CHIEF, addr);
    }
    for (int i = 0; i < nworker; i++) {
        snprintf(addr, sizeof addr, "10.0.0.%d:%d", i + 1, port++);
        tf_config_add(c, TF_WORKER, addr);
    }
    for (int i = 0; i < nps; i++) {
        snprintf(addr, sizeof addr, "ps-%d.example:%d", i, port++);
        tf_config_add(c, TF_PS, addr);
    }
}

/* ---------------------------------------------------------------------------------
 * Emit
 * --------------------------------------------------------------------------------- */

static void test_emit_exact_text(void) {
    tf_config c;
    make_cluster(&c, 1, 1, 0, 0);
    tf_config_set_task(&c, TF_WORKER, 0, "3");
    char *text = tf_config_emit(&c);
    const char *want = "{\"cluster\":{\"chief\":[\"localhost:2222\"],\"worker\":"
                       "[\"10.0.0.1:2223\"]},\"task\":{\"type\":\"worker\",\"index\":0,"
                       "\"trial\":\"3\"},\"environment\":\"cloud\"}";
    CHECK_MSG(text && !strcmp(text, want), "got  %s\nwant %s", text ? text : "(null)", want);
    free(text);

    /* With a job, master naming, no trial; the job goes between task and
     * environment. */
    tf_config_clear(&c);
    make_cluster(&c, 1, 0, 1, 1);
    tf_config_set_task(&c, TF_PS, 0, NULL);
    json_t *job = json_pack("{s:s, s:i}", "scaleTier", "CUSTOM", "workerCount", 0);
    tf_config_set_job(&c, job);
    json_decref(job); /* c holds its own reference */
    text = tf_config_emit(&c);
    want = "{\"cluster\":{\"master\":[\"localhost:2222\"],\"ps\":[\"ps-0.example:2223\"]},"
           "\"task\":{\"type\":\"ps\",\"index\":0},\"job\":{\"scaleTier\":\"CUSTOM\","
           "\"workerCount\":0},\"environment\":\"cloud\"}";
    CHECK_MSG(text && !strcmp(text, want), "got  %s\nwant %s", text ? text : "(null)", want);
    free(text);
    tf_config_clear(&c);

    /* The single-replica default: an empty cluster, chief 0. */
    tf_config_init(&c);
    text = tf_config_emit(&c);
    want = "{\"cluster\":{},\"task\":{\"type\":\"chief\",\"index\":0},"
           "\"environment\":\"cloud\"}";
    CHECK_MSG(text && !strcmp(text, want), "got  %s\nwant %s", text ? text : "(null)", want);
    free(text);
    tf_config_clear(&c);
}

/* ---------------------------------------------------------------------------------
 * Round trips
 * --------------------------------------------------------------------------------- */

static void test_round_trip_basic(void) {
    tf_config c;
    make_cluster(&c, 1, 0, 0, 0);
    tf_config_set_task(&c, TF_CHIEF, 0, "1");
    json_t *job = json_loads("{\"scaleTier\":\"BASIC\",\"jobDir\":\"runs/x\","
                             "\"hyperparameters\":{\"goal\":\"MAXIMIZE\",\"maxTrials\":20,"
                             "\"params\":[{\"parameterName\":\"lr\",\"minValue\":0.001}]}}",
                             0, NULL);
    CHECK(job != NULL);
    tf_config_set_job(&c, job);
    json_decref(job);
    CHECK_INT_EQ(tf_config_check(&c, NULL, 0), 0);
    check_round_trip(&c, "BASIC chief");
    CHECK(tf_is_chief(&c));
    CHECK_INT_EQ(tf_world_size(&c), 1);
    CHECK_INT_EQ(tf_rank(&c), 0);
    CHECK(str_eq(tf_chief_address(&c), "localhost:2222"));
    tf_config_clear(&c);
    tf_config_clear(&c); /* clearing twice is fine */
    CHECK_INT_EQ(c.cluster[TF_CHIEF].n, 0);
    CHECK(c.job == NULL && c.trial == NULL);
}

static void test_round_trip_standard_1(void) {
    /* Every replica of a STANDARD_1 job, plus an evaluator, in both namings. */
    for (int master = 0; master <= 1; master++) {
        tf_config c;
        make_cluster(&c, 1, 4, 3, master);
        const struct {
            int type, count;
        } tasks[] = {{TF_CHIEF, 1}, {TF_WORKER, 4}, {TF_PS, 3}, {TF_EVALUATOR, 2}};
        for (size_t k = 0; k < 4; k++) {
            for (int i = 0; i < tasks[k].count; i++) {
                tf_config_set_task(&c, tasks[k].type, i, "12");
                char what[64];
                snprintf(what, sizeof what, "STANDARD_1 %s %d", tf_type_name(&c, tasks[k].type),
                         i);
                check_round_trip(&c, what);
            }
        }
        /* The emitted text has exactly these lists, named as asked. */
        tf_config_set_task(&c, TF_WORKER, 3, "12");
        char *text = tf_config_emit(&c);
        json_t *root = json_loads(text, 0, NULL);
        json_t *cluster = json_object_get(root, "cluster");
        CHECK_INT_EQ(json_object_size(cluster), 3);
        CHECK_INT_EQ(json_array_size(json_object_get(cluster, master ? "master" : "chief")), 1);
        CHECK(json_object_get(cluster, master ? "chief" : "master") == NULL);
        CHECK_INT_EQ(json_array_size(json_object_get(cluster, "worker")), 4);
        CHECK_INT_EQ(json_array_size(json_object_get(cluster, "ps")), 3);
        CHECK(json_object_get(cluster, "evaluator") == NULL);
        CHECK(str_eq(json_string_value(json_object_get(root, "environment")), "cloud"));
        CHECK(json_object_get(root, "job") == NULL);
        json_decref(root);
        free(text);
        tf_config_clear(&c);
    }
}

static void test_evaluator_task(void) {
    tf_config c;
    parse_ok("{\"cluster\":{\"chief\":[\"h:1\"],\"worker\":[\"h:2\"]},"
             "\"task\":{\"type\":\"evaluator\",\"index\":0,\"trial\":\"7\"}}", &c);
    CHECK_INT_EQ(c.type, TF_EVALUATOR);
    CHECK_INT_EQ(c.index, 0);
    CHECK(str_eq(c.trial, "7"));
    CHECK(!tf_is_chief(&c));
    CHECK_INT_EQ(tf_rank(&c), -1);
    CHECK_INT_EQ(tf_world_size(&c), 2);
    CHECK(str_eq(tf_type_name(&c, c.type), "evaluator"));
    tf_config_clear(&c);

    /* An evaluator's index is not bounded by any list, even with no cluster. */
    parse_ok("{\"task\":{\"type\":\"evaluator\",\"index\":5}}", &c);
    CHECK_INT_EQ(c.index, 5);
    tf_config_clear(&c);
}

static void test_master_naming(void) {
    tf_config c;
    parse_ok("{\"cluster\":{\"master\":[\"m:2222\"],\"worker\":[\"w:2223\"]},"
             "\"task\":{\"type\":\"master\",\"index\":0},"
             "\"environment\":\"cloud\"}", &c);
    CHECK_INT_EQ(c.master, 1);
    CHECK_INT_EQ(c.type, TF_CHIEF);
    CHECK(tf_is_chief(&c));
    CHECK(str_eq(tf_type_name(&c, TF_CHIEF), "master"));
    CHECK(str_eq(tf_chief_address(&c), "m:2222"));
    char *text = tf_config_emit(&c);
    CHECK_STR_CONTAINS(text, "\"master\":[\"m:2222\"]");
    CHECK_STR_CONTAINS(text, "\"type\":\"master\"");
    CHECK(text && !strstr(text, "chief"));
    free(text);
    tf_config_clear(&c);

    /* A worker in a master-named cluster learns the naming from the cluster key. */
    parse_ok("{\"cluster\":{\"master\":[\"m:2222\"],\"worker\":[\"w:2223\"]},"
             "\"task\":{\"type\":\"worker\",\"index\":0}}", &c);
    CHECK_INT_EQ(c.master, 1);
    CHECK(!tf_is_chief(&c));
    CHECK_INT_EQ(tf_rank(&c), 1);
    tf_config_clear(&c);
}

static void test_lenient_parts(void) {
    tf_config c;
    /* Unknown top-level and task keys are ignored; a missing cluster is the single
     * replica; environment is kept; null trial/job mean none. */
    parse_ok("{\"task\":{\"type\":\"chief\",\"index\":0,\"extra\":1,"
             "\"trial\":null},\"rpc_layer\":\"grpc\",\"job\":null,"
             "\"environment\":\"google\",\"something\":[1,2]}", &c);
    CHECK(c.trial == NULL && c.job == NULL);
    CHECK(str_eq(c.environment, "google"));
    CHECK_INT_EQ(tf_world_size(&c), 1);
    CHECK(tf_is_chief(&c));
    char *text = tf_config_emit(&c);
    CHECK_STR_CONTAINS(text, "\"environment\":\"google\"");
    CHECK(text && !strstr(text, "rpc_layer"));
    free(text);
    tf_config_clear(&c);

    /* Empty lists are allowed in the input and left out of the output; IPv6 in
     * brackets is an address. */
    parse_ok("{\"cluster\":{\"chief\":[\"[::1]:2222\"],\"worker\":[],\"ps\":[]},"
             "\"task\":{\"type\":\"chief\",\"index\":0}}", &c);
    CHECK_INT_EQ(c.cluster[TF_WORKER].n, 0);
    text = tf_config_emit(&c);
    CHECK_STR_CONTAINS(text, "{\"cluster\":{\"chief\":[\"[::1]:2222\"]},");
    free(text);
    tf_config_clear(&c);
}

/* ---------------------------------------------------------------------------------
 * Malformed TF_CONFIGs
 * --------------------------------------------------------------------------------- */

static void test_malformed(void) {
#define T "\"task\":{\"type\":\"worker\",\"index\":0}"
#define C "\"cluster\":{\"chief\":[\"c:1\"],\"worker\":[\"w:2\"]}"
    const struct {
        const char *json;
        const char *want1; /* the field, as named in the message */
        const char *want2; /* what is wrong */
    } cases[] = {
        {"", "not JSON", ""},
        {"{\"cluster\":", "not JSON", "line 1"},
        {"[1,2]", "not a JSON object", "array"},
        {"\"hello\"", "not", "JSON"},
        {"{\"cluster\":[\"c:1\"]," T "}", "cluster is not an object", "array"},
        {"{\"cluster\":{\"worker\":\"w:2\"}," T "}", "cluster.worker", "not an array"},
        {"{\"cluster\":{\"worker\":[2222]}," T "}", "cluster.worker[0]", "not a \"host:port\""},
        {"{\"cluster\":{\"worker\":[\"w:2\",\"localhost\"]}," T "}", "cluster.worker[1]",
         "no :port"},
        {"{\"cluster\":{\"worker\":[\":2222\"]}," T "}", "cluster.worker[0]", "host is empty"},
        {"{\"cluster\":{\"worker\":[\"w:0\"]}," T "}", "cluster.worker[0]", "1..65535"},
        {"{\"cluster\":{\"worker\":[\"w:65536\"]}," T "}", "cluster.worker[0]", "1..65535"},
        {"{\"cluster\":{\"worker\":[\"w:12ab\"]}," T "}", "cluster.worker[0]", "not a number"},
        {"{\"cluster\":{\"worker\":[\"w:\"]}," T "}", "cluster.worker[0]", "port is empty"},
        {"{\"cluster\":{\"worker\":[\"::1:80\"]}," T "}", "cluster.worker[0]", "brackets"},
        {"{\"cluster\":{\"ps\":[\"a b:80\"]},\"task\":{\"type\":\"ps\",\"index\":0}}",
         "cluster.ps[0]", "space"},
        /* found by fuzz_tfconfig: no one to train, WORLD_SIZE would be 0 */
        {"{\"cluster\":{\"ps\":[\"h:80\"]},\"task\":{\"type\":\"ps\",\"index\":0}}",
         "parameter servers but no chief or worker", "add a \"chief\" or \"worker\" list"},
        {"{\"cluster\":{\"chief\":[\"c:1\"],\"master\":[\"m:2\"]},"
         "\"task\":{\"type\":\"chief\",\"index\":0}}", "both \"chief\" and \"master\"", ""},
        {"{\"cluster\":{\"chief\":[\"c:1\",\"c:2\"]},\"task\":{\"type\":\"chief\","
         "\"index\":0}}", "cluster.chief has 2 entries", "at most one"},
        {"{\"cluster\":{\"master\":[\"c:1\",\"c:2\"]},\"task\":{\"type\":\"master\","
         "\"index\":0}}", "cluster.master has 2 entries", "at most one"},
        /* one host:port for two replicas: one would meet itself */
        {"{\"cluster\":{\"worker\":[\"w:2\",\"w:2\"]}," T "}", "cluster.worker[1] \"w:2\" is also "
         "cluster.worker[0]", "its own host:port"},
        {"{\"cluster\":{\"chief\":[\"c:1\"],\"worker\":[\"w:2\"],\"ps\":[\"c:1\"]}," T "}",
         "cluster.ps[0] \"c:1\" is also cluster.chief[0]", "own host:port"},
        {"{\"cluster\":{\"evaluator\":[\"e:1\"]," "\"worker\":[\"w:2\"]}," T "}",
         "cluster.evaluator", "never listed"},
        {"{\"cluster\":{\"workers\":[\"w:2\"]}," T "}", "cluster.workers",
         "did you mean \"worker\""},
        {"{" C "}", "task is missing", ""},
        {"{" C ",\"task\":null}", "task is missing", ""},
        {"{" C ",\"task\":[\"worker\",0]}", "task is not an object", "array"},
        {"{" C ",\"task\":{\"index\":0}}", "task.type is missing", ""},
        {"{" C ",\"task\":{\"type\":1,\"index\":0}}", "task.type is not a string", ""},
        {"{" C ",\"task\":{\"type\":\"wroker\",\"index\":0}}", "task.type \"wroker\"",
         "did you mean \"worker\""},
        {"{" C ",\"task\":{\"type\":\"worker\"}}", "task.index is missing", ""},
        {"{" C ",\"task\":{\"type\":\"worker\",\"index\":-1}}", "task.index -1", "negative"},
        {"{" C ",\"task\":{\"type\":\"worker\",\"index\":\"0\"}}", "task.index",
         "not an integer"},
        {"{" C ",\"task\":{\"type\":\"worker\",\"index\":0.5}}", "task.index",
         "not an integer"},
        {"{" C ",\"task\":{\"type\":\"worker\",\"index\":4294967296}}", "task.index",
         "too large"},
        {"{" C ",\"task\":{\"type\":\"worker\",\"index\":1}}", "task.index 1",
         "cluster.worker has 1 entry"},
        {"{" C ",\"task\":{\"type\":\"chief\",\"index\":1}}", "task.index 1",
         "cluster.chief has 1 entry"},
        {"{" C ",\"task\":{\"type\":\"ps\",\"index\":0}}", "task.type is \"ps\"",
         "no \"ps\" list"},
        {"{\"cluster\":{\"worker\":[\"w:2\"]},\"task\":{\"type\":\"chief\",\"index\":0}}",
         "task.type is \"chief\"", "no \"chief\" list"},
        {"{\"task\":{\"type\":\"chief\",\"index\":1}}", "task.index 1", "empty cluster"},
        {"{\"task\":{\"type\":\"worker\",\"index\":0}}", "task.type is \"worker\"",
         "no \"worker\" list"},
        {"{\"cluster\":{\"chief\":[\"c:1\"]},\"task\":{\"type\":\"master\",\"index\":0}}",
         "task.type is \"master\"", "calls the chief \"chief\""},
        {"{\"cluster\":{\"master\":[\"c:1\"]},\"task\":{\"type\":\"chief\",\"index\":0}}",
         "task.type is \"chief\"", "calls the chief \"master\""},
        {"{" C "," T ",\"task\":{\"type\":\"chief\",\"index\":0}}", "not JSON", "duplicate"},
        {"{" C "," T ",\"trial\":3}", "", ""}, /* top-level "trial": unknown, ignored */
        {"{" C ",\"task\":{\"type\":\"worker\",\"index\":0,\"trial\":3}}", "task.trial",
         "not a string"},
        {"{" C "," T ",\"job\":[1]}", "job is not an object", "array"},
        {"{" C "," T ",\"environment\":7}", "environment is not a string", ""},
    };
#undef T
#undef C
    size_t n = sizeof cases / sizeof cases[0];
    size_t errors = 0;
    for (size_t i = 0; i < n; i++) {
        tf_config c;
        char err[512] = "";
        int rc = tf_config_parse(cases[i].json, &c, err, sizeof err);
        int want_ok = !*cases[i].want1;
        if (want_ok) {
            CHECK_MSG(rc == 0, "case %zu (%s): %s", i, cases[i].json, err);
            tf_config_clear(&c);
            continue;
        }
        errors++;
        CHECK_MSG(rc == TN_EINVAL, "case %zu (%s): rc %d", i, cases[i].json, rc);
        CHECK_MSG(strstr(err, "TF_CONFIG") != NULL, "case %zu: '%s'", i, err);
        CHECK_MSG(strstr(err, cases[i].want1) != NULL, "case %zu (%s): '%s' lacks '%s'", i,
                  cases[i].json, err, cases[i].want1);
        CHECK_MSG(strstr(err, cases[i].want2) != NULL, "case %zu (%s): '%s' lacks '%s'", i,
                  cases[i].json, err, cases[i].want2);
        /* A failed parse leaves nothing to free. */
        CHECK_MSG(c.cluster[TF_CHIEF].n == 0 && c.cluster[TF_WORKER].n == 0 &&
                  c.cluster[TF_PS].n == 0 && c.trial == NULL && c.job == NULL &&
                  c.environment == NULL && c.cluster[TF_WORKER].addr == NULL,
                  "case %zu: out not cleared", i);
    }
    CHECK(errors >= 15);
    /* A NULL error buffer is fine. */
    tf_config c;
    CHECK_INT_EQ(tf_config_parse("{}", &c, NULL, 0), TN_EINVAL);
}

/* ---------------------------------------------------------------------------------
 * Addresses
 * --------------------------------------------------------------------------------- */

static void test_split_address(void) {
    const struct {
        const char *addr;
        const char *host; /* NULL: an error containing why */
        int port;
        const char *why;
    } cases[] = {
        {"localhost:2222", "localhost", 2222, NULL},
        {"10.1.2.3:1", "10.1.2.3", 1, NULL},
        {"h:65535", "h", 65535, NULL},
        {"[::1]:8080", "::1", 8080, NULL},
        {"[fe80::1%eth0]:80", "fe80::1%eth0", 80, NULL},
        {"h:00080", "h", 80, NULL},
        {"localhost", NULL, 0, "no :port"},
        {":80", NULL, 0, "host is empty"},
        {"[]:80", NULL, 0, "host is empty"},
        {"[::1:80", NULL, 0, "closing"},
        {"h:0", NULL, 0, "out of range"},
        {"h:100000", NULL, 0, "out of range"},
        {"h:-1", NULL, 0, "not a number"},
        {"h:+80", NULL, 0, "not a number"},
        {"h: 80", NULL, 0, "not a number"},
        {"h\t:80", NULL, 0, "space"},
        {"a/b:80", NULL, 0, "'/'"},
        {"fe80::1:80", NULL, 0, "brackets"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char host[64] = "", err[256] = "";
        int port = -7;
        int rc = tf_split_address(cases[i].addr, host, sizeof host, &port, err, sizeof err);
        if (cases[i].host) {
            CHECK_MSG(rc == 0, "%s: %s", cases[i].addr, err);
            CHECK_MSG(!strcmp(host, cases[i].host), "%s: host '%s'", cases[i].addr, host);
            CHECK_MSG(port == cases[i].port, "%s: port %d", cases[i].addr, port);
        } else {
            CHECK_MSG(rc == TN_EINVAL, "%s: rc %d", cases[i].addr, rc);
            CHECK_MSG(strstr(err, cases[i].why) && strstr(err, cases[i].addr),
                      "%s: '%s' lacks '%s'", cases[i].addr, err, cases[i].why);
        }
    }
    /* The host buffer too small is an error, not a truncation. */
    char small[4], err[256] = "";
    int port;
    CHECK_INT_EQ(tf_split_address("abcd:1", small, sizeof small, &port, err, sizeof err),
                 TN_EINVAL);
    CHECK_STR_CONTAINS(err, "longer than 3");
    CHECK_INT_EQ(tf_split_address("abc:1", small, sizeof small, &port, err, sizeof err), 0);
    CHECK(!strcmp(small, "abc"));
}

static void test_check_built_config(void) {
    /* The executor can check what it built before emitting it. */
    tf_config c;
    make_cluster(&c, 1, 2, 0, 0);
    tf_config_set_task(&c, TF_WORKER, 1, "1");
    char err[256] = "";
    CHECK_INT_EQ(tf_config_check(&c, err, sizeof err), 0);
    tf_config_set_task(&c, TF_WORKER, 2, "1");
    CHECK_INT_EQ(tf_config_check(&c, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "task.index 2");
    tf_config_set_task(&c, 9, 0, "1");
    CHECK_INT_EQ(tf_config_check(&c, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "task.type");
    tf_config_set_task(&c, TF_WORKER, -3, NULL);
    CHECK_INT_EQ(tf_config_check(&c, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "negative");
    tf_config_set_task(&c, TF_WORKER, 0, NULL);
    tf_config_add(&c, TF_PS, "nohost");
    CHECK_INT_EQ(tf_config_check(&c, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "cluster.ps[0]");
    tf_config_clear(&c);
}

/* ---------------------------------------------------------------------------------
 * The environment
 * --------------------------------------------------------------------------------- */

static void test_from_env(void) {
    saved_env e = env_set("TF_CONFIG", NULL);
    tf_config c;
    char err[256] = "";
    /* Unset: the single-replica default. */
    memset(&c, 0x5a, sizeof c); /* garbage: from_env must not read it */
    CHECK_INT_EQ(tf_config_from_env(&c, err, sizeof err), 0);
    CHECK_INT_EQ(c.type, TF_CHIEF);
    CHECK_INT_EQ(c.index, 0);
    CHECK_INT_EQ(c.master, 0);
    CHECK(c.cluster[TF_CHIEF].n == 0 && c.cluster[TF_WORKER].n == 0 && c.cluster[TF_PS].n == 0);
    CHECK(c.trial == NULL && c.job == NULL);
    CHECK(tf_is_chief(&c));
    CHECK_INT_EQ(tf_world_size(&c), 1);
    CHECK_INT_EQ(tf_rank(&c), 0);
    CHECK(tf_chief_address(&c) == NULL);
    tf_config_clear(&c);

    /* Empty: the same. */
    setenv("TF_CONFIG", "", 1);
    CHECK_INT_EQ(tf_config_from_env(&c, err, sizeof err), 0);
    CHECK_INT_EQ(c.type, TF_CHIEF);
    CHECK_INT_EQ(c.cluster[TF_WORKER].n, 0);
    tf_config_clear(&c);

    /* Set: parsed. */
    setenv("TF_CONFIG", "{\"cluster\":{\"chief\":[\"c:1\"],\"worker\":[\"w:2\",\"w:3\"]},"
                        "\"task\":{\"type\":\"worker\",\"index\":1,\"trial\":\"9\"},"
                        "\"job\":{\"scaleTier\":\"CUSTOM\"},\"environment\":\"cloud\"}", 1);
    int rc = tf_config_from_env(&c, err, sizeof err);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, err);
    CHECK_INT_EQ(c.type, TF_WORKER);
    CHECK_INT_EQ(c.index, 1);
    CHECK(str_eq(c.trial, "9"));
    CHECK(str_eq(json_string_value(json_object_get(c.job, "scaleTier")), "CUSTOM"));
    CHECK_INT_EQ(tf_rank(&c), 2);
    CHECK_INT_EQ(tf_world_size(&c), 3);
    tf_config_clear(&c);

    /* Set but malformed: the error, naming the field. */
    setenv("TF_CONFIG", "{\"task\":{\"type\":\"worker\",\"index\":-2}}", 1);
    CHECK_INT_EQ(tf_config_from_env(&c, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "task.index");
    setenv("TF_CONFIG", "not json", 1);
    CHECK_INT_EQ(tf_config_from_env(&c, err, sizeof err), TN_EINVAL);
    CHECK_STR_CONTAINS(err, "not JSON");
    env_restore(&e);
}

/* ---------------------------------------------------------------------------------
 * World size, rank, chief
 * --------------------------------------------------------------------------------- */

static void test_world_rank_chief_table(void) {
    const struct {
        int nchief, nworker, nps, master;
        int type, index;
        int world, rank, chief;
        const char *chief_addr; /* NULL: none */
    } cases[] = {
        /* single replica (no cluster) */
        {0, 0, 0, 0, TF_CHIEF, 0, 1, 0, 1, NULL},
        /* BASIC */
        {1, 0, 0, 0, TF_CHIEF, 0, 1, 0, 1, "localhost:2222"},
        /* STANDARD_1: chief + 4 workers + 3 ps */
        {1, 4, 3, 0, TF_CHIEF, 0, 5, 0, 1, "localhost:2222"},
        {1, 4, 3, 0, TF_WORKER, 0, 5, 1, 0, "localhost:2222"},
        {1, 4, 3, 0, TF_WORKER, 3, 5, 4, 0, "localhost:2222"},
        {1, 4, 3, 0, TF_PS, 0, 5, -1, 0, "localhost:2222"},
        {1, 4, 3, 0, TF_PS, 2, 5, -1, 0, "localhost:2222"},
        {1, 4, 3, 0, TF_EVALUATOR, 0, 5, -1, 0, "localhost:2222"},
        /* legacy master naming changes nothing here */
        {1, 4, 3, 1, TF_CHIEF, 0, 5, 0, 1, "localhost:2222"},
        {1, 4, 3, 1, TF_WORKER, 2, 5, 3, 0, "localhost:2222"},
        /* no chief: worker 0 acts as the chief, as in TensorFlow */
        {0, 3, 0, 0, TF_WORKER, 0, 3, 0, 1, "10.0.0.1:2222"},
        {0, 3, 0, 0, TF_WORKER, 2, 3, 2, 0, "10.0.0.1:2222"},
        {0, 3, 2, 0, TF_PS, 1, 3, -1, 0, "10.0.0.1:2222"},
        /* (only ps listed, nobody to train: refused, test_malformed) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tf_config c;
        make_cluster(&c, cases[i].nchief, cases[i].nworker, cases[i].nps, cases[i].master);
        tf_config_set_task(&c, cases[i].type, cases[i].index, "1");
        char err[256] = "";
        CHECK_MSG(tf_config_check(&c, err, sizeof err) == 0, "case %zu: %s", i, err);
        CHECK_MSG(tf_world_size(&c) == cases[i].world, "case %zu: world %d, want %d", i,
                  tf_world_size(&c), cases[i].world);
        CHECK_MSG(tf_rank(&c) == cases[i].rank, "case %zu: rank %d, want %d", i, tf_rank(&c),
                  cases[i].rank);
        CHECK_MSG(tf_is_chief(&c) == cases[i].chief, "case %zu: is_chief %d", i,
                  tf_is_chief(&c));
        CHECK_MSG(str_eq(tf_chief_address(&c), cases[i].chief_addr), "case %zu: chief %s", i,
                  tf_chief_address(&c) ? tf_chief_address(&c) : "(null)");
        /* And the same after a trip through the text. */
        char *text = tf_config_emit(&c);
        tf_config back;
        int rc = tf_config_parse(text, &back, err, sizeof err);
        CHECK_MSG(rc == 0, "case %zu: %s: %s", i, text, err);
        if (rc == 0) {
            CHECK_MSG(tf_world_size(&back) == cases[i].world && tf_rank(&back) == cases[i].rank &&
                      tf_is_chief(&back) == cases[i].chief, "case %zu after parse", i);
        }
        tf_config_clear(&back);
        free(text);
        tf_config_clear(&c);
    }
    /* Ranks of a whole STANDARD_1 world are 0..4, each once. */
    tf_config c;
    make_cluster(&c, 1, 4, 3, 0);
    int seen[5] = {0};
    tf_config_set_task(&c, TF_CHIEF, 0, NULL);
    seen[tf_rank(&c)]++;
    for (int i = 0; i < 4; i++) {
        tf_config_set_task(&c, TF_WORKER, i, NULL);
        int r = tf_rank(&c);
        CHECK(r >= 0 && r < 5);
        if (r >= 0 && r < 5) seen[r]++;
    }
    for (int r = 0; r < 5; r++) CHECK_MSG(seen[r] == 1, "rank %d seen %d times", r, seen[r]);
    tf_config_clear(&c);
}

/* The one table of replica type names, both ways. */
static void test_type_names(void) {
    static const char *const names[TF_NTYPES] = {"chief", "worker", "ps", "evaluator"};
    for (int t = 0; t < TF_NTYPES; t++) {
        CHECK(!strcmp(tf_type_label(t, 0), names[t]));
        CHECK_INT_EQ(tf_type_parse(names[t]), t);
    }
    CHECK(!strcmp(tf_type_label(TF_CHIEF, 1), "master"));
    CHECK(!strcmp(tf_type_label(TF_WORKER, 1), "worker")); /* only the chief has two */
    CHECK_INT_EQ(tf_type_parse("master"), TF_CHIEF);
    CHECK(!strcmp(tf_type_label(-1, 0), "?") && !strcmp(tf_type_label(TF_NTYPES, 0), "?"));
    CHECK_INT_EQ(tf_type_parse("workers"), -1);
    CHECK_INT_EQ(tf_type_parse("Chief"), -1);
    CHECK_INT_EQ(tf_type_parse(""), -1);
}

/* tf_pick_local_ports: n distinct ports, below the kernel's ephemeral range where it
 * leaves room; with no file descriptor left, an error that says what to check. */
static void test_pick_local_ports(void) {
    int ports[6], lo = tf_ephemeral_port_low();
    char err[256] = "";
    CHECK(lo > 0 && lo <= 65535);
    CHECK_INT_EQ(tf_pick_local_ports(6, ports, err, sizeof err), 0);
    for (int i = 0; i < 6; i++) {
        for (int k = 0; k < i; k++) CHECK_MSG(ports[i] != ports[k], "port %d twice", ports[i]);
        if (lo - TF_PORTS_LOWEST >= 1000)
            CHECK_MSG(ports[i] >= TF_PORTS_LOWEST && ports[i] < lo, "port %d not in [%d, %d)",
                      ports[i], TF_PORTS_LOWEST, lo);
    }
    struct rlimit keep, none = {0, 0};
    CHECK(getrlimit(RLIMIT_NOFILE, &keep) == 0);
    none.rlim_max = keep.rlim_max;
    CHECK(setrlimit(RLIMIT_NOFILE, &none) == 0); /* no socket can be made */
    int rc = tf_pick_local_ports(2, ports, err, sizeof err);
    CHECK(setrlimit(RLIMIT_NOFILE, &keep) == 0);
    CHECK_INT_EQ(rc, TN_EIO);
    CHECK_STR_CONTAINS(err, "cannot pick a free port on 127.0.0.1");
    CHECK_STR_CONTAINS(err, "ulimit -n");
}

int main(void) {
    RUN(test_type_names);
    RUN(test_emit_exact_text);
    RUN(test_round_trip_basic);
    RUN(test_round_trip_standard_1);
    RUN(test_evaluator_task);
    RUN(test_master_naming);
    RUN(test_lenient_parts);
    RUN(test_malformed);
    RUN(test_split_address);
    RUN(test_check_built_config);
    RUN(test_from_env);
    RUN(test_world_rank_chief_table);
    RUN(test_pick_local_ports);
    return check_summary();
}
