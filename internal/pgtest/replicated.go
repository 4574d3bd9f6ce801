package pgtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgcluster"
	"github.com/seoetl/etl/migrations"
)

// Replicated is a primary and a streaming standby of it, both on
// 127.0.0.1, with a database migrated to the latest schema (see
// NewReplicated).
type Replicated struct {
	Primary, Standby *pgcluster.Cluster
	// URL names both servers, primary first, with
	// target_session_attrs=read-write: it reaches whichever of them
	// accepts writes, as DATABASE_URL does in a replicated setup.
	URL string
	// PrimaryURL and StandbyURL reach one server each, as the role the
	// application uses; SuperURL is the primary's as the superuser.
	PrimaryURL, StandbyURL, SuperURL string
	// Citus is the Citus cluster whose coordinator Primary is, with
	// TEST_CITUS_URL (see NewReplicated); nil on plain PostgreSQL.
	Citus *pgcluster.Citus
}

// citusWorkers is the number of workers of a replicated Citus cluster,
// as make test-citus starts.
const citusWorkers = 2

// NewReplicated starts a throwaway primary of t's own with settings over
// pgcluster's, makes the database etl on it (owned by the role etl_run,
// not a superuser) migrated to the latest schema, then a streaming standby
// of it (pg_basebackup -R). With sync the primary waits for the standby
// to flush each commit (synchronous_standby_names '*',
// synchronous_commit on); without, the standby is asynchronous, as
// PostgreSQL's default is. Both stop when t ends.
//
// With TEST_CITUS_URL (Citus), the primary is the coordinator of a Citus
// cluster of t's own (pgcluster.StartCitus, with citusWorkers workers;
// not the cluster TEST_CITUS_URL names, whose coordinator others share
// and a failover test crashes), the database etl is made on every node,
// migrated and laid out as etl migrate up does (Layout), and the standby
// is the coordinator's, with its settings (citus preloaded). The workers
// have no standby: a failover test crashes the coordinator only. Promote
// then names the promoted node the coordinator.
func NewReplicated(t testing.TB, sync bool, settings map[string]string) *Replicated {
	t.Helper()
	s := map[string]string{"synchronous_commit": "off"}
	if sync {
		s["synchronous_commit"] = "on"
	}
	for k, v := range settings {
		s[k] = v
	}
	r := &Replicated{}
	if Citus() {
		r.Citus, r.PrimaryURL, r.SuperURL = newCitusServer(t, s)
		r.Primary = r.Citus.Coordinator
	} else {
		r.Primary, r.PrimaryURL, r.SuperURL = newServer(t, s)
	}
	standby, err := pgcluster.StartStandby(t.Context(), r.Primary, pgcluster.Options{
		BinDir: os.Getenv(envBinDir),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, standby.Stop()) })
	r.Standby = standby
	u, err := url.Parse(r.PrimaryURL)
	require.NoError(t, err)
	u.Host = fmt.Sprintf("127.0.0.1:%d", standby.Port())
	r.StandbyURL = u.String()
	u.Host = fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", r.Primary.Port(), standby.Port())
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	r.URL = u.String()
	if sync {
		// Only now: a primary waiting for a standby that is not there
		// yet commits nothing.
		ctx := t.Context()
		conn, err := pgx.Connect(ctx, r.Primary.URL("postgres"))
		require.NoError(t, err)
		defer conn.Close(context.WithoutCancel(ctx))
		for _, sql := range []string{`ALTER SYSTEM SET synchronous_standby_names = '*'`, `SELECT pg_reload_conf()`} {
			_, err := conn.Exec(ctx, sql)
			require.NoError(t, err)
		}
		require.Eventually(t, func() bool {
			var n int
			require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'`).Scan(&n))
			return n == 1
		}, 30*time.Second, 10*time.Millisecond, "the standby is synchronous")
	}
	return r
}

// Promote promotes the standby (see pgcluster.Cluster.Promote); on Citus
// it also names it the coordinator of the database etl
// (pgcluster.Cluster.PromoteCoordinator), as an operator or an HA tool
// does after a failover of a Citus coordinator.
func (r *Replicated) Promote(ctx context.Context) error {
	if r.Citus != nil {
		return r.Standby.PromoteCoordinator(ctx, "etl")
	}
	return r.Standby.Promote(ctx)
}

// newCitusServer is newServer on a Citus cluster of t's own: the role
// etl_run and the database etl owned by it on every node, with the citus
// extension and the workers registered (pgcluster.Citus.Database), then
// migrated and laid out (Layout) as etl_run. It returns the cluster and
// the coordinator's URLs of etl, as etl_run and as the superuser.
func newCitusServer(t testing.TB, settings map[string]string) (c *pgcluster.Citus, dbURL, superURL string) {
	t.Helper()
	if Layout == nil {
		t.Fatalf("pgtest: %s is set, and this package's TestMain sets no pgtest.Layout", envCitusURL)
	}
	ctx := t.Context()
	c, err := pgcluster.StartCitus(ctx, pgcluster.Options{
		BinDir:   os.Getenv(envBinDir),
		Settings: settings,
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, citusWorkers)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Stop()) })
	// Roles belong to a server, and Citus propagates only those made in
	// a database with the extension: etl_run is made on each node.
	for _, n := range append([]*pgcluster.Cluster{c.Coordinator}, c.Workers...) {
		conn, err := pgx.Connect(ctx, n.URL("postgres"))
		require.NoError(t, err)
		for _, sql := range []string{"CREATE ROLE etl_run LOGIN CREATEROLE", "CREATE DATABASE etl OWNER etl_run"} {
			if _, err = conn.Exec(ctx, sql); err != nil {
				break
			}
		}
		require.NoError(t, errors.Join(err, conn.Close(ctx)))
	}
	superURL, err = c.Database(ctx, "etl")
	require.NoError(t, err)
	u, err := url.Parse(superURL)
	require.NoError(t, err)
	u.User = url.User("etl_run")
	dbURL = u.String()
	require.NoError(t, migrations.Up(ctx, dbURL))
	require.NoError(t, Layout(ctx, dbURL), "laying the database out on Citus")
	return c, dbURL, superURL
}
