#!/bin/sh
# package_gpu.sh — packs what a GPU machine needs to run the CUDA build's GPU tests and
# benchmarks (bench/gpu_run.sh) into one tarball: the programs, the shared libraries
# they link (that machine has no Debian packages; the C library and the NVIDIA driver
# are its own), and Fashion-MNIST. cuBLAS and NCCL are not packed (they are loaded at
# run time, and the GPU machine has CUDA's libraries; gpu_run.sh finds them). The
# tarball stays under the device tool's 64 MiB.
#
#   TUNER_CUDA=ON scripts/build.sh release build-cuda
#   bench/package_gpu.sh [BUILD_DIR] [PACKAGE_DIR]   (defaults build-cuda, build-gpu-pkg)
#
# Then, on the device machine (the repository's working tree travels with the command;
# the package folder is carried): bench/gpu_run.sh tests, then bench/gpu_run.sh bench mlp
# and bench/gpu_run.sh bench cnn.
# Method and commands: docs/benchmarks/gpu.md.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-cuda}
pkg=${2:-build-gpu-pkg}
data=/usr/share/datasets/fashion-mnist
for f in bin/trainer bin/bench_gemm_gpu tests/test_kernels tests/test_gpu_model; do
  if [ ! -x "$build/$f" ]; then
    echo "package_gpu.sh: error: $build/$f is missing" >&2
    echo "hint: TUNER_CUDA=ON scripts/build.sh release $build" >&2
    exit 1
  fi
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/gpu-pkg/bin" "$stage/gpu-pkg/lib" "$stage/gpu-pkg/data"
cp "$build/bin/trainer" "$build/bin/bench_gemm_gpu" "$build/tests/test_kernels" \
   "$build/tests/test_gpu_model" "$stage/gpu-pkg/bin/"
for f in "$stage"/gpu-pkg/bin/*; do ldd "$f"; done | awk '/=> \// {print $3}' | sort -u |
  while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcuda.so*) ;;
      *) cp -L "$lib" "$stage/gpu-pkg/lib/" ;;
    esac
  done
if [ -d "$data" ]; then
  cp "$data"/*-ubyte* "$stage/gpu-pkg/data/"
else
  echo "package_gpu.sh: note: no $data here; the GPU run will use synthetic data" >&2
fi
git rev-parse HEAD >"$stage/gpu-pkg/COMMIT" 2>/dev/null || true
rm -rf "$pkg"
mkdir -p "$pkg"
tar -C "$stage" -czf "$pkg/gpu-pkg.tar.gz" gpu-pkg
size=$(wc -c <"$pkg/gpu-pkg.tar.gz")
echo "package: $pkg/gpu-pkg.tar.gz ($((size / 1048576)) MiB): $(ls "$stage/gpu-pkg/lib" | tr '\n' ' ')"
if [ "$size" -ge $((64 * 1048576)) ]; then
  echo "package_gpu.sh: error: the package is over 64 MiB" >&2
  exit 1
fi
echo "on the GPU machine, from the repository's root, with $pkg carried:"
echo "  bench/gpu_run.sh tests    # the GPU tests"
echo "  bench/gpu_run.sh bench mlp; bench/gpu_run.sh bench cnn   # docs/benchmarks/gpu.md"
