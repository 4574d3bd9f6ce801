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
		name  string
		edit  func(m map[string]json.RawMessage)
		field string
		code  string
	}{
		{"good", func(map[string]json.RawMessage) {}, "", ""},
		{"hours not json", func(m map[string]json.RawMessage) { m["businessHours"] = json.RawMessage(`{monday:`) }, "businessHours", listing.CodeInvalidType},
		{"hours a string", func(m map[string]json.RawMessage) { m["businessHours"] = str("9-5") }, "businessHours", listing.CodeInvalidType},
		{"weekday misspelt", func(m map[string]json.RawMessage) {
			m["businessHours"] = json.RawMessage(`{"lunes":[{"from":"09:00","to":"17:00"}]}`)
		}, "businessHours.lunes", listing.CodeUnknownField},
		{"range member", func(m map[string]json.RawMessage) {
			m["businessHours"] = json.RawMessage(`{"monday":[{"start":"09:00","to":"17:00"}]}`)
		}, "businessHours.start", listing.CodeUnknownField},
		{"holidays an object", func(m map[string]json.RawMessage) { m["holidayHours"] = json.RawMessage(`{}`) }, "holidayHours", listing.CodeInvalidType},
		{"holiday member", func(m map[string]json.RawMessage) {
			m["holidayHours"] = json.RawMessage(`[{"type":"CLOSED","day":"2026-12-25","note":"x"}]`)
		}, "holidayHours.note", listing.CodeUnknownField},
		{"phone a number", func(m map[string]json.RawMessage) { m["phone"] = json.RawMessage(`15125550100`) }, "phone", listing.CodeInvalidType},
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
			require.NotEmpty(t, problems[0].Message)
		})
	}
}
