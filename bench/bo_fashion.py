#!/usr/bin/python3
"""Bayesian optimisation against random search on the real Fashion-MNIST study.

The study of studies/fashion_mlp_random.json (learning rate, width, optimiser and
batch size of the MLP; 2 epochs of 20,000 examples; accuracy on the 10,000 test
images), run by `tuner run` with RANDOM_SEARCH and with ALGORITHM_UNSPECIFIED
(Bayesian optimisation), the same number of trials and the same seeds. Chief only
(BASIC), two trials at a time, one thread each. Prints a Markdown table and writes
docs/benchmarks/bayesian-optimisation-fashion.md.

    scripts/build.sh release && /usr/bin/python3 bench/bo_fashion.py [--trials 16] [--seeds 20]
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchutil import ROOT, need

TUNER = os.path.join(ROOT, "build", "bin", "tuner")


def study(algo, seed, trials, work):
    with open(os.path.join(ROOT, "studies", "fashion_mlp_random.json")) as f:
        spec = json.load(f)
    ti = spec["trainingInput"]
    spec["jobId"] = "bo_%s_%d" % (algo.lower(), seed)
    ti["scaleTier"] = "BASIC"
    del ti["workerCount"]
    ti["jobDir"] = os.path.join(work, spec["jobId"])
    ti["command"] = [os.path.join(ROOT, "build", "bin", "trainer"), "--model=mlp",
                     "--epochs=2", "--max_train_examples=20000", "--threads=1"]
    hp = ti["hyperparameters"]
    hp.update({"algorithm": algo, "maxTrials": trials, "maxParallelTrials": 2,
               "maxFailedTrials": trials})
    path = os.path.join(work, spec["jobId"] + ".json")
    with open(path, "w") as f:
        json.dump(spec, f)
    db = os.path.join(work, "bo.db")
    subprocess.run([TUNER, "run", path, "--db=" + db, "--seed=%d" % seed, "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run([TUNER, "trials", spec["jobId"], "--db=" + db, "--format=json"],
                         check=True, capture_output=True, text=True).stdout
    accs = [t["objective"] for t in json.loads(out) if t["state"] == "SUCCEEDED"]
    return max(accs) if accs else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=16)
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks",
                                                 "bayesian-optimisation-fashion.md"))
    a = p.parse_args()
    need(TUNER, "bo_fashion.py")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for seed in range(1, a.seeds + 1):
            r = study("RANDOM_SEARCH", seed, a.trials, work)
            b = study("ALGORITHM_UNSPECIFIED", seed, a.trials, work)
            rows.append((seed, r, b))
            print("seed %d: random %.4f, bayesian %.4f" % (seed, r, b), file=sys.stderr, flush=True)
    lines = ["| seed | random search | Bayesian optimisation | difference (points) |",
             "|---|---|---|---|"]
    for seed, r, b in rows:
        lines.append("| %d | %.4f | %.4f | %+.2f |" % (seed, r, b, 100 * (b - r)))
    wins = sum(b > r for _, r, b in rows)
    lines.append("| median | %.4f | %.4f | %+.2f |" % (
        statistics.median(r for _, r, _ in rows), statistics.median(b for _, _, b in rows),
        100 * statistics.median(b - r for _, r, b in rows)))
    table = "\n".join(lines)
    reading = ("Bayesian optimisation found the better best accuracy in %d of %d seeds "
               "(ties count for neither)." % (wins, len(rows)))
    print(table)
    print(reading)
    with open(a.out, "w") as f:
        f.write("# Bayesian optimisation on the real Fashion-MNIST study\n\n")
        f.write("Written by `bench/bo_fashion.py` on %s. The search space of "
                "studies/fashion_mlp_random.json (learning rate 0.001-0.3 log, width 32-512 "
                "log, optimiser momentum/adam, batch 64/128/256); 2 epochs of 20,000 "
                "examples; best test accuracy after %d trials, two at a time; the same seeds "
                "for both algorithms.\n\n" % (datetime.date.today().isoformat(), a.trials))
        f.write(table + "\n\n" + reading + "\n")
    print("wrote %s" % os.path.relpath(a.out, ROOT))


if __name__ == "__main__":
    main()
