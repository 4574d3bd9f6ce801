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

// TestDocsREADMEKeepItRunning runs the README's block after make up, line
// by line as written, in a checkout: make up, the environment of etl local
// env, each etl command (exit 0), make down.
func TestDocsREADMEKeepItRunning(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(readme), "**Keep it running**")
	require.True(t, ok, "the README has a paragraph **Keep it running**")
	_, block, ok = strings.Cut(block, "```sh\n")
	require.True(t, ok)
	block, _, _ = strings.Cut(block, "```")

	local, _, _ := localFor(t)
	const jobs = "../../jobs.yaml"
	var env map[string]string
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		cmd = strings.TrimSpace(cmd)
		args := strings.Fields(cmd)
		for i, a := range args {
			if a == "jobs.yaml" {
				args[i] = jobs
			}
		}
		var r result
		switch {
		case cmd == "make up":
			r = etl(t, nil, local("up", "--jobs", jobs)...)
		case cmd == `eval "$(etl local env)"`:
			r = etl(t, nil, local("env")...)
			env = exports(t, r.stdout)
		case cmd == "make down":
			r = etl(t, nil, local("down")...)
		case len(args) > 0 && args[0] == "etl":
			require.NotNil(t, env, "%q before the environment of etl local env", line)
			r = etl(t, env, args[1:]...)
			n++
		default:
			t.Fatalf("the README's block has a line this test cannot run: %q", line)
		}
		require.Equal(t, exitOK, r.code, "%s\n%s%s", line, r.stdout, r.stderr)
	}
	require.GreaterOrEqual(t, n, 3, "the block runs etl commands")
}
