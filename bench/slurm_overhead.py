#!/usr/bin/python3
"""Slurm executor benchmark: what a trial costs through Slurm, against submitit.

In one run, on a throw-away cluster this script starts (scripts/slurm-cluster.sh, 3
slurmd nodes on this host; stopped at the end) and on the same no-op work:
  - `tuner run --executor=slurm` of N trials whose program is a Python no-op that
    reports one metric, 1 and 4 trials in parallel: trials per second and seconds per
    trial, everything included (spec, store, sbatch, the allocation, tuner-launch,
    the replica, its metric file, the outcome, squeue);
  - submitit (pinned below, installed in the virtualenv bench/.venv) submitting the
    same no-op Python function as Slurm jobs on the same cluster, 1 and 4 in flight,
    each completion waited for the fastest way submitit offers (job.done(), which
    looks for the result file, polled every 50 ms);
  - the controller's load: every sbatch, squeue and sacct call of both is logged by
    wrappers put first on PATH; for ours also with 60 trials running at once, to show
    at most one squeue a second whatever the number of running trials.
The cluster has no accounting database, so submitit's sacct calls fail (it says so
and goes on: it learns of completions from its result files, as on any cluster).

Prints a Markdown table and writes docs/benchmarks/slurm.md. Needs root (slurmd).

    scripts/install-deps.sh --bench && scripts/build.sh release
    /usr/bin/python3 bench/slurm_overhead.py [--trials 20]
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

from benchutil import ROOT, cpu_model, ensure_venv

BIN = os.path.join(ROOT, "build", "bin")
SUBMITIT_VERSION = "1.5.4"
NOOP = ("import json, os, time; open(os.environ['CLOUD_ML_HP_METRIC_FILE'], 'w').write("
        "json.dumps({'y': '1', 'timestamp': time.time()}) + '\\n')")
WRAPPED = ("sbatch", "squeue", "sacct", "scancel")


def wrap_commands(folder, log):
    """Wrappers for Slurm's commands that log each call (time, name) to log."""
    os.makedirs(folder, exist_ok=True)
    for name in WRAPPED:
        real = shutil.which(name)
        if not real:
            sys.exit("slurm_overhead.py: error: %s is not installed\n"
                     "hint: scripts/install-deps.sh --bench" % name)
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write('#!/bin/sh\necho "$(date +%%s.%%N) %s" >> %s\nexec %s "$@"\n' % (name, log, real))
        os.chmod(path, 0o755)


def calls(log, since, until):
    """The logged calls in [since, until]: {name: [times]}."""
    out = {n: [] for n in WRAPPED}
    if not os.path.exists(log):
        return out
    for line in open(log):
        t, name = line.split()
        t = float(t)
        if since <= t <= until:
            out[name].append(t)
    return out


def min_gap(times):
    """The shortest time between two calls (inf for fewer than two)."""
    times = sorted(times)
    return min((b - a for a, b in zip(times, times[1:])), default=float("inf"))


def reaction(done_times, sbatch_times, last):
    """The tool's own delay: from each trial's work being done to the next submission
    (median and worst, in seconds), the last trial aside."""
    sbatch_times = sorted(sbatch_times)
    gaps = []
    for t in sorted(done_times):
        if t >= last - 1e-6:
            continue
        later = [s for s in sbatch_times if s >= t]
        if later:
            gaps.append(later[0] - t)
    gaps.sort()
    if not gaps:
        return float("nan"), float("nan")
    return gaps[len(gaps) // 2], gaps[-1]


def tuner_done_times(work, name):
    """When each trial's work was done: the time its outcome file records."""
    out = []
    for dirpath, _, files in os.walk(os.path.join(work, "runs", name)):
        if "outcome" in files:
            with open(os.path.join(dirpath, "outcome")) as f:
                out.append(json.load(f)["time"])
    return out


def submitit_done_times(work, parallel):
    """When each submitit job's work was done: its result file's time."""
    folder = os.path.join(work, "submitit_%d" % parallel)
    return [os.path.getmtime(os.path.join(folder, f)) for f in os.listdir(folder)
            if f.endswith("_result.pkl")]


def tuner_run(trials, parallel, work, sleep=0.0):
    name = "slurm_%d_%d" % (parallel, trials)
    prog = NOOP if sleep == 0 else "import time; time.sleep(%g); %s" % (sleep, NOOP)
    spec = {"jobId": name, "executor": {"type": "slurm", "partition": "debug"},
            "trainingInput": {
                "scaleTier": "BASIC", "jobDir": os.path.join(work, "runs", name),
                "command": ["/usr/bin/python3", "-c", prog],
                "hyperparameters": {"goal": "MINIMIZE", "hyperparameterMetricTag": "y",
                                    "maxTrials": trials, "maxParallelTrials": parallel,
                                    "algorithm": "RANDOM_SEARCH",
                                    "params": [{"parameterName": "x", "type": "DOUBLE",
                                                "minValue": 0, "maxValue": 1}]}}}
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(spec, f)
    t0 = time.time()
    r = subprocess.run([os.path.join(BIN, "tuner"), "run", path, "--db=" + os.path.join(work, "t.db"),
                        "--quiet", "--dashboard=off", "--poll=0.05"],
                       capture_output=True, text=True)
    t1 = time.time()
    if r.returncode != 0:
        sys.exit("tuner run failed:\n" + r.stderr)
    return t0, t1


def noop():
    return 1


def submitit_run(trials, parallel, work):
    import submitit
    ex = submitit.AutoExecutor(folder=os.path.join(work, "submitit_%d" % parallel),
                               cluster="slurm")
    ex.update_parameters(slurm_partition="debug", timeout_min=10, nodes=1, tasks_per_node=1,
                         cpus_per_task=1)
    t0 = time.time()
    running, done = [], 0
    submitted = 0
    while done < trials:
        while submitted < trials and len(running) < parallel:
            running.append(ex.submit(noop))
            submitted += 1
        still = []
        for job in running:
            if job.done():
                if job.result() != 1:
                    sys.exit("submitit job %s: wrong result" % job.job_id)
                done += 1
            else:
                still.append(job)
        running = still
        time.sleep(0.05)
    return t0, time.time()


def machine():
    return "%s, %d cores, %s" % (cpu_model(), os.cpu_count(), platform.platform())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20, help="trials per measurement")
    ap.add_argument("--many", type=int, default=60,
                    help="trials running at once for the squeue-rate measurement")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks", "slurm.md"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("slurm_overhead.py: error: the cluster needs root (slurmd)\n"
                 "hint: run as root")
    for prog in ("tuner", "tuner-launch"):
        if not os.access(os.path.join(BIN, prog), os.X_OK):
            sys.exit("slurm_overhead.py: error: %s is not built\nhint: scripts/build.sh release"
                     % prog)
    work = tempfile.mkdtemp(prefix="slurm_bench.")
    log = os.path.join(work, "calls.log")
    wrap_commands(os.path.join(work, "bin"), log)
    cluster = os.path.join(work, "cluster")
    start = subprocess.run([os.path.join(ROOT, "scripts", "slurm-cluster.sh"), "start", cluster,
                            "--nodes=3", "--cpus=%d" % max(8, a.many // 3 + 1)],
                           capture_output=True, text=True)
    if start.returncode != 0:
        sys.exit("slurm_overhead.py: error: cannot start the cluster:\n" + start.stderr)
    os.environ["SLURM_CONF"] = start.stdout.strip().split("=", 1)[1]
    os.environ["PATH"] = os.path.join(work, "bin") + ":" + os.environ["PATH"]
    rows, notes = [], []
    try:
        for parallel in (1, 4):
            for tool, fn in (("tuner (Slurm executor)", tuner_run), ("submitit " + SUBMITIT_VERSION,
                                                                     submitit_run)):
                t0, t1 = fn(a.trials, parallel, work)
                c = calls(log, t0, t1)
                done = (tuner_done_times(work, "slurm_%d_%d" % (parallel, a.trials))
                        if fn is tuner_run else submitit_done_times(work, parallel))
                react, worst = reaction(done, c["sbatch"], max(done) if done else t1)
                rows.append({"tool": tool, "parallel": parallel, "seconds": t1 - t0,
                             "per_trial": (t1 - t0) / a.trials, "rate": a.trials / (t1 - t0),
                             "sbatch": len(c["sbatch"]), "squeue": len(c["squeue"]),
                             "sacct": len(c["sacct"]),
                             "gap": min_gap(c["squeue"] + c["sacct"]),
                             "react": react, "react_worst": worst})
                print("%-26s parallel %d: %.2f s/trial, %.2f trials/s, reacts in %.3f s "
                      "(worst %.3f), squeue %d sacct %d (closest %.2f s apart)"
                      % (tool, parallel, rows[-1]["per_trial"], rows[-1]["rate"], react, worst,
                         rows[-1]["squeue"], rows[-1]["sacct"], rows[-1]["gap"]), flush=True)
        # many trials at once: the squeue rate must not grow with them
        t0, t1 = tuner_run(a.many, a.many, work, sleep=8.0)
        c = calls(log, t0, t1)
        many = {"trials": a.many, "seconds": t1 - t0, "squeue": len(c["squeue"]),
                "gap": min_gap(c["squeue"]), "sbatch": len(c["sbatch"])}
        print("tuner, %d trials at once: %d squeue calls in %.1f s, the closest %.2f s apart"
              % (a.many, many["squeue"], many["seconds"], many["gap"]), flush=True)
    finally:
        subprocess.run([os.path.join(ROOT, "scripts", "slurm-cluster.sh"), "stop", cluster],
                       capture_output=True)
    table = ["| tool | in parallel | s / trial | trials / s | reaction, median (worst) | "
             "sbatch | squeue | sacct | closest two squeue/sacct calls |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        table.append("| %s | %d | %.2f | %.2f | %.0f ms (%.0f ms) | %d | %d | %d | %s |" % (
            r["tool"], r["parallel"], r["per_trial"], r["rate"], 1000 * r["react"],
            1000 * r["react_worst"], r["sbatch"], r["squeue"], r["sacct"],
            "%.2f s" % r["gap"] if r["gap"] != float("inf") else "-"))
    ratio = []
    for parallel in (1, 4):
        ours = [r for r in rows if r["parallel"] == parallel and r["tool"].startswith("tuner")][0]
        peer = [r for r in rows if r["parallel"] == parallel and r["tool"].startswith("submitit")][0]
        ratio.append("| %d | %.2fx | %.2fx |" % (parallel, peer["per_trial"] / ours["per_trial"],
                                                 peer["react"] / ours["react"]))
    text = "\n".join([
        "# The Slurm executor against submitit",
        "",
        "`bench/slurm_overhead.py`, run %s on %s; a throw-away cluster of 3 slurmd nodes on "
        "this host (`scripts/slurm-cluster.sh`, Slurm 22.05 from Debian 12). %d no-op "
        "trials per row: for the tuner a Python one-liner that writes one metric, run as "
        "a Slurm trial (sbatch, tuner-launch, the replica, the metric file, squeue), the "
        "trial's files read every 50 ms (`--poll=0.05`); for submitit the same work as a pickled Python function (`executor.submit`), each "
        "completion seen through `job.done()` polled every 50 ms. Every call of Slurm's "
        "commands was logged by wrappers on PATH."
        % (datetime.date.today().isoformat(), machine(), a.trials),
        "",
        "\n".join(table),
        "",
        "*Reaction* is each tool's own delay: from a trial's work being done (the outcome "
        "file's time for the tuner, the result file's for submitit) to the next sbatch. The "
        "rest of a trial's time is Slurm's: the scheduler starts a job submitted to this "
        "cluster at its next backfill pass (`bf_interval=1`), which bounds both tools alike.",
        "",
        "Submitit over ours (above 1: ours is faster):",
        "",
        "| in parallel | seconds per trial | reaction |",
        "|---:|---:|---:|",
        "\n".join(ratio),
        "",
        "With %d trials running at once (each sleeping 8 s): %d squeue calls in %.1f s, the "
        "closest two %.2f s apart (the wrappers' clock, process start included), for %d sbatch "
        "calls." % (many["trials"], many["squeue"], many["seconds"], many["gap"], many["sbatch"]),
        "",
        "The cluster has no accounting database (no slurmdbd), so submitit's `sacct` calls "
        "fail; submitit says so and learns of each completion from its result file instead, "
        "which is also how it works on a cluster with accounting. The tuner reads job states "
        "with one `squeue --states=all --jobs=...` a second for all its jobs, never two at "
        "once, whatever their number ([slurm.md](../slurm.md), \"Watching, at a bounded "
        "rate\"). Only ratios measured in the same run compare: the machine changes between "
        "runs.",
        ""])
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(text)
    print()
    print(text)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    ensure_venv(__file__, "submitit", SUBMITIT_VERSION)
    main()
