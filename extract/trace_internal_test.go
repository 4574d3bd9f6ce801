package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNotHTTPReadsNetHTTPsWords: net/http tells bytes that are not HTTP
// only in its error text; notHTTP reads it, including the race where a
// server that speaks first (SSH) is heard before the request is written,
// and tells nothing of a connection that had carried an answer, of a
// caller that gave up or of a timeout.
func TestNotHTTPReadsNetHTTPsWords(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tc := range []struct {
		name            string
		err             error
		written, spoken bool
		ctx             context.Context
		want            *NotHTTPError // nil: err as it was
	}{
		{name: "closed", err: fmt.Errorf("Get: %w", io.EOF), written: true, want: &NotHTTPError{Silent: true}},
		{name: "reset", err: fmt.Errorf("Get: read: %w", syscall.ECONNRESET), written: true, want: &NotHTTPError{Silent: true, Reset: true}},
		{name: "closed before it was written", err: fmt.Errorf("Get: %w", io.EOF)},
		{name: "a status line that is not HTTP", err: errors.New(`Get: malformed HTTP status code "Ubuntu-3ubuntu13"`), written: true,
			want: &NotHTTPError{Why: `malformed HTTP status code "Ubuntu-3ubuntu13"`}},
		{name: "bytes before the request", err: errors.New(`Get: readLoopPeekFailLocked: %!w(<nil>)`),
			want: &NotHTTPError{Why: "bytes before the request was sent (an HTTP server never speaks first)"}},
		{name: "a long line, cut", err: fmt.Errorf(`Get: malformed HTTP response %q`, long), written: true,
			want: &NotHTTPError{Why: (`malformed HTTP response "` + long)[:maxWhyExcerpt] + "..."}},
		{name: "a connection that carried an answer", err: fmt.Errorf("Get: %w", io.EOF), written: true, spoken: true},
		{name: "the caller gave up", err: context.Canceled, written: true, ctx: ended},
		{name: "a timeout", err: fmt.Errorf("Get: %w", context.DeadlineExceeded), written: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := tc.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			w := &wire{spoken: tc.spoken}
			got := w.notHTTP(ctx, tc.err, tc.written)
			if tc.want == nil {
				require.Equal(t, tc.err, got)
				return
			}
			var nh *NotHTTPError
			require.ErrorAs(t, got, &nh)
			require.Equal(t, tc.want.Silent, nh.Silent)
			require.Equal(t, tc.want.Reset, nh.Reset)
			require.Equal(t, tc.want.Why, nh.Why)
			require.ErrorIs(t, got, tc.err)
			require.LessOrEqual(t, len(nh.Why), maxWhyExcerpt+len("..."))
		})
	}
}
