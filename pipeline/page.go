package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/dbconn"
	"github.com/seoetl/etl/internal/failover"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/internal/spool"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/transform"
)

// page fetches and loads one page, returning the rows it held. pc is the
// connection it loads on, taken before the request is sent.
//
// The request was paid for in advance (rv, its worst case). An answer of
// the API's error envelope cost nothing, and neither did a request that
// provably never reached the API (extract.ErrNotSent), nor one that got
// nothing HTTP back (extract.NotHTTPError) while the run has had no HTTP
// answer (nothing that speaks the API, so nothing that charges, is
// there): the reservation is released. Once the API answered with data
// it charged for it: the page's rows and what they cost are settled in
// one transaction. When that transaction fails because the database could
// not serve (the connection was lost, the server has no connection to
// give: see unavailable), the page is loaded again, on another
// connection, from the copy kept of the answer (spool), for up to
// Config.Reconnect: the API is not asked again.
// If it fails for another reason (or past that time), the reservation
// stands, so the ledger never counts less than the API charged. A body
// cut off mid-answer (cut, non-nil) commits its complete rows and settles
// at the reservation: the API charged the whole page.
//
// next is the offset the task goes on from: past the page's rows where it
// pages, below the oldest month the page loaded where it narrows (see
// Task.below), else offset (asked again whole).
func (r *Runner) page(ctx context.Context, pc *dbconn.PageConn, t jobspec.Task, o owner, acct budget.Account, offset int64, limit int, rv budget.Reservation, first bool, res *TaskResult, st *runState) (rows int, next int64, cut error, err error) {
	observed := r.cfg.Now().UTC()
	resp, err := r.cfg.Client.Do(ctx, extract.Request{Endpoint: t.Endpoint, Params: t.Params(int(offset), limit),
		FailFast: !st.answered.Load()})
	var apiErr *extract.APIError
	if err == nil || errors.As(err, &apiErr) {
		st.answered.Store(true)
	}
	if err != nil {
		return 0, offset, nil, r.unanswered(ctx, pc, rv, res, st, err)
	}
	defer resp.Body.Close()
	a := &answer{r: r, pc: pc, st: st, t: t, o: o, acct: acct, offset: offset, limit: limit, rv: rv, first: first, res: res,
		observed: observed, body: spool.New(resp.Body)}
	defer a.close()
	if t.Keyword != "" {
		a.ctxVals = []any{t.Keyword, t.Country}
	}
	return a.load(ctx)
}

// unanswered settles the request of a page the API did not answer with
// data (err): at nothing where it cost nothing (see page), else it counts
// in res at its reservation, as it may have been charged.
func (r *Runner) unanswered(ctx context.Context, pc *dbconn.PageConn, rv budget.Reservation, res *TaskResult, st *runState, err error) error {
	var apiErr *extract.APIError
	var notHTTP *extract.NotHTTPError
	free := !errors.Is(err, extract.ErrMaybeCharged) && (errors.As(err, &apiErr) || errors.Is(err, extract.ErrNotSent))
	if errors.As(err, &notHTTP) && !st.answered.Load() {
		// Nothing at the address has spoken HTTP in the run: not the
		// API, which charges what it answers (and the gate let no
		// other request go while the run had no answer). The run
		// stops at this mistake (Client.NotHTTP), and nothing that
		// was never charged stays booked against the caps.
		free = true
	}
	if free {
		if serr := r.settle(ctx, pc, rv, 0, st); serr != nil {
			res.Units += rv.Units
			return errors.Join(err, serr)
		}
	} else {
		res.Units += rv.Units // sent, no answer: it may have been charged
	}
	return err
}

// answer is a page the API answered with data, while it loads: the
// page's request (task t at offset, for limit lines, paid for by rv),
// the copy kept of its body, and what its last attempt loaded.
type answer struct {
	r        *Runner
	pc       *dbconn.PageConn
	st       *runState
	t        jobspec.Task
	o        owner
	acct     budget.Account
	offset   int64
	limit    int
	rv       budget.Reservation
	first    bool
	res      *TaskResult
	ctxVals  []any
	observed time.Time
	body     *spool.Spool
	kept     bool // the journal keeps body
	settled  bool // res counts what the page cost
	attempts int
	pl       pageLoad
	rejected int64
	drift    transform.Drift
}

// close counts the page at its reservation where its cost was not
// settled, and lets go of its body unless the journal keeps it.
func (a *answer) close() {
	if !a.settled {
		a.res.Units += a.rv.Units
	}
	if !a.kept {
		a.body.Close()
	}
}

// load loads the answer, again from the copy kept of it while the
// database cannot serve, and returns what page does.
func (a *answer) load(ctx context.Context) (rows int, next int64, cut error, err error) {
	r := a.r
	var (
		deadline time.Time // of loading the page again; zero until it first failed
		checking bool      // a commit's answer was lost: did it commit?
	)
	for delay := dbconn.Backoff; ; delay = min(2*delay, dbconn.MaxBackoff) {
		var failed error
		if checking {
			var done bool
			if done, failed = a.committed(ctx); done {
				break // it had committed: rows, cost and the rest are that attempt's
			}
		}
		if failed == nil {
			checking = false
			var whole bool // the transaction's work was done: a failure is its commit's
			whole, failed, err = a.attempt(ctx)
			if errors.Is(err, transform.ErrCut) {
				return a.cutEarly(ctx, err)
			}
			if err != nil {
				return 0, a.offset, nil, fmt.Errorf("decoding %s: %w", a.t.Endpoint.Name, err)
			}
			if failed == nil {
				break
			}
			checking = whole
		}
		if !dbconn.Unavailable(failed, a.pc.Conn) {
			return 0, a.offset, nil, failed
		}
		a.st.journal.Lost()
		if deadline.IsZero() {
			deadline = time.Now().Add(r.cfg.Reconnect)
		}
		if time.Now().Add(delay).After(deadline) {
			return 0, a.offset, nil, fmt.Errorf("the page was paid for and could not be loaded: the database did not serve for %v: %w", r.cfg.Reconnect, failed)
		}
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "the database failed while a page the API answered was loading; loading it again from the answer kept",
			slog.String("task", a.t.String()), slog.Int64("offset", a.offset), slog.Duration("in", delay), slog.String("error", failed.Error()))
		if err := dbconn.Sleep(ctx, delay); err != nil {
			return 0, a.offset, nil, errors.Join(failed, err)
		}
		if err := a.pc.Renew(ctx); err != nil {
			return 0, a.offset, nil, errors.Join(failed, err)
		}
	}
	a.count(ctx)
	return a.pl.rows, a.pl.next, a.pl.cut, nil
}

// committed reports whether the attempt whose commit's answer was lost
// committed all the same (its reservation is settled); then it journals
// the page.
func (a *answer) committed(ctx context.Context) (bool, error) {
	a.st.journal.Commits.RLock()
	defer a.st.journal.Commits.RUnlock()
	done, err := a.r.cfg.Ledger.Settled(ctx, a.pc.Conn, a.rv)
	if err == nil && done {
		a.journal()
		return true, nil
	}
	return false, err
}

// attempt decodes the answer (from the copy kept of it after the first
// attempt) and loads it in one transaction (see loadPage), journaling
// the page when it commits. decErr is the decoder's: nothing was loaded.
func (a *answer) attempt(ctx context.Context) (whole bool, failed, decErr error) {
	var src io.Reader = a.body
	if a.attempts++; a.attempts > 1 {
		src = a.body.Replay()
	}
	dec, err := a.r.decoder(src, a.t)
	if err != nil {
		return false, nil, err
	}
	a.st.journal.Commits.RLock()
	a.pl, whole, failed = a.r.loadPage(ctx, a.pc, dec, a.t, a.o, a.acct, a.offset, a.limit, a.rv, a.first, a.res, a.ctxVals, a.observed)
	if failed == nil {
		a.journal()
	}
	a.st.journal.Commits.RUnlock()
	a.rejected, a.drift = int64(dec.Rejected()), dec.Drift()
	dec.Release()
	return whole, failed, nil
}

// decoder decodes the answer src of task t.
func (r *Runner) decoder(src io.Reader, t jobspec.Task) (transform.Decoder, error) {
	return transform.NewDecoder(src, t.Endpoint, t.Format(), transform.Options{
		Allocator: r.cfg.Allocator, BatchRows: r.cfg.BatchRows, Logger: r.cfg.Logger, Required: t.Endpoint.Required(),
		Redactor: r.cfg.Client.Redactor()})
}

// cutEarly settles an answer cut before the header (or the data array)
// was whole: nothing to load, and the API charged the page.
func (a *answer) cutEarly(ctx context.Context, cut error) (int, int64, error, error) {
	if serr := a.r.settle(ctx, a.pc, a.rv, a.rv.Units, a.st); serr != nil {
		return 0, a.offset, nil, errors.Join(cut, serr)
	}
	a.settled = true
	a.res.Units += a.rv.Units
	return 0, a.offset, cut, nil
}

// journal notes the committed page (with its answer), under the
// commits lock held by the caller.
func (a *answer) journal() {
	st, pl := a.st, a.pl
	if pl.rebooked {
		st.journal.Rebooked(a.rv)
	}
	a.kept = true
	reload := func(ctx context.Context, tx pgx.Tx, src io.Reader) error {
		dec, err := a.r.decoder(src, a.t)
		if err != nil {
			return err
		}
		defer dec.Release()
		_, err = a.r.pageTx(ctx, tx, dec, a.t, a.o, a.acct, a.offset, a.limit, a.rv, false, a.res, a.ctxVals, a.observed, true)
		return err
	}
	st.journal.Committed(&failover.Page[TaskResult]{RunID: a.acct.RunID, Reservation: a.rv, Cost: pl.cost, Reload: reload, Answer: a.body, Task: a.t, Offset: a.offset, Before: *a.res})
	if pl.save != nil {
		st.journal.Checkpoint(a.t.Key(), pl.save)
	}
}

// count adds the page to the task's result: what it loaded, its rows and
// rejects, what it cost (settled) and the drift it met.
func (a *answer) count(ctx context.Context) {
	res, pl := a.res, a.pl
	res.Load = res.Load.Add(pl.loaded)
	res.Pages++
	res.Rows += int64(pl.rows)
	res.Rejected += a.rejected
	a.settled = true
	res.Units += pl.cost
	res.Drift.Unknown = appendNew(res.Drift.Unknown, a.drift.Unknown...)
	res.Drift.Missing = appendNew(res.Drift.Missing, a.drift.Missing...)
	a.r.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "page loaded", slog.String("task", a.t.String()),
		slog.Int64("offset", a.offset), slog.Int("rows", pl.rows))
}

// loadPage loads the rows of dec in one transaction on pc, with the
// task's checkpoint and the units the page cost (settling rv). whole says
// the transaction's work was done, so that an error is its commit's (which
// may have committed all the same). save writes the checkpoint again (see
// journal); rebooked says rv's ledger row was lost in a failover and was
// booked again in the transaction.
func (r *Runner) loadPage(ctx context.Context, pc *dbconn.PageConn, dec transform.Decoder, t jobspec.Task, o owner, acct budget.Account, offset int64, limit int,
	rv budget.Reservation, first bool, res *TaskResult, ctxVals []any, observed time.Time) (pl pageLoad, whole bool, err error) {
	pl.next = offset
	err = pgx.BeginFunc(ctx, pc.Conn, func(tx pgx.Tx) error {
		var err error
		pl, err = r.pageTx(ctx, tx, dec, t, o, acct, offset, limit, rv, first, res, ctxVals, observed, false)
		if err != nil {
			return err
		}
		whole = true
		return nil
	})
	return pl, whole, err
}

// pageLoad is what loading a page did.
type pageLoad struct {
	rows   int
	loaded load.Result
	cut    error
	cost   int64
	next   int64
	// save writes the page's checkpoint again; rebooked says rv's ledger
	// row was lost and booked again.
	save     func(context.Context, runs.Execer) error
	rebooked bool
}

// pageTx loads the rows of dec in tx, with the task's checkpoint and the
// units the page cost (settling rv), unless again: then it loads the rows
// alone, for a page whose commit a failover lost (see failover.Journal.Check).
func (r *Runner) pageTx(ctx context.Context, tx pgx.Tx, dec transform.Decoder, t jobspec.Task, o owner, acct budget.Account, offset int64, limit int,
	rv budget.Reservation, first bool, res *TaskResult, ctxVals []any, observed time.Time, again bool) (pl pageLoad, err error) {
	pl.next = offset
	page, err := r.cfg.Loader.NewPage(ctx, tx, t.Endpoint)
	if err != nil {
		return pl, err
	}
	page.FirstLoad = first
	var rejected []load.Rejected
	rows, loaded, cut, err := stagePage(ctx, dec, page, load.Batch{Endpoint: t.Endpoint, TargetID: o.targetID, Targets: o.targets, SetID: o.setID, Context: ctxVals,
		Month: t.Month, ObservedAt: observed}, func(rj transform.Reject) {
		rejected = append(rejected, load.Rejected{Endpoint: t.Endpoint.Name, TargetID: o.targetID, Request: t.Request(),
			Line: rj.Line, Raw: rj.Raw, Reason: rj.Reason, ObservedAt: observed})
	})
	pl.rows, pl.loaded, pl.cut = rows, loaded, cut
	if err != nil {
		return pl, err
	}
	if t.Spec.Incremental != "" {
		// Committed with the rows: the watermark never runs ahead of
		// them. A cut page is not the end of the data.
		if _, _, err := page.Advance(ctx, t.Watermark(acct.Job), acct.RunID, cut == nil && rows+len(rejected) < limit, observed); err != nil {
			return pl, err
		}
	}
	rows += len(rejected)
	pl.rows = rows
	if err := r.cfg.Loader.Quarantine(ctx, tx, rejected); err != nil {
		return pl, err
	}
	if again {
		return pl, nil
	}
	cost := t.Endpoint.Price.Cost(rows)
	if cut != nil {
		cost = max(rv.Units, cost) // the API charged the whole answer
	}
	pl.cost = cost
	// The checkpoint as it stands once this page commits.
	after := *res
	after.Pages++
	after.Rows += int64(rows)
	after.Rejected += int64(len(rejected))
	after.Units += cost
	after.Load = after.Load.Add(loaded)
	status := "running"
	if cut == nil && t.Done(rows, limit, after.Rows) {
		status = "done"
	}
	switch {
	case t.Paged():
		pl.next = offset + int64(rows)
	case t.Narrows():
		if oldest, ok, err := page.OldestMonth(ctx); err != nil {
			return pl, err
		} else if ok {
			pl.next = max(offset, t.Below(oldest))
		}
	}
	next := pl.next
	pl.save = func(ctx context.Context, q runs.Execer) error {
		return saveCheckpoint(ctx, q, acct.RunID, t, status, next, &after, "", observed)
	}
	if err := pl.save(ctx, tx); err != nil {
		return pl, err
	}
	// Last: it locks the budget counters until commit.
	err = r.cfg.Ledger.Settle(ctx, tx, rv, cost)
	if errors.Is(err, budget.ErrLost) {
		// A failover lost the commit that booked rv, after its request
		// was sent: the API charged it, so it is booked again.
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "the ledger row of a request sent before a failover was lost; booking it again",
			slog.String("task", t.String()), slog.Int64("units", rv.Units))
		if _, pl.rebooked, err = r.cfg.Ledger.Rebook(ctx, tx, rv); err == nil {
			err = r.cfg.Ledger.Settle(ctx, tx, rv, cost)
		}
	}
	return pl, err
}

// settle settles rv at units on the page's connection, in a transaction
// of its own. When the database fails (see unavailable) it is settled
// again on another connection, for up to Config.Reconnect, as a page is
// loaded again: what the answer cost is known (an error answer nothing),
// and a reservation left unsettled counts as spent at its worst case
// against every cap (4.5 million units for the first request of links).
func (r *Runner) settle(ctx context.Context, pc *dbconn.PageConn, rv budget.Reservation, units int64, st *runState) error {
	var deadline time.Time
	for delay := dbconn.Backoff; ; delay = min(2*delay, dbconn.MaxBackoff) {
		rebooked := false
		err := pgx.BeginFunc(ctx, pc.Conn, func(tx pgx.Tx) error {
			err := r.cfg.Ledger.Settle(ctx, tx, rv, units)
			if errors.Is(err, budget.ErrLost) {
				// Lost in a failover after it was sent: booked again.
				if _, rebooked, err = r.cfg.Ledger.Rebook(ctx, tx, rv); err == nil {
					err = r.cfg.Ledger.Settle(ctx, tx, rv, units)
				}
			}
			return err
		})
		if err == nil {
			if rebooked {
				st.journal.Rebooked(rv)
			}
			st.journal.Settled(rv)
			return nil
		}
		if !dbconn.Unavailable(err, pc.Conn) {
			return err
		}
		st.journal.Lost()
		if deadline.IsZero() {
			deadline = time.Now().Add(r.cfg.Reconnect)
		}
		if time.Now().Add(delay).After(deadline) {
			return fmt.Errorf("the database did not serve for %v: %w", r.cfg.Reconnect, err)
		}
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "the database failed while a request's cost was settling; settling it again",
			slog.Int64("ledger_id", rv.ID), slog.Int64("units", units), slog.Duration("in", delay), slog.String("error", err.Error()))
		if serr := dbconn.Sleep(ctx, delay); serr != nil {
			return errors.Join(err, serr)
		}
		if rerr := pc.Renew(ctx); rerr != nil {
			return errors.Join(err, rerr)
		}
		// The commit's answer may be what was lost.
		if done, serr := r.cfg.Ledger.Settled(ctx, pc.Conn, rv); serr == nil && done {
			st.journal.Settled(rv)
			return nil
		}
	}
}
