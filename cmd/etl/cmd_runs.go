package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/money"
	"github.com/seoetl/etl/pipeline"
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
	// taskFilter); none lists them as runShowAll says.
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
	f.StringSliceVar(&o.runStatuses, "status", nil, "list the runs of these statuses: "+strings.Join(rowStatuses, ", ")+" (repeatable, or comma-separated)")
	f.IntVar(&o.limit, "limit", runsListDefault, "list the newest N runs")
	f.BoolVar(&o.all, "all", false, "list every run")
	f.StringVar(&o.jobs, "jobs", "jobs.yaml", "job spec whose unit_price shows units as money (the default file is read only where it is there)")

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
			return e.showRun(cmd.Context(), o, id)
		},
	}
	sf := show.Flags()
	sf.StringSliceVar(&o.statuses, "status", nil, "list the tasks of these statuses: "+strings.Join(taskStatuses, ", ")+" (repeatable, or comma-separated)")
	sf.StringVar(&o.task, "task", "", "list the tasks whose name holds PATTERN (* any characters, ? one)")
	sf.StringVar(&o.jobs, "jobs", "jobs.yaml", "job spec whose unit_price shows the run's units as money (the default file is read only where it is there)")
	cmd.AddCommand(show)
	return cmd
}

// runRecord is one row of runs, as etl runs prints it.
type runRecord struct {
	RunID        int64      `json:"run_id"`
	Job          string     `json:"job"`
	Trigger      string     `json:"trigger"`
	Status       string     `json:"status"`
	Attempts     int        `json:"attempts"`
	CapWindow    int        `json:"cap_window"`
	Host         *string    `json:"host"`
	StartedAt    time.Time  `json:"started_at"`
	ResumedAt    *time.Time `json:"resumed_at"`
	FinishedAt   *time.Time `json:"finished_at"`
	ScheduledFor *time.Time `json:"scheduled_for"`
	Rows         *int64     `json:"rows"`
	Units        *int64     `json:"units"`
	Error        *string    `json:"error"`
	// DurationSeconds is finished_at - started_at; nil while unfinished.
	DurationSeconds *float64 `json:"duration_seconds"`
}

// runColumns are the columns scanRun reads, in its order, of a FROM runs.
// The units are the ledger's (as spend_by_run and the report count them):
// runs.units is written when a run ends, so a run killed mid-way has
// none there while the ledger holds what it spent.
const runColumns = `run_id, job, trigger, status, attempts, cap_window, host, started_at, resumed_at, finished_at, scheduled_for, rows,
	coalesce((SELECT sum(coalesce(l.spent, l.reserved)) FROM unit_ledger l WHERE l.run_id = runs.run_id)::bigint, units), error`

func scanRun(row pgx.Row) (runRecord, error) {
	var r runRecord
	err := row.Scan(&r.RunID, &r.Job, &r.Trigger, &r.Status, &r.Attempts, &r.CapWindow, &r.Host, &r.StartedAt,
		&r.ResumedAt, &r.FinishedAt, &r.ScheduledFor, &r.Rows, &r.Units, &r.Error)
	if err != nil {
		return r, err
	}
	r.StartedAt = r.StartedAt.UTC()
	for _, t := range []*time.Time{r.ResumedAt, r.FinishedAt, r.ScheduledFor} {
		if t != nil {
			*t = t.UTC()
		}
	}
	if r.FinishedAt != nil {
		d := r.FinishedAt.Sub(r.StartedAt).Seconds()
		r.DurationSeconds = &d
	}
	return r, nil
}

// taskRecord is one row of task_checkpoints.
type taskRecord struct {
	Task       string     `json:"task"`
	Endpoint   string     `json:"endpoint"`
	Name       string     `json:"name"`
	Month      *time.Time `json:"month"`
	Status     string     `json:"status"`
	Pages      int        `json:"pages"`
	Rows       int64      `json:"rows"`
	Rejected   int64      `json:"rejected"`
	Units      int64      `json:"units"`
	NextOffset int64      `json:"next_offset"`
	UpdatedAt  time.Time  `json:"updated_at"`
	Error      *string    `json:"error"`
	// HeldBy and HeldUnits are, for a held task, the run whose fetch it
	// holds and what buying it again would have cost.
	HeldBy    *int64 `json:"held_by,omitempty"`
	HeldUnits *int64 `json:"held_units,omitempty"`
}

// ledgerSummary is what unit_ledger holds for one run.
type ledgerSummary struct {
	Requests int64 `json:"requests"`
	Reserved int64 `json:"reserved"`
	// Spent sums the settled requests only.
	Spent int64 `json:"spent"`
	// Unsettled counts the requests whose spent is NULL.
	Unsettled int64 `json:"unsettled"`
}

// runDetail is what etl runs show prints.
type runDetail struct {
	Run   runRecord    `json:"run"`
	Tasks []taskRecord `json:"tasks"`
	// Tables is what the run loaded per table (the view run_tables), over
	// every attempt; empty for a run from before migration 0011.
	Tables []tableLoad   `json:"tables"`
	Ledger ledgerSummary `json:"ledger"`
	// Counts is how many tasks had each status, and HeldUnits what the
	// held ones would have cost to buy again: of Tasks, or for a
	// compacted run, as they were before compaction.
	Counts    map[string]int64 `json:"task_counts"`
	HeldUnits int64            `json:"held_units"`
	// CompactedAt is when retention (keep_run_detail) compacted the run's
	// bookkeeping: Tasks then holds only what it kept (failures,
	// refusals, each task's latest fetch); nil while whole.
	CompactedAt *time.Time `json:"compacted_at,omitempty"`
	// Cost is what the run's units cost at the unit_price of the job spec
	// (--jobs); absent without one, or while the run has no units yet.
	Cost *money.Cost `json:"cost,omitempty"`
	// price is that unit_price, nil without one; priceFrom the file
	// stating it.
	price     *money.Price
	priceFrom string
}

// showRun prints run id with its tasks and its ledger.
func (e *env) showRun(ctx context.Context, o runsOptions, id int64) error {
	f, err := newTaskFilter(o.statuses, o.task)
	if err != nil {
		return usageError(err)
	}
	pool, err := e.connectReader(ctx, o.readURL, o.databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	// One snapshot, so a run still going shows tasks and a ledger that
	// agree with each other.
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("reading run %d: %w", id, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	d, err := readRun(ctx, tx, id)
	if err != nil {
		return err
	}
	if d.price, err = e.unitPrice(o.jobs, o.jobsSet); err != nil {
		return err
	}
	d.priceFrom = o.jobs
	if d.price != nil && d.Run.Units != nil {
		d.Cost = ptr(d.price.Of(*d.Run.Units))
	}
	var out strings.Builder
	if o.json {
		if f.set() {
			d.Tasks = f.keep(d.Tasks)
		}
		if err := writeIndentedJSON(&out, d); err != nil {
			return err
		}
	} else {
		writeRunDetail(&out, d, f)
	}
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

// unitsCost is " (3.57 USD)" beside a count of units; "" without a price
// or a count.
func unitsCost(p *money.Price, units *int64) string {
	if units == nil {
		return ""
	}
	return money.Beside(p, *units)
}

// readRun reads run id, its checkpoints in natural order of their names
// (see naturalCompare) and its ledger.
func readRun(ctx context.Context, q pgx.Tx, id int64) (*runDetail, error) {
	r, err := scanRun(q.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE run_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("run %d not found (etl runs lists the recent ones)", id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading run %d: %w", id, pipeline.NotMigrated(err))
	}
	d := &runDetail{Run: r}
	rows, err := q.Query(ctx, `SELECT task, endpoint, name, month, status, pages, rows, rejected, units, next_offset, updated_at, error,
			held_by, held_units
		FROM task_checkpoints WHERE run_id = $1 ORDER BY name, task`, id)
	if err != nil {
		return nil, fmt.Errorf("reading the tasks of run %d: %w", id, pipeline.NotMigrated(err))
	}
	d.Tasks, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (taskRecord, error) {
		var t taskRecord
		err := row.Scan(&t.Task, &t.Endpoint, &t.Name, &t.Month, &t.Status, &t.Pages, &t.Rows, &t.Rejected,
			&t.Units, &t.NextOffset, &t.UpdatedAt, &t.Error, &t.HeldBy, &t.HeldUnits)
		t.UpdatedAt = t.UpdatedAt.UTC()
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the tasks of run %d: %w", id, err)
	}
	if d.Tasks == nil {
		d.Tasks = []taskRecord{}
	}
	if err := q.QueryRow(ctx, `SELECT compacted_at FROM runs WHERE run_id = $1`, id).Scan(&d.CompactedAt); err != nil {
		return nil, fmt.Errorf("reading run %d: %w", id, pipeline.NotMigrated(err))
	}
	d.Counts = map[string]int64{}
	if d.CompactedAt != nil {
		t := d.CompactedAt.UTC()
		d.CompactedAt = &t
		rows, err := q.Query(ctx, `SELECT status, tasks, held_units FROM run_task_counts WHERE run_id = $1`, id)
		if err != nil {
			return nil, fmt.Errorf("reading the task counts of run %d: %w", id, err)
		}
		var (
			st       string
			n, units int64
		)
		_, err = pgx.ForEachRow(rows, []any{&st, &n, &units}, func() error {
			d.Counts[st] = n
			if st == "held" {
				d.HeldUnits = units
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading the task counts of run %d: %w", id, err)
		}
	} else {
		for _, t := range d.Tasks {
			d.Counts[t.Status]++
			if t.Status == "held" && t.HeldUnits != nil {
				d.HeldUnits = catalog.AddUnits(d.HeldUnits, *t.HeldUnits)
			}
		}
	}
	slices.SortStableFunc(d.Tasks, func(a, b taskRecord) int {
		if c := naturalCompare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Task, b.Task)
	})
	rows, err = q.Query(ctx, `SELECT table_name, tasks, rows, inserted, updated, unchanged, quarantined
		FROM run_tables WHERE run_id = $1 ORDER BY table_name`, id)
	if err != nil {
		return nil, fmt.Errorf("reading what run %d loaded per table: %w", id, pipeline.NotMigrated(err))
	}
	d.Tables, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (tableLoad, error) {
		var l tableLoad
		err := row.Scan(&l.Table, &l.Tasks, &l.Rows, &l.Inserted, &l.Updated, &l.Unchanged, &l.Quarantined)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading what run %d loaded per table: %w", id, err)
	}
	if d.Tables == nil {
		d.Tables = []tableLoad{}
	}
	// A row compacted by retention stands for requests requests.
	err = q.QueryRow(ctx, `SELECT coalesce(sum(requests), 0), coalesce(sum(reserved), 0), coalesce(sum(spent), 0), count(*) FILTER (WHERE spent IS NULL)
		FROM unit_ledger WHERE run_id = $1`, id).Scan(&d.Ledger.Requests, &d.Ledger.Reserved, &d.Ledger.Spent, &d.Ledger.Unsettled)
	if err != nil {
		return nil, fmt.Errorf("reading the ledger of run %d: %w", id, err)
	}
	return d, nil
}

// heldText says how many tasks of a run were held (not sent: the
// warehouse held their data) and what buying them again would have cost.
func heldText(d *runDetail) string {
	n, units := d.Counts["held"], d.HeldUnits
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%d tasks not sent: the warehouse held their data (buying them again would have cost %d units)", n, units)
}

func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeRunDetail writes the run's columns, one per line, with its tasks
// counted by status; what it loaded per table and its ledger; then its
// tasks: those f keeps, or without a filter as runShowAll says.
func writeRunDetail(w io.Writer, d *runDetail, f taskFilter) {
	r := d.Run
	errText := "-"
	if r.Error != nil {
		// In full: continuation lines indented under the first.
		errText = strings.ReplaceAll(strings.TrimRight(*r.Error, "\n"), "\n", "\n"+strings.Repeat(" ", 15))
	}
	host := "-"
	if r.Host != nil {
		host = *r.Host
	}
	for _, kv := range [][2]string{
		{"run", strconv.FormatInt(r.RunID, 10)},
		{"job", shownName(r.Job)},
		{"trigger", r.Trigger},
		{"status", r.Status},
		{"tasks", statusCounts(d.Counts)},
		{"attempts", strconv.Itoa(r.Attempts)},
		{"cap_window", strconv.Itoa(r.CapWindow)},
		{"host", host},
		{"started_at", stamp(&r.StartedAt)},
		{"resumed_at", stamp(r.ResumedAt)},
		{"finished_at", stamp(r.FinishedAt)},
		{"duration", runDuration(r)},
		{"scheduled_for", stamp(r.ScheduledFor)},
		{"rows", countOrDash(r.Rows)},
		{"units", countOrDash(r.Units) + unitsCost(d.price, r.Units)},
		{"held", heldText(d)},
		{"error", errText},
	} {
		fmt.Fprintf(w, "%-13s  %s\n", kv[0], kv[1])
	}
	fmt.Fprintln(w)
	if len(d.Tables) == 0 {
		fmt.Fprintln(w, "no counts per table (a run recorded before migration 0011, or one that loaded nothing)")
	} else {
		fmt.Fprintln(w, "loaded per table, over every attempt of the run:")
		writeTableLoads(w, d.Tables)
	}
	l := d.Ledger
	fmt.Fprintf(w, "\nledger: %d requests, %d units reserved, %d units spent, %d requests unsettled\n",
		l.Requests, l.Reserved, l.Spent, l.Unsettled)
	if d.Cost != nil {
		fmt.Fprintln(w, pastPriceNote(d.price, d.priceFrom))
	}

	fmt.Fprintln(w)
	compacted := compactedText(d)
	if len(d.Tasks) == 0 {
		fmt.Fprintln(w, "no task checkpoints")
		if compacted != "" {
			fmt.Fprintln(w, compacted)
		}
		return
	}
	var shown []taskRecord
	switch {
	case f.set():
		shown = f.keep(d.Tasks)
	case len(d.Tasks) <= runShowAll:
		shown = d.Tasks
	default:
		shown = tasksThatMatter(d.Tasks)
	}
	if len(shown) == 0 {
		fmt.Fprintf(w, "no task matches %s\n", f)
	} else {
		table := [][]string{{"task", "status", "pages", "rows", "rejected", "units", "next_offset", "updated_at", "error"}}
		for _, t := range shown {
			table = append(table, []string{t.Name, t.Status, strconv.Itoa(t.Pages), strconv.FormatInt(t.Rows, 10),
				strconv.FormatInt(t.Rejected, 10), strconv.FormatInt(t.Units, 10), strconv.FormatInt(t.NextOffset, 10),
				stamp(&t.UpdatedAt), oneLine(t.Error)})
		}
		writeTable(w, table, []bool{false, false, true, true, true, true, true, false, false})
	}
	if hidden := notShown(d.Tasks, shown); hidden != "" {
		fmt.Fprintln(w, hidden)
	}
	if compacted != "" {
		fmt.Fprintln(w, compacted)
	}
}

// compactedText says, for a run whose bookkeeping retention compacted,
// how many of its tasks are counted but no longer listed; "" otherwise.
func compactedText(d *runDetail) string {
	if d.CompactedAt == nil {
		return ""
	}
	n := map[string]int64{}
	for st, c := range d.Counts {
		n[st] = c
	}
	for _, t := range d.Tasks {
		n[t.Status]--
	}
	var parts []string
	for _, st := range taskStatuses {
		if n[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("bookkeeping compacted on %s (retention keep_run_detail): every task is still listed", d.CompactedAt.Format(time.DateOnly))
	}
	return fmt.Sprintf("bookkeeping compacted on %s (retention keep_run_detail): %s tasks are counted above but no longer listed",
		d.CompactedAt.Format(time.DateOnly), strings.Join(parts, " and "))
}

// taskStatuses are the statuses of a task checkpoint, in the order etl
// runs show counts them.
var taskStatuses = []string{"done", "held", "failed", "skipped", "refused", "running"}

// runShowAll is how many tasks a run may have for etl runs show to list
// every one without a filter; past it, it lists runShowAll of the tasks
// that matter (tasksThatMatter) and counts the others.
const runShowAll = 20

// statusCounts renders how many tasks have each status: "300: 250 done,
// 20 held, 20 failed, 10 skipped, 0 refused, 0 running" (a status outside
// taskStatuses, from a newer build, follows).
func statusCounts(n map[string]int64) string {
	var other []string
	total := int64(0)
	for _, st := range slices.Sorted(maps.Keys(n)) {
		if !slices.Contains(taskStatuses, st) {
			other = append(other, st)
		}
		total += n[st]
	}
	parts := make([]string, 0, len(taskStatuses)+len(other))
	for _, st := range append(slices.Clone(taskStatuses), other...) {
		parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
	}
	return fmt.Sprintf("%d: %s", total, strings.Join(parts, ", "))
}

// tasksThatMatter picks, of a run's tasks (in natural order), at most
// runShowAll of those not done or held: failed first, then refused,
// running and skipped; in natural order.
func tasksThatMatter(tasks []taskRecord) []taskRecord {
	rank := map[string]int{"failed": 0, "refused": 1, "running": 2, "skipped": 3}
	var picked []int
	for i, t := range tasks {
		if t.Status != "done" && t.Status != "held" {
			picked = append(picked, i)
		}
	}
	slices.SortStableFunc(picked, func(a, b int) int {
		ra, ok := rank[tasks[a].Status]
		if !ok {
			ra = len(rank)
		}
		rb, ok := rank[tasks[b].Status]
		if !ok {
			rb = len(rank)
		}
		return ra - rb
	})
	picked = picked[:min(runShowAll, len(picked))]
	slices.Sort(picked)
	out := make([]taskRecord, len(picked))
	for k, i := range picked {
		out[k] = tasks[i]
	}
	return out
}

// notShown says how many of tasks shown leaves out, by status, and how to
// list them: "250 done and 20 held tasks not shown; --status done,held
// lists them"; "" when it shows every one.
func notShown(tasks, shown []taskRecord) string {
	if len(shown) == len(tasks) {
		return ""
	}
	n := map[string]int{}
	for _, t := range tasks {
		n[t.Status]++
	}
	for _, t := range shown {
		n[t.Status]--
	}
	var parts, statuses []string
	order := slices.Clone(taskStatuses)
	for _, st := range slices.Sorted(maps.Keys(n)) {
		if !slices.Contains(order, st) {
			order = append(order, st) // from a newer build
		}
	}
	for _, st := range order {
		if n[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
			statuses = append(statuses, st)
		}
	}
	list := strings.Join(parts, ", ")
	if k := len(parts); k > 1 {
		list = strings.Join(parts[:k-1], ", ") + " and " + parts[k-1]
	}
	return fmt.Sprintf("%s tasks not shown; --status %s lists them", list, strings.Join(statuses, ","))
}

// taskFilter keeps the tasks etl runs show --status and --task name.
type taskFilter struct {
	statuses []string
	// pattern is --task: found anywhere in the name, where * stands for
	// any characters and ? for one.
	pattern string
	glob    *regexp.Regexp
}

func newTaskFilter(statuses []string, pattern string) (taskFilter, error) {
	f := taskFilter{pattern: pattern}
	for _, st := range statuses {
		st = strings.TrimSpace(st)
		if !slices.Contains(taskStatuses, st) {
			return f, fmt.Errorf("--status must be one of %s, got %q", strings.Join(taskStatuses, ", "), st)
		}
		if !slices.Contains(f.statuses, st) {
			f.statuses = append(f.statuses, st)
		}
	}
	if strings.ContainsAny(pattern, "*?") {
		var re strings.Builder
		for _, r := range pattern {
			switch r {
			case '*':
				re.WriteString(`.*`)
			case '?':
				re.WriteString(`.`)
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		f.glob = regexp.MustCompile(re.String())
	}
	return f, nil
}

// set says whether --status or --task was given.
func (f taskFilter) set() bool { return len(f.statuses) > 0 || f.pattern != "" }

func (f taskFilter) match(t taskRecord) bool {
	if len(f.statuses) > 0 && !slices.Contains(f.statuses, t.Status) {
		return false
	}
	switch {
	case f.glob != nil:
		return f.glob.MatchString(t.Name)
	case f.pattern != "":
		return strings.Contains(t.Name, f.pattern)
	}
	return true
}

// keep returns the tasks f matches, in their order; never nil.
func (f taskFilter) keep(tasks []taskRecord) []taskRecord {
	out := []taskRecord{}
	for _, t := range tasks {
		if f.match(t) {
			out = append(out, t)
		}
	}
	return out
}

// String says the filter as the flags were given.
func (f taskFilter) String() string {
	var parts []string
	if len(f.statuses) > 0 {
		parts = append(parts, "--status "+strings.Join(f.statuses, ","))
	}
	if f.pattern != "" {
		parts = append(parts, "--task "+strconv.Quote(f.pattern))
	}
	return strings.Join(parts, " ")
}

// naturalCompare orders names as people count: runs of digits compare as
// numbers (n10 before n100, n9 before n10), the rest byte by byte; a
// number with leading zeros after its equal without.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			if c := cmp.Compare(da, db); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digits is the length of the run of ASCII digits s starts with.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// stamp renders a time in UTC, RFC 3339; nil is "-".
func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// countOrDash renders a nullable count; nil is "-".
func countOrDash(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

// runDuration renders finished_at - started_at; "-" while unfinished.
func runDuration(r runRecord) string {
	if r.FinishedAt == nil {
		return "-"
	}
	return r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()
}

// oneLine renders an error on one line, whole; nil is "".
func oneLine(s *string) string {
	if s == nil {
		return ""
	}
	return strings.Join(strings.Fields(*s), " ")
}

// firstLine renders the first line of an error, cut to at most n runes.
func firstLine(s *string, n int) string {
	if s == nil {
		return ""
	}
	line, _, more := strings.Cut(strings.TrimSpace(*s), "\n")
	line = strings.TrimSpace(line)
	if r := []rune(line); len(r) > n {
		line, more = string(r[:n-1]), true
	}
	if more {
		line += "…"
	}
	return line
}
