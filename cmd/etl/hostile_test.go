package main

import (
	"net/http/httptest"
	"strings"

	"testing"
	"time"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/sandbox"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
)

// TestLocalRunTwice: etl local run twice in a row on one warehouse, each
// with a sandbox of its own (the clock pinned): the second finds the
// account signed in, and pulls with it.
func TestLocalRunTwice(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDB(t)}
	dir := t.TempDir()
	jobs := writeSpec(t, "jobs:\n  - name: shops\n    listings: {account: demo}\n")
	for i := range 2 {
		r := etl(t, env, "local", "run", "--dir", dir, "--jobs", jobs, "--now", cliNow.Add(time.Duration(i)*24*time.Hour).Format(time.RFC3339))
		require.Equal(t, exitOK, r.code, "run %d: %s", i+1, r.stdout+r.stderr)
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
