package locations_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/sandbox/locations"
)

// A bulk update of three items: one of a COMPLETE location, one of
// location 1 (never COMPLETE) and one of an unknown id. Each has its own
// outcome; the first is kept.
func ExampleStore_UpdateMany() {
	s := locations.New(1)
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	const account = "agency-n1500"

	loc, _ := s.Get(account, s.ID(account, 0), now)
	loc.Status, loc.CountryCode, loc.Errors = "", "", nil
	loc.LocationName = "Blue Harbor Bakery"
	inProgress := loc
	inProgress.ID = s.ID(account, 1)
	unknown := loc
	unknown.ID = "00000000000000000000000000000000"
	body, _ := json.Marshal(listing.BulkRequest{Locations: []listing.Location{loc, inProgress, unknown}})

	results, _ := s.UpdateMany(account, body, now)
	for i, r := range results {
		if r.Error != nil {
			fmt.Println(i, r.State, r.Error.Code, r.Error.Details[0].Code)
			continue
		}
		fmt.Println(i, r.State)
	}
	after, _ := s.Get(account, s.ID(account, 0), now)
	fmt.Println(after.LocationName)
	// Output:
	// 0 UPDATED
	// 1 FAILED BAD_REQUEST LOCATION_HAS_NOT_COMPLETE_STATUS
	// 2 FAILED RESOURCE_NOT_FOUND LOCATION_NOT_FOUND
	// Blue Harbor Bakery
}
