package load_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/load"
)

// retentionNow is "now" in the retention tests: keep_months 1 keeps what
// was observed from 2026-11-01 on.
var retentionNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func month(y int, m time.Month) time.Time { return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC) }

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 12, 0, 0, 0, time.UTC) }

// insertBacklinks adds n rows of target to backlinks for month m, creating
// the partition first.
func insertBacklinks(t *testing.T, l *load.Loader, pool *pgxpool.Pool, target int64, m, observed time.Time, n int) {
	t.Helper()
	require.NoError(t, l.EnsurePartitions(t.Context(), endpoint(t, "links"), []time.Time{m}))
	_, err := pool.Exec(t.Context(), `
		INSERT INTO backlinks (target_id, month, observed_at, source_url, target_url, anchor, image_url)
		SELECT $1, $2::date, $3, 'https://s.example/' || g || '/' || $2::date::text, 'https://a.com/', 'a', '' FROM generate_series(1, $4) g`,
		target, m, observed, n)
	require.NoError(t, err)
}

// loadSummary loads one backlink_history row of target for each month of
// months, observed at observed.
func loadSummary(t *testing.T, l *load.Loader, pool *pgxpool.Pool, mem memory.Allocator, target int64, observed time.Time, months ...time.Time) {
	t.Helper()
	ep := endpoint(t, "summary")
	var rows []map[string]any
	for _, m := range months {
		rows = append(rows, map[string]any{"score": 1, "backlinks_count": 10, "month_date": m})
	}
	rec := record(t, mem, ep, rows)
	defer rec.Release()
	res := loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: target, Month: load.MonthStart(observed), ObservedAt: observed, Record: rec})
	require.Equal(t, int64(len(months)), res.Inserted)
}

// loadKeyword loads the metrics of keyword in FR for month m, observed at
// observed.
func loadKeyword(t *testing.T, l *load.Loader, pool *pgxpool.Pool, mem memory.Allocator, keyword string, m, observed time.Time) {
	t.Helper()
	ep := endpoint(t, "keyword-metrics")
	rec := record(t, mem, ep, []map[string]any{{"search_volume": 10}})
	defer rec.Release()
	res := loadBatch(t, l, pool, load.Batch{Endpoint: ep, Context: []any{keyword, "FR"}, Month: m, ObservedAt: observed, Record: rec})
	require.Equal(t, int64(1), res.Inserted)
}

func quarantine(t *testing.T, l *load.Loader, pool *pgxpool.Pool, observed ...time.Time) {
	t.Helper()
	var rows []load.Rejected
	for i, o := range observed {
		rows = append(rows, load.Rejected{Endpoint: "links", Request: "a.com ROOT_DOMAIN", Line: i + 2, Raw: "x;y", Reason: "bad", ObservedAt: o})
	}
	require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error { return l.Quarantine(t.Context(), tx, rows) }))
}

// partitions lists the month partitions attached to table.
func partitions(t *testing.T, pool *pgxpool.Pool, table string) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass ORDER BY c.relname`, table)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return names
}

func count(t *testing.T, pool *pgxpool.Pool, query string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, pool.QueryRow(t.Context(), query, args...).Scan(&n))
	return n
}

// warehouse is what retention may change: every table and partition by
// name, and the rows of each table that is not a partition.
type warehouse struct {
	Relations []string
	Rows      map[string]int64
}

func snapshot(t *testing.T, pool *pgxpool.Pool) warehouse {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT relname, relispartition FROM pg_class
		WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') ORDER BY relname`)
	require.NoError(t, err)
	type rel struct {
		Name        string
		IsPartition bool
	}
	rels, err := pgx.CollectRows(rows, pgx.RowToStructByPos[rel])
	require.NoError(t, err)
	w := warehouse{Rows: map[string]int64{}}
	for _, r := range rels {
		w.Relations = append(w.Relations, r.Name)
		if !r.IsPartition {
			w.Rows[r.Name] = count(t, pool, "SELECT count(*) FROM "+pgx.Identifier{r.Name}.Sanitize())
		}
	}
	return w
}

// seedAll puts expired and current data in a table of each kind.
func seedAll(t *testing.T, l *load.Loader, pool *pgxpool.Pool, mem memory.Allocator) {
	t.Helper()
	a, err := l.Target(t.Context(), "a.com", catalog.RootDomain)
	require.NoError(t, err)
	insertBacklinks(t, l, pool, a, month(2026, 9), day(2026, 9, 10), 2)
	insertBacklinks(t, l, pool, a, month(2026, 11), day(2026, 11, 5), 1)
	loadSummary(t, l, pool, mem, a, day(2026, 11, 5), month(2026, 10), month(2026, 11))
	loadSummary(t, l, pool, mem, a, day(2026, 9, 15), month(2026, 8), month(2026, 9))
	b, err := l.Target(t.Context(), "b.com", catalog.RootDomain)
	require.NoError(t, err)
	loadSummary(t, l, pool, mem, b, day(2026, 9, 15), month(2026, 10)) // shares a partition with a current row
	loadKeyword(t, l, pool, mem, "old", month(2026, 10), day(2026, 10, 3))
	loadKeyword(t, l, pool, mem, "new", month(2026, 5), day(2026, 11, 2))
	quarantine(t, l, pool, day(2026, 9, 1), day(2026, 11, 2))
}

// Retention is off by default: a zero Retention changes nothing, however
// old the data.
func TestRetentionOffByDefault(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	seedAll(t, l, pool, mem)
	before := snapshot(t, pool)
	for _, r := range []load.Retention{{}, {Detach: true}} {
		rep, err := l.ApplyRetention(t.Context(), r, retentionNow, false)
		require.NoError(t, err)
		require.Empty(t, rep.Tables)
		require.True(t, rep.Cutoff.IsZero())
		require.Equal(t, "retention: off (keep_months 0), nothing done\n", rep.String())
	}
	require.Equal(t, before, snapshot(t, pool))
}

func TestRetentionCutoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		keep int
		now  time.Time
		want time.Time
	}{
		{"off", 0, retentionNow, time.Time{}},
		{"this month", 1, retentionNow, month(2026, 11)},
		{"first instant of the month", 1, month(2026, 11), month(2026, 11)},
		{"two months", 2, retentionNow, month(2026, 10)},
		{"a year", 12, retentionNow, month(2025, 12)},
		{"across a year", 3, month(2026, 2), month(2025, 12)},
		{"months are UTC", 1, time.Date(2026, 12, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600)), month(2026, 11)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, load.Retention{KeepMonths: tc.keep}.Cutoff(tc.now))
		})
	}
}

// Tables whose month is the fetch month lose whole month partitions once
// the month's range lies before the cutoff.
func TestRetentionDropsExpiredMonthPartitions(t *testing.T) {
	t.Parallel()
	l, pool, _ := newLoader(t)
	a, err := l.Target(t.Context(), "a.com", catalog.RootDomain)
	require.NoError(t, err)
	insertBacklinks(t, l, pool, a, month(2026, 9), day(2026, 9, 10), 2)
	insertBacklinks(t, l, pool, a, month(2026, 10), day(2026, 10, 10), 3)
	insertBacklinks(t, l, pool, a, month(2026, 11), day(2026, 11, 5), 4)
	all := []string{"backlinks_p202609", "backlinks_p202610", "backlinks_p202611"}
	require.Equal(t, all, partitions(t, pool, "backlinks"))

	rep, err := l.ApplyRetention(t.Context(), load.Retention{KeepMonths: 3}, retentionNow, false)
	require.NoError(t, err)
	require.Empty(t, rep.Tables, "three months kept: September is the oldest kept")
	require.Equal(t, all, partitions(t, pool, "backlinks"))

	rep, err = l.ApplyRetention(t.Context(), load.Retention{KeepMonths: 1}, retentionNow, false)
	require.NoError(t, err)
	require.Equal(t, load.RetentionReport{KeepMonths: 1, Cutoff: month(2026, 11), Tables: []load.TableRetention{{
		Table: "backlinks",
		Dropped: []load.RetiredPartition{
			{Name: "backlinks_p202609", Month: month(2026, 9)},
			{Name: "backlinks_p202610", Month: month(2026, 10)},
		},
	}}}, rep)
	require.Equal(t, "retention: keep data observed since 2026-11-01 (keep_months 1)\n"+
		"backlinks: dropped backlinks_p202609, backlinks_p202610\n"+
		"total: dropped 2 partitions, detached 0, deleted 0 rows\n", rep.String())
	require.Equal(t, []string{"backlinks_p202611"}, partitions(t, pool, "backlinks"))
	require.Equal(t, int64(4), count(t, pool, `SELECT count(*) FROM backlinks WHERE month = '2026-11-01'`))
	require.Equal(t, int64(4), count(t, pool, `SELECT count(*) FROM backlinks`))
	require.Zero(t, count(t, pool, `SELECT count(*) FROM pg_class WHERE relname LIKE 'backlinks\_p2026%' AND relname NOT LIKE 'backlinks\_p202611%'`),
		"nothing of the dropped months is left")
}

// Detach keeps an expired month as a standalone table, renamed so a later
// load into that month gets a fresh partition.
func TestRetentionDetachKeepsMonthsAsStandaloneTables(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	a, err := l.Target(t.Context(), "a.com", catalog.RootDomain)
	require.NoError(t, err)
	insertBacklinks(t, l, pool, a, month(2026, 9), day(2026, 9, 10), 2)
	insertBacklinks(t, l, pool, a, month(2026, 11), day(2026, 11, 5), 1)

	r := load.Retention{KeepMonths: 1, Detach: true}
	rep, err := l.ApplyRetention(t.Context(), r, retentionNow, false)
	require.NoError(t, err)
	require.Equal(t, []load.TableRetention{{Table: "backlinks", Detached: []load.RetiredPartition{
		{Name: "backlinks_p202609", Month: month(2026, 9), DetachedAs: "backlinks_p202609_detached"},
	}}}, rep.Tables)
	require.Contains(t, rep.String(), "backlinks: detached backlinks_p202609 as backlinks_p202609_detached\n")
	require.Equal(t, []string{"backlinks_p202611"}, partitions(t, pool, "backlinks"))
	require.Equal(t, int64(1), count(t, pool, `SELECT count(*) FROM backlinks`))
	require.Equal(t, int64(2), count(t, pool, `SELECT count(*) FROM backlinks_p202609_detached`), "the detached month keeps its rows")
	require.Zero(t, count(t, pool, `SELECT count(*) FROM pg_inherits WHERE inhrelid = 'backlinks_p202609_detached'::regclass`),
		"a standalone table")
	require.Empty(t, partitions(t, pool, "backlinks_p202609_detached"), "a plain table, nothing below it")

	// A late load into September creates a fresh partition.
	ep := endpoint(t, "links")
	rec := record(t, mem, ep, []map[string]any{{"source_url": "https://late.example/", "target_url": "https://a.com/", "anchor": "", "image_url": ""}})
	defer rec.Release()
	res := loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: a, Month: month(2026, 9), ObservedAt: day(2026, 9, 30), Record: rec})
	require.Equal(t, int64(1), res.Inserted)
	require.Equal(t, []string{"backlinks_p202609", "backlinks_p202611"}, partitions(t, pool, "backlinks"))
	require.Equal(t, int64(2), count(t, pool, `SELECT count(*) FROM backlinks_p202609_detached`))

	// Detaching that one too finds the next free name.
	rep, err = l.ApplyRetention(t.Context(), r, retentionNow, false)
	require.NoError(t, err)
	require.Equal(t, []load.TableRetention{{Table: "backlinks", Detached: []load.RetiredPartition{
		{Name: "backlinks_p202609", Month: month(2026, 9), DetachedAs: "backlinks_p202609_detached2"},
	}}}, rep.Tables)
	require.Equal(t, int64(1), count(t, pool, `SELECT count(*) FROM backlinks_p202609_detached2`))
	require.Equal(t, []string{"backlinks_p202611"}, partitions(t, pool, "backlinks"))
}

// backlink_history's month is the month a row describes: twelve months
// fetched today all stay, rows fetched two months ago go, and the year
// partitions they alone filled are dropped, even with Detach; the newest
// month of a target whose rows all went is forgotten.
func TestRetentionDeletesSummaryHistoryByObservation(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	a, err := l.Target(t.Context(), "a.com", catalog.RootDomain)
	require.NoError(t, err)
	b, err := l.Target(t.Context(), "b.com", catalog.RootDomain)
	require.NoError(t, err)
	var current, stale []time.Time
	for m := month(2025, 12); !m.After(month(2026, 11)); m = m.AddDate(0, 1, 0) {
		current = append(current, m)
	}
	for m := month(2024, 6); !m.After(month(2026, 9)); m = m.AddDate(0, 1, 0) {
		stale = append(stale, m)
	}
	loadSummary(t, l, pool, mem, a, day(2026, 11, 5), current...)
	loadSummary(t, l, pool, mem, b, day(2026, 9, 15), stale...)
	// An empty partition of an old year, as a loader leaves it just before
	// writing its rows, is no business of retention.
	require.NoError(t, l.EnsurePartitions(t.Context(), endpoint(t, "summary"), []time.Time{month(2023, 1)}))
	require.Equal(t, int64(2), count(t, pool, `SELECT count(*) FROM latest_months WHERE fact_table = 'backlink_history'`))

	rep, err := l.ApplyRetention(t.Context(), load.Retention{KeepMonths: 1, Detach: true}, retentionNow, false)
	require.NoError(t, err)
	require.Equal(t, []load.TableRetention{{
		Table: "backlink_history", RowsDeleted: int64(len(stale)), RowsByObservation: true,
		Dropped: []load.RetiredPartition{{Name: "backlink_history_y2024", Month: month(2024, 1)}},
	}}, rep.Tables)
	require.Contains(t, rep.String(), "backlink_history: deleted 28 rows; dropped emptied backlink_history_y2024 ")
	require.Contains(t, rep.String(), "(rows go by observed_at, so they are deleted, not detached)")

	require.Equal(t, int64(12), count(t, pool, `SELECT count(*) FROM backlink_history WHERE target_id = $1`, a))
	require.Zero(t, count(t, pool, `SELECT count(*) FROM backlink_history WHERE target_id = $1`, b))
	require.Equal(t, []string{"backlink_history_y2023", "backlink_history_y2025", "backlink_history_y2026"}, partitions(t, pool, "backlink_history"))
	require.Zero(t, count(t, pool, `SELECT count(*) FROM pg_class WHERE relname LIKE '%detached%'`))
	require.Equal(t, int64(1), count(t, pool, `SELECT count(*) FROM latest_months WHERE fact_table = 'backlink_history' AND owner_id = $1 AND month = '2026-11-01'`, a))
	require.Zero(t, count(t, pool, `SELECT count(*) FROM latest_months WHERE owner_id = $1`, b), "b has no rows left")
	require.Equal(t, int64(1), count(t, pool, `SELECT count(*) FROM backlink_history_latest`))
}

// Keyword metrics go by observed_at too: an old month fetched this month
// stays, a recent month fetched last month goes.
func TestRetentionDeletesKeywordMetricsByObservation(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	loadKeyword(t, l, pool, mem, "kept", month(2026, 5), day(2026, 11, 2))
	loadKeyword(t, l, pool, mem, "at cutoff", month(2026, 10), month(2026, 11))
	loadKeyword(t, l, pool, mem, "expired", month(2026, 5), day(2026, 10, 20))
	loadKeyword(t, l, pool, mem, "just expired", month(2025, 8), month(2026, 11).Add(-time.Microsecond))

	rep, err := l.ApplyRetention(t.Context(), load.Retention{KeepMonths: 1}, retentionNow, false)
	require.NoError(t, err)
	require.Equal(t, []load.TableRetention{{
		Table: "keyword_metrics", RowsDeleted: 2, RowsByObservation: true,
		Dropped: []load.RetiredPartition{{Name: "keyword_metrics_y2025", Month: month(2025, 1)}},
	}}, rep.Tables)

	rows, err := pool.Query(t.Context(), `SELECT keyword FROM keyword_metrics ORDER BY keyword`)
	require.NoError(t, err)
	kept, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"at cutoff", "kept"}, kept)
	require.Equal(t, []string{"keyword_metrics_y2026"}, partitions(t, pool, "keyword_metrics"))
	rows, err = pool.Query(t.Context(), `SELECT keyword FROM keyword_metrics_latest ORDER BY keyword`)
	require.NoError(t, err)
	latest, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"at cutoff", "kept"}, latest)
	require.Equal(t, int64(2), count(t, pool, `SELECT count(*) FROM keyword_latest_months`))
}

// An owner whose newest month lost all its rows, but not its older
// months, gets the newest month left, in latest_months (a target's) and
// keyword_latest_months (a keyword's) alike, and the latest views show
// that month.
func TestRetentionMendsTheLatestMonthToTheNewestLeft(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	a, err := l.Target(t.Context(), "a.com", catalog.RootDomain)
	require.NoError(t, err)
	loadSummary(t, l, pool, mem, a, day(2026, 11, 5), month(2026, 8), month(2026, 9))
	loadSummary(t, l, pool, mem, a, day(2026, 9, 15), month(2026, 10))
	loadKeyword(t, l, pool, mem, "fell back", month(2026, 5), day(2026, 11, 2))
	loadKeyword(t, l, pool, mem, "fell back", month(2026, 10), day(2026, 10, 20))
	loadKeyword(t, l, pool, mem, "untouched", month(2026, 10), day(2026, 11, 3))
	require.Equal(t, int64(1), count(t, pool, `SELECT count(*) FROM latest_months WHERE owner_id = $1 AND month = '2026-10-01'`, a))

	rep, err := l.ApplyRetention(t.Context(), load.Retention{KeepMonths: 1}, retentionNow, false)
	require.NoError(t, err)
	require.Equal(t, []load.TableRetention{
		{Table: "backlink_history", RowsDeleted: 1, RowsByObservation: true},
		{Table: "keyword_metrics", RowsDeleted: 1, RowsByObservation: true},
	}, rep.Tables)

	require.Equal(t, int64(1), count(t, pool, `SELECT count(*) FROM latest_months WHERE fact_table = 'backlink_history' AND owner_id = $1 AND month = '2026-09-01'`, a))
	require.Equal(t, int64(1), count(t, pool, `SELECT count(*) FROM backlink_history_latest WHERE target_id = $1 AND month = '2026-09-01'`, a))
	require.Equal(t, int64(1), count(t, pool, `SELECT count(*) FROM backlink_history_latest`))
	rows, err := pool.Query(t.Context(), `SELECT keyword || ' ' || month::text FROM keyword_latest_months ORDER BY keyword`)
	require.NoError(t, err)
	latest, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"fell back 2026-05-01", "untouched 2026-10-01"}, latest)
	require.Equal(t, int64(2), count(t, pool, `SELECT count(*) FROM keyword_metrics_latest`))
}

// A yearly table whose month is the fetch month (the overview): a year
// partition wholly before the cutoff goes whole (dropped, or detached),
// one that straddles it loses the rows of its months before the cutoff,
// and a target whose newest month went leaves the latest view.
func TestRetentionOnYearPartitions(t *testing.T) {
	t.Parallel()
	for _, detach := range []bool{false, true} {
		t.Run(fmt.Sprintf("detach=%v", detach), func(t *testing.T) {
			t.Parallel()
			l, pool, mem := newLoader(t)
			ep := endpoint(t, "overview")
			a, err := l.Target(t.Context(), "a.com", catalog.RootDomain)
			require.NoError(t, err)
			b, err := l.Target(t.Context(), "b.com", catalog.RootDomain)
			require.NoError(t, err)
			rec := record(t, mem, ep, []map[string]any{{"backlinks_count": 7}})
			defer rec.Release()
			for m := month(2025, 10); !m.After(month(2026, 11)); m = m.AddDate(0, 1, 0) {
				loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: a, Month: m, ObservedAt: m.Add(time.Hour), Record: rec})
				if m.Before(month(2026, 11)) { // b was last fetched in October
					loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: b, Month: m, ObservedAt: m.Add(time.Hour), Record: rec})
				}
			}
			require.Equal(t, []string{"backlink_overview_y2025", "backlink_overview_y2026"}, partitions(t, pool, "backlink_overview"))
			require.Equal(t, int64(2), count(t, pool, `SELECT count(*) FROM backlink_overview_latest`))

			r := load.Retention{KeepMonths: 1, Detach: detach}
			dry, err := l.ApplyRetention(t.Context(), r, retentionNow, true)
			require.NoError(t, err)
			require.Contains(t, dry.String(), "backlink_overview: would delete 20 rows; ")
			require.Equal(t, int64(27), count(t, pool, `SELECT count(*) FROM backlink_overview`), "a dry run changes nothing")

			rep, err := l.ApplyRetention(t.Context(), r, retentionNow, false)
			require.NoError(t, err)
			want := load.TableRetention{Table: "backlink_overview", RowsDeleted: 20}
			y2025 := load.RetiredPartition{Name: "backlink_overview_y2025", Month: month(2025, 1)}
			if detach {
				y2025.DetachedAs = "backlink_overview_y2025_detached"
				want.Detached = []load.RetiredPartition{y2025}
			} else {
				want.Dropped = []load.RetiredPartition{y2025}
			}
			require.Equal(t, []load.TableRetention{want}, rep.Tables)
			require.Equal(t, []string{"backlink_overview_y2026"}, partitions(t, pool, "backlink_overview"))
			require.Equal(t, int64(1), count(t, pool, `SELECT count(*) FROM backlink_overview`), "November of a.com alone")
			require.Equal(t, int64(1), count(t, pool, `SELECT count(*) FROM backlink_overview WHERE target_id = $1 AND month = '2026-11-01'`, a))
			if detach {
				require.Equal(t, int64(6), count(t, pool, `SELECT count(*) FROM backlink_overview_y2025_detached`))
			}
			rows, err := pool.Query(t.Context(), `SELECT target_id FROM backlink_overview_latest`)
			require.NoError(t, err)
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			require.NoError(t, err)
			require.Equal(t, []int64{a}, ids, "b's newest month went")
			require.Zero(t, count(t, pool, `SELECT count(*) FROM latest_months WHERE owner_id = $1`, b))

			// Nothing more to do: the straddling year keeps its months from
			// the cutoff on, and the loader goes on writing into it.
			again, err := l.ApplyRetention(t.Context(), r, retentionNow, false)
			require.NoError(t, err)
			require.Empty(t, again.Tables)
			res := loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: b, Month: month(2026, 11), ObservedAt: retentionNow, Record: rec})
			require.Equal(t, int64(1), res.Inserted)
			require.Equal(t, int64(2), count(t, pool, `SELECT count(*) FROM backlink_overview_latest`))
		})
	}
}

// The quarantine holds the API's raw rows: those observed before the cutoff
// are deleted.
func TestRetentionDeletesQuarantinedRows(t *testing.T) {
	t.Parallel()
	l, pool, _ := newLoader(t)
	quarantine(t, l, pool, day(2026, 9, 1), month(2026, 11).Add(-time.Microsecond), month(2026, 11), day(2026, 11, 20))

	rep, err := l.ApplyRetention(t.Context(), load.Retention{KeepMonths: 1}, retentionNow, false)
	require.NoError(t, err)
	require.Equal(t, []load.TableRetention{{Table: "quarantine", RowsDeleted: 2, RowsByObservation: true}}, rep.Tables)
	require.Contains(t, rep.String(), "\nquarantine: deleted 2 rows\n")
	require.NotContains(t, rep.String(), "not detached")
	require.Equal(t, int64(2), count(t, pool, `SELECT count(*) FROM quarantine`))
	require.Zero(t, count(t, pool, `SELECT count(*) FROM quarantine WHERE observed_at < '2026-11-01T00:00:00Z'`))
}

// A dry run changes nothing and reports what the real run then does.
func TestRetentionDryRunReportsTheRealRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		r    load.Retention
	}{
		{"drop", load.Retention{KeepMonths: 1}},
		{"detach", load.Retention{KeepMonths: 1, Detach: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, pool, mem := newLoader(t)
			seedAll(t, l, pool, mem)
			before := snapshot(t, pool)

			dry, err := l.ApplyRetention(t.Context(), tc.r, retentionNow, true)
			require.NoError(t, err)
			require.Equal(t, before, snapshot(t, pool), "a dry run changes nothing")
			require.Len(t, dry.Tables, 4, "backlinks, backlink_history, keyword_metrics, quarantine")
			require.Contains(t, dry.String(), "dry run: nothing changed")
			require.Contains(t, dry.String(), "would delete")

			done, err := l.ApplyRetention(t.Context(), tc.r, retentionNow, false)
			require.NoError(t, err)
			require.NotEqual(t, before, snapshot(t, pool))
			dry.DryRun = false
			require.Equal(t, dry, done)
		})
	}
}

// A second run at the same time finds nothing to do.
func TestRetentionIsIdempotent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		r    load.Retention
	}{
		{"drop", load.Retention{KeepMonths: 1}},
		{"detach", load.Retention{KeepMonths: 1, Detach: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, pool, mem := newLoader(t)
			seedAll(t, l, pool, mem)
			first, err := l.ApplyRetention(t.Context(), tc.r, retentionNow, false)
			require.NoError(t, err)
			require.NotEmpty(t, first.Tables)
			after := snapshot(t, pool)

			again, err := l.ApplyRetention(t.Context(), tc.r, retentionNow, false)
			require.NoError(t, err)
			require.Empty(t, again.Tables)
			require.Equal(t, "retention: keep data observed since 2026-11-01 (keep_months 1)\nnothing to do\n"+
				"total: dropped 0 partitions, detached 0, deleted 0 rows\n", again.String())
			require.Equal(t, after, snapshot(t, pool))
		})
	}
}

func TestRetentionRefusesKeepMonthsOutOfRange(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	seedAll(t, l, pool, mem)
	before := snapshot(t, pool)
	_, err := l.ApplyRetention(t.Context(), load.Retention{KeepMonths: -1}, retentionNow, false)
	require.EqualError(t, err, "load: retention keep_months must be between 0 (off) and 1200, got -1")
	_, err = l.ApplyRetention(t.Context(), load.Retention{KeepMonths: load.MaxKeepMonths + 1}, retentionNow, false)
	require.EqualError(t, err, "load: retention keep_months must be between 0 (off) and 1200, got 1201")
	require.Equal(t, before, snapshot(t, pool))
}

// Every fact table must be there: a missing one is an error, not skipped,
// and the other tables are still done.
func TestRetentionMissingTableIsAnError(t *testing.T) {
	t.Parallel()
	l, pool, _ := newLoader(t)
	quarantine(t, l, pool, day(2026, 9, 1))
	_, err := pool.Exec(t.Context(), `DROP TABLE matrix CASCADE`)
	require.NoError(t, err)

	rep, err := l.ApplyRetention(t.Context(), load.Retention{KeepMonths: 1}, retentionNow, false)
	require.ErrorContains(t, err, "load: retention matrix: the table does not exist")
	require.Equal(t, []load.TableRetention{{Table: "quarantine", RowsDeleted: 1, RowsByObservation: true}}, rep.Tables)
}

// DROP waits for the queries on its table at most LockTimeout; then that
// table is left as it was, and the others are done.
func TestRetentionLockTimeoutLeavesTheTable(t *testing.T) {
	t.Parallel()
	l, pool, _ := newLoader(t)
	a, err := l.Target(t.Context(), "a.com", catalog.RootDomain)
	require.NoError(t, err)
	insertBacklinks(t, l, pool, a, month(2026, 9), day(2026, 9, 10), 1)
	quarantine(t, l, pool, day(2026, 9, 1))

	reader, err := pool.Begin(t.Context()) // an analyst's long query
	require.NoError(t, err)
	defer func() { _ = reader.Rollback(t.Context()) }() // on failure; rolled back below
	var n int64
	require.NoError(t, reader.QueryRow(t.Context(), `SELECT count(*) FROM backlinks`).Scan(&n))
	require.Equal(t, int64(1), n)

	rep, err := l.ApplyRetention(t.Context(), load.Retention{KeepMonths: 1, LockTimeout: 50 * time.Millisecond}, retentionNow, false)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%v", err)
	require.Equal(t, "55P03", pgErr.Code)
	require.ErrorContains(t, err, "load: retention backlinks: a lock was not granted within 50ms")
	require.Equal(t, []load.TableRetention{{Table: "quarantine", RowsDeleted: 1, RowsByObservation: true}}, rep.Tables)
	require.NoError(t, reader.Rollback(t.Context()))
	require.Equal(t, []string{"backlinks_p202609"}, partitions(t, pool, "backlinks"))

	rep, err = l.ApplyRetention(t.Context(), load.Retention{KeepMonths: 1}, retentionNow, false)
	require.NoError(t, err)
	require.Equal(t, "backlinks", rep.Tables[0].Table, "the next run finishes the job")
	require.Empty(t, partitions(t, pool, "backlinks"))
}
