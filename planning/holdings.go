package planning

import (
	"context"
	"fmt"
	"time"

	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/migrations"
)

// This file decides what a run need not buy: a line paid for is never
// bought again, nor what the warehouse already holds fresh.
//
//   - Fresh: a task whose same request (Task.Key: endpoint, what it is
//     about, its options; and the month its rows describe) was done by a
//     run that started less than the task's max_age ago is held, not
//     sent.
//   - Closed months: a past month's keyword metrics and a past month of
//     summary history do not change once the month has ended (spec 4.4:
//     the latest snapshot available for that month). Fetched after the
//     month ended, they are held for good: keyword metrics of such a
//     month are not asked again, and summary history asks only for the
//     months it does not hold that way, and the current one.
//
// Both rest on the task_checkpoints of done tasks, and on the warehouse
// still holding rows of the task (a table emptied by hand is bought
// again). --refetch (RunOptions.Refetch, PlanOptions.Refetch) buys all of
// it again for one run.

// Held says why a task was not sent: the warehouse holds what it would
// buy.
type Held struct {
	// Closed says the data is of a month that had ended when it was
	// fetched; otherwise it was fetched within the task's max_age.
	Closed bool `json:"closed_month"`
	// RunID is the run that bought it, Started when that run started
	// (what max_age is measured from), Finished when the task was done.
	RunID    int64     `json:"by_run"`
	Started  time.Time `json:"run_started_at"`
	Finished time.Time `json:"fetched_at"`
	// MaxAge is the task's max_age.
	MaxAge time.Duration `json:"-"`
	// Units is what the fetch it holds cost: what buying it again would.
	Units int64 `json:"units_to_rebuy"`
	Rows  int64 `json:"rows"`
}

// Reason says in words why the task is held, measured at now.
func (h Held) Reason(now time.Time) string {
	if h.Closed {
		return fmt.Sprintf("held: run %d fetched it on %s, after its month ended (a closed month does not change); --refetch buys it again (%d units)",
			h.RunID, h.Finished.UTC().Format("2006-01-02"), h.Units)
	}
	ago := "less than a minute ago"
	if d := now.Sub(h.Started).Round(time.Minute); d > 0 {
		ago = jobspec.FormatAge(d) + " ago"
	}
	return fmt.Sprintf("held: run %d fetched it %s, within max_age %s; --refetch buys it again (%d units)",
		h.RunID, ago, jobspec.FormatAge(h.MaxAge), h.Units)
}

// lastDone is the latest done checkpoint of a task key.
type lastDone struct {
	runID             int64
	started, finished time.Time
	units, rows       int64
	maxRows           *int
	// since is the watermark an incremental fetch asked past: it bought
	// only the rows first seen after it (nil: all rows).
	since *time.Time
	// askedFrom and askedTo are the range of months a summary task asked
	// for; nil for another.
	askedFrom, askedTo *time.Time
}

// Holdings finds the tasks of tasks whose data the warehouse holds: held
// maps their index to why. It also narrows the summary tasks that are not
// held to the months the warehouse does not hold as closed (Task.AskFrom,
// Task.HeldMonths). status is a task's checkpoint in the run etl run takes
// up ("" for none): a task done or refused there is not looked at, and
// one under way there (running, failed, skipped) is narrowed as it was,
// not held; with refetch, none is held or narrowed.
func Holdings(ctx context.Context, q runs.Querier, tasks []jobspec.Task, now time.Time, refetch bool, status func(jobspec.Task) string) (map[int]Held, error) {
	held := map[int]Held{}
	if refetch {
		return held, nil
	}
	var keys, ranged []string
	taskKeys := make([]string, len(tasks)) // "" for a task not looked at
	for i, t := range tasks {
		if s := status(t); t.Listings != nil || s == "done" || s == "refused" {
			continue
		}
		taskKeys[i] = t.Key()
		keys = append(keys, taskKeys[i])
		if t.Narrows() {
			ranged = append(ranged, taskKeys[i])
		}
	}
	if len(keys) == 0 {
		return held, nil
	}
	last, err := lastDones(ctx, q, keys)
	if err != nil {
		return nil, err
	}
	closed, err := closedMonths(ctx, q, ranged)
	if err != nil {
		return nil, err
	}
	for i := range tasks {
		if taskKeys[i] == "" {
			continue
		}
		h, err := hold(ctx, q, &tasks[i], status(tasks[i]), last, taskKeys[i], closed[taskKeys[i]], now)
		if err != nil {
			return nil, err
		}
		if h != nil {
			held[i] = *h
		}
	}
	return held, nil
}

// fresh reports whether the task's latest fetch d is fresh at now: done
// by a run that started less than max_age ago, of the same month's data,
// and asked for as many rows as the task would.
func fresh(t jobspec.Task, d lastDone, now time.Time) bool {
	age := now.Sub(d.started)
	if age < 0 {
		// Stamped later than now: a clock that ran ahead, or another
		// host's. A few seconds of skew between hosts are age as well;
		// a stamp more than max_age ahead is no evidence of freshness.
		age = -age
	}
	if t.MaxAge <= 0 || age >= t.MaxAge {
		return false
	}
	if t.Keyword == "" && !load.MonthStart(d.started).Equal(load.MonthStart(t.Month)) {
		return false // its rows are of another month than the task's
	}
	if d.maxRows != nil && d.rows >= int64(*d.maxRows) && (t.Spec.MaxRows == 0 || t.Spec.MaxRows > *d.maxRows) {
		return false // it stopped at a max_rows lower than the task's
	}
	if d.since != nil && t.Spec.Incremental == "" {
		// An incremental pull (of another job: the key leaves out the
		// watermark) bought only the rows past its watermark; this task
		// asks for them all.
		return false
	}
	return true
}

// covered reports whether the latest fetch d of a summary task, with the
// closed months held before it, covers every month of the task's range: a
// limit raised since (more months) is not held for max_age. Any other
// task is covered.
func covered(t jobspec.Task, d lastDone, closed map[time.Time]bool) bool {
	from, to, ok := t.AskedRange()
	if !ok {
		return true
	}
	if d.askedFrom == nil || d.askedTo == nil {
		return false // asked before the ranges were recorded
	}
	for m := from; !m.After(to); m = m.AddDate(0, 1, 0) {
		if closed[m] || (!m.Before(load.MonthStart(*d.askedFrom)) && !m.After(load.MonthStart(*d.askedTo))) {
			continue
		}
		return false
	}
	return true
}

// holds reports whether the warehouse holds rows of the task in month
// (any month when zero).
func holds(ctx context.Context, q runs.Querier, t jobspec.Task, month time.Time) (bool, error) {
	var a load.About
	switch {
	case t.Target != nil:
		a = load.About{URL: t.Target.URL, Scope: t.Target.Scope}
	case t.Set != nil:
		a = load.About{Set: t.Set.Name, Scope: t.Set.Scope, SetURLs: t.Set.URLs}
	default:
		a = load.About{Context: []any{t.Keyword, t.Country}}
	}
	return load.HoldsAbout(ctx, q, t.Endpoint, a, month)
}

// lastDones reads the latest done checkpoint of each task key.
func lastDones(ctx context.Context, q runs.Querier, keys []string) (map[string]lastDone, error) {
	last := map[string]lastDone{}
	// One index probe per task (task_checkpoints_done_idx), not a sort
	// of every done checkpoint of the job's history (DISTINCT ON read
	// them all: 3.4 s for 12,000 tasks after 120 nightly runs).
	rows, err := q.Query(ctx, `SELECT k.task, c.run_id, c.started_at, c.updated_at, c.units, c.rows, c.max_rows,
			c.asked_from, c.asked_to, c.since
		FROM unnest($1::text[]) k(task)
		CROSS JOIN LATERAL (
			SELECT c.run_id, r.started_at, c.updated_at, c.units, c.rows, c.max_rows, c.asked_from, c.asked_to, c.since
			FROM task_checkpoints c JOIN runs r USING (run_id)
			WHERE c.task = k.task AND c.status = 'done' AND r.trigger <> 'probe'
			ORDER BY c.updated_at DESC LIMIT 1) c`, keys)
	if err != nil {
		return nil, fmt.Errorf("reading what earlier runs fetched: %w", migrations.NotMigrated(err))
	}
	for rows.Next() {
		var key string
		var d lastDone
		if err := rows.Scan(&key, &d.runID, &d.started, &d.finished, &d.units, &d.rows, &d.maxRows, &d.askedFrom, &d.askedTo, &d.since); err != nil {
			return nil, migrations.NotMigrated(err)
		}
		last[key] = d
	}
	if err := rows.Err(); err != nil {
		return nil, migrations.NotMigrated(err)
	}
	return last, nil
}

// closedMonths reads the closed months each ranged request holds
// (ClosedMonthsOf), and those compaction kept of the checkpoints it
// deleted.
func closedMonths(ctx context.Context, q runs.Querier, ranged []string) (map[string]map[time.Time]bool, error) {
	closed := map[string]map[time.Time]bool{}
	if len(ranged) == 0 {
		return closed, nil
	}
	rows, err := q.Query(ctx, `SELECT c.task, m::date `+runs.ClosedMonthsOf+` AND c.task = ANY($1)
		UNION SELECT task, month FROM task_closed_months WHERE task = ANY($1)`, ranged)
	if err != nil {
		return nil, fmt.Errorf("reading the months earlier runs fetched: %w", migrations.NotMigrated(err))
	}
	for rows.Next() {
		var key string
		var m time.Time
		if err := rows.Scan(&key, &m); err != nil {
			return nil, err
		}
		if closed[key] == nil {
			closed[key] = map[time.Time]bool{}
		}
		closed[key][load.MonthStart(m)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return closed, nil
}

// hold says whether the warehouse holds task t (nil: it does not), whose
// checkpoint in the run taken up is s, by its latest done fetch (in last,
// under key) and the closed months its request holds; a summary task it
// does not hold whole is narrowed to the months it does not hold as
// closed.
func hold(ctx context.Context, q runs.Querier, t *jobspec.Task, s string, last map[string]lastDone, key string, closed map[time.Time]bool, now time.Time) (*Held, error) {
	cur := load.MonthStart(now)
	canHold := s == "" || s == "held" // not a task under way
	d, ok := last[key]
	var h *Held
	if ok {
		h = &Held{RunID: d.runID, Started: d.started, Finished: d.finished, MaxAge: t.MaxAge, Units: d.units, Rows: d.rows}
	}
	switch {
	case canHold && ok && fresh(*t, d, now) && covered(*t, d, closed):
		// Held, as below.
	case canHold && ok && t.Keyword != "" && t.Month.Before(cur) && !d.finished.Before(t.Month.AddDate(0, 1, 0)):
		h.Closed = true
	case t.Narrows():
		all := t.Narrow(closed, cur)
		if all && ok && canHold {
			h.Closed = true
			break // held, as below
		}
		if all {
			t.AskFrom, t.HeldMonths = time.Time{}, 0 // under way: it goes on as it was
		}
		if !t.AskFrom.IsZero() {
			// Narrowed: only while the warehouse still holds rows
			// of the target (a table emptied by hand is bought again).
			holds, err := holds(ctx, q, *t, time.Time{})
			if err != nil {
				return nil, err
			}
			if !holds {
				t.AskFrom, t.HeldMonths = time.Time{}, 0
			}
		}
		return nil, nil
	default:
		return nil, nil
	}
	if d.rows > 0 {
		month := t.Month
		if t.Narrows() {
			month = time.Time{} // its rows are of many months
		}
		holds, err := holds(ctx, q, *t, month)
		if err != nil {
			return nil, err
		}
		if !holds {
			t.AskFrom, t.HeldMonths = time.Time{}, 0
			return nil, nil // the rows it bought are gone: buy them again
		}
	}
	return h, nil
}
