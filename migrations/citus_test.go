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

// unionBranch finds each UNION of a view's definition; tableFunction
// finds a function called where a query names what it reads from.
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

// tableFunctionInUnion reports whether a branch of a UNION in def (a
// view's definition, as pg_get_viewdef gives it) reads a function: the
// text from the UNION back to the parenthesis that opens the query it
// belongs to, or on to the one that closes it (or the definition's ends).
func tableFunctionInUnion(def string) bool {
	for _, u := range unionBranch.FindAllStringIndex(def, -1) {
		if tableFunction.MatchString(branch(def, u[0], -1)) || tableFunction.MatchString(branch(def, u[1], 1)) {
			return true
		}
	}
	return false
}

// branch is the text of def from i in direction dir (-1 back, 1 on) up to
// the parenthesis that encloses i, or the end of def.
func branch(def string, i, dir int) string {
	depth := 0
	j := i
	for ; j >= 0 && j < len(def); j += dir {
		switch def[j] {
		case '(':
			depth += dir
		case ')':
			depth -= dir
		}
		if depth < 0 {
			break
		}
	}
	if dir < 0 {
		return def[max(j+1, 0):i]
	}
	return def[i:min(j, len(def))]
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
