package pipeline

import (
	"testing"

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
	r := lockRunner(t, pool)
	var bs apiBounds
	a, b := bs.of(r, "http://api", "links", "limit"), bs.of(r, "http://api", "links", "limit")
	row := func() string {
		var s string
		require.NoError(t, pool.QueryRow(ctx, `SELECT accepted || ' ' || coalesce(refused::text, '-') || ' ' || how FROM api_bounds`).Scan(&s))
		return s
	}
	require.NoError(t, a.learn(ctx, 1000, 5000, "named"))

	asked := 1000
	for asked > 1 {
		next, err := a.refused(ctx, asked, 0)
		require.NoError(t, err)
		require.Equal(t, asked/2, next)
		require.NoError(t, b.accepted(ctx, next))
		require.Equal(t, "1000 5000 named", row(), "b's page at %d", next)
		asked = next
	}
	_, err := a.refused(ctx, 1, 0)
	require.ErrorContains(t, err, "the API refused every limit of links, down to 1")
	for _, u := range []*boundUse{a, b} {
		n, err := u.get(ctx)
		require.NoError(t, err)
		require.Equal(t, 1000, n, "the bound known before the search")
	}
	require.Equal(t, "1000 5000 named", row())

	// Refused 1,000 and 500, served 250: the bound is 250.
	for _, asked := range []int{1000, 500} {
		_, err := b.refused(ctx, asked, 0)
		require.NoError(t, err)
	}
	require.NoError(t, a.accepted(ctx, 250))
	require.Equal(t, "1000 5000 named", row(), "a met no refusal of this search")
	require.NoError(t, b.accepted(ctx, 250))
	require.Equal(t, "250 500 probed", row())
	n, err := a.get(ctx)
	require.NoError(t, err)
	require.Equal(t, 250, n)
}
