// Package progress shows how the work of etl progresses while it runs:
// Run is the display of a run (`etl run`, `etl listings pull`, a
// backfill), a pipeline.Observer; Push that of a listings push, fed by
// push.Config.Progress. It owns what they count (this attempt's rows,
// pages and units against the plan's expectation), their rates and ETAs,
// and how they show it.
//
// Each has two forms. On a terminal, a live display redrawn in place,
// with the log lines written above it through LogWriter, the log's
// writer that a live display takes over while it is drawn; when the work
// ends it leaves one line that says how it ended. Elsewhere (a pipe, a
// file, cron), a log record "progress" with the same counts as numbers,
// at most once per interval.
//
// The clock is injected (the --now of a run pins it) and the terminal's
// size is read from the *os.File it is given; the command line only
// chooses the form and hands it the writer.
package progress
