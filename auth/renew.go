package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/oauth2"

	"github.com/seoetl/etl/catalog"
)

// Token returns the account's access token, renewed first when it expires
// within Config.Margin. The token is read from the warehouse (and kept in
// memory until it is due), so every process sharing the warehouse shares
// it. An account that cannot be renewed is a *SignInError.
func (a *Accounts) Token(ctx context.Context, name string) (string, error) {
	now := a.cfg.Now()
	a.mu.Lock()
	c, ok := a.cache[name]
	a.mu.Unlock()
	if ok && !a.due(c.expiry, now) {
		return c.access, nil
	}
	t, err := a.load(ctx, nil, name)
	if err != nil {
		return "", err
	}
	if !a.due(t.AccessExpires, now) {
		a.remember(name, t.access, t.AccessExpires)
		return t.access, nil
	}
	return a.renew(ctx, name, "")
}

// Renew renews the account's tokens after the API refused its access token
// stale (a 401): unless another process renewed them since (the stored
// access token is no longer stale), in which case their token is
// returned.
func (a *Accounts) Renew(ctx context.Context, name, stale string) (string, error) {
	return a.renew(ctx, name, stale)
}

// due reports whether an access token expiring at expiry must be renewed
// at now.
func (a *Accounts) due(expiry, now time.Time) bool { return !now.Before(expiry.Add(-a.cfg.Margin)) }

// renew is the one piece of our own around the library's refresh: it
// persists the rotated refresh token. In one transaction it locks the
// account's row (FOR UPDATE: every other renewal of the account, in any
// process, waits), re-reads it, and renews only if it is still due (or,
// with stale, still holds the refused token); otherwise another process
// renewed it while this one waited, and its tokens are used. The refresh
// is golang.org/x/oauth2's, at the token endpoint of the flow that issued
// the tokens (design notes; RFC 6749 section 6). The new tokens commit
// with the lock held, so no process ever refreshes with a rotated refresh
// token.
//
// One window remains: if the commit fails after the token service
// rotated the refresh token, the new one is lost and the account must
// sign in again.
func (a *Accounts) renew(ctx context.Context, name, stale string) (string, error) {
	tx, err := a.cfg.Pool.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("renewing account %s: %w", name, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	t, err := a.load(ctx, tx, name)
	if err != nil {
		return "", err
	}
	now := a.cfg.Now()
	if stale == "" && !a.due(t.AccessExpires, now) || stale != "" && t.access != stale {
		if err := tx.Commit(ctx); err != nil {
			return "", fmt.Errorf("renewing account %s: %w", name, err)
		}
		a.remember(name, t.access, t.AccessExpires)
		return t.access, nil
	}
	if !now.Before(t.RefreshExpires) {
		return "", &SignInError{Account: name, Reason: fmt.Sprintf("the refresh token expired at %s (%d days without renewal)",
			t.RefreshExpires.UTC().Format(time.RFC3339), catalog.RefreshTokenLifetime/(24*time.Hour))}
	}
	cfg, err := a.oauthConfig(t.Flow)
	if err != nil {
		return "", fmt.Errorf("renewing account %s: %w", name, err)
	}
	tok, err := cfg.TokenSource(a.httpContext(ctx), &oauth2.Token{RefreshToken: t.refresh}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == catalog.ErrInvalidGrant {
			return "", &SignInError{Account: name, Reason: "the token service refused the refresh token: " + re.ErrorDescription}
		}
		if err := tokenError(err); errors.As(err, new(*ServiceError)) {
			return "", err // one line that says what to check
		}
		return "", fmt.Errorf("renewing account %s: %w", name, tokenError(err))
	}
	refresh := tok.RefreshToken
	refreshExpires := now.Add(catalog.RefreshTokenLifetime)
	if refresh == "" { // no rotation: the old one stays, with its expiry
		refresh, refreshExpires = t.refresh, t.RefreshExpires
	}
	exp := expiry(tok, now)
	_, err = tx.Exec(ctx, `
UPDATE accounts SET access_token = $2, refresh_token = $3, access_expires_at = $4, refresh_expires_at = $5,
       refreshed_at = $6, refreshed_by = $7, key_fingerprint = $8
 WHERE name = $1`,
		name, a.cfg.Key.seal(name, "access_token", tok.AccessToken), a.cfg.Key.seal(name, "refresh_token", refresh),
		exp, refreshExpires, now, a.cfg.Host, a.cfg.Key.Fingerprint())
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return "", fmt.Errorf("storing the renewed tokens of account %s (the old refresh token no longer works: "+
			"sign in again with `etl auth login --account %s`): %w", name, name, err)
	}
	a.remember(name, tok.AccessToken, exp)
	a.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "account renewed", slog.String("account", name),
		slog.Time("access_expires_at", exp), slog.Time("refresh_expires_at", refreshExpires))
	return tok.AccessToken, nil
}

// Transport returns an http.RoundTripper that sends each request through
// base with the account's bearer token ("Authorization: Bearer TOKEN",
// spec 5.2), renewed before it is due (Token). A request answered 401 is
// renewed once (Renew) and sent once more, when its body can be sent
// again. base nil: http.DefaultTransport.
func (a *Accounts) Transport(name string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{a: a, name: name, base: base}
}

type transport struct {
	a    *Accounts
	name string
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	token, err := t.a.Token(ctx, t.name)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.base.RoundTrip(withBearer(req, token))
	if err != nil || resp.StatusCode != http.StatusUnauthorized || (req.Body != nil && req.GetBody == nil) {
		return resp, err
	}
	renewed, err := t.a.Renew(ctx, t.name, token)
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	resp.Body.Close()
	retry := withBearer(req, renewed)
	if req.GetBody != nil {
		b, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		retry.Body = b
	}
	return t.base.RoundTrip(retry)
}

// withBearer is a copy of req with the bearer token (a RoundTripper must
// not change its request).
func withBearer(req *http.Request, token string) *http.Request {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
