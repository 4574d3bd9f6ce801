// Package extract is the data API client: it builds requests from the
// endpoint catalog, authenticates them (API key in the Authorization header),
// retries what the API says is retryable with jittered back-off, and hands
// back the response body as a stream, never buffered whole.
//
// Errors from the API arrive as *APIError, carrying the HTTP status and the
// API's error object; ErrUnitsExhausted marks a 403 (the account ran out of
// API units), which callers treat as "budget exhausted upstream";
// LimitRefused reads a refused limit and the bound the refusal states (the
// spec does not show it, 8.2). No error or log line carries the API key.
//
// Every request costs API units once the API has read it, so the client
// follows each attempt on the network (net/http/httptrace) and tells the
// caller what a failure may have cost. An attempt that was never written
// (connection refused, DNS, TLS, a proxy, the rate limit) cost nothing and
// is tried again; the error of a request none of whose attempts was written
// matches ErrNotSent. An error answer of the API cost nothing either
// (*APIError). An attempt that was written and then got no answer (a reset,
// EOF or timeout before the response headers) may have been charged: the
// client never sends it again, not even through net/http's own replay on a
// reused connection, and its error matches ErrMaybeCharged, so that the
// caller keeps what it reserved for it and pays for any further try
// separately.
//
// Client.Listings calls the listing-management endpoints (spec 4.5) on
// the same HTTP client, with the bearer token of Config.Authorize. Each
// operation is paced to its rate limit as the catalog states it (spec
// 8.2), on Config.Clock. Their error answers arrive as *ListingError;
// SizeRefused reads the largest page size from a refused one; an update
// that was sent and not refused (a 5xx, no answer) matches
// ErrMaybeApplied and is never sent again by the client.
package extract
