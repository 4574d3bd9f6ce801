package pipeline_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
)

// TestARunTakesTheHoldingsOfThePlanBeforeIt: etl run plans (for its
// progress display), then runs; the run takes what the plan found the
// warehouse to hold rather than reading it again. Rows deleted by hand
// between the plan and the run show it: a run that read its holdings
// again would buy the overviews anew; the one handed the plan's holds
// them, as the plan said.
func TestARunTakesTheHoldingsOfThePlanBeforeIt(t *testing.T) {
	t.Parallel()
	f, c := newClockFixture(t, runNow)
	first := f.RunAt(t, sliceSpec, c, pipeline.RunOptions{})
	require.Equal(t, "succeeded", first.Status())
	paid := f.Spent()

	c.Set(runNow.Add(time.Hour))
	plan := f.PlanAt(t, sliceSpec, c, planning.PlanOptions{})
	require.NotNil(t, plan.Holdings, "no run was under way: the plan keeps its holdings for the run")
	require.Equal(t, len(first.Tasks), plan.Held.Tasks)
	_, err := f.Pool.Exec(t.Context(), `DELETE FROM backlink_overview`)
	require.NoError(t, err)

	taken := f.RunAt(t, sliceSpec, c, pipeline.RunOptions{Holdings: plan.Holdings})
	require.Equal(t, len(taken.Tasks), taken.Held().Tasks, "every task held, as the plan found")
	require.Equal(t, paid, f.Spent(), "nothing bought")

	c.Set(runNow.Add(2 * time.Hour))
	read := f.RunAt(t, sliceSpec, c, pipeline.RunOptions{})
	require.Equal(t, len(read.Tasks)-3, read.Held().Tasks, "read again: the three overviews are gone from the warehouse")
	require.Greater(t, f.Spent(), paid)
}

// TestARunReadsHoldingsAgainWhenARunBeganSinceThePlan: a plan made before
// any run holds nothing; another run then buys every task. The next run,
// handed that plan's holdings, must not trust them (they predate what the
// other run bought): it reads them again, holds every task and buys
// nothing twice. The same for holdings read with another --refetch.
func TestARunReadsHoldingsAgainWhenARunBeganSinceThePlan(t *testing.T) {
	t.Parallel()
	f, c := newClockFixture(t, runNow)
	plan := f.PlanAt(t, sliceSpec, c, planning.PlanOptions{})
	require.NotNil(t, plan.Holdings)
	require.Zero(t, plan.Held.Tasks)
	refetched := f.PlanAt(t, sliceSpec, c, planning.PlanOptions{Refetch: true})

	other := f.RunAt(t, sliceSpec, c, pipeline.RunOptions{})
	require.Equal(t, "succeeded", other.Status())
	paid := f.Spent()

	c.Set(runNow.Add(time.Minute))
	late := f.RunAt(t, sliceSpec, c, pipeline.RunOptions{Holdings: plan.Holdings})
	require.Equal(t, len(late.Tasks), late.Held().Tasks, "every task held: run %d bought it after the plan", other.RunID)
	require.Equal(t, paid, f.Spent(), "nothing bought twice")

	again := f.RunAt(t, sliceSpec, c, pipeline.RunOptions{Holdings: refetched.Holdings})
	require.Equal(t, len(again.Tasks), again.Held().Tasks, "holdings of a --refetch plan are not a run's without it")
	require.Equal(t, paid, f.Spent())
}

// TestARunReadsHoldingsAgainWhenARunWasTakenUpSinceThePlan: task keys
// leave out the job, so another job's run can buy the plan's tasks; a run
// taken up keeps its run_id. Another job's interrupted run is taken up
// after the plan and buys every task: the run handed the plan's holdings
// reads them again and holds every task.
func TestARunReadsHoldingsAgainWhenARunWasTakenUpSinceThePlan(t *testing.T) {
	t.Parallel()
	f, c := newClockFixture(t, runNow)
	otherSpec := strings.Replace(sliceSpec, "name: slice", "name: other", 1)
	var interrupted int64
	require.NoError(t, f.Pool.QueryRow(t.Context(), `INSERT INTO runs (job, trigger, started_at, status, attempts)
		VALUES ('other', 'manual', $1, 'interrupted', 1) RETURNING run_id`, runNow.Add(-time.Minute)).Scan(&interrupted))
	plan := f.PlanAt(t, sliceSpec, c, planning.PlanOptions{})
	require.NotNil(t, plan.Holdings)
	require.Zero(t, plan.Held.Tasks)

	other := f.RunAt(t, otherSpec, c, pipeline.RunOptions{})
	require.Equal(t, interrupted, other.RunID, "the interrupted run is taken up")
	require.Equal(t, "resumed", other.Taken)
	paid := f.Spent()

	late := f.RunAt(t, sliceSpec, c, pipeline.RunOptions{Holdings: plan.Holdings})
	require.Equal(t, len(late.Tasks), late.Held().Tasks, "every task held: run %d bought it after the plan", other.RunID)
	require.Equal(t, paid, f.Spent(), "nothing bought twice")
}

// TestARunInANewMonthReadsHoldingsAgain: a plan a second before the month
// ends holds the month's overviews; the run a second after it, in the new
// month, must buy them for the new month, as a run that reads its
// holdings does.
func TestARunInANewMonthReadsHoldingsAgain(t *testing.T) {
	t.Parallel()
	monthEnd := time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC)
	f, c := newClockFixture(t, monthEnd.Add(-4*time.Hour))
	f.RunAt(t, sliceSpec, c, pipeline.RunOptions{})
	c.Set(monthEnd)
	plan := f.PlanAt(t, sliceSpec, c, planning.PlanOptions{})
	require.NotNil(t, plan.Holdings)
	require.Equal(t, len(plan.Tasks), plan.Held.Tasks, "every task held in November")

	c.Set(monthEnd.Add(2 * time.Second))
	paid := f.Spent()
	december := f.RunAt(t, sliceSpec, c, pipeline.RunOptions{Holdings: plan.Holdings})
	require.Less(t, december.Held().Tasks, len(december.Tasks), "December's overviews are bought")
	require.Greater(t, f.Spent(), paid)
}
