package main

import (
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestTwoSchedulersRunEachTickOnce runs two `etl schedule` processes
// against one database with a per-second schedule: every tick is claimed by
// one of them, and runs once. SIGHUP with a bad file keeps the schedule;
// SIGTERM stops both cleanly.
func TestTwoSchedulersRunEachTickOnce(t *testing.T) {
	t.Parallel()
	const key = "sk-sched"
	bin := etlBinary(t)
	_, env := runWorld(t, key)
	db := env["DATABASE_URL"]
	const spec = `jobs:
  - name: every-second
    schedule: "* * * * * *"
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}}
`
	jobs := writeSpec(t, spec)
	args := []string{"--log-format", "json", "schedule", "--jobs", jobs}
	a, b := startETL(t, bin, env, append(args, "--http", "127.0.0.1:0")...), startETL(t, bin, env, args...)

	// Both schedulers' log lines, merged.
	type line struct {
		who  *etlProcess
		text string
	}
	lines := make(chan line)
	var logs [2]strings.Builder
	waitFor := func(what string, n int) {
		t.Helper()
		seen := 0
		for l := range lines {
			if l.text == "" {
				t.Fatalf("a scheduler ended while waiting for %q:\n%s\n%s", what, logs[0].String(), logs[1].String())
			}
			if strings.Contains(l.text, what) {
				if seen++; seen == n {
					return
				}
			}
		}
	}
	// A serves /healthz and /metrics; its first line says where.
	var addr string
	for l := range a.lines {
		logs[0].WriteString(l + "\n")
		if _, rest, ok := strings.Cut(l, `"msg":"serving /healthz and /metrics","addr":"`); ok {
			addr, _, _ = strings.Cut(rest, `"`)
			break
		}
	}
	require.NotEmpty(t, addr, logs[0].String())
	for i, p := range []*etlProcess{a, b} {
		go func() {
			for l := range p.lines {
				logs[i].WriteString(l + "\n")
				lines <- line{p, l}
			}
			lines <- line{p, ""} // the end
		}()
	}
	waitFor(`"msg":"scheduled run finished"`, 4)
	require.Equal(t, "ok\n", httpGet(t, "http://"+addr+"/healthz"))
	metrics := httpGet(t, "http://"+addr+"/metrics")
	require.Regexp(t, `etl_schedule_ticks_total\{job="every-second",outcome="(ran|lost)"\} [1-9]`, metrics)
	require.Contains(t, metrics, `etl_runs_in_progress{job="every-second"}`)
	// And the report, of the job's target, drawn from what the runs loaded.
	page := httpGet(t, "http://"+addr+"/report?job=every-second&months=2")
	require.Contains(t, page, "<figcaption>Authority score of <bdi>example.com</bdi></figcaption>")
	require.Contains(t, page, "<svg ")

	// A bad file on SIGHUP: the old schedule stays.
	require.NoError(t, os.WriteFile(jobs, []byte("jobs:\n  - name: every-second\n    schedule: nonsense\n"), 0o600))
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGHUP))
	waitFor(`"msg":"reload failed: the schedule stays as it was"`, 1)
	waitFor(`"msg":"scheduled run finished"`, 2)

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	for ended := 0; ended < 2; {
		if l := <-lines; l.text == "" {
			ended++
		}
	}
	require.NoError(t, a.cmd.Wait(), logs[0].String())
	require.NoError(t, b.cmd.Wait(), logs[1].String())

	conn, err := pgx.Connect(t.Context(), db)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	// No tick ran twice: a run per tick claimed as ran, none for the rest.
	var ticks, ranTicks, runs, distinct, orphans, claimers int
	require.NoError(t, conn.QueryRow(t.Context(), `
		SELECT (SELECT count(*) FROM schedule_ticks),
		       (SELECT count(*) FROM schedule_ticks WHERE outcome = 'ran'),
		       (SELECT count(*) FROM runs WHERE trigger = 'schedule'),
		       (SELECT count(DISTINCT scheduled_for) FROM runs WHERE trigger = 'schedule'),
		       (SELECT count(*) FROM runs r WHERE trigger = 'schedule' AND NOT EXISTS (
		            SELECT FROM schedule_ticks s WHERE s.run_id = r.run_id AND s.tick = r.scheduled_for AND s.outcome = 'ran')),
		       (SELECT count(DISTINCT claimed_by) FROM schedule_ticks)`).Scan(&ticks, &ranTicks, &runs, &distinct, &orphans, &claimers))
	require.GreaterOrEqual(t, ranTicks, 6)
	require.Equal(t, runs, distinct, "a tick ran twice")
	require.Equal(t, ranTicks, runs, "every tick claimed as ran has its one run")
	require.Zero(t, orphans, "a scheduled run without its tick")
	var statuses []string
	rows, err := conn.Query(t.Context(), `SELECT DISTINCT status FROM runs ORDER BY 1`)
	require.NoError(t, err)
	statuses, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Subset(t, []string{"succeeded", "interrupted"}, statuses)
	var first, last time.Time
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT min(tick), max(tick) FROM schedule_ticks`).Scan(&first, &last))
	t.Logf("%d ticks from %s to %s, %d runs, claimed by %d schedulers", ticks, first.Format(time.TimeOnly), last.Format(time.TimeOnly), runs, claimers)
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return string(b)
}
