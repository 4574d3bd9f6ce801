package listing

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seoetl/etl/catalog"
)

// Problem is one thing wrong with a location, in the shape of a detail of
// the listing error envelope (spec 7.1): a code, a message, the field
// ("locationName", "businessHours.monday", "holidayHours.times") and the
// index, a string position in the field's array ("" when the field is not
// an array).
type Problem struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	Index   string `json:"index,omitempty"`
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Field != "" {
		b.WriteString(p.Field)
		if p.Index != "" {
			b.WriteString("[" + p.Index + "]")
		}
		b.WriteString(": ")
	}
	b.WriteString(p.Code + ": " + p.Message)
	return b.String()
}

// The detail codes of Validate and ParseUpdate. The spec names two
// (TIMES_NOT_ALLOWED and TIMES_TOO_MANY_RANGES, 4.5 rule 3, 7.1), used as
// it spells them; it names none for the other rules of 2.14, so these are
// chosen here: upper-case words saying what is wrong, in the style of the
// spec's codes.
const (
	// CodeRequired: a required field (locationName, city, address, phone;
	// a bulk item's id; a holiday entry's type and day) is empty or only
	// spaces.
	CodeRequired = "REQUIRED"
	// CodeTooLong: a string is longer than its bound, counted in
	// characters (Unicode code points).
	CodeTooLong = "TOO_LONG"
	// CodeInvalidPhone: the phone does not include the international code.
	// A phone passes when it starts with "+" and holds after it only digits
	// and the separators space, '-', '.', '(' and ')', with 7 to 15 digits
	// (E.164's most) of which the first is not 0 ("+1 541-754-3010",
	// "+49 351 8629318"; not "2096438343" nor "0049 351 8629318").
	CodeInvalidPhone = "INVALID_PHONE"
	// CodeInvalidURL: websiteUrl does not begin with http:// or https://
	// followed by a host.
	CodeInvalidURL = "INVALID_URL"
	// CodeInvalidTime: a from or to is not HH:MM on a 24 hour clock.
	CodeInvalidTime = "INVALID_TIME"
	// CodeEmptyRange: a range's to equals its from, at another time than
	// 00:00 (00:00-00:00 is the whole day).
	CodeEmptyRange = "EMPTY_RANGE"
	// CodeTooManyRanges: a weekday of businessHours has more than two
	// ranges (on a holiday entry the spec's TIMES_TOO_MANY_RANGES).
	CodeTooManyRanges = "TOO_MANY_RANGES"
	// CodeRangesOverlap: two ranges of a weekday, or of a holiday entry,
	// share a minute.
	CodeRangesOverlap = "RANGES_OVERLAP"
	// CodeHolidayWithoutBusinessHours: holidayHours given without
	// businessHours.
	CodeHolidayWithoutBusinessHours = "HOLIDAY_HOURS_WITHOUT_BUSINESS_HOURS"
	// CodeInvalidHolidayType: a holiday entry's type is neither RANGE nor
	// CLOSED.
	CodeInvalidHolidayType = "INVALID_HOLIDAY_TYPE"
	// CodeInvalidDate: a holiday's day or reopenDate is not a date written
	// YYYY-MM-DD.
	CodeInvalidDate = "INVALID_DATE"
	// CodeDuplicateDay: two holiday entries are for the same day (each
	// overrides the regular hours; two cannot both).
	CodeDuplicateDay = "DUPLICATE_DAY"
	// CodeTimesNotAllowed: a CLOSED holiday entry carries times (spec).
	CodeTimesNotAllowed = catalog.DetailTimesNotAllowed
	// CodeTimesTooManyRanges: a holiday entry has more than three ranges
	// (spec; catalog.MaxHolidayRanges).
	CodeTimesTooManyRanges = catalog.DetailTimesTooManyRanges
	// CodeTimesRequired: a RANGE holiday entry has no times.
	CodeTimesRequired = "TIMES_REQUIRED"
	// CodeReopenDateNotFuture: reopenDate is not later than the current
	// date.
	CodeReopenDateNotFuture = "REOPEN_DATE_NOT_IN_FUTURE"
	// CodeReopenDateTooLate: reopenDate is not earlier than 2038-01-01.
	CodeReopenDateTooLate = "REOPEN_DATE_TOO_LATE"
	// CodeRegionNotAllowed: region is set for a country whose addresses
	// have none (RegionAllowed).
	CodeRegionNotAllowed = "REGION_NOT_ALLOWED"
	// CodeInvalidRegion: a US location's region is not a state (its USPS
	// code or its name), or a Spanish location's is an autonomous
	// community, not a province (spec 2.14).
	CodeInvalidRegion = "INVALID_REGION"
	// CodeInvalidZip: a US location's zip is not five digits, or five
	// digits, '-' and four.
	CodeInvalidZip = "INVALID_ZIP"
	// CodeZipRegionMismatch: a US location's zip belongs to another state
	// than its region.
	CodeZipRegionMismatch = "ZIP_REGION_MISMATCH"
	// CodeInvalidType: a field of an update has the wrong JSON type
	// (ParseUpdate).
	CodeInvalidType = "INVALID_TYPE"
)

// Validate checks the content of a location against every rule of spec
// 2.14 and 8.3 and returns what is wrong, in the order of the fields
// (catalog.LocationFields), or nil. It is the one implementation of those
// rules: the sandbox refuses an update with it, the push refuses a change
// locally with it.
//
// The current date of reopenDate is the UTC date of now. The region and
// ZIP rules depend on the country, which an update does not carry
// (countryCode is response only): the caller sets loc.CountryCode from the
// stored location; with it empty they are skipped. The id, status and
// errors are not checked; a bulk item's id is the caller's.
func Validate(loc Location, now time.Time) []Problem {
	var v validator
	for _, f := range catalog.LocationFields {
		if f.Type == catalog.LString && f.Use != catalog.UseID && f.Use != catalog.UseResponse {
			v.text(f, loc.text(f.Name))
		}
		switch f.Name {
		case "phone":
			if strings.TrimSpace(loc.Phone) != "" && !validPhone(loc.Phone) {
				v.add("phone", "", CodeInvalidPhone, "phone %q must include the international code: a leading + and 7 to 15 digits (spaces, -, ., ( and ) may separate them)", loc.Phone)
			}
		case "zip":
			v.zip(loc)
		case "region":
			v.region(loc)
		case "websiteUrl":
			if loc.WebsiteURL != "" && !validWebsite(loc.WebsiteURL) {
				v.add("websiteUrl", "", CodeInvalidURL, "websiteUrl %q must begin with http:// or https:// and name a host", loc.WebsiteURL)
			}
		case "businessHours":
			if loc.BusinessHours != nil {
				for _, day := range catalog.Weekdays {
					v.weekday(day, loc.BusinessHours.Day(day))
				}
			}
		case "holidayHours":
			v.holidays(loc)
		case "reopenDate":
			v.reopenDate(loc.ReopenDate, now)
		}
	}
	return v.problems
}

type validator struct {
	problems []Problem
}

func (v *validator) add(field, index, code, format string, args ...any) {
	v.problems = append(v.problems, Problem{Code: code, Message: fmt.Sprintf(format, args...), Field: field, Index: index})
}

// text checks a string field's presence and length.
func (v *validator) text(f catalog.LocationField, s string) {
	if f.Use == catalog.UseRequired && strings.TrimSpace(s) == "" {
		v.add(f.Name, "", CodeRequired, "%s is required", f.Name)
		return
	}
	if n := utf8.RuneCountInString(s); f.MaxLen > 0 && n > f.MaxLen {
		v.add(f.Name, "", CodeTooLong, "%s is %d characters long; at most %d are allowed", f.Name, n, f.MaxLen)
	}
}

// ranges checks time ranges: their format, that none is empty and that no
// two overlap (read as rangeSpan reads them). Each problem has the field
// and the index given, or the range's position when index is "".
func (v *validator) ranges(field, index string, rs []TimeRange, where func(i int) string) {
	type seen struct {
		s span
		i int
	}
	spans := make([]seen, 0, len(rs))
	for i, r := range rs {
		idx := index
		if idx == "" {
			idx = strconv.Itoa(i)
		}
		s, timesOK, ok := rangeSpan(r)
		switch {
		case !timesOK:
			v.add(field, idx, CodeInvalidTime, "%s: from %q and to %q must be times HH:MM on a 24 hour clock (00:00 to 23:59)", where(i), r.From, r.To)
			continue
		case !ok:
			v.add(field, idx, CodeEmptyRange, "%s: %s-%s is empty; to may be earlier than from (past midnight), and 00:00-00:00 is the whole day", where(i), r.From, r.To)
			continue
		}
		for _, o := range spans {
			if s.overlaps(o.s) {
				v.add(field, idx, CodeRangesOverlap, "%s: %s-%s overlaps range %d, %s-%s", where(i), r.From, r.To, o.i, rs[o.i].From, rs[o.i].To)
				break
			}
		}
		spans = append(spans, seen{s, i})
	}
}

// weekday checks the ranges of one weekday of businessHours: field
// businessHours.<day>, index the range's position.
func (v *validator) weekday(day string, rs []TimeRange) {
	field := "businessHours." + day
	if len(rs) > catalog.MaxWeekdayRanges {
		v.add(field, strconv.Itoa(catalog.MaxWeekdayRanges), CodeTooManyRanges, "%s has %d time ranges; at most %d are allowed", day, len(rs), catalog.MaxWeekdayRanges)
	}
	v.ranges(field, "", rs, func(i int) string { return fmt.Sprintf("%s range %d", day, i) })
}

// holidays checks holidayHours: fields holidayHours.type, .day and .times,
// index the entry's position (as the spec's sample details do).
func (v *validator) holidays(loc Location) {
	if len(loc.HolidayHours) == 0 {
		return
	}
	if loc.BusinessHours == nil {
		v.add("holidayHours", "", CodeHolidayWithoutBusinessHours, "holidayHours can be set only when businessHours is given")
	}
	seen := map[string]int{}
	for i, h := range loc.HolidayHours {
		idx := strconv.Itoa(i)
		switch h.Type {
		case catalog.HolidayRange, catalog.HolidayClosed:
		case "":
			v.add("holidayHours.type", idx, CodeRequired, "holiday entry %d: type is required (%s or %s)", i, catalog.HolidayRange, catalog.HolidayClosed)
		default:
			v.add("holidayHours.type", idx, CodeInvalidHolidayType, "holiday entry %d: type %q must be %s or %s", i, h.Type, catalog.HolidayRange, catalog.HolidayClosed)
		}
		switch {
		case h.Day == "":
			v.add("holidayHours.day", idx, CodeRequired, "holiday entry %d: day is required (YYYY-MM-DD)", i)
		case !validDate(h.Day):
			v.add("holidayHours.day", idx, CodeInvalidDate, "holiday entry %d: day %q must be a date YYYY-MM-DD", i, h.Day)
		default:
			if first, ok := seen[h.Day]; ok {
				v.add("holidayHours.day", idx, CodeDuplicateDay, "holiday entry %d: %s already has entry %d", i, h.Day, first)
			} else {
				seen[h.Day] = i
			}
		}
		switch h.Type {
		case catalog.HolidayClosed:
			if len(h.Times) > 0 {
				v.add("holidayHours.times", idx, CodeTimesNotAllowed, "holiday entry %d is CLOSED: times must not be set", i)
			}
		case catalog.HolidayRange:
			switch {
			case len(h.Times) == 0:
				v.add("holidayHours.times", idx, CodeTimesRequired, "holiday entry %d is a RANGE: it needs times", i)
			case len(h.Times) > catalog.MaxHolidayRanges:
				v.add("holidayHours.times", idx, CodeTimesTooManyRanges, "holiday entry %d has %d time ranges; only three can be set", i, len(h.Times))
			}
			v.ranges("holidayHours.times", idx, h.Times, func(j int) string { return fmt.Sprintf("holiday entry %d range %d", i, j) })
		}
	}
}

// validDate reports whether s is a calendar date written YYYY-MM-DD.
func validDate(s string) bool {
	if len(s) != len(catalog.DateLayout) {
		return false
	}
	_, err := time.Parse(catalog.DateLayout, s)
	return err == nil
}

func (v *validator) reopenDate(s string, now time.Time) {
	if s == "" {
		return
	}
	if !validDate(s) {
		v.add("reopenDate", "", CodeInvalidDate, "reopenDate %q must be a date yyyy-mm-dd", s)
		return
	}
	// Dates in one layout compare as strings.
	today := now.UTC().Format(catalog.DateLayout)
	switch {
	case s <= today:
		v.add("reopenDate", "", CodeReopenDateNotFuture, "reopenDate %s must be later than the current date, %s", s, today)
	case s >= catalog.ReopenDateBefore:
		v.add("reopenDate", "", CodeReopenDateTooLate, "reopenDate %s must be earlier than %s", s, catalog.ReopenDateBefore)
	}
}

func isUS(country string) bool { return strings.EqualFold(strings.TrimSpace(country), "US") }

// zip checks a US location's ZIP code and, with its region a state, that
// the ZIP belongs to that state.
func (v *validator) zip(loc Location) {
	if !isUS(loc.CountryCode) || strings.TrimSpace(loc.Zip) == "" {
		return
	}
	p, ok := usZipPrefix(loc.Zip)
	if !ok {
		v.add("zip", "", CodeInvalidZip, "zip %q must be a US ZIP code: five digits, or five digits, - and four", loc.Zip)
		return
	}
	st, ok := lookupUSState(loc.Region)
	if !ok || st.hasZipPrefix(p) {
		return
	}
	if other, ok := USStateOfZip(loc.Zip); ok {
		v.add("zip", "", CodeZipRegionMismatch, "zip %s is in %s, not in the region %s", loc.Zip, other, st.code)
	} else {
		v.add("zip", "", CodeZipRegionMismatch, "zip %s is in no state's ZIP range, so not in the region %s", loc.Zip, st.code)
	}
}

// region checks that a region is empty where the country uses none, and is
// a state in the USA.
func (v *validator) region(loc Location) {
	if strings.TrimSpace(loc.Region) == "" || loc.CountryCode == "" {
		return
	}
	if !RegionAllowed(loc.CountryCode) {
		v.add("region", "", CodeRegionNotAllowed, "region must be left empty for %s, whose addresses have no administrative area; got %q", strings.ToUpper(loc.CountryCode), loc.Region)
		return
	}
	if strings.EqualFold(strings.TrimSpace(loc.CountryCode), "ES") {
		if provinces, ok := spanishCommunity(loc.Region); ok {
			v.add("region", "", CodeInvalidRegion, "region %q is an autonomous community of Spain; give the province (spec 2.14): %s", loc.Region, orList(provinces))
		}
	}
	if isUS(loc.CountryCode) {
		if _, ok := lookupUSState(loc.Region); !ok {
			v.add("region", "", CodeInvalidRegion, "region %q is not a US state: give its two-letter code (OH) or its name (Ohio)", loc.Region)
		}
	}
}

// text returns the string field called name (a catalog field of type
// string).
func (l *Location) text(name string) string { return l.field(name).String() }
