package pgtest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// Statements records the text of every statement sent on the connections
// it traces (set it as pgx.ConnConfig.Tracer): each Query, QueryRow and
// Exec, and each query of a batch. COPY sends no statement text and is
// not recorded. It is safe for concurrent use.
type Statements struct {
	mu   sync.Mutex
	sql  []string
	seen map[string]bool
}

// TraceQueryStart records data.SQL; it implements pgx.QueryTracer.
func (s *Statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	s.add(data.SQL)
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (s *Statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart implements pgx.BatchTracer.
func (s *Statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery records data.SQL; it implements pgx.BatchTracer.
func (s *Statements) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	s.add(data.SQL)
}

// TraceBatchEnd implements pgx.BatchTracer.
func (s *Statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (s *Statements) add(sql string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if !s.seen[sql] {
		s.seen[sql] = true
		s.sql = append(s.sql, sql)
	}
}

// All returns each distinct statement recorded, in the order first sent.
func (s *Statements) All() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sql)
}

// NewTracedPool is NewDB with a pool whose connections (and the
// connections made from its config, pool.Config().ConnConfig.Copy())
// record every statement they send in the Statements returned.
func NewTracedPool(t testing.TB) (*pgxpool.Pool, *Statements) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(NewDB(t))
	require.NoError(t, err)
	st := &Statements{}
	cfg.ConnConfig.Tracer = st
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, st
}

// RequireOneCommandEach fails t unless each of stmts holds one SQL
// command, as PostgreSQL's own parser counts them: each is parsed as an
// unnamed prepared statement on a connection of pool, never run, and
// PostgreSQL refuses a prepared statement of several commands (SQLSTATE
// 42601, "cannot insert multiple commands into a prepared statement"),
// as Citus refuses such a statement whatever protocol sent it. Other
// errors of parse analysis (a temporary table of another session, a
// parameter of no known type) are not this rule's business and are let
// pass.
func RequireOneCommandEach(t testing.TB, pool *pgxpool.Pool, stmts []string) {
	t.Helper()
	require.NotEmpty(t, stmts, "no statement recorded: is the tracer set?")
	conn, err := pool.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()
	var several []string
	for _, sql := range stmts {
		_, err := conn.Conn().PgConn().Prepare(t.Context(), "", sql, nil)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42601" { // syntax_error, of which several commands is one
			if len(sql) > 300 {
				sql = sql[:300] + "..."
			}
			several = append(several, pgErr.Message+": "+sql)
		} else if err != nil && !errors.As(err, &pgErr) {
			require.NoError(t, err, "parsing %q", sql)
		}
	}
	require.Empty(t, several, "statements sent as one call that PostgreSQL parses as several commands (Citus refuses them)")
}
