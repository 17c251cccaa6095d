#!/usr/bin/env bash
# trainer_cli.sh — end-to-end tests of the `trainer` binary on small data.
#
#   trainer_cli.sh PATH/TO/trainer WORKDIR
#
# Uses the first 2000/500 examples of Fashion-MNIST (Debian's dataset-fashion-mnist)
# and small CSV and IDX files it writes itself. Each case prints "ok NAME" or
# "FAIL NAME: why"; the last line is "N passed, N failed"; the exit status is non-zero
# when anything failed.
set -u
. "$(dirname "$0")/../check.sh"  # ok, fail, check, check_summary
. "$(dirname "$0")/trainer_lib.sh"  # stable_metrics, ...
DATA=/usr/share/datasets/fashion-mnist
begin_test "$1" "$2"
export CLOUD_ML_HP_METRIC_FILE="$WORK/default.metrics"

# check NAME CONDITION-COMMAND... : ok when the command succeeds.
# The metric records without the fields that depend on the clock.

SMALL=(--max_train_examples=2000 --max_eval_examples=500 --hidden_units=64 --threads=1
       --batch_size=100)

# --help, unknown flags, bad values --------------------------------------------------
out=$("$TRAINER" --help); rc=$?
check help_exit0 test $rc -eq 0
for f in model hidden_units conv_filters activation dropout optimizer learning_rate momentum \
         weight_decay lr_schedule warmup_steps batch_size epochs seed threads data_dir \
         train_file eval_file label_column report_every checkpoint_every keep_checkpoints \
         job_dir eval_only model_file; do
  grep -q -- "--$f" <<<"$out" || fail help_lists_$f "--help does not list --$f"
done
ok help_lists_flags
err=$("$TRAINER" --learnig_rate=0.1 2>&1); rc=$?
check unknown_flag_exit2 test $rc -eq 2
check unknown_flag_hint grep -q "did you mean --learning_rate" <<<"$err"
err=$("$TRAINER" --epochs=abc 2>&1); rc=$?
check bad_int_exit2 test $rc -eq 2
check bad_int_message grep -q "epochs expects an integer" <<<"$err"
err=$("$TRAINER" --optimizer=adagrad 2>&1); rc=$?
check bad_enum grep -q "sgd|momentum|nesterov|adam|adamw" <<<"$err"
check bad_enum_exit2 test $rc -eq 2
# a batch larger than the data: the model's buffers are sized by the examples a step can
# have, not by --batch_size (8192 over 10 CNN examples took 2 GB)
peak=$(python3 - "$TRAINER" <<'PY'
import resource, subprocess, sys
r = subprocess.run([sys.argv[1], "--model=cnn", "--max_train_examples=10", "--max_eval_examples=10",
                    "--batch_size=8192", "--epochs=1", "--threads=1"], capture_output=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024 if r.returncode == 0 else -1)
PY
)
check big_batch_small_data_runs test "$peak" -ge 0
check big_batch_small_data_memory test "$peak" -lt 600
# a --global_batch_size too large per replica names that flag, not --batch_size
err=$("$TRAINER" "${SMALL[@]}" --global_batch_size=65537 2>&1); rc=$?
check global_batch_too_large_exit2 test $rc -eq 2
check global_batch_too_large_says grep -q -- "--global_batch_size=65537 gives 65537 examples to each of 1 replica, more than 65536" <<<"$err"
# a --job-dir that cannot be written is found before training, not at the first
# checkpoint an epoch later (a file where its folder should be: refused as root too)
: >in_the_way
err=$("$TRAINER" "${SMALL[@]}" --job-dir=in_the_way/job 2>&1); rc=$?
check job_dir_unwritable_exit1 test $rc -eq 1
check job_dir_unwritable_says grep -q "cannot create folder in_the_way: a file is in the way" <<<"$err"
check job_dir_unwritable_before_training test -z "$(grep "^epoch" <<<"$err")"
# the shard policies' names are tr_shard_name's, in --help, the flag's check and messages
check help_shard_policy_choices grep -q -- "--shard_policy=auto|data|file|off" <<<"$out"
err=$("$TRAINER" --shard_policy=bogus 2>&1); rc=$?
check bad_shard_policy_exit2 test $rc -eq 2
check bad_shard_policy_choices grep -q -- "--shard_policy must be one of auto|data|file|off, got 'bogus'" <<<"$err"
for p in file off; do
  err=$("$TRAINER" "${SMALL[@]}" --devices=2 --shard_policy=$p 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q -- "--shard_policy=$p applies to the multi-worker strategies" <<<"$err" ||
    fail devices_shard_$p "--devices=2 --shard_policy=$p gave exit $rc: $err"
done
ok devices_shard_policy_named
err=$("$TRAINER" --dropout=1 "${SMALL[@]}" 2>&1); rc=$?
check bad_dropout test $rc -eq 2
err=$("$TRAINER" --threads=-1 2>&1); rc=$?
check negative_threads test $rc -eq 2
check negative_threads_message grep -q -- "--threads must be 0 (automatic) to 1024, got -1" <<<"$err"
err=$("$TRAINER" --threads=2000 2>&1); rc=$?
check too_many_threads test $rc -eq 2
check too_many_threads_message grep -q -- "--threads must be 0 (automatic) to 1024, got 2000" <<<"$err"
# --threads=0 takes the variable: its name is in the message, not --threads (never given)
err=$(OPENBLAS_NUM_THREADS= OMP_NUM_THREADS=5000 "$TRAINER" --epochs=1 2>&1); rc=$?
check too_many_omp_threads test $rc -eq 2
check too_many_omp_threads_message grep -q -- '\$OMP_NUM_THREADS=5000 (which --threads=0 takes) is more than 1024 threads' <<<"$err"
for f in job-dir data_dir train_file eval_file model_file; do
  err=$("$TRAINER" "${SMALL[@]}" --epochs=1 "--$f=" 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q -- "is empty; give a path or leave the flag out" <<<"$err" ||
    fail empty_$f "--$f= gave exit $rc: $err"
done
ok empty_path_flags

# A model too big for the memory the process may have (4 GB of address space; the
# hidden layers' weights alone need 17 GB): a message and a hint, exit 1, no abort.
# AddressSanitizer reserves terabytes of address space, so a sanitized build cannot run
# under the limit at all.
if ldd "$TRAINER" 2>/dev/null | grep -q libasan; then
  echo "skip out_of_memory: a sanitized build cannot run under ulimit -v"
else
  err=$( (ulimit -v 4000000; "$TRAINER" "${SMALL[@]}" --hidden_units=65536,65536 --epochs=1 \
          --job-dir="$WORK/oom") 2>&1); rc=$?
  check out_of_memory_exit1 test $rc -eq 1
  check out_of_memory_message grep -q "out of memory allocating" <<<"$err"
  check out_of_memory_hint grep -q "hint: .*lower --batch_size (this run: 100 per replica)" <<<"$err"
fi

# A file-size limit (ulimit -f; Slurm passes the user's on to jobs) smaller than a
# checkpoint: the write fails and says so, where SIGXFSZ used to kill the trainer and
# leave its temporary file behind.
err=$( (ulimit -f 100; "$TRAINER" "${SMALL[@]}" --epochs=1 --job-dir="$WORK/fsize") 2>&1); rc=$?
check file_size_limit_exit1 test $rc -eq 1
check file_size_limit_says grep -q "File too large; hint: the checkpoint is larger than the file-size limit (ulimit -f" <<<"$err"
check file_size_limit_no_temporary test -z "$(find "$WORK/fsize" -name '*.tmp*')"

# Training on a subset; both flag forms; determinism ------------------------------
CLOUD_ML_TRIAL_ID=7 CLOUD_ML_HP_METRIC_FILE=$WORK/a/metrics \
  "$TRAINER" "${SMALL[@]}" --epochs=3 --learning_rate=0.1 --job-dir="$WORK/a" >a.log 2>&1
check train_exit0 test $? -eq 0
check train_model_saved test -s a/model.ckpt
check train_three_reports test "$(wc -l <a/metrics)" -eq 3
last=$(tail -n 1 a/metrics)
for key in '"accuracy":"' '"loss":"' '"train_loss":"' '"train_accuracy":"' \
           '"examples_per_sec":"' '"global_step":"60"' '"trial":"7"' '"timestamp":'; do
  grep -q "$key" <<<"$last" || fail metric_has_$key "last record lacks $key: $last"
done
ok metric_keys
acc=$(sed -E 's/.*"accuracy":"([^"]*)".*/\1/' <<<"$last")
check learns awk -v a="$acc" 'BEGIN { exit !(a > 0.6) }'
check progress_line grep -q "epoch 3.00/3  step 60  train_loss" a.log

CLOUD_ML_TRIAL_ID=7 CLOUD_ML_HP_METRIC_FILE=$WORK/b/metrics \
  "$TRAINER" "${SMALL[@]}" --epochs 3 --learning_rate 0.1 --job_dir "$WORK/b" >b.log 2>&1
check same_seed_same_model cmp -s a/model.ckpt b/model.ckpt
check same_seed_same_metrics cmp -s <(stable_metrics a/metrics) <(stable_metrics b/metrics)
CLOUD_ML_HP_METRIC_FILE=$WORK/c/metrics \
  "$TRAINER" "${SMALL[@]}" --epochs 3 --learning_rate 0.1 --seed 2 --job_dir "$WORK/c" >c.log 2>&1
check other_seed_other_model sh -c "! cmp -s a/model.ckpt c/model.ckpt"

# Evaluation of the saved model --------------------------------------------------
out=$(CLOUD_ML_HP_METRIC_FILE=$WORK/eval.metrics "$TRAINER" --eval_only \
      --model_file="$WORK/a/model.ckpt" --max_eval_examples=500 --threads=1); rc=$?
check eval_only_exit0 test $rc -eq 0
check eval_only_same_accuracy grep -q "accuracy $(printf '%.4f' "$acc")" <<<"$out"
err=$("$TRAINER" --eval_only --model_file="$WORK/nope.ckpt" 2>&1); rc=$?
check eval_only_missing_model test $rc -eq 1
check eval_only_missing_message grep -q "nope.ckpt" <<<"$err"

# SIGKILL in the middle of epoch 3, then resume: bit-identical to no interruption ---
RESUME=(--max_train_examples=6000 --max_eval_examples=500 --threads=1 --epochs=4
        --checkpoint_every=7 --batch_size=50)
CLOUD_ML_HP_METRIC_FILE=$WORK/ref/metrics "$TRAINER" "${RESUME[@]}" --job-dir="$WORK/ref" \
  >ref.log 2>&1
killed=0
for attempt in 1 2 3 4 5; do
  rm -rf "$WORK/k"
  CLOUD_ML_HP_METRIC_FILE=$WORK/k/metrics "$TRAINER" "${RESUME[@]}" --job-dir="$WORK/k" \
    >k1.log 2>&1 &
  pid=$!
  # Wait for the end of epoch 2 (two reports), then a little into epoch 3.
  for _ in $(seq 1 2000); do
    [ -f k/metrics ] && [ "$(wc -l <k/metrics)" -ge 2 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.005
  done
  sleep "0.0$((attempt * 3))"
  if kill -9 $pid 2>/dev/null; then
    wait $pid 2>/dev/null
    if [ "$(wc -l <k/metrics)" -eq 2 ] && [ ! -f k/model.ckpt ]; then killed=1; break; fi
  else
    wait $pid 2>/dev/null
  fi
done
if [ $killed -eq 1 ]; then
  CLOUD_ML_HP_METRIC_FILE=$WORK/k/metrics "$TRAINER" "${RESUME[@]}" --job-dir="$WORK/k" \
    >k2.log 2>&1
  check resume_exit0 test $? -eq 0
  check resume_message grep -q "resumed from .*ckpt-.*(epoch 3, step" k2.log
  check resume_bit_identical cmp -s ref/model.ckpt k/model.ckpt
  check resume_same_final_metrics test "$(stable_metrics ref/metrics | tail -n 1)" = \
    "$(stable_metrics k/metrics | tail -n 1)"
else
  fail resume_kill "could not kill the trainer in epoch 3 in 5 attempts"
fi

# A corrupt newest checkpoint: reported, the previous one used, same result ----------
cp -r ref corrupt && rm corrupt/model.ckpt
newest=$(ls corrupt/checkpoints/ckpt-*.ckpt | tail -n 1)
truncate -s 1000 "$newest"
CLOUD_ML_HP_METRIC_FILE=$WORK/corrupt/metrics "$TRAINER" "${RESUME[@]}" \
  --job-dir="$WORK/corrupt" >corrupt.log 2>&1
check corrupt_exit0 test $? -eq 0
check corrupt_warned grep -q "warning: checkpoint .*$(basename "$newest") is unusable" corrupt.log
check corrupt_same_model cmp -s ref/model.ckpt corrupt/model.ckpt

# Checkpoints with valid CRCs whose fields do not fit the run (issue 18, item 8) ------
# ckpt_patch FILE TAG FORMAT INDEX VALUE [INDEX VALUE]...: sets element INDEX of section
# TAG (a struct format letter: q i64, Q u64, i i32, I u32) to VALUE ("@J": element J's
# value) and reseals the section's and the header's CRCs (docs/checkpoint-format.md).
ckpt_patch() {
  python3 - "$@" <<'EOF'
import struct, sys, zlib
path, tag, fmt, rest = sys.argv[1], int(sys.argv[2]), '<' + sys.argv[3], sys.argv[4:]
b = bytearray(open(path, 'rb').read())
n = struct.unpack_from('<I', b, 12)[0]
w = struct.calcsize(fmt)
for i in range(n):
    e = 24 + 24 * i
    t, _, off, size = struct.unpack_from('<IIQQ', b, e)
    if t != tag:
        continue
    for k in range(0, len(rest), 2):
        at, v = int(rest[k]), rest[k + 1]
        v = struct.unpack_from(fmt, b, off + int(v[1:]) * w)[0] if v[0] == '@' else int(v, 0)
        struct.pack_into(fmt, b, off + at * w, v)
    struct.pack_into('<I', b, e + 4, zlib.crc32(bytes(b[off:off + size])))
h = 24 + 24 * n
struct.pack_into('<I', b, h, zlib.crc32(bytes(b[:h])))
open(path, 'wb').write(b)
EOF
}
# ref's last checkpoints are steps 469, 476 and 480 (epochs of 120 steps, every 7th step).
# Each case damages 476 (with 480 gone): the run must name the file and the field, go
# back to 469, and end bit-identical to ref, rather than train from the bad state (an
# out-of-range step_in_epoch ran empty steps forever and pruned the good checkpoints).
# state words: 0 global_step, 1 epoch, 2 step_in_epoch, 9 period_count, 10 optimiser step.
bad_cases=(
  "sie_past_epoch step_in_epoch 5 q 2 1000000"
  "sie_negative step_in_epoch 5 q 2 -1"
  "epoch_negative epoch 5 q 1 -1"
  "global_step_not_name global_step 5 q 0 475"
  "epoch_inconsistent global_step 5 q 1 2"
  "opt_step optimiser 5 q 10 3"
  "period_count period_count 5 q 9 -5"
  "rng_zero rng 6 Q 0 0 1 0 2 0 3 0"
  "order_duplicate order 7 i 0 @1"
  "params_nan params 2 I 0 0x7fc00000"
  "cluster_no_replicas cluster 8 Q 1 0"
  "cluster_bad_strategy cluster 8 Q 0 9"
  "cluster_bad_shard cluster 8 Q 2 4"
)
for c in "${bad_cases[@]}"; do
  read -r name field tag fmt vals <<<"$c"
  rm -rf "$name" && cp -r ref "$name" && rm "$name/model.ckpt" \
    "$name/checkpoints/ckpt-000000000480.ckpt"
  # shellcheck disable=SC2086
  ckpt_patch "$name/checkpoints/ckpt-000000000476.ckpt" "$tag" "$fmt" $vals
  CLOUD_ML_HP_METRIC_FILE=$WORK/$name/metrics timeout 60 "$TRAINER" "${RESUME[@]}" \
    --job-dir="$WORK/$name" >"$name.log" 2>&1
  check ${name}_exit0 test $? -eq 0
  check ${name}_names_file_and_field \
    grep -q "warning: checkpoint .*ckpt-000000000476.ckpt is unusable (.*$field" "$name.log"
  check ${name}_previous_used grep -q "resumed from .*ckpt-000000000469.ckpt" "$name.log"
  check ${name}_same_model cmp -s ref/model.ckpt "$name/model.ckpt"
done
check cluster_bad_shard_message grep -q "ckpt-000000000476.ckpt is unusable (cluster: shard policy 4 is not one of 1 to 3); trying the previous one" cluster_bad_shard.log
# ckpt_shrink FILE TAG SIZE: section TAG keeps only its first SIZE bytes (the rest is
# left as padding), its CRC and the header's resealed.
ckpt_shrink() {
  python3 - "$@" <<'EOF'
import struct, sys, zlib
path, tag, new = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
b = bytearray(open(path, 'rb').read())
n = struct.unpack_from('<I', b, 12)[0]
for i in range(n):
    e = 24 + 24 * i
    t, _, off, size = struct.unpack_from('<IIQQ', b, e)
    if t == tag and new <= size:
        struct.pack_into('<Q', b, e + 16, new)
        struct.pack_into('<I', b, e + 4, zlib.crc32(bytes(b[off:off + new])))
h = 24 + 24 * n
struct.pack_into('<I', b, h, zlib.crc32(bytes(b[:h])))
open(path, 'wb').write(b)
EOF
}
# A cluster section of the wrong size (two words of three), sealed: skipped as the
# fields above are.
rm -rf cluster_short && cp -r ref cluster_short && rm cluster_short/model.ckpt \
  cluster_short/checkpoints/ckpt-000000000480.ckpt
ckpt_shrink cluster_short/checkpoints/ckpt-000000000476.ckpt 8 16
CLOUD_ML_HP_METRIC_FILE=$WORK/cluster_short/metrics timeout 60 "$TRAINER" "${RESUME[@]}" \
  --job-dir="$WORK/cluster_short" >cluster_short.log 2>&1
check cluster_short_exit0 test $? -eq 0
check cluster_short_message grep -q "ckpt-000000000476.ckpt is unusable (cluster: the wrong size (expected 24 bytes)); trying the previous one" cluster_short.log
check cluster_short_previous_used grep -q "resumed from .*ckpt-000000000469.ckpt" cluster_short.log
check cluster_short_same_model cmp -s ref/model.ckpt cluster_short/model.ckpt
# Every checkpoint so: exit 1 with the newest one's reason and a hint, nothing deleted.
for c in "short ckpt_shrink 8 16|cluster: the wrong size (expected 24 bytes)" \
         "shard ckpt_patch 8 Q 2 4|cluster: shard policy 4 is not one of 1 to 3"; do
  read -r name damage args <<<"${c%%|*}"
  d=cluster_all_$name
  rm -rf "$d" && cp -r ref "$d" && rm "$d/model.ckpt"
  # shellcheck disable=SC2086
  for f in "$d"/checkpoints/ckpt-*.ckpt; do $damage "$f" $args; done
  before=$(cd "$d" && md5sum checkpoints/*)
  err=$(CLOUD_ML_HP_METRIC_FILE=$WORK/$d/metrics timeout 60 "$TRAINER" "${RESUME[@]}" \
        --job-dir="$WORK/$d" 2>&1); rc=$?
  check "${d}_exit1" test $rc -eq 1
  check "${d}_message" grep -qF "holds 3 checkpoints and none is usable (newest: ${c#*|}); hint: remove them or use a fresh --job-dir" <<<"$err"
  check "${d}_nothing_deleted" test "$(cd "$d" && md5sum checkpoints/*)" = "$before"
done
# The evaluator too: a sealed checkpoint whose epoch is past the run's is skipped (it
# would have ended the evaluator early), and the previous one evaluated.
rm -rf evbad && cp -r ref evbad && rm evbad/model.ckpt evbad/checkpoints/ckpt-000000000480.ckpt
ckpt_patch evbad/checkpoints/ckpt-000000000476.ckpt 5 q 1 1000
# (--foreground: one SIGTERM to the evaluator alone. Without it timeout signals the
# process group too, and under ASan that second SIGTERM, with its SIGCONT, can land
# while the exiting evaluator's leak check has stopped its threads, which then never
# resume: this case hung until ctest's timeout once in CI. -k: should it not end on
# SIGTERM all the same, SIGKILL 10 s later, so that the test fails saying so.)
TF_CONFIG='{"cluster": {"chief": ["127.0.0.1:1"]}, "task": {"type": "evaluator", "index": 0}}' \
  CLOUD_ML_HP_METRIC_FILE=$WORK/evbad/eval.metrics timeout --foreground -k 10 3 "$TRAINER" \
  "${RESUME[@]}" --job-dir="$WORK/evbad" >evbad.log 2>&1; rc=$?
check evaluator_bad_not_final test $rc -eq 124
[ $rc -eq 124 ] || { echo "evaluator: exit $rc (137: it did not end on SIGTERM); its log:"; tail -n 20 evbad.log; }
check evaluator_bad_named grep -q "ckpt-000000000476.ckpt is unusable (state: epoch 1000 is outside \[0, 4\])" evbad.log
check evaluator_bad_warned_once test "$(grep -c "ckpt-000000000476.ckpt is unusable" evbad.log)" -eq 1
check evaluator_previous_evaluated grep -q "evaluator: step 469 " evbad.log
# A bad checkpoint beyond the run's last step is removed at the next save, not the good
# ones before it.
rm -rf future && cp -r ref future && rm future/model.ckpt future/checkpoints/ckpt-000000000480.ckpt
cp future/checkpoints/ckpt-000000000476.ckpt future/checkpoints/ckpt-000000999999.ckpt
ckpt_patch future/checkpoints/ckpt-000000999999.ckpt 5 q 0 999999 10 999999
CLOUD_ML_HP_METRIC_FILE=$WORK/future/metrics timeout 60 "$TRAINER" "${RESUME[@]}" \
  --job-dir="$WORK/future" >future.log 2>&1
check future_exit0 test $? -eq 0
check future_warned grep -q "ckpt-000000999999.ckpt is unusable (.*global_step" future.log
check future_same_model cmp -s ref/model.ckpt future/model.ckpt
check future_good_kept test "$(cd future/checkpoints && echo ckpt-*)" = \
  "ckpt-000000000469.ckpt ckpt-000000000476.ckpt ckpt-000000000480.ckpt"
# Every checkpoint unusable: an error that names the field, and nothing deleted.
rm -rf allbad && cp -r ref allbad && rm allbad/model.ckpt
for f in allbad/checkpoints/ckpt-*.ckpt; do ckpt_patch "$f" 5 q 2 1000000; done
err=$(CLOUD_ML_HP_METRIC_FILE=$WORK/allbad/metrics timeout 60 "$TRAINER" "${RESUME[@]}" \
      --job-dir="$WORK/allbad" 2>&1); rc=$?
check allbad_exit1 test $rc -eq 1
check allbad_message grep -q "holds 3 checkpoints and none is usable (newest: .*step_in_epoch" \
  <<<"$err"
check allbad_nothing_deleted test "$(ls allbad/checkpoints | wc -l)" -eq 3

# A run that is already complete exits at once -------------------------------------
CLOUD_ML_HP_METRIC_FILE=$WORK/ref/metrics "$TRAINER" "${RESUME[@]}" --job-dir="$WORK/ref" \
  >done.log 2>&1
check complete_exit0 test $? -eq 0
check complete_message grep -q "training already complete" done.log

# Checkpoints of another model in the job dir: a configuration error (exit 2) -------
err=$("$TRAINER" "${RESUME[@]}" --hidden_units=32 --job-dir="$WORK/ref" 2>&1); rc=$?
check mismatch_exit2 test $rc -eq 2
check mismatch_message grep -q "different model" <<<"$err"

# Checkpoints of another cluster: the steps of an epoch differ, so a run with other
# replicas must refuse them, not skip the ones its arithmetic rejects as damaged,
# resume from an older one that happens to fit and prune the rest (it did: a 1-replica
# run's steps 8 and 10 were "unusable" for 2 replicas, step 4 was resumed and the
# others deleted). Steps: 10 an epoch for one replica, 5 for two.
CL=(--max_train_examples=200 --max_eval_examples=100 --batch_size=20 --hidden_units=16
    --checkpoint_every=4 --threads=1)
"$TRAINER" "${CL[@]}" --epochs=1 --job-dir="$WORK/cl1" >cl1.log 2>&1
check cluster_one_replica_exit0 test $? -eq 0
before=$(cd cl1 && md5sum model.ckpt checkpoints/*)
err=$("$TRAINER" "${CL[@]}" --epochs=3 --devices=2 --job-dir="$WORK/cl1" 2>&1); rc=$?
check cluster_mismatch_exit2 test $rc -eq 2
check cluster_mismatch_names_both grep -q "written by a run of 1 replica (one_device), and this run has 2 replicas (mirrored, data sharding)" <<<"$err"
check cluster_mismatch_hint grep -q "hint: resume with that run's cluster" <<<"$err"
check cluster_mismatch_no_warning sh -c "! grep -q unusable" <<<"$err"
check cluster_mismatch_nothing_changed test "$(cd cl1 && md5sum model.ckpt checkpoints/*)" = "$before"
# the same global batch over two replicas (10 each): still the cluster that is named,
# not "other settings (batch 20)", which said only the old values
err=$("$TRAINER" "${CL[@]/--batch_size=20/--batch_size=10}" --epochs=3 --devices=2 --job-dir="$WORK/cl1" 2>&1); rc=$?
check cluster_same_global_batch_exit2 test $rc -eq 2
check cluster_same_global_batch_names_cluster grep -q "written by a run of 1 replica (one_device), and this run has 2 replicas" <<<"$err"
# the other way round: two replicas' checkpoints refused by one
"$TRAINER" "${CL[@]}" --epochs=1 --devices=2 --job-dir="$WORK/cl2" >cl2.log 2>&1
check cluster_two_replicas_exit0 test $? -eq 0
before=$(cd cl2 && md5sum model.ckpt checkpoints/*)
err=$("$TRAINER" "${CL[@]}" --epochs=3 --job-dir="$WORK/cl2" 2>&1); rc=$?
check cluster_fewer_exit2 test $rc -eq 2
check cluster_fewer_names_both grep -q "run of 2 replicas (mirrored, data sharding), and this run has 1 replica (one_device)" <<<"$err"
check cluster_fewer_nothing_changed test "$(cd cl2 && md5sum model.ckpt checkpoints/*)" = "$before"
err=$("$TRAINER" "${CL[@]}" --epochs=3 --devices=2 --strategy=central_storage \
      --job-dir="$WORK/cl2" 2>&1); rc=$?
check cluster_strategy_exit2 test $rc -eq 2
check cluster_strategy_names_both grep -q "run of 2 replicas (mirrored, data sharding), and this run has 2 replicas (central_storage" <<<"$err"
# the same cluster resumes; and one replica is one replica under any strategy
"$TRAINER" "${CL[@]}" --epochs=3 --devices=2 --job-dir="$WORK/cl2" >cl2b.log 2>&1
check cluster_same_resumes_exit0 test $? -eq 0
check cluster_same_resumes grep -q "resumed from .*ckpt-000000000005.ckpt" cl2b.log
"$TRAINER" "${CL[@]}" --epochs=3 --strategy=mirrored --job-dir="$WORK/cl1" >cl1b.log 2>&1
check cluster_one_replica_any_strategy grep -q "resumed from .*ckpt-000000000010.ckpt" cl1b.log
# a checkpoint from before the cluster was recorded (its section retagged to one the
# trainer does not know): refused, since its replicas are unknown, and kept
rm -rf cl0 && cp -r cl1 cl0 && rm cl0/model.ckpt
for f in cl0/checkpoints/*.ckpt; do
  python3 - "$f" <<'PY'
import struct, sys, zlib
path = sys.argv[1]
b = bytearray(open(path, 'rb').read())
n = struct.unpack_from('<I', b, 12)[0]
for i in range(n):
    if struct.unpack_from('<I', b, 24 + 24 * i)[0] == 8:
        struct.pack_into('<I', b, 24 + 24 * i, 99)
struct.pack_into('<I', b, 24 + 24 * n, zlib.crc32(bytes(b[:24 + 24 * n])))
open(path, 'wb').write(b)
PY
done
before=$(cd cl0 && md5sum checkpoints/*)
err=$("$TRAINER" "${CL[@]}" --epochs=4 --job-dir="$WORK/cl0" 2>&1); rc=$?
check cluster_unrecorded_exit2 test $rc -eq 2
check cluster_unrecorded_message grep -q "did not record the replicas and the strategy, so it cannot be told whether it fits this run of 1 replica (one_device)" <<<"$err"
check cluster_unrecorded_kept test "$(cd cl0 && md5sum checkpoints/*)" = "$before" -a ! -e cl0/model.ckpt

# A folder named like a checkpoint is not one: told, left alone, and the run goes on
# (every save failed: "unlink .../ckpt-000000000999.ckpt: Is a directory", exit 1).
rm -rf clfold && cp -r cl1 clfold && mkdir clfold/checkpoints/ckpt-000000000999.ckpt
"$TRAINER" "${CL[@]}" --epochs=4 --job-dir="$WORK/clfold" >clfold.log 2>&1
check folder_named_like_ckpt_exit0 test $? -eq 0
check folder_named_like_ckpt_warned grep -q "warning: .*ckpt-000000000999.ckpt is a folder, not a checkpoint file; left alone, but no checkpoint can be saved by its name; hint: remove or rename it" clfold.log
check folder_named_like_ckpt_resumed grep -q "resumed from .*ckpt-000000000030.ckpt" clfold.log
check folder_named_like_ckpt_kept test -d clfold/checkpoints/ckpt-000000000999.ckpt
check folder_named_like_ckpt_saved test -f clfold/checkpoints/ckpt-000000000040.ckpt
# A run that comes to save that very step stops there, saying what is in the way and
# what to do (every restart failed alike with only "rename ...tmp.PID: Is a directory").
rm -rf clfold2 && cp -r cl1 clfold2 && mkdir clfold2/checkpoints/ckpt-000000000032.ckpt
err=$("$TRAINER" "${CL[@]}" --epochs=4 --job-dir="$WORK/clfold2" 2>&1); rc=$?
check folder_at_save_step_exit2 test $rc -eq 2
check folder_at_save_step_message grep -q "cannot save .*/ckpt-000000000032.ckpt: it is a folder, not a checkpoint file (rename .*ckpt-000000000032.ckpt.tmp.[0-9]*: Is a directory); hint: remove or rename it" <<<"$err"
check folder_at_save_step_kept test -d clfold2/checkpoints/ckpt-000000000032.ckpt -a "$(ls clfold2/checkpoints | wc -l)" -eq 4

# SIGTERM: checkpoint, exit 143, and the next run carries on -------------------------
CLOUD_ML_HP_METRIC_FILE=$WORK/t/metrics "$TRAINER" "${RESUME[@]}" --checkpoint_every=0 \
  --job-dir="$WORK/t" >t1.log 2>&1 &
pid=$!
for _ in $(seq 1 2000); do
  [ -f t/metrics ] && break
  sleep 0.005
done
kill -TERM $pid; wait $pid; rc=$?
if grep -q "stopped by signal" t1.log; then
  check sigterm_exit143 test $rc -eq 143
  CLOUD_ML_HP_METRIC_FILE=$WORK/t/metrics "$TRAINER" "${RESUME[@]}" --checkpoint_every=0 \
    --job-dir="$WORK/t" >t2.log 2>&1
  check sigterm_resumed grep -q "resumed from" t2.log
  check sigterm_same_model cmp -s ref/model.ckpt t/model.ckpt
else
  fail sigterm "the run ended before SIGTERM arrived (rc $rc)"
fi

# Bad data -----------------------------------------------------------------------
err=$("$TRAINER" --data_dir="$WORK/no-such-dir" 2>&1); rc=$?
check missing_data_exit1 test $rc -eq 1
check missing_data_names_dir grep -q "no-such-dir" <<<"$err"
check missing_data_hint grep -q "dataset-fashion-mnist" <<<"$err"
mkdir -p trunc
for f in train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  cp "$DATA/$f.gz" trunc/
done
zcat "$DATA/train-images-idx3-ubyte.gz" | head -c 5000 >trunc/train-images-idx3-ubyte
err=$("$TRAINER" --data_dir="$WORK/trunc" 2>&1); rc=$?
check truncated_data_exit1 test $rc -eq 1
check truncated_data_message grep -q "train-images-idx3-ubyte.*truncated" <<<"$err"
# Evaluation images of another shape with as many pixels (the t10k header says 56x14):
# refused by training and by --eval_only of a model of 28x28 images, not read as 28x28.
mkdir -p reshaped
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-labels-idx1-ubyte; do
  cp "$DATA/$f.gz" reshaped/
done
python3 - "$DATA/t10k-images-idx3-ubyte.gz" reshaped/t10k-images-idx3-ubyte <<'PY'
import gzip, struct, sys
b = bytearray(gzip.open(sys.argv[1]).read())
struct.pack_into('>II', b, 8, 56, 14)
open(sys.argv[2], 'wb').write(b)
PY
err=$("$TRAINER" "${SMALL[@]}" --epochs=1 --data_dir="$WORK/reshaped" 2>&1); rc=$?
check reshaped_eval_exit1 test $rc -eq 1
check reshaped_eval_message grep -q "training images are 1x28x28 but evaluation images are 1x56x14" <<<"$err"
err=$("$TRAINER" --eval_only --model_file="$WORK/a/model.ckpt" --max_eval_examples=500 \
      --data_dir="$WORK/reshaped" 2>&1); rc=$?
check reshaped_eval_only_exit1 test $rc -eq 1
check reshaped_eval_only_message grep -q "takes images of 1x28x28; the data's are 1x56x14" <<<"$err"

# The newest checkpoint written by a trainer of another format version: refused with
# exit 2, and kept (resumed around, the first save deleted it: a save prunes every step
# above its own)
"$TRAINER" "${SMALL[@]}" --epochs=2 --job-dir="$WORK/ver" >/dev/null 2>&1
newest=$(ls "$WORK"/ver/checkpoints/ckpt-*.ckpt | tail -n 1)
python3 - "$newest" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[8:12] = (2).to_bytes(4, 'little')  # format version 2
open(sys.argv[1], 'wb').write(b)
PY
err=$("$TRAINER" "${SMALL[@]}" --epochs=3 --job-dir="$WORK/ver" 2>&1); rc=$?
check other_version_exit2 test $rc -eq 2
check other_version_says grep -q "is of another format (format version 2; this build reads version 1); this trainer cannot resume it" <<<"$err"
check other_version_kept test -e "$newest"

# bench_train (bench/): its flags are checked, and the classes come from the data's
# labels (it assumed 10: a label of 12 read past the logits and gave a negative loss)
BENCH="$(dirname "$TRAINER")/bench_train"
for bad in "--model=rnn:--model must be mlp or cnn" "--batch_size=0:--batch_size must be 1 to 65536" \
           "--batch_size=-5:--batch_size must be 1 to 65536" "--steps=0:--steps must be 1 to" \
           "--threads=-1:--threads must be 1 to 1024"; do
  err=$("$BENCH" "${bad%%:*}" 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q -- "${bad#*:}" <<<"$err" || fail "bench_train_${bad%%:*}" "exit $rc: $err"
done
ok bench_train_flags_checked
mkdir -p labels13
cp "$DATA/train-images-idx3-ubyte.gz" labels13/
python3 - "$DATA/train-labels-idx1-ubyte.gz" labels13/train-labels-idx1-ubyte <<'PY'
import gzip, sys
b = bytearray(gzip.open(sys.argv[1]).read())
for i in range(8, len(b)):
    b[i] = (b[i] + i) % 13  # labels 0..12
open(sys.argv[2], 'wb').write(b)
PY
out=$("$BENCH" --data_dir="$WORK/labels13" --steps=3 --hidden_units=16 2>&1); rc=$?
check bench_train_13_classes_exit0 test $rc -eq 0
check bench_train_13_classes grep -q '"classes": 13,' <<<"$out"

# CSV data: label last, header, features scaled -----------------------------------
awk 'BEGIN { srand(3); print "a,b,c,label";
  for (i = 0; i < 600; i++) { x = rand() * 255; y = rand() * 255; z = rand() * 255;
    printf "%d,%d,%d,%d\n", x, y, z, (x > y) ? 1 : 0 } }' >train.csv
awk 'BEGIN { srand(4); for (i = 0; i < 200; i++) { x = rand() * 255; y = rand() * 255;
    printf "%d,%d,%d,%d\n", x, y, 7, (x > y) ? 1 : 0 } }' >eval.csv
out=$(CLOUD_ML_HP_METRIC_FILE=$WORK/csv.metrics "$TRAINER" --train_file=train.csv \
      --eval_file=eval.csv --label_column=-1 --feature_scale=0.00392 --hidden_units=16 \
      --epochs=20 --batch_size=32 --threads=1 2>&1); rc=$?
check csv_exit0 test $rc -eq 0
acc=$(tail -n 1 csv.metrics | sed -E 's/.*"accuracy":"([^"]*)".*/\1/')
check csv_learns awk -v a="$acc" 'BEGIN { exit !(a > 0.9) }'
printf '1,2,3\n4,x,6\n' >bad.csv
err=$("$TRAINER" --train_file=bad.csv --eval_file=bad.csv 2>&1); rc=$?
check csv_bad_exit1 test $rc -eq 1
check csv_bad_message grep -q "bad.csv.*line 2" <<<"$err"
err=$("$TRAINER" --train_file=train.csv 2>&1); rc=$?
check csv_needs_eval grep -q "go together" <<<"$err"
# one stray label (a 40 among 0 and 1) makes 41 classes, most never trained: said
{ cat train.csv; echo "1,2,3,40"; } >stray.csv
err=$("$TRAINER" --train_file=stray.csv --eval_file=eval.csv --label_column=-1 --epochs=1 \
      --hidden_units=8 --threads=1 2>&1 >/dev/null); rc=$?
check csv_stray_label_runs test $rc -eq 0
check csv_stray_label_warned grep -q "warning: the labels run from 0 to 40, so the model has 41 classes, but only 3 of them have a training example" <<<"$err"
err=$("$TRAINER" --train_file=train.csv --eval_file=eval.csv --label_column=-1 --epochs=1 \
      --hidden_units=8 --threads=1 2>&1 >/dev/null)
check csv_no_stray_no_warning test -z "$(grep warning <<<"$err")"
err=$("$TRAINER" --model=cnn --train_file=train.csv --eval_file=eval.csv --label_column=-1 2>&1)
check csv_cnn_needs_images grep -q "needs images" <<<"$err"
# 200x200 images: a batch of 60000 would be 2.4e9 columns in a conv layer's products
awk 'BEGIN { for (r = 0; r < 2; r++) { line = ""; for (p = 0; p < 40000; p++) line = line (p % 7) ",";
    print line (r % 2) } }' >big.csv
err=$("$TRAINER" --model=cnn --train_file=big.csv --eval_file=big.csv --label_column=-1 \
      --batch_size=60000 --epochs=1 2>&1); rc=$?
check cnn_batch_too_large_exit2 test $rc -eq 2
check cnn_batch_too_large_message grep -q "batch_size 60000 is too large for 200x200 images.*53687" <<<"$err"

# The CNN, briefly ----------------------------------------------------------------
CLOUD_ML_HP_METRIC_FILE=$WORK/cnn.metrics "$TRAINER" --model=cnn --conv_filters=4,8 \
  --hidden_units=16 --max_train_examples=500 --max_eval_examples=200 --epochs=2 \
  --batch_size=50 --threads=1 >cnn.log 2>&1
check cnn_exit0 test $? -eq 0
check cnn_reports test "$(wc -l <cnn.metrics)" -eq 2

# Divergence is reported as such --------------------------------------------------
err=$(CLOUD_ML_HP_METRIC_FILE=$WORK/div.metrics "$TRAINER" "${SMALL[@]}" \
      --learning_rate=1e30 --epochs=1 2>&1); rc=$?
check diverged_exit2 test $rc -eq 2
check diverged_message grep -q "training diverged" <<<"$err"
# ... also where the last step's update is the one that diverges: its loss was finite,
# so only the parameters or the evaluation after it can tell. No metrics, checkpoint or
# model of the diverged state may leave (they used to, with exit 0).
for c in "1e38 the evaluation loss is .*nan after step 1" "1e39 parameter 0 is .*nan after step 1"; do
  lr=${c%% *}
  rm -rf "$WORK/lastdiv" "$WORK/lastdiv.metrics"
  err=$(CLOUD_ML_HP_METRIC_FILE=$WORK/lastdiv.metrics "$TRAINER" --max_train_examples=100 \
        --batch_size=100 --max_eval_examples=100 --hidden_units=16 --threads=1 --epochs=1 \
        --learning_rate=$lr --job_dir="$WORK/lastdiv" 2>&1); rc=$?
  check last_step_diverged_exit2_$lr test $rc -eq 2
  check last_step_diverged_message_$lr grep -q "training diverged: ${c#* }" <<<"$err"
  check last_step_diverged_no_model_$lr test ! -e "$WORK/lastdiv/model.ckpt"
  check last_step_diverged_no_checkpoint_$lr test -z "$(ls "$WORK/lastdiv/checkpoints" 2>/dev/null)"
  check last_step_diverged_no_metrics_$lr test ! -s "$WORK/lastdiv.metrics"
done

check_summary
