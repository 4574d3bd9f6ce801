package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/migrations"
)

// TestMigrateActions: up N, down N, goto V and force V each print what
// they applied or reverted, or "no change", then the version; a schema
// left dirty by a failed migration is recovered by fixing it and forcing
// the version it is at, as golang-migrate does.
func TestMigrateActions(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDB(t)
	env := map[string]string{"DATABASE_URL": dbURL}
	all := migrations.All()
	latest := migrations.Latest()
	require.Equal(t, all[len(all)-1].Version, latest)
	at := func(v uint, state string) string {
		return fmt.Sprintf("schema version %d of %d (%s)\n", v, latest, state)
	}
	names := func(prefix string, ms []migrations.Migration) string {
		var b strings.Builder
		for _, m := range ms {
			b.WriteString(prefix + " " + m.Name + "\n")
		}
		return b.String()
	}
	reversed := func(ms []migrations.Migration) []migrations.Migration {
		out := append([]migrations.Migration(nil), ms...)
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	migrate := func(want int, args ...string) string {
		t.Helper()
		r := etl(t, env, append([]string{"migrate"}, args...)...)
		require.Equal(t, want, r.code, "migrate %v: %s%s", args, r.stdout, r.stderr)
		return r.stdout + r.stderr
	}

	require.Equal(t, at(0, "clean"), migrate(exitOK, "version"))
	require.Equal(t, names("applied", all[:2])+at(all[1].Version, "clean"), migrate(exitOK, "up", "2"))
	require.Equal(t, names("applied", all[2:])+at(latest, "clean"), migrate(exitOK, "up"))
	require.Equal(t, "no change: "+at(latest, "clean"), migrate(exitOK, "up"))
	require.Equal(t, "no change: "+at(latest, "clean"), migrate(exitOK, "up", "1"))

	require.Contains(t, migrate(exitUsage, "down", "1"), "migrate down 1 reverts migrations, which may drop tables, columns and their data; pass --yes")
	n := len(all)
	require.Equal(t, names("reverted", all[n-1:])+at(all[n-2].Version, "clean"), migrate(exitOK, "down", "1", "--yes"))
	require.Equal(t, names("applied", all[n-1:])+at(latest, "clean"), migrate(exitOK, "goto", fmt.Sprint(latest)))
	// k is the index of 0011, which the dirty case below breaks: goto the
	// version before it, found by name so that newer migrations do not move it.
	k := slices.IndexFunc(all, func(m migrations.Migration) bool { return m.Name == "0011_run_tables" })
	require.GreaterOrEqual(t, k, 1, "the test breaks migration 0011")
	require.Less(t, k, n-1, "goto reverts two migrations or more")
	require.Contains(t, migrate(exitUsage, "goto", fmt.Sprint(all[k-1].Version)), "pass --yes to confirm")
	require.Equal(t, names("reverted", reversed(all[k:]))+at(all[k-1].Version, "clean"),
		migrate(exitOK, "goto", fmt.Sprint(all[k-1].Version), "--yes"))
	require.Contains(t, migrate(exitUsage, "goto", fmt.Sprint(latest+1)), fmt.Sprintf("V must be 0 or the version of a migration of this build (1 to %d)", latest))
	require.Contains(t, migrate(exitUsage, "up", "0"), "N must be a whole number of migrations, at least 1")
	require.Contains(t, migrate(exitUsage), "etl migrate needs an action")

	// A failed migration leaves the schema dirty: 0011 adds task_checkpoints.table_name,
	// which is made to exist already.
	exec := func(sql string) {
		conn, err := pgx.Connect(t.Context(), dbURL)
		require.NoError(t, err)
		defer conn.Close(context.Background())
		_, err = conn.Exec(t.Context(), sql)
		require.NoError(t, err)
	}
	exec(`ALTER TABLE task_checkpoints ADD COLUMN table_name text`)
	out := migrate(exitFailed, "up")
	require.Contains(t, out, "migrations: up on database")
	require.Contains(t, out, `column "table_name" of relation "task_checkpoints" already exists`)
	dirty := fmt.Sprintf("dirty: migration %d failed midway; fix the database by hand, then etl migrate force V (see etl migrate --help)", all[k].Version)
	require.Equal(t, at(all[k].Version, dirty), migrate(exitOK, "version"))
	require.Contains(t, migrate(exitFailed, "up"), "failed midway earlier and the schema is dirty: fix the database by hand, then force the version it is at (etl migrate force V")

	// The migration took no effect (one transaction): undo what broke it,
	// force the version before it, and go on.
	exec(`ALTER TABLE task_checkpoints DROP COLUMN table_name`)
	require.Equal(t, fmt.Sprintf("forced: version %d recorded as applied and clean, no migration run (it was %d)\n", all[k-1].Version, all[k].Version)+
		at(all[k-1].Version, "clean"), migrate(exitOK, "force", fmt.Sprint(all[k-1].Version)))
	require.Equal(t, names("applied", all[k:])+at(latest, "clean"), migrate(exitOK, "up"))

	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(migrate(exitOK, "version", "--json")), &doc))
	require.Equal(t, map[string]any{"from": float64(latest), "to": float64(latest), "dirty": false, "applied": []any{}, "reverted": []any{},
		"latest": float64(latest)}, doc)
	require.NoError(t, json.Unmarshal([]byte(migrate(exitOK, "down", "1", "--yes", "--json")), &doc))
	require.Equal(t, []any{map[string]any{"version": float64(latest), "name": all[n-1].Name}}, doc["reverted"])
}
