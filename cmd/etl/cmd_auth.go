package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/migrations"
	"github.com/seoetl/etl/sandbox/oauth"
)

// authWait is how the device sign-in waits between polls; tests replace it
// (in an init, before any test runs) so that no test waits in real time.
var authWait func(ctx context.Context, d time.Duration) error

type authOptions struct {
	databaseURL string
	account     string
	code        bool
	json        bool
}

func newAuthCmd(e *env) *cobra.Command {
	var o authOptions
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Sign accounts in to the data API with OAuth 2.0, list them, sign them out",
		Long: `An account is a named OAuth 2.0 credential of the data API (spec 5): a job
that names it (account: NAME) calls the API with its bearer token instead of
ETL_API_KEY. Its tokens live in the warehouse (table accounts), encrypted
with ETL_SECRET_KEY, so every process sharing the warehouse shares the
account; each renews the access token a day before it expires, and only one
renews at a time. An account unused for 30 days must sign in again.

Environment:
  DATABASE_URL       the warehouse
  ETL_AUTH_URL       the token service (default: ETL_API_URL)
  ETL_SECRET_KEY     32 random bytes in base64 that encrypt the tokens; make
                     one with: openssl rand -base64 32 (keep it like a
                     password: without it the tokens cannot be read);
                     on the local warehouse eval "$(etl local env)" sets
                     the one its tokens were stored with
  ETL_CLIENT_ID      the client of the authorization code flow (--code)
  ETL_CLIENT_SECRET  its secret, from the provider's support
  ETL_REDIRECT_URI   where --code's approval is sent (default: the token
                     host's ` + oauth.SuccessPath + ` page)

` + exitLine(),
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&o.databaseURL, "database-url", "", "warehouse connection URL (default $DATABASE_URL)")

	login := &cobra.Command{
		Use:   "login --account NAME [--code]",
		Short: "Sign an account in (device authorization grant, or --code)",
		Long: `Sign an account in, replacing its earlier tokens.

By default with the device authorization grant (spec 5.3): etl prints an
address and a code; open the address in a browser (etl opens nothing
itself), sign in and approve the code, and etl, which polls the token
service meanwhile, stores the tokens.

--code uses the authorization code flow (spec 5.4) for a client from
support (ETL_CLIENT_ID, ETL_CLIENT_SECRET): etl prints the address to
approve at, then reads the code (or the whole address the browser was sent
to) from standard input.

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return e.authLogin(cmd.Context(), o) },
	}
	login.Flags().StringVar(&o.account, "account", "", "the account's name (required)")
	login.Flags().BoolVar(&o.code, "code", false, "use the authorization code flow (needs ETL_CLIENT_ID and ETL_CLIENT_SECRET)")

	status := &cobra.Command{
		Use:   "status [--json]",
		Short: "List the accounts: flow, scopes, expiry and last renewal (never a token)",
		Long: `List the accounts by name: the flow that signed each in, its scopes, when
its access and refresh tokens expire, and when (and by which host) they
were last renewed. No token is ever shown, and no key is needed.

--json prints a JSON array with the same fields.

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return e.authStatus(cmd.Context(), o) },
	}
	status.Flags().BoolVar(&o.json, "json", false, "print JSON")

	logout := &cobra.Command{
		Use:   "logout --account NAME",
		Short: "Delete an account and its tokens",
		Long: `Delete an account and its tokens from the warehouse. The provider shows no
revocation endpoint, so tokens already issued live out their lifetimes
there.

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return e.authLogout(cmd.Context(), o) },
	}
	logout.Flags().StringVar(&o.account, "account", "", "the account's name (required)")
	cmd.AddCommand(login, status, logout)
	return cmd
}

// accounts opens the warehouse and the accounts in it; withKey requires
// ETL_SECRET_KEY.
func (e *env) accounts(ctx context.Context, dbURL string, withKey bool) (*auth.Accounts, *pgxpool.Pool, error) {
	var key *auth.Key
	if withKey {
		k, err := auth.ParseKey(e.getenv("ETL_SECRET_KEY"))
		if err != nil {
			return nil, nil, usageError(err)
		}
		key = k
	}
	pool, err := e.connect(ctx, dbURL)
	if err != nil {
		return nil, nil, err
	}
	authURL := e.getenv("ETL_AUTH_URL")
	if authURL == "" {
		authURL = e.getenv("ETL_API_URL")
	}
	a, err := auth.New(auth.Config{Pool: pool, Key: key, AuthURL: authURL,
		ClientID: e.getenv("ETL_CLIENT_ID"), ClientSecret: e.getenv("ETL_CLIENT_SECRET"),
		Wait: authWait, Logger: e.log})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return a, pool, nil
}

func (e *env) authLogin(ctx context.Context, o authOptions) error {
	if o.account == "" {
		return usageError(errors.New("--account NAME is required: the name jobs will call the account by"))
	}
	if err := auth.CheckName(o.account); err != nil {
		return usageError(err)
	}
	if e.getenv("ETL_AUTH_URL") == "" && e.getenv("ETL_API_URL") == "" {
		return usageError(errors.New("no token service: set ETL_AUTH_URL (or ETL_API_URL, its default)"))
	}
	a, pool, err := e.accounts(ctx, o.databaseURL, true)
	if err != nil {
		return err
	}
	defer pool.Close()
	var acc auth.Account
	if o.code {
		if e.getenv("ETL_CLIENT_ID") == "" || e.getenv("ETL_CLIENT_SECRET") == "" {
			return usageError(errors.New("--code needs ETL_CLIENT_ID and ETL_CLIENT_SECRET, the client that the provider's support gives"))
		}
		redirect := e.getenv("ETL_REDIRECT_URI")
		if redirect == "" {
			base := e.getenv("ETL_AUTH_URL")
			if base == "" {
				base = e.getenv("ETL_API_URL")
			}
			redirect = strings.TrimRight(base, "/") + oauth.SuccessPath
		}
		l, err := a.LoginCode(o.account, redirect)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "To sign in account %s, open this address in a browser and approve:\n\n  %s\n\nthen paste the code (or the address you were sent to) here: ", o.account, l.URL)
		line, err := bufio.NewReader(e.stdin).ReadString('\n')
		if err != nil && line == "" {
			return fmt.Errorf("reading the code from standard input: %w", err)
		}
		if acc, err = l.Finish(ctx, line); err != nil {
			return err
		}
	} else {
		acc, err = a.LoginDevice(ctx, o.account, func(dc auth.DeviceCode) error {
			_, err := fmt.Fprintf(e.stdout, "To sign in account %s, open\n\n  %s\n\nand enter the code %s (it expires in %v). Waiting for the approval...\n",
				o.account, dc.VerificationURI, dc.UserCode, dc.ExpiresIn)
			return err
		})
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "Account %s signed in (%s flow); its access token expires at %s and is renewed before then.\n",
		acc.Name, acc.Flow, acc.AccessExpires.Format(time.RFC3339))
	return nil
}

func (e *env) authStatus(ctx context.Context, o authOptions) error {
	a, pool, err := e.accounts(ctx, o.databaseURL, false)
	if err != nil {
		return err
	}
	defer pool.Close()
	list, err := a.Status(ctx)
	if err != nil {
		return migrations.NotMigrated(err)
	}
	if o.json {
		if list == nil {
			list = []auth.Account{}
		}
		return writeIndentedJSON(e.stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "no accounts: sign one in with `etl auth login --account NAME`")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tFLOW\tSCOPES\tACCESS EXPIRES\tREFRESH EXPIRES\tRENEWED")
	for _, acc := range list {
		renewed := "never"
		if !acc.Refreshed.IsZero() {
			renewed = acc.Refreshed.Format(time.RFC3339) + " by " + acc.RefreshedBy
		}
		scopes := acc.Scopes
		if scopes == "" {
			scopes = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", acc.Name, acc.Flow, scopes,
			acc.AccessExpires.Format(time.RFC3339), acc.RefreshExpires.Format(time.RFC3339), renewed)
	}
	return tw.Flush()
}

func (e *env) authLogout(ctx context.Context, o authOptions) error {
	if o.account == "" {
		return usageError(errors.New("--account NAME is required"))
	}
	a, pool, err := e.accounts(ctx, o.databaseURL, false)
	if err != nil {
		return err
	}
	defer pool.Close()
	ok, err := a.Logout(ctx, o.account)
	if err != nil {
		return migrations.NotMigrated(err)
	}
	if !ok {
		return fmt.Errorf("no account %s (etl auth status lists them)", o.account)
	}
	fmt.Fprintf(e.stdout, "Account %s signed out: its tokens were deleted.\n", o.account)
	return nil
}
