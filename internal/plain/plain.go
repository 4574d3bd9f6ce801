// Package plain shows text that may come from data (a provider's message,
// a value of a user's table) within a line of a terminal: every character
// that is not graphic and not a plain space (a newline, an escape
// sequence's start, DEL, a C1 control, a right-to-left override U+202E)
// and every byte that is not UTF-8 shows as its Go escape (\n, \x1b,
// \u202e), so that it can neither move the cursor, nor start a line of
// its own, nor reverse what follows. It is the one home of that rule for
// the errors of package extract and the listing outputs of etl; Table
// writes cells so shown as the aligned columns of etl's tables.
package plain

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text returns s with each character that is not graphic and not a plain
// space, and each byte that is not UTF-8, as its Go escape. When max > 0,
// a result longer than max bytes is cut at a character and its length
// said: "... (12000 bytes)".
func Text(s string, max int) string {
	if (max <= 0 || len(s) <= max) && utf8.ValidString(s) && !strings.ContainsFunc(s, unsafe) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		part := s[i : i+size]
		if r == utf8.RuneError && size <= 1 || unsafe(r) {
			q := strconv.Quote(part)
			part = q[1 : len(q)-1]
		}
		if max > 0 && b.Len()+len(part) > max {
			fmt.Fprintf(&b, "... (%d bytes)", len(s))
			break
		}
		b.WriteString(part)
		i += size
	}
	return b.String()
}

// unsafe reports whether r must be escaped.
func unsafe(r rune) bool { return r != ' ' && !unicode.IsGraphic(r) }

// Table writes rows in columns two spaces apart, right-aligned where
// right says so; the last column is not padded. Each cell shows as Text
// shows it, whole (a task's name holds a target's url).
func Table(w io.Writer, rows [][]string, right []bool) {
	rows = slices.Clone(rows)
	for i, r := range rows {
		rows[i] = make([]string, len(r))
		for j, cell := range r {
			rows[i][j] = Text(cell, 0)
		}
	}
	width := make([]int, len(right))
	for _, r := range rows {
		for i, cell := range r {
			width[i] = max(width[i], len([]rune(cell)))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, cell := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(cell)))
			switch {
			case right[i]:
				b.WriteString(pad + cell)
			case i == len(r)-1:
				b.WriteString(cell)
			default:
				b.WriteString(cell + pad)
			}
			if i < len(r)-1 {
				b.WriteString("  ")
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
