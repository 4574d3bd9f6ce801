package oauth

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seoetl/etl/catalog"
)

// deviceState is where a device authorization stands (spec 3).
type deviceState int

const (
	pending  deviceState = iota // waiting for the person
	approved                    // the next poll gets the tokens
	denied                      // polls answer access_denied
	used                        // the tokens were issued: the device code is spent
)

func (d deviceState) String() string {
	return [...]string{"pending", "approved", "denied", "used"}[d]
}

// device is one device authorization (spec 5.3).
type device struct {
	code, userCode string
	scope          string
	expires        time.Time // sandbox clock
	state          deviceState
	account        string // set on approval

	interval time.Duration // grows by catalog.SlowDownStep with each slow_down
	lastPoll time.Time     // wall clock; zero before the first poll
	polls    int
}

// deviceAnswer is the device code response (spec 5.3 step 1).
type deviceAnswer struct {
	DeviceCode      string `json:"device_code"`
	UserCode        string `json:"user_code"`
	VerificationURI string `json:"verification_uri"`
	ExpiresIn       int64  `json:"expires_in"`
	Interval        int64  `json:"interval"`
}

// serveDeviceCode answers POST catalog.DeviceCodePath (spec 5.3 step 1):
// a new device code and user code, valid Config.DeviceExpiresIn, polled
// every Config.DeviceInterval.
func (s *Service) serveDeviceCode(w http.ResponseWriter, r *http.Request, now time.Time) Result {
	if r.Method != http.MethodPost {
		return fail(w, methodNotAllowed(r, http.MethodPost), "")
	}
	vals, e := readForm(r)
	if e != nil {
		return fail(w, e, "")
	}
	scope := vals.Get("scope")
	if scope != "" {
		if e := checkScope(scope); e != nil {
			return fail(w, e, "")
		}
	}
	res, done := s.fault(w, r)
	if done {
		return res
	}
	d := &device{
		code:     secret("sbx-dc-"),
		scope:    scope,
		expires:  now.Add(s.cfg.DeviceExpiresIn),
		interval: s.cfg.DeviceInterval,
	}
	s.mu.Lock()
	for d.userCode == "" || s.users[userKey(d.userCode)] != nil {
		d.userCode = newUserCode()
	}
	s.devices[d.code] = d
	s.users[userKey(d.userCode)] = d
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, deviceAnswer{
		DeviceCode:      d.code,
		UserCode:        d.userCode,
		VerificationURI: origin(r) + VerificationPath,
		ExpiresIn:       seconds(s.cfg.DeviceExpiresIn),
		Interval:        seconds(s.cfg.DeviceInterval),
	})
	res.Status = http.StatusOK
	return res
}

// origin is the scheme and host the request was sent to: the token host.
func origin(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// serveDeviceToken answers POST catalog.DeviceTokenPath: the device code
// grant (spec 5.3 step 3) and the renewal of its tokens
// (grant_type=refresh_token, no client credentials: the spec shows the
// device flow without any). Client credentials sent anyway are ignored.
func (s *Service) serveDeviceToken(w http.ResponseWriter, r *http.Request, now time.Time) Result {
	if r.Method != http.MethodPost {
		return fail(w, methodNotAllowed(r, http.MethodPost), "")
	}
	vals, e := readForm(r)
	if e != nil {
		return fail(w, e, "")
	}
	var param string
	switch gt := vals.Get("grant_type"); gt {
	case "":
		return fail(w, invalidRequest("grant_type is missing; poll with grant_type=%s", catalog.GrantDeviceCode), "")
	case catalog.GrantDeviceCode:
		param = "device_code"
	case catalog.GrantRefreshToken:
		param = "refresh_token"
	case catalog.GrantAuthorizationCode:
		return fail(w, badRequest(catalog.ErrUnsupportedGrantType, "an authorization code is exchanged at %s", catalog.AccessTokenPath), "")
	default:
		return fail(w, badRequest(catalog.ErrUnsupportedGrantType, "grant_type %q is not served here; use %s or %s",
			gt, catalog.GrantDeviceCode, catalog.GrantRefreshToken), "")
	}
	if _, e := required(vals, param); e != nil {
		return fail(w, e, "")
	}
	res, done := s.fault(w, r)
	if done {
		return res
	}
	var a tokenAnswer
	if param == "refresh_token" {
		a, e = s.renew(deviceFlow, vals, now)
	} else {
		a, e = s.poll(vals.Get("device_code"), now)
	}
	if e != nil {
		return fail(w, e, res.Faults)
	}
	writeJSON(w, http.StatusOK, a)
	res.Status = http.StatusOK
	return res
}

// poll answers one poll of a device code (spec 3, 5.3; RFC 8628 section
// 3.5), in this order: unknown or spent (invalid_grant); expired on the
// sandbox clock (expired_token, also once approved: the client came too
// late); denied (access_denied); approved, or approved now by
// Config.DeviceAutoApprove (the tokens); else pending: slow_down when the
// poll came too early after the one before (by the wall clock), and the
// interval grows by catalog.SlowDownStep, otherwise authorization_pending.
//
// "Too early" allows for the jitter of a client's timer and the network: a
// poll is too fast when it comes less than the interval, less a quarter of
// it but at most a second, after the previous one. The first poll is never
// too fast, however soon after the device code it comes.
func (s *Service) poll(code string, now time.Time) (tokenAnswer, *oauthError) {
	wall := s.cfg.WallClock()
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.devices[code]
	switch {
	case d == nil:
		return tokenAnswer{}, invalidGrant("the device code is not known")
	case d.state == used:
		return tokenAnswer{}, invalidGrant("the device code was already exchanged for tokens; a device code is used once")
	case !now.Before(d.expires):
		return tokenAnswer{}, badRequest(catalog.ErrExpiredToken, "the device code expired at %s; request a new one at %s",
			d.expires.UTC().Format(time.RFC3339), catalog.DeviceCodePath)
	}
	d.polls++
	if d.state == pending && s.cfg.DeviceAutoApprove > 0 && d.polls >= s.cfg.DeviceAutoApprove {
		d.state, d.account = approved, s.cfg.Accounts[0]
	}
	switch d.state {
	case denied:
		return tokenAnswer{}, badRequest(catalog.ErrAccessDenied, "the authorization was denied")
	case approved:
		d.state = used
		return s.issueLocked(&grant{account: d.account, flow: deviceFlow, scope: d.scope}, now), nil
	}
	early := !d.lastPoll.IsZero() && wall.Sub(d.lastPoll) < d.interval-min(d.interval/4, time.Second)
	d.lastPoll = wall
	if early {
		d.interval += catalog.SlowDownStep
		return tokenAnswer{}, badRequest(catalog.ErrSlowDown, "polled too fast: wait %d seconds between polls from now on", seconds(d.interval))
	}
	return tokenAnswer{}, badRequest(catalog.ErrAuthorizationPending, "waiting for the user to approve the code at %s", VerificationPath)
}

// decision is the answer of ApprovePath and DenyPath.
type decision struct {
	UserCode string `json:"user_code"`
	State    string `json:"state"`
}

// serveDecision answers POST ApprovePath or DenyPath: the sandbox's
// stand-in for the person who approves, or refuses, a user code at the
// verification page. Parameters: user_code, and to approve, account (one
// of the sandbox's API keys; default the first), in the query or a form
// body. Answers: 200 {user_code, state}; errors are the RFC 6749 object:
// 400 invalid_request (a parameter), 404 not_found (no such user code),
// 409 conflict (already approved, denied or exchanged), 410 expired_token.
// A browser (Accept: text/html) gets a page instead.
func (s *Service) serveDecision(w http.ResponseWriter, r *http.Request, now time.Time, approve bool) Result {
	if r.Method != http.MethodPost {
		return s.page(w, r, methodNotAllowed(r, http.MethodPost))
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		return s.page(w, r, invalidRequest("the parameters are malformed: %v", err))
	}
	if e := once(r.Form); e != nil {
		return s.page(w, r, e)
	}
	userCode := r.Form.Get("user_code")
	if userCode == "" {
		return s.page(w, r, invalidRequest("user_code is missing"))
	}
	account := s.cfg.Accounts[0]
	if a := r.Form.Get("account"); a != "" {
		if !approve {
			return s.page(w, r, invalidRequest("account is for approving; a denial names no account"))
		}
		if !s.isAccount(a) {
			return s.page(w, r, invalidRequest("account must be one of the sandbox's API keys (default: the first)"))
		}
		account = a
	}
	s.mu.Lock()
	d := s.users[userKey(userCode)]
	var e *oauthError
	switch {
	case d == nil:
		e = &oauthError{status: http.StatusNotFound, code: "not_found", description: "no device code has that user code"}
	case !now.Before(d.expires):
		e = &oauthError{status: http.StatusGone, code: catalog.ErrExpiredToken, description: "the user code expired at " + d.expires.UTC().Format(time.RFC3339)}
	case d.state != pending:
		e = &oauthError{status: http.StatusConflict, code: "conflict", description: "the device authorization is already " + d.state.String()}
	case approve:
		d.state, d.account = approved, account
	default:
		d.state = denied
	}
	var ans decision
	if d != nil {
		ans = decision{UserCode: d.userCode, State: d.state.String()}
	}
	s.mu.Unlock()
	if e != nil {
		return s.page(w, r, e)
	}
	if wantsHTML(r) {
		renderPage(w, http.StatusOK, pageData{Title: "Device " + ans.State, Decision: &ans})
		return Result{Status: http.StatusOK}
	}
	writeJSON(w, http.StatusOK, ans)
	return Result{Status: http.StatusOK}
}

// page writes e as a page for a browser, else as the RFC 6749 object.
func (s *Service) page(w http.ResponseWriter, r *http.Request, e *oauthError) Result {
	if wantsHTML(r) {
		if e.allow != "" {
			w.Header().Set("Allow", e.allow)
		}
		renderPage(w, e.status, pageData{Title: "Error", Error: e.code, Description: e.description})
		return Result{Status: e.status, Err: e}
	}
	return fail(w, e, "")
}

// wantsHTML reports whether the request comes from a browser.
func wantsHTML(r *http.Request) bool { return strings.Contains(r.Header.Get("Accept"), "text/html") }

// serveVerification answers GET VerificationPath[?user_code=CODE]: the
// verification page (spec 5.3 step 2), which tells a person the state of
// the user code and how to approve it in the sandbox.
func (s *Service) serveVerification(w http.ResponseWriter, r *http.Request, now time.Time) Result {
	if r.Method != http.MethodGet {
		return s.page(w, r, methodNotAllowed(r, http.MethodGet))
	}
	data := pageData{Title: "Approve a device", Device: true, Origin: origin(r),
		DeviceAutoApprove: s.cfg.DeviceAutoApprove, ApprovePath: ApprovePath, DenyPath: DenyPath}
	if q, err := url.ParseQuery(r.URL.RawQuery); err == nil && q.Get("user_code") != "" {
		data.UserCode = q.Get("user_code")
		s.mu.Lock()
		d := s.users[userKey(data.UserCode)]
		switch {
		case d == nil:
			data.State = "unknown: no device code has this user code"
		case !now.Before(d.expires):
			data.State = "expired at " + d.expires.UTC().Format(time.RFC3339)
		default:
			data.UserCode = d.userCode
			data.State = fmt.Sprintf("%s (expires at %s)", d.state, d.expires.UTC().Format(time.RFC3339))
		}
		s.mu.Unlock()
	}
	renderPage(w, http.StatusOK, data)
	return Result{Status: http.StatusOK}
}
