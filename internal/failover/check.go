package failover

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
)

// CheckConfig is what a check needs besides the journal.
type CheckConfig[T any] struct {
	Ledger *budget.Ledger
	Logger *slog.Logger
	// SaveFailed records, on q, that task t of run runID goes on from its
	// lost page lp (its checkpoint at the page, counted as lp.Before).
	SaveFailed func(ctx context.Context, q runs.Execer, runID int64, t jobspec.Task, lp LostPage[T]) error
}

// Check compares, when a connection of the run was lost since the last
// check, what the run committed with what the server of conn has, and
// commits again what it lacks: the ledger rows of lost reservations
// (Rebook), the pages lost (from their answers kept), then the latest
// checkpoint of every task the run wrote. No commit of the run runs
// meanwhile. conn is a connection of the server the run goes on with.
func (j *Journal[T]) Check(ctx context.Context, conn *pgx.Conn, c CheckConfig[T]) error {
	if !j.Due() {
		return nil
	}
	j.Commits.Lock()
	defer j.Commits.Unlock()
	s, ok := j.snapshot()
	if !ok {
		return nil // another task checked meanwhile
	}
	k := checking[T]{c: c, conn: conn, s: s, failed: map[string]LostPage[T]{}, failedTask: map[string]jobspec.Task{}}
	if err := k.run(ctx); err != nil {
		return err
	}
	j.record(ctx, c.Logger, s.lostAt, k.rep, k.failed)
	return nil
}

// snapshot is what a check compares: the journal as it stood when the
// check began.
type snapshot[T any] struct {
	lostAt time.Time
	pages  []*Page[T]
	booked []budget.Reservation
	saves  map[string]func(context.Context, runs.Execer) error
}

// snapshot copies what the check compares; ok is false when no
// connection was lost since the last check.
func (j *Journal[T]) snapshot() (s snapshot[T], ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.lostAt.IsZero() {
		return s, false
	}
	s.lostAt, s.pages = j.lostAt, slices.Clone(j.pages)
	for _, rv := range j.open {
		s.booked = append(s.booked, rv)
	}
	s.saves = maps.Clone(j.checkpoints)
	for key := range j.failed {
		delete(s.saves, key) // its checkpoint stays at its lost page
	}
	return s, true
}

// checking is one check under way.
type checking[T any] struct {
	c          CheckConfig[T]
	conn       *pgx.Conn
	s          snapshot[T]
	states     map[budget.Claim]budget.RowState
	rep        Report
	failed     map[string]LostPage[T]
	failedRun  int64
	failedTask map[string]jobspec.Task
}

// run reads the ledger's rows of the run's claims, then commits again
// what the server lacks.
func (k *checking[T]) run(ctx context.Context) error {
	claims := make([]budget.Claim, 0, len(k.s.pages)+len(k.s.booked))
	for _, p := range k.s.pages {
		claims = append(claims, p.Reservation.Claim)
	}
	for _, rv := range k.s.booked {
		claims = append(claims, rv.Claim)
	}
	var err error
	if k.states, err = k.c.Ledger.States(ctx, k.conn, claims); err != nil {
		return err
	}
	if err := k.rebookOpen(ctx); err != nil {
		return err
	}
	if err := k.rebookPages(ctx); err != nil {
		return err
	}
	if err := k.reloadPages(ctx); err != nil {
		return err
	}
	return k.saveCheckpoints(ctx)
}

// rebook books rv again in tx, counting it when it was booked.
func (k *checking[T]) rebook(ctx context.Context, tx pgx.Tx, rv budget.Reservation) error {
	_, booked, err := k.c.Ledger.Rebook(ctx, tx, rv)
	if booked {
		k.rep.Rebooked++
		k.rep.UnitsRebooked += rv.Units
	}
	return err
}

// rebookOpen books again the open reservations whose ledger row is lost.
func (k *checking[T]) rebookOpen(ctx context.Context) error {
	for _, rv := range k.s.booked {
		if k.states[rv.Claim] != budget.RowLost {
			continue
		}
		k.rep.LostCommits++
		if err := pgx.BeginFunc(ctx, k.conn, func(tx pgx.Tx) error { return k.rebook(ctx, tx, rv) }); err != nil {
			return err
		}
	}
	return nil
}

// rebookPages books again the units of the lost pages to load again,
// each in a transaction of its own, before any page is loaded: the API
// charged them, and a page that then fails to load (on Citus, a
// coordinator that lost commits its workers kept refuses the partitions
// it makes again) must not take its ledger row, or those of the pages
// after it, back with its rollback. A crash between the two leaves the row
// at its reservation, never below its cost.
func (k *checking[T]) rebookPages(ctx context.Context) error {
	for _, p := range k.s.pages {
		if p.Answer == nil || k.states[p.Reservation.Claim] != budget.RowLost {
			continue
		}
		if err := pgx.BeginFunc(ctx, k.conn, func(tx pgx.Tx) error { return k.rebook(ctx, tx, p.Reservation) }); err != nil {
			return err
		}
	}
	return nil
}

// reloadPages loads again each lost page from its answer kept, and
// settles it; a page whose answer was let go of is settled at its cost
// and fails its task from there.
func (k *checking[T]) reloadPages(ctx context.Context) error {
	for _, p := range k.s.pages {
		state := k.states[p.Reservation.Claim]
		if state == budget.RowSettled {
			continue
		}
		k.rep.LostCommits++
		if p.Answer == nil {
			if err := k.pageGone(ctx, p, state); err != nil {
				return err
			}
			continue
		}
		err := pgx.BeginFunc(ctx, k.conn, func(tx pgx.Tx) error {
			if err := p.Reload(ctx, tx, p.Answer.Replay()); err != nil {
				return err
			}
			return k.c.Ledger.Settle(ctx, tx, p.Reservation, p.Cost)
		})
		if err != nil {
			return fmt.Errorf("loading again a page of %s lost in a failover: %w", p.Task, err)
		}
		k.rep.PagesReloaded++
	}
	return nil
}

// pageGone books a lost page whose answer was no longer kept again all
// the same, at what it cost (the API charged it), and fails its task
// from the first such page.
func (k *checking[T]) pageGone(ctx context.Context, p *Page[T], state budget.RowState) error {
	if err := pgx.BeginFunc(ctx, k.conn, func(tx pgx.Tx) error {
		if state == budget.RowLost {
			if err := k.rebook(ctx, tx, p.Reservation); err != nil {
				return err
			}
		}
		return k.c.Ledger.Settle(ctx, tx, p.Reservation, p.Cost)
	}); err != nil {
		return err
	}
	k.rep.PagesLost++
	k.rep.UnitsBoughtTwice += p.Cost
	key := p.Task.Key()
	k.failedRun = p.RunID
	if _, ok := k.failed[key]; !ok {
		k.failedTask[key] = p.Task
		k.failed[key] = LostPage[T]{Offset: p.Offset, Before: p.Before, Err: fmt.Errorf("the page at offset %d was lost in a failover of the database, and its answer was no longer kept (Config.KeepAnswers): a continuation of the run buys it again", p.Offset)}
		k.c.Logger.LogAttrs(ctx, slog.LevelError, "a page lost in a failover cannot be loaded again: its answer was no longer kept",
			slog.String("task", p.Task.String()), slog.Int64("offset", p.Offset), slog.Int64("units", p.Cost))
	}
	return nil
}

// saveCheckpoints writes again the latest checkpoint of every task, once
// commits were lost, and that of each failed task at its lost page.
func (k *checking[T]) saveCheckpoints(ctx context.Context) error {
	if k.rep.LostCommits > 0 {
		for key, save := range k.s.saves {
			if _, ok := k.failed[key]; ok {
				continue
			}
			if err := save(ctx, k.conn); err != nil {
				return err
			}
		}
	}
	for key, lp := range k.failed {
		// Done or not, the task goes on from its lost page, counted as it
		// stood before it, in a continuation of the run.
		if err := k.c.SaveFailed(ctx, k.conn, k.failedRun, k.failedTask[key], lp); err != nil {
			return fmt.Errorf("recording a page lost in a failover: %w", err)
		}
	}
	return nil
}

// record adds a check's findings to the run's report and logs them.
func (j *Journal[T]) record(ctx context.Context, log *slog.Logger, lostAt time.Time, rep Report, failed map[string]LostPage[T]) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lostAt = time.Time{}
	j.report.Checks++
	j.report.LostCommits += rep.LostCommits
	j.report.Rebooked += rep.Rebooked
	j.report.UnitsRebooked += rep.UnitsRebooked
	j.report.PagesReloaded += rep.PagesReloaded
	j.report.PagesLost += rep.PagesLost
	j.report.UnitsBoughtTwice += rep.UnitsBoughtTwice
	if j.report.Checks == 1 {
		j.report.Resumed = time.Since(lostAt)
	}
	for k, lp := range failed {
		if _, ok := j.failed[k]; !ok {
			j.failed[k] = lp
		}
	}
	level := slog.LevelInfo
	if rep.LostCommits > 0 {
		level = slog.LevelWarn
	}
	log.LogAttrs(ctx, level, "checked the run's commits after its database connections were lost",
		slog.Int("lost_commits", rep.LostCommits), slog.Int("rebooked", rep.Rebooked), slog.Int64("units_rebooked", rep.UnitsRebooked),
		slog.Int("pages_reloaded", rep.PagesReloaded), slog.Int("pages_lost", rep.PagesLost),
		slog.Int64("units_bought_twice", rep.UnitsBoughtTwice), slog.Duration("since_lost", time.Since(lostAt)))
}
