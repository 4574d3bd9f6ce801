// Package budget prices tasks in API units and will guard the caps: it
// reserves a request's worst case before it is sent, settles it to the lines
// actually returned, and keeps the unit ledger in PostgreSQL so that several
// workers and processes share one budget.
//
// Prices come from the endpoint catalog (catalog.Price); this package keeps
// none of its own. The first slice only reports what a run spent; caps,
// reservations and `etl plan` arrive with the budget issue.
package budget
