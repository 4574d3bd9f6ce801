package pgtest

import (
	"bufio"
	"context"
	"encoding/json"
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

// blockEnv makes TestBlockForInterrupt, in a child test binary, make a test
// database, report what an interrupt must remove, then block until stdin
// closes.
const blockEnv = "ETL_PGTEST_BLOCK"

func TestBlockForInterrupt(t *testing.T) {
	if os.Getenv(blockEnv) == "" {
		t.Skip("helper for TestInterruptRemovesEverything")
	}
	db, err := url.Parse(NewDB(t))
	require.NoError(t, err)
	h := current.Load()
	report := interruptReport{Databases: []string{h.template, strings.TrimPrefix(db.Path, "/")}}
	if h.cluster != nil {
		report.Dir = h.cluster.Dir()
		b, err := os.ReadFile(filepath.Join(report.Dir, "data", "postmaster.pid"))
		require.NoError(t, err)
		report.PID, err = strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
		require.NoError(t, err)
	}
	out, err := json.Marshal(report)
	require.NoError(t, err)
	fmt.Printf("REPORT %s\n", out)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}

type interruptReport struct {
	Databases []string // on the TEST_DATABASE_URL server
	Dir       string   // cluster folder
	PID       int      // postmaster
}

func TestInterruptRemovesEverything(t *testing.T) {
	t.Parallel()
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

	var report interruptReport
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err, "the child did not report")
		if rest, ok := strings.CutPrefix(line, "REPORT "); ok {
			require.NoError(t, json.Unmarshal([]byte(rest), &report))
			break
		}
	}
	external := os.Getenv(envDatabaseURL) != ""
	if !external {
		require.DirExists(t, report.Dir)
		require.NoError(t, syscall.Kill(report.PID, 0), "postmaster running")
	}

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	_, err = r.WriteTo(io.Discard) // the rest of its output, until it exits
	require.NoError(t, err)
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 1, exit.ExitCode())

	if external {
		admin := connect(t, current.Load().server.String())
		var n int
		require.NoError(t, admin.QueryRow(t.Context(), "SELECT count(*) FROM pg_database WHERE datname = ANY($1)", report.Databases).Scan(&n))
		require.Zero(t, n, "databases %v dropped on interrupt", report.Databases)
		return
	}
	require.NoDirExists(t, report.Dir, "the cluster folder is removed on interrupt")
	require.ErrorIs(t, syscall.Kill(report.PID, 0), syscall.ESRCH, "the postmaster is gone")
}
