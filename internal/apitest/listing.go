package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
)

// ListingConfig says where the listing-management endpoints under test are
// (spec 2.14, 3, 4.5, 7, 8.2), and how the suite reaches what a black box
// does not show.
//
// The suite updates locations of the token's account: with data valid
// for them, but not always their own. Run it against a test account only.
type ListingConfig struct {
	// BaseURL is the data API's base address (required).
	BaseURL string
	// Token is a bearer token of an account with the Local Pro plan
	// (required). The account must own at least four COMPLETE locations
	// besides one in the USA and one in Switzerland (CH), both COMPLETE,
	// and one location that is not COMPLETE; the suite finds them by
	// listing the account's locations.
	Token string
	// NoPlanToken, when set, is a bearer token of an account without the
	// Local Pro plan; the check that such an account is refused is
	// skipped without it.
	NoPlanToken string
	// Now is the implementation's current time: reopenDate must be later
	// than its date (required).
	Now time.Time
	// Advance moves the clock the rate limits are measured on forward by
	// d. The suite paces its requests to the limits of spec 8.2, but for
	// the checks that pass them, and lets time pass with Advance; without
	// it, it sleeps (the real API cannot be hurried).
	Advance func(t *testing.T, d time.Duration)
	// HoldBulk makes the implementation hold the next Update locations
	// request it admits in flight: held is closed once the request is
	// admitted, and the request goes on once release is called. The
	// check that bulk updates run one at a time is skipped without it.
	HoldBulk func(t *testing.T) (held <-chan struct{}, release func())
	// UnitsSpent, when set, returns the units the token's account has
	// spent so far: the suite then checks that listing calls consume none
	// (spec 8.1).
	UnitsSpent func() int64
	// HTTP sends the requests; default http.DefaultClient.
	HTTP *http.Client
}

type listingSuite struct {
	cfg  ListingConfig
	http *http.Client
	pace *pacer

	// The account's locations the checks update, found by RunListing: as
	// Get location answered them, with their status.
	complete    []listing.Location // COMPLETE, in neither the USA nor Switzerland
	us, ch      listing.Location   // COMPLETE, in the USA and in Switzerland
	notComplete listing.Location
	ids         []string // every location of the account, in page order
}

// listingCheck is one rule of the spec, named by its section.
type listingCheck struct {
	section, rule string
	run           func(t *testing.T)
	// skip, when not empty, is why the check cannot run.
	skip string
}

// RunListing checks the listing-management endpoints against the
// contract, one named check per rule of spec sections 2.14, 3, 4.5, 7 and
// 8.2 (with 8.1's price, 8.3's bounds, 8.4's defaults and 9's prefixes).
// The checks run one after the other, never in parallel: they share the
// account's rate limits.
func RunListing(t *testing.T, cfg ListingConfig) {
	require.NotEmpty(t, cfg.BaseURL, "apitest: ListingConfig.BaseURL")
	require.NotEmpty(t, cfg.Token, "apitest: ListingConfig.Token")
	require.False(t, cfg.Now.IsZero(), "apitest: ListingConfig.Now")
	client := cfg.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	s := &listingSuite{cfg: cfg, http: client, pace: newPacer(cfg.Advance)}
	s.find(t)
	var before int64
	if cfg.UnitsSpent != nil {
		before = cfg.UnitsSpent()
	}

	noPlan, noHold := "", ""
	if cfg.NoPlanToken == "" {
		noPlan = "needs ListingConfig.NoPlanToken"
	}
	if cfg.HoldBulk == nil {
		noHold = "needs ListingConfig.HoldBulk to hold a request in flight"
	}
	for _, c := range []listingCheck{
		{"4.5, 7.2", "a bearer token is required: 401 {code: 401, message}", s.bearerRequired, ""},
		{"4.5", "the Local Pro plan is required", s.planRequired, noPlan},
		{"4.5", "Get location answers {data: location with its status, requested}", s.getLocation, ""},
		{"7.1", "an unknown location id: RESOURCE_NOT_FOUND with detail LOCATION_NOT_FOUND", s.notFound, ""},
		{"4.5, 8.4", "Get locations: page 1 and size 20 by default; page, totalElements, totalPages, content without status", s.pageDefaults, ""},
		{"4.5", "the pages of one size list every location once", s.pagesCover, ""},
		{"4.5 rule 1", "single-location answers name the request id requested; list and bulk answers and every error envelope requestId", s.requestIDNames, ""},
		{"4.5, 9", "the v4 and v4-raw prefixes are interchangeable", s.prefixes, ""},
		{"4.5", "Update location answers {data: location, requested}; later gets see the update", s.updateLocation, ""},
		{"2.14, 4.5", "locationName, city, address and phone are required", s.required, ""},
		{"2.14, 8.3", "lengths in characters: locationName 125, city 64, address 190, additionalAddressInfo 64, websiteUrl 255", s.lengths, ""},
		{"2.14", "phone must include the international code", s.phone, ""},
		{"2.14", "websiteUrl must begin with http:// or https://", s.websiteURL, ""},
		{"2.14", "types and formats: strings, times HH:MM on a 24 hour clock, holiday entries RANGE or CLOSED on a day YYYY-MM-DD", s.formats, ""},
		{"2.14, 8.3", "at most two time ranges per weekday", s.weekdayRanges, ""},
		{"2.14, 8.3", "the ranges of a weekday must not overlap", s.overlap, ""},
		{"2.14", "a range may end before it starts or at 00:00: overnight", s.overnight, ""},
		{"2.14", "holidayHours are settable only with businessHours", s.holidayNeedsHours, ""},
		{"4.5 rule 3, 7.1", "a CLOSED holiday entry with times: VALIDATION_ERROR with TIMES_NOT_ALLOWED", s.timesNotAllowed, ""},
		{"4.5 rule 3, 7.1", "a holiday entry with more than three ranges: VALIDATION_ERROR with TIMES_TOO_MANY_RANGES", s.timesTooManyRanges, ""},
		{"2.14, 8.3", "reopenDate later than the current date and earlier than 2038-01-01", s.reopenDate, ""},
		{"2.14", "region must be left empty where the country has none (Switzerland)", s.regionEmpty, ""},
		{"2.14", "US state and ZIP code are validated together", s.usStateZip, ""},
		{"2.14, 7.1", "a refused update changes nothing", s.refusedChangesNothing, ""},
		{"4.5, 3", "Update locations answers {data: [{locationId, state}], requestId}; UPDATED items are seen by later gets", s.bulkUpdated, ""},
		{"3, 7.1", "a bulk item whose location is not COMPLETE FAILED with LOCATION_HAS_NOT_COMPLETE_STATUS; the others go on; HTTP 200", s.bulkNotComplete, ""},
		{"4.5 rule 2", "an unknown id or invalid data fail their item alone", s.bulkItemFailsAlone, ""},
		{"4.5, 7.1", "repeated ids: BAD_REQUEST with LOCATIONS_ARE_NOT_UNIQUE, the whole request rejected", s.bulkNotUnique, ""},
		{"4.5, 8.3", "at most 50 locations per bulk update", s.bulkTooMany, ""},
		{"8.2, 7.2", "Get location: past 10 requests a second, 429 {code: 429, message}", s.rateLimit(catalog.GetLocation), ""},
		{"8.2, 7.2", "Get locations: past 10 requests a second, 429 {code: 429, message}", s.rateLimit(catalog.GetLocations), ""},
		{"8.2, 7.2", "Update location: past 5 requests a second, 429 {code: 429, message}", s.rateLimit(catalog.UpdateLocation), ""},
		{"8.2, 7.2", "Update locations: past 5 requests a minute, 429 {code: 429, message}", s.rateLimit(catalog.UpdateLocations), ""},
		{"8.2, 7.2", "Update locations: one request at a time, 429 {code: 429, message}", s.bulkOneAtATime, noHold},
	} {
		t.Run(c.section+" "+c.rule, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			c.run(t)
		})
	}
	if cfg.UnitsSpent != nil {
		t.Run("8.1 listing calls consume no units", func(t *testing.T) {
			require.Equal(t, before, cfg.UnitsSpent(), "the checks above spent units")
		})
	}
}

// pacer keeps the suite's requests within the rate limits of spec 8.2: a
// sliding window per operation of the times the suite sent requests,
// measured on the time it let pass with Advance (or the wall clock).
type pacer struct {
	advance func(t *testing.T, d time.Duration)
	start   time.Time
	elapsed time.Duration              // with advance: the time let pass
	sent    map[string][]time.Duration // per operation, oldest first
}

func newPacer(advance func(*testing.T, time.Duration)) *pacer {
	return &pacer{advance: advance, start: time.Now(), sent: map[string][]time.Duration{}}
}

func (p *pacer) now() time.Duration {
	if p.advance == nil {
		return time.Since(p.start)
	}
	return p.elapsed
}

// wait lets d pass.
func (p *pacer) wait(t *testing.T, d time.Duration) {
	t.Helper()
	if d <= 0 {
		return
	}
	if p.advance == nil {
		// Some slack for the real API's clock.
		time.Sleep(d + 100*time.Millisecond)
		return
	}
	p.advance(t, d)
	p.elapsed += d
}

// admit waits until a request of op is within its limit and records it.
func (p *pacer) admit(t *testing.T, op *catalog.ListingOperation) {
	t.Helper()
	r := op.Rate
	times := p.window(op)
	if len(times) >= r.Requests {
		p.wait(t, times[len(times)-r.Requests]+r.Per-p.now())
	}
	p.record(op)
}

// window is the requests of op sent within its period.
func (p *pacer) window(op *catalog.ListingOperation) []time.Duration {
	times := p.sent[op.Name]
	now := p.now()
	for len(times) > 0 && times[0] <= now-op.Rate.Per {
		times = times[1:]
	}
	p.sent[op.Name] = times
	return times
}

func (p *pacer) record(op *catalog.ListingOperation) {
	p.sent[op.Name] = append(p.sent[op.Name], p.now())
}

// fresh waits until no request of op is within its period.
func (p *pacer) fresh(t *testing.T, op *catalog.ListingOperation) {
	t.Helper()
	if times := p.window(op); len(times) > 0 {
		p.wait(t, times[len(times)-1]+op.Rate.Per-p.now())
	}
}

// request builds a request of op; body, when not nil, is sent as JSON (a
// string or []byte as it is).
func (s *listingSuite) request(t *testing.T, op *catalog.ListingOperation, path, token string, body any) *http.Request {
	t.Helper()
	var data []byte
	switch b := body.(type) {
	case nil:
	case string:
		data = []byte(b)
	case []byte:
		data = b
	default:
		var err error
		data, err = json.Marshal(b)
		require.NoError(t, err)
	}
	req, err := http.NewRequestWithContext(t.Context(), op.Method, s.cfg.BaseURL+path, bytes.NewReader(data))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// send sends a request of op, paced to its rate limit, with the token.
func (s *listingSuite) send(t *testing.T, op *catalog.ListingOperation, path string, body any) reply {
	t.Helper()
	return s.sendAs(t, op, path, s.cfg.Token, body)
}

func (s *listingSuite) sendAs(t *testing.T, op *catalog.ListingOperation, path, token string, body any) reply {
	t.Helper()
	s.pace.admit(t, op)
	return s.do(t, s.request(t, op, path, token, body))
}

func (s *listingSuite) do(t *testing.T, req *http.Request) reply {
	t.Helper()
	return send(t, s.http, req)
}

// The paths of the operations under the v4 prefix.
func locationPath(id string) string { return catalog.GetLocation.Path(catalog.LocationsPrefix, id) }

const locationsPath = catalog.LocationsPrefix

func (s *listingSuite) get(t *testing.T, id string) listing.Location {
	t.Helper()
	return locationAnswer(t, s.send(t, catalog.GetLocation, locationPath(id), nil))
}

func (s *listingSuite) page(t *testing.T, query string) listing.Page {
	t.Helper()
	path := locationsPath
	if query != "" {
		path += "?" + query
	}
	return pageAnswer(t, s.send(t, catalog.GetLocations, path, nil))
}

func (s *listingSuite) put(t *testing.T, id string, body any) reply {
	t.Helper()
	return s.send(t, catalog.UpdateLocation, locationPath(id), body)
}

func (s *listingSuite) bulk(t *testing.T, items ...any) reply {
	t.Helper()
	return s.send(t, catalog.UpdateLocations, locationsPath, map[string]any{"locations": items})
}

// members decodes a JSON object's members.
func members(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m), "not a JSON object: %s", body)
	return m
}

// memberNames are the names of the members, sorted.
func memberNames(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// success requires a 200 JSON answer whose members are data and the
// request id named idName, a non-empty string, and decodes data into v.
func success(t *testing.T, r reply, idName string, v any) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "application/json", mediaType(r.header))
	m := members(t, r.body)
	require.Equal(t, []string{"data", idName}, memberNames(m), "the members of the answer (spec 4.5 rule 1): %s", r.body)
	var id string
	require.NoError(t, json.Unmarshal(m[idName], &id), "%s is a string: %s", idName, r.body)
	require.NotEmpty(t, id, idName)
	require.NoError(t, json.Unmarshal(m["data"], v), "data: %s", r.body)
}

// locationAnswer requires the answer of Get location or Update location.
func locationAnswer(t *testing.T, r reply) listing.Location {
	t.Helper()
	var loc listing.Location
	success(t, r, catalog.RequestIDSingle, &loc)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(members(t, r.body)["data"], &raw))
	checkLocation(t, raw)
	require.Contains(t, raw, "status", "a single location carries its status (spec 2.14)")
	require.NotEmpty(t, loc.Status)
	return loc
}

// pageAnswer requires the answer of Get locations.
func pageAnswer(t *testing.T, r reply) listing.Page {
	t.Helper()
	var p listing.Page
	success(t, r, catalog.RequestIDOther, &p)
	var raw struct {
		Content []map[string]json.RawMessage `json:"content"`
	}
	data := members(t, r.body)["data"]
	require.NoError(t, json.Unmarshal(data, &raw))
	for _, name := range []string{"page", "totalElements", "totalPages", "content"} {
		require.Contains(t, members(t, data), name, "a page has %s (spec 2.14)", name)
	}
	require.NotNil(t, raw.Content, "content is an array: %s", data)
	for _, loc := range raw.Content {
		checkLocation(t, loc)
		require.NotContains(t, loc, "status", "the content of a page carries no status (spec 4.5)")
	}
	return p
}

// checkLocation checks the names and JSON types of a location's members
// (spec 2.14): strings, businessHours an object, holidayHours and errors
// arrays; null is allowed for what is absent. It has an id.
func checkLocation(t *testing.T, loc map[string]json.RawMessage) {
	t.Helper()
	require.Contains(t, loc, "id")
	for name, v := range loc {
		f, ok := catalog.LocationFieldByName(name)
		if !ok || string(v) == "null" {
			continue
		}
		var err error
		switch f.Type {
		case catalog.LString:
			var s string
			err = json.Unmarshal(v, &s)
		case catalog.LObject:
			var o map[string]json.RawMessage
			err = json.Unmarshal(v, &o)
		case catalog.LArray:
			var a []json.RawMessage
			err = json.Unmarshal(v, &a)
		}
		require.NoError(t, err, "%s must be a %s: %s", name, f.Type, v)
	}
}

// listingFailure requires an error answer in the envelope of spec 7.1,
// {error: {code, message, details: [{code, message, field?, index?}]},
// requestId}, with a 4xx status (the spec does not show which), and
// returns its error object.
func listingFailure(t *testing.T, r reply, code string) listing.Error {
	t.Helper()
	require.GreaterOrEqual(t, r.status, 400, "%s", r.body)
	require.Less(t, r.status, 500, "%s", r.body)
	require.Equal(t, "application/json", mediaType(r.header))
	m := members(t, r.body)
	require.Equal(t, []string{"error", catalog.RequestIDOther}, memberNames(m), "the members of an error envelope (spec 7.1, 4.5 rule 1): %s", r.body)
	var id string
	require.NoError(t, json.Unmarshal(m[catalog.RequestIDOther], &id))
	require.NotEmpty(t, id)
	return errorObject(t, m["error"], code)
}

// errorObject checks an error object of spec 7.1 (also the error of a
// FAILED bulk item) and its code.
func errorObject(t *testing.T, raw json.RawMessage, code string) listing.Error {
	t.Helper()
	var e struct {
		Code    *string                      `json:"code"`
		Message *string                      `json:"message"`
		Details []map[string]json.RawMessage `json:"details"`
	}
	require.NoError(t, json.Unmarshal(raw, &e), "%s", raw)
	require.NotNil(t, e.Code, "error.code: %s", raw)
	require.NotNil(t, e.Message, "error.message: %s", raw)
	require.NotNil(t, e.Details, "error.details is an array: %s", raw)
	for _, d := range e.Details {
		for name, v := range d {
			require.Contains(t, []string{"code", "message", "field", "index"}, name, "a member of a detail that spec 7.1 does not name: %s", raw)
			var s string
			require.NoError(t, json.Unmarshal(v, &s), "details[].%s is a string (index too: \"a string position\"): %s", name, raw)
		}
		require.Contains(t, d, "code", "%s", raw)
		require.Contains(t, d, "message", "%s", raw)
	}
	var out listing.Error
	require.NoError(t, json.Unmarshal(raw, &out))
	require.Equal(t, code, out.Code, "error.code: %s", raw)
	return out
}

// statusAnswer requires the body of spec 7.2, {code: status, message}.
func statusAnswer(t *testing.T, r reply, status int) {
	t.Helper()
	require.Equal(t, status, r.status, "%s", r.body)
	require.Equal(t, "application/json", mediaType(r.header))
	m := members(t, r.body)
	require.Equal(t, []string{"code", "message"}, memberNames(m), "the body of a %d (spec 7.2): %s", status, r.body)
	var b listing.StatusBody
	require.NoError(t, json.Unmarshal(r.body, &b), "%s", r.body)
	require.Equal(t, status, b.Code)
	require.NotEmpty(t, b.Message)
}

// hasDetail requires a detail of e about field (the field itself, or a
// part of it such as businessHours.monday for businessHours) and, when
// code is not empty, with that code.
func hasDetail(t *testing.T, e listing.Error, field, code string) listing.Problem {
	t.Helper()
	for _, d := range e.Details {
		if (d.Field == field || strings.HasPrefix(d.Field, field+".")) && (code == "" || d.Code == code) {
			return d
		}
	}
	require.Failf(t, "no such detail", "no detail about %s %s in %+v", field, code, e.Details)
	return listing.Problem{}
}

// hasCode requires a detail of e with code.
func hasCode(t *testing.T, e listing.Error, code string) {
	t.Helper()
	require.True(t, slices.ContainsFunc(e.Details, func(d listing.Problem) bool { return d.Code == code }),
		"no detail %s in %+v", code, e.Details)
}

// body is the body of an update of loc: its request fields, without the
// id.
func body(loc listing.Location) listing.Location {
	b := loc.Clone()
	b.ID, b.Status, b.CountryCode, b.Errors = "", "", "", nil
	return b
}

// item is loc as an item of a bulk update: its request fields and its id.
func item(loc listing.Location) listing.Location {
	b := body(loc)
	b.ID = loc.ID
	return b
}

// find lists the account's locations and picks those the checks update.
func (s *listingSuite) find(t *testing.T) {
	t.Helper()
	first := s.page(t, "")
	var content []listing.Location
	content = append(content, first.Content...)
	for p := 2; p <= first.TotalPages && len(content) < 2000; p++ {
		content = append(content, s.page(t, "page="+strconv.Itoa(p)).Content...)
	}
	for _, loc := range content {
		s.ids = append(s.ids, loc.ID)
	}
	const wantComplete = 4
	for _, c := range content {
		if len(s.complete) >= wantComplete && s.us.ID != "" && s.ch.ID != "" && s.notComplete.ID != "" {
			break
		}
		country := strings.ToUpper(c.CountryCode)
		useful := len(s.complete) < wantComplete || s.notComplete.ID == "" ||
			country == "US" && s.us.ID == "" || country == "CH" && s.ch.ID == ""
		if !useful {
			continue
		}
		loc := s.get(t, c.ID)
		switch {
		case loc.Status != catalog.StatusComplete:
			if s.notComplete.ID == "" {
				s.notComplete = loc
			}
		case country == "US" && s.us.ID == "":
			s.us = loc
		case country == "CH" && s.ch.ID == "":
			s.ch = loc
		case country != "US" && country != "CH" && len(s.complete) < wantComplete:
			s.complete = append(s.complete, loc)
		}
	}
	require.Len(t, s.complete, wantComplete, "apitest: the account needs %d COMPLETE locations outside the USA and Switzerland", wantComplete)
	require.NotEmpty(t, s.us.ID, "apitest: the account needs a COMPLETE location in the USA")
	require.NotEmpty(t, s.ch.ID, "apitest: the account needs a COMPLETE location in Switzerland (CH)")
	require.NotEmpty(t, s.notComplete.ID, "apitest: the account needs a location that is not COMPLETE")
}

// current is the location as it stands now.
func (s *listingSuite) current(t *testing.T, loc listing.Location) listing.Location {
	t.Helper()
	return s.get(t, loc.ID)
}

// accepted sends an update of loc changed by change, requires success and
// returns the answer.
func (s *listingSuite) accepted(t *testing.T, loc listing.Location, change func(*listing.Location)) listing.Location {
	t.Helper()
	b := body(s.current(t, loc))
	change(&b)
	got := locationAnswer(t, s.put(t, loc.ID, b))
	require.Equal(t, loc.ID, got.ID)
	return got
}

// refused sends an update of loc changed by change and requires a
// VALIDATION_ERROR with a detail about field (and code, when not empty).
func (s *listingSuite) refused(t *testing.T, loc listing.Location, change func(*listing.Location), field, code string) listing.Problem {
	t.Helper()
	b := body(s.current(t, loc))
	change(&b)
	return hasDetail(t, listingFailure(t, s.put(t, loc.ID, b), catalog.CodeValidationError), field, code)
}

func (s *listingSuite) bearerRequired(t *testing.T) {
	id := s.complete[0].ID
	for _, op := range catalog.ListingOperations() {
		var b any
		if op.Body {
			b = "{}"
		}
		path := op.Path(catalog.LocationsPrefix, id)
		for _, auth := range []string{"", "Bearer no-such-token-0000", "Bearer", "Apikey " + s.cfg.Token} {
			s.pace.admit(t, op)
			req := s.request(t, op, path, "", b)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			r := s.do(t, req)
			statusAnswer(t, r, http.StatusUnauthorized)
		}
	}
}

func (s *listingSuite) planRequired(t *testing.T) {
	id := s.complete[0].ID
	for _, op := range catalog.ListingOperations() {
		var b any
		if op.Body {
			b = map[string]any{"locations": []any{item(s.complete[0])}}
			if op.ByID {
				b = body(s.complete[0])
			}
		}
		r := s.sendAs(t, op, op.Path(catalog.LocationsPrefix, id), s.cfg.NoPlanToken, b)
		require.GreaterOrEqual(t, r.status, 400, "%s without the Local Pro plan: %s", op.Name, r.body)
		require.Less(t, r.status, 500, "%s without the Local Pro plan: %s", op.Name, r.body)
	}
}

func (s *listingSuite) getLocation(t *testing.T) {
	for _, loc := range []listing.Location{s.complete[0], s.notComplete} {
		got := s.get(t, loc.ID)
		require.Equal(t, loc.ID, got.ID)
		require.Equal(t, loc.Status, got.Status)
	}
	require.Equal(t, catalog.StatusComplete, s.get(t, s.complete[0].ID).Status)
	require.NotEqual(t, catalog.StatusComplete, s.get(t, s.notComplete.ID).Status)
}

func (s *listingSuite) notFound(t *testing.T) {
	for _, id := range []string{"no-such-location-0000", "00000000000000000000000000000000"} {
		e := listingFailure(t, s.send(t, catalog.GetLocation, locationPath(id), nil), catalog.CodeResourceNotFound)
		hasCode(t, e, catalog.DetailLocationNotFound)
		e = listingFailure(t, s.put(t, id, body(s.complete[0])), catalog.CodeResourceNotFound)
		hasCode(t, e, catalog.DetailLocationNotFound)
	}
}

func (s *listingSuite) pageDefaults(t *testing.T) {
	p := s.page(t, "")
	require.Equal(t, catalog.DefaultLocationsPage, p.Page, "page 1 by default (spec 8.4)")
	total := len(s.ids)
	require.Equal(t, total, p.TotalElements)
	require.Len(t, p.Content, min(catalog.DefaultLocationsSize, total), "size 20 by default (spec 8.4)")
	require.Equal(t, (total+catalog.DefaultLocationsSize-1)/catalog.DefaultLocationsSize, p.TotalPages)
	explicit := s.page(t, "page=1&size="+strconv.Itoa(catalog.DefaultLocationsSize))
	require.Equal(t, p, explicit, "page=1&size=20 is the default")
	// One-based: page 2 follows page 1.
	second := s.page(t, "page=2&size=3")
	require.Equal(t, 2, second.Page)
	require.Equal(t, idsOf(s.page(t, "page=1&size=6").Content)[3:], idsOf(second.Content))
	for _, q := range []string{"page=0", "page=x", "size=0", "size=x"} {
		listingFailure(t, s.send(t, catalog.GetLocations, locationsPath+"?"+q, nil), catalog.CodeValidationError)
	}
}

func idsOf(locs []listing.Location) []string {
	out := make([]string, len(locs))
	for i, l := range locs {
		out[i] = l.ID
	}
	return out
}

func (s *listingSuite) pagesCover(t *testing.T) {
	const size = 7
	seen := map[string]bool{}
	p := s.page(t, "size="+strconv.Itoa(size))
	for n := 1; ; n++ {
		if n > 1 {
			p = s.page(t, fmt.Sprintf("page=%d&size=%d", n, size))
		}
		require.Equal(t, n, p.Page)
		if n > p.TotalPages {
			require.Empty(t, p.Content, "a page past the last is empty")
			break
		}
		for _, loc := range p.Content {
			require.False(t, seen[loc.ID], "location %s on two pages", loc.ID)
			seen[loc.ID] = true
		}
	}
	require.Len(t, seen, p.TotalElements, "the pages list totalElements locations")
}

func (s *listingSuite) requestIDNames(t *testing.T) {
	loc := s.complete[0]
	s.get(t, loc.ID)                                             // requested
	locationAnswer(t, s.put(t, loc.ID, body(s.current(t, loc)))) // requested
	s.page(t, "")                                                // requestId
	s.bulkResults(t, s.bulk(t, item(s.current(t, loc))))         // requestId
	listingFailure(t, s.send(t, catalog.GetLocation, locationPath("no-such-location-0000"), nil), catalog.CodeResourceNotFound)
	b := body(loc)
	b.Phone = ""
	listingFailure(t, s.put(t, loc.ID, b), catalog.CodeValidationError) // requestId, on a single-location request too
}

// bulkResults requires the answer of Update locations, HTTP 200, and
// returns its items.
func (s *listingSuite) bulkResults(t *testing.T, r reply) []listing.Result {
	t.Helper()
	var raw []map[string]json.RawMessage
	success(t, r, catalog.RequestIDOther, &raw)
	var out []listing.Result
	for _, it := range raw {
		var res listing.Result
		require.NoError(t, json.Unmarshal(mustJSON(t, it), &res))
		require.NotEmpty(t, res.LocationID, "locationId: %s", r.body)
		switch res.State {
		case catalog.StateUpdated:
			require.NotContains(t, it, "error", "an UPDATED item carries no error: %s", r.body)
		case catalog.StateFailed:
			require.Contains(t, it, "error", "a FAILED item carries its error (spec 2.14): %s", r.body)
			errorObject(t, it["error"], res.Error.Code)
		default:
			require.Failf(t, "state", "state %q is neither UPDATED nor FAILED: %s", res.State, r.body)
		}
		out = append(out, res)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func (s *listingSuite) prefixes(t *testing.T) {
	loc := s.complete[1]
	var answers []listing.Location
	for _, prefix := range catalog.LocationsPrefixes {
		answers = append(answers, locationAnswer(t, s.send(t, catalog.GetLocation, catalog.GetLocation.Path(prefix, loc.ID), nil)))
	}
	require.Equal(t, answers[0], answers[1], "Get location under both prefixes")
	var pages []listing.Page
	for _, prefix := range catalog.LocationsPrefixes {
		pages = append(pages, pageAnswer(t, s.send(t, catalog.GetLocations, prefix+"?size=5", nil)))
	}
	require.Equal(t, pages[0], pages[1], "Get locations under both prefixes")
	for i, prefix := range catalog.LocationsPrefixes {
		other := catalog.LocationsPrefixes[1-i]
		b := body(s.current(t, loc))
		b.LocationName = "Prefix check " + strconv.Itoa(i)
		locationAnswer(t, s.send(t, catalog.UpdateLocation, catalog.UpdateLocation.Path(prefix, loc.ID), b))
		got := locationAnswer(t, s.send(t, catalog.GetLocation, catalog.GetLocation.Path(other, loc.ID), nil))
		require.Equal(t, b.LocationName, got.LocationName, "updated under %s, read under %s", prefix, other)
		it := item(got)
		it.LocationName = "Prefix bulk " + strconv.Itoa(i)
		res := s.bulkResults(t, s.send(t, catalog.UpdateLocations, prefix, map[string]any{"locations": []any{it}}))
		require.Equal(t, catalog.StateUpdated, res[0].State)
		got = locationAnswer(t, s.send(t, catalog.GetLocation, catalog.GetLocation.Path(other, loc.ID), nil))
		require.Equal(t, it.LocationName, got.LocationName, "bulk-updated under %s, read under %s", prefix, other)
	}
}

func (s *listingSuite) updateLocation(t *testing.T) {
	loc := s.complete[0]
	got := s.accepted(t, loc, func(l *listing.Location) {
		l.LocationName = "Conformance Bakery"
		l.AdditionalAddressInfo = "Suite 9"
	})
	require.Equal(t, "Conformance Bakery", got.LocationName, "the answer is the updated location")
	require.Equal(t, "Suite 9", got.AdditionalAddressInfo)
	again := s.get(t, loc.ID)
	require.Equal(t, got, again, "a later Get location sees the update")
	for n := 1; ; n++ {
		p := s.page(t, fmt.Sprintf("page=%d&size=50", n))
		require.LessOrEqual(t, n, p.TotalPages, "the location is on no page")
		if i := slices.IndexFunc(p.Content, func(l listing.Location) bool { return l.ID == loc.ID }); i >= 0 {
			require.Equal(t, "Conformance Bakery", p.Content[i].LocationName, "a later Get locations sees the update")
			break
		}
	}
}

func (s *listingSuite) required(t *testing.T) {
	loc := s.complete[0]
	for _, f := range catalog.LocationFields {
		if f.Use != catalog.UseRequired {
			continue
		}
		// Left out of the body...
		b := body(s.current(t, loc))
		var m map[string]any
		require.NoError(t, json.Unmarshal(mustJSON(t, b), &m))
		delete(m, f.Name)
		hasDetail(t, listingFailure(t, s.put(t, loc.ID, m), catalog.CodeValidationError), f.Name, "")
		// ...or empty.
		s.refused(t, loc, func(l *listing.Location) { setText(l, f.Name, "") }, f.Name, "")
		s.refused(t, loc, func(l *listing.Location) { setText(l, f.Name, "   ") }, f.Name, "")
	}
}

// setText sets the string field called name.
func setText(l *listing.Location, name, v string) {
	switch name {
	case "locationName":
		l.LocationName = v
	case "city":
		l.City = v
	case "address":
		l.Address = v
	case "additionalAddressInfo":
		l.AdditionalAddressInfo = v
	case "phone":
		l.Phone = v
	case "websiteUrl":
		l.WebsiteURL = v
	default:
		panic("apitest: setText of " + name)
	}
}

func (s *listingSuite) lengths(t *testing.T) {
	loc := s.complete[0]
	for _, f := range catalog.LocationFields {
		if f.MaxLen == 0 {
			continue
		}
		long := func(n int) string {
			// Characters, not bytes: ä is two bytes in UTF-8.
			if f.Name == "websiteUrl" {
				const p = "https://example.com/"
				return p + strings.Repeat("ä", n-len(p))
			}
			return strings.Repeat("ä", n)
		}
		got := s.accepted(t, loc, func(l *listing.Location) { setText(l, f.Name, long(f.MaxLen)) })
		require.Equal(t, long(f.MaxLen), textOf(got, f.Name), "%s of %d characters", f.Name, f.MaxLen)
		s.refused(t, loc, func(l *listing.Location) { setText(l, f.Name, long(f.MaxLen+1)) }, f.Name, "")
	}
	s.accepted(t, loc, func(l *listing.Location) {
		*l = body(loc)
	})
}

func textOf(l listing.Location, name string) string {
	switch name {
	case "locationName":
		return l.LocationName
	case "city":
		return l.City
	case "address":
		return l.Address
	case "additionalAddressInfo":
		return l.AdditionalAddressInfo
	case "websiteUrl":
		return l.WebsiteURL
	}
	return ""
}

func (s *listingSuite) phone(t *testing.T) {
	loc := s.complete[0]
	for _, p := range []string{"2096438343", "0049 351 8629318", "phone"} {
		s.refused(t, loc, func(l *listing.Location) { l.Phone = p }, "phone", "")
	}
	for _, p := range []string{"+12096438343", "+1 209-643-8343", "+49 351 8629318"} {
		require.Equal(t, p, s.accepted(t, loc, func(l *listing.Location) { l.Phone = p }).Phone)
	}
}

func (s *listingSuite) websiteURL(t *testing.T) {
	loc := s.complete[0]
	for _, u := range []string{"www.example.com", "ftp://example.com/", "example.com/page"} {
		s.refused(t, loc, func(l *listing.Location) { l.WebsiteURL = u }, "websiteUrl", "")
	}
	for _, u := range []string{"http://example.com/", "https://www.example.com/locations/1"} {
		require.Equal(t, u, s.accepted(t, loc, func(l *listing.Location) { l.WebsiteURL = u }).WebsiteURL)
	}
}

func tr(from, to string) listing.TimeRange { return listing.TimeRange{From: from, To: to} }

// hours are business hours with monday's ranges as given, and Tuesday to
// Friday 09:00-17:00.
func hours(monday ...listing.TimeRange) *listing.BusinessHours {
	day := []listing.TimeRange{tr("09:00", "17:00")}
	return &listing.BusinessHours{Monday: monday, Tuesday: day, Wednesday: day, Thursday: day, Friday: day}
}

func (s *listingSuite) formats(t *testing.T) {
	loc := s.complete[1]
	// A field of another JSON type than the spec's.
	for name, v := range map[string]any{"phone": 4930123456, "locationName": []string{"x"}, "businessHours": "always", "holidayHours": map[string]any{}} {
		var m map[string]any
		require.NoError(t, json.Unmarshal(mustJSON(t, body(s.current(t, loc))), &m))
		m[name] = v
		hasDetail(t, listingFailure(t, s.put(t, loc.ID, m), catalog.CodeValidationError), name, "")
	}
	for _, r := range []listing.TimeRange{tr("24:00", "02:00"), tr("9:00", "17:00"), tr("09:00", "17:60"), tr("9am", "5pm")} {
		s.refused(t, loc, func(l *listing.Location) { l.BusinessHours, l.HolidayHours = hours(r), nil }, "businessHours", "")
	}
	for _, h := range []listing.HolidayHours{
		{Type: "OPEN", Day: s.holiday(catalog.HolidayClosed).Day},
		{Type: catalog.HolidayClosed, Day: "24.12.2030"},
		{Type: catalog.HolidayClosed, Day: "2030-02-30"},
		{Type: catalog.HolidayRange, Day: s.holiday(catalog.HolidayRange).Day, Times: []listing.TimeRange{tr("25:00", "26:00")}},
	} {
		s.refused(t, loc, func(l *listing.Location) {
			l.BusinessHours, l.HolidayHours = hours(tr("09:00", "17:00")), []listing.HolidayHours{h}
		}, "holidayHours", "")
	}
	got := s.accepted(t, loc, func(l *listing.Location) {
		l.BusinessHours = hours(tr("09:00", "17:00"))
		l.HolidayHours = []listing.HolidayHours{s.holiday(catalog.HolidayRange, tr("10:00", "14:00"))}
	})
	require.Equal(t, []listing.HolidayHours{s.holiday(catalog.HolidayRange, tr("10:00", "14:00"))}, got.HolidayHours)
}

func (s *listingSuite) weekdayRanges(t *testing.T) {
	loc := s.complete[1]
	s.refused(t, loc, func(l *listing.Location) {
		l.BusinessHours, l.HolidayHours = hours(tr("08:00", "10:00"), tr("11:00", "13:00"), tr("14:00", "18:00")), nil
	}, "businessHours", "")
	got := s.accepted(t, loc, func(l *listing.Location) {
		l.BusinessHours, l.HolidayHours = hours(tr("08:00", "12:00"), tr("13:00", "18:00")), nil
	})
	require.Equal(t, hours(tr("08:00", "12:00"), tr("13:00", "18:00")).Monday, got.BusinessHours.Monday)
}

func (s *listingSuite) overlap(t *testing.T) {
	loc := s.complete[1]
	for _, rs := range [][]listing.TimeRange{
		{tr("09:00", "13:00"), tr("12:00", "18:00")},
		{tr("12:00", "18:00"), tr("09:00", "13:00")},
		{tr("09:00", "18:00"), tr("10:00", "11:00")},
		{tr("18:00", "02:00"), tr("20:00", "23:00")},
	} {
		s.refused(t, loc, func(l *listing.Location) { l.BusinessHours, l.HolidayHours = hours(rs...), nil }, "businessHours", "")
	}
	// Ranges that meet do not overlap.
	s.accepted(t, loc, func(l *listing.Location) {
		l.BusinessHours, l.HolidayHours = hours(tr("09:00", "12:00"), tr("12:00", "18:00")), nil
	})
}

func (s *listingSuite) overnight(t *testing.T) {
	loc := s.complete[1]
	for _, rs := range [][]listing.TimeRange{
		{tr("22:00", "02:00")},
		{tr("18:00", "00:00")},
		{tr("00:00", "00:00")},
		{tr("11:00", "14:00"), tr("18:00", "01:30")},
	} {
		got := s.accepted(t, loc, func(l *listing.Location) { l.BusinessHours, l.HolidayHours = hours(rs...), nil })
		require.Equal(t, rs, got.BusinessHours.Monday)
	}
}

// holiday is a holiday entry next year.
func (s *listingSuite) holiday(typ string, times ...listing.TimeRange) listing.HolidayHours {
	return listing.HolidayHours{Type: typ, Day: fmt.Sprintf("%04d-12-24", s.cfg.Now.UTC().Year()+1), Times: times}
}

func (s *listingSuite) holidayNeedsHours(t *testing.T) {
	loc := s.complete[2]
	closed := s.holiday(catalog.HolidayClosed)
	s.refused(t, loc, func(l *listing.Location) {
		l.BusinessHours, l.HolidayHours = nil, []listing.HolidayHours{closed}
	}, "holidayHours", "")
	// Left out, businessHours is not given either.
	s.accepted(t, loc, func(l *listing.Location) { l.BusinessHours, l.HolidayHours = hours(tr("09:00", "17:00")), nil })
	b := body(s.current(t, loc))
	b.HolidayHours = []listing.HolidayHours{closed}
	var m map[string]any
	require.NoError(t, json.Unmarshal(mustJSON(t, b), &m))
	delete(m, "businessHours")
	hasDetail(t, listingFailure(t, s.put(t, loc.ID, m), catalog.CodeValidationError), "holidayHours", "")
	got := s.accepted(t, loc, func(l *listing.Location) {
		l.BusinessHours, l.HolidayHours = hours(tr("09:00", "17:00")), []listing.HolidayHours{closed}
	})
	require.Equal(t, []listing.HolidayHours{closed}, got.HolidayHours)
}

func (s *listingSuite) timesNotAllowed(t *testing.T) {
	loc := s.complete[2]
	d := s.refused(t, loc, func(l *listing.Location) {
		l.BusinessHours = hours(tr("09:00", "17:00"))
		l.HolidayHours = []listing.HolidayHours{s.holiday(catalog.HolidayClosed, tr("09:00", "12:00"))}
	}, "holidayHours", catalog.DetailTimesNotAllowed)
	require.Equal(t, "holidayHours.times", d.Field, "the field of the spec's sample")
	require.Equal(t, "0", d.Index, "index: the entry's position, a string")
}

func (s *listingSuite) timesTooManyRanges(t *testing.T) {
	loc := s.complete[2]
	three := []listing.TimeRange{tr("08:00", "09:00"), tr("10:00", "11:00"), tr("12:00", "13:00")}
	d := s.refused(t, loc, func(l *listing.Location) {
		l.BusinessHours = hours(tr("09:00", "17:00"))
		l.HolidayHours = []listing.HolidayHours{s.holiday(catalog.HolidayRange, append(three, tr("14:00", "15:00"))...)}
	}, "holidayHours", catalog.DetailTimesTooManyRanges)
	require.Equal(t, "holidayHours.times", d.Field)
	require.Equal(t, "0", d.Index)
	require.Contains(t, strings.ToLower(d.Message), "three", "the message speaks of three (spec 7.1)")
	got := s.accepted(t, loc, func(l *listing.Location) {
		l.BusinessHours = hours(tr("09:00", "17:00"))
		l.HolidayHours = []listing.HolidayHours{s.holiday(catalog.HolidayRange, three...)}
	})
	require.Equal(t, three, got.HolidayHours[0].Times, "three ranges are allowed")
}

func (s *listingSuite) reopenDate(t *testing.T) {
	loc := s.complete[3]
	day := func(d time.Time) string { return d.UTC().Format(catalog.DateLayout) }
	for _, d := range []string{day(s.cfg.Now), day(s.cfg.Now.AddDate(0, 0, -1)), catalog.ReopenDateBefore, "2040-06-01", "next week"} {
		s.refused(t, loc, func(l *listing.Location) { l.ReopenDate = d }, "reopenDate", "")
	}
	for _, d := range []string{day(s.cfg.Now.AddDate(0, 0, 1)), "2037-12-31", ""} {
		require.Equal(t, d, s.accepted(t, loc, func(l *listing.Location) { l.ReopenDate = d }).ReopenDate)
	}
}

func (s *listingSuite) regionEmpty(t *testing.T) {
	for _, r := range []string{"ZH", "Zürich"} {
		s.refused(t, s.ch, func(l *listing.Location) { l.Region = r }, "region", "")
	}
	require.Empty(t, s.accepted(t, s.ch, func(l *listing.Location) { l.Region = "" }).Region)
}

func (s *listingSuite) usStateZip(t *testing.T) {
	got := s.accepted(t, s.us, func(l *listing.Location) { l.Region, l.Zip, l.City = "CA", "94103", "San Francisco" })
	require.Equal(t, "CA", got.Region)
	require.Equal(t, "94103", got.Zip)
	e := listingFailure(t, s.put(t, s.us.ID, func() listing.Location {
		b := body(s.current(t, s.us))
		b.Region, b.Zip = "NY", "94103"
		return b
	}()), catalog.CodeValidationError)
	require.True(t, slices.ContainsFunc(e.Details, func(d listing.Problem) bool { return d.Field == "zip" || d.Field == "region" }),
		"a detail about zip or region: %+v", e.Details)
	got = s.accepted(t, s.us, func(l *listing.Location) { l.Region, l.Zip, l.City = "NY", "10001", "New York" })
	require.Equal(t, "10001", got.Zip)
	// A region that is no state, a ZIP code that is none.
	s.refused(t, s.us, func(l *listing.Location) { l.Region = "Narnia" }, "region", "")
	s.refused(t, s.us, func(l *listing.Location) { l.Zip = "1000" }, "zip", "")
}

func (s *listingSuite) refusedChangesNothing(t *testing.T) {
	loc := s.complete[0]
	before := s.current(t, loc)
	s.refused(t, loc, func(l *listing.Location) {
		l.LocationName = "Never Stored"
		l.Phone = "2096438343"
	}, "phone", "")
	require.Equal(t, before, s.current(t, loc))
	res := s.bulkResults(t, s.bulk(t, func() listing.Location {
		it := item(before)
		it.LocationName, it.Phone = "Never Stored", "2096438343"
		return it
	}()))
	require.Equal(t, catalog.StateFailed, res[0].State)
	require.Equal(t, before, s.current(t, loc), "nor a FAILED bulk item")
}

func (s *listingSuite) bulkUpdated(t *testing.T) {
	var items []any
	var want []string
	for i, loc := range s.complete[:3] {
		it := item(s.current(t, loc))
		it.LocationName = fmt.Sprintf("Bulk %d", i)
		items, want = append(items, it), append(want, it.LocationName)
	}
	res := s.bulkResults(t, s.bulk(t, items...))
	require.Len(t, res, 3, "one result per item")
	for i, loc := range s.complete[:3] {
		require.Equal(t, listing.Result{LocationID: loc.ID, State: catalog.StateUpdated}, res[i], "items answer in order")
		require.Equal(t, want[i], s.current(t, loc).LocationName, "a later get sees the bulk update")
	}
}

func (s *listingSuite) bulkNotComplete(t *testing.T) {
	a, b := item(s.current(t, s.complete[0])), item(s.current(t, s.complete[1]))
	a.LocationName, b.LocationName = "Around the failed A", "Around the failed B"
	nc := item(s.notComplete)
	res := s.bulkResults(t, s.bulk(t, a, nc, b))
	require.Len(t, res, 3)
	require.Equal(t, catalog.StateUpdated, res[0].State)
	require.Equal(t, listing.Result{LocationID: s.notComplete.ID, State: catalog.StateFailed, Error: res[1].Error}, res[1])
	require.Equal(t, catalog.CodeBadRequest, res[1].Error.Code, "%+v", res[1].Error)
	hasCode(t, *res[1].Error, catalog.DetailLocationHasNotCompleteStatus)
	require.Equal(t, catalog.StateUpdated, res[2].State, "the other items go on")
	require.Equal(t, a.LocationName, s.current(t, s.complete[0]).LocationName)
	require.Equal(t, b.LocationName, s.current(t, s.complete[1]).LocationName)
}

func (s *listingSuite) bulkItemFailsAlone(t *testing.T) {
	a := item(s.current(t, s.complete[0]))
	a.LocationName = "Beside the unknown"
	unknown := item(s.current(t, s.complete[1]))
	unknown.ID = "no-such-location-0000"
	bad := item(s.current(t, s.complete[2]))
	bad.Phone = "no phone"
	res := s.bulkResults(t, s.bulk(t, unknown, a, bad))
	require.Len(t, res, 3)
	require.Equal(t, catalog.StateFailed, res[0].State)
	require.Equal(t, "no-such-location-0000", res[0].LocationID)
	require.Equal(t, catalog.CodeResourceNotFound, res[0].Error.Code)
	hasCode(t, *res[0].Error, catalog.DetailLocationNotFound)
	require.Equal(t, catalog.StateUpdated, res[1].State)
	require.Equal(t, catalog.StateFailed, res[2].State)
	require.Equal(t, catalog.CodeValidationError, res[2].Error.Code)
	hasDetail(t, *res[2].Error, "phone", "")
	require.Equal(t, a.LocationName, s.current(t, s.complete[0]).LocationName)
}

func (s *listingSuite) bulkNotUnique(t *testing.T) {
	before := s.current(t, s.complete[0])
	a := item(before)
	a.LocationName = "Never Stored"
	other := item(s.current(t, s.complete[1]))
	e := listingFailure(t, s.bulk(t, a, other, a), catalog.CodeBadRequest)
	hasCode(t, e, catalog.DetailLocationsAreNotUnique)
	require.Equal(t, before, s.current(t, s.complete[0]), "the whole request is rejected")
}

func (s *listingSuite) bulkTooMany(t *testing.T) {
	items := make([]any, 0, catalog.MaxBulkLocations+1)
	for i := range catalog.MaxBulkLocations + 1 {
		id := fmt.Sprintf("no-such-location-%04d", i)
		if i < len(s.ids) {
			id = s.ids[i]
		}
		it := item(s.complete[0])
		it.ID, it.LocationName = id, "Never Stored"
		items = append(items, it)
	}
	before := s.current(t, s.complete[0])
	listingFailure(t, s.bulk(t, items...), catalog.CodeBadRequest)
	require.Equal(t, before, s.current(t, s.complete[0]), "the whole request is rejected")
	listingFailure(t, s.send(t, catalog.UpdateLocations, locationsPath, `{"locations": []}`), catalog.CodeBadRequest)
}

// rateLimit sends the requests of op that its limit allows within one
// period, then one more: a 429 with the body of spec 7.2.
func (s *listingSuite) rateLimit(op *catalog.ListingOperation) func(t *testing.T) {
	return func(t *testing.T) {
		loc := s.current(t, s.complete[3])
		var b any
		switch op {
		case catalog.UpdateLocation:
			b = body(loc)
		case catalog.UpdateLocations:
			b = map[string]any{"locations": []any{item(loc)}}
		}
		path := op.Path(catalog.LocationsPrefix, loc.ID)
		s.pace.fresh(t, op)
		for i := range op.Rate.Requests {
			r := s.send(t, op, path, b)
			require.Equal(t, http.StatusOK, r.status, "request %d of %d in %v: %s", i+1, op.Rate.Requests, op.Rate.Per, r.body)
		}
		s.pace.record(op)
		statusAnswer(t, s.do(t, s.request(t, op, path, s.cfg.Token, b)), http.StatusTooManyRequests)
		// A period later it answers again.
		s.pace.fresh(t, op)
		require.Equal(t, http.StatusOK, s.send(t, op, path, b).status)
	}
}

func (s *listingSuite) bulkOneAtATime(t *testing.T) {
	loc := s.current(t, s.complete[3])
	b := map[string]any{"locations": []any{item(loc)}}
	op := catalog.UpdateLocations
	held, release := s.cfg.HoldBulk(t)
	s.pace.admit(t, op)
	first := s.request(t, op, locationsPath, s.cfg.Token, b)
	type result struct {
		r   reply
		err error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := s.http.Do(first)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		done <- result{reply{resp.StatusCode, resp.Header, body}, err}
	}()
	select {
	case <-held:
	case <-t.Context().Done():
		t.Fatal("the first bulk update was never held")
	}
	s.pace.admit(t, op)
	second := s.do(t, s.request(t, op, catalog.LocationsRawPrefix, s.cfg.Token, b))
	release()
	statusAnswer(t, second, http.StatusTooManyRequests)
	res := <-done
	require.NoError(t, res.err)
	require.Len(t, s.bulkResults(t, res.r), 1, "the first one is answered")
}
