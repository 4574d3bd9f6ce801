package locations_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/sandbox/locations"
)

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}

// details is an error's details without their messages.
func details(e *listing.Error) [][3]string {
	var out [][3]string
	for _, d := range e.Details {
		out = append(out, [3]string{d.Field, d.Index, d.Code})
	}
	return out
}

func TestPage(t *testing.T) {
	t.Parallel()
	s := locations.New(1)
	const account = "agency-n45"
	var ids []string
	for page := 1; page <= 4; page++ {
		p, e := s.Page(account, page, 20, now)
		require.Nil(t, e)
		require.Equal(t, listing.Page{Page: page, TotalElements: 45, TotalPages: 3, Content: p.Content}, p)
		require.NotNil(t, p.Content, "an empty page is [], not null")
		require.Len(t, p.Content, []int{20, 20, 5, 0}[page-1], "page %d", page)
		for _, loc := range p.Content {
			require.Empty(t, loc.Status, "a page carries no status (spec 4.5)")
			one, e := s.Get(account, loc.ID, now)
			require.Nil(t, e)
			require.NotEmpty(t, one.Status, "a single location does")
			one.Status = ""
			require.Empty(t, cmp.Diff(one, loc))
			ids = append(ids, loc.ID)
		}
	}
	for i, id := range ids {
		require.Equal(t, s.ID(account, i), id, "pages list the locations in the order of their index")
	}

	p, e := s.Page(account, 1, locations.MaxPageSize, now)
	require.Nil(t, e)
	require.Len(t, p.Content, 45)
	require.Equal(t, 1, p.TotalPages)

	p, e = s.Page("n0", 1, 20, now)
	require.Nil(t, e)
	require.Equal(t, listing.Page{Page: 1, Content: []listing.Location{}}, p)

	for _, tt := range []struct {
		page, size int
		field      string
	}{{0, 20, "page"}, {-1, 20, "page"}, {1, 0, "size"}, {1, locations.MaxPageSize + 1, "size"}} {
		_, e := s.Page(account, tt.page, tt.size, now)
		require.NotNil(t, e, "page %d size %d", tt.page, tt.size)
		require.Equal(t, catalog.CodeValidationError, e.Code)
		require.Equal(t, [][3]string{{tt.field, "", locations.DetailParameterOutRange}}, details(e))
		require.Equal(t, http.StatusBadRequest, locations.Status(e))
	}
}

func TestGetNotFound(t *testing.T) {
	t.Parallel()
	_, e := locations.New(1).Get("sandbox", "nope", now)
	require.NotNil(t, e)
	require.Equal(t, catalog.CodeResourceNotFound, e.Code)
	require.Equal(t, [][3]string{{"", "", catalog.DetailLocationNotFound}}, details(e))
	require.Equal(t, http.StatusNotFound, locations.Status(e))
}

// complete returns the index of a COMPLETE location of the account, from
// first on.
func complete(t *testing.T, s *locations.Store, account string, first int) int {
	t.Helper()
	for i := first; i < s.Count(account); i++ {
		loc, _ := s.Get(account, s.ID(account, i), now)
		if loc.Status == catalog.StatusComplete {
			return i
		}
	}
	t.Fatalf("%s has no COMPLETE location from %d", account, first)
	return 0
}

func TestUpdateOne(t *testing.T) {
	t.Parallel()
	s := locations.New(1)
	const account = "agency-n60"
	id := s.ID(account, complete(t, s, account, 2))
	before, _ := s.Get(account, id, now)

	// A whole location, as the push sends it.
	want := before.Clone()
	want.LocationName = "Blue Harbor Bakery (new)"
	want.Phone = "+1 541-754-3010"
	want.BusinessHours = &listing.BusinessHours{Sunday: []listing.TimeRange{{From: "18:00", To: "02:00"}}}
	want.HolidayHours = nil
	body := want.Clone()
	body.ID, body.Status, body.CountryCode, body.Errors = "", "", "", nil
	got, e := s.UpdateOne(account, id, marshal(t, body), now)
	require.Nil(t, e)
	require.Empty(t, cmp.Diff(want, got), "the answer is the updated location, with its status")

	again, _ := s.Get(account, id, now)
	require.Empty(t, cmp.Diff(want, again), "a later read sees the update")
	p, _ := s.Page(account, 1, 60, now)
	for _, loc := range p.Content {
		if loc.ID == id {
			require.Equal(t, want.LocationName, loc.LocationName, "and so does a page")
		}
	}

	// Some fields: the others keep their values; the response fields in a
	// body are ignored.
	got, e = s.UpdateOne(account, id, []byte(`{"locationName": "Renamed", "city": "`+want.City+`", "address": "`+want.Address+`", "phone": "`+want.Phone+`", "status": "NOT_SYNCED", "id": 7}`), now)
	require.Nil(t, e)
	w := want.Clone()
	w.LocationName = "Renamed"
	require.Empty(t, cmp.Diff(w, got))

	// On another day the content stays; the errors are the day's.
	later := now.AddDate(0, 0, 45)
	onLater, _ := s.Get(account, id, later)
	invented, _ := locations.New(1).Get(account, id, later)
	require.Equal(t, invented.Errors, onLater.Errors)
	onLater.Errors = w.Errors
	require.Empty(t, cmp.Diff(w, onLater))

	// Another Store of the same world: untouched.
	other, _ := locations.New(1).Get(account, id, now)
	require.Empty(t, cmp.Diff(before, other))
}

func TestUpdateOneRefused(t *testing.T) {
	t.Parallel()
	s := locations.New(1)
	const account = "agency-n60"
	id := s.ID(account, complete(t, s, account, 2))
	before, _ := s.Get(account, id, now)
	whole := func(change func(l *listing.Location)) []byte {
		l := before.Clone()
		l.ID, l.Status, l.CountryCode, l.Errors = "", "", "", nil
		change(&l)
		return marshal(t, l)
	}
	tests := []struct {
		name    string
		id      string
		body    []byte
		code    string
		details [][3]string
		status  int
	}{
		{"unknown id", "nope", whole(func(*listing.Location) {}), catalog.CodeResourceNotFound,
			[][3]string{{"", "", catalog.DetailLocationNotFound}}, 404},
		{"not COMPLETE", s.ID(account, 1), whole(func(*listing.Location) {}), catalog.CodeBadRequest,
			[][3]string{{"", "", catalog.DetailLocationHasNotCompleteStatus}}, 400},
		{"not an object", id, []byte(`[1]`), catalog.CodeBadRequest,
			[][3]string{{"", "", locations.DetailInvalidBody}}, 400},
		{"a CLOSED holiday with times", id, whole(func(l *listing.Location) {
			l.BusinessHours = &listing.BusinessHours{}
			l.HolidayHours = []listing.HolidayHours{{Type: "CLOSED", Day: "2026-12-25", Times: []listing.TimeRange{{From: "10:00", To: "12:00"}}}}
		}), catalog.CodeValidationError, [][3]string{{"holidayHours.times", "0", catalog.DetailTimesNotAllowed}}, 400},
		{"several problems", id, whole(func(l *listing.Location) { l.Phone, l.LocationName = "555", strings.Repeat("x", 126) }),
			catalog.CodeValidationError, [][3]string{{"locationName", "", listing.CodeTooLong}, {"phone", "", listing.CodeInvalidPhone}}, 400},
		{"required fields left out", id, []byte(`{"zip": "` + before.Zip + `"}`), catalog.CodeValidationError,
			[][3]string{{"locationName", "", "REQUIRED"}, {"city", "", "REQUIRED"}, {"address", "", "REQUIRED"}, {"phone", "", "REQUIRED"}}, 400},
		{"a wrong type", id, []byte(`{"locationName": 1, "city": "a", "address": "b", "phone": "+12096438343"}`), catalog.CodeValidationError,
			[][3]string{{"locationName", "", listing.CodeInvalidType}, {"locationName", "", "REQUIRED"}}, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, e := s.UpdateOne(account, tt.id, tt.body, now)
			require.NotNil(t, e)
			require.Equal(t, tt.code, e.Code)
			require.Equal(t, tt.details, details(e), "%v", e)
			require.Equal(t, tt.status, locations.Status(e))
			for _, d := range e.Details {
				require.NotEmpty(t, d.Message)
			}
			after, _ := s.Get(account, id, now)
			require.Empty(t, cmp.Diff(before, after), "nothing is stored")
		})
	}
}

// bulkItem is a bulk item: a location's content with its id.
func bulkItem(t *testing.T, s *locations.Store, account, id string, change func(l *listing.Location)) json.RawMessage {
	t.Helper()
	l, e := s.Get(account, id, now)
	if e != nil { // an unknown id: any valid content
		l, _ = s.Get(account, s.ID(account, 0), now)
	}
	l.ID, l.Status, l.CountryCode, l.Errors = id, "", "", nil
	if change != nil {
		change(&l)
	}
	return marshal(t, l)
}

func bulk(t *testing.T, items ...json.RawMessage) []byte {
	t.Helper()
	return marshal(t, map[string][]json.RawMessage{"locations": items})
}

func TestUpdateMany(t *testing.T) {
	t.Parallel()
	s := locations.New(1)
	const account = "agency-n60"
	ok1 := s.ID(account, complete(t, s, account, 2))
	ok2 := s.ID(account, complete(t, s, account, complete(t, s, account, 2)+1))
	bad := s.ID(account, complete(t, s, account, complete(t, s, account, complete(t, s, account, 2)+1)+1))
	inProgress := s.ID(account, 1)
	snapshot := func() []listing.Location {
		p, _ := s.Page(account, 1, 60, now)
		return p.Content
	}
	before := snapshot()

	rename := func(name string) func(l *listing.Location) {
		return func(l *listing.Location) { l.LocationName = name }
	}
	body := bulk(t,
		bulkItem(t, s, account, ok1, rename("First")),
		bulkItem(t, s, account, "00000000000000000000000000000000", nil),
		bulkItem(t, s, account, inProgress, rename("Never")),
		bulkItem(t, s, account, bad, func(l *listing.Location) {
			l.BusinessHours = &listing.BusinessHours{}
			l.HolidayHours = []listing.HolidayHours{{Type: "RANGE", Day: "2026-12-24", Times: []listing.TimeRange{
				{From: "08:00", To: "09:00"}, {From: "10:00", To: "11:00"}, {From: "12:00", To: "13:00"}, {From: "14:00", To: "15:00"},
			}}}
		}),
		json.RawMessage(`{"locationName": "No id", "city": "a", "address": "b", "phone": "+12096438343"}`),
		json.RawMessage(`"not an object"`),
		json.RawMessage(`{"id": 7, "locationName": "a", "city": "a", "address": "b", "phone": "+12096438343"}`),
		bulkItem(t, s, account, ok2, rename("Second")),
	)
	results, e := s.UpdateMany(account, body, now)
	require.Nil(t, e)
	type outcome struct {
		id, state, code string
		details         [][3]string
	}
	var got []outcome
	for _, r := range results {
		o := outcome{id: r.LocationID, state: r.State}
		if r.Error != nil {
			o.code, o.details = r.Error.Code, details(r.Error)
		}
		got = append(got, o)
	}
	require.Equal(t, []outcome{
		{ok1, catalog.StateUpdated, "", nil},
		{"00000000000000000000000000000000", catalog.StateFailed, catalog.CodeResourceNotFound, [][3]string{{"", "", catalog.DetailLocationNotFound}}},
		{inProgress, catalog.StateFailed, catalog.CodeBadRequest, [][3]string{{"", "", catalog.DetailLocationHasNotCompleteStatus}}},
		{bad, catalog.StateFailed, catalog.CodeValidationError, [][3]string{{"holidayHours.times", "0", catalog.DetailTimesTooManyRanges}}},
		{"", catalog.StateFailed, catalog.CodeValidationError, [][3]string{{"id", "", "REQUIRED"}}},
		{"", catalog.StateFailed, catalog.CodeValidationError, [][3]string{{"locations", "5", listing.CodeInvalidType}}},
		{"", catalog.StateFailed, catalog.CodeValidationError, [][3]string{{"id", "", listing.CodeInvalidType}}},
		{ok2, catalog.StateUpdated, "", nil},
	}, got)
	require.JSONEq(t, `{"locationId":"`+ok1+`","state":"UPDATED"}`, string(marshal(t, results[0])))

	after := snapshot()
	for i, loc := range after {
		switch loc.ID {
		case ok1:
			require.Equal(t, "First", loc.LocationName)
		case ok2:
			require.Equal(t, "Second", loc.LocationName)
		default:
			require.Empty(t, cmp.Diff(before[i], loc), "location %s", loc.ID)
		}
	}
}

func TestUpdateManyRefused(t *testing.T) {
	t.Parallel()
	s := locations.New(1)
	const account = "agency-n60"
	id := s.ID(account, complete(t, s, account, 2))
	other := s.ID(account, complete(t, s, account, complete(t, s, account, 2)+1))
	item := bulkItem(t, s, account, id, func(l *listing.Location) { l.LocationName = "Changed" })
	many := func(n int) []json.RawMessage {
		var items []json.RawMessage
		for i := range n {
			items = append(items, bulkItem(t, s, account, fmt.Sprintf("%032x", i), nil)) // unique ids, none known
		}
		return items
	}
	tests := []struct {
		name    string
		body    []byte
		details [][3]string
	}{
		{"the same id twice", bulk(t, item, bulkItem(t, s, account, other, nil), item),
			[][3]string{{"", "", catalog.DetailLocationsAreNotUnique}}},
		{"two ids repeated", bulk(t, item, bulkItem(t, s, account, other, nil), item, bulkItem(t, s, account, other, nil), item),
			[][3]string{{"", "", catalog.DetailLocationsAreNotUnique}, {"", "", catalog.DetailLocationsAreNotUnique}}},
		{"51 locations", bulk(t, many(51)...), [][3]string{{"locations", "", locations.DetailTooManyLocations}}},
		{"no location", bulk(t), [][3]string{{"locations", "", listing.CodeRequired}}},
		{"no locations member", []byte(`{"location": []}`), [][3]string{{"locations", "", listing.CodeRequired}}},
		{"locations not an array", []byte(`{"locations": {}}`), [][3]string{{"", "", locations.DetailInvalidBody}}},
		{"not JSON", []byte(`{"locations": [`), [][3]string{{"", "", locations.DetailInvalidBody}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			results, e := s.UpdateMany(account, tt.body, now)
			require.Nil(t, results)
			require.NotNil(t, e)
			require.Equal(t, catalog.CodeBadRequest, e.Code)
			require.Equal(t, tt.details, details(e), "%v", e)
			loc, _ := s.Get(account, id, now)
			require.NotEqual(t, "Changed", loc.LocationName, "nothing is updated")
		})
	}
	_, e := s.UpdateMany(account, bulk(t, item, item), now)
	require.Contains(t, e.Details[0].Message, id)

	// Exactly 50 unique ids pass the request's checks.
	results, e := s.UpdateMany(account, bulk(t, many(50)...), now)
	require.Nil(t, e)
	require.Len(t, results, 50)
}

// TestConcurrent updates and reads one account from many goroutines: the
// race detector watches, and every location ends with its last update.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	s := locations.New(1)
	const account = "agency-n200"
	var targets []int
	for i := 2; len(targets) < 16; i++ {
		if loc, _ := s.Get(account, s.ID(account, i), now); loc.Status == catalog.StatusComplete {
			targets = append(targets, i)
		}
	}
	var wg sync.WaitGroup
	for w, i := range targets {
		id := s.ID(account, i)
		wg.Go(func() {
			for round := range 20 {
				name := fmt.Sprintf("worker %d round %d", w, round)
				if round%2 == 0 {
					item := bulkItem(t, s, account, id, func(l *listing.Location) { l.LocationName = name })
					results, e := s.UpdateMany(account, bulk(t, item), now)
					if e != nil || results[0].State != catalog.StateUpdated {
						t.Errorf("bulk %s: %v %v", name, e, results)
					}
				} else if _, e := s.UpdateOne(account, id, bulkItem(t, s, account, id, func(l *listing.Location) { l.LocationName = name }), now); e != nil {
					t.Errorf("update %s: %v", name, e)
				}
			}
		})
		wg.Go(func() {
			for page := 1; page <= 4; page++ {
				if _, e := s.Page(account, page, 50, now); e != nil {
					t.Errorf("page: %v", e)
				}
			}
		})
	}
	wg.Wait()
	for w, i := range targets {
		loc, _ := s.Get(account, s.ID(account, i), now)
		require.Equal(t, fmt.Sprintf("worker %d round 19", w), loc.LocationName)
	}
}
