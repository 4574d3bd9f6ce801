package main

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/spf13/cobra"

	"github.com/seoetl/etl/pipeline"
)

func newScheduleCmd(e *env) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "schedule --jobs FILE",
		Short: "Run every job of a job spec on its cron schedule until stopped",
		Long: `Run every job that has a schedule, on its cron expression read in its time
zone, until SIGINT or SIGTERM. A job never overlaps itself in this process: a
tick that comes while the previous run is still going is skipped and logged.
On SIGINT/SIGTERM no new run starts; runs in flight are cancelled, and the
page being loaded rolls back as a whole (its next run loads it again).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			dbURL, err := e.databaseURL(o.databaseURL)
			if err != nil {
				return err
			}
			apiURL, err := e.apiURL(o.apiURL)
			if err != nil {
				return err
			}
			spec, err := pipeline.LoadSpec(o.jobs, time.Now())
			if err != nil {
				return err
			}
			runner, closeRunner, err := e.newRunner(ctx, dbURL, apiURL, e.getenv("ETL_API_KEY"), o.concurrency, time.Now)
			if err != nil {
				return err
			}
			defer closeRunner()
			c := cron.New(cron.WithChain(cron.SkipIfStillRunning(cronLogger{e})))
			scheduled := 0
			for _, job := range spec.Jobs {
				if job.Schedule == "" {
					continue
				}
				_, err := c.AddFunc(fmt.Sprintf("CRON_TZ=%s %s", job.Timezone, job.Schedule), func() {
					sum, err := runner.Run(ctx, job)
					if sum != nil {
						rows, rejected, units := sum.Totals()
						e.log.Info("scheduled run finished", "job", job.Name, "rows", rows, "quarantined", rejected,
							"units", units, "failed_tasks", sum.Failed())
					}
					if err != nil {
						e.log.Error("scheduled run failed", "job", job.Name, "error", err)
					}
					if spec.Retention != nil {
						report, err := runner.ApplyRetention(ctx, spec.Retention, false)
						dropped, detached, deleted := report.Totals()
						e.log.Info("retention applied", "keep_months", spec.Retention.KeepMonths,
							"partitions_dropped", dropped, "partitions_detached", detached, "rows_deleted", deleted)
						if err != nil {
							e.log.Error("retention failed", "error", err)
						}
					}
				})
				if err != nil {
					return usageError(fmt.Errorf("%s:%d: job %s: %w", spec.File, job.Line, job.Name, err))
				}
				scheduled++
				e.log.Info("job scheduled", "job", job.Name, "schedule", job.Schedule, "timezone", job.Timezone)
			}
			if scheduled == 0 {
				return usageError(fmt.Errorf("%s: no job has a schedule", spec.File))
			}
			c.Start()
			<-ctx.Done()
			e.log.Info("stopping the scheduler")
			<-c.Stop().Done()
			return nil
		},
	}
	o.register(cmd, true)
	return cmd
}

// cronLogger routes the cron library's messages to our logger.
type cronLogger struct{ e *env }

func (l cronLogger) Info(msg string, kv ...any) { l.e.log.Info("cron: "+msg, kv...) }
func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.e.log.Error("cron: "+msg, append(kv, "error", err)...)
}
