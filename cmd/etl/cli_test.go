package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/sandbox"
)

type result struct {
	code           int
	stdout, stderr string
}

// etl runs the command line in-process with the given environment.
func etl(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, strings.NewReader(""), &stdout, &stderr, func(k string) string { return env[k] })
	return result{code, stdout.String(), stderr.String()}
}

func TestHelpForEveryCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--help"}, {"run", "--help"}, {"plan", "--help"}, {"schedule", "--help"}, {"migrate", "--help"}, {"sandbox", "--help"},
		{"retention", "--help"}, {"export", "--help"}, {"budget", "--help"}, {"local", "--help"}, {"local", "run", "--help"}, {"local", "psql", "--help"}, {"version", "--help"}, {"migrate", "up", "--help"}, {"migrate", "down", "--help"}, {"migrate", "goto", "--help"},
		{"migrate", "force", "--help"}, {"migrate", "version", "--help"},
		{"runs", "--help"}, {"runs", "show", "--help"}, {"backfill", "--help"},
		{"auth", "--help"}, {"auth", "login", "--help"}, {"auth", "status", "--help"}, {"auth", "logout", "--help"},
		{"listings", "--help"}, {"listings", "pull", "--help"}, {"listings", "push", "--help"}, {"listings", "status", "--help"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			r := etl(t, nil, args...)
			require.Equal(t, exitOK, r.code, r.stderr)
			require.Contains(t, r.stdout, "Usage:")
		})
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"unknown command", nil, []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", nil, []string{"run", "--nope"}, "unknown flag: --nope"},
		{"no database", nil, []string{"run"}, "no database: set DATABASE_URL"},
		{"no api", map[string]string{"DATABASE_URL": "postgres://x/y"}, []string{"run"}, "no data API: set ETL_API_URL"},
		{"bad log format", nil, []string{"--log-format", "xml", "version"}, `--log-format "xml"`},
		{"migrate action", map[string]string{"DATABASE_URL": "postgres://x/y"}, []string{"migrate", "sideways"}, `unknown command "sideways" for "etl migrate"`},
		{"down needs yes", map[string]string{"DATABASE_URL": "postgres://x/y"}, []string{"migrate", "down"}, "pass --yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := etl(t, tc.env, tc.args...)
			require.Equal(t, exitUsage, r.code, r.stderr)
			require.Contains(t, r.stderr, tc.want)
		})
	}
}

func TestMigrateUpDownUp(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	r := etl(t, env, "migrate", "version")
	require.Equal(t, exitOK, r.code, r.stderr)
	up := r.stdout
	require.Regexp(t, `^schema version [1-9]\d* of [1-9]\d* \(clean\)`, up)

	r = etl(t, env, "migrate", "down", "--yes")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "schema version 0 of")

	r = etl(t, env, "migrate", "up")
	require.Equal(t, exitOK, r.code, r.stderr)
	out := r.stdout
	if pgtest.Citus() {
		// On Citus, migrate up ends with a line of what it distributed
		// again (docs/warehouse.md, On Citus).
		i := strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")
		require.Regexp(t, `^citus \S+: distributed 12 fact tables by owner and made 5 reference tables`, out[i+1:])
		out = out[:i+1]
	}
	require.True(t, strings.HasSuffix(out, up), r.stdout)
}

// sandboxFor serves a sandbox accepting key, with a pinned clock.
func sandboxFor(t *testing.T, key string) (*sandbox.Server, string) {
	t.Helper()
	sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return cliNow }, APIKeys: []string{key}})
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	return sb, srv.URL
}

// runWorld is what etl run needs of the data API: a sandbox accepting key
// (sandboxFor) and a fresh warehouse, in the environment etl reads.
func runWorld(t *testing.T, key string) (*sandbox.Server, map[string]string) {
	t.Helper()
	sb, apiURL := sandboxFor(t, key)
	return sb, map[string]string{"DATABASE_URL": pgtest.NewDB(t), "ETL_API_URL": apiURL, "ETL_API_KEY": key}
}

// closedAddr is host:port of a port nobody listens on: connecting is
// refused at once.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

var cliNow = time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)

func writeSpec(t *testing.T, spec string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	require.NoError(t, os.WriteFile(path, []byte(spec), 0o600))
	return path
}

const cliSpec = `jobs:
  - name: one
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}, summary: {limit: 3}}
    keywords: {keywords: [seo], countries: [US]}
  - name: two
    keywords: {keywords: [seo], countries: [DE]}
`

func TestRunLoadsAndNeverShowsTheKey(t *testing.T) {
	t.Parallel()
	const key = "sk-live-0123456789abcdef"
	sb, env := runWorld(t, key)
	jobs := writeSpec(t, cliSpec)

	r := etl(t, env, "--log-format", "json", "--log-level", "debug", "run", "--jobs", jobs, "--job", "one", "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "job one: 3 tasks, 5 rows, 0 quarantined")
	require.Regexp(t, `backlink_overview\s+1\s+1\s+0\s+0`, r.stdout)
	require.Regexp(t, `backlink_history\s+3\s+3\s+0\s+0`, r.stdout)
	require.Contains(t, r.stderr, `"msg":"run finished"`)
	require.NotContains(t, r.stdout+r.stderr, key)
	require.Equal(t, int64(45+3*40+20), sb.Usage(key).UnitsSpent)

	// A wrong key: the error says 401 and shows neither key.
	env["ETL_API_KEY"] = "sk-wrong-key-987654321"
	r = etl(t, env, "run", "--jobs", jobs, "--job", "two", "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout+r.stderr, "HTTP 401")
	require.NotContains(t, r.stdout+r.stderr, "sk-wrong-key-987654321")
	require.NotContains(t, r.stdout+r.stderr, key)

	// A key smuggled into the API URL as key= is redacted too.
	env["ETL_API_URL"] += "/nowhere?key=sk-in-url-555"
	r = etl(t, env, "--log-level", "debug", "run", "--jobs", jobs, "--job", "two", "--now", cliNow.Format(time.RFC3339))
	require.NotEqual(t, exitOK, r.code)
	require.NotContains(t, r.stdout+r.stderr, "sk-in-url-555")
}

func TestRunRejectsABadSpecBeforeSpending(t *testing.T) {
	t.Parallel()
	sb, env := runWorld(t, "k")
	jobs := writeSpec(t, "jobs:\n  - name: bad\n    targets: [{url: a.com, scope: ROOT_DOMAIN}]\n    endpoints:\n      overview: {}\n      summary: {limit: 0}\n    keywords: {keywords: [seo], countries: [XX]}\n")
	r := etl(t, env, "run", "--jobs", jobs, "--job", "bad")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, jobs+":6: limit must be between 1 and 2147483647, got 0")
	require.Contains(t, r.stderr, jobs+`:7: unknown country "XX"`)
	require.Zero(t, sb.Usage("k").Requests)

	r = etl(t, env, "run", "--jobs", writeSpec(t, cliSpec))
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "has 2 jobs; pick one with --job")
}

func TestLocalRunOnAnExistingDatabase(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	dir := t.TempDir()
	r := etl(t, env, "local", "run", "--dir", dir, "--jobs", "../../jobs.yaml", "--job", "example", "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "job example:")
	// Its listings account signed in on the sandbox by itself, its tokens
	// under a key kept in the local folder, readable by its owner only.
	require.Regexp(t, `listing_versions\s+[1-9]`, r.stdout)
	fi, err := os.Stat(filepath.Join(dir, "secret.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Contains(t, r.stdout, `psql "$DATABASE_URL" -c 'SELECT`)
}

func TestSandboxCommandServesUntilCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	logs, logw := io.Pipe()
	var stdout bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--log-format", "json", "sandbox", "--addr", "127.0.0.1:0", "--api-key", "sandbox-test-key", "--now", "2026-11-21"},
			strings.NewReader(""), &stdout, logw, func(string) string { return "" })
		logw.Close()
	}()
	var first struct {
		Msg string `json:"msg"`
		URL string `json:"url"`
	}
	require.NoError(t, json.NewDecoder(logs).Decode(&first))
	require.Equal(t, "sandbox listening", first.Msg)
	go func() { _, _ = io.Copy(io.Discard, logs) }() // the request logs must not block

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, first.URL+"/apis/v4/backlinks/v1/overview?url=n777.example&scope=ROOT_DOMAIN&format=csv&fields=backlinks_count", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Apikey sandbox-test-key")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, "backlinks_count\n777\n", string(body))

	cancel()
	require.Equal(t, exitOK, <-done)
}

func TestLogFormats(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ format, want string }{
		{"json", `"level":"INFO","msg":"sandbox listening"`},
		{"text", `level=INFO msg="sandbox listening"`},
		{"auto", `"msg":"sandbox listening"`}, // not a terminal: JSON
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			logs, logw := io.Pipe()
			done := make(chan int)
			go func() {
				done <- run(ctx, []string{"--log-format", tc.format, "sandbox", "--addr", "127.0.0.1:0"},
					strings.NewReader(""), io.Discard, logw, func(string) string { return "" })
				logw.Close()
			}()
			line, err := bufio.NewReader(logs).ReadString('\n')
			require.NoError(t, err)
			require.Contains(t, line, tc.want)
			cancel()
			go func() { _, _ = io.Copy(io.Discard, logs) }()
			require.Equal(t, exitOK, <-done)
		})
	}
}

// Quarantined rows make the run finish with exit status 3, and the summary
// says how many.
func TestRunWithQuarantinedRowsExitsThree(t *testing.T) {
	t.Parallel()
	sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return cliNow }, APIKeys: []string{"k"},
		Faults: sandbox.Faults{Malformed: 0.1}})
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t), "ETL_API_URL": srv.URL, "ETL_API_KEY": "k"}
	jobs := writeSpec(t, "jobs:\n  - name: q\n    targets: [{url: n240.example, scope: ROOT_DOMAIN}]\n    endpoints: {links: {limit: 120}}\n")
	r := etl(t, env, "run", "--jobs", jobs, "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	require.Regexp(t, `job q: 1 tasks, 240 rows, [1-9]\d* quarantined`, r.stdout)
	require.Regexp(t, `[1-9]\d* rows could not be parsed; they are in the quarantine table`, r.stdout)
}

func TestRetentionAfterRunsAndOnItsOwn(t *testing.T) {
	t.Parallel()
	_, env := runWorld(t, "k")
	dbURL := env["DATABASE_URL"]
	const job = "jobs:\n  - name: r\n    targets: [{url: example.com, scope: ROOT_DOMAIN}]\n    endpoints: {overview: {}}\n"
	months := func() string {
		conn, err := pgx.Connect(t.Context(), dbURL)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		var got string
		require.NoError(t, conn.QueryRow(t.Context(),
			`SELECT coalesce(string_agg(to_char(month, 'YYYY-MM'), ',' ORDER BY month), '') FROM backlink_overview`).Scan(&got))
		return got
	}

	// Without a policy nothing is ever removed.
	plain := writeSpec(t, job)
	for _, now := range []string{"2026-09-15", "2026-10-15"} {
		r := etl(t, env, "run", "--jobs", plain, "--now", now)
		require.Equal(t, exitOK, r.code, r.stderr)
		require.NotContains(t, r.stdout, "retention")
	}
	r := etl(t, env, "retention", "--jobs", plain)
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "sets no retention policy")
	require.Equal(t, "2026-09,2026-10", months())

	// keep_months 1: a run in November keeps November only.
	keep := writeSpec(t, "retention: {keep_months: 1}\n"+job)
	r = etl(t, env, "run", "--jobs", keep, "--now", "2026-11-21")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "backlink_overview: deleted 2 rows\n", "September and October, of the year partition that holds November")
	require.Equal(t, "2026-11", months())

	// On its own: a dry run in January changes nothing, the real one drops 2026.
	r = etl(t, env, "retention", "--jobs", keep, "--dry-run", "--now", "2027-01-02")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "backlink_overview: would drop backlink_overview_y2026")
	require.Equal(t, "2026-11", months())
	r = etl(t, env, "retention", "--jobs", keep, "--now", "2027-01-02")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "backlink_overview: dropped backlink_overview_y2026")
	require.Empty(t, months())
}

func TestRunStopsAtTheCapWithExitThree(t *testing.T) {
	t.Parallel()
	sb, env := runWorld(t, "k")
	jobs := writeSpec(t, "budget: {daily: 100}\njobs:\n  - name: c\n    keywords: {keywords: [a, b, c, d, e, f, g], countries: [US]}\n")
	r := etl(t, env, "run", "--jobs", jobs, "--concurrency", "1", "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "job c: 7 tasks, 5 rows")
	require.Contains(t, r.stdout, "stopped early, 2 tasks skipped: budget exhausted: the daily cap of 100 units has 0 left, and the next request (keyword-metrics keyword=f country=US month=2026-11) costs 20")
	require.Equal(t, int64(100), sb.Usage("k").UnitsSpent)

	r = etl(t, env, "budget", "--jobs", jobs, "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `installation 2026-11-21\s+100\s+100\s+0`, r.stdout)
	require.Regexp(t, `installation 2026-11\s+none\s+100\s+-`, r.stdout)
	require.Regexp(t, `job c run 1 \(latest\)\s+none\s+100\s+-`, r.stdout)

	r = etl(t, env, "budget", "--jobs", jobs, "--now", cliNow.Format(time.RFC3339), "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var uses []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &uses), r.stdout)
	require.Equal(t, []map[string]any{
		{"scope": "installation 2026-11-21", "cap": 100.0, "used": 100.0, "left": 0.0},
		{"scope": "installation 2026-11", "cap": nil, "used": 100.0, "left": nil},
		{"scope": "job c 2026-11", "cap": nil, "used": 100.0, "left": nil},
		{"scope": "job c run 1 (latest)", "cap": nil, "used": 100.0, "left": nil},
	}, uses)
}

// TestAMistypedAddressOrKeyFailsFastWithOneLine: a run against a closed
// port, with a key the API refuses, or against PostgreSQL's port (which
// closes the connection without a byte), stops after its first request
// with exit status 1 and one line saying what to check; nothing is
// booked. (Before: 27 seconds of retries and 35 identical error lines;
// at PostgreSQL's port, exit 3 with the run's requests booked as maybe
// charged, up to a whole daily cap.)
func TestAMistypedAddressOrKeyFailsFastWithOneLine(t *testing.T) {
	t.Parallel()
	_, apiURL := sandboxFor(t, "right-key-0123456789")
	closed := "http://" + closedAddr(t)
	pg, err := url.Parse(pgtest.NewDB(t))
	require.NoError(t, err)
	pgPort := "http://" + pg.Host
	jobs := writeSpec(t, cliSpec)
	for _, tc := range []struct {
		name, url, key, want string
	}{
		{"closed port", closed, "right-key-0123456789", "etl: ETL_API_URL " + closed + " refused the connection: is the API (or `etl sandbox`) running at that address?\n"},
		{"wrong key", apiURL, "wrong-key-0123456789", "the API refused the key (HTTP 401"},
		{"PostgreSQL's port", pgPort, "right-key-0123456789", "etl: ETL_API_URL " + pgPort + " closed the connection without an HTTP answer" +
			" (another service listens there, such as PostgreSQL?): check the host and port of ETL_API_URL\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewDB(t)
			r := etl(t, map[string]string{"DATABASE_URL": db, "ETL_API_URL": tc.url, "ETL_API_KEY": tc.key},
				"run", "--jobs", jobs, "--job", "one", "--log-level", "warn", "--now", cliNow.Format(time.RFC3339))
			require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
			require.Empty(t, r.stdout)
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), r.stderr)
			require.Contains(t, r.stderr, tc.want)
			require.NotContains(t, r.stderr, tc.key)
			var requests, booked int64
			query(t, db, `SELECT count(*), coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger`, nil, &requests, &booked)
			require.Equal(t, int64(1), requests, "one request")
			require.Zero(t, booked, "nothing booked")
		})
	}
}

// TestKeepRunDetailCompactsOldRuns: keep_run_detail compacts, after a run,
// the runs that finished longer ago (not the latest), and etl runs show
// still counts their tasks, tables and requests as before.
func TestKeepRunDetailCompactsOldRuns(t *testing.T) {
	t.Parallel()
	_, env := runWorld(t, "k")
	jobs := writeSpec(t, "retention: {keep_run_detail: 7d}\njobs:\n  - name: r\n"+
		"    targets: [{url: example.com, scope: ROOT_DOMAIN}, {url: n10.example, scope: ROOT_DOMAIN}, {url: n20.example, scope: ROOT_DOMAIN}]\n"+
		"    endpoints: {overview: {}}\n")
	for _, now := range []string{"2026-11-01", "2026-11-02"} {
		r := etl(t, env, "run", "--jobs", jobs, "--now", now)
		require.Equal(t, exitOK, r.code, r.stderr)
		require.NotContains(t, r.stdout, "bookkeeping", "nothing is old enough yet")
	}
	before := etl(t, env, "runs", "show", "1")
	require.Equal(t, exitOK, before.code, before.stderr)
	require.Contains(t, before.stdout, "tasks          3: 3 done, 0 held")
	require.Contains(t, before.stdout, "ledger: 3 requests")

	r := etl(t, env, "retention", "--jobs", jobs, "--dry-run", "--now", "2026-11-20")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "bookkeeping: keep run detail 7d: would compact 1 run finished before 2026-11-13 00:00 UTC: "+
		"would delete 3 task checkpoints (keep 0: failures, refusals, each task's latest fetch and try), sum 3 ledger rows into 1\n"+
		"dry run: nothing changed\n", r.stdout, "run 2 is the latest of the job")

	r = etl(t, env, "run", "--jobs", jobs, "--now", "2026-11-20")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "bookkeeping: keep run detail 7d: compacted 2 runs finished before 2026-11-13 00:00 UTC")

	after := etl(t, env, "runs", "show", "1")
	require.Equal(t, exitOK, after.code, after.stderr)
	require.Contains(t, after.stdout, "tasks          3: 3 done, 0 held", "the counts are kept")
	require.Contains(t, after.stdout, "ledger: 3 requests", "a compacted ledger row stands for its requests")
	require.Contains(t, after.stdout, "bookkeeping compacted on 2026-11-20 (retention keep_run_detail): 3 done tasks are counted above but no longer listed")
	tables := func(s string) string { return s[strings.Index(s, "loaded per table"):strings.Index(s, "ledger:")] }
	require.Equal(t, tables(before.stdout), tables(after.stdout))

	js := etl(t, env, "runs", "show", "1", "--json")
	require.Equal(t, exitOK, js.code, js.stderr)
	var doc struct {
		Counts      map[string]int64 `json:"task_counts"`
		CompactedAt *time.Time       `json:"compacted_at"`
		Tasks       []any            `json:"tasks"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.stdout), &doc))
	require.Equal(t, map[string]int64{"done": 3}, doc.Counts)
	require.NotNil(t, doc.CompactedAt)
	require.Empty(t, doc.Tasks)
}
