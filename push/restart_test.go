package push_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/apitest"
	"github.com/seoetl/etl/push"
)

// TestPushRestartedAtOnce: a push interrupted after three bulk requests,
// then a new push by a new client (as a new process would make, its
// pacers empty) started at the same instant: the new push counts the
// three requests the first sent (listing_push_requests), so the sandbox
// answers no 429, and its dry run, made without a client as etl listings
// push --dry-run does, predicts the requests it sends and when the last
// of them goes.
func TestPushRestartedAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n400")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	ctx := t.Context()
	_, err := f.pool.Exec(ctx, `UPDATE desired SET location_name = 'Restarted ' || id`)
	require.NoError(t, err)
	start := f.wall.Now()

	// The first push stops after its third request.
	first, cancel := context.WithCancel(ctx)
	defer cancel()
	var starts int
	sum, err := push.Run(first, push.Config{Pool: f.pool, Client: f.client, Account: f.account, Relation: "desired", Now: f.wall.Now,
		Progress: func(p push.Progress) {
			if p.Requests == 0 {
				starts++
			}
			if p.Requests == 3 {
				cancel()
			}
		}}, push.Options{})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, starts, "progress is told once before the first request")
	require.Equal(t, 3, sum.BulkRequests)
	require.Positive(t, sum.NotSent)
	log := f.sentLog()
	require.Len(t, log, 3)
	for _, s := range log {
		require.Equal(t, "bulk", s.kind)
		require.Equal(t, start, s.at, "three bulk requests at once")
	}
	var recorded int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM listing_push_requests
		WHERE push_id = $1 AND kind = 'bulk' AND sent_at = $2 AND attempts = 1 AND answered_at = $2`, sum.PushID, start).Scan(&recorded))
	require.Equal(t, 3, recorded, "each request recorded with when it left")

	// A dry run as etl listings push --dry-run makes it, without a
	// client, then the push of a new client, at the same instant.
	dry, err := push.Run(ctx, push.Config{Pool: f.pool, Account: f.account, Relation: "desired", Now: f.wall.Now}, push.Options{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, start, dry.PlanStart)
	require.Equal(t, sum.NotSent, dry.ToSend)
	require.LessOrEqual(t, len(dry.Plan.Bulk), 2, "two bulk requests left in the minute, unless waiting for the window is sooner")
	t.Logf("dry run: %s", dry.PlanText)

	client := f.newClient(t, extract.Config{})
	again, err := push.Run(ctx, push.Config{Pool: f.pool, Client: client, Account: f.account, Relation: "desired", Now: f.wall.Now}, push.Options{})
	require.NoError(t, err)
	require.Zero(t, f.tooMany.Load(), "the sandbox answered 429")
	require.Zero(t, again.TooMany)
	log = f.sentLog()[3:]
	require.Equal(t, dry.PlannedRequests, len(log))
	require.Equal(t, dry.PlannedRequests, again.BulkRequests+again.SingleRequests)
	require.Equal(t, len(dry.Plan.Bulk), again.BulkRequests)
	require.Equal(t, dry.PlannedLast, log[len(log)-1].at, "the last request went when the dry run said")
	require.Equal(t, again.PlannedLast, log[len(log)-1].at)
	require.Equal(t, sum.NotSent, again.Updated+again.Failed)
	require.Zero(t, again.NotSent+again.InDoubt)
}

// newClient is a client of the account on the fixture's sandbox and
// virtual clock, as another process would make (its pacers empty); cfg's
// MaxAttempts and Backoff are kept (default 100ms, virtual).
func (f *fixture) newClient(t *testing.T, cfg extract.Config) *extract.Client {
	t.Helper()
	cfg.BaseURL, cfg.Clock, cfg.Authorize = f.url, f.wall, apitest.Bearer(f.token)
	if cfg.Backoff == 0 {
		cfg.Backoff = 100 * time.Millisecond
	}
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	client, err := extract.New(cfg)
	require.NoError(t, err)
	return client
}
