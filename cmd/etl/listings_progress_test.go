package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/apitest"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/sandbox"
)

// pushEnv is an account signed in against a sandbox whose listings were
// pulled into a warehouse, for etl listings push in-process. The pull
// paces on the sandbox's hybrid clock (in no real time); the command's
// pushes on real time, which the sandbox sees pass.
type pushEnv struct {
	env  map[string]string
	pool *pgxpool.Pool
}

func newPushEnv(t *testing.T, account string) *pushEnv {
	t.Helper()
	clock := &hybridClock{}
	sb, err := sandbox.New(sandbox.Config{Seed: 7, Now: func() time.Time { return cliNow }, WallClock: clock.Now,
		APIKeys: []string{account}, DeviceAutoApprove: 1, DeviceInterval: time.Second})
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	dbURL := pgtest.NewDB(t)
	_, key, err := auth.NewKey()
	require.NoError(t, err)
	e := &pushEnv{env: map[string]string{"DATABASE_URL": dbURL, "ETL_API_URL": srv.URL, "ETL_SECRET_KEY": key}}
	r := etl(t, e.env, "auth", "login", "--account", account)
	require.Equal(t, exitOK, r.code, r.stderr)
	e.pool, err = pgxpool.New(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(e.pool.Close)
	tok, err := sb.IssueToken(account)
	require.NoError(t, err)
	client, err := extract.New(extract.Config{BaseURL: srv.URL, Clock: clock, Authorize: apitest.Bearer(tok.AccessToken)})
	require.NoError(t, err)
	spec, err := jobspec.ParseSpec("jobs.yaml", fmt.Appendf(nil, "jobs:\n  - name: stores\n    listings: {account: %s}\n", account), cliNow)
	require.NoError(t, err)
	runner, err := pipeline.NewRunner(pipeline.Config{Pool: e.pool, AccountClient: func(string) (*extract.Client, error) { return client, nil }})
	require.NoError(t, err)
	sum, err := runner.Run(t.Context(), spec.Jobs[0])
	require.NoError(t, err)
	require.NoError(t, sum.Tasks[0].Err)
	// The moves of the hybrid clock's offset are the pull's; the
	// command's pushes meet empty windows.
	clock.offset.Add(int64(2 * time.Minute))
	return e
}

// TestListingsPushProgressAndSummary: etl listings push, its stderr not a
// terminal, logs a record "progress" with the counts once planned (and at
// most every 10s after), and ends with its summary on stdout; etl
// listings status then lists the location refused, which waits for a
// change.
func TestListingsPushProgressAndSummary(t *testing.T) {
	t.Parallel()
	const account = "x-n30"
	e := newPushEnv(t, account)
	ctx := t.Context()
	_, err := e.pool.Exec(ctx, `CREATE TABLE desired AS SELECT location_id AS id, location_name, city, address,
		additional_address_info, zip, phone, region, website_url, business_hours, holiday_hours, reopen_date
		FROM listings_current WHERE account = $1 AND status = 'COMPLETE'`, account)
	require.NoError(t, err)
	var n int
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT count(*) FROM desired`).Scan(&n))
	require.Greater(t, n, 3)
	// One location unchanged, one with a phone the provider would refuse,
	// the others renamed.
	var unchanged, invalid string
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT min(id), max(id) FROM desired`).Scan(&unchanged, &invalid))
	_, err = e.pool.Exec(ctx, `UPDATE desired SET location_name = 'Progress ' || id WHERE id <> $1`, unchanged)
	require.NoError(t, err)
	_, err = e.pool.Exec(ctx, `UPDATE desired SET phone = '555 0100' WHERE id = $1`, invalid)
	require.NoError(t, err)
	toSend := n - 2

	r := etl(t, e.env, "--log-format", "json", "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitPartial, r.code, r.stdout+r.stderr)

	// The progress records: the first when the push is planned.
	var progress []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "progress" {
			progress = append(progress, rec)
		}
	}
	require.NotEmpty(t, progress, r.stderr)
	first := progress[0]
	for k, v := range map[string]float64{"push_id": 1, "items": float64(n), "to_send": float64(toSend), "sent": 0, "updated": 0,
		"failed": 0, "refused": 1, "skipped": 1, "requests": 0, "requests_planned": 1, "left_seconds": 0} {
		require.Equal(t, v, first[k], "%s in %v", k, first)
	}
	require.Equal(t, account, first["account"])
	require.Contains(t, first, "elapsed_seconds")

	// The summary, its first lines; then the refused one.
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	require.Equal(t, fmt.Sprintf("push 1 of %s from desired: %d rows; sent %d, updated %d, failed 0, refused 1, unchanged 1, waiting 0, in doubt 0, not sent 0", account, n, toSend, toSend),
		lines[0])
	require.Equal(t, "requests: 1 bulk, 0 single, 0 read back, 0 answered 429 (planned 1, the last at once)", lines[1])
	require.Equal(t, "1 refused: 1 INVALID_PHONE (phone)", lines[2])
	// Each location shows with its name and city as pulled.
	var name, city string
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT location_name, city FROM listings_current WHERE account = $1 AND location_id = $2`,
		account, invalid).Scan(&name, &city))
	label := fmt.Sprintf("%s %q (%s)", invalid, name, city)
	require.Contains(t, r.stdout, label+": REFUSED INVALID_PHONE phone: ")
	require.Contains(t, r.stderr, fmt.Sprintf("listings push of %s: 0 failed, 1 refused", account))

	// The refusal waits for a change, and says so.
	r = etl(t, e.env, "listings", "status", "--account", account)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "1 locations pending:")
	require.Contains(t, r.stdout, "  "+label+"  push 1  REFUSED (waits for a change)  INVALID_PHONE  phone  ")
}
