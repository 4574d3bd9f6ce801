package main

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSpreadOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []float64
		want spread
	}{
		{"one", []float64{2}, spread{2, 2, 2}},
		{"odd count, unsorted", []float64{3, 1, 2}, spread{2, 1, 3}},
		{"even count: mean of the middle two", []float64{4, 1, 3, 2}, spread{2.5, 1, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := append([]float64(nil), tt.in...)
			require.Equal(t, tt.want, spreadOf(tt.in))
			require.Equal(t, in, tt.in, "spreadOf must not reorder its argument")
		})
	}
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		s := spreadOf(nil)
		require.True(t, math.IsNaN(s.Median) && math.IsNaN(s.Min) && math.IsNaN(s.Max))
	})
}

// JSON has no NaN: a spread of nothing is written as nulls, never as an
// error that loses the whole results file.
func TestSpreadJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(spreadOf(nil))
	require.NoError(t, err)
	require.JSONEq(t, `{"median": null, "min": null, "max": null}`, string(b))
	b, err = json.Marshal(struct{ S *spread }{&spread{2.5, 1, math.Inf(1)}})
	require.NoError(t, err)
	require.JSONEq(t, `{"S": {"median": 2.5, "min": 1, "max": null}}`, string(b))
}

func TestRatio(t *testing.T) {
	t.Parallel()
	require.Equal(t, 0.5, ratio(1, 2))
	require.True(t, math.IsNaN(ratio(1, 0)))
	require.True(t, math.IsNaN(ratio(math.NaN(), 2)))
	require.Equal(t, []float64{100, 50}, perSecond(100, []float64{1, 2}))
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 35312.4: "35,312", 1234567: "1,234,567", -1234: "-1,234"} {
		require.Equal(t, want, thousands(in), "thousands(%v)", in)
	}
}
