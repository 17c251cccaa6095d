#!/bin/sh
# gpu_run.sh — on a GPU machine: unpacks bench/package_gpu.sh's package, finds CUDA's
# libraries (cuBLAS, NCCL: system folders, or PyTorch's nvidia-* wheels) and puts them
# on LD_LIBRARY_PATH for our programs only (never for PyTorch's baseline), and runs
#
#   bench/gpu_run.sh tests [PACKAGE_DIR]   the GPU tests: test_kernels --backend=cuda,
#                                          test_gpu_model, tests/trainer/trainer_gpu.sh
#   bench/gpu_run.sh bench MODELS [PACKAGE_DIR]
#                                          bench/gpu_speed.py --models MODELS (mlp,
#                                          cnn, or mlp,cnn): the table of
#                                          docs/benchmarks/gpu.md; GPU_SPEED_ARGS
#                                          adds gpu_speed.py's options (say
#                                          "--torch_modes none" to leave
#                                          torch.compile out)
#   bench/gpu_run.sh profile MODEL BATCH PRECISION [PACKAGE_DIR]
#                                          ncu's time of every kernel of a short
#                                          trainer run (graphs off), to
#                                          ncu-MODEL-BATCH-PRECISION.csv, and
#                                          bench/ncu_step.py's table of its second
#                                          step
#
# from the repository's root (PACKAGE_DIR defaults to build-gpu-pkg; one model per call
# keeps a call within the device tool's 10 minutes). Logs and results
# go to $OUT (the device tool's output folder) or ./build-gpu-out. Exits non-zero when a test
# fails.
set -u
cd "$(dirname "$0")/.."
what=${1:-tests}
models=mlp,cnn
if [ "$what" = bench ]; then
  models=${2:-mlp,cnn}
  shift
elif [ "$what" = profile ]; then
  if [ $# -lt 4 ]; then
    echo "gpu_run.sh: error: profile MODEL BATCH PRECISION, say: profile cnn 1024 fp32" >&2
    exit 2
  fi
  pmodel=$2 pbatch=$3 pprec=$4
  shift 3
fi
pkgdir=${2:-build-gpu-pkg}
out=${OUT:-$PWD/build-gpu-out}
mkdir -p "$out"
root=$(mktemp -d)
tar -C "$root" -xzf "$pkgdir/gpu-pkg.tar.gz" || exit 1
pkg=$root/gpu-pkg
libs=$pkg/lib
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
         $(python3 -c 'import glob, site; [print(p) for s in site.getsitepackages() for p in glob.glob(s + "/nvidia/*/lib")]' 2>/dev/null); do
  [ -d "$d" ] && libs=$libs:$d
done
# Our programs' library path, given to them alone: PyTorch (the benchmark's baseline)
# keeps the environment as it is and loads its own CUDA libraries.
ourlibs=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{
  echo "package $(cat "$pkg/COMMIT" 2>/dev/null)"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | head -n 1
  for l in libcublas.so.13 libnccl.so.2; do
    found=$(echo "$ourlibs" | tr ':' '\n' | while read -r d; do
      [ -e "$d/$l" ] && echo "$d/$l" && break; done)
    echo "$l: ${found:-not found}"
  done
} 2>&1 | tee "$out/environment.txt"
data=$pkg/data
[ -e "$data/train-labels-idx1-ubyte.gz" ] || data=/nonexistent
rc=0
case "$what" in
  tests)
    # each test bounded, so that a hang cannot spend the lease
    LD_LIBRARY_PATH=$ourlibs timeout 120 "$pkg/bin/test_kernels" --backend=cuda \
      >"$out/test_kernels_cuda.log" 2>&1 || rc=1
    tail -n 1 "$out/test_kernels_cuda.log"
    LD_LIBRARY_PATH=$ourlibs timeout 120 "$pkg/bin/test_gpu_model" >"$out/test_gpu_model.log" 2>&1 || rc=1
    tail -n 1 "$out/test_gpu_model.log"
    LD_LIBRARY_PATH=$ourlibs TRAINER_TEST_DATA=$data timeout 300 tests/trainer/trainer_gpu.sh \
      "$pkg/bin/trainer" "$root/tgpu" >"$out/trainer_gpu.log" 2>&1 || rc=1
    grep -v '^ok ' "$out/trainer_gpu.log" | tail -n 20
    ;;
  bench)
    name=gpu-speed-$(echo "$models" | tr ',' '-')  # no comma: the device tool's names
    python3 bench/gpu_speed.py --bin "$pkg/bin" --data_dir "$data" --models "$models" \
      --lib_path "$libs" --out "$out/$name.md" ${GPU_SPEED_ARGS:-} \
      2>"$out/$name.log" || rc=1
    ;;
  profile)
    ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu \
          2>/dev/null | head -n 1)
    if [ -z "$ncu" ]; then
      echo "gpu_run.sh: error: no ncu (Nsight Compute) on this machine" >&2
      exit 1
    fi
    csv=$out/ncu-$pmodel-$pbatch-$pprec.csv
    # four steps of the batch; graphs off, so that each kernel is its own launch
    LD_LIBRARY_PATH=$ourlibs TRAINER_CUDA_GRAPHS=0 timeout 120 "$ncu" --clock-control none \
      --metrics gpu__time_duration.sum --csv "$pkg/bin/trainer" --device=gpu \
      --model="$pmodel" --batch_size="$pbatch" --precision="$pprec" --epochs=1 \
      --max_train_examples=$((4 * pbatch)) --max_eval_examples=1000 \
      --data_dir="$data" >"$csv" 2>&1 || rc=1
    python3 bench/ncu_step.py "$csv" || rc=1
    ;;
  *) echo "gpu_run.sh: error: tests, bench or profile, not '$what'" >&2; exit 2 ;;
esac
rm -rf "$root"
exit $rc
