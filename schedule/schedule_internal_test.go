package schedule

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/seoetl/etl/jobspec"
	"github.com/stretchr/testify/require"
)

// TestNextTickRunsOnceWhenClocksGoBack: at the end of daylight saving time
// 01:30 comes twice in New York; the job runs at the first only.
func TestNextTickRunsOnceWhenClocksGoBack(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	c, err := cron.ParseStandard("30 1 * * *")
	require.NoError(t, err)
	j := &jobspec.Job{Cron: c, Location: ny}
	// 2026-11-01: clocks go back from 02:00 EDT to 01:00 EST.
	first := nextTick(j, time.Date(2026, 11, 1, 0, 0, 0, 0, ny), time.Time{})
	require.Equal(t, "2026-11-01 01:30 EDT", first.In(ny).Format("2006-01-02 15:04 MST"))
	second := nextTick(j, first, first)
	require.Equal(t, "2026-11-02 01:30 EST", second.In(ny).Format("2006-01-02 15:04 MST"))
}
