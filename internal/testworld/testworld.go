// Package testworld is the world the tests of the runner and the planner
// run in: a sandbox of the API served over HTTP, a warehouse database of
// its own with a pool on it, a clock, and the checked allocator of its
// runs; with the runs and plans those tests make in it. Tests only.
package testworld

import (
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
	"github.com/seoetl/etl/sandbox"
)

// Now is the pinned clock of the sandbox and of the runs of a world
// made without one.
var Now = time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)

// World is the world of a test.
type World struct {
	Pool    *pgxpool.Pool
	Sandbox *sandbox.Server
	URL     string
	Mem     *memory.CheckedAllocator
	DBURL   string
}

// Options are what a world has of its own; the zero Options are a
// sandbox on Now, served as it is.
type Options struct {
	// Now is the sandbox's clock (nil: Now).
	Now func() time.Time
	// MW, when set, stands in front of the sandbox.
	MW func(http.Handler) http.Handler
	// Sandbox is the rest of the sandbox's configuration: its seed, clock
	// and key are the world's.
	Sandbox sandbox.Config
}

// New starts the world o: its sandbox served (behind o.MW), a fresh
// warehouse database and a pool on it, and an allocator that must be
// empty when the test ends.
func New(t *testing.T, o Options) *World {
	t.Helper()
	sb := NewSandbox(t, o.Now, o.Sandbox)
	var h http.Handler = sb.Handler()
	if o.MW != nil {
		h = o.MW(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	w := &World{Sandbox: sb, URL: srv.URL, Mem: mem, DBURL: pgtest.NewDB(t)}
	w.Pool = w.NewPool(t)
	return w
}

// NewSandbox makes the sandbox of a world: cfg with the seed 7, the clock
// now (nil: Now) and the key test-key.
func NewSandbox(t *testing.T, now func() time.Time, cfg sandbox.Config) *sandbox.Server {
	t.Helper()
	if now == nil {
		now = func() time.Time { return Now }
	}
	cfg.Seed, cfg.Now, cfg.APIKeys = 7, now, []string{"test-key"}
	sb, err := sandbox.New(cfg)
	require.NoError(t, err)
	return sb
}

// NewPool connects to the world's database with a pool of its own.
func (w *World) NewPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(w.DBURL)
	require.NoError(t, err)
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// Clock is a movable clock shared by a sandbox and the runs.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock is a clock at at.
func NewClock(at time.Time) *Clock { return &Clock{t: at} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Runner returns a runner of the world's sandbox and database with a
// pinned clock.
func (w *World) Runner(t *testing.T, now time.Time, cfg pipeline.Config) *pipeline.Runner {
	t.Helper()
	return w.RunnerOn(t, func() time.Time { return now }, cfg)
}

// RunnerOn returns a runner of the world's sandbox and database on the
// clock now.
func (w *World) RunnerOn(t *testing.T, now func() time.Time, cfg pipeline.Config) *pipeline.Runner {
	t.Helper()
	client, err := extract.New(extract.Config{BaseURL: w.URL, APIKey: "test-key"})
	require.NoError(t, err)
	cfg.Client, cfg.Pool, cfg.Allocator, cfg.Now = client, w.Pool, w.Mem, now
	r, err := pipeline.NewRunner(cfg)
	require.NoError(t, err)
	return r
}

// Run runs the first job of spec at now, by a runner that loads pages of
// 5 rows; it must not fail.
func (w *World) Run(t *testing.T, spec string, now time.Time) *pipeline.Summary {
	t.Helper()
	sum, err := w.TryRun(t, spec, now)
	require.NoError(t, err)
	return sum
}

// TryRun is Run, which may fail.
func (w *World) TryRun(t *testing.T, spec string, now time.Time) (*pipeline.Summary, error) {
	t.Helper()
	return w.TryRunWith(t, spec, now, 0)
}

// TryRunWith is TryRun at concurrency (0: the default).
func (w *World) TryRunWith(t *testing.T, spec string, now time.Time, concurrency int) (*pipeline.Summary, error) {
	t.Helper()
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), now)
	require.NoError(t, err)
	return w.Runner(t, now, pipeline.Config{BatchRows: 5, Concurrency: concurrency}).Run(t.Context(), s.Jobs[0])
}

// RunAt runs the job of spec at the clock's time, with o.
func (w *World) RunAt(t *testing.T, spec string, c *Clock, o pipeline.RunOptions) *pipeline.Summary {
	t.Helper()
	sum, err := w.TryRunAt(t, spec, c, pipeline.Config{}, o)
	require.NoError(t, err)
	return sum
}

// TryRunAt runs the job of spec at the clock's time, with o, by a runner
// of cfg that loads pages of 5 rows.
func (w *World) TryRunAt(t *testing.T, spec string, c *Clock, cfg pipeline.Config, o pipeline.RunOptions) (*pipeline.Summary, error) {
	t.Helper()
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), c.Now())
	require.NoError(t, err)
	cfg.BatchRows = 5
	return w.RunnerOn(t, c.Now, cfg).RunWith(t.Context(), s.Jobs[0], o)
}

// Plan prices the first job of spec at now, probing first when probe is
// set.
func (w *World) Plan(t *testing.T, spec string, now time.Time, probe bool) *planning.Plan {
	t.Helper()
	return w.PlanOn(t, spec, func() time.Time { return now }, probe)
}

// PlanOn prices the first job of spec on the clock now, probing first
// when probe is set.
func (w *World) PlanOn(t *testing.T, spec string, now func() time.Time, probe bool) *planning.Plan {
	t.Helper()
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), now())
	require.NoError(t, err)
	client, err := extract.New(extract.Config{BaseURL: w.URL, APIKey: "test-key"})
	require.NoError(t, err)
	p, err := planning.NewPlanner(planning.PlanConfig{Pool: w.Pool, Client: client, Allocator: w.Mem, Now: now})
	require.NoError(t, err)
	plan, err := p.Plan(t.Context(), s.Jobs[0], planning.PlanOptions{Probe: probe})
	require.NoError(t, err)
	return plan
}

// PlanAt plans the job of spec at the clock's time, with o, from the
// warehouse alone.
func (w *World) PlanAt(t *testing.T, spec string, c *Clock, o planning.PlanOptions) *planning.Plan {
	t.Helper()
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(spec), c.Now())
	require.NoError(t, err)
	p, err := planning.NewPlanner(planning.PlanConfig{Pool: w.Pool, Now: c.Now})
	require.NoError(t, err)
	plan, err := p.Plan(t.Context(), s.Jobs[0], o)
	require.NoError(t, err)
	return plan
}

// Spent is what the sandbox has charged so far.
func (w *World) Spent() int64 { return w.Sandbox.Usage("test-key").UnitsSpent }

// Count is the one number query returns.
func (w *World) Count(t *testing.T, query string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, w.Pool.QueryRow(t.Context(), query, args...).Scan(&n))
	return n
}

// NewClocked starts a world whose sandbox is on a clock at at, which the
// test moves.
func NewClocked(t *testing.T, at time.Time) (*World, *Clock) {
	t.Helper()
	c := NewClock(at)
	return New(t, Options{Now: c.Now}), c
}

// ExampleSpec is the repo's jobs.yaml (its job example; read from the
// test's package folder as ../jobs.yaml), without its listings (no
// accounts in a world: pipeline's listings tests pull them), and without
// lines when drop is set.
func ExampleSpec(t *testing.T, drop ...string) string {
	t.Helper()
	data, err := os.ReadFile("../jobs.yaml")
	require.NoError(t, err)
	text, _, ok := strings.Cut(string(data), "    listings:")
	require.True(t, ok, "the example job pulls listings")
	var keep []string
	for _, line := range strings.Split(text, "\n") {
		skip := false
		for _, d := range drop {
			skip = skip || strings.Contains(line, d)
		}
		if !skip {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// RequireRunMatchesPlan checks each task of the run against the plan:
// the same tasks in the same order, and each one's units and requests as
// expected. Tasks of the endpoints in worstOnly are priced at their worst
// case (no total known): the run may spend less.
func RequireRunMatchesPlan(t *testing.T, plan *planning.Plan, sum *pipeline.Summary, worstOnly ...string) {
	t.Helper()
	require.Len(t, sum.Tasks, len(plan.Tasks))
	for i, tp := range plan.Tasks {
		res := sum.Tasks[i]
		require.Equal(t, tp.Name, res.Task.String())
		require.NotNil(t, tp.Expected, "%s: %s", tp.Name, tp.Basis)
		require.NoError(t, res.Err)
		require.Empty(t, res.Skipped)
		if tp.Source == planning.SourceUnknown && slices.Contains(worstOnly, tp.Endpoint) {
			require.LessOrEqual(t, res.Units, *tp.Expected, tp.Name)
			continue
		}
		require.Equal(t, *tp.Expected, res.Units, "%s: %s", tp.Name, tp.Basis)
		require.Equal(t, *tp.Requests, int64(res.Pages), "%s: requests", tp.Name)
		require.Equal(t, *tp.Rows, res.Rows, "%s: rows", tp.Name)
	}
}
