package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxQuoted is the most bytes quoteValue shows of a value (escapes
// included) before it cuts it.
const maxQuoted = 80

// quoteValue shows a value that came from data or the command line as Go
// quotes it: a newline shows as \n, and no other control character (an
// escape sequence) reaches the terminal. Printable Unicode stays as it is
// ("Café Nord"). It is cut after maxQuoted bytes with the value's length,
// so that a long value costs no more than a line.
func quoteValue(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		q := strconv.Quote(s[i : i+size])
		q = q[1 : len(q)-1]
		if b.Len()-1+len(q) > maxQuoted {
			fmt.Fprintf(&b, `"... (%d bytes)`, len(s))
			return b.String()
		}
		b.WriteString(q)
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// locationLabel shows a location by its id, then its name and city when
// known, each quoted (quoteValue): 3f2a...c9 "Café Nord" ("Köln"). The
// id shows as it is, so that it can be copied into --only, unless it
// could mislead (empty, long, or with spaces or control characters): then
// it is quoted too.
func locationLabel(id, name, city string) string {
	label := id
	if id == "" || len(id) > 64 || !utf8.ValidString(id) || strings.ContainsFunc(id, func(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == '"' }) {
		label = quoteValue(id)
	}
	if name != "" {
		label += " " + quoteValue(name)
	}
	if city != "" {
		label += " (" + quoteValue(city) + ")"
	}
	return label
}
