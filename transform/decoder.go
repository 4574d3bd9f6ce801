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
	"github.com/seoetl/etl/internal/redact"
)

// Decoder streams a response body into Arrow records of Schema(ep). Both
// decoders, *CSVDecoder and *JSONDecoder, implement it.
type Decoder interface {
	// Next decodes the next batch: a record of at most Options.BatchRows
	// good rows, and the rows rejected while filling it (at most
	// BatchRows). The record may hold no rows when the batch met only
	// rejects; the caller must Release it. At the end of the body Next
	// returns io.EOF and nothing else. When reading the body failed
	// (ErrCut), Next first returns the complete rows that came before the
	// failure, then the error. After any error it returns that error
	// again.
	Next(ctx context.Context) (arrow.Record, []Reject, error)
	// Drift is how the response differs from the endpoint's catalog fields.
	Drift() Drift
	// Rows is the number of good rows decoded so far. After ErrCut it is
	// the good rows delivered, all complete.
	Rows() int64
	// Rejected is the number of rows rejected so far.
	Rejected() int64
	// Release frees the memory the decoder holds for the batch under way.
	// Records it returned stay valid.
	Release()
}

var (
	_ Decoder = (*CSVDecoder)(nil)
	_ Decoder = (*JSONDecoder)(nil)
)

// NewDecoder returns the decoder of a body in format, "csv" (NewCSVDecoder)
// or "json" (NewJSONDecoder), the values of the API's format parameter.
func NewDecoder(r io.Reader, ep *catalog.Endpoint, format string, opts Options) (Decoder, error) {
	switch format {
	case "csv":
		d, err := NewCSVDecoder(r, ep, opts)
		if err != nil {
			return nil, err // not a typed nil in a non-nil interface
		}
		return d, nil
	case "json":
		d, err := NewJSONDecoder(r, ep, opts)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	return nil, fmt.Errorf("transform: no decoder for format %q: want csv or json", format)
}

// ErrEmptyBody is returned (wrapped) by the decoders when the body is empty
// or blank: no CSV header row, no JSON value.
var ErrEmptyBody = errors.New("transform: the body is empty")

// Options configure a decoder. The zero value is ready to use.
type Options struct {
	// Allocator allocates the records' memory. Default memory.DefaultAllocator.
	Allocator memory.Allocator
	// BatchRows is the most rows a record holds, and the most rejects one
	// call of Next collects; it bounds the decoder's memory. Default 8192.
	BatchRows int
	// MaxRowBytes is the longest row, in bytes as sent, the decoder accepts;
	// a longer row is rejected with only its first MaxRowBytes bytes kept.
	// It bounds memory when a quote is never closed. The JSON decoder holds
	// a whole row before it checks its length (encoding/json reads a value
	// whole), so it stops with an error at a value of the body longer than
	// 16 times MaxRowBytes or 1 MiB, whichever is more. Default 1 MiB.
	MaxRowBytes int
	// Logger receives debug lines only: a CSV header's drift, and a
	// summary at the end of the body (the JSON one with its drift). Drift
	// is not logged as a warning here: a decoder sees one page, and the
	// caller reports drift once per run. Default: no logging.
	Logger *slog.Logger
	// Required names fields a row must have a value in (an empty Text is a
	// value; NULL is not): the fields of the row's key and the one that
	// says its month. A row without one is rejected, so it lands in
	// quarantine instead of failing the load. Default none.
	Required []string
	// Redactor masks secrets (the API key a server may echo) in every text
	// a decoder builds from the body, before it cuts it to length: the
	// messages of its errors, Reject.Reason and Reject.Raw, and the unknown
	// names of Drift. In the values of good rows it masks a secret found
	// as is (Redactor.Value), which costs one search per text value.
	// Default nil: nothing is masked.
	Redactor *redact.Redactor
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

// required returns the field indices of Options.Required.
func (o Options) required(ep *catalog.Endpoint) ([]int, error) {
	var must []int
	for _, name := range o.Required {
		f := slices.IndexFunc(ep.Fields, func(f catalog.Field) bool { return f.Name == name })
		if f < 0 {
			return nil, fmt.Errorf("transform: required field %q is not a field of %s", name, ep.Name)
		}
		must = append(must, f)
	}
	return must, nil
}

// Reject is a row that could not be decoded. It was not appended to any
// record.
type Reject struct {
	// Line says where the row is in the body. CSV: the 1-based physical
	// line the row starts on (the header is line 1; a row with a quoted
	// line break spans several lines). JSON: the row's 1-based position in
	// the data array, counting good and rejected rows alike (1 when data is
	// one object).
	Line int
	// Raw is the row's text as it was in the body: the CSV row without its
	// line break, or the JSON value of the row, with secrets masked
	// (Options.Redactor); cut to Options.MaxRowBytes. It is the bytes as
	// sent, so it may hold invalid UTF-8 or NUL bytes (store it as bytea,
	// not text).
	Raw string
	// Reason says what is wrong, naming the column or field:
	// `column "source_size": "abc" is not an integer` (CSV),
	// `field "domain_score": "abc" is not an integer` (JSON).
	Reason string
}

func (r Reject) String() string { return fmt.Sprintf("line %d: %s", r.Line, r.Reason) }

// Drift is how a response differs from the catalog's fields of its endpoint.
type Drift struct {
	// Unknown are names the catalog does not know: CSV header columns in
	// header order, JSON row members in the order first seen. Their values
	// are left out.
	Unknown []string
	// Missing are catalog fields, in catalog order, that the CSV header
	// lacks (NULL in every row) or that at least one JSON row lacks (NULL
	// in those rows).
	Missing []string
}

// None reports whether the response matched the catalog's fields as a set.
func (d Drift) None() bool { return len(d.Unknown) == 0 && len(d.Missing) == 0 }

func (d Drift) clone() Drift {
	return Drift{Unknown: slices.Clone(d.Unknown), Missing: slices.Clone(d.Missing)}
}

// batch builds the records of a decoder: one column per catalog field, in
// catalog order.
type batch struct {
	rb   *array.RecordBuilder
	cols []*column // by field index
	size int       // Options.BatchRows

	rows, rejected int64 // good and rejected rows decoded so far
}

// fill decodes rows into the batch until it holds size good rows or size
// rejects, or next reports the end of the body (more false); it checks ctx
// every 256 rows. next decodes one row: a zero Reject when the row was
// appended. fill returns the good rows and the rejects it met, also when it
// stops on an error.
func (b *batch) fill(ctx context.Context, next func() (more bool, rj Reject, err error)) (int, []Reject, error) {
	var rejects []Reject
	n := 0
	for n < b.size && len(rejects) < b.size {
		if (n+len(rejects))%256 == 0 {
			if err := ctx.Err(); err != nil {
				return n, rejects, err
			}
		}
		more, rj, err := next()
		if err != nil {
			return n, rejects, err
		}
		if !more {
			break
		}
		if rj.Reason != "" {
			rejects = append(rejects, rj)
			b.rejected++
			continue
		}
		n++
		b.rows++
	}
	return n, rejects, nil
}

// unkeyed returns the first of the required fields must that the parsed
// row has no value in, and whether the row lacks it (rather than holding
// NULL); -1 when the row has them all. here[f] says whether the row has
// field f.
func (b *batch) unkeyed(here []bool, must []int) (f int, absent bool) {
	for _, f := range must {
		if !here[f] {
			return f, true
		}
		if b.cols[f].null {
			return f, false
		}
	}
	return -1, false
}

// appendRow moves the parsed row into the builders, NULL in the fields
// the row does not have.
func (b *batch) appendRow(here []bool) {
	for f, c := range b.cols {
		if here[f] {
			c.append()
		} else {
			c.b.AppendNull()
		}
	}
}

func newBatch(ep *catalog.Endpoint, opts Options) batch {
	rb := array.NewRecordBuilder(opts.Allocator, Schema(ep))
	cols := make([]*column, len(ep.Fields))
	for i, f := range ep.Fields {
		cols[i] = newColumn(f, rb.Field(i), opts.Redactor)
	}
	return batch{rb: rb, cols: cols, size: opts.BatchRows}
}

// newRecord ends the batch. After a full batch, another is likely to follow,
// so it reserves room for one of the same size: growing the builders value
// by value would copy every buffer a dozen times.
func (b *batch) newRecord(full bool) arrow.Record {
	if !full {
		return b.rb.NewRecord()
	}
	for _, c := range b.cols {
		if sb, ok := c.b.(*array.StringBuilder); ok {
			c.dataLen = sb.DataLen()
		}
	}
	rec := b.rb.NewRecord()
	b.rb.Reserve(b.size)
	for _, c := range b.cols {
		if sb, ok := c.b.(*array.StringBuilder); ok {
			sb.ReserveData(c.dataLen)
		}
	}
	return rec
}

// discard drops the rows of the batch under way.
func (b *batch) discard() { b.rb.NewRecord().Release() }

// release frees the builders; the batch is unusable afterwards.
func (b *batch) release() {
	if b.rb != nil {
		b.rb.Release()
		b.rb = nil
	}
}

// errReleased is the sticky error of a released decoder.
var errReleased = errors.New("transform: the decoder was released")

// showMax is the length a value is cut to in a reason.
const showMax = 64

// show quotes a value for a reason: secrets masked by r, then cut to a
// readable length.
func show(r *redact.Redactor, v []byte) string {
	s := string(v)
	if r != nil {
		s = r.String(s)
	}
	if len(s) > showMax {
		return fmt.Sprintf("%q...", redact.Cut(s, showMax))
	}
	return fmt.Sprintf("%q", s)
}

// mask returns s with secrets masked, s itself without a redactor.
func (o Options) mask(s string) string {
	if o.Redactor == nil {
		return s
	}
	return o.Redactor.String(s)
}

// rawText is the Raw of a reject: raw with secrets masked, cut to
// MaxRowBytes. truncated says that raw was already cut (maybe inside a
// secret, whose start is masked too).
func (o Options) rawText(raw []byte, truncated bool) string {
	if len(raw) > o.MaxRowBytes {
		raw, truncated = raw[:o.MaxRowBytes], true
	}
	if o.Redactor == nil {
		return string(raw)
	}
	s := string(raw)
	if truncated {
		s = o.Redactor.Truncated(s)
	} else {
		s = o.Redactor.String(s)
	}
	// A mask may be longer than what it hides.
	return redact.Cut(s, o.MaxRowBytes)
}
