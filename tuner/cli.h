/*
 * cli.h — the one command-line scaffold of every `tuner` command (main.c's run,
 * resume, create, validate, ask, tell, serve; query.c's list, show, trials, best,
 * logs, cancel): a command's definition (synopsis, paragraph, positional arguments),
 * parsing its flags and arguments with common/flags.h, --help in one layout, and the
 * error lines every command prints: "tuner: error: MESSAGE" and, when a fix is known,
 * "hint: HINT" (docs/cli.md).
 */
#ifndef TN_TUNER_CLI_H
#define TN_TUNER_CLI_H

#include <stddef.h>

#include "common/flags.h"

#define CLI_NFLAGS(table) (sizeof(table) / sizeof((table)[0]))
#define CLI_MAX_POSITIONAL 3
#define CLI_CONTINUE (-1) /* "no exit code yet: go on" */

/* What a command's --help shows, and the positional arguments it takes. */
typedef struct cli_command {
    const char *name;                    /* "trials" */
    const char *synopsis;                /* after "usage: tuner " */
    const char *about;                   /* a paragraph */
    const char *pos[CLI_MAX_POSITIONAL]; /* names of the positional arguments, in order
                                            (those that must be there, at least) */
    int npos;                            /* how many there must be */
    int more;                            /* how many more may follow */
} cli_command;

/* Prints "tuner: error: MESSAGE" and, when hint is not NULL, "hint: HINT"; returns
 * code, so that a command can end with `return cli_fail(...)`. */
int cli_fail(int code, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A usage error of command `cmd` ("" for the global flags): the message, a hint
 * pointing at its --help, and TUNER_EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses argv[0..argc) (argv[0] the command's name) by the flag table and checks the
 * positional arguments' count. pos has room for c->npos + c->more entries. Returns
 * CLI_CONTINUE with pos[i] the index in argv of positional argument i (-1 for an
 * optional one not given) and *npos (may be NULL)
 * how many were given; or the exit code to return: TUNER_EXIT_OK after printing
 * --help, TUNER_EXIT_USAGE after printing the error (an unknown flag, a bad value, a
 * missing or an extra argument). */
int cli_parse(const cli_command *c, const tn_flag *flags, size_t n, int argc, char **argv,
              int *pos, int *npos);

#endif
