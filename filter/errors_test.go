package filter

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const linksFields = "source_url, target_url, anchor, redirect_url, source_title, target_title, image_url, image_alt, " +
	"ip_address, lang, source_size, external_links_count, internal_links_count, response_code, page_score, " +
	"domain_score, first_seen_at, last_seen_at, source_domain, is_nofollow, is_ugc, is_sponsored, is_form, " +
	"is_frame, is_image, is_sitewide_main, is_new, is_lost"

type errorCase struct {
	name string
	ep   string
	expr string
	pos  int
	msg  string
}

var errorCases = []errorCase{
	// Fields.
	{"unknown field", "links", "is_new = true AND page_scor > 50", 19,
		`unknown field "page_scor" of links; did you mean "page_score"? (fields: ` + linksFields + ")"},
	{"field names are case-sensitive", "links", "Page_Score > 50", 1,
		`unknown field "Page_Score" of links; did you mean "page_score"? (fields: ` + linksFields + ")"},
	{"nothing like it", "links", "x = 1", 1, `unknown field "x" of links (fields: ` + linksFields + ")"},
	{"field of another endpoint", "links", "similarity > 0.5", 1,
		`unknown field "similarity" of links; it is a field of competitors, not of links (fields: ` + linksFields + ")"},
	{"field of several other endpoints", "anchors", "country = 'DE'", 1,
		`unknown field "country" of anchors; it is a field of ref-domains, ref-ips, matrix, not of anchors ` +
			`(fields: anchor, backlinks_count, domains_count, first_seen_at, last_seen_at)`},
	{"backlinks_counts on links", "links", "backlinks_counts[1] > 0", 1,
		`unknown field "backlinks_counts" of links; it is a field of matrix, not of links (fields: ` + linksFields + ")"},
	{"list field", "keyword-metrics", "cpc > 1 AND intents = 'COMMERCIAL'", 13,
		"intents is a list (string[]) and cannot be filtered; expected one of the fields " +
			"competitive_density, cpc, keyword_difficulty, number_of_results, search_volume"},
	{"trends", "keyword-metrics", "trends[1] > 0", 1,
		"trends is a list (integer[]) and cannot be filtered; expected one of the fields " +
			"competitive_density, cpc, keyword_difficulty, number_of_results, search_volume"},
	{"context field is no row field", "keyword-metrics", "keyword = 'seo'", 1,
		`unknown field "keyword" of keyword-metrics (fields: competitive_density, cpc, keyword_difficulty, number_of_results, search_volume)`},
	{"keyword where a field goes", "links", "AND page_score > 1", 1,
		`expected a condition (a field name or "("), got AND`},
	{"column in characters", "links", "anchor = 'é✓' AND x = 1", 19, `unknown field "x" of links (fields: ` + linksFields + ")"},

	// Matrix.
	{"backlinks_counts[0]", "matrix", "backlinks_counts[0] > 0", 18,
		"backlinks_counts[0] is out of range: targets are numbered from 1; expected a number from 1 to 6 (matrix takes at most 6 targets)"},
	{"backlinks_counts[7]", "matrix", "backlinks_counts[7] > 0", 18,
		"backlinks_counts[7] is out of range: targets are numbered from 1; expected a number from 1 to 6 (matrix takes at most 6 targets)"},
	{"backlinks_counts[-1]", "matrix", "backlinks_counts[-1] > 0", 18,
		"backlinks_counts[-1] is out of range: targets are numbered from 1; expected a number from 1 to 6 (matrix takes at most 6 targets)"},
	{"backlinks_counts huge index", "matrix", "backlinks_counts[99999999999999999999] > 0", 18,
		"backlinks_counts[99999999999999999999] is out of range: targets are numbered from 1; expected a number from 1 to 6 (matrix takes at most 6 targets)"},
	{"backlinks_counts without index", "matrix", "backlinks_counts > 0", 18,
		`expected "[" and a target number after backlinks_counts, as in backlinks_counts[1] (targets are numbered from 1 to 6), got ">"`},
	{"backlinks_counts index not a number", "matrix", "backlinks_counts[x] > 0", 18,
		`expected a target number from 1 to 6 after "[", got "x"`},
	{"backlinks_counts unclosed", "matrix", "backlinks_counts[1 > 0", 20,
		`expected "]" after backlinks_counts[1, got ">"`},
	{"index on a scalar", "links", "page_score[1] > 0", 11,
		`expected an operator after page_score (=, !=, <, <=, > or >=), got "["`},
	{"matrix unknown field", "matrix", "backlink_counts[1] > 0", 1,
		`unknown field "backlink_counts" of matrix; did you mean "backlinks_counts"? (fields: domain, domain_score, ip_address, country, ` +
			"backlinks_counts[1] to backlinks_counts[6], matches_count)"},

	// Operators.
	{"missing operator", "links", "page_score 50", 12,
		"expected an operator after page_score (=, !=, <, <=, > or >=), got the integer 50"},
	{"unknown operator", "links", "anchor ~ 'x'", 8,
		`expected an operator after anchor (=, !=, <, <=, >, >=, LIKE or NOT LIKE), got "~"`},
	{"== is not an operator", "links", "page_score == 5", 13,
		`expected an integer for page_score after "=", got "="`},
	{"non-ASCII operator", "links", "page_score ≥ 5", 12,
		`expected an operator after page_score (=, !=, <, <=, > or >=), got "≥"`},
	{"NOT without LIKE", "links", "anchor NOT = 'x'", 12,
		`expected LIKE after NOT (NOT appears only in NOT LIKE), got "="`},
	{"NOT before a condition", "links", "NOT page_score > 5", 1,
		`expected a condition (a field name or "("), got NOT`},
	{"LIKE on an integer", "links", "page_score LIKE '5%'", 12,
		"LIKE works on string fields only and page_score is an integer field; expected =, !=, <, <=, > or >="},
	{"NOT LIKE on a boolean", "links", "is_new NOT LIKE 't%'", 8,
		"NOT LIKE works on string fields only and is_new is a boolean field; expected = or !="},
	{"LIKE on a timestamp", "links", "first_seen_at like '2026%'", 15,
		"LIKE works on string fields only and first_seen_at is a timestamp field; expected =, !=, <, <=, > or >="},
	{"ordering a boolean", "links", "is_new < true", 8,
		`is_new is a boolean field; expected = or != after it, got "<"`},
	{"LIKE pattern not a string", "links", "anchor LIKE 5", 13,
		`expected a quoted pattern for anchor after "LIKE", got the integer 5`},

	// Values.
	{"missing value", "links", "page_score >", 13,
		`expected an integer for page_score after ">", got the end of the expression`},
	{"string for an integer", "links", "page_score > 'x'", 14,
		`expected an integer for page_score after ">", got the string 'x'`},
	{"quoted number", "links", `page_score > "50"`, 14,
		`expected an integer for page_score after ">", got the string "50" (numbers are written without quotes)`},
	{"decimal for an integer", "links", "page_score > 5.5", 14,
		`expected an integer for page_score after ">", got the decimal 5.5`},
	{"integer for a string", "links", "anchor = 5", 10,
		`expected a quoted string for anchor after "=", got the integer 5`},
	{"bare word for a string", "links", "anchor = seo", 10,
		`expected a quoted string for anchor after "=", got "seo" (strings need quotes: 'seo')`},
	{"field for a value", "links", "page_score > domain_score", 14,
		`expected an integer for page_score after ">", got "domain_score" (a field; comparing two fields is not supported)`},
	{"null", "links", "redirect_url != NULL", 17,
		`expected a quoted string for redirect_url after "!=", got "NULL" (there is no NULL literal; a NULL value satisfies no condition)`},
	{"integer for a boolean", "links", "is_new = 1", 10,
		`expected true or false for is_new after "=", got the integer 1`},
	{"quoted boolean", "links", "is_new = 'true'", 10,
		`expected true or false for is_new after "=", got the string 'true' (booleans are written without quotes)`},
	{"string for a timestamp", "links", "first_seen_at > 'yesterday'", 17,
		`expected a date (2026-01-15) or a date-time (2026-01-15T10:00:00) for first_seen_at after ">", got the string 'yesterday'`},
	{"integer for a timestamp", "links", "first_seen_at > 20260115", 17,
		`expected a date (2026-01-15) or a date-time (2026-01-15T10:00:00) for first_seen_at after ">", got the integer 20260115`},
	{"date-time for a date", "summary", "month_date = 2026-01-01T00:00:00", 14,
		`expected a date (2026-01-15) for month_date after "=", got the date-time 2026-01-01T00:00:00`},
	{"quoted date-time for a date", "summary", "month_date = '2026-01-01T00:00:00'", 14,
		`expected a date (2026-01-15) for month_date after "=", got the string '2026-01-01T00:00:00'`},
	{"string for a number", "competitors", "similarity > 'high'", 14,
		`expected a number for similarity after ">", got the string 'high'`},
	{"date for a number", "competitors", "similarity > 2026-01-15", 14,
		`expected a number for similarity after ">", got the date 2026-01-15`},
	{"true for a string", "links", "anchor = true", 10,
		`expected a quoted string for anchor after "=", got true`},
	{"long string shortened", "links", "page_score = '" + strings.Repeat("x", 60) + "'", 14,
		`expected an integer for page_score after "=", got the string '` + strings.Repeat("x", 36) + "..."},
	{"integer out of range", "links", "source_size > 9223372036854775808", 15,
		"integer 9223372036854775808 is out of range; expected one from -9223372036854775808 to 9223372036854775807"},
	{"too many digits", "competitors", "similarity > 0.1234567890123456", 14,
		"number 0.1234567890123456 has 16 significant digits; expected at most 15 (what a float64 holds exactly)"},
	{"number too large", "competitors", "similarity < 1" + strings.Repeat("0", 309), 14,
		"number 1" + strings.Repeat("0", 309) + " is out of range; expected one a float64 can hold"},
	{"number too small", "competitors", "similarity > 0." + strings.Repeat("0", 400) + "1", 14,
		"number 0." + strings.Repeat("0", 400) + "1 is out of range; expected one a float64 can hold"},

	// Lexical.
	{"unterminated single-quoted string", "links", "anchor = 'abc", 10,
		"unterminated string; expected a closing ' for the string that starts here"},
	{"unterminated double-quoted string", "links", `anchor = "abc\"`, 10,
		`unterminated string; expected a closing " for the string that starts here`},
	{"unterminated after a backslash", "links", `anchor = 'abc\`, 10,
		"unterminated string; expected a closing ' for the string that starts here"},
	{"bad escape", "links", `anchor = 'a\nb'`, 12,
		`invalid escape \n in a string quoted with '; expected \' or \\, the only escapes`},
	{"other quote escaped", "links", `anchor = 'say \"hi\"'`, 15,
		`invalid escape \" in a string quoted with '; expected \' or \\, the only escapes`},
	{"escaped percent", "links", `anchor LIKE '100\%'`, 17,
		`invalid escape \% in a string quoted with '; expected \' or \\, the only escapes`},
	{"number touching a keyword", "links", "page_score > 50AND is_new = true", 14,
		"invalid value 50AND; expected a space between 50 and AND"},
	{"exponent", "competitors", "similarity > 1e-5", 14,
		"invalid number 1e-5; expected digits only, as in 0.00015 or 150000 (no exponents)"},
	{"leading dot", "competitors", "similarity > .5", 14,
		"a number must start with a digit; expected 0.5"},
	{"trailing dot", "competitors", "similarity > 5.", 14,
		"invalid value 5.; expected an integer (42), a decimal (0.5), a date (2026-01-15) or a date-time (2026-01-15T10:00:00)"},
	{"arithmetic", "links", "page_score > 1-2", 14,
		"invalid value 1-2; expected an integer (42), a decimal (0.5), a date (2026-01-15) or a date-time (2026-01-15T10:00:00)"},
	{"no such day", "links", "first_seen_at > 2026-02-30", 17,
		"invalid date 2026-02-30: no such day; expected a real date such as 2026-01-15"},
	{"no such time", "links", "first_seen_at > '2026-01-15 24:00:00'", 17,
		"invalid date-time 2026-01-15T24:00:00: no such day or time; expected a real one such as 2026-01-15T10:00:00"},
	{"offset", "links", "first_seen_at > 2026-01-15T10:00:00+02:00", 17,
		"invalid date-time 2026-01-15T10:00:00+02:00; times are UTC: expected 2026-01-15T10:00:00 or 2026-01-15T10:00:00Z without an offset"},
	{"date without seconds", "links", "first_seen_at > 2026-01-15T10:00", 17,
		"invalid value 2026-01-15T10:00; expected an integer (42), a decimal (0.5), a date (2026-01-15) or a date-time (2026-01-15T10:00:00)"},
	{"invalid UTF-8", "links", "anchor = 'a\xffb'", 12, "invalid UTF-8 (byte 0xff); expected UTF-8 text"},

	// Structure.
	{"empty", "links", "", 1, "empty expression; expected a condition such as source_url LIKE '%seo%'"},
	{"white space only", "summary", " \t\n ", 1, "empty expression; expected a condition such as score > 10"},
	{"dangling AND", "links", "page_score > 50 AND", 20,
		`expected a condition (a field name or "(") after AND, got the end of the expression`},
	{"dangling OR", "links", "page_score > 50 or ", 20,
		`expected a condition (a field name or "(") after OR, got the end of the expression`},
	{"AND AND", "links", "page_score > 50 AND AND is_new = true", 21,
		`expected a condition (a field name or "(") after AND, got AND`},
	{"missing AND", "links", "page_score > 50 is_new = true", 17,
		`expected AND, OR or the end of the expression after a condition, got "is_new"`},
	{"unclosed parenthesis", "links", "(page_score > 50", 17,
		`expected AND, OR or ")" to close the "(" at column 1, got the end of the expression`},
	{"unclosed inner parenthesis", "links", "((page_score > 50) OR (is_new = true)", 38,
		`expected AND, OR or ")" to close the "(" at column 1, got the end of the expression`},
	{"unopened parenthesis", "links", "page_score > 50)", 16,
		`unbalanced ")": there is no "(" to close; expected AND, OR or the end of the expression`},
	{"empty parentheses", "links", "()", 2, `expected a condition (a field name or "(") after "(", got ")"`},
	{"literal on the left", "links", "50 < page_score", 1,
		`expected a condition (a field name or "("), got the integer 50; the field goes on the left: page_score > 50`},
	{"string on the left", "links", "is_new = true AND 'x' = anchor", 19,
		`expected a condition (a field name or "(") after AND, got the string 'x'; the field goes on the left: anchor = 'x'`},
	{"literal alone", "links", "true", 1, `expected a condition (a field name or "("), got true`},
	{"stray character", "links", "page_score > 1 ; DROP TABLE x", 16,
		`expected AND, OR or the end of the expression after a condition, got ";"`},
	{"control character", "links", "page_score > 1 \x00", 16,
		`expected AND, OR or the end of the expression after a condition, got "\x00"`},

	// Bounds.
	{"too long", "links", "page_score > 1" + strings.Repeat(" ", MaxLen), MaxLen + 1,
		"expression too long: 4110 bytes; expected at most 4096"},
	{"too deep", "links", strings.Repeat("(", MaxDepth+1) + "page_score > 1" + strings.Repeat(")", MaxDepth+1), MaxDepth + 1,
		"parentheses nested too deeply; expected at most 64 levels"},
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := Parse(tc.expr, endpoint(t, tc.ep))
			require.Nil(t, e)
			var fe *Error
			require.ErrorAs(t, err, &fe)
			require.Equal(t, tc.msg, fe.Msg)
			require.Equal(t, tc.pos, fe.Pos)
		})
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	_, err := Parse("is_new = true AND page_scor > 50", endpoint(t, "links"))
	require.EqualError(t, err,
		`filter: at column 19: unknown field "page_scor" of links; did you mean "page_score"? (fields: `+linksFields+")")
	_, err = Parse("page_score >", endpoint(t, "links"))
	require.EqualError(t, err, `filter: at column 13: expected an integer for page_score after ">", got the end of the expression`)
}

// Parentheses up to MaxDepth deep are fine.
func TestDepthBound(t *testing.T) {
	t.Parallel()
	src := strings.Repeat("(", MaxDepth) + "page_score > 1" + strings.Repeat(")", MaxDepth)
	e, err := Parse(src, endpoint(t, "links"))
	require.NoError(t, err)
	require.Equal(t, "page_score > 1", e.String())

	src = "page_score > 1" + strings.Repeat(" ", MaxLen-len("page_score > 1"))
	_, err = Parse(src, endpoint(t, "links"))
	require.NoError(t, err)
}
