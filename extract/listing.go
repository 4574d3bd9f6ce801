package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/plain"
	"github.com/seoetl/etl/internal/redact"
	"github.com/seoetl/etl/listing"
)

// This file is the client of the listing-management endpoints (spec 4.5):
// Get location, Get locations, Update location and Update locations, paced
// to their rate limits (spec 8.2) as the catalog states them.

// Clock is the time of the listing requests: what their pacers read and
// how their back-off waits. Tests give a virtual clock whose Sleep moves
// Now; the default is the system clock.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or returns ctx.Err() when ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

type systemClock struct{}

func (systemClock) Now() time.Time                                   { return time.Now() }
func (systemClock) Sleep(ctx context.Context, d time.Duration) error { return sleep(ctx, d) }

// ErrMaybeApplied is matched (errors.Is) by an error of Update or
// UpdateMany whose request was written and then not refused: the
// connection failed before an answer, or the API answered 5xx. The update
// may have been applied, wholly or (a bulk update) in part. The client
// never sends it again itself: the caller decides, reading the locations
// back.
var ErrMaybeApplied = errors.New("the update was sent and not refused, so the API may have applied it (read the location back before sending it again)")

// paceMargin widens the spacing of the requests of one operation past
// Per/Requests. The API counts its limits as a strict sliding window (the
// sandbox does: N requests of an account and operation admitted within
// any Per, spec 8.2's "up to N requests per period"), and it counts them
// as they arrive, not as they leave: requests spaced exactly Per/Requests
// apart put N+1 of them within one Per at the server as soon as the
// network delays the first of them more than the last. A margin of 5%
// lets N+1 consecutive requests span 1.05 Per as sent, so the window
// holds N until their delays differ by 5% of Per (50ms for the
// per-second limits, 3s for Update locations' minute), for a throughput
// 5% under the limit.
const paceMargin = 0.05

// ListingInterval is the spacing of the requests of the Get operations
// (Get location, Get locations) as Listings paces them: Per/Requests of
// their rate limit plus paceMargin; 0 when op has no rate limit. A plan of
// listing reads (the pull's) reads its times from it. The update
// operations are not paced evenly but by sliding windows
// (UpdateWindowRate), which listing.PlanPush predicts: for them the
// interval is only their average spacing.
func ListingInterval(op *catalog.ListingOperation) time.Duration {
	r := op.Rate
	if r.Requests <= 0 || r.Per <= 0 {
		return 0
	}
	return time.Duration(float64(r.Per) / float64(r.Requests) * (1 + paceMargin))
}

// windowed reports whether the requests of op are paced by a sliding
// window rather than evenly: the updates, whose plan (listing.PlanPush)
// reads the limits as windows. Five bulk updates may then go one after the
// other as soon as each is answered, where even pacing would space them
// 12.6 s apart, and the push's dry run predicts what the push does.
func windowed(op *catalog.ListingOperation) bool { return op.Method != http.MethodGet }

// UpdateWindowRate is the rate limit the update operations (Update
// location, Update locations) are paced at: their catalog limit paced
// listing.DefaultMargin under it (listing.Paced), read as a sliding window
// (listing.Window), the model listing.PlanPush plans with. op must be an
// update operation.
func UpdateWindowRate(op *catalog.ListingOperation) catalog.RateLimit {
	return listing.Paced(op.Rate, listing.DefaultMargin)
}

// Listings calls the listing-management endpoints (spec 4.5) of the
// Client it comes from (Client.Listings), on its HTTP client, base URL,
// redirect policy, redactor and back-off, under Config.ListingPrefix.
//
// Its requests are authorized by Config.Authorize only: the endpoints
// take a bearer token (spec 4.5, 5.2), never the API key, which is not
// sent to them; without Authorize the API answers 401. The Client's rate
// limit and in-flight bound (RatePerSecond, MaxConcurrent) are the
// backlink endpoints' and do not apply here. Instead each operation has a
// pacer of its own, read from its catalog.RateLimit, on Config.Clock: the
// requests of the Get operations, retries included, are spaced evenly at
// Per/Requests plus paceMargin (ListingInterval); those of the update
// operations go as soon as a sliding window of their limit paced
// listing.DefaultMargin under it has room (UpdateWindowRate,
// listing.Window: five bulk updates back to back, then the sixth once the
// first has left the window), which is what listing.PlanPush predicts.
// At most Concurrent requests of an operation (Update locations: one) are
// in flight, from the first attempt until the body of the answer is
// closed. The operations pace independently, as their limits are
// separate (spec 8.2).
//
// A Listings is safe for concurrent use; its pacers hold across every
// goroutine using it.
type Listings struct {
	c      *Client
	clock  Clock
	prefix string
	lanes  map[*catalog.ListingOperation]*lane
	// answered says the API answered an attempt of this client (any
	// status): from then on an attempt not sent is an outage, tried
	// again; before, a mistake in the address (see do).
	answered atomic.Bool
}

// Listings returns the listing-management client of c. There is one per
// Client: its pacers are shared by every caller of c, so that one
// account's limits hold across a pull and a push in one process. A Client
// calls one account's endpoints; two accounts need two Clients.
func (c *Client) Listings() *Listings {
	c.listingsOnce.Do(func() {
		l := &Listings{c: c, clock: c.cfg.Clock, prefix: c.cfg.ListingPrefix, lanes: map[*catalog.ListingOperation]*lane{}}
		for _, op := range catalog.ListingOperations() {
			l.lanes[op] = newLane(op)
		}
		c.listings = l
	})
	return c.listings
}

// Page returns page (one-based) of the account's locations, size per page:
// GET {prefix}?page=&size= (Get locations). The body is a
// listing.PageBody. A size the API refuses is told by SizeRefused.
func (l *Listings) Page(ctx context.Context, page, size int) (*Response, error) {
	q := url.Values{"page": {strconv.Itoa(page)}, "size": {strconv.Itoa(size)}}
	return l.do(ctx, call{op: catalog.GetLocations, query: q, size: size})
}

// Get returns the location id: GET {prefix}/{id} (Get location). The body
// is a listing.LocationBody.
func (l *Listings) Get(ctx context.Context, id string) (*Response, error) {
	return l.do(ctx, call{op: catalog.GetLocation, id: id})
}

// Update replaces the fields of the location id with body, the JSON of an
// update (spec 2.14, without the id): PUT {prefix}/{id} (Update location).
// The body of the answer is a listing.LocationBody. An error that may
// hide an applied update matches ErrMaybeApplied; a body that fails to
// read came with a 2xx, so the update was applied.
func (l *Listings) Update(ctx context.Context, id string, body []byte) (*Response, error) {
	return l.do(ctx, call{op: catalog.UpdateLocation, id: id, body: body})
}

// UpdateMany updates several locations with body, a listing.BulkRequest
// as JSON (at most catalog.MaxBulkLocations, ids unique): PUT {prefix}
// (Update locations). The body of the answer is a listing.BulkBody, HTTP
// 200 even when items FAILED. An error that may hide an applied update
// matches ErrMaybeApplied; a body that fails to read came with a 2xx, so
// the update was applied, whatever became of each item.
func (l *Listings) UpdateMany(ctx context.Context, body []byte) (*Response, error) {
	return l.do(ctx, call{op: catalog.UpdateLocations, body: body})
}

// Now reads the clock the requests are paced on (Config.Clock): the
// time of the update windows (WaitTurn, Window, Seed).
func (l *Listings) Now() time.Time { return l.clock.Now() }

// Window returns the times of the requests of op that its sliding window
// holds (the last Requests of its limit paced as UpdateWindowRate says),
// oldest first, on the clock of Now; nil for an operation not paced by a
// window (the Get operations). A plan of what the next requests of op
// will wait for (listing.PlanOptions.EarlierBulk) starts from it.
func (l *Listings) Window(op *catalog.ListingOperation) []time.Time {
	ln := l.lanes[op]
	if ln == nil || ln.window == nil {
		return nil
	}
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return ln.window.Times()
}

// Seed adds to the window of op requests sent before this Listings knew
// of them, at times on the clock of Now: those another process sent (a
// push that died) and recorded, so that the first requests of this one do
// not meet a 429. A time in the future is taken as now. It does nothing
// for an operation not paced by a window (listing.Window.Seed).
func (l *Listings) Seed(op *catalog.ListingOperation, sent []time.Time) {
	ln := l.lanes[op]
	if ln == nil || ln.window == nil || len(sent) == 0 {
		return
	}
	now := l.clock.Now()
	times := make([]time.Time, len(sent))
	for i, t := range sent {
		times[i] = t
		if t.After(now) {
			times[i] = now
		}
	}
	ln.mu.Lock()
	defer ln.mu.Unlock()
	ln.window.Seed(times)
}

// WaitTurn waits until a request of op may go under its window and
// returns that moment, on the clock of Now, without taking the turn: the
// next request of op, sent at once, goes then, so a caller that sends the
// requests of op one at a time may record when each leaves before sending
// it. An operation not paced by a window (the Get operations) is not
// waited for. It returns ctx's error when ctx ends first.
func (l *Listings) WaitTurn(ctx context.Context, op *catalog.ListingOperation) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	ln := l.lanes[op]
	now := l.clock.Now()
	if ln == nil || ln.window == nil {
		return now, nil
	}
	ln.mu.Lock()
	at := ln.window.Next(now)
	ln.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		if err := l.clock.Sleep(ctx, d); err != nil {
			return time.Time{}, err
		}
	}
	return l.clock.Now(), nil
}

// Backoff waits the Client's jittered exponential back-off before attempt
// (2 for the first retry) on the clock of Now: what a caller that sends
// a request again itself (an update whose answer was a 5xx, found not
// applied) waits, as the client waits between its own attempts.
func (l *Listings) Backoff(ctx context.Context, attempt int) error {
	return l.clock.Sleep(ctx, l.c.backoff(attempt))
}

// OperationStats counts the requests of one listing operation.
type OperationStats struct {
	// Requests are the attempts written to the network, retries
	// included.
	Requests int64
	// TooMany are the 429 answers among them.
	TooMany int64
	// Retries are the attempts after the first of a call (sent or not).
	Retries int64
}

// ListingStats are the counts of each listing operation, by its catalog
// name (catalog.GetLocation.Name, ...), since the Listings was made.
type ListingStats map[string]OperationStats

// Stats returns the counts of each operation so far.
func (l *Listings) Stats() ListingStats {
	s := ListingStats{}
	for op, ln := range l.lanes {
		s[op.Name] = OperationStats{Requests: ln.requests.Load(), TooMany: ln.tooMany.Load(), Retries: ln.retries.Load()}
	}
	return s
}

// lane is the pacer and the counts of one operation.
type lane struct {
	op *catalog.ListingOperation
	// every spaces the departures of an evenly paced operation (the Get
	// operations): 0 when the catalog states no rate or the operation is
	// windowed. gate holds one token, taken by the request about to leave
	// from its turn until it has left (its header block written) or the
	// attempt ended unwritten; left is when the last one left, on the
	// lane's clock, guarded by gate.
	every time.Duration
	gate  chan struct{}
	left  time.Time
	// window admits the requests of a windowed operation (the updates);
	// mu guards it.
	mu     sync.Mutex
	window *listing.Window
	// slots holds a token per call in flight; nil without a Concurrent
	// bound.
	slots chan struct{}

	requests, tooMany, retries atomic.Int64
}

func newLane(op *catalog.ListingOperation) *lane {
	ln := &lane{op: op}
	switch every := ListingInterval(op); {
	case windowed(op) && every > 0:
		ln.window = listing.NewWindow(UpdateWindowRate(op))
	case every > 0:
		ln.every = every
		ln.gate = make(chan struct{}, 1)
	}
	if op.Rate.Concurrent > 0 {
		ln.slots = make(chan struct{}, op.Rate.Concurrent)
	}
	return ln
}

// pace waits for the operation's next turn on clock and returns depart,
// which the caller calls once the request has left (its header block is
// written) or the attempt ended without it; more calls do nothing.
//
// An evenly paced operation spaces its requests by when they leave, not
// by when their turn was given: a request leaves every after the one
// before it left. A schedule of turns (a token bucket such as
// golang.org/x/time/rate's, which this pacer was) counts a turn when it
// is given; a request that leaves late (a busy machine, a new
// connection, a renewed token) is then followed at once by the next,
// whose turn had come meanwhile, and the API, which counts requests as
// they arrive, sees two within a few milliseconds: 11 in one second.
// Here the next request waits for the gate, which the one before frees
// as it leaves, and then for every after that moment.
func (ln *lane) pace(ctx context.Context, clock Clock) (depart func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ln.window != nil {
		// The turn is taken at once, so that concurrent callers queue in
		// order; a turn given up (ctx ends) stays counted, which only
		// keeps the window fuller than it is.
		ln.mu.Lock()
		now := clock.Now()
		at := ln.window.Next(now)
		ln.window.Add(at)
		ln.mu.Unlock()
		if d := at.Sub(now); d > 0 {
			return func() {}, clock.Sleep(ctx, d)
		}
		return func() {}, nil
	}
	if ln.gate == nil {
		return func() {}, nil
	}
	select {
	case ln.gate <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	depart = func() {
		once.Do(func() {
			ln.left = clock.Now()
			<-ln.gate
		})
	}
	if !ln.left.IsZero() {
		if d := ln.left.Add(ln.every).Sub(clock.Now()); d > 0 {
			if err := clock.Sleep(ctx, d); err != nil {
				<-ln.gate // nothing left: the last departure stands
				return nil, err
			}
		}
	}
	return depart, nil
}

// hold takes a slot of the operation, when it bounds its calls in flight;
// release frees it (once, whoever calls it).
func (ln *lane) hold(ctx context.Context) (release func(), err error) {
	if ln.slots == nil {
		return func() {}, nil
	}
	select {
	case ln.slots <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-ln.slots }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// call is one call of a listing operation.
type call struct {
	op    *catalog.ListingOperation
	id    string     // ByID operations
	query url.Values // Get locations
	body  []byte     // the operations with a Body
	size  int        // Get locations: the size asked, for SizeRefused
}

// verdict is what a failed attempt leaves to do.
type verdict int

const (
	stop         verdict = iota // return the error
	again                       // another attempt may succeed and is safe
	maybeApplied                // an update was sent and not refused
)

// do sends k, trying again what may succeed and is safe to send again:
//
//   - Not sent (connection refused, DNS, TLS): retried, up to
//     min(MaxAttempts, 4) such attempts, as Do does; an error of a call
//     none of whose attempts was sent matches ErrNotSent. While the API
//     has answered no attempt of this Listings, the call stops at the
//     first such attempt instead, as Do does for Request.FailFast: the
//     address is wrong (or the sandbox not started), which no retry
//     fixes, and Client.Unreachable says what to check.
//   - A 429 (the request was refused, not applied): retried, and counted.
//   - A 5xx, or a request written and not answered: a Get is retried (it
//     costs nothing, spec 8.1, and changes nothing); an update may have
//     been applied and is returned at once, matching ErrMaybeApplied.
//   - Any other error answer, a redirect to another origin, or a
//     credential the Authorize transport cannot renew: returned at once.
//
// Retries wait the Client's jittered exponential back-off on the Clock,
// then the operation's pace; a call of an operation with a Concurrent
// bound holds its slot through them.
func (l *Listings) do(ctx context.Context, k call) (*Response, error) {
	ln := l.lanes[k.op]
	name := k.op.Name
	release, err := ln.hold(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: waiting for a turn (%d at a time): %w", name, ErrNotSent, k.op.Rate.Concurrent, err)
	}
	var (
		last    error         // the failure of the last attempt
		answer  *ListingError // the last error answer
		unsents int
	)
	for attempt := 1; attempt <= l.c.cfg.MaxAttempts; attempt++ {
		if attempt > 1 {
			ln.retries.Add(1)
			if err := l.clock.Sleep(ctx, l.c.backoff(attempt)); err != nil {
				release()
				return nil, fmt.Errorf("%s: %w (last error: %w)", name, err, last)
			}
		}
		resp, v, sent, err := l.once(ctx, ln, k, release)
		if err == nil {
			resp.Attempts = attempt
			return resp, nil
		}
		l.c.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "listing request failed",
			slog.String("operation", name), slog.Int("attempt", attempt),
			slog.Bool("sent", sent), slog.Bool("retry", v == again), slog.String("error", err.Error()))
		var le *ListingError
		if errors.As(err, &le) {
			answer = le
		}
		switch {
		case v == maybeApplied:
			release()
			return nil, named(name, fmt.Errorf("%w: %w", ErrMaybeApplied, err), err)
		case !sent && answer == nil:
			last = fmt.Errorf("%w: %w", ErrNotSent, err)
		case !sent:
			last = fmt.Errorf("%w (after an error answer: %w)", err, answer)
		default:
			last = err
		}
		if !sent {
			if unsents++; unsents >= maxUnsentAttempts || (answer == nil && !l.answered.Load()) {
				v = stop
			}
		}
		if v != again || ctx.Err() != nil {
			release()
			return nil, named(name, last, last)
		}
	}
	release()
	return nil, named(name, fmt.Errorf("giving up after %d attempts: %w", l.c.cfg.MaxAttempts, last), last)
}

// named is err with the operation's name in front, unless cause, the
// failure err tells of, is an error answer, whose text names it already.
func named(name string, err, cause error) error {
	if le, ok := cause.(*ListingError); ok && le != nil {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// once paces and makes one attempt of k. A failure comes with what is
// left to do and whether the attempt was written to the network; its
// error names no operation unless it is a *ListingError. release frees
// the call's slot: a success hands it to the body.
func (l *Listings) once(ctx context.Context, ln *lane, k call, release func()) (_ *Response, _ verdict, sent bool, _ error) {
	depart, err := ln.pace(ctx, l.clock)
	if err != nil {
		return nil, stop, false, fmt.Errorf("waiting for the operation's rate limit: %w", err)
	}
	// The request leaves when its header block is written; an attempt
	// that ends unwritten frees the turn as it ends.
	defer depart()
	reqCtx, cancel := context.WithCancelCause(ctx)
	w := &wire{cancel: cancel}
	var creds credentials
	tctx := httptrace.WithClientTrace(w.trace(reqCtx), &httptrace.ClientTrace{WroteHeaderField: creds.wrote, WroteHeaders: depart})
	var body io.Reader
	if k.body != nil {
		body = bytes.NewReader(k.body)
	}
	hreq, err := http.NewRequestWithContext(tctx, k.op.Method, l.url(k), body)
	if err != nil {
		cancel(nil)
		return nil, stop, false, fmt.Errorf("building the request: %w", l.c.redact.Error(stripURL(err)))
	}
	if k.body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", l.c.cfg.UserAgent)
	hresp, err := l.c.cfg.HTTPClient.Do(hreq)
	if w.sent() || err == nil {
		ln.requests.Add(1)
	}
	if err == nil {
		l.answered.Store(true)
	}
	// What the attempt's errors mask: the client's key and the
	// credentials the Authorize transport sent, whatever their form.
	rd := creds.redactor(l.c.redact)
	update := k.op.Method != http.MethodGet
	if err != nil {
		cancel(nil)
		err = rd.Error(stripURL(err))
		var redirect *RedirectError
		switch {
		case errors.As(err, &redirect):
			// Answered with a redirect to another origin, never followed
			// with the credentials: not applied here.
			return nil, stop, true, err
		case permanent(err):
			return nil, stop, w.sent(), err
		case w.sent() && update:
			return nil, maybeApplied, true, err
		case w.sent():
			return nil, again, true, err
		}
		return nil, again, false, err
	}
	if hresp.StatusCode/100 == 2 {
		b := &idleBody{body: hresp.Body, reqCtx: reqCtx, cancel: cancel, idle: l.c.cfg.IdleTimeout, release: release}
		b.timer = time.AfterFunc(time.Hour, func() { cancel(ErrIdle) })
		b.timer.Stop()
		return &Response{Body: b, Header: hresp.Header, RequestID: rd.String(hresp.Header.Get("X-Request-Id"))}, stop, true, nil
	}
	defer cancel(nil)
	defer hresp.Body.Close()
	le := decodeListingError(k, hresp, rd)
	switch {
	case le.Status == http.StatusTooManyRequests:
		ln.tooMany.Add(1)
		return nil, again, true, le
	case le.Status >= 500 && update:
		return nil, maybeApplied, true, le
	case le.Status >= 500:
		return nil, again, true, le
	}
	return nil, stop, true, le
}

// url is the address of k, its id escaped as a path segment.
func (l *Listings) url(k call) string {
	u := *l.c.base
	path := k.op.Path(l.prefix, k.id)
	plain, _ := url.PathUnescape(path) // Path escaped it
	u.RawPath = u.EscapedPath() + path
	u.Path += plain
	u.RawQuery, u.Fragment = k.query.Encode(), ""
	return u.String()
}

// credentials are the values of the Authorization headers an attempt
// wrote (the Authorize transport's bearer token; a renewed one after a
// 401), caught on the wire (httptrace) since the transport sets them on
// its own copy of the request.
type credentials struct {
	mu     sync.Mutex
	values []string
}

func (c *credentials) wrote(key string, values []string) {
	if !strings.EqualFold(key, "Authorization") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range values {
		// "Bearer TOKEN": the token is the secret, and the whole value too.
		if _, token, ok := strings.Cut(v, " "); ok {
			c.values = append(c.values, strings.TrimSpace(token))
		}
		c.values = append(c.values, v)
	}
}

// redactor is base masking the credentials too.
func (c *credentials) redactor(base *redact.Redactor) *redact.Redactor {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.values) == 0 {
		return base
	}
	return base.With(c.values...)
}

// ListingError is an error answer of a listing endpoint. Its strings are
// masked: no API key, no token the request carried.
type ListingError struct {
	// Operation is the catalog name of the operation ("Get location").
	Operation string
	// Status is the HTTP status.
	Status int
	// Object is the error object of the envelope of spec 7.1 (code,
	// message, details); nil when the body was not that envelope.
	Object *listing.Error
	// Code and Message are the body of spec 7.2, {code, message}, of a 401
	// or a 429 (or another status answered so). When the body was neither
	// that nor the envelope (a proxy's page), Code is 0 and Message a
	// bounded excerpt of it.
	Code    int
	Message string
	// RequestID is the envelope's requestId, else the X-Request-Id header.
	RequestID string

	size int // Get locations: the size asked (SizeRefused)
}

func (e *ListingError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: HTTP %d", e.Operation, e.Status)
	// The provider's words are data: escaped (package plain), so that an
	// error printed anywhere (a command's last line, a run's FAILED line,
	// a log) can neither move the cursor nor forge a line.
	switch {
	case e.Object != nil:
		fmt.Fprintf(&b, ": %s", plain.Text(e.Object.Error(), 0))
	case e.Message != "":
		fmt.Fprintf(&b, ": %s", plain.Text(e.Message, 0))
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", plain.Text(e.RequestID, 0))
	}
	return b.String()
}

// HasDetail reports whether the envelope's error object has a detail of
// code (catalog.DetailLocationNotFound, ...).
func (e *ListingError) HasDetail(code string) bool {
	if e.Object == nil {
		return false
	}
	for _, d := range e.Object.Details {
		if d.Code == code {
			return true
		}
	}
	return false
}

// decodeListingError reads the error answer of k: the envelope of spec
// 7.1, the {code, message} of 7.2, or an excerpt of anything else, every
// string masked by rd.
func decodeListingError(k call, resp *http.Response, rd *redact.Redactor) *ListingError {
	e := &ListingError{Operation: k.op.Name, Status: resp.StatusCode, size: k.size}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var top struct {
		Error     json.RawMessage `json:"error"`
		RequestID string          `json:"requestId"`
		Code      *int            `json:"code"`
		Message   *string         `json:"message"`
	}
	var obj listing.Error
	decoded := json.Unmarshal(body, &top) == nil
	switch {
	case decoded && len(top.Error) > 0 && json.Unmarshal(top.Error, &obj) == nil && obj.Code != "":
		obj.Code, obj.Message = rd.String(obj.Code), rd.String(obj.Message)
		for i, d := range obj.Details {
			obj.Details[i] = listing.Problem{Code: rd.String(d.Code), Message: rd.String(d.Message),
				Field: rd.String(d.Field), Index: rd.String(d.Index)}
		}
		e.Object = &obj
		e.RequestID = rd.String(top.RequestID)
	case decoded && top.Code != nil && top.Message != nil:
		e.Code, e.Message = *top.Code, rd.String(*top.Message)
	default:
		// Neither: a bounded excerpt, masked before it is cut.
		var text string
		if len(body) == maxErrorBody {
			text = rd.Truncated(string(body))
		} else {
			text = rd.String(string(body))
		}
		text = strings.TrimSpace(text)
		if len(text) > maxErrorExcerpt {
			text = redact.Cut(text, maxErrorExcerpt) + "..."
		}
		e.Message = text
	}
	if e.RequestID == "" {
		e.RequestID = rd.String(resp.Header.Get("X-Request-Id"))
	}
	return e
}
