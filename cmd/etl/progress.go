package main

import (
	"os"
	"time"

	"golang.org/x/term"

	"github.com/seoetl/etl/pipeline"
	"github.com/seoetl/etl/planning"
	"github.com/seoetl/etl/progress"
)

// The progress displays of a run and of a push: which one (a live
// display on a terminal, log records elsewhere) and where it writes.

// runProgress is the progress display of one run, and how to end it.
type runProgress struct {
	observer pipeline.Observer
	close    func()
}

// progress shows how a run progresses: on a terminal (stderr), a live
// display with the log lines written above it; otherwise a log record
// "progress" at most every 10 seconds. Percentages and ETAs come from
// plan (nil: none).
func (e *env) progress(plan *planning.Plan) runProgress {
	if f := e.terminal(); f != nil {
		p := progress.NewTermRun(f, plan, time.Now)
		restore := e.logOut.Swap(p)
		return runProgress{observer: p, close: restore}
	}
	return runProgress{observer: progress.NewLogRun(e.log, plan, 0, time.Now), close: func() {}}
}

// pushProgress returns the progress display of a push of account: on a
// terminal (stderr), a live line with the log lines written above it;
// otherwise a log record "progress" when it is planned and at most every
// 10 seconds. The returned func ends it.
func (e *env) pushProgress(account string) (*progress.Push, func()) {
	if f := e.terminal(); f != nil {
		p := progress.NewTermPush(f, account, time.Now)
		restore := e.logOut.Swap(p)
		return p, func() { p.Halt(); restore() }
	}
	p := progress.NewLogPush(e.log, account, 0, time.Now)
	return p, p.Halt
}

// terminal is stderr when it is a terminal, where a live display goes;
// nil otherwise.
func (e *env) terminal() *os.File {
	if f, ok := e.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}
