package load

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/listing"
)

// This file loads the locations of the listing-management API (spec 2.14)
// into listing_versions and listing_problems (migration 0013): a page of
// locations is copied into temporary staging tables, then moved by a few
// set-based statements inside the caller's transaction.
//
// Versions. A location's content is hashed (listing.ContentHash: every
// field of 2.14 but id, status and errors); a page starts a new version of a location (closing
// the current one at the page's time) when the hash differs, when the page
// carries a status that differs (a page of Get locations carries none: then
// the status of the current version carries over), or when the location
// was gone and is back. Otherwise the current version's observed_at moves
// to the page's time. Only an observation later than the stored one
// changes anything, so loading a page twice at the same time changes
// nothing the second time, and a late, older page never overrides a newer
// one.
//
// Problems, of the locations whose current version the page observed
// (a late, older page leaves them alone). An error (code, message) of a
// location that has no open occurrence of it opens one (first_seen_at,
// last_seen_at: the page's time); an open one still carried is seen again
// (last_seen_at); an open one that the location no longer carries is
// resolved (resolved_at: the page's time).

// ListingResult counts what ListingPage did.
type ListingResult struct {
	Locations   int64 // distinct locations in the page
	NewVersions int64 // versions inserted: first seen, changed or back from gone
	Changed     int64 // of NewVersions, those that closed an earlier version
	Unchanged   int64 // locations whose current version stays
	Opened      int64 // problems that appeared
	Resolved    int64 // open problems no longer carried
}

// Add sums two results.
func (r ListingResult) Add(o ListingResult) ListingResult {
	return ListingResult{
		r.Locations + o.Locations, r.NewVersions + o.NewVersions, r.Changed + o.Changed,
		r.Unchanged + o.Unchanged, r.Opened + o.Opened, r.Resolved + o.Resolved,
	}
}

const (
	stageListing        = "_stage_listing"
	stageListingProblem = "_stage_listing_problem"
)

var listingStageCols = []string{
	"location_id", "location_name", "city", "address", "additional_address_info", "zip", "phone",
	"region", "website_url", "country_code", "status", "business_hours", "holiday_hours",
	"reopen_date", "open_days", "holiday_count", "content_hash",
}

const listingStageSQL = `
CREATE TEMP TABLE IF NOT EXISTS _stage_listing (
	location_id text NOT NULL, location_name text, city text, address text,
	additional_address_info text, zip text, phone text, region text, website_url text,
	country_code text, status text, business_hours jsonb, holiday_hours jsonb,
	reopen_date date, open_days smallint, holiday_count smallint, content_hash bytea
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS _stage_listing_problem (
	location_id text NOT NULL, code text NOT NULL, message text NOT NULL
) ON COMMIT DELETE ROWS;
TRUNCATE _stage_listing, _stage_listing_problem`

// ListingPage loads locs, the locations of account observed at observedAt
// (a page of Get locations, or single reads), inside tx; the caller commits
// it with its checkpoint. A location id given twice counts once: the
// later one wins. A location whose reopenDate is not a date fails the
// page.
func (l *Loader) ListingPage(ctx context.Context, tx pgx.Tx, account string, locs []listing.Location, observedAt time.Time) (ListingResult, error) {
	if account == "" {
		return ListingResult{}, fmt.Errorf("load listings: no account")
	}
	rows, problems, err := listingRows(locs)
	if err != nil {
		return ListingResult{}, fmt.Errorf("load listings of %s: %w", account, err)
	}
	res := ListingResult{Locations: int64(len(rows))}
	if len(rows) == 0 {
		return res, nil
	}
	fail := func(what string, err error) (ListingResult, error) {
		return ListingResult{}, fmt.Errorf("load listings of %s: %s: %w", account, what, err)
	}
	if _, err := tx.Exec(ctx, listingStageSQL); err != nil {
		return fail("staging tables", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{stageListing}, listingStageCols, pgx.CopyFromRows(rows)); err != nil {
		return fail("copy", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{stageListingProblem}, []string{"location_id", "code", "message"},
		pgx.CopyFromRows(problems)); err != nil {
		return fail("copy problems", err)
	}

	// Close the current versions the page replaces. Separate statements,
	// not one WITH: the new current version must not meet the old one in
	// the unique index of current versions.
	tag, err := tx.Exec(ctx, `
		UPDATE listing_versions v SET valid_to = $2
		FROM _stage_listing s
		WHERE v.account = $1 AND v.location_id = s.location_id AND v.valid_to IS NULL
		  AND v.observed_at < $2
		  AND (v.content_hash <> s.content_hash
		       OR (s.status IS NOT NULL AND s.status IS DISTINCT FROM v.status)
		       OR v.gone_at IS NOT NULL)`, account, observedAt)
	if err != nil {
		return fail("closing versions", err)
	}
	res.Changed = tag.RowsAffected()
	// Insert a version for the locations with none current: new ones, and
	// those just closed (whose status carries over when the page has none).
	tag, err = tx.Exec(ctx, `
		INSERT INTO listing_versions (account, location_id, valid_from, observed_at,
			location_name, city, address, additional_address_info, zip, phone, region, website_url,
			country_code, status, business_hours, holiday_hours, reopen_date, open_days, holiday_count, content_hash)
		SELECT $1, s.location_id, $2, $2,
			s.location_name, s.city, s.address, s.additional_address_info, s.zip, s.phone, s.region, s.website_url,
			s.country_code, coalesce(s.status, p.status), s.business_hours, s.holiday_hours, s.reopen_date,
			s.open_days, s.holiday_count, s.content_hash
		FROM _stage_listing s
		LEFT JOIN LATERAL (
			SELECT v.valid_from, v.status, v.valid_to FROM listing_versions v
			WHERE v.account = $1 AND v.location_id = s.location_id
			ORDER BY v.valid_from DESC LIMIT 1) p ON true
		WHERE p.valid_from IS NULL OR p.valid_to = $2`, account, observedAt)
	if err != nil {
		return fail("inserting versions", err)
	}
	res.NewVersions = tag.RowsAffected()
	res.Unchanged = res.Locations - res.NewVersions
	if _, err := tx.Exec(ctx, `
		UPDATE listing_versions v SET observed_at = $2
		FROM _stage_listing s
		WHERE v.account = $1 AND v.location_id = s.location_id AND v.valid_to IS NULL
		  AND v.observed_at < $2`, account, observedAt); err != nil {
		return fail("touching versions", err)
	}

	// Problems: resolve the open ones the page's locations no longer
	// carry, see again those still carried, open the new ones.
	tag, err = tx.Exec(ctx, `
		UPDATE listing_problems p SET resolved_at = $2
		FROM _stage_listing s
		WHERE p.account = $1 AND p.location_id = s.location_id AND p.resolved_at IS NULL
		  AND p.last_seen_at < $2
		  AND EXISTS (SELECT FROM listing_versions v WHERE v.account = $1 AND v.location_id = p.location_id
		              AND v.valid_to IS NULL AND v.observed_at = $2)
		  AND NOT EXISTS (SELECT FROM _stage_listing_problem e
		                  WHERE e.location_id = p.location_id AND e.code = p.code AND e.message = p.message)`,
		account, observedAt)
	if err != nil {
		return fail("resolving problems", err)
	}
	res.Resolved = tag.RowsAffected()
	if _, err := tx.Exec(ctx, `
		UPDATE listing_problems p SET last_seen_at = $2
		FROM (SELECT DISTINCT location_id, code, message FROM _stage_listing_problem) e
		WHERE p.account = $1 AND p.location_id = e.location_id AND p.code = e.code AND p.message = e.message
		  AND p.resolved_at IS NULL AND p.last_seen_at < $2`, account, observedAt); err != nil {
		return fail("seeing problems", err)
	}
	tag, err = tx.Exec(ctx, `
		INSERT INTO listing_problems (account, location_id, code, message, first_seen_at, last_seen_at)
		SELECT DISTINCT $1, e.location_id, e.code, e.message, $2::timestamptz, $2::timestamptz
		FROM _stage_listing_problem e
		WHERE NOT EXISTS (SELECT FROM listing_problems p
		                  WHERE p.account = $1 AND p.location_id = e.location_id AND p.code = e.code
		                    AND p.message = e.message AND (p.resolved_at IS NULL OR p.first_seen_at = $2))
		  AND EXISTS (SELECT FROM listing_versions v WHERE v.account = $1 AND v.location_id = e.location_id
		              AND v.valid_to IS NULL AND v.observed_at = $2)`,
		account, observedAt)
	if err != nil {
		return fail("opening problems", err)
	}
	res.Opened = tag.RowsAffected()
	return res, nil
}

// ListingGone marks gone, at time at, the listed locations of account that
// a complete pull did not see: those whose id is not in seen and that were
// last observed before at (so at may be the time the pull began). Their
// open problems are resolved at the same time. It returns how many
// locations it marked. A location marked gone that a later page lists
// again starts a new version. Calling it again changes nothing.
func (l *Loader) ListingGone(ctx context.Context, tx pgx.Tx, account string, seen []string, at time.Time) (int, error) {
	if seen == nil {
		seen = []string{}
	}
	var n int
	err := tx.QueryRow(ctx, `
		WITH g AS (
			UPDATE listing_versions SET gone_at = $3
			WHERE account = $1 AND valid_to IS NULL AND gone_at IS NULL AND observed_at < $3
			  AND NOT (location_id = ANY ($2::text[]))
			RETURNING location_id),
		r AS (
			UPDATE listing_problems p SET resolved_at = $3
			FROM g WHERE p.account = $1 AND p.location_id = g.location_id AND p.resolved_at IS NULL)
		SELECT count(*) FROM g`, account, seen, at).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("load listings of %s: marking gone: %w", account, err)
	}
	return n, nil
}

// listingRows turns locs into rows of the staging tables, the last of an
// id winning.
func listingRows(locs []listing.Location) (rows, problems [][]any, err error) {
	last := make(map[string]int, len(locs))
	for i, loc := range locs {
		if loc.ID == "" {
			return nil, nil, fmt.Errorf("location %d of the page has no id", i)
		}
		last[loc.ID] = i
	}
	for i, loc := range locs {
		if last[loc.ID] != i {
			continue
		}
		row, err := listingRow(loc)
		if err != nil {
			return nil, nil, fmt.Errorf("location %s: %w", loc.ID, err)
		}
		rows = append(rows, row)
		for _, e := range loc.Errors {
			problems = append(problems, []any{loc.ID, asTextOnly(e.Code), asTextOnly(e.Message)})
		}
	}
	return rows, problems, nil
}

// listingRow is the staging row of loc.
func listingRow(loc listing.Location) ([]any, error) {
	var reopen any
	if loc.ReopenDate != "" {
		d, err := time.Parse(catalog.DateLayout, loc.ReopenDate)
		if err != nil {
			return nil, fmt.Errorf("reopenDate %q is not a date (YYYY-MM-DD)", loc.ReopenDate)
		}
		reopen = d
	}
	var hours, holidays []byte
	openDays := 0
	if loc.BusinessHours != nil {
		b, err := json.Marshal(loc.BusinessHours)
		if err != nil {
			return nil, err
		}
		hours = b
		for _, day := range catalog.Weekdays {
			if len(loc.BusinessHours.Day(day)) > 0 {
				openDays++
			}
		}
	}
	if len(loc.HolidayHours) > 0 {
		b, err := json.Marshal(loc.HolidayHours)
		if err != nil {
			return nil, err
		}
		holidays = b
	}
	hash := listing.ContentHash(loc)
	return []any{
		asTextOnly(loc.ID), orNull(loc.LocationName), orNull(loc.City), orNull(loc.Address),
		orNull(loc.AdditionalAddressInfo), orNull(loc.Zip), orNull(loc.Phone), orNull(loc.Region),
		orNull(loc.WebsiteURL), orNull(loc.CountryCode), orNull(loc.Status), jsonOrNull(hours),
		jsonOrNull(holidays), reopen, int16(openDays), int16(len(loc.HolidayHours)), hash,
	}, nil
}

// orNull is s as text, or NULL when empty.
func orNull(s string) any {
	if s == "" {
		return nil
	}
	return asTextOnly(s)
}

func jsonOrNull(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}
