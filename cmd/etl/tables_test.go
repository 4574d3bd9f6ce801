package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tableRows parses the per-table rows of a summary or of etl runs show:
// table name to its counts (rows, inserted, updated, unchanged,
// quarantined).
func tableRows(t *testing.T, out string) map[string][5]int64 {
	t.Helper()
	got := map[string][5]int64{}
	re := regexp.MustCompile(`(?m)^\s+([a-z_]+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$`)
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		var c [5]int64
		for i := range c {
			n, err := strconv.ParseInt(m[i+2], 10, 64)
			require.NoError(t, err)
			c[i] = n
		}
		got[m[1]] = c
	}
	return got
}

// TestSummaryOfAContinuedRun: a run a per_run cap stopped is continued by
// the next etl run; its summary counts the whole run in the totals and per
// table alike (rows = inserted + updated + unchanged + quarantined, and
// the tables' rows add up to the total), and says what this attempt did.
// etl runs show prints the same per table, stored with the run, and etl run
// --json carries it as numbers.
func TestSummaryOfAContinuedRun(t *testing.T) {
	t.Parallel()
	_, env := runWorld(t, "k")
	// Keyword metrics cost 20 units a request: 3 tasks per window of 60.
	jobs := writeSpec(t, "jobs:\n  - name: slices\n    max_age: 0\n    budget: {per_run: 60}\n    targets: [{url: example.com, scope: ROOT_DOMAIN}]\n    endpoints: {summary: {limit: 2}}\n    keywords: {keywords: [a, b, c, d, e], countries: [US]}\n")
	now := cliNow.Format(time.RFC3339)
	consistent := func(t *testing.T, out string, total int64) map[string][5]int64 {
		t.Helper()
		tables := tableRows(t, out)
		var sum int64
		for name, c := range tables {
			require.Equal(t, c[0], c[1]+c[2]+c[3]+c[4], "%s: rows = inserted + updated + unchanged + quarantined", name)
			sum += c[0]
		}
		require.Equal(t, total, sum, "the tables' rows add up to the total")
		return tables
	}

	// summary (80 units) does not fit: refused; 3 keyword tasks fit.
	r := etl(t, env, "run", "--jobs", jobs, "--concurrency", "1", "--now", now)
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "job slices: 6 tasks, 3 rows")
	require.Equal(t, [5]int64{3, 3, 0, 0, 0}, consistent(t, r.stdout, 3)["keyword_metrics"])

	r = etl(t, env, "run", "--jobs", jobs, "--concurrency", "1", "--now", now)
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr) // the summary task stays refused
	require.Contains(t, r.stdout, "continued (in per_run cap window 2) run 1 (attempt 2): ")
	require.Contains(t, r.stdout, "every count below is of the whole run, its 2 attempts (this attempt: 2 rows, 40 API units)")
	require.Contains(t, r.stdout, "job slices: 6 tasks, 5 rows")
	require.Equal(t, [5]int64{5, 5, 0, 0, 0}, consistent(t, r.stdout, 5)["keyword_metrics"])

	// Stored with the run.
	r = etl(t, env, "runs", "show", "1")
	require.Equal(t, exitOK, r.code, r.stderr)
	_, loaded, ok := strings.Cut(r.stdout, "loaded per table, over every attempt of the run:\n")
	require.True(t, ok, r.stdout)
	loaded, _, _ = strings.Cut(loaded, "\nledger:")
	require.Equal(t, map[string][5]int64{"backlink_history": {}, "keyword_metrics": {5, 5, 0, 0, 0}}, tableRows(t, loaded))
	r = etl(t, env, "runs", "show", "1", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var shown struct {
		Tables []map[string]any `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
	require.Equal(t, []map[string]any{{"table": "backlink_history", "tasks": 1.0, "rows": 0.0, "inserted": 0.0, "updated": 0.0,
		"unchanged": 0.0, "quarantined": 0.0}, {"table": "keyword_metrics", "tasks": 5.0, "rows": 5.0, "inserted": 5.0, "updated": 0.0,
		"unchanged": 0.0, "quarantined": 0.0}}, shown.Tables)

	// etl run --json: one document of numbers. The refused task keeps the
	// run open: --fresh starts a new one, which finds every row as it was.
	r = etl(t, env, "run", "--jobs", jobs, "--concurrency", "1", "--now", now, "--fresh", "--json")
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.Equal(t, 2.0, doc["run_id"])
	require.Equal(t, "partial", doc["status"])
	require.Equal(t, 1.0, doc["attempt"])
	require.Equal(t, 3.0, doc["rows"])
	require.Equal(t, 3.0, doc["attempt_rows"])
	require.Equal(t, 60.0, doc["units"])
	require.IsType(t, 0.0, doc["took_seconds"])
	require.Equal(t, []any{map[string]any{"table": "backlink_history", "tasks": 1.0, "rows": 0.0, "inserted": 0.0, "updated": 0.0, "unchanged": 0.0, "quarantined": 0.0},
		map[string]any{"table": "keyword_metrics", "tasks": 5.0, "rows": 3.0, "inserted": 0.0, "updated": 0.0, "unchanged": 3.0, "quarantined": 0.0}}, doc["tables"])
	require.Len(t, doc["skipped"], 3)
}
