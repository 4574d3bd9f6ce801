#!/usr/bin/env bash
# bench/bookkeeping.sh BIN DIR [TARGETS] [DAYS] [KEEP]: how the runs'
# bookkeeping (task_checkpoints, unit_ledger and what compaction keeps)
# grows under a daily job of TARGETS targets (default 500; overview,
# summary {limit: 12}, links {limit: 10}: 3 tasks a target) run for DAYS
# days (default 30) on one local warehouse in DIR (deleted first), with
# retention keep_run_detail KEEP (default 7d; "off" for none). Prints,
# after each night, the rows and bytes (tables and indexes) of the
# bookkeeping tables.
#   bench/bookkeeping.sh bin/etl /tmp/book 500 30 7d
set -euo pipefail
bin=$1 dir=$2 targets=${3:-500} days=${4:-30} keep=${5:-7d}
first=2026-01-01
rm -rf "$dir"
mkdir -p "$dir"
chmod 755 "$dir"
jobs=$dir/jobs.yaml
{
  if [[ $keep != off ]]; then echo "retention: {keep_run_detail: $keep}"; fi
  echo "jobs:"
  echo "  - name: book"
  echo "    targets:"
  for ((i = 1; i <= targets; i++)); do echo "      - {url: n$((i * 7)).example, scope: ROOT_DOMAIN}"; done
  echo "    endpoints: {overview: {}, summary: {limit: 12}, links: {limit: 10}}"
} >"$jobs"
sizes="SELECT (SELECT count(*) FROM task_checkpoints), (SELECT count(*) FROM unit_ledger),
  pg_total_relation_size('task_checkpoints'), pg_total_relation_size('unit_ledger'),
  pg_total_relation_size('run_task_counts') + pg_total_relation_size('run_table_totals') + pg_total_relation_size('task_closed_months')"
echo "night checkpoints ledger_rows checkpoint_bytes ledger_bytes kept_counts_bytes"
for ((d = 0; d < days; d++)); do
  now=$(date -u -d "${first}T03:00:00Z + $d days" +%Y-%m-%dT%H:%M:%SZ)
  "$bin" local run --dir "$dir" --jobs "$jobs" --job book --now "$now" >/dev/null 2>&1 || true
  # VACUUM returns the space of deleted rows to the table, as autovacuum
  # does between nights.
  "$bin" local psql --dir "$dir" -- -qAt -c "VACUUM task_checkpoints, unit_ledger" >/dev/null
  echo "$now $("$bin" local psql --dir "$dir" -- -qAtF ' ' -c "$sizes")"
done
"$bin" local clean --dir "$dir" >/dev/null 2>&1 || true
