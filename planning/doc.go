// Package planning says what a run of a job would do and cost before a
// unit is spent (etl plan, the progress display, the schedule's expected
// spend): which tasks the warehouse already holds fresh or as closed
// months (Holdings, which the runner reads too), which earlier run a run
// would take up and what is left of it, each task's requests, rows and
// units from the totals known (task_totals, overviews) or learned by a
// probe (Planner with PlanOptions.Probe), its pages at the bounds the API
// is known to accept, the listings' pulls, and whether each cap affords
// it (CapPlan).
//
// It reads the warehouse and, for a probe, asks the API for one line per
// request; it never loads data. The runner (pipeline) records the totals
// its runs learn with SaveTotal.
package planning
