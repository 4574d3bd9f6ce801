package transform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/seoetl/etl/catalog"
)

// CSVDecoder streams a CSV response body into Arrow records of Schema(ep).
// It is not safe for concurrent use.
type CSVDecoder struct {
	ep   *catalog.Endpoint
	opts Options
	body *bodyReader
	sc   *scanner

	batch
	header []string
	at     []int  // at[i] is the field index of header column i; -1 when unknown
	here   []bool // here[f] reports whether field f is in the header
	must   []int  // field indices of Options.Required
	drift  Drift

	err error // sticky: io.EOF or the error that stopped decoding
}

// NewCSVDecoder reads and checks the header of a CSV body of endpoint ep. It
// fails on an empty body (ErrEmptyBody), on a body cut before the header's
// line break (ErrCut), on an endpoint that answers JSON only, on broken
// quoting or a repeated column in the header, and on a header that names
// none of ep's fields. The caller must Release the decoder.
func NewCSVDecoder(r io.Reader, ep *catalog.Endpoint, opts Options) (*CSVDecoder, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if !ep.AllowsCSV() {
		return nil, fmt.Errorf("transform: %s answers JSON only, not CSV", ep.Name)
	}
	must, err := opts.required(ep)
	if err != nil {
		return nil, err
	}
	body := &bodyReader{r: r}
	d := &CSVDecoder{ep: ep, opts: opts, body: body, sc: newScanner(body, opts.MaxRowBytes), must: must}
	if err := d.readHeader(); err != nil {
		return nil, err
	}
	d.batch = newBatch(ep, opts)
	if !d.drift.None() {
		opts.Logger.LogAttrs(context.Background(), slog.LevelDebug, "csv header differs from the catalog",
			slog.String("endpoint", ep.Name),
			slog.Any("unknown", d.drift.Unknown),
			slog.Any("missing", d.drift.Missing))
	}
	return d, nil
}

func (d *CSVDecoder) readHeader() error {
	ok, err := d.sc.next()
	if d.body.cut(err) {
		return d.body.cutError(d.what(), 0, 0)
	}
	if err != nil {
		return fmt.Errorf("transform: reading the %s CSV header: %w", d.ep.Name, err)
	}
	if !ok {
		return fmt.Errorf("%w: no CSV header row", ErrEmptyBody)
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
			return fmt.Errorf("transform: %s CSV header: column %q appears twice", d.ep.Name, d.opts.mask(name))
		}
		seen[name] = true
		// Masked: the names go into reasons and Drift, and a page of
		// text that is no CSV (an HTML error page) may echo the key.
		d.header = append(d.header, d.opts.mask(name))
		f, ok := index[name]
		if !ok {
			d.at = append(d.at, -1)
			d.drift.Unknown = append(d.drift.Unknown, d.header[i])
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
			d.ep.Name, show(d.opts.Redactor, trimEOL(d.sc.raw)))
	}
	return nil
}

// Next decodes the next batch: a record of at most Options.BatchRows good
// rows, and the rows rejected while filling it (at most BatchRows). The
// record has Schema(ep); it may hold no rows when the batch met only rejects.
// The caller must Release the record. At the end of the body Next returns
// io.EOF and nothing else. When the body was cut (ErrCut), Next returns the
// complete rows before the cut, then the error. After any error it returns
// that error again.
func (d *CSVDecoder) Next(ctx context.Context) (arrow.Record, []Reject, error) {
	if d.err != nil {
		return nil, nil, d.err
	}
	n, rejects, err := d.fill(ctx, d.next)
	if errors.Is(err, ErrCut) && (n > 0 || len(rejects) > 0) {
		d.err = err // next time
		return d.newRecord(false), rejects, nil
	}
	if err != nil {
		return d.fail(err)
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

// next decodes the next row of the body for fill. A row is read only once
// its line break is (or the body's end): a row the body was cut in is
// neither good nor rejected.
func (d *CSVDecoder) next() (bool, Reject, error) {
	ok, err := d.sc.next()
	if d.body.cut(err) {
		return false, Reject{}, d.body.cutError(d.what(), d.rows+d.rejected, d.rejected)
	}
	if err != nil {
		return false, Reject{}, fmt.Errorf("transform: reading the %s CSV body: %w", d.ep.Name, err)
	}
	if !ok {
		return false, Reject{}, nil
	}
	if reason := d.row(); reason != "" {
		return true, Reject{Line: d.sc.line, Raw: d.opts.rawText(trimEOL(d.sc.raw), d.sc.long), Reason: reason}, nil
	}
	return true, Reject{}, nil
}

// fail stops the decoder with err and drops the rows of the batch under way.
func (d *CSVDecoder) fail(err error) (arrow.Record, []Reject, error) {
	d.err = err
	d.discard()
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
			return fmt.Sprintf("column %q: %s %s", d.header[i], show(d.opts.Redactor, cell), msg)
		}
	}
	if f, absent := d.unkeyed(d.here, d.must); f >= 0 {
		if absent {
			return fmt.Sprintf("column %q is missing from the response, and the row's key needs it", d.ep.Fields[f].Name)
		}
		return fmt.Sprintf("column %q is empty, and the row's key needs a value", d.ep.Fields[f].Name)
	}
	d.appendRow(d.here)
	return ""
}

// what names the body in errors.
func (d *CSVDecoder) what() string { return fmt.Sprintf("the %s CSV body", d.ep.Name) }

func cells(n int) string {
	if n == 1 {
		return "1 cell"
	}
	return fmt.Sprintf("%d cells", n)
}

// Drift is how the header differs from the endpoint's catalog fields.
func (d *CSVDecoder) Drift() Drift { return d.drift.clone() }

// Rows is the number of good rows decoded so far.
func (d *CSVDecoder) Rows() int64 { return d.rows }

// Rejected is the number of rows rejected so far.
func (d *CSVDecoder) Rejected() int64 { return d.rejected }

// Release frees the memory the decoder holds for the batch under way.
// Records it returned stay valid.
func (d *CSVDecoder) Release() {
	d.release()
	if d.err == nil {
		d.err = errReleased
	}
}
