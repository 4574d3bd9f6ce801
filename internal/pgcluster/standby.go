package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// StartStandby starts a throwaway streaming standby of primary: its data
// folder is a base backup of primary (pg_basebackup -R, which writes the
// primary_conninfo and standby.signal of a standby), and it replays what
// primary writes from then on, serving read-only queries (hot standby).
// opts is as for Start, and must be for a throwaway cluster; the standby
// starts with primary's Settings, opts.Settings over them: a hot standby
// needs max_worker_processes and friends at least as high as its
// primary's, and the standby of a Citus coordinator (StartCitus) must
// preload citus as the coordinator does. The standby is asynchronous
// unless primary's Settings name it in synchronous_standby_names (every
// standby matches '*').
func StartStandby(ctx context.Context, primary *Cluster, opts Options) (*Cluster, error) {
	if opts.Persistent {
		return nil, errors.New("pgcluster: a standby is a throwaway cluster")
	}
	settings := maps.Clone(primary.opts.Settings)
	if settings == nil {
		settings = map[string]string{}
	}
	maps.Copy(settings, opts.Settings)
	opts.Settings = settings
	opts.primary = primary
	return Start(ctx, opts)
}

// PromoteCoordinator promotes c, a standby of a Citus coordinator
// (StartStandby of Citus.Coordinator), and names it the coordinator in
// the Citus metadata of each of databases (citus_set_coordinator_host,
// which the workers with metadata learn too): until then the promoted
// node's pg_dist_node, and the workers', name the old coordinator's
// port, where the workers' connections to the coordinator (2PC recovery,
// queries run from a worker) would go. An operator or an HA tool
// (Patroni's Citus support) does the same after a failover.
func (c *Cluster) PromoteCoordinator(ctx context.Context, databases ...string) error {
	if err := c.Promote(ctx); err != nil {
		return err
	}
	for _, db := range databases {
		sql := fmt.Sprintf("SELECT citus_set_coordinator_host('127.0.0.1', %d)", c.port)
		if err := execOn(ctx, c.URL(db), sql); err != nil {
			return fmt.Errorf("pgcluster: naming the promoted node the coordinator of database %s: %w", db, err)
		}
	}
	return nil
}

// basebackup makes the data folder a base backup of c.opts.primary, in a
// scratch folder renamed into place at the end, as initdb does.
func (c *Cluster) basebackup(ctx context.Context) error {
	scratch := c.dataDir + ".basebackup"
	if err := os.RemoveAll(scratch); err != nil {
		return err
	}
	began := time.Now()
	p := c.opts.primary
	cmd := exec.CommandContext(ctx, filepath.Join(c.opts.BinDir, "pg_basebackup"),
		"--pgdata", scratch, "--write-recovery-conf", "--wal-method", "stream", "--checkpoint", "fast", "--no-sync",
		"--host", "127.0.0.1", "--port", strconv.Itoa(p.port), "--username", Superuser)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = c.dir
	cmd.Env = serverEnv()
	if p.password != "" {
		cmd.Env = append(cmd.Env, "PGPASSWORD="+p.password)
	}
	cmd.SysProcAttr = c.sysProcAttr(syscall.SIGKILL)
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	runtime.LockOSThread() // the parent-death signal follows this thread
	err := cmd.Run()
	runtime.UnlockOSThread()
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("pg_basebackup of the primary on port %d: %w\n%s", p.port, err, tail(out.Bytes(), 20))
	}
	if err := os.Rename(scratch, c.dataDir); err != nil {
		return fmt.Errorf("pg_basebackup: %w", err)
	}
	c.log.LogAttrs(ctx, slog.LevelInfo, "base backup done", slog.String("data", c.dataDir), slog.Int("primary_port", p.port),
		slog.Duration("took", time.Since(began)))
	return nil
}

// Crash stops the server as `pg_ctl stop -m immediate` does (SIGQUIT to
// the postmaster: no checkpoint, sessions cut, a crash recovery at the
// next start) and waits for it to exit. What a standby had not received
// of its writes is lost with it. Stop afterwards removes the folder.
func (c *Cluster) Crash() error {
	if err := c.proc.cmd.Process.Signal(syscall.SIGQUIT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("pgcluster: crashing postgres (pid %d): %w", c.proc.cmd.Process.Pid, err)
	}
	t := time.NewTimer(c.opts.StopTimeout)
	defer t.Stop()
	select {
	case <-c.proc.done:
		return nil
	case <-t.C:
		return fmt.Errorf("pgcluster: postgres (pid %d) did not exit within %v of SIGQUIT", c.proc.cmd.Process.Pid, c.opts.StopTimeout)
	}
}

// Promote makes a standby a primary (pg_promote, waiting up to a minute
// for the promotion to end): it stops replaying, starts a new timeline
// and accepts writes.
func (c *Cluster) Promote(ctx context.Context) error {
	return c.exec(ctx, "promoting the standby", `SELECT pg_promote(true, 60)`)
}

// StopReceiving cuts a standby off from its primary: its WAL receiver
// stops (primary_conninfo emptied, the configuration reloaded) and
// StopReceiving returns once it has. What the primary commits from then
// on is not on the standby; a promotion then loses it, as an asynchronous
// standby that lags behind does.
func (c *Cluster) StopReceiving(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("pgcluster: cutting the standby off: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, sql := range []string{`ALTER SYSTEM SET primary_conninfo = ''`, `SELECT pg_reload_conf()`} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("pgcluster: cutting the standby off: %s: %w", sql, err)
		}
	}
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		var receiving bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_wal_receiver)`).Scan(&receiving); err != nil {
			return fmt.Errorf("pgcluster: waiting for the WAL receiver to stop: %w", err)
		}
		if !receiving {
			return nil
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("pgcluster: waiting for the WAL receiver to stop: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// exec runs sql on the database postgres as the superuser.
func (c *Cluster) exec(ctx context.Context, what, sql string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("pgcluster: %s: %w", what, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("pgcluster: %s: %w", what, err)
	}
	return nil
}
