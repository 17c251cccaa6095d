#!/usr/bin/env python3
"""examples/pytorch/train.py: a PyTorch DistributedDataParallel trial program for the
tuner, written as one would write it for AI Platform Training.

An MLP on (a subset of) Fashion-MNIST, trained data-parallel over the trial's chief and
workers with the gloo backend. What it takes from the trial-job contract
(docs/executor.md; README.md beside this file):

- the hyperparameters as --NAME=VALUE flags, and --job-dir (argparse);
- WORLD_SIZE, RANK, MASTER_ADDR, MASTER_PORT through init_method="env://";
- TF_CONFIG only to name itself in its log (chief:0, worker:0, ...);
- CLOUD_ML_HP_METRIC_FILE and CLOUD_ML_TRIAL_ID through the cloudml-hypertune library.

It reports after every epoch (the chief: accuracy, loss and train_loss; the workers:
their own train_loss), keeps a checkpoint in --job-dir and resumes from it when the
tuner restarts it, so a crashed replica carries on where the job was.
--crash_once_at_step=N makes one replica (--crash_replica, worker:0 by default) exit 1
once at global step N, to see that happen; a marker file in --job-dir keeps it to once.

Run it with Debian's python3-torch (1.13) and NumPy 1.x; scripts/python-env.sh makes a
venv that has both and cloudml-hypertune.
"""
import argparse
import datetime
import gzip
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

try:
    import hypertune
except ImportError:
    sys.exit("train.py: the cloudml-hypertune library is missing: run scripts/python-env.sh "
             "and put its venv's bin/ first on PATH (examples/pytorch/README.md)")

# Exit status 2 is the contract's usage error: the tuner fails the trial at once
# instead of restarting a program that cannot work.
USAGE = 2


def log(msg):
    print("[%s] %s" % (ROLE, msg), flush=True)


def role_from_tf_config():
    """TYPE:INDEX of this replica, from TF_CONFIG (chief:0 when it is not set)."""
    raw = os.environ.get("TF_CONFIG", "")
    if not raw:
        return "chief:0"
    task = json.loads(raw).get("task", {})
    return "%s:%s" % (task.get("type", "chief"), task.get("index", 0))


ROLE = role_from_tf_config()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # hyperparameters: the tuner passes each as --NAME=VALUE
    p.add_argument("--learning_rate", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--hidden_units", type=int, default=128)
    p.add_argument("--batch_size", type=int, default=64, help="global batch (all replicas)")
    # fixed flags (the spec's command or args)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--train_examples", type=int, default=6000)
    p.add_argument("--test_examples", type=int, default=2000)
    p.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dist_timeout", type=float, default=120,
                   help="seconds to wait for the peers (rendezvous and each collective)")
    p.add_argument("--crash_once_at_step", type=int, default=0)
    p.add_argument("--crash_replica", default="worker:0")
    # every trial gets --job-dir (argparse names it job_dir)
    p.add_argument("--job-dir", default="", help="the trial's folder")
    a = p.parse_args()
    if a.epochs < 1 or a.batch_size < 1 or a.train_examples < a.batch_size:
        p.error("need --epochs >= 1 and --train_examples >= --batch_size >= 1")
    return a


def check_numpy():
    """Debian's torch 1.13 is built against NumPy 1.x; under NumPy 2 it imports but
    cannot exchange arrays ("Numpy is not available"). Say so once, as a usage error."""
    if torch.__version__.startswith("1.") and int(np.__version__.split(".")[0]) >= 2:
        log("error: torch %s needs NumPy 1.x, this Python has NumPy %s (a venv without "
            "--system-site-packages, or pip upgraded numpy): use scripts/python-env.sh"
            % (torch.__version__, np.__version__))
        sys.exit(USAGE)


def read_idx(path):
    """An IDX file (gzip): uint8 array of the shape its header gives."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if raw[:2] != b"\0\0" or raw[2] != 8:
        raise ValueError("%s: not an IDX file of unsigned bytes" % path)
    ndim = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def load_split(data_dir, prefix, limit):
    try:
        x = read_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"))[:limit]
        y = read_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"))[:limit]
    except OSError as e:
        log("error: cannot read Fashion-MNIST: %s (Debian's dataset-fashion-mnist, or "
            "--data_dir)" % e)
        sys.exit(USAGE)
    x = torch.from_numpy(x.reshape(len(x), -1).astype(np.float32) / 255.0)
    return x, torch.from_numpy(y.astype(np.int64))


def save_checkpoint(path, epoch, model, opt):
    """Written by the chief after each epoch; a rename makes it whole or absent."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": opt.state_dict()},
               tmp)
    os.replace(tmp, path)


def weights_digest(model):
    h = hashlib.sha256()
    for t in model.state_dict().values():
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def main():
    a = parse_args()
    check_numpy()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    job_dir = a.job_dir or "."
    os.makedirs(job_dir, exist_ok=True)
    ckpt_path = os.path.join(job_dir, "checkpoint.pt")
    if a.batch_size % world:
        log("error: --batch_size=%d is not a multiple of the %d replicas" % (a.batch_size, world))
        sys.exit(USAGE)

    if world > 1:
        t0 = time.time()
        dist.init_process_group("gloo", init_method="env://",
                                timeout=datetime.timedelta(seconds=a.dist_timeout))
        log("rendezvous: rank %d of %d at %s:%s in %.1fs" % (
            rank, world, os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"], time.time() - t0))
    else:
        log("single replica: no process group")

    torch.manual_seed(a.seed)
    model = nn.Sequential(nn.Linear(784, a.hidden_units), nn.ReLU(),
                          nn.Linear(a.hidden_units, 10))
    opt = torch.optim.SGD(model.parameters(), lr=a.learning_rate, momentum=a.momentum)
    start_epoch = 0
    # Read only after the rendezvous: every earlier process of this job is gone by then,
    # so all ranks see the same file.
    if os.path.exists(ckpt_path):
        state = torch.load(ckpt_path)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start_epoch = state["epoch"]
        log("resumed from %s at epoch %d" % (ckpt_path, start_epoch))
    if world > 1:
        chief_epoch = torch.tensor([start_epoch])
        dist.broadcast(chief_epoch, src=0)
        if chief_epoch.item() != start_epoch:  # the chief saw another checkpoint: rerun
            log("error: the chief resumes at epoch %d, this replica at %d" % (
                chief_epoch.item(), start_epoch))
            sys.exit(1)
        ddp = nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's weights
    else:
        ddp = model

    x_train, y_train = load_split(a.data_dir, "train", a.train_examples)
    x_test, y_test = load_split(a.data_dir, "t10k", a.test_examples)
    steps_per_epoch = len(x_train) // a.batch_size
    local_batch = a.batch_size // world
    ht = hypertune.HyperTune()
    crash_marker = os.path.join(job_dir, "crashed-" + ROLE.replace(":", "-"))
    log("training: %d examples, %d steps per epoch, local batch %d, epochs %d..%d" % (
        len(x_train), steps_per_epoch, local_batch, start_epoch + 1, a.epochs))

    for epoch in range(start_epoch, a.epochs):
        ddp.train()
        # the same permutation on every rank; each takes every world-th example of it
        perm = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(a.seed + epoch))
        mine = perm[rank::world]
        total, t0 = 0.0, time.time()
        for s in range(steps_per_epoch):
            step = epoch * steps_per_epoch + s + 1
            if (a.crash_once_at_step == step and ROLE == a.crash_replica
                    and not os.path.exists(crash_marker)):
                open(crash_marker, "w").close()
                log("crashing on purpose at step %d (--crash_once_at_step)" % step)
                os._exit(1)
            idx = mine[s * local_batch:(s + 1) * local_batch]
            loss = F.cross_entropy(ddp(x_train[idx]), y_train[idx])
            opt.zero_grad()
            loss.backward()  # DDP all-reduces the gradients here
            opt.step()
            total += loss.item()
        train_loss = total / steps_per_epoch
        step = (epoch + 1) * steps_per_epoch
        if rank == 0:
            model.eval()
            with torch.no_grad():
                logits = model(x_test)
                test_loss = F.cross_entropy(logits, y_test).item()
                acc = (logits.argmax(1) == y_test).float().mean().item()
            save_checkpoint(ckpt_path, epoch + 1, model, opt)
            ht.report_hyperparameter_tuning_metric("train_loss", train_loss, global_step=step)
            ht.report_hyperparameter_tuning_metric("loss", test_loss, global_step=step)
            # the objective last: the tuner takes the last value of the metric tag
            ht.report_hyperparameter_tuning_metric("accuracy", acc, global_step=step)
            log("epoch %d: step %d train_loss %.4f loss %.4f accuracy %.4f (%.1fs)" % (
                epoch + 1, step, train_loss, test_loss, acc, time.time() - t0))
        else:
            ht.report_hyperparameter_tuning_metric("train_loss", train_loss, global_step=step)
            log("epoch %d: step %d train_loss %.4f (%.1fs)" % (
                epoch + 1, step, train_loss, time.time() - t0))
        if world > 1:
            dist.barrier()  # the checkpoint of this epoch is written before anyone goes on

    log("final weights sha256 %s" % weights_digest(model))
    if world > 1:
        dist.barrier()  # every rank has logged before the chief's exit ends the job
        dist.destroy_process_group()
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
