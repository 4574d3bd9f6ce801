// Package apibound learns and remembers the bounds of limit and size
// that the API accepts. The spec does not show them ("Upper bound
// accepted for limit and size: not shown; for backlink list endpoints the
// effective maximum depends on available data", 8.2). It is learned from
// the API: a request past the bound is refused (400), and the refusal
// names the bound (extract.LimitRefused, extract.SizeRefused), or, when it
// does not, halving the value finds one the API accepts. What is learned
// is remembered in api_bounds per API (the origin of its address),
// operation and parameter, so that each bound is learned once per API, and
// learned again when the API later refuses the value remembered.
//
// A refused request costs nothing (the API charges what it answers; the
// ledger settles an error answer at 0), so learning costs a request or a
// few, never units.
//
// Bounds are a run's (the runner holds one per run, shared by its tasks:
// a bound one task learns is the next request of every other); Limits
// reads them for a plan.
package apibound
