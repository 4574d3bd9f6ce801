package apibound

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
)

// TestAHalvingIsLearnedFromTheTaskItMet: two tasks share a bound of
// 1,000. Task a is refused 1,000 with no bound named (its request, not
// the size of its limit, is what the API refuses), down to 1; meanwhile
// task b is served each candidate of the halving. Nothing is learned
// from b's pages (they say nothing of why a was refused), and once a is
// refused 1 the bound is 1,000 again, for the run and in api_bounds.
// When the task that was refused is served a smaller value, that value
// is the bound.
func TestAHalvingIsLearnedFromTheTaskItMet(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	cfg := testConfig(pool)
	var bs Bounds
	a, b := bs.Of(cfg, "http://api", "links", "limit"), bs.Of(cfg, "http://api", "links", "limit")
	row := func() string {
		var s string
		require.NoError(t, pool.QueryRow(ctx, `SELECT accepted || ' ' || coalesce(refused::text, '-') || ' ' || how FROM api_bounds`).Scan(&s))
		return s
	}
	require.NoError(t, a.Learn(ctx, 1000, 5000, "named"))

	asked := 1000
	for asked > 1 {
		next, err := a.Refused(ctx, asked, 0)
		require.NoError(t, err)
		require.Equal(t, asked/2, next)
		require.NoError(t, b.Accepted(ctx, next))
		require.Equal(t, "1000 5000 named", row(), "b's page at %d", next)
		asked = next
	}
	_, err := a.Refused(ctx, 1, 0)
	require.ErrorContains(t, err, "the API refused every limit of links, down to 1")
	for _, u := range []*Use{a, b} {
		n, err := u.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, 1000, n, "the bound known before the search")
	}
	require.Equal(t, "1000 5000 named", row())

	// Refused 1,000 and 500, served 250: the bound is 250.
	for _, asked := range []int{1000, 500} {
		_, err := b.Refused(ctx, asked, 0)
		require.NoError(t, err)
	}
	require.NoError(t, a.Accepted(ctx, 250))
	require.Equal(t, "1000 5000 named", row(), "a met no refusal of this search")
	require.NoError(t, b.Accepted(ctx, 250))
	require.Equal(t, "250 500 probed", row())
	n, err := a.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, 250, n)
}

// TestAKnownBoundRefusedPastOffsetZeroIsTheTasksOwn: a known bound
// refused to a task past offset 0, with no smaller one named, may be a
// window of offset + limit: the task halves a limit of its own, which
// another task does not ask and api_bounds does not record, and fails
// alone at 1. A bound not known yet is searched for and learned past
// offset 0 too (the run's probe follows its first page), and a bound
// named is learned at any offset.
func TestAKnownBoundRefusedPastOffsetZeroIsTheTasksOwn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	cfg := testConfig(pool)
	var bs Bounds
	a, b := bs.Of(cfg, "http://api", "links", "limit"), bs.Of(cfg, "http://api", "links", "limit")
	row := func() string {
		var s string
		require.NoError(t, pool.QueryRow(ctx, `SELECT accepted || ' ' || coalesce(refused::text, '-') || ' ' || how FROM api_bounds`).Scan(&s))
		return s
	}
	get := func(u *Use) int {
		n, err := u.Get(ctx)
		require.NoError(t, err)
		return n
	}

	// Unknown: refused 100,000 at offset 100, then served 50,000: learned.
	next, err := a.RefusedAt(ctx, 100_000, 0, 100)
	require.NoError(t, err)
	require.Equal(t, 50_000, next)
	require.NoError(t, a.Accepted(ctx, 50_000))
	require.Equal(t, "50000 100000 probed", row())

	// Known: refused past offset 0, the task's own.
	next, err = a.RefusedAt(ctx, 50_000, 0, 90_000)
	require.NoError(t, err)
	require.Equal(t, 25_000, next)
	require.NoError(t, a.Accepted(ctx, 25_000))
	require.Equal(t, 25_000, get(a))
	require.Equal(t, 50_000, get(b), "another task asks the bound")
	require.Equal(t, "50000 100000 probed", row())
	for asked := 25_000; asked > 1; asked /= 2 {
		_, err = a.RefusedAt(ctx, asked, 0, 90_000)
		require.NoError(t, err)
	}
	_, err = a.RefusedAt(ctx, 1, 0, 90_000)
	require.ErrorContains(t, err, "the API refused every limit of links from offset 90000, down to 1")
	require.Equal(t, 50_000, get(b))
	require.Equal(t, "50000 100000 probed", row())

	// Named past offset 0: learned; at offset 0: searched for as before.
	_, err = b.RefusedAt(ctx, 50_000, 20_000, 7)
	require.NoError(t, err)
	require.Equal(t, "20000 50000 named", row())
	next, err = b.RefusedAt(ctx, 20_000, 0, 0)
	require.NoError(t, err)
	require.Equal(t, 10_000, next)
	require.NoError(t, b.Accepted(ctx, 10_000))
	require.Equal(t, "10000 20000 probed", row())
}

// testConfig reaches api_bounds on pool, at a fixed time, without
// retries.
func testConfig(pool *pgxpool.Pool) Config {
	return Config{Pool: pool, Logger: slog.New(slog.DiscardHandler),
		Now:   func() time.Time { return time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC) },
		Retry: func(ctx context.Context, _ string, do func(context.Context) error) error { return do(ctx) }}
}
