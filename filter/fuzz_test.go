package filter

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// fuzzRows are fixed rows of ep: every field NULL, zero values, typical
// values with the per-target list in Ints, and the same answering
// backlinks_counts[n] element by element.
func fuzzRows(ep *catalog.Endpoint) []Row {
	value := func(field string, index int, zero, elementwise bool) Value {
		f, ok := ep.Field(field)
		if !ok {
			panic("filter asked for " + field + ", not a field of " + ep.Name)
		}
		if zero {
			return Value{}
		}
		switch categoryOf(f.Kind) {
		case catInt:
			if f.Kind == catalog.IntList && !elementwise {
				return Value{Ints: []int64{0, 3, 10}}
			}
			return Value{Int: 50 + int64(index)}
		case catNum:
			return Value{Float: 0.5}
		case catText:
			return Value{Str: "best seo tools"}
		case catBool:
			return Value{Bool: true}
		case catTime, catDate:
			return Value{Time: ts("2026-01-15T00:00:00")}
		}
		panic("filter asked for the list " + field)
	}
	return []Row{
		func(string, int) Value { return Value{Null: true} },
		func(f string, i int) Value { return value(f, i, true, false) },
		func(f string, i int) Value { return value(f, i, false, false) },
		func(f string, i int) Value { return value(f, i, false, true) },
	}
}

// FuzzParse: Parse never panics; an error is an *Error pointing into the
// text; an expression prints to a canonical form that parses to the same
// tree and prints the same, a compact form no longer than the input, and
// matches the fixed rows as the original does.
func FuzzParse(f *testing.F) {
	eps := catalog.All()
	index := map[string]uint8{}
	for i, ep := range eps {
		index[ep.Name] = uint8(i)
	}
	for _, tc := range allMatchCases() {
		f.Add(tc.expr, index[tc.ep])
	}
	for _, tc := range errorCases {
		f.Add(tc.expr, index[tc.ep])
	}
	f.Fuzz(func(t *testing.T, src string, which uint8) {
		ep := eps[int(which)%len(eps)]
		e, err := Parse(src, ep)
		if err != nil {
			require.Nil(t, e)
			var fe *Error
			require.ErrorAs(t, err, &fe)
			require.GreaterOrEqual(t, fe.Pos, 1)
			require.LessOrEqual(t, fe.Pos, utf8.RuneCountInString(src)+1)
			require.NotEmpty(t, fe.Msg)
			return
		}
		requireRoundTrip(t, e, src)
		again, err := Parse(e.String(), ep)
		require.NoError(t, err)
		for _, r := range fuzzRows(ep) {
			require.Equal(t, e.Match(r), again.Match(r))
		}
		require.NotEmpty(t, e.Fields())
		require.LessOrEqual(t, e.MaxTarget(), maxTargets(ep))
		if err := e.CheckTargets(int(which % 8)); err != nil {
			var fe *Error
			require.ErrorAs(t, err, &fe)
			require.LessOrEqual(t, fe.Pos, utf8.RuneCountInString(src))
		}
	})
}

// FuzzLike checks the LIKE matcher against a regular expression: % is .*
// and everything else is itself.
func FuzzLike(f *testing.F) {
	for _, tc := range matchCases {
		if _, p, ok := strings.Cut(tc.expr, "LIKE '"); ok {
			p, _, _ = strings.Cut(p, "'")
			for _, r := range append(tc.hits, tc.misses...) {
				for _, v := range r {
					f.Add(p, v.Str)
				}
			}
		}
	}
	f.Add("a%a", "a")
	f.Add("%ab%ba%", "aba")
	f.Fuzz(func(t *testing.T, p, s string) {
		// Parse takes UTF-8 text only, so a pattern is valid UTF-8; the
		// regexp reads a bad byte of s as U+FFFD, which a byte-wise
		// matcher does not.
		if !utf8.ValidString(p) || !utf8.ValidString(s) && strings.ContainsRune(p, utf8.RuneError) {
			t.Skip()
		}
		parts := strings.Split(p, "%")
		for i, part := range parts {
			parts[i] = regexp.QuoteMeta(part)
		}
		re := regexp.MustCompile(`(?s)\A` + strings.Join(parts, ".*") + `\z`)
		like := compileLike(p)
		require.Equal(t, re.MatchString(s), like.match(s), "%q LIKE %q", s, p)
	})
}
