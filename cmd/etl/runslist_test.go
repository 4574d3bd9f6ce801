package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/internal/runs"
)

// TestRunsListAtAgencyScale: of 1,000 runs, etl runs lists the newest 20
// between a line counting them by status and one saying how to list the
// rest, within a screen; --all lists every one, --status and --job pick
// some, and a filter that keeps at most 20 lists them without the lines.
func TestRunsListAtAgencyScale(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": dbURL}
	// Run i (1 to 1000, its run_id) started i minutes after midnight:
	// nightly when i is even, weekly when odd; 19 failed (every 50th but
	// the last), 80 partial (every 10th but those), the last running.
	var n int
	query(t, dbURL, `WITH r AS (INSERT INTO runs (job, status, started_at, finished_at, rows, units)
		SELECT CASE WHEN i % 2 = 0 THEN 'nightly' ELSE 'weekly' END,
		       CASE WHEN i = 1000 THEN 'running' WHEN i % 50 = 0 THEN 'failed' WHEN i % 10 = 0 THEN 'partial' ELSE 'succeeded' END,
		       '2026-11-01T00:00:00Z'::timestamptz + i * interval '1 minute',
		       CASE WHEN i < 1000 THEN '2026-11-01T00:00:30Z'::timestamptz + i * interval '1 minute' END,
		       CASE WHEN i < 1000 THEN i END, CASE WHEN i < 1000 THEN 100 * i END
		FROM generate_series(1, 1000) AS i ORDER BY i RETURNING 1) SELECT count(*) FROM r`, nil, &n)
	require.Equal(t, 1000, n)
	lines := func(out string) []string { return strings.Split(strings.TrimRight(out, "\n"), "\n") }

	r := etl(t, env, "runs")
	require.Equal(t, exitOK, r.code, r.stderr)
	got := lines(r.stdout)
	require.Len(t, got, 1+1+runsListDefault+1, r.stdout)
	require.Equal(t, "1000 runs: 900 succeeded, 80 partial, 19 failed, 1 running; the newest 20 of the 1000 below", got[0])
	require.Regexp(t, `^\s*run\s+job\s+trigger\s+status`, got[1])
	require.Regexp(t, `^\s*1000\s+nightly\s+manual\s+running\s+1\s+2026-11-01T16:40:00Z\s+-\s+-\s+-\s+-$`, got[2])
	require.Regexp(t, `^\s*999\s+weekly\s+manual\s+succeeded\s+1\s+2026-11-01T16:39:00Z\s+2026-11-01T16:39:30Z\s+30s\s+999\s+99900$`, got[3])
	require.Regexp(t, `^\s*981\s+weekly\s+`, got[21])
	require.Equal(t, "980 of 1000 runs not shown; --limit N lists the newest N, --all every one, "+
		"--job NAME or --status succeeded|partial|failed|interrupted|running picks some", got[22])

	r = etl(t, env, "runs", "--all")
	require.Equal(t, exitOK, r.code, r.stderr)
	got = lines(r.stdout)
	require.Len(t, got, 1+1000, "every run, and no counts: none is left out")
	require.Regexp(t, `^\s*1\s+weekly\s+`, got[1000])
	r = etl(t, env, "runs", "--all", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var listed []runs.RunRow
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &listed))
	require.Len(t, listed, 1000)
	r = etl(t, env, "runs", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &listed))
	require.Len(t, listed, runsListDefault)
	require.Equal(t, int64(1000), listed[0].RunID)

	// A filter that keeps at most 20 lists them all, without the lines.
	r = etl(t, env, "runs", "--status", "failed")
	require.Equal(t, exitOK, r.code, r.stderr)
	got = lines(r.stdout)
	require.Len(t, got, 1+19, r.stdout)
	for _, l := range got[1:] {
		require.Regexp(t, `^\s*\d+\s+nightly\s+manual\s+failed\s`, l)
	}
	r = etl(t, env, "runs", "--status", "failed,partial", "--job", "nightly", "--limit", "5")
	require.Equal(t, exitOK, r.code, r.stderr)
	got = lines(r.stdout)
	require.Len(t, got, 1+1+5+1, r.stdout)
	require.Equal(t, "500 runs of job nightly: 400 succeeded, 80 partial, 19 failed, 1 running; the newest 5 of the 99 failed or partial below", got[0])
	require.Regexp(t, `^\s*990\s+nightly\s+manual\s+partial\s`, got[2])
	require.Regexp(t, `^\s*950\s+nightly\s+manual\s+failed\s`, got[6])
	require.Equal(t, "94 of 99 runs not shown; --limit N lists the newest N, --all every one", got[7])
	r = etl(t, env, "runs", "--status", "partial", "--job", "weekly")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "no partial runs of job weekly\n", r.stdout)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--all", "--limit", "5"}, "--all lists every run and --limit N the newest N: give one of them"},
		{[]string{"--status", "done"}, `--status must be one of succeeded, partial, failed, interrupted, running, got "done"`},
		{[]string{"--limit", "0"}, "--limit must be at least 1, got 0"},
	} {
		r := etl(t, env, append([]string{"runs"}, tc.args...)...)
		require.Equal(t, exitUsage, r.code, r.stdout)
		require.Contains(t, r.stderr, tc.want)
	}
}

// TestRunsListQuotesWhatCouldMislead: a job name or an error holding an
// escape sequence reaches the terminal quoted, never as it is.
func TestRunsListQuotesWhatCouldMislead(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": dbURL}
	var id int64
	query(t, dbURL, `INSERT INTO runs (job, status, started_at, finished_at, rows, units, error)
		VALUES (E'evil\x1b[2J', 'failed', '2026-11-21T01:00:00Z', '2026-11-21T01:00:01Z', 0, 0, E'boom \x1b[31mred')
		RETURNING run_id`, nil, &id)
	r := etl(t, env, "runs")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.NotContains(t, r.stdout, "\x1b")
	require.Regexp(t, fmt.Sprintf(`(?m)^\s*%d\s+"evil\\x1b\[2J"\s+manual\s+failed\s.*\s"boom \\x1b\[31mred"$`, id), r.stdout)
	r = etl(t, env, "runs", "--job", "no\x1bbody")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "no runs of job \"no\\x1bbody\"\n", r.stdout)
}
