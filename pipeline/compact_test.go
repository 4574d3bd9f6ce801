package pipeline_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
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

// nightlyWorld is the world of a job run nightly: nightlySpec run once a
// day for days days from runNow (options gives a day's run options; nil,
// none), the clock left at the last run. It returns the runs' summaries.
func nightlyWorld(t *testing.T, days int, options func(day int) pipeline.RunOptions) (*fixture, *clock, []*pipeline.Summary) {
	t.Helper()
	f, c := newClockFixture(t, runNow)
	var nightly []*pipeline.Summary
	for day := range days {
		var o pipeline.RunOptions
		if options != nil {
			o = options(day)
		}
		c.Set(runNow.AddDate(0, 0, day))
		nightly = append(nightly, f.RunAt(t, nightlySpec, c, o))
	}
	return f, c, nightly
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
	f, c, nightly := nightlyWorld(t, 5, nil)
	// A failure in the oldest run: compaction keeps it.
	_, err := f.Pool.Exec(t.Context(), `UPDATE task_checkpoints SET status = 'failed', error = 'HTTP 500 from the API'
		WHERE run_id = $1 AND endpoint = 'overview' AND name LIKE '%n2500%'`, nightly[0].RunID)
	require.NoError(t, err)

	day6 := runNow.AddDate(0, 0, 5)
	c.Set(day6)
	planBefore := f.PlanAt(t, nightlySpec, c, planning.PlanOptions{})
	require.Positive(t, planBefore.Held.Months, "the closed months of summary history are held")
	before := f.bookkeeping(t)
	checkpoints := f.Count(t, `SELECT count(*) FROM task_checkpoints`)
	ledgerRows := f.Count(t, `SELECT count(*) FROM unit_ledger`)

	log := slog.New(slog.DiscardHandler)
	none, err := runs.CompactRuns(t.Context(), f.Pool, log, 48*time.Hour, day6, false, time.Nanosecond)
	require.NoError(t, err)
	require.Zero(t, none.Runs, "no time for any run")
	require.Equal(t, 3, none.Left)
	require.Contains(t, none.String(), ": 3 runs finished before 2026-11-24 03:00 UTC left for later (a run compacts for at most 1m after it; etl retention does them all)\n")
	dry, err := runs.CompactRuns(t.Context(), f.Pool, log, 48*time.Hour, day6, true, 0)
	require.NoError(t, err)
	require.Equal(t, 3, dry.Runs, "runs 1 to 3 finished more than 2 days ago")
	require.Equal(t, checkpoints, f.Count(t, `SELECT count(*) FROM task_checkpoints`), "a dry run changes nothing")
	require.Equal(t, ledgerRows, f.Count(t, `SELECT count(*) FROM unit_ledger`))
	require.Zero(t, f.Count(t, `SELECT count(*) FROM runs WHERE compacted_at IS NOT NULL`))
	require.Contains(t, dry.String(), "would compact 3 runs")
	require.Contains(t, dry.String(), "dry run: nothing changed")

	rep, err := runs.CompactRuns(t.Context(), f.Pool, log, 48*time.Hour, day6, false, 0)
	require.NoError(t, err)
	dry.DryRun = false
	require.Equal(t, dry, rep, "the dry run counted what the real one did")
	require.Equal(t, int64(3), f.Count(t, `SELECT count(*) FROM runs WHERE compacted_at IS NOT NULL AND run_id <= $1`, nightly[2].RunID))
	require.Positive(t, rep.CheckpointsDeleted)
	require.Equal(t, checkpoints-rep.CheckpointsDeleted, f.Count(t, `SELECT count(*) FROM task_checkpoints`))
	require.Less(t, f.Count(t, `SELECT count(*) FROM unit_ledger`), ledgerRows)
	require.Equal(t, ledgerRows-rep.LedgerFolded+rep.LedgerRows, f.Count(t, `SELECT count(*) FROM unit_ledger`))
	// Runs 1 to 3 keep the failure and run 1's fetches of the closed
	// keyword months (September, October: US and FR), which every later
	// run held: runs 4 and 5 fetched every other task again, or held it.
	require.Equal(t, int64(5), f.Count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id <= $1`, nightly[2].RunID))
	require.Equal(t, int64(4), f.Count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id = $1 AND status = 'done'
		AND endpoint = 'keyword-metrics' AND month < '2026-11-01'`, nightly[0].RunID))
	require.Equal(t, int64(1), f.Count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id = $1 AND status = 'failed'
		AND error = 'HTTP 500 from the API'`, nightly[0].RunID))
	require.Positive(t, rep.ClosedMonths)

	require.Equal(t, before, f.bookkeeping(t), "every count and sum an audit reads is unchanged")
	planAfter := f.PlanAt(t, nightlySpec, c, planning.PlanOptions{})
	require.Equal(t, planBefore.Held, planAfter.Held, "the next run holds what it held")
	require.Equal(t, *planBefore.Total.Expected, *planAfter.Total.Expected)

	again, err := runs.CompactRuns(t.Context(), f.Pool, log, 48*time.Hour, day6, false, 0)
	require.NoError(t, err)
	require.Zero(t, again.Runs)
	require.Contains(t, again.String(), "no run finished before")

	// The run on day 6 buys what it would have: no more.
	spent := f.Spent()
	f.RunAt(t, nightlySpec, c, pipeline.RunOptions{})
	require.Equal(t, *planAfter.Total.Expected, f.Spent()-spent)
}

// TestCompactionKeepsTheLatestFetchOfEveryTask: a task fetched once, by an
// old run, keeps its checkpoint however old it is: max_age and closed
// keyword months read it. And the latest run of a job is never
// compacted, so its continuation can take it up.
func TestCompactionKeepsTheLatestFetchOfEveryTask(t *testing.T) {
	t.Parallel()
	f, c := newClockFixture(t, runNow)
	first := f.RunAt(t, nightlySpec, c, pipeline.RunOptions{})
	const other = `jobs:
  - name: other
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}}
`
	c.Set(runNow.AddDate(0, 0, 1))
	f.RunAt(t, other, c, pipeline.RunOptions{})
	c.Set(runNow.AddDate(0, 1, 0))
	rep, err := runs.CompactRuns(t.Context(), f.Pool, slog.New(slog.DiscardHandler), 7*24*time.Hour, c.Now(), false, 0)
	require.NoError(t, err)
	require.Zero(t, rep.Runs, "each job's only run is its latest")

	c.Set(runNow.AddDate(0, 0, 2))
	f.RunAt(t, other, c, pipeline.RunOptions{Refetch: true})
	c.Set(runNow.AddDate(0, 1, 0))
	kept := f.Count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id = $1`, first.RunID)
	rep, err = runs.CompactRuns(t.Context(), f.Pool, slog.New(slog.DiscardHandler), 7*24*time.Hour, c.Now(), false, 0)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Runs, "the older run of job other")
	require.Equal(t, kept, f.Count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id = $1`, first.RunID))
	// The other job's older run keeps nothing of its one done task: the
	// later run of that job fetched it again.
	require.Equal(t, int64(1), rep.CheckpointsDeleted)
}

// TestCompactionKeepsWhatReprocessFailedReads: etl backfill
// --reprocess failed buys again the tasks whose latest try in the job
// failed; a task whose latest checkpoint is held did not fail. Compaction
// deleted held checkpoints outright, so a task that failed once and was
// held by a later run had a failure for its latest try again, and the
// backfill bought it a second time.
func TestCompactionKeepsWhatReprocessFailedReads(t *testing.T) {
	t.Parallel()
	const oct = `jobs:
  - name: kw
    keywords: {keywords: [seo], countries: [US], months: [2026-10]}
`
	const sep = `jobs:
  - name: kw
    keywords: {keywords: [seo], countries: [US], months: [2026-09]}
`
	f, c := newClockFixture(t, runNow)
	f.RunAt(t, oct, c, pipeline.RunOptions{})
	c.Set(runNow.Add(time.Hour))
	second := f.RunAt(t, oct, c, pipeline.RunOptions{Refetch: true})
	// The refetch failed (an HTTP 500 of the API).
	_, err := f.Pool.Exec(t.Context(), `UPDATE task_checkpoints SET status = 'failed', error = 'HTTP 500 from the API'
		WHERE run_id = $1`, second.RunID)
	require.NoError(t, err)
	c.Set(runNow.Add(2 * time.Hour))
	third := f.RunAt(t, oct, c, pipeline.RunOptions{})
	require.Equal(t, 1, third.Held().Tasks, "October is a closed month the first run fetched")
	// The job moves on to another month: its latest run holds no October.
	c.Set(runNow.Add(3 * time.Hour))
	f.RunAt(t, sep, c, pipeline.RunOptions{})

	s, err := jobspec.ParseSpec("jobs.yaml", []byte(oct), c.Now())
	require.NoError(t, err)
	month := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	tasks, _, err := s.Jobs[0].BackfillTasks(jobspec.BackfillRequest{From: month, To: month}, c.Now())
	require.NoError(t, err)
	before, err := runs.Pending(t.Context(), f.Pool, s.Jobs[0], tasks, jobspec.ReprocessFailed)
	require.NoError(t, err)
	require.Empty(t, before, "the latest try was held: nothing to reprocess")

	c.Set(runNow.AddDate(0, 0, 3))
	rep, err := runs.CompactRuns(t.Context(), f.Pool, slog.New(slog.DiscardHandler), 24*time.Hour, c.Now(), false, 0)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Runs)
	after, err := runs.Pending(t.Context(), f.Pool, s.Jobs[0], tasks, jobspec.ReprocessFailed)
	require.NoError(t, err)
	require.Empty(t, after, "after compaction, --reprocess failed must not buy the held month again")
}

// TestACompactionDryRunSaysWhatWouldHappen: etl retention --dry-run said
// "would compact 1 run ...: deleted 3 task checkpoints ..., summed 3
// ledger rows into 1", which a reader takes for done; it says what would
// be, and what the real one did is said in the past.
func TestACompactionDryRunSaysWhatWouldHappen(t *testing.T) {
	t.Parallel()
	rep := runs.CompactReport{Keep: 7 * 24 * time.Hour, Cutoff: runNow, DryRun: true, Runs: 1,
		CheckpointsDeleted: 3, CheckpointsKept: 1, ClosedMonths: 2, LedgerFolded: 3, LedgerRows: 1}
	require.Equal(t, "bookkeeping: keep run detail 7d: would compact 1 run finished before 2026-11-21 03:00 UTC: "+
		"would delete 3 task checkpoints (keep 1: failures, refusals, each task's latest fetch and try), "+
		"keep 2 months of summary history as closed, sum 3 ledger rows into 1\n"+
		"dry run: nothing changed\n", rep.String())
	rep.DryRun = false
	require.Equal(t, "bookkeeping: keep run detail 7d: compacted 1 run finished before 2026-11-21 03:00 UTC: "+
		"deleted 3 task checkpoints (kept 1: failures, refusals, each task's latest fetch and try), "+
		"kept 2 months of summary history as closed, summed 3 ledger rows into 1\n", rep.String())
}

// TestTwoCompactionsAtOnce: two processes compacting at once (two
// pools) compact each run once between them, and leave what a single one
// would: every count and sum as before, what the next run holds.
func TestTwoCompactionsAtOnce(t *testing.T) {
	t.Parallel()
	f, c, _ := nightlyWorld(t, 5, nil)
	day6 := runNow.AddDate(0, 0, 5)
	c.Set(day6)
	planBefore := f.PlanAt(t, nightlySpec, c, planning.PlanOptions{})
	before := f.bookkeeping(t)
	log := slog.New(slog.DiscardHandler)
	reps := make([]runs.CompactReport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		pool := f.NewPool(t)
		wg.Go(func() {
			reps[i], errs[i] = runs.CompactRuns(t.Context(), pool, log, 48*time.Hour, day6, false, 0)
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Equal(t, 3, reps[0].Runs+reps[1].Runs, "each of the 3 old runs compacted once")
	require.Equal(t, int64(3), f.Count(t, `SELECT count(*) FROM runs WHERE compacted_at IS NOT NULL`))
	require.Equal(t, int64(3), f.Count(t, `SELECT count(DISTINCT run_id) FROM run_task_counts`))
	require.Equal(t, before, f.bookkeeping(t))
	require.Equal(t, planBefore.Held, f.PlanAt(t, nightlySpec, c, planning.PlanOptions{}).Held)
}

// ledgerFoldKiller ends the connection of the second compaction's
// transaction (pg_terminate_backend, as when its process is killed) as
// the transaction is about to sum its ledger rows.
type ledgerFoldKiller struct {
	t     *testing.T
	dbURL string
	n     atomic.Int32
}

func (k *ledgerFoldKiller) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(data.SQL, "DELETE FROM unit_ledger") || k.n.Add(1) != 2 {
		return ctx
	}
	other, err := pgx.Connect(context.WithoutCancel(ctx), k.dbURL)
	if err != nil {
		k.t.Errorf("connecting: %v", err)
		return ctx
	}
	defer other.Close(context.WithoutCancel(ctx))
	// $1::int: Citus adds pg_terminate_backend(global_pid bigint, ...),
	// so an untyped parameter is ambiguous there.
	if _, err := other.Exec(context.WithoutCancel(ctx), `SELECT pg_terminate_backend($1::int)`, int32(conn.PgConn().PID())); err != nil {
		k.t.Errorf("ending the compaction's backend: %v", err)
	}
	return ctx
}

func (k *ledgerFoldKiller) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestACompactionKilledMidRun: the connection of a compaction
// dies in the middle of a run (after its checkpoints were deleted,
// before its ledger was summed): that run is left whole, the one before
// it compacted, and the next compaction does the rest; every count and
// sum is as before.
func TestACompactionKilledMidRun(t *testing.T) {
	t.Parallel()
	f, _, _ := nightlyWorld(t, 4, nil)
	day5 := runNow.AddDate(0, 0, 4)
	before := f.bookkeeping(t)
	checkpoints := f.Count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id = 2`)
	ledger := f.Count(t, `SELECT count(*) FROM unit_ledger WHERE run_id = 2`)
	cfg, err := pgxpool.ParseConfig(f.DBURL)
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = &ledgerFoldKiller{t: t, dbURL: f.DBURL}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	log := slog.New(slog.DiscardHandler)
	rep, err := runs.CompactRuns(t.Context(), pool, log, 24*time.Hour, day5, false, 0)
	require.ErrorContains(t, err, "bookkeeping: compacting run 2")
	require.Equal(t, 1, rep.Runs)
	require.Equal(t, int64(1), f.Count(t, `SELECT count(*) FROM runs WHERE compacted_at IS NOT NULL`))
	require.Equal(t, checkpoints, f.Count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id = 2`), "run 2 is whole")
	require.Equal(t, ledger, f.Count(t, `SELECT count(*) FROM unit_ledger WHERE run_id = 2`))
	require.Zero(t, f.Count(t, `SELECT count(*) FROM run_task_counts WHERE run_id = 2`))
	require.Equal(t, before, f.bookkeeping(t))

	rep, err = runs.CompactRuns(t.Context(), f.Pool, log, 24*time.Hour, day5, false, 0)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Runs, "runs 2 and 3")
	require.Equal(t, before, f.bookkeeping(t))
}

// TestCompactionAfterTheClockWentBack: the host's clock went back
// a day between two runs, so the later run's fetch is stamped before the
// earlier run's. holdings takes the fetch stamped latest for the task's
// latest (run 1, day 2: fresh for max_age 3d on day 4), and compaction
// must keep that one, not the one of the higher run id (run 2, day 1:
// stale on day 4), or the next run buys again what it held.
func TestCompactionAfterTheClockWentBack(t *testing.T) {
	t.Parallel()
	const spec = `jobs:
  - name: j
    max_age: 3d
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}}
`
	f, c := newClockFixture(t, runNow)
	c.Set(runNow.AddDate(0, 0, 2))
	f.RunAt(t, spec, c, pipeline.RunOptions{})
	c.Set(runNow.AddDate(0, 0, 1)) // the clock went back
	f.RunAt(t, spec, c, pipeline.RunOptions{Refetch: true})
	c.Set(runNow.AddDate(0, 0, 3))
	f.RunAt(t, spec, c, pipeline.RunOptions{})
	day4 := runNow.AddDate(0, 0, 4).Add(12 * time.Hour)
	c.Set(day4)
	planBefore := f.PlanAt(t, spec, c, planning.PlanOptions{})
	require.Equal(t, 1, planBefore.Held.Tasks, "run 1's fetch of day 2 is fresh")
	before := f.bookkeeping(t)
	rep, err := runs.CompactRuns(t.Context(), f.Pool, slog.New(slog.DiscardHandler), 24*time.Hour, day4, false, 0)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Runs)
	require.Equal(t, before, f.bookkeeping(t))
	require.Equal(t, planBefore.Held, f.PlanAt(t, spec, c, planning.PlanOptions{}).Held)
	spent := f.Spent()
	f.RunAt(t, spec, c, pipeline.RunOptions{})
	require.Equal(t, spent, f.Spent(), "the next run buys nothing")
}

// TestACompactionDryRunCountsTheClosedMonthsOnce: two runs that both bought
// the same closed months of summary history (--refetch): the real
// compaction keeps each month once, and the dry run must say the same
// number, not count them again for each run (each run's transaction
// rolled back before the next).
func TestACompactionDryRunCountsTheClosedMonthsOnce(t *testing.T) {
	t.Parallel()
	f, _, _ := nightlyWorld(t, 4, func(day int) pipeline.RunOptions { return pipeline.RunOptions{Refetch: day < 2} })
	day5 := runNow.AddDate(0, 0, 4)
	log := slog.New(slog.DiscardHandler)
	dry, err := runs.CompactRuns(t.Context(), f.Pool, log, 24*time.Hour, day5, true, 0)
	require.NoError(t, err)
	rep, err := runs.CompactRuns(t.Context(), f.Pool, log, 24*time.Hour, day5, false, 0)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Runs)
	require.Equal(t, f.Count(t, `SELECT count(*) FROM task_closed_months`), rep.ClosedMonths)
	dry.DryRun = false
	require.Equal(t, rep, dry, "the dry run says what the real one does")
}

// TestNothingToCompactSaysWhy: a job's one run from weeks ago is
// not compacted (the next run may take it up); the line saying nothing
// is left says so, or a reader looking at that run wonders why.
func TestNothingToCompactSaysWhy(t *testing.T) {
	t.Parallel()
	rep := runs.CompactReport{Keep: 7 * 24 * time.Hour, Cutoff: runNow}
	require.Equal(t, "bookkeeping: keep run detail 7d: no run finished before 2026-11-21 03:00 UTC is left to compact "+
		"(the latest run of each job, and one running or interrupted, keep their detail)\n", rep.String())
}
