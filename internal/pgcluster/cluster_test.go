package pgcluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// testRoot returns a TempRoot of the test's own, so that its sweeps meet
// only its clusters. It must let the server's OS user through (t.TempDir is
// private to root), and its cleanup sweeps whatever a failed test left.
func testRoot(t *testing.T) string {
	t.Helper()
	root, err := os.MkdirTemp("", "etl-pgcluster-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(root, 0o755))
	t.Cleanup(func() {
		// Kill what a failed test may have left, as the next Start would.
		for _, d := range []string{filepath.Join(root, "persistent")} {
			_ = stopServer(context.Background(), filepath.Join(d, dataName), syscall.SIGQUIT, slog.New(slog.DiscardHandler))
		}
		require.NoError(t, sweep(context.Background(), root, slog.New(slog.DiscardHandler)))
		require.NoError(t, os.RemoveAll(root))
	})
	return root
}

// testLogger sends the cluster's log to t.Log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func query[T any](t *testing.T, url, sql string, args ...any) T {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var v T
	require.NoError(t, conn.QueryRow(ctx, sql, args...).Scan(&v))
	return v
}

func exec1(t *testing.T, url, sql string) {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	require.NoError(t, err)
}

func TestThrowaway(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	c, err := Start(t.Context(), Options{TempRoot: root, Logger: testLogger(t)})
	require.NoError(t, err)
	require.Equal(t, root, filepath.Dir(c.Dir()))
	require.Equal(t, fmt.Sprintf("postgres://etl@127.0.0.1:%d/postgres?sslmode=disable", c.Port()), c.URL("postgres"))

	require.Equal(t, "off", query[string](t, c.URL("postgres"), "SHOW fsync"))
	require.Equal(t, "200", query[string](t, c.URL("postgres"), "SHOW max_connections"))
	require.Equal(t, "UTF8", query[string](t, c.URL("postgres"), "SHOW server_encoding"))
	require.True(t, query[bool](t, c.URL("postgres"), "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"))
	require.Equal(t, filepath.Join(c.Dir(), sockName), query[string](t, c.URL("postgres"), "SHOW unix_socket_directories"))
	require.FileExists(t, filepath.Join(c.Dir(), ownerFile))
	if os.Geteuid() == 0 {
		fi, err := os.Stat(filepath.Join(c.Dir(), dataName))
		require.NoError(t, err)
		require.EqualValues(t, c.acct.uid, fi.Sys().(*syscall.Stat_t).Uid, "data folder owned by the server's user")
	}

	// The cluster folder is live: a sweep leaves it alone.
	require.NoError(t, sweep(t.Context(), root, testLogger(t)))
	require.DirExists(t, c.Dir())

	pid := c.proc.cmd.Process.Pid
	require.NoError(t, c.Stop())
	require.NoDirExists(t, c.Dir())
	require.False(t, processAlive(pid))
	require.NoError(t, c.Stop(), "Stop is idempotent")
}

// startOwner runs the test binary as a cluster owner (see ownerHelper) and
// returns it with its cluster folder and postmaster pid.
func startOwner(t *testing.T, cfg helperConfig) (*exec.Cmd, string, int) {
	t.Helper()
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(b))
	cmd.Stderr = tWriter{t}
	stdin, err := cmd.StdinPipe() // held open: the helper blocks on it
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the owner helper failed to start its cluster")
	var dir string
	var pid int
	_, err = fmt.Sscanf(line, "%s %d", &dir, &pid)
	require.NoError(t, err)
	return cmd, dir, pid
}

// killOwner SIGKILLs the helper and reaps it.
func killOwner(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal())
}

func TestSweepRemovesClusterOfKilledOwner(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	// Without the parent-death signal the postmaster outlives its owner, as
	// it would outside Linux: the sweep must stop it.
	owner, orphanDir, orphanPID := startOwner(t, helperConfig{TempRoot: root, NoDeathSignal: true})
	killOwner(t, owner)
	require.True(t, processAlive(orphanPID), "the orphan postmaster runs on")
	require.DirExists(t, orphanDir)

	c, err := Start(t.Context(), Options{TempRoot: root, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Stop()) })

	require.False(t, processAlive(orphanPID), "the sweep stopped the orphan postmaster")
	require.NoDirExists(t, orphanDir)
	require.DirExists(t, c.Dir())
	require.Equal(t, 1, query[int](t, c.URL("postgres"), "SELECT 1"))
}

func TestDeathSignalStopsServerOfKilledOwner(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	owner, dir, pid := startOwner(t, helperConfig{TempRoot: root})
	killOwner(t, owner)
	// The kernel sends SIGQUIT to the postmaster when its owner dies; the
	// immediate shutdown takes a moment.
	require.Eventually(t, func() bool { return !processAlive(pid) }, 10*time.Second, 5*time.Millisecond,
		"the postmaster exits when its owner is killed")
	require.DirExists(t, dir, "only a sweep removes the folder")
	require.NoError(t, sweep(t.Context(), root, testLogger(t)))
	require.NoDirExists(t, dir)
}

// abandon makes c look like the cluster of an owner that was killed while
// its server ran on: the owner lock is released, the server is not stopped.
func (c *Cluster) abandon() {
	c.owner.Close()
	c.stopOnce.Do(func() {})
}

func TestPersistent(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	dir := filepath.Join(root, "persistent")
	opts := Options{Dir: dir, Persistent: true, TempRoot: root, Logger: testLogger(t)}

	// First run: initdb, database etl created, data written, clean stop.
	c1, err := Start(t.Context(), opts)
	require.NoError(t, err)
	require.Equal(t, dir, c1.Dir())
	require.Equal(t, "on", query[string](t, c1.URL(Database), "SHOW fsync"))
	exec1(t, c1.URL(Database), "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)")
	require.NoError(t, c1.Stop())
	require.DirExists(t, filepath.Join(dir, dataName))
	require.NoFileExists(t, filepath.Join(dir, dataName, "postmaster.pid"))

	// Second run sees the data; a concurrent run is refused.
	c2, err := Start(t.Context(), opts)
	require.NoError(t, err)
	require.Equal(t, 42, query[int](t, c2.URL(Database), "SELECT v FROM kept"))
	_, err = Start(t.Context(), opts)
	require.ErrorIs(t, err, ErrInUse)
	require.ErrorContains(t, err, fmt.Sprintf("process %d", os.Getpid()))

	// The owner of c2 dies and its server runs on: the next Start stops it.
	c2.abandon()
	c3, err := Start(t.Context(), opts)
	require.NoError(t, err)
	require.True(t, c2.proc.exited(), "the stale postmaster was stopped")
	require.Equal(t, 42, query[int](t, c3.URL(Database), "SELECT v FROM kept"))

	// The server of c3 is killed outright, leaving a stale postmaster.pid
	// whose pid is dead: PostgreSQL replaces it itself and recovers.
	exec1(t, c3.URL(Database), "INSERT INTO kept VALUES (43)")
	pid := c3.proc.cmd.Process.Pid
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	<-c3.proc.done
	c3.abandon()
	require.Equal(t, pid, postmasterPID(filepath.Join(dir, dataName)), "stale postmaster.pid left behind")
	c4, err := Start(t.Context(), opts)
	require.NoError(t, err)
	require.Equal(t, 85, query[int](t, c4.URL(Database), "SELECT sum(v)::int FROM kept"), "committed rows survive the crash")
	require.NoError(t, c4.Stop())
	require.DirExists(t, dir)
}

func TestOptionsValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"persistent without Dir", Options{Persistent: true}, "Dir is required for a persistent cluster"},
		{"throwaway with Dir", Options{Dir: "/tmp/x"}, "Dir is only for a persistent cluster"},
		{"throwaway with Origin", Options{Origin: "/tmp/x/.etl"}, "a throwaway cluster takes no Origin"},
		{"BinDir without server", Options{BinDir: "/nonexistent"}, "BinDir /nonexistent: no PostgreSQL server binaries"},
		{"negative timeout", Options{StopTimeout: -time.Second, BinDir: mustBinaries(t)}, "timeouts must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Start(t.Context(), tc.opts)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func mustBinaries(t *testing.T) string {
	t.Helper()
	dir, err := Binaries()
	require.NoError(t, err)
	return dir
}

func TestFindBinaries(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, v := range []string{"9.6", "16", "15", "17"} {
		bin := filepath.Join(root, v, "bin")
		require.NoError(t, os.MkdirAll(bin, 0o755))
		names := []string{"initdb", "postgres"}
		if v == "17" {
			names = names[:1] // client-only install: no server
		}
		for _, n := range names {
			require.NoError(t, os.WriteFile(filepath.Join(bin, n), []byte("#!/bin/sh\n"), 0o755))
		}
	}
	got, err := findBinaries(root)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "16", "bin"), got)
}

func TestCompareVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"15", "15", 0},
		{"9.6", "15", -1},
		{"16", "15", 1},
		{"9", "9.6", -1},
		{"beta", "9", -1},
	} {
		got := compareVersions(tc.a, tc.b)
		require.Equal(t, tc.want, sign(got), "compareVersions(%q, %q)", tc.a, tc.b)
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// TestPlaceForAPrivateFolder is `make run` as root in a checkout under a
// mktemp -d folder (mode 0700), which the server's OS user cannot enter:
// the cluster goes away from the checkout, stays there, and Remove deletes
// it.
func TestPlaceForAPrivateFolder(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	po := PlaceOptions{AwayRoot: filepath.Join(root, "away")}
	private, err := os.MkdirTemp("", "etl-private-") // mode 0700, as mktemp -d
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(private)) })
	private, err = filepath.EvalSymlinks(private)
	require.NoError(t, err)
	dir := filepath.Join(private, "etl", ".etl") // not made yet, as in a fresh clone

	places, err := Places(dir, po)
	require.NoError(t, err)
	home, away := places[0], places[1]
	require.Equal(t, filepath.Join(dir, "pg"), home)
	require.Equal(t, po.AwayRoot, filepath.Dir(away))
	require.Regexp(t, `^etl-[0-9a-f]{12}$`, filepath.Base(away), "named after the checkout")
	other, err := Places(filepath.Join(private, "other", "etl", ".etl"), po)
	require.NoError(t, err)
	require.NotEqual(t, away, other[1], "each checkout has a folder of its own")

	want := home // not root: the server runs as this user, who reaches it
	if os.Geteuid() == 0 {
		want = away
	}
	got, err := Place(dir, po)
	require.NoError(t, err)
	require.Equal(t, want, got)

	opts := Options{Dir: got, Persistent: true, Origin: dir, TempRoot: root, Logger: testLogger(t)}
	c, err := Start(t.Context(), opts)
	require.NoError(t, err)
	exec1(t, c.URL(Database), "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)")
	if os.Geteuid() == 0 {
		fi, err := os.Stat(got)
		require.NoError(t, err)
		require.EqualValues(t, c.acct.uid, fi.Sys().(*syscall.Stat_t).Uid, "cluster folder owned by the server's user")
		require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
		origin, err := os.ReadFile(filepath.Join(got, originFile))
		require.NoError(t, err)
		require.Contains(t, string(origin), dir)
	}
	// A live cluster is not removed.
	require.ErrorIs(t, Remove(t.Context(), got), ErrInUse)
	require.NoError(t, c.Stop())

	// The cluster stays where it was made, even once the private folder
	// opens up, and keeps its data.
	require.NoError(t, os.Chmod(private, 0o755))
	again, err := Place(dir, po)
	require.NoError(t, err)
	require.Equal(t, got, again)
	c, err = Start(t.Context(), opts)
	require.NoError(t, err)
	require.Equal(t, 42, query[int](t, c.URL(Database), "SELECT v FROM kept"))
	require.NoError(t, c.Stop())

	require.NoError(t, Remove(t.Context(), got))
	require.NoDirExists(t, got)
	require.NoError(t, Remove(t.Context(), got), "nothing to remove")

	// With the private folder open and no cluster anywhere, the cluster
	// lives in the checkout.
	got, err = Place(dir, po)
	require.NoError(t, err)
	require.Equal(t, home, got)
}

func TestRemoveRefusesAFolderThatIsNotACluster(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600))
	require.ErrorContains(t, Remove(t.Context(), dir), "holds notes.txt, which no cluster folder holds")
	require.FileExists(t, filepath.Join(dir, "notes.txt"))
}

// TestAPersistentClusterAsksForAPassword: a persistent cluster lives on
// between commands (etl local up) on 127.0.0.1, which every user of the
// machine reaches: it refuses TCP connections without its password (kept
// in its folder, 0600, the same across restarts), and URL carries it. A
// cluster made before, whose pg_hba.conf trusts TCP, is secured at its
// next start.
func TestAPersistentClusterAsksForAPassword(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	dir := filepath.Join(root, "secured")
	opts := Options{Dir: dir, Persistent: true, TempRoot: root, Logger: testLogger(t)}
	c, err := Start(t.Context(), opts)
	require.NoError(t, err)
	require.Equal(t, 1, query[int](t, c.URL(Database), "SELECT 1"))
	bare := fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", Superuser, c.Port(), Database)
	_, err = pgx.Connect(t.Context(), bare)
	require.ErrorContains(t, err, "password", "no password, no connection")
	info, err := os.Stat(filepath.Join(dir, passwordName))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	first := c.URL(Database)
	require.NoError(t, c.Stop())

	// As a cluster of an older build: trusted TCP, no password file.
	hba := filepath.Join(dir, dataName, "pg_hba.conf")
	text, err := os.ReadFile(hba)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(hba, []byte(strings.ReplaceAll(string(text), "scram-sha-256", "trust")), 0o600))
	require.NoError(t, os.Remove(filepath.Join(dir, passwordName)))
	c, err = Start(t.Context(), opts)
	require.NoError(t, err)
	defer c.Stop()
	require.NotEqual(t, first, c.URL(Database), "a new password")
	require.Equal(t, 1, query[int](t, c.URL(Database), "SELECT 1"))
	bare = fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", Superuser, c.Port(), Database)
	_, err = pgx.Connect(t.Context(), bare)
	require.ErrorContains(t, err, "password")
}
