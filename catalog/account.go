package catalog

// The account limits of the backlink and keyword endpoints. The spec does
// not state them; the provider's public documentation does (design notes,
// "What the real API does beyond the spec"). Every request of an account
// counts, whatever its endpoint.
const (
	// AccountRequestsPerSecond is how many requests an account may send
	// in one second.
	AccountRequestsPerSecond = 10
	// AccountConcurrentRequests is how many requests of an account may be
	// in flight at once.
	AccountConcurrentRequests = 10
)
