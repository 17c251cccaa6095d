#!/usr/bin/env bash
# pytorch_example.sh — the PyTorch DDP example (examples/pytorch/) through the real
# tuner with the real libraries: Debian's python3-torch and cloudml-hypertune from PyPI
# in the venv scripts/python-env.sh makes.
#
#   pytorch_example.sh BIN_DIR WORKDIR [VENV_DIR]   (BIN_DIR holds tuner; the venv
#                                                   defaults to WORKDIR/../venv-examples)
#
# A study of 2 trials of the example spec, each a chief and a worker training with gloo,
# on 3000 Fashion-MNIST examples, 3 epochs of 30 steps; worker 0 crashes once at step
# 45 (--crash_once_at_step), after the chief's checkpoint of epoch 1. Checked: both
# ranks rendezvoused, the crash took the chief down too (gloo) and the tuner restarted
# both in place, both resumed from the checkpoint, the trials SUCCEEDED with the
# chief's last accuracy as objective, the measurements of both replicas are stored,
# and both ranks ended with the same weights.
#
# Exits 77 (skipped) when python3-torch is not installed or the venv cannot be made
# (python3-venv missing, PyPI unreachable), saying why. Prints "ok NAME" / "FAIL NAME:
# why" per check and "N passed, N failed" last.
set -u
. "$(dirname "$0")/../check.sh"  # ok, fail, check, check_summary, count_state, trial_field
BIN=$1
WORK=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${3:-$(dirname "$WORK")/venv-examples}
TUNER="$BIN/tuner"
PYTHON=${PYTHON:-/usr/bin/python3}
export PYTHON

if ! "$PYTHON" -c 'import torch' >/dev/null 2>&1; then
  echo "skip: $PYTHON cannot import torch: Debian's python3-torch is not installed" \
       "(apt-get install python3-torch, or scripts/install-deps.sh --test)"
  exit 77
fi
mkdir -p "$(dirname "$WORK")" || exit 1
"$ROOT/scripts/python-env.sh" "$VENV" >/dev/null 2>"$(dirname "$WORK")/python-env.err"; rc=$?
if [ $rc -eq 3 ]; then
  cat "$(dirname "$WORK")/python-env.err"
  echo "skip: the example's venv cannot be made (above: python3-venv, or PyPI)"
  exit 77
elif [ $rc -ne 0 ]; then
  cat "$(dirname "$WORK")/python-env.err"
  fail python_env "scripts/python-env.sh $VENV exited $rc"
  check_summary
  exit 1
fi
ok python_env

rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
export TUNER_DB="$WORK/tuner.db"
export PATH="$VENV/bin:$PATH"  # the spec's "python3" is the venv's

# The example spec as it is, made small: the command stays relative to the repository
# root (the tuner runs there, as the README says), the trials' folders go to $WORK.
python3 - "$ROOT/examples/pytorch/spec.json" "$WORK" <<'EOF' || exit 1
import json, sys
spec = json.load(open(sys.argv[1]))
t = spec["trainingInput"]
spec["jobId"] = "pytorch_example"
t["jobDir"] = sys.argv[2] + "/runs"
t["args"] = ["--epochs=3", "--train_examples=3000", "--test_examples=1000",
             "--crash_once_at_step=45"]
t["trialTimeout"] = "150s"
hp = t["hyperparameters"]
hp["maxTrials"] = 2
hp["maxParallelTrials"] = 1
for p in hp["params"]:
    if p["parameterName"] == "batch_size":  # 30 steps per epoch, whatever is drawn
        p["discreteValues"] = [100]
json.dump(spec, open(sys.argv[2] + "/spec.json", "w"), indent=1)
EOF

cd "$ROOT" || exit 1
out=$("$TUNER" validate examples/pytorch/spec.json 2>&1)
check example_spec_valid grep -q "valid: study pytorch_ddp_fashion" <<<"$out"
start=$(date +%s)
"$TUNER" run "$WORK/spec.json" --seed=7 --grace=2 --poll=0.2 --dashboard=off \
  >"$WORK/run.out" 2>&1; rc=$?
echo "# the study took $(( $(date +%s) - start )) s"
check run_exit0 test $rc -eq 0
[ $rc -eq 0 ] || sed 's/^/# /' "$WORK/run.out"
check two_succeeded test "$(count_state pytorch_example SUCCEEDED)" -eq 2

# restarts in place, one attempt
check restarted python3 -c '
import json, sys
for t in json.load(sys.stdin):
    if t["restarts"] < 1 or t["attempts"] != 1:
        sys.exit("trial %d: %d restarts, %d attempts" % (t["number"], t["restarts"], t["attempts"]))
' <<<"$("$TUNER" trials pytorch_example --format=json)"

for n in 1 2; do
  logs="$WORK/runs/$n/logs"
  chief="$logs/chief-0.log"
  worker="$logs/worker-0.log"
  check "t${n}_chief_rendezvous" grep -q "^\[chief:0\] rendezvous: rank 0 of 2 at 127.0.0.1:" "$chief"
  check "t${n}_worker_rendezvous" grep -q "^\[worker:0\] rendezvous: rank 1 of 2 at 127.0.0.1:" "$worker"
  check "t${n}_worker_crashed" grep -q "crashing on purpose at step 45" "$worker"
  check "t${n}_crash_marker" test -f "$WORK/runs/$n/crashed-worker-0"
  # gloo: the chief's all-reduce fails when its peer dies, so it exits too and is restarted
  check "t${n}_chief_saw_it" grep -q "RuntimeError: .*gloo" "$chief"
  check "t${n}_rendezvous_again" test "$(grep -c 'rendezvous: rank' "$worker")" -ge 2 \
    -a "$(grep -c 'rendezvous: rank' "$chief")" -ge 2
  check "t${n}_chief_resumed" grep -q "resumed from .*checkpoint.pt at epoch 1" "$chief"
  check "t${n}_worker_resumed" grep -q "resumed from .*checkpoint.pt at epoch 1" "$worker"
  cw=$(sed -n 's/.*final weights sha256 //p' "$chief")
  ww=$(sed -n 's/.*final weights sha256 //p' "$worker")
  check "t${n}_same_weights" test -n "$cw" -a "$cw" = "$ww"
done

# what the store holds: the chief's accuracy at every epoch end (30, 60, 90), each
# once; the worker's train_loss; the objective is the chief's last accuracy; the
# tuner logged the restarts of both replicas
check measurements python3 - "$TUNER_DB" <<'EOF'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
sid = db.execute("select id from studies where name = 'pytorch_example'").fetchone()[0]
for trial, objective in db.execute(
        "select number, objective from trials where study_id = ?", (sid,)).fetchall():
    rows = db.execute("select replica, step, metrics from measurements where study_id = ? "
                      "and trial = ? order by seq", (sid, trial)).fetchall()
    acc = [(s, json.loads(m)["accuracy"]) for r, s, m in rows
           if r == "chief:0" and "accuracy" in json.loads(m)]
    if [s for s, _ in acc] != [30, 60, 90]:
        sys.exit("trial %d: chief accuracy at steps %s" % (trial, [s for s, _ in acc]))
    if acc[-1][1] != objective or not 0.6 < objective <= 1:
        sys.exit("trial %d: objective %r, last accuracy %r" % (trial, objective, acc[-1][1]))
    wsteps = sorted(s for r, s, m in rows if r == "worker:0" and "train_loss" in json.loads(m))
    if wsteps != [30, 60, 90]:
        sys.exit("trial %d: worker train_loss at steps %s" % (trial, wsteps))
    restarted = sorted(set(r for (r,) in db.execute(
        "select replica from events where study_id = ? and trial = ? and kind = 'restarted'",
        (sid, trial))))
    if restarted != ["chief:0", "worker:0"]:
        sys.exit("trial %d: restarted %s" % (trial, restarted))
EOF

check_summary
