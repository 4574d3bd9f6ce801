package load_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/load"
)

// TestAPageWaitsOnceForAPartitionAnotherLoaderMade: a transaction that
// attaches a partition is visible a moment before it sends the cache
// invalidations that tell other connections of it, and sends them before
// it releases the partition lock. So a loader routes rows to a partition
// it found attached but did not make only after it has waited once for
// that lock (here held by a transaction standing in for the attaching
// one): a page that did not wait failed now and then with "no partition
// of relation ... found for row". Once it has waited, it does not again.
func TestAPageWaitsOnceForAPartitionAnotherLoaderMade(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	other, err := load.New(load.Config{Pool: pool})
	require.NoError(t, err)
	for _, name := range []string{"links", "overview"} { // the direct copy, and the staged upsert
		ep := endpoint(t, name)
		require.NoError(t, other.EnsurePartitions(t.Context(), ep, []time.Time{nov}))
		id, err := l.Target(t.Context(), "a-"+name+".com", catalog.RootDomain)
		require.NoError(t, err)
		row := map[string]any{"backlinks_count": 1}
		if name == "links" {
			row = map[string]any{"source_url": "https://s.example/", "target_url": "https://a.com/", "anchor": "a", "image_url": "", "page_score": 1}
		}

		hold := func() pgx.Tx {
			tx, err := pool.Begin(t.Context())
			require.NoError(t, err)
			// A failing test must not leave it open: the pool's Close
			// would wait for it for ever.
			t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
			_, err = tx.Exec(t.Context(), "LOCK TABLE "+pgx.Identifier{ep.Table}.Sanitize()+" IN SHARE UPDATE EXCLUSIVE MODE")
			require.NoError(t, err)
			return tx
		}
		attaching := hold()
		done := make(chan load.Result)
		go func() {
			rec := record(t, mem, ep, []map[string]any{row})
			defer rec.Release()
			var res load.Result
			err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
				var err error
				res, err = l.Load(context.Background(), tx, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: nov, Record: rec})
				return err
			})
			if err != nil {
				res = load.Result{Rows: -1}
			}
			done <- res
		}()
		// The page waits for the partition lock: a backend waits for a
		// lock on the table.
		for {
			var waiting bool
			require.NoError(t, pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM pg_locks
				WHERE relation = $1::regclass AND NOT granted)`, ep.Table).Scan(&waiting))
			if waiting {
				break
			}
			select {
			case res := <-done:
				t.Fatalf("%s: the page loaded (%+v) without waiting for the partition lock", name, res)
			default:
			}
		}
		require.NoError(t, attaching.Commit(t.Context()))
		require.Equal(t, int64(1), (<-done).Inserted, name)

		// Synced: the same month loads while the lock is held.
		attaching = hold()
		rec := record(t, mem, ep, []map[string]any{row})
		res := loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: nov.Add(time.Hour), Record: rec})
		rec.Release()
		require.Equal(t, int64(1), res.Rows, name)
		require.NoError(t, attaching.Rollback(t.Context()))
	}
}
