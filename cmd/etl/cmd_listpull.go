package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/dbconn"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/push"
)

// pullJobPrefix begins the name of the job etl listings pull runs: the
// account's name follows. Its runs, checkpoints and lock are that job's,
// so a pull interrupted is resumed by the next pull of the account.
const pullJobPrefix = "listings:"

// pullOptions are the flags of etl listings pull beside listingsOptions.
type pullOptions struct {
	status  string
	size    int
	sizeSet bool
	fresh   bool
}

func newListingsPullCmd(e *env, o *listingsOptions) *cobra.Command {
	var p pullOptions
	cmd := &cobra.Command{
		Use:   "pull --account NAME [--status all|changed] [--size N]",
		Short: "Pull the locations of an account into the warehouse now, without a job spec",
		Long: `Pull every location of the account into listing_versions (a new version only
when a location changed) and its problems into listing_problems: the same
task as a job's listings: {account: NAME}, run as the job ` + pullJobPrefix + `NAME
(see etl runs), under that job's lock, from its checkpoints (a pull
interrupted is resumed by the next one this month; --fresh starts anew).
Prints what was loaded, as etl run does. No units are spent; the rate
limits of spec 8.2 bound the time.

--status all (the default) reads every location one by one for its status,
which pages do not carry; --status changed reads only the new, changed or
not COMPLETE ones. --size sets the page size (default: the largest the API
accepts, probed and remembered).

Environment:
  DATABASE_URL       the warehouse
  ETL_API_URL        the data API
  ETL_AUTH_URL       the token service, which renews the account's token
                     (default: ETL_API_URL)
  ETL_SECRET_KEY     the key of the accounts' tokens (etl auth)

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p.sizeSet = cmd.Flags().Changed("size")
			return e.listingsPull(cmd.Context(), *o, p)
		},
	}
	cmd.Flags().StringVar(&o.apiURL, "api-url", "", "data API base address (default $ETL_API_URL)")
	cmd.Flags().StringVar(&p.status, "status", jobspec.StatusAll, "which locations are read one by one for their status: all or changed")
	cmd.Flags().IntVar(&p.size, "size", 0, "locations per page (default: the largest the API accepts, probed)")
	cmd.Flags().BoolVar(&p.fresh, "fresh", false, "start a new run even when the account's last pull of this month is unfinished")
	return cmd
}

// listingsPull runs the job of one listings task for the account, as etl
// run runs a job, and ends as etl run does.
func (e *env) listingsPull(ctx context.Context, o listingsOptions, p pullOptions) error {
	if o.account == "" {
		return usageError(errors.New("--account NAME is required"))
	}
	if err := auth.CheckName(o.account); err != nil {
		return usageError(err)
	}
	statuses := []string{jobspec.StatusAll, jobspec.StatusChanged}
	if !slices.Contains(statuses, p.status) {
		return usageError(fmt.Errorf("--status %s: want all (read every location's status, one request each) or changed (only new, changed or not COMPLETE locations)",
			jobspec.Quote(p.status)))
	}
	if sz, ok := catalog.GetLocations.Param("size"); ok && p.sizeSet && (p.size < sz.Min || p.size > sz.Max) {
		return usageError(fmt.Errorf("--size must be between %d and %d, got %d (leave it out to page at the largest size the API accepts)", sz.Min, sz.Max, p.size))
	}
	dbURL, err := e.databaseURL(o.databaseURL)
	if err != nil {
		return err
	}
	apiURL, err := e.apiURL(o.apiURL)
	if err != nil {
		return err
	}
	if _, err := auth.ParseKey(e.getenv("ETL_SECRET_KEY")); err != nil {
		return usageError(fmt.Errorf("account %s: %w", o.account, err))
	}
	pools, err := e.openRunPools(ctx, dbURL, 1, 1)
	if err != nil {
		return err
	}
	defer pools.Close()
	if err := signedIn(ctx, pools, o.account); err != nil {
		return err
	}
	job := pullJob(o.account, p)
	now := time.Now
	// No API key: the only client of the run is the account's. No spec,
	// so no retention and no price.
	return e.runAndReport(ctx, pools, job, jobRun{apiURL: apiURL, concurrency: 1, now: now, json: o.json,
		opts: pipeline.RunOptions{Fresh: p.fresh},
		after: func(_ *pipeline.Runner, sum *pipeline.Summary) error {
			if sum.LockLost {
				return nil
			}
			// After an interrupt too: ctx has ended, the warehouse is there.
			if line, err := accountHolds(context.WithoutCancel(ctx), pools.Pool, o.account); err != nil {
				e.log.Warn("reading what the warehouse holds of the account", "account", o.account, "error", err)
			} else {
				fmt.Fprintln(e.stdout, line)
			}
			return nil
		}})
}

// accountHolds says what the warehouse holds of the account's locations
// now: how many, how many gone, how many with problems still open.
func accountHolds(ctx context.Context, pool *pgxpool.Pool, account string) (string, error) {
	var current, gone, problems int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE gone_at IS NULL), count(*) FILTER (WHERE gone_at IS NOT NULL)
		FROM listing_versions WHERE account = $1 AND valid_to IS NULL`, account).Scan(&current, &gone); err != nil {
		return "", err
	}
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT location_id) FROM listing_problems WHERE account = $1 AND resolved_at IS NULL`,
		account).Scan(&problems); err != nil {
		return "", err
	}
	return fmt.Sprintf("account %s: %d locations, %d gone, %d with open problems (listings_current, listing_problems)",
		account, current, gone, problems), nil
}

// pullJob is the job etl listings pull runs: one listings task, as a job
// spec's `listings: {account: NAME, status: ..., size: ...}` would make.
func pullJob(account string, p pullOptions) *jobspec.Job {
	return &jobspec.Job{Name: pullJobPrefix + account,
		Listings: &jobspec.ListingSpec{Account: account, Status: p.status, Size: p.size}}
}

// signedIn refuses an account that never signed in (or signed out),
// saying how to sign it in, before a run is recorded: one the warehouse
// knows nothing of does not exist (exit 1, as for a push).
func signedIn(ctx context.Context, pools *dbconn.Pools, account string) error {
	if err := push.CheckAccount(ctx, pools.Pool, account); err != nil {
		return pipeline.NotMigrated(err)
	}
	a, err := auth.New(auth.Config{Pool: pools.Pool})
	if err != nil {
		return err
	}
	list, err := a.Status(ctx)
	if err != nil {
		return err
	}
	names := make([]string, len(list))
	for i, acc := range list {
		if acc.Name == account {
			return nil
		}
		names[i] = acc.Name
	}
	known := "no account has signed in"
	switch {
	case len(names) > 10:
		known = fmt.Sprintf("signed in: %s and %d more (etl auth status)", strings.Join(names[:10], ", "), len(names)-10)
	case len(names) > 0:
		known = "signed in: " + strings.Join(names, ", ")
	}
	return usageError(fmt.Errorf("account %s has not signed in (%s): sign it in with `etl auth login --account %[1]s`, then pull again", account, known))
}

// rerun names the command whose next run takes up a run of job: etl run
// of the job, or etl listings pull of the account for the job a pull runs.
func rerun(job string) string {
	if account, ok := strings.CutPrefix(job, pullJobPrefix); ok && auth.CheckName(account) == nil {
		return "`etl listings pull --account " + account + "`"
	}
	return "`etl run` of job " + shownName(job)
}
