package pipeline_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
)

// counting counts the requests to path that reach next.
func counting(path string, n *atomic.Int32, next func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		inner := next(h)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == path {
				n.Add(1)
			}
			inner.ServeHTTP(w, r)
		})
	}
}

// TestAnUnpagedAnswerCutAgainAndAgainIsNotBoughtForEver: a request that
// is neither paged nor narrowed (score profile) is asked again whole after
// a cut, and the API charges each whole answer. An answer cut after some
// complete rows made no progress the task can keep (the next request asks
// for the same rows again), so it counts as a failed try like a cut before
// the first row: the task fails after a bounded number of tries. Before,
// every cut with a complete row reset the count, and a job without a cap
// bought the score profile again for as long as the answers were cut (here
// 30 times, 101 units each, until the server stopped cutting).
func TestAnUnpagedAnswerCutAgainAndAgainIsNotBoughtForEver(t *testing.T) {
	t.Parallel()
	const path = "/apis/v4/backlinks/v1/score-profile"
	var requests atomic.Int32
	f := newFixtureWith(t, counting(path, &requests, cut(path, 30)))
	sum, err := f.tryRun(t, `jobs:
  - name: c
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {score-profile: {}}
`, runNow)
	require.ErrorContains(t, err, "cut")
	require.Equal(t, 1, sum.Failed())
	require.LessOrEqual(t, requests.Load(), int32(4), "asked again whole at most 3 times")
	_, _, units := sum.Totals()
	require.GreaterOrEqual(t, units, f.sandbox.Usage("test-key").UnitsSpent, "never below what the API charged")
}

// TestARefusedTaskRunsOnceTheCapIsRaised: a task refused because one of
// its requests cost more than the whole per_run cap says "raise the cap";
// once the cap is raised, the continuation of the run buys it. Before, a
// continuation skipped it as refused in an earlier attempt whatever the
// caps had become, so the run ended partial, and the next run, a new one,
// bought every other task again to get it (here 30 links, 1,350 units,
// twice).
func TestARefusedTaskRunsOnceTheCapIsRaised(t *testing.T) {
	t.Parallel()
	spec := func(perRun int) string {
		return fmt.Sprintf(`jobs:
  - name: r
    budget: {per_run: %d}
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {summary: {limit: 12}, links: {limit: 10, max_rows: 30}}
`, perRun)
	}
	clean := newFixture(t)
	clean.run(t, spec(1_000_000), runNow)
	cleanUnits := clean.sandbox.Usage("test-key").UnitsSpent

	f := newFixture(t)
	first, err := f.tryRunWith(t, spec(470), runNow, 1)
	require.NoError(t, err)
	require.Equal(t, "partial", first.Status())
	require.True(t, first.Tasks[0].Refused, "480 units in one request, under a cap of 470")
	require.NotEmpty(t, first.Stopped, "the links stopped at the cap")

	// The plan of the continuation prices the refused task again.
	plan := f.plan(t, spec(2000), runNow, false)
	require.NotNil(t, plan.Resume)
	require.Equal(t, int64(12*40), *plan.Tasks[0].Expected, plan.Tasks[0].Basis)

	second, err := f.tryRunWith(t, spec(2000), runNow, 1)
	require.NoError(t, err)
	require.Equal(t, first.RunID, second.RunID)
	require.Equal(t, "succeeded", second.Status(), "%+v", second.Tasks[0].Skipped)
	require.Equal(t, int64(12), f.count(t, `SELECT count(*) FROM backlink_history`))
	require.Equal(t, cleanUnits, f.sandbox.Usage("test-key").UnitsSpent, "every line bought once")

	// Still dearer than the cap: refused again, and nothing is sent.
	g := newFixture(t)
	_, err = g.tryRunWith(t, spec(470), runNow, 1)
	require.NoError(t, err)
	before := g.sandbox.Usage("test-key").UnitsSpent
	again, err := g.tryRunWith(t, spec(471), runNow, 1)
	require.NoError(t, err)
	require.True(t, again.Tasks[0].Refused)
	require.Contains(t, again.Tasks[0].Skipped, "more than the whole per_run cap")
	require.NotContains(t, again.Tasks[0].Skipped, "earlier attempt", "weighed again under the new cap")
	require.Equal(t, before+10*45, g.sandbox.Usage("test-key").UnitsSpent, "only a page of links")
}

// TestAnAnalystCannotStallAPartition: a role granted etl_analyst holds
// the advisory key under which partitions were made (derivable from the
// table's name) and keeps a transaction open that read every fact table,
// and a run whose pages need new month partitions still loads. Before,
// the first page of a month waited on the advisory lock, or behind the
// open read on CREATE TABLE ... PARTITION OF (ACCESS EXCLUSIVE on the
// table), for as long as the analyst liked, with the job's lock held and
// its page paid for.
func TestAnAnalystCannotStallAPartition(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	analyst, err := pgx.Connect(ctx, pgtest.NewRole(t, f.dbURL, "etl_analyst"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = analyst.Close(context.Background()) })
	var pid int32
	require.NoError(t, analyst.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	tx, err := analyst.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	for _, ep := range catalog.All() {
		h := fnv.New64a()
		h.Write([]byte("etl:partition:" + ep.Table))
		_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(h.Sum64()))
		require.NoError(t, err)
		_, err = tx.Exec(ctx, "SELECT 1 FROM "+pgx.Identifier{ep.Table}.Sanitize()+" LIMIT 1")
		require.NoError(t, err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := f.tryRun(t, `jobs:
  - name: p
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}, summary: {limit: 3}, links: {limit: 50, max_rows: 50}}
    keywords: {keywords: [seo], countries: [US]}
`, runNow)
		done <- err
	}()
	// A watchdog, not a wait: fail as soon as the analyst blocks the run
	// (on a connection of its own: the run's pages may hold the pool's).
	watch, err := pgx.Connect(ctx, f.dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = watch.Close(context.Background()) })
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			require.NoError(t, err)
			require.Equal(t, int64(3), f.count(t, `SELECT count(*) FROM backlink_history`))
			require.Equal(t, int64(50), f.count(t, `SELECT count(*) FROM backlinks`))
			return
		case <-tick.C:
			var blocked []string
			rows, err := watch.Query(ctx, `SELECT left(query, 80) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid)
			require.NoError(t, err)
			blocked, err = pgx.CollectRows(rows, pgx.RowTo[string])
			require.NoError(t, err)
			if len(blocked) > 0 {
				_ = tx.Rollback(context.Background()) // let the run end
				<-done
				t.Fatalf("the analyst's session blocks the run: %q", blocked)
			}
		}
	}
}

// TestACutSummaryGoesOnBelowTheMonthsItGot: the rest of a cut summary is
// asked for from the month before the oldest it loaded. Here the run's
// clock is in December while the API's newest month is still November
// (its data lags at the turn of a month, or it keeps another zone's
// time), so the answer's first row is not the run's month. Before, the
// rest was counted from the run's month (date_to = December less the rows
// got), so the month at the cut was bought twice and the oldest month of
// the limit was never asked for: the run succeeded with 9 months of 10.
func TestACutSummaryGoesOnBelowTheMonthsItGot(t *testing.T) {
	t.Parallel()
	later := time.Date(2026, 12, 1, 0, 30, 0, 0, time.UTC) // the sandbox is at runNow, in November
	const spec = "jobs:\n  - name: c\n    targets: [{url: n300.example, scope: ROOT_DOMAIN}]\n    endpoints: {summary: {limit: 10}}\n"
	months := func(f *fixture) []string {
		rows, err := f.pool.Query(t.Context(), `SELECT to_char(month, 'YYYY-MM') FROM backlink_history ORDER BY 1`)
		require.NoError(t, err)
		ms, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return ms
	}
	clean := newFixture(t)
	clean.run(t, spec, later)
	require.Len(t, months(clean), 10)
	require.Equal(t, "2026-11", months(clean)[9], "the API's newest month")

	f := newFixtureWith(t, cut("/apis/v4/backlinks/v1/summary", 1))
	sum, err := f.tryRun(t, spec, later)
	require.NoError(t, err)
	require.Equal(t, "succeeded", sum.Status())
	require.Equal(t, months(clean), months(f))
	require.Equal(t, clean.tableHash(t, "backlink_history"), f.tableHash(t, "backlink_history"))
	// The cut answer was charged whole; the rest asked for no month twice:
	// the two answers held 10 rows in all, and the second cost only its own.
	var got, again int64
	require.NoError(t, f.pool.QueryRow(t.Context(), `SELECT (SELECT rows FROM task_checkpoints), (SELECT spent FROM unit_ledger ORDER BY ledger_id OFFSET 1 LIMIT 1)`).Scan(&got, &again))
	require.Equal(t, int64(10), got, "rows received")
	require.Equal(t, 10*40+again, f.sandbox.Usage("test-key").UnitsSpent)
}

// gatewayTimeout forwards the first n requests to the API, which answers
// (and charges) them, and then answers 504 with a gateway's HTML page, as
// a proxy or load balancer does whose upstream took too long.
func gatewayTimeout(n int32) func(http.Handler) http.Handler {
	var seen atomic.Int32
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if seen.Add(1) > n {
				next.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(httptest.NewRecorder(), r) // the API did the work, and charged it
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusGatewayTimeout)
			_, _ = io.WriteString(w, "<html><body><h1>504 Gateway Time-out</h1></body></html>\n")
		})
	}
}

// TestAGatewayTimeoutKeepsItsReservation: a 504 that is not the API's
// error envelope comes from a gateway in front of the API, after the
// request reached it: the API may have answered and charged it. The
// ledger keeps the reservation (it never counts less than the API
// charged), and the page is asked again under a new one, at most 3 times
// in a row. Before, a gateway's 504 counted as the API's error answer: it
// was settled at 0 and tried again up to 10 times, each try charged by
// the API and booked by nobody.
func TestAGatewayTimeoutKeepsItsReservation(t *testing.T) {
	t.Parallel()
	const spec = `jobs:
  - name: g
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}, links: {limit: 100, max_rows: 200}}
`
	f := newFixtureWith(t, gatewayTimeout(2))
	sum, err := f.tryRunWith(t, spec, runNow, 1)
	require.NoError(t, err)
	require.Equal(t, "succeeded", sum.Status())
	charged := f.sandbox.Usage("test-key").UnitsSpent
	require.Equal(t, int64(3*45+200*45), charged, "the overview three times, 200 links")
	booked := f.count(t, `SELECT sum(coalesce(spent, reserved)) FROM unit_ledger`)
	require.GreaterOrEqual(t, booked, charged, "the ledger counts less than the API charged")

	// Answers that keep timing out fail the task after 3 tries in a row;
	// from the run's first request, the run then stops: until the API has
	// answered the run, one task asks, and the other would only pay for
	// the same timeouts. (Before, each task tried 4 times: 4*45+4*100*45.)
	g := newFixtureWith(t, gatewayTimeout(1000))
	sum, err = g.tryRunWith(t, spec, runNow, 1)
	require.Error(t, err)
	require.Equal(t, 1, sum.Failed())
	require.Equal(t, 1, sum.Skipped())
	require.Contains(t, sum.Stopped, "has answered no request of the run, so no other task asked")
	require.Equal(t, int64(4*45), g.sandbox.Usage("test-key").UnitsSpent, "4 tries of the first task's first request")
	require.GreaterOrEqual(t, g.count(t, `SELECT sum(coalesce(spent, reserved)) FROM unit_ledger`), g.sandbox.Usage("test-key").UnitsSpent)

	// Once the API has answered the run, they fail their task alone.
	var seen atomic.Int32
	timeouts := gatewayTimeout(1000)
	h := newFixtureWith(t, func(next http.Handler) http.Handler {
		late := timeouts(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if seen.Add(1) == 1 {
				next.ServeHTTP(w, r)
				return
			}
			late.ServeHTTP(w, r)
		})
	})
	sum, err = h.tryRunWith(t, spec, runNow, 1)
	require.Error(t, err)
	require.Equal(t, 1, sum.Failed())
	require.Zero(t, sum.Skipped())
	require.Empty(t, sum.Stopped)
	require.Equal(t, int64(45+4*100*45), h.sandbox.Usage("test-key").UnitsSpent, "the overview, then 4 tries of the links' first request")
}

// TestPlanSaysACapSmallerThanOneLineNeverFits: under a per_run cap that
// cannot pay one line of links, the run refuses every task; the plan says
// so of each, the unbounded links too. Before, it stopped at the links
// (no total, no max_rows) with "cannot tell", and said nothing of the
// tasks after them.
func TestPlanSaysACapSmallerThanOneLineNeverFits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const spec = `jobs:
  - name: tiny
    budget: {per_run: 10}
    targets: [{url: n300.example, scope: ROOT_DOMAIN}]
    endpoints: {links: {limit: 50}, overview: {}, score-profile: {}}
`
	plan := f.plan(t, spec, runNow, false)
	require.Len(t, plan.Caps, 1)
	c := plan.Caps[0]
	require.NotNil(t, c.Fits, c.String())
	require.False(t, *c.Fits)
	require.Len(t, c.Never, 3, c.String())
	require.Contains(t, c.Never[0], "links n300.example (ROOT_DOMAIN) (one request may cost 45)")

	sum, err := f.tryRun(t, spec, runNow)
	require.NoError(t, err)
	for _, res := range sum.Tasks {
		require.True(t, res.Refused, res.Task.String())
	}
}
