package pipeline_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/testworld"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

const cappedSpec = `jobs:
  - name: capped
    budget: {per_run: %d}
    targets:
      - {url: n300.example, scope: ROOT_DOMAIN}
      - {url: n240.example, scope: ROOT_DOMAIN}
      - {url: n410.example, scope: SUBDOMAIN}
    endpoints:
      overview: {}
      links: {limit: 37}
      ref-domains: {limit: 23}
      score-profile: {}
`

// paidFor is what the loaded rows cost at the catalog's prices: what the
// units bought, counted from the warehouse.
func (f *fixture) paidFor(t *testing.T) int64 {
	t.Helper()
	var units int64
	for _, name := range []string{"overview", "links", "ref-domains", "score-profile"} {
		ep, _ := catalog.Lookup(name)
		// A row per line, or per request (overview).
		units += f.Count(t, fmt.Sprintf(`SELECT count(*) FROM %s`, ep.Table)) * ep.Price.Units
	}
	return units
}

// TestCapIsNeverPassed: a job whose full cost is past its per-run cap, with
// 8 workers, spends at most the cap by the sandbox's own count, the ledger
// equals that count, and the rows loaded are exactly what the units bought.
func TestCapIsNeverPassed(t *testing.T) {
	t.Parallel()
	for _, limit := range []int64{1, 44, 9_000, 25_000} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			sum, err := f.TryRunWith(t, fmt.Sprintf(cappedSpec, limit), runNow, 8)
			require.NoError(t, err)
			spent := f.Sandbox.Usage("test-key").UnitsSpent
			require.LessOrEqual(t, spent, limit)
			if limit == 1 {
				// Not one request of any task fits in the whole cap: each
				// is refused alone, and no continuation would help.
				require.Empty(t, sum.Stopped)
				for _, res := range sum.Tasks {
					require.True(t, res.Refused, res.Task.String())
					require.Contains(t, res.Skipped, "budget exhausted: the per_run cap of 1 units")
					require.Contains(t, res.Skipped, "more than the whole per_run cap")
				}
				require.Zero(t, sum.Unfinished())
			} else {
				require.Contains(t, sum.Stopped, "budget exhausted: the per_run cap of")
			}
			require.Positive(t, sum.Skipped())
			require.Zero(t, sum.Failed())
			require.Equal(t, spent, f.Count(t, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`), "ledger = sandbox")
			require.Zero(t, f.Count(t, `SELECT count(*) FROM unit_ledger WHERE spent IS NULL`), "every request settled")
			require.Equal(t, spent, f.paidFor(t), "the rows loaded are what the units bought")
			_, _, units := sum.Totals()
			require.Equal(t, spent, units, "the summary says what was spent")
			require.Equal(t, spent, f.Count(t, `SELECT units FROM runs WHERE run_id = $1 AND status = 'partial'`, sum.RunID))
		})
	}
}

// TestLedgerNeverBelowTheAPIWithFaults: with 429s, 500s and cut bodies, the
// ledger may count more than the sandbox charged (a cut page stays at its
// reservation) but never less, and the cap still holds.
func TestLedgerNeverBelowTheAPIWithFaults(t *testing.T) {
	t.Parallel()
	for _, seed := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			f := newWorld(t, testworld.Options{Sandbox: sandbox.Config{Faults: sandbox.Faults{TooManyRequests: 0.1, Internal: 0.1, Cut: 0.15}}})
			const limit = 30_000
			spec := fmt.Sprintf(cappedSpec, limit) + fmt.Sprintf("      anchors: {limit: %d}\n", 10+seed)
			sum, _ := f.TryRunWith(t, spec, runNow, 8)
			spent := f.Sandbox.Usage("test-key").UnitsSpent
			ledger := f.Count(t, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`)
			require.GreaterOrEqual(t, ledger, spent, "the ledger never counts less than the API charged")
			require.LessOrEqual(t, ledger, int64(limit))
			require.LessOrEqual(t, spent, int64(limit))
			_, _, units := sum.Totals()
			require.Equal(t, ledger, units)
			// A cut page commits its complete rows and settles at its
			// reservation: every request is settled, none below its charge.
			require.Zero(t, f.Count(t, `SELECT count(*) FROM unit_ledger WHERE spent IS NULL`))
			require.Positive(t, f.Sandbox.Usage("test-key").FailedRequests, "429s and 500s were met (and retried within a reservation, at no cost)")
		})
	}
}

// TestTwoProcessesShareTheDailyCap: two runners with pools of their own (as
// two processes would have) run two jobs at once under one installation
// cap; together they never pass it.
func TestTwoProcessesShareTheDailyCap(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const daily = 12_345
	spec := fmt.Sprintf("budget: {daily: %d}\n", daily) + `jobs:
  - name: a
    targets: [{url: n500.example, scope: ROOT_DOMAIN}]
    endpoints: {links: {limit: 20}}
  - name: b
    targets: [{url: n400.example, scope: ROOT_DOMAIN}]
    endpoints: {ref-domains: {limit: 15}, anchors: {limit: 15}}
`
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), runNow)
	require.NoError(t, err)
	var g errgroup.Group
	sums := make([]*pipeline.Summary, 2)
	for i, job := range s.Jobs {
		pool := f.NewPool(t)
		client, err := extract.New(extract.Config{BaseURL: f.URL, APIKey: "test-key"})
		require.NoError(t, err)
		r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: pool, Allocator: f.Mem,
			Now: func() time.Time { return runNow }, Concurrency: 4})
		require.NoError(t, err)
		g.Go(func() error {
			sum, err := r.Run(t.Context(), job)
			sums[i] = sum
			return err
		})
	}
	require.NoError(t, g.Wait())
	spent := f.Sandbox.Usage("test-key").UnitsSpent
	require.LessOrEqual(t, spent, int64(daily))
	require.Greater(t, spent, int64(daily-2*45), "the cap was used up")
	require.Equal(t, spent, f.Count(t, `SELECT sum(spent) FROM unit_ledger`))
	require.True(t, strings.Contains(sums[0].Stopped, "the daily cap of 12345 units") ||
		strings.Contains(sums[1].Stopped, "the daily cap of 12345 units"), "a run stopped at the cap")
	require.Positive(t, sums[0].Tasks[0].Pages, "both runs spent")
	require.Positive(t, sums[1].Tasks[0].Pages, "both runs spent")
}

// TestConcurrencyDoesNotWasteTheCap (issue 12, item 8): 8 tasks in flight
// each reserve a worst case of 100 lines of links (4,500 units) against a
// per-run cap of 7,777, on a job of 90 targets whose full price is 99,270
// units, with 429s, 500s and 503s. Most targets have fewer than 100
// backlinks, so most requests settle far below their reservation. A
// reservation that does not fit while others are in flight waits for them
// to settle, so the run stops at its cap, not at half of it, and never
// past it.
func TestConcurrencyDoesNotWasteTheCap(t *testing.T) {
	t.Parallel()
	const cap = 7_777
	var spec strings.Builder
	fmt.Fprintf(&spec, "jobs:\n  - name: wide\n    budget: {per_run: %d}\n    endpoints: {links: {limit: 100}}\n    targets:\n", cap)
	// nN.tI.example has exactly N backlinks: 89 targets of one page of 4
	// to 40 lines, and one of three pages.
	var sizes []int64
	for i := range int64(89) {
		sizes = append(sizes, 4+i*17%37)
	}
	sizes = append(sizes, 250)
	var lines int64
	for i, n := range sizes {
		fmt.Fprintf(&spec, "      - {url: n%d.t%d.example, scope: ROOT_DOMAIN}\n", n, i)
		lines += n
	}
	links, _ := catalog.Lookup("links")
	require.Equal(t, int64(99_270), lines*links.Price.Units, "the job's full price")

	faults, err := sandbox.ParseFaults("429=0.2,500=0.1,503=0.05")
	require.NoError(t, err)
	// Besides the random faults, the first try of every request meets a
	// 429, so faults are met whichever tasks the run gets to.
	var first sync.Map
	var throttled atomic.Int64
	throttle := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, seen := first.LoadOrStore(r.URL.RawQuery, true); !seen {
				throttled.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = io.WriteString(w, `{"meta":{"success":false,"status_code":429,"request_id":"x"},"error":{"type":"rate_limited","code":429,"message":"slow down","retryable":true,"details":[]}}`)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	f := newWorld(t, testworld.Options{MW: throttle, Sandbox: sandbox.Config{Faults: faults, RatePerSecond: -1, MaxConcurrent: -1}})
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec.String()), runNow)
	require.NoError(t, err)
	client, err := extract.New(extract.Config{BaseURL: f.URL, APIKey: "test-key", Backoff: time.Millisecond,
		MaxAttempts: 10, RatePerSecond: -1})
	require.NoError(t, err)
	r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.Pool, Allocator: f.Mem,
		Now: func() time.Time { return runNow }, Concurrency: 8})
	require.NoError(t, err)
	sum, err := r.Run(t.Context(), s.Jobs[0])
	require.NoError(t, err)

	usage := f.Sandbox.Usage("test-key")
	ledger := f.Count(t, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger WHERE run_id = $1`, sum.RunID)
	t.Logf("cap %d: ledger %d units, sandbox %d units in %d requests (%d failed and retried), %d reservations",
		cap, ledger, usage.UnitsSpent, usage.Requests, usage.FailedRequests, f.Count(t, `SELECT count(*) FROM unit_ledger`))
	require.Equal(t, "partial", sum.Status())
	require.Contains(t, sum.Stopped, "budget exhausted: the per_run cap of 7777 units")
	require.LessOrEqual(t, ledger, int64(cap))
	require.GreaterOrEqual(t, ledger, int64(cap*95/100), "the run stopped before its cap")
	require.GreaterOrEqual(t, usage.UnitsSpent, int64(cap*95/100), "the run stopped before its cap")
	require.LessOrEqual(t, usage.UnitsSpent, ledger, "the API charged more than the ledger booked")
	require.GreaterOrEqual(t, throttled.Load(), usage.Requests, "every request met a 429 first")
}
