package planning

import (
	"context"
	"fmt"

	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/migrations"
)

// HeldTasks is what the warehouse held for a plan's tasks (Holdings), kept
// for the run that follows the plan (pipeline.RunOptions.Holdings), so
// that holdings are read once per run: etl run plans for its progress
// display, then runs. The run takes them only while they are current: no
// run of any job was under way when they were read, and none began since
// but the run itself; else it reads them again.
type HeldTasks struct {
	// lastRun is the newest run_id when they were read.
	lastRun int64
	refetch bool
	// held and narrowed are by task key: a task held whole, and a summary
	// task narrowed to the months the warehouse does not hold as closed.
	held     map[string]Held
	narrowed map[string]jobspec.Task
	// keys are the tasks looked at.
	keys map[string]bool
}

// keepHeld keeps what Holdings found for tasks (held by index), read
// with refetch, unless another run was under way: a run that commits
// meanwhile could hold what these do not.
func (p *Planner) keepHeld(ctx context.Context, tasks []jobspec.Task, held map[int]Held, refetch bool) (*HeldTasks, error) {
	var last int64
	var busy bool
	if err := p.cfg.Pool.QueryRow(ctx, `SELECT coalesce(max(run_id), 0), coalesce(bool_or(status = 'running'), false) FROM runs`).Scan(&last, &busy); err != nil {
		return nil, fmt.Errorf("reading the runs under way: %w", migrations.NotMigrated(err))
	}
	if busy {
		return nil, nil
	}
	h := &HeldTasks{lastRun: last, refetch: refetch, held: map[string]Held{}, narrowed: map[string]jobspec.Task{}, keys: map[string]bool{}}
	for i, t := range tasks {
		key := t.Key()
		h.keys[key] = true
		if held, ok := held[i]; ok {
			h.held[key] = held
		} else if !t.AskFrom.IsZero() || t.HeldMonths > 0 {
			h.narrowed[key] = t
		}
	}
	return h, nil
}

// Take hands the holdings to the run runID of tasks, read with refetch:
// the tasks held, by index, with the summary tasks narrowed in place; ok
// is false, and tasks are left as they were, when they are not current
// (another run began since they were read, refetch differs, or a task
// was not planned) and the run must read them itself.
func (h *HeldTasks) Take(ctx context.Context, q runs.Querier, runID int64, tasks []jobspec.Task, refetch bool) (held map[int]Held, ok bool, err error) {
	if h == nil || h.refetch != refetch {
		return nil, false, nil
	}
	for _, t := range tasks {
		if t.Listings == nil && !h.keys[t.Key()] {
			return nil, false, nil
		}
	}
	var began bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE run_id > $1 AND run_id <> $2)`, h.lastRun, runID).Scan(&began); err != nil {
		return nil, false, fmt.Errorf("reading the runs begun since the plan: %w", migrations.NotMigrated(err))
	}
	if began {
		return nil, false, nil
	}
	held = map[int]Held{}
	for i := range tasks {
		key := tasks[i].Key()
		if hd, ok := h.held[key]; ok {
			held[i] = hd
		} else if n, ok := h.narrowed[key]; ok {
			tasks[i].AskFrom, tasks[i].HeldMonths = n.AskFrom, n.HeldMonths
		}
	}
	return held, true, nil
}
