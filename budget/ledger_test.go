package budget_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
)

var ledgerNow = time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)

func endpoint(t *testing.T, name string) *catalog.Endpoint {
	t.Helper()
	ep, ok := catalog.Lookup(name)
	require.True(t, ok)
	return ep
}

// TestConcurrentWorkersNeverOverspend: 8 workers reserve pages of links
// against one run cap, settling some below their reservation and leaving
// some unsettled (a page that broke); together they never pass the cap,
// the last page shrinks to what is left, and the counters equal the ledger.
func TestConcurrentWorkersNeverOverspend(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	l := budget.New(pool, func() time.Time { return ledgerNow })
	links := endpoint(t, "links") // 45 units per line
	runID, err := l.StartRun(t.Context(), "j", "manual")
	require.NoError(t, err)
	const cap = 45*1000 + 30 // 1000 lines and change
	acct := budget.Account{RunID: runID, Job: "j", Caps: budget.Caps{PerRun: cap}}

	var mu sync.Mutex
	var shrunk []int
	var g errgroup.Group
	for w := range 8 {
		g.Go(func() error {
			for i := 0; ; i++ {
				r, err := l.Reserve(t.Context(), acct, budget.Ask{Endpoint: links, Target: fmt.Sprintf("w%d", w), Lines: 37, Shrink: true})
				if errors.Is(err, budget.ErrExhausted) {
					return nil
				}
				if err != nil {
					return err
				}
				if r.Lines < 37 {
					mu.Lock()
					shrunk = append(shrunk, r.Lines)
					mu.Unlock()
				}
				switch i % 3 {
				case 0: // a full page
					err = l.Settle(t.Context(), nil, r, r.Units)
				case 1: // the end of the data: fewer lines than asked
					err = l.Settle(t.Context(), nil, r, links.Price.Cost(r.Lines/2))
				case 2: // the page broke: the reservation stands
				}
				if err != nil {
					return err
				}
				l.Finish(r)
			}
		})
	}
	require.NoError(t, g.Wait())

	spent, err := l.RunUnits(t.Context(), runID)
	require.NoError(t, err)
	require.LessOrEqual(t, spent, int64(cap))
	require.Greater(t, spent, int64(cap-45), "the workers stopped only when not one more line fit")
	require.NotEmpty(t, shrunk, "a page was cut to what the cap afforded")

	var counter int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT used FROM budget_usage WHERE key = $1`, fmt.Sprint("run:", runID)).Scan(&counter))
	require.Equal(t, spent, counter, "the counter sums the ledger")
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT used FROM budget_usage WHERE key = 'day:2026-11-21'`).Scan(&counter))
	require.Equal(t, spent, counter)
}

func TestCapsOfEveryScope(t *testing.T) {
	t.Parallel()
	overview := endpoint(t, "overview") // 45 per request
	for _, tc := range []struct {
		name string
		caps budget.Caps
		cap  string
	}{
		{"per run", budget.Caps{PerRun: 100}, "per_run"},
		{"job monthly", budget.Caps{JobMonthly: 100}, "job monthly"},
		{"daily", budget.Caps{Daily: 100}, "daily"},
		{"monthly", budget.Caps{Monthly: 100}, "monthly"},
		{"the tightest wins", budget.Caps{PerRun: 1000, Daily: 100, Monthly: 500}, "daily"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			l := budget.New(pool, func() time.Time { return ledgerNow })
			runID, err := l.StartRun(t.Context(), "j", "manual")
			require.NoError(t, err)
			acct := budget.Account{RunID: runID, Job: "j", Caps: tc.caps}
			for range 2 {
				r, err := l.Reserve(t.Context(), acct, budget.Ask{Endpoint: overview, Target: "a"})
				require.NoError(t, err)
				require.Equal(t, int64(45), r.Units)
				l.Finish(r) // unsettled: it counts as spent
			}
			_, err = l.Reserve(t.Context(), acct, budget.Ask{Endpoint: overview, Target: "a"})
			var ex *budget.ExhaustedError
			require.ErrorAs(t, err, &ex)
			require.Equal(t, tc.cap, ex.Cap)
			require.Equal(t, int64(90), ex.Used)
			require.Contains(t, err.Error(), "has 10 left, and the next request (overview a) costs 45")
		})
	}
}

func TestCapsSpanRunsAndDays(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	now := ledgerNow
	l := budget.New(pool, func() time.Time { return now })
	overview := endpoint(t, "overview")
	reserve := func(job string, caps budget.Caps) error {
		runID, err := l.StartRun(t.Context(), job, "manual")
		require.NoError(t, err)
		r, err := l.Reserve(t.Context(), budget.Account{RunID: runID, Job: job, Caps: caps}, budget.Ask{Endpoint: overview, Target: "a"})
		l.Finish(r)
		return err
	}
	// The job's monthly cap counts every run of the job, not other jobs.
	caps := budget.Caps{PerRun: 45, JobMonthly: 90}
	require.NoError(t, reserve("a", caps))
	require.NoError(t, reserve("a", caps))
	require.ErrorIs(t, reserve("a", caps), budget.ErrExhausted)
	require.NoError(t, reserve("b", caps))
	// Next month, the job starts afresh; the daily cap counts every job.
	now = now.AddDate(0, 1, 0)
	require.NoError(t, reserve("a", budget.Caps{Daily: 90}))
	require.NoError(t, reserve("b", budget.Caps{Daily: 90}))
	require.ErrorIs(t, reserve("c", budget.Caps{Daily: 90}), budget.ErrExhausted)
	now = now.AddDate(0, 0, 1)
	require.NoError(t, reserve("c", budget.Caps{Daily: 90}))
}

func TestSettle(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	l := budget.New(pool, func() time.Time { return ledgerNow })
	links := endpoint(t, "links")
	runID, err := l.StartRun(t.Context(), "j", "manual")
	require.NoError(t, err)
	acct := budget.Account{RunID: runID, Job: "j"}
	r, err := l.Reserve(t.Context(), acct, budget.Ask{Endpoint: links, Target: "a", Lines: 100})
	require.NoError(t, err)
	require.Equal(t, int64(4500), r.Units)
	require.ErrorContains(t, l.Settle(t.Context(), nil, r, -1), "settling ledger row")

	// An answer dearer than its reservation is recorded at what it cost,
	// in the ledger and in the counters.
	over, err := l.Reserve(t.Context(), acct, budget.Ask{Endpoint: links, Target: "over", Lines: 1})
	require.NoError(t, err)
	require.NoError(t, l.Settle(t.Context(), nil, over, 90))
	used, err := l.Used(t.Context(), []string{fmt.Sprintf("run:%d", runID)})
	require.NoError(t, err)
	require.Equal(t, int64(4500+90), used[fmt.Sprintf("run:%d", runID)])
	units, err := l.RunUnits(t.Context(), runID)
	require.NoError(t, err)
	require.Equal(t, int64(4500+90), units)

	// Settled in a transaction that rolls back: the reservation stands.
	tx, err := pool.Begin(t.Context())
	require.NoError(t, err)
	require.NoError(t, l.Settle(t.Context(), tx, r, 450))
	require.NoError(t, tx.Rollback(t.Context()))
	units, err = l.RunUnits(t.Context(), runID)
	require.NoError(t, err)
	require.Equal(t, int64(4500+90), units)

	require.NoError(t, l.Settle(t.Context(), nil, r, 450))
	units, err = l.RunUnits(t.Context(), runID)
	require.NoError(t, err)
	require.Equal(t, int64(450+90), units)
	require.ErrorContains(t, l.Settle(t.Context(), nil, r, 450), "settled already")

	require.NoError(t, l.FinishRun(t.Context(), runID, "succeeded", 10, ""))
	var status string
	var runUnits int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT status, units FROM runs WHERE run_id = $1`, runID).Scan(&status, &runUnits))
	require.Equal(t, "succeeded", status)
	require.Equal(t, int64(450+90), runUnits)
}

func TestUsage(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	l := budget.New(pool, func() time.Time { return ledgerNow })
	overview := endpoint(t, "overview")
	caps := budget.Caps{PerRun: 100, JobMonthly: 1000, Daily: 5000, Monthly: 50000}
	for range 2 {
		runID, err := l.StartRun(t.Context(), "a", "manual")
		require.NoError(t, err)
		_, err = l.Reserve(t.Context(), budget.Account{RunID: runID, Job: "a", Caps: caps}, budget.Ask{Endpoint: overview, Target: "x"})
		require.NoError(t, err)
	}
	uses, err := l.Usage(t.Context(), []string{"a", "b"}, map[string]budget.Caps{"a": caps, "b": {Daily: 5000, Monthly: 50000}})
	require.NoError(t, err)
	require.Equal(t, []budget.Use{
		{Scope: "installation 2026-11-21", Cap: 5000, Used: 90},
		{Scope: "installation 2026-11", Cap: 50000, Used: 90},
		{Scope: "job a 2026-11", Job: "a", Cap: 1000, Used: 90},
		{Scope: "job a run 2 (latest)", Job: "a", Cap: 100, Used: 45},
		{Scope: "job b 2026-11", Job: "b", Cap: 0, Used: 0},
	}, uses)
	quoted := func(s string) string { return "<" + s + ">" }
	require.Equal(t, "installation 2026-11", uses[1].Shown(quoted))
	require.Equal(t, "job <a> run 2 (latest)", uses[3].Shown(quoted), "the job's name as show shows it")
	require.Equal(t, int64(55), uses[3].Left())
	require.Equal(t, int64(-1), uses[4].Left())
}
