package load

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// copyRows copies the rows of st's records into table's columns cols (the
// fact table's columns, then _ord unless st says not) by COPY ... FROM
// STDIN in the binary format, encoded straight from the Arrow columns
// (copyEncoder): no value is boxed on the way, and no round trip asks the
// server for the columns' types, which Columns says. It returns the rows
// copied; an error of st's (errRepeated, the reader's) is returned as it
// is, not as the server's "COPY from stdin failed".
func copyRows(ctx context.Context, tx pgx.Tx, table string, cols []string, st *copyStream) (int64, error) {
	enc := &copyEncoder{ctx: ctx, st: st, types: tx.Conn().TypeMap(), buf: append(make([]byte, 0, 64<<10), copyHeader...)}
	sql := fmt.Sprintf("COPY %s (%s) FROM STDIN (FORMAT binary)",
		pgx.Identifier{table}.Sanitize(), strings.Join(quoteAll(cols), ", "))
	// The connection's tracer sees the copy as it sees pgx's CopyFrom.
	conn := tx.Conn()
	tracer, _ := conn.Config().Tracer.(pgx.CopyFromTracer)
	if tracer != nil {
		ctx = tracer.TraceCopyFromStart(ctx, conn, pgx.TraceCopyFromStartData{TableName: pgx.Identifier{table}, ColumnNames: cols})
	}
	// CopyFrom reads enc on a goroutine of its own, and returns once it
	// has stopped reading it.
	tag, err := conn.PgConn().CopyFrom(ctx, enc, sql)
	// On a lost connection CopyFrom returns without waiting for that
	// goroutine: once closed, enc is done with st and its records.
	enc.close()
	if enc.err != nil {
		err = enc.err
	}
	if tracer != nil {
		tracer.TraceCopyFromEnd(ctx, conn, pgx.TraceCopyFromEndData{CommandTag: tag, Err: err})
	}
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// appender appends the binary COPY field of row i (its length, then its
// bytes; -1 for NULL) to buf.
type appender func(buf []byte, i int) ([]byte, error)

// copyEncoder is an io.Reader of a stream's rows in PostgreSQL's binary
// COPY format: a header, then for each row the count of its fields and
// each field, then a trailer. It reads the stream's records as it goes.
type copyEncoder struct {
	mu     sync.Mutex // held by Read; close takes it once
	closed bool
	ctx    context.Context
	st     *copyStream
	types  *pgtype.Map
	fields []appender // of the record under way
	n, row int        // its rows, and the next to encode
	buf    []byte     // encoded and not yet read, from off
	off    int
	done   bool  // the trailer is in buf
	err    error // the stream's error
}

// copyHeader starts a binary COPY stream: the signature, no flags, no
// header extension.
var copyHeader = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")

// Days and microseconds from the Unix epoch to PostgreSQL's (2000-01-01),
// which binary dates and timestamps count from.
const (
	pgEpochDays   = 10957
	pgEpochMicros = 946684800 * 1_000_000
)

// appenders returns the appenders of s's fields, in the table's order.
func appenders(s *source, types *pgtype.Map) ([]appender, error) {
	b, ep := s.b, s.b.Endpoint
	var fields []appender
	// The batch's constants, encoded once.
	constant := func(pgType string, v any) (appender, error) {
		t, ok := types.TypeForName(pgType)
		if !ok {
			return nil, fmt.Errorf("load %s: no encoding for %s", ep.Table, pgType)
		}
		// A buffer, so that an empty value is not taken for NULL (nil).
		enc, err := types.Encode(t.OID, pgtype.BinaryFormatCode, v, make([]byte, 0, 64))
		if err != nil {
			return nil, fmt.Errorf("load %s: encoding %v as %s: %w", ep.Table, v, pgType, err)
		}
		field := binary.BigEndian.AppendUint32(nil, uint32(len(enc)))
		if enc == nil {
			field = binary.BigEndian.AppendUint32(nil, math.MaxUint32) // -1: NULL
		}
		field = append(field, enc...)
		return func(buf []byte, _ int) ([]byte, error) { return append(buf, field...), nil }, nil
	}
	switch owner(ep) {
	case colTargetID, colSetID:
		if ep.TargetField != "" {
			fields = append(fields, func(buf []byte, i int) ([]byte, error) {
				id, err := s.owner(i)
				if err != nil {
					return buf, err
				}
				return appendInt64(buf, id.(int64)), nil
			})
			break
		}
		id := b.TargetID
		if owner(ep) == colSetID {
			id = b.SetID
		}
		fields = append(fields, func(buf []byte, _ int) ([]byte, error) { return appendInt64(buf, id), nil })
	}
	for i, f := range ep.Context {
		a, err := constant(fieldTypeName(f.Kind.PGType()), b.Context[i])
		if err != nil {
			return nil, err
		}
		fields = append(fields, a)
	}
	if ep.MonthField != "" {
		fields = append(fields, func(buf []byte, i int) ([]byte, error) {
			m, err := s.month(i)
			if err != nil {
				return buf, err
			}
			return appendDate(buf, m), nil
		})
	} else {
		m := MonthStart(b.Month)
		fields = append(fields, func(buf []byte, _ int) ([]byte, error) { return appendDate(buf, m), nil })
	}
	observed := b.ObservedAt
	fields = append(fields, func(buf []byte, _ int) ([]byte, error) { return appendTimestamp(buf, observed), nil })
	byName := map[string]arrow.Array{}
	for i, f := range b.Record.Schema().Fields() {
		byName[f.Name] = b.Record.Column(i)
	}
	for _, f := range ep.Fields {
		col, ok := byName[f.Name]
		if !ok {
			fields = append(fields, appendNullField)
			continue
		}
		a, err := fieldAppender(col, f.Kind.PGType(), types)
		if err != nil {
			return nil, fmt.Errorf("load %s: column %s: %w", ep.Table, f.Name, err)
		}
		fields = append(fields, a)
	}
	if !s.noOrd {
		ord := s.ord
		fields = append(fields, func(buf []byte, i int) ([]byte, error) { return appendInt64(buf, ord+int64(i)), nil })
	}
	return fields, nil
}

// Read fills p with the stream, encoding rows, and reading records, as
// it goes.
func (e *copyEncoder) Read(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, errCopyClosed
	}
	for len(e.buf)-e.off < len(p) && !e.done {
		if e.off > 0 {
			e.buf = append(e.buf[:0], e.buf[e.off:]...)
			e.off = 0
		}
		for len(e.buf) < len(p) && !e.done {
			if e.row == e.n {
				if err := e.nextRecord(); err != nil {
					return 0, err
				}
				continue
			}
			e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(len(e.fields)))
			for _, f := range e.fields {
				var err error
				if e.buf, err = f(e.buf, e.row); err != nil {
					e.err = err
					return 0, err
				}
			}
			e.row++
		}
	}
	n := copy(p, e.buf[e.off:])
	e.off += n
	if n == 0 && e.done {
		return 0, io.EOF
	}
	return n, nil
}

// close waits for a Read under way, and makes later ones fail.
func (e *copyEncoder) close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
}

// errCopyClosed is what Read returns once the copy returned.
var errCopyClosed = errors.New("load: the copy has returned")

// nextRecord moves to the stream's next record, or past the last one
// writes the trailer.
func (e *copyEncoder) nextRecord() error {
	src, err := e.st.source(e.ctx)
	if errors.Is(err, io.EOF) {
		e.buf = binary.BigEndian.AppendUint16(e.buf, math.MaxUint16) // the trailer: -1
		e.done = true
		return nil
	}
	if err == nil {
		e.fields, err = appenders(src, e.types)
	}
	if err != nil {
		e.err = err
		return err
	}
	e.n, e.row = src.n, 0
	return nil
}

func appendNullField(buf []byte, _ int) ([]byte, error) {
	return binary.BigEndian.AppendUint32(buf, math.MaxUint32), nil
}

func appendInt64(buf []byte, v int64) []byte {
	buf = binary.BigEndian.AppendUint32(buf, 8)
	return binary.BigEndian.AppendUint64(buf, uint64(v))
}

// appendDate appends t's day as a binary date: days since 2000-01-01.
func appendDate(buf []byte, t time.Time) []byte {
	t = t.UTC()
	days := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC).Unix()/86400 - pgEpochDays
	buf = binary.BigEndian.AppendUint32(buf, 4)
	return binary.BigEndian.AppendUint32(buf, uint32(int32(days)))
}

// appendTimestamp appends t as a binary timestamptz: microseconds since
// 2000-01-01 UTC, as pgx encodes a time.Time.
func appendTimestamp(buf []byte, t time.Time) []byte {
	return appendMicros(buf, t.Unix()*1_000_000+int64(t.Nanosecond())/1000)
}

func appendMicros(buf []byte, unixMicros int64) []byte {
	buf = binary.BigEndian.AppendUint32(buf, 8)
	return binary.BigEndian.AppendUint64(buf, uint64(unixMicros-pgEpochMicros))
}

// fieldTypeName is the name pgx's type map knows pgType by.
func fieldTypeName(pgType string) string {
	switch pgType {
	case "double precision":
		return "float8"
	case "timestamp with time zone":
		return "timestamptz"
	case "bigint":
		return "int8"
	case "boolean":
		return "bool"
	case "text[]":
		return "_text"
	case "bigint[]":
		return "_int8"
	}
	return pgType
}

// Element types of the binary arrays (pg_type.oid).
const (
	oidText = 25
	oidInt8 = 20
)

// fieldAppender returns the appender of a row field read from col into a
// column of pgType. The types the catalog's kinds decode to are written
// straight from the Arrow buffers; any other pair (numeric from a float)
// is encoded by pgx, value by value.
func fieldAppender(col arrow.Array, pgType string, types *pgtype.Map) (appender, error) {
	if write := directWriter(col, pgType); write != nil {
		return withNulls(col, write), nil
	}
	// Any other pair: pgx encodes the value as it would a parameter.
	return encodedAppender(col, pgType, types)
}

// withNulls returns the appender of col that writes row i with write, or
// a NULL where col is null.
func withNulls(col arrow.Array, write func(buf []byte, i int) []byte) appender {
	return func(buf []byte, i int) ([]byte, error) {
		if col.IsNull(i) {
			return binary.BigEndian.AppendUint32(buf, math.MaxUint32), nil
		}
		return write(buf, i), nil
	}
}

// directWriter returns the writer of a non-null value of col, straight
// from the Arrow buffers, into a column of pgType: nil unless col is of
// the type pgType decodes to.
func directWriter(col arrow.Array, pgType string) func(buf []byte, i int) []byte {
	switch c := col.(type) {
	case *array.Int64:
		if pgType == "bigint" {
			return func(buf []byte, i int) []byte { return appendInt64(buf, c.Value(i)) }
		}
	case *array.Float64:
		if pgType == "double precision" {
			return func(buf []byte, i int) []byte {
				buf = binary.BigEndian.AppendUint32(buf, 8)
				return binary.BigEndian.AppendUint64(buf, math.Float64bits(c.Value(i)))
			}
		}
	case *array.String:
		if pgType == "text" {
			return func(buf []byte, i int) []byte {
				v := c.Value(i)
				buf = binary.BigEndian.AppendUint32(buf, uint32(len(v)))
				return append(buf, v...)
			}
		}
	case *array.Boolean:
		if pgType == "boolean" {
			return func(buf []byte, i int) []byte {
				buf = binary.BigEndian.AppendUint32(buf, 1)
				if c.Value(i) {
					return append(buf, 1)
				}
				return append(buf, 0)
			}
		}
	case *array.Timestamp:
		if pgType == "timestamp with time zone" {
			unit := c.DataType().(*arrow.TimestampType).Unit
			if unit == arrow.Microsecond {
				return func(buf []byte, i int) []byte { return appendMicros(buf, int64(c.Value(i))) }
			}
			return func(buf []byte, i int) []byte { return appendTimestamp(buf, c.Value(i).ToTime(unit)) }
		}
	case *array.Date32:
		if pgType == "date" {
			return func(buf []byte, i int) []byte {
				buf = binary.BigEndian.AppendUint32(buf, 4)
				return binary.BigEndian.AppendUint32(buf, uint32(int32(c.Value(i))-pgEpochDays))
			}
		}
	case *array.List:
		return listWriter(c, pgType)
	}
	return nil
}

// listWriter is directWriter of a list: text[] from a list of strings,
// bigint[] from a list of int64.
func listWriter(c *array.List, pgType string) func(buf []byte, i int) []byte {
	offsets := c.Offsets()
	switch v := c.ListValues().(type) {
	case *array.String:
		if pgType == "text[]" {
			return func(buf []byte, i int) []byte {
				lo, hi := int(offsets[i]), int(offsets[i+1])
				size := 0
				for j := lo; j < hi; j++ {
					size += 4 + len(v.Value(j))
				}
				buf = appendArrayHeader(buf, size, hi-lo, oidText)
				for j := lo; j < hi; j++ {
					s := v.Value(j)
					buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
					buf = append(buf, s...)
				}
				return buf
			}
		}
	case *array.Int64:
		if pgType == "bigint[]" {
			return func(buf []byte, i int) []byte {
				vals := v.Int64Values()[offsets[i]:offsets[i+1]]
				buf = appendArrayHeader(buf, 12*len(vals), len(vals), oidInt8)
				for _, x := range vals {
					buf = appendInt64(buf, x)
				}
				return buf
			}
		}
	}
	return nil
}

// encodedAppender returns the appender of col into a column of pgType
// that pgx encodes, value by value.
func encodedAppender(col arrow.Array, pgType string, types *pgtype.Map) (appender, error) {
	t, ok := types.TypeForName(fieldTypeName(pgType))
	if !ok {
		return nil, fmt.Errorf("no encoding for %s", pgType)
	}
	get, err := getter(col)
	if err != nil {
		return nil, err
	}
	return func(buf []byte, i int) ([]byte, error) {
		v := get(i)
		if v == nil {
			return binary.BigEndian.AppendUint32(buf, math.MaxUint32), nil
		}
		at := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		out, err := types.Encode(t.OID, pgtype.BinaryFormatCode, v, buf)
		if err != nil {
			return buf[:at], fmt.Errorf("encoding %v as %s: %w", v, pgType, err)
		}
		if out == nil { // pgx's NULL
			return binary.BigEndian.AppendUint32(buf[:at], math.MaxUint32), nil
		}
		binary.BigEndian.PutUint32(out[at:], uint32(len(out)-at-4))
		return out, nil
	}, nil
}

// appendArrayHeader appends the length of a one-dimensional binary array
// of n elements of type elem whose elements take size bytes, and its
// header; an empty array has no dimension.
func appendArrayHeader(buf []byte, size, n int, elem uint32) []byte {
	if n == 0 {
		buf = binary.BigEndian.AppendUint32(buf, 12)
		buf = binary.BigEndian.AppendUint32(buf, 0) // dimensions
		buf = binary.BigEndian.AppendUint32(buf, 0) // no NULL element
		return binary.BigEndian.AppendUint32(buf, elem)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(20+size))
	buf = binary.BigEndian.AppendUint32(buf, 1)
	buf = binary.BigEndian.AppendUint32(buf, 0)
	buf = binary.BigEndian.AppendUint32(buf, elem)
	buf = binary.BigEndian.AppendUint32(buf, uint32(n)) // length of the dimension
	return binary.BigEndian.AppendUint32(buf, 1)        // its lower bound
}
