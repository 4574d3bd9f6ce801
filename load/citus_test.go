package load_test

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/sandbox/locations"
)

// TestLoaderSendsOneCommandPerStatement: every statement the loader sends
// (pages of each kind of table, first loads, reruns, updates, partitions
// made, listings, quarantine, comments, retention that drops and that
// detaches) is one SQL command, as PostgreSQL's parser counts them: Citus
// refuses several commands in one call ("cannot insert multiple commands
// into a prepared statement"), whatever protocol sends them.
func TestLoaderSendsOneCommandPerStatement(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	pool, stmts := pgtest.NewTracedPool(t)
	l, err := load.New(load.Config{Pool: pool})
	require.NoError(t, err)
	ctx := t.Context()

	seedAll(t, l, pool, mem)
	a, err := l.Target(ctx, "a.com", catalog.RootDomain)
	require.NoError(t, err)
	// A rerun (compare, nothing written) and a change (compare, update).
	loadSummary(t, l, pool, mem, a, day(2026, 11, 6), month(2026, 12))
	for i, score := range []int{1, 1, 2} {
		ep := endpoint(t, "summary")
		rec := record(t, mem, ep, []map[string]any{{"score": score, "backlinks_count": 10, "month_date": month(2026, 12)}})
		res := loadBatch(t, l, pool, load.Batch{Endpoint: ep, TargetID: a, Month: month(2026, 11), ObservedAt: day(2026, 11, 7+i), Record: rec})
		rec.Release()
		require.Equal(t, int64(1), res.Rows)
	}
	// Links: a first load copied straight into the table, then a rerun.
	links := endpoint(t, "links")
	rec := record(t, mem, links, []map[string]any{{"source_url": "https://s.example/", "target_url": "https://a.com/", "anchor": "x", "image_url": ""}})
	defer rec.Release()
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		p, err := l.NewPage(ctx, tx, links)
		if err != nil {
			return err
		}
		p.FirstLoad = true
		if err := p.Stage(ctx, load.Batch{Endpoint: links, TargetID: a, Month: month(2026, 10), ObservedAt: day(2026, 10, 2), Record: rec}); err != nil {
			return err
		}
		_, err = p.Upsert(ctx)
		return err
	}))
	loadBatch(t, l, pool, load.Batch{Endpoint: links, TargetID: a, Month: month(2026, 10), ObservedAt: day(2026, 10, 3), Record: rec})
	// A page of a target set, and one whose rows each name their target.
	setID, members, err := l.TargetSet(ctx, "rivals", catalog.RootDomain, []string{"a.com", "b.com"})
	require.NoError(t, err)
	matrix := endpoint(t, "matrix")
	mrec := record(t, mem, matrix, []map[string]any{{"domain": "d.example", "backlinks_counts": []int64{1, 2}}})
	defer mrec.Release()
	for range 2 {
		loadBatch(t, l, pool, load.Batch{Endpoint: matrix, SetID: setID, Month: month(2026, 11), ObservedAt: day(2026, 11, 3), Record: mrec})
	}
	comparison := endpoint(t, "comparison")
	crec := record(t, mem, comparison, []map[string]any{{"url": "a.com", "month_date": month(2026, 11)}, {"url": "b.com", "month_date": month(2026, 11)}})
	defer crec.Release()
	for range 2 {
		loadBatch(t, l, pool, load.Batch{Endpoint: comparison, Targets: members, Month: month(2026, 11), ObservedAt: day(2026, 11, 3), Record: crec})
	}
	// Keyword metrics again: compared with what is stored.
	loadKeyword(t, l, pool, mem, "again", month(2026, 11), day(2026, 11, 3))
	kw := endpoint(t, "keyword-metrics")
	krec := record(t, mem, kw, []map[string]any{{"search_volume": 11}})
	defer krec.Release()
	loadBatch(t, l, pool, load.Batch{Endpoint: kw, Context: []any{"again", "FR"}, Month: month(2026, 11), ObservedAt: day(2026, 11, 4), Record: krec})

	// Listings: a page, the same page again, what it did not see gone.
	store := locations.New(1)
	pages := pull(t, store, pullAccount, day(2026, 11, 2))
	loadPull(t, l, pool, pullAccount, pages[:1], day(2026, 11, 2))
	loadPull(t, l, pool, pullAccount, pages[:1], day(2026, 11, 3))

	require.NoError(t, load.Document(ctx, pool))
	_, err = l.ApplyRetention(ctx, load.Retention{KeepMonths: 1, Detach: true}, retentionNow, false)
	require.NoError(t, err)
	_, err = l.ApplyRetention(ctx, load.Retention{KeepMonths: 1}, retentionNow.AddDate(0, 2, 0), false)
	require.NoError(t, err)

	sent := stmts.All()
	for _, want := range []string{"CREATE TEMP TABLE", "ATTACH PARTITION", "DETACH PARTITION", "COMMENT ON COLUMN", "_stage_listing"} {
		require.Condition(t, func() bool {
			for _, sql := range sent {
				if strings.Contains(sql, want) {
					return true
				}
			}
			return false
		}, "the test sends a statement with %q", want)
	}
	pgtest.RequireOneCommandEach(t, pool, sent)
}

// TestPageStatementsNameTheirOwner: every statement of a page that reads
// or writes the fact table through a join with the staged rows names the
// page's owner as a constant, as it names the page's months (under Citus,
// where the owner is the distribution column, one shard answers it), and
// none joins the fact table by an outer or lateral join from the staging
// table (Citus refuses that when the staging table is local). The counts
// of a page are those of the rows: new, changed, unchanged, duplicates.
func TestPageStatementsNameTheirOwner(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	pool, stmts := pgtest.NewTracedPool(t)
	l, err := load.New(load.Config{Pool: pool})
	require.NoError(t, err)
	ctx := t.Context()
	a, err := l.Target(ctx, "a.com", catalog.RootDomain)
	require.NoError(t, err)
	setID, members, err := l.TargetSet(ctx, "rivals", catalog.RootDomain, []string{"a.com", "b.com"})
	require.NoError(t, err)

	type page struct {
		b    load.Batch
		rows []map[string]any
		// owners are the conditions on the fact table of the page's
		// statements: each names one owner.
		owners []string
		want   []load.Result // of the first load, a rerun, a change
	}
	links, matrix, comparison, kw := endpoint(t, "links"), endpoint(t, "matrix"), endpoint(t, "comparison"), endpoint(t, "keyword-metrics")
	link := func(src string, score int) map[string]any {
		return map[string]any{"source_url": src, "target_url": "https://a.com/", "anchor": "x", "image_url": "", "page_score": score}
	}
	pages := map[string]page{
		"links": {
			b:      load.Batch{Endpoint: links, TargetID: a},
			rows:   []map[string]any{link("https://s1.example/", 1), link("https://s2.example/", 1)},
			owners: []string{fmt.Sprintf(`t."target_id" = %d`, a)},
			want:   []load.Result{{Rows: 2, Inserted: 2}, {Rows: 2, Unchanged: 2}, {Rows: 2, Updated: 2}},
		},
		"matrix": {
			b:      load.Batch{Endpoint: matrix, SetID: setID},
			rows:   []map[string]any{{"domain": "d.example", "backlinks_counts": []int64{1, 2}}},
			owners: []string{fmt.Sprintf(`t."set_id" = %d`, setID)},
			want:   []load.Result{{Rows: 1, Inserted: 1}, {Rows: 1, Unchanged: 1}, {Rows: 1, Updated: 1}},
		},
		"comparison": {
			b:      load.Batch{Endpoint: comparison, Targets: members},
			rows:   []map[string]any{{"url": "a.com", "month_date": nov}, {"url": "b.com", "month_date": nov}},
			owners: []string{fmt.Sprintf(`t."target_id" = %d`, members["a.com"]), fmt.Sprintf(`t."target_id" = %d`, members["b.com"])},
			want:   []load.Result{{Rows: 2, Inserted: 2}, {Rows: 2, Unchanged: 2}, {Rows: 2, Updated: 2}},
		},
		"keyword metrics, a key twice": {
			b: load.Batch{Endpoint: kw, Context: []any{`it's a \ keyword`, "FR"}},
			// Two rows of one key: the later wins.
			rows:   []map[string]any{{"search_volume": 5}, {"search_volume": 10}},
			owners: []string{`t."keyword" = E'it''s a \\ keyword' AND t."country" = E'FR'`},
			want:   []load.Result{{Rows: 2, Inserted: 1, Unchanged: 1}, {Rows: 2, Unchanged: 2}, {Rows: 2, Updated: 1, Unchanged: 1}},
		},
	}
	for name, pg := range pages {
		t.Run(name, func(t *testing.T) {
			ep := pg.b.Endpoint
			for i, want := range pg.want {
				rows := pg.rows
				if i == 2 { // every value changes
					rows = nil
					for _, r := range pg.rows {
						c := maps.Clone(r)
						for _, f := range []string{"page_score", "search_volume"} {
							if v, ok := c[f]; ok {
								c[f] = v.(int) + 1
							}
						}
						if _, ok := c["backlinks_counts"]; ok {
							c["backlinks_counts"] = []int64{3, 4}
						}
						if _, ok := c["url"]; ok {
							c["score"] = 7
						}
						rows = append(rows, c)
					}
				}
				rec := record(t, mem, ep, rows)
				b := pg.b
				b.Month, b.ObservedAt, b.Record = nov, day(2026, 11, 2+i), rec
				require.Equal(t, want, loadBatch(t, l, pool, b), "load %d", i)
				rec.Release()
			}
			table := pgx.Identifier{ep.Table}.Sanitize()
			reads := map[string]int{}
			for _, sql := range stmts.All() {
				if !strings.Contains(sql, table+" t") {
					continue
				}
				named := 0
				for _, o := range pg.owners {
					// The condition, whole: then the subquery ends or
					// another condition follows.
					if regexp.MustCompile(regexp.QuoteMeta(o) + `(\)| AND | WHERE )`).MatchString(sql) {
						named++
						reads[o]++
					}
				}
				require.Equal(t, 1, named, "a statement on %s names one owner of the page:\n%s", ep.Table, sql)
				require.Contains(t, sql, "t.month BETWEEN DATE '2026-11-01' AND DATE '2026-11-01'", "and its months")
				require.NotContains(t, sql, "LATERAL")
			}
			for _, o := range pg.owners {
				require.Equal(t, 2, reads[o], "the compare and the update of %s, for %s", ep.Table, o)
			}
		})
	}
}

// TestCitusLayoutNamesEveryTable: the layout Distribute reads places
// every table of the schema, and no other, in exactly one of its lists
// (reference, distributed by its owner, on the coordinator); the fact
// tables are the catalog's, each by its owner, co-located with the
// others of its owner's type; a reference table comes after those it
// refers to; and on plain PostgreSQL Distribute does nothing.
func TestCitusLayoutNamesEveryTable(t *testing.T) {
	t.Parallel()
	named := map[string]string{}
	place := func(table, kind string) {
		require.NotContains(t, named, table, "%s is placed twice (%s)", table, kind)
		named[table] = kind
	}
	owner := map[string]string{}
	for _, d := range load.DistributedTables() {
		place(d.Table, "distributed")
		owner[d.Table] = d.Column
		if d.ColocateWith != "" {
			require.Equal(t, columnType(t, owner[d.ColocateWith]), columnType(t, d.Column), "%s is co-located with %s", d.Table, d.ColocateWith)
		}
	}
	want := map[string]string{}
	for _, ep := range catalog.All() {
		want[ep.Table] = load.DistributionColumn(ep)
	}
	require.Equal(t, want, owner, "each fact table of the catalog by its owner")
	for _, table := range load.ReferenceTables {
		place(table, "reference")
	}
	for _, table := range load.CoordinatorTables {
		place(table, "coordinator")
	}

	pool := pgtest.NewPool(t)
	rows, err := pool.Query(t.Context(), `
		SELECT relname FROM pg_class
		WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') AND NOT relispartition`)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.ElementsMatch(t, tables, slices.Collect(maps.Keys(named)), "every table of the schema, and no other, is distributed, a reference table or on the coordinator")

	// A reference table after the tables it refers to.
	rows, err = pool.Query(t.Context(), `
		SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint
		WHERE contype = 'f' AND connamespace = 'public'::regnamespace`)
	require.NoError(t, err)
	var from, to string
	_, err = pgx.ForEachRow(rows, []any{&from, &to}, func() error {
		if i := slices.Index(load.ReferenceTables, from); i >= 0 {
			require.Contains(t, load.ReferenceTables[:i], to, "the reference table %s refers to %s, made a reference table before it", from, to)
		}
		return nil
	})
	require.NoError(t, err)

	d, err := load.Distribute(t.Context(), pool)
	require.NoError(t, err)
	var login bool
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT rolcanlogin FROM pg_roles WHERE rolname = 'etl_analyst'`).Scan(&login))
	if !pgtest.Citus() {
		require.Equal(t, load.Distributed{}, d, "nothing to do on plain PostgreSQL")
		require.False(t, login, "etl_analyst cannot log in on plain PostgreSQL")
		return
	}
	// On Citus (the harness laid the database out as etl migrate up
	// does): a second Distribute has nothing left to do, and Citus holds
	// every table as the layout says, on at least two workers.
	require.NotEmpty(t, d.Citus)
	require.Empty(t, d.Reference)
	require.Empty(t, d.Tables)
	require.True(t, login, "etl_analyst may log in, for the workers")
	rows, err = pool.Query(t.Context(), `
		SELECT logicalrelid::regclass::text, partmethod, coalesce(column_to_column_name(logicalrelid, partkey), ''),
		       (SELECT logicalrelid::regclass::text FROM pg_dist_partition f WHERE f.colocationid = p.colocationid ORDER BY f.logicalrelid::oid LIMIT 1)
		FROM pg_dist_partition p`)
	require.NoError(t, err)
	var rel, method, col, group string
	held := map[string]string{}
	colocated := map[string]string{}
	_, err = pgx.ForEachRow(rows, []any{&rel, &method, &col, &group}, func() error {
		held[rel] = method + " " + col
		colocated[rel] = group
		return nil
	})
	require.NoError(t, err)
	for _, table := range load.ReferenceTables {
		require.Equal(t, "n ", held[table], "%s is a reference table", table)
	}
	for _, dt := range load.DistributedTables() {
		require.Equal(t, "h "+dt.Column, held[dt.Table], "%s is distributed by %s", dt.Table, dt.Column)
		if dt.ColocateWith != "" {
			require.Equal(t, colocated[dt.ColocateWith], colocated[dt.Table], "%s is co-located with %s", dt.Table, dt.ColocateWith)
		}
	}
	require.Len(t, held, len(load.ReferenceTables)+len(load.DistributedTables()), "and no other table")
	var workers int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_dist_node WHERE groupid > 0 AND isactive`).Scan(&workers))
	require.GreaterOrEqual(t, workers, 2, "a coordinator with two workers")
	var placed int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(DISTINCT nodeport) FROM pg_dist_shard_placement p JOIN pg_dist_shard s USING (shardid) WHERE s.logicalrelid = 'backlinks'::regclass`).Scan(&placed))
	require.GreaterOrEqual(t, placed, 2, "backlinks' shards on every worker")
}

// TestCitusDocShowsTheCommand: docs/warehouse.md's "On Citus" gives the
// command that distributes the warehouse, not calls to paste, and names
// every table that stays on the coordinator.
func TestCitusDocShowsTheCommand(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/warehouse.md")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)\n## On Citus\n(.*?)(\n## |$)`).FindStringSubmatch(string(doc))
	require.NotNil(t, m, "docs/warehouse.md has a section On Citus")
	section := m[1]
	require.Contains(t, section, "etl migrate up")
	require.NotContains(t, section, "SELECT create_distributed_table", "no calls to paste")
	for _, table := range append(slices.Clone(load.CoordinatorTables), load.ReferenceTables...) {
		require.Contains(t, section, "`"+table+"`")
	}
}

// columnType is the type of the fact tables' column name.
func columnType(t *testing.T, name string) string {
	t.Helper()
	for _, ep := range catalog.All() {
		for _, c := range load.Columns(ep) {
			if c.Name == name {
				return c.PGType
			}
		}
	}
	t.Fatalf("no fact table has a column %s", name)
	return ""
}
