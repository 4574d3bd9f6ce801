package push_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/push"
)

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
