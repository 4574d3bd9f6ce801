package pipeline_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
)

// lockKiller, an Observer, ends the backend that holds the job's lock
// (as an administrator's pg_terminate_backend or idle_session_timeout
// does) once `at` pages have committed, then calls then (which runs the
// same job in another process, here another Runner).
type lockKiller struct {
	pipeline.Observers
	t     *testing.T
	dbURL string
	at    int32
	then  func()
	pages atomic.Int32
}

func (k *lockKiller) PageLoaded(int, pipeline.TaskResult) {
	if k.pages.Add(1) != k.at {
		return
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, k.dbURL)
	if err != nil {
		k.t.Errorf("connecting: %v", err)
		return
	}
	defer conn.Close(ctx)
	var ended bool
	if err := conn.QueryRow(ctx, `SELECT pg_terminate_backend(backend_pid, 5000) FROM job_locks WHERE backend_pid IS NOT NULL`).Scan(&ended); err != nil || !ended {
		k.t.Errorf("ending the lock's backend: %v (ended: %v)", err, ended)
		return
	}
	k.then()
}

// TestALostLockStopsTheRun: the connection that holds a run's job lock
// is ended mid-run, and another process runs the same job meanwhile: it
// takes the lock (its holder is gone), resumes the run from its
// checkpoints and finishes it. The first run sends no request after
// that (it finds its lock taken), and writes nothing over what the
// second did: every link is bought once.
func TestALostLockStopsTheRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(n120Spec), runNow)
	require.NoError(t, err)
	var second *pipeline.Summary
	k := &lockKiller{t: t, dbURL: f.DBURL, at: 2, then: func() {
		var err error
		second, err = f.Runner(t, runNow, pipeline.Config{Concurrency: 1}).Run(context.Background(), s.Jobs[0])
		require.NoError(t, err)
	}}
	first, err := f.Runner(t, runNow, pipeline.Config{Concurrency: 1, Observer: k}).Run(t.Context(), s.Jobs[0])
	require.ErrorIs(t, err, runs.ErrLockLost)
	require.ErrorContains(t, err, "took the job over (resuming this run): this run stopped, asking for nothing more")
	require.NotNil(t, second)
	require.Equal(t, first.RunID, second.RunID, "the second took the run up")
	require.Equal(t, "succeeded", second.Status())
	require.Equal(t, "succeeded", f.query(t, `SELECT status FROM runs`), "the first wrote nothing over it")
	require.Equal(t, "done", f.query(t, `SELECT status FROM task_checkpoints`))
	require.Equal(t, int64(7), f.Sandbox.Usage("test-key").Requests, "a page was bought twice")
	requirePaidIsLoaded(t, f, f.Pool, 120)
}

// TestALostLockIsTakenAgain: the connection that holds a run's job lock
// is ended mid-run and no other process takes the job: the run takes its
// lock again on a new connection before its next request and finishes,
// every link bought once; another run of the job meanwhile is refused.
func TestALostLockIsTakenAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s, err := jobspec.ParseSpec("jobs.yaml", []byte(n120Spec), runNow)
	require.NoError(t, err)
	k := &lockKiller{t: t, dbURL: f.DBURL, at: 2, then: func() {}}
	var busy error
	obs := pipeline.Observers{k, observeAt(5, func() {
		_, busy = f.Runner(t, runNow, pipeline.Config{Concurrency: 1}).Run(context.Background(), s.Jobs[0])
	})}
	sum, err := f.Runner(t, runNow, pipeline.Config{Concurrency: 1, Observer: obs}).Run(t.Context(), s.Jobs[0])
	require.NoError(t, err)
	require.Equal(t, "succeeded", sum.Status())
	require.ErrorIs(t, busy, runs.ErrJobBusy, "the lock was taken again")
	require.Equal(t, int64(7), f.Sandbox.Usage("test-key").Requests)
	requirePaidIsLoaded(t, f, f.Pool, 120)
}

// observeAt is an Observer that calls do once n pages have committed.
func observeAt(n int32, do func()) pipeline.Observer {
	return &pageHook{n: n, do: do}
}

type pageHook struct {
	pipeline.Observers
	n     int32
	pages atomic.Int32
	do    func()
}

func (h *pageHook) PageLoaded(int, pipeline.TaskResult) {
	if h.pages.Add(1) == h.n {
		h.do()
	}
}
