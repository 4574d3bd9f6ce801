package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/report"
)

// TestReportWritesTheJobsReport: after a run of the job one, etl report
// --job one writes one HTML file with the job's target charted and its
// caps drawn, and says where; a missing --out and an unknown job are
// usage errors; an unknown target is named.
func TestReportWritesTheJobsReport(t *testing.T) {
	t.Parallel()
	const key = "sk-report-0123456789"
	_, env := runWorld(t, key)
	jobs := writeSpec(t, "budget: {daily: 90000}\n"+cliSpec)
	now := cliNow.Format(time.RFC3339)
	r := etl(t, env, "run", "--jobs", jobs, "--job", "one", "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)

	out := filepath.Join(t.TempDir(), "my report.html")
	r = etl(t, env, "report", "--jobs", jobs, "--job", "one", "--out", out, "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `^report: "`+regexp.QuoteMeta(out)+`" \(1 targets, 1 with charts; months 2025-12 to 2026-11; \d+ KiB\)\n$`, r.stdout,
		"the file name quoted: it holds a space")
	doc, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Contains(t, string(doc), "<figcaption>Authority score of <bdi>example.com</bdi></figcaption>")
	require.Contains(t, string(doc), "daily cap 90,000")
	require.NotContains(t, r.stdout+r.stderr, key)
	left, err := filepath.Glob(filepath.Join(filepath.Dir(out), ".*"))
	require.NoError(t, err)
	require.Empty(t, left, "no temporary file left")

	r = etl(t, env, "report", "--jobs", jobs, "--job", "one")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "--out FILE.html is required")
	r = etl(t, env, "report", "--jobs", jobs, "--job", "three", "--out", out)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "three")
	r = etl(t, env, "report", "--targets", "nowhere.example", "--out", out)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `no target "nowhere.example" in the warehouse`)
	r = etl(t, env, "report", "--months", "0", "--out", out)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "--months and --top must be at least 1, got 0 and 10")
	r = etl(t, env, "report", "--months", "300", "--out", out)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "months must be between 1 and 240, got 300")
}

// TestReportOverHTTP: /report answers the report as HTML, read-only and
// without outside references; a bad parameter is a 400 naming it, an
// unknown job or target too.
func TestReportOverHTTP(t *testing.T) {
	t.Parallel()
	const key = "sk-report-http-0123"
	_, env := runWorld(t, key)
	db := env["DATABASE_URL"]
	jobs := writeSpec(t, cliSpec)
	r := etl(t, env, "run", "--jobs", jobs, "--job", "one", "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
	spec, err := loadSpec(jobs, cliNow)
	require.NoError(t, err)
	pool, err := pgxpool.New(t.Context(), db)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	srv := httptest.NewServer(reportHandler(pool, func(job string, targets []string) (report.Config, error) {
		cfg, err := reportConfig(spec, job, targets)
		cfg.Now = func() time.Time { return cliNow }
		return cfg, err
	}, func(s string) string { return s }, slog.New(slog.DiscardHandler)))
	t.Cleanup(srv.Close)

	get := func(path string) (int, http.Header, string) {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, string(b)
	}
	code, h, page := get("/report?job=one&months=3")
	require.Equal(t, http.StatusOK, code, page)
	require.Equal(t, "text/html; charset=utf-8", h.Get("Content-Type"))
	require.Contains(t, h.Get("Content-Security-Policy"), "default-src 'none'")
	require.Contains(t, page, "<figcaption>Authority score of <bdi>example.com</bdi></figcaption>")
	for path, want := range map[string]string{
		"/report?month=3":                   `unknown parameter "month" (known: job, months, targets, top)`,
		"/report?tops=2":                    `unknown parameter "tops"`,
		"/report?target=nosuch.example":     `unknown parameter "target"`,
		"/report?targets=":                  "targets names no url",
		"/report?months=3&months=4":         `months given twice`,
		"/report?months=0":                  `months must be a whole number of at least 1, got "0"`,
		"/report?top=many":                  `top must be a whole number of at least 1, got "many"`,
		"/report?months=999":                "months must be between 1 and 240, got 999",
		"/report?job=three":                 "three",
		"/report?targets=nowhere.example,x": `no target "nowhere.example" in the warehouse`,
	} {
		code, _, body := get(path)
		require.Equal(t, http.StatusBadRequest, code, path)
		require.Contains(t, body, want, path)
	}
}

// TestReportTargets: --targets names stored urls as they are, a '"' too
// (it was read as CSV: `bare " in non-quoted-field`, exit 2); a
// --targets that names no url is refused, ” as ',' (the one gave the
// full report, the other was refused).
func TestReportTargets(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	pool, err := pgxpool.New(t.Context(), db)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	l, err := load.New(load.Config{Pool: pool})
	require.NoError(t, err)
	for _, u := range []string{`say"hi".example`, "b.example"} {
		_, err = l.Target(t.Context(), u, catalog.RootDomain)
		require.NoError(t, err)
	}
	out := filepath.Join(t.TempDir(), "r.html")
	r := etl(t, env, "report", "--targets", `say"hi".example`, "--out", out, "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "(1 targets, 0 with charts;")
	r = etl(t, env, "report", "--targets", `say"hi".example,b.example`, "--out", out)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "(2 targets, 0 with charts;")
	for _, v := range []string{"", ",", " , "} {
		r = etl(t, env, "report", "--targets", v, "--out", out)
		require.Equal(t, exitUsage, r.code, "%q: %s", v, r.stderr)
		require.Contains(t, r.stderr, "--targets names no url", v)
	}
	r = etl(t, env, "report", "--targets", "b.example,,b.example", "--out", out)
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, `--targets "b.example,,b.example" holds an empty url`)
}

// TestReportNeedsTheAnalystRole: a role not granted etl_analyst is told
// to be granted it (it got "permission denied for table
// schema_migrations", which the schema check reads first); so is etl
// runs.
func TestReportNeedsTheAnalystRole(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": pgtest.NewRole(t, db)}
	out := filepath.Join(t.TempDir(), "r.html")
	r := etl(t, env, "report", "--out", out)
	require.Equal(t, exitFailed, r.code, r.stderr)
	require.Contains(t, r.stderr, "GRANT etl_analyst TO")
	require.NotContains(t, r.stderr, "permission denied")
	r = etl(t, env, "runs")
	require.Equal(t, exitFailed, r.code, r.stderr)
	require.Contains(t, r.stderr, "GRANT etl_analyst TO")

	// Granted it, the report is written.
	env = map[string]string{"DATABASE_URL": pgtest.NewRole(t, db, "etl_analyst")}
	r = etl(t, env, "report", "--out", out)
	require.Equal(t, exitOK, r.code, r.stderr)
}

// TestReportHelp: the usage line names every flag of etl report.
func TestReportHelp(t *testing.T) {
	t.Parallel()
	r := etl(t, nil, "report", "--help")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "etl report --out FILE.html [--jobs FILE] [--job NAME] [--targets URL,...] [--months N] [--top N]")
}

// TestReportFileFollowsTheUmask: the report --out writes is 0666 less the
// umask (here 027: 0640), as cp would make it, not a fixed 0644. Not
// parallel: the umask is the process's.
func TestReportFileFollowsTheUmask(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.html")
	old := syscall.Umask(0o027)
	err := writeAtomically(out, []byte("<html></html>"))
	syscall.Umask(old)
	require.NoError(t, err)
	st, err := os.Stat(out)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), st.Mode())
}
