package migrations_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/migrations"
)

// unionBranch splits a view's definition at each UNION; tableFunction
// finds a function called where a branch names what it reads from.
var (
	unionBranch   = regexp.MustCompile(`(?i)\bUNION(\s+ALL)?\b`)
	tableFunction = regexp.MustCompile(`(?i)\b(FROM|JOIN)\s+(LATERAL\s+)?[a-z_][a-z0-9_.]*\s*\(`)
)

// TestViewsHaveNoTableFunctionInUnion: no view of the schema reads a
// table function in a query with UNION, which Citus refuses ("Table
// functions are not supported with union operator"); the *_latest views
// of 0016 did.
func TestViewsHaveNoTableFunctionInUnion(t *testing.T) {
	t.Parallel()
	views := viewDefinitions(t, pgtest.NewDB(t))
	require.Contains(t, views, "backlinks_latest")
	for name, def := range views {
		require.False(t, tableFunctionInUnion(def), "the view %s reads a table function in a query with UNION:\n%s", name, def)
	}

	// The check finds the views of 0016 to 0022.
	old := pgtest.NewDB(t)
	_, err := migrations.Goto(t.Context(), old, 20)
	require.NoError(t, err)
	require.True(t, tableFunctionInUnion(viewDefinitions(t, old)["backlinks_latest"]))
}

func tableFunctionInUnion(def string) bool {
	return unionBranch.MatchString(def) && tableFunction.MatchString(def)
}

// viewDefinitions returns the definition of each view of the database.
func viewDefinitions(t *testing.T, dbURL string) map[string]string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	defer conn.Close(context.WithoutCancel(t.Context()))
	rows, err := conn.Query(t.Context(), `
		SELECT c.relname, pg_get_viewdef(c.oid) FROM pg_class c
		WHERE c.relkind = 'v' AND c.relnamespace = 'public'::regnamespace ORDER BY 1`)
	require.NoError(t, err)
	views := map[string]string{}
	var name, def string
	_, err = pgx.ForEachRow(rows, []any{&name, &def}, func() error { views[name] = def; return nil })
	require.NoError(t, err)
	return views
}
