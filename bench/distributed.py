#!/usr/bin/python3
"""Distributed training benchmark: 2 workers against 1, and against PyTorch DDP.

In one run, on Fashion-MNIST (Debian's dataset-fashion-mnist), same model, same
global batch (128), one compute thread per process:

  trainer x1   one replica, batch 128
  trainer x2   multi_worker_mirrored, chief + worker, 64 each, the all-reduce in shared
               memory (--allreduce_transport=auto picks it: both replicas on this host)
  x2 tcp       the same over the TCP ring on loopback (--allreduce_transport=tcp), as
               between hosts
  torch x1     bench/pytorch_train.py-style single process (bench/pytorch_ddp.py --procs 1)
  torch DDP x2 DistributedDataParallel, gloo, 2 processes (bench/pytorch_ddp.py --procs 2)

The trainer's throughput is its reported examples_per_sec for the epoch (training
steps only: the clock stops for evaluation and checkpoints), PyTorch's the timed steps
of pytorch_ddp.py. Each configuration runs --repeats times; the median is kept. Also
runs bench_allreduce (all-reduce bandwidth of the TCP ring and of shared memory, vs
memcpy) and pytorch_ddp.py --allreduce_bench (gloo). Prints tables, headed by the CPU
model and the load average before and after the training runs (the machine is shared);
--markdown FILE writes them for docs/.

    /usr/bin/python3 bench/distributed.py --bin build/bin [--repeats 3] [--markdown F]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile

from benchutil import cpu_model

HERE = os.path.dirname(os.path.abspath(__file__))

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("--bin", default=os.path.join(HERE, "..", "build", "bin"))
p.add_argument("--repeats", type=int, default=3)
p.add_argument("--models", default="mlp,cnn")
p.add_argument("--markdown", default=None)
p.add_argument("--bucket_mb", default=None,
               help="the trainer's --allreduce_bucket_mb (default: the trainer's default)")
p.add_argument("--no_allreduce", action="store_true", help="skip the all-reduce tables")
args = p.parse_args()
TRAINER = os.path.join(args.bin, "trainer")
if not os.access(TRAINER, os.X_OK):
    sys.exit(f"distributed.py: error: no trainer at {TRAINER}; hint: scripts/build.sh")

# Per model: training examples for the trainer's one epoch, timed steps for PyTorch.
SETUP = {"mlp": {"examples": 60000, "torch_steps": 300},
         "cnn": {"examples": 6400, "torch_steps": 40}}


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def trainer_eps(model, replicas, transport="auto"):
    """examples/s of one epoch of the trainer with `replicas` replicas (global batch 128)."""
    flags = [f"--model={model}", f"--max_train_examples={SETUP[model]['examples']}",
             "--max_eval_examples=1000", "--epochs=1", "--threads=1",
             "--global_batch_size=128"]
    if replicas > 1:
        flags.append(f"--allreduce_transport={transport}")
    if args.bucket_mb is not None:
        flags.append(f"--allreduce_bucket_mb={args.bucket_mb}")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   CLOUD_ML_HP_METRIC_FILE=os.path.join(tmp, "chief.metrics"))
        if replicas == 1:
            procs = [subprocess.Popen([TRAINER, *flags, f"--job-dir={tmp}/job"], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)]
        else:
            ports = free_ports(replicas)
            cluster = {"chief": [f"localhost:{ports[0]}"],
                       "worker": [f"localhost:{p}" for p in ports[1:]]}
            procs = []
            for i in range(replicas):
                task = {"type": "chief", "index": 0} if i == 0 else {"type": "worker", "index": i - 1}
                e = dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": task}))
                if i:
                    e["CLOUD_ML_HP_METRIC_FILE"] = os.path.join(tmp, f"w{i}.metrics")
                procs.append(subprocess.Popen([TRAINER, *flags, f"--job-dir={tmp}/job"], env=e,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        for pr in procs:
            _, errs = pr.communicate()
            if pr.returncode:
                sys.exit(f"distributed.py: trainer failed: {errs.decode()}")
        with open(os.path.join(tmp, "chief.metrics")) as f:
            last = [json.loads(l) for l in f if l.strip()][-1]
        return float(last["examples_per_sec"])


def torch_eps(model, procs):
    out = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "pytorch_ddp.py"),
                          "--model", model, "--procs", str(procs), "--global_batch", "128",
                          "--threads_per_proc", "1", "--steps", str(SETUP[model]["torch_steps"]),
                          "--warmup_steps", "10"], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"distributed.py: pytorch_ddp.py failed: {out.stderr}")
    return float(json.loads(out.stdout)["examples_per_sec"])


def median_of(fn, *a):
    return statistics.median(fn(*a) for _ in range(args.repeats))


lines = []


def emit(s=""):
    print(s)
    lines.append(s)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


load_before = loadavg()
rows = []
for model in args.models.split(","):
    t1 = median_of(trainer_eps, model, 1)
    t2 = median_of(trainer_eps, model, 2)
    tt = median_of(trainer_eps, model, 2, "tcp")
    p1 = median_of(torch_eps, model, 1)
    p2 = median_of(torch_eps, model, 2)
    rows.append((model, t1, t2, tt, p1, p2))
emit(f"{cpu_model()}, {os.cpu_count()} cores; load average {load_before} before the training "
     f"runs, {loadavg()} after.")
emit()
emit("## Training throughput (examples/s, global batch 128, 1 thread per process)")
emit()
emit("| model | trainer x1 | trainer x2 | x2 / x1 | x2 tcp | x2 tcp / x1 | torch x1 | torch DDP x2 "
     "| x2 / DDP x2 | x2 tcp / DDP x2 |")
emit("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for model, t1, t2, tt, p1, p2 in rows:
    emit(f"| {model} | {t1:,.0f} | {t2:,.0f} | {t2 / t1:.2f} | {tt:,.0f} | {tt / t1:.2f} "
         f"| {p1:,.0f} | {p2:,.0f} | {t2 / p2:.2f} | {tt / p2:.2f} |")

if args.no_allreduce:
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")
    sys.exit(0)
emit()
emit("## All-reduce bandwidth, 2 processes on loopback (GB/s; memcpy: one core, same size)")
emit()
ring = subprocess.run([os.path.join(args.bin, "bench_allreduce"), "--ranks=2",
                       "--sizes_mb=1,4,16,64"], capture_output=True, text=True)
shm = subprocess.run([os.path.join(args.bin, "bench_allreduce"), "--ranks=2", "--transport=shm",
                      "--sizes_mb=1,4,16,64"], capture_output=True, text=True)
gloo = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "pytorch_ddp.py"),
                       "--allreduce_bench", "--sizes_mb", "1,4,16,64", "--procs", "2"],
                      capture_output=True, text=True)
if ring.returncode or shm.returncode or gloo.returncode:
    sys.exit(f"distributed.py: all-reduce benchmarks failed: {ring.stderr} {shm.stderr} "
             f"{gloo.stderr}")
ours = [json.loads(l) for l in ring.stdout.splitlines() if l.strip()]
inmem = {r["mb"]: r for r in (json.loads(l) for l in shm.stdout.splitlines() if l.strip())}
theirs = {r["mb"]: r for r in json.loads(gloo.stdout)["allreduce"]}
emit("| size | ring ms | ring busbw | shm ms | shm busbw | gloo ms | gloo busbw | ring / gloo "
     "| shm / gloo | memcpy | ring busbw / memcpy | shm busbw / memcpy |")
emit("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in ours:
    g, m = theirs[r["mb"]], inmem[r["mb"]]
    emit(f"| {r['mb']} MiB | {r['seconds'] * 1e3:.2f} | {r['busbw_gbps']:.2f} | "
         f"{m['seconds'] * 1e3:.2f} | {m['busbw_gbps']:.2f} | "
         f"{g['seconds'] * 1e3:.2f} | {g['busbw_gbps']:.2f} | {g['seconds'] / r['seconds']:.2f} | "
         f"{g['seconds'] / m['seconds']:.2f} | {r['memcpy_gbps']:.1f} | "
         f"{r['busbw_gbps'] / r['memcpy_gbps']:.2f} | {m['busbw_gbps'] / m['memcpy_gbps']:.2f} |")

if args.markdown:
    with open(args.markdown, "w") as f:
        f.write("\n".join(lines) + "\n")
