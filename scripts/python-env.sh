#!/bin/sh
# python-env.sh — make (or check) the Python virtual environment the example trial
# programs in examples/ run in (docs/examples.md). Idempotent: a venv that already has
# the pinned packages is left as it is, without asking PyPI anything.
#
#   scripts/python-env.sh [VENV_DIR]                the PyTorch example's venv
#                                                   (default build/venv-examples)
#   scripts/python-env.sh --tensorflow [VENV_DIR]   the Keras example's venv
#                                                   (default build/venv-tensorflow)
#
# PyTorch: a venv over Debian's Python with --system-site-packages, so that Debian's
# python3-torch (1.13) and python3-numpy (1.x) are seen, plus cloudml-hypertune from
# PyPI. Nothing else is installed into it: a NumPy 2 from pip would break that torch.
# TensorFlow: a venv of its own (no system packages) with tensorflow, tf_keras and
# cloudml-hypertune from PyPI (a 570 MB download, 2.2 GB installed). Not tensorflow-cpu:
# tf_keras depends on the package named tensorflow and would bring it in as well.
#
# PYTHON names the interpreter to build on (default /usr/bin/python3, Debian's; a
# pyenv or /usr/local Python does not see Debian's torch). The last line printed is the
# venv's bin/ folder; put it first on PATH so that the specs' "python3" is the venv's.
# Exit status: 0 ready; 3 something from outside is missing (python3-venv, or PyPI
# cannot be reached or does not have the pinned version), with the reason on stderr;
# 2 usage; 1 anything else.
set -eu

HYPERTUNE_PIN="cloudml-hypertune==0.1.0.dev6"
TENSORFLOW_PINS="tensorflow==2.21.0 tf_keras==2.21.0"

me="python-env.sh"
die() { code=$1; shift; echo "$me: error: $*" >&2; exit "$code"; }

flavour=torch
case "${1:-}" in
  --tensorflow) flavour=tensorflow; shift ;;
  -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) die 2 "unknown option '$1' (see --help)" ;;
esac
[ $# -le 1 ] || die 2 "too many arguments (see --help)"
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "$flavour" = torch ]; then
  venv=${1:-$root/build/venv-examples}
  pins=$HYPERTUNE_PIN
  venv_opts=--system-site-packages
else
  venv=${1:-$root/build/venv-tensorflow}
  pins="$TENSORFLOW_PINS $HYPERTUNE_PIN"
  venv_opts=
fi

python=${PYTHON:-}
if [ -z "$python" ]; then
  if [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; else python=python3; fi
fi
command -v "$python" >/dev/null 2>&1 || die 3 "no Python at '$python' (apt-get install python3)"

# Which of the pins the venv lacks (all of them when it has no working Python).
missing_pins() {
  "$venv/bin/python" - "$@" <<'EOF' 2>/dev/null || echo "$@"
import sys
from importlib import metadata
def norm(n): return n.lower().replace("_", "-")
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    try:
        ok = metadata.version(norm(name)) == version
    except metadata.PackageNotFoundError:
        ok = False
    if not ok:
        print(pin)
EOF
}

if [ -x "$venv/bin/python" ] && ! "$venv/bin/python" -c 'pass' 2>/dev/null; then
  # a venv whose base Python is gone or was upgraded: make it again
  [ -f "$venv/pyvenv.cfg" ] || die 1 "$venv is not a venv (no pyvenv.cfg); give another folder"
  echo "$me: $venv no longer runs; making it again" >&2
  rm -rf "$venv"
fi
if [ ! -x "$venv/bin/python" ]; then
  if [ -e "$venv" ] && [ -n "$(ls -A "$venv" 2>/dev/null)" ]; then
    die 1 "$venv exists and is not a venv; give another folder"
  fi
  "$python" -c 'import ensurepip, venv' 2>/dev/null ||
    die 3 "$python cannot make a venv: its venv/ensurepip modules are missing (apt-get install python3-venv)"
  echo "$me: making $venv ($python $venv_opts)" >&2
  mkdir -p "$(dirname "$venv")"
  # shellcheck disable=SC2086
  "$python" -m venv $venv_opts "$venv" >&2 || die 1 "$python -m venv $venv failed"
fi

# shellcheck disable=SC2086
todo=$(missing_pins $pins | tr '\n' ' ')
todo=${todo% }
if [ -n "$todo" ]; then
  echo "$me: installing from PyPI: $todo" >&2
  log="$venv/pip-install.log"
  # shellcheck disable=SC2086
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check --retries 2 \
      --timeout 30 $todo >"$log" 2>&1; then
    tail -n 5 "$log" >&2
    die 3 "pip could not install $todo (is PyPI reachable? a mirror goes in PIP_INDEX_URL); the whole output is in $log"
  fi
  # shellcheck disable=SC2086
  left=$(missing_pins $pins)
  [ -z "$left" ] || die 1 "after pip install, $venv still lacks: $left"
fi

# What the programs will see. Debian's torch 1.13 breaks under NumPy 2.
"$venv/bin/python" - "$flavour" <<'EOF' >&2 || exit 1
import sys
from importlib import metadata
flavour = sys.argv[1]
def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
numpy = version("numpy")
line = "python %s, cloudml-hypertune %s, numpy %s" % (
    sys.version.split()[0], version("cloudml-hypertune"), numpy)
if flavour == "torch":
    try:
        import torch
        line += ", torch %s (%s)" % (torch.__version__, torch.__file__.rsplit("/", 2)[0])
        if torch.__version__.startswith("1.") and numpy and int(numpy.split(".")[0]) >= 2:
            sys.exit("python-env.sh: error: torch %s needs NumPy 1.x but the venv has NumPy %s "
                     "(pip installed it into the venv?): %s/bin/pip uninstall numpy" %
                     (torch.__version__, numpy, sys.prefix))
    except ImportError:
        line += ", torch: not installed (apt-get install python3-torch)"
else:
    line += ", tensorflow %s, tf_keras %s" % (version("tensorflow"), version("tf_keras"))
print("python-env.sh: " + line)
EOF
echo "$venv/bin"
