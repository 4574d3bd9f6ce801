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
