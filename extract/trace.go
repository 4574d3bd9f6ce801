package extract

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http/httptrace"
	"strings"
	"sync"
	"syscall"

	"github.com/seoetl/etl/internal/redact"
)

// ErrNotSent is matched (errors.Is) by an error of Client.Do when no
// attempt of the request was written to the network: the API cannot have
// charged it. Dial failures (connection refused, DNS, a timeout dialing),
// TLS handshake failures, a proxy refusing CONNECT, waiting for the rate
// limit or a slot, and a context that ended before sending all fail so.
var ErrNotSent = errors.New("the request was not sent")

// ErrMaybeCharged is matched (errors.Is) by an error of Client.Do when an
// attempt was written to the network and then failed without an answer
// (the connection was reset or closed before the response headers, the
// headers did not come in time, the context ended while waiting): the API
// may have charged it. Client.Do never sends such a request again.
var ErrMaybeCharged = errors.New("the request was sent but not answered, so the API may have charged it")

// errReplay is the cause of an attempt stopped before net/http's transport
// could send a written, unanswered request a second time.
var errReplay = errors.New("the connection failed before the answer " +
	"(net/http's replay of the request on another connection was stopped)")

// wire follows one attempt of a request on the network through the
// httptrace hooks of its context: whether it was written, and whether an
// answer began.
//
// It also stops a replay by net/http's Transport. The Transport sends a
// GET (an idempotent request) again on its own when the connection it
// went out on was a reused keep-alive connection that failed before the
// first byte of the answer (Transport.roundTrip, shouldRetryRequest in
// net/http/transport.go): when nothing was written (nothingWrittenError),
// which is safe; when the server's close of an idle connection raced the
// write (errServerClosedIdle), which is safe too, as the server had
// stopped reading; but also when the request WAS written and the first
// read of the answer failed (transportReadFromServerError: EOF or a
// reset). There the API may have read and charged the request, so the
// replay may be a second charge under one reservation, and the attempt
// comes back a success with nothing telling the caller. The hooks cannot
// tell these apart, so: once this attempt's headers were written and no
// answer began, asking for a connection again (GetConn) can only be such
// a replay, and wire cancels the attempt's context, which the Transport
// checks before each try and while it waits for a connection. An idle
// connection may still be handed over in that instant, so GotConn closes
// it before anything is written to it. A redirect is not stopped: its
// first request was answered.
//
// "Written" is decided by WroteHeaders: the request's header block is in
// the connection's buffer and may be on the wire. It is conservative: the
// Transport's flush of that buffer can still fail with nothing sent, and a
// server's close of an idle connection can meet a request it never read.
// Both then count as maybe charged, which keeps a reservation the API did
// not charge (safe for the caps) and never the other way round.
type wire struct {
	cancel context.CancelCauseFunc // the attempt's context

	mu       sync.Mutex
	written  bool // the request's header block was written to a connection
	answered bool // the first byte of an answer arrived after the last write
	replay   bool // the Transport asked for a connection for a replay; stopped
	// heard says a byte of an answer arrived in the attempt (a redirect's
	// included); spoken that a connection of the attempt had carried an
	// answer before (a reused keep-alive one) or speaks HTTP/2 (its ALPN
	// said so): something at the address spoke HTTP.
	heard, spoken bool
}

// trace returns ctx with the hooks of w.
func (w *wire) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn: func(string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.written && !w.answered {
				w.replay = true
				w.cancel(errReplay)
			}
		},
		GotConn: func(info httptrace.GotConnInfo) {
			w.mu.Lock()
			replay := w.replay
			w.spoken = w.spoken || info.Reused || isHTTP2(info)
			w.mu.Unlock()
			if replay && !isHTTP2(info) {
				_ = info.Conn.Close()
			}
		},
		WroteHeaders: func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.written, w.answered = true, false
		},
		GotFirstResponseByte: func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.answered, w.heard = true, true
		},
	})
}

// sent reports whether the attempt's request was written to a connection.
func (w *wire) sent() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

// NotHTTPError is the cause of an attempt that was written and got
// nothing HTTP back, on a connection that had carried no answer before:
// the peer closed the connection (or reset it, Reset) before the first
// byte of an answer (Silent), or the bytes it sent are not HTTP (Why).
// That is what another service does with an HTTP request: PostgreSQL
// reads it and closes the connection without a byte, an SSH server sends
// its banner. A timeout waiting for the answer, a caller giving up, and
// an HTTP answer cut off after its first byte are not NotHTTPErrors.
//
// Client.Do's error with it matches ErrMaybeCharged all the same: the
// API's own server may die after reading a request and close the
// connection without a byte. Only a caller that has had no HTTP answer
// from the address yet can tell that nothing that speaks the API, and
// so nothing that charges, is there (see Client.NotHTTP).
type NotHTTPError struct {
	// Silent says no byte came: the connection was closed, or reset
	// (Reset), before an answer began.
	Silent, Reset bool
	// Why is, when bytes came, net/http's words for what in them is not
	// HTTP, such as: malformed HTTP status code "Ubuntu-3ubuntu13".
	Why string
	err error
}

func (e *NotHTTPError) Error() string { return e.err.Error() }
func (e *NotHTTPError) Unwrap() error { return e.err }

// maxWhyExcerpt bounds NotHTTPError.Why.
const maxWhyExcerpt = 100

// notHTTP wraps err, the failure of an attempt that got no answer (its
// text masked already), in a *NotHTTPError when nothing HTTP came back
// (see NotHTTPError); it returns err as it is otherwise. written says the
// request was written: one that was not can only have met bytes that are
// not HTTP (a server that speaks first, as SSH does), since a connection
// that fails before the request is written (refused, TLS) never got to
// be silent. ctx is the caller's: when it ended, the failure is its end.
func (w *wire) notHTTP(ctx context.Context, err error, written bool) error {
	w.mu.Lock()
	spoken, heard, replay := w.spoken, w.heard, w.replay
	w.mu.Unlock()
	if spoken || replay || ctx.Err() != nil {
		return err
	}
	if strings.Contains(err.Error(), "readLoopPeekFailLocked: %!w(<nil>)") {
		// net/http's words (persistConn.readLoopPeekFailLocked, its
		// peek having succeeded) for bytes that came on a new connection
		// before it carried a request: a server that speaks first.
		return &NotHTTPError{Why: "bytes before the request was sent (an HTTP server never speaks first)", err: err}
	}
	// net/http's words for a status line that is not HTTP (ReadResponse):
	// "malformed HTTP response %q", "... status code %q", "... version %q".
	if i := strings.Index(err.Error(), "malformed HTTP "); i >= 0 {
		why := err.Error()[i:]
		if cut := redact.Cut(why, maxWhyExcerpt); len(cut) < len(why) {
			why = cut + "..."
		}
		return &NotHTTPError{Why: why, err: err}
	}
	var ne net.Error
	if !written || heard || (errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &NotHTTPError{Silent: true, Reset: errors.Is(err, syscall.ECONNRESET), err: err}
}

// isHTTP2 reports whether a connection speaks HTTP/2, whose streams share
// it: an HTTP/2 replay is stopped by the context alone, never by closing
// the connection under other requests.
func isHTTP2(info httptrace.GotConnInfo) bool {
	tc, ok := info.Conn.(*tls.Conn)
	return ok && tc.ConnectionState().NegotiatedProtocol == "h2"
}
