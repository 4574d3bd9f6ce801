package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/apitest"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

// hybridClock is the sandbox's wall clock in the push's kill trials: real
// time plus an offset. The in-process pull paces on it, its sleeps moving
// the offset (so a pull of hundreds of locations takes no real time), and
// the subprocess pushes pace on real time, which the sandbox sees pass.
// Between trials the offset moves two minutes on, and the send times the
// pushes recorded (listing_push_requests) two minutes back, so that each
// new process, which seeds its pacers from them, and the sandbox both see
// windows empty.
type hybridClock struct{ offset atomic.Int64 }

func (c *hybridClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *hybridClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.offset.Add(int64(max(d, 0)))
	return nil
}

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
	clock := &hybridClock{}
	sb, err := sandbox.New(sandbox.Config{Seed: 7, Now: func() time.Time { return cliNow }, WallClock: clock.Now,
		APIKeys: []string{account}, DeviceAutoApprove: 1, DeviceInterval: time.Second})
	require.NoError(t, err)

	var (
		mu      sync.Mutex
		updated = map[string]int{} // UPDATED answers of the sandbox, per location
		puts    int                // PUTs of the current trial
		killAt  int                // the PUT of the current trial that kills it (0: none)
		phase   int                // 0 before the sandbox, 1 applied and unanswered, 2 answered
		proc    *etlProcess
	)
	h := sb.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			h.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		puts++
		kill := puts == killAt
		ph, p := phase, proc
		mu.Unlock()
		if kill && ph == 0 {
			killProc(t, p)
			hangUpConn(w)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var ids []string
		if strings.HasSuffix(r.URL.Path, "/locations") {
			var b listing.BulkBody
			if json.Unmarshal(rec.Body.Bytes(), &b) == nil {
				for _, res := range b.Data {
					if res.State == catalog.StateUpdated {
						ids = append(ids, res.LocationID)
					}
				}
			}
		} else if rec.Code == http.StatusOK {
			ids = append(ids, r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
		}
		mu.Lock()
		for _, id := range ids {
			updated[id]++
		}
		mu.Unlock()
		if kill && ph == 1 {
			killProc(t, p)
			hangUpConn(w)
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		if kill {
			killProc(t, p)
		}
	}))
	t.Cleanup(srv.Close)

	dbURL := pgtest.NewDB(t)
	_, key, err := auth.NewKey()
	require.NoError(t, err)
	env := map[string]string{"DATABASE_URL": dbURL, "ETL_API_URL": srv.URL, "ETL_SECRET_KEY": key}
	r := etl(t, env, "auth", "login", "--account", account)
	require.Equal(t, exitOK, r.code, r.stderr)

	// The pull, in process, on the hybrid clock.
	pool, err := pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	tok, err := sb.IssueToken(account)
	require.NoError(t, err)
	client, err := extract.New(extract.Config{BaseURL: srv.URL, Clock: clock,
		Authorize: apitest.Bearer(tok.AccessToken)})
	require.NoError(t, err)
	spec, err := jobspec.ParseSpec("jobs.yaml", fmt.Appendf(nil, "jobs:\n  - name: stores\n    listings: {account: %s}\n", account), cliNow)
	require.NoError(t, err)
	runner, err := pipeline.NewRunner(pipeline.Config{Pool: pool, AccountClient: func(string) (*extract.Client, error) { return client, nil }})
	require.NoError(t, err)
	sum, err := runner.Run(t.Context(), spec.Jobs[0])
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)

	_, err = pool.Exec(t.Context(), `CREATE TABLE desired AS SELECT location_id AS id, location_name, city, address,
		additional_address_info, zip, phone, region, website_url, business_hours, holiday_hours, reopen_date
		FROM listings_current WHERE account = $1 AND status = 'COMPLETE'`, account)
	require.NoError(t, err)
	var changed int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM desired`).Scan(&changed))
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
		_, err = pool.Exec(t.Context(), `UPDATE desired SET location_name = $1 || id`, name)
		require.NoError(t, err)
		mu.Lock()
		clear(updated)
		mu.Unlock()
		// A dry run first: it plans every changed location.
		r = etl(t, env, "listings", "push", "--account", account, "--from", "desired", "--dry-run")
		require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
		require.Contains(t, r.stdout, fmt.Sprintf("%d to send", changed))
		require.Contains(t, r.stdout, "locationName: ")

		kills, done := 0, false
		for trial := 1; trial <= 5 && !done; trial++ {
			clock.offset.Add(int64(2 * time.Minute))
			_, err := pool.Exec(t.Context(), `UPDATE listing_push_requests
				SET sent_at = sent_at - interval '2 minutes', answered_at = answered_at - interval '2 minutes'`)
			require.NoError(t, err)
			mu.Lock()
			puts, killAt, phase = 0, 0, 0
			if trial <= 2 {
				killAt, phase = 1+rng.IntN(2), rng.IntN(3)
			}
			proc = startETL(t, bin, env, "--log-format", "json", "listings", "push", "--account", account, "--from", "desired")
			p := proc
			k, ph := killAt, phase
			mu.Unlock()
			code, stderr := p.wait()
			t.Logf("campaign %d trial %d (kill at PUT %d, phase %d): exit %d\n%s", campaign, trial, k, ph, code, p.stdout.String())
			require.NotContains(t, stderr+p.stdout.String(), tok.AccessToken)
			require.NotContains(t, stderr+p.stdout.String(), key)
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
		mu.Lock()
		require.Len(t, updated, changed)
		for id, n := range updated {
			require.Equal(t, 1, n, "location %s updated %d times", id, n)
		}
		mu.Unlock()
		var items, ids int
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT location_id) FROM listing_push_items
			WHERE account = $1 AND outcome = 'UPDATED' AND content->>'locationName' LIKE $2 || '%'`, account, name).Scan(&items, &ids))
		require.Equal(t, changed, items, "one UPDATED record per location")
		require.Equal(t, changed, ids)
		var other int
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM listing_push_latest
			WHERE account = $1 AND outcome NOT IN ('UPDATED', 'UNCHANGED')`, account).Scan(&other))
		require.Zero(t, other, "the latest outcomes are UPDATED or UNCHANGED")
	}

	r = etl(t, env, "listings", "status", "--account", account)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "nothing pending")
}

// killProc SIGKILLs p.
func killProc(t *testing.T, p *etlProcess) {
	if err := p.cmd.Process.Kill(); err != nil {
		t.Errorf("killing etl: %v", err)
	}
}

// hangUpConn closes the connection without an answer.
func hangUpConn(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}
