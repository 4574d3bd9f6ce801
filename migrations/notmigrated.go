package migrations

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNotMigrated says the warehouse lacks the tables of this build; `etl
// migrate up` adds them.
var ErrNotMigrated = errors.New("the database is not migrated to this build's schema (run `etl migrate up`)")

// NotMigrated turns PostgreSQL's undefined table or column (a warehouse
// of an older schema) into ErrNotMigrated; other errors pass unchanged.
func NotMigrated(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "42703") {
		return fmt.Errorf("%w: %s", ErrNotMigrated, pgErr.Message)
	}
	return err
}
