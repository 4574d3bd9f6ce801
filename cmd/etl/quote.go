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
// known: 3f2a...c9 "Café Nord" (Köln). The name is quoted (quoteValue).
// The id and the city show as they are, the id so that it can be copied
// into --only, unless they could mislead (quoteable): then they are
// quoted too.
func locationLabel(id, name, city string) string {
	label := id
	if quoteable(id, false) {
		label = quoteValue(id)
	}
	if name != "" {
		label += " " + quoteValue(name)
	}
	if city != "" {
		c := city
		if quoteable(city, true) {
			c = quoteValue(city)
		}
		label += " (" + c + ")"
	}
	return label
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
