package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/seoetl/etl/jobspec"
)

// Exit statuses: every command exits with one of these. exitStatuses
// says what each means; etl help exit-codes prints that table and docs/commands.md
// repeats it (TestExitStatusesAreDocumented compares them).
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitPartial     = 3
	exitInterrupted = 130
)

// exitStatus is one row of the table of exit statuses.
type exitStatus struct {
	Code  int
	Name  string
	Means string
}

// exitStatuses is the one table of exit statuses, for every command.
var exitStatuses = []exitStatus{
	{exitOK, "done", "the command did all it was asked."},
	{exitFailed, "failed", "the command could not do its work: the database or the API failed, every task of a run failed, a backfill does not fit a cap, no such run, push or account, or the job is running elsewhere."},
	{exitUsage, "usage", "bad flags or arguments (a --concurrency the database cannot give connections for, too), a job spec file that is missing, unreadable or invalid, or no DATABASE_URL or ETL_API_URL where one is needed; nothing was spent."},
	{exitPartial, "partial", "the command finished with work left undone: a run or backfill with failed or skipped tasks, quarantined rows, or interrupted by SIGINT/SIGTERM (the pages in flight committed; the next run resumes it); a plan whose probes failed or were stopped by a cap."},
	{exitInterrupted, "stopped", "a second SIGINT/SIGTERM stopped the command at once: pages in flight did not commit (the next run fetches them again, and the ledger keeps their units)."},
}

// exitHelp is the table of exit statuses as etl help exit-codes prints it.
func exitHelp() string {
	var b strings.Builder
	b.WriteString("Exit status (every command):")
	for _, s := range exitStatuses {
		b.WriteString("\n")
		b.WriteString(wrapHanging(fmt.Sprintf("%5d  ", s.Code), s.Name+": "+s.Means, 78))
	}
	return b.String()
}

// exitLine is the one line a command's help says about exit statuses.
func exitLine() string {
	parts := make([]string, len(exitStatuses))
	for i, s := range exitStatuses {
		parts[i] = fmt.Sprintf("%d %s", s.Code, s.Name)
	}
	return "Exit status: " + strings.Join(parts, ", ") + " (see etl help exit-codes)."
}

// wrapHanging writes prefix then text wrapped at width columns, every line
// after the first indented to the width of prefix.
func wrapHanging(prefix, text string, width int) string {
	var b strings.Builder
	b.WriteString(prefix)
	col := len(prefix)
	for i, w := range strings.Fields(text) {
		switch {
		case i > 0 && col+1+len(w) > width:
			b.WriteString("\n" + strings.Repeat(" ", len(prefix)))
			col = len(prefix)
		case i > 0:
			b.WriteString(" ")
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}

// exitError carries an exit status through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

// loadSpec reads and validates the job spec of --jobs. Every command reads
// it here, so that a file that cannot be read is a usage error (exit 2) as
// an invalid one is, whichever command reads it.
func loadSpec(path string, now time.Time) (*jobspec.Spec, error) {
	spec, err := jobspec.LoadSpec(path, now)
	var specErr *jobspec.SpecError
	switch {
	case err == nil || errors.As(err, &specErr):
		return spec, err
	case errors.Is(err, fs.ErrNotExist):
		return nil, usageError(fmt.Errorf("%w (--jobs names the job spec file; the default is jobs.yaml in the current folder)", err))
	}
	return nil, usageError(err)
}
