package listing_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
)

// sampleJSON is a single-location answer in the shape of the spec's
// (2.14, 4.5): every field, status and errors included.
const sampleJSON = `{
  "data": {
    "id": "3e8d046f62fe4b73802112e138a78532",
    "locationName": "Blue Harbor Bakery",
    "phone": "+12096438343",
    "region": "OH",
    "status": "COMPLETE",
    "websiteUrl": "https://www.blueharbor.example/ashville",
    "zip": "43103",
    "additionalAddressInfo": "3 floor",
    "address": "82 Cromley St",
    "city": "Ashville",
    "countryCode": "US",
    "businessHours": {
      "monday": [{"from": "00:00", "to": "00:00"}],
      "tuesday": [{"from": "13:00", "to": "14:00"}, {"from": "15:00", "to": "01:00"}],
      "wednesday": [{"from": "06:00", "to": "00:00"}],
      "thursday": [{"from": "09:00", "to": "17:00"}],
      "friday": [{"from": "09:00", "to": "17:00"}, {"from": "19:00", "to": "19:30"}],
      "saturday": [{"from": "09:00", "to": "16:00"}, {"from": "17:00", "to": "18:00"}]
    },
    "holidayHours": [
      {"type": "RANGE", "day": "2026-11-26", "times": [{"from": "10:00", "to": "12:00"}, {"from": "13:00", "to": "15:00"}]},
      {"type": "CLOSED", "day": "2026-12-25"}
    ],
    "reopenDate": "2026-04-01",
    "errors": [{"code": "G_020", "message": "Some business information cannot be processed by the directory."}]
  },
  "requested": "api-flb-718c4b47eed5c20965a85df5183fba9a"
}`

func TestDecodeSample(t *testing.T) {
	t.Parallel()
	var body listing.LocationBody
	require.NoError(t, json.Unmarshal([]byte(sampleJSON), &body))
	want := valid()
	want.Errors = []listing.LocationError{{Code: "G_020", Message: "Some business information cannot be processed by the directory."}}
	if diff := cmp.Diff(want, body.Data); diff != "" {
		t.Fatalf("decoded location (-want +got):\n%s", diff)
	}
	require.Equal(t, "api-flb-718c4b47eed5c20965a85df5183fba9a", body.Requested)
	require.Empty(t, listing.Validate(body.Data, now))
}

// TestEncode checks the names and presence of the members: every request
// field always, the id and response fields only when set, closed weekdays
// and a CLOSED holiday's times left out.
func TestEncode(t *testing.T) {
	t.Parallel()
	loc := valid()
	data, err := json.Marshal(loc)
	require.NoError(t, err)
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &members))
	var names []string
	for _, f := range catalog.LocationFields {
		if f.Use == catalog.UseResponse && f.Name == "errors" {
			continue // none on valid()
		}
		names = append(names, f.Name)
	}
	require.ElementsMatch(t, names, keys(members))
	require.NotContains(t, string(members["businessHours"]), "sunday")
	require.Equal(t, `{"type":"CLOSED","day":"2026-12-25"}`, mustMarshal(t, loc.HolidayHours[1]))

	// Page content: no status, no id when empty; request fields present
	// though empty, so an update built from it says what it means.
	data, err = json.Marshal(listing.Location{})
	require.NoError(t, err)
	require.JSONEq(t, `{"locationName":"","city":"","address":"","additionalAddressInfo":"","zip":"","phone":"",
		"region":"","websiteUrl":"","businessHours":null,"holidayHours":null,"reopenDate":""}`, string(data))
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

// TestJSONNames checks that the JSON members of Location are the fields of
// catalog.LocationFields, no more, no fewer.
func TestJSONNames(t *testing.T) {
	t.Parallel()
	var tags []string
	for f := range reflect.TypeFor[listing.Location]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		tags = append(tags, name)
	}
	var names []string
	for _, f := range catalog.LocationFields {
		names = append(names, f.Name)
	}
	require.Equal(t, names, tags)

	var days []string
	for f := range reflect.TypeFor[listing.BusinessHours]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		days = append(days, name)
	}
	require.Equal(t, catalog.Weekdays, days)
}

// TestRequestIDNames checks the bodies against spec 4.5 rule 1 as the
// catalog states it.
func TestRequestIDNames(t *testing.T) {
	t.Parallel()
	tag := func(v any, field string) string {
		f, ok := reflect.TypeOf(v).FieldByName(field)
		require.True(t, ok, field)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		return name
	}
	require.Equal(t, catalog.GetLocation.RequestID, tag(listing.LocationBody{}, "Requested"))
	require.Equal(t, catalog.UpdateLocation.RequestID, tag(listing.LocationBody{}, "Requested"))
	require.Equal(t, catalog.GetLocations.RequestID, tag(listing.PageBody{}, "RequestID"))
	require.Equal(t, catalog.UpdateLocations.RequestID, tag(listing.BulkBody{}, "RequestID"))
	require.Equal(t, catalog.RequestIDOther, tag(listing.ErrorBody{}, "RequestID"))
}

func TestErrorBody(t *testing.T) {
	t.Parallel()
	body := listing.ErrorBody{
		Error: listing.Error{Code: catalog.CodeValidationError, Message: "Invalid data provided.", Details: []listing.Problem{
			{Code: catalog.DetailTimesNotAllowed, Message: "a CLOSED holiday takes no times", Field: "holidayHours.times", Index: "0"},
			{Code: "REQUIRED", Message: "phone is required", Field: "phone"},
		}},
		RequestID: "r1",
	}
	require.JSONEq(t, `{"error":{"code":"VALIDATION_ERROR","message":"Invalid data provided.","details":[
		{"code":"TIMES_NOT_ALLOWED","message":"a CLOSED holiday takes no times","field":"holidayHours.times","index":"0"},
		{"code":"REQUIRED","message":"phone is required","field":"phone"}]},"requestId":"r1"}`, mustMarshal(t, body))
	require.Equal(t, "VALIDATION_ERROR: Invalid data provided. (holidayHours.times[0]: TIMES_NOT_ALLOWED: a CLOSED holiday takes no times; phone: REQUIRED: phone is required)", body.Error.Error())
	require.Equal(t, "RESOURCE_NOT_FOUND: Resource not found.", (&listing.Error{Code: "RESOURCE_NOT_FOUND", Message: "Resource not found."}).Error())

	result := listing.Result{LocationID: "a", State: catalog.StateUpdated}
	require.JSONEq(t, `{"locationId":"a","state":"UPDATED"}`, mustMarshal(t, result))
	require.JSONEq(t, `{"code":429,"message":"slow down"}`, mustMarshal(t, listing.StatusBody{Code: 429, Message: "slow down"}))
	require.JSONEq(t, `{"data":{"page":2,"totalElements":21,"totalPages":2,"content":[]},"requestId":"r"}`,
		mustMarshal(t, listing.PageBody{Data: listing.Page{Page: 2, TotalElements: 21, TotalPages: 2, Content: []listing.Location{}}, RequestID: "r"}))
}

func TestClone(t *testing.T) {
	t.Parallel()
	a := valid()
	a.Errors = []listing.LocationError{{Code: "G_020", Message: "m"}}
	b := a.Clone()
	require.Empty(t, cmp.Diff(a, b))
	b.BusinessHours.Monday[0].From = "01:00"
	b.HolidayHours[0].Times[0].From = "01:00"
	b.HolidayHours[1].Day = "2027-01-01"
	b.Errors[0].Code = "X"
	require.Empty(t, cmp.Diff(valid().BusinessHours, a.BusinessHours))
	require.Empty(t, cmp.Diff(valid().HolidayHours, a.HolidayHours))
	require.Equal(t, "G_020", a.Errors[0].Code)
	require.Empty(t, cmp.Diff(listing.Location{}, listing.Location{}.Clone(), cmpopts.EquateEmpty()))
}

func TestBusinessHoursDay(t *testing.T) {
	t.Parallel()
	var b listing.BusinessHours
	for i, day := range catalog.Weekdays {
		require.True(t, b.SetDay(day, times("09:00-1"+string(rune('0'+i))+":00")))
	}
	require.Equal(t, times("09:00-16:00"), b.Sunday)
	require.Equal(t, times("09:00-10:00"), b.Day("monday"))
	require.False(t, b.SetDay("Monday", nil))
	require.Nil(t, b.Day("holiday"))
}
