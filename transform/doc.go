// Package transform turns data API responses into typed Apache Arrow record
// batches. It owns the one mapping from a catalog field kind to an Arrow type
// (ArrowType), the record schema of every endpoint (Schema), and the decoders
// that stream a response body into records of bounded size: the CSV decoder
// and the JSON decoder, two implementations of Decoder (NewDecoder picks one
// by the API's format parameter).
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
// The JSON decoder (NewJSONDecoder) reads the body the API sends for
// format=json (spec 2.1), the only one of the matrix endpoint: an object
// with meta and data, data an array of row objects for list endpoints and
// one row object for object endpoints (keyword metrics). It walks the
// envelope with encoding/json's tokens and decodes one row at a time into a
// json.RawMessage, so it holds one row besides the batch. Meta may come
// before or after data (Meta); other members are skipped. An error envelope
// (an "error" member, or meta.success false) is an *EnvelopeError, and broken
// JSON syntax anywhere is an error of the whole body, since a stream cannot
// resynchronize after it. Members map to fields by name; unknown members are
// left out and catalog fields a row lacks are NULL in it, both reported as
// Drift. A row that is not an object, names none of the endpoint's fields,
// has a member twice or a value of the wrong type comes back as a Reject
// whose Line is its 1-based position in data.
//
// Values, by kind, for a JSON value; null is NULL for every kind:
//
//   - Text: a string, unescaped by this package rather than by encoding/json,
//     which would silently turn invalid UTF-8 and escaped lone UTF-16
//     surrogates into U+FFFD. A string with invalid UTF-8 as sent, an
//     unpaired surrogate escape or \u0000 is rejected, as in CSV.
//   - Int: a number without fraction or exponent, within int64 (1.0 and 1e3
//     are rejected, saying so). Numbers are read from their text, never
//     through float64, so every int64 is exact.
//   - IntString: a string of decimal digits as the API sends it, or a
//     non-negative integer number.
//   - Float: a number.
//   - DecString: a string holding a decimal number without exponent as the
//     API sends it ("0.53"), or a number.
//   - Bool: true or false.
//   - Timestamp, Date: strings, as in CSV.
//   - TextList: an array of strings; items keep any ',' they hold.
//   - IntList: an array of Int numbers.
//
// The locations of the listing-management API (spec 2.14) are JSON only
// and land in tables of their own, so they have decoders of their own,
// DecodeListingPage (Get locations) and DecodeLocation (Get location), in
// listing.go: a page is one record of ListingSchema, its problems
// another, and an item that is not a location (a field of the wrong JSON
// type, no id, a reopenDate that is not a date) a Reject with its raw JSON,
// while the page goes on. A page is small (100 items at most, the largest
// size the sandbox takes), so it is decoded whole: item by item from the
// stream, but returned at once.
//
// A body whose reading fails before its end (a broken connection, a stalled
// body) is cut: both decoders deliver every row that arrived complete, good
// or rejected, drop the row the cut fell in, and then fail with ErrCut,
// which says how many rows were complete. The API charged the whole answer,
// so the caller keeps those rows and asks for the rest from there, instead
// of paying for the same rows twice.
//
// Memory is bounded by Options.BatchRows and Options.MaxRowBytes: the body is
// never read whole.
package transform
