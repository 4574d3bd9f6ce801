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
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
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
func (r *Runner) runListings(ctx context.Context, i int, t jobspec.Task, acct budget.Account, from checkpoint, st *runState) TaskResult {
	res := TaskResult{Task: t, Resumed: from.status != "", Pages: from.pages, Rows: from.rows,
		Rejected: from.rejected, PriorRows: from.rows, Load: from.load}
	if from.status == "done" {
		return res
	}
	wctx := context.WithoutCancel(ctx)
	spec := t.Listings
	// The pull began when its first attempt did: a location last observed
	// before then that no page of the pull listed is a candidate for gone.
	began := r.cfg.Now().UTC()
	if from.since != nil {
		began = *from.since
	}
	t.Since, res.Task.Since = began, began
	offset := from.offset
	finish := func(status, reason string) TaskResult {
		if st.lost.Load() {
			return res // the run is another process's now
		}
		if err := saveCheckpoint(wctx, r.cfg.Pool, acct.RunID, t, status, offset, &res, reason, r.cfg.Now()); err != nil && res.Err == nil {
			res.Err = err
		}
		return res
	}
	fail := func(err error) TaskResult {
		res.Err = err
		return finish("failed", err.Error())
	}
	skip := func(reason string) TaskResult {
		res.Skipped = reason
		return finish("skipped", reason)
	}
	if reason := st.stop.Load(); reason != nil {
		return skip(*reason)
	}
	if r.cfg.AccountClient == nil {
		return fail(fmt.Errorf("this runner has no accounts (set ETL_SECRET_KEY and sign the account in with etl auth login --account %s)", spec.Account))
	}
	client, err := r.cfg.AccountClient(spec.Account)
	if err != nil {
		return fail(err)
	}
	// failAt fails the task at err of a request; while the API has
	// answered no request of the run, an address that cannot be reached
	// (or speaks no HTTP) is a configuration mistake that stops the run
	// at once, as it stops the data API's tasks.
	failAt := func(err error) TaskResult {
		if !st.answered.Load() {
			if fatal := client.AddressMistake(err); fatal != "" {
				// Skipped with the run's one message, as the data API's
				// task that met it is.
				st.fatal.Store(true)
				st.stop.CompareAndSwap(nil, &fatal)
				return skip(*st.stop.Load())
			}
		}
		return fail(err)
	}
	p := &pull{r: r, t: t, lc: client.Listings(), acct: acct, res: &res, began: began,
		bound: st.bounds.of(r, client.Origin(), catalog.GetLocations.Name, "size"),
		opts:  transform.Options{Allocator: r.cfg.Allocator, Logger: r.cfg.Logger, Redactor: client.Redactor()}}
	if err := saveCheckpoint(wctx, r.cfg.Pool, acct.RunID, t, "running", offset, &res, "", r.cfg.Now()); err != nil {
		return fail(err)
	}
	r.cfg.Observer.TaskStarted(i, res)
	size, err := p.size(wctx)
	if err != nil {
		return failAt(err)
	}
	page := int(offset/int64(size)) + 1
	for {
		if ctx.Err() != nil {
			reason := interruptedReason
			st.interrupted.Store(true)
			st.stop.CompareAndSwap(nil, &reason)
		}
		if reason := st.stop.Load(); reason != nil {
			return skip(*reason)
		}
		if !st.held(wctx) {
			return skip(*st.stop.Load()) // the lock was lost: nothing is sent
		}
		got, more, err := p.page(wctx, &page, &size)
		if err != nil {
			return failAt(err)
		}
		st.answered.Store(true)
		offset = int64(page-1)*int64(size) + int64(got)
		r.cfg.Observer.PageLoaded(i, res)
		if !more {
			break
		}
		page++
	}
	if !st.held(wctx) {
		return skip(*st.stop.Load())
	}
	if reason := st.stop.Load(); reason != nil {
		return skip(*reason)
	}
	if err := p.gone(wctx); err != nil {
		return fail(err)
	}
	if spec.Push != "" {
		// The pull is the push's base: what differs from it is sent. A
		// push killed or stopped is finished by the next (package push
		// records every item with its request). The end of ctx (SIGINT)
		// stops it after the request in flight, as it stops a pull after
		// the page in flight; the task is then skipped, and the next run
		// of the job pushes the rest.
		sum, err := push.Run(ctx, push.Config{Pool: r.cfg.Pool, Client: client, Account: spec.Account, Relation: spec.Push,
			Now: r.cfg.Now, Logger: r.cfg.Logger}, push.Options{})
		res.Push = sum
		if ctx.Err() != nil && (err != nil || sum.Partial()) {
			reason := interruptedReason
			st.interrupted.Store(true)
			st.stop.CompareAndSwap(nil, &reason)
			if sum != nil {
				reason = fmt.Sprintf("%s (push %d from %s stopped: %s)", reason, sum.PushID, spec.Push, sum.Undone())
			}
			return skip(reason)
		}
		if err != nil {
			return fail(fmt.Errorf("push from %s: %w", spec.Push, err))
		}
		r.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "listings pushed", slog.String("account", spec.Account),
			slog.String("from", spec.Push), slog.Int64("push_id", sum.PushID), slog.Int("sent", sum.Sent),
			slog.Int("updated", sum.Updated), slog.Int("failed", sum.Failed), slog.Int("refused", sum.Refused),
			slog.Int("unchanged", sum.Unchanged), slog.Int("waiting", sum.Waiting))
		if sum.Partial() {
			// The run is partial, as etl listings push exits 3: what
			// failed is listed by etl listings status.
			// The task's name says the account.
			return fail(fmt.Errorf("push %d from %s: %s (etl listings status --account %s lists them)",
				sum.PushID, spec.Push, sum.Undone(), spec.Account))
		}
	}
	return finish("done", "")
}

// pull is one listings task at work.
type pull struct {
	r     *Runner
	t     jobspec.Task
	lc    *extract.Listings
	bound *boundUse // of size, on Get locations of the API
	acct  budget.Account
	res   *TaskResult
	began time.Time
	opts  transform.Options
}

// account is the account pulled.
func (p *pull) account() string { return p.t.Listings.Account }

// size is the page size to ask for: the spec's, lowered to the bound the
// API is known to accept; else that bound; else the first probe.
func (p *pull) size(ctx context.Context) (int, error) {
	known, err := p.bound.get(ctx)
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
	return firstSizeProbe(), nil
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
			next, rerr := p.bound.refused(ctx, *size, max)
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
		if err := p.bound.accepted(ctx, *size); err != nil { // found by halving, maybe
			return 0, false, err
		}
		if n < *size && *page < lp.TotalPages {
			// A short page that is not the last: the API serves fewer
			// than asked without saying so. Page at what it served.
			if n == 0 {
				return 0, false, fmt.Errorf("page %d of %s is empty, but the API counts %d pages", *page, sizeName(*size), lp.TotalPages)
			}
			start := (*page - 1) * *size
			if err := p.bound.learn(ctx, n, *size, "probed"); err != nil {
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
	if size == firstSizeProbe() {
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
		return nil, NotMigrated(err)
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
		return NotMigrated(err)
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
