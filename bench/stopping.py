#!/usr/bin/python3
"""Early-stopping benchmark on synthetic learning curves: our rules against Optuna's pruners.

In one run, on the same curves (build/bin/bench_stopping makes them and prints them,
so both sides see the same doubles; the task is defined in bench/bench_stopping.c):
  - our rules (search/stopping.h), run by build/bin/bench_stopping: none, median
    (minTrials 5, minStep 1), asha (grace 1, eta 3), hyperband (grace 1, eta 3,
    max_step 27);
  - Optuna (Debian's python3-optuna) through ask/tell with trial.report and
    trial.should_prune on an in-memory storage: MedianPruner(n_startup_trials=5,
    n_warmup_steps=0), SuccessiveHalvingPruner(min_resource=1, reduction_factor=3),
    and NopPruner as a check that the two harnesses agree. Trial number k runs
    curve k; nothing is sampled.
Trials run one at a time; a trial that reports step 27 completes, and no rule is asked
about step 27. Two measures, the same function for both sides: the first 50 trials
(steps spent, best value) and a budget of 405 steps (what `none` spends on 15
trials: the best value found within it). "Best value" is the hidden final value v of
the completed trial with the best reported value at step 27.
Prints Markdown tables and writes docs/benchmarks/early-stopping-synthetic.md.

    scripts/build.sh release
    /usr/bin/python3 bench/stopping.py [--seeds 20]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin", "bench_stopping")
NSTEPS = 27
OURS = ("none", "median", "asha", "hyperband")
OPTUNA = ("MedianPruner", "SuccessiveHalvingPruner")


def measure(curves, steps, max_trials, budget):
    """bench_stopping.c's measure_prefix: the prefix of a run (steps[i]: the steps
    trial i+1 reported) of at most max_trials trials and budget steps."""
    m = {"steps": 0, "started": 0, "completed": 0, "best_trial": None, "best_value": None}
    best_y = -float("inf")
    for i, n in enumerate(steps):
        if i >= max_trials or m["steps"] >= budget:
            break
        m["started"] += 1
        if m["steps"] + n > budget:  # cut off by the budget
            m["steps"] = budget
            break
        m["steps"] += n
        if n < NSTEPS:
            continue
        m["completed"] += 1
        if curves[i]["y"][NSTEPS - 1] > best_y:
            best_y = curves[i]["y"][NSTEPS - 1]
            m["best_trial"] = i + 1
            m["best_value"] = curves[i]["v"]
    return m


def run_ours(seeds, trials, budget):
    """{seed: curves}, {(policy, seed): run} from one run of bench_stopping."""
    cmd = [BIN, "--seeds=%d" % seeds, "--trials=%d" % trials, "--budget=%d" % budget, "--curves"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    curves, runs = {}, {}
    for line in out.splitlines():
        o = json.loads(line)
        if o["kind"] == "curves":
            assert o["steps"] == NSTEPS
            curves[o["seed"]] = o["trials"]
        else:
            runs[(o["policy"], o["seed"])] = o
    return curves, runs, wall


def run_optuna(pruner, curves, trials, budget):
    """Steps reported by each trial of a sequential Optuna study on these curves, run
    until it has run `trials` trials and spent `budget` steps (as bench_stopping)."""
    import optuna
    from optuna.trial import TrialState
    study = optuna.create_study(direction="maximize", pruner=pruner,
                                storage=optuna.storages.InMemoryStorage(),
                                sampler=optuna.samplers.RandomSampler(seed=0))
    steps, spent = [], 0
    while len(steps) < len(curves) and (len(steps) < trials or spent < budget):
        trial = study.ask()
        y = curves[trial.number]["y"]
        for s in range(1, NSTEPS + 1):
            trial.report(y[s - 1], s)
            spent += 1
            if s == NSTEPS:
                study.tell(trial, y[s - 1])
                break
            if trial.should_prune():
                study.tell(trial, state=TrialState.PRUNED)
                break
        steps.append(s)
    return steps


def quartiles(xs):
    q1, med, q3 = np.percentile(np.asarray(xs, dtype=float), [25, 50, 75])
    return med, q1, q3


def fmt(xs, spec):
    med, q1, q3 = quartiles(xs)
    return ("%s [%s, %s]" % (spec, spec, spec)) % (med, q1, q3)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--trials", type=int, default=50)
    p.add_argument("--budget", type=int, default=405)
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks",
                                                 "early-stopping-synthetic.md"))
    a = p.parse_args()
    if not os.path.exists(BIN):
        sys.exit("stopping.py: error: build/bin/bench_stopping not found\n"
                 "hint: scripts/build.sh release")
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    curves, ours, c_wall = run_ours(a.seeds, a.trials, a.budget)
    seeds = sorted(curves)
    runs = {}  # (rule, seed) -> {"trials": measure, "budget": measure, "steps": [...]}
    for (policy, seed), o in ours.items():
        c = curves[seed]
        got = {"trials": measure(c, o["steps"], a.trials, float("inf")),
               "budget": measure(c, o["steps"], len(c), a.budget)}
        for k in got:  # the C and Python measures must be the same function
            if got[k] != o[k]:
                sys.exit("stopping.py: error: %s seed %d: bench_stopping's %s measure %s, "
                         "recomputed %s" % (policy, seed, k, o[k], got[k]))
        got["steps"] = o["steps"]
        runs[(policy, seed)] = got

    pruners = {
        "MedianPruner": lambda: optuna.pruners.MedianPruner(n_startup_trials=5,
                                                            n_warmup_steps=0),
        "SuccessiveHalvingPruner": lambda: optuna.pruners.SuccessiveHalvingPruner(
            min_resource=1, reduction_factor=3),
        "NopPruner": lambda: optuna.pruners.NopPruner(),
    }
    t0 = time.perf_counter()
    for name, make in pruners.items():
        for seed in seeds:
            c = curves[seed]
            steps = run_optuna(make(), c, a.trials, a.budget)
            runs[(name, seed)] = {"trials": measure(c, steps, a.trials, float("inf")),
                                  "budget": measure(c, steps, len(c), a.budget),
                                  "steps": steps}
    py_wall = time.perf_counter() - t0
    for seed in seeds:  # the harnesses agree where no rule acts
        if runs[("NopPruner", seed)] != runs[("none", seed)]:
            sys.exit("stopping.py: error: seed %d: Optuna's NopPruner run differs from "
                     "bench_stopping's none" % seed)

    rules = [("ours", r) for r in OURS] + [("Optuna %s" % optuna.__version__, r) for r in OPTUNA]
    oracle50 = [max(t["v"] for t in curves[s][:a.trials]) for s in seeds]
    none_t = {s: runs[("none", s)]["trials"]["best_value"] for s in seeds}
    none_b = {s: runs[("none", s)]["budget"]["best_value"] for s in seeds}

    def col(rule, which, key):
        return [runs[(rule, s)][which][key] for s in seeds]

    def best(rule, which):
        xs = col(rule, which, "best_value")
        return [x for x in xs if x is not None], sum(x is None for x in xs)

    def delta(rule, which, ref):
        return [runs[(rule, s)][which]["best_value"] - ref[s] for s in seeds
                if runs[(rule, s)][which]["best_value"] is not None and ref[s] is not None]

    def hits(rule):  # seeds where the rule picked the best of the first `trials` trials
        return sum(runs[(rule, s)]["trials"]["best_value"] == o for s, o in zip(seeds, oracle50))

    def versus(rule, which, ref):  # "w/b": seeds where best v is worse / better than none's
        d = delta(rule, which, ref)
        return "%d / %d" % (sum(x < 0 for x in d), sum(x > 0 for x in d))

    t1 = ["| rule | by | steps | steps saved | completed | best v | best v - none's | "
          "seeds worse / better than none | picked the best of %d |" % a.trials,
          "|---|---|---|---|---|---|---|---|---|"]
    t2 = ["| rule | by | trials run | completed | best v | best v - none's | "
          "seeds worse / better than none |", "|---|---|---|---|---|---|---|"]
    full = a.trials * NSTEPS
    for who, r in rules:
        st = col(r, "trials", "steps")
        bv, miss = best(r, "trials")
        t1.append("| %s | %s | %s | %s | %s | %s%s | %s | %s | %d/%d |" % (
            r, who, fmt(st, "%.0f"), "%.0f%%" % (100 * (1 - np.median(st) / full)),
            fmt(col(r, "trials", "completed"), "%.0f"), fmt(bv, "%.3f"),
            " (%d seeds none)" % miss if miss else "", fmt(delta(r, "trials", none_t), "%+.3f"),
            versus(r, "trials", none_t), hits(r), len(seeds)))
        bv, miss = best(r, "budget")
        t2.append("| %s | %s | %s | %s | %s%s | %s | %s |" % (
            r, who, fmt(col(r, "budget", "started"), "%.0f"),
            fmt(col(r, "budget", "completed"), "%.0f"), fmt(bv, "%.3f"),
            " (%d seeds none)" % miss if miss else "", fmt(delta(r, "budget", none_b), "%+.3f"),
            versus(r, "budget", none_b)))
    head1 = ("**The first %d trials** (%d steps without stopping); median [quartiles] over "
             "%d seeds; differences are paired by seed. Best v of the %d trials (oracle): %s."
             % (a.trials, full, len(seeds), a.trials, fmt(oracle50, "%.3f")))
    head2 = ("**A budget of %d steps**: trials run in order until the budget is spent; "
             "median [quartiles] over %d seeds; differences are paired by seed."
             % (a.budget, len(seeds)))
    tables = "\n".join([head1, "", *t1, "", head2, "", *t2])
    print(tables)

    reading = []
    for who, r in rules:
        if r == "none":
            continue
        st = np.median(col(r, "trials", "steps"))
        d50, db = delta(r, "trials", none_t), delta(r, "budget", none_b)
        reading.append(
            "- %s (%s): %.0f%% fewer steps over %d trials; its best v is worse than none's "
            "in %d of %d seeds and better in %d (mean difference %+.4f). Within %d steps "
            "it is better than none in %d seeds and worse in %d (mean %+.4f)."
            % (r, who, 100 * (1 - st / full), a.trials, sum(x < 0 for x in d50), len(d50),
               sum(x > 0 for x in d50), np.mean(d50), a.budget, sum(x > 0 for x in db),
               sum(x < 0 for x in db), np.mean(db)))
    same = sum(runs[("asha", s)]["steps"] == runs[("SuccessiveHalvingPruner", s)]["steps"]
               for s in seeds)
    reading.append(
        "- asha and SuccessiveHalvingPruner stopped the same trials at the same steps in "
        "%d of %d seeds (same rungs, same top-floor(n/eta) rule, same best-of-n below eta)."
        % (same, len(seeds)))
    same_m = sum(runs[("median", s)]["steps"] == runs[("MedianPruner", s)]["steps"]
                 for s in seeds)
    reading.append(
        "- median and MedianPruner stopped the same trials at the same steps in %d of %d "
        "seeds: both compare a trial's best value so far with the median of the completed "
        "trials' values at that step, after 5 completed trials." % (same_m, len(seeds)))
    spent = {r: np.median(col(r, "trials", "steps")) for _, r in rules if r != "none"}
    reading.append(
        "- hyperband puts trial k in bracket (k - 1) mod 4: the grace-27 bracket has no rung "
        "below step 27 and never stops a trial, the grace-9 bracket has one rung (step 9), "
        "and with trials run one at a time each bracket sees a quarter of the study; it "
        "spends %.0f steps over %d trials, %s." % (
            spent["hyperband"], a.trials,
            "the most of all the rules" if spent["hyperband"] == max(spent.values())
            else "against %.0f to %.0f for the others" % (
                min(v for r, v in spent.items() if r != "hyperband"),
                max(v for r, v in spent.items() if r != "hyperband"))))

    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("# Early stopping on synthetic learning curves: our rules vs Optuna's pruners\n\n")
        f.write("Written by `bench/stopping.py` on %s: bench_stopping %.1f s for all our rules, "
                "Optuna %s %.1f s for its three runs. %d seeds, seeds 1..%d; the task is "
                "defined in `bench/bench_stopping.c`'s header.\n\n"
                % (datetime.date.today().isoformat(), c_wall, optuna.__version__, py_wall,
                   len(seeds), len(seeds)))
        f.write(SETUP % {"trials": a.trials, "budget": a.budget, "steps": NSTEPS,
                         "none_trials": a.budget // NSTEPS})
        f.write("\n" + tables + "\n\n## Reading\n\n")
        f.write("\n".join(reading) + "\n")
        f.write(NOTES)
    print("\n" + "\n".join(reading))
    print("wrote %s" % os.path.relpath(a.out, ROOT))


SETUP = """\
Each seed is one study of synthetic trials: trial i has a hidden final value
v = 0.5 + 0.2 (U + U) (triangular on [0.5, 0.9]) and reports, at steps 1..%(steps)d,
y(s) = v - a exp(-s / tau) + 0.01 N with a in [0.05, 0.45] and tau in [1, 8] steps,
maximized. Curves cross: a slow starter with a high v sits below fast starters early on.
`bench_stopping` draws the curves and prints them, so Optuna runs on the same doubles.
Trials run one at a time, in order; after each step but the last the rule decides
whether the trial stops; a trial that reports step %(steps)d completes. "Best v" is the
hidden v of the completed trial with the best reported value at step %(steps)d, so
it counts what a user would actually pick. "Steps" are steps reported; a stopped trial
still costs the steps it ran. The budget measure gives every rule the %(budget)d steps
that `none` spends on %(none_trials)d trials; the trial running when it runs out is
cut off. Our rules: median (minTrials 5, minStep 1, best value so far against the
median of completed trials' values at that step), asha (grace 1, eta 3, rungs 1, 3, 9),
hyperband (grace 1, eta 3, max_step 27: brackets with grace 1, 3, 9 and 27, trial k in
bracket (k - 1) mod 4). Optuna: MedianPruner(n_startup_trials=5, n_warmup_steps=0),
which compares the best value so far with the median of completed trials' values *at
that step*; SuccessiveHalvingPruner(min_resource=1, reduction_factor=3), rungs 1, 3, 9;
both through ask/tell, `trial.report` and `trial.should_prune`. Optuna's NopPruner run
is checked to be identical to our `none`, and the C and Python measures are checked to
agree on our runs.
"""

NOTES = """
Caveats: one synthetic family of curves, not real training; sequential trials only
(with trials in parallel, asha and Optuna's pruners judge against fewer finished
peers); the rules are run with the options above, not tuned to this task.
"""

if __name__ == "__main__":
    main()
