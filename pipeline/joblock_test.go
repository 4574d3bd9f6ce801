package pipeline_test

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
)

const lockSpec = `jobs:
  - name: locked
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}}
`

func lockJob(t *testing.T) *jobspec.Job {
	t.Helper()
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(lockSpec), runNow)
	require.NoError(t, err)
	return spec.Jobs[0]
}

// TestAnAnalystCannotBlockAJob: a role granted etl_analyst tries every way
// it has to hold a job's lock, and runs and backfills of the job still
// start. Until migration 0009 the lock was an advisory lock on a key
// derived from the job's name, which any role may take: the analyst's
// held it, and every run was refused as "already running".
func TestAnAnalystCannotBlockAJob(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	job := lockJob(t)
	f := newFixture(t)
	analyst, err := pgx.Connect(ctx, pgtest.NewRole(t, f.DBURL, "etl_analyst"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = analyst.Close(context.Background()) })

	// The advisory keys of the old lock: anyone may take them, and they
	// no longer lock anything.
	for _, class := range []string{"run", "backfill"} {
		h := fnv.New64a()
		h.Write([]byte("etl:job:" + class + ":" + job.Name))
		var ok bool
		require.NoError(t, analyst.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(h.Sum64())).Scan(&ok))
		require.True(t, ok, class)
	}
	r := f.Runner(t, runNow, pipeline.Config{})
	_, err = r.Run(ctx, job)
	require.NoError(t, err, "a run starts while the analyst holds the old advisory key")

	// Taking or locking the lock's rows needs UPDATE (or INSERT, DELETE,
	// TRUNCATE), which the analyst lacks.
	for _, q := range []string{
		"SELECT * FROM job_locks FOR UPDATE",
		"SELECT * FROM job_locks FOR NO KEY UPDATE",
		"SELECT * FROM job_locks FOR SHARE",
		"SELECT * FROM job_locks FOR KEY SHARE",
		"LOCK TABLE job_locks IN ROW SHARE MODE",
		"LOCK TABLE job_locks IN ROW EXCLUSIVE MODE",
		"LOCK TABLE job_locks IN SHARE UPDATE EXCLUSIVE MODE",
		"LOCK TABLE job_locks IN SHARE MODE",
		"LOCK TABLE job_locks IN SHARE ROW EXCLUSIVE MODE",
		"LOCK TABLE job_locks IN EXCLUSIVE MODE",
		"LOCK TABLE job_locks IN ACCESS EXCLUSIVE MODE",
		"INSERT INTO job_locks (job, class, holder, backend_pid, backend_role, backend_start) SELECT 'locked', 'backfill', 'me', pid, usesysid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()",
		"UPDATE job_locks SET holder = 'me', backend_pid = pg_backend_pid()",
		"DELETE FROM job_locks",
		"TRUNCATE job_locks",
	} {
		err := pgx.BeginFunc(ctx, analyst, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, q)
			return err
		})
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%s: %v", q, err)
		require.Equal(t, "42501", pgErr.Code, "%s: want permission denied, got %v", q, err)
	}

	// What it may do: read the table, in a transaction held open, with
	// the ACCESS SHARE lock any read takes. That blocks no run either.
	tx, err := analyst.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(ctx, "LOCK TABLE job_locks IN ACCESS SHARE MODE")
	require.NoError(t, err)
	var free int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM job_locks WHERE job = $1 AND backend_pid IS NULL`, job.Name).Scan(&free))
	require.Equal(t, 1, free, "the analyst reads the run's lock, released")

	_, err = r.Run(ctx, job)
	require.NoError(t, err)
	_, err = r.RunWith(ctx, job, pipeline.RunOptions{Trigger: "backfill"})
	require.NoError(t, err, "a backfill starts too")
	require.Equal(t, int64(3), f.Count(t, `SELECT count(*) FROM runs WHERE status = 'succeeded'`))
}

// onRunStarted calls fn when a run starts, on the runner's goroutine.
type onRunStarted struct {
	pipeline.Observers
	fn func()
}

func (o *onRunStarted) RunStarted(*pipeline.Summary, []jobspec.Task) { o.fn() }

// TestRacingRunnersOneTakesTheJobLock: runners of one job, each with a
// pool of its own (as processes have), try to take its lock at the same
// moment: the test holds the lock's row until every one of them is
// queued behind it. Exactly one runs, and the others are refused with
// ErrJobBusy. The one that runs holds the lock until every other has been
// refused; while it runs, job_locks names its live backend, and after it,
// no one.
func TestRacingRunnersOneTakesTheJobLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	job := lockJob(t)
	f := newFixture(t)
	const n = 4
	// Every runner either starts its run or is refused; the ones that
	// started wait until all have, so that none can finish before
	// another tries. Were the lock taken twice, both would start, and
	// the test would say so rather than hang.
	release := make(chan struct{})
	var settled, returned atomic.Int32
	settle := func() {
		if settled.Add(1) == n {
			close(release)
		}
	}
	var mu sync.Mutex
	var holders []int64
	var holderErr error
	obs := &onRunStarted{fn: func() {
		var live int64
		err := f.Pool.QueryRow(context.Background(), `SELECT count(*) FROM job_locks l
			JOIN pg_stat_activity a ON a.pid = l.backend_pid AND a.usesysid = l.backend_role AND a.backend_start = l.backend_start
			WHERE l.job = $1 AND l.class = 'run'`, job.Name).Scan(&live)
		mu.Lock()
		holders, holderErr = append(holders, live), errors.Join(holderErr, err)
		mu.Unlock()
		settle()
		<-release
	}}
	runners := make([]*pipeline.Runner, n)
	for i := range runners {
		client, err := extract.New(extract.Config{BaseURL: f.URL, APIKey: "test-key"})
		require.NoError(t, err)
		runners[i], err = pipeline.NewRunner(pipeline.Config{Client: client, Pool: f.NewPool(t), Allocator: f.Mem,
			Now: func() time.Time { return runNow }, Observer: obs})
		require.NoError(t, err)
	}

	// The gate: the lock's row, locked by the test.
	_, err := f.Pool.Exec(ctx, `INSERT INTO job_locks (job, class) VALUES ($1, 'run')`, job.Name)
	require.NoError(t, err)
	gate, err := f.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = gate.Rollback(context.Background()) }()
	_, err = gate.Exec(ctx, `SELECT FROM job_locks WHERE job = $1 AND class = 'run' FOR UPDATE`, job.Name)
	require.NoError(t, err)

	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.Run(context.Background(), job)
			returned.Add(1)
			if errs[i] != nil {
				settle()
			}
		}()
	}
	// Open the gate once every runner waits at it (or, were one not to
	// wait, has returned).
	for {
		var waiting int32
		require.NoError(t, f.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting))
		if waiting+returned.Load() >= n {
			break
		}
	}
	require.NoError(t, gate.Commit(ctx))
	wg.Wait()

	ran := 0
	for _, err := range errs {
		if err == nil {
			ran++
			continue
		}
		require.ErrorIs(t, err, runs.ErrJobBusy)
		require.Contains(t, err.Error(), "the job is already running: job locked")
	}
	require.Equal(t, 1, ran, "exactly one runner runs the job: %v", errs)
	require.NoError(t, holderErr)
	require.Equal(t, []int64{1}, holders, "while it ran, job_locks named its live backend")
	require.Equal(t, int64(1), f.Count(t, `SELECT count(*) FROM job_locks WHERE job = $1 AND class = 'run' AND backend_pid IS NULL AND holder IS NULL`, job.Name),
		"released after the run")
	require.Equal(t, int64(1), f.Count(t, `SELECT count(*) FROM runs`))
}

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
