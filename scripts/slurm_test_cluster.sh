#!/usr/bin/env bash
# A one-host Slurm cluster for the tests (issue 13 §4): munged, slurmctld and slurmd run directly (no
# systemd), every file in STATE_DIR, this host as the only node with 8 GPUs declared as GRES (no device
# GPUs: AutoDetect=off, /dev/null nodes as device files; the trials run engine stand-ins) and one partition `servelab` with MaxTime 10 min.
#   slurm_test_cluster.sh start STATE_DIR   writes the config, starts the daemons, waits until the node is idle
#   slurm_test_cluster.sh stop STATE_DIR    stops the daemons started by `start` (by their pid files)
# Clients find the cluster through SLURM_CONF=STATE_DIR/slurm.conf (written to STATE_DIR/env as well).
# Needs root (slurmd runs jobs as the submitting user) and Debian's slurm-wlm and munge (scripts/deps.sh).
set -euo pipefail
cmd="${1:?usage: slurm_test_cluster.sh start|stop STATE_DIR}"
DIR="${2:?usage: slurm_test_cluster.sh start|stop STATE_DIR}"

stop_one() {  # pid file, name: SIGTERM, then SIGKILL after 10 s
  local f="$1" pid
  [ -s "$f" ] || return 0
  pid="$(cat "$f")"
  kill "$pid" 2>/dev/null || { rm -f "$f"; return 0; }
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || { rm -f "$f"; return 0; }; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
}

if [ "$cmd" = stop ]; then
  [ -d "$DIR" ] || exit 0
  if [ -f "$DIR/slurm.conf" ]; then  # cancel what is left so slurmd's job steps end with it
    SLURM_CONF="$DIR/slurm.conf" timeout 10 scancel --user="$(id -un)" 2>/dev/null || true
  fi
  stop_one "$DIR/slurmd.pid"
  stop_one "$DIR/slurmctld.pid"
  stop_one "$DIR/munged.pid"
  echo "slurm test cluster: stopped ($DIR)"
  exit 0
fi
[ "$cmd" = start ] || { echo "unknown command '$cmd' (start|stop)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "slurm_test_cluster.sh: needs root (slurmd)" >&2; exit 2; }
for t in munged slurmctld slurmd sbatch; do
  command -v "$t" >/dev/null || { echo "slurm_test_cluster.sh: $t not found (make deps installs slurm-wlm, munge)" >&2; exit 2; }
done
rm -rf "$DIR"/{spool,state,munge,log}  # a fresh cluster: no jobs or node states of an earlier run
mkdir -p "$DIR"/{spool,state,munge,log}
chmod 755 "$DIR/munge"
HOST="$(hostname -s)"
CPUS="$(nproc)"
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
# Two TCP ports free now (the kernel's choice), for slurmctld and slurmd.
read -r CTLD_PORT SLURMD_PORT < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("", 0))
print(*[x.getsockname()[1] for x in s])')
dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$DIR/munge/munge.key"
cat > "$DIR/slurm.conf" <<CONF
# servelab's one-host test cluster (scripts/slurm_test_cluster.sh)
ClusterName=servelab-test
SlurmctldHost=$HOST
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/state/slurmctld.pid
SlurmdPidFile=$DIR/spool/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
# Quick turn-around for tests: the scheduler looks every second, a job's steps get 5 s between SIGTERM and
# SIGKILL, and finished jobs stay visible to squeue/scontrol for 5 min.
SchedulerParameters=sched_interval=1
KillWait=5
MinJobAge=300
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM_MB Gres=gpu:8 State=UNKNOWN
PartitionName=servelab Nodes=$HOST Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:8
CONF
# Slurm drops a GPU GRES without device files ("Removing file-less GPU"): eight character devices that are
# /dev/null (major 1, minor 3) stand in for /dev/nvidia0..7. No task/cgroup plugin constrains them.
mkdir -p "$DIR/dev"
for i in 0 1 2 3 4 5 6 7; do [ -c "$DIR/dev/gpu$i" ] || mknod "$DIR/dev/gpu$i" c 1 3; done
cat > "$DIR/gres.conf" <<CONF
AutoDetect=off
NodeName=$HOST Name=gpu Count=8 File=$DIR/dev/gpu[0-7]
CONF
echo "export SLURM_CONF=$DIR/slurm.conf" > "$DIR/env"
export SLURM_CONF="$DIR/slurm.conf"
# In the foreground of their own session, so that the pid files hold the pids this script started and no
# daemon keeps the caller's stdout open (ctest would wait for it).
daemon() {  # pid file, command...
  local f="$1"; shift
  setsid "$@" < /dev/null >> "$DIR/log/daemons.out" 2>&1 &
  echo $! > "$f"
}
daemon "$DIR/munged.pid" munged --foreground --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
  --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/seed" --force
for _ in $(seq 1 100); do [ -S "$DIR/munge/munge.socket" ] && break; sleep 0.05; done
daemon "$DIR/slurmctld.pid" slurmctld -D -i
daemon "$DIR/slurmd.pid" slurmd -D
state=""
for _ in $(seq 1 300); do
  state="$(timeout 5 sinfo -h -n "$HOST" -o %T 2>/dev/null || true)"
  case "$state" in idle*) echo "slurm test cluster: $HOST idle (conf $SLURM_CONF)"; exit 0 ;; esac
  for d in munged slurmctld slurmd; do
    kill -0 "$(cat "$DIR/$d.pid")" 2>/dev/null || { echo "slurm test cluster: $d exited" >&2; state="$d exited"; break 2; }
  done
  sleep 0.1
done
echo "slurm test cluster: $HOST not idle after 30 s (state '${state:-none}')" >&2
tail -n 20 "$DIR/log/slurmctld.log" "$DIR/log/slurmd.log" "$DIR/log/munged.log" >&2 || true
"$0" stop "$DIR" >&2
exit 1
