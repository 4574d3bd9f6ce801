package listing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
// type (CodeInvalidType, from ParseUpdate), or with a member a location
// does not have within businessHours or holidayHours (CodeUnknownField).
// The field of a problem is its path ("businessHours.lunes"). It does not
// validate the content: Check does.
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
	failed := func(name string) bool {
		for _, p := range problems {
			if p.Field == name || strings.HasPrefix(p.Field, name+".") {
				return true
			}
		}
		return false
	}
	if v, ok := obj["businessHours"]; ok && !failed("businessHours") {
		problems = append(problems, strictly[BusinessHours]("businessHours", v)...)
	}
	if v, ok := obj["holidayHours"]; ok && !failed("holidayHours") {
		problems = append(problems, strictly[[]HolidayHours]("holidayHours", v)...)
	}
	return u.Location, problems
}

// typeText is "a string", "an object", "an array".
func typeText(f catalog.LocationField) string {
	if f.Type == catalog.LString {
		return "a string"
	}
	return "an " + f.Type.String()
}

// strictly decodes v as a T refusing unknown members: the problem of the
// first one, or nil.
func strictly[T any](name string, v json.RawMessage) []Problem {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	var t T
	err := dec.Decode(&t)
	if err == nil {
		return nil
	}
	// encoding/json says: json: unknown field "lunes".
	msg := err.Error()
	if _, member, ok := strings.Cut(msg, "unknown field "); ok {
		member = strings.Trim(member, `"`)
		return []Problem{{Code: CodeUnknownField, Field: name + "." + member,
			Message: fmt.Sprintf("%s has no member %q (%s)", name, member, knownMembers(name))}}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return []Problem{{Code: CodeInvalidType, Field: name, Message: name + " is not valid JSON"}}
	}
	return nil // a type error, reported by ParseUpdate already
}

// knownMembers says which members a field's objects have.
func knownMembers(name string) string {
	if name == "businessHours" {
		return "its keys are " + strings.Join(catalog.Weekdays, ", ") + "; a range has from and to"
	}
	return "an entry has type, day and times; a range has from and to"
}
