# check.sh — the shell tests' harness, the counterpart of check.h (sourced, not run).
#
# `check NAME CMD ARGS...` runs the command and prints "ok NAME" or "FAIL NAME: CMD
# ARGS"; `ok NAME` and `fail NAME WHY` record a result directly; `check_summary` prints
# "N passed, N failed" and returns non-zero when anything failed, so a script ends with
# `check_summary` as its last command. The tuner's scripts also get count_state,
# study_state and trial_field, which read a study through `$TUNER`.
passed=0
failed=0
ok() { echo "ok $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name" "$*"; fi; }
check_summary() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; }

# count_state STUDY STATE: how many of the study's trials are in that state.
count_state() { "$TUNER" trials "$1" --format=csv | awk -F, -v s="$2" 'NR > 1 && $2 == s' | wc -l; }
# study_state STUDY: the study's state.
study_state() { "$TUNER" show "$1" --format=json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
# trial_field STUDY FIELD: that field of each trial, one a line.
trial_field() { "$TUNER" trials "$1" --format=json | python3 -c '
import json, sys
for t in json.load(sys.stdin): print(t[sys.argv[1]])' "$2"; }
# event_details STUDY KIND: the detail of each of the study's events of that kind, one
# a line (read from the store at $TUNER_DB).
event_details() { python3 -c '
import sqlite3, sys
for (d,) in sqlite3.connect(sys.argv[1]).execute(
        "select e.detail from events e join studies s on s.id = e.study_id"
        " where s.name = ? and e.kind = ? order by e.id", sys.argv[2:4]):
    print(d)' "$TUNER_DB" "$1" "$2"; }
