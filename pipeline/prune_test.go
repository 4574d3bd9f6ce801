package pipeline_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/internal/testworld"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

// guideSection matches a heading of the guide and the first SQL block
// under it.
var guideSection = regexp.MustCompile("(?s)\n### ([^\n]+)\n[^#]*?```sql\n(.*?)```")

// scope says which partitions of a fact table a query needs.
type scope struct {
	all bool // every partition: the query reads every month
	// since, until: the partitions of the months from since on (before
	// until, unless zero).
	since, until time.Time
	// latest: the partitions of the latest month of each owner (target,
	// set, keyword and country), through a *_latest view. The plan keeps
	// every partition of the table (the view prunes when it runs, once it
	// knows the oldest latest month); the query reads those of every
	// owner's latest month, of the target url alone when it is set.
	latest bool
	url    string
	// function: the query reads the table through a function that runs
	// its own statement (link_velocity): the partitions are in no plan
	// EXPLAIN shows, and are read as of since (and until).
	function bool
}

// TestGuideQueriesPrune: on a warehouse of 24 months of every endpoint
// for two targets (one of them not fetched in the last month), each query
// of the guide and each *_latest view keeps in its plan only the
// partitions of the months it asks for, as plain EXPLAIN shows them (the
// partitions pruned when the plan is made are absent from it, those
// pruned when the executor starts are counted as "Subplans Removed"), and
// reads only those of the targets it asks for, as EXPLAIN ANALYZE (nodes
// that ran) and the transaction's statistics (every scan, even one inside
// a function) show. Each latest view also shows the same rows as grouping
// the whole table would.
func TestGuideQueriesPrune(t *testing.T) {
	t.Parallel()
	// The sandbox's clock moves with the runs, so that each month's rows
	// describe that month (summary's and comparison's month_date).
	var clock atomic.Int64
	f := newWorld(t, testworld.Options{Now: func() time.Time { return time.Unix(clock.Load(), 0).UTC() },
		Sandbox: sandbox.Config{RatePerSecond: -1, MaxConcurrent: -1}})
	client, err := extract.New(extract.Config{BaseURL: f.URL, APIKey: "test-key", RatePerSecond: -1, MaxConcurrent: -1})
	require.NoError(t, err)
	first, last := time.Date(2024, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for m := first; !m.After(last); m = m.AddDate(0, 1, 0) {
		targets := guideTargets
		if m.Equal(last) {
			targets = "{url: n240.example, scope: ROOT_DOMAIN}" // n300's latest month is October
		}
		now := m.AddDate(0, 0, 20)
		clock.Store(now.Unix())
		// Keyword metrics of each run's own month.
		s, err := jobspec.ParseSpec("jobs.yaml", []byte(fmt.Sprintf(guideSpec, targets, "")), now)
		require.NoError(t, err)
		r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.Pool, Allocator: f.Mem,
			Now: func() time.Time { return now }, Concurrency: 8})
		require.NoError(t, err)
		sum, err := r.Run(t.Context(), s.Jobs[0])
		require.NoError(t, err)
		require.Zero(t, sum.Failed(), m.Format("2006-01"))
	}
	_, err = f.Pool.Exec(t.Context(), "ANALYZE")
	require.NoError(t, err)
	require.Equal(t, int64(24), f.Count(t, `SELECT count(*) FROM pg_partition_tree('backlinks') WHERE isleaf`))
	require.Equal(t, int64(2), f.Count(t, `SELECT count(DISTINCT month) FROM backlinks_latest`), "n240 in November, n300 in October")

	// The fact tables and the partitions of each.
	parent := map[string]string{}
	partitions := map[string][]string{}
	rows, err := f.Pool.Query(t.Context(), `SELECT c.relname, i.inhparent::regclass::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE c.relkind IN ('r', 'p')`)
	require.NoError(t, err)
	var leaf, table string
	_, err = pgx.ForEachRow(rows, []any{&leaf, &table}, func() error {
		parent[leaf] = table
		partitions[table] = append(partitions[table], leaf)
		return nil
	})
	require.NoError(t, err)
	owners := map[string]string{}
	for _, ep := range catalog.All() {
		owners[ep.Table] = "target_id"
		switch {
		case ep.PerSet:
			owners[ep.Table] = "set_id"
		case !ep.PerTarget:
			owners[ep.Table] = "keyword, country"
		}
	}

	pv := newPlanView(t, f.Pool, parent)
	// want returns the partitions of table that sc needs, from the rows:
	// those its plan keeps, and those it reads: at least least, at most
	// most.
	want := func(t *testing.T, table string, sc scope) (planned, least, most []string) {
		t.Helper()
		names := func(q string, args ...any) []string {
			rows, err := f.Pool.Query(t.Context(), q+" ORDER BY 1", args...)
			require.NoError(t, err)
			names, err := pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			require.NotEmpty(t, names, "%s: no rows for %+v", table, sc)
			return pv.names(names) // on Citus, tableoid names a shard

		}
		switch {
		case sc.all:
			all := slices.Sorted(slices.Values(partitions[table]))
			return all, all, all
		case !sc.since.IsZero():
			until := sc.until
			if until.IsZero() {
				until = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
			}
			planned = names(fmt.Sprintf(`SELECT DISTINCT tableoid::regclass::text FROM %s WHERE month >= $1 AND month < $2`, table), sc.since, until)
			least, most = planned, planned
			if sc.function {
				planned = nil
			}
		case sc.latest:
			// The plan keeps every partition; the view reads those of
			// the owners' latest months, and none older than the oldest
			// of them. Which of those it reads for one url is the
			// planner's choice: at each owner its month's alone (a
			// nested loop), or every one from the oldest (a hash join).
			o := owners[table]
			q := fmt.Sprintf(`SELECT DISTINCT x.tableoid::regclass::text FROM %[1]s x
				JOIN (SELECT %[2]s, max(month) AS month FROM %[1]s GROUP BY %[2]s) l USING (%[2]s, month)`, table, o)
			planned, least = slices.Sorted(slices.Values(partitions[table])), names(q)
			most = names(fmt.Sprintf(`SELECT DISTINCT tableoid::regclass::text FROM %[1]s
				WHERE month >= (SELECT min(month) FROM (SELECT max(month) AS month FROM %[1]s GROUP BY %[2]s) l)`, table, o))
			if sc.url != "" {
				least = names(q+` JOIN targets t USING (target_id) WHERE t.url = $1`, sc.url)
			}
		}
		require.Less(t, len(most), len(partitions[table]), "%s: the test must leave partitions to prune", table)
		return planned, least, most
	}
	check := func(t *testing.T, query string, needs map[string]scope) {
		t.Helper()
		wantPlanned, least, most := map[string][]string{}, map[string][]string{}, map[string][]string{}
		for table, sc := range needs {
			p, l, m := want(t, table, sc)
			if p != nil {
				wantPlanned[table] = p
			}
			if sc.function && pgtest.Citus() {
				// On Citus the function's statements read the shards
				// on the workers, beyond the coordinator's
				// transaction statistics (and, as on PostgreSQL, in no
				// plan EXPLAIN shows): what they read is not seen.
				continue
			}
			least[table], most[table] = l, m
		}
		planned, spans := pv.planned(t, f.Pool, query)
		require.Equal(t, wantPlanned, planned, "the partitions the plan keeps, of:\n%s", query)
		for table, ns := range spans {
			for _, n := range ns {
				require.Equal(t, len(partitions[table]), n,
					"%s: the executor prunes when it starts, so each scan of the table names every partition, kept or removed:\n%s", table, query)
			}
		}
		read := pv.read(t, f.Pool, query)
		require.ElementsMatch(t, slices.Collect(maps.Keys(most)), slices.Collect(maps.Keys(read)), "the tables read by:\n%s", query)
		for table := range most {
			require.Subset(t, read[table], least[table], "the partitions read by:\n%s", query)
			require.Subset(t, most[table], read[table], "the partitions read by:\n%s", query)
		}
	}

	latest := scope{latest: true}
	guideNeeds := map[string]map[string]scope{
		"Link growth per month":                      {"backlink_history": {all: true}},
		"One target's history since January, by url": {"backlink_history": {since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}},
		"Lost links":                                  {"backlinks": latest},
		"New links this month":                        {"backlinks": latest},
		"Anchor text distribution":                    {"anchors": latest},
		"Referring-domain quality":                    {"ref_domains": latest},
		"Score profile against the referring domains": {"score_profile": latest},
		"Competitor gap":                              {"matrix": latest},
		"Side by side with the competition":           {"comparison": latest},
		"Nearest competitors":                         {"competitors": latest},
		"Follow ratio and link types per target":      {"backlink_overview": {all: true}},
		"Top linked pages of a target":                {"indexed_pages": {latest: true, url: "n240.example"}},
		"Keyword trends across months":                {"keyword_metrics": {all: true}},
		"Keywords with an AI overview":                {"keyword_metrics": latest},
		// The analytic views (migration 0024).
		"New and lost links per month":             {"backlinks": {since: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)}},
		"New and lost referring domains per month": {"ref_domains": {since: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)}},
		"Link velocity and its spikes":             {"backlinks": {since: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), function: true}},
		"Competitor gap, best first":               {"matrix": {since: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), until: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}},
		"Authority over time": {"backlink_history": {since: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)},
			"backlink_overview": {since: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}},
	}
	guide, err := os.ReadFile("../docs/warehouse.md")
	require.NoError(t, err)
	sections := guideSection.FindAllStringSubmatch(string(guide), -1)
	seen := map[string]bool{}
	for _, s := range sections {
		heading, query := s[1], s[2]
		seen[heading] = true
		t.Run("guide/"+heading, func(t *testing.T) {
			check(t, query, guideNeeds[heading]) // none: it reads no fact table
		})
	}
	for heading := range guideNeeds {
		require.True(t, seen[heading], "the guide has no query %q any more", heading)
	}

	// Every *_latest view, whole and for one target named by its url; and
	// the rows each shows are those of each owner's latest month.
	for _, ep := range catalog.All() {
		view := ep.Table + "_latest"
		t.Run("view/"+view, func(t *testing.T) {
			check(t, "SELECT * FROM "+view, map[string]scope{ep.Table: latest})
			if ep.PerTarget {
				check(t, "SELECT v.* FROM "+view+" v JOIN targets t USING (target_id) WHERE t.url = 'n300.example'",
					map[string]scope{ep.Table: {latest: true, url: "n300.example"}})
			}
			o := owners[ep.Table]
			grouped := fmt.Sprintf(`SELECT x.* FROM %[1]s x JOIN (SELECT %[2]s, max(month) AS month FROM %[1]s GROUP BY %[2]s) l USING (%[2]s, month)`, ep.Table, o)
			sum := `SELECT count(*) || ':' || coalesce(sum(('x' || left(md5(r::text), 15))::bit(60)::bigint), 0) FROM (%s) r`
			var viewSum, groupedSum string
			require.NoError(t, f.Pool.QueryRow(t.Context(), fmt.Sprintf(sum, "SELECT * FROM "+view)).Scan(&viewSum))
			require.NoError(t, f.Pool.QueryRow(t.Context(), fmt.Sprintf(sum, grouped)).Scan(&groupedSum))
			require.Equal(t, groupedSum, viewSum, "%s shows each owner's latest month", view)
			require.NotEqual(t, "0:0", viewSum)
		})
	}
	t.Run("view/matrix_targets_latest", func(t *testing.T) {
		check(t, "SELECT * FROM matrix_targets_latest WHERE url = 'n300.example'", map[string]scope{"matrix": latest})
	})
	// A month named by constants, the target by its url.
	t.Run("month by url", func(t *testing.T) {
		check(t, `SELECT count(*) FROM backlinks b JOIN targets t USING (target_id)
			WHERE t.url = 'n300.example' AND b.month = DATE '2026-10-01'`,
			map[string]scope{"backlinks": {since: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), until: last}})
	})
	require.ElementsMatch(t, slices.Collect(maps.Keys(owners)), slices.Collect(maps.Keys(partitions)), "every fact table has partitions")
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	Relation string     `json:"Relation Name"`
	Loops    *int64     `json:"Actual Loops"` // under ANALYZE
	Removed  int        `json:"Subplans Removed"`
	Plans    []planNode `json:"Plans"`
}

// UnmarshalJSON reads a node and its children: those of Plans, and on
// Citus those of a Custom Scan's Distributed Query too (each task's
// Remote Plan and each subplan, under keys of their own), so that a walk
// of the plan reaches the workers' scans of the shards.
func (n *planNode) UnmarshalJSON(b []byte) error {
	type plain planNode
	if err := json.Unmarshal(b, (*plain)(n)); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	raw, ok := fields["Distributed Query"]
	if !ok {
		return nil
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return err
	}
	var find func(v any) error
	find = func(v any) error {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["Node Type"]; ok {
				b, err := json.Marshal(v)
				if err != nil {
					return err
				}
				var c planNode
				if err := json.Unmarshal(b, &c); err != nil {
					return err
				}
				n.Plans = append(n.Plans, c)
				return nil
			}
			for _, c := range v {
				if err := find(c); err != nil {
					return err
				}
			}
		case []any:
			for _, c := range v {
				if err := find(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return find(tree)
}

// planView reads, from EXPLAIN of a query run as the analyst, the
// partitions of the fact tables it plans and reads.
type planView struct {
	parent map[string]string // partition: its fact table
	// shard, on Citus: a shard of a partition (as the workers' plans
	// and tableoid name it): that partition.
	shard map[string]string
}

// newPlanView reads the partitions of the database's fact tables, and on
// Citus the shards of each.
func newPlanView(t *testing.T, pool *pgxpool.Pool, parent map[string]string) planView {
	t.Helper()
	pv := planView{parent: parent, shard: map[string]string{}}
	if !pgtest.Citus() {
		return pv
	}
	rows, err := pool.Query(t.Context(), `SELECT shard_name(logicalrelid, shardid), logicalrelid::regclass::text FROM pg_dist_shard`)
	require.NoError(t, err)
	var shard, rel string
	_, err = pgx.ForEachRow(rows, []any{&shard, &rel}, func() error { pv.shard[shard] = rel; return nil })
	require.NoError(t, err)
	return pv
}

// name is the partition rel names: rel, or on Citus the partition whose
// shard rel is.
func (pv planView) name(rel string) string {
	if p, ok := pv.shard[rel]; ok {
		return p
	}
	return rel
}

// names are the partitions rels name (see name), sorted, once each.
func (pv planView) names(rels []string) []string {
	out := make([]string, len(rels))
	for i, r := range rels {
		out[i] = pv.name(r)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// explain returns the plan of EXPLAIN (options, FORMAT JSON) query, run
// as the analyst, and the relations whose scans the transaction's
// statistics counted meanwhile (those of the statements of functions
// too, whose plans EXPLAIN does not show).
func (pv planView) explain(t *testing.T, pool *pgxpool.Pool, options, query string) (planNode, []string) {
	t.Helper()
	var plan []byte
	var counted []string
	require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE etl_analyst"); err != nil {
			return err
		}
		if pgtest.Citus() {
			// Every task's plan, not one of them: each reads shards of
			// its own.
			if _, err := tx.Exec(t.Context(), "SET LOCAL citus.explain_all_tasks = on"); err != nil {
				return err
			}
		}
		// The backend's counts not yet flushed to the cumulative
		// statistics, before and after: none are flushed inside a
		// transaction.
		scans := func() (map[string]int64, error) {
			rows, err := tx.Query(t.Context(), `SELECT relname, seq_scan + coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables`)
			if err != nil {
				return nil, err
			}
			n := map[string]int64{}
			var rel string
			var c int64
			_, err = pgx.ForEachRow(rows, []any{&rel, &c}, func() error { n[rel] = c; return nil })
			return n, err
		}
		before, err := scans()
		if err != nil {
			return err
		}
		if err := tx.QueryRow(t.Context(), "EXPLAIN ("+options+"FORMAT JSON) "+query).Scan(&plan); err != nil {
			return err
		}
		after, err := scans()
		if err != nil {
			return err
		}
		for rel, c := range after {
			if c > before[rel] {
				counted = append(counted, rel)
			}
		}
		return nil
	}), query)
	var doc []struct{ Plan planNode }
	require.NoError(t, json.Unmarshal(plan, &doc))
	return doc[0].Plan, counted
}

// planned returns, per fact table, the partitions that plain EXPLAIN of
// query keeps, and for each Append over the table that keeps some, the
// partitions it names: those it keeps and those the executor removed when
// it started (its Subplans Removed).
func (pv planView) planned(t *testing.T, pool *pgxpool.Pool, query string) (map[string][]string, map[string][]int) {
	t.Helper()
	plan, _ := pv.explain(t, pool, "", query)
	kept, spans := map[string][]string{}, map[string][]int{}
	var walk func(n planNode)
	walk = func(n planNode) {
		if table, ok := pv.parent[pv.name(n.Relation)]; ok {
			kept[table] = append(kept[table], pv.name(n.Relation))
		}
		tables := map[string]map[string]bool{}
		for _, c := range n.Plans {
			walk(c)
			if table, ok := pv.parent[pv.name(c.Relation)]; ok {
				if tables[table] == nil {
					tables[table] = map[string]bool{}
				}
				tables[table][c.Relation] = true
			}
		}
		if n.Removed > 0 && len(tables) == 1 {
			for table, rels := range tables {
				spans[table] = append(spans[table], n.Removed+len(rels))
			}
		}
	}
	walk(plan)
	for table, v := range kept {
		slices.Sort(v)
		kept[table] = slices.Compact(v)
	}
	return kept, spans
}

// read returns, per fact table, the partitions that query reads: those
// of the nodes that ran under EXPLAIN ANALYZE, and those the
// transaction's statistics saw scanned.
func (pv planView) read(t *testing.T, pool *pgxpool.Pool, query string) map[string][]string {
	t.Helper()
	plan, counted := pv.explain(t, pool, "ANALYZE, ", query)
	out := map[string][]string{}
	add := func(rel string) {
		rel = pv.name(rel)
		if table, ok := pv.parent[rel]; ok && !slices.Contains(out[table], rel) {
			out[table] = append(out[table], rel)
		}
	}
	var walk func(n planNode)
	walk = func(n planNode) {
		if n.Loops != nil && *n.Loops > 0 {
			add(n.Relation)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(plan)
	for _, rel := range counted {
		add(rel)
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// TestLatestViewsManyMonths: where the owners of a table have their latest
// months in many different months (targets dropped from the jobs at
// several times), a *_latest view still shows each owner's latest month,
// and reads those months' partitions and none older than the oldest of
// them (of every partition its plan keeps, the executor skips those; at
// each owner, in a nested loop, all but its month's).
func TestLatestViewsManyMonths(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	l, err := load.New(load.Config{Pool: pool})
	require.NoError(t, err)
	links, _ := catalog.Lookup("links")
	kw, _ := catalog.Lookup("keyword-metrics")
	// Target (or keyword) i is fetched from 2024-01 to its last month:
	// latest months 2026-11 (twice), 2026-10, 2026-06, 2026-01, 2025-07
	// and 2024-03; keyword metrics by year, 2024 to 2026.
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	lastMonths := []time.Time{
		time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC),
	}
	var all []time.Time
	for m := base; !m.After(lastMonths[0]); m = m.AddDate(0, 1, 0) {
		all = append(all, m)
	}
	require.NoError(t, l.EnsurePartitions(ctx, links, all))
	require.NoError(t, l.EnsurePartitions(ctx, kw, all))
	for i, last := range lastMonths {
		id, err := l.Target(ctx, fmt.Sprintf("n%d.example", 100*(i+1)), catalog.RootDomain)
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `
			INSERT INTO backlinks (target_id, month, observed_at, source_url, target_url, anchor, image_url)
			SELECT $1, m, m, 'https://s' || g || '.example/', 'https://t.example/', 'a' || g, ''
			FROM generate_series($2::date, $3::date, interval '1 month') m, generate_series(1, 3) g`, id, base, last)
		require.NoError(t, err)
		_, err = pool.Exec(ctx, `
			INSERT INTO keyword_metrics (keyword, country, month, observed_at, search_volume)
			SELECT $1, 'US', m, m, 10 FROM generate_series($2::date, $3::date, interval '1 month') m`, fmt.Sprintf("keyword %d", i), base, last)
		require.NoError(t, err)
	}
	// latest_months as the loader keeps it.
	_, err = pool.Exec(ctx, `
		INSERT INTO latest_months (fact_table, owner_id, month) SELECT 'backlinks', target_id, max(month) FROM backlinks GROUP BY target_id;
		INSERT INTO keyword_latest_months (keyword, country, month) SELECT keyword, country, max(month) FROM keyword_metrics GROUP BY keyword, country;
		ANALYZE`)
	require.NoError(t, err)

	parent := map[string]string{}
	rows, err := pool.Query(ctx, `SELECT c.relname, i.inhparent::regclass::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid`)
	require.NoError(t, err)
	var leaf, table string
	_, err = pgx.ForEachRow(rows, []any{&leaf, &table}, func() error { parent[leaf] = table; return nil })
	require.NoError(t, err)
	pv := newPlanView(t, pool, parent)
	names := func(table string, months ...time.Time) []string {
		ep := links
		if table == "keyword_metrics" {
			ep = kw
		}
		var out []string
		for _, m := range months {
			out = append(out, load.LayoutOf(ep).PartitionName(table, m))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	for _, c := range []struct{ table, owner string }{{"backlinks", "target_id"}, {"keyword_metrics", "keyword, country"}} {
		t.Run(c.table, func(t *testing.T) {
			view := "SELECT * FROM " + c.table + "_latest"
			if c.table == "backlinks" { // keyword metrics' 3 years are all read
				require.Less(t, len(names(c.table, lastMonths...)), len(names(c.table, all...)), "the test leaves partitions to prune")
			}
			var from []time.Time
			for _, m := range all {
				if !m.Before(lastMonths[len(lastMonths)-1]) {
					from = append(from, m)
				}
			}
			read := pv.read(t, pool, view)[c.table]
			require.Subset(t, read, names(c.table, lastMonths...), "every owner's latest month")
			require.Subset(t, names(c.table, from...), read, "and none older than the oldest of them")

			sum := `SELECT count(*) || ':' || sum(('x' || left(md5(r::text), 15))::bit(60)::bigint) FROM (%s) r`
			grouped := fmt.Sprintf(`SELECT x.* FROM %[1]s x JOIN (SELECT %[2]s, max(month) AS month FROM %[1]s GROUP BY %[2]s) l USING (%[2]s, month)`, c.table, c.owner)
			var viewSum, groupedSum string
			require.NoError(t, pool.QueryRow(ctx, fmt.Sprintf(sum, view)).Scan(&viewSum))
			require.NoError(t, pool.QueryRow(ctx, fmt.Sprintf(sum, grouped)).Scan(&groupedSum))
			require.Equal(t, groupedSum, viewSum, "the view shows each owner's latest month")
		})
	}
}
