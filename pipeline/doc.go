// Package pipeline runs jobs: it orchestrates the stages, and each step of
// a run is a call into the package that owns it.
//
//   - Claim the run: the job's lock, the run recorded or taken up, and
//     each task's checkpoint (internal/runs, through bookkeeping.go).
//   - Plan: the job's tasks (jobspec), those the warehouse holds and the
//     months it holds (planning.Holdings).
//   - For each task, concurrently (errgroup under a limit), page by page:
//     reserve the page's worst case (budget), fetch it (extract), decode it
//     (transform), load it in one transaction (load), settle what it cost,
//     and checkpoint it in the same transaction.
//
// A page holds a database connection (internal/dbconn) from before its
// request is sent until its rows commit, so a page the API answered, and
// charged for, always has a connection to load on. What the run committed
// is journaled (internal/failover, failover.go), so that after a failover
// of the database what the server lacks is committed again, from the
// answers kept while they were read (internal/spool), never bought again.
//
// A task whose job gives no limit pages as large as the API allows: it
// learns the API's bound of limit from its refusal and remembers it in
// api_bounds (internal/apibound, the one home of the bounds the spec does
// not show, the listings' size too). Besides runs: the listings task
// (listings.go), retention (retention.go) and loading a CSV file as a
// page is loaded (loadfile.go). The scheduler that starts runs on their
// cron schedules is package schedule.
package pipeline
