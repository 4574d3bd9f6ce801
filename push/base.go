package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seoetl/etl/listing"
)

// querier is what the push reads and writes through: a pool, a
// connection or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ErrNoSuchAccount is matched (errors.Is) by the error of a push, an undo
// or a status of an account the warehouse knows nothing of: never signed
// in (accounts), never pulled, never pushed.
var ErrNoSuchAccount = errors.New("no such account")

// CheckAccount returns an error matching ErrNoSuchAccount when account is
// none the warehouse knows: no row in accounts (a signed-out account
// keeps its history, and its status), no pulled location, no push. A
// pull asks it too, so that it says what a push says.
func CheckAccount(ctx context.Context, q querier, account string) error {
	var known bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM accounts WHERE name = $1)
		OR EXISTS (SELECT 1 FROM listings_current WHERE account = $1)
		OR EXISTS (SELECT 1 FROM listing_pushes WHERE account = $1)`, account).Scan(&known); err != nil {
		return fmt.Errorf("reading account %s: %w", account, err)
	}
	if !known {
		return noSuchAccount(account)
	}
	return nil
}

// noSuchAccount is the error of an account that does not exist; it
// matches ErrNoSuchAccount.
type noSuchAccount string

func (n noSuchAccount) Error() string {
	return fmt.Sprintf("account %s does not exist (etl auth status lists the accounts; etl auth login --account %[1]s signs one in)", string(n))
}

func (n noSuchAccount) Is(target error) bool { return target == ErrNoSuchAccount }

// pulled is a location as the latest pull left it (listings_current).
type pulled struct {
	loc        listing.Location // with country and status
	hash       []byte
	validFrom  time.Time
	observedAt time.Time
}

// readPulled reads the current version of every location of account that
// is not gone.
func readPulled(ctx context.Context, q querier, account string) (map[string]pulled, error) {
	rows, err := q.Query(ctx, `
		SELECT location_id, coalesce(location_name, ''), coalesce(city, ''), coalesce(address, ''),
			coalesce(additional_address_info, ''), coalesce(zip, ''), coalesce(phone, ''), coalesce(region, ''),
			coalesce(website_url, ''), coalesce(country_code, ''), coalesce(status, ''), business_hours::text, holiday_hours::text,
			coalesce(to_char(reopen_date, 'YYYY-MM-DD'), ''), content_hash, valid_from, observed_at
		FROM listings_current WHERE account = $1 AND NOT gone`, account)
	if err != nil {
		return nil, fmt.Errorf("reading the pulled locations of %s: %w", account, err)
	}
	defer rows.Close()
	out := map[string]pulled{}
	for rows.Next() {
		var p pulled
		var hours, holidays *string
		l := &p.loc
		if err := rows.Scan(&l.ID, &l.LocationName, &l.City, &l.Address, &l.AdditionalAddressInfo, &l.Zip, &l.Phone,
			&l.Region, &l.WebsiteURL, &l.CountryCode, &l.Status, &hours, &holidays, &l.ReopenDate, &p.hash, &p.validFrom, &p.observedAt); err != nil {
			return nil, fmt.Errorf("reading the pulled locations of %s: %w", account, err)
		}
		if hours != nil {
			if err := json.Unmarshal([]byte(*hours), &l.BusinessHours); err != nil {
				return nil, fmt.Errorf("the pulled location %s of %s: businessHours: %w", l.ID, account, err)
			}
		}
		if holidays != nil {
			if err := json.Unmarshal([]byte(*holidays), &l.HolidayHours); err != nil {
				return nil, fmt.Errorf("the pulled location %s of %s: holidayHours: %w", l.ID, account, err)
			}
		}
		out[l.ID] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the pulled locations of %s: %w", account, err)
	}
	return out, nil
}

// latest is the latest settled outcome of a location in an earlier push
// (listing_push_latest).
type latest struct {
	pushID    int64
	outcome   string
	transient bool
	content   listing.Location
	hash      []byte
	settledAt time.Time
	// code, detail, field and reason of a failure (carried by WAITING).
	code, detail, field, reason string
}

// readLatest reads the latest outcome of every location of account that
// a push settled (or left in doubt).
func readLatest(ctx context.Context, q querier, account string) (map[string]latest, error) {
	rows, err := q.Query(ctx, `
		SELECT location_id, push_id, outcome, coalesce(transient, false), content, content_hash, settled_at,
			coalesce(code, ''), coalesce(detail, ''), coalesce(field, ''), coalesce(reason, '')
		FROM listing_push_latest WHERE account = $1`, account)
	if err != nil {
		return nil, fmt.Errorf("reading the earlier pushes of %s: %w", account, err)
	}
	defer rows.Close()
	out := map[string]latest{}
	for rows.Next() {
		var id string
		var l latest
		var content []byte
		var settled *time.Time
		if err := rows.Scan(&id, &l.pushID, &l.outcome, &l.transient, &content, &l.hash, &settled,
			&l.code, &l.detail, &l.field, &l.reason); err != nil {
			return nil, fmt.Errorf("reading the earlier pushes of %s: %w", account, err)
		}
		if settled != nil {
			l.settledAt = *settled
		}
		if err := json.Unmarshal(content, &l.content); err != nil {
			return nil, fmt.Errorf("the content pushed to %s of %s: %w", id, account, err)
		}
		out[id] = l
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the earlier pushes of %s: %w", account, err)
	}
	return out, nil
}

// updatedContent is the content an earlier push last UPDATED a location
// to, and when.
type updatedContent struct {
	content   listing.Location
	hash      []byte
	settledAt time.Time
}

// readUpdated reads, for every location of account an earlier push
// updated, the content of its latest UPDATED item.
func readUpdated(ctx context.Context, q querier, account string) (map[string]updatedContent, error) {
	rows, err := q.Query(ctx, `
		SELECT DISTINCT ON (location_id) location_id, content, content_hash, settled_at
		FROM listing_push_items WHERE account = $1 AND outcome = 'UPDATED'
		ORDER BY location_id, settled_at DESC, push_id DESC`, account)
	if err != nil {
		return nil, fmt.Errorf("reading the earlier updates of %s: %w", account, err)
	}
	defer rows.Close()
	out := map[string]updatedContent{}
	for rows.Next() {
		var id string
		var u updatedContent
		var content []byte
		if err := rows.Scan(&id, &content, &u.hash, &u.settledAt); err != nil {
			return nil, fmt.Errorf("reading the earlier updates of %s: %w", account, err)
		}
		if err := json.Unmarshal(content, &u.content); err != nil {
			return nil, fmt.Errorf("the content pushed to %s of %s: %w", id, account, err)
		}
		out[id] = u
	}
	return out, rows.Err()
}
