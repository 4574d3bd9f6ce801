package pgcluster

import (
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
