package budget_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/catalog"
)

// TestAffordNeverFitsAnOverflowingWorstCase: a request whose worst case
// passes what an int64 counts fits no cap, however large; it shrinks to
// what the cap affords, or is refused. Before, the worst case of issue
// 12's limit wrapped to 29 units and a cap of 1000 let the whole limit
// through (the sandbox then charged 90,000).
func TestAffordNeverFitsAnOverflowingWorstCase(t *testing.T) {
	t.Parallel()
	links := catalog.Price{Units: 45, Per: catalog.PerLine}
	const huge = 409927646082434481
	for _, tc := range []struct {
		name   string
		lines  int
		shrink bool
		left   int64
		want   int
		ok     bool
	}{
		{"issue 12, whole", huge, false, 1000, 0, false},
		{"issue 12, shrinks", huge, true, 1000, 1000 / 45, true},
		{"largest cap, whole", math.MaxInt, false, math.MaxInt64, 0, false},
		{"largest cap, shrinks", math.MaxInt, true, math.MaxInt64, math.MaxInt64 / 45, true},
		{"fits exactly", 22, false, 22 * 45, 22, true},
		{"no cap", huge, false, -1, huge, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := budget.Afford(links, tc.lines, tc.shrink, tc.left)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}
