#!/bin/sh
# A seeded fractional trace in the openb pod-list format: N pods drawn with replacement from the
# bundled Alibaba sample's scheduled pods (their CPU, memory, GPUs, GPU share, GPU models, QoS and
# run time), arriving as a Poisson process with mean gap GAP_S seconds (default 900: about 93% of
# the bundled 100-node list's 544 GPUs asked on average). scheduled_time = creation_time, so the
# "observed" waits of a resampled trace are 0 and mean nothing.
# Usage: scripts/openb-resample.sh N SEED [GAP_S] > trace.csv
# Deterministic for a given awk implementation (the README's figures: mawk 1.3.4).
set -eu
n=${1:?usage: openb-resample.sh N SEED [GAP_S]}
seed=${2:?usage: openb-resample.sh N SEED [GAP_S]}
gap=${3:-900}
sample=$(dirname "$0")/../data/openb_pod_list_default.head300.csv
awk -F, -v n="$n" -v seed="$seed" -v gap="$gap" '
NR == 1 { print; next }
$11 != "" { k++; row[k] = $2 "," $3 "," $4 "," $5 "," $6 "," $7 "," $8; dur[k] = $10 - $11 }
END {
  srand(seed); t = 0
  for (i = 0; i < n; i++) {
    j = int(rand() * k) + 1
    t += -gap * log(1 - rand())
    c = int(t)
    printf "resampled-%06d,%s,%d,%d,%d\n", i, row[j], c, c + dur[j], c
  }
}' "$sample"
