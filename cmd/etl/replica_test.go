package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
)

// TestReadersOnAStandby: etl budget and etl plan, which guard money,
// refuse a standby and say how stale it is, and work through a URL that
// names both servers with target_session_attrs=read-write; etl runs and
// runs show read a standby alone (the primary dead), through
// ETL_READ_DATABASE_URL, --read-database-url or a multi-host URL with
// target_session_attrs=prefer-standby, and say on stderr that they read a
// standby and how far its replay has come.
func TestReadersOnAStandby(t *testing.T) {
	t.Parallel()
	rep := pgtest.NewReplicated(t, false, nil)
	var id int64
	query(t, rep.PrimaryURL, `INSERT INTO runs (job, status, started_at, finished_at, rows, units)
		VALUES ('example', 'succeeded', $1, $2, 1826, 71399) RETURNING run_id`, []any{cliNow, cliNow.Add(6 * time.Second)}, &id)
	var lsn string
	query(t, rep.SuperURL, `SELECT pg_current_wal_insert_lsn()::text`, nil, &lsn)
	require.Eventually(t, func() bool {
		var replayed bool
		query(t, rep.StandbyURL, `SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn`, []any{lsn}, &replayed)
		return replayed
	}, 30*time.Second, 10*time.Millisecond, "the standby replays the run")

	for _, args := range [][]string{
		{"budget", "--jobs", "../../jobs.yaml", "--now", cliNow.Format(time.RFC3339)},
		{"plan", "--jobs", "../../jobs.yaml", "--job", "example", "--now", cliNow.Format(time.RFC3339)},
	} {
		r := etl(t, map[string]string{"DATABASE_URL": rep.StandbyURL}, args...)
		require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
		require.Contains(t, r.stderr, "reads the primary, and the database at DATABASE_URL is a standby")
		require.Contains(t, r.stderr, "its last replayed commit was")
		r = etl(t, map[string]string{"DATABASE_URL": rep.URL}, args...)
		require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	}

	require.NoError(t, rep.Primary.Crash())
	preferStandby := fmt.Sprintf("postgres://etl_run@127.0.0.1:%d,127.0.0.1:%d/etl?sslmode=disable&target_session_attrs=prefer-standby",
		rep.Primary.Port(), rep.Standby.Port())
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
	}{
		"ETL_READ_DATABASE_URL": {map[string]string{"ETL_READ_DATABASE_URL": rep.StandbyURL}, nil},
		"--read-database-url":   {map[string]string{"DATABASE_URL": rep.PrimaryURL}, []string{"--read-database-url", rep.StandbyURL}},
		"prefer-standby":        {map[string]string{"ETL_READ_DATABASE_URL": preferStandby}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			r := etl(t, tc.env, append([]string{"runs"}, tc.args...)...)
			require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stdout, "example")
			require.Contains(t, r.stdout, "71399")
			require.Contains(t, r.stderr, "reading from a standby")
			r = etl(t, tc.env, append([]string{"runs", "show", fmt.Sprint(id)}, tc.args...)...)
			require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stdout, "succeeded")
			require.Contains(t, r.stderr, "reading from a standby")
		})
	}
}
