#!/usr/bin/python3
"""Several objectives: hypervolume of our sampler against random search and Optuna's.

In one run:
  - ours (ALGORITHM_UNSPECIFIED with several metrics: random Chebyshev scalarisations
    over the Bayesian sampler, search/mobo.h) and random search (RANDOM_SEARCH), run
    by build/bin/bench_mobo, which defines the problems in its header
    (bench/bench_mobo.c) and prints every point and both objectives;
  - Optuna (Debian's python3-optuna, through /usr/bin/python3) with
    NSGAIISampler(population_size=10, seed=s) (its default population of 50 would be
    all random at these budgets) and TPESampler(seed=s) (multi-objective TPE), through
    ask/tell on the same problems, defined again here (the points bench_mobo printed
    are re-evaluated here, so both definitions are checked to agree).
Sequential studies, both objectives minimised, seeds 1..N, D = 6 variables in [0, 1].
The hypervolume of the first t trials is the area they dominate up to the reference
point (ZDT: (1.1, 11); DTLZ2: (2.5, 2.5): worse than any point of these spaces), also
given as a fraction of the true front's. Prints a Markdown table and writes
docs/benchmarks/multi-objective.md.

    scripts/build.sh release
    /usr/bin/python3 bench/mobo.py [--seeds 10] [--trials 50]
"""
import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import time
import warnings

from benchutil import ROOT, cpu_model, hypervolume2
BIN = os.path.join(ROOT, "build", "bin", "bench_mobo")
DIMS = 6
PROBLEMS = ("zdt1", "zdt2", "dtlz2")
REF = {"zdt1": (1.1, 11.0), "zdt2": (1.1, 11.0), "dtlz2": (2.5, 2.5)}
ALGOS = ("mobo", "random", "nsga2", "tpe")
LABEL = {"mobo": "ours (scalarised BO)", "random": "random search",
         "nsga2": "Optuna NSGA-II (population 10)", "tpe": "Optuna TPE (multi-objective)"}


def evaluate(problem, x):
    if problem == "dtlz2":
        g = sum((v - 0.5) ** 2 for v in x[1:])
        return ((1 + g) * math.cos(x[0] * math.pi / 2), (1 + g) * math.sin(x[0] * math.pi / 2))
    g = 1 + 9 * sum(x[1:]) / (len(x) - 1)
    f2 = g * (1 - math.sqrt(x[0] / g)) if problem == "zdt1" else g * (1 - (x[0] / g) ** 2)
    return (x[0], f2)


def true_front(problem, n=20001):
    """Points of the problem's Pareto front (g = its minimum)."""
    out = []
    for i in range(n):
        t = i / (n - 1)
        if problem == "dtlz2":
            out.append((math.cos(t * math.pi / 2), math.sin(t * math.pi / 2)))
        else:
            out.append((t, 1 - math.sqrt(t) if problem == "zdt1" else 1 - t * t))
    return out


def run_ours(problem, algo, seed, trials):
    t0 = time.time()
    out = subprocess.run([BIN, problem, algo, str(seed), str(trials), str(DIMS)], check=True,
                         capture_output=True, text=True).stdout
    r = json.loads(out)
    for x, f in zip(r["x"], r["f"]):  # the two definitions agree
        g = evaluate(problem, x)
        assert all(abs(a - b) <= 1e-9 * (1 + abs(b)) for a, b in zip(g, f)), (problem, x, f, g)
    return [tuple(f) for f in r["f"]], r["suggest_s"], time.time() - t0


def run_optuna(problem, algo, seed, trials):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore")
    sampler = (optuna.samplers.NSGAIISampler(population_size=10, seed=seed) if algo == "nsga2"
               else optuna.samplers.TPESampler(seed=seed))
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=sampler)
    fs, spent, t0 = [], 0.0, time.time()
    for _ in range(trials):
        s0 = time.time()
        trial = study.ask()
        x = [trial.suggest_float("x%d" % i, 0, 1) for i in range(DIMS)]
        spent += time.time() - s0
        f = evaluate(problem, x)
        study.tell(trial, f)
        fs.append(f)
    return fs, spent / trials, time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks", "multi-objective.md"))
    a = ap.parse_args()
    checkpoints = sorted({a.trials // 2, a.trials})
    rows = {}
    for problem in PROBLEMS:
        best = hypervolume2(true_front(problem), REF[problem])
        for algo in ALGOS:
            hv = {t: [] for t in checkpoints}
            times = []
            for seed in range(1, a.seeds + 1):
                run = run_ours if algo in ("mobo", "random") else run_optuna
                fs, per_suggest, _ = run(problem, algo, seed, a.trials)
                for t in checkpoints:
                    hv[t].append(hypervolume2(fs[:t], REF[problem]))
                times.append(per_suggest)
            rows[(problem, algo)] = (hv, statistics.mean(times), best)
            print(problem, algo, {t: round(statistics.mean(v), 4) for t, v in hv.items()}, flush=True)

    cpu = cpu_model()
    import optuna
    lines = [
        "# Several objectives: hypervolume at equal trials",
        "",
        "Written by `bench/mobo.py` (%s; CPU: %s; %d cores; Optuna %s from Debian's "
        "python3-optuna). Sequential studies of %d trials, both objectives minimised, "
        "%d variables in [0, 1], seeds 1..%d. Hypervolume: the area the study's trials "
        "dominate up to the reference point (ZDT1, ZDT2: (1.1, 11); DTLZ2: (2.5, 2.5)), "
        "mean ± standard deviation over the seeds, and as a percentage of the true "
        "front's. Higher is better. Suggest: the sampler's mean time per suggestion."
        % (datetime.date.today().isoformat(), cpu, os.cpu_count(), optuna.__version__,
           a.trials, DIMS, a.seeds),
        "",
        "| problem | sampler | " + " | ".join("HV after %d" % t for t in checkpoints)
        + " | % of the front's | suggest |",
        "|---|---|" + "---|" * len(checkpoints) + "---|---|",
    ]
    for problem in PROBLEMS:
        for algo in ALGOS:
            hv, per, best = rows[(problem, algo)]
            cells = ["%.3f ± %.3f" % (statistics.mean(hv[t]), statistics.stdev(hv[t]) if len(hv[t]) > 1 else 0)
                     for t in checkpoints]
            lines.append("| %s | %s | %s | %.1f%% | %s |" % (
                problem.upper(), LABEL[algo], " | ".join(cells),
                100 * statistics.mean(hv[a.trials]) / best,
                "%.2f ms" % (per * 1000) if per >= 1e-4 else "< 0.1 ms"))
    lines += [
        "",
        "The true front's hypervolume: ZDT1 %.4f, ZDT2 %.4f, DTLZ2 %.4f." % tuple(
            rows[(p, "mobo")][2] for p in PROBLEMS),
        "",
        "Ours is `ALGORITHM_UNSPECIFIED` for a study with several `metrics`: each "
        "suggestion draws weights uniform on the simplex, puts both objectives of the "
        "finished trials on [0, 1], scalarises them by the augmented Chebyshev function "
        "and hands that history to the single-objective Bayesian sampler "
        "(docs/bayesian-optimisation.md, \"Several objectives\"). NSGA-II runs with a "
        "population of 10 because its default, 50, would make every trial of these "
        "budgets part of its random first generation.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    with open(a.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
