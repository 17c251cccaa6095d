"""A trial as AI Platform runs a Python package: `python3 -m rosenbrock.task` with the
hyperparameters as --NAME=VALUE flags and --job-dir.

It "trains" by gradient descent with momentum on Rosenbrock's function
f(x, y) = (1 - x)^2 + 100 (y - x^2)^2 from (-1.5, 2), for --steps steps, and reports
the loss every tenth step by the cloudml-hypertune file protocol: the whole file
rewritten each time, one JSON record a line, metric values as strings. The tuner
minimises the last loss over --learning_rate and --momentum. Standard library only.
"""
import argparse
import json
import math
import os
import time


def report(path, records, tag, value, step, trial):
    """Appends a record and rewrites the metric file (the last 100 records)."""
    records.append({tag: str(value), "global_step": str(step), "checkpoint_path": "",
                    "timestamp": time.time(), "trial": trial})
    with open(path + ".tmp", "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records[-100:]))
    os.replace(path + ".tmp", path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--learning_rate", type=float, required=True)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--job-dir", default="")
    a = p.parse_args()

    path = os.environ.get("CLOUD_ML_HP_METRIC_FILE", "/tmp/hypertune/output.metrics")
    tag = os.environ.get("CLOUD_ML_HP_METRIC_TAG", "loss")
    trial = os.environ.get("CLOUD_ML_TRIAL_ID", "")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)

    x, y, vx, vy, loss = -1.5, 2.0, 0.0, 0.0, 0.0
    records = []
    for step in range(1, a.steps + 1):
        gx = -2 * (1 - x) - 400 * x * (y - x * x)
        gy = 200 * (y - x * x)
        vx = a.momentum * vx - a.learning_rate * gx
        vy = a.momentum * vy - a.learning_rate * gy
        x, y = x + vx, y + vy
        loss = (1 - x) ** 2 + 100 * (y - x * x) ** 2
        if not math.isfinite(loss) or loss > 1e12:  # diverged: report it and stop
            loss = 1e12
            report(path, records, tag, loss, step, trial)
            break
        if step % 10 == 0 or step == a.steps:
            report(path, records, tag, loss, step, trial)
    print("trial %s: learning_rate=%g momentum=%g loss=%g" % (trial, a.learning_rate,
                                                              a.momentum, loss))


if __name__ == "__main__":
    main()
