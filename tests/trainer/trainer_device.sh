#!/usr/bin/env bash
# trainer_device.sh — the trainer's device flags and its GPU code paths, on any machine.
#
#   trainer_device.sh PATH/TO/trainer WORKDIR
#
# With TRAINER_EMULATE_DEVICE=1 the trainer runs the code written for GPUs (data on
# the device, batches gathered there, loss summed there, update with its scalars in
# device memory, buffers reached only by upload and download) on the CPU backend
# presented as a device (kernels.h, kn_cpu_device). Without dropout that path must give
# the host path's parameters bit for bit, in every strategy; checkpoints move between
# the two paths; resuming is bit-identical on both; divergence is reported at the same
# step; a failed graph recording falls back to direct calls with the same result
# (TRAINER_EMULATE_GRAPH_FAILURE=1); tf32 and bf16 products round as on a GPU; a
# parameter-server job mixes CPU and device replicas (and precisions), while a
# multi-worker job that mixes them is refused, naming what differs. Also the --device
# and --precision usage errors (exit 2). Uses the first
# 2000/500 examples of Fashion-MNIST (Debian's dataset-fashion-mnist). Each case prints
# "ok NAME" or "FAIL NAME: why"; the last line is "N passed, N failed".
set -u
. "$(dirname "$0")/../check.sh"  # ok, fail, check, check_summary
. "$(dirname "$0")/trainer_lib.sh"  # fingerprint, ports, tfconfig, two_replicas, ...
begin_test "$1" "$2"
export CLOUD_ML_HP_METRIC_FILE="$WORK/default.metrics"
unset TRAINER_EMULATE_DEVICE TRAINER_EMULATE_GRAPH_FAILURE CUDA_VISIBLE_DEVICES
emu() { TRAINER_EMULATE_DEVICE=1 "$TRAINER" "$@"; }

SMALL=(--max_train_examples=2000 --max_eval_examples=500 --hidden_units=64 --threads=1
       --batch_size=100 --epochs=2 --learning_rate=0.1)

# --help and usage errors ---------------------------------------------------------------
out=$("$TRAINER" --help)
check help_lists_device grep -q -- "--device" <<<"$out"
check help_lists_precision grep -q -- "--precision" <<<"$out"
gpu=0
"$TRAINER" --device=gpu "${SMALL[@]}" --epochs=1 --max_train_examples=200 >gpu.log 2>&1 && gpu=1
if [ $gpu -eq 0 ]; then
  err=$(cat gpu.log)
  "$TRAINER" --device=gpu "${SMALL[@]}" >/dev/null 2>&1
  check device_gpu_without_gpu_exit2 test $? -eq 2
  check device_gpu_without_gpu_message grep -q "error: --device=gpu: .*hint:" <<<"$err"
  # CUDA_VISIBLE_DEVICES naming a GPU that is not there: the default is the CPU
  CUDA_VISIBLE_DEVICES=0 "$TRAINER" "${SMALL[@]}" --epochs=1 >cvd.log 2>&1
  check cvd_without_gpu_runs_on_cpu test $? -eq 0
  check cvd_without_gpu_no_device_line sh -c "! grep -q 'device: GPU' cvd.log"
else
  err=$("$TRAINER" --device=gpu --strategy=mirrored --devices=64 "${SMALL[@]}" 2>&1)
  check device_too_many_gpus_exit2 test $? -eq 2
  check device_too_many_gpus_message grep -q "GPUs\? \(is\|are\) visible" <<<"$err"
fi
err=$("$TRAINER" --precision=bf16 --device=cpu "${SMALL[@]}" 2>&1); rc=$?
check precision_on_cpu_exit2 test $rc -eq 2
check precision_on_cpu_message grep -q "precision=bf16 needs --device=gpu" <<<"$err"
err=$("$TRAINER" --precision=tf32 "${SMALL[@]}" 2>&1); rc=$?
if [ $gpu -eq 0 ]; then
  check precision_default_cpu_exit2 test $rc -eq 2
fi
err=$("$TRAINER" --device=tpu "${SMALL[@]}" 2>&1); rc=$?
check bad_device_exit2 test $rc -eq 2
check bad_device_message grep -q "auto|cpu|gpu" <<<"$err"
err=$("$TRAINER" --precision=fp16 "${SMALL[@]}" 2>&1); rc=$?
check bad_precision_exit2 test $rc -eq 2
check bad_precision_message grep -q "fp32|tf32|bf16" <<<"$err"

# The GPU code paths on the CPU: the same parameters as the host path ----------------------
"$TRAINER" "${SMALL[@]}" --report_every=7 --checkpoint_every=5 --job-dir=host \
  >host.log 2>&1
CLOUD_ML_HP_METRIC_FILE=$WORK/host.metrics "$TRAINER" "${SMALL[@]}" --report_every=7 \
  --job-dir=host2 >/dev/null 2>&1
CLOUD_ML_HP_METRIC_FILE=$WORK/emu.metrics emu "${SMALL[@]}" --report_every=7 \
  --checkpoint_every=5 --job-dir=emu >emu.log 2>&1
check emulated_exit0 test $? -eq 0
check emulated_says_so grep -q "device: the CPU presented as a device" emu.log
check emulated_same_model cmp -s host/model.ckpt emu/model.ckpt
check emulated_same_metrics cmp -s <(stable_metrics host.metrics) <(stable_metrics emu.metrics)
# (the host's first conv layer would take the direct convolution, which the device,
# as CUDA, does not: im2col on both sides)
for opt in adam nesterov; do
  TN_CPU_NO_DIRECT=1 "$TRAINER" "${SMALL[@]}" --model=cnn --conv_filters=4,8 --hidden_units=16 --optimizer=$opt \
    --learning_rate=0.01 --job-dir=cnn_host_$opt >/dev/null 2>&1
  emu "${SMALL[@]}" --model=cnn --conv_filters=4,8 --hidden_units=16 --optimizer=$opt \
    --learning_rate=0.01 --job-dir=cnn_emu_$opt >/dev/null 2>&1
  check emulated_cnn_${opt}_same_model cmp -s cnn_host_$opt/model.ckpt cnn_emu_$opt/model.ckpt
done
for shard in file off; do
  "$TRAINER" "${SMALL[@]}" --shard_policy=$shard --job-dir=sh_host_$shard >/dev/null 2>&1
  emu "${SMALL[@]}" --shard_policy=$shard --job-dir=sh_emu_$shard >/dev/null 2>&1
  check emulated_shard_${shard}_same_model cmp -s sh_host_$shard/model.ckpt \
    sh_emu_$shard/model.ckpt
done

# Resuming in the middle of an epoch (from a checkpoint kept alone) is bit-identical, ---
# on both paths, with dropout and file sharding; checkpoints move between the paths
RESUME=(--max_train_examples=2000 --max_eval_examples=500 --hidden_units=64 --threads=1
        --batch_size=100 --epochs=3 --checkpoint_every=7 --keep_checkpoints=100)
resume_case() { # NAME RUNNER-OF-REF RUNNER-OF-RESUME EXTRA-FLAGS...
  local name=$1 first=$2 second=$3; shift 3
  $first "${RESUME[@]}" "$@" --job-dir="$name.ref" >"$name.ref.log" 2>&1
  cp -r "$name.ref" "$name.cut" && rm -f "$name.cut/model.ckpt"
  find "$name.cut/checkpoints" -name 'ckpt-*' ! -name 'ckpt-000000000028.ckpt' -delete
  $second "${RESUME[@]}" "$@" --job-dir="$name.cut" >"$name.cut.log" 2>&1
  check ${name}_resumed grep -q "resumed from .*ckpt-000000000028.ckpt (epoch 2, step 28)" \
    "$name.cut.log"
  check ${name}_bit_identical cmp -s "$name.ref/model.ckpt" "$name.cut/model.ckpt"
}
resume_case resume_emulated_dropout emu emu --dropout=0.3
resume_case resume_host_file_shard "$TRAINER" "$TRAINER" --shard_policy=file
resume_case resume_emulated_file_shard emu emu --shard_policy=file
resume_case resume_host_then_emulated "$TRAINER" emu --optimizer=adam --learning_rate=0.003
resume_case resume_emulated_then_host emu "$TRAINER" --optimizer=adam --learning_rate=0.003

# Dropout on the device: deterministic, and a different draw from the host's ------------
emu "${SMALL[@]}" --dropout=0.3 --job-dir=drop1 >drop1.log 2>&1
emu "${SMALL[@]}" --dropout=0.3 --job-dir=drop2 >drop2.log 2>&1
check emulated_dropout_deterministic cmp -s drop1/model.ckpt drop2/model.ckpt
acc=$(sed -nE 's/.* accuracy ([0-9.]+) .*/\1/p' drop1.log | tail -n 1)
check emulated_dropout_learns awk -v a="$acc" 'BEGIN { exit !(a > 0.6) }'

# Several devices in one process, and replicas -------------------------------------------
DIST=(--max_train_examples=2000 --max_eval_examples=500 --hidden_units=64 --threads=1
      --epochs=2 --report_every=5 --lr_schedule=constant)
for s in mirrored central_storage; do
  "$TRAINER" "${DIST[@]}" --strategy=$s --devices=2 >$s.host.log 2>&1
  emu "${DIST[@]}" --strategy=$s --devices=2 >$s.emu.log 2>&1
  check ${s}_emulated_exit0 test $? -eq 0
  check ${s}_emulated_same_parameters same_fingerprint $s.host.log $s.emu.log
  check ${s}_emulated_through_host grep -q "sum their buffers through host memory" $s.emu.log
done
two_replicas emu mw "${DIST[@]}"
check multi_worker_emulated_exit0 test $crc -eq 0 -a $wrc -eq 0
check multi_worker_emulated_ring grep -q "all-reduced through the host, not with NCCL" \
  mw.chief.log
check multi_worker_emulated_same_parameters same_fingerprint mw.chief.log mirrored.host.log
check multi_worker_emulated_replicas_agree same_fingerprint mw.chief.log mw.worker.log

# A failed graph recording: said once, then every step's calls made directly -----------
TRAINER_EMULATE_GRAPH_FAILURE=1 emu "${SMALL[@]}" --job-dir=gfail >gfail.log 2>&1
check graph_failure_exit0 test $? -eq 0
check graph_failure_said_once test "$(grep -c 'graphs are off for this run' gfail.log)" -eq 1
check graph_failure_same_model cmp -s host/model.ckpt gfail/model.ckpt

# tf32 and bf16 on the emulated device: its products' inputs are rounded ---------------
for p in tf32 bf16; do
  emu "${SMALL[@]}" --precision=$p --job-dir=prec_$p >prec_$p.log 2>&1
  check precision_${p}_emulated_exit0 test $? -eq 0
  check precision_${p}_emulated_said grep -q "$p matrix products" prec_$p.log
  check precision_${p}_emulated_rounds sh -c "! cmp -s host/model.ckpt prec_$p/model.ckpt"
  acc=$(sed -nE 's/.* accuracy ([0-9.]+) .*/\1/p' prec_$p.log | tail -n 1)
  check precision_${p}_emulated_learns awk -v a="$acc" 'BEGIN { exit !(a > 0.6) }'
done

# Replicas on other devices: a parameter-server job takes them (its chief on the CPU,
# its worker on the device with bf16 products); multi_worker_mirrored does not, and says
# what differs ------------------------------------------------------------------------
read -r q0 q1 q2 q3 q4 <<<"$(ports 5)"
P="{\"chief\": [\"localhost:$q0\"], \"worker\": [\"localhost:$q1\"], \"ps\": [\"localhost:$q2\"]}"
tfp() { echo "{\"cluster\": $P, \"task\": {\"type\": \"$1\", \"index\": 0}}"; }
TF_CONFIG="$(tfp ps)" "$TRAINER" "${DIST[@]}" >ps.log 2>&1 &
ps=$!
TF_CONFIG="$(tfp worker)" emu "${DIST[@]}" --precision=bf16 >ps.worker.log 2>&1 &
psw=$!
TF_CONFIG="$(tfp chief)" "$TRAINER" "${DIST[@]}" --job-dir=psj >ps.chief.log 2>&1
prc=$?
wait $psw
pwrc=$?
wait $ps
check ps_mixed_devices_exit0 test $prc -eq 0 -a $pwrc -eq 0
check ps_mixed_devices_worker_on_device grep -q "presented as a device.*bf16" ps.worker.log
# The job is asynchronous: what it reaches in 2 epochs depends on how the replicas' steps
# interleave (0.39 to 0.71 in runs under ASan on 2 cores, 0.65 to 0.68 without); chance
# is 0.1, and a job whose updates went nowhere stays near it.
acc=$(sed -nE 's/.* accuracy ([0-9.]+) .*/\1/p' ps.chief.log | tail -n 1)
check ps_mixed_devices_learns awk -v a="$acc" 'BEGIN { exit !(a > 0.25) }'
M="{\"chief\": [\"localhost:$q3\"], \"worker\": [\"localhost:$q4\"]}"
tfm() { echo "{\"cluster\": $M, \"task\": {\"type\": \"$1\", \"index\": 0}}"; }
mixed_ring() { # NAME CHIEF-RUNNER WORKER-RUNNER WORKER-FLAGS... : both refuse
  local name=$1 first=$2 second=$3; shift 3
  TF_CONFIG="$(tfm chief)" $first "${DIST[@]}" --peer_timeout=10 >$name.chief.log 2>&1 &
  local c=$!
  TF_CONFIG="$(tfm worker)" $second "${DIST[@]}" --peer_timeout=10 "$@" >$name.worker.log 2>&1
  local w=$?
  wait $c
  check ${name}_refused test $? -ne 0 -a $w -ne 0
}
mixed_ring mw_cpu_and_device "$TRAINER" emu
check mw_cpu_and_device_says_what grep -q "different configuration: where the steps run" \
  mw_cpu_and_device.chief.log
mixed_ring mw_precisions emu emu --precision=tf32
check mw_precisions_says_what grep -q "different configuration: --precision" \
  mw_precisions.worker.log

# Divergence: found on the device, reported at the step it happened ----------------------
err_host=$("$TRAINER" "${SMALL[@]}" --learning_rate=1e30 2>&1 >/dev/null); rc_host=$?
err_emu=$(emu "${SMALL[@]}" --learning_rate=1e30 2>&1 >/dev/null); rc_emu=$?
check diverged_emulated_exit2 test $rc_emu -eq 2 -a $rc_host -eq 2
step_host=$(grep -o 'diverged: the loss is .* at step [0-9]*' <<<"$err_host")
check diverged_emulated_same_step test -n "$step_host" -a \
  "$(grep -o 'diverged: the loss is .* at step [0-9]*' <<<"$err_emu")" = "$step_host"
# ... and where only the last step's update diverges, on the device as on the host:
# exit 2 with the same message, no model written.
for lr in 1e38 1e39; do
  rm -rf lastdiv_host lastdiv_emu
  last=(--max_train_examples=100 --batch_size=100 --max_eval_examples=100 --hidden_units=16
        --threads=1 --epochs=1 --learning_rate=$lr)
  err_host=$("$TRAINER" "${last[@]}" --job_dir="$WORK/lastdiv_host" 2>&1 >/dev/null); rc_host=$?
  err_emu=$(emu "${last[@]}" --job_dir="$WORK/lastdiv_emu" 2>&1 >/dev/null); rc_emu=$?
  check last_step_diverged_emulated_$lr test $rc_emu -eq 2 -a $rc_host -eq 2 -a \
    ! -e lastdiv_emu/model.ckpt -a ! -e lastdiv_host/model.ckpt
  check last_step_diverged_emulated_same_message_$lr test -n "$err_host" -a \
    "$(grep -o 'training diverged: .*' <<<"$err_emu")" = "$(grep -o 'training diverged: .*' <<<"$err_host")"
done

# Evaluation of a model file -------------------------------------------------------------
a=$("$TRAINER" --eval_only --model_file=host/model.ckpt --max_eval_examples=500 --threads=1 \
    | tail -n 1)
b=$(emu --eval_only --model_file=host/model.ckpt --max_eval_examples=500 --threads=1 \
    | tail -n 1)
check eval_only_emulated_same test -n "$a" -a "$a" = "$b"

check_summary
