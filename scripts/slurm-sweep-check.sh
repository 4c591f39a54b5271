#!/usr/bin/env bash
# Prove `railyard sweep --slurm --submit` on a real Slurm: Debian's slurmctld and slurmd
# (packages `slurmctld`, `slurmd`, `slurm-client`) on one node in a private network namespace.
#   1. runs the 12-cell grid locally (`railyard sweep GRID --out local`),
#   2. runs it as an sbatch array (`railyard sweep GRID --out slurm --slurm --submit`: one
#      task per cell, each `railyard sweep GRID --cell K --out slurm`) and waits for it,
#   3. merges the array's outputs (`railyard sweep merge slurm`) and checks every cell ran and
#      the merged table, JSON and HTML are byte-identical to the local run's.
#
# Usage: scripts/slurm-sweep-check.sh RAILYARD_BINARY [GRID]
#        (default GRID: crates/railyard/tests/fixtures/sweep/grid12.yaml)
# Needs root (the network namespace; the array runs as root under auth/none). Bounded: the
# whole check runs under `timeout 120`; on exit it stops the daemons it started and removes
# its files.
set -euo pipefail

railyard=$(realpath "$1")
grid=$(realpath "${2:-$(dirname "$0")/../crates/railyard/tests/fixtures/sweep/grid12.yaml}")

. "$(dirname "$0")/slurm-lib.sh"
slurm_need slurm-sweep-check "apt-get install slurmctld slurmd slurm-client iproute2" \
  slurmctld slurmd scontrol sbatch squeue sinfo unshare ip timeout
slurm_netns 120 "$0" "$railyard" "$grid"
slurm_workdir slurm-sweep-check

mkdir -p "$work/state" "$work/spool"
cpus=$(nproc)
cat >"$work/slurm.conf" <<EOF
ClusterName=railyard-sweep
SlurmctldHost=localhost(10.254.0.1)
SlurmctldPort=16827
SlurmdPort=16828
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=sweepnode NodeAddr=10.254.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$work/slurm.conf"

slurmctld -D -i -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 &
ctld_pid=$!
slurm_pids+=("$ctld_pid")
for _ in $(seq 100); do
  timeout 5 scontrol ping >/dev/null 2>&1 && break
  kill -0 "$ctld_pid" 2>/dev/null || fail "slurmctld exited: $(tail -3 "$work/slurmctld.out")"
  sleep 0.2
done
timeout 5 scontrol ping >/dev/null || fail "slurmctld does not answer"
slurmd -D -N sweepnode -f "$SLURM_CONF" >"$work/slurmd.out" 2>&1 &
slurmd_pid=$!
slurm_pids+=("$slurmd_pid")
state=""
for _ in $(seq 150); do
  state=$(timeout 5 sinfo -h -n sweepnode -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  kill -0 "$slurmd_pid" 2>/dev/null || fail "slurmd exited: $(tail -3 "$work/slurmd.out")"
  sleep 0.2
done
[ "$state" = idle ] || fail "node sweepnode is '$state', not idle"
echo "slurm: slurmctld and slurmd $(slurmd -V | cut -d' ' -f2) up, node sweepnode idle with $cpus CPUs"

# 1. Locally.
cd "$work"
"$railyard" sweep "$grid" --out "$work/local" >"$work/local.out" 2>&1 || fail "local sweep: $(tail -3 "$work/local.out")"
cells=$(grep -c '"cell":' "$work/local/sweep.json")
echo "local: $(tail -1 "$work/local.out")"

# 2. As an sbatch array.
"$railyard" sweep "$grid" --out "$work/slurm" --slurm --submit >"$work/submit.out" 2>&1 || fail "sweep --slurm --submit: $(cat "$work/submit.out")"
job=$(sed -n 's/^submitted batch job \([0-9]*\).*/\1/p' "$work/submit.out")
[ -n "$job" ] || fail "no job ID in: $(cat "$work/submit.out")"
grep -q "^#SBATCH --array=0-$((cells - 1))\$" "$work/slurm/sweep.sbatch" || fail "the script's array is not 0-$((cells - 1))"
for _ in $(seq 400); do
  [ -z "$(timeout 5 squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 0.2
done
[ -z "$(timeout 5 squeue -h -j "$job" 2>/dev/null)" ] || fail "array job $job still queued or running: $(squeue -h -j "$job" | head -3)"
ran=$(ls "$work/slurm/cells" | grep -c '^cell-.*\.json$' || true)
[ "$ran" = "$cells" ] || fail "the array wrote $ran of $cells cell outputs; logs: $(cat "$work"/slurm/logs/* 2>/dev/null | head -5)"
echo "slurm: array job $job ran $cells tasks, $cells cell outputs"

# 3. Merged: the same bytes.
"$railyard" sweep merge "$work/slurm" >"$work/merge.out" 2>&1 || fail "sweep merge: $(tail -3 "$work/merge.out")"
for f in table.txt merged.json report.html; do
  cmp -s "$work/local/$f" "$work/slurm/$f" || { diff -u "$work/local/$f" "$work/slurm/$f" | head -20 >&2; fail "$f differs between the local run and the Slurm array"; }
done
ok=$(grep -c ' ok ' "$work/local/table.txt" || true)
[ "$ok" = "$cells" ] || fail "$ok of $cells cells ok"
echo "merged: table.txt, merged.json, report.html byte-identical ($cells cells ok, $(wc -c <"$work/local/table.txt") bytes of table)"
echo "slurm-sweep-check: ok"
