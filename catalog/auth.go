package catalog

import "time"

// The token service (spec 4.6, 5 and 8.5): its paths, grant types, token
// lifetimes and the OAuth error codes it answers. The sandbox serves these
// facts and the client reads them; neither keeps a copy.

// Paths of the token service, relative to {auth_url} (spec 4.6).
const (
	// DeviceCodePath takes POST: the device code request of the device
	// authorization grant (spec 5.3 step 1, RFC 8628 section 3.1).
	DeviceCodePath = "/dag/device/code"
	// DeviceTokenPath takes POST, form-encoded: the token request of the
	// device authorization grant (spec 5.3 step 3, RFC 8628 section 3.4).
	// A device-flow token is renewed here too, with GrantRefreshToken: the
	// spec shows renewal only at AccessTokenPath (5.4 step 5); the refresh
	// of a token at the token endpoint of the flow that issued it is RFC
	// 6749 section 6 and the choice of this project (design notes).
	DeviceTokenPath = "/dag/device/token"
	// AuthorizePath is the page a person opens in a browser to approve the
	// authorization code flow (spec 5.4 step 2, RFC 6749 section 4.1.1).
	AuthorizePath = "/oauth2/authorize"
	// AccessTokenPath takes POST, form-encoded only (a JSON body is
	// refused): the code exchange and the renewal of the authorization
	// code flow (spec 5.4 steps 3 and 5).
	AccessTokenPath = "/oauth2/access_token"
)

// Grant types of the token requests (the grant_type form field).
const (
	GrantDeviceCode        = "urn:ietf:params:oauth:grant-type:device_code" // spec 5.3 step 3
	GrantAuthorizationCode = "authorization_code"                           // spec 5.4 step 3
	GrantRefreshToken      = "refresh_token"                                // spec 5.4 step 5
)

// TokenType is the token_type of every token answer (spec 5.3 step 4): the
// access token is sent as "Authorization: Bearer TOKEN" (spec 5.2).
const TokenType = "Bearer"

// AuthorizeScope is the scope of the spec's sample authorization request
// (5.4 step 2). Which scopes exist: not shown.
const AuthorizeScope = "user.id"

// Lifetimes (spec 3 and 8.5).
const (
	// AccessTokenLifetime is the expires_in of every token answer: 604800
	// seconds, 7 days.
	AccessTokenLifetime = 7 * 24 * time.Hour
	// RefreshTokenLifetime is how long a refresh token stays valid without
	// renewal: 30 days. Each renewal answers a new refresh token (it
	// rotates) valid 30 days again.
	RefreshTokenLifetime = 30 * 24 * time.Hour
	// DeviceCodeLifetime is the expires_in of the spec's sample device
	// code answer: 300 seconds. A client reads the answer's expires_in.
	DeviceCodeLifetime = 300 * time.Second
	// DevicePollInterval is the interval of the spec's sample device code
	// answer, and RFC 8628's default when an answer has none: 5 seconds.
	DevicePollInterval = 5 * time.Second
	// SlowDownStep is what a slow_down answer adds to the polling interval
	// for this and every later poll of the device code (RFC 8628 section
	// 3.5).
	SlowDownStep = 5 * time.Second
)

// OAuth error codes of the token service: the error field of the RFC 6749
// section 5.2 object {error, error_description} (spec 5.3 step 6, 7.2).
// The spec does not list them ("not shown", 7.2); these are the RFCs'.
const (
	// RFC 6749 section 5.2: the token endpoint. invalid_client answers 401,
	// the others 400.
	ErrInvalidRequest       = "invalid_request"
	ErrInvalidClient        = "invalid_client"
	ErrInvalidGrant         = "invalid_grant"
	ErrUnauthorizedClient   = "unauthorized_client"
	ErrUnsupportedGrantType = "unsupported_grant_type"
	ErrInvalidScope         = "invalid_scope"

	// RFC 6749 section 4.1.2.1: the authorization endpoint's redirect,
	// besides invalid_request, unauthorized_client, access_denied and
	// invalid_scope. server_error and temporarily_unavailable are also
	// what a token endpoint answers with a 5xx (a use beyond the RFC's,
	// common among providers).
	ErrUnsupportedResponseType = "unsupported_response_type"
	ErrServerError             = "server_error"
	ErrTemporarilyUnavailable  = "temporarily_unavailable"

	// RFC 8628 section 3.5: the device token request, all 400.
	// authorization_pending and slow_down mean "poll again" (slow_down
	// after SlowDownStep more); access_denied and expired_token end the
	// flow (access_denied is also RFC 6749's, for a person's refusal).
	ErrAuthorizationPending = "authorization_pending"
	ErrSlowDown             = "slow_down"
	ErrAccessDenied         = "access_denied"
	ErrExpiredToken         = "expired_token"
)
