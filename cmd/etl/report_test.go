package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
)

// TestReportWritesTheJobsReport: after a run of the job one, etl report
// --job one writes one HTML file with the job's target charted and its
// caps drawn, and says where; a missing --out and an unknown job are
// usage errors; an unknown target is named.
func TestReportWritesTheJobsReport(t *testing.T) {
	t.Parallel()
	const key = "sk-report-0123456789"
	_, apiURL := sandboxFor(t, key)
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t), "ETL_API_URL": apiURL, "ETL_API_KEY": key}
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
	require.Contains(t, string(doc), "<figcaption>Authority score of example.com</figcaption>")
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
	require.Equal(t, exitFailed, r.code, r.stderr)
	require.Contains(t, r.stderr, `no target "nowhere.example" in the warehouse`)
}
