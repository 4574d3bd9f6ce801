package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/oauth2"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
)

// DefaultMargin is how long before its expiry an access token is renewed
// when Config.Margin is zero: a day, so a token never expires during a
// night's run.
const DefaultMargin = 24 * time.Hour

// Config configures Accounts.
type Config struct {
	// Pool is the warehouse, where the accounts table lives (migration
	// 0012). Required.
	Pool *pgxpool.Pool
	// Key encrypts the tokens (ParseKey of ETL_SECRET_KEY). Without it
	// every call that stores or reads tokens fails with ErrNoKey; Status
	// and Logout work.
	Key *Key
	// AuthURL is the token service's base address, {auth_url} of spec 4.6
	// (ETL_AUTH_URL). Required to sign in and to renew.
	AuthURL string
	// ClientID and ClientSecret are the client of the authorization code
	// flow (spec 5.4 step 1; ETL_CLIENT_ID, ETL_CLIENT_SECRET): required
	// to sign in with it and to renew its tokens. The device flow needs
	// none.
	ClientID, ClientSecret string
	// Scopes are asked for at sign-in. Default: none for the device flow
	// (its scope is optional), catalog.AuthorizeScope for the code flow.
	Scopes []string
	// HTTPClient sends the token requests. Default: a client whose
	// transport times out connecting (10s) and waiting for an answer's
	// headers (30s). (No http.Client.Timeout: x/oauth2's device code
	// request neither takes the context nor closes the body, and a
	// client timeout would leave its timer's goroutine behind.)
	HTTPClient *http.Client
	// Now is the clock of token expiry. Default time.Now.
	Now func() time.Time
	// Wait waits d or until ctx ends (the device flow's polls, the
	// back-off of retried token requests). Default: a timer.
	Wait func(ctx context.Context, d time.Duration) error
	// Margin is how long before it expires an access token is renewed.
	// Default DefaultMargin (a day).
	Margin time.Duration
	// Host names this process in accounts.refreshed_by. Default: the
	// host name (os.Hostname), or "unknown".
	Host string
	// MaxAttempts bounds the tries of one token request answered 429 or
	// 5xx. Default 5.
	MaxAttempts int
	// Backoff is the first delay before a retried token request, doubled
	// with each retry. Default 1s.
	Backoff time.Duration
	// Logger receives a line per sign-in and renewal (never a token).
	// Default: discarded.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 30 * time.Second,
			IdleConnTimeout:       90 * time.Second,
		}}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Wait == nil {
		c.Wait = wait
	}
	if c.Margin == 0 {
		c.Margin = DefaultMargin
	}
	if c.Host == "" {
		c.Host = hostname()
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 5
	}
	if c.Backoff == 0 {
		c.Backoff = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	if c.Pool == nil {
		return errors.New("auth: no database pool")
	}
	if c.Margin < 0 || c.Margin >= catalog.AccessTokenLifetime {
		return fmt.Errorf("auth: the renewal margin must be between 0 and %v, got %v", catalog.AccessTokenLifetime, c.Margin)
	}
	if c.MaxAttempts < 1 {
		return fmt.Errorf("auth: MaxAttempts must be at least 1, got %d", c.MaxAttempts)
	}
	return nil
}

func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Accounts signs accounts in, keeps their tokens in the warehouse and
// renews them. It is safe for concurrent use, and any number of Accounts
// in any number of processes may share one warehouse.
type Accounts struct {
	cfg Config

	mu    sync.Mutex
	cache map[string]cached // by account: the access token last read
}

type cached struct {
	access string
	expiry time.Time
}

// New returns Accounts configured by cfg.
func New(cfg Config) (*Accounts, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Accounts{cfg: cfg, cache: map[string]cached{}}, nil
}

// Flow is the authorization flow that issued an account's tokens; it is
// also where they are renewed.
type Flow string

const (
	// DeviceFlow is the device authorization grant (spec 5.3).
	DeviceFlow Flow = "device"
	// CodeFlow is the authorization code flow (spec 5.4).
	CodeFlow Flow = "code"
)

// namePattern is what an account's name may be (the table's CHECK).
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// CheckName reports whether name can name an account.
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("account name %q: use 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// SignInError is the error of an account whose tokens can no longer be
// renewed: its refresh token expired (30 days without renewal) or was
// refused (revoked, or rotated by a process that lost the new one), or it
// never signed in. The person must sign in again.
type SignInError struct {
	Account string
	Reason  string // why, for the log; never a token
}

func (e *SignInError) Error() string {
	if e.Reason == reasonNotFound {
		return fmt.Sprintf("account %s does not exist (it never signed in, or signed out): sign it in with `etl auth login --account %[1]s`", e.Account)
	}
	return fmt.Sprintf("account %s must sign in again: `etl auth login --account %s`", e.Account, e.Account)
}

// Permanent is true: no retry of a request signs the account in again (a
// transport that returns it fails the request at once; package extract
// asks).
func (e *SignInError) Permanent() bool { return true }

// ErrNotFound is matched (errors.Is) by a *SignInError of an account that
// never signed in (or signed out).
var ErrNotFound = errors.New("no such account")

// Is makes errors.Is(err, ErrNotFound) true for an account that does not
// exist.
func (e *SignInError) Is(target error) bool {
	return target == ErrNotFound && e.Reason == reasonNotFound
}

const reasonNotFound = "the account has not signed in"

// ServiceError is the error of a token request (a sign-in, a renewal)
// that got no HTTP answer from the token service at Origin (ETL_AUTH_URL):
// the connection refused, a host name that does not resolve, TLS that
// failed, a connection closed or reset without an answer, bytes that are
// not HTTP. Its message is one line naming ETL_AUTH_URL and what to
// check (extract.TokenServiceMistake), never a token.
//
// It is permanent: package extract fails the request that needed the
// token at once, untried again, and its AddressMistake and Refusal say
// this line, so a run or a listings command stops with it (exit 1), as at
// a wrong ETL_API_URL. A token service that answers with an HTTP error
// (429, 5xx) is tried again instead (Config.MaxAttempts).
type ServiceError struct {
	Origin string // scheme, host and port of ETL_AUTH_URL
	Err    error  // the transport's
}

func (e *ServiceError) Error() string {
	if m := e.AddressMistake(); m != "" {
		return m
	}
	return fmt.Sprintf("ETL_AUTH_URL %s: the token service could not be reached: %v: check ETL_AUTH_URL", e.Origin, e.Err)
}

// AddressMistake is the message of the mistake in ETL_AUTH_URL err shows,
// or "" (package extract asks).
func (e *ServiceError) AddressMistake() string { return extract.TokenServiceMistake(e.Origin, e.Err) }

func (e *ServiceError) Unwrap() error { return e.Err }

// Permanent is true: no retry of the request that needs the token
// reaches the token service (package extract asks).
func (e *ServiceError) Permanent() bool { return true }

// endpoint is the token service of flow f (catalog.DeviceTokenPath or
// catalog.AccessTokenPath).
func (a *Accounts) oauthConfig(f Flow) (*oauth2.Config, error) {
	base := strings.TrimRight(a.cfg.AuthURL, "/")
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("no token service: set ETL_AUTH_URL to the token service's address (http or https)")
	}
	c := &oauth2.Config{Scopes: a.cfg.Scopes}
	switch f {
	case DeviceFlow:
		// AuthStyleInParams: with auto-detection the library sends every
		// unsuccessful poll twice (Basic, then the form), and the second
		// is answered slow_down. The device flow has no client anyway.
		c.Endpoint = oauth2.Endpoint{
			DeviceAuthURL: base + catalog.DeviceCodePath,
			TokenURL:      base + catalog.DeviceTokenPath,
			AuthStyle:     oauth2.AuthStyleInParams,
		}
	case CodeFlow:
		if a.cfg.ClientID == "" || a.cfg.ClientSecret == "" {
			return nil, errors.New("the authorization code flow needs a client: set ETL_CLIENT_ID and ETL_CLIENT_SECRET (from the provider's support)")
		}
		if len(c.Scopes) == 0 {
			c.Scopes = []string{catalog.AuthorizeScope}
		}
		c.ClientID, c.ClientSecret = a.cfg.ClientID, a.cfg.ClientSecret
		// The spec: form-encoded, client_id and client_secret in the body
		// (5.4 steps 3 and 5).
		c.Endpoint = oauth2.Endpoint{
			AuthURL:   base + catalog.AuthorizePath,
			TokenURL:  base + catalog.AccessTokenPath,
			AuthStyle: oauth2.AuthStyleInParams,
		}
	default:
		return nil, fmt.Errorf("unknown flow %q", f)
	}
	return c, nil
}

// httpContext hands the library our HTTP client, wrapped to retry 429 and
// 5xx answers of the token service.
func (a *Accounts) httpContext(ctx context.Context) context.Context {
	base := a.cfg.HTTPClient.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c := *a.cfg.HTTPClient
	c.Transport = &retrier{base: base, wait: a.cfg.Wait, attempts: a.cfg.MaxAttempts, backoff: a.cfg.Backoff,
		origin: extract.OriginOf(a.cfg.AuthURL)}
	return context.WithValue(ctx, oauth2.HTTPClient, &c)
}

// retrier retries a token request answered 429 or 5xx: the token service
// answers those before it changes anything (temporarily_unavailable,
// server_error), so a retry is safe.
type retrier struct {
	base     http.RoundTripper
	wait     func(context.Context, time.Duration) error
	attempts int
	backoff  time.Duration
	origin   string // of the token service, for ServiceError
}

func (r *retrier) RoundTrip(req *http.Request) (*http.Response, error) {
	delay := r.backoff
	for attempt := 1; ; attempt++ {
		resp, err := r.base.RoundTrip(req)
		if err != nil && req.Context().Err() == nil {
			// No HTTP answer from the token service: its address is
			// wrong, or the service is down. No retry of the request
			// that needs the token can mend either.
			return nil, &ServiceError{Origin: r.origin, Err: err}
		}
		if err != nil || attempt >= r.attempts || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500) {
			return resp, err
		}
		if req.Body != nil && req.GetBody == nil {
			return resp, nil // cannot send the body again
		}
		resp.Body.Close()
		if err := r.wait(req.Context(), delay); err != nil {
			return nil, err
		}
		delay *= 2
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}
