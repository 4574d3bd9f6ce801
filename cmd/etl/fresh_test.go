package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
)

// TestTheExampleJobTwiceInARowPaysOnce: make run, then make run (the
// example job on the same warehouse): the plan before the second says
// every task is held and what that saves, and the second run buys nothing,
// by its summary, its JSON and the ledger; --refetch buys it all again.
func TestTheExampleJobTwiceInARowPaysOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	dir := t.TempDir()
	now := cliNow.Format(time.RFC3339)
	r := etl(t, env, "local", "run", "--dir", dir, "--jobs", "../../jobs.yaml", "--job", "example", "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `job example: 36 tasks, \d+ rows, 0 quarantined, [1-9]\d* API units`, r.stdout)
	require.NotContains(t, r.stdout, "held")

	conn, err := pgx.Connect(t.Context(), db)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	var paid int64
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT units FROM runs WHERE run_id = 1`).Scan(&paid))
	require.Positive(t, paid)

	r = etl(t, env, "plan", "--jobs", "../../jobs.yaml", "--job", "example", "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "\nno task would spend a unit, and no cap cuts or refuses one; --tasks lists all 35 (--json too)\n")
	r = etl(t, env, "plan", "--tasks", "--jobs", "../../jobs.yaml", "--job", "example", "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "35 tasks, 0 requests, expected 0 units")
	require.Contains(t, r.stdout, "held, not bought again: 35 tasks fetched within max_age; saves ")
	require.Contains(t, r.stdout, "held: run 1 fetched it less than a minute ago, within max_age 20h; --refetch buys it again")
	r = etl(t, env, "plan", "--jobs", "../../jobs.yaml", "--job", "example", "--now", now, "--refetch")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.NotContains(t, r.stdout, "held")

	r = etl(t, env, "local", "run", "--dir", dir, "--jobs", "../../jobs.yaml", "--job", "example", "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `job example: 36 tasks, \d+ rows, 0 quarantined, 0 API units`, r.stdout) // the rows of the listings pull (free)
	require.Contains(t, r.stdout, "held, not bought again: 35 tasks fetched within max_age")
	var units, booked int64
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT units, (SELECT count(*) FROM unit_ledger WHERE run_id = 2) FROM runs WHERE run_id = 2`).Scan(&units, &booked))
	require.Zero(t, units, "the second run is charged nothing")
	require.Zero(t, booked, "and asks nothing")

	r = etl(t, env, "runs", "show", "2")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `held\s+35 tasks not sent: the warehouse held their data \(buying them again would have cost \d+ units\)`, r.stdout)

	r = etl(t, env, "local", "run", "--dir", dir, "--jobs", "../../jobs.yaml", "--job", "example", "--now", now, "--refetch")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.NotContains(t, r.stdout, "held")
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT units FROM runs WHERE run_id = 3`).Scan(&units))
	require.Equal(t, paid, units, "--refetch buys it all again")
}
