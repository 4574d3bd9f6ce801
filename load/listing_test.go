package load_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/sandbox/locations"
	"github.com/seoetl/etl/transform"
)

const pullAccount = "agency-n1200"

// pulled is a page of a pull: the body of Get locations, and the
// locations as single reads of Get location give them, with their status.
type pulled struct {
	body     []byte
	locs     []listing.Location
	statuses map[string]string
}

// pull reads every location of account from store on the sandbox day of
// at, in pages of the largest size, each with the statuses of its
// locations (as a pull completes page items with single reads), except
// the ids in drop.
func pull(t *testing.T, store *locations.Store, account string, at time.Time, drop ...string) []pulled {
	t.Helper()
	var pages []pulled
	for p := 1; ; p++ {
		page, e := store.Page(account, p, locations.MaxPageSize, at)
		require.Nil(t, e)
		if len(page.Content) == 0 {
			return pages
		}
		page.Content = slices.DeleteFunc(page.Content, func(loc listing.Location) bool { return slices.Contains(drop, loc.ID) })
		pl := pulled{statuses: map[string]string{}}
		for _, loc := range page.Content {
			require.Empty(t, loc.Status, "the items of a page carry no status")
			full, e := store.Get(account, loc.ID, at)
			require.Nil(t, e)
			pl.locs = append(pl.locs, full)
			pl.statuses[loc.ID] = full.Status
		}
		body, err := json.Marshal(listing.PageBody{Data: page, RequestID: "r1"})
		require.NoError(t, err)
		pl.body = body
		pages = append(pages, pl)
	}
}

// decodePage decodes a body of Get locations; the page is released when
// the test ends, and must hold every byte it took then.
func decodePage(t *testing.T, body []byte) *transform.ListingPage {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	page, err := transform.DecodeListingPage(bytes.NewReader(body), transform.Options{Allocator: mem})
	require.NoError(t, err)
	t.Cleanup(page.Release)
	return page
}

// pageOf is the decoded page of Get locations whose content is locs.
func pageOf(t *testing.T, locs ...listing.Location) *transform.ListingPage {
	t.Helper()
	body, err := json.Marshal(listing.PageBody{Data: listing.Page{Page: 1, TotalElements: len(locs), TotalPages: 1, Content: locs}})
	require.NoError(t, err)
	page := decodePage(t, body)
	require.Empty(t, page.Rejects)
	return page
}

// locationOf is the decoded answer of Get location for loc.
func locationOf(t *testing.T, loc listing.Location) *transform.ListingPage {
	t.Helper()
	body, err := json.Marshal(listing.LocationBody{Data: loc, Requested: "r1"})
	require.NoError(t, err)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	page, err := transform.DecodeLocation(bytes.NewReader(body), transform.Options{Allocator: mem})
	require.NoError(t, err)
	t.Cleanup(page.Release)
	require.Empty(t, page.Rejects)
	return page
}

// loadPull loads pages, one transaction each, then marks gone what they did
// not list.
func loadPull(t *testing.T, l *load.Loader, pool *pgxpool.Pool, account string, pages []pulled, at time.Time) (load.ListingResult, int) {
	t.Helper()
	var sum load.ListingResult
	var seen []string
	for _, pl := range pages {
		page := decodePage(t, pl.body)
		require.Empty(t, page.Rejects)
		require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
			res, err := l.ListingPage(t.Context(), tx, account, page, pl.statuses, at)
			sum = sum.Add(res)
			return err
		}))
		seen = append(seen, page.IDs...)
	}
	var gone int
	require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) (err error) {
		gone, err = l.ListingGone(t.Context(), tx, account, seen, at)
		return err
	}))
	return sum, gone
}

type problemKey struct{ id, code, message string }

func problemsOf(pages []pulled) map[problemKey]bool {
	out := map[problemKey]bool{}
	for _, pl := range pages {
		for _, loc := range pl.locs {
			for _, e := range loc.Errors {
				out[problemKey{loc.ID, e.Code, e.Message}] = true
			}
		}
	}
	return out
}

// tableDigest is a digest of the contents of the listing tables.
func tableDigest(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var d string
	require.NoError(t, pool.QueryRow(t.Context(), `
		SELECT md5(coalesce((SELECT string_agg(v::text, '|' ORDER BY account, location_id, valid_from) FROM listing_versions v), '')
		        || coalesce((SELECT string_agg(p::text, '|' ORDER BY account, location_id, code, message, first_seen_at) FROM listing_problems p), ''))`).Scan(&d))
	return d
}

func TestListingPullTwoDays(t *testing.T) {
	t.Parallel()
	l, pool, _ := newLoader(t)
	ctx := t.Context()
	store := locations.New(1)
	n := store.Count(pullAccount)
	require.GreaterOrEqual(t, n, 1000)
	day1 := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	day2 := day1.Add(24 * time.Hour)

	pages1 := pull(t, store, pullAccount, day1)
	res, gone := loadPull(t, l, pool, pullAccount, pages1, day1)
	problems1 := problemsOf(pages1)
	require.Equal(t, load.ListingResult{Locations: int64(n), NewVersions: int64(n), Opened: int64(len(problems1))}, res)
	require.Zero(t, gone)

	// Every field of a location landed.
	first := pages1[0].locs[0]
	var got struct {
		Name, City, Address, Phone, Country, Status string
		Zip, Region, Website, Line2                 *string
		OpenDays                                    int
		Hours                                       *listing.BusinessHours
		Holidays                                    []listing.HolidayHours
		Reopen                                      *time.Time
	}
	require.NoError(t, pool.QueryRow(ctx, `
		SELECT location_name, city, address, phone, country_code, status, zip, region, website_url,
		       additional_address_info, open_days, business_hours, holiday_hours, reopen_date
		FROM listings_current WHERE account = $1 AND location_id = $2`, pullAccount, first.ID).Scan(
		&got.Name, &got.City, &got.Address, &got.Phone, &got.Country, &got.Status, &got.Zip, &got.Region,
		&got.Website, &got.Line2, &got.OpenDays, &got.Hours, &got.Holidays, &got.Reopen))
	require.Equal(t, first.LocationName, got.Name)
	require.Equal(t, first.City, got.City)
	require.Equal(t, first.Address, got.Address)
	require.Equal(t, first.Phone, got.Phone)
	require.Equal(t, first.CountryCode, got.Country)
	require.Equal(t, "COMPLETE", got.Status)
	require.Equal(t, first.BusinessHours, got.Hours)
	require.Equal(t, len(first.HolidayHours), len(got.Holidays))
	var statuses int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM listings_current WHERE status IS NOT NULL AND open_days BETWEEN 0 AND 7`).Scan(&statuses))
	require.Equal(t, n, statuses)

	// Between the pulls, one location changes and one leaves the account.
	changed, dropped := store.ID(pullAccount, 0), store.ID(pullAccount, 5)
	cur, e := store.Get(pullAccount, changed, day1)
	require.Nil(t, e)
	cur.LocationName = "Renamed Bakery"
	body, err := json.Marshal(cur)
	require.NoError(t, err)
	_, e = store.UpdateOne(pullAccount, changed, body, day1.Add(12*time.Hour))
	require.Nil(t, e)
	pages2 := pull(t, store, pullAccount, day2, dropped)
	problems2 := problemsOf(pages2)
	var opened, resolved int64
	for k := range problems2 {
		if !problems1[k] {
			opened++
		}
	}
	for k := range problems1 {
		if !problems2[k] {
			resolved++ // no longer carried, or its location is gone
		}
	}
	require.Positive(t, opened, "the sandbox's problems come and go with the day")
	require.Positive(t, resolved)

	res, gone = loadPull(t, l, pool, pullAccount, pages2, day2)
	require.Equal(t, 1, gone)
	require.Equal(t, int64(n-1), res.Locations)
	require.Equal(t, int64(1), res.NewVersions)
	require.Equal(t, int64(1), res.Changed)
	require.Equal(t, int64(n-2), res.Unchanged)
	require.Equal(t, opened, res.Opened)

	type version struct {
		From, ObservedAt time.Time
		To, GoneAt       *time.Time
		Name             string
	}
	versions := func(id string) []version {
		rows, err := pool.Query(ctx, `SELECT valid_from, observed_at, valid_to, gone_at, location_name
			FROM listing_versions WHERE account = $1 AND location_id = $2 ORDER BY valid_from`, pullAccount, id)
		require.NoError(t, err)
		vs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[version])
		require.NoError(t, err)
		return vs
	}
	vs := versions(changed)
	require.Len(t, vs, 2)
	require.Equal(t, day2, vs[0].To.UTC())
	require.Equal(t, day1, vs[0].ObservedAt.UTC())
	require.Equal(t, "Renamed Bakery", vs[1].Name)
	require.Equal(t, day2, vs[1].From.UTC())
	require.Nil(t, vs[1].To)
	vs = versions(dropped)
	require.Len(t, vs, 1)
	require.Nil(t, vs[0].To)
	require.Equal(t, day2, vs[0].GoneAt.UTC())
	require.Equal(t, day1, vs[0].ObservedAt.UTC())
	vs = versions(store.ID(pullAccount, 7))
	require.Len(t, vs, 1, "an unchanged location")
	require.Equal(t, day1, vs[0].From.UTC())
	require.Equal(t, day2, vs[0].ObservedAt.UTC())
	var count, goneCount int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE gone) FROM listings_current`).Scan(&count, &goneCount))
	require.Equal(t, n, count)
	require.Equal(t, 1, goneCount)

	// Each problem has the right times.
	rows, err := pool.Query(ctx, `SELECT location_id, code, message, first_seen_at, last_seen_at, resolved_at FROM listing_problems`)
	require.NoError(t, err)
	type occurrence struct {
		ID, Code, Message string
		First, Last       time.Time
		Resolved          *time.Time
	}
	occs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[occurrence])
	require.NoError(t, err)
	require.Len(t, occs, len(problems1)+int(opened))
	for _, o := range occs {
		k := problemKey{o.ID, o.Code, o.Message}
		in1, in2 := problems1[k], problems2[k]
		switch {
		case in1 && in2:
			require.Equal(t, day1, o.First.UTC(), "%v", k)
			require.Equal(t, day2, o.Last.UTC(), "%v", k)
			require.Nil(t, o.Resolved, "%v", k)
		case in1:
			require.Equal(t, day1, o.First.UTC(), "%v", k)
			require.Equal(t, day1, o.Last.UTC(), "%v", k)
			require.NotNil(t, o.Resolved, "%v", k)
			require.Equal(t, day2, o.Resolved.UTC(), "%v", k)
		default:
			require.True(t, in2)
			require.Equal(t, day2, o.First.UTC(), "%v", k)
			require.Nil(t, o.Resolved, "%v", k)
		}
	}
	var resolvedRows int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM listing_problems WHERE resolved_at IS NOT NULL`).Scan(&resolvedRows))
	require.Equal(t, resolved, resolvedRows)

	// The same pull loaded again at the same time changes nothing.
	before := tableDigest(t, pool)
	res, gone = loadPull(t, l, pool, pullAccount, pages2, day2)
	require.Zero(t, gone)
	require.Equal(t, load.ListingResult{Locations: int64(n - 1), Unchanged: int64(n - 1)}, res)
	require.Equal(t, before, tableDigest(t, pool))

	// The dropped location comes back: a new version, no longer gone.
	res, _ = loadPull(t, l, pool, pullAccount, pull(t, store, pullAccount, day2.Add(24*time.Hour)), day2.Add(24*time.Hour))
	require.Equal(t, int64(1), res.NewVersions)
	vs = versions(dropped)
	require.Len(t, vs, 2)
	require.Nil(t, vs[1].GoneAt)
	require.Equal(t, day2.Add(24*time.Hour), vs[0].To.UTC())
}

func TestListingAccountsDoNotCollide(t *testing.T) {
	t.Parallel()
	l, pool, _ := newLoader(t)
	ctx := t.Context()
	at := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	loc := func(name string, errs ...listing.LocationError) listing.Location {
		return listing.Location{ID: "L1", LocationName: name, City: "Bern", Address: "Marktgasse 1",
			Phone: "+41 31 000 00 00", CountryCode: "CH", Errors: errs}
	}
	problem := listing.LocationError{Code: "X", Message: "cannot sync"}
	for account, l1 := range map[string]listing.Location{"a": loc("Alpha", problem), "b": loc("Beta", problem)} {
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			res, err := l.ListingPage(ctx, tx, account, pageOf(t, l1), nil, at)
			require.Equal(t, load.ListingResult{Locations: 1, NewVersions: 1, Opened: 1}, res)
			return err
		}))
	}
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		n, err := l.ListingGone(ctx, tx, "a", nil, at.Add(time.Hour))
		require.Equal(t, 1, n)
		return err
	}))
	rows, err := pool.Query(ctx, `SELECT c.account || ':' || c.location_name || ':' || c.gone || ':' || (p.resolved_at IS NULL)
		FROM listings_current c JOIN listing_problems p USING (account, location_id) ORDER BY 1`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"a:Alpha:true:false", "b:Beta:false:true"}, got)
}

// A page carries no status (spec 4.5): the status read before carries
// over, and only a status that differs starts a version.
func TestListingStatusCarriesOver(t *testing.T) {
	t.Parallel()
	l, pool, _ := newLoader(t)
	ctx := t.Context()
	store := locations.New(1)
	at := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	id := store.ID(pullAccount, 1) // always IN_PROGRESS
	full, e := store.Get(pullAccount, id, at)
	require.Nil(t, e)
	require.Equal(t, locations.StatusInProgress, full.Status)
	page := full.Clone()
	page.Status = ""
	// A location with a status is read alone (Get location); one without,
	// in a page.
	step := func(loc listing.Location, at time.Time) load.ListingResult {
		p := pageOf(t, loc)
		if loc.Status != "" {
			p = locationOf(t, loc)
		}
		var res load.ListingResult
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
			res, err = l.ListingPage(ctx, tx, pullAccount, p, nil, at)
			return err
		}))
		return res
	}
	status := func() (string, int) {
		var s string
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT status FROM listings_current WHERE location_id = $1),
			(SELECT count(*) FROM listing_versions WHERE location_id = $1)`, id).Scan(&s, &n))
		return s, n
	}
	require.Equal(t, int64(1), step(full, at).NewVersions)
	require.Equal(t, int64(1), step(page, at.Add(time.Hour)).Unchanged)
	s, n := status()
	require.Equal(t, locations.StatusInProgress, s)
	require.Equal(t, 1, n)
	full.Status = "COMPLETE"
	require.Equal(t, int64(1), step(full, at.Add(2*time.Hour)).Changed)
	s, n = status()
	require.Equal(t, "COMPLETE", s)
	require.Equal(t, 2, n)
	// A late, older observation changes nothing, problems included.
	before := tableDigest(t, pool)
	late := page.Clone()
	late.LocationName = "Late"
	late.Errors = append(late.Errors, listing.LocationError{Code: "LATE", Message: "an old problem"})
	require.Equal(t, load.ListingResult{Locations: 1, Unchanged: 1}, step(late, at.Add(30*time.Minute)))
	require.Equal(t, before, tableDigest(t, pool))
}

func TestListingAnalystReads(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDB(t)
	analyst := pgtest.NewRole(t, dbURL, "etl_analyst")
	conn, err := pgx.Connect(t.Context(), analyst)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	for _, rel := range []string{"listing_versions", "listings_current", "listing_problems"} {
		_, err := conn.Exec(t.Context(), "SELECT * FROM "+rel+" LIMIT 1")
		require.NoError(t, err, rel)
	}
	_, err = conn.Exec(t.Context(), "DELETE FROM listing_versions")
	require.Error(t, err, "the analyst cannot write")
}

// The statuses read from Get location fill the rows of a page that have
// none; a row's own status wins; a location without either keeps its
// status.
func TestListingStatusesFillThePage(t *testing.T) {
	t.Parallel()
	l, pool, _ := newLoader(t)
	ctx := t.Context()
	at := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	loc := func(id string) listing.Location {
		return listing.Location{ID: id, LocationName: "Shop " + id, City: "Bern", Address: "Marktgasse 1", Phone: "+41 31 000 00 00"}
	}
	step := func(page *transform.ListingPage, statuses map[string]string, at time.Time) load.ListingResult {
		var res load.ListingResult
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
			res, err = l.ListingPage(ctx, tx, pullAccount, page, statuses, at)
			return err
		}))
		return res
	}
	status := func() map[string]string {
		rows, err := pool.Query(ctx, `SELECT location_id, coalesce(status, '-') FROM listings_current`)
		require.NoError(t, err)
		out := map[string]string{}
		var id, st string
		_, err = pgx.ForEachRow(rows, []any{&id, &st}, func() error {
			out[id] = st
			return nil
		})
		require.NoError(t, err)
		return out
	}

	res := step(pageOf(t, loc("A"), loc("B"), loc("C")), map[string]string{"A": "COMPLETE", "B": "", "X": "IN_PROGRESS"}, at)
	require.Equal(t, load.ListingResult{Locations: 3, NewVersions: 3}, res)
	require.Equal(t, map[string]string{"A": "COMPLETE", "B": "-", "C": "-"}, status())

	// Without statuses, the page's locations keep theirs.
	res = step(pageOf(t, loc("A"), loc("B"), loc("C")), nil, at.Add(time.Hour))
	require.Equal(t, load.ListingResult{Locations: 3, Unchanged: 3}, res)
	require.Equal(t, map[string]string{"A": "COMPLETE", "B": "-", "C": "-"}, status())

	// A single read's own status wins over statuses.
	c := loc("C")
	c.Status = "IN_PROGRESS"
	res = step(locationOf(t, c), map[string]string{"C": "COMPLETE"}, at.Add(2*time.Hour))
	require.Equal(t, load.ListingResult{Locations: 1, NewVersions: 1, Changed: 1}, res)
	require.Equal(t, "IN_PROGRESS", status()["C"])
}

// A bad item is rejected by the decoder; the page loads without it, and
// the caller quarantines it, with its raw JSON, in the same transaction.
// A reopenDate that is not a date no longer fails the page. The later of
// two items of an id wins.
func TestListingBadItemsGoOn(t *testing.T) {
	t.Parallel()
	l, pool, _ := newLoader(t)
	ctx := t.Context()
	at := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	bad := `{"id":"B","locationName":"Bad","reopenDate":"2026-02-30"}`
	body := `{"data":{"page":1,"totalElements":4,"totalPages":1,"content":[
		{"id":"A","locationName":"First","errors":[{"code":"OLD","message":"old"}]},` + bad + `,
		{"id":"C","locationName":"Kiosk","reopenDate":"2027-03-01","businessHours":{"monday":[{"from":"09:00","to":"12:00"}]}},
		{"id":"A","locationName":"Second","errors":[{"code":"NEW","message":"new"}]}]},"requestId":"r1"}`
	page := decodePage(t, []byte(body))
	require.Equal(t, []string{"C", "A"}, page.IDs)
	require.Len(t, page.Rejects, 1)
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		res, err := l.ListingPage(ctx, tx, pullAccount, page, nil, at)
		if err != nil {
			return err
		}
		require.Equal(t, load.ListingResult{Locations: 2, NewVersions: 2, Opened: 1}, res)
		var rejected []load.Rejected
		for _, r := range page.Rejects {
			rejected = append(rejected, load.Rejected{Endpoint: "locations", Request: "account " + pullAccount,
				Line: r.Line, Raw: r.Raw, Reason: r.Reason, ObservedAt: at})
		}
		return l.Quarantine(ctx, tx, rejected)
	}))

	var name string
	var reopen time.Time
	var openDays int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT location_name FROM listings_current WHERE location_id = 'A'),
		reopen_date, open_days FROM listings_current WHERE location_id = 'C'`).Scan(&name, &reopen, &openDays))
	require.Equal(t, "Second", name)
	require.Equal(t, time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC), reopen)
	require.Equal(t, 1, openDays)
	var codes []string
	require.NoError(t, pool.QueryRow(ctx, `SELECT array_agg(code) FROM listing_problems`).Scan(&codes))
	require.Equal(t, []string{"NEW"}, codes)
	var raw, reason string
	require.NoError(t, pool.QueryRow(ctx, `SELECT raw, reason FROM quarantine`).Scan(&raw, &reason))
	require.Equal(t, bad, raw)
	require.Equal(t, `item 2 (id "B"): field reopenDate: "2026-02-30" is not a date (YYYY-MM-DD)`, reason)
}

// The loader copies a page's records as they are: an id twice (which the
// decoder never gives) or no page fails before anything is written.
func TestListingPageRefusesABadRecord(t *testing.T) {
	t.Parallel()
	l, pool, _ := newLoader(t)
	ctx := t.Context()
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), transform.ListingSchema())
	defer rb.Release()
	for range 2 {
		rb.Field(0).(*array.StringBuilder).Append("X")
		for i := 1; i < rb.Schema().NumFields(); i++ {
			rb.Field(i).AppendNull()
		}
	}
	rec := rb.NewRecord()
	defer rec.Release()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.Background())
	_, err = l.ListingPage(ctx, tx, pullAccount, &transform.ListingPage{Locations: rec}, nil, time.Now())
	require.ErrorContains(t, err, `location "X" is twice in the page`)
	_, err = l.ListingPage(ctx, tx, pullAccount, nil, nil, time.Now())
	require.ErrorContains(t, err, "no page")
}
