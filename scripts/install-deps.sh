#!/bin/sh
# install-deps.sh — install every package the project needs to build, test and run,
# from Debian 12 by name. Works as root or through sudo; does nothing (and needs no
# privileges) when everything is already present.
#
#   scripts/install-deps.sh          build, test and example dependencies
#   scripts/install-deps.sh --test   also Slurm's daemons and client (slurmctld, slurmd,
#                                    slurm-client, munge) for the tests that bring up a
#                                    throw-away cluster (scripts/slurm-cluster.sh; the
#                                    tests start and stop the daemons themselves), and
#                                    clang with libFuzzer (libclang-rt-14-dev) for the
#                                    fuzz harnesses (scripts/fuzz.sh), and python3-torch
#                                    and python3-venv for the PyTorch example's test
#   scripts/install-deps.sh --bench  also what the benchmarks compare against
#                                    (Debian's python3-torch, -numpy, -optuna, -scipy;
#                                    python3-venv for bench/bo.py's newer Optuna and
#                                    bench/slurm_overhead.py's submitit; wrk for
#                                    bench/dashboard_load.sh), and Slurm as --test
set -eu

PACKAGES="build-essential cmake pkg-config libopenblas-dev zlib1g-dev libgsl-dev
libjansson-dev libevent-dev libsqlite3-dev libyaml-dev dataset-fashion-mnist python3
python3-pip chromium chromium-driver python3-selenium"
SLURM_PACKAGES="slurmctld slurmd slurm-client munge"
BENCH_PACKAGES="python3-torch python3-numpy python3-optuna python3-scipy python3-venv wrk"

case "${1:-}" in
  --test) PACKAGES="$PACKAGES $SLURM_PACKAGES clang libclang-rt-14-dev python3-torch python3-venv" ;;
  --bench) PACKAGES="$PACKAGES $SLURM_PACKAGES $BENCH_PACKAGES" ;;
  "") ;;
  -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install-deps.sh: error: unknown option '$1'" >&2
     echo "hint: run 'scripts/install-deps.sh --help'" >&2; exit 2 ;;
esac

missing=""
for p in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "install-deps.sh: error: missing packages:$missing" >&2
  echo "hint: run this script as root, or install sudo" >&2
  exit 1
fi

echo "install-deps.sh: installing:$missing"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
