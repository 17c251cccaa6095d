#!/usr/bin/env python3
"""examples/keras/train.py: a Keras MultiWorkerMirroredStrategy trial program for the
tuner, written as one would write it for AI Platform Training.

An MLP on (a subset of) Fashion-MNIST, trained with model.fit under
tf.distribute.MultiWorkerMirroredStrategy across the trial's chief and workers. What it
takes from the trial-job contract (docs/executor.md; README.md beside this file):

- the hyperparameters as --NAME=VALUE flags, and --job-dir (argparse);
- TF_CONFIG, which the strategy reads: the cluster's chief and workers and this task;
- CLOUD_ML_HP_METRIC_FILE and CLOUD_ML_TRIAL_ID through the cloudml-hypertune library.

The chief reports the validation accuracy and loss after every epoch. Training is
backed up to --job-dir/backup (BackupAndRestore), so replicas the tuner restarts
resume from the last finished epoch; at the end the chief's copy of the model is saved
to --job-dir/model.

Keras 3 cannot run this (model.fit under this strategy fails): it needs Keras 2, the
tf_keras package with TF_USE_LEGACY_KERAS=1 in the environment, which the spec's
"env" sets. examples/keras/run.sh makes the venv and runs a study.
"""
import os
import sys

USAGE = 2  # the contract's usage error: the tuner fails the trial at once


def usage_error(msg):
    print("train.py: error: " + msg, file=sys.stderr, flush=True)
    sys.exit(USAGE)


# Checked before TensorFlow is imported: it picks Keras 2 or 3 at import.
if os.environ.get("TF_USE_LEGACY_KERAS") != "1":
    usage_error("TF_USE_LEGACY_KERAS=1 is not set, so tf.keras would be Keras 3, whose "
                "model.fit cannot run under MultiWorkerMirroredStrategy: set it in the "
                "spec's env (\"env\": {\"TF_USE_LEGACY_KERAS\": \"1\"}) and install tf_keras")

import argparse  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

try:
    import tensorflow as tf  # noqa: E402
    import hypertune  # noqa: E402
except ImportError as e:
    usage_error("%s: run examples/keras/run.sh, which makes a venv with tensorflow, "
                "tf_keras and cloudml-hypertune" % e)
try:
    import tf_keras  # noqa: E402  (what tf.keras is with TF_USE_LEGACY_KERAS=1)
except ImportError:
    tf_keras = None
if tf_keras is None or not tf.keras.Model.__module__.startswith("tf_keras"):
    usage_error("tf.keras is not Keras 2 although TF_USE_LEGACY_KERAS=1: install the tf_keras "
                "package of TensorFlow's version (pip install tf_keras==%s)" % tf.__version__)


def task_from_tf_config():
    """(type, index) of this replica; a program run by hand is the single chief."""
    raw = os.environ.get("TF_CONFIG", "")
    task = json.loads(raw).get("task", {}) if raw else {}
    return task.get("type", "chief"), int(task.get("index", 0))


TASK_TYPE, TASK_INDEX = task_from_tf_config()
ROLE = "%s:%d" % (TASK_TYPE, TASK_INDEX)
# TensorFlow's rule: the chief (or the legacy master) is the chief; without one in the
# cluster, worker 0 is.
_cluster = json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster", {})
IS_CHIEF = TASK_TYPE in ("chief", "master") or (
    TASK_TYPE == "worker" and TASK_INDEX == 0 and not (_cluster.get("chief") or _cluster.get("master")))


def log(msg):
    print("[%s] %s" % (ROLE, msg), flush=True)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # hyperparameters: the tuner passes each as --NAME=VALUE
    p.add_argument("--learning_rate", type=float, default=0.01)
    p.add_argument("--hidden_units", type=int, default=128)
    p.add_argument("--batch_size", type=int, default=64, help="global batch (all replicas)")
    # fixed flags (the spec's command or args)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--train_examples", type=int, default=10000)
    p.add_argument("--test_examples", type=int, default=2000)
    p.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--crash_once_at_epoch", type=int, default=0,
                   help="worker:0 exits 1 once after this epoch's backup (a marker in --job-dir)")
    # every trial gets --job-dir (argparse names it job_dir)
    p.add_argument("--job-dir", default="", help="the trial's folder")
    a = p.parse_args()
    if a.epochs < 1 or a.batch_size < 1 or a.train_examples < a.batch_size:
        p.error("need --epochs >= 1 and --train_examples >= --batch_size >= 1")
    return a


def read_idx(path):
    """An IDX file (gzip): uint8 array of the shape its header gives."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if raw[:2] != b"\0\0" or raw[2] != 8:
        raise ValueError("%s: not an IDX file of unsigned bytes" % path)
    ndim = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def dataset(data_dir, prefix, limit, batch, shuffle_seed=None):
    try:
        x = read_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"))[:limit]
        y = read_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"))[:limit]
    except OSError as e:
        usage_error("cannot read Fashion-MNIST: %s (Debian's dataset-fashion-mnist, or "
                    "--data_dir)" % e)
    x = x.reshape(len(x), -1).astype(np.float32) / 255.0
    ds = tf.data.Dataset.from_tensor_slices((x, y.astype(np.int64)))
    if shuffle_seed is not None:
        ds = ds.shuffle(len(x), seed=shuffle_seed, reshuffle_each_iteration=True)
    # The global batch; the strategy splits it among the replicas. Every worker reads
    # the same file, so shard by element (the default, by file, has one file to split).
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return ds.batch(batch, drop_remainder=True).with_options(options)


class CrashOnce(tf.keras.callbacks.Callback):
    """--crash_once_at_epoch: worker 0 exits 1 at the end of that epoch, once."""

    def __init__(self, epoch, marker):
        super().__init__()
        self.epoch, self.marker = epoch, marker

    def on_epoch_end(self, epoch, logs=None):
        if epoch + 1 == self.epoch and ROLE == "worker:0" and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            log("crashing on purpose after epoch %d (--crash_once_at_epoch)" % self.epoch)
            os._exit(1)


class ReportToTuner(tf.keras.callbacks.Callback):
    """After every epoch the chief reports the validation metrics (the strategy has
    already all-reduced them, every worker sees the same) through cloudml-hypertune."""

    def __init__(self, steps_per_epoch):
        super().__init__()
        self.steps_per_epoch = steps_per_epoch
        self.ht = hypertune.HyperTune() if IS_CHIEF else None
        self.t0 = time.time()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        step = (epoch + 1) * self.steps_per_epoch
        log("epoch %d: step %d loss %.4f accuracy %.4f val_loss %.4f val_accuracy %.4f "
            "(%.1fs)" % (epoch + 1, step, logs.get("loss", float("nan")),
                         logs.get("accuracy", float("nan")), logs.get("val_loss", float("nan")),
                         logs.get("val_accuracy", float("nan")), time.time() - self.t0))
        self.t0 = time.time()
        if self.ht:
            self.ht.report_hyperparameter_tuning_metric("loss", logs["val_loss"], global_step=step)
            # the objective last: the tuner takes the last value of the metric tag
            self.ht.report_hyperparameter_tuning_metric("accuracy", logs["val_accuracy"],
                                                        global_step=step)


def main():
    a = parse_args()
    job_dir = a.job_dir or "."
    # The strategy first: it starts this process's collective server from TF_CONFIG
    # and must exist before any other TensorFlow op.
    t0 = time.time()
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    log("MultiWorkerMirroredStrategy: %d replicas in sync, chief %s (%.1fs); TensorFlow %s, "
        "Keras %s" % (strategy.num_replicas_in_sync, IS_CHIEF, time.time() - t0,
                      tf.__version__, tf_keras.__version__))
    tf.keras.utils.set_random_seed(a.seed)  # the same initial weights on every worker

    train = dataset(a.data_dir, "train", a.train_examples, a.batch_size, shuffle_seed=a.seed)
    test = dataset(a.data_dir, "t10k", a.test_examples, a.batch_size)
    steps_per_epoch = a.train_examples // a.batch_size

    with strategy.scope():
        model = tf.keras.Sequential([
            tf.keras.layers.Input(shape=(784,)),
            tf.keras.layers.Dense(a.hidden_units, activation="relu"),
            tf.keras.layers.Dense(10),
        ])
        model.compile(
            optimizer=tf.keras.optimizers.SGD(learning_rate=a.learning_rate, momentum=0.9),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"])

    backup = os.path.join(job_dir, "backup")
    if os.path.exists(os.path.join(backup, "chief", "checkpoint")) or os.path.exists(
            os.path.join(backup, "checkpoint")):
        log("resuming from the backup in %s" % backup)
    callbacks = [
        # every worker writes its backup (the non-chiefs into folders of their own);
        # a restarted job resumes at the last finished epoch
        tf.keras.callbacks.BackupAndRestore(backup_dir=backup),
        ReportToTuner(steps_per_epoch),
    ]
    if a.crash_once_at_epoch:
        callbacks.append(CrashOnce(a.crash_once_at_epoch, os.path.join(job_dir, "crashed-worker-0")))
    model.fit(train, epochs=a.epochs, validation_data=test, callbacks=callbacks, verbose=0)

    # Saving is collective under this strategy: every worker saves, the chief where
    # the model belongs and the others into a scratch folder they delete.
    final = os.path.join(job_dir, "model")
    target = final if IS_CHIEF else os.path.join(job_dir, "scratch-%s-%d" % (TASK_TYPE, TASK_INDEX))
    model.save(target)
    if not IS_CHIEF:
        shutil.rmtree(target, ignore_errors=True)
    log("done: model in %s" % final)
    return 0


if __name__ == "__main__":
    sys.exit(main())
