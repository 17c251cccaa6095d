/*
 * test_params.c — a trial's parameters in their three forms (tuner/params.h): the
 * doubles the samplers use, the JSON the store and the API show, and the flags a
 * replica gets. Covered: every type round trips (integers without a fraction,
 * categories as strings, doubles in shortest round-trip form), a value given as a
 * string (as `tell` may), and every way a JSON object can be wrong, each message
 * naming the parameter.
 */
#include "tuner/params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "tests/check.h"

/* lr DOUBLE [1e-4, 1] log, layers INTEGER [1, 8], batch DISCRETE {32, 64, 128},
 * opt CATEGORICAL {sgd, adam}. */
static void make_space(sp_space *s) {
    memset(s, 0, sizeof *s);
    sp_param lr = {.name = "lr", .type = SP_DOUBLE, .scale = SP_LOG, .min = 1e-4, .max = 1};
    sp_param layers = {.name = "layers", .type = SP_INTEGER, .scale = SP_LINEAR, .min = 1,
                       .max = 8};
    double batches[] = {32, 64, 128};
    sp_param batch = {.name = "batch", .type = SP_DISCRETE, .values = batches, .nvalues = 3};
    char *opts[] = {"sgd", "adam"};
    sp_param opt = {.name = "opt", .type = SP_CATEGORICAL, .categories = opts,
                    .ncategories = 2};
    sp_space_add(s, &lr);
    sp_space_add(s, &layers);
    sp_space_add(s, &batch);
    sp_space_add(s, &opt);
}

static void test_round_trip(void) {
    sp_space s;
    make_space(&s);
    const double v[4] = {0.1 + 0.2, 3, 64, 1};
    char *json = tp_to_json(&s, v);
    CHECK_MSG(json && !strcmp(json, "{\"lr\":0.30000000000000004,\"layers\":3,\"batch\":64,"
                                    "\"opt\":\"adam\"}"),
              "%s", json ? json : "(null)");
    double back[4];
    char err[256] = "";
    CHECK_INT_EQ(tp_from_json(&s, json, back, err, sizeof err), 0);
    for (int i = 0; i < 4; i++) CHECK(back[i] == v[i]);
    char *argv[4];
    size_t argc = 0;
    tp_append_flags(&s, v, argv, &argc);
    CHECK_INT_EQ(argc, 4);
    if (argc == 4) {
        CHECK(!strcmp(argv[0], "--lr=0.30000000000000004"));
        CHECK(!strcmp(argv[1], "--layers=3"));
        CHECK(!strcmp(argv[2], "--batch=64"));
        CHECK(!strcmp(argv[3], "--opt=adam"));
    }
    for (size_t i = 0; i < argc; i++) free(argv[i]);
    free(json);
    /* values as strings, as `tuner tell` or a user may write them */
    CHECK_INT_EQ(tp_from_json(&s, "{\"lr\": \"0.5\", \"layers\": \"8\", \"batch\": \"128\", "
                                  "\"opt\": \"sgd\"}",
                              back, err, sizeof err),
                 0);
    CHECK(back[0] == 0.5 && back[1] == 8 && back[2] == 128 && back[3] == 0);
    sp_space_clear(&s);
}

static void test_errors(void) {
    sp_space s;
    make_space(&s);
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"[1, 2]", "parameters must be a JSON object"},
        {"{\"lr\": ", "parameters must be a JSON object: "},
        {"{\"lr\": 0.5, \"layers\": 2, \"batch\": 64, \"opt\": \"sgd\", \"momentum\": 0.9}",
         "'momentum' is not a parameter of this study"},
        {"{\"lr\": 0.5, \"batch\": 64, \"opt\": \"sgd\"}", "parameter 'layers' is missing"},
        {"{\"lr\": 2, \"layers\": 2, \"batch\": 64, \"opt\": \"sgd\"}",
         "parameter 'lr': not a legal value"},
        {"{\"lr\": 0.5, \"layers\": 2.5, \"batch\": 64, \"opt\": \"sgd\"}",
         "parameter 'layers': not a legal value"},
        {"{\"lr\": 0.5, \"layers\": 2, \"batch\": 65, \"opt\": \"sgd\"}",
         "parameter 'batch': not a legal value"},
        {"{\"lr\": 0.5, \"layers\": 2, \"batch\": 64, \"opt\": \"rmsprop\"}",
         "parameter 'opt': not a legal value"},
        {"{\"lr\": 0.5, \"layers\": 2, \"batch\": 64, \"opt\": 1}",
         "parameter 'opt': not a legal value"}, /* a category by name, not index */
        {"{\"lr\": true, \"layers\": 2, \"batch\": 64, \"opt\": \"sgd\"}",
         "parameter 'lr': not a legal value"},
        {"{\"lr\": null, \"layers\": 2, \"batch\": 64, \"opt\": \"sgd\"}",
         "parameter 'lr' is missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double v[4];
        char err[256] = "";
        CHECK_INT_EQ(tp_from_json(&s, cases[i].json, v, err, sizeof err), TN_EINVAL);
        CHECK_MSG(strstr(err, cases[i].want) != NULL, "case %zu: %s, want %s", i, err,
                  cases[i].want);
    }
    sp_space_clear(&s);
}

int main(void) {
    RUN(test_round_trip);
    RUN(test_errors);
    return check_summary();
}
