package listing

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seoetl/etl/catalog"
)

// What the push sends, and what it refuses to send.
//
// The push sends the whole desired location whenever any field changed:
// the spec does not say whether a field an update leaves out is kept or
// cleared (4.5 rule 5), so every request field goes out, empty ones
// included (Location's encoding writes them), and the answer means the
// same under either reading.

// CodeUnknownLocation is the detail code of Check for a desired location
// whose id is not among the locations pulled from the provider. It is
// this package's, not the provider's (whose answer would be
// RESOURCE_NOT_FOUND with LOCATION_NOT_FOUND, or a FAILED bulk item): the
// push does not spend a request on an id it has never seen; a pull that
// finds the location lets the next push send it.
const CodeUnknownLocation = "UNKNOWN_LOCATION"

// requestFields are the names of the request fields, the id included, in
// the catalog's order: what a bulk item of the push carries.
var requestFields = func() []string {
	var names []string
	for _, f := range catalog.LocationFields {
		if f.InRequest() {
			names = append(names, f.Name)
		}
	}
	return names
}()

// UpdateItem returns the bulk item the push sends for desired: a copy of
// it with its id and every request field, the response-only fields
// (status, countryCode, errors) cleared so that the encoding leaves them
// out. Encoded, it carries every request field, empty ones as "" or null.
func UpdateItem(desired Location) Location {
	item := desired.Clone()
	item.Status, item.CountryCode, item.Errors = "", "", nil
	return item
}

// UpdateBody returns the body of a single update (Update location) the
// push sends for desired: UpdateItem without the id, which the path
// carries (spec 4.5).
func UpdateBody(desired Location) Location {
	body := UpdateItem(desired)
	body.ID = ""
	return body
}

// NewBulkRequest returns the body of an Update locations request carrying
// UpdateItem of each location, in order. It refuses what the provider
// would refuse as a whole (spec 4.5, 7.1): no locations, more than
// catalog.MaxBulkLocations, an empty id, or an id twice (the provider's
// LOCATIONS_ARE_NOT_UNIQUE). PlanPush's bulk requests pass.
func NewBulkRequest(locations []Location) (BulkRequest, error) {
	if len(locations) == 0 {
		return BulkRequest{}, fmt.Errorf("a bulk update needs at least one location")
	}
	if len(locations) > catalog.MaxBulkLocations {
		return BulkRequest{}, fmt.Errorf("a bulk update carries at most %d locations, got %d", catalog.MaxBulkLocations, len(locations))
	}
	seen := make(map[string]int, len(locations))
	req := BulkRequest{Locations: make([]Location, len(locations))}
	for i, l := range locations {
		if strings.TrimSpace(l.ID) == "" {
			return BulkRequest{}, fmt.Errorf("location %d of a bulk update has no id", i)
		}
		if j, ok := seen[l.ID]; ok {
			return BulkRequest{}, fmt.Errorf("locations %d and %d of a bulk update have the same id %q; the provider refuses the whole request (%s)", j, i, l.ID, catalog.DetailLocationsAreNotUnique)
		}
		seen[l.ID] = i
		req.Locations[i] = UpdateItem(l)
	}
	return req, nil
}

// Check returns why the push must not send desired, or nil: what the
// provider would refuse, found locally so that no request is spent on it.
// current is the location of desired's id as last pulled (its content,
// country and, when a single get read it, status), nil when no pull has
// seen the id. The problems, in the order of the fields:
//
//   - the id: empty (CodeRequired), or not among the pulled locations
//     (CodeUnknownLocation);
//   - every problem of Validate, through Update.Validate, of the location
//     as it would be after the update: the push sends every request field
//     (UpdateItem), so that is desired's content with current's country
//     (countryCode is response only; without current the country's rules
//     are skipped);
//   - status: a current status that is known and not COMPLETE
//     (catalog.DetailLocationHasNotCompleteStatus, as the provider
//     reports it on a FAILED bulk item, spec 3). The status comes from a
//     single get (pages carry none) and may be stale: a location that has
//     become COMPLETE since is refused until the next read, and one that
//     has stopped being COMPLETE is sent, so the push still handles a
//     FAILED item with that detail. An empty status is unknown, not
//     refused.
//
// Check panics when current is a location of another id: a bug of the
// caller, which pairs them by id.
func Check(desired Location, current *Location, now time.Time) []Problem {
	var problems []Problem
	var stored Location
	switch {
	case strings.TrimSpace(desired.ID) == "":
		problems = append(problems, Problem{Code: CodeRequired, Field: "id", Message: "id is required: the push sends a location by its id"})
	case current == nil:
		problems = append(problems, Problem{Code: CodeUnknownLocation, Field: "id", Message: fmt.Sprintf("location %q is not among the pulled locations; pull the account's listings, then push again", desired.ID)})
	}
	if current != nil {
		if current.ID != desired.ID {
			panic(fmt.Sprintf("listing: Check of location %q against the pulled location %q", desired.ID, current.ID))
		}
		stored = *current
	}
	u := Update{Location: UpdateItem(desired), Sent: requestFields}
	problems = append(problems, u.Validate(stored, now)...)
	if current != nil && current.Status != "" && current.Status != catalog.StatusComplete {
		problems = append(problems, Problem{
			Code:    catalog.DetailLocationHasNotCompleteStatus,
			Field:   "status",
			Message: fmt.Sprintf("the location's status was %s, not %s, when last read; the provider fails the update of a location that is not %[2]s", current.Status, catalog.StatusComplete),
		})
	}
	slices.SortStableFunc(problems, func(a, b Problem) int { return cmp.Compare(fieldRank(a.Field), fieldRank(b.Field)) })
	return problems
}
