#!/usr/bin/python3
"""PyTorch DistributedDataParallel (gloo) reference for the distributed training benchmark.

Measures PyTorch's data-parallel CPU training throughput (examples/second) on the
same models, data and optimizer as bench/pytorch_train.py and our C `trainer`:
MLP 784-256-256-10 or the CNN (conv3x3 32, pool, conv3x3 64, pool, dense 128,
dense 10), PyTorch's default init, momentum SGD (lr 0.05, mu 0.9), CrossEntropyLoss
(mean). The script launches --procs copies of itself (subprocesses with RANK,
WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free MASTER_PORT in their environment) that
join a gloo process group over loopback. Each process
  - keeps the whole training set in memory;
  - draws, at every epoch, the same global permutation (seeded with seed + epoch, as
    DistributedSampler does with shuffle=True, drop_last=False: the permutation is
    padded with its own head to a multiple of --procs, and rank r takes every
    procs-th index starting at r), and walks its shard in batches of
    global_batch / procs gathered with index_select (last partial batch included;
    every rank's shard has the same length, so the ranks stay in step);
  - trains DistributedDataParallel(model): zero_grad(set_to_none=True), forward,
    loss, backward (DDP averages the gradients over the ranks, so a step is the same
    as one single-process step on the global batch), step.
`--warmup_steps` untimed steps come first; every process then barriers, times the
`--steps` steps with time.perf_counter(), barriers again and stops its clock; the
reported seconds are the maximum over the ranks. Rank 0 prints exactly one JSON
object on stdout; notes go to stderr.

With --procs 1 the script trains in its own process, without a process group or the
DDP wrapper ("ddp": false in the JSON): the honest single-process baseline, the same
work as bench/pytorch_train.py with --batch_size global_batch.

--allreduce_bench times dist.all_reduce (sum) of float32 tensors of --sizes_mb MiB
(1 MiB = 2^20 bytes) over gloo: 3 warm-up calls (the first checks the result), then
--repeats timed calls, each between barriers, each call's time the maximum over the
ranks; reports the median, algbw = bytes / seconds / 1e9 (GB/s) and
busbw = algbw * 2 (procs - 1) / procs (the traffic of a ring all-reduce).

Examples:
    /usr/bin/python3 bench/pytorch_ddp.py --model mlp --procs 2 --global_batch 128 \\
        --threads_per_proc 1 --steps 300 --warmup_steps 20
    /usr/bin/python3 bench/pytorch_ddp.py --model cnn --procs 1 --steps 50
    /usr/bin/python3 bench/pytorch_ddp.py --allreduce_bench --sizes_mb 1,4,16,64 --procs 2

Run it with Debian's /usr/bin/python3 (python3-torch, python3-numpy; install with
`scripts/install-deps.sh --bench`). --threads_per_proc sets each process's PyTorch
intra-op threads and, through OPENBLAS_NUM_THREADS / OMP_NUM_THREADS set before torch
is imported, OpenBLAS's (Debian's torch uses OpenBLAS for Linear layers, and OpenBLAS
reads its thread count when it is loaded and does not follow torch.set_num_threads);
inter-op threads are 1. With --threads_per_proc > 1 set OMP_WAIT_POLICY=PASSIVE, as
for pytorch_train.py. GLOO_SOCKET_IFNAME defaults to "lo" so that gloo talks over
loopback. Errors in the arguments or a missing data set: a message on stderr, exit 2.
"""
import argparse
import ctypes
import gzip
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import numpy as np

WORKER_ENV = "PYTORCH_DDP_BENCH_WORKER"  # set in the environment of the launched ranks
DATA_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")


def note(*a):
    print(*a, file=sys.stderr, flush=True)


def die(msg):
    note(f"pytorch_ddp.py: error: {msg}")
    sys.exit(2)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--procs", type=int, default=2, help="number of processes (ranks)")
    p.add_argument("--global_batch", type=int, default=128,
                   help="examples per step over all ranks; must divide by --procs")
    p.add_argument("--threads_per_proc", type=int, default=1)
    p.add_argument("--steps", type=int, default=300, help="timed steps")
    p.add_argument("--warmup_steps", type=int, default=20, help="untimed steps first")
    p.add_argument("--learning_rate", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--data", choices=["synthetic", "fashion"], default="fashion")
    p.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bucket_cap_mb", type=float, default=25.0,
                   help="DDP gradient bucket size (PyTorch's default 25)")
    p.add_argument("--gradient_as_bucket_view", action="store_true",
                   help="DDP option: gradients alias the all-reduce buckets")
    p.add_argument("--allreduce_bench", action="store_true",
                   help="time dist.all_reduce over gloo instead of training")
    p.add_argument("--sizes_mb", default="1,4,16,64",
                   help="comma list of all-reduce sizes in MiB (--allreduce_bench)")
    p.add_argument("--repeats", type=int, default=10,
                   help="timed all-reduce calls per size (--allreduce_bench)")
    p.add_argument("--timeout_s", type=float, default=300.0,
                   help="give up on the process group after this long")
    args = p.parse_args()

    if args.procs < 1:
        p.error("--procs must be >= 1")
    if args.threads_per_proc < 1:
        p.error("--threads_per_proc must be >= 1")
    if args.timeout_s <= 0:
        p.error("--timeout_s must be > 0")
    if args.allreduce_bench:
        try:
            args.sizes = [float(v) for v in args.sizes_mb.split(",")]
        except ValueError:
            p.error(f"--sizes_mb: not a comma list of numbers: {args.sizes_mb!r}")
        if not args.sizes or any(not s > 0 for s in args.sizes):
            p.error("--sizes_mb: sizes must be > 0")
        if args.repeats < 1:
            p.error("--repeats must be >= 1")
        return args
    if args.global_batch < 1:
        p.error("--global_batch must be >= 1")
    if args.global_batch % args.procs:
        p.error(f"--global_batch {args.global_batch} does not divide by "
                f"--procs {args.procs}")
    if args.steps < 1:
        p.error("--steps must be >= 1")
    if args.warmup_steps < 0:
        p.error("--warmup_steps must be >= 0")
    if args.data == "fashion":
        if not os.path.isdir(args.data_dir):
            die(f"data directory {args.data_dir} not found "
                "(install dataset-fashion-mnist: scripts/install-deps.sh)")
        for f in DATA_FILES:
            if not os.path.isfile(os.path.join(args.data_dir, f)):
                die(f"{os.path.join(args.data_dir, f)} not found")
    return args


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args):
    """Starts --procs ranks of this script and waits for them; returns the exit code."""
    base = dict(os.environ)
    base.update({WORKER_ENV: "1", "WORLD_SIZE": str(args.procs),
                 "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())})
    base.setdefault("GLOO_SOCKET_IFNAME", "lo")
    children = []
    for rank in range(args.procs):
        env = dict(base, RANK=str(rank), LOCAL_RANK=str(rank))
        # Only rank 0 writes to our stdout; the others have nothing to say there.
        children.append(subprocess.Popen(
            [sys.executable, os.path.abspath(__file__)] + sys.argv[1:], env=env,
            stdout=None if rank == 0 else subprocess.DEVNULL))
    rc = 0
    try:
        pending = list(children)
        while pending:
            for c in list(pending):
                r = c.poll()
                if r is None:
                    continue
                pending.remove(c)
                if r != 0 and rc == 0:
                    rc = r if r > 0 else 1
                    note(f"pytorch_ddp.py: rank {children.index(c)} exited with "
                         f"status {r}; stopping the others")
                    for o in pending:
                        o.terminate()
            time.sleep(0.05)
    except KeyboardInterrupt:
        for c in children:
            if c.poll() is None:
                c.terminate()
        for c in children:
            c.wait()
        return 130
    return rc


def worker(args, rank, world, use_pg):
    # OpenBLAS reads its thread count when it is loaded, i.e. when torch is imported.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ[var] = str(args.threads_per_proc)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import datetime
    import torch
    import torch.distributed as dist

    torch.set_num_threads(args.threads_per_proc)
    torch.set_num_interop_threads(1)

    blas, blas_threads = "unknown", None
    try:
        ob = ctypes.CDLL("libopenblas.so.0")
        ob.openblas_set_num_threads(args.threads_per_proc)
        blas_threads = ob.openblas_get_num_threads()
        ob.openblas_get_config.restype = ctypes.c_char_p
        blas = ob.openblas_get_config().decode().strip()
    except (OSError, AttributeError):
        pass

    if use_pg:
        if not dist.is_available() or not dist.is_gloo_available():
            note("pytorch_ddp.py: error: this torch has no gloo backend")
            return 2
        dist.init_process_group("gloo", init_method="env://", rank=rank,
                                world_size=world,
                                timeout=datetime.timedelta(seconds=args.timeout_s))

    env_seen = {k: os.environ[k] for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
                                           "OPENBLAS_CORETYPE", "GLOO_SOCKET_IFNAME")
                if k in os.environ}
    common = {"procs": world, "threads_per_proc": args.threads_per_proc,
              "torch_version": torch.__version__, "blas": blas,
              "blas_threads": blas_threads, "env": env_seen}
    try:
        if args.allreduce_bench:
            out = allreduce_bench(args, torch, dist, rank, world)
        else:
            out = train(args, torch, dist, rank, world, use_pg)
    finally:
        if use_pg:
            dist.destroy_process_group()
    if rank == 0:
        out.update(common)
        print(json.dumps(out), flush=True)
    return 0


def max_over_ranks(torch, dist, values):
    """Elementwise maximum of a list of floats over all ranks."""
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def allreduce_bench(args, torch, dist, rank, world):
    results = []
    for mb in args.sizes:
        nbytes = int(mb * (1 << 20)) // 4 * 4
        buf = torch.empty(nbytes // 4, dtype=torch.float32)
        for i in range(3):  # warm-up; the first call checks the sum
            buf.fill_(rank + 1)
            dist.all_reduce(buf)
            if i == 0:
                want = world * (world + 1) / 2
                if not (buf[0].item() == want and buf[-1].item() == want):
                    raise RuntimeError(f"all_reduce gave {buf[0].item()}, "
                                       f"expected {want}")
        times = []
        for _ in range(args.repeats):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(buf)
            times.append(time.perf_counter() - t0)
        times = max_over_ranks(torch, dist, times)
        sec = statistics.median(times)
        algbw = nbytes / sec / 1e9
        results.append({"mb": int(mb) if mb == int(mb) else mb, "bytes": nbytes,
                        "seconds": round(sec, 6),
                        "min_seconds": round(min(times), 6),
                        "algbw_gbps": round(algbw, 4),
                        "busbw_gbps": round(algbw * 2 * (world - 1) / world, 4)})
        if rank == 0:
            note(f"pytorch gloo all_reduce {mb:g} MiB x {world}: {sec * 1e3:.3f} ms "
                 f"(median of {args.repeats}), algbw {algbw:.3f} GB/s")
        del buf
    return {"framework": "pytorch-gloo", "backend": "gloo", "repeats": args.repeats,
            "warmup": 3, "allreduce": results}


def load_idx(torch, data_dir, kind):
    """Returns (x float32 (N,784) in [0,1], y int64 (N)) for kind 'train' or 't10k'."""
    def read(name, offset):
        with gzip.open(os.path.join(data_dir, name), "rb") as f:
            return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)
    x = read(f"{kind}-images-idx3-ubyte.gz", 16).reshape(-1, 784)
    y = read(f"{kind}-labels-idx1-ubyte.gz", 8)
    return (torch.from_numpy(x.astype(np.float32) / 255.0),
            torch.from_numpy(y.astype(np.int64)))


def build_model(torch, kind):
    nn = torch.nn
    if kind == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(),
                             nn.Linear(256, 256), nn.ReLU(),
                             nn.Linear(256, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


class ShardedBatches:
    """This rank's batches, epoch after epoch, in DistributedSampler's order
    (shuffle=True, drop_last=False, seed + epoch), last partial batch included."""

    def __init__(self, torch, n, rank, world, batch, seed):
        self.torch, self.n, self.rank, self.world = torch, n, rank, world
        self.batch, self.seed, self.epoch = batch, seed, -1
        self.shard, self.pos = None, 0
        self.new_epoch()

    def new_epoch(self):
        torch = self.torch
        self.epoch += 1
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        perm = torch.randperm(self.n, generator=g)
        total = -(-self.n // self.world) * self.world
        if total > self.n:  # pad with the head, as DistributedSampler does
            perm = torch.cat([perm, perm[:total - self.n]])
        self.shard, self.pos = perm[self.rank:total:self.world].contiguous(), 0

    def next(self):
        if self.pos >= self.shard.numel():
            self.new_epoch()
        idx = self.shard[self.pos:self.pos + self.batch]
        self.pos += idx.numel()
        return idx


def train(args, torch, dist, rank, world, use_pg):
    b = args.global_batch // world
    if args.data == "fashion":
        x_train, y_train = load_idx(torch, args.data_dir, "train")
    else:
        g = torch.Generator().manual_seed(0)
        x_train = torch.rand(60000, 784, generator=g)
        y_train = torch.randint(0, 10, (60000,), generator=g)
    n = x_train.shape[0]
    if args.model == "cnn":
        x_train = x_train.view(-1, 1, 28, 28)

    torch.manual_seed(args.seed)  # same init on every rank (DDP broadcasts rank 0's)
    model = build_model(torch, args.model)
    if use_pg:
        model = torch.nn.parallel.DistributedDataParallel(
            model, bucket_cap_mb=args.bucket_cap_mb,
            gradient_as_bucket_view=args.gradient_as_bucket_view)
    opt = torch.optim.SGD(model.parameters(), lr=args.learning_rate,
                          momentum=args.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = ShardedBatches(torch, n, rank, world, b, args.seed)

    def step():
        idx = batches.next()
        xb, yb = x_train.index_select(0, idx), y_train.index_select(0, idx)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss, idx.numel()

    model.train()
    for _ in range(args.warmup_steps):
        step()

    examples, loss = 0, None
    if use_pg:
        dist.barrier()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss, k = step()
        examples += k
    if use_pg:
        dist.barrier()
    seconds = time.perf_counter() - t0

    final_loss = loss.item()
    if use_pg:  # slowest rank's clock; examples and mean loss over all ranks
        (seconds,) = max_over_ranks(torch, dist, [seconds])
        t = torch.tensor([float(examples), final_loss], dtype=torch.float64)
        dist.all_reduce(t)
        examples, final_loss = int(t[0].item()), t[1].item() / world

    out = {
        "framework": "pytorch-ddp", "backend": "gloo" if use_pg else None,
        "ddp": use_pg, "model": args.model, "procs": world,
        "global_batch": args.global_batch, "per_proc_batch": b,
        "threads_per_proc": args.threads_per_proc, "steps": args.steps,
        "warmup_steps": args.warmup_steps, "examples": examples,
        "seconds": round(seconds, 4),
        "examples_per_sec": round(examples / seconds, 1),
        "final_loss": round(final_loss, 6), "optimizer": "momentum",
        "learning_rate": args.learning_rate, "momentum": args.momentum,
        "data": args.data,
    }
    if use_pg:
        out["bucket_cap_mb"] = args.bucket_cap_mb
        out["gradient_as_bucket_view"] = args.gradient_as_bucket_view
    if rank == 0:
        note(f"pytorch-ddp {args.model} x{world} ({'DDP' if use_pg else 'no DDP'}): "
             f"{out['examples_per_sec']} examples/s, {args.steps} steps of "
             f"{args.global_batch} in {seconds:.3f} s")
    return out


def main():
    args = parse_args()
    if os.environ.get(WORKER_ENV) == "1":
        try:
            rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        except (KeyError, ValueError):
            die(f"{WORKER_ENV} is set but RANK / WORLD_SIZE are missing or invalid")
        if world != args.procs or not 0 <= rank < world:
            die(f"RANK {rank} / WORLD_SIZE {world} do not fit --procs {args.procs}")
        return worker(args, rank, world, use_pg=True)
    cores = os.cpu_count() or 1
    if args.procs * args.threads_per_proc > cores:
        note(f"pytorch_ddp.py: note: {args.procs} procs x {args.threads_per_proc} "
             f"threads on {cores} cores: oversubscribed")
    if args.procs == 1 and not args.allreduce_bench:
        return worker(args, 0, 1, use_pg=False)  # plain single process, no DDP
    return launch(args)


if __name__ == "__main__":
    sys.exit(main())
