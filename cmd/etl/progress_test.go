package main

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/pipeline"
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
func progressTasks() []pipeline.Task {
	return []pipeline.Task{
		{Endpoint: &catalog.Endpoint{Name: "links"}, Target: &pipeline.Target{URL: "https://a.example", Scope: catalog.RootDomain}},
		{Endpoint: &catalog.Endpoint{Name: "keywords"}, Keyword: "東京 ホテル", Country: "jp",
			Month: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
	}
}

// progressPlan plans tasks with the expected rows and units given per task
// (-1: unknown).
func progressPlan(tasks []pipeline.Task, rows, units []int64) *pipeline.Plan {
	known := func(n int64) *int64 {
		if n < 0 {
			return nil
		}
		return &n
	}
	plan := &pipeline.Plan{}
	for i, t := range tasks {
		plan.Tasks = append(plan.Tasks, pipeline.TaskPlan{Task: t, Name: t.String(), Rows: known(rows[i]), Expected: known(units[i])})
	}
	return plan
}

func TestProgressPlainLines(t *testing.T) {
	t.Parallel()
	clock := newProgressClock()
	tasks := progressTasks()
	var out bytes.Buffer
	p := newProgress(&out, false, progressPlan(tasks, []int64{1000, 100}, []int64{500, 100}), 10*time.Second, clock.now)

	p.RunStarted(&pipeline.Summary{RunID: 7}, tasks)
	p.TaskStarted(0, pipeline.TaskResult{})
	p.TaskStarted(1, pipeline.TaskResult{})
	clock.add(5 * time.Second)
	p.PageLoaded(0, pipeline.TaskResult{Pages: 1, Rows: 100, Units: 50}) // not due yet
	clock.add(5 * time.Second)
	p.PageLoaded(0, pipeline.TaskResult{Pages: 2, Rows: 200, Units: 100}) // due: line 1
	p.PageLoaded(1, pipeline.TaskResult{Pages: 1, Rows: 100, Units: 100}) // at most one per 10s
	clock.add(10 * time.Second)
	p.TaskFinished(1, pipeline.TaskResult{Pages: 1, Rows: 100, Units: 100}) // due: line 2
	clock.add(3 * time.Second)
	p.TaskFinished(0, pipeline.TaskResult{Pages: 3, Rows: 250, Units: 125, Err: errors.New("boom")})
	p.RunFinished(&pipeline.Summary{RunID: 7})

	require.Equal(t, "run 7: 0/2 tasks done, 2 running, 200/1100 rows (18%), 100/600 units (16%), 20.0 rows/s, 10.0 units/s, ETA 50s, elapsed 10s\n"+
		"run 7: 1/2 tasks done, 1 running, 300/1100 rows (27%), 200/600 units (33%), 15.0 rows/s, 10.0 units/s, ETA 40s, elapsed 20s\n",
		out.String())
}

func TestProgressPlainETA(t *testing.T) {
	t.Parallel()
	tasks := progressTasks()
	other := progressTasks()
	other[0].Target = &pipeline.Target{URL: "https://b.example", Scope: catalog.RootDomain}
	tests := []struct {
		name string
		plan *pipeline.Plan
		// Task 0 starts with start, and has loaded page 10s later.
		start, page pipeline.TaskResult
		want        string
	}{{
		name: "no plan, no ETA",
		page: pipeline.TaskResult{Pages: 1, Rows: 200, Units: 100},
		want: "run 7: 0/2 tasks done, 1 running, 200 rows, 100 units, 20.0 rows/s, 10.0 units/s, elapsed 10s",
	}, {
		name: "ETA from the units rate",
		plan: progressPlan(tasks, []int64{1000, 100}, []int64{500, 100}),
		page: pipeline.TaskResult{Pages: 1, Rows: 200, Units: 100},
		want: "run 7: 0/2 tasks done, 1 running, 200/1100 rows (18%), 100/600 units (16%), 20.0 rows/s, 10.0 units/s, ETA 50s, elapsed 10s",
	}, {
		name: "ETA from the rows rate when the units are unknown",
		plan: progressPlan(tasks, []int64{1000, 100}, []int64{-1, 100}),
		page: pipeline.TaskResult{Pages: 1, Rows: 200, Units: 100},
		want: "run 7: 0/2 tasks done, 1 running, 200/1100 rows (18%), 100 units, 20.0 rows/s, 10.0 units/s, ETA 45s, elapsed 10s",
	}, {
		name: "no ETA when the plan has neither total",
		plan: progressPlan(tasks, []int64{-1, 100}, []int64{-1, 100}),
		page: pipeline.TaskResult{Pages: 1, Rows: 200, Units: 100},
		want: "run 7: 0/2 tasks done, 1 running, 200 rows, 100 units, 20.0 rows/s, 10.0 units/s, elapsed 10s",
	}, {
		name: "no rate yet",
		plan: progressPlan(tasks, []int64{1000, 100}, []int64{500, 100}),
		want: "run 7: 0/2 tasks done, 1 running, 0/1100 rows (0%), 0/600 units (0%), 0.0 rows/s, 0.0 units/s, ETA ?, elapsed 10s",
	}, {
		name: "over the plan",
		plan: progressPlan(tasks, []int64{100, 10}, []int64{50, 10}),
		page: pipeline.TaskResult{Pages: 3, Rows: 300, Units: 150},
		want: "run 7: 0/2 tasks done, 1 running, 300/110 rows (100%), 150/60 units (100%), 30.0 rows/s, 15.0 units/s, ETA ?, elapsed 10s",
	}, {
		name: "a plan of other tasks is not used",
		plan: progressPlan(other, []int64{1000, 100}, []int64{500, 100}),
		page: pipeline.TaskResult{Pages: 1, Rows: 200, Units: 100},
		want: "run 7: 0/2 tasks done, 1 running, 200 rows, 100 units, 20.0 rows/s, 10.0 units/s, elapsed 10s",
	}, {
		name:  "a resumed task's earlier rows and units are not in the rates",
		plan:  progressPlan(tasks, []int64{1000, 100}, []int64{500, 100}),
		start: pipeline.TaskResult{Pages: 5, Rows: 500, Units: 250, Resumed: true},
		page:  pipeline.TaskResult{Pages: 6, Rows: 600, Units: 300, Resumed: true},
		want:  "run 7: 0/2 tasks done, 1 running, 600/1100 rows (54%), 300/600 units (50%), 10.0 rows/s, 5.0 units/s, ETA 1m0s, elapsed 10s",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newProgressClock()
			var out bytes.Buffer
			p := newProgress(&out, false, tt.plan, 10*time.Second, clock.now)
			p.RunStarted(&pipeline.Summary{RunID: 7}, tasks)
			p.TaskStarted(0, tt.start)
			clock.add(10 * time.Second)
			p.PageLoaded(0, tt.page)
			p.RunFinished(&pipeline.Summary{RunID: 7})
			require.Equal(t, tt.want+"\n", out.String())
		})
	}
}

// screen is what a terminal shows after the output it was sent, for the
// escape codes the live display uses: \r, \n, ESC[nA (cursor up) and ESC[J
// (clear to the end of the screen).
func screen(t *testing.T, out string) []string {
	t.Helper()
	var lines []string
	row := 0
	for len(out) > 0 {
		switch {
		case out[0] == '\r':
			out = out[1:]
		case out[0] == '\n':
			row++
			out = out[1:]
		case strings.HasPrefix(out, "\x1b[J"):
			lines = lines[:min(row, len(lines))]
			out = out[3:]
		case strings.HasPrefix(out, "\x1b["):
			end := strings.IndexByte(out, 'A')
			require.Positive(t, end, "an escape code other than cursor up: %q", out)
			n, err := strconv.Atoi(out[2:end])
			require.NoError(t, err)
			row -= n
			require.GreaterOrEqual(t, row, 0, "the cursor left the screen")
			out = out[end+1:]
		default:
			end := strings.IndexAny(out, "\r\n\x1b")
			if end < 0 {
				end = len(out)
			}
			for len(lines) <= row {
				lines = append(lines, "")
			}
			lines[row] += out[:end]
			out = out[end:]
		}
	}
	return lines
}

func TestProgressTerminal(t *testing.T) {
	t.Parallel()
	clock := newProgressClock()
	tasks := progressTasks()
	var out bytes.Buffer
	p := newProgress(&out, true, progressPlan(tasks, []int64{1000, 100}, []int64{500, 100}), 0, clock.now)
	p.tick = time.Hour // only the observer calls redraw, on the fake clock

	p.RunStarted(&pipeline.Summary{RunID: 7}, tasks)
	require.Equal(t, []string{
		"run 7: 0/2 tasks done, 0/1100 rows (0%), 0/600 units (0%), ETA ?, elapsed 0s",
	}, screen(t, out.String()))

	p.TaskStarted(0, pipeline.TaskResult{})
	p.TaskStarted(1, pipeline.TaskResult{})
	clock.add(time.Second)
	p.PageLoaded(0, pipeline.TaskResult{Pages: 1, Rows: 250, Units: 125})
	require.Equal(t, []string{
		`  links https://a.example (ROOT_DOMAIN)  250/1000 rows 25%  1 page  125 units  ETA 3s`,
		`  keywords "東京 ホテル" jp 2026-11      0/100 rows 0%  0 pages  0 units  ETA ?`,
		"run 7: 0/2 tasks done, 2 running, 250/1100 rows (22%), 125/600 units (20%), 250 rows/s, 125 units/s, ETA 4s, elapsed 1s",
	}, screen(t, out.String()))

	clock.add(time.Second)
	p.TaskFinished(0, pipeline.TaskResult{Pages: 4, Rows: 1000, Units: 500})
	require.Equal(t, []string{
		`  keywords "東京 ホテル" jp 2026-11  0/100 rows 0%  0 pages  0 units  ETA ?`,
		"run 7: 1/2 tasks done, 1 running, 1000/1100 rows (90%), 500/600 units (83%), 500 rows/s, 250 units/s, ETA <1s, elapsed 2s",
	}, screen(t, out.String()))

	p.PageLoaded(1, pipeline.TaskResult{Pages: 1, Rows: 50, Units: 50}) // not redrawn: drawn less than 200ms ago
	require.NotContains(t, screen(t, out.String())[0], "50/100 rows")

	clock.add(time.Second)
	p.TaskFinished(1, pipeline.TaskResult{Pages: 1, Rows: 50, Units: 50, Skipped: "the daily cap is reached"})
	p.RunFinished(&pipeline.Summary{RunID: 7})
	require.Equal(t, []string{
		"run 7 finished: 2/2 tasks done, 1 skipped, 1050/1100 rows (95%), 550/600 units (91%), 350 rows/s, 183 units/s, elapsed 3s",
	}, screen(t, out.String()))
	require.Contains(t, out.String(), "\r\x1b[3A\x1b[J", "redrawn in place over the three lines drawn before")
}

func TestProgressTerminalFitsTheScreen(t *testing.T) {
	t.Parallel()
	keyword := &catalog.Endpoint{Name: "keywords"}
	var tasks []pipeline.Task
	for i := range 6 {
		tasks = append(tasks, pipeline.Task{Endpoint: keyword, Keyword: fmt.Sprintf("東京 ホテル 安い %d", i), Country: "jp",
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
			"run 7: 0/6 tasks done, 6 running, 10 rows, 10 units, 10.0 rows/s, 10.0 units/s, elapsed 1s",
		},
	}, {
		name: "narrow and short: lines cut, tasks counted",
		cols: 30, rows: 5,
		want: []string{
			`  keywords "東京   10 rows  1`,
			`  keywords "東京   0 rows  0 `,
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
			var out bytes.Buffer
			p := newProgress(&out, true, nil, 0, clock.now)
			p.size = func() (int, int) { return tt.cols, tt.rows }
			p.RunStarted(&pipeline.Summary{RunID: 7}, tasks)
			for i := range tasks {
				p.TaskStarted(i, pipeline.TaskResult{})
			}
			clock.add(time.Second)
			p.PageLoaded(0, pipeline.TaskResult{Pages: 1, Rows: 10, Units: 10})
			got := screen(t, out.String())
			require.Equal(t, tt.want, got)
			for _, l := range got {
				require.Less(t, displayColumns(l), tt.cols, "%q wraps", l)
			}
			p.RunFinished(&pipeline.Summary{RunID: 7})
		})
	}
}

func TestProgressWriteKeepsLogsAboveTheDisplay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		terminal bool
		want     []string
	}{{
		name:     "terminal",
		terminal: true,
		want: []string{
			"level=INFO msg=first",
			"level=INFO msg=second",
			"  links https://a.example (ROOT_DOMAIN)  0 rows  0 pages  0 units",
			"run 7: 0/2 tasks done, 1 running, 0 rows, 0 units, 0.0 rows/s, 0.0 units/s, elapsed 1s",
		},
	}, {
		name: "plain",
		want: []string{"level=INFO msg=first", "level=INFO msg=second"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newProgressClock()
			var out bytes.Buffer
			p := newProgress(&out, tt.terminal, nil, 0, clock.now)
			p.RunStarted(&pipeline.Summary{RunID: 7}, progressTasks())
			clock.add(time.Second)
			p.TaskStarted(0, pipeline.TaskResult{})
			_, err := p.Write([]byte("level=INFO msg=first\n"))
			require.NoError(t, err)
			_, err = p.Write([]byte("level=INFO msg=second")) // no newline: one is added
			require.NoError(t, err)
			require.Equal(t, tt.want, screen(t, out.String()))
			p.RunFinished(&pipeline.Summary{RunID: 7})
		})
	}
}

func TestProgressIdle(t *testing.T) {
	t.Parallel()
	for _, terminal := range []bool{false, true} {
		t.Run(fmt.Sprintf("terminal=%v", terminal), func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			p := newProgress(&out, terminal, nil, 0, newProgressClock().now)
			p.PageLoaded(3, pipeline.TaskResult{Rows: 1}) // before RunStarted: ignored
			p.RunFinished(&pipeline.Summary{})            // without RunStarted: no ticker to stop, nothing to say
			require.Empty(t, out.String())
		})
	}
}

// TestProgressConcurrent calls the observer as the runner does, from many
// goroutines at once; run with -race. TestMain checks that no goroutine
// (the live display's ticker) outlives the run.
func TestProgressConcurrent(t *testing.T) {
	t.Parallel()
	for _, terminal := range []bool{false, true} {
		t.Run(fmt.Sprintf("terminal=%v", terminal), func(t *testing.T) {
			t.Parallel()
			clock := newProgressClock()
			links := &catalog.Endpoint{Name: "links"}
			var tasks []pipeline.Task
			var rows, units []int64
			for i := range 16 {
				tasks = append(tasks, pipeline.Task{Endpoint: links, Target: &pipeline.Target{URL: fmt.Sprintf("https://%d.example", i), Scope: catalog.RootDomain}})
				rows, units = append(rows, 100), append(units, 50)
			}
			var out bytes.Buffer // not safe for concurrent use: the observer serializes its writes
			p := newProgress(&out, terminal, progressPlan(tasks, rows, units), time.Second, clock.now)
			p.tick = time.Microsecond // the ticker redraws too, between the calls
			p.RunStarted(&pipeline.Summary{RunID: 7}, tasks)
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
				})
			}
			wg.Wait()
			p.RunFinished(&pipeline.Summary{RunID: 7})
			if terminal {
				require.Equal(t, "run 7 finished: 16/16 tasks done, 1600/1600 rows (100%), 800/800 units (100%), 200 rows/s, 100 units/s, elapsed 8s",
					screen(t, out.String())[160])
			} else {
				require.Contains(t, out.String(), "run 7: ")
				require.NotContains(t, out.String(), "\x1b")
			}
		})
	}
}
