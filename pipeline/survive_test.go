package pipeline_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/schedule"
)

// cancelAfter is an Observer that cancels the run's context once n pages
// have committed.
type cancelAfter struct {
	pipeline.Observers
	n      int32
	pages  atomic.Int32
	cancel context.CancelFunc
}

func (c *cancelAfter) PageLoaded(int, pipeline.TaskResult) {
	if c.pages.Add(1) == c.n {
		c.cancel()
	}
}

const resumeSpec = `jobs:
  - name: resume
    targets:
      - {url: n300.example, scope: ROOT_DOMAIN}
      - {url: n120.example, scope: ROOT_DOMAIN}
    endpoints:
      overview: {}
      links: {limit: 20}
      ref-domains: {limit: 10}
    keywords: {keywords: [seo], countries: [US, DE]}
`

// TestInterruptedRunIsResumedAndPaysOnce interrupts a run (its context
// cancelled, as SIGTERM does) after a few pages: the pages in flight
// commit, the run is recorded as interrupted, and the next run resumes it
// (the same run, attempt 2), skipping the tasks done and continuing the
// others from their checkpoints. Together they load what a clean run loads
// and pay exactly what it pays: no page is fetched twice.
func TestInterruptedRunIsResumedAndPaysOnce(t *testing.T) {
	t.Parallel()
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(resumeSpec), runNow)
	require.NoError(t, err)
	job := spec.Jobs[0]

	clean := newFixture(t)
	cleanSum, err := clean.Runner(t, runNow, pipeline.Config{Concurrency: 3}).Run(t.Context(), job)
	require.NoError(t, err)
	cleanUnits := clean.Sandbox.Usage("test-key").UnitsSpent

	f := newFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	obs := &cancelAfter{n: 7, cancel: cancel}
	first, err := f.Runner(t, runNow, pipeline.Config{Concurrency: 3, Observer: obs}).Run(ctx, job)
	require.NoError(t, err)
	require.True(t, first.Interrupted)
	require.Equal(t, "interrupted", first.Status())
	require.Positive(t, first.Skipped())
	require.Equal(t, "interrupted", f.query(t, `SELECT status FROM runs WHERE run_id = $1`, first.RunID))
	spentFirst := f.Sandbox.Usage("test-key").UnitsSpent
	require.Less(t, spentFirst, cleanUnits)

	// A probe of etl plan left running is not a run to resume.
	_, err = f.Pool.Exec(t.Context(), `INSERT INTO runs (job, trigger, status, started_at) VALUES ('resume', 'probe', 'running', $1)`, runNow)
	require.NoError(t, err)

	second, err := f.Runner(t, runNow, pipeline.Config{Concurrency: 3}).Run(t.Context(), job)
	require.NoError(t, err)
	require.Equal(t, first.RunID, second.RunID, "the interrupted run is resumed")
	require.Equal(t, 2, second.Attempt)
	require.Equal(t, "succeeded", second.Status())
	require.Equal(t, cleanUnits, f.Sandbox.Usage("test-key").UnitsSpent, "a page was paid twice, or one was missed")

	for _, table := range []string{"backlink_overview", "backlinks", "ref_domains", "keyword_metrics"} {
		require.Equal(t, clean.tableHash(t, table), f.tableHash(t, table), table)
	}
	cleanRows, _, cleanSpent := cleanSum.Totals()
	rows, _, units := second.Totals()
	require.Equal(t, cleanRows, rows, "the resumed run counts the rows of both attempts")
	require.Equal(t, cleanSpent, units)
	require.Equal(t, int64(len(cleanSum.Tasks)), f.Count(t, `SELECT count(*) FROM task_checkpoints WHERE run_id = $1 AND status = 'done'`, first.RunID))
	require.Equal(t, "succeeded 2", f.query(t, `SELECT status || ' ' || attempts FROM runs WHERE run_id = $1`, first.RunID))

	// A third run is a new one, and --fresh closes nothing (none open).
	third, err := f.Runner(t, runNow, pipeline.Config{}).RunWith(t.Context(), job, pipeline.RunOptions{Fresh: true})
	require.NoError(t, err)
	require.NotEqual(t, first.RunID, third.RunID)
	require.Equal(t, 1, third.Attempt)
}

// TestResumedIncrementalTaskAsksPastTheSameWatermark: an incremental task
// with max_rows, interrupted, resumes at its offset asking past the
// watermark it started from, so the table equals a clean run's and no
// page is paid twice. Resumed with a lower max_rows than it read, a task
// is done without a request.
func TestResumedIncrementalTaskAsksPastTheSameWatermark(t *testing.T) {
	t.Parallel()
	const incSpec = `jobs:
  - name: inc
    targets: [{url: n2500.example, scope: ROOT_DOMAIN}]
    endpoints:
      links: {limit: 50, max_rows: 300, incremental: first_seen_at}
      ref-domains: {limit: 40, max_rows: 200}
`
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(incSpec), runNow)
	require.NoError(t, err)
	clean := newFixture(t)
	_, err = clean.Runner(t, runNow, pipeline.Config{Concurrency: 1}).Run(t.Context(), spec.Jobs[0])
	require.NoError(t, err)

	f := newFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first, err := f.Runner(t, runNow, pipeline.Config{Concurrency: 2, Observer: &cancelAfter{n: 3, cancel: cancel}}).Run(ctx, spec.Jobs[0])
	require.NoError(t, err)
	require.True(t, first.Interrupted)
	second, err := f.Runner(t, runNow, pipeline.Config{Concurrency: 2}).Run(t.Context(), spec.Jobs[0])
	require.NoError(t, err)
	require.Equal(t, first.RunID, second.RunID)
	require.Equal(t, clean.tableHash(t, "backlinks"), f.tableHash(t, "backlinks"))
	require.Equal(t, clean.tableHash(t, "ref_domains"), f.tableHash(t, "ref_domains"))
	require.Equal(t, clean.Sandbox.Usage("test-key").UnitsSpent, f.Sandbox.Usage("test-key").UnitsSpent)

	// Interrupted again after a page of a fresh run, then resumed with
	// max_rows below what ref-domains read: it is done, and asks nothing.
	g := newFixture(t)
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	third, err := g.Runner(t, runNow, pipeline.Config{Concurrency: 1, Observer: &cancelAfter{n: 8, cancel: cancel}}).Run(ctx, spec.Jobs[0])
	require.NoError(t, err)
	require.True(t, third.Interrupted)
	lower, err := jobspec.ParseSpec("jobs.yaml", []byte(strings.Replace(incSpec, "max_rows: 200", "max_rows: 40", 1)), runNow)
	require.NoError(t, err)
	before := g.Sandbox.Usage("test-key").Requests
	fourth, err := g.Runner(t, runNow, pipeline.Config{Concurrency: 1}).Run(t.Context(), lower.Jobs[0])
	require.NoError(t, err)
	require.Equal(t, third.RunID, fourth.RunID)
	require.Equal(t, "succeeded", fourth.Status())
	require.Equal(t, before, g.Sandbox.Usage("test-key").Requests, "a task past its max_rows asked again")
}

// TestTaskKeysTellTasksApart: competitors asks about the domain alone, and
// sets may hold the same urls; their tasks still have keys of their own.
func TestTaskKeysTellTasksApart(t *testing.T) {
	t.Parallel()
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(`jobs:
  - name: keys
    targets:
      - {url: example.com, scope: ROOT_DOMAIN}
      - {url: example.com, scope: SUBDOMAIN}
    target_sets:
      - {name: a, scope: ROOT_DOMAIN, urls: [example.com, example.org]}
      - {name: b, scope: ROOT_DOMAIN, urls: [example.com, example.org]}
    endpoints: {competitors: {}, comparison: {}}
`), runNow)
	require.NoError(t, err)
	keys := map[string]bool{}
	tasks := spec.Jobs[0].Tasks(runNow)
	for _, task := range tasks {
		keys[task.Key()] = true
	}
	require.Len(t, keys, len(tasks))
}

// TestARunOfAnEarlierMonthIsNotResumed: a run interrupted in October is
// closed as failed, with why, by a run in November, which starts anew.
func TestARunOfAnEarlierMonthIsNotResumed(t *testing.T) {
	t.Parallel()
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(resumeSpec), runNow)
	require.NoError(t, err)
	f := newFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	october := runNow.AddDate(0, -1, 0)
	first, err := f.Runner(t, october, pipeline.Config{Observer: &cancelAfter{n: 2, cancel: cancel}}).Run(ctx, spec.Jobs[0])
	require.NoError(t, err)
	require.True(t, first.Interrupted)

	second, err := f.Runner(t, runNow, pipeline.Config{}).Run(t.Context(), spec.Jobs[0])
	require.NoError(t, err)
	require.NotEqual(t, first.RunID, second.RunID)
	require.Equal(t, "failed", f.query(t, `SELECT status FROM runs WHERE run_id = $1`, first.RunID))
	require.Contains(t, f.query(t, `SELECT error FROM runs WHERE run_id = $1`, first.RunID), "started in 2026-10")
}

// TestAJobNeverOverlapsItself: while a run of the job holds its lock,
// another runner (its own pool, as another process has) is refused.
func TestAJobNeverOverlapsItself(t *testing.T) {
	t.Parallel()
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(resumeSpec), runNow)
	require.NoError(t, err)
	f := newFixture(t)
	other := f.NewPool(t)
	client, err := extract.New(extract.Config{BaseURL: f.URL, APIKey: "test-key"})
	require.NoError(t, err)
	second, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: other, Allocator: f.Mem, Now: func() time.Time { return runNow }})
	require.NoError(t, err)

	var busy error
	obs := &onFirstPage{fn: func() { _, busy = second.Run(t.Context(), spec.Jobs[0]) }}
	_, err = f.Runner(t, runNow, pipeline.Config{Observer: obs}).Run(t.Context(), spec.Jobs[0])
	require.NoError(t, err)
	require.ErrorIs(t, busy, runs.ErrJobBusy)
	require.Contains(t, busy.Error(), "job resume, run ")
	require.Equal(t, int64(1), f.Count(t, `SELECT count(*) FROM runs`))
}

type onFirstPage struct {
	pipeline.Observers
	once sync.Once
	fn   func()
}

func (o *onFirstPage) PageLoaded(int, pipeline.TaskResult) { o.once.Do(o.fn) }

func (f *fixture) query(t *testing.T, q string, args ...any) string {
	t.Helper()
	var s string
	require.NoError(t, f.Pool.QueryRow(t.Context(), q, args...).Scan(&s))
	return s
}

const backfillSpec = `jobs:
  - name: history
    targets:
      - {url: n2500.example, scope: ROOT_DOMAIN}
    endpoints:
      summary: {limit: 12}
      links: {limit: 100}
    keywords: {keywords: [seo], countries: [US]}
`

// TestBackfillFillsAMonthPerRowAndThenSpendsNothing backfills 24
// months of summary and keyword metrics: 3 year partitions each, one row
// per month. Backfilled again with reprocess missing, nothing is pending.
func TestBackfillFillsAMonthPerRowAndThenSpendsNothing(t *testing.T) {
	t.Parallel()
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(backfillSpec), runNow)
	require.NoError(t, err)
	job := spec.Jobs[0]
	f := newFixture(t)
	from, to := time.Date(2024, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	tasks, notes, err := job.BackfillTasks(jobspec.BackfillRequest{From: from, To: to, Reverse: true}, runNow)
	require.NoError(t, err)
	require.Equal(t, []string{"left out, they have no history (the API answers their current state only): links"}, notes)
	require.Len(t, tasks, 48)
	require.Equal(t, "2026-11", tasks[0].Month.Format("2006-01"), "--reverse: newest first")

	r := f.Runner(t, runNow, pipeline.Config{Trigger: "backfill"})
	pending, err := runs.Pending(t.Context(), f.Pool, job, tasks, jobspec.ReprocessMissing)
	require.NoError(t, err)
	require.Len(t, pending, 48)
	sum, err := r.RunWith(t.Context(), job, pipeline.RunOptions{Trigger: "backfill", Tasks: pending})
	require.NoError(t, err)
	require.Equal(t, "succeeded", sum.Status())
	spent := f.Sandbox.Usage("test-key").UnitsSpent
	require.Equal(t, int64(24*40+24*20), spent, "a line of summary and a request of keyword metrics per month")

	for _, table := range []string{"backlink_history", "keyword_metrics"} {
		require.Equal(t, int64(3), f.Count(t, `SELECT count(*) FROM pg_inherits WHERE inhparent = $1::regclass`, table), table+": a partition per year, 2024 to 2026")
		require.Equal(t, int64(24), f.Count(t, `SELECT count(DISTINCT month) FROM `+table+` WHERE month BETWEEN $1 AND $2`, from, to), table)
	}
	require.Equal(t, "backfill", f.query(t, `SELECT trigger FROM runs WHERE run_id = $1`, sum.RunID))

	again, err := runs.Pending(t.Context(), f.Pool, job, tasks, jobspec.ReprocessMissing)
	require.NoError(t, err)
	require.Empty(t, again, "every month is done")
	failed, err := runs.Pending(t.Context(), f.Pool, job, tasks, jobspec.ReprocessFailed)
	require.NoError(t, err)
	require.Empty(t, failed)
	all, err := runs.Pending(t.Context(), f.Pool, job, tasks, jobspec.ReprocessAll)
	require.NoError(t, err)
	require.Len(t, all, 48)
}

func TestBackfillRefusesEndpointsWithoutHistory(t *testing.T) {
	t.Parallel()
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(backfillSpec), runNow)
	require.NoError(t, err)
	m := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		req  jobspec.BackfillRequest
		want string
	}{
		{jobspec.BackfillRequest{From: m, To: m, Endpoints: []string{"links"}}, "links has no history: the API answers its current state only"},
		{jobspec.BackfillRequest{From: m, To: m.AddDate(1, 0, 0)}, "--to 2027-01 is in the future"},
		{jobspec.BackfillRequest{From: m, To: m.AddDate(0, -1, 0)}, "--from 2026-01 is after --to 2025-12"},
		{jobspec.BackfillRequest{From: time.Date(2011, 12, 1, 0, 0, 0, 0, time.UTC), To: m, Endpoints: []string{"keyword-metrics"}},
			"keyword-metrics has no history before 2012-01"},
	} {
		_, _, err := spec.Jobs[0].BackfillTasks(tc.req, runNow)
		require.ErrorContains(t, err, tc.want)
	}
}

// TestSchedulerCatchesUpMissedTicksOnce: with ticks missed while no
// scheduler was up, catch_up once runs the job once, for the latest of
// them; catch_up skip runs nothing and says so.
func TestSchedulerCatchesUpMissedTicksOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"once", "skip"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			spec, err := jobspec.ParseSpec("jobs.yaml", []byte(`jobs:
  - name: nightly
    schedule: "0 3 * * *"
    timezone: Europe/Paris
    catch_up: `+mode+`
    keywords: {keywords: [seo], countries: [US]}
`), runNow)
			require.NoError(t, err)
			f := newFixture(t)
			// The last tick any scheduler claimed was four nights ago.
			now := time.Now()
			paris, _ := time.LoadLocation("Europe/Paris")
			last := time.Date(now.Year(), now.Month(), now.Day()-4, 3, 0, 0, 0, paris)
			_, err = f.Pool.Exec(t.Context(), `INSERT INTO schedule_ticks (job, tick, claimed_by, claimed_at, outcome) VALUES ('nightly', $1, 'old', $1, 'ran')`, last)
			require.NoError(t, err)

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			logs := &waitLog{want: "ticks missed while the scheduler was down are skipped (catch_up: skip)", seen: make(chan struct{})}
			var outcomes []string
			var mu sync.Mutex
			s, err := schedule.New(schedule.Config{
				Runner: f.Runner(t, runNow, pipeline.Config{}),
				Logger: slog.New(logs),
				OnTick: func(job, outcome string) {
					mu.Lock()
					outcomes = append(outcomes, outcome)
					mu.Unlock()
					cancel()
				},
			})
			require.NoError(t, err)
			if mode == "skip" {
				go func() {
					select {
					case <-logs.seen:
						cancel()
					case <-ctx.Done():
					}
				}()
			}
			require.NoError(t, s.Run(ctx, spec, nil, nil))
			mu.Lock()
			defer mu.Unlock()
			if mode == "skip" {
				require.Empty(t, outcomes)
				require.Equal(t, int64(0), f.Count(t, `SELECT count(*) FROM runs`))
				return
			}
			require.Equal(t, []string{schedule.TickCaughtUp}, outcomes)
			latest := last.AddDate(0, 0, 4)
			if latest.After(now) {
				latest = latest.AddDate(0, 0, -1)
			}
			require.Equal(t, int64(1), f.Count(t, `SELECT count(*) FROM runs WHERE trigger = 'schedule' AND scheduled_for = $1`, latest))
			require.Equal(t, "caught up", f.query(t, `SELECT outcome FROM schedule_ticks WHERE tick = $1`, latest))
		})
	}
}

// waitLog is a slog handler that closes seen when a record's message
// contains want.
type waitLog struct {
	want string
	seen chan struct{}
	once sync.Once
}

func (w *waitLog) Enabled(context.Context, slog.Level) bool { return true }
func (w *waitLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return nil
}
func (w *waitLog) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *waitLog) WithGroup(string) slog.Handler      { return w }
