package extract

import (
	"context"
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

// wire follows one attempt of a request on the network through the
// httptrace hooks of its context: whether it was written.
//
// "Written" is decided by WroteHeaders: the request's header block is in
// the connection's buffer and may be on the wire. It is conservative: the
// Transport's flush of that buffer can still fail with nothing sent, and a
// server's close of an idle connection can meet a request it never read.
// Both then count as maybe charged, which keeps a reservation the API did
// not charge (safe for the caps) and never the other way round.
type wire struct {
	mu      sync.Mutex
	written bool // the request's header block was written to a connection
}

// trace returns ctx with the hooks of w.
func (w *wire) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.written = true
		},
	})
}

// sent reports whether the attempt's request was written to a connection.
func (w *wire) sent() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}
