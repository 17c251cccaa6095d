#!/bin/sh
# build.sh — configure and build the project with CMake.
#
#   scripts/build.sh [release|asan] [BUILD_DIR]
#
# release (default): optimised, warnings as errors, into build/.
# asan: AddressSanitizer + UndefinedBehaviorSanitizer, into build-asan/.
# TUNER_CUDA=AUTO|ON|OFF in the environment sets the CMake option of that name (the
# CUDA backend: AUTO builds it when nvcc is found); unset, a build folder keeps what it
# was configured with (AUTO for a new one).
set -eu
cd "$(dirname "$0")/.."
mode=${1:-release}
case "$mode" in
  release) dir=${2:-build}; opts="-DCMAKE_BUILD_TYPE=Release -DTUNER_WERROR=ON" ;;
  asan) dir=${2:-build-asan}; opts="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUNER_WERROR=ON -DTUNER_SANITIZE=ON" ;;
  -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "build.sh: error: unknown mode '$mode' (release or asan)" >&2; exit 2 ;;
esac
case "${TUNER_CUDA:-}" in
  "") ;;
  AUTO|ON|OFF|auto|on|off) opts="$opts -DTUNER_CUDA=$TUNER_CUDA" ;;
  *) echo "build.sh: error: TUNER_CUDA must be AUTO, ON or OFF, not '$TUNER_CUDA'" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086
cmake -S . -B "$dir" $opts >/dev/null
cmake --build "$dir" -j "$(nproc)"
