package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/apibound"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/migrations"
	"github.com/seoetl/etl/push"
	"github.com/seoetl/etl/transform"
)

// A listings task pulls every location of an account (spec 4.5): it pages
// through Get locations, reads locations one by one (Get location) for
// their status, which pages do not carry, and loads each page with the
// statuses in one transaction with its checkpoint (load.Loader.ListingPage:
// versions, problems). Once every page is in, the locations the pull did
// not see are read one by one: those the API no longer knows (404) are
// marked gone, the others (missed by paging over data that moved) are
// loaded. It is a task like the others: under the job's lock, on its
// schedule, resumed from its last committed page, priced by etl plan (at 0
// units: listing calls cost none, spec 8.1, but take time: spec 8.2).

// runListings runs a listings task: from the checkpoint of an earlier
// attempt, where there is one.
func (r *Runner) runListings(ctx context.Context, i int, t jobspec.Task, acct budget.Account, from runs.Checkpoint, st *runState) TaskResult {
	res := TaskResult{Task: t, Resumed: from.Status != "", Pages: from.Pages, Rows: from.Rows,
		Rejected: from.Rejected, PriorRows: from.Rows, Load: from.Load}
	if from.Status == "done" {
		return res
	}
	// The pull began when its first attempt did: a location last observed
	// before then that no page of the pull listed is a candidate for gone.
	began := r.cfg.Now().UTC()
	if from.Since != nil {
		began = *from.Since
	}
	t.Since, res.Task.Since = began, began
	p := &pull{r: r, i: i, t: t, acct: acct, st: st, res: &res, began: began, offset: from.Offset}
	p.run(ctx)
	return res
}

// pull is one listings task at work.
type pull struct {
	r      *Runner
	i      int // the task's index in the run (Observer)
	t      jobspec.Task
	client *extract.Client // of the account pulled
	lc     *extract.Listings
	bound  *apibound.Use // of size, on Get locations of the API
	acct   budget.Account
	st     *runState
	res    *TaskResult
	offset int64 // where the pull goes on from, in locations (its checkpoint's)
	began  time.Time
	opts   transform.Options
}

// run runs the pull, unless the run stops: its account's client taken,
// its checkpoint saved as running, then its pages, the locations it did
// not see, and the push that follows it.
func (p *pull) run(ctx context.Context) step {
	r, st, wctx := p.r, p.st, context.WithoutCancel(ctx)
	if reason := st.stop.Load(); reason != nil {
		return p.skip(ctx, *reason)
	}
	if err := p.connect(); err != nil {
		return p.fail(ctx, err)
	}
	if err := saveCheckpoint(wctx, r.cfg.Pool, p.acct.RunID, p.t, "running", p.offset, p.res, "", r.cfg.Now()); err != nil {
		return p.fail(ctx, err)
	}
	r.cfg.Observer.TaskStarted(p.i, *p.res)
	if p.pages(ctx) == taskEnds {
		return taskEnds
	}
	if !st.held(wctx) {
		return p.skip(ctx, *st.stop.Load())
	}
	if reason := st.stop.Load(); reason != nil {
		return p.skip(ctx, *reason)
	}
	if err := p.gone(wctx); err != nil {
		return p.fail(ctx, err)
	}
	if p.t.Listings.Push != "" && p.runPush(ctx) == taskEnds {
		return taskEnds
	}
	return p.finish(ctx, "done", "")
}

// connect takes the client of the task's account: its listings API, the
// bound of its page size, and what its answers are decoded with.
func (p *pull) connect() error {
	r, spec := p.r, p.t.Listings
	if r.cfg.AccountClient == nil {
		return fmt.Errorf("this runner has no accounts (set ETL_SECRET_KEY and sign the account in with etl auth login --account %s)", spec.Account)
	}
	client, err := r.cfg.AccountClient(spec.Account)
	if err != nil {
		return err
	}
	p.client, p.lc = client, client.Listings()
	p.bound = p.st.bounds.Of(r.boundsConfig(), client.Origin(), catalog.GetLocations.Name, "size")
	p.opts = transform.Options{Allocator: r.cfg.Allocator, Logger: r.cfg.Logger, Redactor: client.Redactor()}
	return nil
}

// pages pulls the pages from the task's offset to the last, each loaded
// with the task's checkpoint.
func (p *pull) pages(ctx context.Context) step {
	st, wctx := p.st, context.WithoutCancel(ctx)
	size, err := p.size(wctx)
	if err != nil {
		return p.failAt(ctx, err)
	}
	page := int(p.offset/int64(size)) + 1
	for {
		if reason := st.stopping(ctx); reason != nil {
			return p.skip(ctx, *reason)
		}
		if !st.held(wctx) {
			return p.skip(ctx, *st.stop.Load()) // the lock was lost: nothing is sent
		}
		got, more, err := p.page(wctx, &page, &size)
		if err != nil {
			return p.failAt(ctx, err)
		}
		st.answered.Store(true)
		p.offset = int64(page-1)*int64(size) + int64(got)
		p.r.cfg.Observer.PageLoaded(p.i, *p.res)
		if !more {
			return proceed
		}
		page++
	}
}

// runPush runs the push of the task (listings: {push: RELATION}) once
// the pull is in.
func (p *pull) runPush(ctx context.Context) step {
	r, st, spec := p.r, p.st, p.t.Listings
	// The pull is the push's base: what differs from it is sent. A
	// push killed or stopped is finished by the next (package push
	// records every item with its request). The end of ctx (SIGINT)
	// stops it after the request in flight, as it stops a pull after
	// the page in flight; the task is then skipped, and the next run
	// of the job pushes the rest.
	sum, err := push.Run(ctx, push.Config{Pool: r.cfg.Pool, Client: p.client, Account: spec.Account, Relation: spec.Push,
		Now: r.cfg.Now, Logger: r.cfg.Logger}, push.Options{})
	p.res.Push = sum
	if ctx.Err() != nil && (err != nil || sum.Partial()) {
		reason := interruptedReason
		st.interrupted.Store(true)
		st.stop.CompareAndSwap(nil, &reason)
		if sum != nil {
			reason = fmt.Sprintf("%s (push %d from %s stopped: %s)", reason, sum.PushID, spec.Push, sum.Undone())
		}
		return p.skip(ctx, reason)
	}
	if err != nil {
		return p.fail(ctx, fmt.Errorf("push from %s: %w", spec.Push, err))
	}
	r.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "listings pushed", slog.String("account", spec.Account),
		slog.String("from", spec.Push), slog.Int64("push_id", sum.PushID), slog.Int("sent", sum.Sent),
		slog.Int("updated", sum.Updated), slog.Int("failed", sum.Failed), slog.Int("refused", sum.Refused),
		slog.Int("unchanged", sum.Unchanged), slog.Int("waiting", sum.Waiting))
	if sum.Partial() {
		// The run is partial, as etl listings push exits 3: what
		// failed is listed by etl listings status.
		// The task's name says the account.
		return p.fail(ctx, fmt.Errorf("push %d from %s: %s (etl listings status --account %s lists them)",
			sum.PushID, spec.Push, sum.Undone(), spec.Account))
	}
	return proceed
}

// finish ends the task at status, for reason, its checkpoint saved:
// unless the lock was lost.
func (p *pull) finish(ctx context.Context, status, reason string) step {
	if p.st.lost.Load() {
		return taskEnds // the run is another process's now
	}
	if err := saveCheckpoint(context.WithoutCancel(ctx), p.r.cfg.Pool, p.acct.RunID, p.t, status, p.offset, p.res, reason, p.r.cfg.Now()); err != nil && p.res.Err == nil {
		p.res.Err = err
	}
	return taskEnds
}

// fail ends the task failed at err.
func (p *pull) fail(ctx context.Context, err error) step {
	p.res.Err = err
	return p.finish(ctx, "failed", err.Error())
}

// skip ends the task skipped, for reason.
func (p *pull) skip(ctx context.Context, reason string) step {
	p.res.Skipped = reason
	return p.finish(ctx, "skipped", reason)
}

// failAt fails the task at err of a request; while the API has
// answered no request of the run, an address that cannot be reached
// (or speaks no HTTP) is a configuration mistake that stops the run
// at once, as it stops the data API's tasks.
func (p *pull) failAt(ctx context.Context, err error) step {
	if !p.st.answered.Load() {
		if fatal := p.client.AddressMistake(err); fatal != "" {
			// Skipped with the run's one message, as the data API's
			// task that met it is.
			p.st.fatal.Store(true)
			p.st.stop.CompareAndSwap(nil, &fatal)
			return p.skip(ctx, *p.st.stop.Load())
		}
	}
	return p.fail(ctx, err)
}

// account is the account pulled.
func (p *pull) account() string { return p.t.Listings.Account }

// size is the page size to ask for: the spec's, lowered to the bound the
// API is known to accept; else that bound; else the first probe.
func (p *pull) size(ctx context.Context) (int, error) {
	known, err := p.bound.Get(ctx)
	if err != nil {
		return 0, err
	}
	want := p.t.Listings.Size
	switch {
	case want > 0 && known > 0 && want > known:
		p.r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "listings: the size asked for is above what the API accepts; using its bound",
			slog.String("account", p.account()), slog.Int("size", want), slog.Int("bound", known))
		return known, nil
	case want > 0:
		return want, nil
	case known > 0:
		return known, nil
	}
	return apibound.FirstSizeProbe(), nil
}

// page fetches page *page of *size locations, reads the statuses it
// needs and loads them with the task's checkpoint. A size the API refuses
// is lowered (to the bound its refusal names, or by halving) and the page
// asked again, the page number moved so that it starts where it did; the
// bound learned is recorded. It returns how many locations the page held
// and whether more pages follow.
func (p *pull) page(ctx context.Context, page, size *int) (got int, more bool, err error) {
	for {
		resp, err := p.lc.Page(ctx, *page, *size)
		if max, ok := extract.SizeRefused(err); ok {
			start := (*page - 1) * *size
			next, rerr := p.bound.Refused(ctx, *size, max)
			if rerr != nil {
				return 0, false, fmt.Errorf("%w: %w", rerr, err)
			}
			*size = next
			*page = start / *size + 1
			continue
		}
		if err != nil {
			return 0, false, p.failed(fmt.Sprintf("page %d of %s", *page, sizeName(*size)), err)
		}
		observed := p.r.cfg.Now().UTC()
		lp, err := transform.DecodeListingPage(resp.Body, p.opts)
		resp.Body.Close()
		if err != nil {
			return 0, false, fmt.Errorf("page %d: %w", *page, err)
		}
		defer lp.Release()
		// The positions the page covers, not its rows: an id the API
		// lists twice leaves a row fewer, and is no bound of the size.
		n := lp.Items
		if err := p.bound.Accepted(ctx, *size); err != nil { // found by halving, maybe
			return 0, false, err
		}
		if n < *size && *page < lp.TotalPages {
			// A short page that is not the last: the API serves fewer
			// than asked without saying so. Page at what it served.
			if n == 0 {
				return 0, false, fmt.Errorf("page %d of %s is empty, but the API counts %d pages", *page, sizeName(*size), lp.TotalPages)
			}
			start := (*page - 1) * *size
			if err := p.bound.Learn(ctx, n, *size, "probed"); err != nil {
				return 0, false, err
			}
			*size = n
			*page = start / *size + 1
			continue
		}
		statuses, err := p.statuses(ctx, lp)
		if err != nil {
			return 0, false, err
		}
		if err := p.load(ctx, lp, statuses, observed, int64((*page-1)**size+n)); err != nil {
			return 0, false, err
		}
		return n, *page < lp.TotalPages && n > 0, nil
	}
}

// failed is the error of a request for what: the account's refusal to
// sign in is the whole story, and said alone (the task's name, which
// names the account, precedes every error of the task); other failures
// say which request failed.
func (p *pull) failed(what string, err error) error {
	var again *auth.SignInError
	if errors.As(err, &again) {
		return again
	}
	return fmt.Errorf("%s: %w", what, err)
}

// sizeName says size in an error: the first probe, whose number means
// nothing to a reader, is "the largest size".
func sizeName(size int) string {
	if size == apibound.FirstSizeProbe() {
		return "the largest size"
	}
	return fmt.Sprintf("size %d", size)
}

// statuses reads the status of the page's locations that need one (all,
// or with status: changed those whose stored version does not tell it),
// one Get location each, one at a time: the client paces them at the
// operation's limit (10 a second), which one in flight reaches while the
// API answers within 100 ms; several in flight would reach it over a
// slower network, but their order at the API would no longer be the
// order they were paced in. A location gone since the page (404) has
// none; it stays as the page listed it.
func (p *pull) statuses(ctx context.Context, lp *transform.ListingPage) (map[string]string, error) {
	ids := lp.IDs
	if p.t.Listings.Status == jobspec.StatusChanged {
		var err error
		if ids, err = p.unsure(ctx, lp); err != nil {
			return nil, err
		}
	}
	m := make(map[string]string, len(ids))
	for _, id := range ids {
		loc, err := p.single(ctx, id)
		if err != nil {
			return nil, err
		}
		if loc == nil {
			continue
		}
		if s := statusOf(loc); s != "" {
			m[id] = s
		}
		loc.Release()
	}
	return m, nil
}

// unsure returns the ids of the page whose status the stored versions do
// not tell: new, changed, back from gone, or not known to be COMPLETE.
func (p *pull) unsure(ctx context.Context, lp *transform.ListingPage) ([]string, error) {
	ids, hashes := lp.IDs, contentHashes(lp)
	rows, err := p.r.cfg.Pool.Query(ctx, `
		SELECT s.id FROM unnest($2::text[], $3::bytea[]) AS s (id, hash)
		LEFT JOIN listing_versions v ON v.account = $1 AND v.location_id = s.id AND v.valid_to IS NULL
		WHERE v.location_id IS NULL OR v.content_hash IS DISTINCT FROM s.hash OR v.gone_at IS NOT NULL
		   OR v.status IS DISTINCT FROM $4`, p.account(), ids, hashes, catalog.StatusComplete)
	if err != nil {
		return nil, migrations.NotMigrated(err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// contentHashes are the content hashes of the page's locations, in the
// order of its IDs.
func contentHashes(lp *transform.ListingPage) [][]byte {
	out := make([][]byte, len(lp.IDs))
	idx := lp.Locations.Schema().FieldIndices("content_hash")
	if len(idx) == 0 {
		return out
	}
	col, ok := lp.Locations.Column(idx[0]).(*array.Binary)
	if !ok {
		return out
	}
	for k := range out {
		if k < col.Len() && col.IsValid(k) {
			out[k] = col.Value(k)
		}
	}
	return out
}

// statusOf is the status of a location read one by one ("" when it has
// none).
func statusOf(lp *transform.ListingPage) string {
	idx := lp.Locations.Schema().FieldIndices("status")
	if len(idx) == 0 || lp.Locations.NumRows() == 0 {
		return ""
	}
	col, ok := lp.Locations.Column(idx[0]).(*array.String)
	if !ok || !col.IsValid(0) {
		return ""
	}
	return col.Value(0)
}

// single reads the location id one by one; nil when the API does not know
// it (404). An answer that holds no valid location (a field of the wrong
// type) gives no status; it is logged, and the location stays as its page
// listed it.
func (p *pull) single(ctx context.Context, id string) (*transform.ListingPage, error) {
	resp, err := p.lc.Get(ctx, id)
	var le *extract.ListingError
	if errors.As(err, &le) && le.Status == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, p.failed("location "+id, err)
	}
	defer resp.Body.Close()
	lp, err := transform.DecodeLocation(resp.Body, p.opts)
	if err != nil {
		return nil, fmt.Errorf("location %s: %w", id, err)
	}
	if len(lp.Rejects) > 0 {
		p.r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "listings: a location read one by one is malformed; its status is not known",
			slog.String("account", p.account()), slog.String("location", id), slog.String("reason", lp.Rejects[0].Reason))
	}
	return lp, nil
}

// load loads a page (and the statuses read for it) with the task's
// checkpoint, in one transaction: a crash loses the page whole, and the
// next attempt reads it again.
func (p *pull) load(ctx context.Context, lp *transform.ListingPage, statuses map[string]string, observed time.Time, offset int64) error {
	r := p.r
	return pgx.BeginFunc(ctx, r.cfg.Pool, func(tx pgx.Tx) error {
		lr, err := r.cfg.Loader.ListingPage(ctx, tx, p.account(), lp, statuses, observed)
		if err != nil {
			return err
		}
		rejected := make([]load.Rejected, len(lp.Rejects))
		for k, rj := range lp.Rejects {
			rejected[k] = load.Rejected{Endpoint: catalog.GetLocations.Name, Request: fmt.Sprintf("account=%s page=%d", p.account(), lp.Page),
				Line: rj.Line, Raw: rj.Raw, Reason: rj.Reason, ObservedAt: observed}
		}
		if err := r.cfg.Loader.Quarantine(ctx, tx, rejected); err != nil {
			return err
		}
		after := *p.res
		after.Pages++
		after.Rows += int64(len(lp.IDs) + len(lp.Rejects))
		after.Rejected += int64(len(lp.Rejects))
		after.Load = after.Load.Add(listingLoad(lr))
		if err := saveCheckpoint(ctx, tx, p.acct.RunID, p.t, "running", offset, &after, "", observed); err != nil {
			return err
		}
		*p.res = after // committed below, or the error fails the task
		return nil
	})
}

// listingLoad is what a page did to listing_versions, as a load.Result:
// new locations inserted, changed ones updated (a new version), the
// others unchanged.
func listingLoad(lr load.ListingResult) load.Result {
	res := load.Result{Inserted: lr.NewVersions - lr.Changed, Updated: lr.Changed, Unchanged: lr.Unchanged}
	res.Rows = res.Inserted + res.Updated + res.Unchanged
	return res
}

// gone settles the locations that no page of the pull listed: each is
// read one by one; one the API no longer knows is marked gone (with its
// open problems resolved), one it still knows (missed by paging over
// data that moved) is loaded. A pull that quarantined items marks nothing
// gone: a quarantined item's location was listed, and its id may be
// unreadable.
func (p *pull) gone(ctx context.Context) error {
	r := p.r
	if p.res.Rejected > 0 {
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "listings: items were quarantined, so no location is marked gone this time",
			slog.String("account", p.account()), slog.Int64("quarantined", p.res.Rejected))
		return nil
	}
	rows, err := r.cfg.Pool.Query(ctx, `SELECT location_id FROM listing_versions
		WHERE account = $1 AND valid_to IS NULL AND gone_at IS NULL AND observed_at < $2 ORDER BY location_id`, p.account(), p.began)
	if err != nil {
		return migrations.NotMigrated(err)
	}
	unseen, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, id := range unseen {
		loc, err := p.single(ctx, id)
		if err != nil {
			return err
		}
		if loc == nil {
			continue // gone: marked below
		}
		observed := r.cfg.Now().UTC()
		statuses := map[string]string{}
		if s := statusOf(loc); s != "" {
			statuses[id] = s
		}
		err = pgx.BeginFunc(ctx, r.cfg.Pool, func(tx pgx.Tx) error {
			lr, err := r.cfg.Loader.ListingPage(ctx, tx, p.account(), loc, statuses, observed)
			p.res.Load = p.res.Load.Add(listingLoad(lr))
			return err
		})
		loc.Release()
		if err != nil {
			return err
		}
	}
	return pgx.BeginFunc(ctx, r.cfg.Pool, func(tx pgx.Tx) error {
		n, err := r.cfg.Loader.ListingGone(ctx, tx, p.account(), nil, p.began)
		if n > 0 {
			r.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "listings: locations gone from the account",
				slog.String("account", p.account()), slog.Int("gone", n))
		}
		return err
	})
}
