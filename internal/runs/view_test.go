package runs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNaturalCompare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"n10", "n100", -1},
		{"n9", "n10", -1},
		{"n100", "n1000", -1},
		{"n2.example", "n10.example", -1},
		{"a", "b", -1},
		{"n07", "n7", 1},
		{"n7", "n7", 0},
		{"n7", "n7x", -1},
		{"links n1", "anchors n2", 1},
		{"keyword-metrics \"seo 2\" US 2026-11", "keyword-metrics \"seo 10\" US 2026-11", -1},
	} {
		require.Equal(t, tc.want, naturalCompare(tc.a, tc.b), "%q vs %q", tc.a, tc.b)
		require.Equal(t, -tc.want, naturalCompare(tc.b, tc.a), "%q vs %q", tc.b, tc.a)
	}
}
