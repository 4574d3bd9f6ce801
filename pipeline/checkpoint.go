package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seoetl/etl/internal/dbconn"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
)

// ErrJobBusy is returned when another process (or runner) is running the
// job: a job never overlaps itself.
var ErrJobBusy = errors.New("the job is already running")

// ErrLockLost is matched by the error of a run whose job lock was lost
// mid-run: the connection that held it ended (an administrator's
// pg_terminate_backend, idle_session_timeout, a restart) and another
// process took the job over, or the lock could not be taken again. The
// run sent no request after it found out, and wrote nothing more of the
// run (its checkpoints and status are the other process's now).
var ErrLockLost = errors.New("the job's lock was lost")

// execer is a pool or a transaction.
type execer interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}

// checkpoint is how far a task of a run got, as committed.
type checkpoint struct {
	status                string
	offset                int64
	pages                 int
	rows, rejected, units int64
	// since is the watermark an incremental task's pages were asked past.
	since *time.Time
	// reason is why the task failed, was skipped or refused.
	reason string
	// load is what the committed pages did to the task's table (zero on
	// a checkpoint written before migration 0011).
	load load.Result
}

// jobLock is a job's lock, held by the backend of conn: a connection of
// its own, outside the pool, that stays open while the job runs. Its row
// of job_locks names that backend, and the lock is held while the backend
// lives, so a process that dies frees it with its connection, and no
// transaction stays open while it is held. It is not an advisory lock,
// which any role that can connect may take (a read-only analyst's could
// block the job): taking the row needs UPDATE on job_locks. See
// migrations/0009_job_locks.up.sql.
type jobLock struct {
	r          *Runner
	job, class string

	mu   sync.Mutex
	conn *pgx.Conn
	// pid and started name the backend that took the lock (conn's),
	// as job_locks records it.
	pid     int32
	started time.Time
	// lost is why the lock was lost (nil: held).
	lost error
	// onLost, when set, is called when the connection holding the lock
	// is found lost: the run's other commits may be lost too.
	onLost func()
}

// lockJob takes the job's lock, or returns ErrJobBusy. Backfills lock
// apart from runs (class "backfill"): they fetch other months.
func (r *Runner) lockJob(ctx context.Context, job, class string) (*jobLock, error) {
	conn, err := pgx.ConnectConfig(ctx, r.cfg.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("connecting for the job's lock: %w", err)
	}
	l := &jobLock{r: r, conn: conn, job: job, class: class}
	holder, err := l.take(ctx, r.cfg.Now())
	if err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("taking the job's lock: %w", NotMigrated(err))
	}
	if holder != "" {
		_ = conn.Close(context.WithoutCancel(ctx))
		var id int64
		var host string
		err := r.cfg.Pool.QueryRow(ctx, `SELECT run_id, coalesce(host, '') FROM runs WHERE job = $1 AND status = 'running'
			AND `+triggersOf(class)+` ORDER BY run_id DESC LIMIT 1`, job).Scan(&id, &host)
		if err == nil {
			return nil, fmt.Errorf("%w: job %s, run %d on %s", ErrJobBusy, job, id, host)
		}
		return nil, fmt.Errorf("%w: job %s, held by %s", ErrJobBusy, job, holder)
	}
	return l, nil
}

// take takes the lock for the backend of l.conn, in one short
// transaction, unless a live backend holds it: then it returns the
// holder's host:pid and changes nothing.
//
// The row lock (FOR UPDATE) serialises takers: of two at once, the second
// waits for the first to commit and then reads it as the holder. The
// holder is alive when pg_stat_activity lists a backend with its pid and
// session role, started when it was (a pid the system gave to a later
// backend is not the holder). pg_stat_activity shows backend_start only to
// roles that may see the other session's details (the same role,
// pg_read_all_stats): where it is hidden, the pid and role decide, so a
// holder is never taken for dead; at worst a later backend of the same
// role keeps the lock until it ends. pg_stat_activity is read after the
// row lock: a transaction reads it once and keeps what it read.
func (l *jobLock) take(ctx context.Context, at time.Time) (holder string, err error) {
	err = pgx.BeginFunc(ctx, l.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO job_locks (job, class) VALUES ($1, $2) ON CONFLICT DO NOTHING`, l.job, l.class); err != nil {
			return err
		}
		var who *string
		var pid *int32
		var role *uint32
		var started *time.Time
		if err := tx.QueryRow(ctx, `SELECT holder, backend_pid, backend_role, backend_start FROM job_locks
			WHERE job = $1 AND class = $2 FOR UPDATE`, l.job, l.class).Scan(&who, &pid, &role, &started); err != nil {
			return err
		}
		if pid != nil {
			var alive bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity
				WHERE pid = $1 AND usesysid = $2 AND (backend_start = $3 OR backend_start IS NULL))`, *pid, *role, *started).Scan(&alive); err != nil {
				return err
			}
			if alive && who != nil && holderDead(*who) {
				// The holder's process is gone and its backend lingers:
				// end it (a role may end its own backends), then take over.
				alive = !terminate(ctx, tx, *pid)
			}
			if alive {
				holder = "another process"
				if who != nil {
					holder = *who
				}
				return nil
			}
		}
		return l.own(ctx, tx, at)
	})
	return holder, err
}

// own records the backend of l.conn, which tx is on, as the lock's
// holder.
func (l *jobLock) own(ctx context.Context, tx pgx.Tx, at time.Time) error {
	err := tx.QueryRow(ctx, `UPDATE job_locks SET holder = $3, backend_pid = a.pid, backend_role = a.usesysid,
		backend_start = a.backend_start, taken_at = $4
		FROM pg_stat_activity a WHERE a.pid = pg_backend_pid() AND job = $1 AND class = $2
		RETURNING a.pid, a.backend_start`, l.job, l.class, hostID(), at).Scan(&l.pid, &l.started)
	if errors.Is(err, pgx.ErrNoRows) {
		return errors.New("this session is missing from pg_stat_activity")
	}
	return err
}

// held checks, before a request is sent, that the run still holds its
// job's lock: that the connection holding it lives. When it was lost (an
// administrator ended it, idle_session_timeout, a restart of the server),
// the lock is taken again on a new connection if job_locks still names
// the backend that had it; if another process took the job since (its
// lock's backend was gone, so it could), the run must stop: that process
// resumed the run from its checkpoints, and every page this one asked for
// from now on would be bought twice. A server that cannot be reached is
// tried again as a page's connection is, for up to Config.Reconnect.
// Once lost, held returns the same ErrLockLost.
func (l *jobLock) held(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return l.lost
	}
	if l.conn.Ping(ctx) == nil {
		return nil
	}
	if l.onLost != nil {
		l.onLost()
	}
	_ = l.conn.Close(context.WithoutCancel(ctx))
	deadline := time.Now().Add(l.r.cfg.Reconnect)
	for delay := dbconn.Backoff; ; delay = min(2*delay, dbconn.MaxBackoff) {
		err := l.retake(ctx)
		if err == nil || errors.Is(err, ErrLockLost) || ctx.Err() != nil || !dbconn.Unavailable(err, nil) || time.Now().Add(delay).After(deadline) {
			if err != nil && !errors.Is(err, ErrLockLost) {
				err = fmt.Errorf("%w: its connection ended, and taking it again failed: %w", ErrLockLost, err)
			}
			l.lost = err
			return err
		}
		l.r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "the connection holding the job's lock ended, and the database gives no other; trying again",
			slog.String("job", l.job), slog.Duration("in", delay), slog.String("error", err.Error()))
		if err := dbconn.Sleep(ctx, delay); err != nil {
			l.lost = fmt.Errorf("%w: %w", ErrLockLost, err)
			return l.lost
		}
	}
}

// retake takes the lock again on a new connection, if job_locks still
// names the backend that held it; ErrLockLost when another process took
// (or took and freed) it since.
func (l *jobLock) retake(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.r.cfg.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	var took string
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		var who *string
		var pid *int32
		var started *time.Time
		if err := tx.QueryRow(ctx, `SELECT holder, backend_pid, backend_start FROM job_locks WHERE job = $1 AND class = $2 FOR UPDATE`,
			l.job, l.class).Scan(&who, &pid, &started); err != nil {
			return err
		}
		if pid == nil || *pid != l.pid || started == nil || !started.Equal(l.started) {
			took = "another process"
			if who != nil {
				took = *who
			}
			return nil
		}
		return l.own(ctx, tx, l.r.cfg.Now())
	})
	if err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return err
	}
	if took != "" {
		_ = conn.Close(context.WithoutCancel(ctx))
		return fmt.Errorf("%w: the connection that held it ended, and %s took the job over (resuming this run): this run stopped, asking for nothing more", ErrLockLost, took)
	}
	l.conn = conn
	l.r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "the connection holding the job's lock ended; took the lock again on a new one",
		slog.String("job", l.job))
	return nil
}

// terminate ends the backend pid, waiting up to 5 seconds for it to exit,
// in a savepoint of tx (a role may not end another role's backends: then
// it reports false and tx goes on). $1::int: Citus adds
// pg_terminate_backend(bigint, bigint), of a global pid, beside
// PostgreSQL's (integer, bigint), and an untyped argument matched both
// ("function pg_terminate_backend(unknown, integer) is not unique").
func terminate(ctx context.Context, tx pgx.Tx, pid int32) bool {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false
	}
	var ended bool
	if err := sp.QueryRow(ctx, `SELECT pg_terminate_backend($1::int, 5000)`, pid).Scan(&ended); err != nil {
		_ = sp.Rollback(ctx)
		return false
	}
	return sp.Commit(ctx) == nil && ended
}

// triggersOf is the SQL condition on runs.trigger of the runs of a lock
// class: backfills, or runs (manual and scheduled; a probe of etl plan is
// neither, and takes no lock).
func triggersOf(class string) string {
	if class == "backfill" {
		return "trigger = 'backfill'"
	}
	return "trigger IN ('manual', 'schedule')"
}

// release frees the lock, then closes its connection. Were the UPDATE
// lost (the connection broken), the lock is free all the same once the
// backend ends.
func (l *jobLock) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx := context.Background()
	_, _ = l.conn.Exec(ctx, `UPDATE job_locks SET holder = NULL, backend_pid = NULL, backend_role = NULL, backend_start = NULL
		WHERE job = $1 AND class = $2 AND backend_pid = pg_backend_pid()`, l.job, l.class)
	_ = l.conn.Close(ctx)
}

// hostID names this process in runs.host and schedule_ticks.claimed_by.
func hostID() string {
	h, err := os.Hostname()
	if err != nil {
		h = "unknown"
	}
	return fmt.Sprintf("%s:%d", h, os.Getpid())
}

// claimed is the run a Runner works on: a new one, or one it resumes.
type claimed struct {
	id      int64
	started time.Time
	attempt int
	// window is the run's per_run cap window (runs.cap_window).
	window int
	// how says how the run was taken up: "" for a new run, resumeCrash or
	// resumeStop.
	how string
	// done holds the checkpoints of a resumed run, by task key.
	done map[string]checkpoint
}

// How an earlier run is taken up by the next run of its job.
const (
	// resumeCrash: the run's process died, or it was interrupted; it goes
	// on in the same per_run cap window.
	resumeCrash = "resumed"
	// resumeStop: a cap, the API's 403 or failed tasks stopped it with
	// tasks unfinished; it goes on in a new per_run cap window.
	resumeStop = "continued"
)

// openRun is a run of a job that the next run takes up, or closes.
type openRun struct {
	id       int64
	started  time.Time
	status   string
	window   int
	attempts int
	// how is resumeCrash or resumeStop when the next run takes it up;
	// "" when it closes it, why says why.
	how, why string
}

// openRuns reads the runs of job (of its lock class) that the next run
// started at now takes up or closes: the latest run, when it is
// unfinished (running: its process died; interrupted) or stopped with
// tasks left (partial or failed, with a task running, failed or skipped;
// a refused task cannot run as specified), in the
// current month, and not fresh; every other run still marked running or
// interrupted is closed. It is the one rule of etl run (claimRun) and etl
// plan (which prices what the run would still do).
func openRuns(ctx context.Context, q querier, job string, backfill, fresh bool, now time.Time) (take *openRun, closing []openRun, err error) {
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
		return nil, nil, fmt.Errorf("reading the unfinished runs of %s: %w", job, NotMigrated(err))
	}
	var all []openRun
	var unfinished []bool
	for rows.Next() {
		var u openRun
		var left bool
		if err := rows.Scan(&u.id, &u.started, &u.status, &u.window, &u.attempts, &left); err != nil {
			return nil, nil, NotMigrated(err)
		}
		all, unfinished = append(all, u), append(unfinished, left)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, NotMigrated(err)
	}
	for i, u := range all {
		crashed := u.status == "running" || u.status == "interrupted"
		stopped := (u.status == "partial" || u.status == "failed") && unfinished[i]
		if !crashed && !stopped {
			continue // finished: nothing to take up, nothing to close
		}
		switch {
		case i > 0:
			u.why = fmt.Sprintf("not resumed: run %d is newer", all[0].id)
		case backfill:
			u.why = "not resumed: a backfill starts afresh and skips the months already done (--reprocess missing)"
		case fresh:
			u.why = "not resumed: a fresh run was asked for"
		case !load.MonthStart(u.started).Equal(load.MonthStart(now)):
			u.why = fmt.Sprintf("not resumed: it started in %s, and its data belongs to that month", u.started.UTC().Format("2006-01"))
		case crashed:
			u.how = resumeCrash
		default:
			u.how = resumeStop
		}
		if u.how != "" {
			take = &u
			continue
		}
		if !crashed {
			continue // a stopped run not taken up stays as it ended
		}
		if u.status == "running" {
			u.why = "its process died; " + u.why
		}
		closing = append(closing, u)
	}
	return take, closing, nil
}

// querier is a pool or a transaction.
type querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// claimRun starts a run of job, or takes up the latest one openRuns
// names: one whose process died or that was interrupted is resumed in its
// cap window; one that a cap, the API's 403 or failed tasks stopped with
// tasks left is continued in a new cap window. Either way done tasks are
// not run again and the others go on from their checkpoint. It is called
// under the job's lock, so a run still marked running has no live
// process. The unfinished runs not taken up are closed as failed, saying
// why.
func (r *Runner) claimRun(ctx context.Context, job *jobspec.Job, o RunOptions) (*claimed, error) {
	now := r.cfg.Now()
	take, closing, err := openRuns(ctx, r.cfg.Pool, job.Name, o.Trigger == "backfill", o.Fresh, now)
	if err != nil {
		return nil, err
	}
	for _, u := range closing {
		if err := r.closeRun(ctx, u.id, u.why); err != nil {
			return nil, err
		}
	}
	if take != nil {
		c := &claimed{id: take.id, started: take.started, window: take.window, how: take.how}
		if take.how == resumeStop {
			c.window++
		}
		err := r.cfg.Pool.QueryRow(ctx, `UPDATE runs SET status = 'running', attempts = attempts + 1, resumed_at = $2,
			finished_at = NULL, error = NULL, host = $3, cap_window = $4 WHERE run_id = $1 RETURNING attempts`,
			take.id, now, hostID(), c.window).Scan(&c.attempt)
		if err != nil {
			return nil, fmt.Errorf("resuming run %d: %w", take.id, err)
		}
		if c.done, err = checkpoints(ctx, r.cfg.Pool, take.id); err != nil {
			return nil, err
		}
		return c, nil
	}
	c := &claimed{started: now, attempt: 1, window: 1}
	var tick *time.Time
	if !o.ScheduledFor.IsZero() {
		tick = &o.ScheduledFor
	}
	if err := r.cfg.Pool.QueryRow(ctx, `INSERT INTO runs (job, trigger, started_at, scheduled_for, host, expected_units)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING run_id`, job.Name, o.Trigger, now, tick, hostID(), o.Expected).Scan(&c.id); err != nil {
		return nil, fmt.Errorf("recording the run of %s: %w", job.Name, NotMigrated(err))
	}
	return c, nil
}

// closeRun ends an unfinished run that will not be resumed as failed,
// with what its checkpoints and the ledger say it did.
func (r *Runner) closeRun(ctx context.Context, id int64, why string) error {
	_, err := r.cfg.Pool.Exec(ctx, `
		UPDATE runs SET status = 'failed', finished_at = $2, error = $3,
		       rows = (SELECT coalesce(sum(rows), 0) FROM task_checkpoints WHERE run_id = $1),
		       units = (SELECT coalesce(sum(coalesce(spent, reserved)), 0) FROM unit_ledger WHERE run_id = $1)
		WHERE run_id = $1`, id, r.cfg.Now(), why)
	if err != nil {
		return fmt.Errorf("closing run %d: %w", id, err)
	}
	return nil
}

// checkpoints reads what the tasks of run id committed.
func checkpoints(ctx context.Context, q querier, id int64) (map[string]checkpoint, error) {
	rows, err := q.Query(ctx, `SELECT task, status, next_offset, pages, rows, rejected, units, since, coalesce(error, ''),
			coalesce(inserted, 0), coalesce(updated, 0), coalesce(unchanged, 0)
		FROM task_checkpoints WHERE run_id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("reading the checkpoints of run %d: %w", id, err)
	}
	out := map[string]checkpoint{}
	for rows.Next() {
		var key string
		var c checkpoint
		if err := rows.Scan(&key, &c.status, &c.offset, &c.pages, &c.rows, &c.rejected, &c.units, &c.since, &c.reason,
			&c.load.Inserted, &c.load.Updated, &c.load.Unchanged); err != nil {
			return nil, err
		}
		c.load.Rows = c.load.Inserted + c.load.Updated + c.load.Unchanged
		out[key] = c
	}
	return out, rows.Err()
}

// saveCheckpoint writes the task's checkpoint: in the page's transaction
// (q is the tx) with what the committed pages add up to, or on its own
// when the task starts, fails or is skipped. res.Load is what the pages of
// every attempt of the run did to the task's table (run_tables sums it).
func saveCheckpoint(ctx context.Context, q execer, runID int64, t jobspec.Task, status string, offset int64, res *TaskResult, reason string, at time.Time) error {
	var month *time.Time
	if t.Keyword != "" || (t.Spec.DateFrom != "" && t.Spec.DateFrom == t.Spec.DateTo) {
		m := t.Month
		month = &m
	}
	var since *time.Time
	if t.Spec.Incremental != "" || t.Listings != nil {
		s := t.Since
		since = &s
	}
	var askedFrom, askedTo *time.Time
	if from, to, ok := t.AskedRange(); ok {
		askedFrom, askedTo = &from, &to
	}
	var maxRows *int
	if t.Spec.MaxRows > 0 {
		maxRows = &t.Spec.MaxRows
	}
	var heldBy, heldUnits *int64
	if h := res.Held; h != nil {
		heldBy, heldUnits = &h.RunID, &h.Units
	}
	_, err := q.Exec(ctx, `
		INSERT INTO task_checkpoints (run_id, task, endpoint, name, month, status, next_offset, pages, rows, rejected, units, since, error, updated_at,
			table_name, inserted, updated, unchanged, asked_from, asked_to, max_rows, held_by, held_units)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, nullif($13, ''), $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
		ON CONFLICT (run_id, task) DO UPDATE SET status = EXCLUDED.status, next_offset = EXCLUDED.next_offset,
			pages = EXCLUDED.pages, rows = EXCLUDED.rows, rejected = EXCLUDED.rejected, units = EXCLUDED.units,
			since = EXCLUDED.since, error = EXCLUDED.error, updated_at = EXCLUDED.updated_at, table_name = EXCLUDED.table_name,
			inserted = EXCLUDED.inserted, updated = EXCLUDED.updated, unchanged = EXCLUDED.unchanged,
			asked_from = EXCLUDED.asked_from, asked_to = EXCLUDED.asked_to, max_rows = EXCLUDED.max_rows,
			held_by = EXCLUDED.held_by, held_units = EXCLUDED.held_units`,
		runID, t.Key(), t.Endpoint.Name, t.String(), month, status, offset, res.Pages, res.Rows, res.Rejected, res.Units, since, reason, at,
		t.Endpoint.Table, res.Load.Inserted, res.Load.Updated, res.Load.Unchanged, askedFrom, askedTo, maxRows, heldBy, heldUnits)
	if err != nil {
		return fmt.Errorf("checkpoint of %s: %w", t, err)
	}
	return nil
}
