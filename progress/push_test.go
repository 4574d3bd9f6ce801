package progress

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/vt"
	"github.com/seoetl/etl/push"
)

// TestPushProgressTerminal: the live line of a push counts its locations
// and requests, counts the plan's time down between the push's calls,
// keeps log lines above itself, and leaves a line that says how the push
// ended.
func TestPushProgressTerminal(t *testing.T) {
	t.Parallel()
	clock := newProgressClock()
	p, v := termPushProgress(t, clock)

	p.Update(push.Progress{PushID: 7, Items: 320, ToSend: 300, Refused: 12, Skipped: 8, PlannedRequests: 55, Left: 49 * time.Second})
	require.Equal(t, []string{
		"push 7 of agency: 0/300 sent, 0 updated, 0 failed, 12 refused, 8 skipped, 0/55 requests, 49s left, elapsed 0s",
	}, v.Screen())

	clock.add(3 * time.Second)
	p.Update(push.Progress{PushID: 7, Items: 320, ToSend: 300, Sent: 250, Updated: 248, Failed: 2, Refused: 12, Skipped: 8,
		Requests: 5, PlannedRequests: 55, Left: 46 * time.Second})
	_, err := p.Write([]byte("level=WARN msg=\"a log line\"\n"))
	require.NoError(t, err)
	clock.add(10 * time.Second)
	p.mu.Lock()
	p.draw(clock.now()) // as the ticker does
	p.mu.Unlock()
	require.Equal(t, []string{
		`level=WARN msg="a log line"`,
		"push 7 of agency: 250/300 sent, 248 updated, 2 failed, 12 refused, 8 skipped, 5/55 requests, 36s left, elapsed 13s",
	}, v.Screen())

	clock.add(40 * time.Second)
	p.End(&push.Summary{PushID: 7, Account: "agency", ToSend: 300, Sent: 300, Updated: 297, Failed: 3, Refused: 12, Unchanged: 6, Waiting: 2,
		BulkRequests: 5, SingleRequests: 50, PlannedRequests: 55, Status: "done"}, nil)
	require.Equal(t, []string{
		`level=WARN msg="a log line"`,
		"push 7 of agency finished with failures: 300/300 sent, 297 updated, 3 failed, 12 refused, 8 skipped, 55/55 requests, elapsed 53s",
	}, v.All(), "one line left, nothing stale")
	p.Update(push.Progress{PushID: 7})
	require.Len(t, v.All(), 2, "nothing drawn after the end")
}

// TestPushProgressInterrupted: a first interrupt shows the push stopping;
// its end says it was interrupted, and what was not sent.
func TestPushProgressInterrupted(t *testing.T) {
	t.Parallel()
	clock := newProgressClock()
	p, v := termPushProgress(t, clock)
	p.Update(push.Progress{PushID: 3, Items: 100, ToSend: 100, PlannedRequests: 2, Left: time.Minute})
	p.interrupt("etl: interrupt: finishing the work in flight (again to stop at once)\n")
	p.Update(push.Progress{PushID: 3, Items: 100, ToSend: 100, Sent: 50, Updated: 50, Requests: 1, PlannedRequests: 2, Left: time.Minute})
	require.Equal(t, []string{
		"etl: interrupt: finishing the work in flight (again to stop at once)",
		"push 3 of agency stopping: 50/100 sent, 50 updated, 0 failed, 0 refused, 0 skipped, 1/2 requests, elapsed 0s",
	}, v.Screen())
	p.End(&push.Summary{PushID: 3, Account: "agency", ToSend: 100, Sent: 50, Updated: 50, NotSent: 50, BulkRequests: 1, PlannedRequests: 2,
		Status: "interrupted"}, fmt.Errorf("push interrupted: %w", context.Canceled))
	require.Equal(t, "push 3 of agency interrupted: 50/100 sent, 50 updated, 0 failed, 0 refused, 0 skipped, 50 not sent, 1/2 requests, elapsed 0s",
		v.All()[1])
}

// TestPushProgressLogRecords: without a terminal, a record "progress"
// when the push is planned, then at most one per interval, the time left
// counted down from the push's last call.
func TestPushProgressLogRecords(t *testing.T) {
	t.Parallel()
	clock := newProgressClock()
	var out bytes.Buffer
	p := NewLogPush(timelessJSONLog(&out), "agency", 10*time.Second, clock.now)
	at := func(d time.Duration, pr push.Progress) {
		clock.add(d)
		p.Update(pr)
	}
	at(0, push.Progress{PushID: 4, Items: 60, ToSend: 55, Refused: 5, PlannedRequests: 6, Left: 2 * time.Second})
	at(time.Second, push.Progress{PushID: 4, Items: 60, ToSend: 55, Sent: 50, Updated: 50, Refused: 5, Requests: 1, PlannedRequests: 6, Left: time.Second}) // not due
	at(9*time.Second, push.Progress{PushID: 4, Items: 60, ToSend: 55, Sent: 51, Updated: 50, Failed: 1, Refused: 5, Requests: 2, PlannedRequests: 6, Left: 20 * time.Second})
	at(time.Second, push.Progress{PushID: 4, Items: 60, ToSend: 55, Sent: 52, Updated: 51, Failed: 1, Refused: 5, Requests: 3, PlannedRequests: 6}) // not due
	p.End(&push.Summary{PushID: 4}, nil)
	p.Update(push.Progress{PushID: 4})

	require.Equal(t, []map[string]any{{
		"level": "INFO", "msg": "progress", "push_id": 4.0, "account": "agency", "items": 60.0, "to_send": 55.0, "sent": 0.0,
		"updated": 0.0, "failed": 0.0, "refused": 5.0, "skipped": 0.0, "requests": 0.0, "requests_planned": 6.0,
		"left_seconds": 2.0, "elapsed_seconds": 0.0,
	}, {
		"level": "INFO", "msg": "progress", "push_id": 4.0, "account": "agency", "items": 60.0, "to_send": 55.0, "sent": 51.0,
		"updated": 50.0, "failed": 1.0, "refused": 5.0, "skipped": 0.0, "requests": 2.0, "requests_planned": 6.0,
		"left_seconds": 20.0, "elapsed_seconds": 10.0,
	}}, jsonRecords(t, out.String()))
}

// termPushProgress is a push's live display on a fake terminal of 200 x
// 10, redrawn by the push's calls only (on the fake clock).
func termPushProgress(t *testing.T, clock *progressClock) (*Push, *vt.Terminal) {
	v := vt.New(t, 200, 10)
	p := NewTermPush(v, "agency", clock.now)
	p.tick = time.Hour
	t.Cleanup(p.Halt)
	return p, v
}

// timelessJSONLog logs JSON to w without the time.
func timelessJSONLog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
}

// jsonRecords decodes the JSON log records of out, one a line.
func jsonRecords(t *testing.T, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), l)
		recs = append(recs, rec)
	}
	return recs
}
