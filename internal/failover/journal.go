package failover

import (
	"context"
	"fmt"
	"io"
	"maps"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/internal/spool"
	"github.com/seoetl/etl/jobspec"
)

// Report is what a run found when its database connections were lost
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
// loaded again from the answers the run kept (pipeline.Config.KeepAnswers), and
// their tasks' checkpoints are written again.
type Report struct {
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
func (f *Report) Lost() bool { return f != nil && f.LostCommits > 0 }

// String says what happened in one line.
func (f *Report) String() string {
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

// Journal is what a run committed, kept until the run ends, so that what a
// failover lost can be found and committed again (see Failover).
type Journal[T any] struct {
	// Commits is held for reading by each commit of the run and the
	// journaling of it, and for writing by a check: a check sees every
	// commit journaled.
	Commits sync.RWMutex

	mu sync.Mutex
	// pages are the committed pages, oldest first.
	pages []*Page[T]
	// open are the reservations of the run not settled (in flight, or
	// left booked: their request may have been charged), by claim.
	open map[budget.Claim]budget.Reservation
	// checkpoints re-save each task's latest checkpoint, by task key.
	checkpoints map[string]func(context.Context, runs.Execer) error
	// keep bounds the bytes of answers kept, kept counts them; inMemory
	// counts those held in memory (keepInMemory bounds them).
	keep, kept, inMemory int64
	// lostAt is when a connection was first lost since the last check
	// (zero: none).
	lostAt time.Time
	report Report
	// failed are the tasks a lost page could not be loaded again for,
	// by task key.
	failed map[string]LostPage[T]
}

// LostPage is a page lost in a failover that could not be loaded again:
// its task goes on from it in a continuation of the run.
type LostPage[T any] struct {
	Offset int64
	Err    error
	// Before is the task as it stood before the page: what a
	// continuation counts it from.
	Before T
}

func NewJournal[T any](keep int64) *Journal[T] {
	return &Journal[T]{open: map[budget.Claim]budget.Reservation{}, checkpoints: map[string]func(context.Context, runs.Execer) error{},
		keep: keep, failed: map[string]LostPage[T]{}}
}

// Page is a committed page: what reloading it takes.
type Page[T any] struct {
	RunID       int64
	Reservation budget.Reservation
	Cost        int64
	Reload      func(ctx context.Context, tx pgx.Tx, src io.Reader) error
	// Answer is the answer as the API sent it; nil once let go of.
	Answer *spool.Spool
	Task   jobspec.Task
	Offset int64
	// Before is the task as it stood before the page.
	Before T
}

// keepInMemory bounds the bytes of the answers a run keeps in memory; the
// rest go to unlinked temporary files, so that keeping them leaves a run's
// memory as it was.
const keepInMemory = 4 << 20

// Committed journals a committed Committed; it keeps its answer (in memory while
// the answers kept there stay under keepInMemory, else on disk), letting
// go of the oldest answers past the bound (or of this one, when the bound
// is 0). Call with commits held.
func (j *Journal[T]) Committed(p *Page[T]) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.open, p.Reservation.Claim)
	j.pages = append(j.pages, p)
	if p.Answer != nil && j.keep == 0 {
		p.Answer.Close()
		p.Answer = nil
	}
	if p.Answer != nil {
		p.Answer.Compact(j.inMemory+p.Answer.Size() <= keepInMemory)
		j.kept += p.Answer.Size()
		j.inMemory += p.Answer.InMemory()
	}
	for _, old := range j.pages {
		if j.kept <= j.keep {
			break
		}
		if old.Answer != nil {
			j.kept -= old.Answer.Size()
			j.inMemory -= old.Answer.InMemory()
			old.Answer.Close()
			old.Answer = nil
		}
	}
}

// Reserved journals a reservation: it is open until settled.
func (j *Journal[T]) Reserved(rv budget.Reservation) {
	if rv.Claim == (budget.Claim{}) {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.open[rv.Claim] = rv
}

// Settled journals that rv was settled (without a page: at 0, or at its
// reservation).
func (j *Journal[T]) Settled(rv budget.Reservation) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.open, rv.Claim)
}

// Rebooked journals that a page found the ledger row of rv lost, and
// booked it again.
func (j *Journal[T]) Rebooked(rv budget.Reservation) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.report.LostCommits++
	j.report.Rebooked++
	j.report.UnitsRebooked += rv.Units
}

// Checkpoint journals how to save a task's latest checkpoint again. Call
// with commits held.
func (j *Journal[T]) Checkpoint(key string, save func(context.Context, runs.Execer) error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.checkpoints[key] = save
}

// Lost notes that a connection of the run was lost: the next check
// compares what the run committed with what the server has.
func (j *Journal[T]) Lost() {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.lostAt.IsZero() {
		j.lostAt = time.Now()
	}
}

// Due reports whether a connection was lost since the last check.
func (j *Journal[T]) Due() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return !j.lostAt.IsZero()
}

// TaskFailed says whether task key must stop, and from which offset a
// continuation goes on: a page of it was lost and could not be loaded
// again.
func (j *Journal[T]) TaskFailed(key string) (LostPage[T], bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	lp, ok := j.failed[key]
	return lp, ok
}

// LostPages are the tasks a lost page could not be loaded again for.
func (j *Journal[T]) LostPages() map[string]LostPage[T] {
	j.mu.Lock()
	defer j.mu.Unlock()
	return maps.Clone(j.failed)
}

// Close lets go of the answers kept.
func (j *Journal[T]) Close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, p := range j.pages {
		if p.Answer != nil {
			p.Answer.Close()
			p.Answer = nil
		}
	}
	j.pages, j.kept, j.inMemory = nil, 0, 0
}

// Report returns the run's report; nil when no connection was lost.
func (j *Journal[T]) Report() *Report {
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
			if lp, ok := j.failed[p.Task.Key()]; ok && p.Offset >= lp.Offset {
				f.UnitsBoughtTwice += p.Cost
			}
		}
	}
	return &f
}
