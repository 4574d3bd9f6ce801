package pipeline_test

import (
	"errors"
	"os"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/sandbox"
)

var sqlBlock = regexp.MustCompile("(?s)```sql\n(.*?)```")

// TestWarehouseGuideQueries runs every query of docs/warehouse.md, as the
// read-only analyst role, against a warehouse loaded from the sandbox: each
// runs and finds rows. The role cannot write.
func TestWarehouseGuideQueries(t *testing.T) {
	t.Parallel()
	guide, err := os.ReadFile("../docs/warehouse.md")
	require.NoError(t, err)
	blocks := sqlBlock.FindAllStringSubmatch(string(guide), -1)
	require.GreaterOrEqual(t, len(blocks), 10, "the guide has at least ten example queries")

	// A few malformed rows, so the quarantine query has something to show.
	f := newFixtureFaults(t, nil, sandbox.Faults{Malformed: 0.01})
	sum, err := f.tryRun(t, `jobs:
  - name: guide
    targets:
      - {url: n240.example, scope: ROOT_DOMAIN}
      - {url: n300.example, scope: ROOT_DOMAIN}
    target_sets:
      - {name: rivals, scope: ROOT_DOMAIN, urls: [n240.example, n300.example, example.com]}
    endpoints:
      overview: {}
      summary: {limit: 6}
      links: {limit: 500}
      ref-domains: {limit: 500}
      ref-ips: {limit: 500}
      pages: {limit: 500}
      anchors: {limit: 500}
      score-profile: {}
      competitors: {limit: 50}
      comparison: {}
      matrix: {limit: 500}
    keywords: {keywords: [seo tools, backlink checker], countries: [US, DE], months: [2026-09, 2026-10, 2026-11]}
`, runNow)
	require.NoError(t, err)
	require.Zero(t, sum.Failed())

	for _, b := range blocks {
		query := b[1]
		err := pgx.BeginFunc(t.Context(), f.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE etl_analyst"); err != nil {
				return err
			}
			rows, err := tx.Query(t.Context(), query)
			if err != nil {
				return err
			}
			n := 0
			for rows.Next() {
				n++
			}
			if err := rows.Err(); err != nil {
				return err
			}
			require.Positive(t, n, "the guide's query finds no rows:\n%s", query)
			return nil
		})
		require.NoError(t, err, "the guide's query fails:\n%s", query)
	}

	err = pgx.BeginFunc(t.Context(), f.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE etl_analyst"); err != nil {
			return err
		}
		_, err := tx.Exec(t.Context(), "DELETE FROM backlinks")
		return err
	})
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "the analyst role deleted rows: %v", err)
	require.Equal(t, "42501", pgErr.Code, "insufficient privilege")
}
