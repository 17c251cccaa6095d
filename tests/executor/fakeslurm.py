#!/usr/bin/env python3
"""A stand-in for Slurm's client commands (sbatch, squeue, scancel, sinfo, srun), for the
Slurm executor's unit tests on machines without a cluster or root.

Installed as links named after the commands in a folder put first on PATH; the name it
is called by picks the command. All state is in $FAKE_SLURM_DIR:

  calls                one line per call: "TIME COMMAND ARGS..." (tests check rates, argv)
  next_id              the next job id
  jobs/ID              "STATE|REASON|NODES|NAME" of job ID (tests may rewrite it)
  pids/ID              the process group of a job that runs
  run                  when present, sbatch runs the batch script for real: in the
                       background with SLURM_JOB_ID etc., RUNNING then COMPLETED or FAILED
  state                when present, the state sbatch gives new jobs (default PENDING)
  sbatch_fail          when present: sbatch prints its first line to stderr and exits 1,
                       and the line is removed (an empty file is removed)
  sbatch_lie           when present (and removed): sbatch queues the job all the same
                       before it fails, as when the controller's answer is lost
  squeue_fail          when present: squeue prints it to stderr and exits 1
  squeue_name_fail     when present: squeue --name (the look for a trial's job) prints its
                       first line to stderr and exits 1, the line removed (as sbatch_fail)
  sbatch_stdout        when present: what sbatch prints instead of "ID\n", %j standing for
                       the id (a site's notices before it, or no id at all)
  nodelist             when present: what squeue prints for %N (a long node list)
  scancel_fail         when present: scancel prints it to stderr, exits 1 and removes it
  sinfo                what sinfo prints (sinfo_fail: printed to stderr, exit 1)
  srun_sigchld_ignored when present: srun starts its tasks with SIGCHLD ignored, as a
                       site's wrapper or container entrypoint may leave it

srun runs --ntasks copies of its command here with SLURM_PROCID and SLURM_LOCALID set
and exits with the worst status. `scontrol requeue ID` kills a running job and runs it
again with SLURM_RESTART_COUNT one higher, as Slurm's requeue does (a first run has no
SLURM_RESTART_COUNT of its own, as with Slurm: one in sbatch's environment reaches the
job). Options it does not know are ignored, as the tests check argv through `calls`.
"""
import os
import signal
import subprocess
import sys
import time

D = os.environ.get("FAKE_SLURM_DIR")
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
            "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}


def path(*parts):
    return os.path.join(D, *parts)


def log_call(name, args):
    with open(path("calls"), "a") as f:
        f.write("%.3f %s %s\n" % (time.time(), name, " ".join(args)))


def read(p, default=""):
    try:
        with open(p) as f:
            return f.read()
    except OSError:
        return default


def write(p, text):
    tmp = p + ".tmp%d" % os.getpid()
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, p)


def take_line(name):
    """The first line of the file name (None when it is missing), which is removed from
    it (and the file with its last line)."""
    text = read(path(name), None)
    if text is None:
        return None
    lines = text.splitlines()
    if lines[1:]:
        write(path(name), "\n".join(lines[1:]) + "\n")
    else:
        os.remove(path(name))
    return lines[0] if lines else ""


def injected(command, once=False):
    """Whether the test made command fail (<command>_fail): prints the file to
    stderr; with once, removes it."""
    fail = read(path(command + "_fail"), None)
    if fail is None:
        return False
    if once:
        os.remove(path(command + "_fail"))
    sys.stderr.write(fail)
    return True


def job_ids():
    """The jobs sbatch made, unordered."""
    return os.listdir(path("jobs")) if os.path.isdir(path("jobs")) else []


def job_state(jid):
    parts = read(path("jobs", jid)).strip().split("|")
    return parts if len(parts) == 4 else None


def set_state(jid, state, reason="None", nodes=None):
    old = job_state(jid) or ["", "None", "(null)", ""]
    write(path("jobs", jid), "%s|%s|%s|%s" % (state, reason, nodes or old[2], old[3]))


def expand(pattern, jid):
    """A --output pattern as Slurm reads it, left to right: %% is %, %j the job id (the
    other letters are left as they are; the tuner writes none)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "%" and i + 1 < len(pattern) and pattern[i + 1] in "%j":
            out.append("%" if pattern[i + 1] == "%" else jid)
            i += 2
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


def opt(args, name, default=None):
    for a in args:
        if a.startswith(name + "="):
            return a[len(name) + 1:]
    return default


def run_job(jid, script, out, restart, delay=0):
    """Runs the batch script in the background, in a session of its own, as the job
    (after delay seconds PENDING with reason BeginTime: sbatch --begin=now+N)."""
    pid = os.fork()
    if pid != 0:
        return
    os.setsid()
    nul = os.open(os.devnull, os.O_RDWR)  # let go of the caller's pipes
    for fd in (0, 1, 2):
        os.dup2(nul, fd)
    os.makedirs(path("pids"), exist_ok=True)
    write(path("pids", jid), str(os.getpid()))
    write(path("scripts", jid), "%s\n%s\n" % (script, out))
    if delay > 0:
        set_state(jid, "PENDING", "BeginTime")
        time.sleep(delay)
    set_state(jid, "RUNNING", "None", "fake1")
    env = dict(os.environ, SLURM_JOB_ID=jid, SLURM_JOBID=jid, SLURM_JOB_NODELIST="fake1")
    if restart > 0:  # as Slurm: set on a requeued run only, so an inherited one stays
        env["SLURM_RESTART_COUNT"] = str(restart)
    try:
        o = open(out, "a")
    except OSError:  # as Slurm: a job whose output cannot be opened fails
        set_state(jid, "FAILED")
        os._exit(0)
    with o, open(os.devnull) as n:
        rc = subprocess.call([script], stdin=n, stdout=o, stderr=o, env=env)
    cur = job_state(jid)
    if cur and cur[0] == "RUNNING" and read(path("pids", jid)).strip() == str(os.getpid()):
        set_state(jid, "COMPLETED" if rc == 0 else "FAILED")
    os._exit(0)


def sbatch(args):
    lie = os.path.exists(path("sbatch_lie"))
    if lie:
        os.remove(path("sbatch_lie"))
    fail = read(path("sbatch_fail"), None) if not lie else None
    if fail is not None:
        lines = fail.splitlines()
        rest = lines[1:]
        if rest:
            write(path("sbatch_fail"), "\n".join(rest) + "\n")
        else:
            os.remove(path("sbatch_fail"))
        sys.stderr.write((lines[0] if lines else "sbatch: error: failure") + "\n")
        return 1
    jid = read(path("next_id"), "1").strip() or "1"
    write(path("next_id"), str(int(jid) + 1))
    name = opt(args, "--job-name", "job")
    state = read(path("state"), "PENDING").strip() or "PENDING"
    os.makedirs(path("jobs"), exist_ok=True)
    write(path("jobs", jid), "%s|None|(null)|%s" % (state, name))
    script = args[-1]
    os.makedirs(path("scripts"), exist_ok=True)
    if os.path.exists(path("run")):
        out = expand(opt(args, "--output", "slurm-%j.out"), jid)
        begin = opt(args, "--begin", "")
        run_job(jid, script, out, 0, int(begin[4:]) if begin.startswith("now+") else 0)
    if lie:
        sys.stderr.write("sbatch: error: Batch job submission failed: Socket timed out on "
                         "send/recv operation\n")
        return 1
    sys.stdout.write(read(path("sbatch_stdout"), "%j\n").replace("%j", jid))
    return 0


def scontrol(args):
    if len(args) != 2 or args[0] != "requeue":
        sys.stderr.write("fakeslurm: scontrol only knows requeue ID\n")
        return 2
    jid = args[1]
    lines = read(path("scripts", jid)).splitlines()
    if len(lines) != 2:
        sys.stderr.write("scontrol: error: job %s is not running\n" % jid)
        return 1
    restart = int(read(path("restarts", jid), "0") or 0) + 1
    os.makedirs(path("restarts"), exist_ok=True)
    write(path("restarts", jid), str(restart))
    kill_job(jid)
    write(path("pids", jid), "")
    set_state(jid, "PENDING", "BeginTime")
    time.sleep(0.3)
    run_job(jid, lines[0], lines[1], restart)
    return 0


def squeue(args):
    if injected("squeue"):
        return 1
    ids = None
    for i, a in enumerate(args):
        if a in ("--jobs", "-j") and i + 1 < len(args):
            ids = args[i + 1].split(",")
        elif a.startswith("--jobs="):
            ids = a[7:].split(",")
    fmt = opt(args, "--format", "%i|%T|%r|%N|%S")
    name = opt(args, "--name")
    if name is not None:
        fail = take_line("squeue_name_fail")
        if fail is not None:
            sys.stderr.write(fail + "\n")
            return 1
    nodelist = read(path("nodelist"), None)
    listed = 0
    for jid in sorted(job_ids(), key=int):
        if ids is not None and jid not in ids:
            continue
        st = job_state(jid)
        if not st:
            continue
        if "--states=all" not in args and st[0] in TERMINAL:
            continue
        if name is not None and st[3] != name:
            continue
        line = fmt.replace("%i", jid).replace("%T", st[0]).replace("%r", st[1])
        line = line.replace("%N", nodelist.strip() if nodelist and st[2] != "(null)" else st[2]).replace("%j", st[3]).replace("%S", "N/A")
        sys.stdout.write(line + "\n")
        listed += 1
    if ids is not None and listed == 0:
        sys.stderr.write("slurm_load_jobs error: Invalid job id specified\n")
        return 1
    return 0


def kill_job(jid):
    pid = read(path("pids", jid)).strip()
    if pid:
        try:
            os.killpg(int(pid), signal.SIGTERM)
        except (ProcessLookupError, PermissionError, ValueError):
            pass


def scancel(args):
    if injected("scancel", once=True):
        return 1
    name = opt(args, "--name")
    targets = []
    if name:
        for jid in job_ids():
            st = job_state(jid)
            if st and st[3] == name:
                targets.append(jid)
    targets += [a for a in args if a.isdigit()]
    for jid in targets:
        st = job_state(jid)
        if st and st[0] not in TERMINAL:
            set_state(jid, "CANCELLED")
            kill_job(jid)
    return 0


def sinfo(args):
    if injected("sinfo"):
        return 1
    sys.stdout.write(read(path("sinfo"), "debug*|4|4000|(null)|3\n"))
    return 0


def srun(args):
    n = int(opt(args, "--ntasks", "1"))
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 1
    cmd = args[i:]
    procs = []
    for k in range(n):
        env = dict(os.environ, SLURM_PROCID=str(k), SLURM_LOCALID=str(k), SLURM_STEP_ID="0")
        ignore = os.path.exists(path("srun_sigchld_ignored"))
        pre = (lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN)) if ignore else None
        procs.append(subprocess.Popen(cmd, env=env, preexec_fn=pre))
    worst = 0
    for p in procs:
        rc = p.wait()
        worst = worst or rc
    return 1 if worst else 0


def main():
    if not D:
        sys.stderr.write("fakeslurm: FAKE_SLURM_DIR is not set\n")
        return 2
    name = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    log_call(name, args)
    commands = {"sbatch": sbatch, "squeue": squeue, "scancel": scancel, "sinfo": sinfo,
                "srun": srun, "scontrol": scontrol}
    if name not in commands:
        sys.stderr.write("fakeslurm: unknown command %s\n" % name)
        return 2
    return commands[name](args)


if __name__ == "__main__":
    sys.exit(main())
