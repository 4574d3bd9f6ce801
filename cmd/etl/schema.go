package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/migrations"
)

// checkSchema says, before a command reads or writes the warehouse, whether
// its schema is the one this build needs: every command on a database
// that is not migrated, or migrated by an older build, says to run `etl
// migrate up` instead of failing later on a missing table or column.
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	want := migrations.Latest()
	var version int64
	var dirty bool
	err := pool.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations LIMIT 1`).Scan(&version, &dirty)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42P01", errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: it has no etl schema yet (this build needs version %d)", migrations.ErrNotMigrated, want)
	case errors.As(err, &pgErr) && pgErr.Code == "42501":
		// The role may not read the etl schema at all: it is neither
		// the owner's nor granted etl_analyst, which reads every table
		// (the readers, etl report and etl runs, act as it).
		return errors.New("the database role may not read the etl schema (its table schema_migrations): GRANT etl_analyst TO your role to read the warehouse (etl report, etl runs); etl run, schedule and migrate need the role that owns it")
	case err != nil:
		return fmt.Errorf("connecting to the database: %w", err)
	case dirty:
		return fmt.Errorf("the database's schema is dirty at version %d: %s", version, migrations.Recovery(uint(version)))
	case version < int64(want):
		return fmt.Errorf("%w: it is at schema version %d, this build needs %d", migrations.ErrNotMigrated, version, want)
	case version > int64(want):
		return fmt.Errorf("the database is at schema version %d, newer than this build knows (%d): use the etl build that migrated it, or a newer one", version, want)
	}
	return nil
}
