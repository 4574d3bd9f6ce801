package transform

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// scanState is where the scanner stands inside a row.
type scanState int

const (
	atCellStart  scanState = iota // before the first byte of a cell
	inPlain                       // inside an unquoted cell
	inQuoted                      // inside a quoted cell
	afterQuote                    // just after a '"' inside a quoted cell: its end, or the first of a doubled pair
	afterQuoteCR                  // a '\r' right after a closing quote
)

// plainStop marks the bytes that end a run of plain cell text.
var plainStop = [256]bool{';': true, '\n': true, '"': true}

var utf8BOM = []byte("\xEF\xBB\xBF")

// span is where a cell's value is in scanner.vals.
type span struct{ start, end int }

// scanner splits a CSV body into rows of cells (spec 2.1). Unlike
// encoding/csv it keeps the raw text and the first physical line of every
// row, so a bad row can be quarantined as it was sent, and it does not
// allocate per cell: the cells of a row live back to back in one buffer that
// is reused for the next row.
//
// A syntax problem (a '"' inside an unquoted cell, text after a closing
// quote, a quoted cell still open at the end of the body) does not stop the
// scan: the row is marked with the problem and ends at the next line break
// outside quotes, as it would have without the problem.
type scanner struct {
	br     *bufio.Reader
	maxRow int  // raw bytes kept per row
	lines  int  // '\n' bytes consumed so far
	begun  bool // the first segment of the body was read (BOM handled)
	eof    bool

	// The current row.
	line       int       // physical line the row starts on, 1-based
	raw        []byte    // the row's text as sent, at most maxRow bytes
	long       bool      // the row is longer than maxRow; raw is cut
	vals       []byte    // unquoted cell values
	spans      []span    // spans[i] is where cell i is in vals
	cellStart  int       // where the cell under way starts in vals
	state      scanState //
	problem    string    // first syntax problem of the row; "" when none
	problemPos int       // index of the cell the problem is in
}

func newScanner(r io.Reader, maxRow int) *scanner {
	return &scanner{br: bufio.NewReaderSize(r, 64<<10), maxRow: maxRow}
}

// next reads the next row that is not blank. It reports false at the end of
// the body.
func (s *scanner) next() (bool, error) {
	for {
		ok, err := s.readRow()
		if err != nil || !ok {
			return false, err
		}
		if s.long || len(trimEOL(s.raw)) > 0 {
			return true, nil
		}
	}
}

// cells is the number of cells of the current row.
func (s *scanner) cells() int { return len(s.spans) }

// cell is the value of cell i of the current row; it is valid until the next
// call of next.
func (s *scanner) cell(i int) []byte {
	sp := s.spans[i]
	return s.vals[sp.start:sp.end]
}

func (s *scanner) readRow() (bool, error) {
	s.line = s.lines + 1
	s.raw, s.vals, s.spans, s.cellStart = s.raw[:0], s.vals[:0], s.spans[:0], 0
	s.long, s.problem, s.problemPos = false, "", 0
	s.state = atCellStart
	read := false
	for !s.eof {
		seg, err := s.br.ReadSlice('\n')
		switch {
		case err == io.EOF:
			s.eof = true
		case err != nil && !errors.Is(err, bufio.ErrBufferFull):
			return false, err
		}
		if !s.begun {
			s.begun = true
			seg = bytes.TrimPrefix(seg, utf8BOM)
		}
		if len(seg) == 0 {
			continue
		}
		read = true
		s.keepRaw(seg)
		ended := s.feed(seg)
		if seg[len(seg)-1] == '\n' {
			s.lines++
		}
		if ended {
			return true, nil
		}
	}
	if !read {
		return false, nil
	}
	s.finish()
	return true, nil
}

func (s *scanner) keepRaw(seg []byte) {
	if s.long {
		return
	}
	if room := s.maxRow - len(s.raw); len(seg) > room {
		s.raw = append(s.raw, seg[:room]...)
		s.long = true
		return
	}
	s.raw = append(s.raw, seg...)
}

// feed runs the state machine over seg, a piece of the body that holds at
// most one '\n', as its last byte. It reports whether the row ended there.
func (s *scanner) feed(seg []byte) bool {
	if (s.state == atCellStart || s.state == inPlain) && !s.long && bytes.IndexByte(seg, '"') < 0 {
		return s.feedPlain(seg)
	}
	for i := 0; i < len(seg); {
		switch s.state {
		case atCellStart:
			switch seg[i] {
			case '"':
				s.state = inQuoted
				i++
			case ';':
				s.endCell()
				i++
			case '\n':
				s.endCell()
				return true
			default:
				s.state = inPlain
			}
		case inPlain:
			j := i
			for j < len(seg) && !plainStop[seg[j]] {
				j++
			}
			s.addVal(seg[i:j])
			if j == len(seg) {
				return false
			}
			switch seg[j] {
			case ';':
				s.endCell()
				s.state = atCellStart
			case '\n':
				s.trimCR()
				s.endCell()
				return true
			case '"':
				s.fail(`a '"' inside an unquoted value`)
				s.addVal(seg[j : j+1])
			}
			i = j + 1
		case inQuoted:
			j := bytes.IndexByte(seg[i:], '"')
			if j < 0 {
				s.addVal(seg[i:])
				return false
			}
			s.addVal(seg[i : i+j])
			s.state = afterQuote
			i += j + 1
		case afterQuote:
			switch seg[i] {
			case '"':
				s.addVal(seg[i : i+1])
				s.state = inQuoted
				i++
			case ';':
				s.endCell()
				s.state = atCellStart
				i++
			case '\n':
				s.endCell()
				return true
			case '\r':
				s.state = afterQuoteCR
				i++
			default:
				s.fail(`text after the closing '"' of a quoted value`)
				s.state = inPlain
			}
		case afterQuoteCR:
			if seg[i] == '\n' {
				s.endCell()
				return true
			}
			s.fail(`text after the closing '"' of a quoted value`)
			s.addVal([]byte{'\r'})
			s.state = inPlain
		}
	}
	return false
}

// feedPlain is feed for the common case of a segment without quotes: it
// copies the segment at once and cuts cells at each ';'.
func (s *scanner) feedPlain(seg []byte) bool {
	text, ended := bytes.CutSuffix(seg, []byte{'\n'})
	base := len(s.vals)
	s.vals = append(s.vals, text...)
	for i := 0; ; {
		j := bytes.IndexByte(text[i:], ';')
		if j < 0 {
			break
		}
		s.spans = append(s.spans, span{s.cellStart, base + i + j})
		s.cellStart = base + i + j + 1
		i += j + 1
	}
	if ended {
		s.trimCR()
		s.endCell()
		return true
	}
	if len(s.vals) > s.cellStart {
		s.state = inPlain
	} else {
		s.state = atCellStart
	}
	return false
}

// finish ends a row the body ended in.
func (s *scanner) finish() {
	switch s.state {
	case inQuoted:
		s.fail(`a quoted value is not closed before the end of the body`)
	case inPlain:
		s.trimCR()
	}
	s.endCell()
}

func (s *scanner) addVal(b []byte) {
	if !s.long {
		s.vals = append(s.vals, b...)
	}
}

func (s *scanner) endCell() {
	if !s.long {
		s.spans = append(s.spans, span{s.cellStart, len(s.vals)})
		s.cellStart = len(s.vals)
	}
}

// trimCR drops the '\r' of a "\r\n" line break from the plain cell it ends.
func (s *scanner) trimCR() {
	if n := len(s.vals); n > s.cellStart && s.vals[n-1] == '\r' {
		s.vals = s.vals[:n-1]
	}
}

func (s *scanner) fail(problem string) {
	if s.problem == "" {
		s.problem, s.problemPos = problem, len(s.spans)
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}
