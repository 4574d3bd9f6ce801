package migrations_test

import (
	"context"
	"io/fs"
	"net"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// latest is the highest version among the migration files.
func latest(t *testing.T) uint {
	t.Helper()
	names, err := fs.Glob(os.DirFS("."), "*.up.sql")
	require.NoError(t, err)
	require.NotEmpty(t, names)
	var v uint
	for _, n := range names {
		m := regexp.MustCompile(`^([0-9]+)_`).FindStringSubmatch(n)
		require.NotNil(t, m, "migration file %s is not named NNNN_name.up.sql", n)
		n, err := strconv.ParseUint(m[1], 10, 32)
		require.NoError(t, err)
		v = max(v, uint(n))
	}
	return v
}

// ourObjects lists what the migrations may have left in a database beyond
// golang-migrate's own table: relations, schemas, types and functions.
func ourObjects(t *testing.T, url string) []string {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `
		SELECT 'relation ' || c.oid::regclass::text
		  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
		   AND c.relname NOT IN ('schema_migrations', 'schema_migrations_pkey')
		UNION ALL
		SELECT 'schema ' || nspname FROM pg_namespace
		 WHERE nspname NOT IN ('public', 'pg_catalog', 'information_schema', 'pg_toast')
		   AND nspname NOT LIKE 'pg_temp_%' AND nspname NOT LIKE 'pg_toast_temp_%'
		UNION ALL
		SELECT 'type ' || t.oid::regtype::text
		  FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
		 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
		   AND t.typtype IN ('e', 'd', 'r', 'm')
		UNION ALL
		SELECT 'function ' || p.oid::regprocedure::text
		  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
		ORDER BY 1`)
	require.NoError(t, err)
	objects, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return objects
}

func TestUpDownUp(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewEmptyDB(t)
	want := latest(t)

	v, dirty, err := migrations.Version(ctx, url)
	require.NoError(t, err)
	require.Zero(t, v, "fresh database")
	require.False(t, dirty)
	require.Empty(t, ourObjects(t, url))

	require.NoError(t, migrations.Up(ctx, url))
	v, dirty, err = migrations.Version(ctx, url)
	require.NoError(t, err)
	require.Equal(t, want, v)
	require.False(t, dirty)
	require.NotEmpty(t, ourObjects(t, url))
	require.NoError(t, migrations.Up(ctx, url), "Up on an up-to-date database is no error")

	require.NoError(t, migrations.Down(ctx, url))
	v, dirty, err = migrations.Version(ctx, url)
	require.NoError(t, err)
	require.Zero(t, v)
	require.False(t, dirty)
	require.Empty(t, ourObjects(t, url), "Down leaves nothing of ours behind")
	require.NoError(t, migrations.Down(ctx, url), "Down with nothing applied is no error")

	require.NoError(t, migrations.Up(ctx, url), "Up again after Down")
	v, _, err = migrations.Version(ctx, url)
	require.NoError(t, err)
	require.Equal(t, want, v)
}

func TestURLForms(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyDB(t)
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	for _, tc := range []struct{ name, url string }{
		{"postgres", url},
		{"postgresql", "postgresql" + url[len("postgres"):]},
		{"pgx5 with golang-migrate parameter", "pgx5" + url[len("postgres"):] + "&x-multi-statement=true"},
		{"keyword/value", "host=" + cfg.Host + " port=" + strconv.Itoa(int(cfg.Port)) + " user=" + cfg.User + " dbname=" + cfg.Database + " sslmode=disable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := migrations.Version(t.Context(), tc.url)
			require.NoError(t, err)
		})
	}
}

func TestErrorsHidePassword(t *testing.T) {
	t.Parallel()
	// A port nobody listens on: the connection is refused at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	for _, url := range []string{
		"postgres://etl:hunter2secret@" + addr + "/etl?sslmode=disable",
		"postgres://etl:hunter2secret@" + addr + "/etl?sslmode=disable&connect_timeout=nonsense",
		"host=127.0.0.1 port=1 user=etl password=hunter2secret dbname=etl sslmode=disable",
		"mysql://etl:hunter2secret@" + addr + "/etl",
		"postgres://etl:hunter2secret@" + addr + "/%zz",
	} {
		for name, call := range map[string]func() error{
			"up":      func() error { return migrations.Up(t.Context(), url) },
			"down":    func() error { return migrations.Down(t.Context(), url) },
			"version": func() error { _, _, err := migrations.Version(t.Context(), url); return err },
		} {
			err := call()
			require.Error(t, err, "%s %s", name, url)
			require.NotContains(t, err.Error(), "hunter2secret")
		}
	}
}

func TestCanceledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := migrations.Up(ctx, pgtest.NewEmptyDB(t))
	require.ErrorIs(t, err, context.Canceled)
}

// TestRunDetailDownKeepsClosedMonths: after keep_run_detail
// compacted runs, task_closed_months alone says which months of summary
// history were fetched after they ended (the checkpoints that said so are
// gone): migration 0021 down would drop it, and etl before 0021 would buy
// those months again. It refuses, saying so, and changes nothing.
func TestRunDetailDownKeepsClosedMonths(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewEmptyDB(t)
	_, err := migrations.Goto(ctx, url, 21)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, `INSERT INTO task_closed_months (task, month, run_id) VALUES ('summary|example.com', '2026-09-01', 1)`)
	require.NoError(t, err)

	_, err = migrations.Goto(ctx, url, 20)
	require.ErrorContains(t, err, "task_closed_months holds 1 month of summary history that runs compacted by keep_run_detail fetched after it ended; etl before 0021 would buy it again")
	t.Log(err)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM task_closed_months`).Scan(&n))
	require.Equal(t, 1, n, "nothing changed")

	// Emptied by hand (accepting that those months are bought again), it
	// goes down.
	_, err = conn.Exec(ctx, `DELETE FROM task_closed_months`)
	require.NoError(t, err)
	_, err = migrations.Force(ctx, url, 21)
	require.NoError(t, err)
	_, err = migrations.Goto(ctx, url, 20)
	require.NoError(t, err)
}
