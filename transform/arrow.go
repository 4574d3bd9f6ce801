package transform

import (
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/seoetl/etl/catalog"
)

// ArrowType is the Arrow type a field of kind k is decoded to. It is the one
// mapping from kinds to Arrow types; the loader reads it too. It panics on a
// kind the catalog does not define.
func ArrowType(k catalog.Kind) arrow.DataType {
	switch k {
	case catalog.Int, catalog.IntString:
		return arrow.PrimitiveTypes.Int64
	case catalog.Float, catalog.DecString:
		return arrow.PrimitiveTypes.Float64
	case catalog.Text:
		return arrow.BinaryTypes.String
	case catalog.Bool:
		return arrow.FixedWidthTypes.Boolean
	case catalog.Timestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case catalog.Date:
		return arrow.FixedWidthTypes.Date32
	case catalog.TextList:
		return arrow.ListOf(arrow.BinaryTypes.String)
	case catalog.IntList:
		return arrow.ListOf(arrow.PrimitiveTypes.Int64)
	}
	panic(fmt.Sprintf("transform: no Arrow type for %v", k))
}

// Schema is the record schema of endpoint ep: every catalog field of ep, in
// catalog order, all nullable. Every record a decoder returns for ep has this
// schema, whatever the order or the subset of the columns in the response.
func Schema(ep *catalog.Endpoint) *arrow.Schema {
	fields := make([]arrow.Field, len(ep.Fields))
	for i, f := range ep.Fields {
		fields[i] = arrow.Field{Name: f.Name, Type: ArrowType(f.Kind), Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}
