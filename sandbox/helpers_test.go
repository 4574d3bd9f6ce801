package sandbox_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
)

// testNow is the sandbox clock of the tests: the current month is 2025-06.
var testNow = time.Date(2025, 6, 15, 13, 4, 5, 0, time.UTC)

const testKey = sandbox.DefaultAPIKey

// newServer starts a sandbox over real HTTP; the clock defaults to testNow
// and logs go to the test's output. The per-key limits are off unless cfg
// sets them: tests send requests as fast as they can.
func newServer(t *testing.T, cfg sandbox.Config) (*sandbox.Server, *httptest.Server) {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testNow }
	}
	if cfg.RatePerSecond == 0 {
		cfg.RatePerSecond = -1
	}
	if cfg.MaxConcurrent == 0 {
		cfg.MaxConcurrent = -1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	s, err := sandbox.New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv
}

// reply is a response read whole (tests only ask for small bodies).
type reply struct {
	status int
	header http.Header
	body   []byte
}

// send sends a request and reads the reply.
func send(t *testing.T, srv *httptest.Server, method, pathAndQuery string, header http.Header) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+pathAndQuery, nil)
	require.NoError(t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: body}
}

// get calls endpoint (a catalog name) with params and the test key in the
// query.
func get(t *testing.T, srv *httptest.Server, endpoint string, params url.Values) reply {
	t.Helper()
	ep, ok := catalog.Lookup(endpoint)
	require.True(t, ok, endpoint)
	q := url.Values{}
	for k, v := range params {
		q[k] = v
	}
	q.Set("key", testKey)
	return send(t, srv, http.MethodGet, ep.Path+"?"+q.Encode(), nil)
}

// params builds url.Values from name, value pairs.
func params(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// envelope is a success body.
type envelope struct {
	Meta map[string]any  `json:"meta"`
	Data json.RawMessage `json:"data"`
}

// ok decodes a 200 JSON reply.
func ok(t *testing.T, r reply) envelope {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	var env envelope
	require.NoError(t, json.Unmarshal(r.body, &env), "%s", r.body)
	require.Equal(t, true, env.Meta["success"])
	require.EqualValues(t, 200, env.Meta["status_code"])
	require.NotEmpty(t, env.Meta["request_id"])
	require.Equal(t, r.header.Get("X-Request-Id"), env.Meta["request_id"])
	return env
}

// errorBody is the error envelope.
type errorBody struct {
	Meta struct {
		Success    *bool  `json:"success"`
		StatusCode int    `json:"status_code"`
		RequestID  string `json:"request_id"`
	} `json:"meta"`
	Error struct {
		Type      string `json:"type"`
		Code      int    `json:"code"`
		Message   string `json:"message"`
		Retryable *bool  `json:"retryable"`
		Details   []struct {
			Parameter string `json:"parameter"`
			Message   string `json:"message"`
		} `json:"details"`
	} `json:"error"`
}

// failed decodes an error reply and checks the envelope.
func failed(t *testing.T, r reply, status int) errorBody {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	var e errorBody
	require.NoError(t, json.Unmarshal(r.body, &e), "%s", r.body)
	require.NotNil(t, e.Meta.Success)
	require.False(t, *e.Meta.Success)
	require.Equal(t, status, e.Meta.StatusCode)
	require.Equal(t, status, e.Error.Code)
	require.NotEmpty(t, e.Meta.RequestID)
	require.NotEmpty(t, e.Error.Type)
	require.NotEmpty(t, e.Error.Message)
	require.NotNil(t, e.Error.Retryable)
	require.NotNil(t, e.Error.Details, "details is an array, never null")
	return e
}

// overviewOf returns the overview counts of url at scope.
func overviewOf(t *testing.T, srv *httptest.Server, target, scope string) map[string]int64 {
	t.Helper()
	env := ok(t, get(t, srv, "overview", params("url", target, "scope", scope)))
	var data map[string]int64
	require.NoError(t, json.Unmarshal(env.Data, &data))
	return data
}

// summaryRow is a row of summary.
type summaryRow struct {
	Score          int64  `json:"score"`
	BacklinksCount int64  `json:"backlinks_count"`
	DomainsCount   int64  `json:"domains_count"`
	FollowsCount   int64  `json:"follows_count"`
	MonthDate      string `json:"month_date"`
	URL            string `json:"url"`
}

// summaryOf returns the meta and rows of a summary request.
func summaryOf(t *testing.T, srv *httptest.Server, p url.Values) (map[string]any, []summaryRow) {
	t.Helper()
	env := ok(t, get(t, srv, "summary", p))
	var rows []summaryRow
	require.NoError(t, json.Unmarshal(env.Data, &rows))
	require.NotNil(t, rows, "data is an array, never null")
	return env.Meta, rows
}
