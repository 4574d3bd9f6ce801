package auth_test

import (
	"errors"
	"fmt"
	"io"
	"net"
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
	require.Equal(t, "account nobody does not exist (it never signed in, or signed out): sign it in with `etl auth login --account nobody`", err.Error())
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

// notHTTP serves TCP at an address and closes every connection without a
// byte, as PostgreSQL does with an HTTP request; it returns the address as
// a URL.
func notHTTP(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				// No byte back: the end of what it sends, then whatever
				// the client sends is read until it closes.
				_ = c.(*net.TCPConn).CloseWrite()
				_, _ = io.Copy(io.Discard, c)
				_ = c.Close()
			}()
		}
	}()
	return "http://" + l.Addr().String()
}

// closedPort is the URL of a port nothing listens at.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	return u
}

// TestTokenServiceUnreachable: ETL_AUTH_URL at a closed port, or at a
// service that answers no HTTP, fails a renewal and a sign-in at once,
// untried again, with a *auth.ServiceError that is permanent (package
// extract fails the request at once and reads it as a mistake in the
// address) and whose one line names ETL_AUTH_URL, not ETL_API_URL. The
// renewal's error was the library's "oauth2: cannot fetch token: Post
// ...: connection refused" and the data API's client tried it again and
// then blamed ETL_API_URL.
func TestTokenServiceUnreachable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sandbox.Config{DeviceAutoApprove: 1})
	pool := f.pool()
	f.login(f.accounts(pool), "acct", "key-one")
	f.clock.advance(6*24*time.Hour + time.Hour) // the renewal is due
	waits := len(f.waited())
	for _, tc := range []struct {
		name string
		url  func(*testing.T) string
		want string
	}{
		{"closed port", closedPort, "ETL_AUTH_URL %s refused the connection: is the token service (or `etl sandbox`) running at that address?"},
		{"no HTTP", notHTTP, "ETL_AUTH_URL %s closed the connection without an HTTP answer (another service listens there, such as PostgreSQL?): check the host and port of ETL_AUTH_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.url(t)
			a := f.accounts(pool, func(c *auth.Config) { c.AuthURL = base + "/" })
			want := fmt.Sprintf(tc.want, base)
			check := func(err error) {
				t.Helper()
				var se *auth.ServiceError
				require.ErrorAs(t, err, &se)
				require.Equal(t, want, se.Error())
				var p interface{ Permanent() bool }
				require.ErrorAs(t, err, &p)
				require.True(t, p.Permanent())
			}
			_, err := a.Token(t.Context(), "acct")
			check(err)
			require.Equal(t, want, err.Error(), "the line alone")
			_, err = a.LoginDevice(t.Context(), "other", func(auth.DeviceCode) error { return nil })
			check(err)
			require.Equal(t, want, err.Error(), "the line alone")
			// Through the transport a client is handed: the request fails
			// with it, unsent.
			_, err = (&http.Client{Transport: a.Transport("acct", nil)}).Get(f.url + "/")
			check(err)
		})
	}
	require.Len(t, f.waited(), waits, "no request was tried again")
}
