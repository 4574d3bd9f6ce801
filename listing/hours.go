package listing

import "github.com/seoetl/etl/catalog"

const minutesPerDay = 24 * 60

// clock parses s as HH:MM on a 24 hour clock (catalog.TimeLayout): exactly
// two digits, a colon, two digits; 00:00 to 23:59. It returns the minutes
// since midnight.
func clock(s string) (int, bool) {
	if len(s) != len(catalog.TimeLayout) || s[2] != ':' {
		return 0, false
	}
	for _, i := range []int{0, 1, 3, 4} {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	h := int(s[0]-'0')*10 + int(s[1]-'0')
	m := int(s[3]-'0')*10 + int(s[4]-'0')
	if h > 23 || m > 59 {
		return 0, false
	}
	return h*60 + m, true
}

// span is a time range as minutes from the start of its day, end excluded;
// end may pass minutesPerDay (the range runs past midnight).
type span struct{ start, end int }

// rangeSpan is how a valid time range is read (spec 2.14: "a range may
// have to earlier than from or equal to 00:00"): from its start to its end
// on the same day when to is later than from; otherwise to is on the next
// day, so the range wraps past midnight (22:00-02:00 is four hours, 18:00-
// 00:00 six, 00:00-00:00 the whole day, as the provider's sample shows for
// a location open around the clock). A range whose to equals its from at
// another time than 00:00 (09:00-09:00) is refused as empty rather than
// read as 24 hours that start mid-day: ok is false.
func rangeSpan(r TimeRange) (s span, timesOK, ok bool) {
	from, ok1 := clock(r.From)
	to, ok2 := clock(r.To)
	if !ok1 || !ok2 {
		return span{}, false, false
	}
	switch {
	case to > from:
		return span{from, to}, true, true
	case to == from && from != 0:
		return span{}, true, false
	default:
		return span{from, to + minutesPerDay}, true, true
	}
}

// overlaps reports whether two spans of the same day share a minute; a
// range that ends when the other starts does not overlap it.
func (s span) overlaps(o span) bool { return s.start < o.end && o.start < s.end }
