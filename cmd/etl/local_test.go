package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/internal/localwh"
	"github.com/seoetl/etl/internal/pgtest"
)

// asEtl, set in the environment, makes the test binary run as etl: the
// local commands start the warehouse in the background by running their
// own executable (selfCommand), which in a test is the test binary.
const asEtl = "ETL_TEST_RUN_AS_ETL"

func init() {
	if os.Getenv(asEtl) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
		stop()
		os.Exit(code)
	}
	selfCommand = func(args ...string) (*exec.Cmd, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(exe, args...)
		// The race detector makes a process wait a second before it exits
		// (atexit_sleep_ms): the goroutine reaping the warehouse would
		// outlast the tests' leak check.
		cmd.Env = append(os.Environ(), asEtl+"=1", "GORACE=atexit_sleep_ms=0")
		return cmd, nil
	}
}

// localFor returns the arguments of `etl local CMD` for a checkout of the
// test's own in a private folder (mode 0700, as mktemp -d makes it), whose
// cluster goes under a data root of the test's own when the server's OS
// user cannot enter it (as root). Its cleanup deletes the warehouse as
// `make clean` does, stopping whatever a failed test left running.
func localFor(t *testing.T) (args func(cmd ...string) []string, dir, dataRoot string) {
	t.Helper()
	private := t.TempDir()
	dir = filepath.Join(private, "etl", ".etl")
	dataRoot, err := os.MkdirTemp("", "etl-local-data-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dataRoot, 0o755))
	args = func(cmd ...string) []string {
		return append([]string{"local", "--dir", dir, "--data-root", dataRoot}, cmd...)
	}
	t.Cleanup(func() {
		var out bytes.Buffer
		code := run(context.Background(), args("clean"), strings.NewReader(""), &out, &out, func(string) string { return "" })
		require.Equal(t, exitOK, code, out.String())
		require.NoError(t, os.RemoveAll(dataRoot))
	})
	return args, dir, dataRoot
}

// exports parses the output of `etl local env` as a shell would.
func exports(t *testing.T, out string) map[string]string {
	t.Helper()
	line := regexp.MustCompile(`^export ([A-Z_]+)='((?:[^']|'\\'')*)'$`)
	env := map[string]string{}
	for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		m := line.FindStringSubmatch(l)
		require.NotNil(t, m, "not a shell-quoted export: %q", l)
		env[m[1]] = strings.ReplaceAll(m[2], `'\''`, "'")
	}
	require.Len(t, env, 5, out)
	return env
}

// unitsSpent asks the sandbox of env what its key spent.
func unitsSpent(t *testing.T, env map[string]string) int64 {
	t.Helper()
	resp, err := http.Get(env["ETL_API_URL"] + "/sandbox/usage?key=" + env["ETL_API_KEY"])
	require.NoError(t, err)
	defer resp.Body.Close()
	var u struct {
		UnitsSpent int64 `json:"units_spent"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&u))
	return u.UnitsSpent
}

func TestLocalUpEnvDown(t *testing.T) {
	t.Parallel()
	local, dir, dataRoot := localFor(t)
	spec := writeSpec(t, cliSpec)

	r := etl(t, nil, local("down")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, fmt.Sprintf("The local warehouse of %s is not running; nothing to stop.\n", dir), r.stdout)
	r = etl(t, nil, local("env")...)
	require.Equal(t, exitFailed, r.code)
	require.Empty(t, r.stdout, "nothing for eval")
	require.Contains(t, r.stderr, "the local warehouse is not running in "+dir+": start it with")

	// Two at once start one warehouse.
	var wg sync.WaitGroup
	ups := make([]result, 2)
	for i := range ups {
		wg.Go(func() { ups[i] = etl(t, nil, local("up")...) })
	}
	wg.Wait()
	for _, r := range ups {
		require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	}
	pid := regexp.MustCompile(`\(pid (\d+)\)`)
	require.Equal(t, pid.FindString(ups[0].stdout), pid.FindString(ups[1].stdout), "one warehouse")
	up := ups[0].stdout + ups[1].stdout
	require.Contains(t, up, "The local warehouse is up, in the background (pid ")
	require.Contains(t, up, `local env)"`)
	if os.Geteuid() == 0 {
		// The server's user cannot enter the private folder: the data is
		// away from it, and the output says where.
		require.Regexp(t, `data in `+regexp.QuoteMeta(dataRoot)+`/etl-[0-9a-f]{12} \(not in `+regexp.QuoteMeta(dir), up)
	}

	r = etl(t, nil, local("env")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	env := exports(t, r.stdout)
	require.Regexp(t, `^postgres://etl:[0-9a-f]{48}@127\.0\.0\.1:\d+/etl\?sslmode=disable$`, env["DATABASE_URL"])
	// The cluster lives on, reachable on 127.0.0.1 by every local user:
	// without its password, no connection.
	_, err := pgx.Connect(t.Context(), regexp.MustCompile(`:[0-9a-f]{48}@`).ReplaceAllString(env["DATABASE_URL"], "@"))
	require.ErrorContains(t, err, "password")
	info, err := os.Stat(filepath.Join(dir, "local.json"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "local.json holds the password")
	require.Equal(t, "sandbox", env["ETL_API_KEY"])
	require.Equal(t, env["ETL_API_URL"], env["ETL_AUTH_URL"])
	// The tokens' key of the local folder, made once, 0600.
	key, err := os.ReadFile(filepath.Join(dir, localwh.KeyFile))
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(key)), env["ETL_SECRET_KEY"])
	info, err = os.Stat(filepath.Join(dir, localwh.KeyFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// Through the printed environment, etl run loads from the warehouse's
	// sandbox into its PostgreSQL, and etl runs sees it.
	r = etl(t, env, "run", "--jobs", spec, "--job", "one")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = etl(t, env, "runs")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `1\s+one\s+manual\s+succeeded`, r.stdout)
	require.Equal(t, int64(45+3*40+20), unitsSpent(t, env))

	// up again changes nothing: same process, same addresses, and the
	// sandbox kept its usage.
	r = etl(t, nil, local("up")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "The local warehouse was up already "+pid.FindString(up)+":")
	r = etl(t, nil, local("env")...)
	require.Equal(t, env, exports(t, r.stdout))
	require.Equal(t, int64(45+3*40+20), unitsSpent(t, env))

	// make run uses the warehouse as it is, its sandbox too, and leaves it
	// up.
	r = etl(t, nil, local("run", "--jobs", spec, "--job", "two")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "the local warehouse stays up (make down stops it)")
	require.Equal(t, int64(45+3*40+20+20), unitsSpent(t, env))
	r = etl(t, env, "runs")
	require.Regexp(t, `2\s+two\s+manual\s+succeeded`, r.stdout)

	r = etl(t, nil, local("down")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `^Stopped the local warehouse \(pid \d+\): PostgreSQL and the sandbox\. The data stays in `, r.stdout)
	r = etl(t, nil, local("down")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "is not running; nothing to stop")
	r = etl(t, nil, local("env")...)
	require.Equal(t, exitFailed, r.code)
	r = etl(t, env, "runs")
	require.Equal(t, exitFailed, r.code, "the database is down")

	// Up again, the data is still there.
	r = etl(t, nil, local("up")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	r = etl(t, nil, local("env")...)
	env = exports(t, r.stdout)
	r = etl(t, env, "runs")
	require.Regexp(t, `2\s+two\s+manual\s+succeeded`, r.stdout)
	require.Zero(t, unitsSpent(t, env), "a new sandbox")

	// A warehouse killed outright leaves its socket and state behind: it
	// counts as not running, and the next up starts afresh on the data.
	var st localwh.State
	b, err := os.ReadFile(filepath.Join(dir, localwh.StateFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &st))
	require.NoError(t, syscall.Kill(st.PID, syscall.SIGKILL))
	require.Eventually(t, func() bool { return etl(t, nil, local("env")...).code == exitFailed }, time.Minute, 20*time.Millisecond)
	r = etl(t, nil, local("up")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "The local warehouse is up, in the background")
	r = etl(t, nil, local("env")...)
	env = exports(t, r.stdout)
	r = etl(t, env, "runs")
	require.Regexp(t, `2\s+two\s+manual\s+succeeded`, r.stdout)
	r = etl(t, nil, local("down")...)
	require.Equal(t, exitOK, r.code, r.stderr)
}

// TestLocalEnvRunsTheExampleJob is the README's block after make up: with
// the environment `etl local env` prints, the example job (whose listings
// need the account demo, which local up signs in on its sandbox) runs and
// exits 0, and so do plan, runs, budget, listings status and auth status,
// none of them showing a secret. A key that does not open the tokens says
// which key did, by fingerprint, and what to do.
func TestLocalEnvRunsTheExampleJob(t *testing.T) {
	t.Parallel()
	local, _, _ := localFor(t)
	jobs := filepath.Join("..", "..", "jobs.yaml")

	r := etl(t, nil, local("up", "--jobs", jobs)...)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	r = etl(t, nil, local("env")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	env := exports(t, r.stdout)
	secrets := []string{env["ETL_SECRET_KEY"], regexp.MustCompile(`:([0-9a-f]{48})@`).FindStringSubmatch(env["DATABASE_URL"])[1]}
	noSecret := func(r result) {
		t.Helper()
		for _, s := range secrets {
			require.NotContains(t, r.stdout+r.stderr, s)
		}
	}

	r = etl(t, env, "run", "--jobs", jobs, "--job", "example")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Regexp(t, `listing_versions\s+20\s`, r.stdout)
	noSecret(r)
	for _, args := range [][]string{
		{"plan", "--jobs", jobs, "--job", "example"}, {"runs"}, {"budget", "--jobs", jobs},
		{"listings", "status", "--account", "demo"}, {"auth", "status"},
	} {
		r = etl(t, env, args...)
		require.Equal(t, exitOK, r.code, "%v: %s", args, r.stderr)
		noSecret(r)
	}
	require.Contains(t, etl(t, env, "auth", "status").stdout, "demo")

	// A key of its own (as `openssl rand -base64 32` makes one): the
	// listings fail, naming the key that sealed the tokens.
	own, raw, err := auth.NewKey()
	require.NoError(t, err)
	local0, err := auth.ParseKey(env["ETL_SECRET_KEY"])
	require.NoError(t, err)
	wrong := maps.Clone(env)
	wrong["ETL_SECRET_KEY"] = raw
	r = etl(t, wrong, "run", "--jobs", jobs, "--job", "example")
	require.Equal(t, exitPartial, r.code, r.stderr)
	require.Contains(t, r.stdout+r.stderr, "the tokens of account demo do not decrypt with ETL_SECRET_KEY (fingerprint "+own.Fingerprint()+
		"): they were stored with the key of fingerprint "+local0.Fingerprint()+".")
	require.Contains(t, r.stdout+r.stderr, `eval "$(etl local env)"`)
	require.Contains(t, r.stdout+r.stderr, "`etl auth login --account demo`")
	require.NotContains(t, r.stdout+r.stderr, raw)
	noSecret(r)

	// local up again (a new sandbox after a restart alike) signs the
	// account in anew with the local key, and the run goes on.
	r = etl(t, nil, local("down")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	r = etl(t, nil, local("up")...) // no jobs.yaml here: the accounts the warehouse holds
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	r = etl(t, nil, local("env")...)
	env = exports(t, r.stdout)
	r = etl(t, env, "run", "--jobs", jobs, "--job", "example")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = etl(t, nil, local("down")...)
	require.Equal(t, exitOK, r.code, r.stderr)
}

// TestLocalRunWhilePsqlIsOpen is make run while make psql has the cluster
// open, without make up: they share the warehouse, which stops when the
// last of them ends.
func TestLocalRunWhilePsqlIsOpen(t *testing.T) {
	t.Parallel()
	local, _, _ := localFor(t)
	spec := writeSpec(t, cliSpec)

	stdin, input := io.Pipe()
	var psqlOut, psqlErr bytes.Buffer
	psqlDone := make(chan int)
	go func() {
		psqlDone <- run(t.Context(), local("psql", "--", "-X", "-q", "-A", "-t"), stdin, &psqlOut, &psqlErr, func(string) string { return "" })
	}()
	require.Eventually(t, func() bool {
		return etl(t, nil, local("env")...).code == exitOK
	}, time.Minute, 50*time.Millisecond, "psql started the warehouse")

	r := etl(t, nil, local("run", "--jobs", spec, "--job", "one")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "The data stays in ")
	require.Contains(t, r.stdout, "make up && eval")

	// The run did not stop the warehouse under psql, which sees its rows.
	_, err := io.WriteString(input, "SELECT count(*) FROM runs;\n")
	require.NoError(t, err)
	require.NoError(t, input.Close())
	require.Equal(t, exitOK, <-psqlDone, psqlErr.String())
	require.Equal(t, "1\n", psqlOut.String())

	// psql was the last: the warehouse stopped with it; the data stays.
	r = etl(t, nil, local("env")...)
	require.Equal(t, exitFailed, r.code, "stopped")
	r = etl(t, nil, local("psql", "--", "-X", "-A", "-t", "-c", "SELECT count(*) FROM runs")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, "1\n", r.stdout)
	r = etl(t, nil, local("down")...)
	require.Contains(t, r.stdout, "is not running", "psql stopped what it started")
}

// TestHintsNameTheBinaryAsOneShellWord: the hints of etl local up and env
// ("eval \"$(... local env)\"") name the binary by its path; a path with a
// space or a $ must come out quoted, or the pasted command runs something
// else.
func TestHintsNameTheBinaryAsOneShellWord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, exe, wd string }{
		{"plain", "/opt/etl-1.2/bin/etl", "/"},
		{"space", "/tmp/my dir/etl", "/"},
		{"dollar", "/tmp/$(touch x)/etl", "/"},
		{"quote", "/tmp/it's/etl", "/elsewhere"},
		{"here", "/w/a b/etl", "/w/a b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			word := commandFor(tc.exe, tc.wd)
			out, err := exec.Command("sh", "-c", "printf %s "+word).Output()
			require.NoError(t, err)
			got := string(out)
			if !filepath.IsAbs(got) {
				got = filepath.Join(tc.wd, got)
			}
			require.Equal(t, tc.exe, got, "word %s", word)
		})
	}
}

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
