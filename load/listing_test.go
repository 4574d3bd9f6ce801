package load_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/internal/pgtest"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/sandbox/locations"
)

const pullAccount = "agency-n1200"

// pull reads every location of account from store on the sandbox day of
// at, in pages of the largest size, each with its status (as a pull
// completes page items with single reads), except the ids in drop.
func pull(t *testing.T, store *locations.Store, account string, at time.Time, drop ...string) [][]listing.Location {
	t.Helper()
	var pages [][]listing.Location
	for p := 1; ; p++ {
		page, e := store.Page(account, p, locations.MaxPageSize, at)
		require.Nil(t, e)
		if len(page.Content) == 0 {
			return pages
		}
		var locs []listing.Location
		for _, loc := range page.Content {
			if slices.Contains(drop, loc.ID) {
				continue
			}
			full, e := store.Get(account, loc.ID, at)
			require.Nil(t, e)
			locs = append(locs, full)
		}
		pages = append(pages, locs)
	}
}

// loadPull loads pages, one transaction each, then marks gone what they did
// not list.
func loadPull(t *testing.T, l *load.Loader, pool *pgxpool.Pool, account string, pages [][]listing.Location, at time.Time) (load.ListingResult, int) {
	t.Helper()
	var sum load.ListingResult
	var seen []string
	for _, locs := range pages {
		require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) error {
			res, err := l.ListingPage(t.Context(), tx, account, locs, at)
			sum = sum.Add(res)
			return err
		}))
		for _, loc := range locs {
			seen = append(seen, loc.ID)
		}
	}
	var gone int
	require.NoError(t, pgx.BeginFunc(t.Context(), pool, func(tx pgx.Tx) (err error) {
		gone, err = l.ListingGone(t.Context(), tx, account, seen, at)
		return err
	}))
	return sum, gone
}

type problemKey struct{ id, code, message string }

func problemsOf(pages [][]listing.Location) map[problemKey]bool {
	out := map[problemKey]bool{}
	for _, locs := range pages {
		for _, loc := range locs {
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
	first := pages1[0][0]
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
			res, err := l.ListingPage(ctx, tx, account, []listing.Location{l1}, at)
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
	step := func(loc listing.Location, at time.Time) load.ListingResult {
		var res load.ListingResult
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
			res, err = l.ListingPage(ctx, tx, pullAccount, []listing.Location{loc}, at)
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
