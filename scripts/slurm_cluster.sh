#!/usr/bin/env bash
# A throw-away one-node SLURM cluster on localhost, run by hand (no systemd), for tests and demos.
#
#   scripts/slurm_cluster.sh start DIR   write DIR/slurm.conf, start munged, slurmctld, slurmd;
#                                        wait until the node is idle; print the two settings below
#   scripts/slurm_cluster.sh stop DIR    cancel the cluster's jobs, stop the daemons DIR's pid files name
#   scripts/slurm_cluster.sh status DIR  sinfo + squeue of that cluster
#
# Everything (config, munge key and socket, state, spool, logs, pid files) lives in DIR, so it
# never touches /etc/slurm, /etc/munge or a system cluster. Clients find it through
#   export SLURM_CONF=DIR/slurm.conf PATH=DIR/bin:$PATH
# DIR/bin/srun sets SLURM_CONF and runs the real srun: Snakemake's SLURM jobstep executor runs
# each job as `srun ...` inside the batch script with every SLURM_* variable but the job's ids
# removed from the environment, so without it that srun would look for /etc/slurm/slurm.conf.
# Ports: SLURMCTLD_PORT / SLURMD_PORT if set, else two free ports. Needs root (SlurmUser=root)
# and Debian's slurmctld slurmd slurm-client munge (scripts/install_slurm.sh).
# Settings, measured on Slurm 22.05 (DESIGN.md §5): auth/munge, proctrack/linuxproc, task/none,
# select/cons_tres with CR_Core_Memory (memory is a consumable, so --mem is scheduled), node
# CPUs/RealMemory from `slurmd -C` (this machine), no accounting (sacct has nothing: use
# `squeue` for job states; MinJobAge=86400 keeps finished jobs visible to squeue for a day:
# with 600 s, a DAG that took over 10 min on a loaded machine lost its first jobs from squeue,
# and 0, "never purge", reads as 2 s in 22.05),
# and jobacct_gather/linux with OverMemoryKill polling every second, so a job that uses more
# memory than it asked for is killed as on a real cluster (squeue: FAILED; its log: "exceeded
# memory limit").
set -euo pipefail

usage() { echo "usage: $0 start|stop|status DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)
conf=$dir/slurm.conf
export SLURM_CONF=$conf
PATH=$PATH:/usr/sbin:/sbin

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pid_of() {  # pid recorded in DIR/$1.pid if that process is alive
  local f=$dir/$1.pid
  [ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"
}

stop_pid() {  # TERM the daemon of DIR/$1.pid, wait up to 15 s, then KILL
  local pid
  pid=$(pid_of "$1") || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$dir/$1.pid"
}

write_config() {
  local host node ctld_port d_port
  host=$(hostname -s)
  # "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105"
  node=$(slurmd -C | head -1)
  node=${node/NodeName=$host/NodeName=$host NodeAddr=127.0.0.1}
  ctld_port=${SLURMCTLD_PORT:-$(free_port)}
  d_port=${SLURMD_PORT:-$(free_port)}
  while [ "$d_port" = "$ctld_port" ]; do d_port=$(free_port); done
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
  chmod 700 "$dir/munge"
  : >"$dir/plugstack.conf"
  mkdir -p "$dir/bin"
  local srun_path  # the real srun, not a wrapper already on PATH
  srun_path=$(PATH=$(tr : '\n' <<<"$PATH" | grep -vx "$dir/bin" | paste -sd:) && command -v srun)
  printf '#!/bin/sh\nSLURM_CONF=%s exec %s "$@"\n' "$conf" "$srun_path" >"$dir/bin/srun"
  chmod 755 "$dir/bin/srun"
  cat >"$conf" <<EOF
# One-node test cluster written by scripts/slurm_cluster.sh
ClusterName=tempoformer
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
PlugStackConfig=$dir/plugstack.conf
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill
MinJobAge=86400
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
$node State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  if pid_of slurmctld >/dev/null; then
    echo "slurm_cluster: already running in $dir" >&2
    echo "SLURM_CONF=$conf"; echo "PATH=$dir/bin:\$PATH"
    return 0
  fi
  for b in munged mungekey slurmctld slurmd sinfo srun; do
    command -v "$b" >/dev/null || { echo "slurm_cluster: $b not found (run scripts/install_slurm.sh)" >&2; exit 1; }
  done
  [ "$(id -u)" = 0 ] || { echo "slurm_cluster: must run as root (SlurmUser=root)" >&2; exit 1; }
  write_config
  [ -s "$dir/munge/munge.key" ] || mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null
  chmod 600 "$dir/munge/munge.key"
  munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/munged.seed"
  slurmctld -f "$conf"
  slurmd -f "$conf"
  # wait until the node accepts jobs
  for _ in $(seq 300); do
    state=$(sinfo -h -o %t 2>/dev/null | head -1 || true)
    case $state in idle|mix|alloc) echo "SLURM_CONF=$conf"; echo "PATH=$dir/bin:\$PATH"; return 0 ;; esac
    sleep 0.1
  done
  echo "slurm_cluster: node not ready after 30 s (state '${state:-none}'); logs in $dir" >&2
  tail -n 20 "$dir"/*.log >&2 || true
  stop
  exit 1
}

stop() {
  if pid_of slurmctld >/dev/null; then
    scancel --full --quiet --user=root 2>/dev/null || true
    for _ in $(seq 100); do  # let slurmd end the job steps it started
      [ -z "$(squeue -h -t RUNNING,COMPLETING 2>/dev/null || true)" ] && break
      sleep 0.1
    done
  fi
  stop_pid slurmd
  stop_pid slurmctld
  stop_pid munged
}

case $action in
  start) start ;;
  stop) stop ;;
  status) sinfo; squeue ;;
  *) usage ;;
esac
