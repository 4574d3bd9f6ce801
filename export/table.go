package export

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/load"
)

// Dimensions are the tables exported whole beside the facts: what a reader
// needs to name the target or the target set of a fact row.
var Dimensions = []string{"targets", "target_sets", "target_set_members"}

// Tables returns every table an export writes unless told otherwise: the
// fact tables of the endpoint catalog in catalog order, then Dimensions.
func Tables() []string {
	var names []string
	for _, ep := range catalog.All() {
		if !slices.Contains(names, ep.Table) {
			names = append(names, ep.Table)
		}
	}
	return append(names, Dimensions...)
}

// endpointOf returns the endpoint whose fact table is table, or nil.
func endpointOf(table string) *catalog.Endpoint {
	for _, ep := range catalog.All() {
		if ep.Table == table {
			return ep
		}
	}
	return nil
}

// tableInfo is what an export needs to know of one warehouse table, read
// from the warehouse itself (its columns, their types and comments, its
// primary key), so that the files say what the database says.
type tableInfo struct {
	name    string
	comment string
	// ep is the endpoint of a fact table; nil for a dimension.
	ep     *catalog.Endpoint
	cols   []column
	order  []string // primary key: the order a dimension's rows are written in
	schema *arrow.Schema
}

// column is one exported column: its warehouse type, the select
// expression that reads it and the Arrow field it becomes.
type column struct {
	name, pgType, comment string
	notNull               bool
	field                 arrow.Field
	sel                   string
	// reader makes the Scan destination and appender of one column.
	reader func() colReader
}

// colReader is one column's Scan destination and how its value is
// appended to the column's Arrow builder.
type colReader interface {
	dst() any
	appendTo(b array.Builder) error
}

// loadTable reads table's columns (the generated ones, such as row_key,
// are left out: a reader derives them), comments and primary key.
func loadTable(ctx context.Context, q pgx.Tx, table string) (*tableInfo, error) {
	t := &tableInfo{name: table, ep: endpointOf(table)}
	reg := pgx.Identifier{table}.Sanitize()
	var exists bool
	if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, reg).Scan(&exists); err != nil {
		return nil, fmt.Errorf("export %s: %w", table, err)
	}
	if !exists {
		return nil, fmt.Errorf("export %s: the table does not exist (are the migrations applied?)", table)
	}
	if err := q.QueryRow(ctx, `SELECT coalesce(obj_description($1::regclass, 'pg_class'), '')`, reg).Scan(&t.comment); err != nil {
		return nil, fmt.Errorf("export %s: %w", table, err)
	}
	rows, err := q.Query(ctx, `
		SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, coalesce(col_description(a.attrelid, a.attnum), '')
		FROM pg_attribute a
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
		ORDER BY a.attnum`, reg)
	if err != nil {
		return nil, fmt.Errorf("export %s: columns: %w", table, err)
	}
	var c column
	_, err = pgx.ForEachRow(rows, []any{&c.name, &c.pgType, &c.notNull, &c.comment}, func() error {
		col, err := mapColumn(c)
		if err != nil {
			return fmt.Errorf("column %s: %w", c.name, err)
		}
		t.cols = append(t.cols, col)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", table, err)
	}
	rows, err = q.Query(ctx, `
		SELECT a.attname
		FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY k (attnum, n)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = $1::regclass AND i.indisprimary
		ORDER BY k.n`, reg)
	if err != nil {
		return nil, fmt.Errorf("export %s: primary key: %w", table, err)
	}
	if t.order, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, fmt.Errorf("export %s: primary key: %w", table, err)
	}
	if len(t.order) == 0 {
		// A table without a primary key is written in the order of all
		// its columns, so that two exports of the same rows are the same
		// file.
		for _, c := range t.cols {
			t.order = append(t.order, c.name)
		}
	}
	fields := make([]arrow.Field, len(t.cols))
	keys, vals := []string{"etl.table"}, []string{table}
	if t.comment != "" {
		keys, vals = append(keys, "comment"), append(vals, t.comment)
	}
	for i, c := range t.cols {
		fields[i] = c.field
		if c.comment != "" {
			// DuckDB and other readers that ignore the stored Arrow schema
			// read the file's key-value metadata (DuckDB:
			// parquet_kv_metadata).
			keys, vals = append(keys, "comment."+c.name), append(vals, c.comment)
		}
	}
	md := arrow.NewMetadata(keys, vals)
	t.schema = arrow.NewSchema(fields, &md)
	return t, nil
}

// mapColumn maps a warehouse column to its Arrow field and reader. The
// mapping covers the types the warehouse uses (catalog.Kind.PGType and
// the dimensions); numeric (cpc) becomes its exact decimal text, since
// Parquet's DECIMAL needs a scale the column does not fix.
func mapColumn(c column) (column, error) {
	c.sel = pgx.Identifier{c.name}.Sanitize()
	var typ arrow.DataType
	switch {
	case c.pgType == "bigint":
		typ, c.reader = arrow.PrimitiveTypes.Int64, func() colReader { return &int64Col{} }
	case c.pgType == "integer":
		typ, c.reader = arrow.PrimitiveTypes.Int32, func() colReader { return &int32Col{} }
	case c.pgType == "smallint":
		c.sel += "::integer"
		typ, c.reader = arrow.PrimitiveTypes.Int32, func() colReader { return &int32Col{} }
	case c.pgType == "double precision" || c.pgType == "real":
		c.sel += "::double precision"
		typ, c.reader = arrow.PrimitiveTypes.Float64, func() colReader { return &float64Col{} }
	case c.pgType == "boolean":
		typ, c.reader = arrow.FixedWidthTypes.Boolean, func() colReader { return &boolCol{} }
	case c.pgType == "text" || strings.HasPrefix(c.pgType, "character"):
		typ, c.reader = arrow.BinaryTypes.String, func() colReader { return &textCol{} }
	case strings.HasPrefix(c.pgType, "numeric") || c.pgType == "uuid" || c.pgType == "json" || c.pgType == "jsonb":
		c.sel += "::text"
		typ, c.reader = arrow.BinaryTypes.String, func() colReader { return &textCol{} }
	case c.pgType == "date":
		typ, c.reader = arrow.FixedWidthTypes.Date32, func() colReader { return &dateCol{} }
	case c.pgType == "timestamp with time zone":
		typ, c.reader = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, func() colReader { return &tsCol{} }
	case c.pgType == "text[]" || strings.HasPrefix(c.pgType, "character varying") && strings.HasSuffix(c.pgType, "[]"):
		typ, c.reader = arrow.ListOf(arrow.BinaryTypes.String), func() colReader { return &textListCol{} }
	case c.pgType == "bigint[]" || c.pgType == "integer[]":
		c.sel += "::bigint[]"
		typ, c.reader = arrow.ListOf(arrow.PrimitiveTypes.Int64), func() colReader { return &int64ListCol{} }
	default:
		return c, fmt.Errorf("type %s has no Parquet mapping in etl export", c.pgType)
	}
	var md arrow.Metadata
	if c.comment != "" {
		md = arrow.NewMetadata([]string{"comment"}, []string{c.comment})
	}
	c.field = arrow.Field{Name: c.name, Type: typ, Nullable: !c.notNull, Metadata: md}
	return c, nil
}

// partition is one file of a table: a partition of a fact table, or a
// dimension whole.
type partition struct {
	// name is the relation read: the partition, or the dimension.
	name string
	// folder is the Hive-style folder below the table's: month=YYYY-MM-01
	// or year=YYYY; "" for a dimension.
	folder   string
	from, to time.Time
}

func (p partition) file() string {
	if p.folder == "" {
		return fileName
	}
	return p.folder + "/" + fileName
}

// fileName is the one file of each partition folder.
const fileName = "part-0.parquet"

var rangeBound = regexp.MustCompile(`^FOR VALUES FROM \('(\d{4}-\d{2}-\d{2})'\) TO \('(\d{4}-\d{2}-\d{2})'\)$`)

// partitions lists what t is exported as: its month or year partitions
// oldest first, or the dimension whole.
func partitions(ctx context.Context, q pgx.Tx, t *tableInfo) ([]partition, error) {
	if t.ep == nil {
		return []partition{{name: t.name}}, nil
	}
	// Partition bounds are printed in the session's DateStyle.
	if _, err := q.Exec(ctx, `SELECT set_config('datestyle', 'ISO, YMD', true)`); err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, `
		SELECT c.relname, pg_get_expr(c.relpartbound, c.oid)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass`, pgx.Identifier{t.name}.Sanitize())
	if err != nil {
		return nil, fmt.Errorf("export %s: partitions: %w", t.name, err)
	}
	var (
		parts       []partition
		name, bound string
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &bound}, func() error {
		p, ok, err := partitionOf(t, name, bound)
		if ok {
			parts = append(parts, p)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("export %s: partitions: %w", t.name, err)
	}
	slices.SortFunc(parts, func(a, b partition) int { return a.from.Compare(b.from) })
	return parts, nil
}

// partitionOf names the folder of the partition name of fact table t with
// bound; ok is false for a partition that is not a range of months (a
// DEFAULT partition, which the loader never makes).
func partitionOf(t *tableInfo, name, bound string) (partition, bool, error) {
	m := rangeBound.FindStringSubmatch(bound)
	if m == nil {
		return partition{}, false, nil
	}
	p := partition{name: name}
	var err error
	if p.from, err = time.Parse(time.DateOnly, m[1]); err != nil {
		return p, false, fmt.Errorf("partition %s: %w", name, err)
	}
	if p.to, err = time.Parse(time.DateOnly, m[2]); err != nil {
		return p, false, fmt.Errorf("partition %s: %w", name, err)
	}
	lay := load.LayoutOf(t.ep)
	from, to := lay.Span(p.from)
	if !from.Equal(p.from) || !to.Equal(p.to) {
		return p, false, fmt.Errorf("partition %s holds %s to %s, not one partition of the table's layout (%s)",
			name, p.from.Format(time.DateOnly), p.to.Format(time.DateOnly), lay)
	}
	if lay == load.Yearly {
		p.folder = fmt.Sprintf("year=%04d", from.Year())
	} else {
		p.folder = "month=" + from.Format(time.DateOnly)
	}
	return p, true, nil
}

// The column readers: a pgtype destination per column, appended to the
// column's Arrow builder after each row's Scan.

type int64Col struct{ v pgtype.Int8 }

func (c *int64Col) dst() any { return &c.v }
func (c *int64Col) appendTo(b array.Builder) error {
	if !c.v.Valid {
		b.AppendNull()
		return nil
	}
	b.(*array.Int64Builder).Append(c.v.Int64)
	return nil
}

type int32Col struct{ v pgtype.Int4 }

func (c *int32Col) dst() any { return &c.v }
func (c *int32Col) appendTo(b array.Builder) error {
	if !c.v.Valid {
		b.AppendNull()
		return nil
	}
	b.(*array.Int32Builder).Append(c.v.Int32)
	return nil
}

type float64Col struct{ v pgtype.Float8 }

func (c *float64Col) dst() any { return &c.v }
func (c *float64Col) appendTo(b array.Builder) error {
	if !c.v.Valid {
		b.AppendNull()
		return nil
	}
	b.(*array.Float64Builder).Append(c.v.Float64)
	return nil
}

type boolCol struct{ v pgtype.Bool }

func (c *boolCol) dst() any { return &c.v }
func (c *boolCol) appendTo(b array.Builder) error {
	if !c.v.Valid {
		b.AppendNull()
		return nil
	}
	b.(*array.BooleanBuilder).Append(c.v.Bool)
	return nil
}

type textCol struct{ v pgtype.Text }

func (c *textCol) dst() any { return &c.v }
func (c *textCol) appendTo(b array.Builder) error {
	if !c.v.Valid {
		b.AppendNull()
		return nil
	}
	b.(*array.StringBuilder).Append(c.v.String)
	return nil
}

type dateCol struct{ v pgtype.Date }

func (c *dateCol) dst() any { return &c.v }
func (c *dateCol) appendTo(b array.Builder) error {
	if !c.v.Valid {
		b.AppendNull()
		return nil
	}
	if c.v.InfinityModifier != pgtype.Finite {
		return fmt.Errorf("a date is %s, which Parquet cannot hold", c.v.InfinityModifier)
	}
	b.(*array.Date32Builder).Append(arrow.Date32FromTime(c.v.Time))
	return nil
}

type tsCol struct{ v pgtype.Timestamptz }

func (c *tsCol) dst() any { return &c.v }
func (c *tsCol) appendTo(b array.Builder) error {
	if !c.v.Valid {
		b.AppendNull()
		return nil
	}
	if c.v.InfinityModifier != pgtype.Finite {
		return fmt.Errorf("a timestamp is %s, which Parquet cannot hold", c.v.InfinityModifier)
	}
	b.(*array.TimestampBuilder).Append(arrow.Timestamp(c.v.Time.UnixMicro()))
	return nil
}

type textListCol struct{ v pgtype.FlatArray[pgtype.Text] }

func (c *textListCol) dst() any { return &c.v }
func (c *textListCol) appendTo(b array.Builder) error {
	lb := b.(*array.ListBuilder)
	if c.v == nil {
		lb.AppendNull()
		return nil
	}
	lb.Append(true)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	for _, e := range c.v {
		if e.Valid {
			vb.Append(e.String)
		} else {
			vb.AppendNull()
		}
	}
	c.v = nil
	return nil
}

type int64ListCol struct{ v pgtype.FlatArray[pgtype.Int8] }

func (c *int64ListCol) dst() any { return &c.v }
func (c *int64ListCol) appendTo(b array.Builder) error {
	lb := b.(*array.ListBuilder)
	if c.v == nil {
		lb.AppendNull()
		return nil
	}
	lb.Append(true)
	vb := lb.ValueBuilder().(*array.Int64Builder)
	for _, e := range c.v {
		if e.Valid {
			vb.Append(e.Int64)
		} else {
			vb.AppendNull()
		}
	}
	c.v = nil
	return nil
}
