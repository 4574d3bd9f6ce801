package pipeline_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/testworld"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

// freeKiller ends the connection that is about to settle a request at 0
// units (an answer of the API's error envelope, which costs nothing) the
// at-th time, before the settle is sent.
type freeKiller struct {
	pageKiller
	at    int32
	frees atomic.Int32
}

func (k *freeKiller) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(strings.TrimSpace(data.SQL), "UPDATE unit_ledger SET spent") && len(data.Args) > 1 {
		if spent, ok := data.Args[1].(int64); ok && spent == 0 && k.frees.Add(1) == k.at {
			k.kill(ctx, conn.PgConn().PID())
		}
	}
	return ctx
}

// TestAFreeAnswerWhoseConnectionIsLostIsSettledAtZero: the API refuses
// the probe of its bound (100,000 lines of links, past its bound of
// 1,000: a 400, which costs nothing; after the run's first page of 100),
// and the connection that settles it at 0 is lost. The settle is done again on another connection: the ledger does
// not keep the request's reservation (4.5 million units, counted as spent
// against every cap) for an answer that cost nothing.
func TestAFreeAnswerWhoseConnectionIsLostIsSettledAtZero(t *testing.T) {
	t.Parallel()
	f := newWorld(t, testworld.Options{Sandbox: sandbox.Config{MaxLimit: 1000}})
	k := &freeKiller{pageKiller: pageKiller{t: t, dbURL: f.DBURL}, at: 1}
	cfg, err := pgxpool.ParseConfig(f.DBURL)
	require.NoError(t, err)
	cfg.MaxConns, cfg.ConnConfig.Tracer = 4, k
	f.Pool, err = pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(f.Pool.Close)
	sum, err := f.runJob(t, linksSpec("n1500.example", ""), pipeline.Config{Concurrency: 1})
	require.NoError(t, err)
	require.Equal(t, int32(1), k.killed.Load())
	require.Equal(t, "succeeded", sum.Status())
	require.Equal(t, int64(1500), sum.Tasks[0].Rows)
	require.Equal(t, int64(1500*45), sum.Tasks[0].Units, "the task's units are what the API charged")
	answered, refused := requests(f.Sandbox)
	require.Equal(t, int64(1), refused)
	require.Equal(t, int64(3), answered, "100, 1,000 and 400 links")
	f.requireLedgerIsTheSandboxs(t, 1500*45)
}
