package load

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Rejected is a row the API sent that could not be parsed.
type Rejected struct {
	Endpoint string
	// TargetID is the target of the request; 0 when there is none.
	TargetID int64
	// Request says what was requested (url and scope, or keyword, country
	// and month).
	Request    string
	Line       int
	Raw        string
	Reason     string
	ObservedAt time.Time
}

// Quarantine stores rejected rows inside tx, so they commit with the rows of
// the same page.
func (l *Loader) Quarantine(ctx context.Context, tx pgx.Tx, rows []Rejected) error {
	if len(rows) == 0 {
		return nil
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"quarantine"},
		[]string{"observed_at", "endpoint", "target_id", "request", "line", "raw", "reason"},
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			r := rows[i]
			var target any
			if r.TargetID != 0 {
				target = r.TargetID
			}
			return []any{r.ObservedAt, r.Endpoint, target, r.Request, r.Line, r.Raw, r.Reason}, nil
		}))
	if err != nil {
		return fmt.Errorf("load: quarantine %d rows of %s: %w", len(rows), rows[0].Endpoint, err)
	}
	return nil
}
