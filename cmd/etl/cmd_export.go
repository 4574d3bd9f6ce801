package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seoetl/etl/export"
	"github.com/seoetl/etl/jobspec"
)

// exportOptions are the flags of `etl export`.
type exportOptions struct {
	to           string
	tables       []string
	since, until string
	files        bool
	databaseURL  string
	now          string
	rowGroupRows int
	fetchRows    int
}

func newExportCmd(e *env) *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export --to DIR [--tables T,...] [--since YYYY-MM] [--until YYYY-MM]",
		Short: "Write the warehouse to Parquet files that DuckDB, Spark or Trino read",
		Long: `Write the fact tables, and the dimensions needed to read them (targets,
target_sets, target_set_members), to a lake of Parquet files in DIR: a
folder per table and, below a fact table, a Hive-style folder per
partition of the warehouse (backlinks/month=2026-11-01/part-0.parquet;
the tables partitioned by year: backlink_overview/year=2026/...), so that
engines prune by folder. Files are zstd-compressed, carry column
statistics, the warehouse's column comments and UTC timestamps, and each
table folder has a manifest (_manifest.json: files, rows, SHA-256).

The export is incremental: a partition whose rows have not changed since
its last export to DIR (recorded in the warehouse, table export_files) is
not written again. It is atomic: each file is written under a temporary
name and renamed into place, so a reader never sees half a file, and an
export that was killed leaves nothing the next one does not remove. The
same rows make the same bytes. Files are made as cp makes them (mode 0666
less the umask), so readers running as other users can read the lake.
DIR is known by its real path (symbolic links resolved): two exports to
one folder never run at once, however they name it. An export that fails
prints only what it wrote before the error (which stays, and is not
written again); a --to that is a file, or --until before --since, is a
usage error (exit 2).

--tables picks tables (default all); --since and --until pick the
partitions holding those months (inclusive). The dimensions are always
written whole. docs/lake.md shows how to query the lake with DuckDB.

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.export(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "the lake's folder (required); made when missing")
	f.StringSliceVar(&o.tables, "tables", nil, "tables to export, comma-separated (default every fact table and the dimensions)")
	f.StringVar(&o.since, "since", "", "first month whose partitions are exported, YYYY-MM (default the oldest)")
	f.StringVar(&o.until, "until", "", "last month whose partitions are exported, YYYY-MM (default the newest)")
	f.BoolVar(&o.files, "files", false, "list every file written, not only a line per table")
	f.StringVar(&o.databaseURL, "database-url", "", "warehouse connection URL (default $DATABASE_URL)")
	f.StringVar(&o.now, "now", "", "pin the current time (RFC 3339 or YYYY-MM-DD)")
	_ = f.MarkHidden("now")
	f.IntVar(&o.rowGroupRows, "row-group-rows", 0, "rows per Parquet row group (default 16384)")
	_ = f.MarkHidden("row-group-rows")
	f.IntVar(&o.fetchRows, "fetch-rows", 0, "rows per FETCH from the warehouse's cursor (default 8192)")
	_ = f.MarkHidden("fetch-rows")
	return cmd
}

func (e *env) export(ctx context.Context, o exportOptions) error {
	if o.to == "" {
		return usageError(fmt.Errorf("--to is required: the folder to write the lake to"))
	}
	clock := runOptions{now: o.now}
	now, err := clock.clock()
	if err != nil {
		return err
	}
	opts := export.Options{Dir: o.to, Tables: o.tables}
	for _, m := range []struct {
		name, v string
		dst     *time.Time
	}{{"--since", o.since, &opts.Since}, {"--until", o.until, &opts.Until}} {
		if m.v == "" {
			continue
		}
		if *m.dst, err = time.Parse("2006-01", m.v); err != nil {
			return usageError(fmt.Errorf("%s %s: want a month, YYYY-MM", m.name, jobspec.Quote(m.v)))
		}
	}
	if !opts.Since.IsZero() && !opts.Until.IsZero() && opts.Until.Before(opts.Since) {
		return usageError(fmt.Errorf("--until %s is before --since %s", o.until, o.since))
	}
	if o.rowGroupRows < 0 || o.fetchRows < 0 {
		return usageError(fmt.Errorf("--row-group-rows and --fetch-rows must be at least 1, got %d and %d", o.rowGroupRows, o.fetchRows))
	}
	for _, t := range o.tables {
		if !slices.Contains(export.Tables(), t) {
			return usageError(fmt.Errorf("--tables: unknown table %s (known: %s)", jobspec.Quote(t), strings.Join(export.Tables(), ", ")))
		}
	}
	if _, err := export.ResolveDir(o.to); err != nil {
		var nf *export.NotAFolderError
		if errors.As(err, &nf) {
			if nf.File == nf.Dir {
				return usageError(fmt.Errorf("--to %s is not a folder", jobspec.Quote(nf.Dir)))
			}
			return usageError(fmt.Errorf("--to %s is not a folder: %s is a file", jobspec.Quote(nf.Dir), jobspec.Quote(nf.File)))
		}
		return err
	}
	pool, err := e.connect(ctx, o.databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	x, err := export.New(export.Config{Pool: pool, Logger: e.log, Now: now, RowGroupRows: o.rowGroupRows, FetchRows: o.fetchRows})
	if err != nil {
		return err
	}
	defer exportMemoryLimit(e.getenv)()
	rep, err := x.Export(ctx, opts)
	if err != nil {
		// What was written before the error stays (recorded, and not
		// written again by the next export): say so, and nothing else.
		if n, _, _, _ := rep.Totals(); n > 0 {
			_, _ = io.WriteString(e.stdout, exportSummary(rep, o.files, true))
		}
		return err
	}
	_, _ = io.WriteString(e.stdout, exportSummary(rep, o.files, false))
	return nil
}

// exportHeapLimit is the Go heap's soft limit during etl export, unless
// GOMEMLIMIT sets one. arrow/go v15's zstd codec makes a new encoder, with
// a 16 MiB window, for every Parquet page it compresses: that garbage,
// with the collector's default headroom (GOGC=100), took an export's peak
// RSS to 150-270 MB whatever its row groups. Under the limit the
// collector runs once a page or two instead, which costs CPU (etl's CPU
// about 16 s a million links on the bench's busy machine, against 5 to
// 6 s without) and keeps the peak RSS under 100 MB, flat in rows
// (docs/performance.md).
const exportHeapLimit = 40 << 20

// exportMemoryLimit sets exportHeapLimit unless GOMEMLIMIT or another
// export (in the same process: tests) set a limit already, and returns
// what puts the limit back.
func exportMemoryLimit(getenv func(string) string) func() {
	if getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return func() {}
	}
	debug.SetMemoryLimit(exportHeapLimit)
	return func() { debug.SetMemoryLimit(math.MaxInt64) }
}

// exportSummary is what etl export prints: a total first, then a line per
// table with data, the tables without in one line, and with files every
// file written. Of a failed export (failed) it prints only what was
// written before the error: the tables it wrote no file of are not
// known to be empty.
func exportSummary(rep export.Report, files, failed bool) string {
	var b strings.Builder
	n, rows, size, unchanged := rep.Totals()
	if failed {
		fmt.Fprintf(&b, "export to %s failed after %s written (%s, %s), %s unchanged\n",
			jobspec.Quote(rep.Dir), pluralize(n, "file"), pluralize(int(rows), "row"), byteSize(size), pluralize(unchanged, "partition"))
	} else {
		fmt.Fprintf(&b, "exported to %s: %s written (%s, %s), %s unchanged\n",
			jobspec.Quote(rep.Dir), pluralize(n, "file"), pluralize(int(rows), "row"), byteSize(size), pluralize(unchanged, "partition"))
	}
	if rep.TempRemoved > 0 {
		fmt.Fprintf(&b, "removed %s an interrupted export left\n", pluralize(rep.TempRemoved, "temporary file"))
	}
	var empty []string
	for _, t := range rep.Tables {
		if len(t.Written) == 0 && t.Unchanged == 0 {
			if !failed {
				empty = append(empty, t.Table)
			}
			continue
		}
		if failed && len(t.Written) == 0 {
			continue
		}
		var tr, tb int64
		for _, f := range t.Written {
			tr += f.Rows
			tb += f.Bytes
		}
		fmt.Fprintf(&b, "  %s: %d written (%s, %s), %d unchanged\n", t.Table, len(t.Written), pluralize(int(tr), "row"), byteSize(tb), t.Unchanged)
		if files {
			for _, f := range t.Written {
				fmt.Fprintf(&b, "    %s  %s  %s\n", f.Path, pluralize(int(f.Rows), "row"), byteSize(f.Bytes))
			}
		}
	}
	if len(empty) > 0 {
		fmt.Fprintf(&b, "  no rows yet: %s\n", strings.Join(empty, ", "))
	}
	return b.String()
}

// byteSize shows n bytes in B, kB, MB or GB (powers of 1000).
func byteSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1000*1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(n)/1e9)
}

// pluralize is "n word" or "n words".
func pluralize(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
