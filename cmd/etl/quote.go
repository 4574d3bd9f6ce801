package main

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/seoetl/etl/pipeline"
)

// locationLabel shows a location by its id, then its name and city when
// known: 3f2a...c9 "Café Nord" (Köln). The name is quoted (pipeline.Quote).
// The id and the city show as they are, the id so that it can be copied
// into --only, unless they could mislead (quoteable): then they are
// quoted too.
func locationLabel(id, name, city string) string {
	label := id
	if quoteable(id, false) {
		label = pipeline.Quote(id)
	}
	if name != "" {
		label += " " + pipeline.Quote(name)
	}
	if city != "" {
		c := city
		if quoteable(city, true) {
			c = pipeline.Quote(city)
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
