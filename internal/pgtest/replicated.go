package pgtest

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgcluster"
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
}

// NewReplicated starts a throwaway primary of t's own with settings over
// pgcluster's, makes the database etl on it (owned by the role etl_run,
// not a superuser) migrated to the latest schema, then a streaming standby
// of it (pg_basebackup -R). With sync the primary waits for the standby
// to flush each commit (synchronous_standby_names '*',
// synchronous_commit on); without, the standby is asynchronous, as
// PostgreSQL's default is. Both stop when t ends.
func NewReplicated(t testing.TB, sync bool, settings map[string]string) *Replicated {
	t.Helper()
	s := map[string]string{"synchronous_commit": "off"}
	if sync {
		s["synchronous_commit"] = "on"
	}
	for k, v := range settings {
		s[k] = v
	}
	primary, dbURL, superURL := newServer(t, s)
	r := &Replicated{Primary: primary, PrimaryURL: dbURL, SuperURL: superURL}
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
