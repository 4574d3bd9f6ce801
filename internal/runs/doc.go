// Package runs keeps the runs' bookkeeping in the warehouse, the pattern
// golang-migrate uses for its dirty flag: take a lock, mark the work in
// progress, do it, mark it done.
//
//   - Lock: a job's lock (job_locks), held by a connection of its own while
//     the job runs, freed when its process dies, taken again when its
//     connection ends and no one took the job over (TakeLock, Held).
//   - Claim: the run a job's next run records, or the unfinished one it
//     takes up (OpenRuns is the one rule of which, for etl run and etl
//     plan); CloseRun ends one that will not be taken up.
//   - Checkpoint: how far each task of a run got, written in the page's
//     transaction (Save) and read back when the run is taken up
//     (Checkpoints); Pending says which backfill months are left.
//   - CompactRuns: the bookkeeping of old runs compacted into one row per
//     run and table, so it does not grow without end.
//
// Views reads them back for people: etl runs lists the runs (List,
// WriteList), etl runs show one run with its tasks, tables and ledger
// (Show, WriteDetail).
//
// The runner (pipeline) calls these; nothing here fetches or loads data.
package runs
