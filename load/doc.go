// Package load writes Arrow record batches into the PostgreSQL warehouse.
//
// It owns the layout of the fact tables (which columns a table of an endpoint
// has, derived from the endpoint catalog), their partitions (RANGE by month,
// a partition per year or per month as LayoutOf decides from the catalog,
// nothing below; created on demand under a table lock so concurrent
// loaders never collide), the targets dimension, the quarantine of bad
// rows, and the load path itself: COPY a page's records (binary, encoded
// straight from Arrow while the page is decoded) into a temporary staging
// table, de-duplicate it on the natural key (the later row wins) only when
// a key may come twice, read which keys are new and which stored rows
// change, then INSERT the new keys and UPDATE the changed rows, so a rerun
// that changes nothing writes and locks nothing; a first load copies
// straight into its month's partition instead. Every
// statement of a page names the page's months as constants, so it plans
// and locks their partitions alone; the page also records each owner's
// newest month (latest_months), which the *_latest views read.
//
// It also loads the locations of the listing-management API (listing.go):
// the Arrow records of a decoded page (transform.ListingPage) are copied
// into staging tables and versioned in listing_versions (a new version
// only when the content changed), with the provider's errors opened and
// resolved in listing_problems; ListingGone marks the locations a
// complete pull did not see.
package load
