// Package listing owns the business location of the listing-management API
// (spec 2.14) and its rules: the Location model with the spec's JSON names,
// the bodies of the listing endpoints, the reading of an update (which
// fields it sent, what the location becomes) and Validate, the one
// implementation of every rule of sections 2.14 and 8.3. The sandbox
// refuses an update with it; the push refuses a change locally with it,
// before a request is spent.
//
// The facts the rules use (lengths, bounds, codes the spec names) come
// from package catalog; the choices the spec leaves open are made and
// documented here: the detail codes of the rules the spec names no code
// for (CodeRequired and the others), what a phone with an international
// code is (CodeInvalidPhone), how a range past midnight is read (hours.go:
// a range whose to is not after its from ends the next day; 00:00-00:00 is
// the whole day), at most three ranges on a holiday entry
// (catalog.MaxHolidayRanges), the countries whose addresses have no region
// (RegionAllowed; the list and its source in address.go) and the table of
// the US state/ZIP cross-check (USStateOfZip; its nature in address.go).
// Update reads a left-out field as kept.
//
// The pure parts of the push live here too: Diff (which request fields
// changed, compared by meaning; diff.go says how), what is sent (the
// whole location: UpdateItem, UpdateBody, NewBulkRequest), Check (what
// the push refuses locally before spending a request) and PlanPush (the
// split between bulk requests and single updates that finishes soonest
// under the rate limits of spec 8.2, read as sliding windows paced under
// the limits: Window, Paced).
//
// The package is pure: no HTTP, no SQL, no clock of its own (the current
// date is passed in).
package listing
