package pipeline_test

import (
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
