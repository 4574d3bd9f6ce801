package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/plain"
	"github.com/seoetl/etl/internal/redact"
)

// ErrUnitsExhausted is matched (errors.Is) by an *APIError with status 403:
// the account has no API units left.
var ErrUnitsExhausted = errors.New("API units exhausted upstream")

// APIError is an error answer of the data API.
type APIError struct {
	Status  int    // HTTP status
	Type    string // error.type
	Code    int    // error.code
	Message string // error.message
	// Retryable says the client tried (or would try) the request again:
	// the status decides whether another attempt may succeed, and
	// error.retryable only among those it leaves open (see retries).
	Retryable bool
	RequestID string // meta.request_id
	Details   []json.RawMessage
	Endpoint  string // catalog name of the endpoint called
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: HTTP %d", e.Endpoint, e.Status)
	// The provider's words are data: escaped (package plain).
	if e.Type != "" {
		fmt.Fprintf(&b, " %s", plain.Text(e.Type, 0))
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", plain.Text(e.Message, 0))
	}
	if len(e.Details) > 0 {
		fmt.Fprintf(&b, " (details: %s)", plain.Text(joinRaw(e.Details), 0))
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", plain.Text(e.RequestID, 0))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrUnitsExhausted) true for a 403.
func (e *APIError) Is(target error) bool {
	return target == ErrUnitsExhausted && e.Status == http.StatusForbidden
}

func joinRaw(raw []json.RawMessage) string {
	s := make([]string, len(raw))
	for i, r := range raw {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// Config configures a Client.
type Config struct {
	// BaseURL is the data API's base address, e.g. https://api.example.com
	// (required).
	BaseURL string
	// APIKey is sent as "Authorization: Apikey KEY" (spec 5.1). Required
	// unless Authorize is set.
	APIKey string
	// Authorize, when set, authorizes the requests instead of APIKey: it
	// wraps the HTTP client's transport (http.DefaultTransport when it has
	// none) in one that sets the Authorization header itself, such as
	// package auth's bearer token of an account (spec 5.2), renewed as it
	// is due and once on a 401. An error of that transport that has a
	// method Permanent() returning true (an account that must sign in
	// again) fails the request at once, untried again, and Refusal
	// reports it.
	Authorize func(next http.RoundTripper) http.RoundTripper
	// HTTPClient sends the requests; default: a client whose transport
	// times out connecting (10s) and waiting for headers (60s), with no
	// overall timeout since bodies are streamed. The client uses a copy of
	// it that refuses redirects to another origin than BaseURL's
	// (RedirectError) before its own CheckRedirect is asked.
	HTTPClient *http.Client
	// MaxAttempts bounds the tries of one request, retries included;
	// default 10. Error answers (429, 5xx) cost nothing, so a storm of them
	// is outlasted rather than failing the page. Attempts that were not
	// sent (connection refused, DNS) stop after min(MaxAttempts, 4): a
	// wrong address is a mistake to report, not to wait out.
	MaxAttempts int
	// Backoff is the base delay of the jittered exponential back-off
	// between attempts; default 500ms.
	Backoff time.Duration
	// MaxBackoff bounds one back-off; default 30s.
	MaxBackoff time.Duration
	// Logger receives one debug line per request; default discards.
	Logger *slog.Logger
	// UserAgent is sent with every request; default "etl".
	UserAgent string
	// RatePerSecond spaces the requests of this client evenly, at most this
	// many a second (retries included); default
	// catalog.AccountRequestsPerSecond, the API's account limit; negative:
	// no limit.
	RatePerSecond float64
	// MaxConcurrent bounds the requests in flight, from sending until the
	// body is closed; default catalog.AccountConcurrentRequests, the
	// API's account limit; negative: no limit.
	MaxConcurrent int
	// IdleTimeout bounds how long one read of a response body may wait for
	// data; a body that stalls longer fails with ErrIdle, so a stuck
	// connection never holds a page (and its database transaction) open.
	// Default 60s.
	IdleTimeout time.Duration
	// ListingPrefix is the path prefix of the listing-management endpoints
	// (Listings), one of catalog.LocationsPrefixes in practice; default
	// catalog.LocationsPrefix.
	ListingPrefix string
	// Clock is the time of the listing requests: their pacers and the
	// back-off between their attempts (Listings); default the system
	// clock. Tests give a virtual one. The backlink requests of Do keep
	// the system clock.
	Clock Clock
}

// RedirectError is the cause of a request that the API redirected to
// another origin (scheme, host or port) than BaseURL's. The client does not
// follow it, since it would send the key there, and does not retry it.
type RedirectError struct {
	To     string // the origin redirected to, scheme://host:port
	Origin string // BaseURL's origin
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the API redirected to %s, another origin than ETL_API_URL %s; "+
		"credentials are only sent to ETL_API_URL's origin: fix ETL_API_URL", e.To, e.Origin)
}

// origin returns the scheme, host and port of u, the port filled in when
// the scheme implies it.
func origin(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// checkRedirect refuses a redirect to another origin than base's, then
// asks next (the caller's policy; nil: net/http's default of at most 10
// redirects).
func checkRedirect(base *url.URL, next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	want := origin(base)
	return func(req *http.Request, via []*http.Request) error {
		if got := origin(req.URL); got != want {
			return &RedirectError{To: got, Origin: want}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// ErrIdle is the cause of a body read that waited longer than IdleTimeout.
var ErrIdle = errors.New("the response body stalled: no data within the idle timeout")

func (c Config) withDefaults() Config {
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&netDialer).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
		}}
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 10
	}
	if c.Backoff == 0 {
		c.Backoff = 500 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.UserAgent == "" {
		c.UserAgent = "etl"
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 60 * time.Second
	}
	if c.RatePerSecond == 0 {
		c.RatePerSecond = catalog.AccountRequestsPerSecond
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = catalog.AccountConcurrentRequests
	}
	if c.ListingPrefix == "" {
		c.ListingPrefix = catalog.LocationsPrefix
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	return c
}

func (c Config) validate() error {
	if c.BaseURL == "" {
		return errors.New("extract: the API base URL is empty (set ETL_API_URL)")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("extract: the API base URL %q is not an http(s) URL", redact.New(c.APIKey).String(c.BaseURL))
	}
	if u.User != nil {
		return errors.New("extract: the API base URL carries credentials; remove them (the key goes in ETL_API_KEY)")
	}
	if c.APIKey == "" && c.Authorize == nil {
		return errors.New("extract: the API key is empty (set ETL_API_KEY)")
	}
	if c.MaxAttempts < 1 {
		return fmt.Errorf("extract: MaxAttempts must be at least 1, got %d", c.MaxAttempts)
	}
	if p := c.ListingPrefix; !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#") || strings.HasSuffix(p, "/") {
		return fmt.Errorf("extract: ListingPrefix must be a path that begins with / and does not end with one, such as %s; got %q",
			catalog.LocationsPrefix, p)
	}
	return nil
}

// Client calls the data API. It is safe for concurrent use; its limits
// hold across every goroutine using it.
type Client struct {
	cfg    Config
	base   *url.URL
	redact *redact.Redactor
	// limiter spaces requests (burst 1: evenly spaced, so the API's own
	// bucket never sees a burst); nil without a rate limit.
	limiter *rate.Limiter
	// slots holds a token per request in flight; nil without a bound.
	slots chan struct{}

	listingsOnce sync.Once
	listings     *Listings // see Listings
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	base, _ := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	// A copy: the caller's client may serve other origins.
	hc := *cfg.HTTPClient
	hc.CheckRedirect = checkRedirect(base, cfg.HTTPClient.CheckRedirect)
	if cfg.Authorize != nil {
		next := hc.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		hc.Transport = cfg.Authorize(next)
	}
	cfg.HTTPClient = &hc
	c := &Client{cfg: cfg, base: base, redact: redact.New(cfg.APIKey)}
	if cfg.RatePerSecond > 0 {
		c.limiter = rate.NewLimiter(rate.Limit(cfg.RatePerSecond), 1)
	}
	if cfg.MaxConcurrent > 0 {
		c.slots = make(chan struct{}, cfg.MaxConcurrent)
	}
	return c, nil
}

// Redactor returns the redactor of the client's key: what it masks in its
// errors, for the stages that handle its answers (transform.Options).
func (c *Client) Redactor() *redact.Redactor { return c.redact }

// Request is one call of an endpoint.
type Request struct {
	Endpoint *catalog.Endpoint
	// Params are the query parameters; the client does not add any.
	Params url.Values
	// FailFast returns an attempt that was not sent (connection refused,
	// DNS, TLS) at once instead of trying again: a caller that has had no
	// answer from the API yet reads it as a mistake in the address, not
	// an outage to wait out (see Unreachable). Once the API has answered
	// an attempt of the request (a 5xx, a 429), the address is right and
	// attempts not sent are tried again as without FailFast.
	FailFast bool
}

// Response is a successful answer. The caller must Close Body.
type Response struct {
	Body      io.ReadCloser
	Header    http.Header
	RequestID string
	// Attempts is how many tries the request took.
	Attempts int
}

// Do sends req and returns the streaming response of the first success.
//
// What Do does with a failed attempt depends on whether the API may have
// charged it (every attempt is followed on the network with
// net/http/httptrace, see wire):
//
//   - Not sent: nothing was written to the network (connection refused,
//     DNS, a TLS handshake or proxy failure). It cost nothing, so Do tries
//     again after a back-off, up to Config.MaxAttempts, unless ctx ended.
//     Waiting for the rate limit or a slot, and a ctx that ends before
//     sending, also fail unsent (and are not tried again).
//   - An error answer of the API (429, 5xx, the error envelope): the API
//     charges none, so Do tries again when another attempt may succeed
//     (see APIError.Retryable): 408, 425, 429 and 5xx unless the
//     envelope says "retryable": false, a 400 or 422 only when it says
//     "retryable": true, and never any other status (401, 403, 404...),
//     whatever the envelope says.
//   - Sent and not answered: the request was written, then the connection
//     failed before the response headers (a reset, EOF, the transport's
//     ResponseHeaderTimeout, ctx ending while waiting), or a gateway in
//     front of the API answered 502 or 504 with a page of its own (not
//     the API's envelope): its upstream failed or timed out after the
//     request reached it. The API may have
//     charged it, and the caller reserved units for one request, so Do
//     returns at once and never sends it again itself; the caller decides
//     whether to pay for another try.
//
// The error says which of them ended the request:
//
//   - errors.Is(err, ErrMaybeCharged): the last attempt was sent and not
//     answered (whatever the attempts before it were). Keep the
//     reservation; a retry is a new request that needs one of its own.
//     When nothing HTTP came back on a connection that had carried no
//     answer before (closed or reset without a byte, or bytes that are
//     not HTTP), errors.As(err, &notHTTP), notHTTP a *NotHTTPError, too:
//     a caller that has had no HTTP answer from the address yet reads it
//     as another service there, which charged nothing.
//   - errors.Is(err, ErrNotSent): no attempt was written. Nothing was
//     charged.
//   - errors.As(err, &apiErr), apiErr an *APIError: the API answered an
//     attempt with an error. Nothing was charged. When the attempts after
//     that answer were not sent, the error carries the last answer and is
//     not ErrNotSent.
//
// Errors of a request not even attempted (one that cannot be built) are
// ErrNotSent too.
func (c *Client) Do(ctx context.Context, req Request) (*Response, error) {
	name := req.Endpoint.Name
	var (
		last   error     // the failure of the last attempt
		answer *APIError // the last error answer, when an attempt got one
	)
	unsentTries := 0
	for attempt := 1; attempt <= c.cfg.MaxAttempts; attempt++ {
		if attempt > 1 {
			if err := c.wait(ctx, attempt); err != nil {
				return nil, fmt.Errorf("%s: %w (last error: %w)", name, err, last)
			}
		}
		resp, out, retry, err := c.once(ctx, req)
		if err == nil {
			resp.Attempts = attempt
			return resp, nil
		}
		c.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "request failed",
			slog.String("endpoint", name), slog.Int("attempt", attempt),
			slog.String("outcome", out.String()), slog.Bool("retry", retry),
			slog.String("error", err.Error()))
		switch out {
		case unanswered:
			return nil, fmt.Errorf("%s: %w: %w", name, ErrMaybeCharged, err)
		case answered:
			errors.As(err, &answer)
			last = err
		default:
			last = notSent(err, answer)
			err = fmt.Errorf("%s: %w", name, last)
			// FailFast holds only while the API has answered no attempt
			// of the request: after an answer the address is right, and
			// an attempt not sent is an outage, tried again.
			if unsentTries++; unsentTries >= maxUnsentAttempts || (req.FailFast && answer == nil) {
				retry = false
			}
		}
		if !retry || ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s: giving up after %d attempts: %w", name, c.cfg.MaxAttempts, last)
}

// maxUnsentAttempts bounds the attempts of a request that were not sent
// (see Config.MaxAttempts).
const maxUnsentAttempts = 4

// notSent marks err, the failure of an attempt that was not sent: with
// ErrNotSent when no attempt of the request was sent, or else with the
// API's last error answer to an earlier attempt, which was sent but not
// charged either.
func notSent(err error, answer *APIError) error {
	if answer != nil {
		return fmt.Errorf("%w (after an error answer: %w)", err, answer)
	}
	return fmt.Errorf("%w: %w", ErrNotSent, err)
}

// outcome is how far a failed attempt got: what it may have cost.
type outcome int

const (
	unsent     outcome = iota // nothing was written to the network
	answered                  // the API answered with an error (*APIError)
	unanswered                // written, then no answer: maybe charged
)

func (o outcome) String() string {
	switch o {
	case answered:
		return "answered"
	case unanswered:
		return "unanswered"
	}
	return "unsent"
}

// wait sleeps a jittered exponential back-off before attempt (2, 3, ...).
// The API sends no Retry-After in practice, so jitter spreads the retries of
// concurrent workers.
func (c *Client) wait(ctx context.Context, attempt int) error {
	return sleep(ctx, c.backoff(attempt))
}

// backoff is the jittered exponential back-off before attempt (2, 3, ...):
// Backoff doubled per attempt up to MaxBackoff, then a random point in
// its upper half ("equal jitter").
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.Backoff << min(attempt-2, 20)
	if d > c.cfg.MaxBackoff || d <= 0 {
		d = c.cfg.MaxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d, or returns ctx.Err() when ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// URL returns the address of req without credentials (for logs and tests).
func (c *Client) URL(req Request) string {
	u := *c.base
	u.Path += req.Endpoint.Path
	u.RawQuery = req.Params.Encode()
	return u.String()
}

// acquire waits for a slot and for the rate; release frees the slot.
func (c *Client) acquire(ctx context.Context) (release func(), err error) {
	release = func() {}
	if c.slots != nil {
		select {
		case c.slots <- struct{}{}:
			var once sync.Once
			release = func() { once.Do(func() { <-c.slots }) }
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if c.limiter != nil {
		if err := c.limiter.Wait(ctx); err != nil {
			release()
			return nil, err
		}
	}
	return release, nil
}

// once makes one attempt of req. A failure comes with how far it got,
// and whether another attempt may succeed; its error names no endpoint
// unless it is an *APIError.
func (c *Client) once(ctx context.Context, req Request) (resp *Response, out outcome, retry bool, err error) {
	release, err := c.acquire(ctx)
	if err != nil {
		return nil, unsent, false, fmt.Errorf("waiting for the API's rate limit: %w", err)
	}
	reqCtx, cancel := context.WithCancelCause(ctx)
	defer func() {
		if err != nil {
			cancel(nil)
			release()
		}
	}()
	w := &wire{cancel: cancel}
	hreq, err := http.NewRequestWithContext(w.trace(reqCtx), http.MethodGet, c.URL(req), nil)
	if err != nil {
		return nil, unsent, false, fmt.Errorf("building request: %w", c.redact.Error(err))
	}
	if c.cfg.Authorize == nil {
		hreq.Header.Set("Authorization", "Apikey "+c.cfg.APIKey)
	}
	hreq.Header.Set("User-Agent", c.cfg.UserAgent)
	start := time.Now()
	hresp, err := c.cfg.HTTPClient.Do(hreq)
	if err != nil {
		err = c.redact.Error(stripURL(err))
		var redirect *RedirectError
		if errors.As(err, &redirect) {
			// The API answered with a redirect to another origin: no data,
			// and never followed with the key.
			return nil, answered, false, err
		}
		if permanent(err) {
			return nil, unsent, false, err
		}
		if w.sent() {
			return nil, unanswered, false, w.notHTTP(ctx, err, true)
		}
		if nh := w.notHTTP(ctx, err, false); nh != err {
			// Bytes that are not HTTP came before the request was
			// written (a server that speaks first, as SSH does): not
			// sent, and not worth another try.
			return nil, unsent, false, nh
		}
		// Nothing reached the API (refused, DNS, TLS, a proxy): another
		// try costs nothing, unless the caller gave up.
		return nil, unsent, ctx.Err() == nil, err
	}
	c.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "response",
		slog.String("endpoint", req.Endpoint.Name), slog.Int("status", hresp.StatusCode),
		slog.Duration("headers_after", time.Since(start)))
	if hresp.StatusCode == http.StatusOK {
		body := &idleBody{body: hresp.Body, reqCtx: reqCtx, cancel: cancel, idle: c.cfg.IdleTimeout, release: release}
		body.timer = time.AfterFunc(time.Hour, func() { cancel(ErrIdle) })
		body.timer.Stop()
		return &Response{Body: body, Header: hresp.Header, RequestID: c.redact.String(hresp.Header.Get("X-Request-Id"))}, answered, false, nil
	}
	defer hresp.Body.Close()
	apiErr, envelope := c.decodeError(req.Endpoint.Name, hresp)
	if !envelope && (hresp.StatusCode == http.StatusBadGateway || hresp.StatusCode == http.StatusGatewayTimeout) {
		// Not the API's answer but a gateway's in front of it (a proxy,
		// a load balancer), whose upstream failed or took too long after
		// the request reached it: the API may have answered it, and
		// charged it. Not an *APIError, whose answers cost nothing.
		return nil, unanswered, false, fmt.Errorf("HTTP %d from a gateway, not the API's error answer (the request may have reached the API): %s",
			hresp.StatusCode, apiErr.Message)
	}
	return nil, answered, apiErr.Retryable, apiErr
}

// retries reports whether an error answer of status is tried again; said
// is the envelope's error.retryable (nil: none). The status decides what
// another attempt of the same request can change, and said only where it
// may (the design notes: "Honour retryable", for the answers that may
// succeed later):
//
//   - 408, 425, 429 and 5xx (the API, or the way to it, is busy or
//     failing for now): tried again, unless said is false.
//   - 400 and 422 (the API refused the request as it is): tried again
//     only when said is true (a refusal the API knows to be passing).
//   - Any other status: never. 401 (the key refused), 403 (no units
//     left), 404 (no such path: a wrong base address), 402, 405, 410 and
//     the rest speak of the key, the account or the address, which the
//     same request sent again cannot change; an envelope that says
//     retryable on them would only have the run wait ten attempts (about
//     95 s) before it stops as it must.
func retries(status int, said *bool) bool {
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly,
		status == http.StatusTooManyRequests, status >= 500:
		return said == nil || *said
	case status == http.StatusBadRequest, status == http.StatusUnprocessableEntity:
		return said != nil && *said
	}
	return false
}

// maxErrorBody bounds how much of an error body is read, maxErrorExcerpt
// how much of one that is not the API's envelope the error keeps.
const (
	maxErrorBody    = 64 << 10
	maxErrorExcerpt = 300
)

// decodeError reads an error answer; envelope says it was the API's
// error envelope.
func (c *Client) decodeError(endpoint string, resp *http.Response) (_ *APIError, envelope bool) {
	e := &APIError{Status: resp.StatusCode, Endpoint: endpoint, Retryable: retries(resp.StatusCode, nil)}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var env struct {
		Meta struct {
			RequestID string `json:"request_id"`
		} `json:"meta"`
		Error *struct {
			Type      string            `json:"type"`
			Code      int               `json:"code"`
			Message   string            `json:"message"`
			Retryable *bool             `json:"retryable"`
			Details   []json.RawMessage `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil {
		e.Code, e.Details = env.Error.Code, env.Error.Details
		e.Type, e.Message = c.redact.String(env.Error.Type), c.redact.String(env.Error.Message)
		e.Retryable = retries(resp.StatusCode, env.Error.Retryable)
		e.RequestID = c.redact.String(env.Meta.RequestID)
		for i, d := range e.Details {
			e.Details[i] = json.RawMessage(c.redact.String(string(d)))
		}
		return e, true
	}
	// Not the documented envelope: keep a bounded excerpt, masked before
	// it is cut (cut first, the rest of a key is no longer the key).
	var text string
	if len(body) == maxErrorBody { // maybe cut inside a key
		text = c.redact.Truncated(string(body))
	} else {
		text = c.redact.String(string(body))
	}
	text = strings.TrimSpace(text)
	if len(text) > maxErrorExcerpt {
		text = redact.Cut(text, maxErrorExcerpt) + "..."
	}
	e.Message = text
	return e, false
}

// stripURL removes the URL from a *url.Error: it adds nothing the endpoint
// name does not say and could carry query parameters.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// idleBody fails a read that waits longer than idle for data. The clock
// runs only inside Read, so a slow consumer never trips it.
type idleBody struct {
	body    io.ReadCloser
	reqCtx  context.Context
	cancel  context.CancelCauseFunc
	idle    time.Duration
	timer   *time.Timer
	release func() // the client's in-flight slot
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.timer.Reset(b.idle)
	n, err := b.body.Read(p)
	b.timer.Stop()
	if err != nil && errors.Is(context.Cause(b.reqCtx), ErrIdle) {
		return n, fmt.Errorf("after %s: %w", b.idle, ErrIdle)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.body.Close()
	b.cancel(nil)
	b.release()
	return err
}

// permanent reports whether err, from Config.Authorize's transport, is one
// that no retry can fix.
func permanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}
