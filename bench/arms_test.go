package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
)

// The P1 process's peak RSS is its own, not the bench's: exec on Linux
// carries the memory of the process that started it into its rusage, so
// a P1 run after the bench itself peaked (arm HB) reported the bench's
// peak.
func TestRunChildMeasuresItsOwnPeakRSS(t *testing.T) {
	t.Parallel()
	ep, ok := catalog.Lookup("links")
	require.True(t, ok)
	dir := t.TempDir()
	file := filepath.Join(dir, "links.csv")
	require.NoError(t, os.WriteFile(file, []byte(strings.Join(ep.FieldNames(), ";")+"\n"), 0o600))
	e := &env{cfg: config{limit: 10_000}, month: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), dir: dir}

	// The bench's own peak, far over what loading no row takes.
	const benchMB = 256
	big := make([]byte, benchMB<<20)
	for i := range big {
		big[i] = 1
	}
	s, err := e.runChildOn(t.Context(), pgtest.NewDB(t), file, 1, nil)
	runtime.KeepAlive(big)
	require.NoError(t, err)
	require.Equal(t, int64(0), s.Load.Rows)
	t.Logf("the P1 process of no row: peak RSS %.1f MB", s.PeakRSSMB)
	require.Positive(t, s.PeakRSSMB)
	require.Less(t, s.PeakRSSMB, float64(benchMB/2), "the P1 process's peak RSS must be its own, not the bench's %d MB", benchMB)
	require.Positive(t, s.Seconds)
	require.Positive(t, s.CPUSeconds)
}
