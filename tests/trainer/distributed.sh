#!/usr/bin/env bash
# distributed.sh — the trainer's distributed strategies with real processes on
# loopback, each replica told its role by TF_CONFIG as the tuner's executor does.
#
#   distributed.sh PATH/TO/trainer WORKDIR
#
# Multi-worker mirrored: chief + 1 and chief + 2 workers follow the loss curve of one
# replica with the same global batch (tolerance 2e-3 on every reported loss: only
# the order of float additions differs) and end with bit-identical parameters, with
# the all-reduce in shared memory (replicas on one host) and over the TCP ring (asked
# for, or because one replica cannot map the chief's segment, as on another host);
# bf16 all-reduce keeps replicas identical; a killed worker makes the chief exit within
# seconds naming it, and a re-run resumes from the chief's checkpoint. Parameter
# server: chief + worker + 2 ps train to useful accuracy and report staleness. An
# evaluator reports eval metrics for the chief's checkpoints and exits after the last.
# Bad cluster and flag combinations fail with exit 2 and a message naming the cause.
set -u
. "$(dirname "$0")/../check.sh"  # ok, fail, check, check_summary
. "$(dirname "$0")/trainer_lib.sh"  # fingerprint, ports, tfconfig, two_replicas, ...
begin_test "$1" "$2"

SMALL=(--max_train_examples=2000 --max_eval_examples=500 --hidden_units=64 --threads=1
       --epochs=2 --report_every=5 --lr_schedule=constant)

# Largest difference between two curves (same steps); "inf" when the steps differ.
curve_diff() {
  python3 - "$1" "$2" <<'EOF'
import sys
a = [l.split() for l in open(sys.argv[1]) if l.strip()]
b = [l.split() for l in open(sys.argv[2]) if l.strip()]
if not a or [x[0] for x in a] != [x[0] for x in b]:
    print("inf"); sys.exit()
print(max(abs(float(x[i]) - float(y[i])) for x, y in zip(a, b) for i in (1, 2)))
EOF
}
le() { python3 -c "import sys; sys.exit(0 if float('$1') <= float('$2') else 1)"; }

# --- the single-replica reference, global batch 60 -----------------------------------
"$TRAINER" "${SMALL[@]}" --batch_size=60 --job-dir=single >single.log 2>&1
check single_runs test $? -eq 0
curve single.log >single.curve

# --- multi-worker mirrored: chief + 1, chief + 2 -------------------------------------
for n in 2 3; do
  read -r -a p <<<"$(ports "$n")"
  cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": ["
  for ((i = 1; i < n; i++)); do cluster+="$([ $i -gt 1 ] && echo ,)\"localhost:${p[$i]}\""; done
  cluster+="]}"
  pids=()
  TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${SMALL[@]}" --global_batch_size=60 \
    --job-dir=mw$n >mw$n-chief.log 2>&1 & pids+=($!)
  for ((i = 0; i < n - 1; i++)); do
    TF_CONFIG="$(tfconfig "$cluster" worker $i)" "$TRAINER" "${SMALL[@]}" --global_batch_size=60 \
      --job-dir=mw$n >mw$n-worker$i.log 2>&1 & pids+=($!)
  done
  rcs=0
  for pid in "${pids[@]}"; do wait "$pid" || rcs=$((rcs + 1)); done
  check mw${n}_all_exit0 test $rcs -eq 0
  check mw${n}_batch_split grep -q "batch $((60 / n)) per replica" mw$n-chief.log
  check mw${n}_shared_memory grep -q "all-reduce over shared memory" mw$n-chief.log
  curve mw$n-chief.log >mw$n.curve
  d=$(curve_diff single.curve mw$n.curve)
  check mw${n}_same_curve_as_one_replica le "$d" 2e-3
  fp=$(fingerprint mw$n-chief.log)
  same=1
  for ((i = 0; i < n - 1; i++)); do [ "$(fingerprint mw$n-worker$i.log)" = "$fp" ] || same=0; done
  check mw${n}_identical_parameters test -n "$fp" -a $same -eq 1
  check mw${n}_chief_writes_job_dir test -s mw$n/model.ckpt
  check mw${n}_workers_write_nothing grep -q "worker 0: not the chief, so it writes no checkpoints or model" mw$n-worker0.log
done

# --- the chief + 1 job's checkpoints refused by chief + 2 (the same batch per replica):
# a configuration error naming both clusters, and the checkpoints left as they were ---
read -r -a p <<<"$(ports 3)"
cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"localhost:${p[1]}\", \"localhost:${p[2]}\"]}"
before=$(cd mw2 && md5sum model.ckpt checkpoints/*)
pids=()
for ((i = 0; i < 2; i++)); do
  TF_CONFIG="$(tfconfig "$cluster" worker $i)" "$TRAINER" "${SMALL[@]}" --batch_size=30 \
    --epochs=4 --peer_timeout=5 >mwmore-worker$i.log 2>&1 & pids+=($!)
done
TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${SMALL[@]}" --batch_size=30 --epochs=4 \
  --peer_timeout=5 --job-dir=mw2 >mwmore-chief.log 2>&1
check mw_more_replicas_exit2 test $? -eq 2
for pid in "${pids[@]}"; do wait "$pid"; done
check mw_more_replicas_named grep -q "written by a run of 2 replicas (multi_worker_mirrored, data sharding), and this run has 3 replicas (multi_worker_mirrored, data sharding)" mwmore-chief.log
check mw_more_replicas_nothing_changed test "$(cd mw2 && md5sum model.ckpt checkpoints/*)" = "$before"

# --- no chief in the cluster: worker 0 acts as the chief ------------------------------
read -r -a p <<<"$(ports 2)"
cluster="{\"worker\": [\"localhost:${p[0]}\", \"localhost:${p[1]}\"]}"
TF_CONFIG="$(tfconfig "$cluster" worker 1)" "$TRAINER" "${SMALL[@]}" --batch_size=30 \
  --job-dir=nochief >nochief-w1.log 2>&1 &
w1=$!
TF_CONFIG="$(tfconfig "$cluster" worker 0)" "$TRAINER" "${SMALL[@]}" --batch_size=30 \
  --job-dir=nochief >nochief-w0.log 2>&1
w0=$?
wait $w1
check nochief_exit0 test $w0 -eq 0 -a $? -eq 0
check nochief_worker0_writes_job_dir test -s nochief/model.ckpt
check nochief_worker1_private grep -q "not the chief" nochief-w1.log
check nochief_identical test "$(fingerprint nochief-w0.log)" = "$(fingerprint nochief-w1.log)"

# --- several devices in one process: mirrored and central_storage ---------------------
for s in mirrored central_storage; do
  "$TRAINER" "${SMALL[@]/--threads=1/--threads=2}" --strategy=$s --devices=2 \
    --global_batch_size=60 --job-dir=$s >$s.log 2>&1
  check ${s}_exit0 test $? -eq 0
  check ${s}_two_replicas grep -q "$s: 2 replicas in this process, batch 30 each" $s.log
  curve $s.log >$s.curve
  check ${s}_same_curve_as_one_replica le "$(curve_diff single.curve $s.curve)" 2e-3
  check ${s}_checkpoints test -s $s/model.ckpt
done
check mirrored_central_agree test "$(fingerprint mirrored.log)" = "$(fingerprint central_storage.log)"
# a run stopped by SIGTERM resumes from its checkpoint to the same end
"$TRAINER" "${SMALL[@]}" --strategy=mirrored --devices=2 --epochs=40 --job-dir=mstop >mstop.log 2>&1 &
m=$!
for _ in $(seq 200); do compgen -G "mstop/checkpoints/ckpt-*" >/dev/null && break; sleep 0.05; done
kill -TERM $m
wait $m
check mirrored_sigterm_143 test $? -eq 143
"$TRAINER" "${SMALL[@]}" --strategy=mirrored --devices=2 --epochs=40 --job-dir=mstop >mstop2.log 2>&1
check mirrored_resumes grep -q "resumed from mstop/checkpoints" mstop2.log

# --- SIGTERM to one replica of a multi-worker cluster stops all of them after the same
# step: its stop vote goes out with a step's gradients, and a signal that comes after the
# vote (in the all-reduce, the update, a report) waits for the next step's, so that no
# replica stops alone and leaves the others to lose it. Both exit 143, the chief with
# the checkpoint of that step. Each replica, over shared memory and over TCP.
for round in "worker shm" "chief shm" "worker tcp" "chief tcp"; do
  read -r target transport <<<"$round"
  name=stop-$target-$transport
  read -r -a p <<<"$(ports 2)"
  cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"localhost:${p[1]}\"]}"
  TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${SMALL[@]}" --epochs=400 --batch_size=30 \
    --allreduce_transport=$transport --job-dir=$name >$name-chief.log 2>&1 &
  c=$!
  TF_CONFIG="$(tfconfig "$cluster" worker 0)" "$TRAINER" "${SMALL[@]}" --epochs=400 --batch_size=30 \
    --allreduce_transport=$transport >$name-worker.log 2>&1 &
  w=$!
  for _ in $(seq 400); do compgen -G "$name/checkpoints/ckpt-*" >/dev/null && break; sleep 0.05; done
  sleep 0.3
  if [ "$target" = chief ]; then kill -TERM $c; else kill -TERM $w; fi
  wait $c; crc=$?
  wait $w; wrc=$?
  cstep=$(sed -n 's/^stopped by signal 15 at step \([0-9]*\).*/\1/p' $name-chief.log)
  wstep=$(sed -n 's/^stopped by signal 15 at step \([0-9]*\).*/\1/p' $name-worker.log)
  if [ $crc -eq 143 ] && [ $wrc -eq 143 ] && [ -n "$cstep" ] && [ "$cstep" = "$wstep" ] &&
     grep -q "at step $cstep (checkpoint saved)" $name-chief.log; then
    ok "sigterm_${target}_${transport}_stops_both"
  else
    fail "sigterm_${target}_${transport}_stops_both" "chief exit $crc at step '$cstep', worker exit $wrc at step '$wstep': $(tail -n 2 $name-chief.log $name-worker.log | tr '\n' ' ')"
  fi
done

# --- bf16 all-reduce, and the other shard policies: replicas stay identical -----------
for variant in "bf16 --allreduce_precision=bf16" "file --shard_policy=file" "off --shard_policy=off" \
               "buckets --allreduce_bucket_mb=0.001" "onebucket --allreduce_bucket_mb=0" \
               "tcp --allreduce_transport=tcp" \
               "tcpbf16 --allreduce_transport=tcp --allreduce_precision=bf16" \
               "tcpbuckets --allreduce_transport=tcp --allreduce_bucket_mb=0.001"; do
  read -r name flag <<<"$variant"
  read -r -a p <<<"$(ports 2)"
  cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"localhost:${p[1]}\"]}"
  TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${SMALL[@]}" --batch_size=30 $flag \
    --job-dir=$name >$name-chief.log 2>&1 &
  c=$!
  TF_CONFIG="$(tfconfig "$cluster" worker 0)" "$TRAINER" "${SMALL[@]}" --batch_size=30 $flag \
    --job-dir=$name >$name-worker.log 2>&1
  w=$?
  wait $c
  check ${name}_exit0 test $? -eq 0 -a $w -eq 0
  fp=$(fingerprint $name-chief.log)
  check ${name}_identical_parameters test -n "$fp" -a "$fp" = "$(fingerprint $name-worker.log)"
  acc=$(curve $name-chief.log | tail -1 | cut -d' ' -f3)
  check ${name}_learns le "$acc" 1.2
done
check buckets_overlapped grep -q "in 2 buckets, overlapped with the backward pass" buckets-chief.log
check onebucket_not_overlapped grep -q "in 1 bucket$" onebucket-chief.log
check tcp_as_asked grep -q "all-reduce over TCP (as asked)" tcp-chief.log
for v in buckets onebucket tcp tcpbuckets; do
  curve $v-chief.log >$v.curve
  check ${v}_same_curve le "$(curve_diff mw2.curve $v.curve)" 2e-3
done
for v in bf16 tcpbf16; do
  curve $v-chief.log >$v.curve
  check ${v}_close_to_fp32 le "$(curve_diff mw2.curve $v.curve)" 5e-2
done

# --- a replica that cannot map the chief's segment (another host, or another /dev/shm)
# makes auto fall back to TCP, saying why; --allreduce_transport=shm refuses --------
mkdir -p othershm
for mode in auto shm; do
  read -r -a p <<<"$(ports 2)"
  cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"localhost:${p[1]}\"]}"
  TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${SMALL[@]}" --batch_size=30 \
    --allreduce_transport=$mode --job-dir=apart$mode >apart$mode-chief.log 2>&1 &
  c=$!
  TF_CONFIG="$(tfconfig "$cluster" worker 0)" TRAINER_SHM_DIR="$WORK/othershm" "$TRAINER" \
    "${SMALL[@]}" --batch_size=30 --allreduce_transport=$mode --job-dir=apart$mode \
    >apart$mode-worker.log 2>&1
  w=$?
  wait $c
  cr=$?
  if [ $mode = auto ]; then
    check apart_auto_exit0 test $cr -eq 0 -a $w -eq 0
    check apart_auto_says_why grep -q "all-reduce over TCP (1 of 2 replicas could not map chief 0" apart$mode-chief.log
    check apart_auto_names_cause grep -q "cannot open $WORK/othershm/trainer-allreduce-" apart$mode-worker.log
    fp=$(fingerprint apartauto-chief.log)
    check apart_auto_identical test -n "$fp" -a "$fp" = "$(fingerprint apartauto-worker.log)"
    curve apartauto-chief.log >apartauto.curve
    check apart_auto_same_curve le "$(curve_diff mw2.curve apartauto.curve)" 2e-3
  else
    check apart_shm_exit2 test $cr -eq 2 -a $w -eq 2
    check apart_shm_says_why grep -q "allreduce_transport=shm is not possible" apart$mode-chief.log
  fi
done
check apart_no_segment_left test -z "$(ls othershm)"

# --- a killed worker: the chief notices within seconds; a re-run resumes -------------
LONG=(--max_train_examples=12000 --max_eval_examples=300 --hidden_units=64 --threads=1
      --epochs=8 --batch_size=50)
# kill_worker NAME [FLAG...]: chief + worker on new ports (left in $cluster and $p);
# the worker is killed once the chief has checkpointed, and the chief must exit 1
# within 5 s naming it.
kill_worker() {
  local name=$1; shift
  read -r -a p <<<"$(ports 2)"
  cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"localhost:${p[1]}\"]}"
  TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${LONG[@]}" "$@" --job-dir=$name \
    >$name-chief.log 2>&1 &
  local c=$!
  TF_CONFIG="$(tfconfig "$cluster" worker 0)" "$TRAINER" "${LONG[@]}" "$@" --job-dir=$name \
    >$name-worker.log 2>&1 &
  local w=$!
  for _ in $(seq 200); do compgen -G "$name/checkpoints/ckpt-*" >/dev/null && break; sleep 0.05; done
  kill -9 $w
  # the worker wrote nothing of its own (workers had a private /tmp/trainer-worker-*
  # folder, which outlived the SIGKILL)
  check ${name}_killed_worker_wrote_nothing grep -q "not the chief, so it writes no checkpoints" $name-worker.log
  local t0 rc took
  t0=$(date +%s.%N)
  wait $c
  rc=$?
  took=$(python3 -c "print($(date +%s.%N) - $t0)")
  check ${name}_chief_exits_nonzero test $rc -eq 1
  check ${name}_chief_notices_in_seconds le "$took" 5
  check ${name}_chief_names_worker grep -q "lost worker 0 (localhost:${p[1]})" $name-chief.log
}
kill_worker kill # shared memory
TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${LONG[@]}" --job-dir=kill >kill2-chief.log 2>&1 &
c=$!
TF_CONFIG="$(tfconfig "$cluster" worker 0)" "$TRAINER" "${LONG[@]}" --job-dir=kill >kill2-worker.log 2>&1
w=$?
wait $c
check kill_rerun_exit0 test $? -eq 0 -a $w -eq 0
check kill_rerun_chief_resumes grep -q "resumed from kill/checkpoints/ckpt-" kill2-chief.log
check kill_rerun_worker_resumes grep -q "resumed from the chief's state" kill2-worker.log
fp=$(fingerprint kill2-chief.log)
check kill_rerun_identical test -n "$fp" -a "$fp" = "$(fingerprint kill2-worker.log)"
kill_worker killtcp --allreduce_transport=tcp # the chief's socket reports the loss at once

# --- a peer that never comes is named -------------------------------------------------
read -r -a p <<<"$(ports 2)"
cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"localhost:${p[1]}\"]}"
TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${SMALL[@]}" --peer_timeout=1 \
  --job-dir=lonely >lonely.log 2>&1
check missing_peer_exit1 test $? -eq 1
check missing_peer_named grep -q "waiting for worker 0 at localhost:${p[1]}" lonely.log

# --- one address in two spellings: the replica meets itself, and says so --------------
# (the duplicate check compares the strings; it was "says it is rank 0 of 2, but this
# replica expects rank 1 of 2", exit 1)
read -r -a p <<<"$(ports 1)"
TF_CONFIG="$(tfconfig "{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"127.0.0.1:${p[0]}\"]}" chief 0)" \
  "$TRAINER" "${SMALL[@]}" --peer_timeout=10 --job-dir=itself >itself.log 2>&1; rc=$?
check itself_exit2 test $rc -eq 2
check itself_says grep -q "worker 0 (127.0.0.1:${p[0]}) is this replica itself (chief 0 (localhost:${p[0]})): TF_CONFIG's cluster names one address twice" itself.log

# waiting LOG...: until every LOG says its replica waits for its peers (10 s at most)
waiting() {
  local all f
  for _ in $(seq 1 100); do
    all=1
    for f; do grep -q "waiting for the others" "$f" 2>/dev/null || all=0; done
    [ $all = 1 ] && return 0
    sleep 0.1
  done
  return 1
}
# ms_since NS: milliseconds since the date +%s%N time NS
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# --- a stop request while replicas wait for their peers ends the wait at once ----------
# Of a cluster of three, the chief and worker 0 only: the chief has connected to worker 0
# and waits for worker 1 to connect to it (accept); worker 0 keeps trying to connect to
# worker 1. SIGTERM to both: exit 143 within a second or two, not after --peer_timeout.
read -r -a p <<<"$(ports 3)"
cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"localhost:${p[1]}\", \"localhost:${p[2]}\"]}"
TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${SMALL[@]}" --peer_timeout=60 \
  --job-dir=waitstop >waitstop-chief.log 2>&1 & c=$!
TF_CONFIG="$(tfconfig "$cluster" worker 0)" "$TRAINER" "${SMALL[@]}" --peer_timeout=60 \
  >waitstop-worker.log 2>&1 & w=$!
waiting waitstop-chief.log waitstop-worker.log
sleep 0.5 # into their waits
start=$(date +%s%N)
kill -TERM $c $w
wait $c; crc=$?
wait $w; wrc=$?
took_ms=$(ms_since "$start")
check wait_stop_exit143 test $crc -eq 143 -a $wrc -eq 143
check wait_stop_at_once test $took_ms -lt 5000
check wait_stop_chief_says grep -q "trainer: stopped by signal 15 while waiting for worker 1 (localhost:${p[2]}) to connect to this replica" waitstop-chief.log
check wait_stop_worker_says grep -q "trainer: stopped by signal 15 while waiting for worker 1 at localhost:${p[2]}" waitstop-worker.log

# --- a stranger's silent connection does not keep the ring from forming ---------------
# (a port scan, a health probe): it was read until --peer_timeout, the real peer's
# connection waiting behind it, and both replicas failed; and a SIGTERM then waited too
read -r -a p <<<"$(ports 2)"
cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"localhost:${p[1]}\"]}"
silent() { python3 -c "import socket, sys, time
s = socket.create_connection(('localhost', int(sys.argv[1])))
time.sleep(60)" "$1" >/dev/null 2>&1 & echo $!; }
TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${SMALL[@]}" --peer_timeout=30 \
  --job-dir=stranger >stranger-chief.log 2>&1 & c=$!
waiting stranger-chief.log
s=$(silent "${p[0]}")
sleep 0.5
start=$(date +%s%N)
TF_CONFIG="$(tfconfig "$cluster" worker 0)" "$TRAINER" "${SMALL[@]}" --peer_timeout=30 \
  >stranger-worker.log 2>&1; wrc=$?
wait $c; crc=$?
took_ms=$(ms_since "$start")
kill "$s" 2>/dev/null; wait "$s" 2>/dev/null
check stranger_ring_trains test $crc -eq 0 -a $wrc -eq 0
check stranger_ring_no_timeout test $took_ms -lt 25000
read -r -a p <<<"$(ports 2)"
cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"localhost:${p[1]}\"]}"
# the chief connects to the worker (stopped: its kernel accepts), then reads the
# stranger's hello; SIGTERM ends that read at once
TF_CONFIG="$(tfconfig "$cluster" worker 0)" "$TRAINER" "${SMALL[@]}" --peer_timeout=30 \
  >strangestop-worker.log 2>&1 & w=$!
waiting strangestop-worker.log
kill -STOP $w
TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${SMALL[@]}" --peer_timeout=30 \
  --job-dir=strangestop >strangestop-chief.log 2>&1 & c=$!
waiting strangestop-chief.log
s=$(silent "${p[0]}")
sleep 1
start=$(date +%s%N)
kill -TERM $c; wait $c; crc=$?
took_ms=$(ms_since "$start")
kill -KILL $w "$s" 2>/dev/null; wait $w "$s" 2>/dev/null
check stranger_sigterm_exit143 test $crc -eq 143
check stranger_sigterm_at_once test $took_ms -lt 3000

# --- replicas with other flags refuse to train together ------------------------------
read -r -a p <<<"$(ports 2)"
cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"localhost:${p[1]}\"]}"
TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${SMALL[@]}" --learning_rate=0.1 \
  --peer_timeout=5 --job-dir=mismatch >mismatch-chief.log 2>&1 &
c=$!
TF_CONFIG="$(tfconfig "$cluster" worker 0)" "$TRAINER" "${SMALL[@]}" --learning_rate=0.2 \
  --peer_timeout=5 --job-dir=mismatch >mismatch-worker.log 2>&1
w=$?
wait $c
cr=$?
check mismatch_both_fail test $cr -ne 0 -a $w -ne 0
check mismatch_named grep -q "different configuration" mismatch-chief.log mismatch-worker.log
# a usage error, not worth a restart: both say so and exit 2 (it was exit 1)
check mismatch_exit2 test $cr -eq 2 -a $w -eq 2
check mismatch_both_named grep -q "different configuration: the optimiser" mismatch-worker.log

# --- replicas of two trials on one cluster's ports do not train together ------------
# (with the same flags they used to: one ring of two jobs, their gradients summed)
read -r -a p <<<"$(ports 2)"
cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"localhost:${p[1]}\"]}"
trialcfg() { echo "{\"cluster\": $cluster, \"task\": {\"type\": \"$1\", \"index\": 0, \"trial\": \"$2\"}}"; }
TF_CONFIG="$(trialcfg chief 7)" "$TRAINER" "${SMALL[@]}" --peer_timeout=3 \
  --job-dir=trial7 >trial7-chief.log 2>&1 &
c=$!
TF_CONFIG="$(trialcfg worker 8)" "$TRAINER" "${SMALL[@]}" --peer_timeout=3 \
  --job-dir=trial8 >trial8-worker.log 2>&1
w=$?
wait $c
cr=$?
check other_trial_both_fail test $cr -eq 1 -a $w -eq 1
check other_trial_named grep -q "a replica of another job (rank 1 of 2 of another trial), turned away" trial7-chief.log
check other_trial_no_training test ! -e trial7/model.ckpt -a ! -e trial8/model.ckpt

# --- parameter server: chief + worker + 2 ps -------------------------------------------
read -r -a p <<<"$(ports 4)"
cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"localhost:${p[1]}\"], \"ps\": [\"localhost:${p[2]}\", \"localhost:${p[3]}\"]}"
PSF=(--max_train_examples=6000 --max_eval_examples=1000 --hidden_units=64 --threads=1
     --epochs=3 --batch_size=50 --learning_rate=0.05)
TF_CONFIG="$(tfconfig "$cluster" ps 0)" "$TRAINER" "${PSF[@]}" >ps0.log 2>&1 &
ps0=$!
TF_CONFIG="$(tfconfig "$cluster" ps 1)" "$TRAINER" "${PSF[@]}" >ps1.log 2>&1 &
ps1=$!
TF_CONFIG="$(tfconfig "$cluster" worker 0)" "$TRAINER" "${PSF[@]}" --job-dir=psjob >ps-worker.log 2>&1 &
w=$!
TF_CONFIG="$(tfconfig "$cluster" chief 0)" CLOUD_ML_HP_METRIC_FILE="$WORK/ps.metrics" \
  "$TRAINER" "${PSF[@]}" --job-dir=psjob >ps-chief.log 2>&1
check ps_chief_exit0 test $? -eq 0
wait $w
check ps_worker_exit0 test $? -eq 0
wait $ps0; r0=$?
wait $ps1; r1=$?
check ps_tasks_exit0_when_done test $r0 -eq 0 -a $r1 -eq 0
acc=$(curve ps-chief.log | tail -1 | cut -d' ' -f3)
check ps_useful_accuracy le 0.70 "$(sed -nE 's/.*accuracy ([0-9.]+) +[0-9]+ examples.*/\1/p' ps-chief.log | tail -1)"
check ps_reports_staleness grep -q '"staleness"' ps.metrics
check ps_logs_staleness grep -q "largest staleness seen" ps-chief.log
check ps_model_saved test -s psjob/model.ckpt

# a ps started with other optimiser flags refuses the chief's variables
read -r -a p <<<"$(ports 2)"
cluster="{\"chief\": [\"localhost:${p[0]}\"], \"ps\": [\"localhost:${p[1]}\"]}"
TF_CONFIG="$(tfconfig "$cluster" ps 0)" "$TRAINER" "${PSF[@]}" --learning_rate=0.1 >psopt-ps.log 2>&1 &
ps0=$!
TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${PSF[@]}" --job-dir=psopt >psopt-chief.log 2>&1
check ps_optimiser_mismatch_fails test $? -ne 0
check ps_optimiser_mismatch_named grep -q "ps 0 was started with other optimiser flags than the chief (--learning_rate: 0.1 here, 0.05 on the chief)" psopt-chief.log
kill $ps0 2>/dev/null
wait $ps0 2>/dev/null

# --- the evaluator follows the chief's checkpoints -----------------------------------
read -r -a p <<<"$(ports 2)"
cluster="{\"chief\": [\"localhost:${p[0]}\"], \"worker\": [\"localhost:${p[1]}\"]}"
EVF=(--max_train_examples=2000 --max_eval_examples=500 --hidden_units=64 --threads=1
     --epochs=3 --batch_size=50)
TF_CONFIG="$(tfconfig "$cluster" evaluator 0)" CLOUD_ML_HP_METRIC_FILE="$WORK/eval.metrics" \
  "$TRAINER" "${EVF[@]}" --job-dir=evjob >evaluator.log 2>&1 &
e=$!
TF_CONFIG="$(tfconfig "$cluster" chief 0)" "$TRAINER" "${EVF[@]}" --job-dir=evjob >ev-chief.log 2>&1 &
c=$!
TF_CONFIG="$(tfconfig "$cluster" worker 0)" "$TRAINER" "${EVF[@]}" --job-dir=evjob >ev-worker.log 2>&1
wait $c
timeout 30 tail --pid=$e -f /dev/null
wait $e
check evaluator_exit0 test $? -eq 0
check evaluator_reports_eval_metrics grep -q '"eval_accuracy"' eval.metrics
check evaluator_saw_final grep -q "evaluated the final checkpoint (step 60)" evaluator.log
check evaluator_reports_steps test "$(grep -c eval_loss eval.metrics)" -ge 1

# --- bad clusters and flags: exit 2 naming the problem -------------------------------
two='{"chief": ["localhost:1"], "worker": ["localhost:2"]}'
expect_usage() {
  local name=$1 want=$2; shift 2
  local out
  out=$("$@" 2>&1)
  local rc=$?
  check "${name}_exit2" test $rc -eq 2
  grep -q -- "$want" <<<"$out" || fail "${name}_message" "wanted '$want', got: $out"
}
expect_usage global_batch_divides "does not divide among 2 replicas" \
  env TF_CONFIG="$(tfconfig "$two" chief 0)" "$TRAINER" "${SMALL[@]}" --global_batch_size=61
expect_usage batch_disagrees "disagree" \
  env TF_CONFIG="$(tfconfig "$two" chief 0)" "$TRAINER" "${SMALL[@]}" --batch_size=10 --global_batch_size=60
expect_usage one_device_in_cluster "runs in one process" \
  env TF_CONFIG="$(tfconfig "$two" chief 0)" "$TRAINER" "${SMALL[@]}" --strategy=one_device
expect_usage ps_needs_ps_tasks "needs ps tasks" \
  env TF_CONFIG="$(tfconfig "$two" chief 0)" "$TRAINER" "${SMALL[@]}" --strategy=parameter_server
expect_usage bf16_needs_allreduce "bf16 applies to" "$TRAINER" "${SMALL[@]}" --allreduce_precision=bf16
expect_usage bad_strategy "must be one of" "$TRAINER" --strategy=horovod
expect_usage bad_transport "must be one of" "$TRAINER" --allreduce_transport=udp
expect_usage transport_needs_multi_worker "allreduce_transport applies to" "$TRAINER" "${SMALL[@]}" --allreduce_transport=shm
expect_usage bad_bucket "allreduce_bucket_mb must be" "$TRAINER" --allreduce_bucket_mb=-1
expect_usage bad_peer_timeout "peer_timeout must be" "$TRAINER" --peer_timeout=0
expect_usage devices_need_in_process "--devices applies to" "$TRAINER" "${SMALL[@]}" --strategy=one_device --devices=2
expect_usage devices_shard_data "applies to the multi-worker" "$TRAINER" "${SMALL[@]}" --devices=2 --shard_policy=off
expect_usage devices_batch_divides "does not divide among 3 replicas" "$TRAINER" "${SMALL[@]}" --devices=3 --global_batch_size=100
expect_usage in_process_not_in_cluster "runs in one process" \
  env TF_CONFIG="$(tfconfig "$two" chief 0)" "$TRAINER" "${SMALL[@]}" --strategy=mirrored --devices=2
expect_usage bad_tf_config "task.index" env TF_CONFIG='{"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker"}}' "$TRAINER" "${SMALL[@]}"
expect_usage index_out_of_range "TF_CONFIG" env TF_CONFIG="$(tfconfig "$two" worker 3)" "$TRAINER" "${SMALL[@]}"
expect_usage evaluator_needs_job_dir "needs --job-dir" env TF_CONFIG="$(tfconfig "$two" evaluator 0)" "$TRAINER" "${SMALL[@]}"

check_summary
