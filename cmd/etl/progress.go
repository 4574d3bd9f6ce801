package main

// The progress display of `etl run`: a pipeline.Observer.
//
// On a terminal it is a live display redrawn in place: a line per task in
// flight (rows, pages, units, and where the plan expects a row count, the
// percentage and an ETA) and an overall line (tasks done, rows, API units
// against the plan's expected total, rates, the run's ETA). Elsewhere (a
// pipe, a file, cron) it writes a plain line with the overall state at most
// once per interval, with no terminal escape codes.
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
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/pipeline"
)

// progressRedraw is how often the live display is redrawn at most; a ticker
// redraws it that often too, so elapsed times and ETAs move between pages.
const progressRedraw = 200 * time.Millisecond

// progressEvery is the default interval of the plain lines.
const progressEvery = 10 * time.Second

// progress shows how a run progresses. Its methods are safe for concurrent
// use. It holds no goroutine outside a run: the live display's ticker starts
// in RunStarted and is stopped (and waited for) in RunFinished; the plain
// lines are written from the Observer calls themselves.
type progress struct {
	w        io.Writer
	terminal bool
	plan     *pipeline.Plan
	every    time.Duration
	now      func() time.Time
	// size is the terminal's size in columns and rows; 0 when unknown
	// (lines are then not cut).
	size func() (cols, rows int)
	// tick is the period of the live display's ticker (progressRedraw).
	tick time.Duration

	mu       sync.Mutex
	runID    int64
	started  time.Time
	tasks    []taskProgress
	expRows  int64 // the plan's expected rows of the run; -1: unknown
	expUnits int64 // the plan's expected units of the run; -1: unknown
	finished bool
	// next is when the next plain line, or the next redraw, is due.
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
	// expRows is the plan's expected rows of the task; nil: unknown.
	expRows *int64
	seen    bool // an Observer call told of the task
	running bool
	done    bool
	failed  bool
	skipped bool
	// at and atRows are when the task started in this process, and with
	// how many rows (a resumed task has some): its rate counts from there.
	at     time.Time
	atRows int64
	// baseRows and baseUnits are the task's counts when first told of:
	// what earlier attempts of the run did, which the run's rates leave
	// out.
	baseRows, baseUnits int64
	rows, units         int64
	pages               int
}

// newProgress returns a progress display writing to w: the live display
// when terminal is true, else a plain line at most once per every (default
// 10s). plan gives the expected rows and units of the tasks, for
// percentages and ETAs; nil shows none. now is the clock (default
// time.Now).
//
// The plain lines are written from the observer calls, when one comes
// after the line is due: no goroutine is needed, but no line comes while
// no page is loaded (a page slower than every delays it).
//
// When w is a terminal (*os.File), lines are cut to its width; a w that is
// not an *os.File is drawn to without a width limit.
func newProgress(w io.Writer, terminal bool, plan *pipeline.Plan, every time.Duration, now func() time.Time) *progress {
	if every <= 0 {
		every = progressEvery
	}
	if now == nil {
		now = time.Now
	}
	p := &progress{w: w, terminal: terminal, plan: plan, every: every, now: now,
		size: func() (int, int) { return 0, 0 }, tick: progressRedraw}
	if f, ok := w.(*os.File); ok && terminal {
		fd := int(f.Fd())
		p.size = func() (int, int) {
			cols, rows, err := term.GetSize(fd)
			if err != nil {
				return 0, 0
			}
			return cols, rows
		}
	}
	return p
}

// RunStarted implements pipeline.Observer.
func (p *progress) RunStarted(sum *pipeline.Summary, tasks []pipeline.Task) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runID = sum.RunID
	p.started = p.now()
	p.finished = false
	p.tasks = make([]taskProgress, len(tasks))
	p.expRows, p.expUnits = -1, -1
	var planned []pipeline.TaskPlan
	if p.plan != nil {
		planned = p.plan.Tasks
		p.expRows, p.expUnits = 0, 0
	}
	for i, t := range tasks {
		tp := &p.tasks[i]
		tp.name = t.String()
		// The plan's task i is this one when the plan was made for the
		// same tasks (not for another month, not a backfill's).
		var plan *pipeline.TaskPlan
		if i < len(planned) && planned[i].Name == tp.name {
			plan = &planned[i]
			tp.expRows = plan.Rows
		}
		p.expRows = sumPlanned(p.expRows, plan, func(tp *pipeline.TaskPlan) *int64 { return tp.Rows })
		p.expUnits = sumPlanned(p.expUnits, plan, func(tp *pipeline.TaskPlan) *int64 { return tp.Expected })
	}
	if !p.terminal {
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
func sumPlanned(sum int64, plan *pipeline.TaskPlan, get func(*pipeline.TaskPlan) *int64) int64 {
	if sum < 0 || plan == nil || get(plan) == nil {
		return -1
	}
	if s := catalog.AddUnits(sum, *get(plan)); s < math.MaxInt64 {
		return s
	}
	return -1
}

// ticker redraws the live display every period until stop is closed.
func (p *progress) ticker(stop <-chan struct{}, period time.Duration) {
	defer p.ticking.Done()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			if !p.finished {
				p.draw()
			}
			p.mu.Unlock()
		}
	}
}

// TaskStarted implements pipeline.Observer.
func (p *progress) TaskStarted(i int, res pipeline.TaskResult) {
	p.observe(i, res, func(t *taskProgress) {
		t.running = true
		t.at, t.atRows = p.now(), res.Rows
	})
}

// PageLoaded implements pipeline.Observer.
func (p *progress) PageLoaded(i int, res pipeline.TaskResult) {
	p.observe(i, res, nil)
}

// TaskFinished implements pipeline.Observer.
func (p *progress) TaskFinished(i int, res pipeline.TaskResult) {
	p.observe(i, res, func(t *taskProgress) {
		t.running, t.done = false, true
		t.failed, t.skipped = res.Err != nil, res.Err == nil && res.Skipped != ""
	})
}

// observe records what res counts of task i, then what also does, then
// writes a line or redraws if one is due.
func (p *progress) observe(i int, res pipeline.TaskResult, also func(*taskProgress)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished || i < 0 || i >= len(p.tasks) {
		return
	}
	t := &p.tasks[i]
	if !t.seen {
		t.seen = true
		t.baseRows, t.baseUnits = res.Rows, res.Units
	}
	t.rows, t.units, t.pages = res.Rows, res.Units, res.Pages
	if also != nil {
		also(t)
	}
	now := p.now()
	if now.Before(p.next) {
		return
	}
	if p.terminal {
		p.draw()
		return
	}
	p.next = now.Add(p.every)
	p.write(p.overall(now) + "\n")
}

// RunFinished implements pipeline.Observer. It stops the live display's
// ticker and leaves the overall line on the screen; in plain mode it writes
// nothing (the run's summary follows).
func (p *progress) RunFinished(sum *pipeline.Summary) {
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
	if p.terminal {
		cols, _ := p.size()
		p.write(p.clear() + fitColumns(p.overall(p.now()), cols-1) + "\n")
		p.drawn = 0
	}
}

// Write writes b (log lines) above the live display, which is redrawn
// under it; in plain mode, or when nothing is drawn, it writes b through.
// Wrap the run's log writer in it so that logs do not tear the display.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn == 0 {
		return p.w.Write(b)
	}
	if _, err := io.WriteString(p.w, p.clear()); err != nil {
		return 0, err
	}
	n, err := p.w.Write(b)
	if err != nil {
		return n, err
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		_, _ = io.WriteString(p.w, "\n")
	}
	p.drawn = 0
	p.draw()
	return n, nil
}

// draw redraws the live display in place; p.mu is held.
func (p *progress) draw() {
	now := p.now()
	p.next = now.Add(progressRedraw)
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
		width = max(width, displayColumns(p.tasks[i].name))
	}
	if cols > 0 {
		width = min(width, cols/2)
	}
	for _, i := range shown {
		t := &p.tasks[i]
		lines = append(lines, "  "+padColumns(fitColumns(t.name, width), width)+"  "+t.stats(now))
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
func (p *progress) clear() string {
	if p.drawn == 0 {
		return ""
	}
	return fmt.Sprintf("\r\x1b[%dA\x1b[J", p.drawn)
}

// write writes s; a failing write (a closed terminal) must not fail the
// run, so its error is dropped.
func (p *progress) write(s string) {
	_, _ = io.WriteString(p.w, s)
}

// stats is a task line's counts: rows (of the expected), percentage, pages,
// units and ETA.
func (t *taskProgress) stats(now time.Time) string {
	var parts []string
	if t.expRows == nil {
		parts = append(parts, fmt.Sprintf("%d rows", t.rows))
	} else {
		exp := *t.expRows
		s := fmt.Sprintf("%d/%d rows", t.rows, exp)
		if exp > 0 {
			s += fmt.Sprintf(" %d%%", percentOf(t.rows, exp))
		}
		parts = append(parts, s)
	}
	parts = append(parts, pluralize(t.pages, "page"), fmt.Sprintf("%d units", t.units))
	if t.expRows != nil && t.rows < *t.expRows {
		parts = append(parts, "ETA "+etaOf(*t.expRows-t.rows, t.rows-t.atRows, now.Sub(t.at)))
	}
	return strings.Join(parts, "  ")
}

// overall is the run's state in one line: tasks, rows and units (of the
// plan's), rates, ETA and elapsed time; p.mu is held.
func (p *progress) overall(now time.Time) string {
	var done, running, failed, skipped int
	var rows, units, gainedRows, gainedUnits int64
	for i := range p.tasks {
		t := &p.tasks[i]
		switch {
		case t.done:
			done++
		case t.running:
			running++
		}
		if t.failed {
			failed++
		}
		if t.skipped {
			skipped++
		}
		rows, units = rows+t.rows, units+t.units
		gainedRows, gainedUnits = gainedRows+t.rows-t.baseRows, gainedUnits+t.units-t.baseUnits
	}
	head := fmt.Sprintf("run %d: %d/%d tasks done", p.runID, done, len(p.tasks))
	if p.finished {
		head = fmt.Sprintf("run %d finished: %d/%d tasks done", p.runID, done, len(p.tasks))
	}
	parts := []string{head}
	if running > 0 {
		parts = append(parts, fmt.Sprintf("%d running", running))
	}
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", failed))
	}
	if skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", skipped))
	}
	parts = append(parts, countOf(rows, p.expRows, "rows"), countOf(units, p.expUnits, "units"))
	elapsed := now.Sub(p.started)
	if secs := elapsed.Seconds(); secs > 0 {
		parts = append(parts, perSecond(float64(gainedRows)/secs, "rows"), perSecond(float64(gainedUnits)/secs, "units"))
	}
	// The run's ETA: from the units rate where the plan expects a number of
	// units (the budget's measure, and what a run mostly waits on), else
	// from the rows rate.
	if !p.finished {
		switch {
		case p.expUnits >= 0:
			parts = append(parts, "ETA "+etaOf(p.expUnits-units, gainedUnits, elapsed))
		case p.expRows >= 0:
			parts = append(parts, "ETA "+etaOf(p.expRows-rows, gainedRows, elapsed))
		}
	}
	parts = append(parts, "elapsed "+elapsed.Round(time.Second).String())
	return strings.Join(parts, ", ")
}

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

// etaOf is the time left to do left more at the rate of gained in took;
// "?" when there is no rate yet, or when the plan's count is reached while
// the work goes on.
func etaOf(left, gained int64, took time.Duration) string {
	if left <= 0 || gained <= 0 || took <= 0 {
		return "?"
	}
	d := time.Duration(float64(took) * float64(left) / float64(gained))
	if d < time.Second {
		return "<1s"
	}
	return d.Round(time.Second).String()
}

// perSecond is "r what/s", with a decimal below 100.
func perSecond(r float64, what string) string {
	if r >= 100 {
		return fmt.Sprintf("%.0f %s/s", r, what)
	}
	return fmt.Sprintf("%.1f %s/s", r, what)
}

// pluralize is "n word" or "n words".
func pluralize(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
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
