// Package apitest is the conformance suite of the data API: one contract,
// checked over HTTP against any implementation of it. The sandbox runs it in
// its tests; pointed at the real API (which costs units) it would tell where
// the sandbox and the API part ways.
//
// For every endpoint of the catalog it checks: field names and JSON types
// per the catalog's kinds, the CSV column order (default and of `fields`) and
// that CSV and JSON carry the same values, quoting, paging (offset and limit
// cover meta.total with no gap and no overlap), ordering, every construct of
// the filter language, every bound of the spec (one past it is a 400 naming
// the parameter), authentication, unit charges, and the consistency rules
// that tie the endpoints of one target together.
//
// RunAuth checks the token service (spec 3, 5 and 8.5), one named check
// per rule, each named by its section: the device authorization grant and
// every answer while pending (authorization_pending, slow_down and the
// interval's growth, access_denied, expired_token), the authorization code
// flow and its errors, form-encoded requests only, refresh token rotation,
// the lifetimes of access and refresh tokens, and bearer tokens on the
// backlink and keyword endpoints, charged to their account. The suite
// stands in for the person who approves through AuthConfig.Decide, and
// moves time through AuthConfig.Advance; the checks of lifetimes are
// skipped without it.
//
// RunListing checks the listing-management endpoints (spec 2.14, 3, 4.5,
// 7 and 8.2), one named check per rule, each named by its section: every
// validation rule of a location (required fields, lengths in characters,
// phone, websiteUrl, ranges per weekday and their overlap, overnight
// ranges, holidayHours only with businessHours, TIMES_NOT_ALLOWED and
// TIMES_TOO_MANY_RANGES, reopenDate's bounds, region empty in Switzerland,
// US state and ZIP), the answers' shapes and the names of their request
// ids (requested or requestId), the error envelope of 7.1 and the bodies
// of 7.2, the bulk update's per-item states (LOCATION_HAS_NOT_COMPLETE_STATUS
// and unknown ids fail alone with HTTP 200; LOCATIONS_ARE_NOT_UNIQUE
// rejects the whole request), paging and its defaults, both path
// prefixes, updates seen by later gets, no units spent, and a 429 past
// each rate limit. It paces its own requests to those limits, moving the
// implementation's clock through ListingConfig.Advance (or sleeping), and
// holds a bulk update in flight through ListingConfig.HoldBulk. It
// updates the locations of the token's account.
package apitest
