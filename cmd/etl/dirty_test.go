package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/migrations"
)

// TestDirtyAtARerunnableMigration: a schema left dirty by migration 16,
// which goes on where it stopped when run again, is met with the two
// commands that finish it, by etl migrate version and up and by a
// command that needs the schema; not "fix the database by hand", nor
// "force 16 (the version it reached)", which would record a layout half
// moved as done.
func TestDirtyAtARerunnableMigration(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDB(t)
	conn, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), `UPDATE schema_migrations SET version = 16, dirty = true`)
	require.NoError(t, err)
	env := map[string]string{"DATABASE_URL": dbURL, "ETL_API_URL": "http://127.0.0.1:1", "ETL_API_KEY": "k"}
	const how = "migration 16 stopped midway; it goes on where it stopped when run again: etl migrate force 15, then etl migrate up"

	r := etl(t, env, "migrate", "version")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Contains(t, r.stdout, "schema version 16 of")
	require.Contains(t, r.stdout, "(dirty: "+how+")")
	r = etl(t, env, "migrate", "up")
	require.Equal(t, exitFailed, r.code)
	require.Contains(t, r.stderr, how)

	jobs := filepath.Join(t.TempDir(), "jobs.yaml")
	require.NoError(t, os.WriteFile(jobs, []byte("jobs:\n  - name: a\n    targets: [{url: a.example, scope: ROOT_DOMAIN}]\n    endpoints: {overview: {}}\n"), 0o600))
	r = etl(t, env, "run", "--jobs", jobs, "--job", "a")
	require.NotEqual(t, exitOK, r.code)
	require.Contains(t, r.stderr, how)
	require.NotContains(t, r.stderr, "the version it reached")
}

// TestAFailedMigrationIsNotApplied: a migration that fails is not listed
// as applied, and its error is one line that names it, with no line of
// its file when the server names none (not "line 1").
func TestAFailedMigrationIsNotApplied(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDB(t)
	env := map[string]string{"DATABASE_URL": dbURL}
	r := etl(t, env, "migrate", "goto", "10")
	require.Equal(t, exitOK, r.code, r.stderr)
	conn, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), `ALTER TABLE task_checkpoints ADD COLUMN table_name text`)
	require.NoError(t, err)
	r = etl(t, env, "migrate", "up")
	require.Equal(t, exitFailed, r.code)
	require.Equal(t, fmt.Sprintf("schema version 11 of %d (dirty: migration 11 failed midway; fix the database by hand, then etl migrate force V (see etl migrate --help))\n", migrations.Latest()), r.stdout,
		"nothing applied")
	require.Contains(t, r.stderr, `migration 11 (0011_run_tables) failed: ERROR: column "table_name" of relation "task_checkpoints" already exists (SQLSTATE 42701)`)
}
