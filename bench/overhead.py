#!/usr/bin/python3
"""Overhead benchmark: what the tuner itself costs per trial, against Optuna.

In one run:
  - `tuner run` of a study whose trial command exits at once after reporting one
    metric (a shell one-liner), 1 and 4 trials in parallel: trials completed per
    second, everything included (spec, store, fork/exec, TF_CONFIG, logs, metric
    file, outcome);
  - ask+tell pairs per second through the C API with the SQLite store
    (build/bin/bench_asktell);
  - Optuna (Debian's python3-optuna) with RandomSampler and its SQLite storage: the
    same ask+tell loop, and study.optimize() whose objective runs the same command in
    a subprocess (Optuna's way of running a program per trial).
Prints a Markdown table and writes docs/benchmarks/overhead.md.

    scripts/install-deps.sh --bench && scripts/build.sh release
    /usr/bin/python3 bench/overhead.py [--trials 300]
"""
import argparse
import datetime
import json
import os
import subprocess
import tempfile
import time

from benchutil import ROOT, need, write_page

BIN = os.path.join(ROOT, "build", "bin")
TRIAL_CMD = 'echo "{\\"y\\": \\"1\\"}" > "$CLOUD_ML_HP_METRIC_FILE"'


def tuner_run(trials, parallel, work):
    spec = {"jobId": "overhead_%d" % parallel, "trainingInput": {
        "scaleTier": "BASIC", "jobDir": os.path.join(work, "runs_%d" % parallel),
        "command": ["/bin/sh", "-c", TRIAL_CMD, "sh"],
        "hyperparameters": {"goal": "MINIMIZE", "hyperparameterMetricTag": "y",
                            "maxTrials": trials, "maxParallelTrials": parallel,
                            "algorithm": "RANDOM_SEARCH",
                            "params": [{"parameterName": "x", "type": "DOUBLE",
                                        "minValue": -5, "maxValue": 5}]}}}
    path = os.path.join(work, "overhead_%d.json" % parallel)
    with open(path, "w") as f:
        json.dump(spec, f)
    db = os.path.join(work, "tuner_%d.db" % parallel)
    t0 = time.perf_counter()
    subprocess.run([os.path.join(BIN, "tuner"), "run", path, "--db=" + db, "--quiet",
                    "--oversubscribe", "--seed=1"], check=True, stdout=subprocess.DEVNULL)
    return trials / (time.perf_counter() - t0)


def tuner_asktell(trials, work):
    out = subprocess.run([os.path.join(BIN, "bench_asktell"), "--trials=%d" % trials,
                          "--db=" + os.path.join(work, "asktell.db")],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["per_sec"]


def optuna_asktell(trials, work):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage="sqlite:///" + os.path.join(work, "optuna_at.db"),
                                sampler=optuna.samplers.RandomSampler(seed=1))
    t0 = time.perf_counter()
    for _ in range(trials):
        t = study.ask()
        x = t.suggest_float("x", -5, 5)
        study.tell(t, x * x)
    return trials / (time.perf_counter() - t0)


def optuna_subprocess(trials, work):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage="sqlite:///" + os.path.join(work, "optuna_sp.db"),
                                sampler=optuna.samplers.RandomSampler(seed=1))
    metric = os.path.join(work, "optuna.metrics")

    def objective(trial):
        trial.suggest_float("x", -5, 5)
        subprocess.run(["/bin/sh", "-c", TRIAL_CMD, "sh"], check=True,
                       env=dict(os.environ, CLOUD_ML_HP_METRIC_FILE=metric))
        with open(metric) as f:
            return float(json.loads(f.read())["y"])

    t0 = time.perf_counter()
    study.optimize(objective, n_trials=trials)
    return trials / (time.perf_counter() - t0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=300)
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks", "overhead.md"))
    a = p.parse_args()
    for b in ("tuner", "bench_asktell"):
        need(os.path.join(BIN, b), "overhead.py")
    import optuna
    with tempfile.TemporaryDirectory() as work:
        rows = [
            ("ask+tell pairs/s (SQLite)", tuner_asktell(a.trials * 4, work),
             optuna_asktell(a.trials, work)),
            ("trials/s running a program, 1 at a time", tuner_run(a.trials, 1, work),
             optuna_subprocess(a.trials, work)),
            ("trials/s running a program, 4 in parallel", tuner_run(a.trials, 4, work), None),
        ]
    lines = ["| measure | tuner | Optuna %s | tuner / Optuna |" % optuna.__version__,
             "|---|---|---|---|"]
    for name, ours, theirs in rows:
        lines.append("| %s | %.0f | %s | %s |" % (
            name, ours, "%.0f" % theirs if theirs else "-",
            "%.1fx" % (ours / theirs) if theirs else "-"))
    table = "\n".join(lines)
    print(table)
    write_page(a.out, "# Overhead per trial: tuner vs Optuna\n\n"
               "Written by `bench/overhead.py` on %s (%d cores). %d trials per Optuna "
               "measurement, %d ask+tell pairs for the tuner; RandomSampler and random "
               "search over one DOUBLE; both stores SQLite files on the same disk.\n\n"
               "%s\n%s" % (datetime.date.today().isoformat(), os.cpu_count(), a.trials,
                            a.trials * 4, table, NOTES))


NOTES = """
- *ask+tell*: `study_ask` samples and creates the trial in one IMMEDIATE transaction,
  `study_tell` records the value in another; the store runs with `synchronous=FULL`,
  so every pair pays two fsyncs (docs/store.md says why). Optuna's loop is
  `study.ask()`, `suggest_float`, `study.tell()` on its RDB storage.
- *running a program*: the whole `tuner run` per trial: sample, store, pick ports,
  fork/exec the replica with TF_CONFIG and the contract's environment, log file,
  read the metric file when it exits, record the outcome. Optuna's nearest
  equivalent is an objective that runs the program with `subprocess.run` and reads
  its output; it has no parallel runner of its own without extra processes.
"""

if __name__ == "__main__":
    main()
