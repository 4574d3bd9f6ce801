package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBudgetShowsJobNamesEscaped: etl budget names each job's scopes
// with the job's name as every output of etl shows it (shownName): one
// that holds a right-to-left override (U+202E) quoted and escaped. It
// printed "job X 2026-11" with the raw name, and the terminal showed the
// rest of the line (the cap, the units) reversed. --json keeps the name
// as it is (JSON is for programs).
func TestBudgetShowsJobNamesEscaped(t *testing.T) {
	t.Parallel()
	_, env := runWorld(t, "k")
	jobs := writeSpec(t, "jobs:\n  - name: \"job\\u202eboj\"\n    budget: {monthly: 1000}\n"+
		"    targets: [{url: example.com, scope: ROOT_DOMAIN}]\n    endpoints: {overview: {}}\n")
	now := cliNow.Format(time.RFC3339)
	r := etl(t, env, "run", "--jobs", jobs, "--now", now)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)

	r = etl(t, env, "budget", "--jobs", jobs, "--now", now)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.False(t, strings.ContainsAny(r.stdout, bidiControls), "%q", r.stdout)
	require.Regexp(t, `job "job\\u202eboj" 2026-11\s+1000\s+\d+\s+\d+`, r.stdout)
	require.Regexp(t, `job "job\\u202eboj" run 1 \(latest\)\s+none`, r.stdout)

	// So does etl runs show (its "job" line printed the name raw).
	r = etl(t, env, "runs", "show", "1")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.False(t, strings.ContainsAny(r.stdout, bidiControls), "%q", r.stdout)
	require.Contains(t, r.stdout, "job            \"job\\u202eboj\"\n")

	r = etl(t, env, "budget", "--jobs", jobs, "--now", now, "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "\"scope\": \"job job\u202eboj 2026-11\"")
}
