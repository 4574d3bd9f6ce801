package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
)

// TestExitStatusesAreDocumented: the one table of exit statuses is what
// etl help exit-codes prints and what docs/commands.md says, row for row; no
// command's help keeps an exit status list of its own.
func TestExitStatusesAreDocumented(t *testing.T) {
	t.Parallel()
	r := etl(t, nil, "help", "exit-codes")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, exitHelp())
	for _, s := range exitStatuses {
		require.Contains(t, r.stdout, fmt.Sprintf("%5d  %s: ", s.Code, s.Name))
	}
	require.Contains(t, r.stdout, "130  stopped: a second SIGINT/SIGTERM")

	doc, err := os.ReadFile("../../docs/commands.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n## Exit status\n")
	require.True(t, ok, "docs/commands.md has a section \"## Exit status\"")
	section, _, _ = strings.Cut(section, "\n#")
	var rows []string
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| status ") {
			rows = append(rows, l)
		}
	}
	var want []string
	for _, s := range exitStatuses {
		want = append(want, fmt.Sprintf("| %d | %s | %s |", s.Code, s.Name, s.Means))
	}
	require.Equal(t, want, rows, "the table of exit statuses in docs/commands.md")

	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"plan", "--help"}, {"backfill", "--help"}, {"runs", "--help"}, {"runs", "show", "--help"}} {
		r := etl(t, nil, args...)
		require.Equal(t, exitOK, r.code, r.stderr)
		require.Contains(t, r.stdout, exitLine(), strings.Join(args, " "))
		require.Equal(t, 1, strings.Count(r.stdout, "Exit status"), "%s: one line, pointing at the table", strings.Join(args, " "))
	}
}

// TestMissingJobsFileIsAUsageError: a --jobs file that is not there is exit
// status 2 in every command that reads one, as an invalid one is.
func TestMissingJobsFileIsAUsageError(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t), "ETL_API_URL": "http://127.0.0.1:1", "ETL_API_KEY": "k"}
	for _, args := range [][]string{
		{"run"}, {"plan"}, {"budget"}, {"schedule"}, {"retention"}, {"local", "run"},
		{"backfill", "--job", "x", "--from", "2026-01", "--to", "2026-02"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := etl(t, env, append(args, "--jobs", missing)...)
			require.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stderr, missing+": no such file or directory")
			require.Contains(t, r.stderr, "--jobs names the job spec file")
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := etl(t, nil, "--version")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `^etl github.com/seoetl/etl \S+, commit \S+`, r.stdout)
	v := etl(t, nil, "version")
	require.Equal(t, exitOK, v.code, v.stderr)
	require.Equal(t, r.stdout, v.stdout)

	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/seoetl/etl", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "3ffd1bd6d6088096b6057234b40b1401fc629fd2"},
			{Key: "vcs.time", Value: "2026-11-24T03:29:27Z"}, {Key: "vcs.modified", Value: "true"}}}
	require.Equal(t, "github.com/seoetl/etl v1.4.0, commit 3ffd1bd6d6088096b6057234b40b1401fc629fd2 (2026-11-24T03:29:27Z, modified: built with uncommitted changes), go1.26.8",
		buildVersion(bi, true))
	bi.Settings = bi.Settings[:3]
	require.Equal(t, "github.com/seoetl/etl v1.4.0, commit 3ffd1bd6d6088096b6057234b40b1401fc629fd2 (2026-11-24T03:29:27Z), go1.26.8",
		buildVersion(bi, true))
	bi.Settings, bi.Main.Version = nil, "(devel)"
	require.Equal(t, "github.com/seoetl/etl (devel), commit unknown (built without version control information), go1.26.8",
		buildVersion(bi, true))
}
