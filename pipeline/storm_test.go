package pipeline_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/testworld"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

// cutLog records every answer the sandbox cut: the request, and the bytes
// of the body that reached the client before the cut.
type cutLog struct {
	mu   sync.Mutex
	cuts []cutAnswer
}

type cutAnswer struct {
	path, query string
	got         []byte
}

func (c *cutLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &teeWriter{ResponseWriter: w}
		defer func() { // also when the sandbox aborts the cut answer (a panic)
			if strings.Contains(w.Header().Get("X-Sandbox-Faults"), "cut") {
				c.mu.Lock()
				c.cuts = append(c.cuts, cutAnswer{path: r.URL.Path, query: r.URL.RawQuery, got: rec.buf.Bytes()})
				c.mu.Unlock()
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// teeWriter keeps a copy of what the handler wrote.
type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (t *teeWriter) Write(p []byte) (int, error) {
	n, err := t.ResponseWriter.Write(p)
	t.buf.Write(p[:n])
	return n, err
}

func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

const stormSpec = `jobs:
  - name: storm
    targets:
      - {url: n300.example, scope: ROOT_DOMAIN}
      - {url: n240.example, scope: ROOT_DOMAIN}
      - {url: n120.example, scope: SUBDOMAIN}
      - {url: n410.example, scope: ROOT_DOMAIN}
      - {url: example.com, scope: ROOT_DOMAIN}
      - {url: rival-a.example, scope: ROOT_DOMAIN}
      - {url: rival-b.example, scope: ROOT_DOMAIN}
      - {url: n90.example, scope: ROOT_DOMAIN}
    endpoints:
      overview: {}
      summary: {limit: 12}
      links: {limit: 100}
      ref-domains: {limit: 100}
      anchors: {limit: 100}
    keywords: {keywords: [seo, etl, backlinks, "local seo", crm], countries: [US, DE]}
`

// TestAFaultStormFinishesInOneRun: with 429s, 500s, 503s and cut bodies,
// a job of 50 tasks finishes in one run; its tables equal a fault-free
// run's; and the sandbox charged no more than the clean run plus the
// lines the cuts lost (a cut answer is charged whole; its complete rows
// load, and only the rest is asked for again).
func TestAFaultStormFinishesInOneRun(t *testing.T) {
	t.Parallel()
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(stormSpec), runNow)
	require.NoError(t, err)
	job := spec.Jobs[0]
	require.Len(t, job.Tasks(runNow), 50)

	clean := newFixture(t)
	cleanSum, err := clean.Runner(t, runNow, pipeline.Config{Concurrency: 4}).Run(t.Context(), job)
	require.NoError(t, err)
	require.Equal(t, "succeeded", cleanSum.Status())
	cleanUnits := clean.Sandbox.Usage("test-key").UnitsSpent

	var cuts cutLog
	f := newWorld(t, testworld.Options{MW: cuts.wrap, Sandbox: sandbox.Config{RatePerSecond: -1, MaxConcurrent: -1,
		Faults: sandbox.Faults{TooManyRequests: 0.2, Internal: 0.1, Unavailable: 0.05, Cut: 0.05}}})
	client, err := extract.New(extract.Config{BaseURL: f.URL, APIKey: "test-key", Backoff: time.Millisecond, RatePerSecond: -1})
	require.NoError(t, err)
	r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.Pool, Allocator: f.Mem, Concurrency: 4,
		Now: func() time.Time { return runNow }})
	require.NoError(t, err)
	sum, err := r.Run(t.Context(), job)
	require.NoError(t, err)
	require.Equal(t, "succeeded", sum.Status(), "%+v", sum.Tasks)
	usage := f.Sandbox.Usage("test-key")
	require.Greater(t, usage.FailedRequests, int64(10), "a storm: the faults hit")
	require.Greater(t, usage.Requests, int64(60))
	require.NotEmpty(t, cuts.cuts, "some answers were cut")

	for _, table := range []string{"backlink_overview", "backlink_history", "backlinks", "ref_domains", "anchors", "keyword_metrics"} {
		require.Equal(t, clean.tableHash(t, table), f.tableHash(t, table), table)
	}

	// What the cuts lost: the rows of each cut answer (the same request to
	// the fault-free sandbox) less the complete rows that arrived.
	var lost int64
	for _, c := range cuts.cuts {
		ep, ok := catalog.ByPath(c.path)
		require.True(t, ok, c.path)
		resp, err := http.Get(clean.URL + c.path + "?" + c.query + "&key=test-key")
		require.NoError(t, err)
		whole, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, string(whole))
		rows := int64(bytes.Count(whole, []byte("\n")) - 1) // less the header
		complete := int64(max(bytes.Count(c.got, []byte("\n"))-1, 0))
		if complete < rows {
			// A per-request answer is bought whole again.
			lost += ep.Price.Cost(int(rows)) - ep.Price.Cost(int(complete))
			if ep.Price.Per == catalog.PerRequest {
				lost += ep.Price.Units
			}
		}
	}
	// The clean sandbox charged those probes too: take its charge before.
	t.Logf("storm: %d tasks, %d answered requests, %d error answers, %d cut; charged %d units (clean run %d), the cuts lost %d, ledger %d",
		len(sum.Tasks), usage.Requests, usage.FailedRequests, len(cuts.cuts), usage.UnitsSpent, cleanUnits, lost,
		f.Count(t, `SELECT units FROM runs WHERE run_id = $1`, sum.RunID))
	require.LessOrEqual(t, usage.UnitsSpent, cleanUnits+lost,
		"charged %d, a clean run %d, the cuts lost %d", usage.UnitsSpent, cleanUnits, lost)
	require.GreaterOrEqual(t, usage.UnitsSpent, cleanUnits)
	ledger := f.Count(t, `SELECT units FROM runs WHERE run_id = $1`, sum.RunID)
	require.GreaterOrEqual(t, ledger, usage.UnitsSpent, "the ledger never counts less than the API charged")
}
