package oauth

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/seoetl/etl/catalog"
)

// flow is the authorization flow that issued a grant.
type flow int

const (
	deviceFlow flow = iota + 1 // spec 5.3
	codeFlow                   // spec 5.4
)

func (f flow) String() string {
	if f == deviceFlow {
		return "the device authorization grant"
	}
	return "the authorization code flow"
}

// tokenPath is where the flow's tokens are renewed: the token endpoint of
// the flow that issued them (design notes; RFC 6749 section 6).
func (f flow) tokenPath() string {
	if f == deviceFlow {
		return catalog.DeviceTokenPath
	}
	return catalog.AccessTokenPath
}

// grant is one authorization: the tokens issued by one approved device
// code or one authorization code, and all their renewals.
type grant struct {
	account string // the API key whose units the tokens spend
	flow    flow
	scope   string
	// revoked ends every token of the grant: its authorization code was
	// used twice (RFC 6749 section 4.1.2).
	revoked bool
}

type accessTok struct {
	g       *grant
	expires time.Time // sandbox clock
}

type refreshTok struct {
	g       *grant
	expires time.Time // sandbox clock: 30 days after it was issued
	// rotated: it was renewed, so it no longer works; its successor does.
	rotated bool
}

// tokenAnswer is the token response (spec 5.3 step 4, 5.4 step 4).
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
}

// issueLocked issues a new access token and refresh token of g at now.
func (s *Service) issueLocked(g *grant, now time.Time) tokenAnswer {
	a := tokenAnswer{
		AccessToken:  secret("sbx-at-"),
		TokenType:    catalog.TokenType,
		ExpiresIn:    seconds(catalog.AccessTokenLifetime),
		RefreshToken: secret("sbx-rt-"),
	}
	s.access[a.AccessToken] = &accessTok{g: g, expires: now.Add(catalog.AccessTokenLifetime)}
	s.refresh[a.RefreshToken] = &refreshTok{g: g, expires: now.Add(catalog.RefreshTokenLifetime)}
	return a
}

// renew answers grant_type=refresh_token at the token endpoint of f (spec
// 5.4 step 5): a new access token and a new refresh token; the old refresh
// token stops working (it rotates), the old access token lives out its
// 7 days. A refresh token is renewed only where its flow's tokens are
// issued. scope, when given, must be within the grant's (RFC 6749 section
// 6); the grant keeps its scope.
func (s *Service) renew(f flow, vals url.Values, now time.Time) (tokenAnswer, *oauthError) {
	token := vals.Get("refresh_token")
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := s.refresh[token]
	switch {
	case rt == nil:
		return tokenAnswer{}, invalidGrant("the refresh token is not known")
	case rt.g.revoked:
		return tokenAnswer{}, invalidGrant("the refresh token was revoked: its authorization code was used twice; repeat the authorization flow")
	case rt.rotated:
		return tokenAnswer{}, invalidGrant("the refresh token was already used: each renewal answers a new refresh token and the old one stops working")
	case !now.Before(rt.expires):
		return tokenAnswer{}, invalidGrant("the refresh token expired at %s: %d days passed without renewal; repeat the authorization flow",
			rt.expires.UTC().Format(time.RFC3339), catalog.RefreshTokenLifetime/(24*time.Hour))
	case rt.g.flow != f:
		return tokenAnswer{}, invalidGrant("the refresh token was issued by %s: renew it at %s", rt.g.flow, rt.g.flow.tokenPath())
	}
	if scope := vals.Get("scope"); scope != "" {
		if e := checkScope(scope); e != nil {
			return tokenAnswer{}, e
		}
		granted := strings.Fields(rt.g.scope)
		for tok := range strings.SplitSeq(scope, " ") {
			if !slices.Contains(granted, tok) {
				return tokenAnswer{}, badRequest(catalog.ErrInvalidScope, "scope %q was not granted to this refresh token", tok)
			}
		}
	}
	rt.rotated = true
	return s.issueLocked(rt.g, now), nil
}

// Account returns the account (API key) of a valid access token at now,
// the sandbox clock, or "" and why the token is refused (for a 401).
func (s *Service) Account(token string, now time.Time) (account, reason string) {
	if token == "" {
		return "", "no token after Bearer: send Authorization: Bearer TOKEN"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.access[token]
	switch {
	case at == nil:
		return "", "the access token is not valid"
	case at.g.revoked:
		return "", "the access token was revoked: its authorization code was used twice"
	case !now.Before(at.expires):
		return "", fmt.Sprintf("the access token expired at %s, %d days after it was issued; renew it with its refresh token",
			at.expires.UTC().Format(time.RFC3339), catalog.AccessTokenLifetime/(24*time.Hour))
	}
	return at.g.account, ""
}

// Token is what a token answer carries.
type Token struct {
	AccessToken  string
	RefreshToken string
	// Expiry is when the access token expires, on the sandbox clock.
	Expiry time.Time
}

// Issue issues tokens for account at now as an approved device code would
// (they are renewed at catalog.DeviceTokenPath), without the flow: for
// tests that need a bearer token and are not about the token service.
func (s *Service) Issue(account string, now time.Time) (Token, error) {
	if !s.isAccount(account) {
		return Token{}, fmt.Errorf("the account must be one of the sandbox's API keys")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.issueLocked(&grant{account: account, flow: deviceFlow}, now)
	return Token{AccessToken: a.AccessToken, RefreshToken: a.RefreshToken, Expiry: now.Add(catalog.AccessTokenLifetime)}, nil
}
