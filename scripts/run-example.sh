#!/bin/sh
# run-example.sh — install what is missing, build, and run the example: `trainer`
# training the 784-256-256-10 MLP on the real Fashion-MNIST for 5 epochs (momentum
# 0.9, learning rate 0.05 with a cosine schedule, batch 128), checkpointing into
# runs/example (run it again and it resumes, or says the run is complete) and
# reporting metrics to runs/example/metrics.
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
rm -rf runs/example
CLOUD_ML_HP_METRIC_FILE=runs/example/metrics \
  build/bin/trainer --model=mlp --hidden_units=256,256 --optimizer=momentum \
  --learning_rate=0.05 --momentum=0.9 --batch_size=128 --epochs=5 \
  --job-dir=runs/example "$@"
echo "metrics: runs/example/metrics; model: runs/example/model.ckpt"
