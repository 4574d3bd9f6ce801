package migrations_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/migrations"
	"github.com/seoetl/etl/transform"
)

// oldPartition makes the month partition of table for m as the loader of
// version 15 made it: HASH-partitioned 8 ways on hashCol, then attached.
func oldPartition(t *testing.T, conn *pgx.Conn, table, hashCol string, m time.Time) {
	t.Helper()
	name := fmt.Sprintf("%s_p%s", table, m.Format("200601"))
	ddl := fmt.Sprintf("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS) PARTITION BY HASH (%s);\n", name, table, hashCol)
	for i := range 8 {
		ddl += fmt.Sprintf("CREATE TABLE %s_h%02d PARTITION OF %s FOR VALUES WITH (MODULUS 8, REMAINDER %d);\n", name, i, name, i)
	}
	ddl += fmt.Sprintf("ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s');",
		table, name, m.Format(time.DateOnly), m.AddDate(0, 1, 0).Format(time.DateOnly))
	_, err := conn.Exec(t.Context(), ddl)
	require.NoError(t, err)
}

// factTables are the fact tables with the column their old months were
// hashed on.
var factTables = map[string]string{
	"backlink_overview": "target_id", "backlink_history": "target_id", "keyword_metrics": "keyword",
	"backlinks": "target_id", "matrix": "set_id", "score_profile": "target_id",
}

// contents is an order-independent account of what the fact tables and
// their latest views hold: per relation, its row count and a sum of
// hashes of its rows.
func contents(t *testing.T, conn *pgx.Conn) map[string]string {
	t.Helper()
	out := map[string]string{}
	for table := range factTables {
		for _, rel := range []string{table, table + "_latest"} {
			var sum string
			require.NoError(t, conn.QueryRow(t.Context(), fmt.Sprintf(
				`SELECT count(*) || ':' || coalesce(sum(('x' || left(md5(r::text), 15))::bit(60)::bigint), 0) FROM %s r`, rel)).Scan(&sum))
			out[rel] = sum
		}
	}
	return out
}

// leaves lists the leaf partitions of table with their parents.
func leaves(t *testing.T, conn *pgx.Conn, table string) []string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `SELECT relid::text || ' < ' || parentrelid::text FROM pg_partition_tree($1::regclass) WHERE isleaf ORDER BY 1`, table)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return names
}

// TestPartitionLayoutMigration: rows loaded into the layout of version 15
// (months hashed 8 ways) are all there after migration 16, in partitions
// by year or month without hashes below; the latest views show what they
// showed; the loader goes on loading; and migrating down restores the old
// layout with every row, and up again the new.
func TestPartitionLayoutMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewEmptyDB(t)
	_, err := migrations.Goto(ctx, url, 15)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(context.Background())

	// Two targets and a target set; 25 months of summary history and
	// keyword metrics (two keywords), 3 months of overviews, score
	// profiles, links and matrix rows, as version 15 loaded them.
	_, err = conn.Exec(ctx, `
		INSERT INTO targets (url, scope) VALUES ('a.example', 'ROOT_DOMAIN'), ('b.example', 'ROOT_DOMAIN');
		INSERT INTO target_sets (name, scope, urls) VALUES ('rivals', 'ROOT_DOMAIN', '{a.example,b.example}')`)
	require.NoError(t, err)
	first, last := time.Date(2024, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for m := first; !m.After(last); m = m.AddDate(0, 1, 0) {
		for _, table := range []string{"backlink_history", "keyword_metrics"} {
			oldPartition(t, conn, table, factTables[table], m)
		}
		if m.After(last.AddDate(0, -3, 0)) {
			for _, table := range []string{"backlink_overview", "backlinks", "matrix", "score_profile"} {
				oldPartition(t, conn, table, factTables[table], m)
			}
		}
	}
	_, err = conn.Exec(ctx, `
		INSERT INTO backlink_history (target_id, month, observed_at, score, backlinks_count, month_date)
		SELECT t, m, '2026-11-20', t * 10, extract(month FROM m)::int * t, m
		FROM generate_series(1, 2) t, generate_series('2024-11-01'::date, '2026-11-01', '1 month') m
		WHERE t = 1 OR m < '2026-11-01';
		INSERT INTO keyword_metrics (keyword, country, month, observed_at, search_volume, trends)
		SELECT k, 'US', m, '2026-11-20', length(k) * 100, ARRAY[1, 2, 3]
		FROM unnest(ARRAY['seo', 'backlinks']) k, generate_series('2024-11-01'::date, '2026-11-01', '1 month') m;
		INSERT INTO backlink_overview (target_id, month, observed_at, backlinks_count)
		SELECT t, m, m + interval '1 day', t * 1000 FROM generate_series(1, 2) t, generate_series('2026-09-01'::date, '2026-11-01', '1 month') m
		WHERE t = 1 OR m < '2026-11-01';
		INSERT INTO score_profile (target_id, month, observed_at, domain_score, domains_count)
		SELECT t, m, m + interval '1 day', s, s * t FROM generate_series(1, 2) t, generate_series('2026-09-01'::date, '2026-11-01', '1 month') m,
		       generate_series(0, 100) s;
		INSERT INTO backlinks (target_id, month, observed_at, source_url, target_url, anchor, image_url, domain_score)
		SELECT t, m, m + interval '1 day', 'https://s' || i || '.example/', 'https://a.example/', 'anchor ' || i, '', i % 100
		FROM generate_series(1, 2) t, generate_series('2026-09-01'::date, '2026-11-01', '1 month') m, generate_series(1, 50) i;
		INSERT INTO matrix (set_id, month, observed_at, domain, backlinks_counts, matches_count)
		SELECT 1, m, m + interval '1 day', 'd' || i || '.example', ARRAY[i, 0], 1
		FROM generate_series('2026-09-01'::date, '2026-11-01', '1 month') m, generate_series(1, 20) i`)
	require.NoError(t, err)
	// A month that retention detached with its hash partitions: not the
	// migration's business.
	_, err = conn.Exec(ctx, `ALTER TABLE backlinks DETACH PARTITION backlinks_p202609;
		ALTER TABLE backlinks_p202609 RENAME TO backlinks_p202609_detached`)
	require.NoError(t, err)
	before := contents(t, conn)
	require.Len(t, leaves(t, conn, "backlink_history"), 25*8)

	change, err := migrations.UpBy(ctx, url, 1)
	require.NoError(t, err)
	require.Equal(t, uint(16), change.To)
	require.False(t, change.Dirty)
	require.Equal(t, before, contents(t, conn), "every row is there, and the latest views show the same rows")

	// The new layout: a table per year or per month, nothing below.
	years := func(table string, ys ...int) []string {
		var out []string
		for _, y := range ys {
			out = append(out, fmt.Sprintf("%s_y%d < %s", table, y, table))
		}
		return out
	}
	require.Equal(t, years("backlink_history", 2024, 2025, 2026), leaves(t, conn, "backlink_history"))
	require.Equal(t, years("keyword_metrics", 2024, 2025, 2026), leaves(t, conn, "keyword_metrics"))
	require.Equal(t, years("backlink_overview", 2026), leaves(t, conn, "backlink_overview"))
	require.Equal(t, years("score_profile", 2026), leaves(t, conn, "score_profile"))
	require.Equal(t, []string{"backlinks_p202610 < backlinks", "backlinks_p202611 < backlinks"}, leaves(t, conn, "backlinks"))
	require.Equal(t, []string{"matrix_p202609 < matrix", "matrix_p202610 < matrix", "matrix_p202611 < matrix"}, leaves(t, conn, "matrix"))
	for _, ep := range catalog.All() {
		for _, leaf := range leaves(t, conn, ep.Table) {
			var lo time.Time
			var name string
			require.NoError(t, conn.QueryRow(ctx, `SELECT relname, (regexp_match(pg_get_expr(relpartbound, oid), $$FROM \('([^']*)'\)$$))[1]::date
				FROM pg_class WHERE oid = $1::regclass`, leaf[:len(leaf)-len(" < "+ep.Table)]).Scan(&name, &lo))
			require.Equal(t, load.LayoutOf(ep).PartitionName(ep.Table, lo), name, "the migration lays out %s as the loader does", ep.Table)
		}
	}
	var detached int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'backlinks_p202609_detached'::regclass`).Scan(&detached))
	require.Equal(t, 8, detached, "a detached table is left as it was")
	var latest []string
	rows, err := conn.Query(ctx, `SELECT fact_table || ' ' || owner_id || ' ' || month FROM latest_months ORDER BY 1`)
	require.NoError(t, err)
	latest, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{
		"backlink_history 1 2026-11-01", "backlink_history 2 2026-10-01",
		"backlink_overview 1 2026-11-01", "backlink_overview 2 2026-10-01",
		"backlinks 1 2026-11-01", "backlinks 2 2026-11-01",
		"matrix 1 2026-11-01",
		"score_profile 1 2026-11-01", "score_profile 2 2026-11-01",
	}, latest)

	// The loader goes on: a new month of keyword metrics, a rerun of the
	// last month of summary history.
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	l, err := load.New(load.Config{Pool: pool})
	require.NoError(t, err)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	kw, _ := catalog.Lookup("keyword-metrics")
	summary, _ := catalog.Lookup("summary")
	dec := last.AddDate(0, 1, 0)
	for _, c := range []struct {
		b    load.Batch
		want load.Result
	}{
		{load.Batch{Endpoint: kw, Context: []any{"seo", "US"}, Month: dec, ObservedAt: dec}, load.Result{Rows: 1, Inserted: 1}},
		{load.Batch{Endpoint: summary, TargetID: 1, Month: last, ObservedAt: dec}, load.Result{Rows: 1, Updated: 1}},
	} {
		// Every field NULL but summary's month_date.
		b := array.NewRecordBuilder(mem, transform.Schema(c.b.Endpoint))
		for i, f := range c.b.Endpoint.Fields {
			if f.Name == "month_date" {
				b.Field(i).(*array.Date32Builder).Append(arrow.Date32FromTime(last))
				continue
			}
			b.Field(i).AppendNull()
		}
		rec := b.NewRecord()
		b.Release()
		c.b.Record = rec
		var res load.Result
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var err error
			res, err = l.Load(ctx, tx, c.b)
			return err
		})
		rec.Release()
		require.NoError(t, err)
		require.Equal(t, c.want, res, c.b.Endpoint.Name)
	}
	require.Equal(t, years("keyword_metrics", 2024, 2025, 2026), leaves(t, conn, "keyword_metrics"), "December 2026 is in 2026")
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM keyword_metrics_latest WHERE month = $1`, dec).Scan(&n))
	require.Equal(t, 1, n, "the new month is seo's latest")
	_, err = conn.Exec(ctx, `DELETE FROM keyword_metrics WHERE month = '2026-12-01';
		UPDATE keyword_latest_months SET month = '2026-11-01' WHERE keyword = 'seo';
		UPDATE backlink_history SET score = 10, backlinks_count = 11, observed_at = '2026-11-20' WHERE target_id = 1 AND month = '2026-11-01'`)
	require.NoError(t, err)
	require.Equal(t, before, contents(t, conn), "the loads undone")

	// Down: the old layout, every row; up again.
	change, err = migrations.DownBy(ctx, url, 1)
	require.NoError(t, err)
	require.Equal(t, uint(15), change.To)
	require.False(t, change.Dirty)
	require.Equal(t, before, contents(t, conn), "every row is there after the way down")
	hist := leaves(t, conn, "backlink_history")
	require.Len(t, hist, 25*8)
	require.Equal(t, "backlink_history_p202411_h00 < backlink_history_p202411", hist[0])
	require.Len(t, leaves(t, conn, "backlinks"), 2*8)
	var tables int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname IN ('latest_months', 'keyword_latest_months')`).Scan(&tables))
	require.Zero(t, tables)

	_, err = migrations.UpBy(ctx, url, 1)
	require.NoError(t, err)
	require.Equal(t, before, contents(t, conn))
	require.Equal(t, years("backlink_history", 2024, 2025, 2026), leaves(t, conn, "backlink_history"))

	// A migration that stopped midway is run again (force 15, up): each
	// step finds its work done and goes on.
	_, err = migrations.Force(ctx, url, 15)
	require.NoError(t, err)
	change, err = migrations.UpBy(ctx, url, 1)
	require.NoError(t, err)
	require.Equal(t, uint(16), change.To)
	require.Equal(t, before, contents(t, conn))
	require.Equal(t, years("backlink_history", 2024, 2025, 2026), leaves(t, conn, "backlink_history"))
}
