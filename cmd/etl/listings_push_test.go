package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
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
	w.setMW(k.middleware(t))
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

// TestListingsPushInterrupted: SIGINT (its first, which cancels the
// command's context) while the first request of a push is in flight: the
// request is finished and its locations recorded UPDATED, the push sends
// nothing more, records itself interrupted, and exits 3 (partial, as the
// table of exit statuses says of an interrupted command) saying so.
// Before, the request in flight was cut (its 50 locations left in doubt)
// and the command exited 1, or 3 without a word of the interruption.
func TestListingsPushInterrupted(t *testing.T) {
	t.Parallel()
	const account = "x-n60"
	w := newPushWorld(t, account)
	w.rename(t, "Interrupted ")
	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	var puts atomic.Int64
	w.setMW(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && puts.Add(1) == 1 {
				interrupt() // what the first SIGINT does
			}
			next.ServeHTTP(rw, r)
		})
	})
	var stdout, stderr bytes.Buffer
	code := runProcess(ctx, process{}, []string{"listings", "push", "--account", account, "--from", "desired"},
		strings.NewReader(""), &stdout, &stderr, func(k string) string { return w.env[k] })
	require.Equal(t, exitPartial, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.Equal(t, int64(1), puts.Load(), "nothing sent after the interruption")
	require.Contains(t, stderr.String(), "interrupted: 50 updated, 0 failed, 0 in doubt (read back by the next push), ")
	var status string
	var updated, notSent int
	require.NoError(t, w.pool.QueryRow(t.Context(), `SELECT p.status, count(*) FILTER (WHERE i.outcome = 'UPDATED'), count(*) FILTER (WHERE i.outcome = 'NOT_SENT')
		FROM listing_pushes p JOIN listing_push_items i USING (push_id) GROUP BY p.status`).Scan(&status, &updated, &notSent))
	require.Equal(t, "interrupted", status)
	require.Equal(t, 50, updated, "the request in flight was finished")
	require.Positive(t, notSent)

	// The next push sends the rest.
	r := etl(t, w.env, "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, fmt.Sprintf("updated %d,", notSent))
}

// TestListingsPushWaitingIsPartial: a location the provider failed
// permanently (not COMPLETE, though the pull last read it COMPLETE) waits
// for a change; a push that leaves it waiting has not reached the desired
// state, as one that refuses a location has not: both exit 3 and say
// why. The push of the waiting location exited 0.
func TestListingsPushWaitingIsPartial(t *testing.T) {
	t.Parallel()
	const account = "x-n20"
	w := newPushWorld(t, account)
	ctx := t.Context()
	var stale string
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT min(location_id) FROM listings_current WHERE account = $1 AND status <> 'COMPLETE'`, account).Scan(&stale))
	_, err := w.pool.Exec(ctx, `UPDATE listing_versions SET status = 'COMPLETE' WHERE account = $1 AND location_id = $2 AND valid_to IS NULL`, account, stale)
	require.NoError(t, err)
	_, err = w.pool.Exec(ctx, `INSERT INTO desired SELECT location_id, 'Renamed', city, address, additional_address_info, zip, phone, region,
		website_url, business_hours, holiday_hours, reopen_date FROM listings_current WHERE account = $1 AND location_id = $2`, account, stale)
	require.NoError(t, err)

	// The location shows with its name and city as pulled.
	var name, city string
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT location_name, city FROM listings_current WHERE account = $1 AND location_id = $2`,
		account, stale).Scan(&name, &city))
	label := fmt.Sprintf("%s %q (%s)", stale, name, city)

	r := etl(t, w.env, "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, label+": FAILED BAD_REQUEST LOCATION_HAS_NOT_COMPLETE_STATUS")

	r = etl(t, w.env, "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, label+": WAITING BAD_REQUEST LOCATION_HAS_NOT_COMPLETE_STATUS")
	require.Contains(t, r.stderr, "1 waiting for a change")
}

// TestListingsPushJSON: --json prints one JSON document whose items are
// an array (empty for an empty relation: it was null, which a consumer
// iterating it fails on) and whose finished_at says when a dry run ended
// (it was year 1).
func TestListingsPushJSON(t *testing.T) {
	t.Parallel()
	const account = "x-n20"
	w := newPushWorld(t, account)
	_, err := w.pool.Exec(t.Context(), `CREATE TABLE empty AS SELECT * FROM desired WHERE false`)
	require.NoError(t, err)
	for _, args := range [][]string{
		{"--from", "empty", "--dry-run"},
		{"--from", "empty"},
		{"--from", "desired", "--dry-run"},
	} {
		r := etl(t, w.env, append([]string{"listings", "push", "--account", account, "--json"}, args...)...)
		require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
		var doc struct {
			Items    []json.RawMessage `json:"items"`
			Started  time.Time         `json:"started_at"`
			Finished time.Time         `json:"finished_at"`
		}
		var raw map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &raw), r.stdout)
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
		require.NotNil(t, doc.Items, "%v: items: %s", args, raw["items"])
		require.Equal(t, "[", string(raw["items"][:1]), "%v", args)
		require.False(t, doc.Finished.Before(doc.Started), "%v: finished_at %s", args, doc.Finished)
	}
}

// TestListingsPushOnlyEmptyID: --only with an empty id is a usage error:
// --only "" (a script's --only "$IDS" with nothing in IDS) read as no
// --only at all and pushed every location; --only a,,b pushed a location
// "" that the relation does not hold.
func TestListingsPushOnlyEmptyID(t *testing.T) {
	t.Parallel()
	for _, only := range []string{"", "a,,b", " "} {
		r := etl(t, map[string]string{"DATABASE_URL": "postgres://nowhere.invalid/x"}, "listings", "push", "--account", "x-n20",
			"--from", "desired", "--dry-run", "--only", only)
		require.Equal(t, exitUsage, r.code, "%q: %s", only, r.stderr)
		require.Contains(t, r.stderr, "--only", only)
	}
}

// TestListingsPushSmallPool: a DATABASE_URL that asks for a pool of one
// connection (pool_max_conns=1): the push holds one for its account's
// lock and needs another for its records, so it waited for ever; the
// command sizes its pool as etl run does.
func TestListingsPushSmallPool(t *testing.T) {
	t.Parallel()
	const account = "x-n20"
	w := newPushWorld(t, account)
	w.rename(t, "Small ")
	env := map[string]string{}
	for k, v := range w.env {
		env[k] = v
	}
	sep := "?"
	if strings.Contains(env["DATABASE_URL"], "?") {
		sep = "&"
	}
	env["DATABASE_URL"] += sep + "pool_max_conns=1"
	// A bound on the wait, so that a push waiting for ever fails the test
	// rather than hangs it.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"listings", "push", "--account", account, "--from", "desired"}, strings.NewReader(""), &stdout, &stderr,
		func(k string) string { return env[k] })
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.Contains(t, stdout.String(), "updated 17,")
}

// TestListingsPushSignedOut: a push of an account signed out since its
// pull stops at its first request, which never left: it says how to sign
// in again, counts nothing sent and nothing failed (it counted every
// location of the request sent and FAILED), and the next push, signed in,
// sends them.
func TestListingsPushSignedOut(t *testing.T) {
	t.Parallel()
	const account = "x-n20"
	w := newPushWorld(t, account)
	w.rename(t, "Out ")
	r := etl(t, w.env, "auth", "logout", "--account", account)
	require.Equal(t, exitOK, r.code, r.stderr)

	r = etl(t, w.env, "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "etl auth login --account "+account)
	require.Contains(t, r.stdout, "sent 0, updated 0, failed 0, refused 0, unchanged 0, waiting 0, in doubt 0, not sent 17")
	var sent, failed int
	require.NoError(t, w.pool.QueryRow(t.Context(), `SELECT sent, failed FROM listing_pushes`).Scan(&sent, &failed))
	require.Zero(t, sent)
	require.Zero(t, failed)

	r = etl(t, w.env, "auth", "login", "--account", account)
	require.Equal(t, exitOK, r.code, r.stderr)
	r = etl(t, w.env, "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "sent 17, updated 17,")
}

// TestListingsPushShowsNames: the dry run, the push and etl listings
// status show each location by its id, name and city (as pulled; as the
// relation has them for a location never pulled), and a value of the
// relation with control characters reaches the terminal quoted, never as
// it is.
func TestListingsPushShowsNames(t *testing.T) {
	t.Parallel()
	const account = "x-n10"
	w := newPushWorld(t, account)
	ctx := t.Context()
	var id, name, city string
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT id, location_name, city FROM desired ORDER BY id LIMIT 1`).Scan(&id, &name, &city))
	_, err := w.pool.Exec(ctx, `UPDATE desired SET location_name = 'Evil' || chr(27) || '[2J' || chr(10) || 'Name' WHERE id = $1`, id)
	require.NoError(t, err)
	const ghost = "feedfacefeedfacefeedfacefeedface"
	_, err = w.pool.Exec(ctx, `INSERT INTO desired SELECT $1, 'Ghost' || chr(27) || ']0;title' || chr(7), 'Köln', address, additional_address_info,
		zip, phone, region, website_url, business_hours, holiday_hours, reopen_date FROM desired WHERE id = $2`, ghost, id)
	require.NoError(t, err)
	label := fmt.Sprintf("%s %q (%s)", id, name, city)
	ghostLabel := ghost + ` "Ghost\x1b]0;title\a" (Köln)`

	r := etl(t, w.env, "listings", "push", "--account", account, "--from", "desired", "--dry-run")
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr) // the ghost is refused
	require.Contains(t, r.stdout, label+": would send (bulk)\n")
	require.Contains(t, r.stdout, "  locationName: "+name+` -> "Evil\x1b[2J\nName"`+"\n")
	require.Contains(t, r.stdout, ghostLabel+": REFUSED ")
	require.NotContains(t, r.stdout, "\x1b")
	require.NotContains(t, r.stdout, "\a")

	r = etl(t, w.env, "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, ghostLabel+": REFUSED ")
	require.NotContains(t, r.stdout, "\x1b")

	r = etl(t, w.env, "listings", "status", "--account", account)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "  "+ghostLabel+"  push 1  REFUSED (waits for a change)")
	require.NotContains(t, r.stdout, "\x1b")
}
