package listing

import (
	"fmt"
	"strings"
)

// The bodies of the listing endpoints (spec 4.5, 7), shared by the sandbox
// that writes them and the client that reads them. A test checks that the
// names of their request identifiers are the catalog's.

// LocationBody answers Get location and Update location: the location and
// the request identifier, named "requested" in single-location answers.
type LocationBody struct {
	Data      Location `json:"data"`
	Requested string   `json:"requested"`
}

// Page is a page of locations. Page is one-based; the content carries no
// status (spec 2.14, 4.5).
type Page struct {
	Page          int        `json:"page"`
	TotalElements int        `json:"totalElements"`
	TotalPages    int        `json:"totalPages"`
	Content       []Location `json:"content"`
}

// PageBody answers Get locations.
type PageBody struct {
	Data      Page   `json:"data"`
	RequestID string `json:"requestId"`
}

// BulkRequest is the body of Update locations: up to 50 locations, each
// with its id, the ids unique (spec 4.5).
type BulkRequest struct {
	Locations []Location `json:"locations"`
}

// Result is the outcome of one item of a bulk update: UPDATED, or FAILED
// with the error (spec 2.14, 3).
type Result struct {
	LocationID string `json:"locationId"`
	State      string `json:"state"`
	Error      *Error `json:"error,omitempty"`
}

// BulkBody answers Update locations, HTTP 200 even when items FAILED.
type BulkBody struct {
	Data      []Result `json:"data"`
	RequestID string   `json:"requestId"`
}

// Error is the error object of the listing endpoints (spec 7.1): a code
// (RESOURCE_NOT_FOUND, VALIDATION_ERROR, BAD_REQUEST), a message and the
// details, each a Problem. It is also the error of a FAILED bulk item.
type Error struct {
	Code    string    `json:"code"`
	Message string    `json:"message"`
	Details []Problem `json:"details"`
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Code, e.Message)
	for i, d := range e.Details {
		if i == 0 {
			b.WriteString(" (")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(d.String())
	}
	if len(e.Details) > 0 {
		b.WriteString(")")
	}
	return b.String()
}

// ErrorBody is the error envelope of the listing endpoints (spec 7.1).
type ErrorBody struct {
	Error     Error  `json:"error"`
	RequestID string `json:"requestId"`
}

// StatusBody is the body of a 401 (missing or invalid credentials) or a 429
// (a rate limit passed) of the listing endpoints: {code: 401, message}
// (spec 7.2).
type StatusBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}
