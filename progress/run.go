package progress

// The progress display of `etl run` (Run): a pipeline.Observer.
//
// On a terminal it is a live display redrawn in place: a line per task in
// flight (rows, pages, units, and where the plan expects a row count, the
// percentage and an ETA) and an overall line (tasks done, rows, API units
// against the plan's expected total, rates, the run's ETA). When the run
// ends it leaves one line that says how it ended. Elsewhere (a pipe, a
// file, cron) it logs a record "progress" with the same counts as numbers
// at most once per interval.
//
// What the display counts is this attempt of the run: a run taken up
// again (resumed or continued) is priced by the plan for what is left of
// it (planning.Plan.Resume), so its rows and units are counted from where
// the attempt started, and the display says which attempt it is.
//
// Rates and ETAs need a basis: none is shown before the run (or the task)
// has gone for rateWarmup, nor while nothing was gained, nor once the run
// is stopping.
//
// No progress-bar library: the live display is a small ANSI redraw written
// here (move the cursor up over the last frame, clear to the end of the
// screen, write the new frame in one Write). github.com/vbauerster/mpb/v8
// was considered and does not fit:
//   - mpb's unit is a bar with a total. Most of our tasks have none (a paged
//     task whose total the plan does not know), lines come and go with the
//     tasks in flight, and the overall line compares API units to the plan:
//     everything but the redraw would be custom decorators anyway.
//   - mpb's speed and ETA decorators read the wall clock themselves
//     (time.Now, time.Since), while the run's clock is injected (--now pins
//     it) and the tests drive a fake one.
//   - mpb renders from its own goroutines on its own schedule, so frames are
//     hard to assert on in tests and the goroutines must be shut down on
//     every path.
//
// The redraw needs each line to fit on one screen line (a wrapped line
// breaks the cursor arithmetic): lines are cut to the terminal's width,
// counting every non-ASCII rune as two columns (which may cut a line with
// accents a little early, but never lets a wide CJK keyword wrap), and no
// more task lines are drawn than the terminal has rows.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/plain"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
)

// redrawEvery is how often the live display is redrawn at most; a ticker
// redraws it that often too, so elapsed times and ETAs move between pages.
const redrawEvery = 200 * time.Millisecond

// logEvery is the default interval of the log records.
const logEvery = 10 * time.Second

// rateWarmup is how long a run, or a task, must have gone before its rates
// and ETA are shown: the first pages say little about the pace.
const rateWarmup = 3 * time.Second

// Run shows how a run progresses: a pipeline.Observer. Its methods are safe for concurrent
// use. It holds no goroutine outside a run: the live display's ticker starts
// in RunStarted and is stopped (and waited for) in RunFinished; the log
// records are written from the Observer calls themselves.
type Run struct {
	// w is the terminal of the live display; nil for log records.
	w io.Writer
	// log receives the records "progress" when there is no terminal.
	log   *slog.Logger
	plan  *planning.Plan
	every time.Duration
	now   func() time.Time
	// size is the terminal's size in columns and rows; 0 when unknown
	// (lines are then not cut).
	size func() (cols, rows int)
	// tick is the period of the live display's ticker (redrawEvery).
	tick time.Duration

	mu       sync.Mutex
	runID    int64
	attempt  int
	started  time.Time
	tasks    []taskProgress
	expRows  int64 // the plan's expected rows of the attempt; -1: unknown
	expUnits int64 // the plan's expected units of the attempt; -1: unknown
	// stopping is set by the first interrupt: the run finishes the pages
	// in flight and ends.
	stopping bool
	finished bool
	// next is when the next log record, or the next redraw, is due.
	next time.Time
	// drawn is how many lines of the live display are on the screen.
	drawn int
	// stop ends the live display's ticker; ticking waits for it.
	stop    chan struct{}
	ticking sync.WaitGroup
}

// taskProgress is what the display knows of one task.
type taskProgress struct {
	name string
	// expRows is the plan's expected rows of the task (what is left of it
	// in a run taken up again); nil: unknown.
	expRows *int64
	seen    bool // an Observer call told of the task
	running bool
	done    bool // finished without an error and without being skipped
	failed  bool
	skipped bool
	// at is when the task started in this process: its rate counts from
	// there.
	at time.Time
	// baseRows, baseUnits and basePages are the task's counts when first
	// told of: what earlier attempts of the run did, which the display
	// leaves out.
	baseRows, baseUnits int64
	basePages           int
	rows, units         int64
	pages               int
}

// gained is what the task did in this attempt.
func (t *taskProgress) gained() (rows, units int64, pages int) {
	return t.rows - t.baseRows, t.units - t.baseUnits, t.pages - t.basePages
}

// NewTermRun returns the live display of a run, drawn on the terminal w. plan
// gives the expected rows and units of the tasks, for percentages and
// ETAs; nil shows none. now is the clock (default time.Now).
//
// When w is a terminal (*os.File), lines are cut to its width and no more
// task lines are drawn than it has rows; a w that is not an *os.File is
// drawn to without limits.
func NewTermRun(w io.Writer, plan *planning.Plan, now func() time.Time) *Run {
	p := newRun(plan, 0, now)
	p.w = w
	if size := termSize(w); size != nil {
		p.size = size
	}
	return p
}

// termSize returns how to read the size of the terminal w in columns and
// rows (0, 0 when it cannot be read); nil when w is not an *os.File.
func termSize(w io.Writer) func() (cols, rows int) {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	fd := int(f.Fd())
	return func() (int, int) {
		cols, rows, err := term.GetSize(fd)
		if err != nil {
			return 0, 0
		}
		return cols, rows
	}
}

// NewLogRun returns a progress display of a run that logs a record "progress"
// to log at most once per every (default 10s), with the run's counts as
// numbers. The records are written from the observer calls, when one
// comes after a record is due: no goroutine is needed, but no record comes
// while no page is loaded (a page slower than every delays it).
func NewLogRun(log *slog.Logger, plan *planning.Plan, every time.Duration, now func() time.Time) *Run {
	p := newRun(plan, every, now)
	p.log = log
	return p
}

func newRun(plan *planning.Plan, every time.Duration, now func() time.Time) *Run {
	if every <= 0 {
		every = logEvery
	}
	if now == nil {
		now = time.Now
	}
	return &Run{plan: plan, every: every, now: now, size: func() (int, int) { return 0, 0 }, tick: redrawEvery}
}

// planFor returns the plan when it was made for this attempt of the run:
// for a new run, a plan that takes up none; for a run taken up again, the
// plan that prices what is left of that same run. Any other (a plan made
// before another process took the run up, or for a --fresh run while an
// earlier one was open) would compare counts of different things.
func (p *Run) planFor(sum *pipeline.Summary) *planning.Plan {
	switch {
	case p.plan == nil:
		return nil
	case p.plan.Resume == nil && sum.Attempt <= 1:
		return p.plan
	case p.plan.Resume != nil && p.plan.Resume.RunID == sum.RunID && sum.Attempt > 1:
		return p.plan
	}
	return nil
}

// RunStarted implements pipeline.Observer.
func (p *Run) RunStarted(sum *pipeline.Summary, tasks []jobspec.Task) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runID, p.attempt = sum.RunID, sum.Attempt
	p.started = p.now()
	p.finished, p.stopping = false, false
	p.tasks = make([]taskProgress, len(tasks))
	p.expRows, p.expUnits = -1, -1
	var planned []planning.TaskPlan
	var listings []planning.ListingPlan
	if plan := p.planFor(sum); plan != nil {
		planned, listings = plan.Tasks, plan.Listings
		p.expRows, p.expUnits = 0, 0
	}
	for i, t := range tasks {
		tp := &p.tasks[i]
		tp.name = t.String()
		if t.Listings != nil {
			// A listings pull costs no units; its rows are the locations
			// the last pull counted, when the plan knows them.
			tp.expRows = nil
			for _, lp := range listings {
				if lp.Account == t.Listings.Account && lp.Locations != nil && !lp.Done {
					tp.expRows = lp.Locations
				}
			}
			if tp.expRows == nil || p.expRows < 0 {
				p.expRows = -1
			} else {
				p.expRows += *tp.expRows
			}
			continue
		}
		// The plan's task i is this one when the plan was made for the
		// same tasks (not for another month, not a backfill's).
		var plan *planning.TaskPlan
		if i < len(planned) && planned[i].Name == tp.name {
			plan = &planned[i]
			tp.expRows = plan.Rows
		}
		p.expRows = sumPlanned(p.expRows, plan, func(tp *planning.TaskPlan) *int64 { return tp.Rows })
		p.expUnits = sumPlanned(p.expUnits, plan, func(tp *planning.TaskPlan) *int64 { return tp.Expected })
	}
	if p.w == nil {
		p.next = p.started.Add(p.every)
		return
	}
	p.draw()
	if p.stop == nil {
		p.stop = make(chan struct{})
		p.ticking.Add(1)
		go p.ticker(p.stop, p.tick)
	}
}

// sumPlanned adds the count of plan that get picks to sum; an unknown sum, a
// task without a plan, an unbounded count or a sum past what an int64
// counts make it unknown (-1).
func sumPlanned(sum int64, plan *planning.TaskPlan, get func(*planning.TaskPlan) *int64) int64 {
	if sum < 0 || plan == nil || get(plan) == nil {
		return -1
	}
	if s := catalog.AddUnits(sum, *get(plan)); s < math.MaxInt64 {
		return s
	}
	return -1
}

// ticker redraws the live display every period until stop is closed.
func (p *Run) ticker(stop <-chan struct{}, period time.Duration) {
	everyTick(stop, period, &p.ticking, func() {
		p.mu.Lock()
		if !p.finished {
			p.draw()
		}
		p.mu.Unlock()
	})
}

// everyTick calls f every period until stop is closed, then marks done:
// the ticker of a live display.
func everyTick(stop <-chan struct{}, period time.Duration, done *sync.WaitGroup, f func()) {
	defer done.Done()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			f()
		}
	}
}

// TaskStarted implements pipeline.Observer.
func (p *Run) TaskStarted(i int, res pipeline.TaskResult) {
	p.observe(i, res, func(t *taskProgress) {
		t.running = true
		t.at = p.now()
	})
}

// PageLoaded implements pipeline.Observer.
func (p *Run) PageLoaded(i int, res pipeline.TaskResult) {
	p.observe(i, res, nil)
}

// TaskFinished implements pipeline.Observer.
func (p *Run) TaskFinished(i int, res pipeline.TaskResult) {
	p.observe(i, res, func(t *taskProgress) {
		t.running = false
		t.failed, t.skipped = res.Err != nil, res.Err == nil && res.Skipped != ""
		t.done = !t.failed && !t.skipped
	})
}

// observe records what res counts of task i, then what also does, then
// logs or redraws if that is due.
func (p *Run) observe(i int, res pipeline.TaskResult, also func(*taskProgress)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished || i < 0 || i >= len(p.tasks) {
		return
	}
	t := &p.tasks[i]
	if !t.seen {
		t.seen = true
		t.baseRows, t.baseUnits, t.basePages = res.Rows, res.Units, res.Pages
	}
	t.rows, t.units, t.pages = res.Rows, res.Units, res.Pages
	if also != nil {
		also(t)
	}
	now := p.now()
	if now.Before(p.next) {
		return
	}
	if p.w != nil {
		p.draw()
		return
	}
	p.next = now.Add(p.every)
	p.record(now)
}

// interrupt implements interrupter: the run is stopping (the first
// SIGINT/SIGTERM). It writes msg above the live display, which from then
// on says so and shows no ETA.
func (p *Run) interrupt(msg string) {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	_, _ = p.Write([]byte(msg))
}

// abandon implements abandoner: the process stops at once (the second
// SIGINT/SIGTERM). The live display is replaced by msg and a last line
// that says where the run stood; nothing is drawn after it.
func (p *Run) abandon(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return
	}
	if p.finished || p.started.IsZero() {
		p.write(msg)
		return
	}
	p.finished = true
	cols, _ := p.size()
	p.write(p.clear() + msg + fitColumns(p.abandoned(p.now()), cols-1) + "\n")
	p.drawn = 0
}

// RunFinished implements pipeline.Observer. It stops the live display's
// ticker and leaves one line that says how the run ended (the run's
// summary follows it); log records end without a last one.
func (p *Run) RunFinished(sum *pipeline.Summary) {
	p.mu.Lock()
	stop := p.stop
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		p.ticking.Wait()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished || p.started.IsZero() {
		return
	}
	p.finished = true
	if p.w != nil {
		cols, _ := p.size()
		p.write(p.clear() + fitColumns(p.ended(sum, p.now()), cols-1) + "\n")
		p.drawn = 0
	}
}

// Write writes b (log lines) above the live display, which is redrawn
// under it; when nothing is drawn it writes b through. Wrap the run's log
// writer in it so that logs do not tear the display. (A display of log
// records is not a writer: it drops b.)
func (p *Run) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.w
	if w == nil {
		return len(b), nil
	}
	if p.drawn == 0 {
		return w.Write(b)
	}
	if _, err := io.WriteString(w, p.clear()); err != nil {
		return 0, err
	}
	n, err := w.Write(b)
	if err != nil {
		return n, err
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		_, _ = io.WriteString(w, "\n")
	}
	p.drawn = 0
	p.draw()
	return n, nil
}

// draw redraws the live display in place; p.mu is held.
func (p *Run) draw() {
	now := p.now()
	p.next = now.Add(redrawEvery)
	cols, rows := p.size()
	var lines []string
	var running []int
	for i := range p.tasks {
		if p.tasks[i].running {
			running = append(running, i)
		}
	}
	// The frame keeps a row of the screen free for the cursor: a frame
	// taller than the screen scrolls, and the cursor could not go back
	// over it.
	shown, more := running, 0
	if rows > 0 && len(running) > rows-2 {
		shown = running[:max(rows-3, 0)] // leaving a line for "... more", one for the overall line
		if rows >= 3 {
			more = len(running) - len(shown)
		}
	}
	width := 0
	for _, i := range shown {
		width = max(width, displayColumns(plain.Text(p.tasks[i].name, 0)))
	}
	if cols > 0 {
		width = min(width, cols/2)
	}
	for _, i := range shown {
		t := &p.tasks[i]
		lines = append(lines, "  "+padColumns(fitColumns(plain.Text(t.name, 0), width), width)+"  "+t.stats(now, !p.stopping))
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("  ... and %d more tasks in flight", more))
	}
	lines = append(lines, p.overall(now))
	// Each line keeps off the last column: a line that fills it wraps on
	// some terminals.
	var b strings.Builder
	b.WriteString(p.clear())
	for _, l := range lines {
		b.WriteString(fitColumns(l, cols-1))
		b.WriteByte('\n')
	}
	p.write(b.String())
	p.drawn = len(lines)
}

// clear returns the escape codes that move the cursor to the first line of
// the live display and clear from there to the end of the screen.
func (p *Run) clear() string {
	if p.drawn == 0 {
		return ""
	}
	return fmt.Sprintf("\r\x1b[%dA\x1b[J", p.drawn)
}

// write writes s to the terminal; a failing write (a closed terminal) must
// not fail the run, so its error is dropped.
func (p *Run) write(s string) {
	_, _ = io.WriteString(p.w, s)
}

// stats is a task line's counts in this attempt: rows (of the expected),
// percentage, pages, units and, when eta and the task has gone long enough
// to have a pace, its ETA.
func (t *taskProgress) stats(now time.Time, eta bool) string {
	rows, units, pages := t.gained()
	var parts []string
	if t.expRows == nil {
		parts = append(parts, fmt.Sprintf("%d rows", rows))
	} else {
		exp := *t.expRows
		s := fmt.Sprintf("%d/%d rows", rows, exp)
		if exp > 0 {
			s += fmt.Sprintf(" %d%%", percentOf(rows, exp))
		}
		parts = append(parts, s)
	}
	parts = append(parts, pagesOf(pages), fmt.Sprintf("%d units", units))
	if eta && t.expRows != nil {
		if s, ok := etaOf(*t.expRows-rows, rows, now.Sub(t.at)); ok {
			parts = append(parts, "ETA "+s)
		}
	}
	return strings.Join(parts, "  ")
}

// counts are the run's counts in this attempt, over its tasks.
type counts struct {
	done, running, failed, skipped, unseen int
	rows, units                            int64
	elapsed                                time.Duration
}

// count sums the tasks; p.mu is held.
func (p *Run) count(now time.Time) counts {
	var c counts
	for i := range p.tasks {
		t := &p.tasks[i]
		switch {
		case t.done:
			c.done++
		case t.failed:
			c.failed++
		case t.skipped:
			c.skipped++
		case t.running:
			c.running++
		default:
			c.unseen++
		}
		rows, units, _ := t.gained()
		c.rows, c.units = c.rows+rows, c.units+units
	}
	c.elapsed = now.Sub(p.started)
	return c
}

// head names the run, and the attempt when it is not the first.
func (p *Run) head() string {
	if p.attempt > 1 {
		return fmt.Sprintf("run %d, attempt %d", p.runID, p.attempt)
	}
	return fmt.Sprintf("run %d", p.runID)
}

// rates are the attempt's rates, "" before there is a basis for them.
func rates(c counts, minElapsed time.Duration) string {
	if c.elapsed < minElapsed || c.elapsed <= 0 {
		return ""
	}
	secs := c.elapsed.Seconds()
	return perSecond(float64(c.rows)/secs, "rows") + ", " + perSecond(float64(c.units)/secs, "units")
}

// overall is the run's state in one line while it runs: tasks, rows and
// units (of the plan's), rates, ETA and elapsed time; p.mu is held.
func (p *Run) overall(now time.Time) string {
	c := p.count(now)
	head := p.head()
	if p.stopping {
		head += " stopping"
	}
	parts := []string{fmt.Sprintf("%s: %d/%d tasks done", head, c.done, len(p.tasks))}
	if c.running > 0 {
		parts = append(parts, fmt.Sprintf("%d running", c.running))
	}
	if c.failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", c.failed))
	}
	if c.skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", c.skipped))
	}
	parts = append(parts, countOf(c.rows, p.expRows, "rows"), countOf(c.units, p.expUnits, "units"))
	if r := rates(c, rateWarmup); r != "" {
		parts = append(parts, r)
	}
	if eta, ok := p.eta(c); ok {
		parts = append(parts, "ETA "+eta)
	}
	parts = append(parts, "elapsed "+c.elapsed.Round(time.Second).String())
	return strings.Join(parts, ", ")
}

// eta is the run's ETA, from the units rate where the plan expects a
// number of units (the budget's measure, and what a run mostly waits on),
// else from the rows rate; false when there is none to show: no plan, no
// pace yet, the plan's count reached, or the run stopping.
func (p *Run) eta(c counts) (string, bool) {
	if p.stopping || p.finished || c.elapsed < rateWarmup {
		return "", false
	}
	switch {
	case p.expUnits >= 0:
		return etaOf(p.expUnits-c.units, c.units, c.elapsed)
	case p.expRows >= 0:
		return etaOf(p.expRows-c.rows, c.rows, c.elapsed)
	}
	return "", false
}

// ended is the line the live display leaves when the run ends: how it
// ended, its tasks by outcome, and what this attempt loaded and spent. No
// plan's count and no ETA: they were expectations, and the run is over.
func (p *Run) ended(sum *pipeline.Summary, now time.Time) string {
	how := "finished"
	switch {
	case sum.Interrupted:
		how = "interrupted"
	case sum.Stopped != "":
		how = "stopped early"
	case len(sum.Tasks) > 0 && sum.Failed() == len(sum.Tasks):
		how = "failed"
	}
	var done, failed, skipped int
	for _, t := range sum.Tasks {
		switch {
		case t.Err != nil:
			failed++
		case t.Skipped != "":
			skipped++
		default:
			done++
		}
	}
	parts := []string{fmt.Sprintf("%s %s: %d/%d tasks done", p.head(), how, done, len(sum.Tasks))}
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", failed))
	}
	switch {
	case skipped > 0 && sum.Interrupted:
		parts = append(parts, fmt.Sprintf("%d not finished", skipped))
	case skipped > 0:
		parts = append(parts, fmt.Sprintf("%d skipped", skipped))
	}
	rows, units := sum.AttemptTotals()
	what := fmt.Sprintf("%d rows, %d units", rows, units)
	if sum.Attempt > 1 {
		what += " in this attempt"
	}
	parts = append(parts, what)
	c := counts{rows: rows, units: units, elapsed: now.Sub(p.started)}
	if r := rates(c, time.Second); r != "" {
		parts = append(parts, r)
	}
	parts = append(parts, "elapsed "+c.elapsed.Round(time.Second).String())
	return strings.Join(parts, ", ")
}

// abandoned is the line the live display leaves when the process stops
// at once; p.mu is held.
func (p *Run) abandoned(now time.Time) string {
	c := p.count(now)
	parts := []string{fmt.Sprintf("%s stopped at once: %d/%d tasks done", p.head(), c.done, len(p.tasks))}
	if c.failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", c.failed))
	}
	if n := c.skipped + c.running + c.unseen; n > 0 {
		parts = append(parts, fmt.Sprintf("%d not finished", n))
	}
	parts = append(parts, fmt.Sprintf("%d rows, %d units committed", c.rows, c.units),
		"elapsed "+c.elapsed.Round(time.Second).String())
	return strings.Join(parts, ", ")
}

// record logs the run's state as a record "progress" with its counts as
// numbers; p.mu is held.
func (p *Run) record(now time.Time) {
	c := p.count(now)
	attrs := []slog.Attr{slog.Int64("run_id", p.runID), slog.Int("attempt", max(p.attempt, 1)),
		slog.Int("tasks", len(p.tasks)), slog.Int("tasks_done", c.done), slog.Int("tasks_running", c.running),
		slog.Int("tasks_failed", c.failed), slog.Int("tasks_skipped", c.skipped),
		slog.Int64("rows", c.rows)}
	if p.expRows >= 0 {
		attrs = append(attrs, slog.Int64("rows_expected", p.expRows))
	}
	attrs = append(attrs, slog.Int64("units", c.units))
	if p.expUnits >= 0 {
		attrs = append(attrs, slog.Int64("units_expected", p.expUnits))
	}
	if secs := c.elapsed.Seconds(); secs > 0 {
		attrs = append(attrs, slog.Float64("rows_per_second", round2(float64(c.rows)/secs)),
			slog.Float64("units_per_second", round2(float64(c.units)/secs)))
	}
	if eta, ok := p.etaDuration(c); ok {
		attrs = append(attrs, slog.Float64("eta_seconds", math.Round(eta.Seconds())))
	}
	attrs = append(attrs, slog.Float64("elapsed_seconds", round2(c.elapsed.Seconds())))
	if p.stopping {
		attrs = append(attrs, slog.Bool("stopping", true))
	}
	p.log.LogAttrs(context.Background(), slog.LevelInfo, "progress", attrs...)
}

// etaDuration is eta as a duration.
func (p *Run) etaDuration(c counts) (time.Duration, bool) {
	if p.stopping || p.finished || c.elapsed < rateWarmup {
		return 0, false
	}
	switch {
	case p.expUnits >= 0:
		return etaDuration(p.expUnits-c.units, c.units, c.elapsed)
	case p.expRows >= 0:
		return etaDuration(p.expRows-c.rows, c.rows, c.elapsed)
	}
	return 0, false
}

// round2 rounds to two decimals.
func round2(f float64) float64 { return math.Round(f*100) / 100 }

// countOf is "n what", or "n/exp what (p%)" when exp is known (>= 0).
func countOf(n, exp int64, what string) string {
	switch {
	case exp < 0:
		return fmt.Sprintf("%d %s", n, what)
	case exp == 0:
		return fmt.Sprintf("%d/%d %s", n, exp, what)
	}
	return fmt.Sprintf("%d/%d %s (%d%%)", n, exp, what, percentOf(n, exp))
}

// percentOf is n of exp (> 0) in whole percent, at most 100 (a plan's
// count may be stale).
func percentOf(n, exp int64) int64 {
	return min(n*100/exp, 100)
}

// etaDuration is the time left to do left more at the rate of gained in
// took; false when there is no rate (nothing gained) or the plan's count
// is reached while the work goes on.
func etaDuration(left, gained int64, took time.Duration) (time.Duration, bool) {
	if left <= 0 || gained <= 0 || took <= 0 {
		return 0, false
	}
	return time.Duration(float64(took) * float64(left) / float64(gained)), true
}

// etaOf is etaDuration as the display shows it, for a task or run that has
// gone at least rateWarmup.
func etaOf(left, gained int64, took time.Duration) (string, bool) {
	if took < rateWarmup {
		return "", false
	}
	d, ok := etaDuration(left, gained, took)
	switch {
	case !ok:
		return "", false
	case d < time.Second:
		return "<1s", true
	}
	return d.Round(time.Second).String(), true
}

// perSecond is "r what/s", with a decimal below 100.
func perSecond(r float64, what string) string {
	if r >= 100 {
		return fmt.Sprintf("%.0f %s/s", r, what)
	}
	return fmt.Sprintf("%.1f %s/s", r, what)
}

// pagesOf is "1 page" or "n pages".
func pagesOf(n int) string {
	if n == 1 {
		return "1 page"
	}
	return fmt.Sprintf("%d pages", n)
}

// runeColumns is how many terminal columns r takes at most: one for ASCII,
// two for any other rune (wide CJK runes take two; counting others as two
// only cuts a line early).
func runeColumns(r rune) int {
	if r < 0x80 {
		return 1
	}
	return 2
}

// displayColumns is how many terminal columns s takes at most.
func displayColumns(s string) int {
	n := 0
	for _, r := range s {
		n += runeColumns(r)
	}
	return n
}

// fitColumns cuts s to at most cols columns; cols < 0 leaves it whole.
func fitColumns(s string, cols int) string {
	if cols < 0 {
		return s
	}
	n := 0
	for i, r := range s {
		if n += runeColumns(r); n > cols {
			return s[:i]
		}
	}
	return s
}

// padColumns pads s with spaces to cols columns.
func padColumns(s string, cols int) string {
	if n := displayColumns(s); n < cols {
		return s + strings.Repeat(" ", cols-n)
	}
	return s
}
