package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/seoetl/etl/internal/redact"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/progress"
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
	logOut *progress.LogWriter
	// code is the exit status a command asks for on success paths (0 by
	// default, exitPartial for a run with failures).
	code int
}

// run is the whole command line; main only wires the process to it, so
// tests drive the CLI in-process. It stops when ctx ends.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	return runProcess(ctx, process{}, args, stdin, stdout, stderr, getenv)
}

// process is how the command line is stopped from outside: by signals
// (SIGINT, SIGTERM; nil: none), the second of which ends the process at
// once through exit (main: os.Exit).
type process struct {
	signals <-chan os.Signal
	exit    func(code int)
}

// runProcess is run for a process that signals stop: the first signal
// cancels ctx, so that commands finish the work in flight (a run commits
// the pages it is loading) and stop; the second ends the process at once
// with exitInterrupted. Each says so on stderr, through the log's writer:
// a live progress display keeps the message above itself, and on the
// second ends with a last line that says where the run stood.
func runProcess(ctx context.Context, p process, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr, logOut: progress.NewLogWriter(stderr),
		redact: redact.New(getenv("ETL_API_KEY"), getenv("ETL_SECRET_KEY"), getenv("ETL_CLIENT_SECRET")).With(processSecrets(getenv("DATABASE_URL"))...).With(processSecrets(getenv("ETL_READ_DATABASE_URL"))...)}
	if p.signals != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		done, watched := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(watched)
			e.watchSignals(p, cancel, done)
		}()
		defer func() {
			close(done)
			<-watched
			cancel()
		}()
	}
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
	var specErr *jobspec.SpecError
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
		Long: `etl buys backlink and keyword data from the data API, never past a budget of
units, into PostgreSQL tables partitioned by month; it pulls the business
listings of OAuth accounts with their history, and pushes changes back.`,
		Version:       buildVersion(debug.ReadBuildInfo()),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			// A connection error anywhere may quote a malformed URL's
			// password as a host name or a database name.
			if f := cmd.Flags().Lookup("database-url"); f != nil {
				e.redact = e.redact.With(processSecrets(f.Value.String())...)
			}
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
	root.SetVersionTemplate("etl {{.Version}}\n")
	root.AddCommand(newRunCmd(e), newPlanCmd(e), newScheduleCmd(e), newRetentionCmd(e), newExportCmd(e), newBudgetCmd(e), newMigrateCmd(e), newSandboxCmd(e), newLocalCmd(e), newVersionCmd(e), newRunsCmd(e), newBackfillCmd(e), newAuthCmd(e), newListingsCmd(e), newReportCmd(e))
	applyHelp(root)
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
		opts.ReplaceAttr = durationSeconds
		// A value of the data (a provider's message in an error) may
		// hold a right-to-left override or a C1 control, which the
		// handler leaves as they are.
		h = slog.NewJSONHandler(jsonSafeWriter{out}, opts)
	default:
		return nil, fmt.Errorf("--log-format %q: want text, json or auto", format)
	}
	return slog.New(r.Handler(h)), nil
}

// durationSeconds writes a duration as seconds, a JSON number whose key
// says its unit ("took" becomes "took_seconds"): slog's JSON handler would
// write integer nanoseconds. The text format keeps Go's "1.5s".
func durationSeconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Float64(a.Key+"_seconds", a.Value.Duration().Seconds())
	}
	return a
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

// watchSignals waits for the signals of p until done is closed (see
// runProcess).
func (e *env) watchSignals(p process, cancel func(), done <-chan struct{}) {
	var s os.Signal
	select {
	case s = <-p.signals:
	case <-done:
		return
	}
	e.logOut.Interrupt(fmt.Sprintf("etl: %v: finishing the work in flight (again to stop at once)\n", s))
	cancel()
	select {
	case s = <-p.signals:
	case <-done:
		return
	}
	e.logOut.Abandon(fmt.Sprintf("etl: %v: stopping at once (pages in flight did not commit; the next run fetches them again)\n", s))
	p.exit(exitInterrupted)
}

// buildVersion says which build this is, from what the Go toolchain
// records in the binary: the module's version ("(devel)" when built from
// a checkout rather than installed at a version), the commit it was built
// from, that commit's time, whether the tree had uncommitted changes, and
// the Go version.
func buildVersion(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return "(unknown: the binary carries no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	commit := "commit unknown (built without version control information)"
	if rev := settings["vcs.revision"]; rev != "" {
		commit = "commit " + rev
		var notes []string
		if t := settings["vcs.time"]; t != "" {
			notes = append(notes, t)
		}
		if settings["vcs.modified"] == "true" {
			notes = append(notes, "modified: built with uncommitted changes")
		}
		if len(notes) > 0 {
			commit += " (" + strings.Join(notes, ", ") + ")"
		}
	}
	path := bi.Main.Path
	if path == "" {
		path = "github.com/seoetl/etl"
	}
	return fmt.Sprintf("%s %s, %s, %s", path, v, commit, bi.GoVersion)
}

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version and the commit this binary was built from",
		Long: `Print the module version ("(devel)" for a build from a checkout), the commit
it was built from with its time, whether the tree had uncommitted changes,
and the Go version. etl --version prints the same.

` + exitLine(),
		Args: cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(e.stdout, "etl %s\n", cmd.Root().Version)
		},
	}
}
