package pipeline_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/internal/runs"
)

// syntheticRuns writes nRuns nightly runs of job, started a day apart from
// first, of tasks tasks each (90% done, 10% held), with a settled ledger
// row per done task: what a daily job of tasks/3 targets writes.
func syntheticRuns(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, job string, first time.Time, nRuns, tasks int) {
	tb.Helper()
	for n := range nRuns {
		started := first.AddDate(0, 0, n)
		var id int64
		require.NoError(tb, pool.QueryRow(ctx, `INSERT INTO runs (job, trigger, started_at, finished_at, status, rows, units)
			VALUES ($1, 'schedule', $2::timestamptz, $2::timestamptz + interval '1 hour', 'succeeded', 0, 0) RETURNING run_id`, job, started).Scan(&id))
		_, err := pool.Exec(ctx, `INSERT INTO task_checkpoints (run_id, task, endpoint, name, status, pages, rows, units, updated_at,
				table_name, inserted, updated, unchanged)
			SELECT $1, 'overview|n' || i || '.example', 'overview', 'overview n' || i || '.example',
				CASE WHEN i % 10 = 0 THEN 'held' ELSE 'done' END, 1, 1, 45, $2::timestamptz + i * interval '100 ms',
				'backlink_overview', 0, 1, 0
			FROM generate_series(1, $3::int) i`, id, started, tasks)
		require.NoError(tb, err)
		_, err = pool.Exec(ctx, `INSERT INTO unit_ledger (run_id, job, endpoint, target, reserved, spent, reserved_at, settled_at)
			SELECT $1, $4, 'overview', 'n' || i || '.example ROOT_DOMAIN', 45, 45, $2::timestamptz + i * interval '100 ms', $2::timestamptz + i * interval '100 ms'
			FROM generate_series(1, $3::int) i WHERE i % 10 <> 0`, id, started, tasks, job)
		require.NoError(tb, err)
	}
	_, err := pool.Exec(ctx, `ANALYZE runs, task_checkpoints, unit_ledger`)
	require.NoError(tb, err)
}

// BenchmarkCompactRun30000Tasks: compaction of one run of 30,000 tasks
// (a daily job of 10,000 targets) with a later run of the job beside it.
// With ETL_EXPLAIN=FILE it writes the plan of the DELETE of its checkpoints.
//
//	go test -run '^$' -bench CompactRun30000Tasks -benchtime 3x ./pipeline/
func BenchmarkCompactRun30000Tasks(b *testing.B) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewDB(b))
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	first := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	log := slog.New(slog.DiscardHandler)
	for b.Loop() {
		b.StopTimer()
		_, err := pool.Exec(ctx, `TRUNCATE runs, task_checkpoints, unit_ledger, run_task_counts, run_table_totals, task_closed_months CASCADE`)
		require.NoError(b, err)
		syntheticRuns(ctx, b, pool, "nightly", first, 3, 30000)
		if os.Getenv("ETL_EXPLAIN") != "" {
			explainCompaction(ctx, b, pool)
		}
		b.StartTimer()
		rep, err := runs.CompactRuns(ctx, pool, log, 24*time.Hour, first.AddDate(0, 0, 10), false, 0)
		require.NoError(b, err)
		require.Equal(b, 2, rep.Runs)
		require.Equal(b, int64(2*30000), rep.CheckpointsDeleted)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/2, "ms/run")
}

// BenchmarkCompactYearBacklog: the first compaction after keep_run_detail
// is set on a year of a daily job of 3,000 tasks (1,000 targets): 364
// runs, 1.1 million checkpoints. With ETL_EXPLAIN=FILE it writes the
// plan of the DELETE of the oldest run's checkpoints.
//
//	go test -run '^$' -bench CompactYearBacklog -benchtime 1x ./pipeline/
func BenchmarkCompactYearBacklog(b *testing.B) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewDB(b))
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	first := time.Date(2025, 1, 1, 3, 0, 0, 0, time.UTC)
	log := slog.New(slog.DiscardHandler)
	for b.Loop() {
		b.StopTimer()
		_, err := pool.Exec(ctx, `TRUNCATE runs, task_checkpoints, unit_ledger, run_task_counts, run_table_totals, task_closed_months CASCADE`)
		require.NoError(b, err)
		syntheticRuns(ctx, b, pool, "nightly", first, 365, 3000)
		if os.Getenv("ETL_EXPLAIN") != "" {
			explainCompaction(ctx, b, pool)
		}
		b.StartTimer()
		rep, err := runs.CompactRuns(ctx, pool, log, 24*time.Hour, first.AddDate(1, 0, 2), false, 0)
		require.NoError(b, err)
		require.Equal(b, 364, rep.Runs)
	}
}

// explainCompaction writes to the file ETL_EXPLAIN names the plan of compacting the oldest run's
// checkpoints (rolled back).
func explainCompaction(ctx context.Context, b *testing.B, pool *pgxpool.Pool) {
	b.Helper()
	tx, err := pool.Begin(ctx)
	require.NoError(b, err)
	defer func() { _ = tx.Rollback(ctx) }()
	var id int64
	require.NoError(b, tx.QueryRow(ctx, `SELECT min(run_id) FROM runs`).Scan(&id))
	rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) DELETE FROM task_checkpoints c WHERE c.run_id = $1 AND (c.status = 'held' AND EXISTS (
				SELECT FROM task_checkpoints d JOIN runs dr ON dr.run_id = d.run_id
				WHERE d.task = c.task AND (d.updated_at, d.run_id) > (c.updated_at, c.run_id) AND dr.job = $2)
			OR c.status = 'done' AND EXISTS (
				SELECT FROM task_checkpoints d JOIN runs dr ON dr.run_id = d.run_id
				WHERE d.task = c.task AND d.status = 'done' AND (d.updated_at, d.run_id) > (c.updated_at, c.run_id)
					AND dr.job = $2 AND (dr.trigger = 'probe') = ($3 = 'probe')))`, id, "nightly", "schedule")
	require.NoError(b, err)
	var plan []string
	for rows.Next() {
		var line string
		require.NoError(b, rows.Scan(&line))
		plan = append(plan, line)
	}
	require.NoError(b, rows.Err())
	require.NoError(b, os.WriteFile(os.Getenv("ETL_EXPLAIN"), []byte("run "+strconv.FormatInt(id, 10)+":\n"+strings.Join(plan, "\n")+"\n"), 0o644))
}
