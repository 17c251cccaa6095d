#!/usr/bin/env python3
"""GPU training-speed benchmark: `trainer --device=gpu` against PyTorch and the cuBLAS floor.

For each model (the 784-256-256-10 MLP and the 32,64/128 CNN), batch size (128, 1024)
and precision (fp32, bf16), in one run on one GPU:
  - ours:   trainer --device=gpu on Fashion-MNIST (or synthetic 28x28 data of the same
            size when it is absent), 3 epochs; the best per-epoch examples_per_sec of
            epochs 2 and 3 (the first records the CUDA graphs; evaluation and
            checkpoints are not counted, as trainer reports it);
  - floor:  bench_gemm_gpu, the step's cuBLAS products alone, replayed as a graph;
  - torch:  bench/pytorch_gpu.py, same model, batch, optimiser and precision, eager and
            torch.compile (default and reduce-overhead, where it works).
Prints a Markdown table with the GPU and CPU it ran on; --out writes it to a file.

    python3 bench/gpu_speed.py --bin build-cuda/bin [--models mlp,cnn] [--out results.md]
                               [--torch_modes none,default,reduce-overhead] [--quick]
                               [--compile_cases 128:fp32,1024:fp32] [--lib_path DIR:DIR]

--lib_path (bench/gpu_run.sh gives it: the package's libraries, cuBLAS's and NCCL's
folders) goes in front of LD_LIBRARY_PATH for our programs only, trainer and
bench_gemm_gpu; PyTorch runs with the environment as it is, so that it loads its own
CUDA libraries.
"""
import argparse
import datetime
import json
import os
import platform
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GOALS = """Goals (issue 12): MLP at batch 128 at least 2x PyTorch eager (the step is
launch-bound; graphs win); the CNN at least 1.3x; at batch 1024 at least 70% of the
cuBLAS floor (ours / floor >= 0.70)."""


def ours_env(lib_path, **extra):
    """The environment of our programs: LD_LIBRARY_PATH with lib_path in front."""
    env = dict(os.environ, **extra)
    if lib_path:
        old = env.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = lib_path + (":" + old if old else "")
    return env


# No one run may hold the GPU machine's short lease: a hung run is a failed one.
TIMEOUT_S = 240


def run(cmd, env=None):
    """cmd's CompletedProcess, or None (and why, on stderr) when it ran past TIMEOUT_S."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        sys.stderr.write("failed: %s: still running after %d s\n" % (" ".join(cmd), TIMEOUT_S))
        return None


def run_json(cmd, env=None):
    out = run(cmd, env)
    if out is None:
        return None
    if out.returncode != 0:
        sys.stderr.write("failed: %s\n%s\n" % (" ".join(cmd), out.stderr[-2000:]))
        return None
    for line in reversed(out.stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


def synthetic_idx(folder):
    """Fashion-MNIST-sized IDX files of random pixels (speed does not depend on them)."""
    import random
    rnd = random.Random(1)
    for split, n in (("train", 60000), ("t10k", 10000)):
        with open(os.path.join(folder, "%s-images-idx3-ubyte" % split), "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, 28, 28))
            f.write(rnd.randbytes(n * 784))
        with open(os.path.join(folder, "%s-labels-idx1-ubyte" % split), "wb") as f:
            f.write(struct.pack(">II", 0x801, n))
            f.write(bytes(rnd.randrange(10) for _ in range(n)))


def ours(trainer, data_dir, model, batch, precision, epochs, work, lib_path):
    metrics = os.path.join(work, "m-%s-%d-%s.metrics" % (model, batch, precision))
    if os.path.exists(metrics):
        os.remove(metrics)
    env = ours_env(lib_path, CLOUD_ML_HP_METRIC_FILE=metrics)
    cmd = [trainer, "--device=gpu", "--model=" + model, "--batch_size=%d" % batch,
           "--precision=" + precision, "--epochs=%d" % epochs, "--data_dir=" + data_dir,
           "--max_eval_examples=1000", "--learning_rate=0.05", "--momentum=0.9",
           "--optimizer=momentum", "--lr_schedule=constant"]
    out = run(cmd, env)
    if out is None:
        return None
    if out.returncode != 0:
        sys.stderr.write("failed: %s\n%s\n" % (" ".join(cmd), out.stderr[-2000:]))
        return None
    rates = [float(json.loads(l)["examples_per_sec"]) for l in open(metrics) if l.strip()]
    return max(rates[1:]) if len(rates) > 1 else rates[0]


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def fmt(x):
    return "%.0f" % x if x else "—"


def ratio(a, b):
    return "%.2fx" % (a / b) if a and b else "—"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build-cuda", "bin"),
                   help="folder with trainer and bench_gemm_gpu")
    p.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--python", default=sys.executable, help="the python with PyTorch")
    p.add_argument("--out", help="also write the table here")
    p.add_argument("--quick", action="store_true", help="fewer steps and epochs (a smoke test)")
    p.add_argument("--models", default="mlp,cnn", help="comma list of mlp, cnn")
    p.add_argument("--torch_modes", default="none,default,reduce-overhead",
                   help="PyTorch runs: none (eager), default and reduce-overhead (compile)")
    p.add_argument("--compile_cases", default="all",
                   help="the cases torch.compile runs for (it takes a minute or so each): "
                        "all, or a comma list of BATCH:PRECISION (say 128:fp32,1024:fp32); "
                        "eager runs for every case")
    p.add_argument("--lib_path", default="",
                   help="folders (a:b) put in front of LD_LIBRARY_PATH for trainer and "
                        "bench_gemm_gpu only")
    args = p.parse_args()
    trainer = os.path.join(args.bin, "trainer")
    floor_bin = os.path.join(args.bin, "bench_gemm_gpu")
    work = tempfile.mkdtemp(prefix="gpu-speed-")
    data_dir = args.data_dir
    if not os.path.exists(os.path.join(data_dir, "train-labels-idx1-ubyte.gz")) and \
            not os.path.exists(os.path.join(data_dir, "train-labels-idx1-ubyte")):
        data_dir = os.path.join(work, "data")
        os.makedirs(data_dir)
        synthetic_idx(data_dir)
        sys.stderr.write("note: no Fashion-MNIST in %s: synthetic data of its size\n"
                         % args.data_dir)
    epochs = 2 if args.quick else 3
    steps = 100 if args.quick else 500
    torch_modes = args.torch_modes.split(",")
    rows, gpu_name, torch_version = [], "unknown", "unknown"
    for model in args.models.split(","):
        for batch in (128, 1024):
            for precision in ("fp32", "bf16"):
                r = {"model": model, "batch": batch, "precision": precision}
                r["ours"] = ours(trainer, data_dir, model, batch, precision, epochs, work,
                                 args.lib_path)
                f = run_json([floor_bin, "--model=" + model, "--batch_size=%d" % batch,
                              "--precision=" + precision, "--steps=%d" % (steps * 2)],
                             env=ours_env(args.lib_path))
                r["floor"] = f and f["gemm_floor_examples_per_sec"]
                if f:
                    gpu_name = f["gpu"]
                for mode in torch_modes:
                    if mode != "none" and args.compile_cases != "all" and \
                            "%d:%s" % (batch, precision) not in args.compile_cases.split(","):
                        continue
                    t = run_json([args.python, os.path.join(ROOT, "bench", "pytorch_gpu.py"),
                                  "--model", model, "--batch_size", str(batch), "--precision",
                                  precision, "--compile", mode, "--steps", str(steps),
                                  "--data_dir", data_dir])
                    r[mode] = t and t["examples_per_sec"]
                    if t:
                        torch_version = t["torch"]
                rows.append(r)
                sys.stderr.write("%s\n" % json.dumps(r))
    lines = [
        "GPU: %s; CPU: %s; PyTorch %s; %s" % (gpu_name, cpu_model(), torch_version,
                                              datetime.date.today().isoformat()),
        "",
        "| model | batch | precision | ours ex/s | torch eager | torch.compile | "
        "compile (graphs) | cuBLAS floor | ours / eager | ours / best torch | ours / floor |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        best = max([r.get(m) or 0 for m in torch_modes] or [0])
        lines.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"], r["batch"], r["precision"], fmt(r["ours"]), fmt(r.get("none")),
            fmt(r.get("default")), fmt(r.get("reduce-overhead")), fmt(r["floor"]),
            ratio(r["ours"], r.get("none")), ratio(r["ours"], best),
            ratio(r["ours"], r["floor"])))
    lines += ["", GOALS]
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)


if __name__ == "__main__":
    main()
