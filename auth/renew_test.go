package auth_test

import (
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
)

func TestRenewWhenDue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sandbox.Config{DeviceAutoApprove: 1})
	a := f.accounts(nil)
	f.login(a, "acct", "key-one")
	first, err := a.Token(t.Context(), "acct")
	require.NoError(t, err)

	// Six days on: more than a day left, not due.
	f.clock.advance(6*24*time.Hour - time.Minute)
	got, err := a.Token(t.Context(), "acct")
	require.NoError(t, err)
	require.Equal(t, first, got)
	require.Zero(t, f.refreshes.Load(), "not due: no renewal")

	// Within the day's margin: renewed once.
	f.clock.advance(2 * time.Minute)
	renewed, err := a.Token(t.Context(), "acct")
	require.NoError(t, err)
	require.NotEqual(t, first, renewed)
	require.Equal(t, int64(1), f.refreshes.Load())
	again, err := a.Token(t.Context(), "acct")
	require.NoError(t, err)
	require.Equal(t, renewed, again)
	require.Equal(t, int64(1), f.refreshes.Load())

	st, err := a.Status(t.Context())
	require.NoError(t, err)
	require.Len(t, st, 1)
	require.Equal(t, f.clock.now(), st[0].Refreshed)
	require.Equal(t, "test-host", st[0].RefreshedBy)
	require.Equal(t, f.clock.now().Add(catalog.AccessTokenLifetime), st[0].AccessExpires)
	require.Equal(t, f.clock.now().Add(catalog.RefreshTokenLifetime), st[0].RefreshExpires, "the rotated refresh token lives 30 days again")

	// The old access token still works until it expires; the new one works.
	f.clock.advance(2 * 24 * time.Hour)
	require.Equal(t, http.StatusOK, f.overview(&http.Client{Transport: a.Transport("acct", nil)}))
	f.noTokens(first, renewed)
}

// TestRenewOnceAcrossProcesses: 8 goroutines in 2 processes (2 pools, 2
// Accounts) all need a renewal at once. Exactly one refresh reaches the
// token service; every one then works with the rotated token, and none is
// signed out (a second refresh with the rotated refresh token would be
// refused, invalid_grant).
func TestRenewOnceAcrossProcesses(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sandbox.Config{DeviceAutoApprove: 1})
	procs := []*auth.Accounts{f.accounts(f.pool()), f.accounts(f.pool())}
	f.login(procs[0], "shared", "key-one")
	for _, p := range procs { // both have read (and cached) the token
		_, err := p.Token(t.Context(), "shared")
		require.NoError(t, err)
	}
	f.clock.advance(catalog.AccessTokenLifetime - time.Hour)

	const n = 8
	tokens := make([]string, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			tokens[i], errs[i] = procs[i%2].Token(t.Context(), "shared")
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, tokens[0], tokens[i], "every goroutine works with the renewed token")
	}
	require.Equal(t, int64(1), f.refreshes.Load(), "exactly one refresh reached the token service")
	for _, p := range procs {
		require.Equal(t, http.StatusOK, f.overview(&http.Client{Transport: p.Transport("shared", nil)}))
	}

	// A week on, the rotated refresh token renews again: nobody was
	// signed out.
	f.clock.advance(catalog.AccessTokenLifetime - time.Hour)
	next, err := procs[1].Token(t.Context(), "shared")
	require.NoError(t, err)
	require.NotEqual(t, tokens[0], next)
	require.Equal(t, int64(2), f.refreshes.Load())
	f.noTokens(tokens[0], next)
}

// TestRefreshTokenExpired: 31 days without renewal.
func TestRefreshTokenExpired(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sandbox.Config{DeviceAutoApprove: 1})
	a := f.accounts(nil)
	f.login(a, "idle", "key-one")
	f.clock.advance(31 * 24 * time.Hour)
	_, err := a.Token(t.Context(), "idle")
	var si *auth.SignInError
	require.True(t, errors.As(err, &si), "%v", err)
	require.Equal(t, "account idle must sign in again: `etl auth login --account idle`", err.Error())
	require.Zero(t, f.refreshes.Load(), "known expired: not sent")

	// The token service's own refusal reads the same: here the row says
	// the refresh token is good (another clock), the token service that
	// it expired.
	b := f.accounts(nil, func(c *auth.Config) {
		c.Now = func() time.Time { return f.clock.now().Add(-25 * 24 * time.Hour) }
	})
	_, err = b.Token(t.Context(), "idle")
	require.True(t, errors.As(err, &si), "%v", err)
	require.Equal(t, "account idle must sign in again: `etl auth login --account idle`", err.Error())
	require.Contains(t, si.Reason, "expired")
	require.Equal(t, int64(1), f.refreshes.Load())

	_, err = a.Token(t.Context(), "nobody")
	require.ErrorIs(t, err, auth.ErrNotFound)
	require.Equal(t, "account nobody must sign in again: `etl auth login --account nobody`", err.Error())
}

// TestRenewOn401: a token the API refuses though the row says it is good
// (here: the process's clock is three days behind) is renewed once and the
// request retried once.
func TestRenewOn401(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sandbox.Config{DeviceAutoApprove: 1})
	a := f.accounts(nil)
	f.login(a, "acct", "key-one")
	// The access token expires early (for the API, not for the row).
	f.clock.advance(catalog.AccessTokenLifetime)
	b := f.accounts(nil, func(c *auth.Config) {
		c.Now = func() time.Time { return f.clock.now().Add(-3 * 24 * time.Hour) }
	})
	require.Equal(t, http.StatusOK, f.overview(&http.Client{Transport: b.Transport("acct", nil)}))
	require.Equal(t, int64(1), f.refreshes.Load(), "renewed once")

}
