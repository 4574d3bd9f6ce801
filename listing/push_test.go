package listing_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
)

// members returns the names of the members of a JSON object.
func members(t *testing.T, data []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &m))
	var names []string
	for _, f := range catalog.LocationFields {
		if _, ok := m[f.Name]; ok {
			names = append(names, f.Name)
		}
	}
	require.Len(t, names, len(m), "only location fields: %s", data)
	return names
}

// TestWholeLocationIsSent: a bulk item carries the id and every request
// field, empty ones too, and no response field; a single update's body
// the same without the id.
func TestWholeLocationIsSent(t *testing.T) {
	t.Parallel()
	var request []string
	for _, f := range catalog.LocationFields {
		if f.InRequest() {
			request = append(request, f.Name)
		}
	}
	sparse := listing.Location{ID: "a1", LocationName: "Blue Harbor", Status: "COMPLETE", CountryCode: "US", Errors: []listing.LocationError{{Code: "G_020"}}}
	for _, desired := range []listing.Location{valid(), sparse} {
		item := listing.UpdateItem(desired)
		require.Equal(t, request, members(t, []byte(mustMarshal(t, item))))
		require.Equal(t, request[1:], members(t, []byte(mustMarshal(t, listing.UpdateBody(desired)))))
		require.True(t, listing.Equal(desired, item))
		require.Equal(t, desired.ID, item.ID)
	}
	sent := listing.UpdateItem(valid())
	sent.BusinessHours.Monday[0].From = "01:00"
	require.Equal(t, "00:00", valid().BusinessHours.Monday[0].From)

	u, problems, err := listing.ParseUpdate([]byte(mustMarshal(t, listing.UpdateItem(sparse))))
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Equal(t, request, u.Sent, "the sandbox reads every field as sent")
}

func TestNewBulkRequest(t *testing.T) {
	t.Parallel()
	locs := func(ids ...string) []listing.Location {
		var out []listing.Location
		for _, id := range ids {
			l := valid()
			l.ID = id
			out = append(out, l)
		}
		return out
	}
	many := make([]string, catalog.MaxBulkLocations+1)
	for i := range many {
		many[i] = fmt.Sprint("id", i)
	}

	req, err := listing.NewBulkRequest(locs(many[:catalog.MaxBulkLocations]...))
	require.NoError(t, err)
	require.Len(t, req.Locations, catalog.MaxBulkLocations)
	for i, l := range req.Locations {
		require.Equal(t, many[i], l.ID)
		require.Empty(t, l.Status)
		require.Empty(t, l.CountryCode)
	}
	data := mustMarshal(t, req)
	require.NotContains(t, data, `"status"`)

	for name, ls := range map[string][]listing.Location{
		"none":        nil,
		"too many":    locs(many...),
		"an empty id": locs("a", " "),
		"an id twice": locs("a", "b", "a"),
	} {
		_, err := listing.NewBulkRequest(ls)
		require.Error(t, err, name)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		desired func(l *listing.Location)
		current func(l *listing.Location) // nil: as valid()
		unknown bool                      // no current location
		want    []want
	}{
		{name: "a valid change", desired: func(l *listing.Location) { l.Phone = "+1 209 643 8344" }},
		{name: "no status known", desired: func(l *listing.Location) {}, current: func(l *listing.Location) { l.Status = "" }},
		{name: "not COMPLETE", desired: func(l *listing.Location) {}, current: func(l *listing.Location) { l.Status = "IN_PROGRESS" },
			want: []want{{"status", "", catalog.DetailLocationHasNotCompleteStatus}}},
		{name: "unknown", desired: func(l *listing.Location) {}, unknown: true,
			want: []want{{"id", "", listing.CodeUnknownLocation}}},
		{name: "unknown and invalid", desired: func(l *listing.Location) { l.City = "" }, unknown: true,
			want: []want{{"id", "", listing.CodeUnknownLocation}, {"city", "", listing.CodeRequired}}},
		{name: "no id", desired: func(l *listing.Location) { l.ID = "" }, unknown: true,
			want: []want{{"id", "", listing.CodeRequired}}},
		{name: "invalid", desired: func(l *listing.Location) { l.Phone = "2096438343"; l.HolidayHours[1].Times = times("10:00-11:00") },
			want: []want{{"phone", "", listing.CodeInvalidPhone}, {"holidayHours.times", "1", listing.CodeTimesNotAllowed}}},
		{name: "invalid and not COMPLETE", desired: func(l *listing.Location) { l.LocationName = "" }, current: func(l *listing.Location) { l.Status = "DRAFT" },
			want: []want{{"locationName", "", listing.CodeRequired}, {"status", "", catalog.DetailLocationHasNotCompleteStatus}}},
		{name: "holidayHours without businessHours", desired: func(l *listing.Location) { l.BusinessHours = nil },
			want: []want{{"holidayHours", "", listing.CodeHolidayWithoutBusinessHours}}},
		{name: "the country is the current one", desired: func(l *listing.Location) { l.CountryCode = "US" },
			current: func(l *listing.Location) { l.CountryCode = "CH" },
			want:    []want{{"region", "", listing.CodeRegionNotAllowed}}},
		{name: "the zip against the region", desired: func(l *listing.Location) { l.Region = "CA" },
			want: []want{{"zip", "", listing.CodeZipRegionMismatch}}},
		{name: "a reopenDate passed is sent, so refused", desired: func(l *listing.Location) { l.ReopenDate = "2026-03-10" },
			current: func(l *listing.Location) { l.ReopenDate = "2026-03-10" },
			want:    []want{{"reopenDate", "", listing.CodeReopenDateNotFuture}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			desired := valid()
			tt.desired(&desired)
			var current *listing.Location
			if !tt.unknown {
				c := valid()
				if tt.current != nil {
					tt.current(&c)
				}
				current = &c
			}
			problems := listing.Check(desired, current, now)
			require.Equal(t, tt.want, got(problems), "%v", problems)
			check(t, problems)
		})
	}
}

func TestCheckPanicsOnAnotherLocation(t *testing.T) {
	t.Parallel()
	other := valid()
	other.ID = "other"
	require.Panics(t, func() { listing.Check(valid(), &other, now) })
}
