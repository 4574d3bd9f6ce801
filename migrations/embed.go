package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

//go:embed *.sql
var files embed.FS

// Up applies every migration not yet applied. A database already up to date
// is not an error.
func Up(ctx context.Context, databaseURL string) error {
	_, err := UpBy(ctx, databaseURL, 0)
	return err
}

// Down reverts every applied migration, which drops every warehouse table
// and its data. A database with nothing applied is not an error.
func Down(ctx context.Context, databaseURL string) error {
	_, err := DownBy(ctx, databaseURL, 0)
	return err
}

// Migration names one migration of this build: its version and its name
// ("0011_run_tables", the file name without .up.sql).
type Migration struct {
	Version uint   `json:"version"`
	Name    string `json:"name"`
}

// Change says what a migration command did. From and To are the versions
// before and after (0: none applied); Dirty says the migration at To
// failed midway. Applied lists the migrations run up, Reverted those run
// down, in the order they ran; both are empty when nothing changed.
type Change struct {
	From     uint        `json:"from"`
	To       uint        `json:"to"`
	Dirty    bool        `json:"dirty"`
	Applied  []Migration `json:"applied"`
	Reverted []Migration `json:"reverted"`
	// Unknown says the version after could not be read (the connection
	// to the database was lost): To and Dirty mean nothing.
	Unknown bool `json:"unknown,omitempty"`
}

// None says that nothing changed.
func (c Change) None() bool { return c.From == c.To && len(c.Applied) == 0 && len(c.Reverted) == 0 }

// All lists the migrations of this build, oldest first.
func All() []Migration {
	names, err := fs.Glob(files, "*.up.sql")
	if err != nil {
		panic(err) // a fixed pattern
	}
	var out []Migration
	for _, n := range names {
		num, _, _ := strings.Cut(n, "_")
		v, err := strconv.ParseUint(num, 10, 32)
		if err != nil {
			panic(fmt.Sprintf("migrations: %s is not named NNNN_name.up.sql", n))
		}
		out = append(out, Migration{Version: uint(v), Name: strings.TrimSuffix(n, ".up.sql")})
	}
	slices.SortFunc(out, func(a, b Migration) int { return int(a.Version) - int(b.Version) })
	return out
}

// Latest is the version of this build's newest migration.
func Latest() uint {
	all := All()
	return all[len(all)-1].Version
}

// known says whether v is 0 or the version of a migration of this build.
func known(v uint) bool {
	return v == 0 || slices.ContainsFunc(All(), func(m Migration) bool { return m.Version == v })
}

// UpBy applies the next n migrations not yet applied (n <= 0: all of
// them). Fewer than n left is not an error: they are applied. Nothing left
// is no change, not an error.
func UpBy(ctx context.Context, databaseURL string, n int) (Change, error) {
	return change(ctx, "up", databaseURL, func(m *migrate.Migrate, _ uint) error {
		if n <= 0 {
			return m.Up()
		}
		return m.Steps(n)
	})
}

// DownBy reverts the last n applied migrations (n <= 0: all of them, which
// drops every warehouse table and its data). Fewer than n applied is not
// an error: they are reverted. None applied is no change.
func DownBy(ctx context.Context, databaseURL string, n int) (Change, error) {
	return change(ctx, "down", databaseURL, func(m *migrate.Migrate, _ uint) error {
		if n <= 0 {
			return m.Down()
		}
		return m.Steps(-n)
	})
}

// Goto migrates up or down to version v (0: reverts every migration).
func Goto(ctx context.Context, databaseURL string, v uint) (Change, error) {
	if !known(v) {
		return Change{}, fmt.Errorf("migrations: no migration %d in this build (0 to %d)", v, Latest())
	}
	return change(ctx, "goto", databaseURL, func(m *migrate.Migrate, _ uint) error {
		if v == 0 {
			return m.Down()
		}
		return m.Migrate(v)
	})
}

// Force records version v as applied and clean (0: none applied) without
// running any migration: golang-migrate's recovery from a dirty version,
// once the database has been fixed by hand to what version v leaves.
func Force(ctx context.Context, databaseURL string, v uint) (Change, error) {
	if !known(v) {
		return Change{}, fmt.Errorf("migrations: no migration %d in this build (0 to %d)", v, Latest())
	}
	return change(ctx, "force", databaseURL, func(m *migrate.Migrate, _ uint) error {
		if v == 0 {
			return m.Force(-1)
		}
		return m.Force(int(v))
	})
}

// Version returns the version of the last migration applied, 0 when none is,
// and whether that migration failed midway (dirty), in which case the
// database needs fixing by hand before Up or Down run again (see Force).
func Version(ctx context.Context, databaseURL string) (version uint, dirty bool, err error) {
	m, where, err := open(ctx, databaseURL)
	if err != nil {
		return 0, false, err
	}
	defer func() { err = errors.Join(err, closeMigrate(m, where)) }()
	return readVersion(m, where)
}

func readVersion(m *migrate.Migrate, where string) (uint, bool, error) {
	v, dirty, err := m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("migrations: reading the version of %s: %w", where, err)
	}
	return v, dirty, nil
}

// change opens a migrate instance, runs step (given the version before)
// and closes the instance, and says what changed: the migrations between
// the versions before and after. When ctx ends, step stops after the
// migration it is running (golang-migrate's graceful stop: a migration
// statement in flight is not interrupted) and change returns ctx's error
// with what it did.
func change(ctx context.Context, name, databaseURL string, step func(*migrate.Migrate, uint) error) (c Change, err error) {
	m, where, err := open(ctx, databaseURL)
	if err != nil {
		return c, err
	}
	defer func() { err = errors.Join(err, closeMigrate(m, where)) }()
	if c.From, _, err = readVersion(m, where); err != nil {
		return c, err
	}
	stop := context.AfterFunc(ctx, func() { m.GracefulStop <- true })
	stepErr := step(m, c.From)
	stop()
	var short migrate.ErrShortLimit
	switch {
	case errors.Is(stepErr, migrate.ErrNoChange), errors.As(stepErr, &short):
		// Nothing to do, or less than asked: what there was is done.
		stepErr = nil
	case errors.Is(stepErr, fs.ErrNotExist) && (name == "up" || name == "down") && known(c.From):
		// Steps past the newest migration, or below none applied.
		stepErr = nil
	}
	if c.To, c.Dirty, err = readVersion(m, where); err != nil {
		// The connection was lost with the migration (its backend ended):
		// where the schema is now, a new connection says.
		var again error
		if c.To, c.Dirty, again = Version(ctx, databaseURL); again != nil {
			c.Unknown = true
			return c, fmt.Errorf("migrations: %s on %s: %w", name, where, errors.Join(oneLine(stepErr, c), err))
		}
	}
	if name != "force" {
		c.Applied, c.Reverted = between(c.From, c.To)
		if c.Dirty && stepErr != nil {
			// The migration that failed (the last up, or down) did not
			// run whole.
			if c.To > c.From && len(c.Applied) > 0 {
				c.Applied = c.Applied[:len(c.Applied)-1]
			}
			if c.To < c.From && len(c.Reverted) > 0 {
				c.Reverted = c.Reverted[:len(c.Reverted)-1]
			}
		}
	}
	stepErr = oneLine(stepErr, c)
	var dirty migrate.ErrDirty
	switch {
	case errors.As(stepErr, &dirty):
		if slices.Contains(rerunnable, uint(dirty.Version)) {
			return c, fmt.Errorf("migrations: %s on %s: the schema is dirty: %s", name, where, Recovery(uint(dirty.Version)))
		}
		return c, fmt.Errorf("migrations: %s on %s: migration %d failed midway earlier and the schema is dirty: fix the database by hand, then force the version it is at (etl migrate force V; see etl migrate --help)", name, where, dirty.Version)
	case errors.Is(stepErr, fs.ErrNotExist):
		// The database's version has no file here: it was migrated by a
		// newer build, or a migration file was renamed.
		return c, fmt.Errorf("migrations: %s on %s: the database is at version %d, which this build has no migration for (its newest is %d): %w", name, where, c.From, Latest(), stepErr)
	case stepErr != nil:
		return c, fmt.Errorf("migrations: %s on %s: %w", name, where, stepErr)
	}
	if ctx.Err() != nil {
		return c, fmt.Errorf("migrations: %s on %s stopped before the end: %w", name, where, context.Cause(ctx))
	}
	return c, nil
}

// oneLine replaces golang-migrate's error of a migration statement that
// failed, which quotes the whole migration file (hundreds of lines), with
// one line: the migration (the one c went up to, or down from), the line
// of its file where the server says it failed, and the server's error.
func oneLine(err error, c Change) error {
	var e database.Error
	if !errors.As(err, &e) {
		return err
	}
	what := "a migration"
	v := c.To
	if c.To < c.From || c.Unknown {
		v = 0
		if c.To < c.From {
			if _, reverted := between(c.From, c.To); len(reverted) > 0 {
				v = reverted[len(reverted)-1].Version
			}
		}
	}
	for _, m := range All() {
		if m.Version == v && v != 0 {
			what = fmt.Sprintf("migration %d (%s)", m.Version, m.Name)
		}
	}
	at := ""
	if pgErr := (*pgconn.PgError)(nil); errors.As(e.OrigErr, &pgErr) && pgErr.Position > 0 && e.Line > 0 {
		at = fmt.Sprintf(" at line %d of its file", e.Line)
	}
	return fmt.Errorf("%s failed%s: %w", what, at, e.OrigErr)
}

// rerunnable lists the migrations that go on where they stopped when run
// again after stopping midway (their backend ended, the server
// restarted): they commit as they go, and each step finds its work done
// (each file says so in its header).
var rerunnable = []uint{16}

// Recovery says how to recover from a schema left dirty at version v (a
// migration that stopped midway): for one that goes on where it stopped
// when run again, the commands; else, fix the database by hand and force
// the version it is at (etl migrate --help says how).
func Recovery(v uint) string {
	if slices.Contains(rerunnable, v) {
		prev := uint(0)
		for _, m := range All() {
			if m.Version < v {
				prev = m.Version
			}
		}
		return fmt.Sprintf("migration %d stopped midway; it goes on where it stopped when run again: etl migrate force %d, then etl migrate up", v, prev)
	}
	return fmt.Sprintf("migration %d failed midway; fix the database by hand, then etl migrate force V (see etl migrate --help)", v)
}

// between lists the migrations run to go from version from to version to:
// applied going up, reverted (newest first) going down.
func between(from, to uint) (applied, reverted []Migration) {
	applied, reverted = []Migration{}, []Migration{}
	for _, m := range All() {
		switch {
		case from < to && m.Version > from && m.Version <= to:
			applied = append(applied, m)
		case to < from && m.Version > to && m.Version <= from:
			reverted = append([]Migration{m}, reverted...)
		}
	}
	return applied, reverted
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
	// golang-migrate reads the migrations ahead into a channel of this
	// size and, when one fails, stops reading the channel: its reader
	// would wait for ever to send the next (a goroutine leaked per failed
	// migrate up or down). Room for every migration, and its error,
	// lets it end.
	m.PrefetchMigrations = uint(len(All())) + 2
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
