package pipeline_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/pgtest"
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
	// set, keyword and country), of the target url alone when set.
	latest bool
	url    string
}

// TestGuideQueriesPrune: on a warehouse of 24 months of every endpoint
// for two targets (one of them not fetched in the last month), each query
// of the guide and each *_latest view reads only the partitions of the
// months and targets it asks for, as EXPLAIN ANALYZE shows (partitions
// pruned at plan time are absent from the plan, those pruned at run time
// never executed) and, for the statements the latest views run in
// latest_month_rows, the transaction's statistics. Each latest view also
// shows the same rows as grouping the whole table would.
func TestGuideQueriesPrune(t *testing.T) {
	t.Parallel()
	// The sandbox's clock moves with the runs, so that each month's rows
	// describe that month (summary's and comparison's month_date).
	var clock atomic.Int64
	sb, err := sandbox.New(sandbox.Config{Seed: 7, APIKeys: []string{"test-key"}, RatePerSecond: -1, MaxConcurrent: -1,
		Now: func() time.Time { return time.Unix(clock.Load(), 0).UTC() }})
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	f := &fixture{sandbox: sb, url: srv.URL, mem: mem, dbURL: pgtest.NewDB(t)}
	f.pool = f.newPool(t)
	client, err := extract.New(extract.Config{BaseURL: f.url, APIKey: "test-key", RatePerSecond: -1, MaxConcurrent: -1})
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
		s, err := pipeline.ParseSpec("jobs.yaml", []byte(fmt.Sprintf(guideSpec, targets, "")), now)
		require.NoError(t, err)
		r, err := pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.pool, Allocator: f.mem,
			Now: func() time.Time { return now }, Concurrency: 8})
		require.NoError(t, err)
		sum, err := r.Run(t.Context(), s.Jobs[0])
		require.NoError(t, err)
		require.Zero(t, sum.Failed(), m.Format("2006-01"))
	}
	_, err = f.pool.Exec(t.Context(), "ANALYZE")
	require.NoError(t, err)
	require.Equal(t, int64(24), f.count(t, `SELECT count(*) FROM pg_partition_tree('backlinks') WHERE isleaf`))
	require.Equal(t, int64(2), f.count(t, `SELECT count(DISTINCT month) FROM backlinks_latest`), "n240 in November, n300 in October")

	// The fact tables and the partitions of each.
	parent := map[string]string{}
	partitions := map[string][]string{}
	rows, err := f.pool.Query(t.Context(), `SELECT c.relname, i.inhparent::regclass::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE c.relkind IN ('r', 'p')`)
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

	// scanned runs query as the analyst under EXPLAIN ANALYZE and returns,
	// per fact table, the partitions it read: those its plan scanned (a
	// node that ran at least once), and those the statements of the
	// functions it called scanned (the *_latest views read through
	// latest_month_rows, whose plans EXPLAIN does not show), as the
	// transaction's statistics count them.
	scanned := func(t *testing.T, query string) map[string][]string {
		t.Helper()
		var plan []byte
		var counted []string
		require.NoError(t, pgx.BeginFunc(t.Context(), f.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE etl_analyst"); err != nil {
				return err
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
			if err := tx.QueryRow(t.Context(), "EXPLAIN (ANALYZE, FORMAT JSON) "+query).Scan(&plan); err != nil {
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
		out := map[string][]string{}
		add := func(rel string) {
			if table, ok := parent[rel]; ok && !slices.Contains(out[table], rel) {
				out[table] = append(out[table], rel)
			}
		}
		var walk func(n planNode)
		walk = func(n planNode) {
			if n.Loops > 0 {
				add(n.Relation)
			}
			for _, c := range n.Plans {
				walk(c)
			}
		}
		walk(doc[0].Plan)
		for _, rel := range counted {
			add(rel)
		}
		for _, v := range out {
			slices.Sort(v)
		}
		return out
	}
	// want returns the partitions of table that sc needs, from the rows.
	want := func(t *testing.T, table string, sc scope) []string {
		t.Helper()
		var q string
		var args []any
		switch {
		case sc.all:
			return slices.Sorted(slices.Values(partitions[table]))
		case !sc.since.IsZero():
			until := sc.until
			if until.IsZero() {
				until = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
			}
			q, args = fmt.Sprintf(`SELECT DISTINCT tableoid::regclass::text FROM %s WHERE month >= $1 AND month < $2`, table), []any{sc.since, until}
		case sc.latest:
			o := owners[table]
			q = fmt.Sprintf(`SELECT DISTINCT x.tableoid::regclass::text FROM %[1]s x
				JOIN (SELECT %[2]s, max(month) AS month FROM %[1]s GROUP BY %[2]s) l USING (%[2]s, month)`, table, o)
			if sc.url != "" {
				q += ` JOIN targets t USING (target_id) WHERE t.url = $1`
				args = append(args, sc.url)
			}
		}
		rows, err := f.pool.Query(t.Context(), q+" ORDER BY 1", args...)
		require.NoError(t, err)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.NotEmpty(t, names, "%s: no rows for %+v", table, sc)
		if !sc.all {
			require.Less(t, len(names), len(partitions[table]), "%s: the test must leave partitions to prune", table)
		}
		return names
	}
	check := func(t *testing.T, query string, needs map[string]scope) {
		t.Helper()
		got := scanned(t, query)
		wantAll := map[string][]string{}
		for table, sc := range needs {
			wantAll[table] = want(t, table, sc)
		}
		require.Equal(t, wantAll, got, "the partitions read by:\n%s", query)
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
			require.NoError(t, f.pool.QueryRow(t.Context(), fmt.Sprintf(sum, "SELECT * FROM "+view)).Scan(&viewSum))
			require.NoError(t, f.pool.QueryRow(t.Context(), fmt.Sprintf(sum, grouped)).Scan(&groupedSum))
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
	Loops    int64      `json:"Actual Loops"`
	Plans    []planNode `json:"Plans"`
}
