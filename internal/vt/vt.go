package vt

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// Terminal is a fake terminal of a fixed size, for the tests of what a
// person sees: it interprets what is written to it as a terminal would, with the
// tty's default output processing, and shows its screen.
//
// It knows what the live progress display and log lines use, and what a
// terminal does on its own: printable text (wide CJK runes take two
// columns), \r, \n (the tty turns it into \r\n), \b, \t, automatic wrap at
// the last column (deferred, as xterm does), scrolling at the bottom (the
// lines scrolled off are kept, as a terminal's history), ESC[nA/B/C/D
// (cursor up, down, right, left, stopping at the edges), ESC[J / ESC[0J
// (clear to the end of the screen), ESC[2J, ESC[K (clear to the end of
// the line) and ESC[H. Any other escape code fails the test: the display
// must not rely on one this interpreter does not check.
type Terminal struct {
	t          *testing.T
	mu         sync.Mutex
	cols, rows int
	cells      [][]string // rows x cols; "" is a blank, or the right half of a wide rune
	history    []string
	row, col   int
	wrap       bool   // the last column was written: the next rune wraps first
	partial    []byte // an escape code or UTF-8 sequence split across writes
}

// New returns a blank terminal of cols x rows; what it cannot interpret
// fails t.
func New(t *testing.T, cols, rows int) *Terminal {
	v := &Terminal{t: t, cols: cols, rows: rows}
	for range rows {
		v.cells = append(v.cells, make([]string, cols))
	}
	return v
}

// Write interprets b as the terminal would.
func (v *Terminal) Write(b []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	data := append(v.partial, b...)
	v.partial = nil
	for len(data) > 0 {
		switch c := data[0]; {
		case c == '\r':
			v.col, v.wrap = 0, false
			data = data[1:]
		case c == '\n':
			v.col, v.wrap = 0, false
			v.lineFeed()
			data = data[1:]
		case c == '\b':
			v.col, v.wrap = max(v.col-1, 0), false
			data = data[1:]
		case c == '\t':
			v.col = min((v.col/8+1)*8, v.cols-1)
			data = data[1:]
		case c == 0x1b:
			n, ok := v.escape(data)
			if !ok {
				v.partial = append([]byte(nil), data...)
				return len(b), nil
			}
			data = data[n:]
		case c < 0x20 || c == 0x7f:
			v.t.Errorf("fake terminal: control character %#x written", c)
			data = data[1:]
		default:
			if !utf8.FullRune(data) {
				v.partial = append([]byte(nil), data...)
				return len(b), nil
			}
			r, n := utf8.DecodeRune(data)
			v.put(r)
			data = data[n:]
		}
	}
	return len(b), nil
}

// escape interprets the escape code at the start of data and returns its
// length; false when data ends before the code does.
func (v *Terminal) escape(data []byte) (int, bool) {
	if len(data) < 2 {
		return 0, false
	}
	if data[1] != '[' {
		v.t.Errorf("fake terminal: escape code %q is not a CSI", data[:2])
		return 2, true
	}
	end := 2
	for end < len(data) && (data[end] >= '0' && data[end] <= '9' || data[end] == ';') {
		end++
	}
	if end == len(data) {
		return 0, false
	}
	arg := string(data[2:end])
	n := 1
	if arg != "" && !strings.Contains(arg, ";") {
		n, _ = strconv.Atoi(arg)
	}
	switch final := data[end]; {
	case final == 'A':
		v.row = max(v.row-max(n, 1), 0)
	case final == 'B':
		v.row = min(v.row+max(n, 1), v.rows-1)
	case final == 'C':
		v.col = min(v.col+max(n, 1), v.cols-1)
	case final == 'D':
		v.col = max(v.col-max(n, 1), 0)
	case final == 'J' && (arg == "" || arg == "0"):
		v.clearLine(v.row, v.col)
		for r := v.row + 1; r < v.rows; r++ {
			v.clearLine(r, 0)
		}
	case final == 'J' && arg == "2":
		for r := range v.rows {
			v.clearLine(r, 0)
		}
	case final == 'K' && (arg == "" || arg == "0"):
		v.clearLine(v.row, v.col)
	case final == 'H' && arg == "":
		v.row, v.col = 0, 0
	default:
		v.t.Errorf("fake terminal: escape code %q not interpreted", data[:end+1])
	}
	v.wrap = false
	return end + 1, true
}

func (v *Terminal) clearLine(row, from int) {
	for c := from; c < v.cols; c++ {
		v.cells[row][c] = ""
	}
}

// lineFeed moves the cursor down a row, scrolling at the bottom.
func (v *Terminal) lineFeed() {
	if v.row < v.rows-1 {
		v.row++
		return
	}
	v.history = append(v.history, v.line(0))
	copy(v.cells, v.cells[1:])
	v.cells[v.rows-1] = make([]string, v.cols)
}

// put writes r at the cursor.
func (v *Terminal) put(r rune) {
	w := vtWidth(r)
	if v.wrap || v.col+w > v.cols {
		v.col, v.wrap = 0, false
		v.lineFeed()
	}
	v.cells[v.row][v.col] = string(r)
	if w == 2 {
		v.cells[v.row][v.col+1] = ""
	}
	v.col += w
	if v.col >= v.cols {
		v.col, v.wrap = v.cols-1, true
	}
}

// vtWidth is the columns a terminal gives r: two for the wide East Asian
// runes (the ranges the tests use), one for any other.
func vtWidth(r rune) int {
	switch {
	case r >= 0x1100 && r <= 0x115f, r >= 0x2e80 && r <= 0xa4cf, r >= 0xac00 && r <= 0xd7a3,
		r >= 0xf900 && r <= 0xfaff, r >= 0xfe30 && r <= 0xfe4f, r >= 0xff00 && r <= 0xff60,
		r >= 0xffe0 && r <= 0xffe6, r >= 0x20000 && r <= 0x3fffd:
		return 2
	}
	return 1
}

func (v *Terminal) line(row int) string {
	var b strings.Builder
	for _, c := range v.cells[row] {
		if c == "" {
			c = " "
		}
		b.WriteString(c)
	}
	// A wide rune's right half was written as a blank: drop it.
	s := b.String()
	var out strings.Builder
	skip := false
	for _, r := range s {
		if skip {
			skip = false
			continue
		}
		out.WriteRune(r)
		skip = vtWidth(r) == 2
	}
	return strings.TrimRight(out.String(), " ")
}

// Screen is what the terminal shows, without the blank lines at its
// bottom.
func (v *Terminal) Screen() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var lines []string
	for r := range v.rows {
		lines = append(lines, v.line(r))
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// All is the terminal's history followed by its screen.
func (v *Terminal) All() []string {
	s := v.Screen()
	v.mu.Lock()
	defer v.mu.Unlock()
	return append(append([]string(nil), v.history...), s...)
}
