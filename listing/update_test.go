package listing_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/listing"
)

func TestParseUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		sent     []string
		problems []want
		check    func(t *testing.T, u listing.Update)
	}{
		{
			name: "a whole location",
			body: mustMarshal(t, valid()),
			sent: []string{"id", "locationName", "city", "address", "additionalAddressInfo", "zip", "phone", "region", "websiteUrl", "businessHours", "holidayHours", "reopenDate"},
			check: func(t *testing.T, u listing.Update) {
				w := valid()
				w.Status, w.CountryCode = "", "" // response only: ignored
				require.Empty(t, cmp.Diff(w, u.Location))
			},
		},
		{
			name: "some fields",
			body: `{"locationName": "Blue Harbor", "phone": "+1 541-754-3010"}`,
			sent: []string{"locationName", "phone"},
		},
		{
			name: "null and empty are sent",
			body: `{"businessHours": null, "websiteUrl": "", "holidayHours": null, "zip": null}`,
			sent: []string{"zip", "websiteUrl", "businessHours", "holidayHours"},
		},
		{
			name: "response fields and unknown members are ignored",
			body: `{"status": "COMPLETE", "countryCode": "US", "errors": [], "LocationName": "x", "extra": 1}`,
			check: func(t *testing.T, u listing.Update) {
				require.Equal(t, listing.Location{}, u.Location)
			},
		},
		{
			name:     "a number for a string",
			body:     `{"phone": 12096438343, "city": "Ashville"}`,
			sent:     []string{"city", "phone"},
			problems: []want{{"phone", "", "INVALID_TYPE"}},
			check: func(t *testing.T, u listing.Update) {
				require.Empty(t, u.Location.Phone)
				require.Equal(t, "Ashville", u.Location.City)
			},
		},
		{
			name:     "a nested type",
			body:     `{"businessHours": {"monday": [{"from": 9, "to": "17:00"}]}}`,
			sent:     []string{"businessHours"},
			problems: []want{{"businessHours.monday.from", "", "INVALID_TYPE"}},
			check: func(t *testing.T, u listing.Update) {
				require.Nil(t, u.Location.BusinessHours, "a field that fails to decode is left empty")
			},
		},
		// A key that is not a weekday as the spec spells it was dropped
		// ("mon": the location closed all week) or folded ("Monday").
		{
			name:     "an unknown weekday",
			body:     `{"businessHours": {"mon": [{"from": "09:00", "to": "17:00"}]}}`,
			sent:     []string{"businessHours"},
			problems: []want{{"businessHours.mon", "", listing.CodeUnknownField}},
			check: func(t *testing.T, u listing.Update) {
				require.Nil(t, u.Location.BusinessHours)
			},
		},
		{
			name:     "a weekday in capitals",
			body:     `{"businessHours": {"monday": [], "Tuesday": [{"from": "09:00", "to": "17:00"}]}}`,
			sent:     []string{"businessHours"},
			problems: []want{{"businessHours.Tuesday", "", listing.CodeUnknownField}},
		},
		{
			name:     "an array for an object",
			body:     `{"businessHours": [], "holidayHours": {}}`,
			sent:     []string{"businessHours", "holidayHours"},
			problems: []want{{"businessHours", "", "INVALID_TYPE"}, {"holidayHours", "", "INVALID_TYPE"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u, problems, err := listing.ParseUpdate([]byte(tt.body))
			require.NoError(t, err)
			require.Equal(t, tt.sent, u.Sent)
			require.Equal(t, tt.problems, got(problems), "%v", problems)
			for _, p := range problems {
				require.NotEmpty(t, p.Message)
			}
			if tt.check != nil {
				tt.check(t, u)
			}
		})
	}
}

func TestParseUpdateNotObject(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `null`, `[]`, `"x"`, `{"a":`, `{} {}`} {
		_, _, err := listing.ParseUpdate([]byte(body))
		require.ErrorIs(t, err, listing.ErrNotObject, "%q", body)
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	stored := valid()
	u, problems, err := listing.ParseUpdate([]byte(`{"locationName": "Blue Harbor", "websiteUrl": "", "businessHours": null, "status": "X"}`))
	require.NoError(t, err)
	require.Empty(t, problems)
	out := u.Apply(stored)

	w := valid()
	w.LocationName, w.WebsiteURL, w.BusinessHours = "Blue Harbor", "", nil
	require.Empty(t, cmp.Diff(w, out), "left-out fields are kept, sent ones replaced, the id and response fields kept")
	require.Empty(t, cmp.Diff(valid(), stored), "the stored location is not modified")

	u, _, err = listing.ParseUpdate([]byte(mustMarshal(t, valid())))
	require.NoError(t, err)
	out = u.Apply(listing.Location{ID: "other", Status: "IN_PROGRESS"})
	out.BusinessHours.Monday[0].From = "01:00"
	require.Equal(t, "00:00", u.Location.BusinessHours.Monday[0].From, "the result shares nothing with the update")
	require.Equal(t, "other", out.ID, "the id is the stored one")
	require.Equal(t, "IN_PROGRESS", out.Status)
}

func TestUpdateValidate(t *testing.T) {
	t.Parallel()
	whole := func(change func(l *listing.Location)) string {
		l := valid()
		change(&l)
		data, err := json.Marshal(l)
		require.NoError(t, err)
		return string(data)
	}
	tests := []struct {
		name   string
		stored func(l *listing.Location)
		body   string
		want   []want
	}{
		{"a whole valid location", nil, whole(func(*listing.Location) {}), nil},
		{"required fields must be sent", nil, `{"city": "Ashville"}`, []want{
			{"locationName", "", "REQUIRED"}, {"address", "", "REQUIRED"}, {"phone", "", "REQUIRED"},
		}},
		{"a required field sent empty", nil, whole(func(l *listing.Location) { l.City = "" }), []want{{"city", "", "REQUIRED"}}},
		{"holidayHours without businessHours in the update", nil,
			`{"locationName": "a", "city": "b", "address": "c", "phone": "+12096438343", "holidayHours": [{"type": "CLOSED", "day": "2026-12-31"}]}`,
			[]want{{"holidayHours", "", "HOLIDAY_HOURS_WITHOUT_BUSINESS_HOURS"}}},
		{"holidayHours with businessHours cleared", nil, whole(func(l *listing.Location) { l.BusinessHours = nil }),
			[]want{{"holidayHours", "", "HOLIDAY_HOURS_WITHOUT_BUSINESS_HOURS"}}},
		{"the cross-check uses the kept region", nil,
			`{"locationName": "a", "city": "b", "address": "c", "phone": "+12096438343", "zip": "90210"}`,
			[]want{{"zip", "", "ZIP_REGION_MISMATCH"}}},
		{"the country is the stored one", func(l *listing.Location) { l.CountryCode, l.Region, l.Zip = "CH", "", "8001" },
			`{"locationName": "a", "city": "b", "address": "c", "phone": "+41 44 668 18 00", "region": "Zürich"}`,
			[]want{{"region", "", "REGION_NOT_ALLOWED"}}},
		{"a kept value that is now invalid is not the update's", func(l *listing.Location) { l.ReopenDate = "2020-01-01" },
			`{"locationName": "a", "city": "b", "address": "c", "phone": "+12096438343"}`, nil},
		{"the same value sent is", func(l *listing.Location) { l.ReopenDate = "2020-01-01" },
			`{"locationName": "a", "city": "b", "address": "c", "phone": "+12096438343", "reopenDate": "2020-01-01"}`,
			[]want{{"reopenDate", "", "REOPEN_DATE_NOT_IN_FUTURE"}}},
		{"a new region against the kept zip", nil,
			`{"locationName": "a", "city": "b", "address": "c", "phone": "+12096438343", "region": "CA"}`,
			[]want{{"zip", "", "ZIP_REGION_MISMATCH"}}},
		{"a kept mismatch is not the update's", func(l *listing.Location) { l.Zip = "90210" },
			`{"locationName": "a", "city": "b", "address": "c", "phone": "+12096438343"}`, nil},
		{"kept holidayHours and businessHours cleared", nil,
			`{"locationName": "a", "city": "b", "address": "c", "phone": "+12096438343", "businessHours": null}`,
			[]want{{"holidayHours", "", "HOLIDAY_HOURS_WITHOUT_BUSINESS_HOURS"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stored := valid()
			if tt.stored != nil {
				tt.stored(&stored)
			}
			u, problems, err := listing.ParseUpdate([]byte(tt.body))
			require.NoError(t, err)
			require.Empty(t, problems)
			require.Equal(t, tt.want, got(u.Validate(stored, now)))
		})
	}
}
