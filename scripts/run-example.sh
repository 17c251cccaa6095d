#!/bin/sh
# run-example.sh — install what is missing, build, and run the example study:
# studies/fashion_mlp_random.json, random search over learning rate, width,
# optimiser and batch size of the MLP on the real Fashion-MNIST, 8 trials, each a
# chief and a worker running `trainer`. The store is runs/example.db; the trials'
# folders (logs, metrics, checkpoints, models) are under runs/fashion_mlp_random/.
# Extra arguments go to `tuner run` (e.g. --seed=3).
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
rm -rf runs/fashion_mlp_random runs/example.db runs/example.db-wal runs/example.db-shm
mkdir -p runs
build/bin/tuner run studies/fashion_mlp_random.json --db=runs/example.db "$@"
build/bin/tuner trials fashion_mlp_random --db=runs/example.db
