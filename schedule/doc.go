// Package schedule runs the jobs of a spec on their cron schedules (etl
// schedule). Several schedulers (processes, machines) may share one
// database: each tick of a job is claimed in schedule_ticks by exactly
// one of them, a tick missed while every scheduler was down is caught up
// as the job's catch_up says, and a job never overlaps itself (the
// runner's job lock). Each run is a pipeline.Runner's.
package schedule
