package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/internal/dbconn"
	"github.com/seoetl/etl/jobspec"
)

// Failover is what a run found when its database connections were lost
// mid-run (a primary that died and a standby promoted in its place, or a
// restart) and it checked, on the server it reached next, what it had
// committed before.
//
// A process knows what it committed: each page's rows, checkpoint and
// settlement, and each reservation. With synchronous replication
// (synchronous_commit on, a synchronous standby) a failover loses none of
// it. An asynchronous standby promoted while it lagged behind lacks the
// last commits of the old primary: their ledger rows are booked again (the
// API charged those requests, so every cap counts them), their pages are
// loaded again from the answers the run kept (Config.KeepAnswers), and
// their tasks' checkpoints are written again.
type Failover struct {
	// Checks counts the times the run checked its commits after
	// connections were lost; LostCommits the commits (pages and
	// reservations) the server it reached did not have.
	Checks      int
	LostCommits int
	// Rebooked counts ledger rows booked again, UnitsRebooked their
	// units (at their reservation until the page that bought them is
	// settled again).
	Rebooked      int
	UnitsRebooked int64
	// PagesReloaded counts lost pages loaded again from the answer kept.
	PagesReloaded int
	// PagesLost counts lost pages whose answer was no longer kept: their
	// tasks fail at the first of them, and a continuation of the run buys
	// them again from there: UnitsBoughtTwice is what the run had bought
	// from there on.
	PagesLost        int
	UnitsBoughtTwice int64
	// Resumed is the time from the first connection the run lost to the
	// end of the first check after it: how long the run stood.
	Resumed time.Duration
}

// Lost reports whether the failover lost commits of the run.
func (f *Failover) Lost() bool { return f != nil && f.LostCommits > 0 }

// String says what happened in one line.
func (f *Failover) String() string {
	if f == nil {
		return ""
	}
	if f.LostCommits == 0 {
		return fmt.Sprintf("database connections lost; the run went on after %s, and the database had every commit of the run", f.Resumed.Round(time.Millisecond))
	}
	s := fmt.Sprintf("the database lost %d commits of the run (a standby that lagged behind took over, or the server crashed with synchronous_commit off): %d ledger rows booked again (%d units), %d pages loaded again from the answers kept",
		f.LostCommits, f.Rebooked, f.UnitsRebooked, f.PagesReloaded)
	if f.PagesLost > 0 {
		s += fmt.Sprintf(", %d pages no longer kept: their tasks failed, and the next run buys %d units again", f.PagesLost, f.UnitsBoughtTwice)
	} else {
		s += ", 0 units bought twice"
	}
	return s + fmt.Sprintf("; the run went on after %s", f.Resumed.Round(time.Millisecond))
}

// DefaultKeepAnswers is Config.KeepAnswers' default.
const DefaultKeepAnswers = 256 << 20

// journal is what a run committed, kept until the run ends, so that what a
// failover lost can be found and committed again (see Failover).
type journal struct {
	// commits is held for reading by each commit of the run and the
	// journaling of it, and for writing by a check: a check sees every
	// commit journaled.
	commits sync.RWMutex

	mu sync.Mutex
	// pages are the committed pages, oldest first.
	pages []*keptPage
	// open are the reservations of the run not settled (in flight, or
	// left booked: their request may have been charged), by claim.
	open map[budget.Claim]budget.Reservation
	// checkpoints re-save each task's latest checkpoint, by task key.
	checkpoints map[string]func(context.Context, execer) error
	// keep bounds the bytes of answers kept, kept counts them; inMemory
	// counts those held in memory (keepInMemory bounds them).
	keep, kept, inMemory int64
	// lostAt is when a connection was first lost since the last check
	// (zero: none).
	lostAt time.Time
	report Failover
	// failed are the tasks a lost page could not be loaded again for,
	// by task key.
	failed map[string]lostPage
}

// lostPage is a page lost in a failover that could not be loaded again:
// its task goes on from it in a continuation of the run.
type lostPage struct {
	offset int64
	err    error
	// before is the task as it stood before the page: what a
	// continuation counts it from.
	before TaskResult
}

func newJournal(keep int64) *journal {
	return &journal{open: map[budget.Claim]budget.Reservation{}, checkpoints: map[string]func(context.Context, execer) error{},
		keep: keep, failed: map[string]lostPage{}}
}

// keptPage is a committed page: what reloading it takes.
type keptPage struct {
	runID  int64
	rv     budget.Reservation
	cost   int64
	reload func(ctx context.Context, tx pgx.Tx, src io.Reader) error
	// answer is the answer as the API sent it; nil once let go of.
	answer *spool
	task   jobspec.Task
	offset int64
	// before is the task as it stood before the page.
	before TaskResult
}

// keepInMemory bounds the bytes of the answers a run keeps in memory; the
// rest go to unlinked temporary files, so that keeping them leaves a run's
// memory as it was.
const keepInMemory = 4 << 20

// page journals a committed page; it keeps its answer (in memory while
// the answers kept there stay under keepInMemory, else on disk), letting
// go of the oldest answers past the bound (or of this one, when the bound
// is 0). Call with commits held.
func (j *journal) page(p *keptPage) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.open, p.rv.Claim)
	j.pages = append(j.pages, p)
	if p.answer != nil && j.keep == 0 {
		p.answer.Close()
		p.answer = nil
	}
	if p.answer != nil {
		p.answer.compact(j.inMemory+p.answer.size() <= keepInMemory)
		j.kept += p.answer.size()
		j.inMemory += p.answer.inMemory()
	}
	for _, old := range j.pages {
		if j.kept <= j.keep {
			break
		}
		if old.answer != nil {
			j.kept -= old.answer.size()
			j.inMemory -= old.answer.inMemory()
			old.answer.Close()
			old.answer = nil
		}
	}
}

// reserved journals a reservation: it is open until settled.
func (j *journal) reserved(rv budget.Reservation) {
	if rv.Claim == (budget.Claim{}) {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.open[rv.Claim] = rv
}

// settled journals that rv was settled (without a page: at 0, or at its
// reservation).
func (j *journal) settled(rv budget.Reservation) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.open, rv.Claim)
}

// rebooked journals that a page found the ledger row of rv lost, and
// booked it again.
func (j *journal) rebooked(rv budget.Reservation) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.report.LostCommits++
	j.report.Rebooked++
	j.report.UnitsRebooked += rv.Units
}

// checkpoint journals how to save a task's latest checkpoint again. Call
// with commits held.
func (j *journal) checkpoint(key string, save func(context.Context, execer) error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.checkpoints[key] = save
}

// lost notes that a connection of the run was lost: the next check
// compares what the run committed with what the server has.
func (j *journal) lost() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.lostAt.IsZero() {
		j.lostAt = time.Now()
	}
}

// due reports whether a connection was lost since the last check.
func (j *journal) due() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return !j.lostAt.IsZero()
}

// taskFailed says whether task key must stop, and from which offset a
// continuation goes on: a page of it was lost and could not be loaded
// again.
func (j *journal) taskFailed(key string) (lostPage, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	lp, ok := j.failed[key]
	return lp, ok
}

// lostPages are the tasks a lost page could not be loaded again for.
func (j *journal) lostPages() map[string]lostPage {
	j.mu.Lock()
	defer j.mu.Unlock()
	return maps.Clone(j.failed)
}

// close lets go of the answers kept.
func (j *journal) close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, p := range j.pages {
		if p.answer != nil {
			p.answer.Close()
			p.answer = nil
		}
	}
	j.pages, j.kept, j.inMemory = nil, 0, 0
}

// failover returns the run's report; nil when no connection was lost.
func (j *journal) failover() *Failover {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.report.Checks == 0 {
		return nil
	}
	f := j.report
	if len(j.failed) > 0 {
		// A continuation buys each failed task again from its lost page:
		// that page and every later one the run had bought.
		f.UnitsBoughtTwice = 0
		for _, p := range j.pages {
			if lp, ok := j.failed[p.task.Key()]; ok && p.offset >= lp.offset {
				f.UnitsBoughtTwice += p.cost
			}
		}
	}
	return &f
}

// check compares, when a connection of the run was lost since the last
// check, what the run committed with what the server of conn has, and
// commits again what it lacks: the ledger rows of lost reservations
// (Rebook), the pages lost (from their answers kept), then the latest
// checkpoint of every task the run wrote. No commit of the run runs
// meanwhile. conn is a connection of the server the run goes on with.
func (r *Runner) check(ctx context.Context, conn *pgx.Conn, j *journal) error {
	if !j.due() {
		return nil
	}
	j.commits.Lock()
	defer j.commits.Unlock()
	j.mu.Lock()
	lostAt := j.lostAt
	if lostAt.IsZero() {
		j.mu.Unlock()
		return nil // another task checked meanwhile
	}
	pages := slices.Clone(j.pages)
	var booked []budget.Reservation
	for _, rv := range j.open {
		booked = append(booked, rv)
	}
	saves := maps.Clone(j.checkpoints)
	for key := range j.failed {
		delete(saves, key) // its checkpoint stays at its lost page
	}
	j.mu.Unlock()

	claims := make([]budget.Claim, 0, len(pages)+len(booked))
	for _, p := range pages {
		claims = append(claims, p.rv.Claim)
	}
	for _, rv := range booked {
		claims = append(claims, rv.Claim)
	}
	states, err := r.cfg.Ledger.States(ctx, conn, claims)
	if err != nil {
		return err
	}
	var rep Failover
	rebook := func(tx pgx.Tx, rv budget.Reservation) error {
		_, booked, err := r.cfg.Ledger.Rebook(ctx, tx, rv)
		if booked {
			rep.Rebooked++
			rep.UnitsRebooked += rv.Units
		}
		return err
	}
	for _, rv := range booked {
		if states[rv.Claim] != budget.RowLost {
			continue
		}
		rep.LostCommits++
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return rebook(tx, rv) }); err != nil {
			return err
		}
	}
	// The units of the lost pages to load again are booked again first,
	// each in a transaction of its own, before any page is loaded: the
	// API charged them, and a page that then fails to load (on Citus, a
	// coordinator that lost commits its workers kept refuses the
	// partitions it makes again) must not take its ledger row, or those
	// of the pages after it, back with its rollback. A crash between the
	// two leaves the row at its reservation, never below its cost.
	for _, p := range pages {
		if p.answer == nil || states[p.rv.Claim] != budget.RowLost {
			continue
		}
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return rebook(tx, p.rv) }); err != nil {
			return err
		}
	}
	failed := map[string]lostPage{}
	var failedRun int64
	var failedTask = map[string]jobspec.Task{}
	for _, p := range pages {
		state := states[p.rv.Claim]
		if state == budget.RowSettled {
			continue
		}
		rep.LostCommits++
		if p.answer == nil {
			// Booked again all the same, at what it cost: the API
			// charged it.
			if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if state == budget.RowLost {
					if err := rebook(tx, p.rv); err != nil {
						return err
					}
				}
				return r.cfg.Ledger.Settle(ctx, tx, p.rv, p.cost)
			}); err != nil {
				return err
			}
			rep.PagesLost++
			rep.UnitsBoughtTwice += p.cost
			key := p.task.Key()
			failedRun = p.runID
			if _, ok := failed[key]; !ok {
				failedTask[key] = p.task
				failed[key] = lostPage{offset: p.offset, before: p.before, err: fmt.Errorf("the page at offset %d was lost in a failover of the database, and its answer was no longer kept (Config.KeepAnswers): a continuation of the run buys it again", p.offset)}
				r.cfg.Logger.LogAttrs(ctx, slog.LevelError, "a page lost in a failover cannot be loaded again: its answer was no longer kept",
					slog.String("task", p.task.String()), slog.Int64("offset", p.offset), slog.Int64("units", p.cost))
			}
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if err := p.reload(ctx, tx, p.answer.replay()); err != nil {
				return err
			}
			return r.cfg.Ledger.Settle(ctx, tx, p.rv, p.cost)
		})
		if err != nil {
			return fmt.Errorf("loading again a page of %s lost in a failover: %w", p.task, err)
		}
		rep.PagesReloaded++
	}
	if rep.LostCommits > 0 {
		for key, save := range saves {
			if _, ok := failed[key]; ok {
				continue
			}
			if err := save(ctx, conn); err != nil {
				return err
			}
		}
	}
	for key, lp := range failed {
		// Done or not, the task goes on from its lost page, counted as it
		// stood before it, in a continuation of the run.
		if err := saveCheckpoint(ctx, conn, failedRun, failedTask[key], "failed", lp.offset, &lp.before, lp.err.Error(), r.cfg.Now()); err != nil {
			return fmt.Errorf("recording a page lost in a failover: %w", err)
		}
	}
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
	r.cfg.Logger.LogAttrs(ctx, level, "checked the run's commits after its database connections were lost",
		slog.Int("lost_commits", rep.LostCommits), slog.Int("rebooked", rep.Rebooked), slog.Int64("units_rebooked", rep.UnitsRebooked),
		slog.Int("pages_reloaded", rep.PagesReloaded), slog.Int("pages_lost", rep.PagesLost),
		slog.Int64("units_bought_twice", rep.UnitsBoughtTwice), slog.Duration("since_lost", time.Since(lostAt)))
	return nil
}

// checkOn is check on a page's connection, renewed and tried again
// while the database cannot serve, for up to Config.Reconnect.
func (r *Runner) checkOn(ctx context.Context, pc *dbconn.PageConn, j *journal) error {
	if !j.due() {
		return nil
	}
	return r.retry(ctx, j, "checking the run's commits", func(ctx context.Context) error {
		err := r.check(ctx, pc.Conn.Conn(), j)
		if err != nil && dbLost(err) {
			if rerr := pc.Renew(ctx); rerr != nil {
				return errors.Join(err, rerr)
			}
		}
		return err
	})
}

// saveTask saves a task's checkpoint on the pool, again while the
// database cannot serve, and journals it (to save it again after a
// failover that lost it).
func (r *Runner) saveTask(ctx context.Context, st *runState, acct budget.Account, t jobspec.Task, status string, offset int64, res *TaskResult, reason string) error {
	snap, at := *res, r.cfg.Now()
	save := func(ctx context.Context, q execer) error {
		return saveCheckpoint(ctx, q, acct.RunID, t, status, offset, &snap, reason, at)
	}
	return r.retry(ctx, st.journal, "saving a checkpoint", func(ctx context.Context) error {
		st.journal.commits.RLock()
		defer st.journal.commits.RUnlock()
		if err := save(ctx, r.cfg.Pool); err != nil {
			return err
		}
		st.journal.checkpoint(t.Key(), save)
		return nil
	})
}

// checkOnPool is check on a connection of the pool, tried again while
// the database cannot serve, for up to Config.Reconnect.
func (r *Runner) checkOnPool(ctx context.Context, j *journal) error {
	return r.retry(ctx, j, "checking the run's commits", func(ctx context.Context) error {
		conn, err := r.cfg.Pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		return r.check(ctx, conn.Conn(), j)
	})
}

// retry runs do, again while it fails because the database could not
// serve (see dbLost), with back-off for up to Config.Reconnect; each such
// failure is noted in j (nil: none) for the next check. do must be safe
// to run again (a read, an upsert).
func (r *Runner) retry(ctx context.Context, j *journal, what string, do func(context.Context) error) error {
	var deadline time.Time
	for delay := dbconn.Backoff; ; delay = min(2*delay, dbconn.MaxBackoff) {
		err := do(ctx)
		if err == nil || !dbLost(err) || ctx.Err() != nil {
			return err
		}
		if j != nil {
			j.lost()
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(r.cfg.Reconnect)
		}
		if time.Now().Add(delay).After(deadline) {
			return fmt.Errorf("the database did not serve for %v: %w", r.cfg.Reconnect, err)
		}
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "the database failed; trying again", slog.String("what", what),
			slog.Duration("in", delay), slog.String("error", err.Error()))
		if serr := dbconn.Sleep(ctx, delay); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

// dbLost reports whether err says the database could not serve: see
// unavailable, and besides a connection cut mid-statement (what a pool
// connection whose server died says).
func dbLost(err error) bool {
	if dbconn.Unavailable(err, nil) {
		return true
	}
	var netErr net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.As(err, &netErr) || strings.Contains(err.Error(), "conn closed")
}
