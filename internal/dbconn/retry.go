package dbconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"
)

// Retry runs do, again while it fails because the database could not
// serve (see Lost), with back-off for up to wait; lost (when not nil) is
// called at each such failure. what names do in the log. do must be
// safe to run again (a read, an upsert).
func Retry(ctx context.Context, wait time.Duration, log *slog.Logger, what string, lost func(), do func(context.Context) error) error {
	var deadline time.Time
	for delay := Backoff; ; delay = min(2*delay, MaxBackoff) {
		err := do(ctx)
		if err == nil || !Lost(err) || ctx.Err() != nil {
			return err
		}
		if lost != nil {
			lost()
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(wait)
		}
		if time.Now().Add(delay).After(deadline) {
			return fmt.Errorf("the database did not serve for %v: %w", wait, err)
		}
		log.LogAttrs(ctx, slog.LevelWarn, "the database failed; trying again", slog.String("what", what),
			slog.Duration("in", delay), slog.String("error", err.Error()))
		if serr := Sleep(ctx, delay); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

// Lost reports whether err says the database could not serve: see
// Unavailable, and besides a connection cut mid-statement (what a pool
// connection whose server died says).
func Lost(err error) bool {
	if Unavailable(err, nil) {
		return true
	}
	var netErr net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.As(err, &netErr) || strings.Contains(err.Error(), "conn closed")
}
