package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/load"
)

// Config configures an Exporter.
type Config struct {
	// Pool connects to the warehouse (required).
	Pool *pgxpool.Pool
	// Logger receives a line per file written (Info) and per batch
	// (Debug); default discards.
	Logger *slog.Logger
	// Now is the clock that stamps export_files.exported_at; default
	// time.Now.
	Now func() time.Time
	// RowGroupRows is the most rows of one Parquet row group. Default
	// 16384 (16 Ki), some 5 MB of links as Arrow arrays, which is what an
	// export holds of a partition (a row group's rows, then one column's
	// encoder at a time): large enough for the column statistics and
	// compression to pay (the links of make bench: 34.7 bytes a row,
	// against 34.4 in row groups of 32768 and 34.3 of 131072), small
	// enough for etl export's peak RSS to stay under 100 MB, flat in rows
	// (32768: 89 MB at 200,000 links, 106 MB at 800,000). At least 1.
	RowGroupRows int
	// FetchRows is how many rows each FETCH from the server-side cursor
	// reads, one Arrow record. Default 8192. At least 1.
	FetchRows int
	// Allocator is the Arrow allocator; default memory.DefaultAllocator.
	Allocator memory.Allocator
}

const (
	defaultRowGroupRows = 16 << 10
	defaultFetchRows    = 8192
)

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.RowGroupRows == 0 {
		c.RowGroupRows = defaultRowGroupRows
	}
	if c.FetchRows == 0 {
		c.FetchRows = defaultFetchRows
	}
	if c.Allocator == nil {
		c.Allocator = memory.DefaultAllocator
	}
	return c
}

func (c Config) validate() error {
	if c.Pool == nil {
		return errors.New("export: Config.Pool is nil")
	}
	if c.RowGroupRows < 1 {
		return fmt.Errorf("export: row group rows must be at least 1, got %d", c.RowGroupRows)
	}
	if c.FetchRows < 1 {
		return fmt.Errorf("export: fetch rows must be at least 1, got %d", c.FetchRows)
	}
	return nil
}

// Exporter writes the warehouse to Parquet. It is safe for concurrent use;
// two exports to one folder run one after the other (an advisory lock on
// the folder's real path, so also when one reaches it through a symbolic
// link).
type Exporter struct {
	cfg Config
	w   *writer
}

// New returns an Exporter.
func New(cfg Config) (*Exporter, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Exporter{cfg: cfg, w: &writer{rowGroupRows: cfg.RowGroupRows, fetchRows: cfg.FetchRows, mem: cfg.Allocator, logger: cfg.Logger}}, nil
}

// Options say what one export writes.
type Options struct {
	// Dir is the lake's folder (required); made when missing. It is
	// known by its real path (ResolveDir): the Report, the lock and
	// export_files name that.
	Dir string
	// Tables are the tables to export; default Tables().
	Tables []string
	// Since and Until bound the partitions exported by month: a
	// partition is exported when its range holds a month from Since to
	// Until (both first days of a month, inclusive). Zero: unbounded. The
	// dimensions are always exported whole.
	Since, Until time.Time
}

func (o *Options) validate() error {
	dir, err := ResolveDir(o.Dir)
	if err != nil {
		return err
	}
	o.Dir = dir
	all := Tables()
	if len(o.Tables) == 0 {
		o.Tables = all
	}
	for _, t := range o.Tables {
		if !slices.Contains(all, t) {
			return &UnknownTableError{Table: t, Known: all}
		}
	}
	if !o.Since.IsZero() && !o.Until.IsZero() && o.Until.Before(o.Since) {
		return fmt.Errorf("export: until (%s) is before since (%s)", o.Until.Format("2006-01"), o.Since.Format("2006-01"))
	}
	return nil
}

// UnknownTableError is an export asked for a table it does not know.
type UnknownTableError struct {
	Table string
	Known []string
}

func (e *UnknownTableError) Error() string {
	return fmt.Sprintf("export: unknown table %q (known: %s)", e.Table, strings.Join(e.Known, ", "))
}

// Report says what an export wrote.
type Report struct {
	// Dir is the lake's folder: its real path, absolute, with symbolic
	// links resolved.
	Dir string
	// Tables has a line per table exported, in the order asked.
	Tables []TableReport
	// TempRemoved counts the temporary files of a killed export removed.
	TempRemoved int
}

// TableReport is what an export did to one table.
type TableReport struct {
	Table string
	// Written are the files written, oldest partition first.
	Written []File
	// Unchanged counts the partitions not written again: unchanged since
	// their last export, and their file still there.
	Unchanged int
}

// File is one Parquet file of the lake.
type File struct {
	// Path is relative to the table's folder: month=2026-11-01/part-0.parquet.
	Path string `json:"path"`
	// Partition is the warehouse partition (or the dimension) it holds.
	Partition string `json:"partition"`
	Rows      int64  `json:"rows"`
	Bytes     int64  `json:"bytes"`
	SHA256    string `json:"sha256"`
	// ExportedAt is when it was written.
	ExportedAt time.Time `json:"exported_at"`
}

// Totals sums the report: files written, their rows and bytes, and
// partitions unchanged.
func (r Report) Totals() (files int, rows, bytes int64, unchanged int) {
	for _, t := range r.Tables {
		files += len(t.Written)
		unchanged += t.Unchanged
		for _, f := range t.Written {
			rows += f.Rows
			bytes += f.Bytes
		}
	}
	return files, rows, bytes, unchanged
}

// Export writes the tables of opts to opts.Dir: each partition whose rows
// changed since its last export to this folder (or that was never
// exported there, or whose file is gone), then the table's manifest.
// Partitions are exported one transaction each (REPEATABLE READ, so the
// fingerprint recorded is that of the rows written). Temporary files of a
// killed export are removed first. On an error the export stops; what it
// wrote so far stays, recorded, and the next export goes on from there.
func (x *Exporter) Export(ctx context.Context, opts Options) (Report, error) {
	if err := opts.validate(); err != nil {
		return Report{}, err
	}
	rep := Report{Dir: opts.Dir}
	conn, err := x.cfg.Pool.Acquire(ctx)
	if err != nil {
		return rep, fmt.Errorf("export: %w", err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, lockKey(opts.Dir)).Scan(&locked); err != nil {
		return rep, fmt.Errorf("export: lock: %w", err)
	}
	if !locked {
		return rep, fmt.Errorf("export: another export to %q is running (or retention is exporting there); try again when it ends", opts.Dir)
	}
	defer func() {
		// A session lock outlives a failed statement; unlock on a fresh
		// context so a canceled export never keeps it on a pooled
		// connection.
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, lockKey(opts.Dir))
	}()
	// The folder is made only now, under the lock on its real name.
	if err := mkdirAll(opts.Dir); err != nil {
		return rep, fmt.Errorf("export: %w", quotedPathError(err))
	}
	if rep.TempRemoved, err = removeAllTemps(opts.Dir); err != nil {
		return rep, fmt.Errorf("export: removing the temporary files of an earlier export: %w", quotedPathError(err))
	}
	for _, table := range opts.Tables {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("export stopped: %w", err)
		}
		tr := TableReport{Table: table}
		var parts []partition
		var t *tableInfo
		err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			var err error
			if t, err = loadTable(ctx, tx, table); err != nil {
				return err
			}
			parts, err = partitions(ctx, tx, t)
			return err
		})
		if err != nil {
			return rep, err
		}
		for _, p := range parts {
			if !p.overlaps(opts.Since, opts.Until) {
				continue
			}
			var f File
			var wrote bool
			err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
				var err error
				f, wrote, err = x.exportPart(ctx, tx, opts.Dir, t, p)
				return err
			})
			if err != nil {
				rep.Tables = append(rep.Tables, tr)
				return rep, err
			}
			if wrote {
				tr.Written = append(tr.Written, f)
			} else {
				tr.Unchanged++
			}
		}
		rep.Tables = append(rep.Tables, tr)
		err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			return writeManifest(ctx, tx, opts.Dir, t)
		})
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func lockKey(dir string) string { return "etl export " + dir }

// removeAllTemps removes the temporary files a killed export left in the
// table folders under dest (only those: dest may hold other things).
func removeAllTemps(dest string) (int, error) {
	total := 0
	for _, table := range Tables() {
		n, err := removeTemps(filepath.Join(dest, table))
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// overlaps reports whether p holds a month from since to until (zero:
// unbounded); a dimension always does.
func (p partition) overlaps(since, until time.Time) bool {
	if p.folder == "" {
		return true
	}
	if !since.IsZero() && !p.to.After(load.MonthStart(since)) {
		return false
	}
	if !until.IsZero() && !p.from.Before(load.MonthStart(until).AddDate(0, 1, 0)) {
		return false
	}
	return true
}

// exportPart writes p's file unless its last export to dest holds the
// same rows and its file is still there; it records what it wrote in
// export_files, in tx.
func (x *Exporter) exportPart(ctx context.Context, tx pgx.Tx, dest string, t *tableInfo, p partition) (File, bool, error) {
	var fp string
	if err := tx.QueryRow(ctx, fingerprintSQL(t, p)).Scan(&fp); err != nil {
		return File{}, false, fmt.Errorf("export %s: %w", p.name, err)
	}
	f := File{Path: p.file(), Partition: p.name}
	path := filepath.Join(dest, t.name, filepath.FromSlash(f.Path))
	var prevFP string
	err := tx.QueryRow(ctx, `SELECT fingerprint, bytes FROM export_files WHERE dest = $1 AND table_name = $2 AND partition = $3`,
		dest, t.name, p.folder).Scan(&prevFP, &f.Bytes)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return File{}, false, fmt.Errorf("export %s: %w", p.name, err)
	case prevFP == fp:
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() == f.Bytes {
			return f, false, nil
		}
	}
	w, err := x.w.writeParquet(ctx, tx, t, p, path)
	if err != nil {
		return File{}, false, err
	}
	f.Rows, f.Bytes, f.SHA256, f.ExportedAt = w.rows, w.bytes, w.sha256, x.cfg.Now().UTC()
	_, err = tx.Exec(ctx, `
		INSERT INTO export_files (dest, table_name, partition, file, rows, bytes, sha256, fingerprint, exported_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (dest, table_name, partition) DO UPDATE SET file = excluded.file, rows = excluded.rows,
			bytes = excluded.bytes, sha256 = excluded.sha256, fingerprint = excluded.fingerprint, exported_at = excluded.exported_at`,
		dest, t.name, p.folder, f.Path, f.Rows, f.Bytes, f.SHA256, fp, f.ExportedAt)
	if err != nil {
		return File{}, false, fmt.Errorf("export %s: recording the file: %w", p.name, err)
	}
	x.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "export: file written", slog.String("table", t.name),
		slog.String("file", f.Path), slog.Int64("rows", f.Rows), slog.Int64("bytes", f.Bytes))
	return f, true, nil
}

// fingerprintSQL is the query of what p holds, compared with what it held
// at its last export. A fact partition's is its row count, the sum of its
// rows' creating transaction ids (xmin) and its newest observed_at: a row
// version a later transaction writes has a higher id than every row it
// replaces or outnumbers, so an insert, an update and a delete each
// change the count or the sum (the ids are 32 bits and wrap after some
// four billion transactions; observed_at, which the loader sets on every
// row it writes or changes, covers that), and the loader rewrites only the
// rows that changed, so reading the ids is enough: no row is turned to
// text. A
// dimension's is its count and the md5 of its rows' text in key order:
// runs upsert their targets and sets again, which makes new row versions
// of the same values, and a dimension is small.
func fingerprintSQL(t *tableInfo, p partition) string {
	rel := pgx.Identifier{p.name}.Sanitize()
	if t.ep != nil {
		return fmt.Sprintf(`SELECT count(*)::text || ':' || coalesce(sum(xmin::text::bigint), 0)::text || ':' || coalesce((extract(epoch FROM max(observed_at)) * 1000000)::bigint, 0)::text FROM %s`, rel)
	}
	return fmt.Sprintf(`SELECT count(*)::text || ':' || md5(coalesce(string_agg(r::text, E'\n' ORDER BY %s), '')) FROM %s r`,
		strings.Join(prefixedAll("r.", quoteAll(t.order)), ", "), rel)
}

func prefixedAll(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// Manifest is the _manifest.json of a table's folder: every file of the
// table in the lake, also those of partitions the warehouse no longer
// holds (retention dropped them after exporting them).
type Manifest struct {
	Table   string `json:"table"`
	Comment string `json:"comment,omitempty"`
	// Layout is how the files are split: "month" (a folder per
	// month=YYYY-MM-01), "year" (year=YYYY) or "whole" (one file).
	Layout string `json:"layout"`
	Rows   int64  `json:"rows"`
	Files  []File `json:"files"`
}

// ManifestName is the name of each table folder's manifest.
const ManifestName = "_manifest.json"

// writeManifest writes t's manifest in dest from export_files, unless the
// one there says the same already.
func writeManifest(ctx context.Context, tx pgx.Tx, dest string, t *tableInfo) error {
	m := Manifest{Table: t.name, Comment: t.comment, Layout: "whole", Files: []File{}}
	if t.ep != nil {
		m.Layout = "month"
		if load.LayoutOf(t.ep) == load.Yearly {
			m.Layout = "year"
		}
	}
	rows, err := tx.Query(ctx, `
		SELECT file, partition, rows, bytes, sha256, exported_at FROM export_files
		WHERE dest = $1 AND table_name = $2 ORDER BY partition`, dest, t.name)
	if err != nil {
		return fmt.Errorf("export %s: manifest: %w", t.name, err)
	}
	var f File
	var folder string
	_, err = pgx.ForEachRow(rows, []any{&f.Path, &folder, &f.Rows, &f.Bytes, &f.SHA256, &f.ExportedAt}, func() error {
		f.Partition = folder
		if folder == "" {
			f.Partition = t.name
		}
		f.ExportedAt = f.ExportedAt.UTC()
		m.Rows += f.Rows
		m.Files = append(m.Files, f)
		return nil
	})
	if err != nil {
		return fmt.Errorf("export %s: manifest: %w", t.name, err)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("export %s: manifest: %w", t.name, err)
	}
	data = append(data, '\n')
	path := filepath.Join(dest, t.name, ManifestName)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := writeAtomic(path, data); err != nil {
		return fmt.Errorf("export %s: manifest: %w", t.name, quotedPathError(err))
	}
	return nil
}

// BeforeDrop returns the hook (load.Retention.BeforeDrop) that exports a
// partition to dir before retention drops it: in retention's transaction,
// so the file is recorded only if the drop commits, and with the
// partition locked against writes (SHARE) so that what is written is what
// is dropped. A partition exported before and unchanged since is not
// written again. An error vetoes the drop. logger may be nil.
func BeforeDrop(dir string, logger *slog.Logger) func(ctx context.Context, tx pgx.Tx, table, partition string) error {
	return func(ctx context.Context, tx pgx.Tx, table, part string) error {
		dest, err := ResolveDir(dir)
		if err != nil {
			return err
		}
		w := &writer{rowGroupRows: defaultRowGroupRows, fetchRows: defaultFetchRows, mem: memory.DefaultAllocator, logger: logger}
		if logger == nil {
			w.logger = slog.New(slog.DiscardHandler)
		}
		x := &Exporter{cfg: Config{Logger: w.logger, Now: time.Now}.withDefaults(), w: w}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, lockKey(dest)); err != nil {
			return fmt.Errorf("export to %q: lock: %w", dest, err)
		}
		if err := mkdirAll(dest); err != nil {
			return fmt.Errorf("export to %q: %w", dest, quotedPathError(err))
		}
		if _, err := removeAllTemps(dest); err != nil {
			return fmt.Errorf("export to %q: %w", dest, quotedPathError(err))
		}
		t, err := loadTable(ctx, tx, table)
		if err != nil {
			return err
		}
		if t.ep == nil {
			return fmt.Errorf("export %s: not a fact table", table)
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{part}.Sanitize()+" IN SHARE MODE"); err != nil {
			return fmt.Errorf("export %s: %w", part, err)
		}
		parts, err := partitions(ctx, tx, t)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(parts, func(p partition) bool { return p.name == part })
		if i < 0 {
			return fmt.Errorf("export %s: no partition %s", table, part)
		}
		if _, _, err := x.exportPart(ctx, tx, dest, t, parts[i]); err != nil {
			return err
		}
		return writeManifest(ctx, tx, dest, t)
	}
}
