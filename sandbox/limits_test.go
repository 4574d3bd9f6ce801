package sandbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
)

// hookedServer starts a sandbox with test hooks over real HTTP. Unlike
// newServer it keeps the limits of cfg as they are (the defaults apply).
func hookedServer(t *testing.T, cfg sandbox.Config, sleep func(context.Context, time.Duration) error, released func(string)) (*sandbox.Server, *httptest.Server) {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testNow }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	s, err := sandbox.NewWithHooks(cfg, sleep, released)
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv
}

// fetched is a reply read as far as the body goes, with the error that
// ended it (nil at a clean end).
type fetched struct {
	reply
	bodyErr error
}

// fetch calls endpoint as key with p. It does not fail the test, so
// goroutines may call it; only a failed round trip is an error.
func fetch(ctx context.Context, srv *httptest.Server, key, endpoint string, p url.Values) (fetched, error) {
	ep, ok := catalog.Lookup(endpoint)
	if !ok {
		return fetched{}, fmt.Errorf("no endpoint %s", endpoint)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+ep.Path+"?"+p.Encode(), nil)
	if err != nil {
		return fetched{}, err
	}
	req.Header.Set("Authorization", "Apikey "+key)
	resp, err := srv.Client().Do(req)
	if err != nil {
		return fetched{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return fetched{reply{status: resp.StatusCode, header: resp.Header, body: body}, err}, nil
}

// call is fetch from the test's goroutine: a failed round trip or body
// read fails the test.
func call(t *testing.T, srv *httptest.Server, key, endpoint string, p url.Values) reply {
	t.Helper()
	f, err := fetch(t.Context(), srv, key, endpoint, p)
	require.NoError(t, err)
	require.NoError(t, f.bodyErr)
	return f.reply
}

// usageJSON reads GET /sandbox/usage?key=key.
func usageJSON(t *testing.T, srv *httptest.Server, key string) map[string]int64 {
	t.Helper()
	r := send(t, srv, http.MethodGet, sandbox.UsagePath+"?key="+key, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var u map[string]any
	require.NoError(t, json.Unmarshal(r.body, &u))
	out := map[string]int64{}
	for k, v := range u {
		if n, ok := v.(float64); ok {
			out[k] = int64(n)
		}
	}
	return out
}

var (
	overviewParams = params("url", "example.com", "scope", "ROOT_DOMAIN")
	keywordParams  = params("keyword", "running shoes", "country", "US")
	// n3.example has 66 months of history: summaryParams answer 5 lines.
	summaryParams = params("url", "n3.example", "scope", "ROOT_DOMAIN", "limit", "5", "format", "csv")
	// a summary of months before the history: 0 lines, so free.
	emptySummaryParams = params("url", "n3.example", "scope", "ROOT_DOMAIN", "date_from", "1990-01", "date_to", "1990-02")
)

func TestBalanceIsNeverOverspentByConcurrentRequests(t *testing.T) {
	t.Parallel()
	const balance = 1000
	s, srv := newServer(t, sandbox.Config{Units: balance})
	kinds := []struct {
		endpoint string
		p        url.Values
		price    int64
	}{
		{"overview", overviewParams, 45},
		{"keyword-metrics", keywordParams, 20},
		{"summary", summaryParams, 5 * 40},
	}
	const n = 60
	start := make(chan struct{})
	type result struct {
		kind int
		f    fetched
		err  error
	}
	results := make(chan result, n)
	for i := range n {
		go func() {
			<-start // all at once
			f, err := fetch(t.Context(), srv, testKey, kinds[i%len(kinds)].endpoint, kinds[i%len(kinds)].p)
			results <- result{i % len(kinds), f, err}
		}()
	}
	close(start)
	var charged int64
	var refusedPrices []int64
	for range n {
		r := <-results
		require.NoError(t, r.err)
		require.NoError(t, r.f.bodyErr)
		switch r.f.status {
		case http.StatusOK:
			charged += kinds[r.kind].price
		case http.StatusForbidden:
			e := failed(t, r.f.reply, http.StatusForbidden)
			require.Equal(t, "units_exhausted", e.Error.Type)
			require.False(t, *e.Error.Retryable)
			refusedPrices = append(refusedPrices, kinds[r.kind].price)
		default:
			require.Failf(t, "unexpected status", "%d: %s", r.f.status, r.f.body)
		}
	}
	u := s.Usage(testKey)
	require.Equal(t, charged, u.UnitsSpent, "every answer is charged its price, nothing else")
	require.LessOrEqual(t, u.UnitsSpent, int64(balance), "never past the balance")
	require.NotEmpty(t, refusedPrices, "60 requests cost more than 1000 units")
	require.Equal(t, int64(len(refusedPrices)), u.FailedRequests)
	left, ok := s.UnitsRemaining(testKey)
	require.True(t, ok)
	require.Equal(t, balance-u.UnitsSpent, left)
	for _, p := range refusedPrices {
		require.Greater(t, p, left, "a request was refused only when the balance could not pay it")
	}
	require.Equal(t, left, usageJSON(t, srv, testKey)["units_remaining"])
}

func TestRefusedRequestsCostNothing(t *testing.T) {
	t.Parallel()
	s, srv := newServer(t, sandbox.Config{Units: 100, APIKeys: []string{"alice", "bob"}})
	require.Equal(t, http.StatusOK, call(t, srv, "alice", "overview", overviewParams).status)
	require.Equal(t, http.StatusOK, call(t, srv, "alice", "overview", overviewParams).status)
	require.Equal(t, map[string]int64{"units_spent": 90, "requests": 2, "failed_requests": 0, "units_remaining": 10}, usageJSON(t, srv, "alice"))

	for _, tc := range []struct {
		endpoint string
		p        url.Values
		cost     int64
	}{
		{"overview", overviewParams, 45},
		{"keyword-metrics", keywordParams, 20},
		{"summary", summaryParams, 200}, // refused whole, never truncated to what 10 units pay
	} {
		r := call(t, srv, "alice", tc.endpoint, tc.p)
		e := failed(t, r, http.StatusForbidden)
		require.Equal(t, "units_exhausted", e.Error.Type)
		require.False(t, *e.Error.Retryable, "more units do not appear on a retry")
		require.Contains(t, e.Error.Message, fmt.Sprintf("costs %d, 10 of the key's balance of 100 remain", tc.cost))
	}
	require.Equal(t, sandbox.Usage{Key: "alice", UnitsSpent: 90, Requests: 2, FailedRequests: 3}, s.Usage("alice"))

	// A per-line answer of no lines costs nothing, so the balance pays it.
	require.Equal(t, http.StatusOK, call(t, srv, "alice", "summary", emptySummaryParams).status)
	// Each key has its own balance, and a balance can be spent to the last
	// unit.
	require.Equal(t, http.StatusOK, call(t, srv, "bob", "summary", params("url", "n3.example", "scope", "ROOT_DOMAIN", "limit", "2")).status)
	require.Equal(t, http.StatusOK, call(t, srv, "bob", "keyword-metrics", keywordParams).status)
	left, ok := s.UnitsRemaining("bob")
	require.True(t, ok)
	require.Zero(t, left)
	require.Equal(t, map[string]int64{"units_spent": 100, "requests": 2, "failed_requests": 0, "units_remaining": 0}, usageJSON(t, srv, "bob"))
	failed(t, call(t, srv, "bob", "keyword-metrics", keywordParams), http.StatusForbidden)

	// Without a balance there is nothing remaining to report.
	s2, srv2 := newServer(t, sandbox.Config{})
	require.Equal(t, http.StatusOK, call(t, srv2, testKey, "summary", summaryParams).status)
	_, ok = s2.UnitsRemaining(testKey)
	require.False(t, ok)
	require.NotContains(t, usageJSON(t, srv2, testKey), "units_remaining")
}

// tooMany checks a 429 of the limits: the envelope, retryable, and no
// Retry-After, as the real API.
func tooMany(t *testing.T, r reply, says string) {
	t.Helper()
	e := failed(t, r, http.StatusTooManyRequests)
	require.Equal(t, "too_many_requests", e.Error.Type)
	require.True(t, *e.Error.Retryable)
	require.Contains(t, e.Error.Message, says)
	require.Empty(t, r.header.Values("Retry-After"))
}

func TestConcurrentRequestsPastTheLimitAnswer429(t *testing.T) {
	t.Parallel()
	// Every answer is slow, and the slow fault waits for release: requests
	// stay in flight as long as the test wants.
	entered := make(chan struct{}, 100)
	release := make(chan struct{})
	sleep := func(ctx context.Context, _ time.Duration) error {
		entered <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	released := make(chan string, 100)
	s, srv := hookedServer(t, sandbox.Config{
		APIKeys:       []string{"alice", "bob"},
		RatePerSecond: -1, // only the concurrency limit (default 10) here
		Faults:        sandbox.Faults{Slow: 1},
	}, sleep, func(key string) { released <- key })

	type result struct {
		f   fetched
		err error
	}
	results := make(chan result, 20)
	hold := func(key string) {
		go func() {
			f, err := fetch(t.Context(), srv, key, "overview", overviewParams)
			results <- result{f, err}
		}()
		<-entered // admitted and held
	}
	for range sandbox.DefaultMaxConcurrent {
		hold("alice")
	}
	tooMany(t, call(t, srv, "alice", "overview", overviewParams), "at most 10 requests in flight")
	tooMany(t, call(t, srv, "alice", "summary", summaryParams), "concurrency limit") // across all endpoints
	hold("bob")                                                                      // another key has its own slots
	require.Equal(t, map[string]int64{"units_spent": 0, "requests": 0, "failed_requests": 2}, usageJSON(t, srv, "alice"),
		"the usage endpoint is not limited; a 429 costs nothing")

	close(release)
	for range sandbox.DefaultMaxConcurrent + 1 {
		r := <-results
		require.NoError(t, r.err)
		require.Equal(t, http.StatusOK, r.f.status, "%s", r.f.body)
	}
	for range sandbox.DefaultMaxConcurrent + 1 {
		<-released
	}
	require.Equal(t, http.StatusOK, call(t, srv, "alice", "overview", overviewParams).status, "the slots are free again")
	require.Equal(t, sandbox.Usage{Key: "alice", UnitsSpent: 11 * 45, Requests: 11, FailedRequests: 2}, s.Usage("alice"))
}

func TestNegativeConcurrencyIsUnlimited(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 100)
	release := make(chan struct{})
	sleep := func(ctx context.Context, _ time.Duration) error {
		entered <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	_, srv := hookedServer(t, sandbox.Config{RatePerSecond: -1, MaxConcurrent: -1, Faults: sandbox.Faults{Slow: 1}}, sleep, nil)
	const n = 3 * sandbox.DefaultMaxConcurrent
	errs := make(chan error, n)
	for range n {
		go func() {
			f, err := fetch(t.Context(), srv, testKey, "overview", overviewParams)
			if err == nil && f.status != http.StatusOK {
				err = fmt.Errorf("status %d: %s", f.status, f.body)
			}
			errs <- err
		}()
	}
	for range n {
		<-entered // all of them in flight at once
	}
	close(release)
	for range n {
		require.NoError(t, <-errs)
	}
}

// fixedClock is a wall clock that moves only when told.
type fixedClock struct{ nanos atomic.Int64 }

func newFixedClock() *fixedClock {
	c := &fixedClock{}
	c.nanos.Store(testNow.UnixNano())
	return c
}

func (c *fixedClock) now() time.Time          { return time.Unix(0, c.nanos.Load()) }
func (c *fixedClock) advance(d time.Duration) { c.nanos.Add(int64(d)) }

// okCount counts the 200s among rs.
func okCount(rs []reply) (n int) {
	for _, r := range rs {
		if r.status == http.StatusOK {
			n++
		}
	}
	return n
}

func TestRequestsPerSecondPastTheLimitAnswer429(t *testing.T) {
	t.Parallel()
	clock := newFixedClock()
	// The zero limits are the real API's: 10 per second, burst 10.
	s, srv := hookedServer(t, sandbox.Config{APIKeys: []string{"alice", "bob"}, WallClock: clock.now}, nil, nil)
	burst := func(key string, n int) []reply {
		var rs []reply
		for i := range n {
			// across all endpoints
			if i%2 == 0 {
				rs = append(rs, call(t, srv, key, "overview", overviewParams))
			} else {
				rs = append(rs, call(t, srv, key, "keyword-metrics", keywordParams))
			}
		}
		return rs
	}
	rs := burst("alice", 10)
	require.Equal(t, 10, okCount(rs), "a full bucket lets a burst of 10 through")
	tooMany(t, call(t, srv, "alice", "overview", overviewParams), "rate limit of this API key exceeded (at most 10 a second)")
	for range 20 {
		require.Equal(t, http.StatusOK, send(t, srv, http.MethodGet, sandbox.UsagePath+"?key=alice", nil).status, "usage is not limited")
	}
	require.Equal(t, 10, okCount(burst("bob", 10)), "every key has its own bucket")

	clock.advance(100 * time.Millisecond) // one token
	require.Equal(t, http.StatusOK, call(t, srv, "alice", "overview", overviewParams).status)
	tooMany(t, call(t, srv, "alice", "overview", overviewParams), "rate limit")

	clock.advance(time.Hour) // the bucket holds at most 10
	require.Equal(t, 10, okCount(burst("alice", 11)))

	u := s.Usage("alice")
	require.Equal(t, int64(21), u.Requests)
	require.Equal(t, int64(3), u.FailedRequests, "429s are failures")
	require.Equal(t, int64(11*45+10*20), u.UnitsSpent, "and cost nothing")
}

func TestRateLimitsAreConfigurable(t *testing.T) {
	t.Parallel()
	clock := newFixedClock()
	_, srv := hookedServer(t, sandbox.Config{RatePerSecond: 3, WallClock: clock.now}, nil, nil)
	rs := make([]reply, 0, 5)
	for range 5 {
		rs = append(rs, call(t, srv, testKey, "overview", overviewParams))
	}
	require.Equal(t, 3, okCount(rs))
	tooMany(t, rs[3], "at most 3 a second")

	_, unlimited := hookedServer(t, sandbox.Config{RatePerSecond: -1, WallClock: clock.now}, nil, nil)
	rs = rs[:0]
	for range 30 {
		rs = append(rs, call(t, unlimited, testKey, "overview", overviewParams))
	}
	require.Equal(t, 30, okCount(rs), "a negative rate is no limit")
}
