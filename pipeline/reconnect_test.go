package pipeline_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/internal/testworld"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

// pageKiller ends the server process of a page's connection while the page
// loads, from a connection of its own, and waits until it is gone: a
// connection lost after the API answered (and charged for) the page.
type pageKiller struct {
	t     *testing.T
	dbURL string
	// copyAt > 0 kills the connection that starts the copyAt-th COPY;
	// commitAt > 0 the one that is about to commit the commitAt-th page.
	copyAt, commitAt int32
	// then, when set, runs after the kill (on the killing goroutine).
	then func()

	copies, commits, killed atomic.Int32
	paging                  sync.Map // pid -> struct{}: a page's transaction is open on it
}

func (k *pageKiller) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	pid := conn.PgConn().PID()
	if !strings.EqualFold(data.SQL, "commit") {
		return ctx
	}
	if _, ok := k.paging.LoadAndDelete(pid); ok && k.commits.Add(1) == k.commitAt {
		k.kill(ctx, pid)
	}
	return ctx
}

func (k *pageKiller) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (k *pageKiller) TraceCopyFromStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	pid := conn.PgConn().PID()
	k.paging.Store(pid, struct{}{})
	if k.copies.Add(1) == k.copyAt {
		k.kill(ctx, pid)
	}
	return ctx
}

func (k *pageKiller) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

func (k *pageKiller) kill(ctx context.Context, pid uint32) {
	ctx = context.WithoutCancel(ctx)
	conn, err := pgx.Connect(ctx, k.dbURL)
	if err != nil {
		k.t.Errorf("connecting to end the page's connection: %v", err)
		return
	}
	defer conn.Close(ctx)
	var ended bool
	if err := conn.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&ended); err != nil || !ended {
		k.t.Errorf("ending backend %d: %v (ended: %v)", pid, err, ended)
		return
	}
	for gone := false; !gone; {
		if err := conn.QueryRow(ctx, `SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1)`, int32(pid)).Scan(&gone); err != nil {
			k.t.Errorf("waiting for backend %d to end: %v", pid, err)
			return
		}
	}
	k.killed.Add(1)
	if k.then != nil {
		k.then()
	}
}

// tracedPool is a pool on dbURL whose connections k watches.
func tracedPool(t *testing.T, dbURL string, maxConns int32, k *pageKiller) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	cfg.MaxConns = maxConns
	cfg.ConnConfig.Tracer = k
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// n120Spec reads the 120 links of n120.example in pages of 20: 7 requests
// (the 7th answers none).
const n120Spec = `jobs:
  - name: lost
    targets: [{url: n120.example, scope: ROOT_DOMAIN}]
    endpoints: {links: {limit: 20}}
`

// requirePaidIsLoaded checks that what the sandbox answered and charged is
// what the ledger settled and what the table holds: every request booked,
// none unsettled, 45 units a link.
func requirePaidIsLoaded(t *testing.T, f *fixture, pool *pgxpool.Pool, links int64) {
	t.Helper()
	var requests, unsettled, spent, rows int64
	require.NoError(t, pool.QueryRow(t.Context(), `
		SELECT count(*), count(*) FILTER (WHERE spent IS NULL), coalesce(sum(spent), 0), (SELECT count(*) FROM backlinks)
		FROM unit_ledger`).Scan(&requests, &unsettled, &spent, &rows))
	u := f.Sandbox.Usage("test-key")
	require.Zero(t, unsettled, "ledger rows left unsettled")
	require.Equal(t, u.Requests, requests, "requests answered against the ledger's rows")
	require.Equal(t, u.UnitsSpent, spent, "units charged against the ledger's")
	require.Equal(t, links, rows)
	require.Equal(t, u.UnitsSpent, 45*rows, "units charged against the rows loaded")
}

// A page whose connection is lost once the API answered it is loaded again
// on another connection, from the answer kept: not asked (and paid for)
// again, not thrown away. Lost in the middle of its COPY, or just before
// its commit.
func TestAPageWhoseConnectionIsLostLoadsAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		copyAt, commitAt int32
	}{
		{"mid-copy", 3, 0},
		{"at commit", 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			k := &pageKiller{t: t, dbURL: f.DBURL, copyAt: tc.copyAt, commitAt: tc.commitAt}
			f.Pool = tracedPool(t, f.DBURL, 4, k)
			sum := f.Run(t, n120Spec, runNow)
			require.Equal(t, int32(1), k.killed.Load())
			require.Equal(t, "succeeded", sum.Status())
			require.Equal(t, int64(120), sum.Tasks[0].Rows)
			require.Equal(t, int64(7), f.Sandbox.Usage("test-key").Requests, "a page was asked again")
			requirePaidIsLoaded(t, f, f.Pool, 120)
		})
	}
}

// logHook calls on for each log record whose message starts with prefix.
type logHook struct {
	slog.Handler
	prefix string
	on     func()
}

func (h logHook) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, h.prefix) {
		h.on()
	}
	return h.Handler.Handle(ctx, r)
}

func (h logHook) WithAttrs(as []slog.Attr) slog.Handler {
	return logHook{h.Handler.WithAttrs(as), h.prefix, h.on}
}

func (h logHook) WithGroup(name string) slog.Handler {
	return logHook{h.Handler.WithGroup(name), h.prefix, h.on}
}

// When the page's connection is lost and the server has no connection to
// give (another client took every slot), the paid page waits for one and
// loads: here the other client lets go once the page has asked for a
// connection and been refused.
func TestAPaidPageWaitsForAConnectionTheServerCannotGive(t *testing.T) {
	t.Parallel()
	dbURL, superURL := pgtest.NewServer(t, map[string]string{"max_connections": "12", "superuser_reserved_connections": "3"})
	f := newFixture(t)
	f.DBURL = dbURL
	var mu sync.Mutex
	var hogged []*pgx.Conn
	letGo := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range hogged {
			_ = c.Close(context.Background())
		}
		hogged = nil
	}
	t.Cleanup(letGo)
	k := &pageKiller{t: t, dbURL: superURL, copyAt: 2}
	k.then = func() {
		// Every other connection of the run's pool goes too, and another
		// client takes every slot of the server (superusers' too: the two
		// this takes them with leave two, fewer than the role may use).
		// (Not the job's lock, held by a connection of its own.)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, superURL)
		if err != nil {
			t.Errorf("connecting as the superuser: %v", err)
			return
		}
		defer conn.Close(ctx)
		const others = `FROM pg_stat_activity WHERE usename = 'etl_run' AND backend_type = 'client backend'
			AND pid NOT IN (SELECT backend_pid FROM job_locks WHERE backend_pid IS NOT NULL)`
		if _, err = conn.Exec(ctx, `SELECT pg_terminate_backend(pid) `+others); err != nil {
			t.Errorf("ending the pool's connections: %v", err)
			return
		}
		for left := 1; left > 0; {
			if err := conn.QueryRow(ctx, `SELECT count(*) `+others).Scan(&left); err != nil {
				t.Errorf("waiting for the pool's connections to end: %v", err)
				return
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for {
			c, err := pgx.Connect(ctx, superURL)
			if err != nil {
				if !strings.Contains(err.Error(), "SQLSTATE 53300") {
					t.Errorf("taking every connection: %v", err)
				}
				return
			}
			hogged = append(hogged, c)
		}
	}
	pool := tracedPool(t, dbURL, 3, k)
	f.Pool = pool
	var refused atomic.Int32
	log := slog.New(logHook{Handler: slog.NewTextHandler(testWriter{t}, nil), prefix: "the database gives no connection",
		on: func() {
			if refused.Add(1) == 1 {
				letGo()
			}
		}})
	r := f.Runner(t, runNow, pipeline.Config{Concurrency: 1, Logger: log, Reconnect: time.Minute})
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(n120Spec), runNow)
	require.NoError(t, err)
	sum, err := r.Run(t.Context(), s.Jobs[0])
	require.NoError(t, err)
	require.Equal(t, int32(1), k.killed.Load())
	require.Positive(t, refused.Load(), "the server never refused a connection")
	require.Equal(t, "succeeded", sum.Status())
	require.Equal(t, int64(7), f.Sandbox.Usage("test-key").Requests, "a page was asked again")
	requirePaidIsLoaded(t, f, pool, 120)
}

// testWriter writes log lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

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
