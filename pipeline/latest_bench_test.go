package pipeline_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/migrations"
)

// BenchmarkLatestViews reads backlinks_latest (every target's rows, and
// one target's by its url) on a warehouse of 60 months of 100 targets,
// 20 links each month, with the views of 0016 (a table function inside a
// UNION) and of 0023 (the fact table alone): where every target's
// latest month is the last ("current"), and where the targets' latest
// months are 8 different months ("dropped": targets dropped from the
// jobs at 7 different times).
func BenchmarkLatestViews(b *testing.B) {
	ctx := context.Background()
	last := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var months []time.Time
	for m := last.AddDate(0, -59, 0); !m.After(last); m = m.AddDate(0, 1, 0) {
		months = append(months, m)
	}
	for _, sc := range []struct {
		name string
		// back is how many months before the last target i was last fetched.
		back func(i int) int
	}{
		{"current", func(int) int { return 0 }},
		{"dropped", func(i int) int { return (i % 8) * 6 }},
	} {
		dbURL, pool := latestWarehouse(b, months, 20, func(i int) time.Time { return last.AddDate(0, -sc.back(i), 0) })
		for _, views := range []struct {
			name    string
			version uint
		}{{"views=0016", 20}, {"views=0023", 23}} {
			if _, err := migrations.Goto(ctx, dbURL, views.version); err != nil {
				b.Fatal(err)
			}
			for _, q := range []struct{ name, sql string }{
				{"all", `SELECT count(*) FROM backlinks_latest`},
				{"one url", `SELECT count(*) FROM backlinks_latest v JOIN targets t USING (target_id) WHERE t.url = 'n7.example'`},
			} {
				b.Run(sc.name+"/"+views.name+"/"+q.name, func(b *testing.B) {
					var n int64
					for b.Loop() {
						if err := pool.QueryRow(ctx, q.sql).Scan(&n); err != nil {
							b.Fatal(err)
						}
					}
					if n == 0 {
						b.Fatal("no rows")
					}
				})
			}
		}
		pool.Close()
	}
}

// BenchmarkLatestViewsHistory reads backlinks_latest for one target by its
// url, and for every target, on a warehouse of 100 targets of 300 links
// a month (the example's max_rows), with 1 and with 12 months stored and
// the same latest month, with the views of 0023 and of 0028: how the
// cost of a view grows with the history kept (issue 32 asks for 12
// months within 1.2 times 1 month).
func BenchmarkLatestViewsHistory(b *testing.B) {
	ctx := context.Background()
	last := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, stored := range []int{1, 12} {
		var months []time.Time
		for m := last.AddDate(0, 1-stored, 0); !m.After(last); m = m.AddDate(0, 1, 0) {
			months = append(months, m)
		}
		dbURL, pool := latestWarehouse(b, months, 300, func(int) time.Time { return last })
		for _, views := range []struct {
			name    string
			version uint
		}{{"views=0023", 27}, {"views=0028", 28}} {
			if _, err := migrations.Goto(ctx, dbURL, views.version); err != nil {
				b.Fatal(err)
			}
			for _, q := range []struct{ name, sql string }{
				{"one url", `SELECT count(*) FROM backlinks_latest v JOIN targets t USING (target_id) WHERE t.url = 'n7.example'`},
				{"all", `SELECT count(*) FROM backlinks_latest`},
			} {
				b.Run(fmt.Sprintf("months=%d/%s/%s", stored, views.name, q.name), func(b *testing.B) {
					var n int64
					for b.Loop() {
						if err := pool.QueryRow(ctx, q.sql).Scan(&n); err != nil {
							b.Fatal(err)
						}
					}
					if n == 0 {
						b.Fatal("no rows")
					}
				})
			}
		}
		pool.Close()
	}
}

// latestWarehouse makes a database of 100 targets n0 to n99.example, each
// with perMonth links in every month of months up to upTo(i), and
// latest_months as the loader keeps it, vacuumed and analyzed; the pool
// is closed when b ends.
func latestWarehouse(b *testing.B, months []time.Time, perMonth int, upTo func(i int) time.Time) (string, *pgxpool.Pool) {
	ctx := context.Background()
	links, _ := catalog.Lookup("links")
	dbURL := pgtest.NewDB(b)
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	l, err := load.New(load.Config{Pool: pool})
	if err != nil {
		b.Fatal(err)
	}
	if err := l.EnsurePartitions(ctx, links, months); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		id, err := l.Target(ctx, fmt.Sprintf("n%d.example", i), catalog.RootDomain)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `
			INSERT INTO backlinks (target_id, month, observed_at, source_url, target_url, anchor, image_url, page_score)
			SELECT $1, m, m, 'https://s' || g || '.example/', 'https://t.example/', 'a', '', g
			FROM generate_series($2::date, $3::date, interval '1 month') m, generate_series(1, $4) g`, id, months[0], upTo(i), perMonth); err != nil {
			b.Fatal(err)
		}
	}
	for _, sql := range []string{
		`INSERT INTO latest_months (fact_table, owner_id, month) SELECT 'backlinks', target_id, max(month) FROM backlinks GROUP BY target_id`,
		`VACUUM ANALYZE`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			b.Fatal(err)
		}
	}
	return dbURL, pool
}
