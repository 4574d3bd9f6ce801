package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seoetl/etl/internal/localwh"
)

// The sub-commands of etl local that run the local warehouse between
// commands; see package localwh.

func newLocalUpCmd(e *env, warehouse func() (localwh.Warehouse, error)) *cobra.Command {
	var jobs string
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the local warehouse (PostgreSQL and the sandbox) in the background, and keep it up",
		Long: `Start the local warehouse in the background, or keep the one running (as
make run starts it) up, until etl local down. It migrates the database and
signs in on its sandbox, which approves device codes by itself, the
accounts the jobs of --jobs name and those the warehouse holds (their
tokens sealed with the key of the local folder, secret.key, made once); it
prints how to reach it: eval "$(etl local env)" sets DATABASE_URL,
ETL_API_URL, ETL_API_KEY, ETL_AUTH_URL and ETL_SECRET_KEY for etl run,
runs, plan, budget, backfill, auth and listings. The sandbox keeps its
usage (GET $ETL_API_URL/sandbox/usage?key=sandbox) for as long as the
warehouse is up. Running it again changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			l, err := warehouse()
			if err != nil {
				return err
			}
			wasUp := false
			if c, err := l.Dial(ctx, localwh.Status, false); err == nil {
				wasUp = c.State.Kept
				c.Close()
			} else if !errors.Is(err, localwh.ErrNotRunning) {
				return err
			}
			c, err := l.Dial(ctx, localwh.Up, true)
			if err != nil {
				return err
			}
			c.Close()
			st := c.State
			if err := migrateUp(ctx, st.DatabaseURL); err != nil {
				return err
			}
			if err := e.localUpAccounts(ctx, l, jobs, cmd.Flags().Changed("jobs"), st); err != nil {
				return err
			}
			head := "The local warehouse is up, in the background"
			if wasUp {
				head = "The local warehouse was up already"
			}
			self := selfName()
			fmt.Fprintf(e.stdout, "%s (pid %d):\n", head, st.PID)
			fmt.Fprintf(e.stdout, "  PostgreSQL  %s (its password: etl local env)\n", st.DatabaseURLShown())
			fmt.Fprintf(e.stdout, "              data in %s%s\n", st.DataDir, awayNote(l, st.DataDir))
			fmt.Fprintf(e.stdout, "  sandbox     %s (API key %s)\n", st.APIURL, st.APIKey)
			fmt.Fprintf(e.stdout, "  log         %s\n", st.Log)
			fmt.Fprintf(e.stdout, "Use it from this shell (etl run, runs, plan, budget, auth, listings, psql \"$DATABASE_URL\"):\n")
			fmt.Fprintf(e.stdout, "  eval \"$(%s local env)\"\n", self)
			fmt.Fprintf(e.stdout, "make run and make psql use it as it is. Stop it: %s local down (or make down).\n", self)
			return nil
		},
	}
	cmd.Flags().StringVar(&jobs, "jobs", "jobs.yaml", "job spec whose accounts are signed in on the sandbox (the default is skipped when missing)")
	return cmd
}

// localUpAccounts signs in on the sandbox of st the accounts the jobs of
// the spec file name, and those the warehouse holds, with the key of the
// local folder: the one etl local env exports. A missing default spec
// file, or one that does not parse, only leaves its accounts out (with a
// note): the warehouse is up all the same.
func (e *env) localUpAccounts(ctx context.Context, l localwh.Warehouse, jobs string, named bool, st localwh.State) error {
	var names []string
	if _, err := os.Stat(jobs); err == nil || named {
		spec, err := loadSpec(jobs, time.Now())
		if err != nil {
			fmt.Fprintf(e.stderr, "etl: note: the accounts of %s are not signed in on the sandbox: %v\n", jobs, err)
		} else {
			for _, j := range spec.Jobs {
				names = jobAccounts(names, j)
			}
		}
	}
	raw, err := localwh.ReadOrMakeKey(l.File(localwh.KeyFile))
	if err != nil {
		return err
	}
	e.redact = e.redact.With(raw)
	return e.signInLocal(ctx, raw, names, true, st.DatabaseURL, st.APIURL)
}

// awayNote says why the data is not in the local folder, when it is not.
func awayNote(l localwh.Warehouse, dataDir string) string {
	if !l.Away(dataDir) {
		return ""
	}
	return " (not in " + l.Dir + ": the server's OS user cannot reach it)"
}

func newLocalDownCmd(e *env, warehouse func() (localwh.Warehouse, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the local warehouse (PostgreSQL and the sandbox); the data stays",
		Long: `Stop the local warehouse now: PostgreSQL (the data stays) and the sandbox
(its usage is forgotten). A command still using it loses its connection; a
run stopped that way is taken up by the next etl run. With nothing running
it says so and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := warehouse()
			if err != nil {
				return err
			}
			_, err = e.stopWarehouse(cmd, l)
			return err
		},
	}
}

// stopWarehouse stops the warehouse of l, saying what it did; false when
// none was running.
func (e *env) stopWarehouse(cmd *cobra.Command, l localwh.Warehouse) (bool, error) {
	c, err := l.Dial(cmd.Context(), localwh.Down, false)
	if errors.Is(err, localwh.ErrNotRunning) {
		fmt.Fprintf(e.stdout, "The local warehouse of %s is not running; nothing to stop.\n", l.Dir)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer c.Close()
	if err := c.WaitStopped(); err != nil {
		return false, err
	}
	fmt.Fprintf(e.stdout, "Stopped the local warehouse (pid %d): PostgreSQL and the sandbox. The data stays in %s.\n", c.State.PID, c.State.DataDir)
	if c.State.Users > 0 {
		fmt.Fprintf(e.stdout, "%d command(s) using it lost their connection.\n", c.State.Users)
	}
	return true, nil
}

func newLocalEnvCmd(e *env, warehouse func() (localwh.Warehouse, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "env",
		Short: `Print the environment of the running local warehouse: eval "$(etl local env)"`,
		Long: `Print export lines for the running local warehouse (see etl local up),
shell-quoted, for eval "$(etl local env)": DATABASE_URL (with the
database's password), ETL_API_URL and ETL_API_KEY (the sandbox's),
ETL_AUTH_URL (the sandbox's token service) and ETL_SECRET_KEY (the key of
the accounts' tokens, kept in the local folder as secret.key, mode 0600,
and made when missing). The secrets go to stdout only, for eval: never to
a log, an error or a command line. Exit status 1, and nothing on stdout,
when it is not running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := warehouse()
			if err != nil {
				return err
			}
			c, err := l.Dial(cmd.Context(), localwh.Status, false)
			if errors.Is(err, localwh.ErrNotRunning) {
				return fmt.Errorf("%w in %s: start it with `%s local up` (or make up)", err, l.Dir, selfName())
			}
			if err != nil {
				return err
			}
			c.Close()
			st := c.State
			key, err := localwh.ReadOrMakeKey(l.File(localwh.KeyFile))
			if err != nil {
				return err
			}
			e.redact = e.redact.With(key)
			fmt.Fprintf(e.stdout, "export DATABASE_URL=%s\nexport ETL_API_URL=%s\nexport ETL_API_KEY=%s\nexport ETL_AUTH_URL=%s\nexport ETL_SECRET_KEY=%s\n",
				shellQuote(st.DatabaseURL), shellQuote(st.APIURL), shellQuote(st.APIKey), shellQuote(st.APIURL), shellQuote(key))
			if !st.Kept {
				fmt.Fprintf(e.stderr, "etl: note: the local warehouse stops when the command using it ends; `%s local up` keeps it running\n", selfName())
			}
			return nil
		},
	}
}

func newLocalCleanCmd(e *env, warehouse func() (localwh.Warehouse, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "clean",
		Short: "Stop the local warehouse and delete its data, wherever it lives (make clean)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := warehouse()
			if err != nil {
				return err
			}
			if _, err := e.stopWarehouse(cmd, l); err != nil {
				return err
			}
			deleted, err := l.Delete(cmd.Context())
			for _, p := range deleted {
				fmt.Fprintf(e.stdout, "Deleted the local PostgreSQL cluster in %s.\n", p)
			}
			return err
		},
	}
}

func newLocalServeCmd(e *env, warehouse func() (localwh.Warehouse, error)) *cobra.Command {
	var starterFD int
	cmd := &cobra.Command{
		Use:    "serve",
		Short:  "Run the local warehouse in the foreground (etl local up starts it in the background)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := warehouse()
			if err != nil {
				return err
			}
			var starter net.Conn
			if starterFD >= 0 {
				f := os.NewFile(uintptr(starterFD), "starter")
				starter, err = net.FileConn(f)
				f.Close()
				if err != nil {
					return fmt.Errorf("--starter-fd %d: %w", starterFD, err)
				}
			}
			return l.Serve(cmd.Context(), starter)
		},
	}
	cmd.Flags().IntVar(&starterFD, "starter-fd", -1, "file descriptor of the starting command's connection")
	return cmd
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// selfName is how to run this program from the current folder: "etl" when
// that is what PATH finds, bin/etl in a checkout, else its full path.
func selfName() string {
	exe, err := os.Executable()
	if err != nil {
		return "etl"
	}
	wd, _ := os.Getwd()
	return commandFor(exe, wd)
}

// commandFor is how a person in folder wd runs the program at exe, as a
// word a POSIX shell reads back as it is (quoted when it holds a space,
// a quote, a $ and the like): what the hints print for copying.
func commandFor(exe, wd string) string {
	if p, err := exec.LookPath("etl"); err == nil {
		if sameFile(p, exe) {
			return "etl"
		}
	}
	if wd != "" {
		if rel, err := filepath.Rel(wd, exe); err == nil && !strings.HasPrefix(rel, "..") {
			if !strings.Contains(rel, "/") {
				rel = "./" + rel
			}
			return shellWord(rel)
		}
	}
	return shellWord(exe)
}

// shellWord is s when a POSIX shell reads it as one word unchanged, else s
// quoted (shellQuote).
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,:@%") == "" {
		return s
	}
	return shellQuote(s)
}

func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
