package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

//go:embed *.sql
var files embed.FS

// Up applies every migration not yet applied. A database already up to date
// is not an error.
func Up(ctx context.Context, databaseURL string) error {
	return run(ctx, "up", databaseURL, (*migrate.Migrate).Up)
}

// Down reverts every applied migration, which drops every warehouse table
// and its data. A database with nothing applied is not an error.
func Down(ctx context.Context, databaseURL string) error {
	return run(ctx, "down", databaseURL, (*migrate.Migrate).Down)
}

// Version returns the version of the last migration applied, 0 when none is,
// and whether that migration failed midway (dirty), in which case the
// database needs fixing by hand before Up or Down run again.
func Version(ctx context.Context, databaseURL string) (version uint, dirty bool, err error) {
	m, where, err := open(ctx, databaseURL)
	if err != nil {
		return 0, false, err
	}
	defer func() { err = errors.Join(err, closeMigrate(m, where)) }()
	version, dirty, err = m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("migrations: reading the version of %s: %w", where, err)
	}
	return version, dirty, nil
}

// run opens a migrate instance, runs step and closes the instance. When ctx
// ends, step stops after the migration it is running (golang-migrate's
// graceful stop: a migration statement in flight is not interrupted) and run
// returns ctx's error.
func run(ctx context.Context, name, databaseURL string, step func(*migrate.Migrate) error) (err error) {
	m, where, err := open(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeMigrate(m, where)) }()
	stop := context.AfterFunc(ctx, func() { m.GracefulStop <- true })
	err = step(m)
	stop()
	switch {
	case errors.Is(err, migrate.ErrNoChange):
		err = nil
	case errors.Is(err, fs.ErrNotExist):
		// The database's version has no file here: it was migrated by a
		// newer build, or a migration file was renamed.
		return fmt.Errorf("migrations: %s on %s: the database is at a version this build has no migration for: %w", name, where, err)
	case err != nil:
		return fmt.Errorf("migrations: %s on %s: %w", name, where, err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("migrations: %s on %s stopped before the end: %w", name, where, context.Cause(ctx))
	}
	return nil
}

// open connects to the database and returns a migrate instance over the
// embedded files, and a description of the database for errors (never the
// password). The connection honours ctx; golang-migrate's own calls do not
// take one.
func open(ctx context.Context, databaseURL string) (*migrate.Migrate, string, error) {
	connString, err := connString(databaseURL)
	if err != nil {
		return nil, "the database", fmt.Errorf("migrations: %w", err)
	}
	cfg, err := pgx.ParseConfig(connString) // its errors hide the password
	if err != nil {
		return nil, "the database", fmt.Errorf("migrations: %w", err)
	}
	where := fmt.Sprintf("database %q at %s:%d", cfg.Database, cfg.Host, cfg.Port)
	db := stdlib.OpenDB(*cfg)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, where, fmt.Errorf("migrations: connecting to %s: %w", where, err)
	}
	m, err := newMigrate(db)
	if err != nil {
		db.Close()
		return nil, where, fmt.Errorf("migrations: opening %s: %w", where, err)
	}
	return m, where, nil
}

func newMigrate(db *sql.DB) (*migrate.Migrate, error) {
	src, err := iofs.New(files, ".")
	if err != nil {
		return nil, fmt.Errorf("reading the embedded migrations: %w", err)
	}
	drv, err := pgxmigrate.WithInstance(db, &pgxmigrate.Config{})
	if err != nil {
		src.Close()
		return nil, err
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		src.Close()
		drv.Close()
		return nil, err
	}
	return m, nil
}

// closeMigrate closes the source and the database connections of m.
func closeMigrate(m *migrate.Migrate, where string) error {
	srcErr, dbErr := m.Close()
	if err := errors.Join(srcErr, dbErr); err != nil {
		return fmt.Errorf("migrations: closing the connection to %s: %w", where, err)
	}
	return nil
}

// connString turns what users call a database URL into a pgx connection
// string: a postgres:// or postgresql:// URL, golang-migrate's pgx5:// (or
// pgx://) spelling of one, or a keyword/value string ("host=... dbname=...").
// golang-migrate's own x-... query parameters are dropped, since pgx would
// send them to the server as settings.
func connString(databaseURL string) (string, error) {
	scheme, _, ok := strings.Cut(databaseURL, "://")
	if !ok {
		return databaseURL, nil // keyword/value form
	}
	switch scheme {
	case "postgres", "postgresql", "pgx5", "pgx":
	default:
		return "", fmt.Errorf("database URL scheme %q is not PostgreSQL (want postgres://)", scheme)
	}
	u, err := url.Parse(databaseURL)
	if err != nil {
		// url.Error quotes the URL: say what is wrong without it.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("parsing the database URL: %w", err)
	}
	u.Scheme = "postgres"
	return migrate.FilterCustomQuery(u).String(), nil
}

// Latest is the version of the newest embedded migration: the schema
// this build needs.
func Latest() uint {
	names, _ := fs.Glob(files, "*.up.sql")
	var v uint
	for _, n := range names {
		num, _, _ := strings.Cut(n, "_")
		var x uint
		if _, err := fmt.Sscanf(num, "%d", &x); err == nil {
			v = max(v, x)
		}
	}
	return v
}
