package load_test

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/transform"
)

func endpoint(t *testing.T, name string) *catalog.Endpoint {
	t.Helper()
	ep, ok := catalog.Lookup(name)
	require.True(t, ok, name)
	return ep
}

// record builds a record of ep's schema from rows of field name -> value
// (absent fields are NULL).
func record(t *testing.T, mem memory.Allocator, ep *catalog.Endpoint, rows []map[string]any) arrow.Record {
	t.Helper()
	b := array.NewRecordBuilder(mem, transform.Schema(ep))
	defer b.Release()
	for _, row := range rows {
		for i, f := range ep.Fields {
			v, ok := row[f.Name]
			fb := b.Field(i)
			if !ok || v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				if n, ok := v.(int); ok {
					v = int64(n)
				}
				fb.Append(v.(int64))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.BooleanBuilder:
				fb.Append(v.(bool))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(v.(time.Time).UnixMicro()))
			case *array.Date32Builder:
				fb.Append(arrow.Date32FromTime(v.(time.Time)))
			case *array.ListBuilder:
				fb.Append(true)
				switch vb := fb.ValueBuilder().(type) {
				case *array.StringBuilder:
					vb.AppendValues(v.([]string), nil)
				case *array.Int64Builder:
					vb.AppendValues(v.([]int64), nil)
				}
			default:
				t.Fatalf("no test conversion for %T", fb)
			}
		}
	}
	return b.NewRecord()
}

// newLoader gives a test a fresh database, a loader on it and an Arrow
// allocator that fails the test if memory is left unreleased.
func newLoader(t *testing.T) (*load.Loader, *pgxpool.Pool, *memory.CheckedAllocator) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	pool := pgtest.NewPool(t)
	l, err := load.New(load.Config{Pool: pool})
	require.NoError(t, err)
	return l, pool, mem
}

func loadBatch(t *testing.T, l *load.Loader, pool *pgxpool.Pool, b load.Batch) load.Result {
	t.Helper()
	var res load.Result
	require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		var err error
		res, err = l.Load(t.Context(), tx, b)
		return err
	}))
	return res
}

var (
	nov = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	oct = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
)

func TestLoadSummaryPartitionsByYear(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	pool := pgtest.NewPool(t)
	l, err := load.New(load.Config{Pool: pool})
	require.NoError(t, err)
	ep := endpoint(t, "summary")
	id, err := l.Target(t.Context(), "example.com", catalog.RootDomain)
	require.NoError(t, err)
	again, err := l.Target(t.Context(), "example.com", catalog.RootDomain)
	require.NoError(t, err)
	require.Equal(t, id, again, "a target is created once")

	dec25 := time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)
	rec := record(t, mem, ep, []map[string]any{
		{"score": 50, "backlinks_count": 100, "month_date": nov, "url": "example.com"},
		{"score": 49, "backlinks_count": 90, "month_date": oct, "url": "example.com"},
		{"score": 48, "backlinks_count": 80, "month_date": dec25, "url": "example.com"},
	})
	defer rec.Release()
	observed := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)
	res := loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: observed, Record: rec})
	require.Equal(t, load.Result{Rows: 3, Inserted: 3}, res)

	// Each row sits in the partition of its month_date's year, a table
	// without partitions of its own.
	rows, err := pool.Query(t.Context(), `SELECT month, tableoid::regclass::text, backlinks_count FROM backlink_history ORDER BY month`)
	require.NoError(t, err)
	type placed struct {
		Month     time.Time
		Partition string
		Backlinks int64
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[placed])
	require.NoError(t, err)
	require.Equal(t, []placed{
		{dec25, "backlink_history_y2025", 80},
		{oct, "backlink_history_y2026", 90},
		{nov, "backlink_history_y2026", 100},
	}, got)
	var leaves []string
	rows, err = pool.Query(t.Context(), `SELECT relid::text FROM pg_partition_tree('backlink_history') WHERE isleaf ORDER BY 1`)
	require.NoError(t, err)
	leaves, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"backlink_history_y2025", "backlink_history_y2026"}, leaves)
	var latest0 time.Time
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT month FROM latest_months WHERE fact_table = 'backlink_history' AND owner_id = $1`, id).Scan(&latest0))
	require.Equal(t, nov, latest0, "the target's newest month")

	// Rerun with the same values: nothing is written, observed_at included.
	res = loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: observed.Add(time.Hour), Record: rec})
	require.Equal(t, load.Result{Rows: 3, Unchanged: 3}, res)
	var latest time.Time
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT max(observed_at) FROM backlink_history`).Scan(&latest))
	require.True(t, latest.Equal(observed))

	// A changed value updates in place; the later observation wins.
	rec2 := record(t, mem, ep, []map[string]any{{"score": 51, "backlinks_count": 101, "month_date": nov, "url": "example.com"}})
	defer rec2.Release()
	res = loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: observed.Add(2 * time.Hour), Record: rec2})
	require.Equal(t, load.Result{Rows: 1, Updated: 1}, res)
	var n, score int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*), max(score) FROM backlink_history`).Scan(&n, &score))
	require.Equal(t, int64(3), n)
	require.Equal(t, int64(51), score)
}

func TestLoadDeduplicatesWithinBatchLastWins(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	ep := endpoint(t, "summary")
	id, err := l.Target(t.Context(), "a.com", catalog.Page)
	require.NoError(t, err)
	rec := record(t, mem, ep, []map[string]any{
		{"score": 1, "month_date": nov},
		{"score": 2, "month_date": nov},
		{"score": 3, "month_date": nov},
	})
	defer rec.Release()
	res := loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: nov, Record: rec})
	require.Equal(t, load.Result{Rows: 3, Inserted: 1, Unchanged: 2}, res)
	var score int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT score FROM backlink_history`).Scan(&score))
	require.Equal(t, int64(3), score)
}

func TestLoadKeywordMetricsTypes(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	ep := endpoint(t, "keyword-metrics")
	rec := record(t, mem, ep, []map[string]any{{
		"competitive_density": 7, "cpc": 1.25, "intents": []string{"COMMERCIAL"}, "keyword_difficulty": 40,
		"number_of_results": 123456789, "search_volume": 880, "serp_features": []string{},
		"trends": []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
	}})
	defer rec.Release()
	res := loadBatch(t, l, pool, load.Batch{Endpoint: ep, Context: []any{"café", "FR"}, Month: oct, ObservedAt: nov, Record: rec})
	require.Equal(t, int64(1), res.Inserted)
	var (
		cpc      string
		intents  []string
		features []string
		trends   []int64
		part     string
	)
	require.NoError(t, pool.QueryRow(t.Context(),
		`SELECT cpc::text, intents, serp_features, trends, tableoid::regclass::text FROM keyword_metrics WHERE keyword = 'café' AND country = 'FR' AND month = '2026-10-01'`).
		Scan(&cpc, &intents, &features, &trends, &part))
	require.Equal(t, "1.25", cpc)
	require.Equal(t, []string{"COMMERCIAL"}, intents)
	require.Empty(t, features)
	require.Len(t, trends, 12)
	require.Equal(t, "keyword_metrics_y2026", part)
	var latest time.Time
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT month FROM keyword_latest_months WHERE keyword = 'café' AND country = 'FR'`).Scan(&latest))
	require.Equal(t, oct, latest)
}

// Many loaders creating the same partitions at once never collide.
func TestEnsurePartitionsConcurrently(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	dec25 := time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		endpoint string
		want     []string
	}{
		{"overview", []string{"backlink_overview_y2025", "backlink_overview_y2026"}},
		{"links", []string{"backlinks_p202512", "backlinks_p202610", "backlinks_p202611"}},
	} {
		ep := endpoint(t, tc.endpoint)
		g, ctx := errgroup.WithContext(t.Context())
		for range 8 {
			l, err := load.New(load.Config{Pool: pool}) // separate loaders, like separate processes
			require.NoError(t, err)
			g.Go(func() error { return l.EnsurePartitions(ctx, ep, []time.Time{oct, nov, dec25}) })
		}
		require.NoError(t, g.Wait())
		rows, err := pool.Query(t.Context(), `SELECT relid::text FROM pg_partition_tree($1::regclass) WHERE isleaf ORDER BY 1`, ep.Table)
		require.NoError(t, err)
		leaves, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Equal(t, tc.want, leaves, "one partition per year or month, nothing below")
	}
}

// The migrated tables have exactly the columns, types and keys the catalog
// says, so the SQL migrations cannot drift from the one source of truth.
func TestSchemaMatchesCatalog(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	for _, name := range []string{"overview", "summary", "keyword-metrics",
		"links", "ref-domains", "ref-ips", "pages", "anchors", "score-profile", "competitors", "comparison", "matrix"} {
		ep := endpoint(t, name)
		t.Run(name, func(t *testing.T) {
			rows, err := pool.Query(t.Context(), `
				SELECT column_name, data_type || CASE WHEN data_type = 'ARRAY' THEN ':' || udt_name ELSE '' END, '', is_nullable = 'NO'
				FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`, ep.Table)
			require.NoError(t, err)
			got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[load.Column])
			require.NoError(t, err)
			var want []load.Column
			for _, c := range load.Columns(ep) {
				typ := c.PGType
				switch typ {
				case "text[]":
					typ = "ARRAY:_text"
				case "bigint[]":
					typ = "ARRAY:_int8"
				}
				want = append(want, load.Column{Name: c.Name, PGType: typ, NotNull: c.NotNull})
			}
			if load.RowKey(ep) {
				want = append(want, load.Column{Name: "row_key", PGType: "uuid", NotNull: true})
			}
			require.Equal(t, want, got)

			var pk []string
			require.NoError(t, pool.QueryRow(t.Context(), `
				SELECT array_agg(a.attname ORDER BY k.ord)
				FROM pg_index i CROSS JOIN unnest(i.indkey) WITH ORDINALITY k(attnum, ord)
				JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
				WHERE i.indrelid = $1::regclass AND i.indisprimary`, ep.Table).Scan(&pk))
			require.Equal(t, load.ConflictKey(ep), pk)
		})
	}
}

func TestDocumentCommentsEveryColumn(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	require.NoError(t, load.Document(t.Context(), pool))
	require.NoError(t, load.Document(t.Context(), pool), "idempotent")
	var missing []string
	require.NoError(t, pool.QueryRow(t.Context(), `
		SELECT coalesce(array_agg(c.relname || '.' || a.attname), '{}')
		FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		  AND c.relname NOT LIKE 'schema_migrations%'
		  AND col_description(c.oid, a.attnum) IS NULL`).Scan(&missing))
	require.Empty(t, missing)
	var doc string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT obj_description('backlink_overview'::regclass)`).Scan(&doc))
	require.Contains(t, doc, "45 per request")
}

func TestQuarantineKeepsEveryByte(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	l, err := load.New(load.Config{Pool: pool})
	require.NoError(t, err)
	rows := []load.Rejected{
		{Endpoint: "summary", TargetID: 7, Request: "url=a.com scope=PAGE", Line: 3, Raw: "abc;1;2", Reason: `column "score": "abc" is not an integer`, ObservedAt: nov},
		{Endpoint: "keyword-metrics", Request: "keyword=x", Line: 2, Raw: "bad\xff\x00row", Reason: "not UTF-8", ObservedAt: nov},
	}
	require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error { return l.Quarantine(t.Context(), tx, rows) }))

	type stored struct {
		Endpoint string
		TargetID *int64
		Line     int
		Raw      string
		RawBytes []byte
		Reason   string
	}
	q, err := pool.Query(t.Context(), `SELECT endpoint, target_id, line, raw, raw_bytes, reason FROM quarantine ORDER BY quarantine_id`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(q, pgx.RowToStructByPos[stored])
	require.NoError(t, err)
	seven := int64(7)
	require.Equal(t, []stored{
		{"summary", &seven, 3, "abc;1;2", nil, `column "score": "abc" is not an integer`},
		{"keyword-metrics", nil, 2, "bad\uFFFD\uFFFDrow", []byte("bad\xff\x00row"), "not UTF-8"},
	}, got)
}

// Page transactions holding every connection of the pool still get their
// partitions: creation never waits for a pool connection.
func TestLoadWithEveryPoolConnectionBusy(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	require.NoError(t, err)
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	defer pool.Close()
	l, err := load.New(load.Config{Pool: pool})
	require.NoError(t, err)
	ep := endpoint(t, "keyword-metrics")
	g, ctx := errgroup.WithContext(t.Context())
	for i, kw := range []string{"a", "b"} {
		rec := record(t, mem, ep, []map[string]any{{"keyword_difficulty": i}})
		defer rec.Release()
		month := time.Date(2020+i, 1, 1, 0, 0, 0, 0, time.UTC) // a new partition each
		g.Go(func() error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := l.Load(ctx, tx, load.Batch{Endpoint: ep, Context: []any{kw, "US"}, Month: month, ObservedAt: nov, Record: rec})
				return err
			})
		})
	}
	require.NoError(t, g.Wait())
	var n int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM keyword_metrics`).Scan(&n))
	require.Equal(t, int64(2), n)
}

func TestOlderObservationNeverOverwritesNewer(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	ep := endpoint(t, "overview")
	id, err := l.Target(t.Context(), "a.com", catalog.RootDomain)
	require.NoError(t, err)
	newer := record(t, mem, ep, []map[string]any{{"backlinks_count": 200}})
	defer newer.Release()
	older := record(t, mem, ep, []map[string]any{{"backlinks_count": 100}})
	defer older.Release()
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: at, Record: newer})
	res := loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: at.Add(-time.Hour), Record: older})
	require.Equal(t, load.Result{Rows: 1, Unchanged: 1}, res)
	var n int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT backlinks_count FROM backlink_overview`).Scan(&n))
	require.Equal(t, int64(200), n)
}

// A month partition detached (say, by a retention job) is noticed on the
// next page, even by a long-lived loader, and reported plainly.
func TestDetachedPartitionIsReported(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	ep := endpoint(t, "overview")
	id, err := l.Target(t.Context(), "a.com", catalog.RootDomain)
	require.NoError(t, err)
	rec := record(t, mem, ep, []map[string]any{{"backlinks_count": 1}})
	defer rec.Release()
	loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: nov, Record: rec})
	_, err = pool.Exec(t.Context(), `ALTER TABLE backlink_overview DETACH PARTITION backlink_overview_y2026`)
	require.NoError(t, err)
	err = pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		_, err := l.Load(t.Context(), tx, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: nov, Record: rec})
		return err
	})
	require.ErrorContains(t, err, "backlink_overview_y2026 exists but is not a partition of backlink_overview")

	_, err = pool.Exec(t.Context(), `DROP TABLE backlink_overview_y2026`)
	require.NoError(t, err)
	res := loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: nov, Record: rec})
	require.Equal(t, int64(1), res.Inserted, "a dropped partition is created again")
}

// Links key on long text: a row_key stands in for it in the primary key,
// so URLs longer than a btree entry load, de-duplicate and update in place.
func TestLinksWithLongURLsUpsertOnTheirRowKey(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	ep := endpoint(t, "links")
	require.True(t, load.RowKey(ep))
	id, err := l.Target(t.Context(), "a.com", catalog.RootDomain)
	require.NoError(t, err)
	long := "https://a.com/" + strings.Repeat("x", 3000)
	link := func(anchor string, score int) map[string]any {
		return map[string]any{"source_url": long, "target_url": "https://a.com/", "anchor": anchor, "image_url": "", "page_score": score}
	}
	rec := record(t, mem, ep, []map[string]any{link("one", 1), link("two", 2), link("one", 3)})
	defer rec.Release()
	res := loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: nov, Record: rec})
	require.Equal(t, load.Result{Rows: 3, Inserted: 2, Unchanged: 1}, res, "the two rows of anchor one are one link; the later wins")

	again := record(t, mem, ep, []map[string]any{link("one", 4), link("two", 2)})
	defer again.Release()
	res = loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: nov.Add(time.Hour), Record: again})
	require.Equal(t, load.Result{Rows: 2, Updated: 1, Unchanged: 1}, res)
	var scores []int64
	q, err := pool.Query(t.Context(), `SELECT page_score FROM backlinks ORDER BY anchor`)
	require.NoError(t, err)
	scores, err = pgx.CollectRows(q, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Equal(t, []int64{4, 2}, scores)
}

// TestFirstLoadCopiesStraightIntoTheTable: on a first load, pages whose
// keys are new are copied straight into the table (nothing staged); a key
// twice in a page, or a page whose key is already in the table, goes the
// upsert's way, so the table ends as the upsert leaves it: the last row of
// each key.
func TestFirstLoadCopiesStraightIntoTheTable(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "ref-domains")
	pages := [][]map[string]any{
		{{"domain": "a.example", "backlinks_count": 1}, {"domain": "b.example", "backlinks_count": 2}},
		{{"domain": "c.example", "backlinks_count": 3}, {"domain": "c.example", "backlinks_count": 4}}, // twice in the page
		{{"domain": "a.example", "backlinks_count": 5}, {"domain": "d.example", "backlinks_count": 6}}, // a.example again
	}
	want := []load.Result{
		{Rows: 2, Inserted: 2},
		{Rows: 2, Inserted: 1, Unchanged: 1},
		{Rows: 2, Inserted: 1, Updated: 1},
	}
	var hashes []string
	for _, first := range []bool{false, true} {
		l, pool, mem := newLoader(t)
		id, err := l.Target(t.Context(), "x.example", catalog.RootDomain)
		require.NoError(t, err)
		holds, err := l.Holds(t.Context(), ep, id, nov)
		require.NoError(t, err)
		require.False(t, holds)
		for i, rows := range pages {
			rec := record(t, mem, ep, rows)
			require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
				page, err := l.NewPage(t.Context(), tx, ep)
				require.NoError(t, err)
				page.FirstLoad = first
				require.NoError(t, page.Stage(t.Context(), load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: nov, Record: rec}))
				if first && i == 0 {
					var staged int
					require.NoError(t, tx.QueryRow(t.Context(), `SELECT count(*) FROM _stage_ref_domains`).Scan(&staged))
					require.Zero(t, staged, "a first load's new keys are not staged")
				}
				res, err := page.Upsert(t.Context())
				require.NoError(t, err)
				require.Equal(t, want[i], res, "page %d, first load %v", i, first)
				return nil
			}))
			rec.Release()
		}
		holds, err = l.Holds(t.Context(), ep, id, nov)
		require.NoError(t, err)
		require.True(t, holds)
		var h string
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT string_agg(domain || '=' || backlinks_count, ',' ORDER BY domain) FROM ref_domains`).Scan(&h))
		hashes = append(hashes, h)
	}
	require.Equal(t, "a.example=5,b.example=2,c.example=4,d.example=6", hashes[0])
	require.Equal(t, hashes[0], hashes[1])
}
