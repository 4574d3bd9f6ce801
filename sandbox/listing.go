package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/sandbox/locations"
)

// This file serves the listing-management endpoints (spec 4.5) under both
// of catalog.LocationsPrefixes: the HTTP side of package locations, which
// owns the data and the semantics of every operation. Here: routing,
// bearer authentication, the Local Pro plan, the rate limits of spec 8.2
// (listing_limits.go), faults, the request ids and the bodies of spec 4.5,
// 7.1 and 7.2. These requests never touch Usage: they cost no units (spec
// 8.1) and are not counted as requests of the key.

// Codes of the listing answers the spec does not show (7.1 lists the
// codes of the data's errors only). The HTTP statuses of the spec's codes
// are locations.Status's.
const (
	// CodeForbidden with detail DetailLocalProRequired answers 403 to a
	// request whose account lacks the Local Pro plan (Config.NoLocalPro),
	// in the error envelope of spec 7.1.
	CodeForbidden          = "FORBIDDEN"
	DetailLocalProRequired = "LOCAL_PRO_PLAN_REQUIRED"
	// CodeMethodNotAllowed answers 405, with the Allow header, to a method
	// the path does not serve (GET and PUT on both paths).
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	// DetailUnsupportedMediaType (error.code BAD_REQUEST) answers 415 to
	// an update whose Content-Type is not application/json (spec 4.5:
	// "Request bodies are JSON with header Content-Type:
	// application/json").
	DetailUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	// DetailBodyTooLarge (error.code BAD_REQUEST) answers 413 to an update
	// whose body passes MaxListingBody.
	DetailBodyTooLarge = "BODY_TOO_LARGE"
	// DetailBodyTimeout (error.code BAD_REQUEST) answers 408 to an update
	// whose body was not read within Config.BodyTimeout.
	DetailBodyTimeout = "BODY_TIMEOUT"
)

// MaxListingBody bounds the body of an update, in bytes: 50 locations
// with every field at its longest and a few dozen holidays each stay far
// below; a location with a holiday for every day of decades does not (the
// spec bounds neither), and the push then sends the others of its bulk
// request singly.
const MaxListingBody = 1 << 20

// isListingPath reports whether path is under a location prefix: the path
// of a listing endpoint, or one the listing endpoints answer 404.
func isListingPath(path string) bool {
	for _, p := range catalog.LocationsPrefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// matchLocation reads the path of r: the location prefix alone (byID
// false), or the prefix and one path segment, the location id, unescaped.
// ok is false for any other path under a prefix ("{prefix}/",
// "{prefix}/a/b").
func matchLocation(r *http.Request) (id string, byID, ok bool) {
	path := r.URL.EscapedPath()
	for _, p := range catalog.LocationsPrefixes {
		if path == p {
			return "", false, true
		}
		rest, found := strings.CutPrefix(path, p+"/")
		if !found {
			continue
		}
		if rest == "" || strings.Contains(rest, "/") {
			return "", false, false
		}
		id, err := url.PathUnescape(rest)
		return id, true, err == nil
	}
	return "", false, false
}

// listingOperation is the operation of method on the path (with an id or
// not), nil when the path does not serve the method.
func listingOperation(method string, byID bool) *catalog.ListingOperation {
	for _, op := range catalog.ListingOperations() {
		if op.Method == method && op.ByID == byID {
			return op
		}
	}
	return nil
}

// allowedMethods is the Allow header of a path (with an id or not).
func allowedMethods(byID bool) string {
	var methods []string
	for _, op := range catalog.ListingOperations() {
		if op.ByID == byID {
			methods = append(methods, op.Method)
		}
	}
	return strings.Join(methods, ", ")
}

// serveListing answers a request under a location prefix. A request meets,
// in this order: the path and method (404 and 405 in the envelope of spec
// 7.1); a bearer token (401 with {code: 401, message}, spec 7.2); the
// Local Pro plan (403 in the envelope of 7.1, the sandbox's choice); the
// rate limits of spec 8.2 (429 with {code: 429, message}); the form of the
// request (page and size; an update's Content-Type and body); the faults
// of Config.Faults; and the operation itself (package locations), with
// its answer or its error object in the envelope of 7.1.
//
// Faults are drawn once the request is admitted and well formed, before
// the operation: an injected 429, 500 or 503 (with {code, message}) is
// answered instead of it, so an update that meets one was not applied and
// a retry is safe. A cut breaks the body of a successful Get location or
// Get locations only; an update's answer is never cut, so a client never
// has to guess whether an update it sent was applied.
func (s *Server) serveListing(w http.ResponseWriter, r *http.Request, c clock, _ string) outcome {
	rid := s.listingRequestID(r, c)
	w.Header().Set("X-Request-Id", rid)
	op, id, o, ok := listingRoute(w, r, rid)
	if !ok {
		return o
	}
	account, release, o, ok := s.admitListing(w, r, c, op, rid, o)
	if !ok {
		return o
	}
	defer release()
	if s.hooks.listingAdmitted != nil {
		s.hooks.listingAdmitted(r.Context(), op.Name, account)
	}
	form, status, e := readListingForm(w, r, op, s.bodyTimeout)
	if e != nil {
		return writeListingError(w, rid, status, e, o)
	}
	p, o, ok := s.listingFaults(w, r, op, account, o)
	if !ok {
		return o
	}
	// An error answer carries the slow fault alone; a body the cut too.
	faultsOf := func(data bool) string {
		f := p.header(data, 0)
		if f != "" {
			w.Header().Set(faultHeader, f)
		}
		return f
	}
	answer, rows, e := s.doListing(op, account, id, form, rid, c.now)
	if e != nil {
		o.faults = faultsOf(false)
		return writeListingError(w, rid, locations.Status(e), e, o)
	}
	o.rows = rows
	o.faults = faultsOf(true)
	return writeListingAnswer(w, rid, answer, p, o)
}

// listingRoute finds the operation of r's path and method, and the
// location id of the path. A path no operation serves is answered 404, a
// method it does not serve 405, and ok is false; else o is the outcome
// of the operation, to be filled.
func listingRoute(w http.ResponseWriter, r *http.Request, rid string) (op *catalog.ListingOperation, id string, o outcome, ok bool) {
	id, byID, ok := matchLocation(r)
	if !ok {
		return nil, "", writeListingError(w, rid, http.StatusNotFound, &listing.Error{Code: catalog.CodeResourceNotFound,
			Message: fmt.Sprintf("No endpoint at %s.", r.URL.Path), Details: []listing.Problem{}}, outcome{requestID: rid}), false
	}
	op = listingOperation(r.Method, byID)
	if op == nil {
		w.Header().Set("Allow", allowedMethods(byID))
		return nil, "", writeListingError(w, rid, http.StatusMethodNotAllowed, &listing.Error{Code: CodeMethodNotAllowed,
			Message: fmt.Sprintf("Method %s is not allowed here; use %s.", r.Method, allowedMethods(byID)), Details: []listing.Problem{}}, outcome{requestID: rid}), false
	}
	return op, id, outcome{endpoint: op.Name, requestID: rid}, true
}

// admitListing admits a request of op: its bearer token names the
// account, which must have the Local Pro plan and room under the rate
// limits of spec 8.2. release ends the admission. A request refused is
// answered (401, 403 or 429), and ok is false with its outcome o.
func (s *Server) admitListing(w http.ResponseWriter, r *http.Request, c clock, op *catalog.ListingOperation, rid string, o outcome) (account string, release func(), _ outcome, ok bool) {
	account, reason := s.bearerAccount(r, c)
	if account == "" {
		challenge := `Bearer realm="sandbox"`
		if r.Header.Get("Authorization") != "" {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		return "", nil, writeStatusBody(w, http.StatusUnauthorized, reason, o), false
	}
	if s.noLocalPro[account] {
		return "", nil, writeListingError(w, rid, http.StatusForbidden, &listing.Error{Code: CodeForbidden,
			Message: "The listing management API requires the Local Pro plan.",
			Details: []listing.Problem{{Code: DetailLocalProRequired, Message: "The account of this token does not have the Local Pro plan."}}}, o), false
	}
	release, refused := s.listingRates.admit(account, op, s.wall())
	if refused != "" {
		return "", nil, writeStatusBody(w, http.StatusTooManyRequests, refused, o), false
	}
	return account, release, o, true
}

// listingForm is what a listing request carries besides its path: the
// page and size of Get locations (the defaults for the other operations)
// and the body of an update.
type listingForm struct {
	page, size int
	body       []byte
}

// readListingForm reads the form of a request of op. When it is
// malformed, e is the error object to answer with status.
func readListingForm(w http.ResponseWriter, r *http.Request, op *catalog.ListingOperation, bodyTimeout time.Duration) (f listingForm, status int, e *listing.Error) {
	f.page, f.size = catalog.DefaultLocationsPage, catalog.DefaultLocationsSize
	switch {
	case op == catalog.GetLocations:
		if f.page, f.size, e = pageParams(r.URL.RawQuery); e != nil {
			return f, locations.Status(e), e
		}
	case op.Body:
		if f.body, status, e = readListingBody(w, r, bodyTimeout); e != nil {
			return f, status, e
		}
	}
	return f, 0, nil
}

// listingFaults draws the faults of Config.Faults for a request admitted
// and well formed (only a GET may be cut): a slow fault waits first, and
// an injected status is answered instead of the operation. ok is false
// when o is the request's outcome already: an injected status, or the
// client left during the slow fault.
func (s *Server) listingFaults(w http.ResponseWriter, r *http.Request, op *catalog.ListingOperation, account string, o outcome) (p plan, _ outcome, ok bool) {
	if !s.faults.enabled() {
		return p, o, true
	}
	p = s.planFaults(account, canonicalRequest(r))
	if op.Method != http.MethodGet {
		p.cut = false
	}
	if p.slow {
		if err := s.wait(r.Context(), s.slowDelay); err != nil {
			o.faults, o.err = "slow", fmt.Errorf("the client left during the slow fault: %w", err)
			return p, o, false
		}
	}
	if p.status != 0 {
		o.faults = p.header(false, 0)
		w.Header().Set(faultHeader, o.faults)
		return p, writeStatusBody(w, p.status, injected(p.status).message, o), false
	}
	return p, o, true
}

// doListing performs op (package locations) for account at now, with
// the location id of the path and the form f: the body of its answer and
// the rows it holds, or its error object e.
func (s *Server) doListing(op *catalog.ListingOperation, account, id string, f listingForm, rid string, now time.Time) (answer any, rows int64, e *listing.Error) {
	switch op {
	case catalog.GetLocation:
		loc, e := s.locations.Get(account, id, now)
		if e != nil {
			return nil, 0, e
		}
		return listing.LocationBody{Data: loc, Requested: rid}, 1, nil
	case catalog.GetLocations:
		pg, e := s.locations.Page(account, f.page, f.size, now)
		if e != nil {
			return nil, 0, e
		}
		return listing.PageBody{Data: pg, RequestID: rid}, int64(len(pg.Content)), nil
	case catalog.UpdateLocation:
		loc, e := s.locations.UpdateOne(account, id, f.body, now)
		if e != nil {
			return nil, 0, e
		}
		return listing.LocationBody{Data: loc, Requested: rid}, 1, nil
	case catalog.UpdateLocations:
		results, e := s.locations.UpdateMany(account, f.body, now)
		if e != nil {
			return nil, 0, e
		}
		return listing.BulkBody{Data: results, RequestID: rid}, int64(len(results)), nil
	}
	return nil, 0, nil
}

// writeListingAnswer writes answer with 200 and returns o with the
// outcome; when the plan p cuts, the body is cut within its one write.
func writeListingAnswer(w http.ResponseWriter, rid string, answer any, p plan, o outcome) outcome {
	out, err := json.Marshal(answer)
	if err != nil {
		return writeListingError(w, rid, http.StatusInternalServerError, &listing.Error{Code: "INTERNAL",
			Message: fmt.Sprintf("The sandbox could not encode its answer: %v.", err), Details: []listing.Problem{}}, o)
	}
	out = append(out, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	o.status = http.StatusOK
	if p.cut {
		// The cutter of the data endpoints: one write, cut uniformly
		// within it, never at its end.
		cw := &cutter{w: w, at: p.k.draw("cut-at"), rows: 1, left: -1}
		_, err = cw.Write(out)
		if err == nil || errors.Is(err, errCut) {
			o.cut = true
			return o
		}
		o.err = err
		return o
	}
	_, o.err = w.Write(out)
	return o
}

// pageParams reads page and size of Get locations: each an int32, given
// at most once; the default when absent (spec 4.5, 8.4). Their ranges are
// locations.Store.Page's to check.
func pageParams(rawQuery string) (page, size int, _ *listing.Error) {
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return 0, 0, locations.InvalidParam("", "The query string is malformed: %v.", err)
	}
	read := func(name string, def int) (int, *listing.Error) {
		vs, ok := vals[name]
		switch {
		case !ok:
			return def, nil
		case len(vs) > 1:
			return 0, locations.InvalidParam(name, "%s is given %d times; give it once", name, len(vs))
		}
		n, err := strconv.ParseInt(strings.TrimSpace(vs[0]), 10, 32)
		if err != nil {
			return 0, locations.InvalidParam(name, "%s must be an integer (int32), got %q", name, vs[0])
		}
		return int(n), nil
	}
	var e *listing.Error
	if page, e = read("page", catalog.DefaultLocationsPage); e != nil {
		return 0, 0, e
	}
	if size, e = read("size", catalog.DefaultLocationsSize); e != nil {
		return 0, 0, e
	}
	return page, size, nil
}

// readListingBody reads the JSON body of an update: its Content-Type must
// be application/json (parameters such as charset allowed) and it must
// hold at most MaxListingBody bytes. Whether it is a JSON object is the
// operation's to say.
func readListingBody(w http.ResponseWriter, r *http.Request, timeout time.Duration) ([]byte, int, *listing.Error) {
	bad := func(status int, detail, format string, args ...any) ([]byte, int, *listing.Error) {
		return nil, status, &listing.Error{Code: catalog.CodeBadRequest, Message: "The request cannot be processed.",
			Details: []listing.Problem{{Code: detail, Message: fmt.Sprintf(format, args...)}}}
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return bad(http.StatusUnsupportedMediaType, DetailUnsupportedMediaType,
			"The body must be JSON sent with Content-Type: application/json, not %q.", ct)
	}
	// A read deadline on the connection bounds the body (a writer that
	// does not support one is not a connection: nothing to bound).
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(timeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxListingBody))
	if err == nil {
		// Read whole: the connection may carry the next request. After an
		// error the deadline stays, or the server, which reads what is
		// left of a body before it answers, would wait for the stalled
		// client again.
		_ = rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return bad(http.StatusRequestTimeout, DetailBodyTimeout, "The body was not received within %s.", timeout)
		}
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return bad(http.StatusRequestEntityTooLarge, DetailBodyTooLarge, "The body must hold at most %d bytes.", MaxListingBody)
		}
		return bad(http.StatusBadRequest, locations.DetailInvalidBody, "The body could not be read: %v.", err)
	}
	return body, 0, nil
}

// listingRequestID is the request id of a listing request: its own, as
// the real API gives every request (the spec's samples show a fresh id
// per answer), never that of another request, however alike (the same
// update sent twice, the same page read by two accounts): the hash of
// the seed, the request and the number of listing requests the server
// has answered before it, so a sandbox of one seed gives the same ids
// to the same sequence of requests.
func (s *Server) listingRequestID(r *http.Request, c clock) string {
	seq := s.listingSeq.Add(1)
	k := newKey(s.seed, "listing-request-id", r.Method, r.URL.Path, canonicalQuery(r.URL.RawQuery), strconv.FormatInt(c.day, 10), strconv.FormatUint(seq, 10))
	return fmt.Sprintf("%016x", uint64(k))
}

// writeListingError writes e in the envelope of spec 7.1 with status and
// returns o with the outcome. The envelope names the request id
// "requestId" (spec 4.5 rule 1); details is an array, never null.
func writeListingError(w http.ResponseWriter, rid string, status int, e *listing.Error, o outcome) outcome {
	if e.Details == nil {
		e.Details = []listing.Problem{}
	}
	o.status, o.err = status, e
	if err := writeListingJSON(w, status, listing.ErrorBody{Error: *e, RequestID: rid}); err != nil {
		o.err = err
	}
	return o
}

// writeStatusBody writes the body of spec 7.2, {code: status, message},
// and returns o with the outcome.
func writeStatusBody(w http.ResponseWriter, status int, message string, o outcome) outcome {
	o.status, o.err = status, fmt.Errorf("HTTP %d: %s", status, message)
	if err := writeListingJSON(w, status, listing.StatusBody{Code: status, Message: message}); err != nil {
		o.err = err
	}
	return o
}

func writeListingJSON(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode the answer: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(body, '\n'))
	return err
}
