package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/migrations"
)

// TestPartitionLayoutMigrationKilledMidway: migration 16 moves the year
// 2024 of backlink_history, then waits on a lock an analyst holds on a
// month of 2025, and its backend is ended there (pg_terminate_backend, a
// restart of the server): 2024 is moved, 2025 and 2026 are not. The error
// says why in a line (not the 270 lines of the migration), the change
// says where the schema is (16, dirty: read again on a new connection,
// not "version 0, clean"), the next up says how to go on, and going on
// as it says moves the rest with every row.
func TestPartitionLayoutMigrationKilledMidway(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewEmptyDB(t)
	_, err := migrations.Goto(ctx, url, 15)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, `INSERT INTO targets (url, scope) VALUES ('a.example', 'ROOT_DOMAIN')`)
	require.NoError(t, err)
	first, last := time.Date(2024, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for m := first; !m.After(last); m = m.AddDate(0, 1, 0) {
		oldPartition(t, conn, "backlink_history", "target_id", m)
	}
	_, err = conn.Exec(ctx, `
		INSERT INTO backlink_history (target_id, month, observed_at, score, backlinks_count, month_date)
		SELECT 1, m, '2026-11-20', 10, extract(month FROM m)::int, m
		FROM generate_series('2024-11-01'::date, '2026-11-01', '1 month') m`)
	require.NoError(t, err)
	before := contents(t, conn)

	analyst, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer analyst.Close(context.Background())
	tx, err := analyst.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `LOCK TABLE backlink_history_p202501 IN ACCESS SHARE MODE`)
	require.NoError(t, err)
	analystPID := analyst.PgConn().PID()
	killed := make(chan error, 1)
	go func() {
		// The migration's backend, once it waits for the analyst's lock.
		var pid int32
		for pid == 0 {
			err := conn.QueryRow(ctx, `SELECT coalesce((SELECT pid FROM pg_stat_activity
				WHERE $1 = ANY (pg_blocking_pids(pid))), 0)`, analystPID).Scan(&pid)
			if err != nil {
				_ = tx.Rollback(ctx) // let it go on: the test fails below
				killed <- err
				return
			}
		}
		_, err := conn.Exec(ctx, `SELECT pg_terminate_backend($1, 10000)`, pid)
		killed <- err
	}()
	change, err := migrations.UpBy(ctx, url, 1)
	require.NoError(t, <-killed)
	require.NoError(t, tx.Rollback(ctx))
	require.ErrorContains(t, err, "migration 16 (0016_partition_layout) failed")
	require.ErrorContains(t, err, "terminating connection due to administrator command")
	require.NotContains(t, err.Error(), "DO $migration$", "the migration's text is not the error")
	require.Equal(t, uint(15), change.From)
	require.Equal(t, uint(16), change.To, "where the schema is")
	require.True(t, change.Dirty)
	require.Contains(t, leaves(t, conn, "backlink_history"), "backlink_history_y2024 < backlink_history", "2024 moved")
	require.Contains(t, leaves(t, conn, "backlink_history"), "backlink_history_p202501_h00 < backlink_history_p202501", "2025 not")

	_, err = migrations.UpBy(ctx, url, 1)
	require.ErrorContains(t, err, "migration 16 stopped midway; it goes on where it stopped when run again: etl migrate force 15, then etl migrate up")
	_, err = migrations.Force(ctx, url, 15)
	require.NoError(t, err)
	change, err = migrations.UpBy(ctx, url, 1)
	require.NoError(t, err)
	require.Equal(t, uint(16), change.To)
	require.False(t, change.Dirty)
	require.Equal(t, []string{"backlink_history_y2024 < backlink_history", "backlink_history_y2025 < backlink_history",
		"backlink_history_y2026 < backlink_history"}, leaves(t, conn, "backlink_history"))
	require.Equal(t, before["backlink_history"], contents(t, conn)["backlink_history"], "every row")
}
