// Package extract is the data API client: it builds requests from the
// endpoint catalog, authenticates them (API key in the Authorization header),
// retries what the API says is retryable with jittered back-off, and hands
// back the response body as a stream, never buffered whole.
//
// Errors from the API arrive as *APIError, carrying the HTTP status and the
// API's error object; ErrUnitsExhausted marks a 403 (the account ran out of
// API units), which callers treat as "budget exhausted upstream". No error or
// log line carries the API key.
package extract
