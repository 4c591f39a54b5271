#!/usr/bin/env bash
# Prove railyard's Slurm export against the real consumer: Debian's slurmctld (packages
# `slurmctld`, `slurm-client`). For each preset it
#   1. writes topology.conf with `railyard topo export --format slurm` and a slurm.conf whose node
#      lines are the nodes of that file (State=IDLE, no slurmd anywhere),
#   2. starts slurmctld in a private network namespace that has nothing but loopback,
#   3. checks that `scontrol show topology` reports exactly railyard's switch tree (every
#      switch, its level, its child switches and the nodes below it), and
#   4. for gangs of 1, L/2, L and L+1 whole nodes (L = nodes under the largest leaf) checks that
#      `sbatch --test-only -N n --switches=1` finds room under one leaf exactly when
#      `railyard place` says the gang fits in one leaf domain.
#
# Usage: scripts/slurm-check.sh RAILYARD_BINARY [PRESET…]   (default: fat-tree-k8 oci-h100-16k
#        oci-gb200-nvl72-4k)
# Needs root (for the network namespace). Bounded: slurmctld and every client call run under
# `timeout`; on exit the script stops the slurmctld it started and removes its files.
set -euo pipefail

railyard=$(realpath "$1")
shift
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(fat-tree-k8 oci-h100-16k oci-gb200-nvl72-4k)

. "$(dirname "$0")/slurm-lib.sh"
slurm_need slurm-check "apt-get install slurmctld slurm-client" slurmctld scontrol sbatch unshare ip timeout
slurm_netns 600 "$0" "$railyard" "${presets[@]}"
slurm_workdir slurm-check

# Expand a Slurm hostlist (or comma list) into one name per line, with Slurm's own parser.
expand() { SLURM_CONF="$work/slurm.conf" timeout 10 scontrol show hostnames "$1"; }

check_preset() {
  local preset=$1
  rm -rf "${work:?}"/*
  mkdir -p "$work/state" "$work/spool"
  "$railyard" topo export --cluster "preset:$preset" --format slurm >"$work/topology.conf"

  # railyard's tree: children, direct nodes.
  declare -A kids=() direct=() level=() allnodes=()
  local order=() line name rest
  while read -r line; do
    case "$line" in '#'* | '') continue ;; esac
    name=$(sed -n 's/^SwitchName=\([^ ]*\).*/\1/p' <<<"$line")
    [ -n "$name" ] || fail "$preset: unexpected line in topology.conf: $line"
    order+=("$name")
    rest=$(sed -n 's/.* Switches=\([^ ]*\).*/\1/p' <<<"$line")
    kids[$name]=$rest
    direct[$name]=$(sed -n 's/.* Nodes=\([^ ]*\).*/\1/p' <<<"$line")
  done <"$work/topology.conf"

  # slurm.conf: a minimal controller, the nodes of topology.conf, one partition.
  cat >"$work/slurm.conf" <<EOF
ClusterName=railyard
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/none
CredType=cred/none
SlurmUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmctldLogFile=$work/slurmctld.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/linear
TopologyPlugin=topology/tree
ReturnToService=2
SlurmdTimeout=0
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
EOF
  local leaves=0 largest=0 n s
  for s in "${order[@]}"; do
    if [ -n "${direct[$s]}" ]; then
      leaves=$((leaves + 1))
      n=$(expand "${direct[$s]}" | tee "$work/leaf.$s" | wc -l)
      [ "$n" -gt "$largest" ] && largest=$n
    fi
  done
  cat "$work"/leaf.* | sort -u >"$work/nodes"
  sed 's/.*/NodeName=& NodeAddr=127.0.0.1 CPUs=1 State=IDLE/' "$work/nodes" >>"$work/slurm.conf"
  echo "PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$work/slurm.conf"

  # Levels and node sets of railyard's switches: leaves 0, a parent one above its highest child.
  local changed=1 k lv max ok
  for s in "${order[@]}"; do
    if [ -n "${direct[$s]}" ]; then
      level[$s]=0
      allnodes[$s]=$(sort "$work/leaf.$s" | tr '\n' ' ')
    fi
  done
  while [ $changed = 1 ]; do
    changed=0
    for s in "${order[@]}"; do
      [ -z "${level[$s]:-}" ] || continue
      max=-1 ok=1
      for k in ${kids[$s]//,/ }; do
        lv=${level[$k]:-}
        [ -n "$lv" ] || { ok=0; break; }
        [ "$lv" -gt "$max" ] && max=$lv
      done
      [ $ok = 1 ] || continue
      level[$s]=$((max + 1))
      allnodes[$s]=$(for k in ${kids[$s]//,/ }; do tr ' ' '\n' <<<"${allnodes[$k]}"; done | sed '/^$/d' | sort -u | tr '\n' ' ')
      changed=1
    done
  done
  for s in "${order[@]}"; do
    [ -n "${level[$s]:-}" ] || fail "$preset: switch $s is in a cycle or names an unknown switch"
    printf '%s level=%s switches=%s nodes=%s\n' "$s" "${level[$s]}" \
      "$(tr ',' '\n' <<<"${kids[$s]}" | sed '/^$/d' | sort | tr '\n' ' ')" "${allnodes[$s]}"
  done | sort >"$work/expected"

  # Start the controller and wait until it answers.
  SLURM_CONF="$work/slurm.conf" timeout 300 slurmctld -D -i -f "$work/slurm.conf" >"$work/slurmctld.out" 2>&1 &
  ctld_pid=$!
  slurm_pids+=("$ctld_pid")
  for _ in $(seq 100); do
    SLURM_CONF="$work/slurm.conf" timeout 5 scontrol ping >/dev/null 2>&1 && break
    kill -0 "$ctld_pid" 2>/dev/null || fail "$preset: slurmctld exited: $(tail -3 "$work/slurmctld.out")"
    sleep 0.2
  done
  SLURM_CONF="$work/slurm.conf" timeout 10 scontrol ping >/dev/null || fail "$preset: slurmctld does not answer"

  # What Slurm understood.
  SLURM_CONF="$work/slurm.conf" timeout 30 scontrol show topology >"$work/shown.txt"
  while read -r line; do
    [ -n "$line" ] || continue
    name=$(sed -n 's/^SwitchName=\([^ ]*\).*/\1/p' <<<"$line")
    lv=$(sed -n 's/.* Level=\([0-9]*\).*/\1/p' <<<"$line")
    k=$(sed -n 's/.* Switches=\([^ ]*\).*/\1/p' <<<"$line")
    n=$(sed -n 's/.* Nodes=\([^ ]*\).*/\1/p' <<<"$line")
    printf '%s level=%s switches=%s nodes=%s\n' "$name" "$lv" \
      "$( [ -z "$k" ] || expand "$k" | sort | tr '\n' ' ')" \
      "$( [ -z "$n" ] || expand "$n" | sort | tr '\n' ' ')"
  done <"$work/shown.txt" | sort >"$work/actual"
  if ! diff -u "$work/expected" "$work/actual" >"$work/diff"; then
    head -20 "$work/diff" >&2
    fail "$preset: scontrol show topology differs from railyard's topology.conf"
  fi
  local switches
  switches=$(wc -l <"$work/expected")
  echo "$preset: scontrol show topology = railyard's tree: $switches switches, $leaves leaves, $(wc -l <"$work/nodes") nodes"
  sed -n '1p;$p' "$work/shown.txt" | cut -c1-160 | sed 's/^/  scontrol: /'

  # Gangs: railyard's verdict against sbatch --test-only --switches=1.
  local json leaf_label gpus nodes_total
  json=$("$railyard" topo show --cluster "preset:$preset" --output json)
  leaf_label=$(sed -n '/"tier": 0,/{n;s/.*"level": "\([^"]*\)".*/\1/p}' <<<"$json")
  gpus=$(sed -n 's/^  "gpus": \([0-9]*\),/\1/p' <<<"$json")
  nodes_total=$(sed -n 's/^  "nodes": \([0-9]*\),/\1/p' <<<"$json")
  [ -n "$leaf_label" ] && [ -n "$gpus" ] || fail "$preset: cannot read topo show"
  local per_node=$((gpus / nodes_total)) size rail slurm verdict_r verdict_s picked
  for size in 1 $((largest / 2)) "$largest" $((largest + 1)); do
    [ "$size" -ge 1 ] || continue
    printf 'name: gang-%s\npod_sets:\n  - {count: %s, gpus: %s, topology: {required: %s}}\n' \
      "$size" "$size" "$per_node" "$leaf_label" >"$work/job.yaml"
    if rail=$("$railyard" place --cluster "preset:$preset" --job "$work/job.yaml" --output json 2>&1); then
      grep -q '"placed": true' <<<"$rail" && verdict_r=fits || verdict_r=waits
    elif grep -q "can never be placed" <<<"$rail"; then
      verdict_r=never
    else
      fail "$preset: railyard place -N $size: $rail"
    fi
    slurm=$(SLURM_CONF="$work/slurm.conf" timeout 30 sbatch --test-only -N "$size" --switches=1 --wrap true 2>&1 || true)
    if picked=$(sed -n 's/.* on nodes \([^ ]*\) in partition.*/\1/p' <<<"$slurm") && [ -n "$picked" ]; then
      verdict_s=fits
      # Slurm's nodes must lie under one of railyard's leaves.
      expand "$picked" | sort >"$work/picked"
      ok=0
      for s in "${order[@]}"; do
        [ -n "${direct[$s]}" ] || continue
        if [ -z "$(comm -23 "$work/picked" <(sort "$work/leaf.$s"))" ]; then ok=1; break; fi
      done
      [ $ok = 1 ] || fail "$preset: -N $size: slurm picked $picked, not under one railyard leaf"
    elif grep -q "Requested node configuration is not available" <<<"$slurm"; then
      verdict_s=never
    else
      fail "$preset: sbatch --test-only -N $size --switches=1: $slurm"
    fi
    [ "$verdict_r" = "$verdict_s" ] || fail "$preset: -N $size: railyard says $verdict_r, slurm says $verdict_s ($slurm)"
    echo "  -N $size --switches=1: railyard $verdict_r, slurm $verdict_s${picked:+ (on $picked)}"
  done

  slurm_stop
}

for p in "${presets[@]}"; do
  check_preset "$p"
done
echo "slurm-check: ok"
