package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/money"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
)

// backfillOptions are the flags of `etl backfill`.
type backfillOptions struct {
	runOptions
	from, to  string
	reprocess string
	reverse   bool
	dryRun    bool
	endpoints []string
}

func newBackfillCmd(e *env) *cobra.Command {
	var o backfillOptions
	cmd := &cobra.Command{
		Use:   "backfill --jobs FILE --job NAME --from YYYY-MM --to YYYY-MM [--reprocess missing|failed|all] [--reverse] [--dry-run]",
		Short: "Fetch a job's history month by month",
		Long: `Fetch the history of one job, month by month from --from to --to (inclusive):
the summary of each target for that month alone (date_from = date_to, one
line at most), and the metrics of each keyword in each country for that
month (from 2012-01 on). The job's other endpoints have no history (the API
answers their current state only) and are left out; naming one with
--endpoint is refused.

--reprocess picks the months: missing (default) those no run of the job
finished, so a backfill that stopped (a crash, a cap, an interrupt) goes on
where it was by running it again, and one that finished spends nothing;
failed those whose latest try failed or was skipped; all every month.
--reverse fetches the newest month first.

The backfill is priced before anything is spent (as etl plan prices a job);
when it does not fit a cap of the job it is refused. --dry-run prints the
months and the price and spends nothing.

A backfill runs as a run of the job with trigger backfill: its pages commit
with their units and checkpoints, it never overlaps another backfill of the
job, and it may run beside the job's scheduled runs.

` + concurrencyHelp() + `

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.backfill(cmd.Context(), o)
		},
	}
	o.register(cmd, true)
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "first month, YYYY-MM (required)")
	f.StringVar(&o.to, "to", "", "last month, YYYY-MM (required)")
	f.StringVar(&o.reprocess, "reprocess", jobspec.ReprocessMissing, "months to fetch: missing, failed or all")
	f.BoolVar(&o.reverse, "reverse", false, "newest month first")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the months and the price; spend nothing")
	f.StringSliceVar(&o.endpoints, "endpoint", nil, "endpoints to backfill (default every endpoint of the job with history)")
	return cmd
}

func (e *env) backfill(ctx context.Context, o backfillOptions) error {
	now, err := o.clock()
	if err != nil {
		return err
	}
	months, err := o.months()
	if err != nil {
		return err
	}
	if err := jobspec.CheckReprocess(o.reprocess); err != nil {
		return usageError(err)
	}
	spec, err := loadSpec(o.jobs, now())
	if err != nil {
		return err
	}
	job, err := pickJob(spec, o.job)
	if err != nil {
		return err
	}
	tasks, notes, err := job.BackfillTasks(jobspec.BackfillRequest{From: months[0], To: months[1],
		Endpoints: o.endpoints, Reverse: o.reverse}, now())
	if err != nil {
		return usageError(fmt.Errorf("job %s: %w", job.Name, err))
	}
	for _, n := range notes {
		fmt.Fprintf(e.stdout, "note: %s\n", n)
	}
	dbURL, err := e.databaseURL(o.databaseURL)
	if err != nil {
		return err
	}
	pools, err := e.openRunPools(ctx, dbURL, o.concurrency, 1)
	if err != nil {
		return err
	}
	defer pools.Close()
	pool := pools.Pool
	pending, err := runs.Pending(ctx, pool, job, tasks, o.reprocess)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "backfill of job %s, %s to %s: %d tasks, %d to fetch (--reprocess %s)\n",
		shownName(job.Name), o.from, o.to, len(tasks), len(pending), o.reprocess)
	if len(pending) == 0 {
		fmt.Fprintln(e.stdout, "nothing to fetch: every month is done (--reprocess all fetches them again)")
		return nil
	}
	api := o.apiURL // whose bounds of limit size the plan's pages
	if api == "" {
		api = e.getenv("ETL_API_URL")
	}
	planner, err := planning.NewPlanner(planning.PlanConfig{Pool: pool, API: extract.OriginOf(api), Now: now, Logger: e.log})
	if err != nil {
		return err
	}
	plan, err := planner.PlanTasks(ctx, job, pending, planning.PlanOptions{})
	if err != nil {
		return err
	}
	plan.Warnings = nil
	var out strings.Builder
	writeBackfillPrice(&out, plan, o.dryRun, spec.UnitPrice)
	_, _ = io.WriteString(e.stdout, e.redact.String(out.String()))
	if err := fitsCaps(plan); err != nil {
		return err
	}
	if o.dryRun {
		return nil
	}
	apiURL, err := e.apiURL(o.apiURL)
	if err != nil {
		return err
	}
	prog := e.progress(plan)
	defer prog.close()
	runner, err := e.newRunner(pools, apiURL, e.getenv("ETL_API_KEY"), o.concurrency, now, prog.observer)
	if err != nil {
		return err
	}
	sum, runErr := runner.RunWith(ctx, job, pipeline.RunOptions{Trigger: "backfill", Tasks: pending})
	if sum == nil {
		return runErr
	}
	if rows, _ := sum.AttemptTotals(); !sum.Fatal || rows > 0 {
		e.printSummary(sum, spec.UnitPrice)
	}
	return e.runExit(sum, runErr)
}

// months parses --from and --to, both required.
func (o backfillOptions) months() ([2]time.Time, error) {
	var months [2]time.Time
	var err error
	for i, f := range []struct{ name, v string }{{"--from", o.from}, {"--to", o.to}} {
		if f.v == "" {
			return months, usageError(fmt.Errorf("%s is required (YYYY-MM)", f.name))
		}
		if months[i], err = time.Parse("2006-01", f.v); err != nil {
			return months, usageError(fmt.Errorf("%s %q: want a month, YYYY-MM", f.name, f.v))
		}
	}
	return months, nil
}

// writeBackfillPrice writes the price of a backfill's plan and its caps;
// a dry run's, every month of it.
func writeBackfillPrice(w io.Writer, plan *planning.Plan, dryRun bool, price *money.Price) {
	if dryRun {
		writePricedPlan(w, plan, true, price) // the months are the point of a dry run: every one
		return
	}
	fmt.Fprintf(w, "price: %s requests, expected %s units%s, worst case %s%s\n", count(plan.Total.Requests, "?"),
		count(plan.Total.Expected, "unbounded"), costOf(price, plan.Total.Expected),
		count(plan.Total.Worst, "unbounded"), costOf(price, plan.Total.Worst))
	for _, c := range plan.Caps {
		fmt.Fprintf(w, "cap: %s\n", c)
	}
}

// fitsCaps fails when the backfill's plan does not fit a cap of the job.
func fitsCaps(plan *planning.Plan) error {
	var over []string
	for _, c := range plan.Caps {
		if c.Fits != nil && !*c.Fits {
			over = append(over, c.String())
		}
	}
	if len(over) > 0 {
		return errors.New("the backfill does not fit the job's caps; narrow --from/--to or raise the cap:\n  " + strings.Join(over, "\n  "))
	}
	return nil
}
