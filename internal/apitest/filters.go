package apitest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// filterCase is a filter expression and the suite's own predicate for it,
// computed over the whole listing, so the implementation's filter is never
// checked against itself.
type filterCase struct {
	expr string
	keep func(row map[string]any) bool
}

// filters checks every construct of the filter language on ep: each case's
// rows are exactly the rows of the whole listing that its predicate keeps,
// in the same order, and meta.total counts them.
func (s *suite) filters(t *testing.T, ep *catalog.Endpoint) {
	q := s.base(ep, s.cfg.Target)
	whole, _ := s.all(t, ep, q)
	cases := filterCases(ep, whole)
	require.NotEmpty(t, cases, "%s: no filter case could be built from %d rows", ep.Name, len(whole))
	narrowed := false
	for _, c := range cases {
		var want []map[string]any
		for _, r := range whole {
			if c.keep(r) {
				want = append(want, r)
			}
		}
		got, env := s.all(t, ep, with(q, "filter", c.expr))
		require.Equal(t, len(want), env.total(t), "%s filter %s: meta.total", ep.Name, c.expr)
		require.Equal(t, render(want), render(got), "%s filter %s: the rows", ep.Name, c.expr)
		if slices.Contains(ep.Echoes, "filter") {
			require.Equal(t, c.expr, env.Meta["filter"], "%s: meta.filter echoes the filter", ep.Name)
		}
		narrowed = narrowed || (len(want) > 0 && len(want) < len(whole))
	}
	require.True(t, narrowed, "%s: no filter case kept some rows but not all; the data is too uniform to test filters", ep.Name)
}

func filterCases(ep *catalog.Endpoint, rows []map[string]any) []filterCase {
	var cases []filterCase
	if len(rows) == 0 {
		return nil
	}
	if ep.Name == "matrix" {
		at := func(r map[string]any, i int) int64 {
			items, _ := r["backlinks_counts"].([]any)
			if i >= len(items) {
				return 0
			}
			return num(items[i])
		}
		cases = append(cases,
			filterCase{"backlinks_counts[1] > 0", func(r map[string]any) bool { return at(r, 0) > 0 }},
			filterCase{"backlinks_counts[2] = 0 OR matches_count >= 2", func(r map[string]any) bool {
				return at(r, 1) == 0 || num(r["matches_count"]) >= 2
			}},
		)
	}
	for _, f := range ep.Fields {
		switch f.Kind {
		case catalog.Int:
			cases = append(cases, intCases(f.Name, rows)...)
		case catalog.Float:
			cases = append(cases, floatCases(f.Name, rows)...)
		case catalog.Text:
			cases = append(cases, textCases(f.Name, rows)...)
		case catalog.Bool:
			name := f.Name
			cases = append(cases,
				filterCase{name + " = true", func(r map[string]any) bool { return r[name] == true }},
				filterCase{name + " = false", func(r map[string]any) bool { return r[name] == false }},
				filterCase{name + " != true", func(r map[string]any) bool { return r[name] == false }},
			)
		case catalog.Timestamp:
			cases = append(cases, timeCases(f.Name, rows)...)
		}
	}
	return cases
}

func num(v any) int64 {
	n, _ := strconv.ParseInt(cell(v), 10, 64)
	return n
}

func numF(v any) float64 {
	n, _ := strconv.ParseFloat(cell(v), 64)
	return n
}

// quantiles returns the sorted values of field at 0, 1/4, 1/2 and 3/4.
func quantiles[T int64 | float64](rows []map[string]any, get func(any) T, field string) (lo, q1, med, q3 T) {
	var vals []T
	for _, r := range rows {
		if r[field] != nil {
			vals = append(vals, get(r[field]))
		}
	}
	if len(vals) == 0 {
		return
	}
	slices.Sort(vals)
	return vals[0], vals[len(vals)/4], vals[len(vals)/2], vals[3*len(vals)/4]
}

func intCases(name string, rows []map[string]any) []filterCase {
	lo, q1, med, q3 := quantiles(rows, num, name)
	if rows[0][name] == nil {
		return nil
	}
	v0 := num(rows[0][name])
	get := func(r map[string]any) (int64, bool) { return num(r[name]), r[name] != nil }
	cmp := func(op func(x int64) bool) func(map[string]any) bool {
		return func(r map[string]any) bool { x, ok := get(r); return ok && op(x) }
	}
	return []filterCase{
		{fmt.Sprintf("%s >= %d", name, med), cmp(func(x int64) bool { return x >= med })},
		{fmt.Sprintf("%s < %d", name, med), cmp(func(x int64) bool { return x < med })},
		{fmt.Sprintf("%s = %d", name, v0), cmp(func(x int64) bool { return x == v0 })},
		{fmt.Sprintf("%s != %d", name, v0), cmp(func(x int64) bool { return x != v0 })},
		{fmt.Sprintf("%s <> %d", name, v0), cmp(func(x int64) bool { return x != v0 })},
		{fmt.Sprintf("%s <= %d AND %s > %d", name, med, name, lo), cmp(func(x int64) bool { return x <= med && x > lo })},
		{fmt.Sprintf("%s > %d OR %s = %d", name, q3, name, v0), cmp(func(x int64) bool { return x > q3 || x == v0 })},
		// AND binds tighter than OR; parentheses override it.
		{fmt.Sprintf("%s < %d OR %s > %d AND %s != %d", name, q1, name, q3, name, v0),
			cmp(func(x int64) bool { return x < q1 || (x > q3 && x != v0) })},
		{fmt.Sprintf("(%s < %d OR %s > %d) and %s != %d", name, q1, name, q3, name, v0),
			cmp(func(x int64) bool { return (x < q1 || x > q3) && x != v0 })},
		{fmt.Sprintf("((%s >= %d))", name, q1), cmp(func(x int64) bool { return x >= q1 })},
	}
}

func floatCases(name string, rows []map[string]any) []filterCase {
	_, _, med, _ := quantiles(rows, numF, name)
	lit := strconv.FormatFloat(med, 'f', -1, 64)
	if !strings.Contains(lit, ".") {
		lit += ".0"
	}
	return []filterCase{
		{fmt.Sprintf("%s > %s", name, lit), func(r map[string]any) bool { return r[name] != nil && numF(r[name]) > med }},
		{fmt.Sprintf("%s <= %s", name, lit), func(r map[string]any) bool { return r[name] != nil && numF(r[name]) <= med }},
	}
}

// quote writes s as a filter string literal in quote q: only q and the
// backslash are escaped.
func quote(s string, q byte) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, string(q), `\`+string(q))
	return string(q) + s + string(q)
}

func textCases(name string, rows []map[string]any) []filterCase {
	// A value usable in a pattern: no wildcard, no line break, 3+ runes.
	var v string
	for _, r := range rows {
		s, _ := r[name].(string)
		if utf8.RuneCountInString(s) >= 3 && !strings.ContainsAny(s, "%\r\n") {
			v = s
			break
		}
	}
	if v == "" {
		return nil
	}
	runes := []rune(v)
	pre, suf := string(runes[:2]), string(runes[len(runes)-2:])
	mid := string(runes[1 : len(runes)-1])
	str := func(r map[string]any) (string, bool) { s, ok := r[name].(string); return s, ok }
	keep := func(f func(string) bool) func(map[string]any) bool {
		return func(r map[string]any) bool { s, ok := str(r); return ok && f(s) }
	}
	cases := []filterCase{
		{name + " = " + quote(v, '\''), keep(func(s string) bool { return s == v })},
		{name + " = " + quote(v, '"'), keep(func(s string) bool { return s == v })},
		{name + " != " + quote(v, '\''), keep(func(s string) bool { return s != v })},
		{name + " LIKE " + quote(pre+"%", '\''), keep(func(s string) bool { return strings.HasPrefix(s, pre) })},
		{name + " LIKE " + quote("%"+suf, '"'), keep(func(s string) bool { return strings.HasSuffix(s, suf) })},
		{name + " LIKE " + quote("%"+mid+"%", '\''), keep(func(s string) bool { return strings.Contains(s, mid) })},
		{name + " NOT LIKE " + quote(pre+"%", '\''), keep(func(s string) bool { return !strings.HasPrefix(s, pre) })},
		{name + " like " + quote(v, '\''), keep(func(s string) bool { return s == v })},
		// Escaped quotes and backslashes.
		{name + " != " + quote(`it's "quoted" \ here`, '\''), keep(func(s string) bool { return s != `it's "quoted" \ here` })},
		{name + " != " + quote(`it's "quoted" \ here`, '"'), keep(func(s string) bool { return s != `it's "quoted" \ here` })},
	}
	// A value holding a quote, when the data has one, matched exactly.
	for _, r := range rows {
		if s, ok := str(r); ok && strings.ContainsAny(s, `'"\`) && !strings.ContainsAny(s, "%\r\n") {
			cases = append(cases,
				filterCase{name + " = " + quote(s, '\''), keep(func(x string) bool { return x == s })},
				filterCase{name + " = " + quote(s, '"'), keep(func(x string) bool { return x == s })})
			break
		}
	}
	return cases
}

func timeCases(name string, rows []map[string]any) []filterCase {
	var vals []string
	for _, r := range rows {
		if s, ok := r[name].(string); ok {
			vals = append(vals, s)
		}
	}
	if len(vals) == 0 {
		return nil
	}
	slices.Sort(vals)
	med := vals[len(vals)/2]
	day := med[:10]
	noon := day + "T12:00:00"
	keep := func(f func(string) bool) func(map[string]any) bool {
		return func(r map[string]any) bool { s, ok := r[name].(string); return ok && f(s) }
	}
	// ISO timestamps order as strings; a date means its midnight.
	return []filterCase{
		{name + " > " + day, keep(func(s string) bool { return s > day+"T00:00:00" })},
		{name + " < '" + day + "'", keep(func(s string) bool { return s < day+"T00:00:00" })},
		{name + " >= " + quote(noon, '\''), keep(func(s string) bool { return s >= noon })},
		{name + " <= " + noon, keep(func(s string) bool { return s <= noon })},
		{name + " = " + quote(med, '"'), keep(func(s string) bool { return s == med })},
	}
}
