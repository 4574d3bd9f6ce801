package listing

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/seoetl/etl/catalog"
)

// Location is a business location (spec 2.14), as an answer carries it and
// as an update sends it. The JSON names are the spec's.
//
// Encoding writes every request field, empty ones included ("" for a
// string, null for businessHours and holidayHours without a value), so that
// an update built from a Location says what it means for each field whether
// the service keeps or clears an omitted one (spec 4.5 rule 5, not shown).
// The id and the response-only fields (status, countryCode, errors) are
// left out when empty: the content of a page carries no status (spec 4.5).
type Location struct {
	ID                    string          `json:"id,omitempty"`
	LocationName          string          `json:"locationName"`
	City                  string          `json:"city"`
	Address               string          `json:"address"`
	AdditionalAddressInfo string          `json:"additionalAddressInfo"`
	Zip                   string          `json:"zip"`
	Phone                 string          `json:"phone"`
	Region                string          `json:"region"`
	WebsiteURL            string          `json:"websiteUrl"`
	BusinessHours         *BusinessHours  `json:"businessHours"`
	HolidayHours          []HolidayHours  `json:"holidayHours"`
	ReopenDate            string          `json:"reopenDate"`
	Status                string          `json:"status,omitempty"`
	CountryCode           string          `json:"countryCode,omitempty"`
	Errors                []LocationError `json:"errors,omitempty"`
}

// LocationError is a listing problem the provider attaches to a location,
// for example a code saying that a directory cannot process some of its
// business information (spec 2.14; the catalogue of codes is not shown).
type LocationError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// BusinessHours are the regular opening hours: per weekday, at most two
// non-overlapping time ranges (spec 2.14). A weekday without ranges is
// closed and is left out of the JSON; the object is sent and replaced as a
// whole.
type BusinessHours struct {
	Monday    []TimeRange `json:"monday,omitempty"`
	Tuesday   []TimeRange `json:"tuesday,omitempty"`
	Wednesday []TimeRange `json:"wednesday,omitempty"`
	Thursday  []TimeRange `json:"thursday,omitempty"`
	Friday    []TimeRange `json:"friday,omitempty"`
	Saturday  []TimeRange `json:"saturday,omitempty"`
	Sunday    []TimeRange `json:"sunday,omitempty"`
}

// WeekdayError is the error of decoding businessHours (BusinessHours's
// UnmarshalJSON) with a key that is not one of the spec's seven weekdays
// as the spec spells them (catalog.Weekdays, lower case): "mon",
// "lunes", and "Monday" too. encoding/json would match "Monday" to
// monday (it folds case) and drop "mon" without a word, which closes the
// location that day; the rule of spec 2.14 ("keys monday, tuesday, ...")
// is kept here, once, for every reader of an update: the sandbox's and
// the push's.
type WeekdayError struct {
	// Key is the key as given.
	Key string
}

func (e *WeekdayError) Error() string {
	msg := fmt.Sprintf("businessHours has no member %q: its keys are %s", e.Key, strings.Join(catalog.Weekdays, ", "))
	if w := strings.ToLower(e.Key); slices.Contains(catalog.Weekdays, w) {
		msg += fmt.Sprintf(", in lower case (%q)", w)
	}
	return msg
}

// Problem is the error as a problem of field businessHours.<key>
// (CodeUnknownField).
func (e *WeekdayError) Problem() Problem {
	return Problem{Code: CodeUnknownField, Field: "businessHours." + e.Key, Message: e.Error()}
}

// UnmarshalJSON reads businessHours: an object whose keys are weekdays
// exactly as catalog.Weekdays spells them, each an array of time ranges
// (or null). Another key is a *WeekdayError.
func (b *BusinessHours) UnmarshalJSON(data []byte) error {
	var days map[string]json.RawMessage
	if err := json.Unmarshal(data, &days); err != nil {
		return err
	}
	keys := slices.Sorted(maps.Keys(days))
	var out BusinessHours
	for _, k := range keys {
		p := out.day(k)
		if p == nil {
			return &WeekdayError{Key: k}
		}
		if err := json.Unmarshal(days[k], p); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				// The path from businessHours, as a field's would be.
				if te.Field == "" {
					te.Field = k
				} else {
					te.Field = k + "." + te.Field
				}
				return te
			}
			return err
		}
	}
	*b = out
	return nil
}

// Day returns the ranges of the weekday called name (catalog.Weekdays:
// "monday" to "sunday"), nil for another name.
func (b *BusinessHours) Day(name string) []TimeRange {
	if p := b.day(name); p != nil {
		return *p
	}
	return nil
}

// SetDay sets the ranges of the weekday called name; it reports false for
// a name that is not a weekday.
func (b *BusinessHours) SetDay(name string, ranges []TimeRange) bool {
	p := b.day(name)
	if p == nil {
		return false
	}
	*p = ranges
	return true
}

func (b *BusinessHours) day(name string) *[]TimeRange {
	switch name {
	case "monday":
		return &b.Monday
	case "tuesday":
		return &b.Tuesday
	case "wednesday":
		return &b.Wednesday
	case "thursday":
		return &b.Thursday
	case "friday":
		return &b.Friday
	case "saturday":
		return &b.Saturday
	case "sunday":
		return &b.Sunday
	}
	return nil
}

// TimeRange is an opening range, HH:MM on a 24 hour clock. To may be
// earlier than From, or 00:00: the range then ends after midnight (spec
// 2.14).
type TimeRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// HolidayHours is a holiday entry: on Day (YYYY-MM-DD) the location is
// CLOSED, or open in the Times of a RANGE entry, whatever its regular hours
// say (spec 2.14).
type HolidayHours struct {
	Type  string      `json:"type"`
	Day   string      `json:"day"`
	Times []TimeRange `json:"times,omitempty"`
}

// Clone returns a deep copy of l: no slice or pointer is shared.
func (l Location) Clone() Location {
	c := l
	if l.BusinessHours != nil {
		b := *l.BusinessHours
		b.Monday = slices.Clone(b.Monday)
		b.Tuesday = slices.Clone(b.Tuesday)
		b.Wednesday = slices.Clone(b.Wednesday)
		b.Thursday = slices.Clone(b.Thursday)
		b.Friday = slices.Clone(b.Friday)
		b.Saturday = slices.Clone(b.Saturday)
		b.Sunday = slices.Clone(b.Sunday)
		c.BusinessHours = &b
	}
	if l.HolidayHours != nil {
		c.HolidayHours = make([]HolidayHours, len(l.HolidayHours))
		for i, h := range l.HolidayHours {
			h.Times = slices.Clone(h.Times)
			c.HolidayHours[i] = h
		}
	}
	c.Errors = slices.Clone(l.Errors)
	return c
}
