/*
 * test_flags.c — tests for common/flags.c: every flag type in both the --name=value
 * and --name value forms, dashes for underscores, the bare boolean, every way a value
 * can be bad, unknown flags with and without a "did you mean", single-dash options,
 * positional arguments and "--", --help / -h, tn_flags_given, and the --help text.
 *
 * Each case parses into a fresh set of variables (reset_vars) so that one case's
 * values never leak into the next.
 */
#include "common/flags.h"

#include "common/status.h"
#include "tests/check.h"
#include "tests/testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The variables the table below fills, with their defaults. */
static int v_verbose;
static int v_batch;
static int64_t v_steps;
static double v_lr;
static const char *v_dir;

static void reset_vars(void) {
    v_verbose = 0;
    v_batch = 32;
    v_steps = 1000;
    v_lr = 0.01;
    v_dir = "/tmp/job";
}

static const tn_flag table[] = {
    {"verbose", TN_FLAG_BOOL, &v_verbose, NULL, "print more"},
    {"batch_size", TN_FLAG_INT, &v_batch, "N", "examples per step"},
    {"max_steps", TN_FLAG_INT64, &v_steps, "STEPS", "stop after this many steps"},
    {"learning_rate", TN_FLAG_DOUBLE, &v_lr, "RATE", "peak learning rate"},
    {"job_dir", TN_FLAG_STRING, &v_dir, "DIR", "where checkpoints go"},
};
#define NFLAGS (sizeof table / sizeof table[0])

#define MAX_ARGS 16
#define MAX_POS 2

/* The result of one parse. */
typedef struct parsed {
    int rc;
    int help; /* --help or -h appeared */
    char err[256];
    int pos[MAX_POS + 1];
    int npos;
} parsed;

/* Parses the NULL-terminated arguments (argv[0] is added) into fresh variables,
 * allowing MAX_POS positional arguments. */
static parsed parse_list(const char *const *args) {
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = (char *)"prog";
    for (; *args; args++) argv[argc++] = (char *)*args;
    argv[argc] = NULL;
    reset_vars();
    parsed p;
    memset(&p, 0, sizeof p);
    p.npos = -1;
    p.help = -1;
    p.rc = tn_flags_parse(table, NFLAGS, argc, argv, p.pos, MAX_POS, &p.npos, &p.help, p.err,
                          sizeof p.err);
    return p;
}

#define PARSE(...) parse_list((const char *const[]){__VA_ARGS__, NULL})

/* ---------------------------------------------------------------------------------
 * Accepted values, every type and both forms
 * --------------------------------------------------------------------------------- */

static void test_every_type_both_forms(void) {
    parsed p = PARSE("--batch_size=64", "--max_steps=5000000000", "--learning_rate=0.25",
                     "--job_dir=gs://bucket/job", "--verbose");
    CHECK_MSG(p.rc == 0, "rc %d: %s", p.rc, p.err);
    CHECK_INT_EQ(v_batch, 64);
    CHECK(v_steps == INT64_C(5000000000));
    CHECK(v_lr == 0.25);
    CHECK(v_dir && !strcmp(v_dir, "gs://bucket/job"));
    CHECK_INT_EQ(v_verbose, 1);
    CHECK_INT_EQ(p.npos, 0);

    p = PARSE("--batch_size", "7", "--max_steps", "-3", "--learning_rate", "-0.5",
              "--job_dir", "out");
    CHECK_MSG(p.rc == 0, "rc %d: %s", p.rc, p.err);
    CHECK_INT_EQ(v_batch, 7);
    CHECK(v_steps == -3);
    CHECK(v_lr == -0.5);
    CHECK(v_dir && !strcmp(v_dir, "out"));
    CHECK_INT_EQ(v_verbose, 0);
    CHECK_INT_EQ(p.npos, 0);

    /* Nothing given: defaults untouched. */
    p = PARSE("--");
    CHECK_INT_EQ(p.rc, 0);
    CHECK_INT_EQ(v_batch, 32);
    CHECK(v_lr == 0.01);
    CHECK(!strcmp(v_dir, "/tmp/job"));

    /* The last of repeated flags wins; the value after '=' may contain '='. */
    p = PARSE("--batch_size=1", "--batch_size=2", "--job_dir=a=b");
    CHECK_INT_EQ(p.rc, 0);
    CHECK_INT_EQ(v_batch, 2);
    CHECK(!strcmp(v_dir, "a=b"));

    /* An empty string is a valid string value. */
    p = PARSE("--job_dir=");
    CHECK_INT_EQ(p.rc, 0);
    CHECK(v_dir && !strcmp(v_dir, ""));
}

static void test_dashes_and_underscores(void) {
    parsed p = PARSE("--job-dir=x", "--batch-size", "9", "--learning_rate=0.5");
    CHECK_MSG(p.rc == 0, "rc %d: %s", p.rc, p.err);
    CHECK(!strcmp(v_dir, "x"));
    CHECK_INT_EQ(v_batch, 9);
    CHECK(v_lr == 0.5);
    p = PARSE("--max-steps=12", "--learning-rate", "1e-3");
    CHECK_MSG(p.rc == 0, "rc %d: %s", p.rc, p.err);
    CHECK(v_steps == 12);
    CHECK(v_lr == 1e-3);
}

static void test_bool_forms(void) {
    static const struct {
        const char *arg;
        int want;
    } cases[] = {
        {"--verbose", 1},        {"--verbose=true", 1}, {"--verbose=1", 1},
        {"--verbose=yes", 1},    {"--verbose=false", 0}, {"--verbose=0", 0},
        {"--verbose=no", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int start = 0; start <= 1; start++) {
            char *argv[] = {(char *)"prog", (char *)cases[i].arg, NULL};
            reset_vars();
            v_verbose = start;
            char err[128] = "";
            int help;
            int rc = tn_flags_parse(table, NFLAGS, 2, argv, NULL, 0, NULL, &help, err,
                                    sizeof err);
            CHECK_MSG(rc == 0, "%s: rc %d: %s", cases[i].arg, rc, err);
            CHECK_MSG(v_verbose == cases[i].want, "%s from %d gave %d", cases[i].arg, start,
                      v_verbose);
        }
    }
    /* The bare form takes no value: a following word is positional. */
    parsed p = PARSE("--verbose", "false");
    CHECK_INT_EQ(p.rc, 0);
    CHECK_INT_EQ(v_verbose, 1);
    CHECK_INT_EQ(p.npos, 1);
    CHECK_INT_EQ(p.pos[0], 2);
    /* A bare bool as the last argument is not "missing a value". */
    p = PARSE("--batch_size=3", "--verbose");
    CHECK_INT_EQ(p.rc, 0);
    CHECK_INT_EQ(v_verbose, 1);
}

/* ---------------------------------------------------------------------------------
 * Rejected values
 * --------------------------------------------------------------------------------- */

static void test_bad_values(void) {
    static const struct {
        const char *arg;
        const char *msg1, *msg2; /* both must be in the message */
    } cases[] = {
        {"--verbose=maybe", "--verbose", "maybe"},
        {"--verbose=", "--verbose", "true or false"},
        {"--verbose=TRUE1", "--verbose", "TRUE1"},
        {"--batch_size=2147483648", "--batch_size", "2147483648"},  /* INT_MAX + 1 */
        {"--batch_size=-2147483649", "--batch_size", "-2147483649"},
        {"--batch_size=99999999999999999999", "--batch_size", "integer"},
        {"--batch_size=abc", "--batch_size", "abc"},
        {"--batch_size=12x", "--batch_size", "12x"},
        {"--batch_size=1.5", "--batch_size", "integer"},
        {"--batch_size=", "--batch_size", "integer"},
        {"--max_steps=9223372036854775808", "--max_steps", "9223372036854775808"},
        {"--max_steps=-9223372036854775809", "--max_steps", "integer"},
        {"--max_steps=1e6", "--max_steps", "1e6"},
        {"--learning_rate=nan", "--learning_rate", "nan"},
        {"--learning_rate=NaN", "--learning_rate", "NaN"},
        {"--learning_rate=inf", "--learning_rate", "inf"},
        {"--learning_rate=-inf", "--learning_rate", "-inf"},
        {"--learning_rate=infinity", "--learning_rate", "number"},
        {"--learning_rate=1e999", "--learning_rate", "1e999"},
        {"--learning_rate=0.1x", "--learning_rate", "0.1x"},
        {"--learning_rate=", "--learning_rate", "number"},
        {"--learning_rate=fast", "--learning_rate", "fast"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parsed p = PARSE(cases[i].arg);
        CHECK_MSG(p.rc == TN_EINVAL, "%s: rc %d", cases[i].arg, p.rc);
        CHECK_STR_CONTAINS(p.err, cases[i].msg1);
        CHECK_STR_CONTAINS(p.err, cases[i].msg2);
    }
    /* The same values in the space form are rejected too. */
    parsed p = PARSE("--batch_size", "12x");
    CHECK_INT_EQ(p.rc, TN_EINVAL);
    CHECK_STR_CONTAINS(p.err, "--batch_size");
    p = PARSE("--learning_rate", "inf");
    CHECK_INT_EQ(p.rc, TN_EINVAL);
    CHECK_STR_CONTAINS(p.err, "--learning_rate");
}

static void test_integer_limits_accepted(void) {
    parsed p = PARSE("--batch_size=2147483647", "--max_steps=9223372036854775807");
    CHECK_MSG(p.rc == 0, "rc %d: %s", p.rc, p.err);
    CHECK_INT_EQ(v_batch, 2147483647);
    CHECK(v_steps == INT64_MAX);
    p = PARSE("--batch_size=-2147483648", "--max_steps=-9223372036854775808");
    CHECK_MSG(p.rc == 0, "rc %d: %s", p.rc, p.err);
    CHECK_INT_EQ(v_batch, -2147483647 - 1);
    CHECK(v_steps == INT64_MIN);
}

static void test_missing_value_at_end(void) {
    const char *names[] = {"--batch_size", "--max_steps", "--learning_rate", "--job_dir",
                           "--job-dir"};
    const char *want[] = {"--batch_size", "--max_steps", "--learning_rate", "--job_dir",
                          "--job_dir"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        parsed p = PARSE("--verbose", names[i]);
        CHECK_MSG(p.rc == TN_EINVAL, "%s: rc %d", names[i], p.rc);
        CHECK_STR_CONTAINS(p.err, "needs a value");
        CHECK_STR_CONTAINS(p.err, want[i]);
    }
    parsed p = PARSE("--batch_size");
    CHECK_STR_CONTAINS(p.err, "--batch_size=N"); /* shows the placeholder */
    /* The next word a flag: not taken as the value ("--job_dir --verbose" made a folder
     * named --verbose and lost the flag); a value that starts with -- goes after '='. */
    p = PARSE("--job_dir", "--verbose");
    CHECK_MSG(p.rc == TN_EINVAL, "rc %d", p.rc);
    CHECK_STR_CONTAINS(p.err, "--job_dir needs a value");
    p = PARSE("--job_dir=--odd", "--verbose");
    CHECK_MSG(p.rc == 0 && v_dir && !strcmp(v_dir, "--odd") && v_verbose, "rc %d: %s", p.rc, p.err);
    p = PARSE("--learning_rate", "-0.5"); /* one dash: a value */
    CHECK_MSG(p.rc == 0 && v_lr == -0.5, "rc %d: %s", p.rc, p.err);
}

/* ---------------------------------------------------------------------------------
 * Unknown flags and options
 * --------------------------------------------------------------------------------- */

static void test_unknown_flag_did_you_mean(void) {
    const char *args[] = {"--learnig_rate=0.1", "--learnig_rate", "--learnig-rate=0.1",
                          "--learning_rat=1"};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
        parsed p = PARSE(args[i]);
        CHECK_MSG(p.rc == TN_EINVAL, "%s: rc %d", args[i], p.rc);
        CHECK_STR_CONTAINS(p.err, "unknown flag");
        CHECK_STR_CONTAINS(p.err, "did you mean --learning_rate?");
        CHECK(v_lr == 0.01);
    }
    parsed p = PARSE("--learnig_rate=0.1");
    CHECK_STR_CONTAINS(p.err, "--learnig_rate");
    CHECK(!strstr(p.err, "=0.1"));
    p = PARSE("--bach_size", "4");
    CHECK_STR_CONTAINS(p.err, "did you mean --batch_size?");
}

static void test_unknown_flag_without_suggestion(void) {
    parsed p = PARSE("--zzzzzzzz=1");
    CHECK_INT_EQ(p.rc, TN_EINVAL);
    CHECK_STR_CONTAINS(p.err, "unknown flag --zzzzzzzz");
    CHECK_MSG(!strstr(p.err, "did you mean"), "suggested something: %s", p.err);
    p = PARSE("--temperature");
    CHECK_INT_EQ(p.rc, TN_EINVAL);
    CHECK(!strstr(p.err, "did you mean"));
}

static void test_single_dash_rejected(void) {
    const char *args[] = {"-v", "-batch_size=3", "-x"};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
        parsed p = PARSE(args[i]);
        CHECK_MSG(p.rc == TN_EINVAL, "%s: rc %d", args[i], p.rc);
        CHECK_STR_CONTAINS(p.err, args[i]);
        CHECK_STR_CONTAINS(p.err, "--");
        CHECK_INT_EQ(p.npos, 0);
    }
    /* A lone "-" (stdin, by convention) is positional. */
    parsed p = PARSE("-");
    CHECK_INT_EQ(p.rc, 0);
    CHECK_INT_EQ(p.npos, 1);
}

/* ---------------------------------------------------------------------------------
 * Positional arguments, "--", --help
 * --------------------------------------------------------------------------------- */

static void test_positional(void) {
    parsed p = PARSE("train.csv", "--batch_size=3", "eval.csv");
    CHECK_MSG(p.rc == 0, "rc %d: %s", p.rc, p.err);
    CHECK_INT_EQ(p.npos, 2);
    CHECK_INT_EQ(p.pos[0], 1);
    CHECK_INT_EQ(p.pos[1], 3);
    CHECK_INT_EQ(v_batch, 3);

    p = PARSE("a", "b", "c");
    CHECK_INT_EQ(p.rc, TN_EINVAL);
    CHECK_STR_CONTAINS(p.err, "'c'");

    /* None allowed: positional and npositional NULL. */
    char *argv[] = {(char *)"prog", (char *)"stray", NULL};
    char err[128] = "";
    reset_vars();
    int help;
    CHECK_INT_EQ(tn_flags_parse(table, NFLAGS, 2, argv, NULL, 0, NULL, &help, err, sizeof err),
                 TN_EINVAL);
    CHECK_STR_CONTAINS(err, "stray");
    /* And with no arguments at all. */
    CHECK_INT_EQ(tn_flags_parse(table, NFLAGS, 1, argv, NULL, 0, NULL, &help, err, sizeof err),
                 0);
    CHECK_INT_EQ(help, 0);
}

/* A negative number is a value wherever it stands (`tuner tell s 9 -0.7`); only --name
 * is a flag, and "-1x" or "-e5" stay errors. */
static void test_negative_numbers_are_values(void) {
    const char *nums[] = {"-0.7", "-5", "-1e-3", "-.5", "-12.25e+2", "-inf", "-nan", "-INF"};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        parsed p = PARSE("a", nums[i]);
        CHECK_MSG(p.rc == 0 && p.npos == 2 && p.pos[1] == 2, "%s: rc %d npos %d (%s)", nums[i],
                  p.rc, p.npos, p.err);
    }
    parsed p = PARSE("--learning_rate", "-0.25");
    CHECK_MSG(p.rc == 0 && v_lr == -0.25, "rc %d lr %g (%s)", p.rc, v_lr, p.err);
    const char *bad[] = {"-1x", "-e5", "-.", "--5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = PARSE(bad[i]);
        CHECK_MSG(p.rc == TN_EINVAL, "%s: rc %d", bad[i], p.rc);
    }
}

/* A number flag is decimal: strtod's hexadecimal ("0x10" is 16) is refused. */
static void test_hex_refused(void) {
    const char *bad[] = {"--learning_rate=0x10", "--learning_rate=-0X1p3", "--learning_rate=+0x1",
                         "--learning_rate= 0x10", "--learning_rate=\t-0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        parsed p = PARSE(bad[i]);
        CHECK_MSG(p.rc == TN_EINVAL, "%s: rc %d", bad[i], p.rc);
        CHECK_STR_CONTAINS(p.err, "expects a number");
    }
    parsed p = PARSE("--learning_rate=0.5e-1");
    CHECK_MSG(p.rc == 0 && v_lr == 0.05, "rc %d: %s", p.rc, p.err);
}

static void test_double_dash_ends_flags(void) {
    parsed p = PARSE("--batch_size=5", "--", "--batch_size=6", "-x");
    CHECK_MSG(p.rc == 0, "rc %d: %s", p.rc, p.err);
    CHECK_INT_EQ(v_batch, 5);
    CHECK_INT_EQ(p.npos, 2);
    CHECK_INT_EQ(p.pos[0], 3);
    CHECK_INT_EQ(p.pos[1], 4);
    /* The "--" itself is not positional. */
    p = PARSE("--", "x");
    CHECK_INT_EQ(p.rc, 0);
    CHECK_INT_EQ(p.npos, 1);
    CHECK_INT_EQ(p.pos[0], 2);
}

/* --help is an outcome, not an error: 0 with help set. */
static void test_help(void) {
    parsed p = PARSE("--help");
    CHECK_INT_EQ(p.rc, 0);
    CHECK_INT_EQ(p.help, 1);
    p = PARSE("-h");
    CHECK_INT_EQ(p.rc, 0);
    CHECK_INT_EQ(p.help, 1);
    /* Nothing else is checked then: not even an unknown flag before it. */
    p = PARSE("--bogus=1", "--batch_size=x", "--help");
    CHECK_INT_EQ(p.rc, 0);
    CHECK_INT_EQ(p.help, 1);
    p = PARSE("a", "b", "c", "-h");
    CHECK_INT_EQ(p.rc, 0);
    CHECK_INT_EQ(p.help, 1);
    /* After "--" it is an ordinary positional argument. */
    p = PARSE("--", "--help");
    CHECK_INT_EQ(p.rc, 0);
    CHECK_INT_EQ(p.help, 0);
    CHECK_INT_EQ(p.npos, 1);
    /* An error is not help either. */
    p = PARSE("--bogus=1");
    CHECK_INT_EQ(p.rc, TN_EINVAL);
    CHECK_INT_EQ(p.help, 0);
}

static void test_given(void) {
    parsed p = PARSE("--job-dir=x", "--learning_rate", "0.5", "--verbose=false");
    CHECK_INT_EQ(p.rc, 0);
    CHECK(tn_flags_given(table, NFLAGS, "job_dir"));
    CHECK(tn_flags_given(table, NFLAGS, "learning_rate"));
    CHECK(tn_flags_given(table, NFLAGS, "verbose")); /* given, though false */
    CHECK(!tn_flags_given(table, NFLAGS, "batch_size"));
    CHECK(!tn_flags_given(table, NFLAGS, "max_steps"));

    /* A new parse forgets the last one. */
    p = PARSE("--batch_size=4");
    CHECK_INT_EQ(p.rc, 0);
    CHECK(tn_flags_given(table, NFLAGS, "batch_size"));
    CHECK(!tn_flags_given(table, NFLAGS, "job_dir"));
    CHECK(!tn_flags_given(table, NFLAGS, "verbose"));

    /* Another table is tracked by its own names, not by position. */
    int other_a = 0, other_b = 0;
    const tn_flag other[] = {{"epochs", TN_FLAG_INT, &other_a, "N", "x"},
                             {"seed", TN_FLAG_INT, &other_b, "N", "y"}};
    char *argv[] = {(char *)"prog", (char *)"--epochs=1", NULL};
    int help;
    CHECK_INT_EQ(tn_flags_parse(other, 2, 2, argv, NULL, 0, NULL, &help, NULL, 0), 0);
    CHECK_INT_EQ(other_a, 1);
    CHECK(tn_flags_given(other, 2, "epochs"));
    CHECK(!tn_flags_given(other, 2, "seed"));
}

/* ---------------------------------------------------------------------------------
 * --help text
 * --------------------------------------------------------------------------------- */

/* The line of text that contains needle (yours to free), or NULL. */
static char *line_with(const char *text, const char *needle) {
    const char *hit = strstr(text, needle);
    if (!hit) return NULL;
    const char *start = hit, *end = hit;
    while (start > text && start[-1] != '\n') start--;
    while (*end && *end != '\n') end++;
    char *line = calloc((size_t)(end - start) + 1, 1);
    memcpy(line, start, (size_t)(end - start));
    return line;
}

/* The --help text of the n flags (yours to free), or NULL (no temporary file). */
static char *help_text(const tn_flag *flags, size_t n) {
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f) return NULL;
    tn_flags_help(f, flags, n, '_');
    char *text = file_text(f);
    fclose(f);
    return text;
}

static void test_help_text(void) {
    reset_vars();
    v_verbose = 0;
    v_lr = 0.001;
    char *text = help_text(table, NFLAGS);
    if (!text) return;

    static const struct {
        const char *key, *in_line;
    } want[] = {
        {"--batch_size=N", "(default: 32)"},
        {"--batch_size=N", "examples per step"},
        {"--max_steps=STEPS", "(default: 1000)"},
        {"--learning_rate=RATE", "(default: 0.001)"},
        {"--learning_rate=RATE", "peak learning rate"},
        {"--job_dir=DIR", "(default: /tmp/job)"},
        {"--verbose", "print more"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char *line = line_with(text, want[i].key);
        CHECK_MSG(line != NULL, "no line for %s in:\n%s", want[i].key, text);
        if (line) CHECK_STR_CONTAINS(line, want[i].in_line);
        free(line);
    }
    char *line = line_with(text, "--verbose");
    CHECK(line && !strstr(line, "--verbose="));
    free(line);
    int lines = 0;
    for (const char *c = text; *c; c++) lines += *c == '\n';
    CHECK_INT_EQ(lines, (int)NFLAGS);
    free(text);

    /* Current values are the defaults shown. */
    v_verbose = 1;
    v_batch = 128;
    v_lr = 0.1;
    text = help_text(table, NFLAGS);
    if (!text) return;
    line = line_with(text, "--verbose");
    CHECK(line && strstr(line, "(default: true)"));
    free(line);
    CHECK_STR_CONTAINS(text, "(default: 128)");
    CHECK_STR_CONTAINS(text, "(default: 0.1)");
    free(text);
    /* a whole number reads as one, not in %g's exponent form ("6e+01") */
    v_lr = 60;
    text = help_text(table, NFLAGS);
    if (!text) return;
    CHECK_STR_CONTAINS(text, "(default: 60)");
    free(text);

    /* A flag without a placeholder shows VALUE. */
    const char *s = "x";
    const tn_flag bare[] = {{"name", TN_FLAG_STRING, &s, NULL, "a name"}};
    text = help_text(bare, 1);
    if (!text) return;
    CHECK_STR_CONTAINS(text, "--name=VALUE");
    free(text);
}

int main(void) {
    RUN(test_every_type_both_forms);
    RUN(test_dashes_and_underscores);
    RUN(test_bool_forms);
    RUN(test_bad_values);
    RUN(test_integer_limits_accepted);
    RUN(test_missing_value_at_end);
    RUN(test_unknown_flag_did_you_mean);
    RUN(test_unknown_flag_without_suggestion);
    RUN(test_single_dash_rejected);
    RUN(test_positional);
    RUN(test_negative_numbers_are_values);
    RUN(test_hex_refused);
    RUN(test_double_dash_ends_flags);
    RUN(test_help);
    RUN(test_given);
    RUN(test_help_text);
    return check_summary();
}
