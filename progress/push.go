package progress

// The progress display of `etl listings push` (Push), as run.go's is of
// a run: on a terminal, a line redrawn in place (the locations sent, updated,
// failed, refused and skipped, the requests sent of those planned, the
// time the plan has left and the time elapsed), which leaves a last line
// that says how the push ended; elsewhere a log record "progress" with the
// same counts as numbers, when the push is planned and then at most once
// per interval. The summary on stdout follows either.
//
// The counts come from push.Config.Progress, which the push calls once it
// is planned and after each request; the time left is the plan's, counted
// down between calls (a push waits up to a minute for its bulk requests'
// rate limit).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/seoetl/etl/push"
)

// Push shows how a push of package push progresses. Its methods are safe for
// concurrent use; the live display's ticker runs from the first update to
// end or abandon.
type Push struct {
	// w is the terminal of the live display; nil for log records.
	w       io.Writer
	log     *slog.Logger
	account string
	every   time.Duration
	now     func() time.Time
	// size is the terminal's width in columns (0: unknown, lines not
	// cut).
	size func() int
	tick time.Duration

	mu       sync.Mutex
	started  time.Time
	last     push.Progress
	at       time.Time // when last was told
	seen     bool
	stopping bool
	finished bool
	next     time.Time // when the next log record is due
	drawn    bool      // the live line is on the screen
	stop     chan struct{}
	ticking  sync.WaitGroup
}

// NewTermPush returns the live display of a push of account on
// the terminal w.
func NewTermPush(w io.Writer, account string, now func() time.Time) *Push {
	p := newPush(account, 0, now)
	p.w = w
	if size := termSize(w); size != nil {
		p.size = func() int {
			cols, _ := size()
			return cols
		}
	}
	return p
}

// NewLogPush returns a display that logs a record "progress" to
// log when the push is planned, then at most once per every (default
// 10s), from the push's calls.
func NewLogPush(log *slog.Logger, account string, every time.Duration, now func() time.Time) *Push {
	p := newPush(account, every, now)
	p.log = log
	return p
}

func newPush(account string, every time.Duration, now func() time.Time) *Push {
	if every <= 0 {
		every = logEvery
	}
	if now == nil {
		now = time.Now
	}
	return &Push{account: account, every: every, now: now, size: func() int { return 0 }, tick: redrawEvery}
}

// Update is the push's Config.Progress.
func (p *Push) Update(pr push.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	now := p.now()
	first := !p.seen
	if first {
		p.seen, p.started = true, now
	}
	p.last, p.at = pr, now
	if p.w != nil {
		p.draw(now)
		if first {
			p.stop = make(chan struct{})
			p.ticking.Add(1)
			go p.ticker(p.stop, p.tick)
		}
		return
	}
	if first || !now.Before(p.next) {
		p.next = now.Add(p.every)
		p.record(now)
	}
}

// ticker redraws the live line every period until stop is closed, so that
// the time left and elapsed move while the push waits.
func (p *Push) ticker(stop <-chan struct{}, period time.Duration) {
	everyTick(stop, period, &p.ticking, func() {
		p.mu.Lock()
		if !p.finished {
			p.draw(p.now())
		}
		p.mu.Unlock()
	})
}

// left is the plan's time left at now: what the push last said, less the
// time since; p.mu is held.
func (p *Push) left(now time.Time) time.Duration {
	return max(p.last.Left-now.Sub(p.at), 0)
}

// counts is the line's counts of pr, without the head.
func pushCounts(pr push.Progress) []string {
	return []string{
		fmt.Sprintf("%d/%d sent", pr.Sent, pr.ToSend),
		fmt.Sprintf("%d updated", pr.Updated),
		fmt.Sprintf("%d failed", pr.Failed),
		fmt.Sprintf("%d refused", pr.Refused),
		fmt.Sprintf("%d skipped", pr.Skipped),
		fmt.Sprintf("%d/%d requests", pr.Requests, pr.PlannedRequests),
	}
}

// line is the live line at now; p.mu is held.
func (p *Push) line(now time.Time) string {
	head := fmt.Sprintf("push %d of %s", p.last.PushID, p.account)
	if p.stopping {
		head += " stopping"
	}
	parts := pushCounts(p.last)
	parts[0] = head + ": " + parts[0]
	if !p.stopping {
		parts = append(parts, p.left(now).Round(time.Second).String()+" left")
	}
	parts = append(parts, "elapsed "+now.Sub(p.started).Round(time.Second).String())
	return strings.Join(parts, ", ")
}

// draw redraws the live line; p.mu is held.
func (p *Push) draw(now time.Time) {
	p.write(p.clear() + fitColumns(p.line(now), p.size()-1) + "\n")
	p.drawn = true
}

// clear returns the escape codes that move the cursor to the live line
// and clear it and what is below.
func (p *Push) clear() string {
	if !p.drawn {
		return ""
	}
	return "\r\x1b[1A\x1b[J"
}

// write writes s to the terminal; a failing write must not fail the push.
func (p *Push) write(s string) { _, _ = io.WriteString(p.w, s) }

// record logs the push's state as a record "progress"; p.mu is held.
func (p *Push) record(now time.Time) {
	pr := p.last
	p.log.LogAttrs(context.Background(), slog.LevelInfo, "progress",
		slog.Int64("push_id", pr.PushID), slog.String("account", p.account),
		slog.Int("items", pr.Items), slog.Int("to_send", pr.ToSend), slog.Int("sent", pr.Sent),
		slog.Int("updated", pr.Updated), slog.Int("failed", pr.Failed), slog.Int("refused", pr.Refused), slog.Int("skipped", pr.Skipped),
		slog.Int("requests", pr.Requests), slog.Int("requests_planned", pr.PlannedRequests),
		slog.Float64("left_seconds", math.Round(p.left(now).Seconds())),
		slog.Float64("elapsed_seconds", round2(now.Sub(p.started).Seconds())))
}

// Write writes b (log lines) above the live line, which is redrawn under
// it; without a live line it writes b through (a display of log records
// drops it: it is not the log's writer).
func (p *Push) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return len(b), nil
	}
	if !p.drawn || p.finished {
		return p.w.Write(b)
	}
	p.write(p.clear())
	p.drawn = false
	n, err := p.w.Write(b)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		p.write("\n")
	}
	p.draw(p.now())
	return n, err
}

// interrupt implements interrupter: the push is stopping (the first
// SIGINT/SIGTERM) and finishes the request in flight.
func (p *Push) interrupt(msg string) {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	_, _ = p.Write([]byte(msg))
}

// abandon implements abandoner: the process stops at once; the live line
// is replaced by msg and a line that says where the push stood.
func (p *Push) abandon(msg string) {
	p.Halt()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return
	}
	if p.finished || !p.seen {
		p.finished = true
		p.write(msg)
		return
	}
	p.finished = true
	parts := pushCounts(p.last)
	parts[0] = fmt.Sprintf("push %d of %s stopped at once: %s", p.last.PushID, p.account, parts[0])
	parts = append(parts, "elapsed "+p.now().Sub(p.started).Round(time.Second).String())
	p.write(p.clear() + msg + fitColumns(strings.Join(parts, ", "), p.size()-1) + "\n")
	p.drawn = false
}

// Halt stops the ticker and waits for it.
func (p *Push) Halt() {
	p.mu.Lock()
	stop := p.stop
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		p.ticking.Wait()
	}
}

// End stops the display: on a terminal the live line is replaced by one
// that says how the push ended (sum nil: it never started); log records
// end without a last one, the summary follows on stdout.
func (p *Push) End(sum *push.Summary, err error) {
	p.Halt()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	if p.w == nil || !p.seen {
		return
	}
	p.write(p.clear() + fitColumns(pushEnded(sum, err, p.now().Sub(p.started)), p.size()-1) + "\n")
	p.drawn = false
}

// pushEnded is the line that says how a push ended: how, the items by
// outcome, the requests sent of those planned, and the time it took.
func pushEnded(s *push.Summary, err error, took time.Duration) string {
	how := "finished"
	switch {
	case errors.Is(err, context.Canceled):
		how = "interrupted"
	case err != nil:
		how = "failed"
	case s.Partial():
		how = "finished with failures"
	}
	parts := []string{
		fmt.Sprintf("push %d of %s %s: %d/%d sent", s.PushID, s.Account, how, s.Sent, s.ToSend),
		fmt.Sprintf("%d updated", s.Updated),
		fmt.Sprintf("%d failed", s.Failed),
		fmt.Sprintf("%d refused", s.Refused),
		fmt.Sprintf("%d skipped", s.Unchanged+s.Waiting),
	}
	if s.InDoubt > 0 {
		parts = append(parts, fmt.Sprintf("%d in doubt", s.InDoubt))
	}
	if s.NotSent > 0 {
		parts = append(parts, fmt.Sprintf("%d not sent", s.NotSent))
	}
	parts = append(parts, fmt.Sprintf("%d/%d requests", s.BulkRequests+s.SingleRequests, s.PlannedRequests),
		"elapsed "+took.Round(time.Second).String())
	return strings.Join(parts, ", ")
}
