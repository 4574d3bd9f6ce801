package apitest

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// reply is one HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// call sends GET path?query with the key in the Authorization header
// (when key is not empty).
func (s *suite) call(t *testing.T, path string, q url.Values, key string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.cfg.BaseURL+path+"?"+q.Encode(), nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Apikey "+key)
	}
	return send(t, s.http, req)
}

// send sends req with client and reads the whole answer: the one place
// every suite (backlinks, the token service, listings) gets a reply from.
func send(t *testing.T, client *http.Client, req *http.Request) reply {
	t.Helper()
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{resp.StatusCode, resp.Header, body}
}

func (s *suite) get(t *testing.T, ep *catalog.Endpoint, q url.Values) reply {
	t.Helper()
	return s.call(t, ep.Path, q, s.cfg.Key)
}

// envelope is a successful JSON answer, numbers kept as json.Number.
type envelope struct {
	Meta map[string]any  `json:"meta"`
	Data json.RawMessage `json:"data"`
}

// rows returns the data rows of a JSON answer (an object answer is one row).
func (e envelope) rows(t *testing.T, ep *catalog.Endpoint) []map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(e.Data))
	dec.UseNumber()
	if ep.Shape == catalog.Object {
		var row map[string]any
		require.NoError(t, dec.Decode(&row), "%s: data is not an object", ep.Name)
		return []map[string]any{row}
	}
	var rows []map[string]any
	require.NoError(t, dec.Decode(&rows), "%s: data is not an array of objects", ep.Name)
	return rows
}

// total is meta.total.
func (e envelope) total(t *testing.T) int {
	t.Helper()
	n, ok := e.Meta["total"].(json.Number)
	require.True(t, ok, "meta.total is missing or not a number: %v", e.Meta["total"])
	v, err := n.Int64()
	require.NoError(t, err)
	return int(v)
}

// json fetches q as JSON and requires success.
func (s *suite) json(t *testing.T, ep *catalog.Endpoint, q url.Values) envelope {
	t.Helper()
	q = clone(q)
	q.Del("format")
	r := s.get(t, ep, q)
	require.Equal(t, http.StatusOK, r.status, "%s?%s: %s", ep.Name, q.Encode(), r.body)
	require.Equal(t, "application/json", mediaType(r.header))
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.UseNumber()
	var env envelope
	require.NoError(t, dec.Decode(&env), "%s: %s", ep.Name, r.body)
	require.Equal(t, true, env.Meta["success"])
	require.Equal(t, json.Number("200"), env.Meta["status_code"])
	require.NotEmpty(t, env.Meta["request_id"])
	return env
}

// csv fetches q as CSV and returns the header and the rows.
func (s *suite) csv(t *testing.T, ep *catalog.Endpoint, q url.Values) ([]string, [][]string) {
	t.Helper()
	q = clone(q)
	q.Set("format", "csv")
	r := s.get(t, ep, q)
	require.Equal(t, http.StatusOK, r.status, "%s?%s: %s", ep.Name, q.Encode(), r.body)
	require.Equal(t, "text/csv", mediaType(r.header))
	cr := csv.NewReader(bytes.NewReader(r.body))
	cr.Comma = ';'
	recs, err := cr.ReadAll()
	require.NoError(t, err, "%s: the CSV body does not parse", ep.Name)
	require.NotEmpty(t, recs, "%s: no header row", ep.Name)
	return recs[0], recs[1:]
}

// apiError is an error answer.
type apiError struct {
	Meta struct {
		Success    *bool  `json:"success"`
		StatusCode int    `json:"status_code"`
		RequestID  string `json:"request_id"`
	} `json:"meta"`
	Error *struct {
		Type      string            `json:"type"`
		Code      int               `json:"code"`
		Message   string            `json:"message"`
		Retryable *bool             `json:"retryable"`
		Details   []json.RawMessage `json:"details"`
	} `json:"error"`
}

// fails requires r to be an error answer with status and returns it.
func fails(t *testing.T, r reply, status int) apiError {
	t.Helper()
	require.Equal(t, status, r.status, "%s", r.body)
	var e apiError
	require.NoError(t, json.Unmarshal(r.body, &e), "the error body is not the JSON envelope: %s", r.body)
	require.NotNil(t, e.Meta.Success, "meta.success is missing: %s", r.body)
	require.False(t, *e.Meta.Success)
	require.Equal(t, status, e.Meta.StatusCode)
	require.NotEmpty(t, e.Meta.RequestID)
	require.NotNil(t, e.Error, "no error object: %s", r.body)
	require.NotEmpty(t, e.Error.Type)
	require.NotEmpty(t, e.Error.Message)
	require.NotNil(t, e.Error.Retryable, "error.retryable is missing: %s", r.body)
	require.Equal(t, status == http.StatusTooManyRequests || status >= 500, *e.Error.Retryable, "retryable of a %d", status)
	require.NotNil(t, e.Error.Details, "error.details is missing: %s", r.body)
	return e
}

func mediaType(h http.Header) string {
	mt, _, _ := strings.Cut(h.Get("Content-Type"), ";")
	return strings.TrimSpace(mt)
}

func clone(q url.Values) url.Values {
	c := url.Values{}
	for k, v := range q {
		c[k] = append([]string(nil), v...)
	}
	return c
}

// with returns q with the given name, value pairs set.
func with(q url.Values, kv ...string) url.Values {
	c := clone(q)
	for i := 0; i+1 < len(kv); i += 2 {
		c.Set(kv[i], kv[i+1])
	}
	return c
}

// cell renders a JSON value the way the CSV format writes it.
func cell(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return fmt.Sprint(v)
	case []any:
		s := make([]string, len(v))
		for i, item := range v {
			s[i] = cell(item)
		}
		return strings.Join(s, ",")
	}
	return fmt.Sprint(v)
}
