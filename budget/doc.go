// Package budget keeps the API units a run may spend within its caps. Every
// request reserves its worst case before it is sent (Ledger.Reserve: the
// price per request, or limit x price per line, from the endpoint catalog)
// and is settled to what the API charged once its page commits
// (Ledger.Settle, inside the page's transaction). A request the API
// answered with an error is settled at 0; one whose page broke after the
// API answered keeps its reservation, so the ledger never counts less than
// the API charged.
//
// The ledger (unit_ledger) has a row per request; budget_usage sums it per
// cap scope: a run, a job's calendar month, a UTC day, a UTC month.
// Reserve locks the counters of every scope of the request, always in key
// order, checks the tightest cap, then adds the reservation, in one
// transaction: any number of workers and processes sharing the database
// never overspend together.
//
// Worst cases are pessimistic (most pages settle below them), so a cap
// that cannot pay the next request while other requests of the same
// Ledger are in flight may well pay it once they settle: Reserve then
// waits for one of them to end (Ledger.Finish, called once per
// reservation when its request is over) and tries again. Once none of its
// own is in flight in that cap, a per-line request shrinks to the lines
// the cap affords; when the settled spend cannot pay one line or one
// request, Reserve returns an *ExhaustedError and the runner stops the
// run. Reservations of other processes count as spent until they settle:
// a Ledger never waits for what it cannot see end.
//
// Each row carries a random claim (Reservation.Claim, unit_ledger.claim)
// by which it is settled, never by its ledger_id alone: after a failover
// to a standby that lagged behind, the new primary hands out the ids of
// the rows it lost again. Settle of a row the database lost says ErrLost;
// Rebook books it again (the API may have charged it), and States reads
// what the database holds of a process's rows.
//
// Prices come from the catalog (catalog.Price); this package keeps none of
// its own.
package budget
