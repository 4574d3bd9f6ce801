package listing_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/seoetl/etl/listing"
)

// FuzzDecodeValidate decodes any body as an answer's location and as an
// update, and validates both: nothing panics, a decoded location survives
// its own encoding, and Validate gives every problem a code, a message and
// a field. The corpus starts from the table tests' locations.
func FuzzDecodeValidate(f *testing.F) {
	for _, tt := range validateCases {
		loc := valid()
		tt.change(&loc)
		data, err := json.Marshal(loc)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, int64(0))
	}
	f.Add([]byte(sampleJSON), int64(1))
	f.Add([]byte(`{"businessHours":{"monday":[{"from":9}]},"holidayHours":{}}`), int64(-1))
	f.Add([]byte(`null`), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, shift int64) {
		at := now.Add(time.Duration(shift%(1<<40)) * time.Second)
		var loc listing.Location
		if json.Unmarshal(data, &loc) == nil {
			check(t, listing.Validate(loc, at))
			again, err := json.Marshal(loc)
			if err != nil {
				t.Fatalf("a decoded location does not encode: %v", err)
			}
			var back listing.Location
			if err := json.Unmarshal(again, &back); err != nil {
				t.Fatalf("an encoded location does not decode: %v\n%s", err, again)
			}
			if diff := cmp.Diff(loc, back, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("round trip (-decoded +again):\n%s", diff)
			}
		}
		u, problems, err := listing.ParseUpdate(data)
		if err != nil {
			return
		}
		check(t, problems)
		check(t, u.Validate(loc, at))
		_ = u.Apply(loc)
	})
}

func check(t *testing.T, problems []listing.Problem) {
	t.Helper()
	for _, p := range problems {
		if p.Code == "" || p.Message == "" || p.Field == "" {
			t.Fatalf("incomplete problem %+v", p)
		}
	}
}

// FuzzParseDesired reads any JSON as the hours of a desired location:
// nothing panics, every problem has a code, a message and a field, and
// hours read without a problem read again, encoded, the same and without
// one.
func FuzzParseDesired(f *testing.F) {
	for _, s := range []string{
		`{"monday":[{"from":"09:00","to":"17:00"}]}`, `{"Monday":[{"FROM":"09:00"}]}`, `{"lunes":[]}`,
		`{"monday":[["09:00","17:00"]]}`, `{"monday":{"from":"09:00"}}`, `[]`, `null`, `"9-5"`,
	} {
		f.Add([]byte(s), []byte(`[{"type":"CLOSED","day":"2026-12-25"}]`))
	}
	f.Add([]byte(`{}`), []byte(`[{"type":"RANGE","day":"2026-12-24","times":[{"from":"09:00","until":"12:00"}]}, null, 3]`))
	f.Add([]byte(`{}`), []byte(`{"type":"CLOSED"}`))
	f.Fuzz(func(t *testing.T, hours, holidays []byte) {
		in := map[string]json.RawMessage{"businessHours": hours, "holidayHours": holidays}
		loc, problems := listing.ParseDesired(in)
		check(t, problems)
		if len(problems) > 0 {
			return
		}
		h, err := json.Marshal(loc.BusinessHours)
		if err != nil {
			t.Fatal(err)
		}
		d, err := json.Marshal(loc.HolidayHours)
		if err != nil {
			t.Fatal(err)
		}
		again, problems := listing.ParseDesired(map[string]json.RawMessage{"businessHours": h, "holidayHours": d})
		if len(problems) > 0 {
			t.Fatalf("read again: %v\n%s\n%s", problems, h, d)
		}
		if !listing.Equal(loc, again) {
			t.Fatalf("read again: %v", listing.Diff(loc, again))
		}
	})
}
