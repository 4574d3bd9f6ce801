package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
)

// hostileKey is an API key of 58 characters holding '"', '\', '/' and '+',
// which JSON, CSV and URLs each write differently, and '<' and '&', which
// encoding/json writes as \u escapes.
const hostileKey = `sk_Qz"7wV\kP/9mX+2rT<b4>Lq&8nYc3hG5jD0fW6sA1eK7uZ9oI2pB4xM`

// hostileKeyForms are the spellings of hostileKey a server may echo it in.
func hostileKeyForms() []string {
	j, _ := json.Marshal(hostileKey)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(hostileKey)
	plain := strings.TrimSpace(b.String())
	return []string{
		hostileKey,
		string(j[1 : len(j)-1]),
		plain[1 : len(plain)-1],
		url.QueryEscape(hostileKey),
		url.PathEscape(hostileKey),
		strings.ReplaceAll(hostileKey, `"`, `""`),
	}
}

// keyPiece returns the first 8 consecutive characters of a form of
// hostileKey that text holds, or "".
func keyPiece(text string) string {
	for _, f := range hostileKeyForms() {
		for i := 0; i+8 <= len(f); i++ {
			if strings.Contains(text, f[i:i+8]) {
				return f[i : i+8]
			}
		}
	}
	return ""
}

// hostileAPI answers every request with the key echoed back in every form:
// a 200 HTML page, a 200 JSON error envelope (to a CSV and to a JSON
// request), 4xx and 5xx error envelopes (message, type, request id and
// details), and CSV rows that are quarantined or loaded.
func hostileAPI(t *testing.T) string {
	t.Helper()
	forms := hostileKeyForms()
	raw, jsonForm, queryForm, pathForm, csvForm := forms[0], forms[1], forms[3], forms[4], forms[5]
	echo := "Invalid API key " + jsonForm + " (" + queryForm + ", " + pathForm + ")"
	envelope := func(status int) string {
		return fmt.Sprintf(`{"meta":{"success":false,"status_code":%d,"request_id":"req-%s"},`+
			`"error":{"type":"auth %s","code":%d,"message":%q,"retryable":false,`+
			`"details":[{"key":"%s"},"%s",{"url":"https://api.example/?next=%s"}]}}`,
			status, jsonForm, jsonForm, status, "Invalid API key "+hostileKey+" "+queryForm, jsonForm, jsonForm, queryForm)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimPrefix(r.URL.Path, "/apis/v4/backlinks/v1/") {
		case "overview": // an HTML error page with status 200, whose first line the CSV decoder quotes
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html><head><title>Invalid API key "+queryForm+" "+pathForm+"</title></head>\n"+
				"<body><h1>Invalid API key "+raw+"</h1><p>"+echo+"</p></body></html>\n")
		case "summary", "matrix": // the error envelope with status 200, to CSV and to JSON
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, envelope(401))
		case "ref-domains": // (a 401 would stop the whole run: a wrong key)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, envelope(400))
		case "score-profile":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, envelope(500))
		case "anchors":
			w.Header().Set("Content-Type", "text/csv")
			const seen = "2026-01-02T03:04:05;2026-11-01T00:00:00"
			_, _ = io.WriteString(w, strings.Join([]string{
				"anchor;backlinks_count;domains_count;first_seen_at;last_seen_at",
				`"see ` + csvForm + ` here";1;1;` + seen,                 // loaded, the key masked
				`bad-int;"` + csvForm + `";1;` + seen,                    // quarantined: not an integer
				`bad-quote;1;1;` + seen + `;` + raw,                      // quarantined: a bare '"'
				`bad-cells;` + jsonForm + `;` + queryForm + `;1;` + seen, // quarantined: too many cells
				`bad-url;` + queryForm + `;1;` + seen,                    // quarantined: not an integer
				"",
			}, "\n"))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, envelope(404))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestHostileAPINeverGetsTheKeyStored runs a job against an API that
// echoes the key in every form, in every kind of answer, and checks that
// no text the run wrote to any table of the warehouse, and nothing it
// printed, holds 8 consecutive characters of any form of the key.
//
// It needs the pipeline to hand the client's redactor to the decoders
// (transform.Options{Redactor: r.cfg.Client.Redactor()} in Runner.page).
func TestHostileAPINeverGetsTheKeyStored(t *testing.T) {
	t.Parallel()
	require.Len(t, hostileKey, 58)
	dbURL := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": dbURL, "ETL_API_URL": hostileAPI(t), "ETL_API_KEY": hostileKey}
	jobs := writeSpec(t, `jobs:
  - name: hostile
    targets: [{url: a.example, scope: ROOT_DOMAIN}]
    target_sets: [{name: rivals, scope: ROOT_DOMAIN, urls: [a.example, b.example]}]
    endpoints: {overview: {}, summary: {limit: 3}, anchors: {}, ref-domains: {}, score-profile: {}, matrix: {}}
`)
	r := etl(t, env, "--log-format", "json", "--log-level", "debug", "run", "--jobs", jobs, "--job", "hostile", "--now", cliNow.Format(time.RFC3339))
	require.Contains(t, []int{exitFailed, exitPartial}, r.code, r.stdout+r.stderr)
	require.Empty(t, keyPiece(r.stdout), "stdout:\n%s", r.stdout)
	require.Empty(t, keyPiece(r.stderr), "stderr:\n%s", r.stderr)

	conn, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer conn.Close(t.Context())

	// The run got as far as storing what it must not leak.
	var rejected, failed, masked int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM quarantine`).Scan(&rejected))
	require.Equal(t, 4, rejected)
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM task_checkpoints WHERE error <> ''`).Scan(&failed))
	require.Equal(t, 5, failed, "overview, summary, matrix, ref-domains and score-profile fail")
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM anchors WHERE anchor = 'see [REDACTED] here'`).Scan(&masked))
	require.Equal(t, 1, masked)

	// Every column of every table (and view) that can hold text.
	rows, err := conn.Query(t.Context(), `SELECT table_schema, table_name, column_name, data_type
		FROM information_schema.columns
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema')
		  AND (data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'bytea', 'USER-DEFINED')
		       OR (data_type = 'ARRAY' AND udt_name IN ('_text', '_varchar')))
		ORDER BY 1, 2, 3`)
	require.NoError(t, err)
	type column struct{ schema, table, name, kind string }
	cols, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (column, error) {
		var c column
		return c, row.Scan(&c.schema, &c.table, &c.name, &c.kind)
	})
	require.NoError(t, err)
	require.NotEmpty(t, cols)
	checked := 0
	for _, c := range cols {
		expr := pgx.Identifier{c.name}.Sanitize() + "::text"
		switch c.kind {
		case "bytea":
			expr = pgx.Identifier{c.name}.Sanitize()
		case "ARRAY":
			expr = "array_to_string(" + pgx.Identifier{c.name}.Sanitize() + ", E'\\n')"
		}
		rows, err := conn.Query(t.Context(), "SELECT "+expr+" FROM "+pgx.Identifier{c.schema, c.table}.Sanitize()+" WHERE "+pgx.Identifier{c.name}.Sanitize()+" IS NOT NULL")
		require.NoError(t, err)
		values, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		require.NoError(t, err, "%s.%s.%s", c.schema, c.table, c.name)
		for _, v := range values {
			require.Empty(t, keyPiece(string(v)), "%s.%s.%s holds part of the key: %q", c.schema, c.table, c.name, v)
			checked++
		}
	}
	require.Positive(t, checked)
}
