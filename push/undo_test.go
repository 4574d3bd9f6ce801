package push_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
