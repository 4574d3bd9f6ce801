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

// HeldTasks is what the warehouse held for a plan's tasks (Holdings), kept
// for the run that follows the plan (pipeline.RunOptions.Holdings), so
// that holdings are read once per run: etl run plans for its progress
// display, then runs. The run takes them only while they are current (see
// Take); else it reads them again.
type HeldTasks struct {
	// at is when they were read; refetch, with --refetch.
	at      time.Time
	refetch bool
	// runs is the runs table as it stood before they were read: no run
	// under way, and this many runs and attempts.
	runs runsSeen
	// held and narrowed are by task key: a task held whole, and a summary
	// task narrowed to the months the warehouse does not hold as closed.
	held     map[string]Held
	narrowed map[string]narrowing
	// keys are the tasks looked at.
	keys map[string]bool
}

// narrowing is how Holdings narrowed a summary task (Task.AskFrom,
// Task.HeldMonths).
type narrowing struct {
	askFrom time.Time
	months  int
}

// runsSeen is what a handover compares of the runs table: a run begun
// adds a row, a run taken up adds an attempt.
type runsSeen struct {
	rows, attempts int64
}

// seeRuns reads the runs table, but for run except (0: none); busy says
// a run other than except is under way (or marked so by a process that
// died: it is closed by its job's next run).
func seeRuns(ctx context.Context, q runs.Querier, except int64) (seen runsSeen, busy bool, err error) {
	err = q.QueryRow(ctx, `SELECT count(*), coalesce(sum(attempts), 0), coalesce(bool_or(status = 'running'), false)
		FROM runs WHERE run_id <> $1`, except).Scan(&seen.rows, &seen.attempts, &busy)
	if err != nil {
		return seen, false, fmt.Errorf("reading the runs under way: %w", migrations.NotMigrated(err))
	}
	return seen, busy, nil
}

// keepHeld keeps what Holdings found for tasks (held by index) at at,
// read with refetch after the runs table was seen as before (a run that
// began or was taken up after that could commit what these do not hold);
// nil when a run was under way then.
func keepHeld(tasks []jobspec.Task, held map[int]Held, at time.Time, refetch bool, before runsSeen) *HeldTasks {
	h := &HeldTasks{at: at, refetch: refetch, runs: before, held: map[string]Held{}, narrowed: map[string]narrowing{}, keys: map[string]bool{}}
	for i, t := range tasks {
		key := t.Key()
		h.keys[key] = true
		if held, ok := held[i]; ok {
			h.held[key] = held
		} else if !t.AskFrom.IsZero() || t.HeldMonths > 0 {
			h.narrowed[key] = narrowing{t.AskFrom, t.HeldMonths}
		}
	}
	return h
}

// Take hands the holdings to the new run runID of tasks, read with
// refetch, at now: the tasks held, by index, with the summary tasks
// narrowed in place. ok is false, and tasks are left as they were, when
// they are not current and the run must read them itself: a run of any
// job began, was taken up or is under way since they were read; now is
// in another month, or past the max_age of a task they hold fresh;
// refetch differs; or a task was not planned.
func (h *HeldTasks) Take(ctx context.Context, q runs.Querier, runID int64, tasks []jobspec.Task, refetch bool, now time.Time) (held map[int]Held, ok bool, err error) {
	if h == nil || h.refetch != refetch || !load.MonthStart(now).Equal(load.MonthStart(h.at)) || now.Before(h.at) {
		return nil, false, nil
	}
	for _, hd := range h.held {
		if !hd.Closed && (hd.MaxAge <= 0 || now.Sub(hd.Started) >= hd.MaxAge) {
			return nil, false, nil
		}
	}
	keys := make([]string, len(tasks))
	for i, t := range tasks {
		if keys[i] = t.Key(); t.Listings == nil && !h.keys[keys[i]] {
			return nil, false, nil
		}
	}
	seen, busy, err := seeRuns(ctx, q, runID)
	if err != nil || busy || seen != h.runs {
		return nil, false, err
	}
	held = map[int]Held{}
	for i, key := range keys {
		if hd, ok := h.held[key]; ok {
			held[i] = hd
		} else if n, ok := h.narrowed[key]; ok {
			tasks[i].AskFrom, tasks[i].HeldMonths = n.askFrom, n.months
		}
	}
	return held, true, nil
}
