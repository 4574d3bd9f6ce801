package pipeline_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/pipeline"
)

// bookkeeping digests what compaction must keep exactly: each run's
// counts per table (run_tables), its tasks by status, and the ledger's
// requests and units per run, per UTC day and per month.
func (f *fixture) bookkeeping(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		"run_tables": f.query(t, `SELECT coalesce(string_agg(r::text, ';' ORDER BY r::text), '') FROM run_tables r`),
		"task counts": f.query(t, `SELECT coalesce(string_agg(x, ';' ORDER BY x), '') FROM (
			SELECT run_id || ' ' || status || ' ' || tasks || ' ' || rows || ' ' || units || ' ' || held_units AS x FROM run_task_counts
			UNION ALL
			SELECT c.run_id || ' ' || c.status || ' ' || count(*) || ' ' || sum(c.rows) || ' ' || sum(c.units) || ' ' || coalesce(sum(c.held_units), 0)
			FROM task_checkpoints c JOIN runs r USING (run_id) WHERE r.compacted_at IS NULL GROUP BY c.run_id, c.status) s`),
		"ledger per run": f.query(t, `SELECT string_agg(x, ';' ORDER BY x) FROM (
			SELECT run_id || ' ' || sum(requests) || ' ' || sum(reserved) || ' ' || sum(spent) AS x FROM unit_ledger GROUP BY run_id) s`),
		"ledger per day": f.query(t, `SELECT string_agg(x, ';' ORDER BY x) FROM (
			SELECT (reserved_at AT TIME ZONE 'UTC')::date || ' ' || job || ' ' || endpoint || ' ' || sum(spent) AS x
			FROM unit_ledger GROUP BY (reserved_at AT TIME ZONE 'UTC')::date, job, endpoint) s`),
		"ledger per month": f.query(t, `SELECT string_agg(x, ';' ORDER BY x) FROM (
			SELECT date_trunc('month', reserved_at AT TIME ZONE 'UTC') || ' ' || sum(spent) AS x FROM unit_ledger GROUP BY date_trunc('month', reserved_at AT TIME ZONE 'UTC')) s`),
		"budget_usage": f.query(t, `SELECT string_agg(key || '=' || used, ';' ORDER BY key) FROM budget_usage`),
	}
}

// TestCompactingRunsKeepsWhatIsRead: five nightly runs, then
// keep_run_detail 2d compacts the three oldest (never the latest run of
// the job): most of their checkpoints and ledger rows go, yet every
// run's counts per table and status, the ledger's units per run, day and
// month, the caps' usage, a failure, and what the next run holds (fresh
// keyword months, the closed months of summary history) are as before.
// A dry run says the same and changes nothing; a second pass does
// nothing.
func TestCompactingRunsKeepsWhatIsRead(t *testing.T) {
	t.Parallel()
	f, c := newClockFixture(t, runNow)
	var nightly []*pipeline.Summary
	for day := range 5 {
		c.set(runNow.AddDate(0, 0, day))
		nightly = append(nightly, f.runAt(t, nightlySpec, c, pipeline.RunOptions{}))
	}
	// A failure in the oldest run: compaction keeps it.
	_, err := f.pool.Exec(t.Context(), `UPDATE task_checkpoints SET status = 'failed', error = 'HTTP 500 from the API'
		WHERE run_id = $1 AND endpoint = 'overview' AND name LIKE '%n2500%'`, nightly[0].RunID)
	require.NoError(t, err)

	day6 := runNow.AddDate(0, 0, 5)
	c.set(day6)
	planBefore := f.planAt(t, nightlySpec, c, pipeline.PlanOptions{})
	require.Positive(t, planBefore.Held.Months, "the closed months of summary history are held")
	before := f.bookkeeping(t)
	checkpoints := f.count(t, `SELECT count(*) FROM task_checkpoints`)
	ledgerRows := f.count(t, `SELECT count(*) FROM unit_ledger`)

	log := slog.New(slog.DiscardHandler)
	none, err := runs.CompactRuns(t.Context(), f.pool, log, 48*time.Hour, day6, false, time.Nanosecond)
	require.NoError(t, err)
	require.Zero(t, none.Runs, "no time for any run")
	require.Equal(t, 3, none.Left)
	require.Contains(t, none.String(), ": 3 runs finished before 2026-11-24 03:00 UTC left for later (a run compacts for at most 1m after it; etl retention does them all)\n")
	dry, err := runs.CompactRuns(t.Context(), f.pool, log, 48*time.Hour, day6, true, 0)
	require.NoError(t, err)
	require.Equal(t, 3, dry.Runs, "runs 1 to 3 finished more than 2 days ago")
	require.Equal(t, checkpoints, f.count(t, `SELECT count(*) FROM task_checkpoints`), "a dry run changes nothing")
	require.Equal(t, ledgerRows, f.count(t, `SELECT count(*) FROM unit_ledger`))
	require.Zero(t, f.count(t, `SELECT count(*) FROM runs WHERE compacted_at IS NOT NULL`))
	require.Contains(t, dry.String(), "would compact 3 runs")
	require.Contains(t, dry.String(), "dry run: nothing changed")

	rep, err := runs.CompactRuns(t.Context(), f.pool, log, 48*time.Hour, day6, false, 0)
	require.NoError(t, err)
	dry.DryRun = false
	require.Equal(t, dry, rep, "the dry run counted what the real one did")
	require.Equal(t, int64(3), f.count(t, `SELECT count(*) FROM runs WHERE compacted_at IS NOT NULL AND run_id <= $1`, nightly[2].RunID))
	require.Positive(t, rep.CheckpointsDeleted)
	require.Equal(t, checkpoints-rep.CheckpointsDeleted, f.count(t, `SELECT count(*) FROM task_checkpoints`))
	require.Less(t, f.count(t, `SELECT count(*) FROM unit_ledger`), ledgerRows)
	require.Equal(t, ledgerRows-rep.LedgerFolded+rep.LedgerRows, f.count(t, `SELECT count(*) FROM unit_ledger`))
	// Runs 1 to 3 keep the failure and run 1's fetches of the closed
	// keyword months (September, October: US and FR), which every later
	// run held: runs 4 and 5 fetched every other task again, or held it.
	require.Equal(t, int64(5), f.count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id <= $1`, nightly[2].RunID))
	require.Equal(t, int64(4), f.count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id = $1 AND status = 'done'
		AND endpoint = 'keyword-metrics' AND month < '2026-11-01'`, nightly[0].RunID))
	require.Equal(t, int64(1), f.count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id = $1 AND status = 'failed'
		AND error = 'HTTP 500 from the API'`, nightly[0].RunID))
	require.Positive(t, rep.ClosedMonths)

	require.Equal(t, before, f.bookkeeping(t), "every count and sum an audit reads is unchanged")
	planAfter := f.planAt(t, nightlySpec, c, pipeline.PlanOptions{})
	require.Equal(t, planBefore.Held, planAfter.Held, "the next run holds what it held")
	require.Equal(t, *planBefore.Total.Expected, *planAfter.Total.Expected)

	again, err := runs.CompactRuns(t.Context(), f.pool, log, 48*time.Hour, day6, false, 0)
	require.NoError(t, err)
	require.Zero(t, again.Runs)
	require.Contains(t, again.String(), "no run finished before")

	// The run on day 6 buys what it would have: no more.
	spent := f.spent()
	f.runAt(t, nightlySpec, c, pipeline.RunOptions{})
	require.Equal(t, *planAfter.Total.Expected, f.spent()-spent)
}

// TestCompactionKeepsTheLatestFetchOfEveryTask: a task fetched once, by an
// old run, keeps its checkpoint however old it is: max_age and closed
// keyword months read it. And the latest run of a job is never
// compacted, so its continuation can take it up.
func TestCompactionKeepsTheLatestFetchOfEveryTask(t *testing.T) {
	t.Parallel()
	f, c := newClockFixture(t, runNow)
	first := f.runAt(t, nightlySpec, c, pipeline.RunOptions{})
	const other = `jobs:
  - name: other
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}}
`
	c.set(runNow.AddDate(0, 0, 1))
	f.runAt(t, other, c, pipeline.RunOptions{})
	c.set(runNow.AddDate(0, 1, 0))
	rep, err := runs.CompactRuns(t.Context(), f.pool, slog.New(slog.DiscardHandler), 7*24*time.Hour, c.now(), false, 0)
	require.NoError(t, err)
	require.Zero(t, rep.Runs, "each job's only run is its latest")

	c.set(runNow.AddDate(0, 0, 2))
	f.runAt(t, other, c, pipeline.RunOptions{Refetch: true})
	c.set(runNow.AddDate(0, 1, 0))
	kept := f.count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id = $1`, first.RunID)
	rep, err = runs.CompactRuns(t.Context(), f.pool, slog.New(slog.DiscardHandler), 7*24*time.Hour, c.now(), false, 0)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Runs, "the older run of job other")
	require.Equal(t, kept, f.count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id = $1`, first.RunID))
	// The other job's older run keeps nothing of its one done task: the
	// later run of that job fetched it again.
	require.Equal(t, int64(1), rep.CheckpointsDeleted)
}
