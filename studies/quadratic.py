#!/usr/bin/env python3
"""A trial program that is not the project's trainer: any program that takes the
hyperparameters as --NAME=VALUE flags and reports metrics by the cloudml-hypertune
file protocol works as a trial. This one "trains" for --steps steps towards the
minimum of a quadratic in (x, y) and reports the loss after each, written the way
the cloudml-hypertune library writes it (the whole file, last 100 records, values
as strings). Standard library only.
"""
import argparse
import json
import os
import time

p = argparse.ArgumentParser()
p.add_argument("--x", type=float, required=True)
p.add_argument("--y", type=float, required=True)
p.add_argument("--steps", type=int, default=5)
p.add_argument("--job-dir", default="")
a = p.parse_args()

path = os.environ.get("CLOUD_ML_HP_METRIC_FILE", "/tmp/hypertune/output.metrics")
tag = os.environ.get("CLOUD_ML_HP_METRIC_TAG", "loss")
trial = os.environ.get("CLOUD_ML_TRIAL_ID", "")
os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
final = (a.x - 1.0) ** 2 + (a.y + 2.0) ** 2
records = []
for step in range(1, a.steps + 1):
    value = final + 10.0 / step  # a learning curve that decreases to `final`
    records.append({"checkpoint_path": "", "global_step": str(step), tag: str(value),
                    "timestamp": time.time(), "trial": trial})
    with open(path + ".tmp", "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records[-100:]))
    os.replace(path + ".tmp", path)
    time.sleep(0.02)
print("trial %s: x=%g y=%g loss=%g" % (trial, a.x, a.y, final))
