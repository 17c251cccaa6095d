#!/usr/bin/python3
"""PyTorch reference for the training speed benchmark.

Measures PyTorch's CPU training throughput (examples/second) on the same models,
data, batching and optimizer as our C `trainer`, with the whole data set already in
memory: each step gathers a batch from a shuffled permutation of the training set
with index_select (reshuffled at every epoch end, last partial batch included), then
zero_grad(set_to_none=True), forward, CrossEntropyLoss (mean), backward, step.
`--warmup_steps` untimed steps come first; the `--steps` timed steps are timed with
time.perf_counter() around the loop. Prints exactly one JSON object on stdout; notes
go to stderr.

Used by bench/run_train_bench.sh, e.g.
    /usr/bin/python3 bench/pytorch_train.py --model mlp --threads 1
    /usr/bin/python3 bench/pytorch_train.py --model cnn --threads 2 --steps 50
Accuracy cross-check of a recipe (trains N full epochs instead of --steps):
    /usr/bin/python3 bench/pytorch_train.py --epochs 5 --report_accuracy

Run it with Debian's /usr/bin/python3 (python3-torch, python3-numpy). --threads sets
PyTorch's intra-op threads (OpenMP, oneDNN) and also OpenBLAS's, which Debian's torch
uses for Linear layers (OpenBLAS does not follow torch.set_num_threads); inter-op
threads are 1. With --threads > 1 set OMP_WAIT_POLICY=PASSIVE: otherwise libgomp's
spinning threads fight OpenBLAS's own pthreads for the cores and the MLP runs several
times slower than with one thread.
"""
import argparse
import ctypes
import gzip
import json
import os
import sys
import time

import numpy as np

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
p.add_argument("--threads", type=int, default=1)
p.add_argument("--batch_size", type=int, default=128)
p.add_argument("--steps", type=int, default=300, help="timed steps")
p.add_argument("--warmup_steps", type=int, default=20, help="untimed steps first")
p.add_argument("--epochs", type=int, default=0,
               help="if > 0, time this many full epochs instead of --steps")
p.add_argument("--hidden_units", default=None,
               help='comma list; default "256,256" (mlp) or "128" (cnn)')
p.add_argument("--conv_filters", default="32,64")
p.add_argument("--optimizer", choices=["sgd", "momentum", "adam"], default="momentum")
p.add_argument("--learning_rate", type=float, default=0.05)
p.add_argument("--momentum", type=float, default=0.9)
p.add_argument("--data", choices=["synthetic", "fashion"], default="fashion")
p.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
p.add_argument("--report_accuracy", action="store_true",
               help="after timing, evaluate on the t10k test set")
p.add_argument("--seed", type=int, default=0)
args = p.parse_args()

# OpenBLAS reads its thread count when it is loaded, i.e. when torch is imported.
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ[var] = str(args.threads)
import torch  # noqa: E402  (after the environment is set)

torch.set_num_threads(args.threads)
torch.set_num_interop_threads(1)
torch.manual_seed(args.seed)

blas, blas_threads = "unknown", None
try:
    ob = ctypes.CDLL("libopenblas.so.0")
    ob.openblas_set_num_threads(args.threads)
    blas_threads = ob.openblas_get_num_threads()
    ob.openblas_get_config.restype = ctypes.c_char_p
    blas = ob.openblas_get_config().decode().strip()
except (OSError, AttributeError):
    pass


def note(*a):
    print(*a, file=sys.stderr)


def load_idx(kind):
    """Returns (x float32 (N,784) in [0,1], y int64 (N)) for kind 'train' or 't10k'."""
    def read(name, offset):
        with gzip.open(os.path.join(args.data_dir, name), "rb") as f:
            return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)
    x = read(f"{kind}-images-idx3-ubyte.gz", 16).reshape(-1, 784)
    y = read(f"{kind}-labels-idx1-ubyte.gz", 8)
    return (torch.from_numpy(x.astype(np.float32) / 255.0),
            torch.from_numpy(y.astype(np.int64)))


def synthetic(n):
    g = torch.Generator().manual_seed(0)
    return torch.rand(n, 784, generator=g), torch.randint(0, 10, (n,), generator=g)


def build_model():
    if args.model == "mlp":
        h = [int(v) for v in (args.hidden_units or "256,256").split(",")]
        layers, prev = [], 784
        for units in h:
            layers += [torch.nn.Linear(prev, units), torch.nn.ReLU()]
            prev = units
        return torch.nn.Sequential(*layers, torch.nn.Linear(prev, 10))
    f1, f2 = (int(v) for v in args.conv_filters.split(","))
    (h,) = (int(v) for v in (args.hidden_units or "128").split(","))
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, f1, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(f1, f2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(f2 * 7 * 7, h), nn.ReLU(), nn.Linear(h, 10))


def shape(x):
    return x.view(-1, 1, 28, 28) if args.model == "cnn" else x


if args.data == "fashion":
    x_train, y_train = load_idx("train")
else:
    x_train, y_train = synthetic(60000)
n = x_train.shape[0]
x_train = shape(x_train)

model = build_model()
params = model.parameters()
if args.optimizer == "sgd":
    opt = torch.optim.SGD(params, lr=args.learning_rate)
elif args.optimizer == "momentum":
    opt = torch.optim.SGD(params, lr=args.learning_rate, momentum=args.momentum)
else:
    opt = torch.optim.Adam(params, lr=args.learning_rate)
loss_fn = torch.nn.CrossEntropyLoss()

perm, pos = torch.randperm(n), 0


def step():
    """One training step on the next batch of the permutation; returns (loss, batch)."""
    global perm, pos
    if pos >= n:
        perm, pos = torch.randperm(n), 0
    idx = perm[pos:pos + args.batch_size]
    pos += idx.numel()
    xb, yb = x_train.index_select(0, idx), y_train.index_select(0, idx)
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(xb), yb)
    loss.backward()
    opt.step()
    return loss, idx.numel()


model.train()
for _ in range(args.warmup_steps):
    step()
if args.epochs > 0:  # full epochs from a fresh permutation
    perm, pos = torch.randperm(n), 0
    steps = args.epochs * -(-n // args.batch_size)
else:
    steps = args.steps

examples, loss = 0, None
t0 = time.perf_counter()
for _ in range(steps):
    loss, b = step()
    examples += b
seconds = time.perf_counter() - t0

out = {
    "framework": "pytorch", "version": torch.__version__, "model": args.model,
    "threads": args.threads, "batch_size": args.batch_size, "steps": steps,
    "examples": examples, "examples_per_sec": round(examples / seconds, 1),
    "seconds": round(seconds, 4),
    "final_loss": round(loss.item(), 6) if loss is not None else None,
    "optimizer": args.optimizer, "data": args.data, "blas": blas,
    "blas_threads": blas_threads,
    "env": {k: os.environ[k] for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
                                       "OPENBLAS_CORETYPE") if k in os.environ},
}
if args.epochs > 0:
    out["epochs"] = args.epochs

if args.report_accuracy:
    if args.data == "fashion":
        x_test, y_test = load_idx("t10k")
    else:
        x_test, y_test = synthetic(10000)
    x_test = shape(x_test)
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, x_test.shape[0], 1000):
            pred = model(x_test[i:i + 1000]).argmax(1)
            correct += (pred == y_test[i:i + 1000]).sum().item()
    out["test_accuracy"] = round(correct / x_test.shape[0], 4)

note(f"pytorch {args.model}: {out['examples_per_sec']} examples/s, "
     f"{steps} steps in {seconds:.3f} s, {blas} ({blas_threads} threads)")
print(json.dumps(out))
