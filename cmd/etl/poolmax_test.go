package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/sandbox"
)

// TestPoolMaxConnsBoundsTheRun: DATABASE_URL's pool_max_conns is what the
// user lets the run open: a run at --concurrency 8 with pool_max_conns=6
// opens 6 (one page in flight and the spare, partition and lock
// connections: 2 tasks at once), not 12, and loads every line it paid
// for; with pool_max_conns=4, fewer than one page needs, it is refused
// before any request, saying so.
func TestPoolMaxConnsBoundsTheRun(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDB(t)
	sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return cliNow }, APIKeys: []string{"k1", "k2"}})
	require.NoError(t, err)
	var once sync.Once
	opened := -1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			// The run's connections, counted at its first request.
			ctx := context.WithoutCancel(r.Context())
			conn, err := pgx.Connect(ctx, dbURL)
			if err == nil {
				err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&opened)
				_ = conn.Close(ctx)
			}
			if err != nil {
				t.Errorf("counting connections: %v", err)
			}
		})
		sb.Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	env := func(url, key string) map[string]string {
		return map[string]string{"DATABASE_URL": url, "ETL_API_URL": srv.URL, "ETL_API_KEY": key}
	}
	now := cliNow.Format(time.RFC3339)

	r := etl(t, env(dbURL+"&pool_max_conns=4", "k2"), "run", "--jobs", writeSpec(t, connsSpec(61)), "--concurrency", "8", "--now", now)
	require.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "pool_max_conns=4 in DATABASE_URL leaves no connection for a page: a run needs at least 5")
	require.Zero(t, sb.Usage("k2").Requests+sb.Usage("k2").FailedRequests, "a refused run sent a request")

	r = etl(t, env(dbURL+"&pool_max_conns=6", "k1"), "run", "--jobs", writeSpec(t, connsSpec(41)), "--concurrency", "8", "--now", now)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Equal(t, 6, opened, "connections open at the first request")
	requireAllPaidLoaded(t, sb, "k1", dbURL, 41)
}

func TestPoolMaxConnsSet(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"postgres://u@h/db?pool_max_conns=3":                  true,
		"postgres://u@h/db?sslmode=disable&pool_max_conns=30": true,
		"postgres://u@h/db?sslmode=disable":                   false,
		"postgres://u@h/db?application_name=pool_max_conns=3": false,
		"host=h dbname=db pool_max_conns=3":                   true,
		"pool_max_conns = 3 host=h":                           true,
		"host=h dbname=db":                                    false,
		"host=h application_name=xpool_max_conns=3":           false,
	} {
		require.Equal(t, want, poolMaxConnsSet(in), in)
	}
}
