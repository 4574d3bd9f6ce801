package listing_test

import (
	"fmt"
	"time"

	"github.com/seoetl/etl/listing"
)

// A location is checked locally before an update is sent: each problem
// names its field and, in an array, its position, as the details of the
// service's VALIDATION_ERROR do.
func ExampleValidate() {
	loc := listing.Location{
		LocationName: "Blue Harbor Bakery",
		City:         "Zürich",
		Address:      "Bahnhofstrasse 1",
		Zip:          "8001",
		Phone:        "044 668 18 00",
		Region:       "Zürich",
		CountryCode:  "CH",
		BusinessHours: &listing.BusinessHours{
			Friday: []listing.TimeRange{{From: "18:00", To: "02:00"}, {From: "20:00", To: "23:00"}},
		},
		HolidayHours: []listing.HolidayHours{
			{Type: "CLOSED", Day: "2026-12-25", Times: []listing.TimeRange{{From: "10:00", To: "12:00"}}},
		},
	}
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, p := range listing.Validate(loc, now) {
		fmt.Println(p)
	}
	// Output:
	// phone: INVALID_PHONE: phone "044 668 18 00" must include the international code: a leading + and 7 to 15 digits (spaces, -, ., ( and ) may separate them)
	// region: REGION_NOT_ALLOWED: region must be left empty for CH, whose addresses have no administrative area; got "Zürich"
	// businessHours.friday[1]: RANGES_OVERLAP: friday range 1: 20:00-23:00 overlaps range 0, 18:00-02:00
	// holidayHours.times[0]: TIMES_NOT_ALLOWED: holiday entry 0 is CLOSED: times must not be set
}
