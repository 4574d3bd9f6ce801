package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/internal/pgcluster"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/sandbox"
)

// No test waits in real time for a device sign-in's polls: the sandboxes
// of these tests approve at the first poll (DeviceAutoApprove 1), which
// answers however soon it comes.
func init() {
	authWait = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
}

// authSandbox serves a sandbox that approves every device code at its
// first poll, for the account (API key) "acct-key".
func authSandbox(t *testing.T) (*sandbox.Server, string) {
	t.Helper()
	sb, err := sandbox.New(sandbox.Config{Now: func() time.Time { return cliNow }, APIKeys: []string{"acct-key"},
		DeviceAutoApprove: 1, DeviceInterval: time.Second})
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	return sb, srv.URL
}

// authWorld is the world of a sign-in: a sandbox that approves every
// device code at its first poll (authSandbox), its address as urlVar
// (ETL_API_URL or ETL_AUTH_URL), a fresh warehouse and a secret key, with
// no account signed in.
func authWorld(t *testing.T, urlVar string) (*sandbox.Server, map[string]string) {
	t.Helper()
	sb, url := authSandbox(t)
	_, key, err := auth.NewKey()
	require.NoError(t, err)
	return sb, map[string]string{"DATABASE_URL": pgtest.NewDB(t), urlVar: url, "ETL_SECRET_KEY": key}
}

func TestAuthLoginStatusLogout(t *testing.T) {
	t.Parallel()
	_, env := authWorld(t, "ETL_AUTH_URL")
	url, key := env["ETL_AUTH_URL"], env["ETL_SECRET_KEY"]

	r := etl(t, map[string]string{"DATABASE_URL": env["DATABASE_URL"], "ETL_AUTH_URL": url}, "auth", "login", "--account", "agency")
	require.Equal(t, exitUsage, r.code, r.stderr)
	require.Contains(t, r.stderr, "no ETL_SECRET_KEY")
	require.Contains(t, r.stderr, "openssl rand -base64 32")
	require.Contains(t, r.stderr, `eval "$(etl local env)"`, "the local warehouse's key, not a new one")

	r = etl(t, env, "auth", "login")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "--account NAME is required")

	r = etl(t, env, "--log-format", "json", "auth", "login", "--account", "agency")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, url+"/dag/device")
	require.Contains(t, r.stdout, "and enter the code ")
	require.Contains(t, r.stdout, "Account agency signed in (device flow)")
	require.NotContains(t, r.stdout+r.stderr, "sbx-at-")
	require.NotContains(t, r.stdout+r.stderr, "sbx-rt-")
	require.NotContains(t, r.stdout+r.stderr, key)

	r = etl(t, env, "auth", "status")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "ACCOUNT  FLOW    SCOPES  ACCESS EXPIRES")
	require.Contains(t, r.stdout, "agency   device  -       ")
	require.Contains(t, r.stdout, "never")

	r = etl(t, map[string]string{"DATABASE_URL": env["DATABASE_URL"]}, "auth", "status", "--json")
	require.Equal(t, exitOK, r.code, "status needs no key: %s", r.stderr)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	require.Len(t, list, 1)
	require.Equal(t, "agency", list[0]["account"])
	require.Equal(t, "device", list[0]["flow"])
	require.NotContains(t, r.stdout, "sbx-")

	r = etl(t, env, "auth", "logout", "--account", "agency")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "Account agency signed out")
	r = etl(t, env, "auth", "logout", "--account", "agency")
	require.Equal(t, exitFailed, r.code)
	require.Contains(t, r.stderr, "no account agency")
	r = etl(t, env, "auth", "status")
	require.Contains(t, r.stdout, "no accounts")
}

// TestJobWithAccount: a job that names an account calls the API with its
// bearer token, without ETL_API_KEY, and the units are charged to the
// account the token belongs to (and recorded in the ledger as always).
func TestJobWithAccount(t *testing.T) {
	t.Parallel()
	sb, env := authWorld(t, "ETL_API_URL")
	dbURL, key := env["DATABASE_URL"], env["ETL_SECRET_KEY"]
	jobs := writeSpec(t, "jobs:\n  - name: acct\n    account: agency\n    targets: [{url: example.com, scope: ROOT_DOMAIN}]\n    endpoints: {overview: {}}\n")

	r := etl(t, env, "run", "--jobs", jobs, "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitFailed, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout+r.stderr, "account agency does not exist (it never signed in, or signed out): sign it in with `etl auth login --account agency`")
	require.Zero(t, sb.Usage("acct-key").Requests)

	r = etl(t, env, "auth", "login", "--account", "agency")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = etl(t, env, "--log-format", "json", "--log-level", "debug", "run", "--jobs", jobs, "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "job acct: 1 tasks")
	u := sb.Usage("acct-key")
	require.Equal(t, int64(1), u.Requests)
	require.Positive(t, u.UnitsSpent)
	require.NotContains(t, r.stdout+r.stderr, "sbx-at-")

	conn, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var units int64
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT coalesce(sum(units), 0) FROM runs WHERE job = 'acct'`).Scan(&units))
	require.Equal(t, u.UnitsSpent, units, "the ledger counts what the account was charged")

	// A dump of the whole database holds no token, refresh token, code or
	// secret key in clear: the tokens are sealed, and nothing else the run
	// wrote quotes them.
	bin, err := pgcluster.Binaries()
	require.NoError(t, err)
	if dir := os.Getenv("PG_BIN"); dir != "" {
		bin = dir
	}
	dump, err := exec.CommandContext(t.Context(), filepath.Join(bin, "pg_dump"), "--dbname", dbURL).Output()
	require.NoError(t, err)
	require.Contains(t, string(dump), "CREATE TABLE public.accounts", "the dump is whole")
	for _, secret := range []string{"sbx-at-", "sbx-rt-", "sbx-dc-", "sbx-ac-", key} {
		require.NotContains(t, string(dump), secret)
	}

	r = etl(t, env, "run", "--jobs", writeSpec(t, "jobs:\n  - name: k\n    targets: [{url: example.com, scope: ROOT_DOMAIN}]\n    endpoints: {overview: {}}\n"))
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "job k names no account and ETL_API_KEY is not set")
}

// syncWriter is a bytes.Buffer safe to read while the CLI writes to it,
// which tells once when what it holds first contains a text.
type syncWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if w.seen != nil && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
		w.seen = nil
	}
	return n, err
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestAuthLoginWithTheCodeFlow: etl auth login --code prints the
// authorize address; a person approves in a browser (here: a request to
// that address, whose redirect carries the code) and pastes the address
// they were sent to; etl exchanges the code and stores the account. No
// token, code or secret is printed.
func TestAuthLoginWithTheCodeFlow(t *testing.T) {
	t.Parallel()
	_, env := authWorld(t, "ETL_AUTH_URL")
	url, key := env["ETL_AUTH_URL"], env["ETL_SECRET_KEY"]
	env["ETL_CLIENT_ID"], env["ETL_CLIENT_SECRET"] = sandbox.DefaultClientID, sandbox.DefaultClientSecret

	r := etl(t, map[string]string{"DATABASE_URL": env["DATABASE_URL"], "ETL_AUTH_URL": url, "ETL_SECRET_KEY": key}, "auth", "login", "--account", "client", "--code")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "--code needs ETL_CLIENT_ID and ETL_CLIENT_SECRET")

	stdinR, stdinW := io.Pipe()
	stdout := &syncWriter{want: "then paste the code", seen: make(chan struct{})}
	seen := stdout.seen
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"auth", "login", "--account", "client", "--code"}, stdinR, stdout, &stderr,
			func(k string) string { return env[k] })
	}()
	select {
	case <-seen:
	case code := <-done:
		t.Fatalf("etl ended (%d) before asking for the code: %s %s", code, stdout.String(), stderr.String())
	}
	authorize := regexp.MustCompile(`(?m)^\s+(http\S+/oauth2/authorize\S+)$`).FindStringSubmatch(stdout.String())
	require.NotNil(t, authorize, stdout.String())

	// The person approves: the sandbox's authorize page redirects with a code.
	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := browser.Get(authorize[1] + "&account=acct-key")
	require.NoError(t, err)
	resp.Body.Close()
	sentTo := resp.Header.Get("Location")
	require.Contains(t, sentTo, "code=")
	_, err = io.WriteString(stdinW, sentTo+"\n")
	require.NoError(t, err)
	require.Equal(t, exitOK, <-done, stderr.String())
	require.Contains(t, stdout.String(), "Account client signed in")
	require.NotContains(t, stdout.String()+stderr.String(), "sbx-at-")
	require.NotContains(t, stdout.String()+stderr.String(), "sbx-rt-")
	require.NotContains(t, stdout.String()+stderr.String(), sandbox.DefaultClientSecret)

	r = etl(t, env, "auth", "status")
	require.Contains(t, r.stdout, "client   code")
}

// TestTheExampleJobWithAnAccount: the example job of jobs.yaml, given
// `account:`, runs on that account's bearer token (no ETL_API_KEY), and
// the sandbox charges the account what the ledger says.
func TestTheExampleJobWithAnAccount(t *testing.T) {
	t.Parallel()
	sb, env := authWorld(t, "ETL_API_URL")
	example, err := os.ReadFile("../../jobs.yaml")
	require.NoError(t, err)
	spec := strings.Replace(string(example), "  - name: example\n", "  - name: example\n    account: agency\n", 1)
	require.NotEqual(t, string(example), spec)
	spec = strings.Replace(spec, "account: demo", "account: agency", 1) // its listings too
	jobs := writeSpec(t, spec)

	r := etl(t, env, "auth", "login", "--account", "agency")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = etl(t, env, "run", "--jobs", jobs, "--job", "example", "--now", cliNow.Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "job example: 36 tasks")
	u := sb.Usage("acct-key")
	require.Positive(t, u.UnitsSpent)
	var units int64
	query(t, env["DATABASE_URL"], `SELECT units FROM runs WHERE job = 'example'`, nil, &units)
	require.Equal(t, u.UnitsSpent, units, "the account was charged what the ledger booked")
	require.NotContains(t, r.stdout+r.stderr, "sbx-at-")
}

// TestTokenServiceAtAClosedPort: ETL_AUTH_URL at a closed port while the
// account's token is due for renewal. A sign-in, a run whose task uses
// the account's token, a listings pull and a push each stop at once with
// one line naming ETL_AUTH_URL (not ETL_API_URL, which is right) and exit
// 1, as at a wrong ETL_API_URL; nothing reached the API. Before, the
// refused renewal was tried again as a request of the API, blamed on
// ETL_API_URL, and a pull ended partial (exit 3).
func TestTokenServiceAtAClosedPort(t *testing.T) {
	t.Parallel()
	const account = "x-ts"
	w := newListingsWorld(t, account)
	r := etl(t, w.env, "listings", "pull", "--account", account)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	w.createDesired(t, 0)
	w.rename(t, "Friday ")
	// Due: the token expires within the renewal margin (a day).
	_, err := w.pool.Exec(t.Context(), `UPDATE accounts SET access_expires_at = now() + interval '1 hour' WHERE name = $1`, account)
	require.NoError(t, err)
	closed := "http://" + closedAddr(t)
	w.env["ETL_AUTH_URL"] = closed
	jobs := writeSpec(t, "jobs:\n  - name: acct\n    account: "+account+"\n    targets: [{url: example.com, scope: ROOT_DOMAIN}]\n    endpoints: {overview: {}}\n")
	want := "etl: ETL_AUTH_URL " + closed + " refused the connection: is the token service (or `etl sandbox`) running at that address?\n"
	for _, args := range [][]string{
		{"auth", "login", "--account", "other"},
		{"run", "--jobs", jobs, "--log-level", "warn"},
		{"listings", "pull", "--account", account, "--log-level", "warn"},
		{"listings", "push", "--account", account, "--from", "desired", "--log-level", "warn"},
	} {
		r = etl(t, w.env, args...)
		require.Equal(t, exitFailed, r.code, "%v: %s", args, r.stdout+r.stderr)
		if args[0] != "auth" {
			require.Empty(t, r.stdout, args)
		}
		require.Equal(t, want, r.stderr, args)
	}
	var renewed int
	require.NoError(t, w.pool.QueryRow(t.Context(), `SELECT count(*) FROM accounts WHERE refreshed_at IS NOT NULL`).Scan(&renewed))
	require.Zero(t, renewed)
}
