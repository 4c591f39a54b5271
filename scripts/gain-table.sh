#!/usr/bin/env bash
# Gain table of network-aware placement (issue 15): avg and p99 JCT of multi-node jobs, GPU
# utilisation and network slowdown for fifo and best-effort, each with no topology request,
# `preferred:tier0`, `required:tier1`, `preferred:tier0+network` and `required:tier1+network`, on
# LLM-profile traces (`railyard trace synth --profile llm`) per cluster and seed. Prints markdown.
# Per cluster, seed and order it also reruns the best label-only mode with `--no-network` (every
# communicating share 0: no job is slowed by where it lands). No placement beats that on run
# time, so it bounds what any network-aware placement can gain; a second table gives the bound
# (best label-only ÷ no network) and the share of it `+network` captures.
#
# Usage: scripts/gain-table.sh — clusters, seeds, trace size and offered load from the
# environment: CLUSTERS="oci-h100-16k-4to1 oci-h100-16k" SEEDS="1 2 3" JOBS=10000 LOAD=10
# WARM=1 synthesises with `--warm-start` (the cluster starts at the arrivals' steady occupancy,
# fragmented, instead of empty). The LLM profile writes model/layout columns, so the table
# prices its layout jobs by step time (`+network`) and paces them by their communicator groups.
# Builds in release first; needs jq. Runs under `nice -n 5`. Deterministic: the same settings
# print the same table (except the wall-time column).
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTERS=${CLUSTERS:-"oci-h100-16k-4to1 oci-h100-16k"}
SEEDS=${SEEDS:-"1 2 3"}
JOBS=${JOBS:-10000}
LOAD=${LOAD:-10}
WARM=${WARM:-0}
WARM_FLAG=()
if [ "$WARM" = 1 ]; then WARM_FLAG=(--warm-start); fi
POLICIES="fifo,fifo+preferred:tier0,fifo+required:tier1,fifo+preferred:tier0+network"
POLICIES="$POLICIES,fifo+required:tier1+network"
POLICIES="$POLICIES,best-effort,best-effort+preferred:tier0,best-effort+required:tier1"
POLICIES="$POLICIES,best-effort+preferred:tier0+network,best-effort+required:tier1+network"
cargo build --release -q -p railyard
BIN=target/release/railyard
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "| cluster | seed | policy | multi-node jobs | avg JCT multi-node h | p99 JCT multi-node h | GPU util (arrivals) | net slowdown | vs best label-only |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|"
for cluster in $CLUSTERS; do
  for seed in $SEEDS; do
    trace="$TMP/llm-$cluster-$seed.csv"
    "$BIN" -q trace synth --profile llm --jobs "$JOBS" --seed "$seed" \
      --cluster "preset:$cluster" --load "$LOAD" "${WARM_FLAG[@]}" --out "$trace"
    start=$(date +%s.%N)
    nice -n 5 "$BIN" -q simulate --cluster "preset:$cluster" --trace "$trace" \
      --compare "$POLICIES" -o json > "$TMP/run.json"
    end=$(date +%s.%N)
    echo "$cluster seed $seed: $(echo "$end - $start" | bc) s for 10 policies" >&2
    # Per order: the best label-only avg multi-node JCT, and each row's ratio to it (> 1: slower).
    jq -r --arg c "$cluster" --arg s "$seed" '
      def f3: (. * 1000 | round) as $n
        | "\($n / 1000 | floor).\("00\($n % 1000)" | .[-3:])";
      def f1: (. * 10 | round) as $n | "\($n / 10 | floor).\($n % 10)";
      .runs as $runs
      | ($runs | map(select(.policy | contains("+network") | not))) as $labels
      | $runs[]
      | (.policy | split("+")[0]) as $order
      | ([$labels[] | select((.policy | split("+")[0]) == $order) | .avg_multi_node_jct_s]
         | min) as $best
      | "| \($c) | \($s) | `\(.policy)` | \(.multi_node_completed) | \(.avg_multi_node_jct_s / 3600 | f3) | \(.p99_multi_node_jct_s / 3600 | f3) | \(.gpu_utilization_arrivals * 100 | f1)% | \(.avg_network_slowdown | f3) | \(if $best > 0 then (.avg_multi_node_jct_s / $best | f3) else "–" end) |"
    ' "$TMP/run.json"
    # The bound: the best label-only mode of each order, rerun with the network switched off.
    best=$(jq -r '
      [.runs[] | select(.policy | contains("+network") | not)]
      | . as $labels | ["fifo", "best-effort"]
      | map(. as $o | $labels | map(select((.policy | split("+")[0]) == $o))
            | min_by(.avg_multi_node_jct_s) | .policy) | join(",")' "$TMP/run.json")
    nice -n 5 "$BIN" -q simulate --cluster "preset:$cluster" --trace "$trace" \
      --compare "$best" --no-network -o json > "$TMP/bound.json"
    jq -r --arg c "$cluster" --arg s "$seed" --slurpfile on "$TMP/run.json" '
      def f3: (. * 1000 | round) as $n
        | "\($n / 1000 | floor).\("00\($n % 1000)" | .[-3:])";
      def f1: (. * 10 | round) as $n | "\($n / 10 | floor).\($n % 10)";
      def s1: if . < 0 then "-" + (- . | f1) else f1 end;
      .runs[]
      | (.avg_multi_node_jct_s) as $free
      | (.policy | split("+")[0]) as $order
      | ($on[0].runs | map(select(.policy | contains("+network") | not))
         | map(select((.policy | split("+")[0]) == $order)) | min_by(.avg_multi_node_jct_s)
         | .avg_multi_node_jct_s) as $best
      | ($on[0].runs | map(select((.policy | split("+")[0]) == $order and (.policy | contains("+network"))))
         | map(.avg_multi_node_jct_s)) as $nets
      | def captured($net): if $best > 1.001 * $free
          then ((($best - $net) / ($best - $free)) * 100 | s1) + "%" else "–" end;
      "| \($c) | \($s) | `\(.policy)`, no network (bound) | \(.multi_node_completed) | \(.avg_multi_node_jct_s / 3600 | f3) | \(.p99_multi_node_jct_s / 3600 | f3) | \(.gpu_utilization_arrivals * 100 | f1)% | \(.avg_network_slowdown | f3) | \(if $best > 0 then ($free / $best | f3) else "–" end) |",
        "BOUND| \($c) | \($s) | \($order) | \($best / $free | f3) | \($best / $nets[0] | f3) | \(captured($nets[0])) | \($best / $nets[1] | f3) | \(captured($nets[1])) |"
    ' "$TMP/bound.json" | tee -a "$TMP/bounds" | grep -v '^BOUND'
  done
done
echo
echo "| cluster | seed | order | bound: best label-only ÷ no network | best label-only ÷ \`preferred:tier0+network\` | share of the bound | best label-only ÷ \`required:tier1+network\` | share of the bound |"
echo "|---|---|---|---:|---:|---:|---:|---:|"
grep '^BOUND' "$TMP/bounds" | sed 's/^BOUND//'
