package export

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/internal/atomicfile"
)

// tempPrefix starts the name of every file an export writes before it is
// renamed into place. The names never end in .parquet or .json, so that a
// reader's glob (*.parquet) never matches one.
const tempPrefix = ".etl-tmp-"

// writer is how files are written: sizes and the Arrow allocator.
type writer struct {
	rowGroupRows int
	fetchRows    int
	mem          memory.Allocator
	logger       *slog.Logger
}

// written is a file written: where, and what it holds.
type written struct {
	rows   int64
	bytes  int64
	sha256 string
}

// countingWriter counts and hashes what goes through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeParquet writes the rows of p (of table t, read through tx) to
// path: under a temporary name in the same folder, synced, then renamed
// and the folder synced. A failure (or a kill) leaves no file at path
// other than the one there before.
func (w *writer) writeParquet(ctx context.Context, tx pgx.Tx, t *tableInfo, p partition, path string) (written, error) {
	fail := func(err error) (written, error) {
		return written{}, fmt.Errorf("export %s: %w", t.name, quotedPathError(err))
	}
	dir := filepath.Dir(path)
	if err := mkdirAll(dir); err != nil {
		return fail(err)
	}
	f, err := atomicfile.CreateTemp(dir, tempPrefix+filepath.Base(path)+"-")
	if err != nil {
		return fail(err)
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(f, h)}
	bw := bufio.NewWriterSize(cw, 1<<20)
	rows, err := w.encode(ctx, tx, t, p, bw)
	if err != nil {
		return written{}, err
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	done = true
	if err := syncDir(dir); err != nil {
		return fail(err)
	}
	return written{rows: rows, bytes: cw.n, sha256: hex.EncodeToString(h.Sum(nil))}, nil
}

// encode streams the rows of p, in a fixed order (below), through a
// cursor into Parquet on out: FETCHes of w.fetchRows rows are appended to
// one Arrow record until it holds w.rowGroupRows rows, which is then
// written as one row group, column after column, straight to out
// (pqarrow's Write; WriteBuffered would keep every column's encoder, page
// buffers and encoded pages of the row group in memory at once). So
// memory holds one row group's rows as Arrow arrays and one column's
// encoder, however many rows p has.
//
// Dictionary encoding is off. arrow/go (v15, and still v18) writes a
// column chunk's page encoding statistics by ranging over a Go map, so a
// chunk that falls back from dictionary to plain encoding midway (a
// column with more distinct values than one dictionary page holds) lists
// its two encodings in a random order: two exports of the same rows were
// different files, a few bytes of the footer apart. With plain encoding
// every chunk has one encoding, and zstd compresses repeated values as
// well as a dictionary does here (the links of make bench, in row groups
// of 131072: 34.3 bytes a row plain, 35.1 with dictionaries); plain pages also need no
// dictionary's hash table (several MB a column of a row group).
func (w *writer) encode(ctx context.Context, tx pgx.Tx, t *tableInfo, p partition, out io.Writer) (int64, error) {
	fw, err := w.parquetWriter(t, out)
	if err != nil {
		return 0, fmt.Errorf("export %s: %w", p.name, err)
	}
	defer fw.Close()
	if err := declareCursor(ctx, tx, t, p); err != nil {
		return 0, fmt.Errorf("export %s: %w", p.name, err)
	}
	f := newFetcher(w.mem, t, p)
	defer f.rb.Release()
	var total int64
	pending := 0 // rows in f.rb, not written yet
	flush := func() error {
		if pending == 0 {
			return nil
		}
		rec := f.rb.NewRecord()
		err := fw.Write(rec)
		rec.Release()
		pending = 0
		if err != nil {
			return fmt.Errorf("export %s: writing Parquet: %w", p.name, err)
		}
		return nil
	}
	for {
		// FETCH's text is the same for every table while its columns are
		// not: describe it each time rather than trust a cached statement.
		// A FETCH reads no more than the row group lacks, so that every
		// row group but the last holds w.rowGroupRows rows.
		want := min(w.fetchRows, w.rowGroupRows-pending)
		n, err := f.fetch(ctx, tx, want, total)
		if err != nil {
			return total, err
		}
		if n == 0 {
			break
		}
		total += int64(n)
		if pending += n; pending >= w.rowGroupRows {
			if err := flush(); err != nil {
				return total, err
			}
		}
		w.logger.LogAttrs(ctx, slog.LevelDebug, "export: batch read",
			slog.String("table", t.name), slog.String("partition", p.name), slog.Int("rows", n), slog.Int64("rows_so_far", total))
		if n < want {
			break
		}
	}
	if err := flush(); err != nil {
		return total, err
	}
	if _, err := tx.Exec(ctx, "CLOSE "+exportCursor); err != nil {
		return total, fmt.Errorf("export %s: %w", p.name, err)
	}
	if err := fw.Close(); err != nil {
		return total, fmt.Errorf("export %s: writing Parquet: %w", p.name, err)
	}
	return total, nil
}

// parquetWriter returns the Parquet writer of t's rows on out, with the
// properties encode describes.
func (w *writer) parquetWriter(t *tableInfo, out io.Writer) (*pqarrow.FileWriter, error) {
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithStats(true),
		parquet.WithDictionaryDefault(false),
		parquet.WithMaxRowGroupLength(int64(w.rowGroupRows)),
		// The Parquet encoders' own buffers stay with Go's allocator:
		// arrow/go v15's writer leaves some of them to the garbage
		// collector rather than releasing them, which an accounting
		// allocator would report as leaks that are not ours.
	)
	return pqarrow.NewFileWriter(t.schema, out, props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(w.mem)))
}

// exportCursor is the cursor encode reads a partition through.
const exportCursor = "etl_export"

// declareCursor declares exportCursor over the rows of p, t's columns in
// the order encode writes them.
func declareCursor(ctx context.Context, tx pgx.Tx, t *tableInfo, p partition) error {
	sels := make([]string, len(t.cols))
	for i, c := range t.cols {
		sels[i] = c.sel
	}
	// A fact partition is read in its physical order, a sequential scan:
	// the primary key's order (a random md5 for the large tables) would
	// cost a sort or an index scan's random reads of every row. The loader
	// writes a target's rows together, so row groups still hold few
	// targets each, and the order is the same for the same rows on disk
	// (synchronized scans, which may start a scan midway, are turned off),
	// so two exports of one state are the same file. A dimension is small:
	// it is written in key order.
	order := ""
	if t.ep == nil {
		order = " ORDER BY " + strings.Join(quoteAll(t.order), ", ")
	} else if _, err := tx.Exec(ctx, `SELECT set_config('synchronize_seqscans', 'off', true)`); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, fmt.Sprintf(`DECLARE %s NO SCROLL CURSOR FOR SELECT %s FROM %s%s`,
		exportCursor, strings.Join(sels, ", "), pgx.Identifier{p.name}.Sanitize(), order))
	return err
}

// fetcher reads the rows of exportCursor over partition p of t into rb,
// column by column through readers (dsts are their scan destinations).
type fetcher struct {
	t       *tableInfo
	p       partition
	readers []colReader
	dsts    []any
	rb      *array.RecordBuilder
}

// newFetcher returns the fetcher of p of t, whose record builder
// allocates from mem; the caller releases it.
func newFetcher(mem memory.Allocator, t *tableInfo, p partition) *fetcher {
	f := &fetcher{t: t, p: p, readers: make([]colReader, len(t.cols)), dsts: make([]any, len(t.cols))}
	for i, c := range t.cols {
		f.readers[i] = c.reader()
		f.dsts[i] = f.readers[i].dst()
	}
	f.rb = array.NewRecordBuilder(mem, t.schema)
	return f
}

// fetch appends the next want rows of the cursor, or those left, to f.rb
// and returns how many it appended; total is the rows fetched before, to
// number a bad row in the error.
func (f *fetcher) fetch(ctx context.Context, tx pgx.Tx, want int, total int64) (int, error) {
	rows, err := tx.Query(ctx, fmt.Sprintf("FETCH FORWARD %d FROM %s", want, exportCursor), pgx.QueryExecModeDescribeExec)
	if err != nil {
		return 0, fmt.Errorf("export %s: %w", f.p.name, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if err := rows.Scan(f.dsts...); err != nil {
			return 0, fmt.Errorf("export %s: row %d: %w", f.p.name, total+int64(n)+1, err)
		}
		for i, r := range f.readers {
			if err := r.appendTo(f.rb.Field(i)); err != nil {
				return 0, fmt.Errorf("export %s: row %d, column %s: %w", f.p.name, total+int64(n)+1, f.t.cols[i].name, err)
			}
		}
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("export %s: %w", f.p.name, err)
	}
	return n, nil
}

// writeAtomic writes data to path under a temporary name, synced, then
// renamed into place, and syncs the folder.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := mkdirAll(dir); err != nil {
		return err
	}
	f, err := atomicfile.CreateTemp(dir, tempPrefix+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// mkdirAll makes dir and its missing parents (mode 0777 less the umask,
// as mkdir -p), syncing the folder that
// holds each one it makes, so that a synced file's folder survives a
// crash too.
func mkdirAll(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing folder %q: %w", dir, err)
	}
	return nil
}

// removeTemps removes the temporary files a killed export left under
// root; it returns how many it removed.
func removeTemps(root string) (int, error) {
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), tempPrefix) {
			if err := os.Remove(path); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

func quoteAll(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = pgx.Identifier{n}.Sanitize()
	}
	return q
}
