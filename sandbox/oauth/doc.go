// Package oauth is the sandbox's token service (spec 3, 5 and 8.5): the
// device authorization grant (RFC 8628), the authorization code flow and
// the renewal of tokens with rotating refresh tokens (RFC 6749), served by
// package sandbox on the same address as the data API (configure it with
// sandbox.Config). The paths, grant types, lifetimes and error codes are
// package catalog's (auth.go).
//
// # Device authorization grant
//
// POST catalog.DeviceCodePath (form body, optional scope) answers
// device_code, user_code (XXXX-XXXX, RFC 8628 section 6.1's alphabet),
// verification_uri (VerificationPath on the host the request was sent
// to), expires_in and interval. Polls of catalog.DeviceTokenPath
// (grant_type=urn:ietf:params:oauth:grant-type:device_code, device_code)
// answer, as RFC 8628 section 3.5 says: authorization_pending;
// slow_down when a poll comes less than the interval after the one before
// (less a quarter of the interval, at most a second, for the jitter of
// timers), after which the code's interval is 5 seconds longer for good;
// access_denied once denied; expired_token once expires_in has passed on
// the sandbox clock; and once approved, the tokens. A device code gives
// tokens once; a later poll is invalid_grant. The pace of polls is measured
// on the wall clock (Config.WallClock), not the sandbox clock: a pinned
// sandbox clock would make every poll look too fast.
//
// Nobody signs in to the sandbox: a person approves or denies a user code
// with POST ApprovePath?user_code=CODE[&account=KEY] or DenyPath (also
// from the form of the verification page), the tokens belonging to the
// account KEY (one of the sandbox's API keys, default the first). With
// Config.DeviceAutoApprove N every code is approved for the first key as
// it is polled for the N-th time, so tests and demos run unattended.
//
// # Authorization code flow
//
// GET catalog.AuthorizePath (client_id, redirect_uri on the token host,
// response_type=code, scope, state) approves at once and redirects to
// redirect_uri with code and state; SuccessPath is a page on the token host
// that shows the code. Errors follow RFC 6749 section 4.1.2.1: a bad
// client_id or redirect_uri on a page, the others redirected. POST
// catalog.AccessTokenPath, form-encoded only (a JSON body is refused, spec
// 5.4 step 3), authenticates the client (client_id and client_secret in
// the body, or HTTP Basic, not both) and exchanges a code
// (grant_type=authorization_code, code, redirect_uri) within
// AuthorizationCodeLifetime, once: a second use is invalid_grant and
// revokes the tokens of the first (RFC 6749 section 4.1.2).
//
// # Tokens
//
// Every token answer is access_token, token_type Bearer, expires_in 604800
// and refresh_token. An access token works for 7 days on the sandbox
// clock; a refresh token for 30 days, and once: a renewal
// (grant_type=refresh_token) answers a new access token and a new refresh
// token, and the old refresh token is invalid_grant from then on (the old
// access token lives out its 7 days). A token is renewed at the token
// endpoint of the flow that issued it: a device-flow token at
// catalog.DeviceTokenPath without client credentials, a code-flow token at
// catalog.AccessTokenPath with them; the spec shows renewal only for the
// code flow, and the device flow's renewal at its own endpoint is RFC 6749
// section 6 and the choice of the design notes. A refresh token presented
// at the other flow's endpoint is invalid_grant, saying where to go.
//
// golang.org/x/oauth2 speaks all of it (TestOAuth2Library): DeviceAuth
// and DeviceAccessToken, AuthCodeURL and Exchange, and a TokenSource's
// renewal, with every AuthStyle on catalog.AccessTokenPath. A device flow
// should set Endpoint.AuthStyle (AuthStyleInParams): with auto-detection
// the library sends each unsuccessful poll twice, HTTP Basic then the
// form, and the second is answered slow_down.
//
// Service.Account maps a bearer token to its account, for the data API's
// endpoints. Every code and token is random (crypto/rand), unlike the
// sandbox's data, and lives in memory for the life of the Service.
//
// # Errors
//
// Every error of the token endpoints is the RFC 6749 section 5.2 object
// {error, error_description}, never cached: 400 for the codes of RFC 6749
// section 5.2 and RFC 8628 section 3.5, 401 invalid_client (with
// WWW-Authenticate: Basic when the client used it), 405 invalid_request
// for a wrong method. Requests are form-encoded bodies: parameters in the
// query, a JSON body, or a parameter given twice are invalid_request;
// unknown parameters are ignored (RFC 6749 section 3.1).
//
// Faults (Config.Fault) hit the three token endpoints' well-formed
// requests before they change anything: 500 answers server_error, 503
// and 429 temporarily_unavailable, so a retry is always safe. No cut
// fault: a token answer cut after a refresh would lose the rotated
// refresh token for good, which no client can retry.
package oauth
