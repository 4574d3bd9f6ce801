package pipeline_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/testworld"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/transform"
)

// runNow is the pinned clock of the sandbox and of the runs.
var runNow = testworld.Now

const sliceSpec = `jobs:
  - name: slice
    targets:
      - {url: example.com, scope: ROOT_DOMAIN}
      - {url: n2500.example, scope: ROOT_DOMAIN}
      - {url: "https://example.org/a/page", scope: PAGE}
    endpoints:
      overview: {}
      summary: {limit: 12}
    keywords:
      keywords: [seo tools, "café près de moi"]
      countries: [US, FR]
      months: [2026-10, 2026-11]
`

// served fetches rows straight from the sandbox as CSV, for comparison.
func (f *fixture) served(t *testing.T, path string, q url.Values) []map[string]string {
	t.Helper()
	return f.servedAs(t, "csv", path, q)
}

// servedAs fetches rows straight from the sandbox in format (csv or json),
// each value rendered as the CSV would write it (lists joined with ',').
func (f *fixture) servedAs(t *testing.T, format, path string, q url.Values) []map[string]string {
	t.Helper()
	if format == "csv" {
		q.Set("format", "csv")
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.URL+path+"?"+q.Encode(), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Apikey test-key")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	if format == "json" {
		return jsonRows(t, resp.Body)
	}
	r := csv.NewReader(resp.Body)
	r.Comma = ';'
	recs, err := r.ReadAll()
	require.NoError(t, err)
	var rows []map[string]string
	for _, rec := range recs[1:] {
		row := map[string]string{}
		for i, h := range recs[0] {
			row[h] = rec[i]
		}
		rows = append(rows, row)
	}
	return rows
}

// jsonRows reads the data array of a JSON answer with encoding/json, not
// the decoder under test.
func jsonRows(t *testing.T, body io.Reader) []map[string]string {
	t.Helper()
	dec := json.NewDecoder(body)
	dec.UseNumber()
	var answer struct {
		Data []map[string]any `json:"data"`
	}
	require.NoError(t, dec.Decode(&answer))
	var text func(v any) string
	text = func(v any) string {
		switch v := v.(type) {
		case nil:
			return ""
		case string:
			return v
		case json.Number:
			return v.String()
		case bool:
			return strconv.FormatBool(v)
		case []any:
			items := make([]string, len(v))
			for i, it := range v {
				items[i] = text(it)
			}
			return strings.Join(items, ",")
		}
		t.Fatalf("unexpected JSON value %T", v)
		return ""
	}
	rows := make([]map[string]string, len(answer.Data))
	for i, obj := range answer.Data {
		rows[i] = map[string]string{}
		for k, v := range obj {
			rows[i][k] = text(v)
		}
	}
	return rows
}

// tableHash digests a whole table, every column of every row.
func (f *fixture) tableHash(t *testing.T, table string) string {
	t.Helper()
	var h string
	require.NoError(t, f.Pool.QueryRow(t.Context(), fmt.Sprintf(
		`SELECT md5(coalesce(string_agg(r::text, E'\n' ORDER BY r::text), '')) FROM %s r`, table)).Scan(&h))
	return h
}

func TestRunSliceEndToEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sum := f.Run(t, sliceSpec, runNow)
	require.Zero(t, sum.Failed())
	_, rejected, units := sum.Totals()
	require.Zero(t, rejected)

	// What the run says it spent is what the sandbox charged.
	require.Equal(t, f.Sandbox.Usage("test-key").UnitsSpent, units)

	// Row counts: one overview row per target, the summary months the
	// sandbox serves per target, one keyword row per keyword x country x month.
	require.Equal(t, int64(3), f.Count(t, `SELECT count(*) FROM backlink_overview`))
	var wantHistory int
	for _, target := range []struct{ url, scope string }{
		{"example.com", "ROOT_DOMAIN"}, {"n2500.example", "ROOT_DOMAIN"}, {"https://example.org/a/page", "PAGE"},
	} {
		rows := f.served(t, "/apis/v4/backlinks/v1/summary", url.Values{"url": {target.url}, "scope": {target.scope}, "limit": {"12"}})
		wantHistory += len(rows)
		// Round trip: every served column of every row landed as served.
		for _, row := range rows {
			var score, backlinks, domains, follows int64
			var gotURL string
			require.NoError(t, f.Pool.QueryRow(t.Context(), `
				SELECT h.score, h.backlinks_count, h.domains_count, h.follows_count, h.url
				FROM backlink_history h JOIN targets t USING (target_id)
				WHERE t.url = $1 AND t.scope = $2 AND h.month = $3::date AND h.month_date = $3::date`,
				target.url, target.scope, row["month_date"]).Scan(&score, &backlinks, &domains, &follows, &gotURL))
			require.Equal(t, row["score"], strconv.FormatInt(score, 10))
			require.Equal(t, row["backlinks_count"], strconv.FormatInt(backlinks, 10))
			require.Equal(t, row["domains_count"], strconv.FormatInt(domains, 10))
			require.Equal(t, row["follows_count"], strconv.FormatInt(follows, 10))
			require.Equal(t, target.url, gotURL)
		}
	}
	require.Greater(t, wantHistory, 3)
	require.Equal(t, int64(wantHistory), f.Count(t, `SELECT count(*) FROM backlink_history`))
	require.Equal(t, int64(2*2*2), f.Count(t, `SELECT count(*) FROM keyword_metrics`))

	// Values and types: n2500.example has exactly 2500 backlinks.
	require.Equal(t, int64(2500), f.Count(t,
		`SELECT o.backlinks_count FROM backlink_overview o JOIN targets t USING (target_id) WHERE t.url = 'n2500.example'`))
	kw := f.served(t, "/apis/v4/keywords/v1/metrics", url.Values{"keyword": {"café près de moi"}, "country": {"FR"}, "month": {"2026-10"}})
	require.Len(t, kw, 1)
	var cpc, volume, results string
	require.NoError(t, f.Pool.QueryRow(t.Context(), `
		SELECT cpc::text, search_volume::text, number_of_results::text FROM keyword_metrics
		WHERE keyword = 'café près de moi' AND country = 'FR' AND month = '2026-10-01'`).Scan(&cpc, &volume, &results))
	require.Equal(t, kw[0]["search_volume"], volume)
	require.Equal(t, kw[0]["number_of_results"], results)
	requireSameNumber(t, kw[0]["cpc"], cpc)

	// Column types: every column of every loaded table holds the type the
	// catalog gives its field.
	for _, name := range []string{"overview", "summary", "keyword-metrics"} {
		ep, _ := catalog.Lookup(name)
		for _, c := range load.Columns(ep) {
			var typ string
			require.NoError(t, f.Pool.QueryRow(t.Context(), fmt.Sprintf(`SELECT pg_typeof(%s)::text FROM %s LIMIT 1`,
				pgx.Identifier{c.Name}.Sanitize(), ep.Table)).Scan(&typ))
			require.Equal(t, c.PGType, typ, "%s.%s", ep.Table, c.Name)
		}
	}

	// Partitions: every row is in the year partition of its own month.
	for _, table := range []string{"backlink_overview", "backlink_history", "keyword_metrics"} {
		require.Zero(t, f.Count(t, fmt.Sprintf(`
			SELECT count(*) FROM %[1]s
			WHERE tableoid::regclass::text <> ('%[1]s_y' || to_char(month, 'YYYY'))`, table)), table)
	}
	require.Greater(t, f.Count(t, `SELECT count(DISTINCT month) FROM backlink_history`), int64(1), "history spans months")
	require.Equal(t, runNow.Format("2006-01-02")[:7]+"-01", func() string {
		var m time.Time
		require.NoError(t, f.Pool.QueryRow(t.Context(), `SELECT max(month) FROM backlink_overview`).Scan(&m))
		return m.Format(time.DateOnly)
	}())

	// A second run in the same month changes no row.
	tables := []string{"targets", "backlink_overview", "backlink_history", "keyword_metrics"}
	before := map[string]string{}
	for _, table := range tables {
		before[table] = f.tableHash(t, table)
	}
	again := f.Run(t, sliceSpec, runNow.Add(time.Hour))
	require.Zero(t, again.Failed())
	_, sums := again.Tables()
	for table, r := range sums {
		require.Zero(t, r.Inserted, table)
		require.Zero(t, r.Updated, table)
		require.Equal(t, r.Rows, r.Unchanged, table)
	}
	for _, table := range tables {
		require.Equal(t, before[table], f.tableHash(t, table), "%s changed on rerun", table)
	}
}

// requireSameNumber compares two decimal strings by value.
func requireSameNumber(t *testing.T, want, got string) {
	t.Helper()
	w, err := strconv.ParseFloat(want, 64)
	require.NoError(t, err)
	g, err := strconv.ParseFloat(got, 64)
	require.NoError(t, err)
	require.InDelta(t, w, g, 1e-9, "want %s, got %s", want, got)
}

// corrupt rewrites CSV bodies of the sandbox: the cell at column col of data
// line n (1-based, after the header) of every response to path becomes bad.
func corrupt(path, col string, n int, bad string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			lines := strings.Split(rec.Body.String(), "\n")
			header := strings.Split(lines[0], ";")
			if rec.Code == http.StatusOK && n < len(lines)-1 {
				cells := strings.Split(lines[n], ";")
				cells[slices.Index(header, col)] = bad
				lines[n] = strings.Join(cells, ";")
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = io.WriteString(w, strings.Join(lines, "\n"))
		})
	}
}

func TestBadRowsGoToQuarantineAndTheRunGoesOn(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, corrupt("/apis/v4/backlinks/v1/summary", "backlinks_count", 2, "12x"))
	const spec = `jobs:
  - name: q
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {summary: {limit: 6}}
`
	sum, err := f.TryRun(t, spec, runNow)
	require.NoError(t, err)
	rows, rejected, units := sum.Totals()
	require.Equal(t, int64(6), rows)
	require.Equal(t, int64(1), rejected)
	require.Equal(t, int64(6*40), units, "the API charged for the bad line too")
	require.Equal(t, f.Sandbox.Usage("test-key").UnitsSpent, units)
	require.Equal(t, int64(5), f.Count(t, `SELECT count(*) FROM backlink_history`))

	var endpoint, request, raw, reason string
	var line int
	var target int64
	require.NoError(t, f.Pool.QueryRow(t.Context(),
		`SELECT endpoint, target_id, request, line, raw, reason FROM quarantine`).Scan(&endpoint, &target, &request, &line, &raw, &reason))
	require.Equal(t, "summary", endpoint)
	require.Equal(t, f.Count(t, `SELECT target_id FROM targets WHERE url = 'example.com'`), target)
	require.Equal(t, "url=example.com scope=ROOT_DOMAIN", request)
	require.Equal(t, 3, line, "header is line 1, the second data row line 3")
	require.Contains(t, raw, ";12x;")
	require.Contains(t, reason, "backlinks_count")
	require.Contains(t, reason, "12x")
}

func TestMaxRowsCapsWhatIsRequestedAndPaid(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sum := f.Run(t, `jobs:
  - name: m
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {summary: {max_rows: 2}}
`, runNow)
	rows, _, units := sum.Totals()
	require.Equal(t, int64(2), rows)
	require.Equal(t, int64(2*40), units)
	require.Equal(t, f.Sandbox.Usage("test-key").UnitsSpent, units)
}

func TestRowWithoutItsMonthGoesToQuarantine(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, corrupt("/apis/v4/backlinks/v1/summary", "month_date", 1, ""))
	sum, err := f.TryRun(t, `jobs:
  - name: q
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {summary: {limit: 4}}
`, runNow)
	require.NoError(t, err)
	_, rejected, _ := sum.Totals()
	require.Equal(t, int64(1), rejected)
	require.Equal(t, int64(3), f.Count(t, `SELECT count(*) FROM backlink_history`))
	var reason string
	require.NoError(t, f.Pool.QueryRow(t.Context(), `SELECT reason FROM quarantine`).Scan(&reason))
	require.Contains(t, reason, `"month_date" is empty`)
}

// cut sends the first half of the body of the first n answers to path and
// then breaks the connection, as a network failure mid-body would.
func cut(path string, n int32) func(http.Handler) http.Handler {
	var seen atomic.Int32
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path || seen.Add(1) > n {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush() // headers and half the body reach the client
			panic(http.ErrAbortHandler)
		})
	}
}

// TestACutBodyKeepsItsRowsAndAsksForTheRest: an answer cut off mid-body
// loads the complete rows before the cut, is booked at its whole price
// (the API charged it whole), and the task asks only for the rest: from
// the next offset where it pages, for the months before those it got on
// summary, which has no offset. The tables equal a clean run's, and the
// cut cost only the lines it lost. Before, the task failed and its rows
// were thrown away, to be bought again whole.
func TestACutBodyKeepsItsRowsAndAsksForTheRest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path, spec, table string
		price                   int64
	}{
		{"summary", "/apis/v4/backlinks/v1/summary", "summary: {limit: 10}", "backlink_history", 40},
		{"links", "/apis/v4/backlinks/v1/links", "links: {limit: 60}", "backlinks", 45},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := "jobs:\n  - name: c\n    targets: [{url: n300.example, scope: ROOT_DOMAIN}]\n    endpoints: {" + tc.spec + "}\n"
			clean := newFixture(t)
			clean.Run(t, spec, runNow)
			cleanUnits := clean.Sandbox.Usage("test-key").UnitsSpent

			f := newFixtureWith(t, cut(tc.path, 1))
			sum, err := f.TryRun(t, spec, runNow)
			require.NoError(t, err)
			require.Equal(t, "succeeded", sum.Status())
			require.Equal(t, clean.tableHash(t, tc.table), f.tableHash(t, tc.table))
			spent := f.Sandbox.Usage("test-key").UnitsSpent
			// The cut answer was charged whole; only its lost lines were
			// bought again.
			lost := spent - cleanUnits
			require.Positive(t, lost)
			// The cut page is booked whole; what was bought again is what
			// the request after it asked for: the cut's lost lines.
			if tc.name == "summary" {
				// The rest of a summary is the months before those it got.
				again := f.Count(t, `SELECT spent FROM unit_ledger ORDER BY ledger_id OFFSET 1 LIMIT 1`)
				require.Equal(t, lost, again)
			}
			whole := f.Count(t, `SELECT spent FROM unit_ledger ORDER BY ledger_id LIMIT 1`)
			require.Less(t, lost, whole, "less than buying the cut page again")
			require.Zero(t, lost%tc.price)
			_, _, units := sum.Totals()
			require.GreaterOrEqual(t, units, spent, "never below what the API charged")
			require.Equal(t, units, f.Count(t, `SELECT sum(spent) FROM unit_ledger`))
		})
	}
}

// TestEveryAnswerCutFailsTheTask: answers cut before their first complete
// row, again and again, fail the task after a bounded number of tries.
func TestEveryAnswerCutFailsTheTask(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, cut("/apis/v4/backlinks/v1/overview", 1000))
	sum, err := f.TryRun(t, `jobs:
  - name: c
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}}
`, runNow)
	require.ErrorContains(t, err, "answers in a row were cut before their first complete row")
	require.Equal(t, 1, sum.Failed())
	_, _, units := sum.Totals()
	require.Equal(t, int64(4*45), units, "each cut answer counts its whole price")
	require.GreaterOrEqual(t, units, f.Sandbox.Usage("test-key").UnitsSpent, "never below what the API charged")
	require.Zero(t, f.Count(t, `SELECT count(*) FROM backlink_overview`))
}

// counting counts the requests to path that reach next.
func counting(path string, n *atomic.Int32, next func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		inner := next(h)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == path {
				n.Add(1)
			}
			inner.ServeHTTP(w, r)
		})
	}
}

// TestAnUnpagedAnswerCutAgainAndAgainIsNotBoughtForEver: a request that
// is neither paged nor narrowed (score profile) is asked again whole after
// a cut, and the API charges each whole answer. An answer cut after some
// complete rows made no progress the task can keep (the next request asks
// for the same rows again), so it counts as a failed try like a cut before
// the first row: the task fails after a bounded number of tries. Before,
// every cut with a complete row reset the count, and a job without a cap
// bought the score profile again for as long as the answers were cut (here
// 30 times, 101 units each, until the server stopped cutting).
func TestAnUnpagedAnswerCutAgainAndAgainIsNotBoughtForEver(t *testing.T) {
	t.Parallel()
	const path = "/apis/v4/backlinks/v1/score-profile"
	var requests atomic.Int32
	f := newFixtureWith(t, counting(path, &requests, cut(path, 30)))
	sum, err := f.TryRun(t, `jobs:
  - name: c
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {score-profile: {}}
`, runNow)
	require.ErrorContains(t, err, "cut")
	require.Equal(t, 1, sum.Failed())
	require.LessOrEqual(t, requests.Load(), int32(4), "asked again whole at most 3 times")
	_, _, units := sum.Totals()
	require.GreaterOrEqual(t, units, f.Sandbox.Usage("test-key").UnitsSpent, "never below what the API charged")
}

// TestACutSummaryGoesOnBelowTheMonthsItGot: the rest of a cut summary is
// asked for from the month before the oldest it loaded. Here the run's
// clock is in December while the API's newest month is still November
// (its data lags at the turn of a month, or it keeps another zone's
// time), so the answer's first row is not the run's month. Before, the
// rest was counted from the run's month (date_to = December less the rows
// got), so the month at the cut was bought twice and the oldest month of
// the limit was never asked for: the run succeeded with 9 months of 10.
func TestACutSummaryGoesOnBelowTheMonthsItGot(t *testing.T) {
	t.Parallel()
	later := time.Date(2026, 12, 1, 0, 30, 0, 0, time.UTC) // the sandbox is at runNow, in November
	const spec = "jobs:\n  - name: c\n    targets: [{url: n300.example, scope: ROOT_DOMAIN}]\n    endpoints: {summary: {limit: 10}}\n"
	months := func(f *fixture) []string {
		rows, err := f.Pool.Query(t.Context(), `SELECT to_char(month, 'YYYY-MM') FROM backlink_history ORDER BY 1`)
		require.NoError(t, err)
		ms, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return ms
	}
	clean := newFixture(t)
	clean.Run(t, spec, later)
	require.Len(t, months(clean), 10)
	require.Equal(t, "2026-11", months(clean)[9], "the API's newest month")

	f := newFixtureWith(t, cut("/apis/v4/backlinks/v1/summary", 1))
	sum, err := f.TryRun(t, spec, later)
	require.NoError(t, err)
	require.Equal(t, "succeeded", sum.Status())
	require.Equal(t, months(clean), months(f))
	require.Equal(t, clean.tableHash(t, "backlink_history"), f.tableHash(t, "backlink_history"))
	// The cut answer was charged whole; the rest asked for no month twice:
	// the two answers held 10 rows in all, and the second cost only its own.
	var got, again int64
	require.NoError(t, f.Pool.QueryRow(t.Context(), `SELECT (SELECT rows FROM task_checkpoints), (SELECT spent FROM unit_ledger ORDER BY ledger_id OFFSET 1 LIMIT 1)`).Scan(&got, &again))
	require.Equal(t, int64(10), got, "rows received")
	require.Equal(t, 10*40+again, f.Sandbox.Usage("test-key").UnitsSpent)
}

// exhaust answers 403 (units exhausted) to every request after the first n.
func exhaust(n int32) func(http.Handler) http.Handler {
	var seen atomic.Int32
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if seen.Add(1) <= n {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"meta":{"success":false,"status_code":403,"request_id":"x"},"error":{"type":"units_exhausted","code":403,"message":"not enough API units","retryable":false,"details":[]}}`)
		})
	}
}

func TestA403StopsTheRunAndSkipsTheRest(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, exhaust(1))
	sum, err := f.TryRunWith(t, `jobs:
  - name: k
    keywords: {keywords: [a, b, c, d], countries: [US]}
`, runNow, 1)
	require.NoError(t, err, "a 403 ends the run cleanly")
	require.Equal(t, "API units exhausted upstream (HTTP 403)", sum.Stopped)
	require.Zero(t, sum.Failed())
	require.Equal(t, 3, sum.Skipped(), "the task that met the 403 and the two after it")
	require.Equal(t, int64(1), f.Count(t, `SELECT count(*) FROM keyword_metrics`))
	for _, tr := range sum.Tasks[1:] {
		require.Equal(t, sum.Stopped, tr.Skipped)
	}
	// The 403 cost nothing: the ledger holds the one request that loaded.
	require.Equal(t, int64(20), f.Count(t, `SELECT sum(coalesce(spent, reserved)) FROM unit_ledger`))
	require.Equal(t, int64(20), f.Count(t, `SELECT units FROM runs WHERE run_id = $1 AND status = 'partial'`, sum.RunID))
}

// With the sandbox's malformed-row fault on, every good row loads, every bad
// one is in quarantine with its reason, and the counts add up to the rows
// the sandbox served and charged.
func TestMalformedRowsFaultQuarantinesExactlyTheBadRows(t *testing.T) {
	t.Parallel()
	f := newWorld(t, testworld.Options{Sandbox: sandbox.Config{Faults: sandbox.Faults{Malformed: 0.05}}})
	sum, err := f.TryRun(t, `jobs:
  - name: m
    targets: [{url: n240.example, scope: ROOT_DOMAIN}]
    endpoints: {links: {limit: 50}}
`, runNow)
	require.NoError(t, err)
	rows, rejected, units := sum.Totals()
	require.Equal(t, int64(240), rows, "every line served is accounted for")
	require.Greater(t, rejected, int64(0), "at 5%% some of 240 rows are malformed")
	require.Equal(t, f.Sandbox.Usage("test-key").UnitsSpent, units)
	require.Equal(t, 240-rejected, f.Count(t, `SELECT count(*) FROM backlinks`))
	require.Equal(t, rejected, f.Count(t, `SELECT count(*) FROM quarantine WHERE endpoint = 'links' AND reason <> '' AND raw <> ''`))
	// The good rows are exactly the served rows that were not malformed:
	// none is missing, none invented.
	// The served rows without faults: the same seed serves the same data.
	srv := httptest.NewServer(testworld.NewSandbox(t, nil, sandbox.Config{}).Handler())
	t.Cleanup(srv.Close)
	clean := (&fixture{&testworld.World{URL: srv.URL}}).served(t, "/apis/v4/backlinks/v1/links", url.Values{"url": {"n240.example"}, "scope": {"ROOT_DOMAIN"}, "limit": {"1000"}})
	require.Len(t, clean, 240)
	var missing int64
	for _, row := range clean {
		var n int64
		require.NoError(t, f.Pool.QueryRow(t.Context(),
			`SELECT count(*) FROM backlinks WHERE source_url = $1 AND target_url = $2 AND anchor = $3 AND image_url = $4`,
			row["source_url"], row["target_url"], row["anchor"], row["image_url"]).Scan(&n))
		missing += 1 - n
	}
	require.Equal(t, rejected, missing, "the rows not loaded are the quarantined ones")
}

// renameColumn renames a CSV header column of every answer to path: the
// catalog's column goes missing and an unknown one appears.
func renameColumn(path, from, to string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			header, rest, _ := strings.Cut(rec.Body.String(), "\n")
			cells := strings.Split(header, ";")
			cells[slices.Index(cells, from)] = to
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = io.WriteString(w, strings.Join(cells, ";")+"\n"+rest)
		})
	}
}

func TestSchemaDriftIsReportedOncePerRun(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, renameColumn("/apis/v4/backlinks/v1/ref-domains", "domain_score", "domain_rank"))
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(`jobs:
  - name: drift
    targets: [{url: n240.example, scope: ROOT_DOMAIN}, {url: n90.example, scope: ROOT_DOMAIN}]
    endpoints: {ref-domains: {limit: 7}, overview: {}}
`), runNow)
	require.NoError(t, err)
	client, err := extract.New(extract.Config{BaseURL: f.URL, APIKey: "test-key"})
	require.NoError(t, err)
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.Pool, Allocator: f.Mem, Logger: logger,
		Now: func() time.Time { return runNow }, BatchRows: 5})
	require.NoError(t, err)
	sum, err := r.Run(t.Context(), s.Jobs[0])
	require.NoError(t, err)

	// Many pages over two targets drifted; the run reports it once.
	pages := 0
	for _, task := range sum.Tasks {
		if task.Task.Endpoint.Name == "ref-domains" {
			pages += task.Pages
		}
	}
	require.Greater(t, pages, 4)
	require.Equal(t, []pipeline.EndpointDrift{{Endpoint: "ref-domains",
		Drift: transform.Drift{Unknown: []string{"domain_rank"}, Missing: []string{"domain_score"}}}}, sum.Drift())
	require.Equal(t, 1, strings.Count(logs.String(), "schema drift"), logs.String())
	require.Contains(t, logs.String(), `"unknown_left_out":["domain_rank"],"missing_loaded_as_null":["domain_score"]`)

	// Every row loaded, the missing column as NULL.
	n := f.Count(t, `SELECT count(*) FROM ref_domains`)
	require.Positive(t, n)
	require.Equal(t, n, f.Count(t, `SELECT count(*) FROM ref_domains WHERE domain_score IS NULL AND domain <> ''`))
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
