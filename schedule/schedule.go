package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/migrations"
	"github.com/seoetl/etl/pipeline"
)

// Tick outcomes, as schedule_ticks.outcome and Config.OnTick say
// them.
const (
	TickRan      = "ran"       // this scheduler claimed the tick and ran the job
	TickCaughtUp = "caught up" // a tick missed while the scheduler was down, run late
	TickSkipped  = "skipped"   // claimed, but the job was still running (from an earlier tick, or by hand)
	TickLost     = "lost"      // another scheduler claimed it
	TickFailed   = "failed"    // claimed, but the run could not start (the database, a signal)
)

// Config configures a Scheduler.
type Config struct {
	// Runner runs the jobs (required); its pool holds schedule_ticks.
	Runner *pipeline.Runner
	// Logger receives a line per tick and run; default the runner's.
	Logger *slog.Logger
	// OnTick is told the outcome of each tick of each job (metrics).
	OnTick func(job, outcome string)
	// AfterRun is called after each run the scheduler started (retention).
	AfterRun func(ctx context.Context, job *jobspec.Job, sum *pipeline.Summary, err error)
}

// Scheduler runs the jobs of a spec on their cron schedules. Several
// schedulers (processes, machines) may share one database: each tick of a
// job is claimed in schedule_ticks by exactly one of them, and a job never
// overlaps itself (the runner's job lock).
type Scheduler struct {
	cfg  Config
	host string
}

// New returns a Scheduler.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Runner == nil {
		return nil, errors.New("schedule: Config needs a Runner")
	}
	if cfg.Logger == nil {
		cfg.Logger = cfg.Runner.Logger()
	}
	if cfg.OnTick == nil {
		cfg.OnTick = func(string, string) {}
	}
	if cfg.AfterRun == nil {
		cfg.AfterRun = func(context.Context, *jobspec.Job, *pipeline.Summary, error) {}
	}
	return &Scheduler{cfg: cfg, host: runs.HostID()}, nil
}

// Scheduled lists the jobs of spec that have a schedule.
func Scheduled(spec *jobspec.Spec) []*jobspec.Job {
	var jobs []*jobspec.Job
	for _, j := range spec.Jobs {
		if j.Cron != nil {
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// Run schedules the jobs of spec until ctx is cancelled, then waits for
// the runs in flight, which cancelling ctx interrupts gracefully (their
// pages in flight commit; the next run resumes them). A value on reload
// asks for the spec again: when load succeeds its jobs replace the old
// ones (runs in flight go on), otherwise the old schedule stays and the
// error is logged.
func (s *Scheduler) Run(ctx context.Context, spec *jobspec.Spec, reload <-chan struct{}, load func() (*jobspec.Spec, error)) error {
	if len(Scheduled(spec)) == 0 {
		return fmt.Errorf("%s: no job has a schedule", spec.File)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	// Ticks missed while no scheduler ran are caught up when the process
	// starts, not on a reload: ticks that passed while this process ran
	// the job were not missed.
	start := func(spec *jobspec.Spec, catchUp bool) context.CancelFunc {
		gen, cancel := context.WithCancel(ctx)
		for _, j := range Scheduled(spec) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.loop(ctx, gen, j, catchUp)
			}()
		}
		return cancel
	}
	stop := start(spec, true)
	for {
		select {
		case <-ctx.Done():
			stop()
			return nil
		case <-reload:
			next, err := load()
			if err == nil && len(Scheduled(next)) == 0 {
				err = fmt.Errorf("%s: no job has a schedule", next.File)
			}
			if err != nil {
				s.cfg.Logger.LogAttrs(ctx, slog.LevelError, "reload failed: the schedule stays as it was", slog.String("error", err.Error()))
				continue
			}
			stop()
			stop = start(next, false)
			s.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "schedule reloaded", slog.String("file", next.File), slog.Int("jobs", len(Scheduled(next))))
		}
	}
}

// loop runs one job on its schedule until gen is cancelled (a reload, or
// the scheduler stopping). A run under way when gen ends goes on under
// ctx. Ticks that pass while the job runs in this process are not claimed.
func (s *Scheduler) loop(ctx, gen context.Context, j *jobspec.Job, catchUp bool) {
	log := s.cfg.Logger.With(slog.String("job", j.Name))
	log.LogAttrs(gen, slog.LevelInfo, "job scheduled", slog.String("schedule", j.Schedule), slog.String("timezone", j.Timezone),
		slog.String("catch_up", j.CatchUp))
	if catchUp {
		s.catchUp(ctx, gen, j, log)
	}
	var prev time.Time
	for {
		next := nextTick(j, time.Now(), prev)
		if next.IsZero() {
			log.LogAttrs(gen, slog.LevelWarn, "the schedule has no next tick")
			return
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-gen.Done():
			t.Stop()
			return
		case <-t.C:
		}
		prev = next
		s.tick(ctx, j, next, TickRan, log)
		if gen.Err() != nil {
			return
		}
	}
}

// catchUp runs the job once, now, for the latest tick missed since the
// job's last claimed tick, when its catch_up says once.
func (s *Scheduler) catchUp(ctx, gen context.Context, j *jobspec.Job, log *slog.Logger) {
	if tick, missed, err := s.missed(gen, j); err != nil {
		log.LogAttrs(gen, slog.LevelError, "reading the job's last tick", slog.String("error", err.Error()))
	} else if missed > 0 && j.CatchUp == "once" {
		log.LogAttrs(gen, slog.LevelInfo, "catching up ticks missed while the scheduler was down",
			slog.Int("missed", missed), slog.Time("tick", tick))
		s.tick(ctx, j, tick, TickCaughtUp, log)
	} else if missed > 0 {
		log.LogAttrs(gen, slog.LevelInfo, "ticks missed while the scheduler was down are skipped (catch_up: skip)",
			slog.Int("missed", missed), slog.Time("latest", tick))
	}
}

// nextTick is the job's next tick after now. When clocks go back (the end
// of daylight saving time), a wall-clock time comes twice and the cron
// library names both; the job runs at the first only, so a tick that
// repeats prev's wall-clock time is passed over.
func nextTick(j *jobspec.Job, now, prev time.Time) time.Time {
	const wall = "2006-01-02 15:04:05"
	next := j.Cron.Next(now.In(j.Location))
	for i := 0; !prev.IsZero() && !next.IsZero() && i < 2 &&
		next.In(j.Location).Format(wall) == prev.In(j.Location).Format(wall); i++ {
		next = j.Cron.Next(next)
	}
	return next
}

// missed finds the ticks of j between its last claimed tick (by any
// scheduler) and now: how many, and the latest. None when the job has
// never ticked.
func (s *Scheduler) missed(ctx context.Context, j *jobspec.Job) (latest time.Time, n int, err error) {
	var last *time.Time
	if err := s.cfg.Runner.Pool().QueryRow(ctx, `SELECT max(tick) FROM schedule_ticks WHERE job = $1`, j.Name).Scan(&last); err != nil {
		return time.Time{}, 0, fmt.Errorf("reading schedule_ticks: %w", migrations.NotMigrated(err))
	}
	if last == nil {
		return time.Time{}, 0, nil
	}
	now := time.Now()
	// Bounded: a per-second schedule down for a day has 86,400 ticks.
	for t := j.Cron.Next(last.In(j.Location)); !t.IsZero() && !t.After(now) && n < 1_000_000; t = j.Cron.Next(t) {
		latest, n = t, n+1
	}
	return latest, n, nil
}

// tick claims the tick for this scheduler and, if it won it, runs the job.
func (s *Scheduler) tick(ctx context.Context, j *jobspec.Job, at time.Time, outcome string, log *slog.Logger) {
	pool := s.cfg.Runner.Pool()
	at = at.Truncate(time.Second)
	var won bool
	err := pool.QueryRow(ctx, `INSERT INTO schedule_ticks (job, tick, claimed_by, claimed_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (job, tick) DO NOTHING RETURNING true`, j.Name, at, s.host, time.Now()).Scan(&won)
	if errors.Is(err, pgx.ErrNoRows) {
		s.cfg.OnTick(j.Name, TickLost)
		log.LogAttrs(ctx, slog.LevelDebug, "tick claimed by another scheduler", slog.Time("tick", at))
		return
	}
	if err != nil {
		log.LogAttrs(ctx, slog.LevelError, "claiming the tick", slog.Time("tick", at), slog.String("error", err.Error()))
		return
	}
	expected, held := s.cfg.Runner.Expect(ctx, j)
	sum, runErr := s.cfg.Runner.RunWith(ctx, j, pipeline.RunOptions{Trigger: "schedule", ScheduledFor: at, Expected: expected, Holdings: held})
	var runID *int64
	if sum != nil {
		runID = &sum.RunID
	}
	record := outcome
	switch {
	case errors.Is(runErr, runs.ErrJobBusy):
		outcome, record = TickSkipped, "skipped: "+runErr.Error()
		log.LogAttrs(ctx, slog.LevelWarn, "tick skipped: the job is still running", slog.Time("tick", at), slog.String("error", runErr.Error()))
	case sum == nil:
		outcome, record = TickFailed, "failed: "+runErr.Error()
	}
	if _, err := pool.Exec(context.WithoutCancel(ctx), `UPDATE schedule_ticks SET outcome = $3, run_id = $4 WHERE job = $1 AND tick = $2`,
		j.Name, at, record, runID); err != nil {
		log.LogAttrs(ctx, slog.LevelError, "recording the tick", slog.Time("tick", at), slog.String("error", err.Error()))
	}
	s.cfg.OnTick(j.Name, outcome)
	if outcome == TickSkipped {
		return
	}
	if outcome == TickFailed {
		log.LogAttrs(ctx, slog.LevelError, "scheduled run could not start", slog.Time("tick", at), slog.String("error", runErr.Error()))
		return
	}
	if sum != nil {
		rows, rejected, units := sum.Totals()
		log.LogAttrs(ctx, slog.LevelInfo, "scheduled run finished", slog.Time("tick", at), slog.Int64("run_id", sum.RunID),
			slog.String("status", sum.Status()), slog.Int64("rows", rows), slog.Int64("quarantined", rejected), slog.Int64("units", units))
	}
	if runErr != nil {
		log.LogAttrs(ctx, slog.LevelError, "scheduled run failed", slog.Time("tick", at), slog.String("error", runErr.Error()))
	}
	s.cfg.AfterRun(ctx, j, sum, runErr)
}
