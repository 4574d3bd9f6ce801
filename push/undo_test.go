package push_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/push"
)

// sandboxState reads every location of the fixture's account from the
// sandbox (Get locations), by id.
func (f *fixture) sandboxState(t *testing.T) map[string]listing.Location {
	t.Helper()
	l := f.client.Listings()
	out := map[string]listing.Location{}
	for page := 1; ; page++ {
		resp, err := l.Page(t.Context(), page, 100)
		require.NoError(t, err)
		var b listing.PageBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
		require.NoError(t, resp.Body.Close())
		for _, loc := range b.Data.Content {
			out[loc.ID] = loc
		}
		if page >= b.Data.TotalPages {
			return out
		}
	}
}

// updatedBy counts, per location, the UPDATED answers of the sandbox in
// the update log from index from on.
func (f *fixture) updatedBy(from int) map[string]int {
	n := map[string]int{}
	for _, s := range f.sentLog()[from:] {
		for _, id := range s.ids {
			n[id]++
		}
	}
	return n
}

// otherWriter changes location id at the sandbox as another tool does,
// with a single update of its own, outside any push.
func (f *fixture) otherWriter(t *testing.T, id string, change func(*listing.Location)) {
	t.Helper()
	loc := f.get(t, id)
	change(&loc)
	body, err := json.Marshal(listing.UpdateBody(listing.UpdateItem(loc)))
	require.NoError(t, err)
	resp, err := f.client.Listings().Update(t.Context(), id, body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
}

// TestUndoKeepsWhatChangedAtTheProviderUnpulled: after a push, another
// tool changes three of its locations at the provider, and no pull has
// seen it. The undo reads each location back before sending its earlier
// version (reads are free) and keeps the three, CHANGED_SINCE with what
// changed, as the other tool left them; the dry run says so too. It sent
// them back without a word, overwriting the other tool's change.
// --force sends them back.
func TestUndoKeepsWhatChangedAtTheProviderUnpulled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n20")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	before := f.sandboxState(t)
	f.rename(t, "Friday ")
	first, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Greater(t, first.Updated, 5)
	var ids []string
	for _, it := range first.Items {
		if it.Outcome == push.Updated {
			ids = append(ids, it.ID)
		}
	}
	others := map[string]bool{}
	for _, id := range ids[1:4] {
		f.otherWriter(t, id, func(l *listing.Location) { l.Phone = "+49 30 1234567" })
		others[id] = true
	}
	between := f.sandboxState(t)
	require.NoError(t, f.wall.Sleep(t.Context(), 2*time.Minute))

	from := len(f.sentLog())
	dry := f.undoOf(t, first.PushID, push.UndoOptions{DryRun: true})
	require.Equal(t, 3, dry.Kept, "the dry run reads back too")
	require.Equal(t, len(ids)-3, dry.ToSend)
	undo := f.undoOf(t, first.PushID, push.UndoOptions{})
	require.Equal(t, 3, undo.Kept)
	require.Equal(t, len(ids)-3, undo.Updated)
	require.True(t, undo.Partial())
	for _, it := range undo.Items {
		if !others[it.ID] {
			require.Equal(t, push.Updated, it.Outcome, it.ID)
			continue
		}
		require.Equal(t, push.Kept, it.Outcome, it.ID)
		require.Equal(t, push.CodeChangedSince, it.Code, it.ID)
		require.Equal(t, []listing.Change{{Field: "phone", From: before[it.ID].Phone, To: "+49 30 1234567"}}, it.Changes, it.ID)
		require.Contains(t, it.Reason, "changed at the provider since push 1, as read back now (phone)", it.ID)
	}
	after := f.sandboxState(t)
	for id := range others {
		require.Empty(t, listing.Diff(between[id], after[id]), "%s, changed by another tool, was overwritten", id)
	}
	for id := range f.updatedBy(from) {
		require.False(t, others[id], "%s, changed by another tool, was sent", id)
	}

	forced := f.undoOf(t, first.PushID, push.UndoOptions{Force: true})
	require.Equal(t, 3, forced.Updated)
	after = f.sandboxState(t)
	for id, loc := range before {
		require.Empty(t, listing.Diff(loc, after[id]), id)
	}
}

// TestUndoRestoresThePushedLocations: a push of 300 changes, then its
// undo: every location the push updated is back as it was before it at
// the sandbox, except the five another writer changed in between (a
// later pull shows them), which are reported KEPT with what changed and
// left as that writer left them; the undo records which push it undid.
// Undoing again sends nothing; --force then sends the five back too.
func TestUndoRestoresThePushedLocations(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n340")
	f.pull(t)
	ctx := t.Context()
	_, err := f.pool.Exec(ctx, `CREATE TABLE desired AS SELECT location_id AS id, location_name, city, address,
		additional_address_info, zip, phone, region, website_url, business_hours, holiday_hours, reopen_date
		FROM listings_current WHERE account = $1 AND status = 'COMPLETE' ORDER BY location_id LIMIT 300`, f.account)
	require.NoError(t, err)
	var ids []string
	rows, err := f.pool.Query(ctx, `SELECT id FROM desired ORDER BY id`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, ids, 300)
	before := f.sandboxState(t)

	_, err = f.pool.Exec(ctx, `UPDATE desired SET location_name = 'Friday ' || id, business_hours = '{"monday": [{"from": "10:00", "to": "12:00"}]}'`)
	require.NoError(t, err)
	first, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Equal(t, 300, first.Updated)

	// Another writer changes five of them; a later pull sees it.
	others := map[string]bool{}
	for _, id := range ids[10:15] {
		f.otherWriter(t, id, func(l *listing.Location) { l.City = "Elsewhere" })
		others[id] = true
	}
	require.NoError(t, f.wall.Sleep(ctx, time.Minute))
	f.pull(t)
	between := f.sandboxState(t)
	require.NoError(t, f.wall.Sleep(ctx, 2*time.Minute))

	logFrom := len(f.sentLog())
	undo := func(opts push.UndoOptions) *push.Summary {
		t.Helper()
		opts.Push = first.PushID
		sum, err := push.Undo(ctx, push.Config{Pool: f.pool, Client: f.client, Account: f.account, Now: f.wall.Now}, opts)
		require.NoError(t, err)
		require.Equal(t, first.PushID, sum.Undoes)
		require.NoError(t, f.wall.Sleep(ctx, 2*time.Minute))
		return sum
	}
	dry := undo(push.UndoOptions{DryRun: true})
	require.Equal(t, 295, dry.ToSend)
	require.Equal(t, 5, dry.Kept)

	sum := undo(push.UndoOptions{})
	require.Equal(t, 295, sum.Updated)
	require.Equal(t, 5, sum.Kept)
	require.True(t, sum.Partial(), "kept locations are not as the undo wanted")
	for _, it := range sum.Items {
		if it.Outcome != push.Kept {
			continue
		}
		require.True(t, others[it.ID], it.ID)
		require.Equal(t, push.CodeChangedSince, it.Code)
		require.Equal(t, []listing.Change{{Field: "city", From: before[it.ID].City, To: "Elsewhere"}}, it.Changes)
		require.Contains(t, it.Reason, "changed since push")
	}
	after := f.sandboxState(t)
	for _, id := range ids {
		want := before[id]
		if others[id] {
			want = between[id]
			require.Equal(t, "Elsewhere", after[id].City)
		}
		require.Empty(t, listing.Diff(want, after[id]), "location %s", id)
	}
	for id, n := range f.updatedBy(logFrom) {
		require.Equal(t, 1, n, "location %s updated %d times by the undo", id, n)
		require.False(t, others[id], "location %s, changed by another writer, was overwritten", id)
	}

	var undoes int64
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT undoes FROM listing_pushes WHERE push_id = $1`, sum.PushID).Scan(&undoes))
	require.Equal(t, first.PushID, undoes)
	rep, err := push.Status(ctx, f.pool, f.account)
	require.NoError(t, err)
	require.Equal(t, sum.PushID, rep.Last.PushID)
	require.Equal(t, first.PushID, *rep.Last.Undoes)

	// Again: nothing to send.
	logFrom = len(f.sentLog())
	again := undo(push.UndoOptions{})
	require.Zero(t, again.Updated)
	require.Equal(t, 295, again.Unchanged)
	require.Equal(t, 5, again.Kept)
	require.Empty(t, f.updatedBy(logFrom))

	// --force sends the five back too.
	forced := undo(push.UndoOptions{Force: true})
	require.Equal(t, 5, forced.Updated)
	require.Zero(t, forced.Kept)
	after = f.sandboxState(t)
	for _, id := range ids {
		require.Empty(t, listing.Diff(before[id], after[id]), "location %s", id)
	}

	// A push that is not the account's.
	_, err = push.Undo(ctx, push.Config{Pool: f.pool, Client: f.client, Account: f.account, Now: f.wall.Now}, push.UndoOptions{Push: 999})
	require.ErrorIs(t, err, push.ErrNoSuchPush)
	require.ErrorContains(t, err, fmt.Sprintf("push 999 of account %s", f.account))
}

// undoOf undoes push n of the fixture's account, then lets the bulk
// window of the sandbox pass.
func (f *fixture) undoOf(t *testing.T, n int64, opts push.UndoOptions) *push.Summary {
	t.Helper()
	opts.Push = n
	sum, err := push.Undo(t.Context(), push.Config{Pool: f.pool, Client: f.client, Account: f.account, Now: f.wall.Now}, opts)
	require.NoError(t, err)
	require.NoError(t, f.wall.Sleep(t.Context(), 2*time.Minute))
	return sum
}

// TestUndoReportsWhatThePushLeftInDoubt: push 1's bulk request was
// applied but its answer lost, and its locations cannot be read back: they
// stay in doubt (SENT). An undo of push 1 then cannot know whether they
// carry push 1's change: it must say they are in doubt and exit partial
// (a dry run too). It said nothing of them and reported a complete undo
// (0 in doubt, not partial), leaving push 1's change in place. Once they
// can be read back, the next undo settles them and sends them back, each
// once.
func TestUndoReportsWhatThePushLeftInDoubt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n20")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	f.rename(t, "Friday ")
	before := f.sandboxState(t)
	var (
		mu       sync.Mutex
		bulks    int
		doubtful = map[string]bool{}
		readable bool
	)
	f.mw = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
			switch {
			case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/locations"):
				bulks++
				if bulks == 1 {
					mu.Unlock()
					rec := &recorder{ResponseWriter: &discard{header: http.Header{}}, keep: true}
					next.ServeHTTP(rec, r) // applied, answer lost
					mu.Lock()
					for _, id := range updatedIn(t, rec.body.String()) {
						doubtful[id] = true
					}
					mu.Unlock()
					hangUp(w)
					return
				}
			case r.Method == http.MethodGet && !readable && doubtful[id]:
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"code":503,"message":"unavailable"}`))
				return
			}
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}
	first, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.NotEmpty(t, doubtful)
	require.Equal(t, len(doubtful), first.InDoubt)
	require.NoError(t, f.wall.Sleep(t.Context(), 2*time.Minute))

	dry := f.undoOf(t, first.PushID, push.UndoOptions{DryRun: true})
	require.Equal(t, len(doubtful), dry.InDoubt, "the dry run of the undo counts the locations push 1 left in doubt")
	undo := f.undoOf(t, first.PushID, push.UndoOptions{})
	require.Equal(t, len(doubtful), undo.InDoubt, "the undo counts the locations push 1 left in doubt")
	require.True(t, undo.Partial(), "an undo that leaves push 1's change in doubt is partial")
	for _, it := range undo.Items {
		if doubtful[it.ID] {
			require.Equal(t, push.Sent, it.Outcome, it.ID)
			require.Contains(t, it.Reason, "in doubt since push 1", it.ID)
		}
	}

	mu.Lock()
	readable = true
	mu.Unlock()
	from := len(f.sentLog())
	again := f.undoOf(t, first.PushID, push.UndoOptions{})
	require.Equal(t, len(doubtful), again.Settled)
	require.False(t, again.Partial(), "%+v", again)
	after := f.sandboxState(t)
	for id := range doubtful {
		require.Empty(t, listing.Diff(before[id], after[id]), id)
	}
	for id, n := range f.updatedBy(from) {
		require.Equal(t, 1, n, "%s updated %d times by the undo", id, n)
	}
}

// updatedIn returns the ids a bulk answer says UPDATED.
func updatedIn(t *testing.T, body string) []string {
	t.Helper()
	var b listing.BulkBody
	require.NoError(t, json.Unmarshal([]byte(body), &b), body)
	var ids []string
	for _, res := range b.Data {
		if res.State == catalog.StateUpdated {
			ids = append(ids, res.LocationID)
		}
	}
	return ids
}

// TestUndoAgainAfterUndoingTheUndo: push 1 renames; push 2 undoes it;
// push 3 undoes push 2 (push 1's names are back); undoing push 1 again
// must send the names from before push 1. Push 3 wrote exactly what push
// 1 wrote, which is no change by another writer: every location was kept
// as CHANGED_SINCE, "push 3 changed it since push 1 (no field of a
// request)", and nothing was sent.
func TestUndoAgainAfterUndoingTheUndo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n20")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	before := f.sandboxState(t)
	f.rename(t, "Friday ")
	first, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Positive(t, first.Updated)
	require.NoError(t, f.wall.Sleep(t.Context(), 2*time.Minute))

	second := f.undoOf(t, first.PushID, push.UndoOptions{})
	require.Equal(t, first.Updated, second.Updated)
	third := f.undoOf(t, second.PushID, push.UndoOptions{})
	require.Equal(t, first.Updated, third.Updated)
	for _, it := range first.Items {
		if it.Outcome == push.Updated {
			require.Equal(t, "Friday "+it.ID, f.get(t, it.ID).LocationName)
		}
	}

	fourth := f.undoOf(t, first.PushID, push.UndoOptions{})
	require.Zero(t, f.tooMany.Load(), "the undos kept to the rate limits")
	require.Zero(t, fourth.Kept, "push 3 put back what push 1 wrote: no other writer changed anything")
	require.Equal(t, first.Updated, fourth.Updated)
	after := f.sandboxState(t)
	for id, loc := range before {
		require.Empty(t, listing.Diff(loc, after[id]), id)
	}
}

// TestUndoOnlyIDNotInThePush: --only names a location push 1 did not
// update (it is the account's, pulled, but was not in push 1). The undo
// says so in its summary ("push 1 did not update it") and records nothing
// for it: it was recorded REFUSED with "the relation undo of push 1 does
// not hold", which made that healthy location the latest REFUSED of the
// account, listed by etl listings status as waiting for a change.
func TestUndoOnlyIDNotInThePush(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n20")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	f.rename(t, "Friday ")
	ids := f.completeIDs(t, 3)
	first, err := f.run(t, "desired", push.Options{Only: ids[:2]})
	require.NoError(t, err)
	require.Equal(t, 2, first.Updated)
	require.NoError(t, f.wall.Sleep(t.Context(), 2*time.Minute))

	undo := f.undoOf(t, first.PushID, push.UndoOptions{Only: []string{ids[0], ids[2]}})
	require.Equal(t, 1, undo.Updated)
	require.Equal(t, 1, undo.Refused)
	require.True(t, undo.Partial())
	var other push.Item
	for _, it := range undo.Items {
		if it.ID == ids[2] {
			other = it
		}
	}
	require.Equal(t, push.Refused, other.Outcome)
	require.Contains(t, other.Reason, "push 1 did not update")
	require.NotContains(t, other.Reason, "relation")

	var recorded int
	require.NoError(t, f.pool.QueryRow(context.WithoutCancel(t.Context()),
		`SELECT count(*) FROM listing_push_items WHERE push_id = $1 AND location_id = $2`, undo.PushID, ids[2]).Scan(&recorded))
	require.Zero(t, recorded, "an id the push undone did not update is not recorded")
	rep, err := push.Status(t.Context(), f.pool, f.account)
	require.NoError(t, err)
	for _, p := range rep.Pending {
		require.NotEqual(t, ids[2], p.LocationID, "status lists %s as pending: %+v", ids[2], p)
	}
}

// TestUndoTwoPushesNewestFirst: push 1 renames, push 2 (the relation
// changed again) renames once more; undoing push 2, then push 1, the way
// back step by step, ends where the locations were before push 1. The
// undo of push 2 wrote exactly what push 1 wrote, which is no change by
// another writer: the undo of push 1 kept every location as "changed
// since push 1 by push 3" and sent nothing.
func TestUndoTwoPushesNewestFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n20")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	before := f.sandboxState(t)
	f.rename(t, "Friday ")
	first, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.NoError(t, f.wall.Sleep(t.Context(), 2*time.Minute))
	f.rename(t, "Saturday ")
	second, err := f.run(t, "desired", push.Options{})
	require.NoError(t, err)
	require.Equal(t, first.Updated, second.Updated)
	require.NoError(t, f.wall.Sleep(t.Context(), 2*time.Minute))

	undo2 := f.undoOf(t, second.PushID, push.UndoOptions{})
	require.Equal(t, second.Updated, undo2.Updated)
	undo1 := f.undoOf(t, first.PushID, push.UndoOptions{})
	require.Zero(t, undo1.Kept, "%+v", undo1.Items)
	require.Equal(t, first.Updated, undo1.Updated)
	after := f.sandboxState(t)
	for id, loc := range before {
		require.Empty(t, listing.Diff(loc, after[id]), id)
	}
}
