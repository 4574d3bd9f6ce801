package load_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/transform"
)

// linksRecords decodes n links of the sandbox target n<n>.example into
// Arrow records of 10,000 rows, as a run's pages would be.
func linksRecords(b *testing.B, n int) (*catalog.Endpoint, []arrow.Record, int64) {
	b.Helper()
	now := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)
	sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return now }, APIKeys: []string{"k"}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(sb.Handler())
	defer srv.Close()
	ep, _ := catalog.Lookup("links")
	var recs []arrow.Record
	var size int64
	for off := 0; off < n; off += 10_000 {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s%s?url=n%d.example&scope=ROOT_DOMAIN&format=csv&limit=10000&offset=%d", srv.URL, ep.Path, n, off), nil)
		req.Header.Set("Authorization", "Apikey k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		size += int64(len(body))
		dec, err := transform.NewCSVDecoder(bytes.NewReader(body), ep, transform.Options{BatchRows: 10_000, Allocator: memory.NewGoAllocator()})
		if err != nil {
			b.Fatal(err)
		}
		for {
			rec, _, err := dec.Next(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			recs = append(recs, rec)
		}
		dec.Release()
	}
	return ep, recs, size
}

// BenchmarkPageLinks loads 100,000 links (pages of 10,000) in a
// transaction rolled back after each iteration: Stage only copies them
// into the staging table; Upsert moves them into an empty table by the
// upsert; FirstLoad as a task that found its target's month empty does;
// Rerun over a table that holds them, no row changed; Update over a table
// that holds them, every row changed.
func BenchmarkPageLinks(b *testing.B) {
	ep, recs, size := linksRecords(b, 100_000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	pool := pgtest.NewPool(b)
	l, err := load.New(load.Config{Pool: pool})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var id int64
	if err := pool.QueryRow(ctx, `INSERT INTO targets (url, scope) VALUES ('n100000.example', 'ROOT_DOMAIN') RETURNING target_id`).Scan(&id); err != nil {
		b.Fatal(err)
	}
	month := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	if err := l.EnsurePartitions(ctx, ep, []time.Time{month}); err != nil {
		b.Fatal(err)
	}
	load1 := func(b *testing.B, tx pgx.Tx, upsert, first bool) {
		for _, rec := range recs {
			page, err := l.NewPage(ctx, tx, ep)
			if err != nil {
				b.Fatal(err)
			}
			page.FirstLoad = first
			if err := page.Stage(ctx, load.Batch{Endpoint: ep, TargetID: id, Month: month, ObservedAt: month, Record: rec}); err != nil {
				b.Fatal(err)
			}
			if upsert {
				if _, err := page.Upsert(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for _, arm := range []struct {
		name                          string
		upsert, first, filled, change bool
	}{
		{"Stage", false, false, false, false},
		{"Upsert", true, false, false, false},
		{"FirstLoad", true, true, false, false},
		{"Rerun", true, false, true, false},
		{"Update", true, false, true, true},
	} {
		if arm.filled {
			tx, err := pool.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `TRUNCATE backlinks`); err != nil {
				b.Fatal(err)
			}
			load1(b, tx, true, true)
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
			if arm.change {
				// Every value changes: the update path writes every row.
				if _, err := pool.Exec(ctx, `UPDATE backlinks SET observed_at = observed_at - interval '1 day', page_score = page_score + 1`); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := pool.Exec(ctx, `VACUUM ANALYZE backlinks`); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(arm.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for range b.N {
				tx, err := pool.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				load1(b, tx, arm.upsert, arm.first)
				_ = tx.Rollback(ctx)
			}
			b.ReportMetric(float64(b.N)*100_000/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
