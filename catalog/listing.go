package catalog

import (
	"math"
	"net/url"
	"strconv"
	"time"
)

// The listing-management endpoints (spec 2.14, 3, 4.5, 7.1, 8.2 to 8.4):
// their paths, operations, limits, the fields of a location and the codes
// of their answers. They are not Endpoints: they are JSON only, take a
// bearer token, cost no units and land nowhere by themselves, so the
// backlink machinery (All, Lookup, the sandbox's generators) does not see
// them. The rules that use these facts live in package listing.

// The two location path prefixes, used interchangeably (spec 4.5). One bulk
// sample of the spec omits the /apis/v4-raw prefix
// (/listing-management/v1/...); that path is taken for a slip of the
// sample, not a third prefix, and is not listed.
const (
	LocationsPrefix    = "/apis/v4/listing-management/v1/external/locations"
	LocationsRawPrefix = "/apis/v4-raw/listing-management/v1/external/locations"
)

// LocationsPrefixes are both prefixes, the v4 one first.
var LocationsPrefixes = []string{LocationsPrefix, LocationsRawPrefix}

// Bounds and defaults of the listing endpoints.
const (
	// MaxBulkLocations bounds the locations of one Update locations
	// request; their ids must be unique (spec 4.5, 8.2, 8.3).
	MaxBulkLocations = 50
	// DefaultLocationsPage and DefaultLocationsSize are the page (one-based)
	// and page size of Get locations when absent (spec 4.5, 8.4).
	DefaultLocationsPage = 1
	DefaultLocationsSize = 20

	// Field lengths, in characters (spec 2.14, 8.3).
	MaxLocationNameLen          = 125
	MaxCityLen                  = 64
	MaxAddressLen               = 190
	MaxAdditionalAddressInfoLen = 64
	MaxWebsiteURLLen            = 255

	// MaxWeekdayRanges bounds the time ranges of one weekday in
	// businessHours; they must not overlap (spec 2.14, 8.3).
	MaxWeekdayRanges = 2
	// MaxHolidayRanges bounds the time ranges of one holiday entry. The spec
	// names the detail (TIMES_TOO_MANY_RANGES) and says its message "speaks
	// of three"; the provider's published sample reads "Only three time
	// ranges can be set.", so three are allowed and a fourth is too many.
	MaxHolidayRanges = 3
	// ReopenDateBefore is the first date reopenDate may not reach: it must
	// be later than the current date and earlier than this (spec 2.14, 8.3).
	ReopenDateBefore = "2038-01-01"
)

// Values of the listing answers.
const (
	// StatusComplete is the one location status the spec shows; a bulk
	// item whose location has another status fails (spec 2.14, 3).
	StatusComplete = "COMPLETE"
	// StateUpdated and StateFailed are the states of a bulk update item
	// (spec 2.14, 3).
	StateUpdated = "UPDATED"
	StateFailed  = "FAILED"
	// HolidayRange and HolidayClosed are the types of a holiday entry
	// (spec 2.14).
	HolidayRange  = "RANGE"
	HolidayClosed = "CLOSED"
	// TimeLayout is the layout of a time range's from and to: HH:MM on a
	// 24 hour clock (spec 2.14).
	TimeLayout = "15:04"
	// DateLayout is the layout of a holiday's day and of reopenDate:
	// YYYY-MM-DD (spec 2.14).
	DateLayout = "2006-01-02"
)

// Weekdays are the keys of businessHours, in the spec's order (2.14).
var Weekdays = []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

// The names of the request identifier in a listing answer (spec 4.5 rule
// 1): single-location success answers name it "requested", list and bulk
// answers and every error envelope "requestId".
const (
	RequestIDSingle = "requested"
	RequestIDOther  = "requestId"
)

// Error codes (error.code) and detail codes (details[].code) of the listing
// error envelope (spec 7.1).
const (
	CodeResourceNotFound = "RESOURCE_NOT_FOUND"
	CodeValidationError  = "VALIDATION_ERROR"
	CodeBadRequest       = "BAD_REQUEST"

	DetailLocationNotFound             = "LOCATION_NOT_FOUND"
	DetailTimesNotAllowed              = "TIMES_NOT_ALLOWED"
	DetailTimesTooManyRanges           = "TIMES_TOO_MANY_RANGES"
	DetailLocationsAreNotUnique        = "LOCATIONS_ARE_NOT_UNIQUE"
	DetailLocationHasNotCompleteStatus = "LOCATION_HAS_NOT_COMPLETE_STATUS"
)

// ListingError is one row of the spec's table of listing errors (7.1).
type ListingError struct {
	Code   string // error.code
	Detail string // details[].code
	// PerItem is true when the error is reported on one bulk item (the
	// others go on, HTTP 200), false when it answers the whole request.
	PerItem bool
	Doc     string
}

// ListingErrors are the errors of spec 7.1, in its order.
var ListingErrors = []ListingError{
	{CodeResourceNotFound, DetailLocationNotFound, false, "the location id does not exist"},
	{CodeValidationError, DetailTimesNotAllowed, false, "times given on a CLOSED holiday entry"},
	{CodeValidationError, DetailTimesTooManyRanges, false, "too many time ranges on a holiday entry"},
	{CodeBadRequest, DetailLocationsAreNotUnique, false, "a bulk update carries the same id more than once; the whole request is rejected"},
	{CodeBadRequest, DetailLocationHasNotCompleteStatus, true, "the location of a bulk item is not COMPLETE; the item fails, the others go on"},
}

// LocationType is the JSON type of a location field (spec 2.14).
type LocationType int

// The JSON types of location fields.
const (
	LString LocationType = iota + 1
	LObject
	LArray
)

func (t LocationType) String() string {
	switch t {
	case LString:
		return "string"
	case LObject:
		return "object"
	case LArray:
		return "array"
	}
	return "LocationType(?)"
}

// FieldUse says where a location field appears (spec 2.14, "In requests").
type FieldUse int

// The uses of location fields.
const (
	// UseID is the location id: in each bulk item, in answers, never in
	// the body of a single update (its id is in the path).
	UseID FieldUse = iota + 1
	// UseRequired fields must be in every update, single or bulk item
	// (spec 4.5; for bulk items the spec does not show which fields are
	// required, 4.5 rule 4: the same four are assumed).
	UseRequired
	// UseOptional fields may be in an update.
	UseOptional
	// UseResponse fields appear in answers only; an update that carries
	// them has them ignored.
	UseResponse
)

func (u FieldUse) String() string {
	switch u {
	case UseID:
		return "id"
	case UseRequired:
		return "required"
	case UseOptional:
		return "optional"
	case UseResponse:
		return "response only"
	}
	return "FieldUse(?)"
}

// LocationField is one field of a location (spec 2.14).
type LocationField struct {
	Name string // the JSON name, as the spec spells it
	Type LocationType
	Use  FieldUse
	// MaxLen bounds a string in characters (Unicode code points); 0: no
	// bound stated.
	MaxLen int
	Doc    string
}

// InRequest reports whether an update may carry the field (the id only in
// bulk items).
func (f LocationField) InRequest() bool { return f.Use != UseResponse }

// LocationFields are the fields of a location in the spec's order (2.14).
var LocationFields = []LocationField{
	{"id", LString, UseID, 0, "location identifier"},
	{"locationName", LString, UseRequired, MaxLocationNameLen, "business name"},
	{"city", LString, UseRequired, MaxCityLen, "city"},
	{"address", LString, UseRequired, MaxAddressLen, "address line 1"},
	{"additionalAddressInfo", LString, UseOptional, MaxAdditionalAddressInfoLen, "address line 2"},
	{"zip", LString, UseOptional, 0, "postal code; cross-validated with the region in some countries (state and ZIP in the USA)"},
	{"phone", LString, UseRequired, 0, "phone number including the international code"},
	{"region", LString, UseOptional, 0, "highest administrative subdivision (state, province, prefecture; the province in Spain); empty for countries without one"},
	{"websiteUrl", LString, UseOptional, MaxWebsiteURLLen, "website, beginning with http:// or https://"},
	{"businessHours", LObject, UseOptional, 0, "opening hours per weekday, at most two non-overlapping ranges each"},
	{"holidayHours", LArray, UseOptional, 0, "holiday entries overriding the regular hours; only with businessHours"},
	{"reopenDate", LString, UseOptional, 0, "yyyy-mm-dd, after the current date and before 2038-01-01"},
	{"status", LString, UseResponse, 0, "location status (COMPLETE); in single-location answers"},
	{"countryCode", LString, UseResponse, 0, "country code of the location"},
	{"errors", LArray, UseResponse, 0, "listing problems attached to the location ({code, message})"},
}

// LocationFieldByName returns the location field called name.
func LocationFieldByName(name string) (LocationField, bool) {
	for _, f := range LocationFields {
		if f.Name == name {
			return f, true
		}
	}
	return LocationField{}, false
}

// RateLimit is a limit of requests per account (spec 8.2).
type RateLimit struct {
	// Requests may be sent per Per.
	Requests int
	Per      time.Duration
	// Concurrent bounds the requests in flight at once; 0: no bound stated.
	Concurrent int
}

// ListingOperation is one listing-management operation (spec 4.5).
type ListingOperation struct {
	// Name is the operation's name in the spec's tables ("Get location").
	Name   string
	Method string
	// ByID is true when the path ends with the location id
	// ({prefix}/<location_id>); false when it is the prefix itself.
	ByID bool
	// Params are the query parameters (Get locations: page and size).
	Params []Param
	// Body is true when the request carries a JSON body.
	Body bool
	// RequestID names the request identifier in a success answer
	// (RequestIDSingle or RequestIDOther); error envelopes always use
	// RequestIDOther.
	RequestID string
	Rate      RateLimit
	// MaxItems bounds the locations of one request (Update locations); 0
	// when the operation takes none or one.
	MaxItems int
	// Price is what a call costs: nothing (spec 1, 8.1).
	Price Price
	Doc   string
}

// The listing operations (spec 4.5) with their rate limits (8.2).
var (
	GetLocation = &ListingOperation{
		Name: "Get location", Method: "GET", ByID: true,
		RequestID: RequestIDSingle,
		Rate:      RateLimit{Requests: 10, Per: time.Second},
		Price:     Price{0, PerRequest},
		Doc:       "one location, with its status",
	}
	GetLocations = &ListingOperation{
		Name: "Get locations", Method: "GET",
		Params: []Param{
			{Name: "page", Kind: PInt, Default: strconv.Itoa(DefaultLocationsPage), Min: 1, Max: math.MaxInt32, Doc: "page number, one-based (int32)"},
			{Name: "size", Kind: PInt, Default: strconv.Itoa(DefaultLocationsSize), Min: 1, Max: math.MaxInt32, Doc: "locations per page (int32); the upper bound accepted is not shown (spec 8.2)"},
		},
		RequestID: RequestIDOther,
		Rate:      RateLimit{Requests: 10, Per: time.Second},
		Price:     Price{0, PerRequest},
		Doc:       "a page of locations: page, totalElements, totalPages, content (without status)",
	}
	UpdateLocation = &ListingOperation{
		Name: "Update location", Method: "PUT", ByID: true, Body: true,
		RequestID: RequestIDSingle,
		Rate:      RateLimit{Requests: 5, Per: time.Second},
		Price:     Price{0, PerRequest},
		Doc:       "replace the fields of one location; answers the location",
	}
	UpdateLocations = &ListingOperation{
		Name: "Update locations", Method: "PUT", Body: true,
		RequestID: RequestIDOther,
		Rate:      RateLimit{Requests: 5, Per: time.Minute, Concurrent: 1},
		MaxItems:  MaxBulkLocations,
		Price:     Price{0, PerRequest},
		Doc:       "update up to 50 locations of unique ids: {locations: [...]}; one result per item, HTTP 200 even when some FAILED",
	}
)

// ListingOperations returns the operations in the spec's order.
func ListingOperations() []*ListingOperation {
	return []*ListingOperation{GetLocation, GetLocations, UpdateLocation, UpdateLocations}
}

// LocationIDWildcard names the location id in Pattern.
const LocationIDWildcard = "location_id"

// Pattern is the operation's net/http ServeMux pattern under prefix:
// "GET {prefix}/{location_id}" or "PUT {prefix}".
func (o *ListingOperation) Pattern(prefix string) string {
	p := o.Method + " " + prefix
	if o.ByID {
		p += "/{" + LocationIDWildcard + "}"
	}
	return p
}

// Path is the path of a request for the location id under prefix (id is
// ignored unless ByID); the id is escaped as a path segment.
func (o *ListingOperation) Path(prefix, id string) string {
	if !o.ByID {
		return prefix
	}
	return prefix + "/" + url.PathEscape(id)
}

// Param returns the parameter called name.
func (o *ListingOperation) Param(name string) (Param, bool) {
	for _, p := range o.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}
