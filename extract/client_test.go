package extract_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/sandbox"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const key = "sk-extract-test-0123456789"

var now = time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)

// serve runs the sandbox behind an optional middleware and returns a client
// for it.
func serve(t *testing.T, mw func(http.Handler) http.Handler) (*extract.Client, *sandbox.Server) {
	t.Helper()
	sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return now }, APIKeys: []string{key}})
	require.NoError(t, err)
	var h http.Handler = sb.Handler()
	if mw != nil {
		h = mw(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, MaxAttempts: 3, Backoff: time.Millisecond})
	require.NoError(t, err)
	return c, sb
}

func endpoint(t *testing.T, name string) *catalog.Endpoint {
	t.Helper()
	ep, ok := catalog.Lookup(name)
	require.True(t, ok)
	return ep
}

func TestDoStreamsTheBodyAndSendsTheKeyInTheHeader(t *testing.T) {
	t.Parallel()
	var sawHeader, sawQueryKey atomic.Bool
	c, sb := serve(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sawHeader.Store(r.Header.Get("Authorization") == "Apikey "+key)
			sawQueryKey.Store(r.URL.Query().Has("key"))
			next.ServeHTTP(w, r)
		})
	})
	req := extract.Request{Endpoint: endpoint(t, "overview"),
		Params: url.Values{"url": {"n4242.example"}, "scope": {"ROOT_DOMAIN"}, "format": {"csv"}, "fields": {"backlinks_count"}}}
	require.NotContains(t, c.URL(req), key)
	resp, err := c.Do(t.Context(), req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.NoError(t, err)
	require.Equal(t, "backlinks_count\n4242\n", string(body))
	require.Equal(t, 1, resp.Attempts)
	require.True(t, sawHeader.Load())
	require.False(t, sawQueryKey.Load())
	require.Equal(t, int64(45), sb.Usage(key).UnitsSpent)
}

func TestAPIErrors(t *testing.T) {
	t.Parallel()
	c, sb := serve(t, nil)
	for _, tc := range []struct {
		name   string
		ep     *catalog.Endpoint
		params url.Values
		status int
		want   string
	}{
		{"invalid parameter", endpoint(t, "overview"), url.Values{"url": {"a.com"}, "scope": {"NOPE"}}, 400, "scope"},
		{"missing parameter", endpoint(t, "keyword-metrics"), url.Values{"country": {"US"}}, 400, "keyword"},
		{"unknown path", &catalog.Endpoint{Name: "nowhere", Path: "/apis/v4/backlinks/v1/nowhere"}, url.Values{}, 404, "nowhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := c.Do(t.Context(), extract.Request{Endpoint: tc.ep, Params: tc.params})
			var apiErr *extract.APIError
			require.ErrorAs(t, err, &apiErr)
			require.Equal(t, tc.status, apiErr.Status)
			require.False(t, apiErr.Retryable)
			require.NotEmpty(t, apiErr.Type)
			require.NotEmpty(t, apiErr.RequestID)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), tc.ep.Name)
			require.NotErrorIs(t, err, extract.ErrUnitsExhausted)
		})
	}
	// Not retried: one failed request each, nothing charged.
	require.Zero(t, sb.Usage(key).UnitsSpent)
}

func TestWrongKeyIsA401WithoutTheKey(t *testing.T) {
	t.Parallel()
	_, sb := serve(t, nil)
	srv := httptest.NewServer(sb.Handler())
	defer srv.Close()
	c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: "sk-not-a-valid-key-42"})
	require.NoError(t, err)
	_, err = c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{"url": {"a.com"}, "scope": {"PAGE"}}})
	var apiErr *extract.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.Status)
	require.NotContains(t, err.Error(), "sk-not-a-valid-key-42")
}

// fail answers the first n requests with status and the API's error
// envelope (retryable as given), then passes requests to the sandbox.
func fail(n int32, status int, retryable bool, message string) (func(http.Handler) http.Handler, *atomic.Int32) {
	var seen atomic.Int32
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if seen.Add(1) <= n {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = fmt.Fprintf(w, `{"meta":{"success":false,"status_code":%d,"request_id":"r1"},`+
					`"error":{"type":"test","code":%d,"message":%q,"retryable":%t,"details":[]}}`, status, status, message, retryable)
				return
			}
			next.ServeHTTP(w, r)
		})
	}, &seen
}

func TestRetriesWhatTheAPISaysIsRetryable(t *testing.T) {
	t.Parallel()
	mw, seen := fail(2, http.StatusServiceUnavailable, true, "try again")
	c, _ := serve(t, mw)
	resp, err := c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{"url": {"a.com"}, "scope": {"PAGE"}, "format": {"csv"}}})
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, 3, resp.Attempts)
	require.Equal(t, int32(3), seen.Load())
}

func TestHonoursRetryableFalse(t *testing.T) {
	t.Parallel()
	mw, seen := fail(5, http.StatusInternalServerError, false, "permanent")
	c, _ := serve(t, mw)
	_, err := c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{"url": {"a.com"}, "scope": {"PAGE"}}})
	var apiErr *extract.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 500, apiErr.Status)
	require.Equal(t, int32(1), seen.Load())
}

// TestTheStatusDecidesWhatIsTriedAgain: the envelope's retryable governs
// only the answers that may succeed later (408, 425, 429, 5xx: tried
// again unless it says false; 400 and 422: only when it says true). A
// 401, 403, 404 (or 402, 405, 410) is sent once whatever it says: before,
// "retryable": true had a run wait ten attempts (about 95 s) before it
// stopped at the key refused, the units gone or a wrong address.
func TestTheStatusDecidesWhatIsTriedAgain(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	for _, tc := range []struct {
		status    int
		retryable *bool // nil: the envelope has none
		attempts  int32
	}{
		{401, &yes, 1}, {403, &yes, 1}, {404, &yes, 1}, {402, &yes, 1}, {405, &yes, 1}, {410, &yes, 1},
		{401, nil, 1}, {404, nil, 1},
		{400, &yes, 3}, {400, &no, 1}, {400, nil, 1}, {422, &yes, 3},
		{429, nil, 3}, {429, &no, 1}, {503, &yes, 3}, {500, &no, 1}, {408, nil, 3},
	} {
		said := "none"
		if tc.retryable != nil {
			said = fmt.Sprint(*tc.retryable)
		}
		t.Run(fmt.Sprintf("%d retryable %s", tc.status, said), func(t *testing.T) {
			t.Parallel()
			var seen atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen.Add(1)
				flag := ""
				if tc.retryable != nil {
					flag = fmt.Sprintf(`"retryable":%t,`, *tc.retryable)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = fmt.Fprintf(w, `{"meta":{"success":false,"status_code":%d,"request_id":"r1"},`+
					`"error":{"type":"test","code":%d,"message":"no",%s"details":[]}}`, tc.status, tc.status, flag)
			}))
			t.Cleanup(srv.Close)
			c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, MaxAttempts: 3, Backoff: time.Millisecond})
			require.NoError(t, err)
			_, err = c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{"url": {"a.com"}, "scope": {"PAGE"}}})
			var apiErr *extract.APIError
			require.ErrorAs(t, err, &apiErr)
			require.Equal(t, tc.status, apiErr.Status)
			require.Equal(t, tc.attempts, seen.Load())
			require.Equal(t, tc.attempts > 1, apiErr.Retryable)
		})
	}
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	mw, seen := fail(100, http.StatusTooManyRequests, true, "slow down")
	c, _ := serve(t, mw)
	_, err := c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{"url": {"a.com"}, "scope": {"PAGE"}}})
	require.ErrorContains(t, err, "giving up after 3 attempts")
	require.ErrorContains(t, err, "HTTP 429")
	require.Equal(t, int32(3), seen.Load())
}

func TestUnitsExhaustedIs403(t *testing.T) {
	t.Parallel()
	mw, _ := fail(1, http.StatusForbidden, false, "not enough units")
	c, _ := serve(t, mw)
	_, err := c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{"url": {"a.com"}, "scope": {"PAGE"}}})
	require.ErrorIs(t, err, extract.ErrUnitsExhausted)
}

func TestErrorsEchoingTheKeyAreRedacted(t *testing.T) {
	t.Parallel()
	mw, _ := fail(1, http.StatusBadRequest, false, "bad key "+key)
	c, _ := serve(t, mw)
	_, err := c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{}})
	require.Error(t, err)
	require.NotContains(t, err.Error(), key)
}

func TestConnectionRefusedIsRetriedThenReported(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing listens there now
	c, err := extract.New(extract.Config{BaseURL: base + "/?key=" + key, APIKey: key, MaxAttempts: 2, Backoff: time.Millisecond})
	require.NoError(t, err)
	_, err = c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{}})
	require.ErrorContains(t, err, "giving up after 2 attempts")
	require.ErrorContains(t, err, "connection refused")
	require.NotContains(t, err.Error(), key)
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  extract.Config
		want string
	}{
		{"no url", extract.Config{APIKey: "k"}, "ETL_API_URL"},
		{"not http", extract.Config{BaseURL: "ftp://x", APIKey: "k"}, "not an http(s) URL"},
		{"no key", extract.Config{BaseURL: "http://x"}, "ETL_API_KEY"},
		{"attempts", extract.Config{BaseURL: "http://x", APIKey: "k", MaxAttempts: -1}, "MaxAttempts"},
		{"credentials in the url", extract.Config{BaseURL: "https://user:secret@api.example.com", APIKey: "k"}, "carries credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := extract.New(tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.False(t, errors.Is(errors.New("x"), extract.ErrUnitsExhausted))
}

// A body that stops sending fails after IdleTimeout instead of hanging.
func TestStalledBodyFailsAfterTheIdleTimeout(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "backlinks_count\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // stall until the client gives up
	}))
	defer srv.Close()
	c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, IdleTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	resp, err := c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{}})
	require.NoError(t, err)
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	require.ErrorIs(t, err, extract.ErrIdle)
}

// A consumer slower than the idle timeout is not the server's fault.
func TestSlowConsumerIsNotIdle(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 100))
	}))
	defer srv.Close()
	c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, IdleTimeout: 20 * time.Millisecond})
	require.NoError(t, err)
	resp, err := c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{}})
	require.NoError(t, err)
	defer resp.Body.Close()
	buf := make([]byte, 10)
	_, err = io.ReadFull(resp.Body, buf)
	require.NoError(t, err)
	<-time.After(60 * time.Millisecond) // the consumer dawdles longer than the idle timeout
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Len(t, rest, 90)
}

// The client never has more requests in flight than MaxConcurrent: a slot
// is held from sending until the body is closed.
func TestMaxConcurrentHoldsUntilTheBodyIsClosed(t *testing.T) {
	t.Parallel()
	sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return now }, APIKeys: []string{key}})
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, MaxConcurrent: 2, RatePerSecond: -1})
	require.NoError(t, err)
	req := extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{"url": {"a.com"}, "scope": {"PAGE"}, "format": {"csv"}}}

	r1, err := c.Do(t.Context(), req)
	require.NoError(t, err)
	r2, err := c.Do(t.Context(), req)
	require.NoError(t, err)
	// Both slots are held: a third request can only wait, so when its
	// context ends it fails while waiting, never having been sent.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.Do(ctx, req)
	require.ErrorContains(t, err, "waiting for the API's rate limit")
	require.ErrorIs(t, err, context.Canceled)

	// Closing a body frees its slot.
	require.NoError(t, r1.Body.Close())
	r3, err := c.Do(t.Context(), req)
	require.NoError(t, err)
	require.NoError(t, r3.Body.Close())
	require.NoError(t, r2.Body.Close())
}

// Requests are spaced by the rate: with one request per 1000 s, a second
// request within a minute's deadline is refused at once, unsent.
func TestRateLimitSpacesRequests(t *testing.T) {
	t.Parallel()
	var sent atomic.Int32
	c, _ := serve(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sent.Add(1)
			next.ServeHTTP(w, r)
		})
	})
	slow, err := extract.New(extract.Config{BaseURL: strings.TrimSuffix(c.URL(extract.Request{Endpoint: &catalog.Endpoint{}}), "?"),
		APIKey: key, RatePerSecond: 0.001})
	require.NoError(t, err)
	req := extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{"url": {"a.com"}, "scope": {"PAGE"}}}
	r1, err := slow.Do(t.Context(), req)
	require.NoError(t, err)
	require.NoError(t, r1.Body.Close())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err = slow.Do(ctx, req)
	require.ErrorContains(t, err, "waiting for the API's rate limit")
	require.Equal(t, int32(1), sent.Load())
}

// TestFailFastStopsOnlyBeforeAnyAnswer: a FailFast request the API has
// already answered (a 503 during a restart, then a refused connection
// while it comes back) reached the API, so the address is right: the
// refused connection is an outage and is tried again, not a mistake.
func TestFailFastStopsOnlyBeforeAnyAnswer(t *testing.T) {
	t.Parallel()
	mw, seen := fail(1, http.StatusServiceUnavailable, true, "restarting")
	sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return now }, APIKeys: []string{key}})
	require.NoError(t, err)
	srv := httptest.NewServer(mw(sb.Handler()))
	t.Cleanup(srv.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	dead := closed.Listener.Addr().String()
	closed.Close() // nothing listens there now
	// Dial 1 reaches the API (it answers 503 and closes), dial 2 is
	// refused, dial 3 reaches the API again.
	var dials atomic.Int32
	var d net.Dialer
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		if dials.Add(1) == 2 {
			return d.DialContext(ctx, network, dead)
		}
		return d.DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, MaxAttempts: 5, Backoff: time.Millisecond,
		HTTPClient: &http.Client{Transport: tr}})
	require.NoError(t, err)
	resp, err := c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"),
		Params: url.Values{"url": {"a.com"}, "scope": {"PAGE"}, "format": {"csv"}}, FailFast: true})
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, 3, resp.Attempts)
	require.Equal(t, int32(3), dials.Load())
	require.Equal(t, int32(2), seen.Load())
}

// TestLimitPastTheBound: the sandbox refuses a limit past its bound with
// a 400 that costs nothing, not retried, and LimitRefused reads the bound
// it names (or none, from a sandbox that does not name it).
func TestLimitPastTheBound(t *testing.T) {
	t.Parallel()
	for _, unnamed := range []bool{false, true} {
		t.Run(fmt.Sprint("unnamed=", unnamed), func(t *testing.T) {
			t.Parallel()
			sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return now }, APIKeys: []string{key},
				MaxLimit: 250, UnnamedLimit: unnamed, Units: 1_000_000})
			require.NoError(t, err)
			srv := httptest.NewServer(sb.Handler())
			t.Cleanup(srv.Close)
			c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: key, MaxAttempts: 3, Backoff: time.Millisecond})
			require.NoError(t, err)
			q := url.Values{"url": {"n1000.example"}, "scope": {"ROOT_DOMAIN"}, "limit": {"251"}, "format": {"csv"}}
			_, err = c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "links"), Params: q})
			var apiErr *extract.APIError
			require.ErrorAs(t, err, &apiErr)
			require.Equal(t, http.StatusBadRequest, apiErr.Status)
			require.False(t, apiErr.Retryable)
			bound, ok := extract.LimitRefused(err, 251)
			require.True(t, ok, err.Error())
			want := 250
			if unnamed {
				want = 0
			}
			require.Equal(t, want, bound, err.Error())
			u := sb.Usage(key)
			require.Zero(t, u.UnitsSpent, "a refused limit costs nothing")
			require.Equal(t, int64(1), u.FailedRequests, "not retried")
			left, _ := sb.UnitsRemaining(key)
			require.Equal(t, int64(1_000_000), left)

			q.Set("limit", "250")
			resp, err := c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "links"), Params: q})
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			// Summary's limit counts months, capped by the history: no bound.
			resp, err = c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "summary"),
				Params: url.Values{"url": {"n1000.example"}, "scope": {"ROOT_DOMAIN"}, "limit": {"100000"}}})
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
		})
	}
}
