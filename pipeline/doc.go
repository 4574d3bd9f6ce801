// Package pipeline runs a job's tasks (from jobspec) concurrently
// (errgroup under a limit): each task pages through the API with the
// extract client, decodes each response with transform, and
// loads each page with load in one transaction. A task whose job gives no
// limit pages as large as the API allows: it learns the API's bound of
// limit from its refusal and remembers it in api_bounds (apibound.go, the
// one home of the bounds the spec does not show, the listings' size too).
//
// A page holds a database connection (internal/dbconn) from before its
// request is sent until its rows commit, so a page the API answered, and
// charged for, always has a connection to load on. A page whose
// connection is lost after the API answered is loaded again from the
// answer kept while it was read (spool.go), never asked for again.
package pipeline
