package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/seoetl/etl/budget"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/apibound"
	"github.com/seoetl/etl/internal/dbconn"
	"github.com/seoetl/etl/internal/failover"
	"github.com/seoetl/etl/internal/runs"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/planning"
	"github.com/seoetl/etl/push"
	"github.com/seoetl/etl/transform"
)

// DefaultKeepAnswers is Config.KeepAnswers' default.
const DefaultKeepAnswers = 256 << 20

// Config configures a Runner.
type Config struct {
	// Client calls the data API with the API key: required unless
	// AccountClient is set, and then for jobs that name no account.
	Client *extract.Client
	// AccountClient returns the client of the jobs that name an account
	// (Job.Account): one whose requests carry that account's bearer
	// token. nil: such jobs do not run.
	AccountClient func(account string) (*extract.Client, error)
	// Pool connects to the warehouse (required). Each page in flight
	// holds one of its connections, taken before the page's request is
	// sent; two more serve the work between pages. NeedConns says how
	// large to make it, OpenPools opens it.
	Pool *pgxpool.Pool
	// Partitions is where the default Loader makes partitions
	// (load.Config.Partitions); default a new connection each time.
	Partitions *pgxpool.Pool
	// Loader writes batches; default load.New over Pool and Partitions.
	Loader *load.Loader
	// Concurrency bounds the tasks in flight; default 4. It is cut to
	// the pages that may be in flight at once: PagesInFlight (the API's
	// concurrent requests of an account), and the pool's connections
	// less spareConns; a task past them could only wait.
	Concurrency int
	// Reconnect is how long a page waits for the database when its
	// connection is lost or the server gives none: before its request is
	// sent, and, once the API answered (and charged), to load the answer
	// again from the copy kept of it; default DefaultReconnect.
	Reconnect time.Duration
	// KeepAnswers bounds the bytes of the answers of committed pages a run
	// keeps (4 MiB of them in memory, the rest in unlinked temporary
	// files) until it ends, so that pages whose commits a failover of the
	// database lost are loaded again rather than bought again (see
	// Failover); past it the oldest answers are let go of. Default
	// DefaultKeepAnswers; negative keeps none.
	KeepAnswers int64
	// BatchRows bounds the rows of one Arrow record; default transform's.
	BatchRows int
	// Allocator allocates Arrow memory; default memory.DefaultAllocator.
	Allocator memory.Allocator
	// Now is the clock ("current month", observed_at); default time.Now.
	Now func() time.Time
	// Logger receives progress lines; default discards.
	Logger *slog.Logger
	// Ledger reserves and settles API units against the job's caps;
	// default budget.New over Pool.
	Ledger *budget.Ledger
	// Trigger is recorded with each run: manual (default), schedule or
	// backfill.
	Trigger string
	// Observer is told how the run progresses (a progress display,
	// metrics); default none.
	Observer Observer
}

// Observer is told how a run progresses. Its methods are called from the
// run's goroutines, several at once; they must not block for long.
type Observer interface {
	// RunStarted: the run (sum has its RunID and Attempt) will run tasks.
	RunStarted(sum *Summary, tasks []jobspec.Task)
	// TaskStarted: task i starts, or resumes with what res counts already.
	TaskStarted(i int, res TaskResult)
	// PageLoaded: a page of task i committed; res is the task so far.
	PageLoaded(i int, res TaskResult)
	// TaskFinished: task i is done, failed or skipped.
	TaskFinished(i int, res TaskResult)
	// RunFinished: the run ended; sum is final.
	RunFinished(sum *Summary)
}

// Observers tells each of its observers.
type Observers []Observer

func (os Observers) RunStarted(sum *Summary, tasks []jobspec.Task) {
	for _, o := range os {
		o.RunStarted(sum, tasks)
	}
}

func (os Observers) TaskStarted(i int, res TaskResult) {
	for _, o := range os {
		o.TaskStarted(i, res)
	}
}

func (os Observers) PageLoaded(i int, res TaskResult) {
	for _, o := range os {
		o.PageLoaded(i, res)
	}
}

func (os Observers) TaskFinished(i int, res TaskResult) {
	for _, o := range os {
		o.TaskFinished(i, res)
	}
}

func (os Observers) RunFinished(sum *Summary) {
	for _, o := range os {
		o.RunFinished(sum)
	}
}

func (c Config) withDefaults() (Config, error) {
	if (c.Client == nil && c.AccountClient == nil) || c.Pool == nil {
		return c, errors.New("pipeline: Config needs a Client (or an AccountClient) and a Pool")
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.Concurrency < 1 {
		return c, fmt.Errorf("pipeline: Concurrency must be at least 1, got %d", c.Concurrency)
	}
	if n := int(c.Pool.Config().MaxConns); n < 1+dbconn.SpareConns {
		return c, fmt.Errorf("pipeline: the pool has %d connections; a runner needs at least %d (a page in flight and %d spare)", n, 1+dbconn.SpareConns, dbconn.SpareConns)
	}
	if c.Reconnect == 0 {
		c.Reconnect = DefaultReconnect
	}
	if c.Reconnect < 0 {
		return c, fmt.Errorf("pipeline: Reconnect must not be negative, got %v", c.Reconnect)
	}
	if c.KeepAnswers == 0 {
		c.KeepAnswers = DefaultKeepAnswers
	}
	if c.KeepAnswers < 0 {
		c.KeepAnswers = 0
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Allocator == nil {
		c.Allocator = memory.DefaultAllocator
	}
	if c.Ledger == nil {
		c.Ledger = budget.New(c.Pool, c.Now)
	}
	if c.Trigger == "" {
		c.Trigger = "manual"
	}
	if c.Observer == nil {
		c.Observer = Observers(nil)
	}
	if c.Loader == nil {
		l, err := load.New(load.Config{Pool: c.Pool, Partitions: c.Partitions, Logger: c.Logger})
		if err != nil {
			return c, err
		}
		c.Loader = l
	}
	return c, nil
}

// DefaultReconnect is Config.Reconnect's default.
const DefaultReconnect = 5 * time.Minute

// Runner runs jobs.
type Runner struct {
	cfg Config
	// pages are the turns and connections of the pages in flight, shared
	// by every run of the Runner.
	pages *dbconn.PageConns
}

// NewRunner returns a Runner.
func NewRunner(cfg Config) (*Runner, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	pages := min(dbconn.PagesInFlight(cfg.Concurrency), int(cfg.Pool.Config().MaxConns)-dbconn.SpareConns)
	return &Runner{cfg: cfg, pages: dbconn.NewPageConns(cfg.Pool, pages, cfg.Reconnect, cfg.Logger)}, nil
}

// Concurrency is how many tasks a run has in flight at most:
// Config.Concurrency, cut to the pages that may be in flight at once.
func (r *Runner) Concurrency() int { return min(r.cfg.Concurrency, r.pages.Turns()) }

// forJob returns the runner of job: r, or for a job that names an
// account, r with that account's client.
func (r *Runner) forJob(job *jobspec.Job) (*Runner, error) {
	if job.Account == "" && r.cfg.Client == nil && job.Listings != nil && len(job.Endpoints) == 0 && job.Keywords == nil {
		// Only listings: the run's client is the listings account's.
		job = &jobspec.Job{Name: job.Name, Account: job.Listings.Account}
	}
	if job.Account == "" {
		if r.cfg.Client == nil {
			return nil, fmt.Errorf("job %s names no account, and there is no API key: set ETL_API_KEY, or name an account (account: NAME)", job.Name)
		}
		return r, nil
	}
	if r.cfg.AccountClient == nil {
		return nil, fmt.Errorf("job %s names account %s, but this runner has no accounts", job.Name, job.Account)
	}
	c, err := r.cfg.AccountClient(job.Account)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", job.Name, err)
	}
	cfg := r.cfg
	cfg.Client = c
	return &Runner{cfg: cfg, pages: r.pages}, nil
}

// TaskResult is what one task did.
type TaskResult struct {
	Task     jobspec.Task
	Pages    int
	Rows     int64 // rows received (good and rejected)
	Rejected int64 // rows quarantined
	Units    int64 // API units the requests cost, per the catalog's price
	Load     load.Result
	Drift    transform.Drift
	// Skipped says why the task did not run, or stopped early without an
	// error of its own ("" when it ran).
	Skipped string
	Err     error
	// Resumed says an earlier attempt of the run did part of the task (or
	// all of it): Pages, Rows, Rejected and Units count that part too.
	Resumed bool
	// Refused says the task cannot run as specified (one request costs
	// more than a whole cap, or the API refused the request as invalid): a
	// continuation of the run skips it.
	Refused bool
	// PriorRows and PriorUnits are what earlier attempts of the run did
	// of the task (counted in Rows and Units).
	PriorRows, PriorUnits int64
	// Push is what the push step of a listings task did (listings:
	// {push: RELATION}); nil when it has none or did not start.
	Push *push.Summary
	// Held says why the task was not sent: the warehouse holds its data
	// fresh, or as closed months (see planning.Holdings); nil when it was.
	Held *planning.Held
}

// Summary is what a run did.
type Summary struct {
	Job   string
	RunID int64
	// Attempt is 1 for a new run, more for a resumed or continued one.
	Attempt int
	// Window is the run's per_run cap window: 1, one more each time the
	// run was continued after a stop.
	Window int
	// Taken says how an earlier run was taken up: "" (a new run),
	// "resumed" (its process died or it was interrupted: same cap window)
	// or "continued" (a cap, the API's 403 or failed tasks stopped it:
	// a new cap window).
	Taken string
	// Trigger is what started the run: manual, schedule or backfill.
	Trigger string
	// Started and Finished are on the runner's clock (Config.Now, which
	// may be pinned); Took is the wall time the run took.
	Started  time.Time
	Finished time.Time
	Took     time.Duration
	Tasks    []TaskResult
	// Stopped says why the run ended before every task was done (a cap
	// reached, or the API out of units); "" when it was not stopped.
	Stopped string
	// Interrupted says the run was stopped by its context (SIGINT,
	// SIGTERM); the next run of the job resumes it.
	Interrupted bool
	// Fatal says Stopped is a configuration mistake (the key refused, a
	// wrong address): the run failed, whatever its tasks did.
	Fatal bool
	// Refetch says the run bought every task, whatever the warehouse held
	// (RunOptions.Refetch).
	Refetch bool
	// LockLost says Stopped is the loss of the job's lock (ErrLockLost):
	// another process runs the job, and this run, now; nothing of it
	// was recorded after the loss.
	LockLost bool
	// Failover is what the run found when its database connections were
	// lost mid-run (a failover, a restart); nil when none was.
	Failover *failover.Report
}

// Held sums what the run did not buy because the warehouse held it: the
// tasks held (not sent) and what buying them again would cost, and the
// closed months of summary history the tasks sent did not ask for again.
func (s *Summary) Held() planning.HeldPlan {
	h := planning.HeldPlan{Refetch: s.Refetch}
	for _, t := range s.Tasks {
		if t.Held != nil {
			h.Add(*t.Held)
		} else if n := t.Task.HeldMonths; n > 0 {
			h.AddMonths(t.Task)
		}
	}
	return h
}

// Skipped counts the tasks that did not run or were stopped.
func (s *Summary) Skipped() int {
	n := 0
	for _, t := range s.Tasks {
		if t.Skipped != "" {
			n++
		}
	}
	return n
}

// Unfinished counts the tasks a continuation of the run goes on with:
// failed or skipped, but not refused (those cannot run as specified).
func (s *Summary) Unfinished() int {
	n := 0
	for _, t := range s.Tasks {
		if (t.Err != nil || t.Skipped != "") && !t.Refused {
			n++
		}
	}
	return n
}

// Failed counts the tasks that ended in an error.
func (s *Summary) Failed() int {
	n := 0
	for _, t := range s.Tasks {
		if t.Err != nil {
			n++
		}
	}
	return n
}

// AttemptTotals sums what this attempt of the run did: rows and units
// over all tasks, without what earlier attempts counted.
func (s *Summary) AttemptTotals() (rows, units int64) {
	for _, t := range s.Tasks {
		rows += t.Rows - t.PriorRows
		units += t.Units - t.PriorUnits
	}
	return
}

// Tables sums the load results per table, in first-seen order.
func (s *Summary) Tables() ([]string, map[string]load.Result) {
	var order []string
	sums := map[string]load.Result{}
	for _, t := range s.Tasks {
		name := t.Task.Endpoint.Table
		if _, ok := sums[name]; !ok {
			order = append(order, name)
		}
		sums[name] = sums[name].Add(t.Load)
	}
	return order, sums
}

// Totals sums rows, rejects and units over all tasks.
func (s *Summary) Totals() (rows, rejected, units int64) {
	for _, t := range s.Tasks {
		rows += t.Rows
		rejected += t.Rejected
		units += t.Units
	}
	return
}

// RunOptions say how to run a job.
type RunOptions struct {
	// Trigger is recorded with the run: manual, schedule or backfill;
	// default Config.Trigger.
	Trigger string
	// ScheduledFor is the tick of the cron schedule a scheduled run is for.
	ScheduledFor time.Time
	// Fresh starts a new run even when an unfinished one of the job could
	// be resumed; that one is closed as failed.
	Fresh bool
	// Tasks are the tasks to run (a backfill's); default the job's own,
	// for the month the run started in.
	Tasks []jobspec.Task
	// Refetch buys every task, whatever the warehouse holds: no task is
	// held for its max_age, and summary history asks for its closed
	// months again (etl run --refetch).
	Refetch bool
	// Expected is what the plan expected a new run to cost
	// (Plan.Total.Expected), recorded with it (runs.expected_units);
	// nil: no plan. A run taken up keeps what it was recorded with.
	Expected *int64
	// Holdings are what the plan made just before the run found the
	// warehouse to hold (Plan.Holdings): a new run takes them rather than
	// reading them again, while they are current (planning.HeldTasks.Take);
	// nil: the run reads them.
	Holdings *planning.HeldTasks
}

// Run runs every task of job. A failing task does not stop the others; the
// returned error joins the failures (the Summary has each one).
//
// A job never overlaps itself: Run takes the job's lock (job_locks), or
// returns ErrJobBusy. When the job's latest run did not finish (its process
// died, or it was interrupted) in the current month, Run resumes it: tasks
// done are not run again, the others continue from their last committed
// page (see Task.Key and task_checkpoints).
//
// Cancelling ctx interrupts the run gracefully: no new page starts, pages
// in flight finish and commit, and the run is recorded as interrupted, to
// be resumed by the next one.
func (r *Runner) Run(ctx context.Context, job *jobspec.Job) (*Summary, error) {
	return r.RunWith(ctx, job, RunOptions{})
}

// RunWith is Run with options.
func (r *Runner) RunWith(ctx context.Context, job *jobspec.Job, o RunOptions) (*Summary, error) {
	began := time.Now()
	r, err := r.forJob(job)
	if err != nil {
		return nil, err
	}
	if o.Trigger == "" {
		o.Trigger = r.cfg.Trigger
	}
	class := "run"
	if o.Trigger == "backfill" {
		class = "backfill"
	}
	lock, err := r.lockJob(ctx, job.Name, class)
	if err != nil {
		return nil, err
	}
	defer lock.Release()

	owners, err := r.ownersOf(ctx, job)
	if err != nil {
		return nil, err
	}
	run, err := r.claimRun(ctx, job, o)
	if err != nil {
		return nil, err
	}
	tasks, held, err := r.expandTasks(ctx, job, o, run)
	if err != nil {
		return nil, err
	}
	sum := &Summary{Job: job.Name, RunID: run.ID, Attempt: run.Attempt, Window: run.Window, Taken: run.How,
		Trigger: o.Trigger, Started: run.Started, Tasks: make([]TaskResult, len(tasks)), Refetch: o.Refetch}
	acct := budget.Account{RunID: run.ID, Window: run.Window, Job: job.Name, Caps: job.Caps}
	r.logStart(ctx, job.Name, run, len(tasks))
	r.cfg.Observer.RunStarted(sum, tasks)

	// A cap that cannot pay the next request, a 403 (the account has no
	// units left upstream), or an interrupt stops the run: tasks not
	// started are skipped, tasks under way finish the page they are on (so
	// nothing paid for is thrown away) and request no other.
	jr := &jobRun{run: run, acct: acct, owners: owners, st: newRunState(lock, r.cfg.KeepAnswers), sum: sum}
	defer jr.st.journal.Close()
	r.runTasks(ctx, jr, tasks, held)
	r.endRun(ctx, jr, began)
	r.logEnd(ctx, sum)
	r.cfg.Observer.RunFinished(sum)
	return sum, errors.Join(jr.errs...)
}

// jobRun is a run of a job under way: the run claimed, its account
// against the job's caps, the owners of its tasks' rows, what its tasks
// share, its summary, and its failures (the run's error joins them).
type jobRun struct {
	run    *runs.Claimed
	acct   budget.Account
	owners owners
	st     *runState
	sum    *Summary
	errs   []error
}

// owners are the ids of a job's targets and of its target sets (with
// their targets').
type owners struct {
	targets map[jobspec.Target]int64
	sets    map[string]owner
}

// ownersOf makes the job's targets and target sets first, once each, so
// concurrent tasks share ids.
func (r *Runner) ownersOf(ctx context.Context, job *jobspec.Job) (owners, error) {
	ow := owners{targets: map[jobspec.Target]int64{}, sets: map[string]owner{}}
	for _, t := range job.Targets {
		id, err := r.cfg.Loader.Target(ctx, t.URL, t.Scope)
		if err != nil {
			return ow, err
		}
		ow.targets[jobspec.Target{URL: t.URL, Scope: t.Scope}] = id
	}
	for _, ts := range job.TargetSets {
		id, targets, err := r.cfg.Loader.TargetSet(ctx, ts.Name, ts.Scope, ts.URLs)
		if err != nil {
			return ow, err
		}
		ow.sets[ts.Name] = owner{setID: id, targets: targets}
	}
	return ow, nil
}

// of is what task t's rows are about.
func (ow owners) of(t jobspec.Task) owner {
	var o owner
	if t.Target != nil {
		o.targetID = ow.targets[jobspec.Target{URL: t.Target.URL, Scope: t.Target.Scope}]
	}
	if t.Set != nil {
		o = ow.sets[t.Set.Name]
	}
	return o
}

// expandTasks returns the run's tasks (RunOptions.Tasks, else the job's
// for the month the run started in) and, by index, those the warehouse
// holds (see planning.Holdings; none for a backfill).
func (r *Runner) expandTasks(ctx context.Context, job *jobspec.Job, o RunOptions, run *runs.Claimed) ([]jobspec.Task, map[int]planning.Held, error) {
	tasks := o.Tasks
	if tasks == nil {
		tasks = job.Tasks(run.Started)
	}
	held := map[int]planning.Held{}
	if o.Trigger != "backfill" { // --reprocess says what a backfill buys again
		tasks = slices.Clone(tasks) // holdings narrows summary tasks
		var err error
		if run.How == "" {
			var ok bool
			if held, ok, err = o.Holdings.Take(ctx, r.cfg.Pool, run.ID, tasks, o.Refetch, r.cfg.Now()); err != nil {
				return nil, nil, err
			} else if ok {
				return tasks, held, nil
			}
		}
		if held, err = planning.Holdings(ctx, r.cfg.Pool, tasks, r.cfg.Now(), o.Refetch, func(t jobspec.Task) string {
			return run.Done[t.Key()].Status
		}); err != nil {
			return nil, nil, err
		}
	}
	return tasks, held, nil
}

// logStart logs the start of the run, and why its concurrency was cut
// when it was.
func (r *Runner) logStart(ctx context.Context, job string, run *runs.Claimed, tasks int) {
	r.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "run started", slog.String("job", job), slog.Int64("run_id", run.ID),
		slog.Int("attempt", run.Attempt), slog.Int("cap_window", run.Window), slog.String("taken_up", run.How), slog.Int("tasks", tasks))
	if c := r.Concurrency(); c < r.cfg.Concurrency {
		why := fmt.Sprintf("the API lets an account have %d requests in flight", catalog.AccountConcurrentRequests)
		if c < dbconn.PagesInFlight(r.cfg.Concurrency) {
			why = fmt.Sprintf("the database pool has %d connections, %d of them spare", r.cfg.Pool.Config().MaxConns, dbconn.SpareConns)
		}
		r.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "concurrency cut: more tasks at once could only wait for a turn",
			slog.Int("asked", r.cfg.Concurrency), slog.Int("concurrency", c), slog.String("why", why))
	}
}

// runTasks runs the run's tasks, Concurrency at a time: a task the
// warehouse holds (held) is recorded as held, any other runs from its
// checkpoint in an earlier attempt of the run. Each result goes to the
// summary, each failure to the run's.
func (r *Runner) runTasks(ctx context.Context, jr *jobRun, tasks []jobspec.Task, held map[int]planning.Held) {
	g := new(errgroup.Group)
	g.SetLimit(r.Concurrency())
	var mu sync.Mutex
	for i, t := range tasks {
		g.Go(func() error {
			o := jr.owners.of(t)
			var res TaskResult
			if h, ok := held[i]; ok {
				res = r.holdTask(ctx, t, h, jr.acct, jr.st)
			} else {
				from := jr.run.Done[t.Key()]
				if from.Status == "held" {
					from = runs.Checkpoint{} // held by an earlier attempt, bought now
				}
				res = r.runTask(ctx, i, t, o, jr.acct, from, jr.st)
			}
			jr.sum.Tasks[i] = res
			r.cfg.Observer.TaskFinished(i, res)
			if res.Err != nil {
				r.cfg.Logger.LogAttrs(ctx, slog.LevelError, "task failed", slog.String("task", t.String()), slog.String("error", res.Err.Error()))
				mu.Lock()
				jr.errs = append(jr.errs, fmt.Errorf("%s: %w", t, res.Err))
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait() // tasks report through sum; none returns an error
}

// mend checks the run's commits when a connection was lost since the
// last check (after the last request, say): what the run committed
// before may be lost too.
func (r *Runner) mend(ctx context.Context, jr *jobRun) {
	st, sum := jr.st, jr.sum
	if err := r.checkOnPool(context.WithoutCancel(ctx), st.journal); err != nil {
		jr.errs = append(jr.errs, err)
	}
	for key, lp := range st.journal.LostPages() {
		for i := range sum.Tasks {
			if sum.Tasks[i].Task.Key() == key && sum.Tasks[i].Err == nil {
				sum.Tasks[i].Err = lp.Err
				jr.errs = append(jr.errs, fmt.Errorf("%s: %w", sum.Tasks[i].Task, lp.Err))
			}
		}
	}
	sum.Failover = st.journal.Report()
}

// endRun ends the run once its tasks are: its commits mended, how it
// ended in its summary, and its end recorded, unless its lock was lost.
func (r *Runner) endRun(ctx context.Context, jr *jobRun, began time.Time) {
	st, sum := jr.st, jr.sum
	if !st.lost.Load() {
		r.mend(ctx, jr)
	}
	sum.Finished = r.cfg.Now()
	sum.Took = time.Since(began)
	if reason := st.stop.Load(); reason != nil {
		sum.Stopped = *reason
	}
	sum.Interrupted = st.interrupted.Load()
	sum.Fatal = st.fatal.Load()
	sum.LockLost = st.lost.Load()
	if sum.Fatal {
		jr.errs = append(jr.errs, fmt.Errorf("%w: %s", ErrMisconfigured, sum.Stopped))
	}
	if st.lost.Load() {
		// Another process runs the job now (and this run): what it
		// records of the run is the run's.
		jr.errs = append(jr.errs, st.lock.Held(ctx)) // why it was lost
		return
	}
	r.recordEnd(ctx, jr)
}

// recordEnd records the end of the run: its status, rows and why it did
// not succeed.
func (r *Runner) recordEnd(ctx context.Context, jr *jobRun) {
	st, sum := jr.st, jr.sum
	rows, _, _ := sum.Totals()
	for again := false; ; again = true {
		// Masked again where it is stored (the stages mask their own
		// errors): no text column holds the key, whatever an error
		// quoted.
		if err := r.retry(context.WithoutCancel(ctx), st.journal, "recording the end of the run", func(ctx context.Context) error {
			return r.cfg.Ledger.FinishRun(ctx, jr.run.ID, sum.status(), rows, r.cfg.Client.Redactor().String(sum.reason()))
		}); err != nil {
			jr.errs = append(jr.errs, err)
			return
		}
		if again || !st.journal.Due() {
			return
		}
		// The database failed while the end of the run was being
		// recorded: check what the run committed, and record it again.
		r.mend(ctx, jr)
		rows, _, _ = sum.Totals()
	}
}

// logEnd logs the end of the run: the schema drift it met, what it found
// after a failover, and what it did.
func (r *Runner) logEnd(ctx context.Context, sum *Summary) {
	for _, d := range sum.Drift() {
		r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "schema drift: the API's columns differ from the catalog",
			slog.String("endpoint", d.Endpoint), slog.Any("unknown_left_out", d.Unknown), slog.Any("missing_loaded_as_null", d.Missing))
	}
	rows, rejected, units := sum.Totals()
	status := sum.status()
	if sum.LockLost {
		status = "lock lost"
	}
	if f := sum.Failover; f != nil {
		level := slog.LevelInfo
		if f.Lost() {
			level = slog.LevelWarn
		}
		r.cfg.Logger.LogAttrs(ctx, level, f.String(), slog.String("job", sum.Job), slog.Int64("run_id", sum.RunID))
	}
	r.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "run finished", slog.String("job", sum.Job), slog.Int64("run_id", sum.RunID),
		slog.String("status", status), slog.Int64("rows", rows), slog.Int64("rejected", rejected), slog.Int64("units", units),
		slog.Int("failed_tasks", sum.Failed()), slog.Int("skipped_tasks", sum.Skipped()),
		slog.Duration("took", sum.Took))
}

// reason says why the run did not succeed, for runs.error: why it stopped,
// else how many tasks failed and the first failure; "" when none did.
func (s *Summary) reason() string {
	if s.Stopped != "" {
		return s.Stopped
	}
	if n := s.Failed(); n > 0 {
		for _, t := range s.Tasks {
			if t.Err != nil {
				return fmt.Sprintf("%d of %d tasks failed; the first: %s: %v", n, len(s.Tasks), t.Task, t.Err)
			}
		}
	}
	return ""
}

// EndpointDrift is how the columns one endpoint sent during a run differed
// from the catalog, over all its tasks.
type EndpointDrift struct {
	Endpoint string
	transform.Drift
}

// Drift reports schema drift once per endpoint, in task order: the columns
// it sent that the catalog does not know, and the catalog's columns it left
// out, over every task of the run.
func (s *Summary) Drift() []EndpointDrift {
	var out []EndpointDrift
	for _, t := range s.Tasks {
		if t.Drift.None() {
			continue
		}
		i := slices.IndexFunc(out, func(d EndpointDrift) bool { return d.Endpoint == t.Task.Endpoint.Name })
		if i < 0 {
			out = append(out, EndpointDrift{Endpoint: t.Task.Endpoint.Name})
			i = len(out) - 1
		}
		out[i].Unknown = appendNew(out[i].Unknown, t.Drift.Unknown...)
		out[i].Missing = appendNew(out[i].Missing, t.Drift.Missing...)
	}
	return out
}

// owner is what a task's rows are about: a target, or a target set with
// the ids of its targets.
type owner struct {
	targetID int64
	setID    int64
	targets  map[string]int64
}

// ApplyRetention applies the spec's retention policy (see ApplyRetention)
// at the runner's current time, as after a run: the bookkeeping's
// compaction within AfterRunCompaction.
func (r *Runner) ApplyRetention(ctx context.Context, rs *jobspec.RetentionSpec, dryRun bool) (RetentionReport, error) {
	return ApplyRetention(ctx, r.cfg.Pool, r.cfg.Loader, r.cfg.Logger, rs, r.cfg.Now(), dryRun, runs.AfterRunCompaction)
}

// Expect is what the plan expects a run of job to cost now, as etl plan
// prices it (RunOptions.Expected), with the holdings it read for the run
// (RunOptions.Holdings); nil when some task cannot be priced, or the plan
// fails (it is a record, not a condition of the run).
func (r *Runner) Expect(ctx context.Context, job *jobspec.Job) (*int64, *planning.HeldTasks) {
	api := ""
	if r.cfg.Client != nil {
		api = r.cfg.Client.Origin()
	}
	p, err := planning.NewPlanner(planning.PlanConfig{Pool: r.cfg.Pool, API: api, Now: r.cfg.Now, Logger: r.cfg.Logger})
	if err != nil {
		return nil, nil
	}
	plan, err := p.Plan(ctx, job, planning.PlanOptions{})
	if err != nil {
		r.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "no plan to record the run's expected units", slog.String("error", err.Error()))
		return nil, nil
	}
	return plan.Total.Expected, plan.Holdings
}

// Status is the run's status as the runs table records it: succeeded,
// partial, failed or interrupted.
func (s *Summary) Status() string { return s.status() }

// status is the run's status for the runs table.
func (s *Summary) status() string {
	_, rejected, _ := s.Totals()
	switch {
	case s.Interrupted:
		return "interrupted"
	case s.Fatal:
		return "failed"
	case len(s.Tasks) > 0 && s.Failed() == len(s.Tasks):
		return "failed"
	case s.Failed() > 0 || s.Skipped() > 0 || rejected > 0:
		return "partial"
	}
	return "succeeded"
}

// ErrMisconfigured is matched by the error of a run that stopped at a
// configuration mistake (Summary.Fatal): the key refused (401), a wrong
// base address (404), or an API that could not be reached (or answered
// something that is not HTTP) before it answered any request of the run.
var ErrMisconfigured = errors.New("the run stopped at a configuration mistake")

// runState is what the tasks of a run share.
type runState struct {
	// stop is why the run stops (nil: it goes on); interrupted says an
	// interrupt stopped it, fatal a configuration mistake.
	stop        atomic.Pointer[string]
	interrupted atomic.Bool
	fatal       atomic.Bool
	// answered says the API has answered a request of the run (data or
	// an error answer): from then on an unreachable API is an outage.
	answered atomic.Bool
	// gate lets one task at a time ask until the API has answered a
	// request of the run, and holds the others.
	gate gate
	// bounds are the upper bounds of limit and size the run knows.
	bounds apibound.Bounds
	// lock is the job's lock, checked before each request (jobLock.held);
	// lost says it was lost: the run then writes nothing more of itself.
	lock *runs.Lock
	lost atomic.Bool
	// journal is what the run committed, to commit again what a failover
	// of the database lost.
	journal *journal
}

func newRunState(lock *runs.Lock, keepAnswers int64) *runState {
	st := &runState{gate: gate{turn: make(chan struct{}, 1), opened: make(chan struct{})}, lock: lock, journal: failover.NewJournal[TaskResult](keepAnswers)}
	lock.OnLost = st.journal.Lost
	st.gate.turn <- struct{}{} // the turn, for the first task that asks
	return st
}

// held checks the job's lock before a request is sent (jobLock.held): when
// it was lost, the run stops, and held returns false.
func (st *runState) held(ctx context.Context) bool {
	err := st.lock.Held(ctx)
	if err == nil {
		return true
	}
	st.lost.Store(true)
	reason := err.Error()
	st.stop.CompareAndSwap(nil, &reason)
	return false
}

// stopping notes an interrupt (ctx ended) as the run's stop, and returns
// why the run stops (nil: it goes on).
func (st *runState) stopping(ctx context.Context) *string {
	if ctx.Err() != nil {
		reason := interruptedReason
		st.interrupted.Store(true)
		st.stop.CompareAndSwap(nil, &reason)
	}
	return st.stop.Load()
}

// gate holds the tasks of a run while the API has answered none of its
// requests: one task at a time has the turn to ask, the others wait, so
// that a wrong address, key or port costs one request (and one
// reservation), not one per task in flight. It opens for all at the
// run's first answer, or when the run stops.
type gate struct {
	turn   chan struct{} // holds the turn while no task has it
	opened chan struct{}
	once   sync.Once
}

// passed reports whether the gate is open.
func (g *gate) passed() bool {
	select {
	case <-g.opened:
		return true
	default:
		return false
	}
}

// wait returns true to the caller that takes the turn, which must open
// the gate or leave it (leave) when its task ends; the others wait until
// it opens, or the turn comes to them (or ctx ends).
func (g *gate) wait(ctx context.Context) (bool, error) {
	if g.passed() {
		return false, nil
	}
	select {
	case <-g.turn:
		return true, nil
	case <-g.opened:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// leave ends the turn of a task that ended (res) before the gate opened.
// When its requests went unanswered (a gateway's page or a timeout each
// time, ErrMaybeCharged) or could not be sent (ErrNotSent) and the API
// has answered nothing, the run stops: the other tasks would meet the
// same, each paying a reservation of its own. A task that ended without
// asking (a request dearer than a whole cap; the database) passes the
// turn on to the next.
func (g *gate) leave(c *extract.Client, st *runState, res TaskResult) {
	if !st.answered.Load() && res.Err != nil &&
		(errors.Is(res.Err, extract.ErrMaybeCharged) || errors.Is(res.Err, extract.ErrNotSent)) {
		reason := fmt.Sprintf("the API at ETL_API_URL %s has answered no request of the run, so no other task asked: %s: %v",
			c.Origin(), res.Task, res.Err)
		st.stop.CompareAndSwap(nil, &reason)
	}
	if st.answered.Load() || st.stop.Load() != nil {
		g.open()
		return
	}
	g.turn <- struct{}{}
}

func (g *gate) open() { g.once.Do(func() { close(g.opened) }) }

// interruptedReason is the reason of tasks an interrupt stopped.
const interruptedReason = "interrupted: the run is resumed by the next run of the job"

// holdTask records a task that is not sent because the warehouse holds
// its data (h): its checkpoint says held, with why and what buying it
// again would cost.
func (r *Runner) holdTask(ctx context.Context, t jobspec.Task, h planning.Held, acct budget.Account, st *runState) TaskResult {
	res := TaskResult{Task: t, Held: &h}
	if st.lost.Load() {
		return res
	}
	reason := h.Reason(r.cfg.Now())
	if err := r.saveTask(context.WithoutCancel(ctx), st, acct, t, "held", 0, &res, reason); err != nil {
		res.Err = err
	}
	return res
}

func appendNew(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}

// Pool is the warehouse the runner loads into.
func (r *Runner) Pool() *pgxpool.Pool { return r.cfg.Pool }

// Logger is the runner's logger.
func (r *Runner) Logger() *slog.Logger { return r.cfg.Logger }
