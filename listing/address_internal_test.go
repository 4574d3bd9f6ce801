package listing

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUSZipTable checks the table of the state/ZIP cross-check itself:
// ranges of three-digit prefixes, no prefix in two states, 50 states and
// DC, each with its name.
func TestUSZipTable(t *testing.T) {
	t.Parallel()
	owner := map[int]string{}
	codes := map[string]bool{}
	for _, st := range usStates {
		require.Len(t, st.code, 2, st.name)
		require.False(t, codes[st.code], "%s twice", st.code)
		codes[st.code] = true
		require.NotEmpty(t, st.zips, st.code)
		for _, r := range st.zips {
			require.True(t, 0 <= r[0] && r[0] <= r[1] && r[1] <= 999, "%s: %v", st.code, r)
			for p := r[0]; p <= r[1]; p++ {
				prev, taken := owner[p]
				require.False(t, taken, "prefix %03d in %s and %s", p, prev, st.code)
				owner[p] = st.code
			}
		}
	}
	require.Len(t, codes, 51, "50 states and DC")
}

func TestRangeSpan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, to    string
		want        span
		timesOK, ok bool
	}{
		{"09:00", "17:00", span{540, 1020}, true, true},
		{"00:00", "00:00", span{0, 1440}, true, true},
		{"18:00", "00:00", span{1080, 1440}, true, true},
		{"15:00", "01:00", span{900, 1500}, true, true},
		{"23:59", "23:58", span{1439, 2878}, true, true},
		{"09:00", "09:00", span{}, true, false},
		{"24:00", "01:00", span{}, false, false},
		{"09:00", "9:00", span{}, false, false},
		{"", "", span{}, false, false},
	}
	for _, tt := range tests {
		s, timesOK, ok := rangeSpan(TimeRange{From: tt.from, To: tt.to})
		require.Equal(t, tt.want, s, "%s-%s", tt.from, tt.to)
		require.Equal(t, tt.timesOK, timesOK, "%s-%s", tt.from, tt.to)
		require.Equal(t, tt.ok, ok, "%s-%s", tt.from, tt.to)
	}
}
