package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/listing"
)

// TestListingsUndoSurvivesKills: a push renames 117 locations; another
// writer then changes the city of three of them, which a pull sees; etl
// listings undo, run as a process of its own, is SIGKILLed at a random
// moment of its requests (before the sandbox sees one, after it applied
// one but before it answers, after it answered), then run again until it
// finishes. At the end the sandbox holds every location as it was before
// the push, but the three, left as the other writer left them and
// reported KEPT with the city that changed; the undo updated each of the
// others exactly once (the sandbox's answers say so), and status says
// which push undid which.
//
// Kept small and bounded, as the push's kill test is: three bulk
// requests a trial at real time, at most 6 trials. The 300-location undo
// is package push's TestUndoRestoresThePushedLocations, on a virtual
// clock.
func TestListingsUndoSurvivesKills(t *testing.T) {
	t.Parallel()
	const account = "x-n130"
	k := newPutKiller()
	w := newListingsWorld(t, account)
	w.setMW(k.middleware(t))
	ctx := t.Context()
	// Pulls and the other writer, in process, on the hybrid clock.
	client := w.client
	state := func() map[string]listing.Location {
		t.Helper()
		out := map[string]listing.Location{}
		for page := 1; ; page++ {
			resp, err := client.Listings().Page(ctx, page, 100)
			require.NoError(t, err)
			var b listing.PageBody
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
			require.NoError(t, resp.Body.Close())
			for _, l := range b.Data.Content {
				out[l.ID] = l
			}
			if page >= b.Data.TotalPages {
				return out
			}
		}
	}

	w.pull(t)
	w.createDesired(t, 117)
	ids := w.desiredIDs(t)
	require.Len(t, ids, 117)
	before := state()

	w.rename(t, "Friday ")
	w.shift(t)
	r := etl(t, w.env, "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	var pushID int64
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT max(push_id) FROM listing_pushes`).Scan(&pushID))

	others := map[string]bool{}
	for _, id := range ids[20:23] {
		loc := state()[id]
		loc.City = "Elsewhere"
		body, err := json.Marshal(listing.UpdateBody(listing.UpdateItem(loc)))
		require.NoError(t, err)
		resp, err := client.Listings().Update(ctx, id, body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		others[id] = true
	}
	w.clock.offset.Add(int64(time.Minute))
	w.pull(t)
	between := state()

	k.clearUpdated()
	bin := etlBinary(t)
	seed := time.Now().UnixNano()
	t.Logf("kill trials seeded %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 28))
	kills, final := 0, ""
	for trial := 1; trial <= 6 && final == ""; trial++ {
		w.shift(t)
		code, stdout, stderr := k.trial(t, fmt.Sprintf("trial %d", trial), rng, trial <= 2, bin, w.env,
			"--log-format", "json", "listings", "undo", "--account", account, "--push", strconv.FormatInt(pushID, 10))
		switch code {
		case -1:
			kills++
		case exitPartial: // the three kept
			final = stdout
		default:
			t.Fatalf("trial %d: exit %d: %s", trial, code, stderr)
		}
	}
	require.NotEmpty(t, final, "the undo never finished")
	require.Positive(t, kills)
	require.Contains(t, final, "in doubt 0, not sent 0, 3 kept")
	for id := range others {
		require.Contains(t, final, fmt.Sprintf(`%s "Friday %[1]s" (Elsewhere): KEPT CHANGED_SINCE city: changed since push %d by another writer`, id, pushID))
		require.Contains(t, final, "  city: "+before[id].City+" -> Elsewhere\n")
	}

	after := state()
	for _, id := range ids {
		want := before[id]
		if others[id] {
			want = between[id]
		}
		require.Empty(t, listing.Diff(want, after[id]), "location %s", id)
	}
	k.mu.Lock()
	require.Len(t, k.updated, len(ids)-len(others))
	for id, n := range k.updated {
		require.Equal(t, 1, n, "location %s updated %d times by the undo", id, n)
		require.False(t, others[id], "location %s, changed by another writer, was overwritten", id)
	}
	k.mu.Unlock()

	r = etl(t, w.env, "listings", "status", "--account", account)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, fmt.Sprintf(" undoes push %d\n", pushID))
	require.Contains(t, r.stdout, fmt.Sprintf("from undo of push %d", pushID))
}

// TestListingsUndoMessages: what an undo says to someone who never read
// its code. An undo of a push that updated no location says there is
// nothing to undo and records nothing (it recorded an empty push "undo of
// push 1", which status then showed as the last push, and "push 1 is
// undone by push 2"). An undo that kept a location exits 3 naming the
// undo (it said "listings push of x-n5") and says where the kept ones are
// listed: above, since etl listings status, which it pointed to, does not
// list them. An undo of a push of a relation warns that the relation may
// still hold what the push sent, which its next push (a nightly job's)
// sends again: it did not say so.
func TestListingsUndoMessages(t *testing.T) {
	t.Parallel()
	const account = "x-n5"
	w := newPushWorld(t, account)
	ctx := t.Context()
	r := etl(t, w.env, "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "push 1 of x-n5 from desired: 3 rows; sent 0, updated 0")

	for _, dry := range []bool{true, false} {
		args := []string{"listings", "undo", "--account", account, "--push", "1"}
		if dry {
			args = append(args, "--dry-run")
		}
		r = etl(t, w.env, args...)
		require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
		require.Contains(t, r.stdout, "push 1 of x-n5 updated no location (3 unchanged): nothing to undo\n")
	}
	var pushes int
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(*) FROM listing_pushes`).Scan(&pushes))
	require.Equal(t, 1, pushes, "an undo with nothing to undo records no push")

	// No such push fails as no such run does.
	r = etl(t, w.env, "listings", "undo", "--account", account, "--push", "99")
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "no such push 99 of account x-n5")
	// No such account says so (it said "no such push 1 of account
	// ghost"), and so do the push and the status of one.
	for _, args := range [][]string{
		{"listings", "undo", "--account", "ghost", "--push", "1"},
		{"listings", "push", "--account", "ghost", "--from", "desired"},
		{"listings", "status", "--account", "ghost"},
	} {
		r = etl(t, w.env, args...)
		require.Equal(t, exitFailed, r.code, "%v: %s", args, r.stdout+r.stderr)
		require.Contains(t, r.stderr, "account ghost does not exist (etl auth status lists the accounts", args)
		require.NotContains(t, r.stderr, "no such push", args)
		require.NotContains(t, r.stderr, "was ever pulled", args)
	}

	w.rename(t, "Friday ")
	r = etl(t, w.env, "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "push 2 of x-n5 from desired: 3 rows; sent 3, updated 3")
	var id string
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT min(id) FROM desired`).Scan(&id))
	_, err := w.pool.Exec(ctx, `UPDATE desired SET city = 'Elsewhere' WHERE id = $1`, id)
	require.NoError(t, err)
	r = etl(t, w.env, "listings", "push", "--account", account, "--from", "desired", "--only", id)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)

	// An --only id push 3 did not update: nothing of it to undo, and an
	// undo that sends nothing records nothing (it recorded an empty push
	// "push 5 undoes push 3", which status then showed as the last push).
	var other string
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT max(id) FROM desired`).Scan(&other))
	r = etl(t, w.env, "listings", "undo", "--account", account, "--push", "3", "--only", other)
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, other+": REFUSED NOT_UPDATED_BY_PUSH id: --only names")
	require.Contains(t, r.stdout, "undo of push 3 of x-n5 sent nothing (not recorded)")
	require.NotContains(t, r.stdout, "push 0")
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(*) FROM listing_pushes`).Scan(&pushes))
	require.Equal(t, 3, pushes, "an undo that sends nothing records nothing")
	r = etl(t, w.env, "listings", "status", "--account", account)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "last push 3 of x-n5 from desired")
	require.NotContains(t, r.stdout, "undoes push 3")

	// The trap after an undo: the relation still asks for push 2's names.
	const note = "note: push 2 was read from desired, which may still hold what it sent: the next push of desired (etl listings push, or a job's push step) sends that again, unless desired is fixed first\n"
	r = etl(t, w.env, "listings", "undo", "--account", account, "--push", "2", "--dry-run")
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, note)
	r = etl(t, w.env, "listings", "undo", "--account", account, "--push", "2")
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, note)
	require.Contains(t, r.stdout, id)
	require.Contains(t, r.stdout, ": KEPT CHANGED_SINCE city: push 3 changed it since push 2 (city)")
	require.Contains(t, r.stderr, "etl: listings undo of push 2 of x-n5 (push 4): ")
	require.Contains(t, r.stderr, "1 kept as they are")
	require.Contains(t, r.stderr, "the lines above list them")
	require.NotContains(t, r.stderr, "listings push of")

	// An undo of the undo names no relation of the user's.
	r = etl(t, w.env, "listings", "undo", "--account", account, "--push", "4")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.NotContains(t, r.stdout, "note:")
}

// TestListingsUndoOutput: what a push and an undo of a few dozen
// locations print by default: the summary first, then the locations that
// need a look (kept, failed, refused, in doubt), at most ten of them, and
// every other one on request (--all). They printed a line per location,
// every UPDATED one too (121 lines for 120), the summary last.
func TestListingsUndoOutput(t *testing.T) {
	t.Parallel()
	const account = "x-n30"
	w := newPushWorld(t, account)
	ctx := t.Context()
	ids := w.desiredIDs(t)
	require.Greater(t, len(ids), 14)

	w.rename(t, "Friday ")
	r := etl(t, w.env, "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, fmt.Sprintf("push 1 of %s from desired: %d rows; sent %d, updated %d", account, len(ids), len(ids), len(ids))), r.stdout)
	require.NotContains(t, r.stdout, ": UPDATED", "an updated location needs no look")
	require.Contains(t, r.stdout, fmt.Sprintf("--all lists the %d updated", len(ids)))
	require.Less(t, strings.Count(r.stdout, "\n"), 5, r.stdout)

	// Another tool changes the phone of twelve of them (no pull sees it):
	// the undo keeps those.
	client := w.client
	for _, id := range ids[:12] {
		resp, err := client.Listings().Get(ctx, id)
		require.NoError(t, err)
		var b listing.LocationBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
		require.NoError(t, resp.Body.Close())
		b.Data.Phone = "+49 30 1234567"
		body, err := json.Marshal(listing.UpdateBody(listing.UpdateItem(b.Data)))
		require.NoError(t, err)
		resp, err = client.Listings().Update(ctx, id, body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
	}

	r = etl(t, w.env, "listings", "undo", "--account", account, "--push", "1", "--dry-run")
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, fmt.Sprintf("dry run of %s from undo of push 1: %d rows, %d to send", account, len(ids)-12, len(ids)-12)), r.stdout)
	require.Equal(t, 10, strings.Count(r.stdout, ": KEPT CHANGED_SINCE phone"), r.stdout)
	require.Equal(t, 10, strings.Count(r.stdout, ": would send (bulk)"), r.stdout)
	require.Contains(t, r.stdout, "12 kept: 12 CHANGED_SINCE (phone)\n")

	r = etl(t, w.env, "listings", "undo", "--account", account, "--push", "1")
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	require.True(t, strings.HasPrefix(r.stdout, fmt.Sprintf("push 2 of %s from undo of push 1: %d rows; sent %d, updated %d", account, len(ids)-12, len(ids)-12, len(ids)-12)), r.stdout)
	require.Contains(t, r.stdout, "12 kept: 12 CHANGED_SINCE (phone)\n")
	require.Equal(t, 10, strings.Count(r.stdout, ": KEPT CHANGED_SINCE phone: changed at the provider since push 1"), r.stdout)
	require.Equal(t, 10, strings.Count(r.stdout, "  phone: "), r.stdout)
	require.Contains(t, r.stdout, fmt.Sprintf("the 10 that need a look of 12; --all lists every one (and the %d updated)\n", len(ids)-12))
	require.NotContains(t, r.stdout, ": UPDATED")
	kept := strings.Index(r.stdout, ": KEPT")
	require.Greater(t, kept, strings.Index(r.stdout, "12 kept"), "the summary comes first")

	// --all: every location, the updated ones too (the undo again sends
	// nothing: every one is back, or kept).
	r = etl(t, w.env, "listings", "undo", "--account", account, "--push", "1", "--all")
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	require.Equal(t, 12, strings.Count(r.stdout, ": KEPT CHANGED_SINCE phone"), r.stdout)
	r = etl(t, w.env, "listings", "push", "--account", account, "--from", "desired", "--dry-run", "--all")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Equal(t, len(ids)-12, strings.Count(r.stdout, ": would send (bulk)"), r.stdout)
}
