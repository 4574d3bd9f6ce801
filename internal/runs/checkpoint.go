package runs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
)

// Execer is a pool or a transaction.
type Execer interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}

// Checkpoint is how far a task of a run got, as committed.
type Checkpoint struct {
	Status                string
	Offset                int64
	Pages                 int
	Rows, Rejected, Units int64
	// Since is the watermark an incremental task's pages were asked past.
	Since *time.Time
	// Reason is why the task failed, was skipped or refused.
	Reason string
	// Load is what the committed pages did to the task's table (zero on
	// a checkpoint written before migration 0011).
	Load load.Result
	// HeldBy and HeldUnits name the run whose data the warehouse held
	// for a held task, and what its fetch cost (Save writes them; nil:
	// the task was sent).
	HeldBy, HeldUnits *int64
}

// Querier is a pool or a transaction.
type Querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// Checkpoints reads what the tasks of run id committed.
func Checkpoints(ctx context.Context, q Querier, id int64) (map[string]Checkpoint, error) {
	rows, err := q.Query(ctx, `SELECT task, status, next_offset, pages, rows, rejected, units, since, coalesce(error, ''),
			coalesce(inserted, 0), coalesce(updated, 0), coalesce(unchanged, 0)
		FROM task_checkpoints WHERE run_id = $1`, id)
	if err != nil {
		return nil, fmt.Errorf("reading the checkpoints of run %d: %w", id, err)
	}
	out := map[string]Checkpoint{}
	for rows.Next() {
		var key string
		var c Checkpoint
		if err := rows.Scan(&key, &c.Status, &c.Offset, &c.Pages, &c.Rows, &c.Rejected, &c.Units, &c.Since, &c.Reason,
			&c.Load.Inserted, &c.Load.Updated, &c.Load.Unchanged); err != nil {
			return nil, err
		}
		c.Load.Rows = c.Load.Inserted + c.Load.Updated + c.Load.Unchanged
		out[key] = c
	}
	return out, rows.Err()
}

// Save writes the task's checkpoint c at at: in the page's transaction
// (q is the tx) with what the committed pages add up to, or on its own
// when the task starts, fails or is skipped. c.Load is what the pages of
// every attempt of the run did to the task's table (run_tables sums it).
// The watermark saved is the task's own (t.Since), not c.Since.
func Save(ctx context.Context, q Execer, runID int64, t jobspec.Task, c Checkpoint, at time.Time) error {
	var month *time.Time
	if t.Keyword != "" || (t.Spec.DateFrom != "" && t.Spec.DateFrom == t.Spec.DateTo) {
		m := t.Month
		month = &m
	}
	var since *time.Time
	if t.Spec.Incremental != "" || t.Listings != nil {
		s := t.Since
		since = &s
	}
	var askedFrom, askedTo *time.Time
	if from, to, ok := t.AskedRange(); ok {
		askedFrom, askedTo = &from, &to
	}
	var maxRows *int
	if t.Spec.MaxRows > 0 {
		maxRows = &t.Spec.MaxRows
	}
	_, err := q.Exec(ctx, `
		INSERT INTO task_checkpoints (run_id, task, endpoint, name, month, status, next_offset, pages, rows, rejected, units, since, error, updated_at,
			table_name, inserted, updated, unchanged, asked_from, asked_to, max_rows, held_by, held_units)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, nullif($13, ''), $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
		ON CONFLICT (run_id, task) DO UPDATE SET status = EXCLUDED.status, next_offset = EXCLUDED.next_offset,
			pages = EXCLUDED.pages, rows = EXCLUDED.rows, rejected = EXCLUDED.rejected, units = EXCLUDED.units,
			since = EXCLUDED.since, error = EXCLUDED.error, updated_at = EXCLUDED.updated_at, table_name = EXCLUDED.table_name,
			inserted = EXCLUDED.inserted, updated = EXCLUDED.updated, unchanged = EXCLUDED.unchanged,
			asked_from = EXCLUDED.asked_from, asked_to = EXCLUDED.asked_to, max_rows = EXCLUDED.max_rows,
			held_by = EXCLUDED.held_by, held_units = EXCLUDED.held_units`,
		runID, t.Key(), t.Endpoint.Name, t.String(), month, c.Status, c.Offset, c.Pages, c.Rows, c.Rejected, c.Units, since, c.Reason, at,
		t.Endpoint.Table, c.Load.Inserted, c.Load.Updated, c.Load.Unchanged, askedFrom, askedTo, maxRows, c.HeldBy, c.HeldUnits)
	if err != nil {
		return fmt.Errorf("checkpoint of %s: %w", t, err)
	}
	return nil
}

// NeverUnderCap marks the reason of a task refused because one of its
// requests costs more than a whole cap (see RefusedByCap).
const NeverUnderCap = "so the task never runs under it"

// RefusedByCap reports whether a task was refused, for the reason given,
// because one of its requests cost more than a whole cap, rather than by
// the API: a continuation of the run tries it again under the caps of
// the day, which may have been raised.
func RefusedByCap(reason string) bool { return strings.Contains(reason, NeverUnderCap) }

// SkippedUnits is the reason of tasks a 403 stopped.
const SkippedUnits = "API units exhausted upstream (HTTP 403)"
