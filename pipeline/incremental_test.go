package pipeline_test

import (
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seoetl/etl/internal/testworld"
	"github.com/seoetl/etl/planning"
	"github.com/stretchr/testify/require"
)

// asOf makes the sandbox answer links as if it were asked at t: only the
// links first seen by then exist (a filter the proxy adds to each request).
func asOf(t time.Time) func(http.Handler) http.Handler {
	cond := "first_seen_at <= " + t.UTC().Format("2006-01-02T15:04:05")
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			if f := q.Get("filter"); f != "" {
				q.Set("filter", "("+f+") AND "+cond)
			} else {
				q.Set("filter", cond)
			}
			r.URL.RawQuery = q.Encode()
			next.ServeHTTP(w, r)
		})
	}
}

// asOfSwitch serves the API as of the time it holds (asOf), or as it is
// while it holds none.
type asOfSwitch struct{ then atomic.Pointer[time.Time] }

func (s *asOfSwitch) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t1 := s.then.Load(); t1 != nil {
			asOf(*t1)(next).ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// linksOfN900 are the 900 links of n900.example, first seen first, as f's
// sandbox serves them, and T1, when the 601st of them was first seen.
func linksOfN900(t *testing.T, f *fixture) (all []map[string]string, t1 time.Time) {
	t.Helper()
	all = f.served(t, "/apis/v4/backlinks/v1/links", url.Values{"url": {"n900.example"}, "scope": {"ROOT_DOMAIN"},
		"limit": {"10000"}, "order_by": {"first_seen_at"}, "direction": {"ASC"}})
	require.Len(t, all, 900)
	t1, err := time.Parse("2006-01-02T15:04:05", all[600]["first_seen_at"])
	require.NoError(t, err)
	return all, t1
}

// TestIncrementalRunPaysOnlyForNewRows: a first run loads the links first
// seen by T1; a second run pays for exactly the links first seen after the
// first run's watermark, and a third for nothing.
func TestIncrementalRunPaysOnlyForNewRows(t *testing.T) {
	t.Parallel()
	const spec = `jobs:
  - name: inc
    max_age: 0 # every run asks past the watermark
    targets: [{url: n900.example, scope: ROOT_DOMAIN}]
    endpoints:
      links: {limit: 50, incremental: first_seen_at, filter: "domain_score >= 0"}
`
	// Run 1 sees the API as of T1, later runs see it now.
	var api asOfSwitch
	f := newFixtureWith(t, api.wrap)
	all, t1 := linksOfN900(t, f)
	api.then.Store(&t1)
	first := f.Run(t, spec, runNow)
	seenByT1 := 0
	var watermark string
	for _, row := range all {
		if row["first_seen_at"] <= all[600]["first_seen_at"] {
			seenByT1++
			watermark = max(watermark, row["first_seen_at"])
		}
	}
	_, _, units1 := first.Totals()
	require.Equal(t, int64(45*seenByT1), units1)
	require.Equal(t, int64(seenByT1), f.Count(t, `SELECT count(*) FROM backlinks`))
	require.Equal(t, int64(1), f.Count(t, `SELECT count(*) FROM watermarks WHERE value = $1::timestamptz`, watermark+"Z"))

	// Run 2 sees the API now: it pays for the newer links only.
	api.then.Store(nil)
	spentBefore := f.Sandbox.Usage("test-key").UnitsSpent
	second := f.Run(t, spec, runNow)
	newer := 0
	for _, row := range all {
		if row["first_seen_at"] > watermark {
			newer++
		}
	}
	require.Positive(t, newer)
	_, _, units2 := second.Totals()
	require.Equal(t, int64(45*newer), units2, "the second run pays for the new links only")
	require.Equal(t, units2, f.Sandbox.Usage("test-key").UnitsSpent-spentBefore)
	require.Equal(t, int64(900), f.Count(t, `SELECT count(*) FROM backlinks`), "together the runs hold every link")

	// Run 3: nothing is new, nothing is paid.
	third := f.Run(t, spec, runNow)
	_, _, units3 := third.Totals()
	require.Zero(t, units3)
}

// TestPlanOfAnIncrementalPull: an incremental task asks only for rows
// past its watermark, so its total is that of the rows past it: unknown
// after a run (unbounded without max_rows), and exactly what the next run
// pays once a probe asked for it.
func TestPlanOfAnIncrementalPull(t *testing.T) {
	t.Parallel()
	const spec = `jobs:
  - name: inc
    max_age: 0 # every run asks past the watermark
    targets: [{url: n900.example, scope: ROOT_DOMAIN}]
    endpoints:
      links: {limit: 50, incremental: first_seen_at}
`
	// The first run sees the API as of T1, later ones see it now.
	var api asOfSwitch
	f := newFixtureWith(t, api.wrap)
	all, t1 := linksOfN900(t, f)
	api.then.Store(&t1)

	planAndRun := func(wantLinks int) {
		t.Helper()
		plan := f.Plan(t, spec, runNow, true)
		require.Equal(t, int64(wantLinks), *plan.Tasks[0].Total, plan.Tasks[0].Basis)
		before := f.Sandbox.Usage("test-key").UnitsSpent
		sum := f.Run(t, spec, runNow)
		testworld.RequireRunMatchesPlan(t, plan, sum)
		require.Equal(t, *plan.Total.Expected, f.Sandbox.Usage("test-key").UnitsSpent-before)
		require.Equal(t, int64(45*wantLinks), *plan.Total.Expected)
	}
	seenByT1 := 0
	for _, row := range all {
		if row["first_seen_at"] <= all[600]["first_seen_at"] {
			seenByT1++
		}
	}
	planAndRun(seenByT1)

	api.then.Store(nil)
	plan := f.Plan(t, spec, runNow, false)
	links := plan.Tasks[0]
	require.Equal(t, planning.SourceUnknown, links.Source)
	require.Nil(t, links.Expected, "no max_rows, and nothing known past the watermark")
	require.Regexp(t, `^unknown: unbounded .*\(rows past the watermark \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\)$`, links.Basis)

	planAndRun(len(all) - seenByT1)
	planAndRun(0)
}
