package listing_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/listing"
)

// now is the current time of the tests: late on 10 March 2026, UTC.
var now = time.Date(2026, 3, 10, 23, 30, 0, 0, time.UTC)

// valid returns a location that passes every rule, in the shape of the
// provider's sample: a US location open around the clock on Mondays, past
// midnight on Tuesdays, with two holiday entries.
func valid() listing.Location {
	return listing.Location{
		ID:                    "3e8d046f62fe4b73802112e138a78532",
		LocationName:          "Blue Harbor Bakery",
		City:                  "Ashville",
		Address:               "82 Cromley St",
		AdditionalAddressInfo: "3 floor",
		Zip:                   "43103",
		Phone:                 "+12096438343",
		Region:                "OH",
		WebsiteURL:            "https://www.blueharbor.example/ashville",
		BusinessHours: &listing.BusinessHours{
			Monday:    []listing.TimeRange{{From: "00:00", To: "00:00"}},
			Tuesday:   []listing.TimeRange{{From: "13:00", To: "14:00"}, {From: "15:00", To: "01:00"}},
			Wednesday: []listing.TimeRange{{From: "06:00", To: "00:00"}},
			Thursday:  []listing.TimeRange{{From: "09:00", To: "17:00"}},
			Friday:    []listing.TimeRange{{From: "09:00", To: "17:00"}, {From: "19:00", To: "19:30"}},
			Saturday:  []listing.TimeRange{{From: "09:00", To: "16:00"}, {From: "17:00", To: "18:00"}},
		},
		HolidayHours: []listing.HolidayHours{
			{Type: "RANGE", Day: "2026-11-26", Times: []listing.TimeRange{{From: "10:00", To: "12:00"}, {From: "13:00", To: "15:00"}}},
			{Type: "CLOSED", Day: "2026-12-25"},
		},
		ReopenDate:  "2026-04-01",
		Status:      "COMPLETE",
		CountryCode: "US",
	}
}

// want is a problem without its message: (field, index, code).
type want struct{ field, index, code string }

func got(problems []listing.Problem) []want {
	var out []want
	for _, p := range problems {
		out = append(out, want{p.Field, p.Index, p.Code})
	}
	return out
}

// validateCase is one case of TestValidate: a change to valid() and the
// problems it must bring, in order (none: the location stays valid).
type validateCase struct {
	name   string
	change func(l *listing.Location)
	want   []want
}

func hours(l *listing.Location, day string, ranges ...string) {
	var rs []listing.TimeRange
	for _, r := range ranges {
		from, to, _ := strings.Cut(r, "-")
		rs = append(rs, listing.TimeRange{From: from, To: to})
	}
	l.BusinessHours.SetDay(day, rs)
}

func times(ranges ...string) []listing.TimeRange {
	var rs []listing.TimeRange
	for _, r := range ranges {
		from, to, _ := strings.Cut(r, "-")
		rs = append(rs, listing.TimeRange{From: from, To: to})
	}
	return rs
}

// validateCases cover every rule of spec 2.14 and 8.3, each from both
// sides of its bound where it has one. The fuzz test seeds its corpus
// with them.
var validateCases = []validateCase{
	{"the sample is valid", func(l *listing.Location) {}, nil},
	{"optional fields empty", func(l *listing.Location) {
		l.AdditionalAddressInfo, l.Zip, l.Region, l.WebsiteURL, l.ReopenDate = "", "", "", "", ""
		l.BusinessHours, l.HolidayHours = nil, nil
	}, nil},
	{"response fields are not checked", func(l *listing.Location) {
		l.ID, l.Status = "", "NOT_A_STATUS"
		l.Errors = []listing.LocationError{{Code: "G_020", Message: "x"}}
	}, nil},

	// Required fields (2.14, 4.5).
	{"locationName required", func(l *listing.Location) { l.LocationName = "" }, []want{{"locationName", "", "REQUIRED"}}},
	{"city required, spaces are empty", func(l *listing.Location) { l.City = " \t " }, []want{{"city", "", "REQUIRED"}}},
	{"address required", func(l *listing.Location) { l.Address = "" }, []want{{"address", "", "REQUIRED"}}},
	{"phone required, not also invalid", func(l *listing.Location) { l.Phone = "" }, []want{{"phone", "", "REQUIRED"}}},
	{"all four required", func(l *listing.Location) { *l = listing.Location{} }, []want{
		{"locationName", "", "REQUIRED"}, {"city", "", "REQUIRED"}, {"address", "", "REQUIRED"}, {"phone", "", "REQUIRED"},
	}},

	// Lengths, in characters (2.14, 8.3).
	{"locationName of 125 characters", func(l *listing.Location) { l.LocationName = strings.Repeat("é", 125) }, nil},
	{"locationName of 126 characters", func(l *listing.Location) { l.LocationName = strings.Repeat("é", 126) }, []want{{"locationName", "", "TOO_LONG"}}},
	{"city of 64 characters", func(l *listing.Location) { l.City = strings.Repeat("ü", 64) }, nil},
	{"city of 65 characters", func(l *listing.Location) { l.City = strings.Repeat("ü", 65) }, []want{{"city", "", "TOO_LONG"}}},
	{"address of 190 characters", func(l *listing.Location) { l.Address = strings.Repeat("a", 190) }, nil},
	{"address of 191 characters", func(l *listing.Location) { l.Address = strings.Repeat("a", 191) }, []want{{"address", "", "TOO_LONG"}}},
	{"additionalAddressInfo of 64 characters", func(l *listing.Location) { l.AdditionalAddressInfo = strings.Repeat("日", 64) }, nil},
	{"additionalAddressInfo of 65 characters", func(l *listing.Location) { l.AdditionalAddressInfo = strings.Repeat("日", 65) }, []want{{"additionalAddressInfo", "", "TOO_LONG"}}},
	{"websiteUrl of 255 characters", func(l *listing.Location) { l.WebsiteURL = "https://x.example/" + strings.Repeat("p", 255-18) }, nil},
	{"websiteUrl of 256 characters", func(l *listing.Location) { l.WebsiteURL = "https://x.example/" + strings.Repeat("p", 256-18) }, []want{{"websiteUrl", "", "TOO_LONG"}}},

	// Phone: the international code (2.14).
	{"phone with separators", func(l *listing.Location) { l.Phone = "+1 541-754-3010" }, nil},
	{"phone with spaces", func(l *listing.Location) { l.Phone = "+49 351 8629318" }, nil},
	{"phone with parentheses and dots", func(l *listing.Location) { l.Phone = "+41 (44) 668.18.00" }, nil},
	{"phone of 7 digits", func(l *listing.Location) { l.Phone = "+683 4002" }, nil},
	{"phone of 15 digits", func(l *listing.Location) { l.Phone = "+123456789012345" }, nil},
	{"phone without international code", func(l *listing.Location) { l.Phone = "2096438343" }, []want{{"phone", "", "INVALID_PHONE"}}},
	{"phone with 00 instead of +", func(l *listing.Location) { l.Phone = "0049 351 8629318" }, []want{{"phone", "", "INVALID_PHONE"}}},
	{"phone with country code 0", func(l *listing.Location) { l.Phone = "+0 123 4567" }, []want{{"phone", "", "INVALID_PHONE"}}},
	{"phone of 6 digits", func(l *listing.Location) { l.Phone = "+123456" }, []want{{"phone", "", "INVALID_PHONE"}}},
	{"phone of 16 digits", func(l *listing.Location) { l.Phone = "+1234567890123456" }, []want{{"phone", "", "INVALID_PHONE"}}},
	{"phone with letters", func(l *listing.Location) { l.Phone = "+1 800 FLOWERS" }, []want{{"phone", "", "INVALID_PHONE"}}},
	{"phone with an extension", func(l *listing.Location) { l.Phone = "+1 555 0100 ext. 12" }, []want{{"phone", "", "INVALID_PHONE"}}},
	{"phone with a leading space", func(l *listing.Location) { l.Phone = " +12096438343" }, []want{{"phone", "", "INVALID_PHONE"}}},
	{"phone with two plus signs", func(l *listing.Location) { l.Phone = "++12096438343" }, []want{{"phone", "", "INVALID_PHONE"}}},

	// websiteUrl: http:// or https:// (2.14).
	{"websiteUrl http", func(l *listing.Location) { l.WebsiteURL = "http://blueharbor.example" }, nil},
	{"websiteUrl scheme in capitals", func(l *listing.Location) { l.WebsiteURL = "HTTPS://BLUEHARBOR.EXAMPLE/" }, nil},
	{"websiteUrl without scheme", func(l *listing.Location) { l.WebsiteURL = "www.blueharbor.example" }, []want{{"websiteUrl", "", "INVALID_URL"}}},
	{"websiteUrl ftp", func(l *listing.Location) { l.WebsiteURL = "ftp://blueharbor.example" }, []want{{"websiteUrl", "", "INVALID_URL"}}},
	{"websiteUrl without host", func(l *listing.Location) { l.WebsiteURL = "https://" }, []want{{"websiteUrl", "", "INVALID_URL"}}},
	{"websiteUrl without slashes", func(l *listing.Location) { l.WebsiteURL = "http:blueharbor.example" }, []want{{"websiteUrl", "", "INVALID_URL"}}},

	// businessHours: at most two ranges a weekday, not overlapping, HH:MM,
	// past midnight allowed (2.14, 8.3).
	{"empty businessHours", func(l *listing.Location) { l.BusinessHours = &listing.BusinessHours{}; l.HolidayHours = nil }, nil},
	{"two ranges touching", func(l *listing.Location) { hours(l, "monday", "09:00-12:00", "12:00-18:00") }, nil},
	{"three ranges on a weekday", func(l *listing.Location) { hours(l, "monday", "08:00-10:00", "11:00-12:00", "13:00-14:00") }, []want{{"businessHours.monday", "2", "TOO_MANY_RANGES"}}},
	{"overlapping ranges", func(l *listing.Location) { hours(l, "sunday", "09:00-13:00", "12:00-18:00") }, []want{{"businessHours.sunday", "1", "RANGES_OVERLAP"}}},
	{"a range inside another", func(l *listing.Location) { hours(l, "friday", "08:00-20:00", "12:00-13:00") }, []want{{"businessHours.friday", "1", "RANGES_OVERLAP"}}},
	{"past midnight and the evening", func(l *listing.Location) { hours(l, "friday", "18:00-02:00", "20:00-22:00") }, []want{{"businessHours.friday", "1", "RANGES_OVERLAP"}}},
	{"two ranges past midnight", func(l *listing.Location) { hours(l, "friday", "22:00-06:00", "23:00-01:00") }, []want{{"businessHours.friday", "1", "RANGES_OVERLAP"}}},
	{"past midnight and the same early morning", func(l *listing.Location) { hours(l, "saturday", "01:00-03:00", "18:00-02:00") }, nil},
	{"until midnight and around the clock", func(l *listing.Location) { hours(l, "saturday", "22:00-00:00", "00:00-00:00") }, []want{{"businessHours.saturday", "1", "RANGES_OVERLAP"}}},
	{"until 00:00 and the morning", func(l *listing.Location) { hours(l, "saturday", "06:00-10:00", "12:00-00:00") }, nil},
	{"an empty range", func(l *listing.Location) { hours(l, "thursday", "09:00-09:00") }, []want{{"businessHours.thursday", "0", "EMPTY_RANGE"}}},
	{"a time without its leading zero", func(l *listing.Location) { hours(l, "thursday", "9:00-17:00") }, []want{{"businessHours.thursday", "0", "INVALID_TIME"}}},
	{"24:00", func(l *listing.Location) { hours(l, "thursday", "09:00-17:00", "18:00-24:00") }, []want{{"businessHours.thursday", "1", "INVALID_TIME"}}},
	{"minute 60", func(l *listing.Location) { hours(l, "thursday", "09:00-12:60") }, []want{{"businessHours.thursday", "0", "INVALID_TIME"}}},
	{"not a time", func(l *listing.Location) { hours(l, "thursday", "ab:cd-") }, []want{{"businessHours.thursday", "0", "INVALID_TIME"}}},
	{"a 12 hour clock", func(l *listing.Location) { hours(l, "thursday", "9am-5pm") }, []want{{"businessHours.thursday", "0", "INVALID_TIME"}}},

	// holidayHours (2.14, 4.5 rule 3, 7.1).
	{"holidayHours without businessHours", func(l *listing.Location) { l.BusinessHours = nil }, []want{{"holidayHours", "", "HOLIDAY_HOURS_WITHOUT_BUSINESS_HOURS"}}},
	{"the spec's sample details", func(l *listing.Location) {
		l.HolidayHours = []listing.HolidayHours{
			{Type: "CLOSED", Day: "2026-12-25", Times: times("10:00-12:00")},
			{Type: "RANGE", Day: "2026-12-24", Times: times("08:00-09:00", "10:00-11:00", "12:00-13:00", "14:00-15:00")},
		}
	}, []want{{"holidayHours.times", "0", "TIMES_NOT_ALLOWED"}, {"holidayHours.times", "1", "TIMES_TOO_MANY_RANGES"}}},
	{"three ranges on a holiday", func(l *listing.Location) {
		l.HolidayHours[0].Times = times("08:00-09:00", "10:00-11:00", "12:00-13:00")
	}, nil},
	{"a holiday past midnight", func(l *listing.Location) { l.HolidayHours[0].Times = times("20:00-02:00") }, nil},
	{"a RANGE holiday without times", func(l *listing.Location) { l.HolidayHours[0].Times = nil }, []want{{"holidayHours.times", "0", "TIMES_REQUIRED"}}},
	{"overlapping holiday ranges", func(l *listing.Location) { l.HolidayHours[0].Times = times("10:00-12:00", "11:00-13:00") }, []want{{"holidayHours.times", "0", "RANGES_OVERLAP"}}},
	{"a holiday time out of format", func(l *listing.Location) { l.HolidayHours[0].Times = times("10:00-12:00", "13:00-1500") }, []want{{"holidayHours.times", "0", "INVALID_TIME"}}},
	{"an unknown holiday type", func(l *listing.Location) { l.HolidayHours[1].Type = "OPEN" }, []want{{"holidayHours.type", "1", "INVALID_HOLIDAY_TYPE"}}},
	{"a holiday type in lower case", func(l *listing.Location) { l.HolidayHours[1].Type = "closed" }, []want{{"holidayHours.type", "1", "INVALID_HOLIDAY_TYPE"}}},
	{"a holiday without type", func(l *listing.Location) { l.HolidayHours[1].Type = "" }, []want{{"holidayHours.type", "1", "REQUIRED"}}},
	{"a holiday without day", func(l *listing.Location) { l.HolidayHours[1].Day = "" }, []want{{"holidayHours.day", "1", "REQUIRED"}}},
	{"a holiday on month 13", func(l *listing.Location) { l.HolidayHours[1].Day = "2026-13-01" }, []want{{"holidayHours.day", "1", "INVALID_DATE"}}},
	{"a holiday on 30 February", func(l *listing.Location) { l.HolidayHours[1].Day = "2026-02-30" }, []want{{"holidayHours.day", "1", "INVALID_DATE"}}},
	{"a holiday day without zeros", func(l *listing.Location) { l.HolidayHours[1].Day = "2026-1-5" }, []want{{"holidayHours.day", "1", "INVALID_DATE"}}},
	{"a holiday day with a time", func(l *listing.Location) { l.HolidayHours[1].Day = "2026-12-25T00:00:00Z" }, []want{{"holidayHours.day", "1", "INVALID_DATE"}}},
	{"a holiday in the past is fine", func(l *listing.Location) { l.HolidayHours[1].Day = "2019-12-25" }, nil},
	{"two entries on one day", func(l *listing.Location) { l.HolidayHours[1].Day = l.HolidayHours[0].Day }, []want{{"holidayHours.day", "1", "DUPLICATE_DAY"}}},

	// reopenDate: after the current date, before 2038-01-01 (2.14, 8.3).
	{"reopenDate tomorrow", func(l *listing.Location) { l.ReopenDate = "2026-03-11" }, nil},
	{"reopenDate today", func(l *listing.Location) { l.ReopenDate = "2026-03-10" }, []want{{"reopenDate", "", "REOPEN_DATE_NOT_IN_FUTURE"}}},
	{"reopenDate yesterday", func(l *listing.Location) { l.ReopenDate = "2026-03-09" }, []want{{"reopenDate", "", "REOPEN_DATE_NOT_IN_FUTURE"}}},
	{"reopenDate the last day allowed", func(l *listing.Location) { l.ReopenDate = "2037-12-31" }, nil},
	{"reopenDate 2038-01-01", func(l *listing.Location) { l.ReopenDate = "2038-01-01" }, []want{{"reopenDate", "", "REOPEN_DATE_TOO_LATE"}}},
	{"reopenDate with slashes", func(l *listing.Location) { l.ReopenDate = "2026/05/01" }, []want{{"reopenDate", "", "INVALID_DATE"}}},
	{"reopenDate not a date", func(l *listing.Location) { l.ReopenDate = "2026-04-31" }, []want{{"reopenDate", "", "INVALID_DATE"}}},

	// region: empty for countries without one (2.14).
	{"region in Switzerland", func(l *listing.Location) { l.CountryCode, l.Zip, l.Region = "CH", "8001", "Zürich" }, []want{{"region", "", "REGION_NOT_ALLOWED"}}},
	{"no region in Switzerland", func(l *listing.Location) { l.CountryCode, l.Zip, l.Region = "CH", "8001", "" }, nil},
	{"region in the United Kingdom", func(l *listing.Location) { l.CountryCode, l.Zip, l.Region = "GB", "EC1Y 8SY", "Greater London" }, []want{{"region", "", "REGION_NOT_ALLOWED"}}},
	{"a country code in lower case", func(l *listing.Location) { l.CountryCode, l.Zip, l.Region = "de", "10115", "Berlin" }, []want{{"region", "", "REGION_NOT_ALLOWED"}}},
	{"a province in Spain", func(l *listing.Location) { l.CountryCode, l.Zip, l.Region = "ES", "08001", "Barcelona" }, nil},
	{"a country not listed", func(l *listing.Location) { l.CountryCode, l.Zip, l.Region = "BO", "", "La Paz" }, nil},
	// Spain: the province, not the autonomous community (2.14).
	{"a Spanish community", func(l *listing.Location) { l.CountryCode, l.Zip, l.Region = "ES", "08001", "Cataluña" }, []want{{"region", "", "INVALID_REGION"}}},
	{"a Spanish community in Catalan, no accent", func(l *listing.Location) { l.CountryCode, l.Zip, l.Region = "es", "08001", "catalunya" }, []want{{"region", "", "INVALID_REGION"}}},
	{"a community of one province by its long name", func(l *listing.Location) { l.CountryCode, l.Zip, l.Region = "ES", "28001", "Comunidad de Madrid" }, []want{{"region", "", "INVALID_REGION"}}},
	{"a Spanish province", func(l *listing.Location) { l.CountryCode, l.Zip, l.Region = "ES", "08001", "Barcelona" }, nil},
	{"a province that names its community", func(l *listing.Location) { l.CountryCode, l.Zip, l.Region = "ES", "28001", "Madrid" }, nil},
	{"no country: no region rule", func(l *listing.Location) { l.CountryCode, l.Zip, l.Region = "", "8001", "Zürich" }, nil},

	// US state and ZIP (2.14).
	{"a state by name", func(l *listing.Location) { l.Region = "ohio" }, nil},
	{"a state in lower case", func(l *listing.Location) { l.Region = "oh" }, nil},
	{"ZIP+4", func(l *listing.Location) { l.Zip = "43103-1234" }, nil},
	{"not a state", func(l *listing.Location) { l.Region = "Ontario" }, []want{{"region", "", "INVALID_REGION"}}},
	{"a territory is no US region", func(l *listing.Location) { l.Region, l.Zip = "PR", "00901" }, []want{{"region", "", "INVALID_REGION"}}},
	{"a ZIP of another state", func(l *listing.Location) { l.Zip = "90210" }, []want{{"zip", "", "ZIP_REGION_MISMATCH"}}},
	{"a ZIP in no state", func(l *listing.Location) { l.Region, l.Zip = "NY", "00100" }, []want{{"zip", "", "ZIP_REGION_MISMATCH"}}},
	{"Holtsville is in New York", func(l *listing.Location) { l.Region, l.Zip = "NY", "00501" }, nil},
	{"Austin's IRS ZIP is in Texas", func(l *listing.Location) { l.Region, l.Zip = "TX", "73301" }, nil},
	{"Austin's IRS ZIP is not in Oklahoma", func(l *listing.Location) { l.Region, l.Zip = "OK", "73301" }, []want{{"zip", "", "ZIP_REGION_MISMATCH"}}},
	{"Andover's 055 is Massachusetts, not Vermont", func(l *listing.Location) { l.Region, l.Zip = "VT", "05501" }, []want{{"zip", "", "ZIP_REGION_MISMATCH"}}},
	{"a ZIP of four digits", func(l *listing.Location) { l.Zip = "4310" }, []want{{"zip", "", "INVALID_ZIP"}}},
	{"a ZIP+4 with a space", func(l *listing.Location) { l.Zip = "43103 1234" }, []want{{"zip", "", "INVALID_ZIP"}}},
	{"a ZIP without a region", func(l *listing.Location) { l.Region, l.Zip = "", "90210" }, nil},
	{"a foreign postcode is not a ZIP", func(l *listing.Location) { l.CountryCode, l.Region, l.Zip = "CA", "ON", "M5V 2T6" }, nil},

	// Problems come in the order of the fields.
	{"several problems", func(l *listing.Location) {
		l.ReopenDate = "2020-01-01"
		l.Phone = "555"
		l.LocationName = ""
		hours(l, "tuesday", "10:00-09:00", "08:00-12:00")
		l.Zip = "1"
	}, []want{
		{"locationName", "", "REQUIRED"},
		{"zip", "", "INVALID_ZIP"},
		{"phone", "", "INVALID_PHONE"},
		{"businessHours.tuesday", "1", "RANGES_OVERLAP"},
		{"reopenDate", "", "REOPEN_DATE_NOT_IN_FUTURE"},
	}},
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tt := range validateCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			loc := valid()
			tt.change(&loc)
			problems := listing.Validate(loc, now)
			require.Equal(t, tt.want, got(problems), "%v", problems)
			for _, p := range problems {
				require.NotEmpty(t, p.Message)
			}
		})
	}
}

// TestValidateCurrentDate checks that the current date is now's UTC date,
// whatever now's zone.
func TestValidateCurrentDate(t *testing.T) {
	t.Parallel()
	sydney := now.In(time.FixedZone("AEDT", 11*3600)) // 11 March, 10:30 there
	loc := valid()
	loc.ReopenDate = "2026-03-11"
	require.Empty(t, listing.Validate(loc, sydney))
	loc.ReopenDate = "2026-03-10"
	require.Equal(t, []want{{"reopenDate", "", "REOPEN_DATE_NOT_IN_FUTURE"}}, got(listing.Validate(loc, sydney)))
}

func TestProblemString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "holidayHours.times[1]: TIMES_TOO_MANY_RANGES: too many",
		listing.Problem{Code: "TIMES_TOO_MANY_RANGES", Message: "too many", Field: "holidayHours.times", Index: "1"}.String())
	require.Equal(t, "phone: INVALID_PHONE: no", listing.Problem{Code: "INVALID_PHONE", Message: "no", Field: "phone"}.String())
	require.Equal(t, "X: y", listing.Problem{Code: "X", Message: "y"}.String())
}

func TestRegionAllowed(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"CH", "ch", " CH ", "DE", "FR", "GB", "UK", "NL", "SE", "NZ", "SG"} {
		require.False(t, listing.RegionAllowed(c), c)
	}
	for _, c := range []string{"US", "CA", "AU", "ES", "IT", "JP", "BR", "IN", "MX", "IE", "", "XX", "BO"} {
		require.True(t, listing.RegionAllowed(c), c)
	}
}

func TestUSStateOfZip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		zip, state string
	}{
		{"43103", "OH"}, {"90210", "CA"}, {"10001", "NY"}, {"00501", "NY"}, {"02108", "MA"}, {"05501", "MA"},
		{"05401", "VT"}, {"06103", "CT"}, {"20500", "DC"}, {"20101", "VA"}, {"73301", "TX"}, {"73102", "OK"},
		{"88510", "TX"}, {"88001", "NM"}, {"96813", "HI"}, {"99501", "AK"}, {"83201", "ID"}, {"82001", "WY"},
		{"39901", "GA"}, {"33101", "FL"}, {"59601", "MT"}, {"99201", "WA"}, {"43103-1234", "OH"},
	}
	for _, tt := range tests {
		st, ok := listing.USStateOfZip(tt.zip)
		require.True(t, ok, tt.zip)
		require.Equal(t, tt.state, st, tt.zip)
	}
	for _, zip := range []string{"00100", "34001", "96910", "00901", "4310", "43103-", "4310a", "", "431031234"} {
		_, ok := listing.USStateOfZip(zip)
		require.False(t, ok, zip)
	}
}
