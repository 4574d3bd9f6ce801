// Package catalog is the single source of truth about the data API: every
// backlink and keyword endpoint with its path, parameters and their bounds,
// allowed scopes, price, row fields with their types in the spec's CSV column
// order, default order, the natural key of a row and the warehouse table the
// rows land in; the token service (auth.go): its paths, grant types,
// token lifetimes and OAuth error codes; and the listing-management
// endpoints (listing.go): their paths under both prefixes, the operations
// with their page parameters, bulk and rate limits, the fields of a
// location and the codes of their answers.
//
// Every other stage (the client, the transform, the loader, the budget, the
// sandbox) reads this package; none keeps a second copy of a column list or a
// price. A test checks the catalog against the tables of the interface
// specification (testdata/data-api-spec.md).
//
// The package is a leaf: it imports nothing of this module.
package catalog
