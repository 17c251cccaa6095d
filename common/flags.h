/*
 * flags.h — table-driven command-line flags, as AI Platform passes them.
 *
 * A program describes its flags in a table; tn_flags_parse fills the variables the
 * table points to. Every flag is accepted as --name=value and as --name value, with
 * dashes and underscores interchangeable in the name (--job-dir = --job_dir).
 * Booleans also take the bare form --name (true). Unknown flags, missing or bad
 * values are errors whose message names the flag and, for a near-miss, the flag that
 * was probably meant. tn_flags_help prints the table with each current value as the
 * default. Used by trainer and tuner alike.
 */
#ifndef TN_FLAGS_H
#define TN_FLAGS_H

#include <stddef.h>
#include <stdio.h>

enum tn_flag_type { TN_FLAG_BOOL = 1, TN_FLAG_INT, TN_FLAG_INT64, TN_FLAG_DOUBLE, TN_FLAG_STRING };

typedef struct tn_flag {
    const char *name; /* without the leading "--", words joined by '_' */
    int type;         /* enum tn_flag_type */
    void *value;      /* int* (BOOL, INT), int64_t*, double*, or const char** (STRING,
                         pointing into argv after parsing) */
    const char *arg;  /* placeholder shown in --help ("N", "RATE"); NULL for BOOL */
    const char *help; /* one line */
} tn_flag;

/* Parses argv[1..argc-1]. Arguments that are not flags (and everything after a bare
 * "--") are positional, a negative number among them ("-0.7", "-1e-3": only --name is
 * a flag): their indices into argv are stored in positional[0..] (at
 * most max_positional; more is an error) and their count in *npositional (which may
 * be NULL when none are allowed). *help is set to 1 when --help or -h appears before
 * any "--" (nothing else is checked then: the caller prints its help), else to 0.
 * Returns 0 (help asked or not), or TN_EINVAL with a message such as
 * "unknown flag --learnig_rate (did you mean --learning_rate?)". */
int tn_flags_parse(const tn_flag *flags, size_t n, int argc, char **argv, int *positional,
                   int max_positional, int *npositional, int *help, char *err, size_t errlen);

/* The command line of a program that takes flags only (the benchmarks): tn_flags_parse
 * with no positional arguments; on --help, usage (a line; may be NULL) and the flags
 * are printed on stdout, on an error "PROGRAM: error: MESSAGE" and a hint to run
 * 'PROGRAM --help' on stderr. Returns 0 with *help set as tn_flags_parse sets it (the
 * program then exits 0), or TN_EINVAL (printed already). */
int tn_flags_program(const char *program, const char *usage, const tn_flag *flags, size_t n,
                     int argc, char **argv, int *help);

/* Prints one line per flag: "  --name=ARG  help (default: VALUE)", the words of a name
 * joined by joiner ('_' as the table has them, or '-'), and no "(default: VALUE)" after
 * a help that gives its own default. */
void tn_flags_help(FILE *out, const tn_flag *flags, size_t n, char joiner);

/* Whether the flag named name appeared on the command line at the most recent
 * tn_flags_parse call, which must have been given this table (0 otherwise, and for a
 * name not in the table). */
int tn_flags_given(const tn_flag *flags, size_t n, const char *name);

#endif
