package main

import (
	"encoding/json"
	"strings"
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
// sends at most 200 requests, counted at the sandbox: one refused (the
// first asks for 100,000 lines; the refusal names the bound and costs
// nothing), 100 pages, and the empty page after a full last one. Every
// row loads, and the ledger books what the sandbox charged. `etl plan`
// then counts the requests at the remembered bound, and a second run asks
// at it without a refused request. The runs are of the etl binary, so the
// million rows load at its speed, not the race detector's.
func TestMillionLinksInPagesOfTheBound(t *testing.T) {
	t.Parallel()
	const key, now, rows = "sk-pages", "2026-11-21T03:00:00Z", 1_000_000
	bin := etlBinary(t)
	sb, apiURL := sandboxFor(t, key)
	db := pgtest.NewDB(t)
	jobs := writeSpec(t, pagesSpec)
	env := map[string]string{"DATABASE_URL": db, "ETL_API_URL": apiURL, "ETL_API_KEY": key}
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
	require.Equal(t, int64(rows/sandbox.DefaultMaxLimit+1), u.Requests)
	require.Equal(t, int64(rows*45), u.UnitsSpent)
	require.Equal(t, u.UnitsSpent, ledgerUnits(t, db), "the ledger books what the sandbox charged")
	require.Contains(t, stderr, `"msg":"learned the largest value the API accepts","operation":"links","param":"limit","limit":10000,"refused":100000,"how":"named"`)

	conn, err := pgx.Connect(t.Context(), db)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	var loaded int64
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM backlinks`).Scan(&loaded))
	require.Equal(t, int64(rows), loaded)
	// Booked at 0: the refused first request (its reservation: 100,000
	// lines at 45 units), and the empty last page (10,000 lines).
	var zero []int64
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT array_agg(reserved ORDER BY ledger_id) FROM unit_ledger WHERE spent = 0`).Scan(&zero))
	require.Equal(t, []int64{100_000 * 45, 10_000 * 45}, zero)

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
