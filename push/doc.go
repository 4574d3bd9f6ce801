// Package push is the listings push, a reverse ETL (issue 17): it reads
// the locations an account should have from a relation of the user's (a
// table or view, one row per location id), diffs each against the latest
// pulled version (listings_current) or what an earlier push updated since,
// refuses locally what the provider would refuse (listing.Check), plans
// the requests (listing.PlanPush), sends the changed locations (package
// extract's listing client, paced as the plan assumes) and records what
// became of every location in listing_pushes and listing_push_items
// (migration 0015), and every request it sent in listing_push_requests
// (migration 0017).
//
// The pure parts (the model, the rules of spec 2.14, the diff, the plan)
// live in package listing; this package holds the SQL and the sending.
//
// # Crash safety
//
// A push holds an advisory lock of its account for its whole run (one push
// of an account at a time). Its items are written PLANNED in one
// transaction with the push; before a request leaves, its items are marked
// SENT in a commit of their own; once it is answered, their outcomes and
// the push's counts are committed together. A process killed at any moment
// leaves every item PLANNED (never sent: the next push decides afresh),
// SENT (in doubt) or settled. The next push first settles the items in
// doubt by reading each location back (Get location) and comparing it with
// what was sent: equal is UPDATED, without sending it again; different is
// a transient failure, sent again as any change. One that cannot be read
// back stays in doubt, and its location is not sent by this push (its
// row is NOT_SENT, with the reason) until a later push reads it back. So
// no item is sent twice once UPDATED, and none is lost.
//
// # What a push does with each location
//
//   - REFUSED: ParseDesired or listing.Check found a problem (the first is
//     recorded with its field and reason, every one in problems); a
//     duplicate id in the relation, an empty id, or an --only id the
//     relation lacks is refused too (an --only id no pull has seen either,
//     a typo, is refused in the summary and not recorded: nothing could
//     ever change for it). Checked afresh on every push.
//   - UNCHANGED: the desired location equals its base (listing.Equal): the
//     latest pulled version, or the content an earlier push UPDATED after
//     the pull last observed the location (listings_current.observed_at),
//     so that a second push before the next pull does not send it again.
//   - WAITING: the latest push failed it permanently (the provider refused
//     the item: not COMPLETE, invalid) and neither the desired content
//     (content_hash) nor the pulled location (a new version since) changed.
//   - otherwise it is sent: UPDATED, or FAILED with the provider's code and
//     detail, transient (retried by the next push as it is: a 429 past the
//     client's retries, a network failure, a 5xx not applied, a bulk
//     request refused as a whole, whose items the next round sends singly
//     so that each gets an answer of its own) or permanent (waits for a change).
//
// Requests go one at a time, in the order of the times the plan gives
// them, so that a bulk request is never in flight beside another and an
// outcome is committed after each; the client's pacers (sliding windows
// at the paced rate limits, the model of the plan) make the waits. On a
// clock whose answers come at once the push sends exactly as the plan
// says: the dry run's requests and minutes are the push's.
//
// Items whose request failed transiently within a push are sent again in
// a further round of the same push, up to Options.Rounds rounds, after the
// client's back-off.
//
// # Requests of earlier pushes
//
// The provider's limits are sliding windows per account (five bulk
// requests a minute, five single updates a second), and a new process's
// pacers start empty. So each request is recorded in listing_push_requests
// with the moment its window let it go (the client's WaitTurn), in the
// commit that marks its items SENT, before it leaves; a push adds those of
// the last period to the client's windows (extract.Listings.Seed) before
// planning, and plans from the windows as they are. A push started at once
// after another (killed, interrupted, or done) then meets no 429, and its
// plan, and a dry run's made without a client from the same records, says
// when its requests go (Summary.PlanStart, PlannedLast). A request the
// client retried counts from when it was answered, after its last attempt.
//
// # Undoing a push
//
// Undo (migration 0026) is a push whose desired locations are not read
// from a relation but from the warehouse: for each location push N
// UPDATED, the content it had before (the base N diffed against, found by
// its hash in listing_versions or among earlier pushes' UPDATED items).
// Everything after (diff, checks, plan, sending, records, crash safety) is
// Run's; listing_pushes.undoes names N. A location another writer changed
// since N (a later push that is not an undo of N, or a pull after N that
// shows a content neither N nor an undo of N wrote, or, read back with
// Get location before anything is sent, a content that is neither what N
// wrote nor the one from before N: another tool changed it at the
// provider, and no pull has seen it yet) is KEPT with what changed,
// unless UndoOptions.Force; one the provider no longer has is KEPT GONE.
// An undo run again after a kill finds the locations an undo of N
// restored UNCHANGED (its UPDATED items are the base, as any push's are),
// and reads back those in doubt first, so no location is updated twice
// by it. An undo that sends nothing records nothing.
//
// When the context of Run ends (a first SIGINT), the request in flight is
// finished and its outcomes recorded (finishWritten), nothing more is
// sent, and the push ends interrupted; a request still waiting for its
// turn is not sent (NOT_SENT).
package push
