package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/internal/runs"
)

// query runs one SELECT on dbURL and scans its single row into dest.
func query(t *testing.T, dbURL, sql string, args []any, dest ...any) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.NoError(t, conn.QueryRow(t.Context(), sql, args...).Scan(dest...))
}

type checkpointRow struct {
	name                        string
	pages                       int
	rows, rejected, units, next int64
}

func checkpointsOf(t *testing.T, dbURL string, runID int64) []checkpointRow {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT name, pages, rows, rejected, units, next_offset FROM task_checkpoints
		WHERE run_id = $1 AND status = 'done' ORDER BY name`, runID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (checkpointRow, error) {
		var c checkpointRow
		return c, r.Scan(&c.name, &c.pages, &c.rows, &c.rejected, &c.units, &c.next)
	})
	require.NoError(t, err)
	return out
}

func TestRunsListsAndShowsRealRuns(t *testing.T) {
	t.Parallel()
	const key = "sk-live-runs-0123456789"
	sb, env := runWorld(t, key)
	dbURL := env["DATABASE_URL"]
	jobs := writeSpec(t, cliSpec)
	now := cliNow.Format(time.RFC3339)

	r := etl(t, env, "runs")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "no runs\n", r.stdout)
	r = etl(t, env, "runs", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.JSONEq(t, `[]`, r.stdout)

	r = etl(t, env, "run", "--jobs", jobs, "--job", "one", "--now", now)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "job one: 3 tasks, 5 rows, 0 quarantined")
	// A wrong key: job two fails on HTTP 401.
	r = etl(t, map[string]string{"DATABASE_URL": dbURL, "ETL_API_URL": env["ETL_API_URL"], "ETL_API_KEY": "sk-wrong-runs-987654321"},
		"run", "--jobs", jobs, "--job", "two", "--now", now)
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)

	var one, two int64
	query(t, dbURL, `SELECT max(run_id) FILTER (WHERE job = 'one'), max(run_id) FILTER (WHERE job = 'two') FROM runs`, nil, &one, &two)
	var oneStatus, twoStatus string
	var oneRows, oneUnits int64
	var twoError *string
	query(t, dbURL, `SELECT status, rows, units FROM runs WHERE run_id = $1`, []any{one}, &oneStatus, &oneRows, &oneUnits)
	query(t, dbURL, `SELECT status, error FROM runs WHERE run_id = $1`, []any{two}, &twoStatus, &twoError)
	require.Equal(t, "succeeded", oneStatus)
	require.Equal(t, int64(5), oneRows)
	require.Equal(t, sb.Usage(key).UnitsSpent, oneUnits)
	require.Equal(t, "failed", twoStatus)
	require.NotNil(t, twoError, "a run whose tasks all failed says why")

	// The list: both runs, the newer first, with what the table holds.
	r = etl(t, env, "runs")
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	require.Len(t, lines, 3, r.stdout)
	require.Regexp(t, `^\s*run\s+job\s+trigger\s+status\s+attempts\s+started\s+finished\s+duration\s+rows\s+units\s+error$`, lines[0])
	require.NotContains(t, lines[0], "scheduled for", "no run listed has a tick")
	require.Regexp(t, fmt.Sprintf(`^\s*%d\s+two\s+manual\s+failed\s+1\s+2026-11-21T03:00:00Z\s+2026-11-21T03:00:00Z\s+0s\s+0\s+0\s+the API refused the key \(HTTP 401: the API key is not valid\): check ETL_API_KEY$`, two), lines[1])
	require.Regexp(t, fmt.Sprintf(`^\s*%d\s+one\s+manual\s+succeeded\s+1\s+2026-11-21T03:00:00Z\s+2026-11-21T03:00:00Z\s+0s\s+5\s+%d$`, one, oneUnits), lines[2])

	r = etl(t, env, "runs", "--job", "one")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, " one ")
	require.NotContains(t, r.stdout, " two ")
	r = etl(t, env, "runs", "--limit", "1")
	require.Equal(t, exitOK, r.code, r.stderr)
	lines = strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	require.Len(t, lines, 4, r.stdout)
	require.Equal(t, "2 runs: 1 succeeded, 1 failed; the newest 1 of the 2 below", lines[0])
	require.Contains(t, lines[2], " two ")
	require.Regexp(t, `^1 of 2 runs not shown; --limit N lists the newest N, --all every one`, lines[3])
	r = etl(t, env, "runs", "--job", "nobody")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "no runs of job nobody\n", r.stdout)

	r = etl(t, env, "runs", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var listed []runs.RunRow
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &listed), r.stdout)
	require.Len(t, listed, 2)
	require.Equal(t, []int64{two, one}, []int64{listed[0].RunID, listed[1].RunID})
	require.Equal(t, "succeeded", listed[1].Status)
	require.Equal(t, oneRows, *listed[1].Rows)
	require.Equal(t, oneUnits, *listed[1].Units)
	require.NotNil(t, listed[1].Host)
	require.True(t, cliNow.Equal(listed[1].StartedAt))
	require.NotNil(t, listed[1].DurationSeconds)
	require.Zero(t, *listed[1].DurationSeconds)
	require.Nil(t, listed[1].Error)
	require.NotNil(t, listed[0].Error, "a run whose tasks all failed says why")
	require.Equal(t, "the API refused the key (HTTP 401: the API key is not valid): check ETL_API_KEY", *listed[0].Error)

	// One run: the header, the tasks done with their rows, the ledger.
	cps := checkpointsOf(t, dbURL, one)
	require.Len(t, cps, 3)
	var sumRows int64
	for _, c := range cps {
		sumRows += c.rows
	}
	require.Equal(t, oneRows, sumRows)
	var requests, reserved, spent, unsettled int64
	query(t, dbURL, `SELECT count(*), sum(reserved), coalesce(sum(spent), 0), count(*) FILTER (WHERE spent IS NULL)
		FROM unit_ledger WHERE run_id = $1`, []any{one}, &requests, &reserved, &spent, &unsettled)
	require.Equal(t, oneUnits, spent)
	require.Zero(t, unsettled)

	r = etl(t, env, "runs", "show", strconv.FormatInt(one, 10))
	require.Equal(t, exitOK, r.code, r.stderr)
	out := r.stdout
	require.Regexp(t, fmt.Sprintf(`(?m)^run\s+%d$`, one), out)
	require.Regexp(t, `(?m)^job\s+one$`, out)
	require.Regexp(t, `(?m)^status\s+succeeded$`, out)
	require.Regexp(t, `(?m)^attempts\s+1$`, out)
	require.Regexp(t, `(?m)^host\s+\S+:\d+$`, out)
	require.Regexp(t, `(?m)^resumed_at\s+-$`, out)
	require.Regexp(t, `(?m)^finished_at\s+2026-11-21T03:00:00Z$`, out)
	require.Regexp(t, `(?m)^rows\s+5$`, out)
	require.Regexp(t, fmt.Sprintf(`(?m)^units\s+%d$`, oneUnits), out)
	require.Regexp(t, `(?m)^error\s+-$`, out)
	require.Regexp(t, `(?m)^task\s+status\s+pages\s+rows\s+rejected\s+units\s+next_offset\s+updated_at\s+error$`, out)
	last := 0
	for _, c := range cps {
		line := regexp.MustCompile(fmt.Sprintf(`(?m)^%s\s+done\s+%d\s+%d\s+%d\s+%d\s+%d\s+2026-11-21T03:00:00Z$`,
			regexp.QuoteMeta(c.name), c.pages, c.rows, c.rejected, c.units, c.next))
		at := line.FindStringIndex(out)
		require.NotNil(t, at, "task %s in\n%s", c.name, out)
		require.Greater(t, at[0], last, "tasks by name")
		last = at[0]
	}
	require.Contains(t, out, fmt.Sprintf("\nledger: %d requests, %d units reserved, %d units spent, 0 requests unsettled\n",
		requests, reserved, spent))

	r = etl(t, env, "runs", "show", strconv.FormatInt(one, 10), "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var d runs.Detail
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d), r.stdout)
	require.Equal(t, one, d.Run.RunID)
	require.Equal(t, "one", d.Run.Job)
	require.Len(t, d.Tasks, len(cps))
	for i, task := range d.Tasks {
		require.Equal(t, cps[i].name, task.Name)
		require.Equal(t, "done", task.Status)
		require.Equal(t, cps[i].rows, task.Rows)
		require.Equal(t, cps[i].units, task.Units)
	}
	require.Equal(t, runs.LedgerTotals{Requests: requests, Reserved: reserved, Spent: spent, Unsettled: 0}, d.Ledger)

	// The failed run: a 401 (a wrong key) stopped it; it was not charged.
	r = etl(t, env, "runs", "show", strconv.FormatInt(two, 10))
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^status\s+failed$`, r.stdout)
	require.Regexp(t, `(?m)^keyword-metrics "seo" DE 2026-11\s+skipped\s+0\s+0\s+0\s+0\s+0\s+2026-11-21T03:00:00Z\s+the API refused the key \(HTTP 401: `, r.stdout)
	require.Contains(t, r.stdout, "\nledger: 1 requests, 20 units reserved, 0 units spent, 0 requests unsettled\n")
	require.NotContains(t, r.stdout, "sk-wrong-runs-987654321")
	require.NotContains(t, r.stdout, key)
}

// A run still marked running (its process may be alive or dead) for a cron
// tick, and a resumed one whose error runs over several lines and holds a
// key, written straight into runs: no command leaves such rows on demand.
func TestRunsShowsUnfinishedScheduledAndLongErrors(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": dbURL}
	var running, failed int64
	query(t, dbURL, `INSERT INTO runs (job, trigger, status, started_at, scheduled_for, host)
		VALUES ('nightly', 'schedule', 'running', '2026-11-21T02:00:00Z', '2026-11-21T02:00:00Z', 'box:42') RETURNING run_id`, nil, &running)
	query(t, dbURL, `INSERT INTO runs (job, status, started_at, finished_at, rows, units, attempts, resumed_at, error)
		VALUES ('adhoc', 'failed', '2026-11-21T01:00:00Z', '2026-11-21T01:02:03.5Z', 7, 90, 2, '2026-11-21T01:01:00Z',
		E'GET /overview?key=sk-stored-secret-1 failed: HTTP 500\nsecond line with detail') RETURNING run_id`, nil, &failed)

	// Its tasks' keys sort the other way round from their names.
	var n int
	query(t, dbURL, `WITH c AS (INSERT INTO task_checkpoints (run_id, task, endpoint, name, status, next_offset, pages, rows, rejected, units, error, updated_at)
		VALUES ($1, 'a-key', 'backlink_overview', 'zeta task', 'skipped', 0, 0, 0, 0, 0, 'budget exhausted', '2026-11-21T01:02:00Z'),
		       ($1, 'b-key', 'links', 'alpha task', 'failed', 100, 1, 100, 2, 100, E'HTTP 500\nretried 3 times', '2026-11-21T01:02:03Z')
		RETURNING 1) SELECT count(*) FROM c`, []any{failed}, &n)
	require.Equal(t, 2, n)

	r := etl(t, env, "runs")
	require.Equal(t, exitOK, r.code, r.stderr)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	require.Len(t, lines, 3, r.stdout)
	require.Regexp(t, `\s+scheduled for\s+error$`, lines[0])
	require.Regexp(t, fmt.Sprintf(`^\s*%d\s+nightly\s+schedule\s+running\s+1\s+2026-11-21T02:00:00Z\s+-\s+-\s+-\s+-\s+2026-11-21T02:00:00Z$`, running), lines[1])
	require.Regexp(t, fmt.Sprintf(`^\s*%d\s+adhoc\s+manual\s+failed\s+2\s+2026-11-21T01:00:00Z\s+2026-11-21T01:02:03Z\s+2m3.5s\s+7\s+90\s+-\s+GET /overview\?key=\[REDACTED\] failed: HTTP 500…$`, failed), lines[2])
	require.NotContains(t, r.stdout, "second line")
	require.NotContains(t, r.stdout, "sk-stored-secret-1")

	r = etl(t, env, "runs", "show", strconv.FormatInt(failed, 10))
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^resumed_at\s+2026-11-21T01:01:00Z$`, r.stdout)
	require.Regexp(t, `(?m)^error\s+GET /overview\?key=\[REDACTED\] failed: HTTP 500\n\s+second line with detail$`, r.stdout)
	require.NotContains(t, r.stdout, "sk-stored-secret-1")
	require.Regexp(t, `(?m)^alpha task\s+failed\s+1\s+100\s+2\s+100\s+100\s+2026-11-21T01:02:03Z\s+HTTP 500 retried 3 times\n`+
		`zeta task\s+skipped\s+0\s+0\s+0\s+0\s+0\s+2026-11-21T01:02:00Z\s+budget exhausted$`, r.stdout)
	require.Contains(t, r.stdout, "ledger: 0 requests, 0 units reserved, 0 units spent, 0 requests unsettled")

	r = etl(t, env, "runs", "show", strconv.FormatInt(running, 10), "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var d runs.Detail
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d), r.stdout)
	require.Equal(t, "running", d.Run.Status)
	require.Nil(t, d.Run.FinishedAt)
	require.Nil(t, d.Run.DurationSeconds)
	require.Nil(t, d.Run.Rows)
	require.Equal(t, "box:42", *d.Run.Host)
	require.True(t, time.Date(2026, 11, 21, 2, 0, 0, 0, time.UTC).Equal(*d.Run.ScheduledFor))
	require.Empty(t, d.Tasks)
	require.NotNil(t, d.Tasks, "an empty list, not null")
	r = etl(t, env, "runs", "show", strconv.FormatInt(running, 10))
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `(?m)^finished_at\s+-\nduration\s+-\nscheduled_for\s+2026-11-21T02:00:00Z\nrows\s+-\nunits\s+-$`, r.stdout)
	require.Contains(t, r.stdout, "\nno task checkpoints\n")
}

func TestRunsBadIDsAndUnknownRuns(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown run", []string{"runs", "show", "42"}, exitFailed, "run 42 not found"},
		{"unknown run as json", []string{"runs", "show", "42", "--json"}, exitFailed, "run 42 not found"},
		{"not a number", []string{"runs", "show", "abc"}, exitUsage, `run ID must be a positive whole number (see etl runs), got "abc"`},
		{"zero", []string{"runs", "show", "0"}, exitUsage, `got "0"`},
		{"negative", []string{"runs", "show", "--", "-3"}, exitUsage, `got "-3"`},
		{"no id", []string{"runs", "show"}, exitUsage, "accepts 1 arg(s), received 0"},
		{"two ids", []string{"runs", "show", "1", "2"}, exitUsage, "accepts 1 arg(s), received 2"},
		{"stray argument", []string{"runs", "42"}, exitUsage, `unknown command "42"`},
		{"limit zero", []string{"runs", "--limit", "0"}, exitUsage, "--limit must be at least 1, got 0"},
		{"limit not a number", []string{"runs", "--limit", "ten"}, exitUsage, `invalid argument "ten"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := etl(t, env, tc.args...)
			require.Equal(t, tc.code, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stderr, tc.want)
			require.Empty(t, r.stdout)
		})
	}

	r := etl(t, nil, "runs")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "no database: set DATABASE_URL")
}

func TestRunsOnAnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewEmptyDB(t)}
	for _, args := range [][]string{{"runs"}, {"runs", "show", "1"}} {
		r := etl(t, env, args...)
		require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
		require.Contains(t, r.stderr, "the database is not migrated to this build's schema (run `etl migrate up`)")
	}
}

// TestEveryCommandOnAnUnmigratedDatabase: every command that reads or
// writes the warehouse says to run `etl migrate up` when the database has
// no schema, or one of an older build, instead of a raw SQLSTATE (etl run
// and etl budget printed `relation "targets" does not exist`).
func TestEveryCommandOnAnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	jobs := writeSpec(t, "retention: {keep_months: 1}\n"+strings.Replace(cliSpec, "  - name: two\n", "  - name: two\n    schedule: \"0 3 * * *\"\n", 1))
	older := pgtest.NewDB(t)
	pool, err := pgxpool.New(t.Context(), older)
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `UPDATE schema_migrations SET version = version - 1`)
	require.NoError(t, err)
	pool.Close()
	for name, db := range map[string]string{"empty": pgtest.NewEmptyDB(t), "older": older} {
		env := map[string]string{"DATABASE_URL": db, "ETL_API_URL": "http://127.0.0.1:1", "ETL_API_KEY": "k"}
		for _, args := range [][]string{
			{"run", "--jobs", jobs, "--job", "one"},
			{"budget", "--jobs", jobs},
			{"backfill", "--jobs", jobs, "--job", "one", "--from", "2026-01", "--to", "2026-02"},
			{"retention", "--jobs", jobs, "--dry-run"},
			{"runs"},
			{"plan", "--jobs", jobs, "--job", "one"},
			{"schedule", "--jobs", jobs},
		} {
			r := etl(t, env, args...)
			require.Equal(t, exitFailed, r.code, "%s %v: %s", name, args, r.stdout+r.stderr)
			require.Contains(t, r.stderr, "run `etl migrate up`", "%s %v", name, args)
			require.NotContains(t, r.stderr, "SQLSTATE", "%s %v", name, args)
			if name == "older" {
				require.Contains(t, r.stderr, "this build needs", "%s %v", name, args)
			}
		}
	}
}

// TestRunsShowOfA300TaskRun: a run of 300 tasks, written straight into
// runs and task_checkpoints, shows its counts by status and per table
// first, then only the tasks not done or held, in natural order (n7 before
// n57 before n107), and a line counting the others; --status and --task
// list what they match, --json every task unless filtered.
func TestRunsShowOfA300TaskRun(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": dbURL}
	var id int64
	query(t, dbURL, `INSERT INTO runs (job, status, started_at, finished_at, rows, units)
		VALUES ('agency', 'partial', '2026-11-21T03:00:00Z', '2026-11-21T03:10:00Z', 2690, 121050) RETURNING run_id`, nil, &id)
	// n1..n300: every 50th from n7 failed (6), every 30th skipped (10),
	// every 20th from n1 held (15), the rest done (269) with 10 rows each.
	var n int
	query(t, dbURL, `WITH c AS (INSERT INTO task_checkpoints (run_id, task, endpoint, name, status, next_offset, pages, rows, rejected,
			units, error, updated_at, table_name, inserted, updated, unchanged, held_by, held_units)
		SELECT $1, 'k' || i, 'links', 'links n' || i || '.example (ROOT_DOMAIN)', s, 0, 1, CASE WHEN s = 'done' THEN 10 ELSE 0 END, 0,
			CASE WHEN s = 'done' THEN 450 ELSE 0 END, CASE s WHEN 'failed' THEN 'HTTP 500 retried 3 times' WHEN 'skipped' THEN 'budget exhausted' END,
			'2026-11-21T03:05:00Z', 'backlinks', CASE WHEN s = 'done' THEN 10 ELSE 0 END, 0, 0,
			CASE WHEN s = 'held' THEN 1 END, CASE WHEN s = 'held' THEN 450 END
		FROM (SELECT i, CASE WHEN i % 50 = 7 THEN 'failed' WHEN i % 30 = 0 THEN 'skipped' WHEN i % 20 = 1 THEN 'held' ELSE 'done' END AS s
			FROM generate_series(1, 300) AS i) AS t
		RETURNING 1) SELECT count(*) FROM c`, []any{id}, &n)
	require.Equal(t, 300, n)
	show := func(args ...string) string {
		t.Helper()
		r := etl(t, env, append([]string{"runs", "show", strconv.FormatInt(id, 10)}, args...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		return r.stdout
	}
	taskLines := func(out string) []string {
		return regexp.MustCompile(`(?m)^links n\d+\.example \(ROOT_DOMAIN\)\s+\w+\s`).FindAllString(out, -1)
	}
	name := func(line string) string { return strings.Fields(line)[1] }

	out := show()
	lines := strings.Split(out, "\n")
	require.Regexp(t, `^tasks\s+300: 269 done, 15 held, 6 failed, 10 skipped, 0 refused, 0 running$`, lines[4], "the counts come first:\n%s", out)
	loads := strings.Index(out, "loaded per table, over every attempt of the run:\n")
	require.Positive(t, loads)
	require.Regexp(t, `(?m)^\s*backlinks\s+2690\s+2690\s+0\s+0\s+0\s*$`, out)
	got := taskLines(out)
	require.Len(t, got, 16, "the failed and skipped tasks:\n%s", out)
	require.Less(t, loads, strings.Index(out, got[0]), "summaries before tasks")
	var names []string
	for _, l := range got {
		names = append(names, name(l))
	}
	require.Equal(t, []string{"n7.example", "n30.example", "n57.example", "n60.example", "n90.example", "n107.example", "n120.example",
		"n150.example", "n157.example", "n180.example", "n207.example", "n210.example", "n240.example", "n257.example", "n270.example",
		"n300.example"}, names, "natural order")
	require.Contains(t, out, "\n269 done and 15 held tasks not shown; --status done,held lists them\n")
	require.LessOrEqual(t, len(strings.Split(strings.TrimRight(out, "\n"), "\n")), 60, out)

	out = show("--status", "failed")
	got = taskLines(out)
	require.Len(t, got, 6, out)
	for _, l := range got {
		require.Regexp(t, `\sfailed\s`, l)
	}
	require.Equal(t, "n7.example", name(got[0]))
	require.Equal(t, "n257.example", name(got[5]))
	require.Contains(t, out, "\n269 done, 15 held and 10 skipped tasks not shown; --status done,held,skipped lists them\n")

	out = show("--status", "done,held", "--status", "skipped")
	got = taskLines(out)
	require.Len(t, got, 294, out)
	require.Equal(t, []string{"n1.example", "n2.example", "n3.example"}, []string{name(got[0]), name(got[1]), name(got[2])}, "n1, n2, n3, not n1, n10, n100")
	require.Equal(t, "n300.example", name(got[293]))

	out = show("--task", "n1?.example")
	require.Equal(t, []string{"n10.example", "n11.example", "n12.example", "n13.example", "n14.example", "n15.example", "n16.example",
		"n17.example", "n18.example", "n19.example"}, func() []string {
		var ns []string
		for _, l := range taskLines(out) {
			ns = append(ns, name(l))
		}
		return ns
	}())
	out = show("--task", "n24", "--status", "held")
	require.Len(t, taskLines(out), 1, out) // the only held one of n24, n240..n249
	require.Contains(t, out, "links n241.example (ROOT_DOMAIN)")
	out = show("--status", "refused")
	require.Contains(t, out, "\nno task matches --status refused\n")

	var d runs.Detail
	require.NoError(t, json.Unmarshal([]byte(show("--json")), &d))
	require.Len(t, d.Tasks, 300, "--json lists every task")
	require.Equal(t, "links n1.example (ROOT_DOMAIN)", d.Tasks[0].Name)
	require.Equal(t, "links n300.example (ROOT_DOMAIN)", d.Tasks[299].Name)
	d = runs.Detail{}
	require.NoError(t, json.Unmarshal([]byte(show("--json", "--status", "failed")), &d))
	require.Len(t, d.Tasks, 6, "--json with --status lists those that match")

	r := etl(t, env, "runs", "show", strconv.FormatInt(id, 10), "--status", "broken")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, `--status must be one of done, held, failed, skipped, refused, running, got "broken"`)
}

// TestRunsShowTheLedgersUnitsOfAKilledRun: a run killed (SIGKILL) mid-way
// never writes runs.units, while the ledger holds what it spent: etl runs
// and etl runs show (the table and --json) show the ledger's units for
// it, as the report does. They showed "-" (null in --json).
func TestRunsShowTheLedgersUnitsOfAKilledRun(t *testing.T) {
	t.Parallel()
	const key = "sk-runs-kill"
	bin := etlBinary(t)
	_, env := runWorld(t, key)
	db := env["DATABASE_URL"]
	jobs := writeSpec(t, "jobs:\n  - name: killed\n    targets: [{url: n6000.example, scope: ROOT_DOMAIN}]\n    endpoints: {links: {limit: 100}}\n")
	p := startETL(t, bin, env, "--log-format", "json", "--log-level", "debug", "run", "--jobs", jobs, "--now", cliNow.Format(time.RFC3339))
	p.killAfterPages(t, 3)
	code, _ := p.wait()
	require.Equal(t, -1, code, "killed")
	spent := ledgerUnits(t, db)
	require.Positive(t, spent)

	r := etl(t, env, "runs", "show", "1")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, fmt.Sprintf(`(?m)^units\s+%d$`, spent), r.stdout)
	r = etl(t, env, "runs", "show", "1", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var shown struct {
		Run struct {
			Units *int64 `json:"units"`
		} `json:"run"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown), r.stdout)
	require.NotNil(t, shown.Run.Units, r.stdout)
	require.Equal(t, spent, *shown.Run.Units)

	r = etl(t, env, "runs", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, fmt.Sprintf(`"units": %d`, spent))
	r = etl(t, env, "runs")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, fmt.Sprintf(`(?m)^\s+1\s+killed\s.*\s%d\s*$`, spent), r.stdout)
}
