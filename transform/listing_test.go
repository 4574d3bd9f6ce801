package transform_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/redact"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/sandbox/locations"
	"github.com/seoetl/etl/transform"
)

const listingAccount = "agency-n1200"

var listingDay = time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)

// sandboxPage is a page of Get locations of the sandbox, as the service
// encodes it.
func sandboxPage(t testing.TB, page, size int) (listing.Page, []byte) {
	t.Helper()
	p, e := locations.New(1).Page(listingAccount, page, size, listingDay)
	require.Nil(t, e)
	body, err := json.Marshal(listing.PageBody{Data: p, RequestID: "r1"})
	require.NoError(t, err)
	return p, body
}

// itemsBody is a body of Get locations whose content holds items as sent.
func itemsBody(items ...string) []byte {
	return []byte(`{"data":{"page":1,"totalElements":` + fmt.Sprint(len(items)) + `,"totalPages":1,"content":[` +
		strings.Join(items, ",") + `]},"requestId":"r1"}`)
}

// decodedPage is what a page decoded to, rendered for comparison.
type decodedPage struct {
	Page, TotalElements, TotalPages int
	Rows                            []map[string]any
	Problems                        []map[string]any
	IDs                             []string
	Rejects                         []reject
	Unknown                         []string
}

// decodeListing decodes body with decode, checks the page's invariants and
// renders it; the page's memory is released.
func decodeListing(t testing.TB, decode func(io.Reader, transform.Options) (*transform.ListingPage, error), body []byte, opts transform.Options) (decodedPage, error) {
	t.Helper()
	return decodeListingFrom(t, decode, bytes.NewReader(body), opts)
}

// decodeListingFrom is decodeListing of the body r reads.
func decodeListingFrom(t testing.TB, decode func(io.Reader, transform.Options) (*transform.ListingPage, error), r io.Reader, opts transform.Options) (decodedPage, error) {
	t.Helper()
	if opts.Allocator == nil {
		opts.Allocator = newAllocator(t)
	}
	p, err := decode(r, opts)
	if err != nil {
		require.Nil(t, p)
		return decodedPage{}, err
	}
	defer p.Release()
	require.True(t, transform.ListingSchema().Equal(p.Locations.Schema()))
	require.True(t, transform.ListingProblemSchema().Equal(p.Problems.Schema()))
	out := decodedPage{Page: p.Page, TotalElements: p.TotalElements, TotalPages: p.TotalPages,
		Rows: renderRecord(t, p.Locations), Problems: renderRecord(t, p.Problems), IDs: p.IDs,
		Rejects: []reject{}, Unknown: nonNil(p.Drift.Unknown)}
	require.Len(t, p.IDs, len(out.Rows))
	for i, row := range out.Rows {
		require.Equal(t, p.IDs[i], row["location_id"])
	}
	for _, r := range p.Rejects {
		out.Rejects = append(out.Rejects, reject{Line: r.Line, Raw: r.Raw, Reason: r.Reason})
	}
	require.Empty(t, p.Drift.Missing)
	return out, nil
}

// wantRow is the row a location decodes to.
func wantRow(t testing.TB, loc listing.Location) map[string]any {
	t.Helper()
	text := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	row := map[string]any{
		"location_id": loc.ID, "location_name": text(loc.LocationName), "city": text(loc.City),
		"address": text(loc.Address), "additional_address_info": text(loc.AdditionalAddressInfo),
		"zip": text(loc.Zip), "phone": text(loc.Phone), "region": text(loc.Region),
		"website_url": text(loc.WebsiteURL), "country_code": text(loc.CountryCode), "status": text(loc.Status),
		"business_hours": nil, "holiday_hours": nil, "reopen_date": text(loc.ReopenDate),
		"open_days": int64(0), "holiday_count": int64(len(loc.HolidayHours)),
		"content_hash": hex.EncodeToString(listing.ContentHash(loc)),
	}
	if loc.BusinessHours != nil {
		b, err := json.Marshal(loc.BusinessHours)
		require.NoError(t, err)
		row["business_hours"] = string(b)
		n := int64(0)
		for _, d := range [][]listing.TimeRange{loc.BusinessHours.Monday, loc.BusinessHours.Tuesday,
			loc.BusinessHours.Wednesday, loc.BusinessHours.Thursday, loc.BusinessHours.Friday,
			loc.BusinessHours.Saturday, loc.BusinessHours.Sunday} {
			if len(d) > 0 {
				n++
			}
		}
		row["open_days"] = n
	}
	if len(loc.HolidayHours) > 0 {
		b, err := json.Marshal(loc.HolidayHours)
		require.NoError(t, err)
		row["holiday_hours"] = string(b)
	}
	return row
}

func TestDecodeListingPageOfTheSandbox(t *testing.T) {
	t.Parallel()
	page, body := sandboxPage(t, 2, locations.MaxPageSize)
	require.Len(t, page.Content, locations.MaxPageSize)
	got, err := decodeListing(t, transform.DecodeListingPage, body, transform.Options{})
	require.NoError(t, err)
	require.Equal(t, 2, got.Page)
	require.Equal(t, page.TotalElements, got.TotalElements)
	require.Equal(t, page.TotalPages, got.TotalPages)
	require.Empty(t, got.Rejects)
	require.Empty(t, got.Unknown)
	var rows, problems []map[string]any
	var ids []string
	for _, loc := range page.Content {
		rows = append(rows, wantRow(t, loc))
		ids = append(ids, loc.ID)
		for _, e := range loc.Errors {
			problems = append(problems, map[string]any{"location_id": loc.ID, "code": e.Code, "message": e.Message})
		}
	}
	require.NotEmpty(t, problems, "the sandbox's locations have problems")
	require.Equal(t, rows, got.Rows)
	require.Equal(t, problems, got.Problems)
	require.Equal(t, ids, got.IDs)
}

func TestDecodeLocation(t *testing.T) {
	t.Parallel()
	store := locations.New(1)
	loc, e := store.Get(listingAccount, store.ID(listingAccount, 1), listingDay)
	require.Nil(t, e)
	require.NotEmpty(t, loc.Status)
	body, err := json.Marshal(listing.LocationBody{Data: loc, Requested: "r1"})
	require.NoError(t, err)
	got, err := decodeListing(t, transform.DecodeLocation, body, transform.Options{})
	require.NoError(t, err)
	require.Equal(t, []map[string]any{wantRow(t, loc)}, got.Rows)
	require.Equal(t, loc.Status, got.Rows[0]["status"])
	require.Zero(t, got.Page)
	require.Empty(t, got.Rejects)

	got, err = decodeListing(t, transform.DecodeLocation, []byte(`{"data":{"id":"L1","city":12},"requested":"r1"}`), transform.Options{})
	require.NoError(t, err)
	require.Empty(t, got.Rows)
	require.Equal(t, []reject{{Line: 1, Raw: `{"id":"L1","city":12}`,
		Reason: `item 1 (id "L1"): field city: want a string, got a number`}}, got.Rejects)

	for name, body := range map[string]string{
		"data null":     `{"data":null,"requested":"r1"}`,
		"no data":       `{"requested":"r1"}`,
		"a page":        `[{"id":"L1"}]`,
		"cut":           `{"data":{"id":"L1"`,
		"an error":      `{"error":{"code":"RESOURCE_NOT_FOUND","message":"no location L9","details":[]},"requestId":"r1"}`,
		"data twice":    `{"data":{"id":"L1"},"data":{"id":"L2"}}`,
		"after the end": `{"data":{"id":"L1"}} {}`,
	} {
		_, err := decodeListing(t, transform.DecodeLocation, []byte(body), transform.Options{})
		require.Error(t, err, name)
	}
}

// Each bad item is rejected with its raw JSON and a reason naming the
// field; the items around it load.
func TestDecodeListingPageRejectsBadItems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, item, reason string
	}{
		{"hours of the wrong type", `{"id":"b","businessHours":"9-5"}`, `item 2 (id "b"): field businessHours: want an object, got a string`},
		{"a number for text", `{"city":12,"id":"b"}`, `item 2 (id "b"): field city: want a string, got a number`},
		{"an object for text", `{"id":"b","zip":{"code":"8001"}}`, `item 2 (id "b"): field zip: want a string, got an object`},
		{"a bad reopenDate", `{"id":"b","reopenDate":"2026-13-01"}`, `item 2 (id "b"): field reopenDate: "2026-13-01" is not a date (YYYY-MM-DD)`},
		{"a reopenDate of another layout", `{"id":"b","reopenDate":"01/03/2027"}`, `item 2 (id "b"): field reopenDate: "01/03/2027" is not a date (YYYY-MM-DD)`},
		{"a reopenDate number", `{"id":"b","reopenDate":20270301}`, `item 2 (id "b"): field reopenDate: want a string, got a number`},
		{"no id", `{"city":"Bern"}`, `item 2: has no id`},
		{"an empty id", `{"id":""}`, `item 2: field id: is empty`},
		{"a null id", `{"id":null}`, `item 2: field id: want a string, got null`},
		{"a number id", `{"id":42,"city":"Bern"}`, `item 2: field id: want a string, got a number`},
		{"a string", `"b"`, `item 2: want an object, got a string`},
		{"null", `null`, `item 2: want an object, got null`},
		{"an array", `[{"id":"b"}]`, `item 2: want an object, got an array`},
		{"a field twice", `{"id":"b","city":"Bern","city":"Basel"}`, `item 2 (id "b"): field city: appears twice`},
		{"a weekday of the wrong type", `{"id":"b","businessHours":{"monday":"09:00-17:00"}}`, `item 2 (id "b"): field businessHours.monday: want an array, got a string`},
		{"a null range", `{"id":"b","businessHours":{"monday":[null]}}`, `item 2 (id "b"): field businessHours.monday[0]: want an object, got null`},
		{"a range of the wrong type", `{"id":"b","businessHours":{"friday":[{"from":"09:00","to":"12:00"},{"from":"13:00","to":1700}]}}`,
			`item 2 (id "b"): field businessHours.friday[1].to: want a string, got a number`},
		{"a weekday twice", `{"id":"b","businessHours":{"monday":[],"monday":[]}}`, `item 2 (id "b"): field businessHours.monday: appears twice`},
		{"holidays of the wrong type", `{"id":"b","holidayHours":{"day":"2026-12-25"}}`, `item 2 (id "b"): field holidayHours: want an array, got an object`},
		{"a holiday of the wrong type", `{"id":"b","holidayHours":["2026-12-25"]}`, `item 2 (id "b"): field holidayHours[0]: want an object, got a string`},
		{"holiday times of the wrong type", `{"id":"b","holidayHours":[{"type":"CLOSED","day":"2026-12-25"},{"type":"RANGE","day":"2026-12-31","times":[{"from":9}]}]}`,
			`item 2 (id "b"): field holidayHours[1].times[0].from: want a string, got a number`},
		{"errors of the wrong type", `{"id":"b","errors":"none"}`, `item 2 (id "b"): field errors: want an array, got a string`},
		{"an error that is a string", `{"id":"b","errors":["NAP_MISMATCH"]}`, `item 2 (id "b"): field errors[0]: want an object, got a string`},
		{"an error code number", `{"id":"b","errors":[{"code":7,"message":"m"}]}`, `item 2 (id "b"): field errors[0].code: want a string, got a number`},
		{"an error code null", `{"id":"b","errors":[{"code":null,"message":"m"}]}`, `item 2 (id "b"): field errors[0].code: want a string, got null`},
		{"an error without message", `{"id":"b","errors":[{"code":"X","message":"m"},{"code":"X"}]}`, `item 2 (id "b"): field errors[1]: has no message`},
		{"an error without code", `{"id":"b","errors":[{"message":"m"}]}`, `item 2 (id "b"): field errors[0]: has no code`},
		{"NUL", `{"id":"b","city":"Be\u0000rn"}`, `item 2 (id "b"): field city: "Be\u0000rn" holds a NUL byte`},
		{"invalid UTF-8", "{\"id\":\"b\",\"city\":\"Z\xfcrich\"}", "item 2 (id \"b\"): field city: \"Z\uFFFDrich\" is not valid UTF-8"},
		{"an unpaired surrogate", `{"id":"b","phone":"\ud800"}`, `item 2 (id "b"): field phone: "\ud800" holds an unpaired surrogate escape \ud800, which is no character`},
		{"a bad id shows escaped", `{"id":"b\"x","city":1}`, `item 2 (id "b\"x"): field city: want a string, got a number`},
		{"the first problem is named", `{"id":"b","city":1,"zip":2}`, `item 2 (id "b"): field city: want a string, got a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := decodeListing(t, transform.DecodeListingPage,
				itemsBody(`{"id":"a","city":"Bern"}`, tc.item, `{"id":"c"}`), transform.Options{})
			require.NoError(t, err)
			require.Equal(t, []string{"a", "c"}, got.IDs)
			require.Equal(t, []reject{{Line: 2, Raw: tc.item, Reason: tc.reason}}, got.Rejects)
		})
	}
}

func TestDecodeListingPageFields(t *testing.T) {
	t.Parallel()
	// Nulls and empty strings are absent values; unknown members are left
	// out and named; escapes are read.
	got, err := decodeListing(t, transform.DecodeListingPage, itemsBody(
		`{"id":"a","locationName":"","city":null,"address":"Caf\u00e9 \ud83c\udf70 Stra\\u00dfe","businessHours":null,"holidayHours":[],"reopenDate":"","errors":null,"rating":5}`,
		`{"id":"b","businessHours":{"monday":[],"tuesday":[{"from":"09:00","to":"17:00","note":"x"}],"lunes":[]},"holidayHours":[{"type":"CLOSED","day":"2026-12-25","times":null,"why":"x"}],"reopenDate":"2027-03-01","\u0063ountryCode":"CH"}`,
	), transform.Options{})
	require.NoError(t, err)
	require.Empty(t, got.Rejects)
	require.Equal(t, []string{"rating", "businessHours.tuesday[].note", "businessHours.lunes", "holidayHours[].why"}, got.Unknown)
	a, b := got.Rows[0], got.Rows[1]
	for _, col := range []string{"location_name", "city", "business_hours", "holiday_hours", "reopen_date", "status", "zip"} {
		require.Nil(t, a[col], col)
	}
	require.Equal(t, "Café 🍰 Stra\\u00dfe", a["address"])
	require.Equal(t, int64(0), a["open_days"])
	require.Equal(t, int64(0), a["holiday_count"])
	require.Equal(t, `{"tuesday":[{"from":"09:00","to":"17:00"}]}`, b["business_hours"])
	require.Equal(t, `[{"type":"CLOSED","day":"2026-12-25"}]`, b["holiday_hours"])
	require.Equal(t, "2027-03-01", b["reopen_date"])
	require.Equal(t, "CH", b["country_code"])
	require.Equal(t, int64(1), b["open_days"])
	require.Equal(t, int64(1), b["holiday_count"])
	require.Empty(t, got.Problems)

	// The hash is that of the location encoding/json reads.
	var loc listing.Location
	require.NoError(t, json.Unmarshal([]byte(`{"id":"b","businessHours":{"monday":[],"tuesday":[{"from":"09:00","to":"17:00"}]},"holidayHours":[{"type":"CLOSED","day":"2026-12-25"}],"reopenDate":"2027-03-01","countryCode":"CH"}`), &loc))
	require.Equal(t, hex.EncodeToString(listing.ContentHash(loc)), b["content_hash"])
}

// An id given twice in a page counts once: the later item wins, with its
// problems, at its place.
func TestDecodeListingPageDuplicateIDs(t *testing.T) {
	t.Parallel()
	got, err := decodeListing(t, transform.DecodeListingPage, itemsBody(
		`{"id":"a","city":"Old","errors":[{"code":"OLD","message":"gone"}]}`,
		`{"id":"b","errors":[{"code":"B","message":"b"}]}`,
		`{"id":"a","city":1}`, // rejected: it replaces nothing
		`{"id":"a","city":"New","errors":[{"code":"NEW","message":"now"},{"code":"NEW2","message":"too"}]}`,
		`{"id":"c"}`,
	), transform.Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a", "c"}, got.IDs)
	require.Equal(t, "New", got.Rows[1]["city"])
	require.Equal(t, []map[string]any{
		{"location_id": "b", "code": "B", "message": "b"},
		{"location_id": "a", "code": "NEW", "message": "now"},
		{"location_id": "a", "code": "NEW2", "message": "too"},
	}, got.Problems)
	require.Len(t, got.Rejects, 1)
	require.Equal(t, 3, got.Rejects[0].Line)

	// Every row replaced, and the problems with them.
	got, err = decodeListing(t, transform.DecodeListingPage, itemsBody(
		`{"id":"a","errors":[{"code":"X","message":"x"}]}`, `{"id":"a"}`), transform.Options{})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, got.IDs)
	require.Empty(t, got.Problems)
}

func TestDecodeListingPageEnvelope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		is         error  // errors.Is the error, when not nil
		msg        string // the error says it
	}{
		{"empty", "", transform.ErrEmptyBody, "empty"},
		{"blank", " \n", transform.ErrEmptyBody, "empty"},
		{"not JSON", "<html>Bad gateway</html>", nil, "broken"},
		{"an array", `[{"id":"a"}]`, nil, "is an array, not an object with data"},
		{"no data", `{"requestId":"r1"}`, nil, "has no data"},
		{"data null", `{"data":null}`, nil, "data is null"},
		{"data an array", `{"data":[{"id":"a"}]}`, nil, "data is an array"},
		{"no content", `{"data":{"page":1}}`, nil, "data has no content"},
		{"content a string", `{"data":{"content":"none"}}`, nil, "data.content is a string, not an array"},
		{"content an object", `{"data":{"content":{"id":"a"}}}`, nil, "data.content is an object"},
		{"content twice", `{"data":{"content":[],"content":[]}}`, nil, "content twice"},
		{"data twice", `{"data":{"content":[]},"data":{"content":[]}}`, nil, "data twice"},
		{"page a string", `{"data":{"page":"1","content":[]}}`, nil, `data.page is "1", not a non-negative integer`},
		{"negative total", `{"data":{"totalElements":-1,"content":[]}}`, nil, "data.totalElements is -1"},
		{"fractional pages", `{"data":{"totalPages":1.5,"content":[]}}`, nil, "data.totalPages is 1.5"},
		{"huge page", `{"data":{"page":99999999999999999999,"content":[]}}`, nil, "data.page is 99999999999999999999"},
		{"after the envelope", `{"data":{"content":[]}}{"data":{"content":[]}}`, nil, "goes on after its envelope with an object"},
		{"broken item", `{"data":{"content":[{"id":"a"},{"id":}]}}`, nil, "broken"},
		{"ends early", `{"data":{"content":[{"id":"a"},{"id":"b"}`, io.ErrUnexpectedEOF, "ends before its envelope is closed"},
		{"ends after data", `{"data":{"content":[]}`, io.ErrUnexpectedEOF, "ends before"},
		{"an error envelope", `{"error":{"code":"VALIDATION_ERROR","message":"size must be at most 100","details":[]},"requestId":"r1"}`, nil,
			"is an error, not data: VALIDATION_ERROR: size must be at most 100"},
		{"an error after data", `{"data":{"content":[{"id":"a"}]},"error":"boom"}`, nil, `is an error, not data: : "boom"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := decodeListing(t, transform.DecodeListingPage, []byte(tc.body), transform.Options{})
			require.Error(t, err)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
			require.ErrorContains(t, err, tc.msg)
			require.NotErrorIs(t, err, transform.ErrCut)
		})
	}

	var le *listing.Error
	_, err := decodeListing(t, transform.DecodeListingPage, []byte(`{"error":{"code":"RESOURCE_NOT_FOUND","message":"m","details":[]}}`), transform.Options{})
	require.ErrorAs(t, err, &le)
	require.Equal(t, "RESOURCE_NOT_FOUND", le.Code)

	// Null content is no items; members the spec does not name are
	// skipped; an error member that is null is no error.
	got, err := decodeListing(t, transform.DecodeListingPage,
		[]byte(`{"meta":{"x":1},"error":null,"data":{"extra":[1,2],"content":null,"page":3},"requestId":"r1"}`), transform.Options{})
	require.NoError(t, err)
	require.Equal(t, 3, got.Page)
	require.Empty(t, got.Rows)
}

// A body whose reading fails before its envelope closes fails the page
// with ErrCut, wherever it is cut; cut after the envelope it is whole.
func TestDecodeListingPageCutEverywhere(t *testing.T) {
	t.Parallel()
	_, body := sandboxPage(t, 1, 3)
	body = append(body, '\n')
	end := bytes.LastIndexByte(body, '}') + 1
	want, err := decodeListing(t, transform.DecodeListingPage, body, transform.Options{})
	require.NoError(t, err)
	for n := range len(body) {
		mem := newAllocator(t)
		p, err := transform.DecodeListingPage(cutAt(body, n), transform.Options{Allocator: mem})
		if n >= end {
			require.NoError(t, err, "cut at %d", n)
			require.Equal(t, want.IDs, p.IDs)
			p.Release()
			continue
		}
		require.ErrorIs(t, err, transform.ErrCut, "cut at %d", n)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut at %d", n)
		require.Nil(t, p)
	}
}

func TestDecodeListingPageBounds(t *testing.T) {
	t.Parallel()
	long := `{"id":"b","locationName":"` + strings.Repeat("x", 200) + `"}`
	got, err := decodeListing(t, transform.DecodeListingPage, itemsBody(`{"id":"a"}`, long), transform.Options{MaxRowBytes: 100})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, got.IDs)
	require.Equal(t, []reject{{Line: 2, Raw: long[:100], Reason: "item 2: longer than 100 bytes"}}, got.Rejects)

	// An item too long to hold in bounded memory fails the page.
	huge := `{"id":"b","locationName":"` + strings.Repeat("x", 5<<20) + `"}`
	_, err = decodeListing(t, transform.DecodeListingPage, itemsBody(huge), transform.Options{MaxRowBytes: 100})
	require.ErrorContains(t, err, "holds a value longer than")

	_, err = transform.DecodeListingPage(strings.NewReader(`{}`), transform.Options{MaxRowBytes: -1})
	require.ErrorContains(t, err, "MaxRowBytes must be at least 1")
}

func TestDecodeListingPageRedacts(t *testing.T) {
	t.Parallel()
	const key = "sk_live_0123456789abcdef"
	opts := transform.Options{Redactor: redact.New(key)}
	got, err := decodeListing(t, transform.DecodeListingPage, itemsBody(
		`{"id":"a","websiteUrl":"https://example.com/?k=`+key+`"}`,
		`{"id":"`+key+`","city":12,"note":"`+key+`"}`,
		`{"id":"c","errors":[{"code":"X","message":"bad key `+key+`"}],"`+key+`":1}`,
	), opts)
	require.NoError(t, err)
	require.NotContains(t, fmt.Sprint(got), key)
	require.Contains(t, got.Rows[0]["website_url"], redact.Mask)
	require.Contains(t, got.Rejects[0].Raw, redact.Mask)
	require.Contains(t, got.Rejects[0].Reason, redact.Mask)

	_, err = decodeListing(t, transform.DecodeListingPage, []byte(`{"error":{"code":"BAD_REQUEST","message":"key `+key+` is unknown"}}`), opts)
	require.Error(t, err)
	require.NotContains(t, err.Error(), key)
}

func ExampleDecodeListingPage() {
	body := `{"data": {"page": 1, "totalElements": 3, "totalPages": 1, "content": [
		{"id": "L1", "locationName": "Bakery", "city": "Bern", "businessHours": {"monday": [{"from": "07:00", "to": "18:00"}]},
		 "errors": [{"code": "NAP_MISMATCH", "message": "The phone differs in a directory."}]},
		{"id": "L2", "locationName": "Café", "city": 12},
		{"id": "L3", "locationName": "Kiosk", "reopenDate": "2027-03-01"}
	]}, "requestId": "r1"}`
	page, err := transform.DecodeListingPage(strings.NewReader(body), transform.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer page.Release()
	fmt.Println(page.IDs, page.Locations.NumRows(), page.Problems.NumRows())
	for _, r := range page.Rejects {
		fmt.Println(r.Reason)
	}
	// Output:
	// [L1 L3] 2 1
	// item 2 (id "L2"): field city: want a string, got a number
}

func BenchmarkDecodeListingPage(b *testing.B) {
	_, body := sandboxPage(b, 1, locations.MaxPageSize)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := transform.DecodeListingPage(bytes.NewReader(body), transform.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(p.IDs) != locations.MaxPageSize {
			b.Fatalf("%d locations", len(p.IDs))
		}
		p.Release()
	}
}

// hostileListingBodies seed FuzzListingPage: bodies of Get locations and
// Get location with something wrong, and a few right ones.
var hostileListingBodies = []string{
	`{"data":{"page":1,"totalElements":2,"totalPages":1,"content":[{"id":"a","city":"Bern"},{"id":"b","businessHours":"9-5"}]},"requestId":"r"}`,
	`{"data":{"content":[{"id":"a","businessHours":{"monday":[{"from":"09:00","to":"17:00"}],"Monday":"x"}},{"ID":"b","id":"c"}]}}`,
	`{"data":{"content":[{"id":"a","City":12},{"id":"a","errors":[{"code":"X","message":"y"}]},{"id":"a"}]}}`,
	`{"data":{"content":[{"id":"a","holidayHours":[{"type":"RANGE","day":"2026-12-24","times":[{"from":"09:00","to":"12:00"},null]}]}]}}`,
	`{"data":{"content":[{"id":"\ud800","city":"\u0000"},{"id":"a","reopenDate":"2026-02-30"},{"id":"b","reopenDate":"2027-03-01"}]}}`,
	"{\"data\":{\"content\":[{\"id\":\"a\",\"city\":\"Z\xfcrich\"},{\"id\":\"b\",\"zip\":\"\u00e9\"}]}}",
	`{"data":{"content":[1,"x",null,[],{},{"id":""},{"id":null},{"id":7},{"id":"ok","errors":[{"code":"X"}]}]}}`,
	`{"data":{"content":[{"id":"a","id":"b"},{"id":"c","errors":[{"code":"X","message":"m","code":"Y"}]}]}}`,
	`{"data":{"content":null,"page":-1}}`,
	`{"data":{"content":{}}}`,
	`{"data":{"content":[]},"error":{"code":"BAD_REQUEST","message":"no","details":[{"code":"D","message":"m","field":"size"}]}}`,
	`{"data":{"content":[{"id":"a"}]}}{"x":1}`,
	`{"data":{"content":[{"id":"a"},{"id":`,
	`{"data":{"id":"L1","status":"COMPLETE","countryCode":"CH","businessHours":{}},"requested":"r"}`,
	`{"data":"L1","requested":"r"}`,
	`{"data":{"content":[{"id":"a","businessHours":{"monday":[],"monday":[{"from":1}]},"holidayHours":[],"errors":[]}]}}`,
	`[{"id":"a"}]`,
	``,
}

// FuzzListingPage checks that no body makes DecodeListingPage or
// DecodeLocation panic or leak Arrow memory; that a page it decodes has
// every item of content as a row or a reject, the later of two items of
// the same id winning; that a location it accepts is the one
// encoding/json reads from the same item (its text fields and its
// content hash), unless the item has a member whose name differs from a
// location's only in case, which encoding/json matches and this decoder
// does not; and that the body cut after cut bytes either fails with
// ErrCut, decodes as the whole body (cut after the envelope), or fails as
// the whole body does.
func FuzzListingPage(f *testing.F) {
	for _, b := range hostileListingBodies {
		f.Add(false, []byte(b), uint16(len(b)/2))
		f.Add(true, []byte(b), uint16(len(b)-1))
	}
	_, page := sandboxPage(f, 1, 5)
	f.Add(false, page, uint16(len(page)*2/3))

	f.Fuzz(func(t *testing.T, single bool, body []byte, cut uint16) {
		decode := transform.DecodeListingPage
		if single {
			decode = transform.DecodeLocation
		}
		const maxRow = 512
		opts := func() transform.Options {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			t.Cleanup(func() { mem.AssertSize(t, 0) })
			return transform.Options{Allocator: mem, MaxRowBytes: maxRow}
		}
		got, err := decodeListing(t, decode, body, opts())
		n := int(cut) % (len(body) + 1)
		cutGot, cutErr := decodeListingFrom(t, decode, cutAt(body, n), opts())
		switch {
		case cutErr == nil && err != nil:
			// Cut after its envelope, the body lost what made it fail.
			require.Regexp(t, "goes on after its envelope|is broken", err.Error())
		case cutErr == nil:
			require.Equal(t, got, cutGot, "a body cut after its envelope is whole")
		case errors.Is(cutErr, transform.ErrCut):
			require.ErrorIs(t, cutErr, io.ErrUnexpectedEOF)
		default:
			require.Error(t, err, "the cut body failed with %v, the whole body did not", cutErr)
		}
		if err != nil {
			require.NotErrorIs(t, err, transform.ErrCut)
			return
		}

		require.True(t, json.Valid(body[:bytes.LastIndexByte(body, '}')+1]), "an invalid body decoded")
		var items []json.RawMessage
		if single {
			var env struct{ Data json.RawMessage }
			if json.Unmarshal(body, &env) != nil || foldClash(body) {
				return
			}
			items = []json.RawMessage{env.Data}
		} else {
			var env struct {
				Data struct{ Content []json.RawMessage }
			}
			if json.Unmarshal(body, &env) != nil || foldClash(body) {
				return
			}
			items = env.Data.Content
		}
		rejected := map[int]bool{}
		last := 0
		for _, r := range got.Rejects {
			require.Greater(t, r.Line, last, "reject lines grow")
			require.LessOrEqual(t, r.Line, len(items))
			require.True(t, strings.HasPrefix(r.Reason, fmt.Sprintf("item %d", r.Line)), r.Reason)
			require.LessOrEqual(t, len(r.Raw), maxRow)
			rejected[r.Line] = true
			last = r.Line
		}
		// The good items, the later of an id winning, in order.
		var ids []string
		want := map[string]listing.Location{}
		for i, raw := range items {
			if rejected[i+1] {
				continue
			}
			var loc listing.Location
			require.NoError(t, json.Unmarshal(raw, &loc), "item %d was accepted", i+1)
			if _, ok := want[loc.ID]; ok {
				ids = slices.DeleteFunc(ids, func(id string) bool { return id == loc.ID })
			}
			ids = append(ids, loc.ID)
			want[loc.ID] = loc
		}
		require.Equal(t, ids, got.IDs)
		problems := 0
		for i, id := range ids {
			w := wantRow(t, want[id])
			for _, col := range []string{"location_id", "location_name", "city", "address", "additional_address_info",
				"zip", "phone", "region", "website_url", "country_code", "status", "reopen_date", "open_days",
				"holiday_count", "content_hash", "business_hours", "holiday_hours"} {
				require.Equal(t, w[col], got.Rows[i][col], "%s of %q", col, id)
			}
			problems += len(want[id].Errors)
		}
		require.Len(t, got.Problems, problems)
	})
}

// foldClash reports whether the JSON body has an object member whose name
// differs from a name of the listing bodies only in case.
func foldClash(body []byte) bool {
	names := []string{"data", "content", "page", "totalElements", "totalPages", "requestId", "requested", "error",
		"id", "locationName", "city", "address", "additionalAddressInfo", "zip", "phone", "region", "websiteUrl",
		"businessHours", "holidayHours", "reopenDate", "status", "countryCode", "errors", "code", "message",
		"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "from", "to", "type", "day", "times"}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return true
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				for _, n := range names {
					if k != n && strings.EqualFold(k, n) {
						return true
					}
				}
				if walk(x) {
					return true
				}
			}
		case []any:
			for _, x := range v {
				if walk(x) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}
