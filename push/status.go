package push

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Record is a push as listing_pushes holds it.
type Record struct {
	PushID          int64      `json:"push_id"`
	Relation        string     `json:"relation"`
	Started         time.Time  `json:"started_at"`
	Finished        *time.Time `json:"finished_at,omitempty"`
	Status          string     `json:"status"`
	PlannedRequests int        `json:"planned_requests"`
	PlannedSeconds  float64    `json:"planned_seconds"`
	BulkRequests    int        `json:"bulk_requests"`
	SingleRequests  int        `json:"single_requests"`
	Sent            int        `json:"sent"`
	Updated         int        `json:"updated"`
	Failed          int        `json:"failed"`
	Refused         int        `json:"refused"`
	Unchanged       int        `json:"unchanged"`
	Waiting         int        `json:"waiting"`
	Kept            int        `json:"kept,omitempty"`
	Error           string     `json:"error,omitempty"`
	// Undoes is the push this one undoes (etl listings undo), nil for a
	// push of a relation; UndoneBy are the pushes that undo this one.
	Undoes   *int64  `json:"undoes,omitempty"`
	UndoneBy []int64 `json:"undone_by,omitempty"`
}

// Pending is a location whose latest push outcome waits for something: a
// permanent failure or a refusal (for a change), a transient failure (for
// the next push), or an item in doubt (for a read-back).
type Pending struct {
	LocationID string `json:"location_id"`
	// Name and City are the location's locationName and city as last
	// pulled, or as the push had them when it was never pulled ("" when
	// unknown). They are data: quote them to show them.
	Name      string    `json:"name,omitempty"`
	City      string    `json:"city,omitempty"`
	PushID    int64     `json:"push_id"`
	Outcome   string    `json:"outcome"`
	Code      string    `json:"code,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	Field     string    `json:"field,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Transient bool      `json:"transient,omitempty"`
	Since     time.Time `json:"since"`
}

// Report is the state of an account's pushes.
type Report struct {
	Account string    `json:"account"`
	Last    *Record   `json:"last_push"`
	Pending []Pending `json:"pending"`
	// Pulled counts the account's locations as the latest pulls left
	// them (listings_current).
	Pulled PulledCounts `json:"pulled"`
}

// PulledCounts are the locations of an account in listings_current: all
// of them, those gone, and those listed by status ("" when unknown).
type PulledCounts struct {
	Locations int            `json:"locations"`
	Gone      int            `json:"gone"`
	ByStatus  map[string]int `json:"by_status"`
}

// Status reports the latest push of account and the locations whose
// latest outcome is FAILED, REFUSED, WAITING or SENT (in doubt), by id,
// each with its name and city.
func Status(ctx context.Context, pool *pgxpool.Pool, account string) (*Report, error) {
	r := &Report{Account: account, Pending: []Pending{}, Pulled: PulledCounts{ByStatus: map[string]int{}}}
	if err := CheckAccount(ctx, pool, account); err != nil {
		return nil, err
	}
	counts, err := pool.Query(ctx, `SELECT coalesce(status, ''), gone, count(*) FROM listings_current WHERE account = $1 GROUP BY 1, 2`, account)
	if err != nil {
		return nil, fmt.Errorf("counting the locations of %s: %w", account, err)
	}
	for counts.Next() {
		var status string
		var gone bool
		var n int
		if err := counts.Scan(&status, &gone, &n); err != nil {
			counts.Close()
			return nil, fmt.Errorf("counting the locations of %s: %w", account, err)
		}
		r.Pulled.Locations += n
		if gone {
			r.Pulled.Gone += n
			continue
		}
		r.Pulled.ByStatus[status] += n
	}
	counts.Close()
	if err := counts.Err(); err != nil {
		return nil, fmt.Errorf("counting the locations of %s: %w", account, err)
	}
	var rec Record
	var errText *string
	err = pool.QueryRow(ctx, `SELECT push_id, relation, started_at, finished_at, status, planned_requests, planned_seconds,
		bulk_requests, single_requests, sent, updated, failed, refused, unchanged, waiting, kept, error, undoes,
		coalesce((SELECT array_agg(u.push_id ORDER BY u.push_id) FROM listing_pushes u WHERE u.undoes = p.push_id), '{}')
		FROM listing_pushes p WHERE account = $1 ORDER BY push_id DESC LIMIT 1`, account).Scan(
		&rec.PushID, &rec.Relation, &rec.Started, &rec.Finished, &rec.Status, &rec.PlannedRequests, &rec.PlannedSeconds,
		&rec.BulkRequests, &rec.SingleRequests, &rec.Sent, &rec.Updated, &rec.Failed, &rec.Refused, &rec.Unchanged, &rec.Waiting,
		&rec.Kept, &errText, &rec.Undoes, &rec.UndoneBy)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return r, nil
	case err != nil:
		return nil, fmt.Errorf("reading the pushes of %s: %w", account, err)
	}
	if errText != nil {
		rec.Error = *errText
	}
	r.Last = &rec
	rows, err := pool.Query(ctx, `
		SELECT l.location_id, l.push_id, CASE WHEN i.outcome = 'WAITING' THEN 'WAITING' ELSE l.outcome END,
			coalesce(l.code, ''), coalesce(l.detail, ''), coalesce(l.field, ''), coalesce(l.reason, ''), coalesce(l.transient, false),
			coalesce(l.settled_at, l.pushed_at),
			coalesce(c.location_name, l.content->>'locationName', ''), coalesce(c.city, l.content->>'city', '')
		FROM listing_push_latest l
		LEFT JOIN listing_push_items i ON i.push_id = $2 AND i.location_id = l.location_id
		LEFT JOIN listings_current c ON c.account = l.account AND c.location_id = l.location_id
		WHERE l.account = $1 AND l.outcome IN ('FAILED', 'REFUSED', 'WAITING', 'SENT')
			-- An --only id no pull knows waits for nothing that can come
			-- (pushes since issue 28 do not record it; older ones did).
			AND NOT (l.code = 'NOT_IN_RELATION' AND (c.location_id IS NULL OR c.gone))
		ORDER BY l.location_id`, account, rec.PushID)
	if err != nil {
		return nil, fmt.Errorf("reading the pending locations of %s: %w", account, err)
	}
	defer rows.Close()
	for rows.Next() {
		var p Pending
		if err := rows.Scan(&p.LocationID, &p.PushID, &p.Outcome, &p.Code, &p.Detail, &p.Field, &p.Reason, &p.Transient, &p.Since,
			&p.Name, &p.City); err != nil {
			return nil, fmt.Errorf("reading the pending locations of %s: %w", account, err)
		}
		r.Pending = append(r.Pending, p)
	}
	return r, rows.Err()
}
