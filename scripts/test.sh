#!/bin/sh
# test.sh — install what is missing (with Slurm's packages for the tests that bring
# up a throw-away cluster), then build and run the whole test suite twice:
# an optimised build with warnings as errors and the CUDA backend where nvcc is found
# (TUNER_CUDA=ON then; its GPU tests are skipped without a GPU), and a CPU-only build
# (TUNER_CUDA=OFF) under AddressSanitizer and UndefinedBehaviorSanitizer. So both the
# CUDA build and the CPU-only build are built and tested. Then a few seconds of each
# libFuzzer harness (scripts/fuzz.sh --smoke; skipped without clang). Fails on the
# first failing test or warning.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
jobs=$(nproc)
# Where the CUDA toolkit is, the release build must have the CUDA backend (ON: a broken
# detection fails here rather than quietly building for the CPU only).
cuda=AUTO
if [ -x "${CUDACXX:-/usr/local/cuda/bin/nvcc}" ] || command -v nvcc >/dev/null 2>&1; then
  cuda=ON
fi
echo "== release build (CUDA backend: $cuda), warnings as errors"
TUNER_CUDA=$cuda scripts/build.sh release
(cd build && ctest --output-on-failure -j "$jobs")
echo "== CPU-only build under ASan/UBSan"
TUNER_CUDA=OFF scripts/build.sh asan
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j "$jobs")
echo "== fuzz smoke run: each libFuzzer harness for a few seconds (docs/fuzzing.md)"
fuzz=0
scripts/fuzz.sh --smoke || fuzz=$?
if [ "$fuzz" -eq 77 ]; then
  echo "fuzz smoke run: skipped (clang or libFuzzer is missing)"
elif [ "$fuzz" -ne 0 ]; then
  echo "fuzz smoke run: failed (exit $fuzz)" >&2
  exit "$fuzz"
fi
