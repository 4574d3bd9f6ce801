package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// jsonLogs parses every line of stderr as a JSON log record.
func jsonLogs(t *testing.T, stderr string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stderr))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), "not a JSON log line: %s", sc.Text())
		recs = append(recs, rec)
	}
	return recs
}

// findLog is the first record with message msg.
func findLog(t *testing.T, recs []map[string]any, msg string) map[string]any {
	t.Helper()
	for _, r := range recs {
		if r["msg"] == msg {
			return r
		}
	}
	require.Failf(t, "no log record", "%q", msg)
	return nil
}

// TestJSONLogsCarryNumbers: the JSON log records of a run carry counts
// and durations as JSON numbers, durations in seconds under a key that
// says so, never Go's integer nanoseconds.
func TestJSONLogsCarryNumbers(t *testing.T) {
	t.Parallel()
	_, env := runWorld(t, "k")
	r := etl(t, env, "--log-format", "json", "--log-level", "debug", "run", "--jobs", writeSpec(t, cliSpec), "--job", "one",
		"--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
	recs := jsonLogs(t, r.stderr)

	fin := findLog(t, recs, "run finished")
	for _, k := range []string{"run_id", "rows", "rejected", "units", "failed_tasks", "skipped_tasks", "took_seconds"} {
		require.IsType(t, float64(0), fin[k], "run finished: %s", k)
	}
	require.NotContains(t, fin, "took")
	took := fin["took_seconds"].(float64)
	require.Greater(t, took, 0.0)
	require.Less(t, took, 600.0, "seconds, not nanoseconds")

	resp := findLog(t, recs, "response") // the client's debug line
	require.IsType(t, float64(0), resp["headers_after_seconds"])
	require.IsType(t, float64(0), resp["status"])
}
