#!/usr/bin/env bash
# dashboard_load.sh — the dashboard under load: wrk (Debian's; loopback only, bounded in
# time) against the trials and curves endpoints of a 1,000-trial study, served by
# `tuner serve` and by the dashboard thread of a `tuner run` while that run schedules
# trials; and what the load does to the run's scheduling: the gap between one trial's
# end and the next one's start, with no load, with wrk on the run's dashboard, and,
# as a control, with two busy loops and no HTTP at all (CPU contention alone).
#
#   bench/dashboard_load.sh [BUILD_DIR]       (default: build; needs bin/tuner and
#                                              bin/bench_dashfill: cmake --build BUILD_DIR)
#   environment: DURATION (10s per wrk run), CONNECTIONS (4), THREADS (1),
#                TRIALS (1000), STEPS (20 measurements per trial), RUN_TRIALS (100)
#
# Prints a Markdown table of requests/s, latency percentiles, non-2xx responses and
# socket errors per run, and the scheduling gaps; exits 1 when any request failed.
# wrk: scripts/install-deps.sh --bench. Results and how to read them:
# docs/benchmarks/dashboard-load.md.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$HERE/../build}" && pwd)
TUNER="$BUILD/bin/tuner"
FILL="$BUILD/bin/bench_dashfill"
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-4}
THREADS=${THREADS:-1}
TRIALS=${TRIALS:-1000}
STEPS=${STEPS:-20}
RUN_TRIALS=${RUN_TRIALS:-100}
for tool in "$TUNER" "$FILL"; do
  [ -x "$tool" ] || { echo "dashboard_load.sh: error: $tool is missing" >&2;
                      echo "hint: cmake --build $BUILD" >&2; exit 2; }
done
command -v wrk >/dev/null || { echo "dashboard_load.sh: error: wrk is not installed" >&2;
                               echo "hint: scripts/install-deps.sh --bench" >&2; exit 2; }
WORK=$(mktemp -d /tmp/dashload.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
cd "$WORK"
export TUNER_DB="$WORK/tuner.db"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 1 200); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $1), timeout=0.2)" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "dashboard_load.sh: error: nothing listens on port $1" >&2; exit 1
}

# The 1,000-trial study: ask/tell (no command), four parameters, TRIALS x STEPS points.
cat >big.json <<'JSON'
{"jobId": "big", "trainingInput": {"hyperparameters": {"goal": "MAXIMIZE",
 "hyperparameterMetricTag": "accuracy", "maxTrials": 100000, "algorithm": "RANDOM_SEARCH",
 "params": [
  {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 0.0001, "maxValue": 0.3, "scaleType": "UNIT_LOG_SCALE"},
  {"parameterName": "hidden_units", "type": "INTEGER", "minValue": 32, "maxValue": 512},
  {"parameterName": "optimizer", "type": "CATEGORICAL", "categoricalValues": ["sgd", "adam", "rmsprop"]},
  {"parameterName": "batch_size", "type": "DISCRETE", "discreteValues": [32, 64, 128, 256]}]}}}
JSON
"$TUNER" create big.json >/dev/null
"$FILL" "$TUNER_DB" big "$TRIALS" "$STEPS" >&2

# A small study that runs while the load is on: RUN_TRIALS trials of 0.2 s, one at a
# time, so each start right after the previous end shows the loop's own delay.
small() {
  cat >"$1.json" <<JSON
{"jobId": "$1", "trainingInput": {"scaleTier": "BASIC", "jobDir": "runs/$1",
 "command": ["/bin/sh", "-c", "sleep 0.2; echo '{\"score\": \"1\"}' > \$CLOUD_ML_HP_METRIC_FILE", "sh"],
 "hyperparameters": {"goal": "MAXIMIZE", "hyperparameterMetricTag": "score",
  "maxTrials": $RUN_TRIALS, "maxParallelTrials": 1, "algorithm": "RANDOM_SEARCH",
  "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]}}}
JSON
}

# wrk NAME URL: one run, its output kept in NAME.wrk
load() {
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "$2" >"$1.wrk" 2>&1 || true
}

# The gaps (seconds) between a trial's end and the next one's start, for trials that
# started between $2 and $3 (epoch seconds; 0 0: all), one per line.
gaps() {
  "$TUNER" trials "$1" --format=json | python3 -c '
import json, sys
lo, hi = float(sys.argv[1]), float(sys.argv[2])
t = sorted(json.load(sys.stdin), key=lambda r: r["number"])
for a, b in zip(t, t[1:]):
    if a["finished"] and b["started"] and (hi == 0 or lo <= b["started"] <= hi):
        print("%.6f" % (b["started"] - a["finished"]))' "$2" "$3"
}

echo "dashboard_load.sh: $TRIALS trials x $STEPS measurements; wrk -t$THREADS -c$CONNECTIONS -d$DURATION" >&2

# 1. no load: the small study's gaps
small quiet
port=$(free_port)
"$TUNER" run quiet.json --quiet --dashboard=127.0.0.1:$port >/dev/null
gaps quiet 0 0 >quiet.gaps

# 2. tuner serve: the endpoints alone
port=$(free_port)
"$TUNER" serve --listen=127.0.0.1:$port >/dev/null 2>serve.err &
pids+=($!)
wait_port "$port"
load serve_trials "http://127.0.0.1:$port/api/studies/big/trials?limit=100"
load serve_trials_sorted "http://127.0.0.1:$port/api/studies/big/trials?limit=100&offset=500&sort=-value"
load serve_curves "http://127.0.0.1:$port/api/studies/big/curves"
kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true

# 3. tuner run: the same requests to its dashboard thread while it schedules trials
small busy
port=$(free_port)
"$TUNER" run busy.json --quiet --dashboard=127.0.0.1:$port >/dev/null &
run_pid=$!
pids+=($run_pid)
wait_port "$port"
t0=$(date +%s.%N)
load run_trials "http://127.0.0.1:$port/api/studies/big/trials?limit=100"
load run_curves "http://127.0.0.1:$port/api/studies/big/curves"
t1=$(date +%s.%N)
if ! kill -0 "$run_pid" 2>/dev/null; then
  echo "dashboard_load.sh: warning: the run ended before the load did; raise RUN_TRIALS" >&2
fi
wait "$run_pid"
gaps busy "$t0" "$t1" >busy.gaps

# 4. the control: the same study while two busy loops take both cores, no HTTP
small hog
for _ in 1 2; do sh -c 'while :; do :; done' & pids+=($!); done
"$TUNER" run hog.json --quiet --dashboard=off >/dev/null
kill "${pids[-1]}" "${pids[-2]}"
gaps hog 0 0 >hog.gaps

python3 - "$WORK" <<'PY'
import os, re, statistics, sys
work = sys.argv[1]
def ms(text):
    m = re.match(r"([\d.]+)(us|ms|s)$", text)
    v = float(m.group(1))
    return v / 1000 if m.group(2) == "us" else v * 1000 if m.group(2) == "s" else v
rows, bad = [], 0
for name, label in [("serve_trials", "serve: trials?limit=100"),
                    ("serve_trials_sorted", "serve: trials?limit=100&offset=500&sort=-value"),
                    ("serve_curves", "serve: curves (all 1,000 trials)"),
                    ("run_trials", "run (study running): trials?limit=100"),
                    ("run_curves", "run (study running): curves")]:
    text = open(os.path.join(work, name + ".wrk")).read()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    n = int(re.search(r"(\d+) requests in", text).group(1))
    pct = dict(re.findall(r"\s(50|90|99)%\s+([\d.]+\w+)", text))
    mx = re.search(r"Latency\s+\S+\s+\S+\s+(\S+)", text).group(1)
    non2xx = int((re.search(r"Non-2xx or 3xx responses: (\d+)", text) or [0, 0])[1])
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    errs = sum(int(x) for x in sock.groups()) if sock else 0
    bad += non2xx + errs
    rows.append("| %s | %d | %.0f | %.2f | %.2f | %.2f | %.2f | %d | %d |" % (
        label, n, rps, ms(pct["50"]), ms(pct["90"]), ms(pct["99"]), ms(mx), non2xx, errs))
print("| load | requests | req/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx | socket errors |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
print("\n".join(rows))
print()
print("| scheduling gap (a trial's end to the next one's start) | trials | median ms | p95 ms | max ms |")
print("|---|---:|---:|---:|---:|")
for name, label in [("quiet", "no load"), ("busy", "wrk on the run's dashboard"),
                    ("hog", "two busy loops, no HTTP (control)")]:
    g = sorted(float(x) * 1000 for x in open(os.path.join(work, name + ".gaps")).read().split())
    if not g:
        print("| %s | 0 | - | - | - |" % label)
        continue
    p95 = g[min(len(g) - 1, int(round(0.95 * (len(g) - 1))))]
    print("| %s | %d | %.1f | %.1f | %.1f |" % (label, len(g), statistics.median(g), p95, g[-1]))
if bad:
    print("\ndashboard_load.sh: error: %d failed requests (non-2xx or socket errors)" % bad,
          file=sys.stderr)
    sys.exit(1)
PY
