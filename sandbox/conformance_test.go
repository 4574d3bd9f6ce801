package sandbox_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/seoetl/etl/internal/apitest"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/sandbox/oauth"
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

// TestConformanceAuth runs the token service's conformance checks over
// HTTP against the sandbox, with clocks the test moves: one for codes and
// tokens (Config.Now), and the wall clock that paces polls.
func TestConformanceAuth(t *testing.T) {
	t.Parallel()
	const key, other = "conformance-key", "other-key"
	var clock movingClock
	clock.set(time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC))
	sb, srv := newServer(t, sandbox.Config{Now: clock.now, WallClock: clock.now, APIKeys: []string{key, other},
		ClientID: "conformance-client", ClientSecret: "conformance-secret"})
	apitest.RunAuth(t, apitest.AuthConfig{
		BaseURL: srv.URL, Key: key,
		ClientID: "conformance-client", ClientSecret: "conformance-secret", RedirectURI: srv.URL + oauth.SuccessPath,
		Decide: func(t *testing.T, userCode string, approve bool) {
			decide(t, srv, userCode, approve, key)
		},
		Advance:    func(_ *testing.T, d time.Duration) { clock.advance(d) },
		UnitsSpent: func() int64 { return sb.Usage(key).UnitsSpent },
	})
}
