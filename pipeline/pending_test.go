package pipeline_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
)

// TestReprocessFailedDoesNotRebuyHeldMonths: etl backfill
// --reprocess failed buys again "the months whose latest try failed, was
// skipped, or did not finish"; a keyword month held by the job's last run
// (closed, the warehouse holds it) is none of these, yet it is bought again.
func TestReprocessFailedDoesNotRebuyHeldMonths(t *testing.T) {
	t.Parallel()
	spec := `jobs:
  - name: kw
    keywords: {keywords: [seo], countries: [US], months: [2026-10]}
`
	f, c := newClockFixture(t, runNow)
	f.RunAt(t, spec, c, pipeline.RunOptions{})
	c.Set(runNow.Add(time.Hour))
	sum := f.RunAt(t, spec, c, pipeline.RunOptions{})
	require.Equal(t, 1, sum.Held().Tasks)

	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), c.Now())
	require.NoError(t, err)
	oct := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	tasks, _, err := s.Jobs[0].BackfillTasks(jobspec.BackfillRequest{From: oct, To: oct}, c.Now())
	require.NoError(t, err)
	require.Len(t, tasks, 1)
	require.Equal(t, sum.Tasks[0].Task.Key(), tasks[0].Key(), "the backfill's task is the run's")
	failed, err := runs.Pending(t.Context(), f.Pool, s.Jobs[0], tasks, jobspec.ReprocessFailed)
	require.NoError(t, err)
	require.Empty(t, failed, "a held month did not fail: --reprocess failed must not buy it again")
}
