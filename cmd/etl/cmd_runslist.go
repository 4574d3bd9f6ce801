package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/money"
	"github.com/seoetl/etl/pipeline"
)

// rowStatuses are the statuses a row of runs may have (its check), in the
// order etl runs counts them: those a run ends with (runStatuses), and
// running.
var rowStatuses = append(slices.Clip(runStatuses), "running")

// runsListDefault is how many runs etl runs lists without --limit or
// --all: with its header, its two summary lines and the price's footnote,
// a screen.
const runsListDefault = 20

// listedRun is one run as etl runs --json prints it: every column of
// runs, and with the spec's unit_price what its units cost.
type listedRun struct {
	runRecord
	// Cost is what the run's units cost at today's unit_price; absent
	// without one, or while the run has no units yet.
	Cost *money.Cost `json:"cost,omitempty"`
}

// runsListing is what etl runs prints: the newest runs of those the
// filters keep, and how many there are by status.
type runsListing struct {
	runs []listedRun
	// counts is, per status, the runs of the job (--job), or of every
	// job; total sums those --status keeps.
	counts map[string]int64
	total  int64
	price  *money.Price
}

// listRuns prints the newest o.limit runs (every one with o.all) of o.job
// and o.runStatuses, if set; when not every one is shown, how many there
// are by status first and how to list the others after.
func (e *env) listRuns(ctx context.Context, o runsOptions) error {
	if o.limit < 1 {
		return usageError(fmt.Errorf("--limit must be at least 1, got %d", o.limit))
	}
	var statuses []string
	for _, st := range o.runStatuses {
		st = strings.TrimSpace(st)
		if !slices.Contains(rowStatuses, st) {
			return usageError(fmt.Errorf("--status must be one of %s, got %s", strings.Join(rowStatuses, ", "), jobspec.Quote(st)))
		}
		if !slices.Contains(statuses, st) {
			statuses = append(statuses, st)
		}
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
	limit := int64(o.limit)
	if o.all {
		limit = -1 // LIMIT NULL: every run
	}
	l := runsListing{counts: map[string]int64{}, price: price}
	// One snapshot, so the counts agree with the runs listed.
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("reading the runs: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, `SELECT `+runColumns+` FROM runs
		WHERE ($1 = '' OR job = $1) AND (coalesce(cardinality($2::text[]), 0) = 0 OR status = ANY($2))
		ORDER BY started_at DESC, run_id DESC LIMIT nullif($3, -1)`, o.job, statuses, limit)
	if err != nil {
		return fmt.Errorf("reading the runs: %w", pipeline.NotMigrated(err))
	}
	l.runs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (listedRun, error) {
		r, err := scanRun(row)
		lr := listedRun{runRecord: r}
		if price != nil && r.Units != nil {
			lr.Cost = ptr(price.Of(*r.Units))
		}
		return lr, err
	})
	if err != nil {
		return fmt.Errorf("reading the runs: %w", pipeline.NotMigrated(err))
	}
	rows, err = tx.Query(ctx, `SELECT status, count(*) FROM runs WHERE $1 = '' OR job = $1 GROUP BY status`, o.job)
	if err != nil {
		return fmt.Errorf("counting the runs: %w", err)
	}
	var st string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&st, &n}, func() error {
		l.counts[st] = n
		if len(statuses) == 0 || slices.Contains(statuses, st) {
			l.total += n
		}
		return nil
	}); err != nil {
		return fmt.Errorf("counting the runs: %w", err)
	}

	var out strings.Builder
	if o.json {
		if l.runs == nil {
			l.runs = []listedRun{}
		}
		if err := writeIndentedJSON(&out, l.runs); err != nil {
			return err
		}
	} else {
		writeRuns(&out, l, o.job, statuses, o.jobs)
	}
	// Errors come from the API and the database: redact them.
	_, _ = io.WriteString(e.stdout, e.redact.String(out.String()))
	return nil
}

// writeRuns writes the runs of l as a table, newest first; the
// scheduled-for column shows only when a run listed has one. When l holds
// fewer runs than the filters keep, a line counting them by status comes
// first and one saying how to list the others last; with a price, units
// have their cost beside them and a footnote says the price is today's.
func writeRuns(w io.Writer, l runsListing, job string, statuses []string, specFile string) {
	if len(l.runs) == 0 {
		what := "no runs"
		if len(statuses) > 0 {
			what = "no " + strings.Join(statuses, " or ") + " runs"
		}
		if job != "" {
			what += " of job " + shownName(job)
		}
		fmt.Fprintln(w, what)
		return
	}
	some := int64(len(l.runs)) < l.total
	if some {
		fmt.Fprintln(w, runCounts(l, job, statuses))
	}
	scheduled := false
	for _, r := range l.runs {
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
	for _, r := range l.runs {
		row := []string{strconv.FormatInt(r.RunID, 10), shownName(r.Job), r.Trigger, r.Status, strconv.Itoa(r.Attempts),
			stamp(&r.StartedAt), stamp(r.FinishedAt), runDuration(r.runRecord), countOrDash(r.Rows),
			countOrDash(r.Units) + unitsCost(l.price, r.Units)}
		if scheduled {
			row = append(row, stamp(r.ScheduledFor))
		}
		table = append(table, append(row, shownError(firstLine(r.Error, 100))))
	}
	writeTable(w, table, right)
	if some {
		fmt.Fprintf(w, "%d of %d runs not shown; --limit N lists the newest N, --all every one", l.total-int64(len(l.runs)), l.total)
		var pick []string
		if job == "" {
			pick = append(pick, "--job NAME")
		}
		if len(statuses) == 0 {
			pick = append(pick, "--status "+strings.Join(rowStatuses, "|"))
		}
		if len(pick) > 0 {
			fmt.Fprintf(w, ", %s picks some", strings.Join(pick, " or "))
		}
		fmt.Fprintln(w)
	}
	if l.price != nil {
		fmt.Fprintln(w, pastPriceNote(l.price, specFile))
	}
}

// runCounts says how many runs there are by status, and how many of those
// the filters keep are shown: "1234 runs of job nightly: 1200 succeeded,
// 30 partial, 4 failed; the newest 20 of the 34 partial or failed below".
func runCounts(l runsListing, job string, statuses []string) string {
	var all int64
	var parts []string
	order := slices.Clone(rowStatuses)
	for _, st := range slices.Sorted(maps.Keys(l.counts)) {
		if !slices.Contains(order, st) {
			order = append(order, st) // from a newer build
		}
	}
	for _, st := range order {
		if n := l.counts[st]; n > 0 {
			all += n
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	of := ""
	if job != "" {
		of = " of job " + shownName(job)
	}
	kept := ""
	if len(statuses) > 0 {
		kept = " " + strings.Join(statuses, " or ")
	}
	return fmt.Sprintf("%d runs%s: %s; the newest %d of the %d%s below", all, of, strings.Join(parts, ", "), len(l.runs), l.total, kept)
}

// pastPriceNote is the footnote under units of the past shown as money:
// they are priced at today's unit_price, which may not be what they cost.
func pastPriceNote(p *money.Price, specFile string) string {
	return fmt.Sprintf("money at today's unit price, the past's too: %s (unit_price of %s)", p, specFile)
}

// shownError shows an error's line as it is, or quoted (jobspec.Quote)
// when it holds what is not graphic or is not UTF-8, so that it cannot
// reach the terminal.
func shownError(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) }) {
		return jobspec.Quote(s)
	}
	return s
}
