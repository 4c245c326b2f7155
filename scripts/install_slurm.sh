#!/usr/bin/env bash
# Install a one-node SLURM (Debian's slurmctld, slurmd, slurm-client, munge) for tests/test_slurm.py.
# Idempotent: does nothing when the binaries are already there. Needs root (or sudo) and apt.
set -euo pipefail
need=(slurmctld slurmd sbatch squeue scontrol munged)
missing=0
for b in "${need[@]}"; do
  command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || missing=1
done
if [ "$missing" = 0 ]; then
  echo "install_slurm: already installed (slurm-client $(dpkg-query -W -f '${Version}' slurm-client 2>/dev/null || echo "?"))"
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "install_slurm: need root or sudo" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
if ! { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends \
        slurmctld slurmd slurm-client munge; } >"$log" 2>&1; then
  cat "$log"; rm -f "$log"; echo "install_slurm: apt-get install failed" >&2; exit 1
fi
rm -f "$log"
echo "install_slurm: installed slurm-client $(dpkg-query -W -f '${Version}' slurm-client)"
