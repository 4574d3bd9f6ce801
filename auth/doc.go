// Package auth owns accounts: named OAuth 2.0 credentials for the data API
// (spec 5), signed in once and then shared by every process that uses the
// warehouse.
//
// An account signs in with the device authorization grant (LoginDevice,
// spec 5.3) or the authorization code flow (LoginCode, spec 5.4), over
// golang.org/x/oauth2. Its tokens live in the warehouse's accounts table
// (migration 0012), one row per account, encrypted with AES-256-GCM under
// the key of ETL_SECRET_KEY (Key); without a key nothing is stored. The
// analyst role reads every column of that table but the tokens.
//
// Refresh tokens rotate: each renewal answers a new one and the old one
// stops working. So a renewal (Token, when the access token expires within
// Config.Margin; Renew, after a 401) locks the account's row, re-reads it
// and renews only if it is still due, then commits the rotated tokens
// before the lock is released: any number of processes on any number of
// machines renew once and all pick up the new refresh token. An account
// whose refresh token expired or was refused is a *SignInError, whose
// message tells the person to run `etl auth login --account NAME`.
//
// Transport is the http.RoundTripper that package extract is handed: it
// sends each request with the account's bearer token and, on a 401,
// renews once and retries once. extract knows no SQL.
package auth
