package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/migrations"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

// The history arms (issue 18): what a warehouse's history costs the loads
// of today. Each works in databases of its own on the bench's cluster.
//
//	H   the same links upsert (BENCH_HISTORY_ROWS links of one target,
//	    pages of BENCH_LIMIT, the P1 process) as a first load and as a
//	    rerun, with 1 month stored, then with 120 (119 older months of
//	    BENCH_HISTORY_FILL links each added by SQL): the ratios 120/1.
//	HB  a backfill of 2012-01 to 2026-11 (179 months) of summary history
//	    and keyword metrics for a few targets and keywords, then the job's
//	    run of the last month again, buying every task again (--refetch:
//	    on the backfill's day a rerun would hold them all): its per-page
//	    time against the same run on a warehouse that holds that month
//	    alone (target: at most 1.5 x).
const (
	armHistory  = "H"
	armBackfill = "HB"
)

// historyReport is what the history arms measured.
type historyReport struct {
	Links    *linksHistory    `json:"links,omitempty"`
	Backfill *backfillHistory `json:"backfill,omitempty"`
}

// linksHistory is arm H: seconds of the P1 process at 1 and at 120 months.
type linksHistory struct {
	Rows           int64   `json:"rows"`
	FillRows       int     `json:"fill_rows_per_month"`
	FirstLoad1     spread  `json:"first_load_1_month_s"`
	FirstLoad120   spread  `json:"first_load_120_months_s"`
	Rerun1         spread  `json:"rerun_1_month_s"`
	Rerun120       spread  `json:"rerun_120_months_s"`
	FirstLoadRatio float64 `json:"first_load_ratio"`
	RerunRatio     float64 `json:"rerun_ratio"`
	FillSeconds    float64 `json:"fill_seconds"`
}

// backfillHistory is arm HB.
type backfillHistory struct {
	Targets         []string `json:"targets"`
	Keywords        int      `json:"keywords"`
	Months          int      `json:"months"`
	Tasks           int      `json:"backfill_tasks"`
	BackfillSeconds float64  `json:"backfill_seconds"`
	Leaves          int64    `json:"leaf_partitions"` // of backlink_history and keyword_metrics after it
	Pages           int      `json:"pages_per_rerun"`
	EmptyPageMS     spread   `json:"empty_page_ms"`
	HistoryPageMS   spread   `json:"history_page_ms"`
	Ratio           float64  `json:"ratio"`
}

// history runs the history arms the configuration asks for.
func (e *env) history(ctx context.Context) (*historyReport, error) {
	rep := &historyReport{}
	if hasArm(e.cfg.arms, armHistory) {
		l, err := e.linksHistory(ctx)
		if err != nil {
			return nil, fmt.Errorf("arm %s: %w", armHistory, err)
		}
		rep.Links = l
	}
	if hasArm(e.cfg.arms, armBackfill) {
		b, err := e.backfillHistory(ctx)
		if err != nil {
			return nil, fmt.Errorf("arm %s: %w", armBackfill, err)
		}
		rep.Backfill = b
	}
	return rep, nil
}

// newDatabase creates and migrates a database of the bench's cluster and
// returns its URL and a pool on it.
func (e *env) newDatabase(ctx context.Context, name string) (string, *pgxpool.Pool, error) {
	if err := createDatabase(ctx, e.cluster.URL("postgres"), name); err != nil {
		return "", nil, err
	}
	url := e.cluster.URL(name)
	if err := migrations.Up(ctx, url); err != nil {
		return "", nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return "", nil, err
	}
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	return url, pool, err
}

func execAll(ctx context.Context, pool *pgxpool.Pool, stmts ...string) error {
	for _, s := range stmts {
		if _, err := pool.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// linksHistory is arm H.
func (e *env) linksHistory(ctx context.Context) (*linksHistory, error) {
	csv := e.csv
	if csv.path == "" || e.cfg.historyRows != e.cfg.rows {
		var err error
		if csv, err = e.saveCSV(ctx, e.cfg.historyRows); err != nil {
			return nil, err
		}
	}
	url, pool, err := e.newDatabase(ctx, "bench_history")
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	loader, err := load.New(load.Config{Pool: pool})
	if err != nil {
		return nil, err
	}
	target, err := loader.Target(ctx, targetURL(e.cfg.historyRows), catalog.RootDomain)
	if err != nil {
		return nil, err
	}
	part := load.LayoutOf(e.ep).PartitionName(e.ep.Table, e.month)
	if err := loader.EnsurePartitions(ctx, e.ep, []time.Time{e.month}); err != nil {
		return nil, err
	}
	loads := historyLoads{e: e, url: url, pool: pool, part: part, csv: csv, target: target}
	first1, rerun1, err := loads.measure(ctx, 1)
	if err != nil {
		return nil, err
	}
	fill, err := e.fillHistory(ctx, loader, pool, part)
	if err != nil {
		return nil, err
	}
	first120, rerun120, err := loads.measure(ctx, 120)
	if err != nil {
		return nil, err
	}
	h := &linksHistory{Rows: csv.rows, FillRows: e.cfg.historyFill, FillSeconds: round3(fill),
		FirstLoad1: spreadOf(first1), FirstLoad120: spreadOf(first120), Rerun1: spreadOf(rerun1), Rerun120: spreadOf(rerun120)}
	h.FirstLoadRatio = finite(ratio(h.FirstLoad120.Median, h.FirstLoad1.Median))
	h.RerunRatio = finite(ratio(h.Rerun120.Median, h.Rerun1.Median))
	return h, nil
}

// historyLoads are arm H's loads of csv into part, the month's partition
// of backlinks in the database of url (pool), for target.
type historyLoads struct {
	e      *env
	url    string
	pool   *pgxpool.Pool
	part   string
	csv    savedCSV
	target int64
}

// once runs the P1 process once, a first load (into the emptied
// partition) or a rerun (over the loaded one), checks what it wrote and
// returns its seconds.
func (hl historyLoads) once(ctx context.Context, first bool) (float64, error) {
	if first {
		if err := execAll(ctx, hl.pool, "TRUNCATE "+hl.part, "CHECKPOINT"); err != nil {
			return 0, err
		}
	} else if err := execAll(ctx, hl.pool, "VACUUM ANALYZE "+hl.part, "CHECKPOINT"); err != nil {
		return 0, err
	}
	s, err := hl.e.runChildOn(ctx, hl.url, hl.csv.path, hl.target, nil)
	if err != nil {
		return 0, err
	}
	l := s.Load
	if first && (l.Rows != hl.csv.rows || l.Inserted != hl.csv.rows) {
		return 0, fmt.Errorf("WRONG RESULT: a first load read %d rows and inserted %d, want %d both", l.Rows, l.Inserted, hl.csv.rows)
	}
	if !first && (l.Rows != hl.csv.rows || l.Inserted != 0 || l.Updated != 0) {
		return 0, fmt.Errorf("WRONG RESULT: a rerun read %d rows, inserted %d and updated %d, want %d read, none written", l.Rows, l.Inserted, l.Updated, hl.csv.rows)
	}
	return s.Seconds, nil
}

// measure times a first load and a rerun with months stored: a warm-up
// round, then BENCH_REPS rounds, whose seconds it returns.
func (hl historyLoads) measure(ctx context.Context, months int) (first, rerun []float64, err error) {
	for round := 0; round <= hl.e.cfg.reps; round++ { // round 0 warms up
		f, err := hl.once(ctx, true)
		if err != nil {
			return nil, nil, err
		}
		r, err := hl.once(ctx, false)
		if err != nil {
			return nil, nil, err
		}
		hl.e.log.LogAttrs(ctx, slog.LevelInfo, "arm done", slog.String("arm", armHistory), slog.Int("stored_months", months),
			slog.Int("round", round), slog.Float64("first_load_s", round3(f)), slog.Float64("rerun_s", round3(r)))
		if round > 0 {
			first, rerun = append(first, f), append(rerun, r)
		}
	}
	return first, rerun, nil
}

// fillHistory adds 119 older months to the backlinks of pool, each with
// up to BENCH_HISTORY_FILL of the links of part (this month's partition),
// as ten years of monthly runs leave them, and returns the seconds it
// took.
func (e *env) fillHistory(ctx context.Context, loader *load.Loader, pool *pgxpool.Pool, part string) (float64, error) {
	began := time.Now()
	var older []time.Time
	for k := 1; k < 120; k++ {
		older = append(older, e.month.AddDate(0, -k, 0))
	}
	if err := loader.EnsurePartitions(ctx, e.ep, older); err != nil {
		return 0, err
	}
	cols := strings.Join(quoteAll(columnNamesOf(e.ep)), ", ")
	for k := 1; k < 120; k++ {
		m := e.month.AddDate(0, -k, 0)
		src := strings.Replace(cols, `"month"`, fmt.Sprintf(`DATE '%s'`, m.Format(time.DateOnly)), 1)
		if _, err := pool.Exec(ctx, fmt.Sprintf(`INSERT INTO backlinks (%s) SELECT %s FROM %s LIMIT %d`, cols, src, part, e.cfg.historyFill)); err != nil {
			return 0, fmt.Errorf("filling %s: %w", m.Format("2006-01"), err)
		}
	}
	if err := execAll(ctx, pool, "VACUUM ANALYZE backlinks", "CHECKPOINT"); err != nil {
		return 0, err
	}
	var leaves int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_partition_tree('backlinks') WHERE isleaf`).Scan(&leaves); err != nil {
		return 0, err
	}
	if leaves != 120 {
		return 0, fmt.Errorf("backlinks has %d partitions, want 120", leaves)
	}
	fill := time.Since(began).Seconds()
	e.log.LogAttrs(ctx, slog.LevelInfo, "history stored", slog.String("arm", armHistory), slog.Int("months", 120),
		slog.Int("rows_per_month", e.cfg.historyFill), slog.Float64("seconds", round3(fill)))
	return fill, nil
}

// columnNamesOf is the columns of ep's table that a row is inserted with.
func columnNamesOf(ep *catalog.Endpoint) []string {
	var names []string
	for _, c := range load.Columns(ep) {
		names = append(names, c.Name)
	}
	return names
}

// backfillSpec is arm HB's job: a few targets' summary history, and
// keyword metrics of ten keywords.
const backfillSpec = `jobs:
  - name: history
    targets: [{url: n2500.example, scope: ROOT_DOMAIN}, {url: n300.example, scope: ROOT_DOMAIN}, {url: n100000.example, scope: ROOT_DOMAIN}]
    endpoints: {summary: {}}
    keywords:
      keywords: [seo tools, backlink checker, rank tracker, keyword research, link building, site audit, serp api, domain authority, anchor text, broken links]
      countries: [US]
`

// pageTimer is an Observer that times each page: from its task's start,
// or the page before, to its commit.
type pageTimer struct {
	mu    sync.Mutex
	since map[int]time.Time
	ms    []float64
}

func (p *pageTimer) RunStarted(*pipeline.Summary, []jobspec.Task) {}
func (p *pageTimer) TaskStarted(i int, _ pipeline.TaskResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.since[i] = time.Now()
}
func (p *pageTimer) PageLoaded(i int, _ pipeline.TaskResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.ms = append(p.ms, float64(now.Sub(p.since[i]).Microseconds())/1000)
	p.since[i] = now
}
func (p *pageTimer) TaskFinished(int, pipeline.TaskResult) {}
func (p *pageTimer) RunFinished(*pipeline.Summary)         {}

// backfillFrom is the first month arm HB backfills: with the month of
// now (2026-11), 179 months.
var backfillFrom = time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC)

// backfillHistory is arm HB, in two databases of its own.
func (e *env) backfillHistory(ctx context.Context) (*backfillHistory, error) {
	_, full, err := e.newDatabase(ctx, "bench_backfill")
	if err != nil {
		return nil, err
	}
	defer full.Close()
	_, empty, err := e.newDatabase(ctx, "bench_backfill_empty")
	if err != nil {
		return nil, err
	}
	defer empty.Close()
	return measureBackfill(ctx, e.log, full, empty, backfillFrom, e.cfg.reps)
}

// measureBackfill backfills full from the month from to the month of now,
// then times the pages of the job's run of the last month on full and on
// empty (a warehouse of that month alone) in turns: a warm-up round, then
// reps rounds.
//
// Each of those runs buys its tasks again (RunOptions.Refetch), as the
// first run of a month did before runs held what the warehouse holds
// fresh: all of them run on the backfill's day (the sandbox's clock, now),
// when a rerun would buy nothing, load no page, and leave nothing to time.
func measureBackfill(ctx context.Context, log *slog.Logger, full, empty *pgxpool.Pool, from time.Time, reps int) (*backfillHistory, error) {
	at, _ := time.Parse(time.RFC3339, now)
	// The backfill's thousands of requests, without the account's limits.
	_, apiURL, stop, err := serveSandboxWith(ctx, log, sandbox.Config{RatePerSecond: -1, MaxConcurrent: -1})
	if err != nil {
		return nil, err
	}
	defer func() { _ = stop() }()
	client, err := extract.New(extract.Config{BaseURL: apiURL, APIKey: apiKey, RatePerSecond: -1, MaxConcurrent: -1})
	if err != nil {
		return nil, err
	}
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(backfillSpec), at)
	if err != nil {
		return nil, err
	}
	job := spec.Jobs[0]
	mem := memory.NewGoAllocator()
	runner := func(pool *pgxpool.Pool, concurrency int, obs pipeline.Observer) (*pipeline.Runner, error) {
		return pipeline.NewRunner(pipeline.Config{Client: client, Pool: pool, Allocator: mem, Concurrency: concurrency,
			Now: func() time.Time { return at }, Observer: obs})
	}
	to := load.MonthStart(at)
	h := &backfillHistory{Keywords: len(job.Keywords.Keywords) * len(job.Keywords.Countries),
		Months: (to.Year()-from.Year())*12 + int(to.Month()) - int(from.Month()) + 1}
	for _, t := range job.Targets {
		h.Targets = append(h.Targets, t.URL)
	}
	tasks, _, err := job.BackfillTasks(jobspec.BackfillRequest{From: from, To: to}, at)
	if err != nil {
		return nil, err
	}
	h.Tasks = len(tasks)
	r, err := runner(full, 16, nil)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	sum, err := r.RunWith(ctx, job, pipeline.RunOptions{Trigger: "backfill", Tasks: tasks})
	if err != nil {
		return nil, fmt.Errorf("the backfill: %w", err)
	}
	if sum.Failed() > 0 {
		return nil, fmt.Errorf("the backfill: %d tasks failed", sum.Failed())
	}
	if err := finishBackfill(ctx, log, full, h, began); err != nil {
		return nil, err
	}

	// The job's run of the current month, one task at a time, on each
	// warehouse in turn; the first round (the empty warehouse's first
	// load) warms up.
	rerun := func(pool *pgxpool.Pool) ([]float64, error) {
		obs := &pageTimer{since: map[int]time.Time{}}
		r, err := runner(pool, 1, obs)
		if err != nil {
			return nil, err
		}
		sum, err := r.RunWith(ctx, job, pipeline.RunOptions{Fresh: true, Refetch: true})
		if err != nil {
			return nil, err
		}
		if sum.Failed() > 0 {
			return nil, fmt.Errorf("%d tasks failed", sum.Failed())
		}
		if len(obs.ms) == 0 {
			return nil, fmt.Errorf("it loaded no page, so there is no page to time (%d tasks, %d of them held)", len(sum.Tasks), sum.Held().Tasks)
		}
		return obs.ms, nil
	}
	if err := timeReruns(ctx, log, empty, full, reps, rerun, h); err != nil {
		return nil, err
	}
	return h, nil
}

// finishBackfill records in h the seconds of the backfill that began at
// began and the leaf partitions it left in full, logs them, and vacuums
// full for the reruns.
func finishBackfill(ctx context.Context, log *slog.Logger, full *pgxpool.Pool, h *backfillHistory, began time.Time) error {
	h.BackfillSeconds = round3(time.Since(began).Seconds())
	if err := full.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_partition_tree('backlink_history') WHERE isleaf)
		+ (SELECT count(*) FROM pg_partition_tree('keyword_metrics') WHERE isleaf)`).Scan(&h.Leaves); err != nil {
		return err
	}
	log.LogAttrs(ctx, slog.LevelInfo, "backfill done", slog.String("arm", armBackfill), slog.Int("tasks", h.Tasks),
		slog.Float64("seconds", h.BackfillSeconds), slog.Int64("leaf_partitions", h.Leaves))
	return execAll(ctx, full, "VACUUM ANALYZE", "CHECKPOINT")
}

// timeReruns times the pages of rerun on empty and on full in turns, a
// warm-up round then reps rounds, into h: the pages of a run, the spread
// of each warehouse's page times and their ratio.
func timeReruns(ctx context.Context, log *slog.Logger, empty, full *pgxpool.Pool, reps int, rerun func(*pgxpool.Pool) ([]float64, error), h *backfillHistory) error {
	var emptyMS, fullMS []float64
	for round := 0; round <= reps; round++ {
		for _, w := range []struct {
			pool *pgxpool.Pool
			out  *[]float64
			name string
		}{{empty, &emptyMS, "empty"}, {full, &fullMS, "after the backfill"}} {
			if err := execAll(ctx, w.pool, "CHECKPOINT"); err != nil {
				return err
			}
			ms, err := rerun(w.pool)
			if err != nil {
				return fmt.Errorf("the run of the last month on the warehouse %s: %w", w.name, err)
			}
			h.Pages = len(ms)
			med := spreadOf(ms).Median
			log.LogAttrs(ctx, slog.LevelInfo, "arm done", slog.String("arm", armBackfill), slog.String("warehouse", w.name),
				slog.Int("round", round), slog.Int("pages", len(ms)), slog.Float64("page_ms_median", round3(med)))
			if round > 0 {
				*w.out = append(*w.out, ms...)
			}
		}
	}
	h.EmptyPageMS, h.HistoryPageMS = spreadOf(emptyMS), spreadOf(fullMS)
	h.Ratio = finite(ratio(h.HistoryPageMS.Median, h.EmptyPageMS.Median))
	return nil
}

// printHistory writes the history arms' lines of the report.
func (h *historyReport) print(w io.Writer) {
	if h == nil {
		return
	}
	if l := h.Links; l != nil {
		fmt.Fprintf(w, "\nhistory (H): %d links of one target, first load and rerun (P1 process), with 1 and with 120 months stored (%d rows per older month):\n",
			l.Rows, l.FillRows)
		fmt.Fprintf(w, "  first load: %.2f s (%.2f-%.2f) at 1 month, %.2f s (%.2f-%.2f) at 120: ratio %.2f\n",
			l.FirstLoad1.Median, l.FirstLoad1.Min, l.FirstLoad1.Max, l.FirstLoad120.Median, l.FirstLoad120.Min, l.FirstLoad120.Max, l.FirstLoadRatio)
		fmt.Fprintf(w, "  rerun:      %.2f s (%.2f-%.2f) at 1 month, %.2f s (%.2f-%.2f) at 120: ratio %.2f\n",
			l.Rerun1.Median, l.Rerun1.Min, l.Rerun1.Max, l.Rerun120.Median, l.Rerun120.Min, l.Rerun120.Max, l.RerunRatio)
	}
	if b := h.Backfill; b != nil {
		fmt.Fprintf(w, "\nhistory (HB): backfill of %d months of summary (%d targets) and keyword metrics (%d keywords): %d tasks in %.1f s, %d leaf partitions;\n",
			b.Months, len(b.Targets), b.Keywords, b.Tasks, b.BackfillSeconds, b.Leaves)
		fmt.Fprintf(w, "  then the job's run of the last month (%d pages): %.1f ms a page (%.1f-%.1f) after it, %.1f ms (%.1f-%.1f) on a warehouse of that month alone: ratio %.2f\n",
			b.Pages, b.HistoryPageMS.Median, b.HistoryPageMS.Min, b.HistoryPageMS.Max, b.EmptyPageMS.Median, b.EmptyPageMS.Min, b.EmptyPageMS.Max, b.Ratio)
	}
}

// historyNotes explain the history arms in the report.
var historyNotes = []string{
	"H: the links of one target as P1 loads them (its own process, pages of BENCH_LIMIT), into a database of its own: a first load (the month's partition emptied) and a rerun (vacuumed, every row unchanged), warm-up then BENCH_REPS of each, with the month alone, then after 119 older months are added by SQL",
	"HB: the backfill runs 16 tasks at a time against a sandbox without rate limits; the runs of the last month buy every task again (as etl run --refetch: all run on the backfill's day, when a rerun holds what it fetched) and run one task at a time, the two warehouses taking turns; a page's time runs from its task's start (or the page before) to its commit: the request to the in-process sandbox, decoding, loading, the checkpoint",
}

// hasArm says whether arms holds name.
func hasArm(arms []string, name string) bool {
	for _, a := range arms {
		if a == name {
			return true
		}
	}
	return false
}
