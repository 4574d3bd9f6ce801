package transform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/seoetl/etl/catalog"
)

// EnvelopeError is a JSON body that is the API's error envelope instead of
// data: it has an "error" member that is not null, or its meta says
// "success": false.
type EnvelopeError struct {
	Endpoint   string // catalog name of the endpoint
	StatusCode int    // meta.status_code; 0 when absent
	Type       string // error.type
	Message    string // error.message, or the error member itself when it is not an object
	RequestID  string // meta.request_id
}

func (e *EnvelopeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "transform: %s: the JSON body is an error, not data", e.Endpoint)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (status %d)", e.StatusCode)
	}
	switch {
	case e.Type != "" && e.Message != "":
		fmt.Fprintf(&b, ": %s: %s", e.Type, e.Message)
	case e.Type != "" || e.Message != "":
		fmt.Fprintf(&b, ": %s%s", e.Type, e.Message)
	default:
		b.WriteString(": meta.success is false")
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// maxUnknown bounds the unknown member names a JSONDecoder keeps for Drift.
const maxUnknown = 256

// jsonState is where a JSONDecoder stands in the envelope.
type jsonState int

const (
	inArray   jsonState = iota // between the rows of the data array
	oneRow                     // data is one object, held in raw, not yet decoded
	afterData                  // data is done; the rest of the envelope is unread
	atEnd                      // the envelope is read to its end
)

// JSONDecoder streams a JSON response body into Arrow records of
// Schema(ep). It holds one row of the body at a time besides the batch
// under way (Options.MaxRowBytes bounds it). It is not safe for concurrent
// use.
type JSONDecoder struct {
	ep   *catalog.Endpoint
	opts Options
	body *bodyReader
	markedDecoder

	batch
	index   map[string]int // field index by name
	must    []int          // field indices of Options.Required
	here    []bool         // here[f] reports whether the current row has field f
	absent  []bool         // absent[f] reports whether some row lacked field f
	unknown []string       // member names the catalog does not know, first seen first
	seen    map[string]bool
	name    []byte // an unescaped member name

	meta    map[string]json.RawMessage
	failed  bool // meta.success is false
	sawData bool
	state   jsonState
	raw     json.RawMessage // the row under way
	skip    json.RawMessage // a member of the envelope
	line    int             // position of the row under way in data

	err error // sticky: io.EOF or the error that stopped decoding
}

// NewJSONDecoder reads a JSON body of endpoint ep up to the start of its
// data: the envelope's members before data, meta among them as the API
// sends it. It fails on an empty body (ErrEmptyBody), on a body cut before
// data began (or, for an object endpoint, before data ended: ErrCut), on a
// body that is not a JSON object, on broken JSON syntax, on an error
// envelope (*EnvelopeError), on a meta that is not an object, and on data
// of the wrong shape: an array for a list endpoint, an object for an object
// endpoint (null is no rows). The caller must Release the decoder.
func NewJSONDecoder(r io.Reader, ep *catalog.Endpoint, opts Options) (*JSONDecoder, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	must, err := opts.required(ep)
	if err != nil {
		return nil, err
	}
	body := &bodyReader{r: r}
	d := &JSONDecoder{
		ep: ep, opts: opts, body: body, markedDecoder: newMarkedDecoder(body, opts), must: must,
		index: make(map[string]int, len(ep.Fields)), seen: map[string]bool{},
		here: make([]bool, len(ep.Fields)), absent: make([]bool, len(ep.Fields)),
	}
	for i, f := range ep.Fields {
		d.index[f.Name] = i
	}
	tok, err := d.token()
	if errors.Is(err, io.EOF) && !d.body.cut(err) {
		return nil, fmt.Errorf("%w: no JSON value", ErrEmptyBody)
	}
	if err != nil {
		return nil, d.bodyError(err)
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf("transform: the %s JSON body is %s, not an object with meta and data", ep.Name, tokenType(tok))
	}
	if err := d.members(); err != nil {
		return nil, err
	}
	d.batch = newBatch(ep, opts)
	return d, nil
}

// members reads members of the envelope up to the start of data, or else to
// the end of the envelope and of the body.
func (d *JSONDecoder) members() error {
	for {
		tok, err := d.token()
		if err != nil {
			return d.bodyError(err)
		}
		if tok == json.Delim('}') {
			return d.end()
		}
		name, _ := tok.(string) // encoding/json checks that a member starts with its name
		switch name {
		case "data":
			if d.sawData {
				return fmt.Errorf("transform: the %s JSON envelope has data twice", d.ep.Name)
			}
			d.sawData = true
			if d.failed {
				return d.envelopeError(nil)
			}
			return d.startData()
		case "meta":
			if d.meta != nil {
				return fmt.Errorf("transform: the %s JSON envelope has meta twice", d.ep.Name)
			}
			if err := d.decode(&d.skip); err != nil {
				return d.bodyError(err)
			}
			if err := d.readMeta(d.skip); err != nil {
				return err
			}
		case "error":
			if err := d.decode(&d.skip); err != nil {
				return d.bodyError(err)
			}
			if !bytes.Equal(d.skip, []byte("null")) {
				return d.envelopeError(d.skip)
			}
		default: // a member the spec does not name: skipped
			if err := d.decode(&d.skip); err != nil {
				return d.bodyError(err)
			}
		}
	}
}

// startData reads the start of data, after its name.
func (d *JSONDecoder) startData() error {
	if d.ep.Shape == catalog.Object {
		if err := d.decode(&d.raw); err != nil {
			return d.bodyError(err)
		}
		switch d.raw[0] {
		case '{':
			d.state = oneRow
		case 'n':
			d.state = afterData
		default:
			return fmt.Errorf("transform: the %s JSON data is %s, not the object the endpoint answers", d.ep.Name, jsonType(d.raw))
		}
		return nil
	}
	tok, err := d.token()
	if err != nil {
		return d.bodyError(err)
	}
	switch tok {
	case json.Delim('['):
		d.state = inArray
		return nil
	case nil:
		d.state = afterData
		return nil
	}
	return fmt.Errorf("transform: the %s JSON data is %s, not the array of rows the endpoint answers", d.ep.Name, tokenType(tok))
}

// tokenType names the type of the value a json.Token starts.
func tokenType(tok json.Token) string {
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}

// end checks the end of the envelope: nothing may follow it, and it must
// have had data. A body cut after its envelope was closed is whole: no row
// and no member is missing.
func (d *JSONDecoder) end() error {
	d.state = atEnd
	if tok, err := d.token(); !errors.Is(err, io.EOF) && !d.body.cut(err) {
		if err != nil {
			return d.bodyError(err)
		}
		return fmt.Errorf("transform: the %s JSON body goes on after its envelope with %s", d.ep.Name, tokenType(tok))
	}
	if d.failed {
		return d.envelopeError(nil)
	}
	if !d.sawData {
		return fmt.Errorf("transform: the %s JSON envelope has no data", d.ep.Name)
	}
	return nil
}

func (d *JSONDecoder) readMeta(raw []byte) error {
	var m map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return fmt.Errorf("transform: the %s JSON meta is %s, not an object", d.ep.Name, jsonType(raw))
	}
	d.meta = m
	d.failed = bytes.Equal(m["success"], []byte("false"))
	return nil
}

// envelopeError is the error of an error envelope whose error member is
// raw (nil when there is none).
func (d *JSONDecoder) envelopeError(raw []byte) error {
	e := &EnvelopeError{Endpoint: d.ep.Name}
	_ = json.Unmarshal(d.meta["status_code"], &e.StatusCode) // absent or of another type: left zero
	_ = json.Unmarshal(d.meta["request_id"], &e.RequestID)
	switch {
	case len(raw) == 0:
	case raw[0] == '{':
		var m map[string]json.RawMessage
		_ = json.Unmarshal(raw, &m)
		_ = json.Unmarshal(m["type"], &e.Type)
		_ = json.Unmarshal(m["message"], &e.Message)
	case raw[0] == '"':
		_ = json.Unmarshal(raw, &e.Message)
	default:
		e.Message = showJSON(d.opts.Redactor, raw)
	}
	// An error answer may echo the key ("invalid key ...").
	e.Type, e.Message, e.RequestID = d.opts.mask(e.Type), d.opts.mask(e.Message), d.opts.mask(e.RequestID)
	return e
}

// Meta is the envelope's meta object, member by member as sent. The API
// sends meta before data, so it is there once NewJSONDecoder returns; when
// meta follows data, it is there once Next has returned io.EOF. Nil until
// then, or when the body has no meta.
func (d *JSONDecoder) Meta() map[string]json.RawMessage { return maps.Clone(d.meta) }

// Next decodes the next batch: a record of at most Options.BatchRows good
// rows, and the rows rejected while filling it (at most BatchRows). The
// record has Schema(ep); it may hold no rows when the batch met only rejects.
// The caller must Release the record. At the end of the body Next returns
// io.EOF and nothing else. When the body was cut (ErrCut), Next returns the
// complete rows before the cut, then the error; a body cut after its
// envelope was closed is whole. After any other error (broken JSON syntax,
// an error envelope after data) it returns no record and drops the rows of
// the batch under way. After any error it returns that error again on every
// call.
func (d *JSONDecoder) Next(ctx context.Context) (arrow.Record, []Reject, error) {
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
		drift := d.Drift()
		d.opts.Logger.LogAttrs(ctx, slog.LevelDebug, "json body decoded",
			slog.String("endpoint", d.ep.Name),
			slog.Int64("rows", d.rows),
			slog.Int64("rejected", d.rejected),
			slog.Any("unknown", drift.Unknown),
			slog.Any("missing", drift.Missing))
		return nil, nil, io.EOF
	}
	return d.newRecord(n == d.opts.BatchRows), rejects, nil
}

// next decodes the next row of data for fill.
func (d *JSONDecoder) next() (bool, Reject, error) {
	ok, err := d.nextRow()
	if !ok || err != nil {
		return false, Reject{}, err
	}
	if reason := d.row(d.raw); reason != "" {
		return true, Reject{Line: d.line, Raw: d.opts.rawText(d.raw, false), Reason: reason}, nil
	}
	return true, Reject{}, nil
}

// fail stops the decoder with err and drops the rows of the batch under way.
func (d *JSONDecoder) fail(err error) (arrow.Record, []Reject, error) {
	d.err = err
	d.discard()
	return nil, nil, err
}

// nextRow reads the next row of data into raw. At the end of data it reads
// the rest of the envelope and reports false.
func (d *JSONDecoder) nextRow() (bool, error) {
	switch d.state {
	case inArray:
		if d.more() {
			if err := d.decode(&d.raw); err != nil {
				return false, d.bodyError(err)
			}
			d.line++
			return true, nil
		}
		if _, err := d.token(); err != nil { // the closing ']'
			return false, d.bodyError(err)
		}
		d.state = afterData
		return false, d.members()
	case oneRow:
		d.state = afterData
		d.line = 1
		return true, nil
	case afterData:
		return false, d.members()
	}
	return false, nil
}

// row appends the row raw to the batch, or returns why it cannot.
func (d *JSONDecoder) row(raw []byte) string {
	if len(raw) > d.opts.MaxRowBytes {
		return fmt.Sprintf("the row is longer than %d bytes", d.opts.MaxRowBytes)
	}
	if raw[0] != '{' {
		return fmt.Sprintf("the row is %s, not an object", jsonType(raw))
	}
	clear(d.here)
	reason := ""
	for quoted, v := range objectMembers(raw) {
		name := d.memberName(quoted)
		f, ok := d.index[string(name)]
		if !ok {
			d.noteUnknown(name)
			continue
		}
		field := d.ep.Fields[f].Name
		if d.here[f] {
			if reason == "" {
				reason = fmt.Sprintf("field %q appears twice", field)
			}
			continue
		}
		d.here[f] = true
		if reason == "" {
			if msg := d.cols[f].parseJSON(v); msg != "" {
				reason = fmt.Sprintf("field %q: %s %s", field, showJSON(d.opts.Redactor, v), msg)
			}
		}
	}
	present := 0
	for f, here := range d.here {
		if here {
			present++
		} else {
			d.absent[f] = true
		}
	}
	switch {
	case reason != "":
		return reason
	case present == 0:
		return "the row has none of the endpoint's fields"
	}
	if f, absent := d.unkeyed(d.here, d.must); f >= 0 {
		if absent {
			return fmt.Sprintf("field %q is missing, and the row's key needs it", d.ep.Fields[f].Name)
		}
		return fmt.Sprintf("field %q is null, and the row's key needs a value", d.ep.Fields[f].Name)
	}
	d.appendRow(d.here)
	return ""
}

// memberName unescapes a member name as sent (quoted); a name with a broken
// escape is kept as sent.
func (d *JSONDecoder) memberName(quoted []byte) []byte {
	body := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return body
	}
	name, msg := unquote(d.name[:0], body)
	d.name = name
	if msg != "" {
		return body
	}
	return name
}

func (d *JSONDecoder) noteUnknown(name []byte) {
	if len(d.unknown) == maxUnknown || d.seen[string(name)] {
		return
	}
	d.seen[string(name)] = true
	d.unknown = append(d.unknown, d.opts.mask(strings.ToValidUTF8(string(name), "\uFFFD")))
}

// Drift is how the rows read so far differ from the endpoint's catalog
// fields; it is complete once Next has returned io.EOF. Unknown names come
// from every row that is an object no longer than Options.MaxRowBytes,
// rejected or not, at most the first 256; Missing fields are those such a
// row lacked.
func (d *JSONDecoder) Drift() Drift {
	dr := Drift{Unknown: slices.Clone(d.unknown)}
	for f, absent := range d.absent {
		if absent {
			dr.Missing = append(dr.Missing, d.ep.Fields[f].Name)
		}
	}
	return dr
}

// Rows is the number of good rows decoded so far.
func (d *JSONDecoder) Rows() int64 { return d.rows }

// Rejected is the number of rows rejected so far.
func (d *JSONDecoder) Rejected() int64 { return d.rejected }

// Release frees the memory the decoder holds for the batch under way.
// Records it returned stay valid.
func (d *JSONDecoder) Release() {
	d.release()
	if d.err == nil {
		d.err = errReleased
	}
}

// markedDecoder is a json.Decoder over a boundedReader, whose calls each
// mark where their value starts for it: the JSON decoders of the data
// endpoints and of the listing endpoints read through one.
type markedDecoder struct {
	in  *boundedReader
	dec *json.Decoder
}

// newMarkedDecoder reads body, one value at most 16 times
// o.MaxRowBytes or DefaultMaxRowBytes long, whichever is more (see
// Options.MaxRowBytes).
func newMarkedDecoder(body io.Reader, o Options) markedDecoder {
	limit := int64(math.MaxInt64)
	if o.MaxRowBytes <= math.MaxInt64/16 {
		limit = max(16*int64(o.MaxRowBytes), DefaultMaxRowBytes)
	}
	in := &boundedReader{r: body, limit: limit}
	return markedDecoder{in: in, dec: json.NewDecoder(in)}
}

func (d *markedDecoder) token() (json.Token, error) {
	d.in.mark = d.dec.InputOffset()
	return d.dec.Token()
}

func (d *markedDecoder) more() bool {
	d.in.mark = d.dec.InputOffset()
	return d.dec.More()
}

func (d *markedDecoder) decode(v *json.RawMessage) error {
	d.in.mark = d.dec.InputOffset()
	return d.dec.Decode(v)
}

// bodyError says what err, from the json.Decoder, means for the body. The
// json.Decoder returns a read error only once the bytes read before it
// hold no complete value, so at a cut the rows counted are the complete
// ones.
func (d *JSONDecoder) bodyError(err error) error {
	var syntax *json.SyntaxError
	switch {
	case d.body.cut(err):
		return d.body.cutError(fmt.Sprintf("the %s JSON body", d.ep.Name), d.rows+d.rejected, d.rejected)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("transform: the %s JSON body ends before its envelope is closed: %w", d.ep.Name, io.ErrUnexpectedEOF)
	case errors.As(err, &syntax):
		// Not syntax.Offset: a json.Decoder counts in it only some of the
		// bytes before the value under way.
		return fmt.Errorf("transform: the %s JSON body is broken at or after byte %d: %w", d.ep.Name, d.dec.InputOffset(), err)
	case errors.Is(err, errValueTooLong):
		return fmt.Errorf("transform: the %s JSON body holds a value longer than %d bytes: %w", d.ep.Name, d.in.limit, err)
	}
	return fmt.Errorf("transform: reading the %s JSON body: %w", d.ep.Name, err)
}

// errValueTooLong stops a JSON decoder at a value too long to hold.
var errValueTooLong = errors.New("too long to decode in bounded memory (see Options.MaxRowBytes)")

// boundedReader bounds how far a json.Decoder reads past the start of the
// value under way (mark). The json.Decoder reads a whole value into memory
// before it decodes it, so a string that is never closed would otherwise
// take all the memory there is.
type boundedReader struct {
	r     io.Reader
	limit int64 // the most bytes from mark on
	mark  int64 // offset in the body where the value under way starts
	read  int64 // bytes read from r
}

func (b *boundedReader) Read(p []byte) (int, error) {
	room := b.limit - (b.read - b.mark)
	if room <= 0 {
		return 0, errValueTooLong
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	return n, err
}
