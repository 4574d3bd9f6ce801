package pipeline_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/sandbox/locations"
)

// TestListingPageWithARepeatedItemIsNotShort: a page of the API that lists one
// location twice (and so one location fewer) is full, not short: the
// pull does not take it for a smaller bound of the size, learns none,
// and pages on at the size the API accepts.
func TestListingPageWithARepeatedItemIsNotShort(t *testing.T) {
	const account = "twice-n250"
	f := newListingFixture(t, account)
	f.handler = alterListings(f.handler, func(c []json.RawMessage) []json.RawMessage {
		if len(c) > 1 {
			c[1] = c[0]
		}
		return c
	}, nil)
	day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	sum, err := f.pull(t, listingSpec(account), day)
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)
	var bound int
	require.NoError(t, f.Pool.QueryRow(t.Context(), `SELECT accepted FROM api_bounds WHERE param = 'size'`).Scan(&bound))
	require.Equal(t, locations.MaxPageSize, bound, "a repeated item is no bound")
	require.EqualValues(t, 1+3, f.pages.Load(), "the refused probe, then 3 pages of 100")
}

// TestListingPlanSendsWhatTheRunSends: after a pull whose size: is above the
// API's bound, the plan counts the pages at the bound, as the next run
// sends them, not at the size the spec asks.
func TestListingPlanSendsWhatTheRunSends(t *testing.T) {
	const account = "plan-n250"
	f := newListingFixture(t, account)
	spec := "jobs:\n  - name: stores\n    listings: {account: " + account + ", size: 500}\n"
	day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	_, err := f.pull(t, spec, day)
	require.NoError(t, err)

	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), day.AddDate(0, 0, 1))
	require.NoError(t, err)
	planner, err := planning.NewPlanner(planning.PlanConfig{Pool: f.Pool, Now: func() time.Time { return day.AddDate(0, 0, 1) }})
	require.NoError(t, err)
	plan, err := planner.Plan(t.Context(), s.Jobs[0], planning.PlanOptions{})
	require.NoError(t, err)
	require.Len(t, plan.Listings, 1)
	lp := plan.Listings[0]
	require.Equal(t, locations.MaxPageSize, lp.Size, lp.String())

	f.pages.Store(0)
	f.singles.Store(0)
	_, err = f.pull(t, spec, day.AddDate(0, 0, 1))
	require.NoError(t, err)
	require.EqualValues(t, f.pages.Load(), *lp.Pages, lp.String())
	require.EqualValues(t, f.singles.Load(), *lp.Singles, lp.String())
}

// TestTwoJobsPullTheSameAccountAtOnce: two jobs whose listings are of the
// same account run at the same time (their locks are their jobs'): both
// succeed, and the tables are those of one pull.
func TestTwoJobsPullTheSameAccountAtOnce(t *testing.T) {
	const account = "both-n230"
	day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	clean := newListingFixture(t, account)
	_, err := clean.pull(t, listingSpec(account), day)
	require.NoError(t, err)
	want := listingTables(t, clean.Pool)

	f := newListingFixture(t, account)
	f.day.Store(&day)
	spec := "jobs:\n  - name: a\n    listings: {account: " + account + ", size: 20}\n  - name: b\n    listings: {account: " + account + ", size: 20}\n"
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), day)
	require.NoError(t, err)
	errs := make(chan error, 2)
	for _, job := range s.Jobs {
		go func() {
			r, err := pipeline.NewRunner(pipeline.Config{AccountClient: f.client, Pool: f.Pool, Now: func() time.Time { return day }})
			if err != nil {
				errs <- err
				return
			}
			sum, err := r.Run(t.Context(), job)
			if err == nil && sum.Tasks[0].Err != nil {
				err = sum.Tasks[0].Err
			}
			errs <- err
		}()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	require.Equal(t, want, listingTables(t, f.Pool))
}

// TestListingsOfAnEmptyAccount: an account of no locations pulls to nothing, and
// its task is done.
func TestListingsOfAnEmptyAccount(t *testing.T) {
	const account = "empty-n0"
	f := newListingFixture(t, account)
	sum, err := f.pull(t, listingSpec(account), time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)
	require.Zero(t, sum.Tasks[0].Rows)
	require.Empty(t, f.current(t, account))
	require.Zero(t, f.singles.Load())
}

// TestAPullThroughA429Storm: a sandbox that answers 429, 500, 503 or cuts
// the answer off on many of its listing requests: the pull retries them
// and ends with the tables of a clean pull.
func TestAPullThroughA429Storm(t *testing.T) {
	const account = "storm-n150"
	day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	clean := newListingFixture(t, account)
	_, err := clean.pull(t, listingSpec(account), day)
	require.NoError(t, err)
	want := listingTables(t, clean.Pool)

	f := newListingFixture(t, account)
	stormy, err := sandbox.New(sandbox.Config{Seed: listingSeed, Now: func() time.Time { return *f.day.Load() },
		WallClock: f.wall.Now, APIKeys: []string{account},
		Faults: sandbox.Faults{TooManyRequests: 0.3, Internal: 0.05, Unavailable: 0.05, Cut: 0.05}})
	require.NoError(t, err)
	tok, err := stormy.IssueToken(account)
	require.NoError(t, err)
	f.tokens[account] = tok.AccessToken
	f.handler = stormy.Handler()
	sum, err := f.pull(t, listingSpec(account), day)
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)
	require.Positive(t, f.tooMany.Load(), "the storm hit")
	require.Equal(t, want, listingTables(t, f.Pool))
}

// TestAJobPushInterrupted: the run's context ends (SIGINT) while its
// push step waits for the answer of its first request: the request is
// finished (its locations UPDATED), nothing more is sent, the run ends
// interrupted, and its next run sends the rest, each location once. The
// push went on to its end whatever the signal said (a push of thousands
// of locations, five bulk requests a minute, for many minutes).
func TestAJobPushInterrupted(t *testing.T) {
	const account = "step-n120"
	f := newListingFixture(t, account)
	day := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	_, err := f.pull(t, listingSpec(account), day)
	require.NoError(t, err)
	_, err = f.Pool.Exec(t.Context(), `CREATE TABLE desired AS
		SELECT location_id AS id, 'Stopped ' || location_id AS location_name, city, address, additional_address_info, zip, phone,
		       region, website_url, business_hours, holiday_hours, reopen_date
		FROM listings_current WHERE account = '`+account+`' AND status = 'COMPLETE'`)
	require.NoError(t, err)
	want := f.Count(t, `SELECT count(*) FROM desired`)
	require.Greater(t, want, int64(catalog.MaxBulkLocations), "more than one request")

	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	var puts atomic.Int64
	updated := map[string]int{}
	var mu sync.Mutex
	h := f.handler
	f.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			h.ServeHTTP(w, r)
			return
		}
		if puts.Add(1) == 1 {
			interrupt() // what the first SIGINT does
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var b listing.BulkBody
		if json.Unmarshal(rec.Body.Bytes(), &b) == nil {
			mu.Lock()
			for _, res := range b.Data {
				if res.State == catalog.StateUpdated {
					updated[res.LocationID]++
				}
			}
			mu.Unlock()
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
	spec := "jobs:\n  - name: stores\n    listings: {account: " + account + ", push: desired}\n"
	day2 := day.Add(time.Hour)
	sum, err := f.pullCtx(ctx, t, spec, day2)
	require.NoError(t, err)
	require.True(t, sum.Interrupted)
	require.NoError(t, sum.Tasks[0].Err, "interrupted, not failed")
	require.Equal(t, int64(1), puts.Load(), "nothing sent after the interruption")
	require.EqualValues(t, catalog.MaxBulkLocations, f.Count(t, `SELECT count(*) FROM listing_push_items WHERE outcome = 'UPDATED'`),
		"the request in flight was finished")
	require.EqualValues(t, 1, f.Count(t, `SELECT count(*) FROM listing_pushes WHERE status = 'interrupted'`))

	// The next run finishes the push.
	sum, err = f.pull(t, spec, day2.Add(time.Minute))
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)
	require.False(t, sum.Interrupted)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, updated, int(want))
	for id, n := range updated {
		require.Equal(t, 1, n, id)
	}
}
