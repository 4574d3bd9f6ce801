package listing_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/listing"
)

func TestParseDesired(t *testing.T) {
	t.Parallel()
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	base := func() map[string]json.RawMessage {
		return map[string]json.RawMessage{
			"id": str("a1"), "locationName": str("Shop"), "city": str("Austin"), "address": str("1 Main St"),
			"phone": str("+1 512 555 0100"), "zip": json.RawMessage("null"),
			"businessHours": json.RawMessage(`{"monday":[{"from":"09:00","to":"17:00"}]}`),
			"holidayHours":  json.RawMessage(`[{"type":"CLOSED","day":"2026-12-25"}]`),
		}
	}
	for _, tc := range []struct {
		name         string
		edit         func(m map[string]json.RawMessage)
		field        string
		code         string
		index, words string // the problem's index; words its message holds
	}{
		{"good", func(map[string]json.RawMessage) {}, "", "", "", ""},
		{"hours not json", func(m map[string]json.RawMessage) { m["businessHours"] = json.RawMessage(`{monday:`) }, "businessHours", listing.CodeInvalidType, "", ""},
		{"hours a string", func(m map[string]json.RawMessage) { m["businessHours"] = str("9-5") }, "businessHours", listing.CodeInvalidType, "", ""},
		{"weekday misspelt", func(m map[string]json.RawMessage) {
			m["businessHours"] = json.RawMessage(`{"lunes":[{"from":"09:00","to":"17:00"}]}`)
		}, "businessHours.lunes", listing.CodeUnknownField, "", `businessHours has no member "lunes"`},
		// Where a problem within the hours is: the weekday or the
		// holiday's member, and the position of the range or entry (it
		// named a member of a range as a weekday, businessHours.start,
		// and gave no position).
		{"range member", func(m map[string]json.RawMessage) {
			m["businessHours"] = json.RawMessage(`{"monday":[{"from":"09:00","to":"12:00"},{"start":"13:00","to":"17:00"}]}`)
		}, "businessHours.monday", listing.CodeUnknownField, "1", `monday range 1 has no member "start"`},
		{"range an array", func(m map[string]json.RawMessage) {
			m["businessHours"] = json.RawMessage(`{"monday":[["09:00","17:00"]]}`)
		}, "businessHours.monday", listing.CodeInvalidType, "0", `monday range 0 must be an object {"from": "HH:MM", "to": "HH:MM"}, not an array`},
		{"weekday an object", func(m map[string]json.RawMessage) {
			m["businessHours"] = json.RawMessage(`{"monday":{"from":"09:00","to":"17:00"}}`)
		}, "businessHours.monday", listing.CodeInvalidType, "", "must be an array of ranges"},
		{"time a number", func(m map[string]json.RawMessage) {
			m["businessHours"] = json.RawMessage(`{"friday":[{"from":900,"to":"17:00"}]}`)
		}, "businessHours.friday", listing.CodeInvalidType, "0", "friday range 0: from must be a string HH:MM, not a number"},
		// The spec spells the weekdays in lower case; "Monday" was taken
		// for monday (issue 28). The members of a range still match in
		// any case.
		{"weekday in capitals", func(m map[string]json.RawMessage) {
			m["businessHours"] = json.RawMessage(`{"Monday":[{"FROM":"09:00","To":"17:00"}]}`)
		}, "businessHours.Monday", listing.CodeUnknownField, "", `businessHours has no member "Monday": its keys are monday, tuesday, wednesday, thursday, friday, saturday, sunday, in lower case ("monday")`},
		{"range members in capitals", func(m map[string]json.RawMessage) {
			m["businessHours"] = json.RawMessage(`{"monday":[{"FROM":"09:00","To":"17:00"}]}`)
		}, "", "", "", ""},
		{"holidays an object", func(m map[string]json.RawMessage) { m["holidayHours"] = json.RawMessage(`{}`) }, "holidayHours", listing.CodeInvalidType, "", ""},
		{"holiday member", func(m map[string]json.RawMessage) {
			m["holidayHours"] = json.RawMessage(`[{"type":"CLOSED","day":"2026-12-25","note":"x"}]`)
		}, "holidayHours.note", listing.CodeUnknownField, "0", `holiday entry 0 has no member "note"`},
		{"holiday times a string", func(m map[string]json.RawMessage) {
			m["holidayHours"] = json.RawMessage(`[{"type":"CLOSED","day":"2026-12-25"},{"type":"RANGE","day":"2026-12-24","times":"09:00-12:00"}]`)
		}, "holidayHours.times", listing.CodeInvalidType, "1", "holiday entry 1: times must be an array of ranges"},
		{"holiday range member", func(m map[string]json.RawMessage) {
			m["holidayHours"] = json.RawMessage(`[{"type":"RANGE","day":"2026-12-24","times":[{"from":"09:00","until":"12:00"}]}]`)
		}, "holidayHours.times", listing.CodeUnknownField, "0", `holiday entry 0 range 0 has no member "until"`},
		{"holiday an array", func(m map[string]json.RawMessage) {
			m["holidayHours"] = json.RawMessage(`[["CLOSED","2026-12-25"]]`)
		}, "holidayHours", listing.CodeInvalidType, "0", "holiday entry 0 must be an object"},
		{"phone a number", func(m map[string]json.RawMessage) { m["phone"] = json.RawMessage(`15125550100`) }, "phone", listing.CodeInvalidType, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := base()
			tc.edit(m)
			loc, problems := listing.ParseDesired(m)
			require.Equal(t, "a1", loc.ID)
			if tc.code == "" {
				require.Empty(t, problems)
				require.Equal(t, "Shop", loc.LocationName)
				require.Len(t, loc.BusinessHours.Monday, 1)
				return
			}
			require.Len(t, problems, 1, "%v", problems)
			require.Equal(t, tc.code, problems[0].Code)
			require.Equal(t, tc.field, problems[0].Field)
			require.Equal(t, tc.index, problems[0].Index)
			require.NotEmpty(t, problems[0].Message)
			require.Contains(t, problems[0].Message, tc.words)
		})
	}
}
