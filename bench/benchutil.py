"""What the Python benchmarks share: the project's root, the machine's CPU for their
reports, and bench/.venv, where those that need a pinned package run.

Imported by the scripts beside it (bench/ is on sys.path when one of them runs).
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, "bench", ".venv")


def cpu_model():
    """The CPU's model name as lscpu says it, or "unknown CPU"."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown CPU"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def ensure_venv(script, package, version):
    """Re-executes script (the caller's __file__) in bench/.venv, first making the venv
    (with the system's site packages) and installing package==version there when they
    are not; returns at once when already running there."""
    py = os.path.join(VENV, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    name = os.path.basename(script)
    if not os.path.exists(py):
        print("%s: making %s" % (name, os.path.relpath(VENV, ROOT)), flush=True)
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", VENV],
                       check=True)
    got = subprocess.run([py, "-c", "import %s; print(%s.__version__)" % (package, package)],
                         capture_output=True, text=True).stdout.strip()
    if got != version:
        print("%s: installing %s==%s in %s" % (name, package, version,
                                                os.path.relpath(VENV, ROOT)), flush=True)
        subprocess.run([os.path.join(VENV, "bin", "pip"), "install", "-q",
                        "%s==%s" % (package, version)], check=True)
    os.execv(py, [py, os.path.abspath(script)] + sys.argv[1:])


def need(path, script):
    """Exits with an error and the build hint when the program at path is not there
    (script: the caller's name, e.g. "bo.py")."""
    if not os.path.exists(path):
        sys.exit("%s: error: %s not found\nhint: scripts/build.sh release" % (script, path))


def write_page(path, text, show=False):
    """Writes a benchmark's page to path (making its folder), prints it when show, and
    says where it went."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    if show:
        print(text)
    print("wrote %s" % os.path.relpath(path, ROOT))


def hypervolume2(points, ref):
    """The area the points dominate up to ref (two metrics, both minimised)."""
    pts = sorted(p for p in points if p[0] < ref[0] and p[1] < ref[1])
    volume, best = 0.0, ref[1]
    for a, b in pts:
        if b < best:
            volume += (ref[0] - a) * (best - b)
            best = b
    return volume
