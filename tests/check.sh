# check.sh — the shell tests' harness, the counterpart of check.h (sourced, not run).
#
# `check NAME CMD ARGS...` runs the command and prints "ok NAME" or "FAIL NAME: CMD
# ARGS"; `ok NAME` and `fail NAME WHY` record a result directly; `check_summary` prints
# "N passed, N failed" and returns non-zero when anything failed, so a script ends with
# `check_summary` as its last command. The tuner's scripts also get count_state,
# study_state and trial_field, which read a study through `$TUNER`, event_details,
# which reads its events from the store, write_spec, which writes a study's spec, and
# check_mirrored, which checks a mirrored trial's chief and worker agree.
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

# write_spec NAME TOP_EXTRA TIER TI_EXTRA JOB_DIR COMMAND_JSON MAX_TRIALS PARALLEL
#            ALGORITHM HP_EXTRA PARAMS: NAME.json, the spec of study NAME maximizing the
# metric "score". TOP_EXTRA and TI_EXTRA are members (each with its trailing comma)
# added at the top level and to trainingInput, HP_EXTRA members (each with its
# leading comma) added to hyperparameters; PARAMS is the list's items.
write_spec() {
  cat >"$1.json" <<JSON
{
  "jobId": "$1", $2
  "trainingInput": {
    "scaleTier": "$3", $4
    "jobDir": "$5",
    "command": $6,
    "hyperparameters": {
      "goal": "MAXIMIZE", "hyperparameterMetricTag": "score",
      "maxTrials": $7, "maxParallelTrials": $8, "algorithm": "$9" ${10},
      "params": [ ${11} ]
    }
  }
}
JSON
}

# check_mirrored NAME DIR: the chief and worker 0 of the trial in DIR trained mirrored
# (checks NAME_multi_worker: both connected; NAME_replicas_identical: the same
# parameters, by the fingerprint each logs).
check_mirrored() {
  check "$1_multi_worker" grep -q "all 2 replicas connected" "$2/logs/chief-0.log"
  local chief worker
  chief=$(sed -n 's/^parameters: fnv1a \([0-9a-f]*\).*/\1/p' "$2/logs/chief-0.log")
  worker=$(sed -n 's/^parameters: fnv1a \([0-9a-f]*\).*/\1/p' "$2/logs/worker-0.log")
  check "$1_replicas_identical" test -n "$chief" -a "$chief" = "$worker"
}
