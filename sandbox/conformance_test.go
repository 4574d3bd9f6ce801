package sandbox_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/seoetl/etl/internal/apitest"
	"github.com/seoetl/etl/sandbox"
)

// TestConformance runs the data API's conformance suite over HTTP against
// the sandbox: every endpoint's fields, formats, paging, ordering, filters,
// bounds, auth, charges and consistency.
func TestConformance(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)
	const key = "conformance-key"
	// The suite is a plain HTTP client without the pipeline's rate limit;
	// the limits have tests of their own.
	sb, srv := newServer(t, sandbox.Config{Now: func() time.Time { return now }, APIKeys: []string{key},
		Logger: slog.New(slog.DiscardHandler)}) // thousands of requests: their log lines would only slow the suite
	apitest.Run(t, apitest.Config{BaseURL: srv.URL, Key: key, Now: now,
		UnitsSpent: func() int64 { return sb.Usage(key).UnitsSpent }})
}
