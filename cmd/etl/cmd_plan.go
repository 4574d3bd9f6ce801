package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/plain"
	"github.com/seoetl/etl/money"
	"github.com/seoetl/etl/planning"
)

// planOptions are the flags of `etl plan`.
type planOptions struct {
	runOptions
	json  bool
	probe bool
	// tasks prints every task; by default a job of more than planAllTasks
	// tasks prints the few that matter (see writePlan).
	tasks bool
}

func newPlanCmd(e *env) *cobra.Command {
	var o planOptions
	cmd := &cobra.Command{
		Use:   "plan --jobs FILE [--job NAME] [--tasks] [--json] [--probe]",
		Short: "Price every task of a job before it runs",
		Long: `Price every task of one job without running it: the requests it would send,
its worst case and the units to expect, where that number comes from, the
totals per endpoint and for the job, and what each cap of the job would do
to a run started now (whether it fits, and if not, the first task it would
cut and how many tasks it would skip, the tasks taken in order).

Per-request endpoints (overview, keyword metrics) cost their price. A
per-line task costs its lines: comparison one per url; any other list as
many as its total allows, up to max_rows (summary: up to its limit; the
score profile: up to 101), paged as etl run pages (a total that is a
multiple of the page size costs one more request, of 0 lines). Its total is
the newest known of: what a run that read the task's data to its end
counted, what a probe learned, and, without a filter, the target's latest
overview in the warehouse (backlinks_count for links, domains_count for
ref-domains, ips_count for ref-ips). A task with no known total is priced
at its worst case; a paged list without max_rows has none ("unbounded").

A paged list is counted in pages as etl run asks for them: the job's
limit, or without one the largest the API accepts, as api_bounds remembers
it for ETL_API_URL (or --api-url; without either, the smallest learned from
any API). Before a run has learned that bound, the plan counts the default
page of 100 (the most requests the run sends) and says so. The plan says
the least time the requests take at the API's 10 requests a second.

Without --probe nothing is spent and no API is needed: DATABASE_URL gives
the history and the caps' usage. Without a database the plan comes from
the catalog alone (worst cases, caps' usage unknown) and says so; a database
that is set but unreachable or not migrated is an error.

--probe spends a few units first to make the expected costs exact: per
target, one overview (45 units) for its unfiltered links, ref-domains and
ref-ips where that is cheaper than asking each; every other list task that
takes a limit is asked once with limit=1 (one line), whose meta.total is its
total. The score profile takes no limit, so its probe asks for it whole
(JSON, at most 101 lines at 1 unit each: up to 101 units, what a run of it
costs) and takes its meta.total. Probes go through the ledger against the
job's caps, in a run of their own (trigger probe), and the plan says what
they cost. They need DATABASE_URL, ETL_API_URL and ETL_API_KEY, as etl run
does.

The plan prints its totals first: the job's, then per endpoint (tasks,
requests, worst case, expected, tasks priced at their worst case, and the
least time at the API's rate), then what each cap would do and the probe.
Then the tasks: every one when the job has at most 20; otherwise the few
that matter: the 10 dearest by expected units (unbounded first), the task
each cap cuts, and up to 5 per cap of those that never fit it, with a line
saying how many are not shown. --tasks lists every task.

--json prints one JSON document, every task in it: job, at, history, tasks, endpoints, total,
caps, probe and warnings; a count that is null is unbounded.

A probe that failed, or probes a cap stopped, leave the tasks not probed
with what was known (exit status 3).

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.plan(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.jobs, "jobs", "jobs.yaml", "job spec file")
	f.StringVar(&o.job, "job", "", "name of the job to plan (required when the file has several)")
	f.BoolVar(&o.json, "json", false, "print the plan as JSON")
	f.BoolVar(&o.tasks, "tasks", false, "list every task (by default a job of more than 20 lists the few that matter)")
	f.BoolVar(&o.probe, "probe", false, "spend a few units to learn the row totals first (needs the API)")
	f.BoolVar(&o.refetch, "refetch", false, "price the run as etl run --refetch runs it: "+refetchHelp)
	f.StringVar(&o.databaseURL, "database-url", "", "warehouse connection URL (default $DATABASE_URL)")
	f.StringVar(&o.apiURL, "api-url", "", "data API base address, for --probe and the page sizes it accepts (default $ETL_API_URL)")
	f.StringVar(&o.now, "now", "", "pin the current time (RFC 3339 or YYYY-MM-DD)")
	_ = f.MarkHidden("now")
	return cmd
}

// plan loads the spec, connects where it needs to, plans and prints.
func (e *env) plan(ctx context.Context, o planOptions) error {
	now, spec, err := o.spec()
	if err != nil {
		return err
	}
	job, err := pickJob(spec, o.job)
	if err != nil {
		return err
	}
	cfg := planning.PlanConfig{Now: now, Logger: e.log}
	dbURL := o.databaseURL
	if dbURL == "" {
		dbURL = e.getenv("DATABASE_URL")
	}
	if u := o.apiURL; u != "" || e.getenv("ETL_API_URL") != "" {
		if u == "" {
			u = e.getenv("ETL_API_URL")
		}
		cfg.API = extract.OriginOf(u) // whose bounds of limit set the pages
	}
	if o.probe {
		if dbURL == "" {
			return usageError(errors.New("--probe spends units through the ledger: set DATABASE_URL or pass --database-url"))
		}
		apiURL, err := e.apiURL(o.apiURL)
		if err != nil {
			return err
		}
		if cfg.Client, err = extract.New(extract.Config{BaseURL: apiURL, APIKey: e.getenv("ETL_API_KEY"), Logger: e.log}); err != nil {
			return usageError(err)
		}
	}
	if dbURL != "" {
		pool, err := e.openPool(ctx, dbURL, 6) // the probes in flight (4), and one spare
		if err != nil {
			return err
		}
		defer pool.Close()
		if err := pool.Ping(ctx); err != nil {
			return fmt.Errorf("connecting to the database: %w (unset DATABASE_URL to plan from the catalog alone)", dbError(dbURL, err))
		}
		if err := requirePrimary(ctx, pool, "etl plan (what the caps have left)"); err != nil {
			return err
		}
		cfg.Pool = pool
	}
	planner, err := planning.NewPlanner(cfg)
	if err != nil {
		return usageError(err)
	}
	plan, err := planner.Plan(ctx, job, planning.PlanOptions{Probe: o.probe, Refetch: o.refetch})
	if err != nil {
		return err
	}
	var out strings.Builder
	if o.json {
		enc := json.NewEncoder(&out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(plan); err != nil {
			return err
		}
	} else {
		writePricedPlan(&out, plan, o.tasks, spec.UnitPrice)
	}
	_, _ = io.WriteString(e.stdout, e.redact.String(out.String()))
	if p := plan.Probe; p != nil && (p.Stopped != "" || len(p.Failed) > 0) {
		e.code = exitPartial
	}
	return nil
}

// count renders a count of a plan; nil is unbounded, and math.MaxInt64
// past what an int64 counts (the plan's sums saturate there).
func count(n *int64, unbounded string) string {
	switch {
	case n == nil:
		return unbounded
	case *n == math.MaxInt64:
		return "overflow"
	}
	return strconv.FormatInt(*n, 10)
}

// Of the tasks of a plan, etl plan prints every one up to planAllTasks;
// past that the planDearest dearest, the task each cap cuts, and up to
// planNever per cap of those that never fit it (see writePlan).
const (
	planAllTasks = 20
	planDearest  = 10
	planNever    = 5
)

// writePlan writes the plan, its summaries first: the totals of the job
// and per endpoint, the caps and the probe, then the tasks: every one when
// all is set or the job has at most planAllTasks, else the few that
// matter (planTasksThatMatter) and how many are not shown.
func writePlan(w io.Writer, p *planning.Plan, all bool) { writePricedPlan(w, p, all, nil) }

// writePricedPlan writes the plan as writePlan does, with what its totals
// and its savings cost at price beside their units (nil: units alone).
func writePricedPlan(w io.Writer, p *planning.Plan, all bool, price *money.Price) {
	fmt.Fprintf(w, "plan of job %s at %s: %d tasks, %s requests, expected %s units%s, worst case %s%s\n",
		shownName(p.Job), p.At.Format("2006-01-02T15:04:05Z07:00"), p.Total.Tasks, count(p.Total.Requests, "unbounded"),
		count(p.Total.Expected, "unbounded"), costOf(price, p.Total.Expected), count(p.Total.Worst, "unbounded"), costOf(price, p.Total.Worst))
	if s := p.Total.Seconds; s != nil {
		fmt.Fprintf(w, "the requests take at least %s at the API's %d a second\n", seconds(s), catalog.AccountRequestsPerSecond)
	}
	if price != nil {
		fmt.Fprintf(w, "unit price: %s (unit_price of the job spec)\n", price)
	}
	if h := p.Held.Priced(price); h != "" {
		fmt.Fprintln(w, h)
	}
	if p.Resume != nil {
		fmt.Fprintln(w, p.Resume)
	}
	for _, warn := range p.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}

	rows := [][]string{{"endpoint", "tasks", "requests", "worst", "expected", "at worst case", "least time"}}
	for _, c := range append(p.Endpoints, p.Total) {
		name := c.Endpoint
		if name == "" {
			name = "total"
		}
		rows = append(rows, []string{name, strconv.Itoa(c.Tasks), count(c.Requests, "?"),
			count(c.Worst, "unbounded") + costOf(price, c.Worst), count(c.Expected, "unbounded") + costOf(price, c.Expected),
			strconv.Itoa(c.Unknown), seconds(c.Seconds)})
	}
	fmt.Fprintln(w)
	plain.Table(w, rows, []bool{false, true, true, true, true, true, true})
	// The page size of each endpoint that pages with a limit: the job's
	// and the API's bound are per endpoint, so its tasks share it.
	var paged []string
	for _, t := range p.Tasks {
		if t.PageBasis != "" && !slices.Contains(paged, t.Endpoint) {
			paged = append(paged, t.Endpoint)
			fmt.Fprintf(w, "%s: %s\n", t.Endpoint, t.PageBasis)
		}
	}
	for _, l := range p.Listings {
		fmt.Fprintln(w, l)
	}

	all = all || len(p.Tasks) <= planAllTasks
	fmt.Fprintln(w)
	if len(p.Caps) == 0 {
		fmt.Fprintln(w, "caps: none")
	}
	for _, c := range p.Caps {
		if !all && len(c.Never) > planNever {
			// The tasks themselves follow, up to planNever of them.
			c.Never = []string{fmt.Sprintf("%d tasks, the first %d below (--tasks lists every one)", len(c.Never), planNever)}
		}
		fmt.Fprintf(w, "cap: %s\n", c.Priced(price))
	}
	if len(p.Caps) > 0 {
		fmt.Fprintln(w, "(caps are checked with the tasks run in order, one at a time; with several in flight, a reservation that does not fit waits for the others to settle)")
	}
	if pr := p.Probe; pr != nil {
		fmt.Fprintln(w, pr)
		for _, f := range pr.Failed {
			fmt.Fprintf(w, "probe FAILED %s\n", f)
		}
		if pr.Stopped != "" {
			fmt.Fprintf(w, "probes stopped early: %s\n", pr.Stopped)
		}
	}

	fmt.Fprintln(w)
	if all {
		rows = [][]string{{"task", "price", "requests", "worst", "expected", "basis"}}
		for _, t := range p.Tasks {
			rows = append(rows, []string{t.Name, t.Price.String(), count(t.Requests, "?"),
				count(t.Worst, "unbounded"), count(t.Expected, "unbounded"), t.Basis})
		}
		plain.Table(w, rows, []bool{false, false, true, true, true, false})
		return
	}
	picked := planTasksThatMatter(p)
	if len(picked) == 0 {
		fmt.Fprintf(w, "no task would spend a unit, and no cap cuts or refuses one; --tasks lists all %d (--json too)\n", len(p.Tasks))
		return
	}
	fmt.Fprintf(w, "the tasks that matter, %d of %d:\n", len(picked), len(p.Tasks))
	rows = [][]string{{"task", "price", "requests", "worst", "expected", "why shown", "basis"}}
	for _, pk := range picked {
		t := p.Tasks[pk.i]
		rows = append(rows, []string{t.Name, t.Price.String(), count(t.Requests, "?"),
			count(t.Worst, "unbounded"), count(t.Expected, "unbounded"), strings.Join(pk.why, "; "), t.Basis})
	}
	plain.Table(w, rows, []bool{false, false, true, true, true, false, false})
	fmt.Fprintf(w, "%d tasks not shown; --tasks lists every one (--json too)\n", len(p.Tasks)-len(picked))
}

// pickedTask is a task of a plan (its index) and why it is shown.
type pickedTask struct {
	i   int
	why []string
}

// planTasksThatMatter picks the tasks of p worth a line: the planDearest
// dearest by expected units (unbounded first; none that costs nothing),
// the task each cap cuts (or cannot tell past), and up to planNever per
// cap of those that never fit it; in that order, each once.
func planTasksThatMatter(p *planning.Plan) []pickedTask {
	var picked []pickedTask
	at := map[int]int{} // task index -> its place in picked
	add := func(i int, why string) {
		if k, ok := at[i]; ok {
			picked[k].why = append(picked[k].why, why)
			return
		}
		at[i] = len(picked)
		picked = append(picked, pickedTask{i: i, why: []string{why}})
	}
	byName := make(map[string]int, len(p.Tasks))
	for i, t := range p.Tasks {
		if _, ok := byName[t.Name]; !ok {
			byName[t.Name] = i
		}
	}

	dear := make([]int, 0, len(p.Tasks))
	for i, t := range p.Tasks {
		if t.Expected == nil || *t.Expected > 0 {
			dear = append(dear, i)
		}
	}
	expected := func(i int) int64 {
		if e := p.Tasks[i].Expected; e != nil {
			return *e
		}
		return math.MaxInt64 // unbounded: dearer than any count
	}
	// Stable: among equals, the job's order.
	slices.SortStableFunc(dear, func(a, b int) int {
		if ea, eb := expected(a), expected(b); ea != eb {
			if ea > eb {
				return -1
			}
			return 1
		}
		return 0
	})
	for _, i := range dear[:min(planDearest, len(dear))] {
		add(i, "dearest")
	}
	for _, c := range p.Caps {
		if i, ok := byName[c.CutTask]; ok && c.CutTask != "" {
			if c.Fits == nil {
				add(i, fmt.Sprintf("decides the %s cap", c.Cap))
			} else {
				add(i, fmt.Sprintf("the %s cap cuts it", c.Cap))
			}
		}
	}
	for _, c := range p.Caps {
		// In the job's order: the first that a run would skip.
		for _, never := range c.Never[:min(planNever, len(c.Never))] {
			// "NAME (one request may cost N)"
			name := never
			if k := strings.LastIndex(never, " (one request may cost "); k >= 0 {
				name = never[:k]
			}
			if i, ok := byName[name]; ok {
				add(i, fmt.Sprintf("never fits the %s cap", c.Cap))
			}
		}
	}
	return picked
}

// costOf is " (3.57 USD)": what a count of a plan costs at price; "" when
// there is no price, or the count is unbounded or past what int64 holds.
func costOf(price *money.Price, n *int64) string {
	if n == nil || *n == math.MaxInt64 {
		return ""
	}
	return money.Beside(price, *n)
}

// seconds renders a least time of a plan; nil is "?".
func seconds(s *float64) string {
	switch {
	case s == nil:
		return "?"
	case *s >= float64(math.MaxInt64)/float64(time.Second):
		return "overflow" // past what a time.Duration holds (292 years)
	}
	return (time.Duration(*s * float64(time.Second))).Round(100 * time.Millisecond).String()
}
