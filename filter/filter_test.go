package filter

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// matchCase is a valid expression, its canonical form, and rows it must and
// must not match.
type matchCase struct {
	name   string
	ep     string
	expr   string
	want   string // canonical form
	hits   []row
	misses []row
}

func ts(s string) int64 {
	tm, err := time.Parse(dateTimeLayout, s)
	if err != nil {
		panic(err)
	}
	return tm.Unix()
}

// kindCase is one field kind with a literal and three values below, at and
// above it, for the table of every comparison on every kind.
type kindCase struct {
	name, ep, operand string
	lit, canon        string // the literal as written and as printed
	lo, at, hi        Value
}

var kindCases = []kindCase{
	{"Int", "links", "page_score", "50", "50", Value{Int: 49}, Value{Int: 50}, Value{Int: 51}},
	{"Int negative", "links", "response_code", "-1", "-1", Value{Int: -2}, Value{Int: -1}, Value{Int: 0}},
	{"Int leading zeros", "links", "domain_score", "007", "7", Value{Int: 6}, Value{Int: 7}, Value{Int: 8}},
	{"Int minus zero", "links", "source_size", "-0", "0", Value{Int: -1}, Value{Int: 0}, Value{Int: 1}},
	{"IntString", "keyword-metrics", "search_volume", "1000", "1000", Value{Int: 999}, Value{Int: 1000}, Value{Int: 1001}},
	{"Float", "competitors", "similarity", "0.50", "0.5", Value{Float: 0.49}, Value{Float: 0.5}, Value{Float: 0.51}},
	{"Float integer literal", "competitors", "similarity", "1", "1", Value{Float: 0.99}, Value{Float: 1}, Value{Float: 1.01}},
	{"Float small", "competitors", "similarity", "0.000001", "0.000001", Value{Float: 0}, Value{Float: 0.000001}, Value{Float: 0.1}},
	{"DecString", "keyword-metrics", "cpc", "1.25", "1.25", Value{Float: 1.24}, Value{Float: 1.25}, Value{Float: 1.26}},
	{"Text", "links", "anchor", "'m'", "'m'", Value{Str: "l"}, Value{Str: "m"}, Value{Str: "n"}},
	{"Text double quotes", "links", "anchor", `"seo tools"`, "'seo tools'", Value{Str: "seo"}, Value{Str: "seo tools"}, Value{Str: "seo tools!"}},
	{"Text bytes not case", "links", "lang", "'en'", "'en'", Value{Str: "EN"}, Value{Str: "en"}, Value{Str: "es"}},
	{"Timestamp date", "links", "first_seen_at", "2026-01-15", "2026-01-15",
		Value{Time: ts("2026-01-14T23:59:59")}, Value{Time: ts("2026-01-15T00:00:00")}, Value{Time: ts("2026-01-15T00:00:01")}},
	{"Timestamp date-time", "links", "last_seen_at", "2026-01-15T10:00:00", "2026-01-15T10:00:00",
		Value{Time: ts("2026-01-15T09:59:59")}, Value{Time: ts("2026-01-15T10:00:00")}, Value{Time: ts("2026-01-15T10:00:01")}},
	{"Timestamp date-time Z", "ref-domains", "first_seen_at", "2026-01-15T10:00:00Z", "2026-01-15T10:00:00",
		Value{Time: ts("2026-01-15T09:59:59")}, Value{Time: ts("2026-01-15T10:00:00")}, Value{Time: ts("2026-01-15T10:00:01")}},
	{"Timestamp quoted date", "pages", "last_seen_at", "'2026-01-15'", "2026-01-15",
		Value{Time: ts("2026-01-14T00:00:00")}, Value{Time: ts("2026-01-15T00:00:00")}, Value{Time: ts("2026-01-16T00:00:00")}},
	{"Timestamp quoted date-time with a space", "anchors", "first_seen_at", `"2026-01-15 10:00:00"`, "2026-01-15T10:00:00",
		Value{Time: ts("2026-01-15T09:00:00")}, Value{Time: ts("2026-01-15T10:00:00")}, Value{Time: ts("2026-01-15T11:00:00")}},
	{"Date", "summary", "month_date", "2026-01-01", "2026-01-01",
		Value{Time: ts("2025-12-01T00:00:00")}, Value{Time: ts("2026-01-01T00:00:00")}, Value{Time: ts("2026-02-01T00:00:00")}},
	{"Date quoted", "comparison", "month_date", "'2026-01-01'", "2026-01-01",
		Value{Time: ts("2025-12-01T00:00:00")}, Value{Time: ts("2026-01-01T00:00:00")}, Value{Time: ts("2026-02-01T00:00:00")}},
	{"matrix element from the list", "matrix", "backlinks_counts[2]", "0", "0",
		Value{Ints: []int64{9, -1}}, Value{Ints: []int64{9, 0}}, Value{Ints: []int64{9, 1, 5}}},
	{"matrix element from Int", "matrix", "backlinks_counts[02]", "3", "3", Value{Int: 2}, Value{Int: 3}, Value{Int: 4}},
	{"matrix scalar", "matrix", "matches_count", "2", "2", Value{Int: 1}, Value{Int: 2}, Value{Int: 3}},
}

// opCases are the six comparisons with their results below, at and above
// the literal.
var opCases = []struct {
	op, canon string
	want      [3]bool
}{
	{"=", "=", [3]bool{false, true, false}},
	{"!=", "!=", [3]bool{true, false, true}},
	{"<>", "!=", [3]bool{true, false, true}},
	{"<", "<", [3]bool{true, false, false}},
	{"<=", "<=", [3]bool{true, true, false}},
	{">", ">", [3]bool{false, false, true}},
	{">=", ">=", [3]bool{false, true, true}},
}

// field is the field name of an operand ("backlinks_counts[2]" ->
// "backlinks_counts").
func field(operand string) string {
	name, _, _ := strings.Cut(operand, "[")
	return name
}

// comparisonCases is every comparison on every kind, each with a NULL row
// among its misses.
func comparisonCases() []matchCase {
	var cases []matchCase
	for _, k := range kindCases {
		for _, o := range opCases {
			c := matchCase{
				name:   k.name + " " + o.op,
				ep:     k.ep,
				expr:   k.operand + " " + o.op + " " + k.lit,
				want:   strings.Replace(k.operand, "[02]", "[2]", 1) + " " + o.canon + " " + k.canon,
				misses: []row{{}},
			}
			for i, v := range []Value{k.lo, k.at, k.hi} {
				r := row{field(k.operand): v}
				if o.want[i] {
					c.hits = append(c.hits, r)
				} else {
					c.misses = append(c.misses, r)
				}
			}
			cases = append(cases, c)
		}
	}
	return cases
}

var matchCases = []matchCase{
	{name: "bool = true", ep: "links", expr: "is_new = true", want: "is_new = true",
		hits: []row{{"is_new": {Bool: true}}}, misses: []row{{"is_new": {Bool: false}}, {}}},
	{name: "bool = FALSE", ep: "links", expr: "is_nofollow = FALSE", want: "is_nofollow = false",
		hits: []row{{"is_nofollow": {Bool: false}}}, misses: []row{{"is_nofollow": {Bool: true}}, {}}},
	{name: "bool != True", ep: "ref-domains", expr: "is_follow != True", want: "is_follow != true",
		hits: []row{{"is_follow": {Bool: false}}}, misses: []row{{"is_follow": {Bool: true}}, {}}},
	{name: "bool <> false", ep: "links", expr: "is_lost<>false", want: "is_lost != false",
		hits: []row{{"is_lost": {Bool: true}}}, misses: []row{{"is_lost": {Bool: false}}, {}}},

	{name: "AND binds tighter than OR", ep: "links",
		expr: "page_score > 50 OR domain_score > 50 AND is_new = true",
		want: "page_score > 50 OR domain_score > 50 AND is_new = true",
		hits: []row{
			{"page_score": {Int: 60}, "domain_score": {Int: 0}, "is_new": {Bool: false}},
			{"page_score": {Int: 0}, "domain_score": {Int: 60}, "is_new": {Bool: true}},
		},
		misses: []row{
			{"page_score": {Int: 0}, "domain_score": {Int: 60}, "is_new": {Bool: false}},
			{"page_score": {Int: 0}, "domain_score": {Int: 0}, "is_new": {Bool: true}},
		}},
	{name: "AND first then OR", ep: "links",
		expr: "page_score > 50 AND domain_score > 50 OR is_new = true",
		want: "page_score > 50 AND domain_score > 50 OR is_new = true",
		hits: []row{
			{"page_score": {Int: 0}, "domain_score": {Int: 0}, "is_new": {Bool: true}},
			{"page_score": {Int: 60}, "domain_score": {Int: 60}, "is_new": {Bool: false}},
		},
		misses: []row{{"page_score": {Int: 60}, "domain_score": {Int: 0}, "is_new": {Bool: false}}}},
	{name: "parentheses override precedence", ep: "links",
		expr: "(page_score > 50 OR domain_score > 50) AND is_new = true",
		want: "(page_score > 50 OR domain_score > 50) AND is_new = true",
		hits: []row{{"page_score": {Int: 60}, "is_new": {Bool: true}}},
		misses: []row{
			{"page_score": {Int: 60}, "domain_score": {Int: 0}, "is_new": {Bool: false}},
			{"page_score": {Int: 0}, "domain_score": {Int: 0}, "is_new": {Bool: true}},
		}},
	{name: "nested parentheses", ep: "links",
		expr: "((page_score > 50 OR (domain_score > 50 AND is_lost = false)) AND (is_new = true))",
		want: "(page_score > 50 OR domain_score > 50 AND is_lost = false) AND is_new = true",
		hits: []row{
			{"domain_score": {Int: 60}, "is_lost": {Bool: false}, "is_new": {Bool: true}},
			{"page_score": {Int: 60}, "is_new": {Bool: true}},
		},
		misses: []row{
			{"domain_score": {Int: 60}, "is_lost": {Bool: true}, "is_new": {Bool: true}},
			{"page_score": {Int: 60}, "is_new": {Bool: false}},
		}},
	{name: "OR inside AND inside OR", ep: "links",
		expr:   "is_new = true OR (page_score > 1 OR domain_score > 1) AND (is_lost = false OR is_ugc = true)",
		want:   "is_new = true OR (page_score > 1 OR domain_score > 1) AND (is_lost = false OR is_ugc = true)",
		hits:   []row{{"is_new": {Bool: true}}, {"domain_score": {Int: 2}, "is_ugc": {Bool: true}}},
		misses: []row{{"domain_score": {Int: 2}, "is_ugc": {Bool: false}, "is_lost": {Bool: true}}}},
	{name: "redundant parentheses", ep: "links", expr: "(((page_score > 1)))", want: "page_score > 1",
		hits: []row{{"page_score": {Int: 2}}}, misses: []row{{"page_score": {Int: 1}}}},
	{name: "AND chains flatten", ep: "links",
		expr:   "page_score > 1 AND (domain_score > 1 AND (is_new = true AND is_lost = false))",
		want:   "page_score > 1 AND domain_score > 1 AND is_new = true AND is_lost = false",
		hits:   []row{{"page_score": {Int: 2}, "domain_score": {Int: 2}, "is_new": {Bool: true}, "is_lost": {Bool: false}}},
		misses: []row{{"page_score": {Int: 2}, "domain_score": {Int: 2}, "is_new": {Bool: true}, "is_lost": {Bool: true}}}},
	{name: "OR chains flatten", ep: "links",
		expr: "(page_score = 1 OR page_score = 2) OR (page_score = 3 OR (page_score = 4))",
		want: "page_score = 1 OR page_score = 2 OR page_score = 3 OR page_score = 4",
		hits: []row{{"page_score": {Int: 1}}, {"page_score": {Int: 4}}}, misses: []row{{"page_score": {Int: 5}}}},
	{name: "keywords in lower case", ep: "links",
		expr:   "page_score > 1 and anchor not like '%x%' or is_new = false",
		want:   "page_score > 1 AND anchor NOT LIKE '%x%' OR is_new = false",
		hits:   []row{{"page_score": {Int: 2}, "anchor": {Str: "abc"}}, {"is_new": {Bool: false}}},
		misses: []row{{"page_score": {Int: 2}, "anchor": {Str: "xyz"}, "is_new": {Bool: true}}}},
	{name: "keywords in mixed case", ep: "links",
		expr: "anchor Like 'a%' aNd is_new = True Or anchor NoT lIkE '%'",
		want: "anchor LIKE 'a%' AND is_new = true OR anchor NOT LIKE '%'",
		hits: []row{{"anchor": {Str: "ab"}, "is_new": {Bool: true}}}, misses: []row{{"anchor": {Str: "ba"}, "is_new": {Bool: true}}}},
	{name: "no spaces", ep: "links",
		expr: "page_score>50 AND(anchor LIKE'%seo%'OR is_new=true)",
		want: "page_score > 50 AND (anchor LIKE '%seo%' OR is_new = true)",
		hits: []row{{"page_score": {Int: 51}, "anchor": {Str: "best seo"}}}, misses: []row{{"page_score": {Int: 51}, "anchor": {Str: "SEO"}}}},
	{name: "tabs and newlines", ep: "links", expr: "\n\tpage_score\t>\r\n50\n", want: "page_score > 50",
		hits: []row{{"page_score": {Int: 51}}}, misses: []row{{"page_score": {Int: 50}}}},
	{name: "keyword text in a string", ep: "links", expr: "anchor = 'AND' OR anchor = \"or\"", want: "anchor = 'AND' OR anchor = 'or'",
		hits: []row{{"anchor": {Str: "AND"}}, {"anchor": {Str: "or"}}}, misses: []row{{"anchor": {Str: "and"}}}},

	{name: "single quote escaped", ep: "links", expr: `anchor = 'it\'s'`, want: `anchor = "it's"`,
		hits: []row{{"anchor": {Str: "it's"}}}, misses: []row{{"anchor": {Str: `it\'s`}}}},
	{name: "double quote escaped", ep: "links", expr: `anchor = "a \"b\""`, want: `anchor = 'a "b"'`,
		hits: []row{{"anchor": {Str: `a "b"`}}}, misses: []row{{"anchor": {Str: "a b"}}}},
	{name: "backslash escaped", ep: "links", expr: `anchor = 'back\\slash'`, want: `anchor = 'back\\slash'`,
		hits: []row{{"anchor": {Str: `back\slash`}}}, misses: []row{{"anchor": {Str: `back\\slash`}}}},
	{name: "backslash in double quotes", ep: "links", expr: `anchor = "C:\\dir"`, want: `anchor = 'C:\\dir'`,
		hits: []row{{"anchor": {Str: `C:\dir`}}}},
	{name: "other quote unescaped", ep: "links", expr: `anchor = "it's" OR anchor = 'say "hi"'`, want: `anchor = "it's" OR anchor = 'say "hi"'`,
		hits: []row{{"anchor": {Str: "it's"}}, {"anchor": {Str: `say "hi"`}}}},
	{name: "both quotes: single wins a tie", ep: "links", expr: `anchor = "both ' and \""`, want: `anchor = 'both \' and "'`,
		hits: []row{{"anchor": {Str: `both ' and "`}}}},
	{name: "empty string", ep: "links", expr: `redirect_url = ""`, want: `redirect_url = ''`,
		hits: []row{{"redirect_url": {Str: ""}}}, misses: []row{{"redirect_url": {Str: "x"}}, {}}},
	{name: "non-ASCII string", ep: "links", expr: "anchor = 'café ✓'", want: "anchor = 'café ✓'",
		hits: []row{{"anchor": {Str: "café ✓"}}}, misses: []row{{"anchor": {Str: "cafe ✓"}}}},
	{name: "newline inside a string", ep: "links", expr: "anchor = 'a\nb'", want: "anchor = 'a\nb'",
		hits: []row{{"anchor": {Str: "a\nb"}}}},

	{name: "LIKE % at the end", ep: "links", expr: "anchor LIKE 'seo%'", want: "anchor LIKE 'seo%'",
		hits:   []row{{"anchor": {Str: "seo"}}, {"anchor": {Str: "seo tools"}}},
		misses: []row{{"anchor": {Str: "best seo"}}, {"anchor": {Str: "SEO tools"}}, {"anchor": {Str: "se"}}, {}}},
	{name: "LIKE % at the start", ep: "links", expr: "anchor LIKE '%seo'", want: "anchor LIKE '%seo'",
		hits:   []row{{"anchor": {Str: "seo"}}, {"anchor": {Str: "best seo"}}},
		misses: []row{{"anchor": {Str: "seo tools"}}, {"anchor": {Str: "eo"}}}},
	{name: "LIKE % in the middle", ep: "links", expr: "anchor LIKE 's%o'", want: "anchor LIKE 's%o'",
		hits:   []row{{"anchor": {Str: "so"}}, {"anchor": {Str: "seo"}}, {"anchor": {Str: "s o o"}}},
		misses: []row{{"anchor": {Str: "s"}}, {"anchor": {Str: "o"}}, {"anchor": {Str: "seo!"}}}},
	{name: "LIKE % at both ends", ep: "links", expr: "anchor LIKE '%seo%'", want: "anchor LIKE '%seo%'",
		hits:   []row{{"anchor": {Str: "seo"}}, {"anchor": {Str: "best seo tools"}}},
		misses: []row{{"anchor": {Str: "s e o"}}, {"anchor": {Str: "Seo"}}}},
	{name: "LIKE without %", ep: "links", expr: "anchor LIKE 'seo'", want: "anchor LIKE 'seo'",
		hits: []row{{"anchor": {Str: "seo"}}}, misses: []row{{"anchor": {Str: "seo "}}, {"anchor": {Str: "SEO"}}}},
	{name: "LIKE several %", ep: "links", expr: "source_url LIKE 'https://%/blog/%.html'", want: "source_url LIKE 'https://%/blog/%.html'",
		hits: []row{{"source_url": {Str: "https://a.example/blog/x.html"}}, {"source_url": {Str: "https:///blog/.html"}}},
		misses: []row{
			{"source_url": {Str: "http://a.example/blog/x.html"}},
			{"source_url": {Str: "https://a.example/blog/x.htm"}},
			{"source_url": {Str: "https://a.example/x.html"}},
		}},
	{name: "LIKE pieces in order", ep: "links", expr: "anchor LIKE '%a%b%'", want: "anchor LIKE '%a%b%'",
		hits:   []row{{"anchor": {Str: "ab"}}, {"anchor": {Str: "xaxbx"}}, {"anchor": {Str: "baab"}}},
		misses: []row{{"anchor": {Str: "ba"}}, {"anchor": {Str: "a"}}}},
	{name: "LIKE prefix and suffix do not overlap", ep: "links", expr: "anchor LIKE 'ab%ba'", want: "anchor LIKE 'ab%ba'",
		hits: []row{{"anchor": {Str: "abba"}}, {"anchor": {Str: "ab ba"}}}, misses: []row{{"anchor": {Str: "aba"}}}},
	{name: "LIKE % alone matches every string", ep: "links", expr: "anchor LIKE '%%'", want: "anchor LIKE '%%'",
		hits: []row{{"anchor": {Str: ""}}, {"anchor": {Str: "x"}}}, misses: []row{{}}},
	{name: "LIKE _ is not a wildcard", ep: "links", expr: "anchor LIKE 'a_c'", want: "anchor LIKE 'a_c'",
		hits: []row{{"anchor": {Str: "a_c"}}}, misses: []row{{"anchor": {Str: "abc"}}}},
	{name: "NOT LIKE % at the end", ep: "links", expr: "source_domain NOT LIKE 'www.%'", want: "source_domain NOT LIKE 'www.%'",
		hits:   []row{{"source_domain": {Str: "blog.example"}}},
		misses: []row{{"source_domain": {Str: "www.example"}}, {}}},
	{name: "NOT LIKE % at the start", ep: "links", expr: "source_domain NOT LIKE '%.ru'", want: "source_domain NOT LIKE '%.ru'",
		hits: []row{{"source_domain": {Str: "a.rus"}}}, misses: []row{{"source_domain": {Str: "a.ru"}}}},
	{name: "NOT LIKE % in the middle", ep: "links", expr: "anchor NOT LIKE 'a%z'", want: "anchor NOT LIKE 'a%z'",
		hits: []row{{"anchor": {Str: "az "}}}, misses: []row{{"anchor": {Str: "a to z"}}}},
	{name: "NOT LIKE without %", ep: "links", expr: "lang not like 'en'", want: "lang NOT LIKE 'en'",
		hits: []row{{"lang": {Str: "de"}}, {"lang": {Str: "EN"}}}, misses: []row{{"lang": {Str: "en"}}}},

	{name: "matrix gap", ep: "matrix",
		expr: "backlinks_counts[1] = 0 AND backlinks_counts[2] > 0 AND domain_score >= 30",
		want: "backlinks_counts[1] = 0 AND backlinks_counts[2] > 0 AND domain_score >= 30",
		hits: []row{{"backlinks_counts": {Ints: []int64{0, 4}}, "domain_score": {Int: 30}}},
		misses: []row{
			{"backlinks_counts": {Ints: []int64{1, 4}}, "domain_score": {Int: 30}},
			{"backlinks_counts": {Ints: []int64{0}}, "domain_score": {Int: 30}},
			{"backlinks_counts": {Ints: []int64{}}, "domain_score": {Int: 30}},
			{"domain_score": {Int: 30}},
		}},
	{name: "matrix with spaces in the index", ep: "matrix", expr: "backlinks_counts [ 6 ] >= 1 or country = 'DE'",
		want:   "backlinks_counts[6] >= 1 OR country = 'DE'",
		hits:   []row{{"backlinks_counts": {Ints: []int64{0, 0, 0, 0, 0, 1}}}, {"country": {Str: "DE"}}},
		misses: []row{{"backlinks_counts": {Ints: []int64{1, 1, 1, 1, 1}}, "country": {Str: "de"}}}},
	{name: "int64 bounds", ep: "links",
		expr: "source_size < 9223372036854775807 AND source_size > -9223372036854775808",
		want: "source_size < 9223372036854775807 AND source_size > -9223372036854775808",
		hits: []row{{"source_size": {Int: 0}}}, misses: []row{{"source_size": {Int: 9223372036854775807}}}},
	{name: "15 significant digits", ep: "competitors", expr: "similarity < 0.123456789012345000", want: "similarity < 0.123456789012345",
		hits: []row{{"similarity": {Float: 0.12}}}, misses: []row{{"similarity": {Float: 0.13}}}},
	{name: "large number", ep: "competitors", expr: "similarity < 100000000000000000000000", want: "similarity < 100000000000000000000000",
		hits: []row{{"similarity": {Float: 1}}}},
	{name: "leap day", ep: "links", expr: "first_seen_at >= 2024-02-29 AND first_seen_at < 2024-03-01", want: "first_seen_at >= 2024-02-29 AND first_seen_at < 2024-03-01",
		hits: []row{{"first_seen_at": {Time: ts("2024-02-29T23:59:59")}}}, misses: []row{{"first_seen_at": {Time: ts("2024-03-01T00:00:00")}}}},
}

func allMatchCases() []matchCase {
	return append(comparisonCases(), matchCases...)
}

func TestParseMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range allMatchCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tc.expr, endpoint(t, tc.ep))
			require.NoError(t, err)
			require.Equal(t, tc.want, e.String())
			for _, r := range tc.hits {
				require.True(t, e.Match(r.get), "%s should match %v", tc.expr, r)
			}
			for _, r := range tc.misses {
				require.False(t, e.Match(r.get), "%s should not match %v", tc.expr, r)
			}
		})
	}
}

func TestStringRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range allMatchCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tc.expr, endpoint(t, tc.ep))
			require.NoError(t, err)
			requireRoundTrip(t, e, tc.expr)
			again, err := Parse(e.String(), e.ep)
			require.NoError(t, err)
			for _, r := range append(tc.hits, tc.misses...) {
				require.Equal(t, e.Match(r.get), again.Match(r.get), "%v", r)
			}
		})
	}
}

// An expression of MaxLen bytes written without spaces has a readable form
// longer than MaxLen; String falls back to the compact form, which parses.
func TestStringAtTheLengthBound(t *testing.T) {
	t.Parallel()
	links := endpoint(t, "links")
	var b strings.Builder
	b.WriteString("(page_score>1)")
	for b.Len()+len("OR(page_score>1)") <= MaxLen {
		b.WriteString("OR(page_score>1)")
	}
	src := b.String()
	e, err := Parse(src, links)
	require.NoError(t, err)
	require.Greater(t, len(format(e.root, false)), MaxLen)
	s := e.String()
	require.LessOrEqual(t, len(s), MaxLen)
	require.True(t, strings.HasPrefix(s, "page_score>1 OR page_score>1 OR"), s[:40])
	requireRoundTrip(t, e, src)
}

func TestFields(t *testing.T) {
	t.Parallel()
	e, err := Parse("page_score > 1 AND (anchor LIKE 'a%' OR page_score < 0) AND is_new = true", endpoint(t, "links"))
	require.NoError(t, err)
	require.Equal(t, []string{"page_score", "anchor", "is_new"}, e.Fields())

	m, err := Parse("backlinks_counts[1] = 0 AND backlinks_counts[3] > 0 OR domain = 'x'", endpoint(t, "matrix"))
	require.NoError(t, err)
	require.Equal(t, []string{"backlinks_counts", "domain"}, m.Fields())
}

func TestTargets(t *testing.T) {
	t.Parallel()
	matrix := endpoint(t, "matrix")
	e, err := Parse("domain_score > 1 AND (backlinks_counts[1] = 0 OR backlinks_counts[3] > 0)", matrix)
	require.NoError(t, err)
	require.Equal(t, 3, e.MaxTarget())
	require.NoError(t, e.CheckTargets(3))
	require.NoError(t, e.CheckTargets(6))

	err = e.CheckTargets(2)
	var fe *Error
	require.ErrorAs(t, err, &fe)
	require.Equal(t, 67, fe.Pos)
	require.Equal(t, "filter: at column 67: backlinks_counts[3] addresses target 3 but the request has 2; expected an index from 1 to 2", err.Error())

	plain, err := Parse("domain_score > 1", matrix)
	require.NoError(t, err)
	require.Equal(t, 0, plain.MaxTarget())
	require.NoError(t, plain.CheckTargets(1))

	// Whatever the Row answers, an element beyond the list is no match.
	beyond, err := Parse("backlinks_counts[3] >= 0", matrix)
	require.NoError(t, err)
	require.False(t, beyond.Match(row{"backlinks_counts": {Ints: []int64{1, 2}}}.get))
	require.True(t, beyond.Match(row{"backlinks_counts": {Ints: []int64{1, 2, 0}}}.get))
}

// The Row is asked for backlinks_counts with the target number as index,
// and for every other field with index 0.
func TestRowIndex(t *testing.T) {
	t.Parallel()
	e, err := Parse("backlinks_counts[4] > 0 AND matches_count > 0", endpoint(t, "matrix"))
	require.NoError(t, err)
	var asked []string
	e.Match(func(field string, index int) Value {
		asked = append(asked, fmt.Sprintf("%s/%d", field, index))
		return Value{Int: 1}
	})
	require.Equal(t, []string{"backlinks_counts/4", "matches_count/0"}, asked)
}

// AND and OR stop at the first condition that decides.
func TestShortCircuit(t *testing.T) {
	t.Parallel()
	e, err := Parse("page_score > 1 AND domain_score > 1 OR is_new = true", endpoint(t, "links"))
	require.NoError(t, err)
	calls := 0
	e.Match(func(field string, _ int) Value {
		calls++
		return Value{Int: 5, Bool: true}
	})
	require.Equal(t, 2, calls)
}

func TestNilExpr(t *testing.T) {
	t.Parallel()
	var e *Expr
	require.True(t, e.Match(row{}.get))
	require.Equal(t, "", e.String())
	require.Nil(t, e.Fields())
	require.Zero(t, e.MaxTarget())
	require.NoError(t, e.CheckTargets(0))
	require.Nil(t, e.Endpoint())
}

func TestNilEndpointPanics(t *testing.T) {
	t.Parallel()
	require.PanicsWithValue(t, "filter: Parse with a nil endpoint", func() { _, _ = Parse("a = 1", nil) })
}

// Not parallel: AllocsPerRun counts the allocations of the whole process,
// and sequential tests never run alongside the parallel ones.
func TestMatchAllocatesNothing(t *testing.T) {
	e, err := Parse(benchExpr, endpoint(t, "links"))
	require.NoError(t, err)
	r := benchRow()
	require.True(t, e.Match(r))
	require.Zero(t, testing.AllocsPerRun(1000, func() { e.Match(r) }))
}

// An Expr is read-only after Parse: many goroutines may match with it.
func TestConcurrentMatch(t *testing.T) {
	t.Parallel()
	e, err := Parse("anchor LIKE '%seo%' AND page_score > 10", endpoint(t, "links"))
	require.NoError(t, err)
	var wg sync.WaitGroup
	results := make([]bool, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := row{"anchor": {Str: "seo"}, "page_score": {Int: int64(i * 5)}}
			for range 100 {
				results[i] = e.Match(r.get)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, []bool{false, false, false, true, true, true, true, true}, results)
}
