package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/money"
)

// runsOptions are the flags of `etl runs` and `etl runs show`.
type runsOptions struct {
	databaseURL string
	// readURL is --read-database-url (see readDatabaseURL).
	readURL string
	json    bool
	// job keeps the runs of this job only (etl runs); "" keeps every job.
	job string
	// limit is how many runs etl runs lists; default runsListDefault.
	// all lists every one; runStatuses keeps the runs of those statuses.
	limit       int
	all         bool
	runStatuses []string
	// statuses and task filter the tasks etl runs show lists (see
	// runs.TaskFilter); none lists them as runs.Views.WriteDetail says.
	statuses []string
	task     string
	// jobs is the job spec whose unit_price prices the units of etl runs
	// show; jobsSet says --jobs was given (else a missing default file
	// leaves units unpriced).
	jobs    string
	jobsSet bool
}

func newRunsCmd(e *env) *cobra.Command {
	var o runsOptions
	cmd := &cobra.Command{
		Use:   "runs [--job NAME] [--status STATUS,...] [--limit N | --all] [--jobs FILE] [--json]",
		Short: "List the recent runs, newest first",
		Long: `List the recent runs from the runs table, newest first: id, job, trigger,
status, attempts, start, end, duration, rows, units, the cron tick a
scheduled run was for, and the first line of its error.

It lists the newest 20 runs (--limit N: N, --all: every one) of those
--job and --status keep (--status succeeded, partial, failed, interrupted
or running; repeat it or separate them with commas). When runs are left
out, a line first counts the runs by status, and one last says how many
are not shown and how to list them.

When the job spec (--jobs, default jobs.yaml where there is one) states
unit_price, units show what they cost at it: today's price, for past runs
too (a line under the table says so).

A run whose status is running may still be going or may have lost its
process; the table cannot tell them apart (the next run of the job resumes
a dead one). Its end, duration and rows show as "-" until it ends; its
units are always the ledger's, what it has spent so far (a run killed
mid-way shows what it spent before the kill).
"etl runs show ID" shows one run with its tasks and its ledger.

--json prints one JSON array of the runs listed, with every column of the
runs table and duration_seconds (null while the run is unfinished); with
unit_price, cost too ({"amount": "3.57", "currency": "USD"}).

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.all && cmd.Flags().Changed("limit") {
				return usageError(errors.New("--all lists every run and --limit N the newest N: give one of them"))
			}
			o.jobsSet = cmd.Flags().Changed("jobs")
			return e.listRuns(cmd.Context(), o)
		},
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.databaseURL, "database-url", "", "warehouse connection URL (default $DATABASE_URL)")
	pf.StringVar(&o.readURL, "read-database-url", "", "read from this database, a standby say (default $ETL_READ_DATABASE_URL, else the warehouse)")
	pf.BoolVar(&o.json, "json", false, "print JSON")
	f := cmd.Flags()
	f.StringVar(&o.job, "job", "", "list the runs of this job only (default: every job)")
	f.StringSliceVar(&o.runStatuses, "status", nil, "list the runs of these statuses: "+strings.Join(runs.RowStatuses, ", ")+" (repeatable, or comma-separated)")
	f.IntVar(&o.limit, "limit", runsListDefault, "list the newest N runs")
	f.BoolVar(&o.all, "all", false, "list every run")
	f.StringVar(&o.jobs, "jobs", "jobs.yaml", "job spec whose unit_price shows units as money (the default file is read only where it is there)")

	cmd.AddCommand(newRunsShowCmd(e, &o))
	return cmd
}

// newRunsShowCmd is etl runs show, with the persistent flags of etl runs
// in o.
func newRunsShowCmd(e *env, o *runsOptions) *cobra.Command {
	show := &cobra.Command{
		Use:   "show ID [--status STATUS,...] [--task PATTERN] [--jobs FILE] [--json]",
		Short: "Show one run: its columns, its counts, its ledger and its tasks",
		Long: `Show one run, its summaries first: every column of its row in runs (its
error in full) with its tasks counted by status (done, held, failed,
skipped, refused, running); what it loaded per table (the view run_tables:
rows received = inserted + updated + unchanged + quarantined, over every
attempt of the run); its ledger: the requests it made, the units they
reserved, the units the settled ones spent, and the requests not settled
(a page that broke mid-body stays at its reservation). Then its tasks from
task_checkpoints in natural order of their names (n10 before n100): status,
pages, rows, quarantined rows, units, the offset of the next page, when the
checkpoint was last written, and why a task failed or was skipped.

A run of at most 20 tasks lists every one. A larger one lists the tasks
not done or held (failed first, then refused, running and skipped; at most
20) and a line counting, by status, those not shown.

--status lists the tasks of those statuses only (repeat it or separate them
with commas); --task those whose name holds PATTERN anywhere, where * in
it stands for any characters and ? for one ("n1?.example": n10.example to
n19.example). With either, every task that matches is listed.

When the job spec (--jobs, default jobs.yaml where there is one) states
unit_price, the run's units show what they cost.

A run whose bookkeeping retention compacted (keep_run_detail) keeps its
counts by status and per table and its ledger's totals; its done and held
tasks are counted but no longer listed, but for each task's latest fetch
and latest try.

--json prints one JSON document: run, tasks, tables and ledger; every task,
or with --status or --task those that match; with unit_price, cost too
({"amount": "3.57", "currency": "USD"}).

` + exitLine(),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return usageError(fmt.Errorf("run ID must be a positive whole number (see etl runs), got %q", args[0]))
			}
			o.jobsSet = cmd.Flags().Changed("jobs")
			return e.showRun(cmd.Context(), *o, id)
		},
	}
	sf := show.Flags()
	sf.StringSliceVar(&o.statuses, "status", nil, "list the tasks of these statuses: "+strings.Join(runs.TaskStatuses, ", ")+" (repeatable, or comma-separated)")
	sf.StringVar(&o.task, "task", "", "list the tasks whose name holds PATTERN (* any characters, ? one)")
	sf.StringVar(&o.jobs, "jobs", "jobs.yaml", "job spec whose unit_price shows the run's units as money (the default file is read only where it is there)")
	return show
}

// runViews are the views of etl runs and etl runs show.
var runViews = runs.Views{Name: shownName}

// showRun prints run id with its tasks and its ledger.
func (e *env) showRun(ctx context.Context, o runsOptions, id int64) error {
	f, err := runs.NewTaskFilter(o.statuses, o.task)
	if err != nil {
		return usageError(err)
	}
	pool, err := e.connectReader(ctx, o.readURL, o.databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	d, err := runViews.Show(ctx, pool, id)
	if err != nil {
		return err
	}
	price, err := e.unitPrice(o.jobs, o.jobsSet)
	if err != nil {
		return err
	}
	d.Priced(price, o.jobs)
	var out strings.Builder
	if o.json {
		if err := writeIndentedJSON(&out, d.Kept(f)); err != nil {
			return err
		}
	} else {
		runViews.WriteDetail(&out, d, f)
	}
	_, _ = io.WriteString(e.stdout, e.redact.String(out.String()))
	return nil
}

// runsListDefault is how many runs etl runs lists without --limit or
// --all: with its header, its two summary lines and the price's footnote,
// a screen.
const runsListDefault = 20

// listRuns prints the newest o.limit runs (every one with o.all) of o.job
// and o.runStatuses, if set; when not every one is shown, how many there
// are by status first and how to list the others after.
func (e *env) listRuns(ctx context.Context, o runsOptions) error {
	if o.limit < 1 {
		return usageError(fmt.Errorf("--limit must be at least 1, got %d", o.limit))
	}
	statuses, err := runViews.Statuses(o.runStatuses)
	if err != nil {
		return usageError(err)
	}
	price, err := e.unitPrice(o.jobs, o.jobsSet)
	if err != nil {
		return err
	}
	pool, err := e.connectReader(ctx, o.readURL, o.databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	q := runs.ListQuery{Job: o.job, Statuses: statuses, Limit: o.limit}
	if o.all {
		q.Limit = 0
	}
	l, err := runViews.List(ctx, pool, q, price)
	if err != nil {
		return err
	}
	var out strings.Builder
	if o.json {
		if err := writeIndentedJSON(&out, l.Runs); err != nil {
			return err
		}
	} else {
		runViews.WriteList(&out, l, o.jobs)
	}
	// Errors come from the API and the database: redact them.
	_, _ = io.WriteString(e.stdout, e.redact.String(out.String()))
	return nil
}

// unitPrice is the unit_price of the job spec at path; nil when it states
// none. When must (--jobs given) a file that cannot be read or is wrong
// is an error; else (the default jobs.yaml) one that is not there or
// cannot be read is no price, silently, and one that is wrong is no price
// with a warning on stderr: showing a run does not need the spec.
func (e *env) unitPrice(path string, must bool) (*money.Price, error) {
	spec, err := loadSpec(path, time.Now())
	switch {
	case err == nil:
		return spec.UnitPrice, nil
	case must:
		return nil, err
	}
	var specErr *jobspec.SpecError
	if errors.As(err, &specErr) {
		fmt.Fprintf(e.stderr, "warning: units shown without money: %v\n", err)
	}
	return nil, nil
}

func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
