package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/catalog"
)

// Account is what may be shown of an account: never a token.
type Account struct {
	Name   string `json:"account"`
	Flow   Flow   `json:"flow"`
	Scopes string `json:"scopes"`
	// AccessExpires and RefreshExpires are when the tokens expire.
	AccessExpires  time.Time `json:"access_expires_at"`
	RefreshExpires time.Time `json:"refresh_expires_at"`
	SignedIn       time.Time `json:"signed_in_at"`
	// Refreshed is when the tokens were last renewed, and RefreshedBy by
	// which host; zero and "" if never since sign-in.
	Refreshed   time.Time `json:"refreshed_at,omitzero"`
	RefreshedBy string    `json:"refreshed_by,omitempty"`
}

// tokens is an account's row with its tokens decrypted.
type tokens struct {
	Account
	access, refresh string
}

const accountColumns = `name, flow, scopes, access_expires_at, refresh_expires_at, signed_in_at, refreshed_at, coalesce(refreshed_by, '')`

func scanAccount(row pgx.Row, extra ...any) (Account, error) {
	var a Account
	var refreshed *time.Time
	err := row.Scan(append([]any{&a.Name, &a.Flow, &a.Scopes, &a.AccessExpires, &a.RefreshExpires, &a.SignedIn, &refreshed, &a.RefreshedBy}, extra...)...)
	if refreshed != nil {
		a.Refreshed = refreshed.UTC()
	}
	a.AccessExpires, a.RefreshExpires, a.SignedIn = a.AccessExpires.UTC(), a.RefreshExpires.UTC(), a.SignedIn.UTC()
	return a, err
}

// Status lists the accounts by name. It needs no key: it shows no token.
func (a *Accounts) Status(ctx context.Context) ([]Account, error) {
	rows, err := a.cfg.Pool.Query(ctx, `SELECT `+accountColumns+` FROM accounts ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("listing the accounts: %w", err)
	}
	defer rows.Close()
	var out []Account
	for rows.Next() {
		acc, err := scanAccount(rows)
		if err != nil {
			return nil, fmt.Errorf("listing the accounts: %w", err)
		}
		out = append(out, acc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the accounts: %w", err)
	}
	return out, nil
}

// Logout deletes the account and its tokens. It reports whether the
// account existed. The tokens are not revoked at the provider: the spec
// shows no revocation endpoint.
func (a *Accounts) Logout(ctx context.Context, name string) (bool, error) {
	tag, err := a.cfg.Pool.Exec(ctx, `DELETE FROM accounts WHERE name = $1`, name)
	if err != nil {
		return false, fmt.Errorf("signing out account %s: %w", name, err)
	}
	a.mu.Lock()
	delete(a.cache, name)
	a.mu.Unlock()
	return tag.RowsAffected() > 0, nil
}

// save stores the tokens of a new sign-in, replacing the account's row.
func (a *Accounts) save(ctx context.Context, name string, f Flow, scopes, access, refresh string, expiry, now time.Time) (Account, error) {
	if a.cfg.Key == nil {
		return Account{}, ErrNoKey
	}
	acc, err := scanAccount(a.cfg.Pool.QueryRow(ctx, `
INSERT INTO accounts (name, flow, scopes, access_token, refresh_token, access_expires_at, refresh_expires_at, signed_in_at, key_fingerprint)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (name) DO UPDATE SET flow = excluded.flow, scopes = excluded.scopes,
    access_token = excluded.access_token, refresh_token = excluded.refresh_token, key_fingerprint = excluded.key_fingerprint,
    access_expires_at = excluded.access_expires_at, refresh_expires_at = excluded.refresh_expires_at,
    signed_in_at = excluded.signed_in_at, refreshed_at = NULL, refreshed_by = NULL
RETURNING `+accountColumns,
		name, f, scopes, a.cfg.Key.seal(name, "access_token", access), a.cfg.Key.seal(name, "refresh_token", refresh),
		expiry, now.Add(catalog.RefreshTokenLifetime), now, a.cfg.Key.Fingerprint()))
	if err != nil {
		return Account{}, fmt.Errorf("storing the tokens of account %s: %w", name, err)
	}
	a.remember(name, access, expiry)
	return acc, nil
}

// load reads the account's row and decrypts its tokens; lock takes the
// row lock (FOR UPDATE) in tx.
func (a *Accounts) load(ctx context.Context, q pgx.Tx, name string) (tokens, error) {
	if a.cfg.Key == nil {
		return tokens{}, ErrNoKey
	}
	query := `SELECT ` + accountColumns + `, access_token, refresh_token, coalesce(key_fingerprint, '') FROM accounts WHERE name = $1`
	var row pgx.Row
	if q != nil {
		row = q.QueryRow(ctx, query+` FOR UPDATE`, name)
	} else {
		row = a.cfg.Pool.QueryRow(ctx, query, name)
	}
	var sealedAccess, sealedRefresh []byte
	var stored string
	acc, err := scanAccount(row, &sealedAccess, &sealedRefresh, &stored)
	if errors.Is(err, pgx.ErrNoRows) {
		return tokens{}, &SignInError{Account: name, Reason: reasonNotFound}
	}
	if err != nil {
		return tokens{}, fmt.Errorf("reading account %s: %w", name, err)
	}
	t := tokens{Account: acc}
	t.access, err = a.cfg.Key.open(name, "access_token", sealedAccess)
	if err == nil {
		t.refresh, err = a.cfg.Key.open(name, "refresh_token", sealedRefresh)
	}
	if err != nil {
		return tokens{}, &WrongKeyError{Account: name, Given: a.cfg.Key.Fingerprint(), Stored: stored}
	}
	return t, nil
}

func (a *Accounts) remember(name, access string, expiry time.Time) {
	a.mu.Lock()
	a.cache[name] = cached{access: access, expiry: expiry}
	a.mu.Unlock()
}
