#!/usr/bin/env bash
# tuner_slurm.sh — end-to-end tests of the Slurm executor on a real Slurm cluster: a
# throw-away cluster of three slurmd nodes on this host (scripts/slurm-cluster.sh),
# started here and stopped by its recorded PIDs when the script ends, pass or fail.
#
#   tuner_slurm.sh BIN_DIR WORKDIR      (BIN_DIR holds tuner, tuner-launch and trainer)
#
# Without root or without Slurm's packages the cluster cannot start: the script then
# says why and exits 77, which ctest reports as skipped (never as passed).
# Each case prints "ok NAME" or "FAIL NAME: why"; the last line is "N passed, N failed".
set -u
. "$(dirname "$0")/../check.sh"  # ok, fail, check, check_summary
BIN=$1
WORK=$2
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TUNER="$BIN/tuner"
CHECK="$HERE/check_replica.py"
rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
cd "$WORK" || exit 1
export TUNER_DB="$WORK/tuner.db"

CLUSTER="$WORK/cluster"
out=$("$ROOT/scripts/slurm-cluster.sh" start "$CLUSTER" --nodes=3 --cpus=4 2>"$WORK/cluster.err")
rc=$?
if [ $rc -eq 77 ]; then
  echo "skipped: $(cat "$WORK/cluster.err")"
  exit 77
elif [ $rc -ne 0 ]; then
  echo "FAIL cluster_start: $(cat "$WORK/cluster.err")"
  "$ROOT/scripts/slurm-cluster.sh" stop "$CLUSTER" >/dev/null 2>&1
  exit 1
fi
trap '"$ROOT/scripts/slurm-cluster.sh" stop "$CLUSTER" >/dev/null 2>&1' EXIT
eval "$out"  # export SLURM_CONF=...

# The jobs Slurm still has queued or running (none should be left behind).
queue_empty() { [ -z "$(squeue --noheader --format=%i)" ]; }
wait_queue_empty() { for _ in $(seq 1 100); do queue_empty && return 0; sleep 0.1; done; return 1; }

# spec NAME EXTRA_TRAINING_INPUT MAX_TRIALS PARALLEL COMMAND_JSON [HP_EXTRA] [PARAMS] [EXECUTOR]
spec() {
  local params=${7:-'{"parameterName": "x", "type": "DISCRETE", "discreteValues": [-1, 0.5, 2]},
      {"parameterName": "n", "type": "INTEGER", "minValue": 1, "maxValue": 4}'}
  local executor=${8:-}
  [ -n "$executor" ] || executor='{"type": "slurm", "partition": "debug", "timeLimit": "10"}'
  write_spec "$1" "\"executor\": $executor," CUSTOM "$2" "$WORK/runs/$1" "$5" "$3" "$4" \
    GRID_SEARCH "${6:-}" "$params"
}

# --- the contract across nodes: chief + 2 workers + ps, a grid study -------------------
# Two cores a replica on nodes of four: each trial's job spans at least two nodes.
spec grid '"workerCount": 2, "parameterServerCount": 1,
  "resources": {"chief": {"cores": 2}, "worker": {"cores": 2}, "ps": {"cores": 2}},' 4 2 \
  "[\"python3\", \"$CHECK\", \"--expect_workers=2\", \"--expect_ps=1\", \"--expect_evaluators=0\",
    \"--expect_study=grid\", \"--expect_cores=2\", \"--expect_slurm=1\"]"
out=$("$TUNER" validate grid.json 2>&1)
check validate_against_cluster grep -q "executor slurm" <<<"$out"
"$TUNER" run grid.json --quiet --grace=2 >grid.out 2>&1; rc=$?
check grid_exit0 test $rc -eq 0
check grid_4_succeeded test "$(count_state grid SUCCEEDED)" -eq 4
check grid_spans_nodes python3 -c '
import glob, os, sys
for trial in range(1, 5):
    nodes = {open(p).read().strip() for p in glob.glob("runs/grid/%d/nodes/*" % trial)}
    if len(glob.glob("runs/grid/%d/nodes/*" % trial)) != 4: sys.exit("trial %d: not 4 replicas" % trial)
    if len(nodes) < 2: sys.exit("trial %d ran on %s only" % (trial, nodes))
'
check grid_show_executor test "$("$TUNER" show grid --format=json | python3 -c 'import json,sys; print(json.load(sys.stdin)["executor"])')" = slurm
check grid_job_id_shown grep -q "^slurm:[0-9]*$" <<<"$(trial_field grid executor_job | head -1)"
check grid_job_ids_stored python3 -c '
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("select executor_job from trials t join studies s on s.id = t.study_id where s.name = ?", ("grid",)).fetchall()
if len(rows) != 4 or not all(r[0] and r[0].startswith("slurm:") for r in rows): sys.exit(str(rows))
if len({r[0] for r in rows}) != 4: sys.exit("job ids repeat: %s" % rows)
' "$TUNER_DB"
check grid_replica_logs test -s runs/grid/1/logs/ps-0.log -o -f runs/grid/1/logs/ps-0.log
check grid_queue_empty wait_queue_empty

# --- replica types with different resources: a heterogeneous job -------------------
spec het '"workerCount": 2, "parameterServerCount": 1,
  "resources": {"chief": {"cores": 2}, "worker": {"cores": 1}, "ps": {"cores": 1}},' 2 1 \
  "[\"python3\", \"$CHECK\", \"--expect_workers=2\", \"--expect_ps=1\", \"--expect_evaluators=0\",
    \"--expect_study=het\", \"--expect_cores=2,1,1,1\", \"--expect_slurm=1\"]"
"$TUNER" run het.json --quiet --grace=2 >het.out 2>&1; rc=$?
check het_exit0 test $rc -eq 0
check het_2_succeeded test "$(count_state het SUCCEEDED)" -eq 2
check het_two_components python3 -c '
import json, sys
d = json.load(open("runs/het/1/slurm/job.json"))
if d["het_group"] != [0, 1, 1, -1]: sys.exit("het_group %s" % d["het_group"])
'
check het_queue_empty wait_queue_empty

# --- the real trainer, multi-worker mirrored across two nodes ----------------------
spec real '"workerCount": 1, "resources": {"chief": {"cores": 3}, "worker": {"cores": 3}},' 1 1 \
  "[\"$BIN/trainer\", \"--max_train_examples=1000\", \"--max_eval_examples=300\", \"--epochs=2\",
    \"--hidden_units=32\", \"--batch_size=100\"]" "" \
  '{"parameterName": "learning_rate", "type": "DISCRETE", "discreteValues": [0.1]}'
sed -i 's/"score"/"accuracy"/' real.json
"$TUNER" run real.json --quiet >real.out 2>&1; rc=$?
check real_exit0 test $rc -eq 0
check real_succeeded test "$(count_state real SUCCEEDED)" -eq 1
check_mirrored real runs/real/1
check real_model test -s runs/real/1/model.ckpt

# --- a replica that fails twice, then succeeds: restarted in place ---------------------
flaky='["/bin/sh", "-c", "for a; do case $a in --job-dir=*) d=${a#--job-dir=};; esac; done; n=$(cat $d/count 2>/dev/null || echo 0); echo $((n+1)) > $d/count; [ $n -ge 2 ] || exit 1; echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
spec flaky "" 1 1 "$flaky"
"$TUNER" run flaky.json --quiet >flaky.out 2>&1
check flaky_exit0 test $? -eq 0
check flaky_succeeded test "$(count_state flaky SUCCEEDED)" -eq 1
check flaky_restarts_in_place test "$(trial_field flaky restarts)" = 2
check flaky_one_job test "$(trial_field flaky attempts)" = 1

# --- a program that can never run: failed at the first identical repeat, with the end
# of its log in the error; the spec's env reaches it on the node ----------------------
spec broken '"env": {"GREETING": "hi from the spec"}, "restartPolicy": {"backoffSeconds": 0},' 1 1 \
  '["python3", "-c", "import os\nraise SystemExit(\"fatal: \" + os.environ[\"GREETING\"])"]'
"$TUNER" run broken.json --quiet >broken.out 2>&1
check broken_failed test "$(count_state broken FAILED)" -eq 1
check broken_one_job test "$(trial_field broken attempts)" = 1
check broken_one_restart test "$(trial_field broken restarts)" = 1
check broken_says_repeat grep -q "failed twice the same way (exit status 1, the same last lines)" <<<"$(trial_field broken error)"
check broken_env_and_tail grep -q "^    fatal: hi from the spec$" <<<"$(trial_field broken error)"
check broken_queue_empty wait_queue_empty

# --- a job cancelled from outside runs again ---------------------------------------
onceslow='["/bin/sh", "-c", "for a; do case $a in --job-dir=*) d=${a#--job-dir=};; esac; done; if [ ! -e $d/ran ]; then touch $d/ran; sleep 60; fi; echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
spec outside "" 1 1 "$onceslow"
"$TUNER" run outside.json --quiet >outside.out 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -e runs/outside/1/ran ] && break; sleep 0.1; done
scancel --name="$(squeue --noheader --format=%j | grep '\.outside\.1$' | head -1)"
wait $pid; rc=$?
check outside_exit0 test $rc -eq 0
check outside_succeeded test "$(count_state outside SUCCEEDED)" -eq 1
check outside_two_runs test "$(trial_field outside attempts)" = 2
check outside_said_why python3 -c '
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("select e.detail from events e join studies s on s.id = e.study_id where s.name = ? and e.kind = ?", ("outside", "retrying")).fetchall()
if not any("cancelled outside the tuner" in r[0] for r in rows): sys.exit(str(rows))
' "$TUNER_DB"

# --- early stopping: stopped trials leave nothing in the queue -------------------
es_params='{"parameterName": "config", "type": "CATEGORICAL", "categoricalValues": ["a", "b", "c", "d", "e", "f"]}'
spec asha "" 6 1 "[\"python3\", \"$HERE/curve.py\", \"--pause=0.4\"]" \
  ', "earlyStopping": {"policy": "asha", "gracePeriod": 1, "reductionFactor": 3, "maxStep": 9}' "$es_params"
"$TUNER" run asha.json --quiet --poll=0.1 --grace=2 >asha.out 2>&1; rc=$?
check asha_exit0 test $rc -eq 0
check asha_some_stopped test "$(count_state asha STOPPED)" -ge 1
check asha_queue_empty wait_queue_empty

# --- tuner cancel: scancel, nothing left behind -----------------------------------
spec canc "" 3 2 '["/bin/sh", "-c", "sleep 60", "sh"]'
"$TUNER" run canc.json --quiet --grace=1 >canc.out 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ "$(squeue --noheader --state=running | wc -l)" -ge 2 ] && break; sleep 0.1; done
"$TUNER" cancel canc >/dev/null
wait $pid; rc=$?
check cancel_exit130 test $rc -eq 130
check cancel_state test "$(study_state canc)" = CANCELLED
check cancel_queue_empty wait_queue_empty

# --- a second Ctrl-C whose scancel fails (the controller away; a wrapper here): the
# jobs are said to be still running, their ids kept with the PENDING trials, and
# resume cancels them as strays ----------------------------------------------------
spec abort2 "" 2 2 '["/bin/sh", "-c", "sleep 60", "sh"]'
mkdir -p wrap_scancel
printf '#!/bin/sh\necho "scancel: error: Kill job error on job id $*: Socket timed out on send/recv operation" >&2\nexit 1\n' >wrap_scancel/scancel
chmod +x wrap_scancel/scancel
abort2_running() { squeue --noheader --state=running --format=%j | grep -c '\.abort2\.'; }
PATH="$WORK/wrap_scancel:$PATH" "$TUNER" run abort2.json --grace=1 >abort2.out 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ "$(abort2_running)" -ge 2 ] && break; sleep 0.1; done
kill -INT $pid
for _ in $(seq 1 50); do [ "$(event_details abort2 stopping | grep -c 'will try again')" -ge 2 ] && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
check abort2_exit130 test $rc -eq 130
check abort2_says grep -q 'scancel failed: jobs [0-9]* [0-9]* may still run; `tuner resume abort2` or `scancel [0-9]* [0-9]*`' abort2.out
check abort2_jobs_still_run test "$(abort2_running)" -eq 2
check abort2_trials_pending test "$(count_state abort2 PENDING)" -eq 2
check abort2_job_ids_kept test "$(trial_field abort2 executor_job | grep -c '^slurm:[0-9]*$')" -eq 2
check abort2_killed_events test "$(event_details abort2 killed | grep -c 'but the cancel failed: slurm:[0-9]* may still run')" -eq 2
"$TUNER" resume abort2 --grace=1 >abort2_resume.out 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ "$(grep -c 'stray job of trial' abort2_resume.out)" -ge 2 ] && [ "$(abort2_running)" -ge 2 ] && break; sleep 0.1; done
kill -INT $pid; wait $pid
check abort2_resume_cancels_them test "$(grep -c 'a stray job of trial [12] that no trial claims' abort2_resume.out)" -eq 2
check abort2_queue_empty wait_queue_empty

# --- SIGKILL the tuner mid-study, resume: re-attached, nothing lost or doubled -------
sleeper='["/bin/sh", "-c", "sleep 2; echo \"{\\\"score\\\": \\\"2\\\", \\\"timestamp\\\": $(date +%s.%N)}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
spec killed "" 6 2 "$sleeper" "" '{"parameterName": "x", "type": "INTEGER", "minValue": 1, "maxValue": 6}'
"$TUNER" run killed.json --quiet >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ "$(squeue --noheader --state=running | wc -l)" -ge 2 ] && break; sleep 0.1; done
sleep 0.5
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
check killed_jobs_survive test "$(squeue --noheader | wc -l)" -ge 1
"$TUNER" resume killed >killed.out 2>&1; rc=$?
check killed_resume_exit0 test $rc -eq 0
check killed_reattached grep -q "re-attached to its job (slurm:" killed.out
rows=$("$TUNER" trials killed --format=csv | tail -n +2)
check killed_6_trials test "$(wc -l <<<"$rows")" -eq 6
check killed_numbers_1_to_6 test "$(cut -d, -f1 <<<"$rows" | sort -n | uniq | tr '\n' ' ')" = "1 2 3 4 5 6 "
check killed_all_succeeded test "$(count_state killed SUCCEEDED)" -eq 6
check killed_none_run_twice test "$(trial_field killed attempts | sort -u | tr '\n' ' ')" = "1 "
check killed_no_event_twice python3 -c '
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(
    "select e.trial, e.replica, e.kind, e.detail, count(*) from events e join studies s on "
    "s.id = e.study_id where s.name = ? and e.kind in (?, ?, ?) group by 1, 2, 3, 4 having count(*) > 1",
    ("killed", "started", "exited", "restarted")).fetchall()
if rows: sys.exit("stored twice: %s" % rows)
' "$TUNER_DB"
check killed_no_orphans wait_queue_empty

# A job submitted just before the kill, whose id was never stored, is adopted; a
# stray of a finished trial is cancelled.
spec stray "" 1 1 '["/bin/sh", "-c", "sleep 1; echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
"$TUNER" create stray.json >/dev/null
prefix=$(python3 - "$WORK/runs/stray" <<'EOF'
import sys
h = 1469598103934665603
for b in sys.argv[1].encode():
    h ^= b
    h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
print("tuner.%08x.stray" % ((h ^ (h >> 32)) & 0xFFFFFFFF))
EOF
)
sbatch --parsable --job-name="$prefix.7" --output=/dev/null --wrap="sleep 60" >/dev/null
"$TUNER" resume stray >stray.out 2>&1; rc=$?
check stray_resume_exit0 test $rc -eq 0
check stray_cancelled grep -q "a stray job of trial 7 that no trial claims" stray.out
check stray_queue_empty wait_queue_empty

# A tuner killed while a re-run's sbatch has not answered yet (the job is queued, its id
# not stored): resume attaches to that live job, not to the stored one that ended, and
# neither re-runs the trial again nor cancels the live job as a stray.
mkdir -p slowbin
real_sbatch=$(command -v sbatch)
cat >slowbin/sbatch <<EOF
#!/bin/sh
# the second submission (the re-run) answers 30 s late, its job queued meanwhile
n=\$(cat "$WORK/slowbin/n" 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n >"$WORK/slowbin/n"
out=\$("$real_sbatch" "\$@"); rc=\$?
if [ \$n -eq 2 ]; then echo \$\$ >"$WORK/slowbin/pid"; echo "\$out" >"$WORK/slowbin/queued"; sleep 30; fi
echo "\$out"; exit \$rc
EOF
chmod +x slowbin/sbatch
# kill_at_rerun STUDY: runs STUDY with the slow sbatch and SIGKILLs the tuner once the
# re-run's job is queued (its id in slowbin/queued), the late sbatch with it.
kill_at_rerun() {
  rm -f slowbin/n slowbin/pid slowbin/queued
  PATH="$WORK/slowbin:$PATH" "$TUNER" run "$1.json" --quiet >"${1}1.out" 2>&1 &
  local pid=$!
  for _ in $(seq 1 300); do [ -s slowbin/queued ] && break; sleep 0.1; done
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  [ -s slowbin/pid ] && kill -KILL -- "-$(cat slowbin/pid)" 2>/dev/null
}
rerun='["/bin/sh", "-c", "for a; do case $a in --job-dir=*) d=${a#--job-dir=};; esac; done; if [ ! -e $d/ran ]; then touch $d/ran; exit 1; fi; sleep 6; echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
spec lateid '"restartPolicy": {"maxReplicaRestarts": 0, "maxJobRetries": 2, "backoffSeconds": 0},' 1 1 "$rerun"
kill_at_rerun lateid
check lateid_rerun_queued test -s slowbin/queued
check lateid_id_not_stored test "$(trial_field lateid executor_job)" != "slurm:$(cat slowbin/queued)"
"$TUNER" resume lateid >lateid.out 2>&1; rc=$?
check lateid_resume_exit0 test $rc -eq 0
check lateid_attached_live grep -q "re-attached to its job (slurm:$(cat slowbin/queued))" lateid.out
check lateid_no_stray test -z "$(grep 'stray job' lateid.out)"
check lateid_succeeded test "$(count_state lateid SUCCEEDED)" -eq 1
check lateid_two_runs test "$(trial_field lateid attempts)" = 2
check lateid_one_retrying python3 -c '
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute("select count(*) from events e join studies s on s.id = e.study_id where s.name = ? and e.kind = ?", ("lateid", "retrying")).fetchone()[0]
if n != 1: sys.exit("%d retrying events" % n)
' "$TUNER_DB"
check lateid_stored_handle test "$(trial_field lateid executor_job)" = "slurm:$(cat slowbin/queued)"
check lateid_queue_empty wait_queue_empty

# The same, but the re-run's job has also ended before the resume: Slurm lists it no
# more as live, and the stored job failed. Resume takes the re-run's outcome from its
# files (the trial succeeded, two runs in all) instead of re-running the trial a third
# time.
spec lateend '"restartPolicy": {"maxReplicaRestarts": 0, "maxJobRetries": 2, "backoffSeconds": 0},' 1 1 "$rerun"
kill_at_rerun lateend
lateend_job=$(cat slowbin/queued)
for _ in $(seq 1 300); do [ -e "$WORK/runs/lateend/1/slurm/$lateend_job-0/outcome" ] && break; sleep 0.1; done
check lateend_rerun_ran test -e "$WORK/runs/lateend/1/slurm/$lateend_job-0/outcome"
# ... and Slurm lists it no more (COMPLETING a moment after its last write): else the
# resume finds it live by its name and attaches to it as to a live job
wait_queue_empty
check lateend_id_not_stored test "$(trial_field lateend executor_job)" != "slurm:$lateend_job"
"$TUNER" resume lateend >lateend.out 2>&1; rc=$?
check lateend_resume_exit0 test $rc -eq 0
check lateend_attached_ended grep -q "re-attached to its job (slurm:$lateend_job)" lateend.out
check lateend_told grep -q "Slurm job $lateend_job (re-attached: a later job of the trial than the stored job" lateend.out
check lateend_succeeded test "$(count_state lateend SUCCEEDED)" -eq 1
check lateend_two_runs test "$(trial_field lateend attempts)" = 2
check lateend_no_third_job test "$(ls -d "$WORK"/runs/lateend/1/slurm/*-0 | wc -l)" -eq 2
check lateend_stored_handle test "$(trial_field lateend executor_job)" = "slurm:$lateend_job"
check lateend_queue_empty wait_queue_empty

# --- two tuners never share a trial -------------------------------------------------
spec twice "" 2 1 '["/bin/sh", "-c", "sleep 3; echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]'
"$TUNER" run twice.json --quiet >/dev/null 2>&1 &
pid=$!
sleep 1
err=$("$TUNER" resume twice 2>&1); rc=$?
check second_tuner_refused grep -q "cannot run: its job folder is in use by another tuner process" <<<"$err"
wait $pid
check second_tuner_first_ok test "$(count_state twice SUCCEEDED)" -eq 2

# --- a job waiting for someone (its partition down) is told on the terminal, then runs ---
spec downpart "" 1 1 '["/bin/sh", "-c", "echo \"{\\\"score\\\": \\\"1\\\"}\" > $CLOUD_ML_HP_METRIC_FILE", "sh"]' \
  "" "" '{"type": "slurm", "partition": "small", "timeLimit": "10"}'
scontrol update PartitionName=small State=DOWN
"$TUNER" run downpart.json >downpart.out 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q "PENDING (PartitionDown)" downpart.out && break; sleep 0.1; done
check down_partition_told grep -q "downpart: trial 1: Slurm job [0-9]* PENDING (PartitionDown)" downpart.out
scontrol update PartitionName=small State=UP
wait $pid; rc=$?
check down_partition_then_runs test $rc -eq 0 -a "$(count_state downpart SUCCEEDED)" -eq 1
check down_partition_routine_untold sh -c '! grep -q "PENDING (None)" downpart.out'

# --- errors a user meets ------------------------------------------------------------
spec nopart "" 1 1 '["/bin/true"]' "" "" '{"type": "slurm", "partition": "gpu"}'
err=$("$TUNER" validate nopart.json 2>&1); rc=$?
check no_partition_exit2 test $rc -eq 2
check no_partition_message grep -q "Slurm has no partition 'gpu' (it has: debug, small)" <<<"$err"
err=$("$TUNER" run nopart.json 2>&1); rc=$?
check no_partition_run_refused test $rc -eq 2
spec toobig '"resources": {"chief": {"cores": 64}},' 1 1 '["/bin/true"]'
err=$("$TUNER" validate toobig.json 2>&1)
check too_big_message grep -q "asks for 64 cores, but the largest node of Slurm partition debug has 4" <<<"$err"
spec gpus '"masterConfig": {"acceleratorConfig": {"count": 1, "type": "NVIDIA_TESLA_T4"}},' 1 1 '["/bin/true"]'
err=$("$TUNER" validate gpus.json 2>&1)
check no_gpus_message grep -q "no node of Slurm partition debug has GPUs" <<<"$err"
spec local_spec "" 1 1 '["/bin/true"]' "" "" '{"type": "local"}'
err=$(PATH=/nonexistent "$TUNER" run local_spec.json --executor=slurm 2>&1); rc=$?
check no_sbatch_exit2 test $rc -eq 2
check no_sbatch_message grep -q "needs sbatch, which is not on PATH" <<<"$err"
sed "s/^SlurmctldPort=.*/SlurmctldPort=1/" "$SLURM_CONF" >dead.conf
err=$(SLURM_CONF="$WORK/dead.conf" "$TUNER" run local_spec.json --executor=slurm 2>&1); rc=$?
check controller_down_exit2 test $rc -eq 2
check controller_down_message grep -q "cannot reach the Slurm controller" <<<"$err"
# an account Slurm refuses: the study stops at once with sbatch's word, trials kept
spec badacct "" 2 1 '["/bin/true"]' "" "" '{"type": "slurm", "extraArgs": ["--reservation=nope"]}'
err=$("$TUNER" run badacct.json 2>&1); rc=$?
check refused_exit2 test $rc -eq 2
check refused_message grep -q "Slurm refused the job of trial 1" <<<"$err"
check refused_trial_pending test "$(count_state badacct PENDING)" -eq 1
check refused_queue_empty wait_queue_empty

# --- stopping the cluster kills what its jobs left, and nothing else ------------------
# A process this shell starts has the cluster's SLURM_CONF (exported above) but is no
# job's; a daemon a job starts (setsid, its parent gone) escapes Slurm's tracking, so
# scancel leaves it, and the stop must end it.
alive() { s=$(ps -o stat= -p "$1" 2>/dev/null); [ -n "$s" ] && [ "${s#Z}" = "$s" ]; }
sleep 600 &
bystander=$!
sbatch --parsable --output=/dev/null \
  --wrap="(setsid sleep 600 </dev/null >/dev/null 2>&1 & echo \$! >$WORK/escaped.pid); sleep 600" >/dev/null
for _ in $(seq 1 100); do [ -s escaped.pid ] && break; sleep 0.1; done
escaped=$(cat escaped.pid 2>/dev/null)
check stop_job_daemon_started alive "${escaped:-0}"
"$ROOT/scripts/slurm-cluster.sh" stop "$CLUSTER" >/dev/null 2>&1
check stop_kills_job_daemon test -n "$escaped" -a "$(alive "${escaped:-0}" && echo alive)" = ""
check stop_spares_others alive $bystander
kill $bystander 2>/dev/null
wait $bystander 2>/dev/null

check_summary
