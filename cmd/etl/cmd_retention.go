package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/pipeline"
)

func newRetentionCmd(e *env) *cobra.Command {
	var o runOptions
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "retention --jobs FILE [--dry-run]",
		Short: "Remove data, and compact run bookkeeping, older than the job spec's retention policy allows",
		Long: `Apply the retention policy of the job spec now (` + "`retention: {keep_months: N}`" + `;
off unless the file sets it). The provider's terms forbid keeping its data
longer than one month without written consent.

keep_months N keeps what was fetched in the current month and the N-1 months
before it. Partitions of older fetches are dropped (or, with detach: true,
detached and kept aside as standalone tables), and a year partition that
holds the cutoff loses the rows of its older months; summary history,
comparison and keyword metrics rows, whose month is the month they describe,
and quarantined rows are deleted by when they were fetched. etl run and etl
schedule apply the policy after every run; this command applies it on its
own. --dry-run prints what would go and changes nothing.

keep_run_detail D (such as 90d) compacts the bookkeeping of the runs that
finished more than D ago: their done and held task checkpoints are deleted
but for each task's latest fetch (what max_age and closed months hold)
and latest try (what etl backfill --reprocess failed reads), their counts
by status and per table are kept (etl runs show prints them),
and their ledger rows are summed per endpoint and day, so every cap's and
every run's units stay exact. Failures, refusals and the latest run of each
job keep their whole detail. See docs/operations.md#retention.

With export_to: DIR, each partition dropped is first written to the Parquet
lake in DIR (as etl export writes it); one that fails to export is not
dropped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			now, spec, err := o.spec()
			if err != nil {
				return err
			}
			if spec.Retention == nil {
				return usageError(fmt.Errorf("%s sets no retention policy, so nothing is ever removed; add one, e.g. `retention: {keep_months: 1}`", spec.File))
			}
			pool, err := e.connect(ctx, o.databaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			loader, err := load.New(load.Config{Pool: pool, Logger: e.log})
			if err != nil {
				return err
			}
			report, err := pipeline.ApplyRetention(ctx, pool, loader, e.log, spec.Retention, now(), dryRun, 0)
			_, _ = io.WriteString(e.stdout, report.String())
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.jobs, "jobs", "jobs.yaml", "job spec file holding the retention policy")
	f.StringVar(&o.databaseURL, "database-url", "", "warehouse connection URL (default $DATABASE_URL)")
	f.BoolVar(&dryRun, "dry-run", false, "print what would be removed; change nothing")
	f.StringVar(&o.now, "now", "", "pin the current time (RFC 3339 or YYYY-MM-DD)")
	_ = f.MarkHidden("now")
	return cmd
}
