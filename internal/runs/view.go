package runs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/plain"
	"github.com/seoetl/etl/migrations"
	"github.com/seoetl/etl/money"
)

// Views reads the runs of the warehouse and shows them: what etl runs and
// etl runs show print. What they borrow from the job spec's package comes
// in as functions, so that this package does not import pipeline.
type Views struct {
	// Name shows a job's name as every output of etl shows it: as it is,
	// or quoted when it could mislead (cmd/etl's shownName). Required.
	Name func(string) string
}

// RunRow is one row of runs, as etl runs prints it.
type RunRow struct {
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

func scanRun(row pgx.Row) (RunRow, error) {
	var r RunRow
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

// TaskRow is one row of task_checkpoints.
type TaskRow struct {
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

// LedgerTotals is what unit_ledger holds for one run.
type LedgerTotals struct {
	Requests int64 `json:"requests"`
	Reserved int64 `json:"reserved"`
	// Spent sums the settled requests only.
	Spent int64 `json:"spent"`
	// Unsettled counts the requests whose spent is NULL.
	Unsettled int64 `json:"unsettled"`
}

// Detail is one run as etl runs show prints it.
type Detail struct {
	Run   RunRow    `json:"run"`
	Tasks []TaskRow `json:"tasks"`
	// Tables is what the run loaded per table (the view run_tables), over
	// every attempt; empty for a run from before migration 0011.
	Tables []TableLoad  `json:"tables"`
	Ledger LedgerTotals `json:"ledger"`
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

// TableLoad is what a run loaded into one table, over every attempt of the
// run: rows received (as the run's totals count them) = inserted +
// updated + unchanged + quarantined.
type TableLoad struct {
	Table       string `json:"table"`
	Tasks       int    `json:"tasks"`
	Rows        int64  `json:"rows"`
	Inserted    int64  `json:"inserted"`
	Updated     int64  `json:"updated"`
	Unchanged   int64  `json:"unchanged"`
	Quarantined int64  `json:"quarantined"`
}

// WriteTableLoads writes loads as a table.
func WriteTableLoads(w io.Writer, loads []TableLoad) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "table\trows\tinserted\tupdated\tunchanged\tquarantined\t")
	for _, l := range loads {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", l.Table, l.Rows, l.Inserted, l.Updated, l.Unchanged, l.Quarantined)
	}
	tw.Flush()
}

// Show reads run id of the warehouse of pool, with its tasks in natural
// order of their names (see naturalCompare), what it loaded per table and
// its ledger, in one snapshot: a run still going shows tasks and a ledger
// that agree with each other.
func (v Views) Show(ctx context.Context, pool *pgxpool.Pool, id int64) (*Detail, error) {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("reading run %d: %w", id, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE run_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("run %d not found (etl runs lists the recent ones)", id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading run %d: %w", id, migrations.NotMigrated(err))
	}
	d := &Detail{Run: r}
	for _, read := range []func(context.Context, pgx.Tx, *Detail) error{v.readTasks, v.readCounts, v.readTables, readLedger} {
		if err := read(ctx, tx, d); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// readTasks reads the checkpoints of run d, in natural order of their
// names.
func (v Views) readTasks(ctx context.Context, q pgx.Tx, d *Detail) error {
	id := d.Run.RunID
	rows, err := q.Query(ctx, `SELECT task, endpoint, name, month, status, pages, rows, rejected, units, next_offset, updated_at, error,
			held_by, held_units
		FROM task_checkpoints WHERE run_id = $1 ORDER BY name, task`, id)
	if err != nil {
		return fmt.Errorf("reading the tasks of run %d: %w", id, migrations.NotMigrated(err))
	}
	d.Tasks, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (TaskRow, error) {
		var t TaskRow
		err := row.Scan(&t.Task, &t.Endpoint, &t.Name, &t.Month, &t.Status, &t.Pages, &t.Rows, &t.Rejected,
			&t.Units, &t.NextOffset, &t.UpdatedAt, &t.Error, &t.HeldBy, &t.HeldUnits)
		t.UpdatedAt = t.UpdatedAt.UTC()
		return t, err
	})
	if err != nil {
		return fmt.Errorf("reading the tasks of run %d: %w", id, err)
	}
	if d.Tasks == nil {
		d.Tasks = []TaskRow{}
	}
	return nil
}

// readCounts reads when run d was compacted and counts its tasks by
// status: those read, or for a compacted run, as they were before
// compaction (run_task_counts). Then it sorts the tasks read.
func (v Views) readCounts(ctx context.Context, q pgx.Tx, d *Detail) error {
	id := d.Run.RunID
	if err := q.QueryRow(ctx, `SELECT compacted_at FROM runs WHERE run_id = $1`, id).Scan(&d.CompactedAt); err != nil {
		return fmt.Errorf("reading run %d: %w", id, migrations.NotMigrated(err))
	}
	d.Counts = map[string]int64{}
	if d.CompactedAt != nil {
		t := d.CompactedAt.UTC()
		d.CompactedAt = &t
		rows, err := q.Query(ctx, `SELECT status, tasks, held_units FROM run_task_counts WHERE run_id = $1`, id)
		if err != nil {
			return fmt.Errorf("reading the task counts of run %d: %w", id, err)
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
			return fmt.Errorf("reading the task counts of run %d: %w", id, err)
		}
	} else {
		for _, t := range d.Tasks {
			d.Counts[t.Status]++
			if t.Status == "held" && t.HeldUnits != nil {
				d.HeldUnits = catalog.AddUnits(d.HeldUnits, *t.HeldUnits)
			}
		}
	}
	slices.SortStableFunc(d.Tasks, func(a, b TaskRow) int {
		if c := naturalCompare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Task, b.Task)
	})
	return nil
}

// readTables reads what run d loaded per table (run_tables).
func (v Views) readTables(ctx context.Context, q pgx.Tx, d *Detail) error {
	id := d.Run.RunID
	rows, err := q.Query(ctx, `SELECT table_name, tasks, rows, inserted, updated, unchanged, quarantined
		FROM run_tables WHERE run_id = $1 ORDER BY table_name`, id)
	if err != nil {
		return fmt.Errorf("reading what run %d loaded per table: %w", id, migrations.NotMigrated(err))
	}
	d.Tables, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (TableLoad, error) {
		var l TableLoad
		err := row.Scan(&l.Table, &l.Tasks, &l.Rows, &l.Inserted, &l.Updated, &l.Unchanged, &l.Quarantined)
		return l, err
	})
	if err != nil {
		return fmt.Errorf("reading what run %d loaded per table: %w", id, err)
	}
	if d.Tables == nil {
		d.Tables = []TableLoad{}
	}
	return nil
}

// readLedger sums what unit_ledger holds for run d.
func readLedger(ctx context.Context, q pgx.Tx, d *Detail) error {
	// A row compacted by retention stands for requests requests.
	err := q.QueryRow(ctx, `SELECT coalesce(sum(requests), 0), coalesce(sum(reserved), 0), coalesce(sum(spent), 0), count(*) FILTER (WHERE spent IS NULL)
		FROM unit_ledger WHERE run_id = $1`, d.Run.RunID).Scan(&d.Ledger.Requests, &d.Ledger.Reserved, &d.Ledger.Spent, &d.Ledger.Unsettled)
	if err != nil {
		return fmt.Errorf("reading the ledger of run %d: %w", d.Run.RunID, err)
	}
	return nil
}

// Priced prices the run's units at p, the unit_price of the job spec in
// the file from; p nil leaves them unpriced.
func (d *Detail) Priced(p *money.Price, from string) {
	d.price, d.priceFrom = p, from
	if p != nil && d.Run.Units != nil {
		c := p.Of(*d.Run.Units)
		d.Cost = &c
	}
}

// Kept is the run with the tasks f keeps (every task without a filter):
// what etl runs show --json prints.
func (d *Detail) Kept(f TaskFilter) *Detail {
	if !f.Set() {
		return d
	}
	k := *d
	k.Tasks = f.Keep(d.Tasks)
	return &k
}

// heldText says how many tasks of a run were held (not sent: the
// warehouse held their data) and what buying them again would have cost.
func heldText(d *Detail) string {
	n, units := d.Counts["held"], d.HeldUnits
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%d tasks not sent: the warehouse held their data (buying them again would have cost %d units)", n, units)
}

// WriteDetail writes the run's columns, one per line, with its tasks
// counted by status; what it loaded per table and its ledger; then its
// tasks: those f keeps, or without a filter as runShowAll says.
func (v Views) WriteDetail(w io.Writer, d *Detail, f TaskFilter) {
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
		{"job", v.Name(r.Job)},
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
		WriteTableLoads(w, d.Tables)
	}
	l := d.Ledger
	fmt.Fprintf(w, "\nledger: %d requests, %d units reserved, %d units spent, %d requests unsettled\n",
		l.Requests, l.Reserved, l.Spent, l.Unsettled)
	if d.Cost != nil {
		fmt.Fprintln(w, money.PastNote(d.price, d.priceFrom))
	}

	writeTasks(w, d, f)
}

// writeTasks writes the tasks of run d: those f keeps, or without a
// filter as runShowAll says; then what is not shown, and what retention
// compacted.
func writeTasks(w io.Writer, d *Detail, f TaskFilter) {
	fmt.Fprintln(w)
	compacted := compactedText(d)
	if len(d.Tasks) == 0 {
		fmt.Fprintln(w, "no task checkpoints")
		if compacted != "" {
			fmt.Fprintln(w, compacted)
		}
		return
	}
	var shown []TaskRow
	switch {
	case f.Set():
		shown = f.Keep(d.Tasks)
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
		plain.Table(w, table, []bool{false, false, true, true, true, true, true, false, false})
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
func compactedText(d *Detail) string {
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
	for _, st := range TaskStatuses {
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

// TaskStatuses are the statuses of a task checkpoint, in the order etl
// runs show counts them.
var TaskStatuses = []string{"done", "held", "failed", "skipped", "refused", "running"}

// runShowAll is how many tasks a run may have for etl runs show to list
// every one without a filter; past it, it lists runShowAll of the tasks
// that matter (tasksThatMatter) and counts the others.
const runShowAll = 20

// statusCounts renders how many tasks have each status: "300: 250 done,
// 20 held, 20 failed, 10 skipped, 0 refused, 0 running" (a status outside
// TaskStatuses, from a newer build, follows).
func statusCounts(n map[string]int64) string {
	var other []string
	total := int64(0)
	for _, st := range slices.Sorted(maps.Keys(n)) {
		if !slices.Contains(TaskStatuses, st) {
			other = append(other, st)
		}
		total += n[st]
	}
	parts := make([]string, 0, len(TaskStatuses)+len(other))
	for _, st := range append(slices.Clone(TaskStatuses), other...) {
		parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
	}
	return fmt.Sprintf("%d: %s", total, strings.Join(parts, ", "))
}

// tasksThatMatter picks, of a run's tasks (in natural order), at most
// runShowAll of those not done or held: failed first, then refused,
// running and skipped; in natural order.
func tasksThatMatter(tasks []TaskRow) []TaskRow {
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
	out := make([]TaskRow, len(picked))
	for k, i := range picked {
		out[k] = tasks[i]
	}
	return out
}

// notShown says how many of tasks shown leaves out, by status, and how to
// list them: "250 done and 20 held tasks not shown; --status done,held
// lists them"; "" when it shows every one.
func notShown(tasks, shown []TaskRow) string {
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
	order := slices.Clone(TaskStatuses)
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
