/*
 * fuzz_api.c — libFuzzer harness for the dashboard's URL router and the other pure
 * parsers of tuner/api.h: the input is a request path (and, as it is, a Last-Event-ID,
 * a query value, and bytes for the UTF-8 cleaner and the JSON string writer).
 *
 * Besides "no crash, no leak, no undefined behaviour" it checks api.h's promises:
 * api_route_parse gives a known route whose study, trial and replica pass the
 * validators (a traversal never reaches a handler); api_cursor_parse and api_parse_int
 * read back what they accept; tn_utf8_clean is idempotent, and tn_buf_json_string
 * writes a JSON string without '<', '>' or '&' that decodes to the cleaned bytes.
 * Seeds: corpus/api (the dashboard's URLs, good and bad). docs/fuzzing.md.
 */
#include "tests/fuzz/fuzz_util.h"

#include <inttypes.h>
#include <jansson.h>

#include "common/jsonutil.h"
#include "tuner/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void route(const char *path) {
    api_route r;
    int id = api_route_parse(path, &r);
    FUZZ_CHECK(id == r.id && id >= API_NOT_FOUND && id <= API_EVENTS);
    FUZZ_CHECK(memchr(r.why, '\0', sizeof r.why) != NULL);
    switch (id) {
    case API_STATIC:
        FUZZ_CHECK(r.asset[0] != '\0' && r.asset[0] != '.' && !strchr(r.asset, '/'));
        break;
    case API_LOG:
        FUZZ_CHECK(api_valid_replica(r.replica));
        /* fall through */
    case API_TRIAL:
        FUZZ_CHECK(r.trial[0] != '\0' && strspn(r.trial, "0123456789") == strlen(r.trial));
        /* fall through */
    case API_STUDY:
    case API_TRIALS:
    case API_CURVES:
    case API_CANCEL:
        FUZZ_CHECK(api_valid_study_ref(r.study));
        break;
    default:
        break;
    }
    if (id >= API_STATIC) FUZZ_CHECK(api_route_allow(id) != NULL);
}

static void cursor_and_int(const char *text) {
    api_cursor cur;
    if (api_cursor_parse(text, &cur) == 0) {
        char again[64];
        api_cursor back;
        FUZZ_CHECK(cur.trials >= 0 && cur.measurements >= 0);
        snprintf(again, sizeof again, "%" PRId64 ".%" PRId64, cur.trials, cur.measurements);
        FUZZ_CHECK(api_cursor_parse(again, &back) == 0);
        FUZZ_CHECK(back.trials == cur.trials && back.measurements == cur.measurements);
    }
    int64_t v = -1;
    if (api_parse_int(text, 0, 1000, &v) == 0) FUZZ_CHECK(v >= 0 && v <= 1000);
}

static void utf8_json(const uint8_t *data, size_t size) {
    size_t n = 0, n2 = 0;
    char *clean = tn_utf8_clean((const char *)data, size, &n);
    char *twice = tn_utf8_clean(clean, n, &n2);
    FUZZ_CHECK(n2 == n && memcmp(clean, twice, n) == 0);
    tn_buf b = {0};
    tn_json_write_string(&b, clean, n, TN_JSON_HTML_SAFE);
    FUZZ_CHECK(b.len >= 2 && memchr(b.data, '<', b.len) == NULL &&
               memchr(b.data, '>', b.len) == NULL && memchr(b.data, '&', b.len) == NULL);
    json_error_t e;
    json_t *j = json_loadb(b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!j) fprintf(stderr, "tn_buf_json_string wrote %s: %s\n", b.data, e.text);
    FUZZ_CHECK(j != NULL && json_is_string(j));
    FUZZ_CHECK(json_string_length(j) == n && memcmp(json_string_value(j), clean, n) == 0);
    json_decref(j);
    tn_buf_clear(&b);
    free(clean);
    free(twice);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    route(text);
    cursor_and_int(text);
    utf8_json(data, size);
    free(text);
    return 0;
}
