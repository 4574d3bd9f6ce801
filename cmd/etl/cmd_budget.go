package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/money"
)

// budgetJSON is one cap scope as etl budget --json prints it.
type budgetJSON struct {
	Scope string `json:"scope"`
	// Cap and Left are null where the scope has no cap.
	Cap  *int64 `json:"cap"`
	Used int64  `json:"used"`
	Left *int64 `json:"left"`
	// CapCost, UsedCost and LeftCost are what Cap, Used and Left cost at
	// the spec's unit_price; absent without one (or without a cap).
	CapCost  *money.Cost `json:"cap_cost,omitempty"`
	UsedCost *money.Cost `json:"used_cost,omitempty"`
	LeftCost *money.Cost `json:"left_cost,omitempty"`
}

func ptr[T any](v T) *T { return &v }

func newBudgetCmd(e *env) *cobra.Command {
	var o runOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "budget --jobs FILE [--job NAME]",
		Short: "Show the API units spent against each cap, today and this month",
		Long: `Show what the unit ledger holds against each cap of the job spec: the whole
installation today and this month (budget: {daily, monthly}), and each job
this month and in its latest run (a job's budget: {monthly, per_run}).
Requests not yet settled count at their reservation. Days and months are UTC.

When the job spec states unit_price, each count of units has what it costs
beside it, at today's price (units used before, too; a line says so).

--json prints one JSON array: scope, cap, used and left of each (cap and
left null where there is no cap); with unit_price, cap_cost, used_cost and
left_cost too ({"amount": "3.57", "currency": "USD"}).

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.showBudget(cmd.Context(), o, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.jobs, "jobs", "jobs.yaml", "job spec file holding the caps")
	f.StringVar(&o.job, "job", "", "show this job only (default: every job)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.StringVar(&o.databaseURL, "database-url", "", "warehouse connection URL (default $DATABASE_URL)")
	f.StringVar(&o.now, "now", "", "pin the current time (RFC 3339 or YYYY-MM-DD)")
	_ = f.MarkHidden("now")
	return cmd
}

// showBudget prints what the ledger holds against each cap of o.jobs (of
// o.job, if set): a table, or with asJSON a JSON array.
func (e *env) showBudget(ctx context.Context, o runOptions, asJSON bool) error {
	now, spec, err := o.spec()
	if err != nil {
		return err
	}
	jobs := spec.Jobs
	if o.job != "" {
		j, err := spec.Job(o.job)
		if err != nil {
			return usageError(err)
		}
		jobs = []*jobspec.Job{j}
	}
	names := make([]string, len(jobs))
	caps := map[string]budget.Caps{}
	for i, j := range jobs {
		names[i] = j.Name
		caps[j.Name] = j.Caps
	}
	pool, err := e.connect(ctx, o.databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := requirePrimary(ctx, pool, "etl budget"); err != nil {
		return err
	}
	uses, err := budget.New(pool, now).Usage(ctx, names, caps)
	if err != nil {
		return err
	}
	if asJSON {
		return writeIndentedJSON(e.stdout, budgetJSONOf(uses, spec.UnitPrice))
	}
	return writeBudget(e.stdout, uses, spec.UnitPrice, spec.File)
}

// budgetJSONOf is what etl budget --json prints of uses, with what they
// cost at p (nil: no price).
func budgetJSONOf(uses []budget.Use, p *money.Price) []budgetJSON {
	out := make([]budgetJSON, len(uses))
	for i, u := range uses {
		out[i] = budgetJSON{Scope: u.Scope, Used: u.Used}
		if u.Cap > 0 {
			out[i].Cap, out[i].Left = &uses[i].Cap, ptr(u.Left())
		}
		if p != nil {
			out[i].UsedCost = ptr(p.Of(u.Used))
			if u.Cap > 0 {
				out[i].CapCost, out[i].LeftCost = ptr(p.Of(u.Cap)), ptr(p.Of(u.Left()))
			}
		}
	}
	return out
}

// writeBudget writes uses as a table, with what they cost at p (nil: no
// price) and the note that p is the price of today (of specFile).
func writeBudget(w io.Writer, uses []budget.Use, p *money.Price, specFile string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scope\tcap\tused\tleft\t")
	for _, u := range uses {
		capText, left := "none", "-"
		if u.Cap > 0 {
			capText = strconv.FormatInt(u.Cap, 10) + money.Beside(p, u.Cap)
			left = strconv.FormatInt(u.Left(), 10) + money.Beside(p, u.Left())
		}
		fmt.Fprintf(tw, "%s\t%s\t%d%s\t%s\t\n", u.Shown(shownName), capText, u.Used, money.Beside(p, u.Used), left)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p != nil {
		fmt.Fprintln(w, money.PastNote(p, specFile))
	}
	return nil
}
