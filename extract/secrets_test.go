package extract_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/redact"
)

// hostileKey is an API key of 58 characters with the characters JSON and
// URLs escape: '"', '\', '/', '+', '<' and '&'.
const hostileKey = `sk_live_4f"9a\c0/d2+e7<b1>61a8&53c-0f9e7d6c5b4a39281706f5e`

// requireNoKey fails when text holds 8 or more consecutive characters of
// the key in any spelling a server may echo it in.
func requireNoKey(t *testing.T, text string) {
	t.Helper()
	j, _ := json.Marshal(hostileKey)
	for _, f := range []string{hostileKey, string(j[1 : len(j)-1]), url.QueryEscape(hostileKey), url.PathEscape(hostileKey)} {
		for i := 0; i+8 <= len(f); i++ {
			require.NotContains(t, text, f[i:i+8], "part of the key (form %q)", f)
		}
	}
}

// answering returns a client of a server that answers every request with
// status, content type and body.
func answering(t *testing.T, status int, contentType, body string) *extract.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: hostileKey, MaxAttempts: 1})
	require.NoError(t, err)
	return c
}

// TestErrorBodiesEchoingTheKey: whatever the shape of an error answer, its
// error holds no part of the key: masked before the excerpt is cut, in
// every spelling, details included.
func TestErrorBodiesEchoingTheKey(t *testing.T) {
	t.Parallel()
	j, _ := json.Marshal(hostileKey)
	escaped := string(j[1 : len(j)-1])
	for _, tc := range []struct {
		name, contentType, body string
	}{
		{"html cut inside the key", "text/html", "<html><body>" + strings.Repeat("x", 240) + " Invalid API key " + hostileKey + "</body></html>"},
		{"html, url-escaped key", "text/html", strings.Repeat("y", 20) + " next=" + url.QueryEscape(hostileKey)},
		{"body cut by the read limit inside the key", "text/plain", strings.Repeat(" ", 64<<10-20) + hostileKey},
		{"envelope message and details", "application/json",
			`{"meta":{"request_id":"r ` + escaped + `"},"error":{"type":"auth","code":401,"message":"invalid key ` + escaped +
				`","details":[{"key":"` + escaped + `"},"` + escaped + `",{"path":"/v1/` + url.PathEscape(hostileKey) + `"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := answering(t, http.StatusUnauthorized, tc.contentType, tc.body)
			_, err := c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{}})
			var apiErr *extract.APIError
			require.ErrorAs(t, err, &apiErr)
			requireNoKey(t, err.Error())
			require.Contains(t, err.Error(), redact.Mask)
			require.LessOrEqual(t, len(apiErr.Message), 300+len("..."))
		})
	}
}

func TestRedactorKnowsTheKey(t *testing.T) {
	t.Parallel()
	c, err := extract.New(extract.Config{BaseURL: "http://127.0.0.1:1", APIKey: hostileKey})
	require.NoError(t, err)
	require.Equal(t, "key "+redact.Mask, c.Redactor().String("key "+hostileKey))
}

// seen records what a server was sent.
type seen struct {
	mu       sync.Mutex
	requests []string // path?query and headers of every request
}

func (s *seen) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.URL.String()+" "+strings.Join(headerLines(r.Header), " "))
		s.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func headerLines(h http.Header) []string {
	var lines []string
	for k, vs := range h {
		for _, v := range vs {
			lines = append(lines, k+": "+v)
		}
	}
	return lines
}

func (s *seen) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// TestRedirectToAnotherOriginIsRefused: a redirect within the origin is
// followed with the key; one to the same host on another port (which
// net/http would follow with the Authorization header) is not, and the
// error names the new origin without its query and is not retried.
func TestRedirectToAnotherOriginIsRefused(t *testing.T) {
	t.Parallel()
	var other seen
	second := httptest.NewServer(other.handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "backlinks_count\n1\n")
	})))
	t.Cleanup(second.Close)
	var calls atomic.Int32
	var here seen
	first := httptest.NewServer(here.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/moved" {
			http.Redirect(w, r, "/moved", http.StatusFound) // same origin
			return
		}
		calls.Add(1)
		http.Redirect(w, r, second.URL+"/moved?token=abc&from="+url.QueryEscape(r.URL.RawQuery), http.StatusFound)
	})))
	t.Cleanup(first.Close)
	require.Equal(t, strings.Split(first.Listener.Addr().String(), ":")[0], strings.Split(second.Listener.Addr().String(), ":")[0], "same host")

	// A caller's client, whose policy would follow anything.
	own := &http.Client{Timeout: time.Minute}
	c, err := extract.New(extract.Config{BaseURL: first.URL, APIKey: hostileKey, HTTPClient: own, MaxAttempts: 3, Backoff: time.Millisecond})
	require.NoError(t, err)
	_, err = c.Do(t.Context(), extract.Request{Endpoint: endpoint(t, "overview"), Params: url.Values{"url": {"a.com"}}})
	var redirect *extract.RedirectError
	require.ErrorAs(t, err, &redirect)
	var apiErr *extract.APIError
	require.NotErrorAs(t, err, &apiErr)
	require.Equal(t, second.URL, redirect.To)
	require.Equal(t, first.URL, redirect.Origin)
	require.ErrorContains(t, err, "the API redirected to "+second.URL+", another origin than ETL_API_URL "+first.URL)
	require.NotContains(t, err.Error(), "token=abc")
	require.NotContains(t, err.Error(), "/moved")
	require.Equal(t, int32(1), calls.Load(), "not retried")
	followed := here.all()
	require.Len(t, followed, 2)
	require.Contains(t, followed[1], "/moved")
	require.Contains(t, followed[1], "Authorization: Apikey "+hostileKey, "followed within the origin with the key")
	for _, r := range other.all() {
		requireNoKey(t, r)
	}
	require.Empty(t, other.all(), "the other origin got no request")
	require.Nil(t, own.CheckRedirect, "the caller's client is not changed")
}
