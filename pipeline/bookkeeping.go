package pipeline

import (
	"context"
	"time"

	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
)

// The runner's calls into its bookkeeping (internal/runs): the job's
// lock, the run it claims, and each task's checkpoint.

// lockJob takes the job's lock (runs.TakeLock), or returns ErrJobBusy.
func (r *Runner) lockJob(ctx context.Context, job, class string) (*runs.Lock, error) {
	return runs.TakeLock(ctx, runs.LockConfig{Pool: r.cfg.Pool, Reconnect: r.cfg.Reconnect, Logger: r.cfg.Logger, Now: r.cfg.Now}, job, class)
}

// claimRun starts a run of job, or takes up its latest unfinished one
// (runs.Claim).
func (r *Runner) claimRun(ctx context.Context, job *jobspec.Job, o RunOptions) (*runs.Claimed, error) {
	return runs.Claim(ctx, r.cfg.Pool, job.Name, runs.ClaimOptions{Trigger: o.Trigger, Fresh: o.Fresh, ScheduledFor: o.ScheduledFor, Expected: o.Expected}, r.cfg.Now())
}

// saveCheckpoint writes the checkpoint of task t of run runID: status,
// the next offset, what res counted and why (runs.Save).
func saveCheckpoint(ctx context.Context, q runs.Execer, runID int64, t jobspec.Task, status string, offset int64, res *TaskResult, reason string, at time.Time) error {
	c := runs.Checkpoint{Status: status, Offset: offset, Pages: res.Pages, Rows: res.Rows, Rejected: res.Rejected, Units: res.Units,
		Reason: reason, Load: res.Load}
	if h := res.Held; h != nil {
		c.HeldBy, c.HeldUnits = &h.RunID, &h.Units
	}
	return runs.Save(ctx, q, runID, t, c, at)
}
