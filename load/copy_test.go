package load_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/load"
)

// kindValue is row i's value of a field of kind k (nil: NULL), as Go
// values pgx encodes: row 1 is NULL where it may be, the others are edge
// cases of every kind the catalog has. A key field (key) never is NULL,
// and differs from row to row.
func kindValue(f catalog.Field, key bool, i int) any {
	if i == 1 && !key {
		return nil
	}
	switch f.Kind {
	case catalog.Int, catalog.IntString:
		return []int64{42, 1, -7, 0, math.MaxInt64}[i]
	case catalog.Float, catalog.DecString:
		return []float64{1.25, 1, -0.5, 0, 12345.678}[i]
	case catalog.Text:
		v := []string{"a; \"b\"\n,c", "", "", "ünïcödé 日本 \\ \t", strings.Repeat("x", 3000)}[i]
		if key {
			v = fmt.Sprintf("%s-%d %s", f.Name, i, v)
		}
		return v
	case catalog.Bool:
		return i%2 == 0
	case catalog.Timestamp:
		return []time.Time{
			time.Date(2026, 11, 21, 3, 4, 5, 123456000, time.UTC),
			{},
			time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC), // before PostgreSQL's epoch
			time.Unix(0, 0).UTC(),
			time.Date(2100, 2, 28, 0, 0, 0, 1000, time.UTC),
		}[i]
	case catalog.Date:
		return time.Date(2026, time.Month(i+1), 15, 0, 0, 0, 0, time.UTC)
	case catalog.TextList:
		return [][]string{{"a", "b, c"}, nil, {}, {"ü"}, {"", "x"}}[i]
	case catalog.IntList:
		return [][]int64{{1, 2, 3}, nil, {}, {-1}, {math.MaxInt64, 0}}[i]
	}
	panic(fmt.Sprintf("no test value for %v", f.Kind))
}

// kindRecord is a record of ep's schema holding rows (kindValue).
func kindRecord(t *testing.T, mem memory.Allocator, ep *catalog.Endpoint, rows [][]any) arrow.Record {
	t.Helper()
	var maps []map[string]any
	for _, row := range rows {
		m := map[string]any{}
		for j, v := range row {
			m[ep.Fields[j].Name] = v
		}
		maps = append(maps, m)
	}
	return record(t, mem, ep, maps)
}

// tableRows is every row of ep's table as text, sorted.
func tableRows(t *testing.T, pool *pgxpool.Pool, ep *catalog.Endpoint) []string {
	t.Helper()
	rows, err := pool.Query(t.Context(), fmt.Sprintf(`SELECT t::text FROM %s t ORDER BY 1`, pgx.Identifier{ep.Table}.Sanitize()))
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return got
}

// Every kind of value a fact table holds reaches it through the loader's
// binary COPY (staged then upserted, and on a first load straight into the
// table) exactly as pgx writes the same Go values as parameters of an
// INSERT: NULLs, empty strings and lists, times before 2000, the largest
// integers, text of every sort.
func TestCopyWritesEveryKindAsPgxDoes(t *testing.T) {
	t.Parallel()
	observed := time.Date(2026, 11, 21, 3, 0, 0, 654321000, time.UTC)
	for _, ep := range catalog.All() {
		t.Run(ep.Name, func(t *testing.T) {
			t.Parallel()
			var rows [][]any
			for i := range 5 {
				var row []any
				for _, f := range ep.Fields {
					row = append(row, kindValue(f, ep.MonthField == f.Name || ep.TargetField == f.Name || isKeyOf(ep, f.Name), i))
				}
				rows = append(rows, row)
			}
			// Each way into a database of its own, where the targets and
			// sets get the same ids.
			setUp := func(pool *pgxpool.Pool, l *load.Loader) load.Batch {
				b := load.Batch{Endpoint: ep, Month: nov, ObservedAt: observed}
				var urls []string
				for i := range rows {
					urls = append(urls, fmt.Sprintf("t%d.example", i))
				}
				var err error
				switch {
				case ep.PerSet:
					b.SetID, _, err = l.TargetSet(t.Context(), "s", catalog.RootDomain, urls)
				case ep.TargetField != "":
					_, b.Targets, err = l.TargetSet(t.Context(), "s", catalog.RootDomain, urls)
				case ep.PerTarget:
					b.TargetID, err = l.Target(t.Context(), "x.example", catalog.RootDomain)
				}
				require.NoError(t, err)
				if ep.TargetField != "" {
					j := fieldIndex(ep, ep.TargetField)
					for i := range rows {
						rows[i][j] = urls[i]
					}
				}
				for _, f := range ep.Context {
					b.Context = append(b.Context, map[string]any{"keyword": "café", "country": "FR"}[f.Name])
				}
				return b
			}

			// The reference: pgx's encoding of the values, by INSERT.
			l, pool, _ := newLoader(t)
			b := setUp(pool, l)
			cols := load.Columns(ep)
			var names []string
			for _, c := range cols {
				names = append(names, pgx.Identifier{c.Name}.Sanitize())
			}
			months := map[time.Time]bool{}
			for i, row := range rows {
				var args []any
				month := rowMonth(i)
				if ep.MonthField != "" {
					month = load.MonthStart(row[fieldIndex(ep, ep.MonthField)].(time.Time))
				}
				months[month] = true
				switch {
				case ep.PerSet:
					args = append(args, b.SetID)
				case ep.TargetField != "":
					args = append(args, b.Targets[row[fieldIndex(ep, ep.TargetField)].(string)])
				case ep.PerTarget:
					args = append(args, b.TargetID)
				}
				args = append(args, b.Context...)
				args = append(args, month, observed)
				args = append(args, row...)
				var ps []string
				for i := range args {
					ps = append(ps, fmt.Sprintf("$%d", i+1))
				}
				var ms []time.Time
				for m := range months {
					ms = append(ms, m)
				}
				require.NoError(t, l.EnsurePartitions(t.Context(), ep, ms))
				_, err := pool.Exec(t.Context(), fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)",
					pgx.Identifier{ep.Table}.Sanitize(), strings.Join(names, ", "), strings.Join(ps, ", ")), args...)
				require.NoError(t, err)
			}
			want := tableRows(t, pool, ep)
			require.Len(t, want, len(rows))

			for _, first := range []bool{false, true} {
				l, pool, mem := newLoader(t)
				b := setUp(pool, l)
				var res load.Result
				require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
					page, err := l.NewPage(t.Context(), tx, ep)
					if err != nil {
						return err
					}
					page.FirstLoad = first
					for i, row := range rows {
						b.Month, b.Record = rowMonth(i), kindRecord(t, mem, ep, [][]any{row})
						err := page.Stage(t.Context(), b)
						b.Record.Release()
						if err != nil {
							return err
						}
					}
					res, err = page.Upsert(t.Context())
					return err
				}))
				require.Equal(t, load.Result{Rows: int64(len(rows)), Inserted: int64(len(rows))}, res, "first load %v", first)
				require.Equal(t, want, tableRows(t, pool, ep), "first load %v", first)
			}
		})
	}
}

// rowMonth is the month of row i of TestCopyWritesEveryKindAsPgxDoes
// (unless a field of the row says it): rows of one month each, so that
// the rows of an endpoint whose key is its month (overview, keyword
// metrics) differ.
func rowMonth(i int) time.Time { return nov.AddDate(0, -i, 0) }

func isKeyOf(ep *catalog.Endpoint, name string) bool {
	for _, k := range ep.Key {
		if k == name {
			return true
		}
	}
	return false
}

func fieldIndex(ep *catalog.Endpoint, name string) int {
	for i, f := range ep.Fields {
		if f.Name == name {
			return i
		}
	}
	panic("no field " + name)
}

// records is a load.RecordReader of recs, in order.
type records struct{ recs []arrow.Record }

func (r *records) Next(context.Context) (arrow.Record, error) {
	if len(r.recs) == 0 {
		return nil, io.EOF
	}
	rec := r.recs[0]
	r.recs = r.recs[1:]
	return rec, nil
}

// A first load copies a page of several records in one COPY straight into
// the table. A key met a second time in a later record of the page, or a
// key the table holds already, rolls the copy back and stages the page's
// records instead: the result counts each row once, the last row of each
// key wins, and every record is released.
func TestFirstLoadOfSeveralRecordsFallsBackWhole(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "ref-domains")
	domains := func(from, to, count int) []map[string]any {
		var rows []map[string]any
		for i := from; i < to; i++ {
			rows = append(rows, map[string]any{"domain": fmt.Sprintf("d%03d.example", i), "backlinks_count": count})
		}
		return rows
	}
	for _, tc := range []struct {
		name    string
		stored  []map[string]any   // in the table before the page
		page    [][]map[string]any // the page's records
		want    load.Result
		wantSum int64 // sum of backlinks_count over the table
	}{
		{"all new", nil, [][]map[string]any{domains(0, 50, 1), domains(50, 100, 1)},
			load.Result{Rows: 100, Inserted: 100}, 100},
		{"a key twice", nil, [][]map[string]any{domains(0, 50, 1), domains(49, 100, 2)},
			load.Result{Rows: 101, Inserted: 100, Unchanged: 1}, 49 + 2*51},
		{"a key stored", domains(99, 100, 5), [][]map[string]any{domains(0, 50, 1), domains(50, 100, 1)},
			load.Result{Rows: 100, Inserted: 99, Updated: 1}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, pool, mem := newLoader(t)
			id, err := l.Target(t.Context(), "x.example", catalog.RootDomain)
			require.NoError(t, err)
			if tc.stored != nil {
				rec := record(t, mem, ep, tc.stored)
				loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: oct, Record: rec})
				rec.Release()
			}
			var recs []arrow.Record
			for _, rows := range tc.page {
				recs = append(recs, record(t, mem, ep, rows))
			}
			var res load.Result
			require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
				page, err := l.NewPage(t.Context(), tx, ep)
				require.NoError(t, err)
				page.FirstLoad = true
				require.NoError(t, page.Copy(t.Context(), load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: nov}, &records{recs}))
				res, err = page.Upsert(t.Context())
				return err
			}))
			require.Equal(t, tc.want, res)
			var n, sum int64
			require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*), sum(backlinks_count) FROM ref_domains`).Scan(&n, &sum))
			require.Equal(t, int64(100), n)
			require.Equal(t, tc.wantSum, sum)
		})
	}
}

// A reader's error ends the page's copy with that error, whichever way the
// page copies, and leaves no record unreleased.
func TestCopyReturnsTheReadersError(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "ref-domains")
	for _, first := range []bool{false, true} {
		l, pool, mem := newLoader(t)
		id, err := l.Target(t.Context(), "x.example", catalog.RootDomain)
		require.NoError(t, err)
		boom := errors.New("the body was cut")
		rec := record(t, mem, ep, []map[string]any{{"domain": "a.example"}})
		err = pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
			page, err := l.NewPage(t.Context(), tx, ep)
			require.NoError(t, err)
			page.FirstLoad = first
			return page.Copy(t.Context(), load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: nov}, &failing{rec: rec, err: boom})
		})
		require.ErrorIs(t, err, boom, "first load %v", first)
	}
}

// failing returns rec, then err.
type failing struct {
	rec arrow.Record
	err error
}

func (f *failing) Next(context.Context) (arrow.Record, error) {
	if rec := f.rec; rec != nil {
		f.rec = nil
		return rec, nil
	}
	return nil, f.err
}

// Loaders of the same target and month at once, each a rerun of the same
// links in pages: every page commits, each link is inserted by one of
// them and counted unchanged by the others, and the table holds each
// link once.
func TestConcurrentLoadersOfOneMonth(t *testing.T) {
	t.Parallel()
	l, pool, mem := newLoader(t)
	ep := endpoint(t, "ref-domains")
	id, err := l.Target(t.Context(), "x.example", catalog.RootDomain)
	require.NoError(t, err)
	const loaders, pages, perPage = 4, 5, 200
	var recs []arrow.Record
	for p := range pages {
		var rows []map[string]any
		for i := range perPage {
			rows = append(rows, map[string]any{"domain": fmt.Sprintf("d%d-%d.example", p, i), "backlinks_count": i})
		}
		recs = append(recs, record(t, mem, ep, rows))
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	results := make([]load.Result, loaders)
	g, ctx := errgroup.WithContext(t.Context())
	for k := range loaders {
		g.Go(func() error {
			for _, rec := range recs {
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					res, err := l.Load(ctx, tx, load.Batch{Endpoint: ep, TargetID: id, Month: nov, ObservedAt: nov, Record: rec})
					results[k] = results[k].Add(res)
					return err
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	var total load.Result
	for _, r := range results {
		require.Equal(t, int64(pages*perPage), r.Rows)
		total = total.Add(r)
	}
	require.Equal(t, load.Result{Rows: loaders * pages * perPage, Inserted: pages * perPage, Unchanged: (loaders - 1) * pages * perPage}, total)
	var n int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM ref_domains`).Scan(&n))
	require.Equal(t, int64(pages*perPage), n)
}
