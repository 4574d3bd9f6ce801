package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/migrations"
)

// Claimed is the run a Runner works on: a new one, or one it resumes.
type Claimed struct {
	ID      int64
	Started time.Time
	Attempt int
	// Window is the run's per_run cap window (runs.cap_window).
	Window int
	// How says how the run was taken up: "" for a new run, ResumeCrash or
	// ResumeStop.
	How string
	// Done holds the checkpoints of a resumed run, by task key.
	Done map[string]Checkpoint
}

// How an earlier run is taken up by the next run of its job.
const (
	// ResumeCrash: the run's process died, or it was interrupted; it goes
	// on in the same per_run cap window.
	ResumeCrash = "resumed"
	// ResumeStop: a cap, the API's 403 or failed tasks stopped it with
	// tasks unfinished; it goes on in a new per_run cap window.
	ResumeStop = "continued"
)

// OpenRun is a run of a job that the next run takes up, or closes.
type OpenRun struct {
	ID       int64
	Started  time.Time
	Status   string
	Window   int
	Attempts int
	// How is ResumeCrash or ResumeStop when the next run takes it up;
	// "" when it closes it, Why says why.
	How, Why string
}

// OpenRuns reads the runs of job (of its lock class) that the next run
// started at now takes up or closes: the latest run, when it is
// unfinished (running: its process died; interrupted) or stopped with
// tasks left (partial or failed, with a task running, failed or skipped;
// a refused task cannot run as specified), in the
// current month, and not fresh; every other run still marked running or
// interrupted is closed. It is the one rule of etl run (Claim) and etl
// plan (which prices what the run would still do).
func OpenRuns(ctx context.Context, q Querier, job string, backfill, fresh bool, now time.Time) (take *OpenRun, closing []OpenRun, err error) {
	class := "run"
	if backfill {
		class = "backfill"
	}
	rows, err := q.Query(ctx, `SELECT r.run_id, r.started_at, r.status, r.cap_window, r.attempts,
			EXISTS (SELECT 1 FROM task_checkpoints c WHERE c.run_id = r.run_id AND c.status IN ('running', 'failed', 'skipped'))
		FROM runs r
		WHERE r.job = $1 AND `+triggersOf(class)+` AND (r.status IN ('running', 'interrupted')
			OR r.run_id = (SELECT max(run_id) FROM runs WHERE job = $1 AND `+triggersOf(class)+`))
		ORDER BY r.run_id DESC`, job)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the unfinished runs of %s: %w", job, migrations.NotMigrated(err))
	}
	var all []OpenRun
	var unfinished []bool
	for rows.Next() {
		var u OpenRun
		var left bool
		if err := rows.Scan(&u.ID, &u.Started, &u.Status, &u.Window, &u.Attempts, &left); err != nil {
			return nil, nil, migrations.NotMigrated(err)
		}
		all, unfinished = append(all, u), append(unfinished, left)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, migrations.NotMigrated(err)
	}
	for i, u := range all {
		crashed := u.Status == "running" || u.Status == "interrupted"
		stopped := (u.Status == "partial" || u.Status == "failed") && unfinished[i]
		if !crashed && !stopped {
			continue // finished: nothing to take up, nothing to close
		}
		switch {
		case i > 0:
			u.Why = fmt.Sprintf("not resumed: run %d is newer", all[0].ID)
		case backfill:
			u.Why = "not resumed: a backfill starts afresh and skips the months already done (--reprocess missing)"
		case fresh:
			u.Why = "not resumed: a fresh run was asked for"
		case !load.MonthStart(u.Started).Equal(load.MonthStart(now)):
			u.Why = fmt.Sprintf("not resumed: it started in %s, and its data belongs to that month", u.Started.UTC().Format("2006-01"))
		case crashed:
			u.How = ResumeCrash
		default:
			u.How = ResumeStop
		}
		if u.How != "" {
			take = &u
			continue
		}
		if !crashed {
			continue // a stopped run not taken up stays as it ended
		}
		if u.Status == "running" {
			u.Why = "its process died; " + u.Why
		}
		closing = append(closing, u)
	}
	return take, closing, nil
}

// ClaimOptions say what run Claim records.
type ClaimOptions struct {
	// Trigger is manual, schedule or backfill.
	Trigger string
	// Fresh says an unfinished run is not taken up.
	Fresh bool
	// ScheduledFor is the schedule's tick a scheduled run is for (zero:
	// none).
	ScheduledFor time.Time
	// Expected is what the plan expected a new run to cost (nil: not
	// priced).
	Expected *int64
}

// Claim starts a run of job at now, or takes up the latest one openRuns
// names: one whose process died or that was interrupted is resumed in its
// cap window; one that a cap, the API's 403 or failed tasks stopped with
// tasks left is continued in a new cap window. Either way done tasks are
// not run again and the others go on from their checkpoint. It is called
// under the job's lock, so a run still marked running has no live
// process. The unfinished runs not taken up are closed as failed, saying
// why.
func Claim(ctx context.Context, pool *pgxpool.Pool, job string, o ClaimOptions, now time.Time) (*Claimed, error) {
	take, closing, err := OpenRuns(ctx, pool, job, o.Trigger == "backfill", o.Fresh, now)
	if err != nil {
		return nil, err
	}
	for _, u := range closing {
		if err := CloseRun(ctx, pool, u.ID, u.Why, now); err != nil {
			return nil, err
		}
	}
	if take != nil {
		c := &Claimed{ID: take.ID, Started: take.Started, Window: take.Window, How: take.How}
		if take.How == ResumeStop {
			c.Window++
		}
		err := pool.QueryRow(ctx, `UPDATE runs SET status = 'running', attempts = attempts + 1, resumed_at = $2,
			finished_at = NULL, error = NULL, host = $3, cap_window = $4 WHERE run_id = $1 RETURNING attempts`,
			take.ID, now, HostID(), c.Window).Scan(&c.Attempt)
		if err != nil {
			return nil, fmt.Errorf("resuming run %d: %w", take.ID, err)
		}
		if c.Done, err = Checkpoints(ctx, pool, take.ID); err != nil {
			return nil, err
		}
		return c, nil
	}
	c := &Claimed{Started: now, Attempt: 1, Window: 1}
	var tick *time.Time
	if !o.ScheduledFor.IsZero() {
		tick = &o.ScheduledFor
	}
	if err := pool.QueryRow(ctx, `INSERT INTO runs (job, trigger, started_at, scheduled_for, host, expected_units)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING run_id`, job, o.Trigger, now, tick, HostID(), o.Expected).Scan(&c.ID); err != nil {
		return nil, fmt.Errorf("recording the run of %s: %w", job, migrations.NotMigrated(err))
	}
	return c, nil
}

// CloseRun ends an unfinished run that will not be resumed as failed, at
// now, with what its checkpoints and the ledger say it did.
func CloseRun(ctx context.Context, pool *pgxpool.Pool, id int64, why string, now time.Time) error {
	_, err := pool.Exec(ctx, `
		UPDATE runs SET status = 'failed', finished_at = $2, error = $3,
		       rows = (SELECT coalesce(sum(rows), 0) FROM task_checkpoints WHERE run_id = $1),
		       units = (SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger WHERE run_id = $1)
		WHERE run_id = $1`, id, now, why)
	if err != nil {
		return fmt.Errorf("closing run %d: %w", id, err)
	}
	return nil
}
