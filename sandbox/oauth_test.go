package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/sandbox/oauth"
)

// movingClock is a clock the test moves; never the wall clock.
type movingClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *movingClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *movingClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *movingClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// sendBody sends a request with a body and reads the reply; it never
// follows a redirect.
func sendBody(t *testing.T, srv *httptest.Server, method, pathAndQuery string, header http.Header, body string) reply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+pathAndQuery, strings.NewReader(body))
	require.NoError(t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	client := *srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// postForm posts a form to the sandbox.
func postForm(t *testing.T, srv *httptest.Server, path string, form url.Values) reply {
	t.Helper()
	return sendBody(t, srv, http.MethodPost, path, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, form.Encode())
}

// decide approves (for account, "" for the default) or denies a user code
// with the sandbox-only call.
func decide(t *testing.T, srv *httptest.Server, userCode string, approve bool, account string) {
	t.Helper()
	q := url.Values{"user_code": {userCode}}
	path := oauth.DenyPath
	if approve {
		path = oauth.ApprovePath
		if account != "" {
			q.Set("account", account)
		}
	}
	r := sendBody(t, srv, http.MethodPost, path+"?"+q.Encode(), nil, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
}

// deviceCode asks the sandbox for a device code.
func deviceCode(t *testing.T, srv *httptest.Server) (deviceCode, userCode string) {
	t.Helper()
	r := postForm(t, srv, catalog.DeviceCodePath, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var d struct {
		DeviceCode string `json:"device_code"`
		UserCode   string `json:"user_code"`
	}
	require.NoError(t, json.Unmarshal(r.body, &d))
	return d.DeviceCode, d.UserCode
}

func pollDevice(t *testing.T, srv *httptest.Server, code string) reply {
	t.Helper()
	return postForm(t, srv, catalog.DeviceTokenPath, url.Values{"grant_type": {catalog.GrantDeviceCode}, "device_code": {code}})
}

// tokenPair is a token answer.
type tokenPair struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
	TokenType    string `json:"token_type"`
}

func tokensOf(t *testing.T, r reply) tokenPair {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var p tokenPair
	require.NoError(t, json.Unmarshal(r.body, &p))
	require.NotEmpty(t, p.AccessToken)
	return p
}

// bearerToken runs the device flow over HTTP, approved for account (""
// for the sandbox's first key), and returns the tokens: how a test of the
// data API gets a bearer token over HTTP, unattended.
func bearerToken(t *testing.T, srv *httptest.Server, account string) tokenPair {
	t.Helper()
	dc, uc := deviceCode(t, srv)
	decide(t, srv, uc, true, account)
	return tokensOf(t, pollDevice(t, srv, dc))
}

// oauthError decodes an RFC 6749 error object, requiring status and code.
func oauthError(t *testing.T, r reply, status int, code string) string {
	t.Helper()
	require.Equal(t, status, r.status, "%s", r.body)
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	require.NoError(t, json.Unmarshal(r.body, &e), "%s", r.body)
	require.Equal(t, code, e.Error, "%s", r.body)
	return e.Description
}

// tokenServer starts a sandbox with two keys, a clock the test moves (for
// both the sandbox clock and the wall clock) and a 1-second interval.
func tokenServer(t *testing.T, cfg sandbox.Config) (*sandbox.Server, *httptest.Server, *movingClock) {
	t.Helper()
	clock := &movingClock{}
	clock.set(testNow)
	cfg.Now, cfg.WallClock = clock.now, clock.now
	if cfg.APIKeys == nil {
		cfg.APIKeys = []string{"key-one", "key-two"}
	}
	if cfg.DeviceInterval == 0 {
		cfg.DeviceInterval = time.Second
	}
	sb, srv := newServer(t, cfg)
	return sb, srv, clock
}

// overviewWith sends an overview request with an Authorization header.
func overviewWith(t *testing.T, srv *httptest.Server, authorization string) reply {
	t.Helper()
	ep, _ := catalog.Lookup("overview")
	return send(t, srv, http.MethodGet, ep.Path+"?url=example.com&scope=ROOT_DOMAIN", http.Header{"Authorization": {authorization}})
}

func TestBearerChargesTheTokensAccount(t *testing.T) {
	t.Parallel()
	sb, srv, _ := tokenServer(t, sandbox.Config{})
	one := bearerToken(t, srv, "")
	two := bearerToken(t, srv, "key-two")
	ok(t, overviewWith(t, srv, "Bearer "+one.AccessToken))
	ok(t, overviewWith(t, srv, "bearer "+two.AccessToken)) // the scheme in any case
	ok(t, overviewWith(t, srv, "Bearer "+two.AccessToken))
	price := mustEndpoint(t, "overview").Price.Cost(1)
	require.Equal(t, price, sb.Usage("key-one").UnitsSpent, "the default account is the first key")
	require.Equal(t, 2*price, sb.Usage("key-two").UnitsSpent, "approved for key-two, charged to key-two")

	// Tokens issued without the flow work the same.
	tok, err := sb.IssueToken("key-one")
	require.NoError(t, err)
	ok(t, overviewWith(t, srv, "Bearer "+tok.AccessToken))
	require.Equal(t, 2*price, sb.Usage("key-one").UnitsSpent)
	_, err = sb.IssueToken("no-such-key")
	require.ErrorContains(t, err, "one of the sandbox's API keys")
}

func TestBearerRefused(t *testing.T) {
	t.Parallel()
	sb, srv, clock := tokenServer(t, sandbox.Config{})
	tok, err := sb.IssueToken("key-one")
	require.NoError(t, err)
	require.Equal(t, testNow.Add(7*24*time.Hour), tok.Expiry)
	for _, tc := range []struct{ name, header, want string }{
		{"unknown token", "Bearer sbx-at-NOSUCHTOKEN", "the access token is not valid"},
		{"no token", "Bearer", "no token after Bearer"},
		{"empty token", "Bearer  ", "no token after Bearer"},
		{"a refresh token", "Bearer " + tok.RefreshToken, "the access token is not valid"},
		{"another scheme", "Basic a2V5LW9uZTo=", "Apikey KEY or Bearer TOKEN"},
	} {
		r := overviewWith(t, srv, tc.header)
		e := failed(t, r, http.StatusUnauthorized)
		require.Contains(t, e.Error.Message, tc.want, tc.name)
		require.NotContains(t, string(r.body), "NOSUCHTOKEN", "%s: a token is not echoed", tc.name)
	}
	r := overviewWith(t, srv, "Bearer sbx-at-NOSUCHTOKEN")
	require.Equal(t, `Bearer realm="sandbox", error="invalid_token"`, r.header.Get("WWW-Authenticate"), "RFC 6750 3")

	clock.advance(7*24*time.Hour - time.Second)
	ok(t, overviewWith(t, srv, "Bearer "+tok.AccessToken))
	clock.advance(time.Second)
	e := failed(t, overviewWith(t, srv, "Bearer "+tok.AccessToken), http.StatusUnauthorized)
	require.Contains(t, e.Error.Message, "expired")
	u := sb.Usage("key-one")
	require.Equal(t, int64(1), u.Requests)
	require.Zero(t, u.FailedRequests, "a refused token is nobody's: its requests count for no account")
}

func mustEndpoint(t *testing.T, name string) *catalog.Endpoint {
	t.Helper()
	ep, found := catalog.Lookup(name)
	require.True(t, found, name)
	return ep
}

func TestDeviceAutoApprove(t *testing.T) {
	t.Parallel()
	sb, srv, clock := tokenServer(t, sandbox.Config{DeviceAutoApprove: 3})
	dc, _ := deviceCode(t, srv)
	oauthError(t, pollDevice(t, srv, dc), http.StatusBadRequest, catalog.ErrAuthorizationPending)
	clock.advance(time.Second)
	oauthError(t, pollDevice(t, srv, dc), http.StatusBadRequest, catalog.ErrAuthorizationPending)
	clock.advance(time.Second)
	p := tokensOf(t, pollDevice(t, srv, dc)) // the third poll
	require.Equal(t, "Bearer", p.TokenType)
	require.Equal(t, int64(604800), p.ExpiresIn)
	ok(t, overviewWith(t, srv, "Bearer "+p.AccessToken))
	require.Equal(t, int64(1), sb.Usage("key-one").Requests, "auto-approved for the first key")

	// A denial before the N-th poll stands.
	dc, uc := deviceCode(t, srv)
	decide(t, srv, uc, false, "")
	for range 4 {
		clock.advance(time.Second)
		oauthError(t, pollDevice(t, srv, dc), http.StatusBadRequest, catalog.ErrAccessDenied)
	}

	// 1: the first poll gets the tokens.
	_, srv1, _ := tokenServer(t, sandbox.Config{DeviceAutoApprove: 1})
	dc, _ = deviceCode(t, srv1)
	tokensOf(t, pollDevice(t, srv1, dc))
}

func TestDeviceDecisions(t *testing.T) {
	t.Parallel()
	_, srv, clock := tokenServer(t, sandbox.Config{DeviceExpiresIn: time.Minute})
	dc, uc := deviceCode(t, srv)
	require.Regexp(t, `^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$`, uc, "RFC 8628 6.1")
	call := func(path string, q url.Values, header http.Header) reply {
		return sendBody(t, srv, http.MethodPost, path+"?"+q.Encode(), header, "")
	}
	oauthError(t, call(oauth.ApprovePath, url.Values{}, nil), http.StatusBadRequest, catalog.ErrInvalidRequest)
	oauthError(t, call(oauth.ApprovePath, url.Values{"user_code": {"BBBB-BBBB"}}, nil), http.StatusNotFound, "not_found")
	desc := oauthError(t, call(oauth.ApprovePath, url.Values{"user_code": {uc}, "account": {"no-such-key-123"}}, nil),
		http.StatusBadRequest, catalog.ErrInvalidRequest)
	require.NotContains(t, desc, "no-such-key-123", "an account is an API key: never echoed")
	oauthError(t, call(oauth.DenyPath, url.Values{"user_code": {uc}, "account": {"key-two"}}, nil), http.StatusBadRequest, catalog.ErrInvalidRequest)
	oauthError(t, call(oauth.ApprovePath, url.Values{"user_code": {uc, uc}}, nil), http.StatusBadRequest, catalog.ErrInvalidRequest)
	r := sendBody(t, srv, http.MethodGet, oauth.ApprovePath+"?user_code="+uc, nil, "")
	oauthError(t, r, http.StatusMethodNotAllowed, catalog.ErrInvalidRequest)
	require.Equal(t, http.MethodPost, r.header.Get("Allow"))

	// As a person types it: lower case, no dash; from a form body.
	typed := strings.ToLower(strings.ReplaceAll(uc, "-", " "))
	r = sendBody(t, srv, http.MethodPost, oauth.ApprovePath, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
		url.Values{"user_code": {typed}, "account": {"key-two"}}.Encode())
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.JSONEq(t, `{"user_code":"`+uc+`","state":"approved"}`, string(r.body))
	oauthError(t, call(oauth.DenyPath, url.Values{"user_code": {uc}}, nil), http.StatusConflict, "conflict")
	tokensOf(t, pollDevice(t, srv, dc))
	desc = oauthError(t, call(oauth.ApprovePath, url.Values{"user_code": {uc}}, nil), http.StatusConflict, "conflict")
	require.Contains(t, desc, "used")

	// A browser gets a page.
	_, uc = deviceCode(t, srv)
	r = call(oauth.DenyPath, url.Values{"user_code": {uc}}, http.Header{"Accept": {"text/html"}})
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "text/html", mediaType(r.header))
	require.Contains(t, string(r.body), uc)
	require.Contains(t, string(r.body), "denied")

	// Expired.
	_, uc = deviceCode(t, srv)
	clock.advance(time.Minute)
	oauthError(t, call(oauth.ApprovePath, url.Values{"user_code": {uc}}, nil), http.StatusGone, catalog.ErrExpiredToken)
}

func mediaType(h http.Header) string {
	mt, _, _ := strings.Cut(h.Get("Content-Type"), ";")
	return strings.TrimSpace(mt)
}

func TestVerificationPage(t *testing.T) {
	t.Parallel()
	_, srv, _ := tokenServer(t, sandbox.Config{DeviceAutoApprove: 4})
	r := postForm(t, srv, catalog.DeviceCodePath, url.Values{"scope": {"user.id"}})
	var d struct {
		UserCode        string `json:"user_code"`
		VerificationURI string `json:"verification_uri"`
		ExpiresIn       int    `json:"expires_in"`
		Interval        int    `json:"interval"`
	}
	require.NoError(t, json.Unmarshal(r.body, &d))
	require.Equal(t, srv.URL+oauth.VerificationPath, d.VerificationURI, "on the host the request was sent to")
	require.Equal(t, 300, d.ExpiresIn, "the spec's sample by default")
	require.Equal(t, 1, d.Interval)

	page := send(t, srv, http.MethodGet, oauth.VerificationPath+"?user_code="+url.QueryEscape(strings.ToLower(d.UserCode)), nil)
	require.Equal(t, http.StatusOK, page.status)
	require.Equal(t, "text/html", mediaType(page.header))
	body := string(page.body)
	for _, want := range []string{d.UserCode, "pending", "curl -X POST '" + srv.URL + oauth.ApprovePath + "?user_code=" + d.UserCode + "'",
		oauth.DenyPath, "&amp;account=KEY", "--auto-approve", `<form method="post" action="` + oauth.ApprovePath + `"`} {
		require.Contains(t, body, want)
	}
	page = send(t, srv, http.MethodGet, oauth.VerificationPath+"?user_code=%3Cscript%3E", nil)
	require.NotContains(t, string(page.body), "<script>", "the page escapes what it is given")
	require.Contains(t, string(page.body), "unknown")
}

func TestDeviceTokenEndpointRequests(t *testing.T) {
	t.Parallel()
	_, srv, _ := tokenServer(t, sandbox.Config{})
	dc, _ := deviceCode(t, srv)
	form := url.Values{"grant_type": {catalog.GrantDeviceCode}, "device_code": {dc}}
	for _, tc := range []struct {
		name        string
		path        string
		contentType string
		body        string
		status      int
		code, want  string
	}{
		{"JSON body", catalog.DeviceTokenPath, "application/json", `{"grant_type":"x"}`, 400, catalog.ErrInvalidRequest, "a JSON body is refused"},
		{"JSON without a content type", catalog.DeviceTokenPath, "", `{"grant_type":"x"}`, 400, catalog.ErrInvalidRequest, "a JSON body is refused"},
		{"text body", catalog.DeviceTokenPath, "text/plain", form.Encode(), 400, catalog.ErrInvalidRequest, "form-encoded"},
		{"parameters in the query", catalog.DeviceTokenPath + "?" + form.Encode(), "", "", 400, catalog.ErrInvalidRequest, "not in the query string"},
		{"a parameter twice", catalog.DeviceTokenPath, "application/x-www-form-urlencoded", form.Encode() + "&device_code=x", 400, catalog.ErrInvalidRequest, "device_code given more than once"},
		{"authorization code here", catalog.DeviceTokenPath, "application/x-www-form-urlencoded", "grant_type=authorization_code&code=x", 400, catalog.ErrUnsupportedGrantType, catalog.AccessTokenPath},
		{"device code at the code flow's endpoint", catalog.AccessTokenPath, "application/x-www-form-urlencoded",
			form.Encode() + "&client_id=" + sandbox.DefaultClientID + "&client_secret=" + sandbox.DefaultClientSecret, 400, catalog.ErrUnsupportedGrantType, catalog.DeviceTokenPath},
		{"bad scope", catalog.DeviceCodePath, "application/x-www-form-urlencoded", "scope=a%20%20b", 400, catalog.ErrInvalidScope, "empty token"},
		{"oversized body", catalog.DeviceTokenPath, "application/x-www-form-urlencoded", "x=" + strings.Repeat("a", 64<<10), 400, catalog.ErrInvalidRequest, "larger than 64 KiB"},
	} {
		h := http.Header{}
		if tc.contentType != "" {
			h.Set("Content-Type", tc.contentType)
		}
		r := sendBody(t, srv, http.MethodPost, tc.path, h, tc.body)
		require.Contains(t, oauthError(t, r, tc.status, tc.code), tc.want, tc.name)
		require.Equal(t, "no-store", r.header.Get("Cache-Control"), tc.name)
	}
	r := send(t, srv, http.MethodGet, catalog.DeviceTokenPath, nil)
	oauthError(t, r, http.StatusMethodNotAllowed, catalog.ErrInvalidRequest)
	require.Equal(t, http.MethodPost, r.header.Get("Allow"))
	// None of it spent the device code.
	oauthError(t, pollDevice(t, srv, dc), http.StatusBadRequest, catalog.ErrAuthorizationPending)
}

// authorize opens the authorization endpoint as account ("" for the
// default) and returns the code of the redirect.
func authorize(t *testing.T, srv *httptest.Server, account string) string {
	t.Helper()
	q := url.Values{"client_id": {sandbox.DefaultClientID}, "redirect_uri": {srv.URL + oauth.SuccessPath},
		"response_type": {"code"}, "scope": {"user.id"}}
	if account != "" {
		q.Set("account", account)
	}
	r := sendBody(t, srv, http.MethodGet, catalog.AuthorizePath+"?"+q.Encode(), nil, "")
	require.Equal(t, http.StatusFound, r.status, "%s", r.body)
	to, err := url.Parse(r.header.Get("Location"))
	require.NoError(t, err)
	require.NotEmpty(t, to.Query().Get("code"))
	return to.Query().Get("code")
}

func exchangeCode(t *testing.T, srv *httptest.Server, code string) reply {
	t.Helper()
	return postForm(t, srv, catalog.AccessTokenPath, url.Values{"grant_type": {catalog.GrantAuthorizationCode}, "code": {code},
		"redirect_uri": {srv.URL + oauth.SuccessPath}, "client_id": {sandbox.DefaultClientID}, "client_secret": {sandbox.DefaultClientSecret}})
}

func TestCodeFlow(t *testing.T) {
	t.Parallel()
	sb, srv, clock := tokenServer(t, sandbox.Config{})

	// The account the person logs in as.
	p := tokensOf(t, exchangeCode(t, srv, authorize(t, srv, "key-two")))
	ok(t, overviewWith(t, srv, "Bearer "+p.AccessToken))
	require.Equal(t, int64(1), sb.Usage("key-two").Requests)
	q := url.Values{"client_id": {sandbox.DefaultClientID}, "redirect_uri": {srv.URL + oauth.SuccessPath + "?keep=1"},
		"response_type": {"code"}, "account": {"no-such-key-123"}, "state": {"s"}}
	r := sendBody(t, srv, http.MethodGet, catalog.AuthorizePath+"?"+q.Encode(), nil, "")
	to, err := url.Parse(r.header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, catalog.ErrAccessDenied, to.Query().Get("error"))
	require.Equal(t, "1", to.Query().Get("keep"), "the redirect_uri's own query is kept")
	require.NotContains(t, r.header.Get("Location"), "no-such-key-123")

	// The success page shows the code.
	code := authorize(t, srv, "")
	page := send(t, srv, http.MethodGet, oauth.SuccessPath+"?code="+url.QueryEscape(code)+"&state=abc", nil)
	require.Equal(t, http.StatusOK, page.status)
	require.Contains(t, string(page.body), code)

	// A code used twice revokes the tokens it gave (RFC 6749 4.1.2).
	p = tokensOf(t, exchangeCode(t, srv, code))
	ok(t, overviewWith(t, srv, "Bearer "+p.AccessToken))
	oauthError(t, exchangeCode(t, srv, code), http.StatusBadRequest, catalog.ErrInvalidGrant)
	e := failed(t, overviewWith(t, srv, "Bearer "+p.AccessToken), http.StatusUnauthorized)
	require.Contains(t, e.Error.Message, "revoked")
	form := url.Values{"grant_type": {catalog.GrantRefreshToken}, "refresh_token": {p.RefreshToken},
		"client_id": {sandbox.DefaultClientID}, "client_secret": {sandbox.DefaultClientSecret}}
	require.Contains(t, oauthError(t, postForm(t, srv, catalog.AccessTokenPath, form), http.StatusBadRequest, catalog.ErrInvalidGrant), "revoked")

	// A code lives 10 minutes.
	code = authorize(t, srv, "")
	clock.advance(oauth.AuthorizationCodeLifetime)
	require.Contains(t, oauthError(t, exchangeCode(t, srv, code), http.StatusBadRequest, catalog.ErrInvalidGrant), "expired")

	// Each flow's refresh token is renewed at its own endpoint.
	p = tokensOf(t, exchangeCode(t, srv, authorize(t, srv, "")))
	desc := oauthError(t, postForm(t, srv, catalog.DeviceTokenPath, url.Values{"grant_type": {catalog.GrantRefreshToken}, "refresh_token": {p.RefreshToken}}),
		http.StatusBadRequest, catalog.ErrInvalidGrant)
	require.Contains(t, desc, "renew it at "+catalog.AccessTokenPath)
	d := bearerToken(t, srv, "")
	form.Set("refresh_token", d.RefreshToken)
	desc = oauthError(t, postForm(t, srv, catalog.AccessTokenPath, form), http.StatusBadRequest, catalog.ErrInvalidGrant)
	require.Contains(t, desc, "renew it at "+catalog.DeviceTokenPath)
	// Neither mistake spent the token.
	tokensOf(t, postForm(t, srv, catalog.DeviceTokenPath, url.Values{"grant_type": {catalog.GrantRefreshToken}, "refresh_token": {d.RefreshToken}}))

	// A scope within the grant's may be asked for on renewal; another not.
	form.Set("refresh_token", p.RefreshToken)
	form.Set("scope", "admin")
	oauthError(t, postForm(t, srv, catalog.AccessTokenPath, form), http.StatusBadRequest, catalog.ErrInvalidScope)
	form.Set("scope", "user.id")
	tokensOf(t, postForm(t, srv, catalog.AccessTokenPath, form))
}

func TestClientAuthentication(t *testing.T) {
	t.Parallel()
	_, srv, _ := tokenServer(t, sandbox.Config{ClientID: "my:client", ClientSecret: "s3cret:with/odd&chars"})
	code := func() string {
		q := url.Values{"client_id": {"my:client"}, "redirect_uri": {srv.URL + "/anywhere/on/the/host"}, "response_type": {"code"}}
		r := sendBody(t, srv, http.MethodGet, catalog.AuthorizePath+"?"+q.Encode(), nil, "")
		require.Equal(t, http.StatusFound, r.status, "%s", r.body)
		to, err := url.Parse(r.header.Get("Location"))
		require.NoError(t, err)
		return to.Query().Get("code")
	}
	form := func(c string) url.Values {
		return url.Values{"grant_type": {catalog.GrantAuthorizationCode}, "code": {c}, "redirect_uri": {srv.URL + "/anywhere/on/the/host"}}
	}
	basic := func(id, secret string) http.Header {
		req, _ := http.NewRequest(http.MethodPost, "/", nil)
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
		return http.Header{"Authorization": req.Header["Authorization"], "Content-Type": {"application/x-www-form-urlencoded"}}
	}
	// HTTP Basic with the form-encoded id and secret (RFC 6749 2.3.1).
	tokensOf(t, sendBody(t, srv, http.MethodPost, catalog.AccessTokenPath, basic("my:client", "s3cret:with/odd&chars"), form(code()).Encode()))
	// Both ways at once.
	f := form(code())
	f.Set("client_secret", "s3cret:with/odd&chars")
	desc := oauthError(t, sendBody(t, srv, http.MethodPost, catalog.AccessTokenPath, basic("my:client", "s3cret:with/odd&chars"), f.Encode()),
		http.StatusBadRequest, catalog.ErrInvalidRequest)
	require.Contains(t, desc, "use one way")
	// A wrong secret, either way.
	r := sendBody(t, srv, http.MethodPost, catalog.AccessTokenPath, basic("my:client", "wrong"), form(code()).Encode())
	oauthError(t, r, http.StatusUnauthorized, catalog.ErrInvalidClient)
	require.Equal(t, `Basic realm="sandbox"`, r.header.Get("WWW-Authenticate"))
	f = form(code())
	f.Set("client_id", "my:client")
	f.Set("client_secret", "not-the-secret")
	r = postForm(t, srv, catalog.AccessTokenPath, f)
	oauthError(t, r, http.StatusUnauthorized, catalog.ErrInvalidClient)
	require.Empty(t, r.header.Get("WWW-Authenticate"), "no Basic challenge to a client that did not use it")
	require.NotContains(t, string(r.body), "not-the-secret")
}

func TestTokenServiceConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  sandbox.Config
		want string
	}{
		{"interval not whole seconds", sandbox.Config{DeviceInterval: 1500 * time.Millisecond}, "sandbox: DeviceInterval must be a whole number of seconds, at least 1s"},
		{"expiry under a second", sandbox.Config{DeviceExpiresIn: time.Millisecond}, "sandbox: DeviceExpiresIn must be a whole number of seconds"},
		{"negative interval", sandbox.Config{DeviceInterval: -time.Second}, "DeviceInterval must be"},
		{"negative auto-approve", sandbox.Config{DeviceAutoApprove: -1}, "sandbox: DeviceAutoApprove must be 0 (off) or the poll that gets the tokens"},
		{"secret with a space", sandbox.Config{ClientSecret: "a b"}, "sandbox: ClientSecret contains a space or control character"},
	} {
		_, err := sandbox.New(tc.cfg)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}

func TestTokenServiceFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		faults sandbox.Faults
		status int
		code   string
	}{
		{sandbox.Faults{Internal: 1}, http.StatusInternalServerError, catalog.ErrServerError},
		{sandbox.Faults{Unavailable: 1}, http.StatusServiceUnavailable, catalog.ErrTemporarilyUnavailable},
		{sandbox.Faults{TooManyRequests: 1}, http.StatusTooManyRequests, catalog.ErrTemporarilyUnavailable},
	} {
		_, srv, _ := tokenServer(t, sandbox.Config{Faults: tc.faults})
		r := postForm(t, srv, catalog.DeviceCodePath, nil)
		require.Contains(t, oauthError(t, r, tc.status, tc.code), "a fault injected by the sandbox")
		require.Equal(t, strconv.Itoa(tc.status), r.header.Get("X-Sandbox-Faults"))
		// Malformed requests are refused before any draw, as on the data
		// endpoints; the pages and the sandbox-only calls are never hit.
		oauthError(t, sendBody(t, srv, http.MethodPost, catalog.DeviceTokenPath, http.Header{"Content-Type": {"application/json"}}, "{}"),
			http.StatusBadRequest, catalog.ErrInvalidRequest)
		oauthError(t, postForm(t, srv, catalog.AccessTokenPath, url.Values{"grant_type": {catalog.GrantAuthorizationCode}}),
			http.StatusUnauthorized, catalog.ErrInvalidClient)
		authorize(t, srv, "")
		require.Equal(t, http.StatusOK, send(t, srv, http.MethodGet, oauth.VerificationPath, nil).status)
	}

	// A fault strikes before the request changes anything: a retry is
	// always safe. Half the requests fail; every flow gets through.
	sb, srv, clock := tokenServer(t, sandbox.Config{Faults: sandbox.Faults{Unavailable: 0.5}, DeviceAutoApprove: 1})
	retry := func(send func() reply) (reply, int) {
		for faults := 0; ; faults++ {
			r := send()
			if r.status != http.StatusServiceUnavailable {
				return r, faults
			}
			require.Equal(t, "503", r.header.Get("X-Sandbox-Faults"))
			require.Less(t, faults, 50)
		}
	}
	total := 0
	for range 5 {
		r, n := retry(func() reply { return postForm(t, srv, catalog.DeviceCodePath, nil) })
		total += n
		var d struct {
			DeviceCode string `json:"device_code"`
		}
		require.NoError(t, json.Unmarshal(r.body, &d))
		r, n = retry(func() reply { clock.advance(time.Second); return pollDevice(t, srv, d.DeviceCode) })
		total += n
		p := tokensOf(t, r)
		r, n = retry(func() reply {
			return postForm(t, srv, catalog.DeviceTokenPath, url.Values{"grant_type": {catalog.GrantRefreshToken}, "refresh_token": {p.RefreshToken}})
		})
		total += n
		access := tokensOf(t, r).AccessToken
		r, _ = retry(func() reply { return overviewWith(t, srv, "Bearer "+access) })
		ok(t, r)
		r, n = retry(func() reply { return exchangeCode(t, srv, authorize(t, srv, "")) })
		total += n
		tokensOf(t, r)
	}
	require.Positive(t, total, "the seed gives some faults")
	t.Logf("%d faults on the token endpoints, every flow through", total)
	require.Positive(t, sb.Usage("key-one").Requests)
}

func TestTokenServiceSlowFault(t *testing.T) {
	t.Parallel()
	var slept []time.Duration
	var mu sync.Mutex
	s, err := sandbox.NewWithHooks(sandbox.Config{Faults: sandbox.Faults{Slow: 1}, SlowDelay: 3 * time.Second,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))},
		func(_ context.Context, d time.Duration) error {
			mu.Lock()
			slept = append(slept, d)
			mu.Unlock()
			return nil
		}, nil)
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	r := postForm(t, srv, catalog.DeviceCodePath, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "slow", r.header.Get("X-Sandbox-Faults"))
	mu.Lock()
	require.Equal(t, []time.Duration{3 * time.Second}, slept)
	mu.Unlock()
}

// TestTokenServiceLogs runs every flow with a logger and requires that no
// token, code or client secret reaches the log.
func TestTokenServiceLogs(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	const secret = "client-secret-in-the-config"
	_, srv, _ := tokenServer(t, sandbox.Config{ClientSecret: secret, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	d := bearerToken(t, srv, "")
	code := authorize(t, srv, "")
	r := postForm(t, srv, catalog.AccessTokenPath, url.Values{"grant_type": {catalog.GrantAuthorizationCode}, "code": {code},
		"redirect_uri": {srv.URL + oauth.SuccessPath}, "client_id": {sandbox.DefaultClientID}, "client_secret": {secret}})
	c := tokensOf(t, r)
	ok(t, overviewWith(t, srv, "Bearer "+d.AccessToken))
	failed(t, overviewWith(t, srv, "Bearer "+d.RefreshToken), http.StatusUnauthorized)
	postForm(t, srv, catalog.AccessTokenPath, url.Values{"grant_type": {catalog.GrantRefreshToken}, "refresh_token": {c.RefreshToken},
		"client_id": {sandbox.DefaultClientID}, "client_secret": {secret + "x"}})
	out := logs.String()
	require.Contains(t, out, catalog.AccessTokenPath)
	for _, s := range []string{secret, d.AccessToken, d.RefreshToken, c.AccessToken, c.RefreshToken, code} {
		require.NotContains(t, out, s)
	}
}

// syncBuffer is a bytes.Buffer for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
