#!/usr/bin/env bash
# tuner_cli.sh — end-to-end tests of the `tuner` command: studies of real processes.
#
#   tuner_cli.sh BIN_DIR WORKDIR      (BIN_DIR holds tuner and trainer)
#
# Each case prints "ok NAME" or "FAIL NAME: why"; the last line is "N passed, N
# failed"; the exit status is non-zero when anything failed.
set -u
. "$(dirname "$0")/../check.sh"  # ok, fail, check, check_summary
BIN=$1
WORK=$2
HERE=$(cd "$(dirname "$0")" && pwd)
TUNER="$BIN/tuner"
CHECK="$HERE/check_replica.py"
rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
cd "$WORK" || exit 1
# procs_in STUDY PATTERN: the processes whose command line matches PATTERN and that
# belong to a trial of STUDY here (their CLOUD_ML_HP_METRIC_FILE lies under its job
# dir), so that the same commands run by other tests on this machine never count.
procs_in() {
  local p
  for p in $(pgrep -f "$2"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
      grep -q "^CLOUD_ML_HP_METRIC_FILE=$WORK/runs/$1/" && echo "$p"
  done
}
export TUNER_DB="$WORK/tuner.db"

# spec NAME TIER EXTRA_TRAINING_INPUT MAX_TRIALS PARALLEL COMMAND_JSON [HP_EXTRA] [PARAMS]
spec() {
  local params=${8:-'{"parameterName": "x", "type": "DOUBLE", "minValue": -2, "maxValue": 2},
      {"parameterName": "n", "type": "INTEGER", "minValue": 1, "maxValue": 4}'}
  write_spec "$1" "" "$2" "$3" "runs/$1" "$6" "$4" "$5" RANDOM_SEARCH "${7:-}" "$params"
}

# --- --db with no value: refused, never the next flag taken as the path ---------------
for args in "list --db --format=json" "run good.json --db --quiet" "list --db=" "list --db"; do
  # shellcheck disable=SC2086
  err=$("$TUNER" $args 2>&1); rc=$?
  check "db_no_value_exit2_${args// /_}" test $rc -eq 2
  check "db_no_value_says_${args// /_}" grep -q -- "--db needs a value (--db=PATH)" <<<"$err"
done
check db_no_value_no_file test ! -e ./--format=json -a ! -e ./--quiet

# --- --help says the flags as the docs spell them, each default once ------------------
help=$("$TUNER" run --help)
check help_dashes grep -q -- "--job-id=ID" <<<"$help"
check help_dashes_bool grep -q -- "--dashboard-public " <<<"$help"
check help_no_underscores test -z "$(grep -o -- '--[a-z]*_[a-z_]*' <<<"$help")"
check help_one_default test -z "$(grep -- '(default: .*(default:' <<<"$help")"
help=$("$TUNER" resume --help)
check resume_help_no_seed test -z "$(grep -- '--seed' <<<"$help")"
err=$("$TUNER" resume some --seed=3 2>&1); rc=$?
check resume_seed_refused test $rc -eq 2
check resume_seed_says grep -q -- "--seed is fixed when a study is created" <<<"$err"
# the errors spell flags as --help does
err=$("$TUNER" run good.json --job-id 2>&1)
check flag_error_dashes grep -q -- "--job-id needs a value (--job-id=ID)" <<<"$err"
err=$("$TUNER" run good.json --dashbord-public 2>&1)
check flag_error_did_you_mean_dashes grep -q -- "did you mean --dashboard-public?" <<<"$err"

# --- validate ------------------------------------------------------------------
spec good BASIC "" 3 1 '["/bin/true"]'
out=$("$TUNER" validate good.json); rc=$?
check validate_ok test $rc -eq 0
check validate_summary grep -q "valid: study good, 2 parameters" <<<"$out"
cat >bad.json <<'JSON'
{"jobId": "9bad", "trainingInput": {"scaleTier": "BASIC", "command": ["x"],
 "hyperparameters": {"maxTrail": 3, "params": [
   {"parameterName": "a", "type": "DOUBLE", "minValue": 2, "maxValue": 1},
   {"parameterName": "a", "type": "CATEGORICAL", "categoricalValues": []}]}}}
JSON
err=$("$TUNER" validate bad.json 2>&1); rc=$?
check validate_bad_exit2 test $rc -eq 2
check validate_bad_jobid grep -q "bad.json: jobId:" <<<"$err"
check validate_bad_typo grep -q 'maxTrail: unknown field (did you mean "maxTrials"?)' <<<"$err"
check validate_bad_range grep -q "params\[0\]" <<<"$err"
check validate_bad_dup grep -q "params\[1\].parameterName" <<<"$err"
check validate_bad_empty grep -q "params\[1\].categoricalValues" <<<"$err"
err=$("$TUNER" validate nope.json 2>&1); rc=$?
check validate_missing_file test $rc -eq 2
err=$("$TUNER" valdate good.json 2>&1); rc=$?
check unknown_command grep -q "did you mean 'tuner validate'" <<<"$err"

# --- the trial-job contract, every tier --------------------------------------------
contract() { # NAME TIER EXTRA WORKERS PS EVALUATORS [--expect_master]
  spec "$1" "$2" "$3" 3 2 "[\"python3\", \"$CHECK\", \"--expect_workers=$4\", \"--expect_ps=$5\",
    \"--expect_evaluators=$6\", \"--expect_study=$1\", \"--expect_cores=1\" ${7:+, \"$7\"}]"
  "$TUNER" run "$1.json" --seed=5 --oversubscribe --grace=2 --quiet >"$1.out" 2>&1
  local rc=$?
  check "contract_$1_exit0" test $rc -eq 0
  check "contract_$1_all_succeeded" test "$(count_state "$1" SUCCEEDED)" -eq 3
}
contract basic BASIC "" 0 0 0
contract standard STANDARD_1 "" 4 3 0
contract custom CUSTOM '"workerCount": 2, "parameterServerCount": 1, "evaluatorCount": 1,' 2 1 1
contract legacy CUSTOM '"workerCount": 1, "useChiefInTfConfig": false,' 1 0 0 --expect_master=1
check contract_logs_written test -s runs/standard/1/logs/ps-2.log -o -f runs/standard/1/logs/ps-2.log

# --- restarts, retries, permanent errors ----------------------------------------------
flaky='["/bin/sh", "-c", "for a; do case $a in --job-dir=*) d=${a#--job-dir=};; esac; done; n=$(cat $d/count 2>/dev/null || echo 0); echo $((n+1)) > $d/count; [ $n -ge 2 ] || exit 1; echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
# (silent failures are never taken for a repeated error; restarts back off, doubling)
spec flaky BASIC '"restartPolicy": {"backoffSeconds": 0.2},' 1 1 "$flaky"
"$TUNER" run flaky.json --quiet >flaky.out 2>&1
check flaky_exit0 test $? -eq 0
check flaky_succeeded test "$(count_state flaky SUCCEEDED)" -eq 1
check flaky_restarts grep -q '"restarts": 2' <<<"$("$TUNER" trials flaky --format=json)"
check flaky_backoff_doubles test "$(event_details flaky restarted | sed 's/.*, in //' | tr '\n' ' ')" = "0.2 s 0.4 s "
# A replica that leaves a FIFO where its log goes: the restart must not block the
# tuner on opening it (it did, for good, deaf to SIGTERM); the trial fails naming it.
spec logfifo BASIC '"restartPolicy": {"backoffSeconds": 0},' 1 1 \
  '["/bin/sh", "-c", "for a; do case $a in --job-dir=*) d=${a#--job-dir=};; esac; done; rm -f $d/logs/chief-0.log; mkfifo $d/logs/chief-0.log; exit 1", "sh"]'
timeout -k 5 30 "$TUNER" run logfifo.json --quiet >logfifo.out 2>&1; rc=$?
check log_fifo_no_hang test $rc -eq 3
check log_fifo_trial_failed test "$(count_state logfifo FAILED)" -eq 1
check log_fifo_says grep -q "cannot open log .*/logs/chief-0.log: it is a FIFO, not a regular file" logfifo.out

# A program that cannot run fails the same way every time: the trial fails after the
# first identical repeat (not 24 runs), with its traceback in the error.
spec syntax BASIC '"restartPolicy": {"backoffSeconds": 0},' 1 1 \
  '["python3", "-c", "import sys\nprint(\"starting\")\ndef broken(:\n    pass"]'
"$TUNER" run syntax.json --quiet >syntax.out 2>&1
check syntax_failed test "$(count_state syntax FAILED)" -eq 1
check syntax_two_runs grep -q '"attempts": 1,' <<<"$("$TUNER" trials syntax --format=json)"
check syntax_one_restart grep -q '"restarts": 1,' <<<"$("$TUNER" trials syntax --format=json)"
check syntax_says_repeat grep -q "failed twice the same way (exit status 1, the same last lines) before reporting anything" <<<"$(trial_field syntax error)"
check syntax_has_traceback grep -q "^    SyntaxError: " <<<"$(trial_field syntax error)"
check syntax_log_named grep -q "its log (.*runs/syntax/1/logs/chief-0.log) ends:" <<<"$(trial_field syntax error)"
spec syntax_off BASIC '"restartPolicy": {"backoffSeconds": 0, "maxReplicaRestarts": 2, "maxJobRetries": 0, "failOnRepeatedError": false},' 1 1 \
  '["python3", "-c", "def broken(:"]'
"$TUNER" run syntax_off.json --quiet >/dev/null 2>&1
check syntax_off_runs_all test "$(event_details syntax_off started | wc -l)" -eq 3
check syntax_off_tail_in_error grep -q "failed 3 times (last: exit status 1) and the job was run 1 time; its log (.*) ends:" <<<"$(trial_field syntax_off error)"

# The spec's env reaches every replica, each type's env over it; the contract's own
# variables stay the tuner's.
cat >envcheck.sh <<'SH'
for a; do case $a in --job-dir=*) d=${a#--job-dir=};; esac; done
echo "$MODE $SHARED $OMP_NUM_THREADS" > "$d/env-$(echo "$TF_CONFIG" | python3 -c 'import json,sys; t=json.load(sys.stdin)["task"]; print("%s%d" % (t["type"], t["index"]))')"
sleep 0.3
echo '{"score": "1"}' > "$CLOUD_ML_HP_METRIC_FILE"
SH
spec envs CUSTOM '"workerCount": 1, "env": {"MODE": "all", "SHARED": "yes please"},
    "workerConfig": {"env": [{"name": "MODE", "value": "worker"}]},' 1 1 "[\"/bin/sh\", \"$PWD/envcheck.sh\"]"
"$TUNER" run envs.json --quiet >/dev/null 2>&1
check env_trial_succeeded test "$(count_state envs SUCCEEDED)" -eq 1
check env_chief_gets_all test "$(cat runs/envs/1/env-chief0 2>/dev/null)" = "all yes please 1"
check env_worker_gets_its_own test "$(cat runs/envs/1/env-worker0 2>/dev/null)" = "worker yes please 1"
spec envbad BASIC '"env": {"CLOUD_ML_HP_METRIC_FILE": "/tmp/x"},' 1 1 '["/bin/true"]'
out=$("$TUNER" validate envbad.json 2>&1); rc=$?
check env_contract_var_refused test $rc -eq 2
check env_contract_var_says grep -q "trainingInput.env.CLOUD_ML_HP_METRIC_FILE: CLOUD_ML_HP_METRIC_FILE is the tuner's to set" <<<"$out"

spec always BASIC '"restartPolicy": {"maxReplicaRestarts": 1, "maxJobRetries": 1, "backoffSeconds": 0},' 3 1 \
  '["/bin/sh", "-c", "exit 1"]' ', "maxFailedTrials": 2'
"$TUNER" run always.json --quiet >always.out 2>&1; rc=$?
check always_study_failed_exit3 test $rc -eq 3
check always_two_failed test "$(count_state always FAILED)" -eq 2
check always_error grep -q "failed 2 times" <<<"$("$TUNER" trials always --format=csv)"
check always_study_state test "$(study_state always)" = FAILED

# maxFailedTrials above maxTrials could never be reached: every trial failed, and the
# study ended SUCCEEDED with exit 0. It fails once all have failed, and a note says so.
spec allfail BASIC '"restartPolicy": {"maxReplicaRestarts": 0, "maxJobRetries": 0},' 2 1 \
  '["/bin/sh", "-c", "exit 1"]' ', "maxFailedTrials": 5'
"$TUNER" run allfail.json --quiet >allfail.out 2>&1; rc=$?
check all_failed_study_exit3 test $rc -eq 3
check all_failed_study_state test "$(study_state allfail)" = FAILED
check all_failed_note grep -q "maxFailedTrials (5) is more than maxTrials (2): the study fails once all 2 have failed" <<<"$("$TUNER" validate allfail.json 2>&1)"

# what a trial writes reaches the terminal only fit for it: its log's ESC, BEL, C1's
# CSI (as UTF-8 and as a raw byte) and bytes that are not UTF-8 each become '?' in the
# failure's message, in `tuner run`'s lines and in its error
cat >ttylog.sh <<'SH'
printf 'title \033]0;PWNED\007 red \033[31mRED c1 \302\23331m raw \23331m bad \377\376\n'
exit 2
SH
spec ttylog BASIC "" 1 1 "[\"/bin/sh\", \"$PWD/ttylog.sh\"]"
"$TUNER" run ttylog.json >ttylog.out 2>&1
check tty_log_failed test "$(count_state ttylog FAILED)" -eq 1
check tty_log_quoted grep -q "title ?]0;PWNED? red ?\[31mRED c1 ?31m raw ?31m bad ??" ttylog.out
check tty_no_control_in_run test "$(LC_ALL=C tr -d '\n\t\040-\176' <ttylog.out | wc -c)" -eq 0
check tty_no_control_in_trials test "$("$TUNER" trials ttylog 2>&1 | LC_ALL=C tr -d '\n\t\040-\176' | wc -c)" -eq 0
spec usage BASIC "" 1 1 '["/bin/sh", "-c", "echo bad flags >&2; exit 2"]'
"$TUNER" run usage.json --quiet >/dev/null 2>&1
check permanent_failed test "$(count_state usage FAILED)" -eq 1
check permanent_one_attempt grep -q '"attempts": 1' <<<"$("$TUNER" trials usage --format=json)"

spec nometric BASIC "" 1 1 '["/bin/true"]'
"$TUNER" run nometric.json --quiet >/dev/null 2>&1
check nometric_failed grep -q "no replica reported the metric 'score'" <<<"$("$TUNER" trials nometric --format=csv)"
# the metric reported as text: the message says so
spec textmetric BASIC "" 1 1 '["/bin/sh", "-c", "echo \"{\\\"score\\\": \\\"high\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
"$TUNER" run textmetric.json --quiet >/dev/null 2>&1
check text_metric_said grep -qF "no replica reported the metric 'score' (chief:0: 'score' was reported as \"high\", which is not a number)" <<<"$(trial_field textmetric error)"
# a record longer than the 1 MiB the reader takes from a file's end: the error says so
spec longline BASIC "" 1 1 '["python3", "-c", "import os; open(os.environ[\"CLOUD_ML_HP_METRIC_FILE\"], \"w\").write(\"{\\\"score\\\": \\\"1\\\", \\\"pad\\\": \\\"\" + \"x\" * 1500000 + \"\\\"}\\n\")"]'
"$TUNER" run longline.json --quiet >/dev/null 2>&1
check long_metric_line_said grep -q "ends in a line longer than 1 MiB, which is not read" <<<"$(trial_field longline error)"

spec slow BASIC '"trialTimeout": "0.5s",' 1 1 '["/bin/sh", "-c", "sleep 30", "sh"]'
"$TUNER" run slow.json --quiet --grace=1 >/dev/null 2>&1
check timeout_failed grep -q "timed out after 0.5s" <<<"$("$TUNER" trials slow --format=csv)"

spec missing BASIC "" 1 1 '["no-such-program-xyz"]'
err=$("$TUNER" run missing.json 2>&1); rc=$?
check missing_program_exit2 test $rc -eq 2
check missing_program_message grep -q "cannot run 'no-such-program-xyz': not found on PATH" <<<"$err"
# a program on the PATH the spec's env gives the replicas (not on the tuner's) runs
mkdir -p specbin
printf '#!/bin/sh\necho "{\\"score\\": \\"1\\"}" > "$CLOUD_ML_HP_METRIC_FILE"\n' >specbin/only-here-xyz
chmod 755 specbin/only-here-xyz
spec specpath BASIC "\"env\": {\"PATH\": \"$PWD/specbin:/usr/bin:/bin\"}," 1 1 '["only-here-xyz"]'
"$TUNER" run specpath.json --quiet >/dev/null 2>&1; rc=$?
check spec_path_program_runs test $rc -eq 0 -a "$(count_state specpath SUCCEEDED)" -eq 1
# a folder, or a script whose #! interpreter is missing: refused before anything is
# stored, saying which (a folder passed access(X_OK), and exec said only ENOENT)
mkdir -p progdir
printf '#!/no/such/interp\necho hi\n' >badinterp.sh; chmod 755 badinterp.sh
for c in "progdir:a directory, not a program" \
         "badinterp.sh:its interpreter /no/such/interp (its #! line) is not found"; do
  prog=${c%%:*} name=bad_${prog%.sh}
  spec "$name" BASIC "" 1 1 "[\"$PWD/$prog\"]"
  err=$("$TUNER" run "$name.json" 2>&1); rc=$?
  check "${name}_exit2" test $rc -eq 2
  check "${name}_says" grep -qF "cannot run '$PWD/$prog': ${c#*:}" <<<"$err"
  check "${name}_nothing_stored" test "$("$TUNER" show "$name" >/dev/null 2>&1; echo $?)" -eq 4
done
# a negative --seed is refused (it was taken as "not given", so a random seed was drawn)
for c in run create; do
  err=$("$TUNER" $c good.json --seed=-5 2>&1); rc=$?
  check "${c}_negative_seed_exit2" test $rc -eq 2
  check "${c}_negative_seed_says" grep -q -- "--seed must be 0 or more, got -5" <<<"$err"
done
check negative_seed_nothing_stored test "$("$TUNER" show good >/dev/null 2>&1; echo $?)" -eq 4
# huge --poll or --grace: refused (1e19 aborted libevent; a grace of 1e300 was "at once")
for f in --poll=1e19 --grace=1e300; do
  err=$("$TUNER" run good.json "$f" 2>&1); rc=$?
  check "huge_${f%%=*}_exit2" test $rc -eq 2
done
check huge_poll_says grep -q -- "--poll must be at most 3600 seconds and --grace at most 86400" <<<"$err"
# a stored study whose program is gone: the hint says the stored command is what runs
printf '#!/bin/sh\nexit 0\n' >gone-prog.sh && chmod +x gone-prog.sh
spec goneprog BASIC "" 1 1 "[\"$WORK/gone-prog.sh\"]"
"$TUNER" create goneprog.json >/dev/null && rm gone-prog.sh
err=$("$TUNER" resume goneprog --quiet 2>&1); rc=$?
check resume_missing_program_exit2 test $rc -eq 2
check resume_missing_program_hint grep -q 'hint: .*`tuner resume` runs the command the study was created with' <<<"$err"

spec huge BASIC '"resources": {"chief": {"cores": 64}},' 1 1 '["/bin/true"]'
err=$("$TUNER" run huge.json --cores=2 2>&1); rc=$?
check never_fits_exit2 test $rc -eq 2
check never_fits_message grep -q "needs 64 cores but the machine has 2" <<<"$err"
check never_fits_not_stored test "$("$TUNER" show huge >/dev/null 2>&1; echo $?)" -eq 4

err=$("$TUNER" run good.json --quiet 2>&1); "$TUNER" run good.json >/dev/null 2>&1; rc=$?
check duplicate_study_exit2 test $rc -eq 2

# --- early stopping: a learning-curve script, trials stopped at the right steps -----
# Grid order runs configs a..f one at a time; their curves rank at every step as at
# the end (a=0.5 b=0.9 c=0.1 d=0.75 e=0.2 f=0.95). ASHA, eta 3, rungs at steps 1, 3:
# c, d, e are not in the top floor(n/3) at rung 1 and stop there; a, b (fewer than
# eta competitors, and the best) and f (top 2 of 6 at rung 1, best at rung 3) finish.
es_params='{"parameterName": "config", "type": "CATEGORICAL", "categoricalValues": ["a", "b", "c", "d", "e", "f"]}'
spec asha BASIC "" 6 1 "[\"python3\", \"$HERE/curve.py\"]" \
  ', "earlyStopping": {"policy": "asha", "gracePeriod": 1, "reductionFactor": 3, "maxStep": 9}' "$es_params"
sed -i 's/"RANDOM_SEARCH"/"GRID_SEARCH"/' asha.json
"$TUNER" run asha.json --quiet --cores=1 --poll=0.05 --grace=2 >asha.out 2>&1; rc=$?
check asha_exit0 test $rc -eq 0
check asha_three_stopped test "$(count_state asha STOPPED)" -eq 3
check asha_three_succeeded test "$(count_state asha SUCCEEDED)" -eq 3
check asha_which python3 -c '
import json, sys
t = {r["number"]: r for r in json.load(sys.stdin)}
stopped = sorted(n for n, r in t.items() if r["state"] == "STOPPED")
if stopped != [3, 4, 5]: sys.exit("stopped %s" % stopped)
for n in stopped:
    r = t[n]
    if r["objective"] is None or "rung 0 (step 1)" not in (r["error"] or ""):
        sys.exit("trial %d: %s" % (n, r))
if max(t[n]["duration"] for n in stopped) >= min(t[n]["duration"] for n in (1, 2, 6)):
    sys.exit("stopped trials ran as long as finished ones")
' <<<"$("$TUNER" trials asha --format=json)"
check asha_decisions_logged python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select e.trial, e.detail from events e join studies s on s.id = e.study_id where s.name = ? and e.kind = ?", ("asha", "early_stopping")).fetchall()
stops = sorted({t for t, d in rows if ": stop: " in d})
if stops != [3, 4, 5]: sys.exit("stop decisions for %s" % stops)
if not any(": continue: " in d for t, d in rows if t == 6): sys.exit("no continue decision for trial 6")
' "$TUNER_DB"

# The default rule (enableTrialEarlyStopping alone): ASHA, eta 3, grace an eighth of
# the trials' length. a runs to the end (no trial had completed); then the length is
# 9, the rungs 2 and 6: at step 2, c, d, e are not in the top floor(n/3) and stop; b
# (the best of 2) and f (top 2 of 6, then the best of a, b, f at 6) finish.
spec esdefault BASIC "" 6 1 "[\"python3\", \"$HERE/curve.py\"]" \
  ', "enableTrialEarlyStopping": true' "$es_params"
sed -i 's/"RANDOM_SEARCH"/"GRID_SEARCH"/' esdefault.json
"$TUNER" run esdefault.json --quiet --cores=1 --poll=0.05 --grace=2 >esdefault.out 2>&1; rc=$?
check esdefault_exit0 test $rc -eq 0
check esdefault_which python3 -c '
import json, sys
t = {r["number"]: r for r in json.load(sys.stdin)}
stopped = sorted(n for n, r in t.items() if r["state"] == "STOPPED")
if stopped != [3, 4, 5]: sys.exit("stopped %s" % stopped)
for n in stopped:
    if "asha: stop: rung 0 (step 2): " not in (t[n]["error"] or ""): sys.exit("trial %d: %s" % (n, t[n]))
' <<<"$("$TUNER" trials esdefault --format=json)"

# The median rule (minTrials 2 here): c is below the median of a and b at step 1; d
# is above it.
spec median BASIC "" 4 1 "[\"python3\", \"$HERE/curve.py\"]" \
  ', "enableTrialEarlyStopping": true, "earlyStopping": {"policy": "median", "minTrials": 2}' "$es_params"
sed -i 's/"RANDOM_SEARCH"/"GRID_SEARCH"/' median.json
"$TUNER" run median.json --quiet --cores=1 --poll=0.05 --grace=2 >median.out 2>&1
check median_one_stopped test "$(count_state median STOPPED)" -eq 1
check median_c_stopped grep -q '^3,STOPPED' <<<"$("$TUNER" trials median --format=csv)"

# --- what the early-stopping rule counts: the newest point only, nothing after a stop --
# ASHA, grace 1, eta 2, maxStep 100: rungs at steps 1, 2, 4, 8. One trial at a time.
# late: a runs to the end at 0.9; b is stopped at step 1 (0 against 0.9), ignores the
# SIGTERM and writes 1.0 at steps 2 and 4: not counted, so b keeps the 0 it was judged
# on, and c (0.95) is not stopped at step 2 by b's late 1.0 (it was: threshold 1.0).
cat >late.sh <<'SH'
for a; do case $a in --config=*) c=${a#--config=};; esac; done
f=$CLOUD_ML_HP_METRIC_FILE
put() { echo "{\"score\": \"$2\", \"global_step\": \"$1\"}" >>"$f"; sleep 0.3; }
case $c in
  a) put 1 0.9; put 2 0.9; put 4 0.9;;
  b) trap '' TERM; put 1 0; sleep 1; put 2 1.0; put 4 1.0;;
  c) put 1 0.95; put 2 0.95; put 4 0.95;;
esac
SH
es_asha=', "enableTrialEarlyStopping": true, "earlyStopping": {"policy": "asha", "gracePeriod": 1, "reductionFactor": 2, "maxStep": 100}'
spec late BASIC "" 3 1 "[\"/bin/sh\", \"$PWD/late.sh\"]" "$es_asha" \
  '{"parameterName": "config", "type": "CATEGORICAL", "categoricalValues": ["a", "b", "c"]}'
sed -i 's/"RANDOM_SEARCH"/"GRID_SEARCH"/' late.json
"$TUNER" run late.json --quiet --poll=0.05 --grace=3 >late.out 2>&1
check late_reports_states test "$("$TUNER" trials late --format=csv | cut -d, -f1,2 | tr '\n' ' ')" = "number,state 1,SUCCEEDED 2,STOPPED 3,SUCCEEDED "
check late_reports_objective_kept test "$(trial_field late objective | sed -n 2p)" = 0
check late_reports_said python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select e.detail from events e join studies s on s.id = e.study_id where s.name = ? and e.trial = 2 and e.kind = ?", ("late", "early_stopping")).fetchall()
if not any("records written after the stop are not counted (the first: chief:0, step 2)" in d for (d,) in rows): sys.exit(str(rows))
' "$TUNER_DB"

# relow: c reports step 8 (rung 3, judged: it continues), then step 4, as a restarted
# replica repeats the steps below the dead run's last: that point is not the newest,
# and rung 3 is not judged again (it was, with whatever the threshold had become).
cat >relow.sh <<'SH'
for a; do case $a in --config=*) c=${a#--config=};; esac; done
f=$CLOUD_ML_HP_METRIC_FILE
put() { echo "{\"score\": \"$2\", \"global_step\": \"$1\"}" >>"$f"; sleep 0.3; }
case $c in
  a|b) put 1 0.5; put 2 0.5; put 4 0.5; put 8 0.5;;
  c) put 8 0.6; put 4 0.6;;
esac
SH
spec relow BASIC "" 3 1 "[\"/bin/sh\", \"$PWD/relow.sh\"]" "$es_asha" \
  '{"parameterName": "config", "type": "CATEGORICAL", "categoricalValues": ["a", "b", "c"]}'
sed -i 's/"RANDOM_SEARCH"/"GRID_SEARCH"/' relow.json
"$TUNER" run relow.json --quiet --poll=0.05 --grace=2 >relow.out 2>&1
check lower_step_not_judged python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = [d for (d,) in db.execute("select e.detail from events e join studies s on s.id = e.study_id where s.name = ? and e.trial = 3 and e.kind = ?", ("relow", "early_stopping"))]
if len(rows) != 1 or "continue: rung 3 (step 8)" not in rows[0]: sys.exit(str(rows))
' "$TUNER_DB"

# --- a trial's measurements, by attempt: a replica that crashed after reporting ------
# Trial 1 (config a) reports steps 5 and 6 (the last line without its newline, as the
# Python library leaves it; timestamps 2000, 2001) and crashes; its restart overwrites
# the file with its own steps 5 and 6 (timestamps 1000, 1001: a clock set back). Both
# attempts are stored; the newest attempt's values are the curve. Trial 2 (config b)
# is interrupted, so `resume` rebuilds the curves from the store: by attempt, not by
# timestamp, trial 1 is at 0.7 at step 5, and trial 2's 0.5 there is below that median.
cat >attempts.sh <<'SH'
for a; do case $a in --job-dir=*) d=${a#--job-dir=};; --config=*) c=${a#--config=};; esac; done
f=$CLOUD_ML_HP_METRIC_FILE
if [ "$c" = a ]; then
  if [ ! -e "$d/ran" ]; then
    touch "$d/ran"
    printf '{"score": "0.2", "global_step": "5", "timestamp": 2000}\n{"score": "0.3", "global_step": "6", "timestamp": 2001}' >"$f"
    exit 1
  fi
  sleep 0.2
  printf '{"score": "0.7", "global_step": "5", "timestamp": 1000}\n{"score": "0.8", "global_step": "6", "timestamp": 1001}\n' >"$f"
  exit 0
fi
if [ ! -e "$d/ran" ]; then touch "$d/ran"; exec sleep 30; fi
printf '{"score": "0.5", "global_step": "5"}\n' >"$f"
exec sleep 3
SH
spec attempts BASIC "" 2 1 "[\"/bin/sh\", \"$PWD/attempts.sh\"]" \
  ', "enableTrialEarlyStopping": true, "earlyStopping": {"policy": "median", "minTrials": 1}' \
  '{"parameterName": "config", "type": "CATEGORICAL", "categoricalValues": ["a", "b"]}'
sed -i 's/"RANDOM_SEARCH"/"GRID_SEARCH"/' attempts.json
"$TUNER" run attempts.json --quiet --poll=0.05 --grace=1 >attempts.out 2>&1 &
pid=$!
for _ in $(seq 1 200); do [ -e runs/attempts/2/ran ] && break; sleep 0.05; done
kill -INT $pid; wait $pid
"$TUNER" resume attempts --quiet --poll=0.05 --grace=1 >>attempts.out 2>&1
check attempts_csv test "$("$TUNER" trials attempts 1 --format=csv)" = "step,replica,attempt,score,timestamp
5,chief:0,1,0.2,2000
5,chief:0,2,0.7,1000
6,chief:0,1,0.3,2001
6,chief:0,2,0.8,1001"
check attempts_json python3 -c '
import json, sys
rows = [(r["step"], r["replica"], r["attempt"], r["metrics"], r["timestamp"]) for r in json.load(sys.stdin)]
want = [(5, "chief:0", 1, {"score": 0.2}, 2000), (5, "chief:0", 2, {"score": 0.7}, 1000),
        (6, "chief:0", 1, {"score": 0.3}, 2001), (6, "chief:0", 2, {"score": 0.8}, 1001)]
sys.exit(0 if rows == want else "rows %s" % rows)' <<<"$("$TUNER" trials attempts 1 --format=json)"
check attempts_table grep -q "^STEP  REPLICA  ATTEMPT  score  TIMESTAMP$" <<<"$("$TUNER" trials attempts 1)"
check attempts_replica_filter test "$("$TUNER" trials attempts 1 --replica=chief --format=csv | wc -l)" -eq 5
# the resumed trial's run is its replica's second start
check attempts_go_on_after_resume grep -q "^5,chief:0,2,0.5," <<<"$("$TUNER" trials attempts 2 --format=csv)"
check attempts_curve_newest_attempt grep -q "step 5: best 0.5 is worse than the median 0.7 of 1 completed trial" <<<"$(trial_field attempts error)"
check attempts_stopped test "$(count_state attempts STOPPED)" -eq 1
err=$("$TUNER" trials attempts 9 2>&1); rc=$?
check attempts_missing_trial_exit4 test $rc -eq 4
check attempts_missing_trial_says grep -q "study attempts has no trial 9" <<<"$err"
err=$("$TUNER" trials attempts 1 --replica=worker:0 2>&1); rc=$?
check attempts_missing_replica_exit4 test $rc -eq 4
err=$("$TUNER" trials attempts 0 2>&1); rc=$?
check attempts_bad_trial_exit2 test $rc -eq 2
check attempts_bad_trial_says grep -q "TRIAL must be a positive integer (a trial number), got '0'" <<<"$err"
check measurements_none_table test "$("$TUNER" trials nometric 1)" = "trial 1 of study nometric has no measurements yet"
check measurements_none_json test "$("$TUNER" trials nometric 1 --format=json)" = "[]"
check measurements_none_csv test "$("$TUNER" trials nometric 1 --format=csv)" = "step,replica,attempt,score,timestamp"

cat >es_bad.json <<'JSON'
{"jobId": "es_bad", "trainingInput": {"command": ["x"], "hyperparameters": {"maxTrials": 2,
 "earlyStopping": {"policy": "hyperbolic", "reductionFactor": 1, "minTrial": 3},
 "params": [{"parameterName": "a", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]}}}
JSON
err=$("$TUNER" validate es_bad.json 2>&1)
check es_bad_policy grep -q 'earlyStopping.policy: expected one of "median", "asha", "hyperband", "dominance", "none"' <<<"$err"
check es_bad_factor grep -q "earlyStopping.reductionFactor" <<<"$err"
check es_bad_typo grep -q 'earlyStopping.minTrial: unknown field (did you mean "minTrials"?)' <<<"$err"

# --- Bayesian optimisation (ALGORITHM_UNSPECIFIED) on the quadratic script --------
spec bo BASIC "" 20 2 "[\"python3\", \"$HERE/../../studies/quadratic.py\", \"--steps=2\"]" "" \
  '{"parameterName": "x", "type": "DOUBLE", "minValue": -5, "maxValue": 5},
   {"parameterName": "y", "type": "DOUBLE", "minValue": -5, "maxValue": 5}'
sed -i 's/"RANDOM_SEARCH"/"ALGORITHM_UNSPECIFIED"/; s/"MAXIMIZE"/"MINIMIZE"/; s/"score"/"loss"/' bo.json
"$TUNER" run bo.json --seed=3 --quiet >bo.out 2>&1; rc=$?
check bo_exit0 test $rc -eq 0
check bo_all_succeeded test "$(count_state bo SUCCEEDED)" -eq 20
# The quadratic's minimum is 5 at (1, -2) (its value after 2 steps); random search's
# best of 20 is typically 1 to 3 above it; the Gaussian process gets close.
check bo_near_optimum python3 -c 'import json,sys; b=json.load(sys.stdin)["objective"]; sys.exit(0 if b < 5.5 else "best %g" % b)' <<<"$("$TUNER" best bo --format=json)"

# The sampler's options from the spec (extension bayesianOptimization): UCB, a short
# initial design.
sed 's/"jobId": "bo"/"jobId": "bo_ucb"/; s#runs/bo"#runs/bo_ucb"#; s/"maxTrials": 20/"maxTrials": 6, "bayesianOptimization": {"initialTrials": 2, "acquisition": "UCB", "ucbBeta": 1}/' bo.json >bo_ucb.json
check bo_options_valid "$TUNER" validate bo_ucb.json
"$TUNER" run bo_ucb.json --seed=3 --quiet >/dev/null 2>&1
check bo_options_run test "$(count_state bo_ucb SUCCEEDED)" -eq 6

# resumePreviousJobId: a second study starts from the first one's trials: its first
# trial comes from the model, not from the initial design that the same seed gives a
# study without the warm start.
sed 's/"jobId": "bo"/"jobId": "bo_warm"/; s#runs/bo"#runs/bo_warm"#; s/"maxTrials": 20/"maxTrials": 2, "resumePreviousJobId": "bo"/; s/"maxParallelTrials": 2/"maxParallelTrials": 1/' bo.json >bo_warm.json
"$TUNER" run bo_warm.json --seed=9 >bo_warm.out 2>&1; rc=$?
check warm_exit0 test $rc -eq 0
check warm_logged grep -q "warm start from study bo: 20 succeeded trials" bo_warm.out
sed 's/"jobId": "bo_warm"/"jobId": "bo_cold"/; s#runs/bo_warm"#runs/bo_cold"#; s/, "resumePreviousJobId": "bo"//' bo_warm.json >bo_cold.json
"$TUNER" run bo_cold.json --seed=9 --quiet >/dev/null 2>&1
first() { "$TUNER" trials "$1" --format=json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)[0]["params"]))'; }
check warm_first_trial_from_the_model test "$(first bo_warm)" != "$(first bo_cold)"
err=$("$TUNER" validate bo_warm.json 2>&1); rc=$?
check warm_validates test $rc -eq 0
sed 's/"jobId": "bo_warm"/"jobId": "bo_warm2"/; s/"resumePreviousJobId": "bo"/"resumePreviousJobId": "nosuchstudy"/' bo_warm.json >bo_warm2.json
err=$("$TUNER" run bo_warm2.json 2>&1); rc=$?
check warm_missing_study_exit4 test $rc -eq 4

# --- GPUs: each replica its own devices; trials wait until devices are free --------
gpu_script='["/bin/sh", "-c", "for a; do case $a in --job-dir=*) d=${a#--job-dir=};; esac; done; echo \"$CLOUD_ML_TRIAL_ID $CUDA_VISIBLE_DEVICES\" >> $d/../gpus.log; case \"$TF_CONFIG\" in *chief*) sleep 0.3; echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE;; *) sleep 30;; esac", "sh"]'
spec gpu CUSTOM '"workerCount": 1, "resources": {"chief": {"gpus": 1}, "worker": {"gpus": 1}},' 3 3 "$gpu_script"
"$TUNER" run gpu.json --gpus=3 --cores=8 --quiet --grace=1 >gpu.out 2>&1; rc=$?
check gpu_exit0 test $rc -eq 0
check gpu_3_succeeded test "$(count_state gpu SUCCEEDED)" -eq 3
# The two replicas of a trial get different devices, and with 3 GPUs only one trial
# (2 GPUs) runs at a time: no two trials overlap in time.
check gpu_devices_distinct python3 -c '
import collections, sys
per = collections.defaultdict(list)
for line in open("runs/gpu/gpus.log"):
    trial, dev = line.split()
    per[trial].append(dev)
for trial, devs in per.items():
    if len(devs) != 2 or len(set(devs)) != 2 or not set(devs) <= {"0", "1", "2"}:
        sys.exit("trial %s got devices %s" % (trial, devs))
if len(per) != 3: sys.exit("%d trials logged" % len(per))
'
check gpu_trials_serialised python3 -c '
import json, sys
t = sorted(json.load(sys.stdin), key=lambda r: r["started"])
for a, b in zip(t, t[1:]):
    if b["started"] < a["finished"]: sys.exit("trials %d and %d overlap" % (a["number"], b["number"]))
' <<<"$("$TUNER" trials gpu --format=json)"
err=$("$TUNER" run gpu.json --gpus=1 2>&1); rc=$?
check gpu_never_fits grep -q "needs 2 GPUs but the machine has 1" <<<"$err"
# AI Platform's acceleratorConfig asks the same; the ids come from CUDA_VISIBLE_DEVICES
spec accel CUSTOM '"workerCount": 1, "masterConfig": {"acceleratorConfig": {"count": "1", "type": "NVIDIA_TESLA_T4"}},
  "workerConfig": {"acceleratorConfig": {"count": 1, "type": "NVIDIA_TESLA_T4"}},' 2 2 "$gpu_script"
CUDA_VISIBLE_DEVICES=5,7 "$TUNER" run accel.json --gpus=2 --cores=8 --quiet --grace=1 >accel.out 2>&1; rc=$?
check accel_exit0 test $rc -eq 0
check accel_devices_from_visible python3 -c '
import collections, sys
per = collections.defaultdict(list)
for line in open("runs/accel/gpus.log"):
    trial, dev = line.split()
    per[trial].append(dev)
if len(per) != 2 or any(sorted(d) != ["5", "7"] for d in per.values()): sys.exit(str(dict(per)))
'
# without --gpus the tuner counts the GPUs through NVML: none here (no driver)
if ! ls /dev/nvidia0 >/dev/null 2>&1; then
  err=$("$TUNER" run accel.json 2>&1); rc=$?
  check gpu_detected_none_exit2 test $rc -eq 2
  check gpu_detected_none_message grep -q "needs 2 GPUs but the machine has 0" <<<"$err"
  err=$("$TUNER" validate accel.json 2>&1); rc=$?
  check gpu_validate_exit2 test $rc -eq 2
  check gpu_validate_message grep -q "a trial needs 2 GPUs but this machine has 0 (no NVIDIA driver" <<<"$err"
fi
err=$(CUDA_VISIBLE_DEVICES=2,3 "$TUNER" run accel.json --gpus=4 2>&1); rc=$?
check gpu_more_than_visible_exit2 test $rc -eq 2
check gpu_more_than_visible grep -q -- "--gpus=4, but CUDA_VISIBLE_DEVICES lists 2 devices (2,3)" <<<"$err"
err=$("$TUNER" validate good.json 2>&1)
check validate_names_executor grep -q "executor local" <<<"$err"
check show_executor_local test "$("$TUNER" show accel --format=json | python3 -c 'import json,sys; print(json.load(sys.stdin)["executor"])')" = local
check trials_no_executor_job test "$("$TUNER" trials accel --format=json | python3 -c 'import json,sys; print({t["executor_job"] for t in json.load(sys.stdin)})')" = "{None}"

# --- the executor flag -------------------------------------------------------------
err=$("$TUNER" run good.json --executor=kubernetes 2>&1); rc=$?
check executor_bad_exit2 test $rc -eq 2
check executor_bad_message grep -q -- "--executor must be local or slurm" <<<"$err"
err=$(PATH=/nonexistent "$TUNER" run good.json --executor=slurm 2>&1); rc=$?
check executor_slurm_no_sbatch_exit2 test $rc -eq 2
check executor_slurm_no_sbatch grep -q "needs sbatch, which is not on PATH" <<<"$err"
check executor_slurm_hint grep -q "hint: install Slurm's client commands" <<<"$err"
err=$(PATH=/nonexistent "$TUNER" validate good.json --executor=slurm 2>&1); rc=$?
check executor_validate_slurm_exit2 test $rc -eq 2
err=$("$TUNER" resume gpu --executor=slurm 2>&1); rc=$?
check executor_resume_cannot_change test $rc -eq 2
check executor_resume_message grep -q "runs on the local executor; --executor=slurm cannot change" <<<"$err"
# a backslash in the job dir: sbatch drops it from the job's --output path (and its %j),
# so every job would fail at launch; refused before any Slurm command runs
python3 - <<'EOF2'
import json
s = json.load(open("good.json"))
s["trainingInput"]["jobDir"] = "runs/back\\slash"
json.dump(s, open("backslash.json", "w"))
EOF2
err=$(PATH=/nonexistent "$TUNER" validate backslash.json --executor=slurm 2>&1); rc=$?
check slurm_backslash_exit2 test $rc -eq 2
check slurm_backslash_message grep -q "runs/back.slash has a backslash, which sbatch takes" <<<"$err"
check slurm_backslash_hint grep -q "hint: set trainingInput.jobDir to a folder with no backslash" <<<"$err"
err=$(PATH=/nonexistent "$TUNER" run backslash.json --executor=slurm 2>&1); rc=$?
check slurm_backslash_run_exit2 test $rc -eq 2
check slurm_backslash_run_message grep -q "has a backslash" <<<"$err"
"$TUNER" validate backslash.json >/dev/null 2>&1
check local_backslash_ok test $? -eq 0

# --- the example specs in studies/ stay valid; the script one runs ------------------
# (from the project's folder, where their relative paths are meant)
ROOT=$(cd "$HERE/../.." && pwd)
for f in "$ROOT"/studies/*.json; do
  check "example_$(basename "$f" .json)_valid" sh -c 'cd "$1" && "$2" validate "$3" >/dev/null 2>&1' \
    sh "$ROOT" "$TUNER" "studies/$(basename "$f")"
done
(cd "$HERE/../.." && "$TUNER" run studies/script_quadratic.json --db="$WORK/examples.db" \
  --quiet --seed=1 >"$WORK/quadratic.out" 2>&1)
check example_script_runs grep -q "best: trial" quadratic.out
rm -rf "$HERE/../../runs/script_quadratic"
# Each comes in both forms, JSON and gcloud's YAML config file, and the twins agree.
# (Each twin is created in a copy of the project's studies/ of its own: a study owns its
# job folder, and the twins' jobDir is the same; none is left in the project's runs/.)
mkdir -p twins/j twins/y && cp -r "$ROOT/studies" twins/j/ && cp -r "$ROOT/studies" twins/y/
for f in "$ROOT"/studies/*.json; do
  n=$(basename "$f" .json)
  check "example_${n}_yaml_valid" sh -c 'cd "$1" && "$2" validate "$3" >/dev/null 2>&1' \
    sh "$ROOT" "$TUNER" "studies/$n.yaml"
  (cd twins/j && "$TUNER" create "studies/$n.json" --job-id="j_$n" --db="$WORK/twins.db" &&
   cd ../y && "$TUNER" create "studies/$n.yaml" --job-id="y_$n" --db="$WORK/twins.db") >/dev/null 2>&1
  check "example_${n}_twins_agree" python3 -c '
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
spec = {}
for p in ("j_", "y_"):
    row = db.execute("select spec from studies where name = ?", (p + sys.argv[2],)).fetchone()
    if row is None: sys.exit("%s%s was not created" % (p, sys.argv[2]))
    spec[p] = json.dumps(json.loads(row[0])["trainingInput"], sort_keys=True)
if spec["j_"].replace("/twins/j/", "/twins/y/") != spec["y_"]:
    sys.exit("the JSON and YAML twins differ")' "$WORK/twins.db" "$n"
done

# --- gcloud's config.yaml as it is: named after the file, cloud fields noted, a run --
cat >config.yaml <<YAML
# gcloud ai-platform jobs submit training JOB --config config.yaml
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-4
  workerType: n1-standard-4
  workerCount: 1
  region: us-central1
  runtimeVersion: "2.11"
  command: [python3, $CHECK, --expect_workers=1, --expect_ps=0, --expect_evaluators=0,
            --expect_study=config, --expect_cores=1]
  hyperparameters:
    goal: MAXIMIZE
    hyperparameterMetricTag: score
    maxTrials: 3
    maxParallelTrials: 2
    algorithm: RANDOM_SEARCH
    params:
      - {parameterName: x, type: DOUBLE, minValue: -2, maxValue: 2}
      - parameterName: n
        type: INTEGER
        minValue: 1
        maxValue: 4
YAML
out=$("$TUNER" validate config.yaml 2>&1); rc=$?
check yaml_validate_ok test $rc -eq 0
check yaml_named_after_file grep -q "^config.yaml: valid: study config, 2 parameters" <<<"$out"
check yaml_note_name grep -q "^config.yaml: note: jobId: config, from the file's name" <<<"$out"
check yaml_note_ignored grep -q "^config.yaml: note: ignored: trainingInput.masterType, trainingInput.workerType (machine types" <<<"$out"
check yaml_note_once test "$(grep -c 'region' <<<"$out")" -eq 1
"$TUNER" run config.yaml --seed=5 --oversubscribe --grace=2 --quiet >yaml.out 2>&1; rc=$?
check yaml_run_exit0 test $rc -eq 0
check yaml_run_quiet_no_notes test "$(grep -c 'note:' yaml.out)" -eq 0
check yaml_run_all_succeeded test "$(count_state config SUCCEEDED)" -eq 3
check yaml_stored_as_json python3 -c '
import json, sqlite3, sys
spec = json.loads(sqlite3.connect(sys.argv[1]).execute(
    "select spec from studies where name = ?", ("config",)).fetchone()[0])
assert spec["jobId"] == "config" and spec["trainingInput"]["region"] == "us-central1", spec' \
  "$TUNER_DB"
out=$("$TUNER" resume config 2>&1); rc=$?
check yaml_resume_reads_stored test $rc -eq 0
check yaml_show_reads_stored grep -q "SUCCEEDED" <<<"$("$TUNER" show config)"
"$TUNER" create config.yaml --job-id=config_two >/dev/null 2>&1
check yaml_job_id_flag test "$(study_state config_two)" = CREATED
err=$("$TUNER" run config.yaml --job-id=2x 2>&1); rc=$?
check yaml_job_id_bad_exit2 test $rc -eq 2
check yaml_job_id_bad_says grep -q -- "--job-id must start with a letter" <<<"$err"
# every problem at once, each at its line and column
cat >bad.yaml <<'YAML'
trainingInput:
  scaleTier: custom
  workerCount: two
  command: [trainer]
  hyperparameters:
    maxTrail: 3
    params:
      - parameterName: o
        type: CATEGORICAL
        categoricalValues: [a, yes]
YAML
err=$("$TUNER" validate bad.yaml 2>&1); rc=$?
check yaml_bad_exit2 test $rc -eq 2
check yaml_bad_tier grep -q '^bad.yaml:2:3: trainingInput.scaleTier: expected one of .* (did you mean "CUSTOM"?)' <<<"$err"
check yaml_bad_count grep -q '^bad.yaml:3:3: trainingInput.workerCount: expected an integer' <<<"$err"
check yaml_bad_typo grep -q '^bad.yaml:6:5: trainingInput.hyperparameters.maxTrail: unknown field (did you mean "maxTrials"?)' <<<"$err"
check yaml_bad_yes grep -q '^bad.yaml:10:32: trainingInput.hyperparameters.params\[0\].categoricalValues\[1\]: expected a string, got true (YAML reads the plain scalar yes as true' <<<"$err"
check yaml_bad_all_at_once grep -q "^tuner: error: bad.yaml has 4 problems; nothing was run" <<<"$err"
printf 'trainingInput:\n  scaleTier: CUSTOM\n  scaleTier: BASIC\n' >dup.yaml
err=$("$TUNER" validate dup.yaml 2>&1)
check yaml_duplicate_key grep -q "^dup.yaml:3:3: trainingInput.scaleTier: duplicate key (also on line 2)" <<<"$err"
printf 'trainingInput:\n  scaleTier: [CUSTOM\n' >syntax.yaml
err=$("$TUNER" validate syntax.yaml 2>&1); rc=$?
check yaml_syntax_exit2 test $rc -eq 2
check yaml_syntax_line_col grep -q "^syntax.yaml:3:1: did not find expected ',' or ']'" <<<"$err"

# --- pythonModule from a local package, installed and run as AI Platform would ------
# gs:// cannot be reached from here: an error at its line, before anything runs
cat >gs.yaml <<'YAML'
trainingInput:
  pythonModule: trainer.task
  packageUris:
    - gs://my-bucket/trainer-0.1.tar.gz
  hyperparameters:
    params: [{parameterName: x, type: DOUBLE, minValue: 0, maxValue: 1}]
YAML
err=$("$TUNER" validate gs.yaml 2>&1); rc=$?
check package_gs_exit2 test $rc -eq 2
check package_gs_says grep -q '^gs.yaml:4:7: trainingInput.packageUris\[0\]: "gs://my-bucket/trainer-0.1.tar.gz" cannot be reached from here' <<<"$err"
# no python3 on PATH: the message says to install it, not to fix a command it has not
cat >nopy.yaml <<'YAML'
trainingInput:
  pythonModule: trainer.task
  hyperparameters:
    params: [{parameterName: x, type: DOUBLE, minValue: 0, maxValue: 1}]
YAML
mkdir -p nopybin
err=$(PATH="$WORK/nopybin" "$TUNER" run nopy.yaml --db="$WORK/nopy.db" 2>&1); rc=$?
check nopython_exit2 test $rc -eq 2
check nopython_says grep -q "cannot run 'python3' for trainingInput.pythonModule: not found" <<<"$err"
check nopython_hint grep -q "^hint: install Python 3" <<<"$err"
# Installing needs a python3 with pip, setuptools and wheel (Debian's python3-pip);
# the first such on PATH (or Debian's) runs the study, as the trials' python3.
py=""
for cand in python3 /usr/bin/python3; do
  if "$cand" -c 'import setuptools, wheel' >/dev/null 2>&1 && "$cand" -m pip --version >/dev/null 2>&1; then
    py=$(command -v "$cand")
    break
  fi
done
if [ -z "$py" ]; then
  echo "skip package_run: no python3 with pip, setuptools and wheel (Debian: python3-pip)"
else
  mkdir -p pybin && ln -sf "$py" pybin/python3
  # the example as it is, in a copy of its folder (the study's jobDir is relative):
  # from there as from the project's folder. Its package folder has what an earlier
  # build in it left (setuptools' build/lib, with a module deleted since): the folder
  # is built into a wheel outside it, so the deleted module is not installed (it was:
  # setuptools packs what build/lib holds), and nothing is written into the folder (pip
  # wrote build/ and *.egg-info there)
  EX="$(pwd -P)/pkgex"
  mkdir -p "$EX/studies" &&
    cp -R "$ROOT/studies/python_package" "$ROOT/studies/python_package.yaml" "$EX/studies/"
  rm -rf "$EX/studies/python_package/build" "$EX"/studies/python_package/*.egg-info
  mkdir -p "$EX/studies/python_package/build/lib/rosenbrock"
  echo 'print("deleted since")' >"$EX/studies/python_package/build/lib/rosenbrock/stale_mod.py"
  before_pkg=$(cd "$EX/studies/python_package" && find . | sort)
  (cd "$EX" && PATH="$WORK/pybin:$PATH" "$TUNER" run studies/python_package.yaml \
     --db="$WORK/examples.db" --seed=1 --quiet >"$WORK/package.out" 2>&1); rc=$?
  check package_run_exit0 test $rc -eq 0
  check package_run_best grep -q "best: trial" package.out
  check package_all_succeeded test "$(TUNER_DB="$WORK/examples.db" count_state python_package SUCCEEDED)" -eq 8
  check package_in_study_venv test -x "$EX/runs/python_package/venv/bin/python3"
  check package_module_ran grep -q "^trial 1: learning_rate=" "$EX/runs/python_package/1/logs/chief-0.log"
  V="$EX/runs/python_package/venv"
  check package_wheel_built grep -q "^\$ DIST_EXTRA_CONFIG=$V/build/1/setuptools.cfg $V/bin/python3 -m pip wheel --no-deps .* -w $V/build/1/wheel $EX/studies/python_package\$" \
    "$V/install.log"
  check package_from_venv grep -q "^\$ $V/bin/python3 -m pip install .* $V/build/1/wheel/rosenbrock_trainer-[^ /]*\.whl\$" \
    "$V/install.log"
  # (a setuptools older than 65.4 does not read DIST_EXTRA_CONFIG and builds in the
  # folder, as pip install FOLDER always did: there these two cannot hold)
  if "$py" -c 'import setuptools, sys; v = tuple(int(x) for x in setuptools.__version__.split(".")[:2]); sys.exit(v < (65, 4))'; then
    check package_stale_build_not_installed test -z "$(ls "$V"/lib/python3*/site-packages/rosenbrock/stale_mod.py 2>/dev/null)" \
      -a -n "$(ls "$V"/lib/python3*/site-packages/rosenbrock/__init__.py 2>/dev/null)"
    check package_folder_untouched test "$(cd "$EX/studies/python_package" && find . | sort)" = "$before_pkg"
  else
    echo "skip package_stale_build_not_installed, package_folder_untouched: $py has a setuptools older than 65.4"
  fi
  rm -rf "$EX/runs/python_package"
  # created here, resumed from elsewhere: the stored paths are absolute, and resume
  # installs the package before the trials run
  (cd "$EX" && "$TUNER" create studies/python_package.yaml --job-id=pkg_later \
     --db="$WORK/examples.db" >/dev/null 2>&1)
  (cd / && PATH="$WORK/pybin:$PATH" "$TUNER" resume pkg_later --db="$WORK/examples.db" \
     --quiet >"$WORK/package_resume.out" 2>&1); rc=$?
  check package_resume_exit0 test $rc -eq 0
  check package_resume_all_succeeded test "$(TUNER_DB="$WORK/examples.db" count_state pkg_later SUCCEEDED)" -eq 8
  # two studies installing one package folder at once: both succeed (with a setuptools
  # older than 65.4, which builds inside the folder, each waits for the other's build
  # on the folder's lock); pip's settings that would install
  # elsewhere (PIP_USER, as a cluster's pip.conf often has) do not take the install
  # out of the study's environment
  for k in 1 2; do
    cat >"$EX/conc$k.yaml" <<YAML
trainingInput:
  pythonModule: rosenbrock.task
  packageUris: [studies/python_package]
  args: [--steps=20]
  jobDir: runs/conc$k
  hyperparameters:
    goal: MINIMIZE
    hyperparameterMetricTag: loss
    maxTrials: 1
    params: [{parameterName: learning_rate, type: DOUBLE, minValue: 0.0001, maxValue: 0.001}]
YAML
  done
  (cd "$EX" && PATH="$WORK/pybin:$PATH" PIP_USER=1 PYTHONUSERBASE="$WORK/userbase" \
     "$TUNER" run conc1.yaml --db="$WORK/conc1.db" --quiet >"$WORK/conc1.out" 2>&1) &
  c1=$!
  (cd "$EX" && PATH="$WORK/pybin:$PATH" "$TUNER" run conc2.yaml --db="$WORK/conc2.db" \
     --quiet >"$WORK/conc2.out" 2>&1); rc2=$?
  wait $c1; rc1=$?
  check package_concurrent_both_exit0 test $rc1 -eq 0 -a $rc2 -eq 0
  check package_concurrent_both_succeeded test "$(TUNER_DB="$WORK/conc1.db" count_state conc1 SUCCEEDED)$(TUNER_DB="$WORK/conc2.db" count_state conc2 SUCCEEDED)" = 11
  check package_pip_user_in_venv test -n "$(ls -d "$EX"/runs/conc1/venv/lib/python3*/site-packages/rosenbrock 2>/dev/null)"
  check package_pip_user_not_in_user_site test ! -e "$WORK/userbase"
  # a wheel is installed again, forced, for pip keeps an installed wheel of the same
  # version however it changed
  (cd "$EX" && "$WORK/pybin/python3" -m pip wheel --no-deps --no-build-isolation -q \
     -w "$EX/dist" studies/python_package >/dev/null 2>&1)
  whl=$(ls "$EX"/dist/*.whl 2>/dev/null | head -1)
  sed -e 's|runs/conc1|runs/whl|' -e "s|\[studies/python_package\]|[$whl]|" "$EX/conc1.yaml" >"$EX/whl.yaml"
  (cd "$EX" && PATH="$WORK/pybin:$PATH" "$TUNER" run whl.yaml --db="$WORK/whl.db" --quiet >/dev/null 2>&1); rc=$?
  check package_wheel_exit0 test -n "$whl" -a $rc -eq 0
  check package_wheel_forced grep -q "pip install --no-deps --force-reinstall .* $whl\$" "$EX/runs/whl/venv/install.log"
  # a stop signal while pip builds a package: pip's whole process group is stopped,
  # the build it runs too (it used to be left running, the tuner gone), and the run
  # exits 128 + the signal, nothing stored
  mkdir -p hang_pkg
  printf 'import os, time\nopen(os.environ["HANG_PIDFILE"], "w").write(str(os.getpid()))\ntime.sleep(300)\n' >hang_pkg/setup.py
  sed -e 's|runs/conc1|runs/hang|' -e "s|\[studies/python_package\]|[$WORK/hang_pkg]|" "$EX/conc1.yaml" >"$EX/hang.yaml"
  rm -f hang.pid
  (cd "$EX" && PATH="$WORK/pybin:$PATH" HANG_PIDFILE="$WORK/hang.pid" exec "$TUNER" run hang.yaml \
     --db="$WORK/hang.db" --quiet >"$WORK/hang.out" 2>&1) &
  tp=$!
  for _ in $(seq 1 300); do [ -s hang.pid ] && break; sleep 0.1; done
  build_pid=$(cat hang.pid 2>/dev/null)
  kill -TERM $tp
  wait $tp; rc=$?
  check package_stopped_exit143 test -n "$build_pid" -a $rc -eq 143
  check package_stopped_says grep -q "stopped by signal 15 (Terminated) while building the package folder .*/hang_pkg (pip wheel); its processes were stopped too, and nothing was stored" hang.out
  gone() { [ ! -e "/proc/$1" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
  for _ in $(seq 1 30); do gone "$build_pid" && break; sleep 0.1; done
  check package_stopped_build_gone gone "$build_pid"
  [ -n "$build_pid" ] && kill -9 "$build_pid" 2>/dev/null
  check package_stopped_not_stored test "$("$TUNER" list --db="$WORK/hang.db" --format=csv 2>/dev/null | grep -c '^hang,')" -eq 0
  # one folder listed twice (two spellings): built and installed once (a second lock of
  # it waited on the first for ever); run from a folder whose path has brackets: refused, since
  # pip would read them as extras
  sed -e 's|runs/conc1|runs/twice|' -e 's|\[studies/python_package\]|[studies/python_package, ./studies/python_package/]|' \
    "$EX/conc1.yaml" >"$EX/twice.yaml"
  (cd "$EX" && PATH="$WORK/pybin:$PATH" timeout 120 "$TUNER" run twice.yaml --db="$WORK/twice.db" --quiet >"$WORK/twice.out" 2>&1); rc=$?
  check package_listed_twice_exit0 test $rc -eq 0
  check package_listed_twice_once test "$(grep -c '^\$ .* pip wheel .*studies/python_package' "$EX/runs/twice/venv/install.log")" -eq 1
  mkdir -p "$WORK/br[1]" && cp "$EX/conc1.yaml" "$WORK/br[1]/b.yaml" && cp -R "$EX/studies" "$WORK/br[1]/"
  err=$(cd "$WORK/br[1]" && PATH="$WORK/pybin:$PATH" "$TUNER" run b.yaml --db="$WORK/br.db" --quiet 2>&1); rc=$?
  check package_bracket_folder_refused test $rc -ne 0
  check package_bracket_folder_says grep -q "which has '\[' in it: pip would read it as requirement syntax" <<<"$err"
  # a jobDir with ';' in it: the folder's wheel would be there, and pip would read the
  # ';' as an environment marker; the error says to change the jobDir; and a '%' in it
  # is no trouble for setuptools' configuration (ConfigParser reads '%%' as '%')
  sed -e 's|runs/conc1|runs/semi;colon|' "$EX/conc1.yaml" >"$EX/semi.yaml"
  err=$(cd "$EX" && PATH="$WORK/pybin:$PATH" timeout 120 "$TUNER" run semi.yaml --db="$WORK/semi.db" --quiet 2>&1); rc=$?
  check package_semicolon_jobdir_exit test $rc -ne 0
  check package_semicolon_jobdir_says grep -q "is built into a wheel under .*/runs/semi;colon/venv, which has ';' in it: pip would read it as requirement syntax; give the study a jobDir without it" <<<"$err"
  check package_semicolon_jobdir_before_venv test ! -e "$EX/runs/semi;colon/venv/bin/python3"
  sed -e 's|runs/conc1|runs/per%cent|' "$EX/conc1.yaml" >"$EX/percent.yaml"
  (cd "$EX" && PATH="$WORK/pybin:$PATH" timeout 120 "$TUNER" run percent.yaml --db="$WORK/percent.db" --quiet >/dev/null 2>&1); rc=$?
  check package_percent_jobdir_exit0 test $rc -eq 0
  check package_percent_jobdir_built_there test -n "$(ls "$EX"/runs/per%cent/venv/build/1/setuptools/*.egg-info 2>/dev/null)"
  # a FIFO where the install log goes: an error, not a hang
  mkdir -p "$EX/runs/fifo/venv" && mkfifo "$EX/runs/fifo/venv/install.log"
  sed 's|runs/conc1|runs/fifo|' "$EX/conc1.yaml" >"$EX/fifo.yaml"
  err=$(cd "$EX" && PATH="$WORK/pybin:$PATH" timeout 60 "$TUNER" run fifo.yaml --db="$WORK/fifo.db" --quiet 2>&1); rc=$?
  check package_fifo_log_exit1 test $rc -eq 1
  check package_fifo_log_says grep -q "install.log: it is not a regular file" <<<"$err"
  # a package pip cannot build: the run fails before anything is stored, with pip's words
  mkdir -p broken_pkg
  echo 'raise SystemExit("this setup.py is broken on purpose")' >broken_pkg/setup.py
  cat >broken.yaml <<'YAML'
trainingInput:
  pythonModule: broken.task
  packageUris: [broken_pkg]
  hyperparameters:
    params: [{parameterName: x, type: DOUBLE, minValue: 0, maxValue: 1}]
YAML
  err=$(PATH="$WORK/pybin:$PATH" "$TUNER" run broken.yaml --quiet 2>&1); rc=$?
  check package_broken_exit1 test $rc -eq 1
  check package_broken_says grep -q "building the package folder .*/broken_pkg (pip wheel) failed (exit status 1); its log (.*/runs/broken/venv/install.log) ends:" <<<"$err"
  check package_broken_tail grep -q "this setup.py is broken on purpose" <<<"$err"
  check package_broken_hint grep -q "^hint: " <<<"$err"
  "$TUNER" show broken >/dev/null 2>&1; rc=$?
  check package_broken_not_stored test $rc -eq 4
fi

# --- 20 trials of the real trainer, 2 in parallel, chief + 1 worker -------------------
spec real CUSTOM '"workerCount": 1,' 20 2 "[\"trainer\", \"--max_train_examples=1000\",
  \"--max_eval_examples=300\", \"--epochs=2\", \"--hidden_units=32\", \"--batch_size=100\"]" "" \
  '{"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 0.01, "maxValue": 0.5,
    "scaleType": "UNIT_LOG_SCALE"},
   {"parameterName": "optimizer", "type": "CATEGORICAL", "categoricalValues": ["momentum", "adam"]}'
sed -i 's/"score"/"accuracy"/' real.json
"$TUNER" run real.json --seed=11 --oversubscribe --quiet >real.out 2>&1; rc=$?
check real_exit0 test $rc -eq 0
check real_20_succeeded test "$(count_state real SUCCEEDED)" -eq 20
best=$("$TUNER" best real --format=json)
want=$("$TUNER" trials real --format=json | python3 -c '
import json, sys
t = json.load(sys.stdin)
print(max(t, key=lambda r: (r["objective"], -r["number"]))["number"])')
check real_best_named test "$(python3 -c 'import json,sys; print(json.load(sys.stdin)["number"])' <<<"$best")" = "$want"
check real_worker_writes_nothing grep -q "not the chief, so it writes no checkpoints" runs/real/1/logs/worker-0.log
check_mirrored real runs/real/1
check real_chief_model test -s runs/real/1/model.ckpt

# --- SIGKILL the tuner at several points, then resume: nothing lost or doubled ------
# Each kill lands mid-study, when at least `after` trials have succeeded (the store
# says so), and is checked to have: some trials done, not all.
sleeper='["/bin/sh", "-c", "sleep 1; echo \"{\\\"score\\\": \\\"2\\\", \\\"timestamp\\\": $(date +%s.%N)}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
for after in 1 4 8; do
  name="kill_after_$after"
  spec "$name" BASIC "" 12 2 "$sleeper"
  "$TUNER" run "$name.json" --seed=2 --quiet >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    [ "$(count_state "$name" SUCCEEDED 2>/dev/null)" -ge "$after" ] 2>/dev/null && break
    sleep 0.02
  done
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  done_before=$(count_state "$name" SUCCEEDED)
  check "${name}_landed_mid_study" test "$done_before" -ge "$after" -a "$done_before" -lt 12
  "$TUNER" resume "$name" --quiet >"$name.out" 2>&1; rc=$?
  check "${name}_resume_exit0" test $rc -eq 0
  rows=$("$TUNER" trials "$name" --format=csv | tail -n +2)
  check "${name}_12_trials" test "$(wc -l <<<"$rows")" -eq 12
  check "${name}_numbers_1_to_12" test "$(cut -d, -f1 <<<"$rows" | sort -n | uniq | tr '\n' ' ')" = "1 2 3 4 5 6 7 8 9 10 11 12 "
  check "${name}_all_succeeded" test "$(count_state "$name" SUCCEEDED)" -eq 12
done

# The store locked by another process for longer than the tuner waits (10 s): the run
# stops saying so, and the study is STOPPED (it was FAILED: the store failed the run,
# not the study); resume finishes it. The lock is held in a store of its own.
spec locked BASIC "" 8 2 "$sleeper"
TUNER_DB="$WORK/locked.db" "$TUNER" run locked.json --seed=2 --quiet >locked.out 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [ "$(TUNER_DB="$WORK/locked.db" count_state locked SUCCEEDED 2>/dev/null)" -ge 1 ] 2>/dev/null && break
  sleep 0.02
done
python3 - "$WORK/locked.db" <<'PY'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN IMMEDIATE")
time.sleep(13)
db.execute("ROLLBACK")
PY
wait $pid; rc=$?
check locked_run_exit1 test $rc -eq 1
check locked_run_says grep -q "database is locked (another process kept the store locked for more than 10 s" locked.out
check locked_study_stopped test "$(TUNER_DB="$WORK/locked.db" study_state locked)" = STOPPED
TUNER_DB="$WORK/locked.db" "$TUNER" resume locked --quiet >/dev/null 2>&1; rc=$?
check locked_resume_exit0 test $rc -eq 0
check locked_resume_all_succeeded test "$(TUNER_DB="$WORK/locked.db" count_state locked SUCCEEDED)" -eq 8

# A trainer trial killed mid-run resumes from its checkpoint.
spec ckpt BASIC "" 1 1 "[\"trainer\", \"--max_train_examples=6000\", \"--max_eval_examples=300\",
  \"--epochs=3\", \"--batch_size=50\", \"--checkpoint_every=20\", \"--threads=1\"]" "" \
  '{"parameterName": "learning_rate", "type": "DISCRETE", "discreteValues": [0.05]}'
sed -i 's/"score"/"accuracy"/' ckpt.json
"$TUNER" run ckpt.json --quiet >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 400); do
  ls runs/ckpt/1/checkpoints/ckpt-*.ckpt >/dev/null 2>&1 && break
  sleep 0.01
done
kill -9 $pid; wait $pid 2>/dev/null
check ckpt_killed_mid_run test -n "$(ls runs/ckpt/1/checkpoints/ckpt-*.ckpt 2>/dev/null)" -a \
  "$(count_state ckpt SUCCEEDED)" -eq 0
"$TUNER" resume ckpt --quiet >/dev/null 2>&1; rc=$?
check ckpt_resume_exit0 test $rc -eq 0
check ckpt_resumed_from_checkpoint grep -q "resumed from" runs/ckpt/1/logs/chief-0.log
check ckpt_succeeded test "$(count_state ckpt SUCCEEDED)" -eq 1

# --- Ctrl-C: replicas stopped, study STOPPED, resumable ----------------------------
# stopped_by SIG NAME: a study of two parallel trials, SIG once its replicas run: exit
# 130, the study STOPPED, its trials PENDING, no replica left.
stopped_by() {
  local sig=$1 name=$2 pid rc
  spec "$name" BASIC "" 4 2 '["/bin/sh", "-c", "sleep 30", "sh"]'
  "$TUNER" run "$name.json" --quiet --grace=1 >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do [ "$(procs_in "$name" '^sleep 30' | wc -l)" -eq 2 ] && break; sleep 0.05; done
  kill -"$sig" $pid; wait $pid; rc=$?
  local l
  l=sig$(tr 'A-Z' 'a-z' <<<"$sig")
  check ${l}_exit130 test $rc -eq 130
  check ${l}_study_stopped test "$(study_state "$name")" = STOPPED
  check ${l}_trials_pending test "$(count_state "$name" PENDING)" -eq 2
  check ${l}_no_orphans test -z "$(procs_in "$name" '[s]leep 30')"
}
stopped_by INT intr
# SIGHUP (the terminal closed, the ssh session dropped) stops the study the same way
stopped_by HUP hup
# a hangup that comes twice (the terminal, then the shell) is not a second Ctrl-C: the
# replicas keep their grace (they take a moment to stop), none is killed at once
spec hup2 BASIC "" 4 2 '["/bin/sh", "-c", "trap \"sleep 0.5; exit 0\" TERM; sleep 30 & wait", "sh"]'
"$TUNER" run hup2.json --quiet --grace=20 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 200); do [ "$(procs_in hup2 '^sleep 30' | wc -l)" -eq 2 ] && break; sleep 0.05; done
kill -HUP $pid; sleep 0.1; kill -HUP $pid; wait $pid; rc=$?
check sighup_twice_exit130 test $rc -eq 130
check sighup_twice_graceful test -z "$(event_details hup2 killed)"
# under nohup (SIGHUP ignored) a hangup changes nothing: the study runs to its end
spec nohup BASIC "" 1 1 '["/bin/sh", "-c", "sleep 1; echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
nohup "$TUNER" run nohup.json --quiet >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 200); do [ "$(count_state nohup RUNNING 2>/dev/null)" = 1 ] && break; sleep 0.05; done
kill -HUP $pid; wait $pid; rc=$?
check nohup_sighup_ignored test $rc -eq 0 -a "$(study_state nohup)" = SUCCEEDED
# A second Ctrl-C while replicas that ignore SIGTERM have their grace: killed at once,
# and each trial's events say so (no replica's exit is stored).
spec intr2 BASIC "" 4 2 '["/bin/sh", "-c", "trap \"\" TERM; sleep 30", "sh"]'
"$TUNER" run intr2.json --quiet --grace=60 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 200); do [ "$(procs_in intr2 '^sleep 30' | wc -l)" -eq 2 ] && break; sleep 0.05; done
kill -INT $pid
for _ in $(seq 1 200); do [ "$(event_details intr2 stopping | wc -l)" -ge 2 ] && break; sleep 0.05; done
kill -INT $pid; wait $pid; rc=$?
check sigint2_exit130 test $rc -eq 130
check sigint2_study_stopped test "$(study_state intr2)" = STOPPED
check sigint2_trials_pending test "$(count_state intr2 PENDING)" -eq 2
check sigint2_no_orphans test -z "$(procs_in intr2 '[s]leep 30')" # the sh too
check sigint2_killed_events test "$(event_details intr2 killed | grep -c 'a second signal killed every replica at once')" -eq 2

# --- hostile trials and files: nothing blocks, nothing wrong is recorded ---------------
# A replica that makes its metric file a FIFO: the loop never blocks on it, the trial
# fails saying why, and Ctrl-C / timeouts still work meanwhile.
fifo_metric='["/bin/sh", "-c", "rm -f $CLOUD_ML_HP_METRIC_FILE; mkfifo $CLOUD_ML_HP_METRIC_FILE; sleep 1", "sh"]'
spec fifo BASIC "" 1 1 "$fifo_metric"
timeout 60 "$TUNER" run fifo.json --quiet --poll=0.1 >fifo.out 2>&1; rc=$?
check fifo_metric_not_hung test $rc -ne 124
check fifo_metric_failed test "$(count_state fifo FAILED)" -eq 1
check fifo_metric_says_why grep -q "metric file .* is a FIFO, not a regular file" <<<"$(trial_field fifo error)"
spec fifo_slow BASIC "" 1 1 '["/bin/sh", "-c", "rm -f $CLOUD_ML_HP_METRIC_FILE; mkfifo $CLOUD_ML_HP_METRIC_FILE; sleep 30", "sh"]'
"$TUNER" run fifo_slow.json --quiet --poll=0.1 --grace=1 >/dev/null 2>&1 &
pid=$!
sleep 1.5
kill -TERM $pid
for _ in $(seq 1 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
check fifo_metric_sigterm_works sh -c "! kill -0 $pid 2>/dev/null"
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
check fifo_metric_one_event test "$(event_details fifo_slow metrics | wc -l)" -eq 1
# `tuner logs` on a log a replica made a FIFO, `tuner validate` on a FIFO or a device
spec fifolog BASIC "" 1 1 '["/bin/sh", "-c", "for a; do case $a in --job-dir=*) d=${a#--job-dir=};; esac; done; rm -f $d/logs/chief-0.log; mkfifo $d/logs/chief-0.log; echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
"$TUNER" run fifolog.json --quiet >/dev/null 2>&1
err=$(timeout 10 "$TUNER" logs fifolog 1 2>&1); rc=$?
check fifo_log_not_hung test $rc -ne 124 -a $rc -ne 0
check fifo_log_says_why grep -q "log .*chief-0.log is a FIFO, not a regular file" <<<"$err"
mkfifo spec.fifo
err=$(timeout 10 "$TUNER" validate spec.fifo 2>&1); rc=$?
check validate_fifo_exit2 test $rc -eq 2
check validate_fifo_says_why grep -q "spec spec.fifo is a FIFO, not a regular file" <<<"$err"
err=$(timeout 10 "$TUNER" validate /dev/zero 2>&1); rc=$?
check validate_dev_zero_exit2 test $rc -eq 2
check validate_dev_zero_says_why grep -q "/dev/zero is a character device" <<<"$err"

# Metric values: only NaN reported, a NaN last after finite ones, a timestamp from far
# in the future: the objective is the last value by arrival, and it must be a number.
metric_lines() { # the script that writes these JSON lines (one per argument) and exits 0
  local body=""
  for l in "$@"; do body="$body echo '$l' >> \$CLOUD_ML_HP_METRIC_FILE;"; done
  printf '["/bin/sh", "-c", "%s", "sh"]' "$(sed 's/"/\\"/g' <<<"$body")"
}
spec onlynan BASIC "" 1 1 "$(metric_lines '{"score": "nan", "global_step": "3"}')"
"$TUNER" run onlynan.json --quiet >/dev/null 2>&1
check nan_only_failed test "$(count_state onlynan FAILED)" -eq 1
check nan_only_says_what grep -q "the last value of the metric 'score' is nan (chief:0 at step 3)" <<<"$(trial_field onlynan error)"
spec lastnan BASIC "" 1 1 "$(metric_lines '{"score": "0.5", "global_step": "1"}' '{"score": "inf", "global_step": "2"}')"
"$TUNER" run lastnan.json --quiet >/dev/null 2>&1
check nan_last_failed test "$(count_state lastnan FAILED)" -eq 1
check nan_last_no_objective test "$(trial_field lastnan objective)" = None # not its earlier 0.5
spec farstamp BASIC "" 1 1 "$(metric_lines '{"score": "9", "timestamp": 1e308, "global_step": "1"}' '{"score": "0.25", "timestamp": 5, "global_step": "2"}')"
"$TUNER" run farstamp.json --quiet >/dev/null 2>&1
check timestamp_does_not_pin test "$(trial_field farstamp objective)" = 0.25
# a program appending lines without a timestamp that repeats a value: each line is a
# report, and the last one (0.5) is the objective, read at once or poll by poll
spec repeated BASIC "" 1 1 "$(metric_lines '{"score": "0.5"}' '{"score": "0.3"}' '{"score": "0.5"}')"
"$TUNER" run repeated.json --quiet >/dev/null 2>&1
check repeated_line_is_a_report test "$(trial_field repeated objective)" = 0.5
spec repeatslow BASIC "" 1 1 '["/bin/sh", "-c", "for v in 0.5 0.3 0.5; do echo {\\\"score\\\": $v} >> $CLOUD_ML_HP_METRIC_FILE; sleep 1.2; done", "sh"]'
"$TUNER" run repeatslow.json --quiet >/dev/null 2>&1
check repeated_line_polled test "$(trial_field repeatslow objective)" = 0.5
check repeated_line_three_values test "$("$TUNER" trials repeatslow 1 --format=json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" = 3
spec garbage BASIC "" 1 1 '["/bin/sh", "-c", "echo score=1 >> $CLOUD_ML_HP_METRIC_FILE; echo {score: 2} >> $CLOUD_ML_HP_METRIC_FILE", "sh"]'
"$TUNER" run garbage.json --quiet >/dev/null 2>&1
check garbage_failed test "$(count_state garbage FAILED)" -eq 1
check garbage_says_why grep -q "2 lines of .*chief-0.metrics are not a JSON object" <<<"$(trial_field garbage error)"

# A store that fills up mid-trial: the trial is not recorded SUCCEEDED with part of its
# measurements; once there is room, resume runs it again and gets it right.
cat >full.sh <<'SH'
sleep 0.3
i=1; while [ $i -le 100 ]; do echo "{\"score\": \"$i\", \"global_step\": \"$i\"}" >>"$CLOUD_ML_HP_METRIC_FILE"; i=$((i + 1)); done
sleep 0.3
SH
spec full BASIC "" 1 1 "[\"/bin/sh\", \"$PWD/full.sh\"]"
"$TUNER" create full.json --db=full.db >/dev/null
size=$(( $(stat -c %s full.db) / 1024 + 48 ))
# (a file-size limit: without root there is no small disk to fill; the tuner ignores the
# SIGXFSZ that would kill it at the write, so the write fails and the store says why)
(ulimit -f $size; "$TUNER" resume full --db=full.db --quiet --poll=0.05 >full.out 2>&1); rc=$?
check full_store_stops test $rc -eq 1
check full_store_says grep -q "the store reached the file-size limit, ulimit -f); hint: raise the limit" full.out
check full_trial_not_succeeded test "$(TUNER_DB=full.db count_state full SUCCEEDED)" -eq 0
"$TUNER" resume full --db=full.db --quiet >full2.out 2>&1; rc=$?
check full_resume_exit0 test $rc -eq 0
check full_resume_right_objective test "$(TUNER_DB=full.db trial_field full objective)" = 100

# A replica's own child outlives a SIGKILLed tuner (only direct children get the
# parent-death signal): the resumed tuner kills it before it writes on.
orphan="[\"/bin/sh\", \"-c\", \"if [ -e $PWD/orphan.ran ]; then echo '{\\\"score\\\": \\\"1\\\"}' > \$CLOUD_ML_HP_METRIC_FILE; exit 0; fi; touch $PWD/orphan.ran; (sleep 313; echo late > $PWD/orphan.late) & sleep 30\", \"sh\"]"
spec orphan BASIC "" 1 1 "$orphan"
"$TUNER" run orphan.json --quiet >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 50); do [ -n "$(procs_in orphan '[s]leep 313')" ] && break; sleep 0.1; done
check orphan_attempt_stored_while_running test "$(trial_field orphan attempts)" = 1
kill -9 $pid; wait $pid 2>/dev/null
sleep 0.3
check orphan_left_behind test -n "$(procs_in orphan '[s]leep 313')"
"$TUNER" resume orphan 2>orphan.err >/dev/null
check orphan_killed_on_resume test -z "$(procs_in orphan '[s]leep 313')"
check orphan_said grep -Eq "killed [0-9]+ process(es)? an earlier run of the study left behind" orphan.err
check orphan_trial_ran_again test "$(count_state orphan SUCCEEDED)" -eq 1
# the killed run counts: the trial was run twice (it said 1, its first start never stored)
check orphan_attempts_counted test "$(trial_field orphan attempts)" = 2
# What a chief leaves behind when it succeeds, in its process group or out of it
# (setsid, and setsid with an environment of its own, which no search by the trial's
# variables finds), is gone when the trial is over.
spec strays BASIC "" 1 1 '["/bin/sh", "-c", "sleep 314 & setsid sleep 315 & env -i setsid sleep 316 </dev/null >/dev/null 2>&1 & echo $! > $(dirname $CLOUD_ML_HP_METRIC_FILE)/envi.pid; sleep 0.5; echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
"$TUNER" run strays.json --quiet >/dev/null 2>&1
check strays_trial_succeeded test "$(count_state strays SUCCEEDED)" -eq 1
check strays_group_killed test -z "$(procs_in strays '[s]leep 314')"
check strays_setsid_killed test -z "$(procs_in strays '[s]leep 315')"
envi_pid=$(cat runs/strays/1/metrics/envi.pid 2>/dev/null)
check strays_env_i_setsid_killed test -n "$envi_pid" -a "$(ps -o comm= -p "${envi_pid:-0}" 2>/dev/null)" != sleep
check strays_told grep -q "killed 2 processes the job left behind outside" <<<"$(event_details strays stopping)"

# A run that another tuner's lock refuses stores nothing: it can be run later.
spec holder BASIC "" 1 1 '["/bin/sh", "-c", "sleep 2; echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
"$TUNER" run holder.json --quiet --db=holder.db >/dev/null 2>&1 &
pid=$!
sleep 0.5
sed 's/"jobId": "holder"/"jobId": "second"/; s|runs/holder|runs/holder|' holder.json >second.json
err=$("$TUNER" run second.json --quiet --db=other.db 2>&1); rc=$?
check lock_refused test $rc -eq 1
check lock_refused_says grep -q "study second cannot run: its job folder is in use by another tuner process (.*/runs/holder/.tuner.lock is held by tuner run (pid $pid))" <<<"$err"
check lock_refused_stores_nothing test -z "$("$TUNER" list --db=other.db --format=csv | tail -n +2)"
wait $pid
# ... and the folder is holder's now: second needs one of its own
err=$("$TUNER" run second.json --quiet --db=other.db 2>&1); rc=$?
check lock_then_folder_taken test $rc -eq 2
rm -rf runs/holder
"$TUNER" run second.json --quiet --db=other.db >/dev/null 2>&1; rc=$?
check lock_then_runs test $rc -eq 0

# --- a job folder belongs to one study ---------------------------------------------
# A new study never takes another's trial folders (their checkpoints and results for
# its own): not from a second store, not under another --job-id, not after its store
# was deleted, not from a tuner that left no mark.
spec own BASIC "" 2 1 '["/bin/sh", "-c", "echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
"$TUNER" run own.json --quiet --db=own.db >/dev/null 2>&1; rc=$?
check own_runs test $rc -eq 0
check own_marked python3 -c '
import json, sys
m = json.load(open("runs/own/.tuner-study"))
sys.exit(0 if (m["study"], m["study_id"], m["store"]) == ("own", 1, sys.argv[1]) and len(m["store_id"]) == 32 else m)' "$WORK/own.db"
check own_mark_whole test -z "$(ls -A runs/own | grep -v '^[0-9]*$' | grep -v '^.tuner.lock$' | grep -v '^.tuner-study$')"
err=$("$TUNER" run own.json --quiet --db=own2.db 2>&1); rc=$?
check own_second_store_exit2 test $rc -eq 2
check own_second_store_says grep -q "^tuner: error: job folder $WORK/runs/own belongs to study own of the store $WORK/own.db;" <<<"$err"
check own_second_store_hint grep -q "^hint: give study own a folder of its own: trainingInput.jobDir .* or delete $WORK/runs/own if" <<<"$err"
check own_second_store_stores_nothing test -z "$("$TUNER" list --db=own2.db --format=csv | tail -n +2)"
err=$("$TUNER" create own.json --db=own2.db 2>&1); rc=$?
check own_create_refused test $rc -eq 2
err=$("$TUNER" run own.json --job-id=own_b --quiet --db=own.db 2>&1); rc=$?
check own_job_id_same_dir_refused test $rc -eq 2
check own_job_id_same_dir_says grep -q "belongs to study own of this store" <<<"$err"
check own_job_id_stores_nothing test "$("$TUNER" list --db=own.db --format=csv | tail -n +2 | wc -l)" -eq 1
sed 's|"jobDir": "runs/own",||' own.json >own_nodir.json
"$TUNER" run own_nodir.json --job-id=own_c --quiet --db=own.db >/dev/null 2>&1; rc=$?
check own_job_id_own_dir_runs test $rc -eq 0 -a -f runs/own_c/.tuner-study
mkdir -p kept && mv own.db* kept/
err=$("$TUNER" run own.json --quiet --db=own.db 2>&1); rc=$?
check own_new_store_same_path_refused test $rc -eq 2
check own_new_store_same_path_says grep -q "belongs to study own of an earlier store $WORK/own.db" <<<"$err"
rm -f own.db* && mv kept/own.db* .
# a folder an older tuner left: trial folders and no mark
rm runs/own/.tuner-study
err=$("$TUNER" run own.json --quiet --db=own2.db 2>&1); rc=$?
check own_unmarked_refused test $rc -eq 2
check own_unmarked_says grep -q "job folder $WORK/runs/own holds trial folders (1, 2) that are not this study's, and no mark" <<<"$err"
# ... but one without trial folders is free (a lock file, a venv)
mkdir -p runs/free/venv && touch runs/free/.tuner.lock
sed -e 's/"jobId": "own"/"jobId": "free"/' -e 's|runs/own|runs/free|' own.json >free.json
"$TUNER" run free.json --quiet --db=own2.db >/dev/null 2>&1; rc=$?
check own_unmarked_empty_runs test $rc -eq 0
# a job folder that cannot be made is refused naming what is in the way
touch notafolder
sed -e 's/"jobId": "own"/"jobId": "infile"/' -e 's|runs/own|notafolder/runs|' own.json >infile.json
err=$("$TUNER" run infile.json --quiet --db=own2.db 2>&1); rc=$?
check own_dir_unmakeable_refused test $rc -eq 1
check own_dir_unmakeable_says grep -q "^tuner: error: cannot create folder $WORK/notafolder: a file is in the way" <<<"$err"
check own_dir_unmakeable_stores_nothing test -z "$("$TUNER" list --db=own2.db --format=csv | grep infile)"
# resume: a study of an older tuner keeps its own unmarked folder (its trials there)
# and marks it; a folder another study took is refused
sed -e 's/"jobId": "own"/"jobId": "oldtuner"/' -e 's|runs/own|runs/oldtuner|' -e 's/"maxTrials": 2/"maxTrials": 3/' own.json >oldtuner.json
"$TUNER" create oldtuner.json --db=own.db >/dev/null && "$TUNER" ask oldtuner --db=own.db >/dev/null
rm runs/oldtuner/.tuner-study && mkdir -p runs/oldtuner/1 runs/oldtuner/5
err=$("$TUNER" resume oldtuner --quiet --db=own.db 2>&1); rc=$?
check own_resume_unmarked_beyond_refused test $rc -eq 2
check own_resume_unmarked_beyond_says grep -q "holds trial folder (5) that is not this study's" <<<"$err"
rmdir runs/oldtuner/5
"$TUNER" resume oldtuner --quiet --db=own.db >/dev/null 2>&1; rc=$?
check own_resume_unmarked_own_trials test $rc -eq 0
check own_resume_unmarked_ran test "$(TUNER_DB=own.db count_state oldtuner SUCCEEDED)" -eq 3
check own_resume_marks grep -q '"study": "oldtuner"' runs/oldtuner/.tuner-study
"$TUNER" create own_nodir.json --job-id=again --db=own.db >/dev/null && "$TUNER" cancel again --db=own.db >/dev/null
check own_resume_same_study "$TUNER" resume again --quiet --db=own.db
sed -e 's/"jobId": "own"/"jobId": "taker"/' -e 's|runs/own|runs/taker|' own.json >taker.json
"$TUNER" create taker.json --db=own.db >/dev/null
rm -rf runs/taker && "$TUNER" create taker.json --db=own2.db >/dev/null
err=$("$TUNER" resume taker --quiet --db=own.db 2>&1); rc=$?
check own_resume_taken_refused test $rc -eq 2
check own_resume_taken_says grep -q "belongs to study taker of the store $WORK/own2.db" <<<"$err"
check own_resume_taken_hint grep -q "^hint: the trials there are not study taker's; move $WORK/runs/taker away" <<<"$err"
check own_resume_taken_not_run test "$(TUNER_DB=own.db study_state taker)" = CREATED
# a damaged mark is named and said to be damaged, whatever is wrong with it: resume's
# hint says how to take the folder back if it is the study's (delete the mark: its own
# trial folders are then accepted), run's to give the new study another folder
sed -e 's/"jobId": "own"/"jobId": "dmg"/' -e 's|runs/own|runs/dmg|' own.json >dmg.json
"$TUNER" create dmg.json --db=own.db >/dev/null && "$TUNER" ask dmg --db=own.db >/dev/null
mkdir -p runs/dmg/1 && echo '{"study": "dmg", "stu' >runs/dmg/.tuner-study
err=$("$TUNER" resume dmg --quiet --db=own.db 2>&1); rc=$?
check own_damaged_resume_refused test $rc -eq 2
check own_damaged_resume_says grep -q "^tuner: error: job folder mark $WORK/runs/dmg/.tuner-study is damaged (not the JSON object naming a study and its store that the tuner writes): whose the folder is cannot be told$" <<<"$err"
check own_damaged_resume_hint grep -q "^hint: if $WORK/runs/dmg is study dmg's, delete the damaged mark $WORK/runs/dmg/.tuner-study and resume again" <<<"$err"
check own_damaged_resume_not_run test "$(TUNER_DB=own.db study_state dmg)" = CREATED
err=$("$TUNER" run dmg.json --quiet --db=own2.db 2>&1); rc=$?
check own_damaged_run_refused test $rc -eq 2
check own_damaged_run_says grep -q "^tuner: error: job folder mark $WORK/runs/dmg/.tuner-study is damaged" <<<"$err"
check own_damaged_run_hint grep -q "^hint: give study dmg a folder of its own" <<<"$err"
check own_damaged_run_stores_nothing test -z "$("$TUNER" list --db=own2.db --format=csv | grep dmg)"
echo '{"study": "dmg", "study_id": 0, "store": "", "store_id": ""}' >runs/dmg/.tuner-study
err=$("$TUNER" resume dmg --quiet --db=own.db 2>&1); rc=$?
check own_damaged_fields_refused test $rc -eq 2
check own_damaged_fields_says grep -q "^tuner: error: job folder mark $WORK/runs/dmg/.tuner-study is damaged (not the JSON object" <<<"$err"
rm runs/dmg/.tuner-study && mkdir runs/dmg/.tuner-study
err=$("$TUNER" resume dmg --quiet --db=own.db 2>&1); rc=$?
check own_damaged_folder_refused test $rc -eq 2
check own_damaged_folder_says grep -q "^tuner: error: job folder mark $WORK/runs/dmg/.tuner-study is damaged (a folder, not a file)" <<<"$err"
if [ "$(id -u)" != 0 ]; then # root reads it all the same
  rmdir runs/dmg/.tuner-study && echo '{}' >runs/dmg/.tuner-study && chmod 000 runs/dmg/.tuner-study
  err=$("$TUNER" resume dmg --quiet --db=own.db 2>&1); rc=$?
  check own_unreadable_mark_refused test $rc -eq 1
  check own_unreadable_mark_says grep -q "^tuner: error: cannot open job folder mark $WORK/runs/dmg/.tuner-study: $(python3 -c 'import os; print(os.strerror(13))')" <<<"$err"
  check own_unreadable_mark_hint grep -q "^hint: the tuner reads $WORK/runs/dmg/.tuner-study to tell whose folder" <<<"$err"
  rm -f runs/dmg/.tuner-study && mkdir runs/dmg/.tuner-study
fi
rmdir runs/dmg/.tuner-study
"$TUNER" resume dmg --quiet --db=own.db >/dev/null 2>&1; rc=$?
check own_damaged_removed_resumes test $rc -eq 0 -a "$(TUNER_DB=own.db count_state dmg SUCCEEDED)" -eq 2
check own_damaged_removed_marks grep -q '"study": "dmg"' runs/dmg/.tuner-study
# a run whose claim fails after its study is stored (the mark's temporary file cannot
# be made: a folder by its name, which stops root too; the name has the pid, which
# exec keeps) leaves the study STOPPED, not RUNNING with nothing running it, and says
# that resume marks the folder; resume does once the way is clear
sed -e 's/"jobId": "own"/"jobId": "noclaim"/' -e 's|runs/own|runs/noclaim|' own.json >noclaim.json
err=$(sh -c 'mkdir -p runs/noclaim/.tuner-study.$$.tmp && exec "$0" run noclaim.json --quiet --db=own.db' "$TUNER" 2>&1); rc=$?
check claim_fails_exit1 test $rc -eq 1
check claim_fails_says grep -q "^tuner: error: cannot write $WORK/runs/noclaim/.tuner-study.[0-9]*.tmp: Is a directory" <<<"$err"
check claim_fails_hint grep -q "^hint: study noclaim is stored; \`tuner resume noclaim\` marks $WORK/runs/noclaim its own once it can be written" <<<"$err"
check claim_fails_stopped test "$(TUNER_DB=own.db study_state noclaim)" = STOPPED
check claim_fails_no_trial test -z "$(TUNER_DB=own.db "$TUNER" trials noclaim --format=csv | tail -n +2)"
check claim_fails_no_mark test ! -e runs/noclaim/.tuner-study
rm -r runs/noclaim/.tuner-study.*.tmp
"$TUNER" resume noclaim --quiet --db=own.db >/dev/null 2>&1; rc=$?
check claim_fails_resumed test $rc -eq 0 -a "$(TUNER_DB=own.db count_state noclaim SUCCEEDED)" -eq 2
check claim_fails_resume_marks grep -q '"study": "noclaim"' runs/noclaim/.tuner-study

# --- cancel a running study -----------------------------------------------------------
spec canc BASIC "" 4 1 "[\"/bin/sh\", \"-c\", \"[ -e $PWD/canc.resumed ] || exec sleep 30; echo '{\\\"score\\\": \\\"1\\\"}' > \$CLOUD_ML_HP_METRIC_FILE\", \"sh\"]"
"$TUNER" run canc.json --quiet --grace=1 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ "$(count_state canc RUNNING 2>/dev/null)" = 1 ] && break; sleep 0.05; done
"$TUNER" cancel canc >/dev/null
wait $pid; rc=$?
check cancel_run_exit130 test $rc -eq 130
check cancel_state test "$(study_state canc)" = CANCELLED
check cancel_trial_cancelled test "$(count_state canc CANCELLED)" -eq 1
# resume takes the cancel back: the trial it cut short runs again (it counted toward
# maxTrials and never ran again), then the rest
touch canc.resumed
"$TUNER" resume canc --quiet >/dev/null 2>&1; rc=$?
check cancel_resume_exit0 test $rc -eq 0 -a "$(study_state canc)" = SUCCEEDED
check cancel_resume_trial_ran_again test "$(count_state canc SUCCEEDED)" -eq 4 -a "$(count_state canc CANCELLED)" -eq 0

# --- ask and tell ----------------------------------------------------------------
cat >at.json <<'JSON'
{"jobId": "asktell", "trainingInput": {"hyperparameters": {"goal": "MINIMIZE",
 "hyperparameterMetricTag": "loss", "maxTrials": 10, "algorithm": "RANDOM_SEARCH",
 "params": [{"parameterName": "lr", "type": "DOUBLE", "minValue": 0.001, "maxValue": 1,
             "scaleType": "UNIT_LOG_SCALE"}]}}}
JSON
err=$("$TUNER" run at.json 2>&1); rc=$?
check ask_tell_spec_needs_command_for_run test $rc -eq 2
"$TUNER" create at.json --seed=4 >/dev/null
check create_ok test $? -eq 0
for i in 1 2 3 4 5 6 7 8; do "$TUNER" ask asktell >"ask$i.json" & done
wait
nums=$(cat ask*.json | python3 -c 'import sys, json; print(" ".join(sorted(str(json.loads(l)["trial"]) for l in sys.stdin)))')
check ask_concurrent_distinct test "$(tr ' ' '\n' <<<"$nums" | sort -u | wc -l)" -eq 8
rm -f tell.errs
for i in 1 2 3 4 5 6 7; do ("$TUNER" tell asktell "$i" "0.$i" >/dev/null || echo "tell $i: $?" >>tell.errs) & done
"$TUNER" tell asktell 8 --failed >/dev/null
wait
check tell_concurrent test ! -s tell.errs
check tell_best grep -q '"number": 1' <<<"$("$TUNER" best asktell --format=json)"
err=$("$TUNER" tell asktell 3 0.5 2>&1); rc=$?
check tell_twice_refused grep -q "already SUCCEEDED" <<<"$err"
err=$("$TUNER" tell asktell 99 0.5 2>&1); rc=$?
check tell_unknown_exit4 test $rc -eq 4
"$TUNER" ask asktell >/dev/null && "$TUNER" ask asktell >/dev/null
err=$("$TUNER" ask asktell 2>&1); rc=$?
check ask_exhausted_exit5 test $rc -eq 5
# a negative objective is a value, not an option (a loss below zero, a negated score)
"$TUNER" tell asktell 9 -0.709 >/dev/null 2>tell_neg.err; rc=$?
check tell_negative_value test $rc -eq 0
check tell_negative_best test "$("$TUNER" best asktell --format=json | python3 -c 'import json,sys; b=json.load(sys.stdin); print(b["number"], b["objective"])')" = "9 -0.709"
# a VALUE is a decimal number: not hexadecimal (strtod's 0x10 is 16), nan or inf
for v in 0x10 nan inf 1e999 1e " 1" .; do
  err=$("$TUNER" tell asktell 10 "$v" 2>&1); rc=$?
  check "tell_value_${v// /_}_refused" test $rc -eq 2
done
check tell_value_says grep -q "VALUE must be a finite decimal number (as 0.873, -2, 1.5e-3), not '.'" <<<"$err"
for v in -inf -nan; do # values too, refused as such (not "unknown option")
  err=$("$TUNER" tell asktell 10 "$v" 2>&1); rc=$?
  check "tell_value_${v}_refused" test $rc -eq 2
  check "tell_value_${v}_says" grep -q "VALUE must be a finite decimal number .*, not '$v'" <<<"$err"
done
check tell_value_refused_stores_nothing test "$(trial_field asktell state | sed -n 10p)" = PENDING
"$TUNER" tell asktell 10 +1.5E-1 >/dev/null; rc=$?
check tell_value_exponent test $rc -eq 0 -a "$(trial_field asktell objective | sed -n 10p)" = 0.15
# the tell of its last trial ended the study, as a run ends it: later asks and tells
# find it over
check ask_tell_last_tell_ends_study test "$(study_state asktell)" = SUCCEEDED
err=$("$TUNER" ask asktell 2>&1); rc=$?
check ask_tell_ended_ask_exit5 test $rc -eq 5
check ask_tell_ended_ask_says grep -q "study asktell is SUCCEEDED: it hands out no more trials" <<<"$err"
# the sampler's note reaches the user of ask as it does a run's: objectives of ±1e308
# overflow the Gaussian process, which says so and suggests a random point
cat >gpnote.json <<'JSON'
{"jobId": "gpnote", "trainingInput": {"hyperparameters": {"goal": "MINIMIZE",
 "hyperparameterMetricTag": "loss", "maxTrials": 5, "bayesianOptimization": {"initialTrials": 2},
 "params": [{"parameterName": "lr", "type": "DOUBLE", "minValue": 0.001, "maxValue": 1}]}}}
JSON
"$TUNER" create gpnote.json >/dev/null && "$TUNER" ask gpnote >/dev/null && "$TUNER" ask gpnote >/dev/null
"$TUNER" tell gpnote 1 1e308 >/dev/null && "$TUNER" tell gpnote 2 -1e308 >/dev/null
out=$("$TUNER" ask gpnote 2>ask_note.err); rc=$?
check ask_note_exit0 test $rc -eq 0 -a -n "$out"
check ask_note_said grep -q "tuner: note: trial 3: the Gaussian process could not be fitted (gp: the mean or spread of y overflows): random suggestion" ask_note.err
# a cancelled ask/tell study: its trials out are CANCELLED (they stayed PENDING, with no
# tell to take them), and resume says it cannot carry it on (it pointed to ask and tell,
# which refuse a cancelled study)
sed 's/"asktell"/"atcancel"/' at.json >atcancel.json
"$TUNER" create atcancel.json >/dev/null && "$TUNER" ask atcancel >/dev/null && "$TUNER" cancel atcancel >/dev/null
check ask_tell_cancel_trials_out test "$(trial_field atcancel state)" = CANCELLED
err=$("$TUNER" resume atcancel 2>&1); rc=$?
check ask_tell_cancel_resume_exit2 test $rc -eq 2
check ask_tell_cancel_resume_says grep -q "study atcancel is CANCELLED and has no command to run: .tuner resume. cannot carry it on, and ask and tell take no more of its trials" <<<"$err"
# tells of one trial at the same moment: one is stored, the others find it finished
sed 's/"asktell"/"tellrace"/' at.json >tellrace.json
"$TUNER" create tellrace.json >/dev/null && "$TUNER" ask tellrace >/dev/null
rm -f race.out
for i in 1 2 3 4 5 6; do ("$TUNER" tell tellrace 1 "0.$i" >/dev/null 2>"race$i.err"; echo "$i $?" >>race.out) & done
wait
check tell_race_one_stored test "$(awk '$2 == 0' race.out | wc -l)" -eq 1
check tell_race_others_refused test "$(awk '$2 == 2' race.out | wc -l)" -eq 5
check tell_race_others_say_finished test "$(cat race?.err | grep -c "trial 1 of tellrace is already SUCCEEDED")" -eq 5
check tell_race_value_kept test "$(trial_field tellrace objective)" = "0.$(awk '$2 == 0 {print $1}' race.out)"
# ask and tell never change a study that a tuner runs: the lock, held by `tuner run`
# (or `resume`), refuses them while asks and tells share it among themselves
spec busy BASIC "" 4 2 '["/bin/sh", "-c", "sleep 2; echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
"$TUNER" run busy.json --quiet --db=busy.db >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 50); do [ "$(TUNER_DB=busy.db count_state busy RUNNING)" -ge 1 ] && break; sleep 0.1; done
err=$("$TUNER" tell busy 1 0.5 --db=busy.db 2>&1); rc=$?
check tell_while_run_exit2 test $rc -eq 2
check tell_while_run_says grep -q "^tuner: error: study busy is being run by another tuner process (.*/runs/busy/.tuner.lock is held by tuner run (pid $pid)): \`tuner tell\` would change it" <<<"$err"
check tell_while_run_hint grep -q "^hint: ask and tell are for studies whose trials run outside the tuner" <<<"$err"
err=$("$TUNER" ask busy --db=busy.db 2>&1); rc=$?
check ask_while_run_exit2 test $rc -eq 2
wait $pid; rc=$?
check busy_run_exit0 test $rc -eq 0
check busy_run_untouched test "$(TUNER_DB=busy.db trial_field busy objective | tr '\n' ' ')" = "1 1 1 1 "
check ask_after_run_exit5 test "$("$TUNER" ask busy --db=busy.db >/dev/null 2>&1; echo $?)" -eq 5
# A holder that wrote no name (flock here) is not given the name of the run that
# ended: the file keeps it, but its pid is of no process now. A pid of another host
# says nothing here, so that name stands.
check busy_lock_names_run grep -q "^tuner run (pid $pid)$" runs/busy/.tuner.lock
flock -x runs/busy/.tuner.lock sleep 3 &
lpid=$!
sleep 0.3
err=$("$TUNER" tell busy 1 0.5 --db=busy.db 2>&1); rc=$?
check tell_while_locked_unknown_holder test $rc -eq 2
check tell_while_locked_not_dead_run grep -q "is held by a process that has not written its name in it; tuner run (pid $pid), whose name is there, has ended)" <<<"$err"
kill $lpid 2>/dev/null; wait $lpid 2>/dev/null
printf 'tuner run (pid 99999999)\nhost elsewhere.invalid\n' >runs/busy/.tuner.lock
flock -x runs/busy/.tuner.lock sleep 3 &
lpid=$!
sleep 0.3
err=$("$TUNER" tell busy 1 0.5 --db=busy.db 2>&1); rc=$?
check tell_while_locked_other_host test $rc -eq 2
check tell_while_locked_other_host_named grep -q "is held by tuner run (pid 99999999))" <<<"$err"
kill $lpid 2>/dev/null; wait $lpid 2>/dev/null
# asks and tells share the lock: one goes on beside another's hold, a resume does not
"$TUNER" create at.json --job-id=atdone >/dev/null
flock -s runs/atdone/.tuner.lock sleep 3 &
lpid=$!
sleep 0.3
check ask_beside_shared_holder test "$("$TUNER" ask atdone 2>/dev/null | cut -c1-11)" = '{"trial": 1'
err=$("$TUNER" resume atdone --quiet 2>&1); rc=$?
check resume_beside_ask_refused test $rc -eq 1
check resume_beside_ask_says grep -q "study atdone is in use by another tuner process (.*held by a \`tuner ask\` or \`tuner tell\` of the study" <<<"$err"
kill $lpid 2>/dev/null; wait $lpid 2>/dev/null
# a finished study takes no more results (its best is final)
"$TUNER" cancel atdone >/dev/null
err=$("$TUNER" tell atdone 1 0.5 2>&1); rc=$?
check tell_finished_refused test $rc -eq 2
check tell_finished_says grep -q "study atdone is CANCELLED: it takes no more results" <<<"$err"
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("update studies set state = ? where name = ?", ("SUCCEEDED", "atdone")); c.commit()' "$TUNER_DB"
err=$("$TUNER" tell atdone 1 0.5 2>&1); rc=$?
check tell_succeeded_refused test $rc -eq 2 -a "$(trial_field atdone state)" = CANCELLED # as the cancel left it

# --- conditional parameters: only the active ones reach a trial and the tables ------
# momentum exists only under sgd, nesterov only under momentum 0.9.
cond_params='{"parameterName": "optimizer", "type": "CATEGORICAL", "categoricalValues": ["sgd", "adam"],
   "conditionalParameterSpecs": [{"parentCategoricalValues": {"values": ["sgd"]}, "parameterSpec":
     {"parameterName": "momentum", "type": "DISCRETE", "discreteValues": [0.5, 0.9],
      "conditionalParameterSpecs": [{"parentDiscreteValues": {"values": [0.9]}, "parameterSpec":
        {"parameterName": "nesterov", "type": "CATEGORICAL", "categoricalValues": ["no", "yes"]}}]}}]},
  {"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}'
cat >argv.sh <<'SH'
#!/bin/sh
for a; do case $a in --job-dir=*) d=${a#--job-dir=};; esac; done
echo "$@" > "$d/argv"
echo '{"score": "1"}' > "$CLOUD_ML_HP_METRIC_FILE"
SH
chmod +x argv.sh
spec cond BASIC "" 8 2 "[\"$WORK/argv.sh\"]" "" "$cond_params"
"$TUNER" run cond.json --seed=3 --quiet >cond.out 2>&1
check cond_run_exit0 test $? -eq 0
check cond_flags_active_only python3 -c '
import glob, sys
argvs = [open(f).read().split() for f in glob.glob("runs/cond/*/argv")]
if len(argvs) != 8: sys.exit("%d trials ran" % len(argvs))
for a in argvs:
    flags = {f.split("=")[0] for f in a}
    sgd = "--optimizer=sgd" in a
    if ("--momentum" in flags) != sgd: sys.exit("momentum flag and optimizer disagree: %s" % a)
    if ("--nesterov" in flags) != ("--momentum=0.9" in a): sys.exit("nesterov flag: %s" % a)
    if "--x" not in flags: sys.exit("x missing: %s" % a)'
check cond_csv_empty_cells python3 -c '
import csv, sys
rows = list(csv.DictReader(sys.stdin))
if len(rows) != 8: sys.exit("%d rows" % len(rows))
for r in rows:
    if (r["momentum"] != "") != (r["optimizer"] == "sgd"): sys.exit("row %s" % r)
    if (r["nesterov"] != "") != (r["momentum"] == "0.9"): sys.exit("row %s" % r)' \
  <<<"$("$TUNER" trials cond --format=csv)"
check cond_json_absent python3 -c '
import json, sys
for t in json.load(sys.stdin):
    if ("momentum" in t["params"]) != (t["params"]["optimizer"] == "sgd"): sys.exit(str(t))' \
  <<<"$("$TUNER" trials cond --format=json)"
# ask/tell on the grid of the tree: (sgd: 0.5, 0.9 no, 0.9 yes; adam) * x in {0, 1}
# = 8 points, each once, then exhausted
sed -e 's/"RANDOM_SEARCH"/"GRID_SEARCH"/' -e 's/"jobId": "cond"/"jobId": "condgrid"/' \
    -e 's/"type": "DOUBLE", "minValue": 0, "maxValue": 1/"type": "INTEGER", "minValue": 0, "maxValue": 1/' \
    -e 's|runs/cond"|runs/condgrid"|' cond.json >condgrid.json
"$TUNER" create condgrid.json >/dev/null
for i in 1 2 3 4 5 6 7 8; do "$TUNER" ask condgrid >"cask$i.json" && "$TUNER" tell condgrid "$i" "0.$i" >/dev/null; done
err=$("$TUNER" ask condgrid 2>&1); rc=$?
check cond_grid_exhausted_exit5 test $rc -eq 5
check cond_grid_each_once python3 -c '
import json, sys
pts = [json.dumps(json.load(open("cask%d.json" % i))["parameters"], sort_keys=True) for i in range(1, 9)]
if len(set(pts)) != 8: sys.exit("repeated: %s" % pts)
if sum("momentum" in p for p in pts) != 6: sys.exit("momentum in %s" % pts)'
check cond_trials_table grep -q "^ *8  SUCCEEDED  *0.8  adam  *1 " <<<"$("$TUNER" trials condgrid)"

# --- several metrics (Vertex AI's "metrics"): each trial keeps all; best is the front ----
# score = x (maximize) and a cost (minimize) by x: 1 -> 1, 2 -> 3, 3 -> 2, 4 -> 5. The
# Pareto front is x = 1, 3, 4 (x = 2 is beaten by x = 3 in both).
cat >two.sh <<'SH'
#!/bin/sh
for a; do case $a in --x=*) x=${a#--x=};; esac; done
case $x in 1*) c=1;; 2*) c=3;; 3*) c=2;; *) c=5;; esac
echo "{\"score\": \"$x\", \"cost\": \"$c\"}" > "$CLOUD_ML_HP_METRIC_FILE"
SH
chmod +x two.sh
cat >two.json <<JSON
{"jobId": "two", "trainingInput": {"scaleTier": "BASIC", "jobDir": "runs/two",
 "command": ["$WORK/two.sh"], "hyperparameters": {
  "metrics": [{"metricId": "score", "goal": "MAXIMIZE"}, {"metricId": "cost", "goal": "MINIMIZE"}],
  "maxTrials": 4, "maxParallelTrials": 2, "algorithm": "GRID_SEARCH",
  "params": [{"parameterName": "x", "type": "DISCRETE", "discreteValues": [1, 2, 3, 4]}]}}}
JSON
"$TUNER" run two.json --quiet >two.out 2>&1
check two_metrics_run_exit0 test $? -eq 0
check two_metrics_run_says_front grep -q "Pareto front: 3 trials of 2 metrics (tuner best two)" two.out
check two_metrics_front python3 -c '
import json, sys
rows = json.load(sys.stdin)
got = sorted((r["params"]["x"], r["values"]["score"], r["values"]["cost"]) for r in rows)
sys.exit(0 if got == [(1, 1, 1), (3, 3, 2), (4, 4, 5)] else "front %s" % got)' <<<"$("$TUNER" best two --format=json)"
check two_metrics_best_csv test "$("$TUNER" best two --format=csv | head -1)" = "study,number,score,cost,x"
check two_metrics_best_table grep -Eq "^ *TRIAL +score +cost +x" <<<"$("$TUNER" best two)"
check two_metrics_trials_columns grep -Eq "^ *TRIAL +STATE +score +cost" <<<"$("$TUNER" trials two)"
check two_metrics_trials_json python3 -c '
import json, sys
rows = json.load(sys.stdin)
sys.exit(0 if all(r["values"]["score"] == r["objective"] == r["params"]["x"] for r in rows) and len(rows) == 4 else rows)' <<<"$("$TUNER" trials two --format=json)"
# the same study with the Bayesian sampler (random scalarisations, search/mobo.h)
sed -e 's/"two"/"twobo"/' -e 's|runs/two|runs/twobo|' -e 's/GRID_SEARCH/ALGORITHM_UNSPECIFIED/' \
  -e 's/"maxParallelTrials": 2/"maxParallelTrials": 1/' two.json >twobo.json
"$TUNER" run twobo.json --quiet --seed=3 >twobo.out 2>&1
check two_metrics_bo_run_exit0 test $? -eq 0
check two_metrics_bo_front python3 -c '
import json, sys
rows = json.load(sys.stdin)
sys.exit(0 if rows and all(set(r["values"]) == {"score", "cost"} for r in rows) else rows)' <<<"$("$TUNER" best twobo --format=json)"
# ask and tell with two metrics: one VALUE per metric, in the spec's order
cat >twoat.json <<'JSON'
{"jobId": "twoat", "trainingInput": {"hyperparameters": {"metrics": [
  {"metricId": "score", "goal": "MAXIMIZE"}, {"metricId": "cost", "goal": "MINIMIZE"}],
 "maxTrials": 5, "algorithm": "RANDOM_SEARCH",
 "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]}}}
JSON
"$TUNER" create twoat.json >/dev/null
for i in 1 2 3; do "$TUNER" ask twoat >/dev/null; done
err=$("$TUNER" tell twoat 1 0.5 2>&1); rc=$?
check two_metrics_tell_one_value_refused test $rc -eq 2
check two_metrics_tell_says_count grep -q "study twoat has 2 metrics: tell takes 2 VALUEs, got 1" <<<"$err"
"$TUNER" tell twoat 1 0.5 -3 >/dev/null && "$TUNER" tell twoat 2 0.9 7 >/dev/null && \
  "$TUNER" tell twoat 3 0.4 -2 >/dev/null
check two_metrics_tell_ok test $? -eq 0
check two_metrics_tell_front test "$("$TUNER" best twoat --format=csv | cut -d, -f2-4 | tr '\n' ' ')" = "number,score,cost 1,0.5,-3 2,0.9,7 "
err=$(sed 's/"metrics"/"hyperparameterMetricTag": "score", "metrics"/' two.json >both.json; "$TUNER" validate both.json 2>&1); rc=$?
check two_metrics_both_forms_refused grep -q "this spec has metrics and hyperparameterMetricTag" <<<"$err"

# --- read commands --------------------------------------------------------------
out=$("$TUNER" list)
check list_has_studies grep -q "asktell" <<<"$out"
check list_json python3 -c 'import json,sys; assert len(json.load(sys.stdin)) >= 10' <<<"$("$TUNER" list --format=json)"
check show_counts grep -q "SUCCEEDED" <<<"$("$TUNER" show real)"
check trials_csv_header grep -q "^number,state,objective" <<<"$("$TUNER" trials real --format=csv)"
check logs_chief grep -q "training mlp" <<<"$("$TUNER" logs real 1)"
check logs_follow_finished grep -q "saved the model" <<<"$(timeout 20 "$TUNER" logs real 2 -f)"
# following a trial of a study no tuner runs says so (it would wait silently otherwise)
spec idlefollow BASIC "" 2 1 '["/bin/true"]'
"$TUNER" create idlefollow.json >/dev/null && "$TUNER" ask idlefollow >/dev/null
# (--foreground -k: see the evaluator's SIGTERM case in tests/trainer/trainer_cli.sh)
err=$(timeout --foreground -k 10 2 "$TUNER" logs idlefollow 1 -f 2>&1); rc=$?
check logs_follow_idle_waits test $rc -eq 124
check logs_follow_idle_says grep -q "tuner: note: study idlefollow is CREATED: no tuner is running it, so trial 1 stays PENDING until 'tuner resume idlefollow'" <<<"$err"
err=$("$TUNER" logs real 1 --replica=ps:0 2>&1); rc=$?
check logs_missing_replica_exit4 test $rc -eq 4
err=$("$TUNER" show nosuch 2>&1); rc=$?
check show_missing_exit4 test $rc -eq 4
check db_flag_anywhere grep -q "asktell" <<<"$(cd / && "$TUNER" list --db "$TUNER_DB")"

check_summary
