package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/export"
)

// armExport is the export arm: `etl export` (bin/etl, a process of its
// own) of a month of N links, then of 4N (unless BENCH_RSS4=0), from the
// backlinks table to Parquet; rows/s, peak RSS and the size of the file
// against the CSV's.
const armExport = "X"

// exportReport is the export arm's result.
type exportReport struct {
	Runs []exportRun `json:"runs"`
	// RSSRatio is the peak RSS at 4N over that at N.
	RSSRatio float64 `json:"rss_4n_over_n,omitempty"`
}

// exportRun is one `etl export` of a month of links.
type exportRun struct {
	Rows         int64   `json:"rows"`
	Seconds      float64 `json:"seconds"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	RowsPerSec   float64 `json:"rows_per_sec"`
	PeakRSSMB    float64 `json:"peak_rss_mb"`
	ParquetBytes int64   `json:"parquet_bytes"`
	CSVBytes     int64   `json:"csv_bytes"`
	BytesPerRow  float64 `json:"bytes_per_row"`
	// OfCSV is the Parquet file's size over the CSV's.
	OfCSV float64 `json:"of_csv"`
}

// exportNote explains the export arm in the report.
const exportNote = "X: the links CSV loaded into an empty backlinks table by P1 (untimed), then `etl export --to DIR --tables backlinks` timed once in a process of its own (peak RSS from wait4): one month partition, one file, zstd, row groups of 131072 rows; checked: the manifest counts every row"

// exportArm runs the export arm at N rows, and at 4N when asked.
func (e *env) exportArm(ctx context.Context) (*exportReport, error) {
	rep := &exportReport{}
	sizes := []int{e.cfg.rows}
	if e.cfg.rss4 {
		sizes = append(sizes, 4*e.cfg.rows)
	}
	for _, n := range sizes {
		csv := e.csv
		if n != e.cfg.rows {
			var err error
			if csv, err = e.saveCSV(ctx, n); err != nil {
				return nil, err
			}
		}
		run, err := e.exportRows(ctx, csv, n)
		if csv.path != e.csv.path {
			_ = os.Remove(csv.path)
		}
		if err != nil {
			return nil, fmt.Errorf("arm X at %d rows: %w", n, err)
		}
		rep.Runs = append(rep.Runs, run)
	}
	if len(rep.Runs) == 2 {
		rep.RSSRatio = finite(ratio(rep.Runs[1].PeakRSSMB, rep.Runs[0].PeakRSSMB))
	}
	return rep, nil
}

// exportRows loads csv (the n links of n<n>.example) into an empty
// backlinks table and times `etl export` of it.
func (e *env) exportRows(ctx context.Context, csv savedCSV, n int) (exportRun, error) {
	target, err := e.loader.Target(ctx, targetURL(n), catalog.RootDomain)
	if err != nil {
		return exportRun{}, err
	}
	if err := e.resetting("TRUNCATE backlinks")(ctx); err != nil {
		return exportRun{}, err
	}
	if _, err := e.runChild(ctx, csv.path, target, nil); err != nil {
		return exportRun{}, err
	}
	if err := e.checkCount(ctx, "backlinks", csv.rows); err != nil {
		return exportRun{}, fmt.Errorf("WRONG RESULT: %w", err)
	}
	if err := e.resetting("VACUUM ANALYZE backlinks")(ctx); err != nil {
		return exportRun{}, err
	}
	dir, err := os.MkdirTemp(e.dir, "lake-")
	if err != nil {
		return exportRun{}, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, e.cfg.etl, "export", "--to", dir, "--tables", "backlinks", "--now", now)
	cmd.Env = append(withoutEnv("PG", "DATABASE_URL=", "ETL_"), "DATABASE_URL="+e.dbURL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	u, err := runMeasured(cmd, e.dir)
	r := exportRun{Rows: csv.rows, Seconds: u.Seconds, CPUSeconds: u.CPUSeconds, CSVBytes: csv.bytes}
	if err != nil {
		return r, fmt.Errorf("etl export: %w\n%s\n%s", err, tail(stdout.String(), 10), tail(stderr.String(), 10))
	}
	r.PeakRSSMB = u.PeakRSSMB
	var m export.Manifest
	data, err := os.ReadFile(filepath.Join(dir, "backlinks", export.ManifestName))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return r, err
	}
	if m.Rows != csv.rows {
		return r, fmt.Errorf("WRONG RESULT: the manifest counts %d rows, want %d", m.Rows, csv.rows)
	}
	for _, f := range m.Files {
		r.ParquetBytes += f.Bytes
	}
	r.RowsPerSec = finite(float64(r.Rows) / r.Seconds)
	r.BytesPerRow = finite(float64(r.ParquetBytes) / float64(r.Rows))
	r.OfCSV = finite(ratio(float64(r.ParquetBytes), float64(r.CSVBytes)))
	e.log.LogAttrs(ctx, slog.LevelInfo, "arm done", slog.String("arm", armExport), slog.Int64("rows", r.Rows),
		slog.Float64("seconds", round3(r.Seconds)), slog.Float64("rows/s", round3(r.RowsPerSec)),
		slog.Float64("peak_rss_mb", round3(r.PeakRSSMB)), slog.Int64("parquet_bytes", r.ParquetBytes))
	_, err = e.pool.Exec(ctx, "TRUNCATE backlinks")
	return r, err
}

func (x *exportReport) print(w io.Writer) {
	if x == nil {
		return
	}
	fmt.Fprintf(w, "\nexport (X): etl export of a month of links to Parquet (zstd), one run each:\n")
	for _, r := range x.Runs {
		fmt.Fprintf(w, "  %9d rows: %.2f s (etl's CPU %.2f s), %.0f rows/s, peak RSS %.1f MB; %.1f MB of Parquet, %.1f bytes a row, %.1f%% of the CSV's %.1f MB\n",
			r.Rows, r.Seconds, r.CPUSeconds, r.RowsPerSec, r.PeakRSSMB, float64(r.ParquetBytes)/1e6, r.BytesPerRow, 100*r.OfCSV, float64(r.CSVBytes)/1e6)
	}
	if x.RSSRatio > 0 {
		fmt.Fprintf(w, "  peak RSS at 4N over N: %.2f\n", x.RSSRatio)
	}
}
