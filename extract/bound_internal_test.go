package extract

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
)

var upperBoundCases = []struct {
	name    string
	text    string
	refused int
	want    int
}{
	{"the sandbox's", "size must be between 1 and 100, got 500", 500, 100},
	{"at most", "size must be at most 100", 500, 100},
	{"not exceed", "Size must not exceed 250.", 500, 250},
	{"no more than", "size: no more than 50 locations per page", 500, 50},
	{"up to", "a page holds up to 200 locations; size 500 is too many", 500, 200},
	{"less than", "size must be less than 101", 500, 100},
	{"less than or equal", "size must be less than or equal to 100", 500, 100},
	{"<=", "1 <= size <= 100", 500, 100},
	{"<", "0 < size < 101", 500, 100},
	{"a dash", "size: 1-100", 500, 100},
	{"to", "size ranges from 1 to 100", 500, 100},
	{"an interval", "size out of range [1, 100]", 500, 100},
	{"maximum ... is", "The maximum page size is 100.", 500, 100},
	{"max=", "size invalid (max=100)", 500, 100},
	{"no bound", "size 500 is too large", 500, 0},
	{"the echo is no bound", "size exceeds the maximum, got 500", 500, 0},
	{"a lower bound is no upper bound", "size must be at least 1, got 0", 0, 0},
	{"too small a size: any bound", "size must be between 1 and 100, got 0", 0, 100},
	{"a bound above the size refused", "size must be between 1 and 1000, got 500", 500, 0},
	{"the largest of several", "size must be at most 100 (at most 50 with holidays)", 500, 100},
	{"not an integer", `size must be an integer (int32), got "abc"`, 0, 0},
}

func TestUpperBound(t *testing.T) {
	t.Parallel()
	for _, tc := range upperBoundCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, upperBound(tc.text, tc.refused))
		})
	}
}

// FuzzUpperBound: whatever the text, the bound is never negative, and
// never the size refused or above it.
func FuzzUpperBound(f *testing.F) {
	for _, tc := range upperBoundCases {
		f.Add(tc.text, tc.refused)
	}
	f.Fuzz(func(t *testing.T, text string, refused int) {
		got := upperBound(text, refused)
		require.GreaterOrEqual(t, got, 0)
		if refused > 0 {
			require.Less(t, got, refused)
		}
	})
}

func TestSizeRefused(t *testing.T) {
	t.Parallel()
	object := func(code, message string, details ...listing.Problem) *listing.Error {
		return &listing.Error{Code: code, Message: message, Details: details}
	}
	sizeDetail := listing.Problem{Code: "OUT_OF_RANGE", Message: "size must be between 1 and 100, got 500", Field: "size"}
	for _, tc := range []struct {
		name   string
		err    error
		ok     bool
		max    int
		reason string
	}{
		{"a detail on size", &ListingError{Operation: catalog.GetLocations.Name, Status: 400,
			Object: object(catalog.CodeValidationError, "Invalid data provided.", sizeDetail), size: 500}, true, 100, ""},
		{"wrapped, 422", fmt.Errorf("pulling: %w", &ListingError{Operation: catalog.GetLocations.Name, Status: 422,
			Object: object(catalog.CodeValidationError, "Invalid data provided.", sizeDetail), size: 500}), true, 100, ""},
		{"the message speaks of size", &ListingError{Operation: catalog.GetLocations.Name, Status: 400,
			Object: object(catalog.CodeBadRequest, "Page size must be at most 50."), size: 500}, true, 50, ""},
		{"no bound stated", &ListingError{Operation: catalog.GetLocations.Name, Status: 400,
			Object: object(catalog.CodeBadRequest, "Invalid size."), size: 500}, true, 0, ""},
		{"a detail on page", &ListingError{Operation: catalog.GetLocations.Name, Status: 400,
			Object: object(catalog.CodeValidationError, "Invalid data provided.",
				listing.Problem{Code: "OUT_OF_RANGE", Message: "page must be at most 3 at this size", Field: "page"}), size: 500},
			false, 0, "a detail on another field speaks of that field"},
		{"another operation", &ListingError{Operation: catalog.GetLocation.Name, Status: 400,
			Object: object(catalog.CodeValidationError, "Invalid data provided.", sizeDetail)}, false, 0, ""},
		{"another status", &ListingError{Operation: catalog.GetLocations.Name, Status: 429, Code: 429, Message: "size of the window"}, false, 0, ""},
		{"another code", &ListingError{Operation: catalog.GetLocations.Name, Status: 400,
			Object: object(catalog.CodeResourceNotFound, "size", sizeDetail)}, false, 0, ""},
		{"not a ListingError", fmt.Errorf("size must be at most 100"), false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			max, ok := SizeRefused(tc.err)
			require.Equal(t, tc.ok, ok, tc.reason)
			require.Equal(t, tc.max, max)
		})
	}
}

func TestLimitRefused(t *testing.T) {
	t.Parallel()
	detail := func(kv ...string) json.RawMessage {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return b
	}
	sandboxDetail := detail("parameter", "limit", "message", "limit must be from 1 to 10000 for links, got 100000")
	for _, tc := range []struct {
		name   string
		err    error
		asked  int
		ok     bool
		max    int
		reason string
	}{
		{"the sandbox's answer", &APIError{Status: 400, Message: "limit must be from 1 to 10000 for links, got 100000",
			Details: []json.RawMessage{sandboxDetail}}, 100000, true, 10000, ""},
		{"wrapped, 422, field", fmt.Errorf("links: %w", &APIError{Status: 422, Message: "invalid request",
			Details: []json.RawMessage{detail("field", "limit", "message", "must not exceed 500")}}), 1000, true, 500, ""},
		{"the message alone", &APIError{Status: 400, Message: "The limit may be at most 2000."}, 5000, true, 2000, ""},
		{"no bound stated", &APIError{Status: 400, Message: "limit 100000 is more than links serves in one page",
			Details: []json.RawMessage{detail("parameter", "limit", "message", "limit 100000 is more than links serves in one page")}}, 100000, true, 0,
			"the echo of the limit asked is no bound"},
		{"a bound above the limit asked", &APIError{Status: 400, Details: []json.RawMessage{detail("parameter", "limit", "message", "limit must be at most 500")}},
			300, true, 0, "a bound must be below what was refused"},
		{"another parameter", &APIError{Status: 400, Message: "filter is invalid near limit",
			Details: []json.RawMessage{detail("parameter", "filter", "message", "filter is invalid near limit")}}, 100, false, 0,
			"a detail naming another parameter is about that one"},
		{"another status", &APIError{Status: 429, Message: "rate limit of this API key exceeded (at most 10 a second)"}, 100, false, 0, ""},
		{"a 403", &APIError{Status: 403, Message: "not enough units for this limit"}, 100, false, 0, ""},
		{"not an APIError", errors.New("limit must be at most 100"), 500, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			max, ok := LimitRefused(tc.err, tc.asked)
			require.Equal(t, tc.ok, ok, tc.reason)
			require.Equal(t, tc.max, max, tc.reason)
		})
	}
}
