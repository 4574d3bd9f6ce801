package listing_test

import (
	"fmt"
	"time"

	"github.com/seoetl/etl/listing"
)

// A push compares the desired state of a location with the one last
// pulled, field by field; the order of ranges and holiday entries does not
// count.
func ExampleDiff() {
	current := listing.Location{
		ID: "a1", LocationName: "Blue Harbor Bakery", City: "Ashville", Address: "82 Cromley St", Phone: "+12096438343",
		BusinessHours: &listing.BusinessHours{
			Friday: []listing.TimeRange{{From: "09:00", To: "12:00"}, {From: "13:00", To: "17:00"}},
		},
	}
	desired := current.Clone()
	desired.Phone = "+1 209 643 8344"
	desired.BusinessHours.Friday = []listing.TimeRange{{From: "13:00", To: "17:00"}, {From: "09:00", To: "12:00"}}
	desired.HolidayHours = []listing.HolidayHours{{Type: "CLOSED", Day: "2026-12-25"}}
	for _, c := range listing.Diff(current, desired) {
		fmt.Printf("%s: %s -> %s\n", c.Field, c.From, c.To)
	}
	// Output:
	// phone: +12096438343 -> +1 209 643 8344
	// holidayHours: [] -> [{"type":"CLOSED","day":"2026-12-25"}]
}

// Before sending, the push refuses locally what the provider would
// refuse.
func ExampleCheck() {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	current := listing.Location{
		ID: "a1", LocationName: "Blue Harbor Bakery", City: "Ashville", Address: "82 Cromley St", Phone: "+12096438343",
		CountryCode: "US", Status: "IN_PROGRESS",
	}
	desired := current
	desired.Phone = "209 643 8344"
	for _, p := range listing.Check(desired, &current, now) {
		fmt.Println(p)
	}
	unknown := desired
	unknown.ID = "b2"
	fmt.Println(listing.Check(unknown, nil, now)[0])
	// Output:
	// phone: INVALID_PHONE: phone "209 643 8344" must include the international code: a leading + and 7 to 15 digits (spaces, -, ., ( and ) may separate them)
	// status: LOCATION_HAS_NOT_COMPLETE_STATUS: the location's status was IN_PROGRESS, not COMPLETE, when last read; the provider fails the update of a location that is not COMPLETE
	// id: UNKNOWN_LOCATION: location "b2" is not among the pulled locations; pull the account's listings, then push again
}

// A dry run shows the plan: 312 changed locations go in five bulk
// requests at once and 62 single updates beside them.
func ExamplePlanPush() {
	ids := make([]string, 312)
	for i := range ids {
		ids[i] = fmt.Sprintf("loc-%03d", i)
	}
	p, err := listing.PlanPush(ids, listing.PlanOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Describe())
	fmt.Println(p.Bulk[4][49], p.Single[0], p.SingleAt[61].Round(time.Millisecond))
	// Output:
	// 312 locations in 67 requests: 5 bulk requests (250 locations) and 62 single updates, the last going out 12.6s after the first (paced 5% under the rate limits, answers assumed instantaneous).
	// 312 locations: bulk alone takes 7 requests, the last sent after 1m3.2s (5 a minute, one at a time); sending the last 62 singly (5 a second) beside 5 bulk requests sends the last after 12.6s, 50.5s sooner, for 60 more requests.
	// loc-249 loc-250 12.632s
}
