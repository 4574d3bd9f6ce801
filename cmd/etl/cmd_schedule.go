package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/report"
	"github.com/seoetl/etl/schedule"
)

func newScheduleCmd(e *env) *cobra.Command {
	var o runOptions
	var httpAddr string
	cmd := &cobra.Command{
		Use:   "schedule --jobs FILE",
		Short: "Run every job of a job spec on its cron schedule until stopped",
		Long: `Run every job that has a schedule, on its cron expression read in its time
zone (five fields, or six with seconds first, or @daily and the like), until
SIGINT or SIGTERM.

Several schedulers, on one machine or many, may share the database: each
tick of a job is claimed by exactly one of them (table schedule_ticks), and a
job never overlaps itself (a tick that comes while it still runs is skipped
and logged). Ticks missed while no scheduler was up are caught up once, at
start, or skipped: the job's catch_up setting (once, the default, or skip).

SIGINT/SIGTERM: no new run starts; runs in flight finish the pages they are
loading, commit them, and are recorded as interrupted (the next run of the
job resumes them). A second signal exits at once; that is safe too, only
the pages in flight are lost (and their units counted).
SIGHUP: read the job spec again; a bad file keeps the old schedule and logs
why. Runs in flight go on.

--http ADDR serves /healthz (200 when the database answers), /metrics
(Prometheus: runs, rows, units, errors, durations, ticks) and /report (the
HTML report of etl report, drawn anew for each request, read as
etl_analyst; ?months=N&top=N&job=NAME&targets=URL,URL as the flags).

` + concurrencyHelp() + ` The jobs running at once share
the pages in flight.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.schedule(cmd.Context(), o, httpAddr)
		},
	}
	o.register(cmd, true)
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve /healthz, /metrics and /report on this address (e.g. :9090)")
	return cmd
}

// schedule runs the scheduled jobs of o.jobs until ctx ends, serving
// /healthz, /metrics and /report on httpAddr unless it is "".
func (e *env) schedule(ctx context.Context, o runOptions, httpAddr string) error {
	// From the start: a SIGHUP's default action ends the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	dbURL, err := e.databaseURL(o.databaseURL)
	if err != nil {
		return err
	}
	apiURL, err := e.apiURL(o.apiURL)
	if err != nil {
		return err
	}
	load := func() (*jobspec.Spec, error) { return loadSpec(o.jobs, time.Now()) }
	spec, err := load()
	if err != nil {
		return err
	}
	if len(schedule.Scheduled(spec)) == 0 {
		return usageError(fmt.Errorf("%s: no job has a schedule", spec.File))
	}
	pools, err := e.openRunPools(ctx, dbURL, o.concurrency, len(schedule.Scheduled(spec)))
	if err != nil {
		return err
	}
	defer pools.Close()
	pool := pools.Pool
	m := newMetrics()
	for _, j := range schedule.Scheduled(spec) {
		m.addSpecJob(j)
	}
	var current atomic.Pointer[jobspec.Spec]
	current.Store(spec)
	if httpAddr != "" {
		srv, err := e.serveSchedule(ctx, httpAddr, pool, m, &current)
		if err != nil {
			return err
		}
		defer srv.Stop()
	}
	runner, err := e.newRunner(pools, apiURL, e.getenv("ETL_API_KEY"), o.concurrency, time.Now, m)
	if err != nil {
		return err
	}
	sched, err := schedule.New(schedule.Config{
		Runner: runner,
		Logger: e.log,
		OnTick: m.Tick,
		AfterRun: func(ctx context.Context, _ *jobspec.Job, _ *pipeline.Summary, _ error) {
			rs := current.Load().Retention
			if rs == nil {
				return
			}
			report, err := runner.ApplyRetention(ctx, rs, false)
			dropped, detached, deleted := report.Totals()
			e.log.Info("retention applied", "keep_months", rs.KeepMonths,
				"partitions_dropped", dropped, "partitions_detached", detached, "rows_deleted", deleted,
				"runs_compacted", report.Bookkeeping.Runs, "checkpoints_deleted", report.Bookkeeping.CheckpointsDeleted)
			if err != nil {
				e.log.Error("retention failed", "error", err)
			}
		},
	})
	if err != nil {
		return err
	}
	err = sched.Run(ctx, spec, reloads(ctx, hup), func() (*jobspec.Spec, error) {
		s, err := load()
		if err == nil && len(schedule.Scheduled(s)) > 0 {
			current.Store(s)
			for _, j := range schedule.Scheduled(s) {
				m.addSpecJob(j)
			}
		}
		return s, err
	})
	e.log.Info("scheduler stopped")
	e.log.Info("scheduler stopped")
	return err
}

// serveSchedule serves /healthz and /metrics (m) and /report (of the spec
// current holds) on addr, over pool.
func (e *env) serveSchedule(ctx context.Context, addr string, pool *pgxpool.Pool, m *metrics, current *atomic.Pointer[jobspec.Spec]) (*httpServer, error) {
	mux := http.NewServeMux()
	mux.Handle("/", m.handler(pool.Ping, e.redact.String))
	mux.Handle("GET /report", reportHandler(pool, func(job string, targets []string) (report.Config, error) {
		return reportConfig(current.Load(), job, targets)
	}, e.redact.String, e.log))
	srv, err := serveHTTP(ctx, addr, mux, e.log)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	e.log.Info("serving /healthz and /metrics", "addr", srv.Addr().String(), "report", "/report")
	return srv, nil
}

// reloads asks for a reload of the spec at each signal of hup (SIGHUP),
// until ctx ends.
func reloads(ctx context.Context, hup <-chan os.Signal) <-chan struct{} {
	reload := make(chan struct{})
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				select {
				case reload <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return reload
}
