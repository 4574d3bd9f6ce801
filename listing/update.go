package listing

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/seoetl/etl/catalog"
)

// Update is the body of an update as it was sent: the location it
// describes and which of the request fields it carried. The spec does not
// say whether a field an update leaves out is kept or cleared (4.5 rule
// 5); this package reads it as kept (the design notes' choice), so it has
// to know what was sent. A field sent as null or "" is sent: it clears.
type Update struct {
	Location Location
	// Sent are the names of the request fields the body carried, in the
	// catalog's order (the id included when a bulk item carries it).
	// Response-only fields (status, countryCode, errors) are never listed:
	// an update that carries them has them ignored.
	Sent []string
}

// ErrNotObject is the error of ParseUpdate when the body is not a JSON
// object.
var ErrNotObject = errors.New("the body is not a JSON object")

// ParseUpdate reads the body of an update (a single update's body, or one
// item of a bulk update). Each request field is decoded on its own, by its
// exact (case-sensitive) name; unknown members are ignored. A field of the
// wrong JSON type is a Problem (CodeInvalidType, its path as the field)
// and is left empty; a body that is no JSON object is ErrNotObject.
func ParseUpdate(data []byte) (Update, []Problem, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Update{}, nil, fmt.Errorf("%w: %v", ErrNotObject, err)
	}
	if raw == nil {
		return Update{}, nil, fmt.Errorf("%w: null", ErrNotObject)
	}
	var u Update
	var problems []Problem
	for _, f := range catalog.LocationFields {
		value, ok := raw[f.Name]
		if !ok || !f.InRequest() {
			continue
		}
		u.Sent = append(u.Sent, f.Name)
		dst := u.Location.field(f.Name)
		if err := json.Unmarshal(value, dst.Addr().Interface()); err != nil {
			dst.SetZero()
			var we *WeekdayError
			if errors.As(err, &we) {
				problems = append(problems, we.Problem())
				continue
			}
			problems = append(problems, typeProblem(f, err))
		}
	}
	return u, problems, nil
}

// typeProblem describes a decoding error of field f.
func typeProblem(f catalog.LocationField, err error) Problem {
	path, want, got := f.Name, "an "+f.Type.String(), "another value"
	if f.Type == catalog.LString {
		want = "a string"
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		got = te.Value
		if te.Field != "" {
			path += "." + te.Field
			want = jsonKind(te.Type)
		}
	}
	return Problem{Code: CodeInvalidType, Field: path, Message: fmt.Sprintf("%s must be %s, not %s", path, want, got)}
}

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map, reflect.Pointer:
		return "an object"
	}
	return "a " + t.Kind().String()
}

// Has reports whether the update carried the field called name.
func (u Update) Has(name string) bool { return slices.Contains(u.Sent, name) }

// Apply returns cur with the request fields the update sent, and only
// those, replaced by the update's values (the id excepted): a field left
// out keeps its value. cur is not modified and shares nothing with the
// result.
func (u Update) Apply(cur Location) Location {
	out := cur.Clone()
	sent := u.Location.Clone()
	for _, name := range u.Sent {
		if name == "id" {
			continue
		}
		out.field(name).Set(sent.field(name))
	}
	return out
}

// Validate checks an update of the location stored as stored: what the
// location becomes (Apply), with the stored country, against every rule of
// Validate, and the rules that concern the request itself: every required
// field is sent (spec 4.5), and holidayHours are sent only with
// businessHours (spec 2.14: "settable only when businessHours is given").
//
// Only the problems the update is answerable for are reported: those of a
// field it sent, and those of a rule across fields when it sent one of
// them (a ZIP of another state than the region, when it sent the zip or
// the region; holidayHours without businessHours, when it sent either). A
// kept value is not the update's fault: a reopenDate that has passed
// since it was set does not block a new phone. Problems come in the order
// of the fields.
func (u Update) Validate(stored Location, now time.Time) []Problem {
	result := u.Apply(stored)
	result.CountryCode = stored.CountryCode
	var problems []Problem
	for _, p := range Validate(result, now) {
		if u.answerable(p) {
			problems = append(problems, p)
		}
	}
	for _, f := range catalog.LocationFields {
		if f.Use == catalog.UseRequired && !u.Has(f.Name) {
			problems = append(problems, Problem{Code: CodeRequired, Field: f.Name, Message: f.Name + " is required in an update"})
		}
	}
	if len(u.Location.HolidayHours) > 0 && !u.Has("businessHours") && result.BusinessHours != nil {
		problems = append(problems, Problem{Code: CodeHolidayWithoutBusinessHours, Field: "holidayHours", Message: "holidayHours can be set only when businessHours is given in the same update"})
	}
	slices.SortStableFunc(problems, func(a, b Problem) int { return cmp.Compare(fieldRank(a.Field), fieldRank(b.Field)) })
	return problems
}

// crossFields are the fields of the rules across fields, by code.
var crossFields = map[string][]string{
	CodeZipRegionMismatch:           {"zip", "region"},
	CodeHolidayWithoutBusinessHours: {"holidayHours", "businessHours"},
}

// answerable reports whether the update sent a field problem p is about.
func (u Update) answerable(p Problem) bool {
	fields, ok := crossFields[p.Code]
	if !ok {
		name, _, _ := strings.Cut(p.Field, ".")
		fields = []string{name}
	}
	for _, f := range fields {
		if u.Has(f) {
			return true
		}
	}
	return false
}

// fieldRank is the position in catalog.LocationFields of the field a
// problem names ("holidayHours.times" ranks as holidayHours).
func fieldRank(field string) int {
	name, _, _ := strings.Cut(field, ".")
	for i, f := range catalog.LocationFields {
		if f.Name == name {
			return i
		}
	}
	return len(catalog.LocationFields)
}

// field returns the settable value of the field called name (a request
// field of the catalog); it panics for another name, a bug.
func (l *Location) field(name string) reflect.Value {
	v := reflect.ValueOf(l).Elem()
	i, ok := jsonFieldIndex[name]
	if !ok {
		panic("listing: no location field " + name)
	}
	return v.Field(i)
}

// jsonFieldIndex maps the JSON names of Location to its field indexes.
var jsonFieldIndex = func() map[string]int {
	t := reflect.TypeFor[Location]()
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = i
	}
	return m
}()
