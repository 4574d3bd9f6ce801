package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/migrations"
)

func TestMain(m *testing.M) { Main(m) }

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, conn.Close(context.Background())) })
	return conn
}

func TestNewDBGivesIndependentMigratedDatabases(t *testing.T) {
	t.Parallel()
	a, b := NewDB(t), NewDB(t)
	require.NotEqual(t, a, b)

	for _, u := range []string{a, b} {
		version, dirty, err := migrations.Version(t.Context(), u)
		require.NoError(t, err)
		require.False(t, dirty)
		require.Positive(t, version, "the template is migrated")
	}

	ca, cb := connect(t, a), connect(t, b)
	_, err := ca.Exec(t.Context(), "CREATE TABLE probe (v int); INSERT INTO probe VALUES (1)")
	require.NoError(t, err)
	var exists bool
	require.NoError(t, cb.QueryRow(t.Context(), "SELECT to_regclass('probe') IS NOT NULL").Scan(&exists))
	require.False(t, exists, "a table made in one database is not in the other")
}

func TestParallelClones(t *testing.T) {
	t.Parallel()
	for i := range 6 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			pool := NewPool(t)
			var name string
			require.NoError(t, pool.QueryRow(t.Context(), "SELECT current_database()").Scan(&name))
			require.True(t, strings.HasPrefix(name, "etl_t_testparallelclones_"+strconv.Itoa(i)+"_"), name)
		})
	}
}

func TestNewEmptyDB(t *testing.T) {
	t.Parallel()
	version, dirty, err := migrations.Version(t.Context(), NewEmptyDB(t))
	require.NoError(t, err)
	require.False(t, dirty)
	require.Zero(t, version)
}

func TestDatabaseDroppedAfterTest(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("inner", func(t *testing.T) {
		u := NewDB(t)
		parsed, err := url.Parse(u)
		require.NoError(t, err)
		name = strings.TrimPrefix(parsed.Path, "/")
		conn, err := pgx.Connect(t.Context(), u)
		require.NoError(t, err)
		// Left open on purpose: dropping the database ends the session.
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
	})
	admin := connect(t, current.Load().server.String())
	var n int
	require.NoError(t, admin.QueryRow(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n))
	require.Zero(t, n, "database %s dropped", name)
}

func TestTemplateRefusesConnections(t *testing.T) {
	t.Parallel()
	h := current.Load()
	_, err := pgx.Connect(t.Context(), h.url(h.template))
	require.ErrorContains(t, err, "is not currently accepting connections")
}

func TestDBName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, test, prefix string }{
		{"plain", "TestX", "etl_t_testx_"},
		{"subtest", "TestX/Case_One", "etl_t_testx_case_one_"},
		{"long", "Test" + strings.Repeat("Y", 100), "etl_t_test" + strings.Repeat("y", 36) + "_"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := dbName(tc.test)
			require.True(t, strings.HasPrefix(got, tc.prefix), got)
			require.LessOrEqual(t, len(got), 63)
		})
	}
}

// blockEnv makes TestBlockForInterrupt, in a child test binary, print its
// cluster folder and postmaster pid, then block until stdin closes.
const blockEnv = "ETL_PGTEST_BLOCK"

func TestBlockForInterrupt(t *testing.T) {
	if os.Getenv(blockEnv) == "" {
		t.Skip("helper for TestInterruptRemovesCluster")
	}
	c := current.Load().cluster
	b, err := os.ReadFile(filepath.Join(c.Dir(), "data", "postmaster.pid"))
	require.NoError(t, err)
	fmt.Printf("%s %s\n", c.Dir(), strings.SplitN(string(b), "\n", 2)[0])
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}

func TestInterruptRemovesCluster(t *testing.T) {
	t.Parallel()
	if os.Getenv(envDatabaseURL) != "" {
		t.Skip("no cluster with " + envDatabaseURL)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBlockForInterrupt$", "-test.v")
	cmd.Env = append(os.Environ(), blockEnv+"=1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, childStdout, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout = childStdout
	require.NoError(t, cmd.Start())
	require.NoError(t, childStdout.Close())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = stdout.Close()
	})

	var dir string
	var pid int
	r := bufio.NewReader(stdout)
	for dir == "" {
		line, err := r.ReadString('\n')
		require.NoError(t, err, "the child did not report its cluster")
		if strings.HasPrefix(line, "/") {
			_, err = fmt.Sscanf(line, "%s %d", &dir, &pid)
			require.NoError(t, err)
		}
	}
	require.DirExists(t, dir)
	require.NoError(t, syscall.Kill(pid, 0), "postmaster running")

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	_, err = r.WriteTo(io.Discard) // the rest of its output, until it exits
	require.NoError(t, err)
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 1, exit.ExitCode())
	require.NoDirExists(t, dir, "the cluster folder is removed on interrupt")
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the postmaster is gone")
}
