#!/usr/bin/python3
"""Early stopping on the real Fashion-MNIST study: with and without.

The same random-search study (learning rate, width, optimiser of the MLP; batch 128
so that steps mean the same in every trial; 4 epochs of 20,000 training examples,
a report every 52 steps: 625 steps a trial) run by `tuner run` with no early
stopping, with the median rule and with ASHA. The seed fixes the sampled points, so
trial k is the same configuration in every run. Trials run one at a time, so that the
steps spent are exactly accounted:
  - equal trial count: the first N trials of each run: steps spent, best accuracy;
  - equal compute: the early-stopping runs get more trials; walking their trials in
    order until they have spent the steps that `none` spent on N, the best accuracy
    among the trials that completed within that budget.
Prints a Markdown table and writes docs/benchmarks/early-stopping-fashion.md.

    scripts/build.sh release && /usr/bin/python3 bench/stopping_real.py [--trials 16]
"""
import argparse
import datetime
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUNER = os.path.join(ROOT, "build", "bin", "tuner")
POLICIES = [
    ("none", None),
    ("median", {"policy": "median", "minTrials": 4, "minStep": 104}),
    ("asha", {"policy": "asha", "gracePeriod": 52, "reductionFactor": 3, "maxStep": 625}),
]


def run(name, es, trials, seed, work):
    hp = {"goal": "MAXIMIZE", "hyperparameterMetricTag": "accuracy", "maxTrials": trials,
          "maxParallelTrials": 1, "algorithm": "RANDOM_SEARCH",
          "params": [
              {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 0.001,
               "maxValue": 0.5, "scaleType": "UNIT_LOG_SCALE"},
              {"parameterName": "hidden_units", "type": "INTEGER", "minValue": 32,
               "maxValue": 512, "scaleType": "UNIT_LOG_SCALE"},
              {"parameterName": "optimizer", "type": "CATEGORICAL",
               "categoricalValues": ["momentum", "adam"]}]}
    if es:
        hp["earlyStopping"] = es
    spec = {"jobId": "es_" + name, "trainingInput": {
        "scaleTier": "BASIC", "jobDir": os.path.join(work, "runs", name),
        "command": [os.path.join(ROOT, "build", "bin", "trainer"), "--epochs=4",
                    "--max_train_examples=20000", "--batch_size=128", "--report_every=52",
                    "--threads=1"],
        "hyperparameters": hp}}
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(spec, f)
    db = os.path.join(work, name + ".db")
    subprocess.run([TUNER, "run", path, "--db=" + db, "--seed=%d" % seed, "--quiet",
                    "--poll=0.2", "--grace=5"], check=True, stdout=subprocess.DEVNULL)
    con = sqlite3.connect(db)
    rows = con.execute(
        "select t.number, t.state, t.objective, (select max(m.step) from measurements m "
        "where m.study_id = t.study_id and m.trial = t.number and m.replica = 'chief:0') "
        "from trials t order by t.number").fetchall()
    con.close()
    return [{"number": n, "state": s, "accuracy": o, "steps": st or 0} for n, s, o, st in rows]


def best(trials):
    done = [t["accuracy"] for t in trials if t["state"] == "SUCCEEDED"]
    return max(done) if done else float("nan")


def within(trials, budget):
    spent, out = 0, []
    for t in trials:
        if spent + t["steps"] > budget:
            break
        spent += t["steps"]
        out.append(t)
    return out, spent


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=16)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks",
                                                 "early-stopping-fashion.md"))
    a = p.parse_args()
    if not os.path.exists(TUNER):
        sys.exit("stopping_real.py: error: %s not found\nhint: scripts/build.sh release" % TUNER)
    with tempfile.TemporaryDirectory() as work:
        results = {}
        for name, es in POLICIES:
            n = a.trials if es is None else 3 * a.trials
            results[name] = run(name, es, n, a.seed, work)
            print(name, "done", file=sys.stderr, flush=True)
    base = results["none"]
    budget = sum(t["steps"] for t in base)
    lines = ["| rule | trials | steps (first %d trials) | saved | best accuracy (first %d) "
             "| trials within %d steps | best accuracy within %d steps |" % (
                 a.trials, a.trials, budget, budget),
             "|---|---|---|---|---|---|---|"]
    for name, _ in POLICIES:
        r = results[name]
        first = r[:a.trials]
        steps = sum(t["steps"] for t in first)
        inside, _ = within(r, budget)
        lines.append("| %s | %d run, %d stopped | %d | %.0f%% | %.4f | %d | %.4f |" % (
            name, len(r), sum(t["state"] == "STOPPED" for t in r), steps,
            100 * (1 - steps / budget), best(first), len(inside), best(inside)))
    table = "\n".join(lines)
    reading = []
    base_best = best(base[:a.trials])
    for name, _ in POLICIES[1:]:
        r = results[name]
        first = r[:a.trials]
        saved = 1 - sum(t["steps"] for t in first) / budget
        inside, _ = within(r, budget)
        reading.append(
            "- %s: over the same %d trials it spends %.0f%% fewer steps (the goal: at least "
            "half) and its best accuracy is %+.2f points from none's (the goal: at most half "
            "a point lost); with none's %d steps it runs %d trials and its best is %+.2f "
            "points from none's (the goal: equal or better)." % (
                name, a.trials, 100 * saved, 100 * (best(first) - base_best), budget,
                len(inside), 100 * (best(inside) - base_best)))
    print(table)
    print("\n".join(reading))
    with open(a.out, "w") as f:
        f.write("# Early stopping on the real Fashion-MNIST study\n\n")
        f.write("Written by `bench/stopping_real.py` on %s (seed %d). Random search over "
                "learning rate (0.001-0.5, log), width (32-512, log) and optimiser "
                "(momentum, adam) of the MLP; 4 epochs of 20,000 examples at batch 128 "
                "(625 steps), a report every 52 steps, accuracy on the 10,000 test images; "
                "one trial at a time. median: minTrials 4, minStep 104; asha: grace 52, "
                "eta 3, rungs at 52, 156, 468. Trial k is the same configuration in every "
                "run.\n\n" % (datetime.date.today().isoformat(), a.seed))
        f.write(table + "\n\n")
        f.write("\n".join(reading) + "\n")
    print("wrote %s" % os.path.relpath(a.out, ROOT))


if __name__ == "__main__":
    main()
