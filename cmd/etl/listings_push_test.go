package main

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// TestListingsPushSurvivesKills: etl listings push, run as a process of
// its own, SIGKILLed at random moments of its requests (before the sandbox
// sees one, after it applied one but before it answers, after it
// answered), then run again until it finishes: the sandbox updated every
// changed location exactly once (its answers say so), and the records
// end with every one UPDATED.
//
// Kept small and bounded: an account of 80 locations, the COMPLETE ones
// renamed (pushed by two bulk requests, at once: real-time pacing would
// make single updates cost a fifth of a second each), at most 6 trials.
func TestListingsPushSurvivesKills(t *testing.T) {
	t.Parallel()
	const account = "x-n80"
	k := newPutKiller()
	w := newListingsWorld(t, account)
	w.mw = k.middleware(t)
	w.pull(t) // in process, on the hybrid clock
	w.createDesired(t, 0)
	ctx := t.Context()
	var changed int
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(*) FROM desired`).Scan(&changed))
	require.Greater(t, changed, catalog.MaxBulkLocations, "two bulk requests at least")
	bin := etlBinary(t)
	seed := time.Now().UnixNano()
	t.Logf("kill trials seeded %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))

	// Three campaigns, each a new name for every location, pushed by
	// trials until one finishes; the first two trials of each are killed
	// at a random PUT (of the two a push sends) and phase.
	for campaign := 1; campaign <= 3; campaign++ {
		name := fmt.Sprintf("Killed %d ", campaign)
		w.rename(t, name)
		k.clearUpdated()
		// A dry run first: it plans every changed location.
		r := etl(t, w.env, "listings", "push", "--account", account, "--from", "desired", "--dry-run")
		require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
		require.Contains(t, r.stdout, fmt.Sprintf("%d to send", changed))
		require.Contains(t, r.stdout, "locationName: ")

		kills, done := 0, false
		for trial := 1; trial <= 5 && !done; trial++ {
			w.shift(t)
			code, stdout, stderr := k.trial(t, fmt.Sprintf("campaign %d trial %d", campaign, trial), rng, trial <= 2, bin, w.env,
				"--log-format", "json", "listings", "push", "--account", account, "--from", "desired")
			require.NotContains(t, stderr+stdout, w.token)
			require.NotContains(t, stderr+stdout, w.env["ETL_SECRET_KEY"])
			switch code {
			case -1:
				kills++
			case exitOK:
				done = true
			default:
				t.Fatalf("trial %d: exit %d: %s", trial, code, stderr)
			}
		}
		require.True(t, done, "the push never finished")
		require.Positive(t, kills)

		// Each changed location updated exactly once, and recorded
		// UPDATED once.
		k.mu.Lock()
		require.Len(t, k.updated, changed)
		for id, n := range k.updated {
			require.Equal(t, 1, n, "location %s updated %d times", id, n)
		}
		k.mu.Unlock()
		var items, ids int
		require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT location_id) FROM listing_push_items
			WHERE account = $1 AND outcome = 'UPDATED' AND content->>'locationName' LIKE $2 || '%'`, account, name).Scan(&items, &ids))
		require.Equal(t, changed, items, "one UPDATED record per location")
		require.Equal(t, changed, ids)
		var other int
		require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(*) FROM listing_push_latest
			WHERE account = $1 AND outcome NOT IN ('UPDATED', 'UNCHANGED')`, account).Scan(&other))
		require.Zero(t, other, "the latest outcomes are UPDATED or UNCHANGED")
	}

	r := etl(t, w.env, "listings", "status", "--account", account)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "nothing pending")
}
