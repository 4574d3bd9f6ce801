package planning

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/migrations"
	"github.com/seoetl/etl/money"
)

// PlanConfig configures a Planner.
type PlanConfig struct {
	// Pool reads what earlier runs and probes learned (task_totals, the
	// targets' latest overviews) and what the caps have used
	// (budget_usage). Nil plans from the catalog alone: no total is known
	// and the caps' usage is not read.
	Pool *pgxpool.Pool
	// Client sends the probes (PlanOptions.Probe); not needed otherwise.
	Client *extract.Client
	// API is the origin of the API the job will call (extract.OriginOf
	// of ETL_API_URL), whose bounds of limit (api_bounds) set the page
	// size the plan counts requests with; default Client's, else the
	// smallest bound learned from any API.
	API string
	// Ledger reserves and settles the probes' units against the job's
	// caps; default budget.New over Pool.
	Ledger *budget.Ledger
	// Concurrency bounds the probes in flight; default 4.
	Concurrency int
	// Allocator allocates the Arrow memory of the probes' answers; default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// Now is the clock: the tasks' month, the caps' day and month, and
	// what counts as learned already; default time.Now.
	Now func() time.Time
	// Logger receives a line per probe; default discards.
	Logger *slog.Logger
}

func (c PlanConfig) withDefaults() (PlanConfig, error) {
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.Concurrency < 1 {
		return c, fmt.Errorf("planning: PlanConfig.Concurrency must be at least 1, got %d", c.Concurrency)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Allocator == nil {
		c.Allocator = memory.DefaultAllocator
	}
	if c.Ledger == nil && c.Pool != nil {
		c.Ledger = budget.New(c.Pool, c.Now)
	}
	return c, nil
}

// Planner prices the tasks of a job before it runs.
type Planner struct {
	cfg PlanConfig
}

// NewPlanner returns a Planner.
func NewPlanner(cfg PlanConfig) (*Planner, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Planner{cfg: cfg}, nil
}

// PlanOptions say how to plan.
type PlanOptions struct {
	// Probe spends a few units before planning to learn the row total of
	// every list task that can be asked for it (see Planner.Plan).
	Probe bool
	// Refetch prices the run as etl run --refetch runs it: nothing is
	// held (see Holdings), every task is bought.
	Refetch bool
}

// Where a task's expected cost comes from (TaskPlan.Source).
const (
	SourcePerRequest = "per_request" // a per-request price: exact
	SourceExact      = "exact"       // the request says how many lines (comparison: one per url)
	SourceRun        = "run"         // a run read the task's data to its end
	SourceOverview   = "overview"    // the target's latest overview in the warehouse
	SourceProbe      = "probe"       // a probe: a limit=1 answer's meta.total, or an overview
	SourceUnknown    = "unknown"     // no total known: the worst case
	SourceDone       = "done"        // done in the run etl run would take up: nothing left
	SourceHeld       = "held"        // the warehouse holds its data fresh, or as closed months: not sent
)

// Plan is what a job would cost if it ran now, without a cap.
type Plan struct {
	Job string    `json:"job"`
	At  time.Time `json:"at"`
	// History says whether the plan read the warehouse (totals, overviews,
	// the caps' usage); false when it priced from the catalog alone.
	History   bool         `json:"history"`
	Tasks     []TaskPlan   `json:"tasks"`
	Endpoints []Cost       `json:"endpoints"`
	Total     Cost         `json:"total"`
	Caps      []CapPlan    `json:"caps"`
	Probe     *ProbeReport `json:"probe,omitempty"`
	// Resume is the earlier run etl run would take up; nil when it would
	// start a new one.
	Resume *ResumePlan `json:"resume,omitempty"`
	// Listings is the job's listings pull: 0 units, its requests and time.
	Listings []ListingPlan `json:"listings,omitempty"`
	// Held sums what the run would not buy because the warehouse holds
	// it (tasks held, closed months of summary not asked again), and what
	// buying it again (etl run --refetch) would cost.
	Held     HeldPlan `json:"held"`
	Warnings []string `json:"warnings,omitempty"`
	// Holdings are what the warehouse held for the tasks, for the run
	// that follows the plan (pipeline.RunOptions.Holdings); nil when the
	// run would take up an earlier one, for a backfill, or when another
	// run was under way.
	Holdings *HeldTasks `json:"-"`
}

// HeldPlan sums what a run would not buy because the warehouse holds it.
type HeldPlan struct {
	// Tasks are held whole: not sent. Units is what their last fetch cost,
	// what buying them again would.
	Tasks int   `json:"tasks"`
	Units int64 `json:"units"`
	// Fresh and Closed split Tasks: fetched within max_age, or closed
	// months fetched after they ended.
	Fresh  int `json:"fresh_tasks"`
	Closed int `json:"closed_month_tasks"`
	// Months are the closed months of summary history that the tasks
	// still sent do not ask for again, at most MonthUnits units.
	Months     int   `json:"closed_months"`
	MonthUnits int64 `json:"closed_month_units"`
	// Refetch says the plan is of etl run --refetch: nothing held.
	Refetch bool `json:"refetch"`
}

// Saved is what the run saves: what the held tasks and months would cost.
func (h HeldPlan) Saved() int64 { return catalog.AddUnits(h.Units, h.MonthUnits) }

// String says it in one line ("" when nothing is held).
func (h HeldPlan) String() string { return h.Priced(nil) }

// Priced says it in one line as String does, with what the units saved
// cost at price beside them (nothing beside them when price is nil).
func (h HeldPlan) Priced(price *money.Price) string {
	if h.Tasks == 0 && h.Months == 0 {
		return ""
	}
	var parts []string
	if h.Fresh > 0 {
		parts = append(parts, fmt.Sprintf("%d %s fetched within max_age", h.Fresh, plural(h.Fresh, "task", "tasks")))
	}
	if h.Closed > 0 {
		parts = append(parts, fmt.Sprintf("%d %s of closed months", h.Closed, plural(h.Closed, "task", "tasks")))
	}
	if h.Months > 0 {
		parts = append(parts, fmt.Sprintf("%d closed %s of summary history", h.Months, plural(h.Months, "month", "months")))
	}
	return fmt.Sprintf("held, not bought again: %s; saves %s (--refetch buys them again)", strings.Join(parts, ", "), money.Units(price, h.Saved()))
}

// plural is one or many, as n says.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ResumePlan says which earlier run etl run would take up (without
// --fresh), and what of it is left.
type ResumePlan struct {
	RunID int64 `json:"run_id"`
	// How is "resumed" (its process died or it was interrupted: the same
	// per_run cap window) or "continued" (a cap, the API's 403 or failed
	// tasks stopped it: a new window).
	How    string `json:"how"`
	Status string `json:"status"`
	// Window is the per_run cap window the run would go on in.
	Window int `json:"cap_window"`
	// Done tasks are not run again; GoOn tasks go on from their
	// checkpoint; Refused tasks cannot run as specified and are skipped.
	Done    int `json:"done_tasks"`
	GoOn    int `json:"continuing_tasks"`
	Refused int `json:"refused_tasks"`
}

func (r ResumePlan) String() string {
	why := "its process died or it was interrupted, in cap window"
	if r.How == runs.ResumeStop {
		why = "it was stopped (" + r.Status + "); it goes on in a new per_run cap window,"
	}
	s := fmt.Sprintf("etl run would %s run %d (%s %d): %d tasks done are not run again, %d go on from their checkpoint",
		strings.TrimSuffix(r.How, "d"), r.RunID, why, r.Window, r.Done, r.GoOn)
	if r.Refused > 0 {
		s += fmt.Sprintf(", %d refused are skipped", r.Refused)
	}
	return s + "; `etl run --fresh` would start anew and price as the whole job"
}

// PlanPrice is an endpoint's price (catalog.Price) as a plan shows it.
type PlanPrice struct {
	Units int64  `json:"units"`
	Per   string `json:"per"` // "request" or "line"
}

func (p PlanPrice) String() string { return fmt.Sprintf("%d/%s", p.Units, p.Per) }

// TaskPlan prices one task. A nil count is unbounded: a paged task without
// max_rows whose total is unknown ends only where its data ends. A count
// of math.MaxInt64 is past what an int64 counts (it saturates; see
// catalog.AddUnits).
type TaskPlan struct {
	Task     jobspec.Task `json:"-"`
	Endpoint string       `json:"endpoint"`
	Name     string       `json:"task"` // Task.String()
	Price    PlanPrice    `json:"price"`
	// Requests is how many requests the run would send, paging as it
	// does (a last page of 0 lines included).
	Requests *int64 `json:"requests"`
	// Worst is the most the task can cost: what its pages may return,
	// bounded by max_rows, the limit of a request that is not paged, or
	// the endpoint's bound.
	Worst *int64 `json:"worst_units"`
	// Expected is what it costs when its total is known, else Worst.
	Expected *int64 `json:"expected_units"`
	// Rows is the lines the run would receive.
	Rows *int64 `json:"expected_rows"`
	// Total is the task's row total (before limit and max_rows) when
	// known.
	Total *int64 `json:"total"`
	// Source and Basis say where Expected comes from: a Source constant,
	// and in words ("last run 2026-11-21: 240 rows").
	Source     string     `json:"source"`
	Basis      string     `json:"basis"`
	ObservedAt *time.Time `json:"observed_at,omitempty"`
	// From is the offset the task goes on from in the run etl run would
	// take up (0: from the start); the counts above are what is left.
	From int64 `json:"from_offset,omitempty"`
	// Page is the lines per request of a task that pages with a limit:
	// the job's limit or the API's bound of it (see Task.PageSize), or,
	// while that bound is not known, the endpoint's default (the most
	// requests the run sends: it learns the bound at its first request).
	Page int `json:"page_size,omitempty"`
	// PageBasis says where Page comes from; PageUnknown that the API's
	// bound is not known yet.
	PageBasis   string `json:"page_basis,omitempty"`
	PageUnknown bool   `json:"page_unknown,omitempty"`
	// Held says why the task would not be sent (Source SourceHeld); nil
	// when it would.
	Held *Held `json:"held,omitempty"`
	// HeldMonths are the closed months of a summary task's range it does
	// not ask for again.
	HeldMonths int `json:"held_months,omitempty"`
	// from is that checkpoint, for the caps' simulation.
	from runs.Checkpoint
}

// Cost sums the tasks of an endpoint, or of the job. A nil count is
// unbounded (a task of it is).
type Cost struct {
	Endpoint string `json:"endpoint,omitempty"`
	Tasks    int    `json:"tasks"`
	Requests *int64 `json:"requests"`
	Worst    *int64 `json:"worst_units"`
	Expected *int64 `json:"expected_units"`
	// Unknown counts the tasks priced at their worst case for want of a
	// total.
	Unknown int `json:"unknown_tasks"`
	// Seconds is the least time the requests take at the API's account
	// rate (catalog.AccountRequestsPerSecond a second); nil when Requests is.
	Seconds *float64 `json:"seconds"`
}

// CapPlan says what one cap of the job would do to a run started now,
// with the tasks run in order, one at a time, at their expected cost.
type CapPlan struct {
	// Cap is per_run, job monthly, daily or monthly (budget.ExhaustedError).
	Cap   string `json:"cap"`
	Limit int64  `json:"limit"`
	// Used is what the cap's scope has used already (budget_usage; 0 for
	// per_run, whose run is new); UsageKnown is false without a database.
	Used       int64 `json:"used"`
	UsageKnown bool  `json:"usage_known"`
	Remaining  int64 `json:"remaining"`
	// Fits is nil when the plan cannot tell: a task before the cap is
	// reached has no known total and no bound.
	Fits *bool `json:"fits"`
	// CutTask is the first task the cap would stop (Task.String()), after
	// CutAfterRows of its rows; NotStarted tasks follow it and would be
	// skipped. Where Fits is nil, CutTask is the task that decides.
	CutTask      string `json:"cut_task,omitempty"`
	CutAfterRows int64  `json:"cut_after_rows"`
	NotStarted   int    `json:"not_started"`
	// Spend is what the run would spend under this cap alone (nil when
	// the plan cannot tell).
	Spend *int64 `json:"spend"`
	// Never lists the tasks one request of which costs more than the
	// whole cap: they are refused (skipped) in every run under it.
	Never []string `json:"never_fits,omitempty"`
}

// Plan prices every task of job: its requests, its worst case and the
// cost to expect, with where that came from. Per-line tasks are priced by
// their row total, the newest known of: what a run that read the task's
// data to its end counted, a probe's, and, for a task without filter whose
// endpoint has a TotalField, the target's latest overview in the
// warehouse. Without a known total a task is priced at its worst case, and
// a paged task without max_rows is unbounded.
//
// With opts.Probe, Plan first spends units to learn the totals (see
// probe): per target, one overview for its unfiltered links, ref-domains
// and ref-ips where that is cheaper than asking each; for every other list
// task that takes a limit, one JSON request with limit=1, whose meta.total
// is the total. The probes go through the ledger against the job's caps,
// in a run of their own (trigger probe), and Plan.Probe says what they
// cost. The score profile takes no limit: its probe asks for it whole
// (at most its bound of 101 lines) and reads its meta.total.
//
// When etl run would take up an earlier run of the job (see Resume), Plan
// prices what that run still has to do: its done tasks cost nothing, the
// others go on from their checkpoint, and the per_run cap counts what the
// run used in the cap window it would go on in.
func (p *Planner) Plan(ctx context.Context, job *jobspec.Job, opts PlanOptions) (*Plan, error) {
	return p.plan(ctx, job, job.Tasks(p.cfg.Now()), opts, true)
}

// PlanTasks is Plan for the given tasks of job (a backfill's), all of
// them: a backfill takes up no earlier run.
func (p *Planner) PlanTasks(ctx context.Context, job *jobspec.Job, tasks []jobspec.Task, opts PlanOptions) (*Plan, error) {
	return p.plan(ctx, job, tasks, opts, false)
}

func (p *Planner) plan(ctx context.Context, job *jobspec.Job, all []jobspec.Task, opts PlanOptions, resume bool) (*Plan, error) {
	now := p.cfg.Now()
	plan := &Plan{Job: job.Name, At: now.UTC(), History: p.cfg.Pool != nil}
	var tasks, listings []jobspec.Task
	for _, t := range all {
		if t.Listings != nil {
			listings = append(listings, t)
		} else {
			tasks = append(tasks, t)
		}
	}
	from := map[string]runs.Checkpoint{}
	if p.cfg.Pool != nil && resume {
		var err error
		if from, plan.Resume, err = p.resumed(ctx, job, all, now); err != nil {
			return nil, err
		}
	}
	if p.cfg.Pool != nil {
		if err := p.watermarks(ctx, job, tasks, from); err != nil {
			return nil, err
		}
	}
	held := map[int]Held{}
	plan.Held.Refetch = opts.Refetch
	if p.cfg.Pool != nil && resume { // a backfill holds nothing: --reprocess says what it buys again
		// The runs as they stand before the holdings are read: a run that
		// begins or is taken up from here on makes them stale for the run
		// they are handed to (HeldTasks.Take).
		before, busy, err := seeRuns(ctx, p.cfg.Pool, 0)
		if err != nil {
			return nil, err
		}
		held, err = Holdings(ctx, p.cfg.Pool, tasks, now, opts.Refetch, func(t jobspec.Task) string {
			return from[t.Key()].Status
		})
		if err != nil {
			return nil, err
		}
		if plan.Resume == nil && !busy {
			plan.Holdings = keepHeld(tasks, held, now, opts.Refetch, before)
		}
	}
	if err := p.pageBounds(ctx, tasks); err != nil {
		return nil, err
	}
	var probed map[totalKey]bool
	if opts.Probe {
		var err error
		if probed, err = p.probeSent(ctx, job, plan, tasks, held, from); err != nil {
			return nil, err
		}
		now = p.cfg.Now() // what the probes learned counts as known
	}
	known := map[totalKey]knownTotal{}
	if p.cfg.Pool != nil {
		var err error
		if known, err = p.known(ctx, tasks, now); err != nil {
			return nil, err
		}
	} else {
		plan.Warnings = append(plan.Warnings, "no database: no total is known from earlier runs and the caps' usage is not read; per-line tasks are priced at their worst case")
	}
	plan.price(tasks, held, known, probed, from, now)
	for _, t := range listings {
		lp, err := p.listingPlan(ctx, t, from[t.Key()])
		if err != nil {
			return nil, err
		}
		plan.Listings = append(plan.Listings, lp)
	}
	caps, err := p.caps(ctx, job, plan, now)
	if err != nil {
		return nil, err
	}
	plan.Caps = caps
	return plan, nil
}

// resumed reads the run etl run would take up (none: nil), with the
// checkpoints its tasks go on from, as runTask reads them: a held task
// goes on from nothing, and one a cap refused is tried again.
func (p *Planner) resumed(ctx context.Context, job *jobspec.Job, all []jobspec.Task, now time.Time) (map[string]runs.Checkpoint, *ResumePlan, error) {
	from := map[string]runs.Checkpoint{}
	take, _, err := runs.OpenRuns(ctx, p.cfg.Pool, job.Name, false, false, now)
	if err != nil || take == nil {
		return from, nil, err
	}
	if from, err = runs.Checkpoints(ctx, p.cfg.Pool, take.ID); err != nil {
		return nil, nil, err
	}
	for k, cp := range from {
		if cp.Status == "held" {
			// Not sent there: held again or bought anew, as
			// runTask does; nothing goes on from it.
			delete(from, k)
		}
	}
	rp := &ResumePlan{RunID: take.ID, How: take.How, Status: take.Status, Window: take.Window}
	if take.How == runs.ResumeStop {
		rp.Window++
	}
	for _, t := range all {
		cp := from[t.Key()]
		switch {
		case cp.Status == "refused" && runs.RefusedByCap(cp.Reason):
			// Tried again under today's caps, as runTask does.
			cp.Status = "skipped"
			from[t.Key()] = cp
			rp.GoOn++
		case cp.Status == "done":
			rp.Done++
		case cp.Status == "refused":
			rp.Refused++
		case cp.Status == "":
		default:
			rp.GoOn++
		}
	}
	return from, rp, nil
}

// watermarks checks that the warehouse has task_totals, and sets the
// watermark each incremental task asks past: the one of the run it goes
// on in (from), else the table's.
func (p *Planner) watermarks(ctx context.Context, job *jobspec.Job, tasks []jobspec.Task, from map[string]runs.Checkpoint) error {
	var ok bool
	if err := p.cfg.Pool.QueryRow(ctx, `SELECT to_regclass('task_totals') IS NOT NULL`).Scan(&ok); err != nil {
		return fmt.Errorf("reading the warehouse: %w", err)
	}
	if !ok {
		return fmt.Errorf("%w: it has no task_totals table", migrations.ErrNotMigrated)
	}
	// An incremental task asks only for rows past its watermark.
	for i, t := range tasks {
		if t.Spec.Incremental == "" {
			continue
		}
		if cp := from[t.Key()]; cp.Since != nil {
			tasks[i].Since = *cp.Since // the run goes on past the same watermark
			continue
		}
		since, _, err := load.Watermark(ctx, p.cfg.Pool, t.Watermark(job.Name))
		if err != nil {
			return migrations.NotMigrated(err)
		}
		tasks[i].Since = since
	}
	return nil
}

// probeSent probes the totals of the tasks the run would send: a held
// task, or one done or refused in the run it would take up, costs nothing
// to know. It returns the requests whose totals the probe learned.
func (p *Planner) probeSent(ctx context.Context, job *jobspec.Job, plan *Plan, tasks []jobspec.Task, held map[int]Held, from map[string]runs.Checkpoint) (map[totalKey]bool, error) {
	if p.cfg.Pool == nil || p.cfg.Client == nil {
		return nil, errors.New("planning: probing needs PlanConfig.Pool and PlanConfig.Client")
	}
	var ask []jobspec.Task
	for i, t := range tasks {
		if _, ok := held[i]; ok {
			continue
		}
		if s := from[t.Key()].Status; s == "done" || s == "refused" {
			continue
		}
		ask = append(ask, t)
	}
	rep, keys, err := p.probe(ctx, job, ask)
	if err != nil {
		return nil, err
	}
	plan.Probe = rep
	return keys, nil
}

// price prices each task of the plan at now: held, or from its known
// total (probed or not), going on from its checkpoint in from.
func (plan *Plan) price(tasks []jobspec.Task, held map[int]Held, known map[totalKey]knownTotal, probed map[totalKey]bool, from map[string]runs.Checkpoint, now time.Time) {
	for i, t := range tasks {
		if h, ok := held[i]; ok {
			plan.Tasks = append(plan.Tasks, heldPlan(t, h, now))
			plan.Held.Add(h)
			continue
		}
		k, ok := known[totalKeyOf(t)]
		var kt *knownTotal
		if ok {
			kt = &k
		}
		tp := price(t, kt, probed[totalKeyOf(t)], from[t.Key()])
		if n := t.HeldMonths; n > 0 {
			tp.HeldMonths = n
			tp.Basis += fmt.Sprintf("; %d closed months held, asks from %s", n, t.AskFrom.Format("2006-01"))
			plan.Held.AddMonths(t)
		}
		plan.Tasks = append(plan.Tasks, tp)
	}
	plan.sum()
}

// totalKeyOf names a task's request in task_totals: its endpoint, what it
// asks about, and what narrows its rows (an incremental task's watermark
// included).
type totalKey struct {
	endpoint, request, filter string
}

func totalKeyOf(t jobspec.Task) totalKey {
	var narrow []string
	if f := t.Filter(); f != "" {
		narrow = append(narrow, f)
	}
	if t.Spec.DateFrom != "" {
		narrow = append(narrow, "date_from="+t.Spec.DateFrom)
	}
	if t.Spec.DateTo != "" {
		narrow = append(narrow, "date_to="+t.Spec.DateTo)
	}
	return totalKey{t.Endpoint.Name, t.Request(), strings.Join(narrow, " ")}
}

// overviewCovers reports whether the target's overview tells t's total:
// an endpoint with a TotalField, for one target, nothing narrowing it.
func overviewCovers(t jobspec.Task) bool {
	k := totalKeyOf(t)
	return t.Endpoint.TotalField != "" && t.Target != nil && k.filter == ""
}

// Sources of task_totals rows (its source column).
const (
	TotalByRun       = "run"
	totalByMetaTotal = "meta.total"
	totalByOverview  = "overview"
)

// knownTotal is a task's row total as last learned.
type knownTotal struct {
	total int64
	// source is a task_totals source, or "warehouse" for the target's
	// latest overview row.
	source string
	at     time.Time
}

// SaveTotal records the row total of t's request, unless a newer one is
// recorded already.
func SaveTotal(ctx context.Context, pool *pgxpool.Pool, t jobspec.Task, total int64, source string, at time.Time) error {
	k := totalKeyOf(t)
	_, err := pool.Exec(ctx, `
		INSERT INTO task_totals (endpoint, request, filter, total, source, observed_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (endpoint, request, filter) DO UPDATE
		SET total = excluded.total, source = excluded.source, observed_at = excluded.observed_at
		WHERE task_totals.observed_at <= excluded.observed_at`,
		k.endpoint, k.request, k.filter, total, source, at.UTC())
	if err != nil {
		return fmt.Errorf("recording the row total of %s: %w", t, migrations.NotMigrated(err))
	}
	return nil
}

// known reads the newest total of every task's request known at now: from
// task_totals, and for tasks the overview covers, from the target's latest
// overview row. On a tie task_totals wins: it counted this very request.
func (p *Planner) known(ctx context.Context, tasks []jobspec.Task, now time.Time) (map[totalKey]knownTotal, error) {
	out := map[totalKey]knownTotal{}
	var eps, reqs, filters []string
	for _, t := range tasks {
		if t.Endpoint.Shape != catalog.List {
			continue
		}
		k := totalKeyOf(t)
		eps, reqs, filters = append(eps, k.endpoint), append(reqs, k.request), append(filters, k.filter)
	}
	rows, err := p.cfg.Pool.Query(ctx, `
		SELECT tt.endpoint, tt.request, tt.filter, tt.total, tt.source, tt.observed_at
		FROM task_totals tt
		JOIN unnest($1::text[], $2::text[], $3::text[]) AS k (endpoint, request, filter) USING (endpoint, request, filter)
		WHERE tt.observed_at <= $4`, eps, reqs, filters, now)
	if err != nil {
		return nil, fmt.Errorf("reading task totals: %w", migrations.NotMigrated(err))
	}
	var k totalKey
	var kt knownTotal
	if _, err := pgx.ForEachRow(rows, []any{&k.endpoint, &k.request, &k.filter, &kt.total, &kt.source, &kt.at}, func() error {
		out[k] = kt
		return nil
	}); err != nil {
		return nil, fmt.Errorf("reading task totals: %w", migrations.NotMigrated(err))
	}

	latest, err := p.overviews(ctx, tasks, now)
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		if !overviewCovers(t) {
			continue
		}
		row, ok := latest[jobspec.Target{URL: t.Target.URL, Scope: t.Target.Scope}]
		if !ok || row.counts[t.Endpoint.TotalField] == nil {
			continue
		}
		k := totalKeyOf(t)
		if have, ok := out[k]; ok && !row.at.After(have.at) {
			continue
		}
		out[k] = knownTotal{total: *row.counts[t.Endpoint.TotalField], source: "warehouse", at: row.at}
	}
	return out, nil
}

// overviewRow is a target's latest overview: when, and its counts by
// field.
type overviewRow struct {
	at     time.Time
	counts map[string]*int64
}

// overviews reads, at now, the latest overview of each target some task's
// total is in (nil: none is).
func (p *Planner) overviews(ctx context.Context, tasks []jobspec.Task, now time.Time) (map[jobspec.Target]overviewRow, error) {
	ov, _ := catalog.Lookup("overview")
	var fields []string
	var urls, scopes []string
	for _, t := range tasks {
		if !overviewCovers(t) {
			continue
		}
		if !slices.Contains(fields, t.Endpoint.TotalField) {
			fields = append(fields, t.Endpoint.TotalField)
		}
		urls, scopes = append(urls, t.Target.URL), append(scopes, string(t.Target.Scope))
	}
	if len(fields) == 0 {
		return nil, nil
	}
	cols := make([]string, len(fields))
	for i, f := range fields {
		cols[i] = "o." + pgx.Identifier{f}.Sanitize()
	}
	rows, err := p.cfg.Pool.Query(ctx, fmt.Sprintf(`
		SELECT DISTINCT ON (t.url, t.scope) t.url, t.scope, o.observed_at, %s
		FROM %s o JOIN targets t USING (target_id)
		JOIN (SELECT DISTINCT * FROM unnest($1::text[], $2::text[]) AS k (url, scope)) k ON k.url = t.url AND k.scope = t.scope
		WHERE o.observed_at <= $3
		ORDER BY t.url, t.scope, o.observed_at DESC`, strings.Join(cols, ", "), pgx.Identifier{ov.Table}.Sanitize()),
		urls, scopes, now)
	if err != nil {
		return nil, fmt.Errorf("reading the targets' overviews: %w", migrations.NotMigrated(err))
	}
	latest := map[jobspec.Target]overviewRow{}
	for rows.Next() {
		var tg jobspec.Target
		var scope string
		var row overviewRow
		vals := make([]*int64, len(fields))
		dest := []any{&tg.URL, &scope, &row.at}
		for i := range vals {
			dest = append(dest, &vals[i])
		}
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading the targets' overviews: %w", err)
		}
		tg.Scope = catalog.Scope(scope)
		row.counts = map[string]*int64{}
		for i, f := range fields {
			row.counts[f] = vals[i]
		}
		latest[tg] = row
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the targets' overviews: %w", err)
	}
	return latest, nil
}

// pass is what runTask would do on a task.
type pass struct {
	requests, rows, units int64
	// cut says the budget stopped the task before its data ended; need is
	// what the refused request would have cost at the least.
	cut  bool
	need int64
}

// simulate replays runTask on t: the pages it asks for, reserving each
// page's worst case as the ledger does, when its request has total rows
// (-1: at least as many as any page or bound asks for) and left units of
// budget (-1: no cap), going on from the checkpoint from (the zero value:
// from the start) as a resumed run does. It counts what is left to do:
// a done task costs nothing. An unbounded task (not bounded) with total
// -1 and no cap would page for ever; simulate stops it after one page and
// says cut.
func simulate(t jobspec.Task, total, left int64, from runs.Checkpoint) pass {
	var s pass
	price := t.Endpoint.Price
	if from.Status == "done" || from.Status == "refused" {
		return s
	}
	if t.Endpoint.Shape == catalog.Object {
		if left >= 0 && price.Units > left {
			s.cut, s.need = true, price.Units
			return s
		}
		return pass{requests: 1, rows: 1, units: price.Units}
	}
	limit := t.Limit()
	offset, read := from.Offset, from.Rows
	more := func(offset int64) int64 { // rows left from offset
		if total < 0 {
			return 1 << 62
		}
		return max(total-offset, 0)
	}
	for {
		pageLimit := t.PageLimit(read)
		if limit > 0 && pageLimit <= 0 {
			return s // max_rows read already
		}
		// As the ledger reserves: a paged request shrinks to what the
		// budget affords; anything else is refused whole.
		lines, ok := budget.Afford(price, t.WorstLines(pageLimit), t.Shrinks(), left)
		if !ok {
			s.cut, s.need = true, price.Worst(t.WorstLines(pageLimit))
			if t.Shrinks() {
				s.need = price.Units
			}
			return s
		}
		if limit > 0 {
			pageLimit = lines
		}
		got := min(int64(lines), more(offset))
		s.requests++
		s.rows = catalog.AddUnits(s.rows, got)
		read = catalog.AddUnits(read, got)
		offset = catalog.AddUnits(offset, got)
		cost := price.Cost(int(got))
		s.units = catalog.AddUnits(s.units, cost)
		if left >= 0 {
			left -= cost
		}
		if t.Done(int(got), pageLimit, read) {
			return s
		}
		if total < 0 && left < 0 && !t.Bounded() {
			s.cut = true
			return s
		}
		// Full pages like this one, all but the last of them in one step:
		// a page of limit 1 under max_rows 2^31-1 is 2^31 requests.
		if n := fullPages(t, int64(pageLimit), got, read, offset, left, more(offset), cost); n > 0 {
			s.requests = catalog.AddUnits(s.requests, n)
			rows := catalog.MulUnits(n, got)
			s.rows, read, offset = catalog.AddUnits(s.rows, rows), catalog.AddUnits(read, rows), catalog.AddUnits(offset, rows)
			units := catalog.MulUnits(n, cost)
			s.units = catalog.AddUnits(s.units, units)
			if left >= 0 {
				left -= units
			}
		}
	}
}

// fullPages is how many more pages of pageLimit lines, each as full and as
// dear as the one just simulated (got lines, cost units), simulate can
// count at once, leaving the last one to the page loop: none unless the
// page was full, and no more than the rows left (more), max_rows and the
// budget left (-1: none; each page must fit its worst case) allow.
func fullPages(t jobspec.Task, pageLimit, got, read, offset, left, more, cost int64) int64 {
	if !t.Paged() || pageLimit <= 0 || got != pageLimit {
		return 0
	}
	n := more / pageLimit
	if t.Spec.MaxRows > 0 {
		n = min(n, (int64(t.Spec.MaxRows)-read)/pageLimit)
	}
	if left >= 0 {
		if worst := t.Endpoint.Price.Worst(int(pageLimit)); worst > 0 {
			n = min(n, left/worst)
		}
	}
	return n - 1
}

// price prices one task with its known total (nil: none); probedNow says
// the total was learned by this plan's probe.
//
// from is the task's checkpoint in the run etl run would take up (zero:
// none): a task done there costs nothing, any other is priced from where
// it stands.
func price(t jobspec.Task, kt *knownTotal, probedNow bool, from runs.Checkpoint) TaskPlan {
	tp := newTaskPlan(t)
	set := func(s pass) (req, rows, units *int64) { return ptr(s.requests), ptr(s.rows), ptr(s.units) }
	tp.from = from
	switch from.Status {
	case "done", "refused":
		tp.Requests, tp.Rows, tp.Expected, tp.Worst = ptr(0), ptr(0), ptr(0), ptr(0)
		tp.Source, tp.Basis = SourceDone, "done in the run etl run would take up: not run again"
		if from.Status == "refused" {
			tp.Basis = "refused in the run etl run would take up: skipped (" + from.Reason + ")"
		}
		return tp
	}
	tp.From = from.Offset
	tp = tp.priced(t, kt, probedNow, from, set)
	if t.LearnsLimit() {
		tp.Page, tp.PageBasis, tp.PageUnknown = t.PageSize(), t.PageNote(), t.Unlearned
	}
	if from.Status != "" {
		tp.Basis += fmt.Sprintf(" (goes on from offset %d: %d rows read before)", from.Offset, from.Rows)
	}
	return tp
}

func (tp TaskPlan) priced(t jobspec.Task, kt *knownTotal, probedNow bool, from runs.Checkpoint, set func(pass) (req, rows, units *int64)) TaskPlan {
	ep := t.Endpoint
	if t.Bounded() {
		_, _, tp.Worst = set(simulate(t, -1, -1, from))
	}
	switch {
	case ep.Shape == catalog.Object:
		tp.Requests, tp.Rows, tp.Expected = set(simulate(t, -1, -1, from))
		tp.Source, tp.Basis = SourcePerRequest, "per request"
		return tp
	case t.Set != nil && ep.TargetField != "":
		n := int64(len(t.Set.URLs))
		tp.Total = &n
		tp.Requests, tp.Rows, tp.Expected = set(simulate(t, n, -1, from))
		tp.Source, tp.Basis = SourceExact, fmt.Sprintf("exact: %s has one line per url (%d)", ep.Name, n)
		return tp
	case kt == nil:
		tp.Source = SourceUnknown
		if t.Bounded() {
			tp.Requests, tp.Rows, tp.Expected = set(simulate(t, -1, -1, from))
			tp.Basis = "unknown: worst case"
			if t.Spec.MaxRows > 0 {
				tp.Basis += fmt.Sprintf(" (max_rows %d)", t.Spec.MaxRows)
			}
		} else {
			tp.Basis = "unknown: unbounded (no max_rows; only the data bounds it)"
		}
		return tp.past()
	}
	tp.Total = &kt.total
	at := kt.at.UTC()
	tp.ObservedAt = &at
	tp.Requests, tp.Rows, tp.Expected = set(simulate(t, kt.total, -1, from))
	day := at.Format(time.DateOnly)
	switch kt.source {
	case TotalByRun:
		tp.Source, tp.Basis = SourceRun, fmt.Sprintf("last run %s: %d rows", day, kt.total)
	case "warehouse":
		tp.Source, tp.Basis = SourceOverview, fmt.Sprintf("overview of %s: %s %d", day, ep.TotalField, kt.total)
	default:
		what := "meta.total"
		if kt.source == totalByOverview {
			what = "overview " + ep.TotalField
		}
		when := "probe"
		if !probedNow {
			when = "probe of " + day
		}
		tp.Source, tp.Basis = SourceProbe, fmt.Sprintf("%s: %s %d", when, what, kt.total)
	}
	return tp.past()
}

// past adds an incremental task's watermark to the basis.
func (tp TaskPlan) past() TaskPlan {
	if w := tp.Task.Since; !w.IsZero() {
		tp.Basis += fmt.Sprintf(" (rows past the watermark %s)", w.UTC().Format("2006-01-02T15:04:05"))
	}
	return tp
}

// newTaskPlan is the plan of task t before it is priced: what it is, and
// its endpoint's price.
func newTaskPlan(t jobspec.Task) TaskPlan {
	ep := t.Endpoint
	tp := TaskPlan{Task: t, Endpoint: ep.Name, Name: t.String(), Price: PlanPrice{Units: ep.Price.Units, Per: "line"}}
	if ep.Price.Per == catalog.PerRequest {
		tp.Price.Per = "request"
	}
	return tp
}

// heldPlan prices a held task: nothing, and says why.
func heldPlan(t jobspec.Task, h Held, now time.Time) TaskPlan {
	tp := newTaskPlan(t)
	tp.Held = &h
	tp.Requests, tp.Rows, tp.Expected, tp.Worst = ptr(0), ptr(0), ptr(0), ptr(0)
	tp.Source, tp.Basis = SourceHeld, h.Reason(now)
	return tp
}

// Add counts a held task.
func (h *HeldPlan) Add(held Held) {
	h.Tasks++
	h.Units = catalog.AddUnits(h.Units, held.Units)
	if held.Closed {
		h.Closed++
	} else {
		h.Fresh++
	}
}

// AddMonths counts the closed months a summary task does not ask for
// again, at their price per line.
func (h *HeldPlan) AddMonths(t jobspec.Task) {
	n := t.HeldMonths
	h.Months += n
	h.MonthUnits = catalog.AddUnits(h.MonthUnits, catalog.MulUnits(int64(n), t.Endpoint.Price.Units))
}

func ptr(n int64) *int64 { return &n }

// add adds n to *sum; nil (unbounded) stays nil, and a sum past what an
// int64 counts stays at math.MaxInt64 (catalog.AddUnits).
func add(sum **int64, n *int64) {
	if *sum == nil || n == nil {
		*sum = nil
		return
	}
	**sum = catalog.AddUnits(**sum, *n)
}

// sum fills the totals per endpoint, in task order, and of the job.
func (p *Plan) sum() {
	zero := func(c *Cost) { c.Requests, c.Worst, c.Expected = ptr(0), ptr(0), ptr(0) }
	zero(&p.Total)
	p.Endpoints = nil
	for _, tp := range p.Tasks {
		i := slices.IndexFunc(p.Endpoints, func(c Cost) bool { return c.Endpoint == tp.Endpoint })
		if i < 0 {
			p.Endpoints = append(p.Endpoints, Cost{Endpoint: tp.Endpoint})
			i = len(p.Endpoints) - 1
			zero(&p.Endpoints[i])
		}
		for _, c := range []*Cost{&p.Endpoints[i], &p.Total} {
			c.Tasks++
			add(&c.Requests, tp.Requests)
			add(&c.Worst, tp.Worst)
			add(&c.Expected, tp.Expected)
			if tp.Source == SourceUnknown {
				c.Unknown++
			}
		}
	}
	p.Total.timed()
	for i := range p.Endpoints {
		p.Endpoints[i].timed()
	}
}

// timed sets Seconds from Requests.
func (c *Cost) timed() {
	c.Seconds = nil
	if c.Requests != nil {
		secs := float64(*c.Requests) / catalog.AccountRequestsPerSecond
		c.Seconds = &secs
	}
}

// caps says, for each cap of the job, whether a run started now would fit
// in it at the plan's expected costs, and if not where it would stop.
func (p *Planner) caps(ctx context.Context, job *jobspec.Job, plan *Plan, now time.Time) ([]CapPlan, error) {
	// The counters a run started now would count in. A new run, or a
	// stopped one continued in a new cap window, has spent nothing of its
	// per_run cap yet: that counter is not read.
	acct := budget.Account{Job: job.Name, Caps: job.Caps}
	if r := plan.Resume; r != nil && r.How == runs.ResumeCrash {
		acct.RunID, acct.Window = r.RunID, r.Window
	}
	var all []budget.Scope
	for _, s := range budget.Scopes(acct, now) {
		if s.Name == "per_run" && acct.RunID == 0 {
			s.Key = ""
		}
		all = append(all, s)
	}
	order := []string{"per_run", "job monthly", "daily", "monthly"} // the run's own cap first
	slices.SortFunc(all, func(a, b budget.Scope) int { return slices.Index(order, a.Name) - slices.Index(order, b.Name) })
	var keys []string
	for _, c := range all {
		if c.Cap > 0 && c.Key != "" {
			keys = append(keys, c.Key)
		}
	}
	used := map[string]int64{}
	if p.cfg.Pool != nil && len(keys) > 0 {
		var err error
		if used, err = budget.New(p.cfg.Pool, nil).Used(ctx, keys); err != nil {
			return nil, fmt.Errorf("reading the budget's usage: %w", migrations.NotMigrated(err))
		}
	}
	var out []CapPlan
	for _, c := range all {
		if c.Cap <= 0 {
			continue
		}
		cp := CapPlan{Cap: c.Name, Limit: c.Cap, Used: used[c.Key], UsageKnown: p.cfg.Pool != nil || c.Key == ""}
		cp.Remaining = max(c.Cap-cp.Used, 0)
		left := cp.Remaining
		fits := true
		cp.Fits = &fits
		for i, tp := range plan.Tasks {
			if tp.Source == SourceDone || tp.Source == SourceHeld {
				continue
			}
			total := int64(-1)
			if tp.Total != nil {
				total = *tp.Total
			}
			if total < 0 && !tp.Task.Bounded() {
				if need := tp.Task.SmallestRequest(); need > c.Cap {
					// Refused whatever its total, as a bounded one is below.
					fits = false
					cp.Never = append(cp.Never, fmt.Sprintf("%s (one request may cost %d)", tp.Name, need))
					continue
				}
				cp.Fits, cp.CutTask, cp.NotStarted = nil, tp.Name, toSend(plan.Tasks[i+1:])
				break
			}
			s := simulate(tp.Task, total, left, tp.from)
			left -= s.units
			if s.cut && s.need > c.Cap {
				// As the runner does: a request dearer than the whole cap
				// skips its task alone (refused), and the run goes on.
				fits = false
				cp.Never = append(cp.Never, fmt.Sprintf("%s (one request may cost %d)", tp.Name, s.need))
				continue
			}
			if s.cut {
				fits = false
				cp.CutTask, cp.CutAfterRows, cp.NotStarted = tp.Name, s.rows, toSend(plan.Tasks[i+1:])
				break
			}
		}
		if cp.Fits != nil {
			cp.Spend = ptr(cp.Remaining - left)
		}
		out = append(out, cp)
	}
	return out, nil
}

// toSend counts the tasks of tps the run would send: not those done in
// the run it takes up, nor those held (which no cap skips).
func toSend(tps []TaskPlan) int {
	n := 0
	for _, tp := range tps {
		if tp.Source != SourceDone && tp.Source != SourceHeld {
			n++
		}
	}
	return n
}

// String says what the cap would do, in words.
func (c CapPlan) String() string { return c.Priced(nil) }

// Priced says what the cap would do, in words, with what its units cost
// at price beside them ("60000 (3.00 USD)"); without a price (nil) as
// String does.
func (c CapPlan) Priced(price *money.Price) string {
	units := func(n int64) string { return fmt.Sprintf("%d%s", n, money.Beside(price, n)) }
	head := fmt.Sprintf("%s cap %d (%d used, %d left)", c.Cap, c.Limit, c.Used, c.Remaining)
	switch {
	case !c.UsageKnown:
		head = fmt.Sprintf("%s cap %s (usage unknown without a database)", c.Cap, units(c.Limit))
	case price != nil:
		head = fmt.Sprintf("%s cap %s: %s used, %s left", c.Cap, units(c.Limit), units(c.Used), units(c.Remaining))
	}
	never := ""
	if len(c.Never) > 0 {
		never = fmt.Sprintf("; never fits (skipped in every run under this cap): %s", strings.Join(c.Never, ", "))
	}
	switch {
	case c.Fits == nil:
		return fmt.Sprintf("%s: cannot tell: %s has no known total and no max_rows (the cap bounds the run)%s", head, c.CutTask, never)
	case c.CutTask == "" && c.Spend != nil && !*c.Fits:
		return fmt.Sprintf("%s: does not fit, the run would spend %s%s", head, units(*c.Spend), never)
	case *c.Fits:
		return fmt.Sprintf("%s: fits, the run would spend %s", head, units(*c.Spend))
	case c.CutAfterRows > 0:
		return fmt.Sprintf("%s: does not fit: %s would be cut after %d rows, and %d tasks after it skipped%s", head, c.CutTask, c.CutAfterRows, c.NotStarted, never)
	}
	return fmt.Sprintf("%s: does not fit: the run would stop at %s, skipping it and the %d tasks after it%s", head, c.CutTask, c.NotStarted, never)
}
