package extract_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

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
