package pgcluster

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStandbyLosesWhatItDidNotReceive starts a primary and a streaming
// standby of it, cuts the standby off, commits on the primary, crashes
// the primary and promotes the standby: the standby has what it received
// and not what came after, and accepts writes.
func TestStandbyLosesWhatItDidNotReceive(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	primary, err := Start(t.Context(), Options{TempRoot: root, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, primary.Stop()) })
	exec1(t, primary.URL("postgres"), `CREATE TABLE facts (n int)`)
	exec1(t, primary.URL("postgres"), `INSERT INTO facts VALUES (1)`)

	standby, err := StartStandby(t.Context(), primary, Options{TempRoot: root, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, standby.Stop()) })
	require.True(t, query[bool](t, standby.URL("postgres"), `SELECT pg_is_in_recovery()`))
	require.Equal(t, int64(1), query[int64](t, standby.URL("postgres"), `SELECT count(*) FROM facts`))
	exec1(t, primary.URL("postgres"), `INSERT INTO facts VALUES (2)`)
	lsn := query[string](t, primary.URL("postgres"), `SELECT pg_current_wal_insert_lsn()::text`)
	require.Eventually(t, func() bool {
		return query[bool](t, standby.URL("postgres"), `SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn`, lsn)
	}, 30*time.Second, 10*time.Millisecond, "the standby replays what the primary commits")

	require.NoError(t, standby.StopReceiving(t.Context()))
	exec1(t, primary.URL("postgres"), `INSERT INTO facts VALUES (3)`)
	require.NoError(t, primary.Crash())
	require.NoError(t, standby.Promote(t.Context()))
	require.False(t, query[bool](t, standby.URL("postgres"), `SELECT pg_is_in_recovery()`))
	require.Equal(t, "1,2", query[string](t, standby.URL("postgres"), `SELECT string_agg(n::text, ',' ORDER BY n) FROM facts`))
	exec1(t, standby.URL("postgres"), `INSERT INTO facts VALUES (4)`)
}

// TestStandbyOfACitusCoordinatorTakesOver (Citus suite: it runs with
// TEST_CITUS_URL, which says Citus is installed, though it starts a
// cluster of its own, since it crashes the coordinator): a standby of a
// Citus coordinator starts with the coordinator's settings (citus
// preloaded), replays its distributed tables' metadata, and, once
// promoted and named the coordinator, takes the coordinator's place:
// its pg_dist_node and the worker's name it, it writes distributed and
// reference tables, and the worker reaches it for a write to a
// reference table (whose placements include the coordinator).
func TestStandbyOfACitusCoordinatorTakesOver(t *testing.T) {
	t.Parallel()
	if os.Getenv("TEST_CITUS_URL") == "" {
		t.Log("the Citus suite did not run: TEST_CITUS_URL is unset (make test-citus runs it where Citus is installed)")
		return
	}
	root := testRoot(t)
	c, err := StartCitus(t.Context(), Options{TempRoot: root, Logger: testLogger(t)}, 1)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Stop()) })
	coord, err := c.Database(t.Context(), "etl")
	require.NoError(t, err)
	for _, sql := range []string{
		`CREATE TABLE owners (owner int PRIMARY KEY)`,
		`SELECT create_reference_table('owners')`,
		`CREATE TABLE facts (owner int, n int)`,
		`SELECT create_distributed_table('facts', 'owner')`,
		`INSERT INTO owners VALUES (1), (2)`,
		`INSERT INTO facts VALUES (1, 1), (2, 2)`,
	} {
		exec1(t, coord, sql)
	}

	standby, err := StartStandby(t.Context(), c.Coordinator, Options{TempRoot: root, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, standby.Stop()) })
	lsn := query[string](t, c.Coordinator.URL("postgres"), `SELECT pg_current_wal_insert_lsn()::text`)
	require.Eventually(t, func() bool {
		return query[bool](t, standby.URL("postgres"), `SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn`, lsn)
	}, 30*time.Second, 10*time.Millisecond, "the standby replays what the coordinator commits")
	require.Equal(t, int64(2), query[int64](t, standby.URL("etl"), `SELECT count(*) FROM facts`), "the standby reads the distributed table")

	require.NoError(t, c.Coordinator.Crash())
	require.NoError(t, standby.PromoteCoordinator(t.Context(), "etl"))
	exec1(t, standby.URL("etl"), `INSERT INTO facts VALUES (3, 3)`)
	exec1(t, standby.URL("etl"), `INSERT INTO owners VALUES (3)`)
	require.Equal(t, int64(3), query[int64](t, standby.URL("etl"), `SELECT count(*) FROM facts`))
	named := `SELECT nodeport FROM pg_dist_node WHERE groupid = 0`
	require.Equal(t, int32(standby.Port()), query[int32](t, standby.URL("etl"), named), "the promoted node names itself the coordinator")
	worker := c.Workers[0].URL("etl")
	require.Equal(t, int32(standby.Port()), query[int32](t, worker, named), "the worker learns the new coordinator")
	exec1(t, worker, `INSERT INTO owners VALUES (4)`)
	require.Equal(t, int64(4), query[int64](t, standby.URL("etl"), `SELECT count(*) FROM owners`), "the worker reached the new coordinator")
}
