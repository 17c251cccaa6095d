# trainer_lib.sh — what the trainer's shell tests share (sourced after check.sh, not
# run): the work folder, reading a trainer's log, and clusters of replicas on loopback.

# begin_test TRAINER WORK: $TRAINER (made absolute) and $WORK, a fresh folder that
# becomes the current one; exits the script when it cannot be made.
begin_test() {
  TRAINER=$(realpath "$1")
  WORK=$2
  rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
}

# stable_metrics FILE: the metric records without what changes from run to run.
stable_metrics() { sed -E 's/"examples_per_sec":"[^"]*",//; s/"timestamp":[-0-9.e+]*,//' "$1"; }
# fingerprint LOG: the parameters' hash the trainer printed at the end.
fingerprint() { sed -n 's/^parameters: fnv1a \([0-9a-f]*\).*/\1/p' "$1"; }
# same_fingerprint LOG-A LOG-B: both printed one, and the same
same_fingerprint() { local a; a=$(fingerprint "$1"); [ -n "$a" ] && [ "$a" = "$(fingerprint "$2")" ]; }
# The reported losses of a log, one "step train_loss loss" line per report.
curve() { sed -nE 's/.* step ([0-9]+) +train_loss ([0-9.]+) .* loss ([0-9.]+) +accuracy.*/\1 \2 \3/p' "$1"; }
# last_accuracy LOG: the last evaluation accuracy reported.
last_accuracy() { sed -nE 's/.* accuracy ([0-9.]+) .*/\1/p' "$1" | tail -n 1; }

# ports N: N free loopback ports, space separated.
ports() {
  python3 "$(dirname "${BASH_SOURCE[0]}")/../free_ports.py" "$1"
}

# tfconfig CLUSTER_JSON TYPE INDEX
tfconfig() { echo "{\"cluster\": $1, \"task\": {\"type\": \"$2\", \"index\": $3}}"; }

# two_replicas RUNNER NAME ARGS...: a chief and a worker of a new multi-worker cluster
# on loopback, each run as `RUNNER ARGS...` (the chief with --job-dir=NAME), logging
# into NAME.chief.log and NAME.worker.log; their exit statuses in crc and wrc.
two_replicas() {
  local run=$1 name=$2 p0 p1 cluster chief
  shift 2
  read -r p0 p1 <<<"$(ports 2)"
  cluster="{\"chief\": [\"localhost:$p0\"], \"worker\": [\"localhost:$p1\"]}"
  TF_CONFIG="$(tfconfig "$cluster" chief 0)" $run "$@" --job-dir="$name" >"$name.chief.log" 2>&1 &
  chief=$!
  TF_CONFIG="$(tfconfig "$cluster" worker 0)" $run "$@" >"$name.worker.log" 2>&1
  wrc=$?
  wait $chief
  crc=$?
}
