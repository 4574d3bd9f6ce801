package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/seoetl/etl/internal/localwh"
	"github.com/seoetl/etl/internal/pgcluster"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/migrations"
)

// exampleQuery is what `etl local run` suggests trying first.
const exampleQuery = `SELECT t.url, h.month, h.backlinks_count, h.domains_count, h.score FROM backlink_history h JOIN targets t USING (target_id) ORDER BY t.url, h.month DESC LIMIT 12`

func newLocalCmd(e *env) *cobra.Command {
	var dir, dataRoot string
	warehouse := func() (localwh.Warehouse, error) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return localwh.Warehouse{}, err
		}
		root, err := filepath.Abs(dataRoot)
		return e.localWarehouse(localwh.Paths{Dir: abs, DataRoot: root}), err
	}
	local := &cobra.Command{
		Use:   "local",
		Short: "Use the local warehouse: a local PostgreSQL and the sandbox",
		Long: `The embedded default, for trying etl without any server: the local
warehouse, a PostgreSQL cluster whose data survives between runs and the
sandbox in place of the data API, run by one background process that the
local commands share.

etl local run and etl local psql start the warehouse when it is not running
and stop it when they end, unless another command still uses it or
etl local up keeps it; so make run works while make psql is open.
etl local up keeps it running until etl local down, and
eval "$(etl local env)" points etl run, runs, plan, budget, backfill, auth
and listings at it, with the key of its accounts' tokens.

The data lives in --dir/pg, or, when the server's OS user cannot reach that
folder (as root, PostgreSQL runs as the OS user postgres, who cannot enter a
folder private to root such as /root or a mktemp -d folder), in a folder
named after the checkout under --data-root; etl local up says where.
etl local clean deletes it. With DATABASE_URL set, etl local run and psql use
that database instead.`,
	}
	local.PersistentFlags().StringVar(&dir, "dir", ".etl", "local folder of the warehouse: its socket, state (local.json), log, and PostgreSQL cluster (pg) when the server can reach it")
	local.PersistentFlags().StringVar(&dataRoot, "data-root", pgcluster.DefaultAwayRoot, "where the cluster goes, in a folder of its own, when the server's OS user cannot reach --dir")
	local.AddCommand(newLocalRunCmd(e, warehouse), newLocalPsqlCmd(e, warehouse), newLocalUpCmd(e, warehouse), newLocalDownCmd(e, warehouse),
		newLocalEnvCmd(e, warehouse), newLocalCleanCmd(e, warehouse), newLocalServeCmd(e, warehouse))
	return local
}

// newLocalRunCmd is etl local run.
func newLocalRunCmd(e *env, warehouse func() (localwh.Warehouse, error)) *cobra.Command {
	var o runOptions
	runCmd := &cobra.Command{
		Use:   "run",
		Short: "Run a job on the local warehouse: its PostgreSQL and its sandbox (started for the run unless it is up)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			l, err := warehouse()
			if err != nil {
				return err
			}
			dbURL, wh, done, err := e.localDatabase(ctx, l)
			if err != nil {
				return err
			}
			defer done()
			if err := migrateUp(ctx, dbURL); err != nil {
				return err
			}
			// The warehouse's sandbox, unless the run's clock is pinned:
			// a sandbox answers for its own clock's months.
			apiURL := ""
			if wh != nil && o.now == "" {
				apiURL = wh.APIURL
			} else {
				clock, err := o.clock()
				if err != nil {
					return err
				}
				u, stopSandbox, err := localwh.StartSandbox(e.log, clock)
				if err != nil {
					return err
				}
				defer stopSandbox()
				apiURL = u
			}
			if err := e.localAccounts(ctx, l, o, dbURL, apiURL); err != nil {
				return err
			}
			if err := e.runJob(ctx, o, dbURL, apiURL, localwh.SandboxKey); err != nil {
				return err
			}
			switch {
			case wh == nil:
				fmt.Fprintf(e.stdout, "\nQuery the warehouse:\n  psql \"$DATABASE_URL\" -c '%s'\n", exampleQuery)
			case wh.Kept:
				fmt.Fprintf(e.stdout, "\nThe data is in %s; the local warehouse stays up (make down stops it). Query it:\n  make psql SQL='%s'\n", wh.DataDir, exampleQuery)
			default:
				fmt.Fprintf(e.stdout, "\nThe data stays in %s (make clean deletes it).\n"+
					"Query it (this starts the local PostgreSQL, runs psql, stops it):\n  make psql SQL='%s'\n"+
					"Keep it running for etl runs, plan, budget and backfill:\n  make up && eval \"$(%s local env)\"\n",
					wh.DataDir, exampleQuery, selfName())
			}
			return nil
		},
	}
	o.register(runCmd, false)
	runCmd.Flags().BoolVar(&o.refetch, "refetch", false, refetchHelp)
	return runCmd
}

// newLocalPsqlCmd is etl local psql.
func newLocalPsqlCmd(e *env, warehouse func() (localwh.Warehouse, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "psql [-- PSQL-ARGS...]",
		Short: "Run psql on the local warehouse (started for it unless it is up)",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			l, err := warehouse()
			if err != nil {
				return err
			}
			dbURL, _, done, err := e.localDatabase(ctx, l)
			if err != nil {
				return err
			}
			defer done()
			bin, err := pgcluster.Binaries()
			if err != nil {
				return err
			}
			// The password goes in psql's environment, not its arguments,
			// which every user sees in ps.
			bare, pw := splitPassword(dbURL)
			psql := exec.CommandContext(ctx, filepath.Join(bin, "psql"), append([]string{bare}, args...)...)
			psql.Stdin, psql.Stdout, psql.Stderr = e.stdin, e.stdout, e.stderr
			if pw != "" {
				psql.Env = append(os.Environ(), "PGPASSWORD="+pw)
			}
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
}

// localDatabase returns DATABASE_URL if set (wh nil), else the database of
// the local warehouse, started when it is not running. done lets go of it,
// which stops it when nothing else uses it or keeps it.
func (e *env) localDatabase(ctx context.Context, l localwh.Warehouse) (dbURL string, wh *localwh.State, done func(), err error) {
	if u := e.getenv("DATABASE_URL"); u != "" {
		return u, nil, func() {}, nil
	}
	c, err := l.Dial(ctx, localwh.Use, true)
	if err != nil {
		return "", nil, nil, err
	}
	e.log.Info("local warehouse", "database_url", c.State.DatabaseURLShown(), "data", c.State.DataDir, "kept_up", c.State.Kept)
	return c.State.DatabaseURL, &c.State, func() {
		stopped, err := c.Release()
		switch {
		case err != nil:
			e.log.Error("local warehouse", "error", err)
		case stopped:
			e.log.Info("local warehouse stopped", "data", c.State.DataDir)
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

// localWarehouse is the local warehouse of l, which Dial starts in the
// background as `etl local serve` (selfCommand).
func (e *env) localWarehouse(l localwh.Paths) localwh.Warehouse {
	return localwh.Warehouse{Paths: l, Log: e.log, Spawn: func() (*exec.Cmd, error) {
		return selfCommand("--log-format", "text", "local", "--dir", l.Dir, "--data-root", l.DataRoot, "serve", "--starter-fd", "3")
	}}
}

// selfCommand returns the command that runs this program with args (tests
// replace it: their executable is the test binary).
var selfCommand = func(args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to start the local warehouse: %w", err)
	}
	return exec.Command(exe, args...), nil
}

// splitPassword returns dbURL without its password, and the password.
func splitPassword(dbURL string) (string, string) {
	u, err := url.Parse(dbURL)
	if err != nil || u.User == nil {
		return dbURL, ""
	}
	pw, ok := u.User.Password()
	if !ok {
		return dbURL, ""
	}
	u.User = url.User(u.User.Username())
	return u.String(), pw
}
