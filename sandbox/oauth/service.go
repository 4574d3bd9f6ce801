package oauth

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/seoetl/etl/catalog"
)

// Paths of the sandbox's own choosing: the spec shows the four token
// endpoints (catalog.DeviceCodePath and the others) and nothing else.
const (
	// VerificationPath is the verification_uri of every device code: a
	// page a person reads (the user code, how to approve it here).
	VerificationPath = "/dag/device"
	// SuccessPath is the success page on the token host that a
	// redirect_uri may name (spec 5.4 step 2): it shows the code, or the
	// error, the redirect carries.
	SuccessPath = "/oauth2/success"
	// ApprovePath and DenyPath take POST with user_code (and, to approve,
	// optionally account: one of the sandbox's API keys, default the
	// first), in the query or a form body: what a person does at the
	// verification page. They exist only in the sandbox.
	ApprovePath = "/sandbox/device/approve"
	DenyPath    = "/sandbox/device/deny"
)

// AuthorizationCodeLifetime is how long an authorization code can be
// exchanged: the spec does not show it; RFC 6749 section 4.1.2 recommends
// at most 10 minutes.
const AuthorizationCodeLifetime = 10 * time.Minute

// Config configures a Service. Every field is required except Fault and
// DeviceAutoApprove; package sandbox fills the defaults (sandbox.Config).
type Config struct {
	// WallClock paces the polls of a device code (slow_down): the sandbox
	// clock is usually pinned, and a pinned clock would make every poll
	// too fast. Everything that expires uses the sandbox clock, the now
	// handed to Serve.
	WallClock func() time.Time
	// Accounts are the API keys a token can be issued for; the first is
	// the default.
	Accounts []string
	// ClientID and ClientSecret are the one client of the authorization
	// code flow (spec 5.4 step 1).
	ClientID, ClientSecret string
	// DeviceExpiresIn is the lifetime of a device code and its user code
	// (expires_in), and DeviceInterval the polling interval (interval):
	// whole seconds, at least one.
	DeviceExpiresIn, DeviceInterval time.Duration
	// DeviceAutoApprove, when positive, approves every device code for
	// the first account as it is polled for the DeviceAutoApprove-th time:
	// that poll answers the tokens (1: the first poll does). 0: only
	// ApprovePath approves.
	DeviceAutoApprove int
	// Fault, when set, is asked once per well-formed request of a token
	// endpoint (device code, device token, access token), before the
	// request changes anything. It may delay the answer (and set
	// headers); it returns the status of a failure to answer instead (429,
	// 500 or 503; 0 for none) and the faults to log. An error (the client
	// left during a delay) ends the request unanswered.
	Fault func(w http.ResponseWriter, r *http.Request) (status int, faults string, err error)
}

func (c Config) validate() error {
	whole := func(name string, d time.Duration) error {
		if d < time.Second || d%time.Second != 0 {
			return fmt.Errorf("%s must be a whole number of seconds, at least 1s (the token service answers it in seconds), got %v", name, d)
		}
		return nil
	}
	if err := whole("DeviceExpiresIn", c.DeviceExpiresIn); err != nil {
		return err
	}
	if err := whole("DeviceInterval", c.DeviceInterval); err != nil {
		return err
	}
	if c.DeviceAutoApprove < 0 {
		return fmt.Errorf("DeviceAutoApprove must be 0 (off) or the poll that gets the tokens (1: the first), got %d", c.DeviceAutoApprove)
	}
	for _, f := range []struct{ name, v string }{{"ClientID", c.ClientID}, {"ClientSecret", c.ClientSecret}} {
		switch {
		case f.v == "":
			return fmt.Errorf("%s is empty", f.name)
		case strings.IndexFunc(f.v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
			return fmt.Errorf("%s contains a space or control character", f.name)
		}
	}
	if len(c.Accounts) == 0 {
		return errors.New("no account to issue tokens for")
	}
	if c.WallClock == nil {
		return errors.New("no WallClock")
	}
	return nil
}

// Service is the token service. It is safe for concurrent use. Its state
// (codes, tokens) lives in memory for the life of the Service; nothing is
// forgotten, so an old code or token is answered as what it is (expired,
// used, rotated) rather than as unknown.
type Service struct {
	cfg Config

	mu      sync.Mutex
	devices map[string]*device    // by device_code
	users   map[string]*device    // by user code, normalized (userKey)
	codes   map[string]*authCode  // authorization codes
	access  map[string]*accessTok // access tokens
	refresh map[string]*refreshTok
}

// New returns a token service configured by cfg.
func New(cfg Config) (*Service, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Accounts = slices.Clone(cfg.Accounts)
	return &Service{
		cfg:     cfg,
		devices: map[string]*device{},
		users:   map[string]*device{},
		codes:   map[string]*authCode{},
		access:  map[string]*accessTok{},
		refresh: map[string]*refreshTok{},
	}, nil
}

// Owns reports whether path is served by the token service.
func (s *Service) Owns(path string) bool {
	switch path {
	case catalog.DeviceCodePath, catalog.DeviceTokenPath, catalog.AuthorizePath, catalog.AccessTokenPath,
		VerificationPath, SuccessPath, ApprovePath, DenyPath:
		return true
	}
	return false
}

// Result is what the log line of a request reports.
type Result struct {
	Status int
	Faults string // the faults injected, as Config.Fault said
	Err    error  // the error answered, for the log; never holds a secret
}

// Serve answers a request to one of the paths Owns reports; now is the
// sandbox clock, read once for the request.
func (s *Service) Serve(w http.ResponseWriter, r *http.Request, now time.Time) Result {
	switch r.URL.Path {
	case catalog.DeviceCodePath:
		return s.serveDeviceCode(w, r, now)
	case catalog.DeviceTokenPath:
		return s.serveDeviceToken(w, r, now)
	case VerificationPath:
		return s.serveVerification(w, r, now)
	case ApprovePath:
		return s.serveDecision(w, r, now, true)
	case DenyPath:
		return s.serveDecision(w, r, now, false)
	case catalog.AuthorizePath:
		return s.serveAuthorize(w, r, now)
	case catalog.AccessTokenPath:
		return s.serveAccessToken(w, r, now)
	case SuccessPath:
		return s.serveSuccess(w, r)
	}
	e := &oauthError{status: http.StatusNotFound, code: "not_found", description: "the token service has no endpoint at " + r.URL.Path}
	writeError(w, e)
	return Result{Status: e.status, Err: e}
}

// isAccount reports whether key is one of the accounts.
func (s *Service) isAccount(key string) bool { return slices.Contains(s.cfg.Accounts, key) }

// secret returns a new random token with a prefix telling its kind.
func secret(prefix string) string { return prefix + rand.Text() }

// userCodeAlphabet is RFC 8628 section 6.1's: 20 consonants, no vowels (no
// words), no letters easily confused.
const userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

// newUserCode returns 8 letters of userCodeAlphabet, shown as XXXX-XXXX
// (about 34 bits).
func newUserCode() string {
	var b [8]byte
	var out [9]byte
	for i := 0; i < len(b); {
		var r [16]byte
		_, _ = rand.Read(r[:]) // never fails (crypto/rand)
		for _, x := range r {
			if i < len(b) && x < 240 { // 240 = 12*20: no bias
				b[i] = userCodeAlphabet[x%20]
				i++
			}
		}
	}
	copy(out[:4], b[:4])
	out[4] = '-'
	copy(out[5:], b[4:])
	return string(out[:])
}

// userKey normalizes a user code as a person may type it: any case, with
// or without the dash or spaces (RFC 8628 section 6.1).
func userKey(code string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || unicode.IsSpace(r) {
			return -1
		}
		return unicode.ToUpper(r)
	}, code)
}

// seconds is d in whole seconds.
func seconds(d time.Duration) int64 { return int64(d / time.Second) }
