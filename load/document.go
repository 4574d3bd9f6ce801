package load

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
)

// Document writes COMMENT ON for every fact table that exists and each of its
// columns, from the endpoint catalog (the spec's meanings), so analysts read
// the documentation in their SQL client. It is idempotent; `etl migrate up`
// runs it after the migrations.
//
// The comments are sent one statement per call (Citus refuses several
// commands in one), in one transaction.
func Document(ctx context.Context, pool *pgxpool.Pool) error {
	var sql []string
	for _, ep := range catalog.All() {
		var exists bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{ep.Table}.Sanitize()).Scan(&exists); err != nil {
			return fmt.Errorf("load: documenting %s: %w", ep.Table, err)
		}
		if !exists {
			continue
		}
		table := pgx.Identifier{ep.Table}.Sanitize()
		sql = append(sql, fmt.Sprintf("COMMENT ON TABLE %s IS %s", table, literal(tableDoc(ep))))
		for _, c := range Columns(ep) {
			sql = append(sql, fmt.Sprintf("COMMENT ON COLUMN %s.%s IS %s", table, pgx.Identifier{c.Name}.Sanitize(), literal(c.Doc)))
		}
		if RowKey(ep) {
			sql = append(sql, fmt.Sprintf("COMMENT ON COLUMN %s.%s IS %s", table, colRowKey, literal(fmt.Sprintf(
				"md5 of the natural key (%s), generated: the primary key holds it instead of long text", strings.Join(ep.Key, ", ")))))
		}
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, s := range sql {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load: documenting tables: %w", err)
	}
	return nil
}

func tableDoc(ep *catalog.Endpoint) string {
	return fmt.Sprintf("%s Source: GET %s (%s, priced %s). Key: (%s). Partitioned by %s.",
		ep.Doc, ep.Path, ep.Name, ep.Price, strings.Join(NaturalKey(ep), ", "), LayoutOf(ep))
}

// literal quotes s as an SQL string literal (COMMENT takes no parameters).
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
