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

// DistributionColumn is the column that says whose a row of ep's table
// is, by which Citus spreads the table over its nodes (docs/warehouse.md,
// "On Citus"): its target (target_id), its target set (set_id), or for
// keyword metrics the first field of its key (keyword). Every primary key
// holds it, and every statement of a page names its value.
func DistributionColumn(ep *catalog.Endpoint) string {
	if o := owner(ep); o != "" {
		return o
	}
	return ep.Key[0]
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

// Layout is how a fact table is partitioned: RANGE (month) in partitions
// of Months months each, with no partitions below them. It is chosen per
// table by LayoutOf, the one place that decides it.
type Layout struct {
	// Months is the span of one partition: 1 (a calendar month) or 12 (a
	// calendar year).
	Months int
}

// Monthly and Yearly are the two layouts (see LayoutOf).
var (
	Monthly = Layout{Months: 1}
	Yearly  = Layout{Months: 12}
)

// LayoutOf returns the partition layout of ep's table, from what the
// catalog says of the endpoint's rows:
//
//   - A table with a bounded handful of rows per target (or keyword and
//     country) and month: an object answer (overview, keyword metrics), a
//     list without a row key (summary history and comparison: one row per
//     target and month), or a list with a small fixed bound (the score
//     profile's 101 rows). It is partitioned by year: 15 partitions hold
//     the API's whole history (2012 to 2026), and ten thousand targets make
//     120,000 rows a year of overviews.
//   - Any other list (links, referring domains and IPs, pages, anchors,
//     competitors, matrix) is paged and as large as what a user buys: it is
//     partitioned by month, so retention drops a month whole and a month of
//     one target is one partition's index range.
//
// No layout has partitions below the month or year (the old HASH on the
// target): the primary key leads with the target (or the keyword), so one
// target's rows are one index range of their partition already, and more
// partitions would only multiply what a query that does not prune must
// plan and lock. So the partition count grows with months alone, never
// with targets: 15 years of monthly history make 180 partitions of a
// monthly table and 15 of a yearly one.
func LayoutOf(ep *catalog.Endpoint) Layout {
	if ep.Shape == catalog.Object || len(ep.Key) == 0 || (ep.MaxRows > 0 && ep.MaxRows <= maxYearlyRows) {
		return Yearly
	}
	return Monthly
}

// maxYearlyRows bounds the rows per target and month of a list endpoint
// whose table is partitioned by year (LayoutOf): a bound of this tool's
// layout, not a fact of the API.
const maxYearlyRows = 1000

// Span returns the first day of the partition that holds month m, and the
// first day after it.
func (lay Layout) Span(m time.Time) (from, to time.Time) {
	m = MonthStart(m)
	from = m
	if lay.Months == 12 {
		from = time.Date(m.Year(), time.January, 1, 0, 0, 0, 0, time.UTC)
	}
	return from, from.AddDate(0, lay.Months, 0)
}

// PartitionName is the name of the partition of table that holds month m:
// table_pYYYYMM for a monthly layout, table_yYYYY for a yearly one.
func (lay Layout) PartitionName(table string, m time.Time) string {
	from, _ := lay.Span(m)
	if lay.Months == 12 {
		return fmt.Sprintf("%s_y%04d", table, from.Year())
	}
	return fmt.Sprintf("%s_p%04d%02d", table, from.Year(), int(from.Month()))
}

func (lay Layout) String() string {
	if lay.Months == 12 {
		return "RANGE (month), a partition per year"
	}
	return "RANGE (month), a partition per month"
}

func isKey(ep *catalog.Endpoint, name string) bool { return slices.Contains(NaturalKey(ep), name) }

// latestTable is the table that keeps the newest month of each owner of
// ep's table (writeLatest): latest_months for the tables of a target or a
// set, keyword_latest_months for keyword metrics (keyed on ep.Key).
func latestTable(ep *catalog.Endpoint) string {
	if owner(ep) != "" {
		return "latest_months"
	}
	return "keyword_latest_months"
}
