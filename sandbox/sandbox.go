package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"golang.org/x/time/rate"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/redact"
	"github.com/seoetl/etl/sandbox/locations"
	"github.com/seoetl/etl/sandbox/oauth"
)

// Config configures a Server. The zero value is a working sandbox.
type Config struct {
	// Seed selects the invented world: the same seed gives the same data.
	// Default 1 (so 0 means 1).
	Seed int64
	// Now is the sandbox clock. The current month (keyword metrics' newest
	// month, summary's last month) and what is new or lost derive from the
	// day it returns (UTC), so answers are stable for a day. Default
	// time.Now.
	Now func() time.Time
	// APIKeys are the keys the sandbox accepts, in "Authorization: Apikey
	// KEY" or in the key query parameter. Default ["sandbox"].
	APIKeys []string
	// Logger receives one line per request. Keys never reach it: headers
	// are not logged, the key query parameter is removed, and configured keys
	// are removed wherever they appear (except the public DefaultAPIKey).
	// Default: logs are discarded.
	Logger *slog.Logger

	// Units is the balance of every API key, in API units. A request whose
	// price the rest of the balance cannot pay (for a per-line endpoint:
	// the price times the lines it would return) answers 403 and costs
	// nothing; it is never truncated to what the balance affords. Default
	// 0: no balance, unlimited.
	Units int64
	// RatePerSecond is how many requests per second each key may send,
	// across all endpoints: a token bucket of that rate whose burst is the
	// rate. Past it the sandbox answers 429 without Retry-After, as the
	// real API does. Default 10 (DefaultRatePerSecond); negative: no limit.
	RatePerSecond int
	// MaxConcurrent is how many requests of one key may be in flight at
	// once, across all endpoints; one more answers 429. Default 10
	// (DefaultMaxConcurrent); negative: no limit.
	MaxConcurrent int
	// MaxLimit is the largest limit the paged endpoints accept (those
	// that take limit and offset: links, ref-domains, ref-ips, pages,
	// anchors, competitors, matrix). A request past it, or whose default
	// of 100 is past it, answers 400 (not retryable, no units charged)
	// saying the bound: "limit must be from 1 to 10000 for links, got
	// 100000". The spec does not show the bound (8.2); a client learns
	// it from that answer. Summary's limit, which counts months, is not
	// bounded: it is capped by the available history (spec 4.3). Default
	// DefaultMaxLimit; negative: no bound.
	MaxLimit int
	// UnnamedLimit makes the refusal of a limit past MaxLimit leave the
	// bound out ("limit 100000 is more than links serves in one page"),
	// as an API may: a client must then find it by trying smaller ones.
	UnnamedLimit bool
	// WallClock is the clock of the per-second limit. It is not Now: the
	// sandbox clock is usually pinned, and a pinned clock would never
	// refill a bucket. Default time.Now.
	WallClock func() time.Time
	// Faults are the rates of the faults to inject, drawn reproducibly
	// from the seed and the requests (package documentation, "Limits,
	// balance and faults"). Default: none.
	Faults Faults
	// SlowDelay is how long the slow fault delays an answer. Default 2s
	// (DefaultSlowDelay).
	SlowDelay time.Duration

	// The token service (package oauth), on the same address.

	// DeviceExpiresIn is the lifetime of a device code and its user code
	// (expires_in), on the sandbox clock. Whole seconds. Default 300s
	// (catalog.DeviceCodeLifetime, the spec's sample).
	DeviceExpiresIn time.Duration
	// DeviceInterval is the polling interval of a device code (interval);
	// a poll sooner after the one before answers slow_down, measured on
	// WallClock. Whole seconds. Default 5s (catalog.DevicePollInterval).
	DeviceInterval time.Duration
	// DeviceAutoApprove, when positive, approves every device code for the
	// first API key as it is polled for the DeviceAutoApprove-th time: that
	// poll answers the tokens (1: the first poll does), so a device flow
	// runs unattended. Default 0: a code is approved only by POST
	// oauth.ApprovePath.
	DeviceAutoApprove int
	// ClientID and ClientSecret are the client of the authorization code
	// flow (spec 5.4): the client_id that catalog.AuthorizePath accepts and
	// the credentials catalog.AccessTokenPath requires. Defaults
	// DefaultClientID and DefaultClientSecret. The secret never reaches
	// the logs.
	ClientID, ClientSecret string

	// The listing-management endpoints (listing.go).

	// NoLocalPro are the API keys whose accounts lack the Local Pro plan
	// that the listing endpoints require (spec 4.5): a bearer token of one
	// of them is refused with a 403 (DetailLocalProRequired). Each must be
	// one of APIKeys. Default: every account has the plan. The spec does
	// not show how an account without it is answered; this is the
	// sandbox's choice.
	NoLocalPro []string
	// BodyTimeout bounds the time to read the body of an update, from the
	// moment its request is admitted under the rate limits: a client that
	// sends the headers of a bulk update and stalls would otherwise hold
	// the account's one bulk slot (spec 8.2: one at a time) for as long as
	// its connection stays open, and every other bulk update of the
	// account would meet a 429. A body not read in time is answered 408
	// (DetailBodyTimeout) and the slot is freed. It is real time (a
	// connection's read deadline), not WallClock's. Default
	// DefaultBodyTimeout.
	BodyTimeout time.Duration
}

// DefaultBodyTimeout is Config.BodyTimeout when zero: a body of
// MaxListingBody (1 MiB) takes well under a second on any network that
// can call the API.
const DefaultBodyTimeout = 10 * time.Second

// The client of the authorization code flow when Config names none. They
// are public: anyone may use them against a sandbox.
const (
	DefaultClientID     = "sandbox-client"
	DefaultClientSecret = "sandbox-secret"
)

// DefaultAPIKey is the key a sandbox accepts when Config.APIKeys is empty.
const DefaultAPIKey = "sandbox"

// UsagePath serves GET UsagePath?key=KEY: the Usage of KEY as JSON, with
// "units_remaining" (Server.UnitsRemaining) when keys have a balance. It
// needs no authentication and is not rate limited.
const UsagePath = "/sandbox/usage"

// shutdownGrace bounds how long Serve waits for requests in flight once its
// context is done.
const shutdownGrace = 10 * time.Second

func (c Config) withDefaults() Config {
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if len(c.APIKeys) == 0 {
		c.APIKeys = []string{DefaultAPIKey}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.RatePerSecond == 0 {
		c.RatePerSecond = DefaultRatePerSecond
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = DefaultMaxConcurrent
	}
	if c.MaxLimit == 0 {
		c.MaxLimit = DefaultMaxLimit
	}
	if c.WallClock == nil {
		c.WallClock = time.Now
	}
	if c.SlowDelay == 0 {
		c.SlowDelay = DefaultSlowDelay
	}
	if c.BodyTimeout == 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	if c.DeviceExpiresIn == 0 {
		c.DeviceExpiresIn = catalog.DeviceCodeLifetime
	}
	if c.DeviceInterval == 0 {
		c.DeviceInterval = catalog.DevicePollInterval
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.ClientSecret == "" {
		c.ClientSecret = DefaultClientSecret
	}
	return c
}

func (c Config) validate() error {
	for i, k := range c.APIKeys {
		switch {
		case k == "":
			return fmt.Errorf("sandbox: API key %d of %d is empty", i+1, len(c.APIKeys))
		case strings.IndexFunc(k, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
			return fmt.Errorf("sandbox: API key %d of %d contains a space or control character, so it cannot travel in a header", i+1, len(c.APIKeys))
		case slices.Index(c.APIKeys, k) != i:
			return fmt.Errorf("sandbox: API key %d of %d repeats key %d", i+1, len(c.APIKeys), slices.Index(c.APIKeys, k)+1)
		}
		// The key names the account; its n<digits> asks for that many
		// locations. The key is a secret: only the count is told.
		if n, digits, ok := locations.SizeAsked(k); ok && (n < 0 || n > locations.MaxLocations) {
			if n < 0 {
				digits = redact.Cut(digits, 20) + "..."
			}
			return fmt.Errorf("sandbox: API key %d of %d asks for %s locations (its n<digits>); an account of the sandbox holds at most %d: name a smaller one",
				i+1, len(c.APIKeys), digits, locations.MaxLocations)
		}
	}
	if c.Units < 0 {
		return fmt.Errorf("sandbox: Units must be 0 (no balance) or positive, got %d", c.Units)
	}
	if c.BodyTimeout < 0 {
		return fmt.Errorf("sandbox: BodyTimeout must be positive, got %v", c.BodyTimeout)
	}
	if c.SlowDelay < 0 {
		return fmt.Errorf("sandbox: SlowDelay must be positive, got %v", c.SlowDelay)
	}
	if err := c.Faults.validate(); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	for i, k := range c.NoLocalPro {
		if !slices.Contains(c.APIKeys, k) {
			return fmt.Errorf("sandbox: NoLocalPro key %d of %d is not one of the API keys, so no token can be issued for it", i+1, len(c.NoLocalPro))
		}
	}
	// The token service's own fields are checked by oauth.New.
	for name := range generators {
		if _, ok := catalog.Lookup(name); !ok {
			return fmt.Errorf("sandbox: generator for %q, which the catalog does not have (endpoints: %s)",
				name, strings.Join(catalog.Names(), ", "))
		}
	}
	for _, ep := range catalog.All() {
		if _, ok := generators[ep.Name]; !ok {
			return fmt.Errorf("sandbox: the catalog's endpoint %q has no generator", ep.Name)
		}
	}
	return nil
}

// Server is a deterministic stand-in for the data API. It is safe for
// concurrent use.
type Server struct {
	seed int64
	now  func() time.Time
	log  *slog.Logger

	// accounts holds the state of every configured key; the map is
	// read-only after New, each account has its own lock.
	accounts      map[string]*account
	units         int64 // the balance of each key; 0: none
	ratePerSecond int   // <= 0: no limit
	maxConcurrent int   // <= 0: no limit
	maxLimit      int   // <= 0: no bound
	unnamedLimit  bool
	wall          func() time.Time

	faults    Faults
	slowDelay time.Duration
	// bodyTimeout is Config.BodyTimeout.
	bodyTimeout time.Duration
	seenMu      sync.Mutex
	seen        map[key]int64 // times each (key, request) reached the fault draw; only with faults

	tokens    *oauth.Service
	tokenInfo []slog.Attr // the token service's settings, for the log line of Serve

	locations    *locations.Store // the listing data of every account
	noLocalPro   map[string]bool  // accounts without the Local Pro plan
	listingRates *listingLimits   // the rate limits of spec 8.2
	listingSeq   atomic.Uint64    // listing requests so far: each one's id is its own

	hooks hooks
}

// Usage is what one API key has spent.
type Usage struct {
	Key string `json:"key"`
	// UnitsSpent is charged per the catalog's Price: per answered request,
	// or per line actually returned. Failed requests cost nothing.
	UnitsSpent int64 `json:"units_spent"`
	// Requests counts answered (200) requests.
	Requests int64 `json:"requests"`
	// FailedRequests counts authenticated requests answered with an error.
	FailedRequests int64 `json:"failed_requests"`
}

// New returns a sandbox configured by cfg.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		seed:          cfg.Seed,
		now:           cfg.Now,
		log:           slog.New(redact.New(append(slices.Clone(cfg.APIKeys), cfg.ClientSecret)...).Handler(cfg.Logger.Handler())),
		accounts:      map[string]*account{},
		units:         cfg.Units,
		ratePerSecond: cfg.RatePerSecond,
		maxConcurrent: cfg.MaxConcurrent,
		maxLimit:      cfg.MaxLimit,
		unnamedLimit:  cfg.UnnamedLimit,
		wall:          cfg.WallClock,
		faults:        cfg.Faults,
		slowDelay:     cfg.SlowDelay,
		bodyTimeout:   cfg.BodyTimeout,
		seen:          map[key]int64{},
		locations:     locations.New(cfg.Seed),
		noLocalPro:    map[string]bool{},
		listingRates:  newListingLimits(),
	}
	for _, k := range cfg.NoLocalPro {
		s.noLocalPro[k] = true
	}
	for _, k := range cfg.APIKeys {
		a := &account{usage: Usage{Key: k}}
		if s.ratePerSecond > 0 {
			a.limiter = rate.NewLimiter(rate.Limit(s.ratePerSecond), s.ratePerSecond)
		}
		s.accounts[k] = a
	}
	tokens, err := oauth.New(oauth.Config{
		WallClock:         cfg.WallClock,
		Accounts:          cfg.APIKeys,
		ClientID:          cfg.ClientID,
		ClientSecret:      cfg.ClientSecret,
		DeviceExpiresIn:   cfg.DeviceExpiresIn,
		DeviceInterval:    cfg.DeviceInterval,
		DeviceAutoApprove: cfg.DeviceAutoApprove,
		Fault:             s.tokenFault,
	})
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	s.tokens = tokens
	s.tokenInfo = []slog.Attr{slog.Duration("device_expires", cfg.DeviceExpiresIn),
		slog.Duration("device_interval", cfg.DeviceInterval), slog.String("client_id", cfg.ClientID)}
	if cfg.DeviceAutoApprove > 0 {
		s.tokenInfo = append(s.tokenInfo, slog.Int("auto_approve", cfg.DeviceAutoApprove))
	}
	return s, nil
}

// Handler returns the HTTP handler of the sandbox: every endpoint of the
// catalog at its Path, the token service (package oauth) at its paths, the
// listing-management endpoints under both of catalog.LocationsPrefixes,
// and UsagePath.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Usage returns what key has spent so far; zero for a key never used.
func (s *Server) Usage(key string) Usage {
	u, _, _ := s.usageOf(key)
	return u
}

// UnitsRemaining returns what a new request of key can still spend: the
// balance (Config.Units) less what the key spent and what its requests
// being answered have reserved. ok is false when there is no balance.
func (s *Server) UnitsRemaining(key string) (units int64, ok bool) {
	_, units, ok = s.usageOf(key)
	return units, ok
}

// usageOf reads the usage and the remaining units of key at one instant.
func (s *Server) usageOf(key string) (u Usage, remaining int64, limited bool) {
	u, reserved := Usage{Key: key}, int64(0)
	if a, ok := s.accounts[key]; ok {
		a.mu.Lock()
		u, reserved = a.usage, a.reserved
		a.mu.Unlock()
	}
	if s.units == 0 {
		return u, 0, false
	}
	return u, s.units - u.UnitsSpent - reserved, true
}

// outcome is what the log line of a request reports.
type outcome struct {
	endpoint string
	status   int
	rows     int64
	units    int64
	faults   string // the faults injected, as in the faultHeader
	cut      bool   // break the connection once the outcome is logged
	err      error
	// requestID, when set, replaces the request id serveHTTP derived (a
	// listing update's id depends on its body too).
	requestID string
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	c := newClock(s.now())
	rid := s.requestID(r, c)
	w.Header().Set("X-Request-Id", rid)
	o := s.route(w, r, c, rid)
	if o.requestID != "" {
		rid = o.requestID
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.String("query", r.URL.RawQuery), slog.Int("status", o.status),
		slog.String("request_id", rid), slog.Duration("took", time.Since(started)),
	}
	if o.endpoint != "" {
		attrs = append(attrs, slog.String("endpoint", o.endpoint), slog.Int64("rows", o.rows), slog.Int64("units", o.units))
	}
	if o.faults != "" {
		attrs = append(attrs, slog.String("faults", o.faults))
	}
	level := slog.LevelInfo
	if o.err != nil {
		attrs = append(attrs, slog.String("error", o.err.Error()))
		// A failed write after a 200 (the client left) or a sandbox bug;
		// the caller's own mistakes are routine.
		if o.status == http.StatusInternalServerError || o.status == http.StatusOK {
			level = slog.LevelWarn
		}
	}
	s.log.LogAttrs(r.Context(), level, "sandbox request", attrs...)
	if o.cut {
		// What was written reaches the client; then the connection breaks
		// without the end of the body (net/http closes it and logs nothing
		// for this panic).
		_ = http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
}

// route answers one request and reports the outcome.
func (s *Server) route(w http.ResponseWriter, r *http.Request, c clock, rid string) outcome {
	if r.URL.Path == UsagePath {
		return s.serveUsage(w, r, rid)
	}
	if s.tokens.Owns(r.URL.Path) {
		res := s.tokens.Serve(w, r, c.now)
		return outcome{status: res.Status, faults: res.Faults, err: res.Err}
	}
	if isListingPath(r.URL.Path) {
		return s.serveListing(w, r, c, rid)
	}
	return s.serveData(w, r, c, rid)
}

// dataCall is a request of a data endpoint once its endpoint and the
// account of its key are known.
type dataCall struct {
	w    http.ResponseWriter
	rid  string
	ep   *catalog.Endpoint
	acct *account
}

// failed answers e, counts a failed request of the account and reports
// the outcome.
func (d dataCall) failed(e *apiError) outcome {
	d.acct.failed()
	writeError(d.w, d.rid, e)
	return outcome{endpoint: d.ep.Name, status: e.status, err: e}
}

// serveData answers a request of a data endpoint: its path, method and
// key; the account's limits; its parameters; the faults of Config.Faults;
// and the answer, charged to the account.
func (s *Server) serveData(w http.ResponseWriter, r *http.Request, c clock, rid string) outcome {
	fail := func(e *apiError) outcome {
		writeError(w, rid, e)
		return outcome{status: e.status, err: e}
	}
	ep, ok := catalog.ByPath(r.URL.Path)
	if !ok {
		return fail(notFound(r.URL.Path))
	}
	if r.Method != http.MethodGet {
		return fail(methodNotAllowed(r.Method))
	}
	key, aerr := s.authenticate(r, c)
	if aerr != nil {
		return fail(aerr)
	}
	d := dataCall{w: w, rid: rid, ep: ep, acct: s.accounts[key]}
	release, aerr := s.admit(d.acct)
	if aerr != nil {
		return d.failed(aerr)
	}
	defer release()
	q, aerr := parseRequest(ep, r.URL.RawQuery, c)
	if aerr == nil {
		aerr = s.checkLimit(q)
	}
	if aerr != nil {
		return d.failed(aerr)
	}
	a, aerr := generators[ep.Name](s.seed, q) // New checked every endpoint has one
	if aerr != nil {
		return d.failed(aerr)
	}

	// Faults are drawn for requests that would succeed, after the limits:
	// a 429 of the limiter depends on timing and must not shift the draws.
	var p plan
	if s.faults.enabled() {
		p = s.planFaults(key, canonicalRequest(r))
		if p.slow {
			if err := s.wait(r.Context(), s.slowDelay); err != nil {
				d.acct.failed()
				return outcome{endpoint: ep.Name, faults: "slow", err: fmt.Errorf("the client left during the slow fault: %w", err)}
			}
		}
		if p.status != 0 {
			o := p.header(false, 0)
			w.Header().Set(faultHeader, o)
			fo := d.failed(injected(p.status))
			fo.faults = o
			return fo
		}
	}
	return s.answerData(d, q, a, p)
}

// answerData writes the answer a of the data request q with the faults
// of the plan p, and charges it to the account.
func (s *Server) answerData(d dataCall, q *request, a *answer, p plan) outcome {
	w := d.w
	// The price is known before the body: the generator says how many rows
	// it will write. Reserve it, so concurrent requests of the key never
	// spend more than the balance together; a cut body keeps its full
	// price, other bodies are charged the lines actually written.
	price := d.ep.Price.Cost(int(a.rows))
	res, aerr := s.reserve(d.acct, price)
	if aerr != nil {
		if h := p.header(false, 0); h != "" {
			w.Header().Set(faultHeader, h)
		}
		return d.failed(aerr)
	}
	defer res.cancel()
	bw := w
	var faults string
	if s.faults.enabled() {
		if q.format == "csv" {
			faults = p.header(true, p.malformedRows(a.rows))
		} else {
			faults = p.header(true, 0)
		}
		if faults != "" {
			w.Header().Set(faultHeader, faults)
		}
		bw = p.bodyFaults(w, q, a.rows)
	}
	rows, aerr, err := writeAnswer(bw, q, a, d.rid)
	if aerr != nil {
		res.cancel()
		return d.failed(aerr)
	}
	o := outcome{endpoint: d.ep.Name, status: http.StatusOK, rows: rows, faults: faults, err: err}
	if p.cut && (err == nil || errors.Is(err, errCut)) {
		o.cut, o.err, o.units = true, nil, price
	} else {
		// Lines written are lines returned, even when the client left early.
		o.units = d.ep.Price.Cost(int(rows))
	}
	res.settle(o.units)
	return o
}

// authenticate returns the API key of r (spec 5.1, 5.2): "Authorization:
// Apikey KEY", "Authorization: Bearer TOKEN" (the key of the account the
// token was issued for, at the sandbox clock c), or else the key query
// parameter.
func (s *Server) authenticate(r *http.Request, c clock) (string, *apiError) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, cred, _ := strings.Cut(strings.TrimSpace(h), " ")
		switch {
		case strings.EqualFold(scheme, "Bearer"):
			key, reason := s.bearerAccount(r, c)
			if key == "" {
				e := unauthorized(reason)
				e.challenge = `Bearer realm="sandbox", error="invalid_token"`
				return "", e
			}
			return key, nil
		case !strings.EqualFold(scheme, "Apikey"):
			return "", unauthorized("the Authorization header must read Apikey KEY or Bearer TOKEN")
		}
		cred = strings.TrimSpace(cred)
		if s.accounts[cred] == nil {
			return "", unauthorized("the API key is not valid")
		}
		return cred, nil
	}
	keys := r.URL.Query()[authParam]
	switch {
	case len(keys) == 0 || keys[0] == "":
		return "", unauthorized("no API key: send Authorization: Apikey KEY or the key query parameter")
	case len(keys) > 1:
		return "", unauthorized("the key query parameter is given more than once")
	case s.accounts[keys[0]] == nil:
		return "", unauthorized("the API key is not valid")
	}
	return keys[0], nil
}

// serveUsage answers GET UsagePath?key=KEY.
func (s *Server) serveUsage(w http.ResponseWriter, r *http.Request, rid string) outcome {
	fail := func(e *apiError) outcome {
		writeError(w, rid, e)
		return outcome{status: e.status, err: e}
	}
	if r.Method != http.MethodGet {
		return fail(methodNotAllowed(r.Method))
	}
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return fail(invalid(detail{Message: fmt.Sprintf("the query string is malformed: %v", err)}))
	}
	keys := vals[authParam]
	if len(keys) != 1 || keys[0] == "" {
		return fail(invalidf(authParam, "give the key whose usage to report once, as ?key=KEY"))
	}
	u, remaining, limited := s.usageOf(keys[0])
	body := fmt.Appendf(nil, `{"key":%s,"units_spent":%d,"requests":%d,"failed_requests":%d`,
		appendJSONString(nil, u.Key), u.UnitsSpent, u.Requests, u.FailedRequests)
	if limited {
		body = fmt.Appendf(body, `,"units_remaining":%d`, remaining)
	}
	body = append(body, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(body)
	return outcome{status: http.StatusOK, err: err}
}

// requestID derives the request id from the seed, the request without its
// key, and the sandbox day: the same request gets the same id, so a JSON
// body is as reproducible as a CSV one.
func (s *Server) requestID(r *http.Request, c clock) string {
	k := newKey(s.seed, "request-id", r.Method, r.URL.Path, canonicalQuery(r.URL.RawQuery), strconv.FormatInt(c.day, 10))
	return fmt.Sprintf("%016x", uint64(k))
}

// canonicalRequest is r without its key: the method, the path and the raw
// query parameters sorted, so the same request is the same string however
// its parameters are ordered and wherever its key travels.
func canonicalRequest(r *http.Request) string {
	return r.Method + " " + r.URL.Path + "?" + canonicalQuery(r.URL.RawQuery)
}

// canonicalQuery is a raw query without the key, its parameters sorted.
func canonicalQuery(rawQuery string) string {
	var pairs []string
	for _, pair := range strings.Split(rawQuery, "&") {
		if name, _, _ := strings.Cut(pair, "="); !isKeyParam(name) && pair != "" {
			pairs = append(pairs, pair)
		}
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "&")
}

// isKeyParam reports whether a raw query parameter name is the key, in any
// case or escaping (a wrongly cased KEY=secret is still a secret).
func isKeyParam(rawName string) bool {
	name, err := url.QueryUnescape(rawName)
	if err != nil {
		name = rawName
	}
	return strings.EqualFold(name, authParam)
}

// ListenAndServe serves s on addr until ctx is done, then shuts down
// gracefully: it stops accepting, lets requests in flight finish (at most
// 10 seconds) and returns nil.
func ListenAndServe(ctx context.Context, addr string, s *Server) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("sandbox: listen: %w", err)
	}
	return Serve(ctx, ln, s)
}

// Serve is ListenAndServe on a listener the caller opened (":0" in tests, a
// socket handed over by the CLI). It closes ln.
func Serve(ctx context.Context, ln net.Listener, s *Server) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	u := "http://" + ln.Addr().String()
	attrs := []slog.Attr{slog.String("url", u), slog.String("auth_url", u), slog.Int64("seed", s.seed),
		slog.Int("api_keys", len(s.accounts)),
		slog.Int("rate", max(s.ratePerSecond, 0)), slog.Int("concurrency", max(s.maxConcurrent, 0)), // 0: no limit
		slog.Int("max_limit", max(s.maxLimit, 0))}
	if s.units > 0 {
		attrs = append(attrs, slog.Int64("units", s.units))
	}
	if f := s.faults.String(); f != "" {
		attrs = append(attrs, slog.String("faults", f), slog.Duration("slow", s.slowDelay))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "sandbox listening", attrs...)
	// The data API and the token service share the address: say so in the
	// words of etl's environment.
	s.log.LogAttrs(ctx, slog.LevelInfo, "token service listening",
		append([]slog.Attr{slog.String("ETL_API_URL", u), slog.String("ETL_AUTH_URL", u)}, s.tokenInfo...)...)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("sandbox: serve: %w", err)
	case <-ctx.Done():
	}
	grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	err := srv.Shutdown(grace)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("sandbox: serve: %w", serr)
	}
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("sandbox: shutdown: %w", err)
	}
	return nil
}
