#!/usr/bin/env python3
"""Where one training step's GPU time goes, from an ncu CSV of trainer's kernels.

    ncu --clock-control none --metrics gpu__time_duration.sum --csv \\
        trainer --device=gpu ... > run.csv     (TRAINER_CUDA_GRAPHS=0: kernels one by one)
    python3 bench/ncu_step.py run.csv [--step 1]

Steps are told apart by the kernel each one starts with (k_poke: the step's arguments,
upload_small); --step picks one (0 is the first, which also sizes the scratch; the
last also holds what ran after it, the evaluation). Prints
each kernel of that step in order with its time in microseconds, then the matrix
products' total (cuBLAS's kernels), the rest's and the step's. ncu runs kernels one at
a time with cold caches, so the totals are a little above a step's time in a real run.
bench/gpu_run.sh profile makes the CSV on a GPU machine (docs/benchmarks/gpu.md).
"""
import argparse
import csv
import re
import sys

PRODUCT = re.compile(r"gemm|sgemm|xmma|cutlass|nvjet|splitKreduce|gemv", re.I)


def steps_of(path):
    """The kernels of each step: lists of (name, microseconds, block, grid)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(line for line in f if line.startswith('"')))
    if not rows or "Kernel Name" not in rows[0]:
        sys.exit("ncu_step.py: error: %s has no ncu CSV header (ncu --csv ...)" % path)
    head = rows[0]
    name, value, metric = (head.index("Kernel Name"), head.index("Metric Value"),
                           head.index("Metric Name"))
    block, grid = head.index("Block Size"), head.index("Grid Size")
    steps, cur = [], None
    for r in rows[1:]:
        if r[metric] != "gpu__time_duration.sum":
            continue
        if r[name].startswith("k_poke"):
            cur = []
            steps.append(cur)
        if cur is not None:
            us = float(r[value].replace(",", "")) / 1000.0
            cur.append((r[name], us, r[block], r[grid]))
    return steps


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv")
    p.add_argument("--step", type=int, default=1, help="which step (0: the first)")
    args = p.parse_args()
    steps = steps_of(args.csv)
    if not steps:
        sys.exit("ncu_step.py: error: no step in %s (no k_poke kernel: was it trainer "
                 "--device=gpu?)" % args.csv)
    if not 0 <= args.step < len(steps):
        sys.exit("ncu_step.py: error: --step %d: the run has steps 0 to %d"
                 % (args.step, len(steps) - 1))
    step = steps[args.step]
    for kname, us, block, grid in step:
        print("%9.1f  %-72s %s %s" % (us, kname[:72], block, grid))
    total = sum(us for _, us, _, _ in step)
    products = sum(us for kname, us, _, _ in step if PRODUCT.search(kname))
    print("step %d of %d: %d kernels, %.1f us: products %.1f, the rest %.1f"
          % (args.step, len(steps), len(step), total, products, total - products))


if __name__ == "__main__":
    main()
