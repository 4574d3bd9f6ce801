package load

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/catalog"
)

// Column is one column of a fact table.
type Column struct {
	Name   string
	PGType string
	Doc    string
	// NotNull is true for the bookkeeping and key columns.
	NotNull bool
}

// The bookkeeping columns every fact table carries.
const (
	colTargetID   = "target_id"
	colSetID      = "set_id"
	colMonth      = "month"
	colObservedAt = "observed_at"
)

// owner is the column that says what a row of ep's table is about: its
// target, its target set, or "" for keyword metrics (keyed on the keyword).
func owner(ep *catalog.Endpoint) string {
	switch {
	case ep.PerTarget:
		return colTargetID
	case ep.PerSet:
		return colSetID
	}
	return ""
}

// Columns returns the columns of ep's fact table in table order: target_id
// (per-target endpoints) or set_id (per-set endpoints), the context columns,
// month, observed_at, then the row fields in catalog order.
func Columns(ep *catalog.Endpoint) []Column {
	var cols []Column
	switch owner(ep) {
	case colTargetID:
		cols = append(cols, Column{colTargetID, "bigint", "target the row is about (targets.target_id)", true})
	case colSetID:
		cols = append(cols, Column{colSetID, "bigint", "target set the row is about (target_sets.set_id)", true})
	}
	for _, f := range ep.Context {
		cols = append(cols, Column{f.Name, f.Kind.PGType(), f.Doc, true})
	}
	cols = append(cols,
		Column{colMonth, "date", "first day of the month the row describes; the RANGE partition key", true},
		Column{colObservedAt, "timestamp with time zone", "when the row was fetched from the API (the latest fetch that changed it)", true},
	)
	for _, f := range ep.Fields {
		cols = append(cols, Column{f.Name, f.Kind.PGType(), f.Doc, slices.Contains(ep.Key, f.Name)})
	}
	return cols
}

// NaturalKey identifies a row of ep's fact table: the target (or target
// set) and month with the endpoint's natural row key (keyword metrics:
// keyword, country, month). Rows of one page are de-duplicated on it.
func NaturalKey(ep *catalog.Endpoint) []string {
	var key []string
	if o := owner(ep); o != "" {
		key = append(key, o, colMonth)
		return append(key, ep.Key...)
	}
	key = append(key, ep.Key...)
	return append(key, colMonth)
}

// colRowKey is the generated column that stands for a natural key holding
// text (see RowKey).
const colRowKey = "row_key"

// RowKey reports whether ep's table keys its rows on a generated row_key
// (an md5 of the natural key's text) instead of the text itself: URLs and
// anchors may be longer than a btree entry can hold (about 2.7 kB), and a
// 16-byte key is also a much smaller index.
func RowKey(ep *catalog.Endpoint) bool {
	if owner(ep) == "" {
		return false
	}
	for _, k := range ep.Key {
		if f, ok := ep.Field(k); ok && f.Kind == catalog.Text {
			return true
		}
	}
	return false
}

// RowKeyExpr is the generation expression of row_key: text || is
// immutable (concat_ws is not), and the separator cannot occur in the
// API's text.
func RowKeyExpr(ep *catalog.Endpoint) string { return rowKeyExpr(ep, "") }

// rowKeyExpr is RowKeyExpr with the key columns qualified by rel.
func rowKeyExpr(ep *catalog.Endpoint, rel string) string {
	parts := make([]string, len(ep.Key))
	for i, k := range ep.Key {
		parts[i] = pgx.Identifier{k}.Sanitize()
		if rel != "" {
			parts[i] = rel + "." + parts[i]
		}
	}
	return "md5(" + strings.Join(parts, ` || E'\x1f' || `) + ")::uuid"
}

// ConflictKey is the primary key of ep's fact table: the natural key, or
// target (or set), month and row_key where RowKey says so.
func ConflictKey(ep *catalog.Endpoint) []string {
	if RowKey(ep) {
		return []string{owner(ep), colMonth, colRowKey}
	}
	return NaturalKey(ep)
}

// hashColumn is the column the month partitions are hash-partitioned on.
func hashColumn(ep *catalog.Endpoint) string {
	if o := owner(ep); o != "" {
		return o
	}
	return ep.Key[0]
}

func quoteAll(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = pgx.Identifier{n}.Sanitize()
	}
	return q
}

func columnNames(cols []Column) []string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return names
}

// MonthStart returns the first day of t's month in UTC: the value of the
// month column for anything observed at t.
func MonthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// partitionName is the name of ep's month partition of month m.
func partitionName(table string, m time.Time) string {
	return fmt.Sprintf("%s_p%04d%02d", table, m.Year(), int(m.Month()))
}

func isKey(ep *catalog.Endpoint, name string) bool { return slices.Contains(NaturalKey(ep), name) }
