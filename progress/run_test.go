package progress

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/vt"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
)

// progressClock is a fake clock, safe for concurrent use (the live
// display's ticker reads it too).
type progressClock struct {
	mu sync.Mutex
	t  time.Time
}

func newProgressClock() *progressClock {
	return &progressClock{t: time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)}
}

func (c *progressClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *progressClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// progressTasks are a links task of a target and a keyword task whose name
// has wide runes.
func progressTasks() []jobspec.Task {
	return []jobspec.Task{
		{Endpoint: &catalog.Endpoint{Name: "links"}, Target: &jobspec.Target{URL: "https://a.example", Scope: catalog.RootDomain}},
		{Endpoint: &catalog.Endpoint{Name: "keywords"}, Keyword: "東京 ホテル", Country: "jp",
			Month: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
	}
}

// progressPlan plans tasks with the expected rows and units given per task
// (-1: unknown).
func progressPlan(tasks []jobspec.Task, rows, units []int64) *planning.Plan {
	known := func(n int64) *int64 {
		if n < 0 {
			return nil
		}
		return &n
	}
	plan := &planning.Plan{}
	for i, t := range tasks {
		plan.Tasks = append(plan.Tasks, planning.TaskPlan{Task: t, Name: t.String(), Rows: known(rows[i]), Expected: known(units[i])})
	}
	return plan
}

// termProgress is a live display drawn on a fake terminal of cols x rows,
// redrawn by the observer calls only (on the fake clock).
func termProgress(t *testing.T, cols, rows int, plan *planning.Plan, clock *progressClock) (*Run, *vt.Terminal) {
	v := vt.New(t, cols, rows)
	p := NewTermRun(v, plan, clock.now)
	p.size = func() (int, int) { return cols, rows }
	p.tick = time.Hour
	return p, v
}

// finished is a task result: done, or skipped or failed.
func finished(rows, units int64, skipped string, err error) pipeline.TaskResult {
	return pipeline.TaskResult{Rows: rows, Units: units, Skipped: skipped, Err: err}
}

func TestProgressTerminal(t *testing.T) {
	t.Parallel()
	clock := newProgressClock()
	tasks := progressTasks()
	p, v := termProgress(t, 200, 24, progressPlan(tasks, []int64{1000, 100}, []int64{500, 100}), clock)

	p.RunStarted(&pipeline.Summary{RunID: 7, Attempt: 1}, tasks)
	require.Equal(t, []string{
		"run 7: 0/2 tasks done, 0/1100 rows (0%), 0/600 units (0%), elapsed 0s",
	}, v.Screen())

	// After a second: counts, but no rate and no ETA yet (one page says
	// little about the pace).
	p.TaskStarted(0, pipeline.TaskResult{})
	p.TaskStarted(1, pipeline.TaskResult{})
	clock.add(time.Second)
	p.PageLoaded(0, pipeline.TaskResult{Pages: 1, Rows: 250, Units: 125})
	require.Equal(t, []string{
		`  links https://a.example (ROOT_DOMAIN)  250/1000 rows 25%  1 page  125 units`,
		`  keywords "東京 ホテル" jp 2026-11      0/100 rows 0%  0 pages  0 units`,
		"run 7: 0/2 tasks done, 2 running, 250/1100 rows (22%), 125/600 units (20%), elapsed 1s",
	}, v.Screen())

	// After four: rates, and ETAs where there is a pace.
	clock.add(3 * time.Second)
	p.PageLoaded(0, pipeline.TaskResult{Pages: 2, Rows: 500, Units: 250})
	require.Equal(t, []string{
		`  links https://a.example (ROOT_DOMAIN)  500/1000 rows 50%  2 pages  250 units  ETA 4s`,
		`  keywords "東京 ホテル" jp 2026-11      0/100 rows 0%  0 pages  0 units`,
		"run 7: 0/2 tasks done, 2 running, 500/1100 rows (45%), 250/600 units (41%), 125 rows/s, 62.5 units/s, ETA 6s, elapsed 4s",
	}, v.Screen())

	clock.add(time.Second)
	p.TaskFinished(0, pipeline.TaskResult{Pages: 4, Rows: 1000, Units: 500})
	require.Equal(t, []string{
		`  keywords "東京 ホテル" jp 2026-11  0/100 rows 0%  0 pages  0 units`,
		"run 7: 1/2 tasks done, 1 running, 1000/1100 rows (90%), 500/600 units (83%), 200 rows/s, 100 units/s, ETA 1s, elapsed 5s",
	}, v.Screen())

	p.PageLoaded(1, pipeline.TaskResult{Pages: 1, Rows: 50, Units: 50}) // not redrawn: drawn less than 200ms ago
	require.NotContains(t, v.Screen()[0], "50/100 rows")

	// A cap skips the last task: the line left says so, counts it as
	// skipped, not done, and shows no plan's count.
	clock.add(time.Second)
	last := pipeline.TaskResult{Pages: 1, Rows: 50, Units: 50, Skipped: "the daily cap is reached"}
	p.TaskFinished(1, last)
	p.RunFinished(&pipeline.Summary{RunID: 7, Attempt: 1, Stopped: "the daily cap is reached",
		Tasks: []pipeline.TaskResult{finished(1000, 500, "", nil), last}})
	require.Equal(t, []string{
		"run 7 stopped early: 1/2 tasks done, 1 skipped, 1050 rows, 550 units, 175 rows/s, 91.7 units/s, elapsed 6s",
	}, v.All(), "one line left, nothing stale above it")
}

// TestProgressEndsWithATrueLine: the line left when a run ends says how it
// ended and counts each task once, by its outcome; never a plan's
// expectation.
func TestProgressEndsWithATrueLine(t *testing.T) {
	t.Parallel()
	tasks := progressTasks()
	stop := "interrupted: the run is resumed by the next run of the job"
	for _, tc := range []struct {
		name string
		sum  pipeline.Summary
		want string
	}{{
		name: "finished below the plan",
		sum:  pipeline.Summary{Tasks: []pipeline.TaskResult{finished(1700, 850, "", nil), finished(106, 106, "", nil)}},
		want: "run 7 finished: 2/2 tasks done, 1806 rows, 956 units, 181 rows/s, 95.6 units/s, elapsed 10s",
	}, {
		name: "finished with a failure",
		sum:  pipeline.Summary{Tasks: []pipeline.TaskResult{finished(1700, 850, "", nil), finished(0, 0, "", errors.New("boom"))}},
		want: "run 7 finished: 1/2 tasks done, 1 failed, 1700 rows, 850 units, 170 rows/s, 85.0 units/s, elapsed 10s",
	}, {
		name: "every task failed",
		sum:  pipeline.Summary{Tasks: []pipeline.TaskResult{finished(0, 0, "", errors.New("boom")), finished(0, 0, "", errors.New("boom"))}},
		want: "run 7 failed: 0/2 tasks done, 2 failed, 0 rows, 0 units, 0.0 rows/s, 0.0 units/s, elapsed 10s",
	}, {
		name: "interrupted",
		sum:  pipeline.Summary{Interrupted: true, Stopped: stop, Tasks: []pipeline.TaskResult{finished(1000, 500, "", nil), finished(0, 0, stop, nil)}},
		want: "run 7 interrupted: 1/2 tasks done, 1 not finished, 1000 rows, 500 units, 100 rows/s, 50.0 units/s, elapsed 10s",
	}, {
		name: "interrupted before any task ended",
		sum:  pipeline.Summary{Interrupted: true, Stopped: stop, Tasks: []pipeline.TaskResult{finished(0, 0, stop, nil), finished(0, 0, stop, nil)}},
		want: "run 7 interrupted: 0/2 tasks done, 2 not finished, 0 rows, 0 units, 0.0 rows/s, 0.0 units/s, elapsed 10s",
	}, {
		name: "a resumed run counts its attempt",
		sum: pipeline.Summary{Attempt: 2, Tasks: []pipeline.TaskResult{
			{Rows: 1700, Units: 850, PriorRows: 1500, PriorUnits: 750}, {Rows: 106, Units: 106, PriorRows: 106, PriorUnits: 106}}},
		want: "run 7, attempt 2 finished: 2/2 tasks done, 200 rows, 100 units in this attempt, 20.0 rows/s, 10.0 units/s, elapsed 10s",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newProgressClock()
			p, v := termProgress(t, 200, 24, progressPlan(tasks, []int64{3000, 68}, []int64{1500, 100}), clock)
			tc.sum.RunID = 7
			p.RunStarted(&pipeline.Summary{RunID: 7, Attempt: tc.sum.Attempt}, tasks)
			p.TaskStarted(0, pipeline.TaskResult{})
			clock.add(10 * time.Second)
			for i, res := range tc.sum.Tasks {
				p.TaskFinished(i, res)
			}
			p.RunFinished(&tc.sum)
			require.Equal(t, []string{tc.want}, v.All())
		})
	}
}

// TestProgressInterrupted: the first interrupt's message stays above the
// display, which says the run is stopping (and guesses no ETA); when the
// run ends, the message and one true line are left, no task line.
func TestProgressInterrupted(t *testing.T) {
	t.Parallel()
	clock := newProgressClock()
	tasks := progressTasks()
	p, v := termProgress(t, 200, 24, progressPlan(tasks, []int64{1000, 100}, []int64{500, 100}), clock)
	logs := NewLogWriter(v)
	restore := logs.Swap(p)
	defer restore()

	p.RunStarted(&pipeline.Summary{RunID: 7, Attempt: 1}, tasks)
	p.TaskStarted(0, pipeline.TaskResult{})
	p.TaskStarted(1, pipeline.TaskResult{})
	clock.add(5 * time.Second)
	p.PageLoaded(0, pipeline.TaskResult{Pages: 1, Rows: 250, Units: 125})
	require.Contains(t, v.Screen()[2], "ETA")

	logs.Interrupt("etl: interrupt: finishing the work in flight (again to stop at once)\n")
	clock.add(time.Second)
	p.PageLoaded(0, pipeline.TaskResult{Pages: 2, Rows: 500, Units: 250})
	require.Equal(t, []string{
		"etl: interrupt: finishing the work in flight (again to stop at once)",
		`  links https://a.example (ROOT_DOMAIN)  500/1000 rows 50%  2 pages  250 units`,
		`  keywords "東京 ホテル" jp 2026-11      0/100 rows 0%  0 pages  0 units`,
		"run 7 stopping: 0/2 tasks done, 2 running, 500/1100 rows (45%), 250/600 units (41%), 83.3 rows/s, 41.7 units/s, elapsed 6s",
	}, v.Screen())

	_, _ = logs.Write([]byte("level=INFO msg=\"run finished\"\n"))
	stop := "interrupted: the run is resumed by the next run of the job"
	done, left := finished(500, 250, "", nil), finished(0, 0, stop, nil)
	p.TaskFinished(0, done)
	p.TaskFinished(1, left)
	p.RunFinished(&pipeline.Summary{RunID: 7, Attempt: 1, Interrupted: true, Stopped: stop, Tasks: []pipeline.TaskResult{done, left}})
	require.Equal(t, []string{
		"etl: interrupt: finishing the work in flight (again to stop at once)",
		`level=INFO msg="run finished"`,
		"run 7 interrupted: 1/2 tasks done, 1 not finished, 500 rows, 250 units, 83.3 rows/s, 41.7 units/s, elapsed 6s",
	}, v.All())
}

// TestProgressStoppedAtOnce: the second interrupt ends the display at once
// with its message and a line that says where the run stood; nothing is
// drawn after it.
func TestProgressStoppedAtOnce(t *testing.T) {
	t.Parallel()
	clock := newProgressClock()
	tasks := progressTasks()
	p, v := termProgress(t, 200, 24, nil, clock)
	logs := NewLogWriter(v)
	restore := logs.Swap(p)
	defer restore()

	p.RunStarted(&pipeline.Summary{RunID: 7, Attempt: 1}, tasks)
	p.TaskStarted(0, pipeline.TaskResult{})
	p.TaskStarted(1, pipeline.TaskResult{})
	clock.add(time.Second)
	p.PageLoaded(0, pipeline.TaskResult{Pages: 1, Rows: 250, Units: 125})
	logs.Interrupt("etl: interrupt: finishing the work in flight\n")
	logs.Abandon("etl: interrupt: stopping at once\n")
	want := []string{
		"etl: interrupt: finishing the work in flight",
		"etl: interrupt: stopping at once",
		"run 7 stopped at once: 0/2 tasks done, 2 not finished, 250 rows, 125 units committed, elapsed 1s",
	}
	require.Equal(t, want, v.All())

	clock.add(time.Second)
	p.PageLoaded(0, pipeline.TaskResult{Pages: 2, Rows: 500, Units: 250})
	p.RunFinished(&pipeline.Summary{RunID: 7})
	require.Equal(t, want, v.All())
}

// TestProgressResumedRun: a run taken up again is priced by the plan for
// what is left of it; the display counts this attempt against that, and
// ignores a plan made for another run.
func TestProgressResumedRun(t *testing.T) {
	t.Parallel()
	tasks := progressTasks()
	for _, tc := range []struct {
		name    string
		resume  *planning.ResumePlan
		attempt int
		want    []string
	}{{
		name:    "the plan of what is left",
		resume:  &planning.ResumePlan{RunID: 7, How: "resumed"},
		attempt: 2,
		want: []string{
			`  links https://a.example (ROOT_DOMAIN)  200/400 rows 50%  2 pages  100 units  ETA 4s`,
			"run 7, attempt 2: 1/2 tasks done, 1 running, 200/400 rows (50%), 100/200 units (50%), 50.0 rows/s, 25.0 units/s, ETA 4s, elapsed 4s",
		},
	}, {
		name:    "a plan of another run",
		resume:  &planning.ResumePlan{RunID: 6, How: "resumed"},
		attempt: 2,
		want: []string{
			`  links https://a.example (ROOT_DOMAIN)  200 rows  2 pages  100 units`,
			"run 7, attempt 2: 1/2 tasks done, 1 running, 200 rows, 100 units, 50.0 rows/s, 25.0 units/s, elapsed 4s",
		},
	}, {
		name:    "a plan that took up a run, for a new run (--fresh)",
		resume:  &planning.ResumePlan{RunID: 6, How: "resumed"},
		attempt: 1,
		want: []string{
			`  links https://a.example (ROOT_DOMAIN)  200 rows  2 pages  100 units`,
			"run 7: 1/2 tasks done, 1 running, 200 rows, 100 units, 50.0 rows/s, 25.0 units/s, elapsed 4s",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newProgressClock()
			plan := progressPlan(tasks, []int64{400, 0}, []int64{200, 0})
			plan.Resume = tc.resume
			p, v := termProgress(t, 200, 24, plan, clock)
			p.RunStarted(&pipeline.Summary{RunID: 7, Attempt: tc.attempt}, tasks)
			p.TaskFinished(1, pipeline.TaskResult{Pages: 1, Rows: 100, Units: 100, Resumed: true}) // done in an earlier attempt
			p.TaskStarted(0, pipeline.TaskResult{Pages: 6, Rows: 600, Units: 300, Resumed: true, PriorRows: 600, PriorUnits: 300})
			clock.add(4 * time.Second)
			p.PageLoaded(0, pipeline.TaskResult{Pages: 8, Rows: 800, Units: 400, Resumed: true, PriorRows: 600, PriorUnits: 300})
			require.Equal(t, tc.want, v.Screen())
			p.RunFinished(&pipeline.Summary{RunID: 7})
		})
	}
}

// TestProgressLogRecords: without a terminal, a record "progress" at most
// every interval, with every count a JSON number.
func TestProgressLogRecords(t *testing.T) {
	t.Parallel()
	clock := newProgressClock()
	tasks := progressTasks()
	var out bytes.Buffer
	p := NewLogRun(timelessJSONLog(&out), progressPlan(tasks, []int64{1000, 100}, []int64{500, 100}), 10*time.Second, clock.now)

	p.RunStarted(&pipeline.Summary{RunID: 7, Attempt: 1}, tasks)
	p.TaskStarted(0, pipeline.TaskResult{})
	p.TaskStarted(1, pipeline.TaskResult{})
	clock.add(5 * time.Second)
	p.PageLoaded(0, pipeline.TaskResult{Pages: 1, Rows: 100, Units: 50}) // not due yet
	clock.add(5 * time.Second)
	p.PageLoaded(0, pipeline.TaskResult{Pages: 2, Rows: 200, Units: 100}) // due: record 1
	p.PageLoaded(1, pipeline.TaskResult{Pages: 1, Rows: 100, Units: 100}) // at most one per 10s
	clock.add(10 * time.Second)
	p.TaskFinished(1, pipeline.TaskResult{Pages: 1, Rows: 100, Units: 100}) // due: record 2
	clock.add(3 * time.Second)
	p.TaskFinished(0, pipeline.TaskResult{Pages: 3, Rows: 250, Units: 125, Err: errors.New("boom")})
	p.RunFinished(&pipeline.Summary{RunID: 7})

	require.Equal(t, []map[string]any{{
		"level": "INFO", "msg": "progress", "run_id": 7.0, "attempt": 1.0, "tasks": 2.0, "tasks_done": 0.0, "tasks_running": 2.0,
		"tasks_failed": 0.0, "tasks_skipped": 0.0, "rows": 200.0, "rows_expected": 1100.0, "units": 100.0, "units_expected": 600.0,
		"rows_per_second": 20.0, "units_per_second": 10.0, "eta_seconds": 50.0, "elapsed_seconds": 10.0,
	}, {
		"level": "INFO", "msg": "progress", "run_id": 7.0, "attempt": 1.0, "tasks": 2.0, "tasks_done": 1.0, "tasks_running": 1.0,
		"tasks_failed": 0.0, "tasks_skipped": 0.0, "rows": 300.0, "rows_expected": 1100.0, "units": 200.0, "units_expected": 600.0,
		"rows_per_second": 15.0, "units_per_second": 10.0, "eta_seconds": 40.0, "elapsed_seconds": 20.0,
	}}, jsonRecords(t, out.String()))
}

func TestProgressTerminalFitsTheScreen(t *testing.T) {
	t.Parallel()
	keyword := &catalog.Endpoint{Name: "keywords"}
	var tasks []jobspec.Task
	for i := range 6 {
		tasks = append(tasks, jobspec.Task{Endpoint: keyword, Keyword: fmt.Sprintf("東京 ホテル 安い %d", i), Country: "jp",
			Month: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)})
	}
	tests := []struct {
		name       string
		cols, rows int
		want       []string
	}{{
		name: "wide enough",
		cols: 200, rows: 20,
		want: []string{
			`  keywords "東京 ホテル 安い 0" jp 2026-11  10 rows  1 page  10 units`,
			`  keywords "東京 ホテル 安い 1" jp 2026-11  0 rows  0 pages  0 units`,
			`  keywords "東京 ホテル 安い 2" jp 2026-11  0 rows  0 pages  0 units`,
			`  keywords "東京 ホテル 安い 3" jp 2026-11  0 rows  0 pages  0 units`,
			`  keywords "東京 ホテル 安い 4" jp 2026-11  0 rows  0 pages  0 units`,
			`  keywords "東京 ホテル 安い 5" jp 2026-11  0 rows  0 pages  0 units`,
			"run 7: 0/6 tasks done, 6 running, 10 rows, 10 units, elapsed 1s",
		},
	}, {
		name: "narrow and short: lines cut, tasks counted",
		cols: 30, rows: 5,
		want: []string{
			`  keywords "東京   10 rows  1`,
			`  keywords "東京   0 rows  0`,
			"  ... and 4 more tasks in fli",
			"run 7: 0/6 tasks done, 6 runn",
		},
	}, {
		name: "two rows: the overall line only",
		cols: 30, rows: 2,
		want: []string{"run 7: 0/6 tasks done, 6 runn"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newProgressClock()
			p, v := termProgress(t, tt.cols, tt.rows, nil, clock)
			p.RunStarted(&pipeline.Summary{RunID: 7}, tasks)
			for i := range tasks {
				p.TaskStarted(i, pipeline.TaskResult{})
			}
			clock.add(time.Second)
			p.PageLoaded(0, pipeline.TaskResult{Pages: 1, Rows: 10, Units: 10})
			require.Equal(t, tt.want, v.All(), "nothing scrolled away")
			p.RunFinished(&pipeline.Summary{RunID: 7})
		})
	}
}

func TestProgressWriteKeepsLogsAboveTheDisplay(t *testing.T) {
	t.Parallel()
	clock := newProgressClock()
	p, v := termProgress(t, 200, 24, nil, clock)
	p.RunStarted(&pipeline.Summary{RunID: 7}, progressTasks())
	clock.add(time.Second)
	p.TaskStarted(0, pipeline.TaskResult{})
	_, err := p.Write([]byte("level=INFO msg=first\n"))
	require.NoError(t, err)
	_, err = p.Write([]byte("level=INFO msg=second")) // no newline: one is added
	require.NoError(t, err)
	require.Equal(t, []string{
		"level=INFO msg=first",
		"level=INFO msg=second",
		"  links https://a.example (ROOT_DOMAIN)  0 rows  0 pages  0 units",
		"run 7: 0/2 tasks done, 1 running, 0 rows, 0 units, elapsed 1s",
	}, v.All())
	p.RunFinished(&pipeline.Summary{RunID: 7})
}

func TestProgressIdle(t *testing.T) {
	t.Parallel()
	t.Run("terminal", func(t *testing.T) {
		t.Parallel()
		p, v := termProgress(t, 80, 24, nil, newProgressClock())
		p.PageLoaded(3, pipeline.TaskResult{Rows: 1}) // before RunStarted: ignored
		p.RunFinished(&pipeline.Summary{})            // without RunStarted: no ticker to stop, nothing to say
		require.Empty(t, v.All())
	})
	t.Run("log", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		p := NewLogRun(slog.New(slog.NewJSONHandler(&out, nil)), nil, 0, newProgressClock().now)
		p.PageLoaded(3, pipeline.TaskResult{Rows: 1})
		p.RunFinished(&pipeline.Summary{})
		require.Empty(t, out.String())
	})
}

// TestProgressConcurrent calls the observer as the runner does, from many
// goroutines at once, with log lines written between; run with -race.
// TestMain checks that no goroutine (the live display's ticker) outlives
// the run. On a terminal shorter than the tasks in flight, nothing of a
// frame is left behind: only the log lines and the last line.
func TestProgressConcurrent(t *testing.T) {
	t.Parallel()
	for _, terminal := range []bool{false, true} {
		t.Run(fmt.Sprintf("terminal=%v", terminal), func(t *testing.T) {
			t.Parallel()
			clock := newProgressClock()
			links := &catalog.Endpoint{Name: "links"}
			var tasks []jobspec.Task
			var rows, units []int64
			for i := range 16 {
				tasks = append(tasks, jobspec.Task{Endpoint: links, Target: &jobspec.Target{URL: fmt.Sprintf("https://%d.example", i), Scope: catalog.RootDomain}})
				rows, units = append(rows, 100), append(units, 50)
			}
			plan := progressPlan(tasks, rows, units)
			var p *Run
			var v *vt.Terminal
			var out bytes.Buffer // not safe for concurrent use: the observer serializes its records
			if terminal {
				p, v = termProgress(t, 120, 10, plan, clock)
			} else {
				p = NewLogRun(slog.New(slog.NewJSONHandler(&out, nil)), plan, time.Second, clock.now)
			}
			p.tick = time.Microsecond // the ticker redraws too, between the calls
			p.RunStarted(&pipeline.Summary{RunID: 7}, tasks)
			results := make([]pipeline.TaskResult, len(tasks))
			var wg sync.WaitGroup
			for i := range tasks {
				wg.Go(func() {
					p.TaskStarted(i, pipeline.TaskResult{})
					res := pipeline.TaskResult{}
					for range 10 {
						clock.add(50 * time.Millisecond)
						res.Pages, res.Rows, res.Units = res.Pages+1, res.Rows+10, res.Units+5
						p.PageLoaded(i, res)
						_, _ = p.Write([]byte("a log line\n"))
					}
					p.TaskFinished(i, res)
					results[i] = res
				})
			}
			wg.Wait()
			p.RunFinished(&pipeline.Summary{RunID: 7, Tasks: results})
			if !terminal {
				require.Contains(t, out.String(), `"msg":"progress","run_id":7`)
				return
			}
			all := v.All()
			require.Equal(t, "run 7 finished: 16/16 tasks done, 1600 rows, 800 units, 200 rows/s, 100 units/s, elapsed 8s", all[len(all)-1])
			for _, l := range all[:len(all)-1] {
				require.Equal(t, "a log line", l)
			}
			require.Len(t, all, 161)
		})
	}
}

// TestProgressEscapesNames: a task whose target holds a right-to-left
// override (U+202E) is drawn with it escaped: the display drew it raw,
// and the terminal showed the rest of the line reversed.
func TestProgressEscapesNames(t *testing.T) {
	t.Parallel()
	clock := newProgressClock()
	overview, _ := catalog.Lookup("overview")
	tasks := []jobspec.Task{{Endpoint: overview, Target: &jobspec.Target{URL: "evil\u202egro.example", Scope: catalog.RootDomain}}}
	p, v := termProgress(t, 200, 24, progressPlan(tasks, []int64{10}, []int64{1}), clock)
	p.RunStarted(&pipeline.Summary{RunID: 7, Attempt: 1}, tasks)
	p.TaskStarted(0, pipeline.TaskResult{})
	clock.add(time.Second)
	p.PageLoaded(0, pipeline.TaskResult{Pages: 1, Rows: 5, Units: 1})
	screen := v.Screen()
	require.True(t, strings.HasPrefix(screen[0], `  overview evil\u202egro.example (ROOT_DOMAIN)  5/10 rows 50%`), "%q", screen)
	require.Contains(t, screen[1], "5/10 rows (50%)", "the planned task matched by its name")
	p.RunFinished(&pipeline.Summary{RunID: 7, Attempt: 1, Tasks: []pipeline.TaskResult{finished(10, 1, "", nil)}})
}
