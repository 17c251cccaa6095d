#!/usr/bin/python3
"""Early stopping on the real Fashion-MNIST study: off, and on with the default rule.

The same random-search study (learning rate, width, optimiser of the MLP; batch 128
so that steps mean the same in every trial; 4 epochs of 20,000 training examples,
628 steps, a report every 52 steps) run by `tuner run` with --parallel trials at once
(2 by default), once per rule:
  none     no early stopping;
  default  `enableTrialEarlyStopping: true` and nothing else: the rule a user gets;
  median5  the median rule with minTrials 5, minStep 1 (the default before issue 15),
           with --rules none,default,median5.
The seed fixes the sampled points, so trial k is the same configuration in every run.
Each run has --trials trials (50); two measures on it:
  - equal trial count: the first N trials (N in --at, 24 and 50): steps spent (each
    trial's last reported step), and the best accuracy among those that completed;
  - equal compute: every measurement in the order it was stored; the budget is what
    `none` spent on its first --budget_trials trials (16); a run's best accuracy
    within it is the best among the trials that completed before the run's steps
    reported reached the budget (with trials in parallel, steps are counted as they
    are reported, so a trial running when the budget runs out counts for the steps it
    had reported and does not complete).
With --curves FILE it also writes every trial's curve of the `none` run as JSON,
which bench_stopping --curves_from=FILE replays (the candidates on real curves).
Prints Markdown tables and writes docs/benchmarks/early-stopping-fashion.md.

    scripts/build.sh release && /usr/bin/python3 bench/stopping_real.py \
        --curves docs/benchmarks/early-stopping-fashion-curves.txt
"""
import argparse
import datetime
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

from benchutil import ROOT, cpu_model, need

RULES = {
    "none": {},
    "default": {"enableTrialEarlyStopping": True},
    "median5": {"earlyStopping": {"policy": "median", "minTrials": 5, "minStep": 1}},
}
STEPS = 628  # 4 epochs of 157 steps


def run(build, name, trials, parallel, seed, work):
    """Runs one study; returns its trials (number, state, accuracy, steps) and its
    measurements in the order they were stored (trial, step, value)."""
    hp = {"goal": "MAXIMIZE", "hyperparameterMetricTag": "accuracy", "maxTrials": trials,
          "maxParallelTrials": parallel, "algorithm": "RANDOM_SEARCH",
          "params": [
              {"parameterName": "learning_rate", "type": "DOUBLE", "minValue": 0.001,
               "maxValue": 0.5, "scaleType": "UNIT_LOG_SCALE"},
              {"parameterName": "hidden_units", "type": "INTEGER", "minValue": 32,
               "maxValue": 512, "scaleType": "UNIT_LOG_SCALE"},
              {"parameterName": "optimizer", "type": "CATEGORICAL",
               "categoricalValues": ["momentum", "adam"]}]}
    hp.update(RULES[name])
    spec = {"jobId": "es_" + name, "trainingInput": {
        "scaleTier": "BASIC", "jobDir": os.path.join(work, "runs", name),
        "command": [os.path.join(build, "bin", "trainer"), "--epochs=4",
                    "--max_train_examples=20000", "--batch_size=128", "--report_every=52",
                    "--threads=1"],
        "hyperparameters": hp}}
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(spec, f)
    db = os.path.join(work, name + ".db")
    t0 = time.perf_counter()
    subprocess.run([os.path.join(build, "bin", "tuner"), "run", path, "--db=" + db,
                    "--seed=%d" % seed, "--quiet", "--poll=0.1", "--grace=5",
                    "--cores=%d" % parallel, "--dashboard=off"],
                   check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    con = sqlite3.connect(db)
    rows = con.execute(
        "select t.number, t.state, t.objective, (select max(m.step) from measurements m "
        "where m.study_id = t.study_id and m.trial = t.number and m.replica = 'chief:0') "
        "from trials t order by t.number").fetchall()
    meas = con.execute(
        "select trial, step, metrics from measurements where replica = 'chief:0' "
        "order by seq").fetchall()
    con.close()
    out = [{"number": n, "state": s, "accuracy": o, "steps": st or 0} for n, s, o, st in rows]
    stored = [(t, st, float(json.loads(m)["accuracy"])) for t, st, m in meas]
    return out, stored, wall


def best(trials):
    done = [t["accuracy"] for t in trials if t["state"] == "SUCCEEDED"]
    return max(done) if done else float("nan")


def within(trials, stored, budget):
    """The trials that completed before the steps reported (in the order the
    measurements were stored) would pass budget, and how many trials had started."""
    last, spent = {}, 0
    for trial, step, _ in stored:
        inc = step - last.get(trial, 0)
        if spent + inc > budget:
            break
        spent += inc
        last[trial] = step
    done = [t for t in trials if t["state"] == "SUCCEEDED" and last.get(t["number"]) == t["steps"]]
    return done, len(last)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=50)
    p.add_argument("--at", default="24,50", help="equal-trial-count prefixes")
    p.add_argument("--parallel", type=int, default=2)
    p.add_argument("--budget_trials", type=int, default=16)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--rules", default="none,default,median5")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--curves", help="write the none run's curves here (bench_stopping "
                                    "--curves_from's format)")
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks",
                                                 "early-stopping-fashion.md"))
    a = p.parse_args()
    at = [int(x) for x in a.at.split(",")]
    rules = a.rules.split(",")
    if "none" not in rules or any(r not in RULES for r in rules):
        sys.exit("stopping_real.py: error: --rules must include none, from %s" % ", ".join(RULES))
    if max(at) > a.trials or a.budget_trials > a.trials:
        sys.exit("stopping_real.py: error: --at and --budget_trials must be <= --trials")
    need(os.path.join(a.build, "bin", "tuner"), "stopping_real.py")
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for name in rules:
            results[name] = run(a.build, name, a.trials, a.parallel, a.seed, work)
            print("%s done in %.0f s" % (name, results[name][2]), file=sys.stderr, flush=True)
    base, base_stored, _ = results["none"]
    if a.curves:
        curves = {}
        for trial, step, value in base_stored:
            curves.setdefault(trial, {})[step] = value  # the newest value of a step
        with open(a.curves, "w") as f:
            f.write("%d\n" % len(curves))
            for n in sorted(curves):
                c = curves[n]
                f.write("%d %s\n" % (len(c), " ".join("%d %.17g" % (s, c[s]) for s in sorted(c))))
    budget = sum(t["steps"] for t in base[:a.budget_trials])

    t1 = ["| rule | trials | stopped | steps | steps saved | best accuracy | "
          "best - none's (points) |", "|---|---|---|---|---|---|---|"]
    reading = []
    for n in at:
        full = sum(t["steps"] for t in base[:n])
        for name in rules:
            first = results[name][0][:n]
            steps = sum(t["steps"] for t in first)
            saved = 1 - steps / full
            d = 100 * (best(first) - best(base[:n]))
            t1.append("| %s | %d | %d | %d | %.0f%% | %.4f | %+.2f |" % (
                name, n, sum(t["state"] == "STOPPED" for t in first), steps, 100 * saved,
                best(first), d))
            if name != "none":
                reading.append("- %s, %d trials: %.0f%% of the steps saved (the bar: at "
                               "least 50%%), %+.2f points from none's best (the bar: at "
                               "most 0.5 lost)." % (name, n, 100 * saved, d))
    t2 = ["| rule | trials started | completed within the budget | best accuracy | "
          "best - none's (points) |", "|---|---|---|---|---|"]
    base_in, _ = within(base, base_stored, budget)
    for name in rules:
        trials, stored, _ = results[name]
        inside, started = within(trials, stored, budget)
        d = 100 * (best(inside) - best(base_in))
        t2.append("| %s | %d | %d | %.4f | %+.2f |" % (name, started, len(inside),
                                                      best(inside), d))
        if name != "none":
            reading.append("- %s, equal compute (%d steps): %d trials started, %d completed, "
                           "best %+.2f points from none's." % (name, budget, started,
                                                               len(inside), d))
    if best(base_in) >= best(base):
        reading.append("- Equal compute: none's best trial of all %d ran within the budget "
                       "(trial order is luck), so no rule could do better in this run; "
                       "early-stopping-synthetic.md measures the gain over 200 orders of "
                       "these trials." % len(base))
    tables = ("**Equal trial count**: the first N trials of each run.\n\n" + "\n".join(t1) +
              "\n\n**Equal compute**: a budget of %d steps, what none spent on its first %d "
              "trials. Steps are counted as the measurements were stored (%d trials "
              "running at once), and a trial counts if it completed before the budget ran "
              "out.\n\n" % (budget, a.budget_trials, a.parallel) + "\n".join(t2))
    print(tables)
    print("\n".join(reading))
    walls = ", ".join("%s %.0f s" % (n, results[n][2]) for n in rules)
    with open(a.out, "w") as f:
        f.write("# Early stopping on the real Fashion-MNIST study\n\n")
        f.write("Written by `bench/stopping_real.py` on %s on an %s (`lscpu`'s model "
                "name), one run per rule (seed %d; wall time %s; the machine was shared, "
                "so times are rough). Random search over learning rate (0.001-0.5, log), "
                "width (32-512, log) and optimiser (momentum, adam) of the MLP; 4 epochs of "
                "20,000 examples at batch 128 (628 steps), a report every 52 steps and at "
                "each epoch's end, accuracy on the 10,000 test images; %d trials, %d at a "
                "time. Trial k is the same configuration in every run. none: no early "
                "stopping; default: `enableTrialEarlyStopping: true` and nothing else; "
                "median5: the median rule with minTrials 5 and minStep 1, the default "
                "before issue 15. A trial's steps are its last reported step. The none "
                "run's curves are in `early-stopping-fashion-curves.txt`; "
                "[early-stopping-synthetic.md](early-stopping-synthetic.md) replays every "
                "candidate rule on them in 200 orders of the trials.\n\n"
                % (datetime.date.today().isoformat(), cpu_model(), a.seed, walls,
                   a.trials, a.parallel))
        f.write(tables + "\n\n" + "\n".join(reading) + "\n")
    print("wrote %s" % os.path.relpath(a.out, ROOT))


if __name__ == "__main__":
    main()
