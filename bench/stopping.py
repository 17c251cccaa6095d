#!/usr/bin/python3
"""Early stopping with trials in parallel: the candidates for the default rule, and
Optuna's pruners, on synthetic learning curves and on a real study's curves.

In one run:
  - build/bin/bench_stopping runs our rules and the candidates for the default (the
    task and the study, several trials at a time, are defined in its header) on
    --seeds synthetic studies, 2 trials at a time: a study of 24 trials, one of 50,
    and one with a budget of 405 steps (what 15 trials spend without stopping);
  - Optuna (Debian's python3-optuna) runs its MedianPruner and
    SuccessiveHalvingPruner with their default options, and NopPruner as a check, on
    the same studies with the same schedule (this script replays bench_stopping's
    event order: the next report of all first, ties to the lower trial number), through
    ask/tell with trial.report and trial.should_prune; trial number k runs curve k;
  - the default and the old default again with 1 and 4 trials at a time;
  - with --real FILE (bench/stopping_real.py --curves writes it), our rules on a real
    study's curves, replayed in --real_seeds random orders of its trials, 2 at a time,
    with a budget of what 16 of its trials spend.
"Best" is the hidden final value v (synthetic) or the last accuracy (real) of the
completed trial with the best last value; a loss is none's best minus the rule's,
in points (hundredths). Writes docs/benchmarks/early-stopping-synthetic.md.

    scripts/build.sh release
    /usr/bin/python3 bench/stopping.py [--seeds 200] \
        [--real docs/benchmarks/early-stopping-fashion-curves.txt]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

from benchutil import ROOT, cpu_model, need, write_page

MEASURES = (("trials", 24), ("trials50", 50))


def bench(build, args):
    """The JSON lines of one bench_stopping run: ({seed: tasks}, {(rule, seed): run})."""
    cmd = [os.path.join(build, "bin", "bench_stopping")] + args
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    tasks, runs = {}, {}
    for line in out.splitlines():
        o = json.loads(line)
        if o["kind"] == "curves":
            tasks[o["seed"]] = o["trials"]
        else:
            runs[(o["rule"], o["seed"])] = o
    return tasks, runs


def optuna_study(make_pruner, tasks, workers, max_trials, budget):
    """bench_stopping.c's simulate() with an Optuna pruner: the same measure."""
    import optuna
    from optuna.trial import TrialState
    study = optuna.create_study(direction="maximize", pruner=make_pruner(),
                                storage=optuna.storages.InMemoryStorage(),
                                sampler=optuna.samplers.RandomSampler(seed=0))
    m = {"steps": 0, "started": 0, "completed": 0, "best_trial": None, "best_value": None}
    cur = [None] * workers  # (trial, index, points reported, next time)
    started, best_y = 0, -float("inf")
    while True:
        for w in range(workers):
            if cur[w] is not None or started == len(tasks) or (max_trials and started == max_trials) \
                    or (budget and m["steps"] >= budget):
                continue
            trial = study.ask()
            assert trial.number == started
            cur[w] = [trial, started, 0, tasks[started]["steps"][0] * tasks[started]["dt"]]
            started += 1
        live = [w for w in range(workers) if cur[w] is not None]
        if not live:
            break
        w = min(live, key=lambda k: (cur[k][3], cur[k][1]))
        trial, i, j, _ = cur[w]
        t = tasks[i]
        inc = t["steps"][j] - (t["steps"][j - 1] if j else 0)
        if budget and m["steps"] + inc > budget:
            break
        m["steps"] += inc
        if j == 0:
            m["started"] += 1
        trial.report(t["y"][j], t["steps"][j])
        if j + 1 == len(t["steps"]):
            study.tell(trial, t["y"][j])
            m["completed"] += 1
            if t["y"][j] > best_y:
                best_y = t["y"][j]
                m["best_trial"], m["best_value"] = i + 1, t["v"]
            cur[w] = None
        elif trial.should_prune():
            study.tell(trial, state=TrialState.PRUNED)
            cur[w] = None
        else:
            cur[w][2] = j + 1
            cur[w][3] += (t["steps"][j + 1] - t["steps"][j]) * t["dt"]
    return m


def summary(runs, rules, seeds):
    """Per rule: the numbers of the tables (see the page's header)."""
    out = {}
    for r in rules:
        row = {}
        for key, n in MEASURES:
            saved = [1 - runs[(r, s)][key]["steps"] / runs[("none", s)][key]["steps"]
                     for s in seeds]
            loss = [100 * (runs[("none", s)][key]["best_value"]
                           - (runs[(r, s)][key]["best_value"] or 0)) for s in seeds]
            row[n] = (100 * np.mean(saved), sum(x >= 0.5 for x in saved), np.mean(loss),
                      max(loss), sum(x > 0.5 for x in loss))
        gain = [100 * ((runs[(r, s)]["budget"]["best_value"] or 0)
                       - (runs[("none", s)]["budget"]["best_value"] or 0)) for s in seeds]
        row["budget"] = (np.mean(gain), sum(x > 0 for x in gain), sum(x < 0 for x in gain),
                         np.mean([runs[(r, s)]["budget"]["started"] for s in seeds]))
        out[r] = row
    return out


def table(summ, rules, nseeds, labels=None):
    lines = ["| rule | saved, 24 trials | seeds saving >= 50% | loss (points) | worst | "
             "seeds losing > 0.5 | saved, 50 trials | seeds saving >= 50% | loss | worst | "
             "seeds losing > 0.5 | equal compute: gain (points) | seeds better / worse | "
             "trials started |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rules:
        row = summ[r]
        cells = []
        for _, n in MEASURES:
            sv, ok, loss, worst, bad = row[n]
            cells += ["%.0f%%" % sv, "%d/%d" % (ok, nseeds), "%+.2f" % loss, "%.1f" % worst,
                      "%d/%d" % (bad, nseeds)]
        g, better, worse, started = row["budget"]
        cells += ["%+.2f" % g, "%d / %d" % (better, worse), "%.0f" % started]
        name = labels.get(r, r) if labels else r
        lines.append("| %s | %s |" % (name, " | ".join(cells)))
    return "\n".join(lines)


LABELS = {
    "none": "none",
    "default": "**default**: asha, eta 3, grace 0 (L/8)",
    "old-default": "old default: median, minTrials 5, minStep 1",
    "median-min3": "median, minTrials 3",
    "median-min2": "median, minTrials 2",
    "median-min1": "median, minTrials 1",
    "asha-grace1": "asha, eta 3, grace 1 (fixed)",
    "asha-eta3-L/9": "asha, eta 3, grace L/9",
    "asha-eta3-L/8": "asha, eta 3, grace L/8 (as default, by the bench)",
    "asha-eta3-L/6": "asha, eta 3, grace L/6",
    "asha-eta2-L/9": "asha, eta 2, grace L/9",
    "asha-eta2-L/8": "asha, eta 2, grace L/8",
    "asha-eta4-L/8": "asha, eta 4, grace L/8",
    "asha-eta4-L/6": "asha, eta 4, grace L/6",
    "curve-p70": "learning curve, 70th percentile",
    "curve-p80": "learning curve, 80th percentile",
    "MedianPruner": "Optuna MedianPruner()",
    "SuccessiveHalvingPruner": "Optuna SuccessiveHalvingPruner()",
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=200)
    p.add_argument("--optuna_seeds", type=int, default=100)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--real", help="a real study's curves (bench/stopping_real.py --curves)")
    p.add_argument("--real_seeds", type=int, default=200)
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks",
                                                 "early-stopping-synthetic.md"))
    a = p.parse_args()
    need(os.path.join(a.build, "bin", "bench_stopping"), "stopping.py")
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    t0 = time.perf_counter()
    tasks, runs = bench(a.build, ["--seeds=%d" % a.seeds, "--workers=2", "--curves"])
    c_wall = time.perf_counter() - t0
    seeds = sorted(tasks)
    rules = sorted({r for r, _ in runs}, key=lambda r: list(LABELS).index(r))

    # Optuna on the first --optuna_seeds studies, the same schedule.
    pruners = {"MedianPruner": optuna.pruners.MedianPruner,
               "SuccessiveHalvingPruner": optuna.pruners.SuccessiveHalvingPruner,
               "NopPruner": optuna.pruners.NopPruner}
    oseeds = seeds[:a.optuna_seeds]
    t0 = time.perf_counter()
    for name, make in pruners.items():
        for s in oseeds:
            runs[(name, s)] = {k: optuna_study(make, tasks[s], 2, n, 0) for k, n in MEASURES}
            runs[(name, s)]["budget"] = optuna_study(make, tasks[s], 2, 0, 405)
    py_wall = time.perf_counter() - t0
    for s in oseeds:  # the two harnesses agree where no rule acts
        for k in ("trials", "trials50", "budget"):
            if runs[("NopPruner", s)][k] != runs[("none", s)][k]:
                sys.exit("stopping.py: error: seed %d: NopPruner's %s study %s differs from "
                         "none's %s" % (s, k, runs[("NopPruner", s)][k], runs[("none", s)][k]))

    same_median = sum(all(runs[("MedianPruner", s)][k] == runs[("old-default", s)][k]
                          for k in ("trials", "trials50", "budget")) for s in oseeds)
    main_rules = [r for r in rules if r not in ("asha-eta3-L/8",)]
    t_cand = table(summary(runs, main_rules, seeds), main_rules, len(seeds), LABELS)
    same = sum(runs[("default", s)]["steps"] == runs[("asha-eta3-L/8", s)]["steps"]
               for s in seeds)
    opt_rules = ["none", "old-default", "default", "MedianPruner", "SuccessiveHalvingPruner"]
    t_opt = table(summary(runs, opt_rules, oseeds), opt_rules, len(oseeds), LABELS)

    # The default and the old default with 1, 2 and 4 trials at a time.
    by_workers = []
    for w in (1, 2, 4):
        _, rw = bench(a.build, ["--seeds=%d" % a.seeds, "--workers=%d" % w,
                                "--rules=none,old-default,default"])
        sm = summary(rw, ["old-default", "default"], seeds)
        for r in ("old-default", "default"):
            by_workers.append((w, r, sm[r]))
    t_work = ["| trials at a time | rule | saved, 24 trials | loss, 24 (points) | "
              "saved, 50 trials | loss, 50 | equal compute: gain | seeds better / worse |",
              "|---|---|---|---|---|---|---|---|"]
    for w, r, row in by_workers:
        t_work.append("| %d | %s | %.0f%% | %+.2f | %.0f%% | %+.2f | %+.2f | %d / %d |" % (
            w, LABELS[r], row[24][0], row[24][2], row[50][0], row[50][2], row["budget"][0],
            row["budget"][1], row["budget"][2]))
    t_work = "\n".join(t_work)

    t_real = None
    if a.real:
        with open(a.real) as f:
            n = int(f.readline())
            lens = [int(line.split()[-2]) for line in f]
        budget = 16 * int(np.median(lens))
        _, rr = bench(a.build, ["--seeds=%d" % a.real_seeds, "--workers=2",
                                "--curves_from=%s" % a.real, "--budget=%d" % budget,
                                "--first_seed=0"])
        rseeds = sorted({s for _, s in rr})
        rrules = [r for r in main_rules if (r, rseeds[0]) in rr]
        t_real = (n, budget, len(rseeds),
                  table(summary(rr, rrules, rseeds), rrules, len(rseeds), LABELS))

    page = PAGE_HEAD % {"date": datetime.date.today().isoformat(), "cpu": cpu_model(),
                        "seeds": len(seeds), "oseeds": len(oseeds), "c_wall": c_wall,
                        "py_wall": py_wall, "optuna": optuna.__version__}
    page += "\n## The candidates, 2 trials at a time (synthetic)\n\n" + t_cand + "\n\n"
    page += ("The default (grace 0, computed by `search/stopping.c`) and the bench's own "
             "\"grace = ceil(L/8)\" stopped the same trials at the same steps in %d of %d "
             "seeds.\n" % (same, len(seeds)))
    if t_real:
        page += ("\n## The candidates on the real Fashion-MNIST study's curves\n\n"
                 "The %d trials of one `none` run of `bench/stopping_real.py` (628 steps, "
                 "a report every 52 steps and at each epoch's end), replayed 2 at a time "
                 "in %d orders (seed 0: the order they ran in; the others random), with "
                 "studies of 24 and 50 trials and a budget of %d steps (16 trials).\n\n%s\n"
                 % (t_real[0], t_real[2], t_real[1], t_real[3]))
    page += ("\n## Against Optuna's pruners, 2 trials at a time (synthetic)\n\n"
             "The first %d seeds; Optuna %s with its default options, on the same studies "
             "and schedule. Our old default and MedianPruner() (5 startup trials, no "
             "warm-up) gave the same three studies (steps, trials completed, best) in %d "
             "of %d seeds.\n\n%s\n" % (len(oseeds), optuna.__version__, same_median,
                                         len(oseeds), t_opt))
    page += ("\n## Trials at a time\n\nThe same %d seeds, run 1, 2 and 4 trials at a "
             "time.\n\n%s\n" % (len(seeds), t_work))
    page += READING
    write_page(a.out, page, show=True)


PAGE_HEAD = """\
# Early stopping with trials in parallel: choosing the default

Written by `bench/stopping.py` on %(date)s on an %(cpu)s (`lscpu`'s model name):
bench_stopping %(c_wall).1f s for every rule on %(seeds)d seeds, Optuna %(optuna)s
%(py_wall).0f s for its three pruners on %(oseeds)d. The task and the study are defined
in `bench/bench_stopping.c`'s header.

**The task.** Each seed is one study of synthetic trials: trial i has a hidden final
value v = 0.5 + 0.2 (U + U) (triangular on [0.5, 0.9]) and reports, at steps 1..27,
y(s) = v - a exp(-s / tau) + 0.01 N with a in [0.05, 0.45] and tau in [1, 8] steps,
maximized. Curves cross: a slow starter with a high v sits below fast starters early
on. Each trial takes 1 +- 0.5 time units a step (uniform, its own), and **2 trials run
at a time**: a freed worker starts the next trial at once, and every rule sees the
running trials with the points they have reported so far.

**The measures.** For studies of 24 and of 50 trials (every rule runs the same
trials): *saved* is the mean over seeds of 1 - steps / none's steps; *loss* is none's
best minus the rule's best in points (hundredths of v), its mean, its worst seed, and
the seeds losing more than half a point. "Best" is the hidden v of the completed
trial with the best value at step 27: what a user would pick. *Equal compute*: trials
run until 405 steps are reported (what none spends on 15 trials); the gain is the
rule's best minus none's, in points, with the seeds where it is better and worse.
The issue's bar: at least 50%% saved, at most 0.5 points lost.

**The candidates.** The median rule (minTrials 1 to 5, minStep 1); ASHA with a fixed
grace period of 1 step; ASHA with the grace period a fraction of the trials' length L
(the longest completed trial: no stop before one has completed, no rung at or past
L) and reduction factors 2, 3, 4; and a learning-curve model: at step s, the most any
completed trial gained from s to its end is its model of the rest of the curve, and a
trial stops when its value plus that gain is below the 70th (80th) percentile of the
completed trials' final values (after 3 have completed). The learning-curve rule and
the L/9, L/6 fractions live in the bench only.
"""

READING = """
## Reading

- **The old default is short of the bar with trials in parallel.** The median rule
  with minTrials 5 and minStep 1 waits for 5 completed trials, which with 2 trials at
  a time costs about 6 whole trials: at 24 trials it saves about half the steps on
  average and less than half in many seeds (synthetic and real replay above; 43% in
  the real run of [early-stopping-fashion.md](early-stopping-fashion.md)). With more
  trials at a time it saves less. Waiting for fewer completed trials (minTrials 3, 2,
  1) saves more but loses more than half a point on the synthetic curves: the median
  of one to three curves at an early step is a noisy bar.
- **ASHA with a grace period of 1 step** saves the most and loses the most: step 1
  of 27 says little about where a curve ends. Optuna's SuccessiveHalvingPruner with
  its defaults (eta 4, a first rung at 1% of the first completed trial) does the same.
- **Why asha, eta 3, grace L/8.** Tying the first rung to the trials' length makes
  the rule the same on 27 steps and on 628: on the synthetic curves it decides at
  steps 4 and 12; on the real study (L = 628, a report every 52 steps) at the
  reports after steps 79 and 237. It meets both bars at 24 and 50 trials, on the
  synthetic and on the real curves, and of the candidates that do it saves the
  most: L/9 saves more but loses more than half a point at 24 trials; eta 2, L/6 and
  eta 4 with L/6 save less; eta 4 with L/8 loses more. The learning-curve model
  matches it on the synthetic curves (80th percentile) but saves only about half the
  steps on the real curves at 24 trials, where it waits for 3 completed trials.
- **Equal compute.** Within a fixed budget of steps, with 2 trials at a time (and
  with 1 and 4), the default finds a better best trial than no early stopping on
  average, and in many more seeds than it finds a worse one: the steps it saves go
  into more trials.

Caveats: one synthetic family of curves and one real study; a trial's time per step
is drawn uniformly, not measured; the rules see every report as it is made (the tuner
reads metric files every --poll seconds, so a stop can come a report late).
"""

if __name__ == "__main__":
    main()
