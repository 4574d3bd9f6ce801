package load

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Rejected is a row the API sent that could not be parsed.
type Rejected struct {
	Endpoint string
	// TargetID is the target of the request; 0 when there is none.
	TargetID int64
	// Request says what was requested (url and scope, or keyword, country
	// and month).
	Request string
	Line    int
	// Raw is the row's text exactly as sent; it may hold bytes that are not
	// UTF-8, which land in raw_bytes.
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
		[]string{"observed_at", "endpoint", "target_id", "request", "line", "raw", "raw_bytes", "reason"},
		pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			r := rows[i]
			var target any
			if r.TargetID != 0 {
				target = r.TargetID
			}
			text, exact := asText(r.Raw)
			var rawBytes any
			if !exact {
				rawBytes = []byte(r.Raw)
			}
			return []any{r.ObservedAt, r.Endpoint, target, r.Request, r.Line, text, rawBytes, asTextOnly(r.Reason)}, nil
		}))
	if err != nil {
		return fmt.Errorf("load: quarantine %d rows of %s: %w", len(rows), rows[0].Endpoint, err)
	}
	return nil
}

// asText returns s as PostgreSQL text can hold it (valid UTF-8, no NUL),
// and whether that is s unchanged.
func asText(s string) (string, bool) {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s, true
	}
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD"), false
}

func asTextOnly(s string) string {
	t, _ := asText(s)
	return t
}
