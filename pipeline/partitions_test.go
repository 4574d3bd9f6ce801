package pipeline_test

import (
	"context"
	"hash/fnv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
)

// TestAnAnalystCannotStallAPartition: a role granted etl_analyst holds
// the advisory key under which partitions were made (derivable from the
// table's name) and keeps a transaction open that read every fact table,
// and a run whose pages need new month partitions still loads. Before,
// the first page of a month waited on the advisory lock, or behind the
// open read on CREATE TABLE ... PARTITION OF (ACCESS EXCLUSIVE on the
// table), for as long as the analyst liked, with the job's lock held and
// its page paid for.
func TestAnAnalystCannotStallAPartition(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	analyst, err := pgx.Connect(ctx, pgtest.NewRole(t, f.DBURL, "etl_analyst"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = analyst.Close(context.Background()) })
	var pid int32
	require.NoError(t, analyst.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	tx, err := analyst.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	for _, ep := range catalog.All() {
		h := fnv.New64a()
		h.Write([]byte("etl:partition:" + ep.Table))
		_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(h.Sum64()))
		require.NoError(t, err)
		_, err = tx.Exec(ctx, "SELECT 1 FROM "+pgx.Identifier{ep.Table}.Sanitize()+" LIMIT 1")
		require.NoError(t, err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := f.TryRun(t, `jobs:
  - name: p
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}, summary: {limit: 3}, links: {limit: 50, max_rows: 50}}
    keywords: {keywords: [seo], countries: [US]}
`, runNow)
		done <- err
	}()
	// A watchdog, not a wait: fail as soon as the analyst blocks the run
	// (on a connection of its own: the run's pages may hold the pool's).
	watch, err := pgx.Connect(ctx, f.DBURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = watch.Close(context.Background()) })
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			require.NoError(t, err)
			require.Equal(t, int64(3), f.Count(t, `SELECT count(*) FROM backlink_history`))
			require.Equal(t, int64(50), f.Count(t, `SELECT count(*) FROM backlinks`))
			return
		case <-tick.C:
			var blocked []string
			rows, err := watch.Query(ctx, `SELECT left(query, 80) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid)
			require.NoError(t, err)
			blocked, err = pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			if len(blocked) > 0 {
				_ = tx.Rollback(context.Background()) // let the run end
				<-done
				t.Fatalf("the analyst's session blocks the run: %q", blocked)
			}
		}
	}
}
