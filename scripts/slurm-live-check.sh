#!/usr/bin/env bash
# Prove `--cluster slurm:` and `--state slurm:` against a real Slurm: Debian's slurmctld and a
# slurmd (packages `slurmctld`, `slurmd`, `slurm-client`), in a private network namespace with
# nothing but loopback. It
#   1. starts slurmctld and one slurmd (node n1; n2-n4 are configured IDLE with no slurmd, as
#      in scripts/slurm-check.sh), a tree topology s1 = n[1-2], s2 = n[3-4] under `top`, and
#      8 GPUs per node (gres.conf naming eight stand-in files; no GPU is used);
#   2. runs a job holding n1's 8 GPUs (`sleep`) and waits until squeue shows it RUNNING;
#   3. asks `railyard place --cluster slurm: --state slurm:` for a 2-node gang of 8 GPUs each
#      under one leaf switch: n1 is busy, so the answer must be n[3-4] (without the state it is
#      n[1-2]), as the node list `sbatch --nodelist` takes;
#   4. checks that `sbatch --test-only --nodelist=… -N 2 --gres=gpu:8` accepts that list; and
#   5. checks that the answer from the files `--dump` wrote is the same, byte for byte.
#
# Usage: scripts/slurm-live-check.sh RAILYARD_BINARY
# Needs root (network namespace, slurmd). Bounded: everything runs under `timeout`; on exit the
# script stops the daemons it started and removes its files.
set -euo pipefail

railyard=$(realpath "$1")

. "$(dirname "$0")/slurm-lib.sh"
slurm_need slurm-live-check "apt-get install slurmctld slurmd slurm-client" \
  slurmctld slurmd scontrol sbatch squeue sinfo unshare ip timeout
slurm_netns 300 "$0" "$railyard"
slurm_workdir slurm-live-check

mkdir -p "$work/state" "$work/spool"
export SLURM_CONF="$work/slurm.conf"
cat >"$work/slurm.conf" <<EOF
ClusterName=railyard
SlurmctldHost=localhost(127.0.0.1)
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
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
TopologyPlugin=topology/tree
GresTypes=gpu
ReturnToService=2
SlurmdTimeout=0
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
NodeName=n[1-4] NodeAddr=127.0.0.1 CPUs=2 Gres=gpu:8 State=IDLE
PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
# Eight stand-in character devices (/dev/null's numbers): Debian's slurmd counts no GPU without a device File.
for i in 0 1 2 3 4 5 6 7; do mknod "$work/gpu$i" c 1 3; done
printf 'Name=gpu File=%s/gpu[0-7]\n' "$work" >"$work/gres.conf"
printf 'SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-4]\nSwitchName=top Switches=s[1-2]\n' >"$work/topology.conf"

timeout 280 slurmctld -D -i -f "$work/slurm.conf" >"$work/slurmctld.out" 2>&1 &
slurm_pids+=($!)
for _ in $(seq 100); do
  timeout 5 scontrol ping >/dev/null 2>&1 && break
  sleep 0.2
done
timeout 10 scontrol ping >/dev/null || fail "slurmctld does not answer: $(tail -3 "$work/slurmctld.out")"
timeout 280 slurmd -D -N n1 -f "$work/slurm.conf" >"$work/slurmd.out" 2>&1 &
slurm_pids+=($!)

# A job holding n1's GPUs, running on the slurmd.
job_id=$(timeout 30 sbatch --parsable -w n1 -N 1 --gres=gpu:8 -o /dev/null --wrap "sleep 250") || fail "sbatch of the running job failed"
state=""
for _ in $(seq 150); do
  state=$(timeout 5 squeue -h -j "$job_id" -o %T 2>/dev/null || true)
  [ "$state" = RUNNING ] && break
  sleep 0.2
done
[ "$state" = RUNNING ] || fail "job $job_id is not running (state: ${state:-none}): $(tail -3 "$work/slurmd.out")"
echo "running job $job_id on n1 with gres/gpu=8"

printf 'name: gang\npod_sets:\n  - {count: 2, gpus: 8, topology: {required: railyard/slurm-switch-1}}\n' >"$work/job.yaml"
shape=BM.GPU.H100.8

idle=$("$railyard" place -q --cluster slurm: --shape "$shape" --job "$work/job.yaml") || fail "railyard place without state: $idle"
grep -qx 'sbatch --nodelist=n\[1-2\]' <<<"$idle" || fail "without the state the gang should land on n[1-2]: $idle"

live=$("$railyard" place -q --cluster slurm: --shape "$shape" --state slurm: --job "$work/job.yaml" --dump "$work/dump") ||
  fail "railyard place --cluster slurm: --state slurm: $live"
nodelist=$(sed -n 's/^sbatch --nodelist=//p' <<<"$live")
[ "$nodelist" = 'n[3-4]' ] || fail "n1 is busy: the gang should land on n[3-4], railyard said: $live"
echo "railyard place --cluster slurm: --state slurm: → --nodelist=$nodelist"

slurm=$(timeout 30 sbatch --test-only --nodelist="$nodelist" -N 2 --gres=gpu:8 --wrap true 2>&1) ||
  fail "sbatch --test-only --nodelist=$nodelist refused: $slurm"
grep -q "to start at" <<<"$slurm" || fail "sbatch --test-only --nodelist=$nodelist: $slurm"
echo "  sbatch --test-only: ${slurm#sbatch: }"

# Byte for byte: the placement file (`-o json`) from Slurm now and from the dumped files.
live_json=$("$railyard" place -q --cluster slurm: --shape "$shape" --state slurm: --job "$work/job.yaml" -o json) ||
  fail "railyard place -o json: $live_json"
replayed=$("$railyard" place -q --cluster "$work/dump/topology.conf" --shape "$shape" --state "$work/dump/state.json" --job "$work/job.yaml" -o json) ||
  fail "railyard place on the dumped files: $replayed"
[ "$live_json" = "$replayed" ] || fail "the live answer and the dumped files' answer differ: $(diff <(echo "$live_json") <(echo "$replayed"))"
grep -q '"node": "n1"' "$work/dump/state.json" || fail "the dumped state does not hold the running job on n1: $(cat "$work/dump/state.json")"
echo "  the dumped files (topology.conf, state.json) give the same placement file, byte for byte"
echo "slurm-live-check: ok"
