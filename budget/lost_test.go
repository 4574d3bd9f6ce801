package budget_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/internal/pgtest"
)

// TestLostRowIsFoundByClaimAndBookedAgain plays what a failover that lost
// commits leaves: the database has no row of a reservation, and another
// request's row has its ledger_id (the new primary's identity sequence
// handed it out again). Settling the reservation touches not that row,
// says it is lost (budget.ErrLost), and once Rebook has booked it again
// (with a new ledger_id, its claim, its units in the counters again), it
// settles.
func TestLostRowIsFoundByClaimAndBookedAgain(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	l := budget.New(pool, func() time.Time { return ledgerNow })
	runID, err := l.StartRun(ctx, "j", "manual")
	require.NoError(t, err)
	acct := budget.Account{RunID: runID, Job: "j", Caps: budget.Caps{PerRun: 10_000}}
	links := endpoint(t, "links")
	r, err := l.Reserve(ctx, acct, budget.Ask{Endpoint: links, Target: "a", Lines: 10})
	require.NoError(t, err)
	require.NotEqual(t, budget.Claim{}, r.Claim)
	used := func() int64 {
		var n int64
		require.NoError(t, pool.QueryRow(ctx, `SELECT used FROM budget_usage WHERE key = $1`, "run:"+itoa(runID)).Scan(&n))
		return n
	}
	require.Equal(t, int64(450), used())

	// The commit that booked r is lost; another request's row takes its id.
	_, err = pool.Exec(ctx, `DELETE FROM unit_ledger WHERE ledger_id = $1`, r.ID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE budget_usage SET used = used - 450`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO unit_ledger (ledger_id, run_id, job, endpoint, target, reserved, reserved_at)
		OVERRIDING SYSTEM VALUE VALUES ($1, $2, 'other', 'links', 'b', 90, $3)`, r.ID, runID, ledgerNow)
	require.NoError(t, err)

	states, err := l.States(ctx, pool, []budget.Claim{r.Claim})
	require.NoError(t, err)
	require.Equal(t, budget.RowLost, states[r.Claim])
	settled, err := l.Settled(ctx, pool, r)
	require.NoError(t, err)
	require.False(t, settled)
	err = l.Settle(ctx, nil, r, 90)
	require.ErrorIs(t, err, budget.ErrLost)
	var other *int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT spent FROM unit_ledger WHERE ledger_id = $1`, r.ID).Scan(&other))
	require.Nil(t, other, "another request's row was settled")

	var again budget.Reservation
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var booked bool
		again, booked, err = l.Rebook(ctx, tx, r)
		require.True(t, booked)
		return err
	}))
	require.NotEqual(t, r.ID, again.ID)
	require.Equal(t, r.Claim, again.Claim)
	require.Equal(t, int64(450), used(), "the units are counted again")
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, booked, err := l.Rebook(ctx, tx, r)
		require.False(t, booked, "a row that is there is not booked twice")
		return err
	}))
	require.NoError(t, l.Settle(ctx, nil, r, 90))
	require.Equal(t, int64(90), used())
	states, err = l.States(ctx, pool, []budget.Claim{r.Claim})
	require.NoError(t, err)
	require.Equal(t, budget.RowSettled, states[r.Claim])
	l.Finish(r)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
