package locations

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnmix(t *testing.T) {
	t.Parallel()
	for _, x := range []uint64{0, 1, 2, 42, 1 << 63, 1<<64 - 1, 0x9e3779b97f4a7c15} {
		require.Equal(t, x, unmix(mix(x)), "%#x", x)
		require.Equal(t, x, mix(unmix(x)), "%#x", x)
	}
	k := newKey(1, "x")
	for i := range int64(10000) {
		x := k.at(i)
		require.Equal(t, x, unmix(mix(x)))
	}
	for _, m := range []uint64{0x94d049bb133111eb, 0xbf58476d1ce4e5b9, 3, 1<<64 - 1} {
		require.Equal(t, uint64(1), m*inverse(m), "%#x", m)
	}
}

func TestFloorDiv(t *testing.T) {
	t.Parallel()
	for _, tt := range [][3]int64{{7, 3, 2}, {6, 3, 2}, {0, 3, 0}, {-1, 3, -1}, {-3, 3, -1}, {-4, 3, -2}} {
		require.Equal(t, tt[2], floorDiv(tt[0], tt[1]), "%d / %d", tt[0], tt[1])
	}
}
