package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
)

// summaryDuration is the one figure of a run's summary that changes from run
// to run.
var summaryDuration = regexp.MustCompile(`(API units), [0-9.]+(ns|µs|ms|s|m[0-9.]*s|h[0-9.m]*s)$`)

// summaryOf is a run's summary line and table of loads, up to the first
// blank line, the duration normalised.
func summaryOf(t *testing.T, text string) []string {
	t.Helper()
	_, after, ok := strings.Cut(text, "job example:")
	require.True(t, ok, "a summary of the job example in:\n%s", text)
	block, _, _ := strings.Cut("job example:"+after, "\n\n")
	lines := strings.Split(block, "\n")
	lines[0] = summaryDuration.ReplaceAllString(lines[0], "$1, DURATION")
	return lines
}

// TestDocsREADMEWorkedExample: the output the README shows for make run
// is what the example job of jobs.yaml loads, so it cannot go stale.
func TestDocsREADMEWorkedExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, shown, ok := strings.Cut(string(readme), "```console\n$ make run\n...\n")
	require.True(t, ok, "the README shows `$ make run` in a console block")
	want := summaryOf(t, shown)

	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	r := etl(t, env, "local", "run", "--dir", t.TempDir(), "--jobs", "../../jobs.yaml", "--job", "example", "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, want, summaryOf(t, r.stdout), "the README's worked example (make run) against what the example job loads")
}
