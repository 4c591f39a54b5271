#!/usr/bin/env bash
# Growth benchmark (issue 14): wall time, CPU time and peak RSS of `railyard simulate` on seeded
# synthetic traces (sim::synthetic: sizes 1–512 GPUs, log-normal durations, Poisson arrivals at
# 80% offered load unless LOAD says otherwise), network on and off, per cluster and job count.
#
# Usage: scripts/growth-bench.sh [OUT.tsv] — sizes, clusters and seed from the environment:
#   SIZES="1000 3000 10000" CLUSTERS="oci-h100-16k oci-h100-131k" SEED=1 NETWORK="on off"
#   ROUND=60 (simulate --network-round-s; default 0: link sharing re-solved on every change)
#   LOAD=0.6 (offered load, a share of the cluster's GPUs; default 0.8)
# Needs GNU time (/usr/bin/time -v). Builds in release first. Runs under `nice -n 5`.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-growth.tsv}
SIZES=${SIZES:-"1000 3000 10000"}
CLUSTERS=${CLUSTERS:-"oci-h100-16k oci-h100-131k"}
SEED=${SEED:-1}
NETWORK=${NETWORK:-"on off"}
ROUND=${ROUND:-0}
LOAD=${LOAD:-0.8}
cargo build --release -q -p railyard
cargo build --release -q -p sim --example synthetic_trace
BIN=target/release/railyard
GEN=target/release/examples/synthetic_trace
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
printf 'cluster\tload\tjobs\tnetwork\tround_s\twall_s\tcpu_s\tpeak_rss_mib\tavg_network_slowdown\tavg_wait_s\n' | tee "$OUT"
for cluster in $CLUSTERS; do
  gpus=$("$BIN" -q topo show --cluster "preset:$cluster" --output json |
    sed -n 's/.*"gpus": *\([0-9]*\).*/\1/p' | head -1)
  for jobs in $SIZES; do
    for net in $NETWORK; do
      "$GEN" "$jobs" "$SEED" "$gpus" "$net" "$LOAD" > "$TMP/trace.csv"
      /usr/bin/time -v -o "$TMP/time" nice -n 5 "$BIN" -q simulate --cluster "preset:$cluster" \
        --trace "$TMP/trace.csv" --network-round-s "$ROUND" --output json > "$TMP/out.json"
      wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$TMP/time" |
        awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
      user=$(sed -n 's/.*User time (seconds): //p' "$TMP/time")
      sys=$(sed -n 's/.*System time (seconds): //p' "$TMP/time")
      rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$TMP/time")
      slow=$(sed -n 's/.*"avg_network_slowdown": *\([0-9.e+-]*\).*/\1/p' "$TMP/out.json" | head -1)
      wait=$(sed -n 's/.*"avg_wait_s": *\([0-9.e+-]*\).*/\1/p' "$TMP/out.json" | head -1)
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.1f\t%s\t%.0f\n' "$cluster" "$LOAD" "$jobs" "$net" "$ROUND" "$wall" \
        "$(echo "$user + $sys" | bc)" "$(echo "$rss / 1024" | bc -l)" "$slow" "$wait" | tee -a "$OUT"
    done
  done
done
