package listing_test

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(l *listing.Location)
		want   []listing.Change // nil: equal
	}{
		{"the same location", func(l *listing.Location) {}, nil},
		{"the id is not compared", func(l *listing.Location) { l.ID = "other" }, nil},
		{"response fields are not compared", func(l *listing.Location) {
			l.Status, l.CountryCode = "IN_PROGRESS", "CH"
			l.Errors = []listing.LocationError{{Code: "G_020", Message: "x"}}
		}, nil},

		// Strings, exactly.
		{"locationName", func(l *listing.Location) { l.LocationName = "Blue Harbor" }, []listing.Change{{"locationName", "Blue Harbor Bakery", "Blue Harbor"}}},
		{"city", func(l *listing.Location) { l.City = "Columbus" }, []listing.Change{{"city", "Ashville", "Columbus"}}},
		{"address", func(l *listing.Location) { l.Address = "1 Main St" }, []listing.Change{{"address", "82 Cromley St", "1 Main St"}}},
		{"additionalAddressInfo cleared", func(l *listing.Location) { l.AdditionalAddressInfo = "" }, []listing.Change{{"additionalAddressInfo", "3 floor", ""}}},
		{"zip", func(l *listing.Location) { l.Zip = "43104" }, []listing.Change{{"zip", "43103", "43104"}}},
		{"phone", func(l *listing.Location) { l.Phone = "+1 209 643 8343" }, []listing.Change{{"phone", "+12096438343", "+1 209 643 8343"}}},
		{"region, a code for a name", func(l *listing.Location) { l.Region = "Ohio" }, []listing.Change{{"region", "OH", "Ohio"}}},
		{"websiteUrl, in another case", func(l *listing.Location) { l.WebsiteURL = "https://www.BlueHarbor.example/ashville" }, []listing.Change{{"websiteUrl", "https://www.blueharbor.example/ashville", "https://www.BlueHarbor.example/ashville"}}},
		{"reopenDate cleared", func(l *listing.Location) { l.ReopenDate = "" }, []listing.Change{{"reopenDate", "2026-04-01", ""}}},
		{"a trailing space is a change", func(l *listing.Location) { l.City = "Ashville " }, []listing.Change{{"city", "Ashville", "Ashville "}}},
		{"several fields, in the catalog's order", func(l *listing.Location) { l.ReopenDate, l.LocationName = "2026-05-01", "B" }, []listing.Change{
			{"locationName", "Blue Harbor Bakery", "B"}, {"reopenDate", "2026-04-01", "2026-05-01"},
		}},

		// businessHours, by meaning.
		{"the ranges of a day in another order", func(l *listing.Location) { hours(l, "tuesday", "15:00-01:00", "13:00-14:00") }, nil},
		{"a day left out or with no ranges", func(l *listing.Location) { l.BusinessHours.Sunday = []listing.TimeRange{} }, nil},
		{"a day's range changed", func(l *listing.Location) { hours(l, "thursday", "09:00-18:00") }, []listing.Change{{"businessHours",
			`{"monday":[{"from":"00:00","to":"00:00"}],"tuesday":[{"from":"13:00","to":"14:00"},{"from":"15:00","to":"01:00"}],"wednesday":[{"from":"06:00","to":"00:00"}],"thursday":[{"from":"09:00","to":"17:00"}],"friday":[{"from":"09:00","to":"17:00"},{"from":"19:00","to":"19:30"}],"saturday":[{"from":"09:00","to":"16:00"},{"from":"17:00","to":"18:00"}]}`,
			`{"monday":[{"from":"00:00","to":"00:00"}],"tuesday":[{"from":"13:00","to":"14:00"},{"from":"15:00","to":"01:00"}],"wednesday":[{"from":"06:00","to":"00:00"}],"thursday":[{"from":"09:00","to":"18:00"}],"friday":[{"from":"09:00","to":"17:00"},{"from":"19:00","to":"19:30"}],"saturday":[{"from":"09:00","to":"16:00"},{"from":"17:00","to":"18:00"}]}`,
		}}},
		{"a day closed", func(l *listing.Location) { l.BusinessHours.Thursday = nil }, []listing.Change{{Field: "businessHours"}}},
		{"a day opened", func(l *listing.Location) { hours(l, "sunday", "10:00-14:00") }, []listing.Change{{Field: "businessHours"}}},
		{"two ranges are not one", func(l *listing.Location) { hours(l, "thursday", "09:00-12:00", "12:00-17:00") }, []listing.Change{{Field: "businessHours"}}},
		{"a range twice is not once", func(l *listing.Location) { hours(l, "thursday", "09:00-17:00", "09:00-17:00") }, []listing.Change{{Field: "businessHours"}}},
		{"the same ranges on another day", func(l *listing.Location) { hours(l, "thursday"); hours(l, "sunday", "09:00-17:00") }, []listing.Change{{Field: "businessHours"}}},

		// holidayHours, as a set.
		{"holiday entries in another order", func(l *listing.Location) { slices.Reverse(l.HolidayHours) }, nil},
		{"a holiday's times in another order", func(l *listing.Location) { slices.Reverse(l.HolidayHours[0].Times) }, nil},
		{"a CLOSED entry's times empty", func(l *listing.Location) { l.HolidayHours[1].Times = []listing.TimeRange{} }, nil},
		{"a holiday's day", func(l *listing.Location) { l.HolidayHours[1].Day = "2026-12-26" }, []listing.Change{{"holidayHours",
			`[{"type":"RANGE","day":"2026-11-26","times":[{"from":"10:00","to":"12:00"},{"from":"13:00","to":"15:00"}]},{"type":"CLOSED","day":"2026-12-25"}]`,
			`[{"type":"RANGE","day":"2026-11-26","times":[{"from":"10:00","to":"12:00"},{"from":"13:00","to":"15:00"}]},{"type":"CLOSED","day":"2026-12-26"}]`,
		}}},
		{"a holiday's type", func(l *listing.Location) { l.HolidayHours[0].Type, l.HolidayHours[0].Times = "CLOSED", nil }, []listing.Change{{Field: "holidayHours"}}},
		{"a holiday's times", func(l *listing.Location) { l.HolidayHours[0].Times = times("10:00-12:00") }, []listing.Change{{Field: "holidayHours"}}},
		{"a holiday more", func(l *listing.Location) {
			l.HolidayHours = append(l.HolidayHours, listing.HolidayHours{Type: "CLOSED", Day: "2027-01-01"})
		}, []listing.Change{{Field: "holidayHours"}}},
		{"an entry twice is not once", func(l *listing.Location) {
			l.HolidayHours = append(l.HolidayHours, l.HolidayHours[1])
		}, []listing.Change{{Field: "holidayHours"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			current, desired := valid(), valid()
			tt.change(&desired)
			changes := listing.Diff(current, desired)
			require.Equal(t, tt.want == nil, listing.Equal(current, desired))
			require.Len(t, changes, len(tt.want), "%+v", changes)
			for i, c := range changes {
				w := tt.want[i]
				require.Equal(t, w.Field, c.Field)
				require.NotEqual(t, c.From, c.To)
				if w.From != "" || w.To != "" {
					require.Equal(t, w, c)
				}
			}
			require.Len(t, listing.Diff(desired, current), len(tt.want), "Diff is symmetric")
		})
	}
}

// TestDiffEmptyHours pins the readings of no hours: businessHours null and
// {} differ (Validate tells them apart), holidayHours null and [] do not.
func TestDiffEmptyHours(t *testing.T) {
	t.Parallel()
	none := listing.Location{LocationName: "a"}
	closed := none
	closed.BusinessHours = &listing.BusinessHours{}
	require.Equal(t, []listing.Change{{"businessHours", "null", "{}"}}, listing.Diff(none, closed))
	closedAgain := none
	closedAgain.BusinessHours = &listing.BusinessHours{Monday: []listing.TimeRange{}}
	require.True(t, listing.Equal(closed, closedAgain))

	noHolidays := none
	noHolidays.HolidayHours = []listing.HolidayHours{}
	require.True(t, listing.Equal(none, noHolidays))
	some := none
	some.HolidayHours = []listing.HolidayHours{{Type: "CLOSED", Day: "2026-12-25"}}
	require.Equal(t, []listing.Change{{"holidayHours", "[]", `[{"type":"CLOSED","day":"2026-12-25"}]`}}, listing.Diff(noHolidays, some))
}

// TestDiffEveryRequestField checks that a change of each request field
// but the id is seen, and of no other field.
func TestDiffEveryRequestField(t *testing.T) {
	t.Parallel()
	var compared []string
	for _, f := range catalog.LocationFields {
		if f.InRequest() && f.Use != catalog.UseID {
			compared = append(compared, f.Name)
		}
	}
	other := listing.Location{
		ID: "x", LocationName: "x", City: "x", Address: "x", AdditionalAddressInfo: "x", Zip: "x", Phone: "x",
		Region: "x", WebsiteURL: "x", BusinessHours: &listing.BusinessHours{}, HolidayHours: []listing.HolidayHours{{Day: "x"}},
		ReopenDate: "x", Status: "x", CountryCode: "x", Errors: []listing.LocationError{{Code: "x"}},
	}
	var fields []string
	for _, c := range listing.Diff(valid(), other) {
		fields = append(fields, c.Field)
	}
	require.Equal(t, compared, fields)
}

// TestWhatIsSentComesBackEqual: the body the push sends, stored as sent
// and answered, equals the desired location.
func TestWhatIsSentComesBackEqual(t *testing.T) {
	t.Parallel()
	for _, tt := range validateCases {
		desired := valid()
		tt.change(&desired)
		data, err := json.Marshal(listing.BulkRequest{Locations: []listing.Location{listing.UpdateItem(desired)}})
		require.NoError(t, err)
		var back listing.BulkRequest
		require.NoError(t, json.Unmarshal(data, &back))
		require.True(t, listing.Equal(desired, back.Locations[0]), "%s: %v", tt.name, listing.Diff(desired, back.Locations[0]))
	}
}

// shuffled returns a copy of l with the ranges of each weekday, the
// holiday entries and each entry's times in another order.
func shuffled(l listing.Location, r *rand.Rand) listing.Location {
	c := l.Clone()
	if c.BusinessHours != nil {
		for _, day := range catalog.Weekdays {
			rs := c.BusinessHours.Day(day)
			r.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		}
	}
	r.Shuffle(len(c.HolidayHours), func(i, j int) { c.HolidayHours[i], c.HolidayHours[j] = c.HolidayHours[j], c.HolidayHours[i] })
	for _, h := range c.HolidayHours {
		r.Shuffle(len(h.Times), func(i, j int) { h.Times[i], h.Times[j] = h.Times[j], h.Times[i] })
	}
	return c
}

// FuzzDiff compares any two locations: a location equals itself, itself
// reordered and itself sent and answered; Diff is symmetric; each change
// renders two different values of a request field.
func FuzzDiff(f *testing.F) {
	for _, tt := range validateCases {
		loc := valid()
		tt.change(&loc)
		data, err := json.Marshal(loc)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, []byte(mustMarshalF(f, valid())), uint64(1))
	}
	f.Add([]byte(`{"businessHours":{}}`), []byte(`{"businessHours":null,"holidayHours":[]}`), uint64(2))
	f.Add([]byte(`{"holidayHours":[{"day":"x"},{"day":"x","times":[]}]}`), []byte(`{"holidayHours":[{"day":"x","times":null},{"day":"x"}]}`), uint64(3))
	f.Fuzz(func(t *testing.T, da, db []byte, seed uint64) {
		var a, b listing.Location
		if json.Unmarshal(da, &a) != nil || json.Unmarshal(db, &b) != nil {
			return
		}
		r := rand.New(rand.NewPCG(seed, seed))
		require.Empty(t, listing.Diff(a, a))
		require.Empty(t, listing.Diff(a, shuffled(a, r)), "reordered")
		var back listing.Location
		require.NoError(t, json.Unmarshal([]byte(mustMarshal(t, listing.UpdateItem(a))), &back))
		require.Empty(t, listing.Diff(a, back), "sent and answered")

		ab, ba := listing.Diff(a, b), listing.Diff(b, a)
		require.Len(t, ba, len(ab))
		for i, c := range ab {
			require.Equal(t, listing.Change{Field: c.Field, From: c.To, To: c.From}, ba[i])
			require.NotEqual(t, c.From, c.To, "%s", c.Field)
			f, ok := catalog.LocationFieldByName(c.Field)
			require.True(t, ok && f.InRequest() && f.Use != catalog.UseID, c.Field)
		}
		require.Equal(t, len(ab) == 0, listing.Equal(shuffled(a, r), shuffled(b, r)))
	})
}

func mustMarshalF(f *testing.F, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		f.Fatal(err)
	}
	return string(data)
}
