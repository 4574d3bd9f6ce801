package auth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/seoetl/etl/catalog"
)

// ErrDenied is the cause of a sign-in the person refused (access_denied).
var ErrDenied = errors.New("the sign-in was denied at the verification page")

// ErrCodeExpired is the cause of a device sign-in whose code expired
// before it was approved (expired_token).
var ErrCodeExpired = errors.New("the code expired before the sign-in was approved")

// DeviceCode is what a person needs to approve a device sign-in: open
// VerificationURI and approve UserCode there, within ExpiresIn.
type DeviceCode struct {
	VerificationURI string
	UserCode        string
	ExpiresIn       time.Duration
	Interval        time.Duration
}

// LoginDevice signs the account in with the device authorization grant
// (spec 5.3, RFC 8628): it asks for a code, hands it to show (which tells
// the person; nothing is opened by itself), polls the token endpoint at
// the code's interval (5 seconds longer for good after each slow_down),
// and stores the tokens, replacing the account's earlier ones. It stops
// with ErrDenied on access_denied and ErrCodeExpired on expired_token.
//
// The device code request and each poll are golang.org/x/oauth2's; the
// poll loop is ours, because the library's DeviceAccessToken waits on a
// wall-clock ticker that Config.Wait cannot replace (tests would wait in
// real time) and tells nothing of slow_down. A poll is the library's token
// request with the device grant's parameters (RFC 8628 section 3.4); the
// empty code parameter that Exchange adds counts as omitted (RFC 6749
// section 3.1).
func (a *Accounts) LoginDevice(ctx context.Context, name string, show func(DeviceCode) error) (Account, error) {
	if err := CheckName(name); err != nil {
		return Account{}, err
	}
	if a.cfg.Key == nil {
		return Account{}, ErrNoKey
	}
	cfg, err := a.oauthConfig(DeviceFlow)
	if err != nil {
		return Account{}, err
	}
	hctx := a.httpContext(ctx)
	da, err := cfg.DeviceAuth(hctx)
	if err != nil {
		if err := tokenError(err); errors.As(err, new(*ServiceError)) {
			return Account{}, err
		}
		return Account{}, fmt.Errorf("asking for a device code: %w", tokenError(err))
	}
	interval := time.Duration(da.Interval) * time.Second
	if interval <= 0 {
		interval = catalog.DevicePollInterval // RFC 8628 section 3.2
	}
	// The library turns expires_in into a time on the wall clock; ours
	// may differ.
	expiresIn := time.Until(da.Expiry).Round(time.Second)
	if da.Expiry.IsZero() {
		expiresIn = catalog.DeviceCodeLifetime
	}
	if err := show(DeviceCode{VerificationURI: da.VerificationURI, UserCode: da.UserCode, ExpiresIn: expiresIn, Interval: interval}); err != nil {
		return Account{}, err
	}
	deadline := a.cfg.Now().Add(expiresIn)
	for {
		if err := a.cfg.Wait(ctx, interval); err != nil {
			return Account{}, fmt.Errorf("waiting for the sign-in of account %s: %w", name, err)
		}
		tok, err := cfg.Exchange(hctx, "",
			oauth2.SetAuthURLParam("grant_type", catalog.GrantDeviceCode),
			oauth2.SetAuthURLParam("device_code", da.DeviceCode))
		if err == nil {
			return a.signedIn(ctx, name, DeviceFlow, cfg, tok)
		}
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) {
			if err := tokenError(err); errors.As(err, new(*ServiceError)) {
				return Account{}, err
			}
			return Account{}, fmt.Errorf("polling for the sign-in of account %s: %w", name, err)
		}
		switch re.ErrorCode {
		case catalog.ErrAuthorizationPending:
		case catalog.ErrSlowDown:
			interval += catalog.SlowDownStep
			a.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "the token service asked to poll more slowly",
				slog.String("account", name), slog.Duration("interval", interval))
		case catalog.ErrAccessDenied:
			return Account{}, fmt.Errorf("account %s: %w; run `etl auth login --account %s` again to retry", name, ErrDenied, name)
		case catalog.ErrExpiredToken:
			return Account{}, fmt.Errorf("account %s: %w; run `etl auth login --account %s` again and approve the new code within %v",
				name, ErrCodeExpired, name, expiresIn)
		default:
			return Account{}, fmt.Errorf("polling for the sign-in of account %s: %w", name, tokenError(err))
		}
		if a.cfg.Now().After(deadline.Add(interval)) {
			return Account{}, fmt.Errorf("account %s: %w; run `etl auth login --account %s` again", name, ErrCodeExpired, name)
		}
	}
}

// CodeLogin is an authorization code sign-in in progress (spec 5.4): the
// person opens URL, approves, and pastes back the code (or the whole
// address they were sent to); Finish exchanges it.
type CodeLogin struct {
	URL string

	a     *Accounts
	name  string
	cfg   *oauth2.Config
	state string
}

// LoginCode starts an authorization code sign-in of the account (spec
// 5.4), redirected to redirectURI (a page on the token host that shows the
// code). It needs Config.ClientID and ClientSecret.
func (a *Accounts) LoginCode(name, redirectURI string) (*CodeLogin, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if a.cfg.Key == nil {
		return nil, ErrNoKey
	}
	cfg, err := a.oauthConfig(CodeFlow)
	if err != nil {
		return nil, err
	}
	cfg.RedirectURL = redirectURI
	state := rand.Text()
	return &CodeLogin{URL: cfg.AuthCodeURL(state), a: a, name: name, cfg: cfg, state: state}, nil
}

// Finish exchanges the pasted code for tokens (form-encoded, client_id
// and client_secret in the body, as spec 5.4 step 3 insists) and stores
// them. pasted is the code, or the address the person was redirected to
// (then its state must be this sign-in's).
func (l *CodeLogin) Finish(ctx context.Context, pasted string) (Account, error) {
	code := strings.TrimSpace(pasted)
	if u, err := url.Parse(code); err == nil && u.Scheme != "" && u.RawQuery != "" {
		q := u.Query()
		if e := q.Get("error"); e != "" {
			if e == catalog.ErrAccessDenied {
				return Account{}, fmt.Errorf("account %s: %w", l.name, ErrDenied)
			}
			return Account{}, fmt.Errorf("account %s: the authorization failed: %s", l.name, e)
		}
		if s := q.Get("state"); s != "" && s != l.state {
			return Account{}, errors.New("the address pasted belongs to another sign-in (its state differs): paste the one this sign-in led to")
		}
		code = q.Get("code")
	}
	if code == "" {
		return Account{}, errors.New("no code was pasted")
	}
	tok, err := l.cfg.Exchange(l.a.httpContext(ctx), code)
	if err != nil {
		if err := tokenError(err); errors.As(err, new(*ServiceError)) {
			return Account{}, err
		}
		return Account{}, fmt.Errorf("exchanging the code of account %s: %w", l.name, tokenError(err))
	}
	return l.a.signedIn(ctx, l.name, CodeFlow, l.cfg, tok)
}

// signedIn stores the tokens of a sign-in.
func (a *Accounts) signedIn(ctx context.Context, name string, f Flow, cfg *oauth2.Config, tok *oauth2.Token) (Account, error) {
	if tok.RefreshToken == "" {
		return Account{}, fmt.Errorf("account %s: the token service answered no refresh token, so the account could not be renewed", name)
	}
	now := a.cfg.Now()
	scopes := strings.Join(cfg.Scopes, " ")
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		scopes = s
	}
	acc, err := a.save(ctx, name, f, scopes, tok.AccessToken, tok.RefreshToken, expiry(tok, now), now)
	if err != nil {
		return Account{}, err
	}
	a.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "account signed in", slog.String("account", name), slog.String("flow", string(f)),
		slog.Time("access_expires_at", acc.AccessExpires))
	return acc, nil
}

// expiry is when tok's access token expires on our clock: the library
// turns expires_in into a time on the wall clock.
func expiry(tok *oauth2.Token, now time.Time) time.Time {
	if tok.ExpiresIn > 0 {
		return now.Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	return now.Add(catalog.AccessTokenLifetime) // spec 5.3 step 4: always 7 days
}

// tokenError shortens the library's error of an OAuth error answer to its
// code and description (the answer of an error holds no token).
//
// A token request that got no HTTP answer is its *ServiceError alone: one
// line that says what to check, whatever the request was.
func tokenError(err error) error {
	var se *ServiceError
	if errors.As(err, &se) {
		return se
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode != "" {
		msg := re.ErrorCode
		if re.ErrorDescription != "" {
			msg += ": " + re.ErrorDescription
		}
		return fmt.Errorf("the token service answered %s", msg)
	}
	return err
}
