package transform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/transform"
)

// testMeta is the meta of the test bodies, as the API writes it.
const testMeta = `{"request_id":"r-1","status_code":200,"success":true,"total":2}`

// jsonBody is a success envelope, meta first, data an array of rows.
func jsonBody(rows ...string) []byte {
	return []byte(`{"meta":` + testMeta + `,"data":[` + strings.Join(rows, ",") + "]}\n")
}

// matrixRow is the sample matrix row of the spec, with domain i.
func matrixRow(i int) string {
	return fmt.Sprintf(`{"domain":"d%d.example","domain_score":37,"ip_address":"10.0.0.1","country":"DE","backlinks_counts":[3,0,12],"matches_count":2}`, i)
}

// kindCase is one JSON value of one kind: what it decodes to, or why it is
// rejected.
type kindCase struct {
	name     string
	endpoint string
	field    string
	value    string // the JSON value as sent
	want     any    // the decoded value (rendered as decoded.Rows), when reason is ""
	reason   string // else: what follows `field "<field>": ` in the reason
}

// row is the one row of the case's body.
func (c kindCase) row() string { return fmt.Sprintf(`{"%s": %s}`, c.field, c.value) }

// body is a body of endpoint ep holding the case's row.
func (c kindCase) body(ep *catalog.Endpoint) []byte {
	if ep.Shape == catalog.Object {
		return []byte(`{"meta":` + testMeta + `,"data":` + c.row() + `}`)
	}
	return jsonBody(c.row())
}

// kindCases cover every kind, valid and not; the fuzz test seeds from them.
var kindCases = []kindCase{
	// Text (matrix.domain)
	{name: "text", endpoint: "matrix", field: "domain", value: `"a.example"`, want: "a.example"},
	{name: "text empty", endpoint: "matrix", field: "domain", value: `""`, want: ""},
	{name: "text null", endpoint: "matrix", field: "domain", value: `null`, want: nil},
	{name: "text unicode", endpoint: "matrix", field: "domain", value: `"bücher.example 日本語 😀"`, want: "bücher.example 日本語 😀"},
	{name: "text escapes", endpoint: "matrix", field: "domain", value: `"a\"b\\c\/d\n\t\r\b\f\u00e9\ud83d\ude00"`, want: "a\"b\\c/d\n\t\r\b\fé😀"},
	{name: "text commas and semicolons", endpoint: "matrix", field: "domain", value: `"a,b;c"`, want: "a,b;c"},
	{name: "text replacement character escaped", endpoint: "matrix", field: "domain", value: `"x\ufffdy"`, want: "x\uFFFDy"},
	{name: "text number", endpoint: "matrix", field: "domain", value: `12`, reason: `12 is not a string`},
	{name: "text boolean", endpoint: "matrix", field: "domain", value: `true`, reason: `true is not a string`},
	{name: "text array", endpoint: "matrix", field: "domain", value: `["a"]`, reason: `["a"] is not a string`},
	{name: "text NUL", endpoint: "matrix", field: "domain", value: `"a\u0000b"`, reason: `"a\u0000b" holds a NUL byte`},
	{name: "text invalid UTF-8", endpoint: "matrix", field: "domain", value: "\"a\xffb\"", reason: "\"a\uFFFDb\" is not valid UTF-8"},
	{name: "text lone high surrogate", endpoint: "matrix", field: "domain", value: `"a\ud800b"`, reason: `"a\ud800b" holds an unpaired surrogate escape \ud800, which is no character`},
	{name: "text lone low surrogate", endpoint: "matrix", field: "domain", value: `"\udc00\ud83d"`, reason: `"\udc00\ud83d" holds an unpaired surrogate escape \udc00, which is no character`},
	{name: "text high surrogate then no low", endpoint: "matrix", field: "domain", value: `"\ud83d\u0041"`, reason: `"\ud83d\u0041" holds an unpaired surrogate escape \ud83d, which is no character`},

	// Int (matrix.domain_score)
	{name: "int", endpoint: "matrix", field: "domain_score", value: `37`, want: int64(37)},
	{name: "int zero", endpoint: "matrix", field: "domain_score", value: `0`, want: int64(0)},
	{name: "int negative", endpoint: "matrix", field: "domain_score", value: `-5`, want: int64(-5)},
	{name: "int max", endpoint: "matrix", field: "domain_score", value: `9223372036854775807`, want: int64(9223372036854775807)},
	{name: "int min", endpoint: "matrix", field: "domain_score", value: `-9223372036854775808`, want: int64(-9223372036854775808)},
	{name: "int null", endpoint: "matrix", field: "domain_score", value: `null`, want: nil},
	{name: "int past max", endpoint: "matrix", field: "domain_score", value: `9223372036854775808`, reason: `9223372036854775808 is out of the 64-bit integer range`},
	{name: "int with fraction", endpoint: "matrix", field: "domain_score", value: `1.0`, reason: `1.0 is not an integer: it has a fraction or an exponent`},
	{name: "int with exponent", endpoint: "matrix", field: "domain_score", value: `1e3`, reason: `1e3 is not an integer: it has a fraction or an exponent`},
	{name: "int as string", endpoint: "matrix", field: "domain_score", value: `"37"`, reason: `"37" is not an integer`},
	{name: "int string abc", endpoint: "matrix", field: "domain_score", value: `"abc"`, reason: `"abc" is not an integer`},
	{name: "int boolean", endpoint: "matrix", field: "domain_score", value: `false`, reason: `false is not an integer`},

	// IntString (keyword-metrics.number_of_results)
	{name: "intstring", endpoint: "keyword-metrics", field: "number_of_results", value: `"1230000"`, want: int64(1230000)},
	{name: "intstring as number", endpoint: "keyword-metrics", field: "number_of_results", value: `1230000`, want: int64(1230000)},
	{name: "intstring null", endpoint: "keyword-metrics", field: "number_of_results", value: `null`, want: nil},
	{name: "intstring signed", endpoint: "keyword-metrics", field: "number_of_results", value: `"-1"`, reason: `"-1" is not a string of digits`},
	{name: "intstring empty", endpoint: "keyword-metrics", field: "number_of_results", value: `""`, reason: `"" is not a string of digits`},
	{name: "intstring decimal", endpoint: "keyword-metrics", field: "number_of_results", value: `"1.5"`, reason: `"1.5" is not a string of digits`},
	{name: "intstring too big", endpoint: "keyword-metrics", field: "number_of_results", value: `"99999999999999999999"`, reason: `"99999999999999999999" is out of the 64-bit integer range`},
	{name: "intstring negative number", endpoint: "keyword-metrics", field: "number_of_results", value: `-1`, reason: `-1 is negative, not a string of digits`},
	{name: "intstring fraction number", endpoint: "keyword-metrics", field: "number_of_results", value: `1.5`, reason: `1.5 is not an integer: it has a fraction or an exponent`},
	{name: "intstring boolean", endpoint: "keyword-metrics", field: "number_of_results", value: `true`, reason: `true is not a string of digits`},

	// DecString (keyword-metrics.cpc)
	{name: "decstring", endpoint: "keyword-metrics", field: "cpc", value: `"0.53"`, want: 0.53},
	{name: "decstring integer", endpoint: "keyword-metrics", field: "cpc", value: `"12"`, want: 12.0},
	{name: "decstring as number", endpoint: "keyword-metrics", field: "cpc", value: `0.53`, want: 0.53},
	{name: "decstring as number with exponent", endpoint: "keyword-metrics", field: "cpc", value: `5.3E-1`, want: 0.53},
	{name: "decstring null", endpoint: "keyword-metrics", field: "cpc", value: `null`, want: nil},
	{name: "decstring exponent in string", endpoint: "keyword-metrics", field: "cpc", value: `"5.3e-1"`, reason: `"5.3e-1" is not a decimal number`},
	{name: "decstring text", endpoint: "keyword-metrics", field: "cpc", value: `"abc"`, reason: `"abc" is not a decimal number`},
	{name: "decstring NaN", endpoint: "keyword-metrics", field: "cpc", value: `"NaN"`, reason: `"NaN" is not a decimal number`},
	{name: "decstring out of range", endpoint: "keyword-metrics", field: "cpc", value: `1e999`, reason: `1e999 is out of the 64-bit float range`},
	{name: "decstring array", endpoint: "keyword-metrics", field: "cpc", value: `[0.5]`, reason: `[0.5] is not a decimal number`},

	// Float (competitors.similarity)
	{name: "float", endpoint: "competitors", field: "similarity", value: `0.0125`, want: 0.0125},
	{name: "float integer", endpoint: "competitors", field: "similarity", value: `-3`, want: -3.0},
	{name: "float exponent", endpoint: "competitors", field: "similarity", value: `1e2`, want: 100.0},
	{name: "float null", endpoint: "competitors", field: "similarity", value: `null`, want: nil},
	{name: "float as string", endpoint: "competitors", field: "similarity", value: `"0.5"`, reason: `"0.5" is not a number`},
	{name: "float out of range", endpoint: "competitors", field: "similarity", value: `-1e400`, reason: `-1e400 is out of the 64-bit float range`},

	// Bool (ref-domains.is_follow)
	{name: "bool true", endpoint: "ref-domains", field: "is_follow", value: `true`, want: true},
	{name: "bool false", endpoint: "ref-domains", field: "is_follow", value: `false`, want: false},
	{name: "bool null", endpoint: "ref-domains", field: "is_follow", value: `null`, want: nil},
	{name: "bool as string", endpoint: "ref-domains", field: "is_follow", value: `"true"`, reason: `"true" is not a boolean (true or false)`},
	{name: "bool as number", endpoint: "ref-domains", field: "is_follow", value: `1`, reason: `1 is not a boolean (true or false)`},

	// Timestamp (ref-domains.first_seen_at)
	{name: "timestamp", endpoint: "ref-domains", field: "first_seen_at", value: `"2024-05-01T12:30:59"`, want: "2024-05-01T12:30:59Z"},
	{name: "timestamp escaped", endpoint: "ref-domains", field: "first_seen_at", value: `"2024-05-01\u005412:30:59"`, want: "2024-05-01T12:30:59Z"},
	{name: "timestamp null", endpoint: "ref-domains", field: "first_seen_at", value: `null`, want: nil},
	{name: "timestamp with space", endpoint: "ref-domains", field: "first_seen_at", value: `"2024-05-01 12:30:59"`, reason: `"2024-05-01 12:30:59" is not a timestamp YYYY-MM-DDTHH:MM:SS`},
	{name: "timestamp with zone", endpoint: "ref-domains", field: "first_seen_at", value: `"2024-05-01T12:30:59Z"`, reason: `"2024-05-01T12:30:59Z" is not a timestamp YYYY-MM-DDTHH:MM:SS`},
	{name: "timestamp no such day", endpoint: "ref-domains", field: "first_seen_at", value: `"2024-02-30T00:00:00"`, reason: `"2024-02-30T00:00:00" is not a timestamp YYYY-MM-DDTHH:MM:SS`},
	{name: "timestamp as number", endpoint: "ref-domains", field: "first_seen_at", value: `1714566659`, reason: `1714566659 is not a timestamp YYYY-MM-DDTHH:MM:SS`},
	{name: "timestamp empty", endpoint: "ref-domains", field: "first_seen_at", value: `""`, reason: `"" is not a timestamp YYYY-MM-DDTHH:MM:SS`},

	// Date (summary.month_date)
	{name: "date", endpoint: "summary", field: "month_date", value: `"2024-05-01"`, want: "2024-05-01"},
	{name: "date null", endpoint: "summary", field: "month_date", value: `null`, want: nil},
	{name: "date short", endpoint: "summary", field: "month_date", value: `"2024-5-1"`, reason: `"2024-5-1" is not a date YYYY-MM-DD`},
	{name: "date with time", endpoint: "summary", field: "month_date", value: `"2024-05-01T00:00:00"`, reason: `"2024-05-01T00:00:00" is not a date YYYY-MM-DD`},
	{name: "date as object", endpoint: "summary", field: "month_date", value: `{"y":2024}`, reason: `{"y":2024} is not a date YYYY-MM-DD`},

	// TextList (keyword-metrics.intents)
	{name: "textlist", endpoint: "keyword-metrics", field: "intents", value: `["COMMERCIAL","INFORMATIONAL"]`, want: []any{"COMMERCIAL", "INFORMATIONAL"}},
	{name: "textlist commas inside items", endpoint: "keyword-metrics", field: "intents", value: `["a,b", ",", "c"]`, want: []any{"a,b", ",", "c"}},
	{name: "textlist empty", endpoint: "keyword-metrics", field: "intents", value: `[]`, want: []any{}},
	{name: "textlist empty item", endpoint: "keyword-metrics", field: "intents", value: `[""]`, want: []any{""}},
	{name: "textlist spaces and escapes", endpoint: "keyword-metrics", field: "intents", value: "[ \"\\u00fcber\" ,\n \"a\\\"b\" ]", want: []any{"über", `a"b`}},
	{name: "textlist null", endpoint: "keyword-metrics", field: "intents", value: `null`, want: nil},
	{name: "textlist as string", endpoint: "keyword-metrics", field: "intents", value: `"a,b"`, reason: `"a,b" is not an array of strings`},
	{name: "textlist number item", endpoint: "keyword-metrics", field: "intents", value: `["a",1]`, reason: `["a",1] is not an array of strings: item 2 is a number`},
	{name: "textlist null item", endpoint: "keyword-metrics", field: "intents", value: `["a",null]`, reason: `["a",null] is not an array of strings: item 2 is null`},
	{name: "textlist NUL item", endpoint: "keyword-metrics", field: "intents", value: `["\u0000"]`, reason: `["\u0000"] is not an array of valid strings: item 1 holds a NUL byte`},
	{name: "textlist lone surrogate item", endpoint: "keyword-metrics", field: "intents", value: `["a","\udfff"]`, reason: `["a","\udfff"] is not an array of valid strings: item 2 holds an unpaired surrogate escape \udfff, which is no character`},

	// IntList (matrix.backlinks_counts)
	{name: "intlist", endpoint: "matrix", field: "backlinks_counts", value: `[3,0,12]`, want: []any{int64(3), int64(0), int64(12)}},
	{name: "intlist empty", endpoint: "matrix", field: "backlinks_counts", value: `[]`, want: []any{}},
	{name: "intlist bounds and spaces", endpoint: "matrix", field: "backlinks_counts", value: "[ -9223372036854775808 ,\n9223372036854775807 ]", want: []any{int64(-9223372036854775808), int64(9223372036854775807)}},
	{name: "intlist null", endpoint: "matrix", field: "backlinks_counts", value: `null`, want: nil},
	{name: "intlist as string", endpoint: "matrix", field: "backlinks_counts", value: `"3,0,12"`, reason: `"3,0,12" is not an array of integers`},
	{name: "intlist fraction item", endpoint: "matrix", field: "backlinks_counts", value: `[1,1.5]`, reason: `[1,1.5] is not an array of integers: item 2 (1.5) is not an integer: it has a fraction or an exponent`},
	{name: "intlist string item", endpoint: "matrix", field: "backlinks_counts", value: `["1"]`, reason: `["1"] is not an array of integers: item 1 is a string`},
	{name: "intlist null item", endpoint: "matrix", field: "backlinks_counts", value: `[null]`, reason: `[null] is not an array of integers: item 1 is null`},
	{name: "intlist nested", endpoint: "matrix", field: "backlinks_counts", value: `[[1]]`, reason: `[[1]] is not an array of integers: item 1 is an array`},
	{name: "intlist item too big", endpoint: "matrix", field: "backlinks_counts", value: `[99999999999999999999]`, reason: `[99999999999999999999] is not an array of integers: item 1 (99999999999999999999) is out of the 64-bit integer range`},
	{name: "intlist long value cut in the reason", endpoint: "matrix", field: "backlinks_counts", value: `[` + strings.Repeat("1,", 40) + `"x"]`,
		reason: `[` + strings.Repeat("1,", 31) + `1... is not an array of integers: item 41 is a string`},
}

func TestJSONKinds(t *testing.T) {
	t.Parallel()
	for _, tc := range kindCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ep := endpoint(t, tc.endpoint)
			got := decodeJSON(t, tc.body(ep), ep, transform.Options{Allocator: newAllocator(t), BatchRows: 10})
			if tc.reason != "" {
				require.Empty(t, got.Rows)
				require.Equal(t, []reject{{Line: 1, Raw: tc.row(), Reason: fmt.Sprintf("field %q: %s", tc.field, tc.reason)}}, got.Rejects)
				return
			}
			require.Empty(t, got.Rejects)
			require.Len(t, got.Rows, 1)
			require.Equal(t, tc.want, got.Rows[0][tc.field])
			for name, v := range got.Rows[0] {
				if name != tc.field {
					require.Nil(t, v, "field %s not in the row is NULL", name)
				}
			}
		})
	}
}

// TestJSONMatrixRow decodes the spec's sample rows of matrix in one body.
func TestJSONMatrixRow(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "matrix")
	body := jsonBody(matrixRow(1), `{"matches_count":0,"backlinks_counts":[],"country":null,"ip_address":"::1","domain_score":0,"domain":"e.example"}`)
	got := decodeJSON(t, body, ep, transform.Options{Allocator: newAllocator(t), BatchRows: 10})
	require.Empty(t, got.Rejects)
	require.Equal(t, []map[string]any{
		{"domain": "d1.example", "domain_score": int64(37), "ip_address": "10.0.0.1", "country": "DE",
			"backlinks_counts": []any{int64(3), int64(0), int64(12)}, "matches_count": int64(2)},
		{"domain": "e.example", "domain_score": int64(0), "ip_address": "::1", "country": nil,
			"backlinks_counts": []any{}, "matches_count": int64(0)},
	}, got.Rows)
	require.Equal(t, drift{Unknown: []string{}, Missing: []string{}}, got.Drift)
}

func TestJSONDrift(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "matrix")
	body := jsonBody(
		`{"domain":"a.example","zeta":1,"domain_score":1,"ip_address":"1.1.1.1","country":"DE","backlinks_counts":[1],"matches_count":1}`,
		`{"domain":"b.example","domain_score":2,"extra":{"x":[1]},"zeta":2,"ip_address":"2.2.2.2","backlinks_counts":[2]}`,
		`{"domain":"c.example","domain_score":"bad","alpha":true,"ip_address":"3.3.3.3","country":"FR","matches_count":3}`,
		`{"d\u006fmain":"d.example","domain_score":4,"ip_address":"4.4.4.4","country":"US","backlinks_counts":[4],"matches_count":4}`,
	)
	got := decodeJSON(t, body, ep, transform.Options{Allocator: newAllocator(t), BatchRows: 10})
	require.Len(t, got.Rejects, 1, "row 3 has a bad domain_score")
	require.Equal(t, 3, got.Rejects[0].Line)
	require.Equal(t, []map[string]any{
		{"domain": "a.example", "domain_score": int64(1), "ip_address": "1.1.1.1", "country": "DE", "backlinks_counts": []any{int64(1)}, "matches_count": int64(1)},
		{"domain": "b.example", "domain_score": int64(2), "ip_address": "2.2.2.2", "country": nil, "backlinks_counts": []any{int64(2)}, "matches_count": nil},
		{"domain": "d.example", "domain_score": int64(4), "ip_address": "4.4.4.4", "country": "US", "backlinks_counts": []any{int64(4)}, "matches_count": int64(4)},
	}, got.Rows)
	// Unknown in the order first seen, the rejected row's included; Missing
	// in catalog order, of any row (the rejected row lacks backlinks_counts).
	require.Equal(t, drift{
		Unknown: []string{"zeta", "extra", "alpha"},
		Missing: []string{"country", "backlinks_counts", "matches_count"},
	}, got.Drift)
}

// TestJSONDriftGrows checks that Drift reports what the rows read so far
// show, and that it is a copy.
func TestJSONDriftGrows(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "score-profile")
	body := jsonBody(`{"domain_score":1,"domains_count":1}`, `{"domain_score":2,"new":1}`)
	d, err := transform.NewJSONDecoder(bytes.NewReader(body), ep, transform.Options{Allocator: newAllocator(t), BatchRows: 1})
	require.NoError(t, err)
	defer d.Release()
	require.True(t, d.Drift().None())
	rec, _, err := d.Next(t.Context())
	require.NoError(t, err)
	rec.Release()
	require.True(t, d.Drift().None())
	rec, _, err = d.Next(t.Context())
	require.NoError(t, err)
	rec.Release()
	dr := d.Drift()
	require.Equal(t, transform.Drift{Unknown: []string{"new"}, Missing: []string{"domains_count"}}, dr)
	dr.Unknown[0] = "changed"
	require.Equal(t, "new", d.Drift().Unknown[0])
}

func TestJSONRequired(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "matrix")
	rows := []string{
		`{"domain":"a.example","domain_score":1}`,
		`{"domain_score":2}`,
		`{"domain":null,"domain_score":3}`,
		`{"domain":"","domain_score":4}`,
	}
	got := decodeJSON(t, jsonBody(rows...), ep, transform.Options{Allocator: newAllocator(t), BatchRows: 10, Required: []string{"domain"}})
	require.Equal(t, []reject{
		{Line: 2, Raw: rows[1], Reason: `field "domain" is missing, and the row's key needs it`},
		{Line: 3, Raw: rows[2], Reason: `field "domain" is null, and the row's key needs a value`},
	}, got.Rejects)
	require.Len(t, got.Rows, 2)
	require.Equal(t, "", got.Rows[1]["domain"], "an empty string is a value")

	_, err := transform.NewJSONDecoder(bytes.NewReader(jsonBody()), ep, transform.Options{Required: []string{"nope"}})
	require.ErrorContains(t, err, `required field "nope" is not a field of matrix`)
}

// TestJSONRowRejects covers rows that are not objects or not rows of the
// endpoint; the good rows around them decode.
func TestJSONRowRejects(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "score-profile")
	rows := []string{
		`{"domain_score":1,"domains_count":10}`,
		`12`,
		`"a row"`,
		`[{"domain_score":2}]`,
		`null`,
		`true`,
		`{}`,
		`{"other":1}`,
		`{"domain_score":3,"domain_score":3}`,
		`{"domain_score":"x","domain_score":4}`,
		` {"domain_score" : 5 , "domains_count" : 50} `,
	}
	got := decodeJSON(t, jsonBody(rows...), ep, transform.Options{Allocator: newAllocator(t), BatchRows: 100})
	require.Equal(t, []reject{
		{Line: 2, Raw: `12`, Reason: "the row is a number, not an object"},
		{Line: 3, Raw: `"a row"`, Reason: "the row is a string, not an object"},
		{Line: 4, Raw: `[{"domain_score":2}]`, Reason: "the row is an array, not an object"},
		{Line: 5, Raw: `null`, Reason: "the row is null, not an object"},
		{Line: 6, Raw: `true`, Reason: "the row is a boolean, not an object"},
		{Line: 7, Raw: `{}`, Reason: "the row has none of the endpoint's fields"},
		{Line: 8, Raw: `{"other":1}`, Reason: "the row has none of the endpoint's fields"},
		{Line: 9, Raw: rows[8], Reason: `field "domain_score" appears twice`},
		{Line: 10, Raw: rows[9], Reason: `field "domain_score": "x" is not an integer`},
	}, got.Rejects)
	require.Equal(t, []map[string]any{
		{"domain_score": int64(1), "domains_count": int64(10)},
		{"domain_score": int64(5), "domains_count": int64(50)},
	}, got.Rows)
}

func TestJSONLongRows(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "anchors")
	long := `{"anchor":"` + strings.Repeat("é", 40) + `","domains_count":2}`
	rows := []string{`{"anchor":"short","domains_count":1}`, long, `{"anchor":"after","domains_count":3}`}
	got := decodeJSON(t, jsonBody(rows...), ep, transform.Options{Allocator: newAllocator(t), BatchRows: 10, MaxRowBytes: 64})
	require.Equal(t, []reject{{Line: 2, Raw: long[:64], Reason: "the row is longer than 64 bytes"}}, got.Rejects)
	require.Len(t, got.Rows, 2)
	require.Equal(t, "after", got.Rows[1]["anchor"])
}

// TestJSONValueTooLong checks the bound on what the decoder holds: a row
// longer than 16 times MaxRowBytes and than 1 MiB stops decoding.
func TestJSONValueTooLong(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "anchors")
	for _, closed := range []bool{true, false} {
		t.Run(fmt.Sprintf("string closed %v", closed), func(t *testing.T) {
			t.Parallel()
			huge := `{"anchor":"` + strings.Repeat("x", 2<<20)
			if closed {
				huge += `"}`
			}
			body := jsonBody(`{"anchor":"a"}`, huge)
			d, err := transform.NewJSONDecoder(bytes.NewReader(body), ep, transform.Options{Allocator: newAllocator(t), BatchRows: 10, MaxRowBytes: 64})
			require.NoError(t, err)
			defer d.Release()
			rec, rejects, err := d.Next(t.Context())
			require.ErrorContains(t, err, "the anchors JSON body holds a value longer than 1048576 bytes")
			require.Nil(t, rec)
			require.Nil(t, rejects)
		})
	}
	// Up to the bound, a long row is a reject and decoding goes on.
	mem := newAllocator(t)
	row := `{"anchor":"` + strings.Repeat("x", 1<<20-100) + `"}`
	got := decodeJSON(t, jsonBody(row, `{"anchor":"b"}`), ep, transform.Options{Allocator: mem, BatchRows: 10, MaxRowBytes: 64})
	require.Len(t, got.Rejects, 1)
	require.Len(t, got.Rows, 1)
}

func TestJSONMeta(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "score-profile")
	row := `{"domain_score":1,"domains_count":2}`
	meta := map[string]json.RawMessage{
		"request_id": json.RawMessage(`"r-1"`), "status_code": json.RawMessage(`200`),
		"success": json.RawMessage(`true`), "total": json.RawMessage(`2`),
	}
	tests := []struct {
		name   string
		body   string
		before map[string]json.RawMessage // Meta once NewJSONDecoder returned
		after  map[string]json.RawMessage // Meta once Next returned io.EOF
	}{
		{name: "before data", body: `{"meta":` + testMeta + `,"data":[` + row + `]}`, before: meta, after: meta},
		{name: "after data", body: `{"data":[` + row + `],"meta":` + testMeta + `}`, before: nil, after: meta},
		{name: "none", body: `{"data":[` + row + `]}`, before: nil, after: nil},
		{name: "other members skipped", body: `{"links":{"next":"x","data":[1]},"meta":` + testMeta + `,"n":[1,{"a":"}"}],"data":[` + row + `],"error":null,"z":"]"}`, before: meta, after: meta},
		{name: "blank around", body: "\n\t {  \"meta\" :" + testMeta + " , \"data\" : [ " + row + " ] } \n\n", before: meta, after: meta},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := transform.NewJSONDecoder(strings.NewReader(tt.body), ep, transform.Options{Allocator: newAllocator(t)})
			require.NoError(t, err)
			defer d.Release()
			require.Equal(t, tt.before, d.Meta())
			rec, _, err := d.Next(t.Context())
			require.NoError(t, err)
			require.Equal(t, int64(1), rec.NumRows())
			rec.Release()
			_, _, err = d.Next(t.Context())
			require.ErrorIs(t, err, io.EOF)
			require.Equal(t, tt.after, d.Meta())
		})
	}
}

// TestJSONObjectData covers object endpoints, whose data is one row
// (keyword metrics, spec 2.13), and data of the wrong shape.
func TestJSONObjectData(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "keyword-metrics")
	body := `{"meta":{"request_id":"r","status_code":200,"success":true,"country":"US","keyword":"seo tools","month":"2025-06"},` +
		`"data":{"competitive_density":56,"cpc":"3.16","intents":["COMMERCIAL","INFORMATIONAL"],"keyword_difficulty":71,` +
		`"number_of_results":"1230000000","search_volume":"33100","serp_features":["SITELINKS","PEOPLE_ALSO_ASK"],"trends":[81,100,81,81,81,81,67,67,67,81,81,81]}}`
	got := decodeJSON(t, []byte(body), ep, transform.Options{Allocator: newAllocator(t), BatchRows: 10})
	require.Empty(t, got.Rejects)
	require.Equal(t, []map[string]any{{
		"competitive_density": int64(56), "cpc": 3.16, "intents": []any{"COMMERCIAL", "INFORMATIONAL"},
		"keyword_difficulty": int64(71), "number_of_results": int64(1230000000), "search_volume": int64(33100),
		"serp_features": []any{"SITELINKS", "PEOPLE_ALSO_ASK"},
		"trends":        []any{int64(81), int64(100), int64(81), int64(81), int64(81), int64(81), int64(67), int64(67), int64(67), int64(81), int64(81), int64(81)},
	}}, got.Rows)

	bad := `{"meta":{"success":true},"data":{"competitive_density":"high"}}`
	got = decodeJSON(t, []byte(bad), ep, transform.Options{Allocator: newAllocator(t), BatchRows: 10})
	require.Equal(t, []reject{{Line: 1, Raw: `{"competitive_density":"high"}`, Reason: `field "competitive_density": "high" is not an integer`}}, got.Rejects)

	got = decodeJSON(t, []byte(`{"meta":{"success":true},"data":null}`), ep, transform.Options{Allocator: newAllocator(t), BatchRows: 10})
	require.Empty(t, got.Rows)
	require.Empty(t, got.Rejects)
	got = decodeJSON(t, []byte(`{"meta":{"success":true},"data":null}`), endpoint(t, "matrix"), transform.Options{Allocator: newAllocator(t), BatchRows: 10})
	require.Empty(t, got.Rows)

	for _, tt := range []struct{ endpoint, data, want string }{
		{"keyword-metrics", `[{"cpc":"1"}]`, "the keyword-metrics JSON data is an array, not the object the endpoint answers"},
		{"keyword-metrics", `"x"`, "the keyword-metrics JSON data is a string, not the object"},
		{"matrix", `{"domain":"a"}`, "the matrix JSON data is an object, not the array of rows the endpoint answers"},
		{"matrix", `12`, "the matrix JSON data is a number, not the array of rows"},
		{"matrix", `"x"`, "the matrix JSON data is a string, not the array of rows"},
	} {
		_, err := transform.NewJSONDecoder(strings.NewReader(`{"data":`+tt.data+`}`), endpoint(t, tt.endpoint), transform.Options{})
		require.ErrorContains(t, err, tt.want)
	}
}

func TestJSONErrorEnvelope(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "matrix")
	tests := []struct {
		name string
		body string
		want transform.EnvelopeError
		msg  string
	}{
		{
			name: "sandbox error envelope",
			body: `{"meta":{"success":false,"status_code":400,"request_id":"req-9"},"error":{"type":"invalid_parameter","code":400,"message":"urls: at most 6 targets","retryable":false,"details":[{"parameter":"urls","message":"at most 6 targets"}]}}`,
			want: transform.EnvelopeError{Endpoint: "matrix", StatusCode: 400, Type: "invalid_parameter", Message: "urls: at most 6 targets", RequestID: "req-9"},
			msg:  "transform: matrix: the JSON body is an error, not data (status 400): invalid_parameter: urls: at most 6 targets [request req-9]",
		},
		{
			name: "error before meta",
			body: `{"error":{"message":"boom"},"meta":{"success":false}}`,
			want: transform.EnvelopeError{Endpoint: "matrix", Message: "boom"},
			msg:  "transform: matrix: the JSON body is an error, not data: boom",
		},
		{
			name: "error as a string",
			body: `{"error":"invalid_token","error_description":"expired"}`,
			want: transform.EnvelopeError{Endpoint: "matrix", Message: "invalid_token"},
		},
		{
			name: "success false and data",
			body: `{"meta":{"success":false,"status_code":500},"data":[]}`,
			want: transform.EnvelopeError{Endpoint: "matrix", StatusCode: 500},
			msg:  "transform: matrix: the JSON body is an error, not data (status 500): meta.success is false",
		},
		{
			name: "success false without data",
			body: `{"meta":{"success":false,"status_code":503,"request_id":"x"}}`,
			want: transform.EnvelopeError{Endpoint: "matrix", StatusCode: 503, RequestID: "x"},
		},
		{
			name: "error after data",
			body: `{"data":[` + matrixRow(1) + `],"error":{"type":"internal","message":"cut short"}}`,
			want: transform.EnvelopeError{Endpoint: "matrix", Type: "internal", Message: "cut short"},
		},
		{
			name: "meta saying failure after data",
			body: `{"data":[` + matrixRow(1) + `],"meta":{"success":false,"status_code":500}}`,
			want: transform.EnvelopeError{Endpoint: "matrix", StatusCode: 500},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := decodeErr(t, []byte(tt.body), ep, 10)
			var env *transform.EnvelopeError
			require.ErrorAs(t, err, &env)
			require.Equal(t, tt.want, *env)
			if tt.msg != "" {
				require.EqualError(t, err, tt.msg)
			}
		})
	}
}

// decodeErr decodes body to its end and returns the error that stopped it,
// from NewJSONDecoder or Next, checking that a failing Next returns no
// record and no rejects, and returns its error again.
func decodeErr(t *testing.T, body []byte, ep *catalog.Endpoint, batch int) error {
	t.Helper()
	d, err := transform.NewJSONDecoder(bytes.NewReader(body), ep, transform.Options{Allocator: newAllocator(t), BatchRows: batch})
	if err != nil {
		require.Nil(t, d)
		return err
	}
	defer d.Release()
	for {
		rec, rejects, err := d.Next(t.Context())
		if errors.Is(err, io.EOF) {
			require.FailNow(t, "the body decoded without error")
		}
		if err != nil {
			require.Nil(t, rec, "nothing half-built")
			require.Nil(t, rejects)
			_, _, again := d.Next(t.Context())
			require.Equal(t, err, again, "the error sticks")
			return err
		}
		rec.Release()
	}
}

func TestJSONBrokenBodies(t *testing.T) {
	t.Parallel()
	row := `{"domain_score":1,"domains_count":2}`
	tests := []struct {
		name string
		body string
		is   error
		want string
	}{
		{name: "empty", body: "", is: transform.ErrEmptyBody, want: "transform: the body is empty: no JSON value"},
		{name: "blank", body: " \n\t\r\n", is: transform.ErrEmptyBody},
		{name: "html", body: "<html>oops</html>", want: "the score-profile JSON body is broken at or after byte 0: invalid character '<' looking for beginning of value"},
		{name: "not an object", body: "[" + row + "]", want: "the score-profile JSON body is an array, not an object with meta and data"},
		{name: "byte order mark", body: "\ufeff{\"data\":[]}", want: "JSON body is broken at or after byte 0"},
		{name: "no data", body: `{"meta":` + testMeta + `}`, want: "the score-profile JSON envelope has no data"},
		{name: "data twice", body: `{"data":[` + row + `],"data":[]}`, want: "the score-profile JSON envelope has data twice"},
		{name: "meta twice", body: `{"meta":{},"meta":{},"data":[]}`, want: "has meta twice"},
		{name: "meta not an object", body: `{"meta":[1],"data":[]}`, want: "the score-profile JSON meta is an array, not an object"},
		{name: "missing comma between rows", body: `{"data":[` + row + row + `]}`, want: "broken at or after byte"},
		{name: "trailing comma", body: `{"data":[` + row + `,]}`, want: "invalid character ']'"},
		{name: "broken row mid-body", body: `{"data":[` + strings.Repeat(row+",", 5) + `{"domain_score":1,"domains_count":}` + strings.Repeat(","+row, 5) + `]}`, want: "invalid character '}' looking for beginning of value"},
		{name: "control character in a string", body: `{"data":[{"domain_score":"a` + "\x01" + `"}]}`, want: "invalid character '\\x01' in string literal"},
		{name: "bad escape", body: `{"data":[{"domain_score":"\x"}]}`, want: "invalid character 'x' in string escape code"},
		{name: "cut in a row", body: `{"data":[` + row + `,{"domain_sc`, is: io.ErrUnexpectedEOF, want: "the score-profile JSON body ends before its envelope is closed"},
		{name: "cut after a row", body: `{"data":[` + row, is: io.ErrUnexpectedEOF},
		{name: "cut after data", body: `{"data":[` + row + `]`, is: io.ErrUnexpectedEOF},
		{name: "cut in meta after data", body: `{"data":[` + row + `],"meta":{"su`, is: io.ErrUnexpectedEOF},
		{name: "garbage after the envelope", body: `{"data":[` + row + `]} x`, want: "invalid character 'x' looking for beginning of value"},
		{name: "second value after the envelope", body: `{"data":[` + row + `]} {}`, want: "the score-profile JSON body goes on after its envelope with an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := decodeErr(t, []byte(tt.body), endpoint(t, "score-profile"), 3)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestJSONBrokenAfterGoodBatches checks that broken syntax in a later batch
// fails that batch whole, after earlier batches were returned.
func TestJSONBrokenAfterGoodBatches(t *testing.T) {
	t.Parallel()
	body := `{"data":[` + strings.Repeat(`{"domain_score":1},`, 4) + `{"domain_score":1}}]}`
	mem := newAllocator(t)
	d, err := transform.NewJSONDecoder(strings.NewReader(body), endpoint(t, "score-profile"), transform.Options{Allocator: mem, BatchRows: 3})
	require.NoError(t, err)
	defer d.Release()
	rec, _, err := d.Next(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(3), rec.NumRows())
	rec.Release()
	rec, rejects, err := d.Next(t.Context())
	require.ErrorContains(t, err, "broken at or after byte")
	require.Nil(t, rec)
	require.Nil(t, rejects)
	require.Zero(t, mem.CurrentAlloc(), "the failed batch's rows are freed before Release")
}

// scoreJSON is a score-profile JSON body of n rows: domain_score i,
// domains_count i*10.
func scoreJSON(n int) []byte {
	rows := make([]string, n)
	for i := range n {
		rows[i] = fmt.Sprintf(`{"domain_score":%d,"domains_count":%d}`, i, i*10)
	}
	return jsonBody(rows...)
}

func TestJSONBatchBoundaries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rows  int
		batch int
		want  []int
	}{
		{name: "3 over 10", rows: 10, batch: 3, want: []int{3, 3, 3, 1}},
		{name: "exact multiple", rows: 9, batch: 3, want: []int{3, 3, 3}},
		{name: "one per batch", rows: 4, batch: 1, want: []int{1, 1, 1, 1}},
		{name: "one batch", rows: 10, batch: 100, want: []int{10}},
		{name: "no rows", rows: 0, batch: 3, want: nil},
		{name: "default size", rows: transform.DefaultBatchRows + 1, batch: transform.DefaultBatchRows, want: []int{transform.DefaultBatchRows, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ep := endpoint(t, "score-profile")
			got := decodeJSON(t, scoreJSON(tt.rows), ep, transform.Options{Allocator: newAllocator(t), BatchRows: tt.batch})
			require.Equal(t, tt.want, got.batches)
			require.Len(t, got.Rows, tt.rows)
			for i, row := range got.Rows {
				require.Equal(t, map[string]any{"domain_score": int64(i), "domains_count": int64(i * 10)}, row)
			}
		})
	}
}

// TestJSONRejectsBoundBatches checks that a body of bad rows is not
// collected whole into one call of Next, and that Line counts every row.
func TestJSONRejectsBoundBatches(t *testing.T) {
	t.Parallel()
	rows := append(slices.Repeat([]string{`{"domain_score":"x"}`}, 7), `{"domain_score":1}`)
	d, err := transform.NewJSONDecoder(bytes.NewReader(jsonBody(rows...)), endpoint(t, "score-profile"), transform.Options{Allocator: newAllocator(t), BatchRows: 3})
	require.NoError(t, err)
	defer d.Release()
	var nrows, nrejects, lines []int
	for {
		rec, rej, err := d.Next(t.Context())
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		nrows = append(nrows, int(rec.NumRows()))
		nrejects = append(nrejects, len(rej))
		for _, r := range rej {
			lines = append(lines, r.Line)
		}
		rec.Release()
	}
	require.Equal(t, []int{0, 0, 1}, nrows)
	require.Equal(t, []int{3, 3, 1}, nrejects)
	require.Equal(t, []int{1, 2, 3, 4, 5, 6, 7}, lines)
	require.Equal(t, int64(1), d.Rows())
	require.Equal(t, int64(7), d.Rejected())
}

func TestJSONNextCanceled(t *testing.T) {
	t.Parallel()
	d, err := transform.NewJSONDecoder(bytes.NewReader(scoreJSON(1000)), endpoint(t, "score-profile"), transform.Options{Allocator: newAllocator(t), BatchRows: 300})
	require.NoError(t, err)
	defer d.Release()

	ctx, cancel := context.WithCancel(t.Context())
	rec, _, err := d.Next(ctx)
	require.NoError(t, err)
	rec.Release()
	cancel()
	rec, rejects, err := d.Next(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, rec)
	require.Nil(t, rejects)
	_, _, err = d.Next(t.Context())
	require.ErrorIs(t, err, context.Canceled, "the error sticks")
}

// TestJSONNextCanceledMidBatch checks that a long batch sees the
// cancellation before its end.
func TestJSONNextCanceledMidBatch(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	body := &cancelAfter{r: bytes.NewReader(scoreJSON(5000)), n: 4096, cancel: cancel}
	d, err := transform.NewJSONDecoder(body, endpoint(t, "score-profile"), transform.Options{Allocator: newAllocator(t), BatchRows: 5000})
	require.NoError(t, err)
	defer d.Release()
	rec, _, err := d.Next(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, rec)
	require.Less(t, d.Rows(), int64(5000))
}

// cancelAfter cancels once n bytes were read.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n -= n; c.n <= 0 {
		c.cancel()
	}
	return n, err
}

func TestJSONNextReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	body := scoreJSON(5)
	r := io.MultiReader(bytes.NewReader(body[:len(body)-20]), iotest.ErrReader(boom))
	d, err := transform.NewJSONDecoder(r, endpoint(t, "score-profile"), transform.Options{Allocator: newAllocator(t), BatchRows: 100})
	require.NoError(t, err)
	defer d.Release()
	rec, rejects, err := d.Next(t.Context())
	require.NoError(t, err, "the complete rows before the cut come first")
	require.Equal(t, int64(4), rec.NumRows(), "the fifth row was cut")
	require.Empty(t, rejects)
	rec.Release()
	rec, rejects, err = d.Next(t.Context())
	require.ErrorIs(t, err, transform.ErrCut)
	require.ErrorIs(t, err, boom)
	require.EqualError(t, err, "transform: the score-profile JSON body was cut after 4 complete rows: connection reset")
	require.Nil(t, rec)
	require.Nil(t, rejects)
	_, _, err = d.Next(t.Context())
	require.ErrorIs(t, err, boom, "the error sticks")
	require.Equal(t, int64(4), d.Rows())

	_, err = transform.NewJSONDecoder(iotest.ErrReader(boom), endpoint(t, "score-profile"), transform.Options{})
	require.ErrorIs(t, err, transform.ErrCut)
	require.ErrorIs(t, err, boom)
}

// TestJSONOneByteReads decodes a body handed over one byte at a time.
func TestJSONOneByteReads(t *testing.T) {
	t.Parallel()
	d, err := transform.NewJSONDecoder(iotest.OneByteReader(bytes.NewReader(scoreJSON(20))), endpoint(t, "score-profile"), transform.Options{Allocator: newAllocator(t), BatchRows: 7, MaxRowBytes: 40})
	require.NoError(t, err)
	defer d.Release()
	for {
		rec, rejects, err := d.Next(t.Context())
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Empty(t, rejects)
		rec.Release()
	}
	require.Equal(t, int64(20), d.Rows())
}

func TestJSONReleaseMidBody(t *testing.T) {
	t.Parallel()
	d, err := transform.NewJSONDecoder(bytes.NewReader(scoreJSON(10)), endpoint(t, "score-profile"), transform.Options{Allocator: newAllocator(t), BatchRows: 4})
	require.NoError(t, err)
	rec, _, err := d.Next(t.Context())
	require.NoError(t, err)
	d.Release()
	require.Equal(t, int64(4), rec.NumRows(), "a record outlives its decoder")
	rec.Release()
	_, _, err = d.Next(t.Context())
	require.ErrorContains(t, err, "released")
}

func TestNewDecoder(t *testing.T) {
	t.Parallel()
	mem := newAllocator(t)
	csvBody := "domain_score;domains_count\n1;2\n"
	for _, tt := range []struct{ format, body string }{{"csv", csvBody}, {"json", string(scoreJSON(1))}} {
		d, err := transform.NewDecoder(strings.NewReader(tt.body), endpoint(t, "score-profile"), tt.format, transform.Options{Allocator: mem})
		require.NoError(t, err, tt.format)
		rec, _, err := d.Next(t.Context())
		require.NoError(t, err)
		require.Equal(t, int64(1), rec.NumRows())
		rec.Release()
		d.Release()
	}
	switch d, err := transform.NewDecoder(strings.NewReader(csvBody), endpoint(t, "score-profile"), "xml", transform.Options{}); {
	case err == nil, d != nil:
		t.Fatalf("format xml: got %v, %v", d, err)
	default:
		require.EqualError(t, err, `transform: no decoder for format "xml": want csv or json`)
	}
	// A failing constructor gives a nil Decoder, not a nil pointer in one.
	d, err := transform.NewDecoder(strings.NewReader("domain\n"), endpoint(t, "matrix"), "csv", transform.Options{})
	require.ErrorContains(t, err, "matrix answers JSON only")
	require.True(t, d == nil)
	d, err = transform.NewDecoder(strings.NewReader(""), endpoint(t, "matrix"), "json", transform.Options{})
	require.ErrorIs(t, err, transform.ErrEmptyBody)
	require.True(t, d == nil)
}

// sandboxNow pins the sandbox clock, so its answers do not change by day.
var sandboxNow = time.Date(2025, 6, 15, 13, 4, 5, 0, time.UTC)

// sandboxGet asks a sandbox for a body of ep about target in format.
func sandboxGet(t *testing.T, s *sandbox.Server, ep *catalog.Endpoint, target, format string) []byte {
	t.Helper()
	q := url.Values{"key": {sandbox.DefaultAPIKey}}
	if _, ok := ep.Param("url"); ok {
		q.Set("url", target)
	}
	if _, ok := ep.Param("domain"); ok {
		q.Set("domain", target)
	}
	if _, ok := ep.Param("urls"); ok {
		q.Set("urls", target+",example.com,n40.example")
	}
	if _, ok := ep.Param("keyword"); ok {
		q.Set("keyword", "seo tools")
		q.Set("country", "US")
	}
	if _, ok := ep.Param("limit"); ok {
		q.Set("limit", "1000")
	}
	if len(ep.Scopes) > 0 {
		q.Set("scope", string(ep.Scopes[0]))
	}
	if ep.DefaultFields != nil { // ask for every field: no drift
		q.Set("fields", strings.Join(ep.FieldNames(), ","))
	}
	if format == "csv" {
		q.Set("format", "csv")
	}
	req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, ep.Path+"?"+q.Encode(), nil)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, "%s", rec.Body)
	return rec.Body.Bytes()
}

// TestJSONSandboxRoundTrip decodes what the sandbox answers in JSON for
// every endpoint: every row decodes, nothing drifts, and where the endpoint
// answers CSV too, the CSV decoder reads the same rows from the CSV answer.
func TestJSONSandboxRoundTrip(t *testing.T) {
	t.Parallel()
	s, err := sandbox.New(sandbox.Config{Now: func() time.Time { return sandboxNow }, RatePerSecond: -1, MaxConcurrent: -1})
	require.NoError(t, err)
	for _, ep := range catalog.All() {
		t.Run(ep.Name, func(t *testing.T) {
			t.Parallel()
			mem := newAllocator(t)
			body := sandboxGet(t, s, ep, "n300.example", "json")
			got := decodeJSON(t, body, ep, transform.Options{Allocator: mem, BatchRows: 64, Logger: testLogger(t)})
			require.Empty(t, got.Rejects)
			require.Equal(t, drift{Unknown: []string{}, Missing: []string{}}, got.Drift)
			require.NotEmpty(t, got.Rows)

			var env struct{ Data json.RawMessage }
			require.NoError(t, json.Unmarshal(body, &env))
			want := 1
			if ep.Shape == catalog.List {
				var rows []json.RawMessage
				require.NoError(t, json.Unmarshal(env.Data, &rows))
				want = len(rows)
			}
			require.Len(t, got.Rows, want)

			if ep.AllowsCSV() {
				csvGot := decodeAll(t, sandboxGet(t, s, ep, "n300.example", "csv"), ep, transform.Options{Allocator: mem, BatchRows: 64})
				require.Empty(t, csvGot.Rejects)
				require.Equal(t, csvGot.Rows, got.Rows, "the CSV and the JSON answers decode alike")
			}
		})
	}
}

// TestJSONSandboxMatrix checks decoded matrix rows against the sandbox's
// JSON read by encoding/json.
func TestJSONSandboxMatrix(t *testing.T) {
	t.Parallel()
	s, err := sandbox.New(sandbox.Config{Now: func() time.Time { return sandboxNow }, RatePerSecond: -1, MaxConcurrent: -1})
	require.NoError(t, err)
	ep := endpoint(t, "matrix")
	body := sandboxGet(t, s, ep, "n240.example", "json")
	d, err := transform.NewJSONDecoder(bytes.NewReader(body), ep, transform.Options{Allocator: newAllocator(t), BatchRows: 7, Required: []string{"domain"}})
	require.NoError(t, err)
	defer d.Release()
	require.JSONEq(t, `"ROOT_DOMAIN"`, string(d.Meta()["scope"]), "meta is read before data")

	var env struct {
		Data []struct {
			Domain          string  `json:"domain"`
			DomainScore     int64   `json:"domain_score"`
			IPAddress       string  `json:"ip_address"`
			Country         string  `json:"country"`
			BacklinksCounts []int64 `json:"backlinks_counts"`
			MatchesCount    int64   `json:"matches_count"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &env))
	require.NotEmpty(t, env.Data)
	var want, got []map[string]any
	for _, r := range env.Data {
		counts := make([]any, len(r.BacklinksCounts))
		for i, c := range r.BacklinksCounts {
			counts[i] = c
		}
		want = append(want, map[string]any{"domain": r.Domain, "domain_score": r.DomainScore, "ip_address": r.IPAddress,
			"country": r.Country, "backlinks_counts": counts, "matches_count": r.MatchesCount})
	}
	for {
		rec, rejects, err := d.Next(t.Context())
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Empty(t, rejects)
		got = append(got, renderRecord(t, rec)...)
		rec.Release()
	}
	require.Equal(t, want, got)
}
