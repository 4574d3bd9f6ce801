package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/internal/dbconn"
	"github.com/seoetl/etl/migrations"
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

// Lock is a job's lock, held by the backend of conn: a connection of
// its own, outside the pool, that stays open while the job runs. Its row
// of job_locks names that backend, and the lock is held while the backend
// lives, so a process that dies frees it with its connection, and no
// transaction stays open while it is held. It is not an advisory lock,
// which any role that can connect may take (a read-only analyst's could
// block the job): taking the row needs UPDATE on job_locks. See
// migrations/0009_job_locks.up.sql.
type Lock struct {
	cfg        LockConfig
	job, class string

	mu   sync.Mutex
	conn *pgx.Conn
	// pid and started name the backend that took the lock (conn's),
	// as job_locks records it.
	pid     int32
	started time.Time
	// lost is why the lock was lost (nil: held).
	lost error
	// OnLost, when set, is called when the connection holding the lock
	// is found lost: the run's other commits may be lost too.
	OnLost func()
}

// LockConfig is how a Lock reaches the database and waits for it.
type LockConfig struct {
	// Pool is the warehouse; the lock takes a connection of its own with
	// the pool's settings.
	Pool *pgxpool.Pool
	// Reconnect bounds how long a lock whose connection ended tries to
	// take it again while the server cannot be reached.
	Reconnect time.Duration
	Logger    *slog.Logger
	Now       func() time.Time
}

// TakeLock takes the job's lock, or returns ErrJobBusy. Backfills lock
// apart from runs (class "backfill"): they fetch other months.
func TakeLock(ctx context.Context, cfg LockConfig, job, class string) (*Lock, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("connecting for the job's lock: %w", err)
	}
	l := &Lock{cfg: cfg, conn: conn, job: job, class: class}
	holder, err := l.take(ctx, cfg.Now())
	if err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("taking the job's lock: %w", migrations.NotMigrated(err))
	}
	if holder != "" {
		_ = conn.Close(context.WithoutCancel(ctx))
		var id int64
		var host string
		err := cfg.Pool.QueryRow(ctx, `SELECT run_id, coalesce(host, '') FROM runs WHERE job = $1 AND status = 'running'
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
func (l *Lock) take(ctx context.Context, at time.Time) (holder string, err error) {
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
func (l *Lock) own(ctx context.Context, tx pgx.Tx, at time.Time) error {
	err := tx.QueryRow(ctx, `UPDATE job_locks SET holder = $3, backend_pid = a.pid, backend_role = a.usesysid,
		backend_start = a.backend_start, taken_at = $4
		FROM pg_stat_activity a WHERE a.pid = pg_backend_pid() AND job = $1 AND class = $2
		RETURNING a.pid, a.backend_start`, l.job, l.class, HostID(), at).Scan(&l.pid, &l.started)
	if errors.Is(err, pgx.ErrNoRows) {
		return errors.New("this session is missing from pg_stat_activity")
	}
	return err
}

// Held checks, before a request is sent, that the run still holds its
// job's lock: that the connection holding it lives. When it was lost (an
// administrator ended it, idle_session_timeout, a restart of the server),
// the lock is taken again on a new connection if job_locks still names
// the backend that had it; if another process took the job since (its
// lock's backend was gone, so it could), the run must stop: that process
// resumed the run from its checkpoints, and every page this one asked for
// from now on would be bought twice. A server that cannot be reached is
// tried again as a page's connection is, for up to LockConfig.Reconnect.
// Once lost, Held returns the same ErrLockLost.
func (l *Lock) Held(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return l.lost
	}
	if l.conn.Ping(ctx) == nil {
		return nil
	}
	if l.OnLost != nil {
		l.OnLost()
	}
	_ = l.conn.Close(context.WithoutCancel(ctx))
	deadline := time.Now().Add(l.cfg.Reconnect)
	for delay := dbconn.Backoff; ; delay = min(2*delay, dbconn.MaxBackoff) {
		err := l.retake(ctx)
		if err == nil || errors.Is(err, ErrLockLost) || ctx.Err() != nil || !dbconn.Unavailable(err, nil) || time.Now().Add(delay).After(deadline) {
			if err != nil && !errors.Is(err, ErrLockLost) {
				err = fmt.Errorf("%w: its connection ended, and taking it again failed: %w", ErrLockLost, err)
			}
			l.lost = err
			return err
		}
		l.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "the connection holding the job's lock ended, and the database gives no other; trying again",
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
func (l *Lock) retake(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.cfg.Pool.Config().ConnConfig.Copy())
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
		return l.own(ctx, tx, l.cfg.Now())
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
	l.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "the connection holding the job's lock ended; took the lock again on a new one",
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

// Release frees the lock, then closes its connection. Were the UPDATE
// lost (the connection broken), the lock is free all the same once the
// backend ends.
func (l *Lock) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx := context.Background()
	_, _ = l.conn.Exec(ctx, `UPDATE job_locks SET holder = NULL, backend_pid = NULL, backend_role = NULL, backend_start = NULL
		WHERE job = $1 AND class = $2 AND backend_pid = pg_backend_pid()`, l.job, l.class)
	_ = l.conn.Close(ctx)
}

// HostID names this process in runs.host and schedule_ticks.claimed_by.
func HostID() string {
	h, err := os.Hostname()
	if err != nil {
		h = "unknown"
	}
	return fmt.Sprintf("%s:%d", h, os.Getpid())
}
