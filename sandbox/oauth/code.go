package oauth

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seoetl/etl/catalog"
)

// authCode is one authorization code (spec 5.4 step 2).
type authCode struct {
	g           *grant
	redirectURI string
	expires     time.Time // sandbox clock
	used        bool
}

// serveAuthorize answers GET catalog.AuthorizePath (spec 5.4 step 2, RFC
// 6749 section 4.1): the page where a person logs in and approves; in the
// sandbox, approval is immediate and the answer a redirect to redirect_uri
// with code (and state, when given).
//
// A missing, repeated or unknown client_id, or a redirect_uri that is
// missing, repeated, not absolute http(s) or not on the token host (the
// spec: "a path on the token host"), is told to the person on a page,
// never redirected (RFC 6749 section 4.1.2.1). The other errors are
// redirected with error, error_description and state: invalid_request,
// unsupported_response_type (response_type other than code),
// invalid_scope, and access_denied.
//
// The sandbox takes one parameter of its own: account, one of its API
// keys (default the first), who the person logs in as; an unknown one is
// access_denied.
func (s *Service) serveAuthorize(w http.ResponseWriter, r *http.Request, now time.Time) Result {
	if r.Method != http.MethodGet {
		return s.page(w, r, methodNotAllowed(r, http.MethodGet))
	}
	show := func(format string, args ...any) Result {
		e := invalidRequest(format, args...)
		renderPage(w, e.status, pageData{Title: "Authorization failed", Error: e.code, Description: e.description})
		return Result{Status: e.status, Err: e}
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return show("the query string is malformed: %v", err)
	}
	switch ids := q["client_id"]; {
	case len(ids) == 0 || ids[0] == "":
		return show("client_id is missing")
	case len(ids) > 1:
		return show("client_id is given more than once")
	case ids[0] != s.cfg.ClientID:
		return show("client_id is not a client of this token service")
	}
	var redirect *url.URL
	switch uris := q["redirect_uri"]; {
	case len(uris) == 0 || uris[0] == "":
		return show("redirect_uri is missing")
	case len(uris) > 1:
		return show("redirect_uri is given more than once")
	default:
		u, err := url.Parse(uris[0])
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return show("redirect_uri must be an absolute http or https URL")
		case u.Fragment != "" || strings.Contains(uris[0], "#"):
			return show("redirect_uri must not have a fragment (RFC 6749 section 3.1.2)")
		case !strings.EqualFold(u.Host, r.Host):
			return show("redirect_uri must be on the token host, %s (for example %s%s)", r.Host, origin(r), SuccessPath)
		}
		redirect = u
	}
	state := q.Get("state")
	back := func(code, description string) Result {
		e := badRequest(code, "%s", description)
		v := redirect.Query()
		v.Set("error", code)
		v.Set("error_description", description)
		if state != "" {
			v.Set("state", state)
		}
		to := *redirect
		to.RawQuery = v.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
		return Result{Status: http.StatusFound, Err: e}
	}
	if e := once(q); e != nil {
		return back(e.code, e.description)
	}
	switch rt := q.Get("response_type"); rt {
	case "":
		return back(catalog.ErrInvalidRequest, "response_type is missing; use response_type=code")
	case "code":
	default:
		return back(catalog.ErrUnsupportedResponseType, "response_type must be code")
	}
	scope := q.Get("scope")
	if scope != "" {
		if e := checkScope(scope); e != nil {
			return back(e.code, e.description)
		}
	}
	account := s.cfg.Accounts[0]
	if a := q.Get("account"); a != "" {
		if !s.isAccount(a) {
			return back(catalog.ErrAccessDenied, "the sandbox has no account with that API key")
		}
		account = a
	}
	code := secret("sbx-ac-")
	s.mu.Lock()
	s.codes[code] = &authCode{
		g:           &grant{account: account, flow: codeFlow, scope: scope},
		redirectURI: redirect.String(),
		expires:     now.Add(AuthorizationCodeLifetime),
	}
	s.mu.Unlock()
	v := redirect.Query()
	v.Set("code", code)
	if state != "" {
		v.Set("state", state)
	}
	to := *redirect
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
	return Result{Status: http.StatusFound}
}

// serveAccessToken answers POST catalog.AccessTokenPath (spec 5.4 steps 3
// to 5): the client authenticates (form body or HTTP Basic), then
// grant_type=authorization_code (code, redirect_uri) or
// grant_type=refresh_token (refresh_token) of a code-flow grant.
func (s *Service) serveAccessToken(w http.ResponseWriter, r *http.Request, now time.Time) Result {
	if r.Method != http.MethodPost {
		return fail(w, methodNotAllowed(r, http.MethodPost), "")
	}
	vals, e := readForm(r)
	if e != nil {
		return fail(w, e, "")
	}
	if e := s.authenticateClient(r, vals); e != nil {
		return fail(w, e, "")
	}
	var params []string
	switch gt := vals.Get("grant_type"); gt {
	case "":
		return fail(w, invalidRequest("grant_type is missing; use %s or %s", catalog.GrantAuthorizationCode, catalog.GrantRefreshToken), "")
	case catalog.GrantAuthorizationCode:
		params = []string{"code", "redirect_uri"}
	case catalog.GrantRefreshToken:
		params = []string{"refresh_token"}
	case catalog.GrantDeviceCode:
		return fail(w, badRequest(catalog.ErrUnsupportedGrantType, "a device code is polled at %s", catalog.DeviceTokenPath), "")
	default:
		return fail(w, badRequest(catalog.ErrUnsupportedGrantType, "grant_type %q is not served here; use %s or %s",
			gt, catalog.GrantAuthorizationCode, catalog.GrantRefreshToken), "")
	}
	if _, e := required(vals, params...); e != nil {
		return fail(w, e, "")
	}
	res, done := s.fault(w, r)
	if done {
		return res
	}
	var a tokenAnswer
	if params[0] == "refresh_token" {
		a, e = s.renew(codeFlow, vals, now)
	} else {
		a, e = s.exchange(vals.Get("code"), vals.Get("redirect_uri"), now)
	}
	if e != nil {
		return fail(w, e, res.Faults)
	}
	writeJSON(w, http.StatusOK, a)
	res.Status = http.StatusOK
	return res
}

// exchange trades an authorization code for tokens (RFC 6749 section
// 4.1.3): once, within AuthorizationCodeLifetime, with the redirect_uri it
// was issued for. A second use fails and revokes the tokens of the first
// (RFC 6749 section 4.1.2).
func (s *Service) exchange(code, redirectURI string, now time.Time) (tokenAnswer, *oauthError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.codes[code]
	switch {
	case c == nil:
		return tokenAnswer{}, invalidGrant("the authorization code is not known")
	case c.used:
		c.g.revoked = true
		return tokenAnswer{}, invalidGrant("the authorization code was already used; the tokens it gave are revoked (RFC 6749 section 4.1.2)")
	case !now.Before(c.expires):
		return tokenAnswer{}, invalidGrant("the authorization code expired at %s (%v after it was issued)",
			c.expires.UTC().Format(time.RFC3339), AuthorizationCodeLifetime)
	case redirectURI != c.redirectURI:
		return tokenAnswer{}, invalidGrant("redirect_uri is not the one the authorization code was issued for")
	}
	c.used = true
	return s.issueLocked(c.g, now), nil
}

// serveSuccess answers GET SuccessPath: the success page a redirect_uri
// on the token host may name, showing the code to copy (or the error).
func (s *Service) serveSuccess(w http.ResponseWriter, r *http.Request) Result {
	if r.Method != http.MethodGet {
		return s.page(w, r, methodNotAllowed(r, http.MethodGet))
	}
	q, _ := url.ParseQuery(r.URL.RawQuery)
	data := pageData{Title: "Authorization", Code: q.Get("code"), State: q.Get("state"),
		Error: q.Get("error"), Description: q.Get("error_description")}
	if data.Code == "" && data.Error == "" {
		data.Description = "This page shows the code of an authorization; it was opened without one."
	}
	renderPage(w, http.StatusOK, data)
	return Result{Status: http.StatusOK}
}
