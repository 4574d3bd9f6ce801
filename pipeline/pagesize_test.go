package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"strconv"
	"strings"

	"github.com/seoetl/etl/internal/testworld"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
	"github.com/seoetl/etl/sandbox"
)

// Pages as large as the API allows (issue 18, item 4): a task without a
// limit learns the API's bound of limit from its refusal (a 400 that
// costs nothing), remembers it in api_bounds, and pages at it.

// linksSpec is a job of links without a limit on target.
func linksSpec(target, options string) string {
	return fmt.Sprintf("jobs:\n  - name: pages\n    max_age: 0\n    targets: [{url: %s, scope: ROOT_DOMAIN}]\n    endpoints: {links: {%s}}\n", target, options)
}

// requests is what the sandbox was asked: answered and refused.
func requests(sb *sandbox.Server) (answered, refused int64) {
	u := sb.Usage("test-key")
	return u.Requests, u.FailedRequests
}

// bound is the row of api_bounds for links' limit: "accepted refused how".
func (f *fixture) bound(t *testing.T) string {
	t.Helper()
	return f.query(t, `SELECT accepted || ' ' || coalesce(refused::text, '-') || ' ' || how FROM api_bounds
		WHERE operation = 'links' AND param = 'limit'`)
}

// runJob runs the job of spec with the batches of a run (not the tiny
// ones of f.run) and returns its summary.
func (f *fixture) runJob(t *testing.T, spec string, cfg pipeline.Config) (*pipeline.Summary, error) {
	t.Helper()
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), runNow)
	require.NoError(t, err)
	return f.Runner(t, runNow, cfg).Run(t.Context(), s.Jobs[0])
}

// requireLearns runs links: {} on the target of rows links and checks
// that the sandbox refused refused requests (each booked at 0, none
// charged) and answered answered, that api_bounds holds bound, and that
// every row loaded, each line bought once.
func (f *fixture) requireLearns(t *testing.T, rows, refused, answered int64, bound string) {
	t.Helper()
	_, err := f.runJob(t, linksSpec(fmt.Sprintf("n%d.example", rows), ""), pipeline.Config{})
	require.NoError(t, err)
	gotAnswered, gotRefused := requests(f.Sandbox)
	require.Equal(t, refused, gotRefused)
	require.Equal(t, answered, gotAnswered)
	require.Equal(t, bound, f.bound(t))
	require.Equal(t, rows, f.Count(t, `SELECT count(*) FROM backlinks`))
	f.requireLedgerIsTheSandboxs(t, rows*45)
	require.Equal(t, refused, f.Count(t, `SELECT count(*) FROM unit_ledger WHERE spent = 0`), "each refusal booked at 0")
}

// requireLedgerIsTheSandboxs checks the money: the ledger books what the
// sandbox charged, no more and no less, and a refused request at 0.
func (f *fixture) requireLedgerIsTheSandboxs(t *testing.T, charged int64) {
	t.Helper()
	require.Equal(t, charged, f.Count(t, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`),
		"the ledger books what the sandbox charged")
	require.Zero(t, f.Count(t, `SELECT count(*) FROM unit_ledger WHERE spent IS NULL`), "every request is settled")
}

// TestPageSizeHostile: the bound below the API's default page, a refusal
// that does not name it, a cap that affords less than it, and a job's
// limit above it. In each, every row is loaded once, the ledger books
// what the sandbox charged, and api_bounds says what was learned.
func TestPageSizeHostile(t *testing.T) {
	t.Parallel()
	t.Run("a bound below the default 100", func(t *testing.T) {
		t.Parallel()
		f := newWorld(t, testworld.Options{Sandbox: sandbox.Config{MaxLimit: 30}})
		spec := linksSpec("n1000.example", "")
		before := f.Plan(t, spec, runNow, false).Tasks[0]
		require.Equal(t, 100, before.Page, "not known yet: counted at the default page")
		require.True(t, before.PageUnknown)

		// The run's first request asks the default 100 (nothing has
		// answered yet, see TestTheFirstRequestOfARunIsSmall), refused:
		// 1000 links in pages of 30.
		f.requireLearns(t, 1000, 1, 34, "30 100 named")

		// The plan counts the pages the next run sends, and their time.
		plan := f.Plan(t, spec, runNow, false)
		require.Equal(t, 30, plan.Tasks[0].Page)
		require.False(t, plan.Tasks[0].PageUnknown)
		require.Equal(t, int64(34), *plan.Total.Requests)
		require.InDelta(t, 3.4, *plan.Total.Seconds, 1e-9)
		// Another API's bound is its own.
		p, err := planning.NewPlanner(planning.PlanConfig{Pool: f.Pool, API: "http://127.0.0.1:1", Now: func() time.Time { return runNow }})
		require.NoError(t, err)
		s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), runNow)
		require.NoError(t, err)
		other, err := p.Plan(t.Context(), s.Jobs[0], planning.PlanOptions{})
		require.NoError(t, err)
		require.True(t, other.Tasks[0].PageUnknown)
	})
	t.Run("a refusal that does not name the bound", func(t *testing.T) {
		t.Parallel()
		f := newWorld(t, testworld.Options{Sandbox: sandbox.Config{MaxLimit: 1000, UnnamedLimit: true}})
		// The run's first request asks the default 100, served; then
		// 100,000, 50,000, ..., 1,562 refused; 781 accepted: the other
		// 1900 links in pages of 781.
		f.requireLearns(t, 2000, 7, 4, "781 1562 probed")
		answered, refused := requests(f.Sandbox)

		// Remembered: the next run is refused nothing.
		_, err := f.runJob(t, linksSpec("n700.example", ""), pipeline.Config{})
		require.NoError(t, err)
		answered2, refused2 := requests(f.Sandbox)
		require.Equal(t, refused, refused2)
		require.Equal(t, int64(1), answered2-answered)
	})
	t.Run("a cap that affords less than the bound", func(t *testing.T) {
		t.Parallel()
		// 1,500 lines: the first request asks the default 100 (nothing
		// has answered yet), the second the 1,400 left, refused (the
		// bound is 1,000), the third asks 1,000, the fourth the 400 left;
		// then the cap stops the run.
		f := newWorld(t, testworld.Options{Sandbox: sandbox.Config{MaxLimit: 1000}})
		capped := func(cap int) string {
			return fmt.Sprintf("jobs:\n  - name: pages\n    max_age: 0\n    budget: {per_run: %d}\n    targets: [{url: n4000.example, scope: ROOT_DOMAIN}]\n    endpoints: {links: {}}\n", cap)
		}
		const cap = 1500 * 45
		sum, err := f.runJob(t, capped(cap), pipeline.Config{})
		require.NoError(t, err)
		require.Contains(t, sum.Stopped, "budget exhausted")
		answered, refused := requests(f.Sandbox)
		require.Equal(t, int64(1), refused)
		require.Equal(t, int64(3), answered)
		charged := f.Sandbox.Usage("test-key").UnitsSpent
		require.Equal(t, int64(cap), charged, "the cap, not a unit past it")
		require.Equal(t, int64(1500), f.Count(t, `SELECT count(*) FROM backlinks`))
		f.requireLedgerIsTheSandboxs(t, charged)
		require.Equal(t, "1000 1400 named", f.bound(t))

		// Continued in a new cap window: from the next offset, at the bound.
		_, err = f.runJob(t, capped(4*cap), pipeline.Config{})
		require.NoError(t, err)
		answered2, refused2 := requests(f.Sandbox)
		require.Equal(t, refused, refused2)
		require.Equal(t, int64(3), answered2-answered, "2,500 links left: 1,000, 1,000, 500")
		require.Equal(t, int64(4000), f.Count(t, `SELECT count(*) FROM backlinks`))
		require.Equal(t, int64(4000*45), f.Sandbox.Usage("test-key").UnitsSpent, "no line bought twice")
	})
	t.Run("a job's limit above the bound", func(t *testing.T) {
		t.Parallel()
		var logs bytes.Buffer
		f := newWorld(t, testworld.Options{Sandbox: sandbox.Config{MaxLimit: 400}})
		spec, err := jobspec.ParseSpec("jobs.yaml", []byte(linksSpec("n1000.example", "limit: 500")), runNow)
		require.NoError(t, err)
		logger := slog.New(slog.NewTextHandler(&logs, nil))
		for range 2 {
			_, err = f.Runner(t, runNow, pipeline.Config{Logger: logger}).RunWith(t.Context(), spec.Jobs[0], pipeline.RunOptions{Fresh: true})
			require.NoError(t, err)
		}
		answered, refused := requests(f.Sandbox)
		require.Equal(t, int64(1), refused, "refused once, then lowered")
		require.Equal(t, int64(2*3), answered, "1000 links in pages of 400, twice")
		require.Equal(t, "400 500 named", f.bound(t))
		require.Contains(t, logs.String(), `msg="the job's limit is above the largest the API accepts; paging at the API's" task="links n1000.example (ROOT_DOMAIN)" limit=500 bound=400`)
		require.Equal(t, int64(1000), f.Count(t, `SELECT count(*) FROM backlinks`))
		f.requireLedgerIsTheSandboxs(t, 2*1000*45)
	})
	t.Run("no limit is accepted", func(t *testing.T) {
		t.Parallel()
		f := newFixtureWith(t, func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = fmt.Fprint(w, `{"meta":{"success":false,"status_code":400,"request_id":"x"},"error":{"type":"invalid_parameter","code":400,"message":"limit is invalid","retryable":false,"details":[{"parameter":"limit","message":"limit is invalid"}]}}`)
			})
		})
		sum, err := f.runJob(t, linksSpec("n1000.example", ""), pipeline.Config{})
		require.Error(t, err)
		require.ErrorContains(t, err, "the API refused every limit of links, down to 1")
		require.True(t, sum.Tasks[0].Refused, "not continued: the API refuses the task as asked")
		require.Zero(t, f.Count(t, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`))
		require.Equal(t, int64(7), f.Count(t, `SELECT count(*) FROM unit_ledger WHERE spent = 0`), "100 (the run's first request), 50, ..., 1: each booked at 0")
	})
}

// TestResumeWithAnotherPageSize: a run interrupted after some pages of
// 700 is resumed against an API that now serves pages of at most 300 (the
// same data): the remembered bound is refused and learned again, the task
// goes on from its offset (a multiple of 700, not of 300), and the two
// attempts together load every row once and buy every line once.
func TestResumeWithAnotherPageSize(t *testing.T) {
	t.Parallel()
	var smaller atomic.Bool
	second := testworld.NewSandbox(t, nil, sandbox.Config{MaxLimit: 300})
	f := newWorld(t, testworld.Options{MW: func(first http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if smaller.Load() {
				second.Handler().ServeHTTP(w, r)
				return
			}
			first.ServeHTTP(w, r)
		})
	}, Sandbox: sandbox.Config{MaxLimit: 700}})
	const rows = 5000
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(linksSpec(fmt.Sprintf("n%d.example", rows), "")), runNow)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first, err := f.Runner(t, runNow, pipeline.Config{Observer: &cancelAfter{n: 3, cancel: cancel}}).Run(ctx, spec.Jobs[0])
	require.NoError(t, err)
	require.True(t, first.Interrupted)
	// The run's first page asks the default 100 (nothing had answered),
	// the next ones 700.
	require.Equal(t, int64(100+2*700), f.Count(t, `SELECT count(*) FROM backlinks`))
	require.Equal(t, "700 100000 named", f.bound(t))

	smaller.Store(true)
	resumed, err := f.Runner(t, runNow, pipeline.Config{}).Run(t.Context(), spec.Jobs[0])
	require.NoError(t, err)
	require.Equal(t, first.RunID, resumed.RunID)
	require.Equal(t, "succeeded", resumed.Status())
	require.Equal(t, "300 700 named", f.bound(t), "learned again")
	answered, refused := requests(second)
	require.Equal(t, int64(1), refused)
	require.Equal(t, int64(12), answered, "3500 links left in pages of 300")
	require.Equal(t, int64(rows), f.Count(t, `SELECT count(*) FROM backlinks`))
	charged := f.Sandbox.Usage("test-key").UnitsSpent + second.Usage("test-key").UnitsSpent
	require.Equal(t, int64(rows*45), charged, "every line bought once")
	f.requireLedgerIsTheSandboxs(t, charged)
	rowsRead, _, units := resumed.Totals()
	require.Equal(t, int64(rows), rowsRead)
	require.Equal(t, charged, units)
}

// TestTheFirstRequestOfARunIsSmall: while the API's bound of limit is not
// known and nothing has answered the run yet, a paged request asks the
// endpoint's default page, not the probe of 100,000 lines (4.5 million
// units of links reserved, enough to fill a daily cap by itself were it
// never answered); the probe follows the API's first answer. The ledger
// books what the sandbox charged, and the plan's count of requests (at
// the default page while the bound is unknown) is still the most the run
// sends.
func TestTheFirstRequestOfARunIsSmall(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var limits []string
	f := newFixtureWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			limits = append(limits, r.URL.Query().Get("limit"))
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	})
	spec := linksSpec("n25000.example", "max_rows: 25000")
	plan := f.Plan(t, spec, runNow, false)
	require.True(t, plan.Tasks[0].PageUnknown)
	_, err := f.runJob(t, spec, pipeline.Config{})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"100", "24900", "10000", "10000", "4900"}, limits,
		"the default page, the probe (the rest of max_rows; refused, naming the sandbox's 10,000), then pages at the bound")
	require.LessOrEqual(t, int64(len(limits)), *plan.Tasks[0].Requests)
	require.Equal(t, int64(100*45), f.Count(t, `SELECT reserved FROM unit_ledger ORDER BY ledger_id LIMIT 1`))
	f.requireLedgerIsTheSandboxs(t, 25000*45)
}

// windowed answers 400 to a links request past its first page whose
// offset + limit passes window (an API that serves only the first window
// lines of a list, as the search engines behind many APIs do), in the
// API's error envelope with a detail on the parameter limit; other
// requests go to next.
func windowed(window int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		offset, _ := strconv.Atoi(q.Get("offset"))
		limit, _ := strconv.Atoi(q.Get("limit"))
		if !strings.HasSuffix(r.URL.Path, "/links") || offset == 0 || offset+limit <= window {
			next.ServeHTTP(w, r)
			return
		}
		msg := fmt.Sprintf("offset + limit must be at most %d, got %d", window, offset+limit)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"meta":{"success":false,"status_code":400,"request_id":"w"},"error":{"type":"invalid_parameter","code":400,"message":%q,"retryable":false,"details":[{"parameter":"limit","message":%q}]}}`, msg, msg)
	})
}

// TestARefusalOfOneRequestIsNoBoundOfLimit: the API (a bound of 1,000)
// refuses a task's pages past its first 3,000 lines whatever their limit,
// down to 1 (it serves the first 3,000 lines of a list, no more): that is
// no bound of limit. The task fails alone; the bound stays 1,000, in the
// run and in api_bounds, and the next task pages at it (one request for
// its 50 links, not 51 of one line each, and no run after pages of one
// line). The task's pages do not end on 3,000 (its first is the run's
// first request, of 100 lines), so the window refuses pages that a
// smaller limit fits under: those smaller limits are the task's own, not
// the bound.
func TestARefusalOfOneRequestIsNoBoundOfLimit(t *testing.T) {
	t.Parallel()
	f := newWorld(t, testworld.Options{MW: func(h http.Handler) http.Handler { return windowed(3000, h) }, Sandbox: sandbox.Config{MaxLimit: 1000}})
	spec := "jobs:\n  - name: pages\n    targets: [{url: n5000.example, scope: ROOT_DOMAIN}, {url: n50.example, scope: ROOT_DOMAIN}]\n    endpoints: {links: {}}\n"
	sum, err := f.runJob(t, spec, pipeline.Config{Concurrency: 1})
	require.Error(t, err)
	require.ErrorContains(t, err, "offset + limit must be at most 3000")
	require.Equal(t, int64(3000), sum.Tasks[0].Rows)
	require.True(t, sum.Tasks[0].Refused)
	require.NoError(t, sum.Tasks[1].Err)
	require.Equal(t, int64(50), sum.Tasks[1].Rows)
	require.Equal(t, "1000 1500 named", f.bound(t), "what the API named, not what one task's refusals halved down to")
	answered, refused := requests(f.Sandbox)
	// The run's first page of 100 (nothing had answered it yet); at
	// offset 100, 100,000 refused by the window (whose 3,000 reads as a
	// bound), 3,000 refused by it again, 1,500 refused by the sandbox,
	// which names 1,000; pages of 1,000 to offset 2,100; then the window
	// refuses the task's pages past 3,000, which halves a limit of its
	// own (500, 250, 125 served; 62, 31 refused, 15 served; ...; 3 served
	// up to 3,000; then 1 refused), the bound untouched; then 1 page of
	// the 50 links.
	require.Equal(t, int64(1), refused)
	require.Equal(t, int64(1+2+3+3+1), answered)
	require.Equal(t, int64(3050), f.Count(t, `SELECT count(*) FROM backlinks`))
	f.requireLedgerIsTheSandboxs(t, 3050*45)
}
