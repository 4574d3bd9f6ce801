package runs

import (
	"context"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
)

var lockNow = time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)

// lockConfig takes job locks on pool, at lockNow.
func lockConfig(pool *pgxpool.Pool) LockConfig {
	return LockConfig{Pool: pool, Reconnect: time.Minute, Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return lockNow }}
}

func newPoolAt(t *testing.T, dbURL string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// lockRow is a job's row of job_locks.
func lockRow(t *testing.T, pool *pgxpool.Pool, job, class string) (holder *string, pid *int32) {
	t.Helper()
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT holder, backend_pid FROM job_locks WHERE job = $1 AND class = $2`, job, class).Scan(&holder, &pid))
	return holder, pid
}

// TestAKilledHolderFreesTheJobLock: the lock is its holder's backend's:
// when that backend is killed (pg_terminate_backend, as when the process
// dies and its connection ends), the next taker takes it over; the dead
// holder's release, which comes later, frees nothing of the new one's.
// Runs and backfills lock apart.
func TestAKilledHolderFreesTheJobLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	var version int
	require.NoError(t, pool.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version))
	if version < 140000 {
		t.Skip("pg_terminate_backend with a timeout (to wait for the end of the backend) needs PostgreSQL 14")
	}
	r := lockConfig(pool)

	first, err := TakeLock(ctx, r, "j", "run")
	require.NoError(t, err)
	holder, pid := lockRow(t, pool, "j", "run")
	require.Equal(t, HostID(), *holder)
	require.Equal(t, int32(first.conn.PgConn().PID()), *pid, "the row names the holder's lock connection")

	_, err = TakeLock(ctx, r, "j", "run")
	require.ErrorIs(t, err, ErrJobBusy)
	require.EqualError(t, err, "the job is already running: job j, held by "+HostID())
	backfill, err := TakeLock(ctx, r, "j", "backfill")
	require.NoError(t, err, "a backfill locks apart from runs")
	backfill.Release()

	var gone bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT pg_terminate_backend($1::int, 30000)`, first.conn.PgConn().PID()).Scan(&gone))
	require.True(t, gone)
	second, err := TakeLock(ctx, r, "j", "run")
	require.NoError(t, err, "the killed holder's lock is free")
	_, pid = lockRow(t, pool, "j", "run")
	require.Equal(t, int32(second.conn.PgConn().PID()), *pid)

	first.Release() // too late: its backend is gone, and so is its lock
	_, err = TakeLock(ctx, r, "j", "run")
	require.ErrorIs(t, err, ErrJobBusy, "the new holder keeps it")
	second.Release()
	holder, pid = lockRow(t, pool, "j", "run")
	require.Nil(t, holder)
	require.Nil(t, pid)
	third, err := TakeLock(ctx, r, "j", "run")
	require.NoError(t, err)
	third.Release()
}

// TestAJobLockRowIsHeldWhileItsBackendLives: a row of job_locks is a lock
// held only while a backend with its pid, role and start time is alive; a
// row naming a pid that a later backend now has (of another role, or
// started later) is a dead holder's, and is taken over. Where the taker
// cannot see the holder's start time (another role's session), the pid
// and role decide: a holder is never taken for dead.
func TestAJobLockRowIsHeldWhileItsBackendLives(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dbURL := pgtest.NewDB(t)
	pool := newPoolAt(t, dbURL)
	r := lockConfig(pool)

	// A writer of another role, who sees no more of the superuser's
	// sessions in pg_stat_activity than their pid and role.
	writerURL := pgtest.NewRole(t, dbURL)
	_, err := pool.Exec(ctx, `GRANT SELECT, INSERT, UPDATE ON job_locks TO `+pgx.Identifier{roleOf(t, writerURL)}.Sanitize()+`;
		GRANT SELECT ON runs TO `+pgx.Identifier{roleOf(t, writerURL)}.Sanitize())
	require.NoError(t, err)
	writer := lockConfig(newPoolAt(t, writerURL))

	// other is a live backend of the superuser, which holds no lock.
	other, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	var pid int32
	var role uint32
	var started time.Time
	require.NoError(t, other.QueryRow(ctx, `SELECT pid, usesysid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()`).Scan(&pid, &role, &started))

	for _, tc := range []struct {
		name    string
		taker   LockConfig
		role    uint32
		started time.Time
		held    bool
	}{
		{"the live backend", r, role, started, true},
		{"an earlier backend of that pid", r, role, started.Add(-time.Hour), false},
		{"a backend of that pid of another role", r, role + 1, started, false},
		{"another role's backend, its start hidden", writer, role, started.Add(-time.Hour), true},
		{"another role's backend of that pid, not the holder's role", writer, role + 1, started, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := "j " + tc.name
			_, err := pool.Exec(ctx, `INSERT INTO job_locks (job, class, holder, backend_pid, backend_role, backend_start, taken_at)
				VALUES ($1, 'run', 'elsewhere:1', $2, $3, $4, $5)`, job, pid, tc.role, tc.started, lockNow)
			require.NoError(t, err)
			l, err := TakeLock(ctx, tc.taker, job, "run")
			if tc.held {
				require.ErrorIs(t, err, ErrJobBusy)
				require.EqualError(t, err, "the job is already running: job "+job+", held by elsewhere:1")
				return
			}
			require.NoError(t, err, "a dead holder's row is taken over")
			_, got := lockRow(t, pool, job, "run")
			require.Equal(t, int32(l.conn.PgConn().PID()), *got)
			l.Release()
		})
	}
}

// roleOf is the user of a database URL.
func roleOf(t *testing.T, dbURL string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	require.NoError(t, err)
	return cfg.User
}

// TestALingeringBackendOfADeadHolderIsEnded: right after a process of this
// host is killed, the backend of its lock connection may live on for a
// moment (the server has not seen the socket close yet). A run started
// then finds the holder's process gone and ends that backend instead of
// refusing to start ("the job is already running"). A holder whose
// process lives keeps the lock.
func TestALingeringBackendOfADeadHolderIsEnded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.NewPool(t)
	r := lockConfig(pool)
	held, err := TakeLock(ctx, r, "j", "run")
	require.NoError(t, err)
	defer held.conn.Close(context.Background())

	// The row names a process of this host that has exited, while its
	// backend (held's connection) is still alive.
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	host, _, _ := strings.Cut(HostID(), ":")
	dead := host + ":" + strconv.Itoa(cmd.Process.Pid)
	_, err = pool.Exec(ctx, `UPDATE job_locks SET holder = $1 WHERE job = 'j'`, dead)
	require.NoError(t, err)

	next, err := TakeLock(ctx, r, "j", "run")
	require.NoError(t, err, "the dead holder's lingering backend was ended")
	defer next.Release()
	_, pid := lockRow(t, pool, "j", "run")
	require.Equal(t, int32(next.conn.PgConn().PID()), *pid)
	require.Error(t, held.conn.Ping(ctx), "the lingering backend is gone")

	// A live holder (this very process) is never ended.
	_, err = TakeLock(ctx, r, "j", "run")
	require.ErrorIs(t, err, ErrJobBusy)
}
