package listing_test

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/listing"
)

// The hashes are those the loader stored before ContentHash moved here
// (load.ContentHash): they must never change, or every location would
// start a new version on its next pull.
func TestContentHashIsStable(t *testing.T) {
	t.Parallel()
	full := listing.Location{ID: "L1", LocationName: "Bäckerei <Zürich> & Co", City: "Zürich", Address: "Bahnhofstrasse 1",
		Phone: "+41 44 000 00 00", CountryCode: "CH", Status: "COMPLETE", WebsiteURL: "https://example.ch/?a=1&b=2",
		ReopenDate: "2027-03-01",
		BusinessHours: &listing.BusinessHours{
			Monday:   []listing.TimeRange{{From: "08:00", To: "12:00"}, {From: "13:00", To: "18:30"}},
			Saturday: []listing.TimeRange{{From: "22:00", To: "02:00"}},
		},
		HolidayHours: []listing.HolidayHours{
			{Type: "CLOSED", Day: "2026-12-25"},
			{Type: "RANGE", Day: "2026-12-31", Times: []listing.TimeRange{{From: "09:00", To: "12:00"}}},
		},
		Errors: []listing.LocationError{{Code: "X", Message: "y"}},
	}
	for name, tc := range map[string]struct {
		loc  listing.Location
		want string
	}{
		"empty": {listing.Location{}, "493ca047155ca0b38fe447c4db8b1e33d746109800bae0455d66efc4a293e356"},
		"full":  {full, "684be648f847b121e193a077c96cdf7c1b39643629bf56e5277b6b3717202029"},
		"empty hours and holidays": {listing.Location{ID: "L2", HolidayHours: []listing.HolidayHours{}, BusinessHours: &listing.BusinessHours{}},
			"2df5155ef5bbce324f926b8d0de68c08410e27dcacd7040a3ac9b6f479211b2e"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, hex.EncodeToString(listing.ContentHash(tc.loc)))
		})
	}
}

// Id, status and errors are not content; every other field is.
func TestContentHashFields(t *testing.T) {
	t.Parallel()
	base := listing.Location{ID: "L1", LocationName: "A", City: "B", Address: "C", Phone: "+1 202 555 0100"}
	h := listing.ContentHash(base)
	same := base
	same.ID, same.Status, same.Errors = "L2", "COMPLETE", []listing.LocationError{{Code: "X", Message: "y"}}
	require.Equal(t, h, listing.ContentHash(same))
	for name, change := range map[string]func(*listing.Location){
		"locationName":          func(l *listing.Location) { l.LocationName = "Z" },
		"city":                  func(l *listing.Location) { l.City = "Z" },
		"address":               func(l *listing.Location) { l.Address = "Z" },
		"additionalAddressInfo": func(l *listing.Location) { l.AdditionalAddressInfo = "Z" },
		"zip":                   func(l *listing.Location) { l.Zip = "Z" },
		"phone":                 func(l *listing.Location) { l.Phone = "Z" },
		"region":                func(l *listing.Location) { l.Region = "Z" },
		"websiteUrl":            func(l *listing.Location) { l.WebsiteURL = "Z" },
		"countryCode":           func(l *listing.Location) { l.CountryCode = "Z" },
		"reopenDate":            func(l *listing.Location) { l.ReopenDate = "2027-01-01" },
		"businessHours":         func(l *listing.Location) { l.BusinessHours = &listing.BusinessHours{} },
		"holidayHours": func(l *listing.Location) {
			l.HolidayHours = []listing.HolidayHours{{Type: "CLOSED", Day: "2026-12-25"}}
		},
	} {
		c := base
		change(&c)
		require.NotEqual(t, h, listing.ContentHash(c), name)
	}
}
