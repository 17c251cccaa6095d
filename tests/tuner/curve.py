#!/usr/bin/env python3
"""A trial replica that reports a learning curve for the early-stopping tests:
--config=NAME picks a final value (a=0.5, b=0.9, c=0.1, d=0.75, e=0.2, f=0.95), the
curve is value * step / 9 for steps 1..9 (so trials rank at every step as they do at
the end), one report every --pause seconds, written as the cloudml-hypertune library
does (the whole file, atomically). Exits 0 after step 9, or on SIGTERM."""
import argparse
import json
import os
import signal
import sys
import time

FINAL = {"a": 0.5, "b": 0.9, "c": 0.1, "d": 0.75, "e": 0.2, "f": 0.95}
p = argparse.ArgumentParser()
p.add_argument("--config", required=True)
p.add_argument("--pause", type=float, default=0.1)
p.add_argument("--job-dir", default="")
a = p.parse_args()
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
path = os.environ["CLOUD_ML_HP_METRIC_FILE"]
records = []
for step in range(1, 10):
    records.append({"global_step": str(step), "score": str(FINAL[a.config] * step / 9),
                    "timestamp": time.time(), "trial": os.environ.get("CLOUD_ML_TRIAL_ID", "")})
    with open(path + ".tmp", "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))
    os.replace(path + ".tmp", path)
    time.sleep(a.pause)
