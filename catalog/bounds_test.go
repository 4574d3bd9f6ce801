package catalog_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// TestPriceSaturates: a worst case or a cost past what an int64 counts is
// math.MaxInt64, never a wrapped (small, or negative) number. The limit of
// issue 12 wrapped to 29 units at 45 a line, so a cap of 1000 paid it.
func TestPriceSaturates(t *testing.T) {
	t.Parallel()
	perLine := catalog.Price{Units: 45, Per: catalog.PerLine}
	perRequest := catalog.Price{Units: 45, Per: catalog.PerRequest}
	for _, tc := range []struct {
		name  string
		price catalog.Price
		lines int
		want  int64
	}{
		{"issue 12", perLine, 409927646082434481, math.MaxInt64},
		{"just past", perLine, math.MaxInt64/45 + 1, math.MaxInt64},
		{"just fits", perLine, math.MaxInt64 / 45, math.MaxInt64 / 45 * 45},
		{"max int", perLine, math.MaxInt, math.MaxInt64},
		{"negative past", perLine, math.MinInt64/45 - 1, math.MinInt64},
		{"per request", perRequest, math.MaxInt, 45},
		{"zero lines", perLine, 0, 0},
		{"at the bound", perLine, catalog.MaxLimit, 45 * math.MaxInt32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tc.price.Worst(tc.lines))
			require.Equal(t, tc.want, tc.price.Cost(tc.lines))
		})
	}
}

func TestAddUnitsSaturates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		a, b, want int64
	}{
		{"small", 2, 3, 5},
		{"to the top", math.MaxInt64 - 1, 1, math.MaxInt64},
		{"past the top", math.MaxInt64, 1, math.MaxInt64},
		{"two halves past", math.MaxInt64/2 + 1, math.MaxInt64/2 + 1, math.MaxInt64},
		{"past the bottom", math.MinInt64, -1, math.MinInt64},
		{"signs differ", math.MaxInt64, math.MinInt64, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, catalog.AddUnits(tc.a, tc.b))
			require.Equal(t, tc.want, catalog.AddUnits(tc.b, tc.a))
		})
	}
}

// TestBoundsLeaveRoom checks the reasoning of MaxLimit, MaxTaskRows and
// MaxUnits against the catalog's prices: a cap plus the worst case of a
// page, or of a task, of any endpoint stays far below what an int64
// holds, so no sum of the ledger or the planner comes near saturating. A
// price added to the catalog that breaks this fails here.
func TestBoundsLeaveRoom(t *testing.T) {
	t.Parallel()
	for _, ep := range catalog.All() {
		page := ep.Price.Worst(catalog.MaxLimit)
		task := ep.Price.Worst(catalog.MaxTaskRows)
		for _, worst := range []int64{page, task} {
			require.Less(t, worst, catalog.MaxUnits, ep.Name)
			// A thousand caps' worth of tasks still sums below an int64.
			require.Less(t, catalog.MaxUnits+worst, int64(math.MaxInt64/1000), ep.Name)
		}
	}
}
