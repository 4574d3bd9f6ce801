package localwh

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/seoetl/etl/sandbox"
)

// SandboxKey is the sandbox's default key; it is not a secret.
const SandboxKey = "sandbox"

// StartSandbox serves the sandbox on a free loopback port, on the clock
// clock, logging to log; it returns its URL and how to stop it.
func StartSandbox(log *slog.Logger, clock func() time.Time) (string, func(), error) {
	// The sandbox logs every request at info; here that would drown the
	// run's own lines, so only its warnings and errors show.
	quiet := slog.New(&minLevel{Handler: log.Handler(), min: slog.LevelWarn})
	// It approves device codes by itself (for its key), at the first poll,
	// a second after the code: etl local run signs a job's accounts in
	// unattended.
	srv, err := sandbox.New(sandbox.Config{Now: clock, APIKeys: []string{SandboxKey}, Logger: quiet,
		DeviceAutoApprove: 1, DeviceInterval: time.Second})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("sandbox: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := sandbox.Serve(ctx, ln, srv); err != nil {
			log.Error("sandbox", "error", err)
		}
	}()
	log.Info("sandbox started", "url", "http://"+ln.Addr().String())
	return "http://" + ln.Addr().String(), func() {
		cancel()
		<-done
	}, nil
}

// minLevel drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h *minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h *minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h *minLevel) WithGroup(name string) slog.Handler {
	return &minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
