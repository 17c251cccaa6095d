/*
 * cli.c — the command-line scaffold of the `tuner` commands (see cli.h).
 */
#include "tuner/cli.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "common/text.h"
#include "tuner/commands.h"

/* Prints fmt's text to stderr fit for a terminal (it may quote a path, a spec's string
 * or a trial's log). */
static void say_clean(const char *fmt, va_list ap) {
    char *text = tn_xvasprintf(fmt, ap);
    tn_fputs_term(text, stderr);
    free(text);
}

int cli_fail(int code, const char *hint, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tuner: error: ", stderr);
    say_clean(fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (hint) {
        fputs("hint: ", stderr);
        tn_fputs_term(hint, stderr);
        fputc('\n', stderr);
    }
    return code;
}

int cli_usage(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tuner: error: ", stderr);
    say_clean(fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nhint: run 'tuner %s%s--help'\n", cmd, *cmd ? " " : "");
    return TUNER_EXIT_USAGE;
}

/* usage, the paragraph, the flags and the global --db. */
static void print_help(const cli_command *c, const tn_flag *flags, size_t n) {
    size_t len = strlen(c->about);
    printf("usage: tuner %s\n\n%s%s\nflags:\n", c->synopsis, c->about,
           len && c->about[len - 1] == '\n' ? "" : "\n");
    if (n) tn_flags_help(stdout, flags, n, '-'); /* as the docs spell them: --job-id */
    printf("  --db=PATH                  the store (default: $TUNER_DB or tuner.db)\n");
}

int cli_parse(const cli_command *c, const tn_flag *flags, size_t n, int argc, char **argv,
              int *pos, int *npos) {
    char err[512];
    int given = 0, help;
    int max = c->npos + c->more;
    for (int i = 0; i < max; i++) pos[i] = -1;
    int rc = tn_flags_parse(flags, n, argc, argv, pos, max, &given, &help, err, sizeof err);
    if (npos) *npos = given;
    if (!rc && help) {
        print_help(c, flags, n);
        return TUNER_EXIT_OK;
    }
    if (rc) { /* flags as --help and the docs spell them: --job-id, not --job_id */
        for (char *f = strstr(err, "--"); f; f = strstr(f + 2, "--"))
            for (char *q = f + 2; *q && (isalnum((unsigned char)*q) || *q == '_'); q++)
                if (*q == '_') *q = '-';
        return cli_usage(c->name, "%s", err);
    }
    if (given < c->npos)
        return cli_usage(c->name, "missing argument %s (usage: tuner %s)", c->pos[given],
                         c->synopsis);
    return CLI_CONTINUE;
}
