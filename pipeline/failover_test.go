package pipeline_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"path/filepath"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/schedule"
)

// exampleJob is the job example of jobs.yaml without its listings (which
// need a signed-in account): the backlink and keyword tasks that cost
// units.
func exampleJob(t *testing.T) *jobspec.Job {
	t.Helper()
	spec, err := jobspec.LoadSpec("../jobs.yaml", runNow)
	require.NoError(t, err)
	job, err := spec.Job("example")
	require.NoError(t, err)
	job.Listings = nil
	return job
}

// replicatedFixture is a fixture whose warehouse is a primary and a
// streaming standby, reached through a URL naming both
// (target_session_attrs=read-write).
func replicatedFixture(t *testing.T, sync bool) (*fixture, *pgtest.Replicated) {
	t.Helper()
	f := newFixture(t)
	rep := pgtest.NewReplicated(t, sync, nil)
	f.DBURL = rep.URL
	f.Pool = f.NewPool(t)
	return f, rep
}

// atPages is an Observer that calls do[n] (on the committing task's
// goroutine) once n pages of the run have committed. After kill(), it
// measures the time to the next page committed (resumed).
type atPages struct {
	pipeline.Observers
	pages atomic.Int32
	do    map[int32]func()

	mu       sync.Mutex
	killedAt time.Time
	resumed  time.Duration
}

func (a *atPages) PageLoaded(int, pipeline.TaskResult) {
	if f := a.do[a.pages.Add(1)]; f != nil {
		f()
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.killedAt.IsZero() && a.resumed == 0 {
		a.resumed = time.Since(a.killedAt)
	}
}

// kill notes the moment the primary is killed.
func (a *atPages) kill() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.killedAt = time.Now()
}

// cleanExample runs the example job on a warehouse of its own and returns
// the fixture and what the sandbox charged.
func cleanExample(t *testing.T, job *jobspec.Job) (*fixture, int64) {
	t.Helper()
	clean := newFixture(t)
	_, err := clean.Runner(t, runNow, pipeline.Config{}).Run(t.Context(), job)
	require.NoError(t, err)
	return clean, clean.Spent()
}

// exampleTables are the tables the example job (without listings) loads.
var exampleTables = []string{"backlink_overview", "backlink_history", "backlinks", "ref_domains", "anchors",
	"score_profile", "comparison", "matrix", "keyword_metrics"}

// ledgerUnits is what the ledger holds for every run: settled rows at what
// they cost, unsettled ones at their reservation.
func (f *fixture) ledgerUnits(t *testing.T) int64 {
	return f.Count(t, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`)
}

// lostOnCitus is what a failover that lost commits leaves on Citus: the
// workers kept what the coordinator's lost commits did there (the
// partitions and shards the loader made, their metadata, the rows), and
// the new coordinator, which does not know them, fails to make them
// again (docs/warehouse.md, On Citus: a Citus coordinator's standby must
// be synchronous). The run fails on that, and its ledger still counts
// every unit the API charged.
func lostOnCitus(t *testing.T, f *fixture, err error) {
	t.Helper()
	t.Logf("on Citus, the failover that lost commits ends the run with: %v", err)
	require.GreaterOrEqual(t, f.ledgerUnits(t), f.Spent(), "the ledger counts less than the API charged")
}

// TestFailoverThatLostCommitsRebooksAndReloads: the standby is cut off
// from its primary after a few pages of the example job, the run commits
// more pages on the primary alone, then the primary dies (pg_ctl stop -m
// immediate) and the standby is promoted: the commits of those pages are
// lost. The run notices, books again every unit the API charged for
// them, loads them again from the answers it kept, and finishes: the
// tables equal a clean run's, the ledger is at least what the sandbox
// charged, no task failed, and no page was bought twice.
func TestFailoverThatLostCommitsRebooksAndReloads(t *testing.T) {
	t.Parallel()
	job := exampleJob(t)
	clean, cleanCharge := cleanExample(t, job)

	f, rep := replicatedFixture(t, false)
	var failover sync.WaitGroup
	obs := &atPages{}
	obs.do = map[int32]func(){
		4: func() { require.NoError(t, rep.Standby.StopReceiving(context.WithoutCancel(t.Context()))) },
		14: func() {
			obs.kill()
			require.NoError(t, rep.Primary.Crash())
			failover.Go(func() { require.NoError(t, rep.Promote(context.WithoutCancel(t.Context()))) })
		},
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sum, err := f.Runner(t, runNow, pipeline.Config{Observer: obs, Logger: log}).Run(t.Context(), job)
	failover.Wait()
	if pgtest.Citus() {
		lostOnCitus(t, f, err)
		return
	}
	require.NoError(t, err)
	require.Zero(t, sum.Failed())
	require.GreaterOrEqual(t, obs.pages.Load(), int32(14), "the primary died mid-run")
	fo := sum.Failover
	require.NotNil(t, fo, "the run saw its connections lost")
	t.Logf("failover: %s (%+v); the first page after the kill committed %s after it", fo, *fo, obs.resumed.Round(time.Millisecond))
	require.True(t, fo.Lost(), "the failover lost commits of the run")
	require.Positive(t, fo.PagesReloaded)
	require.Positive(t, fo.UnitsRebooked)
	require.Zero(t, fo.PagesLost)
	require.Zero(t, fo.UnitsBoughtTwice)

	charged := f.Spent()
	t.Logf("the sandbox charged %d units (a clean run: %d); the new primary's ledger holds %d", charged, cleanCharge, f.ledgerUnits(t))
	require.GreaterOrEqual(t, f.ledgerUnits(t), charged, "the ledger counts less than the API charged")
	require.Equal(t, cleanCharge, charged, "a page was bought twice")
	for _, table := range exampleTables {
		require.Equal(t, clean.tableHash(t, table), f.tableHash(t, table), table)
	}
}

// TestSynchronousFailoverAtRandomMoments kills the primary (pg_ctl stop
// -m immediate) of a synchronous standby at a random moment of the
// example job, five times (a fresh pair each time), and promotes the
// standby: each run finishes in one go, its tables equal a clean run's,
// no unit is bought twice, the ledger holds at least what the sandbox
// charged, and no commit was lost.
func TestSynchronousFailoverAtRandomMoments(t *testing.T) {
	t.Parallel()
	job := exampleJob(t)
	clean := newFixture(t)
	counted := &atPages{}
	_, err := clean.Runner(t, runNow, pipeline.Config{Observer: counted}).Run(t.Context(), job)
	require.NoError(t, err)
	cleanCharge, pages := clean.Spent(), counted.pages.Load()
	seed := time.Now().UnixNano()
	t.Logf("seed %d: the clean run commits %d pages and is charged %d units", seed, pages, cleanCharge)
	rnd := rand.New(rand.NewPCG(uint64(seed), 0))
	for i := range 5 {
		at := 2 + rnd.Int32N(pages-4) // a page mid-run
		t.Run(fmt.Sprintf("kill%d_at_page_%d", i+1, at), func(t *testing.T) {
			t.Parallel()
			f, rep := replicatedFixture(t, true)
			var failover sync.WaitGroup
			var killed time.Time
			obs := &atPages{}
			obs.do = map[int32]func(){at: func() {
				killed = time.Now()
				obs.kill()
				require.NoError(t, rep.Primary.Crash())
				failover.Go(func() { require.NoError(t, rep.Promote(context.WithoutCancel(t.Context()))) })
			}}
			sum, err := f.Runner(t, runNow, pipeline.Config{Observer: obs}).Run(t.Context(), job)
			failover.Wait()
			require.NoError(t, err)
			require.Zero(t, sum.Failed())
			require.False(t, killed.IsZero(), "the primary died mid-run")
			charged := f.Spent()
			require.Equal(t, cleanCharge, charged, "units were bought twice")
			require.GreaterOrEqual(t, f.ledgerUnits(t), charged, "the ledger counts less than the API charged")
			for _, table := range exampleTables {
				require.Equal(t, clean.tableHash(t, table), f.tableHash(t, table), table)
			}
			require.NotNil(t, sum.Failover, "the run saw its connections lost")
			require.False(t, sum.Failover.Lost(), sum.Failover.String())
			t.Logf("failover: %s; the first page after the kill committed %s after it", sum.Failover, obs.resumed.Round(time.Millisecond))
		})
	}
}

// TestFailoverPastTheKeptAnswers: as TestFailoverThatLostCommitsRebooksAndReloads,
// but the run keeps no answer (KeepAnswers < 0): the lost pages cannot be
// loaded again. Their ledger rows are booked again all the same (the
// ledger never counts less than the sandbox charged), their tasks fail at
// the lost page, the run counts what must be bought again, and the next
// run of the job continues those tasks from their lost pages: the tables
// then equal a clean run's, and what was bought twice is what the run
// counted.
func TestFailoverPastTheKeptAnswers(t *testing.T) {
	t.Parallel()
	job := exampleJob(t)
	clean, cleanCharge := cleanExample(t, job)

	f, rep := replicatedFixture(t, false)
	var failover sync.WaitGroup
	obs := &atPages{}
	obs.do = map[int32]func(){
		4: func() { require.NoError(t, rep.Standby.StopReceiving(context.WithoutCancel(t.Context()))) },
		14: func() {
			obs.kill()
			require.NoError(t, rep.Primary.Crash())
			failover.Go(func() { require.NoError(t, rep.Promote(context.WithoutCancel(t.Context()))) })
		},
	}
	sum, err := f.Runner(t, runNow, pipeline.Config{Observer: obs, KeepAnswers: -1}).Run(t.Context(), job)
	failover.Wait()
	if pgtest.Citus() {
		lostOnCitus(t, f, err)
		return
	}
	require.Error(t, err)
	require.Contains(t, err.Error(), "its answer was no longer kept")
	fo := sum.Failover
	require.NotNil(t, fo)
	t.Logf("failover: %s", fo)
	require.Positive(t, fo.PagesLost)
	require.Zero(t, fo.PagesReloaded)
	require.Positive(t, fo.UnitsBoughtTwice)
	require.Positive(t, sum.Failed())
	require.GreaterOrEqual(t, f.ledgerUnits(t), f.Spent(), "the ledger counts less than the API charged")

	next, err := f.Runner(t, runNow, pipeline.Config{}).Run(t.Context(), job)
	require.NoError(t, err)
	require.Equal(t, sum.RunID, next.RunID, "the run is continued")
	for _, table := range exampleTables {
		require.Equal(t, clean.tableHash(t, table), f.tableHash(t, table), table)
	}
	charged := f.Spent()
	require.GreaterOrEqual(t, f.ledgerUnits(t), charged, "the ledger counts less than the API charged")
	require.Equal(t, fo.UnitsBoughtTwice, charged-cleanCharge, "the units counted as bought twice are those bought twice")
	t.Logf("bought twice: %d units counted, %d charged past a clean run", fo.UnitsBoughtTwice, charged-cleanCharge)
}

// TestSchedulerSurvivesAFailover: a scheduler runs the example job every
// second on a synchronous primary and standby; the primary is killed in
// the middle of the first run and the standby promoted. The run finishes
// on the standby, the next ticks are claimed and run there (holding what
// the warehouse has fresh): no run failed, nothing was bought twice, and
// the tables equal a clean run's.
func TestSchedulerSurvivesAFailover(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("../jobs.yaml")
	require.NoError(t, err)
	every := strings.Replace(string(text), `schedule: "0 3 * * *"`, `schedule: "* * * * * *"`, 1)
	require.NotEqual(t, string(text), every)
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(every), runNow)
	require.NoError(t, err)
	job, err := spec.Job("example")
	require.NoError(t, err)
	job.Listings = nil
	clean, cleanCharge := cleanExample(t, job)

	f, rep := replicatedFixture(t, true)
	var failover sync.WaitGroup
	obs := &atPages{}
	obs.do = map[int32]func(){10: func() {
		require.NoError(t, rep.Primary.Crash())
		failover.Go(func() { require.NoError(t, rep.Promote(context.WithoutCancel(t.Context()))) })
	}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	var outcomes []string
	s, err := schedule.New(schedule.Config{
		Runner: f.Runner(t, runNow, pipeline.Config{Observer: obs}),
		OnTick: func(_, outcome string) {
			mu.Lock()
			defer mu.Unlock()
			if outcomes = append(outcomes, outcome); len(outcomes) == 3 {
				cancel()
			}
		},
	})
	require.NoError(t, err)
	require.NoError(t, s.Run(ctx, spec, nil, nil))
	failover.Wait()
	require.Equal(t, []string{schedule.TickRan, schedule.TickRan, schedule.TickRan}, outcomes)
	require.GreaterOrEqual(t, obs.pages.Load(), int32(10), "the primary died mid-run")
	require.Equal(t, int64(3), f.Count(t, `SELECT count(*) FROM runs WHERE trigger = 'schedule' AND status = 'succeeded'`))
	require.Equal(t, int64(3), f.Count(t, `SELECT count(*) FROM schedule_ticks WHERE outcome = 'ran' AND run_id IS NOT NULL`))
	charged := f.Spent()
	require.Equal(t, cleanCharge, charged, "units were bought twice")
	require.GreaterOrEqual(t, f.ledgerUnits(t), charged, "the ledger counts less than the API charged")
	for _, table := range exampleTables {
		require.Equal(t, clean.tableHash(t, table), f.tableHash(t, table), table)
	}
}

// atEnd is an Observer that calls last once every task of the run has
// finished: after the run's last commit of a page, before it records its
// end.
type atEnd struct {
	pipeline.Observers
	tasks, done atomic.Int32
	last        func()
}

func (a *atEnd) RunStarted(_ *pipeline.Summary, tasks []jobspec.Task) {
	a.tasks.Store(int32(len(tasks)))
}

func (a *atEnd) TaskFinished(int, pipeline.TaskResult) {
	if a.done.Add(1) == a.tasks.Load() {
		a.last()
	}
}

// TestFailoverAfterTheLastPage: the standby is cut off mid-run, and the
// primary dies after the run's last page committed, while the run records
// its end: the run finds the commits lost when that fails, mends them
// (booked again, loaded again), and records its end on the new primary.
func TestFailoverAfterTheLastPage(t *testing.T) {
	t.Parallel()
	job := exampleJob(t)
	clean, cleanCharge := cleanExample(t, job)

	f, rep := replicatedFixture(t, false)
	stop := &atPages{do: map[int32]func(){
		4: func() { require.NoError(t, rep.Standby.StopReceiving(context.WithoutCancel(t.Context()))) },
	}}
	end := &atEnd{last: func() {
		require.NoError(t, rep.Primary.Crash())
		require.NoError(t, rep.Promote(context.WithoutCancel(t.Context())))
	}}
	sum, err := f.Runner(t, runNow, pipeline.Config{Observer: pipeline.Observers{stop, end}}).Run(t.Context(), job)
	if pgtest.Citus() {
		lostOnCitus(t, f, err)
		return
	}
	require.NoError(t, err)
	require.NotNil(t, sum.Failover)
	t.Logf("failover: %s", sum.Failover)
	require.True(t, sum.Failover.Lost())
	require.Zero(t, sum.Failover.PagesLost)
	require.Equal(t, "succeeded", f.query(t, `SELECT status FROM runs WHERE run_id = $1`, sum.RunID))
	charged := f.Spent()
	require.Equal(t, cleanCharge, charged, "a page was bought twice")
	require.GreaterOrEqual(t, f.ledgerUnits(t), charged, "the ledger counts less than the API charged")
	require.Equal(t, f.ledgerUnits(t), f.Count(t, `SELECT units FROM runs WHERE run_id = $1`, sum.RunID), "runs.units is the ledger's")
	for _, table := range exampleTables {
		require.Equal(t, clean.tableHash(t, table), f.tableHash(t, table), table)
	}
}

// TestAPaidPageLoadsAgainWithoutATempDir: the temporary folder is not
// there (TMPDIR names a folder that does not exist: a full or read-only
// /tmp fails alike), and a page of 5,000 links (1.4 MB, more than the
// answer kept in memory) loses its connection at its first COPY. It is
// loaded again from the answer kept, all of it in memory: not thrown
// away (and bought again by the next run). Not parallel: it sets TMPDIR.
func TestAPaidPageLoadsAgainWithoutATempDir(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "gone"))
	f := newFixture(t)
	k := &pageKiller{t: t, dbURL: f.DBURL, copyAt: 1}
	f.Pool = tracedPool(t, f.DBURL, 4, k)
	sum, err := f.runJob(t, linksSpec("n5000.example", "limit: 5000"), pipeline.Config{Concurrency: 1})
	require.NoError(t, err)
	require.Equal(t, int32(1), k.killed.Load())
	require.Equal(t, "succeeded", sum.Status())
	require.Equal(t, int64(2), f.Sandbox.Usage("test-key").Requests, "5,000 links and an empty page, none asked again")
	requirePaidIsLoaded(t, f, f.Pool, 5000)
}
