package budget_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/internal/pgtest"
)

// waiter is a Ledger whose Reserves report when they start to wait.
type waiter struct {
	*budget.Ledger
	waits  atomic.Int32
	waited chan struct{}
}

func newWaiter(t *testing.T, l *budget.Ledger) *waiter {
	t.Helper()
	w := &waiter{Ledger: l, waited: make(chan struct{}, 64)}
	budget.OnWait(l, func() {
		w.waits.Add(1)
		w.waited <- struct{}{}
	})
	return w
}

type reserved struct {
	r   budget.Reservation
	err error
}

// reserveAsync reserves in a goroutine of its own.
func (w *waiter) reserveAsync(ctx context.Context, a budget.Account, ask budget.Ask) <-chan reserved {
	got := make(chan reserved, 1)
	go func() {
		r, err := w.Reserve(ctx, a, ask)
		got <- reserved{r, err}
	}()
	return got
}

// waiting returns once a Reserve waits for room; it fails the test when
// the Reserve returns instead.
func (w *waiter) waiting(t *testing.T, got <-chan reserved) {
	t.Helper()
	select {
	case <-w.waited:
	case res := <-got:
		t.Fatalf("Reserve returned %+v, %v instead of waiting for the reservations in flight", res.r, res.err)
	}
}

// settle settles r at spent lines of links in a transaction of its own,
// and finishes it.
func (w *waiter) settle(t *testing.T, r budget.Reservation, lines int64) {
	t.Helper()
	require.NoError(t, w.Settle(t.Context(), nil, r, 45*lines))
	w.Finish(r)
}

func (w *waiter) runUnits(t *testing.T, runID int64) int64 {
	t.Helper()
	n, err := w.RunUnits(t.Context(), runID)
	require.NoError(t, err)
	return n
}

// TestReserveWaitsForReservationsInFlight: against a per-run cap of 7,777,
// a page of 100 lines of links (4,500 units) in flight leaves no room for
// another; the next waits for it rather than shrink, and gets a whole page
// once the first settles low. While a page is in flight, a request waits
// even when the cap has no room left now; it gives up only when what has
// settled leaves no room for one line.
func TestReserveWaitsForReservationsInFlight(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	l := newWaiter(t, budget.New(pool, func() time.Time { return ledgerNow }))
	links := endpoint(t, "links") // 45 units per line
	runID, err := l.StartRun(t.Context(), "j", "manual")
	require.NoError(t, err)
	acct := budget.Account{RunID: runID, Job: "j", Caps: budget.Caps{PerRun: 7777}}
	page := budget.Ask{Endpoint: links, Target: "a", Lines: 100, Shrink: true}

	a, err := l.Reserve(t.Context(), acct, page)
	require.NoError(t, err)
	require.Equal(t, int64(4500), a.Units)

	got := l.reserveAsync(t.Context(), acct, page)
	l.waiting(t, got)
	l.settle(t, a, 4) // the target had 4 links
	b := <-got
	require.NoError(t, b.err)
	require.Equal(t, 100, b.r.Lines, "a whole page once the first settled low, not one shrunk to the 3,277 units left")

	// 180 + 4,500 in flight: the next waits, then shrinks to what is left
	// once nothing of ours is in flight.
	got = l.reserveAsync(t.Context(), acct, page)
	l.waiting(t, got)
	l.settle(t, b.r, 100)
	c := <-got
	require.NoError(t, c.err)
	require.Equal(t, 68, c.r.Lines, "(7,777 - 4,680) / 45")

	// 37 units left, but 3,060 in flight: the next waits; once those
	// settle in full, not one line fits.
	got = l.reserveAsync(t.Context(), acct, page)
	l.waiting(t, got)
	l.settle(t, c.r, 68)
	d := <-got
	var ex *budget.ExhaustedError
	require.ErrorAs(t, d.err, &ex)
	require.Equal(t, [4]any{"per_run", int64(7777), int64(7740), int64(45)}, [4]any{ex.Cap, ex.Limit, ex.Used, ex.Need})
	require.Equal(t, int32(3), l.waits.Load())
	require.Equal(t, int64(7740), l.runUnits(t, runID))

	// A request that may not shrink needs its whole worst case; with
	// nothing in flight it gives up at once.
	_, err = l.Reserve(t.Context(), acct, budget.Ask{Endpoint: links, Target: "a", Lines: 100})
	require.ErrorAs(t, err, &ex)
	require.Equal(t, int64(4500), ex.Need, "the smallest acceptable request is the whole page")
	require.Equal(t, int32(3), l.waits.Load())
}

// TestReserveWaitEndsWithItsContext: a Reserve waiting for room returns
// the context's error when it is cancelled, and reserves nothing. Finish
// is safe twice and for a zero Reservation.
func TestReserveWaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	l := newWaiter(t, budget.New(pool, func() time.Time { return ledgerNow }))
	links := endpoint(t, "links")
	runID, err := l.StartRun(t.Context(), "j", "manual")
	require.NoError(t, err)
	acct := budget.Account{RunID: runID, Job: "j", Caps: budget.Caps{PerRun: 7777}}
	page := budget.Ask{Endpoint: links, Target: "a", Lines: 100, Shrink: true}
	a, err := l.Reserve(t.Context(), acct, page)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	got := l.reserveAsync(ctx, acct, page)
	l.waiting(t, got)
	cancel()
	b := <-got
	require.ErrorIs(t, b.err, context.Canceled)
	require.NotErrorIs(t, b.err, budget.ErrExhausted)
	require.Contains(t, b.err.Error(), "budget: waiting for room to reserve links for a")
	require.Zero(t, b.r)
	require.Equal(t, int64(4500), l.runUnits(t, runID), "nothing reserved while waiting")

	// Finished twice (and a zero one), a, never settled, counts once, as
	// spent: the next request shrinks to what is left, without waiting.
	l.Finish(a)
	l.Finish(a)
	l.Finish(budget.Reservation{})
	c, err := l.Reserve(t.Context(), acct, page)
	require.NoError(t, err)
	require.Equal(t, 72, c.Lines)
	require.Equal(t, int32(1), l.waits.Load())
}

// TestReserveWaitEndsWhenThePageRollsBack: the page transaction that
// settles the reservation in flight rolls back; once the page is finished,
// the waiting Reserve counts it as spent at its worst case and shrinks.
func TestReserveWaitEndsWhenThePageRollsBack(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	l := newWaiter(t, budget.New(pool, func() time.Time { return ledgerNow }))
	links := endpoint(t, "links")
	runID, err := l.StartRun(t.Context(), "j", "manual")
	require.NoError(t, err)
	acct := budget.Account{RunID: runID, Job: "j", Caps: budget.Caps{PerRun: 7777}}
	page := budget.Ask{Endpoint: links, Target: "a", Lines: 100, Shrink: true}
	a, err := l.Reserve(t.Context(), acct, page)
	require.NoError(t, err)

	got := l.reserveAsync(t.Context(), acct, page)
	l.waiting(t, got)
	tx, err := pool.Begin(t.Context())
	require.NoError(t, err)
	require.NoError(t, l.Settle(t.Context(), tx, a, 45*4))
	require.NoError(t, tx.Rollback(t.Context()))
	l.Finish(a)
	b := <-got
	require.NoError(t, b.err)
	require.Equal(t, 72, b.r.Lines, "(7,777 - 4,500) / 45: the reservation stands")
	require.Equal(t, int64(4500+72*45), l.runUnits(t, runID))
}

// TestReserveNeverWaitsForAnotherProcess: another process's reservation
// (here a second Ledger's, left unsettled as a crash leaves it) counts as
// spent under a shared daily cap: a Ledger waits for its own reservations
// in flight, never for those.
func TestReserveNeverWaitsForAnotherProcess(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	now := func() time.Time { return ledgerNow }
	other, l := budget.New(pool, now), newWaiter(t, budget.New(pool, now))
	links := endpoint(t, "links")
	caps := budget.Caps{Daily: 10_000}
	page := budget.Ask{Endpoint: links, Target: "a", Lines: 100, Shrink: true}
	account := func(led *budget.Ledger) budget.Account {
		runID, err := led.StartRun(t.Context(), "j", "manual")
		require.NoError(t, err)
		return budget.Account{RunID: runID, Job: "j", Caps: caps}
	}
	_, err := other.Reserve(t.Context(), account(other), page) // never settled nor finished
	require.NoError(t, err)

	acct := account(l.Ledger)
	a, err := l.Reserve(t.Context(), acct, page)
	require.NoError(t, err)
	got := l.reserveAsync(t.Context(), acct, page)
	l.waiting(t, got) // for a, its own
	l.settle(t, a, 100)
	b := <-got
	require.NoError(t, b.err)
	require.Equal(t, 22, b.r.Lines, "(10,000 - 9,000) / 45, at once: the other process's page counts as spent")
	l.settle(t, b.r, 22)

	_, err = l.Reserve(t.Context(), acct, page)
	var ex *budget.ExhaustedError
	require.ErrorAs(t, err, &ex)
	require.Equal(t, [4]any{"daily", int64(10_000), int64(9990), int64(45)}, [4]any{ex.Cap, ex.Limit, ex.Used, ex.Need})
	require.Equal(t, int32(1), l.waits.Load(), "waited once, for its own page only")
}

// TestWorkersStopAtTheCapNotBefore: 8 workers reserve pages of 37 lines of
// links that settle at one line, and, as the runner does, all stop at the
// first ExhaustedError. It comes only when what has settled leaves no room
// for one line, so together they spend the cap, not the cap less what was
// in flight.
func TestWorkersStopAtTheCapNotBefore(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	l := budget.New(pool, func() time.Time { return ledgerNow })
	links := endpoint(t, "links")
	runID, err := l.StartRun(t.Context(), "j", "manual")
	require.NoError(t, err)
	const cap = 45*150 + 30
	acct := budget.Account{RunID: runID, Job: "j", Caps: budget.Caps{PerRun: cap}}

	var stop atomic.Bool
	var mu sync.Mutex
	var firstStop error
	var g errgroup.Group
	for w := range 8 {
		g.Go(func() error {
			for !stop.Load() {
				r, err := l.Reserve(t.Context(), acct, budget.Ask{Endpoint: links, Target: fmt.Sprintf("w%d", w), Lines: 37, Shrink: true})
				if errors.Is(err, budget.ErrExhausted) {
					mu.Lock()
					if !stop.Swap(true) {
						firstStop = err
					}
					mu.Unlock()
					return nil
				}
				if err != nil {
					return err
				}
				err = l.Settle(t.Context(), nil, r, 45)
				l.Finish(r)
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	require.Error(t, firstStop)
	spent, err := l.RunUnits(t.Context(), runID)
	require.NoError(t, err)
	require.Equal(t, int64(45*150), spent, "every line the cap affords, and not one more")
}
