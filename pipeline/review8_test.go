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

	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
)

// TestReview8CompactionKeepsWhatReprocessFailedReads: etl backfill
// --reprocess failed buys again the tasks whose latest try in the job
// failed; a task whose latest checkpoint is held did not fail. Compaction
// deleted held checkpoints outright, so a task that failed once and was
// held by a later run had a failure for its latest try again, and the
// backfill bought it a second time.
func TestReview8CompactionKeepsWhatReprocessFailedReads(t *testing.T) {
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
	f.runAt(t, oct, c, pipeline.RunOptions{})
	c.set(runNow.Add(time.Hour))
	second := f.runAt(t, oct, c, pipeline.RunOptions{Refetch: true})
	// The refetch failed (an HTTP 500 of the API).
	_, err := f.pool.Exec(t.Context(), `UPDATE task_checkpoints SET status = 'failed', error = 'HTTP 500 from the API'
		WHERE run_id = $1`, second.RunID)
	require.NoError(t, err)
	c.set(runNow.Add(2 * time.Hour))
	third := f.runAt(t, oct, c, pipeline.RunOptions{})
	require.Equal(t, 1, third.Held().Tasks, "October is a closed month the first run fetched")
	// The job moves on to another month: its latest run holds no October.
	c.set(runNow.Add(3 * time.Hour))
	f.runAt(t, sep, c, pipeline.RunOptions{})

	s, err := jobspec.ParseSpec("jobs.yaml", []byte(oct), c.now())
	require.NoError(t, err)
	month := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	tasks, _, err := s.Jobs[0].BackfillTasks(jobspec.BackfillRequest{From: month, To: month}, c.now())
	require.NoError(t, err)
	before, err := pipeline.Pending(t.Context(), f.pool, s.Jobs[0], tasks, jobspec.ReprocessFailed)
	require.NoError(t, err)
	require.Empty(t, before, "the latest try was held: nothing to reprocess")

	c.set(runNow.AddDate(0, 0, 3))
	rep, err := pipeline.CompactRuns(t.Context(), f.pool, slog.New(slog.DiscardHandler), 24*time.Hour, c.now(), false, 0)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Runs)
	after, err := pipeline.Pending(t.Context(), f.pool, s.Jobs[0], tasks, jobspec.ReprocessFailed)
	require.NoError(t, err)
	require.Empty(t, after, "after compaction, --reprocess failed must not buy the held month again")
}

// TestReview8ADryRunSaysWhatWouldHappen: etl retention --dry-run said
// "would compact 1 run ...: deleted 3 task checkpoints ..., summed 3
// ledger rows into 1", which a reader takes for done; it says what would
// be, and what the real one did is said in the past.
func TestReview8ADryRunSaysWhatWouldHappen(t *testing.T) {
	t.Parallel()
	rep := pipeline.CompactReport{Keep: 7 * 24 * time.Hour, Cutoff: runNow, DryRun: true, Runs: 1,
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

// TestReview8KeepRunDetailPastTheMostInParts: keep_run_detail's bound is
// 100 years, and each of its parts was checked alone: three parts of
// nearly 100 years each overflowed time.Duration, and the spec was
// refused as "less than 1d".
func TestReview8KeepRunDetailPastTheMostInParts(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"5228w36599d878399h", "5228w36599d878399h52703999m"} {
		_, err := jobspec.ParseSpec("jobs.yaml", []byte("retention: {keep_run_detail: "+v+"}\njobs:\n  - name: j\n    targets: [{url: example.com, scope: ROOT_DOMAIN}]\n    endpoints: {overview: {}}\n"), runNow)
		require.ErrorContains(t, err, "jobs.yaml:1: keep_run_detail \""+v+"\" is more than 36600d, the most it may be")
	}
}

// TestReview8TwoCompactionsAtOnce: two processes compacting at once (two
// pools) compact each run once between them, and leave what a single one
// would: every count and sum as before, what the next run holds.
func TestReview8TwoCompactionsAtOnce(t *testing.T) {
	t.Parallel()
	f, c := newClockFixture(t, runNow)
	for day := range 5 {
		c.set(runNow.AddDate(0, 0, day))
		f.runAt(t, nightlySpec, c, pipeline.RunOptions{})
	}
	day6 := runNow.AddDate(0, 0, 5)
	c.set(day6)
	planBefore := f.planAt(t, nightlySpec, c, pipeline.PlanOptions{})
	before := f.bookkeeping(t)
	log := slog.New(slog.DiscardHandler)
	reps := make([]pipeline.CompactReport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		pool := f.newPool(t)
		wg.Go(func() {
			reps[i], errs[i] = pipeline.CompactRuns(t.Context(), pool, log, 48*time.Hour, day6, false, 0)
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Equal(t, 3, reps[0].Runs+reps[1].Runs, "each of the 3 old runs compacted once")
	require.Equal(t, int64(3), f.count(t, `SELECT count(*) FROM runs WHERE compacted_at IS NOT NULL`))
	require.Equal(t, int64(3), f.count(t, `SELECT count(DISTINCT run_id) FROM run_task_counts`))
	require.Equal(t, before, f.bookkeeping(t))
	require.Equal(t, planBefore.Held, f.planAt(t, nightlySpec, c, pipeline.PlanOptions{}).Held)
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

// TestReview8ACompactionKilledMidRun: the connection of a compaction
// dies in the middle of a run (after its checkpoints were deleted,
// before its ledger was summed): that run is left whole, the one before
// it compacted, and the next compaction does the rest; every count and
// sum is as before.
func TestReview8ACompactionKilledMidRun(t *testing.T) {
	t.Parallel()
	f, c := newClockFixture(t, runNow)
	for day := range 4 {
		c.set(runNow.AddDate(0, 0, day))
		f.runAt(t, nightlySpec, c, pipeline.RunOptions{})
	}
	day5 := runNow.AddDate(0, 0, 4)
	before := f.bookkeeping(t)
	checkpoints := f.count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id = 2`)
	ledger := f.count(t, `SELECT count(*) FROM unit_ledger WHERE run_id = 2`)
	cfg, err := pgxpool.ParseConfig(f.dbURL)
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = &ledgerFoldKiller{t: t, dbURL: f.dbURL}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	log := slog.New(slog.DiscardHandler)
	rep, err := pipeline.CompactRuns(t.Context(), pool, log, 24*time.Hour, day5, false, 0)
	require.ErrorContains(t, err, "bookkeeping: compacting run 2")
	require.Equal(t, 1, rep.Runs)
	require.Equal(t, int64(1), f.count(t, `SELECT count(*) FROM runs WHERE compacted_at IS NOT NULL`))
	require.Equal(t, checkpoints, f.count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id = 2`), "run 2 is whole")
	require.Equal(t, ledger, f.count(t, `SELECT count(*) FROM unit_ledger WHERE run_id = 2`))
	require.Zero(t, f.count(t, `SELECT count(*) FROM run_task_counts WHERE run_id = 2`))
	require.Equal(t, before, f.bookkeeping(t))

	rep, err = pipeline.CompactRuns(t.Context(), f.pool, log, 24*time.Hour, day5, false, 0)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Runs, "runs 2 and 3")
	require.Equal(t, before, f.bookkeeping(t))
}

// TestReview8CompactionAfterTheClockWentBack: the host's clock went back
// a day between two runs, so the later run's fetch is stamped before the
// earlier run's. holdings takes the fetch stamped latest for the task's
// latest (run 1, day 2: fresh for max_age 3d on day 4), and compaction
// must keep that one, not the one of the higher run id (run 2, day 1:
// stale on day 4), or the next run buys again what it held.
func TestReview8CompactionAfterTheClockWentBack(t *testing.T) {
	t.Parallel()
	const spec = `jobs:
  - name: j
    max_age: 3d
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}}
`
	f, c := newClockFixture(t, runNow)
	c.set(runNow.AddDate(0, 0, 2))
	f.runAt(t, spec, c, pipeline.RunOptions{})
	c.set(runNow.AddDate(0, 0, 1)) // the clock went back
	f.runAt(t, spec, c, pipeline.RunOptions{Refetch: true})
	c.set(runNow.AddDate(0, 0, 3))
	f.runAt(t, spec, c, pipeline.RunOptions{})
	day4 := runNow.AddDate(0, 0, 4).Add(12 * time.Hour)
	c.set(day4)
	planBefore := f.planAt(t, spec, c, pipeline.PlanOptions{})
	require.Equal(t, 1, planBefore.Held.Tasks, "run 1's fetch of day 2 is fresh")
	before := f.bookkeeping(t)
	rep, err := pipeline.CompactRuns(t.Context(), f.pool, slog.New(slog.DiscardHandler), 24*time.Hour, day4, false, 0)
	require.NoError(t, err)
	require.Equal(t, 2, rep.Runs)
	require.Equal(t, before, f.bookkeeping(t))
	require.Equal(t, planBefore.Held, f.planAt(t, spec, c, pipeline.PlanOptions{}).Held)
	spent := f.spent()
	f.runAt(t, spec, c, pipeline.RunOptions{})
	require.Equal(t, spent, f.spent(), "the next run buys nothing")
}

// TestReview8ADryRunCountsTheClosedMonthsOnce: two runs that both bought
// the same closed months of summary history (--refetch): the real
// compaction keeps each month once, and the dry run must say the same
// number, not count them again for each run (each run's transaction
// rolled back before the next).
func TestReview8ADryRunCountsTheClosedMonthsOnce(t *testing.T) {
	t.Parallel()
	f, c := newClockFixture(t, runNow)
	for day := range 4 {
		c.set(runNow.AddDate(0, 0, day))
		f.runAt(t, nightlySpec, c, pipeline.RunOptions{Refetch: day < 2})
	}
	day5 := runNow.AddDate(0, 0, 4)
	log := slog.New(slog.DiscardHandler)
	dry, err := pipeline.CompactRuns(t.Context(), f.pool, log, 24*time.Hour, day5, true, 0)
	require.NoError(t, err)
	rep, err := pipeline.CompactRuns(t.Context(), f.pool, log, 24*time.Hour, day5, false, 0)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Runs)
	require.Equal(t, f.count(t, `SELECT count(*) FROM task_closed_months`), rep.ClosedMonths)
	dry.DryRun = false
	require.Equal(t, rep, dry, "the dry run says what the real one does")
}

// TestReview8NothingToCompactSaysWhy: a job's one run from weeks ago is
// not compacted (the next run may take it up); the line saying nothing
// is left says so, or a reader looking at that run wonders why.
func TestReview8NothingToCompactSaysWhy(t *testing.T) {
	t.Parallel()
	rep := pipeline.CompactReport{Keep: 7 * 24 * time.Hour, Cutoff: runNow}
	require.Equal(t, "bookkeeping: keep run detail 7d: no run finished before 2026-11-21 03:00 UTC is left to compact "+
		"(the latest run of each job, and one running or interrupted, keep their detail)\n", rep.String())
}
