package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/sandbox/locations"
)

// The accounts of the listing tests: agency owns 60 locations and second
// 5, both with the Local Pro plan; basic owns 5 and has not.
const (
	agency = "agency-n60"
	second = "second-n5"
	basic  = "basic-n5"
)

// listingEnv is a sandbox serving the listing endpoints, its wall clock
// (the rate limits'), which the test moves, and a bearer token of agency.
type listingEnv struct {
	sb    *sandbox.Server
	srv   *httptest.Server
	wall  *movingClock
	token string
	// limited keeps the wall clock still between requests; otherwise it
	// moves a minute before each, so that no rate limit is ever reached.
	limited bool
}

// newListingEnv starts a sandbox with the agency and basic accounts on
// real HTTP; cfg's Now and WallClock are the test's (testNow, and a
// moving clock). build, when set, replaces sandbox.New.
func newListingEnv(t *testing.T, cfg sandbox.Config, build func(sandbox.Config) (*sandbox.Server, error)) *listingEnv {
	t.Helper()
	wall := &movingClock{}
	wall.set(testNow)
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testNow }
	}
	cfg.WallClock = wall.now
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	if cfg.APIKeys == nil {
		cfg.APIKeys, cfg.NoLocalPro = []string{agency, second, basic}, []string{basic}
	}
	if build == nil {
		build = sandbox.New
	}
	sb, err := build(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	tok, err := sb.IssueToken(cfg.APIKeys[0])
	require.NoError(t, err)
	return &listingEnv{sb: sb, srv: srv, wall: wall, token: tok.AccessToken}
}

// as sends a listing request with token (none when empty); body, when not
// nil, is sent as JSON (a string as it is).
func (e *listingEnv) as(t *testing.T, token, method, path string, body any) reply {
	t.Helper()
	if !e.limited {
		e.wall.advance(time.Minute)
	}
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	var b string
	switch v := body.(type) {
	case nil:
	case string:
		b = v
		h.Set("Content-Type", "application/json")
	default:
		data, err := json.Marshal(v)
		require.NoError(t, err)
		b = string(data)
		h.Set("Content-Type", "application/json")
	}
	return sendBody(t, e.srv, method, path, h, b)
}

func (e *listingEnv) do(t *testing.T, method, path string, body any) reply {
	t.Helper()
	return e.as(t, e.token, method, path, body)
}

// one is the path of the location id under the v4 prefix.
func one(id string) string { return catalog.GetLocation.Path(catalog.LocationsPrefix, id) }

// decodeOK requires a 200 JSON answer and decodes it into v, returning
// its top-level members.
func decodeOK(t *testing.T, r reply, v any) map[string]json.RawMessage {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.NoError(t, json.Unmarshal(r.body, v), "%s", r.body)
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.body, &top))
	return top
}

// locationOf is a Get location or Update location answer: its
// "requested" is the X-Request-Id, and it has no "requestId".
func locationOf(t *testing.T, r reply) listing.Location {
	t.Helper()
	var b listing.LocationBody
	top := decodeOK(t, r, &b)
	require.ElementsMatch(t, []string{"data", catalog.RequestIDSingle}, keys(top), "%s", r.body)
	require.Equal(t, r.header.Get("X-Request-Id"), b.Requested)
	require.NotEmpty(t, b.Data.Status, "a single location carries its status")
	return b.Data
}

// pageOf is a Get locations answer.
func pageOf(t *testing.T, r reply) listing.Page {
	t.Helper()
	var b listing.PageBody
	top := decodeOK(t, r, &b)
	require.ElementsMatch(t, []string{"data", catalog.RequestIDOther}, keys(top), "%s", r.body)
	require.Equal(t, r.header.Get("X-Request-Id"), b.RequestID)
	for _, loc := range b.Data.Content {
		require.Empty(t, loc.Status, "the content of a page carries no status")
	}
	require.NotContains(t, string(r.body), `"status"`)
	return b.Data
}

// bulkOf is an Update locations answer.
func bulkOf(t *testing.T, r reply) []listing.Result {
	t.Helper()
	var b listing.BulkBody
	top := decodeOK(t, r, &b)
	require.ElementsMatch(t, []string{"data", catalog.RequestIDOther}, keys(top), "%s", r.body)
	require.Equal(t, r.header.Get("X-Request-Id"), b.RequestID)
	return b.Data
}

// listingError requires the error envelope of spec 7.1 with status and
// code, and returns its error object.
func listingError(t *testing.T, r reply, status int, code string) listing.Error {
	t.Helper()
	require.Equal(t, status, r.status, "%s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	var b listing.ErrorBody
	require.NoError(t, json.Unmarshal(r.body, &b), "%s", r.body)
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.body, &top))
	require.ElementsMatch(t, []string{"error", catalog.RequestIDOther}, keys(top), "%s", r.body)
	require.Equal(t, r.header.Get("X-Request-Id"), b.RequestID)
	require.Equal(t, code, b.Error.Code, "%s", r.body)
	require.NotEmpty(t, b.Error.Message)
	require.Contains(t, string(top["error"]), `"details":[`, "details is an array, never null")
	return b.Error
}

// statusBody requires the body of spec 7.2, {code: status, message}, and
// returns its message.
func statusBody(t *testing.T, r reply, status int) string {
	t.Helper()
	require.Equal(t, status, r.status, "%s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.body, &top), "%s", r.body)
	require.ElementsMatch(t, []string{"code", "message"}, keys(top), "%s", r.body)
	var b listing.StatusBody
	require.NoError(t, json.Unmarshal(r.body, &b))
	require.Equal(t, status, b.Code)
	require.NotEmpty(t, b.Message)
	return b.Message
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// detailCodes are the codes of an error's details.
func detailCodes(e listing.Error) []string {
	var out []string
	for _, d := range e.Details {
		out = append(out, d.Code)
	}
	return out
}

// update is the body of an update of loc: its request fields.
func update(loc listing.Location) listing.Location {
	u := loc.Clone()
	u.ID, u.Status, u.CountryCode, u.Errors = "", "", "", nil
	return u
}

// firstPage returns the first size locations of the token's account.
func (e *listingEnv) firstPage(t *testing.T, size int) []listing.Location {
	t.Helper()
	return pageOf(t, e.do(t, http.MethodGet, fmt.Sprintf("%s?size=%d", catalog.LocationsPrefix, size), nil)).Content
}

func TestListingGetLocation(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, sandbox.Config{}, nil)
	locs := e.firstPage(t, 10)
	for _, prefix := range catalog.LocationsPrefixes {
		got := locationOf(t, e.do(t, http.MethodGet, catalog.GetLocation.Path(prefix, locs[0].ID), nil))
		require.Equal(t, catalog.StatusComplete, got.Status, "location 0 is COMPLETE")
		got.Status = ""
		require.Equal(t, locs[0], got, "the location of the page, with its status")
		require.Equal(t, "IN_PROGRESS", locationOf(t, e.do(t, http.MethodGet, catalog.GetLocation.Path(prefix, locs[1].ID), nil)).Status)
	}
	for _, id := range []string{"no-such-location", "00000000000000000000000000000000", "a b"} {
		le := listingError(t, e.do(t, http.MethodGet, one(id), nil), http.StatusNotFound, catalog.CodeResourceNotFound)
		require.Equal(t, []string{catalog.DetailLocationNotFound}, detailCodes(le))
		require.Contains(t, le.Details[0].Message, id, "the path is unescaped")
	}
	// Another account's location is not found.
	other, err := e.sb.IssueToken(second)
	require.NoError(t, err)
	listingError(t, e.as(t, other.AccessToken, http.MethodGet, one(locs[0].ID), nil), http.StatusNotFound, catalog.CodeResourceNotFound)
}

func TestListingGetLocations(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, sandbox.Config{}, nil)
	p := pageOf(t, e.do(t, http.MethodGet, catalog.LocationsPrefix, nil))
	require.Equal(t, 1, p.Page, "page 1 by default")
	require.Len(t, p.Content, catalog.DefaultLocationsSize, "size 20 by default")
	require.Equal(t, 60, p.TotalElements)
	require.Equal(t, 3, p.TotalPages)

	var ids []string
	for page := 1; page <= 4; page++ {
		p := pageOf(t, e.do(t, http.MethodGet, fmt.Sprintf("%s?page=%d&size=25", catalog.LocationsRawPrefix, page), nil))
		require.Equal(t, page, p.Page)
		require.Equal(t, 3, p.TotalPages)
		require.Len(t, p.Content, []int{25, 25, 10, 0}[page-1])
		require.NotNil(t, p.Content, "a page past the last is empty: [], not null")
		for _, loc := range p.Content {
			ids = append(ids, loc.ID)
		}
	}
	require.Len(t, ids, 60)
	require.Equal(t, ids[:20], idsOf(e.firstPage(t, 20)), "both prefixes list the same locations in the same order")

	for _, tt := range []struct{ query, field string }{
		{"page=0", "page"}, {"page=-1", "page"}, {"page=x", "page"}, {"page=", "page"}, {"page=1&page=2", "page"},
		{"page=2147483648", "page"}, {"size=0", "size"}, {"size=101", "size"}, {"size=1.5", "size"}, {"size=1&size=2", "size"},
	} {
		le := listingError(t, e.do(t, http.MethodGet, catalog.LocationsPrefix+"?"+tt.query, nil), http.StatusBadRequest, catalog.CodeValidationError)
		require.Len(t, le.Details, 1, tt.query)
		require.Equal(t, tt.field, le.Details[0].Field, tt.query)
	}
	// Other parameters are ignored.
	require.Len(t, pageOf(t, e.do(t, http.MethodGet, catalog.LocationsPrefix+"?sort=name&size=3", nil)).Content, 3)
}

func idsOf(locs []listing.Location) []string {
	out := make([]string, len(locs))
	for i, l := range locs {
		out[i] = l.ID
	}
	return out
}

func TestListingUpdateLocation(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, sandbox.Config{}, nil)
	locs := e.firstPage(t, 3)
	cur := locationOf(t, e.do(t, http.MethodGet, one(locs[0].ID), nil))
	u := update(cur)
	u.LocationName = "Renamed Bakery"
	r := e.do(t, http.MethodPut, catalog.UpdateLocation.Path(catalog.LocationsRawPrefix, cur.ID), u)
	got := locationOf(t, r)
	require.Equal(t, "Renamed Bakery", got.LocationName)
	require.Equal(t, cur.ID, got.ID)
	for _, prefix := range catalog.LocationsPrefixes {
		require.Equal(t, got, locationOf(t, e.do(t, http.MethodGet, catalog.GetLocation.Path(prefix, cur.ID), nil)), "an update is visible to later gets under %s", prefix)
	}
	require.Equal(t, "Renamed Bakery", e.firstPage(t, 1)[0].LocationName, "and to pages")

	// Every request has an id of its own, the same update sent again
	// too (it had the same one).
	again := e.do(t, http.MethodPut, catalog.UpdateLocation.Path(catalog.LocationsRawPrefix, cur.ID), u)
	locationOf(t, again)
	require.NotEqual(t, r.header.Get("X-Request-Id"), again.header.Get("X-Request-Id"))
	u.City = cur.City + " "
	other := e.do(t, http.MethodPut, one(cur.ID), u)
	locationOf(t, other)
	require.NotEqual(t, r.header.Get("X-Request-Id"), other.header.Get("X-Request-Id"))

	// Invalid data: nothing changes.
	bad := update(cur)
	bad.Phone = "2096438343"
	bad.WebsiteURL = "www.example.com"
	le := listingError(t, e.do(t, http.MethodPut, one(cur.ID), bad), http.StatusBadRequest, catalog.CodeValidationError)
	require.Equal(t, []string{listing.CodeInvalidPhone, listing.CodeInvalidURL}, detailCodes(le))
	require.Equal(t, cur.City+" ", locationOf(t, e.do(t, http.MethodGet, one(cur.ID), nil)).City, "a refused update changes nothing")

	// A location that is not COMPLETE, an unknown one.
	le = listingError(t, e.do(t, http.MethodPut, one(locs[1].ID), update(locs[1])), http.StatusBadRequest, catalog.CodeBadRequest)
	require.Equal(t, []string{catalog.DetailLocationHasNotCompleteStatus}, detailCodes(le))
	le = listingError(t, e.do(t, http.MethodPut, one("no-such-id"), update(cur)), http.StatusNotFound, catalog.CodeResourceNotFound)
	require.Equal(t, []string{catalog.DetailLocationNotFound}, detailCodes(le))

	// The form of the request.
	le = listingError(t, e.do(t, http.MethodPut, one(cur.ID), "[1, 2]"), http.StatusBadRequest, catalog.CodeBadRequest)
	require.Equal(t, []string{"INVALID_BODY"}, detailCodes(le))
	body, err := json.Marshal(update(cur))
	require.NoError(t, err)
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded"} {
		h := http.Header{"Authorization": {"Bearer " + e.token}}
		if ct != "" {
			h.Set("Content-Type", ct)
		}
		le = listingError(t, sendBody(t, e.srv, http.MethodPut, one(cur.ID), h, string(body)), http.StatusUnsupportedMediaType, catalog.CodeBadRequest)
		require.Equal(t, []string{sandbox.DetailUnsupportedMediaType}, detailCodes(le), "Content-Type %q", ct)
	}
	h := http.Header{"Authorization": {"Bearer " + e.token}, "Content-Type": {"application/json; charset=utf-8"}}
	locationOf(t, sendBody(t, e.srv, http.MethodPut, one(cur.ID), h, string(body)))
	huge := `{"locationName":"` + strings.Repeat("x", sandbox.MaxListingBody) + `"}`
	le = listingError(t, e.do(t, http.MethodPut, one(cur.ID), huge), http.StatusRequestEntityTooLarge, catalog.CodeBadRequest)
	require.Equal(t, []string{sandbox.DetailBodyTooLarge}, detailCodes(le))
}

func TestListingUpdateLocations(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, sandbox.Config{}, nil)
	locs := e.firstPage(t, 5)
	item := func(loc listing.Location, name string) listing.Location {
		u := update(loc)
		u.ID, u.LocationName = loc.ID, name
		return u
	}
	invalid := item(locs[3], "Invalid")
	invalid.Phone = "no phone"
	for _, prefix := range catalog.LocationsPrefixes {
		results := bulkOf(t, e.do(t, http.MethodPut, prefix, listing.BulkRequest{Locations: []listing.Location{
			item(locs[0], "Bulk "+prefix), item(locs[1], "Not complete"), {ID: "no-such-id", LocationName: "x"}, invalid, item(locs[2], "Bulk two"),
		}}))
		require.Len(t, results, 5)
		require.Equal(t, listing.Result{LocationID: locs[0].ID, State: catalog.StateUpdated}, results[0])
		require.Equal(t, catalog.StateFailed, results[1].State)
		require.Equal(t, catalog.CodeBadRequest, results[1].Error.Code)
		require.Equal(t, []string{catalog.DetailLocationHasNotCompleteStatus}, detailCodes(*results[1].Error))
		require.Equal(t, catalog.CodeResourceNotFound, results[2].Error.Code, "an unknown id fails alone")
		require.Equal(t, catalog.CodeValidationError, results[3].Error.Code, "invalid data fail alone")
		require.Equal(t, catalog.StateUpdated, results[4].State)
		require.Equal(t, "Bulk "+prefix, locationOf(t, e.do(t, http.MethodGet, one(locs[0].ID), nil)).LocationName)
	}

	// Repeated ids refuse the whole request.
	le := listingError(t, e.do(t, http.MethodPut, catalog.LocationsPrefix, listing.BulkRequest{Locations: []listing.Location{
		item(locs[0], "Never"), item(locs[2], "Never"), item(locs[0], "Never"),
	}}), http.StatusBadRequest, catalog.CodeBadRequest)
	require.Equal(t, []string{catalog.DetailLocationsAreNotUnique}, detailCodes(le))
	require.Equal(t, "Bulk two", locationOf(t, e.do(t, http.MethodGet, one(locs[2].ID), nil)).LocationName, "nothing was updated")

	many := make([]listing.Location, catalog.MaxBulkLocations+1)
	for i := range many {
		many[i] = listing.Location{ID: fmt.Sprintf("id-%d", i)}
	}
	le = listingError(t, e.do(t, http.MethodPut, catalog.LocationsPrefix, listing.BulkRequest{Locations: many}), http.StatusBadRequest, catalog.CodeBadRequest)
	require.Equal(t, "locations", le.Details[0].Field)
}

func TestListingAuthentication(t *testing.T) {
	t.Parallel()
	clock := &movingClock{}
	clock.set(testNow)
	e := newListingEnv(t, sandbox.Config{Now: clock.now}, nil)
	path := catalog.LocationsPrefix
	r := e.as(t, "", http.MethodGet, path, nil)
	statusBody(t, r, http.StatusUnauthorized)
	require.Equal(t, `Bearer realm="sandbox"`, r.header.Get("WWW-Authenticate"))
	for _, auth := range []string{"Apikey " + agency, "Bearer", "Bearer no-such-token", "Basic eDp5"} {
		r := sendBody(t, e.srv, http.MethodGet, path, http.Header{"Authorization": {auth}}, "")
		statusBody(t, r, http.StatusUnauthorized)
		require.Equal(t, `Bearer realm="sandbox", error="invalid_token"`, r.header.Get("WWW-Authenticate"), auth)
	}
	r = sendBody(t, e.srv, http.MethodGet, path+"?key="+agency, nil, "")
	statusBody(t, r, http.StatusUnauthorized)

	// Without the Local Pro plan: 403, though the token is good for the
	// backlink endpoints.
	tok, err := e.sb.IssueToken(basic)
	require.NoError(t, err)
	for _, req := range []struct {
		method, path string
		body         any
	}{{http.MethodGet, path, nil}, {http.MethodGet, one("x"), nil}, {http.MethodPut, one("x"), "{}"}, {http.MethodPut, path, `{"locations":[]}`}} {
		le := listingError(t, e.as(t, tok.AccessToken, req.method, req.path, req.body), http.StatusForbidden, sandbox.CodeForbidden)
		require.Equal(t, []string{sandbox.DetailLocalProRequired}, detailCodes(le))
	}
	require.Equal(t, http.StatusOK, overviewWith(t, e.srv, "Bearer "+tok.AccessToken).status)

	// An expired token.
	e.firstPage(t, 1)
	clock.advance(catalog.AccessTokenLifetime)
	statusBody(t, e.do(t, http.MethodGet, path, nil), http.StatusUnauthorized)

	_, err = sandbox.New(sandbox.Config{APIKeys: []string{"a"}, NoLocalPro: []string{"b"}})
	require.ErrorContains(t, err, "NoLocalPro key 1 of 1 is not one of the API keys")
}

func TestListingMethodsAndPaths(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, sandbox.Config{}, nil)
	for _, prefix := range catalog.LocationsPrefixes {
		for _, path := range []string{prefix, prefix + "/some-id"} {
			for _, method := range []string{http.MethodPost, http.MethodDelete, http.MethodPatch, http.MethodHead} {
				r := e.as(t, "", method, path, nil)
				require.Equal(t, http.StatusMethodNotAllowed, r.status, "%s %s", method, path)
				require.Equal(t, "GET, PUT", r.header.Get("Allow"))
				if method != http.MethodHead {
					listingError(t, r, http.StatusMethodNotAllowed, sandbox.CodeMethodNotAllowed)
				}
			}
		}
		for _, path := range []string{prefix + "/", prefix + "/a/b"} {
			le := listingError(t, e.do(t, http.MethodGet, path, nil), http.StatusNotFound, catalog.CodeResourceNotFound)
			require.Empty(t, le.Details, "no location was asked for")
		}
	}
	// The sample's path without /apis/v4-raw is not a prefix (catalog).
	failed(t, e.do(t, http.MethodGet, "/listing-management/v1/external/locations", nil), http.StatusNotFound)
}

// TestListingRateLimits passes each limit of spec 8.2 on a wall clock the
// test moves.
func TestListingRateLimits(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, sandbox.Config{}, nil)
	locs := e.firstPage(t, 3)
	e.limited = true
	other, err := e.sb.IssueToken(second)
	require.NoError(t, err)
	valid := update(locs[0])
	item := update(locs[2])
	item.ID = locs[2].ID
	bulk := listing.BulkRequest{Locations: []listing.Location{item}}
	for _, tt := range []struct {
		op            *catalog.ListingOperation
		path          string
		body          any
		failingPath   string // a request of the operation that fails
		failingBody   any
		failingStatus int
	}{
		{catalog.GetLocation, one(locs[0].ID), nil, one("no-such-id"), nil, http.StatusNotFound},
		{catalog.GetLocations, catalog.LocationsRawPrefix, nil, catalog.LocationsPrefix + "?page=0", nil, http.StatusBadRequest},
		{catalog.UpdateLocation, one(locs[0].ID), valid, one(locs[0].ID), "[]", http.StatusBadRequest},
		{catalog.UpdateLocations, catalog.LocationsPrefix, bulk, catalog.LocationsPrefix, `{"locations":[]}`, http.StatusBadRequest},
	} {
		t.Run(tt.op.Name, func(t *testing.T) {
			n, per := tt.op.Rate.Requests, tt.op.Rate.Per
			e.wall.advance(time.Hour)
			// A request that fails takes a place in the window.
			require.Equal(t, tt.failingStatus, e.do(t, tt.op.Method, tt.failingPath, tt.failingBody).status)
			e.wall.advance(per / 2)
			for i := range n - 1 {
				require.Equal(t, http.StatusOK, e.do(t, tt.op.Method, tt.path, tt.body).status, "request %d of %d", i+2, n)
			}
			msg := statusBody(t, e.do(t, tt.op.Method, tt.path, tt.body), http.StatusTooManyRequests)
			require.Contains(t, msg, tt.op.Name)
			require.Contains(t, msg, requestsPer(n, per))
			// The other operations, and other accounts, have limits of
			// their own.
			for _, o := range catalog.ListingOperations() {
				if o != tt.op && o != catalog.UpdateLocations {
					require.NotEqual(t, http.StatusTooManyRequests, e.do(t, o.Method, o.Path(catalog.LocationsPrefix, locs[0].ID), map[bool]any{true: valid}[o.Body]).status, o.Name)
				}
			}
			require.NotEqual(t, http.StatusTooManyRequests, e.as(t, other.AccessToken, tt.op.Method, tt.path, tt.body).status, "another account")
			// The window slides: a period after the failed request, its
			// place is free, and only its: the 429s took none.
			statusBody(t, e.do(t, tt.op.Method, tt.path, tt.body), http.StatusTooManyRequests)
			e.wall.advance(per - per/2)
			require.Equal(t, http.StatusOK, e.do(t, tt.op.Method, tt.path, tt.body).status)
			statusBody(t, e.do(t, tt.op.Method, tt.path, tt.body), http.StatusTooManyRequests)
		})
	}
}

// requestsPer is how a 429's message states a limit.
func requestsPer(n int, per time.Duration) string {
	return map[time.Duration]string{time.Second: fmt.Sprintf("%d requests a second", n), time.Minute: fmt.Sprintf("%d requests a minute", n)}[per]
}

// TestListingBulkOneAtATime holds a bulk update in flight with the
// listing hook: a second one is refused meanwhile.
func TestListingBulkOneAtATime(t *testing.T) {
	t.Parallel()
	entered, proceed := make(chan string, 4), make(chan struct{})
	e := newListingEnv(t, sandbox.Config{}, func(cfg sandbox.Config) (*sandbox.Server, error) {
		return sandbox.NewWithListingHook(cfg, func(ctx context.Context, op, account string) {
			if op != catalog.UpdateLocations.Name {
				return
			}
			entered <- account
			select {
			case <-proceed:
			case <-ctx.Done():
			}
		})
	})
	locs := e.firstPage(t, 1)
	item := update(locs[0])
	item.ID = locs[0].ID
	bulk := listing.BulkRequest{Locations: []listing.Location{item}}

	var wg sync.WaitGroup
	var first reply
	wg.Go(func() {
		// Not e.do: require must not run off the test's goroutine.
		first = sendNoFail(e.srv, e.token, catalog.LocationsPrefix, bulk)
	})
	require.Equal(t, agency, <-entered)
	msg := statusBody(t, e.do(t, http.MethodPut, catalog.LocationsRawPrefix, bulk), http.StatusTooManyRequests)
	require.Contains(t, msg, "one request at a time")
	// A single update goes on beside it (design notes).
	locationOf(t, e.do(t, http.MethodPut, one(locs[0].ID), update(locs[0])))
	close(proceed)
	wg.Wait()
	require.Len(t, bulkOf(t, first), 1)
	e.do(t, http.MethodPut, catalog.LocationsPrefix, bulk)
	require.Equal(t, agency, <-entered, "once it is answered the next one goes in")
}

// sendNoFail sends a bulk update off the test's goroutine; a failed round
// trip is status 0.
func sendNoFail(srv *httptest.Server, token, path string, body any) reply {
	data, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPut, srv.URL+path, bytes.NewReader(data))
	if err != nil {
		return reply{}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		return reply{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func TestListingCostsNothing(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, sandbox.Config{Units: 100}, nil)
	locs := e.firstPage(t, 2)
	locationOf(t, e.do(t, http.MethodGet, one(locs[0].ID), nil))
	locationOf(t, e.do(t, http.MethodPut, one(locs[0].ID), update(locs[0])))
	listingError(t, e.do(t, http.MethodGet, one("nope"), nil), http.StatusNotFound, catalog.CodeResourceNotFound)
	require.Equal(t, sandbox.Usage{Key: agency}, e.sb.Usage(agency), "listing calls cost no units and are not counted (spec 8.1)")
	left, limited := e.sb.UnitsRemaining(agency)
	require.True(t, limited)
	require.Equal(t, int64(100), left)
}

// TestListingFaults: the faults of Config.Faults on the listing endpoints.
func TestListingFaults(t *testing.T) {
	t.Parallel()
	t.Run("status faults come before the update", func(t *testing.T) {
		t.Parallel()
		e := newListingEnv(t, sandbox.Config{Faults: sandbox.Faults{Internal: 0.3, Unavailable: 0.3}}, nil)
		var id string
		for id == "" {
			e.wall.advance(time.Second)
			if r := e.do(t, http.MethodGet, catalog.LocationsPrefix+"?size=1", nil); r.status == http.StatusOK {
				id = pageOf(t, r).Content[0].ID
			}
		}
		get := func() listing.Location {
			t.Helper()
			for {
				e.wall.advance(time.Second)
				if r := e.do(t, http.MethodGet, one(id), nil); r.status == http.StatusOK {
					return locationOf(t, r)
				}
			}
		}
		faults := map[int]int{}
		for i := range 40 {
			e.wall.advance(time.Second)
			u := update(get())
			u.LocationName = fmt.Sprintf("Attempt %d", i)
			r := e.do(t, http.MethodPut, one(id), u)
			faults[r.status]++
			switch r.status {
			case http.StatusOK:
				require.Equal(t, u.LocationName, get().LocationName)
			case http.StatusInternalServerError, http.StatusServiceUnavailable:
				require.Contains(t, statusBody(t, r, r.status), "a fault injected by the sandbox")
				require.Equal(t, fmt.Sprint(r.status), r.header.Get("X-Sandbox-Faults"))
				require.NotEqual(t, u.LocationName, get().LocationName, "a 5xx fault is drawn before the update is applied")
			default:
				t.Fatalf("status %d: %s", r.status, r.body)
			}
		}
		require.Positive(t, faults[http.StatusOK])
		require.Positive(t, faults[http.StatusInternalServerError])
		require.Positive(t, faults[http.StatusServiceUnavailable])
		require.Equal(t, sandbox.Usage{Key: agency}, e.sb.Usage(agency), "faults cost nothing either")
	})
	t.Run("429 fault", func(t *testing.T) {
		t.Parallel()
		e := newListingEnv(t, sandbox.Config{Faults: sandbox.Faults{TooManyRequests: 1}}, nil)
		r := e.do(t, http.MethodGet, catalog.LocationsPrefix, nil)
		require.Contains(t, statusBody(t, r, http.StatusTooManyRequests), "injected")
		require.Equal(t, "429", r.header.Get("X-Sandbox-Faults"))
	})
	t.Run("cut GETs, never updates", func(t *testing.T) {
		t.Parallel()
		e := newListingEnv(t, sandbox.Config{Faults: sandbox.Faults{Cut: 1}}, nil)
		ctx := t.Context()
		read := func(method, path string, body string) (int, http.Header, []byte, error) {
			req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+e.token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := e.srv.Client().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header, b, err
		}
		// The same world without faults answers the whole body.
		plain := newListingEnv(t, sandbox.Config{}, nil)
		full := plain.do(t, http.MethodGet, catalog.LocationsPrefix+"?size=50", nil).body
		status, h, b, err := read(http.MethodGet, catalog.LocationsPrefix+"?size=50", "")
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "cut", h.Get("X-Sandbox-Faults"))
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "a cut page ends early")
		require.Less(t, len(b), len(full))
		require.True(t, bytes.HasPrefix(full, b), "what arrives is the start of the page")

		loc, le := locations.New(1).Get(agency, locations.New(1).ID(agency, 0), testNow)
		require.Nil(t, le)
		_, h, _, err = read(http.MethodGet, one(loc.ID), "")
		require.Equal(t, "cut", h.Get("X-Sandbox-Faults"))
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)

		body, merr := json.Marshal(update(loc))
		require.NoError(t, merr)
		status, h, b, err = read(http.MethodPut, one(loc.ID), string(body))
		require.NoError(t, err, "an update's answer is never cut")
		require.Equal(t, http.StatusOK, status, "%s", b)
		require.Empty(t, h.Get("X-Sandbox-Faults"))
		require.True(t, json.Valid(b))
		_, _, _, err = read(http.MethodGet, one("no-such-id"), "")
		require.NoError(t, err, "nor is an error")
	})
	t.Run("slow", func(t *testing.T) {
		t.Parallel()
		var slept []time.Duration
		var mu sync.Mutex
		e := newListingEnv(t, sandbox.Config{Faults: sandbox.Faults{Slow: 1}, SlowDelay: 3 * time.Second}, func(cfg sandbox.Config) (*sandbox.Server, error) {
			return sandbox.NewWithHooks(cfg, func(_ context.Context, d time.Duration) error {
				mu.Lock()
				slept = append(slept, d)
				mu.Unlock()
				return nil
			}, nil)
		})
		r := e.do(t, http.MethodGet, catalog.LocationsPrefix, nil)
		pageOf(t, r)
		require.Equal(t, "slow", r.header.Get("X-Sandbox-Faults"))
		r = e.do(t, http.MethodGet, one("nope"), nil)
		listingError(t, r, http.StatusNotFound, catalog.CodeResourceNotFound)
		require.Equal(t, "slow", r.header.Get("X-Sandbox-Faults"))
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []time.Duration{3 * time.Second, 3 * time.Second}, slept)
	})
}

// TestListingRefusesUnknownWeekdays: a key of businessHours that is not
// one of the spec's seven weekdays as it spells them ("mon", "Monday") is
// refused with its field, singly and in a bulk item, and the location is
// left as it was. It was answered 200: "mon" dropped (the location stored
// closed all week), "Monday" taken for monday.
func TestListingRefusesUnknownWeekdays(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, sandbox.Config{}, nil)
	cur := locationOf(t, e.do(t, http.MethodGet, one(e.firstPage(t, 1)[0].ID), nil))
	body := func(hours string) string {
		b, err := json.Marshal(update(cur))
		require.NoError(t, err)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &m))
		m["businessHours"] = json.RawMessage(hours)
		m["locationName"] = json.RawMessage(`"Renamed"`)
		b, err = json.Marshal(m)
		require.NoError(t, err)
		return string(b)
	}
	for _, key := range []string{"mon", "Monday", "MONDAY", "lunes"} {
		hours := `{"` + key + `": [{"from": "09:00", "to": "17:00"}]}`
		le := listingError(t, e.do(t, http.MethodPut, one(cur.ID), body(hours)), http.StatusBadRequest, catalog.CodeValidationError)
		require.Equal(t, listing.CodeUnknownField, detailCodes(le)[0], key)
		require.Equal(t, "businessHours."+key, le.Details[0].Field)
		require.Contains(t, le.Details[0].Message, "monday, tuesday")

		item := strings.Replace(body(hours), "{", `{"id": `+strconv.Quote(cur.ID)+`, `, 1)
		res := bulkOf(t, e.do(t, http.MethodPut, catalog.LocationsPrefix, `{"locations": [`+item+`]}`))
		require.Equal(t, catalog.StateFailed, res[0].State, key)
		require.Equal(t, "businessHours."+key, res[0].Error.Details[0].Field)
	}
	require.Equal(t, cur, locationOf(t, e.do(t, http.MethodGet, one(cur.ID), nil)), "a refused update changes nothing")
}

// TestListingRequestIDsAreUnique: every listing request gets an id of its
// own, as the real API gives: the same page read twice, and by two
// accounts, the same update sent twice, an error answered twice. They
// repeated for identical requests and across accounts.
func TestListingRequestIDsAreUnique(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, sandbox.Config{}, nil)
	tok2, err := e.sb.IssueToken(second)
	require.NoError(t, err)
	cur := locationOf(t, e.do(t, http.MethodGet, one(e.firstPage(t, 1)[0].ID), nil))
	seen := map[string]int{}
	add := func(r reply) {
		id := r.header.Get("X-Request-Id")
		require.NotEmpty(t, id)
		seen[id]++
		require.Equal(t, 1, seen[id], "request id %s given twice", id)
	}
	page := catalog.LocationsPrefix + "?size=5"
	for range 3 {
		add(e.do(t, http.MethodGet, page, nil))
		add(e.as(t, tok2.AccessToken, http.MethodGet, page, nil))
		add(e.do(t, http.MethodPut, one(cur.ID), update(cur)))
		add(e.do(t, http.MethodGet, one("no-such-id"), nil))
	}
}

// TestSandboxRefusesOversizedAccount: a key whose n<digits> asks for more
// locations than an account of the sandbox holds (MaxLocations) is
// refused when the sandbox starts, with the bound and without the key;
// it was served a drawn few (16 for huge-n150000), silently.
func TestSandboxRefusesOversizedAccount(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"huge-n150000", "secret-n99999999999999999999999"} {
		_, err := sandbox.New(sandbox.Config{APIKeys: []string{"ok-n100000", key}})
		require.Error(t, err, key)
		require.Contains(t, err.Error(), "API key 2 of 2 asks for")
		require.Contains(t, err.Error(), "at most 100000")
		require.NotContains(t, err.Error(), key)
	}
	_, err := sandbox.New(sandbox.Config{APIKeys: []string{"huge-n150000"}})
	require.ErrorContains(t, err, "asks for 150000 locations")
}

// TestListingBodyTimeout: a bulk update whose client sends the headers
// and stalls is answered 408 once Config.BodyTimeout has passed, and the
// account's one bulk slot is free again: the next bulk update goes. It
// held the slot for as long as the connection stayed open, every other
// bulk update of the account answered 429.
func TestListingBodyTimeout(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, sandbox.Config{BodyTimeout: 200 * time.Millisecond}, nil)
	cur := locationOf(t, e.do(t, http.MethodGet, one(e.firstPage(t, 1)[0].ID), nil))
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	// The test's own bound: a sandbox without the timeout would hold the
	// request for ever.
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	_, err = fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: sandbox\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"locations\": [",
		catalog.LocationsPrefix, e.token)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "no answer to the stalled request")
	defer resp.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(b), sandbox.DetailBodyTimeout)

	item := update(cur)
	raw, err := json.Marshal(item)
	require.NoError(t, err)
	body := `{"locations": [` + strings.Replace(string(raw), "{", `{"id": `+strconv.Quote(cur.ID)+`, `, 1) + `]}`
	res := bulkOf(t, e.do(t, http.MethodPut, catalog.LocationsPrefix, body))
	require.Equal(t, catalog.StateUpdated, res[0].State)
}

// TestListingSpanishRegion: a Spanish location names its province, not
// its autonomous community (spec 2.14): Cataluña is refused, naming the
// provinces to give; Barcelona passes. Any region passed.
func TestListingSpanishRegion(t *testing.T) {
	t.Parallel()
	e := newListingEnv(t, sandbox.Config{APIKeys: []string{"es-n100"}}, nil)
	var es *listing.Location
	for _, l := range e.firstPage(t, 100) {
		if l.CountryCode == "ES" && l.Status == "" {
			cur := locationOf(t, e.do(t, http.MethodGet, one(l.ID), nil))
			if cur.Status == catalog.StatusComplete {
				es = &cur
				break
			}
		}
	}
	require.NotNil(t, es, "a COMPLETE Spanish location among 100")
	u := update(*es)
	u.Region = "Cataluña"
	le := listingError(t, e.do(t, http.MethodPut, one(es.ID), u), http.StatusBadRequest, catalog.CodeValidationError)
	require.Equal(t, []string{listing.CodeInvalidRegion}, detailCodes(le))
	require.Equal(t, "region", le.Details[0].Field)
	require.Contains(t, le.Details[0].Message, "Barcelona, Girona, Lleida or Tarragona")
	u.Region = "Barcelona"
	require.Equal(t, "Barcelona", locationOf(t, e.do(t, http.MethodPut, one(es.ID), u)).Region)
}
