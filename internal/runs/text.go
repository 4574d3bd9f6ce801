package runs

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/money"
)

// unitsCost is " (3.57 USD)" beside a count of units; "" without a price
// or a count.
func unitsCost(p *money.Price, units *int64) string {
	if units == nil {
		return ""
	}
	return money.Beside(p, *units)
}

// stamp renders a time in UTC, RFC 3339; nil is "-".
func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// countOrDash renders a nullable count; nil is "-".
func countOrDash(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

// runDuration renders finished_at - started_at; "-" while unfinished.
func runDuration(r RunRow) string {
	if r.FinishedAt == nil {
		return "-"
	}
	return r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()
}

// oneLine renders an error on one line, whole; nil is "".
func oneLine(s *string) string {
	if s == nil {
		return ""
	}
	return strings.Join(strings.Fields(*s), " ")
}

// firstLine renders the first line of an error, cut to at most n runes.
func firstLine(s *string, n int) string {
	if s == nil {
		return ""
	}
	line, _, more := strings.Cut(strings.TrimSpace(*s), "\n")
	line = strings.TrimSpace(line)
	if r := []rune(line); len(r) > n {
		line, more = string(r[:n-1]), true
	}
	if more {
		line += "…"
	}
	return line
}

// shownError shows an error's line as it is, or quoted (jobspec.Quote)
// when it holds what is not graphic or is not UTF-8, so that it cannot
// reach the terminal.
func (v Views) shownError(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) }) {
		return jobspec.Quote(s)
	}
	return s
}
