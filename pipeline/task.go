package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/apibound"
	"github.com/seoetl/etl/internal/dbconn"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
)

// runTask pages through one task. Each page is loaded in one transaction,
// with the task's checkpoint and the units it cost. Where the endpoint
// takes a limit, every request sends one (the page size, cut to what
// max_rows still allows and to what the budget affords), so no request can
// return, and cost, more lines than the job asked for.
//
// from is the task's checkpoint in an earlier attempt of the run: a task
// done there is not run again, any other continues at its next offset (an
// incremental task asking past the same watermark as before).
func (r *Runner) runTask(ctx context.Context, i int, t jobspec.Task, o owner, acct budget.Account, from runs.Checkpoint, st *runState) TaskResult {
	if t.Listings != nil {
		return r.runListings(ctx, i, t, acct, from, st)
	}
	tr := &taskRun{r: r, i: i, t: t, o: o, acct: acct, st: st,
		res: TaskResult{Task: t, Resumed: from.Status != "", Pages: from.Pages, Rows: from.Rows,
			Rejected: from.Rejected, Units: from.Units, PriorRows: from.Rows, PriorUnits: from.Units, Load: from.Load}}
	switch {
	case from.Status == "done":
		return tr.res
	case from.Status == "refused" && !runs.RefusedByCap(from.Reason):
		// The API refused the request as invalid: asking again would be
		// refused again. (One refused for a cap goes on: the cap may have
		// been raised since, and if not, the ledger refuses it again
		// before anything is sent.)
		tr.res.Skipped, tr.res.Refused = "refused in an earlier attempt of the run: "+from.Reason, true
		return tr.res
	}
	tr.offset = from.Offset
	if tr.start(ctx, from) == taskEnds {
		return tr.res
	}
	r.cfg.Observer.TaskStarted(i, tr.res)
	tr.lb = r.limitBound(tr.t, st)
	return tr.pages(ctx)
}

// taskRun is a task at work: where it stands, and what its page loop
// carries from one page to the next.
type taskRun struct {
	r    *Runner
	i    int // the task's index in the run (Observer)
	t    jobspec.Task
	o    owner
	acct budget.Account
	st   *runState
	res  TaskResult
	// offset is where the next page starts; limit is the task's (0: the
	// endpoint takes none), pageLimit the next page's.
	offset    int64
	limit     int
	pageLimit int
	// first: the pages load by plain COPY (load.Page.FirstLoad).
	first    bool
	failures int  // pages in a row that failed after being sent, or were cut before a complete row
	opener   bool // this task sends the run's first request (runState.gate)
	// lb is the bound of limit the task learns (nil: none); warned says
	// a limit above it was reported.
	lb     *apibound.Use
	warned bool
	pc     *dbconn.PageConn // the page's turn and connection, while it holds one
}

// step is what a step of a task says comes next.
type step int

const (
	proceed   step = iota // the task's next step
	turnAgain             // the page loop's next turn, from its start
	taskEnds              // the end of the task: its result is final
)

// start starts the task, unless the run stops: an incremental one from
// its watermark, its checkpoint saved as running, and whether its pages
// load by plain COPY.
func (tr *taskRun) start(ctx context.Context, from runs.Checkpoint) step {
	wctx := context.WithoutCancel(ctx)
	if reason := tr.st.stop.Load(); reason != nil {
		return tr.skip(ctx, *reason)
	}
	tr.limit = tr.t.Limit()
	if tr.t.Spec.Incremental != "" {
		if err := tr.watermark(wctx, from); err != nil {
			return tr.fail(ctx, err)
		}
	}
	if err := tr.r.saveTask(wctx, tr.st, tr.acct, tr.t, "running", tr.offset, &tr.res, ""); err != nil {
		return tr.fail(ctx, err)
	}
	var err error
	if tr.first, err = tr.firstLoad(wctx, from); err != nil {
		return tr.fail(ctx, err)
	}
	return proceed
}

// watermark is where an incremental task starts: past the watermark an
// earlier attempt of the run asked past, else past the warehouse's, from
// the first page.
func (tr *taskRun) watermark(ctx context.Context, from runs.Checkpoint) error {
	r := tr.r
	since := time.Time{}
	if from.Since != nil {
		since = *from.Since
	} else {
		tr.offset = 0
		if err := r.retry(ctx, tr.st.journal, "reading a watermark", func(ctx context.Context) (err error) {
			since, _, err = load.Watermark(ctx, r.cfg.Pool, tr.t.Watermark(tr.acct.Job))
			return err
		}); err != nil {
			return err
		}
	}
	tr.t.Since, tr.res.Task.Since = since, since
	return nil
}

// firstLoad reports whether the task's pages load by plain COPY.
func (tr *taskRun) firstLoad(ctx context.Context, from runs.Checkpoint) (bool, error) {
	r, t := tr.r, tr.t
	// A task that starts on a target (or set) and month the table holds
	// nothing of loads its pages by plain COPY (load.Page.FirstLoad); not
	// an incremental one, whose watermark is read from the staged rows.
	id := max(tr.o.targetID, tr.o.setID)
	if id == 0 || tr.offset != 0 || from.Status != "" || t.Spec.Incremental != "" {
		return false, nil
	}
	var holds bool
	err := r.retry(ctx, tr.st.journal, "reading what the warehouse holds", func(ctx context.Context) (err error) {
		holds, err = r.cfg.Loader.Holds(ctx, t.Endpoint, id, t.Month)
		return err
	})
	if err != nil {
		return false, err
	}
	return !holds, nil
}

// finish ends the task at status, for reason (redacted), its checkpoint
// saved: unless the lock was lost.
func (tr *taskRun) finish(ctx context.Context, status, reason string) step {
	reason = tr.r.cfg.Client.Redactor().String(reason)
	if tr.st.lost.Load() {
		return taskEnds // the run is another process's now
	}
	if err := tr.r.saveTask(context.WithoutCancel(ctx), tr.st, tr.acct, tr.t, status, tr.offset, &tr.res, reason); err != nil && tr.res.Err == nil {
		tr.res.Err = err
	}
	return taskEnds
}

// skip ends the task skipped, for reason.
func (tr *taskRun) skip(ctx context.Context, reason string) step {
	tr.res.Skipped = reason
	return tr.finish(ctx, "skipped", reason)
}

// fail ends the task at err: refused where the API refused the request
// itself, else failed.
func (tr *taskRun) fail(ctx context.Context, err error) step {
	tr.res.Err = err
	status := "failed"
	var apiErr *extract.APIError
	if errors.As(err, &apiErr) && (apiErr.Status == http.StatusBadRequest || apiErr.Status == http.StatusUnprocessableEntity) {
		// The API refused the request itself: asking again in a
		// continuation of the run cannot help.
		status, tr.res.Refused = "refused", true
	}
	return tr.finish(ctx, status, err.Error())
}

// pages is the task's page loop: a page a turn, until the task ends.
func (tr *taskRun) pages(ctx context.Context) TaskResult {
	defer func() {
		tr.pc.Release()
		if tr.opener {
			tr.st.gate.leave(tr.r.cfg.Client, tr.st, tr.res)
		}
	}()
	for {
		if tr.nextPage(ctx) == taskEnds {
			return tr.res
		}
	}
}

// nextPage is a turn of the page loop: the page readied, its connection
// taken, its units reserved, the page fetched and loaded (with its
// checkpoint, its cost settled), and what comes after it decided.
func (tr *taskRun) nextPage(ctx context.Context) step {
	if s := tr.ready(ctx); s != proceed {
		return s
	}
	if s := tr.takeConn(ctx); s != proceed {
		return s
	}
	rv, s := tr.reserve(ctx)
	if s != proceed {
		return s
	}
	return tr.afterPage(ctx, tr.fetch(ctx, rv))
}

// ready readies the next page: the run not stopped, the task's turn to
// ask, and the page's limit.
func (tr *taskRun) ready(ctx context.Context) step {
	if reason := tr.st.stopping(ctx); reason != nil {
		return tr.skip(ctx, *reason)
	}
	tr.pageLimit = tr.t.PageLimit(tr.res.Rows)
	if tr.limit > 0 && tr.pageLimit <= 0 {
		// Resumed with a lower max_rows than it had read already.
		return tr.finish(ctx, "done", "")
	}
	if s := tr.waitTurn(ctx); s != proceed {
		return s
	}
	return tr.sizePage(ctx)
}

// waitTurn waits at the run's gate, while it is closed, for the task's
// turn to ask.
func (tr *taskRun) waitTurn(ctx context.Context) step {
	if tr.opener || tr.st.gate.passed() {
		return proceed
	}
	// Until the API has answered a request of the run, one task
	// asks and the others wait: a wrong address or key stops the
	// run after one request, not one per task in flight.
	var err error
	if tr.opener, err = tr.st.gate.wait(ctx); err != nil {
		return turnAgain // interrupted while waiting
	}
	if reason := tr.st.stop.Load(); reason != nil {
		return tr.skip(ctx, *reason)
	}
	return proceed
}

// sizePage sizes the page to the API's bound of limit, where the task
// learns it, and to the rest a narrowing task has to ask for.
func (tr *taskRun) sizePage(ctx context.Context) step {
	if tr.lb != nil {
		// Pages as large as the API allows: its bound of limit, as
		// learned by now (by this task or another).
		if err := tr.r.pageBound(context.WithoutCancel(ctx), &tr.t, tr.lb, &tr.warned); err != nil {
			return tr.fail(ctx, err)
		}
		tr.pageLimit = tr.t.PageLimit(tr.res.Rows)
		if tr.t.Bound == 0 && tr.t.Spec.Limit == 0 && !tr.st.answered.Load() {
			// The bound is not known, and nothing has answered the
			// run yet: ask the endpoint's default page, not the probe
			// of firstLimitProbe lines, whose worst case (4.5 million
			// units of links) a request that is never answered would
			// leave booked. The probe follows the API's first answer.
			tr.pageLimit = min(tr.pageLimit, tr.t.Endpoint.DefaultLimit)
		}
	}
	if tr.t.Narrows() && tr.offset > 0 {
		// A cut answer brought the newest months: ask for the rest.
		rest, ok := tr.t.Rest(tr.offset, tr.res.Rows-tr.res.Rejected)
		if !ok {
			return tr.finish(ctx, "done", "")
		}
		tr.pageLimit = min(tr.pageLimit, rest)
	}
	return proceed
}

// takeConn takes the page's connection, then checks on the run: the
// job's lock still held, and what a failover lost of its commits.
func (tr *taskRun) takeConn(ctx context.Context) step {
	r, st, wctx := tr.r, tr.st, context.WithoutCancel(ctx)
	// The page's connection first, before its units and its request:
	// a request is sent only when its answer has a connection to load
	// on (and the units in flight are those of pages under way).
	var err error
	if tr.pc, err = r.pages.Take(ctx); err != nil {
		if ctx.Err() != nil {
			return turnAgain // interrupted while waiting: nothing held
		}
		return tr.fail(ctx, err) // nothing was sent
	}
	if !st.held(wctx) {
		tr.pc.Release()
		return turnAgain // the lock was lost: nothing is sent
	}
	if err := r.checkOn(wctx, tr.pc, st.journal); err != nil {
		return tr.fail(ctx, err)
	}
	if lp, ok := st.journal.TaskFailed(tr.t.Key()); ok {
		// A page of it was lost in a failover, and its answer with
		// it: a continuation goes on from that page, counting the
		// task as it stood before it.
		tr.pc.Release()
		b, res := lp.Before, &tr.res
		tr.offset, res.Pages, res.Rows, res.Rejected, res.Units, res.Load = lp.Offset, b.Pages, b.Rows, b.Rejected, b.Units, b.Load
		return tr.fail(ctx, lp.Err)
	}
	return proceed
}

// reserve reserves the units of the page's worst case (rv) before its
// request is sent. A cap that cannot pay for it stops the run, or
// refuses the task when no window of the cap ever could.
func (tr *taskRun) reserve(ctx context.Context) (budget.Reservation, step) {
	r, st, t := tr.r, tr.st, tr.t
	var rv budget.Reservation
	err := r.retry(ctx, st.journal, "reserving units", func(ctx context.Context) (err error) {
		rv, err = r.cfg.Ledger.Reserve(ctx, tr.acct, budget.Ask{Endpoint: t.Endpoint, Target: t.Request(),
			Lines: t.WorstLines(tr.pageLimit), Shrink: t.Shrinks()})
		return err
	})
	st.journal.Reserved(rv)
	var ex *budget.ExhaustedError
	if errors.As(err, &ex) {
		reason := err.Error()
		if ex.Need > ex.Limit {
			// No window of this cap will ever pay for it: skip the
			// task alone, or every continuation would stop here.
			tr.res.Skipped = reason + fmt.Sprintf("; that is more than the whole %s cap, %s: raise the cap or lower the task's limit", ex.Cap, runs.NeverUnderCap)
			tr.res.Refused = true
			return rv, tr.finish(ctx, "refused", tr.res.Skipped)
		}
		st.stop.CompareAndSwap(nil, &reason)
		return rv, tr.skip(ctx, reason)
	}
	if err != nil && ctx.Err() != nil {
		tr.pc.Release()
		return rv, turnAgain // interrupted while waiting for room: nothing reserved
	}
	if err != nil {
		return rv, tr.fail(ctx, err)
	}
	if reason := st.stop.Load(); reason != nil {
		// Stopped while this task waited for room: send nothing.
		err := r.settle(context.WithoutCancel(ctx), tr.pc, rv, 0, st)
		r.cfg.Ledger.Finish(rv)
		if err != nil {
			return rv, tr.fail(ctx, err)
		}
		return rv, tr.skip(ctx, *reason)
	}
	if tr.limit > 0 {
		tr.pageLimit = rv.Lines
	}
	return rv, proceed
}

// fetched is what fetching and loading a page did: the rows it held
// (got), the offset to go on from, where its answer was cut, its error,
// and the configuration mistake it met ("" when none).
type fetched struct {
	got   int
	next  int64
	cut   error
	err   error
	fatal string
}

// fetch fetches the page and loads it (see page), then lets go of its
// reservation and its connection. A configuration mistake stops the run;
// the API's first answer, or a stop, opens the gate to the others.
func (tr *taskRun) fetch(ctx context.Context, rv budget.Reservation) fetched {
	r, st := tr.r, tr.st
	// Once a page is sent it is finished and committed, even when ctx is
	// cancelled: the API charges for it either way.
	wctx := context.WithoutCancel(ctx)
	wasAnswered := st.answered.Load()
	var f fetched
	f.got, f.next, f.cut, f.err = r.page(wctx, tr.pc, tr.t, tr.o, tr.acct, tr.offset, tr.pageLimit, rv, tr.first, &tr.res, st)
	r.cfg.Ledger.Finish(rv) // after page's transaction, settled or not
	tr.pc.Release()
	fatal := r.cfg.Client.Refusal(f.err)
	var apiErr *extract.APIError
	if wasAnswered && errors.As(f.err, &apiErr) && apiErr.Status == http.StatusNotFound {
		// The API answered a request of the run at this address
		// already, so a 404 (a proxy's page, an endpoint withdrawn) is
		// not a wrong base address: this task fails alone.
		fatal = ""
	}
	if fatal == "" && !st.answered.Load() {
		fatal = r.cfg.Client.AddressMistake(f.err)
	}
	if fatal != "" {
		// A configuration mistake: every other request would meet it
		// too. Pages in flight finish, the rest is skipped, and the run
		// fails with this one message.
		st.fatal.Store(true)
		st.stop.CompareAndSwap(nil, &fatal)
	}
	f.fatal = fatal
	if tr.opener && (st.answered.Load() || st.stop.Load() != nil) {
		// The API answered, or the run stops: the others go on (after
		// the stop above, so the waiting tasks see it). Until then
		// this task keeps the turn, asking again as it may (a
		// gateway's page, a timeout: maybe charged), and the others
		// wait (see gate).
		tr.opener = false
		st.gate.open()
	}
	return f
}

// afterPage decides what follows the page: the page asked again, the
// task (or the run) stopped, or the next page, until the task is done.
func (tr *taskRun) afterPage(ctx context.Context, f fetched) step {
	wctx := context.WithoutCancel(ctx)
	if s := tr.pageFailed(ctx, f); s != proceed {
		return s
	}
	if tr.lb != nil {
		if err := tr.lb.Accepted(wctx, tr.pageLimit); err != nil {
			return tr.fail(ctx, err)
		}
	}
	if f.cut != nil {
		return tr.cutPage(ctx, f)
	}
	tr.failures = 0
	tr.offset = f.next
	tr.r.cfg.Observer.PageLoaded(tr.i, tr.res)
	if tr.t.Done(f.got, tr.pageLimit, tr.res.Rows) {
		tr.r.noteTotal(wctx, tr.t, tr.pageLimit, f.got, tr.res.Rows)
		return taskEnds
	}
	return turnAgain
}

// pageFailed decides what follows a page that failed (f.err) or met a
// configuration mistake: it is asked again where that may help, else
// the task, or the run, stops.
func (tr *taskRun) pageFailed(ctx context.Context, f fetched) step {
	st := tr.st
	if f.fatal == "" {
		// The API refused the limit (and charged nothing): ask again
		// at the bound its refusal names, or at half.
		again, lerr := apibound.LimitRefused(context.WithoutCancel(ctx), tr.lb, f.err, tr.pageLimit, tr.offset)
		if lerr != nil {
			return tr.fail(ctx, lerr)
		}
		if again {
			return turnAgain
		}
	}
	switch {
	case f.fatal != "":
		return tr.skip(ctx, *st.stop.Load())
	case errors.Is(f.err, extract.ErrUnitsExhausted):
		reason := runs.SkippedUnits
		st.stop.CompareAndSwap(nil, &reason)
		return tr.skip(ctx, reason)
	case errors.Is(f.err, extract.ErrMaybeCharged) && tr.failures < maxPageFailures:
		// The request may have reached the API and been charged: its
		// reservation stays booked, and the page is asked again under
		// a new one.
		tr.failures++
		tr.r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "page failed after it was sent; asking again", slog.String("task", tr.t.String()),
			slog.Int64("offset", tr.offset), slog.String("error", f.err.Error()))
		return turnAgain
	case f.err != nil:
		return tr.fail(ctx, f.err)
	}
	return proceed
}

// cutPage decides what follows a page whose answer was cut (f.cut): the
// rest is asked for, until too many answers in a row were cut.
func (tr *taskRun) cutPage(ctx context.Context, f fetched) step {
	t := tr.t
	// The complete rows before the cut are committed; ask for the
	// rest, from the next offset where the task pages.
	// Progress is rows the task need not ask for again: a request
	// that is neither paged nor narrowed is asked again whole, so
	// its cut answers count as failed tries whatever they held
	// (each is charged whole, and they could go on for ever).
	again := !t.Paged() && !t.Narrows()
	if f.next > tr.offset && !again {
		tr.failures = 0
	} else if tr.failures++; tr.failures > maxPageFailures {
		if again && f.got > 0 {
			return tr.fail(ctx, fmt.Errorf("%d answers in a row were cut, and the request is asked again whole (it has no offset); the last: %w", tr.failures, f.cut))
		}
		return tr.fail(ctx, fmt.Errorf("%d answers in a row were cut before their first complete row; the last: %w", tr.failures, f.cut))
	}
	tr.r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "the answer was cut off; its complete rows are loaded, asking for the rest",
		slog.String("task", t.String()), slog.Int64("offset", tr.offset), slog.Int("rows", f.got), slog.String("error", f.cut.Error()))
	tr.offset = f.next
	tr.r.cfg.Observer.PageLoaded(tr.i, tr.res)
	return turnAgain
}

// maxPageFailures bounds the pages of a task in a row that are asked again
// because they failed after being sent (they may have been charged) or
// were cut before their first complete row.
const maxPageFailures = 3
