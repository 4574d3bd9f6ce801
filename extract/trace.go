package extract

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http/httptrace"
	"sync"
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
			w.answered = true
		},
	})
}

// sent reports whether the attempt's request was written to a connection.
func (w *wire) sent() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

// isHTTP2 reports whether a connection speaks HTTP/2, whose streams share
// it: an HTTP/2 replay is stopped by the context alone, never by closing
// the connection under other requests.
func isHTTP2(info httptrace.GotConnInfo) bool {
	tc, ok := info.Conn.(*tls.Conn)
	return ok && tc.ConnectionState().NegotiatedProtocol == "h2"
}
