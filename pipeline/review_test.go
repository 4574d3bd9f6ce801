package pipeline_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// counting counts the requests to path that reach next.
func counting(path string, n *atomic.Int32, next func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		inner := next(h)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == path {
				n.Add(1)
			}
			inner.ServeHTTP(w, r)
		})
	}
}

// TestAnUnpagedAnswerCutAgainAndAgainIsNotBoughtForEver: a request that
// is neither paged nor narrowed (score profile) is asked again whole after
// a cut, and the API charges each whole answer. An answer cut after some
// complete rows made no progress the task can keep (the next request asks
// for the same rows again), so it counts as a failed try like a cut before
// the first row: the task fails after a bounded number of tries. Before,
// every cut with a complete row reset the count, and a job without a cap
// bought the score profile again for as long as the answers were cut (here
// 30 times, 101 units each, until the server stopped cutting).
func TestAnUnpagedAnswerCutAgainAndAgainIsNotBoughtForEver(t *testing.T) {
	t.Parallel()
	const path = "/apis/v4/backlinks/v1/score-profile"
	var requests atomic.Int32
	f := newFixtureWith(t, counting(path, &requests, cut(path, 30)))
	sum, err := f.tryRun(t, `jobs:
  - name: c
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {score-profile: {}}
`, runNow)
	require.ErrorContains(t, err, "cut")
	require.Equal(t, 1, sum.Failed())
	require.LessOrEqual(t, requests.Load(), int32(4), "asked again whole at most 3 times")
	_, _, units := sum.Totals()
	require.GreaterOrEqual(t, units, f.sandbox.Usage("test-key").UnitsSpent, "never below what the API charged")
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
	clean.run(t, spec(1_000_000), runNow)
	cleanUnits := clean.sandbox.Usage("test-key").UnitsSpent

	f := newFixture(t)
	first, err := f.tryRunWith(t, spec(470), runNow, 1)
	require.NoError(t, err)
	require.Equal(t, "partial", first.Status())
	require.True(t, first.Tasks[0].Refused, "480 units in one request, under a cap of 470")
	require.NotEmpty(t, first.Stopped, "the links stopped at the cap")

	// The plan of the continuation prices the refused task again.
	plan := f.plan(t, spec(2000), runNow, false)
	require.NotNil(t, plan.Resume)
	require.Equal(t, int64(12*40), *plan.Tasks[0].Expected, plan.Tasks[0].Basis)

	second, err := f.tryRunWith(t, spec(2000), runNow, 1)
	require.NoError(t, err)
	require.Equal(t, first.RunID, second.RunID)
	require.Equal(t, "succeeded", second.Status(), "%+v", second.Tasks[0].Skipped)
	require.Equal(t, int64(12), f.count(t, `SELECT count(*) FROM backlink_history`))
	require.Equal(t, cleanUnits, f.sandbox.Usage("test-key").UnitsSpent, "every line bought once")

	// Still dearer than the cap: refused again, and nothing is sent.
	g := newFixture(t)
	_, err = g.tryRunWith(t, spec(470), runNow, 1)
	require.NoError(t, err)
	before := g.sandbox.Usage("test-key").UnitsSpent
	again, err := g.tryRunWith(t, spec(471), runNow, 1)
	require.NoError(t, err)
	require.True(t, again.Tasks[0].Refused)
	require.Contains(t, again.Tasks[0].Skipped, "more than the whole per_run cap")
	require.NotContains(t, again.Tasks[0].Skipped, "earlier attempt", "weighed again under the new cap")
	require.Equal(t, before+10*45, g.sandbox.Usage("test-key").UnitsSpent, "only a page of links")
}
