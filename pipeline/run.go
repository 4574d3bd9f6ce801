package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/transform"
)

// Config configures a Runner.
type Config struct {
	// Client calls the data API (required).
	Client *extract.Client
	// Pool connects to the warehouse (required).
	Pool *pgxpool.Pool
	// Loader writes batches; default load.New over Pool.
	Loader *load.Loader
	// Concurrency bounds the tasks in flight; default 4.
	Concurrency int
	// BatchRows bounds the rows of one Arrow record; default transform's.
	BatchRows int
	// Allocator allocates Arrow memory; default memory.DefaultAllocator.
	Allocator memory.Allocator
	// Now is the clock ("current month", observed_at); default time.Now.
	Now func() time.Time
	// Logger receives progress lines; default discards.
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Pool == nil {
		return c, errors.New("pipeline: Config needs a Client and a Pool")
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.Concurrency < 1 {
		return c, fmt.Errorf("pipeline: Concurrency must be at least 1, got %d", c.Concurrency)
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
	if c.Loader == nil {
		l, err := load.New(load.Config{Pool: c.Pool, Logger: c.Logger})
		if err != nil {
			return c, err
		}
		c.Loader = l
	}
	return c, nil
}

// Runner runs jobs.
type Runner struct {
	cfg Config
}

// NewRunner returns a Runner.
func NewRunner(cfg Config) (*Runner, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg}, nil
}

// TaskResult is what one task did.
type TaskResult struct {
	Task     Task
	Pages    int
	Rows     int64 // rows received (good and rejected)
	Rejected int64 // rows quarantined
	Units    int64 // API units the requests cost, per the catalog's price
	Load     load.Result
	Drift    transform.Drift
	// Skipped says why the task did not run, or stopped early without an
	// error of its own ("" when it ran).
	Skipped string
	Err     error
}

// Summary is what a run did.
type Summary struct {
	Job      string
	Started  time.Time
	Finished time.Time
	Tasks    []TaskResult
}

// Skipped counts the tasks that did not run or were stopped.
func (s *Summary) Skipped() int {
	n := 0
	for _, t := range s.Tasks {
		if t.Skipped != "" {
			n++
		}
	}
	return n
}

// Failed counts the tasks that ended in an error.
func (s *Summary) Failed() int {
	n := 0
	for _, t := range s.Tasks {
		if t.Err != nil {
			n++
		}
	}
	return n
}

// Tables sums the load results per table, in first-seen order.
func (s *Summary) Tables() ([]string, map[string]load.Result) {
	var order []string
	sums := map[string]load.Result{}
	for _, t := range s.Tasks {
		name := t.Task.Endpoint.Table
		if _, ok := sums[name]; !ok {
			order = append(order, name)
		}
		sums[name] = sums[name].Add(t.Load)
	}
	return order, sums
}

// Totals sums rows, rejects and units over all tasks.
func (s *Summary) Totals() (rows, rejected, units int64) {
	for _, t := range s.Tasks {
		rows += t.Rows
		rejected += t.Rejected
		units += t.Units
	}
	return
}

// Run runs every task of job. A failing task does not stop the others; the
// returned error joins the failures (the Summary has each one).
func (r *Runner) Run(ctx context.Context, job *Job) (*Summary, error) {
	sum := &Summary{Job: job.Name, Started: r.cfg.Now()}
	tasks := job.Tasks(sum.Started)
	sum.Tasks = make([]TaskResult, len(tasks))
	r.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "run started", slog.String("job", job.Name), slog.Int("tasks", len(tasks)))

	// Targets and sets first, once each, so concurrent tasks share ids.
	ids := map[Target]int64{}
	for _, t := range job.Targets {
		id, err := r.cfg.Loader.Target(ctx, t.URL, t.Scope)
		if err != nil {
			return nil, err
		}
		ids[Target{URL: t.URL, Scope: t.Scope}] = id
	}
	sets := map[string]owner{}
	for _, ts := range job.TargetSets {
		id, targets, err := r.cfg.Loader.TargetSet(ctx, ts.Name, ts.Scope, ts.URLs)
		if err != nil {
			return nil, err
		}
		sets[ts.Name] = owner{setID: id, targets: targets}
	}

	// A 403 means the account has no units left: every further request
	// would fail too, so the run stops and the remaining tasks are skipped.
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	g := new(errgroup.Group)
	g.SetLimit(r.cfg.Concurrency)
	var mu sync.Mutex
	var errs []error
	for i, t := range tasks {
		g.Go(func() error {
			var o owner
			if t.Target != nil {
				o.targetID = ids[Target{URL: t.Target.URL, Scope: t.Target.Scope}]
			}
			if t.Set != nil {
				o = sets[t.Set.Name]
			}
			var res TaskResult
			if cause := context.Cause(runCtx); errors.Is(cause, extract.ErrUnitsExhausted) {
				res = TaskResult{Task: t, Skipped: skippedUnits}
			} else {
				res = r.runTask(runCtx, t, o)
			}
			if errors.Is(res.Err, extract.ErrUnitsExhausted) {
				stop(res.Err)
			} else if res.Err != nil && errors.Is(context.Cause(runCtx), extract.ErrUnitsExhausted) && errors.Is(res.Err, context.Canceled) {
				res.Err, res.Skipped = nil, skippedUnits // stopped by another task's 403
			}
			sum.Tasks[i] = res
			if res.Err != nil {
				r.cfg.Logger.LogAttrs(runCtx, slog.LevelError, "task failed", slog.String("task", t.String()), slog.String("error", res.Err.Error()))
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", t, res.Err))
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait() // tasks report through sum; none returns an error
	sum.Finished = r.cfg.Now()
	for _, d := range sum.Drift() {
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "schema drift: the API's columns differ from the catalog",
			slog.String("endpoint", d.Endpoint), slog.Any("unknown_left_out", d.Unknown), slog.Any("missing_loaded_as_null", d.Missing))
	}
	rows, rejected, units := sum.Totals()
	r.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "run finished", slog.String("job", job.Name),
		slog.Int64("rows", rows), slog.Int64("rejected", rejected), slog.Int64("units", units),
		slog.Int("failed_tasks", sum.Failed()), slog.Int("skipped_tasks", sum.Skipped()),
		slog.Duration("took", sum.Finished.Sub(sum.Started)))
	return sum, errors.Join(errs...)
}

// EndpointDrift is how the columns one endpoint sent during a run differed
// from the catalog, over all its tasks.
type EndpointDrift struct {
	Endpoint string
	transform.Drift
}

// Drift reports schema drift once per endpoint, in task order: the columns
// it sent that the catalog does not know, and the catalog's columns it left
// out, over every task of the run.
func (s *Summary) Drift() []EndpointDrift {
	var out []EndpointDrift
	for _, t := range s.Tasks {
		if t.Drift.None() {
			continue
		}
		i := slices.IndexFunc(out, func(d EndpointDrift) bool { return d.Endpoint == t.Task.Endpoint.Name })
		if i < 0 {
			out = append(out, EndpointDrift{Endpoint: t.Task.Endpoint.Name})
			i = len(out) - 1
		}
		out[i].Unknown = appendNew(out[i].Unknown, t.Drift.Unknown...)
		out[i].Missing = appendNew(out[i].Missing, t.Drift.Missing...)
	}
	return out
}

// owner is what a task's rows are about: a target, or a target set with
// the ids of its targets.
type owner struct {
	targetID int64
	setID    int64
	targets  map[string]int64
}

// ApplyRetention applies the spec's retention policy (see
// load.Loader.ApplyRetention) at the runner's current time.
func (r *Runner) ApplyRetention(ctx context.Context, rs *RetentionSpec, dryRun bool) (load.RetentionReport, error) {
	return r.cfg.Loader.ApplyRetention(ctx, rs.Policy(), r.cfg.Now(), dryRun)
}

// skippedUnits is the reason of tasks a 403 stopped.
const skippedUnits = "API units exhausted upstream (HTTP 403)"

// runTask pages through one task. Each page is loaded in one transaction.
// Where the endpoint takes a limit, every request sends one (the page size,
// cut to what max_rows still allows), so no request can return, and cost,
// more lines than the job asked for.
func (r *Runner) runTask(ctx context.Context, t Task, o owner) TaskResult {
	res := TaskResult{Task: t}
	limit := 0
	if _, ok := t.Endpoint.Param("limit"); ok {
		limit = t.pageSize()
	}
	offset := 0
	for {
		pageLimit := limit
		if t.Spec.MaxRows > 0 && limit > 0 {
			pageLimit = min(limit, t.Spec.MaxRows-int(res.Rows))
		}
		got, err := r.page(ctx, t, o, offset, pageLimit, &res)
		if err != nil {
			res.Err = err
			return res
		}
		res.Pages++
		res.Rows += int64(got)
		offset += got
		done := !t.paged() || got < pageLimit || got == 0 ||
			(t.Spec.MaxRows > 0 && res.Rows >= int64(t.Spec.MaxRows))
		if done {
			return res
		}
	}
}

// page fetches and loads one page, returning the rows it held.
func (r *Runner) page(ctx context.Context, t Task, o owner, offset, limit int, res *TaskResult) (int, error) {
	observed := r.cfg.Now().UTC()
	resp, err := r.cfg.Client.Do(ctx, extract.Request{Endpoint: t.Endpoint, Params: t.params(offset, limit)})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// The API charged for this request once it answered. If the page fails
	// from here on (a cut body, the database), count what it may have cost:
	// the page's limit of lines, or the lines read when there is no limit.
	rows, settled := 0, false
	defer func() {
		if !settled {
			if limit > 0 {
				res.Units += t.Endpoint.Price.Worst(limit)
			} else {
				res.Units += t.Endpoint.Price.Cost(rows)
			}
		}
	}()
	dec, err := transform.NewDecoder(resp.Body, t.Endpoint, t.format(), transform.Options{
		Allocator: r.cfg.Allocator, BatchRows: r.cfg.BatchRows, Logger: r.cfg.Logger, Required: required(t.Endpoint)})
	if err != nil {
		return 0, fmt.Errorf("decoding %s: %w", t.Endpoint.Name, err)
	}
	var ctxVals []any
	if t.Keyword != "" {
		ctxVals = []any{t.Keyword, t.Country}
	}
	defer dec.Release()
	var loaded load.Result
	err = pgx.BeginFunc(ctx, r.cfg.Pool, func(tx pgx.Tx) error {
		page, err := r.cfg.Loader.NewPage(ctx, tx, t.Endpoint)
		if err != nil {
			return err
		}
		var rejected []load.Rejected
		for {
			rec, rejects, err := dec.Next(ctx)
			for _, rj := range rejects {
				rejected = append(rejected, load.Rejected{Endpoint: t.Endpoint.Name, TargetID: o.targetID, Request: t.request(),
					Line: rj.Line, Raw: rj.Raw, Reason: rj.Reason, ObservedAt: observed})
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("decoding %s: %w", t.Endpoint.Name, err)
			}
			rows += int(rec.NumRows())
			err = page.Stage(ctx, load.Batch{Endpoint: t.Endpoint, TargetID: o.targetID, Targets: o.targets, SetID: o.setID, Context: ctxVals,
				Month: t.Month, ObservedAt: observed, Record: rec})
			rec.Release()
			if err != nil {
				return err
			}
		}
		if loaded, err = page.Upsert(ctx); err != nil {
			return err
		}
		rows += len(rejected)
		return r.cfg.Loader.Quarantine(ctx, tx, rejected)
	})
	if err != nil {
		return 0, err
	}
	res.Load = res.Load.Add(loaded)
	res.Rejected += int64(dec.Rejected())
	settled = true
	res.Units += t.Endpoint.Price.Cost(rows)
	d := dec.Drift()
	res.Drift.Unknown = appendNew(res.Drift.Unknown, d.Unknown...)
	res.Drift.Missing = appendNew(res.Drift.Missing, d.Missing...)
	r.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "page loaded", slog.String("task", t.String()),
		slog.Int("offset", offset), slog.Int("rows", rows))
	return rows, nil
}

// required lists the row fields a row cannot be loaded without: its key
// and the field that says its month.
func required(ep *catalog.Endpoint) []string {
	var names []string
	for _, k := range ep.Key {
		if _, ok := ep.Field(k); ok {
			names = append(names, k)
		}
	}
	if ep.TargetField != "" {
		names = append(names, ep.TargetField)
	}
	if ep.MonthField != "" {
		names = append(names, ep.MonthField)
	}
	return names
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}
