package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/dbconn"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/money"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
)

// runOptions are the flags of `etl run` (and of `etl local run`).
type runOptions struct {
	jobs        string
	job         string
	databaseURL string
	apiURL      string
	concurrency int
	now         string
	fresh       bool
	// refetch buys every task, whatever the warehouse holds (etl run
	// --refetch).
	refetch bool
	// json prints the run's summary as JSON (etl run --json).
	json bool
}

func (o *runOptions) register(cmd *cobra.Command, withConnections bool) {
	f := cmd.Flags()
	f.StringVar(&o.jobs, "jobs", "jobs.yaml", "job spec file")
	f.StringVar(&o.job, "job", "", "name of the job to run (required when the file has several)")
	f.IntVar(&o.concurrency, "concurrency", 4, fmt.Sprintf("tasks in flight at once, at most %d (the API's concurrent requests per account); needs that many + %d database connections, or is refused before any request",
		catalog.AccountConcurrentRequests, dbconn.NeedConns(1, 1).Total()-1))
	f.StringVar(&o.now, "now", "", "pin the current time (RFC 3339 or YYYY-MM-DD), for reproducible runs")
	_ = f.MarkHidden("now")
	if withConnections {
		f.StringVar(&o.databaseURL, "database-url", "", "warehouse connection URL (default $DATABASE_URL)")
		f.StringVar(&o.apiURL, "api-url", "", "data API base address (default $ETL_API_URL)")
	}
}

func newRunCmd(e *env) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run --jobs FILE --job NAME",
		Short: "Run one job of a job spec now",
		Long: `Run one job now: validate the job spec (nothing is spent when it is invalid),
expand the job into tasks, fetch every page from the data API as CSV, and
upsert the rows into the warehouse. Prints what was loaded.

The API key comes from ETL_API_KEY only (never a flag, never the job spec).

A job never overlaps itself, across processes: while it runs elsewhere, etl run
refuses to start. Each page commits with its rows, its units and the task's
checkpoint; when the job's last run did not finish this month, etl run takes
it up: it resumes a run whose process died or that was interrupted, and
continues one that a cap, the API's 403 or failed tasks stopped (with a new
per_run allowance, so a job larger than per_run gets through in slices).
Tasks done are not run again, the others go on from their last committed
page: a line that was paid for is never bought again. --fresh starts anew.

SIGINT/SIGTERM stops the run after the pages in flight commit; a second one
stops at once.

The summary counts the whole run, every attempt of it: the totals and the
rows per table (rows received = inserted + updated + unchanged +
quarantined) alike; a run taken up again also says what this attempt did.
etl runs show ID prints the same per table later. --json prints the
summary as one JSON document (tables, failed and skipped tasks, and
attempt_rows / attempt_units for this attempt).

` + concurrencyHelp() + `

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dbURL, err := e.databaseURL(o.databaseURL)
			if err != nil {
				return err
			}
			apiURL, err := e.apiURL(o.apiURL)
			if err != nil {
				return err
			}
			return e.runJob(cmd.Context(), o, dbURL, apiURL, e.getenv("ETL_API_KEY"))
		},
	}
	o.register(cmd, true)
	cmd.Flags().BoolVar(&o.json, "json", false, "print the run's summary as one JSON document")
	cmd.Flags().BoolVar(&o.fresh, "fresh", false, "start a new run even when the job's last run of this month is unfinished (a crashed or interrupted one is closed as failed; a stopped one is left as it ended)")
	cmd.Flags().BoolVar(&o.refetch, "refetch", false, refetchHelp)
	return cmd
}

// refetchHelp is the --refetch flag of etl run, etl local run and etl plan.
const refetchHelp = "buy every task again for this run, whatever the warehouse holds: tasks fetched within max_age, and closed months of summary history and keyword metrics"

// apiURL returns the --api-url flag or ETL_API_URL.
func (e *env) apiURL(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if u := e.getenv("ETL_API_URL"); u != "" {
		return u, nil
	}
	return "", usageError(errors.New("no data API: set ETL_API_URL or pass --api-url (`etl sandbox` serves a free stand-in)"))
}

// clock returns the run's clock: pinned by --now, else the wall clock.
func (o runOptions) clock() (func() time.Time, error) {
	if o.now == "" {
		return time.Now, nil
	}
	t, err := parseTime(o.now)
	if err != nil {
		return nil, usageError(fmt.Errorf("--now: %w", err))
	}
	return func() time.Time { return t }, nil
}

// spec is the clock of --now and the job spec of --jobs, read at it.
func (o runOptions) spec() (func() time.Time, *jobspec.Spec, error) {
	now, err := o.clock()
	if err != nil {
		return nil, nil, err
	}
	spec, err := loadSpec(o.jobs, now())
	return now, spec, err
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not RFC 3339 (2026-11-21T03:00:00Z) or a date (2026-11-21)", s)
}

// runJob loads the spec, connects, runs the job and prints the summary.
func (e *env) runJob(ctx context.Context, o runOptions, dbURL, apiURL, apiKey string) error {
	now, spec, err := o.spec()
	if err != nil {
		return err
	}
	job, err := pickJob(spec, o.job)
	if err != nil {
		return err
	}
	if apiKey == "" && job.Account == "" && (len(job.Endpoints) > 0 || job.Keywords != nil) {
		return usageError(fmt.Errorf("job %s names no account and ETL_API_KEY is not set: set it, or sign an account in (etl auth login --account NAME) and name it in the job (account: NAME)", job.Name))
	}
	pools, err := e.openRunPools(ctx, dbURL, o.concurrency, 1)
	if err != nil {
		return err
	}
	defer pools.Close()
	jr := jobRun{apiURL: apiURL, apiKey: apiKey, concurrency: o.concurrency, now: now, json: o.json,
		opts: pipeline.RunOptions{Fresh: o.fresh, Refetch: o.refetch}, retention: spec.Retention, price: spec.UnitPrice}
	if spec.Retention != nil {
		jr.after = func(runner *pipeline.Runner, _ *pipeline.Summary) error { return e.retain(ctx, runner, spec.Retention) }
	}
	return e.runAndReport(ctx, pools, job, jr)
}

// jobRun says how a command runs a job (runAndReport).
type jobRun struct {
	apiURL, apiKey string
	concurrency    int
	now            func() time.Time
	opts           pipeline.RunOptions
	// json prints the summary as JSON; retention is applied, and price
	// shown, as the spec says (nil: none).
	json      bool
	retention *jobspec.RetentionSpec
	price     *money.Price
	// after runs once the summary is printed (not with json), unless a
	// mistake stopped the run; nil: nothing.
	after func(*pipeline.Runner, *pipeline.Summary) error
}

// runAndReport runs job on pools with a progress display, prints its
// summary and ends as runExit does: what etl run and etl listings pull
// share.
func (e *env) runAndReport(ctx context.Context, pools *dbconn.Pools, job *jobspec.Job, r jobRun) error {
	plan := e.jobPlan(ctx, pools.Pool, r.apiURL, job, r.now, r.opts.Refetch)
	if plan != nil {
		r.opts.Expected = plan.Total.Expected // kept with the run: spend_by_run
		r.opts.Holdings = plan.Holdings       // read once: the run takes them while current
	}
	prog := e.progress(plan)
	defer prog.close()
	runner, err := e.newRunner(pools, r.apiURL, r.apiKey, r.concurrency, r.now, prog.observer)
	if err != nil {
		return err
	}
	sum, runErr := runner.RunWith(ctx, job, r.opts)
	if sum == nil {
		return runErr
	}
	if r.json {
		return e.printRunJSON(ctx, runner, r.retention, r.price, sum, runErr)
	}
	if rows, _ := sum.AttemptTotals(); !sum.Fatal || rows > 0 {
		e.printSummary(sum, r.price) // a run that a mistake stopped before it loaded anything has one line to say: the error
	}
	if r.after != nil && !sum.Fatal {
		if err := r.after(runner, sum); err != nil {
			return err
		}
	}
	return e.runExit(sum, runErr)
}

// printRunJSON applies the retention policy (when the spec has one), then
// prints the run's summary and what retention removed as one JSON
// document, and ends as runExit does. With a price, the document says
// what the run's units cost.
func (e *env) printRunJSON(ctx context.Context, runner *pipeline.Runner, rs *jobspec.RetentionSpec, price *money.Price, sum *pipeline.Summary, runErr error) error {
	doc := summaryJSON(sum, price)
	var retErr error
	if rs != nil {
		report, err := runner.ApplyRetention(ctx, rs, false)
		dropped, detached, deleted := report.Totals()
		doc.Retention = &retentionJSON{PartitionsDropped: dropped, PartitionsDetached: detached, RowsDeleted: deleted,
			RunsCompacted: report.Bookkeeping.Runs, CheckpointsDeleted: report.Bookkeeping.CheckpointsDeleted}
		if err != nil {
			retErr = fmt.Errorf("retention: %w", err)
		}
	}
	var out strings.Builder
	if err := writeIndentedJSON(&out, doc); err != nil {
		return err
	}
	_, _ = io.WriteString(e.stdout, e.redact.String(out.String()))
	if retErr != nil {
		return retErr
	}
	return e.runExit(sum, runErr)
}

// runExit is how a command that ran a job ends: its error when every task
// failed, else exit status 3 when a task failed or was skipped, rows were
// quarantined or the run was interrupted.
func (e *env) runExit(sum *pipeline.Summary, runErr error) error {
	_, rejected, _ := sum.Totals()
	switch {
	case sum.Fatal:
		// A configuration mistake stopped it: one line says what to fix.
		return errors.New(sum.Stopped)
	case sum.LockLost:
		// Another process runs the job (and this run) now.
		return runErr
	case sum.Failed() == len(sum.Tasks) && runErr != nil:
		return runErr
	case runErr != nil || rejected > 0 || sum.Skipped() > 0 || sum.Interrupted:
		e.code = exitPartial
	}
	return nil
}

// retain applies the spec's retention policy after a run and prints what
// it removed (nothing is printed when it had nothing to do).
func (e *env) retain(ctx context.Context, runner *pipeline.Runner, rs *jobspec.RetentionSpec) error {
	report, err := runner.ApplyRetention(ctx, rs, false)
	if report.Changed() {
		_, _ = io.WriteString(e.stdout, report.String())
	}
	if err != nil {
		return fmt.Errorf("retention: %w", err)
	}
	return nil
}

// concurrencyHelp is what etl run, etl backfill and etl schedule say of
// --concurrency and the database connections it needs.
func concurrencyHelp() string {
	most := catalog.AccountConcurrentRequests
	need := dbconn.NeedConns(most, 1)
	return fmt.Sprintf(`--concurrency N runs N tasks at once, at most %[1]d: the API lets an account
have %[1]d requests in flight, and more tasks could only wait for a turn. A
page holds a database connection from before its request is sent until its
rows commit, so a page the API answered (and charged for) always has one to
load on. Every connection is opened before the first request, and kept: one
per page in flight, %[2]d spare, %[3]d to make partitions and one for the lock
of each job (--concurrency 4 needs %[4]d; %[1]d and more need %[5]d;
pool_max_conns in DATABASE_URL bounds them all: fewer pages in flight). When the
server cannot give them (max_connections, less the slots reserved for
superusers and what other clients hold; or a CONNECTION LIMIT), the command
is refused before anything is asked of the API (exit 2), saying what the
server allows and what concurrency fits. A page whose connection is lost
after the API answered is loaded again on another from the answer kept, for
up to %[6]d minutes: it is never asked for (and paid for) again.`,
		most, need.Spare, need.Partitions, dbconn.NeedConns(4, 1).Total(), need.Total(), int(pipeline.DefaultReconnect.Minutes()))
}

// openRunPools opens the warehouse pools of a runner of concurrency tasks
// running jobs jobs at once, with every connection they need open
// (dbconn.NeedConns, dbconn.OpenPools). When the server cannot serve
// them, it refuses, before anything is asked of the API, saying what the
// server allows and what concurrency would fit.
func (e *env) openRunPools(ctx context.Context, dbURL string, concurrency, jobs int) (*dbconn.Pools, error) {
	if concurrency < 1 {
		return nil, usageError(fmt.Errorf("--concurrency must be at least 1, got %d", concurrency))
	}
	cfg, err := parseDB(dbURL)
	if err != nil {
		return nil, err
	}
	need := dbconn.NeedConns(concurrency, jobs)
	if poolMaxConnsSet(dbURL) {
		// The user's bound on the connections: fewer pages in flight.
		fit, ok := need.Within(int(cfg.MaxConns))
		if !ok {
			least := need
			least.Pages = 1
			return nil, usageError(fmt.Errorf("pool_max_conns=%d in DATABASE_URL leaves no connection for a page: a run needs at least %d (%s); raise it, or leave it out",
				cfg.MaxConns, least.Total(), least))
		}
		need = fit
	}
	pools, err := dbconn.OpenPools(ctx, cfg, need)
	var noRoom *dbconn.ConnsError
	if errors.As(err, &noRoom) {
		noRoom.Flag = "--concurrency"
		return nil, usageError(fmt.Errorf("%w; nothing was asked of the API", dbError(dbURL, err)))
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to the database: %w", dbError(dbURL, err))
	}
	if err := checkSchema(ctx, pools.Pool); err != nil {
		pools.Close()
		return nil, err
	}
	if err := requirePrimary(ctx, pools.Pool, "a run"); err != nil {
		pools.Close()
		return nil, err
	}
	return pools, nil
}

// newRunner returns a runner over pools and the API, telling obs (which
// may be nil) how its runs progress.
func (e *env) newRunner(pools *dbconn.Pools, apiURL, apiKey string, concurrency int, now func() time.Time, obs pipeline.Observer) (*pipeline.Runner, error) {
	pool := pools.Pool
	var client *extract.Client
	if apiKey != "" {
		var err error
		if client, err = extract.New(extract.Config{BaseURL: apiURL, APIKey: apiKey, Logger: e.log}); err != nil {
			return nil, usageError(err)
		}
	}
	runner, err := pipeline.NewRunner(pipeline.Config{Client: client, AccountClient: e.accountClient(pool, apiURL),
		Pool: pool, Partitions: pools.Partitions, Concurrency: concurrency, Now: now, Logger: e.log, Observer: obs})
	if err != nil {
		return nil, usageError(err)
	}
	return runner, nil
}

// accountClient returns the clients of jobs that name an account: each
// request carries the account's bearer token (package auth, its tokens in
// the warehouse of pool, ETL_SECRET_KEY, ETL_AUTH_URL).
func (e *env) accountClient(pool *pgxpool.Pool, apiURL string) func(string) (*extract.Client, error) {
	var mu sync.Mutex
	var accounts *auth.Accounts
	clients := map[string]*extract.Client{}
	return func(name string) (*extract.Client, error) {
		mu.Lock()
		defer mu.Unlock()
		if c := clients[name]; c != nil {
			return c, nil
		}
		if accounts == nil {
			key, err := auth.ParseKey(e.getenv("ETL_SECRET_KEY"))
			if err != nil {
				return nil, fmt.Errorf("account %s: %w", name, err)
			}
			authURL := e.getenv("ETL_AUTH_URL")
			if authURL == "" {
				authURL = apiURL
			}
			if accounts, err = auth.New(auth.Config{Pool: pool, Key: key, AuthURL: authURL,
				ClientID: e.getenv("ETL_CLIENT_ID"), ClientSecret: e.getenv("ETL_CLIENT_SECRET"), Logger: e.log}); err != nil {
				return nil, err
			}
		}
		c, err := extract.New(extract.Config{BaseURL: apiURL, Logger: e.log,
			Authorize: func(next http.RoundTripper) http.RoundTripper { return accounts.Transport(name, next) }})
		if err != nil {
			return nil, err
		}
		clients[name] = c
		return c, nil
	}
}

// jobPlan prices job without probes, for the progress display; nil when
// it cannot be planned (the display then shows no ETA).
// Its pages are sized by the bounds of limit learned from the API of
// apiURL.
func (e *env) jobPlan(ctx context.Context, pool *pgxpool.Pool, apiURL string, job *jobspec.Job, now func() time.Time, refetch bool) *planning.Plan {
	planner, err := planning.NewPlanner(planning.PlanConfig{Pool: pool, API: extract.OriginOf(apiURL), Now: now})
	if err != nil {
		return nil
	}
	plan, err := planner.Plan(ctx, job, planning.PlanOptions{Refetch: refetch})
	if err != nil {
		e.log.Debug("no plan for the progress display", "error", err)
		return nil
	}
	return plan
}

// connect opens a pool of pgxpool's default size to the warehouse of the
// --database-url flag, or DATABASE_URL.
func (e *env) connect(ctx context.Context, flag string) (*pgxpool.Pool, error) {
	dbURL, err := e.databaseURL(flag)
	if err != nil {
		return nil, err
	}
	return e.openPool(ctx, dbURL, 0)
}

// openPool opens a pool of at most maxConns connections (0: pgxpool's
// default) to the warehouse at dbURL; the URL's password never shows in
// the error.
func (e *env) openPool(ctx context.Context, dbURL string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := parseDB(dbURL)
	if err != nil {
		return nil, err
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the database: %w", dbError(dbURL, err))
	}
	if err := checkSchema(ctx, pool); err != nil {
		// The URL parsed: pgx's errors name the user and database, never
		// the password (and the process's redactor masks what it knows).
		pool.Close()
		return nil, err
	}
	return pool, nil
}

func pickJob(spec *jobspec.Spec, name string) (*jobspec.Job, error) {
	if name != "" {
		j, err := spec.Job(name)
		if err != nil {
			return nil, usageError(err)
		}
		return j, nil
	}
	if len(spec.Jobs) == 1 {
		return spec.Jobs[0], nil
	}
	names := make([]string, len(spec.Jobs))
	for i, j := range spec.Jobs {
		names[i] = j.Name
	}
	return nil, usageError(fmt.Errorf("%s has %d jobs; pick one with --job (%v)", spec.File, len(spec.Jobs), names))
}

// printSummary writes what a run loaded, per table, then failures, to
// stdout; errors come from the API and the database, so they are redacted.
// With a price, units are shown with what they cost.
func (e *env) printSummary(s *pipeline.Summary, price *money.Price) {
	var out strings.Builder
	writeSummary(&out, s, price)
	_, _ = io.WriteString(e.stdout, e.redact.String(out.String()))
}

// tableLoads sums the tasks of s per table, in first-seen order. Like the
// run's totals, they count every attempt of the run: a resumed task's
// Rows and Load include what its earlier attempts committed.
func tableLoads(s *pipeline.Summary) []runs.TableLoad {
	var out []runs.TableLoad
	at := map[string]int{}
	for _, t := range s.Tasks {
		name := t.Task.Endpoint.Table
		i, ok := at[name]
		if !ok {
			i = len(out)
			at[name] = i
			out = append(out, runs.TableLoad{Table: name})
		}
		l := &out[i]
		l.Tasks++
		l.Rows += t.Rows
		l.Inserted += t.Load.Inserted
		l.Updated += t.Load.Updated
		l.Unchanged += t.Load.Unchanged
		l.Quarantined += t.Rejected
	}
	return out
}

func writeSummary(w io.Writer, s *pipeline.Summary, price *money.Price) {
	rows, rejected, units := s.Totals()
	if s.Attempt > 1 {
		resumed := 0
		for _, t := range s.Tasks {
			if t.Resumed {
				resumed++
			}
		}
		how := "resumed"
		if s.Taken == "continued" {
			how = fmt.Sprintf("continued (in per_run cap window %d)", s.Window)
		}
		aRows, aUnits := s.AttemptTotals()
		fmt.Fprintf(w, "%s run %d (attempt %d): %d tasks had a checkpoint; every count below is of the whole run, its %d attempts (this attempt: %d rows, %d API units%s)\n",
			how, s.RunID, s.Attempt, resumed, s.Attempt, aRows, aUnits, money.Beside(price, aUnits))
	}
	fmt.Fprintf(w, "job %s: %d tasks, %d rows, %d quarantined, %d API units%s, %s\n",
		shownName(s.Job), len(s.Tasks), rows, rejected, units, money.Beside(price, units), s.Took.Round(time.Millisecond))
	if h := s.Held().Priced(price); h != "" {
		fmt.Fprintln(w, h)
	}
	runs.WriteTableLoads(w, tableLoads(s))
	for _, t := range s.Tasks {
		if t.Err != nil {
			fmt.Fprintf(w, "FAILED %s: %v\n", plainText(t.Task.String()), t.Err)
		}
		if t.Skipped != "" && t.Skipped != s.Stopped {
			fmt.Fprintf(w, "SKIPPED %s: %s\n", plainText(t.Task.String()), t.Skipped)
		}
	}
	for _, d := range s.Drift() {
		fmt.Fprintf(w, "schema drift in %s: new columns %v left out, missing columns %v loaded as NULL\n", d.Endpoint, d.Unknown, d.Missing)
	}
	if rejected > 0 {
		fmt.Fprintf(w, "%d rows could not be parsed; they are in the quarantine table with their raw text and reason\n", rejected)
	}
	if s.Failover != nil {
		fmt.Fprintf(w, "failover: %s\n", s.Failover)
	}
	if s.LockLost {
		fmt.Fprintf(w, "run %d stopped: another process took the job over and goes on with the run\n", s.RunID)
		return
	}
	if s.Interrupted {
		fmt.Fprintf(w, "run %d interrupted, %d tasks not finished; %s\n", s.RunID, s.Skipped(), nextStep(s))
	} else if s.Stopped != "" && !s.Fatal {
		fmt.Fprintf(w, "run %d stopped early, %d tasks skipped: %s\n", s.RunID, s.Skipped(), s.Stopped)
	}
	if next := nextStep(s); next != "" && !s.Interrupted && !s.Fatal {
		fmt.Fprintln(w, next)
	}
}

// nextStep says what takes up an unfinished run: "" when nothing does.
func nextStep(s *pipeline.Summary) string {
	switch {
	case s.Interrupted && s.Trigger == "backfill":
		return "`etl backfill` again fetches the months not done"
	case s.Interrupted:
		return "the next " + rerun(s.Job) + " resumes it"
	case s.Trigger != "backfill" && s.Status() != "succeeded" && s.Unfinished() > 0:
		return fmt.Sprintf("the next %s this month continues run %d: done tasks are not bought again, the %d unfinished go on from their checkpoint, with a new per_run allowance (the other caps count as before; `--fresh` starts anew)",
			rerun(s.Job), s.RunID, s.Unfinished())
	}
	return ""
}

// runJSON is what etl run --json prints: the run's summary.
type runJSON struct {
	RunID   int64  `json:"run_id"`
	Job     string `json:"job"`
	Trigger string `json:"trigger"`
	// Status is as runs.status records it.
	Status string `json:"status"`
	// Attempt is 1 for a new run; Taken says how an earlier one was taken
	// up ("" new, "resumed" or "continued"), CapWindow its per_run window.
	Attempt     int     `json:"attempt"`
	Taken       string  `json:"taken_up"`
	CapWindow   int     `json:"cap_window"`
	TookSeconds float64 `json:"took_seconds"`
	// Tasks, Rows, Quarantined and Units count the whole run, every
	// attempt, as Tables does; AttemptRows and AttemptUnits this attempt.
	Tasks        int   `json:"tasks"`
	TasksFailed  int   `json:"tasks_failed"`
	TasksSkipped int   `json:"tasks_skipped"`
	Rows         int64 `json:"rows"`
	Quarantined  int64 `json:"quarantined"`
	Units        int64 `json:"units"`
	// Cost is what Units cost at the spec's unit_price: absent without one.
	Cost         *money.Cost      `json:"cost,omitempty"`
	AttemptRows  int64            `json:"attempt_rows"`
	AttemptUnits int64            `json:"attempt_units"`
	Tables       []runs.TableLoad `json:"tables"`
	// Held counts what the run did not buy because the warehouse holds
	// it, and what buying it again would cost.
	Held    heldJSON      `json:"held"`
	Failed  []taskOutcome `json:"failed"`
	Skipped []taskOutcome `json:"skipped"`
	Drift   []driftJSON   `json:"drift"`
	// Stopped says why the run stopped early; Interrupted that SIGINT or
	// SIGTERM stopped it; Next what takes it up.
	Stopped     string         `json:"stopped,omitempty"`
	Interrupted bool           `json:"interrupted"`
	Next        string         `json:"next,omitempty"`
	Retention   *retentionJSON `json:"retention,omitempty"`
	// Failover is what the run found when its database connections were
	// lost mid-run; absent when none was.
	Failover *failoverJSON `json:"failover,omitempty"`
}

// failoverJSON is failover.Report.
type failoverJSON struct {
	Checks           int     `json:"checks"`
	LostCommits      int     `json:"lost_commits"`
	Rebooked         int     `json:"ledger_rows_rebooked"`
	UnitsRebooked    int64   `json:"units_rebooked"`
	PagesReloaded    int     `json:"pages_reloaded"`
	PagesLost        int     `json:"pages_lost"`
	UnitsBoughtTwice int64   `json:"units_bought_twice"`
	ResumedSeconds   float64 `json:"resumed_seconds"`
}

// heldJSON is what a run did not buy because the warehouse held it, and
// each task held with why.
type heldJSON struct {
	planning.HeldPlan
	List []taskOutcome `json:"list"`
}

type taskOutcome struct {
	Task   string `json:"task"`
	Reason string `json:"reason"`
}

type driftJSON struct {
	Endpoint string   `json:"endpoint"`
	Unknown  []string `json:"unknown_left_out"`
	Missing  []string `json:"missing_loaded_as_null"`
}

type retentionJSON struct {
	PartitionsDropped  int   `json:"partitions_dropped"`
	PartitionsDetached int   `json:"partitions_detached"`
	RowsDeleted        int64 `json:"rows_deleted"`
	// RunsCompacted and CheckpointsDeleted are keep_run_detail's work.
	RunsCompacted      int   `json:"runs_compacted"`
	CheckpointsDeleted int64 `json:"checkpoints_deleted"`
}

func summaryJSON(s *pipeline.Summary, price *money.Price) runJSON {
	rows, rejected, units := s.Totals()
	aRows, aUnits := s.AttemptTotals()
	doc := runJSON{RunID: s.RunID, Job: s.Job, Trigger: s.Trigger, Status: s.Status(), Attempt: s.Attempt, Taken: s.Taken,
		CapWindow: s.Window, TookSeconds: s.Took.Seconds(), Tasks: len(s.Tasks), TasksFailed: s.Failed(), TasksSkipped: s.Skipped(),
		Rows: rows, Quarantined: rejected, Units: units, AttemptRows: aRows, AttemptUnits: aUnits, Tables: tableLoads(s),
		Failed: []taskOutcome{}, Skipped: []taskOutcome{}, Drift: []driftJSON{},
		Stopped: s.Stopped, Interrupted: s.Interrupted, Next: nextStep(s)}
	if doc.Tables == nil {
		doc.Tables = []runs.TableLoad{}
	}
	if f := s.Failover; f != nil {
		doc.Failover = &failoverJSON{Checks: f.Checks, LostCommits: f.LostCommits, Rebooked: f.Rebooked, UnitsRebooked: f.UnitsRebooked,
			PagesReloaded: f.PagesReloaded, PagesLost: f.PagesLost, UnitsBoughtTwice: f.UnitsBoughtTwice, ResumedSeconds: f.Resumed.Seconds()}
	}
	if price != nil {
		doc.Cost = ptr(price.Of(units))
	}
	doc.Held = heldJSON{HeldPlan: s.Held(), List: []taskOutcome{}}
	for _, t := range s.Tasks {
		if t.Held != nil {
			doc.Held.List = append(doc.Held.List, taskOutcome{Task: t.Task.String(), Reason: t.Held.Reason(s.Finished)})
		}
		if t.Err != nil {
			doc.Failed = append(doc.Failed, taskOutcome{Task: t.Task.String(), Reason: t.Err.Error()})
		}
		if t.Skipped != "" {
			doc.Skipped = append(doc.Skipped, taskOutcome{Task: t.Task.String(), Reason: t.Skipped})
		}
	}
	for _, d := range s.Drift() {
		doc.Drift = append(doc.Drift, driftJSON{Endpoint: d.Endpoint, Unknown: d.Unknown, Missing: d.Missing})
	}
	return doc
}
