package listing

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"

	"github.com/seoetl/etl/catalog"
)

// Change is one request field whose value differs between the current and
// the desired location (Diff).
type Change struct {
	// Field is the spec's JSON name of the field ("phone",
	// "businessHours").
	Field string `json:"field"`
	// From and To render the current and the desired value: a string
	// field's text as it is (no quotes, "" when empty), businessHours and
	// holidayHours as compact JSON in the order the location holds them
	// ("null" for no businessHours, "[]" for no holiday entries).
	From string `json:"from"`
	To   string `json:"to"`
}

// Diff returns the request fields (catalog.LocationFields with InRequest)
// whose values differ between current and desired, in the catalog's
// order, or nil. The id is not compared (the caller pairs locations by
// it), nor are the response-only fields: status, countryCode and errors
// never make a change.
//
// Values are compared by what they mean to the provider:
//
//   - Strings compare exactly, byte for byte: no trimming, no case
//     folding, no Unicode normalisation. "OH" and "Ohio", a trailing space,
//     "https://A.example" and "https://a.example" are changes: the push
//     sends what the desired table says, and only the provider knows what
//     it makes of it.
//   - businessHours: no object (null) and an object without ranges ({},
//     every weekday closed) differ, as Validate tells them apart
//     (holidayHours are settable only with businessHours). Within it, a
//     weekday left out and a weekday with no ranges are the same (closed;
//     the JSON leaves both out). The ranges of a weekday compare as a set:
//     their order does not matter, since it changes no opening time and
//     the provider may answer them in another order than it was sent;
//     09:00-12:00 and 12:00-17:00 are not 09:00-17:00 (ranges compare as
//     written, from and to exactly).
//   - holidayHours compare as a set of entries: their order does not
//     matter (each entry names its day), nor does the order of an entry's
//     times; null and [] are the same (no holiday entries), as are an
//     entry's times left out and empty. Type and day compare exactly.
//
// A range or a time that Validate refuses compares as written too; Diff
// does not validate (Check does).
func Diff(current, desired Location) []Change {
	var changes []Change
	for _, f := range catalog.LocationFields {
		if !f.InRequest() || f.Use == catalog.UseID {
			continue
		}
		switch {
		case f.Name == "businessHours":
			if !sameBusinessHours(current.BusinessHours, desired.BusinessHours) {
				changes = append(changes, Change{f.Name, renderJSON(current.BusinessHours), renderJSON(desired.BusinessHours)})
			}
		case f.Name == "holidayHours":
			if !sameHolidays(current.HolidayHours, desired.HolidayHours) {
				changes = append(changes, Change{f.Name, renderHolidays(current.HolidayHours), renderHolidays(desired.HolidayHours)})
			}
		case f.Type == catalog.LString:
			if a, b := current.text(f.Name), desired.text(f.Name); a != b {
				changes = append(changes, Change{f.Name, a, b})
			}
		default:
			panic("listing: Diff does not know how to compare the field " + f.Name)
		}
	}
	return changes
}

// Equal reports whether a and b have the same request fields, as Diff
// reads them: len(Diff(a, b)) == 0.
func Equal(a, b Location) bool { return len(Diff(a, b)) == 0 }

func sameBusinessHours(a, b *BusinessHours) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	for _, day := range catalog.Weekdays {
		if !sameRanges(a.Day(day), b.Day(day)) {
			return false
		}
	}
	return true
}

// sameRanges reports whether two lists of ranges hold the same ranges, in
// any order (a range twice in one is not once in the other).
func sameRanges(a, b []TimeRange) bool {
	if len(a) != len(b) {
		return false
	}
	return slices.Equal(sortedRanges(a), sortedRanges(b))
}

func sortedRanges(rs []TimeRange) []TimeRange {
	s := slices.Clone(rs)
	slices.SortFunc(s, compareRanges)
	return s
}

// compareRanges orders ranges by from, then to. HH:MM sorts as text as it
// does as a time; invalid times sort somewhere, consistently.
func compareRanges(a, b TimeRange) int {
	return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
}

func sameHolidays(a, b []HolidayHours) bool {
	if len(a) != len(b) {
		return false
	}
	sa, sb := sortedHolidays(a), sortedHolidays(b)
	return slices.EqualFunc(sa, sb, func(x, y HolidayHours) bool {
		return x.Type == y.Type && x.Day == y.Day && slices.Equal(x.Times, y.Times)
	})
}

// sortedHolidays returns copies of the entries, each with its times
// sorted, ordered by day, type and times.
func sortedHolidays(hs []HolidayHours) []HolidayHours {
	s := make([]HolidayHours, len(hs))
	for i, h := range hs {
		h.Times = sortedRanges(h.Times)
		s[i] = h
	}
	slices.SortFunc(s, func(x, y HolidayHours) int {
		return cmp.Or(cmp.Compare(x.Day, y.Day), cmp.Compare(x.Type, y.Type), slices.CompareFunc(x.Times, y.Times, compareRanges))
	})
	return s
}

// renderJSON is v as compact JSON, without HTML escaping.
func renderJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// The values rendered are plain structs of strings.
		panic("listing: " + err.Error())
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

func renderHolidays(hs []HolidayHours) string {
	if len(hs) == 0 {
		return "[]"
	}
	return renderJSON(hs)
}
