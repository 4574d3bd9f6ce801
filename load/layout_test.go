package load_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/load"
)

// The layout follows from the catalog: tables of a handful of rows per
// target and month by year, paged lists by month, nothing below.
func TestLayoutOf(t *testing.T) {
	t.Parallel()
	want := map[string]load.Layout{
		"overview": load.Yearly, "summary": load.Yearly, "score-profile": load.Yearly, "comparison": load.Yearly,
		"keyword-metrics": load.Yearly,
		"links":           load.Monthly, "ref-domains": load.Monthly, "ref-ips": load.Monthly, "pages": load.Monthly,
		"anchors": load.Monthly, "competitors": load.Monthly, "matrix": load.Monthly,
	}
	require.Len(t, want, len(catalog.All()), "every endpoint")
	for name, lay := range want {
		require.Equal(t, lay, load.LayoutOf(endpoint(t, name)), name)
	}
	jan, dec := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	from, to := load.Yearly.Span(dec.Add(36 * time.Hour))
	require.Equal(t, [2]time.Time{jan, jan.AddDate(1, 0, 0)}, [2]time.Time{from, to})
	from, to = load.Monthly.Span(dec.Add(36 * time.Hour))
	require.Equal(t, [2]time.Time{dec, dec.AddDate(0, 1, 0)}, [2]time.Time{from, to})
	require.Equal(t, "keyword_metrics_y2026", load.Yearly.PartitionName("keyword_metrics", dec))
	require.Equal(t, "backlinks_p202612", load.Monthly.PartitionName("backlinks", dec))
}

// A page locks the partitions of its own months, never those of every
// month the table holds: the count of relations a page's transaction
// holds locks on is the same with one month stored as with fifteen years.
func TestPageLocksDoNotGrowWithHistory(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	id, err := l.Target(t.Context(), "a.com", catalog.RootDomain)
	require.NoError(t, err)
	kw := endpoint(t, "keyword-metrics")
	links := endpoint(t, "links")
	summary := endpoint(t, "summary")
	kwRec := record(t, mem, kw, []map[string]any{{"search_volume": 10}})
	defer kwRec.Release()
	linkRec := record(t, mem, links, []map[string]any{
		{"source_url": "https://s.example/1", "target_url": "https://a.com/", "anchor": "a", "image_url": ""},
		{"source_url": "https://s.example/2", "target_url": "https://a.com/", "anchor": "b", "image_url": ""},
	})
	defer linkRec.Release()
	sumRec := record(t, mem, summary, []map[string]any{{"score": 1, "month_date": nov}, {"score": 2, "month_date": oct}})
	defer sumRec.Release()
	batches := []load.Batch{
		{Endpoint: kw, Context: []any{"seo", "US"}, Month: nov, ObservedAt: nov, Record: kwRec},
		{Endpoint: links, TargetID: id, Month: nov, ObservedAt: nov, Record: linkRec},
		{Endpoint: summary, TargetID: id, Month: nov, ObservedAt: nov, Record: sumRec},
	}
	// locks counts the relations the page's transaction holds a lock on
	// once it is loaded, as a rerun (every row a conflict) and as a first
	// load. Each statement is planned afresh (a plan reused from the
	// statement cache locks only the indexes it uses, a new one every
	// index of its tables), so that the counts compare.
	locks := func(b load.Batch, first bool) int {
		var n int
		require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(t.Context(), "SET LOCAL plan_cache_mode = force_custom_plan"); err != nil {
				return err
			}
			page, err := l.NewPage(t.Context(), tx, b.Endpoint)
			if err != nil {
				return err
			}
			page.FirstLoad = first
			if err := page.Stage(t.Context(), b); err != nil {
				return err
			}
			if _, err := page.Upsert(t.Context()); err != nil {
				return err
			}
			return tx.QueryRow(t.Context(), `SELECT count(DISTINCT relation) FROM pg_locks
				WHERE pid = pg_backend_pid() AND locktype = 'relation'`).Scan(&n)
		}))
		return n
	}
	before := map[string]int{}
	for _, b := range batches {
		locks(b, true) // makes the partitions
		before[b.Endpoint.Name] = locks(b, false)
		require.Less(t, before[b.Endpoint.Name], 20, b.Endpoint.Name)
	}

	// Fifteen years of months, as a backfill from 2012 leaves them.
	var months []time.Time
	for m := time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC); m.Before(nov); m = m.AddDate(0, 1, 0) {
		months = append(months, m)
	}
	for _, b := range batches {
		require.NoError(t, l.EnsurePartitions(t.Context(), b.Endpoint, months))
	}
	require.Equal(t, int64(15), count(t, pool, `SELECT count(*) FROM pg_partition_tree('keyword_metrics') WHERE isleaf`))
	require.Equal(t, int64(len(months)+1), count(t, pool, `SELECT count(*) FROM pg_partition_tree('backlinks') WHERE isleaf`))
	for _, b := range batches {
		require.Equal(t, before[b.Endpoint.Name], locks(b, false), "%s: a rerun's page after %d months", b.Endpoint.Name, len(months)+1)
		require.LessOrEqual(t, locks(b, true), before[b.Endpoint.Name]+2, "%s: a first load's page", b.Endpoint.Name)
	}
	for _, b := range batches[1:] {
		holds, err := l.Holds(t.Context(), b.Endpoint, id, nov)
		require.NoError(t, err)
		require.True(t, holds, fmt.Sprint(b.Endpoint.Name))
	}
}
