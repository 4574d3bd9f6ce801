#!/usr/bin/env bash
# bench/nightly.sh BIN JOBS DIR [DAYS] [FIRST]: what a nightly schedule of
# the example job costs. Runs `BIN local run --job example` once a day at
# 03:00 UTC (the sandbox clock, --now) from FIRST (default 2026-11-15) for
# DAYS days (default 30) on one local warehouse in DIR (deleted first), and
# prints each night's API units and the total.
#   bench/nightly.sh bin/etl jobs.yaml /tmp/nightly
set -euo pipefail
bin=$1 jobs=$2 dir=$3 days=${4:-30} first=${5:-2026-11-15}
rm -rf "$dir"
mkdir -p "$dir"
chmod 755 "$dir"
total=0
for ((d = 0; d < days; d++)); do
  now=$(date -u -d "${first}T03:00:00Z + $d days" +%Y-%m-%dT%H:%M:%SZ)
  line=$("$bin" local run --dir "$dir" --jobs "$jobs" --job example --now "$now" 2>/dev/null | grep '^job example')
  units=$(sed -E 's/.* ([0-9]+) API units.*/\1/' <<<"$line")
  total=$((total + units))
  echo "$now $units"
done
"$bin" local clean --dir "$dir" >/dev/null 2>&1 || true
echo "total $total"
