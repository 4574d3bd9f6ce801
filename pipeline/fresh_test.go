package pipeline_test

import (
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

// clock is a movable clock shared by a sandbox and the runs.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// newClockFixture serves a sandbox on a clock that the test moves.
func newClockFixture(t *testing.T, at time.Time) (*fixture, *clock) {
	t.Helper()
	c := &clock{t: at}
	sb, err := sandbox.New(sandbox.Config{Seed: 7, Now: c.now, APIKeys: []string{"test-key"}})
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	f := &fixture{sandbox: sb, url: srv.URL, mem: mem, dbURL: pgtest.NewDB(t)}
	f.pool = f.newPool(t)
	return f, c
}

// runAt runs the job of spec at the clock's time, with o.
func (f *fixture) runAt(t *testing.T, spec string, c *clock, o pipeline.RunOptions) *pipeline.Summary {
	t.Helper()
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), c.now())
	require.NoError(t, err)
	client, err := extract.New(extract.Config{BaseURL: f.url, APIKey: "test-key"})
	require.NoError(t, err)
	r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.pool, Allocator: f.mem, Now: c.now, BatchRows: 5})
	require.NoError(t, err)
	sum, err := r.RunWith(t.Context(), s.Jobs[0], o)
	require.NoError(t, err)
	return sum
}

// planAt plans the job of spec at the clock's time.
func (f *fixture) planAt(t *testing.T, spec string, c *clock, o pipeline.PlanOptions) *pipeline.Plan {
	t.Helper()
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), c.now())
	require.NoError(t, err)
	p, err := pipeline.NewPlanner(pipeline.PlanConfig{Pool: f.pool, Now: c.now})
	require.NoError(t, err)
	plan, err := p.Plan(t.Context(), s.Jobs[0], o)
	require.NoError(t, err)
	return plan
}

// spent is what the sandbox has charged so far.
func (f *fixture) spent() int64 { return f.sandbox.Usage("test-key").UnitsSpent }

// TestARerunTheSameDayBuysNothing: a second run an hour after the first
// holds every task (the default max_age), sends no request and is charged
// nothing; the plan before it says so and what re-buying would cost; the
// runs record the held tasks; --refetch buys everything again.
func TestARerunTheSameDayBuysNothing(t *testing.T) {
	t.Parallel()
	f, c := newClockFixture(t, runNow)
	first := f.runAt(t, sliceSpec, c, pipeline.RunOptions{})
	require.Equal(t, "succeeded", first.Status())
	paid := f.spent()
	require.Positive(t, paid)
	require.Zero(t, first.Held().Tasks)

	c.set(runNow.Add(time.Hour))
	plan := f.planAt(t, sliceSpec, c, pipeline.PlanOptions{})
	require.Equal(t, len(first.Tasks), plan.Held.Tasks, "every task is held")
	require.Equal(t, paid, plan.Held.Units, "what re-buying would cost: what it cost")
	require.Equal(t, int64(0), *plan.Total.Expected)
	require.Equal(t, int64(0), *plan.Total.Requests)
	require.Contains(t, plan.Held.String(), fmt.Sprintf("saves %d units", paid))
	for _, tp := range plan.Tasks {
		require.Equal(t, pipeline.SourceHeld, tp.Source, tp.Name)
		require.Contains(t, tp.Basis, fmt.Sprintf("run %d fetched it 1h ago, within max_age 20h", first.RunID))
	}

	requests := f.sandbox.Usage("test-key").Requests
	second := f.runAt(t, sliceSpec, c, pipeline.RunOptions{})
	require.Equal(t, paid, f.spent(), "the second run is charged nothing")
	require.Equal(t, requests, f.sandbox.Usage("test-key").Requests, "and sends no request")
	require.Equal(t, "succeeded", second.Status())
	h := second.Held()
	require.Equal(t, len(second.Tasks), h.Tasks)
	require.Equal(t, paid, h.Units)
	require.Equal(t, int64(len(second.Tasks)), f.count(t, `SELECT count(*) FROM task_checkpoints
		WHERE run_id = $1 AND status = 'held' AND held_by = $2 AND error LIKE 'held: %'`, second.RunID, first.RunID))
	require.Equal(t, paid, f.count(t, `SELECT sum(held_units) FROM task_checkpoints WHERE run_id = $1`, second.RunID))
	require.Zero(t, f.count(t, `SELECT count(*) FROM unit_ledger WHERE run_id = $1`, second.RunID), "nothing booked")

	// --refetch buys it all again, for that run.
	c.set(runNow.Add(2 * time.Hour))
	require.Zero(t, f.planAt(t, sliceSpec, c, pipeline.PlanOptions{Refetch: true}).Held.Tasks)
	third := f.runAt(t, sliceSpec, c, pipeline.RunOptions{Refetch: true})
	require.Zero(t, third.Held().Tasks)
	require.Equal(t, 2*paid, f.spent())
	// And the next run holds what the refetch bought.
	c.set(runNow.Add(3 * time.Hour))
	fourth := f.runAt(t, sliceSpec, c, pipeline.RunOptions{})
	require.Equal(t, len(fourth.Tasks), fourth.Held().Tasks)
	require.Equal(t, 2*paid, f.spent())
	require.Equal(t, third.RunID, fourth.Tasks[0].Held.RunID)
}

const nightlySpec = `jobs:
  - name: nightly
    schedule: "0 3 * * *"
    targets:
      - {url: example.com, scope: ROOT_DOMAIN}
      - {url: n2500.example, scope: ROOT_DOMAIN}
    endpoints:
      overview: {}
      summary: {limit: 12}
    keywords:
      keywords: [seo tools]
      countries: [US, FR]
      months: [2026-09, 2026-10, 2026-11]
`

// TestANightlyJobBuysClosedMonthsOnce: a nightly job with 12 months of
// summary history buys the 12 months on day 1 and only the current month
// on day 2, and the past months' keyword metrics not again; its tables
// equal those of a job that bought everything both days.
func TestANightlyJobBuysClosedMonthsOnce(t *testing.T) {
	t.Parallel()
	f, c := newClockFixture(t, runNow)
	all, allClock := newClockFixture(t, runNow)

	f.runAt(t, nightlySpec, c, pipeline.RunOptions{})
	all.runAt(t, nightlySpec, allClock, pipeline.RunOptions{Refetch: true})
	day1 := f.spent()
	require.Equal(t, day1, all.spent())
	const summaryLine, overview, keyword = 40, 45, 20
	months := f.count(t, `SELECT count(*) FROM backlink_history`)
	require.GreaterOrEqual(t, months, int64(20), "day 1: up to 12 months of history per target")
	require.Equal(t, int64(2*overview+6*keyword)+months*summaryLine, day1)

	day2 := runNow.AddDate(0, 0, 1)
	c.set(day2)
	allClock.set(day2)
	plan := f.planAt(t, nightlySpec, c, pipeline.PlanOptions{})
	require.Equal(t, 4, plan.Held.Tasks, "the keyword metrics of September and October")
	require.Equal(t, 4, plan.Held.Closed)
	require.Equal(t, 22, plan.Held.Months, "11 closed months of each target's history")
	require.Equal(t, int64(2*overview+2*summaryLine+2*keyword), *plan.Total.Expected, "the plan prices exactly what is asked")

	sum := f.runAt(t, nightlySpec, c, pipeline.RunOptions{})
	all.runAt(t, nightlySpec, allClock, pipeline.RunOptions{Refetch: true})
	require.Equal(t, int64(2*overview+2*summaryLine+2*keyword), f.spent()-day1, "day 2: the current month only")
	require.Equal(t, 2*day1, all.spent(), "the job that buys everything pays day 1 again")
	h := sum.Held()
	require.Equal(t, 4, h.Tasks)
	require.Equal(t, 22, h.Months)
	require.Equal(t, int64(22*summaryLine), h.MonthUnits)
	for _, res := range sum.Tasks {
		if res.Task.Endpoint.Name == "summary" {
			require.Equal(t, 11, res.Task.HeldMonths)
			require.Equal(t, int64(1), res.Rows, res.Task.String())
		}
	}
	for _, table := range []string{"keyword_metrics", "backlink_overview"} {
		require.Equal(t, all.tableHash(t, table), f.tableHash(t, table), table)
	}
	// History: the same months of the same targets, the current month's
	// rows alike, and each closed month as day 1 bought it. (The sandbox
	// invents a closed month's counts anew each day, stretching a target's
	// backlinks over its history up to the sandbox day, so the job that
	// buys them again gets slightly other numbers; the API's closed months
	// do not change.)
	keys := `SELECT string_agg(target_id || ' ' || month, ',' ORDER BY target_id, month) FROM backlink_history`
	require.Equal(t, all.query(t, keys), f.query(t, keys))
	current := `SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM backlink_history r WHERE month = '2026-11-01'`
	require.Equal(t, all.query(t, current), f.query(t, current))
	require.Equal(t, months-2, f.count(t, `SELECT count(*) FROM backlink_history WHERE month < '2026-11-01' AND observed_at = $1`, runNow), "the closed months are day 1's")

	// Day 3: the same again; a plan with --refetch prices all 12 months.
	day3 := day2.AddDate(0, 0, 1)
	c.set(day3)
	require.Zero(t, f.planAt(t, nightlySpec, c, pipeline.PlanOptions{Refetch: true}).Held.Months)
	before := f.spent()
	f.runAt(t, nightlySpec, c, pipeline.RunOptions{})
	require.Equal(t, int64(2*overview+2*summaryLine+2*keyword), f.spent()-before)
}

// TestAMonthFetchedBeforeItEndedIsBoughtOnceMore: across the turn of a
// month, the month that just ended is asked for once more (what was held
// of it was fetched before it ended), and the new month's data is bought
// whatever max_age says; the day after, only the current month.
func TestAMonthFetchedBeforeItEndedIsBoughtOnceMore(t *testing.T) {
	t.Parallel()
	spec := `jobs:
  - name: j
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints:
      overview: {}
      summary: {limit: 6}
`
	lastDay := time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)
	f, c := newClockFixture(t, lastDay)
	f.runAt(t, spec, c, pipeline.RunOptions{})
	paid := f.spent()
	require.Equal(t, int64(45+6*40), paid)

	c.set(lastDay.Add(2 * time.Hour)) // 1 December, 01:00
	sum := f.runAt(t, spec, c, pipeline.RunOptions{})
	require.Zero(t, sum.Held().Tasks, "a new month's data: bought within max_age")
	require.Equal(t, int64(45+2*40), f.spent()-paid, "November (fetched before it ended) and December")
	paid = f.spent()

	c.set(lastDay.Add(28 * time.Hour)) // 2 December, 03:00
	f.runAt(t, spec, c, pipeline.RunOptions{})
	require.Equal(t, int64(45+40), f.spent()-paid, "December only")
}

// TestMaxAgeOverridesAndWhatHoldsIt: a job's max_age and an endpoint's
// override the default; a task whose rows were removed from the warehouse,
// or that now wants more rows than it fetched, is bought again.
func TestMaxAgeOverridesAndWhatHoldsIt(t *testing.T) {
	t.Parallel()
	spec := func(maxRows int) string {
		return fmt.Sprintf(`jobs:
  - name: j
    max_age: 7d
    targets: [{url: example.com, scope: ROOT_DOMAIN}, {url: n2500.example, scope: ROOT_DOMAIN}]
    endpoints:
      overview: {}
      score-profile: {max_age: 0}
      links: {max_rows: %d}
`, maxRows)
	}
	f, c := newClockFixture(t, runNow)
	first := f.runAt(t, spec(5), c, pipeline.RunOptions{})
	require.Zero(t, first.Failed())

	c.set(runNow.AddDate(0, 0, 6)) // 6 days later: within 7d
	paid := f.spent()
	sum := f.runAt(t, spec(5), c, pipeline.RunOptions{})
	require.Equal(t, 4, sum.Held().Tasks, "overview and links of both targets")
	var profiles int64
	for _, res := range sum.Tasks {
		if res.Task.Endpoint.Name == "score-profile" {
			require.Nil(t, res.Held, "max_age 0: bought every run")
			profiles += res.Units
		}
	}
	require.Positive(t, profiles)
	require.Equal(t, profiles, f.spent()-paid)

	// Rows removed from the warehouse are bought again; fewer rows wanted
	// stay held; more rows are bought.
	_, err := f.pool.Exec(t.Context(), `DELETE FROM backlink_overview WHERE target_id = (SELECT target_id FROM targets WHERE url = 'example.com')`)
	require.NoError(t, err)
	sum = f.runAt(t, spec(3), c, pipeline.RunOptions{})
	for _, res := range sum.Tasks {
		switch res.Task.String() {
		case "overview example.com (ROOT_DOMAIN)":
			require.Nil(t, res.Held, "its row was deleted")
			require.Equal(t, int64(1), res.Rows)
		case "overview n2500.example (ROOT_DOMAIN)", "links example.com (ROOT_DOMAIN)", "links n2500.example (ROOT_DOMAIN)":
			require.NotNil(t, res.Held, res.Task.String())
		}
	}
	sum = f.runAt(t, spec(8), c, pipeline.RunOptions{})
	for _, res := range sum.Tasks {
		if res.Task.Endpoint.Name == "links" {
			require.Nil(t, res.Held, "max_rows 8 wants more than the 5 fetched")
			require.Equal(t, int64(8), res.Rows)
		}
	}

	c.set(runNow.AddDate(0, 0, 14)) // past 7d: bought again
	sum = f.runAt(t, spec(8), c, pipeline.RunOptions{})
	require.Zero(t, sum.Held().Tasks)
}

// TestARaisedSummaryLimitIsBought: summary's limit counts months; a run
// that asks for more months than the last fetch covered buys them, within
// max_age or not, and is held again after.
func TestARaisedSummaryLimitIsBought(t *testing.T) {
	t.Parallel()
	spec := func(limit int) string {
		return fmt.Sprintf("jobs:\n  - name: j\n    targets: [{url: example.com, scope: ROOT_DOMAIN}]\n    endpoints: {summary: {limit: %d}}\n", limit)
	}
	f, c := newClockFixture(t, runNow)
	f.runAt(t, spec(3), c, pipeline.RunOptions{})
	require.Equal(t, int64(3*40), f.spent())
	c.set(runNow.Add(time.Hour))
	require.Equal(t, 1, f.runAt(t, spec(3), c, pipeline.RunOptions{}).Held().Tasks)
	require.Equal(t, int64(3*40), f.spent())

	sum := f.runAt(t, spec(6), c, pipeline.RunOptions{})
	require.Zero(t, sum.Held().Tasks, "3 months more than the last fetch")
	require.Equal(t, int64(6), sum.Tasks[0].Rows)
	require.Equal(t, int64(9*40), f.spent())
	require.Equal(t, 1, f.runAt(t, spec(6), c, pipeline.RunOptions{}).Held().Tasks)
	require.Equal(t, 1, f.runAt(t, spec(2), c, pipeline.RunOptions{}).Held().Tasks, "fewer months: held")
	require.Equal(t, int64(9*40), f.spent())
}
