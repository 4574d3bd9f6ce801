package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/seoetl/etl/internal/redact"
	"github.com/seoetl/etl/pipeline"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailed  = 1 // the command ran and something failed (a task, the database)
	exitUsage   = 2 // bad flags, a bad job spec: nothing was spent
	exitPartial = 3 // the run finished but some tasks failed or rows were quarantined
)

// env is everything the commands read from the environment.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// redact knows the secrets of this process: the API key and the
	// pieces of the database password (processSecrets).
	redact *redact.Redactor
	log    *slog.Logger
	// logOut is where log lines go: stderr, or a live progress display
	// drawn there, which writes them above itself.
	logOut *swapWriter
	// code is the exit status a command asks for on success paths (0 by
	// default, exitPartial for a run with failures).
	code int
}

// exitError carries an exit status through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

// run is the whole command line; main only wires the process to it, so
// tests drive the CLI in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr,
		redact: redact.New(getenv("ETL_API_KEY")).With(processSecrets(getenv("DATABASE_URL"))...)}
	root := newRoot(e)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return e.code
	}
	msg := e.redact.String(err.Error())
	var specErr *pipeline.SpecError
	var exit *exitError
	switch {
	case errors.As(err, &specErr):
		fmt.Fprintf(stderr, "etl: the job spec is invalid; nothing was run:\n%s\n", e.redact.String(specErr.Error()))
		return exitUsage
	case errors.As(err, &exit):
		fmt.Fprintf(stderr, "etl: %s\n", msg)
		return exit.code
	case strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "unknown shorthand") || strings.Contains(msg, "flag needs an argument") ||
		strings.HasPrefix(msg, "invalid argument") || strings.HasPrefix(msg, "accepts ") ||
		strings.HasPrefix(msg, "requires "):
		fmt.Fprintf(stderr, "etl: %s\nRun 'etl --help' for usage.\n", msg)
		return exitUsage
	}
	fmt.Fprintf(stderr, "etl: %s\n", msg)
	return exitFailed
}

func newRoot(e *env) *cobra.Command {
	var logFormat, logLevel string
	root := &cobra.Command{
		Use:   "etl",
		Short: "Collect SEO data from the data API into a PostgreSQL warehouse",
		Long: `etl pages through the data API (backlinks, keyword metrics), streams each
response into Arrow record batches and upserts them into PostgreSQL tables
partitioned by month and target.

Environment:
  DATABASE_URL   PostgreSQL connection URL of the warehouse
  ETL_API_URL    base address of the data API (e.g. https://api.example.com)
  ETL_API_KEY    data API key; never logged, never stored`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			// A connection error anywhere may quote a malformed URL's
			// password as a host name or a database name.
			if f := cmd.Flags().Lookup("database-url"); f != nil {
				e.redact = e.redact.With(processSecrets(f.Value.String())...)
			}
			e.logOut = &swapWriter{w: e.stderr}
			log, err := newLogger(e.stderr, e.logOut, logFormat, logLevel, e.redact)
			if err != nil {
				return usageError(err)
			}
			e.log = log
			return nil
		},
	}
	root.PersistentFlags().StringVar(&logFormat, "log-format", "auto", "log format: text, json, or auto (text on a terminal, JSON otherwise)")
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(newRunCmd(e), newPlanCmd(e), newScheduleCmd(e), newRetentionCmd(e), newBudgetCmd(e), newMigrateCmd(e), newSandboxCmd(e), newLocalCmd(e), newVersionCmd(e), newRunsCmd(e), newBackfillCmd(e))
	return root
}

// newLogger builds the process logger, writing to out; every record
// passes the redactor. The format "auto" is text when w is a terminal.
func newLogger(w, out io.Writer, format, level string, r *redact.Redactor) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			format = "text"
		}
	}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(out, opts)
	case "json":
		h = slog.NewJSONHandler(out, opts)
	default:
		return nil, fmt.Errorf("--log-format %q: want text, json or auto", format)
	}
	return slog.New(r.Handler(h)), nil
}

// databaseURL returns the --database-url flag or DATABASE_URL.
func (e *env) databaseURL(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if u := e.getenv("DATABASE_URL"); u != "" {
		return u, nil
	}
	return "", usageError(errors.New("no database: set DATABASE_URL or pass --database-url (or try `make run`, which starts a local one)"))
}

var version = "dev"

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(e.stdout, "etl %s\n", version)
		},
	}
}
