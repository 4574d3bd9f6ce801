package pipeline_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

// fixture is the world of a test: a sandbox of the API served over HTTP,
// a warehouse database of its own with a pool on it, and the checked
// allocator of its runs.
type fixture struct {
	pool    *pgxpool.Pool
	sandbox *sandbox.Server
	url     string
	mem     *memory.CheckedAllocator
	dbURL   string
}

// world is what a test's world has of its own; the zero world is a
// sandbox on runNow, served as it is.
type world struct {
	// now is the sandbox's clock (nil: runNow).
	now func() time.Time
	// mw, when set, stands in front of the sandbox.
	mw func(http.Handler) http.Handler
	// sandbox is the rest of the sandbox's configuration: its seed, clock
	// and key are the world's.
	sandbox sandbox.Config
}

// newWorld starts the world w: its sandbox served (behind w.mw), a fresh
// warehouse database and a pool on it, and an allocator that must be
// empty when the test ends.
func newWorld(t *testing.T, w world) *fixture {
	t.Helper()
	sb := newSandbox(t, w.now, w.sandbox)
	var h http.Handler = sb.Handler()
	if w.mw != nil {
		h = w.mw(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	f := &fixture{sandbox: sb, url: srv.URL, mem: mem, dbURL: pgtest.NewDB(t)}
	f.pool = f.newPool(t)
	return f
}

// newSandbox makes the sandbox of a world: cfg with the seed 7, the clock
// now (nil: runNow) and the key test-key.
func newSandbox(t *testing.T, now func() time.Time, cfg sandbox.Config) *sandbox.Server {
	t.Helper()
	if now == nil {
		now = func() time.Time { return runNow }
	}
	cfg.Seed, cfg.Now, cfg.APIKeys = 7, now, []string{"test-key"}
	sb, err := sandbox.New(cfg)
	require.NoError(t, err)
	return sb
}

// newFixture starts the zero world.
func newFixture(t *testing.T) *fixture { return newWorld(t, world{}) }

// newFixtureWith serves the sandbox behind an optional middleware.
func newFixtureWith(t *testing.T, mw func(http.Handler) http.Handler) *fixture {
	t.Helper()
	return newWorld(t, world{mw: mw})
}

// newPool connects to the fixture's database with a pool of its own.
func (f *fixture) newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(f.dbURL)
	require.NoError(t, err)
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// clock is a movable clock shared by a sandbox and the runs.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// newClockFixture serves a sandbox on a clock that the test moves.
func newClockFixture(t *testing.T, at time.Time) (*fixture, *clock) {
	t.Helper()
	c := &clock{t: at}
	return newWorld(t, world{now: c.now}), c
}

// newClockFixtureMW is newClockFixture with a middleware in front of the
// sandbox, which may move the clock.
func newClockFixtureMW(t *testing.T, at time.Time, mw func(c *clock, next http.Handler) http.Handler) (*fixture, *clock) {
	t.Helper()
	c := &clock{t: at}
	return newWorld(t, world{now: c.now, mw: func(next http.Handler) http.Handler { return mw(c, next) }}), c
}

// runner returns a runner of the fixture's sandbox and database with a
// pinned clock.
func (f *fixture) runner(t *testing.T, now time.Time, cfg pipeline.Config) *pipeline.Runner {
	t.Helper()
	return f.runnerOn(t, func() time.Time { return now }, cfg)
}

// runnerOn returns a runner of the fixture's sandbox and database on the
// clock now.
func (f *fixture) runnerOn(t *testing.T, now func() time.Time, cfg pipeline.Config) *pipeline.Runner {
	t.Helper()
	client, err := extract.New(extract.Config{BaseURL: f.url, APIKey: "test-key"})
	require.NoError(t, err)
	cfg.Client, cfg.Pool, cfg.Allocator, cfg.Now = client, f.pool, f.mem, now
	r, err := pipeline.NewRunner(cfg)
	require.NoError(t, err)
	return r
}
