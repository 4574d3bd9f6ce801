package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/sandbox"
)

// connsTargets is how many targets connsSpec names.
const connsTargets = 10

// connsSpec is a job of connsTargets targets from n<first>.example on
// (n<i>.example has exactly i links): the last 3 months of history (40
// units a line) and every link in pages of 20 (45 units a line).
func connsSpec(first int) string {
	var b strings.Builder
	b.WriteString("jobs:\n  - name: many\n    targets:\n")
	for i := first; i < first+connsTargets; i++ {
		fmt.Fprintf(&b, "      - {url: n%d.example, scope: ROOT_DOMAIN}\n", i)
	}
	b.WriteString("    endpoints: {summary: {limit: 3}, links: {limit: 20}}\n")
	return b.String()
}

// hog opens connections to dbURL until the server refuses one (or n are
// open, n > 0), and holds them until closed.
type hog struct {
	mu    sync.Mutex
	conns []*pgx.Conn
}

func (h *hog) take(ctx context.Context, dbURL string, n int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for n <= 0 || len(h.conns) < n {
		c, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			if n > 0 {
				return err
			}
			return nil // the server has no slot left
		}
		h.conns = append(h.conns, c)
	}
	return nil
}

func (h *hog) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		_ = c.Close(context.Background())
	}
	h.conns = nil
}

// waitClients waits until the server of superURL has want client
// connections besides the one asking: the server processes of a run that
// just ended outlive it for a moment, and count as clients in use.
func waitClients(t *testing.T, superURL string, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, superURL)
	require.NoError(t, err)
	defer c.Close(context.Background())
	for {
		var n int
		require.NoError(t, c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&n))
		if n == want {
			return
		}
		// Polls the server's own view: no fixed sleep decides anything.
		select {
		case <-ctx.Done():
			t.Fatalf("the server has %d client connections, want %d", n, want)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// requireAllPaidLoaded checks a run of spec's targets with key: what the
// sandbox charged is what the ledger settled, every request the sandbox
// answered has its ledger row, none is left unsettled, and the rows in
// the tables are every line charged (summary 40 units a line, links 45).
func requireAllPaidLoaded(t *testing.T, sb *sandbox.Server, key, dbURL string, first int) {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var urls []string
	for i := first; i < first+connsTargets; i++ {
		urls = append(urls, fmt.Sprintf("n%d.example", i))
	}
	var requests, unsettled, spent, history, links int64
	require.NoError(t, conn.QueryRow(ctx, `
		SELECT count(*), count(*) FILTER (WHERE spent IS NULL), coalesce(sum(spent), 0),
		       (SELECT count(*) FROM backlink_history JOIN targets t USING (target_id) WHERE t.url = ANY($1)),
		       (SELECT count(*) FROM backlinks JOIN targets t USING (target_id) WHERE t.url = ANY($1))
		FROM unit_ledger WHERE run_id = (SELECT max(run_id) FROM runs)`, urls).Scan(&requests, &unsettled, &spent, &history, &links))
	u := sb.Usage(key)
	require.Zero(t, unsettled, "ledger rows left unsettled")
	require.Equal(t, u.Requests, requests, "requests the sandbox answered against the ledger's rows")
	require.Equal(t, u.UnitsSpent, spent, "units the sandbox charged against the ledger's")
	require.Equal(t, u.UnitsSpent, 40*history+45*links, "units the sandbox charged against the rows loaded")
	wantLinks := int64(0)
	for i := first; i < first+connsTargets; i++ {
		wantLinks += int64(i)
	}
	require.Equal(t, wantLinks, links)
	require.Equal(t, int64(3*connsTargets), history)
}

// A server of max_connections 20 lets a role that is not a superuser open
// 17. On main, --concurrency 128 opened a pool of 130 and a connection per
// partition made: tasks failed with "too many clients" after their pages
// were paid for. Now a run at 128 needs 14 connections, opened before any
// request, and completes; one the server cannot serve is refused before
// any request, saying what fits; and another client taking every
// connection left while a run goes on does not keep a page from loading.
func TestConcurrencyIsBoundedByWhatTheDatabaseServes(t *testing.T) {
	t.Parallel()
	dbURL, superURL := pgtest.NewServer(t, map[string]string{"max_connections": "20", "superuser_reserved_connections": "3"})
	var during hog
	defer during.close()
	var hogOnFirstRequest atomic.Bool
	var once sync.Once
	var hogErr error
	sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return cliNow }, APIKeys: []string{"k1", "k2", "k3", "k4"}})
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hogOnFirstRequest.Load() {
			// Another client takes every connection the server has left,
			// superuser slots too, once the run sent its first request.
			once.Do(func() { hogErr = during.take(context.WithoutCancel(r.Context()), superURL, 0) })
		}
		sb.Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	env := func(key string) map[string]string {
		return map[string]string{"DATABASE_URL": dbURL, "ETL_API_URL": srv.URL, "ETL_API_KEY": key}
	}
	now := cliNow.Format(time.RFC3339)

	// 128 asked: 10 pages in flight (the API's limit), 14 connections.
	r := etl(t, env("k1"), "run", "--jobs", writeSpec(t, connsSpec(41)), "--concurrency", "128", "--now", now)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, fmt.Sprintf("job many: %d tasks", 2*connsTargets))
	waitClients(t, superURL, 0) // the run's server processes have ended
	requireAllPaidLoaded(t, sb, "k1", dbURL, 41)

	// Another client holds 5: 12 left, and 128 (or 10) needs 14.
	var before hog
	require.NoError(t, before.take(t.Context(), superURL, 5))
	waitClients(t, superURL, 5)
	r = etl(t, env("k2"), "run", "--jobs", writeSpec(t, connsSpec(61)), "--concurrency", "128", "--now", now)
	require.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "--concurrency 128 needs 14 database connections (10 pages in flight, 2 spare, 1 makes partitions, 1 holds the job's lock), "+
		"but the server allows 12 more: max_connections is 20, 3 of them reserved for superusers, and 5 are in use by other clients")
	require.Contains(t, r.stderr, "--concurrency 8 fits")
	require.Contains(t, r.stderr, "nothing was asked of the API")
	require.Zero(t, sb.Usage("k2").Requests+sb.Usage("k2").FailedRequests, "a refused run sent a request")
	// What it says fits, runs.
	waitClients(t, superURL, 5)
	r = etl(t, env("k2"), "run", "--jobs", writeSpec(t, connsSpec(61)), "--concurrency", "8", "--now", now)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	waitClients(t, superURL, 5)
	requireAllPaidLoaded(t, sb, "k2", dbURL, 61)
	before.close()

	// Not even concurrency 1 fits beside 13 held.
	require.NoError(t, before.take(t.Context(), superURL, 13))
	waitClients(t, superURL, 13)
	r = etl(t, env("k3"), "run", "--jobs", writeSpec(t, connsSpec(81)), "--now", now)
	require.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "--concurrency 4 needs 8 database connections")
	require.Contains(t, r.stderr, "not even --concurrency 1 fits")
	require.Zero(t, sb.Usage("k3").Requests+sb.Usage("k3").FailedRequests, "a refused run sent a request")
	before.close()

	// None at all: the server refuses the first.
	waitClients(t, superURL, 0)
	require.NoError(t, before.take(t.Context(), superURL, 0))
	r = etl(t, env("k3"), "run", "--jobs", writeSpec(t, connsSpec(81)), "--now", now)
	before.close()
	require.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "--concurrency 4 needs 8 database connections")
	require.Contains(t, r.stderr, "the server has none to give")
	require.Contains(t, r.stderr, "SQLSTATE 53300")
	require.Zero(t, sb.Usage("k3").Requests+sb.Usage("k3").FailedRequests, "a refused run sent a request")

	// Once the run has sent its first request, another client takes every
	// connection left: the run's are open already, the one that makes
	// partitions too (a month earlier runs did not load: new partitions).
	waitClients(t, superURL, 0)
	hogOnFirstRequest.Store(true)
	r = etl(t, env("k4"), "run", "--jobs", writeSpec(t, connsSpec(101)), "--concurrency", "128", "--now", cliNow.AddDate(0, -6, 0).Format(time.RFC3339))
	during.mu.Lock()
	held := len(during.conns)
	during.mu.Unlock()
	during.close()
	require.NoError(t, hogErr)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Positive(t, held, "the other client took no connection")
	// The hog's server processes outlive its closed connections for a
	// moment, and hold the last slots.
	waitClients(t, superURL, 0)
	requireAllPaidLoaded(t, sb, "k4", dbURL, 101)
}
