#!/bin/sh
# slurm-cluster.sh — a throw-away Slurm cluster on this one host, for tests and for
# trying the Slurm executor: one slurmctld and several slurmd daemons, each a node of
# its own (n1, n2, ...), from Debian 12's packages (scripts/install-deps.sh installs
# them). Every file it makes (config, state, spool, logs, PIDs) is under DIR; the
# daemons run in the foreground of background shells (no systemd) and are stopped by
# the PIDs recorded there, after the cluster's jobs are cancelled (job steps left
# behind by a failed run, and what the jobs started, are killed too; nothing else).
# Needs root (slurmd launches jobs as their users).
#
#   scripts/slurm-cluster.sh start [DIR] [--nodes=N] [--cpus=N] [--auth=none|munge]
#   scripts/slurm-cluster.sh stop [DIR]
#   scripts/slurm-cluster.sh status [DIR]
#
# DIR defaults to $TUNER_SLURM_DIR, else /tmp/tuner-slurm. `start` waits until every
# node is idle and prints `export SLURM_CONF=DIR/slurm.conf`, which every client
# command (sbatch, squeue, ...) needs: run `eval "$(scripts/slurm-cluster.sh start)"`.
# Nodes: --nodes (default 3) with --cpus each (default 4; more than the host has is
# fine, config_overrides). Partitions: `debug` (default, every node) and `small` (n1
# only). Auth: auth/none (default; no security, for test machines only) or munge.
# The cluster is an ordinary Slurm 22.05: docs/slurm.md, "A cluster on one host".
set -eu

die() { echo "slurm-cluster.sh: error: $1" >&2; [ $# -gt 1 ] && echo "hint: $2" >&2; exit "${EXIT:-1}"; }

cmd=${1:-}
[ -n "$cmd" ] || { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
shift
case "$cmd" in
  -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  start|stop|status) ;;
  *) EXIT=2 die "unknown command '$cmd' (start, stop or status)" "run 'scripts/slurm-cluster.sh --help'" ;;
esac

dir=${TUNER_SLURM_DIR:-/tmp/tuner-slurm}
nodes=3 cpus=4 auth=none
for a in "$@"; do
  case "$a" in
    --nodes=*) nodes=${a#--nodes=} ;;
    --cpus=*) cpus=${a#--cpus=} ;;
    --auth=*) auth=${a#--auth=} ;;
    -*) EXIT=2 die "unknown option '$a'" "run 'scripts/slurm-cluster.sh --help'" ;;
    *) dir=$a ;;
  esac
done
case "$nodes" in ''|*[!0-9]*) EXIT=2 die "--nodes must be a number, got '$nodes'" ;; esac
case "$cpus" in ''|*[!0-9]*) EXIT=2 die "--cpus must be a number, got '$cpus'" ;; esac
[ "$nodes" -ge 1 ] && [ "$nodes" -le 16 ] || EXIT=2 die "--nodes must be 1 to 16"
case "$auth" in none|munge) ;; *) EXIT=2 die "--auth must be none or munge, got '$auth'" ;; esac
case "$dir" in /*) ;; *) dir=$(pwd)/$dir ;; esac

# Stops the daemon whose PID is in file $1: SIGTERM, then SIGKILL after 5 s (a slurmd
# that never registered ignores SIGTERM).
stop_pid() {
  [ -f "$1" ] || return 0
  pid=$(cat "$1" 2>/dev/null || true)
  rm -f "$1"
  case "$pid" in ''|*[!0-9]*) return 0 ;; esac
  kill -TERM "$pid" 2>/dev/null || return 0
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "$pid" 2>/dev/null || true
}

# The job steps of this cluster's jobs, which outlive slurmd when it is stopped first,
# and what they ran, also what escaped Slurm's tracking (a daemon a job started): the
# processes whose environment has this cluster's SLURM_CONF and either a job's
# SLURM_JOB_ID or the name slurmstepd. Only those: a tuner, a shell or anything else
# started after `eval "$(... start)"` has the SLURM_CONF too, but is no job's.
cluster_steps() {
  for e in /proc/[0-9]*/environ; do
    p=${e#/proc/}
    p=${p%/environ}
    [ "$p" != "$$" ] || continue
    vars=$({ tr '\0' '\n' <"$e"; } 2>/dev/null) || continue
    printf '%s\n' "$vars" | grep -qx "SLURM_CONF=$dir/slurm.conf" || continue
    if printf '%s\n' "$vars" | grep -q '^SLURM_JOB_ID=' ||
      [ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmstepd ]; then
      echo "$p"
    fi
  done
}

stop_all() {
  # Jobs first, while the daemons can still end them cleanly (at most 5 s).
  if [ -f "$dir/slurm.conf" ] && [ -f "$dir/run/slurmctld.pid" ]; then
    ids=$(SLURM_CONF="$dir/slurm.conf" squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')
    if [ -n "$ids" ]; then
      # shellcheck disable=SC2086
      SLURM_CONF="$dir/slurm.conf" scancel $ids 2>/dev/null || true
      i=0
      while [ -n "$(SLURM_CONF="$dir/slurm.conf" squeue -h -o %A 2>/dev/null)" ] && [ $i -lt 50 ]; do
        sleep 0.1
        i=$((i + 1))
      done
    fi
  fi
  for f in "$dir"/run/slurmd-*.pid; do [ -e "$f" ] && stop_pid "$f"; done
  stop_pid "$dir/run/slurmctld.pid"
  stop_pid "$dir/run/munged.pid"
  left=$(cluster_steps)
  [ -n "$left" ] && kill -KILL $left 2>/dev/null
  return 0
}

if [ "$cmd" = stop ]; then
  [ -d "$dir/run" ] || { echo "slurm-cluster.sh: no cluster in $dir"; exit 0; }
  stop_all
  echo "slurm-cluster.sh: stopped the cluster in $dir"
  exit 0
fi

if [ "$cmd" = status ]; then
  [ -f "$dir/slurm.conf" ] || EXIT=1 die "no cluster in $dir" "start one with 'scripts/slurm-cluster.sh start $dir'"
  SLURM_CONF=$dir/slurm.conf sinfo -N -o '%N %T %c %P'
  exit $?
fi

# ---- start ----
[ "$(id -u)" -eq 0 ] || EXIT=77 die "starting slurmd needs root" "run as root (the test suite skips the Slurm tests otherwise)"
for p in slurmctld slurmd sbatch squeue sinfo scontrol; do
  command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] ||
    EXIT=77 die "$p is not installed" "run scripts/install-deps.sh (packages slurmctld slurmd slurm-client)"
done
if [ "$auth" = munge ]; then
  command -v munged >/dev/null 2>&1 || [ -x /usr/sbin/munged ] ||
    EXIT=77 die "munged is not installed" "install the munge package, or use --auth=none"
fi
if [ -d "$dir/run" ]; then
  for f in "$dir"/run/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
      die "a cluster is already running in $dir (pid $pid)" "stop it with 'scripts/slurm-cluster.sh stop $dir'"
  done
fi
# DIR is wiped and made anew: only a folder this script made (it has the marker), an
# empty one, or none; never, say, a home directory given by mistake.
if [ -e "$dir" ] && [ ! -e "$dir/.tuner-slurm-cluster" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  EXIT=2 die "$dir is not empty and is not a cluster folder of this script" "give a new or empty folder"
fi
rm -rf "$dir"
mkdir -p "$dir/run" "$dir/log" "$dir/state" "$dir/spool"
: >"$dir/.tuner-slurm-cluster"
chmod 755 "$dir"

# nodes+1 consecutive free TCP ports (slurmctld, then one per slurmd) and a range of 200
# for MpiParams=ports (srun --resv-ports).
ports=$(python3 - "$nodes" <<'EOF'
import random, socket, sys
need = int(sys.argv[1]) + 1
def free(lo, n):
    socks = []
    try:
        for p in range(lo, lo + n):
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("0.0.0.0", p)); socks.append(s)
        return True
    except OSError:
        return False
    finally:
        for s in socks: s.close()
rng = random.Random()
for _ in range(500):
    a = rng.randrange(20000, 30000)
    b = rng.randrange(30000, 40000)
    if free(a, need) and free(b, 200):
        print(a, b); break
else:
    sys.exit("no free port range")
EOF
) || die "cannot find free ports"
set -- $ports
ctl_port=$1 mpi_lo=$2
node_lo=$((ctl_port + 1)) node_hi=$((ctl_port + nodes))
host=$(hostname -s)

auth_lines="AuthType=auth/none
CredType=cred/none"
if [ "$auth" = munge ]; then
  mkdir -p "$dir/munge"
  chmod 711 "$dir/munge"
  mungekey -c -f -k "$dir/munge/munge.key" >/dev/null 2>&1 ||
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
  chmod 400 "$dir/munge/munge.key"
  auth_lines="AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket"
fi

cat >"$dir/slurm.conf" <<EOF
# A throw-away cluster made by scripts/slurm-cluster.sh; everything under $dir.
ClusterName=tuner
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmUser=root
SlurmdUser=root
$auth_lines
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pidfile
SlurmdPidFile=$dir/run/slurmd-%n.pidfile
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=3600
KillWait=3
MessageTimeout=5
MailProg=/bin/true
MpiDefault=none
MpiParams=ports=$mpi_lo-$((mpi_lo + 199))
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
NodeName=n[1-$nodes] NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=4000 Port=[$node_lo-$node_hi] State=UNKNOWN
PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP
PartitionName=small Nodes=n1 MaxTime=INFINITE State=UP
EOF
[ "$nodes" -ge 2 ] || sed -i "s/^NodeName=n\[1-1\]/NodeName=n1/;s/Nodes=n\[1-1\]/Nodes=n1/;s/Port=\[$node_lo-$node_hi\]/Port=$node_lo/" "$dir/slurm.conf"
export SLURM_CONF="$dir/slurm.conf"

# Starts "$@" in the background, its output in log file $1, its PID in pid file $2.
spawn() {
  log=$1 pidf=$2
  shift 2
  "$@" >"$log" 2>&1 &
  echo $! >"$pidf"
}

if [ "$auth" = munge ]; then
  spawn "$dir/log/munged.out" "$dir/run/munged.pid" munged -F --force \
    --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pidfile" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed"
  i=0
  while [ ! -S "$dir/munge/munge.socket" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  [ -S "$dir/munge/munge.socket" ] || { stop_all; die "munged did not start (see $dir/log/munged.log)"; }
fi

spawn "$dir/log/slurmctld.out" "$dir/run/slurmctld.pid" /usr/sbin/slurmctld -D -i -f "$SLURM_CONF"
n=1
while [ $n -le "$nodes" ]; do
  spawn "$dir/log/slurmd-n$n.out" "$dir/run/slurmd-n$n.pid" /usr/sbin/slurmd -D -N "n$n" -f "$SLURM_CONF"
  n=$((n + 1))
done

# Wait until every node is idle (at most 60 s).
i=0
while :; do
  idle=$(sinfo -h -N -p debug -t idle -o '%N' 2>/dev/null | sort -u | wc -l || echo 0)
  [ "$idle" -ge "$nodes" ] && break
  for f in "$dir"/run/*.pid; do
    pid=$(cat "$f")
    kill -0 "$pid" 2>/dev/null && continue
    name=$(basename "$f" .pid)
    stop_all
    die "$name exited at start (see $dir/log/$name.out and $dir/log/$name.log)"
  done
  i=$((i + 1))
  if [ $i -ge 600 ]; then
    stop_all
    die "the nodes did not become idle within 60 s (see $dir/log/)"
  fi
  sleep 0.1
done
echo "# slurm-cluster.sh: $nodes node(s) idle in $dir; stop with: scripts/slurm-cluster.sh stop $dir" >&2
echo "export SLURM_CONF=$SLURM_CONF"
