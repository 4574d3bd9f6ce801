package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/seoetl/etl/internal/pgcluster"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/migrations"
	"github.com/seoetl/etl/sandbox"
)

// exampleQuery is what `etl local run` suggests trying first.
const exampleQuery = `SELECT t.url, h.month, h.backlinks_count, h.domains_count, h.score FROM backlink_history h JOIN targets t USING (target_id) ORDER BY t.url, h.month DESC LIMIT 12`

func newLocalCmd(e *env) *cobra.Command {
	var dir string
	local := &cobra.Command{
		Use:   "local",
		Short: "Use the embedded default: a local PostgreSQL under --dir and the sandbox",
		Long: `The embedded default, for trying etl without any server: a PostgreSQL
cluster kept under --dir (so data survives between runs) and the sandbox in
place of the data API. Each sub-command starts what it needs and stops it
when done. With DATABASE_URL set, that database is used instead.`,
	}
	local.PersistentFlags().StringVar(&dir, "dir", ".etl", "folder that keeps the local PostgreSQL cluster")

	var o runOptions
	runCmd := &cobra.Command{
		Use:   "run",
		Short: "Start the local PostgreSQL and the sandbox, migrate, run a job, stop",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			dbURL, stop, err := e.localDatabase(ctx, dir)
			if err != nil {
				return err
			}
			defer stop()
			if err := migrateUp(ctx, dbURL); err != nil {
				return err
			}
			clock, err := o.clock()
			if err != nil {
				return err
			}
			apiURL, stopSandbox, err := e.startSandbox(clock)
			if err != nil {
				return err
			}
			defer stopSandbox()
			if err := e.runJob(ctx, o, dbURL, apiURL, sandboxKey); err != nil {
				return err
			}
			if e.getenv("DATABASE_URL") != "" {
				fmt.Fprintf(e.stdout, "\nQuery the warehouse:\n  psql \"$DATABASE_URL\" -c '%s'\n", exampleQuery)
			} else {
				fmt.Fprintf(e.stdout, "\nQuery the warehouse (this starts the local PostgreSQL, runs psql, stops it):\n  make psql SQL='%s'\n", exampleQuery)
			}
			return nil
		},
	}
	o.register(runCmd, false)

	psqlCmd := &cobra.Command{
		Use:   "psql [-- PSQL-ARGS...]",
		Short: "Start the local PostgreSQL, run psql on it, stop",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			dbURL, stop, err := e.localDatabase(ctx, dir)
			if err != nil {
				return err
			}
			defer stop()
			bin, err := pgcluster.Binaries()
			if err != nil {
				return err
			}
			psql := exec.CommandContext(ctx, filepath.Join(bin, "psql"), append([]string{dbURL}, args...)...)
			psql.Stdin, psql.Stdout, psql.Stderr = e.stdin, e.stdout, e.stderr
			if err := psql.Run(); err != nil {
				var exit *exec.ExitError
				if errors.As(err, &exit) {
					return &exitError{code: exit.ExitCode(), err: fmt.Errorf("psql exited with status %d", exit.ExitCode())}
				}
				return fmt.Errorf("psql: %w", err)
			}
			return nil
		},
	}
	local.AddCommand(runCmd, psqlCmd)
	return local
}

// localDatabase returns DATABASE_URL if set, else starts the cluster kept
// under dir (creating it on first use). stop stops what was started.
func (e *env) localDatabase(ctx context.Context, dir string) (string, func(), error) {
	if u := e.getenv("DATABASE_URL"); u != "" {
		return u, func() {}, nil
	}
	abs, err := filepath.Abs(filepath.Join(dir, "pg"))
	if err != nil {
		return "", nil, err
	}
	e.log.Info("starting the local PostgreSQL", "dir", abs)
	c, err := pgcluster.Start(ctx, pgcluster.Options{Dir: abs, Persistent: true, Logger: e.log})
	if err != nil {
		return "", nil, err
	}
	return c.URL("etl"), func() {
		if err := c.Stop(); err != nil {
			e.log.Error("stopping the local PostgreSQL", "error", err)
		}
	}, nil
}

// migrateUp applies the migrations and documents the tables; its errors
// hold no part of dbURL's password.
func migrateUp(ctx context.Context, dbURL string) error {
	if err := migrations.Up(ctx, dbURL); err != nil {
		return dbError(dbURL, err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return dbError(dbURL, err)
	}
	defer pool.Close()
	return dbError(dbURL, load.Document(ctx, pool))
}

// sandboxKey is the sandbox's default key; it is not a secret.
const sandboxKey = "sandbox"

// startSandbox serves the sandbox on a free loopback port.
func (e *env) startSandbox(clock func() time.Time) (string, func(), error) {
	// The sandbox logs every request at info; here that would drown the
	// run's own lines, so only its warnings and errors show.
	quiet := slog.New(&minLevel{Handler: e.log.Handler(), min: slog.LevelWarn})
	srv, err := sandbox.New(sandbox.Config{Now: clock, APIKeys: []string{sandboxKey}, Logger: quiet})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("sandbox: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := sandbox.Serve(ctx, ln, srv); err != nil {
			e.log.Error("sandbox", "error", err)
		}
	}()
	e.log.Info("sandbox started", "url", "http://"+ln.Addr().String())
	return "http://" + ln.Addr().String(), func() {
		cancel()
		<-done
	}, nil
}

// minLevel drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h *minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h *minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h *minLevel) WithGroup(name string) slog.Handler {
	return &minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
