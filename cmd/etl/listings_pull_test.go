package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/sandbox"
)

// TestListingsPull: etl listings pull loads the account's locations as
// the job listings:NAME, with a run recorded and the summary of etl run;
// a second pull finds every location unchanged and makes no version.
func TestListingsPull(t *testing.T) {
	t.Parallel()
	const account = "x-n8"
	w := newListingsWorld(t, account)
	ctx := t.Context()

	r := etl(t, w.env, "listings", "pull", "--account", account)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "job listings:"+account+": 1 tasks, 8 rows, 0 quarantined, 0 API units")
	require.Regexp(t, `listing_versions\s+8\s+8\s+0\s+0\s+0`, r.stdout)
	var problems int
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(DISTINCT location_id) FROM listing_problems WHERE account = $1`, account).Scan(&problems))
	require.Contains(t, r.stdout, fmt.Sprintf("account %s: 8 locations, 0 gone, %d with open problems (listings_current, listing_problems)", account, problems))
	var versions, current int
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE valid_to IS NULL) FROM listing_versions WHERE account = $1`,
		account).Scan(&versions, &current))
	require.Equal(t, 8, versions)
	require.Equal(t, 8, current)
	var job, status string
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT job, status FROM runs ORDER BY run_id DESC LIMIT 1`).Scan(&job, &status))
	require.Equal(t, "listings:"+account, job)
	require.Equal(t, "succeeded", status)

	// Again, with --status changed: nothing changed, nothing new.
	r = etl(t, w.env, "listings", "pull", "--account", account, "--status", "changed", "--size", "5")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Regexp(t, `listing_versions\s+8\s+0\s+0\s+8\s+0`, r.stdout)
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(*) FROM listing_versions WHERE account = $1`, account).Scan(&versions))
	require.Equal(t, 8, versions)
	var runs int
	require.NoError(t, w.pool.QueryRow(ctx, `SELECT count(*) FROM runs WHERE job = $1 AND status = 'succeeded'`, "listings:"+account).Scan(&runs))
	require.Equal(t, 2, runs)

	// --json prints the run's summary as etl run --json does.
	r = etl(t, w.env, "listings", "pull", "--account", account, "--json")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, `"job": "listings:`+account+`"`)
	require.Contains(t, r.stdout, `"table": "listing_versions"`)
}

// TestListingsPullRefusals: a bad --status or --size is a usage error
// naming the value, and an account that has not signed in is refused
// with the command that signs it in, before any run is recorded.
func TestListingsPullRefusals(t *testing.T) {
	t.Parallel()
	const account = "x-n3"
	w := newListingsWorld(t, account)

	r := etl(t, w.env, "listings", "pull", "--account", account, "--status", "some\x1b[2J")
	require.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, `--status "some\x1b[2J": want all`)
	require.NotContains(t, r.stderr, "\x1b")

	r = etl(t, w.env, "listings", "pull", "--account", account, "--size", "0")
	require.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "--size must be between 1 and")

	r = etl(t, w.env, "listings", "pull")
	require.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "--account NAME is required")

	// An account the warehouse knows nothing of does not exist, as for a
	// push (it said "has not signed in", and a run "must sign in again").
	r = etl(t, w.env, "listings", "pull", "--account", "nobody")
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	require.Equal(t, "etl: account nobody does not exist (etl auth status lists the accounts; etl auth login --account nobody signs one in)\n", r.stderr)

	noKey := map[string]string{"DATABASE_URL": w.env["DATABASE_URL"], "ETL_API_URL": w.env["ETL_API_URL"]}
	r = etl(t, noKey, "listings", "pull", "--account", account)
	require.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "ETL_SECRET_KEY")

	var runs int
	require.NoError(t, w.pool.QueryRow(t.Context(), `SELECT count(*) FROM runs`).Scan(&runs))
	require.Zero(t, runs)

	// A run of a job naming it says so too.
	jobs := writeSpec(t, "jobs:\n  - name: shops\n    listings: {account: nobody}\n")
	r = etl(t, w.env, "run", "--jobs", jobs, "--log-level", "warn")
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "account nobody does not exist (it never signed in, or signed out): sign it in with `etl auth login --account nobody`")
	require.NotContains(t, r.stderr, "again")
	// One that pulled and signed out has not signed in.
	r = etl(t, w.env, "listings", "pull", "--account", account)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	r = etl(t, w.env, "auth", "logout", "--account", account)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	r = etl(t, w.env, "listings", "pull", "--account", account)
	require.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stderr, "account "+account+" has not signed in (no account has signed in): sign it in with `etl auth login --account "+account+"`")
}

// TestListingsPullInterruptedResumes: a pull interrupted (SIGINT, which
// cancels the command's context) after its second page exits 3 saying
// that the next pull resumes it; the next pull takes the run up from its
// checkpoint, and the account ends with every location, once.
func TestListingsPullInterruptedResumes(t *testing.T) {
	t.Parallel()
	const account = "x-n12"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w := newListingsWorld(t, account)
	w.setMW(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, catalog.LocationsPrefix) && r.URL.Query().Get("page") == "2" {
				cancel()
			}
			next.ServeHTTP(rw, r)
		})
	})
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"listings", "pull", "--account", account, "--size", "5"}, strings.NewReader(""), &stdout, &stderr,
		func(k string) string { return w.env[k] })
	require.Equal(t, exitPartial, code, stdout.String()+stderr.String())
	require.Contains(t, stdout.String(), "run 1 interrupted, 1 tasks not finished; the next `etl listings pull --account "+account+"` resumes it")
	var versions int
	require.NoError(t, w.pool.QueryRow(t.Context(), `SELECT count(*) FROM listing_versions WHERE account = $1`, account).Scan(&versions))
	require.Equal(t, 10, versions, "two pages of 5 committed")
	require.Contains(t, stdout.String(), "account "+account+": 10 locations, 0 gone,")

	r := etl(t, w.env, "listings", "pull", "--account", account, "--size", "5")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "resumed run 1 (attempt 2): 1 tasks had a checkpoint")
	require.Contains(t, r.stdout, "job listings:"+account+": 1 tasks, 12 rows")
	require.NoError(t, w.pool.QueryRow(t.Context(), `SELECT count(*) FROM listing_versions WHERE account = $1`, account).Scan(&versions))
	require.Equal(t, 12, versions)
}

// TestListingsAtAClosedPort: ETL_API_URL at a closed port (the account
// signed in before). A pull stops at once with exit 1 and one line saying
// what to check, as a run of the data API's tasks does; so do a push, an
// undo and the sandbox's clients. The pull retried the refused connection
// for 2.5 s and ended partial (exit 3) with a table of zeros and "FAILED
// listings of account ...: connection refused", which the next run then
// "continued".
func TestListingsAtAClosedPort(t *testing.T) {
	t.Parallel()
	const account = "x-n5"
	w := newListingsWorld(t, account)
	r := etl(t, w.env, "listings", "pull", "--account", account)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	w.createDesired(t, 0)
	w.rename(t, "Friday ")
	r = etl(t, w.env, "listings", "push", "--account", account, "--from", "desired")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	w.rename(t, "Saturday ")
	closed := "http://" + closedAddr(t)
	w.env["ETL_API_URL"] = closed
	want := "etl: ETL_API_URL " + closed + " refused the connection: is the API (or `etl sandbox`) running at that address?\n"
	for _, args := range [][]string{
		{"listings", "pull", "--account", account, "--log-level", "warn"},
		{"listings", "push", "--account", account, "--from", "desired", "--log-level", "warn"},
		{"listings", "undo", "--account", account, "--push", "1", "--log-level", "warn"},
	} {
		r = etl(t, w.env, args...)
		require.Equal(t, exitFailed, r.code, "%v: %s", args, r.stdout+r.stderr)
		require.Empty(t, r.stdout, args)
		require.Equal(t, want, r.stderr, args)
	}
}

// TestListingsOfAnAccountTheAPIRefuses: a listings pull whose account is
// not signed in, or whose plan the API refuses (403, no Local Pro), fails
// with one clear line that says what to do and shows no token.
func TestListingsOfAnAccountTheAPIRefuses(t *testing.T) {
	t.Parallel()
	sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return cliNow }, APIKeys: []string{"nopro-n5"},
		NoLocalPro: []string{"nopro-n5"}, DeviceAutoApprove: 1, DeviceInterval: time.Second})
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	_, key, err := auth.NewKey()
	require.NoError(t, err)
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t), "ETL_API_URL": srv.URL, "ETL_SECRET_KEY": key}
	jobs := writeSpec(t, "jobs:\n  - name: shops\n    listings: {account: shops}\n")
	now := cliNow.Format(time.RFC3339)

	r := etl(t, env, "run", "--jobs", jobs, "--now", now)
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	last := lastLine(r.stderr)
	t.Log(last)
	require.Equal(t, "etl: listings of account shops: account shops does not exist (it never signed in, or signed out): sign it in with `etl auth login --account shops`", last)

	r = etl(t, env, "auth", "login", "--account", "shops")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = etl(t, env, "run", "--jobs", jobs, "--now", now)
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	last = lastLine(r.stderr)
	t.Log(last)
	require.NotContains(t, last, "2147483647")
	require.Equal(t, 1, strings.Count(last, "listings of account shops"), last)
	require.Contains(t, last, "HTTP 403")
	require.NotContains(t, r.stdout+r.stderr, "sbx-at-")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
