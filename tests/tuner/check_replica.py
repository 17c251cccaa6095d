#!/usr/bin/env python3
"""A trial replica that checks everything the trial-job contract (DESIGN.md) promises
it, then behaves like a training replica: the chief reports a metric computed from
its hyperparameters and exits 0; workers, parameter servers and evaluators report too
and wait to be stopped (SIGTERM), as servers do. Any deviation: a message on stderr
and exit 2 (a permanent error, so the trial fails at once and the test sees it).

Flags it expects, besides the hyperparameters --x (DOUBLE) and --n (INTEGER) and
--job-dir: --expect_workers=N --expect_ps=N --expect_evaluators=N --expect_study=S
--expect_master (legacy chief name) --expect_cores=N (or N,N,N,N: chief, worker, ps,
evaluator), and --expect_slurm when the
trial runs as a Slurm job: addresses are then real host names (this replica's own is
its host's name) instead of 127.0.0.1, CUDA_VISIBLE_DEVICES is Slurm's, and the replica
records the Slurm node it ran on in JOB_DIR/nodes/TYPE-INDEX.
"""
import json
import os
import signal
import socket
import sys
import time


def fail(msg):
    sys.stderr.write("check_replica: %s\n" % msg)
    sys.exit(2)


def flags(argv):
    out = {}
    for a in argv[1:]:
        if not a.startswith("--") or "=" not in a:
            fail("argument %r is not --NAME=VALUE" % a)
        k, v = a[2:].split("=", 1)
        if k in out:
            fail("flag --%s given twice" % k)
        out[k] = v
    return out


f = flags(sys.argv)
for need in ("x", "n", "job-dir", "expect_workers", "expect_ps", "expect_evaluators",
             "expect_study", "expect_cores"):
    if need not in f:
        fail("missing flag --%s" % need)
x = float(f["x"])
n = int(f["n"])
if not (-2.0 <= x <= 2.0) or not (1 <= n <= 4):
    fail("hyperparameters out of range: x=%s n=%s" % (f["x"], f["n"]))
workers, ps, evaluators = int(f["expect_workers"]), int(f["expect_ps"]), int(f["expect_evaluators"])
chief_name = "master" if "expect_master" in f else "chief"

env = os.environ
trial = env.get("CLOUD_ML_TRIAL_ID", "")
if not trial.isdigit() or int(trial) < 1:
    fail("CLOUD_ML_TRIAL_ID=%r" % trial)
if not f["job-dir"].endswith("/" + trial) or not os.path.isdir(f["job-dir"]):
    fail("--job-dir=%s is not the trial's folder" % f["job-dir"])
if env.get("CLOUD_ML_JOB_ID") != f["expect_study"]:
    fail("CLOUD_ML_JOB_ID=%r" % env.get("CLOUD_ML_JOB_ID"))
if env.get("CLOUD_ML_HP_METRIC_TAG") != "score":
    fail("CLOUD_ML_HP_METRIC_TAG=%r" % env.get("CLOUD_ML_HP_METRIC_TAG"))

tf = json.loads(env["TF_CONFIG"])
for k in ("cluster", "task", "job", "environment"):
    if k not in tf:
        fail("TF_CONFIG has no %r" % k)
if tf["environment"] != "cloud":
    fail("TF_CONFIG environment %r" % tf["environment"])
cluster, task = tf["cluster"], tf["task"]
expected = {chief_name: 1, "worker": workers, "ps": ps}
for key in cluster:
    if key not in expected:
        fail("unexpected cluster key %r (the evaluator is never listed)" % key)
for key, count in expected.items():
    got = len(cluster.get(key, []))
    if got != count:
        fail("cluster[%r] has %d entries, expected %d" % (key, got, count))
addrs = [a for k in cluster for a in cluster[k]]
if len(set(addrs)) != len(addrs):
    fail("cluster addresses are not distinct: %s" % addrs)
slurm = "expect_slurm" in f
for a in addrs:
    host, port = a.rsplit(":", 1)
    if not (0 < int(port) < 65536):
        fail("bad address %r" % a)
    if slurm:
        try:
            socket.getaddrinfo(host, int(port))
        except OSError as e:
            fail("address %r does not resolve: %s" % (a, e))
    elif host != "127.0.0.1":
        fail("bad address %r" % a)
ttype, index = task["type"], task["index"]
if slurm and ttype in cluster:
    own = cluster[ttype][index].rsplit(":", 1)[0]
    if own != socket.gethostname():
        fail("own address %r is not this host (%s)" % (cluster[ttype][index], socket.gethostname()))
counts = dict(expected, evaluator=evaluators)
if ttype not in counts or not (0 <= index < counts[ttype]):
    fail("task %r index %r" % (ttype, index))
if task.get("trial") != trial:
    fail("task.trial %r != CLOUD_ML_TRIAL_ID %r" % (task.get("trial"), trial))
if tf["job"].get("hyperparameters", {}).get("hyperparameterMetricTag") != "score":
    fail("TF_CONFIG job is not the trainingInput")
metric_file = env.get("CLOUD_ML_HP_METRIC_FILE", "")
if not metric_file.endswith("/%s/metrics/%s-%d.metrics" % (trial, ttype, index)):
    fail("CLOUD_ML_HP_METRIC_FILE=%r" % metric_file)
if int(env.get("WORLD_SIZE", "0")) != 1 + workers:
    fail("WORLD_SIZE=%r" % env.get("WORLD_SIZE"))
rank = {chief_name: 0, "worker": index + 1}.get(ttype)
if (str(rank) if rank is not None else None) != env.get("RANK"):
    fail("RANK=%r for %s %d" % (env.get("RANK"), ttype, index))
if "%s:%s" % (env.get("MASTER_ADDR"), env.get("MASTER_PORT")) != cluster[chief_name][0]:
    fail("MASTER_ADDR:MASTER_PORT is not the chief's address")
cores = f["expect_cores"].split(",")  # one for all, or chief,worker,ps,evaluator
if len(cores) == 4:
    cores = cores[[chief_name, "worker", "ps", "evaluator"].index(ttype)]
else:
    cores = cores[0]
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    if env.get(var) != cores:
        fail("%s=%r" % (var, env.get(var)))
if slurm:
    if not env.get("SLURM_JOB_ID") or not env.get("SLURMD_NODENAME"):
        fail("not a Slurm task: SLURM_JOB_ID=%r" % env.get("SLURM_JOB_ID"))
    if env.get("CUDA_VISIBLE_DEVICES", "") not in ("", "NoDevFiles"):
        fail("CUDA_VISIBLE_DEVICES=%r without GPUs" % env.get("CUDA_VISIBLE_DEVICES"))
    os.makedirs(os.path.join(f["job-dir"], "nodes"), exist_ok=True)
    with open(os.path.join(f["job-dir"], "nodes", "%s-%d" % (ttype, index)), "w") as out:
        out.write(env["SLURMD_NODENAME"] + "\n")
elif env.get("CUDA_VISIBLE_DEVICES") != "":
    fail("CUDA_VISIBLE_DEVICES=%r" % env.get("CUDA_VISIBLE_DEVICES"))

score = -(x - 0.5) ** 2 + n  # the objective, maximised at x = 0.5, n = 4
os.makedirs(os.path.dirname(metric_file), exist_ok=True)
with open(metric_file, "a") as m:  # appending, as some programs do
    m.write(json.dumps({"global_step": "1", "score": str(score), "timestamp": time.time(),
                        "trial": trial}) + "\n")
if ttype == chief_name:
    if slurm:  # the others must get to record their node before the job ends
        want = 1 + workers + ps + evaluators
        deadline = time.time() + 60
        while len(os.listdir(os.path.join(f["job-dir"], "nodes"))) < want:
            if time.time() > deadline:
                fail("the other replicas never recorded their nodes")
            time.sleep(0.05)
    sys.exit(0)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
time.sleep(60)
fail("was never stopped")
