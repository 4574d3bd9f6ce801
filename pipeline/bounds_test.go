package pipeline_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/planning"
)

// TestPlanSaturatesAndNeverFitsACap plans, from the catalog alone, a job
// built past the spec's bounds (as a library caller may build one): issue
// 12's limit and max_rows on links, for two targets. Each task's worst
// case, and every sum of them, saturates at math.MaxInt64 instead of
// wrapping (to 29 units a task, 58 in all), and the per_run cap of 1000
// units does not fit it.
func TestPlanSaturatesAndNeverFitsACap(t *testing.T) {
	t.Parallel()
	links, ok := catalog.Lookup("links")
	require.True(t, ok)
	const huge = 409927646082434481
	job := &jobspec.Job{
		Name: "huge",
		Targets: []jobspec.Target{
			{URL: "n2000.example", Scope: catalog.RootDomain},
			{URL: "n300.example", Scope: catalog.RootDomain},
		},
		Endpoints: []jobspec.EndpointSpec{{Endpoint: links, Limit: huge, MaxRows: huge}},
		Caps:      budget.Caps{PerRun: 1000},
	}
	planner, err := planning.NewPlanner(planning.PlanConfig{Now: func() time.Time { return runNow }})
	require.NoError(t, err)
	plan, err := planner.Plan(t.Context(), job, planning.PlanOptions{})
	require.NoError(t, err)

	require.Len(t, plan.Tasks, 2)
	for _, tp := range plan.Tasks {
		require.NotNil(t, tp.Worst, tp.Name)
		require.Equal(t, int64(math.MaxInt64), *tp.Worst, tp.Name)
		require.Equal(t, int64(math.MaxInt64), *tp.Expected, tp.Name)
	}
	require.Equal(t, int64(math.MaxInt64), *plan.Total.Worst)
	require.Equal(t, int64(math.MaxInt64), *plan.Total.Expected)
	require.Equal(t, int64(math.MaxInt64), *plan.Endpoints[0].Worst)

	require.Len(t, plan.Caps, 1)
	c := plan.Caps[0]
	require.Equal(t, "per_run", c.Cap)
	require.NotNil(t, c.Fits)
	require.False(t, *c.Fits, c.String())
	require.Equal(t, "links n2000.example (ROOT_DOMAIN)", c.CutTask)
	require.Equal(t, int64(1000/45), c.CutAfterRows, "the first page shrinks to what the cap affords")
}
