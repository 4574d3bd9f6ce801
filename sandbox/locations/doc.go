// Package locations is the sandbox's listing-management data: the business
// locations every account owns, and what updates make of them. The
// sandbox's listing endpoints (spec 4.5) are thin handlers over a Store:
// Get, Page, UpdateOne and UpdateMany take and return the spec's shapes
// (package listing), error objects included, so a handler only picks the
// HTTP status (Status), names the request id and writes the body.
//
// # Accounts and their locations
//
// An account is a string (an API key, or the account a bearer token was
// issued to). It owns N locations, N from its name when a token of it is
// n<digits> (agency-n1500 owns exactly 1500; at most MaxLocations), as the
// sandbox's sized targets are named, and otherwise drawn from the seed and
// the name (a few to a few thousand). Location i, 0 to N-1, has an id of
// 32 hex digits derived from the seed, the account and i: stable across
// runs, unique to its account, and decoded back to i without a table.
//
// Nothing is stored until an update: a location is a pure function of
// the seed, the account, its index and the sandbox day (the UTC date of
// now). Its content does not change with the day (but the holidays, which
// are those of the sandbox year, and a reopenDate, the first of the month
// after next); its status never does (COMPLETE, IN_PROGRESS or
// NOT_SYNCED: the latter two are the sandbox's choice, as the spec shows
// only COMPLETE; location 1 is always IN_PROGRESS, location 0 always
// COMPLETE); its errors ({code, message}, from a catalogue the sandbox
// invents) come and go with the day. Every invented location passes
// listing.Validate on its day.
//
// # Updates
//
// An update is validated with package listing (Update.Validate: every
// rule of spec 2.14, required fields included) against the location as it
// stands; a field it leaves out keeps its value (the design notes' reading
// of spec 4.5 rule 5). What it makes of the location's content is kept in
// memory, for the life of the Store, and every later read sees it; the id,
// status, country and errors stay the invented ones. A bulk update follows
// spec 3: repeated ids refuse the whole request, and each item otherwise
// fails or succeeds alone (UpdateMany). The Store is safe for concurrent
// use; a bulk update is applied under its account's lock, as one.
//
// # Order and pages
//
// Page lists the locations in the order of their index, which updates do
// not change, with page one-based and size at most MaxPageSize (the spec
// shows neither an order nor an upper bound of size).
package locations
