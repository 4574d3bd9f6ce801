package load

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// WatermarkKey names the watermark of one incremental task.
type WatermarkKey struct {
	Job, Endpoint, Request, Filter, Field string
}

// Watermark returns the task's watermark, and false when it has none yet.
func Watermark(ctx context.Context, pool *pgxpool.Pool, k WatermarkKey) (time.Time, bool, error) {
	var v time.Time
	err := pool.QueryRow(ctx, `
		SELECT value FROM watermarks WHERE job = $1 AND endpoint = $2 AND request = $3 AND filter = $4 AND field = $5`,
		k.Job, k.Endpoint, k.Request, k.Filter, k.Field).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("load: watermark of %s %s: %w", k.Endpoint, k.Request, err)
	}
	return v.UTC(), true, nil
}

// Advance moves the task's watermark to the page's safe point, inside the
// page's transaction, and returns it (false when the page moved nothing).
// The page's rows came sorted by the field, ascending. When the page ends
// the data (final), every row up to its newest value is loaded; otherwise
// rows sharing the newest value may continue on the next page, so the
// watermark stops just before it.
func (p *Page) Advance(ctx context.Context, k WatermarkKey, runID int64, final bool, at time.Time) (time.Time, bool, error) {
	if p.direct > 0 {
		return time.Time{}, false, fmt.Errorf("load %s: a watermark is read from the staged rows, and this page copied its rows straight into the table (FirstLoad)", p.ep.Table)
	}
	col := pgx.Identifier{k.Field}.Sanitize()
	stage := pgx.Identifier{stageName(p.ep)}.Sanitize()
	q := fmt.Sprintf(`SELECT max(%s) FROM %s`, col, stage)
	if !final {
		q = fmt.Sprintf(`SELECT max(%[1]s) FROM %[2]s WHERE %[1]s < (SELECT max(%[1]s) FROM %[2]s)`, col, stage)
	}
	var v *time.Time
	if err := p.tx.QueryRow(ctx, q).Scan(&v); err != nil {
		return time.Time{}, false, fmt.Errorf("load %s: watermark: %w", p.ep.Table, err)
	}
	if v == nil {
		return time.Time{}, false, nil
	}
	_, err := p.tx.Exec(ctx, `
		INSERT INTO watermarks (job, endpoint, request, filter, field, value, run_id, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, nullif($7, 0), $8)
		ON CONFLICT (job, endpoint, request, filter, field) DO UPDATE
		SET value = greatest(watermarks.value, EXCLUDED.value), run_id = EXCLUDED.run_id, updated_at = EXCLUDED.updated_at`,
		k.Job, k.Endpoint, k.Request, k.Filter, k.Field, *v, runID, at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("load %s: saving the watermark: %w", p.ep.Table, err)
	}
	return v.UTC(), true, nil
}

// OldestMonth returns the oldest month of the rows the page staged, from
// the endpoint's month field (summary: month_date); false when it staged
// none. A page whose rows were copied straight into the table (FirstLoad,
// never used where rows carry their own month) has none staged.
func (p *Page) OldestMonth(ctx context.Context) (time.Time, bool, error) {
	var m *time.Time
	q := fmt.Sprintf(`SELECT min(month) FROM %s`, pgx.Identifier{stageName(p.ep)}.Sanitize())
	if err := p.tx.QueryRow(ctx, q).Scan(&m); err != nil {
		return time.Time{}, false, fmt.Errorf("load %s: oldest month: %w", p.ep.Table, err)
	}
	if m == nil {
		return time.Time{}, false, nil
	}
	return MonthStart(*m), true, nil
}
