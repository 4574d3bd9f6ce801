package locations

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
)

// MaxPageSize is the largest size Get locations accepts. The spec does not
// show the upper bound of size (8.2), and the design notes say a client
// probes it rather than assumes it; the sandbox has one to probe, and
// refuses a larger size with a VALIDATION_ERROR naming the bound rather
// than answering fewer locations than asked.
const MaxPageSize = 100

// Store holds the locations of every account of one sandbox world (one
// seed): the invented ones, and what updates made of them. It is safe for
// concurrent use. Updates live in memory for the life of the Store.
type Store struct {
	seed int64

	mu       sync.Mutex
	accounts map[string]*account
}

// New returns the Store of the world of seed.
func New(seed int64) *Store {
	return &Store{seed: seed, accounts: map[string]*account{}}
}

// account is the locations of one account (an API key or a token's
// account name).
type account struct {
	key             key
	idKey, checkKey uint64
	n               int // locations
	brands          int // 1 to 5 brands the names are made of

	mu sync.RWMutex
	// content is what updates made of a location, by index: its request
	// fields; the id, status, country and errors stay the invented ones.
	content map[int]listing.Location
}

func (s *Store) account(name string) *account {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.accounts[name]; ok {
		return a
	}
	k := newKey(s.seed, "locations", name)
	a := &account{
		key:      k,
		idKey:    k.draw("id"),
		checkKey: k.draw("id-check"),
		n:        count(s.seed, name),
		brands:   int(between(k.draw("brands"), 1, 5)),
		content:  map[int]listing.Location{},
	}
	s.accounts[name] = a
	return a
}

// Count returns how many locations the account owns.
func (s *Store) Count(account string) int { return s.account(account).n }

// ID returns the id of the i-th location of the account (0 <= i < Count):
// the order of Page. Tests use it to address a location without paging.
func (s *Store) ID(account string, i int) string { return s.account(account).id(i) }

// location is the i-th location as it stands on the day of now: the
// invented one with what updates made of its content. The caller holds
// a.mu.
func (a *account) location(i int, now time.Time) listing.Location {
	loc := a.generate(i, now)
	if c, ok := a.content[i]; ok {
		id, status, country, errs := loc.ID, loc.Status, loc.CountryCode, loc.Errors
		loc = c.Clone()
		loc.ID, loc.Status, loc.CountryCode, loc.Errors = id, status, country, errs
	}
	return loc
}

// Messages of the error objects (spec 7.1 shows none).
const (
	msgNotFound   = "Resource not found."
	msgValidation = "Invalid data provided."
	msgBadRequest = "The request cannot be processed."
)

// Detail codes of the sandbox's own refusals, for what the spec does not
// name: a body that is no JSON object (or whose locations are no array), a
// bulk request of no location or of more than 50, a page parameter out of
// its range.
const (
	DetailInvalidBody       = "INVALID_BODY"
	DetailTooManyLocations  = "TOO_MANY_LOCATIONS"
	DetailParameterOutRange = "OUT_OF_RANGE"
)

func notFound(id string) *listing.Error {
	return &listing.Error{Code: catalog.CodeResourceNotFound, Message: msgNotFound, Details: []listing.Problem{
		{Code: catalog.DetailLocationNotFound, Message: fmt.Sprintf("Location %q is not found.", id)},
	}}
}

func notComplete(id, status string) *listing.Error {
	return &listing.Error{Code: catalog.CodeBadRequest, Message: msgBadRequest, Details: []listing.Problem{
		{Code: catalog.DetailLocationHasNotCompleteStatus, Message: fmt.Sprintf("Location %q has status %s, not %s.", id, status, catalog.StatusComplete)},
	}}
}

func invalid(problems []listing.Problem) *listing.Error {
	return &listing.Error{Code: catalog.CodeValidationError, Message: msgValidation, Details: problems}
}

func badBody(detail, field, format string, args ...any) *listing.Error {
	return &listing.Error{Code: catalog.CodeBadRequest, Message: msgBadRequest, Details: []listing.Problem{
		{Code: detail, Message: fmt.Sprintf(format, args...), Field: field},
	}}
}

// InvalidParam is the error of a query parameter of Get locations that is
// not an integer, or out of its range (page at least 1; size 1 to
// MaxPageSize): a VALIDATION_ERROR naming it. The handler answers it for a
// value it cannot parse; Page for one out of range.
func InvalidParam(name, format string, args ...any) *listing.Error {
	return invalid([]listing.Problem{{Code: DetailParameterOutRange, Message: fmt.Sprintf(format, args...), Field: name}})
}

// Status is the HTTP status of an error object. The spec does not show
// them (7.2); the sandbox answers 404 for RESOURCE_NOT_FOUND and 400 for
// VALIDATION_ERROR and BAD_REQUEST, as the provider's current API does.
func Status(e *listing.Error) int {
	if e.Code == catalog.CodeResourceNotFound {
		return http.StatusNotFound
	}
	return http.StatusBadRequest
}

// Get returns the location with id as Get location answers it, with its
// status, on the sandbox day of now (the UTC date).
func (s *Store) Get(account, id string, now time.Time) (listing.Location, *listing.Error) {
	a := s.account(account)
	i, ok := a.index(id)
	if !ok {
		return listing.Location{}, notFound(id)
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.location(i, now), nil
}

// Page returns page (one-based) of size locations as Get locations answers
// it: the locations in the order of their index (the order the account's
// locations were invented in, which updates do not change; the spec does
// not show one, 4.5 rule 6), without their status (spec 4.5), the total
// and the number of pages. A page past the last is empty. page must be at
// least 1 and size 1 to MaxPageSize.
func (s *Store) Page(account string, page, size int, now time.Time) (listing.Page, *listing.Error) {
	switch {
	case page < 1:
		return listing.Page{}, InvalidParam("page", "page must be at least 1, got %d", page)
	case size < 1 || size > MaxPageSize:
		return listing.Page{}, InvalidParam("size", "size must be between 1 and %d, got %d", MaxPageSize, size)
	}
	a := s.account(account)
	p := listing.Page{Page: page, TotalElements: a.n, TotalPages: (a.n + size - 1) / size, Content: []listing.Location{}}
	if page > p.TotalPages {
		return p, nil
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	for i := (page - 1) * size; i < min(page*size, a.n); i++ {
		loc := a.location(i, now)
		loc.Status = ""
		p.Content = append(p.Content, loc)
	}
	return p, nil
}

// UpdateOne applies the body of Update location to the location with id
// and returns it as Get location would (spec 4.5). A field the body leaves
// out keeps its value, an id in the body is ignored (the path names the
// location), and so are status, countryCode and errors.
//
// It answers, in this order: RESOURCE_NOT_FOUND (LOCATION_NOT_FOUND) for
// an unknown id; BAD_REQUEST (INVALID_BODY) for a body that is no JSON
// object; BAD_REQUEST (LOCATION_HAS_NOT_COMPLETE_STATUS) for a location
// that is not COMPLETE, as a bulk item is refused (the spec shows this for
// bulk items only; the sandbox refuses a single update the same way); and
// VALIDATION_ERROR with every problem of listing.Update.Validate, the
// decoding ones first.
func (s *Store) UpdateOne(account, id string, body []byte, now time.Time) (listing.Location, *listing.Error) {
	a := s.account(account)
	i, ok := a.index(id)
	if !ok {
		return listing.Location{}, notFound(id)
	}
	u, problems, err := listing.ParseUpdate(body)
	if err != nil {
		return listing.Location{}, badBody(DetailInvalidBody, "", "The body must be a JSON object of location fields: %v", err)
	}
	problems = slices.DeleteFunc(problems, func(p listing.Problem) bool { return p.Field == "id" })
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.update(i, u, problems, now); e != nil {
		return listing.Location{}, e
	}
	return a.location(i, now), nil
}

// update checks and applies one parsed update to location i; the caller
// holds a.mu for writing.
func (a *account) update(i int, u listing.Update, problems []listing.Problem, now time.Time) *listing.Error {
	cur := a.location(i, now)
	if cur.Status != catalog.StatusComplete {
		return notComplete(cur.ID, cur.Status)
	}
	problems = append(problems, u.Validate(cur, now)...)
	if len(problems) > 0 {
		return invalid(problems)
	}
	next := u.Apply(cur)
	next.ID, next.Status, next.CountryCode, next.Errors = "", "", "", nil
	a.content[i] = next
	return nil
}

// UpdateMany applies the body of Update locations, {"locations": [...]},
// and returns one result per item, in the order of the items (spec 3, 4.5).
//
// The whole request is refused, nothing updated, when the body is no JSON
// object or its locations no array (BAD_REQUEST, INVALID_BODY), when it
// holds no location or more than 50 (BAD_REQUEST, REQUIRED or
// TOO_MANY_LOCATIONS, field locations), or when an id appears in more than
// one item (BAD_REQUEST, LOCATIONS_ARE_NOT_UNIQUE, one detail per id
// repeated). Otherwise every item has its own outcome, and one item's
// failure does not stop the others (spec 4.5 rule 2):
//
//   - FAILED with VALIDATION_ERROR when the item is no JSON object, has no
//     id (REQUIRED, field id) or an id that is no string (INVALID_TYPE);
//   - FAILED with RESOURCE_NOT_FOUND (LOCATION_NOT_FOUND) for an unknown id;
//   - FAILED with BAD_REQUEST (LOCATION_HAS_NOT_COMPLETE_STATUS) when the
//     location is not COMPLETE;
//   - FAILED with VALIDATION_ERROR and every problem when its data are
//     invalid (the spec shows the outcome of valid data only: "location has
//     status COMPLETE and data valid", 3; an invalid item fails alone, as
//     rule 2 says of any failure);
//   - UPDATED otherwise, the update kept and visible to later reads.
//
// The request is applied as a whole under the account's lock: no read sees
// half of it.
func (s *Store) UpdateMany(account string, body []byte, now time.Time) ([]listing.Result, *listing.Error) {
	var req struct {
		Locations *[]json.RawMessage `json:"locations"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badBody(DetailInvalidBody, "", "The body must be a JSON object {\"locations\": [...]}: %v", err)
	}
	if req.Locations == nil || len(*req.Locations) == 0 {
		return nil, badBody(listing.CodeRequired, "locations", "locations must hold 1 to %d locations", catalog.MaxBulkLocations)
	}
	items := *req.Locations
	if len(items) > catalog.MaxBulkLocations {
		return nil, badBody(DetailTooManyLocations, "locations", "locations holds %d locations; at most %d are allowed", len(items), catalog.MaxBulkLocations)
	}

	type parsed struct {
		u        listing.Update
		problems []listing.Problem
		err      error
	}
	ps := make([]parsed, len(items))
	seen := map[string]int{}
	var repeated []string
	for j, raw := range items {
		u, problems, err := listing.ParseUpdate(raw)
		ps[j] = parsed{u, problems, err}
		if err != nil || u.Location.ID == "" {
			continue
		}
		if seen[u.Location.ID]++; seen[u.Location.ID] == 2 {
			repeated = append(repeated, u.Location.ID)
		}
	}
	if len(repeated) > 0 {
		e := &listing.Error{Code: catalog.CodeBadRequest, Message: msgBadRequest}
		for _, id := range repeated {
			e.Details = append(e.Details, listing.Problem{
				Code:    catalog.DetailLocationsAreNotUnique,
				Message: fmt.Sprintf("The locations are not unique: %d locations have the id %s.", seen[id], id),
			})
		}
		return nil, e
	}

	a := s.account(account)
	a.mu.Lock()
	defer a.mu.Unlock()
	results := make([]listing.Result, len(items))
	for j, p := range ps {
		id := p.u.Location.ID
		results[j] = listing.Result{LocationID: id, State: catalog.StateFailed}
		var e *listing.Error
		switch {
		case p.err != nil:
			e = invalid([]listing.Problem{{Code: listing.CodeInvalidType, Message: "a location must be a JSON object", Field: "locations", Index: fmt.Sprint(j)}})
		case hasField(p.problems, "id"):
			e = invalid(p.problems)
		case strings.TrimSpace(id) == "":
			e = invalid([]listing.Problem{{Code: listing.CodeRequired, Message: "id is required in each location of a bulk update", Field: "id"}})
		default:
			if i, ok := a.index(id); !ok {
				e = notFound(id)
			} else {
				e = a.update(i, p.u, p.problems, now)
			}
		}
		if e != nil {
			results[j].Error = e
			continue
		}
		results[j].State = catalog.StateUpdated
	}
	return results, nil
}

func hasField(problems []listing.Problem, field string) bool {
	for _, p := range problems {
		if p.Field == field {
			return true
		}
	}
	return false
}
