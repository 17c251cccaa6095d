#!/usr/bin/env bash
# trainer_gpu.sh — the trainer on GPUs, end to end, against the trainer on the CPU.
#
#   trainer_gpu.sh PATH/TO/trainer WORKDIR
#
# Without a GPU or driver at all (or without CUDA in the build) it prints why and exits
# 77 (ctest: skipped); a GPU the trainer cannot use is a failure. With one: the GPU
# follows the CPU's loss curve (MLP and CNN) within tolerance; runs are deterministic,
# and the same with and without CUDA graphs (TRAINER_CUDA_GRAPHS=0); a checkpoint
# written on the GPU resumes on the CPU and the other way round; resuming on the GPU
# in the middle of an epoch is bit-identical; tf32 and bf16 train about as well as
# fp32, to other parameters; divergence is reported with its step; mirrored and
# central_storage use NCCL over two GPUs (when there are two); two multi-worker
# replicas agree (NCCL with two GPUs, else the ring through the host); a
# parameter-server worker trains on the GPU; running out of GPU memory says how much is
# free and what to lower.
#
# Data: Fashion-MNIST from $TRAINER_TEST_DATA or /usr/share/datasets/fashion-mnist when
# there, else a learnable synthetic set of 28x28 images written here as CSV (the GPU
# machines need no Debian packages). TRAINER_GPU_TEST_EMULATE=1 runs the script with
# the CPU presented as a device in the GPU's place (a test of the script itself, run by
# ctest in every build as trainer_gpu_emulated; the cases that need CUDA are left out).
set -u
. "$(dirname "$0")/../check.sh"  # ok, fail, check, check_summary
. "$(dirname "$0")/trainer_lib.sh"  # fingerprint, ports, tfconfig, two_replicas, ...
begin_test "$1" "$2"
export CLOUD_ML_HP_METRIC_FILE="$WORK/default.metrics"
unset TRAINER_EMULATE_DEVICE TRAINER_CUDA_GRAPHS
EMULATE=${TRAINER_GPU_TEST_EMULATE:-0}
# other_fingerprint LOG-A LOG-B: both printed one, and they differ
other_fingerprint() {
  local a b; a=$(fingerprint "$1"); b=$(fingerprint "$2")
  [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ]
}
# curves_close LOG-A LOG-B TOL: same report steps, every loss within TOL
curves_close() {
  python3 - "$1" "$2" "$3" <<'EOF'
import subprocess, sys
def curve(path):
    out = []
    for line in open(path):
        w = line.split()
        if "train_loss" in w and "step" in w:
            i = w.index("step")
            out.append((w[i + 1], float(w[w.index("train_loss") + 1]), float(w[w.index("loss") + 1])))
    return out
a, b, tol = curve(sys.argv[1]), curve(sys.argv[2]), float(sys.argv[3])
if not a or [x[0] for x in a] != [x[0] for x in b]:
    sys.exit(1)
worst = max(abs(x[i] - y[i]) for x, y in zip(a, b) for i in (1, 2))
print("largest loss difference %.3g" % worst)
sys.exit(0 if worst <= tol else 1)
EOF
}
near() { python3 -c "import sys; sys.exit(0 if abs(float('$1') - float('$2')) <= float('$3') else 1)"; }

# gpu ARGS...: the trainer on the GPU (or, testing the script, the emulated device)
gpu() {
  if [ "$EMULATE" = 1 ]; then
    TRAINER_EMULATE_DEVICE=1 "$TRAINER" --device=cpu "$@"
  else
    "$TRAINER" --device=gpu "$@"
  fi
}
cpu() { "$TRAINER" --device=cpu "$@"; }

# Data ---------------------------------------------------------------------------------
DATA=${TRAINER_TEST_DATA:-/usr/share/datasets/fashion-mnist}
if [ -e "$DATA/train-labels-idx1-ubyte.gz" ] || [ -e "$DATA/train-labels-idx1-ubyte" ]; then
  DATAFLAGS=(--data_dir="$DATA" --max_train_examples=3000 --max_eval_examples=1000)
  LEARNS=0.7
else
  # label L: band L of the image (rows 2L+4 and 2L+5) is bright
  make_csv() {
    awk -v n="$1" -v seed="$2" 'BEGIN { srand(seed);
      for (e = 0; e < n; e++) { L = int(rand() * 10); line = "";
        for (p = 0; p < 784; p++) { r = int(p / 28); v = int(rand() * 100);
          if (r == 2 * L + 4 || r == 2 * L + 5) v += 120; line = line v "," }
        print line L } }'
  }
  make_csv 3000 5 >train.csv
  make_csv 1000 6 >eval.csv
  DATAFLAGS=(--train_file=train.csv --eval_file=eval.csv --label_column=-1
             --feature_scale=0.00392)
  LEARNS=0.9
fi
SMALL=("${DATAFLAGS[@]}" --hidden_units=64 --threads=2 --batch_size=100 --epochs=3
       --learning_rate=0.05 --report_every=10)

# Is there a GPU? ----------------------------------------------------------------------
probe=$(gpu "${SMALL[@]}" --epochs=1 --max_train_examples=200 2>&1); rc=$?
if [ $rc -ne 0 ] && [ "$EMULATE" != 1 ] && grep -q "error: --device=gpu:" <<<"$probe"; then
  why=$(grep -o 'error: .*' <<<"$probe")
  # skipped only when there is nothing to test on: no CUDA in the build, no device, or no
  # driver at all (a driver too old for the build has /proc/driver/nvidia: that fails)
  if grep -q "this build has no CUDA backend\|cudaErrorNoDevice\|no CUDA device is visible" \
       <<<"$why" ||
     { grep -q "cudaErrorInsufficientDriver\|cudaErrorStubLibrary" <<<"$why" &&
       [ ! -e /proc/driver/nvidia ]; }; then
    echo "skipped: no GPU: $why"
    exit 77
  fi
  echo "FAIL probe: a GPU driver is there but the trainer cannot use a GPU: $why"
  echo "0 passed, 1 failed"
  exit 1
fi
check probe_exit0 test $rc -eq 0
[ "$EMULATE" = 1 ] || check probe_names_gpu grep -q "device: GPU 0: " <<<"$probe"
[ "$EMULATE" = 1 ] || check probe_uses_graphs grep -q "recorded once as a CUDA graph" <<<"$probe"
ngpu=1
if [ "$EMULATE" != 1 ] && command -v nvidia-smi >/dev/null 2>&1; then
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  [ "$ngpu" -ge 1 ] || ngpu=1
fi
echo "GPUs: $ngpu"

# The GPU follows the CPU ----------------------------------------------------------------
cpu "${SMALL[@]}" --job-dir=cpu_mlp >cpu_mlp.log 2>&1
gpu "${SMALL[@]}" --job-dir=gpu_mlp >gpu_mlp.log 2>&1
check mlp_gpu_exit0 test $? -eq 0
check mlp_gpu_follows_cpu curves_close cpu_mlp.log gpu_mlp.log 0.02
check mlp_gpu_accuracy near "$(last_accuracy gpu_mlp.log)" "$(last_accuracy cpu_mlp.log)" 0.02
CNN=("${DATAFLAGS[@]}" --model=cnn --conv_filters=8,16 --hidden_units=32 --threads=2
     --batch_size=64 --epochs=2 --learning_rate=0.05 --report_every=10)
cpu "${CNN[@]}" --job-dir=cpu_cnn >cpu_cnn.log 2>&1
gpu "${CNN[@]}" --job-dir=gpu_cnn >gpu_cnn.log 2>&1
check cnn_gpu_exit0 test $? -eq 0
check cnn_gpu_follows_cpu curves_close cpu_cnn.log gpu_cnn.log 0.02
check cnn_gpu_learns awk -v a="$(last_accuracy gpu_cnn.log)" -v t="$LEARNS" \
  'BEGIN { exit !(a > t - 0.1) }'

# Deterministic; the same with and without graphs (dropout drawn on the GPU) -------------
DROP=("${SMALL[@]}" --dropout=0.3 --optimizer=adam --learning_rate=0.003)
gpu "${DROP[@]}" --job-dir=g1 >g1.log 2>&1
gpu "${DROP[@]}" --job-dir=g2 >g2.log 2>&1
TRAINER_CUDA_GRAPHS=0 gpu "${DROP[@]}" --job-dir=g3 >g3.log 2>&1
check gpu_deterministic cmp -s g1/model.ckpt g2/model.ckpt
check gpu_graphs_same_as_calls cmp -s g1/model.ckpt g3/model.ckpt
[ "$EMULATE" = 1 ] || check no_graphs_says_so grep -q "call by call" g3.log
check gpu_dropout_learns awk -v a="$(last_accuracy g1.log)" -v t="$LEARNS" \
  'BEGIN { exit !(a > t - 0.1) }'

# Checkpoints move between devices; resuming on the GPU is bit-identical -----------------
RES=("${DATAFLAGS[@]}" --hidden_units=64 --threads=2 --batch_size=100 --epochs=4
     --keep_checkpoints=100)
# keep_only DIR STEP: DIR as if the run had stopped after checkpoint STEP
keep_only() {
  rm -f "$1/model.ckpt"
  find "$1/checkpoints" -name 'ckpt-*' ! -name "$(printf 'ckpt-%012d.ckpt' "$2")" -delete
}
gpu "${RES[@]}" --job-dir=full_gpu >full_gpu.log 2>&1
cpu "${RES[@]}" --job-dir=full_cpu >full_cpu.log 2>&1
half=$(($(ls full_gpu/checkpoints | sed -n 's/ckpt-0*\([0-9]*\).ckpt/\1/p' | sort -n | tail -n 1) / 2))
cp -r full_gpu g2c && keep_only g2c $half
cpu "${RES[@]}" --job-dir=g2c >g2c.log 2>&1
check gpu_to_cpu_resumed grep -q "resumed from g2c/checkpoints/.*(epoch 3, step $half)" g2c.log
check gpu_to_cpu_accuracy near "$(last_accuracy g2c.log)" "$(last_accuracy full_gpu.log)" 0.01
cp -r full_cpu c2g && keep_only c2g $half
gpu "${RES[@]}" --job-dir=c2g >c2g.log 2>&1
check cpu_to_gpu_resumed grep -q "resumed from c2g/checkpoints/.*(epoch 3, step $half)" c2g.log
check cpu_to_gpu_accuracy near "$(last_accuracy c2g.log)" "$(last_accuracy full_cpu.log)" 0.01
gpu "${RES[@]}" --epochs=3 --checkpoint_every=7 --keep_checkpoints=100 --dropout=0.2 \
  --job-dir=cut_ref >cut_ref.log 2>&1
cp -r cut_ref cut && rm -f cut/model.ckpt
find cut/checkpoints -name 'ckpt-*' ! -name 'ckpt-000000000035.ckpt' -delete
gpu "${RES[@]}" --epochs=3 --checkpoint_every=7 --keep_checkpoints=100 --dropout=0.2 \
  --job-dir=cut >cut.log 2>&1
check gpu_resume_mid_epoch grep -q "resumed from .*ckpt-000000000035.ckpt" cut.log
check gpu_resume_bit_identical cmp -s cut_ref/model.ckpt cut/model.ckpt

# Precision (the emulated device rounds the products' inputs as the GPU does) -----------
for p in tf32 bf16; do
  gpu "${SMALL[@]}" --precision=$p >prec_$p.log 2>&1
  check precision_${p}_exit0 test $? -eq 0
  check precision_${p}_said grep -q "$p matrix products" prec_$p.log
  check precision_${p}_trains near "$(last_accuracy prec_$p.log)" \
    "$(last_accuracy gpu_mlp.log)" 0.05
  check precision_${p}_rounds other_fingerprint prec_$p.log gpu_mlp.log
done
gpu "${CNN[@]}" --precision=bf16 >prec_cnn.log 2>&1
check precision_bf16_cnn_trains near "$(last_accuracy prec_cnn.log)" \
  "$(last_accuracy gpu_cnn.log)" 0.05

# Divergence -----------------------------------------------------------------------------
err=$(gpu "${SMALL[@]}" --learning_rate=1e30 2>&1 >/dev/null); rc=$?
check diverged_exit2 test $rc -eq 2
check diverged_message grep -q "training diverged: the loss is .* at step [0-9]" <<<"$err"

# Several GPUs in one process ------------------------------------------------------------
DIST=("${DATAFLAGS[@]}" --hidden_units=64 --threads=2 --epochs=2 --report_every=5
      --lr_schedule=constant)
gpu "${DIST[@]}" --global_batch_size=256 >one.log 2>&1
if [ "$ngpu" -ge 2 ] || [ "$EMULATE" = 1 ]; then
  for s in mirrored central_storage; do
    gpu "${DIST[@]}" --strategy=$s --devices=2 >$s.log 2>&1
    check ${s}_exit0 test $? -eq 0
    [ "$EMULATE" = 1 ] || check ${s}_nccl grep -q "sum their buffers with NCCL" $s.log
    check ${s}_follows_one_gpu curves_close one.log $s.log 0.01
  done
else
  echo "note: one GPU: mirrored and central_storage over two GPUs not run"
fi

# Two multi-worker replicas --------------------------------------------------------------
two_replicas gpu mw "${DIST[@]}"
check multi_worker_exit0 test $crc -eq 0 -a $wrc -eq 0
check multi_worker_replicas_agree same_fingerprint mw.chief.log mw.worker.log
check multi_worker_follows_one_gpu curves_close one.log mw.chief.log 0.01
if [ "$ngpu" -ge 2 ]; then
  check multi_worker_nccl grep -q "all-reduced with NCCL" mw.chief.log
else
  check multi_worker_transport grep -q "all-reduced with NCCL\|all-reduced through the host" \
    mw.chief.log
fi

# A parameter-server worker on the GPU ---------------------------------------------------
read -r q0 q1 q2 <<<"$(ports 3)"
P="{\"chief\": [\"localhost:$q0\"], \"worker\": [\"localhost:$q1\"], \"ps\": [\"localhost:$q2\"]}"
tfp() { echo "{\"cluster\": $P, \"task\": {\"type\": \"$1\", \"index\": 0}}"; }
# Asynchronous updates with stale gradients: at the other runs' rate (0.05, momentum 0.9)
# two epochs end anywhere from 0.41 to 0.73 on a loaded machine; at 0.02 over four
# epochs they end within 0.67 to 0.76.
PSRUN=("${DIST[@]}" --epochs=4 --learning_rate=0.02)
TF_CONFIG="$(tfp ps)" cpu "${PSRUN[@]}" >ps.log 2>&1 &
ps=$!
TF_CONFIG="$(tfp worker)" gpu "${PSRUN[@]}" >psw.log 2>&1 &
psw=$!
TF_CONFIG="$(tfp chief)" gpu "${PSRUN[@]}" --job-dir=psj >psc.log 2>&1
prc=$?
wait $psw
wait $ps
check parameter_server_exit0 test $prc -eq 0
check parameter_server_learns awk -v a="$(last_accuracy psc.log)" -v t="$LEARNS" \
  'BEGIN { exit !(a > t - 0.15) }'

# Evaluation of a model file on the GPU --------------------------------------------------
a=$(cpu --eval_only --model_file=full_cpu/model.ckpt "${DATAFLAGS[@]}" | tail -n 1)
b=$(gpu --eval_only --model_file=full_cpu/model.ckpt "${DATAFLAGS[@]}" | tail -n 1)
check eval_only_gpu_accuracy near "$(sed -nE 's/.*accuracy ([0-9.]+).*/\1/p' <<<"$a")" \
  "$(sed -nE 's/.*accuracy ([0-9.]+).*/\1/p' <<<"$b")" 0.002

# Out of GPU memory: a clear message and a hint --------------------------------------------
if [ "$EMULATE" != 1 ]; then
  err=$(gpu "${DATAFLAGS[@]}" --hidden_units=65536,65536,65536,65536 --batch_size=65536 \
        --epochs=1 2>&1 >/dev/null); rc=$?
  check oom_exit1 test $rc -eq 1
  check oom_message grep -q "out of memory" <<<"$err"
  check oom_hint grep -q "hint: the GPU has .* MiB free .*lower --batch_size" <<<"$err"
fi

check_summary
