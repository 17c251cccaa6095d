#!/usr/bin/python3
"""Accuracy benchmark: the standard recipes on the real Fashion-MNIST, ours and PyTorch's.

  - MLP 784-256-256-10, momentum 0.9, learning rate 0.05, batch 128, 5 epochs, constant
    learning rate: `trainer` and PyTorch (bench/pytorch_train.py), --seeds seeds each;
  - the same with a cosine schedule (`trainer --lr_schedule=cosine`, its default);
  - CNN (conv 32, conv 64, dense 128), same optimiser, 5 epochs, constant and cosine:
    `trainer`, --cnn_seeds seeds (about 4 minutes a run on one core).
Final test accuracy (t10k, 10,000 images) after the last epoch. Two runs at a time,
one thread each. Prints a Markdown table and writes docs/benchmarks/accuracy.md.

    scripts/install-deps.sh --bench && scripts/build.sh release
    /usr/bin/python3 bench/accuracy.py [--seeds 5] [--cnn_seeds 1]
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchutil import ROOT, need, write_page

TRAINER = os.path.join(ROOT, "build", "bin", "trainer")
TORCH = os.path.join(ROOT, "bench", "pytorch_train.py")
RECIPE = ["--optimizer=momentum", "--learning_rate=0.05", "--momentum=0.9",
          "--batch_size=128", "--epochs=5", "--threads=1"]


def ours(seed, extra):
    with tempfile.TemporaryDirectory() as d:
        metrics = os.path.join(d, "metrics")
        env = dict(os.environ, CLOUD_ML_HP_METRIC_FILE=metrics)
        subprocess.run([TRAINER, "--seed=%d" % seed] + RECIPE + extra, env=env, check=True,
                       capture_output=True)
        with open(metrics) as f:
            return float(json.loads(f.readlines()[-1])["accuracy"])


def torch(seed, model):
    out = subprocess.run(["/usr/bin/python3", TORCH, "--model", model, "--epochs", "5",
                          "--report_accuracy", "--warmup_steps", "0", "--seed", str(seed),
                          "--threads", "1"], capture_output=True, text=True, check=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["test_accuracy"])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--cnn_seeds", type=int, default=1)
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks", "accuracy.md"))
    a = p.parse_args()
    need(TRAINER, "accuracy.py")
    jobs = {
        ("MLP", "trainer", "constant"): [(ours, s, ["--lr_schedule=constant"])
                                         for s in range(1, a.seeds + 1)],
        ("MLP", "PyTorch", "constant"): [(torch, s, "mlp") for s in range(1, a.seeds + 1)],
        ("MLP", "trainer", "cosine"): [(ours, s, ["--lr_schedule=cosine"])
                                       for s in range(1, a.seeds + 1)],
        ("CNN", "trainer", "constant"): [(ours, s, ["--model=cnn", "--lr_schedule=constant"])
                                         for s in range(1, a.cnn_seeds + 1)],
        ("CNN", "trainer", "cosine"): [(ours, s, ["--model=cnn", "--lr_schedule=cosine"])
                                       for s in range(1, a.cnn_seeds + 1)],
    }
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futs = {k: [pool.submit(fn, s, x) for fn, s, x in v] for k, v in jobs.items()}
        for k, fs in futs.items():
            results[k] = [f.result() for f in fs]
            print(k, results[k], file=sys.stderr, flush=True)
    lines = ["| model | engine | schedule | runs | mean | min | max |",
             "|---|---|---|---|---|---|---|"]
    for (model, engine, sched), accs in results.items():
        if not accs:
            continue
        lines.append("| %s | %s | %s | %d | %.4f | %.4f | %.4f |" % (
            model, engine, sched, len(accs), statistics.mean(accs), min(accs), max(accs)))
    table = "\n".join(lines)
    print(table)
    write_page(a.out, "# Accuracy of the standard recipes on Fashion-MNIST\n\n"
               "Written by `bench/accuracy.py` on %s. Momentum SGD (0.9), learning rate "
               "0.05, batch 128, 5 epochs, one thread; final test accuracy on the 10,000 "
               "t10k images; seeds 1..N.\n\n%s\n" % (datetime.date.today().isoformat(), table))


if __name__ == "__main__":
    main()
