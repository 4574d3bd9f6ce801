package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/sandbox"
)

// pagesSpec: links without a limit on a target of 1,000,000 links, and
// on one of 30,000.
const pagesSpec = `jobs:
  - name: million
    max_age: 0
    targets: [{url: n1000000.example, scope: ROOT_DOMAIN}]
    endpoints: {links: {}}
  - name: again
    targets: [{url: n30000.example, scope: ROOT_DOMAIN}]
    endpoints: {links: {}}
`

// pagePlan is the part of `etl plan --json` about pages.
type pagePlan struct {
	Tasks []struct {
		Requests    *int64 `json:"requests"`
		Page        int    `json:"page_size"`
		PageUnknown bool   `json:"page_unknown"`
		PageBasis   string `json:"page_basis"`
	} `json:"tasks"`
	Total struct {
		Requests *int64   `json:"requests"`
		Seconds  *float64 `json:"seconds"`
	} `json:"total"`
}

// TestMillionLinksInPagesOfTheBound is issue 18's test of pages as large
// as the API allows: `etl run` of links: {} on a sandbox target of
// 1,000,000 links, at the API's default limits (10 requests a second, 10
// in flight) and the sandbox's default bound of 10,000 lines a page,
// sends at most 200 requests, counted at the sandbox: the run's first
// page of the default 100 lines (nothing has answered the run yet), one
// refused (the next asks for 100,000 lines; the refusal names the bound
// and costs nothing), then 100 pages at the bound, the last of 9,900
// lines. Every
// row loads, and the ledger books what the sandbox charged. `etl plan`
// then counts the requests at the remembered bound, and a second run asks
// at it without a refused request. The runs are of the etl binary, so the
// million rows load at its speed, not the race detector's.
func TestMillionLinksInPagesOfTheBound(t *testing.T) {
	t.Parallel()
	const key, now, rows = "sk-pages", "2026-11-21T03:00:00Z", 1_000_000
	bin := etlBinary(t)
	sb, env := runWorld(t, key)
	db := env["DATABASE_URL"]
	jobs := writeSpec(t, pagesSpec)
	plan := func(job string) pagePlan {
		t.Helper()
		r := etl(t, env, "plan", "--json", "--jobs", jobs, "--job", job, "--now", now)
		require.Equal(t, exitOK, r.code, r.stderr)
		var p pagePlan
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &p), r.stdout)
		return p
	}
	require.Equal(t, exitOK, etl(t, env, "migrate", "up").code)
	before := plan("million")
	require.True(t, before.Tasks[0].PageUnknown, "no bound learned yet")
	require.Equal(t, 100, before.Tasks[0].Page, "counted at the default page until then")

	began := time.Now()
	code, stderr := startETL(t, bin, env, "--log-format", "json", "run", "--jobs", jobs, "--job", "million", "--now", now).wait()
	took := time.Since(began)
	require.Equal(t, exitOK, code, stderr)
	u := sb.Usage(key)
	t.Logf("%d requests answered and %d refused in %s (the API's bound: %s)", u.Requests, u.FailedRequests, took.Round(time.Millisecond),
		(time.Duration(u.Requests+u.FailedRequests) * time.Second / 10))
	require.LessOrEqual(t, u.Requests+u.FailedRequests, int64(200))
	require.Equal(t, int64(1), u.FailedRequests)
	require.Equal(t, int64(1+rows/sandbox.DefaultMaxLimit), u.Requests, "the first page of 100, then 100 of the bound")
	require.Equal(t, int64(rows*45), u.UnitsSpent)
	require.Equal(t, u.UnitsSpent, ledgerUnits(t, db), "the ledger books what the sandbox charged")
	require.Contains(t, stderr, `"msg":"learned the largest value the API accepts","operation":"links","param":"limit","limit":10000,"refused":100000,"how":"named"`)

	conn, err := pgx.Connect(t.Context(), db)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	var loaded int64
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM backlinks`).Scan(&loaded))
	require.Equal(t, int64(rows), loaded)
	// Booked at 0: the refused probe (its reservation: 100,000 lines at
	// 45 units), after the first page of 100 lines.
	var zero []int64
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT array_agg(reserved ORDER BY ledger_id) FROM unit_ledger WHERE spent = 0`).Scan(&zero))
	require.Equal(t, []int64{100_000 * 45}, zero)
	var first int64
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT reserved FROM unit_ledger ORDER BY ledger_id LIMIT 1`).Scan(&first))
	require.Equal(t, int64(100*45), first, "the run's first request asks the default page")

	after := plan("million")
	require.False(t, after.Tasks[0].PageUnknown)
	require.Equal(t, sandbox.DefaultMaxLimit, after.Tasks[0].Page)
	require.Equal(t, "pages of 10000 (the API's bound of limit)", after.Tasks[0].PageBasis)
	require.Equal(t, u.Requests, *after.Total.Requests, "the last run's total, in pages of the bound")
	require.InDelta(t, float64(u.Requests)/10, *after.Total.Seconds, 1e-9)
	r := etl(t, env, "plan", "--jobs", jobs, "--job", "million", "--now", now)
	require.Contains(t, r.stdout, "the requests take at least 10.1s at the API's 10 a second\n")
	require.Contains(t, r.stdout, "\nlinks: pages of 10000 (the API's bound of limit)\n")

	code, stderr = startETL(t, bin, env, "run", "--jobs", jobs, "--job", "again", "--now", now).wait()
	require.Equal(t, exitOK, code, stderr)
	u2 := sb.Usage(key)
	require.Equal(t, u.FailedRequests, u2.FailedRequests, "the remembered bound is not refused")
	require.Equal(t, int64(4), u2.Requests-u.Requests, "30,000 links in pages of 10,000, and the empty page")
	require.False(t, strings.Contains(stderr, "learned the largest"), stderr)
}

// TestKilledRunResumesWithAnotherPageSize kills `etl run` (SIGKILL) of
// links: {} while it pages at the API's bound of 700 lines, then resumes
// it against an API that now serves at most 300 (the same data, at the
// same address): the remembered 700 is refused (free) and 300 learned,
// the task goes on from its checkpoint (an offset of whole pages of 700),
// and the table ends as a clean run's. Only what was in flight at the
// kill may have been bought twice; the ledger never counts less than the
// sandbox charged.
func TestKilledRunResumesWithAnotherPageSize(t *testing.T) {
	t.Parallel()
	const key, now, rows, before, after = "sk-resize", "2026-11-21T03:00:00Z", 6000, 700, 300
	bin := etlBinary(t)
	newSandbox := func(bound int) *sandbox.Server {
		sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return cliNow }, APIKeys: []string{key}, MaxLimit: bound})
		require.NoError(t, err)
		return sb
	}
	first, second := newSandbox(before), newSandbox(after)
	var resized atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if resized.Load() {
			second.Handler().ServeHTTP(w, r)
			return
		}
		first.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	jobs := writeSpec(t, fmt.Sprintf("jobs:\n  - name: resize\n    targets: [{url: n%d.example, scope: ROOT_DOMAIN}]\n    endpoints: {links: {}}\n", rows))
	args := []string{"--log-format", "json", "--log-level", "debug", "run", "--jobs", jobs, "--now", now}
	env := func(db string) map[string]string {
		return map[string]string{"DATABASE_URL": db, "ETL_API_URL": srv.URL, "ETL_API_KEY": key}
	}

	clean := pgtest.NewDB(t)
	code, stderr := startETL(t, bin, env(clean), args...).wait()
	require.Equal(t, exitOK, code, stderr)
	want := factHashes(t, clean)
	cleanUnits := first.Usage(key).UnitsSpent
	require.Equal(t, int64(rows*45), cleanUnits)

	db := pgtest.NewDB(t)
	p := startETL(t, bin, env(db), args...)
	p.killAfterPages(t, 3)
	code, _ = p.wait()
	require.Equal(t, -1, code, "killed")

	resized.Store(true)
	code, stderr = startETL(t, bin, env(db), args...).wait()
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, `"taken_up":"resumed"`)
	require.Equal(t, want, factHashes(t, db), "the tables differ from a clean run's")

	u := second.Usage(key)
	require.Equal(t, int64(1), u.FailedRequests, "the remembered 700 refused once")
	charged := first.Usage(key).UnitsSpent - cleanUnits + u.UnitsSpent
	require.GreaterOrEqual(t, charged, int64(rows*45))
	require.LessOrEqual(t, charged, int64((rows+before)*45), "more than the page in flight at the kill bought twice")
	require.GreaterOrEqual(t, ledgerUnits(t, db), charged, "the ledger counts less than the sandbox charged")

	conn, err := pgx.Connect(t.Context(), db)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	var bound string
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT accepted || ' ' || refused || ' ' || how FROM api_bounds WHERE param = 'limit'`).Scan(&bound))
	require.Equal(t, "300 700 named", bound)
}
