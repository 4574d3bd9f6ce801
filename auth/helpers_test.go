package auth_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/sandbox/oauth"
)

var testNow = time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)

// clock is the one clock of a test: the sandbox's (Now and WallClock) and
// the accounts' (Now); waiting moves it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is a sandbox over real HTTP, a warehouse and what the token
// service was asked.
type fixture struct {
	t     *testing.T
	clock *clock
	sb    *sandbox.Server
	url   string
	dbURL string
	key   *auth.Key
	logs  *syncBuffer // every log line of the test, sandbox's and auth's
	// refreshes counts the renewals (grant_type=refresh_token) that
	// reached the token service, from every Accounts of the test.
	refreshes atomic.Int64
	// waits records what the accounts waited.
	mu    sync.Mutex
	waits []time.Duration
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newFixture(t *testing.T, cfg sandbox.Config) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: &clock{t: testNow}, logs: &syncBuffer{}}
	cfg.Now, cfg.WallClock = f.clock.now, f.clock.now
	if cfg.APIKeys == nil {
		cfg.APIKeys = []string{"key-one", "key-two"}
	}
	cfg.RatePerSecond, cfg.MaxConcurrent = -1, -1
	cfg.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(f.logs, t.Output()), nil))
	sb, err := sandbox.New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	f.sb, f.url = sb, srv.URL
	f.dbURL = pgtest.NewDB(t)
	f.key, _, err = auth.NewKey()
	require.NoError(t, err)
	return f
}

// pool is a new pool on the warehouse: one per "process".
func (f *fixture) pool() *pgxpool.Pool {
	f.t.Helper()
	p, err := pgxpool.New(f.t.Context(), f.dbURL)
	require.NoError(f.t, err)
	f.t.Cleanup(p.Close)
	return p
}

// accounts returns Accounts on pool (a new pool when nil), on the test's
// clock, whose waits move it.
func (f *fixture) accounts(pool *pgxpool.Pool, edit ...func(*auth.Config)) *auth.Accounts {
	f.t.Helper()
	if pool == nil {
		pool = f.pool()
	}
	cfg := auth.Config{
		Pool: pool, Key: f.key, AuthURL: f.url,
		ClientID: sandbox.DefaultClientID, ClientSecret: sandbox.DefaultClientSecret,
		HTTPClient: &http.Client{Transport: &counter{f: f, base: http.DefaultTransport}},
		Now:        f.clock.now,
		Wait: func(ctx context.Context, d time.Duration) error {
			f.mu.Lock()
			f.waits = append(f.waits, d)
			f.mu.Unlock()
			f.clock.advance(d)
			return ctx.Err()
		},
		Host:   "test-host",
		Logger: slog.New(slog.NewTextHandler(io.MultiWriter(f.logs, f.t.Output()), nil)),
	}
	for _, e := range edit {
		e(&cfg)
	}
	a, err := auth.New(cfg)
	require.NoError(f.t, err)
	return a
}

func (f *fixture) waited() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.waits...)
}

// counter counts the renewals sent to the token service.
type counter struct {
	f    *fixture
	base http.RoundTripper
}

func (c *counter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.GetBody != nil && (req.URL.Path == catalog.DeviceTokenPath || req.URL.Path == catalog.AccessTokenPath) {
		body, err := req.GetBody()
		if err == nil {
			b, _ := io.ReadAll(body)
			if v, _ := url.ParseQuery(string(b)); v.Get("grant_type") == catalog.GrantRefreshToken {
				c.f.refreshes.Add(1)
			}
		}
	}
	return c.base.RoundTrip(req)
}

// approve approves a user code as a person would at the verification page,
// for the sandbox account key.
func (f *fixture) approve(userCode, key string) {
	f.t.Helper()
	f.decide(oauth.ApprovePath, url.Values{"user_code": {userCode}, "account": {key}})
}

func (f *fixture) deny(userCode string) {
	f.t.Helper()
	f.decide(oauth.DenyPath, url.Values{"user_code": {userCode}})
}

func (f *fixture) decide(path string, q url.Values) {
	f.t.Helper()
	resp, err := http.Post(f.url+path+"?"+q.Encode(), "", nil)
	require.NoError(f.t, err)
	b, _ := io.ReadAll(resp.Body)
	require.NoError(f.t, resp.Body.Close())
	require.Equal(f.t, http.StatusOK, resp.StatusCode, string(b))
}

// login signs name in with the device flow, approved for key.
func (f *fixture) login(a *auth.Accounts, name, key string) auth.Account {
	f.t.Helper()
	acc, err := a.LoginDevice(f.t.Context(), name, func(dc auth.DeviceCode) error {
		f.approve(dc.UserCode, key)
		return nil
	})
	require.NoError(f.t, err)
	return acc
}

// overview calls the overview endpoint through client and returns the
// status.
func (f *fixture) overview(client *http.Client) int {
	f.t.Helper()
	ep, ok := catalog.Lookup("overview")
	require.True(f.t, ok)
	resp, err := client.Get(f.url + ep.Path + "?url=example.com&scope=ROOT_DOMAIN")
	require.NoError(f.t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(f.t, resp.Body.Close())
	return resp.StatusCode
}

// noTokens fails the test if any of the strings appears in the logs of
// the test or in the accounts table as text (a dump).
func (f *fixture) noTokens(secrets ...string) {
	f.t.Helper()
	conn, err := pgxpool.New(f.t.Context(), f.dbURL)
	require.NoError(f.t, err)
	defer conn.Close()
	var dump string
	require.NoError(f.t, conn.QueryRow(f.t.Context(), `SELECT coalesce(string_agg(a::text, E'\n'), '') FROM accounts a`).Scan(&dump))
	for _, s := range secrets {
		require.NotEmpty(f.t, s)
		require.NotContains(f.t, f.logs.String(), s, "a token in the logs")
		require.NotContains(f.t, dump, s, "a token in the table")
		require.NotContains(f.t, dump, strings.ToLower(hexOf(s)), "a token in the table, as bytes")
	}
}

func hexOf(s string) string {
	const digits = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(digits[s[i]>>4])
		b.WriteByte(digits[s[i]&15])
	}
	return b.String()
}
