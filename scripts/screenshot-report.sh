#!/usr/bin/env bash
# Render an HTML report with headless Chromium (Debian's `chromium` package) to a PNG, so a person
# (or CI) can look at what railyard wrote. Usage: scripts/screenshot-report.sh REPORT.html OUT.png
# The window is WIDTH × HEIGHT pixels (environment; default 1400 × 1500).
set -euo pipefail
report=$(realpath "$1")
out=$(realpath -m "$2")
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --hide-scrollbars --window-size=${WIDTH:-1400},${HEIGHT:-1500} \
  --screenshot="$out" "file://$report" >/dev/null 2>&1
test -s "$out"
echo "$out"
