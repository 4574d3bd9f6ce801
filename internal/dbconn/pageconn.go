package dbconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PageConns hands out the connections pages load on, one per page in
// flight: taken before the page's request is sent, so that a page the API
// answered (and charged for) always has a connection to load on, and given
// back once its rows committed. Its turns are shared by every run of a
// Runner (a scheduler's jobs run at once), and are fewer than the pool's
// connections by spareConns.
type PageConns struct {
	pool  *pgxpool.Pool
	turns chan struct{}
	// wait bounds how long a connection the server cannot give is asked
	// for again (Config.Reconnect).
	wait time.Duration
	log  *slog.Logger
}

func NewPageConns(pool *pgxpool.Pool, pages int, wait time.Duration, log *slog.Logger) *PageConns {
	return &PageConns{pool: pool, turns: make(chan struct{}, pages), wait: wait, log: log}
}

// PageConn is a page's turn and its connection.
type PageConn struct {
	p    *PageConns
	Conn *pgxpool.Conn // nil between a lost connection and the next
	done bool
}

// Take waits for a turn and a connection. The server not giving one (no
// slot left, restarting) is tried again with back-off for up to
// Config.Reconnect; ctx ends the wait, and then nothing is held.
func (p *PageConns) Take(ctx context.Context) (*PageConn, error) {
	select {
	case p.turns <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c := &PageConn{p: p}
	if err := c.connect(ctx); err != nil {
		<-p.turns
		return nil, err
	}
	return c, nil
}

// connect takes a connection from the pool, trying again with back-off
// while the server cannot give one, for up to Config.Reconnect.
func (c *PageConn) connect(ctx context.Context) error {
	deadline := time.Now().Add(c.p.wait)
	for delay := Backoff; ; delay = min(2*delay, MaxBackoff) {
		conn, err := c.p.pool.Acquire(ctx)
		if err == nil {
			c.Conn = conn
			return nil
		}
		if ctx.Err() != nil || !Unavailable(err, nil) || time.Now().Add(delay).After(deadline) {
			return fmt.Errorf("no database connection: %w", err)
		}
		c.p.log.LogAttrs(ctx, slog.LevelWarn, "the database gives no connection; trying again",
			slog.Duration("in", delay), slog.String("error", err.Error()))
		if err := Sleep(ctx, delay); err != nil {
			return fmt.Errorf("no database connection: %w", err)
		}
	}
}

// Renew gives back a connection that failed (the pool closes it when it
// is broken) and takes another.
func (c *PageConn) Renew(ctx context.Context) error {
	if c.Conn != nil {
		c.Conn.Release()
		c.Conn = nil
	}
	return c.connect(ctx)
}

// Release gives back the connection and the turn; again does nothing. A
// nil PageConn releases nothing.
func (c *PageConn) Release() {
	if c == nil || c.done {
		return
	}
	c.done = true
	if c.Conn != nil {
		c.Conn.Release()
		c.Conn = nil
	}
	<-c.p.turns
}

// Back-off between attempts to get a connection, or to load a page again.
const (
	Backoff    = 100 * time.Millisecond
	MaxBackoff = 5 * time.Second
)

func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Unavailable reports whether err says the database could not serve a
// moment ago and may again: the connection was lost (conn, when given, is
// closed now), could not be made (the server has no slot left, is
// starting or shutting down), or the server ran out of a resource
// (locks, memory), or a transaction was chosen to fail (a deadlock, a
// serialization failure, a lock timeout). Such a failure says nothing
// about the data: what failed to load may load on the next try.
func Unavailable(err error, conn *pgxpool.Conn) bool {
	if err == nil {
		return false
	}
	if conn != nil && conn.Conn().IsClosed() {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// The server's word decides: a refused password or a missing
		// database does not pass with time.
		switch code := pgErr.Code; {
		case strings.HasPrefix(code, "08"), // connection exception
			strings.HasPrefix(code, "53"),    // insufficient resources: too many connections, out of shared memory (locks), disk full
			strings.HasPrefix(code, "57P"),   // the server shut down, crashed, is starting, or ended an idle session
			code == "40001", code == "40P01", // serialization failure, deadlock
			code == "55P03": // lock not available (lock_timeout)
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	return errors.As(err, &connectErr) || pgconn.SafeToRetry(err)
}

// Turns is how many pages may hold a connection at once.
func (p *PageConns) Turns() int { return cap(p.turns) }
