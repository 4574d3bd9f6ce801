package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/migrations"
)

// This file keeps the bookkeeping from growing without end. A run writes
// a checkpoint per task and a ledger row per request: a daily job of
// 10,000 targets adds about 1.6 KB per task a night. Retention's
// keep_run_detail compacts the runs that finished longer ago than that:
//
//   - Its task checkpoints counted by status (run_task_counts) and per
//     table (run_table_totals, which run_tables reads) are kept, then its
//     done and held checkpoints are deleted, but for the latest done
//     checkpoint of each task (per job, probes apart): max_age, closed
//     keyword months and backfills read it (planning.Holdings, Pending); and
//     but for a held checkpoint that is its task's latest in the job:
//     etl backfill --reprocess failed reads the latest try (Pending).
//     Failed, skipped, refused and running checkpoints stay: they are
//     what went wrong, and what a continuation would take up.
//   - The closed months of summary history its done checkpoints held go
//     to task_closed_months first, so they are never bought again.
//   - Its settled ledger rows are summed into one row per endpoint and
//     UTC day (target *, requests: how many): the units per run, job,
//     day and month, which caps and audits count, stay exact. Unsettled
//     rows stay as they are.
//
// The latest run of each job and trigger, and a run still running or
// interrupted, are never compacted: the next run may take them up.

// CompactReport says what compacting the runs' bookkeeping did, or with
// a dry run would do.
type CompactReport struct {
	// Keep is keep_run_detail; 0: off, nothing done.
	Keep time.Duration
	// Cutoff: runs that finished before it are compacted.
	Cutoff time.Time
	DryRun bool
	// Runs is how many runs were compacted.
	Runs int
	// CheckpointsDeleted are the done and held checkpoints deleted;
	// CheckpointsKept those the compacted runs keep (failures, refusals,
	// the latest fetch of a task).
	CheckpointsDeleted, CheckpointsKept int64
	// ClosedMonths are the months of summary history moved to
	// task_closed_months.
	ClosedMonths int64
	// LedgerFolded are the settled ledger rows summed into LedgerRows.
	LedgerFolded, LedgerRows int64
	// Left counts the runs due that were left for later: the pass had
	// used its time (AfterRunCompaction).
	Left int
}

// AfterRunCompaction bounds the time the compaction after a run (etl run,
// etl schedule) takes, so that the first run after keep_run_detail is set
// on a long history does not keep its process for as long as the whole
// backlog takes: what is left is compacted after the next runs, or at
// once by etl retention, which has no bound.
const AfterRunCompaction = time.Minute

// String is one line (two with a dry run's note), e.g.
//
//	bookkeeping: keep run detail 30d: compacted 12 runs finished before 2026-10-28 14:00 UTC: deleted 719880 task checkpoints (kept 120: failures, refusals, each task's latest fetch and try), summed 71000 ledger rows into 130
func (c CompactReport) String() string {
	if c.Keep == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "bookkeeping: keep run detail %s", jobspec.FormatAge(c.Keep))
	// A dry run says what would be, the real one what it did.
	verb, deleted, kept, summed := "compacted", "deleted", "kept", "summed"
	if c.DryRun {
		verb, deleted, kept, summed = "would compact", "would delete", "keep", "sum"
	}
	cutoff := c.Cutoff.UTC().Format("2006-01-02 15:04 UTC")
	switch {
	case c.Runs > 0:
		fmt.Fprintf(&b, ": %s %s finished before %s: %s %s (%s %d: failures, refusals, each task's latest fetch and try)",
			verb, countOf(int64(c.Runs), "run"), cutoff, deleted, countOf(c.CheckpointsDeleted, "task checkpoint"), kept, c.CheckpointsKept)
		if c.ClosedMonths > 0 {
			fmt.Fprintf(&b, ", %s %s of summary history as closed", kept, countOf(c.ClosedMonths, "month"))
		}
		fmt.Fprintf(&b, ", %s %s into %d", summed, countOf(c.LedgerFolded, "ledger row"), c.LedgerRows)
	case c.Left == 0:
		fmt.Fprintf(&b, ": no run finished before %s is left to compact (the latest run of each job, and one running or interrupted, keep their detail)", cutoff)
	}
	if c.Left > 0 {
		if c.Runs > 0 {
			b.WriteString(";")
		} else {
			b.WriteString(":")
		}
		fmt.Fprintf(&b, " %s finished before %s left for later (a run compacts for at most %s after it; etl retention does them all)",
			countOf(int64(c.Left), "run"), cutoff, jobspec.FormatAge(AfterRunCompaction))
	}
	b.WriteString("\n")
	if c.DryRun {
		b.WriteString("dry run: nothing changed\n")
	}
	return b.String()
}

// countOf is "1 run", "12 runs".
func countOf(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// ClosedMonthsOf is the FROM and WHERE of the closed months of summary
// history that done checkpoints hold (c.task, m): those of a range a
// request asked for, once the month had ended when its run started, by a
// fetch that quarantined no row (which month's row it was the quarantine
// does not say: the next run asks for them all again). "Ended when
// fetched" is read from the start of the run, not from the checkpoint's
// time, which is its last page's: the newest months come first, and the
// rest of an answer cut at 23:59 on a month's last day is asked after
// midnight. holdings reads it, and compaction keeps it in
// task_closed_months before deleting the checkpoints.
const ClosedMonthsOf = `
	FROM task_checkpoints c JOIN runs r USING (run_id),
		generate_series(c.asked_from, least(c.asked_to, (date_trunc('month', r.started_at AT TIME ZONE 'UTC') - interval '1 month')::date),
			interval '1 month') m
	WHERE c.status = 'done' AND c.asked_from IS NOT NULL AND c.rejected = 0`

// CompactRuns compacts the bookkeeping of the runs that finished before
// now - keep (see the top of this file), oldest first, each in a
// transaction of its own; keep 0 does nothing. A dry run does the same
// work in one transaction that it rolls back, so its counts are exact
// (and a real compaction waits for it). After
// an error it stops and returns what was done. With within > 0 it starts
// no run's compaction once that much time (on the wall clock) has
// passed, and counts the runs left.
func CompactRuns(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger, keep time.Duration, now time.Time, dryRun bool, within time.Duration) (CompactReport, error) {
	start := time.Now()
	rep := CompactReport{Keep: keep, DryRun: dryRun}
	if keep == 0 {
		return rep, nil
	}
	if keep < jobspec.MinRunDetail || keep > jobspec.MaxRunDetail {
		return rep, fmt.Errorf("keep_run_detail must be between %s and %s, got %s", jobspec.FormatAge(jobspec.MinRunDetail), jobspec.FormatAge(jobspec.MaxRunDetail), jobspec.FormatAge(keep))
	}
	rep.Cutoff = now.Add(-keep)
	rows, err := pool.Query(ctx, `SELECT run_id FROM runs
		WHERE compacted_at IS NULL AND finished_at < $1 AND status NOT IN ('running', 'interrupted')
			AND run_id NOT IN (SELECT max(run_id) FROM runs GROUP BY job, trigger)
		ORDER BY run_id`, rep.Cutoff)
	if err != nil {
		return rep, fmt.Errorf("bookkeeping: finding the runs to compact: %w", migrations.NotMigrated(err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return rep, fmt.Errorf("bookkeeping: finding the runs to compact: %w", migrations.NotMigrated(err))
	}
	// A dry run compacts every run in one transaction that it rolls back:
	// a run's compaction then sees what the runs before it did (the
	// closed months they kept), as the real one does.
	var dryTx pgx.Tx
	if dryRun {
		if dryTx, err = pool.Begin(ctx); err != nil {
			return rep, fmt.Errorf("bookkeeping: %w", err)
		}
		defer func() { _ = dryTx.Rollback(context.WithoutCancel(ctx)) }()
	}
	for i, id := range ids {
		if within > 0 && time.Since(start) >= within {
			rep.Left = len(ids) - i
			break
		}
		var c runCompaction
		var err error
		if dryRun {
			c, err = compactRun(ctx, dryTx, id, now)
		} else {
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				var err error
				c, err = compactRun(ctx, tx, id, now)
				return err
			})
		}
		if err != nil {
			return rep, fmt.Errorf("bookkeeping: compacting run %d: %w", id, err)
		}
		if !c.done {
			continue // compacted meanwhile by another process
		}
		rep.Runs++
		rep.CheckpointsDeleted += c.deleted
		rep.CheckpointsKept += c.kept
		rep.ClosedMonths += c.months
		rep.LedgerFolded += c.folded
		rep.LedgerRows += c.ledgerRows
		if !dryRun {
			log.LogAttrs(ctx, slog.LevelInfo, "bookkeeping: run compacted", slog.Int64("run_id", id),
				slog.Int64("checkpoints_deleted", c.deleted), slog.Int64("checkpoints_kept", c.kept),
				slog.Int64("ledger_rows_folded", c.folded), slog.Int64("ledger_rows", c.ledgerRows))
		}
	}
	return rep, nil
}

// runCompaction is what compactRun did to one run.
type runCompaction struct {
	done                  bool
	deleted, kept, months int64
	folded, ledgerRows    int64
}

// compactRun compacts run id in tx; done is false when another process
// did it first.
func compactRun(ctx context.Context, tx pgx.Tx, id int64, now time.Time) (runCompaction, error) {
	var c runCompaction
	var job, trigger string
	// Its statements probe an index per checkpoint: the planner's cost of
	// a run of 30,000 tasks passes jit_above_cost, and compiling them
	// takes longer than running them (330 of 630 ms for the DELETE).
	if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
		return c, err
	}
	// The row lock makes a second compactor wait, then find it done.
	err := tx.QueryRow(ctx, `SELECT job, trigger FROM runs WHERE run_id = $1 AND compacted_at IS NULL FOR UPDATE`, id).Scan(&job, &trigger)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	steps := []struct {
		what, sql string
		n         *int64
		args      []any
	}{
		{"counting its tasks", `INSERT INTO run_task_counts (run_id, status, tasks, rows, units, held_units)
			SELECT run_id, status, count(*), coalesce(sum(rows), 0), coalesce(sum(units), 0), coalesce(sum(held_units), 0)
			FROM task_checkpoints WHERE run_id = $1 GROUP BY run_id, status`, nil, []any{id}},
		{"counting its rows per table", `INSERT INTO run_table_totals (run_id, table_name, tasks, rows, inserted, updated, unchanged, quarantined)
			SELECT run_id, table_name, tasks, rows, inserted, updated, unchanged, quarantined FROM run_tables WHERE run_id = $1`, nil, []any{id}},
		{"keeping its closed months", `INSERT INTO task_closed_months (task, month, run_id)
			SELECT c.task, m::date, min(c.run_id) ` + ClosedMonthsOf + ` AND c.run_id = $1
			GROUP BY 1, 2 ON CONFLICT DO NOTHING`, &c.months, []any{id}},
		// A done checkpoint goes when a later done one of the same task,
		// job and kind (probe or not) stands for it; a held one when a
		// later checkpoint of the same task and job does, so that each
		// task's latest try in the job, which etl backfill --reprocess
		// failed reads (Pending), stays what it was.
		{"deleting its done and held checkpoints", `DELETE FROM task_checkpoints c WHERE c.run_id = $1 AND (c.status = 'held' AND EXISTS (
				SELECT FROM task_checkpoints d JOIN runs dr ON dr.run_id = d.run_id
				WHERE d.task = c.task AND (d.updated_at, d.run_id) > (c.updated_at, c.run_id) AND dr.job = $2)
			OR c.status = 'done' AND EXISTS (
				SELECT FROM task_checkpoints d JOIN runs dr ON dr.run_id = d.run_id
				WHERE d.task = c.task AND d.status = 'done' AND (d.updated_at, d.run_id) > (c.updated_at, c.run_id)
					AND dr.job = $2 AND (dr.trigger = 'probe') = ($3 = 'probe')))`, &c.deleted, []any{id, job, trigger}},
	}
	for _, s := range steps {
		tag, err := tx.Exec(ctx, s.sql, s.args...)
		if err != nil {
			return c, fmt.Errorf("%s: %w", s.what, err)
		}
		if s.n != nil {
			*s.n = tag.RowsAffected()
		}
	}
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM task_checkpoints WHERE run_id = $1`, id).Scan(&c.kept); err != nil {
		return c, fmt.Errorf("counting what it keeps: %w", err)
	}
	// One row per endpoint and UTC day keeps the units of every cap's
	// scope (run, job and month, day, month) exact.
	err = tx.QueryRow(ctx, `WITH gone AS (
			DELETE FROM unit_ledger WHERE run_id = $1 AND spent IS NOT NULL RETURNING *),
		folded AS (
			INSERT INTO unit_ledger (run_id, job, endpoint, target, reserved, spent, reserved_at, settled_at, requests)
			SELECT run_id, job, endpoint, '*', sum(reserved), sum(spent), min(reserved_at), max(settled_at), sum(requests)
			FROM gone GROUP BY run_id, job, endpoint, (reserved_at AT TIME ZONE 'UTC')::date
			RETURNING 1)
		SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM folded)`, id).Scan(&c.folded, &c.ledgerRows)
	if err != nil {
		return c, fmt.Errorf("summing its ledger rows: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE runs SET compacted_at = $2 WHERE run_id = $1`, id, now); err != nil {
		return c, fmt.Errorf("marking it compacted: %w", err)
	}
	c.done = true
	return c, nil
}
