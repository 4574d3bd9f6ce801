package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/seoetl/etl/internal/plain"
	"github.com/seoetl/etl/jobspec"
)

// locationLabel shows a location by its id, then its name and city when
// known: 3f2a...c9 "Café Nord" (Köln). The name is quoted (jobspec.Quote).
// The id and the city show as they are, the id so that it can be copied
// into --only, unless they could mislead (quoteable): then they are
// quoted too.
func locationLabel(id, name, city string) string {
	label := id
	if quoteable(id, false) {
		label = jobspec.Quote(id)
	}
	if name != "" {
		label += " " + jobspec.Quote(name)
	}
	if city != "" {
		c := city
		if quoteable(city, true) {
			c = jobspec.Quote(city)
		}
		label += " (" + c + ")"
	}
	return label
}

// shownName shows a name from the job spec, the warehouse or the command
// line (a job's, a task's target) as it is, or quoted (jobspec.Quote)
// when it could mislead (see quoteable): a right-to-left override
// (U+202E) or another bidirectional control, which the YAML of a job spec
// lets through and which would show the rest of the line reversed, then
// shows escaped (\u202e). Every output of etl that names a job goes
// through it; a task's name (Task.String(), prose of ours around a
// target's url) goes through plainText.
func shownName(s string) string {
	if quoteable(s, false) {
		return jobspec.Quote(s)
	}
	return s
}

// quoteable reports whether s must be quoted to show it plainly: it is
// empty or long, is not UTF-8, or holds a character that is not graphic
// (a control character, an escape sequence's start), a quote, a
// parenthesis, or a space other than between words (spaces: whether it
// may hold one at all).
func quoteable(s string, spaces bool) bool {
	if s == "" || len(s) > 64 || !utf8.ValidString(s) || strings.TrimSpace(s) != s || strings.Contains(s, "  ") {
		return true
	}
	return strings.ContainsFunc(s, func(r rune) bool {
		return !unicode.IsGraphic(r) || r == '"' || r == '(' || r == ')' || unicode.IsSpace(r) && (!spaces || r != ' ')
	})
}

// maxShown is how many bytes of a diff's value or of a free text a
// listing output shows within a line; the rest is cut and counted ("...
// (12000 bytes)"), so that a value of any length (a holidayHours of a
// thousand entries, a provider's message of 100 kB) leaves the line a
// line. --json shows every value whole.
const maxShown = 300

// plainText shows free text that may hold data (a provider's message, a
// reason naming a value, a relation's name) within a line: as it is,
// except that each character that is not graphic and not a plain space (a
// newline, an escape sequence's start, a right-to-left override) and each
// byte that is not UTF-8 shows as its Go escape (\n, \x1b, \u202e), so
// that it can neither move the cursor nor start a line of its own, and
// that past maxShown bytes it is cut and its length said. Unlike
// jobspec.Quote it adds no quotes: the text is prose around values.
func plainText(s string) string {
	return plain.Text(s, maxShown)
}

// plainLines is plainText of each line of s, the lines kept: for a text
// of several lines of our own (a plan) that may quote data.
func plainLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = plainText(l)
	}
	return strings.Join(lines, "\n")
}

// writeJSON writes v as indented JSON, each character that is not graphic
// escaped as \uXXXX (jsonSafe).
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(jsonSafe(buf.Bytes()))
	return err
}

// jsonSafe returns the JSON text b with each character that is not
// graphic, but for the newlines and spaces between its tokens, escaped
// as \uXXXX: encoding/json (and slog's JSON handler) escape the control
// characters below U+0020 only, and leave a right-to-left override
// (U+202E), DEL or a C1 control as it is, which a terminal showing the
// JSON would obey. Outside its strings JSON holds no such character, so
// the result is the same JSON.
func jsonSafe(b []byte) []byte {
	if !bytes.ContainsFunc(b, func(r rune) bool { return r != '\n' && r != ' ' && !unicode.IsGraphic(r) }) {
		return b
	}
	out := make([]byte, 0, len(b)+64)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == '\n' || r == ' ' || unicode.IsGraphic(r) {
			out = append(out, b[i:i+size]...)
		} else if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	return out
}

// jsonSafeWriter passes each write, a record of slog's JSON handler (one
// whole record a write), through jsonSafe.
type jsonSafeWriter struct{ w io.Writer }

func (j jsonSafeWriter) Write(b []byte) (int, error) {
	if _, err := j.w.Write(jsonSafe(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
