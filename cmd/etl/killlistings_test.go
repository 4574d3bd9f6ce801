package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// listingCounter counts the listing requests a sandbox is sent; at the
// at-th, it tells on hit (once), as the request arrives.
type listingCounter struct {
	seen atomic.Int64
	at   atomic.Int64
	hit  chan int64
}

// countListings wraps the world's sandbox in a listingCounter.
func countListings(w *listingsWorld) *listingCounter {
	c := &listingCounter{hit: make(chan int64, 1)}
	w.setMW(func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, catalog.LocationsPrefix) {
				if n := c.seen.Add(1); n == c.at.Load() {
					c.hit <- n
				}
			}
			h.ServeHTTP(rw, r)
		})
	})
	return c
}

// listingHashes digests the listing tables and the quarantine, every
// column of every row.
func listingHashes(t *testing.T, dbURL string) map[string]string {
	t.Helper()
	return tableHashes(t, dbURL, "listing_versions", "listing_problems", "quarantine")
}

// TestKilledListingsPullsResumeToTheTablesOfACleanRun kills `etl run` of
// a listings-only job (SIGKILL) at a random listing request, once or
// twice per trial, then runs it again to the end: the listing tables and
// the quarantine must equal a clean run's into another warehouse at the
// same --now, and the run's own counts must count each location once.
// The account is small (80 locations in pages of 10: about 9 s a run at
// the real rate limits, 10 requests a second), and the clean run goes
// on against a sandbox of its own while the trials run.
func TestKilledListingsPullsResumeToTheTablesOfACleanRun(t *testing.T) {
	t.Parallel()
	const account, locations = "kill-n80", 80
	bin := etlBinary(t)
	jobs := writeSpec(t, fmt.Sprintf("jobs:\n  - name: kill\n    listings: {account: %s, size: 10}\n", account))
	args := []string{"--log-format", "json", "run", "--jobs", jobs, "--now", cliNow.Format(time.RFC3339)}

	cleanEnv := newListingsWorld(t, account).env
	clean := make(chan map[string]string, 1)
	go func() {
		code, stderr := startETL(t, bin, cleanEnv, args...).wait()
		if code != exitOK {
			t.Errorf("the clean run failed (%d): %s", code, stderr)
		}
		clean <- listingHashes(t, cleanEnv["DATABASE_URL"])
	}()

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	// 8 pages and 80 single reads: kill within them.
	const requests = locations/10 + locations
	var got []map[string]string
	for trial := range 2 {
		w := newListingsWorld(t, account)
		c := countListings(w)
		env := w.env
		kills := 1 + rng.IntN(2)
		for k := range kills {
			// The first kill at a request of the whole pull; a second
			// within the page the first left uncommitted, which the
			// resumed attempt reads again with its 10 statuses.
			if k == 0 {
				c.at.Store(2 + rng.Int64N(requests-4))
			} else {
				c.at.Store(c.seen.Load() + 1 + rng.Int64N(11))
			}
			p := startETL(t, bin, env, args...)
			go func() {
				for range p.lines { // drained, so that etl never blocks on its stderr
				}
			}()
			select {
			case n := <-c.hit:
				require.NoError(t, p.cmd.Process.Kill())
				t.Logf("trial %d, attempt %d: killed at listing request %d", trial, k+1, n)
			case <-time.After(30 * time.Second): // a bound, not a wait: the kill comes within a run
				t.Fatalf("trial %d: the listing request to kill at never came", trial)
			}
			_ = p.cmd.Wait()
		}
		c.at.Store(0)
		code, stderr := startETL(t, bin, env, args...).wait()
		require.Equal(t, exitOK, code, stderr)
		got = append(got, listingHashes(t, env["DATABASE_URL"]))

		conn, err := pgx.Connect(t.Context(), env["DATABASE_URL"])
		require.NoError(t, err)
		var runs, attempts int
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*), max(attempts) FROM runs WHERE status = 'succeeded'`).Scan(&runs, &attempts))
		require.Equal(t, 1, runs, "trial %d: one run, resumed", trial)
		require.Equal(t, kills+1, attempts, "trial %d", trial)
		// Over its attempts, the run inserted each location once.
		var inserted, rows int64
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT inserted, rows FROM run_tables WHERE table_name = 'listing_versions'`).Scan(&inserted, &rows))
		require.EqualValues(t, locations, inserted, "trial %d: inserted over the attempts", trial)
		require.EqualValues(t, locations, rows, "trial %d: rows over the attempts", trial)
		require.NoError(t, conn.Close(t.Context()))
	}
	want := <-clean
	require.Contains(t, want["listing_versions"], fmt.Sprintf("(%d rows)", locations))
	for trial, g := range got {
		require.Equal(t, want, g, "trial %d: the tables differ from a clean run's", trial)
	}
}
