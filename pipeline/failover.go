package pipeline

import (
	"context"
	"errors"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/internal/dbconn"
	"github.com/seoetl/etl/internal/failover"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
)

// A run's recovery from lost database connections: the journal of what it
// committed (internal/failover) and the checks of it, on a page's
// connection or the pool's, tried again while the database cannot serve.

// journal is the run's failover journal.
type journal = failover.Journal[TaskResult]

// checkConfig is what the journal's checks need of the runner: the
// ledger, the logger, and how a task whose lost page is gone is recorded.
func (r *Runner) checkConfig() failover.CheckConfig[TaskResult] {
	return failover.CheckConfig[TaskResult]{Ledger: r.cfg.Ledger, Logger: r.cfg.Logger,
		SaveFailed: func(ctx context.Context, q runs.Execer, runID int64, t jobspec.Task, lp failover.LostPage[TaskResult]) error {
			return saveCheckpoint(ctx, q, runID, t, "failed", lp.Offset, &lp.Before, lp.Err.Error(), r.cfg.Now())
		}}
}

// checkOn is check on a page's connection, renewed and tried again
// while the database cannot serve, for up to Config.Reconnect.
func (r *Runner) checkOn(ctx context.Context, pc *dbconn.PageConn, j *journal) error {
	if !j.Due() {
		return nil
	}
	return r.retry(ctx, j, "checking the run's commits", func(ctx context.Context) error {
		err := j.Check(ctx, pc.Conn.Conn(), r.checkConfig())
		if err != nil && dbconn.Lost(err) {
			if rerr := pc.Renew(ctx); rerr != nil {
				return errors.Join(err, rerr)
			}
		}
		return err
	})
}

// saveTask saves a task's checkpoint on the pool, again while the
// database cannot serve, and journals it (to save it again after a
// failover that lost it).
func (r *Runner) saveTask(ctx context.Context, st *runState, acct budget.Account, t jobspec.Task, status string, offset int64, res *TaskResult, reason string) error {
	snap, at := *res, r.cfg.Now()
	save := func(ctx context.Context, q runs.Execer) error {
		return saveCheckpoint(ctx, q, acct.RunID, t, status, offset, &snap, reason, at)
	}
	return r.retry(ctx, st.journal, "saving a checkpoint", func(ctx context.Context) error {
		st.journal.Commits.RLock()
		defer st.journal.Commits.RUnlock()
		if err := save(ctx, r.cfg.Pool); err != nil {
			return err
		}
		st.journal.Checkpoint(t.Key(), save)
		return nil
	})
}

// checkOnPool is check on a connection of the pool, tried again while
// the database cannot serve, for up to Config.Reconnect.
func (r *Runner) checkOnPool(ctx context.Context, j *journal) error {
	return r.retry(ctx, j, "checking the run's commits", func(ctx context.Context) error {
		conn, err := r.cfg.Pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		return j.Check(ctx, conn.Conn(), r.checkConfig())
	})
}

// retry runs do, again while it fails because the database could not
// serve (dbconn.Retry, for up to Config.Reconnect); each such failure is
// noted in j (nil: none) for the next check.
func (r *Runner) retry(ctx context.Context, j *journal, what string, do func(context.Context) error) error {
	var lost func()
	if j != nil {
		lost = j.Lost
	}
	return dbconn.Retry(ctx, r.cfg.Reconnect, r.cfg.Logger, what, lost, do)
}
