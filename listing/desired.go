package listing

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/seoetl/etl/catalog"
)

// CodeUnknownField: a member of businessHours, of a time range or of a
// holiday entry that a location does not have ("lunes" for a weekday,
// "start" for from). ParseUpdate ignores unknown members, as the provider
// may; a desired location (ParseDesired) is the user's own data, where a
// misspelt weekday would silently close the location that day, so it is
// refused.
const CodeUnknownField = "UNKNOWN_FIELD"

// ParseDesired reads a desired location given as the JSON value of each
// request field (catalog.LocationFields with InRequest, the id included),
// by the spec's name: a value is JSON (a string field's value a JSON
// string, null for none; businessHours an object, holidayHours an array,
// null for none). A field missing from fields is left empty.
//
// It returns the location as far as it could be read and the problems of
// reading it: a value that is no JSON (CodeInvalidType), of the wrong JSON
// type (CodeInvalidType), or with a member a location does not have
// within businessHours or holidayHours (CodeUnknownField); hours with a
// problem are left empty. The field of a problem is its path
// ("businessHours.lunes", "businessHours.monday", "holidayHours.times")
// and its index the position of the range or the holiday entry, as
// Validate's. It does not validate the content: Check does.
func ParseDesired(fields map[string]json.RawMessage) (Location, []Problem) {
	var problems []Problem
	obj := make(map[string]json.RawMessage, len(fields))
	for _, f := range catalog.LocationFields {
		v, ok := fields[f.Name]
		if !ok || !f.InRequest() {
			continue
		}
		if !json.Valid(v) {
			problems = append(problems, Problem{Code: CodeInvalidType, Field: f.Name,
				Message: fmt.Sprintf("%s must be %s, and is not valid JSON", f.Name, typeText(f))})
			continue
		}
		if ps := shapeProblems(f.Name, v); len(ps) > 0 {
			// Left empty, as a field of the wrong type is.
			problems = append(problems, ps...)
			v = json.RawMessage("null")
		}
		obj[f.Name] = v
	}
	body, err := json.Marshal(obj)
	if err != nil {
		// Every value is valid JSON.
		panic("listing: " + err.Error())
	}
	u, typed, err := ParseUpdate(body)
	if err != nil {
		panic("listing: " + err.Error()) // body is an object
	}
	problems = append(problems, typed...)
	return u.Location, problems
}

// typeText is "a string", "an object", "an array".
func typeText(f catalog.LocationField) string {
	if f.Type == catalog.LString {
		return "a string"
	}
	return "an " + f.Type.String()
}

// shapeProblems checks the shape of the JSON value v of businessHours or
// holidayHours member by member (nil for another field, or no JSON: the
// caller tells those), so that each problem says where it is: the weekday
// or the holiday's member as the field, the position of the range or the
// entry as the index, as Validate's problems do. A member a location does
// not have is CodeUnknownField; a value of the wrong JSON type
// CodeInvalidType. The weekdays must be spelt as the spec spells them
// (WeekdayError: "Monday" is refused); the members of a range or a
// holiday entry match in any case, as the JSON decoding of a Location
// reads them.
func shapeProblems(field string, v json.RawMessage) []Problem {
	if field != "businessHours" && field != "holidayHours" {
		return nil
	}
	var x any
	if json.Unmarshal(v, &x) != nil {
		return nil
	}
	var s shape
	if field == "businessHours" {
		s.businessHours(x)
	} else {
		s.holidayHours(x)
	}
	return s.problems
}

type shape struct{ problems []Problem }

func (s *shape) add(code, field, index, format string, args ...any) {
	s.problems = append(s.problems, Problem{Code: code, Field: field, Index: index, Message: fmt.Sprintf(format, args...)})
}

// kindOf names the JSON type of a decoded value: "an object", "a string".
func kindOf(x any) string {
	switch x.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// member returns the name among names that key is, in any case.
func member(key string, names ...string) (string, bool) {
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return n, true
		}
	}
	return "", false
}

// sortedKeys are the keys of m in order, for problems in a stable order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

const rangeShape = `{"from": "HH:MM", "to": "HH:MM"}`

func (s *shape) businessHours(x any) {
	if x == nil {
		return
	}
	days, ok := x.(map[string]any)
	if !ok {
		s.add(CodeInvalidType, "businessHours", "", "businessHours must be an object whose keys are weekdays (%s), not %s", strings.Join(catalog.Weekdays, ", "), kindOf(x))
		return
	}
	for _, k := range sortedKeys(days) {
		day := k
		if !slices.Contains(catalog.Weekdays, k) {
			// Exactly as the spec spells them: WeekdayError's rule.
			s.problems = append(s.problems, (&WeekdayError{Key: k}).Problem())
			continue
		}
		s.ranges("businessHours."+day, "", day, days[k])
	}
}

// ranges checks a list of time ranges: field the problems name, index
// theirs ("" for each range's position), what the list is in words
// ("monday", "holiday entry 2").
func (s *shape) ranges(field, index, what string, x any) {
	if x == nil {
		return
	}
	rs, ok := x.([]any)
	if !ok {
		list := field // businessHours.monday
		if index != "" {
			list = what + ": times" // holiday entry 2: times
		}
		s.add(CodeInvalidType, field, index, "%s must be an array of ranges %s, not %s", list, rangeShape, kindOf(x))
		return
	}
	for i, r := range rs {
		idx := index
		if idx == "" {
			idx = strconv.Itoa(i)
		}
		where := fmt.Sprintf("%s range %d", what, i)
		if r == nil {
			continue // an empty range: Validate says its times are missing
		}
		m, ok := r.(map[string]any)
		if !ok {
			s.add(CodeInvalidType, field, idx, "%s must be an object %s, not %s", where, rangeShape, kindOf(r))
			continue
		}
		for _, k := range sortedKeys(m) {
			name, ok := member(k, "from", "to")
			switch _, isString := m[k].(string); {
			case !ok:
				s.add(CodeUnknownField, field, idx, "%s has no member %q: a range has from and to", where, k)
			case !isString && m[k] != nil:
				s.add(CodeInvalidType, field, idx, "%s: %s must be a string HH:MM, not %s", where, name, kindOf(m[k]))
			}
		}
	}
}

func (s *shape) holidayHours(x any) {
	if x == nil {
		return
	}
	entries, ok := x.([]any)
	if !ok {
		s.add(CodeInvalidType, "holidayHours", "", "holidayHours must be an array of entries {\"type\": \"RANGE\" or \"CLOSED\", \"day\": \"YYYY-MM-DD\", \"times\": [...]}, not %s", kindOf(x))
		return
	}
	for i, e := range entries {
		idx := strconv.Itoa(i)
		if e == nil {
			continue // an empty entry: Validate says what it lacks
		}
		m, ok := e.(map[string]any)
		if !ok {
			s.add(CodeInvalidType, "holidayHours", idx, "holiday entry %d must be an object {\"type\", \"day\", \"times\"}, not %s", i, kindOf(e))
			continue
		}
		for _, k := range sortedKeys(m) {
			name, ok := member(k, "type", "day", "times")
			switch _, isString := m[k].(string); {
			case !ok:
				s.add(CodeUnknownField, "holidayHours."+k, idx, "holiday entry %d has no member %q: an entry has type, day and times", i, k)
			case name == "times":
				s.ranges("holidayHours.times", idx, fmt.Sprintf("holiday entry %d", i), m[k])
			case !isString && m[k] != nil:
				s.add(CodeInvalidType, "holidayHours."+name, idx, "holiday entry %d: %s must be a string, not %s", i, name, kindOf(m[k]))
			}
		}
	}
}
