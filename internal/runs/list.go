package runs

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/internal/plain"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/migrations"
	"github.com/seoetl/etl/money"
)

// EndStatuses are the statuses a run ends with (as pipeline.Summary.Status
// reports them), in the order etl runs counts them.
var EndStatuses = []string{"succeeded", "partial", "failed", "interrupted"}

// RowStatuses are the statuses a row of runs may have (its check), in the
// order etl runs counts them: those a run ends with (EndStatuses), and
// running.
var RowStatuses = append(slices.Clip(EndStatuses), "running")

// ListedRun is one run as etl runs --json prints it: every column of
// runs, and with the spec's unit_price what its units cost.
type ListedRun struct {
	RunRow
	// Cost is what the run's units cost at today's unit_price; absent
	// without one, or while the run has no units yet.
	Cost *money.Cost `json:"cost,omitempty"`
}

// Listing is what etl runs prints: the newest runs of those the filters
// keep, and how many there are by status.
type Listing struct {
	// Runs are the runs listed, newest first; never nil.
	Runs []ListedRun
	// Counts is, per status, the runs of the job (ListQuery.Job), or of
	// every job; Total sums those ListQuery.Statuses keeps.
	Counts map[string]int64
	Total  int64
	// Price is today's unit_price, which the units show as money at;
	// nil: none.
	Price *money.Price
	// Query is what picked the runs.
	Query ListQuery
}

// ListQuery picks the runs etl runs lists.
type ListQuery struct {
	// Job keeps the runs of this job only; "" keeps every job.
	Job string
	// Statuses keeps the runs of these statuses (see Views.Statuses);
	// none keeps every one.
	Statuses []string
	// Limit is how many of the newest runs to list; 0 or less lists every
	// one.
	Limit int
}

// Statuses checks the statuses given to etl runs --status (each of
// RowStatuses, spaces around it trimmed) and returns them, each once.
func (v Views) Statuses(given []string) ([]string, error) {
	var statuses []string
	for _, st := range given {
		st = strings.TrimSpace(st)
		if !slices.Contains(RowStatuses, st) {
			return nil, fmt.Errorf("--status must be one of %s, got %s", strings.Join(RowStatuses, ", "), jobspec.Quote(st))
		}
		if !slices.Contains(statuses, st) {
			statuses = append(statuses, st)
		}
	}
	return statuses, nil
}

// List reads the newest runs q keeps from the warehouse of pool, and how
// many there are by status, in one snapshot, so that the counts agree
// with the runs listed; with a price, what each run's units cost.
func (v Views) List(ctx context.Context, pool *pgxpool.Pool, q ListQuery, price *money.Price) (*Listing, error) {
	limit := int64(q.Limit)
	if q.Limit <= 0 {
		limit = -1 // LIMIT NULL: every run
	}
	l := &Listing{Counts: map[string]int64{}, Price: price, Query: q}
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("reading the runs: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, `SELECT `+runColumns+` FROM runs
		WHERE ($1 = '' OR job = $1) AND (coalesce(cardinality($2::text[]), 0) = 0 OR status = ANY($2))
		ORDER BY started_at DESC, run_id DESC LIMIT nullif($3, -1)`, q.Job, q.Statuses, limit)
	if err != nil {
		return nil, fmt.Errorf("reading the runs: %w", migrations.NotMigrated(err))
	}
	l.Runs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ListedRun, error) {
		r, err := scanRun(row)
		lr := ListedRun{RunRow: r}
		if price != nil && r.Units != nil {
			c := price.Of(*r.Units)
			lr.Cost = &c
		}
		return lr, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the runs: %w", migrations.NotMigrated(err))
	}
	if l.Runs == nil {
		l.Runs = []ListedRun{}
	}
	rows, err = tx.Query(ctx, `SELECT status, count(*) FROM runs WHERE $1 = '' OR job = $1 GROUP BY status`, q.Job)
	if err != nil {
		return nil, fmt.Errorf("counting the runs: %w", err)
	}
	var st string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&st, &n}, func() error {
		l.Counts[st] = n
		if len(q.Statuses) == 0 || slices.Contains(q.Statuses, st) {
			l.Total += n
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("counting the runs: %w", err)
	}
	return l, nil
}

// WriteList writes the runs of l as a table, newest first; the
// scheduled-for column shows only when a run listed has one. When l holds
// fewer runs than the filters keep, a line counting them by status comes
// first and one saying how to list the others last; with a price, units
// have their cost beside them and a footnote says the price is today's.
func (v Views) WriteList(w io.Writer, l *Listing, specFile string) {
	job, statuses := l.Query.Job, l.Query.Statuses
	if len(l.Runs) == 0 {
		what := "no runs"
		if len(statuses) > 0 {
			what = "no " + strings.Join(statuses, " or ") + " runs"
		}
		if job != "" {
			what += " of job " + v.Name(job)
		}
		fmt.Fprintln(w, what)
		return
	}
	some := int64(len(l.Runs)) < l.Total
	if some {
		fmt.Fprintln(w, v.counts(l))
	}
	scheduled := false
	for _, r := range l.Runs {
		scheduled = scheduled || r.ScheduledFor != nil
	}
	head := []string{"run", "job", "trigger", "status", "attempts", "started", "finished", "duration", "rows", "units"}
	right := []bool{true, false, false, false, true, false, false, true, true, true}
	if scheduled {
		head = append(head, "scheduled for")
		right = append(right, false)
	}
	head = append(head, "error")
	right = append(right, false)
	table := [][]string{head}
	for _, r := range l.Runs {
		row := []string{strconv.FormatInt(r.RunID, 10), v.Name(r.Job), r.Trigger, r.Status, strconv.Itoa(r.Attempts),
			stamp(&r.StartedAt), stamp(r.FinishedAt), runDuration(r.RunRow), countOrDash(r.Rows),
			countOrDash(r.Units) + unitsCost(l.Price, r.Units)}
		if scheduled {
			row = append(row, stamp(r.ScheduledFor))
		}
		table = append(table, append(row, v.shownError(firstLine(r.Error, 100))))
	}
	plain.Table(w, table, right)
	if some {
		fmt.Fprintf(w, "%d of %d runs not shown; --limit N lists the newest N, --all every one", l.Total-int64(len(l.Runs)), l.Total)
		var pick []string
		if job == "" {
			pick = append(pick, "--job NAME")
		}
		if len(statuses) == 0 {
			pick = append(pick, "--status "+strings.Join(RowStatuses, "|"))
		}
		if len(pick) > 0 {
			fmt.Fprintf(w, ", %s picks some", strings.Join(pick, " or "))
		}
		fmt.Fprintln(w)
	}
	if l.Price != nil {
		fmt.Fprintln(w, money.PastNote(l.Price, specFile))
	}
}

// counts says how many runs there are by status, and how many of those
// the filters keep are shown: "1234 runs of job nightly: 1200 succeeded,
// 30 partial, 4 failed; the newest 20 of the 34 partial or failed below".
func (v Views) counts(l *Listing) string {
	job, statuses := l.Query.Job, l.Query.Statuses
	var all int64
	var parts []string
	order := slices.Clone(RowStatuses)
	for _, st := range slices.Sorted(maps.Keys(l.Counts)) {
		if !slices.Contains(order, st) {
			order = append(order, st) // from a newer build
		}
	}
	for _, st := range order {
		if n := l.Counts[st]; n > 0 {
			all += n
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	of := ""
	if job != "" {
		of = " of job " + v.Name(job)
	}
	kept := ""
	if len(statuses) > 0 {
		kept = " " + strings.Join(statuses, " or ")
	}
	return fmt.Sprintf("%d runs%s: %s; the newest %d of the %d%s below", all, of, strings.Join(parts, ", "), len(l.Runs), l.Total, kept)
}
