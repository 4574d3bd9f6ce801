// Package failover keeps a run whole across a failover of its database:
// the journal of what the run committed (Journal: each page with its
// answer kept, each open reservation, each task's latest checkpoint), and
// the check, once a connection was lost, of what the server reached next
// has of it (Journal.Check): lost ledger rows are booked again, lost pages
// loaded again from their answers (internal/spool), never bought twice,
// and checkpoints written again. Report says what a run's checks found.
//
// The journal is generic in what a page's task had counted before it (the
// runner's TaskResult), which a task that lost a page goes on from.
package failover
