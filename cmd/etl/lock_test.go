package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/sandbox"
)

// TestALostLockFailsTheRun: the connection holding a run's job lock is
// ended mid-run (pg_terminate_backend), and another etl run of the job
// takes it and finishes the run. The first one stops with exit status 1
// and says why, rather than a partial run (3) that says nothing.
func TestALostLockFailsTheRun(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDB(t)
	sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return cliNow }, APIKeys: []string{"k"}})
	require.NoError(t, err)
	var env map[string]string
	var jobs string
	var requests atomic.Int32
	var second result
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 3 {
			ctx := context.WithoutCancel(r.Context())
			conn, err := pgx.Connect(ctx, dbURL)
			if err == nil {
				_, err = conn.Exec(ctx, `SELECT pg_terminate_backend(backend_pid, 10000) FROM job_locks WHERE backend_pid IS NOT NULL`)
				_ = conn.Close(ctx)
			}
			if err != nil {
				t.Errorf("ending the lock's backend: %v", err)
			}
			second = etl(t, env, "run", "--jobs", jobs, "--concurrency", "1", "--now", cliNow.Format(time.RFC3339))
		}
		sb.Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	env = map[string]string{"DATABASE_URL": dbURL, "ETL_API_URL": srv.URL, "ETL_API_KEY": "k"}
	jobs = writeSpec(t, "jobs:\n  - name: lost\n    targets: [{url: n120.example, scope: ROOT_DOMAIN}]\n    endpoints: {links: {limit: 20}}\n")
	r := etl(t, env, "run", "--jobs", jobs, "--concurrency", "1", "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, second.code, second.stdout+second.stderr)
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "the job's lock was lost: the connection that held it ended, and another process took the job over (resuming this run): this run stopped, asking for nothing more")
}
