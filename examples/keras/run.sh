#!/bin/sh
# run.sh — run the Keras MultiWorkerMirroredStrategy example (examples/keras/) as a study:
# make (or reuse) its venv with pip TensorFlow, tf_keras and cloudml-hypertune
# (scripts/python-env.sh --tensorflow, a 570 MB download the first time), then
# `tuner run examples/keras/spec.json` from the repository root, and print the trials.
#
#   examples/keras/run.sh [TUNER_RUN_OPTIONS...]     e.g. --seed=3
#
# TUNER      the tuner binary (default build/bin/tuner; scripts/build.sh makes it)
# VENV       the venv (default build/venv-tensorflow)
# DB         the store (default runs/keras_example.db; it and the study's folder
#            runs/keras_mwms_fashion/ are removed first)
# Not part of ctest (too heavy); docs/examples.md records a run. Exits non-zero, saying
# what is missing, when something is: the tuner, Fashion-MNIST, python3-venv, PyPI.
set -eu
cd "$(dirname "$0")/../.."
me=examples/keras/run.sh
die() { echo "$me: error: $*" >&2; exit 1; }

tuner=${TUNER:-build/bin/tuner}
venv=${VENV:-build/venv-tensorflow}
db=${DB:-runs/keras_example.db}
[ -x "$tuner" ] || die "no tuner at $tuner: build it first (scripts/build.sh), or set TUNER"
[ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
  die "Fashion-MNIST is missing: apt-get install dataset-fashion-mnist (scripts/install-deps.sh)"
bin=$(scripts/python-env.sh --tensorflow "$venv") ||
  die "the venv $venv could not be made (the reason is above)"
PATH="$bin:$PATH"  # the spec's "python3" is the venv's
export PATH
"$tuner" validate examples/keras/spec.json >/dev/null ||
  die "$tuner does not accept examples/keras/spec.json (above; a tuner older than the spec's \"env\" field must be rebuilt)"

rm -rf runs/keras_mwms_fashion "$db" "$db-wal" "$db-shm"
mkdir -p "$(dirname "$db")"
start=$(date +%s)
status=0
"$tuner" run examples/keras/spec.json --db="$db" --dashboard=off "$@" || status=$?
echo "$me: the study took $(( $(date +%s) - start )) s (tuner exit status $status)"
"$tuner" trials keras_mwms_fashion --db="$db"
exit "$status"
