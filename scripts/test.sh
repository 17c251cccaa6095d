#!/bin/sh
# test.sh — install what is missing, then build and run the whole test suite twice:
# an optimised build with warnings as errors, and a build under AddressSanitizer and
# UndefinedBehaviorSanitizer. Fails on the first failing test or warning.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
echo "== release build, warnings as errors"
scripts/build.sh release
(cd build && ctest --output-on-failure -j "$jobs")
echo "== ASan/UBSan build"
scripts/build.sh asan
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j "$jobs")
