package main

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

const backfillCLISpec = `jobs:
  - name: history
    targets: [{url: n2500.example, scope: ROOT_DOMAIN}]
    endpoints: {summary: {}, links: {limit: 100}}
    keywords: {keywords: [seo], countries: [US]}
`

// TestBackfillCommand: a dry run prices 24 months and spends nothing; the
// backfill fills 24 months of backlink_history and of keyword_metrics, in
// 3 year partitions each; a second one with --reprocess missing spends nothing;
// an endpoint without history is refused before anything is spent.
func TestBackfillCommand(t *testing.T) {
	t.Parallel()
	const key = "sk-backfill"
	sb, env := runWorld(t, key)
	db := env["DATABASE_URL"]
	jobs := writeSpec(t, backfillCLISpec)
	args := []string{"backfill", "--jobs", jobs, "--from", "2024-12", "--to", "2026-11", "--now", "2026-11-21T03:00:00Z"}

	r := etl(t, env, append(args, "--dry-run")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "note: left out, they have no history (the API answers their current state only): links")
	require.Contains(t, r.stdout, "48 tasks, 48 to fetch (--reprocess missing)")
	require.Contains(t, r.stdout, "48 requests, expected 1440 units, worst case 1440")
	require.Zero(t, sb.Usage(key).UnitsSpent, "a dry run spends nothing")

	r = etl(t, env, append(args, "--reverse")...)
	require.Equal(t, exitOK, r.code, r.stderr+r.stdout)
	require.Equal(t, int64(1440), sb.Usage(key).UnitsSpent)
	conn, err := pgx.Connect(t.Context(), db)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	for _, table := range []string{"backlink_history", "keyword_metrics"} {
		var parts, months int
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM pg_inherits WHERE inhparent = $1::regclass),
			(SELECT count(DISTINCT month) FROM `+table+`)`, table).Scan(&parts, &months))
		require.Equal(t, 3, parts, table+": a partition per year, 2024 to 2026")
		require.Equal(t, 24, months, table)
	}

	r = etl(t, env, args...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "nothing to fetch: every month is done")
	require.Equal(t, int64(1440), sb.Usage(key).UnitsSpent, "the second backfill spent")

	r = etl(t, env, append(args, "--endpoint", "links")...)
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "links has no history: the API answers its current state only, so it cannot be backfilled")
	r = etl(t, env, "backfill", "--jobs", jobs, "--from", "2026-13", "--to", "2026-11")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, `--from "2026-13": want a month, YYYY-MM`)
}
