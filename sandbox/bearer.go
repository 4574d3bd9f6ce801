package sandbox

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// bearerAccount returns the account (API key) of the request's bearer
// token (spec 5.2), valid at the sandbox clock c, or "" and why the
// request is refused, for a 401: no Authorization header, a scheme other
// than Bearer, no token, an unknown, revoked or expired token. The reason
// never repeats the token.
func (s *Server) bearerAccount(r *http.Request, c clock) (account string, reason string) {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if h == "" {
		return "", "no credentials: send Authorization: Bearer TOKEN"
	}
	scheme, token, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", "the Authorization header must read Bearer TOKEN"
	}
	return s.tokens.Account(strings.TrimSpace(token), c.now)
}

// Token is a bearer token of the sandbox's token service.
type Token struct {
	AccessToken  string
	RefreshToken string
	// Expiry is when the access token expires on the sandbox clock, 7
	// days after it was issued; the refresh token expires 23 days later.
	Expiry time.Time
}

// IssueToken issues tokens for account (one of Config.APIKeys) at the
// sandbox clock, as an approved device code would, without the flow: for
// tests that need a bearer token and are not about the token service. The
// refresh token is renewed at catalog.DeviceTokenPath.
func (s *Server) IssueToken(account string) (Token, error) {
	t, err := s.tokens.Issue(account, newClock(s.now()).now)
	if err != nil {
		return Token{}, fmt.Errorf("sandbox: %w", err)
	}
	return Token{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, Expiry: t.Expiry}, nil
}

// tokenFault is the token service's oauth.Config.Fault: the status and slow
// faults of Config.Faults, drawn as for the data endpoints (no API key: the
// requests of every client share their counts). A cut is never drawn for
// a token answer (package oauth says why).
func (s *Server) tokenFault(w http.ResponseWriter, r *http.Request) (status int, faults string, err error) {
	if !s.faults.enabled() {
		return 0, "", nil
	}
	p := s.planFaults("", canonicalRequest(r))
	p.cut = false
	faults = p.header(false, 0)
	if p.slow {
		if err := s.wait(r.Context(), s.slowDelay); err != nil {
			return 0, faults, fmt.Errorf("the client left during the slow fault: %w", err)
		}
	}
	if faults != "" {
		w.Header().Set(faultHeader, faults)
	}
	return p.status, faults, nil
}
