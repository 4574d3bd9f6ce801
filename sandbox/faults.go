package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/seoetl/etl/catalog"
)

// Faults are the rates, from 0 (never) to 1 (always), at which the sandbox
// injects faults into answers that would otherwise succeed. The zero value
// injects none. Which request gets which fault is a pure function of the
// seed, the API key, the request and how many times the sandbox has seen
// that same request before (see the package documentation).
type Faults struct {
	// TooManyRequests, Internal and Unavailable answer 429, 500 and 503
	// with the error envelope (retryable) instead of the data; they cost
	// nothing. At most one of them hits a request, so their rates add up
	// to at most 1.
	TooManyRequests float64
	Internal        float64
	Unavailable     float64
	// Slow delays the answer (whatever it is) by Config.SlowDelay before
	// its header is sent.
	Slow float64
	// Cut sends the header and part of the body, then breaks the
	// connection: the client reads an unexpected EOF. The request is
	// charged in full: the API computed the answer before it sent it.
	Cut float64
	// Malformed is a rate per CSV data row: a hit row is replaced by one
	// with the wrong number of cells, or with text in an integer column.
	// The header stays intact and malformed rows are charged as lines.
	// JSON answers are never malformed.
	Malformed float64
}

// faultNames are the names of the faults in a spec, in the order of
// Faults.String.
var faultNames = []string{"429", "500", "503", "slow", "cut", "malformed"}

// rate returns the field named name in a spec.
func (f *Faults) rate(name string) *float64 {
	switch name {
	case "429":
		return &f.TooManyRequests
	case "500":
		return &f.Internal
	case "503":
		return &f.Unavailable
	case "slow":
		return &f.Slow
	case "cut":
		return &f.Cut
	case "malformed":
		return &f.Malformed
	}
	return nil
}

// ParseFaults parses a fault spec: comma-separated NAME=RATE items, NAME
// one of 429, 500, 503, slow, cut and malformed, RATE a number from 0 to 1,
// as in "429=0.05,500=0.02,503=0.02,slow=0.01,cut=0.01,malformed=0.001".
// An empty spec injects nothing.
func ParseFaults(spec string) (Faults, error) {
	var f Faults
	if strings.TrimSpace(spec) == "" {
		return f, nil
	}
	seen := map[string]bool{}
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		name, val, ok := strings.Cut(item, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if item == "" || !ok || name == "" || val == "" {
			return Faults{}, fmt.Errorf("fault %q: write NAME=RATE, as in 503=0.02", item)
		}
		p := f.rate(name)
		if p == nil {
			return Faults{}, fmt.Errorf("unknown fault %q; the faults are %s", name, strings.Join(faultNames, ", "))
		}
		if seen[name] {
			return Faults{}, fmt.Errorf("fault %s is given twice", name)
		}
		seen[name] = true
		r, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return Faults{}, fmt.Errorf("fault %s: rate %q is not a number", name, val)
		}
		*p = r
	}
	return f, f.validate()
}

// validate checks every rate is within 0..1 and the status faults, which
// exclude each other, add up to at most 1.
func (f Faults) validate() error {
	for _, name := range faultNames {
		if r := *f.rate(name); math.IsNaN(r) || r < 0 || r > 1 {
			return fmt.Errorf("fault %s: the rate must be between 0 and 1, got %v", name, r)
		}
	}
	// A tolerance for decimal rates whose binary sum rounds above 1.
	if sum := f.TooManyRequests + f.Internal + f.Unavailable; sum > 1+1e-9 {
		return fmt.Errorf("faults 429, 500 and 503 hit at most one request each, so their rates must add up to at most 1, got %v", sum)
	}
	return nil
}

// String is the spec of f, the faults with a non-zero rate in a fixed
// order; "" when there are none. ParseFaults(f.String()) is f.
func (f Faults) String() string {
	var items []string
	for _, name := range faultNames {
		if r := *f.rate(name); r != 0 {
			items = append(items, name+"="+strconv.FormatFloat(r, 'g', -1, 64))
		}
	}
	return strings.Join(items, ",")
}

// enabled reports whether any fault may be injected.
func (f Faults) enabled() bool { return f != Faults{} }

// hit reports whether a draw falls under rate: never at 0, always at 1.
// The comparison is on integers and rate*2^64 is exact in floating point,
// so a decision is the same on every machine.
func hit(draw uint64, rate float64) bool {
	switch {
	case rate <= 0:
		return false
	case rate >= 1:
		return true
	}
	return draw < uint64(rate*0x1p64)
}

// faultHeader lists the faults injected into an answer, as in "503",
// "slow, cut" or "malformed=3" (the number of rows planned malformed; a cut
// may end the body before some of them).
const faultHeader = "X-Sandbox-Faults"

// plan is the faults drawn for one request.
type plan struct {
	k      key // the request's fault key: every draw derives from it
	faults Faults
	status int  // 429, 500, 503, or 0
	slow   bool // delay the answer
	cut    bool // break the body
}

// planFaults draws the faults of a request of apiKey whose canonical form
// (method, path, sorted query without the key) is canon. The draw depends
// on how many times the same key has sent the same request before, so a
// retry gets a fresh roll, and the n-th identical request gets the same
// faults in every run with the same seed, whatever the order in which
// concurrent requests arrive.
// maxSeenRequests bounds the distinct requests whose repeat count is kept.
const maxSeenRequests = 1 << 20

func (s *Server) planFaults(apiKey, canon string) plan {
	id := newKey(s.seed, "faults", apiKey, canon)
	s.seenMu.Lock()
	if len(s.seen) >= maxSeenRequests {
		// Bound the memory of a long-running sandbox: reproducibility
		// holds for the first maxSeenRequests distinct requests of a run.
		clear(s.seen)
	}
	n := s.seen[id]
	s.seen[id] = n + 1
	s.seenMu.Unlock()
	p := plan{k: id.child(strconv.FormatInt(n, 10)), faults: s.faults}
	status := p.k.draw("status")
	switch f := s.faults; {
	case hit(status, f.TooManyRequests):
		p.status = http.StatusTooManyRequests
	case hit(status, f.TooManyRequests+f.Internal):
		p.status = http.StatusInternalServerError
	case hit(status, f.TooManyRequests+f.Internal+f.Unavailable):
		p.status = http.StatusServiceUnavailable
	}
	p.slow = hit(p.k.draw("slow"), s.faults.Slow)
	p.cut = hit(p.k.draw("cut"), s.faults.Cut)
	return p
}

// header returns the value of faultHeader for an answer that is an error
// (the status fault and slow only) or the data (body faults too), with
// malformed rows planned.
func (p plan) header(data bool, malformed int64) string {
	var items []string
	if p.status != 0 && !data {
		items = append(items, strconv.Itoa(p.status))
	}
	if p.slow {
		items = append(items, "slow")
	}
	if data && p.cut {
		items = append(items, "cut")
	}
	if data && malformed > 0 {
		items = append(items, "malformed="+strconv.FormatInt(malformed, 10))
	}
	return strings.Join(items, ", ")
}

// malformedRows counts the data rows of a CSV answer of rows rows that
// the malformed fault replaces: the same draws as malformer's.
func (p plan) malformedRows(rows int64) int64 {
	if p.faults.Malformed <= 0 {
		return 0
	}
	mk := p.k.child("malformed")
	var n int64
	for i := range rows {
		if hit(mk.at(i), p.faults.Malformed) {
			n++
		}
	}
	return n
}

// errCut is the error the cutting writer returns once the body reached its
// cut point; the handler then breaks the connection.
var errCut = errors.New("sandbox: the body is cut here (fault injection)")

// bodyWriter is the http.ResponseWriter a generator writes through when a
// body fault is planned: its body goes through out, the rest to the
// ResponseWriter it wraps.
type bodyWriter struct {
	http.ResponseWriter
	out io.Writer
}

func (b *bodyWriter) Write(p []byte) (int, error) { return b.out.Write(p) }

// Unwrap lets http.ResponseController reach the connection.
func (b *bodyWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// bodyFaults wraps w with the body faults of p for a request q answering
// rows rows; it returns w itself when there are none.
func (p plan) bodyFaults(w http.ResponseWriter, q *request, rows int64) http.ResponseWriter {
	var out io.Writer = w
	if p.cut {
		out = &cutter{w: out, at: p.k.draw("cut-at"), rows: rows, csv: q.format == "csv", left: -1}
	}
	if p.faults.Malformed > 0 && q.format == "csv" {
		out = &malformer{w: out, rows: p.k.child("malformed"), kinds: p.k.child("malformed-kind"),
			rate: p.faults.Malformed, intCols: intColumns(q)}
	}
	if out == io.Writer(w) {
		return w
	}
	return &bodyWriter{ResponseWriter: w, out: out}
}

// cutter passes on the start of a body, then fails with errCut. The cut
// point is the fraction at/2^64 of the body's size. writeAnswer buffers
// bodyBuffer bytes, so a first write shorter than that is the whole body
// and the cut falls uniformly within it; a longer body's size is estimated
// from its rows and the rows the first write holds. The cutter also holds
// back the last byte written so far, so a body shorter than the estimate is
// still cut before its end: a planned cut always breaks the body.
type cutter struct {
	w       io.Writer
	at      uint64 // where to cut, as a fraction of 2^64
	rows    int64  // rows of the answer
	csv     bool
	left    int64 // bytes still to pass on; -1 until the first write
	held    [1]byte
	holding bool
}

func (c *cutter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.left < 0 {
		size := int64(len(p))
		if size >= bodyBuffer {
			size = max(size, scale(size, c.rows, max(rowsIn(p, c.csv), 1)))
		}
		hi, _ := bits.Mul64(c.at, uint64(size))
		c.left = int64(hi) // 0 to size-1
	}
	if c.holding {
		if err := c.emit(c.held[:]); err != nil {
			return 0, err
		}
	}
	if err := c.emit(p[:len(p)-1]); err != nil {
		return 0, err
	}
	c.held[0], c.holding = p[len(p)-1], true
	return len(p), nil
}

// rowsIn estimates the rows a piece of a body holds: its line ends for CSV,
// the boundaries between objects for JSON (quoting ignored: an estimate).
func rowsIn(p []byte, csv bool) int64 {
	if csv {
		return int64(bytes.Count(p, []byte("\n")))
	}
	return int64(bytes.Count(p, []byte("},{")))
}

// emit writes b, or its part before the cut point and then fails.
func (c *cutter) emit(b []byte) error {
	if int64(len(b)) < c.left {
		c.left -= int64(len(b))
		_, err := c.w.Write(b)
		return err
	}
	_, err := c.w.Write(b[:c.left])
	c.left = 0
	if err != nil {
		return err
	}
	return errCut
}

// malformer replaces whole data rows of a CSV body. It follows line
// boundaries outside quotes: the sandbox quotes every cell holding ';', '"',
// CR or LF and doubles inner quotes, so toggling on each '"' tracks whether
// a byte is inside a quoted cell. The header passes untouched; a data row
// is passed on as it comes unless it is to be replaced, in which case it is
// held whole (one row at most) and written corrupted.
type malformer struct {
	w       io.Writer
	rows    key     // row i is replaced when hit(rows.at(i), rate)
	kinds   key     // how row i is corrupted
	rate    float64 // per data row
	intCols []int   // the integer columns among the requested fields

	line      int64 // lines finished: 0 while the header is written, i+1 during data row i
	inQuote   bool
	replacing bool   // the current line is held to be replaced
	held      []byte // the current line when replacing
}

func (m *malformer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		end := m.lineEnd(p) // bytes of p up to and including the line's '\n'; -1 if none
		chunk := p
		if end >= 0 {
			chunk = p[:end]
		}
		if m.replacing {
			m.held = append(m.held, chunk...)
		} else if _, err := m.w.Write(chunk); err != nil {
			return 0, err
		}
		if end < 0 {
			break
		}
		p = p[end:]
		if m.replacing {
			if _, err := m.w.Write(m.corrupt(m.line-1, m.held)); err != nil {
				return 0, err
			}
			m.held = m.held[:0]
		}
		m.line++
		m.replacing = hit(m.rows.at(m.line-1), m.rate)
	}
	return n, nil
}

// lineEnd returns the length of p up to and including the '\n' that ends
// the current line outside quotes, or -1, and tracks quoting.
func (m *malformer) lineEnd(p []byte) int {
	for i, c := range p {
		switch {
		case c == '"':
			m.inQuote = !m.inQuote
		case c == '\n' && !m.inQuote:
			return i + 1
		}
	}
	return -1
}

// junk is text put in an integer column: each is what a broken upstream
// might send, and none parses as an integer.
var junk = []string{"n/a", "12k", "#N/A", "1.5e3", "null"}

// corrupt returns data row i (line, with its '\n') made malformed: text in
// an integer column, one cell missing, or one cell too many.
func (m *malformer) corrupt(i int64, line []byte) []byte {
	cells := splitCells(line[:len(line)-1])
	kind := m.kinds.at(i) % 3
	if kind == 0 && len(m.intCols) == 0 || kind == 1 && len(cells) < 2 {
		kind = 2 // no integer column; a single cell cannot lose one
	}
	switch kind {
	case 0:
		col := m.intCols[between(m.kinds.child("column").at(i), 0, int64(len(m.intCols)-1))]
		if col >= len(cells) { // not a row of the requested fields: never written so
			cells = append(cells, []byte("extra"))
			break
		}
		cells[col] = []byte(junk[between(m.kinds.child("junk").at(i), 0, int64(len(junk)-1))])
	case 1:
		cells = cells[:len(cells)-1]
	default:
		cells = append(cells, []byte("extra"))
	}
	out := make([]byte, 0, len(line)+8)
	for j, c := range cells {
		if j > 0 {
			out = append(out, ';')
		}
		out = append(out, c...)
	}
	return append(out, '\n')
}

// splitCells splits a CSV line (without its '\n') at the ';' outside
// quotes; cells keep their quoting.
func splitCells(line []byte) [][]byte {
	var cells [][]byte
	start, quoted := 0, false
	for i, c := range line {
		switch {
		case c == '"':
			quoted = !quoted
		case c == ';' && !quoted:
			cells = append(cells, line[start:i])
			start = i + 1
		}
	}
	return append(cells, line[start:])
}

// intColumns returns the positions of the integer fields among the
// requested ones.
func intColumns(q *request) []int {
	var cols []int
	for i, name := range q.fields {
		if f, ok := q.ep.Field(name); ok && slices.Contains([]catalog.Kind{catalog.Int, catalog.IntString}, f.Kind) {
			cols = append(cols, i)
		}
	}
	return cols
}
