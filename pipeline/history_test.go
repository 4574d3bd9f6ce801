package pipeline_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/pgcluster"
	"github.com/seoetl/etl/internal/testworld"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/migrations"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

const historySpec = `jobs:
  - name: history
    targets: [{url: n2500.example, scope: ROOT_DOMAIN}, {url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {summary: {}}
    keywords: {keywords: [seo tools, backlink checker], countries: [US]}
`

// TestBackfillOfAllHistoryAtConcurrency16 backfills the whole history the
// API has (2012-01 to 2026-11, 179 months) of summary and keyword metrics
// for two targets and two keywords, 16 tasks at a time, into a PostgreSQL
// of its own with the default settings (max_connections 100,
// max_locks_per_transaction 64): every task loads, none runs out of
// shared memory for locks, and the history lands in a partition per year
// (keyword metrics: 15).
func TestBackfillOfAllHistoryAtConcurrency16(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{
		Settings: map[string]string{"max_connections": "100", "max_locks_per_transaction": "64"},
		Logger:   slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cluster.Stop()) })
	admin, err := pgx.Connect(ctx, cluster.URL("postgres"))
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE DATABASE history")
	require.NoError(t, err)
	var conns, locks string
	require.NoError(t, admin.QueryRow(ctx, "SELECT current_setting('max_connections'), current_setting('max_locks_per_transaction')").Scan(&conns, &locks))
	require.Equal(t, [2]string{"100", "64"}, [2]string{conns, locks}, "PostgreSQL's defaults")
	require.NoError(t, admin.Close(ctx))
	dbURL := cluster.URL("history")
	require.NoError(t, migrations.Up(ctx, dbURL))
	cfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	srv := httptest.NewServer(testworld.NewSandbox(t, nil, sandbox.Config{RatePerSecond: -1, MaxConcurrent: -1}).Handler())
	t.Cleanup(srv.Close)
	client, err := extract.New(extract.Config{BaseURL: srv.URL, APIKey: "test-key", RatePerSecond: -1, MaxConcurrent: -1})
	require.NoError(t, err)

	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(historySpec), runNow)
	require.NoError(t, err)
	job := spec.Jobs[0]
	from, to := time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	tasks, _, err := job.BackfillTasks(jobspec.BackfillRequest{From: from, To: to}, runNow)
	require.NoError(t, err)
	require.Len(t, tasks, 4*179)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: pool, Allocator: mem,
		Now: func() time.Time { return runNow }, Concurrency: 16})
	require.NoError(t, err)
	sum, err := r.RunWith(ctx, job, pipeline.RunOptions{Trigger: "backfill", Tasks: tasks})
	require.NoError(t, err)
	require.Zero(t, sum.Failed())

	count := func(q string) int64 {
		var n int64
		require.NoError(t, pool.QueryRow(context.WithoutCancel(ctx), q).Scan(&n))
		return n
	}
	// Summary history from each target's first backlink (the sandbox's
	// n2500.example has 100 months of it), keyword metrics from 2012.
	var rows int64
	for _, tr := range sum.Tasks {
		if tr.Task.Endpoint.Name == "summary" {
			rows += tr.Rows
		}
	}
	require.Equal(t, rows, count(`SELECT count(*) FROM backlink_history`))
	require.Equal(t, int64(100), count(`SELECT count(*) FROM backlink_history h JOIN targets t USING (target_id) WHERE t.url = 'n2500.example'`))
	require.Equal(t, count(`SELECT count(DISTINCT date_trunc('year', month)) FROM backlink_history`),
		count(`SELECT count(*) FROM pg_partition_tree('backlink_history') WHERE isleaf`), "a partition per year of history")
	require.Equal(t, int64(2*179), count(`SELECT count(*) FROM keyword_metrics`))
	require.Equal(t, int64(15), count(`SELECT count(*) FROM pg_partition_tree('keyword_metrics') WHERE isleaf`), "2012 to 2026")
	require.Equal(t, int64(2), count(`SELECT count(*) FROM latest_months WHERE fact_table = 'backlink_history' AND month = '2026-11-01'`))
	require.Equal(t, int64(2), count(`SELECT count(*) FROM keyword_metrics_latest WHERE month = '2026-11-01'`))
}
