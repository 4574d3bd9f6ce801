package report_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/report"
)

// Size of the benchmark's warehouse: targets x months, with linksPer links
// and domainsPer referring domains stored per target and month.
const (
	benchTargets    = 2000
	benchMonths     = 24
	benchLinksPer   = 50
	benchDomainsPer = 20
)

// BenchmarkReport2000Targets times etl report's work (Load, then Render)
// on a warehouse of 2,000 targets x 24 months: overview and summary
// history of each, 50 links and 20 referring domains of each per month
// (2.4 million links), a matrix of 6 targets, a ledger of 24 monthly runs
// of 2,000 requests. The rows are made with SQL (a job loading them from
// the sandbox would take an hour on 2 cores); the report is the default
// one: every target in the table, charts for the 10 largest. It reports
// the HTML's size as bytes/report.
//
//	go test -run '^$' -bench Report2000Targets -benchtime 3x ./report
func BenchmarkReport2000Targets(b *testing.B) {
	pool := pgtest.NewPool(b)
	ctx := b.Context()
	l, err := load.New(load.Config{Pool: pool})
	require.NoError(b, err)
	last := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var months []time.Time
	for m := last.AddDate(0, 1-benchMonths, 0); !m.After(last); m = m.AddDate(0, 1, 0) {
		months = append(months, m)
	}
	for _, name := range []string{"overview", "summary", "links", "ref-domains", "matrix"} {
		ep, ok := catalog.Lookup(name)
		require.True(b, ok, name)
		require.NoError(b, l.EnsurePartitions(ctx, ep, months))
	}
	for _, q := range []string{
		`INSERT INTO targets (url, scope) SELECT 'n' || (1000 + g) || '.example', 'ROOT_DOMAIN' FROM generate_series(1, @targets::int) g`,
		`INSERT INTO backlink_overview (target_id, month, observed_at, score, backlinks_count, domains_count, new_count, lost_count)
		 SELECT t.target_id, m, m + interval '20 days', 20 + t.target_id % 60, 1000 + t.target_id * 10 + k * 7, 300 + t.target_id + k, 30, 12
		 FROM targets t, generate_series(@from::date, @to::date, interval '1 month') WITH ORDINALITY AS s(m, k)`,
		`INSERT INTO backlink_history (target_id, month, observed_at, score, backlinks_count, domains_count, month_date)
		 SELECT t.target_id, m, m + interval '20 days', 20 + t.target_id % 60, 1000 + t.target_id * 10 + k * 7, 300 + t.target_id + k, m
		 FROM targets t, generate_series(@from::date, @to::date, interval '1 month') WITH ORDINALITY AS s(m, k)`,
		`INSERT INTO backlinks (target_id, month, observed_at, source_url, target_url, anchor, image_url, first_seen_at, last_seen_at, is_new, is_lost)
		 SELECT t.target_id, m, m + interval '20 days', 'https://s' || g || '.example/p' || (k + g) % 7, 'https://' || t.url || '/', 'a' || g, '',
		        m + ((g * 37 + t.target_id) % 28) * interval '1 day', m + interval '19 days', g % 5 = 0, g % 11 = 0
		 FROM targets t, generate_series(@from::date, @to::date, interval '1 month') WITH ORDINALITY AS s(m, k), generate_series(1, @links::int) g`,
		`INSERT INTO ref_domains (target_id, month, observed_at, domain, backlinks_count, domain_score, first_seen_at, last_seen_at, is_new, is_lost)
		 SELECT t.target_id, m, m + interval '20 days', 'd' || g || '.example', 3, g % 100, m + (g % 28) * interval '1 day', m + interval '19 days', g % 4 = 0, g % 9 = 0
		 FROM targets t, generate_series(@from::date, @to::date, interval '1 month') WITH ORDINALITY AS s(m, k), generate_series(1, @domains::int) g`,
		`INSERT INTO target_sets (name, scope, urls) SELECT 'rivals', 'ROOT_DOMAIN', array_agg(url ORDER BY target_id) FROM (SELECT * FROM targets ORDER BY target_id LIMIT 6) t`,
		`INSERT INTO target_set_members (set_id, position, target_id)
		 SELECT s.set_id, p, t.target_id FROM target_sets s CROSS JOIN generate_series(1, 6) p JOIN targets t ON t.url = s.urls[p]`,
		`INSERT INTO matrix (set_id, month, observed_at, domain, domain_score, backlinks_counts, matches_count)
		 SELECT s.set_id, m, m + interval '20 days', 'm' || g || '.example', g % 100, ARRAY[g % 3, g % 2, 1, 0, g % 4, 2], 4
		 FROM target_sets s, generate_series(@from::date, @to::date, interval '1 month') m, generate_series(1, 500) g`,
		`INSERT INTO latest_months (fact_table, owner_id, month) SELECT 'matrix', set_id, @to::date FROM target_sets`,
		`INSERT INTO runs (job, status, started_at, finished_at, rows, units)
		 SELECT 'weekly', 'succeeded', m + interval '20 days', m + interval '20 days 30 minutes', 120000, 4000000
		 FROM generate_series(@from::date, @to::date, interval '1 month') m`,
		`INSERT INTO unit_ledger (run_id, job, endpoint, target, reserved, spent, reserved_at, settled_at)
		 SELECT r.run_id, 'weekly', 'links', 'n' || g || '.example', 2000, 1900, r.started_at, r.started_at
		 FROM runs r, generate_series(1, @targets::int) g`,
		`ANALYZE`,
	} {
		_, err := pool.Exec(ctx, q, pgx.NamedArgs{"targets": benchTargets, "from": months[0], "to": last,
			"links": benchLinksPer, "domains": benchDomainsPer})
		require.NoError(b, err, q)
	}
	now := func() time.Time { return last.AddDate(0, 0, 20) }
	var size int
	b.ResetTimer()
	for b.Loop() {
		d, err := report.Load(ctx, pool, report.Config{Months: benchMonths, Now: now})
		require.NoError(b, err)
		var out bytes.Buffer
		require.NoError(b, report.Render(&out, d))
		require.Len(b, d.Targets, benchTargets)
		size = out.Len()
	}
	b.ReportMetric(float64(size), "bytes/report")
}
