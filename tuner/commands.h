/*
 * commands.h — the `tuner` subcommands. main.c parses the global flags and dispatches;
 * each command parses its own flags (common/flags.h) from argv[0..argc) where argv[0]
 * is the command's name, prints `tuner: error: ...` (plus a `hint:` line when a fix is
 * known) on failure, and returns the process exit code (docs/cli.md, "Exit codes").
 */
#ifndef TN_TUNER_COMMANDS_H
#define TN_TUNER_COMMANDS_H

/* Exit codes. */
#define TUNER_EXIT_OK 0
#define TUNER_EXIT_ERROR 1        /* runtime error: store, disk, a replica could not start */
#define TUNER_EXIT_USAGE 2        /* bad command line or invalid spec */
#define TUNER_EXIT_FAILED 3       /* the study failed (maxFailedTrials) */
#define TUNER_EXIT_NOT_FOUND 4    /* no such study or trial */
#define TUNER_EXIT_EXHAUSTED 5    /* ask: the study has no trials left to give */
#define TUNER_EXIT_INTERRUPTED 130

typedef struct cli_env {
    const char *db;        /* the store: --db, $TUNER_DB, or "tuner.db" */
    const char *self_dir;  /* folder of the tuner binary */
} cli_env;

/* Output formats of the read commands: --format=table|json|csv. */
enum cli_format { CLI_TABLE = 1, CLI_JSON, CLI_CSV };

int cmd_run(int argc, char **argv, const cli_env *env);
int cmd_resume(int argc, char **argv, const cli_env *env);
int cmd_create(int argc, char **argv, const cli_env *env);
int cmd_validate(int argc, char **argv, const cli_env *env);
int cmd_ask(int argc, char **argv, const cli_env *env);
int cmd_tell(int argc, char **argv, const cli_env *env);

/* tuner/query.c */
int cmd_list(int argc, char **argv, const cli_env *env);
int cmd_show(int argc, char **argv, const cli_env *env);
int cmd_trials(int argc, char **argv, const cli_env *env);
int cmd_best(int argc, char **argv, const cli_env *env);
int cmd_logs(int argc, char **argv, const cli_env *env);
int cmd_cancel(int argc, char **argv, const cli_env *env);

#endif
