package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
)

// switch403 answers 403 (units exhausted upstream) to every request past
// the first allow ones while it is on; SetAllow turns it on with a fresh
// allowance, Off lets every request through.
type switch403 struct {
	on   atomic.Bool
	left atomic.Int64
	next http.Handler
}

func (s *switch403) SetAllow(n int64) { s.left.Store(n); s.on.Store(true) }
func (s *switch403) Off()             { s.on.Store(false) }

func (s *switch403) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.on.Load() && s.left.Add(-1) < 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"meta":{"success":false,"status_code":403,"request_id":"x"},"error":{"type":"units_exhausted","code":403,"message":"not enough API units","retryable":false,"details":[]}}`)
		return
	}
	s.next.ServeHTTP(w, r)
}

const stopSpec = `jobs:
  - name: stop
    max_age: 0 # a finished run does not hold the next
    budget: {per_run: %d}
    targets:
      - {url: n300.example, scope: ROOT_DOMAIN}
      - {url: n120.example, scope: ROOT_DOMAIN}
      - {url: n240.example, scope: SUBDOMAIN}
    endpoints:
      overview: {}
      summary: {limit: 6}
      links: {limit: 40}
      ref-domains: {limit: 25}
      score-profile: {}
    keywords: {keywords: [seo, etl], countries: [US, DE]}
`

// TestStoppedRunsAreContinuedAndPayOnce: a run that caps and 403s stop
// three times in a row, run again until it is done, buys every line
// exactly once: the sandbox's charge equals a clean run's and the tables
// are the same. Each continuation is the same run in a new per_run cap
// window: done tasks are not asked for again, the others go on from their
// checkpoint. Before the fix a partial run was closed and the next one
// started every task from offset 0.
func TestStoppedRunsAreContinuedAndPayOnce(t *testing.T) {
	t.Parallel()
	parse := func(perRun int64) *jobspec.Job {
		s, err := jobspec.ParseSpec("jobs.yaml", []byte(fmt.Sprintf(stopSpec, perRun)), runNow)
		require.NoError(t, err)
		return s.Jobs[0]
	}
	clean := newFixture(t)
	cleanSum, err := clean.Runner(t, runNow, pipeline.Config{Concurrency: 4}).Run(t.Context(), parse(10_000_000))
	require.NoError(t, err)
	require.Equal(t, "succeeded", cleanSum.Status())
	cleanUnits := clean.Sandbox.Usage("test-key").UnitsSpent
	require.Greater(t, cleanUnits, int64(20_000), "a job several times the caps below")

	gate := &switch403{}
	f := newFixtureWith(t, func(h http.Handler) http.Handler { gate.next = h; return gate })
	var runID int64
	stops := 0
	for attempt := 1; attempt <= 40; attempt++ {
		perRun := int64(10_000_000)
		switch attempt {
		case 1, 3:
			perRun = 5_000 // a cap stops it
		case 2:
			gate.SetAllow(4) // the API runs out of units after 4 requests
		default:
			gate.Off()
			perRun = 7_000 // caps stop it until it is done
		}
		sum, err := f.Runner(t, runNow, pipeline.Config{Concurrency: 4}).Run(t.Context(), parse(perRun))
		require.NoError(t, err)
		if runID == 0 {
			runID = sum.RunID
		}
		require.Equal(t, runID, sum.RunID, "attempt %d continues the run", attempt)
		require.Equal(t, attempt, sum.Attempt)
		require.Equal(t, attempt, sum.Window, "each continuation may spend per_run anew")
		_, units := sum.AttemptTotals()
		require.LessOrEqual(t, units, perRun)
		if sum.Status() == "succeeded" {
			break
		}
		stops++
		require.NotEmpty(t, sum.Stopped, "attempt %d", attempt)
		if attempt == 2 {
			require.Equal(t, "API units exhausted upstream (HTTP 403)", sum.Stopped)
		}
	}
	t.Logf("stopped %d times, done at attempt %d; charged %d units, a clean run %d", stops, stops+1,
		f.Sandbox.Usage("test-key").UnitsSpent, cleanUnits)
	require.GreaterOrEqual(t, stops, 3)
	require.Equal(t, "succeeded", f.query(t, `SELECT status FROM runs WHERE run_id = $1`, runID))
	require.Equal(t, cleanUnits, f.Sandbox.Usage("test-key").UnitsSpent, "a line was bought twice, or one was missed")
	for _, table := range []string{"backlink_overview", "backlink_history", "backlinks", "ref_domains", "score_profile", "keyword_metrics"} {
		require.Equal(t, clean.tableHash(t, table), f.tableHash(t, table), table)
	}
	// The ledger of the run counts what the sandbox charged: no 403 and no
	// refused reservation was booked.
	require.Equal(t, cleanUnits, f.Count(t, `SELECT units FROM runs WHERE run_id = $1`, runID))

	// The next run of the job is a new one: the finished run is not taken up.
	next, err := f.Runner(t, runNow, pipeline.Config{}).Run(t.Context(), parse(10_000_000))
	require.NoError(t, err)
	require.NotEqual(t, runID, next.RunID)
}

// TestFreshStartsAnewAfterAStop: --fresh leaves the stopped run as it
// ended and buys every task again.
func TestFreshStartsAnewAfterAStop(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(fmt.Sprintf(stopSpec, 3_000)), runNow)
	require.NoError(t, err)
	first, err := f.Runner(t, runNow, pipeline.Config{Concurrency: 2}).Run(t.Context(), s.Jobs[0])
	require.NoError(t, err)
	require.Equal(t, "partial", first.Status())
	second, err := f.Runner(t, runNow, pipeline.Config{Concurrency: 2}).RunWith(t.Context(), s.Jobs[0], pipeline.RunOptions{Fresh: true})
	require.NoError(t, err)
	require.NotEqual(t, first.RunID, second.RunID)
	require.Equal(t, 1, second.Attempt)
	require.Equal(t, "partial", f.query(t, `SELECT status FROM runs WHERE run_id = $1`, first.RunID), "left as it ended")
}

// TestARefusedTaskRunsOnceTheCapIsRaised: a task refused because one of
// its requests cost more than the whole per_run cap says "raise the cap";
// once the cap is raised, the continuation of the run buys it. Before, a
// continuation skipped it as refused in an earlier attempt whatever the
// caps had become, so the run ended partial, and the next run, a new one,
// bought every other task again to get it (here 30 links, 1,350 units,
// twice).
func TestARefusedTaskRunsOnceTheCapIsRaised(t *testing.T) {
	t.Parallel()
	spec := func(perRun int) string {
		return fmt.Sprintf(`jobs:
  - name: r
    budget: {per_run: %d}
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {summary: {limit: 12}, links: {limit: 10, max_rows: 30}}
`, perRun)
	}
	clean := newFixture(t)
	clean.Run(t, spec(1_000_000), runNow)
	cleanUnits := clean.Sandbox.Usage("test-key").UnitsSpent

	f := newFixture(t)
	first, err := f.TryRunWith(t, spec(470), runNow, 1)
	require.NoError(t, err)
	require.Equal(t, "partial", first.Status())
	require.True(t, first.Tasks[0].Refused, "480 units in one request, under a cap of 470")
	require.NotEmpty(t, first.Stopped, "the links stopped at the cap")

	// The plan of the continuation prices the refused task again.
	plan := f.Plan(t, spec(2000), runNow, false)
	require.NotNil(t, plan.Resume)
	require.Equal(t, int64(12*40), *plan.Tasks[0].Expected, plan.Tasks[0].Basis)

	second, err := f.TryRunWith(t, spec(2000), runNow, 1)
	require.NoError(t, err)
	require.Equal(t, first.RunID, second.RunID)
	require.Equal(t, "succeeded", second.Status(), "%+v", second.Tasks[0].Skipped)
	require.Equal(t, int64(12), f.Count(t, `SELECT count(*) FROM backlink_history`))
	require.Equal(t, cleanUnits, f.Sandbox.Usage("test-key").UnitsSpent, "every line bought once")

	// Still dearer than the cap: refused again, and nothing is sent.
	g := newFixture(t)
	_, err = g.TryRunWith(t, spec(470), runNow, 1)
	require.NoError(t, err)
	before := g.Sandbox.Usage("test-key").UnitsSpent
	again, err := g.TryRunWith(t, spec(471), runNow, 1)
	require.NoError(t, err)
	require.True(t, again.Tasks[0].Refused)
	require.Contains(t, again.Tasks[0].Skipped, "more than the whole per_run cap")
	require.NotContains(t, again.Tasks[0].Skipped, "earlier attempt", "weighed again under the new cap")
	require.Equal(t, before+10*45, g.Sandbox.Usage("test-key").UnitsSpent, "only a page of links")
}

// TestAnUnpageableRequestIsNeverCut: summary has no offset, so a cap that
// cannot pay its whole limit must not cut it to fewer months (the months
// left out would be lost, or bought twice when asked again). A request
// dearer than the whole cap is refused alone, the run goes on, ends
// partial, and the plan says so; one that only does not fit what is left
// stops the run, and the continuation buys it whole.
func TestAnUnpageableRequestIsNeverCut(t *testing.T) {
	t.Parallel()
	t.Run("dearer than the whole cap", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		const spec = `jobs:
  - name: s
    budget: {per_run: 200}
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {summary: {limit: 12}, overview: {}}
`
		plan := f.Plan(t, spec, runNow, false)
		require.Len(t, plan.Caps, 1)
		require.False(t, *plan.Caps[0].Fits, plan.Caps[0].String())
		require.Contains(t, plan.Caps[0].String(), "never fits (skipped in every run under this cap): summary n300.example (ROOT_DOMAIN) (one request may cost 480)")

		sum, err := f.TryRun(t, spec, runNow)
		require.NoError(t, err)
		require.Equal(t, "partial", sum.Status())
		res := sum.Tasks[0]
		require.True(t, res.Refused)
		require.Contains(t, res.Skipped, "the next request (summary url=n300.example scope=ROOT_DOMAIN) may cost 480 (up to 12 lines at 40 units each; it cannot be cut to fewer lines)")
		require.Contains(t, res.Skipped, "more than the whole per_run cap")
		require.Zero(t, f.Count(t, `SELECT count(*) FROM backlink_history`), "no month bought")
		require.Equal(t, int64(45), f.Sandbox.Usage("test-key").UnitsSpent, "the overview ran")
		require.Equal(t, "refused", f.query(t, `SELECT status FROM task_checkpoints WHERE run_id = $1 AND endpoint = 'summary'`, sum.RunID))
		require.Zero(t, sum.Unfinished(), "nothing a continuation could do")

		// The next run is a new one, refused again: not a continuation
		// that skips the overview.
		again, err := f.TryRun(t, spec, runNow)
		require.NoError(t, err)
		require.NotEqual(t, sum.RunID, again.RunID)
	})
	t.Run("dearer than what is left", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		const spec = `jobs:
  - name: s
    budget: {per_run: 500}
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}, summary: {limit: 12}}
`
		plan := f.Plan(t, spec, runNow, false)
		require.Equal(t, "summary n300.example (ROOT_DOMAIN)", plan.Caps[0].CutTask, plan.Caps[0].String())

		first, err := f.TryRunWith(t, spec, runNow, 1)
		require.NoError(t, err)
		require.Equal(t, "partial", first.Status())
		require.Contains(t, first.Stopped, "has 455 left, and the next request (summary url=n300.example scope=ROOT_DOMAIN) may cost 480")
		require.Zero(t, f.Count(t, `SELECT count(*) FROM backlink_history`))

		second, err := f.TryRunWith(t, spec, runNow, 1)
		require.NoError(t, err)
		require.Equal(t, first.RunID, second.RunID)
		require.Equal(t, "succeeded", second.Status())
		require.Equal(t, int64(12), f.Count(t, `SELECT count(*) FROM backlink_history`), "the whole request, in the new window")
		require.Equal(t, int64(45+12*40), f.Sandbox.Usage("test-key").UnitsSpent)
	})
}

// TestTheStopReasonSaysWhatTheRequestCosts: a score profile cannot be cut
// (it takes no limit) and may cost up to 101 units; under a cap of 50 the
// reason says so, not "costs at least 1".
func TestTheStopReasonSaysWhatTheRequestCosts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sum, err := f.TryRunWith(t, `jobs:
  - name: p
    budget: {per_run: 140}
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}, score-profile: {}}
`, runNow, 1)
	require.NoError(t, err)
	require.Equal(t, "budget exhausted: the per_run cap of 140 units has 95 left, and the next request (score-profile url=n300.example scope=ROOT_DOMAIN) may cost 101 (up to 101 lines at 1 unit each; it cannot be cut to fewer lines)", sum.Stopped)
}

// TestPlanAfterAnInterruptPricesWhatIsLeft: etl plan after an interrupted
// run prices what the resumed run will spend, not the whole job, and the
// per_run cap counts what the run used already (the same cap window).
func TestPlanAfterAnInterruptPricesWhatIsLeft(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(fmt.Sprintf(stopSpec, 10_000_000)), runNow)
	require.NoError(t, err)
	job := s.Jobs[0]
	// A first run teaches the plan every task's total; it finished, so the
	// next run is a new one, which is interrupted.
	_, err = f.Runner(t, runNow, pipeline.Config{Concurrency: 4}).Run(t.Context(), job)
	require.NoError(t, err)
	whole := f.Plan(t, fmt.Sprintf(stopSpec, 10_000_000), runNow, false)
	require.Nil(t, whole.Resume)
	before := f.Sandbox.Usage("test-key").UnitsSpent
	// The whole job, less the closed months of summary history the first
	// run fetched (5 of each target's 6), which no run asks for again.
	require.Equal(t, 15, whole.Held.Months)
	require.Equal(t, before-15*40, *whole.Total.Expected)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first, err := f.Runner(t, runNow, pipeline.Config{Concurrency: 1, Observer: &cancelAfter{n: 9, cancel: cancel}}).Run(ctx, job)
	require.NoError(t, err)
	require.True(t, first.Interrupted)
	spent := f.Sandbox.Usage("test-key").UnitsSpent - before

	plan := f.Plan(t, fmt.Sprintf(stopSpec, 10_000_000), runNow, false)
	require.NotNil(t, plan.Resume)
	require.Equal(t, first.RunID, plan.Resume.RunID)
	require.Equal(t, "resumed", plan.Resume.How)
	require.Positive(t, plan.Resume.Done)
	require.Less(t, *plan.Total.Expected, *whole.Total.Expected)
	require.Equal(t, spent, plan.Caps[0].Used, "the per_run cap counts the interrupted attempt")

	second, err := f.Runner(t, runNow, pipeline.Config{Concurrency: 1}).Run(t.Context(), job)
	require.NoError(t, err)
	require.Equal(t, "succeeded", second.Status())
	_, units := second.AttemptTotals()
	require.Equal(t, *plan.Total.Expected, f.Sandbox.Usage("test-key").UnitsSpent-before-spent, "the plan priced what the resumed run spent")
	require.Equal(t, *plan.Total.Expected, units)
}

// TestRequestsNeverSentBookNothing: with the API's address pointing at a
// closed port, every request fails before it is sent: the ledger books
// nothing, and no cap is used up. Before, every reservation stayed booked
// as if the API had charged it (two typos could use up a daily cap).
func TestRequestsNeverSentBookNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(fmt.Sprintf(stopSpec, 10_000_000)), runNow)
	require.NoError(t, err)
	var attempts atomic.Int32
	logger := slog.New(countHandler{n: &attempts, msg: "request failed"})
	client, err := extract.New(extract.Config{BaseURL: closed, APIKey: "test-key", Backoff: time.Millisecond, RatePerSecond: -1, Logger: logger})
	require.NoError(t, err)
	r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.Pool, Allocator: f.Mem, Concurrency: 4,
		Now: func() time.Time { return runNow }})
	require.NoError(t, err)
	sum, err := r.Run(t.Context(), spec.Jobs[0])
	require.ErrorIs(t, err, pipeline.ErrMisconfigured)
	require.ErrorContains(t, err, "ETL_API_URL "+closed+" refused the connection: is the API (or `etl sandbox`) running at that address?")
	require.Equal(t, "failed", sum.Status())
	require.True(t, sum.Fatal)
	require.Equal(t, len(sum.Tasks), sum.Skipped(), "the first task's refusal stops every task")
	require.Equal(t, int32(1), attempts.Load(), "one connection attempt, no retry storm")
	require.Equal(t, int64(1), f.Count(t, `SELECT count(*) FROM unit_ledger`), "one reservation was made")
	require.Zero(t, f.Count(t, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`), "nothing was sent, nothing is booked")
	require.Zero(t, f.Count(t, `SELECT coalesce(sum(used), 0) FROM budget_usage`), "no cap is used")
	_, _, units := sum.Totals()
	require.Zero(t, units)
}

// TestPlanOfTheLargestMaxRows: the largest max_rows with pages of one
// line is 2^31-1 requests; the plan counts them without stepping through
// each (it took minutes of CPU, in etl plan and before every etl run).
func TestPlanOfTheLargestMaxRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	plan := f.Plan(t, `jobs:
  - name: big
    budget: {per_run: 1000}
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {links: {limit: 1, max_rows: 2147483647}}
`, runNow, false)
	tp := plan.Tasks[0]
	require.Equal(t, int64(2147483647), *tp.Requests)
	require.Equal(t, int64(45*2147483647), *tp.Worst)
	require.Equal(t, int64(45*2147483647), *tp.Expected)
	c := plan.Caps[0]
	require.False(t, *c.Fits)
	require.Equal(t, int64(22), c.CutAfterRows, "22 lines of 45 fit in 1000")
}

// countHandler counts the log records whose message is msg.
type countHandler struct {
	n   *atomic.Int32
	msg string
}

func (h countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countHandler) WithGroup(string) slog.Handler      { return h }

// TestAWrongKeyOrAddressStopsAfterOneAnswer: a 401 (the key refused) or a
// 404 on an endpoint's path (a wrong base address) stops the run at the
// first such answer with one message saying what to check; the API sees
// one request, not one per task and retry.
func TestAWrongKeyOrAddressStopsAfterOneAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, key, path, want string
	}{
		{"401", "wrong-key", "", "the API refused the key (HTTP 401"},
		{"404", "test-key", "/apis/v4", "answered 404 Not Found for "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var seen atomic.Int32
			f := newFixtureWith(t, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.Add(1); h.ServeHTTP(w, r) })
			})
			spec, err := jobspec.ParseSpec("jobs.yaml", []byte(fmt.Sprintf(stopSpec, 10_000_000)), runNow)
			require.NoError(t, err)
			job := spec.Jobs[0]
			job.Endpoints = job.Endpoints[2:] // links first: an endpoint path, whatever the base
			client, err := extract.New(extract.Config{BaseURL: f.URL + tc.path, APIKey: tc.key, Backoff: time.Millisecond})
			require.NoError(t, err)
			r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.Pool, Allocator: f.Mem, Concurrency: 4,
				Now: func() time.Time { return runNow }})
			require.NoError(t, err)
			sum, err := r.Run(t.Context(), job)
			require.ErrorIs(t, err, pipeline.ErrMisconfigured)
			require.Contains(t, sum.Stopped, tc.want)
			require.Equal(t, "failed", sum.Status())
			require.Equal(t, int32(1), seen.Load(), "one request")
			require.Zero(t, f.Count(t, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`))
		})
	}
}

// TestA404MidRunFailsItsTaskAlone: once the API has answered a request of
// the run at this address, a 404 (here a proxy's own page in front of the
// API, as during a deploy) cannot mean a wrong base address: the task
// fails alone, and the run goes on rather than stopping every task with
// a message to check ETL_API_URL.
func TestA404MidRunFailsItsTaskAlone(t *testing.T) {
	t.Parallel()
	var seen atomic.Int32
	f := newFixtureWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if seen.Add(1) == 2 {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, "404 page not found\n")
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	sum, err := f.TryRunWith(t, `jobs:
  - name: k
    keywords: {keywords: [a, b, c, d], countries: [US]}
`, runNow, 1)
	require.NotErrorIs(t, err, pipeline.ErrMisconfigured)
	require.Empty(t, sum.Stopped)
	require.Equal(t, 1, sum.Failed())
	require.Zero(t, sum.Skipped())
	require.Equal(t, int64(3), f.Count(t, `SELECT count(*) FROM keyword_metrics`))
}

// typoSpec is a job under the README's example daily cap whose tasks
// include links without a limit: before the API's bound of limit is
// known, a request of it once asked 100,000 lines (4.5 million units,
// cut to what the cap affords).
const typoSpec = `budget: {daily: 500000}
jobs:
  - name: typo
    targets:
      - {url: n300.example, scope: ROOT_DOMAIN}
      - {url: n120.example, scope: ROOT_DOMAIN}
    endpoints: {links: {}, overview: {}, summary: {limit: 6}}
    keywords: {keywords: [a, b], countries: [US]}
`

// requireNoHTTPBooksNothing runs typoSpec against base, where something
// that is not the API listens, and checks what a configuration mistake
// must cost: the run stops at once with ErrMisconfigured and one message
// (matching the regular expression want), its one request books nothing
// and no other task asks; then another job runs under the whole daily
// cap.
func (f *fixture) requireNoHTTPBooksNothing(t *testing.T, base, want string) {
	t.Helper()
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(typoSpec), runNow)
	require.NoError(t, err)
	client, err := extract.New(extract.Config{BaseURL: base, APIKey: "test-key-0123456789", Backoff: time.Millisecond})
	require.NoError(t, err)
	r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.Pool, Allocator: f.Mem, Concurrency: 4,
		Now: func() time.Time { return runNow }})
	require.NoError(t, err)
	sum, err := r.Run(t.Context(), spec.Jobs[0])
	require.ErrorIs(t, err, pipeline.ErrMisconfigured)
	require.NotContains(t, err.Error(), "test-key-0123456789")
	require.True(t, sum.Fatal)
	require.Equal(t, "failed", sum.Status())
	require.Regexp(t, want, sum.Stopped)
	require.Zero(t, sum.Failed())
	require.Equal(t, len(sum.Tasks), sum.Skipped(), "the first request's answer stops every task")
	require.Equal(t, int64(1), f.Count(t, `SELECT count(*) FROM unit_ledger`), "one request")
	require.LessOrEqual(t, f.Count(t, `SELECT max(reserved) FROM unit_ledger`), int64(100*45),
		"the first request of a run asks the default page while the API's bound is unknown")
	require.Zero(t, f.Count(t, `SELECT count(*) FROM unit_ledger WHERE spent IS NULL`), "nothing left unsettled")
	require.Zero(t, f.Count(t, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`), "nothing booked")
	uses, err := budget.New(f.Pool, func() time.Time { return runNow }).Usage(t.Context(), []string{"typo"},
		map[string]budget.Caps{"typo": spec.Jobs[0].Caps})
	require.NoError(t, err)
	require.Equal(t, "installation 2026-11-21", uses[0].Scope)
	require.Zero(t, uses[0].Used, "the day's spend")
	require.Equal(t, int64(500_000), uses[0].Left())
	_, _, units := sum.Totals()
	require.Zero(t, units)

	// Another job of the day has the whole daily cap: 11,110 links are
	// 499,950 of its 500,000 units.
	other := f.Run(t, `budget: {daily: 500000}
jobs:
  - name: other
    targets: [{url: n11110.example, scope: ROOT_DOMAIN}]
    endpoints: {links: {}}
`, runNow)
	require.Equal(t, "succeeded", other.Status(), other.Stopped)
	require.Equal(t, int64(11_110*45), f.Sandbox.Usage("test-key").UnitsSpent)
}

// TestAnAddressThatIsNotHTTPStopsAfterOneRequest: ETL_API_URL pointing at
// another service answers no HTTP at all. Before the API has answered any
// request of the run that is a configuration mistake: one request, one
// message, nothing booked (nothing that speaks no HTTP can have charged
// it), not every task asking again and again under reservations that
// stay booked. The fakes do what such services do: PostgreSQL reads the
// request and closes the connection without a byte (a reset when it
// leaves bytes unread); an SSH server sends its banner.
func TestAnAddressThatIsNotHTTPStopsAfterOneRequest(t *testing.T) {
	t.Parallel()
	const check = " (another service listens there?): check the host and port of ETL_API_URL"
	for _, tc := range []struct {
		name  string
		serve func(c net.Conn)
		want  string // after "ETL_API_URL <base> ", a regular expression
	}{
		{"closes without a byte, as PostgreSQL does", func(c net.Conn) {
			_, _ = c.Read(make([]byte, 8192))
			_ = c.Close()
		}, regexp.QuoteMeta("closed the connection without an HTTP answer (another service listens there, such as PostgreSQL?): check the host and port of ETL_API_URL") + "$"},
		{"resets without a byte", func(c net.Conn) {
			_, _ = c.Read(make([]byte, 8192))
			_ = c.(*net.TCPConn).SetLinger(0)
			_ = c.Close()
		}, regexp.QuoteMeta("reset the connection without an HTTP answer"+check) + "$"},
		{"an SSH banner", func(c net.Conn) {
			_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n"))
			_, _ = c.Read(make([]byte, 8192))
			_ = c.Close()
		}, regexp.QuoteMeta("does not speak HTTP"+check+"; what it sent: ") +
			// The banner read as an answer, or, when it came before the
			// request was written, as bytes unasked for.
			`(malformed HTTP status code "Ubuntu-3ubuntu13"|bytes before the request was sent \(an HTTP server never speaks first\))$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			var conns atomic.Int32
			served := make(chan struct{})
			go func() {
				defer close(served)
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					conns.Add(1)
					tc.serve(c)
				}
			}()
			t.Cleanup(func() { _ = ln.Close(); <-served })
			base := "http://" + ln.Addr().String()
			f.requireNoHTTPBooksNothing(t, base, "^"+regexp.QuoteMeta("ETL_API_URL "+base+" ")+tc.want)
			require.Equal(t, int32(1), conns.Load(), "one connection")
		})
	}
}

// TestAPostgreSQLPortBooksNothing: ETL_API_URL at a real PostgreSQL's
// port (the test cluster's), the typo the README warns of. Before: 9
// requests and 499,980 of the 500,000 daily units booked as unsettled,
// which blocked every other job for the rest of the day.
func TestAPostgreSQLPortBooksNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cc := f.Pool.Config().ConnConfig
	require.NotEmpty(t, cc.Port, "the test cluster listens on TCP")
	base := "http://" + net.JoinHostPort(cc.Host, fmt.Sprint(cc.Port))
	f.requireNoHTTPBooksNothing(t, base, "^"+regexp.QuoteMeta("ETL_API_URL "+base+
		" closed the connection without an HTTP answer (another service listens there, such as PostgreSQL?): check the host and port of ETL_API_URL")+"$")
}

// TestAGatewayThatNeverAnswersStopsTheRun: a gateway in front of the API
// that answers 502 with a page of its own to every request, from the
// run's first (its upstream down, or the wrong one). Each may have
// reached the API and stays booked; but until the API has answered the
// run, only the task that asked first asks again (at most 3 times more,
// as any page), at the default page, and then the run stops: the other
// tasks do not each pay a reservation for the same answer. The run is
// partial, not a configuration mistake: the next run continues it.
func TestAGatewayThatNeverAnswersStopsTheRun(t *testing.T) {
	t.Parallel()
	var seen atomic.Int32
	f := newFixtureWith(t, func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Add(1)
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html><body>502 Bad Gateway</body></html>")
		})
	})
	sum, err := f.TryRunWith(t, typoSpec, runNow, 4)
	require.Error(t, err)
	require.NotErrorIs(t, err, pipeline.ErrMisconfigured)
	require.False(t, sum.Fatal)
	require.Equal(t, "partial", sum.Status())
	require.Contains(t, sum.Stopped, "the API at ETL_API_URL "+f.URL+" has answered no request of the run, so no other task asked: ")
	require.Contains(t, sum.Stopped, "HTTP 502 from a gateway")
	require.Equal(t, 1, sum.Failed())
	require.Equal(t, len(sum.Tasks)-1, sum.Skipped())
	require.Equal(t, int32(4), seen.Load(), "one task asks, 3 times again")
	require.Equal(t, int64(4), f.Count(t, `SELECT count(*) FROM unit_ledger WHERE spent IS NULL`), "each may have been charged")
	require.LessOrEqual(t, f.Count(t, `SELECT sum(reserved) FROM unit_ledger`), int64(4*100*45), "at most 4 default pages")
}

// gatewayTimeout forwards the first n requests to the API, which answers
// (and charges) them, and then answers 504 with a gateway's HTML page, as
// a proxy or load balancer does whose upstream took too long.
func gatewayTimeout(n int32) func(http.Handler) http.Handler {
	var seen atomic.Int32
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if seen.Add(1) > n {
				next.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(httptest.NewRecorder(), r) // the API did the work, and charged it
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusGatewayTimeout)
			_, _ = io.WriteString(w, "<html><body><h1>504 Gateway Time-out</h1></body></html>\n")
		})
	}
}

// TestAGatewayTimeoutKeepsItsReservation: a 504 that is not the API's
// error envelope comes from a gateway in front of the API, after the
// request reached it: the API may have answered and charged it. The
// ledger keeps the reservation (it never counts less than the API
// charged), and the page is asked again under a new one, at most 3 times
// in a row. Before, a gateway's 504 counted as the API's error answer: it
// was settled at 0 and tried again up to 10 times, each try charged by
// the API and booked by nobody.
func TestAGatewayTimeoutKeepsItsReservation(t *testing.T) {
	t.Parallel()
	const spec = `jobs:
  - name: g
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}, links: {limit: 100, max_rows: 200}}
`
	f := newFixtureWith(t, gatewayTimeout(2))
	sum, err := f.TryRunWith(t, spec, runNow, 1)
	require.NoError(t, err)
	require.Equal(t, "succeeded", sum.Status())
	charged := f.Sandbox.Usage("test-key").UnitsSpent
	require.Equal(t, int64(3*45+200*45), charged, "the overview three times, 200 links")
	booked := f.Count(t, `SELECT sum(coalesce(spent, reserved)) FROM unit_ledger`)
	require.GreaterOrEqual(t, booked, charged, "the ledger counts less than the API charged")

	// Answers that keep timing out fail the task after 3 tries in a row;
	// from the run's first request, the run then stops: until the API has
	// answered the run, one task asks, and the other would only pay for
	// the same timeouts. (Before, each task tried 4 times: 4*45+4*100*45.)
	g := newFixtureWith(t, gatewayTimeout(1000))
	sum, err = g.TryRunWith(t, spec, runNow, 1)
	require.Error(t, err)
	require.Equal(t, 1, sum.Failed())
	require.Equal(t, 1, sum.Skipped())
	require.Contains(t, sum.Stopped, "has answered no request of the run, so no other task asked")
	require.Equal(t, int64(4*45), g.Sandbox.Usage("test-key").UnitsSpent, "4 tries of the first task's first request")
	require.GreaterOrEqual(t, g.Count(t, `SELECT sum(coalesce(spent, reserved)) FROM unit_ledger`), g.Sandbox.Usage("test-key").UnitsSpent)

	// Once the API has answered the run, they fail their task alone.
	var seen atomic.Int32
	timeouts := gatewayTimeout(1000)
	h := newFixtureWith(t, func(next http.Handler) http.Handler {
		late := timeouts(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if seen.Add(1) == 1 {
				next.ServeHTTP(w, r)
				return
			}
			late.ServeHTTP(w, r)
		})
	})
	sum, err = h.TryRunWith(t, spec, runNow, 1)
	require.Error(t, err)
	require.Equal(t, 1, sum.Failed())
	require.Zero(t, sum.Skipped())
	require.Empty(t, sum.Stopped)
	require.Equal(t, int64(45+4*100*45), h.Sandbox.Usage("test-key").UnitsSpent, "the overview, then 4 tries of the links' first request")
}

// TestAProbeOfAPostgreSQLPortBooksNothing: etl plan --probe with
// ETL_API_URL at PostgreSQL's port: the probes stop at the first that
// got no HTTP answer, with the one line a run says, and none stays
// booked. Before, each probe sent stayed booked as maybe charged.
func TestAProbeOfAPostgreSQLPortBooksNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cc := f.Pool.Config().ConnConfig
	base := "http://" + net.JoinHostPort(cc.Host, fmt.Sprint(cc.Port))
	client, err := extract.New(extract.Config{BaseURL: base, APIKey: "test-key", Backoff: time.Millisecond})
	require.NoError(t, err)
	p, err := planning.NewPlanner(planning.PlanConfig{Pool: f.Pool, Client: client, Allocator: f.Mem, Concurrency: 1,
		Now: func() time.Time { return runNow }})
	require.NoError(t, err)
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(typoSpec), runNow)
	require.NoError(t, err)
	plan, err := p.Plan(t.Context(), spec.Jobs[0], planning.PlanOptions{Probe: true})
	require.NoError(t, err)
	require.Equal(t, "ETL_API_URL "+base+" closed the connection without an HTTP answer (another service listens there, such as PostgreSQL?): check the host and port of ETL_API_URL",
		plan.Probe.Stopped)
	require.Equal(t, 1, plan.Probe.Requests)
	require.Zero(t, plan.Probe.Units)
	require.Zero(t, f.Count(t, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`), "nothing booked")
}

// TestAStopThatTheStatusDecidesIsOneRequest: a 401, a 403 and a 404 to
// the run's first request stop the run after that one request, even when
// their error envelope says "retryable": true (before, each was tried 10
// times, about 95 s, before the run stopped as documented).
func TestAStopThatTheStatusDecidesIsOneRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		want   string
		fatal  bool
	}{
		{http.StatusUnauthorized, "the API refused the key (HTTP 401: the key is not valid): check ETL_API_KEY", true},
		{http.StatusForbidden, "API units exhausted upstream (HTTP 403)", false},
		{http.StatusNotFound, "answered 404 Not Found for ", true},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			t.Parallel()
			var seen atomic.Int32
			f := newFixtureWith(t, func(http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					seen.Add(1)
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					_, _ = fmt.Fprintf(w, `{"meta":{"success":false,"status_code":%d,"request_id":"r"},"error":{"type":"test","code":%d,"message":"the key is not valid","retryable":true,"details":[]}}`,
						tc.status, tc.status)
				})
			})
			spec, err := jobspec.ParseSpec("jobs.yaml", []byte(typoSpec), runNow)
			require.NoError(t, err)
			// The client's default back-off: retries would take minutes.
			client, err := extract.New(extract.Config{BaseURL: f.URL, APIKey: "test-key"})
			require.NoError(t, err)
			r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.Pool, Allocator: f.Mem, Concurrency: 4,
				Now: func() time.Time { return runNow }})
			require.NoError(t, err)
			sum, err := r.Run(t.Context(), spec.Jobs[0])
			require.Equal(t, tc.fatal, errors.Is(err, pipeline.ErrMisconfigured), "%v", err)
			require.Contains(t, sum.Stopped, tc.want)
			require.Equal(t, len(sum.Tasks), sum.Skipped())
			require.Equal(t, int32(1), seen.Load(), "one request")
			require.Zero(t, f.Count(t, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`))
		})
	}
}
