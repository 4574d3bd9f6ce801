package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/seoetl/etl/internal/pgcluster"
	"github.com/seoetl/etl/migrations"
)

// Environment variables Main reads.
const (
	envDatabaseURL = "TEST_DATABASE_URL"
	envCitusURL    = "TEST_CITUS_URL"
	envBinDir      = "PG_BIN"
)

// Layout lays out a database migrated to the latest schema on the Citus
// cluster of TEST_CITUS_URL, as etl migrate up does (load.Distribute).
// A package whose tests run on Citus sets it in its TestMain, before
// Main: pgtest cannot import the packages it tests.
var Layout func(ctx context.Context, dbURL string) error

// Citus reports whether the tests run on the Citus cluster of
// TEST_CITUS_URL: every NewDB is then a database of its own on every
// node, migrated and laid out (Layout).
func Citus() bool { return os.Getenv(envCitusURL) != "" }

// current is the harness of the running test binary, set by Main.
var current atomic.Pointer[harness]

// Main sets up PostgreSQL, runs the tests, tears PostgreSQL down and exits
// with the tests' status; see the package documentation. After the tests it
// fails the run if goroutines are left, as goleak.VerifyTestMain would
// (which cannot be combined with Main, since both end the process);
// leakOptions are passed to goleak.Find to ignore known ones.
func Main(m *testing.M, leakOptions ...goleak.Option) {
	os.Exit(run(m, leakOptions))
}

func run(m *testing.M, leakOptions []goleak.Option) int {
	leakOptions = append(leakOptions, goleak.IgnoreCurrent())
	h := &harness{ready: make(chan struct{})}

	// Signals are handled from the start, so that an interrupt during
	// set-up cancels it (pgcluster.Start then removes what it made).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done, watcherDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watcherDone)
		select {
		case s := <-sigs:
			signal.Reset(os.Interrupt, syscall.SIGTERM) // a second one ends the process at once
			fmt.Fprintf(os.Stderr, "pgtest: %v: removing the test databases\n", s)
			cancel()
			<-h.ready
			if err := h.tearDown(true); err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			}
			os.Exit(1)
		case <-done:
		}
	}()
	stopWatching := func() {
		close(done)
		<-watcherDone
		signal.Stop(sigs)
	}

	err := h.setUp(ctx)
	close(h.ready)
	if err != nil {
		stopWatching()
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", errors.Join(err, h.tearDown(false)))
		return 1
	}
	current.Store(h)
	code := m.Run()
	current.Store(nil)
	stopWatching()
	if err := h.tearDown(false); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(leakOptions...); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: goroutines leaked by the tests: %v\n", err)
			code = 1
		}
	}
	return code
}

// harness is the PostgreSQL of one test binary.
type harness struct {
	ready chan struct{} // closed when setUp has returned

	mu       sync.Mutex
	citus    bool               // on the Citus cluster of TEST_CITUS_URL
	cluster  *pgcluster.Cluster // nil with TEST_DATABASE_URL
	server   *url.URL           // connects to the server's maintenance database
	admin    *pgxpool.Pool      // for CREATE and DROP DATABASE
	template string             // "" until created
	made     map[string]bool    // databases created and not yet dropped

	cloneMu sync.Mutex // serializes clones of the template

	tearDownOnce sync.Once
	tearDownErr  error
}

func (h *harness) setUp(ctx context.Context) error {
	began := time.Now()
	h.made = map[string]bool{}
	if raw := os.Getenv(envCitusURL); raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return fmt.Errorf("%s must be a postgres:// URL", envCitusURL)
		}
		if Layout == nil {
			return fmt.Errorf("%s is set, and this package's TestMain sets no pgtest.Layout: its tests do not run on Citus", envCitusURL)
		}
		h.server, h.citus = u, true
	} else if raw := os.Getenv(envDatabaseURL); raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return fmt.Errorf("%s must be a postgres:// URL", envDatabaseURL)
		}
		h.server = u
	} else {
		c, err := pgcluster.Start(ctx, pgcluster.Options{
			BinDir: os.Getenv(envBinDir),
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		if err != nil {
			return fmt.Errorf("%w (or set %s to use a running server)", err, envDatabaseURL)
		}
		h.mu.Lock()
		h.cluster = c
		h.mu.Unlock()
		u, err := url.Parse(c.URL("postgres"))
		if err != nil {
			return err
		}
		h.server = u
	}
	cfg, err := pgxpool.ParseConfig(h.server.String())
	if err != nil {
		return fmt.Errorf("%s: %w", envDatabaseURL, err)
	}
	cfg.MaxConns = 4
	if h.admin, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return fmt.Errorf("connecting to the test server: %w", err)
	}

	if h.citus {
		// No template: a database of Citus is one on every node.
		return nil
	}
	name := "etl_tmpl_" + randomHex()
	if err := h.create(ctx, name, ""); err != nil {
		return err
	}
	h.template = name
	if err := migrations.Up(ctx, h.url(name)); err != nil {
		return fmt.Errorf("migrating the template database: %w", err)
	}
	// No session may be connected to a template while it is cloned; refusing
	// connections makes a stray one fail loudly instead of breaking clones.
	if _, err := h.admin.Exec(ctx, "ALTER DATABASE "+ident(name)+" WITH ALLOW_CONNECTIONS false"); err != nil {
		return fmt.Errorf("closing the template database to connections: %w", err)
	}
	if d := time.Since(began); d > 10*time.Second {
		fmt.Fprintf(os.Stderr, "pgtest: set-up took %v\n", d.Round(time.Millisecond))
	}
	return nil
}

// tearDown drops what setUp and the tests made on a TEST_DATABASE_URL server
// or stops the cluster. interrupted says the tests may still be running: then
// nothing waits on them (the process exits next).
func (h *harness) tearDown(interrupted bool) error {
	h.tearDownOnce.Do(func() { h.tearDownErr = h.doTearDown(interrupted) })
	return h.tearDownErr
}

func (h *harness) doTearDown(interrupted bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h.mu.Lock()
	cluster, admin := h.cluster, h.admin
	var leftovers []string
	for name := range h.made {
		leftovers = append(leftovers, name)
	}
	h.mu.Unlock()

	var errs []error
	if cluster == nil && h.server != nil {
		// The databases live on: drop them, on a connection of our own
		// (the pool's may all be taken by interrupted tests).
		if conn, err := pgx.Connect(ctx, h.server.String()); err != nil {
			errs = append(errs, fmt.Errorf("connecting to drop the test databases: %w", err))
		} else {
			for _, name := range leftovers {
				if h.citus {
					errs = append(errs, pgcluster.DropDatabaseLike(ctx, h.server.String(), name))
				} else if _, err := conn.Exec(ctx, dropSQL(name)); err != nil {
					errs = append(errs, fmt.Errorf("dropping database %s: %w", name, err))
				}
			}
			errs = append(errs, conn.Close(ctx))
		}
	}
	if admin != nil && !interrupted {
		admin.Close() // waits for connections in use, of which there are none now
	}
	if cluster != nil {
		errs = append(errs, cluster.Stop())
	}
	return errors.Join(errs...)
}

// url returns the URL of database name on the test server.
func (h *harness) url(name string) string {
	u := *h.server
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

// create creates database name, empty or a clone of template.
func (h *harness) create(ctx context.Context, name, template string) error {
	h.mu.Lock()
	h.made[name] = true // before CREATE: an interrupt may come in the middle
	h.mu.Unlock()
	sql := "CREATE DATABASE " + ident(name)
	if template != "" {
		sql += " TEMPLATE " + ident(template)
	}
	if _, err := h.admin.Exec(ctx, sql); err != nil {
		return fmt.Errorf("creating database %s: %w", name, err)
	}
	return nil
}

// drop drops database name, ending any session still connected to it.
func (h *harness) drop(ctx context.Context, name string) error {
	if h.citus {
		if err := pgcluster.DropDatabaseLike(ctx, h.server.String(), name); err != nil {
			return fmt.Errorf("dropping database %s: %w", name, err)
		}
	} else if _, err := h.admin.Exec(ctx, dropSQL(name)); err != nil {
		return fmt.Errorf("dropping database %s: %w", name, err)
	}
	h.mu.Lock()
	delete(h.made, name)
	h.mu.Unlock()
	return nil
}

// citusSetUpLock is the advisory lock that serialises the making of test
// databases on a Citus cluster (see newDB).
const citusSetUpLock int64 = 0x6574_6c5f_6369_7475 // "etl_citu"

func dropSQL(name string) string {
	return "DROP DATABASE IF EXISTS " + ident(name) + " WITH (FORCE)"
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// NewDB creates a database for t, migrated to the latest schema, and returns
// its URL. The database is dropped when t ends (connections still open to it
// are ended then). It needs Main in the package's TestMain.
func NewDB(t testing.TB) string {
	t.Helper()
	return newDB(t, true)
}

// NewEmptyDB is NewDB without the schema: a database as CREATE DATABASE makes
// it, for tests of the migrations themselves.
func NewEmptyDB(t testing.TB) string {
	t.Helper()
	return newDB(t, false)
}

func newDB(t testing.TB, migrated bool) string {
	t.Helper()
	h := current.Load()
	if h == nil {
		t.Fatal("pgtest: no test database server; call pgtest.Main(m) from the package's TestMain")
	}
	name := dbName(t.Name())
	if h.citus {
		h.mu.Lock()
		h.made[name] = true
		h.mu.Unlock()
		t.Cleanup(func() {
			// Longer than on PostgreSQL: the database is dropped on
			// every node, one after the other, and each DROP DATABASE
			// waits for a checkpoint of its node; on the shared cluster
			// under load one took past 30 s (TestGuideQueriesPrune).
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			require.NoError(t, h.drop(ctx, name))
		})
		// One database is made, migrated and laid out at a time on the
		// cluster, by every test process that shares it: Citus
		// propagates the migrations' grants to etl_analyst (a role of
		// the whole cluster) to the workers, and two databases migrated
		// at once failed there with "tuple concurrently updated"
		// (XX000). The lock is a session's, on the coordinator's
		// database of TEST_CITUS_URL.
		lock, err := pgx.Connect(t.Context(), h.server.String())
		require.NoError(t, err)
		defer lock.Close(context.WithoutCancel(t.Context()))
		_, err = lock.Exec(t.Context(), `SELECT pg_advisory_lock($1)`, citusSetUpLock)
		require.NoError(t, err, "waiting for the other tests' databases to be made on Citus")
		dbURL, err := pgcluster.DatabaseLike(t.Context(), h.server.String(), name)
		require.NoError(t, err)
		if migrated {
			require.NoError(t, migrations.Up(t.Context(), dbURL))
			require.NoError(t, Layout(t.Context(), dbURL), "laying the database out on Citus")
		}
		return dbURL
	}
	if migrated {
		// Clones of one template are serialized: PostgreSQL refuses to copy
		// a database that another session is using.
		h.cloneMu.Lock()
		err := h.create(t.Context(), name, h.template)
		h.cloneMu.Unlock()
		require.NoError(t, err)
	} else {
		require.NoError(t, h.create(t.Context(), name, "template0"))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, h.drop(ctx, name))
	})
	return h.url(name)
}

// NewPool is NewDB with a pool connected to the database, closed when t ends
// (before the database is dropped).
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), NewDB(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// NewRole creates a role that may log in, with a password of its own, as
// a member of each role in memberOf (pgtest.NewRole(t, url, "etl_analyst")
// is an analyst), and returns dbURL changed to connect as it. Roles belong
// to the whole server, not to a database: when t ends, what the role owns
// or was granted in dbURL's database is dropped (DROP OWNED), then the
// role. With TEST_DATABASE_URL, its user needs CREATEROLE (the migrations
// need it already, for etl_analyst). It needs Main in the package's
// TestMain.
func NewRole(t testing.TB, dbURL string, memberOf ...string) string {
	t.Helper()
	h := current.Load()
	if h == nil {
		t.Fatal("pgtest: no test database server; call pgtest.Main(m) from the package's TestMain")
	}
	name, password := "etl_r_"+randomHex(), randomHex()
	// The password is hex: safe inside a literal.
	_, err := h.admin.Exec(t.Context(), "CREATE ROLE "+ident(name)+" LOGIN PASSWORD '"+password+"'")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dbURL)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, "DROP OWNED BY "+ident(name))
		require.NoError(t, errors.Join(err, conn.Close(ctx)))
		_, err = h.admin.Exec(ctx, "DROP ROLE "+ident(name))
		require.NoError(t, err)
	})
	for _, m := range memberOf {
		_, err := h.admin.Exec(t.Context(), "GRANT "+ident(m)+" TO "+ident(name))
		require.NoError(t, err)
	}
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	u.User = url.UserPassword(name, password)
	return u.String()
}

var notIdent = regexp.MustCompile(`[^a-z0-9]+`)

// dbName names a test's database after the test (for a look with psql while
// it runs), unique across processes sharing a server, within PostgreSQL's
// 63-byte identifier limit.
func dbName(testName string) string {
	s := strings.Trim(notIdent.ReplaceAllString(strings.ToLower(testName), "_"), "_")
	if len(s) > 40 {
		s = s[:40]
	}
	return "etl_t_" + s + "_" + randomHex()
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// NewServer starts a throwaway PostgreSQL server of t's own, with settings
// over pgcluster's (a small max_connections, say), and returns the URL of
// a database on it migrated to the latest schema, owned by a role that is
// not a superuser (so that superuser_reserved_connections apply to it, as
// to a production role), and the URL of that database as the superuser.
// The server stops when t ends. It needs the server binaries (PG_BIN, or
// pgcluster.Binaries), with TEST_DATABASE_URL too.
func NewServer(t testing.TB, settings map[string]string) (dbURL, superURL string) {
	t.Helper()
	_, dbURL, superURL = newServer(t, settings)
	return dbURL, superURL
}

// newServer is NewServer, returning the cluster too.
func newServer(t testing.TB, settings map[string]string) (c *pgcluster.Cluster, dbURL, superURL string) {
	t.Helper()
	ctx := t.Context()
	c, err := pgcluster.Start(ctx, pgcluster.Options{
		BinDir:   os.Getenv(envBinDir),
		Settings: settings,
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Stop()) })
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	require.NoError(t, err)
	for _, sql := range []string{"CREATE ROLE etl_run LOGIN CREATEROLE", "CREATE DATABASE etl OWNER etl_run"} {
		if _, err = conn.Exec(ctx, sql); err != nil {
			break
		}
	}
	require.NoError(t, errors.Join(err, conn.Close(ctx)))
	u, err := url.Parse(c.URL("etl"))
	require.NoError(t, err)
	superURL = u.String()
	u.User = url.User("etl_run")
	dbURL = u.String()
	require.NoError(t, migrations.Up(ctx, dbURL))
	return c, dbURL, superURL
}
