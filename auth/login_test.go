package auth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/sandbox"
)

// TestDeviceLogin signs an account in end to end: the device code, the
// approval a person gives (the sandbox-only call), the polls, the tokens
// stored encrypted, and a call of the data API with the bearer token,
// charged to the account approved.
func TestDeviceLogin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sandbox.Config{DeviceInterval: 2 * time.Second})
	a := f.accounts(nil)
	var shown auth.DeviceCode
	acc, err := a.LoginDevice(t.Context(), "client-a", func(dc auth.DeviceCode) error {
		shown = dc
		return nil
	})
	_ = acc
	require.Error(t, err, "nobody approved: the code expires")
	require.ErrorIs(t, err, auth.ErrCodeExpired)
	require.Contains(t, err.Error(), "etl auth login --account client-a")
	require.Equal(t, 2*time.Second, shown.Interval)
	require.NotEmpty(t, shown.UserCode)
	require.Contains(t, shown.VerificationURI, f.url)
	for _, w := range f.waited() {
		require.Equal(t, 2*time.Second, w, "polled at the interval, never faster")
	}

	start := f.clock.now()
	acc = f.login(a, "client-a", "key-two")
	require.Equal(t, "client-a", acc.Name)
	require.Equal(t, auth.DeviceFlow, acc.Flow)
	require.Equal(t, f.clock.now().Add(catalog.AccessTokenLifetime), acc.AccessExpires)
	require.Equal(t, f.clock.now().Add(catalog.RefreshTokenLifetime), acc.RefreshExpires)
	require.True(t, acc.Refreshed.IsZero())
	require.Equal(t, 2*time.Second, f.clock.now().Sub(start), "one poll, after one interval")

	client := &http.Client{Transport: a.Transport("client-a", nil)}
	before := f.sb.Usage("key-two").UnitsSpent
	require.Equal(t, http.StatusOK, f.overview(client))
	require.Greater(t, f.sb.Usage("key-two").UnitsSpent, before, "charged to the account approved")
	require.Zero(t, f.refreshes.Load())

	token, err := a.Token(t.Context(), "client-a")
	require.NoError(t, err)
	f.noTokens(token)

	// Another process with the same key reads the same account.
	other := f.accounts(nil)
	got, err := other.Token(t.Context(), "client-a")
	require.NoError(t, err)
	require.Equal(t, token, got)
	require.Zero(t, f.refreshes.Load(), "not due: no renewal")
}

func TestDeviceLoginSlowDown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sandbox.Config{DeviceInterval: 4 * time.Second})
	// A process whose timer fires early: the first wait is too short.
	first := true
	a := f.accounts(nil, func(c *auth.Config) {
		wait := c.Wait
		c.Wait = func(ctx context.Context, d time.Duration) error {
			if first {
				first = false
				return wait(ctx, d)
			}
			if len(f.waited()) == 1 {
				return wait(ctx, time.Second) // too soon after the first poll
			}
			return wait(ctx, d)
		}
	})
	polls := 0
	_, err := a.LoginDevice(t.Context(), "slow", func(dc auth.DeviceCode) error { return nil })
	require.ErrorIs(t, err, auth.ErrCodeExpired)
	w := f.waited()
	require.Equal(t, 4*time.Second, w[0])
	require.Equal(t, time.Second, w[1])
	for _, d := range w[2:] {
		require.Equal(t, 9*time.Second, d, "after slow_down the interval is 5 seconds longer for good")
		polls++
	}
	require.Positive(t, polls)
	require.Contains(t, f.logs.String(), "poll more slowly")
}

func TestDeviceLoginDenied(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sandbox.Config{})
	a := f.accounts(nil)
	_, err := a.LoginDevice(t.Context(), "nope", func(dc auth.DeviceCode) error {
		f.deny(dc.UserCode)
		return nil
	})
	require.ErrorIs(t, err, auth.ErrDenied)
	require.Contains(t, err.Error(), "etl auth login --account nope")
	st, err := a.Status(t.Context())
	require.NoError(t, err)
	require.Empty(t, st)
}

func TestNoKeyNoStore(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sandbox.Config{DeviceAutoApprove: 1})
	a := f.accounts(nil, func(c *auth.Config) { c.Key = nil })
	_, err := a.LoginDevice(t.Context(), "x", func(auth.DeviceCode) error { return nil })
	require.ErrorIs(t, err, auth.ErrNoKey)
	require.Contains(t, err.Error(), "openssl rand -base64 32")

	for _, tc := range []struct{ name, key, want string }{
		{"empty", "", "no ETL_SECRET_KEY"},
		{"not base64", "not base64!", "ETL_SECRET_KEY is not base64"},
		{"short", "c2hvcnQ=", "must be 32 bytes in base64, got 5 bytes"},
	} {
		_, err := auth.ParseKey(tc.key)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	_, s, err := auth.NewKey()
	require.NoError(t, err)
	k, err := auth.ParseKey(s)
	require.NoError(t, err)
	require.NotContains(t, k.String(), s)

	// Tokens stored with one key do not open with another.
	b := f.accounts(nil)
	f.login(b, "acct", "key-one")
	other, _, err := auth.NewKey()
	require.NoError(t, err)
	c := f.accounts(nil, func(c *auth.Config) { c.Key = other })
	_, err = c.Token(t.Context(), "acct")
	require.ErrorContains(t, err, "do not decrypt with ETL_SECRET_KEY")
	// It names both keys by their fingerprints, never the keys, and says
	// what to do.
	var wrong *auth.WrongKeyError
	require.ErrorAs(t, err, &wrong)
	require.Equal(t, auth.WrongKeyError{Account: "acct", Given: other.Fingerprint(), Stored: f.key.Fingerprint()}, *wrong)
	require.Regexp(t, `^[0-9a-f]{8}$`, wrong.Stored)
	require.NotEqual(t, wrong.Given, wrong.Stored)
	require.Contains(t, err.Error(), "(fingerprint "+other.Fingerprint()+"): they were stored with the key of fingerprint "+f.key.Fingerprint())
	require.Contains(t, err.Error(), `eval "$(etl local env)"`)
	require.Contains(t, err.Error(), "`etl auth login --account acct`")

	// Tokens stored before fingerprints were kept say so.
	_, err = f.pool().Exec(t.Context(), `UPDATE accounts SET key_fingerprint = NULL`)
	require.NoError(t, err)
	_, err = c.Token(t.Context(), "acct")
	require.ErrorAs(t, err, &wrong)
	require.Empty(t, wrong.Stored)
	require.Contains(t, err.Error(), "stored with another key (stored before etl kept key fingerprints)")
}

// TestKeyFingerprint: a key's fingerprint is the first 8 hex digits of the
// SHA-256 of its bytes, the same however ETL_SECRET_KEY spells it, and it
// never shows the key.
func TestKeyFingerprint(t *testing.T) {
	t.Parallel()
	raw := bytes.Repeat([]byte{7}, auth.KeySize)
	sum := sha256.Sum256(raw)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
		k, err := auth.ParseKey(enc.EncodeToString(raw))
		require.NoError(t, err)
		require.Equal(t, hex.EncodeToString(sum[:])[:8], k.Fingerprint())
	}
}

// TestAnalystCannotReadTokens: the default privileges of migration 0003
// grant the analyst every new table; 0012 takes the token columns back.
func TestAnalystCannotReadTokens(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sandbox.Config{DeviceAutoApprove: 1})
	f.login(f.accounts(nil), "acct", "key-one")
	conn, err := pgx.Connect(t.Context(), pgtest.NewRole(t, f.dbURL, "etl_analyst"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	var name string
	var expires time.Time
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT name, access_expires_at FROM accounts`).Scan(&name, &expires))
	require.Equal(t, "acct", name)
	for _, q := range []string{`SELECT access_token FROM accounts`, `SELECT refresh_token FROM accounts`, `SELECT * FROM accounts`,
		`SELECT a::text FROM accounts a`, `UPDATE accounts SET scopes = ''`, `DELETE FROM accounts`} {
		_, err := conn.Exec(t.Context(), q)
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%s: %v", q, err)
		require.Equal(t, "42501", pgErr.Code, q)
	}
}
