package sandbox_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
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

// TestConformanceListing runs the listing endpoints' conformance checks
// over HTTP against the sandbox: the rate limits are measured on a wall
// clock the suite moves, and a hook holds a bulk update in flight when
// the suite asks.
func TestConformanceListing(t *testing.T) {
	t.Parallel()
	const account, noPlan = "agency-n200", "basic-n20"
	now := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)
	var wall movingClock
	wall.set(now)
	var mu sync.Mutex
	var hold chan struct{}    // the held request closes it once admitted
	var proceed chan struct{} // closed to let it go on
	sb, err := sandbox.NewWithListingHook(sandbox.Config{Now: func() time.Time { return now }, WallClock: wall.now,
		APIKeys: []string{account, noPlan}, NoLocalPro: []string{noPlan}, Units: 1000,
		Logger: slog.New(slog.DiscardHandler)}, // hundreds of requests
		func(ctx context.Context, op, _ string) {
			mu.Lock()
			held, release := hold, proceed
			if op == catalog.UpdateLocations.Name {
				hold = nil
			}
			mu.Unlock()
			if op != catalog.UpdateLocations.Name || held == nil {
				return
			}
			close(held)
			select {
			case <-release:
			case <-ctx.Done():
			}
		})
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	token := func(account string) string {
		tok, err := sb.IssueToken(account)
		require.NoError(t, err)
		return tok.AccessToken
	}
	apitest.RunListing(t, apitest.ListingConfig{
		BaseURL: srv.URL, Token: token(account), NoPlanToken: token(noPlan), Now: now,
		Advance: func(_ *testing.T, d time.Duration) { wall.advance(d) },
		HoldBulk: func(t *testing.T) (<-chan struct{}, func()) {
			mu.Lock()
			defer mu.Unlock()
			hold, proceed = make(chan struct{}), make(chan struct{})
			release := sync.OnceFunc(func() { close(proceed) })
			t.Cleanup(release)
			return hold, release
		},
		UnitsSpent: func() int64 { return sb.Usage(account).UnitsSpent },
	})
	require.Equal(t, sandbox.Usage{Key: account}, sb.Usage(account), "listing calls are not counted either")
}
