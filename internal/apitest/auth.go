package apitest

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// AuthConfig says where the token service under test is, and how the suite
// stands in for the person who approves a device code.
type AuthConfig struct {
	// BaseURL is the data API's base address, where bearer tokens are
	// tried (required).
	BaseURL string
	// AuthURL is the token service's base address; default BaseURL.
	AuthURL string
	// Key is the API key of the account Approve approves for and the
	// authorization code flow logs in as (required).
	Key string
	// ClientID, ClientSecret and RedirectURI are a client of the
	// authorization code flow and a redirect_uri it may use (on the token
	// host, spec 5.4 step 2) (required).
	ClientID, ClientSecret, RedirectURI string
	// Decide approves (approve true) or denies the device authorization
	// of userCode for the account of Key: what a person does at the
	// verification_uri (required).
	Decide func(t *testing.T, userCode string, approve bool)
	// Advance moves the implementation's clocks forward by d: the one
	// codes and tokens expire on, and the one polls are paced on. Checks
	// of lifetimes and of the polling interval's growth are skipped
	// without it (the real API cannot be hurried).
	Advance func(t *testing.T, d time.Duration)
	// UnitsSpent, when set, returns the units Key has spent so far: the
	// suite then checks that a bearer request is charged to the token's
	// account.
	UnitsSpent func() int64
	// Target is the backlink target of the bearer requests; default
	// "n240.example".
	Target string
	// HTTP sends the requests; default http.DefaultClient. The suite never
	// follows a redirect.
	HTTP *http.Client
}

type authSuite struct {
	cfg  AuthConfig
	http *http.Client
}

// authCheck is one rule of the spec, named by its section.
type authCheck struct {
	section, rule string
	advance       bool // needs AuthConfig.Advance
	run           func(t *testing.T)
}

// RunAuth checks the token service (spec sections 3, 5 and 8.5) and bearer
// tokens on the data API's endpoints against the contract, one named
// check per rule. The checks run one after the other, never in parallel:
// those that move the clock would expire the codes and tokens of others.
func RunAuth(t *testing.T, cfg AuthConfig) {
	if cfg.AuthURL == "" {
		cfg.AuthURL = cfg.BaseURL
	}
	if cfg.Target == "" {
		cfg.Target = "n240.example"
	}
	require.NotEmpty(t, cfg.BaseURL, "apitest: AuthConfig.BaseURL")
	require.NotEmpty(t, cfg.Key, "apitest: AuthConfig.Key")
	require.NotEmpty(t, cfg.ClientID, "apitest: AuthConfig.ClientID")
	require.NotEmpty(t, cfg.ClientSecret, "apitest: AuthConfig.ClientSecret")
	require.NotEmpty(t, cfg.RedirectURI, "apitest: AuthConfig.RedirectURI")
	require.NotNil(t, cfg.Decide, "apitest: AuthConfig.Decide")
	client := cfg.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	// Never follow a redirect: the authorization endpoint's is the answer.
	noFollow := *client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	s := &authSuite{cfg: cfg, http: &noFollow}

	for _, c := range []authCheck{
		{"5.3", "device code answer", false, s.deviceCodeAnswer},
		{"5.3", "authorization_pending until approved", false, s.devicePending},
		{"5.3", "slow_down when polled faster than the interval", false, s.deviceSlowDown},
		{"5.3", "slow_down adds 5 seconds to the interval for good (RFC 8628 3.5)", true, s.deviceSlowDownGrows},
		{"5.3", "tokens once approved, and the device code used once", false, s.deviceTokens},
		{"5.3", "access_denied once denied", false, s.deviceDenied},
		{"3", "device code expires after expires_in", true, s.deviceExpires},
		{"5.3", "errors of the device token endpoint are the RFC 6749 5.2 object", false, s.deviceErrors},
		{"5.3", "the token request is form-encoded: a JSON body is refused", false, s.deviceJSONRefused},
		{"5.3", "device-flow tokens renew at the device token endpoint, rotating (design, RFC 6749 6)", false, s.deviceRefresh},
		{"5.4", "authorize redirects to redirect_uri with code and state", false, s.codeAuthorize},
		{"5.4", "authorize errors: bad client_id or redirect_uri shown, others redirected (RFC 6749 4.1.2.1)", false, s.codeAuthorizeErrors},
		{"5.4", "code exchanged once for tokens", false, s.codeExchange},
		{"5.4", "client credentials in the form or HTTP Basic; wrong ones are invalid_client (RFC 6749 2.3.1, 5.2)", false, s.codeClientAuth},
		{"5.4", "the token request is form-encoded: a JSON body is refused", false, s.codeJSONRefused},
		{"5.4", "refresh rotates: a new refresh token, the old one refused", false, s.codeRefresh},
		{"8.5", "access token expires after 7 days", true, s.accessExpires},
		{"8.5", "refresh token expires after 30 days without renewal", true, s.refreshExpires},
		{"5.2", "bearer token on the backlink and keyword endpoints, charged to its account", false, s.bearer},
		{"5.2", "missing, unknown or malformed bearer token: 401", false, s.bearerRefused},
	} {
		t.Run(c.section+" "+c.rule, func(t *testing.T) {
			if c.advance && cfg.Advance == nil {
				t.Skip("needs AuthConfig.Advance to move the clock")
			}
			c.run(t)
		})
	}
}

// advance moves the implementation's clocks.
func (s *authSuite) advance(t *testing.T, d time.Duration) {
	t.Helper()
	s.cfg.Advance(t, d)
}

// post sends a form to the token service; basic, when set, is the client's
// HTTP Basic credentials (id, secret).
func (s *authSuite) post(t *testing.T, path string, form url.Values, basic ...string) reply {
	t.Helper()
	return s.send(t, path, "application/x-www-form-urlencoded", form.Encode(), basic...)
}

func (s *authSuite) send(t *testing.T, path, contentType, body string, basic ...string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.cfg.AuthURL+path, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if len(basic) == 2 {
		req.SetBasicAuth(url.QueryEscape(basic[0]), url.QueryEscape(basic[1]))
	}
	return s.do(t, req)
}

func (s *authSuite) do(t *testing.T, req *http.Request) reply {
	t.Helper()
	return send(t, s.http, req)
}

// getAuth sends GET path?q to the token service.
func (s *authSuite) getAuth(t *testing.T, path string, q url.Values) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.cfg.AuthURL+path+"?"+q.Encode(), nil)
	require.NoError(t, err)
	return s.do(t, req)
}

// oauthFails requires r to be the RFC 6749 section 5.2 error object with
// status and code, and returns its description.
func oauthFails(t *testing.T, r reply, status int, code string) string {
	t.Helper()
	require.Equal(t, status, r.status, "%s", r.body)
	mt, _, err := mime.ParseMediaType(r.header.Get("Content-Type"))
	require.NoError(t, err)
	require.Equal(t, "application/json", mt, "an OAuth error is JSON (RFC 6749 5.2)")
	var e map[string]any
	require.NoError(t, json.Unmarshal(r.body, &e), "the error is not a JSON object: %s", r.body)
	require.Equal(t, code, e["error"], "error: %s", r.body)
	d, ok := e["error_description"]
	if ok {
		_, isString := d.(string)
		require.True(t, isString, "error_description is a string: %s", r.body)
	}
	for k := range e {
		require.Contains(t, []string{"error", "error_description", "error_uri"}, k, "a field RFC 6749 5.2 does not define: %s", r.body)
	}
	desc, _ := d.(string)
	return desc
}

// tokenAnswer is a token response (spec 5.3 step 4, 5.4 step 4).
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
}

// tokens requires r to be a token response and returns it.
func tokens(t *testing.T, r reply) tokenAnswer {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "application/json", mediaType(r.header))
	require.Contains(t, r.header.Get("Cache-Control"), "no-store", "a token answer is never cached (RFC 6749 5.1)")
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.body, &raw), "%s", r.body)
	for _, f := range []string{"access_token", "token_type", "expires_in", "refresh_token"} {
		require.Contains(t, raw, f, "the token answer has no %s: %s", f, r.body)
	}
	var a tokenAnswer
	require.NoError(t, json.Unmarshal(r.body, &a), "field types of the token answer: %s", r.body)
	require.NotEmpty(t, a.AccessToken)
	require.NotEmpty(t, a.RefreshToken)
	require.Equal(t, catalog.TokenType, a.TokenType)
	require.Equal(t, int64(catalog.AccessTokenLifetime/time.Second), a.ExpiresIn, "expires_in: 604800 (spec 5.3 step 4, 8.5)")
	return a
}

// deviceAnswer is the device code response (spec 5.3 step 1).
type deviceAnswer struct {
	DeviceCode      string `json:"device_code"`
	UserCode        string `json:"user_code"`
	VerificationURI string `json:"verification_uri"`
	ExpiresIn       int64  `json:"expires_in"`
	Interval        int64  `json:"interval"`
}

// deviceCode asks for a device code.
func (s *authSuite) deviceCode(t *testing.T) deviceAnswer {
	t.Helper()
	r := s.post(t, catalog.DeviceCodePath, url.Values{"scope": {catalog.AuthorizeScope}})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "application/json", mediaType(r.header))
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.body, &raw), "%s", r.body)
	for _, f := range []string{"device_code", "user_code", "verification_uri", "expires_in", "interval"} {
		require.Contains(t, raw, f, "the device code answer has no %s: %s", f, r.body)
	}
	var d deviceAnswer
	require.NoError(t, json.Unmarshal(r.body, &d), "field types of the device code answer: %s", r.body)
	require.NotEmpty(t, d.DeviceCode)
	require.NotEmpty(t, d.UserCode)
	require.Positive(t, d.ExpiresIn)
	require.Positive(t, d.Interval)
	return d
}

func (s *authSuite) poll(t *testing.T, deviceCode string) reply {
	t.Helper()
	return s.post(t, catalog.DeviceTokenPath, url.Values{"grant_type": {catalog.GrantDeviceCode}, "device_code": {deviceCode}})
}

// approved runs a device flow to its tokens.
func (s *authSuite) approved(t *testing.T) tokenAnswer {
	t.Helper()
	d := s.deviceCode(t)
	s.cfg.Decide(t, d.UserCode, true)
	return tokens(t, s.poll(t, d.DeviceCode))
}

func (s *authSuite) deviceCodeAnswer(t *testing.T) {
	d := s.deviceCode(t)
	u, err := url.Parse(d.VerificationURI)
	require.NoError(t, err)
	require.True(t, u.IsAbs(), "verification_uri %q is an absolute address a person can open", d.VerificationURI)
	// The sign-in address answers a page a person can read.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, d.VerificationURI, nil)
	require.NoError(t, err)
	r := s.do(t, req)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "text/html", mediaType(r.header))
	// scope is optional.
	r = s.post(t, catalog.DeviceCodePath, url.Values{})
	require.Equal(t, http.StatusOK, r.status, "without scope: %s", r.body)
	// Two requests, two codes.
	require.NotEqual(t, d.DeviceCode, s.deviceCode(t).DeviceCode)
}

func (s *authSuite) devicePending(t *testing.T) {
	d := s.deviceCode(t)
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrAuthorizationPending)
	if s.cfg.Advance != nil {
		s.advance(t, time.Duration(d.Interval)*time.Second)
		oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrAuthorizationPending)
	}
}

func (s *authSuite) deviceSlowDown(t *testing.T) {
	d := s.deviceCode(t)
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrAuthorizationPending)
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrSlowDown)
}

func (s *authSuite) deviceSlowDownGrows(t *testing.T) {
	d := s.deviceCode(t)
	interval := time.Duration(d.Interval) * time.Second
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrAuthorizationPending)
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrSlowDown)
	// The old interval is too short now...
	s.advance(t, interval)
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrSlowDown)
	// ...and it grew again: two slow_downs, 10 seconds more.
	s.advance(t, interval+2*catalog.SlowDownStep)
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrAuthorizationPending)
	s.advance(t, interval+2*catalog.SlowDownStep)
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrAuthorizationPending)
}

func (s *authSuite) deviceTokens(t *testing.T) {
	d := s.deviceCode(t)
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrAuthorizationPending)
	s.cfg.Decide(t, d.UserCode, true)
	if s.cfg.Advance != nil {
		s.advance(t, time.Duration(d.Interval)*time.Second)
	}
	a := tokens(t, s.poll(t, d.DeviceCode))
	require.NotEqual(t, a.AccessToken, a.RefreshToken)
	// A device code gives tokens once.
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrInvalidGrant)
	// Another flow, other tokens.
	b := s.approved(t)
	require.NotEqual(t, a.AccessToken, b.AccessToken)
	require.NotEqual(t, a.RefreshToken, b.RefreshToken)
}

func (s *authSuite) deviceDenied(t *testing.T) {
	d := s.deviceCode(t)
	s.cfg.Decide(t, d.UserCode, false)
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrAccessDenied)
}

func (s *authSuite) deviceExpires(t *testing.T) {
	d := s.deviceCode(t)
	expiresIn := time.Duration(d.ExpiresIn) * time.Second
	s.advance(t, expiresIn-time.Second)
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrAuthorizationPending)
	s.advance(t, time.Second)
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrExpiredToken)
	// An approval does not help a client that polls too late.
	d = s.deviceCode(t)
	s.cfg.Decide(t, d.UserCode, true)
	s.advance(t, expiresIn)
	oauthFails(t, s.poll(t, d.DeviceCode), http.StatusBadRequest, catalog.ErrExpiredToken)
}

func (s *authSuite) deviceErrors(t *testing.T) {
	d := s.deviceCode(t)
	oauthFails(t, s.post(t, catalog.DeviceTokenPath, url.Values{"device_code": {d.DeviceCode}}), http.StatusBadRequest, catalog.ErrInvalidRequest)
	oauthFails(t, s.post(t, catalog.DeviceTokenPath, url.Values{"grant_type": {catalog.GrantDeviceCode}}), http.StatusBadRequest, catalog.ErrInvalidRequest)
	oauthFails(t, s.post(t, catalog.DeviceTokenPath, url.Values{"grant_type": {"password"}, "device_code": {d.DeviceCode}}),
		http.StatusBadRequest, catalog.ErrUnsupportedGrantType)
	oauthFails(t, s.poll(t, "no-such-device-code"), http.StatusBadRequest, catalog.ErrInvalidGrant)
}

func (s *authSuite) deviceJSONRefused(t *testing.T) {
	d := s.deviceCode(t)
	body := fmt.Sprintf(`{"grant_type":%q,"device_code":%q}`, catalog.GrantDeviceCode, d.DeviceCode)
	oauthFails(t, s.send(t, catalog.DeviceTokenPath, "application/json", body), http.StatusBadRequest, catalog.ErrInvalidRequest)
}

// refresh renews a refresh token at path.
func (s *authSuite) refresh(t *testing.T, path, refreshToken string, client bool) reply {
	t.Helper()
	form := url.Values{"grant_type": {catalog.GrantRefreshToken}, "refresh_token": {refreshToken}}
	if client {
		form.Set("client_id", s.cfg.ClientID)
		form.Set("client_secret", s.cfg.ClientSecret)
	}
	return s.post(t, path, form)
}

func (s *authSuite) deviceRefresh(t *testing.T) {
	a := s.approved(t)
	b := tokens(t, s.refresh(t, catalog.DeviceTokenPath, a.RefreshToken, false))
	require.NotEqual(t, a.RefreshToken, b.RefreshToken, "a renewal answers a new refresh token")
	require.NotEqual(t, a.AccessToken, b.AccessToken)
	oauthFails(t, s.refresh(t, catalog.DeviceTokenPath, a.RefreshToken, false), http.StatusBadRequest, catalog.ErrInvalidGrant)
	tokens(t, s.refresh(t, catalog.DeviceTokenPath, b.RefreshToken, false))
	s.bearerOK(t, b.AccessToken)
}

// authorize opens the authorization endpoint and returns the redirect's
// target.
func (s *authSuite) authorize(t *testing.T, q url.Values) (reply, *url.URL) {
	t.Helper()
	r := s.getAuth(t, catalog.AuthorizePath, q)
	if r.status != http.StatusFound && r.status != http.StatusSeeOther {
		return r, nil
	}
	to, err := url.Parse(r.header.Get("Location"))
	require.NoError(t, err)
	return r, to
}

func (s *authSuite) authorizeQuery(state string) url.Values {
	return url.Values{"client_id": {s.cfg.ClientID}, "redirect_uri": {s.cfg.RedirectURI},
		"response_type": {"code"}, "scope": {catalog.AuthorizeScope}, "state": {state}}
}

// code runs the authorization endpoint to a code.
func (s *authSuite) code(t *testing.T) string {
	t.Helper()
	r, to := s.authorize(t, s.authorizeQuery("st-1"))
	require.NotNil(t, to, "authorize answers a redirect: %d %s", r.status, r.body)
	code := to.Query().Get("code")
	require.NotEmpty(t, code, "the redirect carries a code: %s", to)
	return code
}

func (s *authSuite) exchange(t *testing.T, code string, basic ...string) reply {
	t.Helper()
	form := url.Values{"grant_type": {catalog.GrantAuthorizationCode}, "code": {code}, "redirect_uri": {s.cfg.RedirectURI}}
	if len(basic) == 0 {
		form.Set("client_id", s.cfg.ClientID)
		form.Set("client_secret", s.cfg.ClientSecret)
	}
	return s.post(t, catalog.AccessTokenPath, form, basic...)
}

func (s *authSuite) codeAuthorize(t *testing.T) {
	r, to := s.authorize(t, s.authorizeQuery("xyz 1/2"))
	require.NotNil(t, to, "a redirect: %d %s", r.status, r.body)
	want, err := url.Parse(s.cfg.RedirectURI)
	require.NoError(t, err)
	require.Equal(t, want.Scheme+"://"+want.Host+want.Path, to.Scheme+"://"+to.Host+to.Path, "the redirect goes to redirect_uri")
	require.NotEmpty(t, to.Query().Get("code"))
	require.Equal(t, "xyz 1/2", to.Query().Get("state"), "the redirect carries state back (RFC 6749 4.1.2)")
	require.Empty(t, to.Query().Get("error"))
}

func (s *authSuite) codeAuthorizeErrors(t *testing.T) {
	noRedirect := func(q url.Values, why string) {
		t.Helper()
		r, to := s.authorize(t, q)
		require.Nil(t, to, "%s: never redirected (RFC 6749 4.1.2.1)", why)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", why, r.body)
	}
	good := s.authorizeQuery("st-2")
	noRedirect(with(good, "client_id", "no-such-client"), "an unknown client_id")
	bad := clone(good)
	bad.Del("client_id")
	noRedirect(bad, "no client_id")
	noRedirect(with(good, "redirect_uri", "https://elsewhere.example/cb"), "a redirect_uri off the token host")
	bad = clone(good)
	bad.Del("redirect_uri")
	noRedirect(bad, "no redirect_uri")

	redirected := func(q url.Values, code string) {
		t.Helper()
		r, to := s.authorize(t, q)
		require.NotNil(t, to, "%s: redirected: %d %s", code, r.status, r.body)
		require.Equal(t, code, to.Query().Get("error"), "%s", to)
		require.Equal(t, "st-2", to.Query().Get("state"), "state comes back with an error too")
		require.Empty(t, to.Query().Get("code"))
	}
	redirected(with(good, "response_type", "token"), catalog.ErrUnsupportedResponseType)
	bad = clone(good)
	bad.Del("response_type")
	redirected(bad, catalog.ErrInvalidRequest)
}

func (s *authSuite) codeExchange(t *testing.T) {
	code := s.code(t)
	a := tokens(t, s.exchange(t, code))
	s.bearerOK(t, a.AccessToken)
	// A code is used once.
	oauthFails(t, s.exchange(t, code), http.StatusBadRequest, catalog.ErrInvalidGrant)
	oauthFails(t, s.exchange(t, "no-such-code"), http.StatusBadRequest, catalog.ErrInvalidGrant)
	// redirect_uri must be the one the code was issued for.
	code = s.code(t)
	form := url.Values{"grant_type": {catalog.GrantAuthorizationCode}, "code": {code}, "redirect_uri": {s.cfg.RedirectURI + "?other=1"},
		"client_id": {s.cfg.ClientID}, "client_secret": {s.cfg.ClientSecret}}
	oauthFails(t, s.post(t, catalog.AccessTokenPath, form), http.StatusBadRequest, catalog.ErrInvalidGrant)
	// Parameters missing.
	oauthFails(t, s.post(t, catalog.AccessTokenPath, url.Values{"grant_type": {catalog.GrantAuthorizationCode},
		"client_id": {s.cfg.ClientID}, "client_secret": {s.cfg.ClientSecret}}), http.StatusBadRequest, catalog.ErrInvalidRequest)
	oauthFails(t, s.post(t, catalog.AccessTokenPath, url.Values{"grant_type": {"password"},
		"client_id": {s.cfg.ClientID}, "client_secret": {s.cfg.ClientSecret}}), http.StatusBadRequest, catalog.ErrUnsupportedGrantType)
}

func (s *authSuite) codeClientAuth(t *testing.T) {
	tokens(t, s.exchange(t, s.code(t), s.cfg.ClientID, s.cfg.ClientSecret))
	code := s.code(t)
	form := url.Values{"grant_type": {catalog.GrantAuthorizationCode}, "code": {code}, "redirect_uri": {s.cfg.RedirectURI},
		"client_id": {s.cfg.ClientID}, "client_secret": {s.cfg.ClientSecret + "-wrong"}}
	oauthFails(t, s.post(t, catalog.AccessTokenPath, form), http.StatusUnauthorized, catalog.ErrInvalidClient)
	r := s.exchange(t, code, s.cfg.ClientID, s.cfg.ClientSecret+"-wrong")
	oauthFails(t, r, http.StatusUnauthorized, catalog.ErrInvalidClient)
	require.NotEmpty(t, r.header.Get("WWW-Authenticate"), "a 401 after HTTP Basic asks for it (RFC 6749 5.2)")
	form.Del("client_secret")
	form.Del("client_id")
	oauthFails(t, s.post(t, catalog.AccessTokenPath, form), http.StatusUnauthorized, catalog.ErrInvalidClient)
	// The failures did not spend the code.
	tokens(t, s.exchange(t, code))
}

func (s *authSuite) codeJSONRefused(t *testing.T) {
	code := s.code(t)
	body, err := json.Marshal(map[string]string{"grant_type": catalog.GrantAuthorizationCode, "code": code,
		"redirect_uri": s.cfg.RedirectURI, "client_id": s.cfg.ClientID, "client_secret": s.cfg.ClientSecret})
	require.NoError(t, err)
	oauthFails(t, s.send(t, catalog.AccessTokenPath, "application/json", string(body)), http.StatusBadRequest, catalog.ErrInvalidRequest)
	// The refusal did not spend the code.
	tokens(t, s.exchange(t, code))
}

func (s *authSuite) codeRefresh(t *testing.T) {
	a := tokens(t, s.exchange(t, s.code(t)))
	b := tokens(t, s.refresh(t, catalog.AccessTokenPath, a.RefreshToken, true))
	require.NotEqual(t, a.RefreshToken, b.RefreshToken, "a renewal answers a new refresh token")
	require.NotEqual(t, a.AccessToken, b.AccessToken)
	oauthFails(t, s.refresh(t, catalog.AccessTokenPath, a.RefreshToken, true), http.StatusBadRequest, catalog.ErrInvalidGrant)
	s.bearerOK(t, b.AccessToken)
	c := tokens(t, s.refresh(t, catalog.AccessTokenPath, b.RefreshToken, true))
	oauthFails(t, s.refresh(t, catalog.AccessTokenPath, b.RefreshToken, true), http.StatusBadRequest, catalog.ErrInvalidGrant)
	// Renewal needs the client's credentials (spec 5.4 step 5).
	oauthFails(t, s.refresh(t, catalog.AccessTokenPath, c.RefreshToken, false), http.StatusUnauthorized, catalog.ErrInvalidClient)
	oauthFails(t, s.refresh(t, catalog.AccessTokenPath, "no-such-refresh-token", true), http.StatusBadRequest, catalog.ErrInvalidGrant)
}

func (s *authSuite) accessExpires(t *testing.T) {
	a := s.approved(t)
	s.advance(t, catalog.AccessTokenLifetime-time.Second)
	s.bearerOK(t, a.AccessToken)
	s.advance(t, time.Second)
	fails(t, s.bearerCall(t, a.AccessToken), http.StatusUnauthorized)
	// The refresh token gets a new one.
	b := tokens(t, s.refresh(t, catalog.DeviceTokenPath, a.RefreshToken, false))
	s.bearerOK(t, b.AccessToken)
}

func (s *authSuite) refreshExpires(t *testing.T) {
	a := s.approved(t)
	s.advance(t, catalog.RefreshTokenLifetime-time.Second)
	// Renewed just in time: the new refresh token has 30 days of its own.
	b := tokens(t, s.refresh(t, catalog.DeviceTokenPath, a.RefreshToken, false))
	s.advance(t, catalog.RefreshTokenLifetime-time.Second)
	c := tokens(t, s.refresh(t, catalog.DeviceTokenPath, b.RefreshToken, false))
	s.advance(t, catalog.RefreshTokenLifetime)
	oauthFails(t, s.refresh(t, catalog.DeviceTokenPath, c.RefreshToken, false), http.StatusBadRequest, catalog.ErrInvalidGrant)
	// The same for the authorization code flow.
	d := tokens(t, s.exchange(t, s.code(t)))
	s.advance(t, catalog.RefreshTokenLifetime)
	oauthFails(t, s.refresh(t, catalog.AccessTokenPath, d.RefreshToken, true), http.StatusBadRequest, catalog.ErrInvalidGrant)
}

// bearerCall sends an overview request with a bearer token.
func (s *authSuite) bearerCall(t *testing.T, token string) reply {
	t.Helper()
	return s.bearerGet(t, "overview", token)
}

func (s *authSuite) bearerGet(t *testing.T, endpoint, token string) reply {
	t.Helper()
	ep, ok := catalog.Lookup(endpoint)
	require.True(t, ok, endpoint)
	q := (&suite{cfg: Config{Other: "example.com"}}).base(ep, s.cfg.Target)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.cfg.BaseURL+ep.Path+"?"+q.Encode(), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	return s.do(t, req)
}

func (s *authSuite) bearerOK(t *testing.T, token string) {
	t.Helper()
	r := s.bearerCall(t, token)
	require.Equal(t, http.StatusOK, r.status, "a bearer request: %s", r.body)
}

func (s *authSuite) bearer(t *testing.T) {
	for _, tok := range []tokenAnswer{s.approved(t), tokens(t, s.exchange(t, s.code(t)))} {
		for _, name := range []string{"overview", "keyword-metrics"} {
			ep, _ := catalog.Lookup(name)
			var before int64
			if s.cfg.UnitsSpent != nil {
				before = s.cfg.UnitsSpent()
			}
			r := s.bearerGet(t, name, tok.AccessToken)
			require.Equal(t, http.StatusOK, r.status, "%s with a bearer token: %s", name, r.body)
			if s.cfg.UnitsSpent != nil {
				require.Equal(t, ep.Price.Cost(1), s.cfg.UnitsSpent()-before, "%s: charged to the token's account", name)
			}
		}
	}
}

func (s *authSuite) bearerRefused(t *testing.T) {
	fails(t, s.bearerCall(t, "no-such-token"), http.StatusUnauthorized)
	fails(t, s.bearerCall(t, ""), http.StatusUnauthorized)
	// A refresh token is not an access token.
	fails(t, s.bearerCall(t, s.approved(t).RefreshToken), http.StatusUnauthorized)
}
