package pipeline_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/internal/apitest"
	"github.com/seoetl/etl/internal/testworld"
	"github.com/seoetl/etl/listing"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/push"
	"github.com/seoetl/etl/sandbox"
	"github.com/seoetl/etl/sandbox/locations"
	"github.com/seoetl/etl/transform"
)

var sqlBlock = regexp.MustCompile("(?s)```sql\n(.*?)```")

// guideSpec is the job that loads the warehouse the guide's queries run
// on: %s are its targets and what its keywords: line ends with (months).
const guideSpec = `jobs:
  - name: guide
    targets: [%s]
    target_sets:
      - {name: rivals, scope: ROOT_DOMAIN, urls: [n240.example, n300.example, example.com]}
    endpoints:
      overview: {}
      summary: {limit: 6}
      links: {limit: 500}
      ref-domains: {limit: 500}
      ref-ips: {limit: 500}
      pages: {limit: 500}
      anchors: {limit: 500}
      score-profile: {}
      competitors: {limit: 50}
      comparison: {}
      matrix: {limit: 500}
    keywords: {keywords: [seo tools, backlink checker], countries: [US, DE]%s}
`

// guideTargets are the guide job's targets.
const guideTargets = "{url: n240.example, scope: ROOT_DOMAIN}, {url: n300.example, scope: ROOT_DOMAIN}"

// TestWarehouseGuideQueries runs every query of docs/warehouse.md, as the
// read-only analyst role, against a warehouse loaded from the sandbox: each
// runs and finds rows. The role cannot write.
func TestWarehouseGuideQueries(t *testing.T) {
	t.Parallel()
	guide, err := os.ReadFile("../docs/warehouse.md")
	require.NoError(t, err)
	blocks := sqlBlock.FindAllStringSubmatch(string(guide), -1)
	require.GreaterOrEqual(t, len(blocks), 10, "the guide has at least ten example queries")

	// A few malformed rows, so the quarantine query has something to show.
	f := newWorld(t, testworld.Options{Sandbox: sandbox.Config{Faults: sandbox.Faults{Malformed: 0.01}}})
	sum, err := f.TryRun(t, fmt.Sprintf(guideSpec, guideTargets, ", months: [2026-09, 2026-10, 2026-11]"), runNow)
	require.NoError(t, err)
	require.Zero(t, sum.Failed())
	loadGuideListings(t, f.Pool)
	pushGuideListings(t, f.Pool)

	for _, b := range blocks {
		query := b[1]
		err := pgx.BeginFunc(t.Context(), f.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE etl_analyst"); err != nil {
				return err
			}
			rows, err := tx.Query(t.Context(), query)
			if err != nil {
				return err
			}
			n := 0
			for rows.Next() {
				n++
			}
			if err := rows.Err(); err != nil {
				return err
			}
			require.Positive(t, n, "the guide's query finds no rows:\n%s", query)
			return nil
		})
		require.NoError(t, err, "the guide's query fails:\n%s", query)
	}

	err = pgx.BeginFunc(t.Context(), f.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), "SET LOCAL ROLE etl_analyst"); err != nil {
			return err
		}
		_, err := tx.Exec(t.Context(), "DELETE FROM backlinks")
		return err
	})
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "the analyst role deleted rows: %v", err)
	require.Equal(t, "42501", pgErr.Code, "insufficient privilege")
}

// loadGuideListings loads the locations of a sandbox account into the
// listing tables as daily pulls would have over the last two weeks
// (relative to the wall clock, which the guide's queries use through
// now()): one location is renamed three days ago, one left the account
// before the last pull. It uses the loader directly, as the listings task
// of a job would.
func loadGuideListings(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	loadGuideListingsAt(t, pool, time.Now().UTC().Truncate(time.Minute))
}

// loadGuideListingsAt is loadGuideListings with the last pull an hour
// before now.
func loadGuideListingsAt(t *testing.T, pool *pgxpool.Pool, now time.Time) {
	t.Helper()
	const account = "agency-n1200"
	ctx := t.Context()
	l, err := load.New(load.Config{Pool: pool})
	require.NoError(t, err)
	store := locations.New(7)
	renamed, dropped := store.ID(account, 0), store.ID(account, 3)
	for d := 14; d >= 0; d-- {
		at := now.Add(-time.Duration(d)*24*time.Hour - time.Hour)
		if d == 3 {
			cur, e := store.Get(account, renamed, at)
			require.Nil(t, e)
			cur.LocationName += " (new name)"
			body, err := json.Marshal(cur)
			require.NoError(t, err)
			_, e = store.UpdateOne(account, renamed, body, at)
			require.Nil(t, e)
		}
		var seen []string
		for p := 1; ; p++ {
			page, e := store.Page(account, p, locations.MaxPageSize, at)
			require.Nil(t, e)
			if len(page.Content) == 0 {
				break
			}
			if d == 0 {
				page.Content = slices.DeleteFunc(page.Content, func(loc listing.Location) bool { return loc.ID == dropped })
			}
			// The page's items carry no status: single reads give it.
			statuses := map[string]string{}
			for _, loc := range page.Content {
				full, e := store.Get(account, loc.ID, at)
				require.Nil(t, e)
				statuses[loc.ID] = full.Status
			}
			body, err := json.Marshal(listing.PageBody{Data: page, RequestID: "guide"})
			require.NoError(t, err)
			decoded, err := transform.DecodeListingPage(bytes.NewReader(body), transform.Options{})
			require.NoError(t, err)
			require.Empty(t, decoded.Rejects)
			seen = append(seen, decoded.IDs...)
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := l.ListingPage(ctx, tx, account, decoded, statuses, at)
				return err
			})
			decoded.Release()
			require.NoError(t, err)
		}
		require.True(t, d == 0 || slices.Contains(seen, dropped))
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := l.ListingGone(ctx, tx, account, seen, at)
			return err
		}))
	}
}

// pushGuideListings pushes a table of desired locations for the guide's
// account, as etl listings push does: three new phones (updated) and a
// website the rules refuse (refused, waiting for a change).
func pushGuideListings(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	const account = "agency-n1200"
	sb, err := sandbox.New(sandbox.Config{Seed: 7, APIKeys: []string{account}})
	require.NoError(t, err)
	srv := httptest.NewServer(sb.Handler())
	t.Cleanup(srv.Close)
	tok, err := sb.IssueToken(account)
	require.NoError(t, err)
	client, err := extract.New(extract.Config{BaseURL: srv.URL,
		Authorize: apitest.Bearer(tok.AccessToken)})
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), `CREATE TABLE guide_desired AS
		WITH pick AS (SELECT location_id, row_number() OVER (ORDER BY location_id) AS n FROM listings_current
		              WHERE account = '`+account+`' AND status = 'COMPLETE' AND NOT gone ORDER BY location_id LIMIT 4)
		SELECT c.location_id AS id, location_name, city, address, additional_address_info, zip,
		       CASE WHEN p.n <= 3 THEN '+1 555 0100 ' || lpad(p.n::text, 3, '0') ELSE phone END AS phone,
		       region, CASE WHEN p.n = 4 THEN 'ftp://not-a-website.example' ELSE website_url END AS website_url,
		       business_hours, holiday_hours, reopen_date
		FROM listings_current c LEFT JOIN pick p USING (location_id)
		WHERE c.account = '`+account+`' AND NOT c.gone`)
	require.NoError(t, err)
	sum, err := push.Run(t.Context(), push.Config{Pool: pool, Client: client, Account: account, Relation: "guide_desired"}, push.Options{})
	require.NoError(t, err)
	require.Equal(t, 3, sum.Updated)
	require.Equal(t, 1, sum.Refused)
	// And an undo of it, for the guide's query of which push undid which.
	undo, err := push.Undo(t.Context(), push.Config{Pool: pool, Client: client, Account: account}, push.UndoOptions{Push: sum.PushID})
	require.NoError(t, err)
	require.Equal(t, 3, undo.Updated)
}
