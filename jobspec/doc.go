// Package jobspec owns the job spec (jobs.yaml): reading it (LoadSpec,
// ParseSpec), validating every field before any unit is spent, with
// file:line in every message (SpecError, Problem), and expanding a job into
// its tasks (Job.Tasks; Job.BackfillTasks for months of history). A Task
// knows how it pages through the API (Params, PageLimit, Done, Key) from
// the catalog and its spec alone.
//
// It reads files and nothing else: it neither runs a task nor talks to
// PostgreSQL. The runner (pipeline) and the planner take its tasks from
// here.
package jobspec
