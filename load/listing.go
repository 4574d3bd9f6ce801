package load

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/transform"
)

// This file loads the locations of the listing-management API (spec 2.14)
// into listing_versions and listing_problems (migration 0013): the records
// of a decoded page of locations (transform.ListingPage) are copied into
// temporary staging tables, then moved by a few set-based statements
// inside the caller's transaction.
//
// Versions. A location's content is hashed (listing.ContentHash: every
// field of 2.14 but id, status and errors); a page starts a new version of
// a location (closing the current one at the page's time) when the hash
// differs, when the location has a status (its own, or one read from Get
// location) that differs (the items of Get locations carry none: without
// one, the status of the current version carries over), or when the
// location was gone and is back. Otherwise the current version's
// observed_at moves to the page's time. Only an observation later than
// the stored one changes anything, so loading a page twice at the same
// time changes nothing the second time, and a late, older page never
// overrides a newer one.
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

// listingStageSQL makes and empties the staging tables of a listing page:
// statements sent one by one (Citus refuses several commands in one call).
var listingStageSQL = []string{`
CREATE TEMP TABLE IF NOT EXISTS _stage_listing (
	location_id text NOT NULL, location_name text, city text, address text,
	additional_address_info text, zip text, phone text, region text, website_url text,
	country_code text, status text, business_hours jsonb, holiday_hours jsonb,
	reopen_date date, open_days smallint, holiday_count smallint, content_hash bytea
) ON COMMIT DELETE ROWS`, `
CREATE TEMP TABLE IF NOT EXISTS _stage_listing_problem (
	location_id text NOT NULL, code text NOT NULL, message text NOT NULL
) ON COMMIT DELETE ROWS`,
	`TRUNCATE _stage_listing, _stage_listing_problem`,
}

// ListingPage loads page, the locations of account observed at observedAt
// (a page of Get locations decoded by transform.DecodeListingPage, or a
// location of Get location decoded by transform.DecodeLocation), inside
// tx; the caller commits it with its checkpoint. Its records are copied as
// they are into the staging tables. statuses holds the status of locations,
// by id, as single reads of Get location gave it; it fills the status of
// the rows of the page that have none (the items of Get locations carry
// none) and may be nil or name only some ids. A row without a status in
// either keeps the status of its current version.
//
// The page's rejects are not stored here: the caller quarantines them
// (Loader.Quarantine) in the same transaction. A location id twice in
// page.Locations fails the page (the decoder keeps the later item of an
// id).
func (l *Loader) ListingPage(ctx context.Context, tx pgx.Tx, account string, page *transform.ListingPage, statuses map[string]string, observedAt time.Time) (ListingResult, error) {
	if account == "" {
		return ListingResult{}, fmt.Errorf("load listings: no account")
	}
	if page == nil || page.Locations == nil {
		return ListingResult{}, fmt.Errorf("load listings of %s: no page", account)
	}
	src, err := newListingSource(page.Locations, statuses)
	if err != nil {
		return ListingResult{}, fmt.Errorf("load listings of %s: %w", account, err)
	}
	res := ListingResult{Locations: int64(src.n)}
	if src.n == 0 {
		return res, nil
	}
	err = stageListingPage(ctx, tx, page, src)
	if err == nil {
		err = versionListings(ctx, tx, account, observedAt, &res)
	}
	if err == nil {
		err = trackListingProblems(ctx, tx, account, observedAt, &res)
	}
	if err != nil {
		return ListingResult{}, fmt.Errorf("load listings of %s: %w", account, err)
	}
	return res, nil
}

// stageListingPage locks the listing tables and copies the page's
// locations (src) and problems into the staging tables, which it makes
// or empties first.
func stageListingPage(ctx context.Context, tx pgx.Tx, page *transform.ListingPage, src *recordSource) error {
	if err := lockListings(ctx, tx); err != nil {
		return fmt.Errorf("locking: %w", err)
	}
	for _, sql := range listingStageSQL {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return fmt.Errorf("staging tables: %w", err)
		}
	}
	if n, err := tx.CopyFrom(ctx, pgx.Identifier{stageListing}, listingStageCols, src); err != nil {
		return fmt.Errorf("copy: %w", err)
	} else if n != int64(src.n) {
		return fmt.Errorf("copy: copied %d rows of %d", n, src.n)
	}
	if page.Problems != nil && page.Problems.NumRows() > 0 {
		psrc, err := newRecordSource(page.Problems, listingProblemCols)
		if err != nil {
			return fmt.Errorf("problems: %w", err)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{stageListingProblem}, listingProblemCols, psrc); err != nil {
			return fmt.Errorf("copy problems: %w", err)
		}
	}
	return nil
}

// versionListings moves the staged locations into listing_versions:
// it closes the current versions they replace, inserts the new ones and
// marks those unchanged as observed at observedAt, counting into res.
func versionListings(ctx context.Context, tx pgx.Tx, account string, observedAt time.Time, res *ListingResult) error {
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
		return fmt.Errorf("closing versions: %w", err)
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
		return fmt.Errorf("inserting versions: %w", err)
	}
	res.NewVersions = tag.RowsAffected()
	res.Unchanged = res.Locations - res.NewVersions
	if _, err := tx.Exec(ctx, `
		UPDATE listing_versions v SET observed_at = $2
		FROM _stage_listing s
		WHERE v.account = $1 AND v.location_id = s.location_id AND v.valid_to IS NULL
		  AND v.observed_at < $2`, account, observedAt); err != nil {
		return fmt.Errorf("touching versions: %w", err)
	}
	return nil
}

// trackListingProblems moves the staged problems into listing_problems,
// counting into res.
func trackListingProblems(ctx context.Context, tx pgx.Tx, account string, observedAt time.Time, res *ListingResult) error {
	// Problems: resolve the open ones the page's locations no longer
	// carry, see again those still carried, open the new ones.
	tag, err := tx.Exec(ctx, `
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
		return fmt.Errorf("resolving problems: %w", err)
	}
	res.Resolved = tag.RowsAffected()
	if _, err := tx.Exec(ctx, `
		UPDATE listing_problems p SET last_seen_at = $2
		FROM (SELECT DISTINCT location_id, code, message FROM _stage_listing_problem) e
		WHERE p.account = $1 AND p.location_id = e.location_id AND p.code = e.code AND p.message = e.message
		  AND p.resolved_at IS NULL AND p.last_seen_at < $2`, account, observedAt); err != nil {
		return fmt.Errorf("seeing problems: %w", err)
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
		return fmt.Errorf("opening problems: %w", err)
	}
	res.Opened = tag.RowsAffected()
	return nil
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
	if err := lockListings(ctx, tx); err != nil {
		return 0, fmt.Errorf("load listings of %s: locking: %w", account, err)
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

// lockListings takes, until tx ends, the lock under which the listing
// tables are written: two pulls of one account at once (two jobs name
// it) would otherwise both insert the first version of a location, and
// the second fail on the primary key. Its statements read what the
// holder committed: each takes its snapshot after the lock. The mode is
// lockPartitions' (it conflicts with itself, not with reads, and an
// analyst cannot take it); it serialises the loads of every account's
// pages, which take milliseconds where their status reads take seconds.
func lockListings(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "LOCK TABLE listing_versions IN SHARE UPDATE EXCLUSIVE MODE")
	return err
}

// recordSource feeds the columns cols of a record to COPY, row by row.
type recordSource struct {
	getters []func(i int) any
	row, n  int
	vals    []any
	// adjust, when set, changes the values of row i (see newListingSource).
	adjust func(i int, vals []any)
}

func newRecordSource(rec arrow.Record, cols []string) (*recordSource, error) {
	s := &recordSource{row: -1, n: int(rec.NumRows()), vals: make([]any, len(cols))}
	for _, name := range cols {
		col, err := column(rec, name)
		if err != nil {
			return nil, err
		}
		g, err := getter(col)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", name, err)
		}
		s.getters = append(s.getters, g)
	}
	return s, nil
}

// column is the column of rec called name.
func column(rec arrow.Record, name string) (arrow.Array, error) {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil, fmt.Errorf("the record has %d columns %s, want 1", len(idx), name)
	}
	return rec.Column(idx[0]), nil
}

func (s *recordSource) Next() bool {
	s.row++
	return s.row < s.n
}

func (s *recordSource) Values() ([]any, error) {
	for c, g := range s.getters {
		s.vals[c] = g(s.row)
	}
	if s.adjust != nil {
		s.adjust(s.row, s.vals)
	}
	return s.vals, nil
}

func (s *recordSource) Err() error { return nil }

var listingProblemCols = []string{"location_id", "code", "message"}

// newListingSource feeds the locations of rec (transform.ListingSchema) to
// COPY into the staging table, a row without a status taking its id's
// status in statuses. It fails when an id is null or given twice.
func newListingSource(rec arrow.Record, statuses map[string]string) (*recordSource, error) {
	s, err := newRecordSource(rec, listingStageCols)
	if err != nil {
		return nil, err
	}
	col, err := column(rec, "location_id")
	if err != nil {
		return nil, err
	}
	ids, ok := col.(*array.String)
	if !ok {
		return nil, fmt.Errorf("column location_id is %s, not text", col.DataType())
	}
	seen := make(map[string]bool, ids.Len())
	for i := range ids.Len() {
		id := ids.Value(i)
		if ids.IsNull(i) || id == "" {
			return nil, fmt.Errorf("location %d of the page has no id", i+1)
		}
		if seen[id] {
			return nil, fmt.Errorf("location %q is twice in the page", id)
		}
		seen[id] = true
	}
	status := slices.Index(listingStageCols, "status")
	if len(statuses) > 0 {
		s.adjust = func(i int, vals []any) {
			if vals[status] == nil {
				if st := statuses[ids.Value(i)]; st != "" {
					vals[status] = st
				}
			}
		}
	}
	return s, nil
}
