#!/bin/sh
# fuzz.sh — build the libFuzzer harnesses of tests/fuzz (clang, in build-fuzz/) and run
# each for a fixed time on a copy of its seed corpus (docs/fuzzing.md).
#
#   scripts/fuzz.sh [--seconds=N] [TARGET...]   run each TARGET (default: all) N seconds
#                                               (default 60)
#   scripts/fuzz.sh --smoke [TARGET...]         a short run of each (5 s), as the test
#                                               suite does (scripts/test.sh)
#   scripts/fuzz.sh --list                      the targets, one a line
#
# Targets: spec, spec_yaml, tfconfig, htreader, checkpoint, api. Prints a table (target, runs,
# seconds, coverage and corpus size at the start and the end, result). A crash, a leak,
# a sanitizer report, a timeout or an out-of-memory stops that target; its input is
# kept in build-fuzz/crashes/ and named, with the command that reproduces it. Exit
# status: 0 when every run ended clean, 1 when one did not (or the build failed), 2
# for a usage error, 77 when clang or libFuzzer is missing (the run is skipped).
set -u
cd "$(dirname "$0")/.."
ALL="spec spec_yaml tfconfig htreader checkpoint api"
BUILD=build-fuzz
CC_FUZZ=${FUZZ_CC:-clang}
seconds=60
targets=""

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }
for arg in "$@"; do
  case "$arg" in
    --seconds=*) seconds=${arg#--seconds=} ;;
    --smoke) seconds=5 ;;
    --list) for t in $ALL; do echo "$t"; done; exit 0 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "fuzz.sh: error: unknown option '$arg'" >&2
        echo "hint: run 'scripts/fuzz.sh --help'" >&2; exit 2 ;;
    *) case " $ALL " in
         *" $arg "*) targets="$targets $arg" ;;
         *) echo "fuzz.sh: error: no target '$arg'" >&2
            echo "hint: the targets are: $ALL" >&2; exit 2 ;;
       esac ;;
  esac
done
case "$seconds" in
  ''|*[!0-9]*|0) echo "fuzz.sh: error: --seconds expects a positive integer, got '$seconds'" >&2
                 exit 2 ;;
esac
[ -n "$targets" ] || targets=$ALL

# clang and libFuzzer, or skip -------------------------------------------------------
if ! command -v "$CC_FUZZ" >/dev/null 2>&1; then
  echo "fuzz.sh: skipped: $CC_FUZZ is not installed, and the harnesses need clang's libFuzzer"
  echo "hint: scripts/install-deps.sh --test installs clang and libclang-rt-14-dev"
  exit 77
fi
probe=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-probe.XXXXXX") || exit 1
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return d && n > 1 ? 0 : 0; }' \
  >"$probe/probe.c"
if ! "$CC_FUZZ" -fsanitize=fuzzer,address,undefined "$probe/probe.c" -o "$probe/probe" \
     >"$probe/log" 2>&1; then
  echo "fuzz.sh: skipped: $CC_FUZZ cannot link -fsanitize=fuzzer (libFuzzer is missing):"
  sed 's/^/  /' "$probe/log" | tail -n 3
  echo "hint: install libclang-rt-14-dev (scripts/install-deps.sh --test)"
  rm -rf "$probe"
  exit 77
fi
rm -rf "$probe"

# Build (configured once; later runs rebuild what changed) ----------------------------
start=$(date +%s)
log=$BUILD/fuzz-build.log
mkdir -p "$BUILD"
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  if ! cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER="$CC_FUZZ" -DTUNER_FUZZ=ON -DTUNER_CUDA=OFF \
       -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$log" 2>&1; then
    tail -n 20 "$log"
    echo "fuzz.sh: error: configuring $BUILD failed (the whole output: $log)" >&2
    rm -f "$BUILD/CMakeCache.txt" # configure again next time
    exit 1
  fi
fi
if ! cmake --build "$BUILD" --target fuzzers -j "$(nproc)" >>"$log" 2>&1; then
  grep -E 'error|Error' "$log" | tail -n 20
  echo "fuzz.sh: error: building the harnesses failed (the whole output: $log)" >&2
  exit 1
fi
echo "fuzz.sh: harnesses built in $(( $(date +%s) - start )) s ($BUILD/bin); ${seconds} s per target"

# Run ---------------------------------------------------------------------------------
# last_field FILE KEY: the number after the last "KEY: " in FILE (libFuzzer's status lines).
last_field() { grep -o "$2: [0-9]*" "$1" | tail -n 1 | sed 's/.*: //'; }
first_field() { grep -o "$2: [0-9]*" "$1" | head -n 1 | sed 's/.*: //'; }

mkdir -p "$BUILD/crashes"
status=0
table=$(mktemp "${TMPDIR:-/tmp}/fuzz-table.XXXXXX") || exit 1
for t in $targets; do
  work=$BUILD/fuzz-runs/$t
  rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
  cp tests/fuzz/corpus/"$t"/* "$work/corpus/"
  if [ "$t" = checkpoint ] && ! "$BUILD/bin/ckpt_seeds" "$work/corpus"; then
    echo "fuzz.sh: error: ckpt_seeds could not write the checkpoint seeds" >&2
    status=1
  fi
  seeds=$(ls "$work/corpus" | wc -l)
  t0=$(date +%s)
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    timeout $((seconds + 120)) "$BUILD/bin/fuzz_$t" "$work/corpus" \
      -max_total_time="$seconds" -dict="tests/fuzz/dict/$t.dict" \
      -artifact_prefix="$work/artifacts/" -print_final_stats=1 -timeout=10 \
      -rss_limit_mb=2048 -error_exitcode=1 -timeout_exitcode=1 >"$work/log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - t0 ))
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/log" | sed 's/.*: //')
  [ -n "$runs" ] || runs=$(grep -o '^#[0-9]*' "$work/log" | tail -n 1 | tr -d '#')
  cov0=$(first_field "$work/log" cov); cov1=$(last_field "$work/log" cov)
  corpus=$(ls "$work/corpus" | wc -l)
  result=ok
  if [ $rc -ne 0 ]; then
    status=1
    result="FAILED (exit $rc)"
    for a in "$work"/artifacts/*; do
      [ -f "$a" ] || continue
      kept=$BUILD/crashes/$t-$(basename "$a")
      cp "$a" "$kept"
      result="FAILED: $(basename "$a" | cut -d- -f1)"
      echo "fuzz.sh: fuzz_$t failed on the input kept in $kept"
      echo "  reproduce: $BUILD/bin/fuzz_$t $kept"
    done
    echo "  its report (the whole log: $work/log):"
    grep -E 'ERROR|SUMMARY|broken promise|runtime error|Test unit written' "$work/log" |
      head -n 8 | sed 's/^/    /'
  fi
  printf '%-11s %10s %7s %7s -> %-7s %6s -> %-6s %s\n' "$t" "${runs:-?}" "$secs" \
    "${cov0:-?}" "${cov1:-?}" "$seeds" "$corpus" "$result" >>"$table"
done
echo
printf '%-11s %10s %7s %-18s %-16s %s\n' target runs seconds "   coverage" "  corpus" result
cat "$table"
rm -f "$table"
echo "fuzz.sh: logs and working corpora in $BUILD/fuzz-runs/; total $(( $(date +%s) - start )) s"
exit $status
