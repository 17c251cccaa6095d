#!/usr/bin/env python3
"""PyTorch reference for the GPU training-speed benchmark (bench/gpu_speed.py).

Measures PyTorch's training throughput (examples/second) on one GPU with the same
models, batching and optimiser as `trainer --device=gpu`: the data set is on the GPU,
each step gathers its batch from the epoch's permutation with index_select, then
zero_grad(set_to_none=True), forward, CrossEntropyLoss (mean), backward, SGD with
momentum 0.9 and lr 0.05. Precision: fp32 (TF32 off), tf32 (TF32 matmuls and
convolutions) or bf16 (autocast to bfloat16, float32 parameters: the same split as
trainer's --precision=bf16). --compile: none (eager), default or reduce-overhead (CUDA
graphs) for torch.compile. `--warmup_steps` untimed steps, then `--steps` timed steps
between torch.cuda.synchronize() calls. Prints one JSON object on stdout.

    python3 bench/pytorch_gpu.py --model mlp --batch_size 128 --precision fp32
    python3 bench/pytorch_gpu.py --model cnn --batch_size 1024 --precision bf16 --compile default
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
from torch import nn

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
p.add_argument("--batch_size", type=int, default=128)
p.add_argument("--precision", choices=["fp32", "tf32", "bf16"], default="fp32")
p.add_argument("--compile", choices=["none", "default", "reduce-overhead"], default="none")
p.add_argument("--steps", type=int, default=500)
p.add_argument("--warmup_steps", type=int, default=30)
p.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
p.add_argument("--seed", type=int, default=0)
args = p.parse_args()

if not torch.cuda.is_available():
    print("pytorch_gpu.py: error: no CUDA device for PyTorch", file=sys.stderr)
    sys.exit(1)
dev = torch.device("cuda")
torch.manual_seed(args.seed)
tf32 = args.precision == "tf32"
torch.backends.cuda.matmul.allow_tf32 = tf32
torch.backends.cudnn.allow_tf32 = tf32
torch.backends.cudnn.benchmark = True


def load_idx(path):
    for name in (path, path + ".gz"):
        if os.path.exists(name):
            opener = gzip.open if name.endswith(".gz") else open
            with opener(name, "rb") as f:
                data = f.read()
            dims = data[3]
            shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
            return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)
    return None


images = load_idx(os.path.join(args.data_dir, "train-images-idx3-ubyte"))
labels = load_idx(os.path.join(args.data_dir, "train-labels-idx1-ubyte"))
if images is None or labels is None:
    print("pytorch_gpu.py: note: no Fashion-MNIST in %s; synthetic 28x28 data (speed is the "
          "same)" % args.data_dir, file=sys.stderr)
    rng = np.random.default_rng(args.seed)
    images = rng.integers(0, 256, size=(60000, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, size=60000, dtype=np.uint8)
X = torch.from_numpy(images.astype(np.float32) / 255.0).to(dev)
Y = torch.from_numpy(labels.astype(np.int64)).to(dev)
n = X.shape[0]
if args.model == "mlp":
    X = X.reshape(n, 784)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
else:
    X = X.reshape(n, 1, 28, 28)
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
model = model.to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)  # before compile: same params
loss_fn = nn.CrossEntropyLoss()


if args.compile != "none":
    model = torch.compile(model, mode=None if args.compile == "default" else args.compile)


def step(x, y):
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
        out = model(x)
        loss = loss_fn(out.float(), y)
    loss.backward()
    return loss


B = args.batch_size
perm = torch.randperm(n, device=dev)
pos = 0


def batch():
    """The next full batch of the epoch's order; a new order where fewer than B are left
    (a short last batch is another shape: torch.compile would compile it again, CUDA
    graphs record it again and cuDNN tune for it, inside the timed steps)."""
    global perm, pos
    if pos + B > n:
        perm, pos = torch.randperm(n, device=dev), 0
    idx = perm[pos:pos + B]
    pos += B
    return X.index_select(0, idx), Y.index_select(0, idx)


def train(steps):
    loss = None
    for _ in range(steps):
        x, y = batch()
        opt.zero_grad(set_to_none=True)
        loss = step(x, y)
        opt.step()
    return loss


train(args.warmup_steps)
torch.cuda.synchronize()
t0 = time.perf_counter()
loss = train(args.steps)
torch.cuda.synchronize()
seconds = time.perf_counter() - t0
print(json.dumps({
    "framework": "pytorch", "torch": torch.__version__, "model": args.model,
    "batch_size": B, "precision": args.precision, "compile": args.compile,
    "steps": args.steps, "examples_per_sec": round(B * args.steps / seconds, 1),
    "final_loss": round(float(loss), 4), "gpu": torch.cuda.get_device_name(0),
}))
