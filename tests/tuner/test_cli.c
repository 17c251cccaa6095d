/*
 * test_cli.c — the command-line scaffold every `tuner` command uses (tuner/cli.h):
 * --help's layout, the error and hint lines, positional arguments (missing, extra,
 * optional, a negative number as a value), and that the flags reach their variables.
 * What the commands print is captured by pointing stdout and stderr at files.
 */
#include "tuner/cli.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/capture.h"
#include "tests/check.h"
#include "tuner/commands.h"

static const cli_command SHOW = {"show", "show STUDY [TRIAL] [--format=table|json|csv]",
                                 "Shows one study.\n", {"STUDY", "TRIAL"}, 1, 1};
static const cli_command TELL = {"tell", "tell STUDY TRIAL VALUE", "Records an outcome.",
                                 {"STUDY", "TRIAL", "VALUE"}, 3, 0};

/* Runs cli_parse on the words (a NULL-terminated list after the command's name). */
static int parse(const cli_command *c, const tn_flag *flags, size_t n, captured *out, int *pos,
                 int *npos, char **words) {
    char *argv[16] = {(char *)c->name};
    int argc = 1;
    while (words[argc - 1] && argc < 15) {
        argv[argc] = words[argc - 1];
        argc++;
    }
    capture_state cs = capture_begin();
    int rc = cli_parse(c, flags, n, argc, argv, pos, npos);
    capture_end(&cs, out);
    return rc;
}

static void test_help(void) {
    const char *format = "table";
    const tn_flag flags[] = {{"format", TN_FLAG_STRING, &format, "FORMAT", "table, json or csv"}};
    int pos[CLI_MAX_POSITIONAL];
    captured c;
    CHECK_INT_EQ(parse(&SHOW, flags, 1, &c, pos, NULL, (char *[]){"--help", NULL}),
                 TUNER_EXIT_OK);
    const char *head = "usage: tuner show STUDY [TRIAL] [--format=table|json|csv]\n\n"
                       "Shows one study.\n\nflags:\n";
    CHECK_MSG(!strncmp(c.out, head, strlen(head)), "%s", c.out);
    CHECK_STR_CONTAINS(c.out, "--format=FORMAT");
    CHECK_STR_CONTAINS(c.out, "--db=PATH");
    CHECK(c.err[0] == '\0');
    /* a paragraph without a final newline gets one blank line before the flags too */
    CHECK_INT_EQ(parse(&TELL, NULL, 0, &c, pos, NULL, (char *[]){"-h", NULL}), TUNER_EXIT_OK);
    CHECK_STR_CONTAINS(c.out, "Records an outcome.\n\nflags:\n  --db=PATH");
}

static void test_errors(void) {
    const char *format = "table";
    const tn_flag flags[] = {{"format", TN_FLAG_STRING, &format, "FORMAT", "table, json or csv"}};
    int pos[CLI_MAX_POSITIONAL], npos = -1;
    captured c;
    CHECK_INT_EQ(parse(&SHOW, flags, 1, &c, pos, &npos, (char *[]){"s", "--fomat=json", NULL}),
                 TUNER_EXIT_USAGE);
    CHECK_STR_CONTAINS(c.err, "tuner: error: unknown flag --fomat");
    CHECK_STR_CONTAINS(c.err, "did you mean --format?");
    CHECK_STR_CONTAINS(c.err, "hint: run 'tuner show --help'\n");
    CHECK(c.out[0] == '\0');
    CHECK_INT_EQ(parse(&SHOW, flags, 1, &c, pos, &npos, (char *[]){"--format=csv", NULL}),
                 TUNER_EXIT_USAGE);
    CHECK_STR_CONTAINS(c.err,
                       "missing argument STUDY (usage: tuner show STUDY [TRIAL] "
                       "[--format=table|json|csv])");
    CHECK_INT_EQ(npos, 0);
    CHECK_INT_EQ(parse(&SHOW, flags, 1, &c, pos, &npos, (char *[]){"s", "2", "3", NULL}),
                 TUNER_EXIT_USAGE);
    CHECK_STR_CONTAINS(c.err, "tuner: error:");
    CHECK_STR_CONTAINS(c.err, "'3'");
    capture_state cs = capture_begin();
    int rc = cli_usage("", "--db needs a value (%s)", "--db=PATH");
    int rc2 = cli_fail(TUNER_EXIT_NOT_FOUND, NULL, "no study %s", "x");
    int rc3 = cli_fail(TUNER_EXIT_ERROR, "check the disk", "cannot write %d bytes", 7);
    capture_end(&cs, &c);
    CHECK(rc == TUNER_EXIT_USAGE && rc2 == TUNER_EXIT_NOT_FOUND && rc3 == TUNER_EXIT_ERROR);
    CHECK_MSG(!strcmp(c.err, "tuner: error: --db needs a value (--db=PATH)\n"
                             "hint: run 'tuner --help'\n"
                             "tuner: error: no study x\n"
                             "tuner: error: cannot write 7 bytes\nhint: check the disk\n"),
              "%s", c.err);
}

static void test_positional(void) {
    const char *format = "table";
    const tn_flag flags[] = {{"format", TN_FLAG_STRING, &format, "FORMAT", "table, json or csv"}};
    int pos[CLI_MAX_POSITIONAL], npos = -1;
    captured c;
    char *one[] = {"study1", "--format", "json", NULL};
    CHECK_INT_EQ(parse(&SHOW, flags, 1, &c, pos, &npos, one), CLI_CONTINUE);
    CHECK(npos == 1 && pos[0] == 1 && pos[1] == -1); /* the optional TRIAL not given */
    CHECK(!strcmp(format, "json"));
    CHECK(c.out[0] == '\0' && c.err[0] == '\0');
    char *two[] = {"--format=csv", "study1", "7", NULL};
    CHECK_INT_EQ(parse(&SHOW, flags, 1, &c, pos, &npos, two), CLI_CONTINUE);
    CHECK(npos == 2 && pos[0] == 2 && pos[1] == 3 && !strcmp(format, "csv"));
    /* a negative number is a value, not a flag */
    char *tell[] = {"s", "9", "-0.7", NULL};
    CHECK_INT_EQ(parse(&TELL, NULL, 0, &c, pos, &npos, tell), CLI_CONTINUE);
    CHECK(npos == 3 && pos[2] == 3);
}

int main(void) {
    RUN(test_help);
    RUN(test_errors);
    RUN(test_positional);
    return check_summary();
}
