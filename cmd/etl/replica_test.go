package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/seoetl/etl/internal/failover"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/pipeline"
)

// TestReadersOnAStandby: etl budget and etl plan, which guard money,
// refuse a standby and say how stale it is, and work through a URL that
// names both servers with target_session_attrs=read-write; etl run
// refuses a standby before it asks anything of the API; etl runs and
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
		require.Contains(t, r.stderr, "needs the primary, and the database at DATABASE_URL is a standby")
		require.Contains(t, r.stderr, "its last replayed commit was")
		r = etl(t, map[string]string{"DATABASE_URL": rep.URL}, args...)
		require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	}

	r := etl(t, map[string]string{"DATABASE_URL": rep.StandbyURL, "ETL_API_URL": "http://127.0.0.1:1", "ETL_API_KEY": "k"},
		"run", "--jobs", "../../jobs.yaml", "--job", "example", "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "a run needs the primary, and the database at DATABASE_URL is a standby")

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

// TestRunSaysWhatAFailoverDid: etl run's summary, in text and in JSON,
// says what the run found after its database failed over.
func TestRunSaysWhatAFailoverDid(t *testing.T) {
	t.Parallel()
	sum := &pipeline.Summary{Job: "example", RunID: 7, Attempt: 1, Failover: &failover.Report{Checks: 1, LostCommits: 15, Rebooked: 11,
		UnitsRebooked: 39460, PagesReloaded: 12, Resumed: 317 * time.Millisecond}}
	var out strings.Builder
	writeSummary(&out, sum, nil)
	require.Contains(t, out.String(), "failover: the database lost 15 commits of the run (a standby that lagged behind took over, or the server crashed with synchronous_commit off): "+
		"11 ledger rows booked again (39460 units), 12 pages loaded again from the answers kept, 0 units bought twice; the run went on after 317ms\n")
	doc, err := json.Marshal(summaryJSON(sum, nil))
	require.NoError(t, err)
	require.Contains(t, string(doc), `"failover":{"checks":1,"lost_commits":15,"ledger_rows_rebooked":11,"units_rebooked":39460,"pages_reloaded":12,"pages_lost":0,"units_bought_twice":0,"resumed_seconds":0.317}`)
	out.Reset()
	sum.Failover = nil
	writeSummary(&out, sum, nil)
	require.NotContains(t, out.String(), "failover")
}

// TestReplicatedComposeNamesBothServers: the compose file of a primary and
// a standby (docker-compose.replicated.yml, which the tests cannot run:
// no Docker here) gives its etl services URLs that parse, name both
// servers, and route writes to the one that takes them and reads of etl
// runs to a standby; the primary waits for a standby's flush.
func TestReplicatedComposeNamesBothServers(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("../../docker-compose.replicated.yml")
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
		Configs map[string]struct {
			Content string `yaml:"content"`
		} `yaml:"configs"`
	}
	require.NoError(t, yaml.Unmarshal(text, &compose))
	interpolate := strings.NewReplacer("${POSTGRES_PASSWORD:-etl}", "etl", "$$", "$")
	for _, svc := range []string{"migrate", "scheduler"} {
		env := compose.Services[svc].Environment
		for key, attrs := range map[string]string{"DATABASE_URL": "read-write", "ETL_READ_DATABASE_URL": "prefer-standby"} {
			u, ok := env[key]
			if !ok && key == "ETL_READ_DATABASE_URL" && svc == "migrate" {
				continue
			}
			require.True(t, ok, "%s has no %s", svc, key)
			cfg, err := pgxpool.ParseConfig(interpolate.Replace(u))
			require.NoError(t, err, "%s %s", svc, key)
			hosts := []string{cfg.ConnConfig.Host}
			for _, fb := range cfg.ConnConfig.Fallbacks {
				hosts = append(hosts, fb.Host)
			}
			require.ElementsMatch(t, []string{"primary", "standby"}, slices.Compact(slices.Sorted(slices.Values(hosts))), "%s %s", svc, key)
			require.Equal(t, attrs, targetAttrs(u), "%s %s", svc, key)
			require.NotNil(t, cfg.ConnConfig.ValidateConnect, "%s %s: pgx checks each host's role", svc, key)
		}
	}
	require.Contains(t, interpolate.Replace(compose.Configs["primary-init"].Content), "synchronous_standby_names = '*'")
	require.Contains(t, interpolate.Replace(compose.Configs["primary-init"].Content), `"$PGDATA/pg_hba.conf"`)
}

// targetAttrs is the target_session_attrs of a URL's query.
func targetAttrs(u string) string {
	_, q, _ := strings.Cut(u, "?")
	v, _ := url.ParseQuery(q)
	return v.Get("target_session_attrs")
}
