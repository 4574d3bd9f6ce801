package pipeline_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
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
		units += f.count(t, fmt.Sprintf(`SELECT count(*) FROM %s`, ep.Table)) * ep.Price.Units
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
			sum, err := f.tryRunWith(t, fmt.Sprintf(cappedSpec, limit), runNow, 8)
			require.NoError(t, err)
			spent := f.sandbox.Usage("test-key").UnitsSpent
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
			require.Equal(t, spent, f.count(t, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`), "ledger = sandbox")
			require.Zero(t, f.count(t, `SELECT count(*) FROM unit_ledger WHERE spent IS NULL`), "every request settled")
			require.Equal(t, spent, f.paidFor(t), "the rows loaded are what the units bought")
			_, _, units := sum.Totals()
			require.Equal(t, spent, units, "the summary says what was spent")
			require.Equal(t, spent, f.count(t, `SELECT units FROM runs WHERE run_id = $1 AND status = 'partial'`, sum.RunID))
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
			f := newFixtureFaults(t, nil, sandbox.Faults{TooManyRequests: 0.1, Internal: 0.1, Cut: 0.15})
			const limit = 30_000
			spec := fmt.Sprintf(cappedSpec, limit) + fmt.Sprintf("      anchors: {limit: %d}\n", 10+seed)
			sum, _ := f.tryRunWith(t, spec, runNow, 8)
			spent := f.sandbox.Usage("test-key").UnitsSpent
			ledger := f.count(t, `SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`)
			require.GreaterOrEqual(t, ledger, spent, "the ledger never counts less than the API charged")
			require.LessOrEqual(t, ledger, int64(limit))
			require.LessOrEqual(t, spent, int64(limit))
			_, _, units := sum.Totals()
			require.Equal(t, ledger, units)
			require.Positive(t, f.count(t, `SELECT count(*) FROM unit_ledger WHERE spent IS NULL`), "a cut page stayed at its reservation")
			require.Positive(t, f.sandbox.Usage("test-key").FailedRequests, "429s and 500s were met (and retried within a reservation, at no cost)")
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
	s, err := pipeline.ParseSpec("jobs.yaml", []byte(spec), runNow)
	require.NoError(t, err)
	var g errgroup.Group
	sums := make([]*pipeline.Summary, 2)
	for i, job := range s.Jobs {
		pool := f.newPool(t)
		client, err := extract.New(extract.Config{BaseURL: f.url, APIKey: "test-key"})
		require.NoError(t, err)
		r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: pool, Allocator: f.mem,
			Now: func() time.Time { return runNow }, Concurrency: 4})
		require.NoError(t, err)
		g.Go(func() error {
			sum, err := r.Run(t.Context(), job)
			sums[i] = sum
			return err
		})
	}
	require.NoError(t, g.Wait())
	spent := f.sandbox.Usage("test-key").UnitsSpent
	require.LessOrEqual(t, spent, int64(daily))
	require.Greater(t, spent, int64(daily-2*45), "the cap was used up")
	require.Equal(t, spent, f.count(t, `SELECT sum(spent) FROM unit_ledger`))
	require.True(t, strings.Contains(sums[0].Stopped, "the daily cap of 12345 units") ||
		strings.Contains(sums[1].Stopped, "the daily cap of 12345 units"), "a run stopped at the cap")
	require.Positive(t, sums[0].Tasks[0].Pages, "both runs spent")
	require.Positive(t, sums[1].Tasks[0].Pages, "both runs spent")
}
