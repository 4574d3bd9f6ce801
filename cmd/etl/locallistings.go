package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/internal/localwh"
	"github.com/seoetl/etl/jobspec"
)

// localAccounts makes the accounts a job names usable on the local
// warehouse, unattended: the tokens' key is ETL_SECRET_KEY, or else one
// kept in the local folder (made on first use), and each account the job
// names that is not signed in yet signs in with the device flow on the
// local sandbox, which approves its codes by itself (for its first key).
// The key then reaches the run through e.getenv.
func (e *env) localAccounts(ctx context.Context, l localwh.Warehouse, o runOptions, dbURL, apiURL string) error {
	_, spec, err := o.spec()
	if err != nil {
		return err
	}
	job, err := pickJob(spec, o.job)
	if err != nil {
		return err
	}
	names := jobAccounts(nil, job)
	if len(names) == 0 {
		return nil
	}
	raw := e.getenv("ETL_SECRET_KEY")
	if raw == "" {
		if raw, err = localwh.ReadOrMakeKey(l.File(localwh.KeyFile)); err != nil {
			return err
		}
		get := e.getenv
		e.getenv = func(k string) string {
			if k == "ETL_SECRET_KEY" {
				return raw
			}
			return get(k)
		}
		e.redact = e.redact.With(raw)
	}
	return e.signInLocal(ctx, raw, names, false, dbURL, apiURL)
}

// jobAccounts appends to names the accounts job names (its account: and
// its listings' account), each once.
func jobAccounts(names []string, job *jobspec.Job) []string {
	if job.Account != "" && !slices.Contains(names, job.Account) {
		names = append(names, job.Account)
	}
	if job.Listings != nil && !slices.Contains(names, job.Listings.Account) {
		names = append(names, job.Listings.Account)
	}
	return names
}

// signInLocal signs the accounts of names in on the local sandbox of
// apiURL, with the key raw, unless the sandbox knows them already; with
// stored, the accounts the warehouse holds too. Tokens of the local sandbox
// that another key sealed are replaced: nothing but this sandbox can use
// them.
func (e *env) signInLocal(ctx context.Context, raw string, names []string, stored bool, dbURL, apiURL string) error {
	key, err := auth.ParseKey(raw)
	if err != nil {
		return usageError(err)
	}
	pool, err := e.openPool(ctx, dbURL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	accounts, err := auth.New(auth.Config{Pool: pool, Key: key, AuthURL: apiURL, Logger: e.log})
	if err != nil {
		return err
	}
	signed, err := accounts.Status(ctx)
	if err != nil {
		return err
	}
	if stored {
		for _, a := range signed {
			if !slices.Contains(names, a.Name) {
				names = append(names, a.Name)
			}
		}
	}
	for _, name := range names {
		if slices.ContainsFunc(signed, func(a auth.Account) bool { return a.Name == name }) {
			// Signed in, but perhaps on another sandbox: a sandbox knows
			// the tokens it issued only while its process lives, and etl
			// local run starts one per run unless the warehouse's is up.
			// Renewing the tokens asks this one; one it refuses signs in
			// again.
			known, err := knownTo(ctx, accounts, name)
			if err != nil {
				return err
			}
			if known {
				continue
			}
		}
		e.log.Info("signing the account in on the local sandbox, which approves it by itself", "account", name)
		if _, err := accounts.LoginDevice(ctx, name, func(auth.DeviceCode) error { return nil }); err != nil {
			return fmt.Errorf("signing account %s in on the local sandbox: %w", name, err)
		}
	}
	return nil
}

// knownTo reports whether the token service accounts calls still knows
// the account signed in as name: whether it renews its tokens.
func knownTo(ctx context.Context, accounts *auth.Accounts, name string) (bool, error) {
	tok, err := accounts.Token(ctx, name)
	if err == nil {
		_, err = accounts.Renew(ctx, name, tok) // tok as refused: renewed now
	}
	var again *auth.SignInError
	var wrongKey *auth.WrongKeyError
	if errors.As(err, &again) || errors.As(err, &wrongKey) {
		return false, nil
	}
	return err == nil, err
}
