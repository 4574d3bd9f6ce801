package transform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/seoetl/etl/catalog"
)

// ErrEmptyBody is returned by NewCSVDecoder when the body holds no header
// row (it is empty or blank).
var ErrEmptyBody = errors.New("transform: the CSV body is empty: no header row")

// Options configure a decoder. The zero value is ready to use.
type Options struct {
	// Allocator allocates the records' memory. Default memory.DefaultAllocator.
	Allocator memory.Allocator
	// BatchRows is the most rows a record holds, and the most rejects one
	// call of Next collects; it bounds the decoder's memory. Default 8192.
	BatchRows int
	// MaxRowBytes is the longest row, in bytes as sent, the decoder accepts;
	// a longer row is rejected with only its first MaxRowBytes bytes kept.
	// It bounds memory when a quote is never closed. Default 1 MiB.
	MaxRowBytes int
	// Logger receives the header drift (warn) and a summary at the end of
	// the body (debug). Default: no logging.
	Logger *slog.Logger
	// Required names fields a row must have a value in (an empty Text is a
	// value; NULL is not): the fields of the row's key and the one that
	// says its month. A row without one is rejected, so it lands in
	// quarantine instead of failing the load. Default none.
	Required []string
}

// Default option values.
const (
	DefaultBatchRows   = 8192
	DefaultMaxRowBytes = 1 << 20
)

func (o Options) withDefaults() Options {
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	if o.BatchRows == 0 {
		o.BatchRows = DefaultBatchRows
	}
	if o.MaxRowBytes == 0 {
		o.MaxRowBytes = DefaultMaxRowBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o Options) validate() error {
	if o.BatchRows < 1 {
		return fmt.Errorf("transform: BatchRows must be at least 1, got %d", o.BatchRows)
	}
	if o.MaxRowBytes < 1 {
		return fmt.Errorf("transform: MaxRowBytes must be at least 1, got %d", o.MaxRowBytes)
	}
	return nil
}

// Reject is a row that could not be decoded. It was not appended to any
// record.
type Reject struct {
	// Line is the 1-based physical line of the body the row starts on (the
	// header is line 1; a row with a quoted line break spans several lines).
	Line int
	// Raw is the row's text as it was in the body, without its line break;
	// cut to Options.MaxRowBytes. It is the bytes as sent, so it may hold
	// invalid UTF-8 or NUL bytes (store it as bytea, not text).
	Raw string
	// Reason says what is wrong, naming the column:
	// `column "source_size": "abc" is not an integer`.
	Reason string
}

func (r Reject) String() string { return fmt.Sprintf("line %d: %s", r.Line, r.Reason) }

// Drift is how a response's header differs from the catalog.
type Drift struct {
	// Unknown are header columns the catalog does not know, in header
	// order; their values are left out.
	Unknown []string
	// Missing are catalog fields absent from the header, in catalog order;
	// they are NULL in every row.
	Missing []string
}

// None reports whether the header matched the catalog's fields as a set.
func (d Drift) None() bool { return len(d.Unknown) == 0 && len(d.Missing) == 0 }

// CSVDecoder streams a CSV response body into Arrow records of Schema(ep).
// It is not safe for concurrent use.
type CSVDecoder struct {
	ep   *catalog.Endpoint
	opts Options
	sc   *scanner

	header []string
	at     []int     // at[i] is the field index of header column i; -1 when unknown
	cols   []*column // by field index
	here   []bool    // here[f] reports whether field f is in the header
	must   []int     // field indices of Options.Required
	rb     *array.RecordBuilder
	drift  Drift

	rows, rejected int64
	err            error // sticky: io.EOF or the error that stopped decoding
}

// NewCSVDecoder reads and checks the header of a CSV body of endpoint ep. It
// fails on an empty body (ErrEmptyBody), on an endpoint that answers JSON
// only, on broken quoting or a repeated column in the header, and on a
// header that names none of ep's fields. The caller must Release the decoder.
func NewCSVDecoder(r io.Reader, ep *catalog.Endpoint, opts Options) (*CSVDecoder, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if !ep.AllowsCSV() {
		return nil, fmt.Errorf("transform: %s answers JSON only, not CSV", ep.Name)
	}
	d := &CSVDecoder{ep: ep, opts: opts, sc: newScanner(r, opts.MaxRowBytes)}
	for _, name := range opts.Required {
		f := slices.IndexFunc(ep.Fields, func(f catalog.Field) bool { return f.Name == name })
		if f < 0 {
			return nil, fmt.Errorf("transform: required field %q is not a field of %s", name, ep.Name)
		}
		d.must = append(d.must, f)
	}
	if err := d.readHeader(); err != nil {
		return nil, err
	}
	schema := Schema(ep)
	d.rb = array.NewRecordBuilder(opts.Allocator, schema)
	d.cols = make([]*column, len(ep.Fields))
	for i, f := range ep.Fields {
		d.cols[i] = newColumn(f, d.rb.Field(i))
	}
	if !d.drift.None() {
		opts.Logger.LogAttrs(context.Background(), slog.LevelWarn, "csv header differs from the catalog",
			slog.String("endpoint", ep.Name),
			slog.Any("unknown", d.drift.Unknown),
			slog.Any("missing", d.drift.Missing))
	}
	return d, nil
}

func (d *CSVDecoder) readHeader() error {
	ok, err := d.sc.next()
	if err != nil {
		return fmt.Errorf("transform: reading the %s CSV header: %w", d.ep.Name, err)
	}
	if !ok {
		return ErrEmptyBody
	}
	if d.sc.long {
		return fmt.Errorf("transform: %s CSV header: longer than %d bytes", d.ep.Name, d.opts.MaxRowBytes)
	}
	if d.sc.problem != "" {
		return fmt.Errorf("transform: %s CSV header: %s", d.ep.Name, d.sc.problem)
	}
	index := make(map[string]int, len(d.ep.Fields))
	for i, f := range d.ep.Fields {
		index[f.Name] = i
	}
	seen := make(map[string]bool, d.sc.cells())
	d.here = make([]bool, len(d.ep.Fields))
	for i := range d.sc.cells() {
		name := string(d.sc.cell(i))
		if seen[name] {
			return fmt.Errorf("transform: %s CSV header: column %q appears twice", d.ep.Name, name)
		}
		seen[name] = true
		d.header = append(d.header, name)
		f, ok := index[name]
		if !ok {
			d.at = append(d.at, -1)
			d.drift.Unknown = append(d.drift.Unknown, name)
			continue
		}
		d.at = append(d.at, f)
		d.here[f] = true
	}
	for i, f := range d.ep.Fields {
		if !d.here[i] {
			d.drift.Missing = append(d.drift.Missing, f.Name)
		}
	}
	if len(d.drift.Missing) == len(d.ep.Fields) {
		return fmt.Errorf("transform: %s CSV header names none of the endpoint's fields: %s",
			d.ep.Name, show([]byte(d.sc.rawText())))
	}
	return nil
}

// Next decodes the next batch: a record of at most Options.BatchRows good
// rows, and the rows rejected while filling it (at most BatchRows). The
// record has Schema(ep); it may hold no rows when the batch met only rejects.
// The caller must Release the record. At the end of the body Next returns
// io.EOF and nothing else; after any other error it returns that error again.
func (d *CSVDecoder) Next(ctx context.Context) (arrow.Record, []Reject, error) {
	if d.err != nil {
		return nil, nil, d.err
	}
	var rejects []Reject
	n := 0
	for n < d.opts.BatchRows && len(rejects) < d.opts.BatchRows {
		if (n+len(rejects))%256 == 0 {
			if err := ctx.Err(); err != nil {
				return d.fail(err)
			}
		}
		ok, err := d.sc.next()
		if err != nil {
			return d.fail(fmt.Errorf("transform: reading the %s CSV body: %w", d.ep.Name, err))
		}
		if !ok {
			break
		}
		if reason := d.row(); reason != "" {
			rejects = append(rejects, Reject{Line: d.sc.line, Raw: d.sc.rawText(), Reason: reason})
			d.rejected++
			continue
		}
		n++
		d.rows++
	}
	if n == 0 && len(rejects) == 0 {
		d.err = io.EOF
		d.opts.Logger.LogAttrs(ctx, slog.LevelDebug, "csv body decoded",
			slog.String("endpoint", d.ep.Name),
			slog.Int64("rows", d.rows),
			slog.Int64("rejected", d.rejected))
		return nil, nil, io.EOF
	}
	return d.newRecord(n == d.opts.BatchRows), rejects, nil
}

// newRecord ends the batch. After a full batch, another is likely to follow,
// so it reserves room for one of the same size: growing the builders value
// by value would copy every buffer a dozen times.
func (d *CSVDecoder) newRecord(full bool) arrow.Record {
	if !full {
		return d.rb.NewRecord()
	}
	for _, c := range d.cols {
		if b, ok := c.b.(*array.StringBuilder); ok {
			c.dataLen = b.DataLen()
		}
	}
	rec := d.rb.NewRecord()
	d.rb.Reserve(d.opts.BatchRows)
	for _, c := range d.cols {
		if b, ok := c.b.(*array.StringBuilder); ok {
			b.ReserveData(c.dataLen)
		}
	}
	return rec
}

// fail stops the decoder with err and drops the rows of the batch under way.
func (d *CSVDecoder) fail(err error) (arrow.Record, []Reject, error) {
	d.err = err
	d.rb.NewRecord().Release()
	return nil, nil, err
}

// row appends the scanner's current row to the batch, or returns why it
// cannot.
func (d *CSVDecoder) row() string {
	sc := d.sc
	switch {
	case sc.long:
		return fmt.Sprintf("the row is longer than %d bytes", d.opts.MaxRowBytes)
	case sc.problem != "":
		if sc.problemPos < len(d.header) {
			return fmt.Sprintf("column %q: %s", d.header[sc.problemPos], sc.problem)
		}
		return fmt.Sprintf("cell %d: %s", sc.problemPos+1, sc.problem)
	case sc.cells() != len(d.header):
		return fmt.Sprintf("the row has %s, the header has %d", cells(sc.cells()), len(d.header))
	}
	for i, f := range d.at {
		if f < 0 {
			continue
		}
		cell := sc.cell(i)
		if msg := d.cols[f].parse(cell); msg != "" {
			return fmt.Sprintf("column %q: %s %s", d.header[i], show(cell), msg)
		}
	}
	for _, f := range d.must {
		if !d.here[f] {
			return fmt.Sprintf("column %q is missing from the response, and the row's key needs it", d.ep.Fields[f].Name)
		}
		if d.cols[f].null {
			return fmt.Sprintf("column %q is empty, and the row's key needs a value", d.ep.Fields[f].Name)
		}
	}
	for f, c := range d.cols {
		if d.here[f] {
			c.append()
		} else {
			c.b.AppendNull()
		}
	}
	return ""
}

func cells(n int) string {
	if n == 1 {
		return "1 cell"
	}
	return fmt.Sprintf("%d cells", n)
}

// show quotes a value for a reason, cut to a readable length.
func show(v []byte) string {
	const max = 64
	if len(v) > max {
		return fmt.Sprintf("%q...", v[:max])
	}
	return fmt.Sprintf("%q", v)
}

// Drift is how the header differs from the endpoint's catalog fields.
func (d *CSVDecoder) Drift() Drift {
	return Drift{Unknown: slices.Clone(d.drift.Unknown), Missing: slices.Clone(d.drift.Missing)}
}

// Rows is the number of good rows decoded so far.
func (d *CSVDecoder) Rows() int64 { return d.rows }

// Rejected is the number of rows rejected so far.
func (d *CSVDecoder) Rejected() int64 { return d.rejected }

// Release frees the memory the decoder holds for the batch under way.
// Records it returned stay valid.
func (d *CSVDecoder) Release() {
	if d.rb != nil {
		d.rb.Release()
		d.rb = nil
	}
	if d.err == nil {
		d.err = errors.New("transform: the decoder was released")
	}
}
