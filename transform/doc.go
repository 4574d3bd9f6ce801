// Package transform turns data API responses into typed Apache Arrow record
// batches. It owns the one mapping from a catalog field kind to an Arrow type
// (ArrowType), the record schema of every endpoint (Schema), and the decoders
// that stream a response body into records of bounded size.
//
// The CSV decoder (NewCSVDecoder) reads the body the API sends for
// format=csv (spec 2.1): a header row, then data rows, ';' between cells,
// list items joined with ',', '"' quoting with doubled quotes inside. It maps
// columns by header name, never by position, so columns the API adds or
// reorders do not break a run: unknown columns are skipped and catalog fields
// the header lacks land as NULL, and both are reported as Drift.
//
// A row that cannot be decoded (wrong number of cells, a value of the wrong
// type, broken quoting) is never appended and never dropped silently: it comes
// back as a Reject with its line number, its raw text and a reason naming the
// column, and decoding goes on with the next row. The loader quarantines
// rejects.
//
// Values, by kind, for a CSV cell:
//
//   - Text: the cell as is; an empty cell is the empty string, not NULL.
//     Text must be valid UTF-8 without NUL bytes (PostgreSQL text cannot hold
//     either), otherwise the row is rejected.
//   - Int: optional '-', decimal digits, within int64.
//   - IntString: decimal digits only (the API sends them as a JSON string).
//   - Float: a decimal number with an optional exponent; no NaN, no Inf.
//   - DecString: a decimal number without exponent ("0.53"); decoded to
//     float64 although the warehouse keeps it as numeric.
//   - Bool: exactly true or false.
//   - Timestamp: exactly YYYY-MM-DDTHH:MM:SS, UTC, to Timestamp(us, UTC).
//   - Date: exactly YYYY-MM-DD, to Date32.
//   - TextList, IntList: items split on ','; an empty cell is an empty list
//     (the API joins an empty list to an empty cell, so that is the faithful
//     reading); items of an IntList must each be an Int. List items cannot
//     contain ',' because the API does not escape it.
//
// An empty cell of any other kind is NULL. Quoting never changes a value:
// "" is an empty cell and "12" is 12. Line breaks inside a quoted value are
// kept as sent ("\r\n" stays "\r\n"). A blank line is not a row, and a
// UTF-8 byte order mark before the header is dropped.
//
// Memory is bounded by Options.BatchRows and Options.MaxRowBytes: the body is
// never read whole. A JSON decoder for the JSON-only matrix endpoint belongs
// here too; it will share the column builders of the CSV decoder.
package transform
