package pipeline_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/testworld"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

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
