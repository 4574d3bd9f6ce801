package pipeline_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/internal/testworld"
)

// TestRunSendsOneCommandPerStatement: every statement a run of the
// example job sends (its job lock, run records, checkpoints, budget and
// ledger, the loader's pages of every endpoint, first loads and, in the
// second run, compares and updates) is one SQL command, as PostgreSQL's
// parser counts them: Citus refuses several commands in one call.
func TestRunSendsOneCommandPerStatement(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg, err := pgxpool.ParseConfig(f.DBURL)
	require.NoError(t, err)
	stmts := &pgtest.Statements{}
	cfg.ConnConfig.Tracer = stmts
	f.Pool, err = pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(f.Pool.Close)

	spec := testworld.ExampleSpec(t)
	sum := f.Run(t, spec, runNow)
	require.Zero(t, sum.Failed())
	// A day later the held data is stale (max_age 20h): bought again and
	// compared with what the tables hold.
	sum = f.Run(t, spec, runNow.Add(24*time.Hour))
	require.Zero(t, sum.Failed())
	_, tables := sum.Tables()
	require.Positive(t, tables["keyword_metrics"].Unchanged+tables["keyword_metrics"].Updated, "compared with what the table held")
	require.Positive(t, tables["backlinks"].Unchanged+tables["backlinks"].Updated, "compared with what the table held")
	require.Positive(t, f.Count(t, `SELECT count(*) FROM keyword_metrics`))
	pgtest.RequireOneCommandEach(t, f.Pool, stmts.All())
}
