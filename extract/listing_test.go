package extract_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/apitest"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/sandbox"
)

// listingEnv is a sandbox serving the listing endpoints on real HTTP, on
// a virtual wall clock, behind a middleware that counts what it answers.
type listingEnv struct {
	sb    *sandbox.Server
	srv   *httptest.Server
	clock *apitest.VirtualClock
	token string // a bearer token of the first account

	tooMany atomic.Int64 // the sandbox's 429 answers
	// bulkInFlight and bulkMost are the Update locations requests being
	// answered, and the most at once.
	bulkInFlight, bulkMost atomic.Int64
}

// newListingEnv starts a sandbox for accounts (the first one's token in
// env.token); mw, when set, stands in front of it (behind the counting).
func newListingEnv(t *testing.T, accounts []string, noLocalPro []string, mw func(http.Handler) http.Handler) *listingEnv {
	t.Helper()
	e := &listingEnv{clock: apitest.NewVirtualClock(now)}
	sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return now }, WallClock: e.clock.Now,
		APIKeys: accounts, NoLocalPro: noLocalPro})
	require.NoError(t, err)
	var h http.Handler = sb.Handler()
	if mw != nil {
		h = mw(h)
	}
	next := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bulk := r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/locations")
		if bulk {
			n := e.bulkInFlight.Add(1)
			for m := e.bulkMost.Load(); n > m && !e.bulkMost.CompareAndSwap(m, n); m = e.bulkMost.Load() {
			}
			defer e.bulkInFlight.Add(-1)
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status == http.StatusTooManyRequests {
			e.tooMany.Add(1)
		}
	})
	e.sb, e.srv = sb, httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
	tok, err := sb.IssueToken(accounts[0])
	require.NoError(t, err)
	e.token = tok.AccessToken
	return e
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// client is a client of the sandbox on the virtual clock, sending token;
// cfg's other fields are kept.
func (e *listingEnv) client(t *testing.T, token string, cfg extract.Config) *extract.Listings {
	t.Helper()
	cfg.BaseURL, cfg.Authorize, cfg.Clock = e.srv.URL, apitest.Bearer(token), e.clock
	if cfg.Backoff == 0 {
		cfg.Backoff = 100 * time.Millisecond // virtual
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	c, err := extract.New(cfg)
	require.NoError(t, err)
	return c.Listings()
}

// decode reads the JSON body of resp into v and closes it.
func decode(t *testing.T, resp *extract.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
}

func TestListingsAreOnePerClient(t *testing.T) {
	t.Parallel()
	c, err := extract.New(extract.Config{BaseURL: "http://127.0.0.1:1", APIKey: key})
	require.NoError(t, err)
	require.Same(t, c.Listings(), c.Listings())
}

// TestListingsPageAtTheLargestSize: a size past the API's bound is
// refused and SizeRefused reads the bound (the sandbox's 100) from the
// refusal; paging at it lists each of 1200 locations once.
func TestListingsPageAtTheLargestSize(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, []string{"agency-n1200"}, nil, nil)
	l := e.client(t, e.token, extract.Config{})

	_, err := l.Page(t.Context(), 1, 500)
	var le *extract.ListingError
	require.ErrorAs(t, err, &le)
	require.Equal(t, http.StatusBadRequest, le.Status)
	require.Equal(t, catalog.GetLocations.Name, le.Operation)
	require.Equal(t, catalog.CodeValidationError, le.Object.Code)
	require.NotEmpty(t, le.RequestID)
	size, ok := extract.SizeRefused(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, 100, size)

	seen := map[string]bool{}
	for page, pages := 1, 1; page <= pages; page++ {
		resp, err := l.Page(t.Context(), page, size)
		require.NoError(t, err)
		var b listing.PageBody
		decode(t, resp, &b)
		require.Equal(t, 1200, b.Data.TotalElements)
		pages = b.Data.TotalPages
		for _, loc := range b.Data.Content {
			require.False(t, seen[loc.ID], "location %s listed twice", loc.ID)
			seen[loc.ID] = true
		}
	}
	require.Len(t, seen, 1200)
	st := l.Stats()[catalog.GetLocations.Name]
	require.Equal(t, extract.OperationStats{Requests: 13}, st, "the refused size is not tried again")
	require.Zero(t, e.tooMany.Load())
}

func TestListingsGetOfAnUnknownID(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, []string{"agency-n5"}, nil, nil)
	l := e.client(t, e.token, extract.Config{})
	_, err := l.Get(t.Context(), "no-such/location")
	var le *extract.ListingError
	require.ErrorAs(t, err, &le)
	require.Equal(t, http.StatusNotFound, le.Status)
	require.Equal(t, catalog.CodeResourceNotFound, le.Object.Code)
	require.True(t, le.HasDetail(catalog.DetailLocationNotFound), "%v", err)
	require.NotEmpty(t, le.RequestID)
	require.Contains(t, err.Error(), catalog.GetLocation.Name)
	require.Contains(t, err.Error(), "no-such/location", "the id, escaped as a path segment, reached the API whole")
	_, refused := extract.SizeRefused(err)
	require.False(t, refused)
	require.Equal(t, extract.OperationStats{Requests: 1}, l.Stats()[catalog.GetLocation.Name])
}

// TestListingsPaceToTheLimits: 200 Gets and 30 Pages back to back meet no
// 429 at the sandbox, whose sliding windows run on the same virtual
// clock, and take at least the time their limits imply; the two
// operations pace independently, so the Pages add nothing to the Gets'
// time.
func TestListingsPaceToTheLimits(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, []string{"agency-n1200"}, nil, nil)
	l := e.client(t, e.token, extract.Config{Logger: slog.New(slog.DiscardHandler)})
	resp, err := l.Page(t.Context(), 1, 100)
	require.NoError(t, err)
	var first listing.PageBody
	decode(t, resp, &first)

	const gets, pages = 200, 30
	start := e.clock.Now()
	for i := range gets {
		resp, err := l.Get(t.Context(), first.Data.Content[i%len(first.Data.Content)].ID)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		if i%(gets/pages) == 0 && i/(gets/pages) < pages-1 {
			resp, err := l.Page(t.Context(), 1+i%12, 100)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
		}
	}
	resp, err = l.Page(t.Context(), 12, 100)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	took := e.clock.Now().Sub(start)

	require.Zero(t, e.tooMany.Load(), "the sandbox answered 429")
	st := l.Stats()
	require.Equal(t, extract.OperationStats{Requests: gets}, st[catalog.GetLocation.Name])
	require.Equal(t, extract.OperationStats{Requests: 1 + pages}, st[catalog.GetLocations.Name])
	// A strict window of N per Per lets k requests span no less than
	// (ceil(k/N)-1) Per.
	implied := func(op *catalog.ListingOperation, k int) time.Duration {
		return time.Duration((k+op.Rate.Requests-1)/op.Rate.Requests-1) * op.Rate.Per
	}
	require.GreaterOrEqual(t, took, implied(catalog.GetLocation, gets))
	require.GreaterOrEqual(t, took, implied(catalog.GetLocations, pages))
	// Paced together, the 230 requests would take 23 s and more.
	evenly := time.Duration(gets) * catalog.GetLocation.Rate.Per / time.Duration(catalog.GetLocation.Rate.Requests)
	require.Less(t, took, evenly*11/10, "Pages queued behind Gets")
}

// TestListingsBulkOneAtATime: six bulk updates started at once go one at a
// time, five a minute at most, on the virtual clock: no 429.
func TestListingsBulkOneAtATime(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, []string{"agency-n20"}, nil, nil)
	l := e.client(t, e.token, extract.Config{})
	var complete []listing.Location
	for i := 0; len(complete) < 2; i++ {
		resp, err := l.Page(t.Context(), 1+i, 1)
		require.NoError(t, err)
		var p listing.PageBody
		decode(t, resp, &p)
		require.NotEmpty(t, p.Data.Content, "fewer than two COMPLETE locations")
		resp, err = l.Get(t.Context(), p.Data.Content[0].ID)
		require.NoError(t, err)
		var b listing.LocationBody
		decode(t, resp, &b)
		if b.Data.Status == catalog.StatusComplete {
			complete = append(complete, b.Data)
		}
	}

	const n = 6
	start := e.clock.Now()
	var wg sync.WaitGroup
	errs := make([]error, n)
	results := make([][]listing.Result, n)
	for i := range n {
		wg.Go(func() {
			items := make([]listing.Location, len(complete))
			for j, loc := range complete {
				loc.LocationName = fmt.Sprintf("Bulk %d.%d", i, j)
				items[j] = loc
			}
			body, err := json.Marshal(listing.BulkRequest{Locations: items})
			if err != nil {
				errs[i] = err
				return
			}
			resp, err := l.UpdateMany(t.Context(), body)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			var b listing.BulkBody
			errs[i] = json.NewDecoder(resp.Body).Decode(&b)
			results[i] = b.Data
		})
	}
	wg.Wait()
	took := e.clock.Now().Sub(start)
	for i := range n {
		require.NoError(t, errs[i])
		require.Len(t, results[i], len(complete))
		for _, r := range results[i] {
			require.Equal(t, catalog.StateUpdated, r.State, "%+v", r)
		}
	}
	require.Zero(t, e.tooMany.Load(), "the sandbox answered 429")
	require.Equal(t, int64(1), e.bulkMost.Load(), "bulk updates overlapped at the sandbox")
	require.Equal(t, extract.OperationStats{Requests: n}, l.Stats()[catalog.UpdateLocations.Name])
	rl := catalog.UpdateLocations.Rate
	require.GreaterOrEqual(t, took, rl.Per, "%d bulk updates within %s", n, rl.Per)
	require.Equal(t, 1, rl.Concurrent)
}

// TestListingsRetryA429: a second client of the same account (its own
// pacers) uses up the window; the first one's Get meets a 429, backs off
// on the clock, is tried again and counted.
func TestListingsRetryA429(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, []string{"agency-n20"}, nil, nil)
	l := e.client(t, e.token, extract.Config{})
	other := e.client(t, e.token, extract.Config{})
	resp, err := l.Page(t.Context(), 1, 20)
	require.NoError(t, err)
	var p listing.PageBody
	decode(t, resp, &p)
	id := p.Data.Content[0].ID

	for range catalog.GetLocation.Rate.Requests {
		resp, err := other.Get(t.Context(), id)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
	}
	resp, err = l.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, 2, resp.Attempts)
	var b listing.LocationBody
	decode(t, resp, &b)
	require.Equal(t, id, b.Data.ID)
	require.Equal(t, int64(1), e.tooMany.Load())
	require.Equal(t, extract.OperationStats{Requests: 2, TooMany: 1, Retries: 1}, l.Stats()[catalog.GetLocation.Name])
	require.Equal(t, extract.OperationStats{Requests: int64(catalog.GetLocation.Rate.Requests)}, other.Stats()[catalog.GetLocation.Name])
}

func TestListingsUpdate(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, []string{"agency-n5"}, nil, nil)
	l := e.client(t, e.token, extract.Config{})
	resp, err := l.Page(t.Context(), 1, 5)
	require.NoError(t, err)
	var p listing.PageBody
	decode(t, resp, &p)
	loc := p.Data.Content[0] // location 0 is COMPLETE
	loc.LocationName, loc.ID = "Renamed by the client", ""
	body, err := json.Marshal(loc)
	require.NoError(t, err)
	resp, err = l.Update(t.Context(), p.Data.Content[0].ID, body)
	require.NoError(t, err)
	var b listing.LocationBody
	decode(t, resp, &b)
	require.Equal(t, "Renamed by the client", b.Data.LocationName)
	require.NotEmpty(t, b.Requested)
	require.Equal(t, extract.OperationStats{Requests: 1}, l.Stats()[catalog.UpdateLocation.Name])
}

// answerFirst answers the first n listing requests of method with status
// and body, then passes requests on; seen counts the requests of method.
func answerFirst(n int64, method string, status int, body string) (func(http.Handler) http.Handler, *atomic.Int64) {
	var seen atomic.Int64
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != method || seen.Add(1) > n {
				next.ServeHTTP(w, r)
				return
			}
			if body == "" { // hang up without an answer
				hangUp(false)(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		})
	}, &seen
}

// TestListingsRetries: what is tried again, per method. A 429 is refused
// and retried for both; a 5xx or an unanswered request is retried for a
// GET and returned as maybe applied for a PUT; other errors stop.
func TestListingsRetries(t *testing.T) {
	t.Parallel()
	const unavailable = `{"code":503,"message":"down for a moment"}`
	const tooMany = `{"code":429,"message":"slow down"}`
	const invalid = `{"error":{"code":"VALIDATION_ERROR","message":"Invalid data provided.","details":[]},"requestId":"r1"}`
	for _, tc := range []struct {
		name         string
		method       string
		status       int
		body         string // "": hang up
		wantErr      bool
		maybeApplied bool
		sent         int64 // requests of method seen by the server
		stats        extract.OperationStats
	}{
		{"GET 503 is retried", http.MethodGet, 503, unavailable, false, false, 2, extract.OperationStats{Requests: 2, Retries: 1}},
		{"GET hang-up is retried", http.MethodGet, 0, "", false, false, 2, extract.OperationStats{Requests: 2, Retries: 1}},
		{"GET 429 is retried", http.MethodGet, 429, tooMany, false, false, 2, extract.OperationStats{Requests: 2, TooMany: 1, Retries: 1}},
		{"GET 400 is not", http.MethodGet, 400, invalid, true, false, 1, extract.OperationStats{Requests: 1}},
		{"PUT 429 is retried", http.MethodPut, 429, tooMany, false, false, 2, extract.OperationStats{Requests: 2, TooMany: 1, Retries: 1}},
		{"PUT 503 may have been applied", http.MethodPut, 503, unavailable, true, true, 1, extract.OperationStats{Requests: 1}},
		{"PUT hang-up may have been applied", http.MethodPut, 0, "", true, true, 1, extract.OperationStats{Requests: 1}},
		{"PUT 400 is not retried", http.MethodPut, 400, invalid, true, false, 1, extract.OperationStats{Requests: 1}},
		// The status decides, as for the backlink endpoints: an envelope
		// that says retryable does not have a 401, 403 or 404 asked again.
		{"GET 401 saying retryable is not", http.MethodGet, 401, saysRetryable(401), true, false, 1, extract.OperationStats{Requests: 1}},
		{"GET 403 saying retryable is not", http.MethodGet, 403, saysRetryable(403), true, false, 1, extract.OperationStats{Requests: 1}},
		{"GET 404 saying retryable is not", http.MethodGet, 404, saysRetryable(404), true, false, 1, extract.OperationStats{Requests: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mw, seen := answerFirst(1, tc.method, tc.status, tc.body)
			e := newListingEnv(t, []string{"agency-n5"}, nil, mw)
			l := e.client(t, e.token, extract.Config{})
			op := catalog.GetLocation
			// The id of location 0, COMPLETE, from the sandbox itself.
			ids := newListingEnv(t, []string{"agency-n5"}, nil, nil)
			resp, err := ids.client(t, ids.token, extract.Config{}).Page(t.Context(), 1, 1)
			require.NoError(t, err)
			var p listing.PageBody
			decode(t, resp, &p)
			loc := p.Data.Content[0]
			if tc.method == http.MethodPut {
				op = catalog.UpdateLocation
				loc.LocationName = "Retried"
				body, jerr := json.Marshal(loc)
				require.NoError(t, jerr)
				resp, err = l.Update(t.Context(), loc.ID, body)
			} else {
				resp, err = l.Get(t.Context(), loc.ID)
			}
			if tc.wantErr {
				require.Error(t, err)
				require.Equal(t, tc.maybeApplied, errors.Is(err, extract.ErrMaybeApplied), "%v", err)
				require.NotErrorIs(t, err, extract.ErrNotSent)
				require.Contains(t, err.Error(), op.Name)
				if tc.status != 0 {
					var le *extract.ListingError
					require.ErrorAs(t, err, &le)
					require.Equal(t, tc.status, le.Status)
				}
			} else {
				require.NoError(t, err)
				require.Equal(t, 2, resp.Attempts)
				require.NoError(t, resp.Body.Close())
			}
			require.Equal(t, tc.sent, seen.Load())
			require.Equal(t, tc.stats, l.Stats()[op.Name])
		})
	}
}

// saysRetryable is an error body of status, in the backlink endpoints'
// envelope, that says "retryable": true.
func saysRetryable(status int) string {
	return fmt.Sprintf(`{"meta":{"success":false,"status_code":%d,"request_id":"r1"},"error":{"type":"test","code":%d,"message":"no","retryable":true,"details":[]}}`, status, status)
}

// TestListingsNotSent: while the API has answered no request of the
// client, an attempt that never reaches it (a closed port) is a mistake in
// the address: the call stops at once, as the data API's requests do
// (Request.FailFast), and Client.Unreachable says what to check; it was
// tried four times over 2.5 s, and a run ended partial. Once the API has
// answered, the address is right: the same failure is an outage, tried
// again (on the virtual clock) and reported as not sent.
func TestListingsNotSent(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing listens there now
	c, err := extract.New(extract.Config{BaseURL: base, Authorize: apitest.Bearer("tok-not-sent-0123456789"),
		Clock: apitest.NewVirtualClock(now), MaxAttempts: 10})
	require.NoError(t, err)
	_, err = c.Listings().Update(t.Context(), "x", []byte(`{}`))
	require.ErrorIs(t, err, extract.ErrNotSent)
	require.NotErrorIs(t, err, extract.ErrMaybeApplied)
	require.ErrorContains(t, err, "connection refused")
	require.Equal(t, extract.OperationStats{}, c.Listings().Stats()[catalog.UpdateLocation.Name], "one attempt, not tried again")
	require.Contains(t, c.Unreachable(err), "refused the connection")

	// Answered once (a 404 is an answer), then gone: an outage.
	up := httptest.NewUnstartedServer(http.NotFoundHandler())
	up.Config.SetKeepAlivesEnabled(false) // no connection outlives the answer
	up.Start()
	c, err = extract.New(extract.Config{BaseURL: up.URL, Authorize: apitest.Bearer("tok-not-sent-0123456789"),
		Clock: apitest.NewVirtualClock(now), MaxAttempts: 10})
	require.NoError(t, err)
	_, err = c.Listings().Get(t.Context(), "x")
	require.Error(t, err)
	require.NotErrorIs(t, err, extract.ErrNotSent)
	up.Close()
	_, err = c.Listings().Update(t.Context(), "x", []byte(`{}`))
	require.ErrorIs(t, err, extract.ErrNotSent)
	require.Equal(t, extract.OperationStats{Retries: 3}, c.Listings().Stats()[catalog.UpdateLocation.Name],
		"four attempts not sent, then it stops")
}

// TestListingsErrorsHoldNoToken: an answer echoing the bearer token (in
// its message, details and request id, with and without the Bearer word)
// gives an error and log lines without it; so does the sandbox's 401.
func TestListingsErrorsHoldNoToken(t *testing.T) {
	t.Parallel()
	var echo func(http.Handler) http.Handler = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("page") != "7" {
				next.ServeHTTP(w, r)
				return
			}
			auth := r.Header.Get("Authorization")
			token := strings.TrimPrefix(auth, "Bearer ")
			j, _ := json.Marshal(map[string]any{
				"error": map[string]any{"code": "BAD_REQUEST", "message": "not for " + token + " nor " + auth,
					"details": []map[string]string{{"code": "X", "message": token, "field": token}}},
				"requestId": token,
			})
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(j)
		})
	}
	e := newListingEnv(t, []string{"agency-n5"}, nil, echo)
	var logs bytes.Buffer
	var mu sync.Mutex
	l := e.client(t, e.token, extract.Config{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	_, err := l.Page(t.Context(), 7, 5)
	var le *extract.ListingError
	require.ErrorAs(t, err, &le)
	require.NotContains(t, err.Error(), e.token)
	require.Contains(t, err.Error(), "[REDACTED]")
	require.NotContains(t, le.RequestID, e.token)

	bad := "tok-wrong-" + strings.Repeat("9", 20)
	_, err = e.client(t, bad, extract.Config{}).Get(t.Context(), "x")
	require.ErrorAs(t, err, &le)
	require.Equal(t, http.StatusUnauthorized, le.Status)
	require.Equal(t, http.StatusUnauthorized, le.Code)
	require.NotEmpty(t, le.Message)
	require.NotContains(t, err.Error(), bad)
	mu.Lock()
	defer mu.Unlock()
	require.NotContains(t, logs.String(), e.token)
	require.Contains(t, logs.String(), "listing request failed")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// TestListingsWithoutTheLocalProPlan: the sandbox's 403 is a ListingError
// with its detail, not tried again.
func TestListingsWithoutTheLocalProPlan(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, []string{"basic-n5"}, []string{"basic-n5"}, nil)
	l := e.client(t, e.token, extract.Config{})
	_, err := l.Page(t.Context(), 1, 5)
	var le *extract.ListingError
	require.ErrorAs(t, err, &le)
	require.Equal(t, http.StatusForbidden, le.Status)
	require.True(t, le.HasDetail(sandbox.DetailLocalProRequired), "%v", err)
	require.Equal(t, extract.OperationStats{Requests: 1}, l.Stats()[catalog.GetLocations.Name])
}

func TestListingPrefixIsChecked(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"apis/v4", "/apis/v4/", "/apis?x=1"} {
		_, err := extract.New(extract.Config{BaseURL: "http://x", APIKey: key, ListingPrefix: p})
		require.ErrorContains(t, err, "ListingPrefix", p)
	}
}

// TestListingsGiveUpAfterMaxAttempts: 429s without end are tried
// MaxAttempts times, each counted, and the last answer is the error.
func TestListingsGiveUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	mw, seen := answerFirst(100, http.MethodGet, http.StatusTooManyRequests, `{"code":429,"message":"slow down"}`)
	e := newListingEnv(t, []string{"agency-n5"}, nil, mw)
	l := e.client(t, e.token, extract.Config{MaxAttempts: 3})
	_, err := l.Get(t.Context(), "x")
	var le *extract.ListingError
	require.ErrorAs(t, err, &le)
	require.Equal(t, http.StatusTooManyRequests, le.Code)
	require.Equal(t, "slow down", le.Message)
	require.ErrorContains(t, err, "giving up after 3 attempts")
	require.Equal(t, 1, strings.Count(err.Error(), catalog.GetLocation.Name), "%v", err)
	require.Equal(t, int64(3), seen.Load())
	require.Equal(t, extract.OperationStats{Requests: 3, TooMany: 3, Retries: 2}, l.Stats()[catalog.GetLocation.Name])
}

// TestListingsContextEndedBeforeSending: nothing is sent once ctx ended,
// nor while a bulk update waits for its turn.
func TestListingsContextEndedBeforeSending(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, []string{"agency-n5"}, nil, nil)
	l := e.client(t, e.token, extract.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := l.Get(ctx, "x")
	require.ErrorIs(t, err, extract.ErrNotSent)
	require.ErrorIs(t, err, context.Canceled)

	// A bulk update whose answer is open holds the one turn.
	resp, err := l.Page(t.Context(), 1, 1)
	require.NoError(t, err)
	var p listing.PageBody
	decode(t, resp, &p)
	body, err := json.Marshal(listing.BulkRequest{Locations: p.Data.Content}) // location 0, COMPLETE
	require.NoError(t, err)
	resp, err = l.UpdateMany(t.Context(), body)
	require.NoError(t, err)
	defer resp.Body.Close()
	ctx, cancel = context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err = l.UpdateMany(ctx, body)
	require.ErrorIs(t, err, extract.ErrNotSent)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "waiting for a turn")
	require.Equal(t, extract.OperationStats{Requests: 1}, l.Stats()[catalog.UpdateLocations.Name])
	require.Zero(t, l.Stats()[catalog.GetLocation.Name].Requests)
}

// TestListingsSeededWindow: a client seeded with the bulk updates another
// client of the account sent a few seconds ago (as a new process reads
// them from where the other recorded them) waits its turn for the ones
// left in the minute: WaitTurn says when without taking it, and its
// update then meets no 429. Seeding the times it holds does not count
// them twice.
func TestListingsSeededWindow(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, []string{"agency-n20"}, nil, nil)
	first := e.client(t, e.token, extract.Config{})
	resp, err := first.Page(t.Context(), 1, 20)
	require.NoError(t, err)
	var p listing.PageBody
	decode(t, resp, &p)
	var loc listing.Location
	for _, c := range p.Data.Content {
		resp, err := first.Get(t.Context(), c.ID)
		require.NoError(t, err)
		var b listing.LocationBody
		decode(t, resp, &b)
		if b.Data.Status == catalog.StatusComplete {
			loc = b.Data
			break
		}
	}
	require.NotEmpty(t, loc.ID, "no COMPLETE location")
	bulk := func(l *extract.Listings) {
		t.Helper()
		body, err := json.Marshal(listing.BulkRequest{Locations: []listing.Location{loc}})
		require.NoError(t, err)
		resp, err := l.UpdateMany(t.Context(), body)
		require.NoError(t, err)
		var b listing.BulkBody
		decode(t, resp, &b)
	}
	var sent []time.Time
	for range catalog.UpdateLocations.Rate.Requests {
		at, err := first.WaitTurn(t.Context(), catalog.UpdateLocations)
		require.NoError(t, err)
		sent = append(sent, at)
		bulk(first)
		require.NoError(t, e.clock.Sleep(t.Context(), time.Second))
	}
	require.Equal(t, sent, first.Window(catalog.UpdateLocations), "WaitTurn's times are the window's")
	first.Seed(catalog.UpdateLocations, sent)
	require.Equal(t, sent, first.Window(catalog.UpdateLocations), "the times it holds are not counted twice")

	second := e.client(t, e.token, extract.Config{})
	require.Empty(t, second.Window(catalog.UpdateLocations))
	second.Seed(catalog.UpdateLocations, sent)
	second.Seed(catalog.GetLocation, sent) // not paced by a window: nothing
	require.Nil(t, second.Window(catalog.GetLocation))
	now := e.clock.Now()
	at, err := second.WaitTurn(t.Context(), catalog.UpdateLocations)
	require.NoError(t, err)
	require.Equal(t, sent[0].Add(extract.UpdateWindowRate(catalog.UpdateLocations).Per), at, "the oldest must leave the window first")
	require.Equal(t, at, e.clock.Now())
	require.Greater(t, at, now)
	bulk(second)
	require.Zero(t, e.tooMany.Load(), "the sandbox answered 429")
	require.Len(t, second.Window(catalog.UpdateLocations), catalog.UpdateLocations.Rate.Requests)

	// A time in the future is taken as now.
	third := e.client(t, e.token, extract.Config{})
	third.Seed(catalog.UpdateLocation, []time.Time{e.clock.Now().Add(time.Hour)})
	require.Equal(t, []time.Time{e.clock.Now()}, third.Window(catalog.UpdateLocation))
}

// TestListingsPaceByDeparture: 1,000 Gets meet no 429 at the sandbox,
// whose window counts them as they arrive, though one in ten leaves 100
// to 300 ms after its turn (a busy machine, a new connection: the virtual
// clock moves before the transport writes it), the others within 5 ms,
// and each travels 0 to 49 ms and is answered up to 20 ms later. A pacer
// that spaces turns instead of departures sends the next read a few
// milliseconds after one that left late: 11 arrive within a second.
func TestListingsPaceByDeparture(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(28, 1))
	var mu sync.Mutex
	jitter := func(most time.Duration) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(rnd.Int64N(int64(most)))
	}
	var e *listingEnv
	e = newListingEnv(t, []string{"agency-n20"}, nil, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = e.clock.Sleep(r.Context(), jitter(50*time.Millisecond)) // on the way
			next.ServeHTTP(w, r)
			_ = e.clock.Sleep(r.Context(), jitter(20*time.Millisecond)) // the answer's way back
		})
	})
	late := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		d := jitter(5 * time.Millisecond)
		if jitter(10) == 0 { // one in ten
			d = 100*time.Millisecond + jitter(200*time.Millisecond)
		}
		_ = e.clock.Sleep(r.Context(), d) // before it leaves
		return http.DefaultTransport.RoundTrip(r)
	})
	l := e.client(t, e.token, extract.Config{HTTPClient: &http.Client{Transport: late}, Logger: slog.New(slog.DiscardHandler)})
	resp, err := l.Page(t.Context(), 1, 20)
	require.NoError(t, err)
	var first listing.PageBody
	decode(t, resp, &first)

	const reads = 1000
	for i := range reads {
		resp, err := l.Get(t.Context(), first.Data.Content[i%len(first.Data.Content)].ID)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
	}
	require.Zero(t, e.tooMany.Load(), "the sandbox answered 429")
	require.Equal(t, extract.OperationStats{Requests: reads}, l.Stats()[catalog.GetLocation.Name])
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestListingErrorIsTerminalSafe: the provider's words in a listing error
// (code, message, details, request id) and in a data endpoint's error are
// escaped, so that the error, printed as a command's last line or a run's
// FAILED line, neither clears the screen nor forges a line nor reverses
// the rest (they showed as they came).
func TestListingErrorIsTerminalSafe(t *testing.T) {
	t.Parallel()
	const evil = "Evil\x1b[2J\nFORGED \u202e x"
	for _, err := range []error{
		&extract.ListingError{Operation: "Get locations", Status: 400, Message: evil, RequestID: "r\x1b"},
		&extract.ListingError{Operation: "Get locations", Status: 400, RequestID: "r",
			Object: &listing.Error{Code: "BAD\x1b[2J", Message: evil, Details: []listing.Problem{{Code: "D\nX", Message: evil}}}},
		&extract.APIError{Endpoint: "overview", Status: 400, Type: "bad\x1b", Message: evil, RequestID: "r\u009b"},
	} {
		msg := err.Error()
		require.False(t, strings.ContainsFunc(msg, func(r rune) bool { return r != ' ' && !unicode.IsGraphic(r) }), "%q", msg)
		require.Contains(t, msg, `Evil\x1b[2J\nFORGED \u202e x`)
	}
}
